"""`make real-servers`: ocx-proxy check on real public MCP servers, installed from npm and PyPI.

The npm servers go into ``.interop-servers`` (npm --prefix), the PyPI ones into
``.venv-servers``; both are cached.  Each server is checked as a full-featured
client with ``--compare-capabilities``; the findings are printed per server, and
a few facts verified by hand against the servers' sources are asserted (see
FACTS).  When a registry cannot be reached its servers are skipped with a
message; any other install failure, a server check cannot talk to, or a fact
that no longer holds exits non-zero.

    python tests/run_real_servers.py [SERVER...]     (default: all of SERVERS)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from run_interop import FAILED, INSTALL_TIMEOUT, ROOT, SKIPPED, pip_index_reachable, run, say

PROXY = os.path.join(ROOT, "ocx_proxy.py")
NODE_PREFIX = os.environ.get("INTEROP_SERVERS_PREFIX") or os.path.join(ROOT, ".interop-servers")
VENV = os.environ.get("INTEROP_SERVERS_VENV") or os.path.join(ROOT, ".venv-servers")
NPM_SERVERS = ["@modelcontextprotocol/server-everything@2026.8.31",
               "@modelcontextprotocol/server-filesystem@2026.8.31",
               "@modelcontextprotocol/server-memory@2026.8.31",
               "@modelcontextprotocol/server-sequential-thinking@2026.8.31"]
PYPI_SERVERS = ["mcp-server-time==2026.10.19", "mcp-server-fetch==2026.10.24", "mcp-server-git==2026.10.19"]
CHECK_TIMEOUT = 120


def npm_servers():
    """Install NPM_SERVERS into NODE_PREFIX unless done; returns its .bin folder, SKIPPED or FAILED."""
    bin_dir = os.path.join(NODE_PREFIX, "node_modules", ".bin")
    stamp = os.path.join(NODE_PREFIX, ".deps-" + "-".join(p.replace("/", "+") for p in NPM_SERVERS))
    if os.path.exists(stamp):
        return bin_dir
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        say("SKIPPED - no node/npm on PATH; the npm servers were not checked")
        return SKIPPED
    os.makedirs(NODE_PREFIX, exist_ok=True)
    say("installing %s into %s" % (" ".join(NPM_SERVERS), os.path.basename(NODE_PREFIX)))
    if run([npm, "install", "--prefix", NODE_PREFIX, "--no-audit", "--no-fund", "--loglevel=error"] + NPM_SERVERS,
           INSTALL_TIMEOUT, stdout=subprocess.DEVNULL) != 0:
        if run([npm, "view", NPM_SERVERS[0], "version"], 120,
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) != 0:
            say("SKIPPED - the npm registry is unreachable; the npm servers were not checked")
            return SKIPPED
        say("FAILED - npm could not install the servers although the registry answers")
        return FAILED
    open(stamp, "w").close()
    return bin_dir


def pypi_servers():
    """Install PYPI_SERVERS into VENV unless done; returns its bin folder, SKIPPED or FAILED."""
    bin_dir = os.path.join(VENV, "bin")
    stamp = os.path.join(VENV, ".deps-" + "-".join(p.replace("==", "-") for p in PYPI_SERVERS))
    if os.path.exists(stamp):
        return bin_dir
    python = os.environ.get("INTEROP_PYTHON") or sys.executable
    shutil.rmtree(VENV, ignore_errors=True)
    if run([python, "-m", "venv", VENV], 300) != 0:
        say("FAILED - could not create %s" % VENV)
        return FAILED
    vpy = os.path.join(bin_dir, "python")
    say("installing %s into %s" % (" ".join(PYPI_SERVERS), os.path.basename(VENV)))
    if run([vpy, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"] + PYPI_SERVERS,
           INSTALL_TIMEOUT) != 0:
        if not pip_index_reachable(vpy, PYPI_SERVERS[0], VENV):
            say("SKIPPED - the package index is unreachable; the PyPI servers were not checked")
            shutil.rmtree(VENV, ignore_errors=True)
            return SKIPPED
        say("FAILED - pip could not install the servers although the index answers")
        return FAILED
    open(stamp, "w").close()
    return bin_dir


def server_commands(npm_bin, pypi_bin, scratch):
    """{name: (argv, extra environment)} for every server whose registry was reached."""
    repo = os.path.join(scratch, "repo")
    os.makedirs(repo)
    for argv in (["git", "init", "-q"], ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                                           "--allow-empty", "-m", "first"]):
        subprocess.run(argv, cwd=repo, check=True, timeout=60)
    commands = {}
    if npm_bin not in (SKIPPED, FAILED):
        commands.update({
            "everything": ([os.path.join(npm_bin, "mcp-server-everything")], {}),
            "filesystem": ([os.path.join(npm_bin, "mcp-server-filesystem"), scratch], {}),
            "memory": ([os.path.join(npm_bin, "mcp-server-memory")],
                       {"MEMORY_FILE_PATH": os.path.join(scratch, "memory.jsonl")}),
            "sequential-thinking": ([os.path.join(npm_bin, "mcp-server-sequential-thinking")], {}),
        })
    if pypi_bin not in (SKIPPED, FAILED):
        commands.update({
            "time": ([os.path.join(pypi_bin, "mcp-server-time"), "--local-timezone", "UTC"], {}),
            "fetch": ([os.path.join(pypi_bin, "mcp-server-fetch")], {}),
            "git": ([os.path.join(pypi_bin, "mcp-server-git"), "--repository", repo], {}),
        })
    return commands


def check(argv, env):
    """check --json --compare-capabilities on one server: (exit status, report or None, stderr)."""
    proc = subprocess.run([sys.executable, PROXY, "check", "--json", "--compare-capabilities", "--timeout", "60",
                           "stdio", "--"] + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=dict(os.environ, **env), timeout=CHECK_TIMEOUT)
    out = proc.stdout.decode("utf-8", "replace")
    return proc.returncode, (json.loads(out) if out.strip() else None), proc.stderr.decode("utf-8", "replace")


def tools_by_listing(report):
    return {",".join(listing["capabilities"]): listing["tools"] for listing in report["protocol"]["listings"]}


def finding_of(report, tool, severity, text):
    return any(f["tool"] == tool and f["severity"] == severity and text in f["message"]
               for f in report["findings"])


# Facts read in each server's source (see tests/README.md, "Interop"), asserted on
# its report; each returns a list of the statements that no longer hold.
def everything_facts(report):
    counts, wrong = tools_by_listing(report), []
    if not counts["roots,sampling,elicitation"] > counts[""]:
        wrong.append("lists more tools to a full-featured client than to a bare one: %s" % counts)
    for tool, capability in (("get-roots-list", "roots"), ("trigger-sampling-request", "sampling"),
                             ("trigger-elicitation-request", "elicitation"),
                             ("trigger-url-elicitation", "elicitation")):
        if not finding_of(report, tool, "info", "only listed to clients declaring %s;" % capability):
            wrong.append("%s is only listed to clients declaring %s" % (tool, capability))
    if not finding_of(report, "simulate-research-query", "warning", 'taskSupport "required"'):
        wrong.append('simulate-research-query has execution.taskSupport "required"')
    return wrong


def same_tools_facts(report):
    counts = tools_by_listing(report)
    return [] if len(set(counts.values())) == 1 else ["lists the same tools whatever the capabilities: %s" % counts]


FACTS = {"everything": everything_facts, "filesystem": same_tools_facts, "memory": same_tools_facts,
         "sequential-thinking": same_tools_facts, "time": same_tools_facts, "fetch": same_tools_facts,
         "git": same_tools_facts}


def describe(name, status, report):
    server = report["server"] or {}
    say("%s (%s %s): exit %d, %d tools, listings %s, Cursor McpTools %s bytes" % (
        name, server.get("name"), server.get("version"), status, report["counts"]["tools"],
        tools_by_listing(report), report["cursorMcpToolsBytes"]))
    for f in report["findings"]:
        say("  %-7s %-28s %s %s" % (f["severity"], f["tool"] or "catalog", f["pointer"], f["message"][:110]))


def main(names):
    npm_bin, pypi_bin = npm_servers(), pypi_servers()
    failed = FAILED in (npm_bin, pypi_bin)
    scratch = tempfile.mkdtemp(prefix="ocx-real-servers-")
    try:
        commands = server_commands(npm_bin, pypi_bin, scratch)
        for name in names or list(commands):
            if name not in commands:
                say("%s: not installed (see above)" % name)
                continue
            status, report, err = check(*commands[name])
            if status not in (0, 1) or report is None:
                say("FAILED - %s: check exited %d: %s" % (name, status, err.strip()[-300:]))
                failed = True
                continue
            describe(name, status, report)
            for statement in FACTS[name](report):
                say("FAILED - %s no longer holds: %s" % (name, statement))
                failed = True
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
