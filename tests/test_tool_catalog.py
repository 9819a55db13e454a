"""Tool catalog section: normalisation, tool_choice filtering, Cursor names, encode-tools CLI."""
import io
import json
import os

import pytest

from helpers import FIXTURES, assert_one_line_error, run_proxy
import ocx_proxy as ox

H = bytes.fromhex

LS_SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}}
# The worked example of tests/test_protobuf.py (tool "ls", description "List",
# LS_SCHEMA, provider opencodex-responses): McpTools = 0a 69 <105-byte definition>.
LS_MCP_TOOLS_HEX = (
    "0a69" "0a026c73" "12044c697374" "1a44"
    "2a42" "0a10" "0a0474797065" "1208" "1a066f626a656374"
    "0a2e" "0a0a70726f70657274696573" "1220" "2a1e" "0a1c" "0a0470617468" "1214"
    "2a12" "0a10" "0a0474797065" "1208" "1a06737472696e67"
    "22136f70656e636f6465782d726573706f6e736573" "2a026c73")


def load(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return json.load(handle)


def names(tools):
    return [tool["wire_name"] for tool in tools]


# -- normalize_tools --------------------------------------------------------------


@pytest.mark.parametrize("fixture", ["ls_responses.json", "ls_chat.json", "ls_mcp_list.json",
                                     "ls_anthropic.json"])
def test_every_dialect_normalises_to_the_same_tool(fixture):
    assert ox.normalize_tools(load(fixture)) == [{
        "type": "function", "name": "ls", "wire_name": "ls", "description": "List",
        "input_schema": LS_SCHEMA}]


@pytest.mark.parametrize("fixture", ["ls_responses.json", "ls_chat.json", "ls_mcp_list.json",
                                     "ls_anthropic.json"])
def test_every_dialect_encodes_to_the_hand_computed_bytes(fixture):
    assert ox.encode_mcp_tools(load(fixture)) == H(LS_MCP_TOOLS_HEX)


def test_mcp_tools_list_result_and_its_tools_list():
    result = load("ls_mcp_list.json")["result"]
    assert ox.normalize_tools(result) == ox.normalize_tools(result["tools"])


def test_codex_request_shapes():
    notes = []
    tools = ox.normalize_tools(load("codex_request.json"), notes)
    assert names(tools) == ["exec_command", "apply_patch", "mcp__fs__read_file",
                            "mcp__fs__write_file", "update_plan"]
    by_name = {tool["wire_name"]: tool for tool in tools}
    # custom freeform tool -> one required string "input"
    assert by_name["apply_patch"]["input_schema"] == {
        "type": "object", "properties": {"input": {"type": "string"}},
        "required": ["input"], "additionalProperties": False}
    assert by_name["apply_patch"]["type"] == "custom"
    # namespace children keep their namespace; raw name stays
    assert by_name["mcp__fs__read_file"]["name"] == "read_file"
    assert by_name["mcp__fs__read_file"]["namespace"] == "mcp__fs"
    # "parameters": null -> the default object schema
    assert by_name["mcp__fs__write_file"]["input_schema"] == {"type": "object", "properties": {}}
    # Codex's reserved "functions" namespace is flattened
    assert "namespace" not in by_name["update_plan"]
    # the hosted web_search was dropped, with a note
    assert len(notes) == 1 and "web_search" in notes[0]


@pytest.mark.parametrize("schema", [None, "object", ["type"], 5])
def test_non_object_schema_gets_the_default(schema):
    tools = ox.normalize_tools([{"type": "function", "name": "f", "parameters": schema}])
    assert tools[0]["input_schema"] == {"type": "object", "properties": {}}


def test_missing_schema_gets_the_default():
    assert ox.normalize_tools([{"name": "f"}])[0]["input_schema"] == {"type": "object",
                                                                        "properties": {}}


@pytest.mark.parametrize("tool", [
    {"type": "image_generation"}, {"type": "web_search_preview"}, {"type": "file_search"},
    {"type": "code_interpreter", "container": {"type": "auto"}},
    {"type": "mcp", "server_label": "deepwiki", "server_url": "https://example.invalid"},
    {"type": "web_search_20250305", "name": "web_search"},
    {"type": "bash_20250124", "name": "bash"},
])
def test_hosted_tools_are_dropped_with_a_note(tool):
    notes = []
    assert ox.normalize_tools([tool, {"name": "kept"}], notes)[0]["name"] == "kept"
    assert len(notes) == 1 and "hosted" in notes[0]


def test_anthropic_custom_tool_with_schema_is_a_function():
    tool = {"type": "custom", "name": "get", "input_schema": LS_SCHEMA}
    assert ox.normalize_tools([tool])[0]["input_schema"] == LS_SCHEMA


def test_tool_search_without_a_name():
    assert names(ox.normalize_tools([{"type": "tool_search"}])) == ["tool_search"]


def test_normalising_twice_changes_nothing():
    once = ox.normalize_tools(load("codex_request.json"), [])
    assert ox.normalize_tools(once, []) == once


def test_repeated_wire_names_keep_the_first():
    notes = []
    tools = ox.normalize_tools([{"name": "a", "description": "first"},
                                {"name": "a", "description": "second"}], notes)
    assert [tool["description"] for tool in tools] == ["first"]
    assert "a" in notes[0]


@pytest.mark.parametrize("document,needle", [
    ([{"type": "function"}], "tools[0]"),
    ([{"name": "ok"}, "not a tool"], "tools[1]"),
    ([{"name": ""}], "tools[0]"),
    ([{"name": "f", "description": 5}], "description"),
    ([{"type": "namespace", "name": "ns", "tools": [{"description": "x"}]}], "tools[0].tools[0]"),
    ([{"type": "namespace", "tools": []}], "namespace"),
    ({"model": "x"}, "tools array"),
    ("tools", "tools array"),
])
def test_unknown_shapes_are_named(document, needle):
    with pytest.raises(ox.OcxError) as info:
        ox.normalize_tools(document)
    assert needle in str(info.value)


def test_split_catalog_returns_the_body_tool_choice():
    tools, choice = ox.split_catalog({"tools": [], "tool_choice": "none"})
    assert (tools, choice) == ([], "none")


# -- filter_tools ----------------------------------------------------------------

CATALOG = [
    {"type": "function", "name": "read_file"},
    {"type": "function", "name": "read_file", "namespace": "mcp__fs"},
    {"type": "function", "name": "exec_command"},
    {"type": "custom", "name": "apply_patch"},
]


@pytest.mark.parametrize("choice", [None, "auto", "required", {"type": "auto"},
                                    {"type": "any"}, {"type": "web_search_preview"}])
def test_choices_that_keep_everything(choice):
    assert len(ox.filter_tools(CATALOG, choice)) == 4


@pytest.mark.parametrize("choice", ["none", {"type": "none"},
                                    {"type": "allowed_tools", "mode": "auto", "tools": []},
                                    {"type": "function", "name": "missing"}])
def test_choices_that_keep_nothing(choice):
    assert ox.filter_tools(CATALOG, choice) == []


@pytest.mark.parametrize("choice,expected", [
    # a raw name matches bare and namespaced tools alike
    ({"type": "function", "name": "read_file"}, ["read_file", "mcp__fs__read_file"]),
    # the wire name or the dotted form selects only the namespaced one
    ({"type": "function", "name": "mcp__fs__read_file"}, ["mcp__fs__read_file"]),
    ({"type": "function", "name": "mcp__fs.read_file"}, ["mcp__fs__read_file"]),
    # Chat Completions and Anthropic forms
    ({"type": "function", "function": {"name": "exec_command"}}, ["exec_command"]),
    ({"type": "tool", "name": "exec_command"}, ["exec_command"]),
    ({"type": "custom", "name": "apply_patch"}, ["apply_patch"]),
    # allowed_tools, Responses and Chat forms; mode does not change the set
    ({"type": "allowed_tools", "mode": "required",
      "tools": [{"type": "function", "name": "exec_command"}, {"type": "custom", "name": "apply_patch"}]},
     ["exec_command", "apply_patch"]),
    ({"type": "allowed_tools", "allowed_tools": {
        "mode": "auto", "tools": [{"type": "function", "function": {"name": "mcp__fs__read_file"}}]}},
     ["mcp__fs__read_file"]),
])
def test_named_choices(choice, expected):
    assert names(ox.filter_tools(CATALOG, choice)) == expected


@pytest.mark.parametrize("choice", ["sometimes", 5, {"type": "function"}, {"type": "weird"},
                                    {"type": "allowed_tools"}, {"type": ["function"]}, {"type": {}}])
def test_unsupported_choices_raise(choice):
    with pytest.raises(ox.OcxError):
        ox.filter_tools(CATALOG, choice)


# -- encoding ---------------------------------------------------------------------


def test_name_and_tool_name_are_the_wire_name():
    decoded = ox.decode_mcp_tools(ox.encode_mcp_tools(load("codex_request.json")))
    read = [tool for tool in decoded if tool["name"] == "mcp__fs__read_file"][0]
    assert read["tool_name"] == "mcp__fs__read_file"
    assert read["provider_identifier"] == "opencodex-responses"
    assert read["description"] == "Read a file"
    assert read["input_schema"] == {"type": "object", "properties": {"path": {"type": "string"}},
                                    "required": ["path"]}


def test_custom_provider_identifier():
    decoded = ox.decode_mcp_tools(ox.encode_mcp_tools([{"name": "a"}], provider_identifier="p"))
    assert decoded[0]["provider_identifier"] == "p"


def test_nothing_left_encodes_to_empty_bytes():
    assert ox.encode_mcp_tools(CATALOG, "none") == b""
    assert ox.encode_mcp_tools([]) == b""


def test_big_integer_in_a_schema_names_tool_and_path():
    tool = {"name": "n", "parameters": {"type": "object", "properties": {
        "id": {"type": "integer", "maximum": 18446744073709551615}}}}
    with pytest.raises(ox.OcxError) as info:
        ox.encode_mcp_tools([tool])
    assert "tool n" in str(info.value) and "$.properties.id.maximum" in str(info.value)


def test_limits_are_warned_on_stderr(monkeypatch):
    stream = io.StringIO()
    monkeypatch.setattr(ox.log, "stream", stream)
    ox.encode_mcp_tools([{"name": "t%d" % index} for index in range(331)])
    assert "331 tool definitions" in stream.getvalue()
    stream.truncate(0)
    ox.encode_mcp_tools([{"name": "big", "description": "x" * 120001}])
    assert "over Cursor's limit" in stream.getvalue()
    stream.truncate(0)
    ox.encode_mcp_tools([{"name": "t%d" % index} for index in range(330)])
    assert stream.getvalue() == ""


def test_request_context_golden():
    # Tool {"name": "a"} with the default schema {"type":"object","properties":{}}:
    #   entry type->"object" = 0a 04 74797065 + 12 08 1a06 6f626a656374        (16)
    #   entry properties->{} = 0a 0a 70726f70657274696573 + 12 02 2a00         (12 + 4 = 16)
    #   Struct = 0a 10 <16> + 0a 10 <16> = 36 = 0x24; Value = 2a 24 <36> = 38 = 0x26
    #   definition = 0a 01 61 (3) + 1a 26 <38> (40) + 22 01 70 (3) + 2a 01 61 (3) = 49 = 0x31
    #   RequestContext.tools = field 7, tag 7<<3|2 = 0x3a: 3a 31 <49>
    # McpInstructions {server_name "p", instructions "hi"} = 0a 01 70 12 02 6869 (7)
    #   RequestContext.mcp_instructions = field 14, tag 14<<3|2 = 0x72: 72 07 <7>
    expected = ("3a31" "0a0161" "1a26" "2a24"
                "0a10" "0a0474797065" "1208" "1a066f626a656374"
                "0a10" "0a0a70726f70657274696573" "1202" "2a00"
                "220170" "2a0161"
                "7207" "0a0170" "12026869")
    encoded = ox.encode_request_context([{"name": "a"}], "hi", provider_identifier="p")
    assert encoded == H(expected)
    decoded = ox.decode_request_context(encoded)
    assert decoded["mcp_instructions"] == [{"server_name": "p", "instructions": "hi"}]


def test_request_context_instruction_shapes():
    one = ox.encode_request_context([], {"server_name": "s", "instructions": "i"})
    assert one == H("7206" "0a0173" "120169")
    with pytest.raises(ox.OcxError):
        ox.encode_request_context([], [{"instructions": 5}])


def test_agent_run_request_accepts_tools_bytes():
    mcp_tools = ox.encode_mcp_tools([{"name": "a"}])
    wrapped = ox.encode_agent_run_request(mcp_tools)
    assert wrapped[:1] == b"\x22" and wrapped[2:] == mcp_tools


# -- Cursor names -----------------------------------------------------------------


def test_cursor_display_name():
    assert ox.cursor_display_name("exec_command") == "mcp_opencodex-responses_exec_command"
    decoded = {"provider_identifier": "opencodex", "tool_name": "fs_read"}
    assert ox.cursor_display_name(decoded) == "mcp_opencodex_fs_read"
    normalized = ox.normalize_tools([{"name": "read", "namespace": "mcp__fs"}])[0]
    assert ox.cursor_display_name(normalized) == "mcp_opencodex-responses_mcp__fs__read"


@pytest.mark.parametrize("echoed,expected", [
    ("mcp_opencodex-responses_exec_command", "exec_command"),
    ("mcp_opencodex-responses_mcp__fs__read_file", "mcp__fs__read_file"),
    ("mcp__fs__read_file", "mcp__fs__read_file"),      # generic mcp_ is never stripped
    ("mcp_opencodex_exec_command", "mcp_opencodex_exec_command"),  # other provider
    ("mcp_opencodex-responses_", "mcp_opencodex-responses_"),      # nothing after the prefix
    ("exec_command", "exec_command"),
])
def test_normalize_cursor_wire_name(echoed, expected):
    assert ox.normalize_cursor_wire_name(echoed) == expected


def test_display_name_round_trip_with_another_provider():
    shown = ox.cursor_display_name("x", "opencodex")
    assert ox.normalize_cursor_wire_name(shown, "opencodex") == "x"


# -- encode-tools CLI ---------------------------------------------------------------


def test_cli_encode_hex_matches_hand_vector():
    result = run_proxy("encode-tools", os.path.join(FIXTURES, "ls_chat.json"), "--format", "hex")
    assert result.returncode == 0, result.stderr
    assert result.stdout == LS_MCP_TOOLS_HEX.encode() + b"\n"
    summary = result.stderr.decode()
    assert summary.count("\n") == 1
    assert "1 tools in, 1 out" in summary and "107 bytes" in summary


def test_cli_encode_raw_to_a_pipe_is_the_default():
    result = run_proxy("encode-tools", stdin=json.dumps(load("ls_responses.json")).encode())
    assert result.stdout == H(LS_MCP_TOOLS_HEX)


def test_cli_encode_base64_and_wraps():
    path = os.path.join(FIXTURES, "ls_mcp_list.json")
    result = run_proxy("encode-tools", path, "--format", "base64", "--wrap", "agent-run-request")
    import base64
    assert base64.b64decode(result.stdout) == H("226b" + LS_MCP_TOOLS_HEX)
    result = run_proxy("encode-tools", path, "--wrap", "request-context", "--format", "hex")
    assert result.stdout.startswith(b"3a69")  # field 7 holds the same 105-byte definition


@pytest.mark.parametrize("extra,expected", [
    ([], b"2200\n"),                            # nothing left: the empty wrapper
    (["--when-empty", "absent"], b"\n"),       # or no field 4 at all
])
def test_cli_tool_choice_none_with_agent_run_request(extra, expected):
    result = run_proxy("encode-tools", os.path.join(FIXTURES, "ls_chat.json"), "--tool-choice",
                       "none", "--wrap", "agent-run-request", "--format", "hex", *extra)
    assert result.returncode == 0
    assert result.stdout == expected


def test_cli_uses_the_body_tool_choice_unless_overridden(tmp_path):
    body = load("codex_request.json")
    body["tool_choice"] = {"type": "function", "name": "update_plan"}
    path = tmp_path / "body.json"
    path.write_text(json.dumps(body))
    decoded = ox.decode_mcp_tools(run_proxy("encode-tools", str(path)).stdout)
    assert [tool["name"] for tool in decoded] == ["update_plan"]
    result = run_proxy("encode-tools", str(path), "--tool-choice", "auto")
    assert len(ox.decode_mcp_tools(result.stdout)) == 5


CURSOR_FITTED_RULES = {"cursor-name-length", "name-chars", "cursor-type-array"}


def cursor_findings(mcp_tools_bytes, provider):
    """The rules of CURSOR_FITTED_RULES the decoded McpTools break, the provider counting as the server name."""
    decoded = ox.decode_mcp_tools(mcp_tools_bytes)
    tools = [{"name": tool["tool_name"], "inputSchema": tool["input_schema"]} for tool in decoded]
    return decoded, sorted({f.rule for f in ox.CatalogChecker(provider).check({"tools": tools})} & CURSOR_FITTED_RULES)


@pytest.mark.parametrize("provider", [ox.CURSOR_PROVIDER, "p"])
def test_cli_encode_fits_names_and_schemas_to_cursor_and_states_the_names_back(provider):
    catalog = os.path.join(FIXTURES, "catalogs", "unfit.json")    # 70 characters, files.read, a type array
    result = run_proxy("encode-tools", catalog, "--provider", provider)
    decoded, broken = cursor_findings(result.stdout, provider)
    assert result.returncode == 0 and broken == []
    long_name = "find_every_document_in_the_knowledge_base_that_matches_the_query_v2_xy"
    fitted = {long_name: ox.short_name(long_name, 60 - len(provider)), "files.read": ox.short_name("files.read", 99)}
    assert [tool["tool_name"] for tool in decoded] == [fitted[long_name], fitted["files.read"], "pick"]
    assert [tool["name"] for tool in decoded] == [tool["tool_name"] for tool in decoded]
    assert decoded[0]["input_schema"]["properties"]["q"] == {"type": "string", "description": "(also accepts null)"}
    stderr = result.stderr.decode()
    for original, name in fitted.items():   # no call path here: the map back is stated
        assert "%s is the catalog's %s" % (name, original) in stderr
    raw = run_proxy("encode-tools", catalog, "--provider", provider, "--no-fit-tools")
    assert cursor_findings(raw.stdout, provider)[1] == sorted(CURSOR_FITTED_RULES)
    env = dict(os.environ, OCX_PROXY_FIT_TOOLS="0")
    assert run_proxy("encode-tools", catalog, "--provider", provider, env=env).stdout == raw.stdout


def test_cli_encode_fitting_leaves_a_fitting_catalog_byte_for_byte():
    path = os.path.join(FIXTURES, "codex_request.json")
    fitted, raw = run_proxy("encode-tools", path), run_proxy("encode-tools", path, "--no-fit-tools")
    assert raw.returncode == 0 and fitted.stdout == raw.stdout and b"fitted for Cursor" not in fitted.stderr


def test_cli_pipe_encode_into_decode():
    encoded = run_proxy("encode-tools", os.path.join(FIXTURES, "codex_request.json"))
    decoded = run_proxy("decode", stdin=encoded.stdout)
    assert decoded.returncode == 0, decoded.stderr
    assert [tool["name"] for tool in json.loads(decoded.stdout)][:2] == ["exec_command",
                                                                          "apply_patch"]


@pytest.mark.parametrize("stdin", [
    b"{not json",
    b"\xff\xfe\x00",
    b'{"model": "x"}',
    b'[{"type": "function"}]',
    b'[{"name": "n", "parameters": {"maximum": 1e400}}]',
    # A short id: the default one is the 100,000 brackets, too long a test name for Windows' tools and files
    pytest.param(b"[" * 100000, id="deeply-nested"),
])
def test_cli_encode_bad_input_is_one_line(stdin):
    assert_one_line_error(run_proxy("encode-tools", stdin=stdin))


def test_cli_encode_unsupported_tool_choice_is_one_line():
    text = assert_one_line_error(run_proxy("encode-tools", "--tool-choice", '{"type":"weird"}',
                                           stdin=b"[]"))
    assert "tool_choice" in text


def test_cli_encode_bad_usage_exits_2():
    assert_one_line_error(run_proxy("encode-tools", "--tool-choice", "{oops", stdin=b"[]"), 2)
    result = run_proxy("encode-tools", "--wrap", "nope")
    assert result.returncode == 2 and b"Traceback" not in result.stderr


@pytest.mark.parametrize("command", ["encode-tools", "decode"])
def test_help_states_every_default(command):
    result = run_proxy(command, "--help")
    assert result.returncode == 0
    text = result.stdout.decode()
    options = [line for line in text.splitlines() if line.strip().startswith(("--", "FILE"))]
    assert options
    assert text.count("default") >= len([o for o in options if not o.strip().startswith("--help")])


@pytest.mark.parametrize("stdin,needle", [
    (b'{"tools":[{"type":"function","name":"a"}],"temperature":NaN}', "NaN"),
    (b'{"tools":[{"type":"function","name":"a"}],"top_p":-Infinity}', "-Infinity"),
    (b'{"tools":[{"type":"function","name":"a"}],"max":1e999}', "1e999"),
    (b'[{"type":"function","name":"a","description":"\\ud800"}]', "lone surrogate"),
    (b'{"tools":[],"metadata":' + b"[" * 300 + b"]" * 300 + b"}", "nested too deeply"),
])
def test_cli_encode_refuses_what_no_json_reader_accepts(stdin, needle):
    text = assert_one_line_error(run_proxy("encode-tools", stdin=stdin))
    assert "tool catalog (stdin)" in text and needle in text and "internal error" not in text


def test_cli_encode_input_is_bounded():
    catalog = json.dumps([{"type": "function", "name": "a"}]).encode()
    ok = run_proxy("encode-tools", "--max-input-bytes", str(len(catalog)), stdin=catalog)
    assert ok.returncode == 0, ok.stderr
    text = assert_one_line_error(run_proxy("encode-tools", "--max-input-bytes", str(len(catalog)),
                                           stdin=catalog + b"\n"))
    assert "larger than %d bytes" % len(catalog) in text and "--max-input-bytes" in text
