"""An MCP server for tests/test_mcp_tools.py, written with the `mcp` SDK (`MCPServer`, the SDK's
FastMCP): started by the binding file over stdio. Its tools answer deterministically."""

from __future__ import annotations

import os
import threading
from typing import Optional

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel

server = MCPServer("flow-test-tools")


class Count(BaseModel):
    words: int
    longest: str
    first: Optional[str] = None


@server.tool()
def count(text: str, min_len: int = 0) -> Count:
    """Count the words of at least min_len letters."""
    words = [w for w in text.split() if len(w) >= min_len]
    return Count(
        words=len(words), longest=max(words, key=len) if words else "", first=words[0] if words else None
    )


@server.tool()
def shout(text: str, times: Optional[int] = None) -> str:
    """The text in capitals, repeated."""
    if not text:
        raise ToolError("nothing to shout")
    return " ".join([text.upper()] * (times or 1))


@server.tool(structured_output=False)
def tags(text: str) -> str:
    """A JSON list of the words starting with '#', as text content (no output schema)."""
    import json

    return json.dumps([w[1:] for w in text.split() if w.startswith("#")])


@server.tool()
def price(amount: float, currency: str) -> str:
    return f"{amount:.2f} {currency}"


@server.tool()
def die(text: str) -> str:
    """Exits the server while the call is out (a lost connection)."""
    os._exit(3)


@server.tool()
def wait(text: str) -> str:
    """Never answers (a call that times out)."""
    threading.Event().wait()
    return text


if __name__ == "__main__":
    server.run()
