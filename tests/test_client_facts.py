"""Client facts: the one table of client limits and name rules, and that its readers follow it."""
import pytest

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
    "copilot": ("budget_bytes", 20480),  # measured, copilot 1.0.102
    "opencode": ("budget_bytes", 51200),   # measured, opencode 1.18.33
    "qwen-code": ("budget_chars", 28000),  # measured, qwen-code 0.24.4
    "codebuddy": ("budget_chars", 80000),  # measured, codebuddy 2.117.0
}


def profiles():
    return {name: client["profile"] for name, client in op.CLIENTS.items() if client["profile"]}


def test_every_profile_has_every_setting_and_a_budget_under_its_clients_cut():
    keys = {"budget_chars", "budget_bytes", "preview_chars", "strip_output_schema", "shows_images", "model_skips",
            "client_names", "model_apis", "client_env", "call_seconds", "progress_resets"}
    # gemini-api: for the clients that hand a catalog to the Gemini API's legacy parameters (no cut known)
    assert set(profiles()) == set(CLIENT_CUTS) | {"generic", "gemini-api"}
    for name, profile in profiles().items():
        assert set(profile) == keys, name
        assert 0 < profile["preview_chars"] < profile["budget_chars"], name
    for name, (unit, cut) in CLIENT_CUTS.items():
        budget = profiles()[name][unit]
        assert 0 < budget <= cut * 0.85, (name, budget, cut)
    generic = profiles()["generic"]
    assert (generic["budget_chars"], generic["budget_bytes"]) == (op.MAX_RESPONSE_CHARS, 0) == (10000, 0)
    assert [n for n, p in profiles().items() if not p["strip_output_schema"]] == ["codex"]
    assert [n for n, p in profiles().items() if p["shows_images"]] == ["claude-code", "codex", "gemini-cli",
                                                                       "opencode", "qwen-code", "codebuddy"]
    # clients.md section 2: Codex shows structuredContent alone, Gemini CLI content alone; Claude Code
    # 2.1.332 as Codex (measured in the real-client tier)
    assert {n: p["model_skips"] for n, p in profiles().items() if p["model_skips"]} == {
        "claude-code": "content", "codex": "content", "gemini-cli": "structuredContent",
        "opencode": "structuredContent", "codebuddy": "structuredContent"}   # OpenCode 1.18.33, Qwen Code 0.24.4,
    # CodeBuddy 2.117.0: measured
    # clients.md section 4: the model API each agent CLI hands the schemas to
    assert {n: p["model_apis"] for n, p in profiles().items() if p["model_apis"]} == {
        "claude-code": ("anthropic",), "codex": ("openai",), "gemini-api": ("gemini-api",)}
    assert all(op.CLIENTS[api]["kind"] == "api" for p in profiles().values() for api in p["model_apis"])


def test_client_names_pick_their_profile_and_anything_else_is_generic():
    names = [n for profile in profiles().values() for n in profile["client_names"]]
    assert len(names) == len(set(names))
    assert [op.client_profile_for(n) for n in ("claude-code", "codex-mcp-client", "gemini-cli-mcp-client",
                                               "cursor-vscode", "copilot-cli", "github-copilot-developer", "opencode",
                                               "qwen-cli-mcp-client-fx", "qwen-cli-mcp-client-")] == [
        "claude-code", "codex", "gemini-cli", "cursor", "copilot", "copilot", "opencode", "qwen-code", "qwen-code"]
    for other in ("Visual Studio Code", "CLAUDE-CODE", "", None, 7, "generic", "qwen-cli-mcp-client",
                  "x-qwen-cli-mcp-client-fx"):
        assert op.client_profile_for(other) == "generic"


def test_a_client_named_by_the_environment_it_gives_its_servers_unless_its_client_info_names_one():
    codebuddy = {"CODEBUDDY_SERVICE_PROXY_URL": "http://127.0.0.1:1/internal/hooks/services/invoke"}
    assert op.client_profile_for("fx", codebuddy) == "codebuddy"   # clientInfo.name: the user's name for the server
    assert op.client_profile_for(None, codebuddy) == "codebuddy"
    assert op.client_profile_for("claude-code", codebuddy) == "claude-code"
    assert op.client_profile_for("fx", {"CODEBUDDY_API_KEY": "k"}) == "generic"
    assert op.client_profile_for("fx", {}) == "generic"


def test_every_profile_is_a_client_choice_of_the_relay():
    assert op.CLIENT_CHOICES == ("auto",) + tuple(profiles())


# -- the one table: sources, names, aliases ---------------------------------------

ENTRY_KEYS = {"display", "kind", "aliases", "facts", "sources", "profile", "config"}
COMMANDS = ("relay", "check", "capture")


def test_every_client_has_a_source_for_every_fact():
    for name, client in op.CLIENTS.items():
        assert set(client) == ENTRY_KEYS, name
        assert set(client["sources"]) == set(client["facts"]), name
        for fact, source in client["sources"].items():
            assert isinstance(source, str) and len(source) > 10, (name, fact)
            value = client["facts"][fact]
            flags = ("progress_resets", "late_tools", "deferred_tools")
            assert value in (True, False) if fact in flags else type(value) is int and (
                value > 0 or fact == "start_seconds" and value == 0), \
                (name, fact)
        assert client["kind"] in ("agent", "api") and client["config"] in op.CONFIG_FORMATS + (None,), name
        assert client["profile"] is None or client["kind"] == "agent" or name == "gemini-api", name
        for alias, commands in client["aliases"].items():
            assert alias not in op.CLIENTS and set(commands) <= set(COMMANDS), (name, alias)


# The spellings each command took before the one table, and what they meant there.
OLD_SPELLINGS = {
    "relay": {"cursor": "cursor", "claude-code": "claude-code", "codex": "codex", "gemini": "gemini-cli",
              "copilot": "copilot", "generic": "generic"},
    "check": {"cursor": "cursor", "claude-code": "claude-code", "claude-desktop": "claude-desktop", "codex": "codex",
              "gemini-cli": "gemini-cli", "vscode": "vscode", "windsurf": "windsurf", "anthropic": "anthropic",
              "openai": "openai", "gemini": "gemini-api"},
    "capture": {"claude": "claude-code", "codex": "codex", "gemini": "gemini-cli"},
}


def parsed(argv):
    args = op.build_parser(argv[0]).parse_args(argv)
    op.resolve_env_defaults(args)
    return args


@pytest.mark.parametrize("command", COMMANDS)
def test_each_old_spelling_still_resolves_to_what_it_meant(command, tmp_path, monkeypatch):
    monkeypatch.delenv("OCX_PROXY_CLIENT", raising=False)
    catalog = tmp_path / "tools.json"
    catalog.write_text('{"tools": []}')
    for old, name in OLD_SPELLINGS[command].items():
        assert op.client_named(old, command) == name
        if command == "relay":
            assert parsed(["stdio", "--client", old]).client == name
            monkeypatch.setenv("OCX_PROXY_CLIENT", old)
            assert parsed(["stdio"]).client == name
            monkeypatch.delenv("OCX_PROXY_CLIENT")
            assert op.client_profile(old) is op.CLIENTS[name]["profile"]
        elif command == "check":
            assert parsed(["check", "--client", old, "--file", str(catalog)]).client == name
        else:
            assert parsed(["capture", "--catalog", str(catalog), "--print-config", old]).print_config == name
    assert parsed(["capture", "--catalog", str(catalog), "--print-config"]).print_config == "claude-code"


@pytest.mark.parametrize("command,needle", [("stdio", "gemini still means gemini-cli (deprecated)"),
                                            ("check", "gemini still means gemini-api (deprecated)"),
                                            ("capture", "claude still means claude-code (deprecated)")])
def test_the_help_of_each_command_names_its_old_spellings(command, needle, capsys):
    with pytest.raises(SystemExit):
        op.main([command, "--help"])
    assert needle in " ".join(capsys.readouterr().out.split())


def test_a_relay_given_the_old_name_takes_gemini_clis_profile(relay_factory):
    relay = relay_factory(["--client", "gemini"])
    relay.initialize()
    relay.close()
    assert "client profile gemini-cli (--client)" in relay.stderr


def test_the_combined_counts_of_a_config_are_the_catalog_rules_with_their_source():
    server = op.ConfigServer("a", "/mcpServers/a")
    result = ({"report": {"cursorMcpToolsBytes": 200000}}, ["t%d" % i for i in range(60)])
    findings, count, size = op.combined_findings("json", [server], [result])
    assert (count, size) == (60, 200000)
    rules = [(f.rule, f.severity, f.clients, f.pointer) for f in findings]
    assert rules == [("cursor-tool-count-old", "warning", ("cursor",), "/mcpServers"),
                     ("cursor-mcp-tools-size", "error", ("cursor",), "/mcpServers"),
                     ("windsurf-config-tool-count", "error", ("windsurf",), "/mcpServers")]
    for finding in findings:
        row = op.CATALOG_RULES[finding.rule]
        assert finding.source == {"ref": row.ref, "observed": row.observed}
    assert "60 tools in all" in findings[0].message and "200000 bytes for 60 tools in all" in findings[1].message
    assert op.combined_findings("codex", [server], [result])[0] == []   # Codex: no count rule


# -- the clients' clocks (issue 29) ------------------------------------------------

# (seconds a tool call may take, whether progress resets that clock): the six CLIs measured with the real binaries
# (tests/interop/clients: test_clocks.py checks progress_resets against the profiles on every tier run); the
# others from public sources (clients.md section 8)
CLIENT_CLOCKS = {
    "generic": (60, False),       # the TypeScript SDK's, which most clients inherit
    "cursor": (60, False),        # nothing published: the SDK's
    "claude-code": (120, False),  # interactive: moved to the background past 120 s (public); -p: none in 200 s
    "codex": (300, False),        # tool_timeout_sec
    "gemini-cli": (600, False),
    "copilot": (180, True),
    "opencode": (60, True),
    "qwen-code": (300, False),   # its idle clock: progress restarts it, but not past its overall limit
    "codebuddy": (100000, False),   # MCP_TOOL_TIMEOUT, 1e8 ms by default
    "gemini-api": (60, False),
}
MEASURED = {"claude-code": "claude-code 2.1.332", "codex": "codex 0.171.0", "gemini-cli": "gemini-cli 0.61.0",
            "copilot": "copilot 1.0.102", "opencode": "opencode 1.18.33", "qwen-code": "qwen-code 0.24.4",
            "codebuddy": "codebuddy 2.117.0"}
# when turn 1 came for a server up after 90 s (0: it does not wait; Gemini CLI waited for all of the 90 s)
START_SECONDS = {"codex": 0, "claude-code": 28, "gemini-cli": 90, "copilot": 68, "opencode": 38, "qwen-code": 36,
                 "codebuddy": 30}   # CodeBuddy: its MCP_TIMEOUT, with a server up at once (test_codebuddy.py)


def test_each_clients_clock_is_a_fact_with_its_source_and_its_profiles_defaults_beat_it():
    for name, (seconds, resets) in CLIENT_CLOCKS.items():
        profile = profiles()[name]
        assert (profile["call_seconds"], profile["progress_resets"]) == (seconds, resets), name
        heartbeat, detach = op.heartbeat_seconds(profile), op.detach_seconds(profile)
        assert 0 < heartbeat <= min(30, seconds / 4.0), name   # several beats before the clock runs out
        assert 0 < detach <= seconds - 10 and detach <= seconds * 0.9, name   # answered in time, with a margin
    for name, client in op.CLIENTS.items():
        for fact in ("call_seconds", "progress_resets", "start_seconds", "late_tools"):
            if fact not in client["facts"]:
                continue
            source = client["sources"][fact]
            if name in MEASURED:   # our measurement, naming the CLI and its version
                assert "measured, %s" % MEASURED[name] in source, (name, fact)
            else:
                assert "clients.md §8" in source or "#" in source, name
                assert source.endswith("public source, not re-measured"), (name, fact)
    assert {n for n, c in op.CLIENTS.items() if "call_seconds" in c["facts"]} == {
        "generic", "claude-code", "codex", "gemini-cli", "copilot", "opencode", "qwen-code", "codebuddy"}
    assert {n for n, c in op.CLIENTS.items() if "progress_resets" in c["facts"]} == set(MEASURED) | {"generic"}
    assert {n: c["facts"]["start_seconds"] for n, c in op.CLIENTS.items() if "start_seconds" in c["facts"]} == \
        START_SECONDS
    # measure_clocks.py late: only Codex offers a server's tools in a later turn (Gemini CLI waits for it)
    assert {n: c["facts"]["late_tools"] for n, c in op.CLIENTS.items() if "late_tools" in c["facts"]} == {
        "codex": True, "claude-code": False, "copilot": False, "opencode": False, "qwen-code": False}
    assert (op.heartbeat_seconds(profiles()["generic"]), op.detach_seconds(profiles()["generic"])) == (15, 50)
    assert (op.heartbeat_seconds(profiles()["codex"]), op.detach_seconds(profiles()["codex"])) == (30, 270)
    # Copilot CLI and OpenCode: progress resets their clock, so heartbeats keep a long call alive there
    assert [n for n, p in profiles().items() if p["progress_resets"]] == ["copilot", "opencode"]
