"""The real CodeBuddy CLI (npm @tencent-ai/agent-sdk 0.3.201: CodeBuddy Code 2.117.0), offline, beyond the cases
every CLI runs (test_clients.py, test_clocks.py, test_lifecycle.py, test_more_cases.py):

- what ocx_proxy's client facts say of it: the 80,000-character limit, the start-up wait, the environment it gives
  its servers (CODEBUDDY_SERVICE_PROXY_URL names it: clientInfo.name is the user's name for the server);
- the relay config in a project's .mcp.json, as the README gives it;
- ``turn codebuddy``: the model's call comes back as a function_call item; the turn fails closed on an undeclared
  name, oversize arguments, too many calls, a bridge that is not connected;
- ``models codebuddy``: two HOMEs (two accounts, ~/.codebuddy/models.json) two rosters, the cache for the same key,
  the built-in list for another, which is what the CLI lists offline.
"""
import functools
import json
import os
import subprocess
import sys
import tempfile
import time

import pytest

import harness
import model_server
import outcomes
import tools_server
from test_clients import need

sys.path.insert(0, harness.ROOT)
import ocx_proxy  # noqa: E402

FACTS = ocx_proxy.CLIENTS["codebuddy"].facts
LIMIT = FACTS.result_chars
REQUEST = {"input": "What is the weather in Paris?",
           "tools": [{"type": "function", "name": "get_weather", "description": "Weather for a city",
                      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]}


@pytest.fixture(autouse=True)
def installed():
    need("codebuddy")


def workdir(name):
    return tempfile.mkdtemp(prefix="codebuddy-%s-" % name, dir=outcomes.WORKDIR)


def record(case, what):
    outcomes.MORE[("codebuddy", case)] = what


@pytest.mark.parametrize("size, whole", [(LIMIT - 10, True), (LIMIT + 10, False)])
def test_its_result_limit_is_the_client_facts(size, whole):
    where = workdir("limit")
    server = [sys.executable, tools_server.__file__, "--texts", str(size)]
    run = harness.run_client("codebuddy", "text_%d" % size, False, where, server=server)
    text = outcomes.text_of(run.received)
    record("a %d-character text, direct" % size, "%d characters reached the model%s" % (
        len(text), ", whole" if tools_server.END_MARK in text else ": " + text[:60]))
    assert run.status == 0, run.output[-2000:]
    assert (tools_server.END_MARK in text) == whole, text[:300]
    if not whole:
        assert "exceeds maximum allowed tokens" in text and len(text) < 2000


def test_its_servers_get_the_variable_that_names_it_and_the_relay_picks_its_profile():
    where = workdir("env")
    env_file = os.path.join(where, "env.json")
    server = [sys.executable, tools_server.__file__, "--env", env_file]
    run = harness.run_client("codebuddy", "big_text", False, where, server=server)
    assert run.status == 0, run.output[-2000:]
    with open(env_file) as info:
        seen = json.load(info)
    marks = ocx_proxy.CLIENTS["codebuddy"].profile.client_env
    record("its servers' environment", "%s; clientInfo %s; parent %s" % (
        ", ".join(name for name in marks if name in seen["env"]), run.client_info, (seen["parent"] or ["?"])[:2]))
    assert all(name in seen["env"] for name in marks)
    assert run.client_info == [{"name": model_server.SERVER, "version": "1.0.0"}]
    assert ocx_proxy.client_for_info_name(model_server.SERVER, seen["env"]) == "codebuddy"
    # via the relay, 60,000 characters are kept whole: the generic profile (10,000) would have spilled them
    result = outcomes.outcome("codebuddy", "big_text", True)[1]
    assert result.full and not result.spill_path, result.summary()


def test_it_waits_its_mcp_timeout_before_the_first_turn():
    where = workdir("start")
    run = harness.run_client("codebuddy", "big_text", False, where, deadline="default")
    posts = [at for (method, _, body), at in zip(run.script.requests, run.script.times) if method == "POST"]
    waited = posts[0] - run.started if posts else None
    quick = outcomes.outcome("codebuddy", "big_text", False)[0]   # the tier's MCP_TIMEOUT, 5000
    shortened = min(at for (method, _, _), at in zip(quick.script.requests, quick.script.times) if method == "POST")
    record("first turn, MCP_TIMEOUT unset | %d" % harness.CODEBUDDY_START_MS, "%.1f s after start | %.1f s, its "
           "server's tools %s" % (waited or -1, shortened - quick.started,
                                  "offered" if run.received is not None else "NOT offered"))
    assert run.status == 0 and run.received is not None, run.output[-2000:]
    assert FACTS.start_seconds <= waited <= FACTS.start_seconds + 20
    assert shortened - quick.started <= 15


def test_the_relay_config_in_a_projects_mcp_json_pages_a_big_result_to_the_end():
    where = workdir("project")
    client = functools.partial(harness.codebuddy, project=True)
    original = harness.CLIENTS["codebuddy"]
    harness.CLIENTS["codebuddy"] = client
    try:
        run = harness.run_client("codebuddy", "huge_text", True, where)
    finally:
        harness.CLIENTS["codebuddy"] = original
    pages = "\n".join(outcomes.text_of(page) for page in run.script.pages)
    record(".mcp.json, relay, huge_text", "%d reader page(s)%s" % (
        len(run.script.pages), ", end reached" if tools_server.END_MARK in pages else ""))
    assert run.status == 0, run.output[-2000:]
    assert tools_server.END_MARK in pages, run.output[-2000:]


# ---- turn codebuddy ----

class TurnScript(model_server.Script):
    """Answers every conversation request with CALLS (a list of (tool, arguments) for the bridge's tools, "*"
    standing for mcp__opencodex__) after a few words; None: a text answer."""

    def __init__(self, calls):
        super().__init__("", os.devnull)
        self.calls = calls

    def decide(self, tool_names, outputs, body=None):
        self.tools_seen = list(tool_names)
        if self.calls is None:
            return ("text", "It is sunny.")
        return ("calls", "Let me look.", [(name.replace("*", "mcp__opencodex__"), args) for name, args in self.calls])


def posts(script):
    return len([request for request in script.requests if request[0] == "POST"])


def turn(calls, request=REQUEST, environ=None, **options):
    """``turn codebuddy`` in-process (its CLI a real subprocess) with a scripted model: (result or the
    TurnRefused, the script, seconds)."""
    home = workdir("turn")
    env = harness.base_env(home)
    script = TurnScript(calls)
    with model_server.ModelServer(script) as model:
        harness.codebuddy(model.port, [sys.executable], home, env)   # its environment; its mcp.json is not read
        env.update(environ or {})
        started = time.monotonic()
        try:
            result = ocx_proxy.CodeBuddyTurn(request, harness.CODEBUDDY, 120, environ=env, **options).run()
        except ocx_proxy.TurnRefused as exc:
            result = exc
    return result, script, time.monotonic() - started


def test_a_turn_returns_the_models_call_as_a_function_call_item():
    result, script, seconds = turn([("*get_weather", {"city": "Paris"})])
    assert not isinstance(result, Exception), result
    kinds = [item["type"] for item in result["output"]]
    record("turn codebuddy, one call", "%s in %.1f s, %d model request(s)" % (kinds, seconds, posts(script)))
    message, call = result["output"]
    assert message["content"][0]["text"] == "Let me look."
    assert call["name"] == "get_weather" and json.loads(call["arguments"]) == {"city": "Paris"}
    assert result["usage"]["total_tokens"] == 15
    assert script.tools_seen == ["mcp__opencodex__get_weather"]   # the bridge's tool alone, offered directly
    assert posts(script) == 1


def test_a_turn_without_calls_returns_the_text():
    result, _, _ = turn(None)
    assert [item["content"][0]["text"] for item in result["output"]] == ["It is sunny."]


@pytest.mark.parametrize("case, calls, environ, refusal", [
    ("undeclared name", [("*nope", {})], None, "does not declare"),
    ("oversize arguments", [("*get_weather", {"city": "x" * 70000})], None, "bytes"),
    ("too many calls", [("*get_weather", {"city": str(n)}) for n in range(17)], None, "more than"),
    ("bridge not connected", [("*get_weather", {})], {"PYTHONHOME": os.devnull}, "alone connected"),
])
def test_a_turn_fails_closed(case, calls, environ, refusal):
    result, script, seconds = turn(calls, environ=environ)
    record("turn codebuddy, " + case, "%s in %.1f s, %d model request(s)" % (
        "refused: %s" % result if isinstance(result, Exception) else "NOT REFUSED", seconds, posts(script)))
    assert isinstance(result, ocx_proxy.TurnRefused) and refusal in str(result), result


# ---- models codebuddy ----

def models(home, key, cli=None):
    env = harness.base_env(home)
    env["CODEBUDDY_API_KEY"] = key
    proc = subprocess.run([sys.executable, harness.PROXY, "models", "codebuddy", "--json", "--cli",
                           cli or harness.CODEBUDDY, "--cache-dir", os.path.join(outcomes.WORKDIR, "roster-cache")],
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=90)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), proc.stderr.decode()


def account_home(name, available):
    home = workdir(name)
    os.makedirs(os.path.join(home, ".codebuddy"))
    with open(os.path.join(home, ".codebuddy", "models.json"), "w") as out:
        json.dump({"models": [{"id": name + "-model-1", "name": name, "vendor": "OpenAI",
                               "url": "http://127.0.0.1:9/v1", "apiKey": "x"}],
                   "availableModels": available + [name + "-model-1"]}, out)
    return home


def test_models_two_accounts_two_rosters_the_cache_for_the_same_key_builtin_for_another():
    first, _ = models(account_home("acct-a", ["glm-5.0"]), "key-a")
    second, _ = models(account_home("acct-b", ["kimi-k2.5", "gpt-5.5"]), "key-b")
    absent = os.path.join(outcomes.WORKDIR, "no-such-codebuddy")
    cached, warning = models(workdir("acct-a-again"), "key-a", absent)
    other, _ = models(workdir("acct-c"), "key-c", absent)
    record("models codebuddy", "A %s, B %s; CLI gone: A %s, C %s" % (
        first["models"], second["models"], cached["source"], other["source"]))
    assert first == {"models": ["glm-5.0"], "source": "live"}
    assert second == {"models": ["gpt-5.5", "kimi-k2.5"], "source": "live"}   # in the CLI's order
    assert cached == {"models": ["glm-5.0"], "source": "cache"} and warning.count("\n") == 1
    assert other == {"models": list(ocx_proxy.CODEBUDDY_BUILTIN_MODELS), "source": "builtin"}


def test_the_builtin_list_is_what_the_cli_lists_offline():
    fresh, _ = models(workdir("fresh"), "key-fresh")
    assert fresh == {"models": list(ocx_proxy.CODEBUDDY_BUILTIN_MODELS), "source": "live"}
