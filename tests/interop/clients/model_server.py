"""A scripted model endpoint on 127.0.0.1 for the real-client tier (standard library only).

One server speaks the three wire formats the CLIs use:

- OpenAI Responses API (Codex): ``POST /v1/responses`` answered with SSE events;
- Anthropic Messages (Claude Code): ``POST /v1/messages`` streaming events
  (and ``count_tokens``);
- Gemini API (Gemini CLI): ``:streamGenerateContent`` (SSE), ``:generateContent``
  and ``:countTokens``.

The script, the same for every client: turn 1 calls the MCP tool whose name
ends with ``Script.tool``; when the client passes its output back, that output
is RECORDED (it is exactly what the model received).  If the client offered the
reader tool and the output names a spill (a ``.txt`` path), the model calls the
reader with that spill id (the stem of a ``.txt`` in the relay's spill folder) and follows its "next page" hints (bounded), recording
every page; then it ends the conversation with a short text.  Requests that
carry no tools (titles, next-speaker checks) get a short text.
"""
import http.server
import json
import re
import threading

READER = "read_spilled_output"
SERVER = "fx"  # the MCP server's name in every CLI config: its tools are named mcp__fx__*, mcp_fx_*, ...
MAX_PAGES = 12
NEXT_LINE = re.compile(r"line\s*[=:]\s*(\d+)(?:\s*,\s*column\s*[=:]\s*(\d+))?")


class Script:
    """What one CLI run does and what it saw: ``received`` (the tool output), ``pages`` (reader answers)."""

    def __init__(self, tool, spill_dir):
        self.tool = tool
        self.spill_txt = re.compile(re.escape(spill_dir.rstrip("/\\")) + r"[/\\]([A-Za-z0-9._-]+)\.txt")
        self.received = None
        self.pages = []
        self.tools_seen = []
        self.requests = []
        self.lock = threading.Lock()

    def decide(self, tool_names, outputs):
        """Next step from the offered tool names and the tool outputs so far (list of (name, output)).

        Returns ("call", name, arguments) or ("text", words)."""
        self.tools_seen = list(tool_names)
        if not outputs:
            target = [n for n in tool_names if n.endswith(self.tool) and SERVER in n and READER not in n]
            if not target:
                return ("text", "no tool named *%s was offered" % self.tool)
            return ("call", target[0], {})
        name, output = outputs[-1]
        reader = [n for n in tool_names if n.endswith(READER)]
        if READER in name:
            self.pages.append(output)
            text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
            following = text.rsplit("next", 1)
            match = NEXT_LINE.search(following[1]) if len(following) == 2 else None
            if match and len(self.pages) < MAX_PAGES:
                arguments = {"id": self.spill_id(), "line": int(match.group(1))}
                if match.group(2):  # inside a line longer than a page
                    arguments["column"] = int(match.group(2))
                return ("call", reader[0], arguments)
            return ("text", "done")
        if self.received is None:
            self.received = output
        spill = self.spill_id()
        if reader and spill:
            return ("call", reader[0], {"id": spill})
        return ("text", "done")

    def spill_id(self):
        text = self.received if isinstance(self.received, str) else json.dumps(self.received, ensure_ascii=False)
        found = self.spill_txt.search(text or "")
        return found.group(1) if found else None


def sse(handler, events):
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Cache-Control", "no-cache")
    handler.send_header("Connection", "close")
    handler.end_headers()
    for name, data in events:
        chunk = ("event: %s\n" % name if name else "") + "data: " + json.dumps(data) + "\n\n"
        handler.wfile.write(chunk.encode("utf-8"))
        handler.wfile.flush()
    handler.close_connection = True


def send_json(handler, value, status=200):
    body = json.dumps(value).encode("utf-8")
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


# ---- OpenAI Responses API (Codex) ----

def responses_tools(tools):
    """Names of the function tools, also inside ``namespace`` entries (joined as Codex does)."""
    names = []
    for tool in tools or []:
        if tool.get("type") == "namespace":
            for inner in tool.get("tools") or []:
                names.append((tool.get("name") or "") + "\x00" + (inner.get("name") or ""))
        elif tool.get("name"):
            names.append(tool["name"])
    return names


def responses_outputs(items):
    calls, outputs = {}, []
    for item in items if isinstance(items, list) else []:
        if item.get("type") == "function_call":
            calls[item.get("call_id")] = (item.get("namespace") or "") + "\x00" + item.get("name", "") \
                if item.get("namespace") else item.get("name", "")
        elif item.get("type") == "function_call_output":
            outputs.append((calls.get(item.get("call_id"), ""), item.get("output")))
    return outputs


def responses_answer(handler, script, body, turn):
    step = script.decide(responses_tools(body.get("tools")), responses_outputs(body.get("input")))
    rid = "resp_%d" % turn
    if step[0] == "call":
        namespace, _, name = step[1].rpartition("\x00")
        item = {"type": "function_call", "id": "fc_%d" % turn, "call_id": "call_%d" % turn, "name": name,
                "arguments": json.dumps(step[2]), "status": "completed"}
        if namespace:
            item["namespace"] = namespace
    else:
        item = {"type": "message", "id": "msg_%d" % turn, "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": step[1], "annotations": []}]}
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}
    sse(handler, [
        ("response.created", {"type": "response.created", "response": {"id": rid}}),
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
        ("response.completed", {"type": "response.completed",
                                "response": {"id": rid, "output": [item], "usage": usage}}),
    ])


# ---- Anthropic Messages (Claude Code) ----

def anthropic_outputs(messages):
    calls, outputs = {}, []
    for message in messages or []:
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_use":
                calls[block.get("id")] = block.get("name", "")
            elif block.get("type") == "tool_result":
                outputs.append((calls.get(block.get("tool_use_id"), ""), block.get("content")))
    return outputs


def anthropic_answer(handler, script, body, turn):
    tools = [t.get("name", "") for t in body.get("tools") or []]
    if not any(n.endswith(script.tool) for n in tools):
        step = ("text", "ok")
    else:
        step = script.decide(tools, anthropic_outputs(body.get("messages")))
    message = {"id": "msg_%d" % turn, "type": "message", "role": "assistant", "model": body.get("model", "m"),
               "content": [], "stop_reason": None, "stop_sequence": None,
               "usage": {"input_tokens": 10, "output_tokens": 1}}
    if step[0] == "call":
        block = {"type": "tool_use", "id": "toolu_%d" % turn, "name": step[1], "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(step[2])}
        stop = "tool_use"
    else:
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": step[1]}
        stop = "end_turn"
    if not body.get("stream"):
        final = dict(block, input=step[2]) if step[0] == "call" else {"type": "text", "text": step[1]}
        send_json(handler, dict(message, content=[final], stop_reason=stop))
        return
    sse(handler, [
        ("message_start", {"type": "message_start", "message": message}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                           "usage": {"output_tokens": 5}}),
        ("message_stop", {"type": "message_stop"}),
    ])


# ---- Gemini API (Gemini CLI) ----

def gemini_tools(tools):
    return [d.get("name", "") for t in tools or [] for d in t.get("functionDeclarations") or []]


def gemini_outputs(contents):
    """Each functionResponse with the parts that follow it in the same turn (Gemini CLI puts media there)."""
    outputs = []
    for content in contents or []:
        for part in content.get("parts") or []:
            if "functionResponse" in part:
                response = part["functionResponse"]
                outputs.append((response.get("name", ""), {"response": response.get("response"),
                                                          "parts": response.get("parts") or []}))
            elif outputs and content.get("role") in ("user", "function") and ("inlineData" in part or "text" in part):
                outputs[-1][1]["parts"].append(part)
    return outputs


def gemini_answer(handler, script, body, turn, stream):
    tools = gemini_tools(body.get("tools"))
    if not any(n.endswith(script.tool) for n in tools):
        text = '{"reasoning": "done", "next_speaker": "user"}' if body.get("generationConfig", {}).get(
            "responseMimeType") == "application/json" else "ok"
        step = ("text", text)
    else:
        step = script.decide(tools, gemini_outputs(body.get("contents")))
    part = {"functionCall": {"name": step[1], "args": step[2]}} if step[0] == "call" else {"text": step[1]}
    chunk = {"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
             "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
             "modelVersion": "gemini-test"}
    if stream:
        sse(handler, [(None, chunk)])
    else:
        send_json(handler, chunk)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.server.script.requests.append(("GET", self.path, None))
        send_json(self, {"data": [], "models": []})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw.decode("utf-8") or "{}")
        except ValueError:
            body = {}
        script = self.server.script
        with script.lock:
            script.requests.append(("POST", self.path, body))
            turn = len(script.requests)
        path = self.path.split("?")[0]
        if path.endswith("/responses"):
            responses_answer(self, script, body, turn)
        elif path.endswith("/messages/count_tokens"):
            send_json(self, {"input_tokens": max(1, len(json.dumps(body.get("messages"), ensure_ascii=False)) // 4)})
        elif path.endswith("/messages"):
            anthropic_answer(self, script, body, turn)
        elif path.endswith(":streamGenerateContent"):
            gemini_answer(self, script, body, turn, True)
        elif path.endswith(":generateContent"):
            gemini_answer(self, script, body, turn, False)
        elif path.endswith(":countTokens"):
            send_json(self, {"totalTokens": 100})
        else:
            send_json(self, {"error": {"message": "not scripted: " + path}}, 404)


class ModelServer(http.server.ThreadingHTTPServer):
    """``with ModelServer(script) as server:`` serves on 127.0.0.1:``server.port`` in a thread."""

    daemon_threads = True

    def __init__(self, script):
        super().__init__(("127.0.0.1", 0), Handler)
        self.script = script
        self.port = self.server_address[1]
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.shutdown()
        self.server_close()
