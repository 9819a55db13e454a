"""JSON-RPC framing: lines, messages, envelopes."""
import json

import pytest
from hypothesis import given, strategies as st

import ocx_proxy as op


def test_line_splitter_handles_partial_lines_and_crlf():
    splitter = op.LineSplitter()
    assert splitter.feed(b'{"a":1}\r\n{"b"') == [b'{"a":1}']
    assert splitter.feed(b":2}\n\n") == [b'{"b":2}', b""]
    assert splitter.pending() == b""
    assert splitter.feed(b"tail") == [] and splitter.pending() == b"tail"


@given(st.lists(st.binary(max_size=30).map(lambda b: b.replace(b"\n", b"").replace(b"\r", b"")), max_size=20),
       st.lists(st.integers(min_value=1, max_value=50), min_size=1, max_size=30), st.booleans())
def test_line_splitter_is_independent_of_chunking(lines, cuts, crlf):
    end = b"\r\n" if crlf else b"\n"
    stream = b"".join(line + end for line in lines)
    splitter = op.LineSplitter()
    out, pos, i = [], 0, 0
    while pos < len(stream):
        size = cuts[i % len(cuts)]
        out.extend(splitter.feed(stream[pos:pos + size]))
        pos += size
        i += 1
    assert out == lines and splitter.pending() == b""


def test_encode_message_is_compact_utf8_single_line():
    line = op.encode_message({"a": "é\n数", "b": [1, 2]})
    assert line == '{"a":"é\\n数","b":[1,2]}\n'.encode("utf-8")
    assert line.count(b"\n") == 1


def test_message_kind():
    assert op.message_kind({"jsonrpc": "2.0", "id": 1, "method": "x"}) == "request"
    assert op.message_kind({"jsonrpc": "2.0", "method": "x"}) == "notification"
    assert op.message_kind({"jsonrpc": "2.0", "id": 1, "result": {}}) == "response"
    assert op.message_kind({"jsonrpc": "2.0", "id": 1, "error": {}}) == "response"
    assert op.message_kind({"foo": 1}) is None and op.message_kind([1]) is None


def test_response_shapes():
    assert op.error_response(None, -32700, "Parse error") == {
        "jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
    assert op.encode_message(op.result_response("7", {})) == b'{"jsonrpc":"2.0","id":"7","result":{}}\n'


def test_child_environment_is_minimal_by_default():
    # PATH is passed on both platforms; the second safe name is HOME on POSIX, USERPROFILE on Windows.
    home = "USERPROFILE" if "USERPROFILE" in op.SAFE_ENV else "HOME"
    environ = {"PATH": "/bin", home: "/h", "AWS_SECRET_ACCESS_KEY": "s", "BASH_FUNC_x": "() { :; }",
               "PATHEXT": "() { evil; }", "SHELL": "() { evil; }"}
    env = op.child_environment(["X=${%s}/y" % home], environ=environ)
    assert env == {"PATH": "/bin", home: "/h", "X": "/h/y", "PYTHONIOENCODING": "utf-8"}
    assert op.child_environment([], pass_environment=True, environ=environ)["AWS_SECRET_ACCESS_KEY"] == "s"
    with pytest.raises(op.UsageError):
        op.child_environment(["novalue"], environ=environ)


def test_a_python_server_is_told_to_write_utf8_unless_the_user_said_otherwise():
    assert op.child_environment([], environ={})["PYTHONIOENCODING"] == "utf-8"
    assert op.child_environment(["PYTHONIOENCODING=cp1252"], environ={})["PYTHONIOENCODING"] == "cp1252"
    mine = {"PYTHONIOENCODING": "latin-1"}
    assert op.child_environment([], pass_environment=True, environ=mine)["PYTHONIOENCODING"] == "latin-1"
    assert op.child_environment([], environ=mine)["PYTHONIOENCODING"] == "utf-8"   # not a safe name: not passed


# -- peek_envelope: routing fields without parsing the rest ---------------------

_json_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                       st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
                       | st.sampled_from(['"', '\\', '\\"', '\\\\"', '{"a":"b"}', "]}", "\u2028"]))
_json_value = st.recursive(_json_leaf, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=20)


@given(st.dictionaries(st.sampled_from(["jsonrpc", "id", "method", "result", "error", "params", "x\"y"]),
                       _json_value, max_size=6), st.booleans(), st.booleans())
def test_peek_envelope_agrees_with_a_full_parse(obj, spaced, ascii_only):
    separators = (", ", ": ") if spaced else (",", ":")
    line = json.dumps(obj, separators=separators, ensure_ascii=ascii_only).encode("utf-8")
    envelope = op.peek_envelope(line)
    assert envelope is not None
    assert envelope.kind() == op.message_kind(obj)
    assert envelope.has_id == ("id" in obj)
    valid = "id" in obj and (obj["id"] is None or isinstance(obj["id"], (str, int, float))) \
        and not isinstance(obj["id"], bool)
    assert envelope.has_valid_id == valid
    if valid:
        assert envelope.id == obj["id"]
    assert envelope.method == (obj["method"] if isinstance(obj.get("method"), str) else None)
    assert envelope.has_result == ("result" in obj) and envelope.has_error == ("error" in obj)


def test_peek_envelope_reads_the_id_past_what_json_cannot_parse():
    deep = b'{"jsonrpc":"2.0","params":' + b"[" * 100000 + b"]" * 100000 + b',"id":3,"method":"x"}'
    assert op.peek_envelope(deep).id == 3 and op.peek_envelope(deep).kind() == "request"
    nul = b'{"jsonrpc":"2.0","result":{"t":"a\x00b"},"id":"7"}'
    assert op.peek_envelope(nul).id == "7" and op.peek_envelope(nul).kind() == "response"
    huge = b'{"id":5,"result":1' + b"9" * 5000 + b"}"
    assert op.peek_envelope(huge).id == 5
    escaped = json.dumps({"result": {"text": '{"k":"v\\\\"}' * 5000}, "id": 8}).encode()
    assert op.peek_envelope(escaped).id == 8


@pytest.mark.parametrize("line", [b"", b"  ", b"[1]", b'"s"', b"{", b'{"id"', b'{"id":1', b'{"id":1 "x":2}',
                                  b'{"a":"unterminated}', b'{"a":[1,2}', b"{1:2}"])
def test_peek_envelope_refuses_what_is_not_an_object(line):
    envelope = op.peek_envelope(line)
    assert envelope is None or not envelope.has_id


def feed_in_chunks(splitter, data, size=65536):
    out = []
    for start in range(0, len(data), size):
        out.extend(splitter.feed(data[start:start + size]))
    return out


def test_line_splitter_drops_a_line_over_the_cap_as_it_comes():
    cap = 100000
    splitter = op.LineSplitter(cap)
    big = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"t":"' + b"z" * 1000000 + b'"}}'
    out = []
    held = 0
    for start in range(0, len(big), 4096):
        out.extend(splitter.feed(big[start:start + 4096]))
        held = max(held, sum(map(len, splitter.chunks)))
    assert held <= cap and out == []
    out = splitter.feed(b'\r\n{"id":8}\n')
    assert out[1] == b'{"id":8}'
    line = out[0]
    assert isinstance(line, op.OversizedLine) and line.size == len(big)
    assert len(line.head) == op.OversizedLine.KEEP and len(line.tail) >= op.OversizedLine.KEEP - 1  # minus the CR
    assert big.startswith(line.head) and big.endswith(line.tail)
    envelope = line.envelope()
    assert envelope.id == 7 and envelope.method == "tools/call"


def test_line_splitter_cap_applies_to_a_line_inside_one_chunk_and_at_the_end():
    splitter = op.LineSplitter(1024)
    out = splitter.feed(b"a" * 1024 + b"\n" + b"b" * 1025 + b"\nc\n")
    assert out[0] == b"a" * 1024 and out[2] == b"c"
    assert isinstance(out[1], op.OversizedLine) and out[1].size == 1025
    assert splitter.feed(b"d" * 3000) == []
    (tail,) = splitter.finish()
    assert isinstance(tail, op.OversizedLine) and tail.size == 3000
    assert splitter.finish() == [] and splitter.feed(b"e\n") == [b"e"]


@pytest.mark.parametrize("line, expected", [
    (b'{"jsonrpc":"2.0","result":{"t":"%s"},"id":12}', 12),
    (b'{"jsonrpc":"2.0","result":{"t":"%s"},"id":"a\\"b" } ', 'a"b'),
    (b'{"jsonrpc":"2.0","id":-3,"result":{"t":"%s"}}', -3),
    (b'{"jsonrpc":"2.0","result":{"t":"%s","id":5}}', None),         # nested: not the top-level id
    (b'{"jsonrpc":"2.0","result":{"t":"%s"},"id":9,"x":1}', None),   # in the middle: lost
])
def test_oversized_line_recovers_the_id_at_either_end(line, expected):
    splitter = op.LineSplitter(1024)
    (out,) = feed_in_chunks(splitter, line.replace(b"%s", b"q" * 200000) + b"\n")
    envelope = out.envelope()
    assert envelope.id == expected and envelope.has_valid_id == (expected is not None)


def test_char_count_counts_code_points_without_decoding():
    for text in ("", "ascii", "é数😀" * 1000, "x" * (1 << 20) + "é" + "😀" * 300000):
        data = text.encode("utf-8")
        assert op.char_count(data) == len(text)


# -- what the relay reads and writes is JSON, whatever a peer sends ----------------------

def test_parse_message_refuses_what_is_not_json_with_a_value_error():
    for line in (b'{"a":NaN}', b'{"a":-Infinity}', b"[" * 100000 + b"]" * 100000, b'{"a":"\xff"}', b"{"):
        with pytest.raises(ValueError):
            op.parse_message(line)
    assert op.parse_message(b'{"a":1e999}')["a"] == float("inf")  # a JSON number; dumps refuses to write it


def test_long_integers_are_kept_exact_and_written_back_as_they_came():
    digits = b"7" * 5000
    line = b'{"jsonrpc":"2.0","id":1,"result":{"n":' + digits + b',"m":[-' + digits + b',"\\u0000L0"]}}'
    msg = op.parse_message(line, long_numbers=True)
    assert op.message_kind(msg) == "response" and msg["id"] == 1
    number = msg["result"]["n"]
    if isinstance(number, op.LongNumber):  # int() refuses 4,300 digits and more (3.11; 3.8-3.10 security releases)
        assert number.text == digits.decode()
        with pytest.raises(ValueError):
            op.parse_message(b"[" + digits + b"]")
    else:  # older patch releases have no limit
        assert number == int(digits)
    assert op.encode_message(msg) == line + b"\n"
    pretty = op.dumps(msg, indent=2)
    assert pretty.count("\n") > 5 and op.dumps(op.parse_text(pretty, long_numbers=True)) == line.decode()


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), object()])
def test_dumps_never_writes_what_json_cannot_hold(value):
    with pytest.raises((ValueError, TypeError)):
        op.encode_message({"x": [value]})


def test_invalid_ids_make_no_message_and_match_nothing():
    for bad in ({}, [1], True, False, float("inf"), float("nan")):
        assert not op.valid_id(bad)
        assert op.message_kind({"jsonrpc": "2.0", "id": bad, "method": "ping"}) is None
        assert op.message_kind({"jsonrpc": "2.0", "id": bad, "result": {}}) is None
        assert op.id_key(bad) != op.id_key(bad) and {op.id_key(bad): 1}.get(op.id_key(bad)) is None
    for good in (None, 0, -3, 1.5, "1", ""):
        assert op.valid_id(good) and op.id_key(good) == op.id_key(good)
    assert op.id_key(1) != op.id_key("1") and op.id_key(True) != op.id_key(1)
    for raw in (b"NaN", b"1e999", b"true", b"{}", b"[1]"):
        envelope = op.peek_envelope(b'{"id":' + raw + b',"method":"x"}')
        assert envelope.has_id and not envelope.has_valid_id and envelope.kind() is None


def test_an_integer_id_of_any_length_is_an_id():
    digits = "9" * 5000
    line = ('{"jsonrpc":"2.0","id":-%s,"method":"ping"}' % digits).encode()
    msg = op.parse_message(line, long_numbers=True)
    assert op.message_kind(msg) == "request"
    same = op.parse_message(line, long_numbers=True)["id"]
    assert op.id_key(msg["id"]) == op.id_key(same) and {op.id_key(msg["id"]): 1}[op.id_key(same)] == 1
    assert op.id_key(msg["id"]) != op.id_key("-" + digits)
    envelope = op.peek_envelope(line)
    assert envelope.kind() == "request" and op.id_key(envelope.id) == op.id_key(msg["id"])
    assert op.encode_message(op.error_response(envelope.id, -32600, "x")).startswith(b'{"jsonrpc":"2.0","id":-' + digits.encode() + b",")


@pytest.mark.parametrize("method", [["tools/call"], {"m": 1}, 5, None, True])
def test_a_method_that_is_not_a_string_makes_no_message(method):
    for msg in ({"jsonrpc": "2.0", "id": 1, "method": method}, {"jsonrpc": "2.0", "method": method}):
        assert op.message_kind(msg) is None
        assert op.peek_envelope(json.dumps(msg).encode()).kind() is None


def test_peek_envelope_partial_keeps_the_id_of_a_broken_line():
    for line in (b'{"jsonrpc":"2.0","id":17,"result":{"text":"cut sho', b'{"id":17 "x":2}', b'{"id":17,"result":tru'):
        assert op.peek_envelope(line) is None
        envelope = op.peek_envelope(line, partial=True)
        assert envelope.has_valid_id and envelope.id == 17 and not envelope.has_method
    assert op.peek_envelope(b'{"id":1,"id":{}}').has_valid_id is False  # the last one counts, as for json


def _nested(rnd, depth, budget):
    roll = rnd.random()
    if depth > 12 or roll < 0.3 or budget[0] <= 0:
        budget[0] -= 1
        return rnd.choice([1, -2.5, None, True, "s{[", 'q\\"]}', "é数", "}", "\\", "a" * rnd.randint(0, 5000)])
    if roll < 0.65:
        return [_nested(rnd, depth + 1, budget) for _ in range(rnd.randint(0, 8))]
    return {"k%d" % i: _nested(rnd, depth + 1, budget) for i in range(rnd.randint(0, 8))}


def test_peek_envelope_skips_big_containers_a_chunk_at_a_time():
    import random

    rnd = random.Random(10)
    chunked = 0
    for n in range(40):
        obj = {"result": _nested(rnd, 0, [rnd.randint(200, 3000)]), "jsonrpc": "2.0", "id": n}
        line = json.dumps(obj, ensure_ascii=n % 2 == 0).encode("utf-8")
        chunked += len(line) > 2 * op._SKIP_CHUNK
        envelope = op.peek_envelope(line)
        assert envelope.id == n and envelope.kind() == "response"
        start = len(b'{"result": ')
        assert json.loads(line[start:op._value_end(line, start)]) == obj["result"]
    assert chunked >= 10
    deep = b'{"params":' + b"[" * 300000 + b"]" * 300000 + b',"id":3,"method":"x"}'
    assert op.peek_envelope(deep).id == 3
    assert op.peek_envelope(deep[:-30] + b"]}") is None


@given(st.lists(_json_value, max_size=6), st.booleans())
def test_split_array_keeps_each_member_s_bytes(items, spaced):
    line = json.dumps(items, separators=(", ", ": ") if spaced else (",", ":")).encode("utf-8")
    members = op.split_array(line)
    assert [json.loads(member) for member in members] == items


@pytest.mark.parametrize("line", [b"", b"{}", b"[", b"[1,]", b"[,1]", b"[1 2]", b"[1]x", b'["a]'])
def test_split_array_refuses_what_is_not_an_array(line):
    assert op.split_array(line) is None


def test_relayable_unparsed():
    assert op.relayable_unparsed('{"a":"é\t数","b":[1e999]}'.encode("utf-8"))
    for line in (b'{"a":"\x00"}', b'{"a":"\x1f"}', b'{"a":NaN}', b'{"a":-Infinity}', b'{"a":"NaN"}',
                 b'{"a":"\xc3"}', b'{"a":"\xed\xa0\x80"}', "é".encode("utf-8") * 600000 + b"\xff"):
        assert not op.relayable_unparsed(line)
