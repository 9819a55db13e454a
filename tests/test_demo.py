"""Demo: the built-in sample server, and the demo driving the relay in front of it."""
import io
import json
import os
import subprocess
import sys

from helpers import PROXY_SCRIPT

import ocx_proxy as op


def test_demo_runs_the_whole_chain(tmp_path):
    """The README's first command, exactly: ``python ocx_proxy.py demo``."""
    proc = subprocess.run([sys.executable, PROXY_SCRIPT, "demo", "--output-dir", str(tmp_path)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    out, err = proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8")
    assert proc.returncode == 0, err
    assert "spilled" in out and "passed through unchanged" in out
    assert "-> tools/call slow: 4 progress notifications arrived before the result" in out
    assert "relay exited with status 0" in out
    assert any(name.endswith(".png") for name in os.listdir(str(tmp_path)))


def test_demo_server_answers_each_request_with_a_result_or_an_error():
    requests = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2024-11-05"}},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": "p", "method": "ping"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "nope"}},
                {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "fail"}},
                {"jsonrpc": "2.0", "id": 4, "method": "no/such"}]
    stdin = io.BytesIO(b"".join(op.encode_message(r) for r in requests) + b"not json\n")
    stdout = io.BytesIO()
    assert op.run_demo_server(stdin, stdout) == 0
    answers = [json.loads(line) for line in stdout.getvalue().splitlines()]
    assert [a.get("id") for a in answers] == [1, "p", 2, 3, 4, None]
    assert answers[0]["result"]["protocolVersion"] == "2024-11-05"
    assert answers[1] == {"jsonrpc": "2.0", "id": "p", "result": {}}
    assert answers[2]["error"] == {"code": -32602, "message": "Unknown tool: nope"}
    assert answers[3]["result"]["isError"] is True  # a tool error is a result
    assert answers[4]["error"] == {"code": -32601, "message": "Method not found: no/such"}
    assert answers[5]["error"]["code"] == -32700
