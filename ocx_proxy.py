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

# Cursor's agent service (package agent.v1, proto3) takes a client's tools in
# AgentRunRequest.mcp_tools.  The messages involved are small enough to write
# by hand, which keeps this file free of generated code and of the protobuf
# runtime.  Field numbers and their sources are in vendor_proto_notes.md.

import struct  # imported here so this section merges without touching the header

WIRE_VARINT = 0
WIRE_FIXED64 = 1
WIRE_LEN = 2
WIRE_START_GROUP = 3
WIRE_END_GROUP = 4
WIRE_FIXED32 = 5

WIRE_TYPE_NAMES = {0: "varint", 1: "fixed64", 2: "length-delimited", 3: "start-group",
                   4: "end-group", 5: "fixed32"}

# A JSON number travels as a double; past 2**53 two integers share one double.
MAX_EXACT_INTEGER = 2 ** 53
# Deep enough for any real JSON Schema, shallow enough that recursion is safe.
MAX_VALUE_DEPTH = 100
# decode_raw guesses nested messages only this deep; deeper payloads stay bytes.
MAX_RAW_DEPTH = 64

# Limits observed on Cursor's service (see vendor_proto_notes.md, "Limits").
CURSOR_MAX_TOOLS = 330
CURSOR_MAX_MCP_TOOLS_BYTES = 120000
CURSOR_MAX_MESSAGE_BYTES = 1 << 20


class ProtobufDecodeError(OcxError):
    """Bytes that are not the protobuf message they were decoded as.

    ``offset`` is the byte position in the whole input, ``field`` and
    ``wire_type`` the tag being read (or None when no tag applies),
    ``where`` the message path, and ``snippet`` the text around the offset
    when those bytes look like text (often the cause: a string or JSON where
    a message was expected).
    """

    def __init__(self, reason, data, offset, field=None, wire_type=None, where=""):
        self.reason = reason
        self.offset = offset
        self.field = field
        self.wire_type = wire_type
        self.where = where
        self.snippet = _text_around(data, offset)
        OcxError.__init__(self, self._format())

    def _format(self):
        parts = ["malformed protobuf at byte %d" % self.offset]
        if self.field is not None:
            parts.append(" (field %d, wire type %d)" % (self.field, self.wire_type))
        if self.where:
            parts.append(" in %s" % self.where)
        parts.append(": " + self.reason)
        if self.snippet is not None:
            parts.append("; the bytes there look like text: %s" % json.dumps(self.snippet))
        return "".join(parts)


def _is_text_byte(byte):
    return 0x20 <= byte < 0x7F or byte >= 0x80 or byte in (0x09, 0x0A, 0x0D)


def _text_around(data, offset):
    """The printable run containing ``offset`` (or just before it, at the end), if any."""
    if offset >= len(data):
        offset = len(data) - 1
    if offset < 0 or not _is_text_byte(data[offset]):
        return None
    start = offset
    while start > 0 and offset - start < 32 and _is_text_byte(data[start - 1]):
        start -= 1
    end = offset + 1
    while end < len(data) and end - offset < 48 and _is_text_byte(data[end]):
        end += 1
    # A printable length-delimited tag ('"' is field 4) right before a small
    # length byte is the next field, not part of the text.
    if end < len(data) and end - 1 > offset and data[end - 1] & 7 == WIRE_LEN and data[end] < 0x20:
        end -= 1
    if end - start < 3:
        return None
    return data[start:end].decode("utf-8", "replace")


# -- encoder: one small function per wire type ------------------------------

# Tags and most lengths are below 128; a table spares building those bytes.
_ONE_BYTE_VARINTS = [bytes((value,)) for value in range(0x80)]
_pack_double = struct.Struct("<d").pack


def encode_varint(value):
    """Base-128 varint of an integer in [-2**63, 2**64).

    Negative numbers are int64 values in two's complement, so they always
    take ten bytes (as every protobuf implementation writes them).
    """
    if 0 <= value < 0x80:
        return _ONE_BYTE_VARINTS[value]
    if not -(1 << 63) <= value < 1 << 64:
        raise OcxError("varint out of range: %d" % value)
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_tag(field, wire_type):
    """The key that precedes every field: ``field << 3 | wire_type`` as a varint."""
    return encode_varint(field << 3 | wire_type)


def encode_varint_field(field, value):
    return encode_tag(field, WIRE_VARINT) + encode_varint(value)


def encode_double_field(field, value):
    return encode_tag(field, WIRE_FIXED64) + _pack_double(value)


def encode_bytes_field(field, payload):
    """A length-delimited field: tag, length, payload (a string, bytes or a message)."""
    return encode_tag(field, WIRE_LEN) + encode_varint(len(payload)) + payload


def encode_string_field(field, text):
    return encode_bytes_field(field, text.encode("utf-8"))


# -- google.protobuf.Value ---------------------------------------------------


def encode_value(obj):
    """Serialize a JSON value as a ``google.protobuf.Value`` message.

    ``obj`` is what ``json.loads`` returns: dict (with str keys), list, str,
    int, float, bool or None.  Numbers become doubles, so an integer beyond
    2**53 in magnitude, NaN and infinities raise OcxError naming their JSON
    path (``$.properties.n.maximum``).  Object keys keep their order.
    """
    return _encode_value(obj, (), 0)


def _encode_value(obj, path, depth):
    # ``path`` is a tuple of keys and indexes, formatted only for an error.
    if depth > MAX_VALUE_DEPTH:
        raise OcxError("JSON nested deeper than %d levels at %s" % (MAX_VALUE_DEPTH, _json_path(path)))
    # Strings and objects make up most of a JSON Schema, so they are tested first.
    if isinstance(obj, str):
        return encode_bytes_field(3, _utf8(obj, path))
    if isinstance(obj, dict):
        return encode_bytes_field(5, _encode_struct(obj, path, depth + 1))
    if obj is None:
        return encode_varint_field(1, 0)
    if obj is True or obj is False:
        return encode_varint_field(4, int(obj))
    if isinstance(obj, int):
        if abs(obj) > MAX_EXACT_INTEGER:
            raise OcxError("integer %d at %s is beyond 2^53 and cannot round-trip "
                           "through a protobuf double" % (obj, _json_path(path)))
        return encode_double_field(2, float(obj))
    if isinstance(obj, float):
        if obj != obj or obj in (float("inf"), float("-inf")):
            raise OcxError("number %r at %s cannot be carried by google.protobuf.Value"
                           % (obj, _json_path(path)))
        return encode_double_field(2, obj)
    if isinstance(obj, list):
        return encode_bytes_field(6, _encode_list(obj, path, depth + 1))
    raise OcxError("%s is a %s, which is not a JSON value" % (_json_path(path), type(obj).__name__))


def _utf8(text, path):
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise OcxError("string at %s is not valid Unicode (a lone surrogate?)" % _json_path(path))


def _encode_struct(obj, path, depth):
    # Struct { map<string, Value> fields = 1 }: each entry is a message {key = 1, value = 2}.
    entries = []
    for key, value in obj.items():
        if not isinstance(key, str):
            raise OcxError("object key %r at %s is not a string" % (key, _json_path(path)))
        entry = encode_bytes_field(1, _utf8(key, path)) + \
            encode_bytes_field(2, _encode_value(value, path + (key,), depth))
        entries.append(encode_bytes_field(1, entry))
    return b"".join(entries)


def _encode_list(obj, path, depth):
    # ListValue { repeated Value values = 1 }
    return b"".join(encode_bytes_field(1, _encode_value(item, path + (index,), depth))
                    for index, item in enumerate(obj))


def _json_path(path):
    """``("properties", "n", 0)`` -> ``$.properties.n[0]``; odd keys are quoted."""
    parts = ["$"]
    for key in path:
        if isinstance(key, int):
            parts.append("[%d]" % key)
        elif re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", key):
            parts.append("." + key)
        else:
            parts.append("[%s]" % json.dumps(key, ensure_ascii=False))
    return "".join(parts)


# -- agent.v1 messages -------------------------------------------------------


def encode_tool_definition(name, description, input_schema, provider_identifier, tool_name):
    """One ``McpToolDefinition``; fields in ascending order, empty strings omitted.

    ``input_schema`` is a JSON value, written as serialized
    ``google.protobuf.Value`` bytes (field 3), never as JSON text.
    """
    parts = []
    if name:
        parts.append(encode_string_field(1, name))
    if description:
        parts.append(encode_string_field(2, description))
    if input_schema is not None:
        parts.append(encode_bytes_field(3, encode_value(input_schema)))
    if provider_identifier:
        parts.append(encode_string_field(4, provider_identifier))
    if tool_name:
        parts.append(encode_string_field(5, tool_name))
    return b"".join(parts)


def encode_mcp_tools_message(definitions):
    """``McpTools { repeated McpToolDefinition mcp_tools = 1 }`` from encoded definitions."""
    return b"".join(encode_bytes_field(1, definition) for definition in definitions)


def encode_agent_run_request(mcp_tools=b"", empty_wrapper=False):
    """An ``AgentRunRequest`` holding only field 4, ``mcp_tools``.

    ``mcp_tools`` is a serialized McpTools message (see encode_mcp_tools).
    When it is empty the field is left out, which makes Cursor add its own
    native tool catalog, unless ``empty_wrapper`` is true: then the field is
    written with length zero (``22 00``), which suppresses that catalog.
    """
    mcp_tools = bytes(mcp_tools)
    if not mcp_tools and not empty_wrapper:
        return b""
    return encode_bytes_field(4, mcp_tools)


def encode_mcp_instructions(server_name, instructions):
    """``McpInstructions { server_name = 1; instructions = 2 }``."""
    parts = []
    if server_name:
        parts.append(encode_string_field(1, server_name))
    if instructions:
        parts.append(encode_string_field(2, instructions))
    return b"".join(parts)


def encode_request_context_message(definitions, instructions=()):
    """``RequestContext`` with ``tools`` (field 7) and ``mcp_instructions`` (field 14).

    ``definitions`` are encoded McpToolDefinition messages, ``instructions``
    encoded McpInstructions messages.  Tools here are only described to the
    model; they become callable through AgentRunRequest.mcp_tools alone.
    """
    parts = [encode_bytes_field(7, definition) for definition in definitions]
    parts.extend(encode_bytes_field(14, item) for item in instructions)
    return b"".join(parts)


def cursor_limit_warnings(tool_count, mcp_tools_size, message_size=None):
    """Human-readable warnings for a catalog past Cursor's observed limits."""
    warnings = []
    if tool_count > CURSOR_MAX_TOOLS:
        warnings.append("%d tool definitions exceed Cursor's limit of about %d; "
                        "expect resource_exhausted" % (tool_count, CURSOR_MAX_TOOLS))
    if mcp_tools_size > CURSOR_MAX_MCP_TOOLS_BYTES:
        warnings.append("McpTools is %d bytes, over Cursor's limit of about %d bytes"
                        % (mcp_tools_size, CURSOR_MAX_MCP_TOOLS_BYTES))
    if message_size is not None and message_size > CURSOR_MAX_MESSAGE_BYTES:
        warnings.append("message is %d bytes; Cursor refuses messages over about 1 MiB"
                        % message_size)
    return warnings


# -- decoder ------------------------------------------------------------------


def _read_varint(data, pos, end, where, field=None, wire_type=None):
    """Return (value, next position) of the varint at ``pos``; at most ten bytes."""
    if pos < end and data[pos] < 0x80:
        return data[pos], pos + 1  # the common one-byte case
    start = pos
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise ProtobufDecodeError("data ends inside a varint", data, start, field, wire_type, where)
        byte = data[pos]
        pos += 1
        if shift == 63 and byte > 1:
            raise ProtobufDecodeError("varint longer than 64 bits", data, start, field, wire_type, where)
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


def _read_tag(data, pos, end, where):
    """Return (field, wire type, next position); reject tags no parser accepts."""
    tag, after = _read_varint(data, pos, end, where)
    field, wire_type = tag >> 3, tag & 7
    if field == 0 or wire_type > 5 or tag >= 1 << 32:
        reason = "illegal tag: field no %d wire type %d" % (field, wire_type)
        if wire_type > 5 and 0x20 < data[pos] < 0x7F:
            reason += (" (tag byte 0x%02X is ASCII %r: text was read where a tag belongs,"
                       " e.g. a string or JSON nested at the wrong level)" % (data[pos], chr(data[pos])))
        raise ProtobufDecodeError(reason, data, pos, field, wire_type, where)
    return field, wire_type, after


def _read_length(data, pos, end, where, field):
    """Return (payload start, payload end) of a length-delimited field."""
    length, start = _read_varint(data, pos, end, where, field, WIRE_LEN)
    if length > end - start:
        raise ProtobufDecodeError("length %d runs past the end of its message (%d bytes left)"
                                  % (length, end - start), data, pos, field, WIRE_LEN, where)
    return start, start + length


def _skip_fixed(data, pos, end, where, field, wire_type, size):
    if end - pos < size:
        raise ProtobufDecodeError("data ends inside a %d-byte fixed field" % size,
                                  data, pos, field, wire_type, where)
    return pos + size


def _skip_group(data, pos, end, where, field):
    """Skip an unknown group up to its matching end-group tag (iterative: no recursion)."""
    open_fields = [field]
    while open_fields:
        if pos >= end:
            raise ProtobufDecodeError("data ends inside group %d" % open_fields[-1],
                                      data, pos, open_fields[-1], WIRE_START_GROUP, where)
        tag_pos = pos
        inner, wire_type, pos = _read_tag(data, pos, end, where)
        if wire_type == WIRE_START_GROUP:
            open_fields.append(inner)
        elif wire_type == WIRE_END_GROUP:
            if inner != open_fields.pop():
                raise ProtobufDecodeError("end-group tag does not match its start-group",
                                          data, tag_pos, inner, wire_type, where)
        else:
            pos = _skip_value(data, pos, end, where, inner, wire_type)
    return pos


def _skip_value(data, pos, end, where, field, wire_type):
    if wire_type == WIRE_VARINT:
        return _read_varint(data, pos, end, where, field, wire_type)[1]
    if wire_type == WIRE_FIXED64:
        return _skip_fixed(data, pos, end, where, field, wire_type, 8)
    if wire_type == WIRE_FIXED32:
        return _skip_fixed(data, pos, end, where, field, wire_type, 4)
    if wire_type == WIRE_LEN:
        return _read_length(data, pos, end, where, field)[1]
    return _skip_group(data, pos, end, where, field)


def _iter_fields(data, pos, end, where):
    """Yield (field, wire type, tag offset, value) for each field in data[pos:end].

    ``value`` is an int for varints, bytes for fixed fields, a (start, end)
    pair for length-delimited fields and None for skipped groups.
    """
    while pos < end:
        tag_pos = pos
        field, wire_type, pos = _read_tag(data, pos, end, where)
        if wire_type == WIRE_VARINT:
            value, pos = _read_varint(data, pos, end, where, field, wire_type)
        elif wire_type == WIRE_LEN:
            value = _read_length(data, pos, end, where, field)
            pos = value[1]
        elif wire_type == WIRE_END_GROUP:
            raise ProtobufDecodeError("end-group tag without a start-group",
                                      data, tag_pos, field, wire_type, where)
        elif wire_type == WIRE_START_GROUP:
            value = None
            pos = _skip_group(data, pos, end, where, field)
        else:
            size = 8 if wire_type == WIRE_FIXED64 else 4
            start, pos = pos, _skip_fixed(data, pos, end, where, field, wire_type, size)
            value = data[start:pos]
        yield field, wire_type, tag_pos, value


def _as_bytes(data):
    if isinstance(data, str):
        raise OcxError("expected bytes, got text (decode hex or base64 first)")
    return bytes(data)


def _expect(data, offset, field, wire_type, expected, where, name):
    if wire_type != expected:
        raise ProtobufDecodeError("%s must have wire type %d (%s)" % (
            name, expected, WIRE_TYPE_NAMES[expected]), data, offset, field, wire_type, where)


def _once(seen, data, offset, field, wire_type, where, name):
    # Valid protobuf lets a later copy win or merge; no correct encoder writes
    # two, so a repeat here is reported rather than silently resolved.
    if field in seen:
        raise ProtobufDecodeError("%s appears twice" % name, data, offset, field, wire_type, where)
    seen.add(field)


def _utf8_at(data, span, offset, field, where, name):
    try:
        return data[span[0]:span[1]].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProtobufDecodeError("%s is not valid UTF-8 (%s)" % (name, exc.reason),
                                  data, span[0] + exc.start, field, WIRE_LEN, where)


def decode_value(data):
    """Decode serialized ``google.protobuf.Value`` bytes into a JSON value.

    Strict: exactly one kind must be set, NaN/infinity and unknown fields are
    refused, and any problem raises ProtobufDecodeError.  Integral doubles
    within 2**53 come back as int, as a JSON printer would show them.
    """
    data = _as_bytes(data)
    return _decode_value(data, 0, len(data), "Value", 0)


def _decode_value(data, pos, end, where, depth):
    if depth > MAX_VALUE_DEPTH:
        raise ProtobufDecodeError("Value nested deeper than %d levels" % MAX_VALUE_DEPTH,
                                  data, pos, where=where)
    result = None
    kind = None
    for field, wire_type, offset, value in _iter_fields(data, pos, end, where):
        if kind is not None:
            raise ProtobufDecodeError("Value sets more than one kind (already %s)" % kind,
                                      data, offset, field, wire_type, where)
        kind, result = _decode_value_kind(data, field, wire_type, offset, value, where, depth)
    if kind is None:
        raise ProtobufDecodeError("Value has no kind set (empty message)", data, pos, where=where)
    return result


def _decode_value_kind(data, field, wire_type, offset, value, where, depth):
    if field == 1:
        _expect(data, offset, field, wire_type, WIRE_VARINT, where, "null_value")
        if value != 0:
            raise ProtobufDecodeError("null_value must be 0, got %d" % value,
                                      data, offset, field, wire_type, where)
        return "null_value", None
    if field == 2:
        _expect(data, offset, field, wire_type, WIRE_FIXED64, where, "number_value")
        return "number_value", _json_number(struct.unpack("<d", value)[0], data, offset, where)
    if field == 3:
        _expect(data, offset, field, wire_type, WIRE_LEN, where, "string_value")
        return "string_value", _utf8_at(data, value, offset, field, where, "string_value")
    if field == 4:
        _expect(data, offset, field, wire_type, WIRE_VARINT, where, "bool_value")
        if value > 1:
            raise ProtobufDecodeError("bool_value must be 0 or 1, got %d" % value,
                                      data, offset, field, wire_type, where)
        return "bool_value", bool(value)
    if field == 5:
        _expect(data, offset, field, wire_type, WIRE_LEN, where, "struct_value")
        return "struct_value", _decode_struct(data, value[0], value[1], where, depth + 1)
    if field == 6:
        _expect(data, offset, field, wire_type, WIRE_LEN, where, "list_value")
        return "list_value", _decode_list(data, value[0], value[1], where, depth + 1)
    raise ProtobufDecodeError("google.protobuf.Value has no field %d" % field,
                              data, offset, field, wire_type, where)


def _json_number(number, data, offset, where):
    if number != number or number in (float("inf"), float("-inf")):
        raise ProtobufDecodeError("number_value %r has no JSON form" % number,
                                  data, offset, 2, WIRE_FIXED64, where)
    if number.is_integer() and abs(number) <= MAX_EXACT_INTEGER:
        return int(number)
    return number


def _decode_struct(data, pos, end, where, depth):
    where += ".struct_value"
    result = {}
    for field, wire_type, offset, span in _iter_fields(data, pos, end, where):
        if field != 1:
            raise ProtobufDecodeError("google.protobuf.Struct has no field %d" % field,
                                      data, offset, field, wire_type, where)
        _expect(data, offset, field, wire_type, WIRE_LEN, where, "fields")
        key, value = _decode_struct_entry(data, span, where, depth)
        if key in result:
            raise ProtobufDecodeError("Struct key %s appears twice" % json.dumps(key),
                                      data, offset, field, wire_type, where)
        result[key] = value
    return result


def _decode_struct_entry(data, span, where, depth):
    key = ""
    value_span = None
    seen = set()
    for field, wire_type, offset, value in _iter_fields(data, span[0], span[1], where):
        _once(seen, data, offset, field, wire_type, where, "map entry field %d" % field)
        if field == 1:
            _expect(data, offset, field, wire_type, WIRE_LEN, where, "map key")
            key = _utf8_at(data, value, offset, field, where, "map key")
        elif field == 2:
            _expect(data, offset, field, wire_type, WIRE_LEN, where, "map value")
            value_span = value
        else:
            raise ProtobufDecodeError("map entry has no field %d" % field,
                                      data, offset, field, wire_type, where)
    if value_span is None:
        raise ProtobufDecodeError("map entry for key %s has no value" % json.dumps(key),
                                  data, span[0], where=where)
    inner = "%s[%s]" % (where, json.dumps(key, ensure_ascii=False))
    return key, _decode_value(data, value_span[0], value_span[1], inner, depth)


def _decode_list(data, pos, end, where, depth):
    where += ".list_value"
    result = []
    for field, wire_type, offset, span in _iter_fields(data, pos, end, where):
        if field != 1:
            raise ProtobufDecodeError("google.protobuf.ListValue has no field %d" % field,
                                      data, offset, field, wire_type, where)
        _expect(data, offset, field, wire_type, WIRE_LEN, where, "values")
        inner = "%s[%d]" % (where, len(result))
        result.append(_decode_value(data, span[0], span[1], inner, depth))
    return result


TOOL_DEFINITION_FIELDS = {1: "name", 2: "description", 3: "input_schema",
                          4: "provider_identifier", 5: "tool_name"}


def _decode_definition(data, pos, end, where):
    # Unknown fields are skipped as protobuf-es skips them, so an error here
    # is the same error Cursor's parser would report for the same bytes.
    tool = {"name": "", "description": "", "input_schema": None,
            "provider_identifier": "", "tool_name": ""}
    seen = set()
    for field, wire_type, offset, span in _iter_fields(data, pos, end, where):
        name = TOOL_DEFINITION_FIELDS.get(field)
        if name is None:
            continue
        _expect(data, offset, field, wire_type, WIRE_LEN, where, name)
        _once(seen, data, offset, field, wire_type, where, name)
        if field == 3:
            if span[1] > span[0]:
                tool[name] = _decode_value(data, span[0], span[1], where + ".input_schema", 0)
        else:
            tool[name] = _utf8_at(data, span, offset, field, where, name)
    return tool


def _decode_mcp_tools(data, pos, end, where):
    tools = []
    for field, wire_type, offset, span in _iter_fields(data, pos, end, where):
        if field != 1:
            continue
        _expect(data, offset, field, wire_type, WIRE_LEN, where, "mcp_tools")
        inner = "%s.mcp_tools[%d]" % (where, len(tools))
        tools.append(_decode_definition(data, span[0], span[1], inner))
    return tools


def decode_mcp_tools(data):
    """Decode a serialized ``McpTools`` message into a list of tool dicts.

    Each dict has name, description, input_schema (decoded JSON, None when
    absent), provider_identifier and tool_name.  Unknown fields are skipped
    like protobuf-es skips them; everything else that is malformed or
    mis-shaped (wrong wire type, repeated singular field, bad UTF-8, an
    input_schema that is not a Value) raises ProtobufDecodeError.
    """
    data = _as_bytes(data)
    return _decode_mcp_tools(data, 0, len(data), "McpTools")


def _other_field(field, wire_type, offset):
    return {"field": field, "wire_type": wire_type, "offset": offset}


def decode_agent_run_request(data):
    """Decode the tool part of an ``AgentRunRequest``.

    Returns ``{"mcp_tools": ..., "other_fields": [...]}``: mcp_tools is None
    when field 4 is absent (Cursor adds its native catalog), [] for the
    empty wrapper, else the decoded tools.  Other fields are listed by
    number, wire type and offset, not decoded.
    """
    data = _as_bytes(data)
    where = "AgentRunRequest"
    result = {"mcp_tools": None, "other_fields": []}
    seen = set()
    for field, wire_type, offset, span in _iter_fields(data, 0, len(data), where):
        if field != 4:
            result["other_fields"].append(_other_field(field, wire_type, offset))
            continue
        _expect(data, offset, field, wire_type, WIRE_LEN, where, "mcp_tools")
        _once(seen, data, offset, field, wire_type, where, "mcp_tools")
        result["mcp_tools"] = _decode_mcp_tools(data, span[0], span[1], where + ".mcp_tools")
    return result


def _decode_instructions(data, span, where):
    item = {"server_name": "", "instructions": ""}
    names = {1: "server_name", 2: "instructions", 3: "server_identifier"}
    seen = set()
    for field, wire_type, offset, value in _iter_fields(data, span[0], span[1], where):
        name = names.get(field)
        if name is None:
            continue
        _expect(data, offset, field, wire_type, WIRE_LEN, where, name)
        _once(seen, data, offset, field, wire_type, where, name)
        item[name] = _utf8_at(data, value, offset, field, where, name)
    return item


def decode_request_context(data):
    """Decode ``RequestContext.tools`` (field 7) and ``mcp_instructions`` (field 14).

    Returns ``{"tools": [...], "mcp_instructions": [...], "other_fields": [...]}``.
    """
    data = _as_bytes(data)
    where = "RequestContext"
    result = {"tools": [], "mcp_instructions": [], "other_fields": []}
    for field, wire_type, offset, span in _iter_fields(data, 0, len(data), where):
        if field == 7:
            _expect(data, offset, field, wire_type, WIRE_LEN, where, "tools")
            inner = "%s.tools[%d]" % (where, len(result["tools"]))
            result["tools"].append(_decode_definition(data, span[0], span[1], inner))
        elif field == 14:
            _expect(data, offset, field, wire_type, WIRE_LEN, where, "mcp_instructions")
            inner = "%s.mcp_instructions[%d]" % (where, len(result["mcp_instructions"]))
            result["mcp_instructions"].append(_decode_instructions(data, span, inner))
        else:
            result["other_fields"].append(_other_field(field, wire_type, offset))
    return result


# -- schema-less decoding, like `protoc --decode_raw` -------------------------


def decode_raw(data):
    """Decode any protobuf message without its schema.

    Returns a list of ``{"field", "wire_type", "offset", <value>}`` dicts
    where the value key is ``varint``, ``fixed64`` (+ ``double``),
    ``fixed32`` (+ ``float``), ``group`` (nested list), or for
    length-delimited fields ``string`` (valid UTF-8 text), ``message`` (a
    nested list, when the payload parses as one) or ``bytes`` (hex).
    Malformed input raises ProtobufDecodeError, with the same details as the
    typed decoders.
    """
    data = _as_bytes(data)
    fields, _ = _decode_raw_fields(data, 0, len(data), 0, None)
    return fields


def _decode_raw_fields(data, pos, end, depth, group):
    """Parse data[pos:end]; inside a group, stop at its end tag and return the position."""
    fields = []
    where = "message" if group is None else "group %d" % group
    while pos < end:
        tag_pos = pos
        field, wire_type, pos = _read_tag(data, pos, end, where)
        if wire_type == WIRE_END_GROUP:
            if field != group:
                raise ProtobufDecodeError("end-group tag without a matching start-group",
                                          data, tag_pos, field, wire_type, where)
            return fields, pos
        item = {"field": field, "wire_type": wire_type, "offset": tag_pos}
        pos = _decode_raw_value(data, pos, end, depth, item, where)
        fields.append(item)
    if group is not None:
        raise ProtobufDecodeError("data ends inside group %d" % group,
                                  data, pos, group, WIRE_START_GROUP, where)
    return fields, pos


def _decode_raw_value(data, pos, end, depth, item, where):
    field, wire_type = item["field"], item["wire_type"]
    if wire_type == WIRE_VARINT:
        item["varint"], pos = _read_varint(data, pos, end, where, field, wire_type)
    elif wire_type == WIRE_FIXED64:
        start, pos = pos, _skip_fixed(data, pos, end, where, field, wire_type, 8)
        item["fixed64"] = struct.unpack("<Q", data[start:pos])[0]
        _add_finite(item, "double", struct.unpack("<d", data[start:pos])[0])
    elif wire_type == WIRE_FIXED32:
        start, pos = pos, _skip_fixed(data, pos, end, where, field, wire_type, 4)
        item["fixed32"] = struct.unpack("<I", data[start:pos])[0]
        _add_finite(item, "float", struct.unpack("<f", data[start:pos])[0])
    elif wire_type == WIRE_START_GROUP:
        if depth >= MAX_RAW_DEPTH:
            raise ProtobufDecodeError("groups nested deeper than %d" % MAX_RAW_DEPTH,
                                      data, pos, field, wire_type, where)
        item["group"], pos = _decode_raw_fields(data, pos, end, depth + 1, field)
    else:
        start, pos = _read_length(data, pos, end, where, field)
        item.update(_guess_payload(data, start, pos, depth))
    return pos


def _add_finite(item, key, number):
    if number == number and number not in (float("inf"), float("-inf")):
        item[key] = number


def _guess_payload(data, start, end, depth):
    # Text is the likelier reading when every byte is printable: a message
    # almost always holds a control byte (small lengths, tags 0x08-0x1A).
    payload = data[start:end]
    text = None
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError:
        pass
    if text is not None and all(_is_text_byte(b) for b in payload):
        return {"string": text}
    if depth < MAX_RAW_DEPTH:
        try:
            return {"message": _decode_raw_fields(data, start, end, depth + 1, None)[0]}
        except ProtobufDecodeError:
            pass
    if text is not None:
        return {"string": text}
    return {"bytes": payload.hex()}


# ---------------------------------------------------------------------------
# Tool catalog: normalising tool lists, tool_choice filtering, Cursor names
# ---------------------------------------------------------------------------

# Clients describe tools in four dialects (Responses, Chat Completions, MCP,
# Anthropic).  Everything downstream works on one normalised form:
#
#     {"type": "function" | "custom", "name": raw name, "namespace": ns (if any),
#      "wire_name": ns + "__" + name or name, "description": str,
#      "input_schema": JSON Schema object, "freeform": True (custom tools only)}
#
# normalize_tools() accepts that form too, so normalising twice is harmless.

CURSOR_PROVIDER = "opencodex-responses"

# Tools the model provider runs itself: they carry no schema a client could
# execute, so they cannot be advertised as callable functions.
HOSTED_TOOL_TYPES = frozenset([
    "web_search", "web_search_preview", "web_search_preview_2025_03_11", "image_generation",
    "file_search", "code_interpreter", "computer_use_preview", "computer_use", "mcp",
    "local_shell",
])
# Anthropic's versioned built-in tools (bash_20250124, web_search_20250305...).
DATED_TOOL_TYPE_RE = re.compile(r"^[a-z_]+_\d{8}$")

SCHEMA_KEYS = ("parameters", "inputSchema", "input_schema")

# Codex puts plain functions in a reserved namespace that is not part of their name.
FLATTENED_NAMESPACES = frozenset(["functions"])


def default_input_schema():
    """The schema used when a tool has none, or one that is not a JSON object."""
    return {"type": "object", "properties": {}}


def freeform_input_schema():
    """The schema a freeform (``custom``) tool is advertised with: one required string."""
    return {"type": "object", "properties": {"input": {"type": "string"}},
            "required": ["input"], "additionalProperties": False}


def split_catalog(document):
    """Return (tools list, tool_choice or None) from any accepted catalog document.

    Accepted: a bare tools array; a request body with ``tools`` (and maybe
    ``tool_choice``); an MCP ``tools/list`` result, or the whole JSON-RPC
    response holding it; a single tool object.
    """
    if isinstance(document, list):
        return document, None
    if isinstance(document, dict):
        if isinstance(document.get("tools"), list):
            return document["tools"], document.get("tool_choice")
        result = document.get("result")
        if isinstance(result, dict) and isinstance(result.get("tools"), list):
            return result["tools"], None
        if isinstance(document.get("name"), str) or isinstance(document.get("function"), dict):
            return [document], None
    raise OcxError("expected a tools array, a request body with \"tools\", an MCP tools/list "
                   "result or one tool object; got %s" % _json_kind(document))


def _json_kind(value):
    if isinstance(value, dict):
        keys = ", ".join(sorted(value)[:5])
        return "an object with keys [%s]" % keys if keys else "an empty object"
    if isinstance(value, list):
        return "an array"
    return "a JSON %s" % type(value).__name__


def tool_wire_name(name, namespace=None):
    """The name a tool travels under: ``ns__name`` when namespaced, else ``name``."""
    if namespace and namespace not in FLATTENED_NAMESPACES:
        return "%s__%s" % (namespace, name)
    return name


def normalize_tools(tools, notes=None):
    """Normalise a tool catalog in any client dialect; see the section comment.

    ``tools`` is a list, or any document split_catalog() accepts.  Hosted
    tools without a schema (web_search, image_generation...) and repeated
    wire names are dropped; each drop adds a sentence to ``notes`` when a
    list is given, else it is logged.  A tool of unknown shape raises OcxError
    naming its index.
    """
    if not isinstance(tools, list):
        tools = split_catalog(tools)[0]
    own_notes = [] if notes is None else notes
    result = []
    seen = set()
    for index, tool in enumerate(tools):
        for item in _normalize_entry(tool, "tools[%d]" % index, None, own_notes):
            if item["wire_name"] in seen:
                own_notes.append("dropped a second tool named %s" % item["wire_name"])
                continue
            seen.add(item["wire_name"])
            result.append(item)
    if notes is None:
        for note in own_notes:
            log.info(note)
    return result


def _normalize_entry(tool, where, namespace, notes):
    """Normalised tools for one catalog entry (a namespace gives several)."""
    if not isinstance(tool, dict):
        raise OcxError("%s: expected a tool object, got %s" % (where, _json_kind(tool)))
    kind = tool.get("type")
    if kind == "function" and isinstance(tool.get("function"), dict):
        tool = tool["function"]  # Chat Completions nests the definition
    if kind == "namespace":
        return _normalize_namespace(tool, where, namespace, notes)
    if kind in HOSTED_TOOL_TYPES or (isinstance(kind, str) and DATED_TOOL_TYPE_RE.match(kind)
                                     and not _has_schema(tool)):
        notes.append("dropped hosted tool %s (%s): it has no schema a client can run"
                     % (where, kind))
        return []
    name = tool.get("name")
    if name is None and kind == "tool_search":
        name = "tool_search"
    if not isinstance(name, str) or not name:
        raise OcxError("%s: unknown tool shape: no \"name\" string (type %s)"
                       % (where, json.dumps(kind)))
    return [_normalized(tool, where, name, tool.get("namespace", namespace), kind)]


def _has_schema(tool):
    return any(key in tool for key in SCHEMA_KEYS)


def _normalize_namespace(tool, where, namespace, notes):
    if namespace is not None:
        raise OcxError("%s: a namespace inside namespace %s is not supported" % (where, namespace))
    name = tool.get("name")
    children = tool.get("tools")
    if not isinstance(name, str) or not name or not isinstance(children, list):
        raise OcxError("%s: a namespace needs a \"name\" string and a \"tools\" array" % where)
    result = []
    for index, child in enumerate(children):
        result.extend(_normalize_entry(child, "%s.tools[%d]" % (where, index), name, notes))
    return result


def _normalized(tool, where, name, namespace, kind):
    if namespace is not None and (not isinstance(namespace, str) or not namespace):
        raise OcxError("%s: \"namespace\" must be a non-empty string" % where)
    if namespace in FLATTENED_NAMESPACES:
        namespace = None
    description = tool.get("description")
    if description is None:
        description = ""
    if not isinstance(description, str):
        raise OcxError("%s: \"description\" must be a string" % where)
    # OpenAI's freeform tools are "custom" without a schema; Anthropic's
    # "custom" tools do carry input_schema and are ordinary functions.
    freeform = kind == "custom" and (tool.get("freeform") is True or not _has_schema(tool))
    item = {"type": "custom" if freeform else "function", "name": name}
    if namespace:
        item["namespace"] = namespace
    item["wire_name"] = tool_wire_name(name, namespace)
    item["description"] = description
    item["input_schema"] = freeform_input_schema() if freeform else _schema_of(tool)
    if freeform:
        item["freeform"] = True
    return item


def _schema_of(tool):
    for key in SCHEMA_KEYS:
        if key in tool:
            schema = tool[key]
            return schema if isinstance(schema, dict) else default_input_schema()
    return default_input_schema()


def filter_tools(tools, tool_choice):
    """The tools a ``tool_choice`` allows, in catalog order.

    ``None``, ``"auto"`` and ``"required"`` (Anthropic ``auto``/``any``)
    keep all; ``"none"`` keeps none; a named choice (Responses
    ``{"type": "function", "name": ...}``, Chat ``{"type": "function",
    "function": {"name": ...}}``, Anthropic ``{"type": "tool", "name": ...}``)
    or ``{"type": "allowed_tools", "tools": [...]}`` keeps the tools matching
    a listed name by raw name, wire name (``ns__name``) or ``ns.name``.  The
    allowed_tools ``mode`` does not change which tools are kept.
    """
    tools = normalize_tools(tools)
    names = tool_choice_names(tool_choice)
    if names is None:
        return tools
    return [tool for tool in tools if tool_matches(tool, names)]


def tool_choice_names(tool_choice):
    """None when a choice keeps every tool, else the set of names it allows."""
    if tool_choice is None or tool_choice in ("auto", "required"):
        return None
    if tool_choice == "none":
        return set()
    if not isinstance(tool_choice, dict):
        raise OcxError("unsupported tool_choice %s: expected \"auto\", \"none\", \"required\" "
                       "or an object" % json.dumps(tool_choice))
    kind = tool_choice.get("type")
    if kind in ("auto", "any", "required"):
        return None
    if kind == "none":
        return set()
    if kind in ("function", "custom", "tool"):
        name = _entry_name(tool_choice)
        if name is None:
            raise OcxError("tool_choice of type %s names no tool" % kind)
        return set([name])
    if kind == "allowed_tools":
        return _allowed_names(tool_choice)
    if kind in HOSTED_TOOL_TYPES:
        return None  # a hosted tool was chosen; its absence leaves the functions as "auto"
    raise OcxError("unsupported tool_choice type %s" % json.dumps(kind))


def _entry_name(entry):
    if isinstance(entry, str):
        return entry
    if not isinstance(entry, dict):
        return None
    name = entry.get("name")
    if not isinstance(name, str) and isinstance(entry.get("function"), dict):
        name = entry["function"].get("name")
    return name if isinstance(name, str) and name else None


def _allowed_names(tool_choice):
    # Responses: {"type":"allowed_tools","mode":...,"tools":[...]};
    # Chat Completions: {"type":"allowed_tools","allowed_tools":{"mode":...,"tools":[...]}}.
    entries = tool_choice.get("tools")
    nested = tool_choice.get("allowed_tools")
    if entries is None and isinstance(nested, dict):
        entries = nested.get("tools")
    if not isinstance(entries, list):
        raise OcxError("tool_choice allowed_tools needs a \"tools\" array")
    return set(name for name in map(_entry_name, entries) if name is not None)


def tool_matches(tool, names):
    """True when a normalised tool answers to one of ``names``."""
    if tool["name"] in names or tool["wire_name"] in names:
        return True
    namespace = tool.get("namespace")
    return bool(namespace) and "%s.%s" % (namespace, tool["name"]) in names


def _tool_definition(tool, provider_identifier):
    try:
        return encode_tool_definition(tool["wire_name"], tool["description"], tool["input_schema"],
                                      provider_identifier, tool["wire_name"])
    except OcxError as exc:
        raise OcxError("tool %s: input_schema: %s" % (tool["wire_name"], exc))


def encode_mcp_tools(tools, tool_choice=None, provider_identifier=CURSOR_PROVIDER):
    """Serialize a catalog as Cursor's ``McpTools`` message.

    ``tools`` is anything normalize_tools() accepts; ``tool_choice`` filters
    it (filter_tools).  Each survivor becomes a McpToolDefinition whose
    ``name`` and ``tool_name`` are its wire name.  Returns b"" when no tool
    survives.  Crossing Cursor's limits (about 330 tools or 120,000 bytes)
    logs a warning; nothing is truncated.
    """
    selected = filter_tools(tools, tool_choice)
    data = encode_mcp_tools_message(_tool_definition(tool, provider_identifier)
                                    for tool in selected)
    for warning in cursor_limit_warnings(len(selected), len(data)):
        log.warning(warning)
    return data


def encode_request_context(tools=(), mcp_instructions=None, tool_choice=None,
                           provider_identifier=CURSOR_PROVIDER):
    """Serialize the second channel, ``RequestContext``, with only tool fields set.

    ``tools`` go to field 7 as the same McpToolDefinition entries
    encode_mcp_tools writes; ``mcp_instructions`` (field 14) is None, a
    string (filed under ``provider_identifier`` as server name), a
    ``{"server_name", "instructions"}`` dict or a list of those.  Cursor
    describes these tools to the model but does not make them callable:
    that takes AgentRunRequest.mcp_tools.
    """
    selected = filter_tools(tools, tool_choice) if tools else []
    definitions = [_tool_definition(tool, provider_identifier) for tool in selected]
    instructions = [encode_mcp_instructions(item.get("server_name", ""), item.get("instructions", ""))
                    for item in _instruction_items(mcp_instructions, provider_identifier)]
    return encode_request_context_message(definitions, instructions)


def _instruction_items(mcp_instructions, provider_identifier):
    if mcp_instructions is None:
        return []
    if isinstance(mcp_instructions, str):
        return [{"server_name": provider_identifier, "instructions": mcp_instructions}]
    if isinstance(mcp_instructions, dict):
        mcp_instructions = [mcp_instructions]
    if not isinstance(mcp_instructions, list) or not all(
            isinstance(item, dict) and all(isinstance(item.get(key, ""), str)
                                           for key in ("server_name", "instructions"))
            for item in mcp_instructions):
        raise OcxError("mcp_instructions must be a string, an object with string "
                       "server_name/instructions, or a list of such objects")
    return mcp_instructions


def cursor_display_name(tool, provider_identifier=None):
    """The name Cursor shows the model: ``mcp_<provider>_<tool>``.

    ``tool`` is a wire name, a decoded definition (provider_identifier and
    tool_name) or a normalised tool (wire_name; provider defaults to
    CURSOR_PROVIDER).
    """
    if isinstance(tool, dict):
        name = tool.get("tool_name") or tool.get("wire_name") or tool.get("name")
        provider = provider_identifier or tool.get("provider_identifier") or CURSOR_PROVIDER
    else:
        name, provider = tool, provider_identifier or CURSOR_PROVIDER
    return "mcp_%s_%s" % (provider, name)


def normalize_cursor_wire_name(name, provider_identifier=CURSOR_PROVIDER):
    """Fold a display name the model echoed (``mcp_<provider>_x``) back to ``x``.

    Only that exact prefix is removed: ``mcp_`` alone is the start of many
    real tool names (``mcp__fs__read_file``).
    """
    prefix = "mcp_%s_" % provider_identifier
    if name.startswith(prefix) and len(name) > len(prefix):
        return name[len(prefix):]
    return name


# ---------------------------------------------------------------------------
# Capture: capture-only MCP bridge (advertise a catalog, record calls)
# ---------------------------------------------------------------------------

# An agent CLI run with its built-in tools off has no legitimate way to ask
# for a tool.  This MCP server gives it one: it advertises exactly the
# caller's catalog, turns each tools/call into an OpenAI Responses
# function_call line and never runs anything.  Execution, approval and
# sandboxing stay with the outer client.

import stat  # imported here so this section merges without touching the header

CAPTURE_MAX_CATALOG_BYTES = 2 * 1024 * 1024
CAPTURE_MAX_TOOLS = 128
CAPTURE_MAX_SCHEMA_DEPTH = 32
CAPTURE_EXIT_REFUSED = 3
CAPTURE_REFUSED = -32010  # too many calls: a server-defined code, distinct from the relay's
CAPTURE_PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")

# mcp__<server>__<alias> must stay within the 64 characters agent CLIs allow:
# 5 + 17 + 2 + 40 = 64.
ALIAS_RE = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
SERVER_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,17}$")
ALIAS_HASH_CHARS = 16
ALIAS_PREFIX_CHARS = 40 - 1 - ALIAS_HASH_CHARS


def load_capture_catalog(path, tool_choice=None):
    """Read, bound-check and filter a catalog file; return (tools, tool_choice used).

    The file must be a regular file of at most 2 MiB that does not change
    while it is read.  ``tool_choice`` (None: the document's own) filters it;
    at most 128 tools may remain, each schema at most 32 levels deep and
    with no external ``$ref``.  Any violation raises OcxError naming the
    limit.
    """
    data = _read_bounded_regular_file(path, CAPTURE_MAX_CATALOG_BYTES)
    try:
        document = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise OcxError("catalog %s is not valid JSON: %s" % (path, exc))
    except RecursionError:
        raise OcxError("catalog %s is nested too deeply to parse" % path)
    tools, body_choice = split_catalog(document)
    choice = body_choice if tool_choice is None else tool_choice
    notes = []
    selected = filter_tools(normalize_tools(tools, notes), choice)
    _check_capture_choice(choice, selected)
    if len(selected) > CAPTURE_MAX_TOOLS:
        raise OcxError("catalog limit: %d tools to advertise, at most %d"
                       % (len(selected), CAPTURE_MAX_TOOLS))
    for tool in selected:
        _check_capture_schema(tool)
    for note in notes:  # only once the catalog is accepted, so an error stays one line
        log.info(note)
    return selected, choice


def _read_bounded_regular_file(path, limit):
    # O_NONBLOCK keeps a FIFO from blocking the open; fstat then refuses it.
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise OcxError("cannot open catalog %s: %s" % (path, exc.strerror or exc))
    try:
        before = os.fstat(fd)
        if not stat.S_ISREG(before.st_mode):
            raise OcxError("catalog limit: %s is not a regular file" % path)
        if before.st_size > limit:
            raise OcxError("catalog limit: %s is %d bytes, at most %d"
                           % (path, before.st_size, limit))
        data = _read_at_most(fd, limit + 1)
        after = os.fstat(fd)
    except OSError as exc:
        raise OcxError("cannot read catalog %s: %s" % (path, exc.strerror or exc))
    finally:
        os.close(fd)
    if len(data) > limit:
        raise OcxError("catalog limit: %s grew past %d bytes while being read" % (path, limit))
    if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns) \
            or len(data) != before.st_size:
        raise OcxError("catalog %s changed while being read" % path)
    return data


def _read_at_most(fd, size):
    chunks = []
    while size > 0:
        chunk = os.read(fd, min(size, 1 << 16))
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _check_capture_choice(choice, selected):
    names = tool_choice_names(choice)
    if names and not selected:
        raise OcxError("tool_choice %s matches no tool in the catalog" % dumps(choice))
    if choice in ("required", {"type": "any"}) and not selected:
        raise OcxError("tool_choice requires a tool call but the catalog has no tool")


def _check_capture_schema(tool):
    stack = [(tool["input_schema"], 1)]
    while stack:
        node, depth = stack.pop()
        if depth > CAPTURE_MAX_SCHEMA_DEPTH:
            raise OcxError("catalog limit: tool %s has an input schema deeper than %d levels"
                           % (tool["wire_name"], CAPTURE_MAX_SCHEMA_DEPTH))
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and not ref.startswith("#"):
                raise OcxError("catalog limit: tool %s has an external $ref %s; only local "
                               "#/... references are allowed" % (tool["wire_name"], json.dumps(ref)))
            stack.extend((value, depth + 1) for value in node.values()
                         if isinstance(value, (dict, list)))
        elif isinstance(node, list):
            stack.extend((value, depth + 1) for value in node if isinstance(value, (dict, list)))


def capture_aliases(wire_names):
    """Map each wire name to an alias matching ``^[A-Za-z0-9_-]{1,40}$``.

    A name that fits is its own alias and is reserved first.  The others get
    a cleaned prefix plus 16 hex characters of the name's sha256, assigned
    in sorted order and re-hashed on a clash, so the result does not depend
    on catalog order.
    """
    aliases = {}
    for name in wire_names:
        if ALIAS_RE.match(name):
            aliases[name] = name
    taken = set(aliases.values())
    for name in sorted(set(wire_names) - set(aliases)):
        attempt = 0
        alias = _hashed_alias(name, attempt)
        while alias in taken:
            attempt += 1
            alias = _hashed_alias(name, attempt)
        aliases[name] = alias
        taken.add(alias)
    return aliases


def _hashed_alias(name, attempt):
    seed = name if attempt == 0 else "%s\x00%d" % (name, attempt)
    digest = hashlib.sha256(seed.encode("utf-8", "surrogatepass")).hexdigest()
    prefix = re.sub(r"[^A-Za-z0-9_-]+", "_", name)[:ALIAS_PREFIX_CHARS]
    return "%s_%s" % (prefix, digest[:ALIAS_HASH_CHARS])


def capture_allowed_tools(server_name, aliases):
    """The exact ``--allowedTools`` value: ``mcp__<server>__<alias>``, comma-joined."""
    return ",".join("mcp__%s__%s" % (server_name, alias) for alias in aliases)


class CaptureSession:
    """One capture-only MCP session, independent of any transport.

    ``handle_line`` takes one JSON-RPC line and returns the messages to send
    back (possibly none).  Accepted calls and refusals are written to
    ``out`` (a binary file) as NDJSON and flushed at once.  ``failed`` turns
    true on the first refusal; the process then exits with status 3.
    """

    def __init__(self, tools, out, server_name="opencodex", max_calls=16,
                 max_argument_bytes=65536, reply="pending", page_size=50):
        self.out = out
        self.server_name = server_name
        self.max_calls = max_calls
        self.max_argument_bytes = max_argument_bytes
        self.reply = reply
        self.page_size = page_size
        aliases = capture_aliases([tool["wire_name"] for tool in tools])
        self.by_alias = {}
        self.listing = []
        for tool in tools:
            alias = aliases[tool["wire_name"]]
            self.by_alias[alias] = tool
            self.listing.append(_mcp_tool_entry(alias, tool))
        self.initialized = False
        self.calls = 0
        self.failed = False

    def handle_line(self, line):
        if line is None:
            return [self._refuse(None, INVALID_REQUEST, "line_too_large",
                                 "message longer than the line limit")]
        if not line.strip():
            return []
        try:
            message = parse_message(line)
        except (UnicodeDecodeError, ValueError, RecursionError):
            return [self._refuse(None, PARSE_ERROR, "parse_error", "line is not JSON")]
        if isinstance(message, list):
            replies = [reply for reply in map(self.handle, message) if reply is not None]
            return [replies] if replies else []
        reply = self.handle(message)
        return [] if reply is None else [reply]

    def handle(self, message):
        """Answer one JSON-RPC message; None when nothing is to be sent."""
        kind = message_kind(message)
        if kind == "response":
            return None  # this server sends no requests; a stray answer changes nothing
        if kind is None:
            msg_id = message.get("id") if isinstance(message, dict) else None
            return self._refuse(msg_id, INVALID_REQUEST, "invalid_request",
                                "not a JSON-RPC request or notification")
        method = message["method"]
        if kind == "notification":
            if method == "tools/call":
                return self._refuse(None, INVALID_REQUEST, "invalid_request",
                                    "tools/call sent as a notification (no id)")
            return None
        msg_id = message["id"]
        params = message.get("params")
        if params is None:
            params = {}
        if method == "initialize":
            return self._initialize(msg_id, params)
        if method == "ping":
            return _result(msg_id, {})
        if method == "tools/call":
            return self._call(msg_id, params)
        if not self.initialized:
            return error_response(msg_id, INVALID_REQUEST, "server not initialized")
        if method == "tools/list":
            return self._list(msg_id, params)
        return error_response(msg_id, METHOD_NOT_FOUND, "method not found: %s" % method)

    def _initialize(self, msg_id, params):
        requested = params.get("protocolVersion") if isinstance(params, dict) else None
        version = requested if requested in CAPTURE_PROTOCOL_VERSIONS else CAPTURE_PROTOCOL_VERSIONS[0]
        self.initialized = True
        return _result(msg_id, {
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": self.server_name, "version": __version__},
            "instructions": "Tools here are captured for the client to run; results come in "
                            "the next turn.",
        })

    def _list(self, msg_id, params):
        cursor = params.get("cursor") if isinstance(params, dict) else None
        start = 0
        if cursor is not None:
            if not isinstance(cursor, str) or not cursor.isdigit() \
                    or int(cursor) > len(self.listing):
                return error_response(msg_id, INVALID_PARAMS, "invalid cursor")
            start = int(cursor)
        end = start + self.page_size
        result = {"tools": self.listing[start:end]}
        if end < len(self.listing):
            result["nextCursor"] = str(end)
        return _result(msg_id, result)

    def _call(self, msg_id, params):
        name = params.get("name") if isinstance(params, dict) else None
        if not self.initialized:
            return self._refuse(msg_id, INVALID_REQUEST, "not_initialized",
                                "tools/call before initialize", name)
        tool = self.by_alias.get(name) if isinstance(name, str) else None
        if tool is None:
            return self._refuse(msg_id, INVALID_PARAMS, "unknown_tool",
                                "unknown tool: %s" % _short(name), name)
        arguments = params.get("arguments", {})
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            return self._refuse(msg_id, INVALID_PARAMS, "bad_arguments",
                                "arguments must be a JSON object", name)
        text = dumps(arguments)
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > self.max_argument_bytes:
            return self._refuse(msg_id, INVALID_PARAMS, "arguments_too_large",
                                "arguments are %d bytes, over --max-argument-bytes %d"
                                % (size, self.max_argument_bytes), name)
        if self.calls >= self.max_calls:
            return self._refuse(msg_id, CAPTURE_REFUSED, "too_many_calls",
                                "more than --max-calls %d calls in this session" % self.max_calls,
                                name)
        record = _call_record(tool, arguments, text)
        if record is None:
            return self._refuse(msg_id, INVALID_PARAMS, "bad_arguments",
                                "freeform tool %s takes one string argument \"input\""
                                % tool["wire_name"], name)
        self.calls += 1
        self._write(record)
        log.info("captured %s: %s" % (record["call_id"], tool["wire_name"]))
        if self.reply == "pending":
            return None  # the outer client ends the turn; this call is never answered
        return _result(msg_id, {"content": [{"type": "text", "text": (
            "Call %s to %s was captured; the client will run it and report the result in "
            "the next turn." % (record["call_id"], tool["wire_name"]))}], "isError": False})

    def _refuse(self, msg_id, code, reason, message, name=None):
        self.failed = True
        record = {"type": "capture_error", "reason": reason, "message": message}
        if name is not None:
            record["name"] = name
        if msg_id is not None:
            record["request_id"] = msg_id
        self._write(record)
        log.warning("refused: %s" % message)
        return error_response(msg_id, code, message, {"reason": reason})

    def _write(self, record):
        self.out.write(encode_message(record))
        self.out.flush()


def _result(msg_id, result):
    return {"jsonrpc": "2.0", "id": msg_id, "result": result}


def _short(value):
    text = value if isinstance(value, str) else dumps(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _mcp_tool_entry(alias, tool):
    entry = {"name": alias}
    if alias != tool["wire_name"]:
        entry["title"] = tool["wire_name"]
    if tool["description"]:
        entry["description"] = tool["description"]
    entry["inputSchema"] = tool["input_schema"]
    return entry


def _call_record(tool, arguments, text):
    """The Responses output item for an accepted call; None for a bad freeform call."""
    call_id = "call_" + os.urandom(12).hex()
    if tool.get("freeform"):
        # A freeform (custom) tool is answered as a custom_tool_call carrying the raw input.
        if set(arguments) != set(["input"]) or not isinstance(arguments["input"], str):
            return None
        return {"type": "custom_tool_call", "call_id": call_id, "name": tool["wire_name"],
                "input": arguments["input"]}
    return {"type": "function_call", "call_id": call_id, "name": tool["wire_name"],
            "arguments": text}


def check_capture_output(spec):
    """Refuse a bad ``--out`` before any work: ``-``, stdout, stdin, a closed fd:N."""
    if spec in ("-", "/dev/stdout"):
        raise UsageError("--out cannot be standard output: stdout carries the MCP channel")
    if not spec.startswith("fd:"):
        return
    if not spec[3:].isdigit():
        raise UsageError("--out fd:N needs a file descriptor number, got %r" % spec)
    number = int(spec[3:])
    if number in (0, 1):
        raise UsageError("--out fd:%d is the MCP channel" % number)
    try:
        os.fstat(number)
    except OSError as exc:
        raise UsageError("--out %s is not an open file descriptor (%s)"
                         % (spec, exc.strerror or exc))


def open_capture_output(spec):
    """``--out``: FILE (appended to) or ``fd:N``; checked by check_capture_output first."""
    check_capture_output(spec)
    if spec.startswith("fd:"):
        return os.fdopen(int(spec[3:]), "wb")
    try:
        return open(spec, "ab")
    except OSError as exc:
        raise OcxError("cannot open --out %s: %s" % (spec, exc.strerror or exc))


def read_capped_lines(stream, limit):
    """Yield lines from a binary stream without CR/LF; None for a line over ``limit``."""
    while True:
        line = stream.readline(limit + 1)
        if not line:
            return
        if len(line) > limit and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):
                line = stream.readline(limit + 1)  # drop the rest of the oversized line
            yield None
            continue
        yield line.rstrip(b"\r\n")


def serve_capture(session, stdin, stdout, line_limit):
    """Run ``session`` over binary streams until stdin closes; return the exit status."""
    for line in read_capped_lines(stdin, line_limit):
        for reply in session.handle_line(line):
            try:
                stdout.write(encode_message(reply))
                stdout.flush()
            except (BrokenPipeError, ValueError):
                log.warning("the MCP client closed stdout; stopping")
                return CAPTURE_EXIT_REFUSED if session.failed else 0
    if session.failed:
        log.warning("session had refused calls: exit status %d" % CAPTURE_EXIT_REFUSED)
        return CAPTURE_EXIT_REFUSED
    return 0


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

def load_json_input(source, what):
    """Read and parse a JSON document from FILE or ``-``; OcxError naming ``what``."""
    data = read_input_bytes(source)
    label = "stdin" if source in (None, "-") else source
    try:
        return json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise OcxError("%s (%s) is not UTF-8 text: %s" % (what, label, exc.reason))
    except ValueError as exc:
        raise OcxError("%s (%s) is not valid JSON: %s" % (what, label, exc))
    except RecursionError:
        raise OcxError("%s (%s) is nested too deeply to parse" % (what, label))


def parse_tool_choice_arg(text):
    """``--tool-choice``: auto/none/required as bare words, anything else as JSON."""
    if text in ("auto", "none", "required"):
        return text
    try:
        return json.loads(text)
    except ValueError:
        raise UsageError("--tool-choice must be auto, none, required or JSON "
                         "such as '{\"type\":\"function\",\"name\":\"x\"}'; got %r" % text)


HEX_INPUT_RE = re.compile(rb"^(0x)?[0-9A-Fa-f \t\r\n]*$")
BASE64_INPUT_RE = re.compile(rb"^[A-Za-z0-9+/_\-= \t\r\n]*$")


def decode_input_format(data, fmt):
    """Turn ``decode`` input into protobuf bytes: raw, hex, base64 or auto-detected."""
    if fmt == "auto":
        fmt = _detect_format(data)
    if fmt == "hex":
        return _from_hex(data)
    if fmt == "base64":
        return _from_base64(data)
    return data


def _detect_format(data):
    # A serialized message nearly always holds a byte outside these alphabets
    # (small lengths and tags are control characters), so text means encoded.
    if not data.strip():
        return "raw"
    if HEX_INPUT_RE.match(data):
        return "hex"
    if BASE64_INPUT_RE.match(data):
        return "base64"
    return "raw"


def _from_hex(data):
    text = re.sub(rb"\s+", b"", data)
    if text[:2] in (b"0x", b"0X"):
        text = text[2:]
    try:
        return bytes.fromhex(text.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        raise OcxError("input is not valid hex (%d digits; need pairs of 0-9a-f)" % len(text))


def _from_base64(data):
    text = re.sub(rb"\s+", b"", data)
    altchars = b"-_" if (b"-" in text or b"_" in text) else None
    text += b"=" * (-len(text) % 4)
    try:
        return base64.b64decode(text, altchars=altchars, validate=True)
    except (ValueError, TypeError):
        raise OcxError("input is not valid base64")


def write_binary_output(data, fmt):
    """Write encoder output to stdout as raw bytes, or hex/base64 text plus newline."""
    if fmt == "hex":
        data = data.hex().encode("ascii") + b"\n"
    elif fmt == "base64":
        data = base64.b64encode(data) + b"\n"
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def cmd_encode_tools(args):
    """``encode-tools``: a JSON catalog in, Cursor protobuf out, a summary on stderr."""
    document = load_json_input(args.file, "tool catalog")
    tools, body_choice = split_catalog(document)
    if args.tool_choice is None:
        tool_choice = body_choice
    else:
        tool_choice = parse_tool_choice_arg(args.tool_choice)
    notes = []
    normalized = normalize_tools(tools, notes)
    for note in notes:
        log.info(note)
    selected = filter_tools(normalized, tool_choice)
    names = tool_choice_names(tool_choice)
    if names and not selected:
        log.warning("tool_choice %s matches no tool in the catalog" % dumps(tool_choice))
    mcp_tools = encode_mcp_tools(selected, None, args.provider)
    if args.wrap == "agent-run-request":
        output = encode_agent_run_request(mcp_tools, empty_wrapper=args.when_empty == "suppress")
    elif args.wrap == "request-context":
        output = encode_request_context(selected, args.instructions, None, args.provider)
    else:
        output = mcp_tools
    for warning in cursor_limit_warnings(0, 0, len(output)):
        log.warning(warning)
    fmt = args.format or ("hex" if sys.stdout.isatty() else "raw")
    write_binary_output(output, fmt)
    log.info("encode-tools: %d tools in, %d out; McpTools %d bytes, %s %d bytes as %s "
             "(Cursor limits: %d tools, %d bytes McpTools, 1 MiB per message)"
             % (len(normalized) + len(notes), len(selected), len(mcp_tools), args.wrap,
                len(output), fmt, CURSOR_MAX_TOOLS, CURSOR_MAX_MCP_TOOLS_BYTES))
    return 0


DECODERS = {
    "raw": decode_raw,
    "value": decode_value,
    "mcp-tools": decode_mcp_tools,
    "agent-run-request": decode_agent_run_request,
    "request-context": decode_request_context,
}


def cmd_decode(args):
    """``decode``: protobuf bytes (raw, hex or base64) in, JSON on stdout."""
    data = decode_input_format(read_input_bytes(args.file), args.format)
    result = DECODERS[args.as_type](data)
    if args.as_type == "agent-run-request":
        if result["mcp_tools"] is None:
            log.info("mcp_tools is absent: Cursor adds its default native tool catalog")
        elif not result["mcp_tools"]:
            log.info("mcp_tools is an empty wrapper (22 00): Cursor's native catalog is suppressed")
    text = json.dumps(result, indent=2, ensure_ascii=False) + "\n"
    sys.stdout.buffer.write(text.encode("utf-8"))
    sys.stdout.buffer.flush()
    return 0


def register_protobuf_commands(sub):
    """Add ``encode-tools`` and ``decode`` to the subcommand parser ``sub``."""
    p = sub.add_parser(
        "encode-tools", help="encode a tool catalog as Cursor's McpTools protobuf",
        description="Read a tool catalog (Responses, Chat Completions, MCP tools/list or "
                    "Anthropic JSON), apply tool_choice and write the protobuf Cursor's agent "
                    "service takes in AgentRunRequest.mcp_tools.  A summary goes to stderr.")
    p.add_argument("file", nargs="?", default="-", metavar="FILE",
                   help="JSON catalog: a tools array, a request body with \"tools\", an MCP "
                        "tools/list result (default: -, standard input)")
    p.add_argument("--tool-choice", metavar="JSON",
                   help="auto, none, required or a JSON tool_choice object (default: the "
                        "document's own tool_choice, else every tool is kept)")
    p.add_argument("--provider", metavar="ID", default=CURSOR_PROVIDER,
                   help="provider_identifier of every definition (default: %(default)s)")
    p.add_argument("--wrap", choices=["mcp-tools", "agent-run-request", "request-context"],
                   default="mcp-tools",
                   help="message to write: McpTools itself, an AgentRunRequest holding it in "
                        "field 4, or a RequestContext with the tools in field 7 "
                        "(default: %(default)s)")
    p.add_argument("--when-empty", choices=["suppress", "absent"], default="suppress",
                   help="agent-run-request with no tool left: write the empty wrapper 22 00, "
                        "which suppresses Cursor's native tool catalog, or leave field 4 "
                        "absent (default: %(default)s)")
    p.add_argument("--instructions", metavar="TEXT",
                   help="request-context only: McpInstructions text filed under the provider "
                        "as server name (default: none)")
    p.add_argument("--format", choices=["raw", "hex", "base64"],
                   help="output encoding (default: raw when stdout is a file or pipe, "
                        "hex on a terminal)")
    p.set_defaults(handler=cmd_encode_tools)

    p = sub.add_parser(
        "decode", help="decode Cursor tool protobuf (or any protobuf) to JSON",
        description="Decode McpTools, AgentRunRequest, RequestContext, google.protobuf.Value "
                    "or any message (schema-less) and print JSON.  Malformed bytes give one "
                    "line naming the byte offset, field number and wire type.")
    p.add_argument("file", nargs="?", default="-", metavar="FILE",
                   help="protobuf bytes, or hex/base64 text (default: -, standard input)")
    p.add_argument("--as", dest="as_type", choices=sorted(DECODERS), default="mcp-tools",
                   help="message type to decode as; raw guesses without a schema "
                        "(default: %(default)s)")
    p.add_argument("--format", choices=["auto", "raw", "hex", "base64"], default="auto",
                   help="input encoding; auto takes text of hex digits as hex, text of base64 "
                        "characters as base64, anything else as raw bytes (default: %(default)s)")
    p.set_defaults(handler=cmd_decode)

def positive_int(text):
    """argparse type: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError("expected a positive integer, got %r" % text)
    return value


def capture_line_limit(max_argument_bytes):
    # Escaped JSON can be six times its text; leave room for the envelope.
    return max(4 * 1024 * 1024, 8 * max_argument_bytes)


def capture_config(args):
    """The ``mcpServers`` JSON an agent CLI takes with ``--mcp-config``."""
    out = args.out
    if out is None:
        out = os.path.splitext(os.path.abspath(args.catalog))[0] + ".calls.ndjson"
        log.info("no --out given: captured calls will go to %s" % out)
    if out.startswith("fd:") or out in ("-", "/dev/stdout"):
        raise UsageError("--print-config needs --out FILE: the agent CLI starts the server and "
                         "passes it no extra file descriptors, and stdout is the MCP channel")
    argv = [os.path.abspath(__file__), "capture",
            "--catalog", os.path.abspath(args.catalog),
            "--out", os.path.abspath(out),
            "--server-name", args.server_name,
            "--max-calls", str(args.max_calls),
            "--max-argument-bytes", str(args.max_argument_bytes),
            "--reply", args.reply,
            "--page-size", str(args.page_size)]
    if args.tool_choice is not None:
        argv.extend(["--tool-choice", args.tool_choice])
    server = {"type": "stdio", "command": sys.executable or "python3", "args": argv}
    return {"mcpServers": {args.server_name: server}}


def cmd_capture(args):
    """``capture``: serve the capture-only MCP bridge, or print how to configure it."""
    if not SERVER_NAME_RE.match(args.server_name):
        raise UsageError("--server-name must match [A-Za-z0-9_-]{1,17} so that "
                         "mcp__<server>__<tool> stays within 64 characters")
    printing = args.print_config or args.print_allowed_tools
    if not printing and args.out is None:
        raise UsageError("--out FILE|fd:N is required: stdout carries the MCP channel")
    if args.out is not None and not args.print_config:
        check_capture_output(args.out)
    tool_choice = None if args.tool_choice is None else parse_tool_choice_arg(args.tool_choice)
    tools, _ = load_capture_catalog(args.catalog, tool_choice)
    names = [tool["wire_name"] for tool in tools]
    mapping = capture_aliases(names)
    aliases = [mapping[name] for name in names]
    allowed = capture_allowed_tools(args.server_name, aliases)
    if printing:
        if args.print_config:
            text = json.dumps(capture_config(args), indent=2, ensure_ascii=False) + "\n"
            sys.stdout.buffer.write(text.encode("utf-8"))
            log.info("pass the agent CLI: --mcp-config <that JSON> --strict-mcp-config "
                     "--allowedTools %s" % allowed)
        if args.print_allowed_tools:
            sys.stdout.buffer.write(allowed.encode("utf-8") + b"\n")
        sys.stdout.buffer.flush()
        return 0
    out = open_capture_output(args.out)
    try:
        session = CaptureSession(tools, out, args.server_name, args.max_calls,
                                 args.max_argument_bytes, args.reply, args.page_size)
        log.info("capture: MCP server %s advertises %d tools; calls go to %s, nothing runs"
                 % (args.server_name, len(tools), args.out))
        return serve_capture(session, sys.stdin.buffer, sys.stdout.buffer,
                             capture_line_limit(args.max_argument_bytes))
    finally:
        out.close()


def register_capture_command(sub):
    """Add ``capture`` to the subcommand parser ``sub``."""
    p = sub.add_parser(
        "capture", help="capture-only MCP server: advertise a tool catalog, record calls, "
                        "never execute",
        description="Serve MCP over stdio for an agent CLI run with its built-in tools off. "
                    "The server advertises exactly the catalog's tools and writes each "
                    "tools/call as an OpenAI Responses function_call line to --out; nothing "
                    "is executed. Refused calls are written as capture_error lines and make "
                    "the exit status 3.")
    p.add_argument("--catalog", metavar="FILE", required=True,
                   help="tools as a Responses/Chat/Anthropic request body, a tools array or an "
                        "MCP tools/list result; regular file, at most 2 MiB and 128 tools "
                        "(required, no default)")
    p.add_argument("--tool-choice", metavar="JSON",
                   help="auto, none, required or a JSON tool_choice object (default: the "
                        "catalog's own tool_choice, else every tool)")
    p.add_argument("--out", metavar="FILE|fd:N",
                   help="captured calls as NDJSON, appended to FILE or written to an inherited "
                        "descriptor; never stdout (required to serve; default with "
                        "--print-config: <catalog>.calls.ndjson)")
    p.add_argument("--server-name", metavar="NAME", default="opencodex",
                   help="MCP server name, as in mcp__NAME__tool (default: %(default)s)")
    p.add_argument("--max-calls", metavar="N", type=positive_int, default=16,
                   help="calls accepted per session; one more is refused (default: %(default)s)")
    p.add_argument("--max-argument-bytes", metavar="N", type=positive_int, default=65536,
                   help="largest accepted arguments object, as compact JSON "
                        "(default: %(default)s)")
    p.add_argument("--reply", choices=["pending", "deferred"], default="pending",
                   help="pending leaves each captured call unanswered so the outer client ends "
                        "the turn; deferred answers that the call will run in the client "
                        "(default: %(default)s)")
    p.add_argument("--page-size", metavar="N", type=positive_int, default=50,
                   help="tools per tools/list page (default: %(default)s)")
    p.add_argument("--print-config", action="store_true",
                   help="print the mcpServers JSON for --mcp-config (allowed tools go to "
                        "stderr) and exit (default: serve)")
    p.add_argument("--print-allowed-tools", action="store_true",
                   help="print the exact comma-joined --allowedTools list and exit "
                        "(default: serve)")
    p.set_defaults(handler=cmd_capture)

# (issue 6: check command)


def build_parser():
    parser = CliParser(prog="ocx-proxy", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version="ocx-proxy " + __version__)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    # (relay core: register relay commands)
    register_protobuf_commands(sub)
    register_capture_command(sub)
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
