"""Interop tier, SDK 2.x part: where things are, HTTP servers started once per run, the outcome table.

Runs in .venv-interop2 (mcp 2.x); the TypeScript v2 scripts run with the
Node.js found by run_interop.py (``OCX_INTEROP_NODE``, packages in
``OCX_INTEROP_NODE_PREFIX``).  Every (client, server, transport, mode) pair is
run twice: the client via the relay and the same client direct.
"""
import os
import shutil
import socket
import subprocess
import sys
import time

from helpers import INTEROP_PROXY as PROXY, free_port  # noqa: F401  (test_sdk2 takes PROXY from here)

HERE = os.path.dirname(os.path.abspath(__file__))
PY_SERVER = os.path.join(HERE, "sdk2_server.py")
NODE = os.environ.get("OCX_INTEROP_NODE")
# Node resolves ES module imports from the script's own folder upwards (NODE_PATH does not apply),
# so the TypeScript scripts run from a copy inside the npm prefix that holds the packages.
NODE_PREFIX = os.environ.get("OCX_INTEROP_NODE_PREFIX")
TS_DIR = os.path.join(NODE_PREFIX, "ocx-interop") if NODE_PREFIX else None
if TS_DIR:
    os.makedirs(TS_DIR, exist_ok=True)
    for _name in ("client.mjs", "server.mjs"):
        shutil.copyfile(os.path.join(HERE, "ts", _name), os.path.join(TS_DIR, _name))

# transport id -> server options (None: stdio)
TRANSPORTS = {
    "stdio": None,
    "http-sse": [],
    "http-json": ["--json"],
    "http-stateless": ["--stateless"],
}
# ts/server.mjs serves HTTP with createMcpHandler, which is stateless per request in both eras.
TS_TRANSPORTS = ["stdio", "http-sse", "http-json"]
MODES = ["legacy", "auto", "2026-07-28"]

# (client, server, transport, mode, case) -> {"relay": verdict, "direct": verdict}
TABLE = {}


def record(key, path, verdict):
    TABLE.setdefault(key, {})[path] = verdict


def server_command(server, options):
    """The command line that starts SERVER ("py" or "ts") with transport OPTIONS (None: stdio)."""
    if server == "py":
        command = [sys.executable, PY_SERVER]
    else:
        command = [NODE, os.path.join(TS_DIR, "server.mjs")]
    return command + ([] if options is None else options)


class Servers:
    """HTTP servers, started on first use and stopped at the end of the run."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.running = {}

    def url(self, server, transport):
        key = (server, transport)
        if key not in self.running:
            port = free_port()
            log = open(os.path.join(self.workdir, "%s-%s.log" % key), "wb")
            proc = subprocess.Popen(server_command(server, ["--port", str(port)] + TRANSPORTS[transport]),
                                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            deadline = time.monotonic() + 30
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                    break
                except OSError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        proc.kill()
                        raise RuntimeError("%s server (%s) did not start; see %s" % (server, transport, log.name))
                    time.sleep(0.1)
            self.running[key] = (proc, log, "http://127.0.0.1:%d/mcp" % port)
        return self.running[key][2]

    def stop(self):
        for proc, log, _ in self.running.values():
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.close()


def write_table(terminalreporter):
    if not TABLE:
        return
    write = terminalreporter.write_line
    write("")
    write("interop table (client > server, transport, mode, case: via relay | direct)")
    rows = [("client>server", "transport", "mode", "case", "via relay", "direct")]
    for key in sorted(TABLE):
        entry = TABLE[key]
        rows.append(("%s>%s" % key[:2], key[2], key[3], key[4], entry.get("relay", "-"), entry.get("direct", "-")))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        cells = [row[i].ljust(widths[i]) for i in range(4)]
        write("  ".join(cells) + "  | " + row[4][:160] + " | " + row[5][:120])
    counts = {}
    for entry in TABLE.values():
        relay = entry.get("relay", "-")
        state = "xfail (fails direct)" if relay.endswith("(xfail: fails direct)") else relay.split(":")[0]
        counts[state] = counts.get(state, 0) + 1
    write("via relay: " + ", ".join("%s %d" % item for item in sorted(counts.items())))
