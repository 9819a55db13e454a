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
    upstreams         the transport contract; the stdio child process
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
import heapq
import itertools
import json
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
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


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

    Chunks without a newline are kept as they came and joined once when the
    line ends, so a multi-megabyte line arriving in 64 KiB chunks costs linear
    time and a single copy; a chunk holding exactly one line (the usual case)
    costs one slice.
    """

    def __init__(self):
        self.chunks = []  # bytes received after the last newline

    def feed(self, data):
        """Add bytes; return the list of complete lines (bytes)."""
        pos = data.find(b"\n")
        if pos < 0:
            if data:
                self.chunks.append(bytes(data))
            return []
        if self.chunks:
            self.chunks.append(data[:pos])
            line = b"".join(self.chunks)
            self.chunks = []
        else:
            line = bytes(data[:pos])
        lines = [line[:-1] if line.endswith(b"\r") else line]
        start = pos + 1
        pos = data.find(b"\n", start)
        while pos >= 0:
            end = pos - 1 if pos > start and data[pos - 1] == 13 else pos
            lines.append(bytes(data[start:end]))
            start = pos + 1
            pos = data.find(b"\n", start)
        if start < len(data):
            self.chunks.append(bytes(data[start:]))
        return lines

    def pending(self):
        """Bytes received after the last newline."""
        return b"".join(self.chunks)


# ---------------------------------------------------------------------------
# Spill: saving oversized responses and building previews
# ---------------------------------------------------------------------------

# Responses to these methods keep a session alive or describe it: rewriting them
# would break the client, so an oversized one is forwarded with a warning.
NEVER_SPILL = frozenset(["initialize", "ping", "completion/complete", "logging/setLevel"])
SPILL_META_KEY = "ocx-proxy/spill"
SPILL_NAME_RE = re.compile(r"^\.?\d{8}T\d{6}(?:\.\d+)?Z_[A-Za-z0-9._-]+$")
MIME_EXTENSIONS = {
    "image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp",
    "image/svg+xml": ".svg", "audio/wav": ".wav", "audio/x-wav": ".wav", "audio/mpeg": ".mp3",
    "audio/ogg": ".ogg", "application/pdf": ".pdf", "application/json": ".json", "text/plain": ".txt",
}
# Characters a preview must not start with: they belong to the character before
# (zero-width joiner, variation selectors; skin tones and combining marks are tested apart).
_JOINERS = frozenset("\u200d\ufe0e\ufe0f")


def never_spilled(method):
    return method in NEVER_SPILL or (method or "").endswith("/list")


def file_uri(path, windows=IS_WINDOWS):
    """``file://`` URI of an absolute path (``file:///C:/...`` on Windows)."""
    import pathlib

    pure = pathlib.PureWindowsPath(path) if windows else pathlib.PurePosixPath(path)
    return pure.as_uri()


def safe_name(text, limit=40):
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")[:limit] or "x"


def _is_continuation(text, i):
    """True when text[i] must stay with text[i-1] (combining mark, joiner, selector)."""
    import unicodedata

    ch = text[i]
    return (ch in _JOINERS or text[i - 1] == "\u200d" or "\U0001F3FB" <= ch <= "\U0001F3FF"
            or unicodedata.combining(ch) != 0)


def cut_point(text, i):
    """Move index ``i`` back so that no user-perceived character is split."""
    while 0 < i < len(text) and _is_continuation(text, i):
        i -= 1
    return i


def make_preview(text, budget):
    """Split ``text`` into (head, tail, omitted) that fit ``budget`` characters.

    About three quarters go to the head and one quarter to the tail; both ends
    are moved to a line break when one is near, and never inside a character.
    """
    if len(text) <= budget:
        return text, "", 0
    head_len = budget * 3 // 4
    newline = text.rfind("\n", head_len * 4 // 5, head_len)
    head_len = cut_point(text, newline + 1 if newline >= 0 else head_len)
    tail_start = len(text) - (budget - head_len)
    newline = text.find("\n", tail_start, tail_start + (budget - head_len) // 5 + 1)
    tail_start = newline + 1 if newline >= 0 else tail_start
    while 0 < tail_start < len(text) and _is_continuation(text, tail_start):
        tail_start += 1
    return text[:head_len], text[tail_start:], tail_start - head_len


class SpillFiles:
    """Paths written for one spilled message."""

    def __init__(self, json_path, txt_path, blob_paths):
        self.json_path = json_path
        self.txt_path = txt_path
        self.blob_paths = blob_paths

    def meta(self, original_chars, preview_chars):
        meta = {
            "json": self.json_path,
            "txt": self.txt_path,
            "json_uri": file_uri(self.json_path),
            "txt_uri": file_uri(self.txt_path),
            "original_chars": original_chars,
            "preview_chars": preview_chars,
        }
        if self.blob_paths:
            meta["files"] = list(self.blob_paths)
        return meta


class ReadableText:
    """Collects the readable text of a message and the binary blocks in it."""

    def __init__(self):
        self.parts = []
        self.blobs = []  # (base64 data, mimeType)

    def add_block(self, block):
        if not isinstance(block, dict):
            return
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            self.parts.append(block["text"])
        elif kind in ("image", "audio") and isinstance(block.get("data"), str):
            self.add_blob(block["data"], block.get("mimeType"), kind)
        elif kind == "resource" and isinstance(block.get("resource"), dict):
            self.add_resource(block["resource"])
        elif kind == "resource_link":
            self.parts.append("[resource link: %s]" % block.get("uri"))

    def add_resource(self, resource):
        if isinstance(resource.get("text"), str):
            self.parts.append(resource["text"])
        elif isinstance(resource.get("blob"), str):
            self.add_blob(resource["blob"], resource.get("mimeType"), "blob " + str(resource.get("uri")))

    def add_blob(self, data, mime, label):
        self.blobs.append((data, mime if isinstance(mime, str) else None))
        self.parts.append("[%s %s: saved as file %d]" % (label, mime or "", len(self.blobs)))

    def add_json(self, value):
        self.parts.append(json.dumps(value, indent=2, ensure_ascii=False))

    def text(self):
        return "\n\n".join(self.parts)


def readable_text(msg, method):
    """The text a person (or an agent with file tools) wants from a message."""
    out = ReadableText()
    if "error" in msg:
        error = msg.get("error")
        if isinstance(error, dict):
            out.parts.append(str(error.get("message", "")))
            if "data" in error:
                data = error["data"]
                out.parts.append(data) if isinstance(data, str) else out.add_json(data)
        else:
            out.add_json(error)
        return out
    if message_kind(msg) == "notification":
        data = (msg.get("params") or {}).get("data") if isinstance(msg.get("params"), dict) else None
        out.parts.append(data) if isinstance(data, str) else out.add_json(data)
        return out
    result = msg.get("result")
    if not isinstance(result, dict):
        out.add_json(result)
    elif method == "tools/call" and isinstance(result.get("content"), list):
        for block in result["content"]:
            out.add_block(block)
        if not out.parts and "structuredContent" in result:
            out.add_json(result["structuredContent"])
    elif method == "resources/read" and isinstance(result.get("contents"), list):
        for item in result["contents"]:
            if isinstance(item, dict):
                out.add_resource(item)
    elif method == "prompts/get" and isinstance(result.get("messages"), list):
        for message in result["messages"]:
            if isinstance(message, dict):
                out.add_block(message.get("content"))
    else:
        out.add_json(result)
    return out


class Spill:
    """Saves oversized messages to disk and builds the preview that replaces them.

    ``rewrite()`` is the contract: given an upstream line (bytes) already known
    to exceed ``max_chars``, it returns the message to send instead (as a
    compact JSON string no longer than ``max_chars``) plus the files written,
    or ``None`` when the message must be forwarded untouched (lifecycle and
    catalog responses, requests, disk errors).
    """

    def __init__(self, output_dir, max_chars=10000, preview_chars=4000, retention_days=7):
        self.output_dir = os.path.abspath(output_dir)
        self.max_chars = max_chars
        self.preview_chars = preview_chars
        self.retention_days = retention_days
        self.dir_ready = False

    # -- files -------------------------------------------------------------

    def prepare_dir(self):
        if self.dir_ready:
            return
        if not os.path.isdir(self.output_dir):
            os.makedirs(self.output_dir, 0o700, exist_ok=True)
            os.chmod(self.output_dir, 0o700)
        self.dir_ready = True

    def remove_expired(self, now=None):
        """Delete this tool's own spill files older than ``retention_days``."""
        if self.retention_days <= 0 or not os.path.isdir(self.output_dir):
            return 0
        cutoff = (now or time.time()) - self.retention_days * 86400
        removed = 0
        for name in os.listdir(self.output_dir):
            if not SPILL_NAME_RE.match(name):
                continue
            path = os.path.join(self.output_dir, name)
            try:
                if os.path.isfile(path) and os.path.getmtime(path) < cutoff:
                    os.unlink(path)
                    removed += 1
            except OSError as exc:
                log.warning("could not remove old spill file %s: %s" % (path, exc))
        return removed

    def write_file(self, name, data):
        """Write ``data`` to ``name`` in the output directory: 0600, temp name then rename."""
        path = os.path.join(self.output_dir, name)
        temp = os.path.join(self.output_dir, ".%s.%d.tmp" % (name, os.getpid()))
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0), 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(temp, path)
        return path

    def stem(self, line, method, msg_id):
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
        import hashlib  # only when spilling: it loads OpenSSL (+4 MB resident, ~3.5 ms at start-up)

        digest = hashlib.sha256(line).hexdigest()[:10]
        return "%s_%s_id-%s_%s" % (stamp, safe_name(method or "message"), safe_name(str(msg_id), 24), digest)

    def save(self, line, msg, method, text):
        """Write ``<stem>.json`` (the exact line), ``<stem>.txt`` and decoded blobs."""
        self.prepare_dir()
        stem = self.stem(line, method, msg.get("id"))
        json_path = self.write_file(stem + ".json", line)
        blob_paths = []
        for n, (data, mime) in enumerate(text.blobs, 1):
            try:
                raw = base64.b64decode(data, validate=False)
            except (ValueError, TypeError):
                continue
            ext = MIME_EXTENSIONS.get(mime or "")
            if not ext:
                import mimetypes  # only for unusual blob types: it costs ~5 ms at start-up

                ext = mimetypes.guess_extension(mime or "") or ".bin"
            blob_paths.append(self.write_file("%s.%d%s" % (stem, n, ext), raw))
        full_text = text.text()
        for n, path in enumerate(blob_paths, 1):
            full_text = full_text.replace(": saved as file %d]" % n, ": saved as %s]" % path, 1)
        txt_path = self.write_file(stem + ".txt", full_text.encode("utf-8", "surrogatepass"))
        return SpillFiles(json_path, txt_path, blob_paths), full_text

    # -- rewriting ---------------------------------------------------------

    def rewrite(self, line, msg, method, request_params=None, protocol_version=None):
        """Replace an oversized message; see the class docstring for the contract."""
        kind = message_kind(msg)
        if kind == "request" or kind is None:
            return None
        if kind == "notification" and msg.get("method") != "notifications/message":
            return None
        if kind == "response" and "result" in msg and never_spilled(method):
            log.warning("%s response of %d bytes is over --max-response-chars but is never rewritten"
                        % (method, len(line)))
            return None
        text = readable_text(msg, method)
        try:
            files, full_text = self.save(line, msg, method, text)
        except OSError as exc:
            log.error("could not save oversized %s response (%s); forwarding it unchanged"
                      % (method or "message", exc))
            return None
        original_chars = len(line.decode("utf-8", "replace"))
        builder = PreviewBuilder(msg, method, request_params, protocol_version, files, original_chars)
        return builder.fit(full_text, self.max_chars, self.preview_chars), files


def version_at_least(version, wanted):
    return isinstance(version, str) and version >= wanted


class PreviewBuilder:
    """Builds the replacement message for one spilled message at a given preview size."""

    def __init__(self, msg, method, request_params, protocol_version, files, original_chars):
        self.msg = msg
        self.method = method
        self.request_params = request_params if isinstance(request_params, dict) else {}
        self.protocol_version = protocol_version
        self.files = files
        self.original_chars = original_chars

    def marker(self, omitted, total, detail=True):
        if not detail:
            return "\n[ocx-proxy: response saved to %s]\n" % self.files.txt_path
        if not omitted:
            return ("\n\n[ocx-proxy: the full response (%d characters of JSON) is saved. Text: %s ; raw "
                    "JSON-RPC response: %s]" % (self.original_chars, self.files.txt_path, self.files.json_path))
        return ("\n\n[ocx-proxy: %d of %d characters omitted here. Full text: %s ; raw JSON-RPC "
                "response: %s]\n\n" % (omitted, total, self.files.txt_path, self.files.json_path))

    def fit(self, text, max_chars, preview_chars):
        """Largest preview whose message fits ``max_chars``, degrading when even none fits.

        Levels: 0 keeps ``structuredContent`` (only tried when it is small), 1
        keeps the resource link and ``_meta``, 2 drops them, 3 also shortens
        the marker.  The last resort is an error naming the output directory.
        """
        result = self.msg.get("result")
        structured = isinstance(result, dict) and "structuredContent" in result
        levels = (0, 1, 2, 3) if structured and self.method == "tools/call" else (1, 2, 3)
        for level in levels:
            budget = min(preview_chars, len(text))
            floor = budget // 4 if level == 0 else 0
            for _ in range(40):
                head, tail, omitted = make_preview(text, budget)
                marker = self.marker(omitted, len(text), detail=level < 3)
                out = dumps(self.build(head + marker + tail, level, len(head) + len(tail)))
                over = len(out) - max_chars
                if over <= 0:
                    return out
                if budget <= floor:
                    break
                budget = max(floor, min(budget - over, budget - 1))
        note = "response too large; saved under %s" % os.path.dirname(self.files.txt_path)
        out = dumps(error_response(self.msg.get("id"), UPSTREAM_ERROR, note))
        if len(out) > max_chars:
            out = dumps(error_response(self.msg.get("id"), UPSTREAM_ERROR, "response too large; saved to disk"))
        return out

    def meta(self, preview_chars):
        return {SPILL_META_KEY: self.files.meta(self.original_chars, preview_chars)}

    def build(self, preview, level, preview_chars):
        """The replacement message at ``level`` (see ``fit``)."""
        msg = self.msg
        meta = self.meta(preview_chars) if level <= 1 else None
        if "error" in msg or message_kind(msg) == "notification":
            return self.build_error_or_log(preview, meta)
        result = msg.get("result") if isinstance(msg.get("result"), dict) else {}
        if self.method == "tools/call":
            new = self.build_tool_result(result, preview, level)
        elif self.method == "resources/read":
            uri = self.request_params.get("uri") or file_uri(self.files.txt_path)
            new = {"contents": [{"uri": uri, "mimeType": "text/plain", "text": preview}]}
        elif self.method == "prompts/get":
            new = {"messages": [{"role": "user", "content": {"type": "text", "text": preview}}]}
            if isinstance(result.get("description"), str) and level <= 1:
                new["description"] = result["description"]
        else:
            message = "response of %d characters exceeded --max-response-chars; saved to %s (text: %s)" % (
                self.original_chars, self.files.json_path, self.files.txt_path)
            return error_response(msg.get("id"), UPSTREAM_ERROR, message, meta)
        if meta is not None:
            new["_meta"] = meta
        return {"jsonrpc": "2.0", "id": msg.get("id"), "result": new}

    def build_tool_result(self, result, preview, level):
        content = [{"type": "text", "text": preview}]
        if level <= 1 and version_at_least(self.protocol_version, "2025-06-18"):
            content.append({
                "type": "resource_link", "uri": file_uri(self.files.txt_path),
                "name": os.path.basename(self.files.txt_path), "mimeType": "text/plain",
                "description": "Full text of the tool result saved by ocx-proxy",
            })
        new = {"content": content}
        if result.get("isError") is not None:
            new["isError"] = result["isError"]
        if level == 0 and "structuredContent" in result:
            new["structuredContent"] = result["structuredContent"]
        return new

    def build_error_or_log(self, preview, meta):
        msg = self.msg
        if "error" in msg:
            code = msg["error"].get("code") if isinstance(msg["error"], dict) else None
            error = {"code": code if isinstance(code, int) else UPSTREAM_ERROR, "message": preview}
            if meta is not None:
                error["data"] = meta
            return {"jsonrpc": "2.0", "id": msg.get("id"), "error": error}
        params = dict(msg.get("params") or {})
        params["data"] = preview
        params.pop("_meta", None)
        if meta is not None:
            params["_meta"] = meta
        return {"jsonrpc": "2.0", "method": msg["method"], "params": params}


# ---------------------------------------------------------------------------
# Event loop: selectors, readers and writers (select or threads)
# ---------------------------------------------------------------------------

READ_CHUNK = 1 << 16


class Timer:
    """Handle returned by ``Loop.call_later``; ``cancel()`` stops it from firing."""

    __slots__ = ("when", "callback", "args", "cancelled")

    def __init__(self, when, callback, args):
        self.when = when
        self.callback = callback
        self.args = args
        self.cancelled = False

    def cancel(self):
        self.cancelled = True


class Loop:
    """A small single-threaded event loop over ``selectors``.

    It dispatches fd readiness callbacks, timers, and callbacks posted from
    other threads with ``post()`` (which wakes the loop through a socketpair,
    so it works on Windows too).  Everything that touches relay state runs on
    the loop's thread.
    """

    def __init__(self):
        self.selector = selectors.DefaultSelector()
        self.wake_r, self.wake_w = socket.socketpair()
        self.wake_r.setblocking(False)
        self.wake_w.setblocking(False)
        self.posted = collections.deque()
        self.timers = []
        self.sequence = itertools.count()
        self.callbacks = {}  # fd -> {event: callback}
        self.running = False
        self.selector.register(self.wake_r, selectors.EVENT_READ)
        self.callbacks[self.wake_r.fileno()] = {selectors.EVENT_READ: self._drain_wake}

    # -- registration ------------------------------------------------------

    def _update(self, fd, event, callback):
        handlers = self.callbacks.get(fd, {})
        old_mask = sum(handlers)  # the keys are the event bits
        handlers = dict(handlers)
        if callback is None:
            handlers.pop(event, None)
        else:
            handlers[event] = callback
        new_mask = sum(handlers)
        if not old_mask and new_mask:
            self.selector.register(fd, new_mask)
        elif old_mask and not new_mask:
            self.selector.unregister(fd)
        elif old_mask != new_mask:
            self.selector.modify(fd, new_mask)
        if handlers:
            self.callbacks[fd] = handlers
        else:
            self.callbacks.pop(fd, None)

    def add_reader(self, fd, callback):
        """Raises OSError/ValueError when ``fd`` cannot be selected (files, Windows pipes)."""
        self._update(fd, selectors.EVENT_READ, callback)

    def remove_reader(self, fd):
        if fd in self.callbacks:
            self._update(fd, selectors.EVENT_READ, None)

    def add_writer(self, fd, callback):
        self._update(fd, selectors.EVENT_WRITE, callback)

    def remove_writer(self, fd):
        if fd in self.callbacks:
            self._update(fd, selectors.EVENT_WRITE, None)

    # -- timers and posted calls -------------------------------------------

    def call_later(self, delay, callback, *args):
        timer = Timer(time.monotonic() + delay, callback, args)
        heapq.heappush(self.timers, (timer.when, next(self.sequence), timer))
        return timer

    def post(self, callback, *args):
        """Run ``callback(*args)`` on the loop thread; safe from any thread or signal handler."""
        self.posted.append((callback, args))
        try:
            self.wake_w.send(b"\0")
        except OSError:
            pass  # buffer full: the loop is awake anyway

    def _drain_wake(self):
        try:
            while self.wake_r.recv(4096):
                pass
        except OSError:
            pass

    # -- running -----------------------------------------------------------

    def stop(self):
        self.running = False

    def run(self):
        self.running = True
        # Hot loop: everything it touches is bound to a local once (the
        # containers are only ever mutated in place, never replaced).
        select = self.selector.select
        callbacks = self.callbacks
        posted = self.posted
        timers = self.timers
        monotonic = time.monotonic
        heappop = heapq.heappop
        read_event, write_event = selectors.EVENT_READ, selectors.EVENT_WRITE
        while self.running:
            if posted:
                timeout = 0
            elif timers:
                timeout = timers[0][0] - monotonic()
                if timeout < 0:
                    timeout = 0
            else:
                timeout = None
            for key, mask in select(timeout):
                fd = key.fd
                handlers = callbacks.get(fd)
                if handlers is None:
                    continue
                if mask & read_event:
                    callback = handlers.get(read_event)
                    if callback is not None:
                        callback()
                        handlers = callbacks.get(fd)
                        if handlers is None:
                            continue
                if mask & write_event:
                    callback = handlers.get(write_event)
                    if callback is not None:
                        callback()
            while posted:
                callback, args = posted.popleft()
                callback(*args)
            if timers and timers[0][0] <= monotonic():
                now = monotonic()
                while timers and timers[0][0] <= now:
                    timer = heappop(timers)[2]
                    if not timer.cancelled:
                        timer.callback(*timer.args)

    def close(self):
        self.selector.close()
        self.wake_r.close()
        self.wake_w.close()


class PipeReader:
    """Feeds chunks read from ``fd`` to ``on_data(bytes)``; ``on_data(b"")`` means EOF.

    In select mode the loop calls us when the fd is readable.  In thread mode
    (Windows pipes, regular files, or forced for tests) a daemon thread does
    blocking reads and posts each chunk to the loop.
    """

    def __init__(self, loop, fd, on_data, use_threads=False):
        self.loop = loop
        self.fd = fd
        self.on_data = on_data
        self.closed = False
        self.threaded = use_threads
        if not use_threads:
            try:
                loop.add_reader(fd, self._readable)
            except (OSError, ValueError):
                self.threaded = True
        if self.threaded:
            threading.Thread(target=self._run, name="ocx-reader-%d" % fd, daemon=True).start()

    def _readable(self):
        try:
            data = os.read(self.fd, READ_CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self.stop()
        self.on_data(data)

    def _run(self):
        while True:
            try:
                data = os.read(self.fd, READ_CHUNK)
            except InterruptedError:
                continue
            except OSError:
                data = b""
            self.loop.post(self._deliver, data)
            if not data:
                return

    def _deliver(self, data):
        if self.closed:
            return
        if not data:
            self.closed = True
        self.on_data(data)

    def stop(self):
        """Stop delivering data (select mode also unregisters the fd)."""
        if not self.threaded:
            self.loop.remove_reader(self.fd)
        self.closed = True


class PipeWriter:
    """Writes bytes to ``fd`` without ever blocking the loop.

    Select mode: the fd is made non-blocking; a write goes out at once when
    the pipe has room and the rest waits in a buffer drained on writability.
    Thread mode: a daemon thread does blocking writes from a queue.
    ``on_error(exc)`` is called once if the reader went away (EPIPE).
    """

    def __init__(self, loop, fd, on_error=None, use_threads=False, close_fd=False):
        self.loop = loop
        self.fd = fd
        self.on_error = on_error
        self.close_fd = close_fd
        self.buffer = bytearray()
        self.failed = False
        self.closing = False
        self.threaded = use_threads or not self._can_select(fd)
        self.restore_blocking = None
        if self.threaded:
            self.queue = collections.deque()
            self.ready = threading.Condition()
            self.thread = threading.Thread(target=self._run, name="ocx-writer-%d" % fd, daemon=True)
            self.thread.start()
        else:
            self.restore_blocking = os.get_blocking(fd)
            os.set_blocking(fd, False)

    @staticmethod
    def _can_select(fd):
        if IS_WINDOWS:
            return False
        import stat

        try:
            mode = os.fstat(fd).st_mode
        except OSError:
            return False
        return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)

    def pending_bytes(self):
        if self.threaded:
            with self.ready:
                return sum(len(chunk) for chunk in self.queue)
        return len(self.buffer)

    def write(self, data):
        if self.failed or self.closing:
            return
        if self.threaded:
            with self.ready:
                self.queue.append(data)
                self.ready.notify()
            return
        if not self.buffer:
            try:
                written = os.write(self.fd, data)
            except (BlockingIOError, InterruptedError):
                written = 0
            except OSError as exc:
                self._fail(exc)
                return
            if written == len(data):
                return
            data = memoryview(data)[written:]
            self.loop.add_writer(self.fd, self._writable)
        self.buffer += data

    def _writable(self):
        try:
            written = os.write(self.fd, self.buffer)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._fail(exc)
            return
        del self.buffer[:written]
        if not self.buffer:
            self.loop.remove_writer(self.fd)
            if self.closing:
                self._close_now()

    def _fail(self, exc):
        self.failed = True
        self.buffer.clear()
        if not self.threaded:
            self.loop.remove_writer(self.fd)
        if self.on_error:
            self.on_error(exc)

    def _run(self):
        while True:
            with self.ready:
                while not self.queue:
                    self.ready.wait()
                data = self.queue.popleft()
            if data is None:
                break
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(self.fd, view):]
            except OSError as exc:
                self.failed = True
                with self.ready:
                    self.queue.clear()
                if self.on_error:
                    self.loop.post(self.on_error, exc)
                break
        if self.close_fd:
            self._close_fd()

    def close(self):
        """Close after everything queued has been written (only closes fds we own)."""
        if self.closing:
            return
        self.closing = True
        if self.threaded:
            with self.ready:
                self.queue.append(None)
                self.ready.notify()
        elif not self.buffer or self.failed:
            self._close_now()

    def _close_now(self):
        if self.restore_blocking is not None and not self.close_fd:
            try:
                os.set_blocking(self.fd, self.restore_blocking)
            except OSError:
                pass
        if self.close_fd:
            self._close_fd()

    def _close_fd(self):
        try:
            os.close(self.fd)
        except OSError:
            pass

    def flush_blocking(self, timeout):
        """Best effort at exit: wait up to ``timeout`` seconds for queued bytes to go out."""
        deadline = time.monotonic() + timeout
        if self.threaded:
            while self.pending_bytes() and time.monotonic() < deadline and not self.failed:
                time.sleep(0.005)
            return
        while self.buffer and not self.failed and time.monotonic() < deadline:
            import select

            select.select([], [self.fd], [], max(0.0, deadline - time.monotonic()))
            self._writable()


# ---------------------------------------------------------------------------
# Upstreams: the transport contract and the stdio child process
# ---------------------------------------------------------------------------

# The environment a stdio server gets by default: the same small, safe set the
# official SDKs pass (anything else must be given with --env or
# --pass-environment, so tokens in our environment do not leak to the child).
SAFE_ENV_POSIX = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")
SAFE_ENV_WINDOWS = ("APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PATHEXT",
                    "PROCESSOR_ARCHITECTURE", "SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "USERNAME",
                    "USERPROFILE")
STDERR_TAIL_LINES = 20


def child_environment(env_pairs=(), pass_environment=False, environ=None):
    """Build the child's environment: safe defaults (or everything) plus ``NAME=VALUE`` pairs.

    Values expand ``${VAR}`` from our environment; an unset one is a UsageError.
    """
    environ = os.environ if environ is None else environ
    if pass_environment:
        env = dict(environ)
    else:
        names = SAFE_ENV_WINDOWS if IS_WINDOWS else SAFE_ENV_POSIX
        env = {k: environ[k] for k in names if k in environ and not environ[k].startswith("()")}
    for pair in env_pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise UsageError("--env expects NAME=VALUE, got %r" % pair)
        env[name] = expand_env_refs(value, environ)
    return env


def resolve_command(command, env):
    """Find the program on the child's PATH (``npx`` -> ``npx.cmd`` on Windows)."""
    import shutil

    found = shutil.which(command[0], path=env.get("PATH"))
    return [found] + list(command[1:]) if found else list(command)


class Upstream:
    """The contract between the relay and a transport to the real server.

    The relay calls ``start()`` once, ``send(data)`` with one or more complete
    JSON-RPC lines (bytes ending in a newline) in the client's order, and
    ``close_input()`` when it wants the upstream to finish; ``kill_tree()`` and
    ``reap()`` at the very end.  The upstream calls, always on the loop thread
    (use ``loop.post`` from worker threads), ``on_line(bytes)`` for every
    message line from the server (no newline), and ``on_exit(description)``
    exactly once when it is gone for good; it then sets ``exited``.
    ``stderr_tail`` holds recent diagnostic lines quoted in error messages.
    """

    def __init__(self, loop, on_line, on_exit):
        self.loop = loop
        self.on_line = on_line
        self.on_exit = on_exit
        self.exited = False
        self.stderr_tail = collections.deque(maxlen=STDERR_TAIL_LINES)

    def start(self):
        raise NotImplementedError

    def send(self, data):
        raise NotImplementedError

    def close_input(self):
        raise NotImplementedError

    def kill_tree(self, sig=None):
        """Stop whatever the upstream started (a no-op for network upstreams)."""

    def reap(self):
        """Release resources after exit."""


class StdioUpstream(Upstream):
    """The MCP server as a child process speaking newline-delimited JSON on stdio.

    ``on_exit`` fires when its stdout closes or the process ends.  Its stderr
    is copied to ours, prefixed, and its last lines are kept in
    ``stderr_tail``.  The child runs in its own process group so that shutdown
    can reach everything it started.
    """

    def __init__(self, loop, command, env, cwd=None, use_threads=False, on_line=None, on_exit=None):
        Upstream.__init__(self, loop, on_line, on_exit)
        self.command = command
        self.env = env
        self.cwd = cwd
        self.use_threads = use_threads
        self.process = None
        self.stdin = None
        self.stdout_lines = LineSplitter()
        self.stderr_lines = LineSplitter()
        self.stdout_open = False

    def start(self):
        """Spawn the child; a failure to start is reported through ``on_exit``."""
        kwargs = {}
        if IS_WINDOWS:
            kwargs["creationflags"] = getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
        else:
            kwargs["start_new_session"] = True
        try:
            self.process = subprocess.Popen(
                resolve_command(self.command, self.env), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, env=self.env, cwd=self.cwd, bufsize=0, **kwargs)
        except (OSError, ValueError) as exc:
            self.exited = True
            self.loop.post(self.on_exit, "could not start %s: %s" % (self.command[0], exc))
            return
        self.stdout_open = True
        self.stdin = PipeWriter(self.loop, self.process.stdin.fileno(), on_error=self._stdin_error,
                                use_threads=self.use_threads, close_fd=True)
        self.stdout_reader = PipeReader(self.loop, self.process.stdout.fileno(), self._stdout_data,
                                        use_threads=self.use_threads)
        self.stderr_reader = PipeReader(self.loop, self.process.stderr.fileno(), self._stderr_data,
                                        use_threads=self.use_threads)
        self.poll_timer = self.loop.call_later(0.5, self._poll)

    @property
    def pid(self):
        return self.process.pid if self.process else None

    def send(self, data):
        """Queue bytes (one or more complete lines) for the child's stdin."""
        if self.stdin is not None and not self.exited:
            self.stdin.write(data)

    def close_input(self):
        """Close the child's stdin once queued bytes are written: the polite way to stop it."""
        if self.stdin is not None:
            self.stdin.close()

    def _stdin_error(self, exc):
        log.debug("upstream stdin closed: %s" % exc)

    def _stdout_data(self, data):
        if not data:
            self.stdout_open = False
            tail = self.stdout_lines.pending()
            if tail.strip():
                self.on_line(tail)
            self._wait_for_exit(time.monotonic() + 2.0)
            return
        for line in self.stdout_lines.feed(data):
            if self.exited:
                return
            self.on_line(line)

    def _stderr_data(self, data):
        lines = self.stderr_lines.feed(data) if data else [self.stderr_lines.pending()]
        for raw in lines:
            text = raw.decode("utf-8", "replace").rstrip()
            if text:
                self.stderr_tail.append(text)
                log.log("info", "[upstream] " + text)

    def _poll(self):
        """Catch a child that exited while something it started still holds stdout open."""
        if self.exited:
            return
        if self.process.poll() is not None:
            self.loop.call_later(1.0, self._report_exit)
        else:
            self.poll_timer = self.loop.call_later(0.5, self._poll)

    def _wait_for_exit(self, deadline):
        if self.exited:
            return
        if self.process.poll() is None and time.monotonic() < deadline:
            self.loop.call_later(0.01, self._wait_for_exit, deadline)
            return
        if self.process.poll() is None:
            log.warning("upstream closed its stdout but did not exit; stopping it")
            self.kill_tree(signal.SIGTERM if not IS_WINDOWS else None)
        self._report_exit()

    def _report_exit(self):
        if self.exited:
            return
        self.exited = True
        self.poll_timer.cancel()
        self.stdout_reader.stop()
        code = self.process.poll()
        if code is None:
            description = "upstream closed its stdout"
        elif code < 0:
            description = "upstream was killed by signal %d" % -code
        else:
            description = "upstream exited with code %d" % code
        self.loop.post(self._finish_exit, description)

    def _finish_exit(self, description):
        # stderr may still hold the lines that explain the exit: take what is there.
        self._drain_stderr()
        self.stderr_reader.stop()
        self.stdin.close()
        self.on_exit(description)

    def _drain_stderr(self):
        if self.stderr_reader.threaded:
            return
        import select

        fd = self.process.stderr.fileno()
        while select.select([fd], [], [], 0)[0]:
            try:
                data = os.read(fd, READ_CHUNK)
            except OSError:
                break
            if not data:
                break
            self._stderr_data(data)

    def alive(self):
        return self.process is not None and self.process.poll() is None

    def kill_tree(self, sig=None):
        """Signal the child's whole process group (SIGKILL by default)."""
        if self.process is None:
            return
        if IS_WINDOWS:
            try:
                self.process.kill()
            except OSError:
                pass
            return
        try:
            os.killpg(self.process.pid, signal.SIGKILL if sig is None else sig)
        except (ProcessLookupError, PermissionError):
            pass

    def reap(self):
        if self.process is not None:
            try:
                self.process.wait(timeout=0.5)
            except subprocess.TimeoutExpired:
                pass
            for pipe in (self.process.stdout, self.process.stderr):
                try:
                    pipe.close()
                except OSError:
                    pass


# ---------------------------------------------------------------------------
# Relay: request tracking, timeouts, restarts, shutdown
# ---------------------------------------------------------------------------

REPLAY_ID_PREFIX = "ocx-proxy-replay-"
ABANDONED_LIMIT = 4096


def id_key(msg_id):
    """Dictionary key for a JSON-RPC id: 1 and "1" are different requests."""
    return (isinstance(msg_id, str), msg_id)


class RelayOptions:
    """Everything the relay needs to know from the command line."""

    def __init__(self, max_response_chars=10000, preview_chars=4000, output_dir=None,
                 retention_days=7, request_timeout=0.0, restart=0, keep_output_schema=False,
                 use_threads=False, trace_path=None):
        self.max_response_chars = max_response_chars
        self.preview_chars = preview_chars
        self.output_dir = output_dir or default_cache_dir()
        self.retention_days = retention_days
        self.request_timeout = request_timeout
        self.restart = restart
        self.keep_output_schema = keep_output_schema
        self.use_threads = use_threads
        self.trace_path = trace_path


class Pending:
    """A client request the upstream has not answered yet."""

    __slots__ = ("msg_id", "method", "params", "started", "timer")

    def __init__(self, msg_id, method, params, started):
        self.msg_id = msg_id
        self.method = method
        self.params = params
        self.started = started
        self.timer = None


class Trace:
    """``--trace FILE``: one NDJSON record per message, metadata only, secrets redacted."""

    def __init__(self, path):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.handle = os.fdopen(fd, "a", encoding="utf-8")

    def record(self, direction, msg, size, pending=None, spilled=None, note=None):
        entry = {"time": utc_now_iso(), "dir": direction, "size": size}
        if isinstance(msg, dict):
            if "id" in msg:
                entry["id"] = msg["id"]
            method = msg.get("method") or (pending.method if pending else None)
            if method:
                entry["method"] = method
            params = msg.get("params")
            if method == "tools/call" and isinstance(params, dict) and "name" in params:
                entry["tool"] = params["name"]
            if "error" in msg and isinstance(msg["error"], dict):
                entry["error"] = msg["error"].get("code")
        if pending is not None:
            entry["ms"] = round((time.monotonic() - pending.started) * 1000, 3)
        if spilled is not None:
            entry["spill"] = {"json": spilled.json_path, "txt": spilled.txt_path}
        if note:
            entry["note"] = note
        self.handle.write(dumps(redact(entry)) + "\n")
        self.handle.flush()

    def close(self):
        self.handle.close()


class Relay:
    """Relays JSON-RPC lines between the client (our stdio) and one upstream.

    Client requests are tracked by id so that each one is answered exactly
    once: by the upstream, or by us with a JSON-RPC error when the upstream
    dies, times out or cannot be reached.  Upstream lines go through the
    spill check before they reach the client.  ``make_upstream(loop,
    on_line, on_exit)`` builds a fresh upstream; it is called again on each restart.
    """

    def __init__(self, loop, options, make_upstream, client_in_fd=0, client_out_fd=1):
        self.loop = loop
        self.options = options
        self.make_upstream = make_upstream
        self.spill = Spill(options.output_dir, options.max_response_chars, options.preview_chars,
                           options.retention_days)
        self.trace = Trace(options.trace_path) if options.trace_path else None
        self.client_in_fd = client_in_fd
        self.client_out = PipeWriter(loop, client_out_fd, on_error=self._client_gone,
                                     use_threads=options.use_threads)
        self.client_lines = LineSplitter()
        self.pending = {}
        self.abandoned = collections.OrderedDict()
        self.upstream = None
        self.restarts_left = options.restart
        self.generation = 0
        self.initialize_line = None      # the client's initialize request, for replay
        self.initialized_line = None     # its notifications/initialized
        self.initialize_ok = False
        self.protocol_version = None
        self.replaying = None            # replay request id while re-initializing
        self.restarting = False          # between an upstream exit and its replacement being ready
        self.held = []                   # client lines waiting for the restart to finish
        self.dead_reason = None          # set when the upstream is gone for good
        self.closing = False
        self.exit_status = 0

    # -- lifecycle ---------------------------------------------------------

    def start(self):
        try:
            removed = self.spill.remove_expired()
            if removed:
                log.info("removed %d spill files older than %d days" % (removed, self.spill.retention_days))
        except OSError as exc:
            log.warning("could not clean %s: %s" % (self.spill.output_dir, exc))
        self._start_upstream()
        self.client_in = PipeReader(self.loop, self.client_in_fd, self._client_data,
                                    use_threads=self.options.use_threads)

    def _start_upstream(self):
        self.generation += 1
        self.upstream = self.make_upstream(self.loop, self._upstream_line, self._upstream_exit)
        self.upstream.start()

    def shutdown(self, reason="client closed stdin"):
        """Stop politely: close the upstream's input, then TERM and KILL its group."""
        if self.closing:
            return
        self.closing = True
        log.debug("shutting down: %s" % reason)
        upstream = self.upstream
        if upstream is None or upstream.exited:
            self._finish()
            return
        upstream.close_input()
        self.loop.call_later(2.0, self._escalate, upstream, signal.SIGTERM if not IS_WINDOWS else None)

    def _escalate(self, upstream, sig):
        if upstream.exited:
            return
        upstream.kill_tree(sig)
        if sig is not None:
            self.loop.call_later(2.0, self._escalate, upstream, None)
        else:
            self.loop.call_later(0.5, self._finish)

    def _finish(self, reason="ocx-proxy is shutting down"):
        if self.upstream is not None:
            self.upstream.kill_tree()  # whatever the child left in its group
            self.upstream.reap()
        self._fail_all_pending(reason)
        self.loop.stop()

    def close(self):
        """After the loop stopped: flush what the client has not read yet."""
        self.client_out.flush_blocking(1.0)
        self.client_out.close()
        if self.trace:
            self.trace.close()

    def _client_gone(self, exc):
        log.debug("client stdout closed (%s)" % exc)
        self.shutdown("client stopped reading")

    # -- client -> upstream ------------------------------------------------

    def _client_data(self, data):
        if not data:
            tail = self.client_lines.pending()
            if tail.strip():
                self._client_line(tail)
            self.shutdown()
            return
        for line in self.client_lines.feed(data):
            self._client_line(line)

    def _client_line(self, line):
        if not line or line.isspace():
            return
        try:
            msg = parse_message(line)
        except ValueError as exc:
            log.warning("client sent a line that is not JSON (%s); answered with -32700" % exc)
            self.send_to_client(error_response(None, PARSE_ERROR, "Parse error: line is not valid JSON"))
            return
        items = msg if isinstance(msg, list) and msg else [msg]
        for item in items:
            if message_kind(item) is None:
                log.warning("client sent something that is not a JSON-RPC message; answered with -32600")
                bad_id = item.get("id") if isinstance(item, dict) else None
                self.send_to_client(error_response(bad_id if isinstance(bad_id, (str, int)) else None,
                                                   INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message"))
                return
        for item in items:
            self._track_client_message(item, line)
        if self.trace:
            self.trace.record("client->upstream", msg, len(line))
        self._send_upstream(line, items)

    def _track_client_message(self, msg, line):
        kind = message_kind(msg)
        method = msg.get("method")
        if kind == "request":
            if method == "initialize":
                self.initialize_line = line
                self.initialize_ok = False
            params = msg.get("params") if method == "resources/read" else None
            pending = Pending(msg["id"], method, params, time.monotonic())
            if self.options.request_timeout > 0:
                pending.timer = self.loop.call_later(self.options.request_timeout, self._timed_out, pending)
            self.pending[id_key(msg["id"])] = pending
        elif method == "notifications/initialized":
            self.initialized_line = line
        elif method == "notifications/cancelled":
            params = msg.get("params")
            if isinstance(params, dict) and "requestId" in params:
                cancelled = self.pending.pop(id_key(params["requestId"]), None)
                if cancelled and cancelled.timer:
                    cancelled.timer.cancel()

    def _send_upstream(self, line, items):
        if self.dead_reason is not None:
            for item in items:
                if message_kind(item) == "request":
                    self._answer_error(item["id"], UPSTREAM_ERROR, self.dead_reason)
                else:
                    log.warning("dropped a client %s: %s" % (item.get("method") or "response", self.dead_reason))
            return
        if self.restarting:
            self.held.append(line)
            return
        self.upstream.send(line + b"\n")

    def _timed_out(self, pending):
        key = id_key(pending.msg_id)
        if self.pending.get(key) is not pending:
            return
        del self.pending[key]
        self.abandoned[key] = True
        while len(self.abandoned) > ABANDONED_LIMIT:
            self.abandoned.popitem(last=False)
        seconds = self.options.request_timeout
        log.warning("%s request %r timed out after %gs" % (pending.method, pending.msg_id, seconds))
        self.send_to_client(error_response(
            pending.msg_id, REQUEST_TIMEOUT,
            "Request timed out after %g s (ocx-proxy --request-timeout)" % seconds))
        if pending.method != "initialize" and self.upstream is not None and self.dead_reason is None:
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled",
                      "params": {"requestId": pending.msg_id, "reason": "ocx-proxy request timeout"}}
            self.upstream.send(encode_message(cancel))

    # -- upstream -> client ------------------------------------------------

    def _upstream_line(self, line):
        if not line or line.isspace():
            return
        try:
            msg = parse_message(line)
        except UnicodeDecodeError:
            text = line.decode("utf-8", "replace")
            log.warning("upstream sent invalid UTF-8; forwarding with replacement characters")
            try:
                msg = json.loads(text)
            except ValueError:
                msg = None
            line = text.encode("utf-8")
        except ValueError:
            msg = None
        if msg is None or (message_kind(msg) is None and not isinstance(msg, list)):
            shown = line[:200].decode("utf-8", "replace")
            log.warning("ignored a line from the upstream that is not JSON-RPC: %s" % shown)
            return
        pending = None
        if isinstance(msg, list):
            for item in msg:
                if message_kind(item) == "response":
                    self._complete(item)
        elif "method" not in msg:
            if self._is_replay_response(msg):
                return
            key = id_key(msg.get("id"))
            if key in self.abandoned:
                del self.abandoned[key]
                log.info("dropped a late answer to timed-out request %r" % msg.get("id"))
                return
            pending = self._complete(msg)
        self._forward(line, msg, pending)

    def _complete(self, msg):
        pending = self.pending.pop(id_key(msg.get("id")), None)
        if pending is None:
            return None
        if pending.timer:
            pending.timer.cancel()
        if pending.method == "initialize" and isinstance(msg.get("result"), dict):
            self.initialize_ok = True
            self.protocol_version = msg["result"].get("protocolVersion")
        return pending

    def _forward(self, line, msg, pending):
        method = pending.method if pending else None
        if method == "tools/list" and not self.options.keep_output_schema and b'"outputSchema"' in line:
            line = strip_output_schemas(msg, line)
        spilled = None
        limit = self.options.max_response_chars
        if limit > 0 and len(line) > limit and isinstance(msg, dict):
            out, spilled = self._check_size(line, msg, pending)
            if out is not None:
                line = out.encode("utf-8", "surrogatepass")
        if self.trace:
            self.trace.record("upstream->client", msg, len(line), pending, spilled)
        self.client_out.write(line + b"\n")

    def _check_size(self, line, msg, pending):
        """Return (replacement text or None, SpillFiles or None) for a line over the byte limit."""
        limit = self.options.max_response_chars
        chars = len(line) if line.isascii() else len(line.decode("utf-8", "replace"))
        if chars <= limit:
            return None, None
        # Re-serializing only helps a line that compacts under the limit.  Compact
        # JSON can only lose whitespace, escapes (\uXXXX, \/) and number digits, so
        # when even dropping all of those leaves it over the limit, skip the costly
        # dumps (14 ms for 5 MB).  Duplicate keys could shrink it further; such a
        # line is then spilled, never sent oversized.
        if chars - len(line) + len(line.translate(None, COMPACT_SHRINKABLE)) - 6 * line.count(b"\\u") <= limit:
            compact = dumps(msg)
            if len(compact) <= limit:
                return compact, None
        method = pending.method if pending else None
        params = pending.params if pending else None
        rewritten = self.spill.rewrite(line, msg, method, params, self.protocol_version)
        if rewritten is None:
            return None, None
        out, files = rewritten
        log.info("spilled %s response %r (%d bytes) to %s" % (method or msg.get("method") or "?",
                                                              msg.get("id"), len(line), files.txt_path))
        return out, files

    def send_to_client(self, msg):
        line = encode_message(msg)
        if self.trace:
            self.trace.record("proxy->client", msg, len(line) - 1)
        self.client_out.write(line)

    def _answer_error(self, msg_id, code, message):
        self.send_to_client(error_response(msg_id, code, message))

    def _fail_all_pending(self, reason):
        pending, self.pending = self.pending, {}
        for entry in pending.values():
            if entry.timer:
                entry.timer.cancel()
            self._answer_error(entry.msg_id, UPSTREAM_ERROR, reason)

    # -- upstream failure and restart --------------------------------------

    def _upstream_exit(self, description):
        upstream = self.upstream
        tail = list(upstream.stderr_tail)[-5:] if upstream is not None else []
        reason = description + (("; last stderr: " + " | ".join(tail)) if tail else "")
        if self.closing:
            self._finish(reason)
            return
        log.warning(reason)
        self._fail_all_pending(reason)
        if self.held:
            # Their requests were just answered with errors: sending them later would run them anyway.
            log.warning("dropped %d client messages that were waiting for the restart" % len(self.held))
            self.held = []
        self.replaying = None
        if upstream is not None:
            upstream.reap()
        if self.restarts_left > 0:
            self.restarting = True
            self.restarts_left -= 1
            delay = min(0.1 * self.generation, 2.0)
            log.info("restarting upstream in %.1fs (%d restarts left)" % (delay, self.restarts_left))
            self.loop.call_later(delay, self._restart)
        else:
            self.dead_reason = reason
            log.error("upstream is gone; requests will be answered with errors until the client exits")

    def _restart(self):
        if self.closing:
            return
        self._start_upstream()
        if self.initialize_line is None or not self.initialize_ok:
            self._restart_done()
            return
        self.replaying = "%s%d" % (REPLAY_ID_PREFIX, self.generation)
        request = json.loads(self.initialize_line.decode("utf-8"))
        request["id"] = self.replaying
        self.upstream.send(encode_message(request))

    def _is_replay_response(self, msg):
        if self.replaying is None or msg.get("id") != self.replaying:
            return False
        if "error" in msg:
            log.error("the restarted upstream refused the replayed initialize: %s" % dumps(msg["error"])[:300])
        else:
            log.info("upstream restarted and re-initialized")
        self.replaying = None
        if self.initialized_line is not None:
            self.upstream.send(self.initialized_line + b"\n")
        self._restart_done()
        return True

    def _restart_done(self):
        """The new upstream is ready: send what the client said meanwhile, in order."""
        self.restarting = False
        held, self.held = self.held, []
        for line in held:
            self.upstream.send(line + b"\n")


# Bytes that may disappear when a line is re-serialized compactly (see Relay._check_size).
COMPACT_SHRINKABLE = b" \t\r\n/0123456789"


def strip_output_schemas(msg, line):
    """Remove ``outputSchema`` from a tools/list result (see --keep-output-schema)."""
    result = msg.get("result") if isinstance(msg, dict) else None
    tools = result.get("tools") if isinstance(result, dict) else None
    if not isinstance(tools, list):
        return line
    changed = False
    for tool in tools:
        if isinstance(tool, dict) and "outputSchema" in tool:
            del tool["outputSchema"]
            changed = True
    return encode_message(msg)[:-1] if changed else line


def run_relay(options, make_upstream):
    """Run the relay on our stdin/stdout until the client leaves; returns the exit status."""
    loop = Loop()
    relay = Relay(loop, options, make_upstream)

    def on_signal(signum, frame):
        loop.post(relay.shutdown, "signal %d" % signum)

    previous = {}
    for name in ("SIGTERM", "SIGINT", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is not None:
            previous[sig] = signal.signal(sig, on_signal)
    try:
        relay.start()
        loop.run()
    finally:
        relay.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        loop.close()
    return relay.exit_status


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

DEMO_PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")

DEMO_TOOLS = [
    {"name": "echo", "description": "Return the given text.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    {"name": "big_text", "description": "Return a long numbered log (lines x ~60 characters).",
     "inputSchema": {"type": "object", "properties": {"lines": {"type": "integer", "default": 2000}}}},
    {"name": "unicode_text", "description": "Return CJK text and emoji (repeat x 12 characters).",
     "inputSchema": {"type": "object", "properties": {"repeat": {"type": "integer", "default": 3000}}}},
    {"name": "structured_report", "description": "Return a table as structuredContent and JSON text.",
     "inputSchema": {"type": "object", "properties": {"rows": {"type": "integer", "default": 400}}},
     "outputSchema": {"type": "object", "properties": {"rows": {"type": "array"}}, "required": ["rows"]}},
    {"name": "image", "description": "Return a generated 160x160 PNG and a caption.",
     "inputSchema": {"type": "object", "properties": {}}},
    {"name": "slow", "description": "Sleep, sending progress notifications, then answer.",
     "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number", "default": 1}}}},
    {"name": "fail", "description": "Return a tool error (isError).",
     "inputSchema": {"type": "object", "properties": {}}},
]


def demo_png(size=160, seed=7):
    """A noisy PNG made with zlib: big enough that its base64 must be spilled."""
    import random
    import struct
    import zlib

    rng = random.Random(seed)
    rows = b"".join(b"\0" + bytes(rng.randrange(256) if (x // 8 + y // 8) % 2 else (x + y) % 256
                                  for x in range(size * 3)) for y in range(size))

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def demo_tool_result(name, arguments, notify):
    """Result of one demo tool call (``notify`` sends a notification first)."""
    if name == "echo":
        return {"content": [{"type": "text", "text": str(arguments.get("text", ""))}]}
    if name == "big_text":
        lines = int(arguments.get("lines", 2000))
        text = "\n".join("line %05d: the quick brown fox jumps over the lazy dog" % i for i in range(1, lines + 1))
        return {"content": [{"type": "text", "text": text}]}
    if name == "unicode_text":
        repeat = int(arguments.get("repeat", 3000))
        return {"content": [{"type": "text", "text": "数据库连接正常🙂👍🏽é\n" * repeat}]}
    if name == "structured_report":
        rows = [{"id": i, "name": "item-%d" % i, "score": i * 0.5} for i in range(int(arguments.get("rows", 400)))]
        data = {"rows": rows}
        return {"content": [{"type": "text", "text": json.dumps(data)}], "structuredContent": data}
    if name == "image":
        data = base64.b64encode(demo_png()).decode("ascii")
        return {"content": [{"type": "image", "data": data, "mimeType": "image/png"},
                            {"type": "text", "text": "A generated 160x160 test pattern."}]}
    if name == "slow":
        seconds = float(arguments.get("seconds", 1))
        token = arguments.get("_progressToken")
        steps = 4
        for step in range(1, steps + 1):
            time.sleep(seconds / steps)
            if token is not None:
                notify("notifications/progress", {"progressToken": token, "progress": step, "total": steps})
        return {"content": [{"type": "text", "text": "slept %g s" % seconds}]}
    if name == "fail":
        return {"content": [{"type": "text", "text": "this tool always fails"}], "isError": True}
    return None


DEMO_RESOURCE = {"uri": "demo://big-log", "name": "big-log", "mimeType": "text/plain",
                 "description": "A long log file"}
DEMO_PROMPT = {"name": "review", "description": "Review a long diff", "arguments": []}


def demo_server_answer(msg, notify):
    """The result (or error) for one request to the demo server."""
    method = msg.get("method")
    params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
    if method == "initialize":
        asked = params.get("protocolVersion")
        version = asked if asked in DEMO_PROTOCOL_VERSIONS else DEMO_PROTOCOL_VERSIONS[1]
        return {"protocolVersion": version, "serverInfo": {"name": "ocx-demo", "version": __version__},
                "capabilities": {"tools": {}, "resources": {}, "prompts": {}, "logging": {}}}
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": DEMO_TOOLS}
    if method == "tools/call":
        arguments = dict(params.get("arguments") or {})
        token = (params.get("_meta") or {}).get("progressToken")
        if token is not None:
            arguments["_progressToken"] = token
        result = demo_tool_result(params.get("name"), arguments, notify)
        return result if result is not None else error_response(
            msg.get("id"), INVALID_PARAMS, "Unknown tool: %s" % params.get("name"))["error"]
    if method == "resources/list":
        return {"resources": [DEMO_RESOURCE]}
    if method == "resources/read":
        text = "\n".join("%s INFO request %d served in %d ms" % ("2026-01-01T00:00:00Z", i, i % 97)
                         for i in range(3000))
        return {"contents": [{"uri": params.get("uri"), "mimeType": "text/plain", "text": text}]}
    if method == "prompts/list":
        return {"prompts": [DEMO_PROMPT]}
    if method == "prompts/get":
        diff = "\n".join("+ added line %d" % i for i in range(2000))
        return {"description": DEMO_PROMPT["description"],
                "messages": [{"role": "user", "content": {"type": "text", "text": "Review this diff:\n" + diff}}]}
    if method == "logging/setLevel":
        return {}
    return error_response(msg.get("id"), METHOD_NOT_FOUND, "Method not found: %s" % method)["error"]


def run_demo_server(stdin=None, stdout=None):
    """Serve the demo catalog on stdio until stdin closes (requests answered in order)."""
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout.buffer

    def send(obj):
        stdout.write(encode_message(obj))
        stdout.flush()

    def notify(method, params):
        send({"jsonrpc": "2.0", "method": method, "params": params})

    for line in stdin:
        if not line.strip():
            continue
        try:
            msg = parse_message(line)
        except ValueError:
            send(error_response(None, PARSE_ERROR, "Parse error"))
            continue
        if message_kind(msg) != "request":
            continue
        answer = demo_server_answer(msg, notify)
        if isinstance(answer, dict) and set(answer) <= {"code", "message", "data"} and "code" in answer:
            send({"jsonrpc": "2.0", "id": msg["id"], "error": answer})
        else:
            send({"jsonrpc": "2.0", "id": msg["id"], "result": answer})
    return 0


class DemoClient:
    """A scripted MCP client over a relay subprocess, used by ``demo``."""

    def __init__(self, command, env=None):
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, env=env)
        self.lines = collections.deque()
        self.lock = threading.Condition()
        self.stderr = []
        threading.Thread(target=self._read, args=(self.process.stdout, self.lines), daemon=True).start()
        threading.Thread(target=self._read, args=(self.process.stderr, self.stderr), daemon=True).start()
        self.next_id = 0

    def _read(self, pipe, sink):
        for line in pipe:
            with self.lock:
                sink.append(line)
                self.lock.notify_all()
        with self.lock:
            sink.append(None)
            self.lock.notify_all()

    def send(self, msg):
        self.process.stdin.write(encode_message(msg))
        self.process.stdin.flush()

    def request(self, method, params=None, timeout=20.0):
        """Send a request; return (response, [notifications received before it])."""
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        notes = []
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                while not self.lines:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise OcxError("demo: no answer to %s within %g s" % (method, timeout))
                    self.lock.wait(left)
                raw = self.lines.popleft()
            if raw is None:
                raise OcxError("demo: the relay exited: %s" % b"".join(l for l in self.stderr if l)[-500:])
            reply = json.loads(raw.decode("utf-8"))
            if reply.get("id") == self.next_id and "method" not in reply:
                return reply, notes
            notes.append(reply)

    def close(self):
        self.process.stdin.close()
        try:
            return self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()


def run_demo(output_dir, max_chars, out):
    """Drive relay + demo-server as a client would and print a readable transcript."""
    me = os.path.abspath(__file__)
    command = [sys.executable, me, "stdio", "--output-dir", output_dir, "--max-response-chars",
               str(max_chars), "--log-level", "warning", "--", sys.executable, me, "demo-server"]
    write = out.write
    write("ocx-proxy demo: relay in front of the built-in demo-server\n")
    write("  relay command: %s\n  spill directory: %s\n\n" % (" ".join(command[1:]), output_dir))
    client = DemoClient(command)
    started = time.monotonic()
    try:
        reply, _ = client.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                                 "clientInfo": {"name": "ocx-demo-client", "version": "1"}})
        write("-> initialize: protocol %s, server %s\n" % (
            reply["result"]["protocolVersion"], reply["result"]["serverInfo"]["name"]))
        client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        reply, _ = client.request("tools/list")
        tools = reply["result"]["tools"]
        write("-> tools/list: %d tools (%s); outputSchema removed by the relay: %s\n\n" % (
            len(tools), ", ".join(t["name"] for t in tools), not any("outputSchema" in t for t in tools)))
        calls = [("echo", {"text": "hello through the relay"}), ("big_text", {"lines": 2000}),
                 ("unicode_text", {"repeat": 600}), ("unicode_text", {"repeat": 3000}),
                 ("structured_report", {"rows": 400}), ("image", {}), ("fail", {})]
        for name, arguments in calls:
            reply, _ = client.request("tools/call", {"name": name, "arguments": arguments})
            describe_demo_reply(write, "tools/call %s %s" % (name, json.dumps(arguments, ensure_ascii=False)), reply)
        reply, notes = client.request("tools/call", {"name": "slow", "arguments": {"seconds": 0.4},
                                                     "_meta": {"progressToken": "demo-progress"}})
        write("-> tools/call slow: %d progress notifications arrived before the result\n" % len(notes))
        describe_demo_reply(write, "", reply, header=False)
        reply, _ = client.request("resources/read", {"uri": "demo://big-log"})
        describe_demo_reply(write, "resources/read demo://big-log", reply)
        reply, _ = client.request("prompts/get", {"name": "review"})
        describe_demo_reply(write, "prompts/get review", reply)
    finally:
        status = client.close()
    write("relay exited with status %d after %.1f s; spilled files are in %s\n" % (
        status, time.monotonic() - started, output_dir))
    return 0 if status == 0 else 1


def describe_demo_reply(write, title, reply, header=True):
    size = len(dumps(reply))
    if header:
        write("-> %s\n" % title)
    result = reply.get("result") or {}
    meta = (result.get("_meta") or {}).get(SPILL_META_KEY) or ((reply.get("error") or {}).get("data") or {}).get(SPILL_META_KEY)
    if meta:
        write("   client received %d characters (spilled: the original had %d)\n" % (size, meta["original_chars"]))
        write("   full text: %s\n   raw JSON : %s\n" % (meta["txt"], meta["json"]))
        for path in meta.get("files", []):
            write("   file     : %s\n" % path)
    else:
        write("   client received %d characters, passed through unchanged\n" % size)
    text = demo_reply_text(reply)
    if text:
        head = text if len(text) <= 160 else text[:110] + " ... " + text[-45:]
        write("   preview  : %s\n" % head.replace("\n", "\\n"))
    write("\n")


def demo_reply_text(reply):
    result = reply.get("result")
    if not isinstance(result, dict):
        return (reply.get("error") or {}).get("message", "")
    for block in result.get("content") or []:
        if block.get("type") == "text":
            return block["text"]
    for item in result.get("contents") or []:
        return item.get("text", "")
    for message in result.get("messages") or []:
        return message.get("content", {}).get("text", "")
    return ""


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


ENV_PREFIXES = ("OCX_PROXY_", "CURSOR_MCP_RESPONSE_PROXY_")


def int_at_least(minimum):
    def convert(text):
        value = int(text)
        if value < minimum:
            raise ValueError("must be at least %d" % minimum)
        return value
    return convert


def non_negative_float(text):
    value = float(text)
    if not value >= 0 or value == float("inf"):
        raise ValueError("must be a number >= 0")
    return value


def max_chars_value(text):
    value = int(text)
    if value != 0 and value < 500:
        raise ValueError("must be 0 (never spill) or at least 500")
    return value


def option_value(args, dest, env_name, convert, default):
    """Resolve one option: flag, then ``OCX_PROXY_<NAME>``, then the legacy prefix, then default."""
    value = getattr(args, dest, None)
    if value is not None:
        return value
    for prefix in ENV_PREFIXES:
        raw = os.environ.get(prefix + env_name)
        if raw is not None and raw.strip() != "":
            try:
                return convert(raw.strip())
            except ValueError as exc:
                raise UsageError("%s%s=%r is invalid: %s" % (prefix, env_name, raw, exc))
    return default


def typed(convert, what):
    """argparse ``type=`` wrapper whose error message says what was expected."""
    def parse(text):
        try:
            return convert(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError("%r is not %s (%s)" % (text, what, exc))
    return parse


def add_spill_options(parser):
    group = parser.add_argument_group("response spill")
    group.add_argument("--max-response-chars", type=typed(max_chars_value, "a character count"),
                       help="responses longer than this many characters of compact JSON are saved to "
                            "disk and replaced by a preview; 0 never spills (default 10000; env "
                            "OCX_PROXY_MAX_RESPONSE_CHARS)")
    group.add_argument("--preview-chars", type=typed(int_at_least(0), "a character count"),
                       help="characters of text kept in a preview, about 3/4 head and 1/4 tail "
                            "(default 4000; env OCX_PROXY_PREVIEW_CHARS)")
    group.add_argument("--output-dir", help="where spilled responses are written (default %s; env "
                                            "OCX_PROXY_OUTPUT_DIR)" % default_cache_dir())
    group.add_argument("--retention-days", type=typed(int_at_least(0), "a number of days"),
                       help="at start, delete this tool's spill files older than this; 0 keeps all "
                            "(default 7; env OCX_PROXY_RETENTION_DAYS)")
    group.add_argument("--keep-output-schema", action="store_true", default=None,
                       help="keep outputSchema in tools/list results; by default it is removed so that "
                            "SDK clients accept spilled results without structuredContent (default off)")


def add_relay_options(parser):
    add_spill_options(parser)
    group = parser.add_argument_group("relay")
    group.add_argument("--request-timeout", type=typed(non_negative_float, "a number of seconds"),
                       help="answer a request the upstream has not answered after this many seconds "
                            "with an error and cancel it upstream; 0 = no timeout (default 0; env "
                            "OCX_PROXY_REQUEST_TIMEOUT)")
    group.add_argument("--restart", type=typed(int_at_least(0), "a count"),
                       help="restart a crashed upstream up to N times, replaying the client's "
                            "initialize (default 0; env OCX_PROXY_RESTART)")
    group.add_argument("--log-level", choices=sorted(LOG_LEVELS, key=LOG_LEVELS.get),
                       help="stderr logging threshold (default info; env OCX_PROXY_LOG_LEVEL)")
    group.add_argument("--trace", metavar="FILE",
                       help="append one NDJSON record per message (time, direction, id, method, size, "
                            "duration, spill paths; no message bodies, secrets redacted) (default off)")
    group.add_argument("--io", choices=("auto", "select", "threads"),
                       help="how pipes are read: select where possible, or reader/writer threads "
                            "(Windows always uses threads) (default auto; env OCX_PROXY_IO)")


def relay_options_from_args(args):
    level = option_value(args, "log_level", "LOG_LEVEL", lambda v: v if v in LOG_LEVELS else
                         _raise(ValueError("expected one of " + ", ".join(LOG_LEVELS))), "info")
    log.level = LOG_LEVELS[level]
    io_mode = option_value(args, "io", "IO", lambda v: v if v in ("auto", "select", "threads") else
                           _raise(ValueError("expected auto, select or threads")), "auto")
    return RelayOptions(
        max_response_chars=option_value(args, "max_response_chars", "MAX_RESPONSE_CHARS", max_chars_value, 10000),
        preview_chars=option_value(args, "preview_chars", "PREVIEW_CHARS", int_at_least(0), 4000),
        output_dir=option_value(args, "output_dir", "OUTPUT_DIR", os.path.expanduser, default_cache_dir()),
        retention_days=option_value(args, "retention_days", "RETENTION_DAYS", int_at_least(0), 7),
        request_timeout=option_value(args, "request_timeout", "REQUEST_TIMEOUT", non_negative_float, 0.0),
        restart=option_value(args, "restart", "RESTART", int_at_least(0), 0),
        keep_output_schema=bool(getattr(args, "keep_output_schema", None)),
        use_threads=IS_WINDOWS or io_mode == "threads",
        trace_path=getattr(args, "trace", None),
    )


def _raise(exc):
    raise exc


def cmd_stdio(args):
    command = args.upstream_command
    if not command:
        raise UsageError("stdio needs the server command after --, e.g. stdio -- npx -y my-server")
    options = relay_options_from_args(args)
    env = child_environment(args.env or (), args.pass_environment)
    if args.cwd and not os.path.isdir(args.cwd):
        raise UsageError("--cwd %s is not a directory" % args.cwd)

    def make_upstream(loop, on_line, on_exit):
        return StdioUpstream(loop, command, env, args.cwd, options.use_threads, on_line, on_exit)

    return run_relay(options, make_upstream)


def cmd_demo_server(args):
    return run_demo_server()


def cmd_demo(args):
    output_dir = args.output_dir or os.path.join(default_cache_dir(), "demo")
    return run_demo(output_dir, args.max_response_chars or 10000, sys.stdout)


def add_stdio_command(sub):
    p = sub.add_parser("stdio", help="relay to an MCP server started as a child process",
                       description="Relay MCP between this process's stdio (the client) and a server "
                                   "started as a child process: stdio [options] -- COMMAND [ARGS...]")
    add_relay_options(p)
    group = p.add_argument_group("child process")
    group.add_argument("--env", action="append", metavar="NAME=VALUE",
                       help="set a variable for the child; ${VAR} in VALUE expands from our environment "
                            "(repeatable; default: only HOME LOGNAME PATH SHELL TERM USER are passed)")
    group.add_argument("--cwd", metavar="DIR", help="working directory of the child (default: ours)")
    group.add_argument("--pass-environment", action="store_true",
                       help="pass our whole environment to the child (default off)")
    p.set_defaults(handler=cmd_stdio, takes_command=True)


def add_demo_commands(sub):
    p = sub.add_parser("demo", help="run the whole chain against the built-in server and show it",
                       description="Start the relay in front of the built-in demo-server, call its tools "
                                   "as a client would, and print what the client receives.")
    p.add_argument("--output-dir", help="where spilled responses go (default %s)"
                                        % os.path.join(default_cache_dir(), "demo"))
    p.add_argument("--max-response-chars", type=typed(max_chars_value, "a character count"),
                   help="spill threshold used by the demo relay (default 10000)")
    p.set_defaults(handler=cmd_demo)
    p = sub.add_parser("demo-server", help="the built-in sample MCP server (stdio)",
                       description="A small MCP server on stdio with tools that return small, huge, "
                                   "unicode, structured and image results.")
    p.set_defaults(handler=cmd_demo_server)

# (issue 4: encode-tools / decode commands)

# (issue 5: capture command)

# (issue 6: check command)


def build_parser():
    parser = CliParser(prog="ocx-proxy", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version="ocx-proxy " + __version__)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    add_stdio_command(sub)
    add_demo_commands(sub)
    # (relay core: register relay commands)
    # (issue 4: register encode-tools / decode)
    # (issue 5: register capture)
    # (issue 6: register check)
    return parser


def main(argv=None):
    """Entry point: returns the process exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    upstream_command = None
    if "--" in argv:
        split = argv.index("--")
        argv, upstream_command = argv[:split], argv[split + 1:]
    parser = build_parser()
    args = parser.parse_args(argv)
    if upstream_command is not None and not getattr(args, "takes_command", False):
        parser.error("unexpected arguments after --: %s" % " ".join(upstream_command))
    args.upstream_command = upstream_command or []
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
