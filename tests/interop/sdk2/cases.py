"""The cases every SDK 2.x client runs, once via the relay and once direct.

A case is an async function of a connected ``mcp.Client``; it returns a
value that must be equal via the relay and direct (small results), or a
``Big`` record for a result large enough to spill.  ``run_cases`` turns each
case into an ``Outcome`` (never raises), so one failing case does not hide
the others of the same session.
"""
import hashlib
import os

import anyio
import mcp_types as types

BIG_CHARS = 50000        # the relay spills above 10,000 characters by default
SPILL_KEY = "ocx-proxy/spill"
CASE_TIMEOUT = 15        # seconds; a hung case must not stall the tier


def expected_big(n):
    """The text sdk2_server.py's ``big`` tool returns (kept in step with it)."""
    return "".join("line %06d: the quick brown fox jumps over it.\n" % i for i in range(n // 48 + 1))[:n]


class Outcome:
    def __init__(self, ok, detail="", value=None):
        self.ok, self.detail, self.value = ok, detail, value

    def __repr__(self):
        return "Outcome(%r, %r)" % (self.ok, self.detail)


def big_record(text, meta):
    """What a big text result amounts to: ("spilled"|"inline", sha256 of the full text, length).

    A spilled preview must name its file in ``_meta`` and in the text; the file holds the full text.
    """
    if meta and SPILL_KEY in meta:
        info = meta[SPILL_KEY]
        assert info["txt"] in text, "the preview does not name its file"
        assert len(text) < 10000, "the preview is %d characters" % len(text)
        with open(info["txt"], encoding="utf-8") as handle:
            full = handle.read()
        kind = "spilled"
    else:
        full, kind = text, "inline"
    return (kind, hashlib.sha256(full.encode("utf-8")).hexdigest()[:16], len(full))


async def case_version(client):
    """The negotiated revision: a relay must not downgrade an auto client silently."""
    return client.session.protocol_version


async def case_tools(client):
    # The relay adds its reader tool (Relay._tool_list): the server's tools must be the same.
    names = [tool.name for tool in (await client.list_tools()).tools]
    return sorted(name for name in names if not name.startswith("read_spilled_output"))


async def case_echo(client):
    result = await client.call_tool("echo", {"text": "héllo 👋"})
    assert not result.is_error, result
    return [block.text for block in result.content]


async def case_structured(client):
    result = await client.call_tool("report", {"rows": 3})
    assert not result.is_error, result
    return result.structured_content


async def case_big(client):
    result = await client.call_tool("big", {"n": BIG_CHARS})
    assert not result.is_error, result
    return big_record(result.content[0].text, result.meta)


async def case_resource(client):
    result = await client.read_resource("demo://small")
    return [item.text for item in result.contents]


async def case_big_resource(client):
    result = await client.read_resource("demo://big")
    assert str(result.contents[0].uri) == "demo://big"
    meta = result.meta or {}
    return big_record(result.contents[0].text, meta)


async def case_input_required(client):
    result = await client.call_tool("ask_colour", {})
    assert not result.is_error, result
    return [block.text for block in result.content]


CASES = {
    "version": case_version,
    "tools": case_tools,
    "echo": case_echo,
    "structured": case_structured,
    "big": case_big,
    "resource": case_resource,
    "big-resource": case_big_resource,
    "input-required": case_input_required,
}


async def answer_colour(context, params):
    return types.ElicitResult(action="accept", content={"colour": "teal"})


def describe(exc):
    """One line naming an exception (the SDK's message, trimmed)."""
    text = " ".join(("%s: %s" % (type(exc).__name__, exc)).split())
    # pydantic echoes the whole input after "[type=..."; the field that failed comes before it.
    return text.split(" [type=")[0][:300]


def run_cases(make_client, timeout=CASE_TIMEOUT):
    """Connect with ``make_client()`` and run every case; returns {case: Outcome}.

    When connecting fails, every case gets that failure.
    """
    outcomes = {}

    async def main():
        # The whole session is bounded too: a relay that never answers must not stall the tier.
        with anyio.fail_after(timeout * (len(CASES) + 2)):
            async with make_client() as client:
                for name, case in CASES.items():
                    try:
                        with anyio.fail_after(timeout):
                            outcomes[name] = Outcome(True, "", await case(client))
                    except AssertionError as exc:
                        outcomes[name] = Outcome(False, "assert: %s" % describe(exc))
                    except Exception as exc:
                        outcomes[name] = Outcome(False, describe(exc))

    try:
        anyio.run(main)
    except BaseException as exc:  # anyio wraps failures in exception groups
        detail = ("connect: " if not outcomes else "session: ") + describe(exc)
        for name in CASES:
            outcomes.setdefault(name, Outcome(False, detail))
    return outcomes
