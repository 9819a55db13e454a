"""The spill section: previews, the fit invariant, files, readable text."""
import base64
import hashlib
import json
import os
import re
import stat
import subprocess
import sys
import time
import types

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import ocx_proxy as op
from helpers import PROXY, ROOT, STDIO_SERVER, RelayProcess, assert_one_line_error, preview_body, run_proxy


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


# -- Budget: what a message may be as the client gets it ------------------------

def options(**given):
    """The command line's budget options: None is not given."""
    values = dict(max_response_chars=None, max_response_bytes=None, preview_chars=None, max_image_bytes=None)
    values.update(given)
    return types.SimpleNamespace(**values)


def numbers(budget):
    return budget.max_chars, budget.max_bytes, budget.preview_chars, budget.images_free, budget.check_above


def test_a_budget_is_the_client_profile_with_each_option_given_winning():
    codex, generic = op.client_profile("codex"), op.client_profile("generic")
    assert numbers(op.Budget.for_client(codex, options())) == (10000, 10000, 3000, op.MAX_IMAGE_BYTES, 10000)
    assert op.Budget.for_client(codex, options()).model_skips == "content"
    given = options(max_response_chars=500, preview_chars=100, max_image_bytes=0)
    assert numbers(op.Budget.for_client(codex, given)) == (500, 10000, 100, 0, 500)
    # --max-response-chars 0 never spills: the profile's byte budget goes with it.
    assert numbers(op.Budget.for_client(codex, options(max_response_chars=0)))[:2] == (0, 0)
    assert op.Budget.for_client(codex, options(max_response_chars=0)).check_above == 0
    # A byte budget alone gives previews a character bound as large.
    bytes_only = op.Budget.for_client(generic, options(max_response_chars=0, max_response_bytes=3000))
    assert numbers(bytes_only) == (3000, 3000, 4000, 0, 3000)


def test_a_budget_fits_a_line_as_it_is_compacted_or_not_at_all():
    msg = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "x" * 50}]}}
    line, spaced = spill_line(msg), json.dumps(msg, indent=2).encode()
    assert op.Budget(len(line)).fit(line, msg, len(line)) == (True, None)
    assert op.Budget(len(line)).fit(spaced, msg, len(spaced)) == (True, compact(msg))
    assert op.Budget(len(line) - 1).fit(spaced, msg, len(spaced)) == (False, None)
    assert op.Budget(len(line), max_bytes=len(line) - 1).fit(line, msg, len(line)) == (False, None)
    # Image data a client shows is free up to images_free, and only then.
    shot = {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "image", "data": "A" * 1000,
                                                                 "mimeType": "image/png"}]}}
    line = spill_line(shot)
    assert op.Budget(200, images_free=1000).fit(line, shot, len(line)) == (True, None)
    assert op.Budget(200, images_free=999).fit(line, shot, len(line)) == (False, None)


def test_a_reader_page_leaves_room_for_the_rest_of_its_answer():
    assert op.Budget(1000, max_bytes=600).page("é" * 100) == (900, 400)
    assert op.Budget(1000).page("x" * 100) == (900, 0)
    assert op.Budget(0).page("x") == (op.MAX_RESPONSE_CHARS - 1, 0)   # never spilling: the default page


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
       st.sampled_from([None, "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"]))
def test_every_rewritten_message_fits_and_is_valid(tmp_path, sample, max_chars, preview_chars, version):
    msg, method = sample
    line = spill_line(msg)
    spill = op.Spill(str(tmp_path / "out"), op.Budget(max_chars, preview_chars))
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
    if "result" in new:  # the fields the schema of the request's revision requires
        required = (MODERN_REQUIRED if version == "2026-07-28" else LEGACY_REQUIRED).get(method, ())
        assert set(required) <= set(new["result"])
    with open(files.json_path, "rb") as handle:
        assert handle.read() == line
    # The preview text is made of whole characters of the original text.
    out.encode("utf-8")


def test_tiny_limit_falls_back_to_minimal_forms(tmp_path):
    msg = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "y" * 50000}]}}
    spill = op.Spill(str(tmp_path / ("deep" * 40)), op.Budget(500, 4000))
    out, files = spill.rewrite(spill_line(msg), msg, "tools/call")
    assert len(out) <= 500 and json.loads(out)["id"] == 1


def test_lifecycle_and_requests_are_never_rewritten(tmp_path):
    spill = op.Spill(str(tmp_path), op.Budget(500, 100))
    for method in ("initialize", "tools/list", "prompts/list", "ping", "completion/complete", "logging/setLevel"):
        msg = {"jsonrpc": "2.0", "id": 1, "result": {"x": "y" * 2000}}
        assert spill.rewrite(spill_line(msg), msg, method) is None
    request = {"jsonrpc": "2.0", "id": 1, "method": "sampling/createMessage", "params": {"x": "y" * 2000}}
    assert spill.rewrite(spill_line(request), request, None) is None
    progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"message": "y" * 2000}}
    assert spill.rewrite(spill_line(progress), progress, None) is None
    assert not os.listdir(str(tmp_path))


# -- eras: previews valid in the revision of the request answered ----------------

# The fields each result's schema requires, written from schema/<version>/schema.json.
LEGACY_REQUIRED = {"tools/call": {"content"}, "resources/read": {"contents"}, "prompts/get": {"messages"}}
MODERN_REQUIRED = {"tools/call": {"content", "resultType"},
                   "resources/read": {"contents", "resultType", "ttlMs", "cacheScope"},
                   "prompts/get": {"messages", "resultType"}}
SERVER_INFO = {"io.modelcontextprotocol/serverInfo": {"name": "srv", "version": "2"}}
ERA_RESULTS = {
    "tools/call": {"content": [{"type": "text", "text": "t" * 30000}], "isError": False},
    "resources/read": {"contents": [{"uri": "x://r", "text": "r" * 30000}], "ttlMs": 5000, "cacheScope": "public"},
    "prompts/get": {"messages": [{"role": "user", "content": {"type": "text", "text": "p" * 30000}}]},
}


@pytest.mark.parametrize("method", sorted(ERA_RESULTS))
def test_previews_carry_the_required_fields_of_their_era_at_every_size(tmp_path, method):
    for version, required in (("2025-11-25", LEGACY_REQUIRED), ("2026-07-28", MODERN_REQUIRED)):
        modern = version == "2026-07-28"
        result = dict(ERA_RESULTS[method], **({"resultType": "complete", "_meta": SERVER_INFO} if modern else {}))
        msg = {"jsonrpc": "2.0", "id": 5, "result": result}
        for max_chars in (300, 450, 700, 1200, 5000):
            out, _ = op.Spill(str(tmp_path), op.Budget(max_chars, 2000)).rewrite(spill_line(msg), msg, method, {}, version)
            new = json.loads(out)
            assert len(out) <= max_chars
            if "error" in new:  # the last resort: too small for any result
                continue
            got = new["result"]
            assert required[method] <= set(got), (version, max_chars, got)
            if modern:
                assert got["resultType"] == "complete"
                assert got["_meta"]["io.modelcontextprotocol/serverInfo"] == {"name": "srv", "version": "2"}
                if method == "resources/read":
                    assert (got["ttlMs"], got["cacheScope"]) == (5000, "public")
            else:
                assert "resultType" not in got and "io.modelcontextprotocol/serverInfo" not in got.get("_meta", {})
        assert "ocx-proxy/spill" in got["_meta"]  # the largest size keeps ours next to the server's


def test_modern_resources_read_without_cache_fields_gets_no_caching(tmp_path):
    msg = {"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete", "contents": [{"uri": "x://r", "text": "r" * 9000}]}}
    out, _ = op.Spill(str(tmp_path), op.Budget(2000, 500)).rewrite(spill_line(msg), msg, "resources/read", {}, "2026-07-28")
    got = json.loads(out)["result"]
    assert (got["ttlMs"], got["cacheScope"], got["resultType"]) == (0, "private", "complete")


def test_interim_discovery_and_listen_results_are_never_rewritten(tmp_path):
    spill = op.Spill(str(tmp_path), op.Budget(500, 100))
    interim = [("tools/call", {"resultType": "input_required", "inputRequests": {"q": {"method": "elicitation/create",
                "params": {"message": "y" * 2000, "requestedSchema": {"type": "object", "properties": {}}}}}}),
               ("tools/call", {"resultType": "task", "task": {"taskId": "t", "statusMessage": "y" * 2000}}),
               ("prompts/get", {"resultType": "something-new", "x": "y" * 2000}),
               ("tasks/get", {"resultType": "complete", "status": "input_required", "inputRequests": {"x": "y" * 2000}}),
               ("server/discover", {"resultType": "complete", "instructions": "y" * 2000}),
               ("subscriptions/listen", {"resultType": "complete", "_meta": {"x": "y" * 2000}})]
    for method, result in interim:
        msg = {"jsonrpc": "2.0", "id": 1, "result": result}
        assert spill.rewrite(spill_line(msg), msg, method, {}, "2026-07-28") is None, method
    assert not os.listdir(str(tmp_path))


def test_task_results_are_spilled_as_the_tool_results_they_are(tmp_path):
    spill = op.Spill(str(tmp_path), op.Budget(2000, 500))
    tool = {"content": [{"type": "text", "text": "z" * 9000}], "isError": True}
    msg = {"jsonrpc": "2.0", "id": 3, "result": tool}
    got = json.loads(spill.rewrite(spill_line(msg), msg, "tasks/result", {"taskId": "t1"}, "2025-11-25")[0])
    assert "error" not in got and got["result"]["isError"] is True
    assert [b["type"] for b in got["result"]["content"]] == ["text", "resource_link"]
    assert preview_body(got["result"]["content"][0]["text"]).startswith("z" * 100)
    task = {"resultType": "complete", "taskId": "t1", "status": "completed", "createdAt": "2026-01-01T00:00:00Z",
            "lastUpdatedAt": "2026-01-01T00:00:01Z", "ttlMs": None, "result": tool}
    msg = {"jsonrpc": "2.0", "id": 4, "result": task}
    got = json.loads(spill.rewrite(spill_line(msg), msg, "tasks/get", {"taskId": "t1"}, "2026-07-28")[0])["result"]
    assert {k: got[k] for k in ("taskId", "status", "createdAt", "lastUpdatedAt", "ttlMs")} == {
        k: task[k] for k in ("taskId", "status", "createdAt", "lastUpdatedAt", "ttlMs")}
    assert got["resultType"] == "complete" and "ocx-proxy/spill" in got["_meta"]
    # The head kept shrinks with the paths the note names (Windows temp paths are long, and JSON doubles "\\").
    assert preview_body(got["result"]["content"][0]["text"]).startswith("z" * 10) and got["result"]["isError"] is True


# -- files ------------------------------------------------------------------

def test_files_are_private_and_named_safely(tmp_path):
    out_dir = tmp_path / "new"
    spill = op.Spill(str(out_dir), op.Budget(1000, 200))
    msg = {"jsonrpc": "2.0", "id": "../../etc/passwd", "result": {"content": [{"type": "text", "text": "z" * 5000}]}}
    line = spill_line(msg)
    out, files = spill.rewrite(line, msg, "tools/call")
    # Windows has no mode bits to check (ACLs instead)
    assert not op.FILE_OWNERS or stat.S_IMODE(os.stat(str(out_dir)).st_mode) == 0o700
    for path in (files.json_path, files.txt_path):
        assert os.path.dirname(path) == str(out_dir)
        assert not op.FILE_OWNERS or stat.S_IMODE(os.stat(path).st_mode) == 0o600
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
    spill = op.Spill(str(tmp_path), op.Budget(1000, 100), retention_days=7)
    assert spill.remove_expired() == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([own_new.name, other.name])
    assert op.Spill(str(tmp_path), op.Budget(1000, 100), retention_days=0).remove_expired() == 0


def killed_while_spilling(spill_dir, tries=3):
    """SIGKILL a relay while it writes a 10 MB spill; the temporary files it left."""
    for _ in range(tries):
        relay = RelayProcess(["--output-dir", str(spill_dir)])
        relay.initialize()
        relay.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "big", "arguments": {"n": 10 ** 7}}})
        deadline = time.monotonic() + 30
        left = []
        while not left and time.monotonic() < deadline and relay.proc.poll() is None:
            left = [name for name in os.listdir(str(spill_dir)) if name.endswith(".tmp")]
            time.sleep(0.001)
        relay.proc.kill()
        relay.proc.wait()
        relay.close()
        # what is left once it is dead: the one seen may have been renamed into place before the kill
        left = [name for name in os.listdir(str(spill_dir)) if name.endswith(".tmp")]
        if left:
            return left
    pytest.skip("the spill was always written before it could be seen")


def test_temporary_files_of_a_relay_killed_while_spilling_are_removed_at_the_next_start(tmp_path):
    spill_dir = tmp_path / "spill"
    spill_dir.mkdir(mode=0o700)
    assert killed_while_spilling(spill_dir)
    relay = RelayProcess(["--output-dir", str(spill_dir), "--retention-days", "0"])
    relay.initialize()
    relay.close()
    assert not [name for name in os.listdir(str(spill_dir)) if name.endswith(".tmp")]
    assert "left unfinished by a stopped relay" in relay.stderr


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="whether a process lives is asked on POSIX only")
def test_only_provably_stale_temporary_files_are_removed(tmp_path):
    spill_dir = tmp_path / "spill"
    spill_dir.mkdir(mode=0o700)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    stem = "20990101T000000.000000Z_tools-call_id-1_abcdef0123.json"
    other_host = "%08x" % (int(op.HOST_TAG, 16) ^ 1)
    files = {
        "killed": (op.temp_name(stem, pid=gone.pid), 0, False),            # its writer is gone
        "untouched": (op.temp_name(stem), 2 * 3600, False),                # nothing written for two hours
        "writing": (op.temp_name(stem), 0, True),                          # its writer lives (this test)
        "other machine": (op.temp_name(stem, pid=gone.pid).replace(op.HOST_TAG, other_host), 0, True),
        "older version": (".%s.%s.tmp" % (stem, os.urandom(8).hex()), 0, True),  # no pid in the name
    }
    for name, age, _ in files.values():
        path = spill_dir / name
        path.write_bytes(b"x" * 1000)
        os.utime(str(path), (time.time() - age, time.time() - age))
    relay = RelayProcess(["--output-dir", str(spill_dir), "--retention-days", "0"])
    relay.initialize()
    relay.close()
    assert {what: (spill_dir / name).exists() for what, (name, _, _) in files.items()} == {
        what: kept for what, (_, _, kept) in files.items()}


# -- hostile directories, planted links, full disks --

posix_only = pytest.mark.skipif(not hasattr(os, "geteuid"), reason="owners and modes are POSIX")
UID = os.geteuid() if hasattr(os, "geteuid") else None
BIG = {"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "z" * 5000}]}}


def shared_dir(path):
    """A directory anyone may write to, like /tmp (mkdir alone would be cut by the umask)."""
    path.mkdir()
    os.chmod(str(path), 0o777)
    return path


def foreign_dir(tmp_path):
    """A directory owned by another user: made and given away as root, else the root directory."""
    if os.geteuid() != 0:
        return "/"
    path = tmp_path / "foreign"
    path.mkdir()
    os.chown(str(path), 65534, 65534)
    return str(path)


def spill_names(path):
    return sorted(n for n in os.listdir(str(path)) if op.SPILL_NAME_RE.match(n))


def test_planted_links_are_never_written_through(tmp_path):
    out = tmp_path / "out"
    out.mkdir(mode=0o700)
    victim = tmp_path / "victim"
    victim.write_bytes(b"orig")
    # The reproduction: a link at the temporary name the old code would use...
    os.symlink(str(victim), str(out / (".x.json.%d.tmp" % os.getpid())))
    # ...and one at the final name: rename() replaces the link itself, never its target.
    os.symlink(str(victim), str(out / "x.json"))
    path = op.Spill(str(out)).write_file("x.json", b"PWN")
    assert victim.read_bytes() == b"orig"
    assert path == str(out / "x.json") and not os.path.islink(path)
    assert open(path, "rb").read() == b"PWN"
    assert stat.S_IMODE(os.lstat(path).st_mode) == 0o600 or not op.FILE_OWNERS


def test_write_file_takes_chunks_and_a_failed_write_leaves_no_temp_file(tmp_path):
    spill = op.Spill(str(tmp_path / "out"))
    path = spill.write_file("chunks.txt", (bytes([65 + n]) * 100000 for n in range(3)))
    assert open(path, "rb").read() == b"A" * 100000 + b"B" * 100000 + b"C" * 100000

    def failing():
        yield b"x" * 100000
        raise OSError(5, "producer failed")

    with pytest.raises(OSError):
        spill.write_file("broken.txt", failing())
    assert os.listdir(str(tmp_path / "out")) == ["chunks.txt"]


@posix_only
def test_shared_output_dir_gets_a_private_subdirectory(tmp_path, capsys):
    shared = shared_dir(tmp_path / "shared")
    spill = op.Spill(str(shared), op.Budget(4000, 200))
    out, files = spill.rewrite(spill_line(BIG), BIG, "tools/call")
    private = shared / ("ocx-proxy-%d" % UID)
    assert os.listdir(str(shared)) == [private.name]
    assert stat.S_IMODE(os.lstat(str(private)).st_mode) == 0o700 and os.lstat(str(private)).st_uid == UID
    assert stat.S_IMODE(os.stat(str(shared)).st_mode) == 0o777  # never chmod a directory we did not create
    meta = json.loads(out)["result"]["_meta"][op.SPILL_META_KEY]
    assert os.path.dirname(meta["json"]) == os.path.dirname(meta["txt"]) == str(private)
    assert len(spill_names(private)) == 2
    spill.rewrite(spill_line(BIG), BIG, "tools/call")
    assert capsys.readouterr().err.count("private directory %s" % private) == 1  # said once


@posix_only
@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="giving a directory away needs root")
def test_directory_owned_by_someone_else_gets_a_private_subdirectory(tmp_path):
    foreign = foreign_dir(tmp_path)
    os.chmod(foreign, 0o755)
    out, files = op.Spill(foreign, op.Budget(1000, 200)).rewrite(spill_line(BIG), BIG, "tools/call")
    assert os.path.dirname(files.json_path) == os.path.join(foreign, "ocx-proxy-%d" % UID)


@posix_only
def test_output_dir_linked_to_another_users_directory_is_refused(tmp_path, capsys):
    foreign = foreign_dir(tmp_path)
    before = sorted(os.listdir(foreign))
    os.symlink(foreign, str(tmp_path / "link"))
    assert op.Spill(str(tmp_path / "link"), op.Budget(1000, 200)).rewrite(spill_line(BIG), BIG, "tools/call") is None
    assert sorted(os.listdir(foreign)) == before
    err = capsys.readouterr().err
    assert "refusing --output-dir %s" % (tmp_path / "link") in err and "forwarding it unchanged" in err
    # A link to a directory of our own is fine (~/.cache on another disk).
    own = tmp_path / "own"
    own.mkdir(mode=0o700)
    os.symlink(str(own), str(tmp_path / "own-link"))
    assert op.Spill(str(tmp_path / "own-link"), op.Budget(1000, 200)).rewrite(spill_line(BIG), BIG, "tools/call")
    assert len(spill_names(own)) == 2


@posix_only
@pytest.mark.parametrize("planted", ["link", "open-dir", "file"])
def test_a_planted_private_subdirectory_is_refused(tmp_path, capsys, planted):
    shared = shared_dir(tmp_path / "shared")
    private = shared / ("ocx-proxy-%d" % UID)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    if planted == "link":
        os.symlink(str(elsewhere), str(private))
    elif planted == "open-dir":
        private.mkdir()
        os.chmod(str(private), 0o777)
    else:
        private.write_text("x")
    assert op.Spill(str(shared), op.Budget(1000, 200)).rewrite(spill_line(BIG), BIG, "tools/call") is None
    assert "refusing spill directory %s" % private in capsys.readouterr().err
    assert os.listdir(str(elsewhere)) == [] and sorted(os.listdir(str(shared))) == [private.name]
    if planted == "open-dir":
        assert stat.S_IMODE(os.stat(str(private)).st_mode) == 0o777 and os.listdir(str(private)) == []


@posix_only
def test_remove_expired_works_in_the_private_subdirectory_and_never_follows_links(tmp_path):
    old = time.time() - 10 * 86400
    shared = shared_dir(tmp_path / "shared")
    spill = op.Spill(str(shared), op.Budget(1000, 100), retention_days=7)
    assert spill.remove_expired() == 0 and os.listdir(str(shared)) == []  # nothing created to clean
    spill.write_file("keep.txt", b"x")
    private = shared / ("ocx-proxy-%d" % UID)
    name = "20200101T000000.000000Z_tools-call_id-%d_0123456789.txt"
    victim = tmp_path / "victim"
    for path in (private / (name % 1), shared / (name % 2), victim):
        path.write_text("x")
        os.utime(str(path), (old, old))
    os.symlink(str(victim), str(private / (name % 3)))
    assert spill.remove_expired() == 1
    assert sorted(os.listdir(str(private))) == sorted(["keep.txt", name % 3])
    assert (shared / (name % 2)).exists() and victim.exists()  # not the directory we write in


# A real failing write, as root or not and without a tiny file system: past
# RLIMIT_FSIZE, write() fails with EFBIG once SIGXFSZ is ignored (Python ignores
# it already; we say so anyway).  The limit is set in a child process only.
LIMIT_FILE_SIZE = r"""
import resource, runpy, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]), resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
sys.argv = sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""
SPILL_ONE = r"""
import json, sys
import ocx_proxy as op
msg = json.loads(sys.stdin.read())
line = json.dumps(msg, separators=(",", ":")).encode()
print(json.dumps(op.Spill(sys.argv[1], op.Budget(1000, 200)).rewrite(line, msg, sys.argv[2]) is None))
"""


def file_size_limited(limit, argv):
    """``python argv...`` run with RLIMIT_FSIZE at ``limit`` bytes."""
    pytest.importorskip("resource")
    return [sys.executable, "-c", LIMIT_FILE_SIZE, str(limit)] + list(argv)


@pytest.mark.parametrize("failing", ["json", "txt"])
def test_full_disk_leaves_nothing_behind_and_forwards_unchanged(tmp_path, failing):
    if failing == "json":  # the first file already fails
        msg = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "y" * 200000}]}}
        method = "tools/call"
    else:  # the .json fits, its indented .txt does not: the .json is removed again
        msg = {"jsonrpc": "2.0", "id": 1, "result": {"items": [0] * 20000}}
        method = "custom/thing"
    script = tmp_path / "spill_one.py"
    script.write_text(SPILL_ONE)
    out = tmp_path / "out"
    result = subprocess.run(file_size_limited(65536, [str(script), str(out), method]), input=json.dumps(msg).encode(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=ROOT),
                            timeout=30)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) is True  # forwarded unchanged
    err = result.stderr.decode()
    assert err.count("\n") == 1 and "could not save oversized %s response" % method in err
    assert "File too large" in err
    assert os.listdir(str(out)) == []


def test_relay_forwards_unspilled_when_the_disk_is_full(tmp_path):
    out = tmp_path / "out"
    relay = RelayProcess(command=file_size_limited(65536, [PROXY, "stdio", "--output-dir", str(out), "--",
                                                           sys.executable, STDIO_SERVER]))
    try:
        relay.initialize()
        reply = relay.call("big", {"n": 200000})
        assert reply["result"]["content"][0]["text"] == "x" * 200000  # the original, whole
        assert relay.call("echo", {"text": "still here"})["result"]["content"][0]["text"] == "still here"
    finally:
        assert relay.close() == 0
    assert "could not save oversized tools/call response" in relay.stderr and "File too large" in relay.stderr
    assert os.listdir(str(out)) == []  # no temporary file keeps the disk full


@posix_only
def test_relay_spills_into_a_private_subdirectory_of_a_shared_dir(tmp_path):
    shared = shared_dir(tmp_path / "shared")
    relay = RelayProcess(["--output-dir", str(shared)])
    try:
        relay.initialize()
        reply = relay.call("big", {"n": 30000})
    finally:
        assert relay.close() == 0
    private = str(shared / ("ocx-proxy-%d" % UID))
    meta = reply["result"]["_meta"][op.SPILL_META_KEY]
    assert os.path.dirname(meta["txt"]) == private and open(meta["txt"]).read() == "x" * 30000
    assert os.listdir(str(shared)) == [os.path.basename(private)]
    assert stat.S_IMODE(os.lstat(private).st_mode) == 0o700
    assert "spill files go to the private directory %s" % private in relay.stderr


@posix_only
def test_trace_never_appends_through_a_planted_link(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("orig\n")
    os.symlink(str(victim), str(tmp_path / "trace.ndjson"))
    result = run_proxy("stdio", "--trace", str(tmp_path / "trace.ndjson"), "--", sys.executable, "-c", "pass",
                       stdin=b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
    assert "is a symbolic link" in assert_one_line_error(result, 2)
    assert victim.read_text() == "orig\n"


# -- bytes too, markers at both ends, readable .txt -------------------

wide_text = st.text(alphabet="数据漢字🙂👍🏽é\n\"\\ ab", min_size=1, max_size=40).map(lambda t: t * 1200)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(wide_text, st.integers(min_value=500, max_value=20000), st.integers(min_value=1000, max_value=60000),
       st.integers(min_value=0, max_value=30000), st.sampled_from(["2025-06-18", "2026-07-28"]),
       st.sampled_from(["tools/call", "resources/read", "custom/thing"]))
def test_every_rewritten_message_fits_characters_and_bytes(tmp_path, text, max_chars, max_bytes, preview_chars,
                                                           version, method):
    if method == "tools/call":
        result = {"content": [{"type": "text", "text": text}]}
    elif method == "resources/read":
        result = {"contents": [{"uri": "x://1", "text": text}]}
    else:
        result = {"payload": text}
    msg = {"jsonrpc": "2.0", "id": 7, "result": result}
    spill = op.Spill(str(tmp_path / "out"), op.Budget(max_chars, preview_chars, max_bytes=max_bytes))
    spill.reader_name = op.READER_TOOL_NAME
    out, files = spill.rewrite(spill_line(msg), msg, method, {"uri": "x://1"}, version)
    assert len(out) <= max_chars and len(out.encode("utf-8")) <= max_bytes
    assert json.loads(out)["id"] == 7


def test_a_cjk_preview_near_the_budget_fits_the_byte_budget(tmp_path):
    msg = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "数" * 30000}]}}
    spill = op.Spill(str(tmp_path), op.Budget(10000, 8000, max_bytes=12000))
    out, _ = spill.rewrite(spill_line(msg), msg, "tools/call", None, "2025-06-18")
    assert len(out.encode("utf-8")) <= 12000
    assert "数" * 1000 in json.loads(out)["result"]["content"][0]["text"]


def test_the_marker_opens_and_closes_the_preview(tmp_path):
    msg = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "数据\n" * 9000}]}}
    spill = op.Spill(str(tmp_path), op.Budget(10000, 4000))
    spill.reader_name = "read_spilled_output_2"
    out, files = spill.rewrite(spill_line(msg), msg, "tools/call", None, "2025-06-18")
    text = json.loads(out)["result"]["content"][0]["text"]
    stem = os.path.basename(files.txt_path)[:-4]
    call = 'the read_spilled_output_2 tool of this server returns it in pages, id="%s"' % stem
    # A client that keeps only the first or only the last half still has the way to the rest.
    for part in (text[:len(text) // 2], text[len(text) // 2:]):
        assert files.txt_path in part and files.json_path in part and call in part
        assert "9001 lines" in part and "(%d bytes)" % len(spill_line(msg)) in part
    assert list(spill.spilled) == [stem] and spill.spilled[stem][0] == files.txt_path
    spill.reader_name = None  # no reader tool: the marker does not name one
    out, _ = spill.rewrite(spill_line(msg), msg, "tools/call", None, "2025-06-18")
    assert "read_spilled_output" not in out and "id=" not in out


def test_a_text_block_that_is_json_is_pretty_printed_in_the_txt(tmp_path):
    data = {"rows": [{"n": 1.50, "name": "数据 %d" % i, "big": 12345678901234567890123} for i in range(300)]}
    raw = json.dumps(data).replace("1.5,", "1.50,")
    msg = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": raw},
                                                             {"type": "text", "text": "[not json"}]}}
    line = spill_line(msg)
    _, files = op.Spill(str(tmp_path), op.Budget(2000, 500)).rewrite(line, msg, "tools/call", None, "2025-06-18")
    with open(files.txt_path, encoding="utf-8") as handle:
        txt = handle.read()
    pretty = json.dumps(data, indent=2, ensure_ascii=False).replace('"n": 1.5,', '"n": 1.50,')
    assert txt == pretty + "\n\n[not json"
    assert max(len(row) for row in txt.split("\n")) < 80
    with open(files.json_path, "rb") as handle:
        assert handle.read() == line  # the .json keeps the exact bytes


# -- Spill.read ---------------------------------------------------------------

def spilled(tmp_path, text, reader_name=op.READER_TOOL_NAME):
    spill = op.Spill(str(tmp_path / "out"), op.Budget(2000, 500))
    spill.reader_name = reader_name
    msg = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": text}]}}
    _, files = spill.rewrite(spill_line(msg), msg, "tools/call", None, "2025-06-18")
    return spill, os.path.basename(files.txt_path)[:-4], files


def test_read_gives_lines_from_one_and_says_how_to_go_on(tmp_path):
    spill, stem, _ = spilled(tmp_path, "\n".join("row %d" % i for i in range(1, 101)))
    assert spill.read(stem, line=1, lines=3) == (
        "row 1\nrow 2\nrow 3\n",
        '[next: read_spilled_output(id="%s", line=4, lines=3)]\n[text of 100 lines: more follows at line=4]' % stem)
    assert spill.read(stem, line=99) == ("row 99\nrow 100", "[end of the text]")
    text, hint = spill.read(stem, budget_chars=60)  # the budget bounds the page, not only `lines`
    assert text == "row 1\nrow 2\nrow 3\nrow 4\nrow 5\nrow 6\nrow 7\nrow 8\n"  # 8 x 7 characters as JSON
    assert hint.endswith('line=9)]\n[text of 100 lines: more follows at line=9]')


@pytest.mark.parametrize("budget_bytes", [0, 700])
def test_pages_of_any_budget_give_the_text_back_exactly(tmp_path, budget_bytes):
    text = "short\n" + "数\"\\\t🙂" * 3000 + "\n\nend\n" + "x" * 5000
    spill, stem, files = spilled(tmp_path, text)
    pages, where = [], (1, 1)
    while where:
        page, hint = spill.read(stem, line=where[0], column=where[1], budget_chars=500, budget_bytes=budget_bytes)
        size = len(json.dumps(page, ensure_ascii=False)) - 2
        assert 0 < size <= 500 and (not budget_bytes or len(json.dumps(page, ensure_ascii=False).encode()) - 2 <= 700)
        pages.append(page)
        found = re.search(r"line=(\d+)(?:, column=(\d+))?", hint)
        where = (int(found.group(1)), int(found.group(2) or 1)) if found else None
    assert "".join(pages) == text


def saved(tmp_path, text, spill=None):
    """``text`` written as the ``.txt`` of a new spill, as it is (no preview, no pretty-printing)."""
    spill = spill or op.Spill(str(tmp_path / "out"), op.Budget(2000, 500))
    readable = op.ReadableText()
    readable.parts.append(text)
    files, _ = spill.save_text(spill.save_line(os.urandom(16).hex().encode(), "tools/call", 1), readable)
    return spill, os.path.basename(files.txt_path)[:-4], files


def search(spill, stem, **kwargs):
    """``Spill.search`` run to its end as the relay runs it, without the loop: ``(text, hint)``."""
    job = spill.search(stem, **kwargs)
    try:
        done = subprocess.run(job.argv, stdin=job.stdin, stdout=subprocess.PIPE, timeout=60)
    finally:
        os.close(job.stdin)
    return job.answer(done.stdout)


def test_read_searches_with_a_regular_expression_and_context(tmp_path):
    spill, stem, _ = spilled(tmp_path, "\n".join("row %d" % i for i in range(1, 101)))
    text, hint = search(spill, stem, pattern=r"^row (5|9)$", context=1)
    assert text == "4-row 4\n5:row 5\n6-row 6\n--\n8-row 8\n9:row 9\n10-row 10\n"
    assert hint == "[no more matches]"
    text, hint = search(spill, stem, pattern=r"row \d+0$", budget_chars=40)
    assert text == "10:row 10\n20:row 20\n30:row 30\n"
    assert hint == ('[next: read_spilled_output(id="%s", line=40, pattern="row \\\\d+0$")]\n'
                    '[search: more follows at line=40]' % stem)
    assert search(spill, stem, line=40, pattern=r"row \d+0$", budget_chars=40)[0].startswith("40:row 40\n")


def test_a_search_shows_long_lines_around_the_match_and_non_ascii_exactly(tmp_path):
    spill, stem, _ = saved(tmp_path, "数" * 1000 + "needle" + "é" * 1000 + "\nshort 🙂 needle\n\"q\"\\")
    text, hint = search(spill, stem, pattern="needle", context=1)
    assert text == ("1:…%s…(line of 2006 chars; read it with column=901)\n2:short 🙂 needle\n3-\"q\"\\\n"
                    % ("数" * 100 + "needle" + "é" * 294))
    assert hint == "[no more matches]"


def test_a_search_out_of_time_answers_what_it_found_and_where_to_go_on(tmp_path, monkeypatch):
    spill, stem, _ = saved(tmp_path, "\n".join("row %d" % i for i in range(1, 101)))
    monkeypatch.setattr(op, "SEARCH_SECONDS", 0)  # every line is past the soft deadline: one line a call
    assert search(spill, stem, pattern="row") == (
        "1:row 1\n", '[next: read_spilled_output(id="%s", line=2, pattern="row")]\n[search: more follows at line=2]'
        % stem)
    assert search(spill, stem, pattern="row", line=100) == ("100:row 100\n", "[no more matches]")


def test_a_search_without_an_interpreter_to_start_says_so_and_keeps_no_descriptor(tmp_path, monkeypatch):
    spill, stem, _ = saved(tmp_path, "row\n" * 10)
    monkeypatch.setattr(op.sys, "executable", "")
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(5):
        with pytest.raises(ValueError, match="needs a Python interpreter"):
            spill.search(stem, pattern="row")
    assert len(os.listdir("/proc/self/fd")) == before


def test_read_opens_only_what_this_spill_wrote(tmp_path):
    spill, stem, files = spilled(tmp_path, "secret\n" * 3000)
    other = op.Spill(spill.output_dir)
    with pytest.raises(ValueError, match="unknown spill id"):
        other.read(stem)  # another session's spill: not by id, never by path
    for bad in ("../" + stem, "/etc/passwd", stem + "/../x", "..", "a\\b", "", None, 3):
        with pytest.raises(ValueError, match="invalid spill id|unknown spill id"):
            spill.read(bad)
    for kwargs, message in (({"line": 0}, "line must be"), ({"lines": 0}, "lines must be"),
                            ({"line": True}, "line must be"), ({"line": 3002}, "past the end"),
                            ({"line": 10 ** 12}, "past the end"), ({"column": 9}, "has only 6 characters"),
                            ({"line": 3001, "column": 2}, "has only 0 characters"),
                            ({"budget_chars": 0}, "too small")):
        with pytest.raises(ValueError, match=message):
            spill.read(stem, **kwargs)
    for kwargs, message in (({"pattern": "(?P<"}, "bad pattern"), ({"pattern": "x", "context": -1}, "context must be"),
                            ({"pattern": "x", "line": 3002}, "past the end"),
                            ({"pattern": "x", "budget_chars": -5}, "too small")):
        with pytest.raises(ValueError, match=message):
            spill.search(stem, **kwargs)
    assert spill.read(stem, line=3001) == ("", "[end of the text]")  # the empty line after the last newline
    with open(files.txt_path, "ab") as handle:
        handle.write(b"more")
    with pytest.raises(ValueError, match="changed on disk"):
        spill.read(stem)
    outside = tmp_path / "outside.txt"
    outside.write_text("not a spill")
    os.unlink(files.txt_path)
    os.symlink(str(outside), files.txt_path)  # a link put in its place is not followed
    with pytest.raises(ValueError, match="no longer on disk"):
        spill.read(stem)


def test_a_page_of_one_long_line_costs_a_page(tmp_path):
    import tracemalloc

    line = "é" * 10000000 + "数"  # one line of 20 MB
    spill, stem, _ = saved(tmp_path, line + "\nend")
    tracemalloc.start()
    try:
        text, hint = spill.read(stem, column=5000001, budget_chars=5000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert text == line[5000000:5005000]
    assert hint == ('[next: read_spilled_output(id="%s", line=1, column=5005001)]\n'
                    '[text of 2 lines: more follows at line=1, column=5005001]' % stem)
    assert peak < 1000000, peak  # the page and the index's step, not the line (old: the whole line, 3 times)
    assert spill.read(stem, column=10000001) == ("数\nend", "[end of the text]")


PAGE_TEXT = st.text(st.sampled_from(["a", "b", "\n", "é", "数", "🙂", '"', "\\", "\t", "\u0301"]), max_size=300)


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=PAGE_TEXT, step=st.integers(1, 40), budget=st.integers(20, 120), budget_bytes=st.sampled_from([0, 60]),
       place=st.integers(0, 10 ** 6))
def test_pages_from_any_place_are_the_text_from_there(tmp_path, text, step, budget, budget_bytes, place):
    old_step = op.TEXT_INDEX_STEP
    op.TEXT_INDEX_STEP = step  # marks every few bytes: pages start and end around them
    try:
        spill, stem, files = saved(tmp_path, text)
    finally:
        op.TEXT_INDEX_STEP = old_step
    lines = text.split("\n")
    line = place % len(lines) + 1
    column = place // len(lines) % (len(lines[line - 1]) + 1) + 1
    start = sum(len(row) + 1 for row in lines[:line - 1]) + column - 1
    pages, where = [], (line, column)
    while where:
        page, hint = spill.read(stem, line=where[0], column=where[1], budget_chars=budget, budget_bytes=budget_bytes)
        assert page and len(json.dumps(page, ensure_ascii=False)) - 2 <= budget or text[start:] == ""
        pages.append(page)
        found = re.search(r"line=(\d+)(?:, column=(\d+))?", hint)
        where = (int(found.group(1)), int(found.group(2) or 1)) if found else None
    assert "".join(pages) == text[start:]
    with open(files.txt_path, "rb") as handle:
        assert handle.read() == text.encode("utf-8")


def test_a_lone_surrogate_is_written_as_u_fffd_and_read_as_one_character(tmp_path):
    spill, stem, files = saved(tmp_path, "a\ud800b\n\udfffc")
    with open(files.txt_path, "rb") as handle:
        assert handle.read() == "a\ufffdb\n\ufffdc".encode("utf-8")  # valid UTF-8 for every file tool
    assert spill.read(stem, line=1, column=3) == ("b\n\ufffdc", "[end of the text]")


# -- the outline of a JSON text, first in its preview -------------------------------

def outline_preview(relay, text=None, **big):
    """Spill a tool result whose text is ``text`` (or the fixture's ``big`` with ``big``'s arguments):
    (its preview text, the part before the text's head, the spill's meta)."""
    reply = relay.call("big", big) if big else relay.call("raw", {"line": json.dumps(
        {"jsonrpc": "2.0", "id": "__ID__", "result": {"content": [{"type": "text", "text": text}]}},
        ensure_ascii=False).replace('"__ID__"', "__ID__")})
    preview = reply["result"]["content"][0]["text"]
    return preview, preview_body(preview).split("\n\n")[0], reply["result"]["_meta"]["ocx-proxy/spill"]


def start(value):
    """What an outline shows of ``value``: the start of its compact JSON."""
    text = compact(value)
    return text[:op.OUTLINE_SNIPPET] + ("\u2026" if len(text) > op.OUTLINE_SNIPPET else "")


NOTE = '[read_spilled_output also takes path="%s" (a JSONPath subset) and outline=true (one node described)]'


def test_a_json_object_result_previews_its_outline_first(relay_factory):
    relay = relay_factory()
    relay.initialize()
    relay.request("tools/list")
    data = {"items": [{"id": n, "name": "item %d" % n, "price": 1.5} for n in range(2000)], "total": 2000,
            "ok": True, "note": None, "cursor": "abc"}
    preview, outline, meta = outline_preview(relay, json.dumps(data).replace("1.5", "1.50"))
    pretty = open(meta["txt"], encoding="utf-8").read()
    items = pretty[pretty.index("["):pretty.index("],\n") + 1]
    assert outline.split("\n") == [
        "$: object, 5 keys, %d bytes" % os.path.getsize(meta["txt"]),
        '  .items: array, 2000 items, %d bytes: [{"id":0,"name":"item 0","price":1.50},{"id":1,"name":"item \u2026'
        % len(items),
        "  .total: number 2000",
        "  .ok: true",
        "  .note: null",
        '  .cursor: string, 3 chars: "abc"',
        NOTE % "$.items[0:10]",
    ]
    assert preview_body(preview).split("\n\n")[1].startswith('{\n  "items": [\n    {\n      "id": 0,')
    # The reader's outline of the whole says the same of it.
    spill_id = os.path.basename(meta["txt"])[:-4]
    answer = relay.call("read_spilled_output", {"id": spill_id, "outline": True}, timeout=30)["result"]
    assert answer["content"][0]["text"].split("\n")[0] == outline.split("\n")[0]
    assert relay.close() == 0


def test_a_json_array_result_shows_its_length_and_first_items(relay_factory):
    relay = relay_factory()
    relay.initialize()
    relay.request("tools/list")
    _, outline, meta = outline_preview(relay, head="[", unit='{"k": "v", "n": [1, 2]}', sep=", ", tail="]", n=3000)
    pretty = open(meta["txt"], encoding="utf-8").read()
    item = pretty.index("\n  }") + 4 - pretty.index("{")
    assert outline.split("\n") == [
        "$: array, 3000 items, %d bytes" % os.path.getsize(meta["txt"])] + [
        '  [%d]: object, 2 keys, %d bytes: {"k":"v","n":[1,2]}' % (n, item) for n in range(3)] + [
        "  \u2026 2997 more items", NOTE % "$[0:10]"]
    assert relay.close() == 0


def test_nested_values_are_outlined_one_level_deep_with_their_start(relay_factory):
    relay = relay_factory()
    relay.initialize()
    relay.request("tools/list")
    data = {"a b": {"deep": {"deeper": [[1, 2], [3]]}}, "rows": [[0.1] * 3] * 2000, "e": [], "o": {}}
    _, outline, _ = outline_preview(relay, json.dumps(data))
    lines = outline.split("\n")
    assert lines[1].startswith('  ["a b"]: object, 1 keys, ') and lines[1].endswith(
        ': {"deep":{"deeper":[[1,2],[3]]}}')
    assert lines[2].startswith("  .rows: array, 2000 items, ") and lines[2].endswith(": " + start(data["rows"]))
    assert lines[3:] == ["  .e: array, 0 items, 2 bytes: []", "  .o: object, 0 keys, 2 bytes: {}",
                         NOTE % '$["a b"]']
    assert relay.close() == 0


def test_cjk_keys_are_outlined_as_paths_and_fit_a_byte_budget(relay_factory):
    relay = relay_factory(["--client", "codex"])
    relay.initialize()
    relay.request("tools/list")
    data = {"名前": ["値%d" % n for n in range(3000)], "説明 文": "説明" * 100}
    _, outline, meta = outline_preview(relay, json.dumps(data, ensure_ascii=False))
    pretty = open(meta["txt"], encoding="utf-8").read()
    names = pretty[pretty.index("["):pretty.index("],") + 1].encode()
    assert outline.split("\n")[1:] == [
        "  .名前: array, 3000 items, %d bytes: %s" % (len(names), start(data["名前"])),
        '  ["説明 文"]: string, 200 chars: "%s\u2026' % ("説明" * 30)[:59],
        NOTE % "$.名前[0:10]"]
    line = relay.raw_lines[-1]
    assert len(line) <= 10001 and len(line.decode()) <= 10001  # codex: 10,000 characters and bytes
    assert relay.close() == 0


def test_a_huge_json_text_is_outlined_from_its_start_only(relay_factory):
    relay = relay_factory()
    relay.initialize()
    relay.request("tools/list")
    unit, n = '{"id": 12345, "name": "a name", "tags": ["x", "y"]}', 600000   # 30 MB
    big = dict(head='{"items": [', unit=unit, sep=", ", tail='], "total": 600000}', n=n)
    started = time.monotonic()
    preview, outline, meta = outline_preview(relay, **big)
    assert time.monotonic() - started < 60
    text = big["head"] + big["sep"].join([unit] * n) + big["tail"]
    # Counts from the head read: the items that start within it (each 53 characters from character 11).
    started = (op.OUTLINE_SCAN_CHARS - 11 - 1) // 53 + 1
    assert outline.split("\n") == [
        "$: object, at least 1 keys, %d characters" % len(text),
        "  .items: array, at least %d items, over %d characters: %s" % (
            started, op.OUTLINE_SCAN_CHARS - 10, start([json.loads(unit)] * 2)),
        "  \u2026 (the outline reads the first %d characters only)" % op.OUTLINE_SCAN_CHARS,
        NOTE % "$.items[0:10]"]
    assert len(relay.raw_lines[-1]) <= op.MAX_RESPONSE_CHARS + 1
    # The files are unchanged: the exact line, and the text as it came (too big to pretty-print).
    with open(meta["json"], "rb") as handle:
        line = handle.read()
    assert json.loads(line)["result"]["content"][0]["text"] == text
    with open(meta["txt"], encoding="utf-8") as handle:
        assert handle.read() == text
    assert relay.close() == 0


def test_a_huge_string_or_array_is_outlined_with_a_length_from_the_head(relay_factory):
    """Once "string, over 262144 characters" did not say how long; the head read gives a floor."""
    relay = relay_factory()
    relay.initialize()
    relay.request("tools/list")
    text = json.dumps({"s": 'a"' * 150000, "t": 1})   # pretty-printed: the string's characters from the 11th
    _, outline, meta = outline_preview(relay, text)
    pairs, rest = divmod(op.OUTLINE_SCAN_CHARS - 10, 3)   # a\" is 3 characters; an escape is never cut
    assert outline.split("\n")[:2] == [
        "$: object, at least 1 keys, %d characters" % os.path.getsize(meta["txt"]),
        '  .s: string, at least %d chars: %s' % (2 * pairs + (rest > 0), start('a"' * 30))]
    assert relay.close() == 0
    rows = json.dumps([[["x" * 40]] * 8000, [[0]]])   # items 46 characters apart from character 2
    assert op.JsonOutline.of(rows).lines[:2] == [
        "$: array, at least 1 items, %d characters" % len(rows),
        "  [0]: array, at least %d items, over %d characters: %s" % (
            (op.OUTLINE_SCAN_CHARS - 3) // 46 + 1, op.OUTLINE_SCAN_CHARS - 1, start([["x" * 40]] * 2))]


@pytest.mark.parametrize("text", [
    "row %d of a table\n" * 2000,
    "{" + "not json, only braces " * 1000 + "}",
    '{"a": 1}' + " trailing" * 2000 + " {}",
    "[" + "1, " * 5000 + "NaN]",
], ids=["rows", "braces", "trailing", "nan"])   # short ids: pytest puts the id in an environment variable
def test_a_text_that_is_not_json_keeps_the_preview_it_had(relay_factory, text):
    relay = relay_factory()
    relay.initialize()
    relay.request("tools/list")
    preview, first, _ = outline_preview(relay, text)
    assert text.startswith(first.split("\n")[0]) and "$: " not in preview and "JSONPath" not in preview
    assert relay.close() == 0


@pytest.mark.parametrize("client_name", sorted(
    name for entry in op.CLIENTS.values() if entry.profile for name in entry.profile.client_names))
def test_an_outlined_preview_fits_every_client_budget(relay_factory, client_name):
    relay = relay_factory()
    relay.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": client_name, "version": "1"}}, msg_id=1)
    relay.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    relay.request("tools/list")
    profile = op.client_profile(op.client_for_info_name(client_name))
    keys = {"キー%d" % k: [{"名前": "値%d" % n} for n in range(400)] for k in range(60)}
    for text in (json.dumps(keys, ensure_ascii=False), json.dumps([keys] * 3, ensure_ascii=False)):
        _, outline, _ = outline_preview(relay, text)
        line = relay.raw_lines[-1].rstrip(b"\n")
        assert outline.startswith("$: ") and ("\n  .キー0: " in outline or "\n  [0]: " in outline), outline
        assert len(line.decode()) <= profile.budget_chars
        assert not profile.budget_bytes or len(line) <= profile.budget_bytes
    assert relay.close() == 0


json_documents = st.one_of(st.lists(json_values, max_size=8), st.dictionaries(st.text(max_size=10), json_values,
                                                                               max_size=8))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(json_documents, st.sampled_from(sorted(n for n, e in op.CLIENTS.items() if e.profile)),
       st.integers(0, 30000), st.booleans())
def test_any_json_value_previews_within_the_budget_as_valid_json_rpc(tmp_path, value, client, pad, indent):
    budget = op.Budget.for_client(op.client_profile(client), options())
    padded = {"value": value, "pad": "数" * pad} if isinstance(value, dict) else value + ["p" * pad]
    text = json.dumps(padded, ensure_ascii=False, indent=2 if indent else None)
    msg = {"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": text}]}}
    line = spill_line(msg)
    spill = op.Spill(str(tmp_path / "out"), budget)
    spill.reader_name = op.READER_TOOL_NAME
    out, files = spill.rewrite(line, msg, "tools/call", None, "2025-06-18")
    assert budget.fits(len(out), len(out.encode("utf-8")))
    new = json.loads(out)
    assert new["jsonrpc"] == "2.0" and new["id"] == 3 and new["result"]["content"][0]["type"] == "text"
    assert op.JsonOutline.of(text) is not None
    with open(files.json_path, "rb") as handle:
        assert handle.read() == line


@settings(max_examples=300, deadline=None)
@given(json_documents, st.booleans(), st.data())
def test_a_head_count_is_a_floor_and_exact_on_the_whole(value, indent, data):
    """_head_count of a container cut anywhere never says more members than it has, and says them all when
    only its closing bracket is cut; any text at all gives a number, never an exception."""
    text = json.dumps(value, indent=2 if indent else None)
    stop = data.draw(st.integers(1, len(text) - 1))   # the container does not end before stop
    assert 0 <= op._head_count(text, 0, stop) <= len(value)
    assert op._head_count(text, 0, len(text) - 1) == len(value)


@given(st.text(max_size=60))
def test_a_head_count_or_length_of_any_text_is_a_number(text):
    assert op._head_count("[" + text, 0, len(text) + 1) >= 0
    assert op._head_chars('"' + text, 0, len(text) + 1) >= 0


@pytest.mark.parametrize("longer", [0, 60, 120])
def test_a_tight_budget_shortens_the_prompt_text_before_its_description(relay_factory, tmp_path, longer):
    """Through --max-response-chars 1500 --preview-chars 600 a prompt lost its description (what the
    client shows the user) and _meta once --output-dir was ~60 characters longer, its message kept whole."""
    out = tmp_path / ("d" * longer) / "spill"
    relay = relay_factory(["--output-dir", str(out), "--max-response-chars", "1500", "--preview-chars", "600"])
    relay.initialize()
    reply, _ = relay.request("prompts/get", {"name": "demo-template", "arguments": {"topic": "retail"}})
    line = relay.raw_lines[-1].rstrip(b"\n").decode()
    assert len(line) <= 1500, len(line)
    assert reply["result"]["description"] == "Demo template for retail", line
    text = reply["result"]["messages"][0]["content"]["text"]
    assert str(out) in text and text.count("[ocx-proxy: ") == 2, text
    assert relay.close() == 0
