#!/usr/bin/env python3
"""ocx-proxy: one-file MCP relay that keeps oversized tool results from being lost.

Copy this file anywhere Python 3.8+ runs (standard library only).  An MCP client (Cursor, Claude Code,
Codex...) starts it over stdio, and it relays JSON-RPC to the real server::

    python ocx_proxy.py stdio -- npx -y @modelcontextprotocol/server-everything
    python ocx_proxy.py streamable-http --url https://example.com/mcp --header 'Authorization: Bearer ${TOKEN}'
    python ocx_proxy.py sse --url http://127.0.0.1:8000/sse      # legacy HTTP+SSE; `auto` picks one
    python ocx_proxy.py demo            # the whole chain against a built-in server
    python ocx_proxy.py demo-server     # that built-in sample server, on stdio

It also encodes a tool catalog as Cursor's ``McpTools`` protobuf and explains a bad blob (``encode-tools``,
``decode``), records an agent CLI's tool calls without running anything (``capture``; ``turn codebuddy`` runs one
CodeBuddy turn with it, ``models codebuddy`` lists the account's models), and tells which field of a server's
catalog breaks which client (``check``).  Before a tool call reaches the server, the relay checks its arguments
against the tool's schema (``--check-arguments``) and can ask a program of yours (``--negotiate``).

A response over the client's budget (``--client auto``: a profile by the client's name, else 10000
characters of compact JSON) is saved byte-exact under ``--output-dir`` (``<stem>.json``, its readable text
``<stem>.txt``, decoded images/blobs ``<stem>.<n>.<ext>``); the client gets a short, protocol-valid preview
naming those files, and a ``read_spilled_output`` tool that pages through them.  Both MCP eras are relayed:
2025 handshake sessions and the stateless 2026-07-28 revision.  ``python ocx_proxy.py COMMAND --help``
lists every option and its default.

Layout of this file (each section only uses the ones above it):

    wire helpers      logging, redaction, errors, small utilities
    platform          what POSIX and Windows do differently: pipes, process trees, locks, directories
    private files     a checked 0700 directory, files written 0600 (spill files, tokens)
    JSON-RPC framing  newline-delimited JSON lines, error objects, indented JSON output
    protocol versions what each MCP revision has (handshake, resource_link...)
    clients           every fact about each client and model API with its source, its relay profile, catalog rules
    spill files       limits, names, the files of one spill, the readable text of a message
    spill reading     the index of a spilled text, pattern searches, pages
    spill             the budget, saving oversized responses, previews
    event loop        selectors loop, readers/writers (select or threads)
    upstreams         the transport contract; the stdio child process
    HTTP client       SSE parser, URLs, proxies, TLS, connection pool, worker threads
    JOSE              PEM/DER private keys, ES256 and RS256 signatures, JWT client assertions
    OAuth             discovery rules, callback ports, PKCE, the token store, locks
    OAuth clients     settings, requests to authorization servers, client authentication, registration
    enterprise IdP    the user's ID token (a file, or a login at the IdP), its exchange for an ID-JAG
    OAuth login       discovery, logins and the grants needing none, refresh and renewal for one server
    remote transports what Streamable HTTP and legacy SSE share: sender, workers, exchanges
    Streamable HTTP   one POST per message, both eras (2025 sessions, stateless 2026-07-28)
    legacy SSE        the 2024-11-05 HTTP+SSE transport; auto picks it or Streamable HTTP
    schema fixes      how the relay makes each tool of a catalog survive its client's rules (--fit-tools)
    relay settings    the options, the profile in use for the client (its budget and clock), --trace
    requests          the client's requests not answered yet, their clocks (timeouts, heartbeats), detached calls
    reader tool       the relay's own tool: pages of what spilled, the answers of detached calls
    tool filter       --allow-tools and --deny-tools
    upstream supervisor  the upstream's states (up, restarting, dead), its restarts, the handshake said again
    catalog cache     the last catalog each server listed, answered while the server starts
    schema keywords   what the argument check asserts and skips, what each keyword asks of a value, in words
    argument check    a tool's declared inputSchema against a call's arguments: a fast pass, then the findings
    gate              before each tools/call: the argument check, the negotiate hook, refusals and annotations
    relay             routing lines between the client and the upstream, spilling, shutdown
    protobuf          Cursor McpTools encoder/decoder
    tool catalog      normalising tool lists, tool_choice filtering
    capture           capture-only MCP bridge
    catalog checker   check's findings on a catalog, each client rule's from CATALOG_RULES
    check             connecting like a client, listing every page, the report
    client configs    check --config: every server in a client's configuration
    CodeBuddy         one CodeBuddy turn with the capture bridge armed, the account's model roster
    demo              embedded sample server and the demo driver
    CLI options       argument types, environment defaults, the option groups commands share
    CLI / main        the commands, their parsers and the entry point
"""

import argparse
import base64
import binascii
import codecs
import collections
import errno
import fnmatch
import functools
import heapq
import io
import itertools
import json
import math
import os
import re
import select  # loaded by selectors anyway
import selectors
import signal
import socket
import stat
import struct
import subprocess
import sys
import threading
import time

__version__ = "0.1.0"

# ---------------------------------------------------------------------------
# Wire helpers: logging, redaction, errors
# ---------------------------------------------------------------------------

LOG_LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40, "off": 100}


class OcxError(Exception):
    """An error with a message meant for the user (printed as one line)."""


class UsageError(OcxError):
    """Bad command line or configuration: the CLI exits with status 2."""


# What text from a server must not bring to a terminal (they move the cursor, recolour, retitle, forge a line or
# reorder it): C0 and C1 controls but tab, DEL, the Unicode line and paragraph separators, bidirectional overrides.
CONTROL_RE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def printable(text):
    """``text`` with those characters escaped as Python writes them (``\\n``, ``\\x1b``): one inert line."""
    return CONTROL_RE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


class Logger:
    """One-line log records on stderr (stdout belongs to the MCP channel), whatever they quote (``printable``)."""

    def __init__(self, stream=None):
        self.level = LOG_LEVELS["info"]
        self.stream = stream
        self.lock = threading.Lock()

    def enabled(self, level):
        return LOG_LEVELS[level] >= self.level

    def log(self, level, message):
        if not self.enabled(level):
            return
        stream = self.stream or sys.stderr
        line = "ocx-proxy: %s%s\n" % ("" if level == "info" else level + ": ", printable(message))
        with self.lock:
            try:
                stream.write(line)
                stream.flush()
            except (OSError, ValueError):
                pass  # stderr gone: nothing sensible left to do with a log line

    debug = functools.partialmethod(log, "debug")
    info = functools.partialmethod(log, "info")
    warning = functools.partialmethod(log, "warning")
    error = functools.partialmethod(log, "error")


log = Logger()

# A name (JSON key, HTTP header, URL query parameter) that holds a credential; redact, headers, redact_url mask it.
SECRET_NAME_RE = re.compile(r"auth|cookie|token|secret|pass|key|sig|session|code|credential", re.I)
SECRET_VALUE_RE = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]+")
REDACTED = "[redacted]"


def redact(obj):
    """A copy of ``obj``: values of keys naming credentials (SECRET_NAME_RE) and ``Bearer xyz`` in strings masked."""
    if isinstance(obj, dict):
        return {k: (REDACTED if SECRET_NAME_RE.search(str(k)) else redact(v)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [redact(v) for v in obj]
    if isinstance(obj, str):
        return SECRET_VALUE_RE.sub(lambda m: m.group(1) + " " + REDACTED, obj)
    return obj


# What of CONTROL_RE json.dumps leaves raw in a string (it escapes C0 controls itself).
JSON_RAW_CONTROL_RE = re.compile(r"[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def printable_json(text):
    """``json.dumps`` text with what ``printable`` escapes and JSON leaves raw as ``\\uNNNN``: safe on a terminal."""
    return JSON_RAW_CONTROL_RE.sub(lambda match: "\\u%04x" % ord(match.group()), text)


def shorten(text, limit):
    """``text``, or when it is longer than ``limit`` characters its start and how long it was, in ``limit``."""
    if len(text) <= limit:
        return text
    tail = "... (%d characters)" % len(text)
    return text[:max(0, limit - len(tail))] + tail


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


# What a command reads from a FILE argument or stdin (decode, encode-tools, check --file): --max-input-bytes.
MAX_INPUT_BYTES = 64 * 1024 * 1024
# Far deeper than any real JSON Schema, shallow enough for every walk over what we accept to stay off recursion limits.
MAX_JSON_DEPTH = 200


def read_at_most(stream, size):
    """Read a binary stream to its end or ``size`` bytes, in 64 KiB pieces: ``/dev/zero`` costs ``size`` bytes."""
    chunks = []
    while size > 0:
        chunk = stream.read(min(size, 1 << 16))
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def read_input_bytes(source, limit=MAX_INPUT_BYTES):
    """Read a FILE argument (``-``: stdin) of at most ``limit`` bytes; OcxError when unreadable or longer."""
    stdin = source in (None, "-")
    try:
        if stdin:
            data = read_at_most(sys.stdin.buffer, limit + 1)
        else:
            with open(source, "rb") as handle:
                data = read_at_most(handle, limit + 1)
    except OSError as exc:
        raise OcxError("cannot read %s: %s" % (source, exc.strerror or exc))
    if len(data) > limit:
        raise OcxError("input limit: %s is larger than %d bytes (raise it with --max-input-bytes)"
                       % ("standard input" if stdin else source, limit))
    return data


# Only JSON text with a surrogate escape (\ud800) can smuggle a lone surrogate: only such text is searched.
_SURROGATE_ESCAPE_RE = re.compile(r"\\u[dD][89a-fA-F]|[\ud800-\udfff]")
_LONE_SURROGATE_RE = re.compile(r"[\ud800-\udfff]")
_MAX_DOUBLE_INT = int(sys.float_info.max)


def load_json_strict(data, what):
    """Parse a JSON document from a user or a peer (UTF-8 bytes, BOM allowed, or str); NaN, Infinity, ``1e999``,
    lone surrogates and nesting past MAX_JSON_DEPTH raise OcxError, one line starting with ``what``."""
    try:
        text = data if isinstance(data, str) else bytes(data).decode("utf-8-sig")
        value = json.loads(text, parse_constant=_refuse_json_constant,
                           parse_float=_json_double, parse_int=_json_integer)
    except UnicodeDecodeError as exc:
        raise OcxError("%s is not UTF-8 text: %s at byte %d" % (what, exc.reason, exc.start))
    except RecursionError:
        raise OcxError("%s is nested too deeply: more than %d levels" % (what, MAX_JSON_DEPTH))
    except ValueError as exc:
        raise OcxError("%s is not valid JSON: %s" % (what, exc))
    problem = _json_tree_problem(value, _SURROGATE_ESCAPE_RE.search(text) is not None)
    if problem:
        raise OcxError("%s %s" % (what, problem))
    return value


def _refuse_json_constant(name):
    raise ValueError("%s is not a JSON number" % name)


def _json_double(text):
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError("number %s is beyond the range of a double" % _number_excerpt(text))
    return value


def _json_integer(text):
    if len(text) <= 320:  # spares Python < 3.11 a quadratic int() of a megabyte of digits
        value = int(text)
        if abs(value) <= _MAX_DOUBLE_INT:
            return value
    raise ValueError("number %s is beyond the range of a double" % _number_excerpt(text))


def _number_excerpt(text):
    return text if len(text) <= 24 else "%s... (%d characters)" % (text[:16], len(text))


def _json_tree_problem(value, check_strings):
    """What is wrong with a parsed value (too deep, a lone surrogate), or None; iterative."""
    wanted = (dict, list, str) if check_strings else (dict, list)
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, str):
            if _LONE_SURROGATE_RE.search(node):
                return "holds a string with a lone surrogate, which is not Unicode text"
            continue
        if depth > MAX_JSON_DEPTH:
            return "is nested too deeply: more than %d levels" % MAX_JSON_DEPTH
        if isinstance(node, dict):
            if check_strings:
                stack.extend((key, depth) for key in node)
            node = node.values()
        elif not isinstance(node, list):
            continue
        stack.extend((item, depth + 1) for item in node if isinstance(item, wanted))
    return None


def utc_now_iso():
    import datetime  # imported where used (traces, spill names, `auth`): ~1.5 ms at start-up
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# ---------------------------------------------------------------------------
# Platform: what POSIX and Windows do differently, each mechanism with its two halves side by side
# ---------------------------------------------------------------------------
# The rest of the file never asks which OS it runs on; it calls what this section defines.  Mechanisms:
# directories, whether a process lives, waiting on pipes, the file lock, the browser, the child's text
# encoding, and a server's process tree (started in a group of its own, ended whole however we end).

IS_WINDOWS = os.name == "nt"

# select() waits on sockets only on Windows: there every pipe is read and written by a thread.
PIPES_SELECTABLE = not IS_WINDOWS

# The environment a stdio server gets by default, as the official SDKs pass it (anything else must be given
# with --env or --pass-environment: tokens in our environment do not leak to the child).
SAFE_ENV_POSIX = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")
SAFE_ENV_WINDOWS = ("APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PATHEXT",
                    "PROCESSOR_ARCHITECTURE", "SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "USERNAME", "USERPROFILE")
SAFE_ENV = SAFE_ENV_WINDOWS if IS_WINDOWS else SAFE_ENV_POSIX
# What a Python server we start writes on its pipes, unless the user's environment or --env says otherwise:
# UTF-8, as MCP requires (a Windows Python writes the ANSI code page to a pipe, cp1252 or cp936, and fails on
# other text).  Not PYTHONUTF8: that would change how the server reads its own files too.
CHILD_TEXT_ENV = {"PYTHONIOENCODING": "utf-8"}


def utf8_text_streams():
    """Our text on stdout and stderr in UTF-8 where they are pipes or files, as clients read it, whatever the ANSI
    code page or PYTHONIOENCODING say (Windows writes a pipe in cp1252 or cp936; a console takes any text)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if not stream.isatty():
                stream.reconfigure(encoding="utf-8")
        except (AttributeError, ValueError, OSError):
            pass  # replaced by something without reconfigure, or closed


# POSIX files have an owner and mode bits, which we check; Windows has ACLs, which os.stat does not show: what
# keeps our files private there is where they are, in the user's profile (%LOCALAPPDATA%), whose ACL admits the
# user, SYSTEM and Administrators only.
FILE_OWNERS = hasattr(os, "geteuid")


def owned_by_us(info):
    """Whether ``os.stat`` result ``info`` is a file of ours (always, where files have no owner we can read)."""
    return not FILE_OWNERS or info.st_uid == os.geteuid()


def user_cache_dir(name, environ=None):
    """Directory ``name`` in the user's cache: ``$XDG_CACHE_HOME`` (default ``~/.cache``), ``~/Library/Caches``
    on macOS, ``%LOCALAPPDATA%`` (default ``~/AppData/Local``) on Windows."""
    environ = os.environ if environ is None else environ
    if IS_WINDOWS:
        base = environ.get("LOCALAPPDATA") or os.path.join(os.path.expanduser("~"), "AppData", "Local")
    elif sys.platform == "darwin":
        base = os.path.join(os.path.expanduser("~"), "Library", "Caches")
    else:
        base = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, name)


def default_cache_dir():
    """The default ``--output-dir``: where spill files go."""
    return user_cache_dir(os.path.join("ocx-proxy", "Cache") if IS_WINDOWS else "ocx-proxy")


def file_uri(path, windows=IS_WINDOWS):
    """``file://`` URI of an absolute path (``file:///C:/...`` on Windows)."""
    import pathlib
    pure = pathlib.PureWindowsPath(path) if windows else pathlib.PurePosixPath(path)
    return pure.as_uri()


def _process_exists_posix(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True   # another user's
    except (OverflowError, OSError):
        return False  # no such process id can exist
    return True


def _process_exists_windows(pid):
    # Never os.kill(pid, 0) here: on Windows that is TerminateProcess with exit code 0.
    kernel32, ctypes = _win32()[:2]
    handle = kernel32.OpenProcess(0x1000, False, pid)   # PROCESS_QUERY_LIMITED_INFORMATION
    if not handle:
        return ctypes.get_last_error() == 5   # ERROR_ACCESS_DENIED: another user's
    try:
        code = ctypes.c_ulong()
        return bool(kernel32.GetExitCodeProcess(handle, ctypes.byref(code))) and code.value == 259   # STILL_ACTIVE
    finally:
        kernel32.CloseHandle(handle)


process_exists = _process_exists_windows if IS_WINDOWS else _process_exists_posix


def lock_file(fd):
    """Take the advisory lock on open file ``fd`` without waiting (the system drops it when ``fd`` closes);
    BlockingIOError or PermissionError when another process holds it."""
    if IS_WINDOWS:
        import msvcrt
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError as exc:   # EACCES on Windows, errno 0 under Wine: either way, someone holds it
            raise PermissionError(errno.EACCES, "locked by another process") from exc
    else:
        import fcntl
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


# Popen's arguments for a child in a process group of its own: a signal or Ctrl+C meant for our group (a
# client stopping us) does not reach it; we end it ourselves, whole (ProcessTree).
# On Windows also no console window of its own: a relay started without a console (by a GUI client) would
# otherwise flash one for every server it starts.
NEW_GROUP = ({"creationflags": getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
                               | getattr(subprocess, "CREATE_NO_WINDOW", 0)} if IS_WINDOWS
             else {"start_new_session": True})

def has_display(environ):
    """Whether a graphical browser may open: BROWSER names one, a display is set, or macOS/Windows."""
    return bool(environ.get("BROWSER") or environ.get("DISPLAY") or environ.get("WAYLAND_DISPLAY")
                or sys.platform == "darwin" or IS_WINDOWS)


def open_browser(url):
    """Open ``url`` in a browser from a helper detached from our stdio (the MCP channel); OSError if none starts."""
    subprocess.Popen([sys.executable, "-c", "import sys, webbrowser; webbrowser.open(sys.argv[1])", url],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     close_fds=True, **NEW_GROUP)


# Signals that ask us to stop: a client's SIGTERM, a Ctrl+C, a closed terminal, a Ctrl+Break on Windows.
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGINT", "SIGHUP", "SIGBREAK")
                     if hasattr(signal, name))

KILL_GRACE = 1.0   # seconds from SIGTERM to SIGKILL when we are being stopped ourselves

# The watchdog's program, run as ``python -I -S -c WATCHDOG_PROGRAM GROUP GRACE TERM KILL``.  A byte on stdin
# releases it; EOF means the relay died without a word.  Signal numbers come as arguments: importing ``signal``
# (and with it ``enum``) would double the watchdog's start-up CPU.
WATCHDOG_PROGRAM = """\
import os, sys, time
group, grace, term, kill = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
if not os.read(0, 1):
    try:
        os.killpg(group, term)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            time.sleep(0.05)
            os.killpg(group, 0)
        os.killpg(group, kill)
    except OSError:
        pass
"""


class Watchdog:
    """A helper process that stops process group ``group`` (POSIX) when we die without stopping it.

    It reads a pipe whose write end only we hold: however we die, even by SIGKILL, it reads EOF and sends the
    group SIGTERM, then SIGKILL after ``KILL_GRACE``; ``release()`` says we stopped the group ourselves.  Its
    own session keeps a client's signal to our group from taking it down with us.  Not ``PR_SET_PDEATHSIG``:
    Linux only, misses grandchildren and needs a ``preexec_fn`` (unsafe once threads run)."""

    def __init__(self, group):
        self.process = None
        self.pipe = None
        if not sys.executable:
            return  # embedded without an interpreter to start
        read_end, write_end = os.pipe()
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", WATCHDOG_PROGRAM, str(group), str(KILL_GRACE),
                 str(int(signal.SIGTERM)), str(int(signal.SIGKILL))],
                stdin=read_end, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        except OSError as exc:
            os.close(write_end)
            log.warning("could not start the watchdog for the upstream: %s" % exc)
        else:
            self.pipe = write_end
        finally:
            os.close(read_end)

    def release(self):
        """Let the watchdog exit without a signal, and reap it."""
        if self.pipe is None:
            return
        try:
            os.write(self.pipe, b"x")
        except OSError:
            pass  # it is gone already
        os.close(self.pipe)
        self.pipe = None
        try:
            self.process.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            log.debug("the watchdog did not exit yet; subprocess reaps it later")


class GroupTree:
    """POSIX: a child and all it starts, as its process group.  ``terminate()`` sends the group SIGTERM, ``kill()``
    SIGKILL; a ``Watchdog`` does both if we die first; ``close()`` releases it."""

    @classmethod
    def start(cls, argv, watchdog=True, **popen):
        """``(process, tree)``: ``argv`` started by ``subprocess.Popen(argv, **popen)``; Popen's errors.  No
        ``watchdog`` for a helper that bounds itself (the reader's children: RLIMIT_CPU)."""
        process = subprocess.Popen(argv, **dict(popen, **NEW_GROUP))
        return process, cls(process, watchdog)

    def __init__(self, process, watchdog=True):
        self.group = process.pid
        self.watchdog = Watchdog(self.group) if watchdog else None

    def _signal(self, sig):
        try:
            os.killpg(self.group, sig)
        except OSError:
            pass  # gone already

    def terminate(self):
        self._signal(signal.SIGTERM)

    def kill(self):
        self._signal(signal.SIGKILL)

    def close(self):
        if self.watchdog is not None:
            self.watchdog.release()


class JobTree:
    """Windows: a child and all it starts, in a Job Object that kills them when its last handle closes, which
    the system does for us however we end (TerminateProcess, a crashed client).  Windows has no polite signal
    for a console-less tree: ``terminate()`` is ``kill()``, after the caller closed the child's stdin."""

    @classmethod
    def start(cls, argv, watchdog=True, **popen):
        """``(process, tree)``: the child is created suspended and joins the job before it runs, so that nothing
        it starts escapes; Popen's errors, or OSError when it cannot be resumed (it is killed then).  The job is
        the watchdog: a helper gets one whatever ``watchdog`` says (Windows has no RLIMIT_CPU to bound it)."""
        flags = NEW_GROUP["creationflags"] | 0x4   # CREATE_SUSPENDED
        process = subprocess.Popen(argv, creationflags=flags, **popen)
        tree = cls(process)
        status = _win32()[2].NtResumeProcess(int(process._handle))
        if status:
            tree.kill()
            process.wait()
            raise OSError("could not resume the new process (NTSTATUS 0x%08x)" % (status & 0xFFFFFFFF))
        return process, tree

    def __init__(self, process):
        self.process = process
        self.job = None
        kernel32, ctypes = _win32()[:2]
        job = kernel32.CreateJobObjectW(None, None)
        limits = kernel32.JobLimits()
        limits.LimitFlags = 0x2000   # JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
        if job and kernel32.SetInformationJobObject(job, 9, ctypes.byref(limits), ctypes.sizeof(limits)) \
                and kernel32.AssignProcessToJobObject(job, int(process._handle)):
            self.job = job
            return
        log.warning("could not put the upstream in a job object (error %d): what it starts may outlive us"
                    % ctypes.get_last_error())
        if job:
            kernel32.CloseHandle(job)

    def terminate(self):
        self.kill()

    def kill(self):
        if self.job:
            _win32()[0].TerminateJobObject(self.job, 1)
            return
        try:
            self.process.kill()
        except OSError:
            pass  # gone already

    def close(self):
        if self.job:
            job, self.job = self.job, None
            _win32()[0].CloseHandle(job)


ProcessTree = JobTree if IS_WINDOWS else GroupTree


@functools.lru_cache(maxsize=None)
def _win32():
    """(kernel32, ctypes, ntdll) with the signatures used above: imported on first use, POSIX never pays for it."""
    import ctypes
    from ctypes import wintypes as w
    size_t = ctypes.c_size_t

    class JobLimits(ctypes.Structure):   # JOBOBJECT_EXTENDED_LIMIT_INFORMATION, flattened
        _fields_ = [("PerProcessUserTimeLimit", ctypes.c_int64), ("PerJobUserTimeLimit", ctypes.c_int64),
                    ("LimitFlags", w.DWORD), ("MinimumWorkingSetSize", size_t), ("MaximumWorkingSetSize", size_t),
                    ("ActiveProcessLimit", w.DWORD), ("Affinity", size_t), ("PriorityClass", w.DWORD),
                    ("SchedulingClass", w.DWORD), ("IoInfo", ctypes.c_uint64 * 6), ("ProcessMemoryLimit", size_t),
                    ("JobMemoryLimit", size_t), ("PeakProcessMemoryUsed", size_t), ("PeakJobMemoryUsed", size_t)]

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
    kernel32.JobLimits = JobLimits
    signatures = {
        "CreateJobObjectW": (w.HANDLE, ctypes.c_void_p, w.LPCWSTR),
        "SetInformationJobObject": (w.BOOL, w.HANDLE, ctypes.c_int, ctypes.c_void_p, w.DWORD),
        "AssignProcessToJobObject": (w.BOOL, w.HANDLE, w.HANDLE),
        "TerminateJobObject": (w.BOOL, w.HANDLE, w.UINT),
        "OpenProcess": (w.HANDLE, w.DWORD, w.BOOL, w.DWORD),
        "GetExitCodeProcess": (w.BOOL, w.HANDLE, ctypes.POINTER(w.DWORD)),
        "CloseHandle": (w.BOOL, w.HANDLE),
    }
    for name, (restype, *argtypes) in signatures.items():
        function = getattr(kernel32, name)
        function.restype, function.argtypes = restype, argtypes
    ntdll = ctypes.WinDLL("ntdll")
    ntdll.NtResumeProcess.restype, ntdll.NtResumeProcess.argtypes = ctypes.c_long, (w.HANDLE,)
    return kernel32, ctypes, ntdll


def bind_exclusive(sock, address):
    """Bind listening TCP ``sock`` to ``address`` so that no second listener can share the port.  POSIX needs
    SO_REUSEADDR to rebind a port in TIME_WAIT; on Windows that option lets another socket take the port."""
    if not IS_WINDOWS:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(address)


def split_command_line(text, windows=IS_WINDOWS):
    """A command typed as one string (``--negotiate CMD``) as its words: by the POSIX shell's quoting (shlex), or on
    Windows by its C runtime's (CommandLineToArgvW, what ``subprocess.list2cmdline`` writes), which keeps the
    backslashes of a path; ValueError for an unclosed quote."""
    if not windows:
        import shlex
        return shlex.split(text)
    words, word, quoted, started, i = [], [], False, False, 0
    while i < len(text):
        char = text[i]
        if char == "\\":   # 2n backslashes and a quote: n and the quote's meaning; 2n+1: n and a plain quote
            run = len(text) - i - len(text[i:].lstrip("\\"))
            quote = text[i + run:i + run + 1] == '"'
            word.append("\\" * (run // 2 if quote else run) + ('"' if quote and run % 2 else ""))
            i += run + (1 if quote and run % 2 else 0)
        elif char == '"':
            quoted = not quoted
            i += 1
        elif char in " \t" and not quoted:
            if started:
                words.append("".join(word))
            word, started, i = [], False, i + 1
            continue
        else:
            word.append(char)
            i += 1
        started = True
    if quoted:
        raise ValueError("no closing quotation")
    return words + (["".join(word)] if started else [])


# ---------------------------------------------------------------------------
# Private files: a checked 0700 directory, files written 0600 and renamed into place
# ---------------------------------------------------------------------------

# Files are only opened new: O_EXCL refuses any existing name (a planted link too), O_NOFOLLOW is the belt.
TEMP_FILE_FLAGS = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                   | getattr(os, "O_BINARY", 0))
# Reading: O_NOFOLLOW refuses a link put in a file's place, O_NONBLOCK a FIFO holding up the open.
READ_FILE_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
                   | getattr(os, "O_BINARY", 0))
PRIVATE_DIR_PREFIX = "ocx-proxy-"
# A file is written as ".<name>.<pid>-<host>-<random>.tmp" (older versions: ".<name>.<random>.tmp"), then renamed:
# the writer's pid and host (a hash: a home may be shared by machines) tell a killed writer's leftover from a live one.
TEMP_NAME_RE = re.compile(r"^\.\d{8}T\d{6}(?:\.\d+)?Z_[A-Za-z0-9._-]+?\."
                          r"(?:(\d{1,10})-([0-9a-f]{8})-)?[0-9a-f]{16}\.tmp\Z")
HOST_TAG = "%08x" % binascii.crc32(socket.gethostname().encode("utf-8", "replace"))
# A temporary file untouched this long is stale whoever wrote it: every write updates its time.
STALE_TEMP_SECONDS = 3600


def temp_name(name, pid=None):
    """The temporary name ``name`` is written under (see TEMP_NAME_RE), by process ``pid`` (default: us)."""
    return ".%s.%d-%s-%s.tmp" % (name, os.getpid() if pid is None else pid, HOST_TAG, os.urandom(8).hex())


def stale_temp(match, mtime, now):
    """True when the temporary file ``match`` (of TEMP_NAME_RE), last written at ``mtime``, is no one's: untouched
    for STALE_TEMP_SECONDS, or written by a process of this machine that is gone."""
    if mtime < now - STALE_TEMP_SECONDS:
        return True
    pid, host = match.group(1), match.group(2)
    return host == HOST_TAG and not process_exists(int(pid))


def _write_all(fd, data):
    for chunk in ((data,) if isinstance(data, (bytes, bytearray, memoryview)) else data):
        view = memoryview(chunk)
        while view:
            view = view[os.write(fd, view):]


class PrivateDir:
    """An opened, checked directory of ours.  On POSIX every file is created, renamed and removed relative to
    ``fd``, the directory that was checked, so a path swapped meanwhile sends nothing elsewhere (Windows: paths)."""

    def __init__(self, path, fd=None):
        self.path = path
        self.fd = fd
        self.written = []  # names of the files written through this opening

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def at(self, name):
        return name if self.fd is not None else os.path.join(self.path, name)

    def names(self):
        return os.listdir(self.path if self.fd is None else self.fd)

    def lstat(self, name):
        return os.stat(self.at(name), dir_fd=self.fd, follow_symlinks=False)

    def remove(self, name):
        os.unlink(self.at(name), dir_fd=self.fd)

    def open_read(self, name):
        """``(descriptor, its fstat)`` of ``name`` opened with READ_FILE_FLAGS (OSError, ELOOP for a link): the
        caller judges the stat and closes the descriptor."""
        # Where open() has no O_NOFOLLOW (Windows) it would follow the link: refuse it before.
        if stat.S_ISLNK(self.lstat(name).st_mode):
            raise OSError(errno.ELOOP, "a symbolic link", self.at(name))
        fd = os.open(self.at(name), READ_FILE_FLAGS, dir_fd=self.fd)
        return fd, os.fstat(fd)

    def discard(self, names):
        for name in names:  # ignoring errors: this undoes a write that failed part-way
            try:
                self.remove(name)
            except OSError:
                pass

    def subdir(self, name, what, create=True):
        """Our private directory ``name`` in this one (made 0700 when missing and ``create``; None when missing
        otherwise), a PrivateDir; OSError when it is a link, a file, or open to others (named as ``what``)."""
        if self.fd is not None:
            return _private_child(self.fd, self.path, name, create, what)
        path = os.path.join(self.path, name)  # no owners to check: as open_private_dir
        if create:
            os.makedirs(path, exist_ok=True)
        return PrivateDir(path) if os.path.isdir(path) else None

    def write(self, name, data):
        """Write ``data`` (bytes, or an iterable of bytes chunks) as ``name``; returns its path.  The bytes go to a
        new 0600 temporary file (TEMP_FILE_FLAGS: no planted link is opened), renamed to ``name`` (rename never
        writes through a link); on any failure it is removed and the error raised: a full disk is left no fuller."""
        temp = temp_name(name)
        fd = os.open(self.at(temp), TEMP_FILE_FLAGS, 0o600, dir_fd=self.fd)
        try:
            try:
                _write_all(fd, data)
            finally:
                os.close(fd)
            os.replace(self.at(temp), self.at(name), src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except BaseException:
            self.discard([temp])
            raise
        self.written.append(name)
        return os.path.join(self.path, name)


def _open_dir(name, create, dir_fd=None, follow=True):
    """``(fd, made)`` of directory ``name``, made 0700 when missing and ``create``; ``(None, False)`` if missing."""
    made = False
    if create:
        try:
            os.mkdir(name, 0o700, dir_fd=dir_fd)
            made = True
        except FileExistsError:
            pass
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | (0 if follow else getattr(os, "O_NOFOLLOW", 0))
    try:
        return os.open(name, flags, dir_fd=dir_fd), made
    except FileNotFoundError:
        if create:
            raise
        return None, False


def _is_ours(fd, uid, made, shared_bits):
    """True when ``fd`` is a directory owned by ``uid`` without ``shared_bits``; one we made is fixed to 0700."""
    info = os.fstat(fd)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != uid:
        return False
    if made:  # only a directory we created is ever chmodded (an odd umask)
        os.fchmod(fd, 0o700)
        return True
    return not info.st_mode & shared_bits


def open_spill_dir(path, create=True):
    """The spill directory for ``--output-dir path`` (``open_private_dir``).  A shared or foreign ``path`` (/tmp)
    holds a private ``ocx-proxy-<uid>``, used only when it is a real directory, ours, mode 0700; a link to someone
    else's directory is refused.  Refusals raise OSError with a one-line reason."""
    return open_private_dir(path, create, lambda fd, uid: _open_uid_dir(path, fd, uid, create))


def open_private_dir(path, create, otherwise):
    """``path`` as a ``PrivateDir`` when it is a directory of ours nobody else may write to (made 0700 when
    missing and ``create``, missing parents with the default mode); None when missing.  Any other directory is for
    ``otherwise(fd, uid)`` to answer or refuse (``fd`` is closed after).  Without FILE_OWNERS: ``path`` as it is."""
    if not FILE_OWNERS:
        if create:
            os.makedirs(path, exist_ok=True)
        return PrivateDir(path) if os.path.isdir(path) else None
    uid = os.geteuid()
    if create and os.path.dirname(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, made = _open_dir(path, create)
    if fd is None:
        return None
    keep = False
    try:
        if _is_ours(fd, uid, made, 0o022):
            keep = True
            return PrivateDir(path, fd)
        return otherwise(fd, uid)
    finally:
        if not keep:
            os.close(fd)


def _open_uid_dir(path, fd, uid, create):
    """``ocx-proxy-<uid>`` inside the shared or foreign directory ``path`` (open as ``fd``)."""
    owner = os.fstat(fd).st_uid
    if owner != uid and os.path.islink(path):
        raise OSError("refusing --output-dir %s: a symbolic link to a directory owned by uid %d" % (path, owner))
    return _private_child(fd, path, PRIVATE_DIR_PREFIX + str(uid), create, "spill directory")


def _private_child(parent_fd, parent, name, create, what):
    """Directory ``name`` in ``parent`` (open as ``parent_fd``) as a PrivateDir: made 0700 when missing and
    ``create``, else None when missing; a link, a file, or a directory not ours or open to others is refused
    (OSError naming it as ``what``)."""
    path, uid = os.path.join(parent, name), os.geteuid()
    try:
        fd, made = _open_dir(name, create, parent_fd, follow=False)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            raise
        raise OSError("refusing %s %s: it is a symbolic link or a file" % (what, path))
    if fd is None:
        return None
    if not _is_ours(fd, uid, made, 0o077):
        os.close(fd)
        raise OSError("refusing %s %s: not a private directory of ours (expected owner uid %d, mode 0700)"
                      % (what, path, uid))
    return PrivateDir(path, fd)


def read_user_file(path, limit, what):
    """The bytes of the file the user named as ``what`` (a key file, an ID token file): a regular file, not a
    symbolic link (give the file itself, as for --trace), at most ``limit`` bytes.  ValueError says why not, and
    never quotes what the file holds."""
    try:
        if stat.S_ISLNK(os.lstat(path).st_mode):   # where open() has no O_NOFOLLOW (Windows), before it
            raise ValueError("%s %s is a symbolic link; give the file itself" % (what, path))
        fd = os.open(path, READ_FILE_FLAGS)
    except OSError as exc:
        raise ValueError("cannot read %s %s: %s" % (what, path, exc.strerror or exc))
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ValueError("%s %s is not a regular file" % (what, path))
    with os.fdopen(fd, "rb") as f:
        data = read_at_most(f, limit + 1)
    if len(data) > limit:
        raise ValueError("%s %s is larger than %d bytes, more than any %s holds" % (what, path, limit, what))
    return data


# ---------------------------------------------------------------------------
# JSON-RPC framing: newline-delimited JSON, UTF-8, CRLF tolerated
# ---------------------------------------------------------------------------

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
UPSTREAM_ERROR = -32000
REQUEST_TIMEOUT = -32001
UNSUPPORTED_PROTOCOL_VERSION = -32022  # 2026-07-28: data.supported lists the versions the server speaks

# Resource bounds (README "Limits"): one message, and what we hold for a peer that is not reading.
MAX_MESSAGE_BYTES = 256 * 1024 * 1024
MAX_BUFFER_BYTES = 64 * 1024 * 1024


# dumps writes a LongNumber as a string holding this random (unforgeable) tag, then puts its digits in its place.
_LONG_TAG = "\x00%sL" % os.urandom(8).hex()
_LONG_TAG_RE = re.compile('"%s(\\d+)"' % re.escape(json.dumps(_LONG_TAG)[1:-1]))


def dumps(obj, indent=None):
    """Compact JSON as we write it: no spaces, real characters (``indent``: for people), a ``LongNumber`` as the
    text it was read from.  NaN and infinities raise ValueError: a client's parser would refuse the whole line."""
    digits = []

    def long_number(value):
        if not isinstance(value, LongNumber):
            raise TypeError("Object of type %s is not JSON serializable" % type(value).__name__)
        digits.append(value.text)
        return "%s%d" % (_LONG_TAG, len(digits) - 1)

    text = json.dumps(obj, separators=(",", ":") if indent is None else (",", ": "), indent=indent,
                      ensure_ascii=False, allow_nan=False, default=long_number)
    if digits:
        text = _LONG_TAG_RE.sub(lambda match: digits[int(match.group(1))], text)
    return text


def encode_message(obj):
    """One JSON-RPC message as a line of UTF-8 bytes, newline included."""
    return dumps(obj).encode("utf-8", "surrogatepass") + b"\n"


_JSON_TEXT = json.JSONEncoder(ensure_ascii=False, allow_nan=False)
_JSON_SLICE = 1 << 16  # characters of one string escaped at a time


def _json_chunks(value, newline):
    # ``newline``: line break and indentation.  Leaves written in place (no nested generator): as fast as json.dumps.
    text = _json_leaf(value)
    if text is not None:
        yield text
    elif isinstance(value, str):
        yield '"'
        for start in range(0, len(value), _JSON_SLICE):
            yield _JSON_TEXT.encode(value[start:start + _JSON_SLICE])[1:-1]
        yield '"'
    else:
        is_dict = isinstance(value, dict)
        inner = newline + "  "
        separator = ("{" if is_dict else "[") + inner
        for item in value.items() if is_dict else value:
            if is_dict:
                key, item = item
                text = _json_leaf(key)
                if text is None:
                    yield separator
                    yield from _json_chunks(key, inner)
                    separator = ""
                else:
                    separator += text
                separator += ": "
            text = _json_leaf(item)
            if text is None:
                yield separator
                yield from _json_chunks(item, inner)
            else:
                yield separator + text
            separator = "," + inner
        yield newline + ("}" if is_dict else "]")


def _json_leaf(value):
    """The JSON text of a value written in one piece, or None (a container, a long string)."""
    if isinstance(value, str):
        return _JSON_TEXT.encode(value) if len(value) <= _JSON_SLICE else None
    if isinstance(value, (dict, list)):
        return None if value else _JSON_TEXT.encode(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return int.__repr__(value)  # the commonest scalar; the encoder is 20 times slower
    return _JSON_TEXT.encode(value)  # floats (never NaN), true, false, null


def result_response(msg_id, result):
    return {"jsonrpc": "2.0", "id": msg_id, "result": result}


def error_response(msg_id, code, message, data=None):
    error = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": msg_id, "error": error}


class LongNumber:
    """A JSON number kept as the text it was read from, which ``dumps`` writes back unchanged: what
    ``parse_message(..., long_numbers=True)`` makes of an integer too long for ``int()`` (4,300 digits), a key like
    any other as a request id.  Nothing converts it to an int: the quadratic work that limit prevents."""

    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text

    def __eq__(self, other):
        return isinstance(other, LongNumber) and other.text == self.text

    def __hash__(self):
        return hash(self.text)

    def __repr__(self):
        return "LongNumber(%d digits)" % len(self.text)


def _long_int(text):
    try:
        return int(text)
    except ValueError:
        return LongNumber(text)


# Refuse NaN and Infinity (Python reads them, JSON clients do not); decoders made once, not per line.
_DECODER = json.JSONDecoder(parse_constant=_refuse_json_constant)
_LONG_DECODER = json.JSONDecoder(parse_constant=_refuse_json_constant, parse_int=_long_int)


def parse_message(line, long_numbers=False):
    """Parse one line (bytes) into a JSON value; ValueError when it is not JSON (invalid UTF-8, ``NaN``, nesting too
    deep).  With ``long_numbers``, an integer too long for ``int()`` becomes a ``LongNumber``, not an error."""
    return parse_text(line.decode("utf-8"), long_numbers)


def parse_text(text, long_numbers=False):
    """``parse_message`` for a line already decoded to str."""
    try:
        try:
            return _DECODER.decode(text)
        except ValueError:
            if not long_numbers:
                raise
        return _LONG_DECODER.decode(text)
    except RecursionError:
        raise ValueError("nested too deeply to parse")


def valid_id(msg_id):
    """True for a JSON-RPC id: a string, a finite number (not a boolean; a ``LongNumber`` too) or null."""
    if isinstance(msg_id, float):
        return math.isfinite(msg_id)
    return msg_id is None or isinstance(msg_id, (str, LongNumber, int)) and not isinstance(msg_id, bool)


def id_key(msg_id):
    """Dictionary key for a JSON-RPC id (1 and "1" differ); an invalid id gets a key that matches nothing."""
    return (isinstance(msg_id, str), msg_id) if valid_id(msg_id) else object()


def message_kind(msg):
    """'request', 'notification', 'response' or None for anything else (an invalid id or method too)."""
    if not isinstance(msg, dict):
        return None
    return _kind("method" in msg, isinstance(msg.get("method"), str), "id" in msg,
                 "id" in msg and valid_id(msg["id"]), "result" in msg or "error" in msg)


def _kind(has_method, method_is_str, has_id, has_valid_id, has_answer):
    if has_method:
        if not method_is_str:
            return None
        if not has_id:
            return "notification"
        return "request" if has_valid_id else None
    return "response" if has_valid_id and has_answer else None


def called_tool(msg):
    """The name of the tool a tools/call message calls, else None."""
    params = msg.get("params")
    if msg.get("method") == "tools/call" and isinstance(params, dict) and isinstance(params.get("name"), str):
        return params["name"]
    return None


def same_shape(line, raws):
    """The messages ``raws`` (bytes) as one line shaped like ``line``: a batch if it was one."""
    return b"[" + b",".join(raws) + b"]" if line.lstrip()[:1] == b"[" else raws[0]


def take_messages(line, msgs, raws, taken, answer):
    """Answer with ``answer(msg)`` the messages of client ``line`` that ``taken(msg)`` picks; returns
    ``(line, msgs, raws)`` of the others (a batch of their own bytes; ``line`` None when none is left)."""
    if not any(taken(msg) for msg in msgs):
        return line, msgs, raws
    kept = []
    for msg, raw in zip(msgs, raws):
        if taken(msg):
            answer(msg)
        else:
            kept.append((msg, raw))
    if not kept:
        return None, [], []
    msgs, raws = [msg for msg, _ in kept], [raw for _, raw in kept]
    return same_shape(line, raws), msgs, raws


_SPACE = b" \t\r\n"
_STRUCTURE_RE = re.compile(rb'["\[\]{}]')   # what matters when skipping a nested value
_SCALAR_END_RE = re.compile(rb"[,}\]\s]")


class Envelope:
    """The top-level routing fields of one JSON object line, read without parsing the rest (nothing nested is
    validated).  ``id`` is the id when ``has_valid_id``; ``method`` is the method when it is a string."""

    id = method = None
    has_id = has_valid_id = has_method = has_result = has_error = False

    def kind(self):
        """Like ``message_kind``."""
        return _kind(self.has_method, self.method is not None, self.has_id, self.has_valid_id,
                     self.has_result or self.has_error)


def peek_envelope(line, partial=False):
    """``Envelope`` of ``line`` (bytes), or None when it is not a JSON object.  Nested values are skipped by scanning,
    never by recursion: no depth, integer length or control character hides a top-level ``id``.  With ``partial``,
    a broken object still gives the keys before the break (which request a broken answer was meant for)."""
    pos = _skip_space(line, 0)
    if pos >= len(line) or line[pos] != 0x7B:  # "{"
        return None
    envelope = Envelope()
    return envelope if _read_members(line, pos + 1, envelope) or partial else None


def _read_members(line, pos, envelope, cut=False):
    """Note the members of the object whose "{" is just before ``pos``; False when it is broken.  With ``cut``
    (``line`` is the start of a longer line), a value reaching its end is not noted."""
    end = len(line)
    pos = _skip_space(line, pos)
    while pos < end and line[pos] != 0x7D:  # "}"
        if line[pos] != 0x22:
            return False
        key_end = _string_end(line, pos)
        if key_end < 0:
            return False
        key = line[pos + 1:key_end - 1]
        pos = _skip_space(line, key_end)
        if pos >= end or line[pos] != 0x3A:  # ":"
            return False
        start = _skip_space(line, pos + 1)
        pos = _value_end(line, start)
        if pos < 0 or (cut and pos >= end):
            return False
        _note_key(envelope, key, line[start:pos])
        pos = _skip_space(line, pos)
        if pos < end and line[pos] == 0x2C:  # ","
            pos = _skip_space(line, pos + 1)
        elif pos < end and line[pos] != 0x7D:
            return False
    return pos < end


def _note_key(envelope, key, raw):
    if key == b"id":
        envelope.has_id = True
        envelope.id, envelope.has_valid_id = None, False  # a repeated key: the last counts, as in JSON
        if raw[:1] not in (b"{", b"[", b"t", b"f"):
            try:
                value = parse_message(raw, long_numbers=True)
            except ValueError:
                return
            if valid_id(value):
                envelope.id = value
                envelope.has_valid_id = True
    elif key == b"method":
        envelope.has_method = True
        envelope.method = None
        if raw[:1] == b'"':  # a whole string literal: it loads as a str or not at all
            try:
                envelope.method = json.loads(raw.decode("utf-8"))
            except ValueError:
                pass
    elif key == b"result":
        envelope.has_result = True
    elif key == b"error":
        envelope.has_error = True


def _skip_space(data, pos):
    end = len(data)
    while pos < end and data[pos] in _SPACE:
        pos += 1
    return pos


def _string_end(data, pos):
    """Index just past the string starting at ``data[pos]`` (a quote), or -1."""
    start = pos + 1
    quote = data.find(b'"', start)
    if quote < 0:
        return -1
    if data[quote - 1] != 0x5C:  # the usual case: no backslash before the first quote
        return quote + 1
    # Escaped quotes (JSON in a string) would cost a step each: blank escape pairs a chunk at a time instead.
    size = 4096
    while True:
        chunk = data[start:start + size]
        if not chunk:
            return -1
        plain = chunk.replace(b"\\\\", b"__").replace(b'\\"', b"__")
        quote = plain.find(b'"')
        if quote >= 0:
            return start + quote + 1
        step = len(plain)
        if plain.endswith(b"\\") and len(chunk) == size:
            step -= 1  # an escape cut in two: scan it again with what follows
        start += step
        size = min(size * 2, 1 << 20)


def _value_end(data, pos):
    """Index just past the JSON value starting at ``pos``, or -1; nesting costs no recursion."""
    if pos >= len(data):
        return -1
    first = data[pos]
    if first == 0x22:
        return _string_end(data, pos)
    if first not in b"{[":
        match = _SCALAR_END_RE.search(data, pos)
        return match.start() if match else len(data)
    depth = hits = 0
    while True:
        match = _STRUCTURE_RE.search(data, pos)
        if match is None:
            return -1
        pos = match.start()
        char = data[pos]
        if char == 0x22:
            pos = _string_end(data, pos)
            if pos < 0:
                return -1
        else:
            depth += 1 if char in b"{[" else -1
            pos += 1
            if depth == 0:
                return pos
        hits += 1
        if hits == 256 and len(data) - pos > _SKIP_CHUNK:
            # A big container (100 MB): a step per bracket would take seconds; go a chunk at a time to its last.
            pos, depth = _skip_chunks(data, pos, depth)
            if pos < 0:
                return -1


_SKIP_CHUNK = 1 << 16
_ONE_BRACKET = bytes.maketrans(b"[]", b"{}")
_BRACKET_STEPS = bytes.maketrans(b"{}", b"\x01\xff")  # +1 and -1 as signed bytes
_NOT_STRUCTURE = bytes(sorted(set(range(256)) - set(b'"{}[]')))


def _skip_chunks(data, pos, depth):
    """Skip the chunks in which a container ``depth`` deep at ``pos`` (outside any string) cannot end: the position
    and depth where the chunk holding the end starts, or (-1, 0) when a string never ends.  A chunk costs a few
    C-speed passes (escape pairs blanked, all but quotes and brackets dropped, strings and matched pairs removed)."""
    end = len(data)
    while end - pos > _SKIP_CHUNK:
        chunk = data[pos:pos + _SKIP_CHUNK].replace(b"\\\\", b"__").replace(b'\\"', b"__")
        size = len(chunk)
        if chunk.count(b'"') % 2:  # the chunk ends inside a string: stop before its opening quote
            size = chunk.rfind(b'"')
            if size == 0:  # a string longer than a chunk
                pos = _string_end(data, pos)
                if pos < 0:
                    return -1, 0
                continue
        # Dropping two adjacent quotes keeps every bracket inside or outside its string.
        rest = chunk[:size].translate(_ONE_BRACKET, _NOT_STRUCTURE).replace(b'""', b"")
        if b'"' in rest:  # brackets inside strings
            rest = b"".join(rest.split(b'"')[0::2])
        for _ in range(8):
            shorter = rest.replace(b"{}", b"")
            if len(shorter) == len(rest):
                closed = len(rest) - len(rest.lstrip(b"}"))
                low, total = -closed, len(rest) - 2 * closed
                break
            rest = shorter
        else:  # deeply nested: each pass would remove a single pair, so add up +1/-1 steps
            import array

            steps = array.array("b", rest.translate(_BRACKET_STEPS))
            low, total = min(0, min(itertools.accumulate(steps))), sum(steps)
        if depth + low <= 0:
            return pos, depth
        depth += total
        pos += size
    return pos, depth


def split_array(line):
    """The members of a JSON array line as their exact bytes, or None: a batch's good members go on alone."""
    end = len(line)
    pos = _skip_space(line, 0)
    if pos >= end or line[pos] != 0x5B:  # "["
        return None
    members = []
    pos = _skip_space(line, pos + 1)
    if pos < end and line[pos] == 0x5D:  # "]"
        return members if _skip_space(line, pos + 1) == end else None
    while True:
        stop = _value_end(line, pos)
        if stop <= pos:
            return None
        members.append(line[pos:stop])
        pos = _skip_space(line, stop)
        if pos >= end:
            return None
        if line[pos] == 0x5D:
            return members if _skip_space(line, pos + 1) == end else None
        if line[pos] != 0x2C:  # ","
            return None
        pos = _skip_space(line, pos + 1)


# Raw bytes no JSON text holds (tab and CR may be whitespace between tokens).
_NOT_CONTROL = bytes(sorted(set(range(256)) - set(range(0x20)) | set(b"\t\r")))


def relayable_unparsed(line):
    """True when ``line`` may reach a client unparsed: valid UTF-8, no raw control character, no ``NaN`` or
    ``Infinity`` (even in a string: the full parse decides).  Each test is a C-speed pass holding no copy."""
    if line.translate(None, _NOT_CONTROL) or b"NaN" in line or b"Infinity" in line:
        return False
    if line.isascii():
        return True
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(line)
    try:
        for start in range(0, len(view), 1 << 20):
            decoder.decode(view[start:start + (1 << 20)])
        decoder.decode(b"", True)
    except UnicodeDecodeError:
        return False
    return True


# Bytes that start a UTF-8 character: counting them counts code points (see char_count).
_NOT_LEAD_BYTES = bytes(range(0x80, 0xC0))


def char_count(line):
    """Characters in the UTF-8 ``line`` (as ``len(line.decode())``), counted without decoding it."""
    if line.isascii():
        return len(line)
    step = 1 << 20  # a slice at a time: never a second copy of a big line
    continuation = 0
    for start in range(0, len(line), step):
        piece = line[start:start + step]
        continuation += len(piece) - len(piece.translate(None, _NOT_LEAD_BYTES))
    return len(line) - continuation


# The id as the last member of the object ending the line: only the outermost "}" can end a line, so the member
# before it is top-level (a string cannot fake it: its quotes would be escaped).
_TAIL_ID_RE = re.compile(rb'[{,]\s*"id"\s*:\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|"(?:[^"\\]|\\.)*"|null)\s*}\s*$')


class OversizedLine:
    """A line longer than the cap: its size and both ends (the rest dropped as it came).  ``envelope()`` recovers
    the top-level keys in the first ``KEEP`` bytes, else an ``id`` that is the last member (not one in the middle)."""

    KEEP = 65536
    __slots__ = ("head", "tail", "size")

    def __init__(self, parts=()):
        self.head = self.tail = b""
        self.size = 0
        for part in parts:
            self.add(part)

    def add(self, data):
        if len(self.head) < self.KEEP:
            self.head += data[:self.KEEP - len(self.head)]
        self.tail = (self.tail + data)[-self.KEEP:]
        self.size += len(data)

    def finish(self):
        if self.tail.endswith(b"\r"):
            self.tail = self.tail[:-1]
            self.size -= 1
        return self

    def envelope(self):
        envelope = Envelope()
        pos = _skip_space(self.head, 0)
        if self.head[pos:pos + 1] == b"{":
            _read_members(self.head, pos + 1, envelope, cut=True)
        if not envelope.has_valid_id:
            match = _TAIL_ID_RE.search(self.tail)
            if match:
                _note_key(envelope, b"id", match.group(1))
        return envelope


class LineSplitter:
    """Turns a byte stream into lines without the trailing CR/LF; chunks are joined once when the line ends (a big
    line costs one copy).  A line over ``max_line`` bytes is never held: it is returned as an ``OversizedLine``."""

    def __init__(self, max_line=None):
        self.chunks = []  # bytes received after the last newline
        self.size = 0     # their total size
        self.max_line = max_line or sys.maxsize
        self.oversized = None  # the OversizedLine being received, if any

    def feed(self, data):
        """Add bytes; return the list of complete lines (bytes, or ``OversizedLine``)."""
        pos = data.find(b"\n")
        if pos < 0:
            if data:
                self._keep(data)
            return []
        lines = []
        start = 0
        if self.chunks or self.oversized is not None:
            lines.append(self._end_line(data[:pos]))
            start = pos + 1
            pos = data.find(b"\n", start)
        max_line = self.max_line
        while pos >= 0:
            end = pos - 1 if pos > start and data[pos - 1] == 13 else pos
            if end - start <= max_line:
                lines.append(bytes(data[start:end]))
            else:
                lines.append(OversizedLine([data[start:end]]))
            start = pos + 1
            pos = data.find(b"\n", start)
        if start < len(data):
            self._keep(data[start:])
        return lines

    def _keep(self, part):
        if self.oversized is not None:
            self.oversized.add(part)
            return
        self.chunks.append(bytes(part))
        self.size += len(part)
        if self.size > self.max_line:
            self.oversized = OversizedLine(self.chunks)
            self.chunks = []

    def _end_line(self, part):
        if self.oversized is None and self.size + len(part) > self.max_line:
            self._keep(part)
            part = b""
        if self.oversized is not None:
            self.oversized.add(part)
            line, self.oversized = self.oversized.finish(), None
            self.size = 0
            return line
        if part.endswith(b"\r"):
            part = part[:-1]
        elif not part and self.chunks[-1].endswith(b"\r"):
            self.chunks[-1] = self.chunks[-1][:-1]  # the CR ended the previous chunk
        if part:
            self.chunks.append(part)
        line, self.chunks, self.size = b"".join(self.chunks), [], 0
        return line

    def finish(self):
        """At end of stream: the last line when it was not terminated and is not blank."""
        if self.oversized is not None:
            return [self._end_line(b"")]
        tail, self.chunks, self.size = self.pending(), [], 0
        return [tail] if tail.strip() else []

    def pending(self):
        """Bytes received after the last newline."""
        return b"".join(self.chunks)


# ---------------------------------------------------------------------------
# Protocol versions: what each MCP revision has
# ---------------------------------------------------------------------------

# Every MCP revision we know, oldest first, with the features version_has() is asked about (a new revision is one
# more row; nothing else compares versions): handshake (initialize before anything else), http_sse (GET stream and
# an endpoint for POSTs), streamable_http (a POST per message; sessions: Mcp-Session-Id), batches, resource_link
# (results may link a resource), structured_content (structuredContent, outputSchema), tasks (experimental in
# 2025-11-25, an extension later), result_type (results say their kind in resultType).
PROTOCOL_VERSIONS = {
    "2024-11-05": frozenset(["handshake", "http_sse"]),
    "2025-03-26": frozenset(["handshake", "streamable_http", "sessions", "batches"]),
    "2025-06-18": frozenset(["handshake", "streamable_http", "sessions", "resource_link", "structured_content"]),
    "2025-11-25": frozenset(["handshake", "streamable_http", "sessions", "resource_link", "structured_content",
                             "tasks"]),
    # Stateless: no initialize and no session; every request names its version.
    "2026-07-28": frozenset(["streamable_http", "resource_link", "structured_content", "result_type"]),
}
# Newest first: what servers of ours (capture, demo-server) speak and check asks for (the revisions with an
# initialize to answer), and the stateless revisions (what check asks for with server/discover).
SERVED_PROTOCOL_VERSIONS = tuple(v for v in reversed(list(PROTOCOL_VERSIONS)) if "handshake" in PROTOCOL_VERSIONS[v])
MODERN_PROTOCOL_VERSIONS = tuple(v for v in reversed(list(PROTOCOL_VERSIONS)) if v not in SERVED_PROTOCOL_VERSIONS)
LATEST_HANDSHAKE_VERSION = SERVED_PROTOCOL_VERSIONS[0]


def version_has(version, feature):
    """True when MCP ``version`` (negotiated or named by a request) has ``feature``.  An unknown version has those
    of the newest known one before it; one that is not a string has none."""
    if not isinstance(version, str):
        return False
    known = [v for v in PROTOCOL_VERSIONS if v <= version]
    return bool(known) and feature in PROTOCOL_VERSIONS[known[-1]]


# From 2026-07-28 each request names its version and client in params._meta, and results name the server.
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"


def is_modern(version):
    """True for a stateless revision (2026-07-28 and later): no handshake, no session."""
    return version_has(version, "result_type") and not version_has(version, "handshake")


def request_version(params):
    """The version a request names in ``params._meta`` (2026-07-28 on), else None (it belongs to its session)."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(META_VERSION) if isinstance(meta, dict) else None
    return version if isinstance(version, str) else None


def server_info(result):
    """The serverInfo of an initialize result, or of a modern result's ``_meta``; None if it has none."""
    if not isinstance(result, dict):
        return None
    meta = result.get("_meta")
    info = result.get("serverInfo", meta.get(META_SERVER_INFO) if isinstance(meta, dict) else None)
    return info if isinstance(info, dict) else None


def client_info(msg):
    """The clientInfo of a client request ``msg``: initialize's, or (2026-07-28 on) its ``_meta``'s; None if none."""
    params = msg.get("params")
    if not isinstance(params, dict):
        return None
    meta = params.get("_meta")
    info = params.get("clientInfo") if msg.get("method") == "initialize" else \
        meta.get(META_CLIENT_INFO) if isinstance(meta, dict) else None
    return info if isinstance(info, dict) else None


def version_since(feature):
    """The first revision with ``feature``, for text that names it."""
    return next(v for v in PROTOCOL_VERSIONS if feature in PROTOCOL_VERSIONS[v])


def served_version(requested):
    """The version a server of ours answers to an initialize asking for ``requested``."""
    return requested if requested in SERVED_PROTOCOL_VERSIONS else LATEST_HANDSHAKE_VERSION


# ---------------------------------------------------------------------------
# Clients: what each client and model API does, every fact with its source, and the relay's profile for it
# ---------------------------------------------------------------------------

# Everything ocx-proxy knows of a client is here, under the name every --client takes (relays, check, capture):
# CLIENTS, one Client each (its facts, the relay's profile, how it starts the capture bridge), then the catalog rules
# (what in a tool catalog breaks which client) and how clients name a server's tools.  The code below reads them;
# tests/test_clients.py ties each fact to its reader or to the limit a budget stays under, and checks that every
# source is a public URL (with the version it was seen in) or a file of this repository that measured it
# (tests/interop/clients drives the real CLIs against a scripted model on loopback).

# What a client does; None: not known (or not a thing it does).  Each fact is given with its source (Client.sources).
#   name_chars            the longest tool name it passes on, as it spells it (NAME_LENGTH_RULES)
#   function_name_chars   a model API: a longer function name is refused
#   description_chars     tool descriptions are cut here
#   model_tools           tools sent to the model per request, all servers together (model_tools_old: older versions)
#   mcp_tools_count, mcp_tools_bytes, message_bytes   Cursor's McpTools and agent.v1 messages: past about these the
#                         service says resource_exhausted
#   result_chars, result_bytes   a result's text longer than this is cut or saved by the client, in the unit it
#                         counts: the budget of its profile stays under it (BUDGET_MARGIN)
#   result_tokens         ... in tokens (Claude Code's MAX_MCP_OUTPUT_TOKENS): a CJK character is about a token
#   declared_chars_max    a tool may raise result_chars for itself, up to this, with _meta[MAX_RESULT_SIZE_META] in
#                         its tools/list entry; the relay gives such a tool that budget (Budget.for_client)
#   call_seconds          how long it waits for a tool call's answer by default: the relay's heartbeat and detach
#                         defaults beat it (heartbeat_seconds, detach_seconds)
#   progress_resets       whether notifications/progress starts that clock again
#   start_seconds         how long its first turn waits for a starting server's tools (0: it does not wait): a
#                         server slower than that is not in turn 1 unless the catalog cache answers for it
#   deferred_tools        its model reaches MCP tools only through a search tool (the reader too: its description
#                         is what the search finds)
FACT_NAMES = ("name_chars function_name_chars description_chars model_tools model_tools_old mcp_tools_count "
              "mcp_tools_bytes message_bytes result_chars result_bytes result_tokens declared_chars_max call_seconds "
              "progress_resets start_seconds deferred_tools").split()
Facts = collections.namedtuple("Facts", FACT_NAMES, defaults=(None,) * len(FACT_NAMES))

# The relay's profile of a client: how it spills and what it keeps for it (--client, or picked by clientInfo.name).
#   budget_chars / budget_bytes  a response over either spills (0: no limit in that unit): under the client's
#                                result_chars / result_bytes by BUDGET_MARGIN at least, as our budget counts the
#                                whole JSON-RPC message and the client only the text its model sees
#   preview_chars                text kept in a preview
#   strip_output_schema          remove outputSchema from tools/list (--keep-output-schema keeps it)
#   shows_images                 image blocks reach the model: up to --max-image-bytes they do not count
#   model_skips                  the tool result member the client never shows its model when the result has both:
#                                it does not count (None: both reach the model)
#   client_names                 clientInfo.name it sends (initialize, or _meta); a trailing "*" matches any end
#   client_env                   environment variables it gives its MCP servers: they name it when clientInfo.name
#                                does not (the relay reads its own environment)
#   model_apis                   the model APIs it hands a catalog's schemas to unchanged: their rules reach it too,
#                                and the relay fixes them (--fit-tools, fit_rules)
# The defaults are the generic profile, for any other client.  shows_images, model_skips and client_names were
# measured with the real CLIs (tests/interop/clients/test_clients.py, the versions in their facts' sources).
Profile = collections.namedtuple("Profile", "budget_chars budget_bytes preview_chars strip_output_schema shows_images "
                                            "model_skips client_names model_apis client_env",
                                 defaults=(10000, 0, 4000, True, False, None, (), (), ()))
# A profile's budget is at most this share of the client's own cut (test_clients.py holds each to it).
BUDGET_MARGIN = 0.85

# One entry of CLIENTS.
#   display   its name for people
#   kind      "agent" (an MCP client) or "api" (a model API: its rules reach every client passing it schemas)
#   config    the format of the file it loads all its servers from (CONFIG_FORMATS; check --config)
#   aliases   an older spelling -> the commands ("relay", "check", "capture") where it still means this entry
#             ("gemini": Gemini CLI to the relay and capture, the API to check)
#   facts     a Facts; sources: a Facts of the same fields, each one's source
#   profile   the relay's Profile (None: the relay has none; --client auto gives such a client the generic one)
#   capture   a CaptureSetup: how it is told to start the capture bridge (None: capture --print-config knows it not)
Client = collections.namedtuple("Client", "display kind config aliases facts sources profile capture")

# The formats of CONFIG_FORMATS: "json" (an "mcpServers" object; Claude Code's ~/.claude.json also has one per
# project), "gemini" (Gemini CLI settings.json: "url" is legacy SSE, "httpUrl" Streamable HTTP) and "codex"
# (config.toml, [mcp_servers.NAME]).
CONFIG_FORMATS = ("json", "gemini", "codex")

# How an agent CLI is told to start a stdio server of ours, the capture bridge (capture --print-config, turn):
#   table   the key its servers go under, in JSON (in TOML for a client whose config is "codex": config.toml)
#   entry   one server's fields, in their order: ENTRY_COMMAND and ENTRY_ARGS stand for the program and its arguments,
#           ENTRY_COMMAND_LINE for both in one list
#   hint    what the user does with it (%(name)s: the server's name; %(allowed)s: its --allowedTools list)
CaptureSetup = collections.namedtuple("CaptureSetup", "table entry hint")
ENTRY_COMMAND, ENTRY_ARGS, ENTRY_COMMAND_LINE = "<command>", "<args>", "<command and args>"
STDIO_ENTRY = {"type": "stdio", "command": ENTRY_COMMAND, "args": ENTRY_ARGS}


def client_entry(display, kind="agent", config=None, aliases=None, profile=None, capture=None, **facts):
    """A CLIENTS entry; each of ``facts`` (a Facts field: a misspelt one is a TypeError) is ``(value, source)``."""
    return Client(display, kind, config, aliases or {}, Facts(**{fact: value for fact, (value, _) in facts.items()}),
                  Facts(**{fact: source for fact, (_, source) in facts.items()}), profile, capture)


# The TypeScript SDK client's clock: what a client built on it has unless it passes its own timeout.
SDK_CALL_SECONDS = 60
NOT_REMEASURED = "public source, not re-measured"
SDK_CLOCK_SOURCE = ("https://github.com/modelcontextprotocol/typescript-sdk/blob/main/src/shared/protocol.ts "
                    "(TypeScript SDK 1.x: DEFAULT_REQUEST_TIMEOUT_MSEC 60000, resetTimeoutOnProgress off by default) "
                    "and https://github.com/modelcontextprotocol/typescript-sdk/issues/245 (a progressToken only with "
                    "onprogress); " + NOT_REMEASURED)
# Where the real CLIs were measured (tests/interop/clients, direct, with the versions named in each source):
# results in the real-client tier; call_seconds with the CLI's own settings (measure_clocks.py deadline: a call
# longer than the clock); progress_resets with the deadline shortened to 5 s by the CLI's own setting and the
# server's progress every second on an 8-s call (test_clocks.py); start_seconds: when turn 1 came for a server up
# after 90 s (measure_clocks.py startup; a few of those seconds are the CLI's own start).  December 2026.
REAL_CLIENT_TIER = "tests/interop/clients/test_clients.py"
MORE_CASES = "tests/interop/clients/test_more_cases.py"
MEASURE_CLOCKS = "tests/interop/clients/measure_clocks.py"
TEST_CLOCKS = "tests/interop/clients/test_clocks.py"
CODEBUDDY_TIER = "tests/interop/clients/test_codebuddy.py"
MEASURED_PROGRESS = "the server's progress every 1 s on an 8-s call"
CURSOR_LIMITS = "vendor_proto_notes.md, Limits (measured by ocx-proxy, Cursor agent.v1)"
CLAUDE_CODE_MCP_DOCS = "https://code.claude.com/docs/en/mcp"

CLIENTS = {
    # Cursor does not publish its clientInfo.name: "cursor-vscode" is what public servers record (and call
    # unverified).  A wrong name costs the generic profile, never more.
    "cursor": client_entry(
        "Cursor", config="json", profile=Profile(client_names=("cursor-vscode",)),
        name_chars=(60, "https://github.com/awslabs/mcp/issues/1283 (Cursor 1.6.14)"),
        model_tools=(100, "https://github.com/DaxianLee/cocos-mcp-server/issues/11 (Cursor, 2026-02)"),
        model_tools_old=(40, "https://github.com/anyproto/anytype-mcp/issues/5 (Cursor 0.47: 40), "
                             "https://github.com/Snowflake-Labs/mcp/issues/77 (2025-09: 80)"),
        mcp_tools_count=(330, CURSOR_LIMITS), mcp_tools_bytes=(120000, CURSOR_LIMITS),
        message_bytes=(1 << 20, CURSOR_LIMITS),
        result_chars=(12000, "https://github.com/MUKAPP/cursor-mcp-response-proxy (its README, v0.2.0, 2026-07: "
                             "measured in Cursor, whole up to about 12,000 ASCII characters, a longer result may be "
                             "dropped; Cursor publishes no threshold)"),
        call_seconds=(SDK_CALL_SECONDS, "Cursor publishes none: " + SDK_CLOCK_SOURCE),
        progress_resets=(False, "Cursor publishes none: " + SDK_CLOCK_SOURCE)),
    # Past result_tokens Claude Code saves a file with no preview: the byte budget keeps CJK text (about a token a
    # character, 3 UTF-8 bytes) under it.  With structuredContent its model gets that alone (2.1.332).
    "claude-code": client_entry(
        "Claude Code", config="json", aliases={"claude": ("capture",)},
        profile=Profile(40000, 60000, 8000, shows_images=True, model_skips="content", client_names=("claude-code",),
                        model_apis=("anthropic",)),
        capture=CaptureSetup("mcpServers", STDIO_ENTRY, "pass the agent CLI: --mcp-config <that JSON> "
                             "--strict-mcp-config --allowedTools %(allowed)s"),
        description_chars=(2048, "https://github.com/anthropics/claude-code/issues/41593 (Claude Code 2.1.84)"),
        result_chars=(50000, CLAUDE_CODE_MCP_DOCS + " (a result over 50,000 characters is saved to a file, the model "
                             "told its path); " + REAL_CLIENT_TIER + " (claude-code 2.1.332: 60,000 characters saved "
                             "with a 2,000-character preview)"),
        result_tokens=(25000, CLAUDE_CODE_MCP_DOCS + " (MAX_MCP_OUTPUT_TOKENS, 25,000 by default: past it a saved "
                              "file and no preview; Claude Code 2.1.332)"),
        declared_chars_max=(500000, CLAUDE_CODE_MCP_DOCS + " (since Claude Code 2.1.91: a tool's _meta "
                                    "\"anthropic/maxResultSizeChars\" in tools/list raises result_chars for it, up to "
                                    "500,000, and its text is then exempt from MAX_MCP_OUTPUT_TOKENS); " + MORE_CASES
                                    + " (claude-code 2.1.332)"),
        call_seconds=(120, MEASURE_CLOCKS + " claude-interactive and deadline (claude-code 2.1.332): in its "
                           "terminal UI a call still running at 120 s (CLAUDE_CODE_MCP_AUTO_BACKGROUND_MS) is answered "
                           "'moved to the background', and its result reaches the model only in a later turn's task "
                           "notification, which agents often ignore (https://github.com/anthropics/claude-code/issues/"
                           "78566); -p has no deadline (a 200-s call returned whole; MCP_TOOL_TIMEOUT sets one).  So "
                           "the relay detaches at 108 s (detach_seconds): the result stays on disk and the model is "
                           "told how to read it"),
        progress_resets=(False, TEST_CLOCKS + " (claude-code 2.1.332 -p, MCP_TOOL_TIMEOUT=5000, " + MEASURED_PROGRESS
                                + ": timed out at 5 s)"),
        start_seconds=(28, MEASURE_CLOCKS + " startup (claude-code 2.1.332 -p): turn 1 without the server 28 s after "
                           "start")),
    "claude-desktop": client_entry("Claude Desktop", config="json"),
    # Codex cuts 48,000 bytes for its catalog's models; the relay cannot see the model, so the smaller cut rules
    # (--max-response-bytes raises it).  It types results with outputSchema: keep it.  With structuredContent the
    # model gets only that (codex-rs protocol/src/models.rs).  Name: codex-rs Implementation (0.171.0, measured).
    "codex": client_entry(
        "Codex", config="codex",
        profile=Profile(10000, 10000, 3000, strip_output_schema=False, shows_images=True, model_skips="content",
                        client_names=("codex-mcp-client",), model_apis=("openai",)),
        capture=CaptureSetup("mcp_servers", {"command": ENTRY_COMMAND, "args": ENTRY_ARGS},
                             "add that table to $CODEX_HOME/config.toml (default ~/.codex/config.toml); the model "
                             "sees the tools as mcp__%(name)s__<tool>"),
        name_chars=(128, "https://github.com/openai/codex/blob/main/codex-rs/codex-mcp/src/tools.rs "
                         "(MAX_TOOL_NAME_LENGTH 128, past it cut with a sha1 suffix; Codex 0.171.0)"),
        result_bytes=(12000, REAL_CLIENT_TIER + " (codex 0.171.0: a result's text cut near 12,000 bytes for a model "
                             "it does not know, near 48,000 for its catalog's)"),
        call_seconds=(300, "https://github.com/openai/codex/pull/28234 (tool_timeout_sec, 300 s by default); "
                           + MEASURE_CLOCKS + " deadline (codex 0.171.0): a 330-s call timed out at 300 s"),
        progress_resets=(False, TEST_CLOCKS + " (codex 0.171.0, tool_timeout_sec = 5, " + MEASURED_PROGRESS
                                + ": timed out at 5 s)"),
        start_seconds=(0, MEASURE_CLOCKS + " startup (codex 0.171.0 exec): turn 1 about a second after start, never "
                          "waiting for MCP servers")),
    # Gemini CLI never passes structuredContent to the model (0.61.0, measured).  It sends parametersJsonSchema:
    # $ref, root anyOf and additionalProperties reach the model, the Gemini API's `parameters` rules do not apply.
    "gemini-cli": client_entry(
        "Gemini CLI", config="gemini", aliases={"gemini": ("relay", "capture")},
        profile=Profile(32000, 0, 8000, shows_images=True, model_skips="structuredContent",
                        client_names=("gemini-cli-mcp-client",)),
        # trusted: an untrusted server's calls wait for a confirmation -p cannot ask for
        capture=CaptureSetup("mcpServers", {"command": ENTRY_COMMAND, "args": ENTRY_ARGS, "trust": True},
                             "merge that mcpServers entry into ~/.gemini/settings.json or .gemini/settings.json; in a "
                             "folder it does not trust the agent CLI runs no MCP server unless given --skip-trust; "
                             "--allowed-mcp-server-names %(name)s keeps it to this server"),
        name_chars=(63, "https://github.com/google-gemini/gemini-cli/blob/main/packages/core/src/tools/mcp-tool.ts "
                        "(generateValidName: past 63 the middle is cut out); tests/interop/clients/test_fitting.py "
                        "(gemini-cli 0.61.0: a 70-character name offered as 63)"),
        result_chars=(40000, "https://github.com/google-gemini/gemini-cli/pull/18446 (truncateToolOutputThreshold); "
                             + REAL_CLIENT_TIER + " (gemini-cli 0.61.0)"),
        call_seconds=(600, MEASURE_CLOCKS + " deadline (gemini-cli 0.61.0): a server's timeout, 600,000 ms by "
                           "default: a 630-s call timed out at 600 s"),
        progress_resets=(False, TEST_CLOCKS + " (gemini-cli 0.61.0, the server's timeout 5000, " + MEASURED_PROGRESS
                                + ": timed out at 5 s)"),
        start_seconds=(90, MEASURE_CLOCKS + " startup (gemini-cli 0.61.0 -p): it waits for discovery (its timeout, "
                           "10 minutes): a server up after 90 s was in turn 1")),
    # Copilot CLI: past 20,480 bytes of text (content's, "\n\n", structuredContent: both count) its model gets a
    # file path and 500 characters; no MCP image reaches it (1.0.102).  "github-copilot-developer": server logs.
    "copilot": client_entry(
        "Copilot CLI", profile=Profile(16000, 16000, 4000, client_names=("copilot-cli", "github-copilot-developer")),
        capture=CaptureSetup("mcpServers", {"type": "local", "command": ENTRY_COMMAND, "args": ENTRY_ARGS,
                                            "tools": ["*"]},
                             "merge that mcpServers entry into ~/.copilot/mcp-config.json, or pass it for one run with "
                             "--additional-mcp-config @FILE; the model sees the tools as %(name)s-<tool>"),
        result_bytes=(20480, REAL_CLIENT_TIER + " (copilot 1.0.102: large_output_threshold_bytes, then its own file)"),
        call_seconds=(180, "https://github.com/github/copilot-cli/issues/1378 (a server's timeout, 180 s by default); "
                           + MEASURE_CLOCKS + " deadline (copilot 1.0.102): a 200-s call timed out at 180 s"),
        progress_resets=(True, TEST_CLOCKS + " (copilot 1.0.102, the server's timeout 5000, " + MEASURED_PROGRESS
                               + ": the call returned whole)"),
        start_seconds=(68, MEASURE_CLOCKS + " startup (copilot 1.0.102 -p): turn 1 without the server 68 s after start "
                           "(initialize has a fixed 60 s limit, https://github.com/github/copilot-cli/issues/4421)")),
    # OpenCode keeps the head of a text over 51,200 bytes (or 2,000 lines) and saves the whole to its own file;
    # the model gets the text blocks alone, images in a user message after the result.
    "opencode": client_entry(
        "OpenCode", profile=Profile(40000, 40000, 8000, shows_images=True, model_skips="structuredContent",
                                    client_names=("opencode",)),
        capture=CaptureSetup("mcp", {"type": "local", "command": ENTRY_COMMAND_LINE, "enabled": True},
                             "merge that mcp entry into opencode.json (or the file OPENCODE_CONFIG names); the model "
                             "sees the tools as %(name)s_<tool>"),
        result_bytes=(51200, REAL_CLIENT_TIER + " (opencode 1.18.33: past 51,200 bytes or 2,000 lines the head is "
                             "kept and the whole saved to its own file)"),
        call_seconds=(60, MEASURE_CLOCKS + " deadline (opencode 1.18.33): an 80-s call timed out at 60 s (a server's "
                          "timeout sets it)"),
        progress_resets=(True, TEST_CLOCKS + " (opencode 1.18.33, the server's timeout 5000, " + MEASURED_PROGRESS
                               + ": the call returned whole; https://github.com/anomalyco/opencode/pull/32477)"),
        start_seconds=(38, MEASURE_CLOCKS + " startup (opencode 1.18.33 run): turn 1 without the server 38 s after "
                           "start")),
    # Qwen Code turns a text over 28,000 characters into a <persisted-output> stub (its file, 2,000 characters);
    # the model gets structuredContent and the text.  Its clientInfo.name ends with the user's name for the server.
    "qwen-code": client_entry(
        "Qwen Code", aliases={"qwen": ("relay", "capture")},
        profile=Profile(22000, 0, 6000, shows_images=True, client_names=("qwen-cli-mcp-client-*",)),
        # trusted, as for Gemini CLI
        capture=CaptureSetup("mcpServers", {"command": ENTRY_COMMAND, "args": ENTRY_ARGS, "trust": True},
                             "merge that mcpServers entry into ~/.qwen/settings.json or .qwen/settings.json; "
                             "--allowed-mcp-server-names %(name)s keeps it to this server; the model reaches "
                             "mcp__%(name)s__<tool> through tool_search and tool_call"),
        result_chars=(28000, REAL_CLIENT_TIER + " (qwen-code 0.24.4: its threshold 25,000 + 3,000 headroom, in JS "
                             "string length)"),
        call_seconds=(300, MEASURE_CLOCKS + " deadline (qwen-code 0.24.4): a 330-s call ended at 300 s (\"did not "
                           "respond within 300000ms idle timeout\"); a server's timeout replaces that clock"),
        progress_resets=(False, MEASURE_CLOCKS + " deadline (qwen-code 0.24.4): the server's progress every 30 s kept "
                                "a 330-s call alive past the idle clock, but a 630-s one ended at 600 s (its overall "
                                "limit); " + TEST_CLOCKS + ": with the server's timeout 5000 and " + MEASURED_PROGRESS
                                + " it timed out at 5 s: so the relay detaches before 300 s"),
        start_seconds=(36, MEASURE_CLOCKS + " startup (qwen-code 0.24.4 -p): turn 1 without the server 36 s after "
                           "start")),
    # CodeBuddy Code: its clientInfo.name is the user's name for the server, but the environment it gives its MCP
    # servers names it.  Its model gets the text blocks of a result, images too, past 80,000 characters a stub
    # naming its own file; MCP tools are deferred: offered through ToolSearch and DeferExecuteTool, the reader too.
    "codebuddy": client_entry(
        "CodeBuddy", config="json",
        profile=Profile(64000, 0, 8000, shows_images=True, model_skips="structuredContent",
                        client_env=("CODEBUDDY_SERVICE_PROXY_URL",)),
        # "defer_loading": false: its tools offered to the model, not deferred behind ToolSearch (deferred_tools)
        capture=CaptureSetup("mcpServers", dict(STDIO_ENTRY, defer_loading=False),
                             "pass codebuddy -p that JSON as a file: --tools \"\" --strict-mcp-config --mcp-config "
                             "FILE --allowedTools %(allowed)s (\"defer_loading\": false offers the tools to the "
                             "model directly); `turn codebuddy` arms it for one turn itself"),
        result_chars=(80000, CODEBUDDY_TIER + " (codebuddy 2.117.0, npm @tencent-ai/agent-sdk 0.3.201): 79,990 "
                             "characters reached the model whole, 80,010 became a ~1,100-character 'exceeds maximum "
                             "allowed tokens' stub naming its own file, no preview (4 x MAX_MCP_OUTPUT_TOKENS 20,000)"),
        call_seconds=(100000, TEST_CLOCKS + " (codebuddy 2.117.0 -p: MCP_TOOL_TIMEOUT=5000, a call timed out at 5 s); "
                              "unset, 1e8 ms (cli/dist/codebuddy-headless.js of npm @tencent-ai/agent-sdk 0.3.201), "
                              "not waited out"),
        progress_resets=(False, TEST_CLOCKS + " (codebuddy 2.117.0 -p, MCP_TOOL_TIMEOUT=5000, " + MEASURED_PROGRESS
                                + ": timed out at 5 s)"),
        start_seconds=(30, CODEBUDDY_TIER + " (codebuddy 2.117.0 -p): turn 1 about 33 s after start with a server up "
                           "at once: it waits MCP_TIMEOUT (30,000 ms by default) for its servers; MCP_TIMEOUT=5000: "
                           "within 15 s"),
        deferred_tools=(True, CODEBUDDY_TIER + " (codebuddy 2.117.0): the model reaches MCP tools through ToolSearch "
                              "and DeferExecuteTool (in -p mode only with --allowedTools DeferExecuteTool or -y) "
                              "unless the server entry says \"defer_loading\": false")),
    # VS Code ("Visual Studio Code") has no measured result limit: the relay gives it generic.
    "vscode": client_entry(
        "VS Code Copilot",
        name_chars=(64, "https://github.com/microsoft/vscode/issues/243602 (VS Code, 2025-03: names past the models' "
                        "64 characters broke requests; closed as fixed, names kept to 64)"),
        model_tools=(128, "https://github.com/microsoft/vscode/issues/258890 (VS Code 1.102.1)")),
    "windsurf": client_entry(
        "Windsurf", config="json",
        model_tools=(50, "https://github.com/Zhwt/go-mcp-mysql/issues/3 (Windsurf, 2025-04)")),
    # Any other client: under every character cut above (not Codex's bytes: CJK text needs the codex profile or
    # --max-response-bytes).  To check, the findings that affect every client.
    "generic": client_entry("any other client", profile=Profile(), call_seconds=(SDK_CALL_SECONDS, SDK_CLOCK_SOURCE),
                            progress_resets=(False, SDK_CLOCK_SOURCE)),
    "anthropic": client_entry("Anthropic API", "api"),
    "openai": client_entry(
        "OpenAI API", "api",
        function_name_chars=(64, "https://platform.openai.com/docs/api-reference/chat/create (a function's name: a-z, "
                                 "A-Z, 0-9, underscores and dashes, at most 64; 2026)")),
    # For the clients that hand a catalog to the Gemini API's legacy `parameters` (Zed, API gateways).
    "gemini-api": client_entry("Gemini API", "api", aliases={"gemini": ("check",)},
                               profile=Profile(model_apis=("gemini-api",)),
                               call_seconds=(SDK_CALL_SECONDS, "the clients passing it schemas: " + SDK_CLOCK_SOURCE),
                               progress_resets=(False, "the clients passing it schemas: " + SDK_CLOCK_SOURCE)),
}
# What the relay's --client takes: auto (by clientInfo.name), or a client with a profile.
CLIENT_CHOICES = ("auto",) + tuple(name for name, client in CLIENTS.items() if client.profile)
# The agent CLIs capture --print-config knows.
CAPTURE_CLIENTS = tuple(name for name, client in CLIENTS.items() if client.capture)
# The key of the result size a tool declares for itself in its tools/list entry's _meta (declared_chars_max).
MAX_RESULT_SIZE_META = "anthropic/maxResultSizeChars"


def client_named(text, command):
    """The CLIENTS name ``text`` stands for in ``command`` ("relay", "check" or "capture"): itself, or the entry an
    older spelling still means there; ``text`` when it names none."""
    if text in CLIENTS:
        return text
    for name, client in CLIENTS.items():
        if command in client.aliases.get(text, ()):
            return name
    return text


def client_profile(name):
    """The Profile of the client ``name`` (a CLIENTS name with one, or an alias the relay takes)."""
    return CLIENTS[client_named(name, "relay")].profile


def client_for_info_name(name, environ=None):
    """The CLIENTS name with a profile of the client calling itself ``name`` (clientInfo.name), else of the client
    whose variables are in ``environ`` (default: ours, as our client started us), else "generic"."""
    for client, entry in CLIENTS.items():
        for known in entry.profile.client_names if entry.profile else ():
            if name == known or known.endswith("*") and isinstance(name, str) and name.startswith(known[:-1]):
                return client
    environ = os.environ if environ is None else environ
    for client, entry in CLIENTS.items():
        if entry.profile and any(variable in environ for variable in entry.profile.client_env):
            return client
    return "generic"


def heartbeat_seconds(call_seconds):
    """Default --heartbeat for a client waiting ``call_seconds`` for a call: a few beats before then, every 30 s
    at most."""
    return min(30.0, call_seconds / 4.0)


def detach_seconds(call_seconds):
    """Default --detach-after for a client waiting ``call_seconds`` for a call: safely before then (10 s or a
    tenth before)."""
    return call_seconds - max(10.0, call_seconds / 10.0)


# -- the client rules of a tool catalog ------------------------------------------

# One row per client rule: what breaks where (CLIENTS names; "all": MCP and JSON Schema conformance), and why we say
# so: ``ref`` a public report (URL) or the file of this repository that measured it, ``observed`` the client and
# version it was seen with, ``fix`` the relay's fix (a key of TOOL_FIXES; None: none).  check reports them (Finding,
# CatalogChecker); the relay fixes them (fit_tools).
CatalogRule = collections.namedtuple("CatalogRule", "severity clients ref observed text fix", defaults=(None,))
CATALOG_RULES = collections.OrderedDict([
    ("root-combinator", CatalogRule(
        "error", ("anthropic", "claude-code", "claude-desktop", "openai"),
        "https://github.com/anthropics/claude-code/issues/710, https://github.com/nspady/google-calendar-mcp/issues/39",
        "Claude Code 0.2.62 to 2.0.29; OpenAI API 2025-06", "oneOf/anyOf/allOf at the root of inputSchema: the "
        "Anthropic API rejects the whole request, Claude Code drops the tool, OpenAI rejects the function",
        "one-object")),
    ("nested-allof", CatalogRule(
        "error", ("openai",), "https://github.com/makenotion/notion-mcp-server/issues/102",
        "OpenAI API, gpt-4.1-nano, 2025-08",
        "allOf below the root: OpenAI rejects the function ('allOf' is not permitted)")),
    ("cursor-type-array", CatalogRule(
        "error", ("cursor",), "https://github.com/cursor/cursor/issues/3778", "Cursor, 2025-11",
        "a type array such as [\"string\", \"null\"]: Cursor fails every call that passes the argument", "one-type")),
    ("gemini-type-array", CatalogRule(
        "warning", ("gemini-api",), "https://github.com/zed-industries/zed/issues/32429",
        "Gemini 2.5 Pro via Zed 0.189.5",
        "a type array: the Gemini API's legacy parameters reject it (\"Proto field is not repeating\")", "one-type")),
    ("gemini-additional-properties", CatalogRule(
        "warning", ("gemini-api",), "https://github.com/zed-industries/zed/issues/29394",
        "Gemini 2.5 Flash via Zed, 2025-04",
        "additionalProperties: the Gemini API's legacy parameters reject it (Unknown name)",
        "drop-additional-properties")),
    ("gemini-ref", CatalogRule(
        "warning", ("gemini-api",), "https://github.com/decolua/9router/issues/1036", "Gemini 3.1 Flash Lite, 2026-05",
        "$ref/$defs/definitions: the Gemini API's legacy parameters reject them (Unknown name)", "inline-refs")),
    ("gemini-enum-type", CatalogRule(
        "warning", ("gemini-api", "gemini-cli"), "https://github.com/google-gemini/gemini-cli/issues/4127",
        "Gemini CLI, 2025-07", "enum with values that are not strings: the Gemini API takes string enums only")),
    ("gemini-format", CatalogRule(
        "warning", ("gemini-api", "gemini-cli"), "https://github.com/google-gemini/gemini-cli/issues/3178",
        "Gemini CLI 0.1.7",
        "a format other than float, double, int32, int64, enum, date-time: the Gemini API rejects it", "drop-format")),
    ("name-chars", CatalogRule(
        "error", ("openai", "anthropic", "claude-desktop", "cursor"), "https://github.com/openai/codex/issues/8174, "
        "https://github.com/loomle/loomle/issues/168, https://github.com/webstudio-is/webstudio/issues/5960",
        "Codex 0.73.0 (OpenAI API); Claude Desktop 1.9659.2; Cursor, 2026-07", "characters outside [A-Za-z0-9_-] (dots "
        "too) in a tool name: rejected by the OpenAI and Anthropic APIs, Claude Desktop and Cursor", "short-name")),
    ("name-length", CatalogRule(
        "error", ("openai", "gemini-api", "claude-desktop"), "https://github.com/loomle/loomle/issues/168",
        "Claude Desktop 1.9659.2; OpenAI and Gemini API name rules",
        "a tool name over 64 characters: OpenAI and Gemini function names and Claude Desktop take at most 64",
        "short-name")),
    ("vscode-name-cut", CatalogRule(
        "warning", ("vscode",), "https://github.com/microsoft/vscode/issues/243602", "VS Code, 2025-03",
        "a tool name over 64 characters: VS Code cuts it to 64", "short-name")),
    ("gemini-cli-name-cut", CatalogRule(
        "warning", ("gemini-cli",), "https://github.com/google-gemini/gemini-cli/blob/main/packages/core/src/tools/"
        "mcp-tool.ts, tests/interop/clients/test_fitting.py", "Gemini CLI 0.61.0",
        "mcp_<server>_<tool> over 63 characters: Gemini CLI cuts the middle out of the name", "short-name")),
    ("codex-name-hash", CatalogRule(
        "info", ("codex",), "https://github.com/openai/codex/blob/main/codex-rs/codex-mcp/src/tools.rs",
        "Codex CLI 0.171.0",
        "mcp__<server>__<tool> over 128 characters: Codex cuts it and appends a sha1 suffix", "short-name")),
    ("cursor-name-length", CatalogRule(
        "error", ("cursor",), "https://github.com/awslabs/mcp/issues/1283", "Cursor 1.6.14",
        "server name + tool name over 60 characters: Cursor filters the tool out", "short-name")),
    ("sanitized-collision", CatalogRule(
        "error", ("codex", "openai"), "https://github.com/openai/codex/issues/8174", "Codex 0.73.0",
        "two names that become one after replacing characters outside [A-Za-z0-9_-]", "short-name")),
    ("codex-dropped-keywords", CatalogRule(
        "info", ("codex",), "https://github.com/openai/codex/issues/13768, "
        "https://github.com/openai/codex/blob/main/codex-rs/tools/src/json_schema.rs (sanitize_json_schema)",
        "Codex CLI 0.111.0; the keyword list: Codex 0.171.0",
        "constraint keywords Codex drops from the schema: the model never sees them")),
    ("output-schema-type", CatalogRule(
        "error", ("all",),
        "https://github.com/githubnext/chopin/issues/154, https://github.com/glslang/windbg-mcp/issues/223",
        "Claude Code, 2026-09; TypeScript SDK 1.29.0",
        "an outputSchema without \"type\": \"object\": TypeScript-SDK clients reject the whole tools/list",
        "drop-output-schema")),
    ("claude-code-description", CatalogRule(
        "warning", ("claude-code",), "https://github.com/anthropics/claude-code/issues/41593", "Claude Code 2.1.84",
        "a description over 2,048 characters: Claude Code cuts it")),
    ("cursor-tool-count", CatalogRule(
        "error", ("cursor",), "https://github.com/DaxianLee/cocos-mcp-server/issues/11", "Cursor, 2026-02",
        "more tools than Cursor sends to the model (100)")),
    ("cursor-tool-count-old", CatalogRule(
        "warning", ("cursor",),
        "https://github.com/anyproto/anytype-mcp/issues/5, https://github.com/Snowflake-Labs/mcp/issues/77",
        "Cursor 0.47 (40), 2025-09 (80)", "more tools than older Cursor versions send to the model (40, then 80)")),
    ("cursor-mcp-tools-size", CatalogRule(
        "error", ("cursor",), "vendor_proto_notes.md, Limits (measured by ocx-proxy)", "Cursor agent.v1",
        "a catalog whose McpTools message passes ~120 kB or 330 tools: Cursor answers resource_exhausted")),
    ("windsurf-tool-count", CatalogRule(
        "warning", ("windsurf",), "https://github.com/Zhwt/go-mcp-mysql/issues/3", "Windsurf, 2025-04",
        "more than 50 tools: Windsurf enables at most 50 across all servers")),
    ("windsurf-config-tool-count", CatalogRule(
        "error", ("windsurf",), "https://github.com/Zhwt/go-mcp-mysql/issues/3", "Windsurf, 2025-04",
        "more than 50 tools in the servers of one configuration (check --config): Windsurf enables at most 50")),
    ("vscode-tool-count", CatalogRule(
        "error", ("vscode",), "https://github.com/microsoft/vscode/issues/258890",
        "VS Code 1.102.1, Copilot Chat 0.114.1", "more than 128 tools: VS Code Copilot fails the request")),
    ("big-integer", CatalogRule(
        "warning", ("cursor", "claude-code"),
        "https://protobuf.dev/reference/protobuf/google.protobuf/#value (number_value: a double), "
        "https://developer.mozilla.org/en-US/docs/Web/JavaScript/Reference/Global_Objects/Number/MAX_SAFE_INTEGER",
        "Cursor agent.v1; Node.js clients", "an integer beyond 2^53 loses precision")),
    ("schema-repetition", CatalogRule(
        "info", ("all",), "https://platform.openai.com/docs/guides/function-calling (function definitions count as "
        "input tokens in every request)", "every client",
        "the same schema block of 500 bytes or more in several places: its bytes go out in every request")),
])
# The formats the Gemini API's legacy parameters take (gemini-format; the fix drop-format keeps only these).
GEMINI_FORMATS = frozenset(["float", "double", "int32", "int64", "enum", "date-time"])
# The length rules on a tool name: the client whose fact (a Facts field) limits it, how the client spells the name
# (from "server" and "tool"), and the finding's text (those, ``full``, ``length`` and ``limit``).
NameLengthRule = collections.namedtuple("NameLengthRule", "rule client fact spelled finding")
NAME_LENGTH_RULES = (
    NameLengthRule("name-length", "openai", "function_name_chars", "%(tool)s", "name has %(length)d characters: "
                   "OpenAI and Gemini function names and Claude Desktop take at most %(limit)d "
                   "(^[A-Za-z0-9_-]{1,%(limit)d}$)"),
    NameLengthRule("vscode-name-cut", "vscode", "name_chars", "%(tool)s",
                   "name has %(length)d characters: VS Code cuts it to %(limit)d"),
    NameLengthRule("gemini-cli-name-cut", "gemini-cli", "name_chars", "mcp_%(server)s_%(tool)s",
                   "%(full)r has %(length)d characters; the client cuts it to %(limit)d"),
    NameLengthRule("codex-name-hash", "codex", "name_chars", "mcp__%(server)s__%(tool)s",
                   "%(full)r has %(length)d characters; the client cuts it to %(limit)d"),
    NameLengthRule("cursor-name-length", "cursor", "name_chars", "%(server)s%(tool)s",
                   "Cursor drops tools whose server name + tool name exceed %(limit)d characters "
                   "(%(server)r + %(tool)r = %(length)d)"))
NAME_OUTSIDE_RE = re.compile(r"[^A-Za-z0-9_-]")     # characters of the name-chars rule
# Named in findings, as the model APIs document it.
OPENAI_TOOL_NAME_PATTERN = "^[A-Za-z0-9_-]{1,%d}$" % CLIENTS["openai"].facts.function_name_chars
# Keywords Codex removes from a tool's schema that constrain a value ("title", "examples" go too, constraining
# nothing): the codex-dropped-keywords rule.
CODEX_DROPPED_KEYWORDS = ("default", "format", "pattern", "minimum", "maximum", "minLength", "maxLength", "maxItems",
                          "not", "if", "then", "else", "patternProperties", "dependencies", "contentEncoding")
# The rules of clients that take so many tools per request across all servers (their model_tools; Cursor's depend
# on its version: CatalogChecker.check_cursor_tool_count).
TOOL_COUNT_CAPS = (("windsurf-tool-count", "windsurf"), ("vscode-tool-count", "vscode"))
# ... and across the servers of one configuration (check --config).
CONFIG_TOOL_COUNT_CAPS = (("windsurf-config-tool-count", "windsurf"),)
# The server names Codex starts (https://github.com/openai/codex/issues/19179: others fail to start).
CODEX_SERVER_NAME_RE = re.compile(r"^[A-Za-z0-9_-]+\Z")


def claude_code_tool_name(server, tool):
    """``mcp__server__tool`` with characters outside [A-Za-z0-9_-] replaced (Claude Code)."""
    return "mcp__%s__%s" % (NAME_OUTSIDE_RE.sub("_", server), NAME_OUTSIDE_RE.sub("_", tool))


def gemini_tool_name(server, tool):
    """Gemini CLI's name: ``mcp_server_tool``, cleaned, then cut to 30 + "..." + 30 past 63 characters
    (google-gemini/gemini-cli packages/core/src/tools/mcp-tool.ts, generateValidName)."""
    name = re.sub(r"[^A-Za-z0-9_.:-]", "_", "mcp_%s_%s" % (server, tool))
    return name[:30] + "..." + name[-30:] if len(name) > CLIENTS["gemini-cli"].facts.name_chars else name


def codex_tool_name(server, tool):
    """Codex's ``mcp__server__tool``, as the server and the tool spell themselves (before a long one is cut)."""
    return "mcp__%s__%s" % (server, tool)


# Tools of two servers of one configuration that a client names alike (check --config): the finding's severity, the
# client, how it names a server's tool, and what follows.
NameClash = collections.namedtuple("NameClash", "severity client name consequence")
NAME_CLASHES = (
    NameClash("error", "claude-code", claude_code_tool_name,
              "the Anthropic API refuses a request with two tools of one name"),
    NameClash("error", "windsurf", lambda server, tool: tool, "Windsurf rejects duplicate names"),
    NameClash("warning", "gemini-cli", gemini_tool_name, "the model can reach only one of them"),
    NameClash("error", "codex", codex_tool_name, "Codex skips every one but the first"),
    NameClash("info", "codex", claude_code_tool_name, "Codex tells them apart by a hash suffix the model sees"))


# ---------------------------------------------------------------------------
# Spill files: limits, names, the files of one spill and the readable text of a message
# ---------------------------------------------------------------------------

# Defaults of --max-response-chars, --preview-chars (CLIENTS' generic profile) and --retention-days.
MAX_RESPONSE_CHARS = CLIENTS["generic"].profile.budget_chars
PREVIEW_CHARS = CLIENTS["generic"].profile.preview_chars
RETENTION_DAYS = 7
# --max-image-bytes default, for clients showing images: base64 characters per response (768 KiB: a screenshot).
MAX_IMAGE_BYTES = 1 << 20
# Responses that keep a session alive or describe it: an oversized one is forwarded, with a warning.
NEVER_SPILL = frozenset(["initialize", "ping", "completion/complete", "logging/setLevel", "server/discover",
                         "subscriptions/listen"])
# Methods whose result is another method's, spilled with that one's preview (tasks/result: a CallToolResult).
SPILL_AS = {"tasks/result": "tools/call"}
SPILL_META_KEY = "ocx-proxy/spill"
# The tool the relay adds to tools/list to read spilled text (Spill.read, Spill.search).
READER_TOOL_NAME = "read_spilled_output"
# How a page says where the rest starts ("more follows at line=L, column=C").  The reader tool's description (which
# clients show their model as trusted, unlike a result: Gemini CLI 0.61) tells models to continue from there.
READER_MORE = "more follows at"
# Bounds of its arguments: numbers beyond any text, lines of context, a pattern any command line holds.
READER_MAX_NUMBER = 10 ** 12
READER_MAX_CONTEXT = 100
READER_MAX_PATTERN = 1000
# A pattern search is killed after this many seconds; by half of it, it answers what it found so far.
SEARCH_SECONDS = 5
# Where lines and characters are in a .txt is noted every this many bytes (TextIndex).
TEXT_INDEX_STEP = 1 << 16
# JSON texts longer than this go to the .txt as they are: pretty-printing parses them whole.
PRETTY_JSON_CHARS = 4 << 20  # ~1 s for 4 MB with many floats, on the loop
SPILL_NAME_RE = re.compile(r"^\.?\d{8}T\d{6}(?:\.\d+)?Z_[A-Za-z0-9._-]+\Z")
MIME_EXTENSIONS = {
    "image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp", "image/svg+xml": ".svg",
    "audio/wav": ".wav", "audio/x-wav": ".wav", "audio/mpeg": ".mp3", "audio/ogg": ".ogg", "application/pdf": ".pdf",
    "application/json": ".json", "text/plain": ".txt"}
# Characters a preview must not start with (skin tones and combining marks are tested apart).
_JOINERS = frozenset("\u200d\ufe0e\ufe0f")


def never_spilled(method, result=None):
    """True when an answer to ``method`` (with ``result``, when parsed) is never rewritten: lifecycle and catalog
    answers, an interim result (``resultType`` not "complete") and a task waiting for input."""
    if method in NEVER_SPILL or (method or "").endswith("/list"):
        return True
    if not isinstance(result, dict):
        return False
    return (result.get("resultType", "complete") != "complete"
            or (method == "tasks/get" and result.get("status") == "input_required"))


def task_tool_result(method, result):
    """The final CallToolResult a tasks/get result of a completed task embeds (2026-07-28 tasks), else None."""
    if method != "tasks/get" or not isinstance(result, dict) or result.get("status") != "completed":
        return None
    inner = result.get("result")
    return inner if isinstance(inner, dict) and isinstance(inner.get("content"), list) else None


def safe_name(text, limit=40):
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")[:limit] or "x"


def utf8_len(text):
    """Bytes of ``text`` in UTF-8 (a lone surrogate counts as the 3 bytes we write for it)."""
    return len(text.encode("utf-8", "surrogatepass"))


def pretty_json(text):
    """``text`` indented (2 spaces) when it is a JSON object or array, else None; floats kept as written."""
    stripped = text.strip()
    if len(stripped) > PRETTY_JSON_CHARS or stripped[:1] not in ("{", "[") or stripped[-1:] not in ("}", "]"):
        return None
    decoder = json.JSONDecoder(parse_float=LongNumber, parse_constant=_refuse_json_constant)
    try:
        return dumps(decoder.decode(stripped), indent=2)
    except (ValueError, RecursionError):
        return None


def _is_continuation(text, i):
    """True when text[i] must stay with text[i-1] (combining mark, joiner, selector)."""
    import unicodedata
    ch = text[i]
    return (ch in _JOINERS or text[i - 1] == "\u200d" or "\U0001F3FB" <= ch <= "\U0001F3FF"
            or unicodedata.combining(ch) != 0)


def make_preview(text, budget):
    """Split ``text`` into (head, tail, omitted) that fit ``budget`` characters: about three quarters to the head,
    both ends moved to a line break when one is near, and never inside a character."""
    if len(text) <= budget:
        return text, "", 0
    head_len = budget * 3 // 4
    newline = text.rfind("\n", head_len * 4 // 5, head_len)
    head_len = newline + 1 if newline >= 0 else head_len
    while 0 < head_len < len(text) and _is_continuation(text, head_len):
        head_len -= 1
    tail_start = len(text) - (budget - head_len)
    newline = text.find("\n", tail_start, tail_start + (budget - head_len) // 5 + 1)
    tail_start = newline + 1 if newline >= 0 else tail_start
    while 0 < tail_start < len(text) and _is_continuation(text, tail_start):
        tail_start += 1
    return text[:head_len], text[tail_start:], tail_start - head_len


class SpillFiles(collections.namedtuple("SpillFiles", "json_path txt_path blob_paths")):
    """Paths written for one spilled message."""

    def meta(self, original_chars, preview_chars):
        meta = {"json": self.json_path, "txt": self.txt_path, "json_uri": file_uri(self.json_path),
                "txt_uri": file_uri(self.txt_path), "original_chars": original_chars, "preview_chars": preview_chars}
        if self.blob_paths:
            meta["files"] = list(self.blob_paths)
        return meta


class ReadableText:
    """Collects the readable text of a message and the binary blocks in it."""

    def __init__(self):
        self.parts = []
        self.blobs = []  # (base64 data, mimeType, index of its note in parts)

    def add_block(self, block):
        if not isinstance(block, dict):
            return
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            self.parts.append(pretty_json(block["text"]) or block["text"])
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
        self.blobs.append((data, mime if isinstance(mime, str) else None, len(self.parts)))
        self.parts.append("[%s %s: saved as file %d]" % (label, mime or "", len(self.blobs)))

    def add_json(self, value):
        self.parts.append(dumps(value, indent=2))

    def text(self):
        return "\n\n".join(self.parts)

    def encoded(self, step=1 << 20):
        """``text()`` as UTF-8, a slice at a time (never encoded whole); a lone surrogate becomes U+FFFD, 3 bytes as
        ``utf8_len`` counts it: the ``.txt`` is valid UTF-8 for any tool."""
        for n, part in enumerate(self.parts):
            if n:
                yield b"\n\n"
            for start in range(0, len(part), step):
                piece = part[start:start + step]
                try:
                    yield piece.encode("utf-8")
                except UnicodeEncodeError:
                    yield _LONE_SURROGATE_RE.sub("\ufffd", piece).encode("utf-8")


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
    inner = task_tool_result(method, result)
    method, result = ("tools/call", inner) if inner is not None else (SPILL_AS.get(method, method), result)
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


# ---------------------------------------------------------------------------
# Spill reading: the index of a spilled text, pattern searches, pages
# ---------------------------------------------------------------------------

class TextIndex:
    """Where lines and characters are in the UTF-8 ``.txt`` of a spill, noted as it is written: a mark at
    the first character at or after each multiple of TEXT_INDEX_STEP bytes, so ``locate`` costs a binary
    search and one read of a step at most (a page costs what it holds, on one long line as on many)."""

    def __init__(self):
        self.step = TEXT_INDEX_STEP
        self.marks = [(1, 1, 0)]  # (line, column, byte offset), in order
        self.size = 0
        self.line = self.column = 1  # where the text noted so far ends
        self.mark_due = False        # a step ended: the next character gets a mark

    def watch(self, chunks):
        """``chunks`` (the text's bytes) unchanged, noted on their way to the file."""
        for chunk in chunks:
            view = memoryview(chunk)
            while view:
                piece = bytes(view[:self.step - self.size % self.step])
                view = view[len(piece):]
                self._note(piece)
            yield chunk

    def _note(self, piece):
        """Note ``piece``, which never crosses a multiple of the step."""
        if self.mark_due:
            lead = len(piece) - len(piece.lstrip(_NOT_LEAD_BYTES))
            if lead < len(piece):
                self.marks.append((self.line, self.column, self.size + lead))
                self.mark_due = False
        self.size += len(piece)
        self.mark_due = self.mark_due or self.size % self.step == 0
        newline = piece.rfind(b"\n")
        if newline >= 0:
            self.line += piece.count(b"\n")
            self.column = 1
            piece = piece[newline + 1:]
        self.column += len(piece) if piece.isascii() else len(piece.translate(None, _NOT_LEAD_BYTES))

    def lines(self):
        """Lines of the text; a line break at its very end does not start another one."""
        return self.line - (self.column == 1)

    def locate(self, handle, line, column):
        """Byte offset in ``handle`` (the file noted) of ``column`` of ``line``, both 1-based (the column
        after a line's last character: where its line break or the text ends); ValueError when there is none."""
        import bisect
        k = bisect.bisect_right(self.marks, (line, column, self.size)) - 1
        first_line, first_column, offset = self.marks[k]
        handle.seek(offset)
        end = self.marks[k + 1][2] if k + 1 < len(self.marks) else self.size
        text = handle.read(end - offset).decode("utf-8", "replace")
        start = 0
        for _ in range(line - first_line):
            start = text.find("\n", start) + 1
            if not start:
                raise ValueError("line %d is past the end of the text (%d lines)" % (line, self.lines()))
        before = first_column - 1 if line == first_line else 0  # characters of the line before ``start``
        stop = text.find("\n", start)
        length = before + (stop if stop >= 0 else len(text)) - start  # a line cut by the next mark: enough of it
        if column > length + 1:
            raise ValueError("line %d has only %d characters" % (line, length))
        return offset + utf8_len(text[:start + column - 1 - before])


# How the reader's child programs (``helper_argv``; ASCII only: they travel on a command line)
# start: SPEC (argv[1]) gives the seconds to answer in and the CPU seconds after which the kernel
# ends a runaway one, even when the relay is gone; the .txt is their stdin, read from spec["offset"].
CHILD_PROLOGUE = """# ocx-proxy %s
import json, os, re, sys, time
spec = json.loads(sys.argv[1])
deadline = time.monotonic() + spec["seconds"]
try:
    import resource
    resource.setrlimit(resource.RLIMIT_CPU, (spec["cpu"], spec["cpu"]))
except (ImportError, ValueError, OSError):
    pass
os.lseek(0, spec["offset"], os.SEEK_SET)
stdin = os.fdopen(0, "rb")
"""
# The pattern search (Spill.search) prints the lines to show, grep style ("12:" a match, "11-" a
# context line, "--" between groups), and the line to go on from when it stopped early (budget or time).
SEARCH_PROGRAM = CHILD_PROLOGUE % "pattern search" + """\
import collections
regex, context, first = re.compile(spec["pattern"]), spec["context"], spec["line"]
WIDTH = 400  # what is shown of a long line, around the match

def show(number, text, match):
    start = 0
    if len(text) > WIDTH:
        start = max(0, match.start() - 100) if match else 0
        text = "%s%s\\u2026(line of %d chars; read it with column=%d)" % (
            "\\u2026" if start else "", text[start:start + WIDTH], len(text), start + 1)
    return "%d%s%s\\n" % (number, ":" if match else "-", text)

before = collections.deque(maxlen=context)
shown, size, after, last, resume = [], 0, 0, 0, None
for number, raw in enumerate(stdin, first):
    if size > spec["budget"] or (number > first and time.monotonic() > deadline):
        resume = number
        break
    text = raw.decode("utf-8", "replace")
    text = text[:-1] if text.endswith("\\n") else text
    match = regex.search(text)
    if not match and not after:
        if context:
            before.append((number, show(number, text, None)))
        continue
    after = context if match else after - 1
    group = list(before) + [(number, show(number, text, match))]
    before.clear()
    for n, line in group:
        line = ("--\\n" if context and last and n > last + 1 else "") + line
        shown.append([n, line])
        size, last = size + len(line), n
sys.stdout.write(json.dumps({"shown": shown, "next": resume}))
"""


class SpillSearch:
    """A pattern search or path query of one spill, ready to run (``Spill.search``, ``Spill.query``): start
    ``argv`` with ``stdin`` (the opened ``.txt``, closed by the caller once started); ``answer`` turns what it
    printed into ``(text, hint)`` or ValueError; ``slow`` is the error when it ran out of time."""

    def __init__(self, what, advice, argv, stdin, keys, finish):
        self.what = what
        self.slow = "the %s took longer than %d s and was stopped; %s" % (what, SEARCH_SECONDS, advice)
        self.argv = argv
        self.stdin = stdin
        self.keys = keys  # what the program prints, handed to ``finish``
        self.finish = finish

    def answer(self, output):
        try:
            result = json.loads(output)
            values = [result[key] for key in self.keys]
        except (ValueError, TypeError, KeyError):
            raise ValueError("the %s ended without an answer" % self.what)
        return self.finish(*values)


# A name in the path syntax (parse_json_path; JSON_PATH_PROGRAM writes names back with it), as RFC 9535's
# shorthand has it (non-ASCII as "not ASCII": a class up to U+10FFFF costs ~10 ms to compile at every start).
_PATH_NAME = r"(?:[A-Za-z_]|[^\x00-\x7f])(?:[A-Za-z0-9_]|[^\x00-\x7f])*"
# The path query (Spill.query) walks the JSON text by byte offsets, building no value it does not show (numbers
# and strings come out as written); a value skipped is measured a chunk at a time with bytes methods.
JSON_PATH_PROGRAM = CHILD_PROLOGUE % "path query" + "NAME = re.compile(%r)\n" % (_PATH_NAME + r"\Z") + r"""
import itertools
sys.setrecursionlimit(20000)
b = stdin.read()
STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
WHOLE = re.compile(rb'[^"]*(?:"[^"\\]*(?:\\.[^"\\]*)*"[^"]*)*')  # up to a string cut short
RUN = re.compile(rb'[^"\[\]{}]*(?:"[^"\\]*(?:\\.[^"\\]*)*"[^"\[\]{}]*)*')  # up to the next bracket
SPACE = re.compile(rb'[ \t\r\n]*')
SCALAR = re.compile(rb'[^,\]}\s]+')
COMPACT = re.compile(rb'("[^"\\]*(?:\\.[^"\\]*)*"?)|[ \t\r\n]+')
INNER = re.compile(rb'\[[^\[\]{}]*\]|\{[^\[\]{}]*\}')
NOT_BRACKETS = bytes(c for c in range(256) if c not in b"[]{}")
NOT_STRUCTURE = bytes(c for c in range(256) if c not in b"[]{},")
CHUNK = 1 << 16
ends = {}  # byte offset of an array or object -> its end, once measured


class Bad(Exception):
    pass


def ws(i):
    return SPACE.match(b, i).end()


def walk(i, end, depth):
    # Bracket by bracket from i (outside a string): (i, 0) past the value, or (i >= end, depth).
    while True:
        i = RUN.match(b, i).end()
        if i >= len(b):
            raise Bad("the JSON text is cut short")
        depth += 1 if b[i] in b"[{" else -1
        i += 1
        if depth == 0 or i >= end:
            return i, depth


def chunk_at(i, end):
    # (stop, b[i:stop] with its strings taken out): one chunk from i (outside a string) that cuts no string,
    # or a string longer than a chunk.
    chunk = b[i:min(end, i + CHUNK)]
    if b"\\" in chunk:
        stop = WHOLE.match(chunk).end()
        left = STRING.sub(b"", chunk[:stop])
    else:
        stop = chunk.rfind(b'"') if chunk.count(b'"') % 2 else len(chunk)
        left = b"".join(chunk[:stop].split(b'"')[::2])
    return (i + stop, left) if stop else (skip(i), b"")


def skip(i):
    # The end of the value that starts at byte i.
    c = b[i:i + 1]
    if c in (b"[", b"{"):
        if i not in ends:
            ends[i] = measure(i)
        return ends[i]
    found = (STRING if c == b'"' else SCALAR).match(b, i)
    if not found:
        raise Bad("no JSON value at byte %d" % i)
    return found.end()


def measure(i):
    # The end of the array or object at byte i.
    depth = 0
    while True:
        stop, left = chunk_at(i, len(b))
        brackets = left.translate(None, NOT_BRACKETS)
        while b"[]" in brackets or b"{}" in brackets:
            brackets = brackets.replace(b"[]", b"").replace(b"{}", b"")
        closes = len(brackets) - len(brackets.lstrip(b"]}"))
        if closes < depth:  # the value goes on past this chunk
            depth += len(brackets) - 2 * closes
            i = stop
            continue
        i, depth = walk(i, stop, depth)
        if depth == 0:
            return i


def members(i):
    # (key or index, start) of each member of the container at byte i; its end is only looked for once
    # the next member is asked for, so that a walk into a big value need not measure it first.
    is_object = b[i:i + 1] == b"{"
    close = b"}" if is_object else b"]"
    i = ws(i + 1)
    n = 0
    while b[i:i + 1] != close:
        if time.monotonic() > deadline:
            raise TimeoutError()
        key = n
        if is_object:
            found = STRING.match(b, i)
            if not found:
                raise Bad("no key at byte %d" % i)
            key = json.loads(found.group().decode("utf-8", "replace"))
            i = ws(found.end())
            if b[i:i + 1] != b":":
                raise Bad("no ':' at byte %d" % i)
            i = ws(i + 1)
        yield key, i
        n, i = n + 1, ws(skip(i))
        if b[i:i + 1] == b",":
            i = ws(i + 1)
        elif b[i:i + 1] != close:
            raise Bad("no ',' nor '%s' at byte %d" % (close.decode(), i))


def count(i, end):
    # Members of the container b[i:end]: its top-level commas, once strings and inner containers are gone.
    # (A chunk at a time: bytes methods are 10 times faster than a walk member by member.)
    empty = ws(i + 1) == end - 1
    flat, i = [], i + 1
    while i < end - 1:
        stop, left = chunk_at(i, end - 1)
        flat.append(left.translate(None, NOT_STRUCTURE))
        i = stop
    flat, removed = b"".join(flat), 1
    while removed:
        flat, removed = INNER.subn(b"", flat)
    return 0 if empty else flat.count(b",") + 1


def step(key):
    if isinstance(key, int):
        return "[%d]" % key
    return "." + key if NAME.match(key) else "[%s]" % json.dumps(key)


def window(i, low, high):
    # Members low:high (Python slice) of the array at byte i.
    if (low or 0) < 0 or (high is not None and high < 0):
        low, high, _ = slice(low, high).indices(count(i, skip(i)))
    for key, start in members(i):
        if high is not None and key >= high:
            return
        if key >= (low or 0):
            yield key, start


def descend(name, quoted, path, i):
    # Every member named ``name`` under the container at byte i, in document order.
    if b[i:i + 1] not in (b"[", b"{"):
        return
    end = skip(i)
    if b.find(b"\\", i, end) < 0 and b.find(quoted, i, end) < 0:
        return
    for key, start in members(i):
        where = path + step(key)
        if key == name:
            yield where, start
        yield from descend(name, quoted, where, start)


def select(k, path, i):
    if k == len(steps):
        yield path, i
        return
    kind, c = steps[k][0], b[i:i + 1]
    if kind == "descend":
        name = steps[k][1]
        found = descend(name, json.dumps(name, ensure_ascii=False).encode("utf-8"), path, i)
    elif kind == "all" and c in (b"[", b"{"):
        found = ((path + step(key), start) for key, start in members(i))
    elif kind == "key" and c == b"{":  # the first member of that name: the rest of the object is not read
        found = itertools.islice(((path + step(key), start) for key, start in members(i) if key == steps[k][1]), 1)
    elif kind in ("index", "slice") and c == b"[":
        low, high = steps[k][1], steps[k][2] if kind == "slice" else steps[k][1] + 1 or None
        found = ((path + step(key), start) for key, start in window(i, low, high))
    else:
        return
    for where, start in found:
        yield from select(k + 1, where, start)


def compact(i, end, limit):
    # The JSON b[i:end] without the spaces between tokens: more than ``limit`` characters of it, or all.
    size = 4 * limit + 64
    while True:
        piece = COMPACT.sub(lambda m: m.group(1) or b"", b[i:min(end, i + size)]).decode("utf-8", "replace")
        if i + size >= end or len(piece) > limit + 1:
            return piece
        size *= 4


def describe(i):
    # Counting is a pass of bytes methods over what skip() has just measured anyway: every container says
    # how many members it has, however big ("how many?" should not cost a page of its items).
    c, end = b[i:i + 1], skip(i)
    if c in (b"{", b"["):
        what = ("object", "keys") if c == b"{" else ("array", "items")
        return "%s, %d %s, %d bytes" % (what[0], count(i, end), what[1], end - i)
    if c == b'"':
        text = json.loads(b[i:end].decode("utf-8", "replace"))
        return "string, %d chars: %s" % (len(text), compact(i, end, 60)[:60] + ("..." if end - i > 60 else ""))
    return ("number " if c in b"-0123456789" else "") + b[i:end].decode("utf-8", "replace")


def outline(path, i):
    yield "%s: %s" % (path, describe(i))
    if b[i:i + 1] in (b"{", b"["):
        for key, start in members(i) if b[i:i + 1] == b"{" else window(i, 0, 3):
            yield "  %s: %s" % (step(key), describe(start))


def lines(limit):
    for path, i in select(0, "$", top):
        if spec["outline"]:
            yield from outline(path, i)
        else:
            yield "%s: %s" % (path, compact(i, skip(i), limit))


steps, line, column, budget = spec["steps"], spec["line"], spec["column"], spec["budget"]
text, complete, resume, error = [], True, None, None
try:
    top = ws(0)
    top_end = len(b.rstrip())
    if b[top:top + 1] not in (b"[", b"{") or b[top_end - 1:top_end] != (b"]" if b[top:top + 1] == b"[" else b"}"):
        raise Bad("the text of this spill is not a JSON object or array (search it with pattern)")
    size = 0
    for n, shown in enumerate(lines(column + budget), 1):
        if n < line:
            continue
        shown = (shown[column - 1:] if n == line else shown) + "\n"
        text.append(shown)
        size += len(shown)
        if size > budget:
            complete = False
            break
except TimeoutError:
    complete, resume = False, line + len(text)
except Bad as exc:
    error = "bad JSON: %s" % exc
except RecursionError:
    error = "the JSON text is nested too deep to walk"
if error is None and resume is not None and not text:
    error = "the path query found nothing in %s s; give a narrower path" % spec["seconds"]
sys.stdout.write(json.dumps({"text": "".join(text), "complete": complete, "next": resume, "error": error}))
"""


_PATH_STEP_RE = re.compile(r"""
    \.\.(?P<descend>{name})
  | \.(?P<name>{name})
  | \.\*(?P<dot_all>)
  | \[\s*(?:
        (?P<all>\*)
      | (?P<string>"(?:[^"\\\x00-\x1f]|\\.)*")
      | '(?P<quoted>[^'\\\x00-\x1f]*)'
      | (?P<low>-?\d+)?\s*(?P<colon>:)\s*(?P<high>-?\d+)?
      | (?P<index>-?\d+)
    )\s*\]
""".format(name=_PATH_NAME), re.X)
_PATH_NAME_RE = re.compile(_PATH_NAME + r"\Z")
_PATH_STEP_FORMATS = {"key": ".%s", "descend": "..%s", "index": "[%d]", "all": "[*]"}


def parse_json_path(path):
    """The steps of ``path`` (``$``, ``.key``, ``["key"]``, ``['key']``, ``[n]``, ``[a:b]``, ``[*]``, ``.*``,
    ``..key``), each a list: ``["key", name]``, ``["index", n]``, ``["slice", a or None, b or None]``,
    ``["all"]``, ``["descend", name]``.  ValueError saying where a bad path goes wrong."""
    if not isinstance(path, str):
        raise ValueError("path must be a string, not %.40r" % (path,))
    if len(path) > READER_MAX_PATTERN:
        raise ValueError("path must be at most %d characters" % READER_MAX_PATTERN)
    if not path.startswith("$"):
        raise ValueError("a path starts with $ (the whole JSON text), as in $.items[0:10].name")
    steps, pos = [], 1
    while pos < len(path):
        found = _PATH_STEP_RE.match(path, pos)
        if not found:
            raise ValueError("bad path %s: cannot read it from character %d (%.20r); a path is made of .key, "
                             '["key"], [n], [a:b], [*] and ..key steps after $' % (
                                 json.dumps(path, ensure_ascii=False), pos + 1, path[pos:]))
        group = found.groupdict()
        numbers = [None if group[k] is None else int(group[k]) for k in ("low", "high", "index")]
        if any(n is not None and abs(n) > READER_MAX_NUMBER for n in numbers):
            raise ValueError("bad path: the numbers in [ ] must be from -%d to %d" % ((READER_MAX_NUMBER,) * 2))
        if group["string"] is not None:
            try:
                group["quoted"] = json.loads(group["string"])
            except ValueError:
                raise ValueError("bad path: %s is not a JSON string" % group["string"])
        if group["descend"] is not None:
            steps.append(["descend", group["descend"]])
        elif group["name"] is not None or group["quoted"] is not None:
            steps.append(["key", group["name"] if group["name"] is not None else group["quoted"]])
        elif group["colon"] is not None:
            steps.append(["slice", numbers[0], numbers[1]])
        elif group["index"] is not None:
            steps.append(["index", numbers[2]])
        else:
            steps.append(["all"])
        pos = found.end()
    return steps


def json_path_text(steps):
    """``steps`` (``parse_json_path``) written as a path, the shortest way (characters as they are)."""
    out = ["$"]
    for step in steps:
        if step[0] == "key" and not _PATH_NAME_RE.match(step[1]):
            out.append("[%s]" % json.dumps(step[1], ensure_ascii=False))
        elif step[0] == "slice":
            out.append("[%s:%s]" % tuple("" if n is None else n for n in step[1:]))
        else:
            out.append(_PATH_STEP_FORMATS[step[0]] % tuple(step[1:]))
    return "".join(out)


def helper_argv(program, spec):
    """The command line that runs ``program`` (SEARCH_PROGRAM, JSON_PATH_PROGRAM) on ``spec``, bounded in time:
    it answers by SEARCH_SECONDS / 2, and the kernel stops it a little after SEARCH_SECONDS of CPU."""
    if not sys.executable:
        raise ValueError("searching a spill needs a Python interpreter to start, and sys.executable is empty")
    spec = dict(spec, seconds=SEARCH_SECONDS / 2, cpu=SEARCH_SECONDS + 2)
    return [sys.executable, "-I", "-S", "-c", program, json.dumps(spec)]


def reader_number(name, value, least=1, most=READER_MAX_NUMBER):
    """``value`` when it is an integer from ``least`` to ``most``, else ValueError naming argument ``name``."""
    if type(value) is not int or not least <= value <= most:
        raise ValueError("%s must be an integer from %d to %d, not %.40r" % (name, least, most, value))
    return value


class ReadPage:
    """One page of ``Spill.read``, ``search`` or ``query``, filled up to a budget of characters and bytes (as JSON)."""

    def __init__(self, budget_chars, budget_bytes):
        if budget_chars < 1 or budget_bytes < 0:
            raise ValueError("the page budget is too small for one character")
        self.budget_chars = budget_chars
        self.budget_bytes = budget_bytes or float("inf")
        self.chars = 0
        self.bytes = 0
        self.parts = []

    def _fits(self, text):
        """(characters, UTF-8 bytes) of ``text`` inside a JSON string when they fit in what is left, else None."""
        inner = dumps(text)[1:-1]
        chars, size = len(inner), utf8_len(inner)
        if self.chars + chars > self.budget_chars or self.bytes + size > self.budget_bytes:
            return None
        return chars, size

    def add(self, text):
        """Add ``text`` when it fits in what is left of the budget; True when it did."""
        taken = self._fits(text)
        if taken:
            self.parts.append(text)
            self.chars += taken[0]
            self.bytes += taken[1]
        return bool(taken)

    def range(self, window, complete, line, column, lines):
        """A page of ``window``, the text from ``line``/``column`` on (all the rest when ``complete``, else more
        than the budget): ``(text, (line, column) of the next page or None)``."""
        pos, taken = 0, 0
        while True:
            newline = window.find("\n", pos)
            end = newline + 1 if newline >= 0 else len(window)
            piece = window[pos:end]
            if not self.add(piece):
                if self.parts:
                    return self.text(), (line, column)
                cut = self.fill(piece)  # a line longer than a page: cut by characters
                return self.text(), (line, column + cut)
            if newline < 0:  # the window ends and the page is not full: the text ends
                return self.text(), None
            pos, line, column, taken = end, line + 1, 1, taken + 1
            if lines is not None and taken >= lines:
                return self.text(), (line, 1) if pos < len(window) or not complete else None

    def fill(self, text):
        """Add as much of the start of ``text`` as fits (at least one character); returns how much."""
        low, high = 0, min(len(text), self.budget_chars - self.chars)
        while low < high:  # binary search: escapes make the cost of a prefix uneven
            middle = (low + high + 1) // 2
            if self._fits(text[:middle]):
                low = middle
            else:
                high = middle - 1
        if low == 0:
            raise ValueError("the page budget is too small for one character")
        self.add(text[:low])
        return low

    def pack(self, shown, end):
        """The lines a search shows (``[number, text]`` each) as a page: ``(text, (line, 1) of the next, or end)``."""
        for number, text in shown:
            if not self.add(text):
                if self.parts:
                    return self.text(), (number, 1)
                self.fill(text)
        return self.text(), end

    def text(self):
        return "".join(self.parts)


# ---------------------------------------------------------------------------
# Spill: the budget, saving oversized responses and building previews
# ---------------------------------------------------------------------------

# Bytes that may disappear when a line is re-serialized compactly (see Budget.fit).
COMPACT_SHRINKABLE = b" \t\r\n/0123456789"
# A preview outlines a JSON text from its first this many characters (JsonOutline): reading them takes
# ~20 ms on a busy 2-core machine (4x as many: 50-100 ms), on the loop; the reader's outline walks the rest.
OUTLINE_SCAN_CHARS = 1 << 18
# Keys of an object and items of an array an outline shows, and characters of each one's JSON.
OUTLINE_MEMBERS = 40
OUTLINE_ITEMS = 3
OUTLINE_SNIPPET = 60
_JSON_SPACE_RE = re.compile(r"[ \t\r\n]*")
_JSON_COMPACT_RE = re.compile(r'("(?:[^"\\]|\\.)*"?)|[ \t\r\n]+')
# _head_count: a JSON string (or one cut at the end), what is not structure, a container with none inside.
_JSON_STRING_OR_CUT_RE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)')
_JSON_NOT_STRUCTURE_RE = re.compile(r'[^\[\]{},]+')
_JSON_INNER_RE = re.compile(r'\[[^\[\]{}]*\]|\{[^\[\]{}]*\}')
_JSON_OPENER_RE = re.compile(r'[\[{]')
# The opening quote and the whole characters of a JSON string (escapes not cut), up to where a match stops.
_JSON_STRING_HEAD_RE = re.compile(r'"[^"\\]*(?:\\(?:u[0-9a-fA-F]{4}|[^u])[^"\\]*)*')


def compact_floor(line, chars):
    """Fewest characters ``line`` (``chars`` long) could have re-serialized compactly: compact JSON only
    loses whitespace, escapes (\\uXXXX, \\/) and number digits (duplicate keys could lose more, so a line
    over the limit by this bound is spilled, never sent oversized)."""
    return chars - len(line) + len(line.translate(None, COMPACT_SHRINKABLE)) - 6 * line.count(b"\\u")


def _tool_results(msg):
    """The tool result ``msg`` answers with, and the one a completed task embeds (2026-07-28 tasks/get)."""
    result = msg.get("result")
    if not isinstance(result, dict):
        return []
    return [holder for holder in (result, result.get("result")) if isinstance(holder, dict)]


def skipped_member(msg, member):
    """The compact JSON of ``member`` of a tool result of ``msg`` (``_tool_results``) that also has the
    other one (content / structuredContent) for the client to show; else None."""
    for holder in _tool_results(msg) if member else ():
        if (isinstance(holder.get("content"), list) and holder.get("structuredContent") is not None
                and member in holder):
            try:
                return dumps(holder[member])
            except (ValueError, TypeError):   # NaN, a LongNumber: count it all
                return None
    return None


class Budget:
    """What one message may be as the client gets it: ``max_chars`` characters and ``max_bytes`` UTF-8
    bytes (0: no byte limit), not counting what it gets for free (``free``); with neither limit
    (``check_above`` 0) nothing is spilled.  A preview keeps ``preview_chars`` characters at most."""

    def __init__(self, max_chars=MAX_RESPONSE_CHARS, preview_chars=PREVIEW_CHARS, max_bytes=0, images_free=0,
                 model_skips=None):
        self.max_chars = max_chars
        self.preview_chars = preview_chars
        self.max_bytes = max_bytes
        self.images_free = images_free  # base64 image characters a message may carry beyond the budget
        self.model_skips = model_skips  # the tool result member the client never shows (see Profile)
        # A line has as many bytes as characters or more: one compare tells whether a limit may be crossed.
        self.check_above = min(max_bytes, max_chars) if max_bytes else max_chars

    @classmethod
    def for_client(cls, profile, options, declared_chars=None):
        """The budget of a client with the Profile ``profile``, where each of ``options.max_response_chars``,
        ``max_response_bytes``, ``preview_chars`` and ``max_image_bytes`` that is not None wins.  ``--max-response-chars
        0`` never spills, unless --max-response-bytes is given.  ``declared_chars``: the result size a tool declared
        for itself (its client's declared_chars_max at most), its budget in place of the profile's: no byte budget,
        the client no longer counting its text in tokens."""
        chars, size = options.max_response_chars, options.max_response_bytes
        if size is None:
            size = 0 if chars == 0 or declared_chars else profile.budget_bytes
        if chars is None:
            chars = declared_chars or profile.budget_chars
        preview = profile.preview_chars if options.preview_chars is None else options.preview_chars
        images = options.max_image_bytes
        images = (MAX_IMAGE_BYTES if profile.shows_images else 0) if images is None else images
        # A byte budget alone still gives previews a character bound, which never spills by itself.
        return cls(chars or size, preview, size, images, profile.model_skips)

    def fits(self, chars, size):
        """True when ``chars`` characters and ``size`` UTF-8 bytes are within the budget."""
        return chars <= self.max_chars and (not self.max_bytes or size <= self.max_bytes)

    def free(self, line, msg):
        """(characters, UTF-8 bytes) of ``msg`` (``line`` parsed) that do not count: the tool result member
        the client never shows its model (``model_skips``), measured compact (a float may print a character
        longer: the margins absorb that), and image data, all of it when within ``images_free``."""
        skipped = skipped_member(msg, self.model_skips)
        free = (len(skipped), utf8_len(skipped)) if skipped else (0, 0)
        if self.model_skips == "content" and skipped:
            return free   # the images are in the content the model never sees
        if not self.images_free or b'"image"' not in line:
            return free
        total = 0  # base64 characters of the image blocks
        for holder in _tool_results(msg):
            content = holder.get("content")
            for block in content if isinstance(content, list) else ():
                if isinstance(block, dict) and block.get("type") == "image" and isinstance(block.get("data"), str):
                    total += len(block["data"])
        total = total if total <= self.images_free else 0
        return free[0] + total, free[1] + total

    def fit(self, line, msg, chars):
        """How ``line`` (bytes, ``msg`` parsed, ``chars`` characters) reaches the client within the budget:
        ``(True, None)`` as it is, ``(True, text)`` as its compact JSON, ``(False, None)`` spilled.  The
        costly dumps (14 ms for 5 MB) is skipped when the line cannot compact under the limit."""
        size = len(line)
        free_chars, free_bytes = self.free(line, msg)
        if self.fits(chars - free_chars, size - free_bytes):
            return True, None
        floor = compact_floor(line, chars)
        if self.fits(floor - free_chars, floor + size - chars - free_bytes):
            compact = dumps(msg)
            compact_size = len(compact.encode("utf-8", "surrogatepass")) if self.max_bytes else 0
            if self.fits(len(compact) - free_chars, compact_size - free_bytes):
                return True, compact
        return False, None

    def may_fit(self, line, chars):
        """False when ``line`` (``chars`` characters, not parsed) is over the character budget by more
        than compacting and the image allowance could take off: it will be spilled."""
        return compact_floor(line, chars) - self.images_free <= self.max_chars

    def page(self, envelope):
        """(characters, UTF-8 bytes or 0) a page of text may have in an answer that also holds ``envelope``,
        so that the answer fits (without a character budget: the default one)."""
        max_chars = self.max_chars or MAX_RESPONSE_CHARS
        return max_chars - len(envelope), self.max_bytes and self.max_bytes - utf8_len(envelope)

    def describe(self):
        """The budget in words, for the log."""
        spilled = "spilled over %d characters" % self.max_chars
        if self.max_bytes:
            spilled += " or %d bytes" % self.max_bytes
        images = "up to %d bytes not counted" % self.images_free if self.images_free else "counted"
        return "responses %s, previews of %d characters, images %s" % (
            spilled if self.max_chars else "never spilled", self.preview_chars, images)


class Spill:
    """Saves oversized messages to disk and builds the preview that replaces them; pages through them.

    ``rewrite()`` is the contract: given an upstream line (bytes) known to be over ``budget`` (a
    ``Budget``), it returns the message to send instead (compact JSON within the budget) and the files
    written, or ``None`` to forward it untouched (lifecycle and catalog responses, requests, disk errors).
    """

    def __init__(self, output_dir, budget=None, retention_days=RETENTION_DAYS):
        self.output_dir = os.path.abspath(output_dir)
        self.budget = budget if budget is not None else Budget()
        self.retention_days = retention_days
        self.directory = None  # where files last went: output_dir or its private subdirectory
        self.reader_name = None  # the reader tool the previews name (set by Reader.advertise); None: no tool
        self.spilled = {}  # spill id (file stem) -> (its .txt path, TextIndex): all that read() may open

    def open_dir(self, create=True):
        """The spill directory, opened and checked on every use (``open_spill_dir``): a few system calls
        per spill, and a directory removed or fixed meanwhile is picked up."""
        where = open_spill_dir(self.output_dir, create)
        if where is not None and where.path != self.directory:
            if where.path != self.output_dir:
                log.info("%s is shared or not ours: spill files go to the private directory %s"
                         % (self.output_dir, where.path))
            self.directory = where.path
        return where

    def remove_expired(self, now=None):
        """Delete this tool's own spill files older than ``retention_days`` (0: none), and the temporary
        files of relays killed while writing one (``stale_temp``); returns how many.  Only regular files
        named like ours, in the directory spills go to: a link is never followed nor removed."""
        where = self.open_dir(create=False)
        if where is None:
            return 0
        now = now or time.time()
        cutoff = now - self.retention_days * 86400 if self.retention_days > 0 else None
        removed = 0
        with where:
            for name in where.names():
                temp = TEMP_NAME_RE.match(name)
                if not temp and not (cutoff is not None and SPILL_NAME_RE.match(name)):
                    continue
                try:
                    info = where.lstat(name)
                    if stat.S_ISREG(info.st_mode) and (stale_temp(temp, info.st_mtime, now) if temp
                                                       else info.st_mtime < cutoff):
                        where.remove(name)
                        removed += 1
                except OSError as exc:
                    log.warning("could not remove old spill file %s: %s" % (os.path.join(where.path, name), exc))
        return removed

    def write_file(self, name, data):
        """``PrivateDir.write`` of ``data`` as ``name`` in the spill directory; returns the path written."""
        with self.open_dir() as where:
            return where.write(name, data)

    def stem(self, line, method, msg_id):
        import datetime
        import hashlib  # only when spilling: it loads OpenSSL (+4 MB resident, ~3.5 ms at start-up)

        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
        # The hash only keeps names apart: both ends and the length of a long line do it at a fraction of the cost.
        sample = line if len(line) <= 131072 else line[:65536] + line[-65536:] + str(len(line)).encode()
        digest = hashlib.sha256(sample).hexdigest()[:10]
        return "%s_%s_id-%s_%s" % (stamp, safe_name(method or "message"), safe_name(str(msg_id), 24), digest)

    def save(self, line, msg, method, text, stem=None):
        """Write ``<stem>.json`` (the exact line), then ``save_text``: all or nothing."""
        saved = self.save_line(line, method, msg.get("id"), stem)
        try:
            return self.save_text(saved, text)
        except BaseException:
            self.discard(saved)
            raise

    def save_line(self, line, method, msg_id, stem=None):
        """Write ``<stem>.json``, the exact line; returns ``(stem, path)`` for ``save_text``.  ``stem``: one
        ``stem()`` gave earlier (a detached call's answer is saved under the id its client was given)."""
        stem = stem or self.stem(line, method, msg_id)
        with self.open_dir() as where:
            return stem, where.write(stem + ".json", line)

    def discard(self, saved):
        """Remove a ``<stem>.json`` written by ``save_line`` (its spill failed)."""
        try:
            os.unlink(saved[1])
        except OSError:
            pass

    def save_text(self, saved, text):
        """Write the blobs and ``<stem>.txt`` of a saved line; returns ``(SpillFiles, full text)``.
        When one file fails, the others written here are removed and the error raised."""
        stem, json_path = saved
        with self.open_dir() as where:
            try:
                blob_paths = []
                for n, (data, mime, note) in enumerate(text.blobs, 1):
                    try:
                        raw = base64.b64decode(data, validate=False)
                    except (ValueError, TypeError):
                        continue
                    ext = MIME_EXTENSIONS.get(mime or "")
                    if not ext:
                        import mimetypes  # only for unusual blob types: it costs ~5 ms at start-up
                        ext = mimetypes.guess_extension(mime or "") or ".bin"
                    path = where.write("%s.%d%s" % (stem, n, ext), raw)
                    blob_paths.append(path)
                    text.parts[note] = text.parts[note].replace(": saved as file %d]" % n, ": saved as %s]" % path)
                index = TextIndex()
                txt_path = where.write(stem + ".txt", index.watch(text.encoded()))
            except BaseException:
                where.discard(where.written)  # no half spill is left behind
                raise
        self.spilled[stem] = (txt_path, index)
        return SpillFiles(json_path, txt_path, blob_paths), text.text()

    def read(self, spill_id, line=1, lines=None, column=1, budget_chars=MAX_RESPONSE_CHARS, budget_bytes=0):
        """One page of the ``.txt`` of spill ``spill_id`` (an id this object gave, never a path) and the
        ``hint`` to the next: the text from ``line`` and ``column`` (1-based; lines end with "\\n" alone), at
        most ``lines`` lines, ``budget_chars`` characters and ``budget_bytes`` UTF-8 bytes (0: no limit) in JSON,
        a line too long for a page cut by characters; pages end to end give the text back exactly.  A bad id
        or argument, or a place the text does not have, raises ValueError saying so."""
        reader_number("line", line)
        reader_number("column", column)
        if lines is not None:
            reader_number("lines", lines)
        page = ReadPage(budget_chars, budget_bytes)
        fd, index = self._open_text(spill_id)
        with os.fdopen(fd, "rb") as handle:
            handle.seek(index.locate(handle, line, column))
            # At most budget_chars characters of 4 bytes: one more tells the window from the text's end.
            want = 4 * (budget_chars + 1)
            data = handle.read(want)
        window = codecs.getincrementaldecoder("utf-8")("replace").decode(data, len(data) < want)
        complete = len(data) < want and len(window) <= budget_chars
        text, where = page.range(window[:budget_chars + 1], complete, line, column, lines)
        return text, self.read_hint(spill_id, where, lines, None, 0, total=index.lines())

    def search(self, spill_id, pattern, line=1, context=0, budget_chars=MAX_RESPONSE_CHARS, budget_bytes=0):
        """A search for ``pattern`` (a Python regular expression) in the lines of spill ``spill_id`` from ``line``
        on, ready to run: a ``SpillSearch`` (``SEARCH_PROGRAM``) listing them with ``context`` lines around.
        In a child that can be killed: ``re`` holds the GIL, and ``(a+)+b`` can take years on one line.
        Bad arguments raise ValueError, as for ``read`` and ``query``."""
        reader_number("line", line)
        reader_number("context", context, 0, READER_MAX_CONTEXT)
        if not isinstance(pattern, str):
            raise ValueError("pattern must be a string, not %.40r" % (pattern,))
        if len(pattern) > READER_MAX_PATTERN:
            raise ValueError("pattern must be at most %d characters" % READER_MAX_PATTERN)
        try:
            re.compile(pattern)
        except (re.error, OverflowError, RecursionError) as exc:
            raise ValueError("bad pattern %.80r: %s" % (pattern, exc))
        page = ReadPage(budget_chars, budget_bytes)
        fd, index = self._open_text(spill_id)
        try:
            with os.fdopen(fd, "rb", closefd=False) as handle:
                spec = {"pattern": pattern, "line": line, "offset": index.locate(handle, line, 1),
                        "context": context, "budget": budget_chars}
            argv = helper_argv(SEARCH_PROGRAM, spec)
        except BaseException:
            os.close(fd)
            raise

        def finish(shown, resume):
            text, where = page.pack(shown, (resume, 1) if resume else None)
            return text, self.read_hint(spill_id, where, None, pattern, context)

        advice = "simplify the pattern (nested repeats such as (a+)+ can take forever)"
        return SpillSearch("pattern search", advice, argv, fd, ("shown", "next"), finish)

    def query(self, spill_id, path, outline=False, line=1, column=1, budget_chars=MAX_RESPONSE_CHARS,
              budget_bytes=0):
        """A path query of spill ``spill_id``, ready to run: a ``SpillSearch`` (``JSON_PATH_PROGRAM``) listing
        the values ``path`` selects (``parse_json_path``) as ``path: compact JSON`` lines, numbers and strings
        as written, or with ``outline`` each node described; pages are lines and columns of that listing."""
        steps = parse_json_path(path)
        reader_number("line", line)
        reader_number("column", column)
        if type(outline) is not bool:
            raise ValueError("outline must be true or false, not %.40r" % (outline,))
        spec = {"steps": steps, "outline": outline, "line": line, "column": column, "budget": budget_chars,
                "offset": 0}
        argv = helper_argv(JSON_PATH_PROGRAM, spec)
        page = ReadPage(budget_chars, budget_bytes)

        def finish(text, complete, resume, error):
            if error:
                raise ValueError(error)
            if not text and line == 1 and column == 1:
                return "", "[nothing matches %s]" % path
            shown, where = page.range(text, complete or resume is not None, line, column, None)
            where = where or ((resume, 1) if resume else None)
            return shown, self.read_hint(spill_id, where, None, None, 0, path, outline)

        advice = "give a narrower path (an index or a slice rather than [*] or ..)"
        fd, _ = self._open_text(spill_id)
        return SpillSearch("path query", advice, argv, fd, ("text", "complete", "next", "error"), finish)

    def read_hint(self, spill_id, where, lines, pattern, context, path=None, outline=False, total=0):
        """What ends a page: ``[end of the text]`` (``[no more matches]``, ``[end of the outline]``: an outline
        describes, it does not search), or the call of the next page
        (``[next: ...]``, as scripts parse it) then where the rest starts (READER_MORE), as the reader tool's
        description tells a model: facts, not instructions (some clients tell their model to ignore directives
        in a result).  ``total``: the lines of the text read."""
        if where is None:
            if outline:
                return "[end of the outline]"
            return "[end of the text]" if pattern is None and path is None else "[no more matches]"
        line, column = where
        place = "line=%d" % line + (", column=%d" % column if column > 1 else "")
        what = "search" if pattern is not None else "listing" if path is not None else "text of %d lines" % total
        call = '%s(id="%s", %s' % (self.reader_name or READER_TOOL_NAME, spill_id, place)
        if lines is not None:
            call += ", lines=%d" % lines
        if pattern is not None:
            call += ", pattern=%s" % json.dumps(pattern, ensure_ascii=False)
            if context:
                call += ", context=%d" % context
        if path is not None:
            call += ", path=%s" % json.dumps(path, ensure_ascii=False)
            if outline:
                call += ", outline=true"
        return "[next: %s)]\n[%s: %s %s]" % (call, what, READER_MORE, place)

    def _open_text(self, spill_id):
        """``(descriptor, TextIndex)`` of the ``.txt`` of spill ``spill_id``, opened in the checked spill
        directory (``PrivateDir.open_read``: no link, no FIFO); ValueError for anything but the id of a spill
        of ours still on disk at its size (another size: changed since, the index would not match)."""
        if not isinstance(spill_id, str) or not spill_id or re.search(r"[/\\\x00]", spill_id) or ".." in spill_id:
            raise ValueError("invalid spill id %.80r: give the id a preview names, not a path" % (spill_id,))
        if spill_id not in self.spilled:
            raise ValueError("unknown spill id %.80r: only what this ocx-proxy session spilled can be read"
                             % spill_id)
        path, index = self.spilled[spill_id]
        gone = ValueError("spill %s is no longer on disk" % spill_id)
        where = open_spill_dir(self.output_dir, create=False)
        if where is None:
            raise gone
        with where:
            if where.path != os.path.dirname(path):
                raise gone
            try:
                fd, info = where.open_read(spill_id + ".txt")
            except OSError:
                raise gone
        if not stat.S_ISREG(info.st_mode) or info.st_size != index.size:
            os.close(fd)
            raise ValueError("spill %s was changed on disk (%s); it can no longer be read" % (
                spill_id, "its size changed" if stat.S_ISREG(info.st_mode) else "not a regular file any more"))
        return fd, index

    def rewrite(self, line, msg, method, request_params=None, protocol_version=None, original_chars=None,
                saved=None, budget=None):
        """Replace an oversized message (see the class docstring), within ``budget`` (None: ``self.budget``).
        ``saved`` is ``save_line``'s answer when the line was written before it was parsed (``Relay._spill_later``):
        ``line`` is then None, and the ``.json`` is left for the caller to remove on failure."""
        kind = message_kind(msg)
        if kind in ("request", None) or (kind == "notification" and msg.get("method") != "notifications/message"):
            return None
        if kind == "response" and "result" in msg and never_spilled(method, msg["result"]):
            result_type = msg["result"].get("resultType") if isinstance(msg["result"], dict) else None
            log.warning("%s response%s of %d characters is over --max-response-chars but is never rewritten"
                        % (method, " (resultType %s)" % result_type if result_type not in (None, "complete") else "",
                           original_chars if line is None else len(line)))
            return None
        text = readable_text(msg, method)
        try:
            files, full_text = self.save(line, msg, method, text) if saved is None else self.save_text(saved, text)
        except OSError as exc:
            log.error("could not save oversized %s response under %s (%s); forwarding it unchanged"
                      % (method or "message", self.output_dir, exc))
            return None
        if original_chars is None:
            original_chars = char_count(line)
        original_bytes = len(line) if line is not None else os.path.getsize(files.json_path)
        builder = PreviewBuilder(msg, method, request_params, protocol_version, files, original_chars,
                                 original_bytes, self.reader_name)
        return builder.fit(full_text, budget or self.budget), files


def _decode_within(text, i, stop):
    """``(value, end)`` of the JSON value at ``text[i]`` when it ends before ``stop``, else None (also when
    it is no JSON value).  Read from slices that grow: a value costs about its size, however big the text."""
    size = 4096
    while True:
        piece = text[i:min(stop, i + size)]
        try:
            value, end = _DECODER.raw_decode(piece)
        except (ValueError, RecursionError):
            value, end = None, 0
        # A number cut at the slice's end reads as a shorter one: only a value that ends on its own is sure.
        if end and (end < len(piece) or piece[end - 1] in '"]}' or i + end == len(text)):
            return value, i + end
        if i + size >= stop:
            return None
        size *= 8


def _json_members(text, i, stop, limit):
    """``(members, end)``: the first ``limit`` members of the object or array at ``text[i]``, each as
    ``(key or index, start, _decode_within answer)``, and where the container ends when they are all of
    it (else None: more follow, bad JSON, or the last member does not end before ``stop``, its answer None)."""
    is_object = text[i] == "{"
    close = "}" if is_object else "]"
    i = _JSON_SPACE_RE.match(text, i + 1).end()
    members = []
    while text[i:i + 1] != close:
        if len(members) == limit:
            return members, None
        key = len(members)
        if is_object:
            found = _decode_within(text, i, stop)
            i = _JSON_SPACE_RE.match(text, found[1]).end() if found and isinstance(found[0], str) else -1
            if i < 0 or text[i:i + 1] != ":":
                return members, None
            key, i = found[0], _JSON_SPACE_RE.match(text, i + 1).end()
        found = _decode_within(text, i, stop)
        members.append((key, i, found))
        if not found:
            return members, None
        i = _JSON_SPACE_RE.match(text, found[1]).end()
        if text[i:i + 1] == ",":
            i = _JSON_SPACE_RE.match(text, i + 1).end()
        elif text[i:i + 1] != close:
            return members, None
    return members, i + 1


def _head_count(text, i, stop):
    """How many members of the object or array at ``text[i]`` start before ``stop``, a floor of its length when
    it does not end there: the commas at its level once strings and the containers closed within are gone
    (regular expressions over the whole head: decoding member by member costs 10 times as much)."""
    head = _JSON_STRING_OR_CUT_RE.sub("0", text[i + 1:stop])
    flat, removed = _JSON_NOT_STRUCTURE_RE.sub("", head), 1
    while removed:
        flat, removed = _JSON_INNER_RE.subn("", flat)
    opened = _JSON_OPENER_RE.search(flat)   # a member cut short: the commas after its opener are inside it
    commas = flat[:opened.start() if opened else len(flat)].count(",")
    if opened:
        return commas + 1
    tail = head.rstrip(" \t\r\n")
    return commas + 1 if tail and not tail.endswith(",") else commas


def _head_chars(text, i, stop):
    """Characters of the JSON string at ``text[i]`` written before ``stop`` (escapes whole): the length of a
    string that does not end there is at least that."""
    try:
        return len(json.loads(_JSON_STRING_HEAD_RE.match(text, i, stop).group() + '"', strict=False))
    except ValueError:  # a bad escape: no JSON string, no length to give
        return 0


def _outline_value(text, i, found, stop):
    """``(type and size, start as written)`` of the JSON value at ``text[i]``, as the reader's outline says
    them; ``found`` is ``_decode_within``'s answer, None for a value that does not end before ``stop`` (its
    length is then a floor from what is there)."""
    end = found[1] if found else len(text)
    raw = _JSON_COMPACT_RE.sub(lambda m: m.group(1) or "", text[i:min(end, i + OUTLINE_SNIPPET * 8)])
    shown = raw[:OUTLINE_SNIPPET] + ("\u2026" if len(raw) > OUTLINE_SNIPPET or not found else "")
    kind = {"{": "object", "[": "array", '"': "string"}.get(text[i:i + 1], "value")
    if not found and kind == "string":
        return "string, at least %d chars" % _head_chars(text, i, stop), shown
    if not found and kind != "value":
        count = _head_count(text, i, stop)
        return "%s, at least %d %s, over %d characters" % (
            kind, count, "keys" if kind == "object" else "items", stop - i), shown
    if not found:
        return "value, over %d characters" % (stop - i), shown
    value = found[0]
    if isinstance(value, (dict, list)):
        unit = "keys" if kind == "object" else "items"
        return "%s, %d %s, %d bytes" % (kind, len(value), unit, utf8_len(text[i:end])), shown
    if isinstance(value, str):
        return "string, %d chars" % len(value), shown
    return ("number " if text[i] in "-0123456789" else "") + shown, ""


class JsonOutline:
    """The top level of a JSON text as a preview shows it (``JsonOutline.of``): ``lines``, its type and
    size then ``  .key: type, size: its start as written`` per member shown (sizes in UTF-8 bytes, as the
    reader's outline counts them); ``note``, what the reader tool does with JSON."""

    def __init__(self, lines, note):
        self.lines = lines
        self.note = note

    @classmethod
    def of(cls, text, reader_name=None):
        """The outline of ``text`` when it is a JSON object or array, else None.  Only its first
        OUTLINE_SCAN_CHARS characters are read: a longer text gets the members that end within them, and
        the lines say the rest was not read; a text within them that is no JSON has no outline."""
        start = _JSON_SPACE_RE.match(text).end()
        tail = text[-4096:]
        end = len(text) - len(tail) + len(tail.rstrip(" \t\r\n"))
        opener = text[start:start + 1]
        if opener not in ("{", "[") or text[end - 1:end] != ("}" if opener == "{" else "]"):
            return None
        kind, unit, limit = ("object", "keys", OUTLINE_MEMBERS) if opener == "{" else ("array", "items", OUTLINE_ITEMS)
        stop = min(end, start + OUTLINE_SCAN_CHARS)
        members, closed = _json_members(text, start, stop, limit)
        count = len(members) if closed == end else None
        if count is None and end - start <= OUTLINE_SCAN_CHARS:  # more members than shown, or bad JSON
            whole = None if closed else _decode_within(text, start, end)
            if whole is None or whole[1] != end:
                return None
            count = len(whole[0])
        lines = ["$: %s, %d %s, %d bytes" % (kind, count, unit, utf8_len(text[start:end])) if count is not None
                 else "$: %s, at least %d %s, %d characters" % (kind, _head_count(text, start, stop), unit,
                                                                 end - start)]
        steps = [["key", key] if opener == "{" else ["index", key] for key, _, _ in members]
        for step, (_, i, found) in zip(steps, members):
            lines.append("  %s: %s" % (json_path_text([step])[1:], ": ".join(filter(None, _outline_value(
                text, i, found, stop)))))
        if count is None:
            lines.append("  \u2026 (the outline reads the first %d characters only)" % OUTLINE_SCAN_CHARS)
        elif count > len(members):
            lines.append("  \u2026 %d more %s" % (count - len(members), unit))
        if not reader_name:
            return cls(lines, "")
        paths = [json_path_text([step]) + ("[0:10]" if text[i] == "[" else "")
                 for step, (_, i, _) in zip(steps, members) if text[i] in "[{"]
        example = "$[0:10]" if opener == "[" else (paths + [json_path_text(steps[:1])])[0]
        return cls(lines, '[%s also takes path="%s" (a JSONPath subset) and outline=true (one node described)]'
                   % (reader_name, example))

    def fit(self, room):
        """The outline in at most ``room`` characters: the first lines that fit, "  ..." for the others, and
        the note; "" when not even the first line fits."""
        kept, size = [], len(self.note) + 4
        for line in self.lines:
            if size + len(line) + 1 > room:
                break
            kept.append(line)
            size += len(line) + 1
        if not kept:
            return ""
        if len(kept) < len(self.lines):
            kept.append("  \u2026")
        return "\n".join(kept + [self.note] if self.note else kept)


class PreviewBuilder:
    """Builds the replacement message for one spilled message at a given preview size; a result for a
    request of 2026-07-28 or later (``protocol_version``) says ``resultType`` and keeps its required fields."""

    def __init__(self, msg, method, request_params, protocol_version, files, original_chars, original_bytes,
                 reader_name):
        self.msg = msg
        self.method = SPILL_AS.get(method, method)
        self.task_result = task_tool_result(method, msg.get("result"))
        self.request_params = request_params if isinstance(request_params, dict) else {}
        self.protocol_version = protocol_version
        self.files = files
        self.original_chars = original_chars
        self.original_bytes = original_bytes
        self.reader_name = reader_name

    def marker(self, text, detail=True):
        """What opens and closes a preview: where the whole is and how to read it, at both ends for a
        client that keeps only the head or the tail of a preview (Codex cuts by bytes)."""
        stem = os.path.basename(self.files.txt_path)[:-len(".txt")]
        # Information, not an instruction, and the tool named as the server has it: clients prefix it
        # (mcp__fx__read_spilled_output, mcp_fx_..., fx_..., fx-...).
        reader = '; the %s tool of this server returns it in pages, id="%s"' % (self.reader_name, stem) \
            if self.reader_name else ""
        if not detail:
            return "[ocx-proxy: saved to %s%s]" % (self.files.txt_path, reader)
        return "[ocx-proxy: %d chars (%d bytes) saved to %s (%d lines)%s; raw JSON-RPC: %s]" % (
            self.original_chars, self.original_bytes, self.files.txt_path, text.count("\n") + 1, reader,
            self.files.json_path)

    def preview(self, text, budget, detail, outline=None):
        """``(preview text, characters of the original kept)`` for ``budget`` characters of ``text``; a text
        that does not fit whole starts with its ``outline`` (a ``JsonOutline``), in half the budget at most."""
        shown = outline.fit(budget // 2) if outline and len(text) > budget else ""
        head, tail, omitted = make_preview(text, budget - len(shown))
        marker = self.marker(text, detail)
        middle = "\n\n[... %d of %d characters omitted ...]\n\n" % (omitted, len(text)) if omitted else ""
        opening = shown + "\n\n" if shown else ""
        return marker + "\n\n" + opening + head + middle + tail + "\n\n" + marker, len(head) + len(tail)

    def fit(self, text, budget):
        """Largest preview (``budget.preview_chars`` at most, starting with what fits of the text's
        ``JsonOutline``) whose message fits ``budget``, at the first level where one does: 0 keeps
        ``structuredContent`` (tried only when small), 1 the resource link and ``_meta``, 2 drops them, 3
        also shortens the marker, 4 drops a prompt's ``description`` (none drops a field the revision
        requires); else an error naming the output directory.  The description is what a client shows the
        user: a shorter text and a shorter marker come first."""
        max_chars, max_bytes = budget.max_chars, budget.max_bytes
        result = self.msg.get("result")
        structured = isinstance(result, dict) and "structuredContent" in result
        levels = (0, 1, 2, 3) if structured and self.method == "tools/call" else (1, 2, 3)
        if self.method == "prompts/get" and isinstance(result, dict) and isinstance(result.get("description"), str):
            levels += (4,)
        outline = JsonOutline.of(text, self.reader_name)
        for level in levels:
            size = min(budget.preview_chars, len(text))
            floor = size // 4 if level == 0 else 0
            for _ in range(40):
                preview, kept = self.preview(text, size, level < 3, outline)
                out = dumps(self.build(preview, level, kept))
                over = len(out) - max_chars
                if max_bytes and utf8_len(out) > max_bytes:
                    # Bytes over the limit, in characters of this preview (CJK: 3 bytes each).
                    per_char = utf8_len(preview) / max(1, len(preview))
                    over = max(over, int((utf8_len(out) - max_bytes) / per_char) + 1)
                if over <= 0:
                    return out
                if size <= floor:
                    break
                size = max(floor, min(size - over, size - 1))
        note = "response too large; saved under %s" % os.path.dirname(self.files.txt_path)
        out = dumps(error_response(self.msg.get("id"), UPSTREAM_ERROR, note))
        if not budget.fits(len(out), utf8_len(out)):
            out = dumps(error_response(self.msg.get("id"), UPSTREAM_ERROR, "response too large; saved to disk"))
        return out

    def build(self, preview, level, preview_chars):
        """The replacement message at ``level`` (see ``fit``)."""
        msg = self.msg
        meta = {SPILL_META_KEY: self.files.meta(self.original_chars, preview_chars)} if level <= 1 else None
        if "error" in msg or message_kind(msg) == "notification":
            return self.build_error_or_log(preview, meta)
        result = msg.get("result") if isinstance(msg.get("result"), dict) else {}
        if self.task_result is not None:  # a completed task: the task as it is, its tool result previewed
            new = dict(result)
            new["result"] = self.build_tool_result(self.task_result, preview, level)
        elif self.method == "tools/call":
            new = self.build_tool_result(result, preview, level)
        elif self.method == "resources/read":
            uri = self.request_params.get("uri")
            uri = uri if isinstance(uri, str) and uri else file_uri(self.files.txt_path)
            new = {"contents": [{"uri": uri, "mimeType": "text/plain", "text": preview}]}
        elif self.method == "prompts/get":
            new = {"messages": [{"role": "user", "content": {"type": "text", "text": preview}}]}
            if isinstance(result.get("description"), str) and level <= 3:
                new["description"] = result["description"]
        else:
            message = "response of %d characters exceeded --max-response-chars; saved to %s (text: %s)" % (
                self.original_chars, self.files.json_path, self.files.txt_path)
            return error_response(msg.get("id"), UPSTREAM_ERROR, message, meta)
        if is_modern(self.protocol_version):
            meta = self.modern_fields(new, result, meta)
        if meta is not None:
            new["_meta"] = meta
        return result_response(msg.get("id"), new)

    def modern_fields(self, new, result, meta):
        """Give ``new`` what a 2026-07-28 result requires; returns the ``_meta`` to set: the original's
        (the server's identity) with ours merged in, or only the identity when ``fit`` drops ours.
        resources/read must say ``ttlMs`` and ``cacheScope``: the original's, or no caching."""
        new["resultType"] = "complete"
        if self.method == "resources/read":
            new["ttlMs"] = result.get("ttlMs", 0)
            new["cacheScope"] = result.get("cacheScope", "private")
        original = result.get("_meta") if isinstance(result.get("_meta"), dict) else {}
        merged = dict(original) if meta is not None else {
            key: value for key, value in original.items() if key == META_SERVER_INFO}
        merged.update(meta or {})
        return merged or None

    def build_tool_result(self, result, preview, level):
        content = [{"type": "text", "text": preview}]
        if level <= 1 and version_has(self.protocol_version, "resource_link"):
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
            return error_response(msg.get("id"), code if isinstance(code, int) else UPSTREAM_ERROR, preview, meta)
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
# A line shorter than this is copied once to append its newline; a longer one is queued as it is.
WRITE_COPY_LIMIT = 1 << 16


# Cancelled timers stay in the heap until they are due or, past this many and half of it, the heap is rebuilt
# without them: a relay arms timers per request and cancels most of them (answers come in time).
TIMERS_CANCELLED_LIMIT = 1024


class Timer:
    """Handle returned by ``Loop.call_later``; ``cancel()`` stops it from firing."""

    __slots__ = ("callback", "args", "cancelled", "loop")

    def __init__(self, callback, args, loop):
        self.callback = callback
        self.args = args
        self.cancelled = False
        self.loop = loop

    def cancel(self):
        if not self.cancelled:
            self.cancelled = True
            self.loop.note_cancelled_timer()


class Loop:
    """A single-threaded event loop over ``selectors``: fd readiness callbacks, timers, and callbacks
    ``post()``-ed from other threads (a socketpair wakes it, on Windows too).  Everything that
    touches relay state runs on the loop's thread."""

    def __init__(self):
        self.selector = selectors.DefaultSelector()
        self.wake_r, self.wake_w = socket.socketpair()
        self.wake_r.setblocking(False)
        self.wake_w.setblocking(False)
        self.posted = collections.deque()
        self.timers = []
        self.cancelled_timers = 0  # in self.timers
        self.sequence = itertools.count()
        self.callbacks = {}  # fd -> {event: callback}, a new dict on every change
        self.running = False
        self.add_reader(self.wake_r.fileno(), self._drain_wake)

    def _update(self, fd, event, callback):
        handlers = dict(self.callbacks.get(fd, {}))
        old_mask = sum(handlers)  # the keys are the event bits
        handlers.pop(event, None)
        if callback is not None:
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
        self._update(fd, selectors.EVENT_READ, None)

    def add_writer(self, fd, callback):
        self._update(fd, selectors.EVENT_WRITE, callback)

    def remove_writer(self, fd):
        self._update(fd, selectors.EVENT_WRITE, None)

    def call_later(self, delay, callback, *args):
        timer = Timer(callback, args, self)
        heapq.heappush(self.timers, (time.monotonic() + delay, next(self.sequence), timer))
        return timer

    def note_cancelled_timer(self):
        self.cancelled_timers += 1
        if self.cancelled_timers > TIMERS_CANCELLED_LIMIT and self.cancelled_timers * 2 > len(self.timers):
            self.timers[:] = [entry for entry in self.timers if not entry[2].cancelled]  # in place: _spin holds it
            heapq.heapify(self.timers)
            self.cancelled_timers = 0

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

    def stop(self):
        self.running = False

    def run(self):
        """Dispatch until ``stop()``; an exception in one callback is logged, not fatal."""
        self.running = True
        while self.running:
            try:
                self._spin()
            except Exception as exc:
                # A bug met by one message must not end the session for all the others.
                log.error("internal error: %s: %s (run with --log-level debug for details)" % (type(exc).__name__, exc))
                if log.enabled("debug"):
                    import traceback
                    for line in traceback.format_exc().rstrip().splitlines():   # a record is one line
                        log.debug(line)

    def _spin(self):
        # Hot loop: what it touches is bound to locals once (the containers are mutated, never replaced).
        wait = self.selector.select
        callbacks = self.callbacks
        posted = self.posted
        timers = self.timers
        monotonic = time.monotonic
        heappop = heapq.heappop
        read_event, write_event = selectors.EVENT_READ, selectors.EVENT_WRITE
        while self.running:
            timeout = max(0, timers[0][0] - monotonic()) if timers else None
            for key, mask in wait(0 if posted else timeout):
                handlers = callbacks.get(key.fd, ())
                if mask & read_event and read_event in handlers:
                    handlers[read_event]()
                    handlers = callbacks.get(key.fd, ())  # the callback may have removed the fd
                if mask & write_event and write_event in handlers:
                    handlers[write_event]()
            while posted:
                callback, args = posted.popleft()
                callback(*args)
            now = monotonic()
            while timers and timers[0][0] <= now:
                timer = heappop(timers)[2]
                if not timer.cancelled:
                    timer.cancelled = True  # fired: a cancel() from now on changes nothing
                    timer.callback(*timer.args)
                else:
                    self.cancelled_timers -= 1

    def close(self):
        self.selector.close()
        self.wake_r.close()
        self.wake_w.close()


class PipeReader:
    """Feeds chunks read from ``fd`` to ``on_data(bytes)``; ``on_data(b"")`` means EOF.  ``pause()`` stops reading
    until ``resume()`` (a chunk already read is still delivered), so that the writer at the other end blocks: that
    is how backpressure reaches a peer.  ``stop()`` ends the deliveries.  ``pipe_reader()`` picks a subclass."""

    def __init__(self, loop, fd, on_data):
        self.loop = loop
        self.fd = fd
        self.on_data = on_data
        self.closed = False
        self.paused = False

    def pause(self):
        if not (self.paused or self.closed):
            self.paused = True
            self._hold()

    def resume(self):
        if self.paused:
            self.paused = False
            self._flow()

    def stop(self):
        self.closed = True


class SelectPipeReader(PipeReader):
    """Reads when the loop reports the fd readable; OSError/ValueError for an fd the selector refuses."""

    def __init__(self, loop, fd, on_data):
        PipeReader.__init__(self, loop, fd, on_data)
        loop.add_reader(fd, self._readable)

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

    def _hold(self):
        self.loop.remove_reader(self.fd)

    def _flow(self):
        if not self.closed:
            self.loop.add_reader(self.fd, self._readable)

    def stop(self):
        self.loop.remove_reader(self.fd)
        self.closed = True


class ThreadPipeReader(PipeReader):
    """A daemon thread does blocking reads and posts each chunk to the loop: for what select cannot
    wait on (Windows pipes, regular files), or with ``--io threads``."""

    def __init__(self, loop, fd, on_data):
        PipeReader.__init__(self, loop, fd, on_data)
        self.flowing = threading.Event()
        self.flowing.set()
        self.delivered = threading.Event()
        threading.Thread(target=self._run, name="ocx-reader-%d" % fd, daemon=True).start()

    def _run(self):
        while True:
            self.flowing.wait()
            try:
                data = os.read(self.fd, READ_CHUNK)
            except InterruptedError:
                continue
            except OSError:
                data = b""
            # One chunk at a time, so that a pause() made while the loop handles it is never overrun.
            self.delivered.clear()
            self.loop.post(self._deliver, data)
            if not data:
                return
            self.delivered.wait()

    def _deliver(self, data):
        try:
            if not self.closed:
                self.closed = not data
                self.on_data(data)
        finally:
            self.delivered.set()

    def _hold(self):
        self.flowing.clear()

    def _flow(self):
        self.flowing.set()


def pipe_reader(loop, fd, on_data, use_threads=False):
    """A reader of ``fd`` for ``loop``: by select when it can, else (or with ``use_threads``) by a thread."""
    if PIPES_SELECTABLE and not use_threads:
        try:
            return SelectPipeReader(loop, fd, on_data)
        except (OSError, ValueError):
            pass
    return ThreadPipeReader(loop, fd, on_data)


class PipeWriter:
    """Writes bytes to ``fd`` without ever blocking the loop; queued bytes are referenced, never copied (callers
    must not change a buffer after writing it).  ``write()`` returns False once more than ``limit`` bytes wait (a
    high-water mark, not a cap): stop reading from the peer that feeds us until ``when_drained(callback)``.
    ``on_error(exc)`` is called once if the reader went away (EPIPE).  ``close()`` closes after everything queued
    is written, the fd too with ``close_fd``.  ``pipe_writer()`` picks a subclass."""

    def __init__(self, loop, fd, on_error, close_fd, limit):
        self.loop = loop
        self.fd = fd
        self.on_error = on_error
        self.close_fd = close_fd
        self.limit = limit
        self.queue = collections.deque()  # bytes or memoryviews waiting, oldest first
        self.queued = 0                   # their total size (thread mode: until written)
        self.drained = []                 # when_drained() callbacks
        self.lock = threading.Lock()      # the drain check's, shared with a writer thread if any
        self.failed = False
        self.closing = False

    def pending_bytes(self):
        return self.queued

    def write_line(self, line):
        """Write ``line`` and a newline; a big line is queued as it is, not copied to add one."""
        if len(line) < WRITE_COPY_LIMIT:
            return self.write(line + b"\n")
        self.write(line)
        return self.write(b"\n")

    def when_drained(self, callback):
        """Call ``callback()`` on the loop thread once no more than ``limit // 2`` bytes wait."""
        with self.lock:
            self.drained.append(callback)
        self._check_drained()

    def _check_drained(self):
        # Any thread; the callbacks always run on the loop thread, later.
        with self.lock:
            if not self.drained or (self.queued > self.limit // 2 and not self.failed):
                return
            callbacks, self.drained = self.drained, []
        for callback in callbacks:
            self.loop.post(callback)

    def close(self):
        if not self.closing:
            self.closing = True
            self._close()


class SelectPipeWriter(PipeWriter):
    """Writes on a non-blocking fd: at once when the pipe has room, the rest on writability."""

    def __init__(self, loop, fd, on_error, close_fd, limit):
        PipeWriter.__init__(self, loop, fd, on_error, close_fd, limit)
        self.restore_blocking = os.get_blocking(fd)
        os.set_blocking(fd, False)

    def write(self, data):
        if self.failed or self.closing:
            return True
        if not self.queue:
            try:
                written = os.write(self.fd, data)
            except (BlockingIOError, InterruptedError):
                written = 0
            except OSError as exc:
                self._fail(exc)
                return True
            if written == len(data):
                return True
            data = memoryview(data)[written:]
            self.loop.add_writer(self.fd, self._writable)
        self.queue.append(data)
        self.queued += len(data)
        return self.queued <= self.limit

    def _writable(self):
        queue = self.queue
        if len(queue) > 1 and len(queue[0]) < READ_CHUNK:
            # Many small lines wait (a slow client): one system call for a pipe's worth.
            parts, size = [], 0
            while queue and size < READ_CHUNK and len(queue[0]) < READ_CHUNK:
                size += len(queue[0])
                parts.append(queue.popleft())
            queue.appendleft(b"".join(parts))
        try:
            written = os.write(self.fd, queue[0])
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._fail(exc)
            return
        self.queued -= written
        if written == len(queue[0]):
            queue.popleft()
        else:
            queue[0] = memoryview(queue[0])[written:]
        if not queue:
            self.loop.remove_writer(self.fd)
            if self.closing:
                self._close_now()
        if self.drained:
            self._check_drained()

    def _fail(self, exc):
        self.failed = True
        self.queue.clear()
        self.queued = 0
        self.loop.remove_writer(self.fd)
        if self.on_error:
            self.on_error(exc)
        self._check_drained()

    def _close(self):
        if not self.queue or self.failed:
            self._close_now()

    def _close_now(self):
        try:
            if self.close_fd:
                os.close(self.fd)
            else:
                os.set_blocking(self.fd, self.restore_blocking)
        except OSError:
            pass

    def flush_blocking(self, timeout):
        """Best effort at exit: wait up to ``timeout`` seconds for queued bytes to go out."""
        deadline = time.monotonic() + timeout
        while self.queue and not self.failed and time.monotonic() < deadline:
            select.select([], [self.fd], [], max(0.0, deadline - time.monotonic()))
            self._writable()


class ThreadPipeWriter(PipeWriter):
    """A daemon thread does blocking writes from the queue, shared with the loop thread under
    ``ready`` (a condition on the drain check's lock)."""

    def __init__(self, loop, fd, on_error, close_fd, limit):
        PipeWriter.__init__(self, loop, fd, on_error, close_fd, limit)
        self.ready = threading.Condition(self.lock)
        self.thread = threading.Thread(target=self._run, name="ocx-writer-%d" % fd, daemon=True)
        self.thread.start()

    def write(self, data):
        if self.failed or self.closing:
            return True
        with self.ready:
            self.queue.append(data)
            self.queued += len(data)
            self.ready.notify()
            return self.queued <= self.limit

    def _run(self):
        while True:
            with self.ready:
                while not self.queue:
                    self.ready.wait()
                data = self.queue.popleft()
            if data is None:
                break
            try:
                _write_all(self.fd, data)
            except OSError as exc:
                self.failed = True
                with self.ready:
                    self.queue.clear()
                    self.queued = 0
                if self.on_error:
                    self.loop.post(self.on_error, exc)
                self._check_drained()
                break
            with self.ready:
                self.queued -= len(data)
            if self.drained:
                self._check_drained()
        if self.close_fd:
            try:
                os.close(self.fd)
            except OSError:
                pass

    def _close(self):
        with self.ready:
            self.queue.append(None)  # the thread's sign to stop
            self.ready.notify()

    def flush_blocking(self, timeout):
        deadline = time.monotonic() + timeout
        while self.queued and time.monotonic() < deadline and not self.failed:
            time.sleep(0.005)


def pipe_writer(loop, fd, on_error=None, use_threads=False, close_fd=False, limit=MAX_BUFFER_BYTES):
    """A writer to ``fd`` for ``loop``: by select for a pipe or socket, else (or with ``use_threads``) by a thread."""
    try:
        mode = os.fstat(fd).st_mode if PIPES_SELECTABLE and not use_threads else None
    except OSError:
        mode = None
    if mode is not None and (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        return SelectPipeWriter(loop, fd, on_error, close_fd, limit)
    return ThreadPipeWriter(loop, fd, on_error, close_fd, limit)


class BoundedRun:
    """A helper program beside the loop, killed after ``seconds``; Popen's OSError when it cannot start.
    ``on_done(output)`` is called once, on the loop thread: with all it wrote on stdout, or None when it was killed
    (the time bound, ``stop()``).  ``stdin`` is a file descriptor the caller still owns; stderr is discarded."""

    def __init__(self, loop, argv, stdin, seconds, on_done, use_threads=False):
        self.on_done = on_done
        self.chunks = []
        self.killed = self.finished = False
        # Its own tree: on Windows a job, so that a runaway search dies with us even if we are killed outright.
        self.process, self.tree = ProcessTree.start(argv, watchdog=False, stdin=stdin, stdout=subprocess.PIPE,
                                                    stderr=subprocess.DEVNULL, bufsize=0)
        self.timer = loop.call_later(seconds, self._kill)
        self.reader = pipe_reader(loop, self.process.stdout.fileno(), self._data, use_threads)

    def _kill(self):
        self.killed = True
        self.tree.kill()  # its stdout closes: _data hears EOF

    def _data(self, data):
        if data:
            self.chunks.append(data)
            return
        self.tree.kill()  # it closed stdout: it is exiting (or would only hang on)
        self.process.wait()
        self.process.stdout.close()
        self._finish(None if self.killed else b"".join(self.chunks))

    def _finish(self, output):
        if not self.finished:
            self.finished = True
            self.timer.cancel()
            self.reader.stop()
            self.tree.close()
            self.on_done(output)

    def stop(self):
        """Kill it now and call ``on_done(None)`` (shutdown: the loop may not turn again)."""
        self.tree.kill()
        self.process.wait()
        self._finish(None)


# ---------------------------------------------------------------------------
# Upstreams: the transport contract and the stdio child process
# ---------------------------------------------------------------------------

STDERR_TAIL_LINES = 20


def child_environment(env_pairs=(), pass_environment=False, environ=None):
    """The child's environment: safe defaults (or everything) plus ``NAME=VALUE`` pairs, whose values
    expand ``${VAR}`` from ours (an unset one is a UsageError)."""
    environ = os.environ if environ is None else environ
    if pass_environment:
        env = dict(environ)
    else:
        env = {k: environ[k] for k in SAFE_ENV if k in environ and not environ[k].startswith("()")}
    for name, value in CHILD_TEXT_ENV.items():
        env.setdefault(name, value)
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


class Handshake:
    """The client's ``initialize`` request and ``notifications/initialized`` (lines, no newline), said again
    to a new server behind the same client (a restarted child, a new session or stream)."""

    def __init__(self):
        self.initialize_line = None
        self.initialized_line = None

    def note(self, msg, line):
        """Keep ``line`` when ``msg`` (it, parsed) is the client's initialize or initialized."""
        method = msg.get("method")
        if method == "initialize" and "id" in msg:
            self.initialize_line = line
        elif method == "notifications/initialized":
            self.initialized_line = line

    def replay(self, request_id):
        """The initialize request under ``request_id``, None when the client sent none; what ``dumps``
        raises when it cannot be written back (1e999, a ``LongNumber``)."""
        if self.initialize_line is None:
            return None
        request = parse_message(self.initialize_line, long_numbers=True)
        request["id"] = request_id
        return encode_message(request)[:-1]

    @staticmethod
    def refusal(answer):
        """Why the server did not take a replayed initialize (its error, shortened), or None if it did."""
        if answer is None:
            return "no answer"
        return json.dumps(answer["error"], default=repr)[:300] if "error" in answer else None


# One change to the answers to one method's requests (Relay.rewrites, Upstream.rewrites):
# ``applies(line, params)`` tells from the answer's bytes and its request's params alone, cheaply
# (the relay asks it before parsing a line over PEEK_LINE_BYTES, and relays a line none applies to
# as it came); ``rewrite(msg, params)`` changes the parsed answer, True when it did; ``what`` names it.
# (CatalogCache.record only looks: its ``applies`` sees each answer as the server wrote it.)
Rewrite = collections.namedtuple("Rewrite", "what applies rewrite")


def apply_rewrites(rewrites, line, msg, params):
    """``line`` (``msg`` parsed) after each of ``rewrites`` that applies, written anew once (``msg``
    changed to match); as it came when JSON cannot hold the result (1e999, a LongNumber)."""
    changed = [r.what for r in rewrites if r.applies(line, params) and r.rewrite(msg, params)]
    if not changed:
        return line
    try:
        return encode_message(msg)[:-1]
    except (ValueError, TypeError) as exc:
        log.warning("could not %s (%s); forwarding it unchanged" % (" and ".join(changed), exc))
        return line


class Upstream:
    """The contract between the relay and a transport to the real server (which defines ``start``, ``send`` and
    ``close_input``).  The relay calls ``start()`` once, ``send(data)`` with complete JSON-RPC lines (ending in a
    newline) in the client's order, ``close_input()`` to have the upstream finish, ``kill_tree()`` and ``reap()``
    at the end.  The upstream calls, on the loop thread, ``on_line(bytes)`` for every line from the server (no
    newline; an ``OversizedLine`` over ``--max-message-bytes``; ``on_line(bytes, message)`` from a transport that
    parsed it) and ``on_exit(description)`` once when it is gone for good, after setting ``exited`` (and
    ``fatal`` when no retry can help: exit status 1).  ``stderr_tail``: recent diagnostic lines.  ``handshake``:
    the client's, set before ``start()``; a transport opening a new session or stream replays it.  ``rewrites``
    ({method: tuple of ``Rewrite``}) run before the relay's own.  Flow control: ``pause_reading()`` stops
    reading from the server (lines already read may still arrive) until ``resume_reading()``; ``send()``
    returns False when more than ``--max-buffer-bytes`` wait, and ``when_drained(callback)`` then calls
    ``callback()`` once, on the loop thread, when half of that has gone out.  The defaults suit a transport
    that cannot push back."""

    exited = False   # True once on_exit was called (a transport may derive it from a state of its own)

    def __init__(self, loop, on_line, on_exit):
        self.loop = loop
        self.on_line = on_line
        self.on_exit = on_exit
        self.fatal = False
        self.stderr_tail = collections.deque(maxlen=STDERR_TAIL_LINES)
        self.handshake = Handshake()
        self.rewrites = {}

    def pause_reading(self):
        pass

    def resume_reading(self):
        pass

    def when_drained(self, callback):
        self.loop.post(callback)

    def kill_tree(self, terminate=False):
        """Stop whatever the upstream started, at once or (``terminate``) politely; a no-op for network upstreams."""

    def reap(self):
        """Release resources after exit."""


class StdioUpstream(Upstream):
    """The MCP server as a child process speaking newline-delimited JSON on stdio.  ``on_exit`` fires when its
    stdout closes or the process ends.  Its stderr is copied to ours, prefixed.  It runs in its own process group,
    which shutdown (or a ``Watchdog``, if we die first) stops whole.  ``label`` names it in what it logs and in its
    exit's description."""

    label = "upstream"

    def __init__(self, loop, command, env, cwd=None, use_threads=False, on_line=None, on_exit=None,
                 max_message_bytes=MAX_MESSAGE_BYTES, max_buffer_bytes=MAX_BUFFER_BYTES):
        Upstream.__init__(self, loop, on_line, on_exit)
        self.command = command
        self.env = env
        self.cwd = cwd
        self.use_threads = use_threads
        self.max_buffer_bytes = max_buffer_bytes
        self.process = None
        self.tree = None
        self.stdin = None
        self.stdout_reader = None
        self.paused = False
        self.stdout_lines = LineSplitter(max_message_bytes)
        self.stderr_lines = LineSplitter()

    def start(self):
        """Spawn the child; a failure to start is reported through ``on_exit``."""
        try:
            self.process, self.tree = ProcessTree.start(
                resolve_command(self.command, self.env), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, env=self.env, cwd=self.cwd, bufsize=0)
        except (OSError, ValueError) as exc:
            self.exited = True
            self.loop.post(self.on_exit, "could not start %s: %s" % (self.command[0], exc))
            return
        # The writer owns a duplicate: closing it never leaves Popen's file object a dead descriptor (EBADF).
        stdin_fd = os.dup(self.process.stdin.fileno())
        self.process.stdin.close()
        self.stdin = pipe_writer(self.loop, stdin_fd, on_error=self._stdin_error,
                                use_threads=self.use_threads, close_fd=True, limit=self.max_buffer_bytes)
        self.stdout_reader = pipe_reader(self.loop, self.process.stdout.fileno(), self._stdout_data,
                                        use_threads=self.use_threads)
        if self.paused:
            self.stdout_reader.pause()
        self.stderr_reader = pipe_reader(self.loop, self.process.stderr.fileno(), self._stderr_data,
                                        use_threads=self.use_threads)
        self.poll_timer = self.loop.call_later(0.5, self._poll)

    def send(self, data):
        if self.stdin is not None and not self.exited:
            return self.stdin.write(data)
        return True

    def pause_reading(self):
        self.paused = True
        if self.stdout_reader is not None:
            self.stdout_reader.pause()

    def resume_reading(self):
        self.paused = False
        if self.stdout_reader is not None:
            self.stdout_reader.resume()

    def when_drained(self, callback):
        if self.stdin is None or self.exited:
            self.loop.post(callback)
        else:
            self.stdin.when_drained(callback)

    def close_input(self):
        """Close the child's stdin once queued bytes are written: the polite way to stop it."""
        if self.stdin is not None:
            self.stdin.close()

    def _stdin_error(self, exc):
        log.debug("%s stdin closed: %s" % (self.label, exc))

    def _stdout_data(self, data):
        if not data:
            for line in self.stdout_lines.finish():
                self.on_line(line)
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
                log.log("info", "[%s] %s" % (self.label, text))

    def _poll(self):
        """Catch a child that exited while something it started still holds stdout open."""
        if self.exited:
            return
        if self.process.poll() is not None:
            self.loop.call_later(1.0, self._exited_without_eof)
        else:
            self.poll_timer = self.loop.call_later(0.5, self._poll)

    def _exited_without_eof(self):
        if self.paused:
            # What it wrote before exiting waits in the pipe for the client to catch up: EOF will tell.
            self.poll_timer = self.loop.call_later(0.5, self._poll)
        else:
            self._report_exit()

    def _wait_for_exit(self, deadline):
        if self.exited:
            return
        if self.process.poll() is None and time.monotonic() < deadline:
            self.loop.call_later(0.01, self._wait_for_exit, deadline)
            return
        if self.process.poll() is None:
            log.warning("%s closed its stdout but did not exit; stopping it" % self.label)
            self.kill_tree(terminate=True)
        self._report_exit()

    def _report_exit(self):
        if self.exited:
            return
        self.exited = True
        self.poll_timer.cancel()
        self.stdout_reader.stop()
        code = self.process.poll()
        if code is None:
            description = "%s closed its stdout" % self.label
        elif code < 0:
            description = "%s was killed by signal %d" % (self.label, -code)
        else:
            description = "%s exited with code %d" % (self.label, code)
        self.loop.post(self._finish_exit, description)

    def _finish_exit(self, description):
        # stderr may still hold the lines that explain the exit: take what is there.
        self._drain_stderr()
        self.stderr_reader.stop()
        self.stdin.close()
        self.on_exit(description)

    def _drain_stderr(self):
        if isinstance(self.stderr_reader, ThreadPipeReader) or self.process.stderr.closed:  # closed: reaped already
            return
        fd = self.process.stderr.fileno()
        while select.select([fd], [], [], 0)[0]:
            try:
                data = os.read(fd, READ_CHUNK)
            except OSError:
                break
            if not data:
                break
            self._stderr_data(data)

    def kill_tree(self, terminate=False):
        """Kill the child and all it started (``terminate``: ask them to stop, SIGTERM on POSIX)."""
        if self.tree is not None:
            self.tree.terminate() if terminate else self.tree.kill()

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
        if self.tree is not None:
            self.tree.close()


def stdio_upstream_factory(command, env, **options):
    """``make_upstream(loop, on_line, on_exit)`` starting ``command`` as a ``StdioUpstream`` (``options``: its
    ``cwd``, ``use_threads``, ``max_message_bytes``, ``max_buffer_bytes``)."""
    return lambda loop, on_line, on_exit: StdioUpstream(loop, command, env, on_line=on_line, on_exit=on_exit, **options)


# ---------------------------------------------------------------------------
# HTTP client: SSE parser, URLs, proxies, TLS, connection pool, worker threads
# ---------------------------------------------------------------------------

# Blocking http.client machinery, run on worker threads.  A hostile server cannot make us wait or buffer without
# end: every read has a wall-clock deadline (``ResponseReader``), an answer --max-message-bytes (``read_body``).

ERROR_BODY_LIMIT = 65536   # bytes of an error body we read
EXCERPT_CHARS = 300        # characters of it quoted in the JSON-RPC error
MAX_IDLE_CONNECTIONS = 8
HEADER_NAME_RE = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z")
MANAGED_HEADERS = frozenset(["accept", "content-type", "content-length", "host", "mcp-session-id",
                             "mcp-protocol-version", "mcp-method", "mcp-name", "last-event-id",
                             "transfer-encoding", "connection"])
# A header value sent as it is (2026-07-28 Mcp-Name, Mcp-Param-*): visible ASCII, inner spaces.
PLAIN_HEADER_VALUE_RE = re.compile(r"^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?\Z")
MAX_EVENT_ID_BYTES = 1024  # an SSE id goes back in Last-Event-ID; longer ones are ignored
MAX_RETRY_DIGITS = 9       # retry: milliseconds; the wait is capped at RECONNECT_MAX anyway
RECONNECT_INITIAL = 1.0    # seconds before the first reconnect when the server sent no retry:
RECONNECT_FACTOR = 1.5
RECONNECT_MAX = 30.0
RECONNECT_ATTEMPTS = 5     # consecutive failed (re)connects before giving up


class UpstreamDataError(Exception):
    """The server sent something we stop reading at (too large, broken framing); the text is for the client."""


def over_cap(what, limit):
    return UpstreamDataError("upstream sent %s larger than %d bytes (--max-message-bytes)" % (what, limit))


# One dispatched server-sent event: type, data (bytes) and the last event id.
SseEvent = collections.namedtuple("SseEvent", "event data last_id")


class SseParser:
    """Incremental ``text/event-stream`` parser (WHATWG rules); data stays bytes, relayed byte-exact.  The last
    event id survives events with empty data (the 2025-11-25 priming event) and ``reset_stream()`` (a new
    connection resumes from it).  An event or unfinished line over ``limit`` sets ``error`` and stops it."""

    LINE_END = re.compile(b"[\r\n]")

    def __init__(self, limit=MAX_MESSAGE_BYTES):
        self.last_id = None
        self.limit = limit
        self.retry = None        # milliseconds, from the last valid retry: field
        self.reset_stream()

    def reset_stream(self):
        self.buffer = bytearray()
        self.scanned = 0
        self.first_line = True
        self.id_buffer = self.last_id
        self.data = []
        self.size = 0            # bytes in self.data, line feeds included
        self.event = b""
        self.error = None

    def feed(self, chunk):
        """Add bytes; return the list of complete events (``SseEvent``)."""
        if self.error:
            return []
        buf = self.buffer
        buf += chunk
        events = []
        start = 0
        while True:
            match = self.LINE_END.search(buf, max(start, self.scanned))
            if match is None:
                break
            pos = match.start()
            if buf[pos] == 13 and pos + 1 == len(buf):
                break  # a CR at the very end: an LF may follow in the next chunk
            end = pos + 2 if buf[pos:pos + 2] == b"\r\n" else pos + 1
            event = self._line(bytes(buf[start:pos]))
            if self.error:
                return events
            if event is not None:
                events.append(event)
            start = end
        if start:
            del buf[:start]
        if len(buf) > self.limit + len(b"event: "):  # room for the field name of a line at the limit
            self._fail(over_cap("an SSE line", self.limit))
        self.scanned = max(0, len(buf) - 1) if buf.endswith(b"\r") else len(buf)
        return events

    def _fail(self, error):
        self.error = str(error)
        self.buffer = bytearray()
        self.data = []

    def _line(self, line):
        if self.first_line:
            self.first_line = False
            if line.startswith(b"\xef\xbb\xbf"):
                line = line[3:]
        if not line:
            return self._dispatch()
        field, _, value = line.partition(b":")   # a comment (":...") has the empty field name: ignored
        if value[:1] == b" ":
            value = value[1:]
        if field == b"data":
            self.size += len(value) + 1
            if self.size - 1 > self.limit:
                return self._fail(over_cap("an SSE event", self.limit))
            self.data.append(value)
        elif field == b"event":
            self.event = value
        elif field == b"id":
            if b"\0" not in value and len(value) <= MAX_EVENT_ID_BYTES:
                # latin-1: the id goes back byte for byte in the Last-Event-ID header
                self.id_buffer = value.decode("latin-1")
        elif field == b"retry":
            if value.isdigit() and len(value) <= MAX_RETRY_DIGITS:
                self.retry = int(value)
        return None

    def _dispatch(self):
        self.last_id = self.id_buffer
        data, event = self.data, self.event
        self.data, self.event, self.size = [], b"", 0
        if not data:
            return None
        return SseEvent(event.decode("utf-8", "replace") or "message", b"\n".join(data), self.last_id)


def origin_of(parts):
    """(scheme, host, port) of a ``urllib.parse.SplitResult``, default ports filled in."""
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port or (443 if scheme == "https" else 80)


def redact_url(url, secrets=()):
    """A URL fit for a log line: no password, secret-looking query values masked."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            netloc = REDACTED + "@" + netloc.rpartition("@")[2]
        query = parts.query
        if query:
            pairs = parse_qsl(query, keep_blank_values=True)
            query = urlencode([(k, REDACTED if SECRET_NAME_RE.search(k) else v) for k, v in pairs], safe="[]")
        text = urlunsplit((parts.scheme, netloc, parts.path, query, ""))
    except ValueError:
        text = "(unparsable URL)"
    return scrub_secrets(text, secrets)


def scrub_secrets(text, secrets):
    for secret in secrets:
        if secret and len(secret) >= 3:
            text = text.replace(secret, REDACTED)
    return text


def parse_header_option(text, environ=None):
    """``NAME=VALUE`` or ``NAME: VALUE`` -> (name, value, secret); ``${VAR}`` expands."""
    cuts = [i for i in (text.find(":"), text.find("=")) if i > 0]
    if not cuts:
        raise UsageError("--header expects NAME=VALUE or 'NAME: VALUE', got %r" % text)
    cut = min(cuts)
    name, template = text[:cut].strip(), text[cut + 1:].strip()
    if not HEADER_NAME_RE.match(name):
        raise UsageError("--header %r: %r is not a valid header name" % (text, name))
    if name.lower() in MANAGED_HEADERS or name.lower().startswith("mcp-param-"):
        raise UsageError("--header %s: ocx-proxy sets this header itself" % name)
    value = expand_env_refs(template, environ)
    if "\r" in value or "\n" in value:
        raise UsageError("--header %s: the value contains a line break" % name)
    try:
        value.encode("latin-1")
    except UnicodeEncodeError:
        raise UsageError("--header %s: HTTP header values must be Latin-1 text" % name)
    secret = bool(ENV_REF_RE.search(template)) or bool(SECRET_NAME_RE.search(name))
    return name, value, secret


# An HTTP proxy from HTTPS_PROXY / HTTP_PROXY: where it is, how to log in ("Basic ..." or None),
# how log lines show it (without credentials) and the variable that named it.
ProxyInfo = collections.namedtuple("ProxyInfo", "host port auth display variable")


def no_proxy_matches(host, port, no_proxy):
    """True when ``host`` is listed in NO_PROXY (names, .suffixes, IPs, CIDR blocks, :port, ``*``)."""
    import ipaddress
    host = host.lower().strip("[]")
    for entry in no_proxy.replace(" ", ",").split(","):
        entry = entry.strip().lower()
        if not entry:
            continue
        if entry == "*":
            return True
        if entry.count(":") == 1 or (entry.startswith("[") and "]:" in entry):
            entry, _, entry_port = entry.rpartition(":")
            if not entry_port.isdigit() or int(entry_port) != port:
                continue
        entry = entry.strip("[]")
        if "/" in entry:
            try:
                if ipaddress.ip_address(host) in ipaddress.ip_network(entry, strict=False):
                    return True
            except ValueError:
                pass
            continue
        entry = entry[2:] if entry.startswith("*.") else entry.lstrip(".")
        if host == entry or host.endswith("." + entry):
            return True
    return False


def basic_auth(parts):
    """The ``Authorization: Basic`` value for the user and password of a split URL, None when it names no user."""
    from urllib.parse import unquote
    if parts.username is None:
        return None
    credentials = "%s:%s" % (unquote(parts.username), unquote(parts.password or ""))
    return "Basic " + base64.b64encode(credentials.encode("utf-8")).decode("ascii")


def proxy_for(parts, environ=None):
    """The proxy to use for a target URL, or None (NO_PROXY, or no proxy variable)."""
    from urllib.parse import urlsplit
    environ = os.environ if environ is None else environ
    scheme = parts.scheme.lower()
    names = ("https_proxy", "HTTPS_PROXY") if scheme == "https" else ("http_proxy", "HTTP_PROXY")
    variable = next((n for n in names if environ.get(n, "").strip()), None)
    if variable is None:
        return None
    no_proxy = environ.get("no_proxy") or environ.get("NO_PROXY") or ""
    _, host, port = origin_of(parts)
    if no_proxy and no_proxy_matches(host, port, no_proxy):
        return None
    raw = environ[variable].strip()
    proxy = urlsplit(raw if "://" in raw else "http://" + raw)
    if proxy.scheme.lower() != "http":
        raise UsageError("%s=%s: only http:// proxies are supported (an https target still gets a "
                         "CONNECT tunnel through them)" % (variable, redact_url(raw)))
    try:
        proxy_port = proxy.port or 80
    except ValueError:
        raise UsageError("%s has an invalid port" % variable)
    if not proxy.hostname:
        raise UsageError("%s=%s has no host" % (variable, redact_url(raw)))
    display = "http://%s:%d" % (proxy.hostname, proxy_port)
    return ProxyInfo(proxy.hostname, proxy_port, basic_auth(proxy), display, variable)


class RemoteConfig:
    """What both remote transports need: the URL, headers, timeouts, TLS and proxy settings."""

    def __init__(self, url, headers=(), timeout=120.0, sse_read_timeout=300.0, cacert=None,
                 insecure=False, environ=None, max_message_bytes=MAX_MESSAGE_BYTES):
        from urllib.parse import unquote_plus, urlsplit
        self.environ = os.environ if environ is None else environ
        self.secrets = []
        expanded = expand_env_refs(url, self.environ)
        if expanded != url:
            self.secrets.extend(self.environ[m.group(1)] for m in ENV_REF_RE.finditer(url))
        try:
            parts = urlsplit(expanded)
            parts.port
        except ValueError as exc:
            raise UsageError("--url %s is not a valid URL (%s)" % (redact_url(url), exc))
        if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
            raise UsageError("--url must be an http:// or https:// URL, got %s" % redact_url(url, self.secrets))
        for pair in parts.query.split("&"):
            # ?api_key=...: not in an error page quoting the path (as written or decoded); not under 8 characters,
            # that would mask common words everywhere
            name, _, value = pair.partition("=")
            if SECRET_NAME_RE.search(unquote_plus(name)):
                self.secrets.extend(v for v in dict.fromkeys((value, unquote_plus(value))) if len(v) >= 8)
        self.header_list = []
        for text in headers:
            name, value, secret = parse_header_option(text, self.environ)
            self.header_list.append((name, value))
            if secret:
                self.secrets.append(value)
                self.secrets.extend(word for word in value.split() if len(word) >= 8)  # "Bearer xyz": xyz alone
        if parts.username is not None:  # https://user:pass@host/ -> Authorization: Basic, unless one was given
            if not any(n.lower() == "authorization" for n, _ in self.header_list):
                value = basic_auth(parts)
                self.header_list.append(("Authorization", value))
                self.secrets.append(value)
            self.keep_secret(parts.password)
            netloc = parts.netloc.rpartition("@")[2]
            parts = parts._replace(netloc=netloc)
        self.parts = parts
        self.display_url = redact_url(parts.geturl(), self.secrets)
        self.timeout = timeout
        self.sse_read_timeout = sse_read_timeout
        self.cacert = cacert
        self.insecure = insecure
        self.max_message_bytes = max_message_bytes  # one SSE event or JSON body
        self.proxy = proxy_for(parts, self.environ)
        if self.proxy is not None:
            self.keep_secret(self.proxy.auth)
        self.oauth = None          # an OAuthClient when the server may answer 401 (attach_oauth)
        self.ssl_context = self._make_ssl_context() if parts.scheme.lower() == "https" or cacert else None

    def _make_ssl_context(self):
        import ssl
        context = ssl.create_default_context()
        cert_file = self.environ.get("SSL_CERT_FILE")
        if cert_file:
            try:
                context.load_verify_locations(cafile=cert_file)
            except OSError as exc:  # ssl.SSLError too
                log.warning("SSL_CERT_FILE=%s could not be loaded (%s); using the system CAs" % (cert_file, exc))
        if self.cacert:
            try:
                context.load_verify_locations(cafile=self.cacert)
            except OSError as exc:
                raise UsageError("--cacert %s could not be loaded: %s" % (self.cacert, exc.strerror or exc))
        if self.insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        return context

    @staticmethod
    def deadline(seconds, start=None):
        """The monotonic time ``seconds`` after ``start`` (default now); None for no limit (0)."""
        if not seconds or seconds <= 0:
            return None
        return (time.monotonic() if start is None else start) + seconds

    def scrub(self, text):
        return scrub_secrets(text, self.secrets)

    def keep_secret(self, *values):
        """Mask ``values`` (those set) in ``scrub`` and the redacted URLs from now on."""
        self.secrets.extend(value for value in values if value and value not in self.secrets)

    def headers(self, extra=()):
        """User headers (repeated names joined) plus ours, as a dict for http.client."""
        out, names = {}, {}
        for name, value in self.header_list:
            key = names.get(name.lower())
            if key is None:
                out[name] = value
                names[name.lower()] = name
            else:
                out[key] += ("; " if name.lower() == "cookie" else ", ") + value
        if "user-agent" not in names:
            out["User-Agent"] = "ocx-proxy/" + __version__
        for name, value in extra:
            if value is not None:
                out[name] = value
        return out

    def describe_headers(self, headers):
        """``Name: value`` pairs for a debug log line, secrets masked."""
        return ", ".join("%s: %s" % (name, REDACTED if SECRET_NAME_RE.search(name) else self.scrub(value))
                         for name, value in headers.items())


def describe_http_exception(exc, config):
    """A short, human sentence for a connection-level failure."""
    import ssl
    if isinstance(exc, ssl.SSLCertVerificationError):
        return ("TLS certificate verification failed: %s (trust a private CA with --cacert FILE or "
                "SSL_CERT_FILE)" % (exc.verify_message or exc))
    if isinstance(exc, ssl.SSLError):
        return "TLS error: %s" % exc
    if isinstance(exc, socket.timeout):
        return "timed out (--timeout %g s)" % config.timeout
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, socket.gaierror):
        return "cannot resolve %s (%s)" % (config.parts.hostname, exc.strerror or exc)
    text = str(exc) or exc.__class__.__name__
    if text.startswith("Tunnel connection failed"):
        return "the proxy %s refused the tunnel (%s)" % (config.proxy.display if config.proxy else "", text)
    return config.scrub(text)


def http_error_text(status, reason, body):
    """``HTTP 500 from upstream: <excerpt>`` for a non-2xx answer (JSON-RPC error bodies shortened)."""
    text = body.decode("utf-8", "replace")
    try:
        error = json.loads(text).get("error")
    except (ValueError, AttributeError):
        error = None
    if isinstance(error, dict) and "message" in error:
        excerpt = str(error["message"])
    else:
        excerpt = error if isinstance(error, str) else " ".join(text.split())
    excerpt = excerpt or reason or ""
    if len(excerpt) > EXCERPT_CHARS:
        excerpt = excerpt[:EXCERPT_CHARS] + "..."
    return "HTTP %d from upstream: %s" % (status, excerpt) if excerpt else "HTTP %d from upstream" % status


def jsonrpc_error(body, kind):
    """The JSON-RPC error response (integer code, string message) an HTTP error body holds, else None; ``kind``
    is its Content-Type: JSON (or none) is one message, an event stream its first event."""
    if kind == "text/event-stream":
        events = SseParser(limit=ERROR_BODY_LIMIT).feed(body + b"\n\n")
        body = next((event.data for event in events if event.event == "message"), b"")
    elif kind and "json" not in kind:
        return None
    try:
        msg = parse_message(body, long_numbers=True)
    except ValueError:
        return None
    error = msg.get("error") if isinstance(msg, dict) else None
    if not isinstance(error, dict) or not isinstance(error.get("message"), str):
        return None
    code = error.get("code")
    return msg if isinstance(code, int) and not isinstance(code, bool) else None


def header_value(text):
    """``text`` as a 2026-07-28 ``Mcp-Name`` or ``Mcp-Param-*`` value: as it is when that is plain
    header-safe ASCII, else ``=?base64?<base64 of its UTF-8>?=`` (so is text that looks like that)."""
    if PLAIN_HEADER_VALUE_RE.match(text) and not (text.startswith("=?base64?") and text.endswith("?=")):
        return text
    return "=?base64?%s?=" % base64.b64encode(text.encode("utf-8", "surrogatepass")).decode("ascii")


def permanent_error(status):
    """True for an HTTP status that asking again will not change: a 4xx but 408 and 429."""
    return 400 <= status < 500 and status not in (408, 429)


def time_left(deadline):
    """Seconds until ``deadline`` (None: no limit); socket.timeout once it has passed."""
    if deadline is None:
        return None
    left = deadline - time.monotonic()
    if left <= 0:
        raise socket.timeout("timed out")
    return left


class ResponseReader(io.RawIOBase):
    """The raw stream http.client reads a response through (it only calls ``makefile`` on the socket): no recv
    outlives ``conn.deadline``, a wall-clock bound on status line, headers and body (a socket timeout alone
    bounds each recv, which a server trickling a byte a second never trips)."""

    def __init__(self, conn, sock):
        io.RawIOBase.__init__(self)
        self.conn = conn
        self.sock = sock
        # the socket's own raw file keeps the socket open after the connection lets go of it
        self.raw = sock.makefile("rb", buffering=0)

    def makefile(self, mode="rb", *args, **kw):
        return io.BufferedReader(self)

    def readable(self):
        return True

    def readinto(self, buffer):
        self.sock.settimeout(time_left(self.conn.deadline))
        return self.raw.readinto(buffer)

    def close(self):
        self.raw.close()
        io.RawIOBase.close(self)


def bound_responses(conn, deadline):
    """Make every response on ``conn`` (the proxy's CONNECT answer too) read under ``conn.deadline`` (set here)."""
    import http.client
    conn.deadline = deadline
    conn.response_class = lambda sock, *args, **kw: http.client.HTTPResponse(ResponseReader(conn, sock), *args, **kw)


def chunk_size_error(resp, exc=None):
    """UpstreamDataError if ``resp`` broke the chunked framing (``exc``: what a read raised), else None.
    http.client takes any integer as a chunk size (2^64 later fails with OverflowError, a negative one reads
    garbage) and turns a size that is not hex into a bare IncompleteRead."""
    if not getattr(resp, "chunked", False):
        return None
    left = resp.chunk_left
    cause = exc
    while cause is not None and not isinstance(cause, ValueError):
        cause = cause.__context__   # IncompleteRead from IncompleteRead from int(line, 16)
    # int(b"", 16) is an EOF where the size should be, not a bad size
    not_hex = cause is not None and str(cause).startswith("invalid literal") and not str(cause).endswith("b''")
    if not_hex or isinstance(exc, OverflowError) or (left is not None and not 0 <= left < 1 << 63):
        return UpstreamDataError("upstream sent an invalid chunk size")
    return None


def read_body(resp, limit):
    """The whole body of ``resp`` (read under its connection's deadline), at most ``limit`` bytes;
    UpstreamDataError past the limit (at once when Content-Length says so) or for a bad chunk size."""
    if resp.length is not None and resp.length > limit:
        raise UpstreamDataError("upstream announced a body of %d bytes, more than %d (--max-message-bytes)"
                                % (resp.length, limit))
    parts, size = [], 0
    while True:
        try:
            chunk = resp.read(READ_CHUNK)
        except Exception as exc:  # a timeout, http.client errors, OverflowError from a giant chunk size
            raise chunk_size_error(resp, exc) or exc
        error = chunk_size_error(resp)
        if error is not None:
            raise error
        if not chunk:
            return b"".join(parts)
        size += len(chunk)
        if size > limit:
            raise over_cap("a body", limit)
        parts.append(chunk)


def read_limited(resp, limit=ERROR_BODY_LIMIT):
    """Up to ``limit`` bytes of a response body; errors give what was read."""
    try:
        return resp.read(limit)
    except Exception as exc:  # OSError, ValueError, http.client.HTTPException and friends
        log.debug("could not read the response body: %s" % exc)
        return b""


def content_type(resp):
    return (resp.getheader("Content-Type") or "").split(";")[0].strip().lower()


class HttpPool:
    """Keep-alive ``http.client`` connections to one origin, shared by worker threads; a request on a
    reused connection that turns out dead before any answer is retried once on a new one."""

    def __init__(self, config):
        self.config = config
        self.lock = threading.Lock()
        self.idle = []
        self.active = set()
        self.closed = False

    def _new_connection(self, parts, deadline):
        import http.client
        proxy = self.config.proxy
        timeout = time_left(deadline)
        _, host, port = origin_of(parts)
        https = parts.scheme.lower() == "https"
        # through a proxy: plain HTTP goes to it (see _target), HTTPS through a CONNECT tunnel
        address = (host, port) if proxy is None else (proxy.host, proxy.port)
        if https:
            conn = http.client.HTTPSConnection(*address, timeout=timeout, context=self.config.ssl_context)
        else:
            conn = http.client.HTTPConnection(*address, timeout=timeout)
        if https and proxy is not None:
            conn.set_tunnel(host, port, headers={"Proxy-Authorization": proxy.auth} if proxy.auth else None)
        bound_responses(conn, deadline)
        conn.connect()
        # http.client writes headers and body apart: Nagle would hold the body until the headers are acked
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn

    def _take_idle(self, origin):
        while True:
            with self.lock:
                index = next((i for i, (o, _) in enumerate(self.idle) if o == origin), None)
                if index is None:
                    return None
                conn = self.idle.pop(index)[1]
            try:  # a socket closed, or with unexpected data waiting, is dropped
                if conn.sock is not None and not select.select([conn.sock], [], [], 0)[0]:
                    return conn
            except (OSError, ValueError):
                pass
            conn.close()

    def _target(self, parts):
        if self.config.proxy is not None and parts.scheme.lower() == "http":
            return parts.geturl()  # absolute-form through a plain HTTP proxy
        return (parts.path or "/") + ("?" + parts.query if parts.query else "")

    def exchange(self, method, parts, headers, body=None, on_written=None, timeout=None):
        """Send one request and read its status line and headers: returns (conn, response).  ``timeout`` (default
        ``--timeout``) bounds the whole exchange and, ``conn.deadline`` staying set, reading a plain body."""
        import http.client
        if self.config.proxy is not None and parts.scheme.lower() == "http" and self.config.proxy.auth:
            headers = dict(headers, **{"Proxy-Authorization": self.config.proxy.auth})
        origin = origin_of(parts)
        deadline = self.config.deadline(self.config.timeout if timeout is None else timeout)
        for attempt in (0, 1):
            if self.closed:
                raise OSError("ocx-proxy is shutting down")
            conn = self._take_idle(origin) if attempt == 0 else None
            reused = conn is not None
            if conn is None:
                conn = self._new_connection(parts, deadline)
            conn.deadline = deadline
            with self.lock:
                self.active.add(conn)
            try:
                if conn.sock is not None:
                    conn.sock.settimeout(time_left(deadline))  # sendall: a limit on the whole send
                conn.request(method, self._target(parts), body=body, headers=headers)
                if on_written is not None:
                    on_written()
                return conn, conn.getresponse()
            except BaseException as exc:
                self.discard(conn)
                dead = isinstance(exc, (ConnectionResetError, BrokenPipeError, http.client.BadStatusLine))
                if not (reused and dead):
                    raise
                log.debug("kept-alive connection was closed by the server (%s); retrying on a new one" % exc)
        raise OSError("no connection")  # not reached: the second attempt returns or raises

    def release(self, conn, resp):
        """Return a connection whose response was read to the end (or close it)."""
        with self.lock:
            self.active.discard(conn)
            reusable = (not self.closed and resp is not None and resp.isclosed() and not resp.will_close
                        and conn.sock is not None and len(self.idle) < MAX_IDLE_CONNECTIONS)
            if reusable:
                self.idle.append((origin_of(self.config.parts), conn))
        if not reusable:
            conn.close()

    def drain(self, conn, resp):
        """Read the start of an answer we do not relay (``read_limited``), then release ``conn``."""
        body = read_limited(resp)
        self.release(conn, resp)
        return body

    def discard(self, conn):
        with self.lock:
            self.active.discard(conn)
        try:
            conn.close()
        except OSError:
            pass

    @staticmethod
    def abort(conn):
        """Unblock a thread reading from ``conn`` (from another thread)."""
        sock = getattr(conn, "sock", None)
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except (OSError, ValueError):
                pass

    def close_all(self):
        with self.lock:
            self.closed = True
            active, idle = list(self.active), [c for _, c in self.idle]
            self.idle = []
        for conn in active:
            self.abort(conn)
        for conn in idle:
            conn.close()


class SendBarrier:
    """Holds the sender back while something must finish first (initialize, a re-initialize, a reconnect)."""

    def __init__(self):
        self.cond = threading.Condition()
        self.holds = set()

    def hold(self, reason):
        with self.cond:
            self.holds.add(reason)

    def release(self, reason):
        with self.cond:
            self.holds.discard(reason)
            self.cond.notify_all()

    def release_all(self):
        with self.cond:
            self.holds.clear()
            self.cond.notify_all()

    def wait(self, stopping, deadline=None):
        """Block while anything holds the barrier; False if ``deadline`` passed first."""
        with self.cond:
            while self.holds and not stopping.is_set():
                if deadline is not None and time.monotonic() >= deadline:
                    return False
                self.cond.wait(0.25)
            return True


class Backoff:
    """Waits between reconnects: the server's ``retry``, else ``RECONNECT_INITIAL`` growing by
    ``RECONNECT_FACTOR`` up to ``RECONNECT_MAX``.  ``note_failure()`` counts a failed (re)connect and
    is True at ``RECONNECT_ATTEMPTS`` in a row; ``reset()`` after one that worked starts over."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.failures, self.delay = 0, RECONNECT_INITIAL

    def note_failure(self):
        self.failures += 1
        return self.failures >= RECONNECT_ATTEMPTS

    def wait(self, retry=None, deadline=None):
        """Seconds before the next try (``retry``: the server's, in milliseconds); never past
        ``deadline``, never under 50 ms (a retry of 0 must not spin)."""
        wait = self.delay if retry is None else min(retry / 1000.0, RECONNECT_MAX)
        self.delay = min(self.delay * RECONNECT_FACTOR, RECONNECT_MAX)
        if deadline is not None:
            wait = min(wait, deadline - time.monotonic())
        return max(wait, 0.05)


class WorkerThreads:
    """Daemon threads reused from task to task; a thread idle for ``IDLE_SECONDS`` ends.  ``run(task)``
    starts a new thread when none is idle: a long tool call must not delay a ping."""

    IDLE_SECONDS = 30.0

    def __init__(self):
        self.ready = threading.Condition(threading.Lock())
        self.tasks = collections.deque()
        self.idle = 0

    def run(self, task):
        with self.ready:
            self.tasks.append(task)
            if self.idle >= len(self.tasks):
                self.ready.notify()
                return
        threading.Thread(target=self._work, name="ocx-worker", daemon=True).start()

    def _work(self):
        while True:
            with self.ready:
                if not self.tasks:
                    self.idle += 1
                    self.ready.wait(self.IDLE_SECONDS)
                    self.idle -= 1
                    if not self.tasks:
                        return
                task = self.tasks.popleft()
            task()


WORKERS = WorkerThreads()


# ---------------------------------------------------------------------------
# JOSE: PEM/DER keys, ES256 and RS256 signatures, JWT assertions
# ---------------------------------------------------------------------------
# A client authenticating with private_key_jwt (RFC 7523 2.2) signs a JWT with its own key, and this file imports
# nothing beyond the standard library: the key is read from PEM or DER here (RFC 7468 text; PKCS #8 = RFC 5958,
# SEC 1 = RFC 5915, PKCS #1 = RFC 8017 A.1.2), and the two algorithms authorization servers take from such
# clients are computed with Python integers: ES256 (ECDSA on P-256 with SHA-256, RFC 7518 3.4; the curve of
# FIPS 186-4 D.1.2.3) and RS256 (RSASSA-PKCS1-v1_5 with SHA-256, RFC 8017 8.2).
# Side channels: Python integers are not constant time; what can be done is done.  The ECDSA nonce is RFC 6979's
# (HMAC-DRBG over the key and the message) with 32 bytes from ``secrets`` mixed in (RFC 6979 3.6): no weak random
# source can give the key away, and no two signatures share a nonce.  The scalar ladder takes 257 steps whatever
# the nonce (it runs on k + n or k + 2n), so a signature's time does not tell the nonce's length (the leak lattice
# attacks need).  RSA is blinded with a random r, and each signature is checked before it leaves (a fault in one
# CRT half would give the key away).  Keys stay in this process; nothing here is written anywhere.

JOSE_MAX_FILE_BYTES = 64 * 1024   # a key file (an RSA key of 16384 bits is 12 KB in PEM) or an ID token file
JWT_ASSERTION_LIFETIME = 120   # seconds a client assertion is good for; each has its own jti too (RFC 7523 3)
JWT_BEARER_ASSERTION = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
# P-256 (FIPS 186-4 D.1.2.3, SEC 2 2.4.2): y^2 = x^3 - 3x + b over GF(p), base point G of prime order n (the
# formulas below use a = -3 and never b).
P256_P = 2 ** 256 - 2 ** 224 + 2 ** 192 + 2 ** 96 - 1
P256_N = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551
P256_G = (0x6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296,
          0x4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5)
# The DER contents of the object identifiers a key names: rsaEncryption (RFC 8017 A.1), id-ecPublicKey and
# prime256v1 (RFC 5480 2.1.1), and those a refusal names: Ed25519, Ed448 (RFC 8410 3), P-384, P-521 (RFC 5480).
OID_RSA = bytes.fromhex("2a864886f70d010101")
OID_EC = bytes.fromhex("2a8648ce3d0201")
OID_P256 = bytes.fromhex("2a8648ce3d030107")
OID_NAMES = {bytes.fromhex("2b6570"): "Ed25519", bytes.fromhex("2b6571"): "Ed448",
             bytes.fromhex("2b81040022"): "P-384", bytes.fromhex("2b81040023"): "P-521"}
# RFC 8017 9.2 note 1: the DER DigestInfo of a SHA-256 hash, up to the hash itself.
SHA256_DIGEST_INFO = bytes.fromhex("3031300d060960864801650304020105000420")
PEM_BLOCK_RE = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END \1-----", re.S)
PRIVATE_KEY_LABELS = ("PRIVATE KEY", "EC PRIVATE KEY", "RSA PRIVATE KEY", "ENCRYPTED PRIVATE KEY")


class KeyRefused(ValueError):
    """A private key recognised as one but refused: encrypted, of another kind or curve, too short, or damaged
    (its parts disagree)."""


def der_item(data, pos=0):
    """``(tag, contents, end)`` of the DER item at ``pos`` of ``data``; ValueError for one running past the end or
    not strict DER (X.690 10.1: definite lengths in their shortest form)."""
    if pos + 2 > len(data):
        raise ValueError("truncated DER")
    tag, length = data[pos], data[pos + 1]
    pos += 2
    if length & 0x80:
        count = length & 0x7f
        if not 1 <= count <= 4 or pos + count > len(data) or data[pos] == 0:
            raise ValueError("a DER length that is not definite and shortest")
        length = int.from_bytes(data[pos:pos + count], "big")
        if length < 0x80:
            raise ValueError("a DER length that is not definite and shortest")
        pos += count
    if pos + length > len(data):
        raise ValueError("truncated DER")
    return tag, data[pos:pos + length], pos + length


def der_items(contents):
    """The items ``[(tag, contents)]`` one after another in ``contents`` (a SEQUENCE's)."""
    items, pos = [], 0
    while pos < len(contents):
        tag, item, pos = der_item(contents, pos)
        items.append((tag, item))
    return items


def der_sequence(data):
    """The items of the SEQUENCE that ``data`` is, whole."""
    tag, contents, end = der_item(data)
    if tag != 0x30 or end != len(data):
        raise ValueError("not one DER SEQUENCE")
    return der_items(contents)


def der_uint(item):
    """The value of a DER INTEGER ``(tag, contents)`` that is not negative."""
    tag, contents = item
    if tag != 0x02 or not contents or contents[0] & 0x80 or (contents[:1] == b"\0" and len(contents) > 1
                                                             and not contents[1] & 0x80):
        raise ValueError("not a non-negative DER INTEGER")
    return int.from_bytes(contents, "big")


def private_key_der(data):
    """``(label, DER)`` of the private key in ``data``: its first PEM private-key block (RFC 7468), or ``data``
    itself, DER, when it holds no PEM at all (label None).  ValueError says why there is none."""
    text = data.decode("latin-1")
    blocks = PEM_BLOCK_RE.findall(text)
    if not blocks:
        if "-----BEGIN" in text:
            raise ValueError("a PEM block without its END line")
        return None, data
    for label, body in blocks:
        if label not in PRIVATE_KEY_LABELS:
            continue
        if label == "ENCRYPTED PRIVATE KEY" or ":" in body:   # RFC 1421 headers: "Proc-Type: 4,ENCRYPTED"
            return "ENCRYPTED PRIVATE KEY", b""
        try:
            return label, base64.b64decode("".join(body.split()), validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("the base64 of its %s block is damaged" % label)
    raise ValueError("no private key in it (it holds: %s)" % ", ".join(sorted({label for label, _ in blocks})))


def load_private_key(data):
    """The signing key (EcKey or RsaKey) in ``data``, a PEM or DER file's bytes: PKCS #8, SEC 1 or PKCS #1.
    KeyRefused for another kind of key, ValueError for anything else; neither quotes what the file holds."""
    label, der = private_key_der(data)
    if label == "ENCRYPTED PRIVATE KEY":
        raise KeyRefused("an encrypted private key: give it unencrypted, e.g. `openssl pkey -in KEY -out FILE`, "
                         "in a file only you can read")
    readers = {"PRIVATE KEY": [pkcs8_key], "EC PRIVATE KEY": [sec1_key], "RSA PRIVATE KEY": [pkcs1_key],
               None: [pkcs8_key, sec1_key, pkcs1_key]}[label]
    for reader in readers:
        try:
            return reader(der)
        except KeyRefused:
            raise
        except (ValueError, IndexError):
            continue
    raise ValueError("not a private key in PEM or DER (PKCS #8, SEC 1 or PKCS #1), or a damaged one")


def pkcs8_key(der):
    """The key of a PKCS #8 PrivateKeyInfo (RFC 5958 2): RSA, or EC on P-256."""
    items = der_sequence(der)
    if len(items) < 3 or der_uint(items[0]) not in (0, 1) or items[1][0] != 0x30 or items[2][0] != 0x04:
        raise ValueError("not PKCS #8")
    algorithm = der_items(items[1][1])
    oid = algorithm[0][1] if algorithm and algorithm[0][0] == 0x06 else b""
    if oid == OID_RSA:
        return pkcs1_key(items[2][1])
    if oid == OID_EC:
        curve = algorithm[1] if len(algorithm) > 1 else None
        if curve != (0x06, OID_P256):
            raise KeyRefused("an EC key on %s: ES256 signs with P-256 keys only"
                             % OID_NAMES.get(curve[1] if curve else b"", "a curve other than P-256"))
        return sec1_key(items[2][1])
    name = OID_NAMES.get(oid)
    raise KeyRefused("%s: only RSA (RS256) and P-256 (ES256) keys sign assertions here"
                     % ("an %s key" % name if name else "a key of another kind"))


def sec1_key(der):
    """The key of a SEC 1 ECPrivateKey (RFC 5915 3), its curve P-256 when named, its public key checked."""
    items = der_sequence(der)
    if len(items) < 2 or der_uint(items[0]) != 1 or items[1][0] != 0x04:
        raise ValueError("not SEC 1")
    public = None
    for tag, contents in items[2:]:
        inner_tag, inner, _ = der_item(contents)
        if tag == 0xa0 and (inner_tag, inner) != (0x06, OID_P256):
            raise KeyRefused("an EC key on %s: ES256 signs with P-256 keys only"
                             % OID_NAMES.get(inner, "a curve other than P-256"))
        if tag == 0xa1 and inner_tag == 0x03 and inner[:1] == b"\0":
            public = inner[1:]
    return EcKey(int.from_bytes(items[1][1], "big"), public)


def pkcs1_key(der):
    """The key of a PKCS #1 RSAPrivateKey (RFC 8017 A.1.2), two primes."""
    items = der_sequence(der)
    if len(items) < 9 or der_uint(items[0]) != 0:
        if items and items[0][0] == 0x02 and der_uint(items[0]) == 1:
            raise KeyRefused("a multi-prime RSA key: only two-prime keys sign here")
        raise ValueError("not PKCS #1")
    return RsaKey(*[der_uint(item) for item in items[1:9]])


def _p256_double(point):
    """2P in Jacobian coordinates (the a = -3 doubling of Bernstein and Lange's "dbl-2001-b")."""
    x, y, z = point
    if not z:
        return point
    p = P256_P
    delta, gamma = z * z % p, y * y % p
    beta = x * gamma % p
    alpha = 3 * (x - delta) * (x + delta) % p
    x3 = (alpha * alpha - 8 * beta) % p
    z3 = ((y + z) * (y + z) - gamma - delta) % p
    return x3, (alpha * (4 * beta - x3) - 8 * gamma * gamma) % p, z3


def _p256_add(a, b):
    """A + B in Jacobian coordinates ("add-2007-bl"); z = 0 is the point at infinity."""
    (x1, y1, z1), (x2, y2, z2) = a, b
    if not z1:
        return b
    if not z2:
        return a
    p = P256_P
    z1z1, z2z2 = z1 * z1 % p, z2 * z2 % p
    u1, u2 = x1 * z2z2 % p, x2 * z1z1 % p
    s1, s2 = y1 * z2 * z2z2 % p, y2 * z1 * z1z1 % p
    h, r = (u2 - u1) % p, 2 * (s2 - s1) % p
    if not h:
        return _p256_double(a) if not r else (1, 1, 0)
    i = 4 * h * h % p
    j, v = h * i % p, u1 * i % p
    x3 = (r * r - j - 2 * v) % p
    return x3, (r * (v - x3) - 2 * s1 * j) % p, ((z1 + z2) * (z1 + z2) - z1z1 - z2z2) * h % p


def p256_multiply(k, point=P256_G):
    """``k`` times the affine ``point`` as affine ``(x, y)``, None for the point at infinity.  A Montgomery ladder of
    257 steps for every k: it runs on k + n or k + 2n, which have bit 256 set and name the same point."""
    k = k % P256_N + P256_N
    if k.bit_length() <= 256:
        k += P256_N
    r0 = (point[0], point[1], 1)
    r1 = _p256_double(r0)
    for i in range(255, -1, -1):
        if k >> i & 1:
            r0, r1 = _p256_add(r0, r1), _p256_double(r1)
        else:
            r0, r1 = _p256_double(r0), _p256_add(r0, r1)
    x, y, z = r0
    if not z:
        return None
    zi = pow(z, P256_P - 2, P256_P)
    zi2 = zi * zi % P256_P
    return x * zi2 % P256_P, y * zi2 * zi % P256_P


def rfc6979_nonces(d, digest, extra=b""):
    """The nonces of RFC 6979 3.2 for key ``d`` and the message's SHA-256 ``digest`` (HMAC-SHA-256, qlen = hlen =
    256, so bits2int is the plain integer), ``extra`` mixed into the seed (3.6), one after another (3.2 h.3)."""
    import hmac
    seed = d.to_bytes(32, "big") + (int.from_bytes(digest, "big") % P256_N).to_bytes(32, "big") + extra
    v, key = b"\x01" * 32, b"\x00" * 32
    key = hmac.digest(key, v + b"\x00" + seed, "sha256")
    v = hmac.digest(key, v, "sha256")
    key = hmac.digest(key, v + b"\x01" + seed, "sha256")
    v = hmac.digest(key, v, "sha256")
    while True:
        v = hmac.digest(key, v, "sha256")
        k = int.from_bytes(v, "big")
        if 1 <= k < P256_N:
            yield k
        key = hmac.digest(key, v + b"\x00", "sha256")
        v = hmac.digest(key, v, "sha256")


class EcKey:
    """A P-256 private key ``d``: ES256 signatures (JWS form: r and s, 32 bytes each, RFC 7518 3.4)."""

    alg = "ES256"

    def __init__(self, d, public=None):
        if not 1 <= d < P256_N:
            raise KeyRefused("an EC private key out of P-256's range (a damaged file?)")
        self.d = d
        if public is not None:
            x, y = p256_multiply(d)
            if public not in (b"\x04" + x.to_bytes(32, "big") + y.to_bytes(32, "big"),
                              bytes([2 + (y & 1)]) + x.to_bytes(32, "big")):
                raise KeyRefused("the public key in the file is not its private key's (a damaged file?)")

    def sign(self, message, extra=None):
        """The signature of ``message`` (bytes); ``extra``: what hedges the nonce (default 32 bytes of ``secrets``;
        b"" gives RFC 6979's deterministic signature)."""
        import hashlib
        import secrets
        digest = hashlib.sha256(message).digest()
        e = int.from_bytes(digest, "big")
        for k in rfc6979_nonces(self.d, digest, secrets.token_bytes(32) if extra is None else extra):
            r = p256_multiply(k)[0] % P256_N
            s = pow(k, P256_N - 2, P256_N) * (e + r * self.d) % P256_N
            if r and s:
                return r.to_bytes(32, "big") + s.to_bytes(32, "big")


class RsaKey:
    """An RSA private key with its CRT parts: RS256 signatures (RSASSA-PKCS1-v1_5 with SHA-256, RFC 8017 8.2.1)."""

    alg = "RS256"

    def __init__(self, n, e, d, p, q, dp, dq, qi):
        if n.bit_length() < 2048:
            raise KeyRefused("a %d-bit RSA key: RS256 needs 2048 bits or more (RFC 7518 3.3)" % n.bit_length())
        if (n != p * q or e < 3 or not e & 1 or dp != d % (p - 1) or dq != d % (q - 1) or qi * q % p != 1):
            raise KeyRefused("an RSA key whose parts do not agree (a damaged file?)")
        self.n, self.e, self.p, self.q, self.dp, self.dq, self.qi = n, e, p, q, dp, dq, qi
        self.size = (n.bit_length() + 7) // 8

    def sign(self, message):
        """The signature of ``message`` (bytes), ``size`` bytes; the private operation is blinded and checked."""
        import hashlib
        import secrets
        t = SHA256_DIGEST_INFO + hashlib.sha256(message).digest()
        m = int.from_bytes(b"\x00\x01" + b"\xff" * (self.size - len(t) - 3) + b"\x00" + t, "big")
        while True:
            r = secrets.randbelow(self.n - 3) + 2
            try:
                unblind = pow(r, -1, self.n)
                break
            except ValueError:   # r shares a factor with n: as likely as guessing the key; draw again
                continue
        s = self._private(m * pow(r, self.e, self.n) % self.n) * unblind % self.n
        if pow(s, self.e, self.n) != m:
            raise OcxError("an RSA signature failed its check (a damaged key?); nothing was sent")
        return s.to_bytes(self.size, "big")

    def _private(self, c):
        """c^d mod n by the Chinese remainder theorem (RFC 8017 5.1.2, 2.b)."""
        m1, m2 = pow(c % self.p, self.dp, self.p), pow(c % self.q, self.dq, self.q)
        return m2 + self.qi * (m1 - m2) % self.p * self.q


def b64url(data):
    """base64url without padding (RFC 7515 2)."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def jwt_sign(key, claims):
    """A compact JWS (RFC 7515 7.1) of the JSON object ``claims``, signed with ``key`` (EcKey or RsaKey)."""
    head = {"typ": "JWT", "alg": key.alg}
    signing_input = ".".join(b64url(json.dumps(part, separators=(",", ":")).encode("utf-8"))
                             for part in (head, claims))
    return signing_input + "." + b64url(key.sign(signing_input.encode("ascii")))


def client_assertion(key, client_id, audience, now=None):
    """A private_key_jwt client assertion (RFC 7523 2.2 and 3): issued by and about ``client_id``, for the
    authorization server's issuer ``audience`` (as the SEP-1046 profile and the Python SDK send it), a new jti
    and JWT_ASSERTION_LIFETIME seconds to live, so that one seen by others is soon worth nothing."""
    import secrets
    now = int(time.time() if now is None else now)
    return jwt_sign(key, {"iss": client_id, "sub": client_id, "aud": audience, "iat": now,
                          "exp": now + JWT_ASSERTION_LIFETIME, "jti": secrets.token_urlsafe(24)})


def jwt_claims(token):
    """The claims of the compact JWT ``token``, unverified (a client reads the ID token the IdP's token endpoint
    gave it over TLS: OpenID Connect Core 3.1.3.7 item 6); None when it is not one."""
    parts = token.split(".") if isinstance(token, str) else ()
    if len(parts) != 3:
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)).decode("utf-8"))
    except (ValueError, binascii.Error, RecursionError):
        return None
    return claims if isinstance(claims, dict) else None


def read_signing_key(path):
    """The signing key in the file ``path`` (read_user_file); ValueError, naming the file, when it has none."""
    data = read_user_file(path, JOSE_MAX_FILE_BYTES, "key file")
    try:
        return load_private_key(data)
    except ValueError as exc:
        raise type(exc)("key file %s: %s" % (path, exc))


# ---------------------------------------------------------------------------
# OAuth: discovery rules, callback ports, PKCE, the token store
# ---------------------------------------------------------------------------

# The MCP authorization flow (2025-06-18 and later) without a user interface: on a 401 we find the authorization
# server (RFC 9728, RFC 8414, OpenID), register (RFC 7591) unless given a client, run code + PKCE with a loopback
# listener on a STABLE port (the registered redirect URI keeps it), and keep the tokens on disk for the next relay.

# The loopback ports of redirect URIs, which authorization servers compare exactly: a pre-registered
# client uses OAUTH_CALLBACK_PORT (or --oauth-callback-port); ours list a few above it (callback_ports).
OAUTH_CALLBACK_PORT = 33418
OAUTH_CALLBACK_RANGE = 1000
OAUTH_CALLBACK_CHOICES = 3
# The callback listener's bounds: seconds to send a request head, its size, connections kept (the oldest goes).
OAUTH_CALLBACK_READ_TIMEOUT = 10.0
OAUTH_CALLBACK_MAX_REQUEST = 64 * 1024
OAUTH_CALLBACK_MAX_CONNECTIONS = 32
OAUTH_TIMEOUT = 300.0
OAUTH_REQUEST_WAIT = 20.0   # a request's wait for a pending login: clients give initialize some tens of seconds
OAUTH_EXPIRY_MARGIN = 60.0   # refresh this long before the access token expires
OAUTH_STEP_UPS = 3
# A longer expires_in is taken as this: a yearly refresh, and times far inside what clock functions accept.
OAUTH_MAX_LIFETIME = 365 * 86400.0
OAUTH_MAX_BODY = 1024 * 1024
OAUTH_MAX_REDIRECTS = 5   # of a metadata, registration or token endpoint, followed in a row (within its origin)
OAUTH_LANDING_PAGE = (b"<!doctype html><meta charset=utf-8><title>ocx-proxy</title>"
                      b"<p>%s</p><p>You can close this tab.</p>")
# RFC 8628: poll the token endpoint every ``interval`` seconds (this when the server names none), this
# much slower after each slow_down, and never more than once a second whatever a server says.
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
# Enterprise-managed authorization: the token exchange at the IdP (RFC 8693 2.1, 3) for an ID-JAG
# (draft-ietf-oauth-identity-assertion-authz-grant 4.3), presented as a JWT bearer grant (RFC 7523 2.1).
TOKEN_EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"
JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG_TYPE = "urn:ietf:params:oauth:token-type:id-jag"
# What `auth status` calls each grant.
GRANT_NAMES = {"authorization_code": "authorization code (a login in the browser)",
               DEVICE_GRANT: "device code (a login on another device)",
               "client_credentials": "client credentials (no user: the client's own secret or key)",
               JWT_BEARER_GRANT: "enterprise-managed (an ID-JAG from the identity provider, RFC 7523 JWT bearer)"}
# How long a relay waits for another one renewing the same tokens before it renews them itself (said).
OAUTH_RENEW_WAIT = 30.0
OAUTH_DEVICE_INTERVAL = 5.0
OAUTH_DEVICE_SLOW_DOWN = 5.0
OAUTH_DEVICE_MIN_INTERVAL = 1.0
AUTH_PARAM_RE = re.compile(r'([A-Za-z0-9_-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s,]+)')


class AuthorizationRequired(OSError):
    """No usable token and no login finished in time; the message says how to finish one."""


class OAuthError(OcxError):
    """A step of the OAuth flow failed (discovery, registration, the login, the token endpoint)."""

    error = None  # the OAuth error code the endpoint answered with, if it gave one


# The authorization server forgot our registration (restarted, purged): register again, not fail in the browser.
FORGOTTEN_CLIENT_ERRORS = ("invalid_client", "unauthorized_client")


def parse_www_authenticate(value):
    """The parameters of a ``Bearer`` challenge (RFC 6750 / 9728) as a dict, names lowercased."""
    params = {}
    for name, raw in AUTH_PARAM_RE.findall(value or ""):
        if raw.startswith('"'):
            raw = re.sub(r"\\(.)", r"\1", raw[1:-1])
        params.setdefault(name.lower(), raw)
    return params


def resource_covers(resource, url):
    """Whether protected-resource metadata naming ``resource`` may speak for ``url`` (RFC 9728 3.3): the same
    origin; the path may differ (servers name their root, or their Streamable HTTP endpoint while we use /sse)."""
    from urllib.parse import urlsplit
    ours, theirs = urlsplit(url), urlsplit(resource)
    return (theirs.scheme.lower(), theirs.netloc.lower()) == (ours.scheme.lower(), ours.netloc.lower())


def default_resource(url):
    """The resource indicator (RFC 8707) for ``url`` when no metadata names one: ``url`` without the
    query parameters whose names look like credentials (they must reach no authorization server)."""
    from urllib.parse import unquote_plus, urlsplit, urlunsplit
    parts = urlsplit(url)
    kept = [pair for pair in parts.query.split("&")
            if pair and not SECRET_NAME_RE.search(unquote_plus(pair.partition("=")[0]))]
    return urlunsplit(parts._replace(query="&".join(kept)))


def endpoint_problem(url):
    """Why ``url`` may not be an authorization server or one of its endpoints, else None: only https, or http
    to this machine, gets a code, a secret or a token, or a browser (never javascript:, file:, ``-a``)."""
    import ipaddress
    from urllib.parse import urlsplit
    if not isinstance(url, str) or CONTROL_RE.search(url) or re.search(r"\s", url):
        return "not a URL"
    try:
        parts = urlsplit(url)
        parts.port
    except ValueError:
        return "not a valid URL"
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return "not a web page"
    if parts.scheme.lower() == "https" or parts.hostname == "localhost":
        return None
    try:
        if ipaddress.ip_address(parts.hostname).is_loopback:
            return None
    except ValueError:
        pass
    return "plain http to another machine"


def client_id_url(text):
    """``text`` when it may be a Client ID Metadata Document's URL (draft-ietf-oauth-client-id-metadata-document
    3): https, a host, a path, no user, password, fragment, "." or ".." segment.  ValueError says why not."""
    from urllib.parse import urlsplit
    try:
        parts = urlsplit(text)
        parts.port
    except ValueError:
        parts = None
    segments = parts.path.split("/")[1:] if parts else []
    if parts is None or CONTROL_RE.search(text) or re.search(r"\s", text):
        why = "not a URL"
    elif parts.scheme.lower() != "https" or not parts.hostname:
        why = "not https://"
    elif parts.username is not None or parts.password is not None or "#" in text:
        why = "a user, password or #fragment in it"
    elif not any(segments) or any(segment in (".", "..") for segment in segments):
        why = "no path, or a . or .. segment in it"
    else:
        return text
    raise ValueError("%s; a Client ID Metadata Document's URL is https://host/path, e.g. "
                     "https://example.com/client.json" % why)


def quoted(value):
    """Something a server sent (any JSON value) as one printable line of at most EXCERPT_CHARS characters."""
    text = printable(value if isinstance(value, str) else json.dumps(value))
    return text if len(text) <= EXCERPT_CHARS else text[:EXCERPT_CHARS] + "..."


def origin_text(url):
    """The origin of ``url`` (scheme://host:port) for a log line; ``url`` itself, quoted, when it has none."""
    from urllib.parse import urlsplit
    try:
        return quoted("%s://%s:%d" % origin_of(urlsplit(url)))
    except ValueError:
        return quoted(url)


def error_said(doc, scrub=str):
    """The quoted ``error`` and ``error_description`` of an OAuth error answer, each ``scrub``bed before it is cut
    short (a server may echo what we sent it); "" when it has neither."""
    if not isinstance(doc, dict):
        return ""
    return ": ".join(quoted(scrub(doc[name]) if isinstance(doc[name], str) else doc[name])
                     for name in ("error", "error_description") if doc.get(name))


def string_member(doc, name):
    """``doc[name]`` when it is a string, else None: a server's 5 or [] is no token, scope or secret."""
    value = doc.get(name)
    return value if isinstance(value, str) else None


def token_lifetime(value):
    """``expires_in`` as seconds (a positive JSON number, at most OAUTH_MAX_LIFETIME), else None (NaN, 0, "3600")."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        return None
    return float(min(value, OAUTH_MAX_LIFETIME))


def stored_expiry(doc):
    """When the stored tokens ``doc`` expire (seconds since the epoch); None for unknown or not sane (NaN, 1e400)."""
    expires = doc.get("expires_at")
    if isinstance(expires, bool) or not isinstance(expires, (int, float)) or not 0 < expires < 1e11:
        return None
    return float(expires)


def device_interval(value):
    """RFC 8628 ``interval`` in seconds, at least OAUTH_DEVICE_MIN_INTERVAL; OAUTH_DEVICE_INTERVAL for no number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        return OAUTH_DEVICE_INTERVAL
    return float(min(max(value, OAUTH_DEVICE_MIN_INTERVAL), OAUTH_MAX_LIFETIME))


def no_browser_reason(environ=None):
    """Why no browser can open where the user sits: "an SSH session", "no display"; None when one may."""
    environ = os.environ if environ is None else environ
    if environ.get("SSH_CONNECTION") or environ.get("SSH_TTY"):
        return "an SSH session"
    return None if has_display(environ) else "no display"


def origin_and_path(url):
    """``scheme://host[:port]`` of ``url``, and its path without a final "/" (well-known URIs go between them)."""
    from urllib.parse import urlsplit
    parts = urlsplit(url)
    return "%s://%s" % (parts.scheme, parts.netloc), parts.path.rstrip("/")


def well_known_urls(url, suffix):
    """RFC 9728 well-known URLs for ``url``: the path inserted after the prefix first, then the root one."""
    root, path = origin_and_path(url)
    root += "/.well-known/" + suffix
    return [root + path, root] if path else [root]


def auth_metadata_urls(issuer):
    """Where an authorization server's metadata may be: RFC 8414, then OpenID Connect (both forms)."""
    root, path = origin_and_path(issuer)
    urls = [root + "/.well-known/oauth-authorization-server" + path, root + "/.well-known/openid-configuration" + path]
    return urls + [root + path + "/.well-known/openid-configuration"] if path else urls


def callback_uri(port):
    return "http://127.0.0.1:%d/callback" % port


def callback_port_of(uri):
    """The port of ``uri`` when it is one of our loopback redirect URIs, else None."""
    from urllib.parse import urlsplit
    try:
        parts = urlsplit(uri)
        port = parts.port
    except (TypeError, ValueError, AttributeError):
        return None
    return port if (parts.scheme, parts.hostname, parts.path) == ("http", "127.0.0.1", "/callback") else None


def callback_ports(issuer, fixed=None):
    """The ports a new registration with ``issuer`` lists: ``[fixed]`` when the user fixed one; else derived from
    the issuer, so that logins to different servers do not meet on one port; several, so that servers sharing an
    issuer do not either."""
    import hashlib
    if fixed:
        return [fixed]
    digest = hashlib.sha256(issuer.encode("utf-8")).digest()
    ports = []
    for i in range(OAUTH_CALLBACK_CHOICES):
        port = OAUTH_CALLBACK_PORT + 1 + int.from_bytes(digest[2 * i:2 * i + 2], "big") % OAUTH_CALLBACK_RANGE
        if port not in ports:
            ports.append(port)
    return ports


def pkce_pair():
    """(verifier, S256 challenge) for RFC 7636."""
    import hashlib
    import secrets
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, b64url(digest)


def with_resource(fields, resource):
    """Request ``fields`` with the resource indicator (RFC 8707) ``resource``, unless it is None."""
    return dict(fields, resource=resource) if resource is not None else dict(fields)


def default_auth_dir(environ=None):
    """``OCX_PROXY_AUTH_DIR``, else ``ocx-proxy-auth`` in the cache directory (spill retention never touches it)."""
    environ = os.environ if environ is None else environ
    return environ.get("OCX_PROXY_AUTH_DIR") or user_cache_dir("ocx-proxy-auth", environ)


def _key(*parts):
    import hashlib
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()[:32]


class AuthStore:
    """The token directory: JSON files written 0600 and replaced atomically, in a directory checked before every
    read and write (another user's or a shared one is refused whole; a link, or a file not ours, is not read).
    ``client-<issuer>.json``: our registration with that issuer; ``tokens-<issuer+resource>.json``: the tokens
    for that resource; ``server-<url>.json``: the issuer and resource whose tokens a server URL (or resource)
    last stored, so that finding a server's tokens is one open."""

    def __init__(self, directory):
        self.directory = directory
        self.refused_files = set()   # said once each

    def path(self, kind, *key):
        return os.path.join(self.directory, "%s-%s.json" % (kind, _key(*key)))

    def open(self, create=False):
        """The directory, checked, as a PrivateDir (made when missing and ``create``), or None; OSError if refused."""
        return open_private_dir(self.directory, create, self._not_ours)

    def _not_ours(self, fd, uid):
        """Another user's or a shared directory (open as ``fd``) holds no tokens of ours."""
        info = os.fstat(fd)
        why = ("it belongs to uid %d, not to us (uid %d)" % (info.st_uid, uid) if info.st_uid != uid
               else "others may write to it (mode %03o)" % stat.S_IMODE(info.st_mode))
        raise OSError("refusing token directory %s: %s; nothing in it is used (make it a directory of yours "
                      "with mode 0700, or set OCX_PROXY_AUTH_DIR)" % (self.directory, why))

    def read(self, path):
        """The JSON object stored at ``path`` (one of ``self.path``'s); None when missing, not one, or refused."""
        where = self.open()
        if where is None:
            return None
        name = os.path.basename(path)
        with where:
            try:
                fd, info = where.open_read(name)
            except FileNotFoundError:
                return None
            except OSError as exc:
                return self._refuse(name, "a symbolic link" if exc.errno in (errno.ELOOP, errno.EMLINK)
                                    else exc.strerror)
            with os.fdopen(fd, "rb") as f:
                if not stat.S_ISREG(info.st_mode) or not owned_by_us(info):
                    return self._refuse(name, "not a regular file of ours")
                try:
                    doc = json.loads(f.read().decode("utf-8"))
                except (OSError, ValueError):
                    return None
        return doc if isinstance(doc, dict) else None

    def _refuse(self, name, why):
        if name not in self.refused_files:
            self.refused_files.add(name)
            log.warning("refusing token file %s: %s; it is not read" % (os.path.join(self.directory, name), why))
        return None

    def write(self, path, doc):
        """Store ``doc`` at ``path`` (one of ``self.path``'s): a new 0600 temporary file, renamed into place."""
        with self.open(create=True) as where:
            where.write(os.path.basename(path), json.dumps(doc).encode("utf-8"))

    def remove(self, path):
        """Remove ``path`` (one of ``self.path``'s): True when it was there."""
        where = self.open()
        if where is None:
            return False
        with where:
            try:
                where.remove(os.path.basename(path))
            except FileNotFoundError:
                return False
        return True

    def lookup(self, url):
        """(path, document) of the tokens last stored for ``url`` (a server URL or a resource), else (None, None)."""
        pointer = self.read(self.path("server", url)) or {}
        issuer, resource = pointer.get("issuer"), pointer.get("resource")
        if pointer.get("url") != url or not isinstance(issuer, str) or not isinstance(resource, str):
            return None, None
        path = self.path("tokens", issuer, resource)
        doc = self.read(path)
        if doc is None or (doc.get("issuer"), doc.get("resource")) != (issuer, resource):
            return None, None
        return path, doc

    def point(self, urls, issuer, resource):
        """Let each of ``urls`` find the tokens of ``issuer`` for ``resource`` (see ``lookup``)."""
        for url in urls:
            self.write(self.path("server", url), {"url": url, "issuer": issuer, "resource": resource})

    def tokens_for(self, url):
        """Every token document stored for ``url`` (resource or server URL), newest first: a scan that finds
        what earlier versions stored too."""
        where = self.open()
        if where is None:
            return []
        with where:
            names = [name for name in where.names() if name.startswith("tokens-") and name.endswith(".json")]
        found = []
        for path in [os.path.join(self.directory, name) for name in names]:
            doc = self.read(path)
            if doc and url in (doc.get("resource"), doc.get("url")):
                found.append((path, doc))
        found.sort(key=lambda item: -float(item[1].get("saved_at") or 0))
        return found


class LoginLock:
    """An advisory lock (``lock_file``) so that relays for one server run one login; the system
    drops it however the holder exits.  The file stays (unlinked, a third relay could lock a new one)."""

    def __init__(self, path):
        self.path = path
        self.fd = None

    def acquire(self):
        """True when we hold the lock now; False when another process does."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            lock_file(fd)
        except OSError as exc:
            os.close(fd)
            if isinstance(exc, (BlockingIOError, PermissionError)):   # held elsewhere
                return False
            raise
        self.fd = fd
        return True

    def release(self):
        if self.fd is not None:
            fd, self.fd = self.fd, None
            os.close(fd)   # closing drops the lock


def wait_for_lock(path, seconds):
    """A LoginLock on ``path``, held: at once, or as soon as another process lets go within ``seconds``; else None.
    OSError when the lock file cannot be made."""
    lock = LoginLock(path)
    deadline = time.monotonic() + seconds
    while not lock.acquire():
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.05)
    return lock


# ---------------------------------------------------------------------------
# OAuth clients: the settings, requests to authorization servers, how a client authenticates, which client we are
# ---------------------------------------------------------------------------

class OAuthSettings:
    """What the command line says about OAuth (see add_oauth_options)."""

    def __init__(self, client_id=None, client_secret=None, client_file=None, callback_port=None,
                 timeout=OAUTH_TIMEOUT, browser=True, auth_dir=None, scope=None, device=False,
                 client_metadata_url=None, client_key=None, client_credentials=False, idp=None, issuer=None):
        self.client_id = client_id
        self.client_secret = client_secret
        self.client_key = client_key   # a KeyFile: private_key_jwt (RFC 7523 2.2) instead of a secret
        self.client_file = client_file
        self.client_credentials = client_credentials   # the client_credentials grant: no user, no browser
        self.idp = idp   # an IdpSettings: enterprise-managed authorization, through an ID-JAG from that IdP
        self.issuer = issuer   # the only authorization server our credentials go to (None: the one a server names)
        self.callback_port = callback_port   # None: see _listen
        self.timeout = timeout
        self.browser = browser
        self.auth_dir = auth_dir or default_auth_dir()
        self.scope = scope
        self.device = device   # the device flow (RFC 8628) even where a browser could open
        self.client_metadata_url = client_metadata_url   # our Client ID Metadata Document, if we have one

    def grant(self):
        """The grant that gets this server's tokens without a login at its authorization server, or None."""
        return "client_credentials" if self.client_credentials else JWT_BEARER_GRANT if self.idp else None


class KeyFile:
    """A signing key (EcKey or RsaKey) and the file it came from (what ``auth status`` names)."""

    def __init__(self, path):
        self.path = path
        self.key = read_signing_key(path)


def oauth_client(client_id, secret=None, key_file=None, audience=None, method=None):
    """A client as OAuthRequests.client_post authenticates it: its id, and its secret or its key (``audience``:
    the issuer its assertions are for).  It authenticates as ``method`` says when that fits what it has, else
    with private_key_jwt (a key), client_secret_basic (a secret) or not at all (none)."""
    default = "private_key_jwt" if key_file else "client_secret_basic" if secret else "none"
    if method and (method == "private_key_jwt") != bool(key_file):
        method = None   # stored by a run with other credentials
    return {"client_id": client_id, "client_secret": secret, "key_file": key_file, "audience": audience,
            "token_endpoint_auth_method": method or default}


def fit_client(client, metadata):
    """``client`` sending its secret in the form where ``metadata`` takes no HTTP Basic (RFC 8414 2)."""
    methods = metadata.get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
    if (client["token_endpoint_auth_method"] == "client_secret_basic" and "client_secret_basic" not in methods
            and "client_secret_post" in methods):
        client["token_endpoint_auth_method"] = "client_secret_post"
    return client


def device_login_wanted(settings, metadata):
    """Whether this login is a device login: asked for, or no browser can open here, and the server
    offers one (when it does not, that is said)."""
    if settings.device:
        why = "--oauth-device"
    elif not settings.browser:
        why = "--oauth-no-browser"
    else:
        why = no_browser_reason()
    if not why or metadata.get("device_authorization_endpoint"):
        return bool(why)
    log.info("%s offers no device login (RFC 8628), wanted for %s: logging in through the browser URL instead"
             % (quoted(metadata["issuer"]), why))
    return False


class OAuthRequests:
    """The requests of one MCP server's OAuth flow to its authorization server (``config``: the server's
    RemoteConfig, for its proxy, TLS and secrets): JSON answers, redirects followed within their origin only,
    the client's authentication at the token and revocation endpoints.  Holds no state: any thread may use it."""

    def __init__(self, config):
        self.config = config

    def http(self, method, url, body=None, headers=()):
        """One request to a metadata, registration or token endpoint: (status, parsed JSON or None).  Redirects
        are followed within the origin of ``url`` (one elsewhere is refused, said, its status returned), at most
        OAUTH_MAX_REDIRECTS, with the same method, body and headers (RFC 9110 15.4; a GET would drop the grant)."""
        from urllib.parse import urljoin, urlsplit
        start = origin_of(urlsplit(url))
        for _ in range(OAUTH_MAX_REDIRECTS + 1):
            status, doc, location = self._once(method, url, body, headers)
            if status not in (301, 302, 307, 308) or location is None:
                return status, doc
            try:
                target = urljoin(url, location)
            except ValueError:
                target = location
            if endpoint_problem(target) or origin_of(urlsplit(target)) != start:
                log.warning("%s %s answered HTTP %d, a redirect to %s: refused, OAuth requests stay on their "
                            "origin %s" % (method, redact_url(url), status, origin_text(target), origin_text(url)))
                return status, doc
            url = target
        log.warning("%s %s: more than %d redirects in a row; not followed" % (method, redact_url(url),
                                                                             OAUTH_MAX_REDIRECTS))
        return status, doc

    def _once(self, method, url, body, headers):
        """One request, no redirect followed: (status, parsed JSON or None, the Location header or None)."""
        import http.client
        from urllib.parse import urlsplit
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise OAuthError("not an http(s) URL: %s" % redact_url(url))
        pool = HttpPool(self.config)
        # none of the --header values: they are the MCP server's, and the authorization server may be another host
        sent = dict({"User-Agent": "ocx-proxy/" + __version__, "Accept": "application/json"}, **dict(headers))
        conn = resp = None
        try:
            conn, resp = pool.exchange(method, parts, sent, body)
            data = read_body(resp, OAUTH_MAX_BODY)
        except (OSError, http.client.HTTPException, UpstreamDataError) as exc:
            raise OAuthError("%s %s: %s" % (method, redact_url(url), describe_http_exception(exc, self.config)))
        finally:   # closed here, a body left unread too: not by the garbage collector at exit (Windows complains)
            if resp is not None:
                try:
                    resp.close()
                except (OSError, ValueError):
                    pass
            if conn is not None:
                pool.discard(conn)
        try:
            doc = json.loads(data.decode("utf-8")) if data.strip() else None
        except (ValueError, RecursionError):
            doc = None
        return resp.status, doc, resp.getheader("Location")

    def get_json(self, urls):
        """The first JSON object one of ``urls`` answers with 200: (url, doc), or (None, None)."""
        for url in urls:
            status, doc = self.http("GET", url)
            if status == 200 and isinstance(doc, dict):
                return url, doc
        return None, None

    def check_endpoint(self, what, url, metadata=None):
        """OAuthError when ``endpoint_problem`` refuses ``url``, named ``what`` (a member of ``metadata``, if given)."""
        if metadata is not None:
            what = "the %s of the authorization server %s" % (what, quoted(metadata["issuer"]))
        problem = endpoint_problem(url)
        if problem:
            raise OAuthError("%s for %s is %s (%s): refused; only https://, or http:// to this machine, is used"
                             % (what, self.config.display_url, quoted(url), problem))

    def client_post(self, endpoint, fields, client):
        """POST a form to a token or revocation endpoint, authenticating as the client says: (status, doc)."""
        from urllib.parse import quote, urlencode
        # tokens stored by an earlier version may name any endpoint: checked at the last moment too
        self.check_endpoint("the token or revocation endpoint", endpoint)
        fields = dict(fields, client_id=client["client_id"])   # some servers want it even with Basic
        headers = [("Content-Type", "application/x-www-form-urlencoded")]
        method = client.get("token_endpoint_auth_method") or "none"
        secret = client.get("client_secret")
        if method == "private_key_jwt" and client.get("key_file"):
            assertion = client_assertion(client["key_file"].key, client["client_id"], client["audience"])
            self.config.keep_secret(assertion)
            fields.update(client_assertion_type=JWT_BEARER_ASSERTION, client_assertion=assertion)
        elif secret and method == "client_secret_basic":
            pair = "%s:%s" % (quote(client["client_id"], safe=""), quote(secret, safe=""))
            headers.append(("Authorization", "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")))
        elif secret:
            fields["client_secret"] = secret
        return self.http("POST", endpoint, urlencode(fields).encode("ascii"), headers)

    def token_request(self, endpoint, fields, client, what="token", wanted=("access_token",)):
        """POST to the token (or ``what``) endpoint: the answer, with the strings ``wanted``, else OAuthError."""
        status, doc = self.client_post(endpoint, fields, client)
        if status != 200 or not isinstance(doc, dict) or not all(isinstance(doc.get(name), str) for name in wanted):
            said = error_said(doc, self.config.scrub) or (
                "no JSON object with %s" % " and ".join(wanted) if status == 200 else "")
            failure = OAuthError("the %s endpoint answered HTTP %d%s" % (what, status, " (%s)" % said if said else ""))
            failure.error = string_member(doc, "error") if isinstance(doc, dict) else None
            raise failure
        return doc


class OAuthClients:
    """Which OAuth client ocx-proxy is at an authorization server: the one the command line gives
    (--oauth-client-id/-file), the public client our Client ID Metadata Document names, or our dynamic
    registration, stored per issuer in ``store`` (with the device grant when a device login needs it)."""

    def __init__(self, config, settings, store, requests):
        self.config = config
        self.settings = settings
        self.store = store
        self.requests = requests

    def client_of(self, doc):
        """The client that holds the tokens ``doc``, sending its secret as it did then."""
        configured = self.configured(doc.get("client_auth"), doc.get("issuer"))
        if configured is not None and configured["client_id"] == doc.get("client_id"):
            return configured
        stored = self.stored(doc["issuer"])
        if stored and stored.get("client_id") == doc.get("client_id"):
            return stored
        # registered anew since (another login found our ports busy): these tokens are the old client's
        return {"client_id": doc.get("client_id"), "token_endpoint_auth_method": doc.get("client_auth") or "none"}

    def stored(self, issuer):
        doc = self.store.read(self.store.path("client", issuer))
        return doc if doc and doc.get("issuer") == issuer else None

    def configured(self, method=None, issuer=None):
        """The client --oauth-client-id/-file gives, or None; it authenticates as ``method`` says (client_entry),
        its assertions for ``issuer``."""
        settings = self.settings
        if settings.client_file:
            try:
                with open(settings.client_file, encoding="utf-8") as f:
                    doc = json.load(f)
            except (OSError, ValueError) as exc:
                raise UsageError("--oauth-client-file %s: %s" % (settings.client_file, exc))
            if (not isinstance(doc, dict) or not isinstance(doc.get("client_id"), str)
                    or not isinstance(doc.get("client_secret", ""), str)):
                raise UsageError("--oauth-client-file %s: a JSON object with a string client_id (and client_secret, "
                                 "if any) expected" % settings.client_file)
            client_id, secret = doc["client_id"], doc.get("client_secret")
        elif settings.client_id:
            client_id, secret = settings.client_id, settings.client_secret
        else:
            return None
        self.config.keep_secret(secret)
        return oauth_client(client_id, secret, settings.client_key, issuer, method)

    def for_metadata(self, metadata):
        """The configured client, sending its secret as ``metadata`` allows; else, where ``metadata``
        accepts one, the public client our Client ID Metadata Document names; else None (we register)."""
        client = self.configured(issuer=metadata["issuer"])
        url = self.settings.client_metadata_url
        if client is None:
            if url and metadata.get("client_id_metadata_document_supported") is True:
                return {"client_id": url, "client_secret": None, "token_endpoint_auth_method": "none"}
            if url:
                log.info("the authorization server %s does not advertise client_id_metadata_document_supported: "
                         "registering ocx-proxy instead of using --oauth-client-metadata-url"
                         % quoted(metadata["issuer"]))
            return None
        return fit_client(client, metadata)

    def registered(self, issuer, fixed):
        """Our registration with ``issuer`` and the ports of its redirect URIs we may use, or (None, [])."""
        client = self.stored(issuer)
        if not client:
            return None, []
        # "redirect_uri": one port, as registrations were stored before they listed several
        registered = [callback_port_of(uri) for uri in client.get("redirect_uris") or [client.get("redirect_uri")]]
        ports = [port for port in registered if port and fixed in (None, port)]
        if ports:
            self.config.keep_secret(client.get("client_secret"))
        return (client, ports) if ports else (None, [])

    def register(self, metadata, redirect_uris, scope, *grant_types):
        """Dynamic Client Registration for the code grant and ``grant_types``; the client is stored for the issuer."""
        issuer = metadata["issuer"]
        endpoint = metadata.get("registration_endpoint")
        if not endpoint:
            raise OAuthError("the authorization server %s offers no dynamic client registration; give "
                             "--oauth-client-id (and --oauth-client-secret) or --oauth-client-file" % issuer)
        request = {"client_name": "ocx-proxy", "redirect_uris": redirect_uris, "application_type": "native",
                   "grant_types": ["authorization_code", "refresh_token"] + list(grant_types),
                   "response_types": ["code"],
                   "token_endpoint_auth_method": "none"}
        if scope:
            request["scope"] = scope
        status, doc = self.requests.http("POST", endpoint, json.dumps(request).encode("utf-8"),
                                         [("Content-Type", "application/json")])
        if status not in (200, 201) or not isinstance(doc, dict) or not isinstance(doc.get("client_id"), str):
            raise OAuthError("client registration at %s failed (HTTP %d)" % (redact_url(endpoint), status))
        granted = doc.get("redirect_uris")   # a server may keep fewer than we asked for
        if not isinstance(granted, list) or not all(isinstance(uri, str) for uri in granted):
            granted = redirect_uris
        client = {"issuer": issuer, "client_id": doc["client_id"],
                  "client_secret": string_member(doc, "client_secret"), "redirect_uris": granted,
                  "grant_types": request["grant_types"],
                  "token_endpoint_auth_method": string_member(doc, "token_endpoint_auth_method") or "none"}
        self.config.keep_secret(client["client_secret"])
        self.store.write(self.store.path("client", issuer), client)
        log.info("registered ocx-proxy with %s (client id %s)" % (issuer, client["client_id"]))
        return client

    def forget(self, issuer, client_id, reason=None):
        """Drop our stored registration with ``issuer`` when it is still ``client_id``; ``reason`` is said."""
        try:
            stored = self.stored(issuer)
            if stored is not None and stored.get("client_id") == client_id:
                if self.store.remove(self.store.path("client", issuer)) and reason:
                    log.info("%s %s; the next login registers again" % (issuer, reason))
        except OSError:
            pass

    def device_client(self, metadata, scope):
        """Our registration when it has the device grant, else a new one that has (with the redirect URIs of the
        one it replaces)."""
        issuer = metadata["issuer"]
        client = self.stored(issuer) or {}
        if DEVICE_GRANT in (client.get("grant_types") or ()):
            self.config.keep_secret(client.get("client_secret"))
            return client
        ports = callback_ports(issuer, self.settings.callback_port)
        uris = client.get("redirect_uris") or [callback_uri(port) for port in ports]
        return self.register(metadata, uris, scope, DEVICE_GRANT)


# ---------------------------------------------------------------------------
# Enterprise IdP: the user's ID token (a file, or our own login at the IdP) and its exchange for an ID-JAG
# ---------------------------------------------------------------------------
# Enterprise-managed authorization (the MCP extension io.modelcontextprotocol/enterprise-managed-authorization,
# https://modelcontextprotocol.io/extensions/auth/enterprise-managed-authorization; the IETF draft
# draft-ietf-oauth-identity-assertion-authz-grant): the company's identity provider, which the MCP server's
# authorization server trusts, turns the user's ID token into an ID-JAG for that one server (a token exchange,
# RFC 8693), and the server's authorization server takes the ID-JAG as a JWT bearer grant (RFC 7523 2.1).  No
# consent screen per server: the IdP's policy decides.  OAuthClient runs the grant; this section gets the ID-JAG.

IDP_SCOPE = "openid"   # what our own login at the IdP asks for (and offline_access where the IdP lists it)


class IdpSettings:
    """--oauth-idp-*: the identity provider's issuer, ocx-proxy's client there (its secret or key, if it has one),
    where the user's ID token is (a file an SSO agent keeps; None: our own login), the token endpoint when the
    IdP's metadata cannot be found."""

    def __init__(self, issuer, client_id, client_secret=None, client_key=None, id_token_file=None,
                 token_endpoint=None):
        self.issuer = issuer
        self.client_id = client_id
        self.client_secret = client_secret
        self.client_key = client_key   # a KeyFile
        self.id_token_file = id_token_file
        self.token_endpoint = token_endpoint


class IdentityProvider:
    """The company's IdP for one relay: the user's ID token and ID-JAGs.  The ID token comes from
    --oauth-idp-id-token-file, read anew at each exchange (an SSO agent renews it), else from our own login at the
    IdP (``login(metadata, client, scope, deadline)``, OAuthClient's browser or device login, returning the token
    endpoint's answer), kept in the token store as ``idp-<issuer+client>.json`` and refreshed there.  ID tokens
    and ID-JAGs are secrets: ``config`` masks them in every message."""

    def __init__(self, settings, config, store, requests, login):
        self.settings = settings
        self.config = config
        self.store = store
        self.requests = requests
        self.login = login
        self.metadata = None
        self.path = store.path("idp", settings.issuer, settings.client_id)

    def discover(self):
        """The IdP's metadata (RFC 8414, then OpenID Connect Discovery), its issuer checked; the token endpoint
        --oauth-idp-token-endpoint names wins (the only one there is where the IdP publishes no metadata)."""
        if self.metadata is not None:
            return self.metadata
        issuer, endpoint = self.settings.issuer, self.settings.token_endpoint
        where, metadata = self.requests.get_json(auth_metadata_urls(issuer))
        if metadata is None:
            metadata = {"issuer": issuer}
        elif not isinstance(metadata.get("issuer"), str) or metadata["issuer"].rstrip("/") != issuer.rstrip("/"):
            raise OAuthError("the metadata at %s claims the issuer %s, not %s: refused (RFC 8414 3.3)"
                             % (redact_url(where), quoted(metadata.get("issuer")), issuer))
        metadata = dict(metadata, **({"token_endpoint": endpoint} if endpoint else {}))
        if not isinstance(metadata.get("token_endpoint"), str):
            raise OAuthError("the identity provider %s publishes no token endpoint%s; give --oauth-idp-token-endpoint"
                             % (issuer, "" if where else " (no metadata at all)"))
        for name in ("token_endpoint", "authorization_endpoint", "device_authorization_endpoint"):
            if metadata.get(name) is not None:
                self.requests.check_endpoint(name, metadata[name], metadata)
        self.metadata = metadata
        return metadata

    def client(self, metadata):
        """ocx-proxy's client at the IdP (--oauth-idp-client-id and its secret or key)."""
        s = self.settings
        self.config.keep_secret(s.client_secret)
        return fit_client(oauth_client(s.client_id, s.client_secret, s.client_key, metadata["issuer"]), metadata)

    def id_jag(self, audience, resource, scope, deadline, interactive):
        """An ID-JAG for the authorization server whose issuer is ``audience``, for ``resource`` (the MCP server)
        and ``scope`` (the extension's section 4: RFC 8693 2.1 with requested_token_type id-jag).  ``interactive``:
        our own login at the IdP may run (a relay renewing a token does not start one)."""
        subject = self.id_token(deadline, interactive)
        metadata = self.discover()
        fields = {"grant_type": TOKEN_EXCHANGE_GRANT, "requested_token_type": ID_JAG_TYPE, "audience": audience,
                  "resource": resource, "subject_token": subject, "subject_token_type": ID_TOKEN_TYPE}
        if scope:
            fields["scope"] = scope
        answer = self.requests.token_request(metadata["token_endpoint"], fields, self.client(metadata),
                                             "identity provider's token")
        self.config.keep_secret(answer["access_token"])
        if answer.get("issued_token_type") != ID_JAG_TYPE:
            raise OAuthError("the identity provider %s answered the token exchange with issued_token_type %s, not an "
                             "ID-JAG (%s)" % (self.settings.issuer, quoted(answer.get("issued_token_type")),
                                              ID_JAG_TYPE))
        return answer["access_token"]

    def id_token(self, deadline, interactive):
        """The user's ID token: the file's; else our login's (refreshed when it is about to expire, or a new login
        when ``interactive``).  OAuthError says what to do when there is none."""
        if self.settings.id_token_file:
            return self._file_token()
        # one refresh or login at a time: relays for other servers wait for it (a login, up to its deadline)
        wait = deadline - time.monotonic() if interactive else OAUTH_RENEW_WAIT
        lock = wait_for_lock(self.path[:-len(".json")] + ".lock", max(wait, 0.0))
        try:
            return self._stored_token(deadline, interactive)
        finally:
            if lock is not None:
                lock.release()

    def _file_token(self):
        path = self.settings.id_token_file
        try:
            token = read_user_file(path, JOSE_MAX_FILE_BYTES, "ID token file").decode("ascii").strip()
        except UnicodeDecodeError:
            token = None
        except ValueError as exc:
            raise OAuthError(str(exc))
        claims = jwt_claims(token)
        if claims is None:
            raise OAuthError("ID token file %s holds no JWT (an ID token is three base64url parts joined by dots)"
                             % path)
        self.config.keep_secret(token)
        if id_token_expired(claims, 0):
            raise OAuthError("the ID token in %s expired at %s; sign in to your company's SSO again (the file is "
                             "read anew at each exchange)" % (path, utc_time(claims["exp"])))
        return token

    def _stored_token(self, deadline, interactive):
        doc = self.store.read(self.path) or {}
        token = doc.get("id_token") if doc.get("issuer") == self.settings.issuer else None
        self.config.keep_secret(token, doc.get("refresh_token"))
        if isinstance(token, str) and not id_token_expired(jwt_claims(token) or {}, OAUTH_EXPIRY_MARGIN):
            return token
        metadata = self.discover()
        if isinstance(doc.get("refresh_token"), str):
            try:
                answer = self.requests.token_request(metadata["token_endpoint"], {
                    "grant_type": "refresh_token", "refresh_token": doc["refresh_token"]}, self.client(metadata),
                    "identity provider's token", ("id_token",))
                return self._save(answer, metadata, doc)
            except OAuthError as exc:
                log.info("the identity provider %s refused to refresh the ID token (%s)" % (self.settings.issuer, exc))
        if not interactive:
            raise OAuthError("no valid ID token from the identity provider %s; log in there: python ocx_proxy.py "
                             "auth login --url %s" % (self.settings.issuer, self.config.display_url))
        scopes = metadata.get("scopes_supported")
        scope = IDP_SCOPE + (" offline_access" if isinstance(scopes, list) and "offline_access" in scopes else "")
        return self._save(self.login(metadata, self.client(metadata), scope, deadline), metadata, doc)

    def _save(self, answer, metadata, old):
        """Keep the ID token (and refresh token) of the IdP's answer; returns the ID token."""
        token = string_member(answer, "id_token")
        if jwt_claims(token) is None:
            raise OAuthError("the identity provider %s answered without an ID token (id_token); is openid among "
                             "the scopes its client may ask for?" % self.settings.issuer)
        refresh = string_member(answer, "refresh_token") or old.get("refresh_token")
        self.config.keep_secret(token, refresh)
        self.store.write(self.path, {"issuer": self.settings.issuer, "client_id": self.settings.client_id,
                                     "id_token": token, "refresh_token": refresh, "saved_at": time.time()})
        return token

    def describe(self):
        """Where the ID token comes from, for ``auth status``."""
        if self.settings.id_token_file:
            return "ID token from the file %s" % self.settings.id_token_file
        doc = self.store.read(self.path) or {}
        claims = jwt_claims(doc.get("id_token")) or {}
        if not claims:
            return "ID token from a login at the identity provider (none stored: `auth login` runs one)"
        return "ID token from a login at the identity provider, stored in %s (ID token expires %s%s)" % (
            self.path, utc_time(claims["exp"]) if number_claim(claims, "exp") else "never",
            ", refresh token: yes" if doc.get("refresh_token") else "")

    def forget(self):
        """Remove the stored login at the IdP: True when there was one."""
        return not self.settings.id_token_file and self.store.remove(self.path)


def number_claim(claims, name):
    """Whether ``claims[name]`` is a JSON number a time can be (seconds since the epoch)."""
    value = claims.get(name)
    return not isinstance(value, bool) and isinstance(value, (int, float)) and 0 <= value < 1e11


def id_token_expired(claims, margin):
    """Whether the ID token whose ``claims`` these are expires within ``margin`` seconds (one without exp does not)."""
    return number_claim(claims, "exp") and claims["exp"] - margin <= time.time()


def utc_time(seconds):
    """``seconds`` since the epoch as an ISO 8601 UTC time."""
    import datetime
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).isoformat(" ", "seconds")


# ---------------------------------------------------------------------------
# OAuth login: discovery, the login and the grants that need none, refresh and renewal for one server
# ---------------------------------------------------------------------------

class OAuthClient:
    """The OAuth flow for one MCP server (``config``: its RemoteConfig): the tokens we hold, discovery,
    registration, the login (or the grant that needs none: client credentials, an ID-JAG) and refreshes.
    Thread-safe; one login at a time, and one renewal at a time across relays.  ``on_login_prompt``: None, or
    a function (set by the relay, must not raise) a device login calls from its thread once the code is known,
    as ``f(verification_uri, user_code, verification_uri_complete or None)``, printable strings."""

    def __init__(self, config, settings):
        self.config = config
        self.settings = settings
        self.store = AuthStore(settings.auth_dir)
        self.requests = OAuthRequests(config)
        self.clients = OAuthClients(config, settings, self.store, self.requests)
        self.url = config.parts._replace(fragment="").geturl()
        self.resource = default_resource(self.url)   # until the protected-resource metadata names another
        self.lock = threading.Lock()
        self.tokens = None       # the stored document: issuer, resource, metadata, client id, tokens
        self.tokens_path = None
        self.metadata = None     # the authorization server's, once discovered
        self.scope = settings.scope
        self.login_thread = None
        self.login_url = None
        self.user_code = None    # a device login's code, shown with login_url (its verification URI)
        self.on_login_prompt = None
        self.login_error = None
        self.step_ups = 0
        self.refusal = None   # why the token directory cannot be used, if it cannot
        self.refusal_said = None
        self.idp = settings.idp and IdentityProvider(settings.idp, config, self.store, self.requests,
                                                     self._idp_login)
        self._reload()

    def access_token(self):
        """The access token to send (refreshed or renewed first when it is about to expire), or None."""
        with self.lock:
            self._reload()
            if self.tokens is None:
                return None
            expires = stored_expiry(self.tokens)
            # a short-lived token is refreshed in its last tenth, not on every request
            margin = min(OAUTH_EXPIRY_MARGIN, (token_lifetime(self.tokens.get("lifetime")) or 0) / 10)
            if expires and time.time() > expires - margin:
                if self.tokens.get("refresh_token"):
                    self._refresh()
                elif self.settings.grant() and self.tokens.get("grant") == self.settings.grant():
                    # a grant that needs no one at the authorization server: renewed here before the token expires
                    self._renew()
            return self.tokens.get("access_token") if self.tokens else None

    def authorize(self, status, challenge, used, wait=OAUTH_REQUEST_WAIT):
        """After a 401 (or 403 insufficient_scope) for the token ``used``: refresh, take a newer token, or log in
        (waiting at most ``wait`` s); AuthorizationRequired, with instructions, when none is there."""
        params = parse_www_authenticate(challenge)
        with self.lock:
            self._reload()
            if self.refusal is not None:   # no login: its tokens could not be kept
                if self.refusal != self.refusal_said:   # said once, not at every request
                    log.warning(self.refusal)
                    self.refusal_said = self.refusal
                raise AuthorizationRequired("authorization failed: %s" % self.refusal)
            current = self.tokens.get("access_token") if self.tokens else None
            if current and current != used:
                return  # a refresh or another relay's login since that request
            if status == 403:
                if self.step_ups >= OAUTH_STEP_UPS:
                    raise AuthorizationRequired("the server still refuses the token after %d step-up logins "
                                                "(HTTP 403 insufficient_scope)" % OAUTH_STEP_UPS)
                self.step_ups += 1
            self.scope = params.get("scope") or self.scope
            if status == 401 and self.tokens and self.tokens.get("refresh_token") and self._refresh():
                return
            self._start_login(params)
            thread = self.login_thread
        thread.join(min(self.settings.timeout, wait))
        with self.lock:
            if self.tokens and self.tokens.get("access_token") not in (None, used) and not thread.is_alive():
                return
            raise AuthorizationRequired(self._instructions())

    def _instructions(self):
        command = "python ocx_proxy.py auth login%s --url %s" % (" --device" if self.user_code else "",
                                                                  self.config.display_url)
        if self.login_error:
            return "authorization failed: %s; run `%s`" % (self.login_error, command)
        if self.login_url and self.user_code:
            return ("authorization required: open %s and enter the code %s to log in, then retry (or run `%s`)"
                    % (self.login_url, self.user_code, command))
        if self.login_url:
            return ("authorization required: open this URL to log in, then retry: %s (or run `%s`)"
                    % (self.login_url, command))
        return "authorization required: run `%s`" % command

    def _reload(self):
        """The tokens as stored now (another relay may have refreshed or replaced them)."""
        try:
            if self.tokens_path is not None:
                self.tokens = self.store.read(self.tokens_path)
            else:
                self.tokens_path, self.tokens = self.store.lookup(self.resource)
                if self.tokens is not None and isinstance(self.tokens.get("resource"), str):
                    self.resource = self.tokens["resource"]   # what the metadata named: refreshes ask for it
            self.refusal = None
        except OSError as exc:
            self.tokens, self.refusal = None, str(exc)

    def _hold(self, path, doc):
        """Make the tokens ``doc`` stored at ``path`` ours, findable from our URL and resource."""
        self.tokens, self.tokens_path = doc, path
        self.store.point(sorted({self.url, self.resource}), doc.get("issuer"), doc.get("resource"))

    def _save_tokens(self, answer, issuer, metadata, client, grant=None):
        """Store a token endpoint answer to ``grant`` (None: a refresh, which keeps the grant, and the refresh token
        when it brings no new one)."""
        old = self.tokens if self.tokens and self.tokens.get("issuer") == issuer else {}
        doc = {"issuer": issuer, "resource": self.resource, "url": self.url, "client_id": client["client_id"],
               "client_auth": client.get("token_endpoint_auth_method") or "none", "grant": grant or old.get("grant"),
               "token_endpoint": metadata["token_endpoint"],
               "revocation_endpoint": metadata.get("revocation_endpoint") or old.get("revocation_endpoint"),
               "saved_at": time.time(), "access_token": answer["access_token"],
               "refresh_token": string_member(answer, "refresh_token") or old.get("refresh_token"),
               "scope": string_member(answer, "scope") or self.scope or old.get("scope")}
        lifetime = token_lifetime(answer.get("expires_in"))
        if lifetime is not None:
            doc["expires_at"] = time.time() + lifetime
            doc["lifetime"] = lifetime
        elif "expires_in" in answer:
            log.warning("the token endpoint's expires_in %s is no lifetime; the token is used until the server "
                        "refuses it" % quoted(answer["expires_in"]))
        self.config.keep_secret(doc["access_token"], doc["refresh_token"])
        path = self.store.path("tokens", issuer, self.resource)
        self.store.write(path, doc)
        self._hold(path, doc)

    def _renewal_lock(self, issuer):
        """The lock that lets one relay at a time renew these tokens: a refresh token spent twice is refused the
        second time, and a server that rotates them then revokes them all (RFC 9700 4.14.2).  None when another
        relay held it for OAUTH_RENEW_WAIT s, or it cannot be made (we renew all the same, and say so)."""
        try:
            lock = wait_for_lock(os.path.join(self.settings.auth_dir, "renew-%s.lock" % _key(issuer, self.resource)),
                                 OAUTH_RENEW_WAIT)
        except OSError as exc:
            log.warning("no renewal lock for %s (%s); renewing without it" % (self.config.display_url, exc))
            return None
        if lock is None:
            log.warning("another ocx-proxy has been renewing the tokens for %s for %g s; renewing them here too"
                        % (self.config.display_url, OAUTH_RENEW_WAIT))
        return lock

    def _refresh(self):
        """Use the refresh token, one relay at a time; True on success (ours, or another relay's meanwhile)."""
        doc = self.tokens
        lock = self._renewal_lock(doc["issuer"])
        try:
            stored = self.store.read(self.tokens_path) or {}
            if stored.get("refresh_token") not in (None, doc["refresh_token"]) and stored.get("access_token"):
                self.tokens = stored   # another relay refreshed while we waited for the lock
                return True
            return self._refresh_locked(doc)
        finally:
            if lock is not None:
                lock.release()

    def _refresh_locked(self, doc):
        """The refresh itself; a refused refresh token is forgotten (a login follows)."""
        client = self.clients.client_of(doc)
        fields = {"grant_type": "refresh_token", "refresh_token": doc["refresh_token"], "resource": self.resource}
        try:
            answer = self.requests.token_request(doc["token_endpoint"], fields, client)
        except OAuthError as exc:
            stored = self.store.read(self.tokens_path) or {}
            if stored.get("refresh_token") not in (None, doc["refresh_token"]):
                self.tokens = stored  # another relay refreshed first (servers rotate refresh tokens)
                return True
            log.info("the token refresh was refused (%s); a new login is needed" % exc)
            if exc.error in FORGOTTEN_CLIENT_ERRORS and self.clients.configured() is None:
                self.clients.forget(doc["issuer"], doc.get("client_id"),
                                    "no longer knows ocx-proxy's client registration")
            doc = dict(doc, refresh_token=None, access_token=None)
            self.store.write(self.tokens_path, doc)
            self.tokens = doc
            return False
        self._save_tokens(answer, doc["issuer"], doc, client)
        log.info("refreshed the access token for %s" % self.config.display_url)
        return True

    def _renew(self):
        """Run the grant that needs no login again before the token expires (``doc``: the stored tokens), one relay
        at a time; True on success.  A failure is said, and the token kept until the server refuses it."""
        doc = self.tokens
        lock = self._renewal_lock(doc["issuer"])
        try:
            stored = self.store.read(self.tokens_path) or {}
            if stored.get("access_token") not in (None, doc.get("access_token")):
                self.tokens = stored   # another relay renewed them while we waited
                return True
            client = self.clients.client_of(doc)
            fields = self._grant_fields(doc["issuer"], time.monotonic() + self.settings.timeout, False)
            answer = self.requests.token_request(doc["token_endpoint"], dict(fields, resource=self.resource), client)
            self._save_tokens(answer, doc["issuer"], doc, client, fields["grant_type"])
        except (OcxError, OSError) as exc:
            log.warning("could not renew the access token for %s: %s" % (self.config.display_url,
                                                                         printable(self.config.scrub(str(exc)))))
            return False
        finally:
            if lock is not None:
                lock.release()
        log.info("renewed the access token for %s (%s)" % (self.config.display_url, GRANT_NAMES[fields["grant_type"]]))
        return True

    def _grant_fields(self, issuer, deadline, interactive):
        """The token request of the grant that needs no login at the authorization server ``issuer``: client
        credentials (RFC 6749 4.4), or a JWT bearer grant (RFC 7523 2.1) with a new ID-JAG from the IdP."""
        grant = self.settings.grant()
        fields = {"grant_type": grant}
        if grant == JWT_BEARER_GRANT:
            fields["assertion"] = self.idp.id_jag(issuer, self.resource, self.scope, deadline, interactive)
        if self.scope:
            fields["scope"] = self.scope
        return fields

    def discover(self, params=None):
        """The authorization server's metadata, found through the protected-resource metadata (without it, as in
        2025-03-26, the server's root); another issuer's, or an endpoint ``endpoint_problem`` refuses, is refused
        before anything is sent to it."""
        from urllib.parse import urljoin, urlsplit
        if self.metadata is not None:
            return self.metadata
        prm_urls = [params["resource_metadata"]] if params and params.get("resource_metadata") else []
        _, prm = self.requests.get_json(prm_urls + well_known_urls(self.resource, "oauth-protected-resource"))
        root = origin_and_path(self.url)[0]
        if prm and isinstance(prm.get("authorization_servers"), list) and prm["authorization_servers"]:
            issuer = prm["authorization_servers"][0]
            self.requests.check_endpoint("the authorization server", issuer)
            if isinstance(prm.get("resource"), str):
                if not resource_covers(prm["resource"], self.url):
                    raise OAuthError("the protected-resource metadata is for %s, not %s: no login for another "
                                     "resource (RFC 9728)" % (redact_url(prm["resource"]), self.config.display_url))
                self.resource = prm["resource"]
            if not self.scope and isinstance(prm.get("scopes_supported"), list):
                self.scope = " ".join(str(s) for s in prm["scopes_supported"])
            where, metadata = self.requests.get_json(auth_metadata_urls(issuer))
            if metadata is None:
                raise OAuthError("the authorization server %s publishes no metadata" % issuer)
        else:
            issuer = None   # 2025-03-26: the server's origin is the authorization server
            where, metadata = self.requests.get_json(auth_metadata_urls(root))
            if metadata is None:
                metadata = {"authorization_endpoint": urljoin(root, "/authorize"),
                            "token_endpoint": urljoin(root, "/token"),
                            "registration_endpoint": urljoin(root, "/register")}
            metadata.setdefault("issuer", root)
        for name in ("issuer", "authorization_endpoint", "token_endpoint", "registration_endpoint",
                     "revocation_endpoint", "device_authorization_endpoint"):
            if metadata.get(name) is not None:
                self.requests.check_endpoint(name, metadata[name], metadata)
            elif name in ("issuer", "authorization_endpoint", "token_endpoint"):
                raise OAuthError("the authorization server metadata has no %s" % name)
        claimed = metadata["issuer"]
        if issuer is None:
            # the issuer may have a path (the conformance suite's is <origin>/oauth), another origin not
            trusted, expected = origin_of(urlsplit(claimed)) == origin_of(self.config.parts), "one at " + root
        else:
            # RFC 8414 3.3, OpenID Discovery 4.3, but for a final "/" (the two documents often come from different code)
            trusted, expected = claimed.rstrip("/") == issuer.rstrip("/"), issuer
        if not trusted:
            raise OAuthError("the metadata at %s claims the issuer %s, not %s: refused (%s)" % (
                redact_url(where), quoted(claimed), expected,
                "OpenID Discovery 4.3" if "openid-configuration" in where else "RFC 8414 3.3"))
        pinned = self.settings.issuer
        if pinned and claimed.rstrip("/") != pinned.rstrip("/"):
            raise OAuthError("%s names the authorization server %s, not --oauth-issuer %s: refused, no credential "
                             "was sent to it" % (self.config.display_url, quoted(claimed), pinned))
        if not self.scope and isinstance(metadata.get("scopes_supported"), list) and not prm:
            self.scope = " ".join(str(s) for s in metadata["scopes_supported"])
        self.metadata = metadata
        return metadata

    def _start_login(self, params):
        """Start the login thread unless one runs (with self.lock held)."""
        if self.login_thread is not None and self.login_thread.is_alive():
            return
        self.login_error = self.login_url = self.user_code = None
        replacing = (self.tokens or {}).get("saved_at") or 0   # 0: we had none
        self.login_thread = threading.Thread(target=self._login_thread, args=(params, replacing),
                                             name="ocx-oauth-login", daemon=True)
        self.login_thread.start()

    def _login_thread(self, params, replacing):
        try:
            self.login(params, replacing=replacing)
        except (OcxError, OSError) as exc:
            with self.lock:
                self.login_error = printable(self.config.scrub(str(exc)))
            log.warning("login to %s failed: %s" % (self.config.display_url, self.login_error))

    def login(self, params=None, deadline=None, replacing=None):
        """Run the whole login (or wait for another relay's): returns when tokens are stored.  ``replacing``: the
        ``saved_at`` of the tokens it replaces (0: none; None: what is stored now); others are another's login."""
        self.store.open(create=True).close()   # a refused directory: no login, nothing sent anywhere
        metadata = self.discover(params)
        issuer = metadata["issuer"]
        deadline = deadline or time.monotonic() + self.settings.timeout
        lock = LoginLock(os.path.join(self.settings.auth_dir, "login-%s.lock" % _key(issuer, self.resource)))
        path = self.store.path("tokens", issuer, self.resource)
        if replacing is None:
            replacing = (self.store.read(path) or {}).get("saved_at") or 0
        said = False
        while not lock.acquire():
            if time.monotonic() >= deadline:
                raise OAuthError("another ocx-proxy's login did not finish within %g s" % self.settings.timeout)
            if not said:
                log.info("another ocx-proxy is logging in to %s; waiting for it" % issuer)
                said = True
            time.sleep(0.1)
            if self._take_newer(path, replacing):
                return
        try:
            if not self._take_newer(path, replacing):
                self._login_locked(metadata, deadline)
        finally:
            lock.release()

    def _take_newer(self, path, replacing):
        """Adopt the tokens at ``path`` when another login stored them since ``replacing``."""
        doc = self.store.read(path)
        if not doc or not doc.get("access_token") or (doc.get("saved_at") or 0) == replacing:
            return False
        with self.lock:
            self._hold(path, doc)
        return True

    def _login_locked(self, metadata, deadline):
        """The login itself: the grant that needs none (client credentials, an ID-JAG from the IdP), or the user's
        through the browser or a device code; the tokens stored."""
        configured = self.clients.for_metadata(metadata)
        grant = self.settings.grant()
        if grant and configured is None:
            raise OAuthError("the authorization server %s takes no Client ID Metadata Document: give --oauth-client-id "
                             "(and its secret or key) for the %s grant" % (metadata["issuer"], grant))
        if grant:
            client, fields = configured, self._grant_fields(metadata["issuer"], deadline, True)
            answer = self.requests.token_request(metadata["token_endpoint"], dict(fields, resource=self.resource),
                                                 client)
        else:
            client, answer, grant = self._user_login(metadata, configured, self.scope, self.resource, deadline)
        with self.lock:
            self._save_tokens(answer, metadata["issuer"], metadata, client, grant)
        log.info("logged in to %s (tokens stored in %s)" % (metadata["issuer"], self.settings.auth_dir))

    def _idp_login(self, metadata, client, scope, deadline):
        """Our own login at the identity provider (IdentityProvider's ``login``): the token endpoint's answer."""
        return self._user_login(metadata, client, scope, None, deadline)[1]

    def _user_login(self, metadata, configured, scope, resource, deadline):
        """The user's login at the server of ``metadata``, through the browser or a device code, for ``scope`` and
        ``resource`` (None: none named): ``(client, token endpoint answer, grant)``."""
        import secrets
        from urllib.parse import urlencode
        if device_login_wanted(self.settings, metadata):
            client = configured or self.clients.device_client(metadata, scope)
            return client, self._device_login(metadata, client, scope, resource, deadline), DEVICE_GRANT
        listener, client = self._listen(metadata, configured, scope, deadline)
        try:
            verifier, challenge = pkce_pair()
            state = secrets.token_urlsafe(24)
            query = with_resource({"response_type": "code", "client_id": client["client_id"],
                                   "redirect_uri": listener.redirect_uri, "code_challenge": challenge,
                                   "code_challenge_method": "S256", "state": state}, resource)
            if scope:
                query["scope"] = scope
            endpoint = metadata["authorization_endpoint"]
            url = endpoint + ("&" if "?" in endpoint else "?") + urlencode(query)
            with self.lock:
                self.login_url = url
            self._open_browser(url)
            answer = listener.wait(state, deadline)
        finally:
            listener.close()
        if answer is None:
            raise OAuthError("no login within %g s (--oauth-timeout)" % self.settings.timeout)
        if "iss" in answer or metadata.get("authorization_response_iss_parameter_supported"):
            if answer.get("iss") != metadata["issuer"]:
                raise OAuthError("the authorization response's iss %s is not the issuer %s (RFC 9207; rejected)"
                                 % (quoted(answer.get("iss")), metadata["issuer"]))
        if answer.get("error"):
            raise OAuthError("the authorization server refused: %s" % error_said(answer))
        if not answer.get("code"):
            raise OAuthError("the authorization response to this login (its state) carries neither a code nor an "
                             "error: a broken authorization server, or an edited URL; log in again")
        fields = {"grant_type": "authorization_code", "code": answer["code"], "code_verifier": verifier,
                  "redirect_uri": listener.redirect_uri}
        return client, self.requests.token_request(metadata["token_endpoint"], with_resource(fields, resource),
                                                   client), "authorization_code"

    def _device_login(self, metadata, client, scope, resource, deadline):
        """Get a device code, tell the user where to enter it, and poll the token endpoint until they approve,
        deny, or the code or --oauth-timeout runs out: the token endpoint's answer."""
        fields = with_resource({"scope": scope} if scope else {}, resource)
        code = self.requests.token_request(metadata["device_authorization_endpoint"], fields, client,
                                           "device authorization", ("device_code", "user_code", "verification_uri"))
        self.config.keep_secret(code["device_code"])
        complete = string_member(code, "verification_uri_complete")
        for name in ("verification_uri", "verification_uri_complete") if complete else ("verification_uri",):
            self.requests.check_endpoint(name, code[name], metadata)
        lifetime = token_lifetime(code.get("expires_in"))
        expires = time.monotonic() + lifetime if lifetime else float("inf")
        self._prompt(code["verification_uri"], quoted(code["user_code"]), complete)
        interval = device_interval(code.get("interval"))
        poll = with_resource({"grant_type": DEVICE_GRANT, "device_code": code["device_code"]}, resource)
        while True:
            time.sleep(max(0.0, min(interval, min(deadline, expires) - time.monotonic())))
            try:
                return self.requests.token_request(metadata["token_endpoint"], poll, client)
            except OAuthError as exc:
                if exc.error not in ("authorization_pending", "slow_down", "expired_token", "access_denied"):
                    raise
                failure = exc.error
            interval += OAUTH_DEVICE_SLOW_DOWN if failure == "slow_down" else 0
            if failure == "access_denied":
                raise OAuthError("the login was denied at the authorization server (access_denied)")
            if failure == "expired_token" or time.monotonic() >= expires:
                raise OAuthError("the code expired before the login was approved; log in again")
            if time.monotonic() >= deadline:
                raise OAuthError("no login within %g s (--oauth-timeout)" % self.settings.timeout)

    def _prompt(self, uri, user_code, complete=None):
        """Tell the user where to enter ``user_code``: on stderr, in requests' instructions, ``on_login_prompt``."""
        with self.lock:
            self.login_url, self.user_code = uri, user_code
        log.info("to log in to %s, open %s and enter the code %s" % (self.config.display_url, uri, user_code))
        if complete:
            log.info("or open %s (the code filled in)" % complete)
        if self.on_login_prompt is not None:
            self.on_login_prompt(uri, user_code, complete)

    def _listen(self, metadata, configured, scope, deadline):
        """The loopback listener and the client whose redirect URI it serves: the ``configured`` client's one port,
        waited for while busy; else our registration's first free one; else (all busy, or none) a new registration
        (``callback_ports``)."""
        fixed = self.settings.callback_port
        if configured is not None:
            return self._listen_waiting(fixed or OAUTH_CALLBACK_PORT, deadline), configured
        client, ports = self.clients.registered(metadata["issuer"], fixed)
        listener = CallbackListener.on_first_free(ports)
        if listener is not None:
            return listener, client
        wanted = callback_ports(metadata["issuer"], fixed)
        listener = CallbackListener.on_first_free(wanted) or CallbackListener(0)
        tried = wanted[:wanted.index(listener.port)] if listener.port in wanted else wanted
        busy = ports + [port for port in tried if port not in ports]
        if busy:
            log.warning("the callback port%s busy (another login?); registering with port %d" % (
                " %d is" % busy[0] if len(busy) == 1 else "s %s are" % ", ".join(map(str, busy)), listener.port))
        uris = [listener.redirect_uri] + [callback_uri(port) for port in wanted if port != listener.port]
        try:
            return listener, self.clients.register(metadata, uris, scope)
        except BaseException:
            listener.close()
            raise

    def _listen_waiting(self, port, deadline):
        """A listener on ``port``, waiting while it is busy (a pre-registered redirect URI needs it)."""
        other = ("register http://127.0.0.1:PORT/callback with another PORT for this client and give "
                 "--oauth-callback-port PORT")
        said = False
        while True:
            try:
                return CallbackListener(port)
            except OSError as exc:
                reason = exc.strerror or str(exc)
            if time.monotonic() >= deadline:
                raise OAuthError("the callback port %d stayed busy (%s) until --oauth-timeout; the pre-registered "
                                 "redirect URI needs it: free it, or %s" % (port, reason, other))
            if not said:
                log.warning("the callback port %d is busy (%s) and the pre-registered redirect URI needs it: waiting "
                            "for it (another login?) up to --oauth-timeout; or %s" % (port, reason, other))
                said = True
            time.sleep(0.2)

    def _open_browser(self, url):
        """Open ``url`` in a browser detached from our stdio (the MCP channel), else print it."""
        if self.settings.browser and has_display(os.environ):
            try:
                open_browser(url)
                log.info("opened a browser to log in to %s; if none appeared, open: %s"
                         % (self.config.display_url, url))
                return
            except OSError as exc:
                log.warning("could not start a browser (%s)" % exc)
        log.info("to log in to %s, open this URL in a browser: %s" % (self.config.display_url, url))

    def stored(self):
        """Every stored token document for this server, [(path, doc)], those a relay takes first."""
        found = self.store.tokens_for(self.url)
        path, doc = self.store.lookup(self.url)
        if doc is not None and path not in [p for p, _ in found]:
            found.insert(0, (path, doc))
        return found

    def forget(self, path, doc):
        """Remove the tokens ``doc`` stored at ``path``, what points to them, and their registration."""
        self.store.remove(path)
        for url in {url for url in (self.url, doc.get("url"), doc.get("resource")) if isinstance(url, str)}:
            self.store.remove(self.store.path("server", url))
        if isinstance(doc.get("issuer"), str):
            self.clients.forget(doc["issuer"], doc.get("client_id"))

    def revoke(self, doc):
        """Revoke the tokens ``doc`` holds (RFC 7009), refresh token first: None without an endpoint, else
        why it failed, or ""."""
        endpoint = doc.get("revocation_endpoint")
        if not isinstance(endpoint, str):
            return None
        client = self.clients.client_of(doc)
        for hint in ("refresh_token", "access_token"):
            token = doc.get(hint)
            if not isinstance(token, str):
                continue
            try:
                status, _ = self.requests.client_post(endpoint, {"token": token, "token_type_hint": hint}, client)
            except (OcxError, OSError) as exc:
                return self.config.scrub(str(exc))
            if status != 200:   # RFC 7009: 200 even for a token the server no longer knows
                return "the revocation endpoint answered HTTP %d" % status
        return ""


class CallbackListener:
    """The loopback listener for the authorization response, ``http://127.0.0.1:PORT/callback``.  Non-blocking:
    a connection without a request head within OAUTH_CALLBACK_READ_TIMEOUT is dropped (browsers open spares)."""

    def __init__(self, port):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            bind_exclusive(self.sock, ("127.0.0.1", port))
            self.sock.listen(16)
            self.sock.setblocking(False)
        except OSError:
            self.sock.close()
            raise
        self.port = self.sock.getsockname()[1]
        self.redirect_uri = callback_uri(self.port)

    def wait(self, state, deadline):
        """The parameters of the first ``GET /callback`` with ``state`` (with a code, an error, or neither), or
        None at ``deadline``; any other request gets an error page."""
        selector = selectors.DefaultSelector()
        selector.register(self.sock, selectors.EVENT_READ)
        pending = collections.OrderedDict()   # connection -> [request bytes so far, when it expires]
        try:
            while True:
                now = time.monotonic()
                for conn in [c for c, (_, expires) in pending.items() if expires <= now]:
                    self._drop(selector, pending, conn)
                if now >= deadline:
                    return None
                wake = min([deadline] + [expires for _, expires in pending.values()])
                for key, _ in selector.select(wake - now):
                    if key.fileobj is self.sock:   # its read timeout runs from now, not from before select
                        self._accept(selector, pending, time.monotonic())
                        continue
                    answer = self._read(key.fileobj, pending[key.fileobj], state)
                    if answer is not False:
                        self._drop(selector, pending, key.fileobj)
                    if answer:
                        return answer
        finally:
            for conn in list(pending):
                self._drop(selector, pending, conn)
            selector.close()

    def _accept(self, selector, pending, now):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:   # none waiting, out of descriptors, or the connection was reset: the others go on
                return
            conn.setblocking(False)
            if len(pending) >= OAUTH_CALLBACK_MAX_CONNECTIONS:   # a flood: the oldest goes, not the newest
                self._drop(selector, pending, next(iter(pending)))
            pending[conn] = [b"", now + OAUTH_CALLBACK_READ_TIMEOUT]
            selector.register(conn, selectors.EVENT_READ)

    @staticmethod
    def _drop(selector, pending, conn):
        pending.pop(conn, None)
        selector.unregister(conn)
        conn.close()

    def _read(self, conn, entry, state):
        """False while the request head of ``conn`` is incomplete, else (the page sent) the parameters, or None."""
        try:
            data = conn.recv(8192)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            return None
        entry[0] += data
        head = entry[0]
        if data and b"\r\n\r\n" not in head and b"\n\n" not in head:
            if len(head) <= OAUTH_CALLBACK_MAX_REQUEST:
                return False
            return self._page(conn, 431, "The request is too large.")
        line = head.split(b"\n", 1)[0].decode("latin-1").split()
        if len(line) != 3 or not line[2].startswith("HTTP/"):
            return self._page(conn, 400, "Not an HTTP request.")
        if line[0] != "GET":
            return self._page(conn, 405, "Only GET is answered here.")
        return self._callback(conn, line[1], state)

    def _callback(self, conn, target, state):
        from urllib.parse import parse_qsl, urlsplit
        parts = urlsplit(target)
        if parts.path != "/callback":
            return self._page(conn, 404, "Not found.")
        params = dict(parse_qsl(parts.query, keep_blank_values=True))
        if params.get("state") != state:
            log.warning("ignored a request to the login callback whose state is not this login's (an old tab, "
                        "or another page); still waiting for the login")
            return self._page(conn, 400, "This is not the login ocx-proxy is waiting for (an old tab?). "
                                         "Finish the login in the newest tab.")
        if params.get("error"):
            self._page(conn, 200, "Login failed: " + params["error"])
            return params
        if not params.get("code"):
            # This login's state: the authorization server's answer (or the user's edit of it), and one that
            # can never be redeemed.  Waiting on would only end at --oauth-timeout; the login ends here.
            self._page(conn, 400, "The authorization response carries neither a code nor an error: "
                                  "the login has ended.")
            return params
        self._page(conn, 200, "ocx-proxy received the authorization.")
        return params

    @staticmethod
    def _page(conn, status, text):
        """Send a small HTML page (best effort: it fits the socket buffer) and end the exchange."""
        import html
        from http.client import responses
        body = OAUTH_LANDING_PAGE % html.escape(text).encode("utf-8")
        head = ("HTTP/1.1 %d %s\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: %d\r\n"
                "Cache-Control: no-store\r\nConnection: close\r\n\r\n" % (status, responses.get(status, ""), len(body)))
        try:
            conn.send(head.encode("ascii") + body)
        except OSError:
            pass
        return None

    @classmethod
    def on_first_free(cls, ports):
        """A listener on the first of ``ports`` that is free, else None."""
        for port in ports:
            try:
                return cls(port)
            except OSError:
                pass
        return None

    def close(self):
        self.sock.close()


# ---------------------------------------------------------------------------
# Remote transports: what every remote transport shares (sender, workers, exchanges)
# ---------------------------------------------------------------------------

ACCEPT_BOTH = "application/json, text/event-stream"
CLOSE_GRACE = 1.5          # seconds close_input waits for in-flight exchanges
STREAM_END_GRACE = 0.05    # seconds an answered POST's event stream has to end to keep its connection
DELETE_TIMEOUT = 2.0       # seconds for the DELETE that ends a session
# auto: answers to the initialize POST that mean "legacy SSE", unless the body is a JSON-RPC error (a refusal)
FALLBACK_STATUSES = (400, 404, 405)
# 2026-07-28: the requests whose Mcp-Name header mirrors a parameter, and which one
NAMED_METHODS = {"tools/call": "name", "resources/read": "uri", "prompts/get": "name"}
# JSON Schema keywords that hold data, not schemas: an x-mcp-header in them annotates nothing
SCHEMA_DATA_KEYWORDS = frozenset(["const", "default", "enum", "examples"])
SESSION_ID_RE = re.compile(r"^[\x21-\x7e]+\Z")
MAX_ENDPOINT_BYTES = 8192  # a legacy endpoint event holds one URL
# What reading an SSE stream came to (RemoteUpstream._pump: the first four).
STREAM_DONE = "done"                # the caller's condition holds
STREAM_EOF = "eof"                  # the server closed the stream
STREAM_TIMEOUT = "timeout"          # the deadline passed
STREAM_DROPPED = "dropped"          # the connection broke, or we are stopping
STREAM_PROGRESSED = "progressed"    # a stream ended after it worked: open it again at once
STREAM_INVALID = "invalid"          # bad data: the exchange has already failed
STREAM_FAILED = "failed"            # no stream, or nothing on it: retry after a backoff
STREAM_REFUSED = "refused"          # do not retry: a permanent refusal, no GET stream wanted, or a newer one took over
STREAM_FATAL = "fatal"              # the legacy endpoint event is unusable


class InvalidParams(ValueError):
    """A client request whose params break its method's schema: answered with -32602, never sent."""


def param_headers(tool):
    """The ``Mcp-Param-*`` headers a tool's ``x-mcp-header`` annotations ask for (2026-07-28): (a list of
    (name, path of property names), None), or (None, why the annotations are invalid).  An annotation is valid
    on a string, integer or boolean property reached from ``inputSchema`` through ``properties`` alone, its
    value a header token unique among the tool's, ignoring case."""
    found = []
    why = _annotations(tool.get("inputSchema"), (), True, found)
    names = [name.lower() for name, _ in found]
    if why is None and len(set(names)) < len(names):
        why = "two x-mcp-header annotations name the same header"
    return (None, why) if why else (found, None)


def _annotations(schema, path, reachable, found):
    """Collect the annotations under ``schema`` into ``found``; why one is invalid, or None."""
    if isinstance(schema, list):
        return next((why for why in (_annotations(item, path, False, found) for item in schema) if why), None)
    if not isinstance(schema, dict):
        return None
    if "x-mcp-header" in schema:
        name, kind = schema["x-mcp-header"], schema.get("type")
        if not reachable or not path:
            return "x-mcp-header outside the input schema's properties"
        if not isinstance(name, str) or not HEADER_NAME_RE.match(name):
            return "x-mcp-header %r of %r is not a header name" % (name, ".".join(path))
        if kind not in ("string", "integer", "boolean"):
            return "x-mcp-header on %r, whose type is %r, not string, integer or boolean" % (".".join(path), kind)
        found.append((name, path))
    for key, value in schema.items():
        if key == "properties" and isinstance(value, dict):
            why = next((why for why in (_annotations(sub, path + (name,), reachable, found)
                                        for name, sub in value.items()) if why), None)
        elif key not in SCHEMA_DATA_KEYWORDS:
            why = _annotations(value, path, False, found)
        else:
            why = None
        if why:
            return why
    return None


def param_value(arguments, path):
    """The text an argument at ``path`` gives its ``Mcp-Param-*`` header, or None when it has none."""
    value = arguments
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    if isinstance(value, (int, float, str)):  # a bool too: json.dumps(True) == "true"
        return value if isinstance(value, str) else json.dumps(value)
    return value.text if isinstance(value, LongNumber) else None


# A first login happens while the client starts: initialize (and a server/discover probe) waits this long for
# it, then we answer initialize ourselves and the client keeps the server (``_answer_for_the_login``).
OAUTH_INITIALIZE_WAIT = 5.0
# How long a call of the login tool waits for the login: under the 60 s clients give a tool call by default.
LOGIN_TOOL_WAIT = 45.0
LOGIN_TOOL = "ocx_proxy_login"
# Once logged in, the login tool answers after the client's new tool list (its model's next turn has the tools),
# or after this many seconds when the client does not ask for one.
LOGIN_RELIST_WAIT = 5.0
LOGIN_ELICITATION_ID = "ocx-proxy-login"


PLACEHOLDER_SERVER_NAME = "ocx-proxy"   # serverInfo.name of an answer we give in the server's place (never cached)


def pending_initialize_result(params, url):
    """Our answer to the client's initialize while the login to ``url`` is pending: the version it asked for
    when we serve it, tools that will change (notifications/tools/list_changed once logged in)."""
    requested = params.get("protocolVersion") if isinstance(params, dict) else None
    return {"protocolVersion": served_version(requested), "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": PLACEHOLDER_SERVER_NAME, "version": __version__,
                           "title": "ocx-proxy, waiting for a login to %s" % url},
            "instructions": "The MCP server %s needs a login; its tools are listed once it is done. Call the "
                            "tool %s to see how to log in." % (url, LOGIN_TOOL)}


def pending_answer(method, url):
    """The result we give a request ``method`` while the login to ``url`` is pending (tools/list: the login
    tool alone), or None: it needs the server."""
    if method == "ping":
        return {}
    if method != "tools/list":
        return None
    return {"tools": [{
        "name": LOGIN_TOOL, "inputSchema": {"type": "object", "properties": {}},
        "description": "The MCP server %s needs a login before its tools can be used. Call this tool: for a login "
                       "with a code it first answers with the page and the code to show the user; otherwise, and "
                       "when called again, it waits up to %d s for the user to log in, then says that the login "
                       "is done (the server's tools are listed then) or how to log in." % (url, LOGIN_TOOL_WAIT)}]}


class RemoteExchange:
    """One client message on its way to the server, and the request ids still waiting for answers.
    ``modern``: it names a 2026-07-28-era version in its ``_meta`` (no session, no resumption)."""

    def __init__(self, line, msg, swallow=False):
        self.line = line
        self.msg = msg
        items = msg if isinstance(msg, list) else [msg]
        self.outstanding = {id_key(item["id"]): item["id"] for item in items if message_kind(item) == "request"}
        self.has_requests = bool(self.outstanding)
        self.method = msg.get("method") if isinstance(msg, dict) else ("batch" if isinstance(msg, list) else None)
        params = msg.get("params") if isinstance(msg, dict) else None
        meta = params.get("_meta") if isinstance(params, dict) else None
        self.progress_key = progress_key(meta.get("progressToken")) if isinstance(meta, dict) else None
        self.version = request_version(params)
        self.modern = is_modern(self.version)
        self.swallow = swallow     # our own replayed handshake: its answer is not for the client
        self.queued = time.monotonic()
        self.waiting_since = self.queued  # start of the wait for the answer; progress moves it
        self.written = threading.Event()
        self.settled = threading.Event()  # every request in it answered or failed
        self.conn = None           # the connection its answer arrives on (Streamable HTTP): cancelling aborts it
        self.barrier_reason = None
        self.failure = None
        self.result = None         # the response message, for swallowed exchanges

    @classmethod
    def replayed(cls, line):
        """A line of the client's handshake that we say again (see ``Handshake``)."""
        return cls(line, parse_message(line, long_numbers=True), swallow=True)

    def answer_deadline(self, seconds):
        """When the wait for the answer ends (--sse-read-timeout after the last sign of life)."""
        return RemoteConfig.deadline(seconds, self.waiting_since)


def progress_key(token):
    """Dictionary key for a progress token (a string or an integer, like an id), else None."""
    return id_key(token) if isinstance(token, (str, int, LongNumber)) and not isinstance(token, bool) else None


# RemoteUpstream.state: where a remote transport is in its life.  It moves under ``lock``, on the loop thread but for
# REMOTE_FAILED (``report_exit``, from any thread).  The worker threads read it, and wait on the Event ``stopping``:
# set when the state leaves REMOTE_OPEN for any other than REMOTE_CLOSING, and in REMOTE_CLOSING when its grace ends.
REMOTE_OPEN = "open"                # client messages go to the server as they come
REMOTE_FAILED = "failed"            # it ended on its own (report_exit): the threads stop, on_exit is on its way
REMOTE_CLOSING = "closing"          # close_input: the exchanges in flight have CLOSE_GRACE, then the goodbye, the exit
REMOTE_HANDED_OVER = "handed over"  # auto gave what it held to the legacy transport: no exit of its own, ever
REMOTE_CLOSED = "closed"            # on_exit was called after close_input
REMOTE_EXITED = "exited"            # on_exit was called after it failed
# What moves it (RemoteUpstream._move): {event: {state it is in: state it goes to}}; in any other state it stays.
REMOTE_MOVES = {
    "report_exit": {REMOTE_OPEN: REMOTE_FAILED},
    "close_input": {REMOTE_OPEN: REMOTE_CLOSING, REMOTE_FAILED: REMOTE_CLOSING},
    "exit": {REMOTE_OPEN: REMOTE_EXITED, REMOTE_FAILED: REMOTE_EXITED, REMOTE_CLOSING: REMOTE_CLOSED},
    "hand_over": dict.fromkeys((REMOTE_OPEN, REMOTE_FAILED, REMOTE_CLOSING), REMOTE_HANDED_OVER),
}


class RemoteUpstream(Upstream):
    """Shared machinery of the remote transports: ``send()`` (loop thread) queues each client message; a
    sender thread dispatches them in client order.  A request gets a worker thread of its own, so a long call
    never delays others; notifications and responses go after every earlier request has been written.  What
    the worker threads learn goes to the loop thread (``loop.post``).  ``state``: one of REMOTE_OPEN...
    REMOTE_EXITED."""

    hands_over = True  # auto mode may hand the queued messages to another transport

    def __init__(self, loop, config, on_line, on_exit):
        import queue

        Upstream.__init__(self, loop, on_line, on_exit)
        self.config = config
        self.pool = HttpPool(config)
        self.lock = threading.RLock()
        self.inflight = {}
        self.outbox = queue.Queue()
        self.queued = 0     # messages put in the outbox and not yet dispatched by the sender
        self.earlier = []   # written events of the requests dispatched since the last notification
        self.barrier = SendBarrier()
        self.state = REMOTE_OPEN
        self.stopping = threading.Event()  # the worker threads stop (see REMOTE_OPEN)
        self.flowing = threading.Event()  # cleared while the client is not reading (pause_reading)
        self.flowing.set()
        self.replays = 0
        self.challenge = ""  # the WWW-Authenticate of the last 401 or 403 (see http)
        self.sender = None
        self.target = config.parts   # the URL requests go to (moves with same-origin redirects)

    @property
    def exited(self):
        return self.state in (REMOTE_CLOSED, REMOTE_EXITED)

    @property
    def closing(self):
        """The client closed our input (close_input): what is in flight still goes on until the goodbye."""
        return self.state in (REMOTE_CLOSING, REMOTE_CLOSED)

    def _move(self, event):
        """The state moves as REMOTE_MOVES says for ``event``: False when it stays."""
        with self.lock:
            state = REMOTE_MOVES[event].get(self.state)
            if state is None:
                return False
            self.state = state
            return True

    # -- loop thread -------------------------------------------------------

    def start(self):
        self.sender = self.spawn("ocx-http-sender", self._sender_loop, dedicated=True)

    def send(self, data):
        if self.state not in (REMOTE_OPEN, REMOTE_FAILED):
            return
        for raw in data.split(b"\n"):
            line = raw.rstrip(b"\r")
            if not line.strip():
                continue
            try:
                msg = parse_message(line, long_numbers=True)
            except ValueError:
                msg = None
            if (isinstance(msg, dict) and msg.get("method") == "notifications/cancelled"
                    and isinstance(msg.get("params"), dict) and self._cancel(msg["params"])):
                continue
            if self._answered_during_login(line, msg):
                continue
            exchange = RemoteExchange(line, msg)
            if not self._dispatch_now(exchange):
                with self.lock:
                    self.queued += 1
                self.outbox.put(exchange)

    def _answered_during_login(self, line, msg):
        """Hook (loop thread): True when a client message is ours to handle while a first login is pending."""
        return False

    def _dispatch_now(self, exchange):
        """Start a request's worker from the loop thread when nothing waits before it; False: queue it.
        initialize always goes through the sender: it may hold the barrier, and the sender must then wait at the
        barrier, not inside the outbox with the next message in hand (auto hands the outbox over)."""
        with self.lock:
            if (self.queued or not exchange.has_requests or exchange.method == "initialize" or self.barrier.holds
                    or self.stopping.is_set() or self.sender is None):
                return False
            self._track(exchange)
        self._start_request(exchange)
        return True

    def _cancel(self, params):
        """The client gave up on a request: stop waiting for it.  True when the notification is not
        to be sent on: for a 2026-07-28-era request, closing its response stream is the cancellation."""
        key = id_key(params.get("requestId"))
        with self.lock:
            exchange = self.inflight.pop(key, None)
            if exchange is None:
                return is_modern(request_version(params))
            exchange.outstanding.pop(key, None)
            done = not exchange.outstanding
        if done:
            exchange.settled.set()
            if exchange.conn is not None:
                self.pool.abort(exchange.conn)
        return exchange.modern

    def close_input(self):
        if not self._move("close_input"):
            return
        self.outbox.put(None)
        self.spawn("ocx-http-close", self._close_thread)

    def _deliver(self, line, msg=None):
        if not self.exited:
            self.on_line(line, msg)

    def pause_reading(self):
        self.flowing.clear()

    def resume_reading(self):
        self.flowing.set()

    def _post_line(self, data, msg=None):
        """Worker threads: hand ``data`` (``msg``: what it parses to) to the loop, first waiting while
        the client is not reading: the server's writes then block in TCP (backpressure)."""
        while not self.flowing.wait(0.25):
            if self.stopping.is_set():
                return
        self.loop.post(self._deliver, data, msg)

    def _post_message(self, msg):
        self._post_line(encode_message(msg)[:-1], msg)

    def _exit_on_loop(self, description):
        if not self._move("exit"):
            return
        self._stop()
        self.on_exit(description)

    def _stop(self):
        self.stopping.set()
        self.barrier.release_all()
        self.pool.close_all()

    # -- any thread --------------------------------------------------------

    def spawn(self, name, target, *args, dedicated=False):
        """Run ``target(*args)`` on a reused worker thread, or on a returned ``dedicated`` thread; a bug there is
        logged, never a traceback."""
        def run():
            try:
                target(*args)
            except Exception as exc:
                self.note("error", "internal error in %s: %r" % (name, exc))
                self.thread_crashed(exc)

        if dedicated:
            thread = threading.Thread(target=run, name=name, daemon=True)
            thread.start()
            return thread
        WORKERS.run(run)

    def thread_crashed(self, exc):
        """Hook: a helper thread died of an unexpected exception."""

    def http(self, method, parts, headers, body=None, on_written=None, timeout=None, login_wait=OAUTH_REQUEST_WAIT):
        """One HTTP exchange, following same-origin 307/308 redirects (the main URL moves with them); a
        redirect to another origin is returned as is: our credentials never reach another host.  With OAuth,
        one 401 (or 403 insufficient_scope) is answered by ``OAuthClient.authorize`` and the request sent again
        (AuthorizationRequired, an OSError, when no token came within ``login_wait`` s; ``self.challenge``
        keeps the challenge).  Tokens are only looked up once a login happened: no cost for other servers."""
        from urllib.parse import urljoin, urlsplit

        oauth = self.config.oauth
        authorized = False
        for hop in range(5):
            token = oauth.access_token() if oauth is not None and oauth.tokens is not None else None
            sent = dict(headers, Authorization="Bearer " + token) if token else headers
            conn, resp = self.pool.exchange(method, parts, sent, body, on_written, timeout)
            challenge = resp.getheader("WWW-Authenticate") or ""
            if (oauth is not None and not authorized and (resp.status == 401 or (
                    resp.status == 403 and "insufficient_scope" in challenge))):
                self.pool.drain(conn, resp)
                self.challenge = challenge
                oauth.authorize(resp.status, challenge, token, login_wait)
                authorized = True
                continue
            if oauth is not None and resp.status < 300:
                oauth.step_ups = 0   # counts repeated 403s only
            location = resp.getheader("Location") if resp.status in (307, 308) else None
            if not location or hop == 4:
                return conn, resp
            target = urlsplit(urljoin(parts.geturl(), location))
            if origin_of(target) != origin_of(parts):
                return conn, resp
            self.pool.drain(conn, resp)
            if parts == self.target:
                self.target = target
                log.info("%s redirects to %s; that URL is used from now on (consider it for --url)" % (
                    redact_url(parts.geturl(), self.config.secrets), redact_url(target.geturl(), self.config.secrets)))
            parts = target

    def open_stream(self, headers):
        """GET an event stream: (conn, response, None); (None, response, why) for an answer that is not
        one (its body read); (None, None, why) when the request failed."""
        import http.client

        try:
            conn, resp = self.http("GET", self.target, headers)
        except (OSError, http.client.HTTPException) as exc:
            return None, None, describe_http_exception(exc, self.config)
        if resp.status == 200 and content_type(resp) == "text/event-stream":
            return conn, resp, None
        why = http_error_text(resp.status, resp.reason, self.pool.drain(conn, resp))
        if resp.status == 200:
            why += " (Content-Type %r, not an event stream)" % content_type(resp)
        return None, resp, why

    def report_exit(self, description):
        self._move("report_exit")
        self.stopping.set()
        self.loop.post(self._exit_on_loop, description)

    def note(self, level, message):
        """Log (secrets scrubbed) and remember warnings for the relay's exit message."""
        message = self.config.scrub(message)
        if LOG_LEVELS[level] >= LOG_LEVELS["warning"]:
            self.stderr_tail.append(message)
        log.log(level, message)

    def settle(self, exchange, failure=None):
        """Stop waiting for an exchange's answers (``failure``: why): the ids it still waited for."""
        with self.lock:
            ids = list(exchange.outstanding.values())
            for key in exchange.outstanding:
                if self.inflight.get(key) is exchange:
                    del self.inflight[key]
            exchange.outstanding.clear()
        exchange.failure = failure
        exchange.settled.set()
        return ids

    def fail_exchange(self, exchange, reason, status=None, code=UPSTREAM_ERROR):
        """The one place where an HTTP failure becomes JSON-RPC errors (``code``) for the waiting requests."""
        reason = self.config.scrub(reason)
        ids = self.settle(exchange, reason)
        if exchange.swallow:
            return
        if not ids:
            if exchange.has_requests:
                log.debug("%s: %s (already answered or cancelled)" % (exchange.method, reason))
            elif exchange.method and not self.stopping.is_set():
                self.note("warning", "could not deliver %s to the server: %s" % (exchange.method, reason))
            return
        self.note("warning", "%s failed: %s" % (exchange.method, reason))
        data = {"httpStatus": status} if status else None
        for msg_id in ids:
            self.loop.post(self._deliver, encode_message(error_response(msg_id, code, reason, data))[:-1])

    def fail_status(self, exchange, resp, body):
        """A non-2xx answer: the JSON-RPC error its ``body`` holds goes to the client intact, under the
        request's id; any other body fails the exchange with our error quoting it (``data.httpStatus``)."""
        found = jsonrpc_error(body, content_type(resp))
        if found is not None and exchange.outstanding:
            try:
                answers = [encode_message({"jsonrpc": "2.0", "id": msg_id, "error": found["error"]})
                           for msg_id in exchange.outstanding.values()]
            except (TypeError, ValueError):
                answers = []  # a LongNumber in it: we cannot write it under another id
            self.note("info", "%s: HTTP %d from upstream with JSON-RPC error %s; forwarded to the client"
                      % (exchange.method, resp.status, found["error"]["code"]))
            for answer in answers:
                self._emit(answer, exchange)
            if answers:
                return
        text = http_error_text(resp.status, resp.reason, body)
        if 300 <= resp.status < 400 and resp.getheader("Location"):
            text += " (redirect to %s; use that URL with --url)" % redact_url(resp.getheader("Location"))
        self.fail_exchange(exchange, text, resp.status)

    def _emit(self, data, exchange=None):
        """Hand one message (bytes of JSON, not blank) from the server to the relay, parsed; note answers."""
        data = bytes(data).strip()
        if b"\n" in data or b"\r" in data:
            # Multi-line SSE data or a pretty-printed body: outside strings, line breaks are whitespace.
            data = data.replace(b"\r", b" ").replace(b"\n", b" ")
        try:
            msg = parse_message(data, long_numbers=True)
        except ValueError as exc:
            # The relay repairs such data or reports it; an answer still settles its exchange here.
            envelope = peek_envelope(data, partial=True)
            if envelope is None or not envelope.has_valid_id or envelope.has_method:
                return self._post_line(data)
            msg = error_response(envelope.id, INTERNAL_ERROR, "the server's answer is not JSON (%s)" % exc)
            parsed = None
        else:
            parsed = msg
        forward = True
        for item in (msg if isinstance(msg, list) else [msg]):
            if isinstance(item, dict) and item.get("method") == "notifications/progress":
                self._note_progress(item.get("params"))
            if message_kind(item) != "response":
                continue
            key = id_key(item.get("id"))
            with self.lock:
                owner = exchange if exchange is not None and key in exchange.outstanding else self.inflight.get(key)
                if owner is not None:
                    owner.outstanding.pop(key, None)
                    if self.inflight.get(key) is owner:
                        del self.inflight[key]
            if owner is not None:
                self._note_answer(owner, item)
                if not owner.outstanding:
                    owner.settled.set()  # after _note_answer: a waiter finds what it recorded
                if owner.swallow:
                    forward = False
        if forward:
            self._post_line(data, parsed)

    def _note_progress(self, params):
        """A progress notification restarts the wait of the request whose token it carries."""
        key = progress_key(params.get("progressToken")) if isinstance(params, dict) else None
        if key is None:
            return
        now = time.monotonic()
        with self.lock:
            for exchange in self.inflight.values():
                if exchange.progress_key == key:
                    exchange.waiting_since = now

    def _note_answer(self, exchange, msg):
        """Hook: a response for ``exchange`` arrived (before it is forwarded)."""
        if exchange.swallow:
            exchange.result = msg

    def _on_event(self, event, exchange=None):
        if event.event != "message":
            log.debug("ignored SSE event %r" % event.event)
            return
        if exchange is not None and exchange.modern:
            # a 2026-07-28 response stream is the request's own: whatever comes on it is about it
            exchange.waiting_since = time.monotonic()
        if event.data.strip():
            self._emit(event.data, exchange)

    def _pump(self, conn, resp, parser, on_event, done, deadline):
        """Read SSE from ``resp`` until ``done()``, EOF, an error or ``deadline()`` (asked before every read: no
        trickle of bytes keeps a stream alive past it): (STREAM_DONE, _EOF, _TIMEOUT or _DROPPED, whether any
        event arrived); UpstreamDataError once the events before the fault are handled."""
        got = False
        while True:
            if self.stopping.is_set() and not self.closing:
                return STREAM_DROPPED, got
            conn.deadline = deadline()
            try:
                chunk = resp.read1(READ_CHUNK)
            except socket.timeout:
                return STREAM_TIMEOUT, got
            except Exception as exc:  # OSError, http.client.IncompleteRead, ValueError on a closed file
                error = chunk_size_error(resp, exc)
                if error is not None:
                    raise error
                log.debug("SSE stream ended: %r" % exc)
                return STREAM_DROPPED, got
            error = chunk_size_error(resp)
            if error is not None:
                raise error
            if not chunk:
                return STREAM_EOF, got
            for event in parser.feed(chunk):
                got = True
                on_event(event)
            if done():
                return STREAM_DONE, got
            if parser.error:
                raise UpstreamDataError(parser.error)

    def replay_handshake(self):
        """Say the client's handshake again (the answers are ours), the barrier held: None, or why it failed."""
        self.replays += 1
        replay = RemoteExchange.replayed(self.handshake.replay("ocx-proxy-reinit-%d" % self.replays))
        with self.lock:
            self.inflight.update(dict.fromkeys(replay.outstanding, replay))
        self.post_exchange(replay)
        self.await_answer(replay, self.config.timeout or 60, "--timeout")  # legacy SSE: it comes on the stream
        why = replay.failure or Handshake.refusal(replay.result)
        if why is None and self.handshake.initialized_line is not None:
            self.post_exchange(RemoteExchange.replayed(self.handshake.initialized_line))
        return why

    def await_answer(self, exchange, seconds, option):
        """Wait for an exchange's answers: at most ``seconds`` without one or a progress notification for it."""
        exchange.waiting_since = time.monotonic()
        while exchange.outstanding and not self.stopping.is_set():
            deadline = exchange.answer_deadline(seconds)
            left = 1.0 if deadline is None else deadline - time.monotonic()
            if left <= 0:
                return self.fail_exchange(exchange, "upstream sent neither the answer nor progress for %g s "
                                          "(%s)" % (seconds, option))
            exchange.settled.wait(min(left, 1.0))

    def silence_deadline(self):
        """Deadline for a stream that only has to stay alive: --sse-read-timeout from now."""
        return self.config.deadline(self.config.sse_read_timeout)

    # -- sender thread -----------------------------------------------------

    def _sender_loop(self):
        while True:
            if self.hands_over:
                self.barrier.wait(self.stopping)  # keep messages in the outbox for a hand-over
            exchange = self.outbox.get()
            if exchange is None or self.state == REMOTE_HANDED_OVER:
                return
            try:
                self._send_queued(exchange)
            finally:
                with self.lock:
                    self.queued -= 1

    def _send_queued(self, exchange):
        # the barrier may have closed while we waited for a message
        if not self.barrier.wait(self.stopping, self.send_deadline(exchange)):
            self.fail_exchange(exchange, self.not_ready_text())
        elif self.stopping.is_set() and not self.closing:
            self.fail_exchange(exchange, "the connection to the server is closed")
        elif exchange.has_requests:
            with self.lock:
                self._track(exchange)
            self._start_request(exchange)
        else:
            with self.lock:
                earlier, self.earlier = self.earlier, []
            deadline = time.monotonic() + (self.config.timeout or 60)
            for event in earlier:
                event.wait(max(0.0, deadline - time.monotonic()))
            self._worker(exchange)

    def _track(self, exchange):
        """Note a request being dispatched (``self.lock`` held): in flight, written before the next notification."""
        for key in exchange.outstanding:
            self.inflight[key] = exchange
        self.earlier = [event for event in self.earlier if not event.is_set()]
        self.earlier.append(exchange.written)

    def _start_request(self, exchange):
        try:
            self._before_request(exchange)
            self.spawn("ocx-http-post", self._worker, exchange)
        except Exception as exc:
            self.note("error", "internal error while sending %s: %r" % (exchange.method, exc))
            self.fail_exchange(exchange, "ocx-proxy internal error: %r" % exc)

    def _before_request(self, exchange):
        """Hook run before a request's worker starts: it may hold the barrier for what follows."""

    def send_deadline(self, exchange):
        """Hook: how long ``exchange`` may wait for the barrier (None: barrier holds end by themselves); a transport
        that sets one says in ``not_ready_text()`` why a message that waited past it was not sent."""
        return None

    def _worker(self, exchange):
        try:
            self.post_exchange(exchange)
        except Exception as exc:  # never leave a request hanging because of a bug
            self.note("error", "internal error in %s: %r" % (exchange.method, exc))
            self.fail_exchange(exchange, "ocx-proxy internal error: %r" % exc)
        finally:
            exchange.written.set()
            if exchange.barrier_reason:
                self.barrier.release(exchange.barrier_reason)

    def post_exchange(self, exchange):
        raise NotImplementedError

    def _close_thread(self):
        deadline = time.monotonic() + CLOSE_GRACE
        if self.sender is not None:
            self.sender.join(CLOSE_GRACE)
        while time.monotonic() < deadline:
            with self.lock:
                if not self.inflight:
                    break
            time.sleep(0.02)
        self.stopping.set()
        self.barrier.release_all()
        try:
            self._say_goodbye()
        except Exception as exc:
            log.debug("goodbye failed: %r" % exc)
        self.pool.close_all()
        self.report_exit("closed the connection to %s" % self.config.display_url)

    def _say_goodbye(self):
        """Hook: end the session on the server (Streamable HTTP sends DELETE)."""


# ---------------------------------------------------------------------------
# Streamable HTTP: one POST per message, both eras (2025 sessions, stateless 2026-07-28)
# ---------------------------------------------------------------------------

class StreamableHttpUpstream(RemoteUpstream):
    """MCP Streamable HTTP (2025-03-26 and later): one POST per message, plus a GET stream.  Each message
    goes in its own era (``RemoteExchange``): a legacy one in the session the client's initialize opened (GET
    stream, resumption, DELETE, a new session after a 404); a 2026-07-28 one with no session, its version,
    method and name mirrored in headers."""

    def __init__(self, loop, config, on_line, on_exit, fallback=None):
        RemoteUpstream.__init__(self, loop, config, on_line, on_exit)
        self.fallback = fallback           # auto mode: called on the loop thread with (lines, status, closing)
        self.session_id = None
        self.protocol_version = None
        self.reinit_lock = threading.Lock()
        self.get_generation = 0
        self.get_conn = None
        self.announced = False
        self.tool_headers = {}             # tool name -> the Mcp-Param-* headers it asks for (param_headers)
        # A first login while the client starts (see _answer_for_the_login): set once the server has our session
        self.session_ready = None
        self.login_note = None             # how to finish the login, as the last attempt said
        self.login_failed = False          # the login ended without tokens: a call asks for another
        self.login_retry = threading.Event()
        self.login_announced = threading.Event()
        self.relisting = False             # the client's tools/list after our list_changed is on its way
        self.relisted = threading.Event()  # ... and its answer went to the client (or we waited for it once)
        self.can_open_urls = False         # the client takes URL-mode elicitation
        self.login_offered = False
        self.device_prompt = None          # a device login's (URI, code, completed URI or None) ...
        self.prompt_shown = None           # ... and the one the login tool last showed
        if config.oauth is not None:
            config.oauth.on_login_prompt = self._device_prompt
        self.rewrites = {"tools/list": (Rewrite("leave tools out of tools/list",
                                                lambda line, params: is_modern(request_version(params)),
                                                self._learn_tools),)}

    def request_headers(self, accept=ACCEPT_BOTH, body=True, session=True, last_event_id=None, more=()):
        extra = [("Accept", accept)]
        if body:
            extra.append(("Content-Type", "application/json"))
        if session:
            extra += [("Mcp-Session-Id", self.session_id), ("MCP-Protocol-Version", self.protocol_version)]
        if last_event_id:
            extra.append(("Last-Event-ID", last_event_id))
        return self.config.headers(extra + list(more))

    def modern_headers(self, exchange):
        """What a 2026-07-28 request mirrors in headers: version, method, the name (NAMED_METHODS), and
        the tools/call arguments its tool's x-mcp-header annotations name.  ValueError for a version or
        method no header can carry, InvalidParams for a name that is not a string."""
        for value in (exchange.version, exchange.method):
            if not isinstance(value, str) or not PLAIN_HEADER_VALUE_RE.match(value):
                raise ValueError("%r cannot be sent in an HTTP header" % (value,))
        params = exchange.msg["params"]
        extra = [("MCP-Protocol-Version", exchange.version), ("Mcp-Method", exchange.method)]
        key = NAMED_METHODS.get(exchange.method)
        name = params.get(key) if key else None
        if key and not isinstance(name, str):
            raise InvalidParams("%s needs params.%s, a string" % (exchange.method, key))
        if key:
            extra.append(("Mcp-Name", header_value(name)))
        arguments = params.get("arguments")
        if exchange.method == "tools/call" and isinstance(arguments, dict):
            for header, path in self.tool_headers.get(name, ()):
                value = param_value(arguments, path)
                if value is not None:
                    extra.append(("Mcp-Param-" + header, header_value(value)))
        return extra

    def _before_request(self, exchange):
        if exchange.method == "initialize" and not exchange.swallow:
            # Nothing else goes out until we know the session id and protocol version.
            exchange.barrier_reason = "initialize"
            self.barrier.hold("initialize")

    def post_exchange(self, exchange, retried=False):
        """POST one message and relay its answer (``retried``: the POST again, in a new session)."""
        first_init = exchange.method == "initialize" and not exchange.modern
        session_used = None if first_init or exchange.modern else self.session_id
        posted = self._post(exchange, session=not (first_init or exchange.modern))
        if posted is None:
            return
        conn, resp = posted
        if not 200 <= resp.status < 300:
            body = self.pool.drain(conn, resp)
            if first_init and self._try_fallback(exchange, resp, body):
                return
            if resp.status == 404 and session_used is not None and not retried and not exchange.swallow:
                if self.reinitialize(session_used):  # the session expired: POST it again in a new one
                    return self.post_exchange(exchange, retried=True)
                return self.fail_exchange(exchange, "HTTP 404 from upstream: the session expired and "
                                          "re-initializing failed", 404)
            return self.fail_status(exchange, resp, body)
        if first_init:
            session = resp.getheader("Mcp-Session-Id")
            if session is not None and not SESSION_ID_RE.match(session):
                self.note("warning", "ignored an invalid Mcp-Session-Id from the server")
                session = None
            self.session_id = session
        if content_type(resp) == "text/event-stream":
            self._read_post_stream(exchange, conn, resp)
        elif not self._read_json_answer(exchange, conn, resp):
            return
        if exchange.outstanding:
            self.fail_exchange(exchange, "upstream ended the HTTP response without answering (HTTP %d)"
                               % resp.status)
        if exchange.method == "notifications/initialized" and not exchange.swallow:
            self.start_get_stream()

    def _post(self, exchange, session):
        """POST and read the answer's headers: (conn, response), or None after failing the exchange."""
        import http.client

        try:
            headers = self.request_headers(session=session, more=self.modern_headers(exchange) if exchange.modern
                                           else ())
        except InvalidParams as exc:
            return self.fail_exchange(exchange, "Invalid params: %s" % exc, code=INVALID_PARAMS)
        except ValueError as exc:
            return self.fail_exchange(exchange, "not sent: %s" % exc)
        if log.enabled("debug"):
            log.debug("POST %s %s (%s)" % (self.config.display_url, exchange.method,
                                           self.config.describe_headers(headers)))
        first = exchange.method in ("initialize", "server/discover") and not exchange.swallow and (
            self.session_ready is None)
        try:
            conn, resp = self.http("POST", self.target, headers, exchange.line, on_written=exchange.written.set,
                                   login_wait=OAUTH_INITIALIZE_WAIT if first else OAUTH_REQUEST_WAIT)
        except AuthorizationRequired as exc:
            if not (first and self._answer_for_the_login(exchange, str(exc))):
                self.fail_exchange(exchange, str(exc), 401)
            return None
        except (OSError, http.client.HTTPException) as exc:
            what = "no answer from %s" if exchange.written.is_set() else "could not reach %s"
            return self.fail_exchange(exchange, (what % self.config.display_url) + ": "
                                      + describe_http_exception(exc, self.config))
        exchange.conn = conn
        return conn, resp

    # -- a first login while the client starts ---------------------------------------------------------

    def _answer_for_the_login(self, exchange, why):
        """The client's initialize met a login a person still has to finish: answer it ourselves (the client
        keeps the server), list only the login tool, hold the calls that need the server, and replay the
        handshake once logged in.  False for any other request, and when no login is under way (its error is
        the answer) or --oauth-timeout ends it within our wait anyway."""
        oauth = self.config.oauth
        if (exchange.method != "initialize" or exchange.modern
                or oauth.login_thread is None or not oauth.login_thread.is_alive()
                or oauth.settings.timeout <= OAUTH_INITIALIZE_WAIT):
            return False
        params = exchange.msg.get("params")
        capabilities = params.get("capabilities") if isinstance(params, dict) else None
        elicitation = capabilities.get("elicitation") if isinstance(capabilities, dict) else None
        self.can_open_urls = isinstance(elicitation, dict) and isinstance(elicitation.get("url"), dict)
        self.login_note = why
        self.session_ready = threading.Event()
        self.note("warning", "ocx-proxy answered the client's initialize itself; the server's tools follow the "
                             "login (%s)" % why)
        self.settle(exchange)   # answered, but not by the server: nothing is learnt from it (_note_answer)
        self._post_message({"jsonrpc": "2.0", "id": exchange.msg["id"],
                            "result": pending_initialize_result(params, self.config.display_url)})
        self.spawn("ocx-first-login", self._first_login, dedicated=True)
        return True

    def _answered_during_login(self, line, msg):
        ready = self.session_ready
        if ready is None or not isinstance(msg, dict):
            return False
        kind = message_kind(msg)
        if kind == "response":
            return msg.get("id") == LOGIN_ELICITATION_ID
        if kind == "request" and called_tool(msg) == LOGIN_TOOL:
            self.spawn("ocx-login-tool", self._login_tool_call, msg["id"])
            return True
        if ready.is_set():
            if self.relisting or kind != "request" or msg.get("method") != "tools/list":
                return False
            self.relisting = True
            self.spawn("ocx-relist", self._relist, RemoteExchange(line, msg))
            return True
        if kind != "request":
            return True   # initialized is replayed from the handshake; the rest concerns no server yet
        result = pending_answer(msg.get("method"), self.config.display_url)
        if result is None:
            self.spawn("ocx-after-login", self._after_login, RemoteExchange(line, msg))
        else:
            answer = {"jsonrpc": "2.0", "id": msg["id"], "result": result}
            self._deliver(encode_message(answer)[:-1], answer)
        return True

    def _await_session(self, seconds, until=lambda: False):
        """Wait up to ``seconds`` for the session, a failed login started again: True once ready, False when
        that login failed too, ``until()`` is true or the time is up."""
        if self.login_failed:
            self.login_retry.set()
        deadline = time.monotonic() + seconds
        while not self.session_ready.wait(0.2):
            if time.monotonic() > deadline or (self.login_failed and not self.login_retry.is_set()) or until():
                return False
        return True

    def _after_login(self, exchange):
        """A request that needs the server: sent once logged in, else (after OAUTH_REQUEST_WAIT) an error."""
        if not self._await_session(OAUTH_REQUEST_WAIT):
            return self.fail_exchange(exchange, self.login_note, 401)
        with self.lock:
            self._track(exchange)
        self._start_request(exchange)

    def _relist(self, exchange):
        """The client's first tools/list once logged in: sent, and its answer relayed, in this thread."""
        with self.lock:
            self._track(exchange)
        self._worker(exchange)
        self.relisted.set()

    def _device_prompt(self, uri, user_code, complete):
        """OAuthClient.on_login_prompt: the code the login tool shows."""
        self.device_prompt = (uri, user_code, complete)

    def _new_code(self):
        """A device login's prompt that no call of the login tool showed yet, or None."""
        return self.device_prompt if self.device_prompt != self.prompt_shown else None

    def _login_tool_call(self, msg_id):
        """The login tool: a device login's code as soon as no call showed it yet; else how to log in, after
        waiting up to LOGIN_TOOL_WAIT s for the login (then LOGIN_RELIST_WAIT s for the client's new tool list)."""
        logged_in = self._await_session(LOGIN_TOOL_WAIT, self._new_code)
        prompt = None if logged_in else self._new_code()
        if logged_in:
            self.login_announced.wait(LOGIN_TOOL_WAIT)
            if not self.relisted.wait(LOGIN_RELIST_WAIT):
                self.relisted.set()   # a client that has not listed again by now will not: later calls wait no more
            text = "Logged in to %s; its tools are listed now." % self.config.display_url
        elif prompt:
            self.prompt_shown = prompt
            uri, code, complete = prompt
            text = ("Not logged in yet. Ask the user to open %s and enter the code %s%s to log in to %s, then call "
                    "this tool again: it waits for the login then." % (
                        uri, code, " (or to open %s, the code filled in)" % complete if complete else "",
                        self.config.display_url))
        else:
            text = "Not logged in yet: %s. Call %s again to wait for the login." % (self.login_note, LOGIN_TOOL)
        # A code for the person is not a failure: a model told "error" may retry at once instead of showing it.
        failed = not self.session_ready.is_set() and not prompt
        result = {"content": [{"type": "text", "text": text}], "isError": failed}
        self._post_message({"jsonrpc": "2.0", "id": msg_id, "result": result})

    def _first_login(self):
        """Wait for the login (a failed one is tried again when a call asks), then replay the handshake."""
        oauth = self.config.oauth
        while not self.stopping.is_set():
            self._offer_login_link(oauth.login_url)
            thread = oauth.login_thread
            if (thread is None or not thread.is_alive()) and oauth.access_token() is None:
                if not self.login_failed and oauth.login_error:
                    self.login_note = ("the login failed (%s); the next call starts another, or run `python "
                                       "ocx_proxy.py auth login --url %s`"
                                       % (oauth.login_error, self.config.display_url))
                self.login_failed = True
                if not self.login_retry.wait(1.0):
                    continue
            self.login_failed = False
            self.login_retry.clear()
            try:
                oauth.authorize(401, self.challenge, None, 1.0)
                break
            except AuthorizationRequired as exc:
                self.login_note = str(exc)
        if self.stopping.is_set():
            return
        why = self.replay_handshake()
        if why:
            self.note("error", "after the login the server refused the client's initialize: %s" % why)
        else:
            self.note("info", "logged in; the client's session now reaches %s" % self.config.display_url)
            self.start_get_stream()
        self.session_ready.set()
        self._post_line(b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}')
        if self.login_offered:
            self._post_message({"jsonrpc": "2.0", "method": "notifications/elicitation/complete",
                                "params": {"elicitationId": LOGIN_ELICITATION_ID}})
        self.login_announced.set()

    def _offer_login_link(self, url):
        """Show the login link inside a client that takes URL-mode elicitation (2025-11-25), once."""
        if self.login_offered or not self.can_open_urls or not url or self.handshake.initialized_line is None:
            return
        self.login_offered = True
        code = self.config.oauth.user_code
        message = "Log in to %s to use its tools.%s" % (
            self.config.display_url, " Enter the code %s there." % code if code else "")
        self._post_message({"jsonrpc": "2.0", "id": LOGIN_ELICITATION_ID, "method": "elicitation/create",
                            "params": {"mode": "url", "elicitationId": LOGIN_ELICITATION_ID, "url": url,
                                       "message": message}})

    def _read_json_answer(self, exchange, conn, resp):
        """Relay a JSON answer (a notification's may be empty); False after failing the exchange."""
        import http.client

        try:
            body = read_body(resp, self.config.max_message_bytes)
        except UpstreamDataError as exc:
            failure, status = str(exc), resp.status
        except socket.timeout:
            failure, status = ("the answer from %s did not arrive in full within %g s (--timeout)"
                               % (self.config.display_url, self.config.timeout)), None
        except (OSError, http.client.HTTPException) as exc:
            failure, status = "the response from %s broke off: %s" % (
                self.config.display_url, describe_http_exception(exc, self.config)), None
        else:
            self.pool.release(conn, resp)
            kind = content_type(resp)
            if body.strip() and kind and "json" not in kind:
                self.fail_exchange(exchange, "unexpected Content-Type %r from upstream" % kind, resp.status)
                return False
            if body.strip():
                self._emit(body, exchange)
            return True
        self.pool.discard(conn)
        self.fail_exchange(exchange, failure, status)
        return False

    def _note_answer(self, exchange, msg):
        RemoteUpstream._note_answer(self, exchange, msg)
        if exchange.method == "initialize" and isinstance(msg.get("result"), dict):
            version = msg["result"].get("protocolVersion")
            self.protocol_version = version if isinstance(version, str) else None
            if not self.announced:
                self.announced = True
                log.info("connected to %s (Streamable HTTP, protocol %s, %s)" % (
                    self.config.display_url, self.protocol_version,
                    "with a session" if self.session_id else "no session"))

    def _learn_tools(self, msg, params):
        """A ``Rewrite``: note the x-mcp-header annotations of a 2026-07-28 tools/list page (the first
        page starts over) and leave out, with a warning, the tools whose annotations are invalid."""
        result = msg.get("result")
        tools = result.get("tools") if isinstance(result, dict) else None
        if not isinstance(tools, list):
            return False
        if params.get("cursor") is None:
            self.tool_headers = {}
        kept = []
        for tool in tools:
            name = tool.get("name") if isinstance(tool, dict) else None
            headers, why = param_headers(tool) if isinstance(tool, dict) else ([], None)
            if why:
                self.note("warning", "tools/list: left out the tool %r: %s" % (name, why))
                continue
            kept.append(tool)
            if headers and isinstance(name, str):
                self.tool_headers[name] = headers
        if len(kept) == len(tools):
            return False
        result["tools"] = kept
        return True

    def _read_post_stream(self, exchange, conn, resp):
        """Relay a POST's SSE answer event by event; resume it with GET + Last-Event-ID if it drops (a
        2026-07-28 request's cannot be).  The wait, resumptions included, ends --sse-read-timeout after
        the stream opened or the last progress; subscriptions/listen's stream need only stay alive."""
        exchange.waiting_since = time.monotonic()
        if exchange.modern and exchange.method == "subscriptions/listen":
            deadline = self.silence_deadline
        else:
            deadline = lambda: exchange.answer_deadline(self.config.sse_read_timeout)  # noqa: E731
        parser = SseParser(limit=self.config.max_message_bytes)
        outcome = self._pump_answer(exchange, conn, resp, parser, deadline)
        backoff = Backoff()
        while exchange.outstanding and not self.stopping.is_set():
            if outcome == STREAM_TIMEOUT:
                return self.fail_exchange(exchange, "upstream sent neither the answer nor progress for %g s "
                                          "(--sse-read-timeout)" % self.config.sse_read_timeout)
            if outcome == STREAM_INVALID:
                return
            if exchange.modern or not parser.last_id:
                why = ("a %s request cannot be resumed" % exchange.version if exchange.modern
                       else "no event id to resume from")
                return self.fail_exchange(exchange, "upstream closed the response stream before answering (%s)" % why)
            if outcome == STREAM_FAILED and backoff.note_failure():
                return self.fail_exchange(exchange, "could not resume the response stream after %d attempts"
                                          % RECONNECT_ATTEMPTS)
            if self.stopping.wait(backoff.wait(parser.retry, deadline())):
                break
            outcome = self._resume_post_stream(exchange, parser, deadline)
            if outcome == STREAM_PROGRESSED:
                backoff.reset()

    def _resume_post_stream(self, exchange, parser, deadline):
        """GET the rest of an answer stream from its last event id: a ``_pump_answer`` outcome, or
        STREAM_FAILED for a resume that brought no event."""
        log.debug("resuming the response stream of %s from event %r" % (exchange.method, parser.last_id))
        headers = self.request_headers(accept="text/event-stream", body=False, last_event_id=parser.last_id)
        conn, resp, why = self.open_stream(headers)
        if resp is None:
            log.debug("resume failed: %s" % why)
            return STREAM_FAILED
        if conn is None:
            self.fail_exchange(exchange, "could not resume the response stream: " + why, resp.status)
            return STREAM_INVALID
        exchange.conn = conn
        parser.reset_stream()
        outcome = self._pump_answer(exchange, conn, resp, parser, deadline)
        return STREAM_FAILED if outcome in (STREAM_EOF, STREAM_DROPPED) else outcome

    def _pump_answer(self, exchange, conn, resp, parser, deadline):
        """One connection of an answer stream: the ``_pump`` outcome, STREAM_PROGRESSED for one that
        dropped after some event, or STREAM_INVALID after failing the exchange for bad data."""
        done = lambda: not exchange.outstanding  # noqa: E731
        try:
            outcome, got = self._pump(conn, resp, parser, lambda e: self._on_event(e, exchange), done, deadline)
        except UpstreamDataError as exc:
            self.pool.discard(conn)
            self.fail_exchange(exchange, str(exc))
            return STREAM_INVALID
        ended = outcome == STREAM_EOF or (outcome == STREAM_DONE and self._stream_ends(conn, resp))
        self.pool.release(conn, resp) if ended else self.pool.discard(conn)
        return STREAM_PROGRESSED if got and outcome in (STREAM_EOF, STREAM_DROPPED) else outcome

    @staticmethod
    def _stream_ends(conn, resp):
        """After the last answer on a POST's stream: True when the server ends it within STREAM_END_GRACE,
        so that its connection is kept for the next request."""
        conn.deadline = time.monotonic() + STREAM_END_GRACE
        try:
            return resp.read1(READ_CHUNK) == b""
        except Exception:  # as in _pump: a timeout, a broken connection, a bad chunk size
            return False

    def reinitialize(self, stale_session):
        """Start a new session after a 404: replay the client's initialize and initialized."""
        with self.reinit_lock:
            if self.session_id != stale_session:
                return True  # another thread already did it
            if self.handshake.initialize_line is None or self.stopping.is_set():
                return False
            self.barrier.hold("handshake")
            try:
                self.note("warning", "the server no longer knows our session (HTTP 404); re-initializing")
                why = self.replay_handshake()
                if why:
                    self.note("error", "re-initializing failed: %s" % why)
                    return False
                self.note("info", "new session established")
                self.start_get_stream()
                return True
            finally:
                self.barrier.release("handshake")

    def start_get_stream(self):
        """(Re)open the GET stream for messages the server starts on its own."""
        with self.lock:
            self.get_generation += 1
            generation = self.get_generation
            old, self.get_conn = self.get_conn, None
        if old is not None:
            self.pool.abort(old)
        self.spawn("ocx-http-get", self._get_stream_loop, generation)

    def _get_stream_loop(self, generation):
        parser = SseParser(limit=self.config.max_message_bytes)
        backoff = Backoff()
        current = lambda: generation == self.get_generation and not self.stopping.is_set()  # noqa: E731
        while current():
            outcome = self._get_stream_once(parser, current)
            if outcome == STREAM_REFUSED:
                return
            if outcome == STREAM_PROGRESSED:
                backoff.reset()
            elif backoff.note_failure():
                self.note("warning", "gave up on the GET stream after %d failed attempts; messages the "
                                     "server starts on its own will not arrive" % RECONNECT_ATTEMPTS)
                return
            if self.stopping.wait(backoff.wait(parser.retry)):
                return

    def _get_stream_once(self, parser, current):
        """One GET stream, read until it ends: STREAM_PROGRESSED, _FAILED or _REFUSED (the server wants none,
        the session expired, or a newer stream took over)."""
        headers = self.request_headers(accept="text/event-stream", body=False, last_event_id=parser.last_id)
        session_used = self.session_id
        conn, resp, why = self.open_stream(headers)
        if resp is None:
            log.debug("GET stream: %s" % why)
            return STREAM_FAILED
        if conn is None:
            if resp.status == 405:
                log.debug("the server offers no GET stream (HTTP 405)")
            elif resp.status == 404 and session_used is not None:
                log.debug("GET stream: session expired; it reopens after re-initializing")
            else:
                self.note("debug", "GET stream: " + why)
            return STREAM_REFUSED if permanent_error(resp.status) else STREAM_FAILED
        with self.lock:
            if not current():
                self.pool.discard(conn)
                return STREAM_REFUSED
            self.get_conn = conn
        parser.reset_stream()
        try:
            outcome, _ = self._pump(conn, resp, parser, self._on_event, lambda: not current(), self.silence_deadline)
            worked = True
        except UpstreamDataError as exc:
            outcome, worked = str(exc), False   # a server that does it again and again is given up on
            self.note("warning", "GET stream: %s; reconnecting" % exc)
        self.pool.discard(conn)
        log.debug("GET stream ended (%s)" % outcome)
        return STREAM_PROGRESSED if worked else STREAM_FAILED

    def _try_fallback(self, exchange, resp, body):
        """auto: when the initialize POST is refused as a legacy server refuses it (no JSON-RPC error
        in the ``body``), hand every queued message to the legacy transport; True if that happened."""
        if self.fallback is None or resp.status not in FALLBACK_STATUSES or exchange.swallow or self.announced:
            return False
        if jsonrpc_error(body, content_type(resp)) is not None:
            return False
        self.settle(exchange)
        exchange.barrier_reason = None  # keep the sender held until the hand-over is done
        self.loop.post(self._hand_over, exchange, resp.status)
        return True

    def _hand_over(self, exchange, status):
        import queue

        lines = [exchange.line]
        while True:
            try:
                item = self.outbox.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                lines.append(item.line)
        closing = self.closing
        self._move("hand_over")
        self.outbox.put(None)
        self._stop()
        self.fallback(lines, status, closing)

    def _say_goodbye(self):
        session = self.session_id
        if session is None:
            return
        headers = self.request_headers(body=False)
        try:
            conn, resp = self.http("DELETE", self.target, headers,
                                   timeout=min(self.config.timeout or DELETE_TIMEOUT, DELETE_TIMEOUT))
            body = read_limited(resp)
            self.pool.discard(conn)
        except Exception as exc:
            log.debug("DELETE of the session failed: %r" % exc)
            return
        if resp.status == 405:
            log.debug("the server does not let clients end sessions (HTTP 405)")
        elif not 200 <= resp.status < 300 and resp.status != 404:
            self.note("debug", "DELETE of the session: " + http_error_text(resp.status, resp.reason, body))


# ---------------------------------------------------------------------------
# Legacy SSE: the 2024-11-05 HTTP+SSE transport, auto, the remote factory
# ---------------------------------------------------------------------------

class SseUpstream(RemoteUpstream):
    """The 2024-11-05 HTTP+SSE transport: a GET event stream plus POSTs to its ``endpoint``.  If the stream
    drops, the requests waiting on it get JSON-RPC errors; we reconnect, take the new endpoint and replay the
    client's handshake before anything else is sent."""

    hands_over = False  # a message waits for the endpoint at the barrier, bounded by --timeout

    def __init__(self, loop, config, on_line, on_exit):
        RemoteUpstream.__init__(self, loop, config, on_line, on_exit)
        self.endpoint = None
        self.connected_once = False

    def start(self):
        self.barrier.hold("endpoint")
        RemoteUpstream.start(self)
        self.spawn("ocx-sse-stream", self._stream_loop)

    def thread_crashed(self, exc):
        if not self.stopping.is_set():
            self.report_exit("ocx-proxy internal error in the SSE transport: %r" % exc)

    def send_deadline(self, exchange):
        return self.config.deadline(self.config.timeout, exchange.queued)

    def not_ready_text(self):
        return ("not sent: the SSE stream from %s gave no endpoint event within %g s (--timeout)"
                % (self.config.display_url, self.config.timeout))

    def _stream_loop(self):
        backoff = Backoff()
        while not self.stopping.is_set():
            kind, text = self._stream_once()
            if self.stopping.is_set():
                return
            if kind == STREAM_FATAL:
                self.fatal = True
                self.note("error", text)
                self.report_exit(text)
                self.loop.post(self.loop.stop)
                return
            self.barrier.hold("endpoint")
            self.endpoint = None
            gave_up = False
            if kind == STREAM_DROPPED:
                backoff.reset()
                self.note("warning", "the SSE stream from %s dropped (%s); reconnecting"
                          % (self.config.display_url, text))
            else:
                gave_up = backoff.note_failure() or kind == STREAM_REFUSED
                self.note("warning", "could not open the SSE stream %s: %s" % (self.config.display_url, text))
            with self.lock:
                exchanges = list(dict.fromkeys(self.inflight.values()))  # a batch waits under several ids
            for exchange in exchanges:
                self.fail_exchange(exchange, "the SSE stream from the server dropped (%s); the request was "
                                             "abandoned" % text)
            if gave_up:
                self.report_exit("could not open the SSE stream %s: %s" % (self.config.display_url, text))
                return
            if self.stopping.wait(backoff.wait()):
                return

    def _stream_once(self):
        """One GET: (STREAM_DROPPED, why) after an endpoint came, else (STREAM_FAILED, _REFUSED or _FATAL, why)."""
        headers = self.config.headers([("Accept", "text/event-stream"), ("Cache-Control", "no-cache")])
        log.debug("GET %s (%s)" % (self.config.display_url, self.config.describe_headers(headers)))
        conn, resp, why = self.open_stream(headers)
        if resp is None:
            return STREAM_FAILED, why
        if conn is None:
            return (STREAM_REFUSED if permanent_error(resp.status) or resp.status == 200 else STREAM_FAILED), why
        parser = SseParser(limit=self.config.max_message_bytes)
        state = {"fatal": None}
        endpoint_deadline = conn.deadline  # --timeout after the GET started

        def deadline():
            # until the endpoint arrives the GET is one exchange; then the stream need only stay alive
            return endpoint_deadline if self.endpoint is None else self.silence_deadline()

        def on_event(event):
            if event.event == "endpoint":
                state["fatal"] = self._take_endpoint(event.data)
            elif event.event == "message" and self.endpoint is None:
                log.warning("ignored a message that arrived before the endpoint event")
            else:
                self._on_event(event)

        try:
            outcome, _ = self._pump(conn, resp, parser, on_event, lambda: state["fatal"] is not None, deadline)
        except UpstreamDataError as exc:
            outcome = str(exc)
        self.pool.discard(conn)
        if state["fatal"]:
            return STREAM_FATAL, state["fatal"]
        if self.endpoint is None:
            if outcome == STREAM_TIMEOUT:
                return STREAM_FAILED, "no endpoint event within %g s (--timeout)" % self.config.timeout
            return STREAM_FAILED, "no endpoint event (%s)" % outcome
        why = {STREAM_EOF: "closed by the server", STREAM_DROPPED: "connection lost",
               STREAM_TIMEOUT: "no data for %g s (--sse-read-timeout)" % self.config.sse_read_timeout}
        return STREAM_DROPPED, why.get(outcome, outcome)

    def _take_endpoint(self, data):
        from urllib.parse import urljoin, urlsplit

        if len(data) > MAX_ENDPOINT_BYTES:
            return "refusing the SSE endpoint: it is %d bytes long (a URL of at most %d is expected)" % (
                len(data), MAX_ENDPOINT_BYTES)
        target = urljoin(self.target.geturl(), data.decode("utf-8", "replace").strip())
        parts = urlsplit(target)
        if origin_of(parts) != origin_of(self.config.parts):
            return ("refusing the SSE endpoint %s: it is not on the same origin as %s (scheme, host and "
                    "port must match)" % (redact_url(target, self.config.secrets), self.config.display_url))
        self.endpoint = parts
        log.debug("SSE endpoint: %s" % redact_url(target, self.config.secrets))
        if not self.connected_once:
            log.info("connected to %s (legacy HTTP+SSE)" % self.config.display_url)
        elif self.handshake.initialize_line is not None:
            self.barrier.hold("handshake")  # nothing else goes out before it
            self.spawn("ocx-sse-replay", self._replay_after_reconnect)
        self.barrier.release("endpoint")
        self.connected_once = True
        return None

    def _replay_after_reconnect(self):
        try:
            why = self.replay_handshake()
            if why:
                self.note("error", "could not replay the client's initialize after reconnecting: %s" % why)
            else:
                self.note("info", "reconnected to %s and re-initialized" % self.config.display_url)
        finally:
            self.barrier.release("handshake")

    def post_exchange(self, exchange):
        """POST one message to the endpoint; its answer comes on the stream."""
        import http.client

        endpoint = self.endpoint
        if endpoint is None and not exchange.swallow:
            # the stream dropped just now: wait for the reconnect
            self.barrier.wait(self.stopping, self.send_deadline(exchange))
            endpoint = self.endpoint
        if endpoint is None:
            return self.fail_exchange(exchange, "the SSE stream from the server is down")
        headers = self.config.headers([("Content-Type", "application/json")])
        try:
            conn, resp = self.http("POST", endpoint, headers, exchange.line, on_written=exchange.written.set)
        except AuthorizationRequired as exc:
            return self.fail_exchange(exchange, str(exc), 401)
        except (OSError, http.client.HTTPException) as exc:
            return self.fail_exchange(exchange, "could not reach %s: %s" % (
                self.config.display_url, describe_http_exception(exc, self.config)))
        body = self.pool.drain(conn, resp)
        if not 200 <= resp.status < 300:
            self.fail_status(exchange, resp, body)
        elif not exchange.swallow:
            self.await_answer(exchange, self.config.sse_read_timeout, "--sse-read-timeout")


class AutoUpstream(Upstream):
    """``auto``: Streamable HTTP first; legacy HTTP+SSE when the initialize POST gets 400, 404 or 405
    without a JSON-RPC error in the body.  ``memory`` (shared across restarts) remembers the answer."""

    def __init__(self, loop, config, on_line, on_exit, memory):
        Upstream.__init__(self, loop, on_line, on_exit)
        self.config = config
        self.memory = memory
        if memory.get("transport") == "sse":
            self.inner = SseUpstream(loop, config, on_line, on_exit)
        else:
            self.inner = StreamableHttpUpstream(loop, config, on_line, on_exit, fallback=self._fall_back)
        self.stderr_tail = self.inner.stderr_tail
        self.rewrites = self.inner.rewrites

    # the inner transport owns these (Upstream.__init__ setting fatal changes nothing)
    exited = property(lambda self: self.inner.exited)
    fatal = property(lambda self: self.inner.fatal, lambda self, value: None)

    def start(self):
        self.inner.handshake = self.handshake
        self.inner.start()

    def send(self, data):
        self.inner.send(data)

    def close_input(self):
        self.inner.close_input()

    def pause_reading(self):
        self.inner.pause_reading()

    def resume_reading(self):
        self.inner.resume_reading()

    def _fall_back(self, lines, status, closing):
        log.info("%s answered HTTP %d to the Streamable HTTP initialize; using legacy HTTP+SSE"
                 % (self.config.display_url, status))
        self.memory["transport"] = "sse"
        self.inner = SseUpstream(self.loop, self.config, self.on_line, self.on_exit)
        self.stderr_tail = self.inner.stderr_tail
        self.rewrites = self.inner.rewrites
        self.start()
        for line in lines:
            self.inner.send(line + b"\n")
        if closing:
            self.inner.close_input()


def remote_upstream_factory(transport, config, made=None):
    """``make_upstream(loop, on_line, on_exit)`` for ``transport`` (streamable-http, sse or auto) to the
    server of ``config``; ``made`` (a list) collects the upstreams built."""
    memory = {}   # auto: the transport found, kept across --restart

    def make_upstream(loop, on_line, on_exit):
        if transport == "streamable-http":
            upstream = StreamableHttpUpstream(loop, config, on_line, on_exit)
        elif transport == "sse":
            upstream = SseUpstream(loop, config, on_line, on_exit)
        else:
            upstream = AutoUpstream(loop, config, on_line, on_exit, memory)
        if made is not None:
            made.append(upstream)
        return upstream

    return make_upstream


# ---------------------------------------------------------------------------
# Schema fixes: how the relay makes each tool of a catalog survive its client's rules (--fit-tools)
# ---------------------------------------------------------------------------

SCHEMA_DEPTH_LIMIT = 32
# Keywords whose value is one subschema, a map of subschemas, or a list of subschemas.
SCHEMA_KEYWORDS_ONE = ("additionalProperties", "additionalItems", "contains", "not", "if", "then", "else",
                       "propertyNames", "unevaluatedProperties", "unevaluatedItems")
SCHEMA_KEYWORDS_MAP = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
SCHEMA_KEYWORDS_LIST = ("allOf", "anyOf", "oneOf", "prefixItems")
SUBSCHEMA_KEYS = frozenset(SCHEMA_KEYWORDS_ONE + SCHEMA_KEYWORDS_MAP + SCHEMA_KEYWORDS_LIST + ("items",))



def json_pointer(*parts):
    """RFC 6901 pointer from path parts."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in parts)


def resolve_pointer(document, pointer):
    """Follow an RFC 6901 pointer; raises KeyError when it does not resolve."""
    node = document
    if pointer == "":
        return node
    for raw in pointer.lstrip("/").split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise KeyError(part)
    return node


# The server name the length rules count (Cursor's 60 characters, mcp_<server>_<tool>...) is taken to be
# this long: the relay never learns the name the client's configuration gives the server.
FIT_SERVER_NAME_CHARS = 24
NAME_HASH_CHARS = 6         # hex digits of sha1(original name) a short name ends with
FIT_REF_DEPTH = 8           # $refs expanded inside one another before inline-refs cuts
FIT_REF_EXPANSIONS = 500    # $refs expanded in one schema before inline-refs cuts the rest


def fit_rules(client):
    """The CATALOG_RULES rows with a fix for "all", ``client`` (a client with a profile) or a model API it uses."""
    reached = {"all", client} | set(client_profile(client).model_apis)
    return [rule for rule, row in CATALOG_RULES.items() if row.fix and reached & set(row.clients)]


def name_limit(rules, server_chars=FIT_SERVER_NAME_CHARS):
    """The longest tool name the length rules among ``rules`` let through (None: no such rule)."""
    # Every rule keeps room for a server name, also where the client's spelling shows none.
    server = {"server": "x" * server_chars, "tool": ""}
    limits = [getattr(CLIENTS[row.client].facts, row.fact) - max(server_chars, len(row.spelled % server))
              for row in NAME_LENGTH_RULES if row.rule in rules]
    return min(limits) if limits else None


def short_name(name, limit, taken=()):
    """``name`` with characters outside [A-Za-z0-9_-] made "_", cut to ``limit`` with a sha1 of the whole
    name (the same name always gets the same short one; a longer hash while it is in ``taken``)."""
    import hashlib  # lazily: it loads OpenSSL
    digest = hashlib.sha1(name.encode("utf-8", "surrogatepass")).hexdigest()
    for size in range(NAME_HASH_CHARS, len(digest)):
        suffix = "_" + digest[:size]
        short = NAME_OUTSIDE_RE.sub("_", name)[:max(1, limit - len(suffix))] + suffix
        if short not in taken:
            break
    return short


def subschemas_mapped(node, change):
    """A copy of the schema object ``node`` with ``change(subschema)`` in place of each subschema."""
    out = dict(node)
    for key, value in node.items():
        if key not in SUBSCHEMA_KEYS:  # most keys: one set lookup, not three scans of the tuples
            continue
        if key in SCHEMA_KEYWORDS_ONE or (key == "items" and isinstance(value, dict)):
            out[key] = change(value)
        elif key in SCHEMA_KEYWORDS_MAP and isinstance(value, dict):
            out[key] = {name: change(sub) for name, sub in value.items()}
        elif (key in SCHEMA_KEYWORDS_LIST or key == "items") and isinstance(value, list):
            out[key] = [change(sub) for sub in value]
    return out


def walk_schema(node, fix, depth=0):
    """A copy of ``node`` with ``fix(copy)`` applied to it and every subschema, deepest first, down to
    SCHEMA_DEPTH_LIMIT."""
    if not isinstance(node, dict) or depth > SCHEMA_DEPTH_LIMIT:
        return node
    out = subschemas_mapped(node, lambda sub: walk_schema(sub, fix, depth + 1))
    fix(out)
    return out


def add_note(node, note):
    """Add ``note`` to the description of ``node`` (what a fix changed); returns ``node``."""
    text = node.get("description")
    node["description"] = (text + " " if isinstance(text, str) and text else "") + "(%s)" % note
    return node


def one_type(node):
    """A type array becomes its first type but "null"; the description says what else the server accepts."""
    kind = node.get("type")
    if isinstance(kind, list) and len(kind) > 1:
        node["type"] = next((k for k in kind if k != "null"), kind[0])
        others = [k for k in kind if k != node["type"]]
        if others:
            add_note(node, "also accepts %s" % " or ".join(k if isinstance(k, str) else dumps(k) for k in others))


def drop_format(node):
    form = node.get("format")
    if "format" in node and not (isinstance(form, str) and form in GEMINI_FORMATS):   # a list is no format
        add_note(node, "format: %s" % dumps(node.pop("format")))


def inline_refs(schema):
    """``schema`` with each local $ref replaced by its target and $defs/definitions gone; a ref that nests in
    itself, is past FIT_REF_DEPTH or FIT_REF_EXPANSIONS, or does not resolve becomes an empty schema saying so."""
    expansions = [0]

    def expand(node, refs, depth):
        if not isinstance(node, dict) or depth > SCHEMA_DEPTH_LIMIT:
            return node
        ref = node.get("$ref")
        if not isinstance(ref, str):
            node = {key: value for key, value in node.items() if key not in ("$defs", "definitions")}
            return subschemas_mapped(node, lambda sub: expand(sub, refs, depth + 1))
        try:
            target = resolve_pointer(schema, ref[1:]) if ref.startswith("#") else None
        except KeyError:
            target = None
        expansions[0] += 1
        if not isinstance(target, dict):
            return add_note({}, "%s: no such definition" % ref)
        if ref in refs or len(refs) >= FIT_REF_DEPTH or expansions[0] > FIT_REF_EXPANSIONS:
            return cut_ref(ref, target)
        merged = dict(target)
        merged.update((key, value) for key, value in node.items() if key != "$ref")
        return expand(merged, refs + (ref,), depth)

    return expand(schema, (), 0)


def cut_ref(ref, target):
    """What stands for a $ref inline-refs does not expand: the type of its ``target`` and, in the description,
    what the target requires and takes (the model is shown no more of it)."""
    cut = {"type": target["type"]} if isinstance(target.get("type"), str) else {}
    what = alternative(target) if schema_properties(target) or names_in(target, "required") else ""
    return add_note(cut, "as %s%s; cut here by ocx-proxy" % (ref, ": " + what if what else ""))


def one_object(schema):
    """A root oneOf/anyOf/allOf made one object schema of every alternative's properties, required what all
    require (allOf: any), a property that tells the alternatives apart (const/enum) taking each one's values,
    and what each alternative requires and takes written in the description: the merged schema no longer
    says it, and the model reads only the description."""
    kinds = [key for key in ("allOf", "anyOf", "oneOf") if isinstance(schema.get(key), list)]
    if not kinds:
        return schema
    out = {key: value for key, value in schema.items() if key not in kinds}
    properties = dict(out.get("properties") or {}) if isinstance(out.get("properties"), dict) else {}
    required = list(out.get("required") or []) if isinstance(out.get("required"), list) else []
    notes = []
    for kind in kinds:
        parts = [local_target(schema, part) for part in schema[kind] if isinstance(part, dict)]
        needs = [set(names_in(part, "required")) for part in parts]
        offered = collections.OrderedDict()   # property name -> its schema in each alternative
        for part in parts:
            for name, sub in schema_properties(part).items():
                offered.setdefault(name, []).append(sub)
        for name, subs in offered.items():
            properties[name] = merged_choices([properties[name]] + subs if name in properties else subs)
        common = set.union(set(), *needs) if kind == "allOf" else set.intersection(*needs) if needs else set()
        required += sorted(common - set(required))
        note = combinator_note(kind, parts)
        if note:
            notes.append(note)
    out.update(type="object", properties=properties)
    required = [name for name in required if name in properties]
    if required:
        out["required"] = required
    else:
        out.pop("required", None)
    for note in notes:
        add_note(out, note)
    return out


# What a combinator's note says of its alternatives: this many at most, this many names in a list, this many
# characters of a title or a value (a model reads every character of every request: short, not whole).
NOTE_ALTERNATIVES = 12
NOTE_NAMES = 8
NOTE_VALUE_CHARS = 40


def local_target(schema, part):
    """``part``, or the definition its local ``$ref`` names in ``schema`` (one step: what a model would have
    been shown there), the rest of ``part`` over it."""
    ref = part.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#"):
        return part
    try:
        target = resolve_pointer(schema, ref[1:])
    except KeyError:
        return part
    if not isinstance(target, dict):
        return part
    merged = dict(target)
    merged.update((key, value) for key, value in part.items() if key != "$ref")
    return merged


def schema_properties(node):
    return node["properties"] if isinstance(node.get("properties"), dict) else {}


def names_in(node, key):
    """The strings of the list ``node[key]`` (``required``), in order."""
    value = node.get(key)
    return [name for name in value if isinstance(name, str)] if isinstance(value, list) else []


def choices_of(sub):
    """The values a property schema allows when it names them (``const``, ``enum``), else None."""
    if not isinstance(sub, dict):
        return None
    if "const" in sub:
        return [sub["const"]]
    return list(sub["enum"]) if isinstance(sub.get("enum"), list) and sub["enum"] else None


def merged_choices(subs):
    """One schema for a property several alternatives define: the first, but a property each gives a value
    or a few (the discriminator of a oneOf) takes all of them, not only the first alternative's."""
    every = [choices_of(sub) for sub in subs]
    if len(subs) < 2 or any(values is None for values in every):
        return subs[0]
    values, seen = [], set()
    for value in (value for values in every for value in values):
        # A set, not a scan: a server's enum may be long.  1 and true are different values.
        key = (type(value), value) if not isinstance(value, (dict, list)) else json.dumps(value, sort_keys=True)
        if key not in seen:
            seen.add(key)
            values.append(value)
    merged = {key: value for key, value in subs[0].items() if key not in ("const", "enum")}
    merged["enum"] = values
    return merged


def combinator_note(kind, parts):
    """The description note for the ``kind`` (oneOf, anyOf, allOf) alternatives ``parts``: each one's
    requirements; allOf only for its conditions (if/then/else), the rest of it is merged whole."""
    if kind == "allOf":
        said = [condition_text(part) for part in parts if isinstance(part.get("if"), dict)]
        head = "arguments: "
    else:
        keys = discriminators(parts)
        said = [alternative(part, keys) for part in parts]
        head = "arguments: %s of: " % ("exactly one" if kind == "oneOf" else "one or more")
    if not said:
        return None
    more = len(said) - NOTE_ALTERNATIVES
    said = said[:NOTE_ALTERNATIVES] + (["%d more" % more] if more > 0 else [])
    return head + " | ".join(said)


def note_value(value):
    """A const or enum value as the note shows it: its JSON, cut to NOTE_VALUE_CHARS."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= NOTE_VALUE_CHARS else text[:NOTE_VALUE_CHARS - 1] + "\u2026"


def note_names(names):
    shown = ", ".join(names[:NOTE_NAMES])
    return shown + (", \u2026" if len(names) > NOTE_NAMES else "")


def discriminators(parts):
    """The properties that tell alternatives ``parts`` apart: named with their values (const, enum) in two
    of them or more (``type``, ``action``...)."""
    counts = collections.Counter(name for part in parts for name, _ in selector_values(part))
    return {name for name, count in counts.items() if count > 1}


def alternative(schema, keys=()):
    """One alternative in a model's words: its title, the values of the properties ``keys`` that select it
    (``action="create"``), the names it requires and the others it takes; "any arguments" when it says none
    of these."""
    title = schema.get("title")
    chosen = [(name, values) for name, values in selector_values(schema) if name in keys]
    clauses = ["%s=%s" % (name, " or ".join(note_value(value) for value in values)) for name, values in chosen]
    chosen = [name for name, _ in chosen]
    need = [name for name in names_in(schema, "required") if name not in chosen]
    rest = [name for name in schema_properties(schema) if name not in chosen and name not in need]
    if need:
        clauses.append("requires " + note_names(need))
    if rest:
        clauses.append("takes " + note_names(rest))
    for kind, word in (("anyOf", "one or more of"), ("oneOf", "exactly one of")):
        inner = [part for part in schema.get(kind) or () if isinstance(part, dict)] if isinstance(
            schema.get(kind), list) else []
        if inner:   # one level down only: a note is read, not parsed
            clauses.append("%s: %s" % (word, " or ".join("{%s}" % note_names(names_in(part, "required") or list(
                schema_properties(part))) for part in inner[:NOTE_ALTERNATIVES])))
    text = "; ".join(clauses) or "any arguments"
    said = [value for name, values in selector_values(schema) if name in chosen for value in values]
    if isinstance(title, str) and title.strip() and title.strip() not in said:   # "create: action="create"": once
        text = "%s: %s" % (title.strip()[:NOTE_VALUE_CHARS], text)
    return text


def selector_values(schema):
    """``[(name, values)]``: the properties of ``schema`` that name a few values (const, enum): those that
    may tell alternatives apart."""
    found = []
    for name, sub in schema_properties(schema).items():
        values = choices_of(sub)
        if values is not None and len(values) <= 4:   # more: a property with choices, not a selector
            found.append((name, values))
    return found


def condition_text(part):
    """An allOf member with ``if``: "when <what if selects>: <then>" and "otherwise: <else>"."""
    condition = part["if"]
    when = ["%s=%s" % (name, " or ".join(note_value(value) for value in values)) for name, values in
            selector_values(condition)]
    chosen = [name for name, _ in selector_values(condition)]
    when += ["%s given" % name for name in names_in(condition, "required") if name not in chosen]
    text = "when %s: %s" % (" and ".join(when) or "its condition holds", branch_text(part.get("then")))
    if isinstance(part.get("else"), dict):
        text += ", otherwise: " + branch_text(part["else"])
    return text


def branch_text(branch):
    """What a then/else branch asks for, as ``alternative`` says it."""
    return alternative(branch) if isinstance(branch, dict) else "any arguments"


# The relay's fixes, by their CATALOG_RULES name: each changes a copy of one tool in place, but NODE_FIXES change
# one schema object (fit_tools runs them in one walk), and "short-name" is fit_tools' own (it needs the list).
TOOL_FIXES = collections.OrderedDict([
    ("inline-refs", lambda tool: tool.update(inputSchema=inline_refs(tool["inputSchema"]))),
    ("one-object", lambda tool: tool.update(inputSchema=one_object(tool["inputSchema"]))),
    ("one-type", one_type),
    ("drop-additional-properties", lambda node: node.pop("additionalProperties", None)),
    ("drop-format", drop_format),
    ("drop-output-schema", lambda tool: tool.pop("outputSchema", None) if not isinstance(
        tool.get("outputSchema"), dict) or tool["outputSchema"].get("type") != "object" else None),
    ("short-name", None),
])
NODE_FIXES = ("one-type", "drop-additional-properties", "drop-format")


def fit_tools(tools, client, server_chars=FIT_SERVER_NAME_CHARS):
    """``(fitted, names)``: ``tools`` (a tools/list page, left alone) fitted to the relay profile ``client``,
    and each name changed mapped to the server's; an entry that is no tool stays as it is."""
    rules = fit_rules(client)
    fixes = [fix for fix in TOOL_FIXES if any(CATALOG_RULES[rule].fix == fix for rule in rules)]
    node_fixes = [TOOL_FIXES[fix] for fix in fixes if fix in NODE_FIXES]
    limit = name_limit(rules, server_chars)
    clean = "name-chars" in rules or "sanitized-collision" in rules
    taken = {tool.get("name") for tool in tools if isinstance(tool, dict)}
    fitted, names = [], {}
    for tool in tools:
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            fitted.append(tool)
            continue
        tool, name = dict(tool), tool["name"]
        for fix in fixes:
            if TOOL_FIXES[fix] and fix not in NODE_FIXES and (
                    fix == "drop-output-schema" or isinstance(tool.get("inputSchema"), dict)):
                TOOL_FIXES[fix](tool)
        if node_fixes and isinstance(tool.get("inputSchema"), dict):
            tool["inputSchema"] = walk_schema(tool["inputSchema"], lambda node: [fix(node) for fix in node_fixes])
        if "short-name" in fixes and ((limit is not None and len(name) > limit)
                                      or (clean and NAME_OUTSIDE_RE.search(name))):
            tool["name"] = short_name(name, limit or 2 * len(name) + 40, taken)
            names[tool["name"]] = name
            taken.add(tool["name"])
        fitted.append(tool)
    return fitted, names


class ToolFitting:
    """--fit-tools for one relay session: tools/list answers fitted to the profile ``client()`` (read at each
    answer; ``rewrite``, a ``Rewrite``), and calls of a fitted name sent under the server's (``restore``)."""

    def __init__(self, client):
        self.client = client
        self.originals = {}          # fitted name -> the server's

    def rewrite(self, msg, params=None):
        result = msg.get("result") if isinstance(msg, dict) else None
        tools = result.get("tools") if isinstance(result, dict) else None
        if not isinstance(tools, list):
            return False
        fitted, names = fit_tools(tools, self.client())
        self.originals.update(names)
        if fitted == tools:
            return False
        result["tools"] = fitted
        return True

    def restore(self, line, msgs, raws):
        """``(line, msgs, raws)`` of a client line with each call of a fitted name naming the server's tool."""
        if not self.originals or not any(self._fitted(msg) for msg in msgs):
            return line, msgs, raws
        raws = list(raws)
        for index, msg in enumerate(msgs):
            if self._fitted(msg):
                msg["params"] = dict(msg["params"], name=self.originals[msg["params"]["name"]])
                raws[index] = encode_message(msg)[:-1]
        return same_shape(line, raws), msgs, raws

    def _fitted(self, msg):
        return "id" in msg and called_tool(msg) in self.originals


# ---------------------------------------------------------------------------
# Relay settings: the options, the profile in use for the client (its budget and clock), --trace
# ---------------------------------------------------------------------------

# Everything the relay needs to know from the command line (relay_options_from_args).  A budget option
# None: the client profile's value (Budget.for_client); a number given wins.
RelayOptions = collections.namedtuple(
    "RelayOptions", "client max_response_chars max_response_bytes max_image_bytes preview_chars output_dir "
    "retention_days request_timeout restart keep_output_schema use_threads trace_path max_message_bytes "
    "max_buffer_bytes reader_tool fit_tools allow_tools deny_tools heartbeat detach_after catalog check_arguments "
    "negotiate negotiate_timeout")


def reader_declared_chars(client, max_chars):
    """The result size the reader tool declares for itself in tools/list for ``client`` (a Client) whose pages are
    at most ``max_chars`` long (0: no limit, MAX_RESPONSE_CHARS): None for a client that does not read it."""
    most = client.facts.declared_chars_max
    return min(max_chars or MAX_RESPONSE_CHARS, most) if most else None


class ProfileInUse:
    """The profile in use for this session's client, with the options given: ``spill.budget`` (set here only),
    whether outputSchema is kept and the client's clock (``heartbeat`` and ``detach_after`` seconds, 0: off;
    ``progress_resets``; ``wait_cap``: the longest a reader call waits for a detached call); with --client auto, the
    generic one until the client's first request (``choose``).  For a client that reads a tool's own result size
    (declared_chars_max), ``note_sizes`` keeps what each tool declared and ``budget_for`` gives its calls that budget;
    the reader tool declares its pages' (``reader_declares``)."""

    def __init__(self, spill, options):
        self.spill = spill
        self.options = options
        self.known = options.client != "auto"
        self.declared = {}           # the server's tool name -> the result size it declared (MAX_RESULT_SIZE_META)
        self.use("generic" if options.client == "auto" else options.client)

    def use(self, name):
        self.client, self.name = CLIENTS[client_named(name, "relay")], name
        profile, facts = self.client.profile, self.client.facts
        self.spill.budget = Budget.for_client(profile, self.options)
        self.keep_output_schema = self.options.keep_output_schema or not profile.strip_output_schema
        self.call_seconds, self.progress_resets = facts.call_seconds, facts.progress_resets
        given = self.options.heartbeat, self.options.detach_after
        self.heartbeat = heartbeat_seconds(self.call_seconds) if given[0] is None else given[0]
        self.detach_after = detach_seconds(self.call_seconds) if given[1] is None else given[1]
        self.wait_cap = self.detach_after or detach_seconds(self.call_seconds)

    def choose(self, msg):
        """--client auto: the profile named by ``msg``, the client's first request (initialize's clientInfo or,
        from 2026-07-28 on, ``_meta``)."""
        self.known = True
        name = (client_info(msg) or {}).get("name")
        chosen = client_for_info_name(name)
        self.use(chosen)
        why = "clientInfo.name %r" % name if isinstance(name, str) else "no clientInfo.name"
        if chosen != client_for_info_name(name, {}):
            why += ", the environment %s gives its servers" % CLIENTS[chosen].display
        self.log(why)

    def note_sizes(self, msg, params=None):
        """A ``Rewrite`` that changes nothing: the result size each tool of a tools/list page declares for itself
        (a whole number from 1), by the server's name."""
        result = msg.get("result") if isinstance(msg, dict) else None
        for tool in result.get("tools") if isinstance(result, dict) and isinstance(result.get("tools"), list) else ():
            if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                meta = tool.get("_meta")
                size = meta.get(MAX_RESULT_SIZE_META) if isinstance(meta, dict) else None
                if type(size) is int and size > 0:
                    self.declared[tool["name"]] = size
                else:
                    self.declared.pop(tool["name"], None)
        return False

    def budget_for(self, msg):
        """The Budget of the client request ``msg``: a call of a tool that declared its result size, for a client
        that reads it, gets that size (declared_chars_max at most); None: the session's (``spill.budget``)."""
        most = self.client.facts.declared_chars_max
        size = self.declared.get(called_tool(msg)) if most and msg.get("method") == "tools/call" else None
        return None if size is None else Budget.for_client(self.client.profile, self.options, min(size, most))

    def reader_declares(self):
        """The result size the reader tool declares, for a client that reads it: its longest page (what fits the
        session's budget); None for any other client."""
        return reader_declared_chars(self.client, self.spill.budget.max_chars)

    def log(self, why):
        clock = "%s, %s (its clock: %g s%s)" % (
            "heartbeat every %g s" % self.heartbeat if self.heartbeat else "no heartbeat",
            "tools/call detached after %g s" % self.detach_after if self.detach_after else "never detached",
            self.call_seconds, ", progress resets it" if self.progress_resets else "")
        log.info("client profile %s (%s): %s, outputSchema %s, %s" % (
            self.name, why, self.spill.budget.describe(), "kept" if self.keep_output_schema else "removed", clock))


class Trace:
    """``--trace FILE``: one NDJSON record per message, metadata only, secrets redacted; a tools/call's records
    (the gate's decision, the call, its answer, spill or detached result) carry its ``trace`` id."""

    def __init__(self, path):
        # O_NOFOLLOW: never append to what a link planted at the name points at.
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(path, flags, 0o600)
        except OSError as exc:
            if os.path.islink(path):
                raise UsageError("--trace %s is a symbolic link; give the file itself" % path)
            raise UsageError("cannot open --trace file %s: %s" % (path, exc.strerror or exc))
        self.handle = os.fdopen(fd, "a", encoding="utf-8")

    def record(self, direction, msg, size, pending=None, spilled=None, trace=None):
        entry = {"time": utc_now_iso(), "dir": direction, "size": size}
        trace = trace or (pending.trace if pending is not None else None)
        if trace:
            entry["trace"] = trace
        if isinstance(msg, dict):
            if "id" in msg:
                entry["id"] = msg["id"]
            method = msg.get("method") or (pending.method if pending else None)
            if isinstance(method, str):
                entry["method"] = method
            params = msg.get("params")
            if method == "tools/call" and isinstance(params, dict) and isinstance(params.get("name"), str):
                entry["tool"] = params["name"]
            if "error" in msg and isinstance(msg["error"], dict) and type(msg["error"].get("code")) is int:
                entry["error"] = msg["error"]["code"]
        if pending is not None:
            entry["ms"] = round((time.monotonic() - pending.started) * 1000, 3)
        if spilled is not None:
            entry["spill"] = {"json": spilled.json_path, "txt": spilled.txt_path}
        self._write(entry)

    def decision(self, pending, tool, decision, by, findings=(), hook_ms=None):
        """The gate's record of the tools/call ``pending``: ``decision`` pass, annotate, refuse (or dropped: the
        call had its answer before the hook's), ``by`` schema or negotiate, the pointers of its ``findings``."""
        entry = {"time": utc_now_iso(), "dir": "gate", "id": pending.msg_id, "method": "tools/call", "tool": tool,
                 "decision": decision, "by": by}
        if pending.trace:
            entry["trace"] = pending.trace
        if findings:
            entry["findings"] = list(findings)
        if hook_ms is not None:
            entry["hook_ms"] = round(hook_ms, 3)
        self._write(entry)

    def _write(self, entry):
        self.handle.write(dumps(redact(entry)) + "\n")
        self.handle.flush()

    def close(self):
        self.handle.close()


# ---------------------------------------------------------------------------
# Requests: the client's requests not answered yet, their clocks (timeouts, heartbeats), detached calls
# ---------------------------------------------------------------------------

# How many ended requests are remembered (Requests.abandoned, CallClock.ended): the answers and progress that
# still come for them are dropped.
ABANDONED_LIMIT = 4096
SHUTTING_DOWN = "ocx-proxy is shutting down"
# Requests that last as long as the client wants: --request-timeout, heartbeats and detaching do not apply to them.
OPEN_ENDED = frozenset(["subscriptions/listen"])
# A heartbeat shows the client progress this much above the last it saw (a billionth of it, when that is more).
PROGRESS_STEP = 0.001
# Progress values past this are passed as they are: no arithmetic on them.
PROGRESS_LIMIT = 1e300
# DetachedCalls.wait_for: the reader call waits, and is answered later.
WAITING = "waiting"


class Pending:
    """A client request not answered yet (``params`` only where a preview or a rewrite needs them, ``budget`` only
    where its answer has one of its own); its timers (``timer``: --request-timeout; ``clock``: CallClock's, for the
    next heartbeat or ``detach_at``) and, when it carries a progressToken that CallClock watches, the token and its
    ``key``, the last progress the client saw (``shown``) and when the server or a heartbeat last spoke of it
    (``heard``).  A tools/call may have a ``trace`` id (--trace, --negotiate) and the gate's ``findings`` for the
    server's error (--check-arguments annotate)."""

    __slots__ = ("msg_id", "method", "params", "version", "started", "timer", "clock", "detach_at", "token", "key",
                 "shown", "heard", "budget", "trace", "findings")

    def __init__(self, msg_id, method, params, version, started):
        self.msg_id = msg_id
        self.method = method
        self.params = params
        self.version = version
        self.started = started
        self.timer = self.clock = self.detach_at = self.token = self.key = self.shown = self.heard = None
        self.budget = None   # its answer's Budget when not the session's (ProfileInUse.budget_for)
        self.trace = self.findings = None


class Requests:
    """The client requests not answered yet (``Pending`` by ``id_key``, each with its --request-timeout timer:
    ``on_timeout(pending)`` answers it, and what ``clock``, a CallClock, watches), and the last ABANDONED_LIMIT ids
    we answered ourselves."""

    def __init__(self, loop, timeout, on_timeout, clock):
        self.loop = loop
        self.timeout = timeout
        self.on_timeout = on_timeout
        self.clock = clock
        self.pending = {}
        self.abandoned = collections.OrderedDict()

    def add(self, msg):
        method = msg.get("method")
        params = msg.get("params") if method in ("resources/read", "tools/list") else None
        pending = Pending(msg["id"], method, params, request_version(msg.get("params")), time.monotonic())
        if self.timeout > 0 and method not in OPEN_ENDED:
            pending.timer = self.loop.call_later(self.timeout, self._timed_out, pending)
        self.pending[id_key(msg["id"])] = pending
        self.clock.watch(pending, msg.get("params"))
        return pending

    def is_open(self, pending):
        return self.pending.get(id_key(pending.msg_id)) is pending

    def take(self, key):
        """The request pending under ``key``, removed and its timer stopped (None: none)."""
        pending = self.pending.pop(key, None)
        if pending is not None:
            if pending.timer:
                pending.timer.cancel()
            self.clock.end(pending)
        return pending

    def drop(self, key):
        """``take``, and abandon the request when it was pending: we answer it ourselves."""
        pending = self.take(key)
        if pending is not None:
            self.abandon(key)
        return pending

    def abandon(self, key):
        """The server's answer to ``key`` is to be dropped (``take_abandoned``): the client has one already."""
        self.abandoned[key] = True
        while len(self.abandoned) > ABANDONED_LIMIT:
            self.abandoned.popitem(last=False)

    def take_abandoned(self, key):
        """Forget ``key`` as abandoned: True when it was (its answer is to be dropped)."""
        return self.abandoned.pop(key, None) is not None

    def take_all(self):
        return [self.take(key) for key in list(self.pending)]

    def _timed_out(self, pending):
        if self.is_open(pending):
            self.drop(id_key(pending.msg_id))
            self.on_timeout(pending)


def progress_number(value):
    """``value`` when it is a progress the relay can count above (a JSON number within PROGRESS_LIMIT), else None."""
    if type(value) in (int, float) and -PROGRESS_LIMIT < value < PROGRESS_LIMIT:
        return value
    return None


def next_progress(last, value=None):
    """The progress to show a client whose last one for a token was ``last`` (None: none yet; else a
    ``progress_number``): the server's ``value`` when it is above ``last``, else just above ``last``; a heartbeat
    (``value`` None) just above ``last``, 0 the first time.  Progress MUST increase, whoever sends it.  A
    ``value`` that is no ``progress_number`` is returned as it is (the server's error, passed on)."""
    if value is not None and progress_number(value) is None:
        return value
    if last is None:
        return 0 if value is None else value
    if value is not None and value > last:
        return value
    step = max(PROGRESS_STEP, abs(last) * 1e-9)
    above = round(last + step, 6)  # 5.001, not 5.0009999999999994
    return above if above > last else last + step


class CallClock:
    """The client's clock on each pending request, kept by the relay (``profile``, a ProfileInUse: heartbeat,
    detach_after, progress_resets).  ``watch`` arms one timer per request, for the first of: while the server says
    nothing of a request with a progressToken for ``heartbeat`` seconds, the client gets progress from us
    (``send``); a tools/call still unanswered after ``detach_after`` goes to ``on_detach(pending)``, unless our
    heartbeats keep it alive (its client's clock starts again on progress).  ``progress`` passes the server's
    progress on, raised when it would not be above what the client saw.  ``end`` (the request answered, cancelled,
    timed out or detached) stops it all: no progress for that token reaches the client after it.  Nothing is
    scanned per line or per request, and the server's progress moves no timer (``heard`` is read when it fires)."""

    def __init__(self, loop, profile, send, on_detach):
        self.loop = loop
        self.profile = profile
        self.send = send
        self.on_detach = on_detach
        self.tokens = {}                          # progress key -> the Pending that carries it
        self.ended = collections.OrderedDict()    # progress keys of the last ABANDONED_LIMIT requests that ended

    @property
    def watching(self):
        """True when a server progress notification may have to change (else it passes as it is)."""
        return bool(self.tokens or self.ended)

    def watch(self, pending, params):
        heartbeat, detach = self.profile.heartbeat, self.profile.detach_after
        if not (heartbeat or detach) or pending.method in OPEN_ENDED:
            return
        meta = params.get("_meta") if isinstance(params, dict) else None
        key = progress_key(meta.get("progressToken")) if isinstance(meta, dict) else None
        if key is not None:
            pending.token, pending.key = meta["progressToken"], key
            self.tokens[key] = pending
            self.ended.pop(key, None)
            if heartbeat:
                pending.heard = pending.started
        kept_alive = key is not None and heartbeat and self.profile.progress_resets
        if detach and pending.method == "tools/call" and not kept_alive:
            pending.detach_at = pending.started + detach
        self._arm(pending, pending.started)

    def _arm(self, pending, now):
        due = pending.detach_at
        if pending.heard is not None and (due is None or pending.heard + self.profile.heartbeat < due):
            due = pending.heard + self.profile.heartbeat
        if due is not None:
            pending.clock = self.loop.call_later(due - now, self._tick, pending)

    def end(self, pending):
        if pending.clock is not None:
            pending.clock.cancel()
            pending.clock = None
        key = pending.key
        if key is not None and self.tokens.get(key) is pending:
            del self.tokens[key]
            self.ended[key] = True
            if len(self.ended) > ABANDONED_LIMIT:
                self.ended.popitem(last=False)

    def progress(self, msg):
        """What goes to the client for the server's notifications/progress ``msg``: None, ``msg`` as it is;
        False, nothing (its request has ended); else a copy whose progress is raised just above the last shown."""
        params = msg.get("params")
        key = progress_key(params.get("progressToken")) if isinstance(params, dict) else None
        pending = self.tokens.get(key)
        if pending is None:
            return False if key is not None and key in self.ended else None
        if pending.heard is not None:
            pending.heard = time.monotonic()
        value = params.get("progress")
        shown = next_progress(pending.shown, value)
        if progress_number(shown) is None:
            return None
        pending.shown = shown
        return None if shown is value else dict(msg, params=dict(params, progress=shown))

    def _tick(self, pending):
        now = time.monotonic()
        if pending.detach_at is not None and now >= pending.detach_at:
            pending.detach_at = None
            self.on_detach(pending)
            if pending.clock is None:  # detached: ended
                return
        if pending.heard is not None and now - pending.heard >= self.profile.heartbeat * 0.999:
            pending.shown, pending.heard = next_progress(pending.shown), now
            self.send({"jsonrpc": "2.0", "method": "notifications/progress", "params": {
                "progressToken": pending.token, "progress": pending.shown,
                "message": "ocx-proxy: the server is still working (%d s)" % (now - pending.started)}})
        self._arm(pending, now)


def call_failure(msg):
    """How the server's answer ``msg`` to a tool call says it failed, in words; None for a result."""
    if "error" in msg:
        error = msg["error"] if isinstance(msg["error"], dict) else {}
        return "the JSON-RPC error %s: %s" % (error.get("code"), shorten(str(error.get("message")), 200))
    result = msg.get("result")
    if isinstance(result, dict) and result.get("isError") is True:
        return "a tool error (isError)"
    if isinstance(result, dict) and result.get("resultType", "complete") != "complete":
        return "resultType %s, which ocx-proxy cannot follow for a detached call: call the tool again" % shorten(
            str(result.get("resultType")), 40)
    return None


class Detached:
    """A tool call the relay answered itself at --detach-after (DetachedCalls), under the id its client was given
    (``stem``: the name its answer is saved under, like a spill's)."""

    __slots__ = ("stem", "msg_id", "started", "outcome", "note", "waiters", "timer", "trace")

    def __init__(self, stem, msg_id, started, trace=None):
        self.stem = stem
        self.msg_id = msg_id
        self.started = started
        self.trace = trace    # the call's trace id (--trace)
        self.outcome = None   # None: running; "result", "error": saved as the spill ``stem``; "lost": no answer
        self.note = None      # what the reader says of it once it ended
        self.waiters = []     # [callback, Timer] of the reader calls waiting for it
        self.timer = None     # the rest of its --request-timeout

    def seconds(self):
        return time.monotonic() - self.started


class DetachedCalls:
    """Tool calls answered by us at --detach-after while the server works on (``detach``).  The server's answer
    is saved like a spill under the id the client was given (``save_answer``); the reader tool reads it, waiting
    while it runs (``wait_for``); a call that ends without one says why (``cancel``: by the client, --request-timeout,
    ``lose_all``: with its server, ``fail``: an answer that could not be read, ``stop``: the relay ends, and cancels
    those still running upstream through ``cancel_upstream(msg_id, reason)``)."""

    def __init__(self, spill, loop, profile, requests, cancel_upstream, request_timeout):
        self.spill = spill
        self.loop = loop
        self.profile = profile
        self.requests = requests
        self.cancel_upstream = cancel_upstream
        self.request_timeout = request_timeout
        self.by_request = {}   # id_key of the request -> Detached, while the server owes its answer
        self.by_id = {}        # the id given to the client -> Detached: this session's

    def detach(self, pending):
        """The answer to ``pending`` (a tools/call taken from Requests): a short result saying it still runs."""
        record = Detached(self.spill.stem(os.urandom(16), pending.method, pending.msg_id), pending.msg_id,
                          pending.started, pending.trace)
        self.by_request[id_key(pending.msg_id)] = self.by_id[record.stem] = record
        if self.request_timeout > 0:
            record.timer = self.loop.call_later(max(0.0, self.request_timeout - record.seconds()), self._expire,
                                                record)
        log.info("tools/call %r still running after %d s: answered, its answer will be kept as %s"
                 % (pending.msg_id, record.seconds(), record.stem))
        note = ('[ocx-proxy: this tool call is still running on the server (%d s so far), longer than this client '
                'waits for a tool; its result is kept when it comes. The %s tool of this server returns it, id="%s", '
                'waiting for it up to `wait` seconds (at most %d)]'
                % (record.seconds(), self.spill.reader_name, record.stem, self.profile.wait_cap))
        result = {"content": [{"type": "text", "text": note}], "_meta": {"ocx-proxy/detached": {"id": record.stem}}}
        if is_modern(pending.version):
            result["resultType"] = "complete"
        return result_response(pending.msg_id, result)

    def save_answer(self, key, line, msg):
        """The server's answer ``msg`` (``line``, its bytes) to the detached call ``key``: saved, readers woken."""
        record = self.by_request.pop(key)
        failure = call_failure(msg)
        try:
            self.spill.save(line, msg, "tools/call", readable_text(msg, "tools/call"), stem=record.stem)
        except OSError as exc:
            log.error("could not save the answer to detached call %s: %s" % (record.stem, exc))
            return self._end(record, "lost", "ocx-proxy could not save its answer under %s: %s"
                             % (self.spill.output_dir, exc.strerror or exc))
        how = "failed on the server after %d s, with %s:" % (record.seconds(), failure) if failure else \
            "finished on the server after %d s; its result:" % record.seconds()
        self._end(record, "error" if failure else "result", "[ocx-proxy: the call %s]" % how)

    def wait_for(self, call_id, wait, then):
        """What the reader says first of ``call_id`` when it is a detached call's id, else None: ``(note, failed,
        readable)``, ``readable`` when its answer is saved as the spill ``call_id``; or WAITING when it is still
        running and ``wait`` (seconds, capped at ``profile.wait_cap``) is not 0: ``then()`` comes when the answer
        does or the wait ends.  ValueError when the call ended without an answer."""
        record = self.by_id.get(call_id) if isinstance(call_id, str) else None
        if record is None:
            return None
        if record.outcome is None:
            wait = min(wait, self.profile.wait_cap)
            if wait <= 0:
                return ('[ocx-proxy: the call id="%s" is still running on the server (%d s so far)]'
                        % (call_id, record.seconds()), False, False)
            entry = [then, None]
            entry[1] = self.loop.call_later(wait, self._stop_waiting, record, entry)
            record.waiters.append(entry)
            return WAITING
        if record.outcome == "lost":
            raise ValueError('the call id="%s" has no result: %s' % (call_id, record.note))
        return record.note, record.outcome == "error", True

    def _stop_waiting(self, record, entry):
        if any(waiting is entry for waiting in record.waiters):
            record.waiters = [waiting for waiting in record.waiters if waiting is not entry]
            entry[0]()

    def _end(self, record, outcome, note):
        record.outcome, record.note = outcome, note
        self.by_request.pop(id_key(record.msg_id), None)
        if record.timer is not None:
            record.timer.cancel()
        waiters, record.waiters = record.waiters, []
        for then, timer in waiters:
            timer.cancel()
            then()

    def _give_up(self, key, note):
        """End the detached call ``key`` without its answer; the server's answer, if it comes, is dropped."""
        record = self.by_request.get(key)
        if record is None:
            return False
        self.requests.abandon(key)
        self._end(record, "lost", note % record.seconds())
        return True

    def cancel(self, key):
        """The client cancelled request ``key`` (relayed upstream): True when it was a detached call."""
        return self._give_up(key, "the client cancelled it after %d s")

    def fail(self, key, defect):
        """The server's answer to ``key`` could not be relayed (``defect``): True when it was a detached call."""
        return self._give_up(key, "its answer from the server %s (after %%d s)" % defect.replace("%", "%%"))

    def _expire(self, record):
        self.cancel_upstream(record.msg_id, "ocx-proxy request timeout")
        self.requests.abandon(id_key(record.msg_id))
        self._end(record, "lost", "it timed out after %g s (ocx-proxy --request-timeout) and was cancelled"
                  % self.request_timeout)

    def lose_all(self, reason):
        """The server exited: the calls it owed answers to have none."""
        for record in list(self.by_request.values()):
            self._end(record, "lost", "the server exited before answering (%s)" % reason)

    def stop(self):
        """The relay ends: the calls still running are cancelled upstream, and their readers answered."""
        for record in list(self.by_request.values()):
            self.cancel_upstream(record.msg_id, SHUTTING_DOWN)
            self._end(record, "lost", "%s; it was cancelled after %d s" % (SHUTTING_DOWN, record.seconds()))


# ---------------------------------------------------------------------------
# Reader tool: the relay's own tool, paging through what spilled and returning detached calls' answers
# ---------------------------------------------------------------------------

# What the reader tool waits for a detached call's answer when the model says nothing (capped: ProfileInUse).
DETACH_WAIT_SECONDS = 10
READER_ARGUMENTS = ("id", "line", "lines", "column", "pattern", "context", "path", "outline", "wait")
SEARCHES_AT_ONCE = 2  # pattern searches and path queries running together; more wait their turn
READER_HELPED = ("pattern", "path", "outline")  # arguments that make a call run a helper program


def reader_tool(taken=(), declared_chars=None):
    """The tools/list entry of the reader tool, named READER_TOOL_NAME or, while ``taken`` (the server's tool
    names) has that, READER_TOOL_NAME_2, _3...; with ``declared_chars``, the result size it declares for itself (its
    longest page) in its ``_meta``."""
    name, n = READER_TOOL_NAME, 1
    while name in taken:
        n += 1
        name = "%s_%d" % (READER_TOOL_NAME, n)
    entry = {
        "name": name,
        "description": (
            "Read output that ocx-proxy saved because it was too large to return whole. The [ocx-proxy: ...] note of a "
            "shortened result gives its id as `id=\"...\"`: pass that id. Returns a page of its text from `line` "
            "(1-based; `column` inside a very long line), or with `pattern` (a Python regular expression) the matching "
            "lines, numbered, with `context` lines around each (a search is stopped after %d s). For JSON text, `path` "
            "lists the values it selects, one a line as `path: JSON`: `$` the whole, `.key` or `[\"key\"]` a member, "
            "`[n]` an item (negative: from the end), `[a:b]` a slice, `[*]` every member, `..key` that key at any "
            "depth, e.g. `$.items[10:20].name`; `outline: true` describes each selected node instead (type, size, an "
            "object's keys, an array's length and first items): walk a big document with it from `$`. Paging: an "
            "answer that holds only part ends with `%s line=L` or `%s line=L, column=C`; the rest comes from the same "
            "call (same id, pattern, context, path, outline, lines) with `line` L and `column` C (1 when not given). "
            "`[end of the text]`, `[end of the outline]`, `[no more matches]` or `[nothing matches ...]`: nothing "
            "follows. A tool call that "
            "ran past the time the client waits is answered early with a note that it is still running and its "
            "id=\"...\": pass that id, with `wait` (seconds) to wait for its result; while there is none yet the "
            "answer says `still running`, and the same call asks again." % (SEARCH_SECONDS, READER_MORE, READER_MORE)),
        "inputSchema": {"type": "object", "properties": {
            "id": {"type": "string", "description": "the id=\"...\" of the [ocx-proxy: ...] note"},
            "line": {"type": "integer", "minimum": 1,
                     "description": "first line (default 1); to go on: L of `%s line=L`" % READER_MORE},
            "lines": {"type": "integer", "minimum": 1, "description": "at most this many lines"},
            "column": {"type": "integer", "minimum": 1, "description": "first character of `line` (default 1); "
                       "to go on: C of `%s line=L, column=C`" % READER_MORE},
            "pattern": {"type": "string", "maxLength": READER_MAX_PATTERN,
                        "description": "regular expression to search for"},
            "context": {"type": "integer", "minimum": 0, "maximum": READER_MAX_CONTEXT,
                        "description": "lines shown around each match"},
            "path": {"type": "string", "maxLength": READER_MAX_PATTERN,
                     "description": "JSON path of the values to list, e.g. $.items[0:10].name"},
            "outline": {"type": "boolean", "description": "describe the nodes `path` selects (default $)"},
            "wait": {"type": "number", "minimum": 0, "description": "seconds to wait for the result of a call "
                     "still running (default %d; the relay answers before the client would stop waiting)"
                     % DETACH_WAIT_SECONDS},
        }, "required": ["id"]},
    }
    if declared_chars:
        entry["_meta"] = {MAX_RESULT_SIZE_META: declared_chars}
    return entry


def reader_wait(args):
    """The reader's ``wait`` argument (seconds) in ``args``, DETACH_WAIT_SECONDS when not given; ValueError when it
    is no number from 0."""
    wait = args.get("wait", DETACH_WAIT_SECONDS)
    if type(wait) not in (int, float) or not 0 <= wait < float("inf"):
        raise ValueError("wait must be a number of seconds from 0, not %.40r" % (wait,))
    return wait


class Reader:
    """The reader tool: the relay's own tool, paging through what ``spill`` saved.

    ``advertise`` adds it to the last tools/list page (only from then on are calls of its name ours);
    ``claim`` takes those calls out of what the client sends and answers them through ``send(msg)``,
    within ``spill.budget``: a page at once, a search when it ends (SEARCHES_AT_ONCE at most beside the
    loop), a detached call's answer (``detached``: DetachedCalls) when it is there or the wait ends; ``stop``
    ends the searches at shutdown.
    """

    def __init__(self, spill, loop, send, closing, offered, detached, use_threads=False, declares=lambda: None):
        self.spill = spill
        self.declares = declares         # the result size it declares in tools/list (None: none)
        self.loop = loop
        self.send = send
        self.detached = detached
        self.closing = closing
        self.offered = offered           # not with --no-reader-tool, nor when nothing spills or is detached
        self.use_threads = use_threads
        self.server_tools = set()        # tool names the server listed: the reader tool must not take one
        self.searches = []               # pattern searches running (BoundedRun)
        self.queue = collections.deque()  # calls with a pattern, waiting for a turn

    def advertise(self, msg, params=None):
        """A ``Rewrite``: the reader tool added to the last tools/list page, named apart from the server's tools."""
        result = msg.get("result") if isinstance(msg, dict) else None
        tools = result.get("tools") if isinstance(result, dict) else None
        if not self.offered or not isinstance(tools, list):
            return False
        self.server_tools.update(tool["name"] for tool in tools if isinstance(tool, dict)
                                 and isinstance(tool.get("name"), str))
        if result.get("nextCursor"):  # not the last page
            return False
        tools.append(reader_tool(self.server_tools, self.declares()))
        self.spill.reader_name = tools[-1]["name"]
        return True

    def claim(self, line, msgs, raws):
        if self.spill.reader_name is None:
            return line, msgs, raws
        return take_messages(line, msgs, raws, self._is_call, self.answer)

    def _is_call(self, msg):
        return "id" in msg and called_tool(msg) == self.spill.reader_name

    def answer(self, msg, waited=False):
        """Answer a reader tool call with a page sized so that the whole answer fits (a search: when it ends; a
        detached call's answer: when it is there or ``wait`` ends, then ``waited``)."""
        params = msg["params"]
        args = params.get("arguments", {})
        helped = isinstance(args, dict) and any(args.get(name) not in (None, False) for name in READER_HELPED)
        if helped and len(self.searches) >= SEARCHES_AT_ONCE:
            self.queue.append(msg)
            return
        result = {"content": [{"type": "text", "text": ""}, {"type": "text", "text": ""}]}
        if is_modern(request_version(params)):
            result["resultType"] = "complete"
        try:
            if not isinstance(args, dict):
                raise ValueError("arguments must be an object")
            unknown = sorted(set(args) - set(READER_ARGUMENTS))
            if unknown or "id" not in args:
                raise ValueError("unknown argument %s" % unknown[0] if unknown else "the argument id is required")
            args = {name: value for name, value in args.items() if value is not None}  # null: not given
            first = self.detached.wait_for(args.get("id"), 0 if waited else reader_wait(args),
                                          lambda: self.answer(msg, True))
            if first is WAITING:
                return
            if first is not None:  # a detached call: what became of it comes first
                note, failed, readable = first
                result["content"].insert(0, {"type": "text", "text": note})
                if failed:
                    result["isError"] = True
                if not readable:
                    del result["content"][1:]
                    return self.send(result_response(msg["id"], result))
            pattern, path = args.get("pattern"), args.get("path", "$" if args.get("outline") else None)
            if pattern is not None and path is not None:
                raise ValueError("give pattern or path, not both")
            # The longest hint this call can get: the page is sized with it reserved.
            bound = self.spill.read_hint(str(args.get("id"))[:200], (READER_MAX_NUMBER, READER_MAX_NUMBER),
                                         READER_MAX_NUMBER if "lines" in args else None,
                                         pattern if isinstance(pattern, str) else None, READER_MAX_CONTEXT,
                                         path if isinstance(path, str) else None, True, READER_MAX_NUMBER)
            chars, size = self.spill.budget.page(dumps(result_response(msg["id"], result)) + dumps(bound))
            budget = {"budget_chars": chars, "budget_bytes": size}
            if path is not None:
                return self._search(msg, result, self.spill.query(args.get("id"), path, args.get("outline", False),
                                                                  args.get("line", 1), args.get("column", 1), **budget))
            if pattern is not None:
                return self._search(msg, result, self.spill.search(args.get("id"), pattern, line=args.get("line", 1),
                                                                   context=args.get("context", 0), **budget))
            text, hint = self.spill.read(args.get("id"), line=args.get("line", 1), lines=args.get("lines"),
                                         column=args.get("column", 1), **budget)
            result["content"][-2]["text"], result["content"][-1]["text"] = text, hint
        except (ValueError, TypeError) as exc:
            self._error(result, exc)
        self.send(result_response(msg["id"], result))

    def _error(self, result, exc):
        result["content"] = [{"type": "text", "text": "%s: %s" % (self.spill.reader_name, exc)}]
        result["isError"] = True

    def _search(self, msg, result, search):
        def done(output):
            self.searches.remove(run)
            try:
                if output is None:
                    raise ValueError(SHUTTING_DOWN if self.closing() else search.slow)
                result["content"][-2]["text"], result["content"][-1]["text"] = search.answer(output)
            except (ValueError, TypeError) as exc:
                self._error(result, exc)
            self.send(result_response(msg["id"], result))
            if self.queue and not self.closing():
                self.answer(self.queue.popleft())

        try:
            run = BoundedRun(self.loop, search.argv, search.stdin, SEARCH_SECONDS, done, self.use_threads)
        except OSError as exc:
            raise ValueError("could not start the pattern search: %s" % exc)
        finally:
            os.close(search.stdin)
        self.searches.append(run)

    def stop(self):
        """Shutdown: searches killed; they and the calls waiting for a turn are answered so."""
        waiting, self.queue = self.queue, collections.deque()
        for run in list(self.searches):
            run.stop()
        for msg in waiting:
            self.send(error_response(msg["id"], UPSTREAM_ERROR, SHUTTING_DOWN))


# ---------------------------------------------------------------------------
# Tool filter: --allow-tools and --deny-tools
# ---------------------------------------------------------------------------

class ToolFilter:
    """``--allow-tools``/``--deny-tools``: a tool (by the server's name) is kept when it matches some ``allow``
    glob, or there is none, and no ``deny`` glob.  ``rewrite`` drops the others from tools/list (and warns once
    when ``allow`` matches none of the server's tools); ``claim`` answers their calls with an error (``send``).
    """

    def __init__(self, allow=(), deny=(), send=None):
        self.allow = tuple(allow)
        self.deny = tuple(deny)
        self.send = send
        self.active = bool(self.allow or self.deny)
        self.listed = []    # the server's tool names on the pages read so far
        self.warned = False

    def refusal(self, name):
        """The option (with its globs) that filters the tool ``name`` out, or None when it is kept."""
        if not self._allowed(name):
            return "ocx-proxy --allow-tools '%s'" % ",".join(self.allow)
        for glob in self.deny:
            if fnmatch.fnmatchcase(name, glob):
                return "ocx-proxy --deny-tools '%s'" % glob
        return None

    def _allowed(self, name):
        return not self.allow or any(fnmatch.fnmatchcase(name, glob) for glob in self.allow)

    def kept(self, tools):
        """The entries of ``tools`` not filtered out (those without a name stay)."""
        return [tool for tool in tools if not isinstance(tool, dict) or not isinstance(tool.get("name"), str)
                or self.refusal(tool["name"]) is None]

    def unmatched(self, names):
        """The warning when the allow list matches none of ``names`` (the server's tools), else None."""
        if not self.allow or any(self._allowed(name) for name in names):
            return None
        return "--allow-tools '%s' matches none of the server's %d tools: %s" % (
            ",".join(self.allow), len(names), shorten(", ".join(names), 2000) or "(none)")

    def rewrite(self, msg, params=None):
        result = msg.get("result") if isinstance(msg, dict) else None
        tools = result.get("tools") if isinstance(result, dict) else None
        if not isinstance(tools, list):
            return False
        if self.allow and not self.warned:
            if not (isinstance(params, dict) and params.get("cursor")):
                self.listed = []  # a first page
            self.listed += [tool["name"] for tool in tools if isinstance(tool, dict)
                            and isinstance(tool.get("name"), str)]
            if not result.get("nextCursor"):
                warning, self.listed = self.unmatched(self.listed), []
                self.warned = warning is not None
                if warning:
                    log.warning(warning)
        kept = self.kept(tools)
        if len(kept) == len(tools):
            return False
        result["tools"] = kept
        return True

    def claim(self, line, msgs, raws):
        if not self.active:
            return line, msgs, raws
        return take_messages(line, msgs, raws, self._is_refused, self._refuse)

    def _is_refused(self, msg):
        name = called_tool(msg)
        return name is not None and self.refusal(name) is not None

    def _refuse(self, msg):
        name = called_tool(msg)
        message = "tool '%s' is not available: %s" % (name, self.refusal(name))
        if "id" in msg:
            self.send(error_response(msg["id"], INVALID_PARAMS, message))
        else:
            log.warning("dropped a tools/call notification: %s" % message)


# ---------------------------------------------------------------------------
# Upstream supervisor: the upstream's states, its restarts, the client's handshake said again
# ---------------------------------------------------------------------------

REPLAY_ID_PREFIX = "ocx-proxy-replay-"
# Supervisor.state: where the upstream is in its life (see Supervisor.restart_or_give_up).
UPSTREAM_UP = "up"                  # client lines go to it as they come
UPSTREAM_RESTARTING = "restarting"  # it exited, or starts behind the catalog cache: client lines wait in
                                    # Supervisor.held until it takes the replayed initialize
UPSTREAM_DEAD = "dead"              # for good: requests are answered with Supervisor.dead_reason


class Supervisor:
    """The upstream's life: started, restarted when it exits (``--restart`` times) and re-initialized by
    replaying the client's handshake, or dead for good (``state``); initialized the same way when the client's
    initialize was answered from the catalog cache (``warm_up``).  ``paused()``: a new upstream starts with its
    reading paused; ``closing()``: no restart once shutdown began.
    """

    def __init__(self, loop, make_upstream, restarts, on_line, on_exit, paused, closing):
        self.loop = loop
        self.make_upstream = make_upstream
        self.restarts_left = restarts
        self.on_line = on_line
        self.on_exit = on_exit
        self.paused = paused
        self.closing = closing
        self.upstream = None
        self.generation = 0
        self.handshake = Handshake()     # shared by every upstream, replayed after a restart
        self.initialize_ok = False
        self.protocol_version = None
        self.server_name = None          # what the server's initialize answer (or the catalog cache's) calls it
        self.replaying = None            # replay request id while re-initializing
        self.warming = False             # ... the client's initialize, answered from the catalog cache
        self.state = UPSTREAM_UP
        self.held = []                   # client lines waiting for the restart to finish
        self.dead_reason = None

    def start(self):
        self.generation += 1
        self.upstream = self.make_upstream(self.loop, self.on_line, self.on_exit)
        self.upstream.handshake = self.handshake
        if self.paused():
            self.upstream.pause_reading()
        self.upstream.start()

    def note_answer(self, method, msg):
        if method == "initialize" and isinstance(msg.get("result"), dict):
            self.initialize_ok = True
            self.protocol_version = msg["result"].get("protocolVersion")
            self.server_name = (server_info(msg["result"]) or {}).get("name")

    def stop(self, signalled, finish):
        """Shutdown, the upstream's input closed: TERM 2 s on, KILL 2 s later (after a signal: KILL after
        KILL_GRACE), ``finish()`` 0.5 s after the KILL; nothing more once it exited."""
        self.loop.call_later(KILL_GRACE if signalled else 2.0, self._escalate, self.upstream, not signalled, finish)

    def _escalate(self, upstream, terminate, finish):
        if upstream.exited:
            return
        upstream.kill_tree(terminate)
        if terminate:
            self.loop.call_later(2.0, self._escalate, upstream, False, finish)
        else:
            self.loop.call_later(0.5, finish)

    def exit_reason(self, description):
        tail = list(self.upstream.stderr_tail)[-5:] if self.upstream is not None else []
        return description + (("; last stderr: " + " | ".join(tail)) if tail else "")

    def restart_or_give_up(self, reason):
        if self.held:
            # Their requests were just answered with errors: sending them later would run them anyway.
            log.warning("dropped %d client messages that were waiting for the %s" % (
                len(self.held), "server to start" if self.warming else "restart"))
            self.held = []
        self.replaying = None
        if self.upstream is not None:
            self.upstream.kill_tree()  # what the dead server left in its group must not outlive it
            self.upstream.reap()
        if self.restarts_left > 0:
            self.state = UPSTREAM_RESTARTING
            self.restarts_left -= 1
            delay = min(0.1 * self.generation, 2.0)
            log.info("restarting upstream in %.1fs (%d restarts left)" % (delay, self.restarts_left))
            self.loop.call_later(delay, self._restart)
        else:
            self.state = UPSTREAM_DEAD
            self.dead_reason = reason
            self.warming = False
            log.error("upstream is gone; requests will be answered with errors until the client exits")

    def _restart(self):
        if self.closing():
            return
        self.start()
        self._replay()

    def warm_up(self, result):
        """The client's initialize was answered for the server we started, from the catalog cache (``result``):
        the server gets it, replayed; the client's lines wait for its answer."""
        self.initialize_ok = True
        self.protocol_version = result.get("protocolVersion")
        self.server_name = (server_info(result) or {}).get("name")
        self.warming = True
        self.state = UPSTREAM_RESTARTING
        self._replay()

    def _replay(self):
        replaying = "%s%d" % (REPLAY_ID_PREFIX, self.generation)
        try:
            line = self.handshake.replay(replaying) if self.initialize_ok else None
        except (ValueError, TypeError) as exc:
            log.error("could not replay the client's initialize (%s); the new upstream is not initialized" % exc)
            line = None
        if line is None:
            return self._restart_done()
        self.replaying = replaying
        self.upstream.send(line + b"\n")

    def is_replay_answer(self, msg_id):
        return self.replaying is not None and msg_id == self.replaying

    def finish_replay(self, msg):
        refusal = Handshake.refusal(msg)
        if refusal and self.warming:
            log.error("the upstream refused the client's initialize (answered from the catalog cache): %s" % refusal)
        elif refusal:
            log.error("the restarted upstream refused the replayed initialize: %s" % refusal)
        elif not self.warming:
            log.info("upstream restarted and re-initialized")
        self.replaying = None
        self.warming = False
        initialized = self.handshake.initialized_line
        if initialized is not None:
            self.upstream.send(initialized + b"\n")
            self.held = [line for line in self.held if line != initialized]  # the client's own, said once
        self._restart_done()

    def _restart_done(self):
        self.state = UPSTREAM_UP
        held, self.held = self.held, []
        for line in held:
            self.upstream.send(line + b"\n")


# ---------------------------------------------------------------------------
# Catalog cache: the last catalog each server listed, answered while the server starts
# ---------------------------------------------------------------------------

CATALOG_DIR = "catalogs"              # in the spill directory: ~/.cache/ocx-proxy/catalogs by default
CATALOG_FORMAT = 1
CATALOG_ID_PREFIX = "ocx-proxy-catalog-"  # our own requests to the server: tools/list pages, a probe said again
MAX_CATALOG_BYTES = 32 * 1024 * 1024
LIST_CHANGED = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}


def _is_list_result(result):
    return isinstance(result, dict) and isinstance(result.get("tools"), list)


def _is_initialize_result(result):
    return (isinstance(result, dict) and isinstance(result.get("protocolVersion"), str)
            and isinstance(result.get("capabilities"), dict) and isinstance(result["capabilities"].get("tools"), dict))


def _is_unknown_method(error):
    return isinstance(error, dict) and error.get("code") == METHOD_NOT_FOUND and isinstance(error.get("message"), str)


# What a cache file may hold: the answers to these requests, each {"result": ...} or {"error": ...}.  A server
# that does not know server/discover (2026-07-28) is the one probe answer kept: it sends the client on to
# initialize at once; a result would start a stateless session, which nothing can tell of a changed catalog.
CATALOG_ANSWERS = {"initialize": ("result", _is_initialize_result), "tools/list": ("result", _is_list_result),
                   "server/discover": ("error", _is_unknown_method)}


def sha256_hex(data):
    """The sha256 of ``data`` in hex, by CPython's own sha256 module where it has one: hashlib loads OpenSSL
    (5 to 20 ms and 4 MB on the path of an answer from the catalog cache, against 0.5 ms)."""
    for name in ("_sha2", "_sha256"):  # Python 3.12 on, up to 3.11
        try:
            return __import__(name).sha256(data).hexdigest()
        except ImportError:
            pass
    import hashlib
    return hashlib.sha256(data).hexdigest()


def catalog_key(*parts):
    """The name of a cache file: the sha256 of ``parts`` (what changes a server's answers, secrets too: only the
    hash is ever written)."""
    return sha256_hex(dumps([CATALOG_FORMAT] + list(parts)).encode("utf-8", "surrogatepass"))


def _from_the_server(result):
    """False for the relay's own placeholder answer to an initialize (a login is pending): never cached."""
    info = server_info(result) or {}
    return info.get("name") != PLACEHOLDER_SERVER_NAME


def with_list_changed(result):
    """A copy of an initialize ``result`` whose tools capability says listChanged: a catalog answered from the
    cache may be followed by notifications/tools/list_changed."""
    result = dict(result, capabilities=dict(result["capabilities"]))
    result["capabilities"]["tools"] = dict(result["capabilities"]["tools"], listChanged=True)
    return result


class CatalogStore:
    """The cache files: ``<key>.json`` in ``catalogs`` under the spill directory (0700, files 0600), each the
    answers one server gave to the requests of CATALOG_ANSWERS.  A file that is not one of ours is ignored with
    one warning; a file that cannot be written, too."""

    def __init__(self, spill):
        self.spill = spill

    def _dir(self, create):
        where = self.spill.open_dir(create)
        if where is None:
            return None
        with where:
            return where.subdir(CATALOG_DIR, "catalog cache directory", create)

    def path(self, key):
        return os.path.join(self.spill.directory or self.spill.output_dir, CATALOG_DIR, key + ".json")

    def load(self, key):
        """The answers saved under ``key`` ({method: answer}), or None."""
        try:
            where = self._dir(create=False)
            if where is None:
                return None
            with where:
                try:
                    fd, info = where.open_read(key + ".json")
                except FileNotFoundError:
                    return None
                with os.fdopen(fd, "rb") as handle:
                    if not stat.S_ISREG(info.st_mode) or not owned_by_us(info):
                        raise ValueError("not a regular file of ours")
                    data = read_at_most(handle, MAX_CATALOG_BYTES + 1)
            if len(data) > MAX_CATALOG_BYTES:
                raise ValueError("larger than %d bytes" % MAX_CATALOG_BYTES)
            return self._answers(parse_message(data, long_numbers=True), key)
        except (OSError, ValueError) as exc:
            reason = "a symbolic link" if getattr(exc, "errno", None) in (errno.ELOOP, errno.EMLINK) else exc
            log.warning("ignored the catalog cache file %s: %s" % (self.path(key), reason))
            return None

    @staticmethod
    def _answers(doc, key):
        if not isinstance(doc, dict) or doc.get("format") != CATALOG_FORMAT:
            raise ValueError("not a catalog cache file of format %d" % CATALOG_FORMAT)
        if doc.get("key") != key:
            raise ValueError("it was saved under another key")
        answers = doc.get("answers")
        if not isinstance(answers, dict) or not answers:
            raise ValueError("no answers")
        for method, answer in answers.items():
            member, valid = CATALOG_ANSWERS.get(method, (None, None))
            if valid is None or not isinstance(answer, dict) or not valid(answer.get(member)):
                raise ValueError("its answer to %s is not one we keep" % shorten(str(method), 60))
        return answers

    def save(self, key, answers):
        doc = {"ocx-proxy": "catalog cache", "format": CATALOG_FORMAT, "key": key, "saved": utc_now_iso(),
               "answers": answers}
        try:
            data = dumps(doc).encode("utf-8", "surrogatepass")
            with self._dir(create=True) as where:
                where.write(key + ".json", data)
        except (OSError, ValueError, TypeError) as exc:
            log.warning("could not save the catalog cache file %s: %s" % (self.path(key), exc))

    def remove(self, key):
        try:
            where = self._dir(create=False)
            if where is not None:
                with where:
                    where.remove(key + ".json")
        except FileNotFoundError:
            pass
        except OSError as exc:
            log.warning("could not remove the catalog cache file %s: %s" % (self.path(key), exc))


class CatalogPages:
    """The pages of one tools/list, first to last: ``add`` returns the whole catalog (the first page's result
    holding every page's tools) once the last page came, else None; a page out of turn starts it over."""

    def __init__(self):
        self.whole = None
        self.next = None

    def add(self, result, cursor):
        if not _is_list_result(result) or not isinstance(result.get("nextCursor") or "", str):
            self.whole = None
        elif not cursor:
            self.whole = dict(result, tools=list(result["tools"]))
        elif self.whole is not None and cursor == self.next:
            self.whole["tools"] += result["tools"]
        else:
            self.whole = None
        if self.whole is None:
            return None
        self.next = result.get("nextCursor")
        if self.next:
            return None
        whole, self.whole = self.whole, None
        whole.pop("nextCursor", None)
        return whole


class CatalogCache:
    """The relay's catalog cache (off when ``identity`` is None: --no-catalog-cache).

    A session's key (``catalog_key``) is what changes what the server lists: ``identity`` (the server's command
    or URL, its working directory, --env pairs and headers), ``settings()`` (the relay options that change
    tools/list) and the protocol version and client name of the client's initialize.  A first start is relayed
    as ever; the server's initialize result and a whole tools/list (``record``, a Rewrite that sees each page
    as the server wrote it) are saved.  With an entry, ``claim`` answers the client's initialize (saying
    ``tools.listChanged``) and then its tools/list at once, while the server starts: ``supervisor.warm_up``
    replays the client's initialize to it, holding the client's other lines until it answers; then
    ``check_server`` lists its catalog with requests of ours (``take_answer`` takes their answers), saves it, and
    sends the client notifications/tools/list_changed when it differs from the one the client was given.
    ``answer(msg)`` writes to the client, ``send_upstream(line)`` to the server; ``fixes``: the relay's
    Rewrites of tools/list, applied to a catalog answered from here as to the server's own.
    """

    def __init__(self, loop, store, identity, settings, supervisor, requests, fixes, answer, send_upstream):
        self.loop = loop
        self.store = store
        self.identity = identity
        self.settings = settings
        self.supervisor = supervisor
        self.requests = requests
        self.fixes = fixes
        self.answer = answer
        self.send_upstream = send_upstream
        self.record = Rewrite("note tools/list for the catalog cache", self._page_seen, lambda msg, params: False)
        self.key = None            # the session's, once the client's initialize came (None: no cache)
        self.saved = None          # the answers saved (or loaded) under it
        self.asked = False         # the client's first initialize came
        self.initialize_msg = None  # ... and can be answered from here
        self.given = None          # the answers the client got from here; the server is checked against them
        self.server_result = None  # the server's initialize result, when it may be saved
        self.pages = CatalogPages()     # the client's tools/list, as the server answers it
        self.last_line = None
        self.refresh = None        # CatalogPages of our own tools/list while the server is checked
        self.probes = {}           # id_key of a client's server/discover -> (its key, its cached answer or None)
        self.own = {}              # id_key of our own requests -> (handler, argument)
        self.numbers = itertools.count(1)

    # -- the client's requests ------------------------------------------------------------------------------------

    def claim(self, line, msgs, raws):
        """``take_messages`` of what is answered from the cache: the client's initialize and a probe its server
        did not know (when saved), tools/list until the server took the replayed initialize."""
        if self.identity is None:
            return line, msgs, raws
        for msg in msgs:
            if "id" in msg and msg.get("method") in ("initialize", "server/discover"):
                self._look_up(msg)
        return take_messages(line, msgs, raws, self._ours, self._answer)

    def _look_up(self, msg):
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        if msg["method"] == "server/discover":
            meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
            info = meta.get(META_CLIENT_INFO) if isinstance(meta.get(META_CLIENT_INFO), dict) else {}
            key = self._key("server/discover", request_version(params), info.get("name"))
            if key is not None:
                answers = self.store.load(key) or {}
                self.probes[id_key(msg["id"])] = (key, answers.get("server/discover"))
            return
        if self.asked:
            return
        self.asked = True
        info = params.get("clientInfo") if isinstance(params.get("clientInfo"), dict) else {}
        self.key = self._key("initialize", params.get("protocolVersion"), info.get("name"))
        answers = self.store.load(self.key) if self.key is not None else None
        if answers is not None and "initialize" in answers and "tools/list" in answers:
            self.saved = answers
            if self.supervisor.state == UPSTREAM_UP:  # a server that is gone already: its error, as ever
                self.initialize_msg = msg

    def _key(self, method, version, client):
        if not isinstance(version, str) or not isinstance(client, str):
            return None
        return catalog_key(self.identity, self.settings(), method, version, client)

    def _ours(self, msg):
        method = msg.get("method")
        if method == "initialize":
            return msg is self.initialize_msg
        if method == "server/discover":
            probe = self.probes.get(id_key(msg.get("id")))
            return probe is not None and probe[1] is not None
        params = msg.get("params")
        return (method == "tools/list" and "id" in msg and self.given is not None and self.supervisor.warming
                and not (isinstance(params, dict) and (params.get("cursor") or request_version(params))))

    def _answer(self, msg):
        self.requests.take(id_key(msg["id"]))
        method = msg["method"]
        if method == "server/discover":
            key, answer = self.probes.pop(id_key(msg["id"]))
            self.answer({"jsonrpc": "2.0", "id": msg["id"], "error": answer["error"]})
            self._ask(dict(msg), self._probe_answered, (key, answer))  # the server's answer keeps the entry true
        elif method == "initialize":
            self.initialize_msg = None
            self.given = self.saved
            result = self.given["initialize"]["result"]
            self.answer(result_response(msg["id"], with_list_changed(result)))
            name = (server_info(result) or {}).get("name")
            log.info("catalog cache: initialize and tools/list answered with what the server%s listed last, while "
                     "it starts" % (" %s" % name if isinstance(name, str) else ""))
            self.supervisor.warm_up(result)
        else:
            line = encode_message(result_response(msg["id"], self.given["tools/list"]["result"]))[:-1]
            reply = parse_message(line, long_numbers=True)  # a copy for the fixes to change
            apply_rewrites(self.fixes, line, reply, msg.get("params"))
            self.answer(reply)

    # -- the server's answers ------------------------------------------------------------------------------------

    def note_answer(self, pending, msg):
        """The server answered the client's ``pending`` request with ``msg``: its initialize result or a probe it
        did not know is noted (the relay's own placeholder while a login is pending never is)."""
        if pending.method == "server/discover":
            key, _ = self.probes.pop(id_key(pending.msg_id), (None, None))
            if key is not None and _is_unknown_method(msg.get("error")):
                self.store.save(key, {"server/discover": {"error": msg["error"]}})
        elif pending.method == "initialize" and self.key is not None and _is_initialize_result(msg.get("result")):
            self.server_result = msg["result"] if _from_the_server(msg["result"]) else None

    def _page_seen(self, line, params):
        """``record``: a tools/list page as the server wrote it, looked at once the client has it."""
        if self.key is not None and line is not self.last_line and not request_version(params):
            self.last_line = line
            self.loop.post(self._page, line, params)
        return False

    def _page(self, line, params):
        self.last_line = None
        try:
            msg = parse_message(line, long_numbers=True)
        except ValueError:
            msg = {}
        result = msg.get("result") if isinstance(msg, dict) else None
        whole = self.pages.add(result, params.get("cursor") if isinstance(params, dict) else None)
        if whole is not None and self.server_result is not None:
            self._save(whole)

    def _save(self, catalog):
        answers = {"initialize": {"result": self.server_result}, "tools/list": {"result": catalog}}
        if answers != self.saved:
            self.store.save(self.key, answers)
            self.saved = answers

    def check_server(self, msg):
        """The server answered the replayed initialize (``msg``): after a start behind the cache, it is checked
        against what the client was given.  A server that refused it loses its entry."""
        result = msg.get("result")
        if self.given is None or self.refresh is not None or not _from_the_server(result):
            return
        if not _is_initialize_result(result):
            if "error" not in msg:
                log.warning("catalog cache: the server's initialize answer declares no tools now; its entry is removed")
            self.store.remove(self.key)
            self.given = self.saved = None
            return
        given = self.given["initialize"]["result"]
        changed = [name for name, old, new in (
            ("protocolVersion", given["protocolVersion"], result["protocolVersion"]),
            ("capabilities", with_list_changed(given)["capabilities"], with_list_changed(result)["capabilities"]))
            if old != new]
        if changed:
            log.warning("catalog cache: the server now answers initialize with other %s than the client was given "
                        "from the cache; the cache is updated, this session keeps what the client has"
                        % " and ".join(changed))
        self.server_result = result
        self.refresh = CatalogPages()
        self._ask({"jsonrpc": "2.0", "method": "tools/list", "params": {}}, self._refreshed, None)

    def _refreshed(self, msg, cursor):
        if "result" not in msg:
            log.warning("catalog cache: the server's tools/list failed (%s); the client keeps the catalog it has"
                        % shorten(dumps(msg.get("error")), 300))
            return
        whole = self.refresh.add(msg["result"], cursor)
        if whole is None and self.refresh.whole is not None:
            return self._ask({"jsonrpc": "2.0", "method": "tools/list", "params": {"cursor": self.refresh.next}},
                             self._refreshed, self.refresh.next)
        if whole is None:
            log.warning("catalog cache: the server's tools/list is not a whole catalog; the client keeps the "
                        "catalog it has")
            return
        self._save(whole)
        if whole == self.given["tools/list"]["result"]:
            log.info("catalog cache: the server is up and lists the catalog the client was given")
        else:
            log.info("catalog cache: the server is up and lists another catalog than the client was given; the "
                     "cache is updated, the client told (notifications/tools/list_changed)")
            self.answer(dict(LIST_CHANGED))

    def _probe_answered(self, msg, probe):
        key, answer = probe
        if "result" in msg:
            self.store.remove(key)   # it speaks 2026-07-28 now: its probes wait for it from now on
        elif _is_unknown_method(msg.get("error")) and msg["error"] != answer["error"]:
            self.store.save(key, {"server/discover": {"error": msg["error"]}})

    # -- our own requests ------------------------------------------------------------------------------------------

    def _ask(self, request, handler, argument):
        request["id"] = "%s%d" % (CATALOG_ID_PREFIX, next(self.numbers))
        self.own[id_key(request["id"])] = (handler, argument)
        self.send_upstream(encode_message(request)[:-1])

    def owns(self, msg_id):
        return id_key(msg_id) in self.own

    def take_answer(self, msg):
        """Handle ``msg`` when it answers a request of ours: True when it did (it is not for the client)."""
        own = self.own.pop(id_key(msg.get("id")), None) if "method" not in msg else None
        if own is None:
            return False
        handler, argument = own
        handler(msg, argument)
        return True


# ---------------------------------------------------------------------------
# Schema keywords: what the argument check asserts and skips, what each keyword asks of a value, in code and in words
# ---------------------------------------------------------------------------
# The keywords understood (CHECK_KEYWORDS) and those that only name or describe (CHECK_ANNOTATIONS), a JSON Schema
# pattern read as a Python regex, number ranges and counts, and what a schema wants in the few words a finding shows.

CHECK_STEPS = 50000       # schema nodes the check of one call visits at most (~0.1 s); past that it cannot tell
CHECK_COMPILED = 5000     # schema objects the fast pass reads and compiles for one tool at most (~0.1 s, once)
CHECK_DEPTH = 150         # how deep it follows the arguments and $refs
CHECK_VALUE_CHARS = 60    # what a finding shows of a value or a pattern
# A pattern is tried on a string while (the string's length) ** (the pattern's open-ended quantifiers) stays under this:
# the worst case of Python's backtracking stays far from a stall.
CHECK_PATTERN_STEPS = 10 ** 6
# What the check asserts: JSON Schema 2020-12, with draft 4's boolean exclusiveMinimum/exclusiveMaximum, the array
# form of items with additionalItems (drafts 4 to 2019-09), draft 7's dependencies, and OpenAPI's nullable.
CHECK_KEYWORDS = ("type", "nullable", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                  "multipleOf", "minLength", "maxLength", "pattern", "items", "prefixItems", "additionalItems",
                  "contains", "minContains", "maxContains", "minItems", "maxItems", "uniqueItems", "properties",
                  "patternProperties", "additionalProperties", "propertyNames", "required", "dependentRequired",
                  "dependentSchemas", "dependencies", "minProperties", "maxProperties", "allOf", "anyOf", "oneOf",
                  "not", "if", "then", "else", "$ref")
# What names, describes or holds definitions: never a reason to refuse.  ``format`` is one, whatever it names (an
# annotation by default in 2020-12).
CHECK_ANNOTATIONS = ("$schema", "$id", "$anchor", "$comment", "$defs", "definitions", "title", "description",
                     "default", "examples", "example", "deprecated", "readOnly", "writeOnly", "format",
                     "contentEncoding", "contentMediaType", "contentSchema", "$vocabulary")
CHECK_KNOWN = frozenset(CHECK_KEYWORDS + CHECK_ANNOTATIONS)
# What some validators assert (format assertion, content vocabulary): under a negation, the check cannot tell.
CHECK_PLAIN = CHECK_KNOWN - {"format", "contentEncoding", "contentMediaType", "contentSchema"}
CHECK_NOTES = CHECK_PLAIN.intersection(CHECK_ANNOTATIONS)   # what a bare {"$ref": ...} may hold beside it
# What a bare string schema holds: its tests and what only names or describes it.
STRING_SCHEMA = frozenset(["type", "minLength", "maxLength", "pattern"]).union(CHECK_ANNOTATIONS)
BARE_REF = CHECK_NOTES.union(["$ref"])   # what a bare {"$ref": ...} holds
RANGE_KEYWORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
JSON_KINDS = {type(None): "null", bool: "boolean", int: "integer", str: "string", list: "array", dict: "object",
              LongNumber: "integer"}
JSON_TYPES = frozenset(JSON_KINDS.values()) | {"number"}
# Drafts in which the siblings of a $ref are ignored (2019-09 on apply them).
REF_ALONE_RE = re.compile(r"json-schema\.org/draft-0[3-7]/")
# What ECMA-262's \s matches (WhiteSpace, LineTerminator): Python's \s is another set.
ECMA_SPACE = "\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
QUANTIFIER_RE = re.compile(r"[*+?]|\{(\d+)(,(\d*))?\}")
OPEN_QUANTIFIER_SPAN = 16   # a {n,m} with m - n above this counts as open-ended
GROUP_STARTS = ("(?:", "(?=", "(?!", "(?<=", "(?<!")
ABSENT = object()    # what a lookup gives for a name that is not there
SKIPPED = object()   # a $ref the check does not follow


def json_kind(value):
    """The JSON Schema type of a parsed JSON value ("integer" for 3.0 too)."""
    if value.__class__ is float:
        return "integer" if value.is_integer() else "number"
    return JSON_KINDS.get(value.__class__)


def json_key(value):
    """A hashable stand-in for a JSON value, the same for values JSON Schema calls equal (1 and 1.0, an object
    whatever its key order), not for true and 1."""
    kind = value.__class__
    if kind is dict:
        return ("object", frozenset((key, json_key(item)) for key, item in value.items()))
    if kind is list:
        return ("array", tuple(json_key(item) for item in value))
    if kind is int or kind is float:
        return ("number", value)
    return (kind.__name__, value.text if kind is LongNumber else value)


def value_text(value):
    """A value as a finding shows it: its JSON, cut to CHECK_VALUE_CHARS."""
    try:
        text = dumps(value)
    except ValueError:   # 1e999, read as infinity
        text = repr(value)
    return shorten(text, CHECK_VALUE_CHARS)


def got(value, kind=False):
    """"got 30", or with ``kind`` "got integer 5"."""
    named = json_kind(value)
    return "got %s%s" % (named + " " if kind and named not in (None, "null", "boolean") else "", value_text(value))


def ecma_escape(rest, in_class):
    """``(Python text, characters used)`` for the escape that starts ``rest`` (the text after a backslash) in a
    pattern, or None where Python reads it otherwise."""
    char = rest[:1]
    if char == "s" and in_class and rest[1:2] == "-":
        return None   # [\s-x]: ECMA reads a "-" there, Python a range
    if char == "s" or char == "S" and not in_class:
        body = ECMA_SPACE if in_class else "[%s%s]" % ("" if char == "s" else "^", ECMA_SPACE)
        return body, 1
    if char in ("x", "u"):
        digits = 2 if char == "x" else 4
        hexa = rest[1:1 + digits]
        return ("\\" + char + hexa, 1 + digits) if len(hexa) == digits and all(
            c in "0123456789abcdefABCDEF" for c in hexa) else None
    if char == "0":
        return None if rest[1:2].isdigit() else ("\\0", 1)
    if char and (char in "dDwWbBtnrfv" or not (char.isascii() and char.isalnum())):
        return "\\" + char, 1
    return None  # \S in a class, \p{..}, \c, \k, a backreference, a trailing backslash: read otherwise


def ecma_regex(pattern):
    """``(compiled, open quantifiers)``: a JSON Schema ``pattern`` (ECMA-262) as a Python regex matching the same
    strings (ASCII \\d \\w \\b, ECMA's \\s), or None when it uses what Python reads otherwise (``(?i)``, ``[^]``,
    ``\\p{..}``, backreferences...) or could take exponential time (a quantified group that holds a quantifier or an
    alternation)."""
    if not isinstance(pattern, str):
        return None
    return _ecma_regex(pattern)


@functools.lru_cache(maxsize=256)
def _ecma_regex(pattern):
    out, groups, opened, i, in_class, risky_group = [], [], 0, 0, False, False
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            escape = ecma_escape(pattern[i + 1:i + 6], in_class)
            if escape is None:
                return None
            out.append(escape[0])
            i, risky_group = i + 1 + escape[1], False
        elif in_class:
            in_class = char != "]"
            out.append("\\[" if char == "[" else char)   # a "[" in a class: Python warns of nested sets
            i += 1
        elif char in "*+?{":
            quantifier = QUANTIFIER_RE.match(pattern, i)
            if quantifier is None and char == "{":  # a literal brace for both ("{,5}" is one in ECMA)
                out.append("\\{")
                i, risky_group = i + 1, False
                continue
            if quantifier is None or risky_group or i == 0:
                return None
            low, high = quantifier.group(1), quantifier.group(3)
            opened += char in "*+" or bool(quantifier.group(2)) and (
                not high or int(high) - int(low) > OPEN_QUANTIFIER_SPAN)
            if groups:
                groups[-1] = True
            i = quantifier.end() + (pattern[quantifier.end():quantifier.end() + 1] == "?")
            out.append(pattern[quantifier.start():i])
            if QUANTIFIER_RE.match(pattern, i) and pattern[i] != "{":   # a quantifier on a quantifier
                return None
            risky_group = False
        elif char == "(":
            head = next((h for h in GROUP_STARTS if pattern.startswith(h, i)), "(" if pattern[i + 1:i + 2] != "?"
                        else None)
            if head is None:
                return None
            out.append(head)
            groups.append(False)
            i, risky_group = i + len(head), False
        elif char == ")":
            if not groups:
                return None
            risky_group = groups.pop()
            if groups and risky_group:
                groups[-1] = True
            out.append(")")
            i += 1
        else:
            if char == "|" and groups:
                groups[-1] = True
            in_class = char == "["
            if in_class and pattern[i + 1:i + 2] == "^":
                char, i = "[^", i + 1
            if in_class and pattern[i + 1:i + 2] == "]":   # [] and [^]: nothing and anything in ECMA
                return None
            out.append(char)
            i, risky_group = i + 1, False
    if in_class or groups:
        return None
    try:
        return re.compile("".join(out), re.ASCII), opened
    except (re.error, OverflowError, RecursionError):
        return None


def number_limit(value):
    return value if value.__class__ in (int, float) and math.isfinite(value) else None


def range_end(schema, inclusive, exclusive, lower):
    """``(limit, open)`` at one end of a schema's number range (``lower``: its minimum), or None; the stricter of two
    limits; draft 4's boolean exclusiveMinimum/exclusiveMaximum too."""
    ends = []
    flag = schema.get(exclusive)
    if number_limit(schema.get(inclusive)) is not None:
        ends.append((schema[inclusive], flag is True))
    if number_limit(flag) is not None:
        ends.append((flag, True))
    if not ends:
        return None
    return max(ends) if lower else min(ends, key=lambda end: (end[0], not end[1]))


def count_limit(value):
    """A count keyword's value (minLength, maxItems...): a whole number from 0, 5.0 too; else None."""
    if value.__class__ is float and value.is_integer():
        value = int(value)
    return value if value.__class__ is int and value >= 0 else None


def outside(limits, count):
    """Whether ``count`` is outside ``(at least, at most)`` (None: no such limit)."""
    low, high = limits
    return low is not None and count < low or high is not None and count > high


def multiple_of(value, step):
    """Whether the number ``value`` is a multiple of ``step``, in decimal (0.3 is one of 0.1); None when it cannot
    be told (a ``step`` that is no positive number, a quotient beyond decimal's precision)."""
    if number_limit(step) is None or not step > 0:
        return None
    if value.__class__ is int and step.__class__ is int:
        return value % step == 0
    import decimal  # loaded on the first multipleOf of a fraction
    try:
        return decimal.Decimal(repr(value)) % decimal.Decimal(repr(step)) == 0
    except decimal.DecimalException:
        return None


def count_text(schema, low_key, high_key, word, words):
    """"of 1..10 characters", "of at least 1 character", "of at most 5 items" (``word``/``words``: singular and
    plural, after their preposition); "" when the schema sets neither."""
    low, high = count_limit(schema.get(low_key)), count_limit(schema.get(high_key))
    if low is not None and high is not None:
        return "%s %d..%d %s" % (word.split()[0], low, high, words)
    if low is None and high is None:
        return ""
    number = high if low is None else low
    return "%s at %s %d %s" % (word.split()[0], "most" if low is None else "least", number,
                               word.split()[1] if number == 1 else words)


def range_text(schema):
    """"1..14", ">= 0", "> 0 and <= 1", or "" for a schema without a number range."""
    low = range_end(schema, "minimum", "exclusiveMinimum", True)
    high = range_end(schema, "maximum", "exclusiveMaximum", False)
    if low and high and not low[1] and not high[1]:
        return "%s..%s" % (value_text(low[0]), value_text(high[0]))
    return " and ".join(("%s %s" % ((">" if end[1] else ">=") if end is low else ("<" if end[1] else "<="),
                                    value_text(end[0]))) for end in (low, high) if end)


def wanted(schema):
    """What a schema asks of a value itself, in a few words: "integer 1..14", "string of at most 5 characters",
    'one of "c", "f"'."""
    if schema is False:
        return "no value (nothing is allowed here)"
    if not isinstance(schema, dict):
        return "any value"
    if "const" in schema:
        return "exactly " + value_text(schema["const"])
    words = []
    if isinstance(schema.get("enum"), list):
        words.append("one of " + note_names([value_text(value) for value in schema["enum"][:NOTE_NAMES + 1]]))
    else:
        kinds = schema.get("type")
        kinds = [kinds] if isinstance(kinds, str) else [k for k in kinds if isinstance(k, str)] \
            if isinstance(kinds, list) else []
        if kinds and schema.get("nullable") is True and "null" not in kinds:
            kinds.append("null")
        words.append(" or ".join(kinds))
    words += [range_text(schema), "multiple of " + value_text(schema["multipleOf"]) if "multipleOf" in schema else "",
              count_text(schema, "minLength", "maxLength", "of character", "characters"),
              "matching " + shorten(schema["pattern"], CHECK_VALUE_CHARS) if isinstance(schema.get("pattern"), str)
              else "", count_text(schema, "minItems", "maxItems", "of item", "items"),
              "with unique items" if schema.get("uniqueItems") is True else "",
              count_text(schema, "minProperties", "maxProperties", "with property", "properties")]
    text = " ".join(word for word in words if word)
    if schema_properties(schema) or names_in(schema, "required"):   # an object's: what it requires and takes
        return "%s (%s)" % (text, alternative(schema)) if text else alternative(schema)
    return text or "any value"


def nested_id(schema):
    """Whether a subschema below the root of ``schema`` has an ``$id``: its $refs would mean another document."""
    stack = [(schema, True)]
    while stack:
        node, root = stack.pop()
        if not isinstance(node, dict):
            continue
        if not root and isinstance(node.get("$id"), str):
            return True
        for key in SUBSCHEMA_KEYS.intersection(node):
            value = node[key]
            if key in SCHEMA_KEYWORDS_MAP and isinstance(value, dict):
                stack.extend((sub, False) for sub in value.values())
            elif isinstance(value, list):
                stack.extend((sub, False) for sub in value)
            else:
                stack.append((value, False))
    return False


# ---------------------------------------------------------------------------
# Argument check: a tool's declared inputSchema against a call's arguments, a fast pass, then the long way's findings
# ---------------------------------------------------------------------------
# Standard library only, and only what it understands can refuse (SchemaCheck): a finding names a JSON pointer into
# the arguments, what the schema wants there and what came ("/days: integer 1..14, got 30").

class Unsure(Exception):
    """The check cannot tell (the schema too deep or too costly to follow): the call goes on unchanged."""


class _Inexact(Exception):
    """The check skipped what it does not understand where a negation depends on it (``SchemaCheck.strict``)."""


class _Miss(Exception):
    """The first finding of a ``SchemaCheck._fits`` test: nothing more to look at."""


class _FirstMiss:
    """Where ``_fits`` collects findings: the first one ends the test."""

    def append(self, finding):
        raise _Miss()


FIRST_MISS = _FirstMiss()


def said(text):
    """A finding's words: ``text``, or what it gives when it is a function (the words are made only for a finding
    that is kept, never for one that only tells an alternative does not fit)."""
    return text() if callable(text) else text


def pointer_text(where):
    """The JSON pointer of ``where``, "" or ``(parent, name or index)``: made only for a finding."""
    parts = []
    while where:
        where, part = where
        parts.append(part)
    return json_pointer(*reversed(parts))


# -- the fast pass: a schema compiled into one test per schema object, for arguments that fit -------------------------
# Most calls fit.  The fast pass tells so without the long way's bookkeeping (where, findings, steps): each schema
# object becomes one small function, True when the value fits and the long way could not have ended otherwise
# (``SchemaCheck.fast_pass``).  False says nothing: the long way (``SchemaCheck._node``) decides and finds the findings.
# A schema object with what the fast pass leaves to the long way (a negation, oneOf, if, contains, prefixItems,
# patternProperties, a $ref beside other keywords...) has no test, and nor has a schema that holds it.

CLASSES_OF = {"null": (type(None),), "boolean": (bool,), "integer": (int, LongNumber), "number": (float,),
              "string": (str,), "array": (list,), "object": (dict,)}   # a JSON type's Python classes, as parsed
ALL_CLASSES = frozenset(itertools.chain(*CLASSES_OF.values()))


class PassTest(collections.namedtuple("PassTest", "test depth steps")):
    """A schema object compiled for the fast pass.  ``test(value)``: True only when the value fits (None: any value
    fits); ``depth``: how deep the long way goes below it; ``steps``: the most steps the long way takes on one value
    of it, besides those its arrays and open objects take from the call's budget as they are tested."""


ANY_PASS = PassTest(None, 0, 1)


def never(value):
    """The test of a value that never fits: false (the long way says why)."""
    return False


NEVER_PASS = PassTest(never, 0, 1)


def type_test(classes):
    """The value's Python class is one of ``classes``."""
    if len(classes) == 1:
        (only,) = classes
        return lambda value: value.__class__ is only
    return lambda value: value.__class__ in classes


def class_test(tests):
    """The test of a value by its Python class: ``tests`` {class: its test, None for any value of it}; a class not
    there fails.  Each test checks the class itself."""
    if all(test is None for test in tests.values()):
        return type_test(frozenset(tests))
    if len(tests) == 1:
        return next(iter(tests.values()))

    def test(value):
        each = tests.get(value.__class__, never)
        return each is None or each(value)
    return test


def values_test(keys, tests):
    """The value is one of ``keys`` (``json_key``s: an enum, a const) and its class's test in ``tests`` (see
    class_test) lets it through."""
    if all(key[0] == "str" for key in keys):   # the commonest enum: strings only
        if str not in tests:
            return never
        strings, then = frozenset(key[1] for key in keys), tests[str]
        if then is None:
            return lambda value: value.__class__ is str and value in strings
        return lambda value: value.__class__ is str and value in strings and then(value)
    then = class_test(tests)
    return lambda value: json_key(value) in keys and then(value)


def string_test(lengths, pattern, longest):
    """A string within ``lengths`` ((at least, at most), see outside; None: any length) that ``pattern`` finds a
    match in (None: no pattern); one longer than ``longest`` is left to the long way (CHECK_PATTERN_STEPS)."""
    if pattern is None:
        return lambda value: value.__class__ is str and not outside(lengths, len(value))
    search = pattern[0].search
    if lengths is None:
        return lambda value: value.__class__ is str and len(value) <= longest and search(value) is not None
    return lambda value: value.__class__ is str and len(value) <= longest and not outside(lengths, len(value)) and \
        search(value) is not None


def number_test(python_class, low, high, step):
    """A number of the Python class ``python_class`` within ``low`` and ``high`` ((limit, open) or None), a multiple
    of the whole number ``step`` (None: any)."""
    low_limit, low_open = low or (-math.inf, False)
    high_limit, high_open = high or (math.inf, False)

    def test(value):
        return value.__class__ is python_class and (low_limit < value or not low_open and value == low_limit) and (
            value < high_limit or not high_open and value == high_limit) and (step is None or value % step == 0)
    return test


def array_test(sizes, unique, item, steps, budget):
    """An array of as many items as ``sizes`` allows, no two equal if ``unique``, each fitting ``item`` (None: any
    item).  ``steps``: what the long way takes per item, out of ``budget`` (the call's steps left, a list of one
    number) before they are tested."""
    def test(items):
        if items.__class__ is not list or sizes is not None and outside(sizes, len(items)) or unique and len(
                set(map(json_key, items))) < len(items):
            return False
        if item is None:
            return True
        budget[0] -= len(items) * steps
        return budget[0] >= 0 and all(map(item, items))
    return test


def object_test(counts, members, extra, required, steps, budget):
    """An object of as many members as ``counts`` allows, holding the names ``required``, each member fitting its
    test in ``members`` (None: any value) and any other one ``extra`` (None: any; ``never``: none allowed).  An
    ``extra`` test takes ``steps`` per member out of ``budget`` (see array_test)."""
    required = tuple(required)   # a few names: looked up one by one, faster than a set comparison
    counted = extra is not None and extra is not never

    def test(value):
        if value.__class__ is not dict or counts is not None and outside(counts, len(value)):
            return False
        for name in required:
            if name not in value:
                return False
        if counted:
            budget[0] -= len(value) * steps
            if budget[0] < 0:
                return False
        for name in value:
            member = members.get(name, extra)
            if member is not None and not member(value[name]):
                return False
        return True
    return test


def combined_test(first, all_of, any_of):
    """The value fits ``first`` (None: anything), every test of ``all_of`` and one of ``any_of`` at least (None in
    either: a subschema any value fits)."""
    tests = [test for test in all_of if test is not None]
    if any_of and None not in any_of:
        tests.append(lambda value: any(test(value) for test in any_of))
    if first is not None:
        tests.insert(0, first)
    if len(tests) < 2:
        return tests[0] if tests else None
    return lambda value: all(test(value) for test in tests)


class SchemaNode:
    """One schema object of a tool's inputSchema, read once (at its first use by a SchemaCheck) into what the check
    tests for each call.  ``inexact``: it holds what the check skips (an unknown keyword, format, a malformed value,
    a pattern or a $ref it does not read): under a negation the check cannot tell (``SchemaCheck.strict``).
    ``passes``: the test of a bare type, enum or string schema, with no call of ``SchemaCheck._node`` (``fast``: the
    Python classes or the strings it lets through; ``text``: a bare string schema).  ``compiled``: its PassTest for
    the fast pass (None: it has none), made at the first call (``SchemaCheck._compiled``)."""

    __slots__ = ("schema", "inexact", "ref", "alias", "kinds", "nullable", "enum", "const", "low", "high", "step",
                 "lengths", "pattern", "sizes", "unique", "counts", "properties", "patterns", "extra", "required",
                 "dependent", "names", "prefix", "rest", "contains", "combined", "fast", "text", "longest", "values",
                 "members", "items", "plain", "children", "compiled")

    def __init__(self, check, schema):
        self.schema = schema
        self.inexact = not CHECK_PLAIN.issuperset(schema)
        self.ref = check.target(schema["$ref"]) if "$ref" in schema else None
        if self.ref is SKIPPED:
            self.inexact = True
        self.nullable = schema.get("nullable") is True
        self.kinds = self._kinds(schema.get("type"))
        self.enum = self._enum(schema.get("enum"))
        self.const = json_key(schema["const"]) if "const" in schema else ABSENT
        self._number(schema)
        self.lengths = self._counts(schema, "minLength", "maxLength")
        self.pattern = self._pattern(schema.get("pattern")) if "pattern" in schema else None
        self.sizes = self._counts(schema, "minItems", "maxItems")
        self.unique = schema.get("uniqueItems") is True
        self.counts = self._counts(schema, "minProperties", "maxProperties")
        self._members(check, schema)
        self._items(check, schema)
        self.combined = self._combined(schema)
        self.fast = self._fast(schema)
        self.text = self.kinds == {"string"} and STRING_SCHEMA.issuperset(schema) and (
            self.pattern is not None or "pattern" not in schema)
        # The longest string its pattern is tried on (CHECK_PATTERN_STEPS).
        self.longest = int(CHECK_PATTERN_STEPS ** (1.0 / max(1, self.pattern[1]))) if self.pattern else None
        # What is tested at all: the value itself, an object's members, an array's items.
        self.values = any(test is not None for test in (self.enum, self.low, self.high, self.step, self.lengths,
                                                         self.pattern, self.sizes, self.counts)) or self.unique \
            or self.const is not ABSENT
        self.members = bool(self.properties or self.patterns or self.extra is not True or self.required
                            or self.dependent or self.names is not ABSENT)
        self.items = bool(self.prefix or self.rest is not True or self.contains)
        # An object schema with only members to test: the check goes straight to them (SchemaCheck._array).
        self.plain = self.kinds == {"object"} and not (self.values or self.combined or self.ref is not None
                                                      or self.inexact)
        # A bare {"$ref": ...}: the check goes straight to its target.
        self.alias = check.resolved(schema) if self.ref is not None else None
        if self.alias is schema:
            self.alias = None
        self.compiled = ABSENT

    def passes(self, value):
        """True when ``value`` fits at once, with nothing more to test: a bare type or enum, a bare string schema.
        Not under a negation: it does not say what it skipped (``inexact``)."""
        fast = self.fast
        if fast is not None:
            return value.__class__ in fast or value.__class__ is str and value in fast
        if not self.text or value.__class__ is not str or self.lengths is not None and outside(self.lengths,
                                                                                                len(value)):
            return False
        regex = self.pattern
        return regex is None or len(value) <= self.longest and regex[0].search(value) is not None

    def _kinds(self, types):
        """The JSON types ``type`` lets through ("number": "integer" too), None for no type."""
        if types is None:
            return None
        names = [types] if isinstance(types, str) else types
        if not (isinstance(names, list) and names and all(isinstance(n, str) and n in JSON_TYPES for n in names)):
            self.inexact = True
            return None
        kinds = set(names) | ({"integer"} if "number" in names else set())
        return frozenset(kinds | ({"null"} if self.nullable else set()))

    def _enum(self, values):
        if values is None:
            return None
        if not isinstance(values, list):
            self.inexact = True
            return None
        return frozenset(json_key(value) for value in values) | (
            {json_key(None)} if self.nullable else frozenset())

    def _number(self, schema):
        self.low = range_end(schema, "minimum", "exclusiveMinimum", True)
        self.high = range_end(schema, "maximum", "exclusiveMaximum", False)
        self.step = schema.get("multipleOf")
        for key in RANGE_KEYWORDS:
            if key in schema and number_limit(schema[key]) is None and not (
                    key.startswith("exclusive") and schema[key].__class__ is bool):
                self.inexact = True
        if self.step is not None and not (number_limit(self.step) and self.step > 0):
            self.step = None

    def _counts(self, schema, low_key, high_key):
        """``(at least, at most)`` of a count (None: not set), or None when neither is."""
        if low_key not in schema and high_key not in schema:
            return None
        limits = (count_limit(schema.get(low_key)), count_limit(schema.get(high_key)))
        if any(key in schema and limit is None for key, limit in zip((low_key, high_key), limits)):
            self.inexact = True
        return limits

    def _pattern(self, pattern):
        regex = ecma_regex(pattern)
        if regex is None:
            self.inexact = True
        return regex

    def _map(self, schema, key):
        members = schema.get(key)
        if members is None or isinstance(members, dict):
            return members or {}
        self.inexact = True
        return {}

    def _members(self, check, schema):
        self.properties = {name: check.resolved(sub) for name, sub in self._map(schema, "properties").items()}
        self.children = None   # their SchemaNodes, read at the first object tested (SchemaCheck._children)
        self.patterns = [(self._pattern(text), check.resolved(sub))
                         for text, sub in self._map(schema, "patternProperties").items()]
        self.extra = check.resolved(schema.get("additionalProperties", True))
        required = schema.get("required", [])
        self.required = [name for name in required if isinstance(name, str)] if isinstance(required, list) else []
        if not isinstance(required, list) or len(self.required) < len(required):
            self.inexact = True
        self.dependent = []   # (name given, names it requires or None, schema it applies or None)
        for key in ("dependentRequired", "dependentSchemas", "dependencies"):
            for name, rule in self._map(schema, key).items():
                names = rule if isinstance(rule, list) and key != "dependentSchemas" else None
                if names is not None and all(isinstance(item, str) for item in names):
                    self.dependent.append((name, names, None))
                elif names is None and key != "dependentRequired":
                    self.dependent.append((name, None, rule))
                else:
                    self.inexact = True
        self.names = schema.get("propertyNames", ABSENT)

    def _items(self, check, schema):
        prefix, rest = schema.get("prefixItems", []), schema.get("items", True)
        if isinstance(rest, list):   # drafts 4 to 2019-09: items as a list, then additionalItems
            prefix, rest = rest, schema.get("additionalItems", True)
        if not isinstance(prefix, list):
            self.inexact = True
            prefix = []
        self.prefix, self.rest = [check.resolved(sub) for sub in prefix], check.resolved(rest)
        self.contains = None
        if "contains" in schema:
            low, high = count_limit(schema.get("minContains", 1)), schema.get("maxContains")
            if low is None or high is not None and count_limit(high) is None:
                self.inexact = True
            self.contains = (schema["contains"], low or 0, count_limit(high) if high is not None else None)

    def _combined(self, schema):
        """{keyword: its subschemas} of allOf, anyOf, oneOf, not, if/then/else (None: none of them)."""
        found = {}
        for key in ("allOf", "anyOf", "oneOf"):
            if key in schema:
                if isinstance(schema[key], list) and schema[key]:
                    found[key] = schema[key]
                else:
                    self.inexact = True
        for key in ("not", "if", "then", "else"):
            if key in schema:
                found[key] = schema[key]
        return found or None

    def _fast(self, schema):
        """What lets a value through at once: the Python classes of a bare type, the strings of a bare enum."""
        if self.ref is not None or any(
                key not in CHECK_ANNOTATIONS and key not in ("type", "enum", "nullable") for key in schema):
            return None
        if "enum" in schema:
            values = schema["enum"]
            if not isinstance(values, list) or not all(value.__class__ is str for value in values) or \
                    self.kinds is not None and "string" not in self.kinds or self.nullable:
                return None
            return frozenset(values)
        if self.kinds is None:
            return None
        # a float such as 3.0, an integer too, is tested the long way
        return frozenset(itertools.chain.from_iterable(CLASSES_OF[kind] for kind in self.kinds))


class SchemaCheck:
    """One tool's inputSchema as the server declared it, and the check of a call's arguments against it
    (``findings``): each finding a JSON pointer into the arguments, what the schema wants there and what came.

    Only what it understands makes it refuse.  A keyword it does not know, a $ref that is no pointer into this
    schema, a pattern Python does not read as ECMA-262 does, a malformed keyword value, a number too long to compare
    are skipped, as if they allowed anything: a skip only ever lets more through.  Under a negation (``not``,
    ``oneOf``, ``if``, ``maxContains``: ``strict`` counts them) letting more through could refuse more, so a skip
    there reaches up (``_Inexact``) and the negation is skipped instead (a ``oneOf`` is then read as ``anyOf``).
    Each schema object is read once (``SchemaNode``), at its first use."""

    def __init__(self, schema):
        self.root = schema
        dialect = schema.get("$schema")
        self.ref_alone = isinstance(dialect, str) and REF_ALONE_RE.search(dialect) is not None
        self.local_refs = None   # whether $refs are followed (no nested $id), known at the first one
        self.nodes = {}          # id of a schema object -> its SchemaNode (the objects live as long as root)
        self.steps = 0
        self.strict = 0
        self.compiled = ABSENT   # the root's PassTest (None: none), made at the first call
        self.budget = [0]        # the steps the long way would have left, counted down by the fast pass

    def findings(self, arguments):
        """[(pointer, what the schema wants, what came)] for a call's ``arguments`` (parsed), [] when they fit; None
        when the check cannot tell.  The fast pass first (``fast_pass``), then the long way."""
        self.steps = self.strict = 0
        found = []
        try:
            if self.fast_pass(arguments):
                return found
            self._node(self.root, arguments, "", found, 0)
        except (Unsure, RecursionError):
            return None
        return [(pointer_text(where), said(wants), said(came)) for where, wants, came in found]

    def resolved(self, schema):
        """``schema``, or the schema a bare ``{"$ref": ...}`` points at (a few steps at most)."""
        for _ in range(8):
            if not (isinstance(schema, dict) and "$ref" in schema and BARE_REF.issuperset(schema)):
                break
            target = self.target(schema["$ref"])
            if target is SKIPPED:
                break
            schema = target
        return schema

    def target(self, ref):
        """The schema a local ``$ref`` points at, or SKIPPED: another document, an anchor, a nested $id."""
        if self.local_refs is None:
            self.local_refs = not nested_id(self.root)
        if not (self.local_refs and isinstance(ref, str) and ref.startswith("#")):
            return SKIPPED
        pointer = ref[1:]
        if "%" in pointer:
            from urllib.parse import unquote
            pointer = unquote(pointer)
        if pointer and not pointer.startswith("/"):
            return SKIPPED
        try:
            target = resolve_pointer(self.root, pointer)
        except KeyError:
            return SKIPPED
        return target if isinstance(target, (dict, bool)) else SKIPPED

    def _skip(self):
        if self.strict:
            raise _Inexact()

    def _fits(self, schema, value, depth):
        try:
            self._node(schema, value, "", FIRST_MISS, depth)
            return True
        except _Miss:
            return False

    def _fits_strictly(self, schema, value, depth):
        """``_fits`` under a negation; None when that negation is to be skipped."""
        self.strict += 1
        try:
            return self._fits(schema, value, depth)
        except _Inexact:
            return None
        finally:
            self.strict -= 1

    def _node(self, schema, value, where, found, depth):
        self.steps += 1
        if self.steps > CHECK_STEPS or depth > CHECK_DEPTH:
            raise Unsure()
        node = self.nodes.get(id(schema)) or self._read(schema, value, where, found)
        while node is not None and node.alias is not None:
            depth += 1
            if depth > CHECK_DEPTH:
                raise Unsure()
            node = self.nodes.get(id(node.alias)) or self._read(node.alias, value, where, found)
        if node is None:
            return
        if self.strict and node.inexact:
            raise _Inexact()
        if node.ref is not None:
            if node.ref is not SKIPPED:
                self._node(node.ref, value, where, found, depth + 1)
            if self.ref_alone:
                return
        kind = JSON_KINDS.get(value.__class__) if value.__class__ is not float else json_kind(value)
        if node.kinds is not None and kind not in node.kinds:
            found.append((where, functools.partial(wanted, node.schema), functools.partial(got, value, True)))
        elif node.values and self._fails(node, value, kind):
            found.append((where, functools.partial(wanted, node.schema), functools.partial(got, value)))
        if kind == "object" and node.members:
            self._object(node, value, where, found, depth)
        elif kind == "array" and node.items:
            self._array(node, value, where, found, depth)
        if node.combined:
            self._combined(node.combined, value, where, found, depth)

    def _read(self, schema, value, where, found):
        """The SchemaNode of ``schema``, read now; None for true, false (its finding made) or what is no schema."""
        if isinstance(schema, dict):
            node = self.nodes[id(schema)] = SchemaNode(self, schema)
            return node
        if schema is False:
            found.append((where, functools.partial(wanted, False), functools.partial(got, value)))
        elif schema is not True:
            self._skip()
        return None

    # -- the fast pass --------------------------------------------------------------------------------------------

    def fast_pass(self, arguments):
        """True when ``arguments`` fit, told by the fast pass (PassTest): the long way would find nothing and finish.
        False: the long way decides.  The schema is compiled at the first call."""
        if self.compiled is ABSENT:
            try:
                root = self._compiled(self.root)
            except RecursionError:   # a schema nested too deep: the long way says it cannot tell
                root = None
            # A schema deeper than the long way goes, or whose allOf and anyOf hold the same schemas over and over
            # (2 ** 29 steps once an object is there), is the long way's: it says when it cannot tell.
            fits = root is not None and root.depth <= CHECK_DEPTH and root.steps <= CHECK_STEPS
            self.compiled = root if fits else None
        if self.compiled is None:
            return False
        if self.compiled.test is None:
            return True
        self.budget[0] = CHECK_STEPS - self.compiled.steps
        return self.compiled.test(arguments)

    def _compiled(self, schema):
        """The PassTest of ``schema`` (compiled once, with what it holds), or None when the fast pass leaves it to the
        long way, while it is being compiled (a $ref back to it), or past CHECK_COMPILED schema objects."""
        if not isinstance(schema, dict):
            return NEVER_PASS if schema is False else ANY_PASS   # what is no schema: skipped, as the long way does
        node = self.nodes.get(id(schema))
        if node is None:
            if len(self.nodes) >= CHECK_COMPILED:   # a schema that big is checked the long way only
                return None
            node = self.nodes[id(schema)] = SchemaNode(self, schema)
        if node.compiled is ABSENT:
            node.compiled = None
            node.compiled = self._compile(node)
        return node.compiled

    def _compile(self, node):
        """``node``'s PassTest, what it holds compiled first: a test for each Python class its types take, then its
        enum or const, allOf and anyOf; None when the fast pass leaves it to the long way."""
        if node.alias is not None:   # a bare $ref: its target, one level deeper
            target = self._compiled(node.alias)
            return None if target is None else PassTest(target.test, target.depth + 1, target.steps)
        if node.ref is not None or node.patterns or node.dependent or node.names is not ABSENT or node.prefix or \
                node.contains or not set(node.combined or ()).issubset(("allOf", "anyOf")):
            return None
        combined = node.combined or {}
        members = {name: self._compiled(sub) for name, sub in node.properties.items()}
        all_of, any_of = ([self._compiled(sub) for sub in combined.get(key, ())] for key in ("allOf", "anyOf"))
        extra, item = self._compiled(node.extra), self._compiled(node.rest)
        below = list(members.values()) + all_of + any_of
        if None in below + [extra, item] or any_of and not self._told_apart(combined["anyOf"]):
            return None
        tests = {}
        for kind in JSON_TYPES if node.kinds is None else node.kinds:
            for python_class in CLASSES_OF[kind]:
                tests[python_class] = self._class_test(node, python_class, members, extra, item)
        tests = {python_class: test for python_class, test in tests.items() if test is not never}
        keys = node.enum   # the values it may be, as json_key gives them
        if node.const is not ABSENT:
            keys = frozenset([node.const]) if keys is None else keys & {node.const}
        if keys is not None:
            test = values_test(keys, tests)
        elif len(tests) == len(ALL_CLASSES) and not any(tests.values()):
            test = None   # any value fits
        else:
            test = class_test(tests)
        test = combined_test(test, [sub.test for sub in all_of], [sub.test for sub in any_of])
        return PassTest(test, 1 + max(sub.depth for sub in below + [extra, item]), 1 + sum(sub.steps for sub in below))

    def _class_test(self, node, python_class, members, extra, item):
        """The test of a value of ``python_class`` (its JSON type one that ``node`` takes): None, any value of it;
        ``never``, left to the long way."""
        if python_class is str:
            return string_test(node.lengths, node.pattern, node.longest) if node.lengths or node.pattern else None
        if python_class in (int, LongNumber, float):
            if node.step is not None and (node.step.__class__ is not int or python_class is not int):
                return never   # a multipleOf of fractions: decimal arithmetic, the long way's
            if not (node.low or node.high or node.step is not None):
                return None
            return never if python_class is LongNumber else number_test(python_class, node.low, node.high, node.step)
        if python_class is list:
            if item.test is None and node.sizes is None and not node.unique:
                return None
            return array_test(node.sizes, node.unique, item.test, item.steps, self.budget)
        if python_class is dict:
            if not (node.counts or node.required or extra.test is not None or any(
                    member.test is not None for member in members.values())):
                return None
            return object_test(node.counts, {name: member.test for name, member in members.items()}, extra.test,
                               node.required, extra.steps, self.budget)
        return None   # null, true and false: nothing more to test

    def _told_apart(self, alternatives):
        """Whether no two ``alternatives`` (of an anyOf) take the same JSON type: the long way looks into the one
        that takes the value's type only (each other one fails at its type, one step)."""
        taken = set()
        for sub in alternatives:
            target = self.resolved(sub)
            node = self.nodes.get(id(target)) if isinstance(target, dict) else None
            if target is False:
                continue
            if node is None or node.kinds is None or taken.intersection(node.kinds):
                return False
            taken.update(node.kinds)
        return True

    # -- what a value itself must be ------------------------------------------------------------------------------

    def _fails(self, node, value, kind):
        """Whether ``value`` (of a JSON type ``kind`` that ``node`` takes) breaks what it asks of the value itself:
        its values, range, lengths, pattern, sizes."""
        if node.enum is not None and json_key(value) not in node.enum:
            return True
        if node.const is not ABSENT and json_key(value) != node.const:
            return True
        if kind == "string":
            return self._string_fails(node, value)
        if kind == "integer" or kind == "number":
            return (node.low or node.high or node.step is not None) and self._number_fails(node, value)
        sizes = node.sizes if kind == "array" else node.counts if kind == "object" else None
        if sizes is not None and outside(sizes, len(value)):
            return True
        return kind == "array" and node.unique and len(set(json_key(item) for item in value)) < len(value)

    def _number_fails(self, node, value):
        if value.__class__ is LongNumber or not math.isfinite(value):
            return self._skip()
        low, high = node.low, node.high
        if low and (value < low[0] or low[1] and value == low[0]) or high and (
                value > high[0] or high[1] and value == high[0]):
            return True
        if node.step is not None:
            fits = multiple_of(value, node.step)
            if fits is None:
                self._skip()
            return fits is False
        return False

    def _string_fails(self, node, text):
        if node.lengths is not None and outside(node.lengths, len(text)):
            return True
        regex = node.pattern
        if regex is None:
            return False
        if len(text) > node.longest:
            return self._skip()
        return regex[0].search(text) is None

    def _match(self, regex, name):
        """Whether ``regex`` (a patternProperties key, read) finds a match in ``name``; None: it cannot tell."""
        if regex is None or len(name) ** max(1, regex[1]) > CHECK_PATTERN_STEPS:
            self._skip()
            return None
        return regex[0].search(name) is not None

    # -- what an object's members and an array's items must be ---------------------------------------------------

    def _object(self, node, value, where, found, depth):
        properties, extra, patterns, strict = node.properties, node.extra, node.patterns, self.strict
        children = node.children if node.children is not None else self._children(node)
        for name, item in value.items():
            child = children.get(name, ABSENT)   # the property's SchemaNode (None: true, false, no schema)
            if child is ABSENT:
                pass
            elif child is None or strict:
                self._node(properties[name], item, (where, name), found, depth + 1)
            elif not child.passes(item):
                self._node(child.schema, item, (where, name), found, depth + 1)
            if not patterns and (child is not ABSENT or extra is True):
                continue
            matched = child is not ABSENT
            for regex, pattern_sub in patterns:
                hit = self._match(regex, name)
                matched = matched or hit is not False   # one that cannot be told: not checked as additional
                if hit:
                    self._node(pattern_sub, item, (where, name), found, depth + 1)
            if matched or extra is True:
                continue
            if extra is False:
                found.append(((where, name), lambda: "no such property (allowed: %s)" % (
                    note_names(list(properties)) or "none"), functools.partial(got, item)))
            else:
                self._node(extra, item, (where, name), found, depth + 1)
        for name in node.required:
            if name not in value:
                found.append(((where, name), functools.partial(self._required, node, name), "missing"))
        for given, names, rule in node.dependent:
            if given in value:
                if rule is not None:
                    self._node(rule, value, where, found, depth + 1)
                for name in names or ():
                    if name not in value:
                        found.append(((where, name), functools.partial(self._required, node, name, given),
                                      "missing"))
        if node.names is not ABSENT:
            for name in value:
                if not self._fits(node.names, name, depth + 1):
                    found.append(((where, name), lambda: "a property name that is " + wanted(node.names),
                                  functools.partial(got, name)))

    def _children(self, node):
        """{name: SchemaNode} of ``node``'s properties (None for true, false or what is no schema), read at once."""
        node.children = {}
        for name, sub in node.properties.items():
            child = self.nodes.get(id(sub))
            if child is None and isinstance(sub, dict):
                child = self.nodes[id(sub)] = SchemaNode(self, sub)
            node.children[name] = child
        return node.children

    def _required(self, node, name, given=ABSENT):
        """What a finding of the missing member ``name`` wants: "required string", "required when "a" is given"."""
        what = "required" if given is ABSENT else "required when %s is given" % value_text(given)
        sub = node.properties.get(name)
        shown = wanted(local_target(self.root, sub) if isinstance(sub, dict) else None)
        return what + (" " + shown if shown != "any value" else "")

    def _array(self, node, items, where, found, depth):
        prefix, rest, nodes, strict = node.prefix, node.rest, self.nodes, self.strict
        for index, item in enumerate(items):
            sub = prefix[index] if index < len(prefix) else rest
            child = nodes.get(id(sub))
            if sub is True or child is not None and not strict and child.passes(item):
                continue
            if child is not None and child.plain and item.__class__ is dict and not strict:
                self.steps += 1   # what _node would do for it: a record of objects is the commonest array
                self._object(child, item, (where, index), found, depth + 1)
                continue
            if sub is False:
                found.append(((where, index), "no item here (at most %d)" % len(prefix), functools.partial(got, item)))
            else:
                self._node(sub, item, (where, index), found, depth + 1)
        if node.contains is not None:
            self._contains(node.contains, items, where, found, depth)

    def _contains(self, contains, items, where, found, depth):
        sub, low, high = contains
        matched = 0
        for item in items:
            if matched >= low:
                break
            matched += self._fits(sub, item, depth + 1)
        if matched < low:
            found.append((where, lambda: "an array holding at least %d item(s) that are %s" % (low, wanted(sub)),
                          "got %d" % matched))
        elif high is not None:
            counted = [self._fits_strictly(sub, item, depth + 1) for item in items]
            if None in counted:
                self._skip()
            elif sum(counted) > high:
                found.append((where, lambda: "an array holding at most %d item(s) that are %s" % (high, wanted(sub)),
                              "got %d" % sum(counted)))

    # -- allOf, anyOf, oneOf, not, if/then/else -------------------------------------------------------------------

    def _combined(self, combined, value, where, found, depth):
        for sub in combined.get("allOf", ()):
            self._node(sub, value, where, found, depth + 1)
        any_of = combined.get("anyOf")
        if any_of and not any(self._fits(sub, value, depth + 1) for sub in any_of):
            self._none_fits("any of", any_of, value, where, found, depth)
        if "oneOf" in combined:
            self._one_of(combined["oneOf"], value, where, found, depth)
        if "not" in combined:
            fits = self._fits_strictly(combined["not"], value, depth + 1)
            if fits is None:
                self._skip()
            elif fits:
                found.append((where, lambda: "anything but: " + wanted(combined["not"]), functools.partial(got, value)))
        if "if" in combined:
            fits = self._fits_strictly(combined["if"], value, depth + 1)
            if fits is None:
                return self._skip()
            branch = combined.get("then" if fits else "else")
            if branch is not None:
                self._node(branch, value, where, found, depth + 1)

    def _one_of(self, alternatives, value, where, found, depth):
        fitting = 0
        for sub in alternatives:
            fits = self._fits_strictly(sub, value, depth + 1)
            if fits is None:   # read as anyOf
                self._skip()
                if not any(self._fits(sub, value, depth + 1) for sub in alternatives):
                    self._none_fits("exactly one of", alternatives, value, where, found, depth)
                return
            fitting += fits
        if fitting == 0:
            self._none_fits("exactly one of", alternatives, value, where, found, depth)
        elif fitting > 1:
            found.append((where, "exactly one of %d alternatives" % len(alternatives),
                          "got a value that fits %d of them" % fitting))

    def _none_fits(self, head, alternatives, value, where, found, depth):
        """No alternative fits: the findings of the one the value means (the only one taking its type, or the one
        its discriminator names: ``"kind": "b"``), else one finding listing them all."""
        if found is FIRST_MISS:   # only whether it fits was asked
            raise _Miss()
        kind = json_kind(value)
        targets = [local_target(self.root, sub) if isinstance(sub, dict) else sub for sub in alternatives]
        meant = [index for index, target in enumerate(targets) if self._takes(target, kind)]
        if len(meant) > 1 and kind == "object":
            keys = discriminators([targets[index] for index in meant if isinstance(targets[index], dict)])
            meant = [index for index in meant if keys and self._named(targets[index], keys, value)] or meant
        if len(meant) == 1:   # the server's own alternative, not its merged copy (SchemaNodes go by identity)
            return self._node(alternatives[meant[0]], value, where, found, depth + 1)
        keys = discriminators([target for target in targets if isinstance(target, dict)])
        shown = [alternative(target, keys) if isinstance(target, dict) and (
            schema_properties(target) or names_in(target, "required")) else wanted(target)
            for target in targets[:NOTE_ALTERNATIVES]]
        found.append((where, "%s: %s" % (head, " | ".join(shown) + (
            " | \u2026" if len(targets) > NOTE_ALTERNATIVES else "")), got(value, True)))

    @staticmethod
    def _takes(target, kind):
        """Whether the type of ``target`` (an alternative) admits values of type ``kind``."""
        types = target.get("type") if isinstance(target, dict) else None
        types = [types] if isinstance(types, str) else types if isinstance(types, list) else None
        return target is not False and (types is None or kind in types or kind == "integer" and "number" in types)

    @staticmethod
    def _named(target, keys, value):
        """Whether the object ``value`` has the values ``target`` names for the discriminators ``keys``."""
        return all(name in value and json_key(value[name]) in {json_key(item) for item in choices}
                   for name, choices in selector_values(target) if name in keys)


# ---------------------------------------------------------------------------
# Gate: before each tools/call, the argument check and the negotiate hook; refusals and annotations
# ---------------------------------------------------------------------------
# What stands between a client's tools/call and the server: its arguments checked against the inputSchema the server
# declared for the tool (--check-arguments; fitted names are mapped back before), then the user's own program
# (--negotiate).  A refused call never reaches the server.  It is answered with a tool result that says isError and
# why, where MCP 2025-11-25 puts input validation errors (tool execution errors, not JSON-RPC -32602), so that the
# model reads the reason and corrects its arguments:
# https://modelcontextprotocol.io/specification/2025-11-25/server/tools#error-handling

GATE_MODES = ("annotate", "refuse", "off")
GATE_SHOWN = 5           # findings a refusal or an annotation names; the others are counted


def finding_texts(findings):
    """Findings as lines, "/days: integer 1..14, got 30" (the root: "(arguments)"), GATE_SHOWN at most and then
    one that counts the rest."""
    lines = ["%s: %s, %s" % (pointer or "(arguments)", wants, came) for pointer, wants, came in findings[:GATE_SHOWN]]
    if len(findings) > GATE_SHOWN:
        lines.append("and %d more" % (len(findings) - GATE_SHOWN))
    return lines


def refusal_response(msg, text):
    """The answer to the tools/call ``msg`` that the gate refused: a tool result saying isError and ``text``."""
    result = {"content": [{"type": "text", "text": text}], "isError": True}
    if is_modern(request_version(msg.get("params"))):
        result["resultType"] = "complete"
    return result_response(msg["id"], result)


def annotated(msg, lines):
    """Add the findings ``lines`` after the server's own words in its failed answer ``msg`` (a JSON-RPC error, or a
    result with isError); True when it did.  A success is left as it is."""
    note = "[ocx-proxy: the arguments do not match the tool's inputSchema: %s]" % "; ".join(lines)
    error = msg.get("error")
    if isinstance(error, dict):
        words = error.get("message")
        error["message"] = (words + "\n" if isinstance(words, str) and words else "") + note
        return True
    result = msg.get("result")
    if isinstance(result, dict) and result.get("isError") is True and isinstance(result.get("content"), list):
        result["content"].append({"type": "text", "text": note})
        return True
    return False


HOOK_RESTARTS = 3            # a hook that exited is started again this many times at most,
HOOK_BACKOFF = 0.5           # after 0.5 s, then 1 s, then 2 s
HOOK_LINE_BYTES = 1 << 20    # the longest line a hook may answer with
HOOK_REASON_CHARS = 2000     # what the model is shown of a hook's reason


class NegotiateHook:
    """``--negotiate CMD``: the user's program, started with the relay and asked about each tools/call (``ask``):
    one JSON line on its stdin, one JSON line back, ``{"id": ..., "valid": true|false, "reason": "..."}``.  No answer
    within ``timeout`` seconds, a line that is no such answer, or a hook that exited: the call is refused, saying so
    (fail closed).  A hook that exited is started again HOOK_RESTARTS times at most, each after a longer pause; then
    every call is refused.  It gets the environment a server gets (``child_environment``); its stderr goes to ours."""

    def __init__(self, loop, argv, timeout, use_threads=False):
        self.loop = loop
        self.argv = argv
        self.timeout = timeout
        self.use_threads = use_threads
        self.child = None
        self.asks = collections.OrderedDict()   # number -> [then, timer], oldest first
        self.numbers = itertools.count(1)
        self.waiting = []          # lines for a hook being started again
        self.restarts = 0
        self.down = None           # why every call is refused, once it stopped for good
        self.stopped = False

    def start(self):
        child = StdioUpstream(self.loop, self.argv, child_environment(), use_threads=self.use_threads,
                              on_line=lambda line, msg=None: self._line(child, line),
                              on_exit=lambda why: self._exited(child, why), max_message_bytes=HOOK_LINE_BYTES)
        child.label = "negotiate hook"
        self.child = child
        child.start()
        waiting, self.waiting = self.waiting, []
        for line in waiting:
            child.send(line)

    def ask(self, call, then):
        """Ask about ``call`` (what the hook is told of a tools/call); ``then(valid, why)`` comes once, on the loop:
        True and None, or False and why (the hook's reason, or what went wrong)."""
        if self.down is not None:
            return then(False, self.down)
        number = next(self.numbers)
        try:
            line = encode_message(dict({"id": number}, **call))
        except (ValueError, TypeError) as exc:
            return then(False, "its arguments cannot be written as JSON for the negotiate hook (%s)" % exc)
        self.asks[number] = [then, self.loop.call_later(self.timeout, self._late, number)]
        if self.child is None or self.child.exited:
            self.waiting.append(line)
        else:
            self.child.send(line)

    def _settle(self, number, valid, why):
        ask = self.asks.pop(number, None)
        if ask is not None:
            ask[1].cancel()
            ask[0](valid, why)

    def _late(self, number):
        log.warning("the negotiate hook did not answer call %d within %g s; it is refused" % (number, self.timeout))
        self._settle(number, False, "the negotiate hook did not answer within %g s (ocx-proxy --negotiate-timeout)"
                     % self.timeout)

    def _line(self, child, line):
        if child is not self.child or not line.strip():
            return
        if line.__class__ is OversizedLine:
            return self._malformed(None, "a line of %d bytes, over %d" % (line.size, HOOK_LINE_BYTES))
        try:
            answer = parse_message(line)
        except ValueError:
            return self._malformed(None, "a line that is not JSON: %s" % shorten(
                line.decode("utf-8", "replace"), 200))
        number = answer.get("id") if isinstance(answer, dict) else None
        if number.__class__ is int and number not in self.asks:
            return log.info("ignored the negotiate hook's answer to call %d: no call waits for it (too late)" % number)
        valid = answer.get("valid") if number.__class__ is int else None
        if valid.__class__ is not bool:
            return self._malformed(number if number.__class__ is int else None, "a line that is no answer (%s)"
                                   % shorten(line.decode("utf-8", "replace").strip(), 200))
        reason = answer.get("reason")
        reason = shorten(reason.strip(), HOOK_REASON_CHARS) if isinstance(reason, str) and reason.strip() \
            else "(it gave no reason)"
        self._settle(number, valid, None if valid else "its negotiate hook refused it: " + reason)

    def _malformed(self, number, what):
        """The hook wrote ``what``: the call ``number``, or the one waiting longest for an answer, is refused."""
        if number is None:
            number = next(iter(self.asks), None)
        log.warning("the negotiate hook wrote %s%s" % (what, "" if number is None else "; call %d is refused" % number))
        if number is not None:
            self._settle(number, False, "the negotiate hook answered with %s" % what)

    def _exited(self, child, description):
        if child is not self.child:
            return
        child.kill_tree()
        child.reap()
        for number in list(self.asks):
            self._settle(number, False, "the negotiate hook stopped (%s)" % description)
        if self.stopped:
            return
        if self.restarts >= HOOK_RESTARTS:
            self.down = "the negotiate hook stopped %d times (last: %s); every call is refused" % (
                self.restarts + 1, description)
            return log.error(self.down)
        delay = HOOK_BACKOFF * 2 ** self.restarts
        self.restarts += 1
        log.warning("%s; starting it again in %g s" % (description, delay))
        self.loop.call_later(delay, self._restart)

    def _restart(self):
        if not self.stopped:
            self.start()

    def stop(self):
        """The relay ends: the hook's stdin closed, half a second to end by itself, then its process tree killed."""
        self.stopped = True
        for then, timer in self.asks.values():
            timer.cancel()
        child = self.child
        if child is None or child.process is None:
            return
        child.close_input()
        try:
            child.process.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            pass
        child.kill_tree()
        child.reap()


class CallGate:
    """The gate before each tools/call of the client (``claim``: after the relay mapped fitted names back and
    ``requests`` took the call).  ``checks`` holds a SchemaCheck per tool of the server's last tools/list (``note``:
    a Rewrite that sees each page as the server wrote it; ``forget`` on notifications/tools/list_changed).  Under
    ``refuse`` a call that breaks its schema is answered at once (``answer(msg, pending)``); under ``annotate`` its
    findings wait for the server's answer (``annotation``).  With a ``hook`` every call waits for its word, then goes
    on (``forward(raw, msg, pending)``) or is refused.  ``trace``: the --trace file or None; ``server_name()``: what
    the server calls itself."""

    def __init__(self, mode, hook, requests, answer, forward, trace, server_name):
        self.mode = mode
        self.hook = hook
        self.requests = requests
        self.answer = answer
        self.forward = forward
        self.trace = trace
        self.server_name = server_name
        self.checking = mode != "off"
        self.active = self.checking or hook is not None
        self.checks = {}        # the server's tool name -> SchemaCheck
        self.held = {}          # id_key of a call waiting for the hook -> its Pending
        self.client_name = None
        self.listed_by = None   # the server's name, as a 2026-07-28 tools/list result gives it
        self.note = Rewrite("note each tool's inputSchema for the argument check",
                            lambda line, params: self.checking, self.note_schemas)

    def note_schemas(self, msg, params=None):
        result = msg.get("result") if isinstance(msg, dict) else None
        tools = result.get("tools") if isinstance(result, dict) else None
        if not isinstance(tools, list):
            return False
        if not (isinstance(params, dict) and params.get("cursor")):   # a first page: the catalog starts over
            self.checks = {}
        self.listed_by = (server_info(result) or {}).get("name", self.listed_by)
        for tool in tools:
            if isinstance(tool, dict) and isinstance(tool.get("name"), str) and isinstance(tool.get("inputSchema"),
                                                                                          dict):
                self.checks[tool["name"]] = SchemaCheck(tool["inputSchema"])
        return False

    def forget(self):
        """The server's catalog changed: calls go unchecked until the client lists it again."""
        self.checks = {}

    def holds(self, pending):
        return self.held.get(id_key(pending.msg_id)) is pending

    def claim(self, line, msgs, raws):
        """``take_messages`` of the calls the gate answers (refused) or holds (for the hook)."""
        if not self.active:
            return line, msgs, raws
        stopped = None   # id of a message -> what claim does instead of sending it; made for the first one only
        for msg, raw in zip(msgs, raws):
            method = msg.get("method")
            if method == "initialize" and isinstance(msg.get("params"), dict):
                self.client_name = (client_info(msg) or {}).get("name")
            pending = self.requests.pending.get(id_key(msg["id"])) if method == "tools/call" and "id" in msg and \
                called_tool(msg) else None
            action = None if pending is None else self._judge(msg, raw, pending)
            if action is not None:
                if stopped is None:
                    stopped = {}
                stopped[id(msg)] = action
        if stopped is None:
            return line, msgs, raws
        return take_messages(line, msgs, raws, lambda msg: id(msg) in stopped, lambda msg: stopped[id(msg)]())

    def _judge(self, msg, raw, pending):
        """What becomes of one call: None, it goes on now; else what ``claim`` does instead (refuse, ask the hook)."""
        found = self._findings(msg)   # None: not checked (no schema known, or the check cannot tell)
        pointers = [pointer for pointer, _, _ in found] if found else ()
        if found and self.mode == "refuse":
            text = ("ocx-proxy did not send this call to the server (the tool did not run): its arguments do not "
                    "match the tool's inputSchema.\n" + "\n".join(finding_texts(found)))
            shown = ", ".join(pointer or "(arguments)" for pointer in pointers)
            return lambda: self._refuse(msg, pending, text, "schema", pointers, shown)
        if found:
            pending.findings = finding_texts(found)
        if self.hook is not None:
            return lambda: self._ask(msg, raw, pending, pointers)
        if found is not None:
            self._traced(pending, msg, "annotate" if found else "pass", "schema", pointers)
        return None

    def _findings(self, msg):
        """The findings of a call's arguments against its tool's schema ([]: they fit), None when not checked."""
        check = self.checks.get(msg["params"]["name"]) if self.checking else None
        if check is None:
            return None
        arguments = msg["params"].get("arguments")
        try:
            found = check.findings({} if arguments is None else arguments)
        except Exception as exc:  # a bug of ours must not cost the call: it goes on unchecked
            log.error("the argument check of %s failed (%s: %s); the call goes on unchecked"
                      % (msg["params"]["name"], type(exc).__name__, exc))
            return None
        if found is None:
            log.debug("the argument check of %s cannot tell (its schema is too deep or too costly to follow)"
                      % msg["params"]["name"])
        return found

    def _ask(self, msg, raw, pending, pointers):
        params = msg["params"]
        info = client_info(msg) or {}
        call = {"tool": params["name"], "arguments": params.get("arguments", {}),
                "server": self.server_name() or self.listed_by, "client": info.get("name", self.client_name),
                "trace": pending.trace}
        self.held[id_key(msg["id"])] = pending
        started = time.monotonic()
        self.hook.ask(call, lambda valid, why: self._answered(msg, raw, pending, pointers, started, valid, why))

    def _answered(self, msg, raw, pending, pointers, started, valid, why):
        if self.holds(pending):
            del self.held[id_key(msg["id"])]
        ms = (time.monotonic() - started) * 1000
        if not self.requests.is_open(pending):
            self._traced(pending, msg, "dropped", "negotiate", pointers, ms)
            return log.info("the negotiate hook answered tools/call %r, which has its answer already (cancelled or "
                            "timed out)" % (msg["id"],))
        if not valid:
            return self._refuse(msg, pending, "ocx-proxy did not send this call to the server (the tool did not "
                                "run): %s" % why, "negotiate", pointers, why, ms)
        self._traced(pending, msg, "annotate" if pointers else "pass", "negotiate", pointers, ms)
        self.forward(raw, msg, pending)

    def _refuse(self, msg, pending, text, by, pointers, why, ms=None):
        """Answer the call ``msg`` with ``text``; ``why`` is what the log says (never an argument's value)."""
        self.requests.take(id_key(msg["id"]))
        log.info("refused tools/call %r of %s (%s): %s" % (msg["id"], msg["params"]["name"], by, shorten(why, 300)))
        self._traced(pending, msg, "refuse", by, pointers, ms)
        self.answer(refusal_response(msg, text), pending)

    def _traced(self, pending, msg, decision, by, pointers, ms=None):
        if self.trace:
            self.trace.decision(pending, msg["params"]["name"], decision, by, pointers, ms)

    @staticmethod
    def annotation(pending):
        """The Rewrite that adds ``pending``'s findings to a failed answer of the server's."""
        return Rewrite("add the argument findings", lambda line, params: True,
                       lambda msg, params: annotated(msg, pending.findings))

    def start(self):
        if self.hook is not None:
            self.hook.start()

    def stop(self):
        if self.hook is not None:
            self.hook.stop()


# ---------------------------------------------------------------------------
# Relay: routing lines between the client and the upstream, spilling, shutdown
# ---------------------------------------------------------------------------

# Longer upstream lines are routed on their envelope, parsed only when they may be rewritten.
PEEK_LINE_BYTES = 64 * 1024
_REPAIR_DECODER = json.JSONDecoder(strict=False, parse_constant=lambda constant: None, parse_int=_long_int)


def client_messages(line):
    """``(out, msgs, raws, refused)`` of one client line: its good JSON-RPC messages, their own bytes, the bytes
    to relay (None: none; a batch of the good members alone, never re-serialized), ``(raw, code, message)`` of
    each message to refuse."""
    try:
        msg = parse_message(line, long_numbers=True)
    except ValueError as exc:
        if split_array(line) is None:
            return None, [], [], [(line, PARSE_ERROR, "Parse error: %s" % exc)]
        msg = []  # a batch with a bad member: the others still count
    if not isinstance(msg, list):
        if message_kind(msg) is None:
            return None, [], [], [(line, INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message")]
        return line, [msg], [line], []
    members = split_array(line) or []
    if not members:
        return None, [], [], [(line, INVALID_REQUEST, "Invalid Request: empty batch")]
    msgs, raws, refused = [], [], []
    for raw in members:
        try:
            msg = parse_message(raw, long_numbers=True)
        except ValueError as exc:
            refused.append((raw, PARSE_ERROR, "Parse error in a batch member: %s" % exc))
            continue
        if message_kind(msg) is None:
            refused.append((raw, INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message"))
        else:
            msgs.append(msg)
            raws.append(raw)
    out = line if len(raws) == len(members) else b"[" + b",".join(raws) + b"]"
    return out if raws else None, msgs, raws, refused


def repaired(line):
    """(message, line) for an upstream line that is not JSON, repaired (ValueError, TypeError or RecursionError
    when it cannot be): invalid UTF-8 becomes U+FFFD, a raw control character is escaped, NaN null."""
    msg = _REPAIR_DECODER.decode(line.decode("utf-8", "replace"))
    return msg, encode_message(msg)[:-1]


class Relay:
    """Relays JSON-RPC lines between the client (our stdio) and one upstream (see ``Supervisor``): each client
    request is answered exactly once, by the upstream or by us; upstream lines go through the spill check."""

    def __init__(self, loop, options, make_upstream, client_in_fd=0, client_out_fd=1):
        self.loop = loop
        self.options = options
        self.spill = Spill(options.output_dir, retention_days=options.retention_days)
        self.profile = ProfileInUse(self.spill, options)
        self.clock = CallClock(loop, self.profile, self._answer, self._detach)
        self.requests = Requests(loop, options.request_timeout, self._timed_out, self.clock)
        self.detached = DetachedCalls(self.spill, loop, self.profile, self.requests, self._cancel_upstream,
                                      options.request_timeout)
        # The reader tool returns what spilled and what detached calls answered: with neither, it is not offered.
        self.reader = Reader(self.spill, loop, self._answer, lambda: self.closing, options.reader_tool and (
            self.spill.budget.check_above > 0 or options.detach_after != 0), self.detached, options.use_threads,
                             self.profile.reader_declares)
        # What we change in answers, by their request's method (after Upstream.rewrites; see _may_change).
        self.fitting = ToolFitting(lambda: self.profile.name)
        self.tool_filter = ToolFilter(options.allow_tools, options.deny_tools, self._answer)
        self.trace = Trace(options.trace_path) if options.trace_path else None
        hook = NegotiateHook(loop, options.negotiate, options.negotiate_timeout, options.use_threads) \
            if options.negotiate else None
        self.gate = CallGate(options.check_arguments, hook, self.requests, self._answer, self._gate_passed,
                             self.trace, lambda: self.supervisor.server_name)
        self.trace_ids = self.trace is not None or hook is not None   # tools/calls get a trace id
        fixes = (
            self.gate.note,   # first: it sees each tool as the server declared it
            Rewrite("note the result size each tool declares", lambda line, params: self.profile.client.facts
                    .declared_chars_max and (b"maxResultSizeChars" in line or self.profile.declared),
                    self.profile.note_sizes),
            Rewrite("filter tools/list", lambda line, params: self.tool_filter.active, self.tool_filter.rewrite),
            Rewrite("remove outputSchema from tools/list", lambda line, params: not self.profile.keep_output_schema
                    and b'"outputSchema"' in line, strip_output_schemas),
            Rewrite("fit tools/list to the client", lambda line, params: options.fit_tools, self.fitting.rewrite),
            Rewrite("add the reader tool to tools/list", lambda line, params: self.reader.offered,
                    self.reader.advertise))
        self.client_in_fd = client_in_fd
        self.client_out = pipe_writer(loop, client_out_fd, on_error=self._client_gone,
                                     use_threads=options.use_threads, limit=options.max_buffer_bytes)
        self.client_lines = LineSplitter(options.max_message_bytes)
        self.client_in = None
        # Backpressure (--max-buffer-bytes): a side waits while the other has too much to read.
        self.upstream_held = False       # the client is not reading: the upstream waits
        self.client_held = False         # the upstream is not reading: the client waits
        self.supervisor = Supervisor(loop, make_upstream, options.restart, self._upstream_line, self._upstream_exit,
                                     lambda: self.upstream_held, lambda: self.closing)
        self.catalog = CatalogCache(loop, CatalogStore(self.spill), options.catalog, self._catalog_settings,
                                    self.supervisor, self.requests, fixes, self._answer,
                                    lambda line: self._send_upstream(line, []))
        self.rewrites = {"tools/list": (self.catalog.record,) + fixes}
        self.behind_spill = None         # upstream lines waiting for a big answer's spill (a list)
        self.closing = False             # shutdown has begun, whatever the upstream's state

    @property
    def upstream(self):
        return self.supervisor.upstream

    def _catalog_settings(self):
        """What of ours changes the tools/list the client gets: part of a catalog cache key."""
        options = self.options
        return [options.client, self.profile.name, self.profile.keep_output_schema, self.reader.offered,
                options.fit_tools, list(options.allow_tools), list(options.deny_tools)]

    # -- lifecycle ---------------------------------------------------------

    def start(self):
        if self.profile.known:
            self.profile.log("--client")
        self.gate.start()
        self.supervisor.start()
        self.client_in = pipe_reader(self.loop, self.client_in_fd, self._client_data,
                                    use_threads=self.options.use_threads)
        self.loop.post(self._clean_spill_dir)  # once the loop runs (select: after a client line already there)

    def _clean_spill_dir(self):
        try:
            removed = self.spill.remove_expired()
            if removed:
                log.info("removed %d spill files older than %d days or left unfinished by a stopped relay"
                         % (removed, self.spill.retention_days))
        except OSError as exc:
            log.warning("could not clean %s: %s" % (self.spill.output_dir, exc))

    def shutdown(self, reason="client closed stdin", signalled=False):
        """Stop politely: close the upstream's input, then TERM and KILL its group (``Supervisor.stop``)."""
        if self.closing and not signalled:
            return
        first = not self.closing
        self.closing = True
        log.debug("shutting down: %s" % reason)
        if first:
            self.detached.stop()  # cancelled upstream while it still reads
        upstream = self.upstream
        if upstream is None or upstream.exited:
            if first:
                self._finish()
            return
        if first:
            upstream.close_input()
        self.supervisor.stop(signalled, self._finish)

    def terminate(self, signum):
        """Stop on signal ``signum``: the upstream's group gets its SIGTERM now, as a client that signals us
        may SIGKILL us a moment later (Codex CLI: 30 ms on)."""
        upstream = self.upstream
        if upstream is not None:
            upstream.kill_tree(terminate=True)
        self.loop.post(self.shutdown, "signal %d" % signum, True)

    def _finish(self, reason=SHUTTING_DOWN):
        self.reader.stop()
        self.gate.stop()
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
        lines = self.client_lines.feed(data) if data else self.client_lines.finish()
        for line in lines:
            if line.__class__ is OversizedLine:
                self._client_too_long(line)
            else:
                self._client_line(line)
        if not data:
            self.shutdown()

    def _too_long(self, line, whose=""):
        """A line over --max-message-bytes, dropped as it came: ``(envelope, id or None, why)``."""
        envelope = line.envelope()
        message = ("%smessage of %d bytes exceeds the limit of %d bytes (ocx-proxy --max-message-bytes)"
                   % (whose, line.size, self.options.max_message_bytes))
        return envelope, envelope.id if envelope.has_valid_id else None, message

    def _client_too_long(self, line):
        envelope, msg_id, message = self._too_long(line)
        if envelope.has_method and not envelope.has_id:
            log.warning("dropped a client notification %s: %s" % (envelope.method, message))
        elif envelope.has_method or msg_id is None:
            log.warning("client %s: %s; answered with an error" % (envelope.method or "message", message))
            self._answer_error(msg_id, INVALID_REQUEST, "Invalid Request: " + message)
        else:
            # The client's answer to a server request: tell the server it will not come.
            log.warning("client response to %r: %s; the upstream gets an error instead" % (msg_id, message))
            if self.supervisor.state == UPSTREAM_UP:
                self._error_upstream(msg_id, INVALID_REQUEST, message)

    def _client_line(self, line):
        if not line or line.isspace():
            return
        try:
            out, msgs, raws, refused = client_messages(line)
            for raw, code, message in refused:
                self._refuse_client_line(raw, code, message)
            if out is not None:
                self._relay_client_line(out, msgs, raws)
        except Exception as exc:  # a bug here must not drop the lines after this one
            self._client_line_failed(line, exc)

    def _relay_client_line(self, line, msgs, raws):
        line, msgs, raws = self.reader.claim(line, msgs, raws)  # calls of the reader tool are ours to answer
        if line is None:
            return
        line, msgs, raws = self.fitting.restore(line, msgs, raws)  # fitted tool names: the server's
        line, msgs, raws = self.tool_filter.claim(line, msgs, raws)  # on the server's names
        if line is None:
            return
        for msg, raw in zip(msgs, raws):
            self._track_client_message(msg, raw)
        line, msgs, raws = self.gate.claim(line, msgs, raws)  # refused, or waiting for the negotiate hook
        if line is None:
            return
        line, msgs, raws = self.catalog.claim(line, msgs, raws)  # answered from the catalog cache
        if line is None:
            return
        self._to_upstream(line, msgs)

    def _to_upstream(self, line, msgs):
        if self.trace:
            traces = [self.requests.pending[key].trace for key in (id_key(msg.get("id")) for msg in msgs)
                      if key in self.requests.pending and self.requests.pending[key].trace]
            self.trace.record("client->upstream", msgs[0] if len(msgs) == 1 else msgs, len(line),
                              trace=traces[0] if len(traces) == 1 else traces)
        self._send_upstream(line, msgs)

    def _gate_passed(self, line, msg, pending):
        """The negotiate hook let the call ``msg`` (``line``, its bytes) through."""
        self._to_upstream(line, [msg])

    def _refuse_client_line(self, line, code, message):
        """Answer a client message we cannot relay: with its own id when its envelope shows one."""
        envelope = peek_envelope(line)
        log.warning("client sent a message ocx-proxy cannot relay (%s); answered with %d" % (message, code))
        if envelope is not None and envelope.kind() == "response":
            # The client's answer to the server: tell the server, or its request waits forever.
            return self._error_upstream(envelope.id, code, message)
        answer_id = None
        if envelope is not None and envelope.has_valid_id and not (envelope.has_result or envelope.has_error):
            answer_id = envelope.id
        self._answer_error(answer_id, code, message)

    def _client_line_failed(self, line, exc):
        try:
            log.error("internal error on a client line (%s: %s); answered with -32603" % (type(exc).__name__, exc))
            envelope = peek_envelope(line)
            answer_id = envelope.id if envelope is not None and envelope.kind() == "request" else None
            if answer_id is not None:
                self.requests.drop(id_key(answer_id))  # it may have gone out: its answer from the server is dropped
            self._answer_error(answer_id, INTERNAL_ERROR, "ocx-proxy internal error: %s" % exc)
        except Exception as again:
            log.error("internal error while answering a client line: %s" % again)

    def _track_client_message(self, msg, line):
        kind = message_kind(msg)
        method = msg.get("method")
        self.supervisor.handshake.note(msg, line)
        if kind == "request":
            if not self.profile.known:
                self.profile.choose(msg)
            if method == "initialize":
                self.supervisor.initialize_ok = False
            pending = self.requests.add(msg)
            pending.budget = self.profile.budget_for(msg)
            if self.trace_ids and method == "tools/call":
                pending.trace = os.urandom(16).hex()
        elif method == "notifications/cancelled":
            params = msg.get("params")
            if isinstance(params, dict) and "requestId" in params:
                key = id_key(params["requestId"])
                if self.requests.take(key) is None:
                    self.detached.cancel(key)  # the notification goes on to the server all the same

    def _send_upstream(self, line, items):
        state, reason = self.supervisor.state, self.supervisor.dead_reason
        if state == UPSTREAM_DEAD:
            for item in items:
                if message_kind(item) == "request":
                    self.requests.take(id_key(item["id"]))  # answered here, once: no timeout, no shutdown error
                    self._answer_error(item["id"], UPSTREAM_ERROR, reason)
                else:
                    log.warning("dropped a client %s: %s" % (item.get("method") or "response", reason))
            return
        if state == UPSTREAM_RESTARTING:
            self.supervisor.held.append(line)
            return
        self._send_upstream_bytes(line + b"\n")

    def _send_upstream_bytes(self, data):
        if self.upstream.send(data) is False and not self.client_held:
            self.client_held = True
            self.client_in.pause()
            self.upstream.when_drained(self._release_client)

    def _release_client(self):
        if self.client_held:
            self.client_held = False
            self.client_in.resume()

    def _timed_out(self, pending):
        """``Requests``' timer of ``pending`` fired: answer it, and tell the server to stop."""
        seconds = self.options.request_timeout
        log.warning("%s request %r timed out after %gs" % (pending.method, pending.msg_id, seconds))
        self._answer_error(pending.msg_id, REQUEST_TIMEOUT,
                           "Request timed out after %g s (ocx-proxy --request-timeout)" % seconds)
        if pending.method != "initialize":
            self._cancel_upstream(pending.msg_id, "ocx-proxy request timeout")

    def _cancel_upstream(self, msg_id, reason):
        """Tell the server to stop working on our request ``msg_id``."""
        if self.upstream is not None and self.supervisor.state != UPSTREAM_DEAD:
            self.upstream.send(encode_message({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                               "params": {"requestId": msg_id, "reason": reason}}))

    def _detach(self, pending):
        """CallClock: the tools/call ``pending`` reached --detach-after: answered here (DetachedCalls), when the
        reader tool that will return its answer was listed to the client."""
        if not self.requests.is_open(pending):
            return
        if self.spill.reader_name is None or self.gate.holds(pending):
            log.info("tools/call %r is past --detach-after, but %s: it waits for the server" % (
                pending.msg_id, "the negotiate hook has not answered for it yet" if self.gate.holds(pending) else
                "the client has not listed the reader tool that would return its answer"))
            return
        self.requests.take(id_key(pending.msg_id))
        self._answer(self.detached.detach(pending), pending)

    # -- upstream -> client ------------------------------------------------

    def _upstream_line(self, line, msg=None):
        """Handle one upstream line (``msg``: its parse, if any): whatever goes wrong costs this line only."""
        if self.behind_spill is not None:
            self.behind_spill.append(line)  # see _spill_later
            return
        if line.__class__ is OversizedLine:
            self._upstream_too_long(line)
            return
        if not line or line.isspace():
            return
        try:
            if len(line) <= PEEK_LINE_BYTES or not self._pass_through(line):
                self._parse_and_forward(line, msg)
        except Exception as exc:  # a bug here must not drop the lines after this one
            try:
                self._drop_upstream_line(line, "hit an internal error in ocx-proxy (%s: %s)"
                                         % (type(exc).__name__, exc))
            except Exception as again:
                log.error("internal error while dropping an upstream line: %s" % again)

    def _parse_and_forward(self, line, msg=None):
        try:
            if msg is None:
                msg = parse_message(line, long_numbers=True)
        except ValueError as exc:
            try:
                msg, line = repaired(line)
            except (ValueError, TypeError, RecursionError):
                self._drop_upstream_line(line, "is not JSON (%s)" % exc)  # a request waiting for it is answered
                return
            log.warning("upstream sent a line that is not valid JSON (%s); relaying it repaired" % exc)
        if message_kind(msg) is None and not isinstance(msg, list):
            self._drop_upstream_line(line, "is not a JSON-RPC message")
            return
        pending = None
        answers = []
        if isinstance(msg, list):
            answers = [item for item in msg if message_kind(item) == "response"]
        elif "method" not in msg:
            if self.supervisor.is_replay_answer(msg.get("id")):
                self.supervisor.finish_replay(msg)
                self.catalog.check_server(msg)
                return
            if self.catalog.take_answer(msg):
                return
            key = id_key(msg["id"])
            if key in self.detached.by_request:
                if self.trace:
                    self.trace.record("upstream->detached", msg, len(line), trace=self.detached.by_request[key].trace)
                self.detached.save_answer(key, line, msg)
                return
            if self.requests.take_abandoned(key):
                log.info("dropped a late answer to timed-out request %r" % msg["id"])
                return
            pending = self.requests.pending.get(key)
            answers = [msg]
        elif msg["method"] == "notifications/tools/list_changed":
            self.gate.forget()
        elif msg["method"] == "notifications/progress" and self.clock.watching:
            progress = self.clock.progress(msg)
            if progress is False:
                log.debug("dropped the server's progress for a request that has its answer")
                return
            if progress is not None:
                msg, line = progress, encode_message(progress)[:-1]
        self._forward(line, msg, pending)
        for answer in answers:  # only now: a request is pending until its answer is on its way
            self._complete(answer)

    def _pass_through(self, line):
        """Relay a big line on its envelope alone when nothing in it will be rewritten; False when it
        needs the full parse (it may be rewritten, it is not plain JSON-RPC, or it answers initialize)."""
        envelope = peek_envelope(line)
        kind = envelope.kind() if envelope is not None else None
        if kind is None:
            return False
        pending = None
        if kind == "response":
            key = id_key(envelope.id)
            if (key in self.requests.abandoned or key in self.detached.by_request
                    or self.supervisor.is_replay_answer(envelope.id) or self.catalog.owns(envelope.id)):
                return False
            pending = self.requests.pending.get(key)
        method = pending.method if pending else envelope.method
        if (method == "initialize" or not relayable_unparsed(line)
                or method == "notifications/progress" and self.clock.watching):
            return False
        if self._may_change(line, kind, method, pending):
            return self._spill_later(line, envelope, pending)
        self._send_line(line, {"id": envelope.id, "method": envelope.method} if envelope.has_id
                        else {"method": envelope.method}, pending)
        if pending is not None:
            self._complete({"id": envelope.id})
        return True

    def _spill_later(self, line, envelope, pending):
        """Save a big answer that will be spilled, to parse it on the next loop turn once its bytes are let go
        (two copies at most, not three; upstream lines meanwhile wait in ``behind_spill``); False: parse it now."""
        if pending is None or len(line) < SPILL_LATER_BYTES or never_spilled(pending.method):
            return False
        chars = char_count(line)
        # A line that may fit once compacted, or once its images are left out, takes the usual path.
        if self._budget(pending).may_fit(line, chars):
            return False
        try:
            saved = self.spill.save_line(line, pending.method, envelope.id)
        except OSError:
            return False  # the usual path tries again, says why and forwards it unchanged
        self.behind_spill = []
        self.loop.post(self._finish_spill, saved, pending, chars, len(line))
        return True

    def _finish_spill(self, saved, pending, chars, size):
        """Second half of ``_spill_later``: the preview goes out, then the lines that waited."""
        try:
            self._send_saved(saved, pending, chars, size)
        except Exception as exc:  # as in _upstream_line: this answer only, and it is still answered
            log.error("internal error while spilling a saved answer: %s: %s" % (type(exc).__name__, exc))
            if self.requests.is_open(pending):
                self.requests.drop(id_key(pending.msg_id))
                self._answer_error(pending.msg_id, INTERNAL_ERROR, "ocx-proxy could not relay the server's "
                                   "answer: %s: %s" % (type(exc).__name__, exc))
        waiting, self.behind_spill = self.behind_spill, None
        for line in waiting:  # behind another big answer being saved, the rest waits again (_upstream_line)
            self._upstream_line(line)

    def _send_saved(self, saved, pending, chars, size):
        try:
            with open(saved[1], encoding="utf-8", newline="") as handle:
                text = handle.read()
            msg = parse_text(text, long_numbers=True)
        except (OSError, ValueError):
            self._parse_and_forward(self._unsave(saved))  # the usual path repairs or reports it
            return
        del text
        if not self.requests.is_open(pending):
            log.info("dropped a late answer to %s request %r" % (pending.method, pending.msg_id))
            self.spill.discard(saved)
            return
        out, files = self._check_size(None, msg, pending, chars, size, saved)
        self._send_line(self._unsave(saved) if out is None else out, msg, pending, files)
        self._complete(msg)

    def _unsave(self, saved):
        """The exact line of a spill that did not happen; its ``.json`` is removed."""
        with open(saved[1], "rb") as handle:
            line = handle.read()
        self.spill.discard(saved)
        return line

    def _may_change(self, line, kind, method, pending):
        """Whether ``_forward`` may change this message (``method``: the request's for a response)."""
        params = pending.params if pending else None
        if any(rewrite.applies(line, params) for rewrite in self._rewrites_of(pending)):
            return True
        limit = self._budget(pending).check_above
        return limit > 0 and len(line) > limit and (kind == "response" or method == "notifications/message")

    def _drop_upstream_line(self, line, defect):
        """Skip an upstream line we cannot relay, answering whoever waits for it."""
        shown = line[:200].decode("utf-8", "replace")
        envelope = peek_envelope(line, partial=True)
        if envelope is not None and envelope.has_valid_id:
            # answered here: a proper answer coming later is dropped
            pending = None if envelope.has_method else self.requests.drop(id_key(envelope.id))
            if pending is not None:
                log.warning("the upstream's answer to %s request %r %s; answered with -32603: %s"
                            % (pending.method, pending.msg_id, defect, shown))
                self._answer_error(pending.msg_id, INTERNAL_ERROR,
                                   "ocx-proxy could not relay the server's answer: it %s" % defect)
                return
            if not envelope.has_method and self.detached.fail(id_key(envelope.id), defect):
                log.warning("the upstream's answer to detached call %r %s: %s" % (envelope.id, defect, shown))
                return
            if envelope.kind() == "request":
                log.warning("the upstream sent a request that %s; answered it with -32603: %s" % (defect, shown))
                return self._error_upstream(envelope.id, INTERNAL_ERROR,
                                            "ocx-proxy could not relay this request: it %s" % defect)
        log.warning("ignored a line from the upstream that %s: %s" % (defect, shown))

    def _complete(self, msg):
        pending = self.requests.take(id_key(msg.get("id")))
        if pending is not None:
            self.supervisor.note_answer(pending.method, msg)
            self.catalog.note_answer(pending, msg)

    def _rewrites_of(self, pending):
        """The rewrites of an answer to ``pending`` (None: not an answer): the transport's, then ours."""
        if pending is None:
            return ()
        rewrites = self.upstream.rewrites.get(pending.method, ()) + self.rewrites.get(pending.method, ())
        return rewrites + (self.gate.annotation(pending),) if pending.findings else rewrites

    def _forward(self, line, msg, pending):
        if pending is not None:
            line = apply_rewrites(self._rewrites_of(pending), line, msg, pending.params)
        spilled = None
        limit = self._budget(pending).check_above
        if limit > 0 and len(line) > limit and isinstance(msg, dict):
            out, spilled = self._check_size(line, msg, pending, char_count(line), len(line))
            line = line if out is None else out
        self._send_line(line, msg, pending, spilled)

    def _send_line(self, line, msg, pending, spilled=None, direction="upstream->client"):
        """Write one line (no newline) to the client; ``msg`` is for the trace only."""
        if self.trace:
            self.trace.record(direction, msg, len(line), pending, spilled)
        if not self.client_out.write_line(line):
            self._hold_upstream()

    def _hold_upstream(self):
        if not self.upstream_held and self.upstream is not None:
            self.upstream_held = True
            self.upstream.pause_reading()
            self.client_out.when_drained(self._release_upstream)

    def _release_upstream(self):
        self.upstream_held = False
        if self.upstream is not None:
            self.upstream.resume_reading()

    def _upstream_too_long(self, line):
        envelope, msg_id, message = self._too_long(line, "upstream ")
        pending = self.requests.take(id_key(msg_id)) if msg_id is not None and not envelope.has_method else None
        if pending is not None:
            log.warning("%s; request %r answered with an error" % (message, msg_id))
            self._answer_error(msg_id, UPSTREAM_ERROR, message)
        elif msg_id is not None and not envelope.has_method and self.detached.fail(
                id_key(msg_id), "was %d bytes, over --max-message-bytes" % line.size):
            log.warning("%s; detached call %r has no answer" % (message, msg_id))
        elif envelope.has_method and msg_id is not None:
            log.warning("%s; the upstream's %s request %r gets an error" % (message, envelope.method, msg_id))
            self._send_upstream_bytes(encode_message(error_response(msg_id, INVALID_REQUEST, message)))
        else:
            log.warning("%s; dropped it (no pending request id found at either end)" % message)

    def _budget(self, pending):
        """The Budget of the answer to ``pending`` (None: a message that answers nothing)."""
        return pending.budget if pending is not None and pending.budget is not None else self.spill.budget

    def _check_size(self, line, msg, pending, chars, size, saved=None):
        """(bytes to send instead of ``line`` or None, SpillFiles or None) for a message over the check: compacted
        when that fits its budget (``_budget``), else spilled (``saved``: saved already, ``line`` None), else
        unchanged."""
        method, budget = pending.method if pending else None, self._budget(pending)
        try:
            fits, compact = (False, None) if saved else budget.fit(line, msg, chars)
            if fits:
                return None if compact is None else compact.encode("utf-8", "surrogatepass"), None
            # a request names its version (one relay may carry both eras), a log line gets the session's
            version = (pending.version if pending is not None else None) or self.supervisor.protocol_version
            rewritten = self.spill.rewrite(line, msg, method, pending.params if pending else None,
                                           version, chars, saved=saved, budget=budget)
        except (ValueError, TypeError) as exc:
            log.warning("could not rewrite an oversized message (%s); forwarding it unchanged" % exc)
            return None, None
        if rewritten is None:
            return None, None
        out, files = rewritten
        log.info("spilled %s response %r (%d bytes) to %s" % (
            method or msg.get("method") or "?", msg.get("id"), size, files.txt_path))
        return out.encode("utf-8", "surrogatepass"), files

    def _error_upstream(self, msg_id, code, message):
        """Answer a message of the server's with a JSON-RPC error."""
        self._send_upstream(encode_message(error_response(msg_id, code, message))[:-1], [])

    def _answer_error(self, msg_id, code, message):
        self._answer(error_response(msg_id, code, message))

    def _answer(self, msg, pending=None):
        """Send the client an answer of ours (to ``pending``, for the trace), or a notification."""
        if msg.get("method") == "notifications/tools/list_changed":   # the catalog cache's
            self.gate.forget()
        self._send_line(encode_message(msg)[:-1], msg, pending, direction="proxy->client")

    def _fail_all_pending(self, reason):
        for entry in self.requests.take_all():
            self._answer_error(entry.msg_id, UPSTREAM_ERROR, reason)

    def _upstream_exit(self, description):
        reason = self.supervisor.exit_reason(description)
        if self.closing:
            self._finish(reason)
            return
        log.warning(reason)
        self._fail_all_pending(reason)
        self.detached.lose_all(reason)
        self._release_client()  # nothing waits for that upstream any more
        self.supervisor.restart_or_give_up(reason)


SPILL_LATER_BYTES = 8 << 20  # answers this big are saved before they are parsed (Relay._spill_later)


def strip_output_schemas(msg, params=None):
    """A ``Rewrite``: remove ``outputSchema`` from a tools/list result (see --keep-output-schema)."""
    result = msg.get("result")
    tools = result.get("tools") if isinstance(result, dict) else None
    changed = False
    for tool in tools if isinstance(tools, list) else ():
        if isinstance(tool, dict) and "outputSchema" in tool:
            del tool["outputSchema"]
            changed = True
    return changed


def run_relay(options, make_upstream):
    """Run the relay on our stdin/stdout until the client leaves; returns the exit status."""
    loop = Loop()
    relay = Relay(loop, options, make_upstream)
    previous = {}
    for sig in STOP_SIGNALS:
        previous[sig] = signal.signal(sig, lambda signum, frame: relay.terminate(signum))
    try:
        relay.start()
        loop.run()
    finally:
        relay.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        loop.close()
    return 0


# ---------------------------------------------------------------------------
# Protobuf: Cursor agent.v1 McpTools encoder and decoder
# ---------------------------------------------------------------------------

# Cursor's agent service (package agent.v1, proto3) takes a client's tools in AgentRunRequest.mcp_tools.  Its
# few messages are written by hand: no generated code, no protobuf runtime.  Field numbers and their sources
# are in vendor_proto_notes.md.


WIRE_VARINT, WIRE_FIXED64, WIRE_LEN, WIRE_START_GROUP, WIRE_END_GROUP, WIRE_FIXED32 = range(6)
WIRE_TYPE_NAMES = ("varint", "fixed64", "length-delimited", "start-group", "end-group", "fixed32")

# A JSON number travels as a double; past 2**53 two integers share one double.
MAX_EXACT_INTEGER = 2 ** 53
# Deep enough for any real JSON Schema, shallow enough that recursion is safe.
MAX_VALUE_DEPTH = 100
# decode_raw guesses nested messages only this deep; deeper payloads stay bytes.
MAX_RAW_DEPTH = 64
# A field is two bytes on the wire and some two hundred decoded: uncapped, 2 MB of empty tools decode to a
# gigabyte.  A 1 MiB message, Cursor's largest, has at most 524,288 fields.
MAX_DECODED_FIELDS = 1000000


class ProtobufDecodeError(OcxError):
    """Bytes that are not the protobuf message they were decoded as: ``offset`` in the whole input, the tag
    read (``field``, ``wire_type``; None when none applies), ``where`` the message path, ``snippet`` nearby text."""

    def __init__(self, reason, data, offset, field=None, wire_type=None, where=""):
        self.offset = offset
        self.field = field
        self.wire_type = wire_type
        self.where = where
        self.snippet = _text_around(data, offset)
        parts = ["malformed protobuf at byte %d" % offset]
        if field is not None:
            parts.append(" (field %d, wire type %d)" % (field, wire_type))
        if where:
            parts.append(" in %s" % where)
        parts.append(": " + reason)
        if self.snippet is not None:
            parts.append("; the bytes there look like text: %s" % json.dumps(self.snippet))
        OcxError.__init__(self, "".join(parts))


class DecodeLimitError(OcxError):
    """The input holds more fields than the decoder may turn into objects."""


class _FieldBudget:
    """How many more fields one decode may turn into Python objects."""

    def __init__(self, limit):
        self.limit = limit
        self.left = limit

    def take(self, offset):
        """Count the field whose tag is at ``offset``; DecodeLimitError past the limit."""
        self.left -= 1
        if self.left < 0:
            raise DecodeLimitError("decode limit: more than %d fields (the next at byte %d); "
                                   "raise it with --max-fields" % (self.limit, offset))


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
    # A printable length-delimited tag ('"' is field 4) before a small length byte starts the next field.
    if end < len(data) and end - 1 > offset and data[end - 1] & 7 == WIRE_LEN and data[end] < 0x20:
        end -= 1
    if end - start < 3:
        return None
    return data[start:end].decode("utf-8", "replace")


# -- encoder ------------------------------------------------------------------

# Tags and most lengths are below 128; a table spares building those bytes.
_ONE_BYTE_VARINTS = [bytes((value,)) for value in range(0x80)]
_pack_double = struct.Struct("<d").pack


def encode_varint(value):
    """Base-128 varint of an integer in [-2**63, 2**64); a negative one is int64 two's complement (ten bytes)."""
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
    return encode_varint(field << 3 | wire_type)


def encode_bytes_field(field, payload):
    """A length-delimited field: tag, length, payload (a string, bytes or a message)."""
    return encode_tag(field, WIRE_LEN) + encode_varint(len(payload)) + payload


def encode_value(obj):
    """Serialize a JSON value (as ``json.loads`` returns it) as a ``google.protobuf.Value``; object keys keep
    their order.  Numbers become doubles: an integer beyond 2**53 in magnitude, NaN and infinities raise
    OcxError naming their JSON path (``$.properties.n.maximum``)."""
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
        return encode_tag(1, WIRE_VARINT) + encode_varint(0)
    if obj is True or obj is False:
        return encode_tag(4, WIRE_VARINT) + encode_varint(int(obj))
    if isinstance(obj, int):
        if abs(obj) > MAX_EXACT_INTEGER:
            raise OcxError("integer %d at %s is beyond 2^53 and cannot round-trip "
                           "through a protobuf double" % (obj, _json_path(path)))
        return encode_tag(2, WIRE_FIXED64) + _pack_double(float(obj))
    if isinstance(obj, float):
        if not math.isfinite(obj):
            raise OcxError("number %r at %s cannot be carried by google.protobuf.Value" % (obj, _json_path(path)))
        return encode_tag(2, WIRE_FIXED64) + _pack_double(obj)
    if isinstance(obj, list):
        # ListValue { repeated Value values = 1 }
        return encode_bytes_field(6, b"".join(encode_bytes_field(1, _encode_value(item, path + (index,), depth + 1))
                                              for index, item in enumerate(obj)))
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


def encode_tool_definition(name, description, input_schema, provider_identifier, tool_name):
    """One ``McpToolDefinition``; ``input_schema`` (a JSON value) goes as a ``google.protobuf.Value``."""
    schema = None if input_schema is None else encode_value(input_schema)
    return _encode_singular((name, description, schema, provider_identifier, tool_name))


def _encode_singular(values):
    """Fields 1, 2, ... from strings (or encoded messages), in ascending order; empty ones omitted."""
    return b"".join(encode_bytes_field(field, value.encode("utf-8") if isinstance(value, str) else value)
                    for field, value in enumerate(values, 1) if value)


def encode_agent_run_request(mcp_tools=b"", empty_wrapper=False):
    """An ``AgentRunRequest`` holding only field 4, a serialized ``McpTools``.  An empty one is left out (Cursor
    then adds its native tool catalog) unless ``empty_wrapper``: written with length zero (``22 00``), it
    suppresses that catalog."""
    mcp_tools = bytes(mcp_tools)
    if not mcp_tools and not empty_wrapper:
        return b""
    return encode_bytes_field(4, mcp_tools)


def cursor_limit_warnings(tool_count, mcp_tools_size, message_size=None):
    """Human-readable warnings for a catalog past Cursor's observed limits."""
    cursor = CLIENTS["cursor"].facts
    warnings = []
    if tool_count > cursor.mcp_tools_count:
        warnings.append("%d tool definitions exceed Cursor's limit of about %d; "
                        "expect resource_exhausted" % (tool_count, cursor.mcp_tools_count))
    if mcp_tools_size > cursor.mcp_tools_bytes:
        warnings.append("McpTools is %d bytes, over Cursor's limit of about %d bytes"
                        % (mcp_tools_size, cursor.mcp_tools_bytes))
    if message_size is not None and message_size > cursor.message_bytes:
        warnings.append("message is %d bytes; Cursor refuses messages over about 1 MiB" % message_size)
    return warnings


# -- decoder ------------------------------------------------------------------


def _read_varint(data, pos, end, where, field=None, wire_type=None):
    """Return (value, next position) of the varint at ``pos``; at most ten bytes."""
    if pos < end and data[pos] < 0x80:
        return data[pos], pos + 1  # the common one-byte case
    start, result, shift = pos, 0, 0
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


# The fixed wire types: their size, and how decode_raw shows them (unsigned, and as a float when finite).
FIXED_FORMATS = {WIRE_FIXED64: (8, "fixed64", "<Q", "double", "<d"), WIRE_FIXED32: (4, "fixed32", "<I", "float", "<f")}


def _read_value(data, pos, end, where, field, wire_type):
    """(value, next position) of a field that is no group: an int, the fixed bytes or a (start, end) span."""
    if wire_type == WIRE_VARINT:
        return _read_varint(data, pos, end, where, field, wire_type)
    if wire_type == WIRE_LEN:
        length, start = _read_varint(data, pos, end, where, field, WIRE_LEN)
        if length > end - start:
            raise ProtobufDecodeError("length %d runs past the end of its message (%d bytes left)"
                                      % (length, end - start), data, pos, field, WIRE_LEN, where)
        return (start, start + length), start + length
    size = FIXED_FORMATS[wire_type][0]
    if end - pos < size:
        raise ProtobufDecodeError("data ends inside a %d-byte fixed field" % size, data, pos, field, wire_type, where)
    return data[pos:pos + size], pos + size


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
            pos = _read_value(data, pos, end, where, inner, wire_type)[1]
    return pos


def _iter_fields(data, pos, end, where, budget):
    """Yield (field, wire type, tag offset, value) for each field in data[pos:end], taken from ``budget``; ``value``:
    an int (varint), bytes (fixed), a (start, end) pair (length-delimited), None (skipped group)."""
    while pos < end:
        tag_pos = pos
        budget.take(tag_pos)
        field, wire_type, pos = _read_tag(data, pos, end, where)
        if wire_type == WIRE_END_GROUP:
            raise ProtobufDecodeError("end-group tag without a start-group", data, tag_pos, field, wire_type, where)
        if wire_type == WIRE_START_GROUP:
            value, pos = None, _skip_group(data, pos, end, where, field)
        else:
            value, pos = _read_value(data, pos, end, where, field, wire_type)
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
    # Protobuf lets a later copy win or merge; no correct encoder writes two, so a repeat is an error here.
    if field in seen:
        raise ProtobufDecodeError("%s appears twice" % name, data, offset, field, wire_type, where)
    seen.add(field)


def _utf8_at(data, span, offset, field, where, name):
    try:
        return data[span[0]:span[1]].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProtobufDecodeError("%s is not valid UTF-8 (%s)" % (name, exc.reason),
                                  data, span[0] + exc.start, field, WIRE_LEN, where)


def decode_value(data, max_fields=MAX_DECODED_FIELDS):
    """Decode serialized ``google.protobuf.Value`` bytes into a JSON value; integral doubles within 2**53 come
    back as int.  Strict: exactly one kind set, no NaN/infinity, no unknown field (else ProtobufDecodeError).
    Like every decoder here, it raises DecodeLimitError rather than decode more than ``max_fields`` fields."""
    data = _as_bytes(data)
    return _decode_value(data, 0, len(data), "Value", 0, _FieldBudget(max_fields))


def _decode_value(data, pos, end, where, depth, budget):
    if depth > MAX_VALUE_DEPTH:
        raise ProtobufDecodeError("Value nested deeper than %d levels" % MAX_VALUE_DEPTH, data, pos, where=where)
    kind = result = None
    for field, wire_type, offset, value in _iter_fields(data, pos, end, where, budget):
        if kind is not None:
            raise ProtobufDecodeError("Value sets more than one kind (already %s)" % kind,
                                      data, offset, field, wire_type, where)
        kind, result = _decode_value_kind(data, field, wire_type, offset, value, where, depth, budget)
    if kind is None:
        raise ProtobufDecodeError("Value has no kind set (empty message)", data, pos, where=where)
    return result


# google.protobuf.Value's kinds by field number, with the wire type each must have.
VALUE_KINDS = {1: ("null_value", WIRE_VARINT), 2: ("number_value", WIRE_FIXED64), 3: ("string_value", WIRE_LEN),
               4: ("bool_value", WIRE_VARINT), 5: ("struct_value", WIRE_LEN), 6: ("list_value", WIRE_LEN)}


def _decode_value_kind(data, field, wire_type, offset, value, where, depth, budget):
    if field not in VALUE_KINDS:
        raise ProtobufDecodeError("google.protobuf.Value has no field %d" % field,
                                  data, offset, field, wire_type, where)
    kind, expected = VALUE_KINDS[field]
    _expect(data, offset, field, wire_type, expected, where, kind)
    if field == 1 and value != 0:
        raise ProtobufDecodeError("null_value must be 0, got %d" % value, data, offset, field, wire_type, where)
    if field == 4 and value > 1:
        raise ProtobufDecodeError("bool_value must be 0 or 1, got %d" % value, data, offset, field, wire_type, where)
    if field == 2:
        number = struct.unpack("<d", value)[0]
        if not math.isfinite(number):
            raise ProtobufDecodeError("number_value %r has no JSON form" % number,
                                      data, offset, field, wire_type, where)
        return kind, int(number) if number.is_integer() and abs(number) <= MAX_EXACT_INTEGER else number
    if field == 3:
        return kind, _utf8_at(data, value, offset, field, where, kind)
    if field == 5:
        return kind, _decode_struct(data, value[0], value[1], where, depth + 1, budget)
    if field == 6:
        return kind, _decode_list(data, value[0], value[1], where, depth + 1, budget)
    return kind, None if field == 1 else bool(value)


def _decode_struct(data, pos, end, where, depth, budget):
    where += ".struct_value"
    result = {}
    for field, wire_type, offset, span in _iter_fields(data, pos, end, where, budget):
        if field != 1:
            raise ProtobufDecodeError("google.protobuf.Struct has no field %d" % field,
                                      data, offset, field, wire_type, where)
        _expect(data, offset, field, wire_type, WIRE_LEN, where, "fields")
        key, value = _decode_struct_entry(data, span, where, depth, budget)
        if key in result:
            raise ProtobufDecodeError("Struct key %s appears twice" % json.dumps(key),
                                      data, offset, field, wire_type, where)
        result[key] = value
    return result


def _decode_struct_entry(data, span, where, depth, budget):
    key = ""
    value_span = None
    seen = set()
    for field, wire_type, offset, value in _iter_fields(data, span[0], span[1], where, budget):
        _once(seen, data, offset, field, wire_type, where, "map entry field %d" % field)
        if field not in (1, 2):
            raise ProtobufDecodeError("map entry has no field %d" % field, data, offset, field, wire_type, where)
        _expect(data, offset, field, wire_type, WIRE_LEN, where, "map key" if field == 1 else "map value")
        if field == 1:
            key = _utf8_at(data, value, offset, field, where, "map key")
        else:
            value_span = value
    if value_span is None:
        raise ProtobufDecodeError("map entry for key %s has no value" % json.dumps(key), data, span[0], where=where)
    inner = "%s[%s]" % (where, json.dumps(key, ensure_ascii=False))
    return key, _decode_value(data, value_span[0], value_span[1], inner, depth, budget)


def _decode_list(data, pos, end, where, depth, budget):
    where += ".list_value"
    result = []
    for field, wire_type, offset, span in _iter_fields(data, pos, end, where, budget):
        if field != 1:
            raise ProtobufDecodeError("google.protobuf.ListValue has no field %d" % field,
                                      data, offset, field, wire_type, where)
        _expect(data, offset, field, wire_type, WIRE_LEN, where, "values")
        inner = "%s[%d]" % (where, len(result))
        result.append(_decode_value(data, span[0], span[1], inner, depth, budget))
    return result


# Messages of singular length-delimited fields: ({field number: name}, what an empty one decodes to).
TOOL_DEFINITION = ({1: "name", 2: "description", 3: "input_schema", 4: "provider_identifier", 5: "tool_name"},
                   {"name": "", "description": "", "input_schema": None, "provider_identifier": "", "tool_name": ""})
MCP_INSTRUCTIONS = ({1: "server_name", 2: "instructions", 3: "server_identifier"},
                    {"server_name": "", "instructions": ""})


def _decode_singular(data, pos, end, where, budget, message):
    """Decode a ``message`` (as TOOL_DEFINITION) into a dict: strings, and input_schema a Value."""
    # Unknown fields are skipped as protobuf-es skips them: an error here is the one Cursor's parser reports.
    names, item = message[0], dict(message[1])
    seen = set()
    for field, wire_type, offset, span in _iter_fields(data, pos, end, where, budget):
        name = names.get(field)
        if name is None:
            continue
        _expect(data, offset, field, wire_type, WIRE_LEN, where, name)
        _once(seen, data, offset, field, wire_type, where, name)
        if name == "input_schema":
            if span[1] > span[0]:
                item[name] = _decode_value(data, span[0], span[1], where + ".input_schema", 0, budget)
        else:
            item[name] = _utf8_at(data, span, offset, field, where, name)
    return item


def _decode_repeated(data, pos, end, where, budget, fields, result):
    """Append each message of a repeated field in ``fields`` ({number: (name, message)}) to ``result[name]``;
    other fields go to ``result["other_fields"]`` when ``result`` has that key, else they are skipped."""
    for field, wire_type, offset, span in _iter_fields(data, pos, end, where, budget):
        if field in fields:
            name, message = fields[field]
            _expect(data, offset, field, wire_type, WIRE_LEN, where, name)
            inner = "%s.%s[%d]" % (where, name, len(result[name]))
            result[name].append(_decode_singular(data, span[0], span[1], inner, budget, message))
        elif "other_fields" in result:
            result["other_fields"].append({"field": field, "wire_type": wire_type, "offset": offset})
    return result


def _decode_mcp_tools(data, pos, end, where, budget):
    fields = {1: ("mcp_tools", TOOL_DEFINITION)}
    return _decode_repeated(data, pos, end, where, budget, fields, {"mcp_tools": []})["mcp_tools"]


def decode_mcp_tools(data, max_fields=MAX_DECODED_FIELDS):
    """Decode a serialized ``McpTools`` into a list of tool dicts: name, description, input_schema (decoded
    JSON, None when absent), provider_identifier, tool_name.  Unknown fields are skipped as protobuf-es skips
    them; anything else malformed or mis-shaped raises ProtobufDecodeError."""
    data = _as_bytes(data)
    return _decode_mcp_tools(data, 0, len(data), "McpTools", _FieldBudget(max_fields))


def decode_agent_run_request(data, max_fields=MAX_DECODED_FIELDS):
    """Decode the tool part of an ``AgentRunRequest``: ``{"mcp_tools": ..., "other_fields": [...]}``; mcp_tools is
    None when field 4 is absent (Cursor adds its native catalog), [] for the empty wrapper.  Other fields are listed
    by number, wire type and offset, not decoded."""
    data = _as_bytes(data)
    where = "AgentRunRequest"
    result = {"mcp_tools": None, "other_fields": []}
    seen = set()
    budget = _FieldBudget(max_fields)
    for field, wire_type, offset, span in _iter_fields(data, 0, len(data), where, budget):
        if field != 4:
            result["other_fields"].append({"field": field, "wire_type": wire_type, "offset": offset})
            continue
        _expect(data, offset, field, wire_type, WIRE_LEN, where, "mcp_tools")
        _once(seen, data, offset, field, wire_type, where, "mcp_tools")
        result["mcp_tools"] = _decode_mcp_tools(data, span[0], span[1], where + ".mcp_tools", budget)
    return result


def decode_request_context(data, max_fields=MAX_DECODED_FIELDS):
    """Decode ``RequestContext.tools`` (field 7) and ``mcp_instructions`` (field 14) into
    ``{"tools": [...], "mcp_instructions": [...], "other_fields": [...]}``."""
    data = _as_bytes(data)
    fields = {7: ("tools", TOOL_DEFINITION), 14: ("mcp_instructions", MCP_INSTRUCTIONS)}
    result = {"tools": [], "mcp_instructions": [], "other_fields": []}
    return _decode_repeated(data, 0, len(data), "RequestContext", _FieldBudget(max_fields), fields, result)


# -- schema-less decoding, like `protoc --decode_raw` -------------------------


def decode_raw(data, max_fields=MAX_DECODED_FIELDS):
    """Decode any protobuf message without its schema into ``{"field", "wire_type", "offset", <value>}`` dicts.  The
    value key is ``varint``, ``fixed64`` (+ ``double``), ``fixed32`` (+ ``float``), ``group`` (a nested list), or for
    length-delimited fields ``string`` (UTF-8 text), ``message`` (a nested list, when the payload parses as one) or
    ``bytes`` (hex).  Malformed input raises ProtobufDecodeError."""
    data = _as_bytes(data)
    return _decode_raw_fields(data, 0, len(data), 0, None, _FieldBudget(max_fields))[0]


def _decode_raw_fields(data, pos, end, depth, group, budget):
    """Parse data[pos:end] into (fields, end position); inside a group, stop after its end tag."""
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
        budget.take(tag_pos)
        item = {"field": field, "wire_type": wire_type, "offset": tag_pos}
        pos = _decode_raw_value(data, pos, end, depth, item, where, budget)
        fields.append(item)
    if group is not None:
        raise ProtobufDecodeError("data ends inside group %d" % group, data, pos, group, WIRE_START_GROUP, where)
    return fields, pos


def _decode_raw_value(data, pos, end, depth, item, where, budget):
    field, wire_type = item["field"], item["wire_type"]
    if wire_type == WIRE_START_GROUP:
        if depth >= MAX_RAW_DEPTH:
            raise ProtobufDecodeError("groups nested deeper than %d" % MAX_RAW_DEPTH,
                                      data, pos, field, wire_type, where)
        item["group"], pos = _decode_raw_fields(data, pos, end, depth + 1, field, budget)
        return pos
    value, pos = _read_value(data, pos, end, where, field, wire_type)
    if wire_type == WIRE_VARINT:
        item["varint"] = value
    elif wire_type == WIRE_LEN:
        item.update(_guess_payload(data, value[0], value[1], depth, budget))
    else:
        _, name, unsigned, float_name, floating = FIXED_FORMATS[wire_type]
        item[name] = struct.unpack(unsigned, value)[0]
        number = struct.unpack(floating, value)[0]
        if math.isfinite(number):
            item[float_name] = number
    return pos


def _guess_payload(data, start, end, depth, budget):
    # Text is the likelier reading when every byte is printable: a message almost always holds a control byte.
    payload = data[start:end]
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and all(_is_text_byte(b) for b in payload):
        return {"string": text}
    if depth < MAX_RAW_DEPTH:
        left = budget.left
        try:
            return {"message": _decode_raw_fields(data, start, end, depth + 1, None, budget)[0]}
        except ProtobufDecodeError:
            budget.left = left  # that guess is dropped, and its fields with it
    if text is not None:
        return {"string": text}
    return {"bytes": payload.hex()}


# ---------------------------------------------------------------------------
# Tool catalog: normalising tool lists, tool_choice filtering, Cursor names
# ---------------------------------------------------------------------------

# Clients describe tools in four dialects (Responses, Chat Completions, MCP, Anthropic).  Everything
# downstream works on one normalised form, which normalize_tools() accepts too (normalising twice is harmless):
#
#     {"type": "function" | "custom", "name": raw name, "namespace": ns (if any),
#      "wire_name": ns + "__" + name or name, "description": str,
#      "input_schema": JSON Schema object, "freeform": True (custom tools only)}

CURSOR_PROVIDER = "opencodex-responses"

# Tools the model provider runs itself carry no schema a client could execute: no callable function.
HOSTED_TOOL_TYPES = frozenset([
    "web_search", "web_search_preview", "web_search_preview_2025_03_11", "image_generation", "file_search",
    "code_interpreter", "computer_use_preview", "computer_use", "mcp", "local_shell"])
# Anthropic's versioned built-in tools (bash_20250124, web_search_20250305...).
DATED_TOOL_TYPE_RE = re.compile(r"^[a-z_]+_\d{8}\Z")
SCHEMA_KEYS = ("parameters", "inputSchema", "input_schema")
# Codex puts plain functions in a reserved namespace that is not part of their name.
FLATTENED_NAMESPACES = frozenset(["functions"])


def freeform_input_schema():
    """The schema a freeform (``custom``) tool is advertised with: one required string."""
    return {"type": "object", "properties": {"input": {"type": "string"}},
            "required": ["input"], "additionalProperties": False}


def split_catalog(document):
    """(tools list, tool_choice or None) from a tools array, a request body with ``tools`` (and maybe
    ``tool_choice``), an MCP ``tools/list`` result or the JSON-RPC response holding it, or one tool object."""
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


def normalize_tools(tools, notes=None):
    """Normalise a tool list, or any document split_catalog() accepts, in any client dialect.  Hosted tools without a
    schema and repeated wire names are dropped, each with a sentence in ``notes`` when a list is given, else logged.
    A tool of unknown shape raises OcxError naming its index."""
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
        notes.append("dropped hosted tool %s (%s): it has no schema a client can run" % (where, kind))
        return []
    name = tool.get("name")
    if name is None and kind == "tool_search":
        name = "tool_search"
    if not isinstance(name, str) or not name:
        raise OcxError("%s: unknown tool shape: no \"name\" string (type %s)" % (where, json.dumps(kind)))
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
    description = "" if tool.get("description") is None else tool["description"]
    if not isinstance(description, str):
        raise OcxError("%s: \"description\" must be a string" % where)
    # OpenAI's freeform tools are "custom" without a schema; Anthropic's "custom" tools carry input_schema
    # and are ordinary functions.
    freeform = kind == "custom" and (tool.get("freeform") is True or not _has_schema(tool))
    item = {"type": "custom" if freeform else "function", "name": name}
    if namespace:
        item["namespace"] = namespace
    item["wire_name"] = "%s__%s" % (namespace, name) if namespace else name
    item["description"] = description
    item["input_schema"] = freeform_input_schema() if freeform else _schema_of(tool)
    if freeform:
        item["freeform"] = True
    return item


def _schema_of(tool):
    """The tool's first schema key; an empty object schema when none is set or it is no object."""
    schema = next((tool[key] for key in SCHEMA_KEYS if key in tool), None)
    return schema if isinstance(schema, dict) else {"type": "object", "properties": {}}


def filter_tools(tools, tool_choice):
    """The tools a ``tool_choice`` (any dialect; see tool_choice_names) allows, in catalog order: those matching
    a listed name by raw name, wire name (``ns__name``) or ``ns.name``; an allowed_tools ``mode`` changes none."""
    tools = normalize_tools(tools)
    names = tool_choice_names(tool_choice)
    if names is None:
        return tools
    return [tool for tool in tools if tool_matches(tool, names)]


def tool_choice_names(tool_choice):
    """None when a choice keeps every tool (None, auto, required, Anthropic any), else the names it allows."""
    if tool_choice is None:
        return None
    if tool_choice in ("auto", "none", "required"):
        tool_choice = {"type": tool_choice}
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
    if isinstance(kind, str) and kind in HOSTED_TOOL_TYPES:
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
    """Serialize a catalog (as normalize_tools() takes it, filtered by ``tool_choice``) as Cursor's ``McpTools``,
    each tool's ``name`` and ``tool_name`` its wire name.  Crossing Cursor's limits logs a warning; nothing is cut."""
    selected = filter_tools(tools, tool_choice)
    # McpTools { repeated McpToolDefinition mcp_tools = 1 }
    data = b"".join(encode_bytes_field(1, _tool_definition(tool, provider_identifier)) for tool in selected)
    for warning in cursor_limit_warnings(len(selected), len(data)):
        log.warning(warning)
    return data


def encode_request_context(tools=(), mcp_instructions=None, tool_choice=None, provider_identifier=CURSOR_PROVIDER):
    """Serialize the second channel, ``RequestContext``, with only tool fields set.  ``mcp_instructions`` is None, a
    string (under ``provider_identifier`` as server name), a ``{"server_name", "instructions"}`` dict or a list of
    those.  Cursor describes these tools to the model but does not make them callable (AgentRunRequest.mcp_tools)."""
    selected = filter_tools(tools, tool_choice) if tools else []
    parts = [encode_bytes_field(7, _tool_definition(tool, provider_identifier)) for tool in selected]
    # McpInstructions { server_name = 1; instructions = 2 }
    parts.extend(encode_bytes_field(14, _encode_singular((item.get("server_name", ""), item.get("instructions", ""))))
                 for item in _instruction_items(mcp_instructions, provider_identifier))
    return b"".join(parts)


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
    """The name Cursor shows the model, ``mcp_<provider>_<tool>``, of a wire name, a decoded definition or a
    normalised tool."""
    if isinstance(tool, dict):
        name = tool.get("tool_name") or tool.get("wire_name") or tool.get("name")
        provider = provider_identifier or tool.get("provider_identifier") or CURSOR_PROVIDER
    else:
        name, provider = tool, provider_identifier or CURSOR_PROVIDER
    return "mcp_%s_%s" % (provider, name)


def normalize_cursor_wire_name(name, provider_identifier=CURSOR_PROVIDER):
    """Fold a display name the model echoed (``mcp_<provider>_x``) back to ``x``; only that exact prefix
    goes, as ``mcp_`` alone starts many real tool names (``mcp__fs__read_file``)."""
    prefix = "mcp_%s_" % provider_identifier
    if name.startswith(prefix) and len(name) > len(prefix):
        return name[len(prefix):]
    return name


# ---------------------------------------------------------------------------
# Capture: capture-only MCP bridge (advertise a catalog, record calls)
# ---------------------------------------------------------------------------

# An agent CLI run with its built-in tools off has no legitimate way to ask for a tool.  This MCP server gives it
# one: it advertises exactly the caller's catalog, turns each tools/call into an OpenAI Responses function_call line
# and never runs anything.  Execution, approval and sandboxing stay with the outer client.


CAPTURE_MAX_CATALOG_BYTES = 2 * 1024 * 1024
CAPTURE_MAX_TOOLS = 128
CAPTURE_MAX_SCHEMA_DEPTH = 32
CAPTURE_EXIT_REFUSED = 3
CAPTURE_REFUSED = -32010  # too many calls: a server-defined code, distinct from the relay's
CAPTURE_SERVER_NAME = "opencodex"   # defaults of --server-name, --max-calls, --max-argument-bytes
CAPTURE_MAX_CALLS = 16
CAPTURE_MAX_ARGUMENT_BYTES = 65536

# mcp__<server>__<alias> must stay a function name agent CLIs can send their model (openai's function_name_chars
# in CLIENTS): 5 + 17 + 2 + 40 = 64.
ALIAS_RE = re.compile(r"^[A-Za-z0-9_-]{1,40}\Z")
SERVER_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,17}\Z")
ALIAS_HASH_CHARS = 16
ALIAS_PREFIX_CHARS = 40 - 1 - ALIAS_HASH_CHARS


def load_capture_catalog(path, tool_choice=None):
    """Read, bound-check (the CAPTURE_MAX_* limits) and filter a catalog file into (tools, tool_choice used);
    ``tool_choice`` None means the document's own.  A violation raises OcxError naming the limit."""
    data = _read_bounded_regular_file(path, CAPTURE_MAX_CATALOG_BYTES)
    document = load_json_strict(data, "catalog %s" % path)
    tools, body_choice = split_catalog(document)
    choice = body_choice if tool_choice is None else tool_choice
    notes = []
    selected = filter_tools(normalize_tools(tools, notes), choice)
    if not selected and tool_choice_names(choice):
        raise OcxError("tool_choice %s matches no tool in the catalog" % dumps(choice))
    if not selected and choice in ("required", {"type": "any"}):
        raise OcxError("tool_choice requires a tool call but the catalog has no tool")
    if len(selected) > CAPTURE_MAX_TOOLS:
        raise OcxError("catalog limit: %d tools to advertise, at most %d" % (len(selected), CAPTURE_MAX_TOOLS))
    for tool in selected:
        _check_capture_schema(tool)
    for note in notes:  # only once the catalog is accepted, so an error stays one line
        log.info(note)
    return selected, choice


def _read_bounded_regular_file(path, limit):
    try:
        # O_NONBLOCK keeps a FIFO from blocking the open; fstat then refuses it.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        raise OcxError("cannot open catalog %s: %s" % (path, exc.strerror or exc))
    try:
        before = os.fstat(fd)
        if not stat.S_ISREG(before.st_mode):
            raise OcxError("catalog limit: %s is not a regular file" % path)
        if before.st_size > limit:
            raise OcxError("catalog limit: %s is %d bytes, at most %d" % (path, before.st_size, limit))
        with open(fd, "rb", buffering=0, closefd=False) as stream:
            data = read_at_most(stream, limit + 1)
        after = os.fstat(fd)
    except OSError as exc:
        raise OcxError("cannot read catalog %s: %s" % (path, exc.strerror or exc))
    finally:
        os.close(fd)
    if len(data) > limit:
        raise OcxError("catalog limit: %s grew past %d bytes while being read" % (path, limit))
    if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns) or len(data) != before.st_size:
        raise OcxError("catalog %s changed while being read" % path)
    return data


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
            node = node.values()
        stack.extend((value, depth + 1) for value in node if isinstance(value, (dict, list)))


def capture_aliases(wire_names):
    """Map each wire name to an alias matching ALIAS_RE: itself when it fits (reserved first), else a cleaned
    prefix and a sha256 digest, assigned in sorted order and re-hashed on a clash (catalog order is moot)."""
    aliases = {name: name for name in wire_names if ALIAS_RE.match(name)}
    taken = set(aliases.values())
    for name in sorted(set(wire_names) - set(aliases)):
        for attempt in itertools.count():
            alias = _hashed_alias(name, attempt)
            if alias not in taken:
                break
        aliases[name] = alias
        taken.add(alias)
    return aliases


def _hashed_alias(name, attempt):
    import hashlib  # lazily, as in Spill.stem: it loads OpenSSL
    seed = name if attempt == 0 else "%s\x00%d" % (name, attempt)
    digest = hashlib.sha256(seed.encode("utf-8", "surrogatepass")).hexdigest()
    prefix = re.sub(r"[^A-Za-z0-9_-]+", "_", name)[:ALIAS_PREFIX_CHARS]
    return "%s_%s" % (prefix, digest[:ALIAS_HASH_CHARS])


def capture_allowed_tools(server_name, aliases):
    """The exact ``--allowedTools`` value: ``mcp__<server>__<alias>``, comma-joined."""
    return ",".join("mcp__%s__%s" % (server_name, alias) for alias in aliases)


class CaptureSession:
    """One capture-only MCP session, independent of any transport: ``handle_line`` takes one JSON-RPC line and
    returns the messages to send back.  Accepted calls and refusals are written to ``out`` (binary) as NDJSON at
    once; ``failed`` turns true on the first refusal."""

    def __init__(self, tools, out, server_name=CAPTURE_SERVER_NAME, max_calls=CAPTURE_MAX_CALLS,
                 max_argument_bytes=CAPTURE_MAX_ARGUMENT_BYTES, reply="pending", page_size=50):
        self.out = out
        self.server_name = server_name
        self.max_calls = max_calls
        self.max_argument_bytes = max_argument_bytes
        self.reply = reply
        self.page_size = page_size
        aliases = capture_aliases([tool["wire_name"] for tool in tools])
        self.by_alias = {aliases[tool["wire_name"]]: tool for tool in tools}
        self.listing = [_mcp_tool_entry(alias, tool) for alias, tool in self.by_alias.items()]
        self.initialized = False
        self.calls = 0
        self.failed = False

    def handle_line(self, line):
        if line is None:
            return [self._refuse(None, INVALID_REQUEST, "line_too_large", "message longer than the line limit")]
        if not line.strip():
            return []
        try:
            message = load_json_strict(line, "line")
        except OcxError as exc:
            return [self._refuse(None, PARSE_ERROR, "parse_error", str(exc))]
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
            return self._refuse(msg_id, INVALID_REQUEST, "invalid_request", "not a JSON-RPC request or notification")
        method = message["method"]
        if kind == "notification":
            if method == "tools/call":
                return self._refuse(None, INVALID_REQUEST, "invalid_request",
                                    "tools/call sent as a notification (no id)")
            return None
        msg_id = message["id"]
        params = message.get("params")  # each handler checks that it is an object
        if method == "initialize":
            return self._initialize(msg_id, params)
        if method == "ping":
            return result_response(msg_id, {})
        if method == "tools/call":
            return self._call(msg_id, params)
        if not self.initialized:
            return error_response(msg_id, INVALID_REQUEST, "server not initialized")
        if method == "tools/list":
            return self._list(msg_id, params)
        return error_response(msg_id, METHOD_NOT_FOUND, "method not found: %s" % method)

    def _initialize(self, msg_id, params):
        requested = params.get("protocolVersion") if isinstance(params, dict) else None
        self.initialized = True
        return result_response(msg_id, {
            "protocolVersion": served_version(requested),
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": self.server_name, "version": __version__},
            "instructions": "Tools here are captured for the client to run; results come in the next turn.",
        })

    def _list(self, msg_id, params):
        cursor = params.get("cursor") if isinstance(params, dict) else None
        start = 0
        if cursor is not None:
            if not isinstance(cursor, str) or not re.match(r"[0-9]{1,9}\Z", cursor) or int(cursor) > len(self.listing):
                return error_response(msg_id, INVALID_PARAMS, "invalid cursor")
            start = int(cursor)
        end = start + self.page_size
        result = {"tools": self.listing[start:end]}
        if end < len(self.listing):
            result["nextCursor"] = str(end)
        return result_response(msg_id, result)

    def _call(self, msg_id, params):
        name = params.get("name") if isinstance(params, dict) else None
        if not self.initialized:
            return self._refuse(msg_id, INVALID_REQUEST, "not_initialized", "tools/call before initialize", name)
        tool = self.by_alias.get(name) if isinstance(name, str) else None
        if tool is None:
            shown = name if isinstance(name, str) else dumps(name)
            shown = shown if len(shown) <= 80 else shown[:77] + "..."
            return self._refuse(msg_id, INVALID_PARAMS, "unknown_tool", "unknown tool: %s" % shown, name)
        arguments = {} if params.get("arguments") is None else params["arguments"]
        if not isinstance(arguments, dict):
            return self._refuse(msg_id, INVALID_PARAMS, "bad_arguments", "arguments must be a JSON object", name)
        text = dumps(arguments)
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > self.max_argument_bytes:
            return self._refuse(msg_id, INVALID_PARAMS, "arguments_too_large", "arguments are %d bytes, over "
                                "--max-argument-bytes %d" % (size, self.max_argument_bytes), name)
        if self.calls >= self.max_calls:
            return self._refuse(msg_id, CAPTURE_REFUSED, "too_many_calls",
                                "more than --max-calls %d calls in this session" % self.max_calls, name)
        record = _call_record(tool, arguments, text)
        if record is None:
            return self._refuse(msg_id, INVALID_PARAMS, "bad_arguments", "freeform tool %s takes one string "
                                "argument \"input\"" % tool["wire_name"], name)
        self.calls += 1
        self._write(record)
        log.info("captured %s: %s" % (record["call_id"], tool["wire_name"]))
        if self.reply == "pending":
            return None  # the outer client ends the turn; this call is never answered
        return result_response(msg_id, {"content": [{"type": "text", "text": (
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
        if set(arguments) != set(["input"]) or not isinstance(arguments["input"], str):
            return None
        return {"type": "custom_tool_call", "call_id": call_id, "name": tool["wire_name"], "input": arguments["input"]}
    return {"type": "function_call", "call_id": call_id, "name": tool["wire_name"], "arguments": text}


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
        raise UsageError("--out %s is not an open file descriptor (%s)" % (spec, exc.strerror or exc))


def open_capture_output(spec):
    """``--out``, which the caller has checked with check_capture_output: FILE (appended to) or ``fd:N``."""
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
# Catalog checker: check's findings on a catalog, each client rule's from CATALOG_RULES
# ---------------------------------------------------------------------------

MCP_TOOL_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,128}\Z")
JSON_SCHEMA_TYPES = frozenset(["string", "number", "integer", "boolean", "object", "array", "null"])
SCHEMA_SIZE_LIMIT = 100000      # characters of one schema's compact JSON
BOUND_PAIRS = (("minimum", "maximum"), ("exclusiveMinimum", "exclusiveMaximum"), ("minLength", "maxLength"),
               ("minItems", "maxItems"), ("minProperties", "maxProperties"))

REPEATED_BLOCK_BYTES = 500      # compact JSON size from which a repeated schema block is a cost note


class Finding:
    """One problem: severity, where (JSON pointer), what, and which clients it breaks.  A client rule's finding
    names it (``rule``, a key of CATALOG_RULES) with its ``source``: {"ref": report or note, "observed": version}."""

    SEVERITIES = ("error", "warning", "info")

    def __init__(self, severity, pointer, message, clients=("all",), tool=None, rule=None, source=None):
        self.severity = severity
        self.pointer = pointer
        self.message = message
        self.clients = tuple(clients)
        self.tool = tool
        self.rule = rule
        self.source = source

    def affects(self, client):
        return client == "all" or "all" in self.clients or client in self.clients

    def to_json(self):
        data = {"severity": self.severity, "pointer": self.pointer, "message": self.message,
                "clients": list(self.clients), "tool": self.tool}
        if self.rule is not None:
            data["rule"] = self.rule
            data["source"] = self.source
            data["fixedFor"] = [name for name in CLIENTS if CLIENTS[name].profile and self.rule in fit_rules(name)]
        return data


class CatalogChecker:
    """Applies the rules to a catalog snapshot, which pointers refer to, and collects Findings.  The snapshot is
    ``{"initialize": result, "tools": [...], "prompts", "resources", "resourceTemplates": [...]}``, with
    ``"discover"`` (the server/discover result) instead of ``"initialize"`` for a server checked in the modern era."""

    def __init__(self, server_name=None):
        self.server_name = server_name
        self.findings = []
        self.cursor_bytes = None
        self.model_hits = None      # rule -> [(pointer, what)] while an inputSchema is walked

    def add(self, severity, pointer, message, clients=("all",), tool=None, rule=None, source=None):
        self.findings.append(Finding(severity, pointer, message, clients, tool, rule, source))

    def add_rule(self, rule, pointer, message, tool=None):
        """A finding of the client rule ``rule``: its severity, clients and source come from CATALOG_RULES."""
        row = CATALOG_RULES[rule]
        self.add(row.severity, pointer, message, row.clients, tool, rule, {"ref": row.ref, "observed": row.observed})

    def check(self, snapshot, requested_version=None):
        if "initialize" in snapshot:
            self.check_initialize(snapshot["initialize"], requested_version)
        if "discover" in snapshot:
            self.check_discover(snapshot["discover"])
        self.check_tools(snapshot.get("tools") or [])
        for key, field in (("prompts", "name"), ("resources", "uri"), ("resourceTemplates", "uriTemplate")):
            for index, item in enumerate(snapshot.get(key) or []):
                if not isinstance(item, dict) or not isinstance(item.get(field), str):
                    self.add("error", json_pointer(key, index), "%s entry has no %s string" % (key, field))
        return self.findings

    # -- conformance ---------------------------------------------------------

    def check_initialize(self, result, requested_version):
        if not isinstance(result, dict):
            self.add("error", "/initialize", "initialize result is not an object")
            return
        version = result.get("protocolVersion")
        if not isinstance(version, str):
            self.add("error", "/initialize/protocolVersion", "initialize result has no protocolVersion string")
        elif version not in PROTOCOL_VERSIONS:
            self.add("error", "/initialize/protocolVersion", "server negotiated unknown protocol version %r "
                     "(known: %s)" % (version, ", ".join(PROTOCOL_VERSIONS)))
        elif requested_version and version != requested_version:
            self.add("info", "/initialize/protocolVersion", "server answered protocol %s to our %s (allowed: "
                     "clients accept an older version they support)" % (version, requested_version))
        if not isinstance(result.get("capabilities"), dict):
            self.add("error", "/initialize/capabilities", "initialize result has no capabilities object")
        info = result.get("serverInfo")
        if not isinstance(info, dict) or not isinstance(info.get("name"), str):
            self.add("error", "/initialize/serverInfo", "initialize result has no serverInfo.name")

    def check_discover(self, result):
        # fetch_catalog took it as a DiscoverResult: an object with supportedVersions.
        if not isinstance(result.get("capabilities"), dict):
            self.add("error", "/discover/capabilities", "server/discover result has no capabilities object")
        if not isinstance((server_info(result) or {}).get("name"), str):
            self.add("info", json_pointer("discover", "_meta", META_SERVER_INFO), "server/discover result names no "
                     "server (clients show none)")

    # -- tools ---------------------------------------------------------------

    def check_tools(self, tools):
        seen = {}
        sanitized = {}
        for index, tool in enumerate(tools):
            base = json_pointer("tools", index)
            if not isinstance(tool, dict):
                self.add("error", base, "tool entry is not an object")
                continue
            name = tool.get("name")
            if not isinstance(name, str) or not name:
                self.add("error", base + "/name", "tool has no name string")
                continue
            if name in seen:
                self.add("error", base + "/name", "duplicate tool name %r (also %s)" % (name, seen[name]), tool=name)
            seen.setdefault(name, base)
            clean = NAME_OUTSIDE_RE.sub("_", name)[:CLIENTS["openai"].facts.function_name_chars]
            sanitized.setdefault(clean, set()).add(name)
            self.check_tool_name(name, base, tool=name)
            self.check_description(tool, base, name)
            if "inputSchema" not in tool:
                self.add("error", base + "/inputSchema", "tool has no inputSchema (MCP requires one)", tool=name)
            else:
                self.check_root_schema(tool["inputSchema"], base + "/inputSchema", name)
            if "outputSchema" in tool:
                self.check_root_schema(tool["outputSchema"], base + "/outputSchema", name, model_facing=False)
        for clean, names in sorted(sanitized.items()):
            if len(names) > 1:
                self.add_rule("sanitized-collision", "/tools", "tool names %s collide after sanitising to %r for "
                              "function-calling APIs" % (", ".join(sorted(map(repr, names))), clean))
        self.check_limits(tools)
        self.check_repetition(tools)

    def check_tool_name(self, name, base, tool):
        pointer = base + "/name"
        if not MCP_TOOL_NAME_RE.match(name):
            self.add("warning", pointer, "name %r breaks the MCP naming rule %s" % (name, MCP_TOOL_NAME_RE.pattern),
                     tool=tool)
        odd = sorted(set(NAME_OUTSIDE_RE.findall(name)))
        if odd:
            self.add_rule("name-chars", pointer, "name %r has %s: OpenAI, the Anthropic API, Claude Desktop and Cursor "
                          "take only %s" % (name, " ".join(map(repr, odd)), OPENAI_TOOL_NAME_PATTERN), tool=tool)
        names = {"server": self.server_name or "", "tool": name}
        for row in NAME_LENGTH_RULES:
            full, limit = row.spelled % names, getattr(CLIENTS[row.client].facts, row.fact)
            if len(full) > limit:
                self.add_rule(row.rule, pointer, row.finding % dict(names, full=full, length=len(full), limit=limit),
                              tool=tool)

    def check_description(self, tool, base, name):
        description, limit = tool.get("description"), CLIENTS["claude-code"].facts.description_chars
        if description is None:
            return
        if not isinstance(description, str):
            self.add("error", base + "/description", "description is not a string", tool=name)
        elif len(description) > limit:
            self.add_rule("claude-code-description", base + "/description", "description has %d characters; "
                          "Claude Code cuts it at %d" % (len(description), limit), tool=name)

    def check_limits(self, tools):
        count = len(tools)
        self.check_cursor_tool_count(count, "/tools")
        for rule, client in TOOL_COUNT_CAPS:
            cap = CLIENTS[client].facts.model_tools
            if count > cap:
                self.add_rule(rule, "/tools", "%d tools: %s takes at most %d across all servers" % (
                    count, CLIENTS[client].display, cap))
        valid = [t for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str) and t.get("name")]
        try:
            # Integers past 2^53 are reported above; as doubles they take the same 8 bytes.
            size = len(encode_mcp_tools(doubles_for_big_integers(valid)))
        except OcxError as exc:
            self.add("error", "/tools", "the catalog cannot be encoded as Cursor McpTools: %s" % exc, ("cursor",))
            return
        self.cursor_bytes = size
        self.check_mcp_tools_size(size, len(valid), "/tools")

    def check_cursor_tool_count(self, count, pointer, together=""):
        """Cursor's tool count rules for ``count`` tools: of one catalog, or ``together`` (" in all") those of every
        server a configuration loads (combined_findings)."""
        cursor = CLIENTS["cursor"].facts
        if count > cursor.model_tools:
            self.add_rule("cursor-tool-count", pointer, "%d tools%s: Cursor sends at most %d to the model (older "
                          "versions only %d)" % (count, together, cursor.model_tools, cursor.model_tools_old))
        elif count > cursor.model_tools_old:
            self.add_rule("cursor-tool-count-old", pointer, "%d tools%s: older Cursor versions send only the first "
                          "%d to the model (80, then %d in later versions)"
                          % (count, together, cursor.model_tools_old, cursor.model_tools))

    def check_mcp_tools_size(self, size, count, pointer, together=""):
        """Cursor's McpTools rule for ``count`` tools encoded in ``size`` bytes (``together``: as above)."""
        cursor = CLIENTS["cursor"].facts
        if size > cursor.mcp_tools_bytes or count > cursor.mcp_tools_count:
            self.add_rule("cursor-mcp-tools-size", pointer, "Cursor McpTools would be %d bytes for %d tools%s; about "
                          "%d bytes and %d tools are the most Cursor accepts"
                          % (size, count, together, cursor.mcp_tools_bytes, cursor.mcp_tools_count))

    def check_repetition(self, tools):
        """One note for inputSchema blocks that repeat across the catalog: their bytes go to the model with every
        request (outputSchemas mostly do not)."""
        schemas = [(json_pointer("tools", index, "inputSchema"), tool["inputSchema"])
                   for index, tool in enumerate(tools) if isinstance(tool, dict) and "inputSchema" in tool]
        counts = collections.Counter()
        try:
            for pointer, schema in schemas:
                for _, block in schema_blocks(schema, pointer):
                    counts[block] += 1
        except (TypeError, ValueError):     # a number JSON cannot carry was reported above
            return
        repeated = collections.OrderedDict()
        for pointer, schema in schemas:
            for where, block in schema_blocks(schema, pointer, lambda block: counts[block] > 1):
                repeated.setdefault(block, []).append(where)
        repeated = [(block[0], places) for block, places in repeated.items() if len(places) > 1]
        if not repeated:
            return
        cost = sum(size * len(places) for size, places in repeated)
        total = sum(len(dumps(schema)) for _, schema in schemas)
        size, places = max(repeated, key=lambda item: item[0] * len(item[1]))
        self.add_rule("schema-repetition", places[0], "%d of the %d bytes of this catalog's inputSchemas are %d blocks "
                      "repeated %d times, sent with every request; the costliest, %d bytes, %d times (also at %s). Use "
                      "$defs/$ref where a tool repeats a block, shorten one that tools share"
                      % (cost, total, len(repeated), sum(len(p) for _, p in repeated), size, len(places),
                         ", ".join(places[1:3]) + (", ..." if len(places) > 3 else "")))

    # -- schemas -------------------------------------------------------------

    def check_root_schema(self, schema, pointer, tool, model_facing=True):
        """Check a tool's inputSchema (``model_facing``: clients hand it to the model API, whose rules apply too) or
        outputSchema."""
        if not isinstance(schema, dict):
            self.add("error", pointer, "schema is not an object", tool=tool)
            return
        if schema.get("type") != "object":
            message = "root schema must have \"type\": \"object\" (has %s)" % json.dumps(schema.get("type"))
            if model_facing:
                self.add("error", pointer + "/type", message, tool=tool)
            else:
                self.add_rule("output-schema-type", pointer + "/type", message + ": clients built on the TypeScript "
                              "SDK reject the whole tools/list and lose every tool of this server", tool=tool)
        combinators = [key for key in ("oneOf", "anyOf", "allOf") if key in schema]
        if model_facing and combinators:
            self.add_rule("root-combinator", pointer + "/" + combinators[0], "%s at the root of inputSchema: the "
                          "Anthropic API rejects the whole request (Claude Code drops the tool), OpenAI rejects "
                          "the function" % "/".join(combinators), tool=tool)
        size = len(dumps(schema))
        if size > SCHEMA_SIZE_LIMIT:
            self.add("warning", pointer, "schema is %d characters of JSON; large schemas cost context and hit client "
                     "size limits" % size, tool=tool)
        self.depth_reported = False
        self.model_hits = collections.OrderedDict() if model_facing else None
        self.check_schema(schema, pointer, tool, schema, 0)
        if model_facing:
            self.report_model_hits(tool)

    def check_schema(self, node, pointer, tool, root, depth):
        if isinstance(node, bool):
            return
        if not isinstance(node, dict):
            self.add("error", pointer, "a schema must be an object or a boolean, not %s" % type_name(node), tool=tool)
            return
        if depth > SCHEMA_DEPTH_LIMIT:
            if not self.depth_reported:
                self.depth_reported = True
                self.add("warning", pointer, "schema nests deeper than %d levels" % SCHEMA_DEPTH_LIMIT, tool=tool)
            return
        self.check_type(node, pointer, tool)
        self.check_required(node, pointer, tool)
        self.check_keyword_values(node, pointer, tool, root)
        if self.model_hits is not None:
            self.check_model_rules(node, pointer, depth)
        for key in SCHEMA_KEYWORDS_ONE:
            if key in node:
                self.check_schema(node[key], pointer + json_pointer(key), tool, root, depth + 1)
        for key in SCHEMA_KEYWORDS_MAP + SCHEMA_KEYWORDS_LIST:
            if key not in node:
                continue
            value = node[key]
            if key in SCHEMA_KEYWORDS_MAP and isinstance(value, dict):
                parts = value.items()
            elif key in SCHEMA_KEYWORDS_LIST and isinstance(value, list) and value:
                parts = enumerate(value)
            else:
                shape = "an object" if key in SCHEMA_KEYWORDS_MAP else "a non-empty array"
                self.add("error", pointer + json_pointer(key), "%s must be %s of schemas" % (key, shape), tool=tool)
                continue
            for part, sub in parts:
                self.check_schema(sub, pointer + json_pointer(key, part), tool, root, depth + 1)
        if "items" in node:
            self.check_items(node["items"], pointer + "/items", tool, root, depth)

    def check_model_rules(self, node, pointer, depth):
        """Note where one node of an inputSchema breaks a model API's or client's rule; report_model_hits turns the
        notes into one finding per rule."""
        def hit(rule, key, what):
            self.model_hits.setdefault(rule, []).append((pointer + json_pointer(key), what))
        kind = node.get("type")
        if isinstance(kind, list) and len(kind) > 1:
            hit("cursor-type-array", "type", json.dumps(kind))
            hit("gemini-type-array", "type", json.dumps(kind))
        if depth and "allOf" in node:
            hit("nested-allof", "allOf", "allOf")
        for key in ("additionalProperties", "$ref", "$defs", "definitions"):
            if key in node:
                hit("gemini-additional-properties" if key == "additionalProperties" else "gemini-ref", key, key)
        enum = node.get("enum")
        if isinstance(enum, list) and not all(isinstance(value, str) for value in enum):
            hit("gemini-enum-type", "enum", "enum " + json.dumps(enum)[:40])
        form = node.get("format")
        if "format" in node and not (isinstance(form, str) and form in GEMINI_FORMATS):
            hit("gemini-format", "format", "format " + json.dumps(form))
        for key in CODEX_DROPPED_KEYWORDS:
            if key in node:
                hit("codex-dropped-keywords", key, key)

    def report_model_hits(self, tool):
        """One finding per rule a schema breaks, at its first place: a schema generator repeats a construct
        everywhere, and one line says enough."""
        for rule, hits in self.model_hits.items():
            what = list(collections.OrderedDict.fromkeys(what for _, what in hits))
            places = " (%d places)" % len(hits) if len(hits) > 1 else ""
            self.add_rule(rule, hits[0][0], "%s; here: %s%s" % (CATALOG_RULES[rule].text, ", ".join(what), places),
                          tool=tool)

    def check_type(self, node, pointer, tool):
        if "type" not in node:
            return
        value = node["type"]
        names = value if isinstance(value, list) else [value]
        bad = [n for n in names if not isinstance(n, str) or n not in JSON_SCHEMA_TYPES]
        if bad or not names or (isinstance(value, list) and len(set(map(str, names))) != len(names)):
            self.add("error", pointer + "/type", "invalid type %s (use one of %s, or an array of unique ones)" % (
                json.dumps(value), ", ".join(sorted(JSON_SCHEMA_TYPES))), tool=tool)

    def check_required(self, node, pointer, tool):
        if "required" not in node:
            return
        required = node["required"]
        if not isinstance(required, list):
            self.add("error", pointer + "/required", "required must be an array of property names, not %s" % (
                type_name(required)), tool=tool)
            return
        properties = node.get("properties")
        closed = node.get("additionalProperties") is False
        listed = isinstance(properties, dict)
        seen = set()
        for index, name in enumerate(required):
            where = pointer + json_pointer("required", index)
            if not isinstance(name, str):
                self.add("error", where, "required entries must be strings, not %s" % type_name(name), tool=tool)
            elif name in seen:
                self.add("error", where, "%r appears twice in required" % name, tool=tool)
            elif (listed or closed) and name not in (properties or {}):
                self.add("error", where, "%r is required but not defined in properties" % name, tool=tool)
            seen.add(name if isinstance(name, str) else None)

    def check_items(self, items, pointer, tool, root, depth):
        if isinstance(items, list):
            for index, sub in enumerate(items):
                self.check_schema(sub, pointer + json_pointer(index), tool, root, depth + 1)
        elif isinstance(items, (dict, bool)):
            self.check_schema(items, pointer, tool, root, depth + 1)
        else:
            hint = ' (did you mean {"type": %s}?)' % json.dumps(items) if items in JSON_SCHEMA_TYPES else ""
            self.add("error", pointer, "items must be a schema or an array of schemas, not %s%s" % (
                type_name(items), hint), tool=tool)

    def check_keyword_values(self, node, pointer, tool, root):
        if "enum" in node and (not isinstance(node["enum"], list) or not node["enum"]):
            self.add("error", pointer + "/enum", "enum must be a non-empty array", tool=tool)
        for low, high in BOUND_PAIRS:
            a, b = node.get(low), node.get(high)
            if is_number(a) and is_number(b) and a > b:
                self.add("error", pointer + "/" + low, "%s (%s) is greater than %s (%s)" % (low, a, high, b), tool=tool)
        patterns = [("pattern", node.get("pattern"))] if "pattern" in node else []
        if isinstance(node.get("patternProperties"), dict):
            patterns += [(json_pointer("patternProperties", key)[1:], key) for key in node["patternProperties"]]
        for where, pattern in patterns:
            self.check_pattern(pattern, pointer + "/" + where, tool)
        if "$ref" in node:
            self.check_ref(node["$ref"], pointer + "/$ref", tool, root)
        for key in ("default", "const", "enum", "examples", "minimum", "maximum", "multipleOf"):
            if key in node:
                self.check_big_integers(node[key], pointer + json_pointer(key), tool)

    def check_pattern(self, pattern, pointer, tool):
        if not isinstance(pattern, str):
            self.add("error", pointer, "pattern must be a string", tool=tool)
            return
        try:
            re.compile(pattern)
        except re.error as exc:
            self.add("warning", pointer, "pattern %r does not compile in Python re (%s); JSON Schema uses the "
                     "ECMA-262 dialect, so check it in a JavaScript client too" % (pattern, exc), tool=tool)

    def check_ref(self, ref, pointer, tool, root):
        if not isinstance(ref, str):
            self.add("error", pointer, "$ref must be a string", tool=tool)
        elif ref.startswith("#"):
            try:
                resolve_pointer(root, ref[1:])
            except KeyError:
                self.add("error", pointer, "$ref %r does not resolve inside this schema" % ref, tool=tool)
        else:
            self.add("warning", pointer, "$ref %r points outside the schema; clients do not fetch it" % ref, tool=tool)

    def check_big_integers(self, value, pointer, tool):
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_EXACT_INTEGER:
            self.add_rule("big-integer", pointer, "integer %d is beyond 2^53: it loses precision in protobuf Value "
                          "(Cursor) and JavaScript clients" % value, tool=tool)
        elif isinstance(value, (list, dict)):
            for key, item in value.items() if isinstance(value, dict) else enumerate(value):
                self.check_big_integers(item, pointer + json_pointer(key), tool)


def schema_blocks(node, pointer, stop=None):
    """(pointer, (size, hash)) of every object in a schema of at least REPEATED_BLOCK_BYTES of compact JSON, outermost
    first; with ``stop``, only the blocks it accepts and nothing inside them."""
    children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    if isinstance(node, dict):
        text = json.dumps(node, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        if len(text.encode("utf-8")) >= REPEATED_BLOCK_BYTES:
            block = (len(text.encode("utf-8")), hash(text))
            if stop is None or stop(block):
                yield pointer, block
                if stop is not None:
                    return
        else:
            return      # nothing inside a small block is big
    for key, child in children:
        for item in schema_blocks(child, pointer + json_pointer(key), stop):
            yield item


def doubles_for_big_integers(value):
    """A copy with integers beyond 2^53 turned into floats (what a JSON client would send)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_EXACT_INTEGER:
        return float(value)
    if isinstance(value, list):
        return [doubles_for_big_integers(item) for item in value]
    if isinstance(value, dict):
        return {key: doubles_for_big_integers(item) for key, item in value.items()}
    return value


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def type_name(value):
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            type(None): "null"}.get(type(value), "a number")


# ---------------------------------------------------------------------------
# Check: talking to a server as a client would, and reporting on its catalog
# ---------------------------------------------------------------------------

MAX_LIST_PAGES = 200


class McpClient:
    """A blocking MCP client over an Upstream, its loop in a thread: ``check`` to a server, ``demo`` to the relay.

    An answer that is not strict JSON becomes an error answer, as clients refuse it.  Server requests never
    stall: ``ping`` is answered, and for the ``capabilities`` declared: no roots, sampling declined (-1, as a
    user would), elicitation declined; anything else -32601, naming ``name``.  ``notified`` counts notifications.
    """

    def __init__(self, make_upstream, timeout, name, capabilities=None):
        self.timeout = timeout
        self.name = name
        self.capabilities = capabilities or {}
        self.loop = Loop()
        self.lock = threading.Condition()
        self.responses = {}
        self.notified = 0
        self.exit_reason = None
        self.next_id = 0
        self.upstream = make_upstream(self.loop, self._on_line, self._on_exit)
        self.thread = threading.Thread(target=self.loop.run, name="ocx-client-loop", daemon=True)

    def start(self):
        self.loop.post(self.upstream.start)
        self.thread.start()

    def _on_line(self, line, msg=None):
        # An answer that parses only leniently (NaN, 1e999, 500 levels) becomes an error: clients refuse it
        # (so the transport's leniently parsed ``msg`` is not used).
        problem = None
        try:
            msg = load_json_strict(line, "the answer")
        except OcxError as exc:
            problem = str(exc)
            envelope = peek_envelope(line, partial=True)
            if envelope is None or not envelope.has_valid_id or envelope.has_method:
                log.warning("server wrote a line that is not JSON: %s" % line[:200].decode("utf-8", "replace"))
                return
            msg = error_response(envelope.id, PARSE_ERROR, problem)
        kind = message_kind(msg)
        if problem is not None and kind == "response":
            msg = error_response(msg["id"], PARSE_ERROR, problem)
        if kind == "request":
            self.upstream.send(encode_message(self._answer(msg)))
        elif kind == "response":
            with self.lock:
                self.responses[id_key(msg["id"])] = msg
                self.lock.notify_all()
        elif kind == "notification":
            with self.lock:
                self.notified += 1

    def _answer(self, request):
        method, msg_id = request["method"], request["id"]
        if method == "ping":
            return result_response(msg_id, {})
        if method == "roots/list" and "roots" in self.capabilities:
            # No roots rather than the working directory: a check must not
            # hand a server access to files it was not given on its command line.
            return result_response(msg_id, {"roots": []})
        if method == "sampling/createMessage" and "sampling" in self.capabilities:
            return error_response(msg_id, -1, "%s declines sampling: it has no model" % self.name)
        if method == "elicitation/create" and "elicitation" in self.capabilities:
            return result_response(msg_id, {"action": "decline"})
        return error_response(msg_id, METHOD_NOT_FOUND, "%s does not serve %s" % (self.name, method))

    def _on_exit(self, description):
        tail = list(self.upstream.stderr_tail)[-5:]
        with self.lock:
            self.exit_reason = description + ("; last stderr: " + " | ".join(tail) if tail else "")
            self.lock.notify_all()

    def request(self, method, params=None, timeout=None):
        """The response to a request, within ``timeout`` s (default: the client's); OcxError when none comes
        (quoting the upstream's last stderr lines when it is gone)."""
        with self.lock:
            self.next_id += 1
            msg_id = self.next_id
        self._send({"jsonrpc": "2.0", "id": msg_id, "method": method}, params)
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        with self.lock:
            while id_key(msg_id) not in self.responses:
                if self.exit_reason:
                    raise OcxError("%s before answering %s" % (self.exit_reason, method))
                left = deadline - time.monotonic()
                if left <= 0:
                    raise OcxError("no answer to %s within %g s" % (method, timeout))
                self.lock.wait(left)
            reply = self.responses.pop(id_key(msg_id))
        rewrites = self.upstream.rewrites.get(method)
        if rewrites:  # the transport's own: we are its client
            apply_rewrites(rewrites, encode_message(reply)[:-1], reply, params)
        return reply

    def notify(self, method, params=None):
        self._send({"jsonrpc": "2.0", "method": method}, params)

    def _send(self, msg, params):
        if params is not None:
            msg["params"] = params
        line = encode_message(msg)
        self.upstream.handshake.note(msg, line[:-1])  # a remote transport may need it for a new session
        self.loop.post(self.upstream.send, line)

    def close(self):
        """Close the upstream's input, give it 3 s to end, then stop it and the loop."""
        self.loop.post(self.upstream.close_input)
        deadline = time.monotonic() + 3.0
        with self.lock:
            while not self.exit_reason and time.monotonic() < deadline:
                self.lock.wait(0.05)
        self.loop.post(self._stop)
        self.thread.join(3.0)

    def _stop(self):
        self.upstream.kill_tree()
        self.upstream.reap()
        self.loop.stop()


# A legacy server may never answer a request sent before initialize (the spec allows it): the
# server/discover probe waits this long at most before falling back to initialize.
DISCOVER_TIMEOUT = 5.0
CHECK_CLIENT_INFO = {"name": "ocx-proxy-check", "version": __version__}
# check lists as a full-featured client by default: some servers list tools only to clients declaring these
# (server-everything 2026.8.31: 13 tools bare, 17 with all three).  Not tasks: check cannot make task calls.
CHECK_CAPABILITIES = ("roots", "sampling", "elicitation")


def client_capabilities(names, modern=False):
    """The ClientCapabilities object declaring ``names`` (2026-07-28 roots has no listChanged)."""
    declared = {"roots": {} if modern else {"listChanged": True}, "sampling": {},
                "elicitation": {"form": {}, "url": {}}}
    return {name: declared[name] for name in names}


def fetch_catalog(client):
    """Connect like a dual-era client, then fetch every page of each declared list.

    Returns (snapshot, timings, problems, protocol).  A ``server/discover`` result listing a modern version we
    know means the modern era: no initialize, that version in every request's ``_meta``.  Anything else means
    initialize, asking for the newest version the server listed (in its result or its UnsupportedProtocolVersion
    error), else our newest.  ``protocol``: {"era", "requested", "version", "supported" (None: not said),
    "clientCapabilities"}.
    """
    timings, problems = {}, []
    modern_capabilities = client_capabilities(client.capabilities, modern=True)
    meta = {META_VERSION: MODERN_PROTOCOL_VERSIONS[0], META_CLIENT_CAPABILITIES: modern_capabilities,
            META_CLIENT_INFO: CHECK_CLIENT_INFO}
    discovered, supported = probe_discover(client, meta, timings)
    modern = [v for v in MODERN_PROTOCOL_VERSIONS if v in (supported or ())]
    if discovered is not None and modern:
        meta[META_VERSION] = modern[0]
        snapshot = {"discover": discovered}
        protocol = {"era": "modern", "requested": modern[0], "version": modern[0], "supported": supported,
                    "clientCapabilities": modern_capabilities}
        capabilities = discovered.get("capabilities")
    else:
        legacy = [v for v in SERVED_PROTOCOL_VERSIONS if v in (supported or ())]
        if supported and not legacy:
            raise OcxError("the server supports protocol %s; ocx-proxy check speaks %s"
                           % (", ".join(supported), ", ".join(PROTOCOL_VERSIONS)))
        requested = legacy[0] if legacy else LATEST_HANDSHAKE_VERSION
        result = initialize_legacy(client, requested, timings)
        meta, snapshot = None, {"initialize": result}
        result = result if isinstance(result, dict) else {}
        protocol = {"era": "legacy", "requested": requested, "version": result.get("protocolVersion"),
                    "supported": supported, "clientCapabilities": client.capabilities}
        capabilities = result.get("capabilities")
    capabilities = capabilities if isinstance(capabilities, dict) else {}
    for method, key, capability in (("tools/list", "tools", "tools"), ("prompts/list", "prompts", "prompts"),
                                    ("resources/list", "resources", "resources"),
                                    ("resources/templates/list", "resourceTemplates", "resources")):
        if capability not in capabilities:
            continue
        started = time.monotonic()
        items, pages = fetch_pages(client, method, key, problems, meta)
        timings[method] = {"ms": round((time.monotonic() - started) * 1000, 1), "pages": pages}
        snapshot[key] = items
    return snapshot, timings, problems, protocol


def probe_discover(client, meta, timings):
    """The server/discover probe: (its result or None, the versions the server named or None)."""
    started = time.monotonic()
    try:
        reply = client.request("server/discover", {"_meta": meta}, min(client.timeout, DISCOVER_TIMEOUT))
    except OcxError:
        if client.exit_reason:
            raise
        return None, None
    finally:
        timings["server/discover"] = round((time.monotonic() - started) * 1000, 1)
    result, error = reply.get("result"), reply.get("error")
    if isinstance(result, dict) and isinstance(result.get("supportedVersions"), list):
        return result, [v for v in result["supportedVersions"] if isinstance(v, str)]
    data = error.get("data") if isinstance(error, dict) and error.get("code") == UNSUPPORTED_PROTOCOL_VERSION else None
    supported = data.get("supported") if isinstance(data, dict) else None
    return None, ([v for v in supported if isinstance(v, str)] if isinstance(supported, list) else None)


def initialize_legacy(client, version, timings):
    """initialize asking for ``version``, then initialized; returns the result (OcxError on an error)."""
    started = time.monotonic()
    reply = client.request("initialize", {"protocolVersion": version, "capabilities": client.capabilities,
                                          "clientInfo": CHECK_CLIENT_INFO})
    timings["initialize"] = round((time.monotonic() - started) * 1000, 1)
    if "error" in reply:
        raise OcxError("initialize failed: %s" % dumps(reply["error"])[:300])
    client.notify("notifications/initialized")
    return reply.get("result")


def fetch_pages(client, method, key, problems, meta=None):
    """All pages of one list method (``meta``: each request's ``_meta``); repeated cursors and bad shapes
    become problems (Findings)."""
    items, cursors, cursor, pages = [], set(), None, 0
    while pages < MAX_LIST_PAGES:
        params = {"cursor": cursor} if cursor is not None else {}
        if meta is not None:
            params["_meta"] = meta
        reply = client.request(method, params)
        pages += 1
        if "error" in reply:
            # Many servers that declare resources predate resource templates: not fatal for clients.
            optional = method == "resources/templates/list" and (reply["error"] or {}).get("code") == METHOD_NOT_FOUND
            problems.append(Finding("info" if optional else "error", "/" + key, "%s failed: %s"
                                    % (method, dumps(reply["error"])[:200])))
            break
        result = reply.get("result")
        if not isinstance(result, dict) or not isinstance(result.get(key), list):
            problems.append(Finding("error", "/" + key, "%s result has no %r array (page %d)" % (method, key, pages)))
            break
        items.extend(result[key])
        cursor = result.get("nextCursor")
        if cursor is None:
            break
        if not isinstance(cursor, str):
            problems.append(Finding("error", "/" + key, "%s nextCursor is not a string" % method))
            break
        if cursor in cursors:
            problems.append(Finding("error", "/" + key, "%s repeats cursor %r: pagination would never end"
                                    % (method, cursor)))
            break
        cursors.add(cursor)
    return items, pages


def list_catalog(make_upstream, timeout, names):
    """One session declaring the capabilities ``names``: fetch_catalog's 4-tuple."""
    client = McpClient(make_upstream, timeout, "ocx-proxy check", client_capabilities(names))
    client.start()
    try:
        return fetch_catalog(client)
    finally:
        client.close()


def tool_names(snapshot):
    return [tool["name"] for tool in snapshot.get("tools") or [] if isinstance(tool, dict)
            and isinstance(tool.get("name"), str)]


def compare_capabilities(snapshot, names, list_tools):
    """(findings, listings) for the tools that appear or disappear with client capabilities.

    ``snapshot`` was listed declaring ``names`` (all of CHECK_CAPABILITIES, or none); ``list_tools(names)``
    lists the tool names in a new session: the other extreme, then, only when they differ, one session per
    capability.  listings: [{"capabilities", "tools"}] per session.
    """
    listed = {tuple(names): tool_names(snapshot)}
    other = () if names else CHECK_CAPABILITIES
    try:
        listed[other] = list_tools(other)
        full, bare = set(listed[CHECK_CAPABILITIES]), set(listed[()])
        if full != bare:
            for name in CHECK_CAPABILITIES:
                listed[(name,)] = list_tools((name,))
    except OcxError as exc:
        return [Finding("warning", "/tools", "could not list the tools again to compare capabilities: %s"
                        % exc)], []
    listings = [{"capabilities": list(key), "tools": len(value)} for key, value in listed.items()]
    where = {name: json_pointer("tools", index) for index, name in enumerate(tool_names(snapshot))}
    findings = []
    for tools, listed_with, severity, message in (
            (full - bare, True, "info", "only listed to clients declaring %s; other clients never see this tool"),
            (bare - full, False, "warning", "not listed to clients declaring %s, as full-featured clients do; "
                                            "only others see this tool")):
        for tool in sorted(tools):
            which = [name for name in CHECK_CAPABILITIES if (tool in listed[(name,)]) == listed_with]
            findings.append(Finding(severity, where.get(tool, "/tools"), message % (
                " or ".join(which) or " and ".join(CHECK_CAPABILITIES) + " together"), tool=tool))
    return findings, listings


def filter_catalog(snapshot, tool_filter):
    """Leave out of ``snapshot`` the tools ``tool_filter`` filters (check --allow-tools/--deny-tools);
    returns the findings that say so."""
    tools = snapshot.get("tools")
    if not tool_filter.active or not isinstance(tools, list):
        return []
    warning = tool_filter.unmatched(tool_names(snapshot))
    findings = [Finding("warning", "/tools", warning)] if warning else []
    snapshot["tools"] = tool_filter.kept(tools)
    if len(snapshot["tools"]) < len(tools):
        findings.append(Finding("info", "/tools", "%d of the server's %d tools left out by --allow-tools/--deny-tools;"
                                " the pointers count the others" % (len(tools) - len(snapshot["tools"]), len(tools))))
    return findings


def task_findings(tools):
    """A warning for each tool whose ``execution.taskSupport`` is "required" (MCP 2025-11-25 tasks)."""
    findings = []
    for index, tool in enumerate(tools):
        execution = tool.get("execution") if isinstance(tool, dict) else None
        if isinstance(execution, dict) and execution.get("taskSupport") == "required":
            findings.append(Finding(
                "warning", json_pointer("tools", index, "execution", "taskSupport"),
                'taskSupport "required": every call fails in a client that does not declare the tasks '
                "capability (VS Code Copilot Chat declares it; Copilot CLI 1.0.18 does not, "
                "github/copilot-cli#2538; neither does ocx-proxy check)", tool=tool.get("name")))
    return findings


def load_catalog_file(path, limit=MAX_INPUT_BYTES):
    """A saved tools/list result, JSON-RPC response or bare tool array (``-``: stdin) -> snapshot.

    OcxError unless the file holds at most ``limit`` bytes of strict JSON (see load_json_strict).
    """
    value = load_json_strict(read_input_bytes(path, limit), "standard input" if path == "-" else path)
    if isinstance(value, dict) and isinstance(value.get("result"), dict):
        value = value["result"]
    if isinstance(value, list):
        return {"tools": value}
    if isinstance(value, dict) and isinstance(value.get("tools"), list):
        return {k: value[k] for k in ("tools", "prompts", "resources", "resourceTemplates") if k in value}
    raise OcxError("%s holds no tool list (expected a tools/list result or an array of tools)" % path)


def advertised_tools(tools, client):
    """``tools`` as the relay, with its default options, advertises them to ``client`` (a client with a profile):
    outputSchema removed where its profile removes it, fitted (``fit_tools``), the reader tool last (declaring the
    size of its pages where the client reads that: ``reader_declared_chars``).  Returns ``(tools, names)``,
    ``names`` mapping each fitted name to the server's (``tools`` is left alone)."""
    msg = {"result": {"tools": [dict(tool) if isinstance(tool, dict) else tool for tool in tools]}}
    profile = CLIENTS[client].profile
    if profile.strip_output_schema:
        strip_output_schemas(msg)
    fitting = ToolFitting(lambda: client)
    fitting.rewrite(msg)
    fitted = msg["result"]["tools"]
    reader = reader_tool(tool_names({"tools": fitted}), reader_declared_chars(CLIENTS[client], profile.budget_chars))
    return fitted + [reader], fitting.originals


def check_report_json(snapshot, findings, checker, timings, client, protocol=None):
    """The --json report; ``protocol`` as fetch_catalog returns it (None for a file)."""
    shown = [f for f in findings if f.affects(client)]
    first = snapshot.get("initialize", snapshot.get("discover"))
    return {
        "version": 1,
        "server": server_info(first),
        "protocolVersion": protocol["version"] if protocol else None,
        "protocol": protocol,
        "counts": {key: len(snapshot.get(key) or []) for key in ("tools", "prompts", "resources", "resourceTemplates")},
        "timings": timings,
        "cursorMcpToolsBytes": checker.cursor_bytes,
        "client": client,
        "findings": [f.to_json() for f in shown],
        "summary": {severity: sum(1 for f in shown if f.severity == severity) for severity in Finding.SEVERITIES},
    }


def check_report_text(report):
    """The human report: header, findings grouped by tool, summary."""
    server, counts = report["server"] or {}, report["counts"]
    lines = ["ocx-proxy check: %s%s — %d tools, %d prompts, %d resources, %d templates" % (
        server.get("name", "catalog file"), (" " + str(server["version"])) if server.get("version") else "",
        counts["tools"], counts["prompts"], counts["resources"], counts["resourceTemplates"])]
    protocol = report["protocol"]
    if protocol:
        lines.append("  protocol %s, %s era (%s); %s" % (
            protocol["version"], protocol["era"], "server/discover" if protocol["era"] == "modern" else "initialize",
            "server supports " + ", ".join(protocol["supported"]) if protocol["supported"] is not None
            else "no server/discover result"))
        declared = protocol.get("clientCapabilities")
        if declared is not None:
            lines.append("  listed declaring %s" % (", ".join(declared) or "no capabilities"))
        if protocol.get("listings"):
            lines.append("  tools listed: " + ", ".join("%d declaring %s" % (
                listing["tools"], ", ".join(listing["capabilities"]) or "nothing")
                for listing in protocol["listings"]))
    if report["timings"]:
        parts = []
        for method, value in report["timings"].items():
            if isinstance(value, dict):
                pages = value["pages"]
                parts.append("%s %s ms (%d page%s)" % (method, value["ms"], pages, "s" * (pages != 1)))
            else:
                parts.append("%s %s ms" % (method, value))
        lines.append("  " + ", ".join(parts))
    if report.get("fitted"):
        lines += fitted_catalog_text(report["fitted"])
    groups = collections.OrderedDict()
    for finding in report["findings"]:
        groups.setdefault(finding["tool"], []).append(finding)
    for tool, findings in groups.items():
        lines += ["", "tool %s" % json.dumps(tool, ensure_ascii=False) if tool is not None else "catalog"]
        for f in findings:
            lines += finding_lines(f)
            if f.get("source"):
                lines.append("          source: %s; seen with %s" % (f["source"]["ref"].split(", ")[0],
                                                                        f["source"]["observed"]))
            if f.get("fixedFor") and not report.get("fitted"):  # what is left after fitting is not fixed
                lines.append("          fixed by ocx-proxy (--fit-tools) for %s" % ", ".join(f["fixedFor"]))
    summary, size = report["summary"], report["cursorMcpToolsBytes"]
    lines += ["", "%d errors, %d warnings, %d notes%s" % (summary["error"], summary["warning"], summary["info"],
                                                          "; Cursor McpTools %d bytes" % size if size is not None
                                                          else "")]
    return "\n".join(printable(line) for line in lines) + "\n"


def finding_lines(finding):
    """The two lines of a finding in a human report: severity and pointer, message and clients."""
    return ["  %-7s %s" % (finding["severity"], finding["pointer"]),
            "          %s  [%s]" % (finding["message"], ", ".join(finding["clients"]))]


def fitted_catalog_text(fitted):
    """The lines of check --fitted's catalog: each tool as the client gets it (renamed ones with the server's
    name), the reader tool last."""
    tools, names = fitted["tools"][:-1], fitted["names"]
    lines = ["", "as ocx-proxy advertises it to %s (relay profile %s, --fit-tools): %d tools, %d renamed"
             % (fitted["client"], fitted["profile"], len(fitted["tools"]), len(names))]
    for tool in tools:
        if not isinstance(tool, dict):
            lines.append("  " + shorten(dumps(tool), MAX_REPORT_CHARS))
            continue
        name = tool.get("name")
        lines.append("  %s%s" % (json.dumps(name, ensure_ascii=False), "  (the server's %s)" % json.dumps(
            names[name], ensure_ascii=False) if isinstance(name, str) and name in names else ""))
        lines.append("      " + shorten(dumps({key: value for key, value in tool.items() if key != "name"}),
                                        MAX_REPORT_CHARS))
    if fitted["tools"]:
        lines.append("  %s  (ocx-proxy's reader tool)" % fitted["tools"][-1]["name"])
    return lines


def run_check(snapshot, timings, problems, server_name, client, as_json, out, protocol=None, fitted=False):
    """Check a snapshot (see catalog_report) and print the report; 1 when errors were found, else 0."""
    report = catalog_report(snapshot, timings, problems, server_name, client, protocol, fitted)
    out.write(report_output(report, as_json, check_report_text))
    return 1 if report["summary"]["error"] else 0


# One string in a printed report (a message quoting a command, a tool name) is cut past this.
MAX_REPORT_CHARS = 2000


def report_output(report, as_json, text):
    """What check prints: the report as JSON or ``text(report)``, its strings cut (``report_strings``), nothing
    in it a terminal would obey.  check --fitted's catalog goes whole into JSON: it is what the client gets."""
    fitted = report.get("fitted")
    report = report_strings(report)
    if not as_json:
        return text(report)
    if fitted:
        report["fitted"] = fitted
    return printable_json(json.dumps(report, indent=2, ensure_ascii=False)) + "\n"


def report_strings(value, secrets=()):
    """``value`` (a report or part of one), its strings with ``secrets`` masked and cut to MAX_REPORT_CHARS."""
    if isinstance(value, dict):
        return {key: report_strings(item, secrets) for key, item in value.items()}
    if isinstance(value, list):
        return [report_strings(item, secrets) for item in value]
    if not isinstance(value, str):
        return value
    return shorten(scrub_secrets(value, secrets), MAX_REPORT_CHARS)


def catalog_report(snapshot, timings, problems, server_name, client, protocol=None, fitted=False):
    """Check a snapshot: the --json report with ``problems`` first.  ``fitted``: the tools as the relay
    advertises them to ``client`` (generic profile for a client without one, as --client auto does)."""
    if server_name is None:
        info = server_info(snapshot.get("initialize", snapshot.get("discover"))) or {}
        server_name = info.get("name") if isinstance(info.get("name"), str) else None
    if fitted:
        relayed = client if CLIENTS[client].profile else "generic"   # the profile the relay gives it
        # No tools capability: no tools/list, nothing the relay adds.
        tools, names = advertised_tools(snapshot["tools"], relayed) if "tools" in snapshot else ([], {})
        snapshot = dict(snapshot, tools=tools)
        fitted = {"client": client, "profile": relayed, "names": names, "tools": tools}
    checker = CatalogChecker(server_name)
    findings = list(problems) + checker.check(snapshot, protocol and protocol["requested"])
    findings += task_findings(snapshot.get("tools") or [])
    if server_name is None and snapshot.get("tools"):
        findings.append(Finding("info", "/tools", "Cursor's %d-character limit counts the server name from your "
                                "mcp.json too: pass --server-name NAME to check it exactly"
                                % CLIENTS["cursor"].facts.name_chars,
                                ("cursor",)))
    elif fitted and server_name and len(server_name) > FIT_SERVER_NAME_CHARS and any(
            CATALOG_RULES[f.rule].fix == "short-name" for f in findings if f.rule and f.affects(client)):
        findings.append(Finding("info", "/tools", "ocx-proxy fits tool names for a server name of up to %d "
                                "characters; %r has %d: a shorter one in your client's configuration lets it fit "
                                "the names left above" % (FIT_SERVER_NAME_CHARS, server_name, len(server_name)),
                                (client,)))
    report = check_report_json(snapshot, findings, checker, timings, client, protocol)
    if fitted:
        report["fitted"] = fitted
    return report


# ---------------------------------------------------------------------------
# Client configs: check --config, every server a client loads
# ---------------------------------------------------------------------------
#
# A client loads every server of its configuration together, so some limits only show in combination (the
# formats: CONFIG_FORMATS).

JSON_URL_TYPES = {"http": "streamable-http", "streamable-http": "streamable-http",
                  "streamableHttp": "streamable-http", "sse": "sse"}
CONFIG_PARALLEL = 4
# Linux passes no longer argument or environment string to a program (MAX_ARG_STRLEN);
# other systems allow less.  A server entry with a longer one is not started.
MAX_ARG_CHARS = 128 * 1024


class ConfigServer:
    """One server of a client configuration, ready to start or connect to.

    ``problem``: why it cannot be checked (reported, not started); ``skipped``: why the client would not load
    it; ``scope``: its Claude Code project (None: everywhere); ``secrets``: what its entry took from the
    environment, never printed.
    """

    def __init__(self, name, pointer, scope=None):
        self.name, self.pointer, self.scope = name, pointer, scope
        self.transport = None
        self.command, self.env, self.cwd = [], {}, None
        self.url, self.headers = None, []
        self.include, self.exclude = None, ()
        self.problem = self.skipped = None
        self.secrets = []


class TomlReader:
    """TOML for Pythons without tomllib (< 3.11): all of it but dates and times.  ``parse`` returns a dict;
    OcxError names the line of the first problem."""

    ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}
    BARE_KEY_RE = re.compile(r"[A-Za-z0-9_-]+")
    LINE_END_RE = re.compile(r"\r?\n|\Z")
    NUMBER_RE = re.compile(r"[+-]?(?:0x[0-9A-Fa-f_]+|0o[0-7_]+|0b[01_]+|inf|nan|"
                           r"(?:0|[1-9](?:_?[0-9])*)(?:\.[0-9](?:_?[0-9])*)?(?:[eE][+-]?[0-9](?:_?[0-9])*)?)")

    def __init__(self, text):
        self.text, self.pos = text, 0

    def error(self, message):
        raise OcxError("line %d: %s" % (self.text.count("\n", 0, self.pos) + 1, message))

    def parse(self):
        root, defined = {}, set()
        table = root
        while True:
            self.skip(newlines=True)
            if self.pos >= len(self.text):
                return root
            if not self.text.startswith("[", self.pos):
                self.key_value(table)
            elif self.text.startswith("[[", self.pos):
                self.pos += 2
                keys = self.keys()
                self.expect("]]")
                array = self.walk(root, keys[:-1]).setdefault(keys[-1], [])
                if not isinstance(array, list):
                    self.error("%s is not an array of tables" % ".".join(keys))
                table = {}
                array.append(table)
            else:
                self.pos += 1
                keys = self.keys()
                self.expect("]")
                if tuple(keys) in defined:
                    self.error("table [%s] defined twice" % ".".join(keys))
                defined.add(tuple(keys))
                table = self.walk(root, keys)
            self.end_of_line()

    def walk(self, node, keys):
        for key in keys:
            node = node.setdefault(key, {})
            if isinstance(node, list) and node:
                node = node[-1]
            if not isinstance(node, dict):
                self.error("%s is not a table" % key)
        return node

    def key_value(self, table):
        keys = self.keys()
        self.expect("=")
        self.skip()
        value = self.value()
        target = self.walk(table, keys[:-1])
        if keys[-1] in target:
            self.error("key %s defined twice" % ".".join(keys))
        target[keys[-1]] = value

    def skip(self, newlines=False):
        """Skip blanks and comments (and line breaks when ``newlines``)."""
        while self.pos < len(self.text):
            char = self.text[self.pos]
            if char == "#":
                end = self.text.find("\n", self.pos)
                self.pos = len(self.text) if end < 0 else end
            elif char in " \t" or (newlines and char in "\r\n"):
                self.pos += 1
            else:
                return

    def end_of_line(self):
        self.skip()
        match = self.LINE_END_RE.match(self.text, self.pos)
        if not match:
            self.error("expected the end of the line")
        self.pos = match.end()

    def expect(self, token):
        self.skip()
        if not self.text.startswith(token, self.pos):
            self.error("expected %r" % token)
        self.pos += len(token)

    def keys(self):
        keys = [self.key()]
        self.skip()
        while self.text.startswith(".", self.pos):
            self.pos += 1
            keys.append(self.key())
            self.skip()
        return keys

    def key(self):
        self.skip()
        if self.text[self.pos:self.pos + 1] in ('"', "'"):
            return self.string(self.text[self.pos])
        match = self.BARE_KEY_RE.match(self.text, self.pos)
        if not match:
            self.error("expected a key")
        self.pos = match.end()
        return match.group()

    def value(self):
        text, pos = self.text, self.pos
        for quotes in ('"""', "'''", '"', "'"):
            if text.startswith(quotes, pos):
                return self.string(quotes)
        if text.startswith("[", pos):
            return self.array()
        if text.startswith("{", pos):
            return self.inline_table()
        for word, value in (("true", True), ("false", False)):
            if text.startswith(word, pos) and not self.BARE_KEY_RE.match(text, pos + len(word)):
                self.pos += len(word)
                return value
        match = self.NUMBER_RE.match(text, pos)
        if not match or (match.end() < len(text) and text[match.end()] not in " \t\r\n,]}#"):
            self.error("unsupported value (this reader knows strings, numbers, booleans, arrays and tables)")
        self.pos = match.end()
        number = match.group().replace("_", "")
        if re.match(r"[+-]?0[xob]", number):
            return int(number, 0)
        return float(number) if re.search(r"[.eEin]", number) else int(number)

    def string(self, end):
        """The string opened by the quotes ``end`` at pos: basic (escapes) or literal, one line or three quotes."""
        parts, text, escapes, multiline = [], self.text, end[0] == '"', len(end) == 3
        self.pos += len(end)
        match = self.LINE_END_RE.match(text, self.pos)
        if multiline and match:   # a line break right after the opening quotes is not part of the string
            self.pos = match.end()
        while True:
            if self.pos >= len(text):
                self.error("unterminated string")
            if text.startswith(end, self.pos):
                # Up to two quotes just before the closing ones belong to the string.
                extra = 0
                while multiline and extra < 2 and text.startswith(end[0], self.pos + 3 + extra):
                    extra += 1
                parts.append(end[0] * extra)
                self.pos += len(end) + extra
                return "".join(parts)
            char = text[self.pos]
            if char == "\\" and escapes:
                parts.append(self.escape(multiline))
                continue
            if (char == "\n" and not multiline) or (ord(char) < 32 and char not in "\t\r\n") or char == "\x7f":
                self.error("control character in a string")
            parts.append(char)
            self.pos += 1

    def escape(self, multiline):
        code = self.text[self.pos + 1:self.pos + 2]
        if code in self.ESCAPES:
            self.pos += 2
            return self.ESCAPES[code]
        if code in ("u", "U"):
            digits = self.text[self.pos + 2:self.pos + (6 if code == "u" else 10)]
            if not re.match(r"[0-9A-Fa-f]{%d}$" % (4 if code == "u" else 8), digits):
                self.error("bad \\%s escape" % code)
            value = int(digits, 16)
            if value > 0x10FFFF or 0xD800 <= value <= 0xDFFF:
                self.error("\\%s%s is not a Unicode scalar value" % (code, digits))
            self.pos += 2 + len(digits)
            return chr(value)
        match = re.compile(r"\\[ \t]*\r?\n[ \t\r\n]*").match(self.text, self.pos) if multiline else None
        if not match:
            self.error("unknown escape \\%s" % code)
        self.pos = match.end()   # a line-ending backslash swallows the break and the indent
        return ""

    def array(self):
        self.pos += 1
        items = []
        while True:
            self.skip(newlines=True)
            if self.text.startswith("]", self.pos):
                self.pos += 1
                return items
            items.append(self.value())
            self.skip(newlines=True)
            if self.text.startswith(",", self.pos):
                self.pos += 1
            elif not self.text.startswith("]", self.pos):
                self.error("expected ',' or ']' in an array")

    def inline_table(self):
        self.pos += 1
        table = {}
        self.skip()
        while not self.text.startswith("}", self.pos):
            if table:
                self.expect(",")
            self.key_value(table)
            self.skip()
        self.pos += 1
        return table


def load_toml(text, what):
    """A TOML document as a dict (tomllib, else TomlReader); OcxError starting with ``what`` when it is
    invalid or nested deeper than MAX_JSON_DEPTH."""
    try:
        import tomllib
    except ImportError:
        tomllib = None
    try:
        document = tomllib.loads(text) if tomllib else TomlReader(text).parse()
    except RecursionError:
        document = None
    except (OcxError, ValueError) as exc:  # TOMLDecodeError, and int() refusing 4,300 digits
        raise OcxError("%s is not valid TOML: %s" % (what, exc))
    if document is None or _json_tree_problem(document, False):
        raise OcxError("%s is nested too deeply: more than %d levels" % (what, MAX_JSON_DEPTH))
    return document


TOML_BARE_KEY_RE = re.compile(r"^[A-Za-z0-9_-]+\Z")


def toml_key(key):
    return key if TOML_BARE_KEY_RE.fullmatch(key) else toml_value(key)


def toml_value(value):
    """TOML for a string, a list of strings or a dict of strings (an inline table)."""
    if isinstance(value, str):
        # JSON's escapes (\" \\ \n \uXXXX ...) are all TOML escapes and JSON
        # escapes every control character but DEL, which TOML forbids raw.
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    return "{" + ", ".join("%s = %s" % (toml_key(k), toml_value(v)) for k, v in value.items()) + "}"


def toml_table(path, values):
    """The TOML text of one table: ``[a.b]`` then a ``key = value`` line per item."""
    lines = ["[%s]" % ".".join(toml_key(part) for part in path)]
    lines.extend("%s = %s" % (toml_key(key), toml_value(value)) for key, value in values.items())
    return "\n".join(lines) + "\n"


def client_config_entry(client, name, command, argv):
    """The text that adds the stdio server ``name`` (``command`` ``argv``) to ``client``'s configuration (its
    CaptureSetup)."""
    setup = CLIENTS[client].capture
    values = {ENTRY_COMMAND: command, ENTRY_ARGS: argv, ENTRY_COMMAND_LINE: [command] + argv}
    server = {key: values.get(value, value) if isinstance(value, str) else value for key, value in setup.entry.items()}
    if CLIENTS[client].config == "codex":
        return toml_table((setup.table, name), server)
    return json.dumps({setup.table: {name: server}}, indent=2, ensure_ascii=False) + "\n"


def config_format(path, document_text):
    """Guess a configuration's format: codex for .toml, gemini for a Gemini CLI settings.json, else json."""
    if path.lower().endswith(".toml"):
        return "codex"
    folder = os.path.basename(os.path.dirname(os.path.abspath(path)))
    if folder == ".gemini" or '"httpUrl"' in document_text:
        return "gemini"
    return "json"


def load_client_config(path, fmt, limit):
    """(format, [ConfigServer] in file order); OcxError when the file is unreadable or holds no servers."""
    environ = os.environ
    try:
        text = read_input_bytes(path, limit).decode("utf-8-sig")   # the bytes go at once: a copy less
    except UnicodeDecodeError as exc:
        raise OcxError("%s is not UTF-8 text (%s)" % (path, exc))
    fmt = fmt or config_format(path, text)
    if fmt == "codex":
        document = load_toml(text, path)
        tables = document.get("mcp_servers")
        if not isinstance(tables, dict):
            raise OcxError("%s has no [mcp_servers.NAME] tables" % path)
        return fmt, [codex_server(name, spec, environ) for name, spec in tables.items()]
    document = load_json_strict(text, path)
    if not isinstance(document, dict):
        raise OcxError("%s is not a JSON object" % path)
    servers = []
    groups = [(None, document.get("mcpServers"), ("mcpServers",))]
    projects = document.get("projects") if fmt == "json" else None
    for scope, project in (projects.items() if isinstance(projects, dict) else ()):
        if isinstance(project, dict) and project.get("mcpServers"):
            groups.append((scope, project["mcpServers"], ("projects", scope, "mcpServers")))
    for scope, table, where in groups:
        if table is None:
            continue
        if not isinstance(table, dict):
            raise OcxError("%s: %s is not an object" % (path, json_pointer(*where)))
        for name, spec in table.items():
            server = ConfigServer(name, json_pointer(*(where + (name,))), scope)
            read_json_server(server, spec, fmt, environ)
            servers.append(server)
    if not servers:
        raise OcxError("%s has no mcpServers entries" % path)
    return fmt, servers


def _strings(spec, key):
    value = spec.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise OcxError("%s must be an array of strings" % key)
    return list(value)


def _string_map(spec, key):
    value = spec.get(key, {})
    if not isinstance(value, dict) or not all(isinstance(item, str) for item in value.values()):
        raise OcxError("%s must be an object of strings" % key)
    return dict(value)


def read_server_tools(server, spec, include, exclude):
    """The tool lists of an entry that names the tools to load (``include``) or leave out (``exclude``)."""
    server.include = _strings(spec, include) if include in spec else None
    server.exclude = _strings(spec, exclude)


def env_ref_values(text, environ):
    """The values ``environ`` has for the ``${VAR}`` references in ``text``."""
    return [environ[name] for name in ENV_REF_RE.findall(text) if name in environ]


def read_json_server(server, spec, fmt, environ):
    """Fill ``server`` from an mcpServers entry; ${VAR} expands as these clients do."""
    try:
        if not isinstance(spec, dict):
            raise OcxError("the entry is not an object")
        if spec.get("disabled") is True:
            server.skipped = "disabled: true"
            return

        def expand(text):
            server.secrets.extend(env_ref_values(text, environ))
            return expand_env_refs(text, environ)   # an unset variable: UsageError, this server's problem

        if isinstance(spec.get("command"), str):
            server.transport = "stdio"
            server.command = [expand(part) for part in [spec["command"]] + _strings(spec, "args")]
            server.env = {k: expand(v) for k, v in _string_map(spec, "env").items()}
            server.cwd = expand(spec["cwd"]) if isinstance(spec.get("cwd"), str) else None
        else:
            url_key = "httpUrl" if fmt == "gemini" and "httpUrl" in spec else "url"
            if not isinstance(spec.get(url_key), str):
                raise OcxError("the entry has neither a command nor a url")
            server.url = spec[url_key]   # RemoteConfig expands it, and the headers
            if fmt == "gemini":
                server.transport = "streamable-http" if url_key == "httpUrl" else "sse"
            else:
                kind = spec.get("type", spec.get("transport"))
                server.transport = JSON_URL_TYPES.get(kind, "auto")
            headers = _string_map(spec, "headers")
            server.headers = ["%s: %s" % item for item in headers.items()]
            for text in [server.url] + list(headers.values()):
                server.secrets.extend(env_ref_values(text, environ))
        if fmt == "gemini":
            read_server_tools(server, spec, "includeTools", "excludeTools")
    except OcxError as exc:
        server.problem = str(exc)


def codex_server(name, spec, environ):
    """A ConfigServer from one [mcp_servers.NAME] table (Codex does not expand ${VAR})."""
    server = ConfigServer(name, json_pointer("mcp_servers", name))
    try:
        if not isinstance(spec, dict):
            raise OcxError("the entry is not a table")
        if spec.get("enabled") is False:
            server.skipped = "enabled = false"
            return server
        if isinstance(spec.get("command"), str):
            server.transport = "stdio"
            server.command = [spec["command"]] + _strings(spec, "args")
            server.env = {k: environ[k] for k in _strings(spec, "env_vars") if k in environ}
            server.secrets.extend(server.env.values())
            server.env.update(_string_map(spec, "env"))
            server.cwd = spec.get("cwd") if isinstance(spec.get("cwd"), str) else None
        elif isinstance(spec.get("url"), str):
            server.transport, server.url = "streamable-http", spec["url"]
            headers = _string_map(spec, "http_headers")
            for header, variable in _string_map(spec, "env_http_headers").items():
                if variable in environ:
                    headers[header] = environ[variable]
                    server.secrets.append(environ[variable])
            variable = spec.get("bearer_token_env_var")
            if isinstance(variable, str):
                if variable not in environ:
                    raise OcxError("bearer_token_env_var names %s, which is not set" % variable)
                headers["Authorization"] = "Bearer " + environ[variable]
                server.secrets.append(environ[variable])
            server.headers = ["%s: %s" % item for item in headers.items()]
        else:
            raise OcxError("the table has neither command nor url")
        read_server_tools(server, spec, "enabled_tools", "disabled_tools")
    except OcxError as exc:
        server.problem = str(exc)
    return server


def check_config_server(server, timeout, client):
    """Check one server: ({"name", "scope", "transport", "report" | "error" | "skipped"}, its tool names).
    Nothing raises: a spawn error, a timeout or a bad entry is the "error"."""
    result = {"name": server.name, "scope": server.scope, "transport": server.transport}
    if server.skipped:
        result["skipped"] = server.skipped
        return result, []
    try:
        if server.problem:
            raise OcxError(server.problem)
        if server.transport == "stdio":
            size = max(len(text) for text in server.command + list(server.env.values()) + [server.cwd or ""])
            if size > MAX_ARG_CHARS:
                raise OcxError("its command, args, env or cwd has a value of %d characters: no system starts a "
                               "program with one of more than %d" % (size, MAX_ARG_CHARS))
            env = child_environment()
            env.update(server.env)
            make_upstream = stdio_upstream_factory(server.command, env, cwd=server.cwd)
        else:
            config = RemoteConfig(server.url, server.headers, timeout)
            for header in server.headers:   # every configured header value stays out of reports
                config.secrets.append(header.partition(": ")[2])
            make_upstream = remote_upstream_factory(server.transport, config)
        snapshot, timings, problems, protocol = list_catalog(make_upstream, timeout, ())
    except OcxError as exc:
        result["error"] = str(exc)
        return result, []
    tools = [t for t in snapshot.get("tools") or [] if not isinstance(t, dict) or (
        (server.include is None or t.get("name") in server.include) and t.get("name") not in server.exclude)]
    snapshot["tools"] = tools
    result["report"] = catalog_report(snapshot, timings, problems, server.name, client, protocol)
    return result, tool_names(snapshot)


def combined_findings(fmt, servers, results):
    """What only shows with every server of one scope loaded: (findings, tool count, Cursor bytes)."""
    clients = [name for name, client in CLIENTS.items() if client.config == fmt]
    checker = CatalogChecker()
    checked = [(server, result, names) for server, (result, names) in zip(servers, results) if "report" in result]
    count = sum(len(names) for _, _, names in checked)
    size = sum(result["report"]["cursorMcpToolsBytes"] or 0 for _, result, _ in checked)
    where = "/mcp_servers" if fmt == "codex" else "/mcpServers"
    if "cursor" in clients:
        checker.check_cursor_tool_count(count, where, " in all")
        checker.check_mcp_tools_size(size, count, where, " in all")
    for rule, client in CONFIG_TOOL_COUNT_CAPS:
        cap = CLIENTS[client].facts.model_tools
        if client in clients and count > cap:
            checker.add_rule(rule, where, "%d tools in all: %s takes at most %d"
                             % (count, CLIENTS[client].display, cap))
    findings = checker.findings
    for clash in (clash for clash in NAME_CLASHES if clash.client in clients):
        owners = collections.OrderedDict()
        for server, _, names in checked:
            for name in names:
                owners.setdefault(clash.name(server.name, name), []).append((server, name))
        for name, tools in owners.items():
            if len(tools) < 2:
                continue
            raw = set(codex_tool_name(s.name, t) for s, t in tools)
            if clash.severity != "info" or len(raw) == len(tools):   # info: renamed, not lost
                findings.append(Finding(clash.severity, tools[1][0].pointer, "%s names %s alike, %r: %s" % (
                    clash.client, " and ".join("%s/%s" % (s.name, t) for s, t in tools), name, clash.consequence),
                    (clash.client,)))
    if "codex" in clients:
        for server in servers:
            if not CODEX_SERVER_NAME_RE.match(server.name):
                findings.append(Finding("error", server.pointer, "Codex refuses the server name %r (it must match %s)"
                                        % (server.name, CODEX_SERVER_NAME_RE.pattern), ("codex",)))
    return findings, count, size


def run_config_check(path, fmt, timeout, parallel, client, as_json, out, limit=MAX_INPUT_BYTES):
    """check --config: every server, ``parallel`` at a time, then the combined rules.  1 when any error was
    found (a server that could not be checked is one), else 0; OcxError when the file is unusable."""
    import concurrent.futures
    fmt, servers = load_client_config(path, fmt, limit)
    with concurrent.futures.ThreadPoolExecutor(max_workers=parallel) as pool:
        results = list(pool.map(lambda server: check_config_server(server, timeout, client), servers))
    scopes = [None] + [s.scope for s in servers if s.scope is not None]
    combined = []
    for scope in sorted(set(scopes), key=scopes.index):
        # A project's own server replaces the one of the same name loaded everywhere (Claude Code).
        own = set(s.name for s in servers if s.scope == scope and scope is not None)
        members = [i for i, s in enumerate(servers) if s.scope == scope or (s.scope is None and s.name not in own)]
        if scope is None and len(scopes) > 1 and not any(s.scope is None for s in servers):
            continue
        findings, count, size = combined_findings(fmt, [servers[i] for i in members], [results[i] for i in members])
        combined.append({"scope": scope, "servers": [servers[i].name for i in members], "tools": count,
                         "cursorMcpToolsBytes": size,
                         "findings": [f.to_json() for f in findings if f.affects(client)]})
    # Masked wherever it shows (a message quoting a command or a server's stderr); longest first, no part left.
    secrets = sorted(set(secret for server in servers for secret in server.secrets), key=len, reverse=True)
    reports = report_strings([result for result, _ in results], secrets)
    combined = report_strings(combined, secrets)
    summary = {severity: sum(r["report"]["summary"][severity] for r in reports if "report" in r) +
               sum(1 for group in combined for f in group["findings"] if f["severity"] == severity)
               for severity in Finding.SEVERITIES}
    summary["error"] += sum(1 for r in reports if "error" in r)
    report = {"version": 1, "config": path, "format": fmt, "client": client, "servers": reports,
              "combined": combined, "summary": summary}
    out.write(report_output(report, as_json, config_report_text))
    return 1 if summary["error"] else 0


def config_report_text(report):
    """The human report of check --config: each server's report, then the combined findings."""
    lines = ["ocx-proxy check --config %s (%s): %d servers" % (report["config"], report["format"],
                                                               len(report["servers"]))]
    for result in report["servers"]:
        title = "server %s%s" % (json.dumps(result["name"], ensure_ascii=False),
                                 " (project %s)" % result["scope"] if result["scope"] else "")
        lines.append("")
        if "skipped" in result:
            lines.append("%s: skipped (%s)" % (title, result["skipped"]))
        elif "error" in result:
            lines.append("%s, %s: error: could not be checked: %s" % (title, result["transport"], result["error"]))
        else:
            lines.append("%s, %s:" % (title, result["transport"]))
            lines.extend("  " + line if line else "" for line in check_report_text(result["report"]).splitlines())
    for group in report["combined"]:
        lines.extend(["", "all servers%s together: %d tools, Cursor McpTools %d bytes" % (
            " of project %s" % group["scope"] if group["scope"] else "", group["tools"], group["cursorMcpToolsBytes"])])
        for f in group["findings"]:
            lines += finding_lines(f)
    summary = report["summary"]
    lines += ["", "%d errors, %d warnings, %d notes in all" % (summary["error"], summary["warning"], summary["info"])]
    return "\n".join(printable(line) for line in lines) + "\n"


# ---------------------------------------------------------------------------
# CodeBuddy: one turn with the bridge armed, the account's model roster
# ---------------------------------------------------------------------------

# CodeBuddy Code (npm @tencent-ai/agent-sdk 0.3.201 ships its CLI 2.117.0) as the model behind an outer client:
# ``turn`` runs one ``codebuddy -p`` turn whose only tools are the capture bridge's, and hands back the model's calls
# as Responses items without running them; ``models`` reads which models the account may use.  What CodeBuddy does
# with a relay in front of a server is in its CLIENTS entry.
#
# Measured with 2.117.0 (tests/interop/clients/test_codebuddy.py): under ``--tools ""`` the init frame's ``tools``
# still names built-in tools the model is not offered, so the bridge is judged by ``mcp_servers``; an MCP tool is
# deferred (reached through ToolSearch and DeferExecuteTool, which ``--tools ""`` removes) unless its server entry says
# ``"defer_loading": false``; a call the bridge leaves pending is never timed out (MCP_TOOL_TIMEOUT: 1e8 ms), so the
# turn ends the CLI itself once the calls are in; the calls of one model message reach the bridge together; every
# call is checked here whatever the CLI's own permission rules let through.

CODEBUDDY_CLI = "codebuddy"
TURN_TIMEOUT = 300.0            # seconds for one turn, the CLI's start (MCP_TIMEOUT, 30 s by default) included
TURN_SETTLE_SECONDS = 1.0       # quiet after the last call was captured: the model's message is over
TURN_MAX_LINE_BYTES = 8 << 20   # one stream-json line
TURN_MAX_STREAM_BYTES = 64 << 20
TURN_STDERR_BYTES = 64 << 10    # of the CLI's stderr kept for the error line
TURN_STOP_GRACE = 2.0           # seconds from SIGTERM to SIGKILL for the CLI's process tree
# What codebuddy 2.117.0 says, as an assistant message, when the model calls a name it does not offer (measured).
UNKNOWN_TOOL_RE = re.compile(r"Tool (\S+) not found in agent cli\.\Z")
TURN_INPUT_TYPES = ("message", "function_call", "function_call_output", "custom_tool_call",
                    "custom_tool_call_output", "reasoning")


class TurnRefused(OcxError):
    """The turn failed closed: no output item is given, and the turn is never tried again (it may be billed)."""


def turn_prompt(request):
    """The text ``codebuddy -p`` reads on stdin for a Responses request: its ``instructions`` and its ``input``
    (a string, or items written out one block each; reasoning items are left out)."""
    parts = []
    if isinstance(request.get("instructions"), str) and request["instructions"]:
        parts.append("[instructions]\n" + request["instructions"])
    items = request.get("input")
    if isinstance(items, str):
        parts.append(items)
    elif isinstance(items, list):
        parts.extend(block for block in (_input_block(item, "input[%d]" % index) for index, item in enumerate(items))
                     if block)
    else:
        raise UsageError("the request's \"input\" must be a string or an array of items")
    if not parts:
        raise UsageError("the request has no input for the model")
    return "\n\n".join(parts)


def _input_block(item, where):
    if not isinstance(item, dict):
        raise UsageError("%s: expected an item object, got %s" % (where, _json_kind(item)))
    kind = item.get("type", "message" if "role" in item else None)
    if kind not in TURN_INPUT_TYPES:
        raise UsageError("%s: item type %s cannot be given to codebuddy -p" % (where, dumps(kind)))
    if kind == "reasoning":
        return None
    if kind == "message":
        return "[%s]\n%s" % (item.get("role", "user"), _message_text(item.get("content"), where))
    call_id = item.get("call_id", "")
    if kind in ("function_call", "custom_tool_call"):
        return "[assistant called %s (call %s)]\n%s" % (item.get("name"), call_id,
                                                        item.get("arguments", item.get("input", "")))
    output = item.get("output", "")
    return "[output of call %s]\n%s" % (call_id, output if isinstance(output, str) else
                                        _message_text(output, where + ".output"))


def _message_text(content, where):
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise UsageError("%s: \"content\" must be a string or an array of parts" % where)
    texts = []
    for index, part in enumerate(content):
        if not isinstance(part, dict) or not isinstance(part.get("text"), str):
            raise UsageError("%s.content[%d]: only text parts can be given to codebuddy -p" % (where, index))
        texts.append(part["text"])
    return "\n".join(texts)


def codebuddy_turn_flags(server_name, allowed, config):
    """The flags that arm the bridge for one ``-p`` turn: no built-in tool, no other server, its tools listed."""
    flags = ["--tools", "", "--strict-mcp-config", "--mcp-config", config]
    return flags + (["--allowedTools", allowed] if allowed else [])


class TurnBridge:
    """The files of one armed turn in a private temporary directory: the catalog, the MCP configuration naming only
    the bridge, the file the bridge appends calls to.  ``aliases`` maps each alias the model sees to its tool."""

    def __init__(self, request, server_name, max_calls, max_argument_bytes):
        import tempfile
        if not isinstance(request.get("tools", []), list):
            raise UsageError("the request's \"tools\" must be an array")
        self.directory = tempfile.mkdtemp(prefix=PRIVATE_DIR_PREFIX + "turn-")   # 0700
        self.server_name = server_name
        try:
            folder = PrivateDir(self.directory)
            catalog = folder.write("catalog.json", encode_message(
                {"tools": request.get("tools", []), "tool_choice": request.get("tool_choice")}))
            tools, _ = load_capture_catalog(catalog)
            names = [tool["wire_name"] for tool in tools]
            by_name = capture_aliases(names)
            self.aliases = {by_name[tool["wire_name"]]: tool for tool in tools}
            self.calls = os.path.join(self.directory, "calls.ndjson")
            argv = [os.path.abspath(__file__), "capture", "--catalog", catalog, "--out", self.calls,
                    "--server-name", server_name, "--max-calls", str(max_calls),
                    "--max-argument-bytes", str(max_argument_bytes)]
            self.config = folder.write("mcp.json", client_config_entry(
                "codebuddy", server_name, sys.executable or "python3", argv).encode("utf-8"))
        except BaseException:
            self.close()
            raise

    def tool_names(self):
        """The names the model calls the bridge's tools by (mcp__<server>__<alias>)."""
        return ["mcp__%s__%s" % (self.server_name, alias) for alias in self.aliases]

    def flags(self):
        return codebuddy_turn_flags(self.server_name, capture_allowed_tools(self.server_name, self.aliases),
                                    self.config)

    def close(self):
        import shutil
        shutil.rmtree(self.directory, ignore_errors=True)


class TurnStream:
    """Judges a turn's stream-json objects as they come, raising TurnRefused at the first one that breaks the
    contract: the init frame first, showing exactly the bridge connected and its tools; each tool call one the
    bridge declares, within the argument and call limits.  Keeps the assistant's text and the usage reported."""

    def __init__(self, bridge, max_calls, max_argument_bytes):
        self.bridge = bridge
        self.names = set(bridge.tool_names())
        self.max_calls = max_calls
        self.max_argument_bytes = max_argument_bytes
        self.lines = 0
        self.calls = 0
        self.texts = []        # (message id, text)
        self.usage = collections.OrderedDict()   # message id -> its last usage (the final chunk carries it)
        self.result = None
        self.initialized = False

    def feed(self, line):
        self.lines += 1
        if not line.strip():
            return
        try:
            frame = load_json_strict(line, "line %d of the CLI's stream-json" % self.lines)
        except OcxError as exc:
            raise TurnRefused(str(exc))
        if not isinstance(frame, dict):
            raise TurnRefused("line %d of the CLI's stream-json is not a JSON object" % self.lines)
        if not self.initialized:
            self._init(frame)
            self.initialized = True
        elif frame.get("type") == "assistant" and frame.get("parent_tool_use_id") is None:
            self._assistant(frame.get("message"))
        elif frame.get("type") == "result":
            self.result = frame

    def _init(self, frame):
        if (frame.get("type"), frame.get("subtype")) != ("system", "init"):
            raise TurnRefused("the CLI's first stream-json line is not its init frame")
        servers = frame.get("mcp_servers")
        shown = [(s.get("name"), s.get("status")) for s in servers if isinstance(s, dict)] \
            if isinstance(servers, list) else servers
        if shown != [(self.bridge.server_name, "connected")]:
            raise TurnRefused("the init frame does not show the bridge %s alone connected: mcp_servers %s"
                              % (self.bridge.server_name, shorten(dumps(servers), 300)))
        missing = sorted(self.names - set(frame.get("tools") or []))
        if missing:
            raise TurnRefused("the init frame does not list the bridge's tools %s" % shorten(", ".join(missing), 300))

    def _assistant(self, message):
        if not isinstance(message, dict) or not isinstance(message.get("content"), list):
            raise TurnRefused("line %d: an assistant message without content" % self.lines)
        key = message.get("id")
        if isinstance(message.get("usage"), dict):
            self.usage[key] = message["usage"]
        for block in message["content"]:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text" and isinstance(block.get("text"), str):
                unknown = UNKNOWN_TOOL_RE.match(block["text"])
                if unknown:   # the CLI's answer to a call of a name it does not offer, before asking again
                    raise TurnRefused("the model called %s, which the catalog does not declare"
                                      % shorten(unknown.group(1), 120))
                self.texts.append((key, block["text"]))
            elif kind == "tool_use":
                self._call(block)

    def _call(self, block):
        name = block.get("name")
        if name not in self.names:
            raise TurnRefused("the model called %s, which the catalog does not declare"
                              % shorten(name if isinstance(name, str) else dumps(name), 120))
        size = len(dumps(block.get("input")).encode("utf-8", "surrogatepass"))
        if size > self.max_argument_bytes:
            raise TurnRefused("the model's call of %s has %d bytes of arguments, over %d"
                              % (name, size, self.max_argument_bytes))
        self.calls += 1
        if self.calls > self.max_calls:
            raise TurnRefused("the model made more than %d calls" % self.max_calls)

    def text(self):
        """The assistant's text: the blocks of one message joined as they are, messages by a blank line."""
        joined = []
        for index, (key, text) in enumerate(self.texts):
            joined.append(text if index == 0 or self.texts[index - 1][0] == key else "\n\n" + text)
        return "".join(joined)

    def responses_usage(self):
        """The usage as Responses reports it: the result line's, else the messages' folded (a turn ended early
        has no result line)."""
        usages = [self.result["usage"]] if self.result and isinstance(self.result.get("usage"), dict) \
            else list(self.usage.values())
        count = lambda key: sum(u.get(key) for u in usages if type(u.get(key)) is int and u.get(key) >= 0)
        cached = count("cache_read_input_tokens")
        prompt = count("input_tokens") + cached + count("cache_creation_input_tokens")
        return {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": cached},
                "output_tokens": count("output_tokens"), "total_tokens": prompt + count("output_tokens")}


class CallsFile:
    """What the bridge appended to its calls file so far: ``poll()`` returns the new records; a refusal it wrote
    (capture_error) raises TurnRefused."""

    def __init__(self, path):
        self.path = path
        self.offset = 0
        self.partial = b""
        self.records = []

    def poll(self):
        try:
            with open(self.path, "rb") as stream:
                stream.seek(self.offset)
                data = read_at_most(stream, TURN_MAX_STREAM_BYTES)
        except FileNotFoundError:
            return []
        self.offset += len(data)
        lines = (self.partial + data).split(b"\n")
        self.partial = lines.pop()
        new = [load_json_strict(line, "the bridge's calls file") for line in lines if line.strip()]
        for record in new:
            if record.get("type") == "capture_error":
                raise TurnRefused("the bridge refused a call: %s" % record.get("message"))
        self.records.extend(new)
        return new


def _pump_lines(stream, events, limit, total):
    """A thread's work: put each line of the CLI's stdout on ``events`` as ("line", bytes); ("oversize",) for a line
    past ``limit``, ("flood",) past ``total`` bytes, ("truncated",) for an unended last line, then ("eof",)."""
    seen = 0
    try:
        while True:
            line = stream.readline(limit + 1)
            seen += len(line)
            if not line:
                break
            if seen > total:
                events.put(("flood",))
                return
            if not line.endswith(b"\n"):
                events.put(("oversize",) if len(line) > limit else ("truncated",))
                return
            events.put(("line", line))
    except (OSError, ValueError):
        pass   # closed under us: the turn is being stopped
    events.put(("eof",))


def _keep_tail(stream, kept, limit):
    """A thread's work: read ``stream`` to its end, keeping its last ``limit`` bytes in the bytearray ``kept``."""
    try:
        for chunk in iter(lambda: stream.read(1 << 14), b""):
            kept.extend(chunk)
            del kept[:max(0, len(kept) - limit)]
    except (OSError, ValueError):
        pass


class CodeBuddyTurn:
    """One ``codebuddy -p`` turn with the bridge armed.  ``run()`` returns ``{"output": items, "usage": usage}`` or
    raises TurnRefused (UsageError for a bad request); the CLI's process tree is gone either way."""

    def __init__(self, request, cli=CODEBUDDY_CLI, timeout=TURN_TIMEOUT, server_name=CAPTURE_SERVER_NAME,
                 max_calls=CAPTURE_MAX_CALLS, max_argument_bytes=CAPTURE_MAX_ARGUMENT_BYTES, environ=None):
        if not isinstance(request, dict):
            raise UsageError("the request must be a JSON object (a Responses request body)")
        self.request = request
        self.prompt = turn_prompt(request)
        self.cli, self.timeout = cli, timeout
        self.server_name = server_name
        if request.get("parallel_tool_calls") is False:
            max_calls = 1
        self.max_calls, self.max_argument_bytes = max_calls, max_argument_bytes
        self.environ = dict(os.environ if environ is None else environ)   # as the user set it, nothing of ours
        self.process = self.tree = None
        self.stderr = bytearray()

    def argv(self, bridge):
        model = self.request.get("model")
        return ([self.cli, "-p", "--output-format", "stream-json", "--verbose"] + bridge.flags()
                + (["--model", model] if isinstance(model, str) and model else []))

    def run(self):
        bridge = TurnBridge(self.request, self.server_name, self.max_calls, self.max_argument_bytes)
        try:
            stream = TurnStream(bridge, self.max_calls, self.max_argument_bytes)
            calls = CallsFile(bridge.calls)
            self._start(bridge)
            try:
                self._follow(stream, calls)
            finally:
                self._stop(stream.result is not None)
            calls.poll()
            return self._output(stream, calls.records)
        finally:
            bridge.close()

    def _start(self, bridge):
        import queue
        argv = resolve_command(self.argv(bridge), self.environ)
        try:
            self.process, self.tree = ProcessTree.start(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                                        stderr=subprocess.PIPE, env=self.environ)
        except (OSError, ValueError) as exc:
            raise TurnRefused("could not start %s: %s" % (self.cli, exc))
        self.events = queue.Queue()
        self.threads = [threading.Thread(target=target, args=args, daemon=True) for target, args in (
            (_pump_lines, (self.process.stdout, self.events, TURN_MAX_LINE_BYTES, TURN_MAX_STREAM_BYTES)),
            (_keep_tail, (self.process.stderr, self.stderr, TURN_STDERR_BYTES)), (self._feed_prompt, ()))]
        for thread in self.threads:
            thread.start()

    def _feed_prompt(self):
        try:
            self.process.stdin.write(self.prompt.encode("utf-8", "surrogatepass"))
            self.process.stdin.close()
        except (OSError, ValueError):
            pass   # it ended first: its stream says why

    def _follow(self, stream, calls):
        """Read until the result line, or until every call the model made is captured and the CLI has been quiet
        TURN_SETTLE_SECONDS (its own clock would wait a day), within ``timeout``."""
        import queue
        deadline = time.monotonic() + self.timeout
        quiet_since = time.monotonic()
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TurnRefused("%s gave no complete turn within %g s" % (self.cli, self.timeout))
            try:
                event = self.events.get(timeout=min(0.1, left))
            except queue.Empty:
                event = None
            if event is not None:
                quiet_since = time.monotonic()
                self._judge(event, stream)
            if calls.poll():
                quiet_since = time.monotonic()
            if stream.result is not None:
                return
            if stream.calls and len(calls.records) >= stream.calls \
                    and time.monotonic() - quiet_since >= TURN_SETTLE_SECONDS:
                return
            if event == ("eof",):
                try:   # its stdout closed: it is ending, and its exit status says how
                    status = "exit status %d" % self.process.wait(timeout=TURN_STOP_GRACE)
                except subprocess.TimeoutExpired:
                    status = "its stdout closed"
                raise TurnRefused("%s ended without a result (%s)%s" % (self.cli, status, self._stderr_tail()))

    def _judge(self, event, stream):
        kind = event[0]
        if kind == "line":
            stream.feed(event[1])
        elif kind in ("oversize", "truncated", "flood"):
            raise TurnRefused({
                "oversize": "a stream-json line longer than %d bytes" % TURN_MAX_LINE_BYTES,
                "truncated": "the stream-json ended in the middle of a line",
                "flood": "more than %d bytes of stream-json" % TURN_MAX_STREAM_BYTES}[kind])

    def _stderr_tail(self):
        """The CLI's last stderr line after ": " (or nothing), once its stderr is read to the end (a second at most)."""
        self.threads[1].join(1.0)
        lines = [line for line in bytes(self.stderr).decode("utf-8", "replace").splitlines() if line.strip()]
        return ": " + shorten(lines[-1].strip(), 300) if lines else ""

    def _stop(self, finished):
        """End the CLI's process tree (``finished``: it printed its result and may exit first): politely, then for
        good; its pipes closed, its threads let go."""
        if self.process is None:
            return
        try:
            self.process.wait(timeout=TURN_STOP_GRACE if finished else 0)
        except subprocess.TimeoutExpired:
            pass
        self.tree.terminate()
        try:
            self.process.wait(timeout=TURN_STOP_GRACE)
        except subprocess.TimeoutExpired:
            pass
        self.tree.kill()
        self.process.wait()
        self.tree.close()
        close_when_read(self.threads, (self.process.stdin, self.process.stdout, self.process.stderr))

    def _output(self, stream, records):
        result = stream.result
        if result is not None and (result.get("is_error") or result.get("subtype") != "success"):
            text = result.get("result") if isinstance(result.get("result"), str) else result.get("subtype")
            raise TurnRefused("%s reported an error: %s" % (self.cli, shorten(str(text), 300)))
        if len(records) < stream.calls:
            raise TurnRefused("the model made %d calls but the bridge captured %d" % (stream.calls, len(records)))
        items = []
        text = stream.text()
        if text:
            items.append({"type": "message", "role": "assistant", "status": "completed",
                          "content": [{"type": "output_text", "text": text, "annotations": []}]})
        items.extend(dict(record, status="completed") for record in records)
        return {"output": items, "usage": stream.responses_usage()}


# The roster: ``codebuddy --help`` ends its --model line with "Currently supported: (id, id, ...)", computed within
# 10 s from the account, else from the CLI's product manifest; ~/.codebuddy/models.json adds custom models
# (custom-local:NAME), which belong to that file, not the account.  Measured, codebuddy 2.117.0.
ROSTER_LINE_RE = re.compile(r"^\s*--model <model>\s.*\bCurrently supported: \(([^()]*)\)\s*$")
MODEL_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,127}\Z")
ROSTER_SKIPPED_PREFIXES = ("custom:", "custom-local:")
ROSTER_TIMEOUT = 20.0           # the CLI computes its roster within 10 s
ROSTER_MAX_BYTES = 1 << 20      # of --help output
ROSTER_MAX_MODELS = 256
ROSTER_CACHE_DIR = "codebuddy"  # in the cache directory: the rosters and the fingerprint key
ROSTER_CACHE_FILE = "models.json"
ROSTER_CACHE_KEYS = 16          # accounts remembered
# What codebuddy 2.117.0 (npm @tencent-ai/agent-sdk 0.3.201) lists offline, from its product manifest (the
# real-client tier checks it against the CLI): the answer when neither the CLI nor the cache can give one.
CODEBUDDY_BUILTIN_MODELS = (
    "default-model", "gemini-3.1-pro", "gemini-3.0-flash", "gemini-3.5-flash", "gemini-2.5-pro", "gemini-2.5-flash",
    "gemini-3.1-flash-lite", "gpt-5.5", "gpt-5.4", "gpt-5.3-codex", "gpt-5.1-codex", "gpt-5.1-codex-mini",
    "deepseek-v3-2-volc", "glm-5.0", "kimi-k2.5")


def parse_roster(text):
    """The model ids of the one "--model ... Currently supported: (...)" line in ``text`` (custom selectors left
    out, repeats dropped); None unless exactly one line matches and every id is a plain model id."""
    found = [match for match in map(ROSTER_LINE_RE.match, text.splitlines()) if match]
    if len(found) != 1:
        return None
    ids = [part.strip() for part in found[0].group(1).split(",")]
    if len(ids) > ROSTER_MAX_MODELS or not all(MODEL_ID_RE.match(model) for model in ids):
        return None
    models = []
    for model in ids:
        if not model.startswith(ROSTER_SKIPPED_PREFIXES) and model not in models:
            models.append(model)
    return models


def close_when_read(threads, pipes):
    """Close ``pipes`` once the ``threads`` reading them have finished (a second at most): closing a pipe under a
    reader blocks on its lock.  A pipe a stray grandchild still holds open is left to the garbage collector."""
    for thread in threads:
        thread.join(1.0)
    if not any(thread.is_alive() for thread in threads):
        for pipe in pipes:
            try:
                pipe.close()
            except (OSError, ValueError):
                pass


def run_bounded(argv, timeout, limit, environ):
    """(exit status, the first bytes of stdout and stderr together) of ``argv``; OcxError when it cannot start,
    runs past ``timeout`` seconds or prints more than ``limit`` bytes.  Its process tree is gone on return."""
    try:
        process, tree = ProcessTree.start(resolve_command(argv, environ), stdin=subprocess.DEVNULL,
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=environ)
    except (OSError, ValueError) as exc:
        raise OcxError("could not start %s: %s" % (argv[0], exc))
    kept = bytearray()
    reader = threading.Thread(target=lambda: kept.extend(read_at_most(process.stdout, limit + 1)), daemon=True)
    reader.start()
    reader.join(timeout)
    try:
        if reader.is_alive():
            raise OcxError("%s printed no complete answer within %g s" % (argv[0], timeout))
        if len(kept) > limit:
            raise OcxError("%s printed more than %d bytes" % (argv[0], limit))
        try:
            return process.wait(timeout=max(0.1, timeout / 4)), bytes(kept)
        except subprocess.TimeoutExpired:
            raise OcxError("%s did not exit after printing its answer" % argv[0])
    finally:
        tree.kill()
        process.wait()
        tree.close()
        close_when_read([reader], [process.stdout])


class RosterCache:
    """The last roster of each account, in ``<cache dir>/codebuddy/models.json`` (0600 in a 0700 directory), under
    a fingerprint of the account: an HMAC-SHA256 of its API key (else of the HOME its login lives in) with a random
    key kept beside it, so that the file never holds, nor lets anyone test guesses of, the key without that file."""

    def __init__(self, cache_dir):
        self.cache_dir = cache_dir

    def _folder(self, create):
        top = open_spill_dir(self.cache_dir, create)
        if top is None:
            return None
        with top:
            return top.subdir(ROSTER_CACHE_DIR, "roster cache", create)

    def _read(self, folder, name, limit):
        try:
            fd, info = folder.open_read(name)
        except FileNotFoundError:
            return None
        with open(fd, "rb") as stream:
            return read_at_most(stream, limit + 1) if stat.S_ISREG(info.st_mode) else None

    def fingerprint(self, environ, create=False):
        """The account's fingerprint, or None when there is no key file yet and ``create`` is false."""
        import hashlib
        import hmac
        folder = self._folder(create)
        if folder is None:
            return None
        with folder:
            secret = self._read(folder, "fingerprint.key", 64)
            if secret is None or len(secret) != 32:
                if not create:
                    return None
                secret = os.urandom(32)
                folder.write("fingerprint.key", secret)
        key = environ.get("CODEBUDDY_API_KEY") or ""
        account = ("key\x00" + key) if key else ("home\x00" + os.path.expanduser("~"))
        return hmac.new(secret, account.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()

    def _rosters(self, folder):
        data = self._read(folder, ROSTER_CACHE_FILE, ROSTER_MAX_BYTES) if folder else None
        try:
            document = load_json_strict(data, "the roster cache") if data else {}
        except OcxError:
            document = {}   # damaged: rewritten at the next live answer
        rosters = document.get("rosters") if isinstance(document, dict) else None
        return rosters if isinstance(rosters, dict) else {}

    def load(self, fingerprint):
        """The roster last saved for ``fingerprint``, or None."""
        folder = self._folder(False)
        if folder is None:
            return None
        with folder:
            entry = self._rosters(folder).get(fingerprint)
        models = entry.get("models") if isinstance(entry, dict) else None
        if isinstance(models, list) and all(isinstance(m, str) and MODEL_ID_RE.match(m) for m in models):
            return models
        return None

    def save(self, fingerprint, models):
        with self._folder(True) as folder:
            rosters = self._rosters(folder)
            rosters.pop(fingerprint, None)
            rosters[fingerprint] = {"models": models, "saved": int(time.time())}
            while len(rosters) > ROSTER_CACHE_KEYS:
                rosters.pop(next(iter(rosters)))
            folder.write(ROSTER_CACHE_FILE, encode_message({"format": 1, "rosters": rosters}))


def codebuddy_models(cli=CODEBUDDY_CLI, cache_dir=None, environ=None, timeout=ROSTER_TIMEOUT):
    """``(models, source, warning)``: the roster ``cli --help`` shows ("live", then saved for this account), else
    the last one saved for this account ("cache"), else CODEBUDDY_BUILTIN_MODELS ("builtin"); ``warning`` says
    why discovery failed (None when it did not)."""
    environ = dict(os.environ if environ is None else environ)
    cache = RosterCache(default_cache_dir() if cache_dir is None else cache_dir)
    try:
        status, output = run_bounded([cli, "--help"], timeout, ROSTER_MAX_BYTES, environ)
        models = parse_roster(output.decode("utf-8", "replace")) if status == 0 else None
        if models is None:
            raise OcxError("%s --help %s" % (cli, "exited with status %d" % status if status else
                                             "shows no single \"Currently supported: (...)\" line"))
    except OcxError as exc:
        warning = "could not read the model roster: %s" % exc
    else:
        try:
            cache.save(cache.fingerprint(environ, create=True), models)
        except OSError as exc:
            log.warning("could not save the model roster: %s" % (exc.strerror or exc))
        return models, "live", None
    try:
        fingerprint = cache.fingerprint(environ)
        saved = cache.load(fingerprint) if fingerprint else None
    except OSError as exc:
        saved, warning = None, warning + "; the cache cannot be read (%s)" % (exc.strerror or exc)
    if saved is not None:
        return saved, "cache", warning + "; the last roster seen for this account is given"
    return list(CODEBUDDY_BUILTIN_MODELS), "builtin", warning + "; the built-in list is given"


# ---------------------------------------------------------------------------
# Demo: embedded sample server and the demo driver
# ---------------------------------------------------------------------------


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
    """Result of one demo tool call, None for an unknown tool (``slow`` sends progress through ``notify``)."""
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
        data = {"rows": [{"id": i, "name": "item-%d" % i, "score": i * 0.5}
                         for i in range(int(arguments.get("rows", 400)))]}
        return {"content": [{"type": "text", "text": json.dumps(data)}], "structuredContent": data}
    if name == "image":
        return {"content": [{"type": "image", "data": base64.b64encode(demo_png()).decode("ascii"),
                             "mimeType": "image/png"}, {"type": "text", "text": "A generated 160x160 test pattern."}]}
    if name == "slow":
        seconds = float(arguments.get("seconds", 1))
        token = arguments.get("_progressToken")
        for step in range(1, 5):
            time.sleep(seconds / 4)
            if token is not None:
                notify("notifications/progress", {"progressToken": token, "progress": step, "total": 4})
        return {"content": [{"type": "text", "text": "slept %g s" % seconds}]}
    if name == "fail":
        return {"content": [{"type": "text", "text": "this tool always fails"}], "isError": True}
    return None


DEMO_PROMPT = {"name": "review", "description": "Review a long diff", "arguments": []}
# What the demo server answers to the methods whose result does not depend on the request.
DEMO_RESULTS = {
    "ping": {}, "logging/setLevel": {}, "tools/list": {"tools": DEMO_TOOLS}, "prompts/list": {"prompts": [DEMO_PROMPT]},
    "resources/list": {"resources": [{"uri": "demo://big-log", "name": "big-log", "mimeType": "text/plain",
                                      "description": "A long log file"}]},
    "resources/templates/list": {"resourceTemplates": []},
}


def demo_server_answer(msg, notify):
    """The response (a result or an error) to one request to the demo server."""
    params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
    if msg["method"] == "tools/call":
        arguments = dict(params.get("arguments") or {})
        token = (params.get("_meta") or {}).get("progressToken")
        if token is not None:
            arguments["_progressToken"] = token
        result = demo_tool_result(params.get("name"), arguments, notify)
        return (result_response(msg["id"], result) if result is not None
                else error_response(msg["id"], INVALID_PARAMS, "Unknown tool: %s" % params.get("name")))
    result = demo_method_result(msg["method"], params)
    return (result_response(msg["id"], result) if result is not None
            else error_response(msg["id"], METHOD_NOT_FOUND, "Method not found: %s" % msg["method"]))


def demo_method_result(method, params):
    """The result of a demo server method other than tools/call; None for an unknown method."""
    if method == "initialize":
        return {"protocolVersion": served_version(params.get("protocolVersion")),
                "serverInfo": {"name": "ocx-demo", "version": __version__},
                "capabilities": {"tools": {}, "resources": {}, "prompts": {}, "logging": {}}}
    if method == "resources/read":
        text = "\n".join("%s INFO request %d served in %d ms" % ("2026-01-01T00:00:00Z", i, i % 97)
                         for i in range(3000))
        return {"contents": [{"uri": params.get("uri"), "mimeType": "text/plain", "text": text}]}
    if method == "prompts/get":
        diff = "\n".join("+ added line %d" % i for i in range(2000))
        return {"description": DEMO_PROMPT["description"],
                "messages": [{"role": "user", "content": {"type": "text", "text": "Review this diff:\n" + diff}}]}
    return DEMO_RESULTS.get(method)


def run_demo_server(stdin=None, stdout=None):
    """Serve the demo catalog on stdio until stdin closes (requests answered in order)."""
    stdin, stdout = stdin or sys.stdin.buffer, stdout or sys.stdout.buffer

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
        if message_kind(msg) == "request":
            send(demo_server_answer(msg, notify))
    return 0


def run_demo(output_dir, max_chars, out):
    """Drive relay + demo-server as a client would and print a readable transcript."""
    me = os.path.abspath(__file__)
    command = [sys.executable, me, "stdio", "--output-dir", output_dir, "--max-response-chars",
               str(max_chars), "--log-level", "warning", "--", sys.executable, me, "demo-server"]
    write = out.write
    write("ocx-proxy demo: relay in front of the built-in demo-server\n  relay command: %s\n  spill directory: %s\n\n"
          % (" ".join(command[1:]), output_dir))
    client = McpClient(stdio_upstream_factory(command, dict(os.environ)), 20.0, "ocx-proxy demo")
    client.start()
    started = time.monotonic()
    try:
        reply = client.request("initialize", {"protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {},
                                              "clientInfo": {"name": "ocx-demo-client", "version": "1"}})
        write("-> initialize: protocol %s, server %s\n" % (
            reply["result"]["protocolVersion"], reply["result"]["serverInfo"]["name"]))
        client.notify("notifications/initialized")
        reply = client.request("tools/list")
        tools = reply["result"]["tools"]
        write("-> tools/list: %d tools (%s); outputSchema removed by the relay: %s\n\n" % (
            len(tools), ", ".join(t["name"] for t in tools), not any("outputSchema" in t for t in tools)))
        calls = [("echo", {"text": "hello through the relay"}), ("big_text", {"lines": 2000}),
                 ("unicode_text", {"repeat": 600}), ("unicode_text", {"repeat": 3000}),
                 ("structured_report", {"rows": 400}), ("image", {}), ("fail", {})]
        steps = [("tools/call", {"name": name, "arguments": arguments},
                  "tools/call %s %s" % (name, json.dumps(arguments, ensure_ascii=False))) for name, arguments in calls]
        steps += [("tools/call", {"name": "slow", "arguments": {"seconds": 0.4},
                                  "_meta": {"progressToken": "demo-progress"}}, ""),
                  ("resources/read", {"uri": "demo://big-log"}, "resources/read demo://big-log"),
                  ("prompts/get", {"name": "review"}, "prompts/get review")]
        for method, params, title in steps:
            notified = client.notified
            reply = client.request(method, params)
            if not title:
                write("-> tools/call slow: %d progress notifications arrived before the result\n"
                      % (client.notified - notified))
            describe_demo_reply(write, title, reply)
    finally:
        client.close()
    status = client.upstream.process.returncode
    write("relay exited with status %s after %.1f s; spilled files are in %s\n" % (
        status, time.monotonic() - started, output_dir))
    return 0 if status == 0 else 1


def describe_demo_reply(write, title, reply):
    size = len(dumps(reply))
    if title:
        write("-> %s\n" % title)
    result = reply.get("result") or {}
    error_data = (reply.get("error") or {}).get("data") or {}
    meta = (result.get("_meta") or {}).get(SPILL_META_KEY) or error_data.get(SPILL_META_KEY)
    if meta:
        write("   client received %d characters (spilled: the original had %d)\n   full text: %s\n   raw JSON : %s\n"
              % (size, meta["original_chars"], meta["txt"], meta["json"]))
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
# CLI options: argument types, environment defaults, the option groups commands share
# ---------------------------------------------------------------------------


class CliParser(argparse.ArgumentParser):
    """argparse with one-line errors (exit status 2); ``commands``: its subcommand action, if any."""

    commands = None

    def error(self, message):
        self.exit(2, "%s: error: %s (see --help)\n" % (self.prog, message))

    def add_subparsers(self, **kwargs):
        self.commands = super().add_subparsers(**kwargs)
        return self.commands


def option_arity(parser, word):
    """How many words after ``word`` are its value; None when ``parser`` has no such option (a unique prefix of
    a long option counts, as in argparse)."""
    # argparse's one map of option strings to actions (there since 2.7) knows which take a value.
    actions = parser._option_string_actions
    name, equals, _ = word.partition("=") if word.startswith("--") else (word, "", "")
    action = actions.get(name)
    if action is None and name.startswith("--") and parser.allow_abbrev:
        matches = set(actions[option] for option in actions if option.startswith(name))
        action = matches.pop() if len(matches) == 1 else None
    if action is None or equals:
        return None if action is None else 0
    return action.nargs if isinstance(action.nargs, int) else 1


def split_server_command(parser, argv):
    """Split ``argv`` into (our words, the server's command or None).

    The server's command follows a ``--`` or, under a command that takes one, starts at the first word that
    is neither our option nor its value (the MCP Inspector drops the ``--``).  An unknown option ends the walk.
    """
    index = 0
    while index < len(argv):
        word = argv[index]
        if word == "--":
            return argv[:index], argv[index + 1:]
        index += 1
        if word.startswith("-") and word != "-":
            arity = option_arity(parser, word)
            if arity is None:
                break
            # argparse takes no option-looking word as a value either
            for _ in range(arity):
                if index < len(argv) and not argv[index].startswith("-"):
                    index += 1
        elif parser.get_default("takes_command"):
            return argv[:index - 1], argv[index - 1:]
        elif parser.commands is not None and word in parser.commands.choices:
            parser = parser.commands.choices[word]
    if "--" in argv:
        split = argv.index("--")
        return argv[:split], argv[split + 1:]
    return argv, None


ENV_PREFIXES = ("OCX_PROXY_", "CURSOR_MCP_RESPONSE_PROXY_")
IO_MODES = ("auto", "select", "threads")


def int_at_least(minimum, zero_means=None):
    """Converter: an integer of at least ``minimum``, or 0 if ``zero_means``; ValueError otherwise."""
    def convert(text):
        value = int(text)
        if value < minimum and not (value == 0 and zero_means):
            raise ValueError("must be 0 (%s) or at least %d" % (zero_means, minimum) if zero_means
                             else "must be at least %d" % minimum)
        return value
    return convert


def choice_of(values):
    def convert(text):
        if text not in values:
            raise ValueError("expected one of " + ", ".join(values))
        return text
    return convert


def non_negative_float(text):
    value = float(text)
    if not value >= 0 or value == float("inf"):
        raise ValueError("must be a number >= 0")
    return value


def positive_float(text):
    value = non_negative_float(text)
    if value == 0:
        raise ValueError("must be a number > 0")
    return value


def seconds_or_off(minimum):
    """Converter: a number of seconds of at least ``minimum``, or 0 (off)."""
    def convert(text):
        value = non_negative_float(text)
        if 0 < value < minimum:
            raise ValueError("must be 0 (off) or at least %g" % minimum)
        return value
    return convert


max_chars_value = int_at_least(500, "never spill")
max_bytes_value = int_at_least(500, "no byte limit")


def flag_value(text):
    """An on/off environment twin: 1, true, yes, on or 0, false, no, off."""
    value = text.lower()
    if value not in ("1", "true", "yes", "on", "0", "false", "no", "off"):
        raise ValueError("expected 1/true/yes/on or 0/false/no/off")
    return value in ("1", "true", "yes", "on")


def typed(convert, what):
    """argparse ``type=`` wrapper whose error says what was expected."""
    def parse(text):
        try:
            return convert(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError("%r is not %s (%s)" % (text, what, exc))
    return parse


class EnvDefault:
    """The default of an option with an environment twin ``OCX_PROXY_<name>``, shown by --help;
    ``resolve_env_defaults`` replaces it with the twin converted by ``convert``, else ``value``."""

    def __init__(self, name, convert, value):
        self.name, self.convert, self.value = name, convert, value

    def __str__(self):
        value = self.value
        if isinstance(value, float):
            value = "%g" % value
        elif isinstance(value, int) and value >= 1 << 20 and value % (1 << 20) == 0:
            value = "%d = %d MiB" % (value, value >> 20)
        elif value is None:
            value = "from the client profile"
        return "%s; env OCX_PROXY_%s" % (value, self.name)

    def resolve(self):
        for prefix in ENV_PREFIXES:
            raw = os.environ.get(prefix + self.name)
            if raw is not None and raw.strip() != "":
                try:
                    return self.convert(raw.strip())
                except ValueError as exc:
                    raise UsageError("%s%s=%r is invalid: %s" % (prefix, self.name, raw, exc))
        return self.value


def add_env_option(group, flag, name, convert, what, default, **kwargs):
    """``group.add_argument(flag)`` with the twin ``OCX_PROXY_<name>``, both read by ``convert``."""
    group.add_argument(flag, type=typed(convert, what), default=EnvDefault(name, convert, default), **kwargs)


def add_env_flag(group, flag, name, default, help, **kwargs):
    """An on/off option with the twin ``OCX_PROXY_<name>`` (``flag_value``)."""
    group.add_argument(flag, action="store_true", default=EnvDefault(name, flag_value, default), help=help, **kwargs)


def add_fit_tools_options(parser, fit, keep):
    """--fit-tools (on by default, ``fit``) and --no-fit-tools (``keep``) of the relays and encode-tools."""
    add_env_flag(parser, "--fit-tools", "FIT_TOOLS", True, fit + " (default %(default)s)")
    parser.add_argument("--no-fit-tools", dest="fit_tools", action="store_false", help=keep + " (default off)")


def add_count_option(parser, flag, what, default, help, metavar="N"):
    """An option taking a whole number of at least 1 (``what``: "a count", "a byte count")."""
    parser.add_argument(flag, metavar=metavar, type=typed(int_at_least(1), what), default=default, help=help)


def resolve_env_defaults(args):
    for dest, value in list(vars(args).items()):
        if isinstance(value, EnvDefault):
            setattr(args, dest, value.resolve())


def client_choice(command, names):
    """Converter for the --client of ``command``: one of ``names``, or an older spelling of one."""
    choose = choice_of(names)
    return lambda text: choose(client_named(text, command))


def aliases_note(command):
    """The --help words on the older spellings ``command`` still takes."""
    return "".join("; %s still means %s (deprecated)" % (alias, name) for name, client in CLIENTS.items()
                   for alias, commands in client.aliases.items() if command in commands)


def add_spill_options(parser):
    group = parser.add_argument_group("response spill")
    add_env_option(group, "--client", "CLIENT", client_choice("relay", CLIENT_CHOICES), "a client name", "auto",
                   choices=CLIENT_CHOICES,
                   help="the client's profile (budget, preview, images, outputSchema); auto: from the clientInfo.name "
                        "it sends, generic (%d characters) if unknown; the options below win%s (default %%(default)s)"
                        % (MAX_RESPONSE_CHARS, aliases_note("relay")))
    add_env_option(group, "--max-response-chars", "MAX_RESPONSE_CHARS", max_chars_value, "a character count",
                   None, metavar="CHARS", help="responses longer than this (compact JSON) are saved to disk and "
                                               "replaced by a preview; 0 never spills (default %(default)s)")
    add_env_option(group, "--max-response-bytes", "MAX_RESPONSE_BYTES", max_bytes_value, "a byte count", None,
                   metavar="BYTES", help="spill responses longer than this many UTF-8 bytes too; 0 = no byte limit "
                                         "(default %(default)s)")
    add_env_option(group, "--max-image-bytes", "MAX_IMAGE_BYTES", int_at_least(0), "a byte count", None,
                   metavar="BYTES",
                   help="base64 image data allowed on top of the budget, for clients that show images; 0 = images "
                        "count; profiles: %d for %s, else 0 (default %%(default)s)" % (MAX_IMAGE_BYTES, ", ".join(
                            n for n in CLIENT_CHOICES if n != "auto" and client_profile(n).shows_images)))
    add_env_option(group, "--preview-chars", "PREVIEW_CHARS", int_at_least(0), "a character count", None,
                   metavar="CHARS", help="characters of text kept in a preview (default %(default)s)")
    group.add_argument("--output-dir", metavar="DIR", help="where spilled responses are written (default %(default)s)",
                       default=EnvDefault("OUTPUT_DIR", os.path.expanduser, default_cache_dir()))
    add_env_option(group, "--retention-days", "RETENTION_DAYS", int_at_least(0), "a number of days", RETENTION_DAYS,
                   metavar="DAYS", help="at start, delete spills older than this; 0 keeps all (default %(default)s)")
    add_env_flag(group, "--no-reader-tool", "NO_READER_TOOL", False,
                 "do not add %s (reads spilled text) to tools/list (default %%(default)s)" % READER_TOOL_NAME)
    group.add_argument("--keep-output-schema", action="store_true",
                       help="keep outputSchema in tools/list, which SDK clients then enforce on spilled results "
                            "(default off, on for --client codex)")
    add_fit_tools_options(group, "fit tools/list to the client's name and schema rules, calls reaching the "
                                 "server's names", "relay tools/list as the server sent it")


def tool_globs(text):
    globs = tuple(glob.strip() for glob in text.split(","))
    if "" in globs:
        raise ValueError("an empty glob: two commas, or one at an end")
    return globs


def add_tool_filter_options(parser, suppress=False):
    """--allow-tools/--deny-tools (``ToolFilter``); ``suppress``: see ``add_check_output_options``."""
    for flag, name, which, default in (("--allow-tools", "ALLOW_TOOLS", "only", "every tool"),
                                       ("--deny-tools", "DENY_TOOLS", "none of", "none")):
        parser.add_argument(flag, type=typed(tool_globs, "a comma-separated list of globs"), metavar="GLOB[,GLOB...]",
                            default=argparse.SUPPRESS if suppress else EnvDefault(name, tool_globs, ()),
                            help="list and let the client call %s the server's tools whose name matches one of these "
                                 "globs (default: %s; env OCX_PROXY_%s)" % (which, default, name))


def add_relay_options(parser):
    add_spill_options(parser)
    group = parser.add_argument_group("relay")
    add_tool_filter_options(group)
    add_env_option(group, "--request-timeout", "REQUEST_TIMEOUT", non_negative_float, "a number of seconds", 0.0,
                   metavar="SECONDS", help="answer a request unanswered after this many seconds with an error and "
                                           "cancel it upstream; 0 = no timeout (default %(default)s)")
    generic_seconds = CLIENTS["generic"].facts.call_seconds
    add_env_option(group, "--heartbeat", "HEARTBEAT", seconds_or_off(0.1), "a number of seconds", None,
                   metavar="SECONDS", help="while the server says nothing of a request that carries a progressToken "
                   "for this long, send the client progress ourselves (its clock may start again); 0 = off; the "
                   "profile's: min(30, the client's call deadline / 4), %g s for generic (default %%(default)s)"
                   % heartbeat_seconds(generic_seconds))
    add_env_option(group, "--detach-after", "DETACH_AFTER", seconds_or_off(0.1), "a number of seconds", None,
                   metavar="SECONDS", help="answer a tools/call still running after this long ourselves, before the "
                   "client gives up: it goes on, and %s returns its result by the id named; 0 = never; the "
                   "profile's: the client's call deadline less 10 s or a tenth, %g s for generic (default "
                   "%%(default)s)" % (READER_TOOL_NAME, detach_seconds(generic_seconds)))
    add_env_option(group, "--restart", "RESTART", int_at_least(0), "a count", 0, metavar="N",
                   help="restart a crashed upstream up to N times, replaying initialize (default %(default)s)")
    levels = sorted(LOG_LEVELS, key=LOG_LEVELS.get)
    add_env_option(group, "--log-level", "LOG_LEVEL", choice_of(levels), "a log level", "info",
                   choices=levels, help="stderr logging threshold (default %(default)s)")
    group.add_argument("--trace", metavar="FILE", help="append an NDJSON record per message (time, direction, id, "
                                                       "method, size, spill paths; no bodies, secrets redacted) "
                                                       "(default off)")
    add_env_option(group, "--max-message-bytes", "MAX_MESSAGE_BYTES", int_at_least(1024), "a byte count",
                   MAX_MESSAGE_BYTES, metavar="BYTES", help="largest message accepted from either side; a larger "
                                                            "one is answered with an error (default %(default)s)")
    add_env_option(group, "--max-buffer-bytes", "MAX_BUFFER_BYTES", int_at_least(65536), "a byte count",
                   MAX_BUFFER_BYTES, metavar="BYTES", help="bytes held for a peer not reading before we stop "
                                                           "reading the other side (default %(default)s)")
    add_env_option(group, "--io", "IO", choice_of(IO_MODES), "an I/O mode", "auto", choices=IO_MODES,
                   help="how pipes are read: select, or threads (always on Windows) (default %(default)s)")
    add_env_flag(group, "--no-catalog-cache", "NO_CATALOG_CACHE", False,
                 "do not keep the server's last catalog in %s under the output directory, nor answer initialize "
                 "and tools/list from it while the server starts (default %%(default)s)" % CATALOG_DIR)
    add_gate_options(parser)


def command_words(text):
    """Converter for --negotiate: the words of a command line (``split_command_line``)."""
    words = split_command_line(text)
    if not words:
        raise ValueError("an empty command")
    return words


def hook_seconds(text):
    """Converter for --negotiate-timeout: a number of seconds, 0.01 at least (a hook always gets some time)."""
    value = non_negative_float(text)
    if value < 0.01:
        raise ValueError("must be at least 0.01")
    return value


def add_gate_options(parser):
    group = parser.add_argument_group("gate (before each tools/call reaches the server)")
    add_env_option(group, "--check-arguments", "CHECK_ARGUMENTS", choice_of(GATE_MODES), "a mode", "annotate",
                   choices=GATE_MODES, help="check a call's arguments against the inputSchema the server declared for "
                   "its tool; refuse: a call that breaks it is answered with a tool error naming each JSON pointer, "
                   "what the schema wants and what came, and never reaches the server; annotate: it is sent, and "
                   "if the server answers with an error that error gets the findings after its own words; keywords "
                   "checked: %s; any other keyword, format, a $ref outside the schema or a pattern Python does not "
                   "read as ECMA-262 allows anything (default %%(default)s)" % ", ".join(CHECK_KEYWORDS))
    add_env_option(group, "--negotiate", "NEGOTIATE", command_words, "a command", None, metavar="CMD",
                   help="a program of yours, started with the relay, that rules on each tools/call: one JSON line on "
                   "its stdin (id, tool, arguments, server, client, trace), one JSON line back, {\"id\": ..., "
                   "\"valid\": true|false, \"reason\": \"...\"}; valid false, no answer in time, a malformed line or "
                   "a hook that exited: the call is refused with the reason and never reaches the server (default "
                   "none; env OCX_PROXY_NEGOTIATE)")
    add_env_option(group, "--negotiate-timeout", "NEGOTIATE_TIMEOUT", hook_seconds, "a number of seconds",
                   5.0, metavar="SECONDS", help="how long a call waits for the negotiate hook before it is refused "
                   "(default %(default)s)")


# RelayOptions' parameters that take the option of the same name.
RELAY_OPTION_NAMES = ("client", "max_response_chars", "max_response_bytes", "max_image_bytes", "preview_chars",
                      "output_dir", "retention_days", "request_timeout", "restart", "keep_output_schema",
                      "max_message_bytes", "max_buffer_bytes", "fit_tools", "allow_tools", "deny_tools", "heartbeat",
                      "detach_after", "check_arguments", "negotiate", "negotiate_timeout")


def relay_options_from_args(args, upstream):
    """The RelayOptions of a relay command; ``upstream()``: what identifies its server, for the catalog cache's
    keys (not asked with --no-catalog-cache)."""
    log.level = LOG_LEVELS[args.log_level]
    given = {name: getattr(args, name) for name in RELAY_OPTION_NAMES}
    given["output_dir"] = given["output_dir"] or default_cache_dir()
    return RelayOptions(use_threads=args.io == "threads", trace_path=args.trace, reader_tool=not args.no_reader_tool,
                        catalog=None if args.no_catalog_cache else upstream(), **given)


# ---------------------------------------------------------------------------
# CLI / main: the commands, their parsers and the entry point
# ---------------------------------------------------------------------------


def stdio_from_args(args, command, **kwargs):
    """The upstream factory of the server command that follows ``command``'s options."""
    if not args.upstream_command:
        raise UsageError("%s needs the server command, e.g. %s npx -y my-server (a -- before it is optional)"
                         % (command, command))
    env = child_environment(args.env or (), args.pass_environment)
    return stdio_upstream_factory(args.upstream_command, env, cwd=args.cwd, **kwargs)


def stdio_identity(args):
    """What tells a stdio server apart for the catalog cache: its command, working directory and --env pairs (the
    values it gets; the cache only keeps a hash)."""
    env = child_environment(args.env or (), args.pass_environment)
    names = sorted(set(pair.partition("=")[0] for pair in args.env or ()))
    try:
        cwd = os.path.abspath(args.cwd or os.getcwd())
    except OSError:  # ours was removed: the server starts there all the same
        cwd = None
    return ["stdio", args.upstream_command, cwd, [[name, env[name]] for name in names], args.pass_environment]


def cmd_stdio(args):
    options = relay_options_from_args(args, lambda: stdio_identity(args))
    make_upstream = stdio_from_args(args, "stdio", use_threads=options.use_threads, max_message_bytes=
                                    options.max_message_bytes, max_buffer_bytes=options.max_buffer_bytes)
    if args.cwd and not os.path.isdir(args.cwd):
        raise UsageError("--cwd %s is not a directory" % args.cwd)
    return run_relay(options, make_upstream)


REMOTE_COMMANDS = (
    ("streamable-http", "relay to a remote MCP server over Streamable HTTP",
     "Relay MCP between stdio and a remote server speaking Streamable HTTP (MCP %s and later)."
     % version_since("streamable_http")),
    ("sse", "relay to a remote MCP server over the legacy HTTP+SSE transport",
     "Relay MCP between stdio and a remote server speaking the %s HTTP+SSE transport." % version_since("http_sse")),
    ("auto", "relay to a remote MCP server: Streamable HTTP, else legacy HTTP+SSE",
     "Relay MCP to a remote server over Streamable HTTP, or legacy HTTP+SSE when the initialize POST gets "
     "HTTP 400, 404 or 405."),
)


def remote_config_from_args(args):
    if args.cacert and not os.path.isfile(args.cacert):
        raise UsageError("--cacert %s: no such file" % args.cacert)
    config = RemoteConfig(args.url, args.header or (), args.timeout, args.sse_read_timeout, args.cacert,
                          args.insecure, max_message_bytes=args.max_message_bytes)
    if args.insecure:
        log.warning("WARNING: --insecure: TLS certificates are NOT verified. Anyone on the network path "
                    "can read and change this traffic, including the credentials in your headers.")
    return config


def add_oauth_options(parser):
    """The OAuth options of the remote relays and ``auth``."""
    group = parser.add_argument_group("OAuth (servers that answer HTTP 401)")
    add_env_flag(group, "--no-oauth", "NO_OAUTH", False, "pass an HTTP 401 on as an error, no MCP authorization "
                 "flow (default %(default)s; also when --header sets Authorization)")
    group.add_argument("--oauth-client-id", metavar="ID",
                       help="a pre-registered OAuth client id (default: dynamic client registration)")
    add_env_option(group, "--oauth-client-secret", "OAUTH_CLIENT_SECRET", str, "a secret", None, metavar="SECRET",
                   help="its secret; write ${VAR} (or set the env twin) to keep it out of `ps`; never logged "
                        "(default: none, a public client; env OCX_PROXY_OAUTH_CLIENT_SECRET)")
    group.add_argument("--oauth-client-key", metavar="FILE",
                       help="its private key (PEM or DER: PKCS #8, SEC 1 or PKCS #1; P-256 signs ES256, RSA >= 2048 "
                            "bits RS256): the client authenticates with private_key_jwt instead of a secret "
                            "(default: none)")
    add_env_flag(group, "--oauth-client-credentials", "OAUTH_CLIENT_CREDENTIALS", False,
                 "machine to machine: the client_credentials grant with --oauth-client-id and its secret or key; no "
                 "user, no browser (default %(default)s)")
    group.add_argument("--oauth-client-file", metavar="FILE",
                       help="a JSON file with client_id and client_secret (default: none)")
    add_env_option(group, "--oauth-client-metadata-url", "OAUTH_CLIENT_METADATA_URL", client_id_url,
                   "a client id URL", None, metavar="URL",
                   help="the https URL of your Client ID Metadata Document, the client id where the authorization "
                        "server supports it (default: none, dynamic client registration; env "
                        "OCX_PROXY_OAUTH_CLIENT_METADATA_URL)")
    add_env_option(group, "--oauth-callback-port", "OAUTH_CALLBACK_PORT", int_at_least(1), "a port number",
                   None, metavar="PORT",
                   help="the port of the redirect URI http://127.0.0.1:PORT/callback (default: %d for a "
                        "pre-registered client, else one derived from the authorization server; env "
                        "OCX_PROXY_OAUTH_CALLBACK_PORT)" % OAUTH_CALLBACK_PORT)
    add_env_option(group, "--oauth-timeout", "OAUTH_TIMEOUT_SECONDS", non_negative_float, "a number of seconds",
                   OAUTH_TIMEOUT, help="how long a login may take; a request waits at most %g s of it, a call of %s "
                                       "%g s (default %%(default)s)"
                                       % (OAUTH_REQUEST_WAIT, LOGIN_TOOL, LOGIN_TOOL_WAIT))
    add_env_flag(group, "--oauth-no-browser", "OAUTH_NO_BROWSER", False,
                 "never open a browser: print the login URL on stderr (default %(default)s)")
    add_env_flag(group, "--oauth-device", "OAUTH_DEVICE", False, "log in with a code entered on another device "
                 "(RFC 8628) where offered; also when no browser can open here (default %(default)s)")
    group.add_argument("--oauth-scope", metavar="SCOPES",
                       help="scopes to ask for (default: the 401 challenge's, else the server's scopes_supported)")
    group.add_argument("--oauth-issuer", metavar="URL",
                       help="the authorization server your client's secret or key belongs to: a server that names "
                            "another is refused before any credential is sent (default: the one the server names)")
    group = parser.add_argument_group(
        "enterprise-managed authorization (the company's identity provider vouches for the user with an ID-JAG; "
        "--oauth-client-id names ocx-proxy's client at the MCP server's authorization server)")
    group.add_argument("--oauth-idp-issuer", metavar="URL", help="the identity provider's issuer URL (default: none)")
    group.add_argument("--oauth-idp-client-id", metavar="ID", help="ocx-proxy's client id at the identity provider "
                                                                   "(no default: required with --oauth-idp-issuer)")
    add_env_option(group, "--oauth-idp-client-secret", "OAUTH_IDP_CLIENT_SECRET", str, "a secret", None,
                   metavar="SECRET", help="its secret, ${VAR} expanded; never logged (default: none; env "
                                          "OCX_PROXY_OAUTH_IDP_CLIENT_SECRET)")
    group.add_argument("--oauth-idp-client-key", metavar="FILE",
                       help="its private key, as --oauth-client-key (default: none)")
    group.add_argument("--oauth-idp-id-token-file", metavar="FILE",
                       help="a file holding the user's ID token from the identity provider, read at each exchange "
                            "(default: none: ocx-proxy logs in to the identity provider itself, browser or device)")
    group.add_argument("--oauth-idp-token-endpoint", metavar="URL",
                       help="the identity provider's token endpoint, where its metadata does not say (default: "
                            "from its metadata)")


def oauth_settings_from_args(args):
    secret = None if args.oauth_client_secret is None else expand_env_refs(args.oauth_client_secret)
    if (args.oauth_client_secret or args.oauth_client_key) and not args.oauth_client_id:
        raise UsageError("--oauth-client-%s needs --oauth-client-id" % (
            "secret (or OCX_PROXY_OAUTH_CLIENT_SECRET)" if args.oauth_client_secret else "key"))
    if args.oauth_client_file and not os.path.isfile(args.oauth_client_file):
        raise UsageError("--oauth-client-file %s: no such file" % args.oauth_client_file)
    if args.oauth_callback_port is not None and not 1 <= args.oauth_callback_port <= 65535:
        raise UsageError("--oauth-callback-port %d is not a port number" % args.oauth_callback_port)
    if args.oauth_client_credentials and not (args.oauth_client_file or (args.oauth_client_id and (
            secret or args.oauth_client_key))):
        raise UsageError("--oauth-client-credentials needs --oauth-client-id with --oauth-client-secret or "
                         "--oauth-client-key (or --oauth-client-file)")
    idp = idp_settings_from_args(args)
    if idp and args.oauth_client_credentials:
        raise UsageError("--oauth-client-credentials and --oauth-idp-issuer are two grants: give one")
    if idp and not (args.oauth_client_id or args.oauth_client_file or args.oauth_client_metadata_url):
        raise UsageError("--oauth-idp-issuer needs ocx-proxy's client at the MCP server's authorization server: "
                         "--oauth-client-id (with its secret or key) or --oauth-client-metadata-url")
    return OAuthSettings(args.oauth_client_id, secret, args.oauth_client_file, args.oauth_callback_port,
                         args.oauth_timeout or OAUTH_TIMEOUT, not args.oauth_no_browser, scope=args.oauth_scope,
                         device=args.oauth_device, client_metadata_url=args.oauth_client_metadata_url,
                         client_key=key_file_option("--oauth-client-key", args.oauth_client_key, secret),
                         client_credentials=args.oauth_client_credentials, idp=idp, issuer=args.oauth_issuer)


def key_file_option(flag, path, secret):
    """The KeyFile of ``flag`` (None without one); UsageError for a file that holds no usable key."""
    if path is None:
        return None
    if secret:
        raise UsageError("%s and a client secret: the client authenticates with one of them" % flag)
    try:
        return KeyFile(path)
    except ValueError as exc:
        raise UsageError("%s: %s" % (flag, exc))


def idp_settings_from_args(args):
    """The IdpSettings of --oauth-idp-*, or None without --oauth-idp-issuer."""
    given = [name for name in ("client_id", "client_secret", "client_key", "id_token_file", "token_endpoint")
             if getattr(args, "oauth_idp_" + name)]
    if not args.oauth_idp_issuer:
        if given:
            raise UsageError("--oauth-idp-%s%s needs --oauth-idp-issuer" % (given[0].replace("_", "-"), (
                " (or OCX_PROXY_OAUTH_IDP_CLIENT_SECRET)" if given[0] == "client_secret" else "")))
        return None
    if not args.oauth_idp_client_id:
        raise UsageError("--oauth-idp-issuer needs --oauth-idp-client-id (ocx-proxy's client at the identity provider)")
    for flag, url in (("--oauth-idp-issuer", args.oauth_idp_issuer),
                      ("--oauth-idp-token-endpoint", args.oauth_idp_token_endpoint)):
        problem = url and endpoint_problem(url)
        if problem:
            raise UsageError("%s %s is %s: only https://, or http:// to this machine, is used" % (flag, url, problem))
    secret = None if args.oauth_idp_client_secret is None else expand_env_refs(args.oauth_idp_client_secret)
    return IdpSettings(args.oauth_idp_issuer, args.oauth_idp_client_id, secret,
                       key_file_option("--oauth-idp-client-key", args.oauth_idp_client_key, secret),
                       args.oauth_idp_id_token_file, args.oauth_idp_token_endpoint)


def attach_oauth(config, args):
    """Give ``config`` an OAuthClient unless --no-oauth or the user sends their own Authorization."""
    settings = oauth_settings_from_args(args)
    config.keep_secret(settings.client_secret, settings.idp and settings.idp.client_secret)
    if not args.no_oauth and not any(name.lower() == "authorization" for name, _ in config.header_list):
        config.oauth = OAuthClient(config, settings)
    return config


def cmd_auth(args):
    """``auth login|status|logout``: 0 done (status: tokens stored), 1 failed or nothing stored."""
    config = remote_config_from_args(args)
    oauth = OAuthClient(config, oauth_settings_from_args(args))
    try:
        stored = oauth.login() if args.action == "login" else oauth.stored()
    except UsageError:
        raise
    except (OcxError, OSError) as exc:   # a refused token directory, a failed login: no secret in the message
        raise OAuthError(config.scrub(str(exc)))
    if args.action == "login":
        sys.stderr.write("ocx-proxy: logged in to %s\n" % config.display_url)
        return 0
    if args.action == "logout":
        return auth_logout(oauth, stored)
    if not stored:
        print("not logged in to %s (tokens would be in %s)" % (config.display_url, oauth.settings.auth_dir))
        return 1
    for path, doc in stored:
        print(auth_status(oauth, path, doc))
    return 0


def auth_logout(oauth, stored):
    """``auth logout``: revoke and remove the tokens ``stored`` (and our login at the IdP); 0, or 1 for none."""
    for path, doc in stored:
        failed = oauth.revoke(doc)
        if failed:
            log.warning("could not revoke the tokens at %s (%s); removing them here all the same"
                        % (doc.get("issuer"), failed))
        elif failed == "":
            log.info("revoked the tokens at %s" % doc.get("issuer"))
        oauth.forget(path, doc)
    if oauth.idp is not None and oauth.idp.forget():
        log.info("removed the stored login at the identity provider %s" % oauth.settings.idp.issuer)
    sys.stderr.write("ocx-proxy: %s for %s\n" % ("removed the tokens" if stored else "no tokens stored",
                                                 oauth.config.display_url))
    return 0 if stored else 1


def auth_status(oauth, path, doc):
    """What ``auth status`` shows of the tokens ``doc`` stored at ``path``: never a token or a secret."""
    import datetime
    expires = stored_expiry(doc)
    when = datetime.datetime.fromtimestamp(expires).isoformat(" ", "seconds") if expires else "never"
    # escaped: a client id or scope may hold anything
    issuer, client_id, scope, client_auth = (printable(str(doc.get(name) or "(none)"))
                                             for name in ("issuer", "client_id", "scope", "client_auth"))
    grant = GRANT_NAMES.get(doc.get("grant"), "not recorded (tokens stored by an earlier version)")
    key = oauth.settings.client_key
    if client_auth == "private_key_jwt" and key is not None:
        client_auth += " (%s, key file %s)" % (key.key.alg, key.path)
    text = ("server: %s\nissuer: %s\ngrant: %s\nclient id: %s\nclient authentication: %s\nscopes: %s\n"
            "access token expires: %s%s\nrefresh token: %s\nfile: %s"
            % (oauth.config.display_url, issuer, grant, client_id, client_auth, scope, when,
               " (expired)" if expires and expires < time.time() else "",
               "yes" if doc.get("refresh_token") else "no", path))
    if doc.get("grant") == JWT_BEARER_GRANT and oauth.idp is not None:
        text += "\nidentity provider: %s, client id %s; %s" % (
            oauth.settings.idp.issuer, printable(oauth.settings.idp.client_id), oauth.idp.describe())
    return text


def add_auth_command(sub):
    p = sub.add_parser("auth", help="log in to an OAuth-protected remote server, show or forget its tokens",
                       description="Log in ahead of time, show what is stored (never the tokens) or forget it.  "
                                   "Exit status 0 done, 1 failed or nothing stored, 2 usage errors.")
    p.add_argument("action", choices=("login", "status", "logout"))
    add_remote_server_options(p)
    add_oauth_options(p)
    p.add_argument("--device", dest="oauth_device", action="store_true", default=argparse.SUPPRESS,
                   help="login: the same as --oauth-device, to log in over SSH with a code")
    p.set_defaults(handler=cmd_auth, max_message_bytes=MAX_MESSAGE_BYTES)


def cmd_remote(args):
    options = relay_options_from_args(args, lambda: [args.transport, expand_env_refs(args.url), [
        parse_header_option(text)[:2] for text in args.header or ()]])  # what tells the server apart: its cache key
    config, made = attach_oauth(remote_config_from_args(args), args), []
    proxy = config.proxy
    via = "" if proxy is None else " through the proxy %s (%s)" % (proxy.display, proxy.variable)
    log.debug("remote server %s (%s)%s" % (config.display_url, args.transport, via))
    status = run_relay(options, remote_upstream_factory(args.transport, config, made))
    return 1 if any(upstream.fatal for upstream in made) else status


def add_remote_server_options(parser, timeout=True):
    """--url, --header, TLS and timeout options shared by the remote relays and ``check``."""
    group = parser.add_argument_group("remote server")
    group.add_argument("--url", required=True,
                       help="the server's MCP endpoint (the SSE URL for sse); ${VAR} expands (required, no default)")
    group.add_argument("--header", action="append", metavar="NAME=VALUE",
                       help="send this HTTP header ('NAME: VALUE' works too); ${VAR} in VALUE expands, unset is an "
                            "error; never logged (repeatable; default: none)")
    if timeout:
        add_env_option(group, "--timeout", "TIMEOUT_SECONDS", non_negative_float, "a number of seconds", 120.0,
                       help="limit on each HTTP exchange up to a whole JSON answer or an event stream's headers; "
                            "0 = no limit (default %(default)s)")
    add_env_option(group, "--sse-read-timeout", "SSE_READ_TIMEOUT_SECONDS", non_negative_float, "a number of seconds",
                   300.0, help="how long a request answered on an event stream may go without its answer or its "
                               "progress; 0 = no limit (default %(default)s)")
    group.add_argument("--cacert", metavar="FILE",
                       help="also trust the CAs in this PEM file (default: the system CAs and SSL_CERT_FILE)")
    group.add_argument("--insecure", action="store_true",
                       help="do not verify TLS certificates; prints a warning (default off)")


def add_remote_commands(sub):
    for name, summary, description in REMOTE_COMMANDS:
        p = sub.add_parser(name, help=summary, description=description)
        add_remote_server_options(p)
        add_oauth_options(p)
        add_relay_options(p)
        p.set_defaults(handler=cmd_remote, transport=name)


def add_stdio_command(sub):
    p = sub.add_parser("stdio", help="relay to an MCP server started as a child process",
                       usage="%(prog)s [options] [--env NAME=VALUE]... [--cwd DIR] [--pass-environment] "
                             "[--] COMMAND [ARGS...]",
                       description="Relay MCP between this process's stdio (the client) and a server started as a "
                                   "child process.  Our options end at COMMAND; the words after it are the server's.")
    add_relay_options(p)
    add_child_process_options(p)
    p.set_defaults(handler=cmd_stdio, takes_command=True)


def add_child_process_options(parser):
    """--env, --cwd, --pass-environment: how ``stdio`` and ``check stdio`` start the server."""
    group = parser.add_argument_group("child process")
    group.add_argument("--env", action="append", metavar="NAME=VALUE",
                       help="set a variable for the child; ${VAR} in VALUE expands (repeatable; default: only %s "
                            "are passed, and %s)" % (" ".join(SAFE_ENV), " ".join("%s=%s" % pair for pair in
                                                                    sorted(CHILD_TEXT_ENV.items()))))
    group.add_argument("--cwd", metavar="DIR", help="working directory of the child (default: ours)")
    group.add_argument("--pass-environment", action="store_true",
                       help="pass our whole environment to the child (default off)")


def add_demo_commands(sub):
    p = sub.add_parser("demo", help="run the whole chain against the built-in server and show it",
                       description="Call the built-in demo-server's tools through the relay; show what the client "
                                   "gets.")
    p.add_argument("--output-dir", default=os.path.join(default_cache_dir(), "demo"),
                   help="where spilled responses go (default %(default)s)")
    p.add_argument("--max-response-chars", type=typed(max_chars_value, "a character count"),
                   default=MAX_RESPONSE_CHARS, help="spill threshold used by the demo relay (default %(default)s)")
    p.set_defaults(handler=lambda args: run_demo(args.output_dir, args.max_response_chars, sys.stdout))
    p = sub.add_parser("demo-server", help="the built-in sample MCP server (stdio)", description="A small MCP "
                       "server on stdio whose tools return small, huge, unicode, structured and image results.")
    p.set_defaults(handler=lambda args: run_demo_server())


def parse_tool_choice_arg(text):
    if text in ("auto", "none", "required"):
        return text
    try:
        return load_json_strict(text, "--tool-choice")
    except OcxError:
        raise UsageError("--tool-choice must be auto, none, required or JSON "
                         "such as '{\"type\":\"function\",\"name\":\"x\"}'; got %r" % text)


HEX_INPUT_RE = re.compile(rb"^(0x)?[0-9A-Fa-f \t\r\n]*$")
BASE64_INPUT_RE = re.compile(rb"^[A-Za-z0-9+/_\-= \t\r\n]*$")


def decode_input_format(data, fmt):
    """``decode`` input (raw, hex, base64 or auto-detected) as protobuf bytes."""
    # A serialized message nearly always holds a byte outside these alphabets (small lengths and tags are
    # control characters), so text means encoded.
    if fmt == "auto" and data.strip():
        if HEX_INPUT_RE.match(data):
            fmt = "hex"
        elif BASE64_INPUT_RE.match(data):
            fmt = "base64"
    if fmt not in ("hex", "base64"):
        return data
    text = re.sub(rb"\s+", b"", data)  # either may be wrapped or indented
    if fmt == "hex":
        text = text[2:] if text[:2] in (b"0x", b"0X") else text
        try:
            return bytes.fromhex(text.decode("ascii"))
        except (UnicodeDecodeError, ValueError):
            raise OcxError("input is not valid hex (%d digits; need pairs of 0-9a-f)" % len(text))
    altchars = b"-_" if (b"-" in text or b"_" in text) else None
    try:
        return base64.b64decode(text + b"=" * (-len(text) % 4), altchars=altchars, validate=True)
    except (ValueError, TypeError):
        raise OcxError("input is not valid base64")


def fitted_for_cursor(tools, provider):
    """Normalised ``tools`` fitted to Cursor's rules as the relay fits them, ``provider`` counting as the server
    name (mcp_<provider>_<tool>).  A renamed tool loses its namespace; each fitted name is logged with the
    catalog's, for whoever maps Cursor's calls back."""
    fitted, names = fit_tools([{"name": tool["wire_name"], "inputSchema": tool["input_schema"]} for tool in tools],
                              "cursor", len(provider))
    out = []
    for tool, fit in zip(tools, fitted):
        tool = dict(tool, input_schema=fit["inputSchema"])
        if fit["name"] != tool["wire_name"]:
            tool.pop("namespace", None)
            tool.update(name=fit["name"], wire_name=fit["name"])
        out.append(tool)
    for name, original in names.items():
        log.info("encode-tools: %s is the catalog's %s, fitted for Cursor: a call of it means that tool"
                 % (name, original))
    return out


def cmd_encode_tools(args):
    """``encode-tools``: a JSON catalog in, Cursor protobuf out, a summary on stderr."""
    label = "stdin" if args.file in (None, "-") else args.file
    document = load_json_strict(read_input_bytes(args.file, args.max_input_bytes), "tool catalog (%s)" % label)
    tools, body_choice = split_catalog(document)
    tool_choice = body_choice if args.tool_choice is None else parse_tool_choice_arg(args.tool_choice)
    notes = []
    normalized = normalize_tools(tools, notes)
    for note in notes:
        log.info(note)
    selected = filter_tools(normalized, tool_choice)
    if tool_choice_names(tool_choice) and not selected:
        log.warning("tool_choice %s matches no tool in the catalog" % dumps(tool_choice))
    if args.fit_tools:
        selected = fitted_for_cursor(selected, args.provider)
    mcp_tools = encode_mcp_tools(selected, None, args.provider)
    if args.wrap == "agent-run-request":
        output = encode_agent_run_request(mcp_tools, empty_wrapper=args.when_empty == "suppress")
    elif args.wrap == "request-context":
        output = encode_request_context(selected, args.instructions, None, args.provider)
    else:
        output = mcp_tools
    for warning in cursor_limit_warnings(0, 0, len(output)):
        log.warning(warning)
    fmt, cursor = args.format or ("hex" if sys.stdout.isatty() else "raw"), CLIENTS["cursor"].facts
    if fmt == "raw":
        sys.stdout.buffer.write(output)
    else:   # text, with a newline
        sys.stdout.buffer.write((output.hex().encode("ascii") if fmt == "hex" else base64.b64encode(output)) + b"\n")
    sys.stdout.buffer.flush()
    log.info("encode-tools: %d tools in, %d out; McpTools %d bytes, %s %d bytes as %s "
             "(Cursor limits: %d tools, %d bytes McpTools, 1 MiB per message)"
             % (len(normalized) + len(notes), len(selected), len(mcp_tools), args.wrap,
                len(output), fmt, cursor.mcp_tools_count, cursor.mcp_tools_bytes))
    return 0


DECODERS = {"raw": decode_raw, "value": decode_value, "mcp-tools": decode_mcp_tools,
            "agent-run-request": decode_agent_run_request, "request-context": decode_request_context}


def cmd_decode(args):
    """``decode``: protobuf bytes (raw, hex or base64) in, JSON on stdout."""
    data = decode_input_format(read_input_bytes(args.file, args.max_input_bytes), args.format)
    result = DECODERS[args.as_type](data, args.max_fields)
    del data  # not needed while the result is written
    if args.as_type == "agent-run-request":
        if result["mcp_tools"] is None:
            log.info("mcp_tools is absent: Cursor adds its default native tool catalog")
        elif not result["mcp_tools"]:
            log.info("mcp_tools is an empty wrapper (22 00): Cursor's native catalog is suppressed")
    write_json_output(result)
    return 0


def write_json_output(value):
    """``json.dumps(value, indent=2)`` and a newline on stdout, written as it is made: a large result's text
    is never held whole."""
    pending, size = [], 0
    for chunk in itertools.chain(_json_chunks(value, "\n"), ["\n"]):
        pending.append(chunk)
        size += len(chunk)
        if size >= 1 << 16:
            sys.stdout.buffer.write("".join(pending).encode("utf-8"))
            pending, size = [], 0
    sys.stdout.buffer.write("".join(pending).encode("utf-8"))
    sys.stdout.buffer.flush()


def add_protobuf_commands(sub):
    p = sub.add_parser("encode-tools", help="encode a tool catalog as Cursor's McpTools protobuf",
                       description="Read a tool catalog (Responses, Chat Completions, MCP tools/list or Anthropic "
                                   "JSON), apply tool_choice and write Cursor's AgentRunRequest.mcp_tools; a summary "
                                   "goes to stderr.")
    p.add_argument("file", nargs="?", default="-", metavar="FILE",
                   help="JSON catalog: a tools array, a request body or a tools/list result (default: -, stdin)")
    p.add_argument("--tool-choice", metavar="JSON", help="auto, none, required or a JSON tool_choice object "
                                                         "(default: the document's own, else every tool)")
    p.add_argument("--provider", metavar="ID", default=CURSOR_PROVIDER,
                   help="provider_identifier of every definition (default: %(default)s)")
    p.add_argument("--wrap", choices=["mcp-tools", "agent-run-request", "request-context"], default="mcp-tools",
                   help="McpTools, an AgentRunRequest holding it in field 4, or a RequestContext with the tools in "
                        "field 7 (default: %(default)s)")
    add_fit_tools_options(p, "fit names and schemas to Cursor's rules as the relay does, --provider as the "
                             "server name; each renamed tool is logged",
                          "encode the catalog's names and schemas as they are")
    p.add_argument("--when-empty", choices=["suppress", "absent"], default="suppress",
                   help="agent-run-request with no tool left: the empty wrapper 22 00 (no native tools either) or "
                        "field 4 absent (default: %(default)s)")
    p.add_argument("--instructions", metavar="TEXT", help="request-context only: McpInstructions text (default: none)")
    p.add_argument("--format", choices=["raw", "hex", "base64"],
                   help="output encoding (default: hex on a terminal, else raw)")
    add_max_input_bytes_option(p)
    p.set_defaults(handler=cmd_encode_tools)
    p = sub.add_parser("decode", help="decode Cursor tool protobuf (or any protobuf) to JSON",
                       description="Decode McpTools, AgentRunRequest, RequestContext, google.protobuf.Value or any "
                                   "message (schema-less) and print JSON.")
    p.add_argument("file", nargs="?", default="-", metavar="FILE",
                   help="protobuf bytes, or hex/base64 text (default: -, standard input)")
    p.add_argument("--as", dest="as_type", choices=sorted(DECODERS), default="mcp-tools",
                   help="message type to decode as; raw guesses without a schema (default: %(default)s)")
    p.add_argument("--format", choices=["auto", "raw", "hex", "base64"], default="auto",
                   help="input encoding; auto tells hex and base64 text from raw bytes (default: %(default)s)")
    add_max_input_bytes_option(p)
    add_count_option(p, "--max-fields", "a count", MAX_DECODED_FIELDS,
                     "decode at most this many protobuf fields; more is an error (default: %(default)s)")
    p.set_defaults(handler=cmd_decode)


def add_max_input_bytes_option(parser):
    add_count_option(parser, "--max-input-bytes", "a byte count", MAX_INPUT_BYTES, "read at most this many bytes "
                     "from FILE or stdin; more is an error (default: %d = 64 MiB)" % MAX_INPUT_BYTES, "BYTES")


def capture_config(args):
    """The configuration text that starts this capture server in ``args.print_config``'s agent CLI."""
    out = args.out
    if out is None:
        out = os.path.splitext(os.path.abspath(args.catalog))[0] + ".calls.ndjson"
        log.info("no --out given: captured calls will go to %s" % out)
    if out.startswith("fd:") or out in ("-", "/dev/stdout"):
        raise UsageError("--print-config needs --out FILE: the agent CLI starts the server and "
                         "passes it no extra file descriptors, and stdout is the MCP channel")
    argv = [os.path.abspath(__file__), "capture", "--catalog", os.path.abspath(args.catalog),
            "--out", os.path.abspath(out)]
    for name in ("server_name", "max_calls", "max_argument_bytes", "reply", "page_size", "tool_choice"):
        if getattr(args, name) is not None:
            argv += ["--" + name.replace("_", "-"), str(getattr(args, name))]
    return client_config_entry(args.print_config, args.server_name, sys.executable or "python3", argv)


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
    aliases = capture_aliases(names)
    allowed = capture_allowed_tools(args.server_name, [aliases[name] for name in names])
    if printing:
        if args.print_config:
            sys.stdout.buffer.write(capture_config(args).encode("utf-8"))
            sys.stdout.buffer.flush()
            log.info(CLIENTS[args.print_config].capture.hint % {"allowed": allowed, "name": args.server_name})
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
        # Escaped JSON can be six times its text; leave room for the envelope.
        line_limit = max(4 * 1024 * 1024, 8 * args.max_argument_bytes)
        return serve_capture(session, sys.stdin.buffer, sys.stdout.buffer, line_limit)
    finally:
        out.close()


def add_capture_command(sub):
    p = sub.add_parser(
        "capture", help="capture-only MCP server: advertise a tool catalog, record calls, never execute",
        description="Serve MCP over stdio, advertising exactly the catalog's tools, and write each tools/call as "
                    "an OpenAI Responses function_call line to --out; nothing is executed.  Refused calls are "
                    "written as capture_error lines and make the exit status 3.")
    p.add_argument("--catalog", metavar="FILE", required=True,
                   help="tools as a request body, a tools array or a tools/list result; at most %d MiB and %d tools "
                        "(required, no default)" % (CAPTURE_MAX_CATALOG_BYTES >> 20, CAPTURE_MAX_TOOLS))
    p.add_argument("--tool-choice", metavar="JSON", help="auto, none, required or a JSON tool_choice object "
                                                         "(default: the catalog's own, else every tool)")
    p.add_argument("--out", metavar="FILE|fd:N",
                   help="captured calls as NDJSON, appended to FILE or an inherited descriptor (required to serve; "
                        "default with --print-config: <catalog>.calls.ndjson)")
    p.add_argument("--server-name", metavar="NAME", default=CAPTURE_SERVER_NAME,
                   help="MCP server name, as in mcp__NAME__tool (default: %(default)s)")
    add_count_option(p, "--max-calls", "a count", CAPTURE_MAX_CALLS,
                     "calls accepted per session; one more is refused (default: %(default)s)")
    add_count_option(p, "--max-argument-bytes", "a byte count", CAPTURE_MAX_ARGUMENT_BYTES,
                     "largest accepted arguments object, as compact JSON (default: %(default)s)")
    p.add_argument("--reply", choices=["pending", "deferred"], default="pending",
                   help="pending leaves each call unanswered so the outer client ends the turn; deferred answers "
                        "that it will run in the client (default: %(default)s)")
    add_count_option(p, "--page-size", "a count", 50, "tools per tools/list page (default: %(default)s)")
    p.add_argument("--print-config", nargs="?", const="claude-code", choices=CAPTURE_CLIENTS,
                   type=lambda text: client_named(text, "capture"), metavar="CLIENT",
                   help="print the configuration entry with which CLIENT (%s; claude-code when not named) starts "
                        "this server, and exit%s (default: serve)" % (", ".join(CAPTURE_CLIENTS),
                                                                      aliases_note("capture")))
    p.add_argument("--print-allowed-tools", action="store_true",
                   help="print the exact comma-joined --allowedTools list and exit (default: serve)")
    p.set_defaults(handler=cmd_capture)


def add_check_output_options(parser, suppress=False):
    """check's options, accepted before or after the transport name: on a transport's parser (``suppress``)
    one not given sets nothing, keeping one given before the name."""
    def add(flag, default, help, **kwargs):
        parser.add_argument(flag, default=argparse.SUPPRESS if suppress else default,
                            help=help % {"default": default}, **kwargs)

    add("--json", False, "print the report as JSON for CI (default: a readable report)", action="store_true")
    kinds = [[name for name, client in CLIENTS.items() if client.kind == kind] for kind in ("agent", "api")]
    add("--client", "all", "only show findings that affect this client (%s) or model API (%s)%s (default "
        "%%(default)s)" % (", ".join(kinds[0]), ", ".join(kinds[1]), aliases_note("check")),
        type=lambda text: client_named(text, "check"), choices=("all",) + tuple(CLIENTS), metavar="CLIENT")
    add("--fitted", False, "check and print the catalog as the relay advertises it to --client (--fit-tools, "
                           "its profile's outputSchema and reader tool): the findings are what the relay leaves "
                           "(default: the server's catalog)", action="store_true")
    add("--server-name", None, "the server's name in your client config, for Cursor's %d-character rule "
                               "(default: serverInfo.name)" % CLIENTS["cursor"].facts.name_chars)
    add("--timeout", 30.0, "longest wait for each answer (default %(default)g)",
        type=typed(non_negative_float, "a number of seconds"), metavar="SECONDS")
    add("--bare", False, "list as a client declaring no capabilities (default: roots, sampling and elicitation)",
        action="store_true")
    add("--compare-capabilities", False, "list again with the other capabilities and report the tools that "
                                         "differ (default: list once)", action="store_true")
    add_tool_filter_options(parser, suppress)


def cmd_check(args):
    log.level = LOG_LEVELS["warning"]
    transport = getattr(args, "transport", None)
    sources = [name for name, given in (("--file", args.file), ("--config", args.config), ("a transport", transport))
               if given]
    for refused, message in (
            (len(sources) != 1, "check needs either --file FILE, --config FILE or a transport (stdio, ...), not %s"
             % (" and ".join(sources) or "none")),
            (args.config_format and not args.config, "--config-format goes with --config FILE"),
            (args.config and (args.allow_tools or args.deny_tools),
             "--allow-tools and --deny-tools do not go with --config: they apply to one server"),
            (args.fitted and args.config, "check --fitted goes with --file or a transport, not --config"),
            (args.fitted and args.client == "all", "check --fitted shows what the relay advertises to one client: "
             "give --client CLIENT, and --file or a transport"),
            (args.file and (args.bare or args.compare_capabilities),
             "check --file reads a saved listing: --bare and --compare-capabilities need a server"),
            (args.config and args.server_name is not None,
             "--server-name does not go with --config: the names come from the file")):
        if refused:
            raise UsageError(message)
    tool_filter = ToolFilter(args.allow_tools, args.deny_tools)
    try:
        if args.config:
            return run_config_check(args.config, args.config_format, args.timeout or 30.0, args.parallel,
                                    args.client, args.json, sys.stdout, args.max_input_bytes)
        if args.file:
            snapshot, timings, problems, protocol = load_catalog_file(args.file, args.max_input_bytes), {}, [], None
        else:
            make_upstream = (stdio_from_args(args, "check stdio") if transport == "stdio"
                             else remote_upstream_factory(transport, remote_config_from_args(args)))
            timeout = args.timeout or 30.0
            names = () if args.bare else CHECK_CAPABILITIES
            snapshot, timings, problems, protocol = list_catalog(make_upstream, timeout, names)
            if args.compare_capabilities:
                # What the filter leaves out is no tool of the report: compared (and pointed to) after it.
                problems += filter_catalog(snapshot, tool_filter)
                found, protocol["listings"] = compare_capabilities(snapshot, names, lambda other: [
                    name for name in tool_names(list_catalog(make_upstream, timeout, other)[0])
                    if tool_filter.refusal(name) is None])
                problems.extend(found)
    except OcxError as exc:
        if isinstance(exc, UsageError):
            raise
        what = "read the configuration" if args.config else "get the catalog"
        sys.stderr.write("ocx-proxy check: could not %s: %s\n" % (what, printable(shorten(str(exc), MAX_REPORT_CHARS))))
        return 2
    if not args.compare_capabilities:
        problems += filter_catalog(snapshot, tool_filter)
    return run_check(snapshot, timings, problems, args.server_name, args.client, args.json, sys.stdout, protocol,
                     args.fitted)


def add_check_command(sub):
    p = sub.add_parser("check", help="tell which part of a server's catalog breaks which client",
                       usage="%(prog)s [--json] [--client C] [--fitted] [--server-name N] [--bare] [--compare-"
                             "capabilities] (--file FILE | --config FILE | stdio [--env ...] [--] COMMAND [ARGS...] "
                             "| streamable-http|sse|auto --url URL [--header ...])",
                       description="Connect like a full-featured client and list every page of tools, prompts, "
                                   "resources and templates, or read a saved catalog; report each problem with its "
                                   "JSON pointer and the clients it breaks. Exit 0 clean, 1 errors, 2 no connection.")
    p.add_argument("--file", metavar="FILE", help="check a saved tools/list result or tool array ('-': stdin) "
                                                  "(default: connect)")
    p.add_argument("--config", metavar="FILE",
                   help="check every server of a client configuration (mcpServers JSON, Gemini CLI settings.json, "
                        "Codex config.toml), then all together (default: one server)")
    p.add_argument("--config-format", choices=CONFIG_FORMATS,
                   help="the format of --config FILE (default: from its name and content)")
    add_count_option(p, "--parallel", "a whole number of at least 1", CONFIG_PARALLEL,
                     "with --config, check this many servers at once (default %(default)s)")
    add_max_input_bytes_option(p)
    add_check_output_options(p)
    p.set_defaults(handler=cmd_check, transport=None)
    transports = p.add_subparsers(dest="transport", metavar="TRANSPORT")
    t = transports.add_parser("stdio", help="start the server as a child process",
                              usage="ocx-proxy check stdio [--env NAME=VALUE]... [--cwd DIR] [--] COMMAND [ARGS...]")
    add_child_process_options(t)
    add_check_output_options(t, suppress=True)
    t.set_defaults(takes_command=True)
    for name, _, _ in REMOTE_COMMANDS:
        t = transports.add_parser(name, help="connect to a remote server (%s)" % name)
        add_remote_server_options(t, timeout=False)
        add_check_output_options(t, suppress=True)
        # check has no --max-message-bytes, but the relay's environment twin applies
        t.set_defaults(max_message_bytes=EnvDefault("MAX_MESSAGE_BYTES", int_at_least(1024), MAX_MESSAGE_BYTES))
    return transports


def read_request(path, limit):
    """The JSON object in ``path`` ('-': stdin), read up to ``limit`` bytes."""
    return load_json_strict(read_input_bytes(path, limit), "the request %s" % path)


def cmd_turn(args):
    """``turn codebuddy``: one CodeBuddy turn with the capture bridge armed; prints its output items and usage."""
    if not SERVER_NAME_RE.match(args.server_name):
        raise UsageError("--server-name must match [A-Za-z0-9_-]{1,17}")
    turn = CodeBuddyTurn(read_request(args.request, args.max_input_bytes), args.cli, args.timeout,
                         args.server_name, args.max_calls, args.max_argument_bytes)
    write_json_output(turn.run())
    return 0


def cmd_models(args):
    """``models codebuddy``: the models the account may use, one a line (or --json); never fails for discovery."""
    models, source, warning = codebuddy_models(args.cli, args.cache_dir, timeout=args.timeout)
    if warning:
        log.warning(warning)
    if args.json:
        write_json_output({"models": models, "source": source})
    else:
        sys.stdout.buffer.write("".join(model + "\n" for model in models).encode("utf-8"))
        sys.stdout.buffer.flush()
    return 0


def add_codebuddy_commands(sub):
    p = sub.add_parser("turn", help="run one CodeBuddy turn with the capture bridge armed: the model's calls as "
                                    "Responses items, nothing executed",
                       description="Start `codebuddy -p` with only the capture bridge's tools (--tools \"\" "
                                   "--strict-mcp-config --mcp-config ... --allowedTools ...), end it once the model's "
                                   "calls are captured, and print {\"output\": Responses items, \"usage\": ...}.  "
                                   "It fails closed (exit 1, one stderr line, no items) when the bridge is not alone "
                                   "connected, on a malformed or truncated line, an undeclared tool, oversize "
                                   "arguments or too many calls, and never tries a turn twice.")
    p.add_argument("agent", choices=("codebuddy",), help="the agent CLI (codebuddy)")
    p.add_argument("--request", metavar="FILE", required=True,
                   help="a Responses request body: input, tools, tool_choice, optional instructions and model "
                        "('-': stdin) (required, no default)")
    p.add_argument("--cli", metavar="PATH", default=CODEBUDDY_CLI, help="the CLI to run (default: %(default)s on PATH)")
    p.add_argument("--timeout", metavar="SECONDS", type=typed(positive_float, "a number of seconds"),
                   default=TURN_TIMEOUT,
                   help="longest the turn may take, the CLI's start included (default %(default)g)")
    p.add_argument("--server-name", metavar="NAME", default=CAPTURE_SERVER_NAME,
                   help="the bridge's MCP server name (default: %(default)s)")
    add_count_option(p, "--max-calls", "a count", CAPTURE_MAX_CALLS,
                     "calls the model may make in the turn; one more fails it (default: %(default)s; 1 when the "
                     "request says parallel_tool_calls false)")
    add_count_option(p, "--max-argument-bytes", "a byte count", CAPTURE_MAX_ARGUMENT_BYTES,
                     "largest arguments object of a call, as compact JSON (default: %(default)s)")
    add_max_input_bytes_option(p)
    p.set_defaults(handler=cmd_turn)
    p = sub.add_parser("models", help="list the models the CodeBuddy account may use",
                       description="Read the roster `codebuddy --help` shows (custom:* and custom-local:* left out) "
                                   "and save it for this account (a fingerprint of CODEBUDDY_API_KEY, never the key); "
                                   "when the CLI cannot tell, give the last roster saved for this account, else the "
                                   "built-in list, with one warning on stderr.")
    p.add_argument("agent", choices=("codebuddy",), help="the agent CLI (codebuddy)")
    p.add_argument("--cli", metavar="PATH", default=CODEBUDDY_CLI, help="the CLI to ask (default: %(default)s on PATH)")
    p.add_argument("--json", action="store_true",
                   help='print {"models": [...], "source": "live"|"cache"|"builtin"} (default: one id a line)')
    p.add_argument("--cache-dir", metavar="DIR", default=default_cache_dir(),
                   help="where the rosters are kept, in codebuddy/ (default: %(default)s)")
    p.add_argument("--timeout", metavar="SECONDS", type=typed(positive_float, "a number of seconds"),
                   default=ROSTER_TIMEOUT, help="longest wait for the CLI's --help (default %(default)g)")
    p.set_defaults(handler=cmd_models)


# (command names, function that adds them), in the order ``--help`` lists them.
COMMAND_GROUPS = (
    (("stdio",), add_stdio_command),
    (tuple(name for name, _, _ in REMOTE_COMMANDS), add_remote_commands),
    (("demo", "demo-server"), add_demo_commands),
    (("encode-tools", "decode"), add_protobuf_commands),
    (("capture",), add_capture_command),
    (("turn", "models"), add_codebuddy_commands),
    (("check",), add_check_command),
    (("auth",), add_auth_command),
)


def build_parser(command=None):
    """The argument parser; for a known ``command`` only that command's group (~15 ms saved)."""
    parser = CliParser(prog="ocx-proxy", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version="ocx-proxy " + __version__)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    wanted = [add_commands for names, add_commands in COMMAND_GROUPS if command in names]
    for add_commands in wanted or [add_commands for _, add_commands in COMMAND_GROUPS]:
        add_commands(sub)
    return parser


def main(argv=None):
    """The process exit status of one run."""
    argv = list(sys.argv[1:] if argv is None else argv)
    utf8_text_streams()
    parser = build_parser(argv[0] if argv else None)
    argv, upstream_command = split_server_command(parser, argv)
    args = parser.parse_args(argv)
    if upstream_command is not None and not getattr(args, "takes_command", False):
        parser.error("unexpected arguments after --: %s" % " ".join(upstream_command))
    args.upstream_command = upstream_command or []
    try:
        resolve_env_defaults(args)
        return args.handler(args) or 0
    except OcxError as exc:
        sys.stderr.write("ocx-proxy: error: %s\n" % printable(str(exc)))
        return 2 if isinstance(exc, UsageError) else 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `decode ... | head`: the reader has what it wanted
        try:
            sys.stdout = open(os.devnull, "w")  # no second error when Python flushes stdout at exit
        except OSError:
            pass
        return 1
    except Exception as exc:  # never a traceback for the user: one line, and how to see more
        sys.stderr.write("ocx-proxy: internal error: %s: %s\n" % (type(exc).__name__, printable(str(exc))))
        return 1


def main_exit():   # the console script
    sys.exit(main())


if __name__ == "__main__":
    main_exit()
