"""The argument check (section "Argument check"): each keyword it asserts against expectations written by hand
(hypothesis), golden findings, and what it must never refuse: what it does not understand."""
import re
import string
import subprocess

from hypothesis import example, given, settings, strategies as st

import ocx_proxy as op

scalars = (st.none() | st.booleans() | st.integers(-1000, 1000)
           | st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False) | st.text(max_size=6))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(string.ascii_lowercase, max_size=3), inner, max_size=4), max_leaves=10)
small = st.integers(0, 5)


def fits(schema, value):
    found = op.SchemaCheck(schema).findings(value)
    assert found is not None, "the check could not tell"
    return found == []


def texts(schema, value):
    return op.finding_texts(op.SchemaCheck(schema).findings(value))


# The expectations, by hand: what JSON Schema says a value is.

def kind(value):
    if value is None:
        return "null"
    if value is True or value is False:
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value == int(value) else "number"
    return {str: "string", list: "array", dict: "object"}[type(value)]


def is_number(value):
    return kind(value) in ("integer", "number")


def same(a, b):
    """JSON equality: 1 == 1.0, true != 1, objects whatever their order."""
    if is_number(a) and is_number(b):
        return a == b
    if kind(a) != kind(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


# -- what a value itself must be ---------------------------------------------------------------------------------

TYPES = ["null", "boolean", "integer", "number", "string", "array", "object"]


@given(st.sampled_from(TYPES), values)
def test_type(name, value):
    expected = kind(value) == name or name == "number" and kind(value) == "integer"
    assert fits({"type": name}, value) == expected


@given(st.lists(st.sampled_from(TYPES), min_size=1, max_size=3), values)
def test_type_list(names, value):
    expected = kind(value) in names or "number" in names and kind(value) == "integer"
    assert fits({"type": names}, value) == expected


@given(st.sampled_from(TYPES), values)
def test_nullable_lets_null_through(name, value):
    expected = value is None or kind(value) == name or name == "number" and kind(value) == "integer"
    assert fits({"type": name, "nullable": True}, value) == expected


@given(st.lists(scalars, min_size=1, max_size=4), values)
def test_enum(allowed, value):
    assert fits({"enum": allowed}, value) == any(same(value, item) for item in allowed)


@given(values, values)
def test_const(wanted, value):
    assert fits({"const": wanted}, value) == same(value, wanted)


def test_json_equality_in_enum_and_const():
    assert fits({"const": 1}, 1.0) and not fits({"const": 1}, True) and not fits({"const": True}, 1)
    assert fits({"enum": [{"a": 1, "b": [2.0]}]}, {"b": [2], "a": 1.0})
    assert not fits({"enum": [0, False]}, None) and fits({"enum": [0]}, 0.0)


numbers = st.integers(-30, 30) | st.floats(-30, 30, allow_nan=False)


@given(numbers, values)
def test_minimum(limit, value):
    assert fits({"minimum": limit}, value) == (not is_number(value) or value >= limit)


@given(numbers, values)
def test_maximum(limit, value):
    assert fits({"maximum": limit}, value) == (not is_number(value) or value <= limit)


@given(numbers, numbers)
def test_exclusive_bounds(limit, value):
    assert fits({"exclusiveMinimum": limit}, value) == (value > limit)
    assert fits({"exclusiveMaximum": limit}, value) == (value < limit)


@given(numbers, numbers, numbers)
def test_draft4_boolean_exclusive_and_the_stricter_of_two(low, high, value):
    assert fits({"minimum": low, "exclusiveMinimum": True}, value) == (value > low)
    assert fits({"maximum": high, "exclusiveMaximum": True}, value) == (value < high)
    assert fits({"minimum": low, "exclusiveMinimum": False}, value) == (value >= low)
    assert fits({"minimum": low, "exclusiveMinimum": high}, value) == (value >= low and value > high)


@given(st.integers(1, 12), st.integers(-100, 100))
def test_multiple_of_integers(step, value):
    assert fits({"multipleOf": step}, value) == (value % step == 0)


@given(st.sampled_from(["0.1", "0.25", "0.01", "2.5"]), st.integers(-500, 500), st.integers(-3, 3))
def test_multiple_of_decimals(step, count, offset):
    """count * step, written in decimal as a client writes it, is a multiple; one hundredth off is not."""
    from decimal import Decimal
    exact = Decimal(step) * count
    value = float(exact + Decimal(offset) / 1000)
    assert fits({"multipleOf": float(step)}, value) == (offset == 0)


@given(small, small, st.text(max_size=8))
def test_string_lengths(low, high, text):
    assert fits({"minLength": low}, text) == (len(text) >= low)
    assert fits({"maxLength": high}, text) == (len(text) <= high)


def test_lengths_count_code_points():
    assert fits({"maxLength": 1}, "\U0001f600") and not fits({"maxLength": 2}, "\u00e9\u00e9\u00e9")


# ECMA-262 WhiteSpace and LineTerminator, listed by hand from the standard (sections 12.2, 12.3): what \s matches.
ECMA_WHITESPACE = ("\t\n\x0b\x0c\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
                   "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff")
# Patterns: each with its meaning written by hand (ECMA-262).  The strings have no line break: Python's $ also
# matches before a last newline, which only ever lets more through (see the test after).
PATTERNS = {
    "^[a-z]+$": lambda s: s != "" and all(c in string.ascii_lowercase for c in s),
    "^\\d{3}-\\d{2}$": lambda s: len(s) == 6 and s[3] == "-" and all(c in string.digits for c in s[:3] + s[4:]),
    "\\w": lambda s: any(c in string.ascii_letters + string.digits + "_" for c in s),
    "^\\S*$": lambda s: not any(c in ECMA_WHITESPACE for c in s),
    "^[^\\s]+$": lambda s: s != "" and not any(c in ECMA_WHITESPACE for c in s),
    "^(ab|cd)$": lambda s: s in ("ab", "cd"),
    "^a{2,3}$": lambda s: s in ("aa", "aaa"),
    "^a{,2}$": lambda s: s == "a{,2}",   # ECMA reads "{,2}" as text
    "^\\x41\\u00e9": lambda s: s.startswith("A\u00e9"),
    "^\\/\\.$": lambda s: s == "/.",
    "^(ab)+$": lambda s: len(s) >= 2 and s == "ab" * (len(s) // 2),
}
pattern_text = st.text(st.sampled_from("abcdA1_-/. \t\u00a0\u2003\ufeff\u00e9{},23\u0663"), max_size=7)


@settings(max_examples=300)
@given(st.sampled_from(sorted(PATTERNS)), pattern_text)
def test_pattern(pattern, text):
    assert fits({"pattern": pattern}, text) == PATTERNS[pattern](text), (pattern, text)


@given(st.sampled_from(sorted(PATTERNS)), st.text(max_size=8))
def test_pattern_never_refuses_what_ecma_matches(pattern, text):
    assert fits({"pattern": pattern}, text) or not PATTERNS[pattern](text)


def test_patterns_read_otherwise_or_costly_are_skipped():
    for pattern in ["^(?:a|b)+c$", "\\p{L}+", "(?i)abc", "[^]", "(a)\\1", "\\cA", "(?<name>a)", "(a+)+$", "(a|aa)*b",
                    "\\", "[\\s-z]", "(((", "a**", "\\u{41}"]:
        assert op.ecma_regex(pattern) is None, pattern
        assert fits({"pattern": pattern}, "!"), pattern
    # open-ended quantifiers on a long string: skipped before the backtracking could cost seconds
    assert fits({"pattern": "^\\d*\\d*\\d*x$"}, "1" * 5000)
    assert not fits({"pattern": "^\\d*\\d*\\d*x$"}, "1" * 50)


@given(small, small, st.lists(values, max_size=7))
def test_array_sizes(low, high, items):
    assert fits({"minItems": low}, items) == (len(items) >= low)
    assert fits({"maxItems": high}, items) == (len(items) <= high)


@given(st.lists(scalars, max_size=6))
def test_unique_items(items):
    unique = all(not same(items[i], items[j]) for i in range(len(items)) for j in range(i))
    assert fits({"uniqueItems": True}, items) == unique
    assert fits({"uniqueItems": False}, items)


@given(small, small, st.dictionaries(st.text(max_size=3), scalars, max_size=7))
def test_object_sizes(low, high, value):
    assert fits({"minProperties": low}, value) == (len(value) >= low)
    assert fits({"maxProperties": high}, value) == (len(value) <= high)


# -- an object's members, an array's items -----------------------------------------------------------------------

members = st.dictionaries(st.sampled_from(["a", "b", "x1", "x2", "c"]), scalars, max_size=5)


@given(members)
def test_properties_and_required(value):
    schema = {"properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "required": ["a"]}
    expected = "a" in value and kind(value["a"]) == "integer" and ("b" not in value or kind(value["b"]) == "string")
    assert fits(schema, value) == expected


@given(members)
def test_pattern_properties_and_additional_properties(value):
    schema = {"properties": {"a": True}, "patternProperties": {"^x\\d$": {"type": "boolean"}},
              "additionalProperties": {"type": "null"}}
    expected = all(kind(item) == "boolean" if re.fullmatch("x[0-9]", name) else
                   name == "a" or item is None for name, item in value.items())
    assert fits(schema, value) == expected


@given(members)
def test_additional_properties_false(value):
    schema = {"properties": {"a": {}, "b": {}}, "additionalProperties": False}
    assert fits(schema, value) == (set(value) <= {"a", "b"})


@given(members)
def test_property_names(value):
    assert fits({"propertyNames": {"maxLength": 1}}, value) == all(len(name) <= 1 for name in value)


@given(members)
def test_dependent_required_and_dependencies(value):
    expected = "a" not in value or "b" in value and "c" in value
    assert fits({"dependentRequired": {"a": ["b", "c"]}}, value) == expected
    assert fits({"dependencies": {"a": ["b", "c"]}}, value) == expected


@given(members)
def test_dependent_schemas(value):
    expected = "a" not in value or "b" not in value
    assert fits({"dependentSchemas": {"a": {"not": {"required": ["b"]}}}}, value) == expected
    assert fits({"dependencies": {"a": {"not": {"required": ["b"]}}}}, value) == expected


@given(st.lists(scalars, max_size=6))
def test_items(items):
    assert fits({"items": {"type": "integer"}}, items) == all(kind(item) == "integer" for item in items)


@given(st.lists(scalars, max_size=5))
def test_prefix_items_then_items(items):
    schema = {"prefixItems": [{"type": "string"}, {"type": "null"}], "items": False}
    expected = len(items) <= 2 and all(kind(item) == want for item, want in zip(items, ["string", "null"]))
    assert fits(schema, items) == expected


@given(st.lists(scalars, max_size=5))
def test_draft7_items_list_and_additional_items(items):
    schema = {"items": [{"type": "string"}], "additionalItems": {"type": "boolean"}}
    expected = all(kind(item) == ("string" if index == 0 else "boolean") for index, item in enumerate(items))
    assert fits(schema, items) == expected


@given(st.lists(st.integers(-3, 3), max_size=6), st.integers(0, 3), st.integers(0, 3))
def test_contains_min_max(items, low, high):
    positive = sum(1 for item in items if item > 0)
    assert fits({"contains": {"exclusiveMinimum": 0}}, items) == (positive >= 1)
    assert fits({"contains": {"exclusiveMinimum": 0}, "minContains": low, "maxContains": high}, items) == (
        low <= positive <= high)


# -- allOf, anyOf, oneOf, not, if/then/else, $ref ----------------------------------------------------------------

@given(values)
def test_combinators(value):
    integer, small_number = {"type": "integer"}, {"maximum": 5}
    number = is_number(value)
    assert fits({"allOf": [integer, small_number]}, value) == (kind(value) == "integer" and value <= 5)
    assert fits({"anyOf": [integer, {"type": "string"}]}, value) == (kind(value) in ("integer", "string"))
    both = kind(value) == "integer" and value <= 5
    either = kind(value) == "integer" or not number or value <= 5
    assert fits({"oneOf": [integer, small_number]}, value) == (either and not both)
    assert fits({"not": integer}, value) == (kind(value) != "integer")


@given(values)
def test_if_then_else(value):
    schema = {"if": {"type": "string"}, "then": {"minLength": 2}, "else": {"type": "integer"}}
    expected = len(value) >= 2 if kind(value) == "string" else kind(value) == "integer"
    assert fits(schema, value) == expected


@given(st.recursive(st.integers(-5, 5), lambda inner: st.lists(inner, max_size=3), max_leaves=8))
def test_local_refs_and_recursion(value):
    schema = {"$ref": "#/$defs/tree", "$defs": {"tree": {"anyOf": [
        {"type": "integer", "minimum": 0}, {"type": "array", "items": {"$ref": "#/$defs/tree"}}]}}}

    def tree(node):
        return node >= 0 if isinstance(node, int) else all(tree(item) for item in node)

    assert fits(schema, value) == tree(value)
    assert fits({"definitions": {"n": {"type": "integer"}}, "items": {"$ref": "#/definitions/n"}}, [value]) == (
        isinstance(value, int))


def test_ref_siblings_apply_from_2019_09_and_not_before():
    schema = {"$defs": {"s": {"type": "string"}}, "properties": {"a": {"$ref": "#/$defs/s", "maxLength": 2}}}
    assert not fits(schema, {"a": "long"})
    assert fits(dict(schema, **{"$schema": "http://json-schema.org/draft-07/schema#"}), {"a": "long"})
    assert not fits(dict(schema, **{"$schema": "https://json-schema.org/draft/2020-12/schema"}), {"a": "long"})


# -- what it does not understand never refuses -------------------------------------------------------------------

NOT_UNDERSTOOD = [
    {"x-vendor": {"type": "string"}}, {"format": "email"}, {"format": "no-such-format"},
    {"$ref": "https://example.com/schema.json"}, {"$ref": "other.json#/x"}, {"$ref": "#anchor"},
    {"$ref": "#/$defs/missing"}, {"$dynamicRef": "#meta"}, {"$recursiveRef": "#"}, {"type": "any"},
    {"unevaluatedProperties": False}, {"minimum": "3"}, {"enum": "abc"}, {"maxLength": -1},
    {"not": {"x-unknown": 1}}, {"not": {"format": "email"}, "x": 1}, {"not": {"$ref": "https://e.com/s"}},
    {"not": {"type": "any"}}, {"oneOf": [{"x-a": 1}, {"x-b": 1}]}, {"if": {"x-c": 1}, "then": False},
    {"not": {"type": "string", "pattern": "\\p{L}"}}, {"contains": {"x-y": 1}, "minContains": 0, "maxContains": 0},
    {"$id": "https://e.com/root", "$defs": {"a": {"$id": "sub.json", "type": "string"}},
     "properties": {"p": {"$ref": "#/$defs/a"}}},
]


@given(st.sampled_from(range(len(NOT_UNDERSTOOD))), values)
def test_what_it_does_not_understand_lets_everything_through(index, value):
    assert fits(NOT_UNDERSTOOD[index], value), NOT_UNDERSTOOD[index]


def test_one_of_with_a_skipped_part_is_read_as_any_of():
    schema = {"oneOf": [{"type": "integer"}, {"type": "number", "x-y": 1}]}
    assert fits(schema, 3)          # fits both: a oneOf would refuse, but the second may be stricter than it looks
    assert not fits(schema, "three")  # fits neither, however the skipped keyword reads


def test_too_deep_or_too_costly_cannot_tell():
    loop = {"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/a"}}}
    assert op.SchemaCheck(loop).findings(1) is None
    costly = {"$defs": {"n0": {"type": "integer"}}}
    for n in range(1, 30):   # each level tries the one below twice: 2**29 visits
        costly["$defs"]["n%d" % n] = {"anyOf": [{"$ref": "#/$defs/n%d" % (n - 1)}] * 2}
    costly["$ref"] = "#/$defs/n29"
    assert op.SchemaCheck(costly).findings("x") is None
    deep = []
    for _ in range(400):
        deep = [deep]
    assert op.SchemaCheck({"$ref": "#/$defs/t", "$defs": {"t": {"items": {"$ref": "#/$defs/t"}}}}).findings(deep) \
        is None


@given(values, values)
def test_any_schema_any_value_never_raises(schema, value):
    """Whatever a server declares (a hostile or broken schema is a JSON value too): findings or None, no error."""
    if isinstance(schema, dict):
        result = op.SchemaCheck(schema).findings(value)
        assert result is None or isinstance(result, list)


# -- the findings --------------------------------------------------------------------------------------------------

WEATHER = {"type": "object", "properties": {
    "city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 14},
    "unit": {"enum": ["c", "f"]}, "tags": {"type": "array", "items": {"type": "string", "maxLength": 3},
                                           "uniqueItems": True}},
    "required": ["city"], "additionalProperties": False}

UNION = {"oneOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/b"}], "$defs": {
    "a": {"type": "object", "properties": {"kind": {"const": "a"}}, "required": ["kind"]},
    "b": {"type": "object", "properties": {"kind": {"enum": ["a", "b"]}, "n": {"type": "integer"}},
          "required": ["kind", "n"]}}}

GOLDEN = [
    (WEATHER, {"city": 5, "days": 30}, ["/city: string, got integer 5", "/days: integer 1..14, got 30"]),
    (WEATHER, {"days": 2.5, "unit": "k"}, ["/days: integer 1..14, got number 2.5", '/unit: one of "c", "f", got "k"',
                                           "/city: required string, missing"]),
    (WEATHER, {"city": "x", "tags": ["ab", "abcd", "ab"], "when": 1},
     ['/tags: array with unique items, got ["ab","abcd","ab"]', '/tags/1: string of at most 3 characters, '
      'got "abcd"', "/when: no such property (allowed: city, days, unit, tags), got 1"]),
    (WEATHER, [], ["(arguments): object (requires city; takes days, unit, tags), got array []"]),
    ({"properties": {"a/b~c": {"type": "boolean"}}}, {"a/b~c": "yes"}, ['/a~1b~0c: boolean, got string "yes"']),
    ({"properties": {"n": {"exclusiveMinimum": 0, "maximum": 1}}}, {"n": 0}, ["/n: > 0 and <= 1, got 0"]),
    ({"properties": {"n": {"type": ["integer", "null"], "multipleOf": 5}}}, {"n": 7},
     ["/n: integer or null multiple of 5, got 7"]),
    ({"properties": {"q": {"anyOf": [{"type": "string", "minLength": 1}, {"type": "null"}]}}}, {"q": ""},
     ['/q: string of at least 1 character, got ""']),
    ({"properties": {"q": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}, {"q": 3},
     ["/q: any of: string | null, got integer 3"]),
    (UNION, {"kind": "b"},
     ["/n: required integer, missing"]),
    (UNION, {"kind": "c"}, ['(arguments): exactly one of: kind="a" | kind="a" or "b"; requires n, '
                            'got object {"kind":"c"}']),
    (UNION, {"kind": "a", "n": 1}, ["(arguments): exactly one of 2 alternatives, got a value that fits 2 of them"]),
    ({"not": {"required": ["x"]}}, {"x": 1}, ['(arguments): anything but: requires x, got {"x":1}']),
    ({"dependentRequired": {"a": ["b"]}}, {"a": 1}, ['/b: required when "a" is given, missing']),
    ({"properties": {"s": {"pattern": "^[a-z]+$"}}}, {"s": "A"}, ['/s: matching ^[a-z]+$, got "A"']),
    ({"properties": {"l": {"minItems": 2, "maxItems": 3}}}, {"l": [1]}, ["/l: of 2..3 items, got [1]"]),
    ({"properties": {"o": {"type": "object", "maxProperties": 1}}}, {"o": {"a": 1, "b": 2}},
     ['/o: object with at most 1 property, got {"a":1,"b":2}']),
    ({"contains": {"type": "string"}}, [1, 2], ["(arguments): an array holding at least 1 item(s) that are string, "
                                                 "got 0"]),
    ({"prefixItems": [{"type": "integer"}], "items": False}, [1, "x"], ['/1: no item here (at most 1), got "x"']),
    ({"properties": {"x": False}}, {"x": 1}, ["/x: no value (nothing is allowed here), got 1"]),
    ({"properties": {"t": {"const": "on"}}}, {"t": "off"}, ['/t: exactly "on", got "off"']),
    ({"properties": {"long": {"type": "integer"}}}, {"long": "y" * 100},
     ['/long: integer, got string "' + "y" * 39 + '... (102 characters)']),
]


def test_golden_findings():
    for schema, value, expected in GOLDEN:
        assert texts(schema, value) == expected, (schema, value)


def test_findings_are_capped_and_the_rest_counted():
    schema = {"items": {"type": "string"}}
    lines = texts(schema, list(range(8)))
    assert lines == ["/%d: string, got integer %d" % (n, n) for n in range(5)] + ["and 3 more"]


def test_the_help_names_every_keyword_checked():
    help_text = subprocess.run([op.sys.executable, op.__file__, "stdio", "--help"], stdout=subprocess.PIPE,
                               timeout=60).stdout.decode()
    flat = " ".join(help_text.split())
    for keyword in op.CHECK_KEYWORDS:
        assert keyword in flat, keyword
    assert "refuse" in flat and "(default annotate;" in flat and "before it is refused (default 5;" in flat


def test_ecma_whitespace_is_the_standards():
    for code in range(0x3001):
        char = chr(code)
        assert fits({"pattern": "^\\s$"}, char) == (char in ECMA_WHITESPACE), hex(code)
    assert fits({"pattern": "^\\s$"}, "\ufeff") and not fits({"pattern": "^\\S$"}, "\ufeff")


# -- the fast pass: what it passes, the long way passes too ---------------------------------------------------------

def long_way(schema, value):
    """The findings of the check without its fast pass."""
    check = op.SchemaCheck(schema)
    check.compiled = None
    return check.findings(value)


names = st.sampled_from(["a", "b", "c"])
plain_values = st.recursive(scalars | st.sampled_from([3.0, -0.0, 2 ** 70, "ab", "aaa", "b1"]),
                            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(names, inner, max_size=3),
                            max_leaves=8)
type_names = st.sampled_from(TYPES)
# What a schema object may say, a few keywords at a time (some values malformed, some keywords skipped: format, x-...).
VALUE_KEYWORDS = {
    "type": type_names | st.lists(type_names, min_size=1, max_size=3) | st.just("any"), "nullable": st.booleans(),
    "enum": st.lists(scalars | st.sampled_from(["ab", 3.0]), min_size=1, max_size=3), "const": scalars,
    "minimum": numbers, "maximum": numbers, "exclusiveMinimum": numbers | st.booleans(),
    "exclusiveMaximum": numbers | st.booleans(), "multipleOf": st.sampled_from([1, 2, 0.5, 0, "2"]),
    "minLength": small, "maxLength": small | st.just(-1), "pattern": st.sampled_from(["^a", "b+", "^[a-z]*$", "(?i)a"]),
    "minItems": small, "maxItems": small, "minProperties": small, "maxProperties": small,
    "required": st.lists(names, max_size=2), "uniqueItems": st.booleans(), "format": st.just("email"),
    "x-vendor": st.just(1)}


def some_of(keywords, most):
    """Schema objects holding at most ``most`` of ``keywords`` (name -> strategy of its value)."""
    return st.lists(st.sampled_from(sorted(keywords)), max_size=most, unique=True).flatmap(
        lambda names: st.fixed_dictionaries({name: keywords[name] for name in names}))


def schema_objects(inner):
    return st.tuples(some_of(VALUE_KEYWORDS, 3), some_of({
        "properties": st.dictionaries(names, inner, max_size=3), "additionalProperties": inner, "items": inner,
        "allOf": st.lists(inner, min_size=1, max_size=2), "anyOf": st.lists(inner, min_size=1, max_size=3),
        "oneOf": st.lists(inner, min_size=1, max_size=2), "not": inner}, 2)).map(
        lambda parts: dict(parts[0], **parts[1]))


subschemas = st.recursive(st.booleans() | some_of(VALUE_KEYWORDS, 3) | st.sampled_from([{"$ref": "#/$defs/d"},
                                                                                          {"$ref": "#"}]),
                          schema_objects, max_leaves=6)


@settings(max_examples=500)
@given(schema_objects(subschemas), subschemas, plain_values)
@example({"enum": ["ab", "b"], "maxLength": 1}, True, "ab")
@example({"uniqueItems": True, "items": {"type": "integer"}}, True, [1, 1])
@example({"properties": {"a": {"type": "integer", "multipleOf": 2}}}, True, {"a": 3})
@example({"properties": {"a": {}}, "additionalProperties": {"$ref": "#/$defs/d"}}, {"type": "string"}, {"a": 1, "b": 2})
def test_the_fast_pass_passes_nothing_the_long_way_finds_fault_with(schema, definition, value):
    schema = dict(schema, **{"$defs": {"d": definition}})
    if op.SchemaCheck(schema).fast_pass(value):
        assert long_way(schema, value) == [], (schema, value)


FAST = [   # what the fast pass lets through alone: the common keywords on values that fit
    (WEATHER, {"city": "Oslo", "days": 3, "unit": "c", "tags": ["a"]}),
    ({"type": "object", "properties": {"q": {"anyOf": [{"type": "string", "maxLength": 9}, {"type": "null"}]}},
      "additionalProperties": {"type": "integer"}}, {"q": None, "n": 1}),
    ({"$ref": "#/$defs/f", "$defs": {"f": {"type": "array", "items": {"enum": [1, "x", None]}, "maxItems": 3}}},
     [1, "x", None]),
    ({"allOf": [{"minimum": 1}, {"maximum": 5, "multipleOf": 2}], "format": "int", "x-unit": "s"}, 4),
]


def test_the_fast_pass_takes_the_common_keywords():
    for schema, value in FAST:
        assert op.SchemaCheck(schema).fast_pass(value), schema
        assert long_way(schema, value) == []


def test_the_fast_pass_leaves_what_the_long_way_cannot_tell():
    """No verdict of the fast pass where the long way would run out of steps or depth: it cannot tell there."""
    many = [{"a": n} for n in range(op.CHECK_STEPS)]
    schema = {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0}}}}
    assert long_way(schema, many) is None and op.SchemaCheck(schema).findings(many) is None
    assert op.SchemaCheck(schema).fast_pass(many[:1000])
    deep, value = {"type": "integer", "minimum": 0}, 1
    for _ in range(op.CHECK_DEPTH + 1):
        deep, value = {"type": "object", "properties": {"a": deep}}, {"a": value}
    assert long_way(deep, value) is None and op.SchemaCheck(deep).findings(value) is None
    # anyOf: the long way tries the first alternative through every item (3.0 is an integer, -1 fails last); only
    # alternatives that take different types are the fast pass's
    either = {"anyOf": [{"type": "array", "items": {"type": "integer", "minimum": 0}}, {"type": "array"}]}
    items = [3.0] + [1] * op.CHECK_STEPS + [-1]
    assert long_way(either, items) is None and op.SchemaCheck(either).findings(items) is None
    costly = {"$defs": {"n0": {"type": "integer"}}, "$ref": "#/$defs/n17"}
    for n in range(1, 18):   # each level tests the one below twice: 2 ** 17 steps
        costly["$defs"]["n%d" % n] = {"allOf": [{"$ref": "#/$defs/n%d" % (n - 1)}] * 2}
    assert long_way(costly, 1) is None and op.SchemaCheck(costly).findings(1) is None


def test_a_schema_too_big_to_compile_is_checked_the_long_way():
    schema = {"properties": {"p%d" % n: {"type": "integer"} for n in range(op.CHECK_COMPILED)}}
    check = op.SchemaCheck(schema)
    assert not check.fast_pass({"p1": 1})
    assert check.findings({"p1": 1}) == [] and check.findings({"p1": "x"}) == [("/p1", "integer", 'got string "x"')]
