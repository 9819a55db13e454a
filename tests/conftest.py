"""Shared test helpers: paths, and the relay run as a real subprocess over real pipes."""
import json
import os
import py_compile
import queue
import subprocess
import sys
import threading
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROXY_SCRIPT = os.path.join(ROOT, "ocx_proxy.py")
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
# Subprocesses run the command line through a launcher that imports ocx_proxy,
# so the bytecode compiled here once is reused instead of compiling the whole
# file at every start (PYTHONDONTWRITEBYTECODE is set on CI machines).
# tests/smoke.py and the README-command tests still run the script itself.
PROXY = os.path.join(FIXTURES, "proxy_main.py")
try:
    py_compile.compile(PROXY_SCRIPT, doraise=True)
except (OSError, py_compile.PyCompileError):
    pass  # a read-only checkout: slower starts, same results
STDIO_SERVER = os.path.join(FIXTURES, "stdio_server.py")
sys.path.insert(0, ROOT)


CATALOGS = os.path.join(FIXTURES, "catalogs")
CATALOG_SERVER = os.path.join(FIXTURES, "catalog_server.py")


def run_check(catalog, *extra, server_name="srv"):
    """``check --json`` on tests/fixtures/catalogs/CATALOG.json served over stdio: (status, report, stderr)."""
    args = [sys.executable, PROXY, "check", "--json"]
    if server_name:
        args += ["--server-name", server_name]
    args += list(extra) + ["stdio", "--", sys.executable, CATALOG_SERVER, os.path.join(CATALOGS, catalog + ".json")]
    proc = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    report = json.loads(proc.stdout.decode("utf-8")) if proc.stdout.strip() else None
    return proc.returncode, report, proc.stderr.decode("utf-8")


def run_proxy(*args, stdin=b"", env=None, timeout=30):
    """Run ``ocx_proxy.py ARGS`` to completion; returns the CompletedProcess (bytes)."""
    return subprocess.run([sys.executable, PROXY] + list(args), input=stdin, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)


def assert_one_line_error(result, status=1):
    """The CLI failed with ``status`` and exactly one ``ocx-proxy...`` line on stderr."""
    assert result.returncode == status, result.stderr
    text = result.stderr.decode()
    assert "Traceback" not in text
    assert text.count("\n") == 1 and text.startswith("ocx-proxy")
    return text


def raw_session(argv, env=None, stderr=subprocess.DEVNULL):
    """Start ``argv`` (a relay) with our own pipes and initialize it; returns (proc, send).

    The test decides when, and whether, to read the relay's stdout (backpressure tests).
    """
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env)

    def send(msg):
        proc.stdin.write(json.dumps(msg).encode() + b"\n")
        proc.stdin.flush()

    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    assert json.loads(proc.stdout.readline())["id"] == 1
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return proc, send


class RelayProcess:
    """``ocx_proxy.py stdio ... -- fixture server`` driven like an MCP client would."""

    def __init__(self, relay_args=(), server_args=(), env=None, server=None, command=None,
                 start_new_session=False):
        server_cmd = [sys.executable, server or STDIO_SERVER] + list(server_args)
        self.argv = command or ([sys.executable, PROXY, "stdio"] + list(relay_args) + ["--"] + server_cmd)
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env, start_new_session=start_new_session)
        self.lines = queue.Queue()
        self.raw_lines = []
        self.stderr_lines = []
        threading.Thread(target=self._read_stdout, daemon=True).start()
        self.stderr_thread = threading.Thread(target=self._read_stderr, daemon=True)
        self.stderr_thread.start()
        self.next_id = 100
        self.backlog = []

    def _read_stdout(self):
        for line in self.proc.stdout:
            self.raw_lines.append(line)
            self.lines.put(line)
        self.lines.put(None)

    def _read_stderr(self):
        for line in self.proc.stderr:
            self.stderr_lines.append(line.decode("utf-8", "replace"))

    @property
    def stderr(self):
        return "".join(self.stderr_lines)

    def send_raw(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, msg):
        self.send_raw(json.dumps(msg).encode("utf-8") + b"\n")

    def recv_raw(self, timeout=10):
        line = self.lines.get(timeout=timeout)
        assert line is not None, "relay closed stdout; stderr:\n" + self.stderr
        return line

    def recv(self, timeout=10):
        return json.loads(self.recv_raw(timeout).decode("utf-8"))

    def request(self, method, params=None, msg_id=None, timeout=10):
        """Send a request and return (response, notifications/requests that came before it)."""
        if msg_id is None:
            self.next_id += 1
            msg_id = self.next_id
        msg = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.wait_for(msg_id, timeout)

    def wait_for(self, msg_id, timeout=10):
        """The response with ``msg_id``; other responses are kept for later calls."""
        for i, msg in enumerate(self.backlog):
            if msg.get("id") == msg_id:
                return self.backlog.pop(i), []
        others = []
        deadline = time.monotonic() + timeout
        while True:
            msg = self.recv(max(0.01, deadline - time.monotonic()))
            if msg.get("id") == msg_id and "method" not in msg:
                return msg, others
            if "method" in msg:
                others.append(msg)
            else:
                self.backlog.append(msg)

    def initialize(self, version="2025-06-18"):
        reply, _ = self.request("initialize", {"protocolVersion": version, "capabilities": {},
                                               "clientInfo": {"name": "test", "version": "1"}}, msg_id=1)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply

    def call(self, name, arguments=None, **kw):
        return self.request("tools/call", {"name": name, "arguments": arguments or {}}, **kw)[0]

    def close(self, timeout=15):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            status = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("relay did not exit after stdin closed; stderr:\n" + self.stderr)
        self.stderr_thread.join(timeout=5)   # its last lines read (a test looks at them next)
        return status


@pytest.fixture(autouse=True)
def cache_home(request, monkeypatch, tmp_path_factory):
    """Relays started without --output-dir keep their files (the catalog cache, spills) in a directory of the
    test session, never in the user's cache: XDG_CACHE_HOME (Linux).  Not in the interop tier, whose real CLIs
    and package managers keep their own caches there."""
    if "interop" not in request.node.nodeid.split("/"):
        home = tmp_path_factory.getbasetemp() / "cache-home"
        home.mkdir(exist_ok=True)
        monkeypatch.setenv("XDG_CACHE_HOME", str(home))


@pytest.fixture
def http_server():
    """Start ``McpHttpServer``s (tests/fixtures/http_servers.py) on 127.0.0.1; all stop at the end."""
    if FIXTURES not in sys.path:
        sys.path.insert(0, FIXTURES)
    import http_servers

    made = []

    def start(**kw):
        srv = http_servers.McpHttpServer(**kw)
        made.append(srv)
        return srv

    yield start
    for srv in made:
        srv.stop()


@pytest.fixture
def relay_factory(tmp_path):
    """Start relays with ``--output-dir`` in tmp_path; all are closed at the end."""
    started = []

    def start(relay_args=(), server_args=(), **kw):
        args = ["--output-dir", str(tmp_path / "spill")] + list(relay_args)
        relay = RelayProcess(args, server_args, **kw)
        started.append(relay)
        return relay

    yield start
    for relay in started:
        if relay.proc.poll() is None:
            relay.proc.kill()
            relay.proc.wait()


def pid_alive(pid):
    if os.name == "nt":   # os.kill(pid, 0) would be TerminateProcess there
        import ocx_proxy
        return ocx_proxy.process_exists(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie still answers kill(0): look at its state.
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


# Hypothesis profiles.  `make compat` runs the whole suite once per Python 3.8-3.13
# and selects the lighter "compat" profile with HYPOTHESIS_PROFILE=compat; tests
# that pin max_examples with @settings keep their own count.
try:
    from hypothesis import settings as _hypothesis_settings
except ImportError:  # pragma: no cover - hypothesis is always installed by the Makefile
    _hypothesis_settings = None
if _hypothesis_settings is not None:
    _hypothesis_settings.register_profile("compat", max_examples=30, deadline=None)
    # No per-example deadline: on a loaded 2-core machine a 100 kB example can take
    # longer than 200 ms, and speed is measured in `make bench`, never in tests.
    _hypothesis_settings.register_profile("suite", deadline=None)
    _hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or "suite")


def preview_body(text):
    """A spill preview without the markers it opens and closes with (``PreviewBuilder.marker``)."""
    assert text.startswith("[ocx-proxy: "), text[:200]
    body = text.split("]\n\n", 1)[1]
    return body[:body.rindex("\n\n[ocx-proxy: ")] if "\n\n[ocx-proxy: " in body else body
