#!/usr/bin/env python3
"""Benchmark (not a test): encode a realistic 100-tool catalog as Cursor McpTools.

Prints microseconds per catalog for ocx_proxy.encode_mcp_tools and, when the
``protobuf`` package happens to be importable, for google's
json_format.ParseDict + SerializeToString on the same content, with the ratio.

    python tests/bench/bench_protobuf.py [--tools 100] [--seconds 2]
"""
import argparse
import os
import sys
import timeit

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
import ocx_proxy  # noqa: E402


def make_tool(index):
    """A tool shaped like those Codex and MCP servers send: nested object, enum, array."""
    return {
        "type": "function",
        "namespace": "mcp__server%d" % (index % 7),
        "name": "tool_%03d" % index,
        "description": ("Performs operation %d on the workspace. Use it when the user asks for "
                        "the listed resource; results are paginated and truncated to the limit. "
                        % index) * 2,
        "parameters": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Absolute or workspace-relative path"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100},
                "mode": {"type": "string", "enum": ["fast", "thorough", "dry-run"]},
                "recursive": {"type": "boolean", "default": False},
                "filters": {
                    "type": "array",
                    "items": {"type": "object",
                              "properties": {"field": {"type": "string"},
                                             "equals": {"type": ["string", "number", "null"]}},
                              "required": ["field"], "additionalProperties": False}},
            },
            "required": ["path"],
            "additionalProperties": False,
        },
    }


def google_encoder():
    """(encode function) using google.protobuf, or None when it is not installed."""
    try:
        from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
        from google.protobuf import struct_pb2  # noqa: F401  (registers struct.proto)
    except ImportError:
        return None
    field = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(
        name="ocx_bench_agent.proto", package="agent.v1", syntax="proto3",
        dependency=["google/protobuf/struct.proto"])
    definition = proto.message_type.add(name="McpToolDefinition")
    for number, name in [(1, "name"), (2, "description")]:
        definition.field.add(name=name, number=number, type=field.TYPE_STRING,
                             label=field.LABEL_OPTIONAL)
    definition.field.add(name="input_schema", number=3, type=field.TYPE_MESSAGE,
                         type_name=".google.protobuf.Value", label=field.LABEL_OPTIONAL)
    for number, name in [(4, "provider_identifier"), (5, "tool_name")]:
        definition.field.add(name=name, number=number, type=field.TYPE_STRING,
                             label=field.LABEL_OPTIONAL)
    tools = proto.message_type.add(name="McpTools")
    tools.field.add(name="mcp_tools", number=1, type=field.TYPE_MESSAGE,
                    type_name=".agent.v1.McpToolDefinition", label=field.LABEL_REPEATED)
    pool = descriptor_pool.Default()
    pool.Add(proto)
    message_class = message_factory.GetMessageClass(pool.FindMessageTypeByName("agent.v1.McpTools"))

    def encode(normalized):
        message = message_class()
        json_format.ParseDict({"mcp_tools": [
            {"name": tool["wire_name"], "description": tool["description"],
             "input_schema": tool["input_schema"], "provider_identifier": ocx_proxy.CURSOR_PROVIDER,
             "tool_name": tool["wire_name"]} for tool in normalized]}, message)
        return message.SerializeToString()

    return encode


def per_call_us(function, seconds):
    timer = timeit.Timer(function)
    number, _ = timer.autorange()
    repeats = max(3, int(seconds / max(timer.timeit(number) / 1.0, 1e-9)))
    best = min(timer.repeat(repeat=min(repeats, 7), number=number))
    return best / number * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tools", type=int, default=100, help="catalog size (default: 100)")
    parser.add_argument("--seconds", type=float, default=2.0, help="rough time budget (default: 2)")
    args = parser.parse_args()
    catalog = [make_tool(index) for index in range(args.tools)]
    normalized = ocx_proxy.normalize_tools(catalog)
    data = ocx_proxy.encode_mcp_tools(normalized)
    ours = per_call_us(lambda: ocx_proxy.encode_mcp_tools(normalized), args.seconds)
    print("catalog: %d tools, McpTools %d bytes" % (len(normalized), len(data)))
    print("ocx_proxy.encode_mcp_tools: %.0f us per catalog (%s)" % (ours, sys.version.split()[0]))
    full = per_call_us(lambda: ocx_proxy.encode_mcp_tools(catalog), args.seconds)
    print("  including normalize_tools: %.0f us per catalog" % full)
    decode = per_call_us(lambda: ocx_proxy.decode_mcp_tools(data), args.seconds)
    print("ocx_proxy.decode_mcp_tools: %.0f us per catalog" % decode)
    encode = google_encoder()
    if encode is None:
        print("google protobuf not importable: no comparison")
        return 0
    theirs_bytes = encode(normalized)
    same = ocx_proxy.decode_mcp_tools(theirs_bytes) == ocx_proxy.decode_mcp_tools(data)
    theirs = per_call_us(lambda: encode(normalized), args.seconds)
    print("google json_format.ParseDict + SerializeToString: %.0f us per catalog "
          "(ratio google/ocx %.2f; same content: %s)" % (theirs, theirs / ours, same))
    return 0


if __name__ == "__main__":
    sys.exit(main())
