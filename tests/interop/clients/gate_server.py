"""A stdlib MCP stdio server with one tool whose schema a model's arguments may break (the gate, real CLIs).

    python3 gate_server.py --calls FILE [--record FILE]

``weather`` takes ``city`` (a string) and ``days`` (an integer from 1 to 14); its description holds ``MARK``,
by which the scripted model finds it whatever name the client gives it.  Every tools/call that reaches the server
is appended to ``--calls FILE`` as one JSON line (what the server got); a ``city`` that is no string is answered
with a tool error in the server's own words (``SERVER_WORDS``), as a server that validates would.
"""
import json
import sys

MARK = "[gate:weather]"
SERVER_WORDS = "weather: the city must be a name"
WEATHER = {"name": "weather", "description": MARK + " The forecast for a city.", "inputSchema": {
    "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1,
                                                                        "maximum": 14}},
    "required": ["city"]}}


def option(name):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else None


def answer(method, params):
    if method == "initialize":
        return {"protocolVersion": params.get("protocolVersion", "2025-06-18"), "capabilities": {"tools": {}},
                "serverInfo": {"name": "ocx-gate-fixture", "version": "1"}}
    if method == "tools/list":
        return {"tools": [WEATHER]}
    if method == "tools/call":
        with open(option("--calls"), "a") as out:
            out.write(json.dumps({"name": params.get("name"), "arguments": params.get("arguments")}) + "\n")
        city = (params.get("arguments") or {}).get("city")
        if not isinstance(city, str):
            return {"content": [{"type": "text", "text": SERVER_WORDS}], "isError": True}
        return {"content": [{"type": "text", "text": "sunny in %s" % city}]}
    return {} if method == "ping" else None


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        if message.get("id") is None:
            continue
        result = answer(message.get("method"), message.get("params") or {})
        reply = {"jsonrpc": "2.0", "id": message["id"]}
        if result is None:
            reply["error"] = {"code": -32601, "message": "method not found"}
        else:
            reply["result"] = result
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
