"""The event loop section: pipe readers and writers (select and thread) and backpressure over real pipes."""
import os
import sys
import threading
import time

import pytest

import ocx_proxy as op

IO_MODES = ["select", "threads"]


@pytest.fixture(params=IO_MODES)
def threads(request):
    return request.param == "threads"


@pytest.fixture
def loop():
    made = op.Loop()
    yield made
    made.close()


@pytest.fixture
def pipe():
    read_fd, write_fd = os.pipe()
    yield read_fd, write_fd
    # The write end first: a thread reader blocked in read() then sees EOF and lets go of the read end,
    # which Windows will not close under it (os.close would wait for that read for good).
    for fd in (write_fd, read_fd):
        try:
            os.close(fd)
        except OSError:
            pass


def run_until(loop, done, timeout=5.0):
    """Run ``loop`` until ``done()`` is true or ``timeout`` passes; returns ``done()``."""
    if done():
        return True
    deadline = time.monotonic() + timeout

    def check():
        if done() or time.monotonic() > deadline:
            loop.stop()
        else:
            loop.call_later(0.005, check)

    loop.call_later(0.005, check)
    loop.run()
    return done()


def read_all_in_thread(fd, size):
    """Read ``size`` bytes from ``fd`` in a thread; returns (thread, list of chunks)."""
    chunks = []

    def run():
        got = 0
        while got < size:
            data = os.read(fd, 1 << 16)
            if not data:
                break
            chunks.append(data)
            got += len(data)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, chunks


def test_writer_reports_the_high_water_mark_and_drains(loop, pipe, threads):
    read_fd, write_fd = pipe
    writer = op.pipe_writer(loop, write_fd, use_threads=threads, limit=256 * 1024)
    data = os.urandom(1 << 20)
    assert writer.write(data) is False  # a single write over the mark is still taken whole
    assert writer.write(b"end") is False
    drained = []
    writer.when_drained(lambda: drained.append(writer.pending_bytes()))
    assert not run_until(loop, lambda: drained, timeout=0.2)  # nobody reads: no drain
    thread, chunks = read_all_in_thread(read_fd, len(data) + 3)
    assert run_until(loop, lambda: drained)
    assert drained[0] <= 128 * 1024
    assert run_until(loop, lambda: writer.pending_bytes() == 0)
    thread.join(5)
    assert b"".join(chunks) == data + b"end"


@pytest.mark.skipif(not op.PIPES_SELECTABLE, reason="checks SelectPipeWriter's queue after a partial non-blocking "
                    "write; on Windows pipes are not selectable and a thread writer takes queued items at once")
def test_writer_keeps_a_big_write_without_copying_it(loop, pipe):
    writer = op.pipe_writer(loop, pipe[1], limit=1 << 30)
    data = b"x" * (4 << 20)
    writer.write(data)
    assert len(writer.queue) == 1 and writer.queue[0].obj is data
    writer.write_line(data)
    assert writer.queue[1] is data and writer.queue[2] == b"\n"


def test_write_line_adds_one_newline_to_small_and_big_lines(loop, pipe, threads):
    read_fd, write_fd = pipe
    writer = op.pipe_writer(loop, write_fd, use_threads=threads)
    big = b"b" * 300000
    expected = b"small\n" + big + b"\n" + b"after\n"
    thread, chunks = read_all_in_thread(read_fd, len(expected))
    for line in (b"small", big, b"after"):
        writer.write_line(line)
    assert run_until(loop, lambda: writer.pending_bytes() == 0)
    thread.join(5)
    assert b"".join(chunks) == expected


def test_writer_failure_releases_those_waiting_for_a_drain(loop, pipe, threads):
    read_fd, write_fd = pipe
    errors, drained = [], []
    writer = op.pipe_writer(loop, write_fd, on_error=errors.append, use_threads=threads, limit=65536)
    writer.write(b"x" * (1 << 20))
    writer.when_drained(lambda: drained.append(True))
    os.close(read_fd)  # the reader goes away: EPIPE
    assert run_until(loop, lambda: drained and errors)
    assert writer.pending_bytes() == 0


def test_paused_reader_stops_reading_so_the_writer_blocks(loop, pipe, threads):
    read_fd, write_fd = pipe
    total = 2 << 20
    got = []
    reader = None

    def on_data(data):
        got.append(data)
        reader.pause()  # the first chunk: stop there

    reader = op.pipe_reader(loop, read_fd, on_data, use_threads=threads)
    written = [0]

    def write_all():
        view = memoryview(b"w" * total)
        while view:
            n = os.write(write_fd, view[:65536])
            written[0] += n
            view = view[n:]

    writer = threading.Thread(target=write_all, daemon=True)
    writer.start()
    run_until(loop, lambda: False, timeout=0.3)
    # A thread may have a read in flight when it is told to pause: one more chunk.
    assert sum(map(len, got)) <= 2 * op.READ_CHUNK
    assert writer.is_alive() and written[0] < total  # blocked: the pipe is full
    reader.on_data = got.append
    reader.resume()
    assert run_until(loop, lambda: sum(map(len, got)) == total)
    writer.join(5)
    assert b"".join(got) == b"w" * total
    reader.stop()


def test_factories_use_select_for_pipes_and_threads_for_files(loop, pipe, tmp_path):
    path = tmp_path / "file"
    path.write_bytes(b"in a file")
    fd = os.open(str(path), os.O_RDWR)
    try:
        if op.PIPES_SELECTABLE:
            assert type(op.pipe_reader(loop, pipe[0], print)) is op.SelectPipeReader
            assert type(op.pipe_writer(loop, pipe[1])) is op.SelectPipeWriter
        else:
            # Windows: select() takes sockets only, every pipe gets a thread.  No reader on this pipe here: its
            # thread would block in read() holding the descriptor, and the fixture's os.close() would wait on it.
            unforced = op.pipe_writer(loop, pipe[1])
            assert type(unforced) is op.ThreadPipeWriter
            unforced.close()
        forced = op.pipe_writer(loop, pipe[1], use_threads=True)
        assert type(forced) is op.ThreadPipeWriter
        forced.close()
        got = []
        reader = op.pipe_reader(loop, fd, got.append)  # epoll refuses a regular file
        assert type(reader) is op.ThreadPipeReader
        assert run_until(loop, lambda: got and got[-1] == b"")
        assert b"".join(got) == b"in a file"
        writer = op.pipe_writer(loop, fd)
        assert type(writer) is op.ThreadPipeWriter
        writer.write(b", and more")
        writer.close()
        writer.thread.join(5)
        assert path.read_bytes() == b"in a file, and more"
    finally:
        os.close(fd)


# -- BoundedRun ---------------------------------------------------------------

def test_a_bounded_run_gives_its_output_or_is_killed_at_its_bound_while_the_loop_turns(loop, threads, tmp_path):
    source = tmp_path / "input.txt"
    source.write_bytes(b"abc" * 50000)
    outputs, ticks = {}, []
    with open(str(source), "rb") as handle:
        op.BoundedRun(loop, [sys.executable, "-c", "import sys; sys.stdout.write(sys.stdin.read()[::-1])"],
                      handle.fileno(), 10, lambda out: outputs.update(reversed=out), use_threads=threads)
    started = time.monotonic()   # before the run: its bound counts from its creation
    # Either may end first (a Python start takes ~0.5 s under Wine): each run has its own callback.
    op.BoundedRun(loop, [sys.executable, "-c", "while True: pass"], None, 0.5, lambda out: outputs.update(endless=out),
                  use_threads=threads)

    def tick():
        ticks.append(time.monotonic())
        loop.call_later(0.05, tick)

    tick()
    assert run_until(loop, lambda: len(outputs) == 2, timeout=10)
    assert outputs == {"reversed": b"cba" * 50000, "endless": None}  # the endless one: killed at its bound
    assert 0.49 <= time.monotonic() - started < 5   # a timer may fire a clock tick early
    assert len(ticks) >= 8  # the loop kept turning meanwhile


def test_cancelled_timers_leave_the_heap_and_the_others_still_fire_in_order(loop):
    """A relay arms a timer per pending request (--request-timeout, heartbeats, --detach-after) and cancels it
    when the answer comes: those must not pile up for the minutes they would have waited."""
    fired = []
    for n in range(100000):
        loop.call_later(60 + n * 1e-6, fired.append, n).cancel()
    assert len(loop.timers) < 5000
    kept = [loop.call_later(0.01 * n, fired.append, n) for n in (3, 1, 2)]
    for n in range(3000):
        loop.call_later(60, fired.append, -1).cancel()
    kept[1].cancel()
    kept[1].cancel()   # twice is once
    loop.call_later(0.05, loop.stop)
    loop.run()
    assert fired == [2, 3] and len(loop.timers) < 5000
