"""`make compat`: the smoke script and the pytest suite on every Python 3.8-3.13 found here.

Interpreters come from ``$(pyenv root)/versions/3.X*`` (newest patch release of
each minor version), else ``python3.X`` on PATH.  For each: ``tests/smoke.py``
(standard library only), then the full suite in ``.venv-compat/3.X`` (built
on first use with pytest + hypothesis) with ``-x -q`` and the ``compat``
hypothesis profile.  A version that is not on the machine is *skipped*; a
version whose venv or packages cannot be installed runs the smoke script only.
Prints a summary table; exits 1 when any smoke run or suite failed.

    python tests/run_compat.py [--versions 3.8,3.12] [--no-pytest] [--jobs 2] [--suite-ran-with .venv/bin/python]
                               [--full-on 3.8,3.13]

``--jobs 2`` checks two versions at once (the suite waits on sockets and timers more
than it computes); ``--suite-ran-with`` names the interpreter ``make test`` ran the whole
suite with, whose version then gets the smoke script only (.ci/run passes both).
``--full-on`` names the versions that run the whole suite; the others share it, each test file
run on one of them (sorted files dealt in turn), so every file still runs on a version between
the ends once (.ci/run: 3.8 and 3.13 whole, 3.9, 3.10 and 3.12 a third each: three suites'
time instead of five).
"""
import argparse
import concurrent.futures
import glob
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VERSIONS = ["3.8", "3.9", "3.10", "3.11", "3.12", "3.13"]
VENV_ROOT = os.path.join(ROOT, ".venv-compat")
PACKAGES = ["pytest>=7", "hypothesis>=6"]


def pyenv_root():
    if os.environ.get("PYENV_ROOT"):
        return os.environ["PYENV_ROOT"]
    try:
        out = subprocess.run(["pyenv", "root"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             universal_newlines=True, timeout=20)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        pass
    return os.path.expanduser("~/.pyenv")


def patch_key(path):
    return [int(part) if part.isdigit() else -1 for part in re.split(r"[.\-]", os.path.basename(path))]


def find_interpreter(version):
    """Path of a Python ``version`` (e.g. "3.8") or None."""
    candidates = []
    for directory in glob.glob(os.path.join(pyenv_root(), "versions", version + "*")):
        name = os.path.basename(directory)
        if not re.match(r"^%s(\.\d+)?$" % re.escape(version), name):
            continue  # 3.1 must not match 3.10; skip dev/debug builds like 3.13.0t
        for exe in ("python" + version, "python3", "python"):
            path = os.path.join(directory, "bin", exe)
            if os.access(path, os.X_OK):
                candidates.append((patch_key(directory), path))
                break
    if candidates:
        return max(candidates)[1]
    return shutil.which("python" + version)


def run(argv, timeout, env=None, log=None):
    """(exit status or None on time-out, seconds, combined output)."""
    started = time.monotonic()
    try:
        proc = subprocess.run(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                              universal_newlines=True, timeout=timeout)
        status, output = proc.returncode, proc.stdout
    except subprocess.TimeoutExpired as exc:
        status, output = None, (exc.output or b"").decode("utf-8", "replace") if isinstance(exc.output, bytes) \
            else (exc.output or "")
        output += "\n[timed out after %ds]" % timeout
    if log:
        with open(log, "w") as handle:
            handle.write(output)
    return status, time.monotonic() - started, output


def ensure_venv(version, python):
    """Python of ``.venv-compat/<version>`` with pytest + hypothesis, or (None, reason)."""
    venv = os.path.join(VENV_ROOT, version)
    vpy = os.path.join(venv, "bin", "python")
    stamp = os.path.join(venv, ".deps")
    if os.path.exists(stamp) and os.access(vpy, os.X_OK):
        return vpy, None
    shutil.rmtree(venv, ignore_errors=True)
    status, _, output = run([python, "-m", "venv", venv], 300)
    if status != 0:
        return None, "venv failed: " + output.strip().splitlines()[-1:][0] if output.strip() else "venv failed"
    status, _, output = run([vpy, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"] + PACKAGES, 600)
    if status != 0:
        tail = [line for line in output.strip().splitlines() if line.strip()][-1:]
        return None, "pip install failed: %s" % (tail[0] if tail else "?")
    open(stamp, "w").close()
    return vpy, None


def summary_of(output):
    """pytest's closing counts, e.g. '77 passed, 1 skipped'."""
    for line in reversed(output.strip().splitlines()):
        match = re.search(r"(\d+ (passed|failed|error|errors)[^=]*?)(?: in [\d.]+s(?: \([\d:]+\))?)?\s*=*$", line)
        if match:
            return match.group(1).strip(" =")
    return "no summary"


def say(text):
    """One whole line to stdout (two versions checked at once must not mix their lines)."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def test_files():
    """The suite's test files, sorted (what --full-on deals out)."""
    return sorted(os.path.relpath(path, ROOT) for path in glob.glob(os.path.join(ROOT, "tests", "test_*.py")))


def shares_of(versions, full_on, suite_ran):
    """{version: the test files it runs, or None for the whole suite} for the versions that run pytest."""
    if not full_on:
        return {version: None for version in versions}
    sharing = [v for v in versions if v not in full_on and v != suite_ran]
    shares = {version: None for version in versions if version in full_on}
    shares.update((version, []) for version in sharing)
    for number, path in enumerate(test_files() if sharing else []):
        shares[sharing[number % len(sharing)]].append(path)
    return shares


def check_version(version, args, env, logs):
    """One row of the matrix for ``version``: (row, failures)."""
    python = find_interpreter(version)
    if python is None:
        say("compat %s: not on this machine, skipped" % version)
        return (version, "-", "skipped (not installed)", "skipped", ""), 0
    say("compat %s: %s" % (version, python))
    failures = 0
    status, seconds, output = run([python, "tests/smoke.py"], 180, log=os.path.join(logs, version + "-smoke.log"))
    counts = (re.findall(r"^(\d+ passed, \d+ failed)$", output, re.M) or ["?"])[-1]
    smoke = ("ok" if status == 0 else "FAILED") + " (%s, %.1fs)" % (counts, seconds)
    if status != 0:
        failures += 1
        say(output)
    if args.no_pytest:
        suite = "not run (--no-pytest)"
    elif version == args.suite_ran:
        suite = "ran by make test (%s)" % args.suite_ran
    elif args.shares.get(version) == []:
        suite = "not run (no test file left to share)"
    else:
        vpy, reason = ensure_venv(version, python)
        if vpy is None:
            suite = "skipped (%s)" % reason
        else:
            files = args.shares.get(version)
            status, seconds, output = run([vpy, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider"]
                                          + (files or ["tests"]),
                                          1200, env=env, log=os.path.join(logs, version + "-pytest.log"))
            part = "" if files is None else "%d of %d files, " % (len(files), len(test_files()))
            suite = ("ok" if status == 0 else "FAILED") + " (%s%s, %.0fs)" % (part, summary_of(output), seconds)
            if status != 0:
                failures += 1
                say("compat %s:\n%s" % (version, "\n".join(output.strip().splitlines()[-60:])))
    full = subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"],
                          stdout=subprocess.PIPE, universal_newlines=True).stdout.strip()
    say("compat %s: smoke %s; pytest %s" % (version, smoke, suite))
    return (version, full, smoke, suite, python), failures


def version_of(python):
    """"3.X" of the interpreter ``python``, or None."""
    try:
        out = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             stdout=subprocess.PIPE, universal_newlines=True, timeout=60)
        return out.stdout.strip() or None
    except (OSError, subprocess.TimeoutExpired):
        return None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--versions", help="comma-separated subset of %s" % ",".join(VERSIONS))
    parser.add_argument("--no-pytest", action="store_true", help="smoke script only")
    parser.add_argument("--jobs", type=int, default=1, help="versions checked at once (default 1)")
    parser.add_argument("--suite-ran-with", metavar="PYTHON",
                        help="an interpreter the whole suite just ran with (make test's): its version gets "
                             "the smoke script only")
    parser.add_argument("--full-on", metavar="VERSIONS",
                        help="comma-separated versions that run the whole suite; the others share it by file")
    args = parser.parse_args(argv)
    args.suite_ran = version_of(args.suite_ran_with) if args.suite_ran_with else None
    versions = args.versions.split(",") if args.versions else VERSIONS
    full_on = args.full_on.split(",") if args.full_on else []
    args.shares = shares_of(versions, full_on, args.suite_ran)
    # The whole suites first: with --jobs 2 the shares fill in beside them instead of leaving one running alone.
    versions = sorted(versions, key=lambda version: args.shares.get(version, []) is not None)
    os.makedirs(VENV_ROOT, exist_ok=True)
    logs = os.path.join(VENV_ROOT, "logs")
    os.makedirs(logs, exist_ok=True)
    env = dict(os.environ, HYPOTHESIS_PROFILE=os.environ.get("HYPOTHESIS_PROFILE", "compat"))
    total_started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        results = list(pool.map(lambda version: check_version(version, args, env, logs), versions))
    rows = [row for row, _ in results]
    failures = sum(count for _, count in results)

    print()
    print("Python compatibility matrix (ocx_proxy.py; logs in .venv-compat/logs)")
    header = ("python", "version", "smoke (tests/smoke.py)", "pytest suite (-x, hypothesis profile compat)")
    widths = [max(len(str(row[i])) for row in rows + [header]) for i in range(4)]
    print("  ".join(str(cell).ljust(widths[i]) for i, cell in enumerate(header)).rstrip())
    print("  ".join("-" * width for width in widths))
    for row in rows:
        print("  ".join(str(cell).ljust(widths[i]) for i, cell in enumerate(row[:4])).rstrip())
    ran = [row for row in rows if row[1] != "-"]
    print("%d interpreter(s) checked, %d skipped, %d failure(s); %.0f s"
          % (len(ran), len(rows) - len(ran), failures, time.monotonic() - total_started))
    if not ran:
        print("compat: no Python 3.8-3.13 interpreter found at all", file=sys.stderr)
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
