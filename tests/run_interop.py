"""`make interop`: the official MCP Python SDK's client drives ocx_proxy.py (tests/interop/).

Builds ``.venv-interop`` on first use with the SDK pinned to MCP_SDK_VERSION
plus pytest, then runs ``tests/interop``.  When the package index cannot be
reached the tier is skipped with a clear message and exit status 0; any other
install failure, or a failing test, exits non-zero.

    python tests/run_interop.py [extra pytest arguments]
"""
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.environ.get("INTEROP_VENV") or os.path.join(ROOT, ".venv-interop")
MCP_SDK_VERSION = "1.30.0"  # newest 1.x release; the SDK needs Python >= 3.10
PACKAGES = ["mcp==%s" % MCP_SDK_VERSION, "pytest>=7"]
STAMP = os.path.join(VENV, ".deps-mcp-%s" % MCP_SDK_VERSION)


def index_reachable(python):
    """Whether pip can reach the package index at all (asks about the one package we install)."""
    try:
        proc = subprocess.run([python, "-m", "pip", "download", "--no-deps", "--quiet", "-d",
                               os.path.join(VENV, ".probe"), "mcp==%s" % MCP_SDK_VERSION,
                               "--disable-pip-version-check"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=180)
    except subprocess.TimeoutExpired:
        return False
    finally:
        shutil.rmtree(os.path.join(VENV, ".probe"), ignore_errors=True)
    return proc.returncode == 0


def main():
    python = os.environ.get("INTEROP_PYTHON") or sys.executable
    vpy = os.path.join(VENV, "bin", "python")
    if not (os.path.exists(STAMP) and os.access(vpy, os.X_OK)):
        check = subprocess.run([python, "-c", "import sys; sys.exit(sys.version_info < (3, 10))"])
        if check.returncode != 0:
            print("interop: FAILED - the mcp SDK needs Python >= 3.10; set INTEROP_PYTHON")
            return 1
        shutil.rmtree(VENV, ignore_errors=True)
        if subprocess.run([python, "-m", "venv", VENV]).returncode != 0:
            print("interop: FAILED - could not create %s" % VENV)
            return 1
        print("interop: installing %s into .venv-interop" % " ".join(PACKAGES), flush=True)
        try:
            proc = subprocess.run([vpy, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
                                  + PACKAGES, timeout=900)
            installed = proc.returncode == 0
        except subprocess.TimeoutExpired:
            installed = False
        if not installed:
            if not index_reachable(vpy):
                print("interop: SKIPPED - the package index is unreachable, so the official mcp SDK "
                      "(mcp==%s) could not be installed; nothing was tested" % MCP_SDK_VERSION)
                shutil.rmtree(VENV, ignore_errors=True)
                return 0
            print("interop: FAILED - pip could not install %s although the index answers" % " ".join(PACKAGES))
            return 1
        open(STAMP, "w").close()
    argv = [vpy, "-m", "pytest", "-q", "-p", "no:cacheprovider", os.path.join(ROOT, "tests", "interop")]
    status = subprocess.run(argv + sys.argv[1:], cwd=ROOT).returncode
    if status == 5:
        print("interop: pytest collected no tests")
        return 1
    return status


if __name__ == "__main__":
    sys.exit(main())
