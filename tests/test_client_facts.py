"""Client facts: the one table of client limits and name rules, and that its readers follow it."""
import ocx_proxy as op


def tool(name):
    return {"name": name, "description": "d", "inputSchema": {"type": "object"}}


def test_check_and_the_mcp_tools_warnings_take_cursors_limits_from_the_table(monkeypatch):
    monkeypatch.setitem(op.CLIENT_FACTS["cursor"], "name_chars", 8)
    monkeypatch.setitem(op.CLIENT_FACTS["cursor"], "mcp_tools_count", 1)
    findings = op.CatalogChecker("srv").check({"tools": [tool("short"), tool("longer")]})
    messages = [f.message for f in findings if f.clients == ("cursor",)]
    assert any("exceed 8 characters ('srv' + 'longer' = 9)" in m for m in messages), messages
    assert any("about" in m and "and 1 tools are the most Cursor accepts" in m for m in messages), messages
    assert op.cursor_limit_warnings(2, 0) == [
        "2 tool definitions exceed Cursor's limit of about 1; expect resource_exhausted"]


def test_openai_function_names_and_their_sanitising_follow_one_length():
    assert op.CLIENT_FACTS["openai"]["function_name_chars"] == 64
    long_a, long_b = "a" * 64 + "x", "a" * 64 + "y"
    findings = op.CatalogChecker("s").check({"tools": [tool(long_a), tool(long_b)]})
    assert any("collide after sanitising" in f.message for f in findings)
    assert any("at most 64 (^[A-Za-z0-9_-]{1,64}$)" in f.message for f in findings)


def test_every_client_in_the_table_is_a_check_client_choice(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(op.log, "level", op.log.level)  # check sets it for the process
    catalog = tmp_path / "tools.json"
    catalog.write_text('{"tools": []}')
    for client in op.CLIENT_FACTS:
        assert op.main(["check", "--client", client, "--file", str(catalog)]) == 0
