"""Catalog cache section: a second start answers initialize and tools/list from the cache while the server starts,
through a real relay subprocess and the fixture server."""
import json
import os
import sys
import time

import pytest

import ocx_proxy as op

from helpers import PROXY, STDIO_SERVER, RelayProcess, list_pages, recorded_calls


MODERN_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientCapabilities": {},
               "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"}}


def control_file(tmp_path, **values):
    """The fixture server's --control FILE (what changes between two starts of one command line); its
    FILE.ready, made when the server starts reading, is removed."""
    path = tmp_path / "control.json"
    path.write_text(json.dumps(values))
    ready = tmp_path / "control.json.ready"
    if ready.exists():
        ready.unlink()
    return path


def from_the_cache(reply):
    """Whether an initialize answer came from the catalog cache: the fixture never says listChanged, the cache does."""
    return reply["result"]["capabilities"]["tools"].get("listChanged") is True


def tool_names(relay):
    """The names of every tool listed (every page)."""
    return [name for names, _ in list_pages(relay) for name in names]


def catalog_files(tmp_path):
    folder = tmp_path / "spill" / "catalogs"
    return sorted(folder.iterdir()) if folder.exists() else []


def session(relay_factory, control, relay_args=(), server_args=(), version="2025-06-18", client="test"):
    """One whole session (initialize, tools/list, close; after an answer from the cache, once the server was
    checked against it): (initialize answer, tool names, relay)."""
    relay = relay_factory(list(relay_args), ["--control", str(control)] + list(server_args))
    reply = relay.initialize(version, client=client)
    names = tool_names(relay)
    if from_the_cache(reply):
        assert "catalog cache: the server is up" in relay.wait_for_stderr("catalog cache: the server is up")
    assert relay.close() == 0
    return reply, names, relay


@pytest.mark.parametrize("io", ["select", "threads"])
def test_a_second_start_answers_from_the_catalog_cache_while_the_server_starts(relay_factory, tmp_path, io):
    record = tmp_path / "received.ndjson"
    control = control_file(tmp_path, delay=2.0)
    args = ["--control", str(control), "--record", str(record)]
    relay = relay_factory(["--io", io], args)
    started = time.monotonic()
    reply = relay.initialize()
    assert time.monotonic() - started > 1.5 and not from_the_cache(reply)  # a first start: as today
    names = tool_names(relay)
    assert relay.close() == 0
    [entry] = catalog_files(tmp_path)
    if op.FILE_OWNERS:   # Windows has no mode bits to check (ACLs instead)
        assert oct(entry.stat().st_mode & 0o777) == "0o600" and oct(entry.parent.stat().st_mode & 0o777) == "0o700"

    record.write_text("")
    control_file(tmp_path, delay=2.0)
    relay = relay_factory(["--io", io], args)
    spawned = time.monotonic()
    reply = relay.initialize()
    assert tool_names(relay) == names
    answered = time.monotonic() - spawned
    assert not (tmp_path / "control.json.ready").exists(), "answered after the server started"
    assert answered < 1.5 and from_the_cache(reply)
    assert reply["result"]["serverInfo"] == {"name": "fixture", "version": "1"}
    relay.send({"jsonrpc": "2.0", "id": "c1", "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "first"}}})
    relay.send({"jsonrpc": "2.0", "id": "c2", "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "second"}}})
    for msg_id, text in (("c1", "first"), ("c2", "second")):
        assert relay.wait_for(msg_id)[0]["result"]["content"][0]["text"] == text
    assert time.monotonic() - spawned > 2.0
    assert "catalog cache: the server is up and lists the catalog the client was given" in relay.wait_for_stderr(
        "the catalog the client was given")
    received = [json.loads(line) for line in record.read_text().splitlines()]
    assert [m.get("method") for m in received] == ["initialize", "notifications/initialized", "tools/call",
                                                   "tools/call", "tools/list"]
    assert [m["params"]["arguments"]["text"] for m in received[2:4]] == ["first", "second"]
    assert received[0]["params"]["clientInfo"]["name"] == "test"  # the client's own initialize, replayed
    assert relay.close() == 0
    assert not any(b"list_changed" in line for line in relay.raw_lines)
    assert not any(b'"ocx-proxy-' in line for line in relay.raw_lines)  # the answers to our own requests are ours
    assert "Traceback" not in relay.stderr


def test_a_changed_catalog_is_announced_and_cached(relay_factory, tmp_path):
    control = control_file(tmp_path)
    assert session(relay_factory, control)[1] == ["echo", "structured", "read_spilled_output"]
    control = control_file(tmp_path, delay=1.0, tools=["added"])
    relay = relay_factory([], ["--control", str(control)])
    assert from_the_cache(relay.initialize())
    assert tool_names(relay) == ["echo", "structured", "read_spilled_output"]
    notice = relay.recv(timeout=15)
    assert notice == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    assert tool_names(relay) == ["added", "echo", "structured", "read_spilled_output"]
    assert relay.close() == 0
    reply, names, _ = session(relay_factory, control_file(tmp_path, delay=1.0, tools=["added"]))
    assert from_the_cache(reply) and names == ["added", "echo", "structured", "read_spilled_output"]


@pytest.mark.parametrize("change", ["env", "option", "client", "version", "no cache"])
def test_an_entry_is_used_only_by_the_same_server_options_and_client(relay_factory, tmp_path, change):
    control = control_file(tmp_path)
    relay_args, server_args = ["--env", "REGION=one"], ["--paged"]
    reply, names, _ = session(relay_factory, control, relay_args, server_args)
    assert not from_the_cache(reply) and names == ["echo", "structured", "read_spilled_output"]
    reply, again, _ = session(relay_factory, control, relay_args, server_args)
    assert from_the_cache(reply) and again == names  # two pages cached as one whole
    other = {"env": (["--env", "REGION=two"], "2025-06-18", "test"),
             "option": (relay_args + ["--deny-tools", "structured"], "2025-06-18", "test"),
             "client": (relay_args, "2025-06-18", "other-client"),
             "version": (relay_args, "2025-03-26", "test"),
             "no cache": (relay_args + ["--no-catalog-cache"], "2025-06-18", "test")}[change]
    reply, _, _ = session(relay_factory, control, other[0], server_args, other[1], other[2])
    assert not from_the_cache(reply)


def test_no_catalog_cache_writes_nothing(relay_factory, tmp_path):
    control = control_file(tmp_path)
    for _ in range(2):
        reply, _, relay = session(relay_factory, control, ["--no-catalog-cache"])
        assert not from_the_cache(reply)
    assert catalog_files(tmp_path) == []
    env = dict(os.environ, OCX_PROXY_NO_CATALOG_CACHE="1")
    relay = relay_factory([], ["--control", str(control)], env=env)
    relay.initialize()
    tool_names(relay)
    assert relay.close() == 0 and catalog_files(tmp_path) == []


def test_only_a_whole_catalog_is_cached(relay_factory, tmp_path):
    control = control_file(tmp_path)
    relay = relay_factory([], ["--control", str(control), "--paged"])
    relay.initialize()
    assert relay.request("tools/list")[0]["result"]["nextCursor"] == "page2"  # the client stops after a page
    assert relay.close() == 0
    assert catalog_files(tmp_path) == []
    reply, _, _ = session(relay_factory, control, server_args=["--paged"])  # so this is a first start
    assert not from_the_cache(reply)
    reply, names, _ = session(relay_factory, control, server_args=["--paged"])
    assert from_the_cache(reply) and names == ["echo", "structured", "read_spilled_output"]


@pytest.mark.parametrize("damage", ["not json", "another key", "wrong shape", "a link", "empty", "too large",
                                    pytest.param("a fifo", marks=pytest.mark.skipif(
                                        not hasattr(os, "mkfifo"), reason="Windows has no FIFOs"))])
def test_a_damaged_or_foreign_entry_is_one_warning_and_ignored(relay_factory, tmp_path, damage):
    control = control_file(tmp_path)
    session(relay_factory, control, ["--env", "A=1"])
    [first] = catalog_files(tmp_path)
    session(relay_factory, control, ["--env", "A=2"])
    [second] = set(catalog_files(tmp_path)) - {first}
    if damage == "not json":
        first.write_bytes(b"\x00{not json")
    elif damage == "another key":
        first.write_bytes(second.read_bytes())
    elif damage == "wrong shape":
        doc = json.loads(first.read_text())
        doc["answers"]["tools/list"] = {"result": {"tools": "none"}}
        first.write_text(json.dumps(doc))
    elif damage == "a link":
        target = tmp_path / "elsewhere.json"
        target.write_bytes(first.read_bytes())
        first.unlink()
        first.symlink_to(target)
        if not first.is_symlink():  # Wine 8 takes the call and makes nothing (Windows needs a privilege for it)
            pytest.skip("this system made no symbolic link")
    elif damage == "too large":
        os.truncate(str(first), 32 * 1024 * 1024 + 1)
    elif damage == "a fifo":
        first.unlink()
        os.mkfifo(str(first), 0o600)
    else:
        first.write_bytes(b"")
    outcomes = []
    for env in ("A=1", "A=2"):
        reply, _, relay = session(relay_factory, control, ["--env", env])
        outcomes.append((from_the_cache(reply), relay.stderr))
    (damaged, text), (intact, other) = outcomes
    assert not damaged and intact
    warnings = [line for line in text.splitlines() if "catalog cache" in line]
    assert len(warnings) == 1 and "warning: ignored the catalog cache file %s" % first in warnings[0], text
    assert "Traceback" not in text + other and "warning" not in other
    reply, _, _ = session(relay_factory, control, ["--env", "A=1"])  # a good one was written in its place
    assert from_the_cache(reply)


def test_the_entry_holds_no_secret_and_is_private(relay_factory, tmp_path):
    control = control_file(tmp_path)
    env = dict(os.environ, MY_TOKEN="from-the-environment-4711")
    for _ in range(2):
        relay = relay_factory(["--env", "API_KEY=sekrit-value-0815", "--env", "OTHER=${MY_TOKEN}"],
                              ["--control", str(control), "in-the-argv-1234"], env=env)
        reply = relay.initialize()
        tool_names(relay)
        assert relay.close() == 0
    assert from_the_cache(reply)
    [entry] = catalog_files(tmp_path)
    data = entry.read_bytes()
    for secret in (b"sekrit-value-0815", b"from-the-environment-4711", b"in-the-argv-1234", b"API_KEY"):
        assert secret not in data
    if op.FILE_OWNERS:   # Windows: the profile's ACL, not modes (README, Windows)
        assert oct(entry.stat().st_mode & 0o777) == "0o600"


def test_a_remote_entry_holds_no_header(http_server, tmp_path):
    srv = http_server()
    argv = [sys.executable, PROXY, "streamable-http", "--url", srv.url, "--output-dir", str(tmp_path / "spill"),
            "--header", "Authorization: Bearer topsecret-header-value", "--header", "X-Api-Key: other-secret-42"]
    replies = []
    for _ in range(2):
        relay = RelayProcess(command=argv)
        try:
            replies.append(relay.initialize())
            assert "echo" in tool_names(relay)
            assert relay.call("echo", {"text": "hi"})["result"]["content"][0]["text"] == "hi"
            assert relay.close() == 0
        finally:
            if relay.proc.poll() is None:
                relay.proc.kill()
    assert [from_the_cache(reply) for reply in replies] == [False, True]
    [entry] = catalog_files(tmp_path)
    data = entry.read_bytes()
    assert b"topsecret-header-value" not in data and b"other-secret-42" not in data and srv.url.encode() not in data


def test_a_server_that_fails_to_start_fails_the_calls_as_today(relay_factory, tmp_path):
    control = control_file(tmp_path)
    session(relay_factory, control)
    [entry] = catalog_files(tmp_path)
    saved = entry.read_bytes()
    control = control_file(tmp_path, delay=1.0, exit=5, tools=["other"])
    relay = relay_factory([], ["--control", str(control)])
    assert from_the_cache(relay.initialize())
    reply = relay.call("echo", {"text": "x"})
    assert reply["error"]["code"] == -32000 and "exited with code 5" in reply["error"]["message"]
    assert "exited with code 5" in relay.request("ping")[0]["error"]["message"]
    assert relay.close() == 0
    assert "Traceback" not in relay.stderr
    assert entry.read_bytes() == saved
    control = control_file(tmp_path, delay=3.0, tools=["other"])  # a session over before the server is up
    relay = relay_factory([], ["--control", str(control)])
    assert from_the_cache(relay.initialize()) and "other" not in tool_names(relay)
    assert relay.close() == 0
    assert entry.read_bytes() == saved


@pytest.mark.skipif(not op.FILE_OWNERS, reason="POSIX only: a shared sticky directory gets a private "
                    "ocx-proxy-<uid> directory; Windows has no uid (its output directory is the user's own)")
def test_the_entry_lives_in_the_private_directory_of_a_shared_output_dir_and_outlives_spill_retention(
        relay_factory, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(str(shared), 0o1777)
    control = control_file(tmp_path)
    args = ["--output-dir", str(shared), "--retention-days", "1"]
    session(relay_factory, control, args)
    [entry] = (shared / ("ocx-proxy-%d" % os.geteuid()) / "catalogs").iterdir()
    os.utime(str(entry), (time.time() - 30 * 86400,) * 2)
    reply, _, _ = session(relay_factory, control, args)
    assert from_the_cache(reply) and entry.exists()


def test_a_refused_initialize_is_logged_and_the_entry_dropped(relay_factory, tmp_path):
    control = control_file(tmp_path)
    session(relay_factory, control)
    control = control_file(tmp_path, refuse=True)
    relay = relay_factory([], ["--control", str(control)])
    assert from_the_cache(relay.initialize())
    assert relay.call("echo", {"text": "x"})["result"]["content"][0]["text"] == "x"  # what the server says
    text = relay.wait_for_stderr("refused")
    assert "error: the upstream refused the client's initialize (answered from the catalog cache)" in text
    assert relay.close() == 0
    assert catalog_files(tmp_path) == []


def test_a_server_whose_initialize_changed_is_one_warning_and_the_entry_updated(relay_factory, tmp_path):
    control = control_file(tmp_path)
    session(relay_factory, control)
    control = control_file(tmp_path, capabilities={"prompts": {}})
    reply, _, relay = session(relay_factory, control)
    assert from_the_cache(reply) and "prompts" not in reply["result"]["capabilities"]
    warnings = [line for line in relay.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "capabilities" in warnings[0] and "catalog cache" in warnings[0]
    reply, _, _ = session(relay_factory, control)
    assert reply["result"]["capabilities"] == {"tools": {"listChanged": True}, "prompts": {}}


def test_a_probe_a_server_did_not_know_is_answered_from_the_cache(relay_factory, tmp_path):
    """server/discover (2026-07-28) answered with an error last time (a server without that revision): the
    error comes from the cache at once, and so does the initialize the client falls back to."""
    def run():
        relay = relay_factory([], ["--control", str(control)])
        probe, _ = relay.request("server/discover", {"_meta": MODERN_META}, msg_id="probe")
        ready = (tmp_path / "control.json.ready").exists()
        reply = relay.initialize()
        names = tool_names(relay)
        assert relay.close() == 0
        return probe, ready, reply, names

    control = control_file(tmp_path, discover=False)
    probe, ready, reply, _ = run()
    assert probe["error"]["code"] == -32601 and ready and not from_the_cache(reply)
    control = control_file(tmp_path, discover=False, delay=1.0)
    probe, ready, reply, names = run()
    assert probe["error"]["code"] == -32601 and not ready and from_the_cache(reply)
    assert names == ["echo", "structured", "read_spilled_output"]
    relay = relay_factory([], ["--control", str(control_file(tmp_path, discover=False, delay=1.0))])
    assert from_the_cache(relay.initialize())
    stateless, _ = relay.request("tools/list", {"_meta": MODERN_META})  # never from the cache: the server's
    assert stateless["result"]["resultType"] == "complete" and (tmp_path / "control.json.ready").exists()
    assert relay.close() == 0
    # The server learnt 2026-07-28: the cached error is said once more, the server's answer replaces it, and an
    # answer is never cached (the probe waits for the server, as today).
    control = control_file(tmp_path, delay=1.0)
    probe, ready, _, _ = run()
    assert probe["error"]["code"] == -32601 and not ready
    for _ in range(2):
        control = control_file(tmp_path, delay=1.0)
        probe, ready, _, _ = run()
        assert probe["result"]["supportedVersions"] and ready


SHOW_MODULES = """
import atexit
import sys
import ocx_proxy as op

atexit.register(lambda: sys.stderr.write("ocx-test: OpenSSL %s\\n" % ("_hashlib" in sys.modules)))
sys.exit(op.main())
"""


def test_an_answer_from_the_cache_loads_no_openssl(tmp_path):
    """hashlib loads OpenSSL (5 to 20 ms at start-up): the key's sha256 comes from CPython's own module."""
    control = control_file(tmp_path)
    argv = [sys.executable, "-c", SHOW_MODULES, "stdio", "--output-dir", str(tmp_path / "spill"), "--",
            sys.executable, STDIO_SERVER, "--control", str(control)]
    for cached in (False, True):
        relay = RelayProcess(command=argv)
        assert from_the_cache(relay.initialize()) is cached
        tool_names(relay)
        assert relay.close() == 0
        assert "ocx-test: OpenSSL False" in relay.stderr


def test_the_relays_fixes_apply_to_a_catalog_from_the_cache(relay_factory, tmp_path):
    """Fitting, filtering and the reader tool, as on the server's own list; a fitted name called before the
    server is up reaches it under its own name."""
    record = tmp_path / "received.ndjson"
    control = control_file(tmp_path)
    relay_args = ["--client", "claude-code", "--deny-tools", "structured"]
    server_args = ["--extra-tool", "files.read", "--record", str(record)]
    _, live, _ = session(relay_factory, control, relay_args, server_args)
    assert "files.read" not in live and "structured" not in live and live[-1] == "read_spilled_output"
    control = control_file(tmp_path, delay=1.0)
    relay = relay_factory(relay_args, ["--control", str(control)] + server_args)
    assert from_the_cache(relay.initialize()) and tool_names(relay) == live
    fitted = live[0]
    assert relay.call(fitted)["error"]["message"] == "Unknown tool: files.read"  # the server's answer
    assert "--deny-tools 'structured'" in relay.call("structured")["error"]["message"]
    assert relay.close() == 0
    assert recorded_calls(str(record)) == ["files.read"]


@pytest.mark.parametrize("params", [[], {"protocolVersion": 5, "clientInfo": {"name": "t"}},
                                    {"protocolVersion": "2025-06-18", "clientInfo": "t"}, None])
def test_an_odd_initialize_is_relayed_as_ever(relay_factory, tmp_path, params):
    control = control_file(tmp_path)
    for _ in range(2):
        relay = relay_factory([], ["--control", str(control)])
        msg = {"jsonrpc": "2.0", "id": 1, "method": "initialize"}
        if params is not None:
            msg["params"] = params
        relay.send(msg)
        reply, _ = relay.wait_for(1)
        assert "listChanged" not in json.dumps(reply)
        tool_names(relay)
        relay.send({"jsonrpc": "2.0", "id": 2, "method": "server/discover", "params": {"_meta": [1]}})
        assert relay.wait_for(2)[0]["id"] == 2
        assert relay.close() == 0
        assert "Traceback" not in relay.stderr and "internal error" not in relay.stderr


def test_a_declared_size_holds_for_a_catalog_answered_from_the_cache(relay_factory, tmp_path):
    # Claude Code gives a tool the result size it declares (test_relay_settings.py): from the cache too
    control = control_file(tmp_path)
    server_args = ["--declare", "big=120000"]
    session(relay_factory, control, ["--client", "claude-code"], server_args)   # the catalog, kept
    control = control_file(tmp_path, delay=1.0)
    relay = relay_factory(["--client", "claude-code"], ["--control", str(control)] + server_args)
    assert from_the_cache(relay.initialize())
    assert relay.request("tools/list")[0]["result"]["tools"][0]["_meta"] == {op.MAX_RESULT_SIZE_META: 120000}
    reply = relay.call("big", {"n": 100000, "unit": "x"})
    assert "ocx-proxy/spill" not in reply["result"].get("_meta", {}), reply["result"]["content"][0]["text"][:200]
    assert reply["result"]["content"][0]["text"] == "x" * 100000
    assert relay.close() == 0
