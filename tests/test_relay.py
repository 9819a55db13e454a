"""The relay section, end to end: real relay subprocess, real fixture server, real pipes."""
import hashlib
import json
import os
import pathlib
import re
import signal
import stat
import sys
import threading
import time

import pytest

import ocx_proxy as op
from helpers import PROXY, STDIO_SERVER, RelayProcess, pid_alive, preview_body, raw_session

IO_MODES = ["select", "threads"]


@pytest.fixture(params=IO_MODES)
def io_mode(request):
    return request.param


def spill_meta(reply):
    return reply["result"]["_meta"]["ocx-proxy/spill"]


def test_small_call_passes_through_byte_exact(relay_factory, io_mode):
    relay = relay_factory(["--io", io_mode])
    relay.initialize()
    line = '{"jsonrpc":"2.0","id":__ID__,"result":{"content":[{"type":"text","text":"exact  spacing é"}]}}'
    relay.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                "params": {"name": "raw", "arguments": {"line": line}}})
    raw = relay.recv_raw()
    assert raw == line.replace("__ID__", "7").encode("utf-8") + b"\n"
    assert relay.close() == 0


def test_big_result_is_spilled_with_exact_copy_and_valid_preview(relay_factory, tmp_path, io_mode):
    relay = relay_factory(["--io", io_mode])
    relay.initialize("2025-06-18")
    text = "\n".join("row %05d %s" % (i, "x" * 40) for i in range(3000))
    original = json.dumps({"jsonrpc": "2.0", "id": "__ID__", "result": {
        "content": [{"type": "text", "text": text}], "isError": False}}, separators=(",", ":"))
    original = original.replace('"__ID__"', "__ID__")
    reply = relay.call("raw", {"line": original}, msg_id=42)
    out_line = relay.raw_lines[-1]
    assert len(out_line.decode("utf-8").rstrip("\n")) <= 10000
    result = reply["result"]
    assert result["isError"] is False
    preview = result["content"][0]["text"]
    assert preview_body(preview).startswith("row 00000")
    assert preview_body(preview).endswith("x" * 40)
    meta = spill_meta(reply)
    assert meta["original_chars"] == len(original.replace("__ID__", "42"))
    with open(meta["json"], "rb") as handle:
        saved = handle.read()
    expected = original.replace("__ID__", "42").encode("utf-8")
    assert hashlib.sha256(saved).hexdigest() == hashlib.sha256(expected).hexdigest()
    with open(meta["txt"], encoding="utf-8") as handle:
        assert handle.read() == text
    assert meta["txt"] in preview and meta["json"] in preview
    assert "characters omitted" in preview
    link = result["content"][1]
    assert link["type"] == "resource_link" and link["uri"] == pathlib.Path(meta["txt"]).as_uri()
    if op.FILE_OWNERS:   # Windows: the profile's ACL, not modes (README, Windows)
        spill_dir = os.path.dirname(meta["json"])
        assert stat.S_IMODE(os.stat(spill_dir).st_mode) == 0o700
        for path in (meta["json"], meta["txt"]):
            assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert relay.close() == 0


def test_resource_link_only_for_2025_06_18_and_later(relay_factory):
    relay = relay_factory()
    relay.initialize("2025-03-26")
    reply = relay.call("big", {"n": 30000})
    assert [block["type"] for block in reply["result"]["content"]] == ["text"]
    relay.close()


def test_unicode_is_counted_in_characters_not_bytes(relay_factory):
    relay = relay_factory()
    relay.initialize()
    reply = relay.call("big", {"n": 9000, "unit": "数"})  # 27,000 bytes, ~9,100 characters
    assert reply["result"]["content"][0]["text"] == "数" * 9000
    assert "_meta" not in reply["result"]
    emoji = relay.call("big", {"n": 12000, "unit": "🙂"})
    text = emoji["result"]["content"][0]["text"]
    assert "ocx-proxy" in text and len(json.dumps(emoji, ensure_ascii=False, separators=(",", ":"))) <= 10000
    body = preview_body(text).split("\n\n[... ")[0]
    assert set(body) == {"🙂"}
    relay.close()


def test_image_blocks_are_decoded_to_files(relay_factory):
    relay = relay_factory()
    relay.initialize()
    reply = relay.call("image", {"kb": 40})
    meta = spill_meta(reply)
    assert len(meta["files"]) == 1 and meta["files"][0].endswith(".1.png")
    with open(meta["files"][0], "rb") as handle:
        assert handle.read() == bytes(range(256)) * 160
    with open(meta["txt"], encoding="utf-8") as handle:
        saved = handle.read()
    assert meta["files"][0] in saved and "caption" in saved
    relay.close()


def test_structured_content_dropped_when_it_does_not_fit_and_output_schema_removed(relay_factory):
    relay = relay_factory()
    relay.initialize()
    tools, _ = relay.request("tools/list")
    assert all("outputSchema" not in tool for tool in tools["result"]["tools"])
    small = relay.call("structured", {"n": 700})  # too big: spilled, structured part kept only if it fits
    result = small["result"]
    assert "_meta" in result and len(json.dumps(small, separators=(",", ":"), ensure_ascii=False)) <= 10000
    huge = relay.call("structured", {"n": 3000})
    assert "structuredContent" not in huge["result"]
    relay.close()


def test_keep_output_schema_opt_out(relay_factory):
    relay = relay_factory(["--keep-output-schema"])
    relay.initialize()
    tools, _ = relay.request("tools/list")
    assert any("outputSchema" in tool for tool in tools["result"]["tools"])
    relay.close()


def test_resources_read_and_prompts_get_previews(relay_factory):
    relay = relay_factory()
    relay.initialize()
    reply, _ = relay.request("resources/read", {"uri": "test://thing", "n": 50000})
    contents = reply["result"]["contents"]
    assert len(contents) == 1 and contents[0]["uri"] == "test://thing"
    assert preview_body(contents[0]["text"]).startswith("RRR") and "ocx-proxy" in contents[0]["text"]
    # the preview names the request's uri only when it is one: a string
    reply, _ = relay.request("resources/read", {"uri": ["test://thing"], "n": 50000})
    uri = reply["result"]["contents"][0]["uri"]
    assert isinstance(uri, str) and uri.startswith("file://") and uri.endswith(".txt")
    reply, _ = relay.request("prompts/get", {"name": "p"})
    assert reply["result"]["description"] == "a prompt"
    message = reply["result"]["messages"][0]
    assert message["role"] == "user" and preview_body(message["content"]["text"]).startswith("PPP")
    relay.close()


def test_other_methods_become_an_error_naming_the_file(relay_factory):
    relay = relay_factory()
    relay.initialize()
    reply, _ = relay.request("custom/big")
    assert reply["error"]["code"] == -32000
    path = reply["error"]["data"]["ocx-proxy/spill"]["json"]
    assert path in reply["error"]["message"] and os.path.exists(path)
    relay.close()


def test_oversized_errors_and_log_notifications_are_shortened(relay_factory):
    relay = relay_factory()
    relay.initialize()
    reply = relay.call("error_big", {"n": 40000})
    assert reply["error"]["code"] == -32603
    assert preview_body(reply["error"]["message"]).startswith("EEE") and len(relay.raw_lines[-1]) <= 10001
    reply, before = relay.request("tools/call", {"name": "log_big", "arguments": {"n": 40000}})
    note = [m for m in before if m.get("method") == "notifications/message"][0]
    assert note["params"]["level"] == "info" and preview_body(note["params"]["data"]).startswith("LLL")
    assert len(json.dumps(note, separators=(",", ":"))) <= 10000
    relay.close()


def test_catalog_responses_are_never_rewritten(relay_factory):
    relay = relay_factory()
    relay.initialize()
    reply, _ = relay.request("tools/list", {"cursor": "big"})
    tools = reply["result"]["tools"]
    assert len(tools) == 103 and tools[-1]["name"] == "read_spilled_output"  # 2 + 100 padded, all kept, + ours
    assert len(relay.raw_lines[-1]) > 10000
    relay.close()
    assert "never rewritten" in relay.stderr


# -- each request answered in its own era ------------------------------

MODERN_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"


def modern(params=None):
    """``params`` of a 2026-07-28 request: the version and capabilities ride in _meta."""
    return dict(params or {}, _meta=dict(MODERN_META))


def test_both_eras_on_one_relay_get_previews_of_their_own_era(relay_factory, io_mode):
    relay = relay_factory(["--io", io_mode], ["--instructions-chars", "30000"])
    discover, _ = relay.request("server/discover", modern())  # the auto client's probe: never rewritten
    assert len(discover["result"]["instructions"]) == 30000 and discover["result"]["resultType"] == "complete"
    reply = relay.call("big", {"n": 50000})
    # No initialize yet and a request without _meta: the legacy shape, as before.
    assert "resultType" not in reply["result"]
    reply, _ = relay.request("tools/call", modern({"name": "big", "arguments": {"n": 50000}}))
    result = reply["result"]
    assert result["resultType"] == "complete" and {"content", "resultType"} <= set(result)
    assert result["_meta"][SERVER_INFO_KEY] == {"name": "fixture", "version": "1"}
    assert "ocx-proxy/spill" in result["_meta"]
    assert [block["type"] for block in result["content"]] == ["text", "resource_link"]
    reply, _ = relay.request("resources/read", modern({"uri": "test://thing", "n": 50000}))
    result = reply["result"]
    assert {"contents", "resultType", "ttlMs", "cacheScope"} <= set(result)
    assert (result["ttlMs"], result["cacheScope"], result["resultType"]) == (60000, "public", "complete")
    assert result["contents"][0]["uri"] == "test://thing" and SERVER_INFO_KEY in result["_meta"]
    reply, _ = relay.request("prompts/get", modern({"name": "p"}))
    assert reply["result"]["resultType"] == "complete" and reply["result"]["messages"][0]["role"] == "user"
    # The fallback: a legacy session on the same relay keeps legacy previews...
    assert len(relay.initialize("2025-03-26")["result"]["instructions"]) == 30000
    legacy = relay.call("big", {"n": 50000})["result"]
    assert "resultType" not in legacy and set(legacy["_meta"]) == {"ocx-proxy/spill"}
    assert [block["type"] for block in legacy["content"]] == ["text"]  # 2025-03-26 has no resource_link
    legacy, _ = relay.request("resources/read", {"uri": "test://thing", "n": 50000})
    assert "ttlMs" not in legacy["result"] and "resultType" not in legacy["result"]
    # ...while a request naming 2026-07-28 is still answered in its own era.
    reply, _ = relay.request("tools/call", modern({"name": "big", "arguments": {"n": 50000}}))
    assert reply["result"]["resultType"] == "complete" and reply["result"]["content"][1]["type"] == "resource_link"
    assert relay.close() == 0


def test_an_input_required_result_is_forwarded_untouched_with_one_warning(relay_factory):
    relay = relay_factory()
    reply, _ = relay.request("tools/call", modern({"name": "ask_input", "arguments": {"n": 20000}}))
    result = reply["result"]
    assert result["resultType"] == "input_required" and result["requestState"] == "state-1"
    assert result["inputRequests"]["confirm"]["params"]["message"] == "Q" * 20000
    assert "ocx-proxy/spill" not in result["_meta"]
    relay.close()
    warnings = [line for line in relay.stderr.splitlines() if "never rewritten" in line]
    assert len(warnings) == 1 and "input_required" in warnings[0]


def test_tasks_result_and_a_completed_task_are_spilled_as_tool_results(relay_factory):
    relay = relay_factory()
    relay.initialize("2025-11-25")
    reply, _ = relay.request("tasks/result", {"taskId": "t1"})
    result = reply["result"]
    assert "error" not in reply and result["isError"] is False
    assert preview_body(result["content"][0]["text"]).startswith("TTT") and result["content"][1]["type"] == "resource_link"
    assert "ocx-proxy/spill" in result["_meta"]
    reply, _ = relay.request("tasks/get", modern({"taskId": "t2"}))
    task = reply["result"]
    assert (task["taskId"], task["status"], task["resultType"]) == ("t2", "completed", "complete")
    assert preview_body(task["result"]["content"][0]["text"]).startswith("GGG") and "ocx-proxy/spill" in task["_meta"]
    assert len(relay.raw_lines[-1]) <= 10001
    relay.close()


def test_spill_disabled_with_zero(relay_factory):
    relay = relay_factory(["--max-response-chars", "0"])
    relay.initialize()
    reply = relay.call("big", {"n": 50000})
    assert reply["result"]["content"][0]["text"] == "x" * 50000
    relay.close()


def test_disk_error_forwards_the_original(relay_factory, tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the spill directory should be")
    relay = relay_factory(["--output-dir", str(blocker / "sub")])
    relay.initialize()
    reply = relay.call("big", {"n": 30000})
    assert reply["result"]["content"][0]["text"] == "x" * 30000
    relay.close()
    assert "forwarding it unchanged" in relay.stderr


def test_non_json_upstream_lines_are_logged_not_forwarded(relay_factory, io_mode):
    relay = relay_factory(["--io", io_mode], ["--banner", "Server starting on stdio..."])
    relay.initialize()
    reply = relay.call("garbage_then_echo")
    assert reply["result"]["content"][0]["text"] == "after garbage"
    relay.close()
    assert all(b"Server starting" not in line and b"not json" not in line for line in relay.raw_lines)
    assert "Server starting on stdio" in relay.stderr and "this is not json" in relay.stderr


def test_client_garbage_gets_parse_error_and_relay_goes_on(relay_factory, io_mode):
    relay = relay_factory(["--io", io_mode])
    relay.initialize()
    relay.send_raw(b"{not json\n")
    error = relay.recv()
    assert error == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": error["error"]["message"]}}
    relay.send_raw(b'{"foo": 1}\r\n')
    assert relay.recv()["error"]["code"] == -32600
    reply, _ = relay.request("ping")
    assert reply["result"] == {}
    relay.close()


def test_crlf_both_ways(relay_factory):
    relay = relay_factory(server_args=["--crlf"])
    relay.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\r\n')
    assert relay.recv_raw() == b'{"jsonrpc":"2.0","id":1,"result":{}}\n'
    relay.close()


def test_child_stderr_is_prefixed_on_ours(relay_factory):
    relay = relay_factory(server_args=["--stderr", "hello from the server"])
    relay.initialize()
    relay.close()
    assert "[upstream] hello from the server" in relay.stderr


def test_concurrent_calls_do_not_block_each_other(relay_factory, io_mode):
    relay = relay_factory(["--io", io_mode])
    relay.initialize()
    relay.send({"jsonrpc": "2.0", "id": "slow", "method": "tools/call",
                "params": {"name": "sleep", "arguments": {"seconds": 1.5}}})
    started = time.monotonic()
    reply, _ = relay.request("ping")
    assert reply["result"] == {} and time.monotonic() - started < 1.0
    reply, _ = relay.wait_for("slow")
    assert reply["result"]["content"][0]["text"] == "slept"
    relay.close()


def test_progress_arrives_before_result(relay_factory):
    relay = relay_factory()
    relay.initialize()
    reply, before = relay.request("tools/call", {"name": "progress", "arguments": {},
                                                 "_meta": {"progressToken": "tok"}})
    assert [m["params"]["progress"] for m in before] == [1, 2, 3]
    assert reply["result"]["content"][0]["text"] == "progressed"
    relay.close()


def test_server_to_client_request_round_trip(relay_factory, io_mode):
    relay = relay_factory(["--io", io_mode])
    relay.initialize()
    relay.send({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "ask_client"}})
    ask = relay.recv()
    assert ask["method"] == "sampling/createMessage"
    relay.send({"jsonrpc": "2.0", "id": ask["id"], "result": {"role": "assistant", "content": {"type": "text", "text": "hi"}}})
    reply, _ = relay.wait_for(5)
    assert json.loads(reply["result"]["content"][0]["text"])["result"]["role"] == "assistant"
    relay.close()


def test_crash_fails_pending_requests_with_exit_code_and_stderr(relay_factory, io_mode):
    relay = relay_factory(["--io", io_mode])
    relay.initialize()
    relay.send({"jsonrpc": "2.0", "id": "waiting", "method": "tools/call", "params": {"name": "never"}})
    reply = relay.call("crash", {"code": 7})
    assert reply["error"]["code"] == -32000
    assert "exited with code 7" in reply["error"]["message"]
    assert "crashing on purpose" in reply["error"]["message"]
    other, _ = relay.wait_for("waiting")
    assert other["error"]["code"] == -32000
    later, _ = relay.request("ping")  # no restarts: answered by the relay, not hung
    assert "exited with code 7" in later["error"]["message"]
    assert relay.close() == 0


@pytest.mark.parametrize("timeout", ["0.3", "0"])
def test_a_request_after_the_upstream_died_for_good_is_answered_once(relay_factory, io_mode, timeout):
    # The dead upstream's reason answers it at once: neither its --request-timeout nor shutdown answers it again.
    relay = relay_factory(["--io", io_mode, "--request-timeout", timeout])
    relay.initialize()
    assert relay.call("crash", {"code": 7})["error"]["code"] == -32000
    later, _ = relay.request("ping", msg_id="after-death")
    assert "exited with code 7" in later["error"]["message"]
    time.sleep(0.6)  # past its --request-timeout
    assert relay.close() == 0
    answers = [json.loads(line) for line in relay.raw_lines if b'"after-death"' in line]
    assert len(answers) == 1, answers


def test_restart_replays_initialize(relay_factory, tmp_path, io_mode):
    record = tmp_path / "received.ndjson"
    relay = relay_factory(["--restart", "1", "--io", io_mode], ["--record", str(record)])
    relay.initialize()
    assert relay.call("crash")["error"]["code"] == -32000
    reply = relay.call("echo", {"text": "after restart"})
    assert reply["result"]["content"][0]["text"] == "after restart"
    received = [json.loads(line) for line in record.read_text().splitlines()]
    methods = [m.get("method") for m in received]
    assert methods.count("initialize") == 2 and methods.count("notifications/initialized") == 2
    replay = [m for m in received if m.get("method") == "initialize"][1]
    assert replay["params"]["clientInfo"]["name"] == "test"
    # The replayed initialize result never reaches the client.
    assert sum(1 for line in relay.raw_lines if b'"protocolVersion"' in line) == 1
    assert relay.call("crash")["error"]["code"] == -32000  # second crash: no restarts left
    assert "exited with code 7" in relay.request("ping")[0]["error"]["message"]
    relay.close()


def test_client_lines_during_a_restart_wait_for_the_new_upstream(relay_factory, tmp_path, io_mode):
    record = tmp_path / "received.ndjson"
    relay = relay_factory(["--restart", "1", "--io", io_mode], ["--record", str(record)])
    relay.initialize()
    assert relay.call("crash")["error"]["code"] == -32000
    # The replacement starts 0.1 s after the crash and must answer the replayed
    # initialize first: these lines wait for it, then go in the order they came.
    for n in range(3):
        relay.send({"jsonrpc": "2.0", "id": "held-%d" % n, "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": str(n)}}})
    for n in range(3):
        reply, _ = relay.wait_for("held-%d" % n)
        assert reply["result"]["content"][0]["text"] == str(n)
    received = [json.loads(line) for line in record.read_text().splitlines()]
    last = [m.get("id") if m.get("method") == "tools/call" else m.get("method") for m in received[-5:]]
    assert last == ["initialize", "notifications/initialized", "held-0", "held-1", "held-2"]
    relay.close()

def test_request_timeout_cancels_upstream_and_drops_late_answer(relay_factory, tmp_path):
    record = tmp_path / "received.ndjson"
    relay = relay_factory(["--request-timeout", "0.5"], ["--record", str(record)])
    relay.initialize()
    started = time.monotonic()
    reply = relay.call("sleep", {"seconds": 1.2}, msg_id="t1")
    assert reply["error"]["code"] == -32001 and 0.4 < time.monotonic() - started < 1.1
    time.sleep(1.0)  # the late answer arrives at the relay and must be dropped
    ping, before = relay.request("ping")
    assert ping["result"] == {} and before == []
    cancels = [json.loads(l) for l in record.read_text().splitlines() if "notifications/cancelled" in l]
    assert cancels and cancels[0]["params"]["requestId"] == "t1"
    relay.close()
    assert all(b'"slept"' not in line for line in relay.raw_lines)


def test_request_timeout_spares_a_subscriptions_listen_stream(relay_factory):
    relay = relay_factory(["--request-timeout", "0.3"])
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    relay.send({"jsonrpc": "2.0", "id": "listen", "method": "subscriptions/listen", "params": {"_meta": meta}})
    assert relay.recv()["method"] == "notifications/subscriptions/acknowledged"
    time.sleep(0.6)
    reply = relay.call("sleep", {"seconds": 1.0}, msg_id="slow")
    assert reply["id"] == "slow" and reply["error"]["code"] == -32001  # other requests still time out
    assert all(b'"listen"' not in line or b"acknowledged" in line for line in relay.raw_lines)
    relay.close()


def test_spawn_failure_is_reported_to_the_client(tmp_path):
    relay = RelayProcess(command=[sys.executable, os.path.join(os.path.dirname(STDIO_SERVER), "..", "..", "ocx_proxy.py"),
                                  "stdio", "--output-dir", str(tmp_path), "--", "/nonexistent/server-binary"])
    reply = relay.initialize()
    assert reply["error"]["code"] == -32000 and "could not start" in reply["error"]["message"]
    assert relay.close() == 0


def test_child_gets_only_safe_environment_plus_env_pairs(relay_factory):
    env = dict(os.environ, SECRET_TOKEN="hunter2", FROM_PARENT="parent-value")
    relay = relay_factory(["--env", "GREETING=hi ${FROM_PARENT}", "--env", "EMPTY="], env=env)
    relay.initialize()
    child_env = json.loads(relay.call("env")["result"]["content"][0]["text"])
    assert "SECRET_TOKEN" not in child_env and "FROM_PARENT" not in child_env
    assert child_env["GREETING"] == "hi parent-value" and child_env["EMPTY"] == ""
    assert child_env["PATH"] == os.environ["PATH"]
    relay.close()
    relay = relay_factory(["--pass-environment"], env=env)
    relay.initialize()
    assert json.loads(relay.call("env")["result"]["content"][0]["text"])["SECRET_TOKEN"] == "hunter2"
    relay.close()


def test_cwd_option(relay_factory, tmp_path):
    relay = relay_factory(["--cwd", str(tmp_path)])
    relay.initialize()
    assert relay.call("cwd")["result"]["content"][0]["text"] == str(tmp_path)
    relay.close()


def test_unset_env_reference_is_a_usage_error(relay_factory):
    env = {k: v for k, v in os.environ.items() if k != "OCX_UNSET_VAR"}
    relay = relay_factory(["--env", "X=${OCX_UNSET_VAR}"], env=env)
    assert relay.proc.wait(timeout=10) == 2
    assert "OCX_UNSET_VAR" in relay.stderr and "Traceback" not in relay.stderr
    assert relay.raw_lines == []


def test_shutdown_escalates_and_leaves_no_orphans(relay_factory, tmp_path, io_mode):
    pidfile = tmp_path / "grandchild.pid"
    relay = relay_factory(["--io", io_mode], ["--ignore-eof", "--grandchild", str(pidfile)])
    relay.initialize()
    server_pid = int(relay.call("pid")["result"]["content"][0]["text"])
    grandchild = int(pidfile.read_text())
    started = time.monotonic()
    assert relay.close() == 0
    elapsed = time.monotonic() - started
    if hasattr(signal, "SIGKILL"):
        assert 3.5 < elapsed < 8, elapsed  # 2 s after stdin close, 2 s after SIGTERM, then SIGKILL
    else:
        assert 1.5 < elapsed < 6, elapsed  # Windows: 2 s after stdin close, the job ends (no polite signal)
    time.sleep(0.2)
    assert not pid_alive(server_pid) and not pid_alive(grandchild)


@pytest.mark.skipif(os.name == "nt", reason="SIGTERM is POSIX: on Windows send_signal(SIGTERM) is TerminateProcess "
                    "(tests/windows: the relay killed outright, and Ctrl+C from a console)")
def test_sigterm_stops_relay_and_child(relay_factory):
    relay = relay_factory()
    relay.initialize()
    server_pid = int(relay.call("pid")["result"]["content"][0]["text"])
    relay.proc.send_signal(signal.SIGTERM)
    assert relay.proc.wait(timeout=10) == 0
    time.sleep(0.1)
    assert not pid_alive(server_pid)


def test_trace_file_records_metadata_without_secrets(relay_factory, tmp_path):
    trace = tmp_path / "trace.ndjson"
    relay = relay_factory(["--trace", str(trace)])
    relay.initialize()
    relay.call("echo", {"text": "Bearer supersecret"})
    relay.call("big", {"n": 30000})
    relay.close()
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    assert stat.S_IMODE(os.stat(trace).st_mode) == 0o600 or not op.FILE_OWNERS
    assert "supersecret" not in trace.read_text()
    calls = [r for r in records if r.get("method") == "tools/call" and r["dir"] == "upstream->client"]
    assert calls[0]["tool"] if "tool" in calls[0] else True
    assert any("spill" in r for r in calls) and all("ms" in r for r in calls)
    assert {r["dir"] for r in records} >= {"client->upstream", "upstream->client"}


def test_retention_removes_only_our_old_files(tmp_path):

    spill = tmp_path / "spill"
    spill.mkdir()
    old = spill / "20200101T000000.000000Z_tools-call_id-1_abcdef0123.json"
    mine_new = spill / "20990101T000000.000000Z_tools-call_id-1_abcdef0123.txt"
    foreign = spill / "notes.txt"
    for path in (old, mine_new, foreign):
        path.write_text("x")
    long_ago = time.time() - 30 * 86400
    os.utime(old, (long_ago, long_ago))
    os.utime(foreign, (long_ago, long_ago))
    relay = RelayProcess(["--output-dir", str(spill), "--retention-days", "7"])
    relay.initialize()
    relay.close()
    assert not old.exists() and mine_new.exists() and foreign.exists()


# -- resource bounds: backpressure and --max-message-bytes ----------------------

MiB = 1 << 20


def wait_until_stable(read, settle=0.4, timeout=5.0):
    """Poll ``read()`` until its value has not changed for ``settle`` seconds; return it."""
    value, since = read(), time.monotonic()
    deadline = since + timeout
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now = read()
        if now != value:
            value, since = now, time.monotonic()
        elif time.monotonic() - since >= settle:
            break
    return value


def raw_relay(tmp_path, io_mode, *relay_args):
    """The relay with our own pipes: the test decides when (and whether) to read its stdout."""
    argv = [sys.executable, PROXY, "stdio", "--output-dir", str(tmp_path / "spill"), "--io", io_mode,
            "--max-buffer-bytes", str(4 * MiB)] + list(relay_args) + ["--", sys.executable, STDIO_SERVER]
    with open(str(tmp_path / "relay.stderr"), "wb") as stderr:
        return raw_session(argv, stderr=stderr)


def test_a_client_that_does_not_read_slows_the_server_down(tmp_path, io_mode):
    progress = tmp_path / "progress"
    progress.write_text("0")
    proc, send = raw_relay(tmp_path, io_mode, "--max-response-chars", "0")
    try:
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
              "params": {"name": "flood", "arguments": {"count": 40, "size": MiB, "progress": str(progress)}}})
        written = wait_until_stable(lambda: progress.read_text())
        # 4 MiB queued for us, a pipe on each side and the line being written: nowhere near 40.
        assert 0 < int(written or 0) <= 12
        for n in range(1, 41):
            msg = json.loads(proc.stdout.readline())
            assert msg["params"]["data"] == "%06d" % n + "F" * MiB
        assert json.loads(proc.stdout.readline())["id"] == 2
        assert progress.read_text() == "40"
    finally:
        proc.stdin.close()
        proc.wait(15)
        proc.stdout.close()


def test_a_server_that_does_not_read_slows_the_client_down(tmp_path, io_mode):
    go_on = tmp_path / "go-on"
    proc, send = raw_relay(tmp_path, io_mode)
    sent = [0]
    line = json.dumps({"jsonrpc": "2.0", "method": "notifications/bulk", "params": {"data": "C" * MiB}}).encode()

    def flood():
        for _ in range(40):
            proc.stdin.write(line + b"\n")
            proc.stdin.flush()
            sent[0] += 1

    try:
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
              "params": {"name": "pause_input", "arguments": {"until": str(go_on)}}})
        writer = threading.Thread(target=flood, daemon=True)
        writer.start()
        assert wait_until_stable(lambda: sent[0]) <= 12  # our writes block: the relay stopped reading
        go_on.write_text("")
        writer.join(15)
        assert sent[0] == 40
        send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "received"}})
        replies = [json.loads(proc.stdout.readline()) for _ in range(2)]
        counted = [r for r in replies if r["id"] == 3][0]
        # initialize, initialized, pause_input, 40 notifications, this call: nothing lost
        assert counted["result"]["content"][0]["text"] == "44"
    finally:
        go_on.write_text("")
        proc.stdin.close()
        proc.wait(15)
        proc.stdout.close()


def test_an_oversized_server_line_fails_its_request_and_the_relay_goes_on(relay_factory, io_mode):
    relay = relay_factory(["--io", io_mode, "--max-message-bytes", "100000"])
    relay.initialize()
    for id_last in (False, True):  # the id is read from the first or the last bytes kept
        reply = relay.call("big", {"n": 200000, "id_last": id_last})
        assert reply["error"]["code"] == -32000
        assert "--max-message-bytes" in reply["error"]["message"] and "100000" in reply["error"]["message"]
    assert relay.call("echo", {"text": "after"})["result"]["content"][0]["text"] == "after"
    assert relay.call("big", {"n": 90000})["result"]  # under the cap: as before
    assert relay.close() == 0
    assert relay.wait_for_stderr("--max-message-bytes", 2).count("--max-message-bytes") == 2
    assert "Traceback" not in relay.stderr


def test_an_oversized_client_line_is_answered_and_never_sent(relay_factory, tmp_path, io_mode):
    record = tmp_path / "record"
    relay = relay_factory(["--io", io_mode, "--max-message-bytes", "100000"], ["--record", str(record)])
    relay.initialize()
    text = "z" * 200000
    relay.send({"jsonrpc": "2.0", "id": 41, "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": text}}})
    relay.send_raw(json.dumps({"jsonrpc": "2.0", "method": "tools/call",
                               "params": {"name": "echo", "arguments": {"text": text}},
                               "id": "last"}).encode() + b"\r\n")
    relay.send({"jsonrpc": "2.0", "method": "notifications/big", "params": {"text": text}})
    for msg_id in (41, "last"):
        reply, _ = relay.wait_for(msg_id)
        assert reply["error"]["code"] == -32600 and "--max-message-bytes" in reply["error"]["message"]
    assert relay.call("echo", {"text": "after"})["result"]["content"][0]["text"] == "after"
    assert relay.close() == 0
    assert "zzz" not in record.read_text()
    assert relay.wait_for_stderr("dropped a client notification notifications/big").count(
        "dropped a client notification notifications/big") == 1


@pytest.mark.slow
def test_a_100_mb_response_passes_through_and_spills_intact(relay_factory, tmp_path):
    relay = relay_factory(["--max-response-chars", "0"])
    relay.initialize()
    reply = relay.call("big", {"n": 100 * 1000 * 1000}, timeout=120)
    assert len(reply["result"]["content"][0]["text"]) == 100 * 1000 * 1000
    assert relay.close() == 0
    relay = relay_factory()
    relay.initialize()
    meta = spill_meta(relay.call("big", {"n": 100 * 1000 * 1000, "unit": "é"}, timeout=120))
    assert meta["original_chars"] > 100 * 1000 * 1000
    with open(meta["txt"], "rb") as handle:
        assert handle.read() == "é".encode() * (100 * 1000 * 1000)
    assert relay.close() == 0


@pytest.mark.slow
def test_40_times_10_mb_to_a_client_that_does_not_read(tmp_path):
    progress = tmp_path / "progress"
    progress.write_text("0")
    proc, send = raw_relay(tmp_path, "select", "--max-response-chars", "0", "--max-buffer-bytes", str(64 * MiB))
    try:
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
              "params": {"name": "flood", "arguments": {"count": 40, "size": 10 * MiB, "progress": str(progress)}}})
        assert int(wait_until_stable(lambda: progress.read_text(), settle=1.0, timeout=30)) <= 10
        for n in range(1, 41):
            assert json.loads(proc.stdout.readline())["params"]["data"].startswith("%06d" % n)
        assert json.loads(proc.stdout.readline())["id"] == 2
    finally:
        proc.stdin.close()
        proc.wait(30)
        proc.stdout.close()


# -- one bad line never costs its neighbours, and nothing waits for a dropped line --------

def strict_json(raw):
    """Parse a line as a strict client would: NaN/Infinity refused; long integers kept as text."""
    def refuse(constant):
        raise ValueError("%s in relay output" % constant)
    return json.loads(raw.decode("utf-8"), parse_constant=refuse, parse_int=lambda text: int(text) if len(text) < 4000 else text)


def answer_raw(relay, line, msg_id, method="tools/call", params=None):
    """Have the fixture server answer request ``msg_id`` with ``line`` written as is (``__ID__`` = the id)."""
    params = dict(params or {"name": "echo"}, _answer_raw=line)
    relay.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})


def recv_id(relay, msg_id, timeout=3):
    """The next line (strictly parsed) answering ``msg_id``, skipping others."""
    deadline = time.monotonic() + timeout
    while True:
        raw = relay.recv_raw(max(0.01, deadline - time.monotonic()))
        msg = strict_json(raw)
        if isinstance(msg, dict) and msg.get("id") == msg_id and "method" not in msg:
            return msg, raw


def test_issue_reproduction_object_id_from_the_server_loses_nothing(tmp_path):

    server = ('import sys;sys.stdin.readline();print("{\\"jsonrpc\\":\\"2.0\\",\\"id\\":{},\\"result\\":{}}\\n'
              '{\\"jsonrpc\\":\\"2.0\\",\\"id\\":1,\\"result\\":{}}",flush=True);sys.stdin.read()')
    relay = RelayProcess(command=[sys.executable, PROXY, "stdio", "--output-dir", str(tmp_path), "--",
                                  sys.executable, "-c", server])
    relay.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
    assert relay.recv_raw(timeout=3) == b'{"jsonrpc":"2.0","id":1,"result":{}}\n'
    relay.close()
    assert "Traceback" not in relay.stderr and "is not a JSON-RPC message" in relay.stderr


def test_object_array_and_boolean_ids_from_the_server_cost_no_other_line(relay_factory, io_mode):
    relay = relay_factory(["--io", io_mode])
    relay.initialize()
    answer_raw(relay, '{"jsonrpc":"2.0","id":{},"result":{}}\n{"jsonrpc":"2.0","id":[1],"error":{}}\n'
                      '{"jsonrpc":"2.0","id":true,"result":{}}\n{"jsonrpc":"2.0","id":__ID__,"result":{"ok":1}}', 7)
    reply, _ = recv_id(relay, 7)
    assert reply["result"] == {"ok": 1}
    relay.close()
    assert relay.stderr.count("is not a JSON-RPC message") == 3


def test_object_array_and_boolean_ids_from_the_client_get_invalid_request(relay_factory, io_mode):
    relay = relay_factory(["--io", io_mode])
    relay.initialize()
    relay.send_raw(b'{"jsonrpc":"2.0","id":{},"method":"ping"}\n{"jsonrpc":"2.0","id":[1],"method":"ping"}\n'
                   b'{"jsonrpc":"2.0","id":true,"method":"ping"}\n{"jsonrpc":"2.0","id":2,"method":"ping"}\n')
    errors = [relay.recv(timeout=3) for _ in range(3)]
    assert [(e["id"], e["error"]["code"]) for e in errors] == [(None, -32600)] * 3
    assert relay.recv(timeout=3) == {"jsonrpc": "2.0", "id": 2, "result": {}}
    relay.close()


def test_a_method_that_is_not_a_string_gets_invalid_request(relay_factory, tmp_path):
    record = tmp_path / "received.ndjson"
    relay = relay_factory(["--request-timeout", "5"], ["--record", str(record)])
    relay.initialize()
    for n, method in enumerate((["tools/call"], {"a": 1}, 5, None, True)):
        relay.send({"jsonrpc": "2.0", "id": n, "method": method, "params": {"name": "echo"}})
        reply, _ = recv_id(relay, n)
        assert reply["error"] == {"code": -32600, "message": "Invalid Request: not a JSON-RPC 2.0 message"}
    assert relay.request("ping")[0]["result"] == {}
    relay.close()
    assert len(record.read_text().splitlines()) == 3  # initialize, initialized, ping
    assert "internal error" not in relay.stderr


def test_deep_nesting_from_the_client_answers_its_id(relay_factory):
    relay = relay_factory()
    relay.initialize()
    deep = b"[" * 100000 + b"]" * 100000
    relay.send_raw(b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":'
                   + deep + b'}}\n{"jsonrpc":"2.0","id":6,"method":"ping"}\n')
    error = relay.recv(timeout=3)
    assert error["id"] == 5 and error["error"]["code"] == -32700 and "nested" in error["error"]["message"]
    assert relay.recv(timeout=3) == {"jsonrpc": "2.0", "id": 6, "result": {}}
    relay.close()


def test_deep_nesting_from_the_server_fails_only_its_request(relay_factory):
    relay = relay_factory()
    relay.initialize()
    deep = "[" * 100000 + "]" * 100000
    answer_raw(relay, '{"jsonrpc":"2.0","id":__ID__,"result":' + deep + '}\n'
                      '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"next"}}', 8)
    error, _ = recv_id(relay, 8)
    assert error["error"]["code"] == -32603 and "nested too deeply" in error["error"]["message"]
    note = relay.recv(timeout=3)
    assert note["method"] == "notifications/message" and note["params"]["data"] == "next"
    relay.close()


def test_huge_integers_are_relayed_byte_exact_both_ways(relay_factory, tmp_path):
    record = tmp_path / "received.ndjson"
    relay = relay_factory(server_args=["--record", str(record)])
    relay.initialize()
    digits = "9" * 5000  # over the int-string limit of current Pythons (4300 digits)
    request = '{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"echo","arguments":{"n":%s}}}' % digits
    relay.send_raw(request.encode() + b"\n")
    reply, _ = recv_id(relay, 11)
    assert reply["result"]["content"][0]["text"] == ""
    assert request in record.read_text().splitlines()
    line = '{"jsonrpc":"2.0","id":__ID__,"result":{"content":[],"structuredContent":{"n":-%s}}}' % digits
    answer_raw(relay, line, 12)
    _, raw = recv_id(relay, 12)
    assert raw == line.replace("__ID__", "12").encode() + b"\n"
    relay.close()


def test_an_integer_id_of_any_length_is_relayed_and_answered(relay_factory, tmp_path):
    record = tmp_path / "received.ndjson"
    relay = relay_factory(["--request-timeout", "2"], server_args=["--record", str(record)])
    relay.initialize()
    digits = "9" * 5000  # past int()'s limit: the id stays the text it came as, both ways
    small = '{"jsonrpc":"2.0","id":-%s,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}' % digits
    relay.send_raw(small.encode() + b"\n")
    reply, raw = recv_id(relay, "-" + digits)
    assert reply["result"]["content"][0]["text"] == "hi" and raw.startswith(b'{"jsonrpc":"2.0","id":-999')
    assert small in record.read_text().splitlines()
    # a big answer (read on its envelope, then spilled): the preview carries the id as it came
    relay.send_raw(b'{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"big","arguments":{"n":70000}}}\n'
                   % digits.encode())
    reply, raw = recv_id(relay, digits)
    assert spill_meta(reply) and raw.startswith(b'{"jsonrpc":"2.0","id":' + digits.encode() + b",")
    assert open(spill_meta(reply)["json"], "rb").read().startswith(b'{"jsonrpc":"2.0","id":' + digits.encode())
    # our own answers carry it too: a timeout, and a batch member
    relay.send_raw(b'[{"jsonrpc":"2.0","id":1%s,"method":"tools/call","params":{"name":"never"}}]\n' % digits.encode())
    reply, raw = recv_id(relay, "1" + digits, timeout=5)
    assert reply["error"]["code"] == -32001 and raw.startswith(b'{"jsonrpc":"2.0","id":1' + digits.encode() + b",")
    # a server request with such an id reaches the client, and the client's answer the server
    answer_raw(relay, '{"jsonrpc":"2.0","id":%s,"method":"roots/list"}' % digits, 7)
    request = strict_json(relay.recv_raw(timeout=3))
    assert request["id"] == digits and request["method"] == "roots/list"
    answer = '{"jsonrpc":"2.0","id":%s,"result":{"roots":[]}}' % digits
    relay.send_raw(answer.encode() + b"\n")
    relay.close()
    assert answer in record.read_text().splitlines()
    assert "Invalid Request" not in relay.stderr and "not a JSON-RPC message" not in relay.stderr


def test_nan_and_infinity_never_reach_the_client(relay_factory):
    relay = relay_factory()
    relay.initialize()
    # From the client, NaN is not JSON: its own id gets -32700.
    relay.send_raw(b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"x":NaN}}}\n')
    error, _ = recv_id(relay, 9)
    assert error["error"]["code"] == -32700 and "NaN" in error["error"]["message"]
    # From the server, NaN and Infinity are repaired as JSON.stringify writes them: null.
    answer_raw(relay, '{"jsonrpc":"2.0","id":__ID__,"result":{"content":[],"structuredContent":'
                      '{"a":NaN,"b":-Infinity,"c":"NaN"}}}', 10)
    reply, _ = recv_id(relay, 10)
    assert reply["result"]["structuredContent"] == {"a": None, "b": None, "c": "NaN"}
    # 1e999 is a JSON number: relayed as written, never turned into Infinity.
    line = '{"jsonrpc":"2.0","id":__ID__,"result":{"content":[],"structuredContent":{"big":1e999}}}'
    answer_raw(relay, line, 13)
    assert recv_id(relay, 13)[1] == line.replace("__ID__", "13").encode() + b"\n"
    relay.close()
    assert "relaying it repaired" in relay.stderr


def test_rewrites_never_emit_infinity(relay_factory):
    relay = relay_factory()
    relay.initialize()
    # tools/list loses its outputSchema by a rewrite: 1e999 cannot be written back, so the line goes as it came.
    line = ('{"jsonrpc":"2.0","id":__ID__,"result":{"tools":[{"name":"t","inputSchema":{"type":"object",'
            '"properties":{"x":{"type":"number","maximum":1e999}}},"outputSchema":{"type":"object"}}]}}')
    answer_raw(relay, line, 14, method="tools/list", params={})
    assert recv_id(relay, 14)[1] == line.replace("__ID__", "14").encode() + b"\n"
    # An oversized result with 1e999 in it: spilled or forwarded, never with Infinity.
    line = ('{"jsonrpc":"2.0","id":__ID__,"result":{"content":[{"type":"text","text":"%s"}],'
            '"structuredContent":{"v":1e999}}}' % ("x" * 20000))
    answer_raw(relay, line, 15)
    reply, raw = recv_id(relay, 15)
    assert b"Infinity" not in raw and "result" in reply
    relay.close()


def test_batches_relay_valid_members_and_answer_each_bad_one(relay_factory, tmp_path):
    record = tmp_path / "received.ndjson"
    relay = relay_factory(server_args=["--record", str(record)])
    relay.initialize()
    relay.send_raw(b'[{"jsonrpc":"2.0","id":23,"method":"ping"}, 5]\n')
    got = [relay.recv(timeout=3) for _ in range(2)]
    assert {"jsonrpc": "2.0", "id": 23, "result": {}} in got
    assert [m["error"]["code"] for m in got if "error" in m] == [-32600]
    deep = "[" * 100000 + "]" * 100000
    relay.send_raw(('[{"jsonrpc":"2.0","id":24,"method":"ping"},{"jsonrpc":"2.0","id":25,"method":"x","params":%s},'
                    '{"jsonrpc":"2.0","id":{},"method":"ping"}]\n' % deep).encode())
    got = [relay.recv(timeout=3) for _ in range(3)]
    assert {"jsonrpc": "2.0", "id": 24, "result": {}} in got
    assert sorted((m["id"] is None, m["error"]["code"]) for m in got if "error" in m) == [(False, -32700), (True, -32600)]
    relay.send_raw(b'[{"jsonrpc":"2.0","id":26,"method":"ping"}, {"jsonrpc":"2.0","id":27,"method":"ping"}]\n[]\n')
    got = [relay.recv(timeout=3) for _ in range(3)]
    assert sorted(m["id"] for m in got if "result" in m) == [26, 27]
    assert [(m["id"], m["error"]["code"]) for m in got if "error" in m] == [(None, -32600)]
    relay.close()
    received = record.read_text().splitlines()
    # Good members keep their own bytes; a batch with nothing to drop goes on as it came.
    assert '[{"jsonrpc":"2.0","id":23,"method":"ping"}]' in received
    assert '[{"jsonrpc":"2.0","id":24,"method":"ping"}]' in received
    assert '[{"jsonrpc":"2.0","id":26,"method":"ping"}, {"jsonrpc":"2.0","id":27,"method":"ping"}]' in received


def test_control_character_in_a_server_string_is_repaired(relay_factory):
    relay = relay_factory()
    relay.initialize()
    answer_raw(relay, '{"jsonrpc":"2.0","id":__ID__,"result":{"content":[{"type":"text","text":"a\x00b\x1fc"}]}}', 16)
    reply, _ = recv_id(relay, 16)
    assert reply["result"]["content"][0]["text"] == "a\x00b\x1fc"
    relay.close()
    assert "Invalid control character" in relay.stderr


def test_unusable_server_answer_fails_its_request_instead_of_hanging(relay_factory):
    relay = relay_factory()
    relay.initialize()
    answer_raw(relay, '{"jsonrpc":"2.0","id":__ID__,"result":{"content":[{"type":"text","text":"cut sho', 17)
    error, _ = recv_id(relay, 17)
    assert error["error"]["code"] == -32603 and "is not JSON" in error["error"]["message"]
    assert relay.request("ping")[0]["result"] == {}
    relay.close()


INJECT_FAULTS = """
import sys
import ocx_proxy as op

forward, track = op.Relay._forward, op.Relay._track_client_message

def bad_forward(self, line, msg, pending):
    if b"boom" in line:
        raise KeyError("injected fault")
    return forward(self, line, msg, pending)

def bad_track(self, msg, line):
    if msg.get("method") == "boom":
        raise KeyError("injected fault")
    return track(self, msg, line)

op.Relay._forward, op.Relay._track_client_message = bad_forward, bad_track
sys.argv[0] = "ocx-proxy"
sys.exit(op.main())
"""


def test_any_fault_on_one_line_costs_only_that_line(tmp_path):

    relay = RelayProcess(command=[sys.executable, "-c", INJECT_FAULTS, "stdio", "--output-dir", str(tmp_path),
                                  "--", sys.executable, STDIO_SERVER])
    relay.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"boom"}\n{"jsonrpc":"2.0","id":2,"method":"ping"}\n')
    assert relay.recv(timeout=3)["error"]["code"] == -32603
    assert relay.recv(timeout=3) == {"jsonrpc": "2.0", "id": 2, "result": {}}
    answer_raw(relay, '{"jsonrpc":"2.0","id":__ID__,"result":{"boom":1}}\n{"jsonrpc":"2.0","id":"x","result":{}}', 3)
    error, _ = recv_id(relay, 3)
    assert error["error"]["code"] == -32603 and "injected fault" in error["error"]["message"]
    assert relay.close() == 0
    assert "Traceback" not in relay.stderr


SPY_ON_PARSING = """
import sys
import ocx_proxy as op

parse = op.parse_message

def spy(line, *args, **kw):
    if len(line) > 1000000:
        sys.stderr.write("ocx-test: parsed a line of %d bytes\\n" % len(line))
    return parse(line, *args, **kw)

op.parse_message = spy
sys.exit(op.main())
"""


def spying_relay(tmp_path, *relay_args):

    return RelayProcess(command=[sys.executable, "-c", SPY_ON_PARSING, "stdio", "--output-dir", str(tmp_path)]
                        + list(relay_args) + ["--", sys.executable, STDIO_SERVER])


def test_big_lines_are_parsed_only_when_they_may_be_rewritten(tmp_path):
    relay = spying_relay(tmp_path, "--max-response-chars", "5000000")
    relay.initialize()
    reply = relay.call("big", {"n": 2000000, "unit": "é"})  # 4 MB: relayed on its envelope
    assert reply["result"]["content"][0]["text"] == "é" * 2000000
    reply = relay.call("big", {"n": 6000000})  # over the limit: parsed, then spilled
    assert "_meta" in reply["result"]
    relay.close()
    assert relay.stderr.count("ocx-test: parsed a line") == 1


SHOW_REWRITES = """
import json
import sys
import ocx_proxy as op

init = op.Relay.__init__

def show(self, *args, **kw):
    init(self, *args, **kw)
    table = {method: [rewrite.what for rewrite in rewrites] for method, rewrites in self.rewrites.items()}
    sys.stderr.write("ocx-test: rewrites %s\\n" % json.dumps(table))

op.Relay.__init__ = show
sys.exit(op.main())
"""
# For each method of Relay.rewrites: the rewrites it has, and an answer each of them changes
# ("%s": where the padding goes).  A rewrite added to the table needs its answer here.
REWRITTEN_ANSWERS = {
    "tools/list": (["note tools/list for the catalog cache", "note each tool's inputSchema for the argument check",
                    "note the result size each tool declares",
                    "filter tools/list", "remove outputSchema from tools/list", "fit tools/list to the client",
                    "add the reader tool to tools/list"],
                   '{"jsonrpc":"2.0","id":__ID__,"result":{"tools":[{"name":"t","description":"%s",'
                   '"inputSchema":{"type":"object"},"outputSchema":{"type":"object"}},{"name":"denied"}]}}'),
}


def test_every_rewrite_changes_a_big_answer_as_it_changes_a_small_one(tmp_path):
    import ocx_proxy as op

    budget = str(100 * op.PEEK_LINE_BYTES)  # the size check must not be what parses the big line
    relay = RelayProcess(command=[sys.executable, "-c", SHOW_REWRITES, "stdio", "--output-dir", str(tmp_path),
                                  "--max-response-chars", budget, "--max-response-bytes", budget,
                                  "--deny-tools", "denied", "--", sys.executable, STDIO_SERVER])
    relay.initialize()
    table = json.loads(re.search(r"ocx-test: rewrites (.*)", relay.stderr).group(1))
    assert table == {method: whats for method, (whats, _) in REWRITTEN_ANSWERS.items()}
    msg_id = 100
    for method, (_, answer) in REWRITTEN_ANSWERS.items():
        got = []
        for pad in ("~", "~" * (op.PEEK_LINE_BYTES + 1)):
            msg_id += 1
            answer_raw(relay, answer % pad, msg_id, method=method, params={})
            raw = recv_id(relay, msg_id)[1]
            assert raw != (answer % pad).replace("__ID__", str(msg_id)).encode() + b"\n", method  # rewritten
            got.append(raw.replace(pad.encode(), b"PAD").replace(b'"id":%d' % msg_id, b'"id":0'))
        assert got[1] == got[0], method
    assert relay.close() == 0


@pytest.mark.slow
def test_100_mb_result_flows_through_unparsed_with_spill_off(tmp_path):
    relay = spying_relay(tmp_path, "--max-response-chars", "0")
    relay.initialize()
    relay.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "big", "arguments": {"n": 100 * 2 ** 20}}})
    raw = relay.recv_raw(timeout=60)
    assert len(raw) > 100 * 2 ** 20 and raw.endswith(b'"}]}}\n') and raw.startswith(b'{"jsonrpc":"2.0","id":3,')
    relay.close()
    assert "ocx-test: parsed a line" not in relay.stderr


# -- big answers are saved before they are parsed (peak memory: two copies, not three) -------------

def test_a_big_spilled_answer_keeps_its_place_and_its_bytes(relay_factory):
    """Over SPILL_LATER_BYTES the answer is parsed a loop turn later: the line after it must wait."""
    text = "word \\\"quoted\\\" " * 700000  # ~12 MB of JSON, escapes included
    big = '{"result":{"content":[{"type":"text","text":"%s"}]},"jsonrpc":"2.0","id":__ID__}' % text
    after = '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"after"}}'
    relay = relay_factory()
    relay.initialize()
    relay.send({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                "params": {"name": "echo", "arguments": {}, "_answer_raw": big + "\n" + after}})
    first, second = relay.recv(timeout=30), relay.recv(timeout=30)
    assert first["id"] == 5 and second["params"]["data"] == "after"
    meta = spill_meta(first)
    with open(meta["json"], "rb") as handle:
        assert handle.read() == big.replace("__ID__", "5").encode()
    with open(meta["txt"], encoding="utf-8") as handle:
        assert handle.read() == json.loads('"%s"' % text)
    assert len(json.dumps(first, ensure_ascii=False, separators=(",", ":"))) <= 10000


def test_a_big_answer_that_is_not_json_after_all_still_answers_its_request(relay_factory, tmp_path):
    """The envelope looked fine, the full parse fails later: the request gets -32603, nothing is left on disk."""
    broken = '{"jsonrpc":"2.0","id":__ID__,"result":{"content":[{"type":"text","text":"%s"}],}}' % ("x" * (9 << 20))
    relay = relay_factory()
    relay.initialize()
    reply, _ = relay.request("tools/call", {"name": "echo", "arguments": {}, "_answer_raw": broken}, timeout=30)
    assert reply["error"]["code"] == -32603
    assert relay.request("ping")[0]["result"] == {}
    spill_dir = tmp_path / "spill"
    assert not spill_dir.exists() or not os.listdir(str(spill_dir))


def test_a_fault_while_spilling_a_saved_answer_still_answers_its_request(tmp_path):
    """The second half of a deferred spill fails: the request gets -32603, the lines behind it go on."""
    inject = ("import sys\nimport ocx_proxy as op\n"
              "def fail(self, *args):\n    raise KeyError('injected fault')\n"
              "op.Relay._send_saved = fail\nsys.exit(op.main())\n")
    relay = RelayProcess(command=[sys.executable, "-c", inject, "stdio", "--output-dir", str(tmp_path),
                                  "--", sys.executable, STDIO_SERVER])
    relay.initialize()
    big = '{"jsonrpc":"2.0","id":__ID__,"result":{"content":[{"type":"text","text":"%s"}]}}' % ("x" * (9 << 20))
    after = '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"after"}}'
    relay.send({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                "params": {"name": "echo", "arguments": {}, "_answer_raw": big + "\n" + after}})
    first, second = relay.recv(timeout=30), relay.recv(timeout=30)
    assert first["id"] == 5 and first["error"]["code"] == -32603 and "injected fault" in first["error"]["message"]
    assert second["params"]["data"] == "after"
    assert relay.close() == 0


def test_answers_saved_before_parsing_keep_their_era(relay_factory):
    # Lines of 8 MB and more are saved first and parsed later (Relay._spill_later).
    relay = relay_factory()
    reply, _ = relay.request("tools/call", modern({"name": "big", "arguments": {"n": 9 * 2 ** 20}}), timeout=30)
    assert reply["result"]["resultType"] == "complete" and SERVER_INFO_KEY in reply["result"]["_meta"]
    reply, _ = relay.request("tools/call", modern({"name": "ask_input", "arguments": {"n": 9 * 2 ** 20}}), timeout=30)
    assert len(reply["result"]["inputRequests"]["confirm"]["params"]["message"]) == 9 * 2 ** 20
    relay.close()
    spill_dir = os.path.dirname(json.loads(relay.raw_lines[0])["result"]["_meta"]["ocx-proxy/spill"]["json"])
    assert len(os.listdir(spill_dir)) == 2  # the tool result's .json and .txt; nothing left of the interim one


# -- the reader tool ------------------------------------------------

def spill_id_of(text):
    return re.search(r'the read_spilled_output(?:_\d+)? tool of this server returns it in pages, id="([^"]+)"',
                     text).group(1)


def next_call(hint):
    """(line, column) of a ``[next: ...]`` hint, None at the end."""
    found = re.search(r"line=(\d+)(?:, column=(\d+))?", hint)
    return (int(found.group(1)), int(found.group(2) or 1)) if hint.startswith("[next:") else None


def test_the_reader_tool_is_listed_on_the_last_tools_list_page_only(relay_factory):
    relay = relay_factory([], ["--paged"])
    relay.initialize()
    first = relay.request("tools/list")[0]["result"]
    assert first["nextCursor"] == "page2" and "read_spilled_output" not in [t["name"] for t in first["tools"]]
    last = relay.request("tools/list", {"cursor": "page2"})[0]["result"]
    reader = last["tools"][-1]
    assert reader["name"] == "read_spilled_output" and "outputSchema" not in reader
    schema = reader["inputSchema"]
    assert schema["required"] == ["id"] and schema["properties"]["id"]["type"] == "string"
    assert schema["properties"]["line"]["type"] == "integer" and schema["properties"]["line"]["minimum"] == 1
    assert schema["properties"]["context"]["minimum"] == 0 and schema["properties"]["pattern"]["type"] == "string"
    assert "ocx-proxy" in reader["description"]
    assert relay.close() == 0


def test_a_server_tool_of_that_name_wins_and_the_reader_takes_a_suffixed_name(relay_factory, tmp_path):
    record = tmp_path / "received.ndjson"
    relay = relay_factory([], ["--paged", "--extra-tool", "read_spilled_output", "--record", str(record)])
    relay.initialize()
    relay.request("tools/list")  # the server's tool is on the first page, ours goes on the last
    names = [t["name"] for t in relay.request("tools/list", {"cursor": "page2"})[0]["result"]["tools"]]
    assert names.count("read_spilled_output") == 0 and names[-1] == "read_spilled_output_2"
    text = relay.call("lines", {"n": 3000})["result"]["content"][0]["text"]
    assert "the read_spilled_output_2 tool of this server" in text
    page = relay.call("read_spilled_output_2", {"id": spill_id_of(text), "lines": 1})["result"]
    assert page["content"][0]["text"] == "line 0 \n"
    theirs = relay.call("read_spilled_output", {"id": spill_id_of(text)})
    assert theirs["error"]["message"] == "Unknown tool: read_spilled_output"  # it went to the server
    relay.close()
    called = [json.loads(line)["params"]["name"] for line in record.read_text().splitlines()
              if '"tools/call"' in line]
    assert called == ["lines", "read_spilled_output"]


def test_reader_calls_are_answered_by_the_relay_page_by_page(relay_factory, tmp_path):
    record = tmp_path / "received.ndjson"
    relay = relay_factory(["--max-response-chars", "3000"], ["--record", str(record)])
    relay.initialize()
    relay.request("tools/list")  # the reader tool is ours once advertised
    text = relay.call("lines", {"n": 2000, "pad": "数据 é\t\"q\" " * 3})["result"]["content"][0]["text"]
    meta_txt = re.search(r"saved to (\S+\.txt) \(2000 lines\)", text).group(1)
    spill_id = spill_id_of(text)
    relay.send({"jsonrpc": "2.0", "id": "slow", "method": "tools/call",  # in flight meanwhile
                "params": {"name": "sleep", "arguments": {"seconds": 1}}})
    pages, where, calls = [], (1, 1), 0
    while where is not None:
        relay.send({"jsonrpc": "2.0", "id": "r%d" % calls, "method": "tools/call", "params": {
            "name": "read_spilled_output", "arguments": {"id": spill_id, "line": where[0], "column": where[1]}}})
        raw = relay.recv_raw()
        answer = json.loads(raw)
        assert answer["id"] == "r%d" % calls and len(raw.decode().rstrip("\n")) <= 3000
        assert "resultType" not in answer["result"] and "isError" not in answer["result"]
        page, hint = [block["text"] for block in answer["result"]["content"]]
        pages.append(page)
        where, calls = next_call(hint), calls + 1
    with open(meta_txt, encoding="utf-8", newline="") as handle:
        assert "".join(pages) == handle.read()  # pages put end to end are the whole text
    assert calls > 20
    assert relay.wait_for("slow")[0]["result"]["content"][0]["text"] == "slept"
    found = relay.call("read_spilled_output", {"id": spill_id, "pattern": r"^line 17\d\d ", "context": 1})
    assert found["result"]["content"][0]["text"].startswith("1700-line 1699 ")
    assert "\n1701:line 1700 " in found["result"]["content"][0]["text"]
    relay.close()
    assert "read_spilled_output" not in record.read_text()  # never forwarded


def test_a_reader_call_in_a_batch_is_answered_and_the_rest_forwarded(relay_factory, tmp_path):
    record = tmp_path / "received.ndjson"
    relay = relay_factory([], ["--record", str(record)])
    relay.initialize("2025-03-26")
    relay.request("tools/list")  # the reader tool is ours once advertised
    text = relay.call("lines", {"n": 3000})["result"]["content"][0]["text"]
    relay.send([{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
                    "name": "read_spilled_output", "arguments": {"id": spill_id_of(text), "lines": 2}}},
                {"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {
                    "name": "echo", "arguments": {"text": "hi"}}}])
    assert relay.wait_for(7)[0]["result"]["content"][0]["text"] == "line 0 \nline 1 \n"
    assert relay.wait_for(8)[0]["result"]["content"][0]["text"] == "hi"
    relay.close()
    assert "read_spilled_output" not in record.read_text() and '"echo"' in record.read_text()


def test_reader_errors_are_tool_errors_and_modern_answers_say_result_type(relay_factory):
    relay = relay_factory()
    relay.initialize()
    relay.request("tools/list")  # the reader tool is ours once advertised
    text = relay.call("lines", {"n": 3000})["result"]["content"][0]["text"]
    spill_id = spill_id_of(text)
    for arguments, message in (({"id": "../../etc/passwd"}, "invalid spill id"),
                               ({"id": "20990101T000000Z_x"}, "unknown spill id"),
                               ({"id": spill_id, "line": 0}, "line must be an integer from 1 to"),
                               ({"id": spill_id, "line": 9999}, "past the end"),
                               ({"id": spill_id, "pattern": "("}, "bad pattern"),
                               ({"id": spill_id, "lines": "2"}, "lines must be an integer"),
                               ({"file": "/etc/passwd"}, "unknown argument file"),
                               ({"id": spill_id, "path": "/etc/passwd"}, "a path starts with $"),
                               ({"id": spill_id, "path": "$"}, "not a JSON object or array")):
        result = relay.call("read_spilled_output", arguments)["result"]
        assert result["isError"] is True and message in result["content"][0]["text"], arguments
    modern = relay.request("tools/call", {"name": "read_spilled_output", "arguments": {"id": spill_id, "lines": 1},
                                          "_meta": MODERN_META})[0]["result"]
    assert modern["resultType"] == "complete" and modern["content"][0]["text"] == "line 0 \n"
    assert relay.close() == 0


def spilled_for_reader(relay, arguments):
    """List the tools (the reader is ours from then on), then spill a call; (spill id, .txt path)."""
    relay.request("tools/list")
    text = relay.call("big", arguments)["result"]["content"][0]["text"]
    return spill_id_of(text), re.search(r"saved to (\S+\.txt) ", text).group(1)


def search_children(relay):
    """Pids of the relay's children that run the pattern search program (Linux /proc)."""
    found = []
    for name in os.listdir("/proc"):
        try:
            with open("/proc/%s/stat" % name) as handle:
                parent = int(handle.read().rsplit(")", 1)[1].split()[1])
            with open("/proc/%s/cmdline" % name, "rb") as handle:
                command = handle.read()
        except (OSError, ValueError, IndexError):
            continue
        if parent == relay.proc.pid and b"ocx-proxy pattern search" in command:
            found.append(int(name))
    return found


class DescriptionModel:
    """A model that knows of the reader only its tools/list entry: the forms its description quotes in
    backticks tell where a note gives the id (`id="..."`) and where an answer says the rest starts
    (`... line=L`, `... line=L, column=C`: L and C numbers)."""

    def __init__(self, tool):
        self.name = tool["name"]
        quoted = re.findall(r"`([^`]*)`", tool["description"])
        self.id_form = re.compile(re.escape(next(q for q in quoted if q.startswith("id="))).replace(
            re.escape("..."), "([^\"]+)"))
        self.more_forms = [re.compile(re.escape(q).replace("=L", r"=(\d+)").replace("=C", r"=(\d+)") + r"\W*\Z")
                           for q in sorted(quoted, key=len, reverse=True) if q.endswith(("=L", "=C"))]

    def next_arguments(self, arguments, answer):
        """The arguments of the call that gives the rest of ``answer`` (a result), None when nothing follows."""
        last = "\n".join(block["text"] for block in answer["content"]).rstrip().rsplit("\n", 1)[-1]
        for form in self.more_forms:
            found = form.search(last)
            if found:
                numbers = [int(n) for n in found.groups()] + [1]
                return dict(arguments, line=numbers[0], column=numbers[1])
        return None

    def read_all(self, relay, arguments, budget):
        """Every answer from ``arguments`` on, each raw line checked against ``budget`` (a client profile)."""
        answers = []
        while arguments is not None and len(answers) < 500:
            relay.send({"jsonrpc": "2.0", "id": len(answers), "method": "tools/call",
                        "params": {"name": self.name, "arguments": arguments}})
            raw = relay.recv_raw().decode("utf-8").rstrip("\n")
            assert len(raw) <= budget.budget_chars and len(raw.encode()) <= (budget.budget_bytes or len(raw) * 4)
            answers.append(json.loads(raw)["result"])
            assert "isError" not in answers[-1], answers[-1]
            arguments = self.next_arguments(arguments, answers[-1])
        return answers


@pytest.mark.parametrize("client_name", sorted(
    name for entry in op.CLIENTS.values() if entry.profile for name in entry.profile.client_names))
def test_a_model_that_follows_only_the_reader_description_pages_to_the_end(relay_factory, client_name):
    """The paging contract is in the description (trusted by clients), the facts in the answers."""
    relay = relay_factory()
    relay.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": client_name, "version": "1"}}, msg_id=1)
    relay.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    profile = op.client_profile(op.client_for_info_name(client_name))
    model = DescriptionModel(relay.request("tools/list")[0]["result"]["tools"][-1])
    spill_ids = []
    for arguments in ({"unit": "数", "n": 200000}, {"n": 4000, "pad": "数据 é\t\"q\" " * 4}):
        note = relay.call("big" if "unit" in arguments else "lines", arguments)["result"]["content"][0]["text"]
        txt = re.search(r"saved to (\S+\.txt) ", note).group(1)
        spill_ids.append(model.id_form.search(note).group(1))
        pages = model.read_all(relay, {"id": spill_ids[-1]}, profile)
        with open(txt, encoding="utf-8", newline="") as handle:
            assert "".join(page["content"][0]["text"] for page in pages) == handle.read()
        assert len(pages) > 2 and pages[-1]["content"][-1]["text"] == "[end of the text]"
    found = model.read_all(relay, {"id": spill_ids[-1], "pattern": "^line \\d+ "}, profile)
    numbers = [int(n) for page in found for n in re.findall(r"^(\d+):", page["content"][0]["text"], re.M)]
    assert numbers == list(range(1, 4001)) and found[-1]["content"][-1]["text"] == "[no more matches]"
    assert relay.close() == 0


def test_a_catastrophic_pattern_is_stopped_and_the_relay_answers_meanwhile(relay_factory):
    relay = relay_factory()
    relay.initialize()
    spill_id, _ = spilled_for_reader(relay, {"unit": "a", "n": 100000})  # one line of 100,000 "a"
    started = time.monotonic()
    relay.send({"jsonrpc": "2.0", "id": "evil", "method": "tools/call", "params": {
        "name": "read_spilled_output", "arguments": {"id": spill_id, "pattern": "(a+)+b"}}})
    for _ in range(3):  # the search runs meanwhile: others are answered at once
        assert relay.request("ping", timeout=3)[0]["result"] == {}
        page = relay.call("read_spilled_output", {"id": spill_id, "lines": 1}, timeout=3)["result"]
        assert page["content"][0]["text"] == "a" * len(page["content"][0]["text"]) and "isError" not in page
        assert relay.call("echo", {"text": "hi"}, timeout=3)["result"]["content"][0]["text"] == "hi"
    if sys.platform.startswith("linux"):   # /proc: under Wine it is the host's, not Windows'
        assert len(search_children(relay)) == 1
    assert not [m for m in relay.backlog if m.get("id") == "evil"]
    answer = relay.wait_for("evil", timeout=30)[0]["result"]
    assert time.monotonic() - started < 15
    assert answer["isError"] is True
    assert "took longer than 5 s" in answer["content"][0]["text"] and "simplify" in answer["content"][0]["text"]
    if sys.platform.startswith("linux"):   # /proc: under Wine it is the host's, not Windows'
        assert search_children(relay) == []  # killed and reaped
    found = relay.call("read_spilled_output", {"id": spill_id, "pattern": "a{3}$"}, timeout=10)["result"]
    assert found["content"][0]["text"] == "1:…%s…(line of 100000 chars; read it with column=99898)\n" % ("a" * 103)
    assert relay.close() == 0
    assert "internal error" not in relay.stderr


def test_pattern_searches_beyond_two_at_once_wait_their_turn(relay_factory):
    relay = relay_factory()
    relay.initialize()
    spill_id, _ = spilled_for_reader(relay, {"unit": "ab\n", "n": 20000})
    for n in range(6):
        relay.send({"jsonrpc": "2.0", "id": "s%d" % n, "method": "tools/call", "params": {
            "name": "read_spilled_output", "arguments": {"id": spill_id, "pattern": "^ab$", "line": n + 1}}})
    for n in range(6):
        text = relay.wait_for("s%d" % n, timeout=30)[0]["result"]["content"][0]["text"]
        assert text.startswith("%d:ab\n%d:ab\n" % (n + 1, n + 2))
    assert relay.close() == 0


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs (POSIX)")
def test_a_fifo_in_place_of_the_text_is_refused_without_waiting(relay_factory, io_mode):
    relay = relay_factory(["--io", io_mode])
    relay.initialize()
    spill_id, txt = spilled_for_reader(relay, {"n": 30000})
    os.unlink(txt)
    os.mkfifo(txt, 0o600)
    for arguments in ({"id": spill_id}, {"id": spill_id, "pattern": "x"}):
        result = relay.call("read_spilled_output", arguments, timeout=5)["result"]
        assert result["isError"] is True and "not a regular file" in result["content"][0]["text"], result
    assert relay.request("ping", timeout=5)[0]["result"] == {}
    assert relay.close() == 0


BAD_READER_ARGUMENTS = [
    ({"context": 10 ** 20, "pattern": "x"}, "context must be an integer from 0 to 100"),
    ({"context": 2 ** 63, "pattern": "x"}, "context must be an integer from 0 to 100"),
    ({"context": 101, "pattern": "x"}, "context must be an integer from 0 to 100"),
    ({"context": 1.5, "pattern": "x"}, "context must be an integer"),
    ({"context": "1", "pattern": "x"}, "context must be an integer"),
    ({"line": 10 ** 20}, "line must be an integer from 1 to"),
    ({"line": 2 ** 63, "pattern": "x"}, "line must be an integer from 1 to"),
    ({"column": 2 ** 63}, "column must be an integer from 1 to"),
    ({"lines": 10 ** 20}, "lines must be an integer from 1 to"),
    ({"lines": True}, "lines must be an integer"),
    ({"line": -1}, "line must be an integer from 1"),
    ({"pattern": 5}, "pattern must be a string"),
    ({"pattern": ["x"]}, "pattern must be a string"),
    ({"pattern": "x" * 1001}, "pattern must be at most 1000 characters"),
    ({"pattern": "(" * 200 + ")" * 200}, None),  # deep nesting compiles, or is refused cleanly
    ({"pattern": "a{99999999999}"}, "bad pattern"),
]


def test_every_bad_reader_argument_is_a_clean_tool_error(relay_factory):
    relay = relay_factory()
    relay.initialize()
    spill_id, _ = spilled_for_reader(relay, {"n": 30000})
    for arguments, message in BAD_READER_ARGUMENTS + [({"id": 5}, "invalid spill id"),
                                                       ({"id": None}, "invalid spill id"),
                                                       ({"id": ["x"]}, "invalid spill id")]:
        reply = relay.call("read_spilled_output", dict({"id": spill_id}, **arguments), timeout=10)
        assert "error" not in reply, (arguments, reply)
        text = reply["result"]["content"][0]["text"]
        if message is not None:
            assert reply["result"].get("isError") is True and message in text, (arguments, text)
    for raw_value in (b"1e400", b"-0.0", b"1E2"):  # not integers, however JSON spells them
        relay.send_raw(b'{"jsonrpc":"2.0","id":"raw","method":"tools/call","params":{"name":"read_spilled_output",'
                       b'"arguments":{"id":"' + spill_id.encode() + b'","line":' + raw_value + b'}}}\n')
        result = relay.wait_for("raw")[0]["result"]
        assert result["isError"] is True and "line must be an integer" in result["content"][0]["text"]
    defaults = {"line": None, "lines": None, "column": None, "context": None, "pattern": None}  # null: not given
    page = relay.call("read_spilled_output", dict(defaults, id=spill_id))["result"]
    assert page["content"][0]["text"].startswith("x" * 100) and "isError" not in page
    assert relay.close() == 0
    assert "internal error" not in relay.stderr


@pytest.mark.parametrize("server_has_one", [True, False])
def test_the_reader_is_ours_only_once_tools_list_advertised_it(relay_factory, tmp_path, server_has_one):
    record = tmp_path / "received.ndjson"
    relay = relay_factory([], (["--extra-tool", "read_spilled_output"] if server_has_one else [])
                          + ["--record", str(record)])
    relay.initialize()
    text = relay.call("lines", {"n": 3000})["result"]["content"][0]["text"]
    assert "read_spilled_output" not in text  # nothing advertised yet: the preview names no tool
    spill_id = re.search(r"saved to \S+[/\\](\S+)\.txt ", text).group(1)   # \ between Windows' folders
    theirs = relay.call("read_spilled_output", {"id": spill_id})  # a client with a cached catalog
    assert theirs["error"]["message"] == "Unknown tool: read_spilled_output"  # the server answered
    names = [t["name"] for t in relay.request("tools/list")[0]["result"]["tools"]]
    ours = "read_spilled_output_2" if server_has_one else "read_spilled_output"
    assert names[-1] == ours
    page = relay.call(ours, {"id": spill_id, "lines": 1})["result"]
    assert page["content"][0]["text"] == "line 0 \n"
    assert relay.close() == 0
    called = [json.loads(line)["params"]["name"] for line in record.read_text().splitlines()
              if '"tools/call"' in line]
    assert called == ["lines", "read_spilled_output"]


@pytest.mark.parametrize("how", ["flag", "env"])
def test_no_reader_tool_leaves_tools_list_and_calls_alone(relay_factory, how):
    env = dict(os.environ, OCX_PROXY_NO_READER_TOOL="1") if how == "env" else None
    relay = relay_factory(["--no-reader-tool"] if how == "flag" else [], env=env)
    relay.initialize()
    assert [t["name"] for t in relay.request("tools/list")[0]["result"]["tools"]] == ["echo", "structured"]
    text = relay.call("lines", {"n": 3000})["result"]["content"][0]["text"]
    assert "read_spilled_output" not in text and ".txt" in text
    reply = relay.call("read_spilled_output", {"id": "x"})
    assert reply["error"]["message"] == "Unknown tool: read_spilled_output"
    assert relay.close() == 0


# -- client profiles (--client) ------------------------------------------------

CJK_3500 = {"unit": "\u4e2d", "n": 3500}  # 3,500 characters, 10,500 UTF-8 bytes


def start_as(relay_factory, client_name, relay_args=(), **kw):
    """A relay whose client calls itself ``client_name`` in initialize."""
    relay = relay_factory(list(relay_args), **kw)
    relay.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": client_name, "version": "1"}}, msg_id=1)
    relay.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return relay


def is_spilled(reply):
    return "ocx-proxy/spill" in reply["result"].get("_meta", {})


def test_codex_by_its_initialize_gets_a_byte_budget_that_spills_cjk_text(relay_factory):
    relay = start_as(relay_factory, "codex-mcp-client")
    reply = relay.call("big", CJK_3500)  # under 10,000 characters, over Codex's ~12,000-byte cut
    assert is_spilled(reply)
    assert relay.call("big", {"n": 9000})["result"]["content"][0]["text"] == "x" * 9000  # ASCII: as before
    relay.close()
    assert "client profile codex (clientInfo.name 'codex-mcp-client'): responses spilled over 10000 characters " \
           "or 10000 bytes" in relay.stderr
    relay = start_as(relay_factory, "some-other-client")  # unknown: generic, characters only
    assert relay.call("big", CJK_3500)["result"]["content"][0]["text"] == "\u4e2d" * 3500
    relay.close()
    assert relay.stderr.count("client profile generic (clientInfo.name 'some-other-client')") == 1


def test_codebuddy_is_known_by_the_environment_it_gives_its_servers(relay_factory):
    env = dict(os.environ, CODEBUDDY_SERVICE_PROXY_URL="http://127.0.0.1:1/internal/hooks/services/invoke")
    relay = start_as(relay_factory, "fx", env=env)   # CodeBuddy's clientInfo.name: the server's key in its config
    assert relay.call("big", {"n": 60000})["result"]["content"][0]["text"] == "x" * 60000   # generic: spilled
    assert is_spilled(relay.call("big", {"n": 70000}))
    relay.close()
    assert "client profile codebuddy (clientInfo.name 'fx', the environment CodeBuddy gives its servers)" \
        in relay.stderr


def test_a_modern_client_is_known_by_the_client_info_in_meta(relay_factory):
    relay = relay_factory()
    params = modern({"name": "big", "arguments": CJK_3500})
    params["_meta"]["io.modelcontextprotocol/clientInfo"] = {"name": "codex-mcp-client", "version": "0.171.0"}
    reply, _ = relay.request("tools/call", params)
    assert is_spilled(reply) and reply["result"]["resultType"] == "complete"
    relay.close()
    assert "client profile codex (clientInfo.name 'codex-mcp-client')" in relay.stderr


def test_claude_code_passes_what_it_shows_inline_and_explicit_flags_win(relay_factory):
    relay = start_as(relay_factory, "claude-code")
    assert relay.call("big", {"n": 30000})["result"]["content"][0]["text"] == "x" * 30000
    assert is_spilled(relay.call("big", {"n": 45000}))
    relay.close()
    relay = start_as(relay_factory, "claude-code", ["--max-response-chars", "20000", "--preview-chars", "1000"])
    reply = relay.call("big", {"n": 30000})
    assert is_spilled(reply) and spill_meta(reply)["preview_chars"] <= 1000
    relay.close()
    relay = start_as(relay_factory, "codex-mcp-client", ["--max-response-bytes", "0"])
    assert not is_spilled(relay.call("big", CJK_3500))
    relay.close()
    assert "responses spilled over 10000 characters, previews of 3000 characters" in relay.stderr


@pytest.mark.parametrize("client_name,whole", [
    ("claude-code", True), ("gemini-cli-mcp-client", True), ("codex-mcp-client", True),
    ("cursor-vscode", False), ("some-other-client", False)])
def test_images_pass_whole_to_clients_that_show_them(relay_factory, client_name, whole):
    relay = start_as(relay_factory, client_name)
    reply = relay.call("image", {"kb": 40})  # 54,616 characters of base64 and a caption
    assert not is_spilled(reply) if whole else is_spilled(reply)
    if whole:
        assert len(reply["result"]["content"][0]["data"]) == 54616
    assert is_spilled(relay.call("big", {"n": 60000}))  # text still counts
    relay.close()


@pytest.mark.parametrize("client_name,n_whole,n_spilled", [
    ("gemini-cli-mcp-client", 1500, 2500),   # 39,909 characters, 16,901 of them structuredContent (budget 32,000)
    ("codex-mcp-client", 500, 1000),         # 12,909 characters, 6,930 of them content (budget 10,000)
    ("claude-code", 2500, 3500)])            # 67,909 characters, 36,430 of them content (budget 40,000)
def test_the_result_member_a_client_never_shows_does_not_count(relay_factory, client_name, n_whole, n_spilled):
    relay = start_as(relay_factory, client_name)
    reply = relay.call("structured", {"n": n_whole})
    assert not is_spilled(reply)
    assert len(reply["result"]["structuredContent"]["items"]) == n_whole
    assert json.loads(reply["result"]["content"][0]["text"]) == reply["result"]["structuredContent"]
    assert is_spilled(relay.call("structured", {"n": n_spilled}))   # what it shows still counts
    relay.close()
    import ocx_proxy as op
    budget = op.client_profile(op.client_for_info_name(client_name)).budget_chars
    relay = start_as(relay_factory, "some-other-client", ["--max-response-chars", str(budget)])
    assert is_spilled(relay.call("structured", {"n": n_whole}))   # a client that shows both counts both
    relay.close()


def test_skipped_member_is_the_compact_json_of_a_member_beside_the_other():
    import ocx_proxy as op
    both = {"content": [{"type": "text", "text": "{\"a\": 1}"}], "structuredContent": {"a": 1}}
    assert op.skipped_member({"result": both}, "structuredContent") == '{"a":1}'
    assert op.skipped_member({"result": both}, "content") == '[{"type":"text","text":"{\\"a\\": 1}"}]'
    assert op.skipped_member({"result": both}, None) is None
    assert op.skipped_member({"result": {"content": []}}, "content") is None   # nothing else to show
    assert op.skipped_member({"result": dict(both, structuredContent=None)}, "content") is None
    task = {"result": {"task": {"status": "completed"}, "result": both}}   # 2026-07-28 tasks/get
    assert op.skipped_member(task, "structuredContent") == '{"a":1}'
    assert op.skipped_member({"result": dict(both, structuredContent={"x": float("nan")})}, "structuredContent") is None


def test_images_over_max_image_bytes_count_again(relay_factory):
    relay = start_as(relay_factory, "claude-code", ["--max-image-bytes", "50000"])
    assert is_spilled(relay.call("image", {"kb": 40}))
    assert not is_spilled(relay.call("image", {"kb": 30}))  # 40,960 characters of base64
    relay.close()
    relay = start_as(relay_factory, "cursor-vscode", ["--max-image-bytes", "100000"])  # the flag wins here too
    assert not is_spilled(relay.call("image", {"kb": 40}))
    relay.close()


def test_codex_keeps_output_schema_others_lose_it(relay_factory):
    for client_name, kept in (("codex-mcp-client", True), ("claude-code", False)):
        relay = start_as(relay_factory, client_name)
        tools, _ = relay.request("tools/list")
        assert any("outputSchema" in tool for tool in tools["result"]["tools"]) == kept
        relay.close()


def test_env_twins_of_the_profile_options(relay_factory):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OCX_PROXY_", "CURSOR_MCP_RESPONSE_PROXY_"))}
    relay = start_as(relay_factory, "test", env=dict(env, OCX_PROXY_CLIENT="codex"))
    assert is_spilled(relay.call("big", CJK_3500))
    relay.close()
    assert "client profile codex (--client)" in relay.stderr
    relay = start_as(relay_factory, "test", env=dict(env, OCX_PROXY_MAX_RESPONSE_BYTES="6000"))
    assert is_spilled(relay.call("big", {"unit": "\u4e2d", "n": 2500}))
    relay.close()
    relay = start_as(relay_factory, "claude-code", env=dict(env, OCX_PROXY_MAX_IMAGE_BYTES="1000"))
    assert is_spilled(relay.call("image", {"kb": 40}))
    relay.close()


# -- long calls: heartbeats and detached results ---------------------------

def progress_sent(relay, token):
    """The params of every notifications/progress for ``token`` the client got so far, in order, and the
    index in ``relay.raw_lines`` of each."""
    found = []
    for n, raw in enumerate(list(relay.raw_lines)):
        msg = json.loads(raw)
        if msg.get("method") == "notifications/progress" and msg["params"]["progressToken"] == token:
            found.append((n, msg["params"]))
    return found


def answer_index(relay, msg_id):
    return next(n for n, raw in enumerate(list(relay.raw_lines))
                if json.loads(raw).get("id") == msg_id and "method" not in json.loads(raw))


def with_token(name, arguments, token):
    return {"name": name, "arguments": arguments, "_meta": {"progressToken": token}}


def test_heartbeats_while_the_server_is_silent_go_up_and_stop_at_the_answer(relay_factory, io_mode):
    relay = relay_factory(["--heartbeat", "0.2", "--detach-after", "0", "--io", io_mode])
    relay.initialize()
    reply, before = relay.request("tools/call", with_token("sleep", {"seconds": 1.3}, "tok"), msg_id="h1")
    assert reply["result"]["content"][0]["text"] == "slept"
    beats = [params for _, params in progress_sent(relay, "tok")]
    assert 3 <= len(beats) <= 7 and len(before) == len(beats), before
    values = [params["progress"] for params in beats]
    assert values[0] == 0 and all(a < b for a, b in zip(values, values[1:])), values
    assert all(re.match(r"ocx-proxy: the server is still working \(\d+ s\)\Z", params["message"]) for params in beats)
    time.sleep(0.7)  # heartbeats would have come by now
    assert relay.request("ping")[1] == []
    assert all(n < answer_index(relay, "h1") for n, _ in progress_sent(relay, "tok"))
    reply, before = relay.request("tools/call", {"name": "sleep", "arguments": {"seconds": 0.7}}, msg_id="h2")
    assert reply["result"]["content"][0]["text"] == "slept" and before == []  # no progressToken: no heartbeat
    assert relay.close() == 0


def test_the_servers_own_progress_passes_and_is_raised_above_a_heartbeat(relay_factory):
    relay = relay_factory(["--heartbeat", "0.2"])
    relay.initialize()
    steps = [[0.1, 5, "five"], [0.85, 1, "one"], [0.9, 50, "fifty"]]
    reply, _ = relay.request("tools/call", with_token("slow", {"seconds": 1.1, "progress": steps}, "tok"),
                             msg_id="p1")
    assert reply["result"]["content"][0]["text"] == "slept"
    sent = progress_sent(relay, "tok")
    values = [params["progress"] for _, params in sent]
    assert all(a < b for a, b in zip(values, values[1:])), values
    by_message = {params.get("message"): (n, params) for n, params in sent}
    five_at, five = by_message["five"]
    assert relay.raw_lines[five_at] == (b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":'
                                        b'"tok","progress":5,"total":100,"message":"five"}}\n')  # as the server wrote it
    one_at, one = by_message["one"]
    beats = [params for n, params in sent if five_at < n < one_at]
    assert len(beats) >= 2 and all("still working" in params["message"] for params in beats)
    assert one == {"progressToken": "tok", "progress": one["progress"], "total": 100, "message": "one"}
    assert one["progress"] > beats[-1]["progress"] > 5   # raised just above the last the client saw
    assert one["progress"] < 6 and by_message["fifty"][1]["progress"] == 50
    assert all(n < answer_index(relay, "p1") for n, _ in sent)
    assert relay.close() == 0


def detached_id(reply):
    result = reply["result"]
    assert "isError" not in result and [block["type"] for block in result["content"]] == ["text"], result
    note = result["content"][0]["text"]
    assert "still running on the server" in note and "read_spilled_output" in note, note
    return re.search(r'id="([^"]+)"', note).group(1)


def read_detached(relay, call_id, **arguments):
    """Every page of detached call ``call_id`` through the reader: (the notes, the text of the pages).  A ``wait``
    is capped at --detach-after: on a loaded machine the call may still run when it ends, and is read again."""
    notes, pages, where = [], [], (1, 1)
    deadline = time.monotonic() + 15
    while where is not None:
        result = relay.call("read_spilled_output", dict(arguments, id=call_id, line=where[0], column=where[1]),
                            timeout=15)["result"]
        if len(result["content"]) == 1 and "is still running on the server" in result["content"][0]["text"]:
            assert time.monotonic() < deadline, result
            continue
        note, page, hint = [block["text"] for block in result["content"]]
        notes.append((note, result.get("isError", False)))
        pages.append(page)
        where = next_call(hint)
    return notes, "".join(pages)


def test_a_call_past_detach_after_is_answered_in_time_and_read_whole_once_it_ends(relay_factory, tmp_path):
    relay = relay_factory(["--detach-after", "1", "--max-response-chars", "3000", "--trace", str(tmp_path / "trace")])
    relay.initialize()
    relay.request("tools/list")  # the reader tool is ours: a detached result can be read
    started = time.monotonic()
    pad = "数据 é\t\"q\" "
    reply = relay.call("slow", {"seconds": 1.6, "then": "lines", "with": {"n": 2000, "pad": pad}}, msg_id="d1")
    assert 0.9 < time.monotonic() - started < 1.5
    call_id = detached_id(reply)
    assert op.SPILL_NAME_RE.match(call_id)
    asked = time.monotonic()
    first = relay.call("read_spilled_output", {"id": call_id, "wait": 100, "lines": 2})["result"]
    assert time.monotonic() - asked < 0.95   # answered when the server's answer came, before the wait's cap (1 s)
    assert [block["text"] for block in first["content"]][1] == "line 0 %s\nline 1 %s\n" % (pad, pad)
    notes, text = read_detached(relay, call_id)
    expected = "\n".join("line %d %s" % (i, pad) for i in range(2000))
    assert text == expected and len(notes) > 10   # paged like any spill, byte for byte
    assert all(re.match(r"\[ocx-proxy: the call finished on the server after \d+ s; its result:\]\Z", note)
               and not failed for note, failed in notes)
    saved = tmp_path / "spill" / (call_id + ".json")
    line = json.dumps({"jsonrpc": "2.0", "id": "d1", "result": {"content": [{"type": "text", "text": expected}]}},
                      separators=(",", ":"), ensure_ascii=False)
    assert saved.read_bytes() == line.encode("utf-8")   # the server's answer, exact
    for path in (saved, tmp_path / "spill" / (call_id + ".txt")):   # Windows has no mode bits (ACLs instead)
        assert not op.FILE_OWNERS or stat.S_IMODE(os.stat(str(path)).st_mode) == 0o600
    assert sum(1 for raw in relay.raw_lines if b'"id":"d1"' in raw) == 1   # the client got one answer
    assert relay.close() == 0
    traced = [(r["dir"], r.get("method")) for r in map(json.loads, (tmp_path / "trace").read_text().splitlines())
              if r.get("id") == "d1"]
    assert traced == [("client->upstream", "tools/call"), ("proxy->client", "tools/call"), ("upstream->detached", None)]


def test_a_detached_call_that_fails_on_the_server_is_said_plainly(relay_factory):
    relay = relay_factory(["--detach-after", "0.3"])
    relay.initialize()
    relay.request("tools/list")
    failing = {"error": ("error_big", {"n": 50}), "tool error": ("big", {"n": 50, "isError": True})}
    ids = {kind: detached_id(relay.call("slow", {"seconds": 0.6, "then": then, "with": arguments}))
           for kind, (then, arguments) in failing.items()}
    notes, text = read_detached(relay, ids["error"], wait=5)
    assert len(notes) == 1 and notes[0][1] is True and text.startswith("E" * 50)
    assert re.match(r"\[ocx-proxy: the call failed on the server after \d+ s, with the JSON-RPC error -32603: E{50}:\]\Z",
                    notes[0][0]), notes
    notes, text = read_detached(relay, ids["tool error"], wait=5)
    assert notes[0][1] is True and "a tool error (isError)" in notes[0][0] and text == "x" * 50
    assert relay.close() == 0


def test_the_reader_says_still_running_and_an_unknown_id_is_a_clear_error(relay_factory):
    relay = relay_factory(["--detach-after", "0.3"])
    relay.initialize()
    relay.request("tools/list")
    reply = relay.request("tools/call", modern({"name": "never"}), msg_id="n1")[0]
    assert reply["result"]["resultType"] == "complete"   # its era's result
    call_id = detached_id(reply)
    asked = time.monotonic()
    result = relay.call("read_spilled_output", {"id": call_id, "wait": 0.2})["result"]
    assert 0.15 < time.monotonic() - asked < 1.0 and "isError" not in result
    assert re.match(r'\[ocx-proxy: the call id="%s" is still running on the server \(\d+ s so far\)\]\Z' % call_id,
                    result["content"][0]["text"]) and len(result["content"]) == 1
    asked = time.monotonic()
    for arguments, message in (({"id": "20990101T000000Z_x", "wait": 5}, "unknown spill id"),
                               ({"id": call_id, "wait": -1}, "wait must be a number of seconds from 0"),
                               ({"id": call_id, "wait": "5"}, "wait must be a number of seconds from 0"),
                               ({"id": call_id, "wait": True}, "wait must be a number of seconds from 0")):
        result = relay.call("read_spilled_output", arguments)["result"]
        assert result["isError"] is True and message in result["content"][0]["text"], arguments
    assert time.monotonic() - asked < 1.0   # none of them waited
    assert relay.close() == 0
    assert "Traceback" not in relay.stderr


def cancels_received(record):
    return [json.loads(line)["params"]["requestId"] for line in record.read_text().splitlines()
            if '"notifications/cancelled"' in line]


def test_detached_calls_still_running_are_cancelled_upstream_when_the_relay_ends(relay_factory, tmp_path):
    record = tmp_path / "received.ndjson"
    relay = relay_factory(["--detach-after", "0.3"], ["--record", str(record)])
    relay.initialize()
    relay.request("tools/list")
    detached_id(relay.call("never", msg_id="left"))
    detached_id(relay.call("slow", {"seconds": 0.5}, msg_id="ended"))
    time.sleep(0.6)
    assert relay.close() == 0
    assert cancels_received(record) == ["left"]


def test_the_clients_cancel_after_detaching_reaches_the_server_and_ends_the_call(relay_factory, tmp_path):
    record = tmp_path / "received.ndjson"
    relay = relay_factory(["--detach-after", "0.3"], ["--record", str(record)])
    relay.initialize()
    relay.request("tools/list")
    call_id = detached_id(relay.call("slow", {"seconds": 1.0}, msg_id="c1"))
    relay.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "c1"}})
    result = relay.call("read_spilled_output", {"id": call_id, "wait": 3})["result"]
    assert result["isError"] is True and "the client cancelled it after" in result["content"][0]["text"]
    time.sleep(1.0)  # the server's answer comes anyway: it is dropped
    assert relay.request("ping")[1] == [] and sum(1 for raw in relay.raw_lines if b'"id":"c1"' in raw) == 1
    assert relay.close() == 0
    assert cancels_received(record) == ["c1"]


def test_request_timeout_still_ends_a_detached_call(relay_factory, tmp_path):
    record = tmp_path / "received.ndjson"
    relay = relay_factory(["--detach-after", "0.3", "--request-timeout", "0.8"], ["--record", str(record)])
    relay.initialize()
    relay.request("tools/list")
    call_id = detached_id(relay.call("never", msg_id="t1"))
    result = relay.call("read_spilled_output", {"id": call_id, "wait": 0.3})["result"]
    assert "still running" in result["content"][0]["text"]
    time.sleep(0.5)
    result = relay.call("read_spilled_output", {"id": call_id})["result"]
    assert result["isError"] is True and "timed out after 0.8 s (ocx-proxy --request-timeout)" in \
        result["content"][0]["text"]
    assert cancels_received(record) == ["t1"]
    assert relay.close() == 0


def test_a_server_that_exits_ends_its_detached_calls(relay_factory):
    relay = relay_factory(["--detach-after", "0.3"])
    relay.initialize()
    relay.request("tools/list")
    call_id = detached_id(relay.call("never"))
    relay.call("crash", {"code": 5})
    result = relay.call("read_spilled_output", {"id": call_id})["result"]
    assert result["isError"] is True and "the server exited before answering" in result["content"][0]["text"]
    assert relay.close() == 0


@pytest.mark.parametrize("relay_args,listed", [(["--detach-after", "0"], True), (["--detach-after", "0.3"], False),
                                               (["--detach-after", "0.3", "--no-reader-tool"], True)])
def test_no_detaching_with_detach_after_0_or_without_the_reader_tool(relay_factory, relay_args, listed):
    relay = relay_factory(relay_args)
    relay.initialize()
    if listed:
        relay.request("tools/list")
    assert relay.call("sleep", {"seconds": 0.9})["result"]["content"][0]["text"] == "slept"
    assert relay.close() == 0


def test_with_spilling_off_the_reader_tool_stays_for_detached_calls(relay_factory):
    relay = relay_factory(["--max-response-chars", "0", "--detach-after", "0.3"])
    relay.initialize()
    assert [t["name"] for t in relay.request("tools/list")[0]["result"]["tools"]][-1] == "read_spilled_output"
    call_id = detached_id(relay.call("slow", {"seconds": 0.6, "then": "big", "with": {"n": 30000}}))
    assert relay.call("big", {"n": 30000})["result"]["content"][0]["text"] == "x" * 30000   # never spilled
    assert read_detached(relay, call_id, wait=5)[1] == "x" * 30000
    relay.close()
    relay = relay_factory(["--max-response-chars", "0", "--detach-after", "0"])
    relay.initialize()
    assert "read_spilled_output" not in [t["name"] for t in relay.request("tools/list")[0]["result"]["tools"]]
    assert relay.close() == 0


def test_a_client_whose_clock_progress_resets_is_kept_alive_not_detached(relay_factory):
    relay = relay_factory(["--client", "opencode", "--heartbeat", "0.2", "--detach-after", "0.5"])
    relay.initialize()
    relay.request("tools/list")
    reply, before = relay.request("tools/call", with_token("sleep", {"seconds": 1.0}, 7), msg_id="o1")
    assert reply["result"]["content"][0]["text"] == "slept" and len(before) >= 3
    detached_id(relay.call("sleep", {"seconds": 1.0}))   # no progressToken: nothing resets its clock
    assert relay.close() == 0


def test_the_profile_gives_the_clock_defaults_and_says_them(relay_factory):
    relay = relay_factory(["--client", "codex"])
    relay.initialize()
    relay.close()
    assert "heartbeat every 30 s, tools/call detached after 270 s (its clock: 300 s)" in relay.stderr
    relay = relay_factory(["--heartbeat", "0", "--detach-after", "7"])
    relay.initialize()
    relay.close()
    assert "no heartbeat, tools/call detached after 7 s (its clock: 60 s)" in relay.stderr
    env = dict(os.environ, OCX_PROXY_HEARTBEAT="2.5", OCX_PROXY_DETACH_AFTER="0")
    relay = relay_factory(["--client", "opencode"], env=env)
    relay.initialize()
    relay.close()
    assert "heartbeat every 2.5 s, never detached (its clock: 60 s, progress resets it)" in relay.stderr


@pytest.mark.parametrize("mode", ["streamable-http", "sse"])
def test_heartbeats_and_detached_calls_over_remote_transports(http_server, tmp_path, mode):
    srv = http_server(streamable=mode != "sse")
    relay = RelayProcess(command=[sys.executable, PROXY, mode, "--url", srv.sse_url if mode == "sse" else srv.url,
                                  "--output-dir", str(tmp_path), "--heartbeat", "0.2", "--detach-after", "1.5"])
    try:
        relay.initialize()
        relay.request("tools/list")
        reply, _ = relay.request("tools/call", with_token("progress", {"steps": 2, "delay": 0.7}, "tok"), msg_id=1)
        assert reply["result"]["content"][0]["text"] == "progressed"
        values = [params["progress"] for _, params in progress_sent(relay, "tok")]
        assert 1 in values and 2 in values and len(values) >= 5, values   # the server's own, and heartbeats
        assert all(a < b for a, b in zip(values, values[1:])), values
        call_id = detached_id(relay.call("sleep", {"seconds": 2.5}, msg_id=2))
        notes, text = read_detached(relay, call_id, wait=5)
        assert text == "slept" and "finished on the server" in notes[0][0]
        assert relay.close() == 0
    finally:
        if relay.proc.poll() is None:
            relay.proc.kill()
