"""A real CLI meets a remote server whose first login is still to be done.

``run_first_login(client, workdir, device=False)`` starts the fixture OAuth server
(tests/fixtures/oauth_server.py), writes the CLI's config with the relay in front
of it (``streamable-http --url …``; the relay's environment carries the scripted
browser, tests/fixtures/oauth_browser.py, which approves the login after
LOGIN_DELAY seconds), runs the CLI once with the scripted model and returns a
``Login``: the CLI's run, the relay's trace (what the client sent and when) and
its stderr.  With ``device`` the relay runs with --oauth-device: the model reads
the verification page and the code from the login tool's answer (as it would show
them to the user), and a scripted ``Person`` enters that code there DEVICE_DELAY
seconds later.

Each CLI keeps its own start-up patience (Codex's ``startup_timeout_sec`` is left
at its default): the point is what a user who just added the config line sees.
"""
import json
import os
import shlex
import subprocess
import sys
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import harness
from model_server import SERVER, ModelServer, Script

sys.path.insert(0, os.path.join(harness.ROOT, "tests"))   # run by hand too (python3 first_login.py CLIENT)
from helpers import free_port  # noqa: E402

FIXTURES = os.path.join(harness.ROOT, "tests", "fixtures")
OAUTH_SERVER = os.path.join(FIXTURES, "oauth_server.py")
BROWSER = os.path.join(FIXTURES, "oauth_browser.py")
LOGIN_DELAY = 30.0      # seconds the scripted person takes to approve (the issue says 90; 30 keeps the tier fast)
DEVICE_DELAY = 10.0     # seconds from the code reaching the model to the person approving it
TOOL = "whoami"         # the fixture server's tool the scripted model calls
LOGIN_TOOL = "ocx_proxy_login"
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))   # loopback only, never a proxy
LOGINS = {}             # (client, "browser" | "device") -> Login, for the table
SHOWN = re.compile(r"open (\S+) and enter the code ([A-Za-z0-9-]+)")   # the login tool's words for a device login


class Person:
    """The user of a device login: told the page and the code, approves the code there ``delay`` s later."""

    def __init__(self, delay):
        self.delay = delay
        self.shown = []      # (seconds since the first, uri, code) per code the model showed
        self.approved = []   # (uri, code, HTTP status) per approval
        self.timers = []

    def show(self, uri, code):
        if any(code == c for _, _, c in self.shown):
            return
        self.shown.append((time.monotonic(), uri, code))
        timer = threading.Timer(self.delay, self.approve, (uri, code))
        timer.daemon = True
        self.timers.append(timer)
        timer.start()

    def approve(self, uri, code):
        request = urllib.request.Request(uri, urllib.parse.urlencode(
            {"user_code": code, "action": "approve"}).encode(), method="POST")
        try:
            status = OPENER.open(request, timeout=10).status
        except urllib.error.HTTPError as exc:
            status = exc.code
        self.approved.append((uri, code, status))

    def stop(self):
        for timer in self.timers:
            timer.cancel()


class LoginScript(Script):
    """The scripted model: call the server's tool when offered; else call the relay's login tool (it waits
    for the login), at most ``max_login_calls`` times, and look again at the next turn.  A page and code in
    the login tool's answer are shown to ``person``."""

    def __init__(self, spill_dir, person=None, max_login_calls=2):
        Script.__init__(self, TOOL, spill_dir)
        self.person = person
        self.max_login_calls = max_login_calls
        self.login_calls = 0
        self.login_answers = []   # the login tool's answers, as the model received them
        self.offered = []   # per model request: the server's tools the client offered the model

    def wants(self, tool_names):
        return any(n.endswith((TOOL, LOGIN_TOOL)) for n in tool_names)

    def decide(self, tool_names, outputs, body=None):
        self.tools_seen = list(tool_names)
        self.offered.append([n for n in tool_names if SERVER in n])
        if outputs and outputs[-1][0].endswith(TOOL):
            self.received = outputs[-1][1]
            return ("text", "done")
        answers = [out if isinstance(out, str) else json.dumps(out) for name, out in outputs
                   if name.endswith(LOGIN_TOOL)]
        for text in answers[len(self.login_answers):]:   # new answers of the login tool: show the code
            self.login_answers.append(text)
            shown = SHOWN.search(text)
            if shown and self.person is not None:
                self.person.show(shown.group(1).rstrip(".,"), shown.group(2))
        target = [n for n in tool_names if n.endswith(TOOL) and SERVER in n]
        if target:
            return ("call", target[0], {})
        login = [n for n in tool_names if n.endswith(LOGIN_TOOL)]
        if login and self.login_calls < self.max_login_calls:
            self.login_calls += 1
            return ("call", login[0], {})
        return ("text", "no tool named *%s was offered" % TOOL)


class Login:
    def __init__(self, client, run, trace, stderr, seconds, stats, person=None):
        self.client = client
        self.person = person
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

    @property
    def login_tool_kept(self):
        """Whether the model request that first offered the server's tool still offered the login tool (the
        client kept it after notifications/tools/list_changed and the new list without it); None: never offered."""
        for names in self.run.script.offered:
            if any(n.endswith(TOOL) for n in names):
                return any(n.endswith(LOGIN_TOOL) for n in names)
        return None

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
        gone = [a for a in self.run.script.login_answers if "not found" in a]
        if gone:   # the client's turn after "Logged in" still offered the login tool, no longer listed
            parts.append("%d call(s) of it after it was gone" % len(gone))
        if self.person is not None:
            parts.append("person approved %d code(s) shown by the model" % len(
                [a for a in self.person.approved if a[2] == 200]))
        if self.answered("notifications/tools/list_changed"):
            parts.append("list_changed sent")
        if self.login_tool_kept is not None:
            parts.append("login tool %s once the server's tools came" % ("still offered" if self.login_tool_kept
                                                                         else "dropped"))
        got = self.tool_output
        text = got if isinstance(got, str) else json.dumps(got)
        parts.append("tool worked" if got is not None and "scopes: mcp" in text else "tool NOT usable")
        parts.append("exit %s in %.0f s" % (self.run.status, self.seconds))
        return "; ".join(parts)


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


def run_first_login(client, workdir, extra=(), device=False):
    os.makedirs(workdir, exist_ok=True)
    server = subprocess.Popen([sys.executable, OAUTH_SERVER], stdout=subprocess.PIPE)
    person = Person(DEVICE_DELAY) if device else None
    try:
        port = int(server.stdout.readline())
        url = "http://127.0.0.1:%d/mcp" % port
        if device:   # the code's page only (no verification_uri_complete): the person types the code
            OPENER.open(urllib.request.Request(url[:-4] + "/_config", json.dumps(
                {"device": {"interval": 1, "complete": False}}).encode(), method="POST"), timeout=10).read()
            extra = ("--oauth-device",) + tuple(extra)
        command = relay_command(url, free_port(), workdir, extra)
        started = time.monotonic()
        script = LoginScript(os.path.join(workdir, "spill"), person, 3 if device else 2)
        run = run_client(client, command, workdir, script)
        seconds = time.monotonic() - started
        stats = json.loads(OPENER.open("http://127.0.0.1:%d/_stats" % port, timeout=10).read())
    finally:
        if person is not None:
            person.stop()
        server.kill()
        server.wait()
    stderr = ""
    if os.path.exists(os.path.join(workdir, "relay.stderr")):
        with open(os.path.join(workdir, "relay.stderr"), encoding="utf-8", errors="replace") as f:
            stderr = f.read()
    login = Login(client, run, read_trace(os.path.join(workdir, "trace.jsonl")), stderr, seconds, stats, person)
    LOGINS[(client, "device" if device else "browser")] = login
    return login


def run_client(client, command, workdir, script):
    """``harness.run_client`` with COMMAND as the whole server command line (no --record)."""
    home = os.path.join(workdir, "home")
    os.makedirs(home, exist_ok=True)
    env = harness.base_env(home)
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
    device = "--device" in sys.argv[2:]
    login = run_first_login(sys.argv[1], tempfile.mkdtemp(prefix="ocx-login-"),
                            [a for a in sys.argv[2:] if a != "--device"], device)
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
