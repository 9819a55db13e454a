"""A stdlib MCP stdio server with the four results of the real-client tier.

Tools (no arguments): ``big_text`` (60,000 ASCII characters), ``huge_text``
(120,000), ``cjk_text`` (8,400 CJK characters, about 25 KB of UTF-8), ``structured`` (a ~16 kB
structured result with its JSON text) and ``image`` (a ~50 KB base64 PNG).
Every text ends with ``END_MARK`` so a reader can tell whether it got the tail.

    python3 tools_server.py [--record FILE] [--ignore-eof PIDFILE] [--declare CHARS] [--texts N,N...] [--env FILE]

With ``--record`` the ``initialize`` params (clientInfo, protocolVersion) are
appended to FILE as one JSON line, which is how the tests learn each CLI's name.
``--texts`` adds a tool ``text_N`` per N: a text of exactly N characters.
``--env`` writes the environment it got and its parent's command line to FILE (JSON).
With ``--ignore-eof`` it writes "PID PARENT-PID" to PIDFILE and keeps running for
a minute after stdin ends, as a server that ignores EOF does (only a signal stops it).
With ``--declare CHARS`` three more tools are listed, for Claude Code's per-tool result
size (``_meta["anthropic/maxResultSizeChars"]``): ``declared_text`` (100,000 ASCII
characters) and ``declared_cjk`` (100,000 CJK characters, about 300 KB) declare CHARS;
``plain_text`` (100,000 ASCII characters, the same as declared_text) declares nothing.
"""
import base64
import json
import random
import struct
import os
import sys
import time
import zlib

END_MARK = "END-OF-RESULT-7f3a"


def big_text(size=60000):
    lines = ["line %05d: the quick brown fox jumps over the lazy dog %s" % (i, "x" * 10) for i in range(size // 30)]
    text = "\n".join(lines)
    return text[:size - len(END_MARK) - 1] + "\n" + END_MARK


def cjk_text():
    body = "".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(8400 - len(END_MARK)))
    return body + END_MARK


def ascii_text(chars):
    """``chars`` characters of numbered ASCII lines, ending with END_MARK."""
    lines = ["line %06d: the quick brown fox jumps over the lazy dog" % i for i in range(chars // 40 + 1)]
    return "\n".join(lines)[:chars - len(END_MARK) - 1] + "\n" + END_MARK


def cjk_chars(chars):
    return "".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(chars - len(END_MARK))) + END_MARK


SIZED = {"declared_text": lambda: ascii_text(100000), "declared_cjk": lambda: cjk_chars(100000),
         "plain_text": lambda: ascii_text(100000)}


def structured_value():
    rows = [{"id": i, "name": "item-%03d" % i, "price_cents": i * 125, "tags": ["alpha", "beta"]}
            for i in range(215)]
    return {"rows": rows, "end": END_MARK}


def png_base64():
    """A 128x96 RGB PNG of seeded noise: incompressible, so ~37 KB raw and ~50 KB as base64."""
    width, height = 128, 96
    rng = random.Random(13)
    raw = b"".join(b"\x00" + bytes(rng.getrandbits(8) for _ in range(width * 3)) for _ in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))
    return base64.b64encode(png).decode("ascii")


def result(tool):
    if tool == "big_text":
        return {"content": [{"type": "text", "text": big_text()}]}
    if tool == "huge_text":
        return {"content": [{"type": "text", "text": big_text(120000)}]}
    if isinstance(tool, str) and tool.startswith("text_") and tool[5:].isdigit():
        return {"content": [{"type": "text", "text": big_text(int(tool[5:]))}]}
    if tool == "cjk_text":
        return {"content": [{"type": "text", "text": cjk_text()}]}
    if tool == "structured":
        value = structured_value()
        return {"content": [{"type": "text", "text": json.dumps(value)}], "structuredContent": value}
    if tool == "image":
        return {"content": [{"type": "text", "text": "a 128x96 noise picture; " + END_MARK},
                            {"type": "image", "data": png_base64(), "mimeType": "image/png"}]}
    if tool in SIZED:
        return {"content": [{"type": "text", "text": SIZED[tool]()}]}
    return None


TOOLS = [{"name": name, "description": "Returns the %s test result." % name,
          "inputSchema": {"type": "object", "properties": {}}}
         for name in ("big_text", "huge_text", "cjk_text", "structured", "image")]


def option(name):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else None


def write_environment(path):
    info = {"env": dict(os.environ), "parent": None}
    try:
        with open("/proc/%d/cmdline" % os.getppid(), "rb") as cmdline:
            info["parent"] = [part.decode("utf-8", "replace") for part in cmdline.read().split(b"\0") if part]
    except OSError:
        pass
    with open(path, "w") as out:
        json.dump(info, out)


def sized_tools(chars):
    """The tools of --declare: the two declared_* declare ``chars`` as their result size, plain_text nothing."""
    return [dict({"name": name, "description": "Returns the %s test result." % name,
                  "inputSchema": {"type": "object", "properties": {}}},
                 **({"_meta": {"anthropic/maxResultSizeChars": chars}} if name != "plain_text" else {}))
            for name in SIZED]


def main():
    for size in (option("--texts") or "").split(","):
        if size:
            TOOLS.append({"name": "text_" + size, "description": "A text of %s characters." % size,
                          "inputSchema": {"type": "object", "properties": {}}})
    if option("--env"):
        write_environment(option("--env"))
    record = option("--record")
    if option("--declare"):
        TOOLS.extend(sized_tools(int(option("--declare"))))
    stubborn = sys.argv[sys.argv.index("--ignore-eof") + 1] if "--ignore-eof" in sys.argv else None
    if stubborn:
        with open(stubborn, "w") as out:
            out.write("%d %d\n" % (os.getpid(), os.getppid()))
    serve(record)
    if stubborn:
        time.sleep(60)


def serve(record):
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method, ident = message.get("method"), message.get("id")
        if ident is None:
            continue
        params = message.get("params") or {}
        if method == "initialize":
            if record:
                with open(record, "a") as out:
                    out.write(json.dumps(params) + "\n")
            answer = {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                      "capabilities": {"tools": {}}, "serverInfo": {"name": "ocx-clients-fixture", "version": "1"}}
        elif method == "tools/list":
            answer = {"tools": TOOLS}
        elif method == "tools/call":
            answer = result(params.get("name"))
            if answer is None:
                reply = {"jsonrpc": "2.0", "id": ident, "error": {"code": -32602, "message": "unknown tool"}}
                sys.stdout.write(json.dumps(reply) + "\n")
                sys.stdout.flush()
                continue
        elif method == "ping":
            answer = {}
        else:
            reply = {"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "method not found"}}
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
            continue
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": ident, "result": answer}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
