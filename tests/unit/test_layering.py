"""The package's layering holds by itself: few project imports inside functions, no import cycle
at module level, none either when the imports made for the type checker are counted, no module
over 450 lines.

Read from the source (nothing is imported):

* a lazy project import is an ``import ndbchaos...``, ``from ndbchaos... import`` or relative
  import inside a function body (a method, a nested function, a lambda); at most ``MAX_LAZY``;
* a module-level import of the project is an edge of the import graph (``if TYPE_CHECKING:``
  blocks are not: they never run; the type-only graph counts them too, so no two modules name
  each other's types either). ``from P import n`` is an edge to ``P`` (the package's
  namespace is read) and, when ``P.n`` is a module, to ``P.n`` too; ``import P.Q`` is an edge to
  ``P.Q``. So a module that imports a sibling through its package (``from . import sibling``)
  while the package's ``__init__`` imports that module is a cycle: siblings are imported by
  their own name (``from .sibling import x``);
* a module's size is its number of lines.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "ndbchaos"

MAX_LAZY = 30
MAX_LINES = 450

#: modules over MAX_LINES, each with why (none today)
KNOWN_LARGE: set[str] = set()
#: import cycles accepted, each with why (none today)
KNOWN_EDGES: set[tuple[str, str]] = set()


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module of ``package`` by its dotted name."""
    out = {}
    for p in sorted(package.rglob("*.py")):
        parts = list(p.relative_to(package.parent).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return out


def _target(module: str, path: Path, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _ours(name: str) -> bool:
    return name == "ndbchaos" or name.startswith("ndbchaos.")


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports(mods: dict[str, Path], type_checking: bool = False) -> tuple[dict[str, set[str]], list[tuple[str, int]]]:
    """(the module-level import graph, the lazy project imports as (module, line)); with
    ``type_checking`` the graph also has the edges of ``if TYPE_CHECKING:`` blocks."""
    graph: dict[str, set[str]] = {}
    lazy: list[tuple[str, int]] = []
    for name, path in mods.items():
        edges = graph.setdefault(name, set())

        def visit(node, in_function: bool, name=name, path=path, edges=edges) -> None:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                in_function = True
            if isinstance(node, ast.If) and not in_function and not type_checking and _type_checking(node.test):
                for child in node.orelse:
                    visit(child, in_function)
                return
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names if _ours(a.name)]
                if targets and in_function:
                    lazy.append((name, node.lineno))
                elif targets:
                    edges.update(targets)
            elif isinstance(node, ast.ImportFrom):
                target = _target(name, path, node)
                if _ours(target) and in_function:
                    lazy.append((name, node.lineno))
                elif _ours(target):
                    edges.add(target)
                    edges.update(f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in mods)
            for child in ast.iter_child_nodes(node):
                visit(child, in_function)

        visit(ast.parse(path.read_text(), str(path)), False)
        edges.discard(name)
    return graph, lazy


@lru_cache(maxsize=1)
def _package() -> tuple[dict[str, Path], dict[str, set[str]], list[tuple[str, int]]]:
    mods = modules()
    return (mods, *imports(mods))


@lru_cache(maxsize=1)
def _typed_graph() -> dict[str, set[str]]:
    return imports(_package()[0], type_checking=True)[0]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root] & graph.keys())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w] & graph.keys()))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_at_most_30_project_imports_inside_functions():
    _, _, lazy = _package()
    where = "\n".join(f"{m}:{line}" for m, line in lazy)
    assert len(lazy) <= MAX_LAZY, f"{len(lazy)} project imports inside functions (at most {MAX_LAZY}):\n{where}"


def test_no_import_cycle_at_module_level():
    _, graph, _ = _package()
    graph = {a: {b for b in bs if (a, b) not in KNOWN_EDGES} for a, bs in graph.items()}
    assert cycles(graph) == []


def test_no_import_cycle_counting_type_checking_imports():
    """An engine acts on cluster handles and a handle holds an engine: the handle names only the
    protocol it calls (``handle.HandleEngine``), the vocabulary both speak is below both
    (``ndbchaos.vocabulary``), so the types do not go round either."""
    assert cycles(_typed_graph()) == []


def test_no_module_over_450_lines():
    sizes = {name: len(path.read_text().splitlines()) for name, path in _package()[0].items()}
    over = {name: n for name, n in sorted(sizes.items()) if n > MAX_LINES and name not in KNOWN_LARGE}
    assert over == {}


#: the readers of a run (what it recorded, how it was judged) and the player they must never reach:
#: a report, a gate or a summary is made from the saved record and verdict alone
READERS = ("ndbchaos.report", "ndbchaos.gate", "ndbchaos.commands.summary", "ndbchaos.commands.report",
           "ndbchaos.outcome", "ndbchaos.record", "ndbchaos.recording")
PLAYER = ("ndbchaos.scenario", "ndbchaos.driver", "ndbchaos.soak", "ndbchaos.operations", "ndbchaos.fixtures")


def _under(name: str, prefixes) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def reach(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every module ``start`` imports, directly or through others, at module level."""
    seen, todo = set(), [start]
    while todo:
        for b in graph.get(todo.pop(), ()):
            if b not in seen:
                seen.add(b)
                todo.append(b)
    return seen


def _all_imports(path: Path, module: str) -> set[str]:
    """Every project module a file names in an import, inside functions and TYPE_CHECKING too."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if _ours(a.name))
        elif isinstance(node, ast.ImportFrom):
            target = _target(module, path, node)
            if _ours(target):
                out.add(target)
                out.update(f"{target}.{a.name}" for a in node.names)
    return out


def test_the_readers_of_a_run_never_reach_the_player():
    mods, graph, _ = _package()
    readers = [m for m in mods if _under(m, READERS)]
    assert len(readers) >= 10, readers
    bad = {m: sorted(x for x in reach(graph, m) | _all_imports(mods[m], m) if _under(x, PLAYER)) for m in readers}
    assert {m: x for m, x in bad.items() if x} == {}


def test_the_known_exceptions_are_still_there():
    """An exception that no longer holds is taken out of the lists above."""
    mods, graph, _ = _package()
    assert all(b in graph[a] for a, b in KNOWN_EDGES)
    assert all(len(mods[name].read_text().splitlines()) > MAX_LINES for name in KNOWN_LARGE)


def test_the_checks_find_what_they_look_for(tmp_path):
    """The three measures on a small package made here: a lazy import, a cycle through a
    package's __init__ (a sibling imported through the package), one behind TYPE_CHECKING (none)."""
    pkg = tmp_path / "ndbchaos"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from .a import A\n")
    (pkg / "sub" / "a.py").write_text("from . import b\nA = 1\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from ..c import C\n    return C\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .sub import A\nC = 2\n")
    graph, lazy = imports(modules(pkg))
    assert lazy == [("ndbchaos.sub.b", 2)]
    assert graph["ndbchaos.sub.a"] == {"ndbchaos.sub", "ndbchaos.sub.b"}
    assert graph["ndbchaos.c"] == set()
    assert cycles(graph) == [["ndbchaos.sub", "ndbchaos.sub.a"]]
    (pkg / "sub" / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..c import C\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .sub.b import B\nC = 2\n")
    assert cycles(imports(modules(pkg))[0]) == []
    typed, _ = imports(modules(pkg), type_checking=True)
    assert typed["ndbchaos.c"] == {"ndbchaos.sub.b"}
    assert cycles(typed) == [["ndbchaos.c", "ndbchaos.sub.b"]]


def test_the_player_stays_small():
    """The player (a Run: ndbchaos.recording) does the run's actions; what it observed is its
    recorder's. At most 12 public methods, as the structure asks (issue 40)."""
    from ndbchaos.scenario import ScenarioRun
    public = [n for n, v in vars(ScenarioRun).items() if not n.startswith("_") and callable(v)]
    assert len(public) <= 12, public
