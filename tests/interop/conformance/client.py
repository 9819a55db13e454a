"""The conformance suite's client, played by a stdlib MCP client talking through OUR relay.

The suite (npm ``@modelcontextprotocol/conformance``) runs ``client.py URL``
with MCP_CONFORMANCE_SCENARIO naming the scenario and, for pre-registered
clients, MCP_CONFORMANCE_CONTEXT holding ``{"client_id": ..., "client_secret": ...}``.
This script starts ``ocx_proxy.py streamable-http --url URL`` (OCX_INTEROP_PROXY
names another copy) with a fresh OCX_PROXY_AUTH_DIR and BROWSER set to
browser.py, maps the credentials to ``--oauth-client-*`` options, and over the
relay's stdio sends initialize -> notifications/initialized -> tools/list ->
the tools/call the scenario expects.  All OAuth work is the relay's.

Exit status 0 when every request got a result, 1 otherwise (the suite records
the checks on its side either way); every step is logged on stderr, which the
suite keeps as stderr.txt next to checks.json.
"""
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from scenarios import tool_to_call

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
PROXY = os.environ.get("OCX_INTEROP_PROXY") or os.path.join(ROOT, "ocx_proxy.py")
BUDGET = float(os.environ.get("OCX_CONFORMANCE_BUDGET", "15"))   # the suite kills us at 20 s
PROTOCOL_VERSION = "2025-11-25"
CIMD_URL = "https://conformance-test.local/client-metadata.json"   # as direct_client.py

def log(message):
    sys.stderr.write("conformance-client: %s\n" % message)
    sys.stderr.flush()


def private_file(workdir, name, text):
    """TEXT written to WORKDIR/NAME, readable by us only (a key, an ID token); returns its path."""
    path = os.path.join(workdir, name)
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
        f.write(text)
    return path


def relay_argv(url, scenario, context, workdir, env):
    """The relay's command line for SCENARIO, the suite's CONTEXT mapped to our options (secrets through ENV)."""
    argv = [sys.executable, PROXY, "streamable-http", "--output-dir", os.path.join(workdir, "spill"),
            "--url", url]
    if not scenario.startswith("auth/"):
        return argv   # the plain relay: these scenarios must pass whether or not the relay has OAuth
    # the suite's Client ID Metadata Document (auth/basic-cimd expects it as client_id where the AS takes one)
    argv += ["--oauth-timeout", "10", "--oauth-client-metadata-url", CIMD_URL]
    if context.get("client_id"):
        argv += ["--oauth-client-id", context["client_id"]]
    if context.get("client_secret"):   # as a CI job would pass it: in the environment, never on the command line
        env["OCX_PROXY_OAUTH_CLIENT_SECRET"] = context["client_secret"]
    if context.get("private_key_pem"):   # client-credentials-jwt: private_key_jwt (the key says ES256 or RS256)
        argv += ["--oauth-client-key", private_file(workdir, "client-key.pem", context["private_key_pem"])]
    if scenario.startswith("auth/client-credentials"):
        argv.append("--oauth-client-credentials")
    if context.get("idp_issuer"):   # cross-app-access: enterprise-managed authorization with an SSO agent's ID token
        argv += ["--oauth-idp-issuer", context["idp_issuer"], "--oauth-idp-client-id", context["idp_client_id"],
                 "--oauth-idp-id-token-file", private_file(workdir, "id-token", context["idp_id_token"])]
        if context.get("idp_token_endpoint"):
            argv += ["--oauth-idp-token-endpoint", context["idp_token_endpoint"]]
    return argv


def browser_wrapper(workdir):
    """webbrowser runs BROWSER as one program name (no arguments), so wrap browser.py in one."""
    path = os.path.join(workdir, "browser")
    with open(path, "w") as f:
        f.write('#!/bin/sh\nexec "%s" "%s" "$@"\n' % (sys.executable, os.path.join(HERE, "browser.py")))
    os.chmod(path, 0o755)
    return path


class Relay:
    """The relay as a subprocess: JSON-RPC lines in on stdin, out on stdout (read by a thread)."""

    def __init__(self, argv, env):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        self.lines = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send(self, message):
        self.proc.stdin.write((json.dumps(message) + "\n").encode("utf-8"))
        self.proc.stdin.flush()

    def request(self, method, params, deadline):
        """Send a request; answer server requests meanwhile; return its result or raise RuntimeError."""
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            try:
                line = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise RuntimeError("%s: no answer within the time budget" % method)
            if line is None:
                raise RuntimeError("%s: the relay closed its stdout (exit %s)" % (method, self.proc.poll()))
            try:
                message = json.loads(line)
            except ValueError:
                raise RuntimeError("the relay wrote a non-JSON line on stdout: %r" % line[:200])
            if "method" in message:
                self._answer(message)
            elif message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError("%s: error %s" % (method, json.dumps(message["error"])))
                return message.get("result")

    def _answer(self, message):
        if "id" not in message:
            log("notification %s" % message["method"])
            return
        if message["method"] == "elicitation/create":
            schema = message.get("params", {}).get("requestedSchema", {})
            content = {name: prop["default"] for name, prop in schema.get("properties", {}).items()
                       if "default" in prop}
            result = {"action": "accept", "content": content}
        elif message["method"] == "roots/list":
            result = {"roots": []}
        elif message["method"] == "ping":
            result = {}
        else:
            self.send({"jsonrpc": "2.0", "id": message["id"],
                       "error": {"code": -32601, "message": "not supported by this client"}})
            return
        self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})

    def close(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()


def session(relay, scenario, deadline):
    """initialize -> initialized -> tools/list -> the scenario's tools/call."""
    relay.request("initialize", {"protocolVersion": PROTOCOL_VERSION,
                                 "capabilities": {"elicitation": {}},
                                 "clientInfo": {"name": "ocx-conformance-client", "version": "1"}}, deadline)
    relay.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    names = [tool.get("name") for tool in relay.request("tools/list", {}, deadline).get("tools", [])]
    log("tools: %s" % names)
    call = tool_to_call(scenario, names)
    if call is None:
        return
    name, arguments = call
    result = relay.request("tools/call", {"name": name, "arguments": arguments}, deadline)
    log("tools/call %s -> %s" % (name, json.dumps(result)[:300]))


def main(argv):
    if not argv:
        sys.stderr.write("usage: client.py SERVER_URL\n")
        return 2
    url = argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    deadline = time.monotonic() + BUDGET
    workdir = tempfile.mkdtemp(prefix="ocx-conformance-")
    env = dict(os.environ, OCX_PROXY_AUTH_DIR=os.path.join(workdir, "auth"), BROWSER=browser_wrapper(workdir),
               OCX_CONFORMANCE_BROWSER_LOG=os.path.join(workdir, "browser.log"))
    argv = relay_argv(url, scenario, context, workdir, env)
    log("scenario %s: relay %s, pre-registered client: %s"
        % (scenario, PROXY, "yes" if context.get("client_id") else "no"))
    relay = Relay(argv, env)
    failure = None
    try:
        session(relay, scenario, deadline)
    except RuntimeError as exc:
        failure = str(exc)
    finally:
        relay.close()
        with open(env["OCX_CONFORMANCE_BROWSER_LOG"], "a+") as f:
            f.seek(0)
            for line in f:
                log(line.rstrip("\n"))
        shutil.rmtree(workdir, ignore_errors=True)
    # Last, so that a test's failure message (the tail of stderr) starts with the reason.
    log("FAILED: %s" % failure if failure else "done")
    return 1 if failure else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
