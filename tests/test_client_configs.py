"""check --config: one configuration per client format, each server checked, the combined rules, the TOML reader."""
import json
import os
import re
import subprocess
import sys

import pytest

from helpers import FIXTURES, PROXY

import ocx_proxy as op

CONFIGS = os.path.join(FIXTURES, "configs")
SECRET = "s3cret-token-value-never-shown"


def config_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env.update(PYTHON=sys.executable, FIXTURES=FIXTURES, CATALOG_TOKEN=SECRET, MCP_TOKEN=SECRET)
    env.pop("CODEX_CHECK_UNSET_TOKEN", None)
    env.update(extra)
    return env


def check_config(path, *extra, env=None, as_json=True):
    args = [sys.executable, PROXY, "check"] + (["--json"] if as_json else []) + ["--config", path] + list(extra)
    proc = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60, env=env or config_env())
    out, err = proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8")
    assert "Traceback" not in err and SECRET not in out and SECRET not in err
    return proc.returncode, (json.loads(out) if as_json and out.strip() else out), err


def by_name(report):
    return {server["name"]: server for server in report["servers"]}


def combined(report, scope=None):
    return [group for group in report["combined"] if group["scope"] == scope][0]


def codex_config(tmp_path):
    """The Codex fixture with this machine's paths (Codex expands no ${VAR}, so the test does)."""
    with open(os.path.join(CONFIGS, "codex_config.toml"), encoding="utf-8") as handle:
        text = handle.read().replace("@PYTHON@", sys.executable.replace("\\", "/")).replace("@FIXTURES@", FIXTURES.replace("\\", "/"))
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return str(path), text


def test_cursor_config_reports_every_server_in_order_failures_and_collisions():
    status, report, _ = check_config(os.path.join(CONFIGS, "cursor_mcp.json"), "--timeout", "1.5")
    assert status == 1 and report["version"] == 1 and report["format"] == "json"
    assert [s["name"] for s in report["servers"]] == ["my.server", "my_server", "missing", "mute", "unset", "old"]
    servers = by_name(report)
    assert servers["my.server"]["report"]["counts"]["tools"] == 2 and servers["my.server"]["transport"] == "stdio"
    assert "could not start" in servers["missing"]["error"]
    assert "no answer to initialize within 1.5 s" in servers["mute"]["error"]
    assert "NO_SUCH_VARIABLE_FOR_CHECK is not set" in servers["unset"]["error"]
    assert servers["old"]["skipped"] == "disabled: true" and "report" not in servers["old"]
    group = combined(report)
    assert group["tools"] == 4 and group["cursorMcpToolsBytes"] == 2 * servers["my.server"]["report"]["cursorMcpToolsBytes"]
    found = [(f["pointer"], f["severity"], f["clients"], f["message"].split(" alike")[0]) for f in group["findings"]]
    assert found == [
        ("/mcpServers/my_server", "error", ["claude-code"], "claude-code names my.server/search and my_server/search"),
        ("/mcpServers/my_server", "error", ["claude-code"], "claude-code names my.server/get_item and my_server/get_item"),
        ("/mcpServers/my_server", "error", ["windsurf"], "windsurf names my.server/search and my_server/search"),
        ("/mcpServers/my_server", "error", ["windsurf"], "windsurf names my.server/get_item and my_server/get_item")]
    assert "'mcp__my_server__search'" in group["findings"][0]["message"]
    assert report["summary"] == {"error": 7, "warning": 0, "info": 0}


def test_cursor_config_human_report_and_client_filter(tmp_path):
    with open(os.path.join(CONFIGS, "cursor_mcp.json"), encoding="utf-8") as handle:
        config = json.load(handle)
    del config["mcpServers"]["mute"]   # the timeout is the test above; this one stays fast
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(config))
    status, text, _ = check_config(str(path), "--client", "cursor", as_json=False)
    assert status == 1 and text.startswith("ocx-proxy check --config ")
    assert 'server "missing", stdio: error: could not be checked: could not start' in text
    assert 'server "old": skipped (disabled: true)' in text
    assert "all servers together: 4 tools, Cursor McpTools" in text and "windsurf" not in text


def test_claude_code_config_groups_servers_by_project(http_server):
    srv = http_server()
    status, report, _ = check_config(os.path.join(CONFIGS, "claude_code.json"), env=config_env(MCP_URL=srv.base + "/mcp"))
    assert [(s["name"], s["scope"], s["transport"]) for s in report["servers"]] == [
        ("catalog", None, "stdio"), ("catalog", "/home/user/app", "stdio"), ("remote", "/home/user/site", "streamable-http")]
    assert report["servers"][2]["report"]["server"]["name"] == "http-fixture"
    assert [(g["scope"], g["servers"]) for g in report["combined"]] == [
        (None, ["catalog"]), ("/home/user/app", ["catalog"]), ("/home/user/site", ["catalog", "remote"])]
    app = combined(report, "/home/user/app")
    # The project's own "catalog" replaces the user-wide one: 60 tools, not 62.
    assert app["tools"] == report["servers"][1]["report"]["counts"]["tools"] == 60
    assert [(f["pointer"], f["severity"], f["clients"]) for f in app["findings"]] == [
        ("/mcpServers", "warning", ["cursor"]), ("/mcpServers", "error", ["windsurf"])]
    assert status == 1


def test_gemini_settings_use_gemini_transports_names_and_tool_filters(http_server):
    srv = http_server()
    status, report, _ = check_config(os.path.join(CONFIGS, "gemini_settings.json"), env=config_env(MCP_URL=srv.base))
    assert report["format"] == "gemini"
    assert [(s["name"], s["transport"]) for s in report["servers"]] == [
        ("my", "stdio"), ("my_server", "stdio"), ("streamed", "streamable-http"), ("legacy", "sse")]
    servers = by_name(report)
    assert servers["my_server"]["report"]["counts"]["tools"] == 1          # excludeTools: get_item
    assert servers["legacy"]["report"]["server"]["name"] == "http-fixture"
    found = [f for f in combined(report)["findings"] if f["clients"] == ["gemini-cli"]]
    assert [(f["pointer"], f["severity"]) for f in found] == [("/mcpServers/my_server", "warning")]
    assert "'mcp_my_server_search'" in found[0]["message"] and "my/server_search and my_server/search" in found[0]["message"]
    assert status == 0


def test_codex_config_toml(tmp_path):
    path, _ = codex_config(tmp_path)
    status, report, _ = check_config(path, "--timeout", "5")
    assert status == 1 and report["format"] == "codex"
    servers = by_name(report)
    assert list(servers) == ["a", "a__b", "docs site", "paused", "remote"]
    assert servers["paused"]["skipped"] == "enabled = false"
    assert "CODEX_CHECK_UNSET_TOKEN, which is not set" in servers["remote"]["error"]
    assert servers["a__b"]["report"]["counts"]["tools"] == 1 and servers["docs site"]["report"]["counts"]["tools"] == 1
    found = [(f["pointer"], f["severity"], f["clients"]) for f in combined(report)["findings"]]
    assert found == [("/mcp_servers/a__b", "error", ["codex"]), ("/mcp_servers/docs site", "error", ["codex"])]
    assert "'mcp__a__b__search'" in combined(report)["findings"][0]["message"]


def test_servers_are_checked_at_most_parallel_at_a_time(tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()
    server = os.path.join(CONFIGS, "counting_server.py")
    spec = os.path.join(FIXTURES, "catalogs", "clean.json")
    config = {"mcpServers": {"s%d" % i: {"command": sys.executable, "args": [server, str(markers), spec]}
                             for i in range(5)}}
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(config))
    status, report, _ = check_config(str(path), "--parallel", "2")
    counts = [int(n) for n in (markers / "counts").read_text().split()]
    assert len(counts) == 5 and max(counts) == 2, counts
    assert [s["name"] for s in report["servers"]] == ["s0", "s1", "s2", "s3", "s4"] and status == 1


@pytest.mark.parametrize("content,name,needle", [
    (None, "absent.json", "could not read the configuration"),
    ("{\"mcpServers\": ", "mcp.json", "could not read the configuration"),
    ("{\"other\": {}}", "mcp.json", "has no mcpServers entries"),
    ("[mcp_servers.x]\ncommand = ", "config.toml", "is not valid TOML"),
    ("model = \"x\"\n", "config.toml", "has no [mcp_servers.NAME] tables"),
])
def test_unusable_config_exits_2_with_one_line(tmp_path, content, name, needle):
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    status, out, err = check_config(str(path), as_json=False)
    assert status == 2 and out == "" and needle in err and err.count("\n") == 1, err


@pytest.mark.parametrize("extra", [["--file", "x.json"], ["--server-name", "x"], ["stdio", "--", "true"]])
def test_config_with_another_source_is_a_usage_error(extra):
    args = [sys.executable, PROXY, "check", "--config", os.path.join(CONFIGS, "cursor_mcp.json")] + extra
    proc = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and "Traceback" not in err and "unrecognized" not in err
    assert "not --config and " in err or "not --file and --config" in err or "does not go with --config" in err, err


# -- a configuration from a cloned repository: what it makes us print --------

TELL = ("import os, sys, time; e = os.environ; sys.stderr.write('env: %s %s' % (e.get('T'), e.get('CATALOG_TOKEN'))); "
        "sys.stderr.flush(); time.sleep(0.3); sys.exit(3)")


def test_nothing_expanded_from_the_environment_is_printed(tmp_path):
    config = {"mcpServers": {
        "command": {"command": "${FIXTURES}/no-such-dir-${CATALOG_TOKEN}/server"},
        "cwd": {"command": "${PYTHON}", "args": ["-c", "pass"], "cwd": "${FIXTURES}/no-such-dir-${CATALOG_TOKEN}"},
        "args": {"command": "${PYTHON}", "args": ["${FIXTURES}/no-such-${CATALOG_TOKEN}.py"]},
        "env": {"command": "${PYTHON}", "args": ["-c", TELL], "env": {"T": "x${CATALOG_TOKEN}x"}},
        "url": {"url": "http://127.0.0.1:9/${CATALOG_TOKEN}", "type": "http"}}}
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(config))
    for as_json in (False, True):   # check_config asserts the secret is on neither stdout nor stderr
        status, report, _ = check_config(str(path), "--timeout", "5", as_json=as_json)
        assert status == 1
    assert [(s["name"], s["error"].count("[redacted]") >= 1) for s in report["servers"]] == [
        (name, True) for name in config["mcpServers"]]
    codex = tmp_path / "config.toml"
    codex.write_text('[mcp_servers.env]\ncommand = %s\nargs = ["-c", %s]\nenv_vars = ["CATALOG_TOKEN"]\n'
                     'env = { T = "from-the-file" }\n' % (json.dumps(sys.executable), json.dumps(TELL)))
    status, report, _ = check_config(str(codex))
    assert "exited with code 3" in report["servers"][0]["error"]
    assert "env: from-the-file [redacted]" in report["servers"][0]["error"]


NAMES = ["esc\x1b[31mred\x1b[0m", "forged\nerror   /mcpServers/x", "c1\x9b31m", "del\x7f", "sep\u2028line", "cr\rx"]


def test_server_names_are_printed_escaped(tmp_path):
    config = {"mcpServers": {name: {"command": "/no/such/ocx-test-server"} for name in NAMES}}
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(config))
    status, text, _ = check_config(str(path), as_json=False)
    text = text.replace("\r\n", "\n")   # Windows prints lines ending in \r\n (a text stream)
    assert status == 1 and not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]", text), text
    assert len(text.splitlines()) == len(text.split("\n")) - 1   # no character some viewer breaks a line at
    assert not [line for line in text.splitlines() if line.startswith("error")]
    assert "\\x9b31m" in text and "\\u2028" in text and "\\x7f" in text
    status, printed, _ = check_config(str(path), "--json", as_json=False)   # the text as printed
    assert not re.search("[\x7f-\x9f\u2028\u2029]", printed) and "\\u009b" in printed
    assert [s["name"] for s in json.loads(printed)["servers"]] == NAMES   # the same values


@pytest.mark.parametrize("name,content", [
    ("config.toml", "[mcp_servers.x]\ncommand = \"a\"\nargs = " + "[" * 100000 + "]" * 100000 + "\n"),
    ("config.toml", "[mcp_servers.x]\ncommand = \"a\"\nenv = " + "{a = " * 5000 + "1" + "}" * 5000 + "\n"),
    ("config.toml", "[mcp_servers.x]\ncommand = \"a\"\nargs = " + "[" * 300 + "]" * 300 + "\n"),
    ("config.toml", "[" + ".".join(["t"] * 300) + "]\n[mcp_servers.x]\ncommand = \"a\"\n"),
    ("mcp.json", '{"mcpServers": {"x": {"command": "a", "args": ' + "[" * 100000 + "]" * 100000 + "}}}"),
], ids=["toml-arrays", "toml-inline-tables", "toml-300-arrays", "toml-300-dotted-keys", "json-arrays"])
def test_deep_nesting_is_a_clear_exit_2(tmp_path, name, content):
    path = tmp_path / name
    path.write_text(content)
    status, out, err = check_config(str(path), as_json=False)
    assert status == 2 and out == "" and err.count("\n") == 1
    assert "is nested too deeply: more than 200 levels" in err, err


def test_an_integer_int_refuses_is_a_clear_exit_2(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text("[mcp_servers.x]\ncommand = \"a\"\nn = %s\n" % ("9" * 5000))
    status, out, err = check_config(str(path), as_json=False)
    assert status == 2 and out == "" and err.count("\n") == 1 and "is not valid TOML" in err, err


def test_long_values_are_cut_in_reports(tmp_path):
    config = {"mcpServers": {
        "n" * 30000: {"command": "/no/such/dir/" + "c" * 20000},    # fails to start: the message quotes it
        "huge": {"command": "/no/such/dir/x", "args": ["a" * 3000000]}}}   # no system starts it
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(config))
    status, text, _ = check_config(str(path), as_json=False)
    assert status == 1 and len(text) < 12000 and max(len(line) for line in text.splitlines()) < 4200  # a name and a message
    assert "(30000 characters)" in text and "3000014 characters" not in text and "3000000 characters" in text
    status, report, _ = check_config(str(path))
    strings = [s["name"] for s in report["servers"]] + [s["error"] for s in report["servers"]]
    assert max(len(value) for value in strings) < 2100 and len(json.dumps(report)) < 15000


def test_format_is_guessed_from_name_and_content():
    assert op.config_format("x/config.toml", "") == "codex"
    assert op.config_format("/home/u/.gemini/settings.json", "{}") == "gemini"
    assert op.config_format("mcp.json", '{"mcpServers": {"a": {"httpUrl": "http://h"}}}') == "gemini"
    assert op.config_format("/home/u/.cursor/mcp.json", '{"mcpServers": {}}') == "json"


def test_client_name_schemes():
    assert op.claude_code_tool_name("my.server", "get item") == "mcp__my_server__get_item"
    long = op.gemini_tool_name("srv", "t" * 70)
    assert len(long) == 63 and long == ("mcp_srv_" + "t" * 70)[:30] + "..." + ("t" * 70)[-30:]
    assert op.gemini_tool_name("a b", "c/d") == "mcp_a_b_c_d"


# -- the TOML reader for Pythons without tomllib ---------------------------------

tomllib = pytest.importorskip("tomllib") if sys.version_info >= (3, 11) else None


@pytest.mark.skipif(tomllib is None, reason="tomllib (Python 3.11+) is the reference")
def test_toml_reader_reads_the_codex_fixture_like_tomllib(tmp_path):
    _, text = codex_config(tmp_path)
    assert op.TomlReader(text).parse() == tomllib.loads(text)


@pytest.mark.skipif(tomllib is None, reason="tomllib (Python 3.11+) is the reference")
@pytest.mark.parametrize("text", [
    'a = "tab\\there \\u00e9 \\U0001F600 \\"q\\" \\\\"\n',
    "a = 'C:\\path\\no escapes'\nb = '''\nline one\n  'quoted' \"\"\n'''\n",
    'a = """\\\n    folded \\\n    text"""\nb = """two ""quotes"" at end"""""\n',
    "n = [1_000, 0x1F, 0o17, 0b101, +7, 1.5e3, -0.25, inf]\nt = true\nf = false\n",
    "[x.'y z'.\"w\"]\nk = 1\n[[arr]]\nn = 1\n[[arr]]\nn = 2\n[x]\nm = {a = 1, b = {c = [1, [2, 'x']]}}\n",
    "a.b.c = 1\na.d = 'e' # trailing comment\n\n# comment\n\t\"q\".r = [\n 1, # one\n 2,\n]\r\n",
])
def test_toml_reader_matches_tomllib(text):
    assert op.TomlReader(text).parse() == tomllib.loads(text)


@pytest.mark.parametrize("text,needle", [
    ("a = 1979-05-27\n", "line 1: unsupported value"),
    ("a = 1\nb = \"open\n", "line 2: control character"),
    ("a = 1\na = 2\n", "line 2: key a defined twice"),
    ("[t]\n[t]\n", "line 2: table [t] defined twice"),
    ("a = 1 b = 2\n", "line 1: expected the end of the line"),
    ("a = \"\\x41\"\n", "unknown escape"),
    ("a = [1 2]\n", "expected ',' or ']'"),
    ("a = 007\n", "unsupported value"),
])
def test_toml_reader_refuses_what_it_does_not_know(text, needle):
    with pytest.raises(op.OcxError) as info:
        op.TomlReader(text).parse()
    assert needle in str(info.value)


@pytest.mark.skipif(tomllib is None, reason="tomllib (Python 3.11+) is the reference")
def test_toml_reader_property_against_tomllib():
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies
    keys = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x7f"), min_size=1, max_size=8)
    scalars = st.one_of(st.booleans(), st.integers(-2 ** 63, 2 ** 63 - 1), st.text(max_size=20),
                        st.floats(allow_nan=False, allow_infinity=False))
    values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                           st.dictionaries(keys, inner, max_size=4)), max_leaves=10)
    documents = st.dictionaries(keys, st.one_of(values, st.dictionaries(keys, values, max_size=4)), max_size=5)

    @hypothesis.settings(max_examples=60, deadline=None)
    @hypothesis.given(documents, st.booleans())
    def check(document, literal):
        text = toml_text(document, literal)
        assert op.TomlReader(text).parse() == tomllib.loads(text)

    check()


def toml_text(document, literal):
    """A small TOML writer for the property test: tables as [headers], nested values inline."""
    def key(k):
        return json.dumps(k, ensure_ascii=False)   # a JSON string is a valid TOML basic string

    def value(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return repr(v)
        if isinstance(v, str):
            if literal and "'" not in v and not any(ord(c) < 32 or c == "\x7f" for c in v):
                return "'%s'" % v
            return json.dumps(v, ensure_ascii=False).replace("\x7f", "\\u007f")
        if isinstance(v, list):
            return "[%s]" % ", ".join(value(item) for item in v)
        return "{%s}" % ", ".join("%s = %s" % (key(k), value(item)) for k, item in v.items())

    lines = ["%s = %s" % (key(k), value(v)) for k, v in document.items() if not isinstance(v, dict)]
    for k, v in document.items():
        if isinstance(v, dict):
            lines.append("[%s]" % key(k))
            lines.extend("%s = %s" % (key(sk), value(sv)) for sk, sv in v.items())
    return "\n".join(lines) + "\n"
