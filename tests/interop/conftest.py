"""Interop tier: the official MCP Python SDK's own client drives ocx_proxy.py.

Runs only in `make interop` (its own venv with the `mcp` SDK pinned); `make test`
never collects this folder.  Every test is parametrized over the upstream
transports.
"""
import os
import socket
import subprocess
import sys
import time

import pytest

from helpers import INTEROP_PROXY as PROXY, free_port

SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sdk_server.py")

# (id, relay subcommand, server arguments, URL path)
TRANSPORTS = [
    ("stdio", "stdio", [], None),
    ("sse", "sse", ["--transport", "sse"], "/sse"),
    ("http-sse", "streamable-http", ["--transport", "streamable-http"], "/mcp"),
    ("http-json", "streamable-http", ["--transport", "streamable-http", "--json"], "/mcp"),
    ("http-stateless", "streamable-http", ["--transport", "streamable-http", "--stateless"], "/mcp"),
]


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
