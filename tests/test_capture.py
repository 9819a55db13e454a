"""Capture section: the capture-only MCP bridge, driven as a real subprocess over pipes."""
import io
import json
import os
import random
import re
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import FIXTURES, PROXY, PROXY_SCRIPT, RelayProcess, assert_one_line_error, run_proxy
import ocx_proxy as ox

CODEX = os.path.join(FIXTURES, "codex_request.json")
TIMEOUT = 10


def capture_client(*args, **popen):
    return RelayProcess(command=[sys.executable, PROXY, "capture"] + list(args), **popen)


@pytest.fixture
def client_factory():
    """Start ``capture ARGS`` under the MCP test client (``popen``: more Popen keywords); all killed at the end."""
    clients = []

    def make(*args, **popen):
        client = capture_client(*args, **popen)
        clients.append(client)
        return client

    yield make
    for client in clients:
        if client.proc.poll() is None:
            client.proc.kill()
            client.proc.wait(timeout=TIMEOUT)


def read_records(path):
    with open(path, encoding="utf-8") as handle:   # not the locale's code page (cp1252 on Windows)
        return [json.loads(line) for line in handle]


def write_catalog(tmp_path, tools, name="catalog.json"):
    path = tmp_path / name
    path.write_text(json.dumps(tools))
    return str(path)


# -- serving ----------------------------------------------------------------------


def test_initialize_advertises_only_tools(client_factory, tmp_path):
    client = client_factory("--catalog", CODEX, "--out", str(tmp_path / "calls"))
    reply = client.initialize()["result"]
    assert reply["protocolVersion"] == "2025-06-18"
    assert reply["capabilities"] == {"tools": {"listChanged": False}}
    assert reply["serverInfo"]["name"] == "opencodex"
    assert client.request("ping")[0]["result"] == {}
    assert client.close() == 0


def test_unknown_protocol_version_gets_the_latest(client_factory, tmp_path):
    client = client_factory("--catalog", CODEX, "--out", str(tmp_path / "calls"))
    reply, _ = client.request("initialize", {"protocolVersion": "1999-01-01"})
    assert reply["result"]["protocolVersion"] == "2025-11-25"
    client.close()


def test_list_advertises_exactly_the_catalog(client_factory, tmp_path):
    client = client_factory("--catalog", CODEX, "--out", str(tmp_path / "calls"))
    client.initialize()
    tools = client.request("tools/list")[0]["result"]["tools"]
    assert [tool["name"] for tool in tools] == ["exec_command", "apply_patch", "mcp__fs__read_file",
                                                "mcp__fs__write_file", "update_plan"]
    assert tools[0]["inputSchema"]["required"] == ["cmd"]
    assert tools[0]["description"] == "Runs a command in a PTY."
    assert client.close() == 0


def test_call_is_captured_and_left_pending(client_factory, tmp_path):
    out = tmp_path / "calls.ndjson"
    marker = tmp_path / "executed"
    client = client_factory("--catalog", CODEX, "--out", str(out))
    client.initialize()
    client.send_call("exec_command", {"cmd": "touch %s" % marker, "workdir": "/"})
    assert client.no_reply()
    # the line is flushed at once, while the session is still open
    records = read_records(out)
    assert records == [{"type": "function_call", "call_id": records[0]["call_id"],
                        "name": "exec_command",
                        "arguments": json.dumps({"cmd": "touch %s" % marker, "workdir": "/"},
                                                separators=(",", ":"))}]
    assert re.match(r"^call_[0-9a-f]{24}$", records[0]["call_id"])
    assert client.close() == 0
    assert not marker.exists()  # nothing is ever executed


def test_deferred_reply(client_factory, tmp_path):
    out = tmp_path / "calls.ndjson"
    client = client_factory("--catalog", CODEX, "--out", str(out), "--reply", "deferred")
    client.initialize()
    client.send_call("mcp__fs__read_file", {"path": "a.txt"})
    reply = client.recv()["result"]
    call_id = read_records(out)[0]["call_id"]
    assert reply["isError"] is False
    assert call_id in reply["content"][0]["text"]
    assert client.close() == 0


def test_freeform_tool_becomes_custom_tool_call(client_factory, tmp_path):
    out = tmp_path / "calls.ndjson"
    client = client_factory("--catalog", CODEX, "--out", str(out))
    client.initialize()
    client.send_call("apply_patch", {"input": "*** Begin Patch\n*** End Patch"})
    client.no_reply()
    assert client.close() == 0
    record = read_records(out)[0]
    assert record["type"] == "custom_tool_call"
    assert record["name"] == "apply_patch" and record["input"].startswith("*** Begin Patch")


def test_missing_arguments_are_an_empty_object(client_factory, tmp_path):
    out = tmp_path / "calls.ndjson"
    client = client_factory("--catalog", CODEX, "--out", str(out))
    client.initialize()
    client.send_call("update_plan")
    client.no_reply()
    assert client.close() == 0
    assert read_records(out)[0]["arguments"] == "{}"


@pytest.mark.skipif(os.name == "nt", reason="needs Popen(pass_fds=...) to hand the child a descriptor by number; "
                    "Windows has no pass_fds (CRT descriptors are not inherited by number)")
def test_output_to_an_inherited_descriptor(client_factory, tmp_path):
    read_fd, write_fd = os.pipe()
    try:
        client = client_factory("--catalog", CODEX, "--out", "fd:%d" % write_fd,
                                pass_fds=(write_fd,))
        os.close(write_fd)
        client.initialize()
        client.send_call("exec_command", {"cmd": "ls"})
        client.no_reply()
        assert client.close() == 0
        with os.fdopen(read_fd, "rb") as handle:
            record = json.loads(handle.readline())
            read_fd = None
        assert record["name"] == "exec_command"
    finally:
        if read_fd is not None:
            os.close(read_fd)


def test_other_methods(client_factory, tmp_path):
    client = client_factory("--catalog", CODEX, "--out", str(tmp_path / "calls"))
    # tools/list before initialize is refused but is not a capture failure
    assert client.request("tools/list")[0]["error"]["code"] == ox.INVALID_REQUEST
    client.initialize()
    assert client.request("resources/list")[0]["error"]["code"] == ox.METHOD_NOT_FOUND
    client.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                 "params": {"requestId": 7}})
    assert client.no_reply()
    client.send([{"jsonrpc": "2.0", "id": "a", "method": "ping"},
                 {"jsonrpc": "2.0", "method": "notifications/initialized"}])
    assert client.recv() == [{"jsonrpc": "2.0", "id": "a", "result": {}}]
    assert client.close() == 0


# -- aliases --------------------------------------------------------------------------

LONG = "mcp__filesystem_server__read_multiple_files_with_metadata_and_more"
ODD = "weather.get forecast/v2"
UNICODE = u"\u8bfb\u53d6\u6587\u4ef6"


def test_alias_rules():
    aliases = ox.capture_aliases(["ok_name-1", LONG, ODD, UNICODE])
    assert aliases["ok_name-1"] == "ok_name-1"
    for name in (LONG, ODD, UNICODE):
        alias = aliases[name]
        assert re.match(r"^[A-Za-z0-9_-]{1,40}$", alias), alias
        assert re.match(r"^.*_[0-9a-f]{16}$", alias)
        assert len("mcp__opencodex__" + alias) <= 64
    assert aliases[ODD].startswith("weather_get_forecast_v2_")
    assert len(set(aliases.values())) == 4


def test_aliases_do_not_depend_on_catalog_order():
    names = [LONG, ODD, UNICODE, "a", "b" * 41, "c" * 60, "x.y", "x_y"]
    expected = ox.capture_aliases(names)
    shuffler = random.Random(7)
    for _ in range(10):
        shuffled = names[:]
        shuffler.shuffle(shuffled)
        assert ox.capture_aliases(shuffled) == expected


def test_alias_collision_with_a_direct_name():
    hashed = ox.capture_aliases([LONG])[LONG]
    # a tool literally named like the hashed alias keeps its name; the long one moves
    aliases = ox.capture_aliases([LONG, hashed])
    assert aliases[hashed] == hashed
    assert aliases[LONG] != hashed
    assert re.match(r"^[A-Za-z0-9_-]{1,40}$", aliases[LONG])


def test_aliased_calls_map_back_to_wire_names(client_factory, tmp_path):
    hashed = ox.capture_aliases([LONG])[LONG]
    catalog = write_catalog(tmp_path, [{"name": LONG}, {"name": ODD}, {"name": UNICODE},
                                       {"name": hashed}])
    out = tmp_path / "calls.ndjson"
    client = client_factory("--catalog", catalog, "--out", str(out))
    client.initialize()
    listed = client.request("tools/list")[0]["result"]["tools"]
    by_title = {tool.get("title", tool["name"]): tool["name"] for tool in listed}
    assert by_title[hashed] == hashed and by_title[LONG] != hashed
    for original in (LONG, ODD, UNICODE, hashed):
        client.send_call(by_title[original], {"n": 1})
    client.no_reply()
    assert client.close() == 0
    assert [record["name"] for record in read_records(out)] == [LONG, ODD, UNICODE, hashed]


def test_wire_name_is_not_a_valid_call_name_when_aliased(client_factory, tmp_path):
    catalog = write_catalog(tmp_path, [{"name": ODD}])
    client = client_factory("--catalog", catalog, "--out", str(tmp_path / "calls"))
    client.initialize()
    client.send_call(ODD, {})
    assert client.recv()["error"]["code"] == ox.INVALID_PARAMS
    assert client.close() == 3


# -- pagination --------------------------------------------------------------------------


def test_pagination(client_factory, tmp_path):
    catalog = write_catalog(tmp_path, [{"name": "t%03d" % index} for index in range(120)])
    client = client_factory("--catalog", catalog, "--out", str(tmp_path / "calls"))
    client.initialize()
    seen = []
    cursor = None
    pages = 0
    while True:
        page = client.request("tools/list", {"cursor": cursor} if cursor else {})[0]["result"]
        pages += 1
        seen.extend(tool["name"] for tool in page["tools"])
        cursor = page.get("nextCursor")
        if cursor is None:
            break
    assert pages == 3  # 50 + 50 + 20 at the default page size
    assert seen == ["t%03d" % index for index in range(120)]
    assert client.request("tools/list", {"cursor": "bogus"})[0]["error"]["code"] == ox.INVALID_PARAMS
    assert client.request("tools/list", {"cursor": "999"})[0]["error"]["code"] == ox.INVALID_PARAMS
    for bad in ("²", "9" * 5000, ["50"], 50):  # digits int() refuses, and values that are no cursor
        assert client.request("tools/list", {"cursor": bad})[0]["error"]["code"] == ox.INVALID_PARAMS
    assert client.close() == 0


def test_page_size_option(client_factory, tmp_path):
    catalog = write_catalog(tmp_path, [{"name": "t%d" % index} for index in range(5)])
    client = client_factory("--catalog", catalog, "--out", str(tmp_path / "c"), "--page-size", "2")
    client.initialize()
    page = client.request("tools/list")[0]["result"]
    assert len(page["tools"]) == 2 and page["nextCursor"]
    client.close()


# -- fail closed --------------------------------------------------------------------------


def refused(client, out, reason, code):
    reply = client.recv()
    assert reply["error"]["code"] == code
    assert reply["error"]["data"]["reason"] == reason
    assert client.close() == 3
    records = read_records(out)
    assert records[-1]["type"] == "capture_error" and records[-1]["reason"] == reason
    return records


def test_call_before_initialize(client_factory, tmp_path):
    out = tmp_path / "calls.ndjson"
    client = client_factory("--catalog", CODEX, "--out", str(out))
    client.send_call("exec_command", {"cmd": "ls"})
    records = refused(client, out, "not_initialized", ox.INVALID_REQUEST)
    assert len(records) == 1  # and nothing was captured


def test_unknown_tool(client_factory, tmp_path):
    out = tmp_path / "calls.ndjson"
    client = client_factory("--catalog", CODEX, "--out", str(out))
    client.initialize()
    client.send_call("web_search", {"q": "x"})  # dropped hosted tool: not advertised
    records = refused(client, out, "unknown_tool", ox.INVALID_PARAMS)
    assert records[0]["name"] == "web_search"


@pytest.mark.parametrize("arguments", [[1, 2], "cmd=ls", 5])
def test_arguments_not_an_object(client_factory, tmp_path, arguments):
    out = tmp_path / "calls.ndjson"
    client = client_factory("--catalog", CODEX, "--out", str(out))
    client.initialize()
    client.send_call("exec_command", arguments)
    refused(client, out, "bad_arguments", ox.INVALID_PARAMS)


def test_arguments_over_the_limit(client_factory, tmp_path):
    out = tmp_path / "calls.ndjson"
    client = client_factory("--catalog", CODEX, "--out", str(out), "--max-argument-bytes", "100")
    client.initialize()
    client.send_call("exec_command", {"cmd": "x" * 80})   # {"cmd":"…80…"} = 90 bytes: accepted
    client.no_reply()
    client.send_call("exec_command", {"cmd": "x" * 100})  # 110 bytes: refused
    records = refused(client, out, "arguments_too_large", ox.INVALID_PARAMS)
    assert [record["type"] for record in records] == ["function_call", "capture_error"]


def test_too_many_calls(client_factory, tmp_path):
    out = tmp_path / "calls.ndjson"
    client = client_factory("--catalog", CODEX, "--out", str(out), "--max-calls", "2")
    client.initialize()
    client.send_call("exec_command", {"cmd": "a"})
    client.send_call("exec_command", {"cmd": "b"})
    client.send_call("exec_command", {"cmd": "c"})
    records = refused(client, out, "too_many_calls", ox.CAPTURE_REFUSED)
    assert [record["type"] for record in records] == ["function_call", "function_call",
                                                      "capture_error"]


def test_freeform_call_with_wrong_arguments(client_factory, tmp_path):
    out = tmp_path / "calls.ndjson"
    client = client_factory("--catalog", CODEX, "--out", str(out))
    client.initialize()
    client.send_call("apply_patch", {"patch": "x"})
    refused(client, out, "bad_arguments", ox.INVALID_PARAMS)


def test_garbage_line_is_refused(client_factory, tmp_path):
    out = tmp_path / "calls.ndjson"
    client = client_factory("--catalog", CODEX, "--out", str(out))
    client.initialize()
    client.send_raw(b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":\n')
    refused(client, out, "parse_error", ox.PARSE_ERROR)


def test_oversized_line_is_refused_and_the_session_goes_on(client_factory, tmp_path):
    out = tmp_path / "calls.ndjson"
    client = client_factory("--catalog", CODEX, "--out", str(out))
    client.initialize()
    huge = {"jsonrpc": "2.0", "id": 5, "method": "tools/call",
            "params": {"name": "exec_command", "arguments": {"cmd": "x" * (5 * 1024 * 1024)}}}
    client.send(huge)
    reply = client.recv()
    assert reply["id"] is None and reply["error"]["data"]["reason"] == "line_too_large"
    assert client.request("ping")[0]["result"] == {}  # the rest of the line was skipped, not parsed
    assert client.close() == 3
    assert [record["reason"] for record in read_records(out)] == ["line_too_large"]


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity", "1e999", "-1e999"])
def test_non_finite_arguments_are_refused_never_recorded(client_factory, tmp_path, token):
    out = tmp_path / "calls.ndjson"
    client = client_factory("--catalog", CODEX, "--out", str(out))
    client.initialize()
    client.send_raw(b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"exec_command",'
                b'"arguments":{"cmd":"ls","n":%s}}}\n' % token.encode())
    records = refused(client, out, "parse_error", ox.PARSE_ERROR)
    assert len(records) == 1 and token.lstrip("-") in records[0]["message"]


def test_call_as_notification_is_refused(client_factory, tmp_path):
    out = tmp_path / "calls.ndjson"
    client = client_factory("--catalog", CODEX, "--out", str(out))
    client.initialize()
    client.send({"jsonrpc": "2.0", "method": "tools/call",
                 "params": {"name": "exec_command", "arguments": {}}})
    refused(client, out, "invalid_request", ox.INVALID_REQUEST)


# -- property: every call ends as a captured line or a capture_error -------------------

CALL_NAMES = st.sampled_from(["exec_command", "apply_patch", "update_plan", "mcp__fs__read_file",
                              "web_search", "", "EXEC_COMMAND", "exec_command "]) | st.text(max_size=12)
ARGUMENTS = st.none() | st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=30),
                                        max_size=3) | st.integers() | st.text(max_size=5)


def check_session_outcome(calls, records, limit):
    accepted = 0
    assert len(records) == len(calls)  # one line per call, no more, no less
    for (name, arguments), record in zip(calls, records):
        assert record["type"] in ("function_call", "custom_tool_call", "capture_error")
        if record["type"] == "capture_error":
            continue
        accepted += 1
        assert record["name"] == name
        assert name in ("exec_command", "apply_patch", "update_plan", "mcp__fs__read_file")
        assert isinstance(arguments, dict) or arguments is None
    assert accepted <= limit


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(CALL_NAMES, ARGUMENTS), max_size=6))
def test_random_calls_in_process(calls):
    tools, _ = ox.load_capture_catalog(CODEX)
    out = io.BytesIO()
    session = ox.CaptureSession(tools, out, max_calls=4, max_argument_bytes=64)
    session.handle({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}})
    for index, (name, arguments) in enumerate(calls):
        params = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        session.handle_line(json.dumps({"jsonrpc": "2.0", "id": index + 1, "method": "tools/call",
                                        "params": params}).encode())
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    check_session_outcome(calls, records, 4)
    assert session.failed == any(r["type"] == "capture_error" for r in records)


# Numbers include NaN, the infinities and integers past a double; text includes
# lone surrogates: json.dumps writes them as a hostile client might.
HOSTILE_VALUES = st.recursive(
    st.none() | st.floats() | st.integers(-(10 ** 400), 10 ** 400)
    | st.text(st.characters(blacklist_categories=()), max_size=5),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3),
    max_leaves=8)
HOSTILE_LINES = st.builds(
    lambda arguments: json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                                  "params": {"name": "exec_command", "arguments": {"cmd": arguments}}}
                                 ).encode("utf-8", "surrogatepass"),
    HOSTILE_VALUES) | st.binary(max_size=60)


def strict_json(data):
    """Parse what we wrote as any JSON reader would: UTF-8, no NaN or Infinity."""
    def refuse(name):
        raise AssertionError("%s written as JSON" % name)
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    return json.loads(text, parse_constant=refuse)


@settings(max_examples=150, deadline=None)
@given(st.lists(HOSTILE_LINES, max_size=4))
def test_random_lines_in_process_only_ever_write_strict_json(lines):
    tools, _ = ox.load_capture_catalog(CODEX)
    out = io.BytesIO()
    session = ox.CaptureSession(tools, out, max_calls=8)
    session.handle({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}})
    for line in lines:
        for reply in session.handle_line(line):
            strict_json(ox.encode_message(reply))
    for record in out.getvalue().splitlines():
        record = strict_json(record)
        if record["type"] == "function_call":
            strict_json(record["arguments"])


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(CALL_NAMES, ARGUMENTS), min_size=1, max_size=5))
def test_random_calls_subprocess(tmp_path, calls):
    out = tmp_path / ("calls-%s.ndjson" % os.urandom(6).hex())  # hypothesis reseeds random
    client = capture_client("--catalog", CODEX, "--out", str(out), "--max-calls", "3",
                       "--reply", "deferred")
    try:
        client.initialize()
        for name, arguments in calls:
            client.send_call(name, arguments)
            reply = client.recv()
            assert ("result" in reply) != ("error" in reply)
        status = client.close()
    finally:
        if client.proc.poll() is None:
            client.proc.kill()
    records = read_records(out)
    check_session_outcome(calls, records, 3)
    assert status == (3 if any(r["type"] == "capture_error" for r in records) else 0)


# -- catalog bounds and usage -------------------------------------------------------------


def test_catalog_must_be_a_regular_file(tmp_path):
    text = assert_one_line_error(run_proxy("capture", "--catalog", str(tmp_path), "--out",
                                           str(tmp_path / "o")), 1)
    # Windows refuses to open a directory as a file at all: the open fails before the regular-file check
    assert "not a regular file" in text or (os.name == "nt" and "Permission denied" in text)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_catalog_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(str(fifo))
    text = assert_one_line_error(run_proxy("capture", "--catalog", str(fifo), "--out",
                                           str(tmp_path / "o")), 1)
    assert "not a regular file" in text


def test_catalog_size_limit(tmp_path):
    path = tmp_path / "big.json"
    path.write_text(json.dumps([{"name": "a", "description": "x" * (2 * 1024 * 1024)}]))
    text = assert_one_line_error(run_proxy("capture", "--catalog", str(path), "--out",
                                           str(tmp_path / "o")), 1)
    assert "catalog limit" in text and "2097152" in text


def test_catalog_tool_count_limit(tmp_path):
    catalog = write_catalog(tmp_path, [{"name": "t%d" % index} for index in range(129)])
    text = assert_one_line_error(run_proxy("capture", "--catalog", catalog, "--out",
                                           str(tmp_path / "o")), 1)
    assert "129 tools" in text and "128" in text
    # a tool_choice that narrows the catalog brings it under the limit
    result = run_proxy("capture", "--catalog", catalog, "--tool-choice",
                       '{"type":"function","name":"t5"}', "--print-allowed-tools")
    assert result.stdout == b"mcp__opencodex__t5\n"


def nested_schema(levels):
    schema = {"type": "string"}
    for _ in range(levels - 1):
        schema = {"type": "object", "properties": {"x": schema}}
    return schema


def schema_depth(node):
    if isinstance(node, dict):
        return 1 + max([schema_depth(value) for value in node.values()] + [0])
    if isinstance(node, list):
        return 1 + max([schema_depth(value) for value in node] + [0])
    return 0


def test_catalog_schema_depth_limit(tmp_path):
    ok_schema = nested_schema(16)
    assert schema_depth(ok_schema) == 31
    ok = write_catalog(tmp_path, [{"name": "a", "parameters": ok_schema}], "ok.json")
    assert run_proxy("capture", "--catalog", ok, "--print-allowed-tools").returncode == 0
    deep_schema = nested_schema(17)
    assert schema_depth(deep_schema) == 33
    deep = write_catalog(tmp_path, [{"name": "a", "parameters": deep_schema}], "deep.json")
    text = assert_one_line_error(run_proxy("capture", "--catalog", deep, "--out",
                                           str(tmp_path / "o")), 1)
    assert "deeper than 32" in text


def test_catalog_external_ref_is_refused(tmp_path):
    local = {"type": "object", "properties": {"a": {"$ref": "#/$defs/a"}},
             "$defs": {"a": {"type": "string"}}}
    ok = write_catalog(tmp_path, [{"name": "a", "parameters": local}], "ok.json")
    assert run_proxy("capture", "--catalog", ok, "--print-allowed-tools").returncode == 0
    remote = {"type": "object", "properties": {"a": {"$ref": "https://example.invalid/s.json"}}}
    bad = write_catalog(tmp_path, [{"name": "a", "parameters": remote}], "bad.json")
    text = assert_one_line_error(run_proxy("capture", "--catalog", bad, "--out",
                                           str(tmp_path / "o")), 1)
    assert "external $ref" in text


@pytest.mark.parametrize("content", [b"{not json", b'{"model": "x"}', b'[{"type": "function"}]'])
def test_catalog_bad_content(tmp_path, content):
    path = tmp_path / "c.json"
    path.write_bytes(content)
    assert_one_line_error(run_proxy("capture", "--catalog", str(path), "--out",
                                    str(tmp_path / "o")), 1)


NON_FINITE_CATALOGS = [
    b'[{"name":"a","parameters":{"type":"object","properties":{"n":{"maximum":1e999}}}}]',
    b'[{"name":"a","parameters":{"type":"object","properties":{"n":{"minimum":-1e999}}}}]',
    b'[{"name":"a","parameters":{"type":"object","properties":{"n":{"default":NaN}}}}]',
    b'[{"name":"a","parameters":{"type":"object","properties":{"n":{"enum":[Infinity]}}}}]',
    b'{"tools":[{"name":"a"}],"temperature":-Infinity}',  # anywhere in the document
    b'[{"name":"a","parameters":{"type":"object","maximum":1%s}}]' % (b"0" * 400),
    b'[{"name":"a","description":"\\ud800"}]',  # a lone surrogate is not Unicode text
]


@pytest.mark.parametrize("content", NON_FINITE_CATALOGS)
def test_catalog_with_non_finite_numbers_is_refused(tmp_path, content):
    # Before: the server started and sent `Infinity`/`NaN` (invalid JSON) in tools/list.
    path = tmp_path / "c.json"
    path.write_bytes(content)
    result = subprocess.run([sys.executable, PROXY, "capture", "--catalog", str(path), "--out",
                             str(tmp_path / "o")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            input=b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}\n'
                                  b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n', timeout=30)
    text = assert_one_line_error(result, 1)
    assert result.stdout == b"" and "catalog" in text and str(path) in text


@pytest.mark.parametrize("content", [
    b"[" * 100000 + b"]" * 100000,
    b'{"tools":[{"name":"a"}],"metadata":' + b"[" * 500 + b"]" * 500 + b"}",  # anywhere in the document
], ids=["100000-levels", "500-levels-aside"])
def test_catalog_nested_too_deeply_is_one_line(tmp_path, content):
    path = tmp_path / "deep.json"
    path.write_bytes(content)
    text = assert_one_line_error(run_proxy("capture", "--catalog", str(path), "--out",
                                           str(tmp_path / "o")), 1)
    assert "nested too deeply" in text


def test_tool_choice_matching_nothing_is_a_startup_error(tmp_path):
    text = assert_one_line_error(run_proxy("capture", "--catalog", CODEX, "--tool-choice",
                                           '{"type":"function","name":"nope"}', "--out",
                                           str(tmp_path / "o")), 1)
    assert "matches no tool" in text


@pytest.mark.parametrize("args", [
    ["--out", "-"],
    ["--out", "fd:1"],
    ["--out", "fd:x"],
    ["--out", "fd:987"],
    [],                                   # --out missing
    ["--out", "o", "--server-name", "a" * 18],
    ["--out", "o", "--server-name", "bad name"],
    ["--out", "o", "--max-calls", "0"],
    ["--out", "o", "--tool-choice", "{oops"],
])
def test_bad_usage_exits_2(args):
    result = run_proxy("capture", "--catalog", CODEX, *args)
    assert_one_line_error(result, 2)


def test_capture_help_states_defaults():
    text = run_proxy("capture", "--help").stdout.decode()
    blocks = {block.split()[0]: block for block in re.split(r"\n(?=  --)", text)[1:]}
    for option in ("--catalog", "--tool-choice", "--out", "--server-name", "--max-calls",
                   "--max-argument-bytes", "--reply", "--page-size", "--print-config",
                   "--print-allowed-tools"):
        assert "default" in blocks[option], option


# -- --print-config ------------------------------------------------------------------------


def test_print_config_and_allowed_tools(tmp_path):
    out = tmp_path / "calls.ndjson"
    catalog = write_catalog(tmp_path, [{"name": "read"}, {"name": LONG}])
    result = run_proxy("capture", "--catalog", catalog, "--out", str(out), "--server-name", "ocx",
                       "--print-config")
    assert result.returncode == 0, result.stderr
    config = json.loads(result.stdout)
    server = config["mcpServers"]["ocx"]
    assert server["type"] == "stdio"
    assert server["command"] == sys.executable
    args = server["args"]
    assert args[:2] == [os.path.abspath(PROXY_SCRIPT), "capture"]
    assert args[args.index("--catalog") + 1] == catalog
    assert args[args.index("--out") + 1] == str(out)
    assert args[args.index("--server-name") + 1] == "ocx"
    assert "env" not in server
    alias = ox.capture_aliases([LONG])[LONG]
    allowed = "mcp__ocx__read,mcp__ocx__%s" % alias
    assert ("--allowedTools %s" % allowed).encode() in result.stderr
    listed = run_proxy("capture", "--catalog", catalog, "--server-name", "ocx",
                       "--print-allowed-tools")
    assert listed.stdout.decode() == allowed + "\n"


def test_printed_config_starts_a_working_server(tmp_path):
    out = tmp_path / "calls.ndjson"
    result = run_proxy("capture", "--catalog", CODEX, "--out", str(out), "--print-config")
    server = json.loads(result.stdout)["mcpServers"]["opencodex"]
    client = RelayProcess(command=[server["command"]] + server["args"])
    try:
        client.initialize()
        client.send_call("exec_command", {"cmd": "ls"})
        client.no_reply()
        assert client.close() == 0
    finally:
        if client.proc.poll() is None:
            client.proc.kill()
    assert read_records(out)[0]["name"] == "exec_command"


def test_print_config_default_out_and_fd_refusal(tmp_path):
    catalog = write_catalog(tmp_path, [{"name": "a"}], "req.json")
    result = run_proxy("capture", "--catalog", catalog, "--print-config")
    args = json.loads(result.stdout)["mcpServers"]["opencodex"]["args"]
    assert args[args.index("--out") + 1] == str(tmp_path / "req.calls.ndjson")
    for out in ("fd:3", "-"):
        result = run_proxy("capture", "--catalog", catalog, "--print-config", "--out", out)
        assert_one_line_error(result, 2)


def print_config(tmp_path, client, catalog=None):
    """``capture --print-config CLIENT`` for ``catalog`` (default: one tool); (stdout text, calls path)."""
    catalog = catalog or write_catalog(tmp_path, [{"name": "read"}])
    out = os.path.join(os.path.dirname(catalog), "calls.ndjson")
    argv = ["capture", "--catalog", catalog, "--out", out, "--reply", "deferred", "--print-config"]
    result = run_proxy(*(argv + ([client] if client else [])))
    assert result.returncode == 0, result.stderr
    return result.stdout.decode("utf-8"), out, result.stderr


def assert_starts_a_working_server(command, args, out):
    client = RelayProcess(command=[command] + args)
    try:
        client.initialize()
        client.send_call("read", {"path": "x"})
        assert "result" in client.recv()   # --reply deferred: answered
        assert client.close() == 0
    finally:
        if client.proc.poll() is None:
            client.proc.kill()
    assert read_records(out)[0]["name"] == "read"


def test_print_config_claude_is_the_default(tmp_path):
    default, _, default_err = print_config(tmp_path, None)
    claude, _, claude_err = print_config(tmp_path, "claude")
    assert claude == default and claude_err == default_err
    assert list(json.loads(claude)["mcpServers"]["opencodex"]) == ["type", "command", "args"]


def test_print_config_codex_is_a_config_toml_table(tmp_path):
    # Windows file names cannot hold " or \ (its separator, so the path still has backslashes to escape)
    folder = tmp_path / ("we'ird d\u00e9j\u00e0 \u2028 \U0001f600" if os.name == "nt"
                         else 'we"ird \\ d\u00e9j\u00e0 \u2028 \U0001f600')
    folder.mkdir()
    catalog = write_catalog(folder, [{"name": "read"}])
    text, out, err = print_config(tmp_path, "codex", catalog)
    assert text.startswith("[mcp_servers.opencodex]\n") and b"mcp__opencodex__" in err
    tomllib = pytest.importorskip("tomllib")   # Python 3.11+
    server = tomllib.loads(text)["mcp_servers"]["opencodex"]
    assert sorted(server) == ["args", "command"]
    assert server["args"][server["args"].index("--catalog") + 1] == catalog
    assert_starts_a_working_server(server["command"], server["args"], out)


def test_print_config_gemini_is_a_settings_json_entry(tmp_path):
    text, out, err = print_config(tmp_path, "gemini")
    server = json.loads(text)["mcpServers"]["opencodex"]
    assert sorted(server) == ["args", "command", "trust"] and server["trust"] is True
    assert b"--allowed-mcp-server-names opencodex" in err
    assert_starts_a_working_server(server["command"], server["args"], out)


def test_print_config_copilot_is_an_mcp_config_entry(tmp_path):
    """Copilot CLI 1.0.102 loads ``{"mcpServers": {NAME: {"type": "local", ..., "tools": ["*"]}}}`` from
    ~/.copilot/mcp-config.json or ``--additional-mcp-config @FILE`` (measured in the real-client tier)."""
    text, out, err = print_config(tmp_path, "copilot")
    server = json.loads(text)["mcpServers"]["opencodex"]
    assert server["type"] == "local" and server["tools"] == ["*"]
    assert b"--additional-mcp-config" in err and b"opencodex-<tool>" in err
    assert_starts_a_working_server(server["command"], server["args"], out)


def test_print_config_opencode_is_an_mcp_entry_with_one_command_array(tmp_path):
    text, out, err = print_config(tmp_path, "opencode")
    server = json.loads(text)["mcp"]["opencodex"]
    assert sorted(server) == ["command", "enabled", "type"]
    assert server["type"] == "local" and server["enabled"] is True
    assert b"opencodex_<tool>" in err
    assert_starts_a_working_server(server["command"][0], server["command"][1:], out)


@pytest.mark.parametrize("client", ["qwen", "qwen-code"])
def test_print_config_qwen_is_a_settings_json_entry(tmp_path, client):
    text, out, err = print_config(tmp_path, client)
    server = json.loads(text)["mcpServers"]["opencodex"]
    assert sorted(server) == ["args", "command", "trust"] and server["trust"] is True
    assert b"--allowed-mcp-server-names opencodex" in err and b"tool_search" in err and b".qwen/settings.json" in err
    assert_starts_a_working_server(server["command"], server["args"], out)


def test_print_config_codebuddy_offers_the_tools_directly_and_names_the_flags(tmp_path):
    text, out, err = print_config(tmp_path, "codebuddy")
    server = json.loads(text)["mcpServers"]["opencodex"]
    assert server["type"] == "stdio" and server["defer_loading"] is False
    flags = b'--tools "" --strict-mcp-config --mcp-config FILE --allowedTools mcp__opencodex__read'
    assert flags in err
    assert_starts_a_working_server(server["command"], server["args"], out)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(st.characters(blacklist_categories=("Cs",))),
       st.dictionaries(st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=5),
                       st.text(max_size=5, alphabet=st.characters(blacklist_categories=("Cs",))), max_size=3))
def test_toml_emitter_round_trips(text, table):
    tomllib = pytest.importorskip("tomllib")
    document = ox.toml_table(("mcp_servers", text or "x"), {"command": text, "args": [text, ""], "env": table})
    assert tomllib.loads(document) == {"mcp_servers": {text or "x": {"command": text, "args": [text, ""], "env": table}}}


# -- behind the relay core ------------------------------------------------------------


def test_capture_behind_the_relay(tmp_path):
    out = tmp_path / "calls.ndjson"
    client = RelayProcess(command=[sys.executable, PROXY, "stdio", "--", sys.executable, PROXY,
                                "capture", "--catalog", CODEX, "--out", str(out)])
    try:
        client.initialize()
        names = [tool["name"] for tool in client.request("tools/list")[0]["result"]["tools"]]
        assert "exec_command" in names
        client.send_call("exec_command", {"cmd": "ls"})
        client.no_reply()
        client.close()
    finally:
        if client.proc.poll() is None:
            client.proc.kill()
    assert read_records(out)[0]["name"] == "exec_command"
