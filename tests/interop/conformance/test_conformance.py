"""Each client scenario of the official conformance suite passes through the relay.

The relay (client.py: a stdlib MCP client over ``ocx_proxy.py streamable-http``)
must pass every scenario the Python SDK's own client passes direct
(direct_client.py); a scenario that also fails direct is an xfail naming the
direct failure.  The client-credentials extensions are machine-to-machine
grants that issue 15 does not add to the relay: xfail, shown in the table.
"""
import pytest

from suite import DIRECT_CLIENT, OUTCOMES, RELAY_CLIENT, run

NOT_IN_SCOPE = {
    "auth/client-credentials-jwt": "client_credentials grant (extension), not part of the relay's OAuth",
    "auth/client-credentials-basic": "client_credentials grant (extension), not part of the relay's OAuth",
    "auth/cross-app-access-complete-flow": "enterprise token exchange (extension), not part of the relay's OAuth",
}


def test_scenario_via_relay(scenario):
    direct = run(scenario, DIRECT_CLIENT)
    relay = run(scenario, RELAY_CLIENT)
    OUTCOMES[scenario] = {"relay": relay, "direct": direct}
    if relay.ok:
        return
    if scenario in NOT_IN_SCOPE:
        pytest.xfail("%s; via relay: %s" % (NOT_IN_SCOPE[scenario], relay.why()))
    if not direct.ok:
        pytest.xfail("fails direct too (Python SDK client): %s" % direct.why())
    pytest.fail("passes direct but not via the relay: %s" % relay.why())
