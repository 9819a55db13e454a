"""Catalog checker section: one fixture catalog per rule of CATALOG_RULES, the exact pointer, severity, clients and
the public source each finding carries (checked through `check --json`, and CatalogChecker directly)."""
import json
import os

import pytest

from helpers import CATALOGS, run_check

import ocx_proxy as op


@pytest.mark.parametrize("catalog,pointer,severity,clients,needle", [
    ("required_missing", "/tools/0/inputSchema/required/1", "error", ["all"], "'y' is required"),
    ("items_string", "/tools/0/inputSchema/properties/tags/items", "error", ["all"], '{"type": "string"}'),
    ("bad_type", "/tools/0/inputSchema/properties/n/type", "error", ["all"], "invalid type"),
    ("root_not_object", "/tools/0/inputSchema/type", "error", ["all"], "must have"),
    ("empty_enum", "/tools/0/inputSchema/properties/mode/enum", "error", ["all"], "non-empty"),
    ("min_gt_max", "/tools/0/inputSchema/properties/n/minimum", "error", ["all"], "greater than"),
    ("bad_pattern", "/tools/0/inputSchema/properties/s/pattern", "warning", ["all"], "ECMA-262"),
    ("dangling_ref", "/tools/0/inputSchema/properties/p/$ref", "error", ["all"], "does not resolve"),
    ("big_integer", "/tools/0/inputSchema/properties/n/maximum", "warning", ["cursor", "claude-code"], "2^53"),
    ("long_name", "/tools/0/name", "error", ["cursor"], "60 characters"),
    ("duplicate", "/tools/1/name", "error", ["all"], "duplicate tool name"),
    ("long_description", "/tools/0/description", "warning", ["claude-code"], "2048"),
    ("many_tools", "/tools", "warning", ["cursor"], "first 40"),
    ("too_big_for_cursor", "/tools", "error", ["cursor"], "McpTools would be"),
    ("repeat_cursor", "/tools", "error", ["all"], "repeats cursor"),
    ("bad_version", "/initialize/protocolVersion", "error", ["all"], "unknown protocol version"),
])
def test_each_rule_names_the_exact_pointer(catalog, pointer, severity, clients, needle):
    status, report, err, _ = run_check(catalog)
    assert "Traceback" not in err
    matches = [f for f in report["findings"]
               if f["pointer"] == pointer and f["severity"] == severity and f["clients"] == clients]
    assert matches, report["findings"]
    assert needle in matches[0]["message"]
    assert status == (1 if report["summary"]["error"] else 0)
    assert status == (1 if severity == "error" else 0), report["findings"]


def test_long_name_breaks_each_clients_length_rule_separately():
    _, report, _, _ = run_check("long_name")
    assert [(f["rule"], f["clients"]) for f in report["findings"]] == [
        ("name-length", ["openai", "gemini-api", "claude-desktop"]), ("vscode-name-cut", ["vscode"]),
        ("gemini-cli-name-cut", ["gemini-cli"]), ("cursor-name-length", ["cursor"])]


def test_dotted_names_break_the_function_name_rule_and_collide_after_sanitising():
    status, report, _, _ = run_check("dotted_names")
    assert status == 1
    messages = {(f["pointer"], tuple(f["clients"])) for f in report["findings"]}
    assert ("/tools/0/name", ("openai", "anthropic", "claude-desktop", "cursor")) in messages
    assert ("/tools", ("codex", "openai")) in messages


def test_client_filter_hides_findings_for_other_clients():
    status, report, _, _ = run_check("long_description", "--client", "cursor")
    assert report["findings"] == [] and status == 0


def test_json_pointer_escaping_and_resolution():
    assert op.json_pointer("a/b", "m~n", 3) == "/a~1b/m~0n/3"
    doc = {"a/b": {"m~n": [0, 1, 2, "x"]}}
    assert op.resolve_pointer(doc, "/a~1b/m~0n/3") == "x"
    with pytest.raises(KeyError):
        op.resolve_pointer(doc, "/missing")


# The client rules (CATALOG_RULES): one fixture each, the exact pointer, severity,
# clients and the source the finding carries (a public URL: tests/test_clients.py holds them all to it).
@pytest.mark.parametrize("catalog,rule,pointer,severity,clients,ref", [
    ("root_combinator", "root-combinator", "/tools/0/inputSchema/anyOf", "error",
     ["anthropic", "claude-code", "claude-desktop", "openai"], "https://github.com/anthropics/claude-code/issues/710"),
    ("nested_allof", "nested-allof", "/tools/0/inputSchema/properties/page/allOf", "error", ["openai"],
     "https://github.com/makenotion/notion-mcp-server/issues/102"),
    ("type_array", "cursor-type-array", "/tools/0/inputSchema/properties/note/type", "error", ["cursor"],
     "https://github.com/cursor/cursor/issues/3778"),
    ("type_array", "gemini-type-array", "/tools/0/inputSchema/properties/note/type", "warning", ["gemini-api"],
     "https://github.com/zed-industries/zed/issues/32429"),
    ("additional_properties", "gemini-additional-properties",
     "/tools/0/inputSchema/properties/tags/additionalProperties", "warning", ["gemini-api"],
     "https://github.com/zed-industries/zed/issues/29394"),
    ("ref_defs", "gemini-ref", "/tools/0/inputSchema/$defs", "warning", ["gemini-api"],
     "https://github.com/decolua/9router/issues/1036"),
    ("non_string_enum", "gemini-enum-type", "/tools/0/inputSchema/properties/phases/enum", "warning",
     ["gemini-api", "gemini-cli"], "https://github.com/google-gemini/gemini-cli/issues/4127"),
    ("unsupported_format", "gemini-format", "/tools/0/inputSchema/properties/url/format", "warning",
     ["gemini-api", "gemini-cli"], "https://github.com/google-gemini/gemini-cli/issues/3178"),
    ("dotted_names", "name-chars", "/tools/0/name", "error", ["openai", "anthropic", "claude-desktop", "cursor"],
     "https://github.com/openai/codex/issues/8174"),
    ("long_name", "name-length", "/tools/0/name", "error", ["openai", "gemini-api", "claude-desktop"],
     "https://github.com/loomle/loomle/issues/168"),
    ("long_name", "vscode-name-cut", "/tools/0/name", "warning", ["vscode"],
     "https://github.com/microsoft/vscode/issues/243602"),
    ("long_name", "gemini-cli-name-cut", "/tools/0/name", "warning", ["gemini-cli"],
     "https://github.com/google-gemini/gemini-cli/blob/main/packages/core/src/tools/mcp-tool.ts"),
    ("long_name", "cursor-name-length", "/tools/0/name", "error", ["cursor"], "https://github.com/awslabs/mcp/issues/1283"),
    ("codex_long_name", "codex-name-hash", "/tools/0/name", "info", ["codex"],
     "https://github.com/openai/codex/blob/main/codex-rs/codex-mcp/src/tools.rs"),
    ("codex_dropped", "codex-dropped-keywords", "/tools/0/inputSchema/properties/n/minimum", "info", ["codex"],
     "https://github.com/openai/codex/issues/13768"),
    ("output_schema_not_object", "output-schema-type", "/tools/1/outputSchema/type", "error", ["all"],
     "https://github.com/githubnext/chopin/issues/154"),
    ("many_tools", "windsurf-tool-count", "/tools", "warning", ["windsurf"], "https://github.com/Zhwt/go-mcp-mysql/issues/3"),
    ("too_many_for_vscode", "vscode-tool-count", "/tools", "error", ["vscode"],
     "https://github.com/microsoft/vscode/issues/258890"),
    ("repeated_block", "schema-repetition", "/tools/0/inputSchema/properties/options", "info", ["all"],
     "https://platform.openai.com/docs/guides/function-calling"),
])
def test_each_client_rule_names_pointer_severity_clients_and_source(catalog, rule, pointer, severity, clients, ref):
    status, report, err, _ = run_check(catalog)
    assert "Traceback" not in err
    matches = [f for f in report["findings"] if f.get("rule") == rule]
    assert len(matches) == 1, report["findings"]
    finding = matches[0]
    assert (finding["pointer"], finding["severity"], finding["clients"]) == (pointer, severity, clients)
    assert finding["source"]["ref"].startswith(ref) and finding["source"]["observed"]
    row = op.CATALOG_RULES[rule]
    assert finding["source"] == {"ref": row.ref, "observed": row.observed}
    assert status == (1 if report["summary"]["error"] else 0)


def test_a_repeated_schema_block_costs_its_bytes_in_every_request():
    _, report, _, _ = run_check("repeated_block")
    note = [f for f in report["findings"] if f.get("rule") == "schema-repetition"][0]
    block = json.load(open(os.path.join(CATALOGS, "repeated_block.json")))["tools"][0]["inputSchema"]["properties"]
    size = len(json.dumps(block["options"], separators=(",", ":")))
    assert note["message"].startswith("%d of the " % (4 * size)) and "1 blocks repeated 4 times" in note["message"]
    assert "/tools/1/inputSchema/properties/options" in note["message"] and "$defs" in note["message"]
    assert report["findings"] == [note]     # a block under the threshold, or used once, is no note


def test_one_finding_per_rule_and_tool_names_the_first_place_and_the_count():
    findings = op.CatalogChecker("s").check({"tools": [{"name": "a", "inputSchema": {
        "type": "object", "properties": {"x": {"type": ["string", "null"]}, "y": {"type": ["integer", "null"]}}}}]})
    cursor = [f for f in findings if f.rule == "cursor-type-array"]
    assert len(cursor) == 1 and cursor[0].pointer == "/tools/0/inputSchema/properties/x/type"
    assert '["string", "null"], ["integer", "null"] (2 places)' in cursor[0].message


@pytest.mark.parametrize("client,rules", [
    ("gemini", ["gemini-type-array"]), ("cursor", ["cursor-type-array"]), ("windsurf", []), ("claude-desktop", [])])
def test_new_client_names_filter_the_findings(client, rules):
    status, report, _, _ = run_check("type_array", "--client", client)
    assert [f["rule"] for f in report["findings"]] == rules and report["client"] == op.client_named(client, "check")
    assert status == (1 if client == "cursor" else 0)


def test_json_findings_of_client_rules_add_rule_and_source_keys():
    _, report, _, _ = run_check("long_name")
    assert report["version"] == 1
    assert sorted(report["findings"][0]) == ["clients", "fixedFor", "message", "pointer", "rule", "severity", "source",
                                             "tool"]


def test_each_finding_says_for_which_relay_profiles_ocx_proxy_fixes_it():
    _, report, _, _ = run_check("long_name")
    fixed = {f["rule"]: f["fixedFor"] for f in report["findings"]}
    assert fixed["name-length"] == ["codex", "gemini-api"]      # the model APIs they hand names to
    assert fixed["cursor-name-length"] == ["cursor"]
    assert "fixed by ocx-proxy (--fit-tools) for cursor" in op.check_report_text(report)
    assert fixed["vscode-name-cut"] == []     # a fix, but VS Code has no relay profile
    for rule, clients in fixed.items():
        assert not clients or op.CATALOG_RULES[rule].fix, rule


def test_repeated_output_schemas_are_no_cost_note():
    block = {"type": "object", "properties": {"f%d" % i: {"type": "string", "description": "d" * 40} for i in range(12)}}
    tools = [{"name": "t%d" % i, "inputSchema": {"type": "object"}, "outputSchema": block} for i in range(3)]
    assert [f.rule for f in op.CatalogChecker("s").check({"tools": tools})] == []
