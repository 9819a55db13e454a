"""A stdlib MCP stdio server whose catalog breaks Gemini CLI and Codex (catalog fitting).

    python3 fit_server.py --calls FILE [--only CASE] [--record FILE]

Each case is one tool that a client or its model API rejects as the server wrote it:

- ``ref``: ``$ref``/``$defs`` in the input schema (Gemini API ``parameters``);
- ``type_array``: a property typed ``["string", "null"]`` (Gemini API ``parameters``);
- ``root_anyof``: ``anyOf`` at the schema root (OpenAI function tools, Anthropic API);
- ``long_name``: a 70-character name (Gemini API: 64 at most; OpenAI: 64);
- ``dotted_name``: a name with dots (OpenAI's ``^[a-zA-Z0-9_-]{1,64}$``; Cursor).

Plus ``ping``, a clean tool that every client keeps.  With ``--only CASE`` the
catalog is that case's tool and ``ping``; without it, every tool.  Every
description holds ``MARK % case`` so the scripted model finds a tool by its
description whatever name the client or the relay gave it.  Every ``tools/call``
is appended to ``--calls FILE`` as one JSON line ``{"name": ..., "arguments": ...}``
(exactly what reached the server); with ``--record`` the ``initialize`` params too.
"""
import json
import sys

MARK = "[fx-case:%s]"
LONG_NAME = "search_customer_relationship_records_by_region_and_fiscal_quarter_xxxx"
assert len(LONG_NAME) == 70

ITEM = {"type": "object", "properties": {"sku": {"type": "string"}, "count": {"type": "integer"}},
        "required": ["sku"]}

CASES = {
    "ref": ("lookup_item", {"type": "object", "properties": {"item": {"$ref": "#/$defs/Item"}},
                            "required": ["item"], "$defs": {"Item": ITEM}},
            {"item": {"sku": "A-1", "count": 2}}),
    "type_array": ("set_note", {"type": "object", "properties": {"note": {"type": ["string", "null"]}},
                                "required": ["note"]},
                   {"note": "hello"}),
    "root_anyof": ("find_user", {"type": "object",
                                 "properties": {"email": {"type": "string"}, "user_id": {"type": "integer"}},
                                 "anyOf": [{"required": ["email"]}, {"required": ["user_id"]}]},
                   {"email": "a@example.com"}),
    "long_name": (LONG_NAME, {"type": "object", "properties": {"region": {"type": "string"}}},
                  {"region": "emea"}),
    "dotted_name": ("files.read.v1", {"type": "object", "properties": {"path": {"type": "string"}},
                                      "required": ["path"]},
                    {"path": "notes.txt"}),
    "ping": ("ping", {"type": "object", "properties": {}}, {}),
}
BROKEN = [case for case in CASES if case != "ping"]


def tool(case):
    name, schema, _ = CASES[case]
    return {"name": name, "description": (MARK % case) + " Test tool of case " + case + ".", "inputSchema": schema}


def catalog(only):
    return [tool(case) for case in ([only, "ping"] if only else list(CASES))]


def option(name):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else None


def main():
    record, calls, only = option("--record"), option("--calls"), option("--only")
    tools = catalog(only)
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method, ident = message.get("method"), message.get("id")
        if ident is None:
            continue
        params = message.get("params") or {}
        reply = {"jsonrpc": "2.0", "id": ident}
        if method == "initialize":
            if record:
                with open(record, "a") as out:
                    out.write(json.dumps(params) + "\n")
            reply["result"] = {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                               "capabilities": {"tools": {}}, "serverInfo": {"name": "ocx-fit-fixture", "version": "1"}}
        elif method == "tools/list":
            reply["result"] = {"tools": tools}
        elif method == "tools/call":
            if calls:
                with open(calls, "a") as out:
                    out.write(json.dumps({"name": params.get("name"), "arguments": params.get("arguments")}) + "\n")
            if any(t["name"] == params.get("name") for t in tools):
                reply["result"] = {"content": [{"type": "text", "text": "ok: " + json.dumps(params.get("arguments"))}]}
            else:
                reply["error"] = {"code": -32602, "message": "unknown tool: %s" % params.get("name")}
        elif method == "ping":
            reply["result"] = {}
        else:
            reply["error"] = {"code": -32601, "message": "method not found"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
