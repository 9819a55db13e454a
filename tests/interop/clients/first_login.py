"""Issue 22 item 2: a real CLI meets a remote server whose first login is still to be done.

``run_first_login(client, workdir, delay)`` starts the fixture OAuth server
(tests/fixtures/oauth_server.py), writes the CLI's config with the relay in front
of it (``streamable-http --url …``; the relay's environment carries the scripted
browser, tests/fixtures/oauth_browser.py, which approves the login after DELAY
seconds), runs the CLI once with the scripted model and returns a ``Login``: the
CLI's run, the relay's trace (what the client sent and when) and its stderr.

Each CLI keeps its own start-up patience (Codex's ``startup_timeout_sec`` is left
at its default): the point is what a user who just added the config line sees.
"""
import json
import os
import shlex
import socket
import subprocess
import sys
import time
import urllib.request

import harness
from model_server import SERVER, ModelServer, Script

FIXTURES = os.path.join(harness.ROOT, "tests", "fixtures")
OAUTH_SERVER = os.path.join(FIXTURES, "oauth_server.py")
BROWSER = os.path.join(FIXTURES, "oauth_browser.py")
LOGIN_DELAY = 30.0      # seconds the scripted person takes to approve (the issue says 90; 30 keeps the tier fast)
TOOL = "whoami"         # the fixture server's tool the scripted model calls
LOGIN_TOOL = "ocx_proxy_login"
LOGINS = {}             # client -> Login, for the table


class LoginScript(Script):
    """The scripted model: call the server's tool when offered; else call the relay's login tool (it waits
    for the login), at most twice, and look again at the next turn."""

    def __init__(self, spill_dir):
        Script.__init__(self, TOOL, spill_dir)
        self.login_calls = 0
        self.offered = []   # per model request: the server's tools the client offered the model

    def wants(self, tool_names):
        return any(n.endswith((TOOL, LOGIN_TOOL)) for n in tool_names)

    def decide(self, tool_names, outputs, body=None):
        self.tools_seen = list(tool_names)
        self.offered.append([n for n in tool_names if SERVER in n])
        if outputs and outputs[-1][0].endswith(TOOL):
            self.received = outputs[-1][1]
            return ("text", "done")
        target = [n for n in tool_names if n.endswith(TOOL) and SERVER in n]
        if target:
            return ("call", target[0], {})
        login = [n for n in tool_names if n.endswith(LOGIN_TOOL)]
        if login and self.login_calls < 2:
            self.login_calls += 1
            return ("call", login[0], {})
        return ("text", "no tool named *%s was offered" % TOOL)


class Login:
    def __init__(self, client, run, trace, stderr, seconds, stats):
        self.client = client
        self.run = run
        self.trace = trace
        self.stderr = stderr
        self.seconds = seconds
        self.stats = stats

    def sent(self, method):
        """Trace records of the client's messages with ``method`` (times in seconds from the first)."""
        return [r for r in self.trace if r.get("dir") == "client->upstream" and r.get("method") == method]

    def answered(self, method):
        return [r for r in self.trace
                if r.get("dir") in ("upstream->client", "proxy->client") and r.get("method") == method]

    @property
    def tool_output(self):
        return self.run.received

    def summary(self):
        """One line for the table: what the client did and whether the tool call worked."""
        inits = self.sent("initialize")
        errors = [r for r in self.answered("initialize") if "error" in r]
        parts = ["%d initialize" % len(inits)]
        if errors:
            parts.append("%d answered with an error after %.0f s" % (len(errors), errors[0]["ms"] / 1000))
        parts.append("%d tools/list" % len(self.sent("tools/list")))
        if self.run.script.login_calls:
            parts.append("model called the login tool %d x" % self.run.script.login_calls)
        if self.answered("notifications/tools/list_changed"):
            parts.append("list_changed sent")
        got = self.tool_output
        text = got if isinstance(got, str) else json.dumps(got)
        parts.append("tool worked" if got is not None and "scopes: mcp" in text else "tool NOT usable")
        parts.append("exit %s in %.0f s" % (self.run.status, self.seconds))
        return "; ".join(parts)


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def relay_command(url, callback_port, workdir, extra=()):
    """The relay behind an env(1) that gives it the scripted browser: the CLIs pass a server few variables."""
    env = ["BROWSER=%s %s %%s" % (sys.executable, BROWSER), "OAUTH_BROWSER_DELAY=%g" % LOGIN_DELAY,
           "OAUTH_BROWSER_LOG=" + os.path.join(workdir, "browser.log"),
           "OCX_PROXY_AUTH_DIR=" + os.path.join(workdir, "auth")]
    relay = [sys.executable, harness.PROXY, "streamable-http", "--url", url, "--oauth-callback-port",
             str(callback_port), "--trace", os.path.join(workdir, "trace.jsonl"), "--log-level", "info"] + list(extra)
    script = 'exec "$@" 2>>%s' % shlex.quote(os.path.join(workdir, "relay.stderr"))
    return ["/bin/sh", "-c", script, "sh", "env"] + env + relay


def read_trace(path):
    records = []
    if os.path.exists(path):
        with open(path) as lines:
            records = [json.loads(line) for line in lines if line.strip()]
    return records


def default_patience(workdir):
    """Codex: drop the harness's startup_timeout_sec (30) so Codex's own default applies."""
    config = os.path.join(workdir, "home", ".codex", "config.toml")
    with open(config) as f:
        text = f.read()
    with open(config, "w") as f:
        f.write(text.replace("startup_timeout_sec = 30\n", ""))


def run_first_login(client, workdir, extra=()):
    os.makedirs(workdir, exist_ok=True)
    server = subprocess.Popen([sys.executable, OAUTH_SERVER], stdout=subprocess.PIPE)
    try:
        port = int(server.stdout.readline())
        url = "http://127.0.0.1:%d/mcp" % port
        command = relay_command(url, free_port(), workdir, extra)
        started = time.monotonic()
        run = run_client(client, command, workdir)
        seconds = time.monotonic() - started
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        stats = json.loads(opener.open("http://127.0.0.1:%d/_stats" % port, timeout=10).read())
    finally:
        server.kill()
        server.wait()
    stderr = ""
    if os.path.exists(os.path.join(workdir, "relay.stderr")):
        with open(os.path.join(workdir, "relay.stderr"), encoding="utf-8", errors="replace") as f:
            stderr = f.read()
    login = Login(client, run, read_trace(os.path.join(workdir, "trace.jsonl")), stderr, seconds, stats)
    LOGINS[client] = login
    return login


def run_client(client, command, workdir):
    """``harness.run_client`` with COMMAND as the whole server command line (no --record)."""
    home = os.path.join(workdir, "home")
    os.makedirs(home, exist_ok=True)
    env = harness.base_env(home)
    script = LoginScript(os.path.join(workdir, "spill"))
    with ModelServer(script) as model:
        argv = harness.CLIENTS[client](model.port, command, home, env)
        if client == "codex":
            default_patience(workdir)
        try:
            proc = subprocess.run(argv, cwd=home, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, timeout=harness.CLIENT_TIMEOUT)
            status, output = proc.returncode, proc.stdout.decode("utf-8", "replace")
        except subprocess.TimeoutExpired as exc:
            status, output = "timeout", (exc.stdout or b"").decode("utf-8", "replace")
    return harness.Run(script, status, output, [], os.path.join(workdir, "spill"))


if __name__ == "__main__":
    import tempfile
    login = run_first_login(sys.argv[1], tempfile.mkdtemp(prefix="ocx-login-"), sys.argv[2:])
    print(login.client, login.summary())
    print("stats", {k: v for k, v in login.stats.items() if k != "requests" and k != "paths"})
    t0 = None
    for r in login.trace:
        print(" ", r.get("time"), r.get("dir"), r.get("method"), r.get("id"), r.get("error"), r.get("ms"))
    print("--- relay stderr\n" + login.stderr[-3000:])
    print("--- client output\n" + login.run.output[-3000:])
    print("--- model requests")
    for names in login.run.script.offered:
        print(names)
