"""Real CLIs, beyond the four results: a pattern read, paging by the reader's description, capture's printed
config (a server ignoring EOF: test_lifecycle.py).

- pattern: via the relay, the model searches the spilled big text with the reader's ``pattern``
  argument and must find its last line;
- description: via the relay, a model that knows of the reader only its description in the tool list the
  CLI sent (clients trust a tool's description; some tell their model to ignore directives in a result)
  pages the spilled big text to its end;
- capture: the CLI starts ``ocx_proxy.py capture`` with the entry ``capture --print-config CLIENT``
  printed (its command line, name and tool), the model calls the catalog's tool, the call is recorded;
- a tool's own result size (Claude Code): a result a tool declared room for (``_meta["anthropic/maxResultSizeChars"]``)
  reaches the model whole and inline, via the relay and direct, and the reader's pages, which declare their size,
  are not saved a second time by Claude Code;

Each outcome goes to ``outcomes.MORE`` and is printed after the main table.
"""
import json
import os
import re
import subprocess
import sys

import pytest

import harness
import model_server
import outcomes
import tools_server
from outcomes import CLIENTS
from test_clients import need

HERE = os.path.dirname(os.path.abspath(__file__))
CAPTURE_TOOL = "lookup_order"


def spilled_case(client):
    """A text the relay spills for CLIENT's profile: big_text, or the client's bigger one (outcomes.MORE_CASES)."""
    return outcomes.MORE_CASES.get(client, ["big_text"])[0]


class PatternScript(model_server.Script):
    """After the spilled result, one reader call with ``pattern`` = the end mark (then stop)."""

    def decide(self, tool_names, outputs, body=None):
        if outputs and model_server.READER in outputs[-1][0]:
            self.tools_seen = list(tool_names)
            self.pages.append(outputs[-1][1])
            return ("text", "done")
        step = super().decide(tool_names, outputs, body)
        if step[0] == "call" and model_server.READER in step[1]:
            return ("call", step[1], {"id": step[2]["id"], "pattern": tools_server.END_MARK})
        return step


class DescriptionScript(model_server.Script):
    """Pages the spilled result knowing of the reader only its description, as the CLI sent it: the reader is
    the tool whose description speaks of the ``[ocx-proxy: ...]`` note; the forms it quotes in backticks say
    where the note gives the id (`id="..."`) and where an answer says the rest starts (`... line=L`,
    `... line=L, column=C`).  The ``[next: ...]`` text is never read."""

    def decide(self, tool_names, outputs, body=None):
        if not outputs:
            return super().decide(tool_names, outputs, body)
        self.tools_seen = list(tool_names)
        descriptions = dict(model_server.offered_descriptions(body), **model_server.searched_descriptions(body))
        reader = next((n for n in tool_names if "[ocx-proxy: ...]" in descriptions.get(n, "")), None)
        hidden = [n for n in tool_names if n.endswith(model_server.READER) and n not in self.revealed]
        if reader is None and hidden and hidden[0] not in descriptions:
            return ("call", hidden[0], {})  # a deferred tool: the model reviews its schema first (Qwen Code)
        if reader is None:
            return ("text", "no tool describes the [ocx-proxy: ...] note")
        quoted = re.findall(r"`([^`]*)`", descriptions[reader])
        name, output = outputs[-1]
        text = plain_text(output)
        if name != reader:
            self.received = output
            id_form = next((q for q in quoted if q.startswith("id=")), None)
            found = id_form and re.search(re.escape(id_form).replace(re.escape("..."), '([^"]+)'), text)
            if not found:
                return ("text", "no id in the note")
            self.reader_id = found.group(1)
            return ("call", reader, {"id": self.reader_id})
        self.pages.append(output)
        where = None
        for form in [q for q in quoted if q.endswith(("=L", "=C"))]:
            for found in re.finditer(re.escape(form).replace("=L", r"=(\d+)").replace("=C", r"=(\d+)"), text):
                if where is None or (found.start(), found.end()) > where[0]:
                    where = ((found.start(), found.end()), [int(n) for n in found.groups()] + [1])
        if where is None or len(self.pages) >= model_server.MAX_PAGES * 4:
            return ("text", "done")
        return ("call", reader, {"id": self.reader_id, "line": where[1][0], "column": where[1][1]})


def plain_text(output):
    """The texts of a tool output as a client passed it on (content blocks, maybe as one JSON string)."""
    text = outcomes.text_of(output)
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return outcomes.text_of(value) if isinstance(value, (list, dict)) else text


def workdir(client, case, via_relay):
    path = os.path.join(outcomes.WORKDIR, "more-%s-%s-%s" % (client, case, "relay" if via_relay else "direct"))
    os.makedirs(path)
    return path


@pytest.mark.parametrize("client", CLIENTS)
def test_pattern_read_finds_the_end_via_relay(client):
    need(client)
    where = workdir(client, "pattern", True)
    script = PatternScript(spilled_case(client), os.path.join(where, "spill"))
    run = harness.run_client(client, spilled_case(client), True, where, script=script)
    found = "\n".join(outcomes.text_of(page) for page in script.pages)
    outcomes.MORE[(client, "pattern read")] = "%d match page(s), %s" % (
        len(script.pages), "end found" if tools_server.END_MARK in found else "END NOT FOUND")
    assert run.status == 0, run.output[-2000:]
    assert tools_server.END_MARK in found, run.output[-2000:]


@pytest.mark.parametrize("client", CLIENTS)
def test_a_model_following_only_the_reader_description_pages_to_the_end(client):
    need(client)
    where = workdir(client, "description", True)
    script = DescriptionScript(spilled_case(client), os.path.join(where, "spill"))
    run = harness.run_client(client, spilled_case(client), True, where, script=script)
    pages = "\n".join(plain_text(page) for page in script.pages)
    outcomes.MORE[(client, "reader by its description")] = "%d page(s), %s" % (
        len(script.pages), "end reached" if tools_server.END_MARK in pages else "END NOT REACHED")
    assert run.status == 0, run.output[-2000:]
    assert tools_server.END_MARK in pages, run.output[-2000:]


def printed_config(client, where):
    """(command argv, calls file) from ``capture --print-config CLIENT`` for a one-tool catalog."""
    catalog = os.path.join(where, "request.json")
    calls = os.path.join(where, "calls.ndjson")
    with open(catalog, "w") as out:
        json.dump({"tools": [{"type": "function", "name": CAPTURE_TOOL, "description": "Look an order up.",
                              "parameters": {"type": "object", "properties": {}}}]}, out)
    proc = subprocess.run([sys.executable, harness.PROXY, "capture", "--catalog", catalog, "--out", calls,
                           "--reply", "deferred", "--server-name", model_server.SERVER, "--print-config", client],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout.decode("utf-8")
    if client == "codex":
        tomllib = pytest.importorskip("tomllib")
        server = tomllib.loads(text)["mcp_servers"][model_server.SERVER]
    elif client == "opencode":   # {"mcp": {NAME: {"type": "local", "command": [...]}}}
        return json.loads(text)["mcp"][model_server.SERVER]["command"], calls
    else:
        server = json.loads(text)["mcpServers"][model_server.SERVER]
    return [server["command"]] + server["args"], calls


@pytest.mark.parametrize("client", CLIENTS)
def test_capture_with_its_printed_config_records_the_call(client):
    need(client)
    where = workdir(client, "capture", False)
    command, calls = printed_config(client, where)
    # exactly the printed command line: the harness's trailing "--record FILE" is dropped before exec
    server = [sys.executable, "-c", "import os, sys; os.execv(sys.argv[1], sys.argv[1:-2])"] + command
    run = harness.run_client(client, CAPTURE_TOOL, False, where, server=server)
    recorded = []
    if os.path.exists(calls):
        with open(calls) as lines:
            recorded = [json.loads(line) for line in lines if line.strip()]
    names = [record.get("name") for record in recorded]
    outcomes.MORE[(client, "capture --print-config")] = "recorded %s" % (names or "nothing")
    assert run.status == 0, run.output[-2000:]
    assert names == [CAPTURE_TOOL], run.output[-2000:]


# ---- Claude Code reads a tool's own result size: _meta["anthropic/maxResultSizeChars"] in tools/list ----

DECLARED = 120000          # what declared_text and declared_cjk declare (tools_server.py --declare)
CLAUDE_CODE_INLINE = 50000  # what Claude Code inlines of a result that declares nothing
READER_BUDGET = 60000      # --max-response-chars of the reader case: pages over CLAUDE_CODE_INLINE


def sized_run(case, tool, via_relay, relay_args=()):
    """Claude Code calls ``tool`` of tools_server.py --declare DECLARED: (run, script, what the model got)."""
    where = workdir("claude-code", case, via_relay)
    script = model_server.Script(tool, os.path.join(where, "spill"))
    server = [sys.executable, tools_server.__file__, "--declare", str(DECLARED)]
    run = harness.run_client("claude-code", tool, via_relay, where, server=server, script=script,
                             relay_args=relay_args)
    return run, script, plain_text(script.received) if script.received is not None else None


def saved_by_claude_code(text):
    """Whether Claude Code gave its model, instead of the result, the note of a file it saved the result to (past its
    50,000 characters with a preview, past MAX_MCP_OUTPUT_TOKENS without one)."""
    return "<persisted-output>" in text or "Output has been saved to" in text


def said(text, whole):
    """The outcome's words: how much the model got and how (Claude Code appends a <system-reminder> of its own)."""
    if text is None:
        return "no tool output"
    how = "saved by Claude Code" if saved_by_claude_code(text) else "whole, inline" if whole in text else "partial"
    return "%d characters, %s" % (len(text), how)


@pytest.mark.parametrize("tool,via_relay", [("declared_text", True), ("declared_text", False),
                                            ("plain_text", False), ("declared_cjk", True), ("declared_cjk", False)])
def test_claude_code_keeps_a_result_whole_inline_up_to_what_its_tool_declares(tool, via_relay):
    """A tool declaring 120,000: its 100,000-character result reaches the model whole and inline, via the relay
    (whose budget for it is what it declares) and direct; the same text from a tool declaring nothing is saved to a
    file by Claude Code (direct).  The CJK text (about 300 KB, some 100,000 tokens) shows the declared text is no
    longer held to MAX_MCP_OUTPUT_TOKENS: the relay gives it no byte budget."""
    need("claude-code")
    run, script, text = sized_run("%s" % tool, tool, via_relay)
    whole = tools_server.SIZED[tool]()
    outcomes.MORE[("claude-code", "%s (%s), %s" % (tool, "declares %d" % DECLARED if tool != "plain_text" else
                                                   "declares nothing", "relay" if via_relay else "direct"))] = \
        said(text, whole)
    assert run.status == 0, run.output[-2000:]
    assert text is not None, run.output[-2000:]
    if tool == "plain_text":
        assert saved_by_claude_code(text) and whole not in text, said(text, whole)
    else:
        assert whole in text and not saved_by_claude_code(text), said(text, whole)


def test_claude_code_does_not_save_the_readers_pages_again():
    """The relay spills plain_text (100,000 characters) at READER_BUDGET; the reader declares the size of its pages,
    so a page over Claude Code's own 50,000 reaches the model inline and whole, and the pages reach the end."""
    need("claude-code")
    run, script, text = sized_run("reader", "plain_text", True, ["--max-response-chars", str(READER_BUDGET)])
    pages = [plain_text(page) for page in script.pages]
    outcomes.MORE[("claude-code", "reader pages, relay --max-response-chars %d" % READER_BUDGET)] = \
        "%d page(s) of %s characters%s%s" % (len(pages), "/".join(str(len(page)) for page in pages),
                                             ", the end reached" if tools_server.END_MARK in "".join(pages) else "",
                                             ", SAVED BY CLAUDE CODE" if any(saved_by_claude_code(p) for p in pages)
                                             else "")
    assert run.status == 0, run.output[-2000:]
    assert text is not None and "ocx-proxy" in text, run.output[-2000:]
    assert pages and not any(saved_by_claude_code(page) for page in pages), pages[0][:500] if pages else run.output
    assert max(len(page) for page in pages) > CLAUDE_CODE_INLINE
    assert tools_server.END_MARK in pages[-1]
