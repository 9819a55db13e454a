"""Wire helpers: redaction, ${VAR} references."""
import json

import pytest

import ocx_proxy as op


def test_redact_masks_credentials_anywhere():
    data = {"Authorization": "Bearer abc", "nested": [{"api_key": "k", "x-api-key": "k2"}],
            "note": "sent bearer sk-123 to server", "plain": "ok"}
    out = op.redact(data)
    assert out["Authorization"] == "[redacted]" and out["nested"][0] == {"api_key": "[redacted]", "x-api-key": "[redacted]"}
    assert "sk-123" not in json.dumps(out) and out["plain"] == "ok"


def test_expand_env_refs():
    env = {"A": "1", "B": "two"}
    assert op.expand_env_refs("x${A}-${B}$C", env) == "x1-two$C"
    with pytest.raises(op.UsageError, match="MISSING"):
        op.expand_env_refs("${MISSING}", env)


# Every name one of the three old rules (trace keys, headers, URL query) masked.
SECRET_NAMES = ["Authorization", "Proxy-Authorization", "Cookie", "X-API-Key", "api_key", "apikey", "access_token",
                "client_secret", "password", "passwd", "auth", "sig", "session", "code", "credential", "key"]


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_one_secrets_rule_masks_a_secret_name_as_a_key_a_header_and_a_query_parameter(name):
    assert op.redact({name: "s3cr3t-value"}) == {name: "[redacted]"}
    assert op.parse_header_option("%s: s3cr3t-value" % name, {})[2] is True
    config = op.RemoteConfig("https://h.example/mcp?%s=s3cr3t-value&page=2" % name, environ={})
    assert "s3cr3t-value" not in config.display_url and "page=2" in config.display_url
    assert config.describe_headers({name: "s3cr3t-value", "Accept": "x/y"}) == name + ": [redacted], Accept: x/y"


def test_anchored_patterns_refuse_a_trailing_newline():
    # Python's "$" matches before a final "\n": a header value, a session id, a spill name or a TOML
    # bare key that ends in a newline must not pass as valid.
    for name in ("SPILL_NAME_RE", "HEADER_NAME_RE", "PLAIN_HEADER_VALUE_RE", "SESSION_ID_RE", "ALIAS_RE",
                 "SERVER_NAME_RE", "MCP_TOOL_NAME_RE", "CODEX_SERVER_NAME_RE",
                 "TOML_BARE_KEY_RE"):
        pattern = getattr(op, name)
        assert not pattern.match("abc\n") and not pattern.match("20261130T000000Z_x\n"), name


def test_a_log_record_is_one_line_whatever_it_quotes():
    import io

    stream = io.StringIO()
    op.Logger(stream=stream).warning("server said: \x1b[31mred\x07\r\nocx-proxy: forged\u2028\u202eevil\x85 tab\tok é")
    assert stream.getvalue() == ("ocx-proxy: warning: server said: \\x1b[31mred\\x07\\r\\nocx-proxy: forged"
                                 "\\u2028\\u202eevil\\x85 tab\tok é\n")
