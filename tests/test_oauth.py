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
from urllib.parse import parse_qs, urlsplit

import pytest

from conftest import FIXTURES, PROXY, RelayProcess, run_proxy

import ocx_proxy as op

SERVER = os.path.join(FIXTURES, "oauth_server.py")
BROWSER = os.path.join(FIXTURES, "oauth_browser.py")
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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

    def env(self, browser=True, **variant):
        """The relay's environment; ``variant`` sets the scripted browser's OAUTH_BROWSER_<NAME>."""
        env = {k: v for k, v in os.environ.items()
               if k.upper() not in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "DISPLAY", "WAYLAND_DISPLAY",
                                    "BROWSER", "OCX_PROXY_OAUTH_CALLBACK_PORT")}
        env.update(OCX_PROXY_AUTH_DIR=self.auth_dir, OAUTH_BROWSER_LOG=self.browser_log)
        if browser:
            env["BROWSER"] = "%s %s %%s" % (sys.executable, BROWSER)
        env.update(("OAUTH_BROWSER_" + name.upper(), str(value)) for name, value in variant.items())
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
    result = server.auth("login", "--oauth-timeout", "2")
    assert result.returncode == 1
    assert b"state is not this login's" in result.stderr and b"no login within 2 s" in result.stderr
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


def test_stray_requests_to_the_callback_get_an_error_page_and_the_login_goes_on(server):
    # an old tab's answer, a favicon, no code, a POST, not HTTP, a head too large, the old tab again
    relay, reply = session(server, stray=1)
    relay.close()
    assert reply["result"]["serverInfo"]["name"] == "oauth-fixture", (reply, relay.stderr)
    with open(server.browser_log + ".stray") as f:
        assert f.read().split() == ["400", "404", "400", "405", "400", "431", "400"]
    assert relay.stderr.count("whose state is not this login's") == 2
    assert relay.stderr.count("without a code") == 1
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
        assert [s.stats()["token"] for s in servers] == [1, 1]
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
        assert holder.stdout.readline() == b"held\n"
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
