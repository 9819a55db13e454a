"""A minimal Streamable HTTP MCP server for the benchmarks (standard library only).

POST /mcp: a request is answered with ``application/json`` (one message), or
with ``--sse`` as the official SDK servers answer by default: a chunked
``text/event-stream`` holding one ``message`` event; a notification or
response gets 202.  GET answers 405 (no server stream), DELETE 200.
``initialize`` hands out an ``Mcp-Session-Id``.  Run it as a script (prints
``PORT <n>`` then serves) or use ``start()`` in-process.
"""
import json
import socket
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SMALL = {"content": [{"type": "text", "text": "ok"}]}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    sse = False  # answer requests with an event stream

    def setup(self):
        BaseHTTPRequestHandler.setup(self)
        # Headers and body are separate writes: without this, Nagle plus the
        # client's delayed ACK costs 40 ms per keep-alive exchange (as real
        # servers such as uvicorn do, we turn Nagle off).
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, *args):
        pass

    def _reply(self, status, body=b"", ctype="application/json", extra=()):
        self.send_response(status)
        if body:
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for name, value in extra:
            self.send_header(name, value)
        self.end_headers()
        if body:
            self.wfile.write(body)

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        msg = json.loads(self.rfile.read(length))
        if not isinstance(msg, dict) or "method" not in msg or "id" not in msg:
            self._reply(202)
            return
        method = msg["method"]
        params = msg.get("params") or {}
        extra = ()
        if method == "initialize":
            result = {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                      "capabilities": {"tools": {}}, "serverInfo": {"name": "bench-http", "version": "1"}}
            extra = (("Mcp-Session-Id", uuid.uuid4().hex),)
        elif method == "tools/list":
            result = {"tools": [{"name": "small", "inputSchema": {"type": "object"}}]}
        elif method in ("tools/call", "ping"):
            result = SMALL if method == "tools/call" else {}
        else:
            body = json.dumps({"jsonrpc": "2.0", "id": msg["id"],
                               "error": {"code": -32601, "message": "no"}}).encode()
            self._reply(200, body)
            return
        body = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result},
                          separators=(",", ":")).encode()
        if self.sse:
            self._stream(b"event: message\r\ndata: " + body + b"\r\n\r\n", extra)
        else:
            self._reply(200, body, extra=extra)

    def _stream(self, event, extra):
        """One SSE event in one chunk, then the end of the stream (as uvicorn and sse-starlette send it)."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in extra:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
        self.wfile.write(b"0\r\n\r\n")

    def do_GET(self):
        self._reply(405, extra=(("Allow", "POST, DELETE"),))

    def do_DELETE(self):
        self._reply(200)


def start(host="127.0.0.1", port=0):
    """Serve in a daemon thread; returns the server (``server.server_address[1]`` is the port)."""
    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


if __name__ == "__main__":
    Handler.sse = "--sse" in sys.argv[1:]
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    sys.stdout.write("PORT %d\n" % srv.server_address[1])
    sys.stdout.flush()
    srv.serve_forever()
