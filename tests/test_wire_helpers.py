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
