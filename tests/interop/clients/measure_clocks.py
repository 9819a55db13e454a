"""By hand (too slow for CI): the clients' real clocks, with clock_server.py and the scripted model, direct.

    python3 measure_clocks.py deadline CLIENT CALL_SECONDS [PROGRESS_EVERY]
        the CLI's own tool-call deadline (nothing set): a call of CALL_SECONDS (with the server's progress
        every PROGRESS_EVERY seconds); prints when the model got the output and whether it was the whole result
    python3 measure_clocks.py startup CLIENT START_DELAY
        how long the CLI waits for a server that answers initialize START_DELAY seconds after it started:
        when its first model request came and whether the server's tools were in it
    python3 measure_clocks.py late CLIENT START_DELAY [TURN_SECONDS] [TURNS]
        whether a server up after turn 1 has its tools offered in a later turn of the same session: the model
        takes TURN_SECONDS (default 15) for each turn and, while clock_report is not offered, calls a tool that
        does not exist (the CLI answers with an error and asks again), up to TURNS (default 8) turns
    python3 measure_clocks.py claude-interactive CALL_SECONDS [BACKGROUND_MS]
        Claude Code without -p (its terminal UI in tmux, the prompt typed in): a call of CALL_SECONDS with
        CLAUDE_CODE_MCP_AUTO_BACKGROUND_MS set to BACKGROUND_MS (default: unset, the CLI's own); prints when
        the model got the call's output, whether it was moved to the background, and whether a later model
        request carried the whole result (Claude Code's task notification)
    python3 measure_clocks.py codex-first RUNS [cold]
        Codex's first turn via the relay, RUNS times: in one folder (the catalog cache is warm after the first
        run), or "cold": each run in a new folder (no catalog cache, as a new user)

Run from this folder with the tier's Node first on PATH, as run_interop.py does.  Prints one line per run.

Method of the figures in tests/README.md ("The clients' clocks", December 2026, the tier's pinned CLI versions):
one CLI at a time, on a shared 2-core machine (load 2.6-3.7).  deadline: a call longer than the CLI's default
deadline.  startup: a server up only after 90 s; a start-up wait includes a few seconds of the CLI's own start, so
two runs differ.  late: a server up after the CLI's wait, the scripted model taking 8-15 s a turn and calling a tool
that does not exist while the server's tools are not offered, so that the session goes on.  codex-first: 20 runs in
one folder and 20 "cold", at load 3.3-3.7 and again at load 1.0-1.4.
"""
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

import test_clocks
from test_clocks import ClockScript, got, turn_one

import harness
import model_server


def direct(client, server_args, timeout, deadline="default"):
    where = tempfile.mkdtemp(prefix="ocx-measure-%s-" % client)
    script = ClockScript(os.path.join(where, "spill"))
    server = test_clocks.SERVER + list(server_args) + ["--log", os.path.join(where, "server.jsonl")]
    result = harness.run_client(client, "clock_report", False, where, server=server, script=script,
                                deadline=deadline, timeout=timeout)
    return result, script


class LateScript(ClockScript):
    """Keeps the session going, a slow turn at a time, until clock_report is offered (``turns``: when each turn
    came and whether it was offered)."""

    def __init__(self, spill_dir, turn_seconds, turns):
        super().__init__(spill_dir)
        self.turn_seconds, self.max_turns, self.turns = turn_seconds, turns, []

    def wants(self, tool_names):
        return bool(tool_names)

    def decide(self, tool_names, outputs, body=None):
        self.tools_seen = list(tool_names)
        target = [n for n in tool_names if n.endswith(self.tool) and model_server.SERVER in n]
        self.turns.append((time.monotonic(), bool(target)))
        answered = [output for name, output in outputs if name.endswith(self.tool)]
        if answered:
            self.received = answered[-1]
            return ("text", "done")
        if target:
            return ("call", target[0], {})
        if len(self.turns) >= self.max_turns:
            return ("text", "done")
        time.sleep(self.turn_seconds)
        return ("call", "no_such_tool_probe", {})


def late(client, delay, turn_seconds, turns):
    where = tempfile.mkdtemp(prefix="ocx-measure-late-%s-" % client)
    script = LateScript(os.path.join(where, "spill"), turn_seconds, turns)
    server = test_clocks.SERVER + ["--start-delay", str(delay), "--log", os.path.join(where, "server.jsonl")]
    result = harness.run_client(client, "clock_report", False, where, server=server, script=script,
                                timeout=delay + turn_seconds * turns + 120)
    return result, script


def claude_interactive(call_seconds, background_ms=None):
    """Claude Code's terminal UI in a tmux session against the scripted model: (the script, seconds from the
    prompt to each model request, whether each request held the whole report, the screen at the end)."""
    where = tempfile.mkdtemp(prefix="ocx-measure-claude-interactive-")
    home, session = os.path.join(where, "home"), "ocx-measure-claude"
    os.makedirs(os.path.join(home, ".claude"))
    script = test_clocks.ClockScript(os.path.join(where, "spill"))
    server = test_clocks.SERVER + ["--call-seconds", str(call_seconds), "--log", os.path.join(where, "server.jsonl")]
    env = dict(harness.base_env(home), TERM="xterm-256color")
    # What the first start would ask in the UI, answered: onboarding done, the API key and this folder trusted.
    state = {"hasCompletedOnboarding": True, "theme": "dark",
             "customApiKeyResponses": {"approved": ["dummy"], "rejected": []},
             "projects": {home: {"hasTrustDialogAccepted": True, "allowedTools": []}}}
    with open(os.path.join(home, ".claude", ".claude.json"), "w") as out:
        json.dump(state, out)
    with model_server.ModelServer(script) as model:
        argv = harness.claude(model.port, harness.mcp_command(False, os.path.join(where, "initialize.jsonl"),
                                                              os.path.join(where, "spill"), server, ()),
                              home, env, deadline="default")
        for option in ("-p", "--output-format"):   # the UI: no prompt on the command line, no JSON output
            del argv[argv.index(option):argv.index(option) + 2]
        if background_ms:
            env["CLAUDE_CODE_MCP_AUTO_BACKGROUND_MS"] = background_ms
        line = "cd %s && exec env -i %s %s" % (shlex.quote(home), " ".join(
            "%s=%s" % (key, shlex.quote(value)) for key, value in env.items()), " ".join(map(shlex.quote, argv)))
        subprocess.run(["tmux", "kill-session", "-t", session], stderr=subprocess.DEVNULL)
        subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "160", "-y", "50", line], check=True)
        try:
            time.sleep(8)   # the UI up, the server listed
            subprocess.run(["tmux", "send-keys", "-t", session, harness.PROMPT], check=True)
            time.sleep(0.5)
            subprocess.run(["tmux", "send-keys", "-t", session, "Enter"], check=True)
            typed = time.monotonic()
            time.sleep(call_seconds + 20)
            screen = subprocess.run(["tmux", "capture-pane", "-p", "-t", session], stdout=subprocess.PIPE,
                                    universal_newlines=True).stdout
        finally:
            subprocess.run(["tmux", "kill-session", "-t", session], stderr=subprocess.DEVNULL)
    requests = [(at - typed, test_clocks.holds_report(json.dumps(body)) or test_clocks.holds_report(
        json.dumps(json.dumps(body)))) for (_, _, body), at in zip(script.requests, script.times)]
    return script, requests, screen


def main(argv):
    what, started = argv[0], time.strftime("%H:%M:%S")
    if what == "deadline":
        client, seconds = argv[1], float(argv[2])
        args = ["--call-seconds", str(seconds)] + (["--progress", argv[3]] if len(argv) > 3 else [])
        result, script = direct(client, args, seconds + 120)
        waited = script.received_at - script.first_at if script.received_at else -1
        print("%s deadline %s call %g s%s: status %s, ran %.0f s, output %.1f s after turn 1: %s"
              % (started, client, seconds, " progress every %s s" % argv[3] if len(argv) > 3 else "", result.status,
                 result.seconds, waited, got(script)), flush=True)
    elif what == "startup":
        client, delay = argv[1], float(argv[2])
        result, script = direct(client, ["--start-delay", str(delay)], delay + 120, deadline=None)
        print("%s startup %s server up after %g s: status %s, %s" % (started, client, delay, result.status,
                                                                    turn_one(result, script)), flush=True)
    elif what == "late":
        client, delay = argv[1], float(argv[2])
        turn_seconds = float(argv[3]) if len(argv) > 3 else 15.0
        result, script = late(client, delay, turn_seconds, int(argv[4]) if len(argv) > 4 else 8)
        turns = ", ".join("%.0f s%s" % (t - result.started, " TOOLS" if offered else "")
                          for t, offered in script.turns)
        print("%s late %s server up after %g s: status %s, turns at %s; %s" % (
            started, client, delay, result.status, turns or "none", got(script)), flush=True)
    elif what == "claude-interactive":
        seconds, background = float(argv[1]), argv[2] if len(argv) > 2 else None
        script, requests, screen = claude_interactive(seconds, background)
        waited = script.received_at - script.first_at if script.received_at else -1
        print("%s claude-interactive call %g s, CLAUDE_CODE_MCP_AUTO_BACKGROUND_MS %s: output %.1f s after turn 1: "
              "%s; model requests at %s" % (
                  started, seconds, background or "unset", waited, got(script), ", ".join(
                      "%.1f s%s" % (at, " (the whole result)" if whole else "") for at, whole in requests)))
        print("\n".join(line for line in screen.splitlines() if line.strip())[-1500:], flush=True)
    elif what == "codex-first":
        where = tempfile.mkdtemp(prefix="ocx-measure-codex-first-")
        offered, cold = 0, argv[2:] == ["cold"]
        for n in range(int(argv[1])):
            if cold:
                where = tempfile.mkdtemp(prefix="ocx-measure-codex-first-")
            result, script = test_clocks.run("codex", "first", True, where)
            offered += script.offered_first()
            print("run %d: %s" % (n + 1, turn_one(result, script)), flush=True)
        print("%s codex first turn via the relay (%s): tools in %d of %s runs; load %s"
              % (started, "cold: a new folder each" if cold else "one folder", offered, argv[1],
                 " ".join(open("/proc/loadavg").read().split()[:3])), flush=True)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
