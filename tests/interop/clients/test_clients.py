"""Real CLIs (Codex, Claude Code, Gemini CLI, Copilot CLI, OpenCode, Qwen Code, CodeBuddy) call an MCP tool via
the relay and direct.

Each run records what the scripted model received back as the tool output
(``outcomes.Outcome``).  Two kinds of tests:

- what holds today: every CLI completes both ways, sends a clientInfo the relay
  forwards unchanged, and every file the relay spilled holds the whole result;
- the "done means": via the relay the model gets the whole result, or a
  preview whose file or reader call returns all of it, never something the
  client silently cut after us.
"""
import os

import pytest

import harness
import tools_server
from outcomes import CASES, CLIENT_CASES, CLIENTS, outcome, prefetch

PATHS = [True, False]


def need(client):
    binary = harness.binary(client)
    if not os.access(binary, os.X_OK):
        pytest.skip("%s is not installed in %s (run `make interop`)" % (client, harness.PREFIX))


@pytest.fixture(scope="module", autouse=True)
def runs_ahead(request):
    """Start the runs of the selected tests of this module, two at a time, before the first one waits for its own."""
    keys = []
    for item in request.session.items:
        params = getattr(item, "callspec", None) and item.callspec.params
        if item.module is request.module and params and "case" in params and os.access(
                harness.binary(params["client"]), os.X_OK):
            for via_relay in ([params["via_relay"]] if "via_relay" in params else PATHS):
                key = (params["client"], params["case"], via_relay)
                if key not in keys:
                    keys.append(key)
    prefetch(keys)


@pytest.mark.parametrize("via_relay", PATHS, ids=["relay", "direct"])
@pytest.mark.parametrize("client, case", CLIENT_CASES)
def test_client_gets_a_tool_output(client, case, via_relay):
    need(client)
    run, result, _ = outcome(client, case, via_relay)
    assert run.status == 0, run.output[-2000:]
    assert result is not None, "the model never received the tool output:\n" + run.output[-2000:]
    assert result.chars > 0 or result.images


@pytest.mark.parametrize("client", CLIENTS)
def test_client_info_forwarded(client):
    need(client)
    direct, relayed = outcome(client, "big_text", False)[0], outcome(client, "big_text", True)[0]
    assert direct.client_info and direct.client_info[0].get("name")
    assert relayed.client_info == direct.client_info


@pytest.mark.parametrize("client, case", CLIENT_CASES)
def test_relay_spill_holds_the_whole_result(client, case):
    need(client)
    run = outcome(client, case, True)[0]
    for name in os.listdir(run.spill_dir):
        if not name.endswith((".txt", ".json")):
            continue
        with open(os.path.join(run.spill_dir, name), encoding="utf-8") as spilled:
            text = spilled.read()
        if name.endswith(".txt"):
            assert tools_server.END_MARK in text, name
        if name.endswith(".json") and case == "image":
            assert tools_server.png_base64() in text, name


@pytest.mark.parametrize("client, case", CLIENT_CASES)
def test_done_means_model_gets_all_via_relay(client, case):
    """The whole result, or a preview whose file or reader call returns all of it."""
    need(client)
    run, result, _ = outcome(client, case, True)
    assert result is not None, run.output[-2000:]
    whole = result.full and not result.cut and (result.image_kept if case == "image" else True)
    if whole:
        return
    assert result.spill_path, "the model got neither the whole result nor our spill path: " + result.summary()
    assert result.spill_files, "the preview names a spill but the relay wrote none"
    assert result.reader_offered, "spilled, but the client offered no reader tool to the model: " + result.summary()
    assert result.pages_reach_end, "the reader pages did not reach the end: " + result.summary()
    direct = outcome(client, case, False)[1]
    assert not (case == "image" and direct and direct.images and result.images == []), \
        "an image the client shows was spilled: " + result.summary()
