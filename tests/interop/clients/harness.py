"""Real-client tier: run Codex, Claude Code, Gemini CLI, Copilot CLI, OpenCode, Qwen Code or CodeBuddy once against
the scripted model server.

``run_client(client, case, via_relay, workdir)`` writes the CLI's config into a
temporary HOME, starts ``model_server.ModelServer`` on 127.0.0.1, runs the CLI
(bounded by ``CLIENT_TIMEOUT``) and returns a ``Run``: what the model received,
the reader pages, the clientInfo the CLI sent, the CLI's output.

Only 127.0.0.1 is ever contacted: the model URL is loopback and every proxy
variable points at a closed loopback port, so any other connection the CLI
tries fails at once instead of leaving the machine.
"""
import json
import os
import subprocess
import sys
import time

from model_server import SERVER, ModelServer, Script

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
PROXY = os.environ.get("OCX_INTEROP_PROXY") or os.path.join(ROOT, "ocx_proxy.py")
TOOLS_SERVER = os.path.join(HERE, "tools_server.py")
PREFIX = os.environ.get("OCX_INTEROP_CLIENTS_PREFIX") or os.path.join(ROOT, ".interop-clients")
BIN = os.path.join(PREFIX, "node_modules", ".bin")
# npm @tencent-ai/agent-sdk links no binary: its CLI is a file inside the package
CODEBUDDY = os.path.join(PREFIX, "node_modules", "@tencent-ai", "agent-sdk", "cli", "bin", "codebuddy")
CODEBUDDY_START_MS = 5000   # 2000: a server up 3 s after start, or the relay, was not in turn 1
CLIENT_TIMEOUT = 120
PROMPT = "Call the tool, then stop."
CLOSED_PROXY = "http://127.0.0.1:9"


class Run:
    def __init__(self, script, status, output, client_info, spill_dir, started=None, seconds=None):
        self.script = script
        self.started = started   # time.monotonic() when the CLI was started
        self.seconds = seconds   # how long it ran
        self.status = status
        self.output = output
        self.client_info = client_info
        self.spill_dir = spill_dir

    @property
    def received(self):
        return self.script.received


def mcp_command(via_relay, record, spill_dir, server=None, relay_args=()):
    """The MCP server's command line for a CLI config: SERVER (default the tools server), else the relay
    (with RELAY_ARGS) in front of it."""
    server = (server or [sys.executable, TOOLS_SERVER]) + ["--record", record]
    if not via_relay:
        return server
    return ([sys.executable, PROXY, "stdio", "--output-dir", spill_dir, "--log-level", "warning"] + list(relay_args)
            + ["--"] + server)


def base_env(home):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "TMPDIR": os.path.join(home, "tmp"),
           "LANG": "C.UTF-8", "TERM": "dumb", "NO_COLOR": "1", "CI": "1",
           "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        env[name] = CLOSED_PROXY
    os.makedirs(env["TMPDIR"], exist_ok=True)
    return env


def toml_list(items):
    return "[" + ", ".join(json.dumps(item) for item in items) + "]"


# DEADLINE: None, the tier's usual settings; "default", the CLI's own clock untouched; a number of
# seconds, the CLI's own setting for a tool call's deadline set to it (named in each function).

def deadline_ms(deadline):
    """DEADLINE in milliseconds, as the CLIs' settings take it; None when nothing is to be set."""
    return None if deadline in (None, "default") else int(deadline * 1000)


def codex(port, command, home, env, deadline=None):
    """Codex: ``tool_timeout_sec`` (and ``startup_timeout_sec``) of the server's entry in config.toml."""
    codex_home = os.path.join(home, ".codex")
    os.makedirs(codex_home, exist_ok=True)
    with open(os.path.join(codex_home, "config.toml"), "w") as out:
        out.write('model = "gpt-test"\nmodel_provider = "mock"\ncheck_for_update_on_startup = false\n'
                  '[analytics]\nenabled = false\n[feedback]\nenabled = false\n'
                  '[model_providers.mock]\nname = "mock"\nbase_url = "http://127.0.0.1:%d/v1"\n'
                  'wire_api = "responses"\nenv_key = "MOCK_API_KEY"\nrequest_max_retries = 0\n'
                  'stream_max_retries = 0\n'
                  '[mcp_servers.%s]\ncommand = %s\nargs = %s\n'
                  % (port, SERVER, json.dumps(command[0]), toml_list(command[1:])))
        if deadline != "default":
            out.write("startup_timeout_sec = 30\ntool_timeout_sec = %s\n" % (60 if deadline is None else deadline))
    env.update(CODEX_HOME=codex_home, MOCK_API_KEY="dummy")
    return [os.path.join(BIN, "codex"), "exec", "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox", "--json", PROMPT]


def claude(port, command, home, env, deadline=None):
    """Claude Code: ``MCP_TOOL_TIMEOUT`` (milliseconds) in its environment."""
    config = os.path.join(home, "mcp.json")
    with open(config, "w") as out:
        json.dump({"mcpServers": {SERVER: {"type": "stdio", "command": command[0], "args": command[1:]}}}, out)
    env.update(ANTHROPIC_BASE_URL="http://127.0.0.1:%d" % port, ANTHROPIC_API_KEY="dummy",
               CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_AUTOUPDATER="1", DISABLE_TELEMETRY="1",
               DISABLE_ERROR_REPORTING="1", ENABLE_TOOL_SEARCH="false",
               CLAUDE_CONFIG_DIR=os.path.join(home, ".claude"))
    if deadline_ms(deadline) is not None:
        env["MCP_TOOL_TIMEOUT"] = str(deadline_ms(deadline))
    return [os.path.join(BIN, "claude"), "-p", PROMPT, "--mcp-config", config, "--strict-mcp-config",
            "--allowedTools", "mcp__%s" % SERVER, "--output-format", "json", "--model", "claude-sonnet-4-5"]


def gemini(port, command, home, env, deadline=None):
    """Gemini CLI: the server's ``timeout`` (milliseconds) in settings.json."""
    settings_dir = os.path.join(home, ".gemini")
    os.makedirs(settings_dir, exist_ok=True)
    settings = {"mcpServers": {SERVER: server_entry(command, deadline, trust=True)},
                "security": {"auth": {"selectedType": "gemini-api-key"}},
                "general": {"disableAutoUpdate": True, "enableAutoUpdate": False,
                            "enableAutoUpdateNotification": False},
                "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False}}
    with open(os.path.join(settings_dir, "settings.json"), "w") as out:
        json.dump(settings, out)
    env.update(GEMINI_API_KEY="dummy", GEMINI_CLI_TRUST_WORKSPACE="true", GOOGLE_GEMINI_BASE_URL="http://127.0.0.1:%d" % port)
    return [os.path.join(BIN, "gemini"), "-p", PROMPT, "--yolo", "-m", "gemini-2.5-flash", "--output-format", "json"]


def server_entry(command, deadline, **more):
    """A JSON config's server entry, with ``timeout`` (milliseconds) for a DEADLINE in seconds."""
    entry = dict({"command": command[0], "args": command[1:]}, **more)
    if deadline_ms(deadline) is not None:
        entry["timeout"] = deadline_ms(deadline)
    return entry


def copilot(port, command, home, env, deadline=None):
    """Copilot CLI in BYOK offline mode (``copilot help providers``): OpenAI Responses wire API, no GitHub login.
    Deadline: the server's ``timeout`` (milliseconds) in the MCP config."""
    config = os.path.join(home, "mcp.json")
    with open(config, "w") as out:
        json.dump({"mcpServers": {SERVER: server_entry(command, deadline, type="local", tools=["*"])}}, out)
    env.update(COPILOT_OFFLINE="true", COPILOT_PROVIDER_BASE_URL="http://127.0.0.1:%d/v1" % port,
               COPILOT_PROVIDER_TYPE="openai", COPILOT_PROVIDER_WIRE_API="responses", COPILOT_PROVIDER_API_KEY="dummy",
               COPILOT_MODEL="gpt-test", COPILOT_AUTO_UPDATE="false", COPILOT_HOME=os.path.join(home, ".copilot"))
    return [os.path.join(BIN, "copilot"), "-p", PROMPT, "--additional-mcp-config", "@" + config, "--allow-all-tools",
            "--disable-builtin-mcps", "--no-auto-update", "--no-custom-instructions", "--no-ask-user",
            "--disable-client-telemetry", "--output-format", "json"]


def xdg_dirs(home, env):
    for name, folder in (("XDG_CONFIG_HOME", ".config"), ("XDG_DATA_HOME", ".local/share"),
                         ("XDG_CACHE_HOME", ".cache"), ("XDG_STATE_HOME", ".local/state")):
        env[name] = os.path.join(home, folder)
        os.makedirs(env[name], exist_ok=True)


def opencode(port, command, home, env, deadline=None):
    """OpenCode: a custom provider (@ai-sdk/openai-compatible, built into the binary) in its config file.
    Deadline: the server's ``timeout`` (milliseconds; it also bounds tools/list at start-up).

    The prompt goes as separate words: ``opencode run`` quotes a single spaced argument as a JSON string."""
    xdg_dirs(home, env)
    config = {"$schema": "https://opencode.ai/config.json", "autoupdate": False, "share": "disabled",
              "model": "mock/test-model", "permission": {"edit": "allow", "bash": "allow", "webfetch": "deny"},
              "provider": {"mock": {"npm": "@ai-sdk/openai-compatible", "name": "mock",
                                    "options": {"baseURL": "http://127.0.0.1:%d/v1" % port, "apiKey": "dummy"},
                                    "models": {"test-model": {"name": "test-model", "attachment": True,
                                                              "tool_call": True,
                                                              "modalities": {"input": ["text", "image"],
                                                                             "output": ["text"]}}}}},
              "mcp": {SERVER: {"type": "local", "command": command, "enabled": True}}}
    if deadline_ms(deadline) is not None:
        config["mcp"][SERVER]["timeout"] = deadline_ms(deadline)
    path = os.path.join(home, "opencode.json")
    with open(path, "w") as out:
        json.dump(config, out)
    env.update(OPENCODE_CONFIG=path, OPENCODE_DISABLE_AUTOUPDATE="1", OPENCODE_DISABLE_SHARE="1",
               OPENCODE_DISABLE_LSP_DOWNLOAD="1", OPENCODE_DISABLE_MODELS_FETCH="1",
               OPENCODE_DISABLE_DEFAULT_PLUGINS="1")
    return [os.path.join(BIN, "opencode"), "run", "--pure", "--format", "json"] + PROMPT.split()


def qwen(port, command, home, env, deadline=None):
    """Qwen Code: its OpenAI-compatible endpoint from the environment, the server in ~/.qwen/settings.json.
    Deadline: the server's ``timeout`` (milliseconds)."""
    settings_dir = os.path.join(home, ".qwen")
    os.makedirs(settings_dir, exist_ok=True)
    settings = {"mcpServers": {SERVER: server_entry(command, deadline, trust=True)},
                "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
                "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False}}
    with open(os.path.join(settings_dir, "settings.json"), "w") as out:
        json.dump(settings, out)
    env.update(OPENAI_API_KEY="dummy", OPENAI_BASE_URL="http://127.0.0.1:%d/v1" % port, OPENAI_MODEL="qwen3-vl-plus")
    return [os.path.join(BIN, "qwen"), "--auth-type", "openai", "-o", "json", "--approval-mode", "yolo",
            "--allowed-mcp-server-names", SERVER, "-p", PROMPT]


def codebuddy(port, command, home, env, deadline=None, project=False):
    """CodeBuddy Code (npm @tencent-ai/agent-sdk ships it): its model endpoint from the environment (OpenAI Chat
    Completions at ``CODEBUDDY_BASE_URL``), the server in ~/.codebuddy/mcp.json (PROJECT: .mcp.json in the folder it
    runs in).  Deadline: ``MCP_TOOL_TIMEOUT`` (milliseconds) in its environment.  Its start-up wait for MCP servers,
    ``MCP_TIMEOUT``, is 5 s here (30 s by default, each run: test_codebuddy.py measures it), except for "default"."""
    settings_dir = os.path.join(home, ".codebuddy")
    os.makedirs(settings_dir, exist_ok=True)
    with open(os.path.join(home if project else settings_dir, ".mcp.json" if project else "mcp.json"), "w") as out:
        json.dump({"mcpServers": {SERVER: server_entry(command, None, type="stdio")}}, out)
    if project:   # a project's server waits for the user's approval, which -p cannot ask for: given as it is saved
        with open(os.path.join(home, ".codebuddy", "settings.local.json"), "w") as out:   # the project's own
            json.dump({"enabledMcpjsonServers": [SERVER]}, out)
    # Its start-up wait is MCP_TIMEOUT's, with a server configured: the closed proxy costs nothing more (measured)
    env.update(CODEBUDDY_BASE_URL="http://127.0.0.1:%d" % port, CODEBUDDY_API_KEY="dummy")
    if deadline != "default":
        env["MCP_TIMEOUT"] = str(CODEBUDDY_START_MS)
    if deadline_ms(deadline) is not None:
        env["MCP_TOOL_TIMEOUT"] = str(deadline_ms(deadline))
    # In -p mode a deferred MCP tool is reached through DeferExecuteTool, which asks a permission -p cannot ask for
    return [CODEBUDDY, "-p", PROMPT, "--output-format", "stream-json", "--verbose",
            "--allowedTools", "DeferExecuteTool"]


CLIENTS = {"codex": codex, "claude-code": claude, "gemini": gemini, "copilot": copilot, "opencode": opencode,
           "qwen-code": qwen, "codebuddy": codebuddy}
# the executable of a client in CLIENTS, where it is not the client's name
BINARIES = {"claude-code": "claude", "qwen-code": "qwen"}


def binary(client):
    """The path of a client's executable in the tier's prefix."""
    return CODEBUDDY if client == "codebuddy" else os.path.join(BIN, BINARIES.get(client, client))


def run_client(client, tool, via_relay, workdir, server=None, script=None, relay_args=(), deadline=None,
               timeout=CLIENT_TIMEOUT):
    """One CLI run; SERVER (an argv) replaces the tools server, SCRIPT the default ``Script(tool, spill_dir)``,
    RELAY_ARGS go to the relay, DEADLINE sets the CLI's tool-call clock (see above), TIMEOUT bounds the run.
    A second run in the same WORKDIR has the same HOME, server command and relay output directory (so the
    relay's catalog cache is warm)."""
    home = os.path.join(workdir, "home")
    spill_dir = os.path.join(workdir, "spill")
    record = os.path.join(workdir, "initialize.jsonl")
    os.makedirs(home, exist_ok=True)
    os.makedirs(spill_dir, exist_ok=True)
    env = base_env(home)
    script = script or Script(tool, spill_dir)
    with ModelServer(script) as model:
        argv = CLIENTS[client](model.port, mcp_command(via_relay, record, spill_dir, server, relay_args), home, env,
                               deadline=deadline)
        started = time.monotonic()
        try:
            proc = subprocess.run(argv, cwd=home, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, timeout=timeout)
            status, output = proc.returncode, proc.stdout.decode("utf-8", "replace")
        except subprocess.TimeoutExpired as exc:
            status, output = "timeout", (exc.stdout or b"").decode("utf-8", "replace")
    client_info = []
    if os.path.exists(record):
        with open(record) as lines:
            client_info = [json.loads(line).get("clientInfo") for line in lines if line.strip()]
    return Run(script, status, output, client_info, spill_dir, started, time.monotonic() - started)


if __name__ == "__main__":
    import tempfile
    started = time.monotonic()
    run = run_client(sys.argv[1], sys.argv[2], sys.argv[3] == "relay", tempfile.mkdtemp(prefix="ocx-cli-"))
    print("status", run.status, "in %.1f s" % (time.monotonic() - started))
    print("clientInfo", run.client_info)
    print("output", run.output[-3000:])
    for method, path, body in run.script.requests:
        print(method, path, json.dumps(body)[:600] if body else "")
    print("RECEIVED", json.dumps(run.received, ensure_ascii=False)[:1500])
    print("PAGES", len(run.script.pages))
    if "--tools" in sys.argv:
        for method, path, body in run.script.requests:
            if body:
                print(path, [t.get("name") or t.get("type") for t in body.get("tools") or []])
