#!/usr/bin/env python3
"""ocx-proxy: one-file MCP relay that keeps oversized tool results from being lost.

Copy this file anywhere Python 3.8+ runs; it imports nothing outside the standard
library.  An MCP client (Cursor, Claude Code, Codex, CodeBuddy...) starts it over
stdio, and it relays JSON-RPC to the real server::

    python ocx_proxy.py stdio -- npx -y @modelcontextprotocol/server-everything
    python ocx_proxy.py demo            # the whole chain against a built-in server
    python ocx_proxy.py demo-server     # that built-in sample server, on stdio

When a response is larger than ``--max-response-chars`` (default 10000
characters of compact JSON), the full line is saved byte-exact under
``--output-dir`` (``<stem>.json``), its readable text goes to ``<stem>.txt``
and decoded images/blobs to ``<stem>.<n>.<ext>``; the client receives a short,
protocol-valid preview naming those files.  Run ``python ocx_proxy.py
COMMAND --help`` for every option and its default.

Layout of this file (each section only uses the ones above it):

    wire helpers      logging, redaction, errors, small utilities
    JSON-RPC framing  newline-delimited JSON lines, error objects
    spill             saving oversized responses and building previews
    event loop        selectors loop, readers/writers (select or threads)
    upstreams         the stdio child process
    relay             request tracking, timeouts, restarts, shutdown
    protobuf          Cursor McpTools encoder/decoder
    tool catalog      normalising tool lists, tool_choice filtering
    capture           capture-only MCP bridge
    check             catalog checker
    demo              embedded sample server and the demo driver
    CLI / main        argument parsing and the entry point
"""

import argparse
import base64
import collections
import datetime
import errno
import hashlib
import heapq
import itertools
import json
import mimetypes
import os
import re
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time

__version__ = "0.1.0"

IS_WINDOWS = os.name == "nt"

# ---------------------------------------------------------------------------
# Wire helpers: logging, redaction, errors
# ---------------------------------------------------------------------------

LOG_LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40, "off": 100}


class OcxError(Exception):
    """An error with a message meant for the user (printed as one line)."""


class UsageError(OcxError):
    """Bad command line or configuration: the CLI exits with status 2."""


class Logger:
    """One-line log records on stderr; stdout belongs to the MCP channel."""

    def __init__(self, level="info", stream=None):
        self.level = LOG_LEVELS[level]
        self.stream = stream
        self.lock = threading.Lock()

    def enabled(self, level):
        return LOG_LEVELS[level] >= self.level

    def log(self, level, message):
        if LOG_LEVELS[level] < self.level:
            return
        stream = self.stream or sys.stderr
        line = "ocx-proxy: %s%s\n" % ("" if level == "info" else level + ": ", message)
        with self.lock:
            try:
                stream.write(line)
                stream.flush()
            except (OSError, ValueError):
                pass  # stderr gone: nothing sensible left to do with a log line

    def debug(self, message):
        self.log("debug", message)

    def info(self, message):
        self.log("info", message)

    def warning(self, message):
        self.log("warning", message)

    def error(self, message):
        self.log("error", message)


log = Logger()

SECRET_KEY_RE = re.compile(r"authorization|cookie|token|secret|password|passwd|api[-_]?key", re.I)
SECRET_VALUE_RE = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]+")
REDACTED = "[redacted]"


def redact(obj):
    """Return a copy of ``obj`` with secret-looking values replaced.

    Keys that name credentials (Authorization, Cookie, *token*, *secret*,
    api-key...) lose their value; ``Bearer xyz`` inside any string is masked.
    """
    if isinstance(obj, dict):
        return {k: (REDACTED if SECRET_KEY_RE.search(str(k)) else redact(v)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [redact(v) for v in obj]
    if isinstance(obj, str):
        return SECRET_VALUE_RE.sub(lambda m: m.group(1) + " " + REDACTED, obj)
    return obj


ENV_REF_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_env_refs(value, environ=None):
    """Expand ``${VAR}`` references; an unset variable is a UsageError naming it."""
    environ = os.environ if environ is None else environ

    def repl(match):
        name = match.group(1)
        if name not in environ:
            raise UsageError("environment variable %s is not set (referenced as ${%s})" % (name, name))
        return environ[name]

    return ENV_REF_RE.sub(repl, value)


def default_cache_dir():
    """The per-OS user cache directory for spill files."""
    if IS_WINDOWS:
        base = os.environ.get("LOCALAPPDATA") or os.path.join(os.path.expanduser("~"), "AppData", "Local")
        return os.path.join(base, "ocx-proxy", "Cache")
    if sys.platform == "darwin":
        return os.path.join(os.path.expanduser("~"), "Library", "Caches", "ocx-proxy")
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "ocx-proxy")


def utc_now_iso():
    return datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# ---------------------------------------------------------------------------
# JSON-RPC framing: newline-delimited JSON, UTF-8, CRLF tolerated
# ---------------------------------------------------------------------------

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
UPSTREAM_ERROR = -32000
REQUEST_TIMEOUT = -32001


def dumps(obj):
    """Compact JSON as we write it: no spaces, real unicode characters."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def encode_message(obj):
    """One JSON-RPC message as a line of UTF-8 bytes, newline included."""
    return dumps(obj).encode("utf-8", "surrogatepass") + b"\n"


def error_response(msg_id, code, message, data=None):
    """A JSON-RPC error response object."""
    error = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": msg_id, "error": error}


def parse_message(line):
    """Parse one line (bytes) into a JSON value; raises ValueError when it is not JSON."""
    return json.loads(line.decode("utf-8"))


def message_kind(msg):
    """'request', 'notification', 'response' or None for anything else."""
    if not isinstance(msg, dict):
        return None
    if "method" in msg:
        return "request" if "id" in msg else "notification"
    if "id" in msg and ("result" in msg or "error" in msg):
        return "response"
    return None


class LineSplitter:
    """Turns a byte stream into lines without the trailing CR/LF.

    Scanning resumes where the last search stopped, so a multi-megabyte line
    arriving in 64 KiB chunks costs linear time.
    """

    def __init__(self):
        self.buffer = bytearray()
        self.scanned = 0

    def feed(self, data):
        """Add bytes; return the list of complete lines (bytes)."""
        buf = self.buffer
        buf += data
        lines = []
        start = 0
        pos = buf.find(b"\n", self.scanned)
        while pos >= 0:
            end = pos - 1 if pos > start and buf[pos - 1] == 13 else pos
            lines.append(bytes(buf[start:end]))
            start = pos + 1
            pos = buf.find(b"\n", start)
        if start:
            del buf[:start]
        self.scanned = len(buf)
        return lines

    def pending(self):
        """Bytes received after the last newline."""
        return bytes(self.buffer)


# ---------------------------------------------------------------------------
# Spill: saving oversized responses and building previews
# ---------------------------------------------------------------------------

# (relay core: spill section)


# ---------------------------------------------------------------------------
# Event loop: selectors, readers and writers (select or threads)
# ---------------------------------------------------------------------------

# (relay core: event loop section)


# ---------------------------------------------------------------------------
# Upstreams: the stdio child process
# ---------------------------------------------------------------------------

# (relay core: upstream section)


# ---------------------------------------------------------------------------
# Relay: request tracking, timeouts, restarts, shutdown
# ---------------------------------------------------------------------------

# (relay core: relay section)


# ---------------------------------------------------------------------------
# Protobuf: Cursor agent.v1 McpTools encoder and decoder
# ---------------------------------------------------------------------------

# (issue 4: protobuf section)


# ---------------------------------------------------------------------------
# Tool catalog: normalising tool lists, tool_choice filtering, Cursor names
# ---------------------------------------------------------------------------

# (issue 4: tool catalog section)


# ---------------------------------------------------------------------------
# Capture: capture-only MCP bridge (advertise a catalog, record calls)
# ---------------------------------------------------------------------------

# (issue 5: capture section)


# ---------------------------------------------------------------------------
# Check: what in a server's catalog breaks which client
# ---------------------------------------------------------------------------

# (issue 6: check section)


# ---------------------------------------------------------------------------
# Demo: embedded sample server and the demo driver
# ---------------------------------------------------------------------------

# (relay core: demo section)


# ---------------------------------------------------------------------------
# CLI / main
# ---------------------------------------------------------------------------


class CliParser(argparse.ArgumentParser):
    """argparse with one-line errors: ``ocx-proxy: error: ...`` and exit status 2."""

    def error(self, message):
        self.exit(2, "%s: error: %s (see --help)\n" % (self.prog, message))


def read_input_bytes(source):
    """Read a FILE argument, ``-`` meaning stdin; OcxError when unreadable."""
    try:
        if source in (None, "-"):
            return sys.stdin.buffer.read()
        with open(source, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise OcxError("cannot read %s: %s" % (source, exc.strerror or exc))


# (relay core: relay commands)

# (issue 4: encode-tools / decode commands)

# (issue 5: capture command)

# (issue 6: check command)


def build_parser():
    parser = CliParser(prog="ocx-proxy", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version="ocx-proxy " + __version__)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    # (relay core: register relay commands)
    # (issue 4: register encode-tools / decode)
    # (issue 5: register capture)
    # (issue 6: register check)
    return parser


def main(argv=None):
    """Entry point: returns the process exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args) or 0
    except UsageError as exc:
        sys.stderr.write("ocx-proxy: error: %s\n" % exc)
        return 2
    except OcxError as exc:
        sys.stderr.write("ocx-proxy: error: %s\n" % exc)
        return 1
    except KeyboardInterrupt:
        return 130


def main_exit():
    """Console-script entry point."""
    sys.exit(main())


if __name__ == "__main__":
    main_exit()
