"""An MCP server built with the official Python SDK 2.x (``MCPServer``), dual-era.

    python sdk2_server.py                                   # stdio
    python sdk2_server.py --port N [--json] [--stateless]   # Streamable HTTP on /mcp

Runs in .venv-interop2 only.  What the relay must pass through untouched or
spill correctly, in both eras: a small tool, a tool returning exactly N
characters, a tool with structured output, a small and a big resource, and a
tool that needs input (``input_required`` in 2026-07-28, an elicitation
request in the legacy era).
"""
import argparse

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ElicitRequest, ElicitRequestFormParams, ElicitResult, InputRequiredResult
from pydantic import BaseModel

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, default=0, help="serve Streamable HTTP on this port (default: stdio)")
parser.add_argument("--json", action="store_true", help="answer POSTs with JSON, not SSE")
parser.add_argument("--stateless", action="store_true", help="no sessions")
args = parser.parse_args()

mcp = MCPServer("ocx-interop-2", log_level="WARNING")


class Report(BaseModel):
    total: int
    names: list[str]


class Colour(BaseModel):
    colour: str


COLOUR_SCHEMA = {"type": "object", "properties": {"colour": {"type": "string"}}, "required": ["colour"]}


@mcp.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@mcp.tool()
def big(n: int) -> str:
    """Exactly n characters: numbered 48-character lines (the last may be short)."""
    lines = "".join("line %06d: the quick brown fox jumps over it.\n" % i for i in range(n // 48 + 1))
    return lines[:n]


@mcp.tool()
def report(rows: int = 3) -> Report:
    """Structured output (the tool declares an output schema)."""
    return Report(total=rows, names=["row-%d" % i for i in range(rows)])


@mcp.tool()
async def ask_colour(ctx: Context) -> str:
    """Needs the user's favourite colour: input_required (modern) or elicitation (legacy)."""
    if ctx.protocol_version is None or ctx.protocol_version < "2026":
        answer = await ctx.elicit("Favourite colour?", schema=Colour)
        return "colour: " + (answer.data.colour if answer.action == "accept" and answer.data else answer.action)
    responses = ctx.input_responses or {}
    answer = responses.get("colour")
    if isinstance(answer, ElicitResult) and answer.action == "accept" and answer.content:
        return "colour: %s" % answer.content.get("colour")
    request = ElicitRequest(params=ElicitRequestFormParams(message="Favourite colour?", requested_schema=COLOUR_SCHEMA))
    return InputRequiredResult(input_requests={"colour": request})


@mcp.resource("demo://small", mime_type="text/plain")
def small_resource() -> str:
    return "small resource text"


@mcp.resource("demo://big", mime_type="text/plain")
def big_resource() -> str:
    return "".join("2026-07-28T00:00:00Z INFO request %06d served\n" % i for i in range(2000))


if __name__ == "__main__":
    if args.port:
        mcp.run("streamable-http", host="127.0.0.1", port=args.port, json_response=args.json,
                stateless_http=args.stateless)
    else:
        mcp.run()
