"""A realistic tool catalog for the fitting benchmark, the same on every run (standard library only).

``catalog(count)`` builds ``count`` tools the way big servers write them: names of 20 to 80
characters (some dotted, as namespaced servers spell them), input schemas of about 1 to 3 kB with
``$ref``/``$defs``, type arrays, formats, ``additionalProperties``, a root ``anyOf`` in a few, and
an ``outputSchema`` in some (a few of them not an object).  ``python bench_catalog.py [COUNT]``
prints its size.
"""
import json
import random
import sys

VERBS = ("list", "get", "create", "update", "delete", "search", "merge", "sync", "export", "archive")
NOUNS = ("pull_request_review_comments", "repository_collaborators", "issue", "deployment_status",
         "workflow_run_artifacts", "calendar_event", "spreadsheet_range_values", "customer_invoice_line_items",
         "project_board_column_cards", "organization_membership", "secret_scanning_alert", "webhook_delivery")
SPACES = ("github.repos", "jira.issues", "gcal", "sheets.v4.spreadsheets", "stripe.billing")
WORDS = ("the", "identifier", "of", "owner", "repository", "page", "results", "filter", "by", "state", "when",
         "set", "only", "items", "updated", "after", "this", "time", "are", "returned", "default", "maximum")
FORMATS = ("uri", "date-time", "email", "uuid", "date")


def sentence(rng, low, high):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high))).capitalize() + "."


def name_of(rng, n):
    """A tool name of 20 to 80 characters; one in four dotted (namespaced)."""
    name = "%s_%s" % (rng.choice(VERBS), rng.choice(NOUNS))
    if n % 4 == 0:
        name = rng.choice(SPACES) + "." + name
    while len(name) < 20 or rng.random() < 0.3:
        name += "_" + rng.choice(NOUNS).split("_")[0]
    return (name[:76] + "_%03d" % n) if len(name) > 76 else "%s_%d" % (name, n)


def prop(rng, defs):
    """One property schema: a plain type, a type array, a format, an enum, or a $ref to one of ``defs``."""
    kind = rng.random()
    node = {"description": sentence(rng, 6, 16)}
    if kind < 0.15 and defs:
        return {"$ref": "#/$defs/" + rng.choice(defs)}
    if kind < 0.3:
        node["type"] = ["string", "null"]
    elif kind < 0.45:
        node.update(type="string", format=rng.choice(FORMATS))
    elif kind < 0.6:
        node.update(type="string", enum=["open", "closed", "all"], default="open")
    elif kind < 0.75:
        node.update(type="integer", minimum=1, maximum=100)
    elif kind < 0.85:
        node.update(type="array", items={"type": "string"} if not defs else {"$ref": "#/$defs/" + defs[0]})
    else:
        node.update(type="boolean")
    return node


def definitions(rng):
    """$defs of one schema: up to three objects, the last one referring to the first."""
    defs = {}
    for i in range(rng.randint(0, 3)):
        name = "Def%d" % i
        props = {"id": {"type": "integer", "format": "int64"}, "label": {"type": ["string", "null"]},
                 "url": {"type": "string", "format": "uri", "description": sentence(rng, 4, 10)}}
        if i == 2:
            props["parent"] = {"$ref": "#/$defs/Def0"}
        defs[name] = {"type": "object", "properties": props, "required": ["id"], "additionalProperties": False}
    return defs


def input_schema(rng, n):
    defs = definitions(rng)
    names = sorted(defs)
    properties = {"owner": {"type": "string", "description": sentence(rng, 5, 12)}}
    for i in range(rng.randint(4, 12)):
        properties["%s_%d" % (rng.choice(WORDS), i)] = prop(rng, names)
    schema = {"type": "object", "properties": properties, "required": ["owner"], "additionalProperties": False}
    if defs:
        schema["$defs"] = defs
    if n % 20 == 7:  # a root anyOf: one of two ways to name the target
        schema["anyOf"] = [{"title": "by id", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
                           {"title": "by path", "properties": {"path": {"type": "string"}}, "required": ["path"]}]
    return schema


def tool(rng, n):
    entry = {"name": name_of(rng, n), "description": sentence(rng, 10, 40), "inputSchema": input_schema(rng, n)}
    if n % 10 == 3:
        entry["outputSchema"] = {"type": "object", "properties": {"items": {"type": "array"}}}
    elif n % 50 == 9:
        entry["outputSchema"] = {"type": "array", "items": {"type": "object"}}
    return entry


def catalog(count=500, seed=21):
    """``count`` tools, the same for the same ``count`` and ``seed``."""
    rng = random.Random(seed)
    return [tool(rng, n) for n in range(count)]


if __name__ == "__main__":
    tools = catalog(int(sys.argv[1]) if len(sys.argv) > 1 else 500)
    sizes = sorted(len(json.dumps(t)) for t in tools)
    lengths = sorted(len(t["name"]) for t in tools)
    print("%d tools, %d bytes; per tool %d-%d bytes (median %d); names %d-%d characters, %d dotted"
          % (len(tools), len(json.dumps(tools)), sizes[0], sizes[-1], sizes[len(sizes) // 2], lengths[0],
             lengths[-1], sum("." in t["name"] for t in tools)))
