"""A minimal MCP server on stdio for the benchmarks (standard library only).

It answers as fast as plain Python can so that the figures measure the relay:
``initialize``, ``ping``, ``tools/list`` and ``tools/call`` with the tools
``small`` (a tiny text result) and ``big`` (a text result of about
``arguments.bytes`` bytes, 5 MB by default, lines of text or with ``arguments.json``
a JSON text; built once and cached).  ``bench_server.py --tools FILE``: ``tools/list`` answers
with the tools listed in the JSON file FILE (one page) instead.  ``--start-delay SECONDS`` (first):
it reads nothing for that long, as a server started with ``npx -y``/``uvx`` that takes time to start.
"""
import json
import sys
import time

BIG_CACHE = {}


def big_result(size, as_json=False):
    """The JSON text of a CallToolResult whose line is about ``size`` bytes; its text is lines, or a JSON
    object of rows (``as_json``)."""
    cached = BIG_CACHE.get((size, as_json))
    if cached is None:
        row = "%08d the quick brown fox jumps over the lazy dog 0123456789 abcdef\n"
        if as_json:
            row = '{"n": %d, "text": "the quick brown fox jumps over the lazy dog", "price": 1.50},'
        lines = []
        total = 0
        i = 0
        while total < size - 100:
            text = row % i
            lines.append(text)
            total += len(text) + 1  # "\n" is escaped as two characters
            i += 1
        text = '{"rows": [%s], "total": %d}' % ("".join(lines)[:-1], i) if as_json else "".join(lines)
        result = {"content": [{"type": "text", "text": text}], "isError": False}
        cached = BIG_CACHE[(size, as_json)] = json.dumps(result, separators=(",", ":")).encode("utf-8")
    return cached


def main():
    stdin = sys.stdin.buffer
    out = sys.stdout.buffer
    small = json.dumps({"content": [{"type": "text", "text": "ok"}]}, separators=(",", ":")).encode()
    tools = [{"name": "small", "inputSchema": {"type": "object"}}, {"name": "big", "inputSchema": {"type": "object"}}]
    args = sys.argv[1:]
    if args[:1] == ["--start-delay"]:
        time.sleep(float(args[1]))
        args = args[2:]
    if args[:1] == ["--tools"]:
        with open(args[1]) as handle:
            tools = json.load(handle)
    listed = json.dumps({"tools": tools}, separators=(",", ":")).encode()
    for line in stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        if "id" not in msg or "method" not in msg:
            continue
        method = msg["method"]
        params = msg.get("params") or {}
        if method == "initialize":
            result = json.dumps({"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                                 "capabilities": {"tools": {}},
                                 "serverInfo": {"name": "bench", "version": "1"}}).encode()
        elif method == "ping":
            result = b"{}"
        elif method == "tools/list":
            result = listed
        elif method == "tools/call" and params.get("name") == "big":
            arguments = params.get("arguments") or {}
            result = big_result(int(arguments.get("bytes", 5000000)), bool(arguments.get("json")))
        elif method == "tools/call":
            result = small
        else:
            out.write(b'{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no"}}\n'
                      % json.dumps(msg["id"]).encode())
            out.flush()
            continue
        out.write(b'{"jsonrpc":"2.0","id":' + json.dumps(msg["id"]).encode() + b',"result":' + result + b"}\n")
        out.flush()


if __name__ == "__main__":
    main()
