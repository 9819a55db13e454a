"""What a direct control needs to run the official Python SDK's own OAuth client unattended:
tokens kept in memory, and a browser that consents at once.

Used by test_sdk_auth.py and conformance/direct_client.py (needs the interop venv's ``mcp``).
"""
import urllib.error
import urllib.parse
import urllib.request

from mcp.client.auth import TokenStorage


class MemoryStorage(TokenStorage):
    def __init__(self):
        self.tokens = self.client_info = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info):
        self.client_info = client_info


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


class AutoConsentBrowser:
    """GET the authorize URL and keep code and state from its redirect (the servers consent at once).

    ``open`` and ``callback`` are the SDK provider's redirect and callback handlers."""

    def __init__(self):
        self.code = self.state = None
        self.visits = 0

    async def open(self, url):
        self.visits += 1
        try:
            urllib.request.build_opener(NoRedirect).open(url, timeout=10)
            raise RuntimeError("the authorization endpoint did not redirect")
        except urllib.error.HTTPError as exc:
            if exc.code // 100 != 3:
                raise RuntimeError("authorize answered HTTP %d %s" % (exc.code, exc.read()[:200].decode()))
            location = exc.headers.get("Location", "")
        query = urllib.parse.parse_qs(urllib.parse.urlparse(location).query)
        if "code" not in query:
            raise RuntimeError("no code in the redirect: %s" % location)
        self.code = query["code"][0]
        self.state = query.get("state", [None])[0]

    async def callback(self):
        return self.code, self.state
