"""The official SDK client (``stdio_client`` + ``ClientSession``) through ocx_proxy.py.

If the SDK raises, the relay is wrong.  Each test opens its own session so a
failure names exactly one behaviour.
"""
import os
import time
from contextlib import asynccontextmanager

import anyio
import pytest

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

MAX_CHARS = 10000
SPILL_KEY = "ocx-proxy/spill"


@asynccontextmanager
async def session_for(upstream, *relay_options, **callbacks):
    command, args = upstream.relay_command(*relay_options)
    params = StdioServerParameters(command=command, args=args, env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, **callbacks) as session:
            await session.initialize()
            yield session


def run(coro_fn, timeout=60):
    async def main():
        with anyio.fail_after(timeout):
            await coro_fn()
    anyio.run(main)


def spill_meta(meta):
    assert meta and SPILL_KEY in meta, "no %s in _meta: %r" % (SPILL_KEY, meta)
    info = meta[SPILL_KEY]
    assert os.path.isfile(info["txt"]) and os.path.isfile(info["json"]), info
    return info


def compact_size(model):
    return len(model.model_dump_json(by_alias=True, exclude_none=True))


def test_list_tools_and_call(upstream):
    async def body():
        async with session_for(upstream) as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            assert {"echo", "big_text", "report", "slow", "count"} <= set(tools)
            # The relay strips outputSchema by default so that spilled results stay valid.
            assert tools["report"].outputSchema is None
            result = await session.call_tool("echo", {"text": "héllo 👋"})
            assert not result.isError
            assert result.content[0].text == "héllo 👋"
    run(body)


def test_small_structured_result_passes_through(upstream):
    async def body():
        async with session_for(upstream) as session:
            result = await session.call_tool("report", {"rows": 3})
            assert not result.isError
            assert result.structuredContent == {"total": 3, "rows": [{"n": i, "name": "row-%d" % i} for i in range(3)]}
    run(body)


def test_spill_on_tool_with_output_schema(upstream):
    async def body():
        async with session_for(upstream) as session:
            await session.list_tools()
            result = await session.call_tool("report", {"rows": 3000})  # must not raise
            assert not result.isError
            assert "ocx-proxy" in result.content[0].text
            info = spill_meta(result.meta)
            with open(info["txt"], encoding="utf-8") as handle:
                assert "row-2999" in handle.read()
            assert result.structuredContent is None  # too big to keep
            assert compact_size(result) < MAX_CHARS
    run(body)


def test_spill_big_text(upstream):
    async def body():
        async with session_for(upstream) as session:
            result = await session.call_tool("big_text", {"lines": 5000})
            assert not result.isError
            texts = [block.text for block in result.content if block.type == "text"]
            assert texts and "line 00000" in texts[0] and "line 04999" in texts[0]  # head and tail
            info = spill_meta(result.meta)
            assert info["txt"] in texts[0]
            with open(info["txt"], encoding="utf-8") as handle:
                assert handle.read().count("\n") == 4999
            links = [block for block in result.content if block.type == "resource_link"]
            assert links and str(links[0].uri).startswith("file://")
    run(body)


def test_resources(upstream):
    async def body():
        async with session_for(upstream) as session:
            uris = {str(r.uri) for r in (await session.list_resources()).resources}
            assert {"demo://small", "demo://big-log"} <= uris
            small = await session.read_resource("demo://small")
            assert small.contents[0].text == "small resource text"
            big = await session.read_resource("demo://big-log")
            assert str(big.contents[0].uri) == "demo://big-log"
            assert "ocx-proxy" in big.contents[0].text and len(big.contents[0].text) < MAX_CHARS
    run(body)


def test_prompts(upstream):
    async def body():
        async with session_for(upstream) as session:
            names = {p.name for p in (await session.list_prompts()).prompts}
            assert {"greet", "review"} <= names
            greet = await session.get_prompt("greet", {"name": "Ada"})
            assert greet.messages[0].content.text == "Say hello to Ada."
            review = await session.get_prompt("review")
            assert len(review.messages) == 1 and review.messages[0].role == "user"
            assert "ocx-proxy" in review.messages[0].content.text
    run(body)


def test_progress_reaches_the_client_before_the_result(upstream):
    if not upstream.notifications_supported:
        pytest.skip("the SDK server in JSON-response mode does not send request-related notifications")

    async def body():
        seen = []

        async def on_progress(progress, total, message):
            seen.append((progress, total, message))

        async with session_for(upstream) as session:
            result = await session.call_tool("count", {"steps": 5}, progress_callback=on_progress)
            assert result.content[0].text == "counted 5"
            assert [p for p, _, _ in seen] == [1, 2, 3, 4, 5]
            assert seen[-1][1] == 5 and seen[0][2] == "step 1"
    run(body)


def test_logging_notification(upstream):
    if not upstream.notifications_supported:
        pytest.skip("the SDK server in JSON-response mode does not send request-related notifications")

    async def body():
        logged = []

        async def on_log(params):
            logged.append(params.data)

        async with session_for(upstream, logging_callback=on_log) as session:
            result = await session.call_tool("chatty", {})
            assert result.content[0].text == "logged"
            await anyio.sleep(0.2)
            assert "hello from the server" in logged
    run(body)


def test_server_to_client_sampling(upstream):
    if not upstream.server_requests_supported:
        pytest.skip("server->client requests need a stream back to the client (%s has none)" % upstream.name)

    async def body():
        async def sampling(context, params):
            question = params.messages[0].content.text
            return types.CreateMessageResult(role="assistant", model="fake-model",
                                             content=types.TextContent(type="text", text="42 for " + question))

        async with session_for(upstream, sampling_callback=sampling) as session:
            result = await session.call_tool("ask_model", {"question": "life"})
            assert result.content[0].text == "model said: 42 for life"
    run(body)


def test_server_to_client_elicitation(upstream):
    if not upstream.server_requests_supported:
        pytest.skip("server->client requests need a stream back to the client (%s has none)" % upstream.name)

    async def body():
        async def elicitation(context, params):
            assert params.message == "Favourite colour?"
            return types.ElicitResult(action="accept", content={"colour": "teal"})

        async with session_for(upstream, elicitation_callback=elicitation) as session:
            result = await session.call_tool("ask_user", {})
            assert result.content[0].text == "colour: teal"
    run(body)


def test_many_concurrent_calls(upstream):
    async def body():
        async with session_for(upstream) as session:
            results = {}

            async def one(i):
                result = await session.call_tool("slow", {"seconds": 0.5, "tag": str(i)})
                results[i] = result.content[0].text

            started = time.monotonic()
            async with anyio.create_task_group() as group:
                for i in range(24):
                    group.start_soon(one, i)
            elapsed = time.monotonic() - started
            assert results == {i: "done %d" % i for i in range(24)}
            assert elapsed < 6, "24 x 0.5 s calls took %.1f s: the relay serialised them" % elapsed
    run(body)


def test_ping(upstream):
    async def body():
        async with session_for(upstream) as session:
            await session.send_ping()
    run(body)
