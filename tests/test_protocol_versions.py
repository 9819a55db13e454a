"""Protocol versions: the table of MCP revisions and its lookups."""
import pytest

import ocx_proxy as op


@pytest.mark.parametrize("version", [None, 20250618, "", "2024-11-05", "2025-03-26", "2025-06-17", "2025-06-18",
                                     "2025-09-01", "2025-11-25", "2026-07-28", "2099-01-01", "draft"])
def test_resource_link_follows_the_2025_06_18_rule_for_any_version(version):
    # What spill asked before the table: a string at least "2025-06-18".
    assert op.version_has(version, "resource_link") == (isinstance(version, str) and version >= "2025-06-18")


def test_an_unknown_version_has_the_features_of_the_newest_known_before_it():
    assert op.version_has("2025-04-01", "sessions") and not op.version_has("2025-04-01", "resource_link")
    assert not op.version_has("2024-01-01", "handshake")
    assert op.version_has("2025-11-25", "handshake") and not op.version_has("2026-07-28", "handshake")


def test_servers_of_ours_speak_every_handshake_revision_and_answer_the_latest_otherwise():
    assert op.SERVED_PROTOCOL_VERSIONS == ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
    assert op.LATEST_HANDSHAKE_VERSION == "2025-11-25"
    assert op.served_version("2025-03-26") == "2025-03-26"
    assert op.served_version("2026-07-28") == op.served_version(None) == op.served_version(["x"]) == "2025-11-25"
    assert op.version_since("streamable_http") == "2025-03-26" and op.version_since("http_sse") == "2024-11-05"


@pytest.mark.parametrize("params, expected", [
    ({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}, "2026-07-28"),
    ({"name": "x", "_meta": {"io.modelcontextprotocol/protocolVersion": "2025-11-25", "other": 1}}, "2025-11-25"),
    ({"_meta": {"io.modelcontextprotocol/protocolVersion": 20260728}}, None),
    ({"_meta": {"progressToken": 1}}, None),
    ({"_meta": "2026-07-28"}, None),
    ({}, None), (None, None), ([], None), ("2026-07-28", None),
])
def test_a_request_names_its_version_only_in_its_meta(params, expected):
    assert op.request_version(params) == expected


@pytest.mark.parametrize("version, modern", [
    ("2026-07-28", True), ("2099-01-01", True), ("2025-11-25", False), ("2024-11-05", False),
    ("2024-01-01", False), ("2026-01-01", False), (None, False), (20260728, False),
])
def test_only_the_stateless_revisions_are_modern(version, modern):
    assert op.is_modern(version) is modern
    assert op.MODERN_PROTOCOL_VERSIONS == ("2026-07-28",)
