"""Interop tier, SDK 2.x part: servers started once per run, outcomes cached, a table at the end.

Runs in .venv-interop2 (mcp 2.x); the TypeScript v2 scripts run with the
Node.js found by run_interop.py (``OCX_INTEROP_NODE``, packages in
``OCX_INTEROP_NODE_PATH``).  Every (client, server, transport, mode) pair is
run twice: the client via the relay and the same client direct.
"""
import os
import socket
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
ROOT = os.path.dirname(ROOT)
PROXY = os.environ.get("OCX_INTEROP_PROXY") or os.path.join(ROOT, "ocx_proxy.py")
PY_SERVER = os.path.join(HERE, "sdk2_server.py")
TS_DIR = os.path.join(HERE, "ts")
NODE = os.environ.get("OCX_INTEROP_NODE")
NODE_PATH = os.environ.get("OCX_INTEROP_NODE_PATH")

# transport id -> server options (None: stdio)
TRANSPORTS = {
    "stdio": None,
    "http-sse": [],
    "http-json": ["--json"],
    "http-stateless": ["--stateless"],
}
MODES = ["legacy", "auto", "2026-07-28"]

# (client, server, transport, mode, case) -> {"relay": verdict, "direct": verdict}
TABLE = {}


def record(key, path, verdict):
    TABLE.setdefault(key, {})[path] = verdict


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


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
            env = dict(os.environ, NODE_PATH=NODE_PATH or "")
            proc = subprocess.Popen(server_command(server, ["--port", str(port)] + TRANSPORTS[transport]),
                                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
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


@pytest.fixture(scope="session")
def workdir():
    with tempfile.TemporaryDirectory(prefix="ocx-interop2-") as path:
        yield path


@pytest.fixture(scope="session")
def servers(workdir):
    registry = Servers(workdir)
    yield registry
    registry.stop()


def verdict_text(outcome, direct=None):
    if outcome.ok:
        return "pass"
    return "FAIL: " + outcome.detail


def pytest_terminal_summary(terminalreporter):
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
        state = entry.get("relay", "-").split(":")[0].split(" ")[0]
        counts[state] = counts.get(state, 0) + 1
    write("via relay: " + ", ".join("%s %d" % item for item in sorted(counts.items())))
