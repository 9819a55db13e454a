"""Clients: the one table of what each client and model API does (CLIENTS, the catalog rules), typed and sourced, and
that its readers follow it: every fact is read by code or tied here to what it bounds."""
import os
import re

import pytest

import ocx_proxy as op

from helpers import ROOT


def tool(name):
    return {"name": name, "description": "d", "inputSchema": {"type": "object"}}


def with_facts(monkeypatch, client, **facts):
    """CLIENTS[client] with ``facts`` changed, for this test."""
    entry = op.CLIENTS[client]
    monkeypatch.setitem(op.CLIENTS, client, entry._replace(facts=entry.facts._replace(**facts)))


def test_check_and_the_mcp_tools_warnings_take_cursors_limits_from_the_table(monkeypatch):
    with_facts(monkeypatch, "cursor", name_chars=8, mcp_tools_count=1)
    findings = op.CatalogChecker("srv").check({"tools": [tool("short"), tool("longer")]})
    messages = [f.message for f in findings if f.clients == ("cursor",)]
    assert any("exceed 8 characters ('srv' + 'longer' = 9)" in m for m in messages), messages
    assert any("about" in m and "and 1 tools are the most Cursor accepts" in m for m in messages), messages
    assert op.cursor_limit_warnings(2, 0) == [
        "2 tool definitions exceed Cursor's limit of about 1; expect resource_exhausted"]


def test_openai_function_names_and_their_sanitising_follow_one_length():
    assert op.CLIENTS["openai"].facts.function_name_chars == 64
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


# -- typed entries: a misspelt fact or setting fails at import -------------------------

def test_a_misspelt_fact_or_profile_setting_is_an_error_not_an_absent_fact():
    with pytest.raises(TypeError):
        op.client_entry("X", nmae_chars=(60, "https://example.com"))
    with pytest.raises(TypeError):
        op.Profile(budget_char=1000)
    with pytest.raises(AttributeError):
        op.CLIENTS["cursor"].facts.nmae_chars
    entry = op.client_entry("X", name_chars=(60, "https://example.com (X 1.0)"))
    assert entry.facts.name_chars == 60 and entry.sources.name_chars == "https://example.com (X 1.0)"
    assert entry.facts.result_chars is None and entry.profile is None and entry.aliases == {}


def profiles():
    return {name: client.profile for name, client in op.CLIENTS.items() if client.profile}


# -- budgets under each client's own cut -------------------------------------------------

UTF8_BYTES_PER_CJK = 3   # a CJK character: 3 UTF-8 bytes, about one token


def test_every_budget_stays_under_its_clients_cut_by_the_margin():
    """A profile's budget is at most BUDGET_MARGIN of the cut its client applies, in the unit it counts (the relay
    counts the whole JSON-RPC message, the client the text its model sees); the generic one is under every
    character cut of the table."""
    assert op.BUDGET_MARGIN == 0.85
    cut = {}
    for name, profile in profiles().items():
        facts = op.CLIENTS[name].facts
        if facts.result_chars:
            cut[name] = facts.result_chars
            assert 0 < profile.budget_chars <= op.BUDGET_MARGIN * facts.result_chars, name
        if facts.result_bytes:
            cut[name] = facts.result_bytes
            assert 0 < profile.budget_bytes <= op.BUDGET_MARGIN * facts.result_bytes, name
        if facts.result_tokens:   # CJK text of budget_bytes stays under the token cut
            assert 0 < profile.budget_bytes / UTF8_BYTES_PER_CJK <= op.BUDGET_MARGIN * facts.result_tokens, name
    # every client with a profile has its cut in the table, but generic and the Gemini API's clients (none known)
    assert set(profiles()) - set(cut) == {"generic", "gemini-api"}
    generic = profiles()["generic"]
    chars = [client.facts.result_chars for client in op.CLIENTS.values() if client.facts.result_chars]
    assert generic.budget_chars <= op.BUDGET_MARGIN * min(chars)
    assert (generic.budget_chars, generic.budget_bytes) == (op.MAX_RESPONSE_CHARS, 0) == (10000, 0)
    assert op.PREVIEW_CHARS == generic.preview_chars
    for name, profile in profiles().items():
        assert 0 < profile.preview_chars < profile.budget_chars, name


def test_what_each_profile_keeps_and_shows_as_measured():
    assert [n for n, p in profiles().items() if not p.strip_output_schema] == ["codex"]
    # the image case of the real-client tier (tests/interop/clients/test_clients.py)
    assert [n for n, p in profiles().items() if p.shows_images] == ["claude-code", "codex", "gemini-cli",
                                                                    "opencode", "qwen-code", "codebuddy"]
    # the structured case of the tier: Codex and Claude Code 2.1.332 show structuredContent alone, Gemini CLI 0.61.0
    # OpenCode 1.18.33 and CodeBuddy 2.117.0 content alone (Qwen Code 0.24.4 and Copilot CLI 1.0.102 both)
    assert {n: p.model_skips for n, p in profiles().items() if p.model_skips} == {
        "claude-code": "content", "codex": "content", "gemini-cli": "structuredContent",
        "opencode": "structuredContent", "codebuddy": "structuredContent"}
    # the model API each agent CLI hands the schemas to
    assert {n: p.model_apis for n, p in profiles().items() if p.model_apis} == {
        "claude-code": ("anthropic",), "codex": ("openai",), "gemini-api": ("gemini-api",)}
    assert all(op.CLIENTS[api].kind == "api" for p in profiles().values() for api in p.model_apis)


def test_client_names_pick_their_profile_and_anything_else_is_generic():
    names = [n for profile in profiles().values() for n in profile.client_names]
    assert len(names) == len(set(names))
    assert [op.client_for_info_name(n) for n in ("claude-code", "codex-mcp-client", "gemini-cli-mcp-client",
                                                 "cursor-vscode", "copilot-cli", "github-copilot-developer",
                                                 "opencode", "qwen-cli-mcp-client-fx", "qwen-cli-mcp-client-")] == [
        "claude-code", "codex", "gemini-cli", "cursor", "copilot", "copilot", "opencode", "qwen-code", "qwen-code"]
    for other in ("Visual Studio Code", "CLAUDE-CODE", "", None, 7, "generic", "qwen-cli-mcp-client",
                  "x-qwen-cli-mcp-client-fx", "claude-ai"):
        assert op.client_for_info_name(other) == "generic"


def test_a_client_named_by_the_environment_it_gives_its_servers_unless_its_client_info_names_one():
    codebuddy = {"CODEBUDDY_SERVICE_PROXY_URL": "http://127.0.0.1:1/internal/hooks/services/invoke"}
    assert op.client_for_info_name("fx", codebuddy) == "codebuddy"   # clientInfo.name: the user's name for the server
    assert op.client_for_info_name(None, codebuddy) == "codebuddy"
    assert op.client_for_info_name("claude-code", codebuddy) == "claude-code"
    assert op.client_for_info_name("fx", {"CODEBUDDY_API_KEY": "k"}) == "generic"
    assert op.client_for_info_name("fx", {}) == "generic"


def test_every_profile_is_a_client_choice_of_the_relay():
    assert op.CLIENT_CHOICES == ("auto",) + tuple(profiles())


# -- every fact read by code, or tied by a test to what it bounds ---------------------------

# Facts no code reads: each is held here to what it bounds.
TIED_BY_TESTS = {
    "result_chars": "test_every_budget_stays_under_its_clients_cut_by_the_margin",
    "result_bytes": "test_every_budget_stays_under_its_clients_cut_by_the_margin",
    "result_tokens": "test_every_budget_stays_under_its_clients_cut_by_the_margin",
    "start_seconds": "tests/interop/clients/test_clocks.py test_slow_start_direct_is_recorded, and "
                     "test_each_clients_clock_is_a_fact_with_its_source_and_its_profiles_defaults_beat_it",
    "deferred_tools": "tests/interop/clients/test_codebuddy.py (the reader found through ToolSearch by its "
                      "description), and test_deferred_tools_are_codebuddys",
}


def code():
    """ocx_proxy.py without its comments (the table names facts as keywords: ``name_chars=``; code reads them as
    attributes: ``.name_chars``)."""
    with open(os.path.join(ROOT, "ocx_proxy.py"), encoding="utf-8") as handle:
        return "".join(line for line in handle if not line.lstrip().startswith("#"))


def test_every_fact_is_read_by_code_or_tied_by_a_test():
    code_text = code()
    for fact in op.Facts._fields:
        read = re.search(r"\.%s\b" % fact, code_text) or fact in {row.fact for row in op.NAME_LENGTH_RULES}
        assert read or fact in TIED_BY_TESTS, "%s: no code reads it and no test ties it: delete it" % fact
        assert any(getattr(client.facts, fact) is not None for client in op.CLIENTS.values()), fact
    for field in op.Profile._fields:
        assert re.search(r"\.%s\b" % field, code_text), field
    assert all(row.fact in op.Facts._fields and row.client in op.CLIENTS for row in op.NAME_LENGTH_RULES)


# -- sources anyone can open ---------------------------------------------------------------

URL_RE = re.compile(r"https://[^\s,;)]+")
PATH_RE = re.compile(r"(?<![\w/.-])((?:tests/)?[\w.-]+(?:/[\w.-]+)*\.(?:py|md|json))\b")
NOT_A_SOURCE_RE = re.compile(r"clients\.md|§|\bissues? \d+|\bitem \d+", re.I)


def source_problem(source):
    """Why ``source`` is no source anyone can open (None: it is one): a public URL or a file of this repository."""
    if not isinstance(source, str) or NOT_A_SOURCE_RE.search(source):
        return "names a file outside the repository or an issue number"
    paths = PATH_RE.findall(URL_RE.sub(" ", source))
    missing = [path for path in paths if not os.path.exists(os.path.join(ROOT, path))]
    if missing:
        return "no such file in the repository: %s" % missing
    return None if URL_RE.search(source) or paths else "neither a URL nor a file of the repository"


def all_sources():
    for name, client in op.CLIENTS.items():
        for fact in op.Facts._fields:
            if getattr(client.facts, fact) is not None:
                yield "%s %s" % (name, fact), getattr(client.sources, fact)
    for rule, row in op.CATALOG_RULES.items():
        yield rule, row.ref


def test_every_fact_and_rule_has_a_source_anyone_can_open():
    for name, client in op.CLIENTS.items():
        for fact in op.Facts._fields:   # a source for every fact, and no source without one
            assert (getattr(client.facts, fact) is None) == (getattr(client.sources, fact) is None), (name, fact)
    found = list(all_sources())
    assert len(found) > 40
    problems = [(what, source_problem(source), source) for what, source in found if source_problem(source)]
    assert not problems, "\n".join("%s: %s: %r" % problem for problem in problems)
    for rule, row in op.CATALOG_RULES.items():
        assert row.observed and not NOT_A_SOURCE_RE.search(row.observed), rule
        assert set(row.clients) <= set(op.CLIENTS) | {"all"}, rule
    with open(os.path.join(ROOT, "ocx_proxy.py"), encoding="utf-8") as handle:
        assert not re.search(r"clients\.md|§", handle.read())


@pytest.mark.parametrize("source,ok", [
    ("https://github.com/awslabs/mcp/issues/1283 (Cursor 1.6.14)", True),
    ("tests/interop/clients/measure_clocks.py startup (codex 0.171.0)", True),
    ("vendor_proto_notes.md, Limits", True),
    ("clients.md §1 (measured, Claude Code 2.1.332)", False),
    ("measured, see issue 29", False),
    ("issue 14 item 5 (measured on a public server)", False),
    ("tests/interop/clients/no_such_script.py (codex 0.171.0)", False),
    ("measured, claude-code 2.1.332", False),
])
def test_the_source_rule_tells_an_open_source_from_a_closed_one(source, ok):
    assert (source_problem(source) is None) == ok, source_problem(source)


# -- the one table: names, aliases ---------------------------------------------------------

COMMANDS = ("relay", "check", "capture")


def test_every_entry_has_a_kind_a_known_config_format_and_aliases_of_known_commands():
    for name, client in op.CLIENTS.items():
        assert client.display and client.kind in ("agent", "api"), name
        assert client.config in op.CONFIG_FORMATS + (None,), name
        assert client.profile is None or client.kind == "agent" or name == "gemini-api", name
        for alias, commands in client.aliases.items():
            assert alias not in op.CLIENTS and set(commands) <= set(COMMANDS), (name, alias)


def test_every_capture_setup_starts_the_bridge_and_its_hint_fills_in():
    # capture --print-config CLIENT prints the entry and the hint for each CLIENTS entry with a capture setup
    assert op.CAPTURE_CLIENTS == ("claude-code", "codex", "gemini-cli", "copilot", "opencode", "qwen-code", "codebuddy")
    for name in op.CAPTURE_CLIENTS:
        setup = op.CLIENTS[name].capture
        text = op.client_config_entry(name, "srv", "/usr/bin/python3", ["bridge.py", "capture"])
        assert all(part in text for part in ("srv", "/usr/bin/python3", "bridge.py", setup.table)), (name, text)
        assert "<" not in text, (name, text)   # every placeholder filled in
        assert "srv" in setup.hint % {"name": "srv", "allowed": "mcp__srv__t"} or "%(allowed)s" in setup.hint, name


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
            assert op.client_profile(old) is op.CLIENTS[name].profile
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


# -- the clients' clocks -----------------------------------------------------------------------

# (seconds a tool call may take, whether progress resets that clock): the six CLIs measured with the real binaries
# (tests/interop/clients: test_clocks.py checks progress_resets against the table on every tier run); the others
# the TypeScript SDK's, which most clients inherit (public source)
CLIENT_CLOCKS = {
    "generic": (60, False),
    "cursor": (60, False),        # nothing published: the SDK's
    "claude-code": (120, False),  # terminal UI: moved to the background past 120 s; -p: none in 200 s
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
# when turn 1 came for a server up after 90 s (0: it does not wait; Gemini CLI waited for all of the 90 s); the tier's
# slow start (a server up after 3 s) checks which of them wait (test_clocks.py).  CodeBuddy: its MCP_TIMEOUT, with a
# server up at once (test_codebuddy.py)
START_SECONDS = {"codex": 0, "claude-code": 28, "gemini-cli": 90, "copilot": 68, "opencode": 38, "qwen-code": 36,
                 "codebuddy": 30}


def test_each_clients_clock_is_a_fact_with_its_source_and_its_profiles_defaults_beat_it():
    for name, (seconds, resets) in CLIENT_CLOCKS.items():
        facts = op.CLIENTS[name].facts
        assert (facts.call_seconds, facts.progress_resets) == (seconds, resets), name
        heartbeat, detach = op.heartbeat_seconds(seconds), op.detach_seconds(seconds)
        assert 0 < heartbeat <= min(30, seconds / 4.0), name   # several beats before the clock runs out
        assert 0 < detach <= seconds - 10 and detach <= seconds * 0.9, name   # answered in time, with a margin
    for name, client in op.CLIENTS.items():
        for fact in ("call_seconds", "progress_resets", "start_seconds"):
            source = getattr(client.sources, fact)
            if source is None:
                continue
            if name in MEASURED:   # our measurement, naming the file that measured it and the CLI's version
                assert MEASURED[name] in source and "tests/interop/clients/" in source, (name, fact)
            else:
                assert source.endswith(op.NOT_REMEASURED) and "https://" in source, (name, fact)
    # every client the relay has a profile for has a clock: the defaults of --heartbeat and --detach-after
    assert {n for n, c in op.CLIENTS.items() if c.facts.call_seconds is not None} == set(CLIENT_CLOCKS) == set(
        profiles())
    assert {n: c.facts.start_seconds for n, c in op.CLIENTS.items() if c.facts.start_seconds is not None} == \
        START_SECONDS
    assert (op.heartbeat_seconds(60), op.detach_seconds(60)) == (15, 50)
    assert (op.heartbeat_seconds(300), op.detach_seconds(300)) == (30, 270)
    # Claude Code, decided: detach at 108 s, before its terminal UI moves the call to the background at 120 s
    assert op.detach_seconds(op.CLIENTS["claude-code"].facts.call_seconds) == 108
    assert "the relay detaches at 108 s" in op.CLIENTS["claude-code"].sources.call_seconds
    # Copilot CLI and OpenCode: progress resets their clock, so heartbeats keep a long call alive there
    assert [n for n, c in op.CLIENTS.items() if c.facts.progress_resets] == ["copilot", "opencode"]


def test_deferred_tools_are_codebuddys():
    # Qwen Code hides MCP tools behind its own tool_search too, but that was not measured as a fact of the table
    assert [n for n, c in op.CLIENTS.items() if c.facts.deferred_tools] == ["codebuddy"]


# -- the README's client table ---------------------------------------------------------------

def readme_client_rows(text):
    """(display name, --client name) of each row of the table under ``## Clients``."""
    section = text.split("\n## Clients\n", 1)[1].split("\n## ", 1)[0]
    lines = section.splitlines()
    rows = []
    for before, line in zip([""] + lines, lines):
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")] if line.startswith("|") else []
        # a data row: after the header row and its |---| rule
        if before.startswith("|") and not re.match(r"^[|\s:-]+$", line) and len(cells) >= 2:
            rows.append((cells[0], cells[1].strip("`")))
    return rows


def test_the_readme_client_table_agrees_with_the_clients_table():
    """Every row of README.md's Clients table is an agent client of CLIENTS under its display name, and every one
    the relay has a profile for (but generic, any other client) has its row."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as handle:
        text = handle.read()
    assert "\n## Clients\n" in text, "README.md has no '## Clients' section with the table of clients"
    rows = readme_client_rows(text)
    assert rows and len(rows) == len(set(name for _, name in rows)), rows
    for display, name in rows:
        assert name in op.CLIENTS and op.CLIENTS[name].kind == "agent", name
        assert display == op.CLIENTS[name].display, (display, name)
    assert set(profiles()) - {"generic", "gemini-api"} <= {name for _, name in rows}


def test_the_client_table_reader_reads_a_table_of_that_shape():
    text = ("intro\n## Clients\n\nWords.\n\n| Client | `--client` | config file |\n|---|---|---|\n"
            "| Claude Code | `claude-code` | `~/.claude.json` |\n| Codex | `codex` | `~/.codex/config.toml` |\n\n"
            "## Next\n| Other | `other` |\n")
    assert readme_client_rows(text) == [("Claude Code", "claude-code"), ("Codex", "codex")]
