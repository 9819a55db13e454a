#!/usr/bin/env python3
"""Benchmark (not a test): peak memory of the commands that read a user's document.

Each case runs ``ocx_proxy.py`` in a fresh child and prints its peak RSS next
to the input size: hostile protobuf blobs that expand when decoded, endless
input, deeply nested JSON.  POSIX only (``resource``).

    python tests/bench/bench_inputs.py [--proxy PATH]    # PATH: another ocx_proxy.py to compare
"""
import argparse
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
from ocx_proxy import encode_varint as varint  # noqa: E402  (building the inputs; the child is measured)

# The child reports its own child's peak RSS: RUSAGE_CHILDREN is a maximum over
# every child ever waited for, so each measurement needs a fresh parent.
MEASURE = """
import resource, subprocess, sys, time
with open(sys.argv[1], "rb") as stdin:
    start = time.monotonic()
    status = subprocess.run(sys.argv[2:], stdin=stdin, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL).returncode
print(status, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, time.monotonic() - start)
"""


def one_long_string(size):
    # McpTools { mcp_tools { description: one emoji and `size` control bytes } }:
    # the emoji makes Python hold the text at four bytes a character, and each
    # control byte is six characters once escaped as JSON.
    text = ("\U0001F600" + "\x01" * size).encode("utf-8")
    definition = b"\x12" + varint(len(text)) + text
    return b"\x0a" + varint(len(definition)) + definition


def cases(workdir):
    """(label, stdin path, size shown, arguments after ocx_proxy.py)."""
    def blob(name, data):
        path = os.path.join(workdir, name)
        with open(path, "wb") as handle:
            handle.write(data)
        return path, len(data)

    tools, tools_size = blob("tools.bin", b"\x0a\x00" * 1000000)
    varints, varints_size = blob("varints.bin", b"\x08\x00" * 1000000)
    text, text_size = blob("string.bin", one_long_string(60 * 1024 * 1024))
    deep, deep_size = blob("deep.json", b"[" * 100000 + b"]" * 100000)
    zero = "/dev/zero"
    return [
        ("decode: 1,000,000 empty tools", tools, tools_size, ["decode", "-", "--format", "raw"]),
        ("decode --as raw: 1,000,000 varints", varints, varints_size,
         ["decode", "-", "--format", "raw", "--as", "raw"]),
        ("decode: one 60 MiB string", text, text_size, ["decode", "-", "--format", "raw"]),
        ("decode: /dev/zero on stdin", zero, None, ["decode", "-", "--format", "raw"]),
        ("check --file /dev/zero", zero, None, ["check", "--file", zero]),
        ("encode-tools: 100,000 levels", deep, deep_size, ["encode-tools", "-"]),
        ("check --file: 100,000 levels", deep, deep_size, ["check", "--file", "-"]),
    ]


def measure(proxy, stdin, args, timeout):
    command = [sys.executable, "-c", MEASURE, stdin, sys.executable, proxy] + args
    try:
        out = subprocess.run(command, stdout=subprocess.PIPE, timeout=timeout).stdout.split()
    except subprocess.TimeoutExpired:
        return None
    return int(out[0]), int(out[1]) / 1024.0, float(out[2])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--proxy", default=os.path.join(ROOT, "ocx_proxy.py"),
                        help="the ocx_proxy.py to measure (default: this checkout's)")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="seconds before a case is abandoned (default 120)")
    args = parser.parse_args()
    try:
        import resource  # noqa: F401
    except ImportError:
        sys.exit("bench_inputs needs a POSIX system (the resource module)")
    print("%-36s %10s %12s %9s %5s" % ("case", "input", "peak RSS", "seconds", "exit"))
    with tempfile.TemporaryDirectory(prefix="ocx-bench-") as workdir:
        for label, stdin, size, case_args in cases(workdir):
            if not os.path.exists(stdin):
                continue
            shown = "endless" if size is None else "%.1f MB" % (size / 1e6)
            result = measure(args.proxy, stdin, case_args, args.timeout)
            if result is None:
                print("%-36s %10s %12s %9s %5s" % (label, shown, "-", ">%g" % args.timeout, "-"))
                continue
            status, peak_mb, seconds = result
            print("%-36s %10s %9.0f MB %9.2f %5d" % (label, shown, peak_mb, seconds, status))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
