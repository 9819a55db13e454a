"""Conformance tier: the official suite's client scenarios, via the relay and direct.

Collected only by `make interop` (tests/run_interop.py sets OCX_CONFORMANCE_NODE
and OCX_CONFORMANCE_PREFIX); without them every test here is skipped.  At the end
a table shows each scenario's checks via the relay and with the Python SDK direct.
"""
import pytest

from suite import BATCHES, OUTCOMES, available, client_scenarios


def pytest_generate_tests(metafunc):
    if "scenario" in metafunc.fixturenames:
        scenarios = client_scenarios() if available() else []
        metafunc.parametrize("scenario", scenarios or [pytest.param(None, marks=pytest.mark.skip(
            reason="the conformance suite is not installed (run `make interop`)"))])


def pytest_terminal_summary(terminalreporter):
    if not OUTCOMES:
        return
    width = max(len(s) for s in OUTCOMES) + 2
    write = terminalreporter.write_line
    write("")
    write("conformance client scenarios (checks passed/total, wN = N warnings):")
    write("%-*s %-16s %-16s" % (width, "scenario", "via relay", "direct (SDK)"))
    for scenario, runs in OUTCOMES.items():
        write("%-*s %-16s %-16s" % (width, scenario, runs["relay"].cell() if "relay" in runs else "-",
                                    runs["direct"].cell() if "direct" in runs else "-"))
    seconds = sum(o.seconds for runs in OUTCOMES.values() for o in runs.values())
    write("(%d scenario runs, %.0f s in all)" % (sum(len(r) for r in OUTCOMES.values()), seconds))
    for batch in BATCHES:
        write("(%s)" % batch)
