"""Real-client tier: the CLIs run once per (client, case, path) and the outcome table is printed at the end."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import first_login  # noqa: E402
import outcomes  # noqa: E402


def pytest_terminal_summary(terminalreporter):
    outcomes.write_table(terminalreporter.write_line)
    outcomes.write_fit_table(terminalreporter.write_line)
    outcomes.write_more_table(terminalreporter.write_line)
    outcomes.write_clocks_table(terminalreporter.write_line)
    for (client, kind), login in sorted(first_login.LOGINS.items()):   # a first login during the run
        how = ("code entered %g s after the model got it" % first_login.DEVICE_DELAY if kind == "device"
               else "browser login approved after %g s" % first_login.LOGIN_DELAY)
        terminalreporter.write_line("first login (%s), %s: %s" % (how, client, login.summary()))


def pytest_collection_finish(session):
    """The clients of the clock tests selected: test_clocks starts only their runs ahead."""
    for item in session.items:
        if getattr(item, "module", None) is not None and item.module.__name__.endswith("test_clocks"):
            callspec = getattr(item, "callspec", None)
            outcomes.CLOCK_CLIENTS.add(callspec.params.get("client", "codex") if callspec else "codex")
