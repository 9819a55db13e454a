"""Runs one conformance scenario against a client command and reads back its checks.

The suite is ``node <prefix>/node_modules/@modelcontextprotocol/conformance/dist/index.js``
(installed by tests/run_interop.py; OCX_CONFORMANCE_NODE and OCX_CONFORMANCE_PREFIX
say where).  ``client --command CMD --scenario S -o DIR`` starts the scenario's
servers, runs ``CMD <server url>`` and writes ``DIR/<scenario>-<time>/checks.json``:
a list of checks, each with a ``status`` of SUCCESS, FAILURE, WARNING, INFO or SKIPPED.
"""
import concurrent.futures
import functools
import glob
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
NODE = os.environ.get("OCX_CONFORMANCE_NODE", "")
PREFIX = os.environ.get("OCX_CONFORMANCE_PREFIX", "")
SUITE = os.path.join(PREFIX, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
SCENARIO_TIMEOUT_MS = 20000   # the suite kills the client then; the clients give up at 15 s on their own
OUTCOMES = {}   # scenario -> {"relay": Outcome, "direct": Outcome}, for the closing table
BATCHES = []    # what each side-by-side batch was and how long it took, for the closing table
AUTH_WORKERS = 4   # auth/* scenarios run this many at a time: logins side by side must not collide
RELAY_CLIENT = [sys.executable, os.path.join(HERE, "client.py")]
DIRECT_CLIENT = [sys.executable, os.path.join(HERE, "direct_client.py")]


def available():
    return bool(NODE) and os.path.exists(SUITE)


@functools.lru_cache(maxsize=None)
def client_scenarios():
    """The client scenarios `list` prints (section "Client scenarios"), in its order."""
    out = subprocess.run([NODE, SUITE, "list"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         timeout=60, check=True).stdout.decode("utf-8", "replace")
    scenarios, in_client = [], False
    for line in out.splitlines():
        if line.startswith("Client scenarios"):
            in_client = True
        elif line and not line.startswith(" "):
            in_client = False
        elif in_client and line.strip().startswith("- "):
            scenarios.append(line.strip()[2:].split()[0])
    return tuple(scenarios)


class Outcome:
    """One scenario run: counts by status, the failed and warned check ids, and the client's stderr."""

    def __init__(self, scenario, checks, status, seconds, stderr):
        self.scenario = scenario
        self.passed = sum(1 for c in checks if c.get("status") == "SUCCESS")
        self.failures = [c.get("id", "?") for c in checks if c.get("status") == "FAILURE"]
        self.failure_texts = ["%s (%s)" % (c.get("id", "?"), (c.get("description") or "")[:160])
                              for c in checks if c.get("status") == "FAILURE"]
        self.warnings = [c.get("id", "?") for c in checks if c.get("status") == "WARNING"]
        self.status = status
        self.seconds = seconds
        self.stderr = stderr
        self.ok = bool(checks) and not self.failures

    def cell(self):
        text = "%s %d/%d" % ("PASS" if self.ok else "FAIL", self.passed, self.passed + len(self.failures))
        if self.warnings:
            text += " w%d" % len(self.warnings)
        return text

    def why(self):
        """The failed checks, and the client's last stderr lines (where a relay explains itself)."""
        tail = [line[:240] for line in self.stderr.splitlines() if line.strip()][-3:]
        return "failed checks %s; client stderr, last lines: %s" % (
            "; ".join(self.failure_texts) or "(no checks recorded)", " | ".join(reversed(tail)))


def run(scenario, client, env=None):
    """Run SCENARIO with the CLIENT argv; returns an Outcome (bounded by the suite's timeout + 15 s)."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="ocx-conformance-run-") as workdir:
        command = " ".join(shlex.quote(arg) for arg in client)
        try:
            status = subprocess.run([NODE, SUITE, "client", "--command", command, "--scenario", scenario,
                                     "--timeout", str(SCENARIO_TIMEOUT_MS), "-o", "results"],
                                    cwd=workdir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    timeout=SCENARIO_TIMEOUT_MS / 1000 + 15).returncode
        except subprocess.TimeoutExpired:
            status = 124
        checks, stderr = [], ""
        for path in glob.glob(os.path.join(workdir, "results", "**", "checks.json"), recursive=True):
            with open(path) as f:
                checks = json.load(f)
            stderr_path = os.path.join(os.path.dirname(path), "stderr.txt")
            if os.path.exists(stderr_path):
                with open(stderr_path, errors="replace") as f:
                    stderr = f.read()
    return Outcome(scenario, checks, status, time.monotonic() - started, stderr)


def run_side_by_side(scenarios, client, workers=AUTH_WORKERS):
    """Run every one of SCENARIOS with CLIENT, WORKERS at a time: {scenario: Outcome}."""
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        return dict(zip(scenarios, pool.map(lambda scenario: run(scenario, client), scenarios)))
