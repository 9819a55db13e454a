"""check as a full-featured client, as a bare one, and the tools that depend on client capabilities.

Through the real CLI against tests/fixtures/catalog_server.py, which lists extra
tools only to clients declaring a capability and asks the client for roots,
sampling and elicitation after notifications/initialized.
"""
import json
import os
import subprocess
import sys

import pytest

from helpers import CATALOG_SERVER as SERVER, CATALOGS, PROXY, assert_one_line_error, run_check
FULL = ["roots", "sampling", "elicitation"]


def tool(name):
    return {"name": name, "description": "d", "inputSchema": {"type": "object"}}


ASKING = {
    "capability_tools": {"roots": [tool("get_roots")], "sampling": [tool("summarize")],
                         "elicitation": [tool("ask_user")]},
    "server_requests": [{"method": "roots/list"}, {"method": "sampling/createMessage",
                                                   "params": {"messages": [], "maxTokens": 10}},
                        {"method": "elicitation/create", "params": {"mode": "form", "message": "name?",
                                                                    "requestedSchema": {"type": "object"}}},
                        {"method": "ping"}, {"method": "tasks/list"}],
    "await_answers": True,  # tools/list waits for every answer: an unanswered request would hang check
}


def answers(log):
    return {entry["answer"]["id"]: entry["answer"] for entry in log if "answer" in entry}


def test_check_declares_roots_sampling_elicitation_and_answers_the_servers_requests(tmp_path):
    status, report, err, log = run_check("clean", "--timeout", "10", **ASKING, server_name=None, spec_dir=tmp_path)
    assert status == 0 and report["findings"] == [], err
    assert report["counts"]["tools"] == 5
    assert list(report["protocol"]["clientCapabilities"]) == FULL
    got = answers(log)
    assert got["s0"]["result"] == {"roots": []}
    assert got["s1"]["error"] == {"code": -1, "message": "ocx-proxy check declines sampling: it has no model"}
    assert got["s2"]["result"] == {"action": "decline"}
    assert got["s3"]["result"] == {}
    assert got["s4"]["error"]["code"] == -32601  # no tasks declared


def test_bare_declares_nothing_and_refuses_the_servers_requests(tmp_path):
    status, report, err, log = run_check("clean", "--bare", "--timeout", "10", **ASKING,
                                         server_name=None, spec_dir=tmp_path)
    assert status == 0 and report["counts"]["tools"] == 2, err
    assert report["protocol"]["clientCapabilities"] == {}
    got = answers(log)
    assert [got["s%d" % i]["error"]["code"] for i in (0, 1, 2, 4)] == [-32601] * 4
    assert got["s3"]["result"] == {}


@pytest.mark.parametrize("era", ["dual", "modern"])
def test_modern_era_declares_the_capabilities_in_meta(tmp_path, era):
    status, report, err, _ = run_check("clean", era=era, capability_tools=ASKING["capability_tools"],
                                       server_name=None, spec_dir=tmp_path)
    assert status == 0 and report["protocol"]["era"] == "modern", err
    assert report["counts"]["tools"] == 5
    assert report["protocol"]["clientCapabilities"]["roots"] == {}  # 2026-07-28 roots has no listChanged


COMPARED = {"capability_tools": {"sampling": [tool("summarize")], "roots": [tool("get_roots")],
                                 "!elicitation": [tool("legacy_prompt")]}}


def test_compare_capabilities_reports_each_tool_that_appears_or_disappears(tmp_path):
    status, report, err, log = run_check("clean", "--compare-capabilities", **COMPARED,
                                         server_name=None, spec_dir=tmp_path)
    assert status == 0, err
    assert [(f["tool"], f["severity"], f["pointer"]) for f in report["findings"]] == [
        ("get_roots", "info", "/tools/2"), ("summarize", "info", "/tools/3"),
        ("legacy_prompt", "warning", "/tools")]
    messages = [f["message"] for f in report["findings"]]
    assert messages[0].startswith("only listed to clients declaring roots; other clients never see this tool")
    assert messages[1].startswith("only listed to clients declaring sampling;")
    assert messages[2].startswith("not listed to clients declaring elicitation, as full-featured clients do;")
    assert report["protocol"]["listings"] == [
        {"capabilities": FULL, "tools": 4}, {"capabilities": [], "tools": 3},
        {"capabilities": ["roots"], "tools": 4}, {"capabilities": ["sampling"], "tools": 4},
        {"capabilities": ["elicitation"], "tools": 2}]
    assert [entry["method"] for entry in log].count("initialize") == 5  # one session per listing


def test_compare_from_a_bare_listing_points_into_it(tmp_path):
    status, report, err, _ = run_check("clean", "--bare", "--compare-capabilities", **COMPARED,
                                       server_name=None, spec_dir=tmp_path)
    assert status == 0 and report["counts"]["tools"] == 3, err
    assert [(f["tool"], f["pointer"]) for f in report["findings"]] == [
        ("get_roots", "/tools"), ("summarize", "/tools"), ("legacy_prompt", "/tools/2")]


def test_compare_with_the_same_tools_costs_two_sessions_and_finds_nothing(tmp_path):
    status, report, err, log = run_check("clean", "--compare-capabilities", server_name=None, spec_dir=tmp_path)
    assert status == 0 and report["findings"] == [], err
    assert report["protocol"]["listings"] == [{"capabilities": FULL, "tools": 2}, {"capabilities": [], "tools": 2}]
    assert [entry["method"] for entry in log].count("initialize") == 2


def test_human_report_names_what_was_declared_and_each_listing(tmp_path):
    status, text, err, _ = run_check("clean", "--compare-capabilities", **COMPARED, json_report=False,
                                     server_name=None, spec_dir=tmp_path)
    assert status == 0, err
    text = text.replace("\r\n", "\n")   # Windows prints lines ending in \r\n (a text stream)
    assert "  listed declaring roots, sampling, elicitation\n" in text
    assert "  tools listed: 4 declaring roots, sampling, elicitation, 3 declaring nothing, " in text
    assert "tool \"summarize\"\n  info    /tools/3\n          only listed to clients declaring sampling" in text


def test_task_support_required_is_a_warning_for_every_client():
    proc = subprocess.run([sys.executable, PROXY, "check", "--json", "--server-name", "srv", "stdio", "--",
                           sys.executable, SERVER, os.path.join(CATALOGS, "task_required.json")],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    report = json.loads(proc.stdout.decode("utf-8"))
    assert proc.returncode == 0, proc.stderr
    assert [(f["pointer"], f["severity"], f["clients"], f["tool"]) for f in report["findings"]] == [
        ("/tools/1/execution/taskSupport", "warning", ["all"], "research")]
    assert "github/copilot-cli#2538" in report["findings"][0]["message"]


def test_task_support_required_is_found_in_a_saved_catalog_too():
    proc = subprocess.run([sys.executable, PROXY, "check", "--json", "--server-name", "srv", "--file",
                           os.path.join(CATALOGS, "task_required.json")],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert [f["pointer"] for f in json.loads(proc.stdout.decode())["findings"]] == ["/tools/1/execution/taskSupport"]


@pytest.mark.parametrize("flag", ["--bare", "--compare-capabilities"])
def test_capability_flags_with_a_saved_catalog_are_a_usage_error(flag):
    proc = subprocess.run([sys.executable, PROXY, "check", flag, "--file", os.path.join(CATALOGS, "clean.json")],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert "need a server" in assert_one_line_error(proc, 2)
    assert proc.stdout == b""


@pytest.mark.parametrize("transport,path", [("streamable-http", "/mcp"), ("sse", "/sse")])
def test_compare_capabilities_opens_a_new_session_over_remote_transports(http_server, transport, path):
    srv = http_server()
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    proc = subprocess.run([sys.executable, PROXY, "check", "--json", "--compare-capabilities", transport,
                           "--url", srv.base + path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=60, env=env)
    assert proc.returncode in (0, 1), proc.stderr
    report = json.loads(proc.stdout)
    tools = report["counts"]["tools"]
    assert tools > 0 and report["protocol"]["listings"] == [
        {"capabilities": FULL, "tools": tools}, {"capabilities": [], "tools": tools}]


def test_compare_leaves_out_the_tools_the_filter_leaves_out(tmp_path):
    """A tool --deny-tools leaves out was still named by --compare-capabilities (with a pointer into
    the listing before the filter)."""
    status, report, err, _ = run_check("clean", "--compare-capabilities", "--deny-tools", "get_roots", **COMPARED,
                                       server_name=None, spec_dir=tmp_path)
    assert status == 0, err
    assert [(f["tool"], f["pointer"]) for f in report["findings"] if f.get("tool")] == [
        ("summarize", "/tools/2"), ("legacy_prompt", "/tools")]
    assert report["protocol"]["listings"][:2] == [{"capabilities": FULL, "tools": 3}, {"capabilities": [], "tools": 3}]
