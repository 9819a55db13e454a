"""What both conformance clients (client.py via the relay, direct_client.py with the SDK) call."""

# The tool each non-auth scenario's server expects to be called (from the suite's scenario sources);
# the auth scenarios' server has one tool, test-tool.
TOOL_CALLS = {
    "tools_call": ("add_numbers", {"a": 5, "b": 3}),
    "sse-retry": ("test_reconnection", {}),
    "elicitation-sep1034-client-defaults": ("test_client_elicitation_defaults", {}),
}


def tool_to_call(scenario, names):
    """(name, arguments) of the tool SCENARIO calls among the listed NAMES, or None: nothing to call."""
    if scenario in TOOL_CALLS:
        return TOOL_CALLS[scenario]
    if "test-tool" in names:
        return "test-tool", {}
    return None
