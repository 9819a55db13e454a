"""Relay benchmarks: ocx-proxy against the same server reached directly, in one run.

Drives the relay the way an MCP client does (raw newline-delimited JSON-RPC over
pipes) and prints one table.  Every figure is a median over repeated runs, and
the direct connection (client -> server, no relay) is measured in the same run,
interleaved with the relay, so that the "added" column is what the relay costs.

    python tests/bench/bench_relay.py            # about a minute on 2 cores
    python tests/bench/bench_relay.py --quick    # fewer repetitions (a smoke check)
    python tests/bench/bench_relay.py --profile DIR   # also write cProfile stats of the relay
    python tests/bench/bench_relay.py --only-store    # only the token-store rows
    python tests/bench/bench_relay.py --only-startup --old OLD.py   # start-up of another copy beside this one
    python tests/bench/bench_relay.py --only-http     # only the Streamable HTTP rows (and peers)
    python tests/bench/bench_relay.py --only-fit      # only the catalog-fitting rows (500 tools)
    python tests/bench/bench_relay.py --only-clock    # only the heartbeat rows: calls in time, clocks off vs on
    python tests/bench/bench_relay.py --only-catalog  # only the catalog-cache rows (a server slow to start)
    python tests/bench/bench_relay.py --only-gate     # only the gate rows: a 2 KB argument check, a hook round trip

Peers: the Streamable HTTP rows also time mcp-stdio (PyPI, a stdio->HTTP relay
on httpx) against the same server, interleaved, from its own venv
(``--peers DIR``; ``make bench`` installs the pinned version there).  Without
it (no package index) its column says "skipped".

Standard library only.  Not part of the pass/fail test run.
"""
import argparse
import compileall
import http.client
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from urllib.parse import urlsplit

from bench_catalog import catalog

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROXY = os.environ.get("OCX_BENCH_PROXY") or os.path.join(ROOT, "ocx_proxy.py")  # another copy to compare
SERVER = os.path.join(HERE, "bench_server.py")
HTTP_SERVER = os.path.join(HERE, "bench_http_server.py")
HOOK = os.path.join(HERE, "bench_hook.py")
PY = sys.executable
BIG_BYTES = 5000000
HUGE_BYTES = 100000000  # the memory rows: peak RSS must stay under 2x the line + 30 MB

TARGETS = {"startup": 60.0, "rtt": 0.10, "big": 35.0, "rss": 20.0, "http_rtt": 0.40, "store": 0.25,
           "vs_mcp_stdio": 0.8, "fit": 20.0, "clock": 0.02, "check": 0.05, "hook": 0.3}
STORE_SERVERS = 500  # other servers' tokens in the full token directory
FIT_TOOLS = 500      # tools in the catalog of the fitting rows (bench_catalog.py)
FIT_PROFILES = ("cursor", "codex", "gemini-api", "claude-code")  # the relay profiles that fit something
SLOW_START = 1.0     # seconds the server of the catalog-cache rows takes to start (npx -y, uvx: seconds)
# The gate rows: a search tool's arguments, 2 KB of JSON, and the schema its server declares for them.
GATE_ARGUMENTS = {"query": "status:open label:bug " * 8, "limit": 50, "offset": 0, "order": "desc",
                  "fields": ["field_%02d" % n for n in range(32)],
                  "filters": [{"field": "field_%02d" % n, "op": "eq", "value": "value %d" % n} for n in range(28)]}
GATE_SCHEMA = {"type": "object", "additionalProperties": False, "required": ["query"], "properties": {
    "query": {"type": "string", "minLength": 1, "maxLength": 4000},
    "limit": {"type": "integer", "minimum": 1, "maximum": 100}, "offset": {"type": "integer", "minimum": 0},
    "order": {"enum": ["asc", "desc"]},
    "fields": {"type": "array", "items": {"type": "string", "pattern": "^[a-z_0-9]+$"}, "maxItems": 64},
    "filters": {"type": "array", "items": {"$ref": "#/$defs/filter"}}},
    "$defs": {"filter": {"type": "object", "required": ["field", "op"], "additionalProperties": False,
                         "properties": {"field": {"type": "string"}, "op": {"enum": ["eq", "ne", "lt", "gt"]},
                                        "value": {"type": ["string", "number", "boolean"]}}}}}


class Session:
    """One client connection over pipes: to the server directly or through the relay."""

    def __init__(self, argv, stderr_path=None, env=None):
        self.started = time.perf_counter()
        self.stderr = open(stderr_path or os.devnull, "wb")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr, bufsize=1 << 20, env=env)
        self.fd = self.proc.stdin.fileno()
        self.out = self.proc.stdout
        self.next_id = 0

    def send(self, obj):
        data = json.dumps(obj, separators=(",", ":")).encode() + b"\n"
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view):]

    def recv_line(self):
        line = self.out.readline()
        if not line:
            raise RuntimeError("connection closed: %r" % (self.proc.args,))
        return line

    def request(self, method, params=None):
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.recv_line()

    def initialize(self):
        line = self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                           "clientInfo": {"name": "bench", "version": "1"}})
        elapsed = time.perf_counter() - self.started
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert b'"result"' in line, line[:300]
        return elapsed

    def cpu_seconds(self):
        """user + system CPU time the process we started has used so far."""
        try:
            with open("/proc/%d/stat" % self.proc.pid) as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / float(os.sysconf("SC_CLK_TCK"))
        except (OSError, ValueError, IndexError):
            return None

    def peak_rss_mb(self):
        """VmHWM (peak resident set) of the process we started: the relay, or the direct server."""
        try:
            with open("/proc/%d/status" % self.proc.pid) as handle:
                for row in handle:
                    if row.startswith("VmHWM:"):
                        return int(row.split()[1]) / 1024.0
        except OSError:
            pass
        return None

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.out.close()
        self.stderr.close()


class Bench:
    def __init__(self, args):
        self.args = args
        self.tmp = tempfile.mkdtemp(prefix="ocx-bench-")
        self.spill_dir = os.path.join(self.tmp, "spill")
        self.profile_count = 0
        # remote relays look for tokens on every request: in an empty directory of ours, never the user's
        self.auth_dir = os.path.join(self.tmp, "auth-empty")
        os.environ["OCX_PROXY_AUTH_DIR"] = self.auth_dir

    # -- argv --------------------------------------------------------------

    def relay_prefix(self, *options, proxy=PROXY):
        prefix = [PY]
        if self.args.profile:
            self.profile_count += 1
            os.makedirs(self.args.profile, exist_ok=True)
            prefix += ["-m", "cProfile", "-o",
                       os.path.join(self.args.profile, "relay-%03d.prof" % self.profile_count)]
        return prefix + [proxy] + list(options)

    def direct_argv(self, *server_args):
        return [PY, SERVER] + list(server_args)

    def relay_argv(self, *options, proxy=PROXY, server_args=(), output_dir=None):
        return self.relay_prefix("stdio", "--output-dir", output_dir or self.spill_dir, "--log-level", "warning",
                                 *options, proxy=proxy) + ["--", PY, SERVER] + list(server_args)

    def installed_relay_argv(self, proxy=PROXY, site="site", server_args=(), output_dir=None):
        """The relay as the ``ocx-proxy`` console script runs it: an import with cached bytecode."""
        site = os.path.join(self.tmp, site)
        if not os.path.isdir(site):
            os.makedirs(site)
            shutil.copy(proxy, os.path.join(site, "ocx_proxy.py"))
            compileall.compile_dir(site, quiet=1)
        code = "import sys; sys.path.insert(0, %r); import ocx_proxy; sys.exit(ocx_proxy.main())" % site
        return [PY, "-c", code, "stdio", "--output-dir", output_dir or self.spill_dir, "--log-level", "warning",
                "--", PY, SERVER] + list(server_args)

    def disk_write_ms(self, runs=5):
        """Writing two new 5 MB files into the spill directory's file system (what a spill must do)."""
        os.makedirs(self.spill_dir, exist_ok=True)
        data = b"x" * BIG_BYTES
        times = []
        for n in range(runs):
            t0 = time.perf_counter()
            for part in ("json", "txt"):
                fd = os.open(os.path.join(self.spill_dir, "disk%d.%s" % (n, part)),
                             os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                os.write(fd, data)
                os.close(fd)
            times.append((time.perf_counter() - t0) * 1000.0)
        shutil.rmtree(self.spill_dir, ignore_errors=True)
        return statistics.median(times)

    # -- measurements ------------------------------------------------------

    def startup(self, argv):
        session = Session(argv)
        try:
            return session.initialize() * 1000.0
        finally:
            session.close()

    def first_list(self, argv):
        """ms from spawn to the answer of the first tools/list (after initialize), as a client starts a server."""
        session = Session(argv)
        try:
            session.initialize()
            line = session.request("tools/list")
            took = (time.perf_counter() - session.started) * 1000.0
            if b'"tools"' not in line:
                raise RuntimeError("no tools/list answer: %r" % line[:300])
            return took
        finally:
            session.close()

    def round_trips(self, argv, count, env=None, meta=None, arguments=None):
        session = Session(argv, env=env)
        try:
            session.initialize()
            params = {"name": "small", "arguments": arguments or {"text": "hello"}}
            if arguments:   # listed first: the gate checks calls against what tools/list declared
                session.request("tools/list")
                answer = session.request("tools/call", params)
                if b'"isError"' in answer:
                    raise RuntimeError("the call was refused: %r" % answer[:300])
            if meta:
                params["_meta"] = meta
            for _ in range(200):  # warm-up
                session.request("tools/call", params)
            samples = []
            clock = time.perf_counter
            cpu0 = session.cpu_seconds()
            for _ in range(count):
                t0 = clock()
                session.request("tools/call", params)
                samples.append(clock() - t0)
            cpu1 = session.cpu_seconds()
            self.last_cpu_ms = (cpu1 - cpu0) * 1000.0 / count if cpu0 is not None and cpu1 is not None else None
            samples.sort()
            p50 = samples[len(samples) // 2] * 1000.0
            p99 = samples[int(len(samples) * 0.99)] * 1000.0
            return p50, p99, session.peak_rss_mb()
        finally:
            session.close()

    def big_calls(self, argv, count, expect_spill, size=BIG_BYTES, warm_up=True, json_text=False):
        session = Session(argv)
        try:
            session.initialize()
            params = {"name": "big", "arguments": {"bytes": size, "json": json_text}}
            if warm_up:
                session.request("tools/call", params)  # the server builds and caches the text
            times = []
            size = 0
            for _ in range(count):
                t0 = time.perf_counter()
                line = session.request("tools/call", params)
                times.append((time.perf_counter() - t0) * 1000.0)
                size = len(line)
            spilled = b"ocx-proxy/spill" in line
            if spilled != expect_spill:
                raise RuntimeError("expected spill=%s, got a %d-byte line" % (expect_spill, size))
            return statistics.median(times), size, session.peak_rss_mb()
        finally:
            session.close()
            shutil.rmtree(self.spill_dir, ignore_errors=True)

    # -- Streamable HTTP -----------------------------------------------------

    def http_server(self, sse=False):
        """The bench HTTP server, started: (process, its /mcp URL); ``sse``: it answers with event streams."""
        server = subprocess.Popen([PY, HTTP_SERVER] + (["--sse"] if sse else []), stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        return server, "http://127.0.0.1:%d/mcp" % int(server.stdout.readline().split()[1])

    def http_relay_argv(self, url):
        return self.relay_prefix("streamable-http", "--url", url, "--output-dir", self.spill_dir,
                                 "--log-level", "warning")

    def peer_argv(self, url):
        """mcp-stdio relaying stdio to ``url``, from the peers' venv; None when it is not installed."""
        exe = os.path.join(self.args.peers, "bin", "mcp-stdio")
        return [exe, url] if os.access(exe, os.X_OK) else None

    def peer_version(self):
        argv = self.peer_argv("http://127.0.0.1/")
        try:
            out = subprocess.run(argv[:1] + ["--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 timeout=20).stdout.decode("utf-8", "replace").split()
        except (OSError, subprocess.TimeoutExpired):
            return "?"
        return out[-1] if out else "?"

    def http_round_trips(self, runs, count, sse):
        """(p50, p99) of each run, directly, through ocx-proxy and through mcp-stdio (an empty list
        when it is not installed), interleaved so that all three see the same machine."""
        server, url = self.http_server(sse)
        peer = self.peer_argv(url)
        try:
            direct, relay, peers = [], [], []
            for _ in range(runs):
                direct.append(self._http_direct(url, count))
                relay.append(self.round_trips(self.http_relay_argv(url), count)[:2])
                if peer is not None:
                    peers.append(self.round_trips(peer, count)[:2])
            return direct, relay, peers
        finally:
            stop(server)

    def http_rows(self, rows, progress):
        """Streamable HTTP round trips, answers as JSON and as event streams (what the SDK servers
        send), ocx-proxy next to mcp-stdio, and ocx's added p50 as a share of mcp-stdio's (target:
        at most 0.8)."""
        for sse, answers in ((False, "JSON"), (True, "SSE")):
            progress("Streamable HTTP round trips, %s answers, %d runs x %d calls"
                     % (answers, self.args.runs, self.args.calls))
            direct, relay, peers = self.http_round_trips(self.args.runs, self.args.calls, sse)
            added = {}
            for i, label in enumerate(("p50", "p99")):
                d = statistics.median([x[i] for x in direct])
                r = statistics.median([x[i] for x in relay])
                added[label] = statistics.median([x[i] for x in peers]) - d if peers else "skipped"
                rows.append(("Streamable HTTP round trip %s, %s answers" % (label, answers), "ms", d, r, r - d,
                             TARGETS["http_rtt"], added[label]))
            spread = "  ".join("%s %.3f-%.3f" % (name, min(x[0] for x in runs), max(x[0] for x in runs))
                               for name, runs in (("direct", direct), ("relay", relay), ("mcp-stdio", peers))
                               if runs)
            rows.append(("  info: p50 of each run, lowest-highest (ms)", spread))
            share = "HTTP p50 added, %s answers: relay / mcp-stdio" % answers
            if not peers:
                rows.append((share, "skipped (mcp-stdio is not installed: `make bench` installs it when the "
                                    "package index answers)"))
                continue
            ours = statistics.median([x[0] for x in relay]) - statistics.median([x[0] for x in direct])
            rows.append((share + " " + self.peer_version(), "x", None,
                         ours / added["p50"] if added["p50"] > 0 else None, None, TARGETS["vs_mcp_stdio"]))

    # -- the client's clock: heartbeats and detaching -------------------------

    def clock_rows(self, rows, progress):
        """Small tools/call round trips that carry a progressToken and finish in time, through the relay with its
        clocks off (--heartbeat 0 --detach-after 0) and on (the generic profile's: a heartbeat timer and a detach
        timer per call, the token watched), interleaved run by run: they must cost the same."""
        a = self.args
        progress("calls with a progressToken, clocks off | on: %d runs x %d calls" % (a.runs, a.calls))
        argvs = {"off": self.relay_argv("--heartbeat", "0", "--detach-after", "0"), "on": self.relay_argv()}
        times, cpu = {"off": [], "on": []}, {"off": [], "on": []}
        for _ in range(a.runs):
            for name, argv in argvs.items():
                times[name].append(self.round_trips(argv, a.calls, meta={"progressToken": "bench"})[:2])
                cpu[name].append(self.last_cpu_ms)
        for i, label in enumerate(("p50", "p99")):
            off, on = (statistics.median([x[i] for x in times[name]]) for name in ("off", "on"))
            rows.append(("tools/call in time, progressToken, %s: clocks off | on (heartbeat 15 s, detach 50 s)"
                         % label, "ms", off, on, on - off, TARGETS["clock"] if label == "p50" else None))
        if None not in cpu["off"] + cpu["on"]:
            off, on = statistics.median(cpu["off"]), statistics.median(cpu["on"])
            rows.append(("  info: relay CPU per round trip, clocks off | on", "ms", off, on, on - off, None))

    # -- the gate -----------------------------------------------------------

    def gate_rows(self, rows, progress):
        """tools/call round trips carrying a 2 KB argument object its tool's schema describes, through the relay with
        the gate off, with --check-arguments refuse and annotate (the default: it checks too), and with a negotiate
        hook that allows every call, interleaved run by run; then the check alone, in this process."""
        a = self.args
        path = os.path.join(self.tmp, "gate-tools.json")
        with open(path, "w") as handle:
            json.dump([{"name": "small", "inputSchema": GATE_SCHEMA}], handle)
        server = ("--tools", path)
        argvs = {"off": self.relay_argv("--check-arguments", "off", server_args=server),
                 "refuse": self.relay_argv("--check-arguments", "refuse", server_args=server),
                 "annotate": self.relay_argv("--check-arguments", "annotate", server_args=server),
                 "hook": self.relay_argv("--check-arguments", "off", "--negotiate", "%s %s" % (PY, HOOK),
                                         server_args=server)}
        size = len(json.dumps(GATE_ARGUMENTS, separators=(",", ":")))
        values = json.dumps(GATE_ARGUMENTS).count(":") + json.dumps(GATE_ARGUMENTS["fields"]).count(",") + 1
        progress("tools/call with %d bytes of arguments, gate off | refuse | annotate | hook: %d runs x %d calls"
                 % (size, a.runs, a.calls))
        times, cpu = {name: [] for name in argvs}, {name: [] for name in argvs}
        for _ in range(a.runs):
            for name, argv in argvs.items():
                times[name].append(self.round_trips(argv, a.calls, arguments=GATE_ARGUMENTS)[:2])
                cpu[name].append(self.last_cpu_ms)
        for i, label in enumerate(("p50", "p99")):
            off, refuse, annotate, hook = (statistics.median([x[i] for x in times[name]]) for name in argvs)
            rows.append(("tools/call, %d-byte arguments (%d values), %s: gate off | --check-arguments refuse"
                         % (size, values, label),
                         "ms", off, refuse, refuse - off, TARGETS["check"] if label == "p50" else None))
            rows.append(("tools/call, %s: gate off | --check-arguments annotate (the default)" % label, "ms", off,
                         annotate, annotate - off, TARGETS["check"] if label == "p50" else None))
            rows.append(("tools/call, %s: gate off | --negotiate (a hook allowing every call)" % label, "ms", off,
                         hook, hook - off, TARGETS["hook"] if label == "p50" else None))
        if None not in cpu["off"] + cpu["refuse"] + cpu["annotate"] + cpu["hook"]:
            off, refuse, annotate, hook = (statistics.median(cpu[name]) for name in argvs)
            rows.append(("  info: relay CPU per round trip, gate off | refuse", "ms", off, refuse, refuse - off, None))
            rows.append(("  info: relay CPU per round trip, gate off | annotate", "ms", off, annotate, annotate - off,
                         None))
            rows.append(("  info: relay CPU per round trip, gate off | hook", "ms", off, hook, hook - off, None))
        proxy = load_proxy()
        check = proxy.SchemaCheck(GATE_SCHEMA)
        assert check.findings(GATE_ARGUMENTS) == []
        alone = []
        for _ in range(2000):
            t0 = time.perf_counter()
            check.findings(GATE_ARGUMENTS)
            alone.append((time.perf_counter() - t0) * 1000.0)
        rows.append(("  info: the check of those arguments alone, in-process", "ms", None, statistics.median(alone),
                     None, None))

    # -- the token store -----------------------------------------------------

    def token_store(self, proxy, path, servers):
        """A token directory holding the tokens of ``servers`` other servers, each stored by the
        relay's own code (``proxy``: the ocx_proxy module measured, so its own file layout)."""
        os.makedirs(path, mode=0o700, exist_ok=True)
        for n in range(servers):
            url, issuer = "http://mcp%d.example/mcp" % n, "http://auth%d.example" % n
            client = proxy.OAuthClient(proxy.RemoteConfig(url, environ={}), proxy.OAuthSettings(auth_dir=path))
            client._save_tokens({"access_token": "at-%d" % n, "refresh_token": "rt-%d" % n, "expires_in": 3600},
                                issuer, {"token_endpoint": issuer + "/token"}, {"client_id": "client-%d" % n})
        return path

    def lookup_us(self, proxy, store, url, seconds=0.3):
        """Median cost of ``OAuthClient.access_token()`` (what a remote relay asks before every
        request) for ``url``, which holds no tokens, in ``store``: microseconds."""
        client = proxy.OAuthClient(proxy.RemoteConfig(url, environ={}), proxy.OAuthSettings(auth_dir=store))
        samples, clock = [], time.perf_counter
        end = clock() + seconds
        while clock() < end or len(samples) < 20:
            t0 = clock()
            assert client.access_token() is None
            samples.append(clock() - t0)
        return statistics.median(samples) * 1e6

    def store_rows(self, rows, runs, count):
        """Round trips to a server that needs no login, the token directory empty, then holding
        other servers' tokens: finding a server's tokens must cost the same either way."""
        proxy = load_proxy()
        empty = self.token_store(proxy, self.auth_dir, 0)
        full = self.token_store(proxy, os.path.join(self.tmp, "auth-full"), STORE_SERVERS)
        server, url = self.http_server()
        try:
            empty_ms, full_ms, empty_us, full_us = [], [], [], []
            for _ in range(runs):
                for store, out in ((empty, empty_ms), (full, full_ms)):
                    env = dict(os.environ, OCX_PROXY_AUTH_DIR=store)
                    out.append(self.round_trips(self.http_relay_argv(url), count, env)[0])
                empty_us.append(self.lookup_us(proxy, empty, url))
                full_us.append(self.lookup_us(proxy, full, url))
        finally:
            stop(server)
        e, f = statistics.median(empty_ms), statistics.median(full_ms)
        rows.append(("HTTP round trip p50, token store: empty | %d servers" % STORE_SERVERS, "ms", e, f, f - e,
                     TARGETS["store"]))
        rows.append(("  info: token lookup per request: empty | %d servers" % STORE_SERVERS, "us",
                     statistics.median(empty_us), statistics.median(full_us), None, None))

    # -- catalog fitting -----------------------------------------------------

    def tools_lists(self, argv, count):
        """(median ms of ``count`` tools/list calls after two to warm up, the tools of the last answer)."""
        session = Session(argv)
        try:
            session.initialize()
            for _ in range(2):
                session.request("tools/list")
            times = []
            for _ in range(count):
                t0 = time.perf_counter()
                line = session.request("tools/list")
                times.append((time.perf_counter() - t0) * 1000.0)
            return statistics.median(times), json.loads(line)["result"]["tools"]
        finally:
            session.close()

    def fit_rows(self, rows, progress):
        """One tools/list of a FIT_TOOLS-tool catalog for each profile that fits something: direct,
        through the relay with --no-fit-tools, and fitted (the default), interleaved round by round;
        then fit_tools alone, in this process, so that the relay's share and the fitting's are told apart."""
        a = self.args
        tools = catalog(FIT_TOOLS)
        path = os.path.join(self.tmp, "catalog.json")
        with open(path, "w") as handle:
            json.dump(tools, handle)
        server = ("--tools", path)
        argvs = {"direct": self.direct_argv(*server)}
        for client in FIT_PROFILES:  # every list the server's (no catalog cache checking it meanwhile)
            argvs[client, "off"] = self.relay_argv("--client", client, "--no-fit-tools", "--no-catalog-cache",
                                                   server_args=server)
            argvs[client, "on"] = self.relay_argv("--client", client, "--no-catalog-cache", server_args=server)
        progress("tools/list of %d tools, %d profiles: %d rounds x %d lists"
                 % (FIT_TOOLS, len(FIT_PROFILES), a.fit_runs, a.fit_lists))
        times, answers = {name: [] for name in argvs}, {}
        for _ in range(a.fit_runs):
            for name, argv in argvs.items():
                took, answers[name] = self.tools_lists(argv, a.fit_lists)
                times[name].append(took)
        progress("fit_tools in-process, %d runs per profile" % a.fit_calls)
        proxy = load_proxy()
        size = len(json.dumps({"tools": tools}, separators=(",", ":")))
        d = statistics.median(times["direct"])
        for client in FIT_PROFILES:
            off, on = statistics.median(times[client, "off"]), statistics.median(times[client, "on"])
            listed = {tool["name"] for tool in answers[client, "off"]}  # the server's and the reader tool
            renamed = sum(tool["name"] not in listed for tool in answers[client, "on"])
            fitted, changed = proxy.fit_tools(tools, client)
            if renamed != len(changed) or len(fitted) != FIT_TOOLS:
                raise RuntimeError("%s: the relay renamed %d tools, fit_tools %d" % (client, renamed, len(changed)))
            alone = []
            for _ in range(a.fit_calls):
                t0 = time.perf_counter()
                proxy.fit_tools(tools, client)
                alone.append((time.perf_counter() - t0) * 1000.0)
            rows.append(("tools/list of %d tools (%d kB), %s, --no-fit-tools" % (FIT_TOOLS, size // 1000, client),
                         "ms", d, off, off - d, None))
            rows.append(("tools/list of %d tools, %s, fitted (%d renamed)" % (FIT_TOOLS, client, renamed),
                         "ms", d, on, on - d, None))
            rows.append(("  fitting's cost: fitted | --no-fit-tools, %s" % client, "ms", off, on, on - off,
                         TARGETS["fit"]))
            rows.append(("  info: fit_tools alone, in-process, %s" % client, "ms", None,
                         statistics.median(alone), None, None))
        rows.append(("  info: json.loads + json.dumps of that tools/list, in-process", "ms", None,
                     json_round_trip_ms(tools, a.fit_calls), None, None))

    def _http_direct(self, url, count):
        conn = http.client.HTTPConnection(urlsplit(url).netloc, timeout=10)
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        counter = [0]

        def post(method, params=None):
            counter[0] += 1
            msg = {"jsonrpc": "2.0", "id": counter[0], "method": method}
            if params is not None:
                msg["params"] = params
            conn.request("POST", "/mcp", json.dumps(msg, separators=(",", ":")), headers)
            response = conn.getresponse()
            body = response.read()
            session_id = response.getheader("Mcp-Session-Id")
            if session_id:
                headers["Mcp-Session-Id"] = session_id
            return body

        post("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                            "clientInfo": {"name": "bench", "version": "1"}})
        headers["MCP-Protocol-Version"] = "2025-06-18"
        params = {"name": "small", "arguments": {"text": "hello"}}
        for _ in range(200):
            post("tools/call", params)
        samples = []
        for _ in range(count):
            t0 = time.perf_counter()
            post("tools/call", params)
            samples.append(time.perf_counter() - t0)
        conn.close()
        samples.sort()
        return samples[len(samples) // 2] * 1000.0, samples[int(len(samples) * 0.99)] * 1000.0

    def huge_rows(self, rows, progress):
        """Peak RSS for one 100 MB line, passed through and spilled, next to the direct server's."""
        progress("100 MB results: direct, passed through, spilled")
        t_direct, size_huge, rss_direct = self.big_calls(self.direct_argv(), 1, False, HUGE_BYTES, False)
        t_pass, size_pass, rss_pass = self.big_calls(self.relay_argv("--max-response-chars", "0"), 1, False,
                                                     HUGE_BYTES, False)
        if size_pass != size_huge:
            raise RuntimeError("pass-through changed the 100 MB line: %d vs %d bytes" % (size_pass, size_huge))
        t_spill, _, rss_spill = self.big_calls(self.relay_argv(), 1, True, HUGE_BYTES, False)
        line_mb = size_huge / 1e6
        bound = 2 * line_mb + 30
        rows.append(("%.0f MB result passed through: peak RSS (server | relay)" % line_mb, "MB",
                     rss_direct, rss_pass, None, bound))
        rows.append(("%.0f MB result spilled: peak RSS (server | relay)" % line_mb, "MB",
                     rss_direct, rss_spill, None, bound))
        rows.append(("  info: %.0f MB call, passed through" % line_mb, "ms", t_direct, t_pass, t_pass - t_direct,
                     None))
        rows.append(("  info: %.0f MB call, spilled" % line_mb, "ms", t_direct, t_spill, t_spill - t_direct, None))

    # -- the catalog cache ---------------------------------------------------

    def catalog_rows(self, rows, progress):
        """Spawn -> the first tools/list answer, with a server that takes SLOW_START s to start: directly,
        through the relay with --no-catalog-cache (as a first start), and answered from the catalog cache
        (the script, and the installed relay's cached bytecode), interleaved round by round."""
        a = self.args
        slow = ("--start-delay", str(SLOW_START))
        cache = os.path.join(self.tmp, "catalog-cache")
        argvs = {"direct": self.direct_argv(*slow),
                 "no cache": self.relay_argv("--no-catalog-cache", server_args=slow, output_dir=cache),
                 "cached": self.relay_argv(server_args=slow, output_dir=cache),
                 "cached installed": self.installed_relay_argv(server_args=slow, output_dir=cache),
                 "instant server": self.relay_argv("--no-catalog-cache", output_dir=cache)}
        progress("spawn -> tools/list, a server starting in %g s, %d rounds" % (SLOW_START, a.startup_runs))
        for name in ("cached", "cached installed"):
            self.first_list(argvs[name])  # the first start saves the catalog
        times = {name: [] for name in argvs}
        for _ in range(a.startup_runs):
            for name, argv in argvs.items():
                times[name].append(self.first_list(argv))
        d = statistics.median(times["direct"])
        label = "spawn -> tools/list answer, server starting in %g s: direct | relay, " % SLOW_START
        for name, what in (("no cache", "--no-catalog-cache"), ("cached", "from the catalog cache (script)"),
                           ("cached installed", "from the catalog cache (installed)")):
            r = statistics.median(times[name])
            rows.append((label + what, "ms", d, r, r - d, None))
        rows.append(("  info: from the catalog cache | the relay alone with an instant server, no cache", "ms",
                     statistics.median(times["instant server"]), statistics.median(times["cached"]),
                     statistics.median(times["cached"]) - statistics.median(times["instant server"]), None))

    # -- the run -------------------------------------------------------------

    def startup_rows(self, rows, progress):
        """Start-up: spawn -> initialize result, alternating so all see the same machine state; with
        --old, that copy of ocx_proxy.py too (the before of a before/after)."""
        a = self.args
        progress("start-up x%d" % a.startup_runs)
        argvs = {"direct": self.direct_argv(), "script": self.relay_argv(), "installed": self.installed_relay_argv()}
        if a.old:
            argvs["old script"] = self.relay_argv(proxy=a.old)
            argvs["old installed"] = self.installed_relay_argv(a.old, "site-old")
        times = {name: [] for name in argvs}
        for _ in range(a.startup_runs):
            for name, argv in argvs.items():
                times[name].append(self.startup(argv))
        d = statistics.median(times["direct"])
        for name, label in (("script", "start-up: spawn -> initialize (python ocx_proxy.py)"),
                            ("installed", "start-up, installed ocx-proxy (cached bytecode)")):
            r = statistics.median(times[name])
            rows.append((label, "ms", d, r, r - d, TARGETS["startup"]))
            if a.old:
                old = statistics.median(times["old " + name])
                rows.append(("  info: the same, --old copy", "ms", d, old, old - d, None))

    def run(self):
        a = self.args
        rows = []
        t_start = time.perf_counter()

        def progress(text):
            sys.stderr.write("bench: %s (%.0fs)\n" % (text, time.perf_counter() - t_start))
            sys.stderr.flush()

        # Start-up: spawn -> initialize result, alternating so both see the same machine state.
        if a.only_huge or a.only_store or a.only_http or a.only_fit or a.only_clock or a.only_catalog or a.only_gate:
            if a.only_huge:
                self.huge_rows(rows, progress)
            elif a.only_clock:
                self.clock_rows(rows, progress)
            elif a.only_catalog:
                self.catalog_rows(rows, progress)
            elif a.only_gate:
                self.gate_rows(rows, progress)
            elif a.only_fit:
                self.fit_rows(rows, progress)
            elif a.only_http:
                self.http_rows(rows, progress)
            else:
                progress("token store: %d runs x %d calls" % (a.runs, a.calls))
                self.store_rows(rows, a.runs, a.calls)
            shutil.rmtree(self.tmp, ignore_errors=True)
            return rows, time.perf_counter() - t_start
        self.startup_rows(rows, progress)
        if a.only_startup:
            shutil.rmtree(self.tmp, ignore_errors=True)
            return rows, time.perf_counter() - t_start

        # Small tools/call round trips.
        progress("round trips %d runs x %d calls" % (a.runs, a.calls))
        p50_d, p99_d, p50_r, p99_r, rss_small, cpu_d, cpu_r = [], [], [], [], [], [], []
        for _ in range(a.runs):
            p50, p99, _ = self.round_trips(self.direct_argv(), a.calls)
            p50_d.append(p50)
            p99_d.append(p99)
            cpu_d.append(self.last_cpu_ms)
            p50, p99, rss = self.round_trips(self.relay_argv(), a.calls)
            p50_r.append(p50)
            p99_r.append(p99)
            cpu_r.append(self.last_cpu_ms)
            rss_small.append(rss)
        # The same calls through the installed relay (cached bytecode: no compile-time peak).
        rss_installed = self.round_trips(self.installed_relay_argv(), min(a.calls, 500))[2]
        for label, dl, rl in (("p50", p50_d, p50_r), ("p99", p99_d, p99_r)):
            d, r = statistics.median(dl), statistics.median(rl)
            rows.append(("small tools/call round trip %s (stdio)" % label, "ms", d, r, r - d, TARGETS["rtt"]))
        if None not in cpu_d + cpu_r:
            rows.append(("  info: CPU per round trip (server | relay)", "ms", statistics.median(cpu_d),
                         statistics.median(cpu_r), None, None))
        self.clock_rows(rows, progress)
        self.gate_rows(rows, progress)

        # 5 MB result: passed through (spill disabled) and spilled.
        progress("5 MB results %d runs x %d calls" % (a.big_runs, a.big_calls))
        b_direct, b_pass, b_spill, b_json, rss_pass, rss_spill = [], [], [], [], [], []
        size_direct = size_pass = size_spill = 0
        for _ in range(a.big_runs):
            t, size_direct, _ = self.big_calls(self.direct_argv(), a.big_calls, False)
            b_direct.append(t)
            t, size_pass, rss = self.big_calls(self.relay_argv("--max-response-chars", "0"), a.big_calls, False)
            b_pass.append(t)
            rss_pass.append(rss)
            t, size_spill, rss = self.big_calls(self.relay_argv(), a.big_calls, True)
            b_spill.append(t)
            rss_spill.append(rss)
            b_json.append(self.big_calls(self.relay_argv(), a.big_calls, True, json_text=True)[0])
        if size_pass != size_direct:
            raise RuntimeError("pass-through changed the 5 MB line: %d vs %d bytes" % (size_pass, size_direct))
        d = statistics.median(b_direct)
        r = statistics.median(b_pass)
        rows.append(("5 MB result passed through (spill off)", "ms", d, r, r - d, TARGETS["big"]))
        r = statistics.median(b_spill)
        rows.append(("5 MB result spilled (-> %d-byte preview)" % size_spill, "ms", d, r, r - d, TARGETS["big"]))
        r = statistics.median(b_json)
        rows.append(("  info: 5 MB JSON result spilled (preview with its outline)", "ms", d, r, r - d, None))
        rows.append(("  info: writing 2 new 5 MB files on the spill disk", "ms", None, self.disk_write_ms(),
                     None, None))

        # Peak RSS of the relay process alone (VmHWM), per scenario.
        for label, values in (("small calls", rss_small), ("small calls, installed", [rss_installed]),
                              ("5 MB passed through", rss_pass), ("5 MB spilled", rss_spill)):
            values = [v for v in values if v is not None]
            r = statistics.median(values) if values else None
            rows.append(("relay peak RSS (VmHWM), %s" % label, "MB", None, r, None, TARGETS["rss"]))

        self.fit_rows(rows, progress)
        self.catalog_rows(rows, progress)
        if a.huge:
            self.huge_rows(rows, progress)

        self.http_rows(rows, progress)
        progress("token store: %d runs x %d calls" % (a.runs, a.calls))
        self.store_rows(rows, a.runs, a.calls)

        progress("done")
        shutil.rmtree(self.tmp, ignore_errors=True)
        return rows, time.perf_counter() - t_start


def load_proxy():
    """The ocx_proxy module measured (PROXY), imported in this process."""
    spec = importlib.util.spec_from_file_location("ocx_proxy_measured", PROXY)
    proxy = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(proxy)
    return proxy


def json_round_trip_ms(tools, runs):
    """Median ms of parsing and writing again the line of a tools/list answer of ``tools``."""
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}}, separators=(",", ":"))
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        json.dumps(json.loads(line), separators=(",", ":"))
        times.append((time.perf_counter() - t0) * 1000.0)
    return statistics.median(times)


def stop(server):
    server.kill()
    server.wait()
    server.stdout.close()


def fmt(value, unit):
    if value is None:
        return "-"
    if unit == "ms" and abs(value) < 10:
        return "%.3f" % value
    if unit == "x":
        return "%.2f" % value
    return "%.1f" % value


def print_table(rows, elapsed, args):
    """Rows: (measure, text) for a line of text, or (measure, unit, direct, relay, added, target[, peer]),
    ``peer`` being mcp-stdio's added figure (or why there is none) in its own column."""
    header = ("measure", "unit", "direct", "relay", "added", "mcp-stdio added", "target", "")
    table = [header]
    misses = 0
    for row in rows:
        if len(row) == 2:
            table.append(row)
            continue
        name, unit, direct, relay, added, target = row[:6]
        peer = row[6] if len(row) > 6 else None
        peer_text = peer if isinstance(peer, str) else ("+" + fmt(peer, unit) if peer is not None else "")
        judged = added if added is not None else relay
        added_text = ("+" if added is not None and added >= 0 else "") + fmt(added, unit)
        if target is None:
            table.append((name, unit, fmt(direct, unit), fmt(relay, unit), "" if added is None else added_text,
                          peer_text, "", ""))
            continue
        if judged is None:
            verdict = "?"
        elif judged <= target:
            verdict = "met"
        else:
            verdict = "MISSED"
            misses += 1
        bound = ("<= +%s" if added is not None else "<= %s") % fmt(target, unit)
        table.append((name, unit, fmt(direct, unit), fmt(relay, unit), added_text, peer_text, bound, verdict))
    widths = [max(len(str(r[i])) for r in table if len(r) > 2) for i in range(len(header))]
    lines = []
    for n, r in enumerate(table):
        if len(r) == 2:
            lines.append("  ".join([r[0].ljust(widths[0]), r[1]]))
            continue
        cells = [str(c).ljust(widths[i]) if i < 2 else str(c).rjust(widths[i]) for i, c in enumerate(r)]
        lines.append("  ".join(cells).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    print("ocx-proxy relay benchmark  (Python %s, %d cores, load average %.2f; medians of %d start-ups, %d x %d calls, "
          "%d x %d 5 MB calls, %d x %d tools/list)"
          % (sys.version.split()[0], os.cpu_count() or 0, os.getloadavg()[0], args.startup_runs, args.runs,
             args.calls, args.big_runs, args.big_calls, args.fit_runs, args.fit_lists))
    print("\n".join(lines))
    print("%d target(s) missed; bench took %.0f s" % (misses, elapsed))
    return misses


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--profile", metavar="DIR", help="run every relay under cProfile, stats into DIR")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--no-huge", dest="huge", action="store_false",
                        help="skip the 100 MB memory rows (about 30 s)")
    parser.add_argument("--only-huge", action="store_true", help="run only the 100 MB memory rows")
    parser.add_argument("--only-store", action="store_true", help="run only the token-store rows")
    parser.add_argument("--only-startup", action="store_true", help="run only the start-up rows")
    parser.add_argument("--old", metavar="OLD.py",
                        help="another copy of ocx_proxy.py whose start-up is timed beside this one's, "
                             "interleaved: a before/after pair of rows")
    parser.add_argument("--only-http", action="store_true", help="run only the Streamable HTTP rows")
    parser.add_argument("--only-fit", action="store_true", help="run only the catalog-fitting rows")
    parser.add_argument("--only-clock", action="store_true",
                        help="run only the heartbeat rows (calls in time, the relay's clocks off vs on)")
    parser.add_argument("--only-catalog", action="store_true",
                        help="run only the catalog-cache rows (spawn -> tools/list, a server slow to start)")
    parser.add_argument("--only-gate", action="store_true",
                        help="run only the gate rows (a 2 KB argument object checked, a negotiate hook round trip)")
    parser.add_argument("--peers", metavar="DIR", default=os.path.join(ROOT, ".venv-bench-peers"),
                        help="the venv holding mcp-stdio (default: .venv-bench-peers)")
    args = parser.parse_args(argv)
    if args.quick:
        args.startup_runs, args.runs, args.calls, args.big_runs, args.big_calls = 5, 2, 500, 1, 3
        args.fit_runs, args.fit_lists, args.fit_calls = 2, 5, 5
    else:
        args.startup_runs, args.runs, args.calls, args.big_runs, args.big_calls = 15, 5, 2000, 3, 5
        args.fit_runs, args.fit_lists, args.fit_calls = 5, 10, 15
    rows, elapsed = Bench(args).run()
    misses = print_table(rows, elapsed, args)
    return 1 if (misses and args.strict) else 0


if __name__ == "__main__":
    sys.exit(main())
