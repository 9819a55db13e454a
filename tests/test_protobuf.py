"""Protobuf section: hand-computed golden vectors, strict decoding, properties, decode CLI.

Every expected byte string below was worked out by hand from the protobuf
wire format (tag = field << 3 | wire type; length-delimited = tag, varint
length, payload); the arithmetic is in the comments.  None of it comes from
the encoder under test.
"""
import json
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import PROXY, assert_one_line_error, run_proxy
import ocx_proxy as ox

H = bytes.fromhex


# -- varints ------------------------------------------------------------------

VARINTS = [
    (0, "00"),
    (1, "01"),
    (127, "7f"),                      # fits in 7 bits: one byte, no continuation bit
    (128, "8001"),                    # 128 = 0b1_0000000 -> low group 0|0x80, then 1
    (300, "ac02"),                    # 300 = 0b10_0101100 -> 0x2c|0x80 = ac, then 2
    (2 ** 32, "8080808010"),          # 2^32 = 2^(4*7) * 2^4: four empty groups, then 0x10
    (2 ** 63 - 1, "ffffffffffffffff7f"),  # 63 one-bits = nine full 7-bit groups
    (-1, "ffffffffffffffffff01"),     # int64 -1 = 2^64-1: 64 one-bits = 9 groups + 1 bit
    (-2, "feffffffffffffffff01"),     # 2^64-2: low group 1111110 = 7e|80 = fe
    (-(2 ** 63), "80808080808080808001"),  # 2^63: nine empty groups, then bit 63 -> 01
]


@pytest.mark.parametrize("value,expected", VARINTS)
def test_varint_golden(value, expected):
    assert ox.encode_varint(value) == H(expected)


@pytest.mark.parametrize("value,expected", VARINTS)
def test_varint_decodes_back(value, expected):
    data = H(expected)
    decoded, end = ox._read_varint(data, 0, len(data), "test")
    assert end == len(data)
    assert decoded == value % 2 ** 64  # the wire holds the unsigned two's complement


def test_varint_out_of_range():
    with pytest.raises(ox.OcxError):
        ox.encode_varint(2 ** 64)
    with pytest.raises(ox.OcxError):
        ox.encode_varint(-(2 ** 63) - 1)


def test_varint_longer_than_64_bits_is_refused():
    # ten bytes whose last carries more than bit 63
    data = H("ffffffffffffffffff02")
    with pytest.raises(ox.ProtobufDecodeError) as info:
        ox.decode_raw(b"\x08" + data)
    assert "64 bits" in str(info.value)


# -- google.protobuf.Value ----------------------------------------------------

VALUES = [
    (None, "0800"),                        # null_value = 1, varint 0: tag 1<<3|0 = 08
    (True, "2001"),                        # bool_value = 4: tag 4<<3|0 = 0x20
    (False, "2000"),                       # a oneof member is written even when false
    (1.0, "11000000000000f03f"),           # number_value = 2: tag 2<<3|1 = 0x11; 1.0 = 0x3ff0.. LE
    (0, "110000000000000000"),             # integer 0 -> double 0.0, still written (oneof)
    (-2.0, "1100000000000000c0"),          # -2.0 = 0xc000000000000000 little-endian
    (0.1, "119a9999999999b93f"),           # 0.1 = 0x3fb999999999999a
    (2 ** 53, "110000000000004043"),       # 2^53: exponent 1023+53 = 0x434 -> 0x4340...
    ("hi", "1a026869"),                    # string_value = 3: tag 0x1a, len 2, 'h' 'i'
    ("", "1a00"),                          # empty string still set (oneof)
    (u"\u00e9", "1a02c3a9"),               # e-acute is two UTF-8 bytes c3 a9
    ({}, "2a00"),                          # struct_value = 5: tag 0x2a, empty Struct
    ([], "3200"),                          # list_value = 6: tag 0x32, empty ListValue
    ([True], "32040a022001"),              # ListValue{values=1: [20 01]} = 0a 02 20 01 (4 bytes)
    # {"a": null}: entry = key(0a 01 61) + value(12 02 08 00) = 7 bytes;
    # Struct = 0a 07 <entry> = 9 bytes; Value = 2a 09 <struct>
    ({"a": None}, "2a090a070a016112020800"),
]


@pytest.mark.parametrize("value,expected", VALUES)
def test_value_golden(value, expected):
    assert ox.encode_value(value) == H(expected)


@pytest.mark.parametrize("value,expected", VALUES)
def test_value_decodes_back(value, expected):
    assert ox.decode_value(H(expected)) == value


# {"a": {"b": [1, "x"]}}
#   Value 1    = 11 000000000000f03f          (9 bytes)
#   Value "x"  = 1a 01 78                     (3 bytes)
#   ListValue  = 0a 09 <9> + 0a 03 <3>        (11 + 5 = 16 = 0x10)
#   Value list = 32 10 <16>                   (18 = 0x12)
#   entry b    = 0a 01 62 + 12 12 <18>        (3 + 20 = 23 = 0x17)
#   Struct b   = 0a 17 <23>                   (25 = 0x19)
#   Value      = 2a 19 <25>                   (27 = 0x1b)
#   entry a    = 0a 01 61 + 12 1b <27>        (3 + 29 = 32 = 0x20)
#   Struct a   = 0a 20 <32>                   (34 = 0x22)
#   Value      = 2a 22 <34>                   (36 bytes)
NESTED = ("2a22" "0a20" "0a0161" "121b" "2a19" "0a17" "0a0162" "1212" "3210"
          "0a09" "11000000000000f03f" "0a03" "1a0178")


def test_nested_struct_golden():
    value = {"a": {"b": [1, "x"]}}
    assert ox.encode_value(value) == H(NESTED)
    assert ox.decode_value(H(NESTED)) == value


def test_struct_keeps_key_order():
    encoded = ox.encode_value({"b": 1, "a": 2})
    assert list(ox.decode_value(encoded)) == ["b", "a"]


@pytest.mark.parametrize("value,path", [
    ({"properties": {"n": {"maximum": 2 ** 53 + 1}}}, "$.properties.n.maximum"),
    ([0, [-(2 ** 60)]], "$[1][0]"),
    ({"weird key": 10 ** 20}, '$["weird key"]'),
])
def test_big_integer_names_its_json_path(value, path):
    with pytest.raises(ox.OcxError) as info:
        ox.encode_value(value)
    assert path in str(info.value)
    assert "2^53" in str(info.value)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), {"x": [float("-inf")]}])
def test_non_finite_numbers_are_refused(value):
    with pytest.raises(ox.OcxError):
        ox.encode_value(value)


def test_non_json_values_are_refused():
    with pytest.raises(ox.OcxError):
        ox.encode_value({"x": object()})
    with pytest.raises(ox.OcxError):
        ox.encode_value({1: "int key"})
    with pytest.raises(ox.OcxError):
        ox.encode_value("\ud800")  # lone surrogate: not encodable as UTF-8


def test_too_deep_json_is_refused_not_recursion_error():
    value = []
    for _ in range(ox.MAX_VALUE_DEPTH + 5):
        value = [value]
    with pytest.raises(ox.OcxError) as info:
        ox.encode_value(value)
    assert "deeper" in str(info.value)


def test_too_deep_value_bytes_are_refused():
    # each level is 32 <len> around the next: build from the inside out
    data = H("3200")
    for _ in range(ox.MAX_VALUE_DEPTH + 5):
        list_value = b"\x0a" + ox.encode_varint(len(data)) + data
        data = b"\x32" + ox.encode_varint(len(list_value)) + list_value
    with pytest.raises(ox.ProtobufDecodeError):
        ox.decode_value(data)


@pytest.mark.parametrize("hexdata,reason", [
    ("", "no kind"),                        # nothing set
    ("08002001", "more than one kind"),     # null and bool both set
    ("0801", "null_value must be 0"),
    ("2002", "bool_value must be 0 or 1"),
    ("1a02c328", "UTF-8"),                  # c3 28: invalid continuation byte
    ("11000000000000f87f", "no JSON form"),  # NaN = 0x7ff8000000000000
    ("3800", "no field 7"),                # tag 7<<3|0: Value has fields 1-6
    ("0a00", "wire type 0"),                # null_value sent length-delimited
    ("2a020801", "fields must have wire type 2"),  # Struct field 1 sent as a varint
    ("2a04" "0a02" "0a00", "has no value"),  # map entry with a key only
    ("2a0c" "0a04" "0a00" "1200" "0a04" "0a00" "1200", "no kind"),  # entry value empty Value
])
def test_value_decoder_is_strict(hexdata, reason):
    with pytest.raises(ox.ProtobufDecodeError) as info:
        ox.decode_value(H(hexdata))
    assert reason in str(info.value)


def test_duplicate_struct_key_is_refused():
    # {"a": null} entry twice: 0a 07 0a 01 61 12 02 08 00, twice -> Struct of 18 bytes
    entry = "0a070a016112020800"
    with pytest.raises(ox.ProtobufDecodeError) as info:
        ox.decode_value(H("2a12" + entry + entry))
    assert "appears twice" in str(info.value)


# -- the worked example: one small tool -------------------------------------
#
# Tool "ls", description "List", schema {"type":"object","properties":{"path":{"type":"string"}}}
#   Value "object"         = 1a 06 6f626a656374                   (8)
#   entry type->object     = 0a 04 74797065 + 12 08 <8>           (6 + 10 = 16 = 0x10)
#   Value "string"         = 1a 06 737472696e67                   (8)
#   entry type->string     = 0a 04 74797065 + 12 08 <8>           (16)
#   Struct {type:string}   = 0a 10 <16>                           (18 = 0x12)
#   Value of it            = 2a 12 <18>                           (20 = 0x14)
#   entry path->...        = 0a 04 70617468 + 12 14 <20>          (6 + 22 = 28 = 0x1c)
#   Struct {path:...}      = 0a 1c <28>                           (30 = 0x1e)
#   Value of it            = 2a 1e <30>                           (32 = 0x20)
#   entry properties->...  = 0a 0a 70726f70657274696573 + 12 20 <32>  (12 + 34 = 46 = 0x2e)
#   outer Struct           = 0a 10 <16> + 0a 2e <46>              (18 + 48 = 66 = 0x42)
#   input_schema Value     = 2a 42 <66>                           (68 = 0x44)
# McpToolDefinition:
#   1 name                 = 0a 02 6c73                           (4)
#   2 description          = 12 04 4c697374                       (6)
#   3 input_schema         = 1a 44 <68>                           (70)
#   4 provider_identifier  = 22 13 "opencodex-responses" (19 = 0x13 bytes)  (21)
#   5 tool_name            = 2a 02 6c73                           (4)
#   total                  = 4 + 6 + 70 + 21 + 4 = 105 = 0x69
# McpTools                 = 0a 69 <105>                          (107 = 0x6b)
# AgentRunRequest          = 22 6b <107>                          (109)
LS_SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}}
LS_SCHEMA_VALUE = (
    "2a42"
    "0a10" "0a0474797065" "1208" "1a066f626a656374"
    "0a2e" "0a0a70726f70657274696573" "1220"
    "2a1e" "0a1c" "0a0470617468" "1214"
    "2a12" "0a10" "0a0474797065" "1208" "1a06737472696e67")
LS_DEFINITION = ("0a026c73" "12044c697374" "1a44" + LS_SCHEMA_VALUE +
                 "22136f70656e636f6465782d726573706f6e736573" "2a026c73")
LS_MCP_TOOLS = "0a69" + LS_DEFINITION
LS_AGENT_RUN_REQUEST = "226b" + LS_MCP_TOOLS


def test_worked_example_schema():
    assert ox.encode_value(LS_SCHEMA) == H(LS_SCHEMA_VALUE)


def test_worked_example_definition():
    encoded = ox.encode_tool_definition("ls", "List", LS_SCHEMA, "opencodex-responses", "ls")
    assert encoded == H(LS_DEFINITION)
    assert len(encoded) == 105


def test_worked_example_mcp_tools_and_agent_run_request():
    tools = [{"type": "function", "name": "ls", "description": "List", "parameters": LS_SCHEMA}]
    mcp_tools = ox.encode_mcp_tools(tools)
    assert mcp_tools == H(LS_MCP_TOOLS)
    assert ox.encode_agent_run_request(mcp_tools) == H(LS_AGENT_RUN_REQUEST)


def test_worked_example_decodes():
    assert ox.decode_mcp_tools(H(LS_MCP_TOOLS)) == [{
        "name": "ls", "description": "List", "input_schema": LS_SCHEMA,
        "provider_identifier": "opencodex-responses", "tool_name": "ls"}]
    request = ox.decode_agent_run_request(H(LS_AGENT_RUN_REQUEST))
    assert request["mcp_tools"][0]["name"] == "ls"
    assert request["other_fields"] == []


def test_empty_wrapper_and_absent_field():
    assert ox.encode_agent_run_request(b"", empty_wrapper=True) == H("2200")
    assert ox.encode_agent_run_request(b"") == b""
    assert ox.decode_agent_run_request(H("2200"))["mcp_tools"] == []
    assert ox.decode_agent_run_request(b"")["mcp_tools"] is None


def test_agent_run_request_lists_other_fields():
    # field 5 conversation_id "c" (2a 01 63) then the empty wrapper
    decoded = ox.decode_agent_run_request(H("2a0163" "2200"))
    assert decoded["mcp_tools"] == []
    assert decoded["other_fields"] == [{"field": 5, "wire_type": 2, "offset": 0}]


def test_empty_strings_are_omitted_from_definitions():
    # only name "a" (0a 01 61) and provider "p" (22 01 70); no description, no schema
    assert ox.encode_tool_definition("a", "", None, "p", "") == H("0a0161" "220170")


# -- the mis-shaped blob: "illegal tag: field no 13 wire type 7" --------------
#
# A McpToolDefinition sent where McpTools belongs: 0a 0c "exec_command" ...
# Read as McpTools, field 1 (0a, length 0x0c) is taken as a definition, so
# its payload "exec_command" is parsed as tags:
#   byte 2 'e' = 0x65 = field 12, wire type 5 (fixed32): skip 4 bytes "xec_"
#   byte 7 'c' = 0x63 = field 12, wire type 3 (start group): read inner tags
#   byte 8 'o' = 0x6f = 13 << 3 | 7 -> field 13, wire type 7: illegal
MISSHAPED = b"\x0a\x0cexec_command" + b"\x22\x13opencodex-responses"


def test_misshaped_blob_names_field_13_wire_type_7():
    with pytest.raises(ox.ProtobufDecodeError) as info:
        ox.decode_mcp_tools(MISSHAPED)
    error = info.value
    assert (error.offset, error.field, error.wire_type) == (8, 13, 7)
    assert error.snippet == "exec_command"  # not the field-4 tag 0x22 ('"') after it
    message = str(error)
    assert "illegal tag: field no 13 wire type 7" in message
    assert "at byte 8" in message
    assert "'o'" in message
    assert "McpTools.mcp_tools[0]" in message


def test_definition_directly_in_field_4_fails_the_same_way():
    # AgentRunRequest 22 <len> then the definition: offsets move by two
    data = b"\x22" + bytes([len(MISSHAPED)]) + MISSHAPED
    with pytest.raises(ox.ProtobufDecodeError) as info:
        ox.decode_agent_run_request(data)
    assert (info.value.offset, info.value.field, info.value.wire_type) == (10, 13, 7)


def test_json_text_schema_is_not_a_value():
    # input_schema holding JSON text: '{' = 0x7b = field 15 start-group, '"' =
    # 0x22 = field 4 length-delimited whose length byte 't' = 116 overruns.
    schema_json = b'{"type":"object"}'
    definition = b"\x0a\x01a" + b"\x1a" + bytes([len(schema_json)]) + schema_json
    with pytest.raises(ox.ProtobufDecodeError) as info:
        ox.decode_mcp_tools(b"\x0a" + bytes([len(definition)]) + definition)
    assert info.value.snippet is not None and "type" in info.value.snippet


@pytest.mark.parametrize("hexdata,reason", [
    ("0a05" "0a01", "runs past the end"),           # length 5, only 2 bytes follow
    ("0a", "ends inside a varint"),
    ("0a02" "0801", "name must have wire type 2"),  # definition field 1 as a varint
    ("0a06" "0a0161" "0a0162", "appears twice"),    # name written twice
    ("0a04" "0a02c328", "UTF-8"),
    ("0c", "end-group tag without a start-group"),  # field 1 wire type 4 at top level
    ("0b", "ends inside group"),                    # start group, never closed
    ("0b14", "does not match"),                     # group 1 closed by end-group of field 2
    ("00", "field no 0"),
    ("0a03" "1a0100", "field no 0"),                # input_schema payload 00: tag 0 is illegal
])
def test_mcp_tools_decoder_errors(hexdata, reason):
    with pytest.raises(ox.ProtobufDecodeError) as info:
        ox.decode_mcp_tools(H(hexdata))
    assert reason in str(info.value)


def test_unknown_fields_are_skipped_like_protobuf_es():
    # McpTools field 2 varint 5 (10 05), then one definition with an unknown
    # field 9 fixed64 (49 + 8 bytes) and name "a" (0a 01 61): 12 bytes
    data = H("1005" "0a0c" "490102030405060708" "0a0161")
    assert ox.decode_mcp_tools(data)[0]["name"] == "a"


def test_request_context_decodes_tools_and_instructions():
    # tools (field 7, tag 3a): definition {name "a"} = 0a 01 61 (3)
    # mcp_instructions (field 14, tag 72): {server_name "s", instructions "i"}
    #   = 0a 01 73 12 01 69 (6); env (field 4, tag 22) = 22 00
    data = H("3a03" "0a0161" "7206" "0a0173" "120169" "2200")
    decoded = ox.decode_request_context(data)
    assert [tool["name"] for tool in decoded["tools"]] == ["a"]
    assert decoded["mcp_instructions"] == [{"server_name": "s", "instructions": "i"}]
    assert decoded["other_fields"] == [{"field": 4, "wire_type": 2, "offset": 13}]


# -- decode_raw ------------------------------------------------------------------


def test_decode_raw_guesses_messages_and_strings():
    fields = ox.decode_raw(H(LS_MCP_TOOLS))
    assert fields[0]["field"] == 1 and fields[0]["offset"] == 0
    definition = fields[0]["message"]
    assert definition[0] == {"field": 1, "wire_type": 2, "offset": 2, "string": "ls"}
    assert definition[1]["string"] == "List"
    assert "message" in definition[2]          # the input_schema Value
    assert definition[3]["string"] == "opencodex-responses"


def test_decode_raw_scalars_and_groups():
    # 08 96 01 = field 1 varint 150; 11 + 1.0 = field 2 fixed64;
    # 1d + 00 00 80 3f = field 3 fixed32 (1.0f); 23 08 01 24 = group 4 {1: 1};
    # 2a 02 ff fe = field 5 bytes that are neither text nor a message.
    # Offsets: 3 + 9 + 5 = 17 is the group tag 23, so its field 1 tag is at 18.
    data = H("089601" "11000000000000f03f" "1d0000803f" "23080124" "2a02fffe")
    fields = ox.decode_raw(data)
    assert fields[0]["varint"] == 150
    assert fields[1]["double"] == 1.0 and fields[1]["fixed64"] == 0x3FF0000000000000
    assert fields[2]["float"] == 1.0
    assert fields[3]["group"] == [{"field": 1, "wire_type": 0, "offset": 18, "varint": 1}]
    assert fields[4]["bytes"] == "fffe"


def test_decode_raw_errors_have_the_same_quality():
    with pytest.raises(ox.ProtobufDecodeError) as info:
        ox.decode_raw(H("0a05") + b"ab")
    assert "at byte 1" in str(info.value) and "field 1" in str(info.value)


def test_text_input_is_refused_with_a_hint():
    with pytest.raises(ox.OcxError):
        ox.decode_raw("0a00")


# -- properties ------------------------------------------------------------------

JSON_SCALARS = (st.none() | st.booleans() | st.text(max_size=8)
                | st.integers(-(2 ** 53), 2 ** 53)
                | st.floats(allow_nan=False, allow_infinity=False))
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children,
                                                                      max_size=4),
    max_leaves=20)
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def as_doubles(value):
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, list):
        return [as_doubles(item) for item in value]
    return {key: as_doubles(item) for key, item in value.items()}


@FAST
@given(JSON_VALUES)
def test_value_round_trip(value):
    assert as_doubles(ox.decode_value(ox.encode_value(value))) == as_doubles(value)


@FAST
@given(JSON_VALUES)
def test_value_truncations_always_raise(value):
    data = ox.encode_value(value)
    for cut in range(len(data)):  # a Value is one field, so every prefix is incomplete
        with pytest.raises(ox.ProtobufDecodeError):
            ox.decode_value(data[:cut])


TOOL_DICTS = st.builds(
    lambda name, description, schema: {"name": name, "description": description,
                                       "inputSchema": schema},
    st.text(min_size=1, max_size=12), st.text(max_size=20),
    st.dictionaries(st.text(max_size=6), JSON_VALUES, max_size=3))


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(TOOL_DICTS, min_size=1, max_size=3, unique_by=lambda tool: tool["name"]))
def test_mcp_tools_round_trip_and_truncations(tools):
    data = ox.encode_mcp_tools(tools)
    decoded = ox.decode_mcp_tools(data)
    assert [tool["name"] for tool in decoded] == [tool["name"] for tool in tools]
    assert [as_doubles(tool["input_schema"]) for tool in decoded] == \
        [as_doubles(tool["inputSchema"]) for tool in tools]
    # top-level fields end where the next begins: cutting there is a valid, shorter McpTools
    boundaries = set(field["offset"] for field in ox.decode_raw(data))
    boundaries.add(len(data))
    for cut in range(1, len(data)):
        if cut in boundaries:
            assert len(ox.decode_mcp_tools(data[:cut])) < len(tools)
        else:
            with pytest.raises(ox.ProtobufDecodeError):
                ox.decode_mcp_tools(data[:cut])


DECODERS = [ox.decode_raw, ox.decode_mcp_tools, ox.decode_value, ox.decode_agent_run_request,
            ox.decode_request_context]
# Random bytes rarely look like protobuf; mixing in plausible tags and small
# lengths reaches the deeper paths (groups, nested definitions, Values).
PROTOBUFISH = st.lists(
    st.sampled_from([0x08, 0x0A, 0x0B, 0x0C, 0x11, 0x12, 0x1A, 0x1D, 0x20, 0x22, 0x2A, 0x32,
                     0x3A, 0x72, 0x00, 0x01, 0x02, 0x03, 0x04, 0x80, 0xFF, 0x6F, 0x63])
    | st.integers(0, 255), max_size=60).map(bytes)


@settings(max_examples=300, deadline=2000)
@given(st.binary(max_size=120) | PROTOBUFISH)
def test_random_bytes_decode_or_raise_the_modules_error(data):
    for decoder in DECODERS:
        try:
            decoder(data)
        except ox.ProtobufDecodeError:
            pass


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(TOOL_DICTS, min_size=1, max_size=3), st.data())
def test_mutated_messages_decode_or_raise(tools, draw):
    data = bytearray(ox.encode_mcp_tools(tools))
    index = draw.draw(st.integers(0, len(data) - 1))
    data[index] = draw.draw(st.integers(0, 255))
    for decoder in DECODERS:
        try:
            decoder(bytes(data))
        except ox.ProtobufDecodeError:
            pass


# -- decode CLI -----------------------------------------------------------------


def test_cli_decode_hex_from_stdin():
    result = run_proxy("decode", stdin=LS_MCP_TOOLS.encode() + b"\n")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)[0]["input_schema"] == LS_SCHEMA


@pytest.mark.parametrize("fmt,payload", [
    ("raw", H(LS_MCP_TOOLS)),
    ("base64", __import__("base64").b64encode(H(LS_MCP_TOOLS))),
    ("auto", __import__("base64").b64encode(H(LS_MCP_TOOLS))),
    ("auto", H(LS_MCP_TOOLS)),
])
def test_cli_decode_formats(fmt, payload):
    result = run_proxy("decode", "--format", fmt, stdin=payload)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)[0]["name"] == "ls"


def test_cli_decode_reproduces_field_13_wire_type_7():
    result = run_proxy("decode", "--as", "mcp-tools", stdin=MISSHAPED.hex().encode())
    text = assert_one_line_error(result)
    assert "field no 13 wire type 7" in text and "byte 8" in text and '"exec_command"' in text


def test_cli_decode_agent_run_request_notes_the_empty_wrapper():
    result = run_proxy("decode", "--as", "agent-run-request", stdin=b"2200")
    assert result.returncode == 0
    assert json.loads(result.stdout)["mcp_tools"] == []
    assert b"suppressed" in result.stderr


def test_cli_decode_raw_and_value(tmp_path):
    path = tmp_path / "v.bin"
    path.write_bytes(H(NESTED))
    result = run_proxy("decode", str(path), "--as", "value", "--format", "raw")
    assert json.loads(result.stdout) == {"a": {"b": [1, "x"]}}
    result = run_proxy("decode", str(path), "--as", "raw", "--format", "raw")
    assert json.loads(result.stdout)[0]["field"] == 5


@pytest.mark.parametrize("args,stdin", [
    (["--format", "hex"], b"0a0"),             # odd number of digits
    (["--format", "hex"], b"zz"),
    (["--format", "base64"], b"!!!"),
    (["--as", "value"], b""),                  # empty Value
    (["--as", "raw"], b"0a05"),                # truncated
    (["/nonexistent/blob.bin"], b""),
])
def test_cli_decode_bad_input_is_one_line(args, stdin):
    assert_one_line_error(run_proxy("decode", *args, stdin=stdin))


def test_cli_decode_bad_usage_exits_2():
    result = run_proxy("decode", "--as", "nope")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr.decode()


# -- bounds: input size, decoded fields, output written as it is made ------------------


@pytest.mark.parametrize("decoder,blob,fields", [
    (ox.decode_mcp_tools, b"\x0a\x00" * 10, 10),                     # ten empty tools
    (ox.decode_request_context, b"\x3a\x00" * 10, 10),
    (ox.decode_agent_run_request, H("2214") + b"\x0a\x00" * 10, 11),  # field 4 counts too
    (ox.decode_value, H("3228") + H("0a020800") * 10, 21),             # list_value, 10 x (entry, null)
    (ox.decode_raw, b"\x08\x00" * 10, 10),
])
def test_decoders_stop_at_max_fields(decoder, blob, fields):
    decoder(blob, max_fields=fields)
    with pytest.raises(ox.DecodeLimitError) as info:
        decoder(blob, max_fields=fields - 1)
    assert "more than %d fields" % (fields - 1) in str(info.value) and "--max-fields" in str(info.value)
    assert not isinstance(info.value, ox.ProtobufDecodeError)  # never mistaken for "not a message"


def test_decode_raw_does_not_charge_a_guess_it_drops():
    # field 1 holds 08 00 08 00 07: two fields, then an illegal tag, so it is shown as text
    blob = H("0a05") + H("0800080007") + H("0800")
    assert [sorted(field) for field in ox.decode_raw(blob, max_fields=3)] == \
        [["field", "offset", "string", "wire_type"], ["field", "offset", "varint", "wire_type"]]


def test_cli_decode_field_limit(tmp_path):
    path = tmp_path / "tools.bin"
    path.write_bytes(b"\x0a\x00" * 1001)
    text = assert_one_line_error(run_proxy("decode", str(path), "--max-fields", "1000"))
    assert "more than 1000 fields" in text and "--max-fields" in text
    result = run_proxy("decode", str(path), "--max-fields", "1001")
    assert result.returncode == 0 and len(json.loads(result.stdout)) == 1001


def test_cli_decode_input_limit():
    text = assert_one_line_error(run_proxy("decode", "--max-input-bytes", "4", stdin=b"0a00" + b"\n"))
    assert "standard input is larger than 4 bytes" in text and "--max-input-bytes" in text
    assert run_proxy("decode", "--max-input-bytes", "4", stdin=b"0a00").returncode == 0


@pytest.mark.skipif(not __import__("os").path.exists("/dev/zero"), reason="needs /dev/zero")
@pytest.mark.parametrize("args", [["/dev/zero"], ["-", "--format", "raw"]])
def test_cli_decode_stops_reading_an_endless_input_at_the_default_cap(args):
    with open("/dev/zero", "rb") as zero:
        result = subprocess.run([sys.executable, PROXY, "decode"] + args, stdin=zero,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    text = assert_one_line_error(result)
    assert "larger than %d bytes" % ox.MAX_INPUT_BYTES in text


def written_json(value, capsysbinary):
    ox.write_json_output(value)
    return capsysbinary.readouterr().out


LONG_STRINGS = st.sampled_from(["\x00\x01\"\\\n" * 20000, "\U0001F600" * 70000, "x" * 65537])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(JSON_VALUES | st.lists(LONG_STRINGS, max_size=2) | st.dictionaries(LONG_STRINGS, JSON_VALUES, max_size=1))
def test_cli_output_is_exactly_json_dumps_indent_2(capsysbinary, value):
    expected = (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    assert written_json(value, capsysbinary) == expected


def test_cli_output_refuses_non_finite_numbers(capsysbinary):
    with pytest.raises(ValueError):
        written_json([float("nan")], capsysbinary)
