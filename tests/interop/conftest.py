"""Interop tier: the official MCP Python SDK's own client drives ocx_proxy.py.

Runs only in `make interop` (its own venv with the `mcp` SDK pinned); `make test`
never collects this folder.  Every test is parametrized over the upstream
transports; the remote ones are skipped until `ocx_proxy.py streamable-http`
exists (the remote-transport work is merged separately).
"""
import os
import socket
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# OCX_INTEROP_PROXY points the tier at another copy of ocx_proxy.py (e.g. a branch being merged).
PROXY = os.environ.get("OCX_INTEROP_PROXY") or os.path.join(ROOT, "ocx_proxy.py")
SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sdk_server.py")

# (id, relay subcommand, server arguments, URL path)
TRANSPORTS = [
    ("stdio", "stdio", [], None),
    ("sse", "sse", ["--transport", "sse"], "/sse"),
    ("http-sse", "streamable-http", ["--transport", "streamable-http"], "/mcp"),
    ("http-json", "streamable-http", ["--transport", "streamable-http", "--json"], "/mcp"),
    ("http-stateless", "streamable-http", ["--transport", "streamable-http", "--stateless"], "/mcp"),
]

_available = {}


def relay_has(subcommand):
    """Whether ``ocx_proxy.py SUBCOMMAND --help`` works (remote modes arrive in a later merge)."""
    if subcommand not in _available:
        proc = subprocess.run([sys.executable, PROXY, subcommand, "--help"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
        _available[subcommand] = proc.returncode == 0
    return _available[subcommand]


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Upstream:
    """How the relay is started for one transport: ``relay_command()`` gives (command, args)."""

    def __init__(self, name, subcommand, spill_dir, url=None):
        self.name = name
        self.subcommand = subcommand
        self.spill_dir = spill_dir
        self.url = url

    def relay_command(self, *relay_options):
        args = [PROXY, self.subcommand, "--output-dir", self.spill_dir] + list(relay_options)
        if self.url:
            args += ["--url", self.url]
        else:
            args += ["--", sys.executable, SERVER]
        return sys.executable, args

    @property
    def notifications_supported(self):
        """The SDK server in JSON-response mode drops notifications related to a request."""
        return self.name != "http-json"

    @property
    def server_requests_supported(self):
        """Server->client requests need a stream back: not on JSON-only or stateless HTTP."""
        return self.name not in ("http-json", "http-stateless")


@pytest.fixture(params=TRANSPORTS, ids=[t[0] for t in TRANSPORTS])
def upstream(request, tmp_path):
    name, subcommand, server_args, path = request.param
    spill_dir = str(tmp_path / "spill")
    if path is None:
        yield Upstream(name, subcommand, spill_dir)
        return
    if not relay_has("streamable-http") or not relay_has(subcommand):
        pytest.skip("ocx_proxy.py %s is not available yet (remote transports not merged); "
                    "this test runs once `python ocx_proxy.py %s --help` works" % (subcommand, subcommand))
    port = free_port()
    log = open(str(tmp_path / "server.log"), "wb")
    server = subprocess.Popen([sys.executable, SERVER, "--port", str(port)] + server_args,
                              stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("SDK server did not start; see %s" % log.name)
                time.sleep(0.05)
        yield Upstream(name, subcommand, spill_dir, "http://127.0.0.1:%d%s" % (port, path))
    finally:
        server.terminate()
        try:
            server.wait(timeout=5)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def pytest_terminal_summary(terminalreporter):
    missing = sorted(name for name, ok in _available.items() if not ok)
    if missing:
        terminalreporter.write_line(
            "interop: remote-transport tests skipped: `ocx_proxy.py %s --help` fails "
            "(remote transports not merged yet); stdio tests ran" % " / ".join(missing))
