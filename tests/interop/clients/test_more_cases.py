"""Real CLIs, beyond the four results: a pattern read, capture's printed config (a server ignoring EOF:
test_lifecycle.py).

- pattern: via the relay, the model searches the spilled big text with the reader's ``pattern``
  argument and must find its last line;
- capture: the CLI starts ``ocx_proxy.py capture`` with the entry ``capture --print-config CLIENT``
  printed (its command line, name and tool), the model calls the catalog's tool, the call is recorded;

Each outcome goes to ``outcomes.MORE`` and is printed after the main table.
"""
import json
import os
import subprocess
import sys

import pytest

import harness
import model_server
import outcomes
import tools_server
from outcomes import CLIENTS
from test_clients import need

HERE = os.path.dirname(os.path.abspath(__file__))
CAPTURE_TOOL = "lookup_order"


class PatternScript(model_server.Script):
    """After the spilled result, one reader call with ``pattern`` = the end mark (then stop)."""

    def decide(self, tool_names, outputs, body=None):
        if outputs and model_server.READER in outputs[-1][0]:
            self.tools_seen = list(tool_names)
            self.pages.append(outputs[-1][1])
            return ("text", "done")
        step = super().decide(tool_names, outputs, body)
        if step[0] == "call" and model_server.READER in step[1]:
            return ("call", step[1], {"id": step[2]["id"], "pattern": tools_server.END_MARK})
        return step


def workdir(client, case, via_relay):
    path = os.path.join(outcomes.WORKDIR, "more-%s-%s-%s" % (client, case, "relay" if via_relay else "direct"))
    os.makedirs(path)
    return path


@pytest.mark.parametrize("client", CLIENTS)
def test_pattern_read_finds_the_end_via_relay(client):
    need(client)
    where = workdir(client, "pattern", True)
    script = PatternScript("big_text", os.path.join(where, "spill"))
    run = harness.run_client(client, "big_text", True, where, script=script)
    found = "\n".join(outcomes.text_of(page) for page in script.pages)
    outcomes.MORE[(client, "pattern read")] = "%d match page(s), %s" % (
        len(script.pages), "end found" if tools_server.END_MARK in found else "END NOT FOUND")
    assert run.status == 0, run.output[-2000:]
    assert tools_server.END_MARK in found, run.output[-2000:]


def printed_config(client, where):
    """(command argv, calls file) from ``capture --print-config CLIENT`` for a one-tool catalog."""
    catalog = os.path.join(where, "request.json")
    calls = os.path.join(where, "calls.ndjson")
    with open(catalog, "w") as out:
        json.dump({"tools": [{"type": "function", "name": CAPTURE_TOOL, "description": "Look an order up.",
                              "parameters": {"type": "object", "properties": {}}}]}, out)
    proc = subprocess.run([sys.executable, harness.PROXY, "capture", "--catalog", catalog, "--out", calls,
                           "--reply", "deferred", "--server-name", model_server.SERVER, "--print-config", client],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout.decode("utf-8")
    if client == "codex":
        tomllib = pytest.importorskip("tomllib")
        server = tomllib.loads(text)["mcp_servers"][model_server.SERVER]
    else:
        server = json.loads(text)["mcpServers"][model_server.SERVER]
    return [server["command"]] + server["args"], calls


@pytest.mark.parametrize("client", CLIENTS)
def test_capture_with_its_printed_config_records_the_call(client):
    need(client)
    where = workdir(client, "capture", False)
    command, calls = printed_config(client, where)
    # exactly the printed command line: the harness's trailing "--record FILE" is dropped before exec
    server = [sys.executable, "-c", "import os, sys; os.execv(sys.argv[1], sys.argv[1:-2])"] + command
    run = harness.run_client(client, CAPTURE_TOOL, False, where, server=server)
    recorded = []
    if os.path.exists(calls):
        with open(calls) as lines:
            recorded = [json.loads(line) for line in lines if line.strip()]
    names = [record.get("name") for record in recorded]
    outcomes.MORE[(client, "capture --print-config")] = "recorded %s" % (names or "nothing")
    assert run.status == 0, run.output[-2000:]
    assert names == [CAPTURE_TOOL], run.output[-2000:]
