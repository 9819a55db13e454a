"""OAuth through the relay against the official Python SDK's own authorization server.

The server is tests/interop/sdk_auth_server.py: FastMCP with ``AuthSettings`` and
an in-memory ``OAuthAuthorizationServerProvider`` (metadata, DCR, authorize with
auto-consent, token, refresh, revoke).  The relay runs as a real subprocess with
a stand-in browser (``BROWSER``, tests/fixtures/oauth_browser.py, which logs each
visit) and a temporary OCX_PROXY_AUTH_DIR.  The direct control is the SDK's own
client with its ``OAuthClientProvider`` against the same server: when a relay
test fails and the same step also fails direct, the test xfails naming the
direct failure instead of blaming the relay.  A restart of the SDK server (its
store is in memory) plays an authorization server that forgot our registered
client: the relay must register again (it used to log in with the old client id).
"""
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from contextlib import asynccontextmanager

import anyio
import pytest

from mcp import ClientSession, StdioServerParameters
from mcp.client.auth import OAuthClientProvider
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client
from mcp.shared.auth import OAuthClientMetadata

from helpers import INTEROP_PROXY as PROXY, free_port
from sdk_oauth import AutoConsentBrowser, MemoryStorage

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "sdk_auth_server.py")
BROWSER = os.path.join(os.path.dirname(HERE), "fixtures", "oauth_browser.py")


class AuthServer:
    """One sdk_auth_server.py on a free port; ``grants()`` reads its log of registrations and grants."""

    def __init__(self, tmp_path, token_ttl=3600):
        self.port = free_port()
        self.url = "http://127.0.0.1:%d/mcp" % self.port
        self.tmp_path = tmp_path
        self.token_ttl = token_ttl
        self.output = None
        self.start()

    def start(self):
        """Start the server on self.port with an empty store (a restart forgets clients and tokens)."""
        self.log_path = str(self.tmp_path / ("grants-%d.log" % time.monotonic_ns()))
        self.output = open(str(self.tmp_path / "auth-server.log"), "ab")
        self.proc = subprocess.Popen([sys.executable, SERVER, "--port", str(self.port), "--token-ttl",
                                      str(self.token_ttl), "--log", self.log_path],
                                     stdout=self.output, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 20
        while True:
            try:
                urllib.request.urlopen("http://127.0.0.1:%d/.well-known/oauth-authorization-server"
                                       % self.port, timeout=1).read()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.close()
                    raise RuntimeError("the SDK auth server did not start; see %s" % self.output.name)
                time.sleep(0.05)

    def restart(self):
        self.close()
        self.start()

    def grants(self):
        try:
            with open(self.log_path) as handle:
                return [line.split()[0] + (" " + line.split()[1] if line.startswith("grant") else "")
                        for line in handle]
        except FileNotFoundError:
            return []

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.output.close()


@pytest.fixture
def make_server(tmp_path):
    servers = []

    def make(**kwargs):
        servers.append(AuthServer(tmp_path, **kwargs))
        return servers[-1]
    yield make
    for server in servers:
        server.close()


@pytest.fixture
def server(make_server):
    return make_server()


class Relay:
    """How to start the relay (and ``auth`` commands) with a private token store and browser log."""

    def __init__(self, tmp_path, url, oauth_timeout=20):
        self.url = url
        self.oauth_timeout = str(oauth_timeout)
        self.auth_dir = str(tmp_path / "auth")
        self.browser_log = str(tmp_path / "browser.log")
        self.env = dict(os.environ, OCX_PROXY_AUTH_DIR=self.auth_dir, OAUTH_BROWSER_LOG=self.browser_log,
                        BROWSER="%s %s %%s" % (sys.executable, BROWSER))
        self.spill_dir = str(tmp_path / "spill")
        self.stderr_path = str(tmp_path / "relay-stderr.log")

    def browser_visits(self):
        try:
            with open(self.browser_log) as handle:
                return handle.read().split()
        except FileNotFoundError:
            return []

    def params(self):
        args = [PROXY, "streamable-http", "--output-dir", self.spill_dir, "--oauth-timeout", self.oauth_timeout,
                "--url", self.url]
        return StdioServerParameters(command=sys.executable, args=args, env=self.env)

    @asynccontextmanager
    async def session(self):
        with open(self.stderr_path, "a") as errlog:
            async with stdio_client(self.params(), errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    yield session

    def auth(self, command):
        return subprocess.run([sys.executable, PROXY, "auth", command, "--url", self.url, "--oauth-timeout",
                               self.oauth_timeout],
                              env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=60)

    def stored_secrets(self):
        """Every token and client secret in the store (to check they are never shown)."""
        found = []
        for name in os.listdir(self.auth_dir):
            if name.endswith(".json"):
                with open(os.path.join(self.auth_dir, name)) as handle:
                    doc = json.load(handle)
                found += [doc[key] for key in ("access_token", "refresh_token", "client_secret") if doc.get(key)]
        return found

    def stderr(self):
        with open(self.stderr_path) as handle:
            return handle.read()


@pytest.fixture
def relay(tmp_path, server):
    return Relay(tmp_path, server.url)


def run(coro_fn, timeout=60):
    async def main():
        with anyio.fail_after(timeout):
            return await coro_fn()
    return anyio.run(main)


async def use_tools(session):
    """tools/list then tools/call echo and whoami; returns whoami's text (client id and scopes)."""
    names = {tool.name for tool in (await session.list_tools()).tools}
    assert {"echo", "whoami"} <= names, names
    result = await session.call_tool("echo", {"text": "héllo"})
    assert not result.isError and result.content[0].text == "héllo", result
    result = await session.call_tool("whoami", {})
    assert not result.isError, result
    return result.content[0].text


# -- the direct control: the SDK's own OAuth client ----------------------------------------------

def direct_provider(url, storage, browser):
    metadata = OAuthClientMetadata(client_name="sdk-direct", redirect_uris=["http://127.0.0.1:9/callback"],
                                   grant_types=["authorization_code", "refresh_token"], response_types=["code"])
    return OAuthClientProvider(url, metadata, storage, redirect_handler=browser.open,
                               callback_handler=browser.callback, timeout=20)


async def direct_session_tools(url, storage, browser, pause=0):
    """One SDK client session with OAuth: tools (and again after ``pause`` seconds)."""
    async with streamablehttp_client(url, auth=direct_provider(url, storage, browser)) as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await use_tools(session)
            if pause:
                await anyio.sleep(pause)
                await use_tools(session)


def direct_failure(body):
    """None when the direct control passes, else a one-line description of its failure."""
    try:
        run(body)
        return None
    except BaseException as exc:  # noqa: B902 - anyio wraps failures in ExceptionGroup
        while getattr(exc, "exceptions", None):   # the first leaf of nested exception groups
            exc = exc.exceptions[0]
        return "%s: %s" % (type(exc).__name__, exc)


def relay_or_xfail(relay_body, direct_body):
    """Run the relay check; on failure, run the direct control and xfail if it fails too."""
    try:
        relay_body()
    except Exception:
        failure = direct_failure(direct_body)
        if failure:
            pytest.xfail("fails direct too (SDK client + OAuthClientProvider): %s" % failure)
        raise


# -- via the relay -------------------------------------------------------------------------------

def test_first_login_then_tools(server, relay):
    def body():
        whoami = run(lambda: _tools(relay))
        assert whoami.endswith(" mcp"), whoami
        assert len(relay.browser_visits()) == 1, relay.browser_visits()
        assert server.grants().count("grant authorization_code") == 1, server.grants()
        # the relay's stdio is the MCP channel: the browser never got it
        with open(relay.browser_log + ".stdio") as handle:
            assert handle.read().split() == ["devnull"]
        for secret in relay.stored_secrets():
            assert secret not in relay.stderr()

    relay_or_xfail(body, lambda: direct_session_tools(server.url, MemoryStorage(), AutoConsentBrowser()))


async def _tools(relay):
    async with relay.session() as session:
        return await use_tools(session)


def test_second_relay_reuses_tokens_without_browser(server, relay):
    run(lambda: _tools(relay))
    assert len(relay.browser_visits()) == 1

    def body():
        run(lambda: _tools(relay))
        assert len(relay.browser_visits()) == 1, "a second login: %s" % relay.browser_visits()
        assert server.grants().count("grant authorization_code") == 1, server.grants()
        assert server.grants().count("register") == 1, server.grants()

    async def direct_twice():
        storage = MemoryStorage()
        browser = AutoConsentBrowser()
        await direct_session_tools(server.url, storage, browser)
        await direct_session_tools(server.url, storage, browser)
        assert browser.visits == 1, browser.visits
    relay_or_xfail(body, direct_twice)


def test_auth_status_shows_issuer_and_expiry_not_tokens(server, relay):
    run(lambda: _tools(relay))
    status = relay.auth("status")
    assert status.returncode == 0, status.stderr
    shown = status.stdout + status.stderr
    assert "issuer: http://127.0.0.1:%d/" % server.port in shown, shown
    assert "expires" in shown, shown
    secrets = relay.stored_secrets()
    assert secrets, "no tokens stored"
    for secret in secrets:
        assert secret not in shown


def test_logout_then_new_login(server, relay):
    run(lambda: _tools(relay))
    logout = relay.auth("logout")
    assert logout.returncode == 0, logout.stderr
    status = relay.auth("status")
    assert status.returncode == 1, status.stdout + status.stderr
    login = relay.auth("login")   # the same browser stand-in, from the command this time
    assert login.returncode == 0, login.stderr
    assert len(relay.browser_visits()) == 2, relay.browser_visits()
    assert server.grants().count("grant authorization_code") == 2, server.grants()
    run(lambda: _tools(relay))
    assert len(relay.browser_visits()) == 2, "the relay logged in again after auth login"


def test_two_relays_at_once_share_one_login(server, relay):
    """Clients start one relay per window: both wait for one login, one browser tab."""
    results = []

    async def both():
        async def one():
            results.append(await _tools(relay))
        async with anyio.create_task_group() as group:
            group.start_soon(one)
            group.start_soon(one)

    def body():
        run(both)
        assert len(results) == 2 and results[0] == results[1], results
        assert len(relay.browser_visits()) == 1, relay.browser_visits()
        grants = server.grants()
        assert grants.count("register") == 1 and grants.count("grant authorization_code") == 1, grants

    async def direct_both():
        async with anyio.create_task_group() as group:
            for _ in range(2):
                group.start_soon(direct_session_tools, server.url, MemoryStorage(), AutoConsentBrowser())
    relay_or_xfail(body, direct_both)


@pytest.mark.parametrize("where", ["new relay", "same session"])
def test_expired_token_is_refreshed(make_server, tmp_path, where):
    """Access tokens live 3 s: after they expire the relay refreshes, no browser, no new login."""
    server = make_server(token_ttl=3)
    relay = Relay(tmp_path, server.url)

    async def same_session():
        async with relay.session() as session:
            await use_tools(session)
            await anyio.sleep(4)
            await use_tools(session)

    def body():
        if where == "new relay":
            run(lambda: _tools(relay))
            time.sleep(4)
            run(lambda: _tools(relay))
        else:
            run(same_session)
        assert len(relay.browser_visits()) == 1, relay.browser_visits()
        grants = server.grants()
        assert grants.count("grant authorization_code") == 1, grants
        assert "grant refresh_token" in grants, grants

    async def direct():
        await direct_session_tools(server.url, MemoryStorage(), AutoConsentBrowser(), pause=4)
        assert "grant refresh_token" in server.grants(), server.grants()
    relay_or_xfail(body, direct)


# -- the direct control on its own (so its result is reported, not only used) -------------------

def test_direct_sdk_client_login_and_tools(server):
    browser = AutoConsentBrowser()
    run(lambda: direct_session_tools(server.url, MemoryStorage(), browser))
    assert browser.visits == 1
    assert server.grants().count("grant authorization_code") == 1, server.grants()


def test_direct_sdk_client_refresh(make_server):
    server = make_server(token_ttl=3)
    run(lambda: direct_session_tools(server.url, MemoryStorage(), AutoConsentBrowser(), pause=4))
    grants = server.grants()
    assert grants.count("grant authorization_code") == 1 and "grant refresh_token" in grants, grants


# -- the authorization server forgot our client (an in-memory AS restarted, a registration expired) --

def stale_client_login(server, relay):
    relay.oauth_timeout = "5"   # a login with a forgotten client would wait this long, then fail
    run(lambda: _tools(relay))
    server.restart()
    run(lambda: _tools(relay), timeout=40)
    grants = server.grants()
    assert grants.count("register") == 1 and grants.count("grant authorization_code") == 1, grants


def test_forgotten_client_is_registered_again(server, relay):
    stale_client_login(server, relay)


def test_forgotten_client_recovers_once_its_file_is_removed(server, relay):
    """What a fix has to do by itself: without the stale client-*.json the relay registers again."""
    run(lambda: _tools(relay))
    server.restart()
    for name in os.listdir(relay.auth_dir):
        if name.startswith("client-"):
            os.unlink(os.path.join(relay.auth_dir, name))
    run(lambda: _tools(relay), timeout=40)
    grants = server.grants()
    assert grants.count("register") == 1 and grants.count("grant authorization_code") == 1, grants


def test_logout_then_login_after_client_forgotten(server, relay):
    run(lambda: _tools(relay))
    server.restart()
    relay.oauth_timeout = "5"
    assert relay.auth("logout").returncode == 0
    login = relay.auth("login")
    assert login.returncode == 0, login.stderr


def test_direct_sdk_client_with_forgotten_client(server):
    """The direct control for the case above, with the SDK client's storage kept across the restart."""
    storage = MemoryStorage()
    run(lambda: direct_session_tools(server.url, storage, AutoConsentBrowser()))
    server.restart()
    failure = direct_failure(lambda: direct_session_tools(server.url, storage, AutoConsentBrowser()))
    grants = server.grants()
    if failure:
        pytest.xfail("the SDK client direct also keeps the forgotten client: %s (grants %s)" % (failure, grants))
    assert grants.count("register") == 1, grants
