"""A server that ignores stdin EOF: nothing of it is left once the CLI has exited, direct or via the relay.

tools_server ``--ignore-eof`` keeps running a minute after its stdin ends, so only a signal stops it: the
CLI's (direct), or the relay's (via the relay, whose own process must be gone too).

Measured direct: Qwen Code 0.24.4 and CodeBuddy 2.117.0 exit without stopping such a server (no signal reaches
it), so it is left running; via the relay nothing is left, for every CLI.
"""
import os
import sys
import time

import pytest

import harness
import outcomes
import tools_server
from outcomes import CLIENTS
from test_clients import PATHS, need

GONE_WITHIN = 5.0   # seconds after the CLI's exit
LEAVES_IT_DIRECT = {"qwen-code", "codebuddy"}   # measured, qwen-code 0.24.4, codebuddy 2.117.0


def alive(pid):
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    with open("/proc/%d/stat" % pid) as stat:   # a zombie has exited: only its parent's wait is missing
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.parametrize("via_relay", PATHS, ids=["relay", "direct"])
@pytest.mark.parametrize("client", CLIENTS)
def test_no_server_left_after_the_cli_exits(client, via_relay, tmp_path):
    need(client)
    pids = str(tmp_path / "pids")
    server = [sys.executable, tools_server.__file__, "--ignore-eof", pids]
    run = harness.run_client(client, "big_text", via_relay, str(tmp_path), server)
    assert run.status == 0 and run.received is not None, run.output[-2000:]
    with open(pids) as numbers:
        server_pid, parent_pid = (int(n) for n in numbers.read().split())
    watched = [server_pid, parent_pid] if via_relay else [server_pid]   # via the relay its parent is the relay
    deadline = time.monotonic() + GONE_WITHIN
    while any(alive(pid) for pid in watched) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [pid for pid in watched if alive(pid)]
    for pid in left:
        os.kill(pid, 9)
    outcomes.MORE[(client, "server ignoring EOF, " + ("relay" if via_relay else "direct"))] = (
        "ORPHAN left" if left else "no orphan")
    if not via_relay and client in LEAVES_IT_DIRECT:
        assert left, "%s now stops a server that ignores EOF: update LEAVES_IT_DIRECT" % client
        return
    assert not left, "still running %.0f s after %s exited: %s" % (GONE_WITHIN, client, left)
