"""A stand-in browser for the OAuth login: GET the authorize URL, follow the redirects.

The relay opens the authorization URL with Python's ``webbrowser``, which runs
the program named by the ``BROWSER`` environment variable with the URL as its
only argument and waits for it to exit.  A real browser returns at once and
the user finishes the login later, so this script does the same: it starts
itself again detached (``--now``), with its output in a log file beside it,
and exits 0.  The detached copy follows the redirects of the conformance
suite's authorization endpoint (it redirects straight to ``redirect_uri``
with a code) until it reaches the relay's loopback listener.

    browser.py URL           as BROWSER: detach and return
    browser.py --now URL     do the GET now (what the detached copy runs)
"""
import os
import subprocess
import sys
import urllib.error
import urllib.request

LOG = os.environ.get("OCX_CONFORMANCE_BROWSER_LOG") or os.devnull
TIMEOUT = 20


def visit(url):
    """GET URL following redirects (urllib does, for GET); log where it ended and the status."""
    with open(LOG, "a") as log:
        log.write("browser: open %s\n" % url)
        try:
            with urllib.request.urlopen(url, timeout=TIMEOUT) as response:
                log.write("browser: landed on %s -> %d\n" % (response.geturl(), response.status))
                return 0
        except urllib.error.HTTPError as exc:
            log.write("browser: landed on %s -> %d %s\n" % (exc.geturl(), exc.code, exc.read()[:300]))
        except (OSError, ValueError) as exc:
            log.write("browser: failed: %s\n" % exc)
        return 1


def main(argv):
    if len(argv) == 2 and argv[0] == "--now":
        return visit(argv[1])
    if len(argv) != 1:
        sys.stderr.write("usage: browser.py URL\n")
        return 2
    # Never let the detached copy hold the caller's stdio: for a relay that is the MCP channel.
    with open(LOG, "a") as log:
        subprocess.Popen([sys.executable, os.path.abspath(__file__), "--now", argv[0]],
                         stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
