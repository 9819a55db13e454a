"""A stdlib MCP stdio server for the clients' clocks: a slow start and a long tool call.

    python3 clock_server.py [--start-delay S] [--call-seconds S] [--progress S] [--log FILE] [--record FILE]

- ``--start-delay S``: reads ``initialize`` at once but answers it only S seconds after the process started
  (as a server that first compiles, downloads or connects);
- one tool, ``clock_report``, answers after ``--call-seconds`` S with ``report()``: a ~6,300-character text of
  numbered lines, each with a digest of its number, ending with ``END_MARK``, so every byte can be checked;
- ``--progress S``: while the call runs, every S seconds a ``notifications/progress`` for the call's
  progressToken (when it carried one), as a server reporting its progress does;
- ``--log FILE``: one JSON line per message received (``t``: seconds since start, ``method``, ``id``,
  ``progressToken`` when a request carried one) and per answer sent (``sent``);
- ``--record FILE``: the ``initialize`` params, one JSON line (as tools_server.py).

Requests are read while a call runs (ping, cancellation); answers are written under a lock.
"""
import hashlib
import json
import sys
import threading
import time

TOOL = "clock_report"
END_MARK = "END-OF-CLOCK-REPORT-5c1e"
LINES = 90
STARTED = time.monotonic()


def report():
    """The long call's result text: LINES numbered lines with a digest each, then END_MARK."""
    lines = ["clock report line %03d of %d: %s" % (n, LINES, hashlib.sha256(b"clock-%d" % n).hexdigest()[:40])
             for n in range(1, LINES + 1)]
    return "\n".join(lines + [END_MARK])


TOOLS = [{"name": TOOL, "description": "Returns the clock report (it takes a while to compute).",
          "inputSchema": {"type": "object", "properties": {}}}]


class Server:
    def __init__(self, argv):
        def option(name, default, kind=float):
            return kind(argv[argv.index(name) + 1]) if name in argv else default

        self.start_delay = option("--start-delay", 0.0)
        self.call_seconds = option("--call-seconds", 0.0)
        self.progress = option("--progress", 0.0)
        self.log_path = option("--log", None, str)
        self.record = option("--record", None, str)
        self.lock = threading.Lock()

    def log(self, entry):
        if self.log_path:
            entry["t"] = round(time.monotonic() - STARTED, 3)
            with self.lock, open(self.log_path, "a") as out:
                out.write(json.dumps(entry) + "\n")

    def send(self, message):
        with self.lock:
            sys.stdout.write(json.dumps(message) + "\n")
            sys.stdout.flush()

    def answer(self, ident, result=None, error=None):
        reply = {"jsonrpc": "2.0", "id": ident}
        if error is not None:
            reply["error"] = error
        else:
            reply["result"] = result
        self.log({"sent": "error" if error else "result", "id": ident})
        self.send(reply)

    def initialize(self, ident, params):
        if self.record:
            with open(self.record, "a") as out:
                out.write(json.dumps(params) + "\n")
        time.sleep(max(0.0, self.start_delay - (time.monotonic() - STARTED)))
        self.answer(ident, {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                            "capabilities": {"tools": {}}, "serverInfo": {"name": "ocx-clock-fixture", "version": "1"}})

    def call(self, ident, params):
        if params.get("name") != TOOL:
            self.answer(ident, error={"code": -32602, "message": "unknown tool"})
            return
        token = ((params.get("_meta") or {}).get("progressToken"))
        begun = time.monotonic()
        beats = 0
        while True:
            left = self.call_seconds - (time.monotonic() - begun)
            if left <= 0:
                break
            if self.progress and token is not None:
                time.sleep(min(left, self.progress))
                if time.monotonic() - begun < self.call_seconds:
                    beats += 1
                    self.log({"sent": "progress", "id": ident, "progress": beats})
                    self.send({"jsonrpc": "2.0", "method": "notifications/progress",
                               "params": {"progressToken": token, "progress": beats}})
            else:
                time.sleep(left)
        self.answer(ident, {"content": [{"type": "text", "text": report()}]})

    def serve(self):
        for line in sys.stdin:
            if not line.strip():
                continue
            message = json.loads(line)
            method, ident = message.get("method"), message.get("id")
            params = message.get("params") or {}
            entry = {"method": method, "id": ident}
            if isinstance(params.get("_meta"), dict) and "progressToken" in params["_meta"]:
                entry["progressToken"] = params["_meta"]["progressToken"]
            self.log(entry)
            if ident is None:
                continue
            if method == "initialize":
                self.initialize(ident, params)   # nothing else comes before its answer
            elif method == "tools/list":
                self.answer(ident, {"tools": TOOLS})
            elif method == "tools/call":
                threading.Thread(target=self.call, args=(ident, params), daemon=True).start()
            elif method == "ping":
                self.answer(ident, {})
            else:
                self.answer(ident, error={"code": -32601, "message": "method not found"})


if __name__ == "__main__":
    Server(sys.argv).serve()
