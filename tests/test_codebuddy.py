"""CodeBuddy: ``turn codebuddy`` (one -p turn with the capture bridge armed) and ``models codebuddy`` (the roster),
against tests/fixtures/fake_codebuddy.py run as the CLI (real subprocesses, the real bridge); the real CLI is in
tests/interop/clients/test_codebuddy.py."""
import hashlib
import hmac
import json
import os
import re
import stat
import sys
import time

import pytest
from hypothesis import given, settings, strategies as st

import ocx_proxy as op
from helpers import FIXTURES, assert_one_line_error, run_proxy

FAKE = os.path.join(FIXTURES, "fake_codebuddy.py")
REQUEST = {"model": "glm-5.0", "instructions": "Be brief.",
           "input": [{"role": "user", "content": [{"type": "input_text", "text": "Weather in Paris?"}]}],
           "tools": [{"type": "function", "name": "get_weather", "description": "Weather for a city",
                      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]}


@pytest.fixture
def cli(tmp_path):
    """An executable that runs the fake CLI (a .cmd on Windows)."""
    if os.name == "nt":
        path = tmp_path / "codebuddy.cmd"
        path.write_text('@"%s" "%s" %%*\r\n' % (sys.executable, FAKE))
    else:
        path = tmp_path / "codebuddy"
        path.write_text('#!/bin/sh\nexec "%s" "%s" "$@"\n' % (sys.executable, FAKE))
        path.chmod(0o755)
    return str(path)


def fake_env(tmp_path, mode="", **more):
    env = dict(os.environ, FAKE_CODEBUDDY=mode, FAKE_LOG=str(tmp_path / "log.ndjson"),
               FAKE_PIDS=str(tmp_path / "pids"), **more)
    env.pop("CODEBUDDY_API_KEY", None)
    return env


def turn(tmp_path, cli, mode="", request=REQUEST, *extra, **env):
    path = tmp_path / "request.json"
    path.write_text(json.dumps(request))
    return run_proxy("turn", "codebuddy", "--request", str(path), "--cli", cli, *extra,
                     env=fake_env(tmp_path, mode, **env), timeout=90)


def runs(tmp_path):
    path = tmp_path / "log.ndjson"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def gone(tmp_path, within=5.0):
    """Whether every sleeping child the fake started is gone."""
    path = tmp_path / "pids"
    pids = [int(n) for n in path.read_text().split()] if path.exists() else []
    deadline = time.monotonic() + within
    while any(op.process_exists(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return pids and not any(op.process_exists(pid) for pid in pids)


# ---- turn codebuddy ----

def test_a_turn_returns_the_call_as_a_function_call_item_with_the_usage(tmp_path, cli):
    started = time.monotonic()
    result = turn(tmp_path, cli)
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    message, item = answer["output"]
    assert message == {"type": "message", "role": "assistant", "status": "completed",
                       "content": [{"type": "output_text", "text": "Let me look.", "annotations": []}]}
    assert item["type"] == "function_call" and item["name"] == "get_weather"
    assert json.loads(item["arguments"]) == {"city": "Paris"} and item["call_id"].startswith("call_")
    # no result line (the turn was ended): folded from the messages; input = 11 + 5 cached
    assert answer["usage"] == {"input_tokens": 16, "input_tokens_details": {"cached_tokens": 5},
                               "output_tokens": 7, "total_tokens": 23}
    assert time.monotonic() - started < 30   # ended once the call was in, not by the CLI's clock


def test_the_cli_gets_the_bridge_alone_the_prompt_on_stdin_and_the_users_environment(tmp_path, cli):
    result = turn(tmp_path, cli, "", REQUEST, SOME_USER_SETTING="kept")
    assert result.returncode == 0, result.stderr
    [run] = runs(tmp_path)
    argv = run["argv"]
    assert argv[:4] == ["-p", "--output-format", "stream-json", "--verbose"]
    assert argv[argv.index("--tools") + 1] == "" and "--strict-mcp-config" in argv
    assert argv[argv.index("--allowedTools") + 1] == "mcp__opencodex__get_weather"
    assert argv[argv.index("--model") + 1] == "glm-5.0"
    assert run["prompt"] == "[instructions]\nBe brief.\n\n[user]\nWeather in Paris?"
    assert run["env"]["SOME_USER_SETTING"] == "kept"
    # cmd.exe, which runs the fake's .cmd on Windows, sets PROMPT
    ours = set(run["env"]) - set(fake_env(tmp_path, "", SOME_USER_SETTING="kept")) - {"PROMPT"}
    assert not ours, "turn added to the CLI's environment: %s" % ours


def test_the_bridge_config_offers_the_tools_directly_and_leaves_nothing_behind(tmp_path, cli):
    assert turn(tmp_path, cli).returncode == 0
    argv = runs(tmp_path)[0]["argv"]
    config = argv[argv.index("--mcp-config") + 1]
    assert not os.path.exists(os.path.dirname(config)), "the turn's private directory was left behind"


def test_several_calls_of_one_message_come_back_in_order(tmp_path, cli):
    result = turn(tmp_path, cli, "calls:3")
    assert result.returncode == 0, result.stderr
    items = json.loads(result.stdout)["output"]
    assert [item["type"] for item in items] == ["message"] + ["function_call"] * 3
    assert len({item["call_id"] for item in items[1:]}) == 3


def test_an_answer_without_calls_is_a_message_and_the_result_lines_usage(tmp_path, cli):
    result = turn(tmp_path, cli, "text")
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert [item["content"][0]["text"] for item in answer["output"]] == ["It is sunny."]
    assert answer["usage"]["input_tokens"] == 20 and answer["usage"]["output_tokens"] == 9


FAIL_CLOSED = {
    "no-init": "is not its init frame",
    "failed": "does not show the bridge opencodex alone connected",
    "two-servers": "does not show the bridge opencodex alone connected",
    "malformed": "is not valid JSON",
    "truncated": "ended in the middle of a line",
    "long-line": "longer than",
    "no-newline": "longer than",
    "undeclared": "mcp__opencodex__nope, which the catalog does not declare",
    "unknown": "mcp__opencodex__nope, which the catalog does not declare",
    "error": "reported an error: It is sunny.",
    "exit": "ended without a result (exit status 1): codebuddy: something broke",
    "calls:17": "more than",
}


@pytest.mark.parametrize("mode", sorted(FAIL_CLOSED))
def test_the_turn_fails_closed_with_one_line_no_items_and_no_second_attempt(tmp_path, cli, mode):
    result = turn(tmp_path, cli, mode)
    line = assert_one_line_error(result, 1)
    assert FAIL_CLOSED[mode] in line, line
    assert result.stdout == b""
    assert len(runs(tmp_path)) == 1


def test_oversize_arguments_fail_the_turn(tmp_path, cli):
    result = turn(tmp_path, cli, "call", REQUEST, "--max-argument-bytes", "100",
                  FAKE_ARGS=json.dumps({"city": "x" * 200}))
    line = assert_one_line_error(result, 1)   # seen in the stream, or refused by the bridge first
    assert re.search(r"over (--max-argument-bytes )?100\b", line) and result.stdout == b"", line


def test_parallel_tool_calls_false_allows_one_call(tmp_path, cli):
    result = turn(tmp_path, cli, "calls:2", dict(REQUEST, parallel_tool_calls=False))
    assert "more than" in assert_one_line_error(result, 1)


def test_a_hanging_cli_is_ended_at_the_timeout_with_its_whole_tree(tmp_path, cli):
    started = time.monotonic()
    result = turn(tmp_path, cli, "hang", REQUEST, "--timeout", "8")
    assert "no complete turn within 8 s" in assert_one_line_error(result, 1)
    assert time.monotonic() - started < 25
    assert gone(tmp_path), "a child of the CLI outlived the turn"


def test_a_missing_cli_and_a_bad_request_are_one_line_each(tmp_path, cli):
    assert "could not start" in assert_one_line_error(turn(tmp_path, str(tmp_path / "absent")), 1)
    result = turn(tmp_path, cli, "", {"tools": []})
    assert "\"input\"" in assert_one_line_error(result, 2)
    result = turn(tmp_path, cli, "", dict(REQUEST, input=[{"type": "input_image", "image_url": "x"}]))
    assert "cannot be given to codebuddy -p" in assert_one_line_error(result, 2)
    assert runs(tmp_path) == []


def test_a_stream_past_its_byte_limit_fails_the_turn(tmp_path, cli, monkeypatch):
    monkeypatch.setattr(op, "TURN_MAX_STREAM_BYTES", 1 << 20)
    # 40 calls of 30,000 characters (Windows takes no longer variable than 32,767 characters)
    for name, value in fake_env(tmp_path, "calls:40", FAKE_ARGS=json.dumps({"city": "x" * 30000})).items():
        monkeypatch.setenv(name, value)
    with pytest.raises(op.TurnRefused, match="more than 1048576 bytes of stream-json"):
        op.CodeBuddyTurn(REQUEST, cli, 60, max_calls=50, max_argument_bytes=1 << 20).run()


# ---- the stream, the prompt, the usage: the parsers ----

class Bridge:
    server_name = "opencodex"

    def tool_names(self):
        return ["mcp__opencodex__get_weather"]


INIT = json.dumps({"type": "system", "subtype": "init", "tools": ["mcp__opencodex__get_weather", "Read"],
                   "mcp_servers": [{"name": "opencodex", "status": "connected"}]})


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=200), max_size=6))
def test_any_stream_after_the_init_frame_is_judged_or_refused_never_crashes(lines):
    stream = op.TurnStream(Bridge(), 16, 65536)
    stream.feed(INIT.encode())
    for line in lines:
        try:
            stream.feed(line)
        except op.TurnRefused:
            return
    stream.text()
    assert set(stream.responses_usage()) == {"input_tokens", "input_tokens_details", "output_tokens", "total_tokens"}


@settings(max_examples=100, deadline=None)
@given(st.lists(st.fixed_dictionaries({"name": st.sampled_from(["opencodex", "other"]),
                                       "status": st.sampled_from(["connected", "failed", "pending"])}), max_size=3))
def test_the_init_frame_passes_only_with_exactly_the_bridge_connected(servers):
    frame = json.dumps({"type": "system", "subtype": "init", "tools": ["mcp__opencodex__get_weather"],
                        "mcp_servers": servers})
    stream = op.TurnStream(Bridge(), 16, 65536)
    if servers == [{"name": "opencodex", "status": "connected"}]:
        stream.feed(frame.encode())
    else:
        with pytest.raises(op.TurnRefused):
            stream.feed(frame.encode())


def test_the_first_object_must_be_the_init_frame_whatever_blank_lines_come_before():
    stream = op.TurnStream(Bridge(), 16, 65536)
    stream.feed(b"\n")
    stream.feed(INIT.encode())
    stream = op.TurnStream(Bridge(), 16, 65536)
    stream.feed(b"  \r\n")
    with pytest.raises(op.TurnRefused, match="not its init frame"):
        stream.feed(json.dumps({"type": "result", "subtype": "success"}).encode())


def test_usage_is_folded_by_hand_from_the_last_usage_of_each_message():
    stream = op.TurnStream(Bridge(), 16, 65536)
    stream.feed(INIT)
    for message_id, usage in (("a", {"input_tokens": 0, "output_tokens": 0}),
                              ("a", {"input_tokens": 100, "output_tokens": 20, "cache_read_input_tokens": 30,
                                     "cache_creation_input_tokens": 4}),
                              ("b", {"input_tokens": 7, "output_tokens": 3})):
        stream.feed(json.dumps({"type": "assistant", "parent_tool_use_id": None, "message": {
            "id": message_id, "content": [{"type": "text", "text": message_id}], "usage": usage}}))
    # a: 100 + 30 + 4 = 134 in, 20 out; b: 7 in, 3 out
    assert stream.responses_usage() == {"input_tokens": 141, "input_tokens_details": {"cached_tokens": 30},
                                        "output_tokens": 23, "total_tokens": 164}
    assert stream.text() == "aa\n\nb"   # one message's blocks joined as they are, messages by a blank line


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["user", "assistant", "developer"]), st.text(max_size=40)), min_size=1,
                max_size=5))
def test_every_message_text_reaches_the_prompt_in_order(messages):
    request = {"input": [{"role": role, "content": text} for role, text in messages]}
    prompt = op.turn_prompt(request)
    position = 0
    for role, text in messages:
        block = "[%s]\n%s" % (role, text)
        position = prompt.index(block, position) + len(block)


def test_calls_and_their_outputs_are_written_into_the_prompt():
    prompt = op.turn_prompt({"input": [
        {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": '{"city":"Paris"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
        {"type": "reasoning", "summary": []}]})
    assert prompt == '[assistant called get_weather (call c1)]\n{"city":"Paris"}\n\n[output of call c1]\nsunny'


# ---- models codebuddy ----

def models(tmp_path, cli, mode="", *extra, key=None, **env):
    environ = fake_env(tmp_path, mode, **env)
    if key is not None:
        environ["CODEBUDDY_API_KEY"] = key
    return run_proxy("models", "codebuddy", "--cli", cli, "--cache-dir", str(tmp_path / "cache"), *extra,
                     env=environ, timeout=90)


def answer(result):
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_roster_is_the_help_lines_ids_without_custom_selectors(tmp_path, cli):
    roster = "default-model, glm-5.0, custom:mine, custom-local:acct-a-model-1, glm-5.0, kimi-k2.5"
    result = models(tmp_path, cli, "roster", FAKE_ROSTER=roster, key="k1")
    assert result.stdout.decode().splitlines() == ["default-model", "glm-5.0", "kimi-k2.5"]
    assert result.stderr == b""
    assert answer(models(tmp_path, cli, "roster", "--json", FAKE_ROSTER=roster, key="k1")) == {
        "models": ["default-model", "glm-5.0", "kimi-k2.5"], "source": "live"}


@pytest.mark.parametrize("mode", ["none", "two", "status", "flood", "hang"])
def test_a_failed_discovery_serves_this_accounts_cache_else_the_builtin_list(tmp_path, cli, mode):
    assert answer(models(tmp_path, cli, "roster", "--json", FAKE_ROSTER="glm-5.0", key="account-a"))["source"] == "live"
    started = time.monotonic()
    result = models(tmp_path, cli, mode, "--json", "--timeout", "5", key="account-a")
    assert answer(result) == {"models": ["glm-5.0"], "source": "cache"}
    warning = result.stderr.decode()
    assert warning.count("\n") == 1 and "warning: could not read the model roster" in warning
    other = answer(models(tmp_path, cli, mode, "--json", "--timeout", "5", key="account-b"))
    assert other == {"models": list(op.CODEBUDDY_BUILTIN_MODELS), "source": "builtin"}
    assert time.monotonic() - started < 40
    if mode == "hang":
        assert gone(tmp_path), "the hanging CLI's child outlived models"


def test_the_cache_holds_a_keyed_fingerprint_never_the_key_in_private_files(tmp_path, cli):
    key = "sk-secret-account-key"
    answer(models(tmp_path, cli, "roster", "--json", key=key))
    folder = tmp_path / "cache" / "codebuddy"
    text = (folder / "models.json").read_text()
    assert key not in text
    secret = (folder / "fingerprint.key").read_bytes()
    expected = hmac.new(secret, b"key\x00" + key.encode(), hashlib.sha256).hexdigest()
    assert list(json.loads(text)["rosters"]) == [expected]
    if os.name != "nt":
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        assert {stat.S_IMODE((folder / n).stat().st_mode) for n in os.listdir(folder)} == {0o600}


def test_a_damaged_cache_is_not_an_error(tmp_path, cli):
    answer(models(tmp_path, cli, "roster", "--json", key="k"))
    (tmp_path / "cache" / "codebuddy" / "models.json").write_text("{not json")
    assert answer(models(tmp_path, cli, "none", "--json", key="k"))["source"] == "builtin"
    assert answer(models(tmp_path, cli, "roster", "--json", key="k"))["source"] == "live"


# Hand-written lines: (help text, roster or None).
ROSTER_VECTORS = [
    ("  --model <model>   Model. Currently supported: (a-1, b.2)", ["a-1", "b.2"]),
    ("  --model <model>   Model. Currently supported: ()", None),   # an empty id
    ("  --model <model>   Currently supported: (a, b c)", None),    # a space inside an id
    ("  --model <model>   Currently supported: (a, (b))", None),
    ("  --fallback-model <model>   Currently supported: (a)", None),
    ("Currently supported: (a)", None),
    ("  --model <model>   Currently supported: (custom:x, custom-local:y)", []),
    ("  --model <model>   Currently supported: (a)\n  --model <model>   Currently supported: (a)", None),
]


@pytest.mark.parametrize("text, roster", ROSTER_VECTORS)
def test_roster_lines_by_hand(text, roster):
    assert op.parse_roster(text) == roster


MODEL_ID = st.from_regex(r"[a-z0-9][a-z0-9.:-]{0,20}", fullmatch=True)


@settings(max_examples=200, deadline=None)
@given(st.lists(MODEL_ID, min_size=1, max_size=30), st.text(max_size=80).filter(
    lambda t: len(("<%s>" % t).splitlines()) == 1 and "(" not in t and ")" not in t))
def test_a_roster_line_gives_its_ids_in_order_without_custom_or_repeats(ids, description):
    text = "Options:\n  --model <model>  %s Currently supported: (%s)\n  -h, --help\n" % (description, ", ".join(ids))
    expected = []
    for model in ids:
        if not model.startswith(("custom:", "custom-local:")) and model not in expected:
            expected.append(model)
    assert op.parse_roster(text) == expected


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_any_text_gives_a_list_of_plain_ids_or_none(text):
    roster = op.parse_roster(text)
    assert roster is None or all(op.MODEL_ID_RE.match(model) for model in roster)
