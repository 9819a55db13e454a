"""CLI / main: options, environment twins, usage errors, packaging promises."""
import ast
import os
import subprocess
import sys

import pytest

from conftest import PROXY, ROOT, RelayProcess

SUBCOMMANDS = ["stdio", "demo", "demo-server"]


def run(args, env=None, timeout=30, stdin=b""):
    proc = subprocess.run([sys.executable, PROXY] + args, input=stdin, stdout=subprocess.PIPE,
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
    (["stdio", "--bogus", "--", "x"], "--bogus"),
    (["stdio"], "needs the server command"),
    (["nosuchcommand"], "nosuchcommand"),
    (["demo-server", "--", "x"], "unexpected arguments"),
    (["stdio", "--cwd", "/nonexistent/dir", "--", "x"], "not a directory"),
])
def test_bad_usage_exits_2_with_one_line(args, needle):
    status, out, err = run(args)
    assert status == 2 and out == ""
    assert needle in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err


def test_invalid_env_twin_is_a_usage_error():
    env = dict(os.environ, OCX_PROXY_MAX_RESPONSE_CHARS="lots")
    status, _, err = run(["stdio", "--", "x"], env=env)
    assert status == 2 and "OCX_PROXY_MAX_RESPONSE_CHARS" in err and len(err.strip().splitlines()) == 1


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
    return origin.startswith(stdlib + os.sep) and "site-packages" not in origin


def test_ocx_proxy_imports_only_the_standard_library():
    tree = ast.parse(open(PROXY, encoding="utf-8").read())
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            modules.add(node.module.split(".")[0])
    assert "json" in modules and "selectors" in modules
    outside = sorted(name for name in modules if not is_stdlib(name) and name != "__future__")
    assert outside == [], outside
    assert not is_stdlib("pytest") and not is_stdlib("hypothesis")  # the guard can fail


def test_demo_runs_the_whole_chain(tmp_path):
    status, out, err = run(["demo", "--output-dir", str(tmp_path)], timeout=60)
    assert status == 0, err
    assert "spilled" in out and "passed through unchanged" in out
    assert "progress notifications arrived before the result" in out
    assert any(name.endswith(".png") for name in os.listdir(str(tmp_path)))


def test_console_script_is_declared():
    text = open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8").read()
    assert 'ocx-proxy = "ocx_proxy:main_exit"' in text
