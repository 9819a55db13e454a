"""HTTP client helpers: the SSE parser, header options, NO_PROXY, error text, URL redaction, backoff.

Pure functions and small objects, tested without a network; the client end to
end (pool, proxies, TLS) is exercised through the transports in test_remote.py.
"""
import json
import os
import subprocess
import sys
import time

import pytest

from helpers import PROXY_SCRIPT
import ocx_proxy


# ---------------------------------------------------------------------------
# The SSE parser
# ---------------------------------------------------------------------------

SSE_SAMPLE = (b"\xef\xbb\xbf: a comment\r\n"
              b"retry: 2500\r\n"
              b"id: 7\r\n"
              b"event: message\r\n"
              b"data: {\"a\":\r\n"
              b"data:  1}\r\n\r\n"
              b"data:no-space\rdata\r\r"
              b"id: bad\x00id\n"
              b"retry: 12x\n"
              b"event: endpoint\n"
              b"data: /messages?s=1\n\n"
              b"id: 9\ndata:\n\n"
              b"data: unfinished")


def parse_all(chunks):
    parser = ocx_proxy.SseParser()
    events = []
    for chunk in chunks:
        events.extend(parser.feed(chunk))
    return parser, [(e.event, e.data, e.last_id) for e in events]


def test_sse_parser_fields_line_endings_and_any_chunking():
    parser, events = parse_all([SSE_SAMPLE])
    assert events == [
        ("message", b'{"a":\n 1}', "7"),
        ("message", b"no-space\n", "7"),
        ("endpoint", b"/messages?s=1", "7"),
        ("message", b"", "9"),  # a priming event: empty data, but its id counts
    ]
    assert parser.retry == 2500
    assert parser.last_id == "9"
    for size in (1, 2, 3, 5, 7):
        chunks = [SSE_SAMPLE[i:i + size] for i in range(0, len(SSE_SAMPLE), size)]
        assert parse_all(chunks)[1] == events
    # a CR at the end of one chunk and the LF at the start of the next make one line end
    _, split = parse_all([b"data: x\r", b"\ndata: y\r", b"\n\r", b"\n"])
    assert split == [("message", b"x\ny", None)]


def test_sse_parser_keeps_last_id_and_retry_across_reconnects():
    parser = ocx_proxy.SseParser()
    parser.feed(b"id: s1-3\nretry: 50\ndata: {}\n\ndata: half")
    parser.reset_stream()
    assert parser.last_id == "s1-3" and parser.retry == 50
    assert [(e.data, e.last_id) for e in parser.feed(b"data: 1\n\n")] == [(b"1", "s1-3")]


def test_sse_parser_caps_an_event_and_a_line_but_keeps_what_came_before():
    parser = ocx_proxy.SseParser(limit=1000)
    events = parser.feed(b"data: ok\n\n" + b"data: " + b"x" * 600 + b"\n" + b"data: " + b"y" * 600 + b"\n")
    assert [e.data for e in events] == [b"ok"]
    assert parser.error == "upstream sent an SSE event larger than 1000 bytes (--max-message-bytes)"
    assert parser.feed(b"\n\n") == []
    parser = ocx_proxy.SseParser(limit=1000)
    for _ in range(3):
        parser.feed(b": " + b"z" * 400)  # a comment that never ends
    assert parser.error == "upstream sent an SSE line larger than 1000 bytes (--max-message-bytes)"
    parser = ocx_proxy.SseParser(limit=1000)
    parser.feed(b"retry: 99999999999\nid: " + b"i" * 2000 + b"\ndata: {}\n\n")
    assert parser.retry is None and parser.last_id is None and parser.error is None


# ---------------------------------------------------------------------------
# Headers, proxies, error text, URLs
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("text,expected", [
    ("Authorization: Bearer abc==", ("Authorization", "Bearer abc==", True)),
    ("X-Team=a:b", ("X-Team", "a:b", False)),
    ("X-Time: 12=00", ("X-Time", "12=00", False)),
    ("X-Key=${OCX_TEST_SECRET}", ("X-Key", "s3cr3t-value", True)),
    ("x-api-key: plain", ("x-api-key", "plain", True)),
])
def test_header_option_forms(text, expected):
    assert ocx_proxy.parse_header_option(text, {"OCX_TEST_SECRET": "s3cr3t-value"}) == expected


@pytest.mark.parametrize("host,port,no_proxy,expected", [
    ("api.example.com", 443, "example.com", True),
    ("api.example.com", 443, ".example.com", True),
    ("example.com.evil", 443, "example.com", False),
    ("10.1.2.3", 443, "10.0.0.0/8", True),
    ("127.0.0.1", 8080, "127.0.0.1:9090", False),
    ("127.0.0.1", 9090, "localhost, 127.0.0.1:9090", True),
    ("anything", 1, "*", True),
])
def test_no_proxy_rules(host, port, no_proxy, expected):
    assert ocx_proxy.no_proxy_matches(host, port, no_proxy) is expected


def test_http_error_text_quotes_status_and_a_short_excerpt():
    assert ocx_proxy.http_error_text(500, "Internal Server Error", b"boom\n  db down") == \
        "HTTP 500 from upstream: boom db down"
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": "No session"}})
    assert ocx_proxy.http_error_text(400, "Bad Request", body.encode()) == "HTTP 400 from upstream: No session"
    assert ocx_proxy.http_error_text(502, "Bad Gateway", b"") == "HTTP 502 from upstream: Bad Gateway"
    assert len(ocx_proxy.http_error_text(500, "", b"y" * 5000)) < 400


def test_importing_the_module_does_not_load_http_or_tls():
    code = "import sys; import ocx_proxy; print('http.client' in sys.modules or 'ssl' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=os.path.dirname(PROXY_SCRIPT), stdout=subprocess.PIPE)
    assert out.stdout.strip() == b"False"


def test_urls_in_logs_lose_passwords_and_secret_query_values():
    shown = ocx_proxy.redact_url("https://u:pw@h.example/mcp?key=abc123&page=2&access_token=zz9")
    assert "pw" not in shown and "abc123" not in shown and "zz9" not in shown
    assert "page=2" in shown and "h.example/mcp" in shown


def test_backoff_grows_to_a_cap_takes_the_servers_retry_and_gives_up_at_five_failures_in_a_row():
    backoff = ocx_proxy.Backoff()
    assert [backoff.wait() for _ in range(3)] == [1.0, 1.5, 2.25]
    assert backoff.wait(retry=200) == 0.2 and backoff.wait(retry=0) == 0.05   # a retry of 0 must not spin
    assert backoff.wait(retry=10 ** 9) == 30.0 and max(backoff.wait() for _ in range(20)) == 30.0
    assert backoff.wait(deadline=time.monotonic() - 1) == 0.05
    assert [backoff.note_failure() for _ in range(5)] == [False] * 4 + [True]
    backoff.reset()
    assert backoff.wait() == 1.0 and not backoff.note_failure()


@pytest.mark.parametrize("status,permanent", [(400, True), (404, True), (405, True), (408, False),
                                              (429, False), (500, False), (503, False), (302, False)])
def test_permanent_errors_are_the_4xx_but_timeout_and_too_many_requests(status, permanent):
    assert ocx_proxy.permanent_error(status) is permanent


# ---------------------------------------------------------------------------
# 2026-07-28 header values and JSON-RPC error bodies
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("text,header", [
    ("us-west1", "us-west1"),                                  # the spec's table, row by row
    ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
    (" padded ", "=?base64?IHBhZGRlZCA=?="),
    ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
    ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
    ("a b", "a b"), ("tab\there", "=?base64?dGFiCWhlcmU=?="), ("", "=?base64??="), ("=?base64?x", "=?base64?x"),
])
def test_header_values_are_plain_ascii_or_the_base64_form(text, header):
    assert ocx_proxy.header_value(text) == header


@pytest.mark.parametrize("body,kind,code", [
    (b'{"jsonrpc":"2.0","id":null,"error":{"code":-32022,"message":"m","data":{"supported":[]}}}',
     "application/json", -32022),
    (b'{"jsonrpc":"2.0","error":{"code":-32020,"message":"m"}}', "", -32020),
    (b': c\nevent: message\ndata: {"jsonrpc":"2.0","id":1,\ndata: "error":{"code":-32601,"message":"m"}}\n',
     "text/event-stream", -32601),
    (b'{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}}', "application/json", None),
    (b'{"jsonrpc":"2.0","id":1,"error":{"code":true,"message":"m"}}', "application/json", None),
    (b'{"error":"denied"}', "application/json", None),
    (b'{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"m"}}', "text/html", None),
    (b"boom: database down", "text/plain", None), (b"", "", None), (b"\xff{", "application/json", None),
])
def test_jsonrpc_error_bodies_are_recognized(body, kind, code):
    found = ocx_proxy.jsonrpc_error(body, kind)
    assert (found["error"]["code"] if found else None) == code


def test_the_2026_headers_are_ours_to_set():
    for name in ("Mcp-Method", "Mcp-Name", "Mcp-Param-Region"):
        with pytest.raises(ocx_proxy.UsageError, match="itself"):
            ocx_proxy.parse_header_option("%s: x" % name)
