"""An OAuth-protected MCP server built with the official Python SDK's own auth machinery.

FastMCP with ``auth=AuthSettings(...)`` and an in-memory
``OAuthAuthorizationServerProvider``: the SDK serves the authorization server
(RFC 8414 metadata, dynamic client registration, authorize, token, revoke) and
the resource server (RFC 9728 metadata, bearer checks on /mcp) on one port.
Authorize consents at once: it redirects straight to the client's redirect_uri
with a code, so a scripted browser that follows redirects finishes the login.

    sdk_auth_server.py --port PORT [--token-ttl SECONDS] [--log FILE]

``--token-ttl`` sets the access tokens' lifetime (short to test refresh).
``--log`` appends one line per grant (``grant authorization_code`` /
``grant refresh_token``) and registration, so tests can count them.
"""
import argparse
import secrets
import time

from pydantic import AnyHttpUrl

from mcp.server.auth.provider import (
    AccessToken, AuthorizationCode, AuthorizationParams, RefreshToken, TokenError, construct_redirect_uri)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.fastmcp import FastMCP

SCOPE = "mcp"


class MemoryProvider:
    """The provider protocol kept in dictionaries; tokens are opaque random strings."""

    def __init__(self, token_ttl, log_path):
        self.token_ttl = token_ttl
        self.log_path = log_path
        self.clients = {}
        self.codes = {}
        self.access = {}
        self.refresh = {}

    def log(self, line):
        if self.log_path:
            with open(self.log_path, "a") as handle:
                handle.write(line + "\n")

    async def get_client(self, client_id):
        return self.clients.get(client_id)

    async def register_client(self, client_info):
        self.clients[client_info.client_id] = client_info
        self.log("register %s" % " ".join(str(uri) for uri in client_info.redirect_uris or []))

    async def authorize(self, client, params: AuthorizationParams):
        code = AuthorizationCode(
            code=secrets.token_urlsafe(24), client_id=client.client_id, scopes=params.scopes or [SCOPE],
            expires_at=time.time() + 300, code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri, redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource)
        self.codes[code.code] = code
        return construct_redirect_uri(str(params.redirect_uri), code=code.code, state=params.state)

    async def load_authorization_code(self, client, authorization_code):
        code = self.codes.get(authorization_code)
        return code if code and code.client_id == client.client_id else None

    async def exchange_authorization_code(self, client, authorization_code):
        del self.codes[authorization_code.code]
        self.log("grant authorization_code resource=%s" % authorization_code.resource)
        return self.issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client, refresh_token):
        token = self.refresh.get(refresh_token)
        return token if token and token.client_id == client.client_id else None

    async def exchange_refresh_token(self, client, refresh_token, scopes):
        self.refresh.pop(refresh_token.token, None)   # rotate
        self.log("grant refresh_token resource=%s" % refresh_token.resource)
        return self.issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token):
        access = self.access.get(token)
        if access is None or (access.expires_at and access.expires_at < time.time()):
            return None
        return access

    async def revoke_token(self, token):
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    def issue(self, client_id, scopes, resource):
        from mcp.shared.auth import OAuthToken
        if not scopes:
            raise TokenError("invalid_scope", "no scope")
        access = AccessToken(token=secrets.token_urlsafe(24), client_id=client_id, scopes=scopes,
                             expires_at=int(time.time() + self.token_ttl), resource=resource)
        refresh = RefreshToken(token=secrets.token_urlsafe(24), client_id=client_id, scopes=scopes,
                               resource=resource)
        self.access[access.token] = access
        self.refresh[refresh.token] = refresh
        return OAuthToken(access_token=access.token, token_type="Bearer", expires_in=self.token_ttl,
                          refresh_token=refresh.token, scope=" ".join(scopes))


def build(port, token_ttl, log_path):
    base = "http://127.0.0.1:%d" % port
    auth = AuthSettings(
        issuer_url=AnyHttpUrl(base),
        resource_server_url=AnyHttpUrl(base + "/mcp"),
        validate_token_resource=True,
        required_scopes=[SCOPE],
        client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=[SCOPE],
                                                              default_scopes=[SCOPE]),
        revocation_options=RevocationOptions(enabled=True))
    mcp = FastMCP("sdk-auth-server", host="127.0.0.1", port=port, auth=auth,
                  auth_server_provider=MemoryProvider(token_ttl, log_path))

    @mcp.tool()
    def echo(text: str) -> str:
        """Return TEXT unchanged."""
        return text

    @mcp.tool()
    def whoami() -> str:
        """The client id and scopes of the bearer token of this request."""
        from mcp.server.auth.middleware.auth_context import get_access_token
        token = get_access_token()
        return "%s %s" % (token.client_id, " ".join(token.scopes)) if token else "anonymous"

    return mcp


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--token-ttl", type=int, default=3600)
    parser.add_argument("--log")
    args = parser.parse_args()
    build(args.port, args.token_ttl, args.log).run(transport="streamable-http")


if __name__ == "__main__":
    main()
