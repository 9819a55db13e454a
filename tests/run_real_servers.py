"""`make real-servers`: ocx-proxy check on real public MCP servers, installed from npm and PyPI.

The npm servers go into ``.interop-servers`` (npm --prefix), the PyPI ones into
``.venv-servers``; both are cached.  Each server is checked as a full-featured
client with ``--compare-capabilities``; the findings are printed per server, and
a few facts verified by hand against the servers' sources are asserted (see
FACTS).  Then the gate: each server's valid calls (GATE_CALLS, arguments written by
hand from its schemas and documentation) go through the relay with
``--check-arguments refuse``, and none may be refused (a false refusal fails the
tier); a few invalid ones must be.  When a registry cannot be reached its servers
are skipped with a message; any other install failure, a server check cannot talk
to, a fact that no longer holds or a false refusal exits non-zero.

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


# Valid calls per server (tool, arguments), in an order that makes each one meaningful (write, then read...), and
# INVALID ones the gate must refuse.  "{scratch}" and "{repo}" are the tier's scratch directory and git repository.
GATE_CALLS = {
    "everything": [
        ("echo", {"message": "hello"}), ("get-sum", {"a": 1, "b": 2.5}), ("get-env", {}), ("get-tiny-image", {}),
        ("get-annotated-message", {"messageType": "error", "includeImage": False}),
        ("get-structured-content", {"location": "Chicago"}), ("get-resource-links", {"count": 2}),
        ("get-resource-reference", {"resourceType": "Text", "resourceId": 1}),
        ("gzip-file-as-resource", {"name": "a.gz", "data": "data:text/plain;base64,aGVsbG8=",
                                   "outputType": "resource"}),
        ("trigger-long-running-operation", {"duration": 0.2, "steps": 2}),
    ],
    "filesystem": [
        ("write_file", {"path": "{scratch}/a.txt", "content": "hello\nworld\n"}),
        ("read_text_file", {"path": "{scratch}/a.txt", "head": 1}), ("read_file", {"path": "{scratch}/a.txt"}),
        ("read_multiple_files", {"paths": ["{scratch}/a.txt"]}),
        ("edit_file", {"path": "{scratch}/a.txt", "edits": [{"oldText": "world", "newText": "there"}], "dryRun": True}),
        ("create_directory", {"path": "{scratch}/d"}), ("list_directory", {"path": "{scratch}"}),
        ("list_directory_with_sizes", {"path": "{scratch}", "sortBy": "size"}),
        ("directory_tree", {"path": "{scratch}/d", "excludePatterns": ["*.gz"]}),
        ("move_file", {"source": "{scratch}/a.txt", "destination": "{scratch}/d/b.txt"}),
        ("search_files", {"path": "{scratch}", "pattern": "*.txt"}), ("get_file_info", {"path": "{scratch}/d/b.txt"}),
        ("list_allowed_directories", {}),
    ],
    "memory": [
        ("create_entities", {"entities": [{"name": "Ada", "entityType": "person", "observations": ["programmer"]}]}),
        ("create_relations", {"relations": [{"from": "Ada", "to": "Ada", "relationType": "knows"}]}),
        ("add_observations", {"observations": [{"entityName": "Ada", "contents": ["born 1815"]}]}),
        ("search_nodes", {"query": "Ada"}), ("open_nodes", {"names": ["Ada"]}), ("read_graph", {}),
        ("delete_observations", {"deletions": [{"entityName": "Ada", "observations": ["born 1815"]}]}),
        ("delete_relations", {"relations": [{"from": "Ada", "to": "Ada", "relationType": "knows"}]}),
        ("delete_entities", {"entityNames": ["Ada"]}),
    ],
    "sequential-thinking": [
        ("sequentialthinking", {"thought": "first", "nextThoughtNeeded": True, "thoughtNumber": 1,
                                "totalThoughts": 2}),
        ("sequentialthinking", {"thought": "second", "nextThoughtNeeded": "false", "thoughtNumber": 2,
                                "totalThoughts": 2, "isRevision": False}),
    ],
    "time": [
        ("get_current_time", {"timezone": "Europe/Paris"}),
        ("convert_time", {"source_timezone": "UTC", "time": "12:30", "target_timezone": "Asia/Tokyo"}),
    ],
    "fetch": [("fetch", {"url": "http://127.0.0.1:9/nothing-listens-here", "max_length": 100, "start_index": 0,
                         "raw": True})],
    "git": [
        ("git_status", {"repo_path": "{repo}"}), ("git_log", {"repo_path": "{repo}", "max_count": 1}),
        ("git_log", {"repo_path": "{repo}", "start_timestamp": None}),
        ("git_branch", {"repo_path": "{repo}", "branch_type": "local"}),
        ("git_show", {"repo_path": "{repo}", "revision": "HEAD"}),
        ("git_create_branch", {"repo_path": "{repo}", "branch_name": "side", "base_branch": None}),
        ("git_checkout", {"repo_path": "{repo}", "branch_name": "side"}),
        ("git_diff_unstaged", {"repo_path": "{repo}", "context_lines": 1}),
        ("git_diff_staged", {"repo_path": "{repo}"}), ("git_diff", {"repo_path": "{repo}", "target": "HEAD"}),
        ("git_reset", {"repo_path": "{repo}"}),
    ],
}
INVALID_CALLS = {
    "everything": [("get-sum", {"a": "one", "b": 2})],
    "filesystem": [("read_multiple_files", {"paths": []})],
    "memory": [("create_entities", {"entities": [{"name": "Ada", "observations": []}]})],
    "sequential-thinking": [("sequentialthinking", {"thought": "x", "nextThoughtNeeded": True, "thoughtNumber": 0,
                                                    "totalThoughts": 1})],
    "time": [("get_current_time", {})],
    "fetch": [("fetch", {"url": "http://127.0.0.1:9/", "max_length": 0})],
    "git": [("git_add", {"repo_path": "{repo}", "files": []})],
}
REFUSED = "ocx-proxy did not send this call to the server"


class GateSession:
    """The relay with --check-arguments refuse in front of one server, driven over pipes (a reader thread)."""

    def __init__(self, argv, env, scratch):
        import queue
        import threading
        self.proc = subprocess.Popen([sys.executable, PROXY, "stdio", "--check-arguments", "refuse", "--output-dir",
                                      os.path.join(scratch, "spill"), "--no-catalog-cache", "--log-level",
                                      "warning", "--"] + argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=dict(os.environ, **env))
        self.lines, self.next_id = queue.Queue(), 0
        threading.Thread(target=lambda: [self.lines.put(line) for line in self.proc.stdout] + [self.lines.put(b"")],
                         daemon=True).start()

    def request(self, method, params, timeout=CHECK_TIMEOUT):
        self.next_id += 1
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                                          "params": params}).encode() + b"\n")
        self.proc.stdin.flush()
        while True:
            line = self.lines.get(timeout=timeout)
            if not line:
                raise OSError("the relay closed its output")
            msg = json.loads(line)
            if msg.get("id") == self.next_id and "method" not in msg:
                return msg

    def close(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def gate_calls(name, argv, env, scratch):
    """The gate on one real server: (valid calls, valid calls refused, invalid calls let through), after printing
    what each one got."""
    fill = lambda value: json.loads(json.dumps(value).replace("{scratch}", scratch).replace(  # noqa: E731
        "{repo}", os.path.join(scratch, "repo")))
    session = GateSession(argv, env, scratch)
    false_refusals, let_through, answers = [], [], []
    try:
        session.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                       "clientInfo": {"name": "ocx-real-servers", "version": "1"}})
        session.proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        cursor = None
        while True:   # every page: the gate knows each tool's schema
            listed = session.request("tools/list", {"cursor": cursor} if cursor else {})
            cursor = (listed.get("result") or {}).get("nextCursor")
            if not cursor:
                break
        for valid, calls in ((True, GATE_CALLS[name]), (False, INVALID_CALLS.get(name, []))):
            for tool, arguments in calls:
                answer = session.request("tools/call", {"name": tool, "arguments": fill(arguments)})
                text = json.dumps(answer.get("result", {}).get("content", ""))
                refused = answer.get("result", {}).get("isError") is True and REFUSED in text
                if valid:
                    answers.append("error" if "error" in answer or answer["result"].get("isError") else "result")
                if refused == valid:
                    (false_refusals if valid else let_through).append("%s %s" % (tool, json.dumps(arguments)))
    finally:
        session.close()
    say("gate, %s: %d valid calls through --check-arguments refuse, %d refused (the server answered %d with a "
        "result, %d with an error); %d invalid calls, %d let through" % (
            name, len(GATE_CALLS[name]), len(false_refusals), answers.count("result"), answers.count("error"),
            len(INVALID_CALLS.get(name, [])), len(let_through)))
    return len(GATE_CALLS[name]), false_refusals, let_through


def main(names):
    npm_bin, pypi_bin = npm_servers(), pypi_servers()
    failed = FAILED in (npm_bin, pypi_bin)
    scratch = tempfile.mkdtemp(prefix="ocx-real-servers-")
    calls = refused = servers = 0
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
            made, false_refusals, let_through = gate_calls(name, commands[name][0], commands[name][1], scratch)
            calls, refused, servers = calls + made, refused + len(false_refusals), servers + 1
            for call in false_refusals:
                say("FAILED - %s: the gate refused a valid call: %s" % (name, call))
            for call in let_through:
                say("FAILED - %s: the gate let an invalid call through: %s" % (name, call))
            failed = failed or bool(false_refusals or let_through)
        say("gate: %d false refusals in %d valid calls to %d real servers" % (refused, calls, servers))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
