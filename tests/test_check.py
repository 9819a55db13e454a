"""The check section: fetching a catalog as a client would (eras, transports, pages, files) and the report."""
import json
import os
import re
import subprocess
import sys

import pytest

from helpers import CATALOG_SERVER as SERVER, CATALOGS, PROXY, RelayProcess, run_check

import ocx_proxy as op

def pointers(report, severity=None):
    return [(f["pointer"], f["severity"]) for f in report["findings"] if severity in (None, f["severity"])]


def only(report, severity):
    return [f for f in report["findings"] if f["severity"] == severity]


def test_clean_catalog_exits_0_with_no_findings():
    status, report, _, _ = run_check("clean")
    assert status == 0 and report["findings"] == []
    assert report["counts"] == {"tools": 2, "prompts": 1, "resources": 0, "resourceTemplates": 0}
    assert report["server"] == {"name": "catalog", "version": "1"} and report["protocolVersion"] == "2025-11-25"
    assert set(report["timings"]) == {"server/discover", "initialize", "tools/list", "prompts/list"}
    assert report["cursorMcpToolsBytes"] > 0 and report["summary"] == {"error": 0, "warning": 0, "info": 0}


def test_pagination_collects_all_pages():
    _, report, _, _ = run_check("many_tools")
    assert report["counts"]["tools"] == 60 and report["timings"]["tools/list"]["pages"] == 2


def test_server_name_defaults_to_server_info():
    _, report, _, _ = run_check("long_name", server_name=None)
    cursor = [f for f in report["findings"] if f["clients"] == ["cursor"]][0]
    assert "'catalog'" in cursor["message"]


def test_human_report_groups_by_tool():
    proc = subprocess.run([sys.executable, PROXY, "check", "stdio", "--", sys.executable, SERVER,
                           os.path.join(CATALOGS, "required_missing.json")], stdout=subprocess.PIPE, timeout=60)
    text = proc.stdout.decode("utf-8")
    assert proc.returncode == 1
    assert 'tool "a"' in text and "/tools/0/inputSchema/required/1" in text and "1 errors" in text


def test_reports_print_what_a_server_names_escaped_and_cut(tmp_path):
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps({"initialize": {"serverInfo": {"name": "srv\x1b]0;pwned\x07", "version": "1\u2028x"}},
                                   "tools": [{"name": "t\x9b2J\nerror   /forged", "inputSchema": {"type": "object"}},
                                             {"name": "n" * 100000, "inputSchema": {"type": "object"}}]}))
    args = [sys.executable, PROXY, "check", "stdio", "--", sys.executable, SERVER, str(catalog)]
    text = subprocess.run(args, stdout=subprocess.PIPE, timeout=60).stdout.decode("utf-8")
    text = text.replace("\r\n", "\n")   # Windows prints lines ending in \r\n (a text stream)
    assert "ocx-proxy check: srv\\x1b]0;pwned\\x07 1\\u2028x" in text and 'tool "t\\x9b2J\\nerror   /forged"' in text
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]", text)
    assert not [line for line in text.splitlines() if line.startswith("error")]
    assert max(len(line) for line in text.splitlines()) < 2100 and "(100000 characters)" in text
    printed = subprocess.run(args[:3] + ["--json"] + args[3:], stdout=subprocess.PIPE, timeout=60).stdout.decode("utf-8")
    assert not re.search("[\x7f-\x9f\u2028\u2029]", printed)
    assert json.loads(printed)["server"]["version"] == "1\u2028x"


def test_file_mode(tmp_path):
    path = tmp_path / "tools.json"
    path.write_text(json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": [
        {"name": "x", "inputSchema": {"type": "object", "required": "x"}}]}}))
    proc = subprocess.run([sys.executable, PROXY, "check", "--file", str(path), "--json", "--server-name", "s"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    report = json.loads(proc.stdout)
    assert proc.returncode == 1 and pointers(report) == [("/tools/0/inputSchema/required", "error")]
    array = tmp_path / "array.json"
    array.write_text(json.dumps([{"name": "ok", "inputSchema": {"type": "object"}}]))
    proc = subprocess.run([sys.executable, PROXY, "check", "--file", str(array)], stdout=subprocess.PIPE, timeout=30)
    assert proc.returncode == 0 and b"pass --server-name" in proc.stdout


@pytest.mark.parametrize("args,status,needle", [
    (["check", "stdio", "--", "/nonexistent/binary"], 2, "could not start"),
    (["check", "--file", "/nonexistent/file.json"], 2, "cannot read"),
    (["check"], 2, "either --file"),
    (["check", "--timeout", "1", "stdio", "--", sys.executable, "-c", "import time; time.sleep(30)"], 2, "within 1 s"),
])
def test_connection_failures_exit_2_with_the_reason(args, status, needle):
    proc = subprocess.run([sys.executable, PROXY] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    err = proc.stderr.decode("utf-8")
    assert proc.returncode == status and needle in err and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1


def test_json_report_schema_is_stable():
    _, report, _, _ = run_check("required_missing")
    assert sorted(report) == ["client", "counts", "cursorMcpToolsBytes", "findings", "protocol", "protocolVersion",
                              "server", "summary", "timings", "version"]
    assert sorted(report["findings"][0]) == ["clients", "message", "pointer", "severity", "tool"]
    assert report["version"] == 1


# -- eras: server/discover first, initialize as the fallback --------------------

# What check declares by default (2025-11-25 ClientCapabilities; 2026-07-28 roots has no listChanged).
FULL_CAPABILITIES = {"roots": {"listChanged": True}, "sampling": {}, "elicitation": {"form": {}, "url": {}}}

@pytest.mark.parametrize("era", ["dual", "modern"])
def test_modern_server_is_checked_without_initialize(tmp_path, era):
    status, report, err, log = run_check("clean", era=era, server_name=None, spec_dir=tmp_path)
    assert status == 0 and report["findings"] == [], err
    assert [(r["method"], r["version"]) for r in log] == [
        ("server/discover", "2026-07-28"), ("tools/list", "2026-07-28"), ("prompts/list", "2026-07-28")]
    assert report["protocol"] == {"era": "modern", "requested": "2026-07-28", "version": "2026-07-28",
                                  "supported": ["2026-07-28", "2025-11-25"],
                                  "clientCapabilities": dict(FULL_CAPABILITIES, roots={})}
    assert report["protocolVersion"] == "2026-07-28" and report["server"] == {"name": "catalog", "version": "1"}
    assert report["counts"] == {"tools": 2, "prompts": 1, "resources": 0, "resourceTemplates": 0}
    assert set(report["timings"]) == {"server/discover", "tools/list", "prompts/list"}


def test_legacy_server_refusing_discover_is_checked_with_initialize(tmp_path):
    status, report, err, log = run_check("clean", server_name=None, spec_dir=tmp_path)
    assert status == 0 and report["findings"] == [], err
    assert [r["method"] for r in log] == ["server/discover", "initialize", "tools/list", "prompts/list"]
    assert [r["version"] for r in log] == ["2026-07-28", None, None, None]
    assert report["protocol"] == {"era": "legacy", "requested": "2025-11-25", "version": "2025-11-25",
                                  "supported": None, "clientCapabilities": FULL_CAPABILITIES}


def test_legacy_server_that_never_answers_discover_costs_only_the_probe(tmp_path):
    status, report, err, log = run_check("clean", "--timeout", "1", discover_error="silent",
                                         server_name=None, spec_dir=tmp_path)
    assert status == 0 and report["protocol"]["era"] == "legacy", err
    assert [r["method"] for r in log] == ["server/discover", "initialize", "tools/list", "prompts/list"]
    assert 1000 <= report["timings"]["server/discover"] < 3000


@pytest.mark.parametrize("options,requested,supported", [
    ({"discover_error": -32022, "supported": ["2025-06-18", "2025-03-26"]}, "2025-06-18", ["2025-06-18", "2025-03-26"]),
    ({"era": "dual", "supported": ["2025-06-18"]}, "2025-06-18", ["2025-06-18"]),
], ids=["unsupported-version-error", "discover-lists-only-legacy"])
def test_versions_the_server_names_choose_the_initialize_version(tmp_path, options, requested, supported):
    status, report, err, log = run_check("clean", **options, server_name=None, spec_dir=tmp_path)
    assert status == 0, err
    assert [r["method"] for r in log] == ["server/discover", "initialize", "tools/list", "prompts/list"]
    assert report["protocol"] == {"era": "legacy", "requested": requested, "version": requested,
                                  "supported": supported, "clientCapabilities": FULL_CAPABILITIES}


def test_discover_result_without_capabilities_or_server_name_is_a_finding(tmp_path):
    status, report, err, _ = run_check("clean", era="modern", discover={"capabilities": None, "_meta": {}},
                                       server_name=None, spec_dir=tmp_path)
    assert status == 1 and report["server"] is None, err
    assert pointers(report) == [("/discover/capabilities", "error"),
                                ("/discover/_meta/io.modelcontextprotocol~1serverInfo", "info")]


def test_server_supporting_no_version_we_know_exits_2(tmp_path):
    status, report, err, _ = run_check("clean", era="modern", supported=["2099-01-01"],
                                       server_name=None, spec_dir=tmp_path)
    assert status == 2 and report is None and len(err.splitlines()) == 1 and "Traceback" not in err
    assert "the server supports protocol 2099-01-01" in err, err


def test_human_report_names_the_era_and_the_supported_versions(tmp_path):
    spec = tmp_path / "spec.json"
    for era, line in (("dual", "  protocol 2026-07-28, modern era (server/discover); "
                               "server supports 2026-07-28, 2025-11-25"),
                      ("legacy", "  protocol 2025-11-25, legacy era (initialize); no server/discover result")):
        spec.write_text(json.dumps({"tools": [], "era": era}))
        proc = subprocess.run([sys.executable, PROXY, "check", "stdio", "--", sys.executable, SERVER, str(spec)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.decode("utf-8").splitlines()[1] == line


# -- remote transports ----------------------------------------------------------

def check_env():
    return {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}


@pytest.mark.parametrize("transport,path", [("streamable-http", "/mcp"), ("sse", "/sse"), ("auto", "/mcp")])
def test_check_over_remote_transports(http_server, transport, path):
    srv = http_server()
    proc = subprocess.run([sys.executable, PROXY, "check", "--json", transport, "--url", srv.base + path],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60, env=check_env())
    assert proc.returncode in (0, 1), proc.stderr
    report = json.loads(proc.stdout)
    assert report["server"]["name"] == "http-fixture" and report["counts"]["tools"] > 0
    assert "tools/list" in report["timings"]


@pytest.mark.parametrize("era,reply", [("modern", "sse"), ("modern", "json"), ("dual", "sse")])
def test_check_over_streamable_http_speaks_the_modern_era_when_the_server_does(http_server, era, reply):
    # The transport derives the 2026 headers from each request's _meta: the fixture answers
    # 400 -32020 to a request whose headers do not match, and -32022 to one with no version.
    srv = http_server(era=era, reply=reply)
    proc = subprocess.run([sys.executable, PROXY, "check", "--json", "streamable-http", "--url", srv.base + "/mcp"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60, env=check_env())
    assert proc.returncode in (0, 1), proc.stderr
    report = json.loads(proc.stdout)
    assert report["protocol"]["era"] == "modern" and report["protocol"]["version"] == "2026-07-28"
    assert "2026-07-28" in report["protocol"]["supported"] and report["counts"]["tools"] > 0
    assert "initialize" not in report["timings"] and b"Traceback" not in proc.stderr


def test_check_leaves_out_modern_tools_with_invalid_x_mcp_header_annotations(http_server):
    # The transport's tools/list rewrite (Upstream.rewrites) runs for check too: check is its client.
    srv = http_server(era="modern", reply="json")
    proc = subprocess.run([sys.executable, PROXY, "check", "--json", "streamable-http", "--url", srv.base + "/mcp"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60, env=check_env())
    report = json.loads(proc.stdout)
    assert report["counts"]["tools"] == 4, proc.stderr
    err = proc.stderr.decode()
    assert all("left out the tool %r" % name in err for name in ("bad_number", "bad_items", "bad_duplicate")), err


def test_check_remote_connection_failure_exits_2(http_server):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.run([sys.executable, PROXY, "check", "--timeout", "5", "streamable-http", "--url",
                           "http://127.0.0.1:%d/mcp" % port], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=60, env=check_env())
    err = proc.stderr.decode()
    assert proc.returncode == 2 and "could not get the catalog" in err and "Traceback" not in err, err


def nested_in_schema(levels):
    return b'[{"name":"a","inputSchema":{"type":"object","properties":{"x":' + b"[" * levels + \
        b"]" * levels + b"}}}]"


@pytest.mark.parametrize("content,needle", [
    (b'[{"name":"a","inputSchema":{"type":"object","default":NaN}}]', "NaN"),
    (b'[{"name":"a","inputSchema":{"type":"object","maximum":1e999}}]', "1e999"),
    (b'{"result":{"tools":[{"name":"a","inputSchema":{"type":"object","minimum":-Infinity}}]}}', "-Infinity"),
    (b'[{"name":"a","inputSchema":{"type":"object","maximum":1' + b"0" * 400 + b'}}]', "range of a double"),
    (b'[{"name":"a","description":"\\udc00","inputSchema":{"type":"object"}}]', "lone surrogate"),
    (b"[" * 100000 + b"]" * 100000, "nested too deeply"),
    (nested_in_schema(500), "nested too deeply"),  # parses, but the rules walk it recursively
], ids=["nan", "inf", "minus-infinity", "400-digits", "lone-surrogate", "100000-levels", "500-levels"])
def test_file_mode_bad_json_exits_2_with_one_line(tmp_path, content, needle):
    path = tmp_path / "tools.json"
    path.write_bytes(content)
    for extra in ([], ["--json"]):
        proc = subprocess.run([sys.executable, PROXY, "check", "--file", str(path)] + extra,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
        err = proc.stderr.decode("utf-8")
        assert proc.returncode == 2 and proc.stdout == b"", err
        assert err.startswith("ocx-proxy check: could not get the catalog: ") and needle in err, err
        assert len(err.splitlines()) == 1


def test_file_mode_schema_nested_within_the_limit_is_checked(tmp_path):
    path = tmp_path / "tools.json"
    path.write_bytes(nested_in_schema(150))
    proc = subprocess.run([sys.executable, PROXY, "check", "--json", "--file", str(path)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    assert proc.returncode == 1, proc.stderr  # a finding (Cursor's Value depth), not a crash
    assert any("nested deeper" in f["message"] for f in json.loads(proc.stdout)["findings"])


def test_file_mode_input_is_bounded(tmp_path):
    catalog = json.dumps([{"name": "ok", "inputSchema": {"type": "object"}}]).encode()
    args = [sys.executable, PROXY, "check", "--file", "-", "--max-input-bytes", str(len(catalog))]
    proc = subprocess.run(args, input=catalog, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    assert proc.returncode == 0, proc.stderr
    proc = subprocess.run(args, input=catalog + b" ", stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    err = proc.stderr.decode("utf-8")
    assert proc.returncode == 2 and len(err.splitlines()) == 1
    assert "larger than %d bytes" % len(catalog) in err and "--max-input-bytes" in err


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_file_mode_stops_reading_an_endless_file_at_the_default_cap():
    proc = subprocess.run([sys.executable, PROXY, "check", "--file", "/dev/zero"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    err = proc.stderr.decode("utf-8")
    assert proc.returncode == 2 and len(err.splitlines()) == 1
    assert "larger than %d bytes" % op.MAX_INPUT_BYTES in err


@pytest.mark.parametrize("tool,needle", [
    ({"name": "a", "inputSchema": {"type": "object", "maximum": float("inf")}}, "Infinity is not a JSON number"),
    ({"name": "a", "inputSchema": {"type": "object", "default": float("nan")}}, "NaN is not a JSON number"),
    (json.loads(nested_in_schema(500))[0], "nested too deeply"),  # before: internal error
], ids=["infinity", "nan", "500-levels"])
def test_server_answer_only_lenient_json_accepts_is_a_finding(tmp_path, tool, needle):
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps({"tools": [tool]}))  # the fixture server writes NaN/Infinity as Python does
    proc = subprocess.run([sys.executable, PROXY, "check", "--json", "stdio", "--", sys.executable, SERVER,
                           str(catalog)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert proc.returncode == 1 and b"internal error" not in proc.stderr, proc.stderr
    findings = [f for f in json.loads(proc.stdout)["findings"] if f["severity"] == "error"]
    assert [f["pointer"] for f in findings] == ["/tools"]
    assert "tools/list failed" in findings[0]["message"] and needle in findings[0]["message"]


# -- McpClient: the client check (and demo) talk through --------------------------

ASKING_SERVER = r"""
import json, sys
def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n"); sys.stdout.flush()
request = json.loads(sys.stdin.readline())
send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "hi"}})
send({"jsonrpc": "2.0", "id": "s1", "method": "ping"})
send({"jsonrpc": "2.0", "id": "s2", "method": "roots/list"})
answers = [json.loads(sys.stdin.readline()), json.loads(sys.stdin.readline())]
send({"jsonrpc": "2.0", "id": request["id"], "result": {"answers": answers}})
sys.stdin.readline()
sys.stderr.write("bye now\n"); sys.stderr.flush()
"""


def stdio_client(script, timeout=10.0):
    env = dict(os.environ)

    def make_upstream(loop, on_line, on_exit):
        return op.StdioUpstream(loop, [sys.executable, "-c", script], env, None, False, on_line, on_exit)

    client = op.McpClient(make_upstream, timeout, "ocx-proxy test")
    client.start()
    return client


def test_client_answers_ping_refuses_other_server_requests_and_counts_notifications():
    client = stdio_client(ASKING_SERVER)
    try:
        answers = client.request("initialize", {})["result"]["answers"]
        assert answers[0] == {"jsonrpc": "2.0", "id": "s1", "result": {}}
        assert answers[1]["id"] == "s2" and answers[1]["error"] == {
            "code": -32601, "message": "ocx-proxy test does not serve roots/list"}
        assert client.notified == 1
        client.notify("notifications/initialized")
        with pytest.raises(op.OcxError) as info:  # the server exits instead of answering
            client.request("tools/list")
        assert "exited with code 0" in str(info.value) and "last stderr: bye now" in str(info.value)
        assert "before answering tools/list" in str(info.value)
    finally:
        client.close()


def test_client_gives_up_after_its_timeout():
    client = stdio_client("import time; time.sleep(30)", timeout=0.3)
    try:
        with pytest.raises(op.OcxError, match="no answer to initialize within 0.3 s"):
            client.request("initialize", {})
    finally:
        client.close()


def test_human_report_gives_one_source_line_per_rule_finding():
    proc = subprocess.run([sys.executable, PROXY, "check", "--server-name", "srv", "stdio", "--", sys.executable,
                           SERVER, os.path.join(CATALOGS, "root_combinator.json")], stdout=subprocess.PIPE, timeout=60)
    lines = proc.stdout.decode("utf-8").splitlines()
    at = lines.index("  error   /tools/0/inputSchema/anyOf")
    assert lines[at + 2] == ("          source: https://github.com/anthropics/claude-code/issues/710; "
                             "seen with Claude Code 0.2.62 to 2.0.29; OpenAI API 2025-06")
    assert sum(line.startswith("          source: ") for line in lines) == 1




# -- check --fitted: the catalog as the relay advertises it ----------------------

UNFIT = os.path.join(CATALOGS, "unfit.json")   # a 70-character name, a dotted name, a type array, $ref, anyOf...


def relay_listing(client):
    """tools/list through a real relay with --client ``client`` (its default options) serving UNFIT."""
    relay = RelayProcess(["--client", client], [UNFIT], server=SERVER)
    try:
        relay.initialize()
        return relay.request("tools/list", {})[0]["result"]["tools"]
    finally:
        relay.close()


@pytest.mark.parametrize("client", ["cursor", "claude-code", "gemini-cli", "gemini-api", "codex"])
def test_fitted_shows_the_catalog_the_relay_lists_and_only_the_findings_it_leaves(client, tmp_path):
    status, before, _, _ = run_check("unfit", "--client", client)
    status, report, _, _ = run_check("unfit", "--client", client, "--fitted")
    fitted = report["fitted"]
    assert fitted["client"] == fitted["profile"] == client
    assert fitted["tools"] == relay_listing(client)         # exactly what the client gets, 3000 characters too
    assert fitted["tools"][0]["description"] == "d" * 3000
    assert report["counts"]["tools"] == 4 and fitted["tools"][-1]["name"] == "read_spilled_output"
    shown = {tool["name"] for tool in fitted["tools"]}
    assert set(fitted["names"]) <= shown and all(name not in shown for name in fitted["names"].values())
    fixed = set(op.fit_rules(client))
    assert {f["rule"] for f in before["findings"]} & fixed
    assert not [f for f in report["findings"] if f.get("rule") in fixed]
    assert status == (1 if only(report, "error") else 0)


def test_fitted_names_map_to_the_server_names_for_cursor():
    status, report, _, _ = run_check("unfit", "--client", "cursor", "--fitted")
    names = report["fitted"]["names"]
    assert sorted(names.values()) == ["files.read",
                                      "find_every_document_in_the_knowledge_base_that_matches_the_query_v2_xy"]
    assert all(len("srv" + name) <= 60 and re.match(r"^[A-Za-z0-9_-]+$", name) for name in names)
    assert status == 0 and report["findings"] == []


def test_fitted_text_prints_the_catalog_and_what_is_left():
    proc = subprocess.run([sys.executable, PROXY, "check", "--client", "claude-code", "--fitted", "--server-name",
                           "srv", "--file", UNFIT], stdout=subprocess.PIPE, timeout=60)
    text = proc.stdout.decode("utf-8")
    assert proc.returncode == 0 and "as ocx-proxy advertises it to claude-code (relay profile claude-code" in text
    assert '(the server\'s "files.read")' in text and "read_spilled_output  (ocx-proxy's reader tool)" in text
    assert '"description":"(arguments: one or more of: requires id | requires q)"' in text   # the root anyOf, merged
    assert "Claude Code cuts it at 2048" in text and "fixed by ocx-proxy" not in text
    assert "0 errors, 1 warnings" in text


def test_fitted_names_a_server_name_too_long_for_the_fitted_names():
    status, report, _, _ = run_check("unfit", "--client", "cursor", "--fitted", server_name="s" * 30)
    assert [f["rule"] for f in only(report, "error")] == ["cursor-name-length"]
    assert "up to 24 characters; 'ssssssssssssssssssssssssssssss' has 30" in only(report, "info")[0]["message"]
    assert status == 1


def test_fitted_of_a_client_without_a_relay_profile_is_the_generic_fitting():
    _, report, _, _ = run_check("unfit", "--client", "vscode", "--fitted")
    assert report["fitted"]["profile"] == "generic" and report["fitted"]["names"] == {}
    assert [f["rule"] for f in report["findings"]] == ["vscode-name-cut"]       # the relay cannot fix it for VS Code


@pytest.mark.parametrize("args,needle", [(["--file", UNFIT], b"give --client CLIENT"),
                                         (["--client", "cursor", "--config", UNFIT], b"not --config")])
def test_fitted_needs_one_client_and_one_catalog(args, needle):
    proc = subprocess.run([sys.executable, PROXY, "check", "--fitted"] + args, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=30)
    assert proc.returncode == 2 and needle in proc.stderr and proc.stderr.count(b"\n") == 1
