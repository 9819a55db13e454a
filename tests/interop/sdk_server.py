"""An MCP server built with the official Python SDK (FastMCP), for the interop tier.

    python sdk_server.py                                  # stdio
    python sdk_server.py --transport sse --port N         # legacy HTTP+SSE on /sse
    python sdk_server.py --transport streamable-http --port N [--json] [--stateless]

Tools cover what a relay must pass through untouched or spill correctly:
small and huge text, a huge result from a tool with an output schema,
progress notifications, server->client sampling and elicitation, logging,
and a slow tool for concurrency.  Plus a small and a huge resource and prompt.
"""
import argparse

import anyio
from pydantic import BaseModel

from mcp.server.fastmcp import Context, FastMCP
from mcp.types import SamplingMessage, TextContent

parser = argparse.ArgumentParser()
parser.add_argument("--transport", default="stdio", choices=["stdio", "sse", "streamable-http"])
parser.add_argument("--port", type=int, default=0)
parser.add_argument("--json", action="store_true", help="Streamable HTTP: answer POSTs with JSON, not SSE")
parser.add_argument("--stateless", action="store_true", help="Streamable HTTP: no sessions")
args = parser.parse_args()

mcp = FastMCP("ocx-interop", host="127.0.0.1", port=args.port or 8000, json_response=args.json,
              stateless_http=args.stateless, log_level="WARNING")


class Row(BaseModel):
    n: int
    name: str


class Report(BaseModel):
    total: int
    rows: list[Row]


class Answer(BaseModel):
    colour: str


@mcp.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@mcp.tool()
def big_text(lines: int = 3000) -> str:
    """A long numbered log."""
    return "\n".join("line %05d: the quick brown fox jumps over the lazy dog" % i for i in range(lines))


@mcp.tool()
def report(rows: int = 10) -> Report:
    """A structured report (the tool declares an output schema)."""
    return Report(total=rows, rows=[Row(n=i, name="row-%d" % i) for i in range(rows)])


@mcp.tool()
async def slow(seconds: float = 0.5, tag: str = "") -> str:
    """Sleep, then answer with the tag."""
    await anyio.sleep(seconds)
    return "done " + tag


@mcp.tool()
async def count(steps: int, ctx: Context) -> str:
    """Report progress ``steps`` times, then answer."""
    for i in range(1, steps + 1):
        await ctx.report_progress(i, steps, "step %d" % i)
        await anyio.sleep(0.01)
    return "counted %d" % steps


@mcp.tool()
async def ask_model(question: str, ctx: Context) -> str:
    """Ask the client's model (sampling: a server->client request)."""
    result = await ctx.session.create_message(
        messages=[SamplingMessage(role="user", content=TextContent(type="text", text=question))], max_tokens=50)
    return "model said: " + (result.content.text if isinstance(result.content, TextContent) else "?")


@mcp.tool()
async def ask_user(ctx: Context) -> str:
    """Ask the user (elicitation: a server->client request)."""
    result = await ctx.elicit("Favourite colour?", schema=Answer)
    if result.action == "accept" and result.data is not None:
        return "colour: " + result.data.colour
    return "action: " + result.action


@mcp.tool()
async def chatty(ctx: Context) -> str:
    """Send a log notification before answering."""
    await ctx.info("hello from the server")
    return "logged"


@mcp.resource("demo://small", mime_type="text/plain")
def small_resource() -> str:
    return "small resource text"


@mcp.resource("demo://big-log", mime_type="text/plain")
def big_resource() -> str:
    return "\n".join("2026-01-01T00:00:00Z INFO request %d served" % i for i in range(4000))


@mcp.prompt()
def greet(name: str) -> str:
    """A short prompt."""
    return "Say hello to %s." % name


@mcp.prompt()
def review() -> str:
    """A prompt with a huge diff."""
    return "Review this diff:\n" + "\n".join("+ added line %d" % i for i in range(3000))


if __name__ == "__main__":
    mcp.run(transport=args.transport)
