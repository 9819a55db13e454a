"""Platform: each mechanism's half for the OS the suite runs on (Linux in `make test`, Windows in `make windows`),
through the same calls the rest of ocx_proxy.py makes."""
import json
import os
import socket
import subprocess
import sys
import time

import pytest

import ocx_proxy as op

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A server that starts a child of its own, writes "SERVER_PID CHILD_PID" to argv[1], then sleeps.
TREE_PROGRAM = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write("%d %d" % (os.getpid(), child.pid))
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(60)
"""


def wait_for_file(path, seconds=20):
    deadline = time.monotonic() + seconds
    while not os.path.exists(path):
        assert time.monotonic() < deadline, "%s never appeared" % path
        time.sleep(0.05)
    with open(path) as f:
        return [int(word) for word in f.read().split()]


def wait_until_gone(pids, seconds=10):
    """The pids still alive after ``seconds`` (an empty list: all gone)."""
    deadline = time.monotonic() + seconds
    while True:
        alive = [pid for pid in pids if op.process_exists(pid)]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.05)


def start_tree(tmp_path):
    pid_file = str(tmp_path / "pids")
    process, tree = op.ProcessTree.start([sys.executable, "-c", TREE_PROGRAM, pid_file], stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return process, tree, wait_for_file(pid_file)


# -- processes --------------------------------------------------------------------------

def test_process_exists_tells_a_live_process_from_a_finished_one():
    process = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        assert op.process_exists(process.pid)
        assert op.process_exists(process.pid)   # asking twice does not end it (os.kill(pid, 0) would on Windows)
    finally:
        process.stdin.close()
        process.wait(timeout=20)
    assert wait_until_gone([process.pid]) == []
    assert not op.process_exists(2 ** 31 - 1)


@pytest.mark.parametrize("how", ["kill", "terminate"])
def test_a_process_tree_ends_whole_the_child_and_what_it_started(tmp_path, how):
    process, tree, pids = start_tree(tmp_path)
    try:
        assert wait_until_gone(pids, 0) == pids
        getattr(tree, how)()
        process.wait(timeout=20)
        assert wait_until_gone(pids) == []
    finally:
        tree.close()


KILLED_OWNER = """
import subprocess, sys, time
sys.path.insert(0, sys.argv[1])
import ocx_proxy
process, tree = ocx_proxy.ProcessTree.start([sys.executable, "-c", sys.argv[2], sys.argv[3]], stdin=subprocess.DEVNULL,
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print("started", flush=True)
time.sleep(60)
"""


def test_a_process_tree_ends_when_its_owner_is_killed_outright(tmp_path):
    """The owner (a relay) killed without a word (SIGKILL, TerminateProcess): its tree still ends (the POSIX
    watchdog; the Windows job object closing with the owner's last handle)."""
    pid_file = str(tmp_path / "pids")
    owner = subprocess.Popen([sys.executable, "-c", KILLED_OWNER, ROOT, TREE_PROGRAM, pid_file],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert owner.stdout.readline().strip() == b"started", owner.stderr.read()
        pids = wait_for_file(pid_file)
        owner.kill()
        owner.wait(timeout=20)
        assert wait_until_gone(pids) == []
    finally:
        owner.kill()
        owner.wait()
        owner.stdout.close()
        owner.stderr.close()


# -- the file lock ----------------------------------------------------------------------

HOLD = """
import os, sys, time
sys.path.insert(0, sys.argv[1])
import ocx_proxy
fd = os.open(sys.argv[2], os.O_RDWR | os.O_CREAT)
ocx_proxy.lock_file(fd)
print("held", flush=True)
sys.stdin.read()
"""


def test_the_file_lock_keeps_a_second_process_out_until_the_first_is_gone(tmp_path):
    path = str(tmp_path / "lock")
    holder = subprocess.Popen([sys.executable, "-c", HOLD, ROOT, path], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline().strip() == b"held"
        fd = os.open(path, os.O_RDWR)
        try:
            with pytest.raises((BlockingIOError, PermissionError)):
                op.lock_file(fd)
        finally:
            os.close(fd)
    finally:
        holder.kill()   # no clean-up runs: the system drops the lock
        holder.wait()
        holder.stdin.close()
        holder.stdout.close()
    fd = os.open(path, os.O_RDWR)
    try:
        op.lock_file(fd)
    finally:
        os.close(fd)


# -- listening sockets ------------------------------------------------------------------

def test_a_bound_port_is_not_shared_with_a_second_listener():
    first = socket.socket()
    second = socket.socket()
    try:
        op.bind_exclusive(first, ("127.0.0.1", 0))
        first.listen(1)
        with pytest.raises(OSError):
            op.bind_exclusive(second, ("127.0.0.1", first.getsockname()[1]))
    finally:
        first.close()
        second.close()


# -- text on pipes ----------------------------------------------------------------------

TEXT = "naïve 中文 😀 José"

PRINT_TEXT = """
import sys
sys.path.insert(0, sys.argv[1])
import ocx_proxy
ocx_proxy.utf8_text_streams()
print(sys.argv[2])
sys.stderr.write(sys.argv[2] + "\\n")
"""


def test_our_text_on_pipes_is_utf8_whatever_pythonioencoding_says():
    env = dict(os.environ, PYTHONIOENCODING="cp1252")
    result = subprocess.run([sys.executable, "-c", PRINT_TEXT, ROOT, TEXT], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode("utf-8").strip() == TEXT
    assert result.stderr.decode("utf-8").strip() == TEXT


def test_a_python_server_started_with_the_child_environment_writes_utf8():
    env = op.child_environment([], environ=dict(os.environ, PYTHONIOENCODING="cp1252"))
    env["SYSTEMROOT"] = os.environ.get("SYSTEMROOT", "")   # Windows needs it to start Python at all
    result = subprocess.run([sys.executable, "-c", "import sys; print(sys.argv[1])", TEXT], stdout=subprocess.PIPE,
                            env=env, timeout=60)
    assert result.returncode == 0
    assert result.stdout.decode("utf-8").strip() == TEXT


# -- directories and URIs ---------------------------------------------------------------

def test_the_spill_and_token_directories_have_one_per_os_cache_base(monkeypatch, tmp_path):
    """One per-OS cache path: a Windows without %LOCALAPPDATA% falls back to ~/AppData/Local for both."""
    monkeypatch.setattr(op, "IS_WINDOWS", True)
    monkeypatch.delenv("LOCALAPPDATA", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))          # what expanduser reads on POSIX
    monkeypatch.setenv("USERPROFILE", str(tmp_path))   # and on Windows
    base = os.path.join(str(tmp_path), "AppData", "Local")
    assert op.default_cache_dir() == os.path.join(base, "ocx-proxy", "Cache")
    assert op.default_auth_dir({}) == os.path.join(base, "ocx-proxy-auth")
    assert op.default_auth_dir({"LOCALAPPDATA": "L"}) == os.path.join("L", "ocx-proxy-auth")
    assert op.default_auth_dir({"OCX_PROXY_AUTH_DIR": "mine", "LOCALAPPDATA": "L"}) == "mine"


def test_file_uri_for_posix_and_windows():
    assert op.file_uri("/tmp/a b/x.txt", windows=False) == "file:///tmp/a%20b/x.txt"
    assert op.file_uri("C:\\Users\\me\\x.txt", windows=True) == "file:///C:/Users/me/x.txt"
    assert op.file_uri("C:\\Users\\José Ñ\\x.txt", windows=True) == "file:///C:/Users/Jos%C3%A9%20%C3%91/x.txt"
    assert op.file_uri("\\\\server\\share\\x.txt", windows=True) == "file://server/share/x.txt"


def test_the_stop_signals_include_the_consoles_own():
    names = {getattr(op.signal, name, None) for name in ("SIGINT", "SIGTERM", "SIGBREAK")} - {None}
    assert names <= set(op.STOP_SIGNALS)


def test_a_directory_we_made_is_private_where_files_have_owners(tmp_path):
    path = str(tmp_path / "spill")
    with op.open_spill_dir(path) as where:
        name = where.write("x.json", b"{}")
        assert json.load(open(name)) == {}
        assert op.owned_by_us(os.stat(name))
        if op.FILE_OWNERS:
            assert os.stat(path).st_mode & 0o777 == 0o700
            assert os.stat(name).st_mode & 0o777 == 0o600


def test_a_command_line_splits_as_its_os_reads_it():
    assert op.split_command_line('python "my hook.py" --x=\'a b\'', windows=False) == ["python", "my hook.py",
                                                                                     "--x=a b"]
    # Windows: backslashes are a path's, quotes group, \" is a quote (what CommandLineToArgvW reads)
    assert op.split_command_line(r'"C:\Program Files\Python\python.exe" C:\hooks\guard.py --name="a b" \"q\" ""',
                                 windows=True) == [r"C:\Program Files\Python\python.exe", r"C:\hooks\guard.py",
                                                   "--name=a b", '"q"', ""]
    assert op.split_command_line(r'a\\\"b c\\ "d\\"', windows=True) == ['a\\"b', "c\\\\", "d\\"]
    for windows in (False, True):
        with pytest.raises(ValueError):
            op.split_command_line('python "open', windows=windows)


def test_windows_splitting_undoes_what_subprocess_writes():
    """subprocess.list2cmdline writes a Windows command line by the C runtime's rules: splitting it gives the words."""
    from hypothesis import given, strategies as st

    @given(st.lists(st.text(st.sampled_from('ab \t"\\\u00e9'), max_size=6), min_size=1, max_size=5))
    def round_trip(words):
        assert op.split_command_line(subprocess.list2cmdline(words), windows=True) == words

    round_trip()
