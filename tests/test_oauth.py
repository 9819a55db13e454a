"""OAuth for the remote transports: a real relay subprocess against tests/fixtures/oauth_server.py,
with tests/fixtures/oauth_browser.py standing in for the browser (webbrowser honours BROWSER)."""
import json
import os
import socket
import stat
import subprocess
import sys
import threading
import time
import urllib.request
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from helpers import FIXTURES, PROXY, RelayProcess, assert_one_line_error, free_port, run_proxy

import ocx_proxy as op

SERVER = os.path.join(FIXTURES, "oauth_server.py")
BROWSER = os.path.join(FIXTURES, "oauth_browser.py")
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class AuthServer:
    def __init__(self, tmp_path):
        self.proc = subprocess.Popen([sys.executable, SERVER], stdout=subprocess.PIPE)
        self.port = int(self.proc.stdout.readline())
        self.base = "http://127.0.0.1:%d" % self.port
        self.url = self.base + "/mcp"
        self.tmp = tmp_path
        self.auth_dir = str(tmp_path / "auth")
        self.browser_log = str(tmp_path / "browser.log")
        self.callback_port = free_port()

    def configure(self, **config):
        OPENER.open(urllib.request.Request(self.base + "/_config", json.dumps(config).encode(), method="POST")).read()

    def stats(self):
        return json.loads(OPENER.open(self.base + "/_stats").read())

    def visits(self):
        try:
            with open(self.browser_log) as f:
                return f.read().splitlines()
        except OSError:
            return []

    def env(self, browser=True, environ=None, **variant):
        """The relay's environment, plus ``environ``; ``variant`` sets the scripted browser's OAUTH_BROWSER_<NAME>."""
        env = {k: v for k, v in os.environ.items()
               if k.upper() not in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "DISPLAY", "WAYLAND_DISPLAY",
                                    "BROWSER", "OCX_PROXY_OAUTH_CALLBACK_PORT", "SSH_CONNECTION", "SSH_TTY",
                                    "OCX_PROXY_OAUTH_DEVICE", "OCX_PROXY_OAUTH_NO_BROWSER",
                                    "OCX_PROXY_OAUTH_CLIENT_SECRET", "OCX_PROXY_OAUTH_IDP_CLIENT_SECRET",
                                    "OCX_PROXY_OAUTH_CLIENT_CREDENTIALS")}
        env.update(OCX_PROXY_AUTH_DIR=self.auth_dir, OAUTH_BROWSER_LOG=self.browser_log)
        if browser:
            # webbrowser splits BROWSER with shlex (POSIX rules): double quotes keep a Windows path's backslashes.
            env["BROWSER"] = '"%s" "%s" %%s' % (sys.executable, BROWSER)
        elif op.IS_WINDOWS:
            # Windows always has a browser to open (no DISPLAY to take away): no browser here is said instead
            env["OCX_PROXY_OAUTH_NO_BROWSER"] = "1"
        env.update(("OAUTH_BROWSER_" + name.upper(), str(value)) for name, value in variant.items())
        env.update(environ or {})
        return env

    def args(self, *extra):
        """``--url`` and, unless callback_port is None (the relay's own choice), ``--oauth-callback-port``."""
        port = ["--oauth-callback-port", str(self.callback_port)] if self.callback_port else []
        return ["--url", self.url] + port + list(extra)

    def redirect_uris(self):
        """The redirect_uri of each browser visit."""
        return [parse_qs(urlsplit(visit).query)["redirect_uri"][0] for visit in self.visits()]

    def relay(self, *extra, transport="streamable-http", **env):
        return RelayProcess(command=[sys.executable, PROXY, transport] + self.args(*extra), env=self.env(**env))

    def auth(self, action, *extra, **env):
        return run_proxy("auth", action, *self.args(*extra), env=self.env(**env))

    def stop(self):
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def server(tmp_path):
    s = AuthServer(tmp_path)
    yield s
    s.stop()


def session(server, *extra, **env):
    relay = server.relay(*extra, **env)
    reply = relay.initialize()
    return relay, reply


def token_files(server):
    return [n for n in os.listdir(server.auth_dir) if n.startswith("tokens-")]


def test_first_login_then_tools_work_and_tokens_are_private(server):
    relay, reply = session(server)
    try:
        assert reply["result"]["serverInfo"]["name"] == "oauth-fixture", reply
        assert relay.call("whoami")["result"]["content"][0]["text"] == "scopes: mcp"
    finally:
        relay.close()
    stats = server.stats()
    assert (stats["register"], stats["authorize"], stats["token"]) == (1, 1, 1)
    assert len(server.visits()) == 1
    with open(server.browser_log + ".stdio") as f:
        assert f.read() == "devnull\n"   # the browser never had our stdin/stdout
    if os.name == "posix":
        assert stat.S_IMODE(os.stat(server.auth_dir).st_mode) == 0o700
        for name in os.listdir(server.auth_dir):
            assert stat.S_IMODE(os.stat(os.path.join(server.auth_dir, name)).st_mode) == 0o600
    # the authorization request: PKCE S256, state, resource, the challenge's scope
    visit = server.visits()[0]
    for part in ("code_challenge_method=S256", "state=", "resource=", "scope=mcp", "redirect_uri=http%3A%2F%2F127.0.0.1%3A"
                 + str(server.callback_port)):
        assert part in visit


def test_stored_tokens_are_reused_without_a_browser(server):
    relay, _ = session(server)
    relay.close()
    relay, reply = session(server)
    try:
        assert "result" in reply
    finally:
        relay.close()
    assert len(server.visits()) == 1
    assert server.stats()["token"] == 1 and server.stats()["register"] == 1


def test_expired_token_is_refreshed(server):
    server.configure(expires_in=1)
    relay, _ = session(server)
    relay.close()
    assert server.stats()["refresh"] == 0
    time.sleep(1.1)
    relay, reply = session(server)
    try:
        assert "result" in reply
        assert "result" in relay.call("whoami")
    finally:
        relay.close()
    assert server.stats()["refresh"] >= 1
    assert len(server.visits()) == 1


def test_revoked_token_with_refused_refresh_leads_to_a_new_login(server):
    relay, _ = session(server)
    relay.close()
    server.configure(revoke=True, refresh=False)
    relay, reply = session(server)
    try:
        assert "result" in reply, reply
    finally:
        relay.close()
    assert len(server.visits()) == 2
    assert server.stats()["token"] == 2


def test_a_server_that_forgot_our_registration_gets_a_new_one(server):
    # Its store was in memory and it restarted: the refresh answers invalid_client, and a login with
    # the old client id could only fail in the browser.
    relay, _ = session(server)
    relay.close()
    server.configure(forget_clients=True)
    relay, reply = session(server)
    try:
        assert "result" in reply, (reply, relay.stderr)
        assert "registers again" in relay.stderr
    finally:
        relay.close()
    assert server.stats()["register"] == 2 and len(server.visits()) == 2


def test_logout_forgets_the_registration_too(server):
    relay, _ = session(server)
    relay.close()
    assert server.auth("logout").returncode == 0
    assert not [n for n in os.listdir(server.auth_dir) if n.startswith("client-")]


def test_iss_mismatch_is_rejected(server):
    server.configure(iss="wrong")
    result = server.auth("login", "--oauth-timeout", "10")
    assert result.returncode == 1
    assert b"iss" in result.stderr and b"rejected" in result.stderr
    assert server.stats()["token"] == 0


def test_missing_iss_is_rejected_when_the_server_promises_it(server):
    server.configure(iss="omit")
    result = server.auth("login", "--oauth-timeout", "10")
    assert result.returncode == 1 and b"RFC 9207" in result.stderr
    assert server.stats()["token"] == 0


def test_a_forged_state_is_ignored_until_the_timeout(server):
    server.configure(state="wrong")
    # the forged callback must come within it, after two interpreters started (the relay's browser helper and
    # the browser): Windows starts them slowly, very slowly under Wine
    wait = 10 if op.IS_WINDOWS else 2
    result = server.auth("login", "--oauth-timeout", str(wait))
    assert result.returncode == 1
    assert b"state is not this login's" in result.stderr and b"no login within %d s" % wait in result.stderr
    assert server.stats()["token"] == 0


@pytest.mark.parametrize("answer", [{"note": "no grant here"}, {"code": ""}, {"error": ""}])
def test_this_logins_state_without_a_code_or_an_error_ends_the_login_at_once(server, answer):
    """An answer carrying our state but neither a code nor an error (a broken authorization server,
    an edited URL) is this login's answer: it ends the login with one line saying so, not at the timeout."""
    server.configure(authorize_error=answer)
    started = time.monotonic()
    result = server.auth("login", "--oauth-timeout", "25")   # run_proxy gives up after 30 s
    assert time.monotonic() - started < 20, result.stderr
    text = result.stderr.decode()
    assert result.returncode == 1 and "Traceback" not in text and "no login within" not in text, text
    last = text.splitlines()[-1]
    assert last.startswith("ocx-proxy: error: ") and "neither a code nor an error" in last, text
    assert text.count("neither a code nor an error") == 1
    assert server.stats()["token"] == 0


def test_auth_login_status_logout(server):
    assert server.auth("status").returncode == 1
    result = server.auth("login")
    assert result.returncode == 0, result.stderr
    status = server.auth("status")
    assert status.returncode == 0
    text = status.stdout.decode()
    assert "issuer: %s/as" % server.base in text and "scopes: mcp" in text and "client id: client-" in text
    assert "at-" not in text and "rt-" not in text  # never the tokens
    relay, reply = session(server)
    relay.close()
    assert "result" in reply and len(server.visits()) == 1
    logout = server.auth("logout")
    assert logout.returncode == 0 and b"revoked the tokens at" in logout.stderr
    assert server.stats()["revoke"] == 2   # RFC 7009: the refresh token, then the access token
    assert server.auth("status").returncode == 1
    assert server.auth("logout").returncode == 1
    assert not [n for n in os.listdir(server.auth_dir) if n.startswith(("tokens-", "server-", "client-"))]


@pytest.mark.parametrize("why", ["no endpoint", "refused"])
def test_logout_removes_the_tokens_here_when_the_server_cannot_revoke_them(server, why):
    if why == "no endpoint":
        server.configure(revocation=False)   # the metadata names none
    assert server.auth("login").returncode == 0
    if why == "refused":
        server.configure(forget_clients=True)   # the revocation endpoint answers 401 invalid_client
    logout = server.auth("logout")
    assert logout.returncode == 0, logout.stderr
    assert (b"could not revoke the tokens" in logout.stderr) == (why == "refused")
    assert b"HTTP 401" in logout.stderr if why == "refused" else b"revoked" not in logout.stderr
    assert server.stats()["revoke"] == 0 and server.auth("status").returncode == 1


def test_no_login_in_time_gives_a_jsonrpc_error_with_instructions(server):
    relay = server.relay("--oauth-timeout", "1", browser=False)
    try:
        started = time.monotonic()
        reply = relay.initialize()
        assert time.monotonic() - started < 10
        message = reply["error"]["message"]
        assert "auth login --url %s" % server.url in message
        assert "open this URL" in message and "/as/authorize?" in message
        assert reply["error"]["data"]["httpStatus"] == 401
    finally:
        relay.close()
    assert server.visits() == []
    assert "open this URL in a browser" in relay.stderr


def test_busy_callback_port_is_said_and_a_new_registration_made(server):
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", server.callback_port))
    blocker.listen(1)
    try:
        result = server.auth("login")
    finally:
        blocker.close()
    assert result.returncode == 0, result.stderr
    assert b"callback port %d is busy" % server.callback_port in result.stderr
    assert server.stats()["register"] == 1
    assert "127.0.0.1%%3A%d" % server.callback_port not in server.visits()[0]


def test_a_busy_derived_port_gives_way_to_the_next_of_the_issuer(server):
    ports = op.callback_ports(server.base + "/as")
    blocker = socket.socket()
    blocker.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)   # an earlier test's TIME_WAIT must not stop it
    try:
        blocker.bind(("127.0.0.1", ports[0]))
        blocker.listen(1)
    except OSError:
        pass   # busy already
    server.callback_port = None
    try:
        result = server.auth("login")
    finally:
        blocker.close()
    assert result.returncode == 0, result.stderr
    used = urlsplit(server.redirect_uris()[0]).port
    busy = ports[:ports.index(used)]   # one, unless this machine had the next one busy too
    said = "callback port %d is" % busy[0] if len(busy) == 1 else "callback ports %s are" % ", ".join(map(str, busy))
    assert ("%s busy (another login?); registering with port %d" % (said, used)).encode() in result.stderr


def test_busy_callback_port_with_a_preregistered_client_fails_clearly_at_the_timeout(server):
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", server.callback_port))
    blocker.listen(1)
    try:
        result = server.auth("login", "--oauth-client-id", "fixed", "--oauth-timeout", "1")
    finally:
        blocker.close()
    assert result.returncode == 1
    assert b"waiting for it" in result.stderr and b"stayed busy" in result.stderr
    assert b"give --oauth-callback-port PORT" in result.stderr


# -- the callback listener: stray, idle and slow connections; logins to several servers at once ---

def connect_when_listening(port, timeout=10):
    """A socket connected to 127.0.0.1:PORT as soon as something listens there."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            sock = socket.create_connection(("127.0.0.1", port), timeout=1)
            if sock.getsockname() != sock.getpeername():   # a TCP self-connect would take the port itself
                return sock
            sock.close()
        except OSError:
            if time.monotonic() > deadline:
                raise
        time.sleep(0.05)


def log_in_together(servers, *extra, **env):
    """A relay for each of ``servers`` (one may come twice), initialized all at once so that their
    logins run side by side; returns them, closed, once every initialize had its result."""
    relays = [s.relay(*extra, **env) for s in servers]
    try:
        for relay in relays:
            relay.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
        replies = [relay.recv(timeout=30) for relay in relays]
        for relay in relays:
            # a login slower than OAUTH_INITIALIZE_WAIT (Windows starts the browser's interpreters slowly) has the
            # relay answer initialize itself and go on logging in: closing it then would end that login
            assert "connected to " in relay.wait_for_stderr("connected to ", timeout=60)
    finally:
        for relay in relays:
            relay.close()
    assert all("result" in reply for reply in replies), [relay.stderr for relay in relays]
    return relays


def another_server(tmp_path, callback_port=None):
    """A second fixture server (another issuer) sharing the token directory, with its own browser log."""
    other = AuthServer(tmp_path)
    other.browser_log = str(tmp_path / "other-browser.log")
    other.callback_port = callback_port
    return other


def test_an_idle_connection_to_the_callback_port_does_not_hold_up_the_login(server):
    # browsers open spare connections they may never use; one used to stall the listener
    started = time.monotonic()
    result = server.auth("login", "--oauth-timeout", "8", preconnect=1)
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - started < 8 and server.stats()["token"] == 1


def test_the_timeout_holds_while_connections_stay_open(server):
    proc = subprocess.Popen([sys.executable, PROXY, "auth", "login"] + server.args("--oauth-timeout", "2"),
                            env=server.env(idle=1), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    idle = slow = None
    try:
        idle = connect_when_listening(server.callback_port)
        slow = connect_when_listening(server.callback_port)
        slow.sendall(b"GET /callback?code=")   # never finished
        started = time.monotonic()
        _, err = proc.communicate(timeout=15)
    finally:
        proc.kill()
        proc.wait()
        for sock in (idle, slow):
            if sock is not None:
                sock.close()
    assert proc.returncode == 1 and b"no login within 2 s" in err, err
    assert time.monotonic() - started < 5


def test_the_listener_bounds_slow_connections_and_floods(monkeypatch):
    monkeypatch.setattr(op, "OAUTH_CALLBACK_READ_TIMEOUT", 3)
    monkeypatch.setattr(op, "OAUTH_CALLBACK_MAX_CONNECTIONS", 2)
    listener = op.CallbackListener(0)
    answers = []
    waiter = threading.Thread(target=lambda: answers.append(listener.wait("ours", time.monotonic() + 20)))
    waiter.start()
    socks = []

    def connect():
        socks.append(socket.create_connection(("127.0.0.1", listener.port), timeout=5))
        time.sleep(0.2)
        return socks[-1]

    try:
        started = time.monotonic()
        oldest, slow = connect(), connect()
        slow.sendall(b"GET /callback?code=")   # the rest never comes
        connect()   # a third: the oldest goes at once, not the newest
        assert oldest.recv(1) == b"" and time.monotonic() - started < 2
        assert slow.recv(1) == b"" and time.monotonic() - started > 3   # no whole head within the read timeout
        real = connect()
        real.sendall(b"GET /callback?code=c&state=ours HTTP/1.1\r\n\r\n")
        assert real.recv(100).startswith(b"HTTP/1.1 200 OK")
        waiter.join(5)
        assert answers == [{"code": "c", "state": "ours"}]
    finally:
        listener.close()
        for sock in socks:
            sock.close()


def test_a_callback_that_comes_after_the_read_timeout_is_answered(monkeypatch):
    # the read timeout runs from each connection's arrival, not from when the wait began: a person
    # who takes longer than it to approve the login must still be heard
    monkeypatch.setattr(op, "OAUTH_CALLBACK_READ_TIMEOUT", 1)
    listener = op.CallbackListener(0)
    answers = []
    waiter = threading.Thread(target=lambda: answers.append(listener.wait("ours", time.monotonic() + 20)))
    waiter.start()
    try:
        time.sleep(2.5)
        with socket.create_connection(("127.0.0.1", listener.port), timeout=5) as sock:
            sock.sendall(b"GET /callback?code=c&state=ours HTTP/1.1\r\n\r\n")
            assert sock.recv(100).startswith(b"HTTP/1.1 200 OK")
        waiter.join(5)
        assert answers == [{"code": "c", "state": "ours"}]
    finally:
        listener.close()
        waiter.join(20)


def test_stray_requests_to_the_callback_get_an_error_page_and_the_login_goes_on(server):
    # an old tab's answer, a favicon, an old tab without code, a POST, not HTTP, a head too large, the old tab
    # again (an answer with this login's state but no code ends the login: test_this_logins_state_without_...)
    relay, reply = session(server, stray=1)
    relay.close()
    assert reply["result"]["serverInfo"]["name"] == "oauth-fixture", (reply, relay.stderr)
    with open(server.browser_log + ".stray") as f:
        assert f.read().split() == ["400", "404", "400", "405", "400", "431", "400"]
    assert relay.stderr.count("whose state is not this login's") == 3
    assert server.stats()["token"] == 1 and len(server.visits()) == 1


def test_logins_to_two_servers_at_once_keep_each_its_redirect_uri(server, tmp_path):
    server.callback_port = None   # the relay's choice: ports derived from the issuer
    other = another_server(tmp_path)
    servers = (server, other)
    try:
        for _ in range(2):   # the first logins, then new ones (the tokens revoked, refreshes refused)
            log_in_together(servers, delay=1)   # each login holds its port a while
            for s in servers:
                s.configure(revoke=True, refresh=False)
        for s in servers:
            uris = s.redirect_uris()
            assert s.stats()["register"] == 1 and s.stats()["token"] == 2
            assert len(uris) == 2 and uris[0] == uris[1], uris
        assert server.redirect_uris()[0] != other.redirect_uris()[0]
    finally:
        other.stop()


def test_preregistered_clients_of_two_servers_on_one_port_log_in_one_after_the_other(server, tmp_path):
    # both registered the same redirect URI (the default port, say): the second login waits for the port
    other = another_server(tmp_path, server.callback_port)
    servers = (server, other)
    try:
        for s in servers:
            s.configure(clients={"fixed": {"redirect_uris": ["http://127.0.0.1:%d/callback" % server.callback_port]}})
        relays = log_in_together(servers, "--oauth-client-id", "fixed", delay=1)
        assert sum("is busy" in relay.stderr and "waiting for it" in relay.stderr for relay in relays) == 1
        assert [s.stats()["token"] for s in servers] == [1, 1], [relay.stderr for relay in relays]
    finally:
        other.stop()


def test_a_registration_stored_with_one_redirect_uri_keeps_it(server):
    # stored before registrations listed several ports; logins without --oauth-callback-port use it
    assert server.auth("login").returncode == 0
    [path] = [os.path.join(server.auth_dir, n) for n in os.listdir(server.auth_dir) if n.startswith("client-")]
    with open(path) as f:
        doc = json.load(f)
    doc["redirect_uri"] = doc.pop("redirect_uris")[0]
    with open(path, "w") as f:
        json.dump(doc, f)
    server.callback_port = None
    result = server.auth("login")
    assert result.returncode == 0, result.stderr
    uris = server.redirect_uris()
    assert server.stats()["register"] == 1 and uris == [doc["redirect_uri"]] * 2


def test_two_relays_at_once_share_one_login(server):
    first, second = log_in_together((server, server))
    assert len(server.visits()) == 1, first.stderr + second.stderr
    assert server.stats()["token"] == 1


def test_a_relay_that_saw_no_tokens_takes_a_login_that_finished_before_its_own_started(server):
    # the late half of the race above, made certain: this relay's 401 came while it held no tokens;
    # another relay's whole login ends before this one reaches the lock, so there is nothing to wait for
    client = op.OAuthClient(op.RemoteConfig(server.url, environ={}), op.OAuthSettings(
        callback_port=server.callback_port, auth_dir=server.auth_dir, browser=False, timeout=5))
    assert client.tokens is None
    assert server.auth("login").returncode == 0
    client.login(replacing=0)
    assert len(server.visits()) == 1 and server.stats()["token"] == 1
    assert client.access_token() is not None


def test_credentials_of_another_issuer_are_not_reused(server, tmp_path):
    assert server.auth("login").returncode == 0
    other = AuthServer(tmp_path)   # a new authorization server (another issuer), same token directory
    try:
        result = other.auth("login")
        assert result.returncode == 0, result.stderr
        assert other.stats()["register"] == 1   # registered anew, not the first server's client id
    finally:
        other.stop()
    clients = [n for n in os.listdir(server.auth_dir) if n.startswith("client-")]
    assert len(clients) == 2


def test_step_up_on_insufficient_scope(server):
    relay, _ = session(server)
    try:
        reply = relay.call("admin", timeout=20)
        assert reply["result"]["content"][0]["text"] == "scopes: mcp admin", reply
    finally:
        relay.close()
    assert len(server.visits()) == 2 and "scope=mcp+admin" in server.visits()[1]


def test_secrets_never_logged(server):
    relay, _ = session(server, "--log-level", "debug", "--trace", str(server.tmp / "trace.jsonl"))
    try:
        relay.call("whoami")
    finally:
        relay.close()
    files = [os.path.join(server.auth_dir, n) for n in token_files(server)]
    doc = json.load(open(files[0]))
    text = relay.stderr
    trace = (server.tmp / "trace.jsonl").read_text()
    assert '"tools/call"' in trace
    text += trace
    for secret in (doc["access_token"], doc["refresh_token"]):
        assert secret not in text
    assert "code=" not in text or "code=[redacted]" in text


def test_metadata_for_another_resource_is_refused(server):
    server.configure(prm_resource="https://evil.example.com/mcp")
    relay = server.relay()
    try:
        reply = relay.initialize()
        assert reply["error"]["data"]["httpStatus"] == 401, reply
    finally:
        relay.close()
    assert server.visits() == [] and "not %s" % server.base in relay.stderr, relay.stderr


@pytest.mark.parametrize("resource, url, covered", [
    ("https://a.example/mcp", "https://a.example/mcp", True),
    ("https://A.example/", "https://a.example/mcp", True),          # a server may name its root
    ("https://a.example/mcp", "https://a.example/sse", True),       # or the endpoint beside the one we use
    ("https://b.example/mcp", "https://a.example/mcp", False),
    ("https://a.example.evil/mcp", "https://a.example/mcp", False),
    ("http://a.example/mcp", "https://a.example/mcp", False),
    ("https://a.example:8443/mcp", "https://a.example/mcp", False),
])
def test_a_resource_covers_its_own_url_and_its_children_only(resource, url, covered):
    assert op.resource_covers(resource, url) is covered


def test_no_oauth_passes_the_401_on(server):
    relay = server.relay("--no-oauth")
    try:
        reply = relay.initialize()
        assert reply["error"]["data"]["httpStatus"] == 401
    finally:
        relay.close()
    assert server.visits() == []


@pytest.mark.parametrize("prm, as_meta, bare, asked_first", [
    ("path", "rfc8414", True, "/.well-known/oauth-protected-resource/mcp"),       # no resource_metadata
    ("root", "rfc8414", True, "/.well-known/oauth-protected-resource/mcp"),       # path-aware, then root
    ("path", "oidc", False, "/.well-known/oauth-protected-resource/mcp"),         # OpenID, path inserted
    ("none", "rfc8414", True, "/.well-known/oauth-protected-resource/mcp"),       # 2025-03-26: AS at the root
    ("none", "none", True, "/.well-known/oauth-protected-resource/mcp"),          # no metadata: /authorize ...
])
def test_discovery_paths(server, prm, as_meta, bare, asked_first):
    server.configure(prm=prm, as_meta=as_meta, bare_challenge=bare)
    relay, reply = session(server)
    relay.close()
    assert "result" in reply, (reply, relay.stderr)
    paths = server.stats()["paths"]
    assert paths[0] == asked_first
    if prm == "path" and as_meta == "oidc":
        assert "/.well-known/oauth-authorization-server/as" in paths   # RFC 8414 asked first
        assert "/.well-known/openid-configuration/as" in paths
    if prm == "none":
        assert "/authorize" in server.visits()[0].split("?")[0]
    assert "/.well-known/oauth-authorization-server" not in paths or prm == "none"   # never only the root


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post"])
def test_preregistered_client_with_secret(server, method, tmp_path):
    redirect = "http://127.0.0.1:%d/callback" % server.callback_port
    server.configure(auth_methods=[method], clients={"fixed": {"secret": "s3cr3t-value", "method": method,
                                                                "redirect_uris": [redirect]}})
    env = server.env()
    env["MY_SECRET"] = "s3cr3t-value"
    result = run_proxy("auth", "login", *server.args("--oauth-client-id", "fixed", "--oauth-client-secret",
                                                      "${MY_SECRET}"), env=env)
    assert result.returncode == 0, result.stderr
    assert server.stats()["register"] == 0 and server.stats()["token"] == 1
    assert b"s3cr3t-value" not in result.stderr


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post"])
def test_a_preregistered_confidential_client_refreshes_with_its_secret(server, method):
    redirect = "http://127.0.0.1:%d/callback" % server.callback_port
    server.configure(expires_in=1, auth_methods=[method], clients={"fixed": {
        "secret": "s3cr3t-value", "method": method, "redirect_uris": [redirect]}})
    client = ("--oauth-client-id", "fixed", "--oauth-client-secret", "s3cr3t-value")
    assert server.auth("login", *client).returncode == 0
    time.sleep(1.1)
    relay, reply = session(server, *client)
    try:
        assert "result" in reply, reply
    finally:
        relay.close()
    assert server.stats()["refresh"] == 1 and len(server.visits()) == 1, relay.stderr
    logout = server.auth("logout", *client)
    assert logout.returncode == 0 and server.stats()["revoke"] == 2, logout.stderr
    assert b"s3cr3t-value" not in logout.stderr


def test_client_file(server, tmp_path):
    redirect = "http://127.0.0.1:%d/callback" % server.callback_port
    server.configure(auth_methods=["client_secret_basic"], clients={"filed": {
        "secret": "from-a-file", "method": "client_secret_basic", "redirect_uris": [redirect]}})
    path = tmp_path / "client.json"
    path.write_text(json.dumps({"client_id": "filed", "client_secret": "from-a-file"}))
    result = server.auth("login", "--oauth-client-file", str(path))
    assert result.returncode == 0, result.stderr
    assert server.stats()["register"] == 0


HOLD_LOCK = """
import sys, time
sys.path.insert(0, sys.argv[1])
import ocx_proxy
assert ocx_proxy.LoginLock(sys.argv[2]).acquire()
print("held", flush=True)
time.sleep(60)
"""


def test_a_login_waits_for_a_live_lock_holder_and_proceeds_once_it_is_killed(server):
    os.makedirs(server.auth_dir)
    lock = os.path.join(server.auth_dir, "login-%s.lock" % op._key(server.base + "/as", server.url))
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, os.path.dirname(PROXY), lock], stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline().rstrip() == b"held"   # \r\n on Windows
        result = server.auth("login", "--oauth-timeout", "1")
        assert result.returncode == 1
        assert b"another ocx-proxy is logging in" in result.stderr
        assert b"did not finish within 1 s" in result.stderr
        assert server.visits() == []
    finally:
        holder.kill()   # no clean-up runs: the operating system drops the lock
        holder.wait()
    result = server.auth("login", "--oauth-timeout", "10")
    assert result.returncode == 0, result.stderr
    assert len(server.visits()) == 1


def test_step_up_gives_up_after_three_attempts(server):
    server.configure(admin_forbidden=True)
    relay, _ = session(server)
    try:
        for attempt in range(3):
            assert relay.call("admin", timeout=20)["error"]["data"]["httpStatus"] == 403
        reply = relay.call("admin", timeout=20)
        assert "after 3 step-up logins" in reply["error"]["message"], reply
    finally:
        relay.close()
    assert len(server.visits()) == 4   # the first login and three step-ups, no more


@pytest.mark.parametrize("transport", ["auto", "sse"])
def test_auto_and_legacy_sse_log_in_too(server, transport):
    if transport == "sse":
        server.url = server.base + "/sse"
    relay, reply = session(server, transport=transport)
    try:
        assert reply["result"]["serverInfo"]["name"] == "oauth-fixture", (reply, relay.stderr)
        assert relay.call("whoami", timeout=20)["result"]["content"][0]["text"] == "scopes: mcp"
    finally:
        relay.close()
    assert len(server.visits()) == 1


def test_header_values_never_go_to_the_authorization_server(server):
    relay, reply = session(server, "--header", "X-Api-Key: for-the-mcp-server-only")
    relay.close()
    assert "result" in reply
    assert server.stats()["oauth_headers_seen"] == []


# -- the token store: checked before it is read, one lookup per request ------------------------------

PLANTED = {"access_token": "planted-at", "refresh_token": "planted-rt"}


def plant(path, **fields):
    """Put ``fields`` into the token document at ``path``, as someone able to write there would."""
    with open(path) as f:
        doc = json.load(f)
    doc.update(fields)
    with open(path, "w") as f:
        json.dump(doc, f)
    return doc


def received_since(server, count):
    """What the fixture server received after its first ``count`` requests (paths, Authorization, bodies)."""
    return server.stats()["requests"][count:]


@pytest.mark.parametrize("how, planted", [("others may write to it", "access token"),
                                          ("others may write to it", "refresh token"),
                                          ("it belongs to uid", "access token")])
@pytest.mark.skipif(not op.FILE_OWNERS, reason="POSIX only: needs a directory's owner and mode bits (chmod 0777, "
                    "chown), which the token store checks; Windows has ACLs instead, and no check is made there")
def test_a_token_directory_that_is_not_privately_ours_is_refused_and_nothing_in_it_is_sent(server, how, planted):
    # Another user made the directory (0777, or theirs) and put tokens in it: sent, the user would work in
    # the attacker's account; refreshed, the client secret and the planted refresh token would go to the
    # planted token endpoint.
    if how.startswith("it belongs") and os.geteuid() != 0:
        pytest.skip("needs root: only root can give a directory to another user")
    redirect = "http://127.0.0.1:%d/callback" % server.callback_port
    server.configure(auth_methods=["client_secret_basic"], clients={"fixed": {
        "secret": "s3cr3t-value", "method": "client_secret_basic", "redirect_uris": [redirect]}})
    client = ("--oauth-client-id", "fixed", "--oauth-client-secret", "s3cr3t-value")
    assert server.auth("login", *client).returncode == 0
    fields = dict(PLANTED)
    if planted == "refresh token":
        fields.update(expires_at=time.time() - 100, token_endpoint=server.base + "/planted/token")
    for name in token_files(server):
        plant(os.path.join(server.auth_dir, name), **fields)
    if how.startswith("it belongs"):
        for name in [""] + os.listdir(server.auth_dir):
            os.chown(os.path.join(server.auth_dir, name), 4321, 4321)
    else:
        os.chmod(server.auth_dir, 0o777)
    count = len(server.stats()["requests"])
    relay, reply = session(server, *client)
    relay.close()
    received = received_since(server, count)
    assert "planted" not in json.dumps(received) and "token" not in " ".join(r["path"] for r in received)
    assert {r["authorization"] for r in received if r["path"] == "/mcp"} == {None}, received
    assert "refusing token directory %s: %s" % (server.auth_dir, how) in reply["error"]["message"], reply
    said = [line for line in relay.stderr.splitlines() if line.startswith("ocx-proxy: warning: refusing token")]
    assert len(said) == 1, relay.stderr   # once, though both messages the client sent were refused
    status = server.auth("status")
    assert status.returncode == 1 and b"refusing token directory" in status.stderr
    assert b"planted" not in status.stdout + status.stderr


@pytest.mark.parametrize("how", ["a symbolic link", "not a regular file of ours"])
@pytest.mark.skipif(not op.FILE_OWNERS, reason="POSIX only: needs O_NOFOLLOW (a link refused when opened) and a "
                    "file's owner (chown), which the token store checks; Windows has neither, and no check is made there")
def test_a_token_file_that_is_a_link_or_not_ours_is_not_read(server, how):
    if how.startswith("not") and os.geteuid() != 0:
        pytest.skip("needs root: only root can give a file to another user")
    assert server.auth("login").returncode == 0
    [name] = token_files(server)
    path, planted = os.path.join(server.auth_dir, name), str(server.tmp / "planted.json")
    os.rename(path, planted)
    doc = plant(planted, **PLANTED)
    if how.startswith("not"):
        os.chown(planted, 4321, 4321)
        os.rename(planted, path)
    else:
        os.symlink(planted, path)
    count = len(server.stats()["requests"])
    relay, reply = session(server)
    relay.close()
    assert "result" in reply, reply   # a new login, its tokens in a file of ours where the other one was
    assert "planted" not in json.dumps(received_since(server, count))
    assert len(server.visits()) == 2 and not os.path.islink(path) and os.stat(path).st_uid == os.geteuid()
    if how.endswith("link"):
        with open(planted) as f:
            assert json.load(f) == doc   # not written through the link either
    said = [line for line in relay.stderr.splitlines() if "refusing token file" in line]
    assert len(said) == 1 and how in said[0], relay.stderr


def store_tokens(auth_dir, url, issuer):
    """Tokens for ``url`` from ``issuer`` in ``auth_dir``, stored the way a login stores them."""
    client = op.OAuthClient(op.RemoteConfig(url, environ={}), op.OAuthSettings(auth_dir=auth_dir))
    client._save_tokens({"access_token": "at-" + url, "refresh_token": "rt-" + url, "expires_in": 3600},
                        issuer, {"token_endpoint": issuer + "/token"}, {"client_id": "c"})


OPENED = []


def audit(event, args):
    if OPENED and event in ("open", "os.listdir", "os.scandir"):
        OPENED.append((event, str(args[0])))


sys.addaudithook(audit)   # for good (a hook cannot be removed): it records only while OPENED is not empty


def test_finding_a_servers_tokens_reads_no_other_servers_file(tmp_path):
    auth_dir = str(tmp_path / "auth")
    for n in range(50):
        store_tokens(auth_dir, "http://mcp%d.example/mcp" % n, "http://auth%d.example" % n)
    others = set(os.listdir(auth_dir))
    for stored in (False, True):
        if stored:
            store_tokens(auth_dir, "http://ours.example/mcp", "http://auth.example")
        OPENED[:] = [("start", "")]
        try:
            client = op.OAuthClient(op.RemoteConfig("http://ours.example/mcp", environ={}),
                                    op.OAuthSettings(auth_dir=auth_dir))
            token = client.access_token()
        finally:
            events, OPENED[:] = OPENED[1:], []
        assert token == ("at-http://ours.example/mcp" if stored else None)
        assert [e for e in events if e[0] != "open"] == []   # the directory is not listed
        assert not [path for _, path in events if os.path.basename(path) in others], events


def test_a_server_that_never_asks_for_a_login_costs_no_token_lookups(http_server, tmp_path):
    """Tokens are looked for before a request only while we hold some (its first 401 looks): a
    transport to a server that needs no login opens nothing in the token directory per request."""
    srv = http_server(reply="json", get_stream="405")
    auth_dir = str(tmp_path / "auth")
    store_tokens(auth_dir, "http://other.example/mcp", "http://auth.example")   # the directory is there
    config = op.RemoteConfig(srv.url, environ={})
    config.oauth = op.OAuthClient(config, op.OAuthSettings(auth_dir=auth_dir))
    loop, lines = op.Loop(), []
    arrived = threading.Condition()

    def on_line(line, msg=None):
        with arrived:
            lines.append(json.loads(line))
            arrived.notify()

    upstream = op.StreamableHttpUpstream(loop, config, on_line, lambda why: loop.stop())
    thread = threading.Thread(target=loop.run, daemon=True)
    thread.start()
    loop.post(upstream.start)

    def request(n, method, params=None):
        msg = {"jsonrpc": "2.0", "id": n, "method": method, "params": params} if params else \
            {"jsonrpc": "2.0", "id": n, "method": method}
        loop.post(upstream.send, op.encode_message(msg))
        with arrived:
            assert arrived.wait_for(lambda: any(m.get("id") == n for m in lines), 10)

    request(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "test", "version": "1"}})
    OPENED[:] = [("start", "")]
    try:
        for n in range(2, 7):
            request(n, "ping")
    finally:
        events, OPENED[:] = OPENED[1:], []
        loop.post(upstream.close_input)
        thread.join(10)
    assert [m.get("result") for m in lines[1:]] == [{}] * 5
    assert not [path for _, path in events
                if auth_dir in path or os.path.basename(path).startswith(("server-", "tokens-"))], events


def test_tokens_of_the_previous_version_are_taken_without_a_login_and_found_by_url_and_resource(server):
    server.url = server.base + "/sse"   # its metadata names the resource /mcp
    relay, reply = session(server, transport="sse")
    relay.close()
    assert "result" in reply
    for name in os.listdir(server.auth_dir):   # the previous version stored no server files
        if name.startswith("server-"):
            os.unlink(os.path.join(server.auth_dir, name))
    relay, reply = session(server, transport="sse")
    relay.close()
    assert "result" in reply and len(server.visits()) == 1, relay.stderr
    assert len([n for n in os.listdir(server.auth_dir) if n.startswith("server-")]) == 2
    unauthorized = server.stats()["mcp_401"]
    server.url = server.base + "/mcp"
    relay, reply = session(server)
    relay.close()
    assert "result" in reply and len(server.visits()) == 1
    assert server.stats()["mcp_401"] == unauthorized   # the tokens went with the first request
# ---------------------------------------------------------------------------
# Hostile authorization servers: what is opened, where secrets go, whose metadata, what is printed
# ---------------------------------------------------------------------------

def refused_before_anything(server, result, *needles):
    """``auth login`` stopped with one line naming the server and ``needles``, having registered
    nothing and opened no browser."""
    text = assert_one_line_error(result)
    assert "refused" in text and server.base in text, text
    for needle in needles:
        assert needle in text, text
    assert server.visits() == [] and server.stats()["register"] == 0
    return text


@pytest.mark.parametrize("endpoint", ["javascript:alert(document.cookie)", "file:///etc/passwd",
                                      "data:text/html,<script>alert(1)</script>", "-remote-debugging-port=9222",
                                      "https:///no-host", "http://192.0.2.1/authorize"])
def test_only_web_pages_are_opened(server, endpoint):
    server.configure(meta={"authorization_endpoint": endpoint})
    refused_before_anything(server, server.auth("login"), "authorization_endpoint")


@pytest.mark.parametrize("name", ["token_endpoint", "registration_endpoint", "revocation_endpoint"])
def test_no_secret_goes_to_a_cleartext_endpoint(server, name):
    # 192.0.2.1 (TEST-NET-1) is never contacted: the metadata is refused first
    server.configure(meta={name: "http://192.0.2.1/" + name})
    refused_before_anything(server, server.auth("login"), name, "http://192.0.2.1/" + name, "https")


def test_a_cleartext_authorization_server_is_refused_before_its_metadata_is_asked_for(server):
    server.configure(prm_as="http://192.0.2.1/as")
    refused_before_anything(server, server.auth("login"), "http://192.0.2.1/as", "https")


@pytest.mark.parametrize("url, allowed", [
    ("https://as.example/authorize", True),
    ("HTTPS://as.example:8443/a?x=1", True),
    ("http://localhost:8080/authorize", True),
    ("http://127.0.0.1/authorize", True),
    ("http://127.5.6.7/authorize", True),
    ("http://[::1]:9000/authorize", True),
    ("http://as.example/authorize", False),
    ("http://localhost.as.example/authorize", False),
    ("http://10.0.0.1/authorize", False),
    ("https:///authorize", False),
    ("javascript:alert(1)", False),
    ("file:///etc/passwd", False),
    ("-a", False),
    (" https://as.example/", False),
    (None, False),
])
def test_endpoint_rule(url, allowed):
    assert (op.endpoint_problem(url) is None) is allowed


@pytest.mark.parametrize("as_meta", ["rfc8414", "oidc"])
def test_metadata_claiming_another_issuer_is_refused_before_registering(server, as_meta):
    server.configure(as_meta=as_meta, meta={"issuer": server.base + "/other"})
    refused_before_anything(server, server.auth("login"), "issuer", server.base + "/other")


def test_2025_03_26_metadata_at_the_root_speaks_for_that_origin(server):
    # As the conformance suite's back-compat scenario serves it: the metadata at
    # <origin>/.well-known/oauth-authorization-server names an issuer under that origin.
    server.configure(prm="none", meta={"issuer": server.base + "/oauth"})
    result = server.auth("login")
    assert result.returncode == 0, result.stderr
    assert len(server.visits()) == 1


def test_2025_03_26_metadata_naming_another_origin_is_refused(server):
    other = "http://localhost:%d" % server.port   # the same server under another name: another origin
    server.configure(prm="none", meta={"issuer": other})
    refused_before_anything(server, server.auth("login"), "issuer", other)


@pytest.mark.parametrize("raw", ["1" * 400, "1e400", "NaN", "-Infinity", "-5", "true", '"soon"'])
def test_hostile_expires_in_never_breaks_login_status_or_the_relay(server, raw):
    server.configure(expires_in_raw=raw)
    login = server.auth("login")
    assert login.returncode == 0, login.stderr
    assert b"Traceback" not in login.stderr and b"internal error" not in login.stderr
    status = server.auth("status")
    assert status.returncode == 0, status.stderr
    assert b"Traceback" not in status.stderr and b"internal error" not in status.stderr
    expiry = [line for line in status.stdout.decode().splitlines() if line.startswith("access token expires:")]
    assert len(expiry) == 1 and "(expired)" not in expiry[0], status.stdout
    relay, reply = session(server)
    relay.close()
    assert "result" in reply, (reply, relay.stderr)
    assert len(server.visits()) == 1


FORGED = "denied\x1b[2J\x1b]0;pwned\x07\r\nocx-proxy: info: logged in to https://bank.example"


def assert_printed_safely(stderr):
    """Server text reached stderr escaped: no control character, no forged line."""
    stderr = stderr.replace(os.linesep, "\n")   # Windows ends each of our lines with \r\n
    assert not any(ch in stderr for ch in "\x1b\x07\r"), stderr
    assert all(not line.startswith("ocx-proxy: info: logged in") for line in stderr.splitlines()), stderr
    assert "\\x1b[2J" in stderr and "\\n" in stderr


@pytest.mark.parametrize("where", ["authorization response", "token endpoint"])
def test_server_error_text_is_printed_escaped_on_one_line(server, where):
    refusal = {"error": "access_denied", "error_description": FORGED}
    server.configure(**{"authorize_error" if where == "authorization response" else "token_error": refusal})
    result = server.auth("login")
    assert result.returncode == 1
    text = result.stderr.decode()
    assert_printed_safely(text)
    assert text.splitlines()[-1].startswith("ocx-proxy: error: ") and "access_denied" in text.splitlines()[-1]


def test_server_error_text_reaches_the_relay_log_and_the_client_escaped(server):
    server.configure(authorize_error={"error": "access_denied", "error_description": FORGED})
    relay = server.relay()
    try:
        reply = relay.initialize()
    finally:
        relay.close()
    message = reply["error"]["message"]
    assert "access_denied" in message and not any(ch in message for ch in "\x1b\x07\r\n"), message
    assert "login to" in relay.stderr and "failed" in relay.stderr
    assert_printed_safely(relay.stderr)


def test_a_hostile_client_id_is_printed_escaped(server):
    server.configure(client_id_prefix="c\x1b[31m\nocx-proxy: info: logged in ")
    login = server.auth("login")
    assert login.returncode == 0, login.stderr
    status = server.auth("status")
    assert status.returncode == 0
    for out in (login.stderr.decode(), status.stdout.decode()):
        assert "\x1b" not in out and "\\x1b[31m" in out
        assert all(not line.startswith("ocx-proxy: info: logged in ") for line in out.splitlines()), out


def test_a_credential_in_the_url_query_goes_to_no_authorization_server_and_no_log(server):
    # 2025-03-26 (no protected-resource metadata): the resource is the configured URL, minus its credentials
    server.configure(prm="none", resource=server.url + "?tenant=blue")
    server.url += "?api_key=sk-live-0123456789abcdef&tenant=blue"
    relay, reply = session(server, "--oauth-timeout", "1", "--log-level", "debug", browser=False)
    relay.close()
    assert "open this URL" in reply["error"]["message"]
    assert "sk-live-0123456789abcdef" not in relay.stderr + reply["error"]["message"]
    assert "tenant%3Dblue" in reply["error"]["message"]   # the rest of the query stays in the resource
    result = server.auth("login")
    assert result.returncode == 0, result.stderr
    assert b"sk-live-0123456789abcdef" not in result.stderr
    assert "sk-live-0123456789abcdef" not in server.visits()[0]


@pytest.mark.parametrize("expires_at", [float("nan"), float("inf"), "soon", True, 10 ** 400],
                         ids=["nan", "inf", "string", "bool", "400-digits"])
def test_tokens_an_earlier_version_stored_with_hostile_values_are_used_safely(server, expires_at):
    # Earlier versions stored expires_in as it came, and any token endpoint: a token file of ours may
    # hold NaN or Infinity, and an http:// endpoint across a network.  Neither may break `auth status`
    # nor take the refresh token and client secret there in clear.
    assert server.auth("login").returncode == 0
    [name] = token_files(server)
    path = os.path.join(server.auth_dir, name)
    with open(path) as f:
        doc = json.load(f)
    doc.update(expires_at=expires_at, lifetime=expires_at)
    with open(path, "w") as f:
        json.dump(doc, f)
    status = server.auth("status")
    assert status.returncode == 0 and b"Traceback" not in status.stderr, status.stderr
    assert b"access token expires: never" in status.stdout
    # expired, with its endpoint at 0.0.0.0 (this machine, but not loopback by the https rule)
    doc.update(expires_at=time.time() - 100, lifetime=3600,
               token_endpoint=doc["token_endpoint"].replace("127.0.0.1", "0.0.0.0"))
    with open(path, "w") as f:
        json.dump(doc, f)
    refreshes = server.stats()["refresh"]
    relay, reply = session(server)
    relay.close()
    assert "result" in reply, (reply, relay.stderr)
    assert server.stats()["refresh"] == refreshes   # no refresh token went out in clear
    assert "plain http to another machine" in relay.stderr and len(server.visits()) == 2


def test_a_relay_that_found_tokens_by_its_url_refreshes_them_for_their_resource(server):
    # Logged in through /sse, whose metadata names the resource /mcp: an expired token is refreshed
    # for /mcp (the fixture refuses a refresh for another resource) without a new login.
    server.url = server.base + "/sse"
    relay, reply = session(server, transport="sse")
    relay.close()
    assert "result" in reply
    [name] = token_files(server)
    plant(os.path.join(server.auth_dir, name), expires_at=time.time() - 100)
    relay, reply = session(server, transport="sse")
    relay.close()
    assert "result" in reply, relay.stderr
    assert server.stats()["refresh"] == 1 and len(server.visits()) == 1, relay.stderr
    assert token_files(server) == [name]


def test_a_refused_refresh_keeps_a_registration_newer_than_its_client(server):
    # Another relay found the registration forgotten and registered anew; this relay's refresh, still
    # with the old client, is refused invalid_client: the newer registration stays and is used.
    relay, _ = session(server)
    relay.close()
    server.configure(forget_clients=True)
    [client_file] = [n for n in os.listdir(server.auth_dir) if n.startswith("client-")]
    path = os.path.join(server.auth_dir, client_file)
    with open(path) as f:
        client = json.load(f)
    answer = json.loads(OPENER.open(urllib.request.Request(
        server.base + "/as/register", json.dumps({"redirect_uris": client["redirect_uris"]}).encode(),
        {"Content-Type": "application/json"})).read())
    client["client_id"] = answer["client_id"]
    with open(path, "w") as f:
        json.dump(client, f)
    [name] = token_files(server)
    plant(os.path.join(server.auth_dir, name), expires_at=time.time() - 100)
    relay, reply = session(server)
    relay.close()
    assert "result" in reply, (reply, relay.stderr)
    assert server.stats()["register"] == 2 and "registers again" not in relay.stderr, relay.stderr
    with open(path) as f:
        assert json.load(f)["client_id"] == answer["client_id"]


def test_a_client_file_with_a_secret_that_is_not_a_string_is_a_usage_error(server, tmp_path):
    path = tmp_path / "client.json"
    path.write_text(json.dumps({"client_id": "filed", "client_secret": 12345}))
    result = server.auth("login", "--oauth-client-file", str(path))
    assert result.returncode == 2, result.stderr
    assert b"client_secret" in result.stderr and b"Traceback" not in result.stderr


# ---------------------------------------------------------------------------
# Device authorization grant (RFC 8628)
# ---------------------------------------------------------------------------

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"


def device_requests(server, path):
    return [parse_qs(r["body"]) for r in server.stats()["requests"] if r["path"] == path]


def assert_device_login(server, stderr):
    """One device code issued and shown (URI, code, the completed URI), tokens stored, no browser."""
    (issued,) = server.stats()["device"]
    line = [line for line in stderr.splitlines() if issued["user_code"] in line]
    assert line and server.base + "/as/activate" in line[0], stderr
    assert server.base + "/as/activate?user_code=" + issued["user_code"] in stderr
    assert server.visits() == [] and token_files(server)
    (device,) = device_requests(server, "/as/device")
    assert device["resource"] == [server.url] and device["scope"] == ["mcp"]
    polls = [f for f in device_requests(server, "/as/token") if f["grant_type"] == [DEVICE_GRANT]]
    assert polls and all(f["resource"] == [server.url] for f in polls)
    return issued


def test_auth_login_device_shows_the_code_polls_and_stores_tokens_a_relay_uses(server):
    server.configure(device={"interval": 1, "user": {"after": 1.5, "action": "approve"}}, expires_in=1)
    started = time.monotonic()
    result = server.auth("login", "--device")
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - started < 15
    issued = assert_device_login(server, result.stderr.decode())
    # pending until approved, polled no faster than the interval
    assert len(issued["polls"]) >= 2
    assert all(b - a >= 0.9 for a, b in zip(issued["polls"], issued["polls"][1:])), issued["polls"]
    # the registration asked for the device grant (the fixture refuses it otherwise)
    (registration,) = [json.loads(r["body"]) for r in server.stats()["requests"] if r["path"] == "/as/register"]
    assert DEVICE_GRANT in registration["grant_types"] and "refresh_token" in registration["grant_types"]
    time.sleep(1.1)   # the access token expired: the relay refreshes it as after a browser login
    relay, reply = session(server)
    try:
        assert "result" in reply and relay.call("whoami")["result"]["content"][0]["text"] == "scopes: mcp"
    finally:
        relay.close()
    assert len(server.stats()["device"]) == 1 and server.visits() == [] and server.stats()["refresh"] >= 1


def approve(server, user_code):
    """The user types the code they were shown into the verification page and approves."""
    OPENER.open(urllib.request.Request(server.base + "/as/activate", urlencode(
        {"user_code": user_code, "action": "approve"}).encode(), method="POST")).read()


def test_relay_with_oauth_device_logs_in_with_the_code_the_user_enters(server):
    server.configure(device={"interval": 1})
    relay = server.relay("--oauth-device")
    try:
        relay.send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": "test", "version": "1"}}})
        stderr = relay.wait_for_stderr("/as/activate", timeout=10)
        assert "/as/activate" in stderr, stderr
        line = [line for line in stderr.splitlines() if "/as/activate" in line][0]
        approve(server, line.split("enter the code ")[1].split()[0])
        reply, _ = relay.wait_for(1, timeout=20)
        assert reply["result"]["serverInfo"]["name"] == "oauth-fixture", reply
    finally:
        relay.close()
    assert_device_login(server, relay.stderr)


@pytest.mark.parametrize("why, extra, env", [
    ("no display", (), {"browser": False}),
    ("--oauth-no-browser", ("--oauth-no-browser",), {}),
    ("ssh", (), {"SSH_CONNECTION": "192.0.2.9 50000 192.0.2.1 22"}),
    ("ssh tty", (), {"SSH_TTY": "/dev/pts/3"}),
    ("env twin", (), {"OCX_PROXY_OAUTH_DEVICE": "1"}),
])
def test_the_device_flow_is_used_where_no_browser_can_be_opened(server, why, extra, env):
    server.configure(device={"interval": 1, "user": {"after": 0.5, "action": "approve"}})
    browser = env.pop("browser", True)
    environ = server.env(browser=browser)
    environ.update(env)
    result = run_proxy("auth", "login", *server.args(*extra), env=environ)
    assert result.returncode == 0, result.stderr
    assert_device_login(server, result.stderr.decode())


def test_with_a_browser_and_a_device_endpoint_the_browser_login_stays(server):
    server.configure(device={"interval": 1})
    result = server.auth("login")
    assert result.returncode == 0, result.stderr
    assert len(server.visits()) == 1 and server.stats()["device"] == []


def test_without_a_device_endpoint_the_browser_login_is_used_and_said(server):
    result = server.auth("login", "--device")
    assert result.returncode == 0, result.stderr
    assert len(server.visits()) == 1
    said = [line for line in result.stderr.decode().splitlines() if "device login" in line]
    assert len(said) == 1 and "browser" in said[0] and "--oauth-device" in said[0], result.stderr


def test_slow_down_adds_five_seconds_to_the_interval(server):
    server.configure(device={"interval": 1, "slow_down": 1, "user": {"after": 0.5, "action": "approve"}})
    result = server.auth("login", "--device")
    assert result.returncode == 0, result.stderr
    (issued,) = server.stats()["device"]
    assert len(issued["polls"]) == 2 and issued["polls"][1] - issued["polls"][0] >= 5.9, issued["polls"]


@pytest.mark.parametrize("device, extra, needle", [
    ({"interval": 1, "user": {"after": 0.5, "action": "deny"}}, (), "denied"),
    ({"interval": 1, "expires_in": 2}, (), "expired"),
    ({"interval": 1}, ("--oauth-timeout", "2"), "--oauth-timeout"),
])
def test_a_denied_expired_or_unfinished_device_login_fails_in_one_line(server, device, extra, needle):
    server.configure(device=device)
    started = time.monotonic()
    result = server.auth("login", "--device", *extra)
    assert time.monotonic() - started < 10
    text = result.stderr.decode()
    assert result.returncode == 1 and "Traceback" not in text
    assert needle in text, text
    assert not token_files(server)


def test_device_secrets_never_reach_stderr_or_the_trace(server):
    server.configure(device={"interval": 1, "user": {"after": 0.5, "action": "approve"}})
    trace = server.tmp / "trace.jsonl"
    relay, reply = session(server, "--oauth-device", "--log-level", "debug", "--trace", str(trace))
    try:
        assert "result" in reply, relay.stderr
        relay.call("whoami")
    finally:
        relay.close()
    text = relay.stderr + trace.read_text()
    polls = [f for f in device_requests(server, "/as/token") if f["grant_type"] == [DEVICE_GRANT]]
    doc = json.load(open(os.path.join(server.auth_dir, token_files(server)[0])))
    for secret in (polls[0]["device_code"][0], doc["access_token"], doc["refresh_token"]):
        assert secret not in text
    assert "dc-" not in text


def test_a_relay_with_no_approval_in_time_tells_the_client_the_code(server):
    server.configure(device={"interval": 1})
    relay = server.relay("--oauth-device", "--oauth-timeout", "2")
    try:
        message = relay.initialize()["error"]["message"]
    finally:
        relay.close()
    # notifications/initialized may start another login: the message shows the first one's code
    issued = server.stats()["device"][0]
    assert issued["user_code"] in message and server.base + "/as/activate" in message, message
    assert "auth login --device --url" in message


@pytest.mark.parametrize("where", ["device_authorization_endpoint", "verification_uri"])
def test_a_cleartext_device_endpoint_or_verification_page_is_refused(server, where):
    server.configure(device={"interval": 1, "verification_uri": "http://192.0.2.1/activate"},
                     meta={"device_authorization_endpoint": "http://192.0.2.1/device"}
                     if where == "device_authorization_endpoint" else {})
    result = server.auth("login", "--device")
    if where == "device_authorization_endpoint":   # refused with the metadata, before registering
        assert_one_line_error(result) and server.stats()["register"] == 0
    else:
        assert result.returncode == 1 and server.stats()["device"]
    text = result.stderr.decode().splitlines()[-1]
    assert "refused" in text and "http://192.0.2.1/" in text and "https" in text, text
    assert "/activate" not in result.stderr.decode().replace(text, "")   # not shown to the user
    assert not token_files(server) and server.visits() == []


def test_the_login_prompt_hook_gets_the_uri_and_the_code(server):
    server.configure(device={"interval": 1, "user": {"after": 0.5, "action": "approve"}})
    config = op.RemoteConfig(server.url, (), 10, 10, None, False)
    oauth = op.OAuthClient(config, op.OAuthSettings(timeout=20, auth_dir=server.auth_dir, device=True))
    seen = []
    oauth.on_login_prompt = lambda *prompt: seen.append(prompt)
    oauth.login()
    (issued,) = server.stats()["device"]
    uri = server.base + "/as/activate"
    assert seen == [(uri, issued["user_code"], uri + "?user_code=" + issued["user_code"])]
    assert oauth.access_token()


# ---------------------------------------------------------------------------
# Client ID Metadata Documents (2025-11-25) and redirects of the OAuth endpoints
# ---------------------------------------------------------------------------

CIMD_URL = "https://client.example/ocx-proxy.json"


def test_a_client_metadata_url_is_the_client_id_where_the_server_accepts_one(server):
    # the authorization server has fetched the document: it lists our redirect URI
    redirect = "http://127.0.0.1:%d/callback" % server.callback_port
    server.configure(meta={"client_id_metadata_document_supported": True},
                     clients={CIMD_URL: {"redirect_uris": [redirect]}})
    result = server.auth("login", "--oauth-client-metadata-url", CIMD_URL)
    assert result.returncode == 0, result.stderr
    stats = server.stats()
    assert stats["register"] == 0 and stats["token"] == 1
    assert parse_qs(urlsplit(server.visits()[0]).query)["client_id"] == [CIMD_URL]
    token = [r for r in stats["requests"] if r["path"] == "/as/token"]
    assert parse_qs(token[0]["body"])["client_id"] == [CIMD_URL]
    # the relay finds the tokens and refreshes as that client
    server.configure(revoke=True)
    relay, reply = session(server, "--oauth-client-metadata-url", CIMD_URL)
    relay.close()
    assert "result" in reply, relay.stderr
    assert server.stats()["refresh"] == 1 and server.stats()["register"] == 0


def test_a_client_metadata_url_the_server_does_not_accept_gives_way_to_registration(server):
    env = server.env()
    env["OCX_PROXY_OAUTH_CLIENT_METADATA_URL"] = CIMD_URL
    result = run_proxy("auth", "login", *server.args(), env=env)
    assert result.returncode == 0, result.stderr
    assert server.stats()["register"] == 1
    said = [line for line in result.stderr.decode().splitlines() if "client_id_metadata_document_supported" in line]
    assert len(said) == 1 and "register" in said[0], result.stderr
    assert CIMD_URL not in server.visits()[0]


@pytest.mark.parametrize("how, url", [("option", url) for url in (
    "http://client.example/ocx.json", "https://client.example", "https://client.example/",
    "https://user:pw@client.example/ocx.json", "https://client.example/ocx.json#top",
    "https://client.example/a/../ocx.json", "client.example/ocx.json", "https://client.example/ocx json")]
    + [("env", "http://client.example/ocx.json")])
def test_a_client_metadata_url_that_cannot_be_a_client_id_is_a_usage_error(server, how, url):
    env = server.env()
    if how == "env":
        env["OCX_PROXY_OAUTH_CLIENT_METADATA_URL"] = url
        extra = []
    else:
        extra = ["--oauth-client-metadata-url", url]
    for command in (["auth", "login"], ["streamable-http"]):
        result = run_proxy(*command, *server.args(*extra), env=env)
        assert result.returncode == 2, result.stderr
        text = result.stderr.decode()
        assert "Traceback" not in text and "Client ID Metadata Document" in text, text
    assert server.stats()["requests"] == []


REDIRECTED = {   # path -> where the fixture also serves it
    "prm": "/.well-known/oauth-protected-resource/mcp",
    "as-metadata": "/.well-known/oauth-authorization-server/as",
    "registration": "/as/register",
    "token": "/as/token",
}


@pytest.mark.parametrize("status", [301, 302, 307, 308])
@pytest.mark.parametrize("what", sorted(REDIRECTED))
def test_a_redirect_within_the_origin_is_followed(server, what, status):
    path = REDIRECTED[what]
    server.configure(redirects={path: [status, "/moved" + path]}, bare_challenge=True)
    result = server.auth("login")
    assert result.returncode == 0, result.stderr
    requests = server.stats()["requests"]
    moved = [r for r in requests if r["path"] == "/moved" + path]
    assert len(moved) == 1
    original = [r for r in requests if r["path"] == path][0]
    assert (moved[0]["method"], moved[0]["body"]) == (original["method"], original["body"])   # POST stays POST


def test_a_redirect_to_another_origin_is_refused_and_nothing_secret_goes_there(server, tmp_path):
    other = another_server(tmp_path)
    try:
        redirect = "http://127.0.0.1:%d/callback" % server.callback_port
        server.configure(auth_methods=["client_secret_basic"], redirects={"/as/token": [307, other.base + "/as/token"]},
                         clients={"fixed": {"secret": "s3cr3t-value", "method": "client_secret_basic",
                                            "redirect_uris": [redirect]}})
        result = server.auth("login", "--oauth-client-id", "fixed", "--oauth-client-secret", "s3cr3t-value",
                             "--oauth-timeout", "10")
        assert result.returncode == 1
        assert other.stats()["requests"] == []
        text = result.stderr.decode()
        refused = [line for line in text.splitlines() if "refused" in line]
        assert refused and server.base in refused[0] and other.base in refused[0], text
        assert "s3cr3t-value" not in text
    finally:
        other.stop()


def test_a_redirect_to_another_origin_during_discovery_is_refused_and_the_next_place_tried(server, tmp_path):
    other = another_server(tmp_path)
    try:
        path = "/.well-known/oauth-protected-resource/mcp"
        server.configure(prm="root", redirects={path: [301, other.base + path]}, bare_challenge=True)
        result = server.auth("login")
        assert result.returncode == 0, result.stderr
        assert other.stats()["requests"] == []
        assert other.base in result.stderr.decode()
    finally:
        other.stop()


def test_a_redirect_loop_is_bounded(server):
    server.configure(redirects={"/as/token": [307, "/as/token"]})
    result = server.auth("login", "--oauth-timeout", "10")
    assert result.returncode == 1
    hops = [r for r in server.stats()["requests"] if r["path"] == "/as/token"]
    assert len(hops) == op.OAUTH_MAX_REDIRECTS + 1
    assert "redirects" in result.stderr.decode()


# -- the first login never fails the client's session --------------------------------------------

def notification(relay, method, timeout):
    """Wait for a notification (or server request) ``method``; the messages before it are kept."""
    deadline = time.monotonic() + timeout
    while True:
        msg = relay.recv(max(0.01, deadline - time.monotonic()))
        if msg.get("method") == method:
            return msg
        relay.backlog.append(msg)


def test_first_login_answers_initialize_at_once_and_the_tools_follow_the_login(server):
    spill = server.tmp / "spill"
    relay = server.relay("--output-dir", str(spill), delay=8)
    try:
        started = time.monotonic()
        reply = relay.initialize("2025-11-25")
        assert time.monotonic() - started < 7.5
        result = reply["result"]
        assert result["serverInfo"]["name"] == "ocx-proxy" and "waiting for a login" in result["serverInfo"]["title"]
        assert result["protocolVersion"] == "2025-11-25" and result["capabilities"]["tools"]["listChanged"] is True
        tools = relay.request("tools/list")[0]["result"]["tools"]
        assert [t["name"] for t in tools if t["name"] != "read_spilled_output"] == ["ocx_proxy_login"]
        notification(relay, "notifications/tools/list_changed", 30)
        names = [t["name"] for t in relay.request("tools/list")[0]["result"]["tools"]]
        assert "whoami" in names and "ocx_proxy_login" not in names
        assert relay.call("whoami")["result"]["content"][0]["text"] == "scopes: mcp"
    finally:
        relay.close()
    assert len(server.visits()) == 1
    inits = [r for r in server.stats()["requests"] if r["path"] == "/mcp" and '"initialize"' in r["body"]]
    assert json.loads(inits[-1]["body"])["params"]["protocolVersion"] == "2025-11-25"   # the client's, replayed
    assert not (spill / "catalogs").exists()   # our own answer to initialize is never the server's catalog


def test_a_call_made_while_the_login_is_pending_is_answered_once_logged_in(server):
    relay = server.relay(delay=6)
    try:
        assert relay.initialize()["result"]["serverInfo"]["name"] == "ocx-proxy"
        assert relay.call("whoami", timeout=30)["result"]["content"][0]["text"] == "scopes: mcp"
    finally:
        relay.close()


def test_the_login_tool_waits_for_the_login_and_a_client_that_takes_url_elicitation_gets_the_link(server):
    relay = server.relay(delay=6)
    try:
        reply, _ = relay.request("initialize", {"protocolVersion": "2025-11-25",
                                                "clientInfo": {"name": "t", "version": "1"},
                                                "capabilities": {"elicitation": {"url": {}}}}, msg_id=1)
        assert reply["result"]["serverInfo"]["name"] == "ocx-proxy"
        relay.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        ask = notification(relay, "elicitation/create", 10)
        assert ask["params"]["mode"] == "url" and "/as/authorize?" in ask["params"]["url"]
        relay.send({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept"}})
        reply, before = relay.request("tools/call", {"name": "ocx_proxy_login", "arguments": {}}, timeout=40)
        assert reply["result"]["isError"] is False and "Logged in" in reply["result"]["content"][0]["text"]
        # the client hears of the new tools before the login tool returns: its next turn lists them
        assert [m["method"] for m in before] == ["notifications/tools/list_changed",
                                                 "notifications/elicitation/complete"]
        assert before[1]["params"]["elicitationId"] == ask["params"]["elicitationId"]
        assert relay.call("whoami")["result"]["content"][0]["text"] == "scopes: mcp"
    finally:
        relay.close()
    assert not any('"action"' in r["body"] for r in server.stats()["requests"])   # our elicitation's answer is ours


def login_tool_call_during_login(server):
    """A relay whose login finishes in 6 s, initialized, with a call of the login tool (id 7) waiting for it;
    returns (relay, the list_changed's arrival time)."""
    relay = server.relay(delay=6)
    assert relay.initialize("2025-11-25")["result"]["serverInfo"]["name"] == "ocx-proxy"
    relay.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "ocx_proxy_login"}})
    notification(relay, "notifications/tools/list_changed", 30)
    return relay, time.monotonic()


@pytest.mark.parametrize("relist_after", [0, 1])
def test_the_login_tool_answers_after_the_new_tool_list_of_a_client_that_relists(server, relist_after):
    relay, _ = login_tool_call_during_login(server)
    try:
        time.sleep(relist_after)
        relay.send({"jsonrpc": "2.0", "id": 8, "method": "tools/list"})
        answers = []
        while len(answers) < 2:
            msg = relay.recv(15)
            if "id" in msg and "method" not in msg:
                answers.append(msg)
        assert [a["id"] for a in answers] == [8, 7], answers   # the model's next turn has the server's tools
        assert "whoami" in [t["name"] for t in answers[0]["result"]["tools"]]
        assert "Logged in" in answers[1]["result"]["content"][0]["text"]
    finally:
        relay.close()


def test_the_login_tool_answers_a_client_that_never_relists_within_the_bound(server):
    relay, listed = login_tool_call_during_login(server)
    try:
        reply, _ = relay.wait_for(7, timeout=op.LOGIN_RELIST_WAIT + 5)
        assert op.LOGIN_RELIST_WAIT - 1 < time.monotonic() - listed < op.LOGIN_RELIST_WAIT + 2
        assert "Logged in" in reply["result"]["content"][0]["text"]
        assert relay.call("whoami")["result"]["content"][0]["text"] == "scopes: mcp"
        # It is not going to; a later call of the login tool is answered at once, not after the bound
        started = time.monotonic()
        reply, _ = relay.request("tools/call", {"name": "ocx_proxy_login", "arguments": {}}, timeout=10)
        assert "Logged in" in reply["result"]["content"][0]["text"] and time.monotonic() - started < 2
    finally:
        relay.close()


@pytest.mark.parametrize("how", ["denied", "timeout"])
def test_a_failed_first_login_gives_calls_a_clear_error_and_the_next_call_logs_in_again(server, how):
    if how == "denied":
        server.configure(authorize_error={"error": "access_denied"})
        relay = server.relay(delay=6)
    else:
        relay = server.relay("--oauth-timeout", "7", idle=1)
    try:
        assert relay.initialize()["result"]["serverInfo"]["name"] == "ocx-proxy"
        error = relay.call("whoami", timeout=30)["error"]
        expected = "access_denied" if how == "denied" else "no login within 7 s"
        assert "login failed" in error["message"] and expected in error["message"], error
        assert "auth login --url %s" % server.url in error["message"] and error["data"]["httpStatus"] == 401
        if how == "denied":
            server.configure(authorize_error=None)
            assert relay.call("whoami", timeout=30)["result"]["content"][0]["text"] == "scopes: mcp"
        assert relay.request("ping")[0]["result"] == {}
    finally:
        relay.close()
    assert "Traceback" not in relay.stderr


def test_the_login_tool_of_a_device_login_shows_the_code_at_once_then_waits_for_the_login(server):
    server.configure(device={"interval": 1})
    relay = server.relay("--oauth-device")
    try:
        assert relay.initialize("2025-11-25")["result"]["serverInfo"]["name"] == "ocx-proxy"
        login = {"name": "ocx_proxy_login", "arguments": {}}
        started = time.monotonic()
        reply, _ = relay.request("tools/call", login, timeout=10)
        assert time.monotonic() - started < 5
        text = reply["result"]["content"][0]["text"]
        assert reply["result"]["isError"] is False   # the code is what the person needs, not a failure
        (issued,) = server.stats()["device"]
        uri = server.base + "/as/activate"
        assert "%s and enter the code %s" % (uri, issued["user_code"]) in text, text
        assert uri + "?user_code=" + issued["user_code"] in text and "call this tool again" in text.lower(), text
        approve(server, issued["user_code"])
        reply, _ = relay.request("tools/call", login, timeout=40)
        assert reply["result"]["isError"] is False and "Logged in" in reply["result"]["content"][0]["text"]
        assert "whoami" in [t["name"] for t in relay.request("tools/list")[0]["result"]["tools"]]
    finally:
        relay.close()
    (device_code,) = {f["device_code"][0] for f in device_requests(server, "/as/token") if "device_code" in f}
    assert device_code not in text and device_code not in relay.stderr and "dc-" not in relay.stderr + text


# -- grants that need no login: client credentials, enterprise-managed authorization (ID-JAG) ------------------

from test_jose import EC_PUBLIC, RSA_N  # noqa: E402  (OpenSSL's numbers for tests/fixtures/keys)

KEYS = os.path.join(FIXTURES, "keys")
CC_SECRET = "cc-secret-Zq81-never-logged"
MCP_SECRET = "mcp-secret-Kx72-never-logged"


def cc_args(*extra, client="ci"):
    return ("--oauth-client-credentials", "--oauth-client-id", client) + extra


def key_client(server, name):
    """Register the client "ci" at the fixture with the public half of tests/fixtures/keys/NAME."""
    public = list(EC_PUBLIC) if name.startswith("ec") else [RSA_N, 65537]
    server.configure(clients={"ci": {"method": "private_key_jwt", "public": public}},
                     auth_methods=["private_key_jwt"])
    return os.path.join(KEYS, name)


def token_requests(server):
    return [dict(parse_qs(r["body"]), authorization=r["authorization"]) for r in server.stats()["requests"]
            if r["method"] == "POST" and r["path"] == "/as/token"]


def test_client_credentials_with_a_secret_from_the_environment_need_no_browser(server):
    server.configure(clients={"ci": {"secret": CC_SECRET, "method": "client_secret_basic"}})
    relay, reply = session(server, *cc_args(), environ={"OCX_PROXY_OAUTH_CLIENT_SECRET": CC_SECRET})
    try:
        assert "result" in reply, (reply, relay.stderr)
        assert relay.call("whoami")["result"]["content"][0]["text"] == "scopes: mcp"
    finally:
        relay.close()
    stats = server.stats()
    assert (stats["cc"], stats["authorize"], stats["register"], server.visits()) == (1, 0, 0, [])
    [request] = token_requests(server)
    assert request["grant_type"] == ["client_credentials"] and request["authorization"].startswith("Basic ")
    assert request["resource"] == [server.url] and request["scope"] == ["mcp"] and "client_secret" not in request
    status = server.auth("status").stdout.decode()
    assert "grant: client credentials" in status and "client authentication: client_secret_basic" in status
    assert CC_SECRET not in relay.stderr + status


@pytest.mark.parametrize("name, alg", [("ec_p256_pkcs8.pem", "ES256"), ("rsa2048_pkcs1.pem", "RS256")])
def test_client_credentials_with_a_key_send_a_fresh_short_lived_assertion(server, name, alg):
    key = key_client(server, name)
    server.configure(expires_in=1)
    relay, reply = session(server, *cc_args("--oauth-client-key", key))
    try:
        assert "result" in reply, (reply, relay.stderr)
        time.sleep(1.1)   # expired: the relay runs the grant again before it sends the call
        assert "result" in relay.call("whoami"), relay.stderr
    finally:
        relay.close()
    stats = server.stats()
    assert stats["cc"] == 2 and stats["replays"] == 0 and stats["mcp_401"] == 1
    first, second = stats["assertions"]
    for claims in (first, second):
        assert (claims["iss"], claims["sub"], claims["aud"]) == ("ci", "ci", server.base + "/as")
        assert claims["exp"] - claims["iat"] == op.JWT_ASSERTION_LIFETIME
    assert first["jti"] != second["jti"]
    assert all(r["client_assertion_type"] == [op.JWT_BEARER_ASSERTION] and r["authorization"] is None
               and r["client_assertion"][0] not in relay.stderr for r in token_requests(server))
    assert "renewed the access token" in relay.stderr
    status = server.auth("status", *cc_args("--oauth-client-key", key)).stdout.decode()
    assert "client authentication: private_key_jwt (%s, key file %s)" % (alg, key) in status


def test_an_assertion_sent_again_is_refused_and_the_relay_never_sends_one_twice(server):
    key = key_client(server, "ec_p256_sec1.pem")
    result = server.auth("login", *cc_args("--oauth-client-key", key))
    assert result.returncode == 0, result.stderr
    [request] = token_requests(server)
    replay = urllib.request.Request(server.base + "/as/token", urlencode(
        {name: values[0] for name, values in request.items() if name != "authorization"}).encode())
    with pytest.raises(urllib.error.HTTPError) as refused:
        OPENER.open(replay)
    assert refused.value.code == 401 and server.stats()["replays"] == 1


def test_auth_login_with_client_credentials_then_the_relay_uses_the_stored_token(server):
    server.configure(clients={"ci": {"secret": CC_SECRET, "method": "client_secret_basic"}})
    result = server.auth("login", *cc_args("--oauth-client-secret", "${CI_SECRET}"), environ={"CI_SECRET": CC_SECRET})
    assert result.returncode == 0 and CC_SECRET.encode() not in result.stderr
    relay, reply = session(server, *cc_args("--oauth-client-secret", "${CI_SECRET}"), environ={"CI_SECRET": CC_SECRET})
    try:
        assert "result" in reply
    finally:
        relay.close()
    assert server.stats()["cc"] == 1 and server.stats()["mcp_401"] == 0


def test_a_refused_client_secret_fails_the_request_with_the_reason(server):
    server.configure(clients={"ci": {"secret": "the-right-one", "method": "client_secret_basic"}})
    relay, reply = session(server, *cc_args("--oauth-client-secret", CC_SECRET))
    try:
        assert "invalid_client" in reply["error"]["message"], reply
    finally:
        relay.close()
    assert CC_SECRET not in relay.stderr and server.visits() == []


@pytest.mark.parametrize("args, why", [
    (("--oauth-client-credentials",), "--oauth-client-credentials needs --oauth-client-id"),
    (cc_args(), "--oauth-client-credentials needs --oauth-client-id with --oauth-client-secret or"),
    (("--oauth-client-key", os.path.join(KEYS, "ec_p256_sec1.pem")), "--oauth-client-key needs --oauth-client-id"),
    (cc_args("--oauth-client-secret", "s", "--oauth-client-key", os.path.join(KEYS, "ec_p256_sec1.pem")),
     "--oauth-client-key and a client secret"),
    (cc_args("--oauth-client-key", os.path.join(KEYS, "ec_p384.pem")), "an EC key on P-384"),
    (("--oauth-idp-client-id", "x"), "--oauth-idp-client-id needs --oauth-idp-issuer"),
    (("--oauth-idp-issuer", "https://idp.example"), "--oauth-idp-issuer needs --oauth-idp-client-id"),
    (("--oauth-idp-issuer", "http://idp.example", "--oauth-idp-client-id", "x", "--oauth-client-id", "c"),
     "plain http to another machine"),
    (("--oauth-idp-issuer", "https://idp.example", "--oauth-idp-client-id", "x"),
     "--oauth-idp-issuer needs ocx-proxy's client"),
    (cc_args("--oauth-client-secret", "s", "--oauth-idp-issuer", "https://idp.example", "--oauth-idp-client-id",
             "x"), "two grants: give one"),
])
def test_option_mistakes_are_usage_errors(server, args, why):
    text = assert_one_line_error(server.auth("status", *args), 2)
    assert why in text, text


# The identity provider of the fixture: ocx-proxy's client there is "laptop" (a public client), and its client at
# the MCP server's authorization server is "mcp-client" with a secret; the IdP's ID-JAGs name "mcp-client".

def idp_server(server, **idp_client):
    server.configure(clients={"mcp-client": {"secret": MCP_SECRET, "method": "client_secret_basic"}},
                     idp_clients={"laptop": dict({"method": "none", "redirect_uris": [
                         "http://127.0.0.1:%d/callback" % server.callback_port]}, **idp_client)},
                     jag_client_id="mcp-client")
    return ("--oauth-client-id", "mcp-client", "--oauth-client-secret", "${MCP_SECRET}",
            "--oauth-idp-issuer", server.base + "/idp", "--oauth-idp-client-id", "laptop")


def id_token_file(server, aud="laptop", exp=3600):
    token = json.loads(OPENER.open("%s/_id_token?aud=%s&exp=%s" % (server.base, aud, exp)).read())["id_token"]
    path = server.tmp / "id-token"
    path.write_text(token + "\n")
    return str(path), token


def test_enterprise_managed_with_an_sso_agents_id_token_file(server):
    path, id_token = id_token_file(server)
    args = idp_server(server) + ("--oauth-idp-id-token-file", path)
    trace = server.tmp / "trace.jsonl"
    relay, reply = session(server, *args, "--log-level", "debug", "--trace", str(trace), environ={"MCP_SECRET": MCP_SECRET})
    try:
        assert "result" in reply, (reply, relay.stderr)
        assert "result" in relay.call("whoami")
    finally:
        relay.close()
    stats = server.stats()
    assert (stats["exchange"], stats["jwt_bearer"], stats["authorize"], stats["register"]) == (1, 1, 0, 0)
    assert server.visits() == []
    exchange = [dict(parse_qs(r["body"])) for r in stats["requests"] if r["path"] == "/idp/token"][0]
    assert exchange["audience"] == [server.base + "/as"] and exchange["resource"] == [server.url]
    assert exchange["client_id"] == ["laptop"] and exchange["subject_token"] == [id_token]
    [grant] = token_requests(server)
    assert grant["grant_type"] == [op.JWT_BEARER_GRANT] and grant["authorization"].startswith("Basic ")
    status = server.auth("status", *args, environ={"MCP_SECRET": MCP_SECRET}).stdout.decode()
    assert "grant: enterprise-managed" in status and "ID token from the file %s" % path in status
    # nothing secret in the log or the trace: the ID token, the ID-JAG, the secret, the access token
    secrets_sent = [id_token, MCP_SECRET, grant["assertion"][0]] + [
        line.split("Bearer ")[1] for line in [r["authorization"] or "" for r in stats["requests"]] if "Bearer " in line]
    logged = relay.stderr + trace.read_text() + status
    assert "debug" in relay.stderr and not [s for s in secrets_sent if s in logged]


def test_an_expired_id_token_file_is_said_before_anything_is_sent(server):
    path, _ = id_token_file(server, exp=-10)
    relay, reply = session(server, *idp_server(server), "--oauth-idp-id-token-file", path, environ={"MCP_SECRET": MCP_SECRET})
    try:
        message = reply["error"]["message"]
        assert "the ID token in %s expired at" % path in message and "sign in to your company's SSO" in message
    finally:
        relay.close()
    assert server.stats()["exchange"] == 0


def test_an_id_token_the_idp_refuses_and_echoes_is_masked_in_the_log(server):
    path, id_token = id_token_file(server, aud="someone-else")
    result = server.auth("login", *idp_server(server), "--oauth-idp-id-token-file", path, environ={"MCP_SECRET": MCP_SECRET})
    text = result.stderr.decode()
    assert result.returncode == 1 and "Traceback" not in text
    assert "invalid_grant: bad ID token [redacted]" in text and id_token not in text


def test_enterprise_managed_with_our_own_login_at_the_idp_then_renewals_without_a_browser(server):
    args = idp_server(server)
    server.configure(expires_in=1, id_token_lifetime=1)
    relay, reply = session(server, *args, environ={"MCP_SECRET": MCP_SECRET})
    try:
        assert "result" in reply, (reply, relay.stderr)
        time.sleep(1.1)   # the access token and the ID token have expired: refresh at the IdP, a new ID-JAG
        assert "result" in relay.call("whoami"), relay.stderr
    finally:
        relay.close()
    [visit] = server.visits()
    query = parse_qs(urlsplit(visit).query)
    assert urlsplit(visit).path == "/idp/authorize" and query["client_id"] == ["laptop"]
    assert query["scope"] == ["openid offline_access"] and "resource" not in query
    stats = server.stats()
    assert (stats["idp_login"], stats["idp_refresh"], stats["exchange"], stats["jwt_bearer"]) == (1, 1, 2, 2)
    status = server.auth("status", *args, environ={"MCP_SECRET": MCP_SECRET}).stdout.decode()
    assert "ID token from a login at the identity provider, stored in" in status
    assert server.auth("logout", *args, environ={"MCP_SECRET": MCP_SECRET}).returncode == 0
    assert not [n for n in os.listdir(server.auth_dir) if n.startswith(("idp-", "tokens-")) and n.endswith(".json")]


def test_our_own_login_at_the_idp_with_a_device_code(server):
    args = idp_server(server) + ("--oauth-device",)
    server.configure(idp_device=True)
    result = server.auth("login", *args, environ={"MCP_SECRET": MCP_SECRET}, browser=False)
    assert result.returncode == 0, result.stderr
    assert "open %s/idp/activate and enter the code IDP-1234" % server.base in result.stderr.decode()
    stats = server.stats()
    assert (stats["idp_device"], stats["idp_login"], stats["exchange"], stats["jwt_bearer"]) == (1, 1, 1, 1)
    assert server.visits() == []


def test_the_idp_token_endpoint_option_stands_in_for_missing_metadata(server):
    path, _ = id_token_file(server)
    args = idp_server(server) + ("--oauth-idp-id-token-file", path)
    server.configure(idp_meta="none")
    result = server.auth("login", *args, environ={"MCP_SECRET": MCP_SECRET})
    assert result.returncode == 1 and b"(no metadata at all); give --oauth-idp-token-endpoint" in result.stderr
    result = server.auth("login", *args, "--oauth-idp-token-endpoint", server.base + "/idp/token",
                         environ={"MCP_SECRET": MCP_SECRET})
    assert result.returncode == 0, result.stderr
    assert server.stats()["jwt_bearer"] == 1


@pytest.mark.parametrize("hostile, needle", [
    ({"exchange_answer": "<html>not json</html>"}, "answered HTTP 200 (no JSON object with access_token)"),
    ({"exchange_answer": json.dumps({"access_token": "x", "issued_token_type": "urn:x"})},
     "issued_token_type urn:x, not an ID-JAG"),
    ({"exchange_answer": json.dumps({"access_token": "a" * (2 * 1024 * 1024)})}, "more than 1048576"),
    ({"redirects": {"/idp/token": [307, "http://203.0.113.9/token"]}}, "refused, OAuth requests stay on their origin"),
    ({"idp_meta_extra": {"issuer": "https://evil.example/idp"}}, "claims the issuer https://evil.example/idp"),
    ({"idp_meta_extra": {"token_endpoint": "http://203.0.113.9/token"}}, "plain http to another machine"),
])
def test_a_hostile_idp_ends_the_login_with_one_clear_line(server, hostile, needle):
    path, id_token = id_token_file(server)
    server.configure(**hostile)
    result = server.auth("login", *idp_server(server), "--oauth-idp-id-token-file", path, environ={"MCP_SECRET": MCP_SECRET})
    text = result.stderr.decode()
    assert result.returncode == 1 and "Traceback" not in text and id_token not in text
    assert needle in text, text
    assert server.stats()["jwt_bearer"] == 0


def test_two_relays_spend_a_rotating_refresh_token_once(server):
    """A refresh token used twice is refused the second time, and a server that rotates them may revoke them all
    (RFC 9700 4.14.2): relays sharing tokens refresh one at a time, the second takes the first one's tokens."""
    server.configure(expires_in=2, refresh_delay=1.0)
    assert server.auth("login").returncode == 0
    relays = [server.relay() for _ in range(2)]
    try:
        for relay in relays:
            assert "result" in relay.initialize(), relay.stderr
        time.sleep(2.1)   # both hold an expired access token and the one refresh token
        for i, relay in enumerate(relays):
            relay.send({"jsonrpc": "2.0", "id": 50 + i, "method": "tools/call",
                        "params": {"name": "whoami", "arguments": {}}})
        for i, relay in enumerate(relays):
            assert "result" in relay.wait_for(50 + i, timeout=20)[0], relay.stderr
    finally:
        for relay in relays:
            relay.close()
    stats = server.stats()
    assert (stats["refresh_attempts"], stats["refresh"], len(server.visits())) == (1, 1, 1), stats


def test_oauth_issuer_keeps_the_client_secret_from_an_authorization_server_a_server_names(server):
    """The server's metadata decides where the secret goes, unless --oauth-issuer says where it belongs."""
    server.configure(clients={"ci": {"secret": CC_SECRET, "method": "client_secret_basic"}})
    pinned = cc_args("--oauth-client-secret", CC_SECRET, "--oauth-issuer", "https://login.example.com/tenant")
    result = server.auth("login", *pinned)
    text = result.stderr.decode()
    assert result.returncode == 1 and "names the authorization server %s/as, not --oauth-issuer" % server.base in text
    assert token_requests(server) == [] and CC_SECRET not in text
    result = server.auth("login", *cc_args("--oauth-client-secret", CC_SECRET, "--oauth-issuer", server.base + "/as"))
    assert result.returncode == 0, result.stderr
