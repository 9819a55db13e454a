"""Layout of ocx_proxy.py: the module docstring's map is true, and a section only uses names from itself
or the sections above it (a lower section reaches a higher one through an object it is given)."""
import ast
import os
import re
import symtable

import ocx_proxy as op

SOURCE_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "ocx_proxy.py")
# A banner: a rule of dashes, "# Title: what it holds", a rule of dashes.
BANNER_RE = re.compile(r"^# -{20,}\n# ([^:\n]+)[^\n]*\n# -{20,}$", re.M)


def sections(source):
    """[(title, first line)] of the banners, in file order."""
    return [(m.group(1).strip(), source.count("\n", 0, m.start()) + 1) for m in BANNER_RE.finditer(source)]


def section_index(starts, line):
    """Index of the section holding ``line``; -1 before the first banner (imports, version)."""
    index = -1
    for i, (_, start) in enumerate(starts):
        if start <= line:
            index = i
    return index


def module_scope_names(node):
    """The Name nodes under ``node`` that name module-level things when ``node`` is at module level:
    everything but the bodies of functions, lambdas and classes (symtable answers for those), whose
    decorators, defaults, annotations and bases still run at module level."""
    if isinstance(node, ast.Name):
        return [node]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        args = node.args
        parts = args.defaults + args.kw_defaults   # None for a keyword-only argument without one
        if not isinstance(node, ast.Lambda):
            every = args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]
            parts += node.decorator_list + [node.returns] + [a.annotation for a in every if a is not None]
    elif isinstance(node, ast.ClassDef):
        parts = node.decorator_list + node.bases + [k.value for k in node.keywords]
    elif isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        # Python 3.12 inlines comprehensions (PEP 709): symtable no longer shows them apart at module
        # level, so their names are read here, without the ones they bind.
        bound = {n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
        inner = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        inner += [g.iter for g in node.generators[1:]] + [test for g in node.generators for test in g.ifs]
        inner = [name for part in inner for name in module_scope_names(part) if name.id not in bound]
        return module_scope_names(node.generators[0].iter) + inner
    else:
        parts = list(ast.iter_child_nodes(node))
    return [name for part in parts if part is not None for name in module_scope_names(part)]


def global_references(table):
    """Names the scope ``table`` and the scopes inside it read from the module."""
    names = {s.get_name() for s in table.get_symbols() if s.is_referenced() and s.is_global()}
    for child in table.get_children():
        names |= global_references(child)
    return names


def layering_violations(source):
    """[(section, name, section defining it)]: each module-level definition read by a section above it."""
    starts = sections(source)
    titles = [title for title, _ in starts]
    tree = ast.parse(source)
    defined = {}   # module-level name -> index of its section
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            targets = [node.name]
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = [n.id for t in getattr(node, "targets", [getattr(node, "target", None)])
                       for n in ast.walk(t) if isinstance(n, ast.Name)]
        else:
            continue
        for name in targets:
            defined.setdefault(name, section_index(starts, node.lineno))
    uses = set()   # (line, name)
    for node in tree.body:
        uses |= {(node.lineno, n.id) for n in module_scope_names(node) if isinstance(n.ctx, ast.Load)}
    for table in symtable.symtable(source, SOURCE_PATH, "exec").get_children():
        uses |= {(table.get_lineno(), name) for name in global_references(table)}
    found = set()
    for line, name in uses:
        user = section_index(starts, line)
        if name in defined and defined[name] > user:
            found.add((titles[user] if user >= 0 else "(top)", name, titles[defined[name]]))
    return sorted(found, key=lambda v: (titles.index(v[0]) if v[0] in titles else -1, v[1]))


def read_source():
    with open(SOURCE_PATH, encoding="utf-8") as f:
        return f.read()


def test_no_section_uses_a_name_defined_in_a_later_section():
    violations = layering_violations(read_source())
    assert not violations, "section uses a name defined further down:\n" + "\n".join(
        "  %s uses %s (defined in %s)" % v for v in violations)


def test_the_docstring_map_lists_the_banners_in_file_order():
    layout = op.__doc__.split("Layout of this file", 1)[1].split("\n\n", 1)[1]
    entries = [line.strip() for line in layout.splitlines() if line.strip()]
    titles = [title for title, _ in sections(read_source())]
    assert len(entries) == len(titles), (entries, titles)
    for entry, title in zip(entries, titles):
        assert entry.lower().startswith(title.lower() + " "), (entry, title)


SAMPLE = '''
import os
# --------------------------------------------------------------------
# Low: first
# --------------------------------------------------------------------
LOW = 1
def in_body(os, x): return os.path, x, HIGH_BODY
def default(x=HIGH_DEFAULT): return x
def shadowed(HIGH_LOCAL): return [HIGH_LOCAL for _ in range(LOW)]
def nested():
    def inner(): return HIGH_NESTED
    return inner
class Base: attribute = HIGH_CLASS
ASSIGNED = [HIGH_ASSIGN + n for n in range(LOW) if n]
COMPREHENDED = [n for n in HIGH_ITER]
LAMBDA = lambda: HIGH_LAMBDA
@HIGH_DECORATOR
class Decorated(Base, metaclass=type): pass
def ok(thing): return thing.HIGH_ATTRIBUTE, LOW, len, os
# --------------------------------------------------------------------
# High: second
# --------------------------------------------------------------------
HIGH_BODY = HIGH_DEFAULT = HIGH_LOCAL = HIGH_NESTED = HIGH_CLASS = HIGH_ASSIGN = HIGH_ITER = 2
HIGH_LAMBDA = HIGH_ATTRIBUTE = HIGH_DECORATOR = 3
def later(): return LOW, in_body
'''


def test_the_check_finds_every_kind_of_use_and_only_uses():
    names = ["HIGH_ASSIGN", "HIGH_BODY", "HIGH_CLASS", "HIGH_DECORATOR", "HIGH_DEFAULT", "HIGH_ITER", "HIGH_LAMBDA",
             "HIGH_NESTED"]
    assert layering_violations(SAMPLE) == [("Low", name, "High") for name in names]


def test_print_is_called_only_where_stdout_is_the_users_terminal():
    """stdout of the relays and of capture is the MCP channel: a bare print() may only sit in a command whose
    stdout is the user's (``auth status``); anything else writes through the channel or to stderr."""
    tree = ast.parse(open(SOURCE_PATH, encoding="utf-8").read())
    callers = set()
    for function in ast.walk(tree):
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(function):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
                    callers.add(function.name)
    module_level = [node for node in tree.body if not isinstance(node, (ast.FunctionDef, ast.ClassDef))
                    for call in ast.walk(node)
                    if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "print"]
    assert callers == {"cmd_auth"} and not module_level


CLASS_LINES = 600   # a class past this holds more than one unit (OAuthClient had once grown to 652)


def test_no_class_passes_600_lines():
    tree = ast.parse(read_source())
    big = [(node.name, node.end_lineno - node.lineno + 1) for node in ast.walk(tree)
           if isinstance(node, ast.ClassDef) and node.end_lineno - node.lineno + 1 > CLASS_LINES]
    assert not big, "classes over %d lines: %s" % (CLASS_LINES, big)


def test_no_module_level_name_is_defined_twice():
    # A second def of a name replaces the first for every caller below it (and for the tests): two sections
    # once each had a client_entry.
    tree = ast.parse(read_source())
    seen, twice = set(), set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names = [node.name]
        elif isinstance(node, ast.Assign):
            names = [target.id for target in node.targets if isinstance(target, ast.Name)]
        else:
            continue
        twice.update(name for name in names if name in seen)
        seen.update(names)
    assert not twice, "defined more than once at module level: %s" % sorted(twice)
