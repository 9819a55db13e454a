"""CLI / main: options, environment twins, usage errors, packaging promises."""
import ast
import io
import json
import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import FIXTURES, PROXY, PROXY_SCRIPT, ROOT, STDIO_SERVER, RelayProcess
import ocx_proxy as ox

SUBCOMMANDS = ["stdio", "demo", "demo-server", "turn", "models"]


def run(args, env=None, timeout=30, stdin=b"", script=PROXY):
    proc = subprocess.run([sys.executable, script] + args, input=stdin, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=env, timeout=timeout)
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def help_entries(text):
    """Map each option in ``--help`` output to its help paragraph."""
    entries, current = {}, None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("-") and line.startswith("  ") and not line.startswith("      " * 2):
            current = stripped.split()[0].rstrip(",")
            if current.startswith("-h"):
                current = "--help"
            entries[current] = stripped
        elif current and line.startswith(" " * 4) and stripped:
            entries[current] += " " + stripped
        elif not stripped:
            current = None
    return entries


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_help_explains_every_option_with_its_default(command):
    status, out, _ = run([command, "--help"])
    assert status == 0
    entries = help_entries(out)
    entries.pop("--help", None)
    assert len(entries) >= {"stdio": 12, "demo": 2}.get(command, 0), sorted(entries)
    for option, paragraph in entries.items():
        assert "default" in paragraph, "%s %s: no default in help: %s" % (command, option, paragraph)


@pytest.mark.parametrize("args,needle", [
    (["stdio", "--max-response-chars", "abc", "--", "x"], "--max-response-chars"),
    (["stdio", "--max-response-chars", "100", "--", "x"], "at least 500"),
    (["stdio", "--client", "windsurf", "--", "x"], "--client"),
    (["stdio", "--max-image-bytes", "-1", "--", "x"], "--max-image-bytes"),
    (["stdio", "--bogus", "--", "x"], "--bogus"),
    (["stdio"], "needs the server command"),
    (["nosuchcommand"], "nosuchcommand"),
    (["demo-server", "--", "x"], "unexpected arguments"),
    (["stdio", "--cwd", "/nonexistent/dir", "--", "x"], "not a directory"),
    (["stdio", "--output-dir", "/tmp"], "needs the server command"),   # a value, not a command
    (["stdio", "--env", "A=B", "--"], "needs the server command"),
    (["stdio", "--bogus", "x"], "--bogus"),
    (["check", "stdio", "--env", "A=B"], "needs the server command"),
    (["stdio", "--heartbeat", "-1", "--", "x"], "--heartbeat"),
    (["stdio", "--heartbeat", "0.01", "--", "x"], "must be 0 (off) or at least 0.1"),
    (["stdio", "--detach-after", "soon", "--", "x"], "--detach-after"),
    (["stdio", "--detach-after", "inf", "--", "x"], "--detach-after"),
])
def test_bad_usage_exits_2_with_one_line(args, needle):
    status, out, err = run(args)
    assert status == 2 and out == ""
    assert needle in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("args,name,value", [
    (["stdio", "--", "x"], "OCX_PROXY_MAX_RESPONSE_CHARS", "lots"),
    (["stdio", "--", "x"], "CURSOR_MCP_RESPONSE_PROXY_LOG_LEVEL", "loud"),
    (["stdio", "--", "x"], "OCX_PROXY_IO", "epoll"),
    (["stdio", "--", "x"], "OCX_PROXY_CLIENT", "windsurf"),
    (["stdio", "--", "x"], "OCX_PROXY_MAX_RESPONSE_BYTES", "100"),
    (["sse", "--url", "http://127.0.0.1:9/sse"], "OCX_PROXY_TIMEOUT_SECONDS", "-1"),
    (["check", "sse", "--url", "http://127.0.0.1:9/sse"], "OCX_PROXY_MAX_MESSAGE_BYTES", "10"),
    (["stdio", "--", "x"], "OCX_PROXY_HEARTBEAT", "0.05"),
    (["stdio", "--", "x"], "OCX_PROXY_DETACH_AFTER", "-3"),
])
def test_invalid_env_twin_is_a_usage_error(args, name, value):
    status, _, err = run(args, env=dict(os.environ, **{name: value}))
    assert status == 2 and name in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("env_name", ["OCX_PROXY_MAX_RESPONSE_CHARS", "CURSOR_MCP_RESPONSE_PROXY_MAX_RESPONSE_CHARS"])
def test_env_twins_and_precedence(tmp_path, env_name):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OCX_PROXY_", "CURSOR_MCP_RESPONSE_PROXY_"))}
    env[env_name] = "2000"
    env["OCX_PROXY_OUTPUT_DIR"] = str(tmp_path / "from-env")
    relay = RelayProcess([], env=env)
    relay.initialize()
    reply = relay.call("big", {"n": 5000})  # over 2000: spilled into the env's directory
    assert reply["result"]["_meta"]["ocx-proxy/spill"]["json"].startswith(str(tmp_path / "from-env"))
    relay.close()
    relay = RelayProcess(["--max-response-chars", "10000"], env=env)  # the flag wins
    relay.initialize()
    assert relay.call("big", {"n": 5000})["result"]["content"][0]["text"] == "x" * 5000
    relay.close()


def test_ocx_prefix_wins_over_legacy_prefix(tmp_path):
    env = dict(os.environ, OCX_PROXY_OUTPUT_DIR=str(tmp_path / "new"),
               CURSOR_MCP_RESPONSE_PROXY_OUTPUT_DIR=str(tmp_path / "old"))
    relay = RelayProcess(["--max-response-chars", "2000"], env=env)
    relay.initialize()
    meta = relay.call("big", {"n": 5000})["result"]["_meta"]["ocx-proxy/spill"]
    assert meta["txt"].startswith(str(tmp_path / "new"))
    relay.close()


def is_stdlib(name):
    """True for a standard-library module (sys.stdlib_module_names, or where it lives before 3.10)."""
    names = getattr(sys, "stdlib_module_names", None)
    if names is not None:
        return name in names
    if name in sys.builtin_module_names or name == "__future__":
        return True
    import importlib.util
    import sysconfig

    spec = importlib.util.find_spec(name)
    if spec is None or not spec.origin:
        return False
    origin = os.path.realpath(spec.origin)
    stdlib = os.path.realpath(sysconfig.get_paths()["stdlib"])
    # Windows keeps the compiled standard modules (select, unicodedata) in DLLs beside Lib
    dlls = os.path.realpath(os.path.join(sys.base_prefix, "DLLs"))
    return origin.startswith((stdlib + os.sep, dlls + os.sep)) and "site-packages" not in origin


def test_ocx_proxy_imports_only_the_standard_library():
    tree = ast.parse(open(PROXY_SCRIPT, encoding="utf-8").read())
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            modules.add(node.module.split(".")[0])
    assert "json" in modules and "selectors" in modules
    # Standard modules of a newer Python or of another platform, imported only where they exist
    # (guarded by ImportError); before 3.10 is_stdlib can only find modules this machine has.
    elsewhere = {"tomllib"} if sys.version_info < (3, 11) else set()
    if not hasattr(sys, "stdlib_module_names"):
        # Windows has no fcntl or resource (POSIX only), POSIX no msvcrt
        elsewhere |= {"fcntl", "resource"} if os.name == "nt" else {"msvcrt"}
    outside = sorted(name for name in modules if not is_stdlib(name) and name != "__future__" and name not in elsewhere)
    assert outside == [], outside
    assert not is_stdlib("pytest") and not is_stdlib("hypothesis")  # the guard can fail


def test_console_script_is_declared():
    text = open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8").read()
    assert 'ocx-proxy = "ocx_proxy:main_exit"' in text


# -- every command that reads a user's document: an error line, never "internal error" ---

# Floats include NaN and the infinities, integers go past a double, text
# includes lone surrogates: json.dumps writes them all as the text a user might.
JSON_SCALARS = (st.none() | st.booleans() | st.floats() | st.integers()
                | st.integers(-(10 ** 400), 10 ** 400)
                | st.text(st.characters(blacklist_categories=()), max_size=8))
JSON_TREES = st.recursive(
    JSON_SCALARS,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=12)
CATALOG_SHAPED = st.builds(
    lambda name, schema, wrap: wrap({"type": "function", "name": name, "parameters": schema}),
    st.text(st.characters(blacklist_categories=()), min_size=1, max_size=6), JSON_TREES,
    st.sampled_from([lambda tool: [tool], lambda tool: {"tools": [tool], "tool_choice": "auto"},
                     lambda tool: {"result": {"tools": [dict(tool, inputSchema=tool["parameters"])]}}]))
DEEP = st.sampled_from([150, 199, 200, 201, 600, 5000]).map(lambda n: "[" * n + "]" * n)
DOCUMENTS = (st.one_of(JSON_TREES, CATALOG_SHAPED).map(json.dumps) | DEEP).map(
    lambda text: text.encode("utf-8", "surrogatepass")) | st.binary(max_size=80)
ENTRY_POINTS = [["encode-tools", "-"], ["encode-tools", "-", "--wrap", "request-context"],
                ["check", "--json", "--file", "-"], ["capture", "--catalog", "{file}", "--print-allowed-tools"]] + \
               [["decode", "-", "--format", fmt, "--as", kind]
                for fmt in ("raw", "auto") for kind in ("raw", "mcp-tools", "value", "agent-run-request")]


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.sampled_from(ENTRY_POINTS), DOCUMENTS)
def test_random_input_to_every_reader_is_a_clean_error(tmp_path_factory, capsysbinary, monkeypatch, argv, data):
    path = tmp_path_factory.mktemp("doc") / "input.json"
    path.write_bytes(data)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    level = ox.log.level
    try:
        status = ox.main([arg.replace("{file}", str(path)) for arg in argv])
    finally:
        ox.log.level = level  # check quiets the shared logger
    out, err = capsysbinary.readouterr()
    assert status in (0, 1, 2) and b"internal error" not in err and b"Traceback" not in err, err
    if status != 0 or argv[0] == "capture":
        return
    if argv[0] == "encode-tools":
        ox.decode_raw(out)
    else:  # whatever we print is JSON every reader accepts: no NaN, no Infinity
        ox.load_json_strict(out, "output")


def test_a_reader_that_stops_early_gets_no_internal_error(tmp_path):
    """``decode ... | head``: a closed stdout ends the command quietly."""
    tools = [{"type": "function", "name": "t%d" % i, "description": "d" * 200,
              "parameters": {"type": "object", "properties": {}}} for i in range(2000)]
    catalog = tmp_path / "tools.json"
    catalog.write_text(json.dumps({"tools": tools}))
    blob = subprocess.run([sys.executable, PROXY, "encode-tools", str(catalog), "--format", "base64"],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True).stdout
    proc = subprocess.Popen([sys.executable, PROXY, "decode", "-"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdin.write(blob)
    proc.stdin.close()
    proc.stdout.read(10)
    proc.stdout.close()
    stderr = proc.stderr.read().decode()
    proc.wait(30)
    assert "internal error" not in stderr and "Traceback" not in stderr, stderr


# -- the server's command, with or without -- ---------------------------------------------


def server_argv(command):
    """The words the fixture server was started with, through a relay run as ``command``."""
    relay = RelayProcess(command=[sys.executable, PROXY] + command)
    try:
        relay.initialize()
        return json.loads(relay.call("argv")["result"]["content"][0]["text"])
    finally:
        relay.close()


def test_server_command_without_double_dash(tmp_path):
    """The MCP Inspector's way: no --; our options (with values) end at the command,
    whose own flags, including ones we also have, are the server's."""
    flags = ["--flag", "--env", "X=1", "--max-response-chars", "9", "--output-dir"]
    command = ["stdio", "--output-dir", str(tmp_path), "--max-response-chars=2000", "--keep-output-schema",
               sys.executable, STDIO_SERVER] + flags
    assert server_argv(command) == flags
    relay = RelayProcess(command=[sys.executable, PROXY] + command)
    relay.initialize()
    meta = relay.call("big", {"n": 5000})["result"]["_meta"]["ocx-proxy/spill"]
    relay.close()
    assert meta["json"].startswith(str(tmp_path))   # --output-dir took its value, 2000 applied


@pytest.mark.parametrize("lead", [[], ["--"]])
def test_a_double_dash_after_the_command_is_the_servers(lead):
    command = ["stdio", "--log-level", "warning"] + lead + [sys.executable, STDIO_SERVER, "--a", "--", "--b"]
    assert server_argv(command) == ["--a", "--", "--b"]


def test_check_stdio_without_double_dash():
    """check's own flags before the command are ours; after it (--json, --timeout) the server's."""
    catalog = os.path.join(FIXTURES, "catalogs", "required_missing.json")
    server = [sys.executable, os.path.join(FIXTURES, "catalog_server.py"), catalog]
    ours = subprocess.run([sys.executable, PROXY, "check", "--json", "stdio", "--timeout", "20"] + server,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert ours.returncode == 1, ours.stderr
    assert json.loads(ours.stdout)["findings"]
    theirs = subprocess.run([sys.executable, PROXY, "check", "stdio"] + server + ["--json", "--timeout", "3"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert theirs.returncode == 1, theirs.stderr
    assert b"1 errors" in theirs.stdout   # the readable report: --json was the server's


@pytest.mark.parametrize("argv,ours,command", [
    (["stdio", "cmd", "--env", "A"], ["stdio"], ["cmd", "--env", "A"]),
    (["stdio", "--env", "A=B", "npx", "-y", "s", "--port", "3"], ["stdio", "--env", "A=B"],
     ["npx", "-y", "s", "--port", "3"]),
    (["stdio", "--out", "D", "cmd"], ["stdio", "--out", "D"], ["cmd"]),          # abbreviation of --output-dir
    (["stdio", "--output-dir=D", "cmd", "x"], ["stdio", "--output-dir=D"], ["cmd", "x"]),
    (["stdio", "--pass-environment", "--", "--cmd", "--"], ["stdio", "--pass-environment"], ["--cmd", "--"]),
    (["stdio", "--env", "--", "cmd"], ["stdio", "--env"], ["cmd"]),              # -- is never a value
    (["stdio", "--bogus", "cmd"], ["stdio", "--bogus", "cmd"], None),            # argparse names --bogus
    (["stdio", "--output-dir", "D"], ["stdio", "--output-dir", "D"], None),
    (["check", "--timeout", "5", "stdio", "--cwd", "D", "cmd", "--timeout", "1"],
     ["check", "--timeout", "5", "stdio", "--cwd", "D"], ["cmd", "--timeout", "1"]),
    (["check", "--file", "stdio"], ["check", "--file", "stdio"], None),          # a value, not the transport
    (["demo-server", "--", "x"], ["demo-server"], ["x"]),                         # refused by main
])
def test_split_server_command(argv, ours, command):
    parser = ox.build_parser(argv[0])
    assert ox.split_server_command(parser, argv) == (ours, command)
