"""Remote transports, end to end: the real relay subprocess against stdlib fixture servers.

Streamable HTTP (legacy sessions and 2026-07-28 requests, side by side), legacy
HTTP+SSE, auto-detect, session recovery, resumption, errors as answers, proxies and TLS (the HTTP client's own helpers: test_http_client.py).  The
fixture servers run in this process on 127.0.0.1.
"""
import base64
import json
import os
import shutil
import ssl
import subprocess
import sys
import threading
import time

import pytest

from helpers import FIXTURES, PROXY, RelayProcess, raw_session

sys.path.insert(0, FIXTURES)
import http_servers  # noqa: E402
import ocx_proxy  # noqa: E402

ENV_PREFIXES = ("OCX_PROXY_", "CURSOR_MCP_RESPONSE_PROXY_")


def clean_env(**extra):
    """Our environment without proxy, TLS and ocx-proxy settings, plus ``extra``."""
    env = {k: v for k, v in os.environ.items()
           if not k.lower().endswith("_proxy") and not k.startswith(ENV_PREFIXES)
           and k not in ("SSL_CERT_FILE", "SSL_CERT_DIR")}
    env.update(extra)
    return env


@pytest.fixture
def server(http_server):
    return http_server


@pytest.fixture
def remote(tmp_path):
    """Start ``ocx_proxy.py MODE --url URL ...`` as a client would; all are killed at the end."""
    relays = []

    def start(mode, url, *args, env=None):
        argv = [sys.executable, PROXY, mode, "--url", url, "--output-dir", str(tmp_path / "spill")] + list(args)
        relay = RelayProcess(command=argv, env=env if env is not None else clean_env())
        relays.append(relay)
        return relay

    yield start
    for relay in relays:
        if relay.proc.poll() is None:
            relay.proc.kill()
            relay.proc.wait()


def run_cli(args, env=None, timeout=30):
    proc = subprocess.run([sys.executable, PROXY] + args, input=b"", stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=env or clean_env(), timeout=timeout)
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


def wait_until(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def text_of(reply):
    assert "result" in reply, reply
    return reply["result"]["content"][0]["text"]


# ---------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("command", ["streamable-http", "sse", "auto"])
def test_help_explains_every_option_with_its_default(command):
    from test_cli import help_entries

    status, out, _ = run_cli([command, "--help"])
    assert status == 0
    entries = help_entries(out)
    entries.pop("--help", None)
    for option in ("--url", "--header", "--timeout", "--sse-read-timeout", "--cacert", "--insecure",
                   "--max-response-chars", "--request-timeout"):
        assert option in entries
    for option, paragraph in entries.items():
        assert "default" in paragraph, "%s %s: no default in help: %s" % (command, option, paragraph)


@pytest.mark.parametrize("args,needle", [
    (["streamable-http"], "--url"),
    (["sse", "--url", "ftp://example.com/x"], "http:// or https://"),
    (["auto", "--url", "http://127.0.0.1:1/mcp", "--header", "novalue"], "NAME=VALUE"),
    (["streamable-http", "--url", "http://127.0.0.1:1/mcp", "--header", "X-Key=${OCX_UNSET_VAR_FOR_TEST}"],
     "OCX_UNSET_VAR_FOR_TEST"),
    (["streamable-http", "--url", "http://127.0.0.1:1/mcp", "--header", "Mcp-Session-Id: x"], "itself"),
    (["streamable-http", "--url", "https://127.0.0.1:1/mcp", "--cacert", "/nonexistent/ca.pem"], "--cacert"),
    (["streamable-http", "--url", "http://127.0.0.1:1/mcp", "--timeout", "soon"], "--timeout"),
])
def test_bad_usage_exits_2_with_one_line(args, needle):
    status, out, err = run_cli(args)
    assert status == 2 and out == ""
    assert needle in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err


def test_bad_env_twin_is_a_usage_error():
    status, _, err = run_cli(["sse", "--url", "http://127.0.0.1:1/sse"],
                             env=clean_env(OCX_PROXY_SSE_READ_TIMEOUT_SECONDS="long"))
    assert status == 2 and "OCX_PROXY_SSE_READ_TIMEOUT_SECONDS" in err


# ---------------------------------------------------------------------------
# Streamable HTTP
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("reply", ["sse", "json"])
def test_streamable_roundtrip_session_headers_and_delete(server, remote, reply):
    srv = server(reply=reply)
    relay = remote("streamable-http", srv.url)
    init = relay.initialize("2025-06-18")
    assert init["result"]["serverInfo"]["name"] == "http-fixture"
    assert text_of(relay.call("echo", {"text": "héllo"})) == "héllo"
    assert relay.request("ping")[0]["result"] == {}
    posts = srv.seen("POST")
    first, later = posts[0], posts[1:]
    assert "Mcp-Session-Id" not in first["headers"]
    assert "application/json" in first["headers"]["Accept"] and "text/event-stream" in first["headers"]["Accept"]
    assert first["headers"]["Content-Type"] == "application/json"
    sid = next(iter(srv.sessions))
    assert later and all(r["headers"].get("Mcp-Session-Id") == sid for r in later)
    assert all(r["headers"].get("MCP-Protocol-Version") == "2025-06-18" for r in later)
    assert relay.close() == 0
    deletes = srv.seen("DELETE")
    assert len(deletes) == 1 and deletes[0]["headers"]["Mcp-Session-Id"] == sid


def test_progress_reaches_the_client_before_the_result(server, remote):
    srv = server(reply="sse")
    relay = remote("streamable-http", srv.url)
    relay.initialize()
    relay.send({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                "params": {"name": "progress", "arguments": {"steps": 3, "delay": 0.4},
                           "_meta": {"progressToken": "tok"}}})
    arrivals = []
    while True:
        msg = relay.recv(timeout=10)
        arrivals.append((time.monotonic(), msg))
        if msg.get("id") == 5:
            break
    progress = [(t, m) for t, m in arrivals if m.get("method") == "notifications/progress"]
    assert [m["params"]["progress"] for _, m in progress] == [1, 2, 3]
    assert all(m["params"]["progressToken"] == "tok" for _, m in progress)
    assert arrivals[-1][0] - progress[0][0] >= 0.6  # relayed as they happened, not all at the end
    relay.close()


def test_parallel_calls_run_concurrently_and_pings_are_not_delayed(server, remote):
    srv = server(reply="sse")
    relay = remote("streamable-http", srv.url)
    relay.initialize()
    started = time.monotonic()
    for n in range(8):
        relay.send({"jsonrpc": "2.0", "id": 1000 + n, "method": "tools/call",
                    "params": {"name": "sleep", "arguments": {"seconds": 1}}})
    time.sleep(0.2)
    ping_sent = time.monotonic()
    relay.send({"jsonrpc": "2.0", "id": "p", "method": "ping"})
    relay.wait_for("p", timeout=5)
    assert time.monotonic() - ping_sent < 0.7
    for n in range(8):
        assert text_of(relay.wait_for(1000 + n, timeout=10)[0]) == "slept"
    assert time.monotonic() - started < 4.0
    relay.close()


@pytest.mark.parametrize("reply", ["json", "sse"])   # sse: the stream of an answered POST ends; its connection stays
def test_connections_are_kept_alive(server, remote, reply):
    srv = server(reply=reply, get_stream="405")
    relay = remote("streamable-http", srv.url)
    relay.initialize()
    relay.request("ping")
    before = srv.connections
    for _ in range(25):
        relay.request("ping")
    assert srv.connections - before <= 2, "one TCP connection per message"
    relay.close()


def test_expired_session_is_reinitialized_transparently(server, remote):
    srv = server(reply="sse")
    relay = remote("streamable-http", srv.url)
    relay.initialize()
    old = next(iter(srv.sessions))
    srv.expire_sessions()
    assert text_of(relay.call("echo", {"text": "again"})) == "again"
    new = next(iter(srv.sessions))
    assert new != old
    inits = srv.seen("POST", lambda r: b'"initialize"' in r["body"])
    assert len(inits) == 2 and b"ocx-proxy-reinit-" in inits[1]["body"]
    assert srv.seen("POST", lambda r: b"notifications/initialized" in r["body"]
                    and r["headers"].get("Mcp-Session-Id") == new)
    assert relay.request("ping")[0]["result"] == {}
    time.sleep(0.2)
    assert relay.lines.empty(), "the replayed initialize's answer must not reach the client"
    assert relay.close() == 0


def test_http_500_becomes_a_jsonrpc_error_and_the_relay_keeps_going(server, remote):
    srv = server()
    relay = remote("streamable-http", srv.url)
    relay.initialize()
    reply = relay.call("http500")
    assert reply["error"]["code"] == -32000
    assert reply["error"]["message"] == "HTTP 500 from upstream: boom: database down"
    assert reply["error"]["data"] == {"httpStatus": 500}
    assert text_of(relay.call("echo", {"text": "still here"})) == "still here"
    relay.close()


def test_a_credential_in_the_url_query_stays_out_of_logs_and_trace(server, remote, tmp_path):
    srv = server(reply="json")
    key = "sk-live-0123456789abcdef"
    relay = remote("streamable-http", srv.url + "?api_key=%s&page=2" % key, "--log-level", "debug",
                   "--trace", str(tmp_path / "trace.jsonl"))
    relay.initialize()
    reply = relay.call("quote_path")
    relay.close()
    assert "No route for POST /mcp?api_key=[redacted]&page=2" in reply["error"]["message"], reply
    trace = (tmp_path / "trace.jsonl").read_text()
    assert "No route" in relay.stderr and '"tool":"quote_path"' in trace
    assert key not in trace + relay.stderr + json.dumps(reply)


def test_dropped_stream_with_event_ids_is_resumed(server, remote):
    srv = server(reply="sse", event_ids=True, retry_ms=100)
    relay = remote("streamable-http", srv.url)
    relay.initialize()
    reply, notes = relay.request("tools/call", {"name": "drop", "arguments": {"then": 0.3}})
    assert text_of(reply) == "finished after the drop"
    assert [n["params"]["data"] for n in notes if n["method"] == "notifications/message"] == ["before the drop"]
    assert srv.resumed
    resumes = srv.seen("GET", lambda r: "Last-Event-ID" in r["headers"])
    assert resumes and resumes[0]["headers"]["Mcp-Session-Id"] == next(iter(srv.sessions))
    relay.close()


def test_dropped_stream_without_event_ids_fails_the_request(server, remote):
    srv = server(reply="sse", event_ids=False)
    relay = remote("streamable-http", srv.url)
    relay.initialize()
    started = time.monotonic()
    reply, _ = relay.request("tools/call", {"name": "drop", "arguments": {"then": 5}}, timeout=10)
    assert reply["error"]["code"] == -32000 and "before answering" in reply["error"]["message"]
    assert time.monotonic() - started < 3
    assert relay.request("ping")[0]["result"] == {}
    relay.close()


def test_silent_stream_hits_the_sse_read_timeout(server, remote):
    srv = server(reply="sse")
    relay = remote("streamable-http", srv.url, "--sse-read-timeout", "1")
    relay.initialize()
    reply, _ = relay.request("tools/call", {"name": "sleep", "arguments": {"seconds": 3}}, timeout=10)
    assert "--sse-read-timeout" in reply["error"]["message"]
    relay.close()


def test_slow_json_answer_hits_the_timeout(server, remote):
    srv = server(reply="json")
    relay = remote("streamable-http", srv.url, env=clean_env(OCX_PROXY_TIMEOUT_SECONDS="1"))
    relay.initialize()
    reply, _ = relay.request("tools/call", {"name": "slow_json", "arguments": {"seconds": 3}}, timeout=10)
    assert "timed out" in reply["error"]["message"]
    assert relay.request("ping")[0]["result"] == {}
    relay.close()


@pytest.mark.parametrize("reply", ["sse", "json"])
def test_server_to_client_request_and_multiline_data(server, remote, reply):
    srv = server(reply=reply)
    relay = remote("streamable-http", srv.url)
    relay.initialize()
    if reply == "sse":
        relay.send({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "ask_client"}})
        ask = relay.recv()
        assert ask["method"] == "sampling/createMessage"
        relay.send({"jsonrpc": "2.0", "id": ask["id"], "result": {"role": "assistant",
                                                                  "content": {"type": "text", "text": "hi"}}})
        answer = json.loads(text_of(relay.wait_for(9)[0]))
        assert answer["result"]["content"]["text"] == "hi"
    assert text_of(relay.call("pretty")) == "pretty\nprinted"  # pretty-printed JSON over several lines
    relay.close()


def notification_after_call(relay, tool):
    """Call ``tool``; return the one notification it causes on the GET stream, which may
    arrive before or after the call's own answer (they travel on different streams)."""
    _, before = relay.request("tools/call", {"name": tool, "arguments": {}})
    return before[0] if before else relay.recv(timeout=5)


def test_get_stream_delivers_server_initiated_messages(server, remote):
    srv = server(reply="sse", get_stream="sse")
    relay = remote("streamable-http", srv.url)
    relay.initialize()
    assert wait_until(lambda: srv.seen("GET"))
    get = srv.seen("GET")[0]
    assert get["headers"]["Accept"] == "text/event-stream" and get["headers"]["Mcp-Session-Id"]
    note = notification_after_call(relay, "notify_get")
    assert note["method"] == "notifications/message" and note["params"]["data"] == "via GET"
    relay.close()


def test_get_stream_reconnects_with_last_event_id(server, remote):
    srv = server(reply="json", get_stream="sse", get_close_after=1, retry_ms=100)
    relay = remote("streamable-http", srv.url)
    relay.initialize()
    for n in range(2):
        assert notification_after_call(relay, "notify_get")["params"]["data"] == "via GET"
    assert srv.resumed == ["get-1"] or srv.resumed[:1] == ["get-1"]
    relay.close()


def test_same_origin_redirect_is_followed(server, remote):
    srv = server(reply="sse")
    relay = remote("streamable-http", srv.base + "/old-mcp")
    relay.initialize()
    assert text_of(relay.call("echo", {"text": "moved"})) == "moved"
    relay.close()
    assert len(srv.seen("POST", lambda r: r["path"] == "/old-mcp")) == 1  # later requests go to /mcp
    assert "redirects to" in relay.stderr


def test_get_405_and_delete_405_are_fine(server, remote):
    srv = server(reply="json", get_stream="405", delete="405")
    relay = remote("streamable-http", srv.url)
    relay.initialize()
    assert wait_until(lambda: srv.seen("GET"))
    assert text_of(relay.call("echo", {"text": "ok"})) == "ok"
    assert relay.close() == 0
    assert srv.seen("DELETE")


def test_closing_stdin_lets_an_answer_in_flight_arrive_then_deletes(server, remote):
    srv = server(reply="sse")
    relay = remote("streamable-http", srv.url)
    relay.initialize()
    relay.send({"jsonrpc": "2.0", "id": 88, "method": "tools/call",
                "params": {"name": "sleep", "arguments": {"seconds": 0.5}}})
    time.sleep(0.1)
    assert relay.close() == 0
    answers = [json.loads(line) for line in relay.raw_lines]
    assert any(a.get("id") == 88 and a.get("result") for a in answers)
    assert srv.seen("DELETE")


def test_cancelled_request_is_forwarded_and_abandoned(server, remote):
    srv = server(reply="sse")
    relay = remote("streamable-http", srv.url)
    relay.initialize()
    relay.send({"jsonrpc": "2.0", "id": 77, "method": "tools/call",
                "params": {"name": "sleep", "arguments": {"seconds": 2}}})
    time.sleep(0.2)
    relay.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 77}})
    assert wait_until(lambda: srv.seen("POST", lambda r: b"notifications/cancelled" in r["body"]))
    assert relay.request("ping")[0]["result"] == {}
    time.sleep(0.3)
    assert relay.lines.empty()
    relay.close()


def test_spill_works_through_http_byte_exact(server, remote):
    srv = server(reply="sse")
    relay = remote("streamable-http", srv.url)
    relay.initialize()
    reply = relay.call("big", {"n": 30000}, msg_id=31)
    meta = reply["result"]["_meta"]["ocx-proxy/spill"]
    assert len(relay.raw_lines[-1]) <= 10001
    expected = http_servers.dumps({"jsonrpc": "2.0", "id": 31, "result": http_servers.text_result("x" * 30000)})
    with open(meta["json"], "rb") as handle:
        assert handle.read() == expected
    relay.close()


def test_unreachable_server_answers_errors_and_keeps_running(remote):
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    relay = remote("streamable-http", "http://127.0.0.1:%d/mcp" % port)
    reply, _ = relay.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                            "clientInfo": {"name": "t", "version": "1"}}, msg_id=1)
    assert "connection refused" in reply["error"]["message"]
    assert "error" in relay.request("ping")[0]
    assert relay.close() == 0


def test_headers_are_sent_and_secrets_never_logged(server, remote):
    srv = server(reply="json")
    env = clean_env(OCX_TEST_TOKEN="tok-9f8e7d6c5b4a", OCX_TEST_TEAM="team-secret-42")
    relay = remote("streamable-http", srv.url, "--header", "Authorization: Bearer ${OCX_TEST_TOKEN}",
                   "--header", "X-Team=${OCX_TEST_TEAM}", "--header", "X-Plain: visible",
                   "--log-level", "debug", env=env)
    relay.initialize()
    headers = json.loads(text_of(relay.call("whoami")))["headers"]
    assert headers["Authorization"] == "Bearer tok-9f8e7d6c5b4a"
    assert headers["X-Team"] == "team-secret-42" and headers["X-Plain"] == "visible"
    assert headers["User-Agent"].startswith("ocx-proxy/")
    srv.expire_sessions()
    relay.call("echo", {"text": "x"})
    relay.close()
    log_text = relay.stderr
    assert "POST" in log_text and "X-Plain: visible" in log_text
    assert "tok-9f8e7d6c5b4a" not in log_text and "team-secret-42" not in log_text


# ---------------------------------------------------------------------------
# Streamable HTTP, 2026-07-28 requests (era per request) and errors as answers
# ---------------------------------------------------------------------------

MODERN_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientCapabilities": {}}


def modern(relay, method, params=None, version="2026-07-28", **kw):
    """A 2026-07-28 request (its version in _meta): returns (response, notifications before it)."""
    meta = dict(MODERN_META, **{"io.modelcontextprotocol/protocolVersion": version})
    return relay.request(method, dict(params or {}, _meta=meta), **kw)


def modern_posts(srv, method):
    return srv.seen("POST", lambda r: json.loads(r["body"]).get("method") == method)


def schema(**properties):
    return {"name": "t", "inputSchema": {"type": "object", "properties": properties}}


@pytest.mark.parametrize("tool,expected", [
    (schema(a={"type": "string", "x-mcp-header": "A"}, b={"type": "string"}), [("A", ("a",))]),
    (schema(o={"type": "object", "properties": {"n": {"type": "integer", "x-mcp-header": "N"}}},
            f={"type": "boolean", "x-mcp-header": "F-1"}), [("N", ("o", "n")), ("F-1", ("f",))]),
    (schema(a={"type": "string", "default": {"x-mcp-header": "data, not a schema"}}), []),
    ({"name": "no schema"}, []),
    (schema(a={"type": "number", "x-mcp-header": "A"}), "not string, integer or boolean"),
    (schema(a={"x-mcp-header": "A"}), "not string, integer or boolean"),
    (schema(a={"type": "string", "x-mcp-header": ""}), "not a header name"),
    (schema(a={"type": "string", "x-mcp-header": "Bad Name"}), "not a header name"),
    (schema(a={"type": "string", "x-mcp-header": 7}), "not a header name"),
    (schema(a={"type": "string", "x-mcp-header": "X"}, b={"type": "string", "x-mcp-header": "x"}), "same header"),
    (schema(a={"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}), "outside"),
    (schema(a={"anyOf": [{"type": "string", "x-mcp-header": "A"}]}), "outside"),
    ({"name": "t", "inputSchema": {"type": "string", "x-mcp-header": "Root"}}, "outside"),
])
def test_x_mcp_header_annotations_are_checked_as_the_spec_says(tool, expected):
    found, why = ocx_proxy.param_headers(tool)
    if isinstance(expected, list):
        assert (found, why) == (expected, None)
    else:
        assert found is None and expected in why


@pytest.mark.parametrize("arguments,text", [
    ({"a": "x"}, "x"), ({"a": 42}, "42"), ({"a": -7}, "-7"), ({"a": False}, "false"), ({"a": None}, None),
    ({}, None), ({"a": {"b": 1}}, None), ({"a": [1]}, None),
])
def test_param_values_are_converted_as_the_spec_says(arguments, text):
    assert ocx_proxy.param_value(arguments, ("a",)) == text


@pytest.mark.parametrize("mode,reply", [("streamable-http", "sse"), ("streamable-http", "json"), ("auto", "sse")])
def test_modern_requests_mirror_their_body_in_headers_without_a_session(server, remote, mode, reply):
    srv = server(era="modern", reply=reply)
    relay = remote(mode, srv.url)
    discover = modern(relay, "server/discover")[0]
    assert discover["result"]["supportedVersions"] == ["2026-07-28"]
    assert text_of(modern(relay, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})[0]) == "hi"
    # names a header cannot carry as they are: the base64 form, exactly where the spec asks for it
    odd = {"wetter-für-köln": "=?base64?d2V0dGVyLWbDvHIta8O2bG4=?=", " padded ": "=?base64?IHBhZGRlZCA=?=",
           "=?base64?literal?=": "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=", "line1\nline2": "=?base64?bGluZTEKbGluZTI=?=",
           "plain name": "plain name"}
    for name, header in odd.items():
        reply_msg = modern(relay, "tools/call", {"name": name, "arguments": {}})[0]
        assert reply_msg["error"]["code"] == -32602, reply_msg  # the server's answer: headers matched
        assert modern_posts(srv, "tools/call")[-1]["headers"]["Mcp-Name"] == header
    missing = modern(relay, "resources/read", {"uri": " file:///ä.txt"})[0]
    assert missing["error"]["code"] == -32601  # HTTP 404 with a JSON-RPC body: the answer
    assert modern_posts(srv, "resources/read")[0]["headers"]["Mcp-Name"] == "=?base64?IGZpbGU6Ly8vw6QudHh0?="
    assert relay.close() == 0
    posts = srv.seen("POST")
    assert posts and all(r["headers"]["MCP-Protocol-Version"] == "2026-07-28" for r in posts)
    assert all(r["headers"]["Mcp-Method"] == json.loads(r["body"])["method"] for r in posts)
    assert not [r for r in posts if "Mcp-Session-Id" in r["headers"]]
    assert "Mcp-Name" not in modern_posts(srv, "server/discover")[0]["headers"]
    assert not srv.seen("GET") and not srv.seen("DELETE")


def test_a_modern_request_whose_name_is_not_a_string_gets_invalid_params(server, remote):
    srv = server(era="modern", reply="json")
    relay = remote("streamable-http", srv.url)
    cases = [("tools/call", {"name": name, "arguments": {}}) for name in (["a"], {"a": 1}, 5, None, True)]
    cases += [("tools/call", {"arguments": {}}), ("resources/read", {"uri": ["file:///x"]}), ("prompts/get", {"name": {}})]
    for n, (method, params) in enumerate(cases):
        reply = modern(relay, method, params, msg_id="bad-%d" % n)[0]
        assert reply["error"]["code"] == -32602, reply
        key = "uri" if method == "resources/read" else "name"
        assert reply["error"]["message"] == "Invalid params: %s needs params.%s, a string" % (method, key)
    assert not modern_posts(srv, "tools/call") and not modern_posts(srv, "resources/read")
    assert text_of(modern(relay, "tools/call", {"name": "echo", "arguments": {"text": "still"}})[0]) == "still"
    assert relay.close() == 0
    assert "internal error" not in relay.stderr and "Traceback" not in relay.stderr


def test_x_mcp_header_arguments_are_mirrored_and_invalid_tools_left_out(server, remote):
    srv = server(era="modern", reply="json")
    relay = remote("streamable-http", srv.url)
    tools = modern(relay, "tools/list")[0]["result"]["tools"]
    assert [t["name"] for t in tools] == ["echo", "route", "sleep", "whoami", "read_spilled_output"]  # + ours

    def warnings():  # stderr is read by a thread of its own: the lines may come a little later
        return [sum(name in line and "warning" in line for line in relay.stderr.splitlines())
                for name in ("bad_number", "bad_items", "bad_duplicate")]

    assert wait_until(lambda: all(warnings())) and warnings() == [1, 1, 1], relay.stderr
    arguments = {"region": "us-west1", "count": 42, "flag": True, "where": {"tenant": "Zürich "}, "note": "n"}
    reply = modern(relay, "tools/call", {"name": "route", "arguments": arguments})[0]
    assert json.loads(text_of(reply)) == arguments
    headers = modern_posts(srv, "tools/call")[-1]["headers"]
    assert headers["Mcp-Name"] == "route"
    assert (headers["Mcp-Param-Region"], headers["Mcp-Param-Count"], headers["Mcp-Param-Flag"]) == (
        "us-west1", "42", "true")
    assert headers["Mcp-Param-Tenant"] == "=?base64?" + base64.b64encode("Zürich ".encode()).decode() + "?="
    assert not [name for name in headers if name.startswith("Mcp-Param-") and "Note" in name]
    reply = modern(relay, "tools/call", {"name": "route", "arguments": {"count": 7, "region": None}})[0]
    assert json.loads(text_of(reply)) == {"count": 7, "region": None}
    headers = modern_posts(srv, "tools/call")[-1]["headers"]
    assert [n for n in headers if n.startswith("Mcp-Param-")] == ["Mcp-Param-Count"]
    relay.close()


def test_a_big_modern_tools_list_leaves_out_invalid_tools_as_a_small_one_does(server, remote):
    # The transport's tools/list rewrite is in the relay's table: a line over PEEK_LINE_BYTES is parsed for it.
    import ocx_proxy as op

    srv = server(era="modern", reply="json")
    budget = str(100 * op.PEEK_LINE_BYTES)  # the size check must not be what parses the big line
    relay = remote("streamable-http", srv.url, "--max-response-chars", budget, "--max-response-bytes", budget)
    names = []
    for pad in (1, op.PEEK_LINE_BYTES):
        tools = modern(relay, "tools/list", {"pad": pad})[0]["result"]["tools"]
        assert len(tools[0]["description"]) == pad
        names.append([t["name"] for t in tools])
    assert names[0] == names[1] == ["echo", "route", "sleep", "whoami", "read_spilled_output"]
    reply = modern(relay, "tools/call", {"name": "route", "arguments": {"region": "eu"}})[0]
    assert json.loads(text_of(reply)) == {"region": "eu"}
    assert modern_posts(srv, "tools/call")[-1]["headers"]["Mcp-Param-Region"] == "eu"
    assert relay.close() == 0


def test_legacy_and_modern_requests_side_by_side_on_one_relay(server, remote):
    srv = server(era="dual", reply="sse", get_stream="sse")
    relay = remote("auto", srv.url)
    assert "2025-11-25" in modern(relay, "server/discover")[0]["result"]["supportedVersions"]
    relay.initialize("2025-11-25")
    sid = next(iter(srv.sessions))
    assert text_of(relay.call("echo", {"text": "legacy"})) == "legacy"
    assert text_of(modern(relay, "tools/call", {"name": "echo", "arguments": {"text": "modern"}})[0]) == "modern"
    assert wait_until(lambda: srv.seen("GET"))
    assert relay.close() == 0
    for r in srv.seen("POST"):
        body = json.loads(r["body"])
        if "_meta" in (body.get("params") or {}):
            assert "Mcp-Session-Id" not in r["headers"] and r["headers"]["Mcp-Method"] == body["method"]
        elif body["method"] != "initialize":
            assert r["headers"]["Mcp-Session-Id"] == sid and r["headers"]["MCP-Protocol-Version"] == "2025-11-25"
            assert "Mcp-Method" not in r["headers"]
    assert [r["headers"]["Mcp-Session-Id"] for r in srv.seen("DELETE")] == [sid]
    assert not srv.legacy_connects


@pytest.mark.parametrize("reply", ["sse", "json"])
def test_jsonrpc_error_bodies_of_modern_requests_are_the_answer(server, remote, reply):
    srv = server(era="modern", reply=reply)
    relay = remote("streamable-http", srv.url)
    unsupported = modern(relay, "tools/list", version="2099-01-01", msg_id="v")[0]
    assert unsupported == {"jsonrpc": "2.0", "id": "v", "error": {
        "code": -32022, "message": "Unsupported protocol version",
        "data": {"supported": ["2026-07-28"], "requested": "2099-01-01"}}}
    # route before any tools/list: we do not know its annotations yet, and the server says so
    mismatch = modern(relay, "tools/call", {"name": "route", "arguments": {"region": "eu"}}, msg_id=3)[0]
    assert mismatch["id"] == 3 and mismatch["error"]["code"] == -32020 and "Mcp-Param-Region" in \
        mismatch["error"]["message"] and "data" not in mismatch["error"]
    relay.close()


@pytest.mark.parametrize("mode,url", [("streamable-http", "url"), ("sse", "sse_url")])
def test_jsonrpc_error_bodies_of_legacy_requests_are_the_answer(server, remote, mode, url):
    srv = server(reply="sse", streamable=mode != "sse")
    relay = remote(mode, getattr(srv, url))
    if mode == "streamable-http":
        early = relay.call("echo", {"text": "before initialize"}, msg_id="e")
        assert early == {"jsonrpc": "2.0", "id": "e", "error": {"code": -32000,
                                                                "message": "Bad Request: No session id"}}
    relay.initialize()
    reply = relay.call("jsonrpc_400", msg_id=8)
    assert reply == dict(http_servers.JSONRPC_400, id=8)
    assert text_of(relay.call("echo", {"text": "fine"})) == "fine"
    relay.close()


@pytest.mark.parametrize("status,code", [(400, -32022), (404, -32601)])
def test_auto_does_not_fall_back_when_a_refusal_is_a_jsonrpc_error(server, remote, status, code):
    srv = server(era="modern", legacy_refusal=status)
    relay = remote("auto", srv.url)
    reply = relay.initialize()
    assert reply["id"] == 1 and reply["error"]["code"] == code
    assert text_of(modern(relay, "tools/call", {"name": "echo", "arguments": {"text": "still"}})[0]) == "still"
    relay.close()
    assert not srv.seen("GET") and not srv.legacy_connects


def test_auto_a_refused_modern_probe_then_initialize_falls_back_to_legacy_sse(server, remote):
    srv = server(streamable=False)
    relay = remote("auto", srv.sse_url)
    probe = modern(relay, "server/discover")[0]
    assert probe["error"]["code"] == -32000 and probe["error"]["data"] == {"httpStatus": 405}
    assert relay.initialize()["result"]["serverInfo"]["name"] == "http-fixture"
    assert text_of(relay.call("echo", {"text": "old"})) == "old"
    assert srv.legacy_connects == 1
    relay.close()


def test_cancelling_a_modern_request_closes_its_stream_and_sends_nothing(server, remote):
    srv = server(era="modern", reply="sse")
    relay = remote("streamable-http", srv.url)
    relay.send({"jsonrpc": "2.0", "id": 41, "method": "tools/call",
                "params": {"name": "sleep", "arguments": {"seconds": 3}, "_meta": MODERN_META}})
    assert wait_until(lambda: modern_posts(srv, "tools/call"))
    time.sleep(0.2)
    relay.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 41}})
    assert wait_until(lambda: srv.closed == [41], timeout=3)
    assert modern(relay, "server/discover")[0]["result"]
    assert not modern_posts(srv, "notifications/cancelled")
    time.sleep(0.2)
    assert relay.lines.empty()
    relay.close()


def test_a_broken_modern_response_stream_fails_the_request_without_resuming(server, remote):
    srv = server(era="modern", reply="sse", event_ids=True)
    relay = remote("streamable-http", srv.url)
    reply, notes = modern(relay, "tools/call", {"name": "drop", "arguments": {"then": 0.3}})
    assert reply["error"]["code"] == -32000 and "cannot be resumed" in reply["error"]["message"]
    assert [n["params"]["data"] for n in notes] == ["before the drop"]
    assert not srv.seen("GET")
    relay.close()


def test_any_event_on_a_modern_response_stream_restarts_the_wait(server, remote):
    srv = server(era="modern", reply="sse")
    relay = remote("streamable-http", srv.url, "--sse-read-timeout", "0.4")
    reply, notes = modern(relay, "tools/call", {"name": "progress", "arguments": {"steps": 3, "delay": 0.2}})
    assert text_of(reply) == "progressed" and len(notes) == 3  # no progress token: still its own stream
    relay.close()


def test_subscriptions_listen_lives_while_its_stream_does(server, remote):
    srv = server(era="modern", reply="sse")
    relay = remote("streamable-http", srv.url, "--sse-read-timeout", "0.4")
    relay.send({"jsonrpc": "2.0", "id": "listen", "method": "subscriptions/listen",
                "params": {"every": 0.1, "_meta": MODERN_META}})
    assert relay.recv()["method"] == "notifications/subscriptions/acknowledged"  # waits out a slow start
    time.sleep(1.0)  # more than two read timeouts: keep-alive comments and notifications kept it open
    seen = []
    while not relay.lines.empty():
        seen.append(relay.recv())
    assert seen and {m.get("method") for m in seen} == {"notifications/tools/list_changed"}, seen
    relay.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "listen"}})
    assert wait_until(lambda: srv.closed == ["listen"], timeout=3)
    relay.close()


# ---------------------------------------------------------------------------
# Legacy HTTP+SSE and auto
# ---------------------------------------------------------------------------

def test_legacy_sse_roundtrip(server, remote):
    srv = server(streamable=False)
    relay = remote("sse", srv.sse_url)
    relay.initialize()
    assert text_of(relay.call("echo", {"text": "legacy"})) == "legacy"
    reply, notes = relay.request("tools/call", {"name": "progress", "arguments": {"steps": 2, "delay": 0.05},
                                                "_meta": {"progressToken": 3}})
    assert text_of(reply) == "progressed" and len(notes) == 2
    relay.send({"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {"name": "ask_client"}})
    ask = relay.recv()
    relay.send({"jsonrpc": "2.0", "id": ask["id"], "result": {"ok": True}})
    assert json.loads(text_of(relay.wait_for(12)[0]))["result"] == {"ok": True}
    posts = srv.seen("POST")
    assert all(r["path"].startswith("/messages?session_id=") for r in posts)
    assert relay.close() == 0
    assert not srv.seen("DELETE")


def test_legacy_drop_fails_pending_then_reconnects_and_replays_initialize(server, remote):
    srv = server(streamable=False)
    relay = remote("sse", srv.sse_url)
    relay.initialize()
    relay.send({"jsonrpc": "2.0", "id": 50, "method": "tools/call",
                "params": {"name": "sleep", "arguments": {"seconds": 3}}})
    time.sleep(0.3)
    srv.drop_legacy_streams()
    reply, _ = relay.wait_for(50, timeout=5)
    assert reply["error"]["code"] == -32000 and "dropped" in reply["error"]["message"]
    assert text_of(relay.call("echo", {"text": "after"}, timeout=15)) == "after"
    assert srv.legacy_connects == 2
    assert len(srv.legacy_initializes) == 2 and str(srv.legacy_initializes[1]).startswith("ocx-proxy-reinit-")
    time.sleep(0.2)
    assert relay.lines.empty()
    relay.close()


def test_legacy_endpoint_on_another_origin_is_refused(server, remote):
    srv = server(streamable=False, endpoint="http://127.0.0.2:9/messages")
    relay = remote("sse", srv.sse_url)
    assert relay.proc.wait(timeout=10) == 1
    assert "same origin" in relay.stderr
    assert not srv.seen("POST")


def test_auto_reports_a_refused_endpoint_with_status_1_too(server, remote):
    srv = server(streamable=False, endpoint="http://127.0.0.2:9/messages")
    relay = remote("auto", srv.sse_url)
    relay.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    assert relay.proc.wait(timeout=10) == 1
    assert "same origin" in relay.stderr


def test_auto_prefers_streamable_http(server, remote):
    srv = server(reply="json")
    relay = remote("auto", srv.url)
    relay.initialize()
    assert text_of(relay.call("echo", {"text": "modern"})) == "modern"
    assert not srv.legacy_connects
    relay.close()


def test_auto_falls_back_to_legacy_sse_on_405(server, remote):
    srv = server(streamable=False)
    relay = remote("auto", srv.sse_url)
    relay.send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    relay.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    relay.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    assert relay.wait_for(1)[0]["result"]["serverInfo"]["name"] == "http-fixture"
    assert relay.wait_for(2)[0]["result"] == {}
    assert text_of(relay.call("echo", {"text": "old"})) == "old"
    assert srv.seen("POST", lambda r: r["path"] == "/sse")  # the probe
    assert srv.legacy_connects == 1
    relay.close()


# ---------------------------------------------------------------------------
# The life of a remote transport (RemoteUpstream.state), in this process
# ---------------------------------------------------------------------------

class InProcess:
    """A remote upstream made by ``remote_upstream_factory`` and run by a Loop on a thread of this process."""

    def __init__(self, transport, url):
        self.loop, self.lines, self.exits = ocx_proxy.Loop(), [], []
        make = ocx_proxy.remote_upstream_factory(transport, ocx_proxy.RemoteConfig(url, environ={}))
        self.upstream = make(self.loop, lambda line, msg=None: self.lines.append(json.loads(line)), self.exits.append)
        self.thread = threading.Thread(target=self.loop.run, daemon=True)
        self.thread.start()
        self.loop.post(self.upstream.start)

    def initialize(self):
        self.loop.post(self.upstream.send, ocx_proxy.encode_message({
            "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}))
        assert wait_until(lambda: any(line.get("id") == 1 for line in self.lines), 10), self.lines

    def close(self):
        self.loop.post(self.upstream.close_input)
        assert wait_until(lambda: self.exits, 10)

    def stop(self):
        self.loop.post(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


def test_a_remote_transport_closed_by_the_client_ends_closed(server):
    srv = server(reply="json")
    run = InProcess("streamable-http", srv.url)
    run.initialize()
    assert run.upstream.state == ocx_proxy.REMOTE_OPEN and not run.upstream.exited
    run.close()
    time.sleep(0.2)
    assert run.upstream.state == ocx_proxy.REMOTE_CLOSED and run.upstream.exited and run.upstream.stopping.is_set()
    assert len(run.exits) == 1
    run.stop()


def test_a_remote_transport_that_fails_ends_exited_and_a_later_close_changes_nothing(server):
    srv = server(streamable=False, endpoint="http://127.0.0.2:9/messages")   # refused: an exit of its own
    run = InProcess("sse", srv.sse_url)
    assert wait_until(lambda: run.exits, 10)
    assert run.upstream.state == ocx_proxy.REMOTE_EXITED and run.upstream.exited and run.upstream.fatal
    run.loop.post(run.upstream.close_input)
    time.sleep(0.2)
    assert run.upstream.state == ocx_proxy.REMOTE_EXITED and len(run.exits) == 1
    run.stop()


def test_auto_hands_over_to_legacy_sse_and_only_the_new_transport_exits(server):
    srv = server(streamable=False)
    run = InProcess("auto", srv.sse_url)
    first = run.upstream.inner
    run.initialize()
    assert first.state == ocx_proxy.REMOTE_HANDED_OVER and first.stopping.is_set() and not first.exited
    assert isinstance(run.upstream.inner, ocx_proxy.SseUpstream) and run.upstream.inner.state == ocx_proxy.REMOTE_OPEN
    run.close()
    time.sleep(0.2)
    assert run.upstream.inner.state == ocx_proxy.REMOTE_CLOSED and run.upstream.exited
    assert first.state == ocx_proxy.REMOTE_HANDED_OVER and len(run.exits) == 1
    run.stop()


# ---------------------------------------------------------------------------
# Hostile servers: every wait is bounded, every message capped
# ---------------------------------------------------------------------------

def hostile_calls(relay, calls, within=6):
    """Call hostile tools ({name: arguments}) at once; while they run, a ping must be answered.

    Returns {name: (reply, seconds from the call to its answer)}.
    """
    started, ids = time.monotonic(), {}
    for n, (name, arguments) in enumerate(sorted(calls.items())):
        ids[name] = 700 + n
        relay.send({"jsonrpc": "2.0", "id": ids[name], "method": "tools/call",
                    "params": {"name": name, "arguments": arguments}})
    time.sleep(0.2)
    assert relay.request("ping", timeout=3)[0]["result"] == {}
    replies = {}
    for name, msg_id in ids.items():
        reply, _ = relay.wait_for(msg_id, timeout=max(0.1, started + within - time.monotonic()))
        replies[name] = (reply, time.monotonic() - started)
    return replies


TIMEOUT_ABUSES = {
    "endless_sse": "neither the answer nor progress for 1 s (--sse-read-timeout)",
    "drip_sse": "neither the answer nor progress for 1 s (--sse-read-timeout)",
    "drip_headers": "timed out (--timeout 1 s)",
    "endless_continue": "timed out (--timeout 1 s)",
    "drip_body": "did not arrive in full within 1 s (--timeout)",
}


def test_timeouts_bound_the_whole_wait_for_an_answer(server, remote):
    srv = server(reply="sse")
    relay = remote("streamable-http", srv.url, "--timeout", "1", "--sse-read-timeout", "1")
    relay.initialize()
    replies = hostile_calls(relay, dict.fromkeys(TIMEOUT_ABUSES, {}))
    for name, (reply, seconds) in replies.items():
        assert TIMEOUT_ABUSES[name] in reply["error"]["message"], (name, reply)
        assert seconds < 3, (name, seconds)
    assert text_of(relay.call("echo", {"text": "still fine"})) == "still fine"
    relay.close()


def test_progress_restarts_the_wait_for_an_answer(server, remote):
    srv = server(streamable=False)
    relay = remote("sse", srv.sse_url, "--sse-read-timeout", "1")
    relay.initialize()
    reply, notes = relay.request("tools/call", {"name": "progress", "arguments": {"steps": 3, "delay": 0.45},
                                                "_meta": {"progressToken": "t"}})
    assert text_of(reply) == "progressed" and len(notes) == 3
    relay.close()


CAP_ABUSES = {
    "huge_length": "upstream announced a body of 10000000000 bytes, more than 100000 (--max-message-bytes)",
    "endless_chunked": "upstream sent a body larger than 100000 bytes (--max-message-bytes)",
    "endless_event": "upstream sent an SSE event larger than 100000 bytes (--max-message-bytes)",
    "endless_line": "upstream sent an SSE line larger than 100000 bytes (--max-message-bytes)",
}


def test_one_answer_is_capped_and_its_connection_dropped(server, remote):
    srv = server(reply="sse")
    relay = remote("streamable-http", srv.url, "--max-message-bytes", "100000")
    relay.initialize()
    replies = hostile_calls(relay, dict.fromkeys(CAP_ABUSES, {"bytes": 400000}), within=5)
    for name, (reply, _) in replies.items():
        assert reply["error"]["message"] == CAP_ABUSES[name], (name, reply)
    assert wait_until(lambda: srv.hangups == len(CAP_ABUSES), 3), "a connection was not closed"
    assert text_of(relay.call("echo", {"text": "after"})) == "after"
    relay.close()


def test_invalid_chunk_sizes_are_named(server, remote):
    srv = server(reply="json")
    relay = remote("streamable-http", srv.url)
    relay.initialize()
    for size in ("10000000000000000", "-5", "zz"):
        reply = relay.call("bad_chunk", {"size": size}, timeout=5)
        assert reply["error"]["message"] == "upstream sent an invalid chunk size", (size, reply)
    assert "internal error" not in relay.stderr
    relay.close()


def test_a_huge_retry_value_is_ignored(server, remote):
    srv = server(reply="sse", event_ids=True, retry_ms=99999999999)
    relay = remote("streamable-http", srv.url)
    relay.initialize()
    reply, _ = relay.request("tools/call", {"name": "drop", "arguments": {"then": 0.2}}, timeout=5)
    assert text_of(reply) == "finished after the drop"
    relay.close()


def test_legacy_server_without_endpoint_event(server, remote):
    srv = server(streamable=False, legacy="no-endpoint")
    relay = remote("sse", srv.sse_url, "--timeout", "1")
    started = time.monotonic()
    reply, _ = relay.request("initialize", {"protocolVersion": "2024-11-05", "capabilities": {},
                                            "clientInfo": {"name": "t", "version": "1"}}, msg_id=1, timeout=6)
    assert "gave no endpoint event within 1 s (--timeout)" in reply["error"]["message"]
    assert time.monotonic() - started < 3
    relay.close()


def test_legacy_stream_with_an_endless_event_is_dropped_and_reopened(server, remote):
    srv = server(streamable=False)
    relay = remote("sse", srv.sse_url, "--max-message-bytes", "100000")
    relay.initialize()
    reply, _ = hostile_calls(relay, {"flood": {}}, within=5)["flood"]
    assert "upstream sent an SSE event larger than 100000 bytes (--max-message-bytes)" in reply["error"]["message"]
    assert text_of(relay.call("echo", {"text": "reconnected"}, timeout=10)) == "reconnected"
    assert srv.legacy_connects == 2
    relay.close()


def test_legacy_server_that_never_answers(server, remote):
    srv = server(streamable=False, legacy="keepalive")
    relay = remote("sse", srv.sse_url, "--sse-read-timeout", "1")
    relay.initialize()
    reply, seconds = hostile_calls(relay, {"ignore": {}})["ignore"]
    assert "neither the answer nor progress for 1 s (--sse-read-timeout)" in reply["error"]["message"]
    assert seconds < 3
    assert text_of(relay.call("echo", {"text": "legacy"})) == "legacy"
    relay.close()


# ---------------------------------------------------------------------------
# Proxies and TLS
# ---------------------------------------------------------------------------

@pytest.fixture
def proxy():
    made = []

    def start(**kw):
        p = http_servers.ConnectProxy(**kw)
        made.append(p)
        return p

    yield start
    for p in made:
        p.stop()


def test_http_target_through_an_authenticating_proxy(server, remote, proxy):
    srv = server(reply="sse")
    prx = proxy(auth="Basic " + base64.b64encode(b"user:p@ss").decode())
    env = clean_env(HTTP_PROXY="http://user:p%%40ss@127.0.0.1:%d" % prx.port)
    relay = remote("streamable-http", srv.url, "--log-level", "debug", env=env)
    relay.initialize()
    assert text_of(relay.call("echo", {"text": "proxied"})) == "proxied"
    assert prx.log and prx.log[0][1] == srv.url and prx.log[0][2] == prx.auth
    relay.close()
    assert "p@ss" not in relay.stderr and "p%40ss" not in relay.stderr


def test_no_proxy_bypasses_the_proxy(server, remote, proxy):
    srv = server(reply="json")
    prx = proxy()
    env = clean_env(http_proxy=prx.url, NO_PROXY="localhost,127.0.0.1")
    relay = remote("streamable-http", srv.url, env=env)
    relay.initialize()
    relay.close()
    assert not prx.log


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    if not shutil.which("openssl"):
        pytest.skip("the openssl command-line tool is needed to make a test CA")
    d = tmp_path_factory.mktemp("certs")

    def ssl_cmd(*args):
        subprocess.run(["openssl"] + list(args), cwd=str(d), check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=60)

    ssl_cmd("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=ocx-proxy test CA", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    ssl_cmd("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
            "-subj", "/CN=127.0.0.1")
    with open(str(d / "ext.cnf"), "w") as handle:
        handle.write("basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
                     "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1\n"
                     "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n")
    ssl_cmd("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "server.pem", "-days", "2", "-extfile", "ext.cnf")
    return d


@pytest.fixture
def tls_server(server, certs):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(certs / "server.pem"), str(certs / "server.key"))
    return server(reply="sse", tls=context)


def test_tls_with_cacert_and_untrusted_without(tls_server, remote, certs):
    relay = remote("streamable-http", tls_server.url)
    reply, _ = relay.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                            "clientInfo": {"name": "t", "version": "1"}}, msg_id=1)
    assert "certificate verif" in reply["error"]["message"] and "--cacert" in reply["error"]["message"]
    relay.close()
    relay = remote("streamable-http", tls_server.url, "--cacert", str(certs / "ca.pem"))
    relay.initialize()
    assert text_of(relay.call("echo", {"text": "tls"})) == "tls"
    relay.close()


def test_tls_via_ssl_cert_file_and_insecure(tls_server, remote, certs):
    relay = remote("auto", tls_server.url, env=clean_env(SSL_CERT_FILE=str(certs / "ca.pem")))
    relay.initialize()
    assert text_of(relay.call("echo", {"text": "env ca"})) == "env ca"
    relay.close()
    relay = remote("streamable-http", tls_server.url, "--insecure")
    relay.initialize()
    assert text_of(relay.call("echo", {"text": "insecure"})) == "insecure"
    relay.close()
    assert "NOT verified" in relay.stderr


def test_https_through_a_connect_tunnel(tls_server, remote, proxy, certs):
    prx = proxy()
    env = clean_env(HTTPS_PROXY=prx.url)
    relay = remote("streamable-http", tls_server.url, "--cacert", str(certs / "ca.pem"), env=env)
    relay.initialize()
    assert text_of(relay.call("echo", {"text": "tunnelled"})) == "tunnelled"
    relay.close()
    assert prx.log and prx.log[0][0] == "CONNECT" and prx.log[0][1] == "127.0.0.1:%d" % tls_server.port


def test_a_client_that_does_not_read_slows_a_remote_server_down(server, tmp_path):
    """Backpressure over HTTP: the worker stops reading the answer stream, TCP holds the server back."""
    srv = server(sessions=False)
    argv = [sys.executable, PROXY, "streamable-http", "--url", srv.url, "--output-dir", str(tmp_path / "spill"),
            "--max-response-chars", "0", "--max-buffer-bytes", str(1 << 20)]
    proc, send = raw_session(argv, env=clean_env())
    size, count = 1 << 20, 40
    try:
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
              "params": {"name": "flood_events", "arguments": {"count": count, "size": size, "id": 2}}})
        last, stable_since = -1, time.monotonic()
        while time.monotonic() - stable_since < 1.0:
            time.sleep(0.05)
            if srv.flood_sent != last:
                last, stable_since = srv.flood_sent, time.monotonic()
        # 1 MiB queued for us, a pipe, the socket buffers of loopback TCP: far fewer than 40.
        assert 0 < last < count * 3 // 4, last
        for n in range(1, count + 1):
            assert json.loads(proc.stdout.readline())["params"]["data"] == "%06d" % n + "F" * size
        assert json.loads(proc.stdout.readline())["id"] == 2
    finally:
        proc.stdin.close()
        proc.wait(15)
        proc.stdout.close()
