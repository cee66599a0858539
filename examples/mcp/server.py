"""A small MCP server (the official `mcp` SDK's MCPServer) with two tools, run over stdio by the
binding file tools.toml: `lookup` answers structured content, `summarize` plain text."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel

server = MCPServer("notes")

NOTES = {
    "flow": "Flow is a small typed language for one bounded orchestration.",
    "mcp": "The Model Context Protocol connects models to tools.",
}


class Note(BaseModel):
    topic: str
    text: str
    words: int


@server.tool()
def lookup(topic: str) -> Note:
    """The note on a topic."""
    if topic not in NOTES:
        raise ToolError(f"no note on {topic!r}")
    text = NOTES[topic]
    return Note(topic=topic, text=text, words=len(text.split()))


@server.tool()
def summarize(text: str, max_words: int = 5) -> str:
    """The first words of a text."""
    words = text.split()
    return " ".join(words[:max_words]) + (" ..." if len(words) > max_words else "")


if __name__ == "__main__":
    server.run()
