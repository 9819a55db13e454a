"""Windows end to end: a Windows client (this pytest process) starts ``python ocx_proxy.py ...`` over Windows pipes.

Real subprocesses, real pipes, real loopback sockets; nothing of ours is mocked.  `make windows`
(tests/run_windows.py) runs this file under a Windows CPython (3.13 and 3.8) under Wine; on any other system
the whole module is skipped.  Each wait is bounded; a case Wine itself cannot run is skipped, naming what Wine
lacks.  Whether a process lives is asked with ``ocx_proxy.process_exists`` (OpenProcess): never
``os.kill(pid, 0)``, which is TerminateProcess on Windows.
"""
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from helpers import CATALOG_SERVER, CATALOGS, FIXTURES, PROXY, PROXY_SCRIPT, STDIO_SERVER, RelayProcess, free_port

import ocx_proxy

pytestmark = pytest.mark.skipif(os.name != "nt", reason="Windows end-to-end tests: they need a Windows CPython "
                                                       "(make windows runs them under Wine)")

STUBBORN_SERVER = os.path.join(FIXTURES, "stubborn_server.py")
TREE_SERVER = os.path.join(FIXTURES, "tree_server.py")
PRINT_SERVER = os.path.join(FIXTURES, "print_server.py")
CONSOLE_CLIENT = os.path.join(FIXTURES, "console_client.py")
OAUTH_SERVER = os.path.join(FIXTURES, "oauth_server.py")
OAUTH_BROWSER = os.path.join(FIXTURES, "oauth_browser.py")
CODEX_CATALOG = os.path.join(FIXTURES, "codex_request.json")
CLEAN = os.path.join(CATALOGS, "clean.json")
# Text outside every ANSI code page: Latin accents, CJK, an emoji (outside the BMP: a surrogate pair in UTF-16).
WORLD = "naïve 中文 😀 José"
ODD_DIR = "José Ñ"   # a space and non-ASCII letters in a directory name
START = 60           # a relay's first answer: a Python start under Wine on a loaded machine takes seconds
WAIT = 20            # any other answer
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def clean_env(**extra):
    """Our environment without proxies, ocx-proxy settings, Python text settings and a browser; plus ``extra``."""
    env = {k: v for k, v in os.environ.items()
           if not k.lower().endswith("_proxy") and not k.upper().startswith("OCX_PROXY_")
           and k.upper() not in ("PYTHONIOENCODING", "PYTHONUTF8", "BROWSER")}
    env.update(extra)
    return env


@pytest.fixture
def clients():
    """Start MCP test clients (``RelayProcess``) on ``argv``, in ``clean_env()`` unless given an ``env``, messages
    in UTF-8 (non-ASCII text travels as UTF-8 bytes); any still running at the end is killed, and so is every pid
    listed in ``pids``."""
    started, pids = [], []

    def start(argv, env=None, **popen):
        client = RelayProcess(command=argv, env=clean_env() if env is None else env, utf8=True, timeout=WAIT, **popen)
        started.append(client)
        return client

    start.pids = pids
    yield start
    for client in started:
        if client.proc.poll() is None:
            client.proc.kill()
            client.proc.wait(timeout=WAIT)
    for pid in pids:   # what a failed test left running
        if ocx_proxy.process_exists(pid):
            try:
                os.kill(pid, signal.SIGTERM)   # Windows: TerminateProcess
            except OSError:
                pass


def relay_argv(*args):
    return [sys.executable, PROXY] + list(args)


def stdio_relay(*relay_args, server=None):
    """``ocx_proxy.py stdio RELAY_ARGS -- SERVER`` (default: the stdio fixture server) as an argv."""
    return relay_argv("stdio", *relay_args) + ["--"] + (server or [sys.executable, STDIO_SERVER])


def text_of(reply):
    assert "result" in reply, reply
    return reply["result"]["content"][0]["text"]


def spill_meta(reply):
    return reply["result"]["_meta"]["ocx-proxy/spill"]


def spill_id_of(text):
    return re.search(r'the read_spilled_output(?:_\d+)? tool of this server returns it in pages, id="([^"]+)"',
                     text).group(1)


def next_call(hint):
    """(line, column) of a ``[next: ...]`` hint, None at the end."""
    found = re.search(r"line=(\d+)(?:, column=(\d+))?", hint)
    return (int(found.group(1)), int(found.group(2) or 1)) if hint.startswith("[next:") else None


def read_pages(client, spill_id, limit=400):
    """Page a spill with read_spilled_output from line 1 to its end; the pages' texts and the number of calls."""
    pages, where = [], (1, 1)
    while where is not None:
        assert len(pages) < limit, "no end after %d pages" % limit
        answer = client.call("read_spilled_output", {"id": spill_id, "line": where[0], "column": where[1]})
        assert "isError" not in answer["result"], answer
        page, hint = [block["text"] for block in answer["result"]["content"]]
        pages.append(page)
        where = next_call(hint)
    return pages


def lines_text(n, pad):
    """What stdio_server.py's ``lines`` tool answers."""
    return "\n".join("line %d %s" % (i, pad) for i in range(n))


def wait_gone(pids, timeout=3.0):
    """The pids of ``pids`` still alive after ``timeout`` seconds (empty: all gone)."""
    deadline = time.monotonic() + timeout
    alive = [pid for pid in pids if ocx_proxy.process_exists(pid)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [pid for pid in alive if ocx_proxy.process_exists(pid)]
    return alive


def read_pids(path, timeout=WAIT):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        assert time.monotonic() < deadline, "the server wrote no pid file"
        time.sleep(0.05)
    with open(path) as handle:
        return [int(word) for word in handle.read().split()]


def odd_dir(tmp_path, *more):
    path = os.path.join(str(tmp_path), ODD_DIR, *more)
    os.makedirs(path, exist_ok=True)
    return path


# -- 1. the README's first command --------------------------------------------------------------------------

def test_demo_exits_0_and_shows_its_spills(tmp_path):
    local = os.path.join(str(tmp_path), "Local")   # the demo spills into %LOCALAPPDATA%\ocx-proxy\Cache\demo
    proc = subprocess.run([sys.executable, PROXY_SCRIPT, "demo"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=clean_env(LOCALAPPDATA=local), timeout=120)
    out, err = proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8")
    assert proc.returncode == 0, err
    assert "relay exited with status 0" in out and "passed through unchanged" in out
    spilled = re.findall(r"client received \d+ characters \(spilled: the original had \d+\)", out)
    saved = re.findall(r"^   full text: (.+\.txt)\r?$", out, re.M)
    assert len(spilled) >= 3 and len(saved) == len(spilled), out
    cache = os.path.join(local, "ocx-proxy", "Cache", "demo")
    for path in saved:
        assert os.path.dirname(path) == cache and os.path.isfile(path), (path, cache)
    assert "数据库连接正常" in out   # the unicode preview, in UTF-8 on our pipe


# -- 2. check -----------------------------------------------------------------------------------------------

def test_check_stdio_reports_on_a_catalog_server():
    proc = subprocess.run(relay_argv("check", "--json", "--server-name", "srv", "--timeout", "60", "stdio", "--",
                                     sys.executable, CATALOG_SERVER, CLEAN),
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=clean_env(), timeout=120)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.decode("utf-8"))
    assert report["server"]["name"] == "catalog" and report["counts"]["tools"] == 2
    assert report["findings"] == [] and report["summary"] == {"error": 0, "warning": 0, "info": 0}


def windows_configs(tmp_path):
    """Cursor, Claude Desktop and Codex files whose servers are ``C:\\...\\python.exe`` with backslash paths."""
    long_name = os.path.join(CATALOGS, "long_name.json")
    cursor = {"mcpServers": {"catalog": {"command": sys.executable, "args": [CATALOG_SERVER, CLEAN]}}}
    claude = {"mcpServers": {
        "catalog": {"command": sys.executable, "args": [CATALOG_SERVER, CLEAN], "env": {"CATALOG_MODE": "desktop"}},
        "long": {"command": sys.executable, "args": [CATALOG_SERVER, long_name]}}}
    paths = {}
    for name, config in (("mcp.json", cursor), ("claude_desktop_config.json", claude)):
        paths[name] = os.path.join(str(tmp_path), name)
        with open(paths[name], "w", encoding="utf-8", newline="\r\n") as handle:
            json.dump(config, handle, indent=2)   # JSON escapes each backslash: "Z:\\tmp\\..."
    # TOML: a basic string (backslashes escaped) and literal strings (backslashes as they are); CRLF lines.
    codex = ("[mcp_servers.catalog]\n"
             "command = %s\n"
             "args = ['%s', '%s']\n"
             "\n"
             "[mcp_servers.long]\n"
             "command = '%s'\n"
             "args = [%s, %s]\n" % (json.dumps(sys.executable), CATALOG_SERVER, CLEAN,
                                    sys.executable, json.dumps(CATALOG_SERVER), json.dumps(long_name)))
    paths["config.toml"] = os.path.join(str(tmp_path), "config.toml")
    with open(paths["config.toml"], "w", encoding="utf-8", newline="\r\n") as handle:
        handle.write(codex)
    return paths


def test_check_config_reads_windows_client_configs_with_backslash_paths(tmp_path):
    assert "\\" in sys.executable and "\\" in CATALOG_SERVER
    paths = windows_configs(tmp_path)
    with open(paths["config.toml"], "rb") as handle:
        assert b"\r\n" in handle.read()
    expected = {"mcp.json": ("json", ["catalog"]), "claude_desktop_config.json": ("json", ["catalog", "long"]),
                "config.toml": ("codex", ["catalog", "long"])}
    for name, (fmt, servers) in sorted(expected.items()):
        proc = subprocess.run(relay_argv("check", "--json", "--config", paths[name], "--timeout", "60"),
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=clean_env(), timeout=180)
        err = proc.stderr.decode("utf-8")
        assert "Traceback" not in err and proc.stdout.strip(), (name, err)
        report = json.loads(proc.stdout.decode("utf-8"))
        assert report["format"] == fmt and [s["name"] for s in report["servers"]] == servers, (name, report)
        for server in report["servers"]:
            assert "error" not in server, (name, server)
            assert server["transport"] == "stdio" and server["report"]["server"]["name"] == "catalog", (name, server)
        by_name = {s["name"]: s["report"] for s in report["servers"]}
        assert by_name["catalog"]["counts"]["tools"] == 2 and by_name["catalog"]["findings"] == []
        if "long" in by_name:   # a server with findings: the report says them, the status says so
            assert by_name["long"]["findings"] and proc.returncode == 1, (name, by_name["long"])
        else:
            assert proc.returncode == 0, (name, report)


# -- 3. stdio relay: the handshake, a call, a spill read back page by page ----------------------------------

def test_stdio_relay_spills_and_the_reader_pages_give_back_every_byte(clients, tmp_path):
    spill_dir = os.path.join(str(tmp_path), "spill")
    client = clients(stdio_relay("--output-dir", spill_dir))
    reply = client.initialize(timeout=START)
    assert reply["result"]["serverInfo"]["name"] == "fixture"
    names = [tool["name"] for tool in client.request("tools/list")[0]["result"]["tools"]]
    assert names[:2] == ["echo", "structured"] and names[-1] == "read_spilled_output"
    assert text_of(client.call("echo", {"text": "hello"})) == "hello"
    pad = "数据 é\t\"q\" 😀" * 3
    reply = client.call("lines", {"n": 3000, "pad": pad})
    preview = text_of(reply)
    meta = spill_meta(reply)
    expected = lines_text(3000, pad)
    assert os.path.dirname(meta["txt"]) == spill_dir and "characters omitted" in preview
    with open(meta["txt"], "rb") as handle:
        assert handle.read() == expected.encode("utf-8")   # written as bytes: no CRLF slipped in
    pages = read_pages(client, spill_id_of(preview))
    assert len(pages) > 5
    assert "".join(pages).encode("utf-8") == expected.encode("utf-8")
    assert client.close() == 0


# -- 4. remote transports to a server in this process ---------------------------------------------------------

@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
def test_remote_relay_over_loopback(clients, http_server, tmp_path, transport):
    srv = http_server(streamable=(transport == "streamable-http"))
    url = srv.url if transport == "streamable-http" else srv.sse_url
    client = clients(relay_argv(transport, "--url", url, "--output-dir", os.path.join(str(tmp_path), "spill")))
    reply = client.initialize(timeout=START)
    assert reply["result"]["serverInfo"]["name"] == "http-fixture"
    raw_before = len(client.raw_lines)
    assert text_of(client.call("echo", {"text": WORLD})) == WORLD
    assert WORLD.encode("utf-8") in client.raw_lines[raw_before]
    reply = client.call("big", {"n": 60000})
    assert "_meta" in reply["result"] and os.path.isfile(spill_meta(reply)["txt"])
    posts = srv.seen("POST")
    if transport == "sse":
        assert posts and all(r["path"].startswith("/messages?session_id=") for r in posts)
    else:
        assert posts and all(r["path"] == "/mcp" for r in posts)
    assert client.close() == 0


# -- 5. capture ----------------------------------------------------------------------------------------------

def test_capture_records_a_call_as_a_function_call_and_runs_nothing(clients, tmp_path):
    out = os.path.join(str(tmp_path), "calls.ndjson")
    marker = os.path.join(str(tmp_path), "executed")
    client = clients(relay_argv("capture", "--catalog", CODEX_CATALOG, "--out", out))
    client.initialize(timeout=START)
    names = [tool["name"] for tool in client.request("tools/list")[0]["result"]["tools"]]
    assert "exec_command" in names
    arguments = {"cmd": 'cmd /c echo x > "%s"' % marker, "workdir": "C:\\"}
    client.send_call("exec_command", arguments)
    deadline = time.monotonic() + WAIT
    while not (os.path.exists(out) and os.path.getsize(out)):
        assert time.monotonic() < deadline, "no record written; stderr:\n" + client.stderr
        time.sleep(0.05)
    assert client.no_reply(0.5)   # left pending: no answer
    with open(out, encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle]
    assert records == [{"type": "function_call", "call_id": records[0]["call_id"], "name": "exec_command",
                        "arguments": json.dumps(arguments, separators=(",", ":"))}]
    assert client.close() == 0
    assert not os.path.exists(marker)


# -- 6. auth login -------------------------------------------------------------------------------------------

class AuthServer:
    """tests/fixtures/oauth_server.py in a process of its own; the scripted browser logs its visits."""

    def __init__(self, tmp_path):
        self.proc = subprocess.Popen([sys.executable, OAUTH_SERVER], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, env=clean_env())
        self.port = int(self.proc.stdout.readline())
        self.base = "http://127.0.0.1:%d" % self.port
        self.url = self.base + "/mcp"
        self.auth_dir = os.path.join(str(tmp_path), "auth")
        self.browser_log = os.path.join(str(tmp_path), "browser.log")
        self.callback_port = free_port()

    def configure(self, **config):
        OPENER.open(urllib.request.Request(self.base + "/_config", json.dumps(config).encode(), method="POST"),
                    timeout=WAIT).read()

    def stats(self):
        return json.loads(OPENER.open(self.base + "/_stats", timeout=WAIT).read())

    def visits(self):
        try:
            with open(self.browser_log) as handle:
                return handle.read().splitlines()
        except OSError:
            return []

    def env(self, browser=True, **extra):
        env = clean_env(OCX_PROXY_AUTH_DIR=self.auth_dir, OAUTH_BROWSER_LOG=self.browser_log)
        if browser:
            # webbrowser splits BROWSER with shlex (POSIX rules): double quotes keep each backslash path whole.
            env["BROWSER"] = '"%s" "%s" %%s' % (sys.executable, OAUTH_BROWSER)
        env.update(extra)
        return env

    def auth(self, action, *extra, env=None):
        argv = relay_argv("auth", action, "--url", self.url, "--oauth-callback-port", str(self.callback_port),
                          *extra)
        return subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=env if env is not None else self.env(), timeout=120)

    def stop(self):
        self.proc.kill()
        self.proc.wait(timeout=WAIT)


@pytest.fixture
def auth_server(tmp_path):
    server = AuthServer(tmp_path)
    yield server
    server.stop()


def token_files(directory):
    return [name for name in os.listdir(directory) if name.startswith("tokens-")] if os.path.isdir(directory) else []


def test_auth_login_with_the_browser(auth_server, clients):
    result = auth_server.auth("login", "--oauth-timeout", "60")
    assert result.returncode == 0, result.stderr.decode("utf-8", "replace")
    assert len(auth_server.visits()) == 1 and token_files(auth_server.auth_dir)
    visit = auth_server.visits()[0]
    assert "code_challenge_method=S256" in visit and "127.0.0.1%3A" + str(auth_server.callback_port) in visit
    with open(auth_server.browser_log + ".stdio") as handle:
        assert handle.read() == "devnull\n"   # the browser never had the relay's stdio (the MCP channel)
    stats = auth_server.stats()
    assert (stats["register"], stats["authorize"], stats["token"]) == (1, 1, 1)
    status = auth_server.auth("status")
    assert status.returncode == 0 and "scopes: mcp" in status.stdout.decode("utf-8")
    # a relay uses the stored tokens: no second visit
    client = clients(relay_argv("streamable-http", "--url", auth_server.url), env=auth_server.env())
    client.initialize(timeout=START)
    assert text_of(client.call("whoami")) == "scopes: mcp"
    assert client.close() == 0
    assert len(auth_server.visits()) == 1


def test_auth_login_with_the_device_flow(auth_server):
    auth_server.configure(device={"interval": 1, "user": {"after": 1.5, "action": "approve"}})
    result = auth_server.auth("login", "--device", "--oauth-timeout", "60", env=auth_server.env(browser=False))
    err = result.stderr.decode("utf-8", "replace")
    assert result.returncode == 0, err
    (issued,) = auth_server.stats()["device"]
    assert auth_server.base + "/as/activate?user_code=" + issued["user_code"] in err
    assert len(issued["polls"]) >= 2 and auth_server.visits() == []
    assert token_files(auth_server.auth_dir)


# -- 7. an npx-style .cmd server found through PATHEXT ---------------------------------------------------------

def test_a_cmd_server_found_through_pathext_in_a_directory_with_spaces_and_accents(clients, tmp_path):
    bin_dir = odd_dir(tmp_path, "bin dir")
    with open(os.path.join(bin_dir, "fakenpx.cmd"), "wb") as handle:
        handle.write(('@echo off\r\n"%s" "%s" %%*\r\n' % (sys.executable, STDIO_SERVER)).encode("ascii"))
    env = clean_env(PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))
    client = clients(stdio_relay("--output-dir", os.path.join(str(tmp_path), "spill"),
                                 server=["fakenpx", "--from-cmd", "two words"]), env=env)
    client.initialize(timeout=START)
    assert text_of(client.call("echo", {"text": WORLD})) == WORLD
    assert json.loads(text_of(client.call("argv"))) == ["--from-cmd", "two words"]
    assert client.close() == 0


# -- 8. a server writing CRLF ----------------------------------------------------------------------------------

def test_a_server_writing_crlf_is_read_line_by_line(clients, tmp_path):
    client = clients(stdio_relay("--output-dir", os.path.join(str(tmp_path), "spill"),
                                 server=[sys.executable, STDIO_SERVER, "--crlf"]))
    client.initialize(timeout=START)
    client.request("tools/list")   # the reader tool is the relay's once listed
    before = len(client.raw_lines)
    assert text_of(client.call("echo", {"text": WORLD})) == WORLD
    line = client.raw_lines[before]
    assert line.endswith(b"}\n") and b"\r" not in line
    reply = client.call("lines", {"n": 2000, "pad": "é"})   # a spilled answer from the CRLF server
    pages = read_pages(client, spill_id_of(text_of(reply)))
    assert "".join(pages) == lines_text(2000, "é")
    assert client.close() == 0


# -- 9. a server that ignores EOF on stdin ---------------------------------------------------------------------

def test_a_server_ignoring_eof_is_stopped_when_the_client_leaves(clients):
    client = clients(stdio_relay(server=[sys.executable, STUBBORN_SERVER]))
    reply = client.initialize(timeout=START)
    pids = [reply["result"]["pid"], reply["result"]["grandchild"]]
    clients.pids.extend(pids)
    assert all(ocx_proxy.process_exists(pid) for pid in pids)
    started = time.monotonic()
    assert client.close(timeout=10) == 0
    took = time.monotonic() - started
    assert took < 8, "the relay took %.1f s to exit" % took
    assert wait_gone(pids) == [], "left running: %s" % wait_gone(pids, 0)


# -- 10. no orphans ----------------------------------------------------------------------------------------

def start_tree(clients, tmp_path, *server_args, **popen):
    pidfile = os.path.join(str(tmp_path), "pids")
    client = clients(stdio_relay(server=[sys.executable, TREE_SERVER, pidfile] + list(server_args)), **popen)
    client.initialize(timeout=START)
    pids = read_pids(pidfile)
    clients.pids.extend(pids)
    assert text_of(client.call("pids")) == "%d %d" % tuple(pids)
    assert all(ocx_proxy.process_exists(pid) for pid in pids)
    return client, pids


def test_a_relay_killed_outright_takes_its_server_and_the_servers_child(clients, tmp_path):
    client, pids = start_tree(clients, tmp_path)
    client.proc.kill()   # TerminateProcess: no clean-up of ours runs
    client.proc.wait(timeout=WAIT)
    alive = wait_gone(pids, 3.0)
    assert alive == [], "left running after the relay was killed: %s (server, child: %s)" % (alive, pids)


def under_wine():
    """Wine's version ("8.0") when this Windows is Wine, else None."""
    import ctypes
    try:
        get_version = ctypes.CDLL("ntdll").wine_get_version
    except (AttributeError, OSError):
        return None
    get_version.restype = ctypes.c_char_p
    return get_version().decode()


@pytest.mark.parametrize("event", ["c", "break"], ids=["ctrl-c", "ctrl-break"])
def test_a_console_control_event_ends_the_relay_and_its_tree(clients, tmp_path, event):
    """A client in a console (tests/fixtures/console_client.py, with a console of its own) starts the relay on it
    and sends Ctrl+C to the console, or Ctrl+Break to the relay's process group: the relay ends, and its tree."""
    pidfile = os.path.join(str(tmp_path), "pids")
    relay = stdio_relay(server=[sys.executable, TREE_SERVER, pidfile])
    hidden = subprocess.STARTUPINFO()   # a console of its own, its window not shown
    hidden.dwFlags |= subprocess.STARTF_USESHOWWINDOW
    hidden.wShowWindow = 0   # SW_HIDE
    helper = clients([sys.executable, CONSOLE_CLIENT, event, "--"] + relay,
                     creationflags=subprocess.CREATE_NEW_CONSOLE, startupinfo=hidden)

    def report():
        return json.loads(helper.recv_raw(timeout=START).decode("utf-8"))

    clients.pids.append(report()["relay"])
    assert report() == {"initialized": True}, helper.stderr
    pids = read_pids(pidfile)
    clients.pids.extend(pids)
    sent = report()
    if "send_error" in sent and under_wine():
        pytest.skip("Wine %s does not deliver %s: GenerateConsoleCtrlEvent fails with %s; its wineserver passes on "
                    "CTRL_C_EVENT only" % (under_wine(), "CTRL_BREAK_EVENT" if event == "break" else "CTRL_C_EVENT",
                                           sent["send_error"].rstrip(".")))
    assert sent == {"sent": True}, sent
    ended = report()
    assert ended["exit"] is not None, "the relay was still running 15 s after the event"
    alive = wait_gone(pids, 3.0)
    assert alive == [], "left running after the console event: %s (server, child: %s)" % (alive, pids)
    assert helper.proc.wait(timeout=WAIT) == 0


# -- 11. a server whose child inherited its stdin (python-sdk PR #3079) --------------------------------------

def test_a_child_holding_the_servers_pipes_does_not_hold_up_shutdown(clients, tmp_path):
    client, pids = start_tree(clients, tmp_path, "--inherit")
    started = time.monotonic()
    assert client.close(timeout=10) == 0
    took = time.monotonic() - started
    assert took < 8, "the relay took %.1f s to exit" % took
    assert wait_gone(pids) == [], "left running: %s (server, child: %s)" % (wait_gone(pids, 0), pids)


# -- 12. non-ASCII text both ways ------------------------------------------------------------------------------

@pytest.mark.parametrize("relay_encoding", [None, "cp1252"])
def test_non_ascii_arguments_come_back_byte_exact(clients, tmp_path, relay_encoding):
    env = clean_env(**({"PYTHONIOENCODING": relay_encoding} if relay_encoding else {}))
    client = clients(stdio_relay("--output-dir", os.path.join(str(tmp_path), "spill"),
                                 server=[sys.executable, STDIO_SERVER, "--stderr", "server says " + WORLD]), env=env)
    client.initialize(timeout=START)
    line = ('{"jsonrpc":"2.0","id":__ID__,"result":{"content":[{"type":"text","text":"%s"}]}}' % WORLD)
    client.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                 "params": {"name": "raw", "arguments": {"line": line}}})
    assert client.recv_raw() == line.replace("__ID__", "7").encode("utf-8") + b"\n"
    before = len(client.raw_lines)
    assert text_of(client.call("echo", {"text": WORLD})) == WORLD
    assert WORLD.encode("utf-8") in client.raw_lines[before]
    assert client.close() == 0
    # the server's stderr, logged by the relay: UTF-8 on the relay's stderr pipe whatever PYTHONIOENCODING says
    err = client.stderr_bytes.decode("utf-8")   # UnicodeDecodeError: not UTF-8
    assert "server says " + WORLD in err, err


def test_a_python_server_printing_non_latin_text_gets_utf8_pipes(clients, tmp_path):
    client = clients(stdio_relay("--output-dir", os.path.join(str(tmp_path), "spill"),
                                 server=[sys.executable, PRINT_SERVER]))
    client.initialize(timeout=START)
    assert text_of(client.call("encoding")).lower().replace("-", "") == "utf8"
    assert text_of(client.call("hello")) == "naïve 中文 😀 José Ñ Привет"
    assert text_of(client.call("echo", {"text": WORLD})) == WORLD
    assert client.close() == 0


# -- 13. paths: spaces and accents, past 260 characters, file:///C:/ URIs ---------------------------------------

def spill_in(clients, output_dir):
    """A relay spilling into ``output_dir``: the spill meta, the preview and the pages read back."""
    client = clients(stdio_relay("--output-dir", output_dir))
    client.initialize(timeout=START)
    client.request("tools/list")
    reply = client.call("lines", {"n": 1500, "pad": WORLD})
    meta, preview = spill_meta(reply), text_of(reply)
    pages = read_pages(client, spill_id_of(preview))
    link = reply["result"]["content"][1]
    assert client.close() == 0
    return meta, preview, pages, link


def assert_windows_uri(uri, path):
    assert re.match(r"^file:///[A-Za-z]:/", uri) and "\\" not in uri and " " not in uri, uri
    assert os.path.normcase(urllib.request.url2pathname(uri[len("file:"):])) == os.path.normcase(path), (uri, path)


def test_spill_directory_with_spaces_and_accents_and_its_file_uris(clients, tmp_path):
    output_dir = odd_dir(tmp_path, "spill dir")
    meta, preview, pages, link = spill_in(clients, output_dir)
    assert os.path.dirname(meta["txt"]) == output_dir and os.path.isfile(meta["txt"])
    assert meta["txt"] in preview and meta["json"] in preview
    assert "".join(pages) == lines_text(1500, WORLD)
    assert link["type"] == "resource_link" and link["uri"] == meta["txt_uri"] == ocx_proxy.file_uri(meta["txt"])
    assert_windows_uri(link["uri"], meta["txt"])
    assert_windows_uri(meta["json_uri"], meta["json"])
    assert "Jos%C3%A9%20%C3%91" in link["uri"]


def test_spill_path_longer_than_260_characters(clients, tmp_path):
    """Spill files whose full paths pass MAX_PATH (260).  Where this Windows takes such paths (LongPathsEnabled; Wine
    always) the spill works as anywhere; where it refuses them, the answer must come through whole and the relay
    say why."""
    base = odd_dir(tmp_path)
    output_dir = os.path.join(base, "d" * 90, "é" * 90)
    probe = os.path.join(base, "p" * 90, "é" * 90, "x" * 60 + ".txt")
    assert len(output_dir) + 60 > 260 and len(probe) > 260
    try:   # whether this interpreter (the relay's) can make such a path
        os.makedirs(os.path.dirname(probe))
        with open(probe, "wb") as handle:
            handle.write(b"x")
        refused = None
    except OSError as exc:
        refused = exc
    if refused is None:
        meta, _, pages, link = spill_in(clients, output_dir)
        assert len(meta["txt"]) > 260, len(meta["txt"])
        with open(meta["txt"], "rb") as handle:
            assert handle.read() == lines_text(1500, WORLD).encode("utf-8")
        assert "".join(pages) == lines_text(1500, WORLD)
        assert_windows_uri(link["uri"], meta["txt"])
        return
    client = clients(stdio_relay("--output-dir", output_dir))
    client.initialize(timeout=START)
    assert text_of(client.call("lines", {"n": 1500, "pad": WORLD})) == lines_text(1500, WORLD)
    assert client.close() == 0
    assert "could not save oversized tools/call response" in client.stderr, (refused, client.stderr)


# -- 14. the token store under %LOCALAPPDATA%, and the login lock --------------------------------------------

def test_tokens_are_stored_under_localappdata(auth_server):
    local = odd_dir(auth_server.auth_dir + "-home", "AppData", "Local")
    env = auth_server.env(LOCALAPPDATA=local)
    env.pop("OCX_PROXY_AUTH_DIR")
    result = auth_server.auth("login", "--oauth-timeout", "60", env=env)
    assert result.returncode == 0, result.stderr.decode("utf-8", "replace")
    store = os.path.join(local, "ocx-proxy-auth")
    assert token_files(store) and not os.path.exists(auth_server.auth_dir)
    status = auth_server.auth("status", env=env)
    assert status.returncode == 0 and "scopes: mcp" in status.stdout.decode("utf-8"), status.stdout


HOLD_LOCK = """
import sys, time
sys.path.insert(0, sys.argv[1])
import ocx_proxy
assert ocx_proxy.LoginLock(sys.argv[2]).acquire()
print("held", flush=True)
time.sleep(60)
"""
TRY_LOCK = """
import sys
sys.path.insert(0, sys.argv[1])
import ocx_proxy
print(ocx_proxy.LoginLock(sys.argv[2]).acquire())
"""


def test_login_lock_is_held_by_one_process_at_a_time(tmp_path):
    lock = os.path.join(odd_dir(tmp_path), "login-x.lock")
    root = os.path.dirname(PROXY_SCRIPT)

    def try_lock():
        proc = subprocess.run([sys.executable, "-c", TRY_LOCK, root, lock], stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.decode().strip()

    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, root, lock], stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline().strip() == b"held"
        assert try_lock() == "False"
    finally:
        holder.kill()   # no clean-up runs: the system drops the lock
        holder.wait(timeout=WAIT)
    deadline = time.monotonic() + 5   # Windows drops a dead process's locks soon, not at once
    while True:
        got = try_lock()
        if got == "True" or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert got == "True"
