"""The upstreams section: a stdio server's process tree lives no longer than the relay.

Real relay subprocesses, real fixture servers that outlive EOF on stdin (and
start a grandchild), real signals.  The process-tree cases are Linux only: liveness and
children are read from /proc.
"""
import os
import signal
import subprocess
import sys
import time

import pytest

from helpers import FIXTURES, PROXY, pid_alive

STUBBORN = os.path.join(FIXTURES, "stubborn_server.py")

# The process-tree cases read liveness and children from /proc; their Windows twins (a Job Object) are in
# tests/windows/test_windows_end_to_end.py.
reads_proc = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Windows: tests/windows/)")


@pytest.fixture
def reaper():
    """Register pids to SIGKILL at the end, so that a failing test leaves nothing behind."""
    pids = []
    yield pids.extend
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def start(relay_factory, reaper, server_args=(), **kw):
    """A relay in front of stubborn_server.py, initialized; returns (relay, server pid, grandchild pid)."""
    relay = relay_factory(server=STUBBORN, server_args=server_args, **kw)
    result = relay.initialize()["result"]
    reaper([result["pid"], result["grandchild"]])
    return relay, result["pid"], result["grandchild"]


def wait_gone(pids, timeout):
    """Seconds until none of ``pids`` is alive (a zombie counts as gone); fails after ``timeout``."""
    started = time.monotonic()
    while True:
        alive = [pid for pid in pids if pid_alive(pid)]
        elapsed = time.monotonic() - started
        if not alive:
            return elapsed
        assert elapsed < timeout, "still running after %.1f s: %s" % (elapsed, [describe(pid) for pid in alive])
        time.sleep(0.02)


def describe(pid):
    """``pid (state) argv`` for a failure message."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            argv = handle.read().replace(b"\0", b" ").decode("utf-8", "replace")[:120]
    except OSError:
        return str(pid)
    return "%d (%s) %s" % (pid, state, argv)


def children(pid):
    """{child pid: state letter} for the children of ``pid`` (zombies included)."""
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found[int(name)] = fields[0]
    return found


def watchdog_of(relay, server):
    """The pid of the relay's one watchdog: its child that is not the server."""
    others = [pid for pid in children(relay.proc.pid) if pid != server]
    assert len(others) == 1, children(relay.proc.pid)
    return others[0]


@reads_proc
@pytest.mark.parametrize("io_mode", ["select", "threads"])
def test_client_group_sigterm_then_sigkill_leaves_no_server_tree(relay_factory, reaper, io_mode):
    # Codex CLI ends a session like this: SIGTERM to our group, SIGKILL 30 ms later.
    # The server has its own group, so only the relay (or its watchdog) can reach it.
    relay, server, grandchild = start(relay_factory, reaper, relay_args=["--io", io_mode],
                                      start_new_session=True)
    os.killpg(relay.proc.pid, signal.SIGTERM)
    time.sleep(0.03)
    os.killpg(relay.proc.pid, signal.SIGKILL)
    assert relay.proc.wait(timeout=5) in (0, -signal.SIGKILL)  # 0: it finished within the 30 ms
    wait_gone([server, grandchild], 3.0)


@reads_proc
@pytest.mark.parametrize("server_args", [[], ["--ignore-term"]], ids=["dies-on-term", "ignores-term"])
def test_kill_9_of_the_relay_alone_leaves_no_server_tree(relay_factory, reaper, server_args):
    relay, server, grandchild = start(relay_factory, reaper, server_args)
    watchdog = watchdog_of(relay, server)
    relay.proc.kill()
    relay.proc.wait(timeout=5)
    # A client waiting for EOF on our stdout gets it at once: nothing we started holds it.
    while relay.lines.get(timeout=2) is not None:
        pass
    wait_gone([server, grandchild], 3.0)
    # It waits out its grace while zombies (not yet reaped by init) still answer killpg.
    wait_gone([watchdog], 2.5)


@reads_proc
@pytest.mark.parametrize("signame", ["SIGTERM", "SIGINT", "SIGHUP"])
def test_a_signal_terminates_the_server_group_at_once(relay_factory, reaper, signame):
    relay, server, grandchild = start(relay_factory, reaper)
    relay.send({"jsonrpc": "2.0", "id": 7, "method": "hang"})
    relay.request("tools/list")  # answered after "hang" was read: it is pending now
    relay.proc.send_signal(getattr(signal, signame))
    wait_gone([server, grandchild], 1.5)  # not after the 2 s stdin-close grace
    reply, _ = relay.wait_for(7, timeout=5)
    assert reply["error"]["code"] == -32000
    assert relay.proc.wait(timeout=5) == 0


@reads_proc
def test_a_signal_kills_a_server_that_ignores_sigterm_after_a_short_grace(relay_factory, reaper):
    relay, server, grandchild = start(relay_factory, reaper, ["--ignore-term"])
    started = time.monotonic()
    relay.proc.send_signal(signal.SIGTERM)
    assert relay.proc.wait(timeout=6) == 0
    assert time.monotonic() - started < 3.0  # one short grace (1 s), not 2 s + 2 s
    wait_gone([server, grandchild], 0.5)


@reads_proc
def test_watchdog_runs_apart_and_ends_with_a_normal_shutdown(relay_factory, reaper):
    relay = relay_factory()  # stdio_server.py: exits when its stdin closes
    relay.initialize()
    server = int(relay.call("pid")["result"]["content"][0]["text"])
    watchdog = watchdog_of(relay, server)
    reaper([watchdog])
    # Its own session (a signal to the client's group does not take it down with
    # us) and nothing of ours open: only stdin (its pipe) and /dev/null.
    assert os.getsid(watchdog) not in (os.getsid(relay.proc.pid), os.getsid(server))
    fds = {fd: os.readlink("/proc/%d/fd/%s" % (watchdog, fd)) for fd in os.listdir("/proc/%d/fd" % watchdog)}
    assert sorted(fds) == ["0", "1", "2"] and fds["1"] == fds["2"] == "/dev/null", fds
    assert fds["0"].startswith("pipe:")
    assert relay.close() == 0
    wait_gone([server, watchdog], 1.0)


def restarted(relay, reaper, old_pid):
    """Ask until a new server (not ``old_pid``) answers; returns its pids."""
    deadline = time.monotonic() + 10
    while True:
        reply, _ = relay.request("tools/list")
        if "result" in reply and reply["result"]["pid"] != old_pid:
            reaper([reply["result"]["pid"], reply["result"]["grandchild"]])
            return reply["result"]
        assert time.monotonic() < deadline, reply
        time.sleep(0.05)


@reads_proc
def test_restart_reaps_the_old_server_and_watchdog(relay_factory, reaper):
    relay = relay_factory(["--restart", "1"], server=STUBBORN)
    first = relay.initialize()["result"]
    reaper([first["pid"], first["grandchild"]])
    old_watchdog = watchdog_of(relay, first["pid"])
    reaper([old_watchdog])
    for pid in (first["grandchild"], first["pid"]):  # the grandchild holds the server's stdout too
        os.kill(pid, signal.SIGKILL)
    second = restarted(relay, reaper, first["pid"])
    wait_gone([old_watchdog], 1.0)
    kids = children(relay.proc.pid)
    assert "Z" not in kids.values(), kids
    assert len(kids) == 2 and second["pid"] in kids, kids  # the new server and its watchdog
    relay.proc.send_signal(signal.SIGTERM)
    assert relay.proc.wait(timeout=5) == 0


@reads_proc
def test_what_a_crashed_server_left_in_its_group_does_not_outlive_it(relay_factory, reaper):
    relay = relay_factory(["--restart", "1"], server=STUBBORN)
    first = relay.initialize()["result"]
    reaper([first["pid"], first["grandchild"]])
    os.kill(first["pid"], signal.SIGKILL)  # the grandchild keeps the server's stdout open
    restarted(relay, reaper, first["pid"])
    wait_gone([first["grandchild"]], 1.0)
    relay.proc.send_signal(signal.SIGTERM)
    assert relay.proc.wait(timeout=5) == 0


def test_handshake_keeps_the_clients_two_lines_and_replays_initialize_under_our_id():
    import ocx_proxy as op

    handshake = op.Handshake()
    assert handshake.replay("ours-1") is None  # nothing to replay yet
    init = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","n":%s}}'
    for line in (init % b"7", b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
                 b'{"jsonrpc":"2.0","id":2,"method":"ping"}'):
        handshake.note(op.parse_message(line), line)
    assert handshake.initialize_line == init % b"7"
    assert handshake.initialized_line == b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
    assert op.parse_message(handshake.replay("ours-1")) == dict(op.parse_message(init % b"7"), id="ours-1")
    assert op.Handshake.refusal({"jsonrpc": "2.0", "id": "ours-1", "result": {}}) is None
    assert op.Handshake.refusal({"jsonrpc": "2.0", "id": "ours-1", "error": {"code": -1, "message": "no"}}) \
        == '{"code": -1, "message": "no"}'
    assert op.Handshake.refusal(None) == "no answer"
    line = init % b"1e999"  # JSON cannot hold it rewritten
    handshake.note(op.parse_message(line, long_numbers=True), line)
    with pytest.raises(ValueError):
        handshake.replay("ours-2")
    line = init % (b"9" * 5000)  # past int()'s limit: replayed digit for digit
    handshake.note(op.parse_message(line, long_numbers=True), line)
    assert handshake.replay("ours-2") == line.replace(b'"id":1', b'"id":"ours-2"')


def test_a_server_that_exits_at_once_while_the_client_leaves_is_no_internal_error():
    """The exit report may come after the relay reaped the server: its stderr is closed by then."""
    for _ in range(3):
        proc = subprocess.run([sys.executable, PROXY, "stdio", "--log-level", "debug", "--",
                               sys.executable, "-c", "pass"],
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
        assert proc.returncode == 0 and proc.stdout == b""
        assert b"internal error" not in proc.stderr, proc.stderr
