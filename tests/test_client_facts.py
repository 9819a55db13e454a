"""Client facts: the one table of client limits and name rules, and that its readers follow it."""
import ocx_proxy as op


def tool(name):
    return {"name": name, "description": "d", "inputSchema": {"type": "object"}}


def test_check_and_the_mcp_tools_warnings_take_cursors_limits_from_the_table(monkeypatch):
    monkeypatch.setitem(op.CLIENTS["cursor"]["facts"], "name_chars", 8)
    monkeypatch.setitem(op.CLIENTS["cursor"]["facts"], "mcp_tools_count", 1)
    findings = op.CatalogChecker("srv").check({"tools": [tool("short"), tool("longer")]})
    messages = [f.message for f in findings if f.clients == ("cursor",)]
    assert any("exceed 8 characters ('srv' + 'longer' = 9)" in m for m in messages), messages
    assert any("about" in m and "and 1 tools are the most Cursor accepts" in m for m in messages), messages
    assert op.cursor_limit_warnings(2, 0) == [
        "2 tool definitions exceed Cursor's limit of about 1; expect resource_exhausted"]


def test_openai_function_names_and_their_sanitising_follow_one_length():
    assert op.CLIENTS["openai"]["facts"]["function_name_chars"] == 64
    long_a, long_b = "a" * 64 + "x", "a" * 64 + "y"
    findings = op.CatalogChecker("s").check({"tools": [tool(long_a), tool(long_b)]})
    assert any("collide after sanitising" in f.message for f in findings)
    assert any("at most 64 (^[A-Za-z0-9_-]{1,64}$)" in f.message for f in findings)


def test_every_client_in_the_table_is_a_check_client_choice(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(op.log, "level", op.log.level)  # check sets it for the process
    catalog = tmp_path / "tools.json"
    catalog.write_text('{"tools": []}')
    for client in op.CLIENTS:
        assert op.main(["check", "--client", client, "--file", str(catalog)]) == 0


# Each client's own cut (unit, figure), as measured or documented; a profile
# must stay under it with a margin, in the unit that client counts.
CLIENT_CUTS = {
    "cursor": ("budget_chars", 12000),
    "claude-code": ("budget_chars", 50000),
    "codex": ("budget_bytes", 12000),   # models Codex does not know; 48,000 for its catalog's
    "gemini-cli": ("budget_chars", 40000),
    "copilot": ("budget_bytes", 20000),
}


def profiles():
    return {name: client["profile"] for name, client in op.CLIENTS.items() if client["profile"]}


def test_every_profile_has_every_setting_and_a_budget_under_its_clients_cut():
    keys = {"budget_chars", "budget_bytes", "preview_chars", "strip_output_schema", "shows_images", "model_skips",
            "client_names"}
    assert set(profiles()) == set(CLIENT_CUTS) | {"generic"}
    for name, profile in profiles().items():
        assert set(profile) == keys, name
        assert 0 < profile["preview_chars"] < profile["budget_chars"], name
    for name, (unit, cut) in CLIENT_CUTS.items():
        budget = profiles()[name][unit]
        assert 0 < budget <= cut * 0.85, (name, budget, cut)
    generic = profiles()["generic"]
    assert (generic["budget_chars"], generic["budget_bytes"]) == (op.MAX_RESPONSE_CHARS, 0) == (10000, 0)
    assert [n for n, p in profiles().items() if not p["strip_output_schema"]] == ["codex"]
    assert [n for n, p in profiles().items() if p["shows_images"]] == ["claude-code", "codex", "gemini-cli"]
    # clients.md section 2: Codex shows structuredContent alone, Gemini CLI content alone; Claude Code
    # 2.1.332 as Codex (measured in the real-client tier)
    assert {n: p["model_skips"] for n, p in profiles().items() if p["model_skips"]} == {
        "claude-code": "content", "codex": "content", "gemini-cli": "structuredContent"}


def test_client_names_pick_their_profile_and_anything_else_is_generic():
    names = [n for profile in profiles().values() for n in profile["client_names"]]
    assert len(names) == len(set(names))
    assert [op.client_profile_for(n) for n in ("claude-code", "codex-mcp-client", "gemini-cli-mcp-client",
                                               "cursor-vscode", "github-copilot-developer")] == [
        "claude-code", "codex", "gemini-cli", "cursor", "copilot"]
    for other in ("Visual Studio Code", "CLAUDE-CODE", "", None, 7, "generic"):
        assert op.client_profile_for(other) == "generic"


def test_every_profile_is_a_client_choice_of_the_relay():
    assert op.CLIENT_CHOICES == ("auto",) + tuple(profiles())
