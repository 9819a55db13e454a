"""What the tests share that is not a fixture: paths, running ocx_proxy.py to completion, and the one MCP test
client over pipes (``RelayProcess``).  Fixtures live in conftest.py; test files import this module."""
import json
import os
import py_compile
import queue
import socket
import subprocess
import sys
import threading
import time

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
# The ocx_proxy.py the interop tiers run: OCX_INTEROP_PROXY points them at another copy (e.g. a branch being merged).
INTEROP_PROXY = os.environ.get("OCX_INTEROP_PROXY") or PROXY_SCRIPT
CATALOGS = os.path.join(FIXTURES, "catalogs")
CATALOG_SERVER = os.path.join(FIXTURES, "catalog_server.py")
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on (now)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


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


def run_check(catalog, *extra, server_name="srv", json_report=True, spec_dir=None, **served):
    """``check [--json] [--server-name NAME] EXTRA stdio -- catalog_server.py`` serving
    tests/fixtures/catalogs/CATALOG.json: (status, report, stderr, log).  ``report``: the parsed JSON report
    (``json_report``), else the text.  With ``spec_dir``, the catalog is served from a copy there with ``served``
    added (what catalog_server.py takes: era, capability_tools...) and a log of the requests it got: ``log``, one
    dict each ([] without ``spec_dir``)."""
    path = os.path.join(CATALOGS, catalog + ".json")
    if spec_dir is not None:
        with open(path, encoding="utf-8") as handle:
            spec = json.load(handle)
        spec.update(served, log=os.path.join(str(spec_dir), "requests.log"))
        path = os.path.join(str(spec_dir), "spec.json")
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(spec, handle)
    args = [sys.executable, PROXY, "check"] + (["--json"] if json_report else [])
    if server_name:
        args += ["--server-name", server_name]
    args += list(extra) + ["stdio", "--", sys.executable, CATALOG_SERVER, path]
    proc = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    out = proc.stdout.decode("utf-8")
    report = (json.loads(out) if out.strip() else None) if json_report else out
    log = []
    if spec_dir is not None:
        with open(os.path.join(str(spec_dir), "requests.log"), encoding="utf-8") as handle:
            log = [json.loads(line) for line in handle.read().splitlines()]
    return proc.returncode, report, proc.stderr.decode("utf-8"), log


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
    """The MCP test client: ``ocx_proxy.py stdio RELAY_ARGS -- fixture server`` (or any ``command``: capture, a
    remote relay) started over real pipes (``popen``: more Popen keywords) and driven as an MCP client would, every
    wait bounded (``timeout``: seconds for a line, unless a call says otherwise).  ``utf8``: messages go as UTF-8
    JSON, not ASCII-escaped (non-ASCII text travels as its bytes)."""

    def __init__(self, relay_args=(), server_args=(), env=None, server=None, command=None, utf8=False, timeout=10,
                 **popen):
        server_cmd = [sys.executable, server or STDIO_SERVER] + list(server_args)
        self.argv = command or ([sys.executable, PROXY, "stdio"] + list(relay_args) + ["--"] + server_cmd)
        self.utf8 = utf8
        self.timeout = timeout
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env, **popen)
        self.lines = queue.Queue()
        self.raw_lines = []
        self.stderr_chunks = []
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
            self.stderr_chunks.append(line)

    @property
    def stderr_bytes(self):
        return b"".join(self.stderr_chunks)

    @property
    def stderr(self):
        return self.stderr_bytes.decode("utf-8", "replace")

    def wait_for_stderr(self, text, count=1, timeout=5):
        """The relay's stderr once ``text`` is in it ``count`` times (its reader thread is behind the relay), or
        as it is when ``timeout`` seconds have passed."""
        deadline = time.monotonic() + timeout
        while self.stderr.count(text) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.stderr

    def send_raw(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, msg):
        self.send_raw(json.dumps(msg, ensure_ascii=not self.utf8).encode("utf-8") + b"\n")

    def recv_raw(self, timeout=None):
        timeout = self.timeout if timeout is None else timeout
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError("no line from the relay within %s s; stderr:\n%s" % (timeout, self.stderr))
        assert line is not None, "relay closed stdout; stderr:\n" + self.stderr
        return line

    def recv(self, timeout=None):
        return json.loads(self.recv_raw(timeout).decode("utf-8"))

    def no_reply(self, timeout=0.3):
        """True when nothing comes within ``timeout`` seconds (else an AssertionError naming what came)."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            return True
        raise AssertionError("unexpected reply: %r" % line)

    def send_request(self, method, params=None, msg_id=None):
        """Send a request without waiting for its answer; its id."""
        if msg_id is None:
            self.next_id += 1
            msg_id = self.next_id
        msg = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return msg_id

    def request(self, method, params=None, msg_id=None, timeout=None):
        """Send a request and return (response, notifications/requests that came before it)."""
        return self.wait_for(self.send_request(method, params, msg_id), timeout)

    def wait_for(self, msg_id, timeout=None):
        """The response with ``msg_id``; other responses are kept for later calls."""
        for i, msg in enumerate(self.backlog):
            if msg.get("id") == msg_id:
                return self.backlog.pop(i), []
        others = []
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            msg = self.recv(max(0.01, deadline - time.monotonic()))
            if msg.get("id") == msg_id and "method" not in msg:
                return msg, others
            if "method" in msg:
                others.append(msg)
            else:
                self.backlog.append(msg)

    def initialize(self, version="2025-06-18", timeout=None, client="test"):
        """The handshake (``client``: the clientInfo.name it gives); the initialize answer."""
        reply, _ = self.request("initialize", {"protocolVersion": version, "capabilities": {},
                                               "clientInfo": {"name": client, "version": "1"}}, msg_id=1,
                                timeout=timeout)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply

    def call(self, name, arguments=None, **kw):
        """A tools/call and its answer."""
        return self.request("tools/call", {"name": name, "arguments": arguments or {}}, **kw)[0]

    def send_call(self, name, arguments=None):
        """A tools/call sent without waiting (capture leaves calls unanswered): its id.  No ``arguments``: the
        call has none."""
        params = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        return self.send_request("tools/call", params)

    def close(self, timeout=None):
        """Close the relay's stdin as a client leaving does; its exit status (an error if it does not exit)."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            status = self.proc.wait(timeout=max(15, self.timeout) if timeout is None else timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("relay did not exit after stdin closed; stderr:\n" + self.stderr)
        self.stderr_thread.join(timeout=5)   # its last lines read (a test looks at them next)
        return status


def list_pages(relay):
    """Every tools/list page the relay answers: [(tool names, nextCursor)]."""
    pages, cursor = [], None
    while True:
        reply, _ = relay.request("tools/list", {"cursor": cursor} if cursor else {})
        cursor = reply["result"].get("nextCursor")
        pages.append(([tool["name"] for tool in reply["result"]["tools"]], cursor))
        if not cursor:
            return pages


def recorded_calls(path):
    """Names of the tools/call requests the fixture server received (its --record file), batches included."""
    names = []
    with open(path) as handle:
        for line in handle:
            msg = json.loads(line)
            for item in msg if isinstance(msg, list) else [msg]:
                if item.get("method") == "tools/call":
                    names.append(item["params"]["name"])
    return names


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


def preview_body(text):
    """A spill preview without the markers it opens and closes with (``PreviewBuilder.marker``)."""
    assert text.startswith("[ocx-proxy: "), text[:200]
    body = text.split("]\n\n", 1)[1]
    return body[:body.rindex("\n\n[ocx-proxy: ")] if "\n\n[ocx-proxy: " in body else body
