"""The gate (section "Gate"), through the real relay process: --check-arguments refuse|annotate|off and the
negotiate hook, on both protocol eras, with fitted names, pages, a changed catalog, batches, the catalog cache,
and the trace id that follows one call through every --trace record."""
import json
import os
import re
import sys
import time

import pytest

from helpers import CATALOG_SERVER, FIXTURES, STDIO_SERVER, run_proxy

HOOKS = os.path.join(FIXTURES, "hooks")
MODERN = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
WEATHER = {"type": "object", "properties": {"city": {"type": "string"},
                                            "days": {"type": "integer", "minimum": 1, "maximum": 14}},
           "required": ["city"]}
REFUSED = "ocx-proxy did not send this call to the server (the tool did not run)"


def tool(name, schema=WEATHER):
    return {"name": name, "inputSchema": schema}


def hook(name, *args):
    """--negotiate's value for the hook program ``name`` of tests/fixtures/hooks, run by this Python."""
    import subprocess
    return subprocess.list2cmdline([sys.executable, os.path.join(HOOKS, name)] + list(args)) \
        if os.name == "nt" else " ".join(json.dumps(word) for word in [sys.executable, os.path.join(HOOKS, name)]
                                        + list(args))


class Server:
    """catalog_server.py on a catalog written here; ``calls()``: the tools/call requests it got."""

    def __init__(self, tmp_path, spec):
        self.log = tmp_path / "server.log"
        self.path = tmp_path / "catalog.json"
        self.path.write_text(json.dumps(dict(spec, log=str(self.log))))

    def args(self):
        return [str(self.path)]

    def calls(self):
        if not self.log.exists():
            return 0
        return sum(1 for line in self.log.read_text().splitlines() if json.loads(line).get("method") == "tools/call")


@pytest.fixture
def gated(relay_factory, tmp_path):
    """A relay in front of catalog_server with ``spec`` (and a --negotiate hook), initialized and listed unless told
    otherwise: (relay, server)."""
    def start(spec, *relay_args, listed=True, negotiate=None, initialize=True):
        server = Server(tmp_path, spec)
        relay = relay_factory(list(relay_args) + (["--negotiate", negotiate] if negotiate else []),
                              server_args=server.args(), server=CATALOG_SERVER)
        if initialize:
            relay.initialize()
        if listed:
            relay.request("tools/list")
        return relay, server
    return start


def text_of(reply):
    return "\n".join(item.get("text", "") for item in reply["result"]["content"])


def echoed(reply):
    """What catalog_server got for a call it echoed."""
    return json.loads(reply["result"]["content"][0]["text"])


# -- refuse, annotate, off ---------------------------------------------------------------------------------------

def test_refuse_names_each_pointer_and_the_server_never_sees_the_call(gated):
    relay, server = gated({"tools": [tool("weather")]}, "--check-arguments", "refuse")
    reply = relay.call("weather", {"city": 5, "days": 30})
    assert reply["result"]["isError"] is True
    assert text_of(reply) == (REFUSED + ": its arguments do not match the tool's inputSchema.\n"
                              "/city: string, got integer 5\n/days: integer 1..14, got 30")
    good = relay.call("weather", {"city": "Paris", "days": 3})
    assert echoed(good) == {"name": "weather", "arguments": {"city": "Paris", "days": 3}}
    relay.close()
    assert server.calls() == 1
    assert "refused tools/call" in relay.stderr and "/city, /days" in relay.stderr and "Traceback" not in relay.stderr


def test_annotate_adds_the_findings_after_the_servers_own_words(gated):
    spec = {"tools": [tool("weather"), tool("rpc_error"), tool("tool_error")], "call_answers": {
        "rpc_error": {"error": {"code": -32602, "message": "Invalid params: city"}},
        "tool_error": {"result": {"content": [{"type": "text", "text": "no such city"}], "isError": True}}}}
    relay, server = gated(spec)   # annotate: the default
    bad = {"city": 5, "days": 30}
    error = relay.call("rpc_error", bad)["error"]
    assert error["code"] == -32602
    assert error["message"] == ("Invalid params: city\n[ocx-proxy: the arguments do not match the tool's inputSchema: "
                                "/city: string, got integer 5; /days: integer 1..14, got 30]")
    result = relay.call("tool_error", bad)["result"]
    assert result["isError"] is True and [c["text"] for c in result["content"]] == [
        "no such city", "[ocx-proxy: the arguments do not match the tool's inputSchema: /city: string, got integer 5; "
                        "/days: integer 1..14, got 30]"]
    assert echoed(relay.call("weather", bad))["arguments"] == bad   # a success is never touched
    assert relay.call("rpc_error", {"city": "Oslo"})["error"]["message"] == "Invalid params: city"
    relay.close()
    assert server.calls() == 4


def test_a_success_passes_byte_for_byte_and_off_checks_nothing(gated, relay_factory, tmp_path):
    spec = {"tools": [tool("weather"), tool("rpc_error")],
            "call_answers": {"rpc_error": {"error": {"code": 1, "message": "no"}}}}
    lines = {}
    for mode in ("annotate", "off"):
        relay, _ = gated(spec, "--check-arguments", mode)
        relay.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "weather",
                                                                                    "arguments": {"city": 5}}})
        lines[mode] = relay.recv_raw()
        assert relay.call("rpc_error", {"city": 5})["error"]["message"] == ("no" if mode == "off" else
                                                                             "no\n[ocx-proxy: the arguments do not "
                                                                             "match the tool's inputSchema: /city: "
                                                                             "string, got integer 5]")
        relay.close()
    assert lines["annotate"] == lines["off"]


def test_refuse_off_lets_every_call_through(gated):
    relay, server = gated({"tools": [tool("weather")]}, "--check-arguments", "off")
    assert echoed(relay.call("weather", {"city": 5, "days": 30}))["arguments"] == {"city": 5, "days": 30}
    relay.close()
    assert server.calls() == 1


def test_what_the_check_cannot_judge_goes_on_unchanged(gated):
    odd = {"type": "object", "properties": {"city": {"type": "string", "format": "no-such-format", "x-vendor": 1},
                                            "more": {"$ref": "https://example.com/more.json"}},
           "not": {"$dynamicRef": "#meta"}, "unevaluatedProperties": False}
    spec = {"tools": [tool("odd", odd), tool("weather")]}
    relay, server = gated(spec, "--check-arguments", "refuse", listed=False)
    before = relay.call("weather", {"city": 5})    # no tools/list seen yet: nothing to check against
    assert echoed(before)["arguments"] == {"city": 5}
    relay.request("tools/list")
    assert echoed(relay.call("unlisted", {"city": 5}))["name"] == "unlisted"
    assert echoed(relay.call("odd", {"city": "x", "more": 5, "extra": 1}))["name"] == "odd"
    assert relay.call("odd", {"city": 5})["result"]["isError"] is True   # what it does understand still counts
    relay.close()
    assert server.calls() == 3


def test_a_tool_on_a_later_page_is_checked_and_a_changed_catalog_is_forgotten(gated):
    spec = {"pages": [[tool("first")], [tool("weather"), tool("change", {"type": "object"})]],
            "list_changed_by": "change",
            "changed_pages": [[tool("weather", {"type": "object", "properties": {"city": {"type": "integer"}}})]]}
    relay, _ = gated(spec, "--check-arguments", "refuse")
    relay.request("tools/list", {"cursor": "1"})
    assert relay.call("weather", {"city": 5})["result"]["isError"] is True
    reply, notes = relay.request("tools/call", {"name": "change", "arguments": {}})
    assert "error" not in reply
    deadline = time.monotonic() + 10
    while not any(n.get("method") == "notifications/tools/list_changed" for n in notes):
        notes.append(relay.recv(max(0.1, deadline - time.monotonic())))
    assert "isError" not in relay.call("weather", {"city": 5})["result"]   # unchecked until listed again
    relay.request("tools/list")
    assert "isError" not in relay.call("weather", {"city": 5})["result"]   # the new schema takes an integer
    assert relay.call("weather", {"city": "Paris"})["result"]["isError"] is True
    relay.close()


def test_fitted_names_and_shapes_are_checked_as_the_server_declared_them(gated):
    """Claude Code's profile renames a dotted tool and merges a root anyOf into one object: the model calls the
    fitted tool, the check reads the server's schema (so the anyOf counts again) under the server's name."""
    files = {"type": "object", "properties": {"path": {"type": "string"}, "uri": {"type": "string"}},
             "anyOf": [{"required": ["path"]}, {"required": ["uri"]}]}
    relay, server = gated({"tools": [tool("files.read", files)]}, "--check-arguments", "refuse",
                          "--client", "claude-code", listed=False)
    listed = relay.request("tools/list")[0]["result"]["tools"][0]
    assert listed["name"] != "files.read" and "anyOf" not in listed["inputSchema"]
    assert text_of(relay.call(listed["name"], {"path": 5})).endswith("\n/path: string, got integer 5")
    assert text_of(relay.call(listed["name"], {})).endswith(
        "\n(arguments): any of: requires path | requires uri, got object {}")
    assert echoed(relay.call(listed["name"], {"uri": "a"})) == {"name": "files.read", "arguments": {"uri": "a"}}
    relay.close()
    assert server.calls() == 1


def test_the_2026_era_gets_a_refusal_that_says_its_result_type(gated, tmp_path):
    record = tmp_path / "hook.jsonl"
    relay, server = gated({"era": "dual", "tools": [tool("weather")]}, "--check-arguments", "refuse", listed=False,
                          negotiate=hook("unruly_hook.py", "allow", str(record)), initialize=False)
    relay.request("tools/list", {"_meta": MODERN})
    reply = relay.request("tools/call", {"name": "weather", "arguments": {"city": 5}, "_meta": MODERN})[0]
    assert reply["result"]["isError"] is True and reply["result"]["resultType"] == "complete"
    assert "/city: string, got integer 5" in text_of(reply)
    good = relay.request("tools/call", {"name": "weather", "arguments": {"city": "Oslo"}, "_meta": MODERN})[0]
    assert good["result"]["resultType"] == "complete" and "isError" not in good["result"]
    relay.close()
    assert server.calls() == 1
    asked = json.loads(record.read_text())   # no initialize: the server's name comes from the results' _meta
    assert asked["server"] == "catalog" and asked["client"] is None


def test_batch_members_are_judged_one_by_one(gated):
    relay, server = gated({"tools": [tool("weather")]}, "--check-arguments", "refuse")
    relay.send([{"jsonrpc": "2.0", "id": "bad", "method": "tools/call", "params": {"name": "weather",
                                                                                    "arguments": {"city": 1}}},
                {"jsonrpc": "2.0", "id": "good", "method": "tools/call", "params": {"name": "weather",
                                                                                     "arguments": {"city": "x"}}}])
    answers = {}
    while len(answers) < 2:
        got = relay.recv()
        for answer in got if isinstance(got, list) else [got]:
            answers[answer["id"]] = answer
    assert answers["bad"]["result"]["isError"] is True and echoed(answers["good"])["arguments"] == {"city": "x"}
    relay.close()
    assert server.calls() == 1


def test_a_catalog_answered_from_the_cache_is_checked_before_the_server_is_up(relay_factory, tmp_path):
    server = Server(tmp_path, {"tools": [tool("weather")]})
    slow = ["-c", "import runpy, sys, time; time.sleep(1.5); sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], "
                  "run_name='__main__')", CATALOG_SERVER] + server.args()
    for attempt in range(2):   # the first start fills the cache, the second is answered from it
        relay = relay_factory(["--check-arguments", "refuse"], server_args=slow[1:], server=slow[0])
        started = time.monotonic()
        relay.initialize()
        relay.request("tools/list")
        reply = relay.call("weather", {"city": 5}, timeout=20)
        assert reply["result"]["isError"] is True
        if attempt:
            assert time.monotonic() - started < 1.2, "the catalog did not come from the cache"
        relay.close()
    assert server.calls() == 0


# -- the negotiate hook ------------------------------------------------------------------------------------------

SQL = {"type": "object", "properties": {"sql": {"type": "string"}}, "required": ["sql"]}
DEPLOY = {"type": "object", "properties": {"environment": {"enum": ["staging", "production"]},
                                           "ticket": {"type": "string"}}}


def test_the_sql_guard_keeps_destructive_sql_from_the_server(gated):
    relay, server = gated({"tools": [tool("query", SQL)]}, "--negotiate", hook("sql_guard.py"))
    refused = relay.call("query", {"sql": "drop table users"})
    assert refused["result"]["isError"] is True
    assert text_of(refused) == (REFUSED + ": its negotiate hook refused it: DROP is not allowed: this server is "
                                          "read-only, use SELECT")
    assert echoed(relay.call("query", {"sql": "select * from users"}))["arguments"] == {"sql": "select * from users"}
    relay.close()
    assert server.calls() == 1


def test_the_ticket_hook_wants_a_ticket_for_production(gated):
    relay, server = gated({"tools": [tool("deploy", DEPLOY)]}, "--negotiate", hook("ticket_required.py"))
    assert text_of(relay.call("deploy", {"environment": "production"})).endswith(
        "a change to production needs a ticket id in the argument ticket, like OPS-1234")
    assert relay.call("deploy", {"environment": "production", "ticket": "later"})["result"]["isError"] is True
    assert "isError" not in relay.call("deploy", {"environment": "production", "ticket": "OPS-1234"})["result"]
    assert "isError" not in relay.call("deploy", {"environment": "staging"})["result"]
    relay.close()
    assert server.calls() == 2


def readme_hook_words(name):
    """The hook files README ``name`` points to under tests/fixtures/hooks/, and the SQL words it says the first
    one keeps from the server (the code spans right after its name)."""
    with open(os.path.join(FIXTURES, os.pardir, os.pardir, name), encoding="utf-8") as handle:
        text = " ".join(handle.read().split())
    named = text[text.index("`tests/fixtures/hooks/"):][:300]
    after = text.split("sql_guard.py`", 1)[1][:80]
    return re.findall(r"`(?:tests/fixtures/hooks/)?(\w+\.py)`", named), re.findall(r"`([A-Z]+)`", after)


@pytest.mark.parametrize("readme", ["README.md", "README.zh-CN.md"])
def test_the_readmes_hooks_are_the_ones_tested_here_and_refuse_what_they_say(gated, readme):
    files, words = readme_hook_words(readme)
    assert files == ["sql_guard.py", "ticket_required.py"], files
    assert all(os.path.isfile(os.path.join(HOOKS, name)) for name in files)
    assert words == ["DROP", "DELETE", "TRUNCATE", "ALTER"], words
    relay, server = gated({"tools": [tool("query", SQL)]}, "--negotiate", hook("sql_guard.py"))
    for word in words:
        reply = relay.call("query", {"sql": "%s table users" % word.lower()})
        assert reply["result"]["isError"] is True and word + " is not allowed" in text_of(reply), word
    assert "isError" not in relay.call("query", {"sql": "select 1"})["result"]
    relay.close()
    assert server.calls() == 1


def test_the_schema_refuses_before_the_hook_is_asked(gated, tmp_path):
    record = tmp_path / "hook.jsonl"
    relay, _ = gated({"tools": [tool("weather")]}, "--check-arguments", "refuse",
                     "--negotiate", hook("unruly_hook.py", "allow", str(record)))
    assert "/city" in text_of(relay.call("weather", {"city": 5}))
    assert "isError" not in relay.call("weather", {"city": "Rome"})["result"]
    relay.close()
    assert [json.loads(line)["arguments"] for line in record.read_text().splitlines()] == [{"city": "Rome"}]


@pytest.mark.parametrize("mode, reason", [
    ("sleep", "the negotiate hook did not answer within 0.5 s (ocx-proxy --negotiate-timeout)"),
    ("garbage", "the negotiate hook answered with a line that is not JSON: this is not JSON"),
    ("wrong", 'the negotiate hook answered with a line that is no answer ({"id": 1, "valid": "no"})'),
    ("refuse", "its negotiate hook refused it: (it gave no reason)"),
    ("exit", "the negotiate hook stopped (negotiate hook exited with code 3)"),
])
def test_a_hook_that_fails_fails_closed(gated, mode, reason):
    relay, server = gated({"tools": [tool("weather")]}, "--negotiate", hook("unruly_hook.py", mode),
                          "--negotiate-timeout", "0.5")
    reply = relay.call("weather", {"city": "Rome"})
    assert reply["result"]["isError"] is True and text_of(reply) == REFUSED + ": " + reason
    assert relay.request("tools/list")[0]["result"]["tools"]   # the relay stays up
    relay.close()
    assert server.calls() == 0 and "Traceback" not in relay.stderr


def test_a_hook_that_exited_is_started_again_then_given_up(gated, tmp_path):
    relay, server = gated({"tools": [tool("weather")]}, "--negotiate", hook("unruly_hook.py", "start-fail"))
    reasons = []
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        reasons.append(text_of(relay.call("weather", {"city": "Rome"})))
        if "every call is refused" in reasons[-1]:
            break
        time.sleep(0.2)
    assert reasons[-1] == REFUSED + (": the negotiate hook stopped 4 times (last: negotiate hook exited with code "
                                     "4); every call is refused")
    assert relay.request("tools/list")[0]["result"]["tools"]
    relay.close()
    assert server.calls() == 0
    assert relay.stderr.count("starting it again in") == 3


def test_a_hook_that_exited_once_serves_again_after_its_restart(gated, tmp_path):
    record = tmp_path / "hook.jsonl"
    relay, server = gated({"tools": [tool("weather")]}, "--negotiate", hook("unruly_hook.py", "exit-first",
                                                                           str(record)))
    assert "stopped" in text_of(relay.call("weather", {"city": "Rome"}))
    time.sleep(0.8)   # the first restart comes after 0.5 s
    assert echoed(relay.call("weather", {"city": "Oslo"}))["arguments"] == {"city": "Oslo"}
    relay.close()
    assert server.calls() == 1


def test_concurrent_calls_each_get_their_own_answer(gated):
    relay, server = gated({"tools": [tool("query", SQL)]}, "--negotiate", hook("sql_guard.py"))
    for n in range(20):
        relay.send({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {
            "name": "query", "arguments": {"sql": ("delete from t where id=%d" if n % 3 == 0 else "select %d") % n}}})
    answers = {}
    while len(answers) < 20:
        answer = relay.recv()
        answers[answer["id"]] = answer
    for n, answer in answers.items():
        assert (answer["result"].get("isError") is True) == (n % 3 == 0), answer
        if n % 3:
            assert echoed(answer)["arguments"]["sql"] == "select %d" % n
    relay.close()
    assert server.calls() == 13


def test_a_call_cancelled_while_the_hook_thinks_never_reaches_the_server(gated, tmp_path):
    relay, server = gated({"tools": [tool("weather")]}, "--negotiate", hook("unruly_hook.py", "sleep"),
                          "--negotiate-timeout", "1", "--trace", str(tmp_path / "trace"))
    relay.send({"jsonrpc": "2.0", "id": "c", "method": "tools/call", "params": {"name": "weather",
                                                                                "arguments": {"city": "x"}}})
    relay.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "c"}})
    time.sleep(1.5)
    assert relay.request("tools/list")[0]["result"]["tools"] and not relay.backlog
    relay.close()
    assert server.calls() == 0
    records = [json.loads(line) for line in (tmp_path / "trace").read_text().splitlines()]
    assert [r["decision"] for r in records if r["dir"] == "gate"] == ["dropped"]


# -- one trace id per call ---------------------------------------------------------------------------------------

def trace_records(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_one_trace_id_follows_a_call_and_the_hook_gets_it(gated, tmp_path):
    record, trace = tmp_path / "hook.jsonl", tmp_path / "trace.ndjson"
    relay, _ = gated({"tools": [tool("weather")]}, "--negotiate", hook("unruly_hook.py", "allow", str(record)),
                     "--trace", str(trace), "--max-response-chars", "1000")
    relay.call("weather", {"city": "Paris " * 400})   # its echo is spilled
    relay.close()
    asked = json.loads(record.read_text())
    assert set(asked) == {"id", "tool", "arguments", "server", "client", "trace"}
    assert (asked["tool"], asked["server"], asked["client"]) == ("weather", "catalog", "test")
    assert re.fullmatch("[0-9a-f]{32}", asked["trace"])
    ours = [r for r in trace_records(trace) if r.get("trace") == asked["trace"]]
    assert [r["dir"] for r in ours] == ["gate", "client->upstream", "upstream->client"]
    assert ours[0]["decision"] == "pass" and ours[0]["by"] == "negotiate" and "hook_ms" in ours[0]
    assert "spill" in ours[-1]


def test_a_detached_result_carries_the_trace_id(relay_factory, tmp_path):
    trace = tmp_path / "trace.ndjson"
    relay = relay_factory(["--trace", str(trace), "--detach-after", "1", "--check-arguments", "refuse"])
    relay.initialize()
    relay.request("tools/list")   # the reader tool, which returns a detached call's result, is listed
    assert "detached" in json.dumps(relay.call("sleep", {"seconds": 2}))
    time.sleep(1.5)
    relay.close()
    records = trace_records(trace)
    ids = {r["trace"] for r in records if r.get("method") == "tools/call" and "trace" in r}
    assert len(ids) == 1
    dirs = [r["dir"] for r in records if r.get("trace") in ids]
    assert dirs == ["client->upstream", "proxy->client", "upstream->detached"]   # sleep is not listed: no check


def test_the_refusal_record_names_the_pointers_never_the_values(gated, tmp_path):
    trace = tmp_path / "trace.ndjson"
    relay, _ = gated({"tools": [tool("weather")]}, "--check-arguments", "refuse", "--trace", str(trace))
    relay.call("weather", {"city": 123456789})
    relay.close()
    gate = [r for r in trace_records(trace) if r["dir"] == "gate"]
    assert gate[0]["decision"] == "refuse" and gate[0]["findings"] == ["/city"]
    answer = [r for r in trace_records(trace) if r["dir"] == "proxy->client" and r.get("trace")]
    assert answer[0]["trace"] == gate[0]["trace"]
    assert "123456789" not in trace.read_text() and "123456789" not in relay.stderr


# -- bad input --------------------------------------------------------------------------------------------------

def test_broken_schemas_and_arguments_never_cost_a_call(gated):
    broken = [tool("a", {"type": 5}), tool("b", {"properties": [1]}), tool("c", {"$ref": 7}), {"name": "d",
              "inputSchema": "x"}, tool("e", {"required": "city", "enum": {}, "pattern": "(", "items": 3}),
              tool("f", {"allOf": "x", "anyOf": [], "oneOf": [5], "not": 1, "minimum": None})]
    relay, server = gated({"tools": broken}, "--check-arguments", "refuse")
    for name in "abcdef":
        for arguments in ({"city": [None, {"$ref": 1}]}, "text", [1, 2], 7, None):
            relay.send({"jsonrpc": "2.0", "id": name + json.dumps(arguments), "method": "tools/call",
                        "params": {"name": name, "arguments": arguments}})
            reply = relay.wait_for(name + json.dumps(arguments))[0]
            assert "result" in reply, reply
    relay.close()
    assert "Traceback" not in relay.stderr and "internal error" not in relay.stderr


def test_bad_gate_options_are_usage_errors(tmp_path):
    for args in (["--check-arguments", "strict"], ["--negotiate", ""], ["--negotiate", 'python "open'],
                 ["--negotiate-timeout", "0"], ["--negotiate-timeout", "x"]):
        result = run_proxy("stdio", *args, "--", sys.executable, STDIO_SERVER)
        assert result.returncode == 2 and b"Traceback" not in result.stderr, (args, result.stderr)
