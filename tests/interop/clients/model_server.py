"""A scripted model endpoint on 127.0.0.1 for the real-client tier (standard library only).

One server speaks the four wire formats the CLIs use:

- OpenAI Responses API (Codex): ``POST /v1/responses`` answered with SSE events;
- Anthropic Messages (Claude Code): ``POST /v1/messages`` streaming events
  (and ``count_tokens``);
- Gemini API (Gemini CLI): ``:streamGenerateContent`` (SSE), ``:generateContent``
  and ``:countTokens``;
- OpenAI Chat Completions (OpenCode, Qwen Code, CodeBuddy): ``POST [/v1]/chat/completions``,
  streamed (SSE chunks ending ``data: [DONE]``) or not.

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
import time

READER = "read_spilled_output"
SERVER = "fx"  # the MCP server's name in every CLI config: its tools are named mcp__fx__*, mcp_fx_*, ...
MAX_PAGES = 12
# How a CLI offers deferred (MCP) tools: a search tool that shows a tool's schema and a call tool that runs one:
# (search tool, call tool, the search's arguments for one name, the call's argument naming the tool, the call's
# argument holding the tool's arguments)
BRIDGES = [("tool_search", "tool_call", lambda name: {"query": "select:" + name}, "name", "arguments"),  # Qwen Code
           ("ToolSearch", "DeferExecuteTool", lambda name: {"tool_names": [name]}, "toolName", "params")]  # CodeBuddy
BRIDGE_SEARCHES = set(bridge[0] for bridge in BRIDGES)
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
        self.times = []   # time.monotonic() of each of ``requests``
        self.refusals = []  # (path, (status, body)) of requests refused as the real API would
        self.revealed = set()  # deferred tools whose schema the model reviewed (tool_search)
        self.lock = threading.Lock()

    def wants(self, tool_names):
        """Whether a request offering ``tool_names`` is the conversation (not a title or a side question)."""
        return any(n.endswith(self.tool) for n in tool_names)

    def decide(self, tool_names, outputs, body=None):
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


def offered_descriptions(body):
    """{tool name as ``decide`` gets it: description} for the tools a request offers (all three APIs)."""
    found = {}
    for tool in (body or {}).get("tools") or []:
        for declaration in tool.get("functionDeclarations") or []:
            found[declaration.get("name", "")] = declaration.get("description") or ""
        if tool.get("type") == "namespace":
            for inner in tool.get("tools") or []:
                found[(tool.get("name") or "") + "\x00" + (inner.get("name") or "")] = inner.get("description") or ""
        elif isinstance(tool.get("function"), dict):  # Chat Completions
            found[tool["function"].get("name", "")] = tool["function"].get("description") or ""
        elif tool.get("name"):
            found[tool["name"]] = tool.get("description") or ""
    return found


class FitScript(Script):
    """The catalog-fitting script: call, one per turn, every tool whose description holds a case's mark.

    ``cases`` is a list of (case, mark, arguments); ``offered`` maps each case to the name the model saw
    it under (None: not offered), ``outputs`` holds what came back for each call."""

    def __init__(self, cases, spill_dir):
        super().__init__("", spill_dir)
        self.cases = cases
        self.offered = {}
        self.outputs = []

    def decide(self, tool_names, outputs, body=None):
        self.tools_seen = list(tool_names)
        descriptions = offered_descriptions(body)
        self.offered = {case: next((n for n in tool_names if mark in descriptions.get(n, "")), None)
                        for case, mark, _ in self.cases}
        self.outputs = list(outputs)
        calls = [(self.offered[case], arguments) for case, _, arguments in self.cases if self.offered[case]]
        if len(outputs) < len(calls):
            return ("call",) + calls[len(outputs)]
        return ("text", "done")


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
    step = script.decide(responses_tools(body.get("tools")), responses_outputs(body.get("input")), body)
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
    if not script.wants(tools):
        step = ("text", "ok")
    else:
        step = script.decide(tools, anthropic_outputs(body.get("messages")), body)
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
    if not script.wants(tools):
        text = '{"reasoning": "done", "next_speaker": "user"}' if body.get("generationConfig", {}).get(
            "responseMimeType") == "application/json" else "ok"
        step = ("text", text)
    else:
        step = script.decide(tools, gemini_outputs(body.get("contents")), body)
    part = {"functionCall": {"name": step[1], "args": step[2]}} if step[0] == "call" else {"text": step[1]}
    chunk = {"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
             "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
             "modelVersion": "gemini-test"}
    if stream:
        sse(handler, [(None, chunk)])
    else:
        send_json(handler, chunk)


# ---- OpenAI Chat Completions (OpenCode, Qwen Code, CodeBuddy) ----

def chat_tools(tools):
    return [(t.get("function") or {}).get("name", "") for t in tools or [] if t.get("type") == "function"]


def chat_outputs(messages):
    """Each ``tool`` message's content with the user parts that follow it (where these CLIs put images).

    A call through Qwen Code's ``tool_call`` bridge counts as a call of the tool it names; what
    ``tool_search`` answered is left out (the script never reads it)."""
    calls, outputs = {}, []
    for message in messages or []:
        role = message.get("role")
        if role == "assistant":
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                name = function.get("name", "")
                for bridge in BRIDGES:
                    if name == bridge[1]:
                        name = json.loads(function.get("arguments") or "{}").get(bridge[3], "")
                calls[call.get("id")] = name
        elif role == "tool":
            name = calls.get(message.get("tool_call_id"), "")
            if name not in BRIDGE_SEARCHES:
                outputs.append((name, {"content": message.get("content"), "parts": []}))
        elif role == "user" and outputs and isinstance(message.get("content"), list):
            outputs[-1][1]["parts"].extend(message["content"])
    return outputs


def bridge_of(tools):
    """The BRIDGES entry whose two tools a request offers, or None."""
    return next((bridge for bridge in BRIDGES if bridge[0] in tools and bridge[1] in tools), None)


def deferred_tools(body, tools):
    """The MCP tools a request only names (Qwen Code defers them behind ``tool_search``/``tool_call``, naming them
    in a message; CodeBuddy behind ``ToolSearch``/``DeferExecuteTool``, naming them in ToolSearch's description)."""
    if bridge_of(tools) is None:
        return []
    named = re.findall(r"mcp__%s__[A-Za-z0-9_-]+" % SERVER, json.dumps([body.get("messages"), body.get("tools")]))
    return sorted(set(named) - set(tools))


def searched_descriptions(body):
    """{name: description} of the deferred tools whose schema the search tool returned: Qwen Code answers
    ``<function>{"name": ..., "description": ...}</function>``, CodeBuddy ``## NAME`` then the description and
    ``Parameters:``."""
    found = {}
    for message in body.get("messages") or []:
        if message.get("role") != "tool":
            continue
        for text in re.findall(r"<function>(.*?)</function>", json.dumps(message.get("content"))):
            try:
                tool = json.loads(json.loads('"%s"' % text))
            except ValueError:
                continue
            found[tool.get("name", "")] = tool.get("description") or ""
        content = message.get("content")
        for name, description in re.findall(r"^## (\S+)\n(.*?)\n\nParameters:", content if isinstance(content, str)
                                            else "", re.S | re.M):
            found[name] = description
    return found


def chat_answer(handler, script, body, turn):
    tools = chat_tools(body.get("tools"))
    deferred = deferred_tools(body, tools)
    if not tools:
        step = ("text", "ok")  # titles, summaries
    else:
        step = script.decide(tools + deferred, chat_outputs(body.get("messages")), body)
    if step[0] == "call" and step[1] in deferred:
        # the model reviews a deferred tool's schema once, then calls it through the bridge
        bridge = bridge_of(tools)
        if step[1] in script.revealed:
            step = ("call", bridge[1], {bridge[3]: step[1], bridge[4]: step[2]})
        else:
            script.revealed.add(step[1])
            step = ("call", bridge[0], bridge[2](step[1]))
    if step[0] == "calls":   # ("calls", text, [(name, arguments)...]): some text and several calls in one message
        delta = {"role": "assistant", "content": step[1], "tool_calls": [
            {"index": index, "id": "call_%d_%d" % (turn, index), "type": "function",
             "function": {"name": name, "arguments": json.dumps(arguments)}}
            for index, (name, arguments) in enumerate(step[2])]}
        finish = "tool_calls"
    elif step[0] == "call":
        delta = {"role": "assistant", "content": None, "tool_calls": [
            {"index": 0, "id": "call_%d" % turn, "type": "function",
             "function": {"name": step[1], "arguments": json.dumps(step[2])}}]}
        finish = "tool_calls"
    else:
        delta = {"role": "assistant", "content": step[1]}
        finish = "stop"
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    head = {"id": "chatcmpl-%d" % turn, "created": 1767225600, "model": body.get("model", "m")}
    if not body.get("stream"):
        message = dict(delta)
        if step[0] in ("call", "calls"):
            message["tool_calls"] = [dict(call) for call in delta["tool_calls"]]
            for call in message["tool_calls"]:
                call.pop("index")
        send_json(handler, dict(head, object="chat.completion", usage=usage, choices=[
            {"index": 0, "message": message, "finish_reason": finish}]))
        return
    chunk = dict(head, object="chat.completion.chunk")
    sse(handler, [(None, dict(chunk, choices=[{"index": 0, "delta": delta, "finish_reason": None}])),
                  (None, dict(chunk, choices=[{"index": 0, "delta": {}, "finish_reason": finish}])),
                  (None, dict(chunk, choices=[], usage=usage))])
    handler.wfile.write(b"data: [DONE]\n\n")
    handler.wfile.flush()


# ---- What the real APIs refuse in a request's tools (HTTP 400), as documented or reported ----

# Gemini API FunctionDeclaration.name: "Must be a-z, A-Z, 0-9, or contain underscores, colons, dots, and
# dashes, with a maximum length of 64" (ai.google.dev/api/caching#FunctionDeclaration); the message is the
# one users quote (google-gemini/gemini-cli #6704, #7869; microsoft/vscode-copilot-release #7928).
GEMINI_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]{0,63}\Z")
GEMINI_NAME_ERROR = ("Invalid function name. Must start with a letter or an underscore. Must be alphameric "
                     "(a-z, A-Z, 0-9), underscores (_), dots (.) or dashes (-), with a maximum length of 64.")
# The fields of the Gemini API's Schema object (ai.google.dev/api/caching#Schema), which the legacy
# ``parameters`` is parsed as: any other key is "Unknown name ... Cannot find field" ($ref: decolua/9router
# #1036; const: zed-industries/zed #44875; $schema: router-for-me/CLIProxyAPI #97), and a list where the
# proto has one value (a type array) is "Proto field is not repeating, cannot start list"
# (zed-industries/zed #53919, #32429).  ``parametersJsonSchema`` takes JSON Schema and is not checked here.
GEMINI_SCHEMA_FIELDS = {
    "type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems", "properties",
    "required", "minProperties", "maxProperties", "minLength", "maxLength", "pattern", "example", "anyOf",
    "propertyOrdering", "default", "items", "minimum", "maximum"}
GEMINI_SCALARS = {"type", "format", "title", "description", "nullable", "pattern", "minimum", "maximum",
                  "minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties"}


def gemini_schema_violations(schema, where):
    """(field, description) pairs for what the Gemini API refuses in a legacy ``parameters`` SCHEMA."""
    found = []
    if not isinstance(schema, dict):
        return found
    for key, value in schema.items():
        if key not in GEMINI_SCHEMA_FIELDS:
            found.append((where, "Invalid JSON payload received. Unknown name \"%s\" at '%s': Cannot find field."
                          % (key, where)))
        elif key in GEMINI_SCALARS and isinstance(value, list):
            found.append((where, "Invalid JSON payload received. Unknown name \"%s\" at '%s': Proto field is "
                                 "not repeating, cannot start list." % (key, where)))
    properties = schema.get("properties")
    for index, value in enumerate(properties.values() if isinstance(properties, dict) else []):
        found += gemini_schema_violations(value, "%s.properties[%d].value" % (where, index))
    if isinstance(schema.get("items"), dict):
        found += gemini_schema_violations(schema["items"], where + ".items")
    for index, value in enumerate(schema.get("anyOf") if isinstance(schema.get("anyOf"), list) else []):
        found += gemini_schema_violations(value, "%s.any_of[%d]" % (where, index))
    return found


def gemini_refusal(body):
    """The Gemini API's 400 body for BODY's function declarations (shape: decolua/9router #1036), or None."""
    violations = []
    for t, tool in enumerate(body.get("tools") or []):
        for d, declaration in enumerate(tool.get("functionDeclarations") or []):
            where = "tools[%d].function_declarations[%d]" % (t, d)
            if not GEMINI_NAME.match(declaration.get("name") or ""):
                violations.append((where + ".name",
                                   "* GenerateContentRequest.%s.name: %s" % (where, GEMINI_NAME_ERROR)))
            if "parameters" in declaration:
                violations += gemini_schema_violations(declaration["parameters"], where + ".parameters")
    if not violations:
        return None
    return 400, {"error": {"code": 400, "message": "\n".join(text for _, text in violations),
                           "status": "INVALID_ARGUMENT",
                           "details": [{"@type": "type.googleapis.com/google.rpc.BadRequest",
                                        "fieldViolations": [{"field": field, "description": text}
                                                            for field, text in violations]}]}}


# OpenAI function tools: names "a-z, A-Z, 0-9, or contain underscores and dashes, with a maximum length of
# 64" (platform.openai.com/docs/api-reference/responses/create); messages as users quote them
# (brekkylab/ailoy #109, Vortiago/mcp-azure-devops #30).  Root keywords: "schema must have type 'object'
# and not have 'oneOf'/'anyOf'/'allOf'/'enum'/'not' at the top level" (nspady/google-calendar-mcp #39,
# langchain-ai/langchainjs #9804).
OPENAI_NAME = re.compile(r"[a-zA-Z0-9_-]+\Z")
OPENAI_ROOT_REFUSED = ("oneOf", "anyOf", "allOf", "enum", "not")


def openai_error(message, param, code):
    return 400, {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}


def responses_function_refusal(tool, where):
    name = tool.get("name") or ""
    if not OPENAI_NAME.match(name):
        return openai_error("Invalid '%s.name': string does not match pattern. Expected a string that matches "
                            "the pattern '^[a-zA-Z0-9_-]+$'." % where, where + ".name", "invalid_value")
    if len(name) > 64:
        return openai_error("Invalid '%s.name': string too long. Expected a string with maximum length 64, but "
                            "got a string with length %d instead." % (where, len(name)), where + ".name",
                            "string_above_max_length")
    schema = tool.get("parameters")
    if isinstance(schema, dict) and (schema.get("type") != "object"
                                     or any(key in schema for key in OPENAI_ROOT_REFUSED)):
        return openai_error("Invalid schema for function '%s': schema must have type 'object' and not have "
                            "'oneOf'/'anyOf'/'allOf'/'enum'/'not' at the top level." % name,
                            where + ".parameters", "invalid_function_parameters")
    return None


def responses_refusal(body):
    """OpenAI's 400 for the first function tool it refuses (also those inside a ``namespace``), or None."""
    for t, tool in enumerate(body.get("tools") or []):
        inner = tool.get("tools") if tool.get("type") == "namespace" else None
        functions = [("tools[%d].tools[%d]" % (t, i), f) for i, f in enumerate(inner or [])] if inner is not None \
            else [("tools[%d]" % t, tool)] if tool.get("type") == "function" else []
        for where, function in functions:
            refused = responses_function_refusal(function, where)
            if refused:
                return refused
    return None


def refusal(path, body):
    """(status, error body) when the real API would refuse BODY sent to PATH, else None."""
    if path.endswith("/responses"):
        return responses_refusal(body)
    if path.endswith((":streamGenerateContent", ":generateContent")):
        return gemini_refusal(body)
    return None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.server.script.requests.append(("GET", self.path, None))
        self.server.script.times.append(time.monotonic())
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
            script.times.append(time.monotonic())
            turn = len(script.requests)
        path = self.path.split("?")[0]
        refused = refusal(path, body)
        if refused:
            with script.lock:
                script.refusals.append((path, refused))
            send_json(self, refused[1], refused[0])
        elif path.endswith("/chat/completions"):
            chat_answer(self, script, body, turn)
        elif path.endswith("/responses"):
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
