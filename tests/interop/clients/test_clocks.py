"""The clients' two clocks, with the real CLIs, direct and via the relay (clock_server.py).

- slow start: the server answers initialize 3 s after it started.  Direct: what the CLI offered its model in
  turn 1 (recorded; the tools are there when the ``start_seconds`` fact of ocx_proxy's client table says the CLI
  waits longer than that, checked here).  Via the relay, second start (its catalog cache warm from a first run in the same
  folder): the tools are in turn 1 and the call works.
- long call: the tool answers after 8 s, the CLI's deadline is shortened to 5 s with its own setting
  (harness: Codex ``tool_timeout_sec``, Claude Code and CodeBuddy ``MCP_TOOL_TIMEOUT``, Gemini CLI, Copilot CLI,
  OpenCode and Qwen Code the server entry's ``timeout``); the real deadlines (60 s to 10 min) do not fit CI.
  Direct: the model gets a timeout (recorded).  With progress from the server every second: whether the
  CLI's clock starts again (the ``progress_resets`` fact of ocx_proxy's client table, checked here).  Via
  the relay with ``--detach-after 3 --heartbeat 1``: the model gets the whole result, byte for byte, either
  kept alive by heartbeats (clients whose clock progress resets) or answered early with the detached note
  and then read with the reader tool by a scripted model that knows only the tools' descriptions.
- Codex's first turn via the relay, CODEX_RUNS runs: the relay's tools are in it every time.

The runs go three at a time (they mostly wait on clocks); each outcome is printed after the main table.
A case that fails direct is recorded as what it is, not skipped.
"""
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import threading
import time

import pytest

import harness
import model_server
import outcomes
from outcomes import CLIENTS, CLOCK_CLIENTS, CLOCKS
from test_clients import need
from test_more_cases import plain_text

import clock_server

sys.path.insert(0, harness.ROOT)
import ocx_proxy  # noqa: E402  (the client facts the long-call cases check)

START_DELAY = 3       # seconds the slow server takes before it answers initialize
CALL_SECONDS = 8      # the long call
DEADLINE = 5          # the CLI's tool-call deadline, shortened with its own setting
RELAY_CLOCK = ["--detach-after", "3", "--heartbeat", "1"]
PROGRESS_EVERY = 1    # the server's own progress in the progress case
CODEX_RUNS = 5
RUN_TIMEOUT = 90
READER_CALLS = 4      # Gemini CLI stops a loop of 5 identical calls ("Loop detected")
REPORT = clock_server.report()
SERVER = [sys.executable, clock_server.__file__]
POOL = concurrent.futures.ThreadPoolExecutor(max_workers=3)
FUTURES = {}
FUTURES_LOCK = threading.Lock()
# ocx_proxy's facts of each CLI (its CLIENTS entry; tests/README.md, "The clients' clocks"), which the runs here
# must agree with: progress_resets (direct, with the server's progress every second, whether the CLI's 5-s deadline
# starts again) and start_seconds (direct, whether turn 1 waited for a server up after START_DELAY seconds).
FACTS = {client: ocx_proxy.CLIENTS[ocx_proxy.client_named(client, "relay")].facts for client in CLIENTS}


def holds_report(text):
    """Whether TEXT holds the long call's whole result, byte for byte (as is, or JSON-escaped once)."""
    return REPORT in text or json.dumps(REPORT)[1:-1] in text


class ClockScript(model_server.Script):
    """Turn 1: note the tools offered (``first_tools``, ``first_at``) and call clock_report when offered.  A
    result that is the relay's detached note: the reader is the tool whose description speaks of the
    ``[ocx-proxy: ...]`` note and of `wait`; it is called with the note's id="..." and a `wait`, again while
    its answer says `still running` (at most READER_CALLS calls).  Descriptions only: no name is assumed."""

    def __init__(self, spill_dir):
        super().__init__(clock_server.TOOL, spill_dir)
        self.first_tools = None
        self.first_at = None
        self.first_index = None
        self.reader_calls = 0
        self.call_id = None
        self.received_at = None   # when the call's output came to the model

    def decide(self, tool_names, outputs, body=None):
        if self.first_tools is None:
            self.first_tools, self.first_at = list(tool_names), time.monotonic()
            self.first_index = len(self.requests) - 1   # this request's
        self.tools_seen = list(tool_names)
        if not outputs:
            return super().decide(tool_names, outputs, body)
        descriptions = dict(model_server.offered_descriptions(body), **model_server.searched_descriptions(body))
        reader = next((n for n in tool_names if "[ocx-proxy: ...]" in descriptions.get(n, "")
                       and "`wait`" in descriptions.get(n, "")), None)
        name, output = outputs[-1]
        text = plain_text(output)
        if reader is None or name != reader:
            if self.received is None:
                self.received_at = time.monotonic()
            self.received = output
            found = re.search(r'id="([^"]+)"', text)
            if not found or "still running" not in text:
                return ("text", "done")
            if reader is None:   # a deferred tool (Qwen Code): the model reviews the schemas first
                hidden = [n for n in tool_names if n not in self.revealed and n not in descriptions
                          and model_server.SERVER in n and not n.endswith(clock_server.TOOL)]
                return ("call", hidden[0], {}) if hidden else ("text", "no tool describes the note")
            self.call_id = found.group(1)
        else:
            self.pages.append(output)
            if "still running" not in text or self.reader_calls >= READER_CALLS:
                return ("text", "done")
        self.reader_calls += 1
        return ("call", reader, {"id": self.call_id, "wait": 60})

    def offered_first(self):
        earlier = [body for _, _, body in self.requests[:self.first_index] if body and body.get("tools")]
        return not earlier and any(n.endswith(clock_server.TOOL) for n in self.first_tools or [])

    def texts(self):
        return [plain_text(self.received)] + [plain_text(page) for page in self.pages]


def run(client, case, via_relay, workdir, server_args=(), relay_args=(), deadline=None):
    os.makedirs(workdir, exist_ok=True)
    script = ClockScript(os.path.join(workdir, "spill"))
    server = SERVER + list(server_args) + ["--log", os.path.join(workdir, "server.jsonl")]
    result = harness.run_client(client, clock_server.TOOL, via_relay, workdir, server=server, script=script,
                                relay_args=relay_args, deadline=deadline, timeout=RUN_TIMEOUT)
    return result, script


def turn_one(result, script):
    """How turn 1 went: whether the tools were in it, and when it came after the CLI started.  Turn 1 is the
    first request offering tools (the script's ``decide`` sees only those that offer clock_report in Claude
    Code and Gemini CLI)."""
    first = [(t, body) for (_, _, body), t in zip(script.requests, script.times) if body and body.get("tools")]
    if not first:
        return "no model request with tools (status %s)" % result.status
    at = script.first_at if script.first_at is not None and script.first_at <= first[0][0] else first[0][0]
    return "%s in turn 1 (%.1f s after start)" % ("tools" if script.offered_first() else "NO TOOLS",
                                                  at - result.started)


def got(script):
    """What the model got for the call, in a few words."""
    texts = script.texts()
    if script.received is None:
        return "no tool output"
    if any(holds_report(text) for text in texts):
        how = "whole result" if holds_report(texts[0]) else "whole result via %d reader call(s)" % script.reader_calls
        return how
    return "partial: %r" % (texts[0] or json.dumps(script.received))[:160]


def catalog_files(where):
    folder = os.path.join(where, "spill", ocx_proxy.CATALOG_DIR)
    return sorted(os.listdir(folder)) if os.path.isdir(folder) else []


def warm_up(where, server_args, relay_args):
    """Start the relay as the CLI did (same command line and folder) and list its tools as a client that waits,
    introducing itself as the CLI did: what a first session longer than the server's start leaves behind."""
    record = os.path.join(where, "initialize.jsonl")
    with open(record) as lines:
        info = json.loads(lines.readline()).get("clientInfo")
    server = SERVER + list(server_args) + ["--log", os.path.join(where, "server.jsonl")]
    command = harness.mcp_command(True, record, os.path.join(where, "spill"), server, relay_args)
    messages = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
                 "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": info}},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]
    proc = subprocess.Popen(command, cwd=where, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    try:
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in messages).encode())
        proc.stdin.flush()
        for line in proc.stdout:
            if json.loads(line).get("id") == 2:
                break
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


def case_slow_start(client, via_relay):
    """Direct: one run.  Via the relay: a first start, then a second one with the catalog the first left; a
    CLI that ends before the server is up (Codex) leaves none, so a client that waits lists it in between
    (``warmed``: whether that was needed)."""
    where = os.path.join(outcomes.WORKDIR, "clocks-%s-slow-%s" % (client, "relay" if via_relay else "direct"))
    args = ["--start-delay", str(START_DELAY)]
    relay_args = ["--cwd", where]   # the server's folder is part of the catalog's key: the same for every start
    runs = [run(client, "slow", via_relay, where, args, relay_args)]
    if via_relay:
        warmed = not catalog_files(where)
        if warmed:
            warm_up(where, args, relay_args)
        runs.append(run(client, "slow", via_relay, where, args, relay_args))
        runs.append(warmed)
    return runs


def case_long(client, kind):
    where = os.path.join(outcomes.WORKDIR, "clocks-%s-long-%s" % (client, kind))
    args = ["--call-seconds", str(CALL_SECONDS)]
    if kind == "progress":
        args += ["--progress", str(PROGRESS_EVERY)]
    return run(client, "long", kind == "relay", where, args, RELAY_CLOCK if kind == "relay" else (), DEADLINE)


def case_codex_first_turns():
    where = os.path.join(outcomes.WORKDIR, "clocks-codex-first")
    return [run("codex", "first", True, where) for _ in range(CODEX_RUNS)]


def submit(key, function, *args):
    with FUTURES_LOCK:
        if key not in FUTURES:
            FUTURES[key] = POOL.submit(function, *args)
        return FUTURES[key]


def all_cases():
    """Start every run of this module at once (three at a time); each test then waits for its own."""
    for client in CLIENTS:
        if client in CLOCK_CLIENTS and os.access(harness.binary(client), os.X_OK):
            for kind in ("relay", "direct", "progress"):
                submit((client, "long", kind), case_long, client, kind)
            for via_relay in (True, False):
                submit((client, "slow", via_relay), case_slow_start, client, via_relay)
    if "codex" in CLOCK_CLIENTS and os.access(os.path.join(harness.BIN, "codex"), os.X_OK):
        submit(("codex", "first"), case_codex_first_turns)


def outcome(key, *how):
    all_cases()
    return submit(key, *how).result()


@pytest.mark.parametrize("client", CLIENTS)
def test_slow_start_direct_is_recorded(client):
    need(client)
    result, script = outcome((client, "slow", False), case_slow_start, client, False)[0]
    CLOCKS[(client, "slow start %d s, direct" % START_DELAY)] = turn_one(result, script) + "; " + got(script)
    assert result.status == 0, result.output[-2000:]
    waits = FACTS[client].start_seconds > START_DELAY
    assert script.offered_first() == waits, "%s: turn 1 %s the tools of a server up after %d s; the client facts say " \
        "it waits %d s (start_seconds)" % (client, "had" if script.offered_first() else "lacked", START_DELAY,
                                           FACTS[client].start_seconds)


@pytest.mark.parametrize("client", CLIENTS)
def test_slow_start_via_relay_has_the_tools_in_turn_one(client):
    need(client)
    (first, first_script), (second, script), warmed = outcome((client, "slow", True), case_slow_start, client, True)
    CLOCKS[(client, "slow start %d s, relay, first start" % START_DELAY)] = turn_one(first, first_script) + (
        "; ended before the server was up: catalog listed by a waiting client" if warmed else "")
    CLOCKS[(client, "slow start %d s, relay, second start" % START_DELAY)] = turn_one(second, script) + "; " + got(
        script)
    assert second.status == 0, second.output[-2000:]
    assert script.offered_first(), "second start: turn 1 lacked the relay's tools: %s" % script.first_tools
    assert script.received is not None and holds_report(script.texts()[0]), got(script)


@pytest.mark.parametrize("client", CLIENTS)
def test_long_call_direct_times_out(client):
    need(client)
    result, script = outcome((client, "long", "direct"), case_long, client, "direct")
    CLOCKS[(client, "long call %d s, deadline %d s, direct" % (CALL_SECONDS, DEADLINE))] = got(script)
    assert script.received is not None, "the model got nothing for the call: " + result.output[-2000:]
    assert not any(holds_report(text) for text in script.texts()), \
        "%s waited past its %d-s deadline: the setting no longer shortens it" % (client, DEADLINE)


@pytest.mark.parametrize("client", CLIENTS)
def test_progress_resets_the_deadline_as_the_client_facts_say(client):
    need(client)
    result, script = outcome((client, "long", "progress"), case_long, client, "progress")
    with open(os.path.join(outcomes.WORKDIR, "clocks-%s-long-progress" % client, "server.jsonl")) as lines:
        tokens = [json.loads(line).get("progressToken") for line in lines if '"tools/call"' in line]
    kept = any(holds_report(text) for text in script.texts())
    CLOCKS[(client, "long call, server progress every %d s, direct" % PROGRESS_EVERY)] = "%s; %s" % (
        "progressToken sent" if any(t is not None for t in tokens) else "no progressToken", got(script))
    assert script.received is not None, result.output[-2000:]
    assert kept == FACTS[client].progress_resets, \
        "%s: progress %s its deadline, the client facts say otherwise" % (
            client, "resets" if kept else "does not reset")


@pytest.mark.parametrize("client", CLIENTS)
def test_long_call_via_relay_the_model_gets_the_whole_result(client):
    need(client)
    result, script = outcome((client, "long", "relay"), case_long, client, "relay")
    CLOCKS[(client, "long call %d s, deadline %d s, relay %s" % (CALL_SECONDS, DEADLINE, " ".join(RELAY_CLOCK)))] = \
        got(script) + ("" if script.reader_calls else " (kept alive)")
    assert result.status == 0, result.output[-2000:]
    assert any(holds_report(text) for text in script.texts()), got(script) + "\n" + result.output[-2000:]


def test_codex_first_turn_has_the_relay_tools_every_time():
    need("codex")
    runs = outcome(("codex", "first"), case_codex_first_turns)
    offered = [script.offered_first() for _, script in runs]
    CLOCKS[("codex", "first turn via the relay, %d runs" % CODEX_RUNS)] = "tools in %d of %d (%s)" % (
        sum(offered), len(runs), ", ".join("%.1f s" % (script.first_at - result.started) for result, script in runs
                                           if script.first_at))
    assert all(offered), "turn 1 lacked the relay's tools in %d of %d runs" % (offered.count(False), len(runs))
