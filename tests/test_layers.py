"""The layers of causantic, declared once and checked by reading every import (issue 14).

A module may import its own layer or a lower one, never a higher one:

    entry  cli, __main__, _bootstrap: argument parsing, dispatch, the zipapp's start
    front  mcp_server, mcp_front, mcp_answers, claude/, dashboard/: one client each
    app    retrieval/, ingest/, memory/, lessons/, topics/, transfer/, ...
    store  store/: the SQLite file; all SQL for the schema lives here
    leaf   errors, records, config, transcripts/, redact, model/, ...: no SQLite

Imports inside functions count too: deferring an import keeps a hook fast, it does not make
an upward dependency right. The few that are allowed are in DEFERRED_OK with their reason.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "causantic"

ENTRY, FRONT, APP, STORE, LEAF = range(5)
LAYER_NAMES = ("entry", "front", "app", "store", "leaf")

#: The one table: a module's layer is that of its longest matching name (a package name
#: covers its modules). Names are relative to `causantic`; "" is the package itself.
LAYERS: dict[str, int] = {
    "cli": ENTRY, "__main__": ENTRY, "_bootstrap": ENTRY,
    "mcp_server": FRONT, "mcp_front": FRONT, "mcp_answers": FRONT,
    "claude": FRONT, "dashboard": FRONT,
    "retrieval": APP, "ingest": APP, "derive_state": APP, "memory": APP, "lessons": APP, "topics": APP,
    "transfer": APP, "forget": APP, "scorecard": APP,
    "store": STORE,
    "": LEAF, "errors": LEAF, "records": LEAF, "tokens": LEAF, "markers": LEAF,
    "wording": LEAF, "timestamps": LEAF, "progress": LEAF, "fsutil": LEAF, "config": LEAF, "redact": LEAF,
    "chunk": LEAF, "blocks": LEAF, "transcripts": LEAF, "model": LEAF, "buildinfo": LEAF,
}

#: Upward imports allowed, each deferred (inside a function) for a stated reason.
DEFERRED_OK: dict[tuple[str, str], str] = {}

#: What `store/` may import besides itself: the store takes plain values, never the reader,
#: the chunker or anything that uses it.
STORE_MAY_IMPORT = {
    "errors", "records", "tokens", "chunk",
    "redact",  # the `create_redaction_meta` migration records `redact.RULES_VERSION`
    "fsutil",  # stdlib-only: the database's folder is made private like every other one
}

#: Module cycles allowed through a deferred import, with the reason.
CYCLES_OK: dict[frozenset[str], str] = {
    frozenset({"claude.hooks", "claude.lesson_hook"}):
        "hooks dispatches PostToolUse to lesson_hook, loaded only for that event (hook fast path)",
}


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The module (relative name) that `causantic.<name>` loads, or None."""
    while name not in MODULES:
        if not name:
            return None
        name = name.rpartition(".")[0]
    return name


def _imports() -> list[tuple[str, str, bool, int]]:
    """(importer, imported, deferred, line) for every import of a causantic module."""
    edges = []
    for mod, path in MODULES.items():
        base = mod if path.name == "__init__.py" else mod.rpartition(".")[0]

        def visit(node: ast.AST, deferred: bool, mod: str = mod, base: str = base) -> None:
            for child in ast.iter_child_nodes(node):
                inner = deferred or isinstance(
                    child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                names: list[str] = []
                if isinstance(child, ast.Import):
                    names = [a.name for a in child.names]
                elif isinstance(child, ast.ImportFrom):
                    if child.level:
                        origin = base
                        for _ in range(child.level - 1):
                            origin = origin.rpartition(".")[0]
                        origin = "causantic." + ".".join(p for p in (origin, child.module) if p)
                    else:
                        origin = child.module or ""
                    names = [f"{origin}.{a.name}" for a in child.names]
                for name in names:
                    if name == "causantic" or name.startswith("causantic."):
                        target = _resolve(name.removeprefix("causantic").lstrip("."))
                        if target is not None and target != mod:
                            edges.append((mod, target, deferred, child.lineno))
                visit(child, inner)

        visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return edges


IMPORTS = _imports()


def layer_of(mod: str) -> int:
    name = mod
    while name not in LAYERS:
        if not name:
            raise AssertionError(f"causantic.{mod} has no layer in LAYERS")
        name = name.rpartition(".")[0]
    return LAYERS[name]


def _cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return found


def test_the_scan_sees_the_imports():
    edges = {(a, b, deferred) for a, b, deferred, _ in IMPORTS}
    assert ("store.chunks", "chunk", False) in edges  # from causantic.chunk import Chunk
    assert ("cli", "errors", False) in edges
    assert ("claude.hooks", "claude.lesson_hook", True) in edges  # inside a function
    assert ("store", "store.db", False) in edges  # a relative or package import


def test_every_module_has_a_layer():
    for mod in MODULES:
        layer_of(mod)


def test_no_module_imports_a_higher_layer():
    wrong = []
    for mod, target, deferred, line in IMPORTS:
        if layer_of(target) < layer_of(mod):
            if deferred and (mod, target) in DEFERRED_OK:
                continue
            wrong.append(f"causantic/{mod.replace('.', '/')}:{line} ({LAYER_NAMES[layer_of(mod)]})"
                         f" imports {target} ({LAYER_NAMES[layer_of(target)]})")
    assert not wrong, "\n".join(wrong)


def test_the_store_imports_only_the_store_and_plain_values():
    wrong = sorted({f"{mod} imports {target}" for mod, target, _, _ in IMPORTS
                    if mod.split(".")[0] == "store" and target.split(".")[0] != "store"
                    and target not in STORE_MAY_IMPORT})
    assert not wrong, "\n".join(wrong)


def test_no_import_cycles():
    top: dict[str, set[str]] = defaultdict(set)
    packages: dict[str, set[str]] = defaultdict(set)
    every: dict[str, set[str]] = defaultdict(set)
    for mod, target, deferred, _ in IMPORTS:
        every[mod].add(target)
        if not deferred:
            top[mod].add(target)
            a, b = mod.split(".")[0], target.split(".")[0]
            if a != b:
                packages[a].add(b)
    assert _cycles(top) == []
    assert _cycles(packages) == []
    assert [sorted(c) for c in _cycles(every) if c not in CYCLES_OK] == []


def _deferred_without_reason() -> list[str]:
    """Imports inside a function with no comment on their line or above their group."""
    missing = []
    for path in MODULES.values():
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        inner: dict[int, ast.AST] = {}
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for sub in ast.walk(node):
                    if isinstance(sub, (ast.Import, ast.ImportFrom)):
                        inner[sub.lineno] = sub
        ends = {node.end_lineno: line for line, node in inner.items()}
        for line in sorted(inner):
            first = line
            while first - 1 in ends:  # consecutive imports share the comment above the first
                first = ends[first - 1]
            if "#" in lines[line - 1] or lines[first - 2].lstrip().startswith("#"):
                continue
            missing.append(f"causantic/{path.relative_to(PACKAGE)}:{line}: {lines[line - 1].strip()}")
    return missing


def test_every_deferred_import_says_why():
    """An import inside a function is there for the hook fast path, a heavy dependency, MCP or
    zipapp start, or a cycle: a comment on its line or above its group of imports says which.
    Anything else belongs at the top of the module."""
    assert _deferred_without_reason() == []
