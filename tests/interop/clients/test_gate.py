"""The gate with real CLIs: the scripted model calls ``weather`` with ``{"city": 5, "days": 30}``, which breaks
the tool's schema (gate_server), and we look at what the model got back, via the relay and direct.

- ``--check-arguments refuse``: the model gets a tool error naming /city and /days, and the server never
  sees the call;
- ``annotate`` (the default): the call reaches the server, whose error comes back with /city and /days after its
  own words;
- direct: the server's words alone.

Gemini CLI 0.61.0 checks a call's arguments against the schema itself and answers the model with its first
finding ("params/city must be string"), the call never reaching its MCP server (measured): via the relay too, the
gate never sees it.
"""
import json
import os
import sys

import pytest

import gate_server
import harness
import model_server
import outcomes
from test_clients import need

GATE_CLIENTS = ["codex", "claude-code", "gemini"]
ARGUMENTS = {"city": 5, "days": 30}
CHECKS_ITSELF = {"gemini": "params/city must be string"}   # what the CLI tells the model instead (measured)


def gate_run(client, path, tmp_path):
    """One CLI run (``path``: "refuse", "annotate" or "direct"): (what the model got as text, calls the server got)."""
    calls = str(tmp_path / "calls.jsonl")
    server = [sys.executable, gate_server.__file__, "--calls", calls]
    script = model_server.FitScript([("weather", gate_server.MARK, ARGUMENTS)], str(tmp_path / "spill"))
    relay_args = ["--check-arguments", path] if path != "direct" else []
    run = harness.run_client(client, "weather", path != "direct", str(tmp_path), server, script, relay_args)
    got = json.dumps(script.outputs, ensure_ascii=False)   # what the model got, whatever its wire shape
    reached = []
    if os.path.exists(calls):
        with open(calls) as lines:
            reached = [json.loads(line) for line in lines if line.strip()]
    summary = ("names /city and /days" if "/city" in got and "/days" in got else
               "the server's words only" if gate_server.SERVER_WORDS in got else
               "the CLI's own check" if CHECKS_ITSELF.get(client, "?") in got else "got: %s" % got[:80])
    outcomes.MORE[(client, "gate, %s" % path)] = "%s; the server got %d call(s)" % (summary, len(reached))
    return run, got, reached


def seen_by_the_gate(client, path, tmp_path):
    """``gate_run`` of an installed CLI; None when the CLI checks the arguments itself (asserted as measured)."""
    need(client)
    run, got, reached = gate_run(client, path, tmp_path)
    if client in CHECKS_ITSELF:
        assert CHECKS_ITSELF[client] in got and reached == [], got
        return None
    return run, got, reached


@pytest.mark.parametrize("client", GATE_CLIENTS)
def test_refuse_the_model_gets_the_pointers_and_the_server_nothing(client, tmp_path):
    outcome = seen_by_the_gate(client, "refuse", tmp_path)
    if outcome:
        run, got, reached = outcome
        assert "/city: string, got integer 5" in got and "/days: integer 1..14, got 30" in got, run.output[-2000:]
        assert reached == []


@pytest.mark.parametrize("client", GATE_CLIENTS)
def test_annotate_the_model_gets_the_servers_words_then_the_pointers(client, tmp_path):
    outcome = seen_by_the_gate(client, "annotate", tmp_path)
    if outcome:
        run, got, reached = outcome
        assert reached == [{"name": "weather", "arguments": ARGUMENTS}], run.output[-2000:]
        words = got.find(gate_server.SERVER_WORDS)
        assert 0 <= words < got.find("/city: string, got integer 5") < got.find("/days: integer 1..14"), got


@pytest.mark.parametrize("client", GATE_CLIENTS)
def test_direct_the_model_gets_the_servers_words_alone(client, tmp_path):
    outcome = seen_by_the_gate(client, "direct", tmp_path)
    if outcome:
        run, got, reached = outcome
        assert gate_server.SERVER_WORDS in got and "/city" not in got and len(reached) == 1, got
