"""Reader benchmarks: pages of one huge line, and pattern searches through a relay.

Pages: a spill whose text is one line of MB megabytes (200 by default) is read
a page (10,000 characters) at a time at its start, middle and end; each copy
of ocx_proxy.py runs in a process of its own, which reports the time of a
page, the memory a page allocates (tracemalloc peak) and how far the process's
peak RSS rose while reading.  Searches: a relay in front of
tests/fixtures/stdio_server.py spills one line of a million "a" and a "b";
the times of a normal search and of a page are compared, then a catastrophic
pattern runs while pings go through the same relay.  Path queries: a JSON
spill of 50 MB (--json-mb), an object holding an array of small objects and a
member after it, is queried by path (the child program the reader runs, as the
reader runs it): each query's median time, and the largest peak RSS of the
query programs.

    python tests/bench/bench_reader.py                    # this checkout
    python tests/bench/bench_reader.py --old OLD.py       # and another copy, side by side
    python tests/bench/bench_reader.py --mb 50 --quick    # a smaller spill, fewer repetitions

Standard library only.  Not part of the pass/fail test run.
"""
import argparse
import importlib.util
import json
import os
import queue
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROXY = os.path.join(ROOT, "ocx_proxy.py")
SERVER = os.path.join(ROOT, "tests", "fixtures", "stdio_server.py")
PAGE_CHARS = 10000


def rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # kB on Linux


def page_worker(proxy, megabytes, repeats):
    """In a process of its own: spill one line of ``megabytes`` MB, read pages of it; prints one JSON object."""
    spec = importlib.util.spec_from_file_location("ocx_proxy_under_test", proxy)
    op = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(op)
    out = tempfile.mkdtemp()
    try:
        spill = op.Spill(out, 2000, 500)
        text = op.ReadableText()
        text.parts.append("abcdefghij" * (megabytes * 100000))
        started = time.perf_counter()
        files, _ = spill.save_text(spill.save_line(b"{}", "tools/call", 1), text)
        built = time.perf_counter() - started
        length = len(text.parts[0])
        del text
        stem = os.path.basename(files.txt_path)[:-4]
        before = rss_mb()
        rows = {}
        for name, column in (("start", 1), ("middle", length // 2), ("end", length - PAGE_CHARS // 2)):
            times = []
            for _ in range(repeats):
                started = time.perf_counter()
                page, _ = spill.read(stem, column=column, budget_chars=PAGE_CHARS)
                times.append(time.perf_counter() - started)
            tracemalloc.start()
            spill.read(stem, column=column, budget_chars=PAGE_CHARS)
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            rows[name] = {"ms": statistics.median(times) * 1000, "alloc_mb": peak / 1e6, "chars": len(page)}
        print(json.dumps({"build_s": built, "rss_rise_mb": rss_mb() - before, "pages": rows}))
    finally:
        shutil.rmtree(out, ignore_errors=True)


class Client:
    """An MCP client on pipes to one relay; answers are matched by id, each with a timeout."""

    def __init__(self, proxy, spill_dir):
        argv = [sys.executable, proxy, "stdio", "--output-dir", spill_dir, "--", sys.executable, SERVER]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.answers = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.request("tools/list")

    def _read(self):
        for line in self.proc.stdout:
            self.answers.put(json.loads(line))

    def send(self, msg):
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()

    def start(self, method, params=None):
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.next_id

    def wait(self, msg_id, timeout=60):
        """The answer to ``msg_id`` (others are dropped), or None after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                answer = self.answers.get(timeout=max(0.001, deadline - time.monotonic()))
            except queue.Empty:
                return None
            if answer.get("id") == msg_id:
                return answer

    def request(self, method, params=None, timeout=60):
        return self.wait(self.start(method, params), timeout)

    def timed(self, method, params=None, timeout=60):
        started = time.perf_counter()
        answer = self.request(method, params, timeout)
        return (time.perf_counter() - started) * 1000, answer

    def close(self):
        self.proc.kill()
        self.proc.wait()


class Spilled:
    """A relay with two spills: one line of a million "a" and a "b", and 20,000 short lines."""

    def __init__(self, proxy):
        self.spill_dir = tempfile.mkdtemp()
        self.client = Client(proxy, self.spill_dir)
        line = '{"jsonrpc":"2.0","id":__ID__,"result":{"content":[{"type":"text","text":"%s"}]}}' % (
            "a" * 1000000 + "b")
        self.long_id = self.spill_id(self.client.request("tools/call", {"name": "raw", "arguments": {"line": line}}))
        self.lines_id = self.spill_id(self.client.request("tools/call", {"name": "lines", "arguments": {"n": 20000}}))

    @staticmethod
    def spill_id(answer):
        return os.path.basename(answer["result"]["_meta"]["ocx-proxy/spill"]["txt"])[:-4]

    def read(self, **arguments):
        """Milliseconds of one reader call."""
        return self.client.timed("tools/call", {"name": "read_spilled_output", "arguments": arguments})[0]

    def catastrophic(self):
        """(slowest of 5 pings while (a+)+$ runs, seconds until the search is answered); inf: no answer."""
        started = time.perf_counter()
        evil = self.client.start("tools/call", {"name": "read_spilled_output",
                                                "arguments": {"id": self.long_id, "pattern": "(a+)+$"}})
        pings = []
        for _ in range(5):
            took, answer = self.client.timed("ping", timeout=10)
            pings.append(took if answer is not None else float("inf"))
            if answer is None:
                break
        answer = self.client.wait(evil, timeout=20)
        return max(pings), (time.perf_counter() - started) if answer is not None else float("inf")

    def close(self):
        self.client.close()
        shutil.rmtree(self.spill_dir, ignore_errors=True)


def search_rows(copies, repeats):
    """Rows of reader calls through a relay, the copies interleaved call by call."""
    relays = {name: Spilled(proxy) for name, proxy in copies.items()}
    try:
        calls = {
            "page of 20,000 lines (ms)": lambda relay: relay.read(id=relay.lines_id, line=15000),
            "search of 20,000 lines (ms)": lambda relay: relay.read(id=relay.lines_id, pattern=r"^line 1999\d "),
            "search of the 1 MB line (ms)": lambda relay: relay.read(id=relay.long_id, pattern="ab$"),
        }
        rows = {}
        for row, call in calls.items():
            times = {name: [] for name in relays}
            for _ in range(repeats):
                for name, relay in relays.items():
                    times[name].append(call(relay))
            rows[row] = ["%.1f" % statistics.median(times[name]) for name in relays]
        stopped = {name: relay.catastrophic() for name, relay in relays.items()}
        rows["ping during (a+)+$ (ms, max of 5)"] = ["%.1f" % stopped[name][0] for name in relays]
        rows["(a+)+$ answered after (s)"] = ["%.1f" % stopped[name][1] for name in relays]
        return rows
    finally:
        for relay in relays.values():
            relay.close()


PATH_QUERIES = [("$.items[10:20].name", False), ("$.total (after the array)", False), ("$.items", True),
                ("$", True)]


def path_rows(copies, megabytes, repeats):
    """Rows of median times of path queries on a JSON spill of ``megabytes`` MB (copies without ``query``: n/a)."""
    items, size, parts = [], 0, []
    item = '{"id": %d, "name": "item-%d", "price": %d.50, "tags": ["a", "b"]}'
    while size < megabytes * 1000000:
        parts.append(item % (len(parts), len(parts), len(parts)))
        size += len(parts[-1]) + 2
    doc = '{"meta": {"count": %d}, "items": [%s], "total": 1.50}' % (len(parts), ", ".join(parts))
    del parts
    rows = {"%s%s (s)" % (path, " outline" if outline else ""): [] for path, outline in PATH_QUERIES}
    for proxy in copies.values():
        spec = importlib.util.spec_from_file_location("ocx_proxy_under_test", proxy)
        op = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(op)
        out = tempfile.mkdtemp()
        try:
            spill = op.Spill(out)
            text = op.ReadableText()
            text.parts.append(doc)
            files, _ = spill.save_text(spill.save_line(b"{}", "tools/call", 1), text)
            stem = os.path.basename(files.txt_path)[:-4]
            for (path, outline), row in zip(PATH_QUERIES, rows):
                if not hasattr(spill, "query"):
                    rows[row].append("n/a")
                    continue
                times, answer = [], None
                for _ in range(repeats):
                    query = spill.query(stem, path.split(" ")[0], outline, budget_chars=PAGE_CHARS)
                    started = time.perf_counter()
                    done = subprocess.run(query.argv, stdin=query.stdin, stdout=subprocess.PIPE)
                    times.append(time.perf_counter() - started)
                    os.close(query.stdin)
                    answer = query.answer(done.stdout)
                rows[row].append("%.2f" % statistics.median(times))
                print("  %s -> %r" % (row, answer[0][:100]), file=sys.stderr)
        finally:
            shutil.rmtree(out, ignore_errors=True)
    # Only query programs have ended so far (the first children of this process).
    rows["largest query program peak RSS (MB)"] = [
        "%.0f" % (resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0)] * len(copies)
    return rows, len(doc)


def show(title, copies, rows):
    print(title)
    print("  %-36s" % "" + "".join("%16s" % name for name in copies))
    for row in rows:
        print("  %-36s" % row + "".join("%16s" % value for value in rows[row]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", help="another copy of ocx_proxy.py, measured beside this one")
    parser.add_argument("--mb", type=int, default=200, help="size of the one-line spill (default 200)")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--json-mb", type=int, default=50, help="size of the JSON spill queried by path (default 50)")
    parser.add_argument("--only-paths", action="store_true", help="only the path queries")
    parser.add_argument("--page-worker", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.page_worker:
        page_worker(args.page_worker[0], int(args.page_worker[1]), int(args.page_worker[2]))
        return
    repeats = 3 if args.quick else 7
    copies = {"old": args.old, "new": PROXY} if args.old else {"new": PROXY}
    rows, size = path_rows(copies, args.json_mb, repeats)
    show("Path queries of a JSON spill of %d bytes (median, a page of %d characters):" % (size, PAGE_CHARS),
         copies, rows)
    print()
    if args.only_paths:
        return
    pages = {}
    for name, proxy in copies.items():
        done = subprocess.run([sys.executable, __file__, "--page-worker", proxy, str(args.mb), str(repeats)],
                              stdout=subprocess.PIPE, check=True)
        pages[name] = json.loads(done.stdout)
    rows = {"build the spill (s)": ["%.2f" % pages[name]["build_s"] for name in copies],
            "peak RSS rise while paging (MB)": ["%.0f" % pages[name]["rss_rise_mb"] for name in copies]}
    for where in ("start", "middle", "end"):
        rows["page at the %s (ms)" % where] = ["%.2f" % pages[name]["pages"][where]["ms"] for name in copies]
        rows["page at the %s (MB allocated)" % where] = ["%.3f" % pages[name]["pages"][where]["alloc_mb"]
                                                         for name in copies]
    show("One line of %d MB, pages of %d characters:" % (args.mb, PAGE_CHARS), copies, rows)
    print()
    show("Through a relay (inf: no answer within the bench's wait):", copies, search_rows(copies, repeats))


if __name__ == "__main__":
    main()
