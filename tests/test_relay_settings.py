"""Relay settings section: the profile in use, here a tool's own result size (ProfileInUse.budget_for) and the size
the reader tool declares: Claude Code reads _meta["anthropic/maxResultSizeChars"]."""
import json

import pytest

import ocx_proxy as op


SIZE_META = "anthropic/maxResultSizeChars"


def declaring(relay_factory, size, relay_args=("--client", "claude-code"), client_name="test"):
    """A relay in front of a server whose tool ``big`` declares ``size`` (any JSON) as its result size; initialized
    as ``client_name``, tools listed.  Returns (relay, the listed tools)."""
    relay = relay_factory(list(relay_args), ["--declare", "big=" + json.dumps(size)])
    relay.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": client_name, "version": "1"}}, msg_id=1)
    relay.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return relay, relay.request("tools/list")[0]["result"]["tools"]


def whole(relay, n, unit="x"):
    """Whether a call of ``big`` for ``n`` units came back whole (else spilled: a preview naming the files)."""
    reply = relay.call("big", {"n": n, "unit": unit})
    spilled = "ocx-proxy/spill" in reply["result"].get("_meta", {})
    assert spilled != (reply["result"]["content"][0]["text"] == unit * n), reply["result"]["content"][0]["text"][:200]
    return not spilled


def test_a_tool_declaring_its_result_size_gets_that_budget_in_claude_code(relay_factory):
    relay, tools = declaring(relay_factory, 120000)
    assert tools[0]["_meta"] == {SIZE_META: 120000}   # passed on as the server listed it
    assert whole(relay, 100000)                       # over the profile's 40,000, under what the tool declared
    assert not whole(relay, 125000)
    # its text is exempt from Claude Code's token cut: no byte budget (30,000 CJK characters, 90,000 bytes)
    assert whole(relay, 30000, "数")
    lines = relay.call("lines", {"n": 6000})["result"]   # a tool that declares nothing: the profile's budget
    assert "ocx-proxy/spill" in lines["_meta"]
    assert relay.close() == 0
    relay, _ = declaring(relay_factory, None)         # declared nothing: 40,000 characters or 60,000 bytes
    assert not whole(relay, 100000) and not whole(relay, 30000, "数")
    assert relay.close() == 0


def test_a_declared_size_is_capped_at_claude_codes_ceiling(relay_factory):
    assert op.CLIENTS["claude-code"].facts.declared_chars_max == 500000
    relay, _ = declaring(relay_factory, 10 ** 9)
    assert whole(relay, 499000) and not whole(relay, 501000)
    assert relay.close() == 0


@pytest.mark.parametrize("relay_args,client_name,honoured", [
    (["--client", "auto"], "claude-code", True),
    (["--client", "auto"], "claude-ai", False),        # Claude Desktop drops per-tool _meta: the generic budget
    (["--client", "generic"], "claude-code", False),
    (["--client", "codex"], "codex-mcp-client", False),
    (["--client", "claude-code", "--max-response-chars", "20000"], "test", False),   # an option given wins
])
def test_only_a_client_that_reads_the_declaration_gets_it(relay_factory, relay_args, client_name, honoured):
    relay, _ = declaring(relay_factory, 120000, relay_args, client_name)
    assert whole(relay, 100000) == honoured
    assert relay.close() == 0


@pytest.mark.parametrize("size", ["120000", 0, -5, True, 150000.5, [120000], {"chars": 120000}])
def test_a_declaration_that_is_no_whole_number_from_1_is_ignored(relay_factory, size):
    relay, tools = declaring(relay_factory, size)
    assert tools[0]["_meta"] == {SIZE_META: size}
    assert not whole(relay, 100000)    # the profile's budget
    assert relay.close() == 0


@pytest.mark.parametrize("relay_args,declared", [
    (["--client", "claude-code"], 40000),
    (["--client", "claude-code", "--max-response-chars", "100000"], 100000),
    (["--client", "claude-code", "--max-response-chars", "900000"], 500000),
    (["--client", "claude-code", "--max-response-chars", "0"], op.MAX_RESPONSE_CHARS),   # pages of the default size
    (["--client", "generic"], None),
    (["--client", "codex"], None),
])
def test_the_reader_declares_the_size_of_its_pages_to_claude_code(relay_factory, relay_args, declared):
    relay, tools = declaring(relay_factory, None, relay_args + ["--detach-after", "60"])
    reader = tools[-1]
    assert reader["name"] == op.READER_TOOL_NAME
    assert reader.get("_meta") == ({SIZE_META: declared} if declared else None)
    assert relay.close() == 0


def test_reader_pages_past_claude_codes_own_cut_fit_what_the_reader_declares(relay_factory):
    """With --max-response-chars 100000 a page is over the 50,000 characters Claude Code inlines by default: the
    reader's declaration keeps it inline (measured: tests/interop/clients/test_more_cases.py)."""
    relay, tools = declaring(relay_factory, None, ["--client", "claude-code", "--max-response-chars", "100000"])
    reply = relay.call("big", {"n": 300000})
    note = reply["result"]["content"][0]["text"]
    spill_id = note.split('id="', 1)[1].split('"', 1)[0]
    page = relay.call(op.READER_TOOL_NAME, {"id": spill_id})["result"]
    line = relay.raw_lines[-1].rstrip(b"\n")
    assert 50000 < len(page["content"][0]["text"]) and len(line) <= tools[-1]["_meta"][SIZE_META] == 100000
    assert relay.close() == 0
