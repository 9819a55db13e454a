"""Tool filter section: --allow-tools/--deny-tools (ToolFilter), through a real relay subprocess and ``check``."""
import json
import os
import sys
import time

import pytest

from helpers import (CATALOG_SERVER, CATALOGS, PROXY, STDIO_SERVER, RelayProcess, list_pages, recorded_calls,
                     run_check, run_proxy)


def catalog_file(tmp_path, pages):
    """A tests/fixtures/catalog_server.py spec serving ``pages`` (lists of tool names) as tools/list pages."""
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps({"pages": [[{"name": name, "inputSchema": {"type": "object"}} for name in page]
                                          for page in pages]}))
    return str(path)


def test_filtered_tools_disappear_from_every_page(relay_factory, tmp_path):
    spec = catalog_file(tmp_path, [["get_a", "delete_a"], ["delete_b"], ["get_c", "list_d", "create_e"]])
    relay = relay_factory(["--no-reader-tool", "--allow-tools", "get_*,list_*", "--deny-tools", "list_d"],
                          [spec], server=CATALOG_SERVER)
    relay.initialize()
    assert list_pages(relay) == [(["get_a"], "1"), ([], "2"), (["get_c"], None)]
    relay = relay_factory(["--no-reader-tool", "--deny-tools", "delete_*"], [spec], server=CATALOG_SERVER)
    relay.initialize()
    assert list_pages(relay) == [(["get_a"], "1"), ([], "2"), (["get_c", "list_d", "create_e"], None)]
    assert relay.close() == 0


def test_a_filtered_call_is_refused_and_never_reaches_the_server(relay_factory, tmp_path):
    record = str(tmp_path / "record.ndjson")
    relay = relay_factory(["--deny-tools", "delete_*,drop_*"], ["--record", record, "--extra-tool", "delete_repo"])
    relay.initialize()
    reply = relay.call("delete_repo")
    assert reply["error"]["code"] == -32602
    assert reply["error"]["message"] == "tool 'delete_repo' is not available: ocx-proxy --deny-tools 'delete_*'"
    assert relay.call("echo", {"text": "hi"})["result"]["content"][0]["text"] == "hi"
    assert recorded_calls(record) == ["echo"]
    relay = relay_factory(["--allow-tools", "echo"], ["--record", record])
    relay.initialize()
    reply = relay.call("structured")
    assert reply["error"]["message"] == "tool 'structured' is not available: ocx-proxy --allow-tools 'echo'"
    assert recorded_calls(record) == ["echo"]
    assert relay.close() == 0


def test_a_batch_keeps_its_other_members(relay_factory, tmp_path):
    record = str(tmp_path / "record.ndjson")
    relay = relay_factory(["--deny-tools", "delete_*"], ["--record", record, "--extra-tool", "delete_repo"])
    relay.initialize()
    relay.send([{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "delete_repo"}},
                {"jsonrpc": "2.0", "id": 6, "method": "tools/call",
                 "params": {"name": "echo", "arguments": {"text": "kept"}}}])
    answers = {}
    while len(answers) < 2:
        got = relay.recv()
        for msg in got if isinstance(got, list) else [got]:
            answers[msg["id"]] = msg
    assert "delete_repo" in answers[5]["error"]["message"]
    assert answers[6]["result"]["content"][0]["text"] == "kept"
    assert recorded_calls(record) == ["echo"]
    assert relay.close() == 0


def test_an_allow_list_that_matches_nothing_is_one_warning_naming_the_tools(relay_factory):
    relay = relay_factory(["--allow-tools", "get_*,list_*"], ["--paged"])
    relay.initialize()
    reply, _ = relay.request("tools/list", {})
    assert reply["result"]["nextCursor"] == "page2"
    time.sleep(0.3)
    assert "matches none" not in relay.stderr  # not before the list is complete
    list_pages(relay)
    text = relay.wait_for_stderr("matches none")
    assert "--allow-tools 'get_*,list_*' matches none of the server's 2 tools: echo, structured" in text
    list_pages(relay)
    time.sleep(0.3)
    assert relay.stderr.count("matches none") == 1
    assert relay.close() == 0


def test_environment_twins(relay_factory, tmp_path):
    env = dict(os.environ, OCX_PROXY_ALLOW_TOOLS="get_*, list_*", OCX_PROXY_DENY_TOOLS="list_d")
    spec = catalog_file(tmp_path, [["get_a", "delete_a", "list_d", "list_e"]])
    relay = relay_factory(["--no-reader-tool"], [spec], server=CATALOG_SERVER, env=env)
    relay.initialize()
    assert list_pages(relay) == [(["get_a", "list_e"], None)]
    assert relay.close() == 0
    # the flag wins over its twin
    relay = relay_factory(["--no-reader-tool", "--deny-tools", "get_*"], [spec], server=CATALOG_SERVER, env=env)
    relay.initialize()
    assert list_pages(relay) == [(["list_d", "list_e"], None)]
    assert relay.close() == 0


def test_check_reports_on_the_filtered_catalog():
    status, report, _, _ = run_check("long_name")
    assert status == 1 and report["counts"]["tools"] == 1
    for option in (["--deny-tools", "a_really_*"], ["--allow-tools", "nothing_*"]):
        status, report, _, _ = run_check("long_name", *option)
        assert status == 0 and report["counts"]["tools"] == 0, report
    assert any("--allow-tools 'nothing_*' matches none of the server's 1 tools: a_really_long_tool_name"
               in finding["message"] for finding in report["findings"])
    # given after the transport name, from the environment, and with --file
    args = [sys.executable, PROXY, "check", "--json", "stdio", "--deny-tools", "a_*", "--",
            sys.executable, CATALOG_SERVER, os.path.join(CATALOGS, "long_name.json")]
    assert run_proxy(*args[2:]).returncode == 0
    env = dict(os.environ, OCX_PROXY_DENY_TOOLS="a_*")
    assert run_proxy("check", "--json", "--file", os.path.join(CATALOGS, "long_name.json"), env=env).returncode == 0


def test_bad_globs_are_usage_errors():
    server = ["--", sys.executable, STDIO_SERVER]
    for args in (["stdio", "--allow-tools", "get_*,,list_*"] + server, ["stdio", "--deny-tools", ""] + server,
                 ["check", "--deny-tools", "a,", "--file", os.path.join(CATALOGS, "long_name.json")]):
        result = run_proxy(*args)
        assert result.returncode == 2, result.stderr
        assert b"empty glob" in result.stderr and b"Traceback" not in result.stderr
    env = dict(os.environ, OCX_PROXY_ALLOW_TOOLS=",get_*")
    result = run_proxy("stdio", *server, env=env)
    assert result.returncode == 2 and b"OCX_PROXY_ALLOW_TOOLS" in result.stderr and b"empty glob" in result.stderr
    result = run_proxy("check", "--deny-tools", "a_*", "--config", os.path.join(CATALOGS, "long_name.json"))
    assert result.returncode == 2 and b"--config" in result.stderr


@pytest.mark.parametrize("mode", ["streamable-http", "sse", "auto"])
def test_remote_relays_filter_too(http_server, tmp_path, mode):
    srv = http_server(streamable=mode != "sse")
    argv = [sys.executable, PROXY, mode, "--url", srv.sse_url if mode == "sse" else srv.url,
            "--output-dir", str(tmp_path), "--no-reader-tool", "--deny-tools", "ech?"]
    relay = RelayProcess(command=argv)
    try:
        relay.initialize()
        assert list_pages(relay) == [([], None)]
        assert "--deny-tools 'ech?'" in relay.call("echo", {"text": "x"})["error"]["message"]
        assert not srv.seen("POST", lambda r: b"tools/call" in r["body"])
        assert relay.close() == 0
    finally:
        if relay.proc.poll() is None:
            relay.proc.kill()
