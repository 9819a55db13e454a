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
    python3 measure_clocks.py codex-first RUNS [cold]
        Codex's first turn via the relay, RUNS times: in one folder (the catalog cache is warm after the first
        run), or "cold": each run in a new folder (no catalog cache, as a new user)

Run from this folder with the tier's Node first on PATH, as run_interop.py does.  Prints one line per run.
"""
import os
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
