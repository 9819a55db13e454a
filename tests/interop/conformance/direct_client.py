"""The DIRECT control: the same scenarios played by the official Python SDK's own OAuth client.

Run with the interop venv's python (``mcp`` pinned in tests/run_interop.py):
``direct_client.py URL``, the same contract as client.py (MCP_CONFORMANCE_SCENARIO,
MCP_CONFORMANCE_CONTEXT).  The SDK does the whole flow (discovery, DCR or the
given client, PKCE, tokens, step-up); the browser step is a GET of the
authorize URL whose redirect carries the code, as the suite's authorization
endpoint redirects at once.  A scenario that fails here is the suite's or the
SDK's problem, not the relay's: the tests then xfail the relay run naming it.
"""
import asyncio
import json
import os
import sys
from importlib.metadata import version

from mcp import ClientSession, types
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider, PrivateKeyJWTOAuthProvider, SignedJWTParameters)
from mcp.client.streamable_http import streamablehttp_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata

from scenarios import tool_to_call
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # tests/interop
from sdk_oauth import AutoConsentBrowser, MemoryStorage  # noqa: E402

REDIRECT_URI = "http://127.0.0.1:3000/callback"
CIMD_URL = "https://conformance-test.local/client-metadata.json"   # the suite's client metadata URL


async def accept_defaults(context, params):
    """Accept an elicitation with the schema's defaults (what the SEP-1034 scenario checks)."""
    properties = params.requestedSchema.get("properties", {})
    return types.ElicitResult(action="accept", content={name: prop["default"] for name, prop in properties.items()
                                                        if "default" in prop})


def auth_for(scenario, url, context):
    storage = MemoryStorage()
    if scenario == "auth/cross-app-access-complete-flow":
        # mcp 1.x has no ID-JAG client (2.x has the JWT bearer half only); the table shows this as a direct failure
        raise NotImplementedError("the Python SDK %s has no enterprise-managed authorization (ID-JAG) client"
                                  % version("mcp"))
    if scenario == "auth/client-credentials-basic":
        return ClientCredentialsOAuthProvider(url, storage, context["client_id"], context["client_secret"])
    if scenario == "auth/client-credentials-jwt":
        params = SignedJWTParameters(issuer=context["client_id"], subject=context["client_id"],
                                     signing_algorithm=context.get("signing_algorithm", "ES256"),
                                     signing_key=context["private_key_pem"])
        return PrivateKeyJWTOAuthProvider(url, storage, context["client_id"], params.create_assertion_provider())
    if context.get("client_id"):
        secret = context.get("client_secret")
        storage.client_info = OAuthClientInformationFull(
            client_id=context["client_id"], client_secret=secret, redirect_uris=[REDIRECT_URI],
            token_endpoint_auth_method="client_secret_basic" if secret else "none")
    browser = AutoConsentBrowser()
    metadata = OAuthClientMetadata(client_name="ocx-conformance-direct", redirect_uris=[REDIRECT_URI],
                                   grant_types=["authorization_code", "refresh_token"], response_types=["code"])
    return OAuthClientProvider(url, metadata, storage, redirect_handler=browser.open,
                               callback_handler=browser.callback, timeout=20, client_metadata_url=CIMD_URL)


async def run(url, scenario, context):
    auth = auth_for(scenario, url, context) if scenario.startswith("auth/") else None
    async with streamablehttp_client(url, auth=auth) as (read, write, _):
        async with ClientSession(read, write, elicitation_callback=accept_defaults) as session:
            await session.initialize()
            names = [tool.name for tool in (await session.list_tools()).tools]
            call = tool_to_call(scenario, names)
            if call is None:
                return
            name, arguments = call
            result = await session.call_tool(name, arguments)
            sys.stderr.write("direct-client: tools/call %s -> %s\n" % (name, result.model_dump_json()[:300]))


def main(argv):
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    asyncio.run(asyncio.wait_for(run(argv[-1], scenario, context), 15))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
