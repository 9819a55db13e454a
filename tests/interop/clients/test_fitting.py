"""Catalog fitting, with the real Gemini CLI and Codex: direct vs via the relay (default options).

fit_server's catalog holds, one tool per case, what a client or its model API rejects: ``$ref``/``$defs``,
a type array, a root ``anyOf``, a 70-character name, a dotted name (case ``all``: every tool at once).
The scripted model server refuses a request the way the real API does (model_server.refusal); the
scripted model calls every tool it is offered, found by its description mark, with the case's arguments.

Direct, what happens is what was measured (Gemini CLI 0.61.0, Codex 0.171.0) and asserted as such:

- Gemini CLI sends ``parametersJsonSchema`` (JSON Schema: ``$ref``/``$defs`` and a root ``anyOf`` pass as
  they are), turns a type array into ``type`` + ``nullable`` itself and middle-cuts the long name to 63
  characters with ``...``: the Gemini API accepts every case and every call reaches the server.
- Codex puts the tools in a ``mcp__fx`` namespace, replaces the dots itself (``files_read_v1``) and keeps
  ``$ref``, type arrays, the root ``anyOf`` and the 70-character name: OpenAI refuses the whole request
  (HTTP 400), so no tool at all reaches the model.

Via the relay the model is offered every tool, no request is refused, and each call reaches the server
under the tool's ORIGINAL name with the ORIGINAL arguments.
"""
import json

import pytest

from outcomes import FIT_CASES, FIT_CLIENTS, fit_outcome
from test_clients import need
import fit_server

# (client, case) -> the error code of the 400 the model API answers direct; absent: direct works today
DIRECT_REFUSED = {
    ("codex", "root_anyof"): "invalid_function_parameters",
    ("codex", "long_name"): "string_above_max_length",
    ("codex", "all"): "invalid_function_parameters",
}


def detail(got):
    return "refusals=%s offered=%s calls=%s\n%s" % (json.dumps(got.refusals)[:800], got.offered, got.calls,
                                                     got.output[-1500:])


@pytest.mark.parametrize("case", FIT_CASES)
@pytest.mark.parametrize("client", FIT_CLIENTS)
def test_fit_direct_as_measured(client, case):
    need(client)
    got = fit_outcome(client, case, False)
    code = DIRECT_REFUSED.get((client, case))
    if code:
        assert got.refusals and got.refusals[0][1][1]["error"]["code"] == code, detail(got)
        assert got.status != 0 and not got.calls, detail(got)
        return
    assert not got.refusals, detail(got)
    assert all(got.reached(case) for case in got.cases), detail(got)


@pytest.mark.parametrize("case", FIT_CASES)
@pytest.mark.parametrize("client", FIT_CLIENTS)
def test_fit_relay_offers_every_tool_and_calls_reach_the_original(client, case):
    need(client)
    got = fit_outcome(client, case, True)
    assert not got.refusals, "the model API refused the relay's catalog: " + detail(got)
    assert got.status == 0, detail(got)
    assert all(got.offered.get(case) for case in got.cases), "a tool was not offered: " + detail(got)
    for each in got.cases:
        assert got.reached(each), "%s did not reach the server as written: %s" % (each, detail(got))
    originals = {name for name, _, _ in fit_server.CASES.values()}
    assert all(call["name"] in originals for call in got.calls), "a fitted name reached the server: " + detail(got)
