"""The MCP server of the agent example (the official `mcp` SDK's MCPServer), run over stdio by
tools.toml: `lookup` reads a note, `post` posts a message to a channel (here: appends it to
posts.jsonl in the server's folder, this one, and answers its number in the channel)."""

from __future__ import annotations

import json

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel

server = MCPServer("team")

NOTES = {
    "flow": "Flow is a small typed language for one bounded orchestration of tools and people",
    "mcp": "The Model Context Protocol connects models to the tools they use",
}


class Note(BaseModel):
    topic: str
    text: str


class Posted(BaseModel):
    channel: str
    number: int


@server.tool()
def lookup(topic: str) -> Note:
    """The note on a topic."""
    if topic not in NOTES:
        raise ToolError(f"no note on {topic!r}")
    return Note(topic=topic, text=NOTES[topic])


@server.tool()
def post(channel: str, text: str) -> Posted:
    """Post a message to a channel; its number in the channel."""
    path = "posts.jsonl"
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps({"channel": channel, "text": text}) + "\n")
    with open(path, encoding="utf-8") as f:
        number = sum(1 for line in f if json.loads(line)["channel"] == channel)
    return Posted(channel=channel, number=number)


if __name__ == "__main__":
    server.run()
