"""check --config: one configuration per client format, each server checked, the combined rules, the TOML reader."""
import json
import os
import subprocess
import sys

import pytest

from conftest import FIXTURES, PROXY

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
