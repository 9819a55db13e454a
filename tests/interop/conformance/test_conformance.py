"""Each client scenario of the official conformance suite passes through the relay.

The relay (client.py: a stdlib MCP client over ``ocx_proxy.py streamable-http``)
must pass every scenario the Python SDK's own client passes direct
(direct_client.py); a scenario that also fails direct is an xfail naming the
direct failure.  The three extension scenarios (client credentials with a
secret and with private_key_jwt, enterprise-managed authorization's whole
ID-JAG flow) pass through the relay like the others; the SDK's own client
(1.x) has no ID-JAG client, so cross-app-access fails direct, which the
table shows.

The auth/* scenarios run four at a time (suite.AUTH_WORKERS), as a client
starts its relays: several first logins at once, each against its own server,
must not get in each other's way (callback ports, registrations).
"""
import time

import pytest

from suite import AUTH_WORKERS, BATCHES, DIRECT_CLIENT, OUTCOMES, RELAY_CLIENT, client_scenarios, run, run_side_by_side

@pytest.fixture(scope="session")
def auth_runs():
    """Every auth/* scenario via the relay, then direct, AUTH_WORKERS at a time: {"relay": {...}, "direct": {...}}."""
    scenarios = [s for s in client_scenarios() if s.startswith("auth/")]
    runs = {}
    for name, client in (("relay", RELAY_CLIENT), ("direct", DIRECT_CLIENT)):
        started = time.monotonic()
        runs[name] = run_side_by_side(scenarios, client)
        BATCHES.append("%d auth/* scenarios %s, %d at a time: %.0f s" % (
            len(scenarios), "via the relay" if name == "relay" else "direct", AUTH_WORKERS, time.monotonic() - started))
    return runs


def test_scenario_via_relay(scenario, request):
    if scenario.startswith("auth/"):
        runs = request.getfixturevalue("auth_runs")
        direct, relay = runs["direct"][scenario], runs["relay"][scenario]
    else:
        direct, relay = run(scenario, DIRECT_CLIENT), run(scenario, RELAY_CLIENT)
    OUTCOMES[scenario] = {"relay": relay, "direct": direct}
    if relay.ok:
        return
    if not direct.ok:
        pytest.xfail("fails direct too (Python SDK client): %s" % direct.why())
    pytest.fail("passes direct but not via the relay: %s" % relay.why())
