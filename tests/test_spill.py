"""The spill section: previews, the fit invariant, files, readable text."""
import base64
import hashlib
import json
import os
import stat
import time

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import ocx_proxy as op


def compact(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def spill_line(obj):
    return compact(obj).encode("utf-8")


# -- make_preview -----------------------------------------------------------

def test_preview_keeps_everything_that_fits():
    assert op.make_preview("short", 10) == ("short", "", 0)


def test_preview_is_three_quarters_head_one_quarter_tail():
    text = "a" * 1000 + "z" * 1000
    head, tail, omitted = op.make_preview(text, 400)
    assert (len(head), len(tail), omitted) == (300, 100, 1600)
    assert head == "a" * 300 and tail == "z" * 100


def test_preview_cuts_on_line_breaks_when_near():
    text = "\n".join("line %03d" % i for i in range(200))  # 8 chars + newline each
    head, tail, omitted = op.make_preview(text, 200)
    assert head.endswith("\n") and tail.startswith("line ")
    assert len(head) + len(tail) + omitted == len(text)


def test_preview_never_separates_emoji_modifiers_or_combining_marks():
    text = "👍🏽" * 300 + "e\u0301" * 300
    for budget in range(50, 400, 7):
        head, tail, _ = op.make_preview(text, budget)
        assert not head.endswith("\U0001F44D") or head.count("\U0001F44D") == head.count("\U0001F3FD")
        assert not tail.startswith("\U0001F3FD") and not tail.startswith("\u0301")


@given(st.text(min_size=0, max_size=3000), st.integers(min_value=0, max_value=3000))
def test_preview_parts_are_slices_of_the_text(text, budget):
    head, tail, omitted = op.make_preview(text, budget)
    assert text.startswith(head) and text.endswith(tail)
    assert len(head) + len(tail) + omitted == len(text)
    if omitted:
        assert len(head) + len(tail) <= budget


# -- the fit invariant --------------------------------------------------------

json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**40, 2**40),
                         st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=50))
json_values = st.recursive(json_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=10), inner, max_size=5)), max_leaves=20)
big_text = st.one_of(
    st.text(min_size=0, max_size=200).map(lambda t: t * 200),
    st.text(alphabet="数🙂👍🏽é\n\"\\\x01 ab", min_size=1, max_size=40).map(lambda t: t * 900),
)
blocks = st.one_of(
    big_text.map(lambda t: {"type": "text", "text": t}),
    st.builds(lambda data: {"type": "image", "data": base64.b64encode(data).decode(), "mimeType": "image/png"},
              st.binary(max_size=200)),
    big_text.map(lambda t: {"type": "resource", "resource": {"uri": "x://y", "text": t}}),
)
methods = st.sampled_from(["tools/call", "resources/read", "prompts/get", "custom/thing", "tools/call"])


@st.composite
def oversized_messages(draw):
    method = draw(methods)
    msg_id = draw(st.one_of(st.integers(0, 2**31), st.text(alphabet="abc-_9", min_size=1, max_size=20)))
    kind = draw(st.sampled_from(["result", "result", "error", "log"]))
    if kind == "error":
        msg = {"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32603, "message": draw(big_text),
                                                          "data": draw(json_values)}}
    elif kind == "log":
        msg = {"jsonrpc": "2.0", "method": "notifications/message",
               "params": {"level": "info", "data": draw(st.one_of(big_text, json_values))}}
        method = None
    elif method == "tools/call":
        result = {"content": draw(st.lists(blocks, min_size=1, max_size=3))}
        if draw(st.booleans()):
            result["structuredContent"] = {"v": draw(json_values)}
        if draw(st.booleans()):
            result["isError"] = draw(st.booleans())
        msg = {"jsonrpc": "2.0", "id": msg_id, "result": result}
    elif method == "resources/read":
        msg = {"jsonrpc": "2.0", "id": msg_id, "result": {"contents": [{"uri": "x://1", "text": draw(big_text)}]}}
    elif method == "prompts/get":
        msg = {"jsonrpc": "2.0", "id": msg_id, "result": {"description": draw(st.text(max_size=30)), "messages": [
            {"role": "user", "content": {"type": "text", "text": draw(big_text)}}]}}
    else:
        msg = {"jsonrpc": "2.0", "id": msg_id, "result": {"payload": draw(big_text)}}
    return msg, method


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(oversized_messages(), st.integers(min_value=500, max_value=20000), st.integers(min_value=0, max_value=30000),
       st.sampled_from([None, "2025-03-26", "2025-06-18", "2025-11-25"]))
def test_every_rewritten_message_fits_and_is_valid(tmp_path, sample, max_chars, preview_chars, version):
    msg, method = sample
    line = spill_line(msg)
    spill = op.Spill(str(tmp_path / "out"), max_chars, preview_chars)
    rewritten = spill.rewrite(line, msg, method, {"uri": "x://asked"}, version)
    if rewritten is None:
        pytest.fail("an oversized %s was not rewritten" % method)
    out, files = rewritten
    assert len(out) <= max_chars
    new = json.loads(out)
    assert new["jsonrpc"] == "2.0"
    if "id" in msg:
        assert new["id"] == msg["id"] and (("result" in new) != ("error" in new))
    else:
        assert new["method"] == "notifications/message" and "data" in new["params"]
    if method == "tools/call" and "result" in new:
        assert new["result"]["content"][0]["type"] == "text"
    with open(files.json_path, "rb") as handle:
        assert handle.read() == line
    # The preview text is made of whole characters of the original text.
    out.encode("utf-8")


def test_tiny_limit_falls_back_to_minimal_forms(tmp_path):
    msg = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "y" * 50000}]}}
    spill = op.Spill(str(tmp_path / ("deep" * 40)), 500, 4000)
    out, files = spill.rewrite(spill_line(msg), msg, "tools/call")
    assert len(out) <= 500 and json.loads(out)["id"] == 1


def test_lifecycle_and_requests_are_never_rewritten(tmp_path):
    spill = op.Spill(str(tmp_path), 500, 100)
    for method in ("initialize", "tools/list", "prompts/list", "ping", "completion/complete", "logging/setLevel"):
        msg = {"jsonrpc": "2.0", "id": 1, "result": {"x": "y" * 2000}}
        assert spill.rewrite(spill_line(msg), msg, method) is None
    request = {"jsonrpc": "2.0", "id": 1, "method": "sampling/createMessage", "params": {"x": "y" * 2000}}
    assert spill.rewrite(spill_line(request), request, None) is None
    progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"message": "y" * 2000}}
    assert spill.rewrite(spill_line(progress), progress, None) is None
    assert not os.listdir(str(tmp_path))


# -- files ------------------------------------------------------------------

def test_files_are_private_and_named_safely(tmp_path):
    out_dir = tmp_path / "new"
    spill = op.Spill(str(out_dir), 1000, 200)
    msg = {"jsonrpc": "2.0", "id": "../../etc/passwd", "result": {"content": [{"type": "text", "text": "z" * 5000}]}}
    line = spill_line(msg)
    out, files = spill.rewrite(line, msg, "tools/call")
    assert stat.S_IMODE(os.stat(str(out_dir)).st_mode) == 0o700
    for path in (files.json_path, files.txt_path):
        assert os.path.dirname(path) == str(out_dir)
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert op.SPILL_NAME_RE.match(os.path.basename(path))
    assert hashlib.sha256(open(files.json_path, "rb").read()).digest() == hashlib.sha256(line).digest()
    assert not [n for n in os.listdir(str(out_dir)) if n.endswith(".tmp")]


def test_readable_text_joins_blocks_resources_and_prompts():
    msg = {"result": {"content": [{"type": "text", "text": "one"}, {"type": "resource", "resource": {"uri": "a", "text": "two"}},
                                  {"type": "resource_link", "uri": "file:///x"}]}}
    assert op.readable_text(msg, "tools/call").text() == "one\n\ntwo\n\n[resource link: file:///x]"
    prompt = {"result": {"messages": [{"role": "user", "content": {"type": "text", "text": "p1"}},
                                      {"role": "assistant", "content": {"type": "text", "text": "p2"}}]}}
    assert op.readable_text(prompt, "prompts/get").text() == "p1\n\np2"
    structured = {"result": {"content": [], "structuredContent": {"a": 1}}}
    assert json.loads(op.readable_text(structured, "tools/call").text()) == {"a": 1}


def test_file_uri_for_posix_and_windows():
    assert op.file_uri("/tmp/a b/x.txt", windows=False) == "file:///tmp/a%20b/x.txt"
    assert op.file_uri("C:\\Users\\me\\x.txt", windows=True) == "file:///C:/Users/me/x.txt"


def test_remove_expired_only_touches_own_old_files(tmp_path):
    own_old = tmp_path / "20200101T000000.000000Z_tools-call_id-1_0123456789.txt"
    own_tmp = tmp_path / ".20200101T000000.000000Z_x.json.12.tmp"
    own_new = tmp_path / "20200101T000000.000000Z_tools-call_id-2_0123456789.txt"
    other = tmp_path / "keep-me.txt"
    for path in (own_old, own_tmp, own_new, other):
        path.write_text("x")
    old = time.time() - 10 * 86400
    for path in (own_old, own_tmp, other):
        os.utime(str(path), (old, old))
    spill = op.Spill(str(tmp_path), 1000, 100, retention_days=7)
    assert spill.remove_expired() == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([own_new.name, other.name])
    assert op.Spill(str(tmp_path), 1000, 100, retention_days=0).remove_expired() == 0
