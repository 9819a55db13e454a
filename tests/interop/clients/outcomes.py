"""What the model received, per (client, case, path): runs each CLI once (cached) and summarises.

A summary (``Outcome``) says how long the tool output the model got was, in
characters and UTF-8 bytes, whether it held the whole result (the text's end
mark, or the image's exact base64), whether it named our spill file and reader
tool, whether the client cut what it was given (what the relay or the server
sent is not all in what the model got), and what paging the reader returned.
"""
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import fit_server
import harness
import model_server
import tools_server

sys.path.insert(0, harness.ROOT)
import ocx_proxy  # noqa: E402  (the variables a client gives its MCP servers: its profile's client_env)

CLIENTS = ["codex", "claude-code", "gemini", "copilot", "opencode", "qwen-code", "codebuddy"]
CASES = ["big_text", "cjk_text", "structured", "image"]
# A client whose limit big_text is under gets a text over it too: CodeBuddy takes 80,000 characters whole.
MORE_CASES = {"codebuddy": ["huge_text"]}
CLIENT_CASES = [(client, case) for client in CLIENTS for case in CASES + MORE_CASES.get(client, [])]
READER = "read_spilled_output"
RUNS = {}      # (client, case, via_relay) -> (Run, Outcome, seconds)
# Runs started ahead (prefetch), two at a time: most of a run is the CLI waiting (its start, its MCP start-up wait,
# the scripted model), so two overlap well on two cores.
POOL = concurrent.futures.ThreadPoolExecutor(max_workers=2)
FUTURES = {}   # (client, case, via_relay) -> Future of run_once's answer
WORKDIR = tempfile.mkdtemp(prefix="ocx-clients-")


class Outcome:
    def __init__(self, run, sent_text, via_relay):
        texts, images = [], []
        collect(run.received, texts, images)
        self.text = "\n".join(texts)
        self.chars = len(self.text)
        self.bytes = len(self.text.encode("utf-8"))
        self.images = images
        self.full = any(contained(whole, self.text, run.spill_dir, whole=True) for whole in whole_forms(run.script.tool))
        self.image_kept = tools_server.png_base64() in images
        self.spill_path = run.spill_dir in self.text
        self.reader_named = READER in self.text
        self.spill_files = sorted(f for f in os.listdir(run.spill_dir) if f.endswith(".txt"))
        self.cut = bool(sent_text) and not any(contained(sent, self.text, run.spill_dir, whole=True) for sent in sent_text)
        pages = "\n".join(text_of(page) for page in run.script.pages)
        self.pages = len(run.script.pages)
        self.pages_reach_end = tools_server.END_MARK in pages
        self.reader_offered = any(name.endswith(READER) for name in run.script.tools_seen)
        self.via_relay = via_relay

    def summary(self):
        if self.chars == 0 and not self.images:
            return "nothing"
        parts = ["%dc/%dB" % (self.chars, self.bytes)]
        if self.images:
            parts.append("image kept" if self.image_kept else "image changed")
        parts.append("full" if self.full else "partial")
        if self.spill_path:
            parts.append("+path")
        if self.reader_named:
            parts.append("+reader")
        if self.pages:
            parts.append("read %d page(s)%s" % (self.pages, " to the end" if self.pages_reach_end else ""))
        if self.cut:
            parts.append("CUT by client")
        return " ".join(parts)


def collect(value, texts, images, key=None):
    """Texts and image payloads in a client's tool output, whatever its wire shape."""
    if isinstance(value, str):
        if key in (None, "text", "output", "content"):
            texts.append(value)
        return
    if isinstance(value, list):
        for item in value:
            collect(item, texts, images, key)
        return
    if not isinstance(value, dict):
        return
    if value.get("type") in ("image", "input_image", "image_url") or "inlineData" in value:
        url = value.get("image_url")   # Responses: the data URL; Chat Completions: {"url": data URL}
        data = (value.get("data") or (value.get("source") or {}).get("data")
                or (value.get("inlineData") or {}).get("data") or (url.get("url") if isinstance(url, dict) else url)
                or "")
        images.append(data.split("base64,", 1)[-1])
        return
    for name, item in value.items():
        collect(item, texts, images, name)


def text_of(value):
    texts = []
    collect(value, texts, [])
    return "\n".join(texts)


def normalise(text, spill_dir):
    """Spill paths and ids differ between runs: replace them so two runs' previews compare (and the size the note
    gives, which holds the request's id: CodeBuddy's reach two digits, the probe's is 2)."""
    text = re.sub(r"\d+ chars \(\d+ bytes\)", "<SIZE>", text)
    text = re.sub(r"[^\s\"'()]*\d{8}T\d{6}\.\d+Z_[A-Za-z0-9._-]+", "<SPILL>", text)
    return re.sub(r"[0-9a-f]{8,}", "<ID>", text)


def contained(sent, received, spill_dir, whole=False):
    """Whether what was sent reached the model: all of it (WHOLE), else its head and tail (JSON escapes allowed)."""
    sent, received = normalise(sent, spill_dir), normalise(received, spill_dir)
    # RECEIVED is plain text, or the JSON text of the content blocks the client passed on
    # (then SENT appears in it escaped once).
    escaped = json.dumps(received, ensure_ascii=False)
    pieces = [sent] if whole else [sent[:200], sent[-200:]]
    return all(piece in received or json.dumps(piece, ensure_ascii=False)[1:-1] in received
               or json.dumps(piece, ensure_ascii=False)[1:-1] in escaped for piece in pieces)


def result_texts(result):
    """The texts a client may show for RESULT: its content, or its structuredContent as JSON (Codex, Claude Code)."""
    texts = [text_of(result.get("content"))]
    if "structuredContent" in result:
        value = result["structuredContent"]
        texts += [json.dumps(value, separators=(",", ":"), ensure_ascii=False), json.dumps(value, ensure_ascii=False),
                  json.dumps(value, indent=2, ensure_ascii=False)]
    return [text for text in texts if text]


def whole_forms(case):
    return result_texts(tools_server.result(case))


def sent_by_us(case, via_relay, spill_dir, client_info, client=None):
    """The text of the result the CLI got from its MCP server: the fixture's, or the relay's preview.

    The probe introduces itself as the CLI did and has the variables the CLI gives its servers (CodeBuddy's),
    so the relay picks the same client profile, and lists the tools as the CLI did, so the preview names the
    reader tool as it did for the CLI.
    """
    request = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": case, "arguments": {}}}
    if not via_relay:
        return result_texts(tools_server.result(case))
    lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": client_info or {"name": "ocx-clients-probe", "version": "1"}}},
             {"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, request]  # listed: the preview names the reader
    command = harness.mcp_command(True, os.devnull, spill_dir)
    entry = ocx_proxy.CLIENTS.get(client)
    variables = entry.profile.client_env if entry is not None and entry.profile else ()
    env = dict(os.environ, **{name: "set by the probe" for name in variables})
    proc = subprocess.run(command, input="".join(json.dumps(m) + "\n" for m in lines).encode(), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=60)
    for line in proc.stdout.decode("utf-8").splitlines():
        message = json.loads(line)
        if message.get("id") == 2:
            return result_texts(message.get("result") or {})
    return []


def run_once(client, case, via_relay):
    """Run ``client`` on ``case`` once: (Run, Outcome or None when the model never got the output, seconds)."""
    workdir = os.path.join(WORKDIR, "%s-%s-%s" % (client, case, "relay" if via_relay else "direct"))
    os.makedirs(workdir)
    started = time.monotonic()
    run = harness.run_client(client, case, via_relay, workdir)
    seconds = time.monotonic() - started
    info = run.client_info[0] if run.client_info else None
    # "probe" is as long as the run's "spill": a byte-bound preview (CJK under Codex's byte
    # budget) keeps fewer characters when the path it names is longer
    sent = sent_by_us(case, via_relay, os.path.join(workdir, "probe"), info, client) \
        if run.received is not None else []
    return run, Outcome(run, sent, via_relay) if run.received is not None else None, seconds


def prefetch(keys):
    """Start the runs of ``keys`` ((client, case, via_relay)) in the background; ``outcome`` then waits for each."""
    for key in keys:
        if key not in RUNS and key not in FUTURES:
            FUTURES[key] = POOL.submit(run_once, *key)


def outcome(client, case, via_relay):
    key = (client, case, via_relay)
    if key not in RUNS:
        future = FUTURES.pop(key, None)
        RUNS[key] = future.result() if future is not None else run_once(*key)
    return RUNS[key]


def write_table(write):
    if not RUNS:
        return
    write("")
    write("real-client table (client, case: what the model received via relay | direct)")
    rows = [("client", "case", "via relay", "direct")]
    for client in CLIENTS:
        for case in CASES + MORE_CASES.get(client, []):
            cells = []
            for via_relay in (True, False):
                entry = RUNS.get((client, case, via_relay))
                if entry is None:
                    cells.append("-")
                elif entry[1] is None:
                    cells.append("no tool output (status %s)" % entry[0].status)
                else:
                    cells.append(entry[1].summary())
            if cells != ["-", "-"]:
                rows.append((client, case, cells[0], cells[1]))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        write("  ".join(row[i].ljust(widths[i]) for i in range(3)) + " | " + row[3])
    names = {}
    for (client, _, _), (run, _, _) in RUNS.items():
        for info in run.client_info:
            names.setdefault(client, set()).add("%s %s" % (info.get("name"), info.get("version")))
    write("clientInfo sent in initialize: " + "; ".join(
        "%s: %s" % (client, ", ".join(sorted(found))) for client, found in sorted(names.items())))
    write("CLI runs: %d, %.0f s in all" % (len(RUNS), sum(entry[2] for entry in RUNS.values())))


# ---- Catalog fitting (fit_server's cases), per (client, case, path) ----

FIT_CLIENTS = ["gemini", "codex"]
FIT_CASES = fit_server.BROKEN + ["all"]
FIT_RUNS = {}  # (client, case, via_relay) -> (FitOutcome, seconds)


class FitOutcome:
    """One CLI run on fit_server's catalog for CASE ("all": every tool): what the model API refused, which
    tools the model was offered and under which name, and what reached the server (``calls``)."""

    def __init__(self, run, script, calls, case):
        self.status = run.status
        self.output = run.output
        self.refusals = script.refusals
        self.offered = script.offered
        self.calls = calls
        self.cases = fit_server.BROKEN + ["ping"] if case == "all" else [case, "ping"]

    def reached(self, case):
        """Whether CASE's tool was called with its original name and arguments."""
        name, _, arguments = fit_server.CASES[case]
        return {"name": name, "arguments": arguments} in self.calls

    def summary(self):
        if self.refusals:
            status, body = self.refusals[0][1]
            error = body["error"]
            return "REFUSED %s %s" % (status, error.get("code") if "type" in error else error.get("status"))
        missing = [case for case in self.cases if not self.offered.get(case)]
        if missing:
            return "not offered: " + ", ".join(missing)
        wrong = [case for case in self.cases if not self.reached(case)]
        if wrong:
            return "server did not get: " + ", ".join(wrong)
        shown = [self.offered[case].replace("\x00", "/") for case in self.cases if case != "ping"]
        return "ok as " + ", ".join(shown) if len(shown) == 1 else "ok (%d tools)" % len(self.cases)


def fit_outcome(client, case, via_relay):
    key = (client, case, via_relay)
    if key not in FIT_RUNS:
        workdir = os.path.join(WORKDIR, "fit-%s-%s-%s" % (client, case, "relay" if via_relay else "direct"))
        os.makedirs(workdir)
        calls_file = os.path.join(workdir, "calls.jsonl")
        server = [sys.executable, fit_server.__file__, "--calls", calls_file]
        if case != "all":
            server += ["--only", case]
        cases = [(c, fit_server.MARK % c, fit_server.CASES[c][2]) for c in fit_server.CASES]
        script = model_server.FitScript(cases, os.path.join(workdir, "spill"))
        started = time.monotonic()
        run = harness.run_client(client, case, via_relay, workdir, server, script)
        seconds = time.monotonic() - started
        calls = []
        if os.path.exists(calls_file):
            with open(calls_file) as lines:
                calls = [json.loads(line) for line in lines if line.strip()]
        FIT_RUNS[key] = (FitOutcome(run, script, calls, case), seconds)
    return FIT_RUNS[key][0]


def write_fit_table(write):
    if not FIT_RUNS:
        return
    write("")
    write("catalog fitting: client, case: via relay | direct")
    rows = [("client", "case", "via relay", "direct")]
    for client in FIT_CLIENTS:
        for case in FIT_CASES:
            cells = [FIT_RUNS[(client, case, path)][0].summary() if (client, case, path) in FIT_RUNS else "-"
                     for path in (True, False)]
            if cells != ["-", "-"]:
                rows.append((client, case, cells[0], cells[1]))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        write("  ".join(row[i].ljust(widths[i]) for i in range(3)) + " | " + row[3])
    write("fitting CLI runs: %d, %.0f s in all" % (len(FIT_RUNS), sum(entry[1] for entry in FIT_RUNS.values())))


# ---- The cases beyond the four results (test_more_cases.py) ----

MORE = {}  # (client, case) -> what happened


def write_case_table(write, title, cases):
    """``cases`` ({(client, case): outcome}) under ``title``, a row each; nothing when there are none."""
    if not cases:
        return
    write("")
    write(title)
    widths = [max(len(key[i]) for key in cases) for i in (0, 1)]
    for key in sorted(cases):
        write(key[0].ljust(widths[0]) + "  " + key[1].ljust(widths[1]) + "  " + cases[key])


def write_more_table(write):
    write_case_table(write, "more cases: client, case: outcome", MORE)


# ---- The clients' clocks (test_clocks.py) ----

CLOCKS = {}  # (client, case) -> what happened
CLOCK_CLIENTS = set()  # the clients whose clock tests were selected (conftest)


def write_clocks_table(write):
    write_case_table(write, "clocks: client, case: outcome", CLOCKS)
