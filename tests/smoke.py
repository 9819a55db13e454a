"""Standard-library-only smoke test, run by `make compat` on every Python 3.8-3.13 found.

    python tests/smoke.py

Starts ``ocx_proxy.py stdio -- ocx_proxy.py demo-server`` with the running
interpreter, drives it as an MCP client (initialize, tools/list, a small call,
a call whose result is spilled to disk) and, when ``ocx_proxy`` provides
``encode_mcp_tools``/``decode_mcp_tools``, round-trips a tool catalog through
them.  Prints one line per check and ``N passed, N failed``; exits 1 on failure.
"""
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROXY = os.path.join(ROOT, "ocx_proxy.py")
sys.path.insert(0, ROOT)

MAX_CHARS = 10000


class Client:
    def __init__(self, argv):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines = queue.Queue()
        self.stderr = []
        threading.Thread(target=self._pump, args=(self.proc.stdout, self.lines.put), daemon=True).start()
        threading.Thread(target=self._pump, args=(self.proc.stderr, self.stderr.append), daemon=True).start()
        self.next_id = 0

    @staticmethod
    def _pump(pipe, sink):
        for line in pipe:
            sink(line)
        sink(None)

    def send(self, msg):
        self.proc.stdin.write(json.dumps(msg).encode("utf-8") + b"\n")
        self.proc.stdin.flush()

    def request(self, method, params=None, timeout=30):
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        while True:
            line = self.lines.get(timeout=timeout)
            if line is None:
                raise AssertionError("relay closed stdout; stderr:\n" + self.stderr_text())
            reply = json.loads(line.decode("utf-8"))
            if reply.get("id") == self.next_id and "method" not in reply:
                return reply, line

    def stderr_text(self):
        return b"".join(part for part in self.stderr if part).decode("utf-8", "replace")

    def close(self):
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("relay did not exit after stdin closed")


def check_relay(spill_dir):
    client = Client([sys.executable, PROXY, "stdio", "--output-dir", spill_dir, "--max-response-chars",
                     str(MAX_CHARS), "--", sys.executable, PROXY, "demo-server"])
    try:
        reply, _ = client.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                                 "clientInfo": {"name": "smoke", "version": "1"}})
        assert reply["result"]["protocolVersion"] == "2025-06-18", reply
        client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        yield "initialize through the relay"

        reply, _ = client.request("tools/list")
        names = [tool["name"] for tool in reply["result"]["tools"]]
        assert "echo" in names and "big_text" in names, names
        assert not any("outputSchema" in tool for tool in reply["result"]["tools"]), "outputSchema not stripped"
        yield "tools/list (outputSchema stripped)"

        reply, _ = client.request("tools/call", {"name": "echo", "arguments": {"text": "héllo 👋"}})
        assert reply["result"]["content"][0]["text"] == "héllo 👋", reply
        yield "small tools/call passed through"

        reply, line = client.request("tools/call", {"name": "big_text", "arguments": {"lines": 3000}})
        result = reply["result"]
        meta = result["_meta"]["ocx-proxy/spill"]
        compact = json.dumps(reply, separators=(",", ":"), ensure_ascii=False)
        assert len(compact) <= MAX_CHARS, len(compact)
        paths = [value for key, value in meta.items() if key in ("json", "txt", "json_path", "txt_path")
                 and isinstance(value, str)]
        paths = paths or [value for value in meta.values() if isinstance(value, str) and os.path.isabs(value)]
        assert paths and all(os.path.isfile(path) for path in paths), meta
        text_path = [path for path in paths if path.endswith(".txt")][0]
        with open(text_path, encoding="utf-8") as handle:
            saved = handle.read()
        assert saved.count("\n") >= 2999, "spilled text is incomplete"
        assert text_path in result["content"][0]["text"], "preview does not name the saved file"
        yield "large tools/call spilled (%d-char preview, full text on disk)" % len(compact)
    finally:
        code = client.close()
    assert code == 0, "relay exit status %s; stderr:\n%s" % (code, client.stderr_text())
    yield "relay exits 0 when the client closes stdin"


def check_protobuf():
    from ocx_proxy import decode_mcp_tools as decode, encode_mcp_tools as encode

    tools = [
        {"name": "read_file", "description": "Read a file ✓",
         "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
        {"name": "search", "description": "", "inputSchema": {"type": "object", "properties": {}}},
    ]
    data = encode(tools)
    assert isinstance(data, (bytes, bytearray)) and data, "encode_mcp_tools returned %r" % (data,)
    decoded = decode(bytes(data))
    assert [item["name"] for item in decoded] == ["read_file", "search"], decoded
    schema = decoded[0].get("input_schema")
    if isinstance(schema, str):
        schema = json.loads(schema)
    assert schema == tools[0]["inputSchema"], schema
    yield "McpTools encode/decode round-trip (%d bytes)" % len(data)


def main():
    print("smoke: Python %s (%s)" % (sys.version.split()[0], sys.executable))
    passed = failed = 0
    spill_dir = tempfile.mkdtemp(prefix="ocx-smoke-")
    try:
        for check in (lambda: check_relay(spill_dir), check_protobuf):
            try:
                for label in check() or ():
                    passed += 1
                    print("  ok    %s" % label)
            except Exception:  # report and go on with the next check
                failed += 1
                print("  FAIL  %s" % traceback.format_exc().rstrip().replace("\n", "\n        "))
    finally:
        shutil.rmtree(spill_dir, ignore_errors=True)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
