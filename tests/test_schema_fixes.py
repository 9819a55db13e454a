"""Schema fixes section (--fit-tools): each fix through a real relay, and properties of fit_tools."""
import json

import pytest
from hypothesis import given, settings, strategies as st

import ocx_proxy as op
from helpers import CATALOG_SERVER, RelayProcess

LONG = "search_the_knowledge_base_for_documents_matching_a_query_v2"   # 59 characters


def relay_for(tmp_path, tools, *args):
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps({"tools": tools}))
    relay = RelayProcess(["--output-dir", str(tmp_path / "spill"), "--no-reader-tool"] + list(args),
                         [str(catalog)], server=CATALOG_SERVER)
    relay.initialize()
    return relay


def listed(relay):
    return relay.request("tools/list", {})[0]["result"]["tools"]


def echoed(relay, name, arguments):
    """What the server received for a call of ``name``."""
    return json.loads(relay.call(name, arguments)["result"]["content"][0]["text"])


OBJECT = {"type": "object", "properties": {"q": {"type": "string"}}}
# One fixture tool per fix: (client, tool, the fitted tool as the client sees it).
CASES = {
    "short-name cursor": ("cursor", {"name": LONG, "inputSchema": OBJECT},
                          {"name": op.short_name(LONG, 36), "inputSchema": OBJECT}),
    "short-name dots": ("claude-code", {"name": "repo.search", "inputSchema": OBJECT},
                        {"name": "repo_search_" + op.short_name("repo.search", 99)[-6:], "inputSchema": OBJECT}),
    "short-name gemini-cli": ("gemini-cli", {"name": LONG, "inputSchema": OBJECT},
                              {"name": op.short_name(LONG, 34), "inputSchema": OBJECT}),
    "one-type cursor": ("cursor", {"name": "t", "inputSchema": {
        "type": "object", "properties": {"q": {"type": ["null", "string"]}}}}, {"name": "t", "inputSchema": {
            "type": "object", "properties": {"q": {"type": "string", "description": "(also accepts null)"}}}}),
    "inline-refs gemini-api": ("gemini-api", {"name": "t", "inputSchema": {
        "type": "object", "$defs": {"Q": {"type": "string"}}, "properties": {"q": {"$ref": "#/$defs/Q"}}}},
        {"name": "t", "inputSchema": OBJECT}),
    "inline-refs cycle": ("gemini-api", {"name": "t", "inputSchema": {
        "type": "object", "definitions": {"N": {"type": "object", "properties": {"next": {"$ref": "#/definitions/N"}}}},
        "properties": {"q": {"$ref": "#/definitions/N"}}}},
        {"name": "t", "inputSchema": {"type": "object", "properties": {"q": {"type": "object", "properties": {
            "next": {"type": "object", "description": "(as #/definitions/N: takes next; cut here by ocx-proxy)"}}}}}}),
    "drop-additional-properties and drop-format gemini-api": ("gemini-api", {"name": "t", "inputSchema": {
        "type": "object", "additionalProperties": False, "properties": {"q": {"type": "string", "format": "uri"}}}},
        {"name": "t", "inputSchema": {"type": "object", "properties": {
            "q": {"type": "string", "description": '(format: "uri")'}}}}),
    "one-object claude-code": ("claude-code", {"name": "t", "inputSchema": {"oneOf": [
        {"type": "object", "title": "by id", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
        {"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer"}}, "required": ["q"]}]}},
        {"name": "t", "inputSchema": {"type": "object", "properties": {
            "id": {"type": "integer"}, "q": {"type": "string"}, "n": {"type": "integer"}},
            "description": "(arguments: exactly one of: by id: requires id | requires q; takes n)"}}),
    "drop-output-schema codex": ("codex", {"name": "t", "inputSchema": OBJECT, "outputSchema": {"type": "array"}},
                                 {"name": "t", "inputSchema": OBJECT}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_fix_fits_the_catalog_and_calls_reach_the_original_tool(tmp_path, case):
    client, tool, fitted = CASES[case]
    relay = relay_for(tmp_path, [tool, {"name": "plain", "inputSchema": OBJECT}], "--client", client)
    assert listed(relay) == [fitted, {"name": "plain", "inputSchema": OBJECT}]
    arguments = {"q": "x", "nested": {"a": [1, 2.5, None]}}
    assert echoed(relay, fitted["name"], arguments) == {"name": tool["name"], "arguments": arguments}
    assert echoed(relay, "plain", {"q": "y"}) == {"name": "plain", "arguments": {"q": "y"}}
    assert relay.close() == 0


def test_no_fit_tools_relays_the_catalog_as_it_came(tmp_path):
    client, tool, _ = CASES["short-name cursor"]
    relay = relay_for(tmp_path, [tool], "--client", client, "--no-fit-tools")
    assert listed(relay) == [tool]
    assert echoed(relay, LONG, {})["name"] == LONG
    assert relay.close() == 0


def test_auto_fits_to_the_client_that_names_itself(tmp_path):
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps({"tools": [{"name": LONG, "inputSchema": OBJECT}]}))
    relay = RelayProcess(["--output-dir", str(tmp_path / "spill")], [str(catalog)], server=CATALOG_SERVER)
    relay.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "cursor-vscode", "version": "1"}}, msg_id=1)
    relay.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    names = [tool["name"] for tool in listed(relay)]
    assert names[0] == op.short_name(LONG, 36)
    assert echoed(relay, names[0], {"q": "z"}) == {"name": LONG, "arguments": {"q": "z"}}
    assert relay.close() == 0


def test_filters_see_the_servers_names_through_the_fitted_ones(tmp_path):
    tools = [{"name": LONG + "_issue", "inputSchema": OBJECT}, {"name": LONG + "_delete", "inputSchema": OBJECT}]
    relay = relay_for(tmp_path, tools, "--client", "cursor", "--allow-tools", "*_issue")
    [tool] = listed(relay)
    assert tool["name"] == op.short_name(LONG + "_issue", 36) and not tool["name"].endswith("_issue")
    assert echoed(relay, tool["name"], {"q": "x"}) == {"name": LONG + "_issue", "arguments": {"q": "x"}}
    assert "not available" in relay.call(LONG + "_delete", {})["error"]["message"]
    assert relay.close() == 0


# -- properties of fit_tools --------------------------------------------------

NAMES = st.text(st.characters(min_codepoint=32, max_codepoint=0x2FF), min_size=1, max_size=90)
TYPES = st.sampled_from(["string", "integer", ["string", "null"], ["integer", "string"]])
LEAF = st.fixed_dictionaries({"type": TYPES}, optional={
    "format": st.sampled_from(["uri", "int64", "email"]), "description": st.text(max_size=10)})
SCHEMA = st.recursive(LEAF, lambda inner: st.one_of(
    st.builds(lambda props, extra: dict({"type": "object", "properties": props}, **extra),
              st.dictionaries(st.text("abcxyz", min_size=1, max_size=4), inner, max_size=3),
              st.sampled_from([{}, {"additionalProperties": False}, {"additionalProperties": {"type": "string"}}])),
    st.builds(lambda item: {"type": "array", "items": item}, inner),
    st.just({"$ref": "#/$defs/D"})), max_leaves=8)
ROOT = st.builds(lambda props, combine, defs: dict(
    {"type": "object", "properties": props, "$defs": {"D": defs}},
    **({"anyOf": [{"type": "object", "properties": {"k": p}, "required": ["k"]} for p in props.values()]}
       if combine and props else {})),
    st.dictionaries(st.text("abc", min_size=1, max_size=3), SCHEMA, max_size=3), st.booleans(), SCHEMA)
TOOLS = st.lists(st.builds(lambda name, schema, output: dict(
    {"name": name, "inputSchema": schema}, **({"outputSchema": output} if output else {})),
    NAMES, ROOT, st.sampled_from([None, {"type": "object"}, {"type": "array"}])),
    max_size=6, unique_by=lambda tool: tool["name"])
FITTED_CLIENTS = st.sampled_from([name for name in op.CLIENT_CHOICES if name != "auto"])


@settings(max_examples=150, deadline=None)
@given(TOOLS, FITTED_CLIENTS)
def test_fitted_names_are_unique_stable_and_lead_back_to_the_server_tool(tools, client):
    fitted, names = op.fit_tools(tools, client)
    shown = [tool["name"] for tool in fitted]
    assert len(set(shown)) == len(shown)
    for index, tool in enumerate(tools):          # the same tool gets the same name on any page
        assert op.fit_tools([tool], client)[0][0]["name"] == shown[index]
        assert names.get(shown[index], tool["name"]) == tool["name"]
    fitting = op.ToolFitting(lambda: client)
    fitting.rewrite({"result": {"tools": tools}})
    for index, tool in enumerate(tools):
        call = {"jsonrpc": "2.0", "id": index, "method": "tools/call",
                "params": {"name": shown[index], "arguments": {"x": [1, {"y": None}]}}}
        raw = op.encode_message(call)[:-1]
        line, msgs, _ = fitting.restore(raw, [call], [raw])
        assert json.loads(line)["params"] == {"name": tool["name"], "arguments": {"x": [1, {"y": None}]}}


@settings(max_examples=150, deadline=None)
@given(TOOLS, FITTED_CLIENTS)
def test_no_finding_the_relay_fixes_is_left_in_a_fitted_catalog(tools, client):
    fitted, _ = op.fit_tools(tools, client)
    checker = op.CatalogChecker("s" * op.FIT_SERVER_NAME_CHARS)
    left = [(f.rule, f.pointer, f.message) for f in checker.check({"tools": fitted})
            if f.rule in op.fit_rules(client)]
    assert left == []


# -- what a fitted schema tells the model -------------------------------

STRING = {"type": "string"}
# The shapes servers publish at the root, each as Codex's model reads it once merged into one object.
MERGED = {
    "anyOf of required sets": (
        {"type": "object", "anyOf": [{"required": ["a"]}, {"required": ["b"]}], "properties": {"a": STRING, "b": STRING}},
        {"type": "object", "properties": {"a": STRING, "b": STRING},
         "description": "(arguments: one or more of: requires a | requires b)"}),
    "oneOf on action": (
        {"type": "object", "oneOf": [
            {"title": "Create", "properties": {"action": {"const": "create"}, "name": STRING, "tags": {"type": "array"}},
             "required": ["action", "name"]},
            {"properties": {"action": {"const": "delete"}, "id": {"type": "integer"}, "force": {"type": "boolean"}},
             "required": ["action", "id"]}]},
        {"type": "object", "properties": {
            "action": {"enum": ["create", "delete"]}, "name": STRING, "tags": {"type": "array"},
            "id": {"type": "integer"}, "force": {"type": "boolean"}}, "required": ["action"],
         "description": '(arguments: exactly one of: Create: action="create"; requires name; takes tags | '
                        'action="delete"; requires id; takes force)'}),
    "oneOf on type, by $ref": (
        {"type": "object", "$defs": {"Url": {"properties": {"type": {"const": "url"}, "url": STRING}, "required": ["url"]},
                                     "File": {"properties": {"type": {"enum": ["file", "path"]}, "path": STRING}}},
         "oneOf": [{"$ref": "#/$defs/Url"}, {"$ref": "#/$defs/File"}]},
        {"type": "object", "$defs": {"Url": {"properties": {"type": {"const": "url"}, "url": STRING}, "required": ["url"]},
                                     "File": {"properties": {"type": {"enum": ["file", "path"]}, "path": STRING}}},
         "properties": {"type": {"enum": ["url", "file", "path"]}, "url": STRING, "path": STRING},
         "description": '(arguments: exactly one of: type="url"; requires url | type="file" or "path"; takes path)'}),
    "allOf with if/then": (
        {"type": "object", "properties": {"action": {"enum": ["get", "delete", "list"]}, "id": STRING, "limit": STRING},
         "required": ["action"], "allOf": [
             {"if": {"properties": {"action": {"const": "delete"}}}, "then": {"required": ["id"]}},
             {"if": {"required": ["id"]}, "then": {"properties": {"force": {}}}, "else": {"required": ["limit"]}}]},
        {"type": "object", "properties": {"action": {"enum": ["get", "delete", "list"]}, "id": STRING, "limit": STRING},
         "required": ["action"],
         "description": '(arguments: when action="delete": requires id | when id given: takes force, otherwise: '
                        'requires limit)'}),
}


@pytest.mark.parametrize("shape", sorted(MERGED))
def test_a_merged_root_combinator_says_what_each_alternative_requires_and_takes(shape):
    """Once, ``(arguments one or more of: {}; {})`` was all a model learnt of the rule it must follow."""
    schema, fitted = MERGED[shape]
    assert op.fit_tools([{"name": "t", "inputSchema": schema}], "codex")[0][0]["inputSchema"] == fitted


def test_what_one_type_and_inline_refs_leave_out_is_in_the_description():
    schema = {"type": "object", "definitions": {"N": {"type": "object", "required": ["value"], "properties": {
        "value": {"type": ["integer", "null"]}, "next": {"$ref": "#/definitions/N"}}}},
        "properties": {"q": {"$ref": "#/definitions/N"}, "w": {"type": ["string", "integer"], "format": ["x"]}}}
    [fitted], _ = op.fit_tools([{"name": "t", "inputSchema": schema}], "gemini-api")
    q, w = fitted["inputSchema"]["properties"]["q"], fitted["inputSchema"]["properties"]["w"]
    assert q["properties"]["value"] == {"type": "integer", "description": "(also accepts null)"}
    assert q["properties"]["next"] == {"type": "object", "description": "(as #/definitions/N: requires value; takes "
                                                                         "next; cut here by ocx-proxy)"}
    assert w == {"type": "string", "description": '(also accepts integer) (format: ["x"])'}   # a list is no format


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(
                        ["type", "title", "required", "properties", "const", "enum", "if", "then", "else", "anyOf",
                         "oneOf", "allOf", "$ref", "a", "format"]), inner, max_size=4), max_leaves=20),
       FITTED_CLIENTS)
def test_any_schema_fits_without_an_exception(schema, client):
    tool = {"name": "t", "inputSchema": {"type": "object", "oneOf": [schema, {"required": ["a"]}], "allOf": [
        {"if": schema, "then": schema}], "properties": {"a": schema}}}
    [fitted], _ = op.fit_tools([tool], client)
    json.dumps(fitted)
