"""Spill reading: path queries of a spilled JSON text (parse_json_path, JSON_PATH_PROGRAM, the reader's path)."""
import json
import re

import pytest
from hypothesis import given, settings, strategies as st

import ocx_proxy as op

# -- the path grammar ----------------------------------------------------------

GOLDEN_PATHS = [
    ("$", []),
    ("$.items", [["key", "items"]]),
    ('$["a b"]', [["key", "a b"]]),
    ("$['a.b']", [["key", "a.b"]]),
    ('$["\\u00e9\\""]', [["key", 'é"']]),
    ("$.é_1", [["key", "é_1"]]),
    ("$[0]", [["index", 0]]),
    ("$[-1]", [["index", -1]]),
    ("$[10:20]", [["slice", 10, 20]]),
    ("$[:3]", [["slice", None, 3]]),
    ("$[-2:]", [["slice", -2, None]]),
    ("$[ : ]", [["slice", None, None]]),
    ("$[*]", [["all"]]),
    ("$.*", [["all"]]),
    ("$..name", [["descend", "name"]]),
    ("$.items[10:20].name", [["key", "items"], ["slice", 10, 20], ["key", "name"]]),
    ("$..a[0]..b", [["descend", "a"], ["index", 0], ["descend", "b"]]),
]

BAD_PATHS = [
    ("", "a path starts with $"),
    ("items[0]", "a path starts with $"),
    ("$.", "from character 2"),
    ("$..", "from character 2"),
    ("$[", "from character 2"),
    ("$[1:2:3]", "from character 2"),
    ("$[abc]", "from character 2"),
    ('$["a]', "from character 2"),
    ('$["\\x"]', "not a JSON string"),
    ("$.a b", "from character 4"),
    ("$.1a", "from character 2"),
    ("$[%d]" % (10 ** 13), "numbers in [ ]"),
    ("$" + ".a" * 600, "at most 1000 characters"),
]


@pytest.mark.parametrize("path,steps", GOLDEN_PATHS)
def test_golden_paths(path, steps):
    assert op.parse_json_path(path) == steps


@pytest.mark.parametrize("path,message", BAD_PATHS)
def test_a_bad_path_is_a_value_error_saying_where(path, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        op.parse_json_path(path)


def test_a_path_must_be_a_string():
    with pytest.raises(ValueError, match="path must be a string"):
        op.parse_json_path(5)


names = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)
numbers = st.integers(-op.READER_MAX_NUMBER, op.READER_MAX_NUMBER)
steps = st.lists(st.one_of(
    st.tuples(st.just("key"), names), st.tuples(st.just("index"), numbers),
    st.tuples(st.just("slice"), st.none() | numbers, st.none() | numbers), st.just(("all",)),
    st.tuples(st.just("descend"), st.from_regex(op._PATH_NAME_RE.pattern[:-2] + r"\Z", fullmatch=True)),
).map(list), max_size=6)


@given(steps)
def test_a_written_path_reads_back_as_the_same_steps(path_steps):
    assert op.parse_json_path(op.json_path_text(path_steps)) == path_steps


@given(st.text(max_size=30))
@settings(max_examples=300)
def test_any_text_is_steps_or_a_value_error(text):
    try:
        parsed = op.parse_json_path(text)
    except ValueError:
        return
    assert op.parse_json_path(op.json_path_text(parsed)) == parsed


# -- queries through a real relay -----------------------------------------------

DOC = ('{"items": [{"id": 1, "name": "a", "price": 1.50}, {"id": 2, "name": "bé", "price": 1E+2},'
       ' {"id": 12345678901234567890123, "name": "c", "price": -0.0}], "total": 3, "a b": {"name": [true, null]}}')


def spill_json(relay, text):
    """Spill a tool result whose text is ``text``; the spill id."""
    relay.request("tools/list")
    line = json.dumps({"jsonrpc": "2.0", "id": "__ID__", "result": {"content": [{"type": "text", "text": text}]}})
    reply = relay.call("raw", {"line": line.replace('"__ID__"', "__ID__")})
    note = reply["result"]["content"][0]["text"]
    return re.search(r'read_spilled_output tool of this server returns it in pages, id="([^"]+)"', note).group(1)


def query(relay, spill_id, **arguments):
    result = relay.call("read_spilled_output", dict(arguments, id=spill_id), timeout=30)["result"]
    return result, result["content"][0]["text"], result["content"][-1]["text"]


PADDED = DOC + " " * 12000  # over the budget of the generic profile


@pytest.mark.parametrize("path,expected", [
    ("$.items[*].name", '$.items[0].name: "a"\n$.items[1].name: "bé"\n$.items[2].name: "c"\n'),
    ("$.items[*].price", "$.items[0].price: 1.50\n$.items[1].price: 1E+2\n$.items[2].price: -0.0\n"),
    ("$.items[2].id", "$.items[2].id: 12345678901234567890123\n"),
    ("$.items[-1:].id", "$.items[2].id: 12345678901234567890123\n"),
    ("$.items[1]", '$.items[1]: {"id":2,"name":"bé","price":1E+2}\n'),
    ('$["a b"]', '$["a b"]: {"name":[true,null]}\n'),
    ("$..name", '$.items[0].name: "a"\n$.items[1].name: "bé"\n$.items[2].name: "c"\n'
                '$["a b"].name: [true,null]\n'),
    ("$.total", "$.total: 3\n"),
])
def test_a_path_lists_the_values_as_written(relay_factory, path, expected):
    relay = relay_factory()
    relay.initialize()
    spill_id = spill_json(relay, PADDED)
    result, text, hint = query(relay, spill_id, path=path)
    assert "isError" not in result, text
    assert (text, hint) == (expected, "[no more matches]")
    assert relay.close() == 0


def test_outline_describes_a_node(relay_factory):
    relay = relay_factory()
    relay.initialize()
    spill_id = spill_json(relay, PADDED)
    pretty = op.pretty_json(PADDED).encode()  # the .txt: sizes are its bytes
    items = pretty.index(b"["), pretty.index(b"],") + 1
    firsts = [pretty.index(b"{", items[0]), pretty.index(b"{", pretty.index(b"},") + 1),
              pretty.index(b"{", pretty.index(b"},", pretty.index(b"},") + 1) + 1)]
    sizes = [pretty.index(b"}", first) + 1 - first for first in firsts]
    inner = pretty.index(b"{", pretty.index(b"\"a b\"")), len(pretty.rstrip()) - 2
    _, text, _ = query(relay, spill_id, outline=True)
    assert text == ("$: object, 3 keys, %d bytes\n  .items: array, 3 items, %d bytes\n  .total: number 3\n"
                    '  ["a b"]: object, 1 keys, %d bytes\n' % (len(pretty.rstrip()), items[1] - items[0],
                                                               inner[1] - inner[0]))
    _, text, _ = query(relay, spill_id, path="$.items", outline=True)
    assert text == ("$.items: array, 3 items, %d bytes\n  [0]: object, 3 keys, %d bytes\n"
                    "  [1]: object, 3 keys, %d bytes\n  [2]: object, 3 keys, %d bytes\n"
                    % tuple([items[1] - items[0]] + sizes))
    _, text, _ = query(relay, spill_id, path="$.items[1].name", outline=True)
    assert text == '$.items[1].name: string, 2 chars: "bé"\n'
    _, text, _ = query(relay, spill_id, path="$.items[*].price", outline=True)
    assert text == "$.items[0].price: number 1.50\n$.items[1].price: number 1E+2\n$.items[2].price: number -0.0\n"
    assert relay.close() == 0


def test_bad_paths_and_texts_are_clean_tool_errors(relay_factory):
    relay = relay_factory()
    relay.initialize()
    spill_id = spill_json(relay, PADDED)
    for arguments, message in [({"path": "items"}, "a path starts with $"),
                               ({"path": "$.a b"}, "from character 4"),
                               ({"path": 5}, "path must be a string"),
                               ({"path": "$", "pattern": "x"}, "pattern or path, not both"),
                               ({"path": "$", "outline": "yes"}, "outline must be true or false")]:
        result, text, _ = query(relay, spill_id, **arguments)
        assert result.get("isError") is True and message in text, (arguments, text)
    result, text, hint = query(relay, spill_id, path="$.nothing")
    assert "isError" not in result and text == "" and hint == "[nothing matches $.nothing]"
    plain = spill_json(relay, "not json " * 3000)
    result, text, _ = query(relay, plain, path="$")
    assert result.get("isError") is True and "not a JSON object or array" in text
    cut = spill_json(relay, '{"a": [1, 2, ' + "3, " * 5000 + "}")
    result, text, _ = query(relay, cut, path="$.z")  # found out when the walk gets there
    assert result.get("isError") is True and "bad JSON: no ',' nor '}' at byte" in text, text
    assert relay.request("ping")[0]["result"] == {}
    assert relay.close() == 0
    assert "Traceback" not in relay.stderr


def test_pages_of_a_path_query_give_every_value_once(relay_factory):
    relay = relay_factory()
    relay.initialize()
    # 1,200 values, 3 pages: each page walks the items before it again (about 0.2 ms an item here, quiet)
    items = [{"n": n, "text": "x" * (n % 50)} for n in range(1200)]
    spill_id = spill_json(relay, json.dumps({"items": items}))
    got, arguments = [], {"path": "$.items[*].n"}
    for _ in range(100):
        result, text, hint = query(relay, spill_id, **arguments)
        assert "isError" not in result and len(json.dumps(result)) <= op.MAX_RESPONSE_CHARS
        got.append(text)
        if hint == "[no more matches]":
            break
        arguments = dict(arguments, line=int(re.search(r"line=(\d+)", hint).group(1)))
        assert ", path=\"$.items[*].n\")]" in hint
    assert len(got) >= 3 and "".join(got) == "".join("$.items[%d].n: %d\n" % (n, n) for n in range(1200))
    assert relay.close() == 0


def test_a_long_value_is_paged_by_column(relay_factory):
    relay = relay_factory()
    relay.initialize()
    spill_id = spill_json(relay, json.dumps({"s": "y" * 30000}))
    got, arguments = [], {"path": "$.s"}
    for _ in range(20):
        result, text, hint = query(relay, spill_id, **arguments)
        got.append(text)
        if "[next:" not in hint:
            break
        line, column = re.search(r"line=(\d+), column=(\d+)", hint).groups()
        arguments = dict(arguments, line=int(line), column=int(column))
    assert "".join(got) == '$.s: "%s"\n' % ("y" * 30000)
    assert relay.close() == 0


@pytest.mark.parametrize("client_name", sorted(
    name for entry in op.CLIENTS.values() if entry.profile for name in entry.profile.client_names))
def test_a_path_answer_fits_every_client_budget(relay_factory, client_name):
    relay = relay_factory()
    relay.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": client_name, "version": "1"}}, msg_id=1)
    relay.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    profile = op.client_profile(op.client_for_info_name(client_name))
    items = [{"name": "名前%d" % n, "price": "%d.10" % n} for n in range(20000)]
    spill_id = spill_json(relay, json.dumps({"items": items}, ensure_ascii=False))
    for arguments in ({"path": "$.items[*]"}, {"path": "$..name"}, {"outline": True, "path": "$.items"}):
        result, text, _ = query(relay, spill_id, **arguments)
        answer = json.dumps({"jsonrpc": "2.0", "id": 1, "result": result}, ensure_ascii=False, separators=(",", ":"))
        assert "isError" not in result and text
        assert len(answer) <= profile.budget_chars, (arguments, len(answer))
        assert not profile.budget_bytes or len(answer.encode()) <= profile.budget_bytes
        assert "ocx-proxy/spill" not in json.dumps(result)
    assert relay.close() == 0


def test_an_outline_counts_big_arrays_and_objects_and_says_it_ended(relay_factory):
    """A member over a walk chunk (64 KiB) was "array, N bytes" with no count; an outline is not a
    search, so its last page says it ended, not that nothing else matched."""
    relay = relay_factory()
    relay.initialize()
    rows = [{"n": n, "name": "row %d" % n} for n in range(5000)]
    keyed = {"k%d" % n: n for n in range(6000)}
    spill_id = spill_json(relay, json.dumps({"items": rows, "keyed": keyed, "s": "é" * 70000}))
    result, text, hint = query(relay, spill_id, outline=True)
    assert "isError" not in result, text
    lines = text.split("\n")
    assert lines[1].startswith("  .items: array, 5000 items, ") and lines[1].endswith(" bytes"), lines[1]
    assert lines[2].startswith("  .keyed: object, 6000 keys, "), lines[2]
    assert lines[3].startswith("  .s: string, 70000 chars: "), lines[3]
    assert hint == "[end of the outline]"
    _, text, hint = query(relay, spill_id, path="$.items", outline=True)
    assert text.startswith("$.items: array, 5000 items, ") and hint == "[end of the outline]"
    assert relay.close() == 0
