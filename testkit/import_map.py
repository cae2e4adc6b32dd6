"""The project's import map, read with `ast` from every import statement (function-level and TYPE_CHECKING ones
too, relative ones resolved, string-based loading flagged): the module graph, its circles, the layers and the
folders' floors, the views' rule, and the imports between tests/ and the benchmarks. tests/test_import_map.py
holds the project to its rules; `python -m testkit.import_map [ROOT]` prints the map of a checkout."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

DYNAMIC_IMPORTERS = {"import_module", "__import__"}  # importlib.import_module(...), __import__(...)
# A dotted path such as "ui.bench" held for a later import (a bare "gradio" may be a distribution name, as in
# the doctor's version list, and loading it would still need an import_module call, which is caught).
MODULE_STRING = re.compile(r"^(storage|reports|ui|gradio|sqlalchemy|uats|benchmarks|testkit)(\.[A-Za-z_]\w*)+(:\w+)?$")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(module: str, node: ast.ImportFrom, is_package: bool) -> list[str]:
    """The absolute module names an ImportFrom brings in (relative levels resolved; `from . import x` -> pkg.x)."""
    if node.level == 0:
        base = node.module or ""
    else:
        package = module.split(".") if is_package else module.split(".")[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join(package + ([node.module] if node.module else []))
    return [base] if node.module else [f"{base}.{a.name}" for a in node.names]


def imports_of(path: Path, module: str | None = None) -> list[tuple[int, str]]:
    """(line, what) for every import in the file, at any depth, plus string-based loading. `module`: the
    file's dotted name (default: from its place under the repository), for resolving relative imports."""
    module = module or _module_name(path)
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            found += [(node.lineno, name) for name in _absolute(module, node, path.name == "__init__.py")]
        elif isinstance(node, ast.Call):
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
            if name in DYNAMIC_IMPORTERS:
                arg = node.args[0] if node.args else None
                target = arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else "<computed>"
                found.append((node.lineno, f"import string {target}"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and MODULE_STRING.match(node.value):
            found.append((node.lineno, f"module named by string {node.value!r}"))
    return found


# ------------------------------------------------------------------------------------------ the whole project
# Import circles and layers over every module of the project (uats_core/, storage/, reports/, uats/, ui/,
# uats_studio/, testkit/, benchmarks/, app.py), counting every import statement: function-level and TYPE_CHECKING
# ones too, since a reader follows them all. Layers, lowest first: the engine (uats_core/) < storage (storage/) and
# the report (reports/: tables, prose and figures from rows) < the entry points (uats/, the `uats` command and its
# programs; app.py) and the ui (ui/, uats_studio/) < the test support (testkit/: doubles, synthetic runs, the app
# served) < the benchmarks. A layer imports only its own and lower ones; storage and the report do not import each
# other (storage hands the report its rows), nor do entry points and the ui (app.py, the checkout's launcher of the
# ui, aside). Nothing imports the benchmarks; only they import the test support.
PROJECT = ("uats_core", "storage", "reports", "uats", "ui", "uats_studio", "testkit", "benchmarks")
CAN_IMPORT = {
    "engine": {"engine"},
    "storage": {"engine", "storage"},
    "report": {"engine", "report"},
    "ui": {"engine", "storage", "report", "ui"},
    "entry": {"engine", "storage", "report", "entry"},
    "support": {"engine", "storage", "report", "entry", "ui", "support"},
    "bench": {"engine", "storage", "report", "entry", "ui", "support", "bench"},
}
# module -> the layer it launches, which it may import
LAUNCHERS = {"app": "ui"}


def project_modules(root: Path = ROOT) -> dict[str, Path]:
    files = [p for d in PROJECT for p in (root / d).rglob("*.py")] + [p for p in [root / "app.py"] if p.exists()]
    return {".".join(_module_name_under(p, root)): p for p in sorted(files)}


def _module_name_under(path: Path, root: Path) -> list[str]:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def _named_modules(path: Path, module: str) -> list[str]:
    """Every module an import statement in the file names, at any depth; `from x import n` as `x.n` (which
    resolves to x itself when n is not a module)."""
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, node, path.name == "__init__.py")
            names += [f"{base[0]}.{a.name}" for a in node.names] if node.module else base
    return names


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """module -> the project modules it imports (the longest project module prefix of each imported name)."""
    mods = project_modules(root)
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for module, path in mods.items():
        for name in _named_modules(path, module):
            parts = name.split(".")
            while parts and ".".join(parts) not in mods:
                parts.pop()
            if parts and ".".join(parts) != module:
                graph[module].add(".".join(parts))
    return graph


def circles(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: set[frozenset[str]] = set()

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = {stack.pop()}
            while v not in comp:
                comp.add(stack.pop())
            if len(comp) > 1:
                found.add(frozenset(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def layer(module: str) -> str:
    parts = module.split(".")
    if parts[0] == "benchmarks":
        return "bench"
    if parts[0] == "testkit":
        return "support"
    if module in LAUNCHERS or parts[0] == "uats":
        return "entry"
    # uats_studio, the notebook API, is a part of the ui held to the views' rule (below)
    return {"uats_core": "engine", "storage": "storage", "reports": "report", "ui": "ui", "uats_studio": "ui"}[parts[0]]


def upward_arrows(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """(importer, imported) pairs that break the layer rules."""

    def allowed(a: str, b: str) -> bool:
        return layer(b) in CAN_IMPORT[layer(a)] or LAUNCHERS.get(a) == layer(b)

    return {(a, b) for a, targets in graph.items() for b in targets if not allowed(a, b)}


# The same rule drawn as a house, folder by folder: a folder (a top-level package, or app.py) imports only folders
# on floors below its own, so a drawing of the folders and their arrows has none pointing back up. FOLDERS: each
# folder's floor, lowest first; folders on one floor (the command and the app) do not import each other.
FOLDERS = {
    "uats_core": 0,
    "storage": 1,
    "reports": 1,
    "uats": 2,
    "ui": 2,
    "uats_studio": 3,
    "app": 3,
    "testkit": 4,
    "benchmarks": 5,
}


def folder_arrows(graph: dict[str, set[str]]) -> dict[tuple[str, str], int]:
    """(importing folder, imported folder) -> how many module imports draw that arrow."""
    arrows: dict[tuple[str, str], int] = {}
    for a, targets in graph.items():
        for b in targets:
            fa, fb = a.split(".")[0], b.split(".")[0]
            if fa != fb:
                arrows[(fa, fb)] = arrows.get((fa, fb), 0) + 1
    return arrows


def arrows_back_up(arrows: dict[tuple[str, str], int]) -> dict[tuple[str, str], int]:
    """The folder arrows that do not point down a floor."""
    return {(a, b): n for (a, b), n in arrows.items() if FOLDERS[b] >= FOLDERS[a]}


# The ui's views (ui/views/: figures, tables, texts) work without Gradio, so that a notebook or a script can draw a
# run: among the ui's modules they import only views, and no module they reach, in the project or directly,
# imports gradio.
VIEWS = ("ui.views", "uats_studio")  # the notebook API draws with the views, and like them needs no Gradio


def is_view(module: str) -> bool:
    return any(module == v or module.startswith(v + ".") for v in VIEWS)


def _imports_gradio(path: Path, module: str) -> bool:
    return any(n == "gradio" or n.startswith("gradio.") for n in _named_modules(path, module))


def _chain_to(graph: dict[str, set[str]], start: str, targets: set[str]) -> list[str] | None:
    """The shortest import chain from `start` to a module in `targets` (start itself counts), or None."""
    parent: dict[str, str | None] = {start: None}
    queue = [start]
    for v in queue:
        if v in targets:
            chain = [v]
            while parent[chain[-1]] is not None:
                chain.append(parent[chain[-1]])  # type: ignore[arg-type]
            return chain[::-1]
        for w in sorted(graph[v]):
            if w not in parent:
                parent[w] = v
                queue.append(w)
    return None


def view_rule_breaks(root: Path = ROOT) -> list[str]:
    """Each view that imports a ui module outside the views, or reaches gradio, with the import chain."""
    mods, graph = project_modules(root), import_graph(root)
    with_gradio = {m for m, path in mods.items() if _imports_gradio(path, m)}
    bad = [
        f"{a} -> {b} (a view imports only views among the ui)"
        for a in sorted(graph)
        if is_view(a)
        for b in sorted(graph[a])
        if layer(b) == "ui" and not is_view(b)
    ]
    for m in sorted(x for x in graph if is_view(x)):
        chain = _chain_to(graph, m, with_gradio)
        if chain:
            bad.append(" -> ".join(chain) + " -> gradio")
    return bad


# The tests and the benchmarks never import each other, either way: what both use (doubles, synthetic runs, the app
# served, Chromium) is the test support, testkit/, a layer of the project above the ui (only the benchmarks import it
# there, CAN_IMPORT); no module of the project imports tests/, and tests/ runs a benchmark as a program
# (testkit.bench_runs: `python -m benchmarks ...`). Before testkit/ the two folders imported each other, 3 imports
# one way and 15 the other: a circle between folders that the map above, which leaves tests/ out, did not see.
def _imports_with_lines(path: Path, module: str) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            found += [(node.lineno, n) for n in _absolute(module, node, path.name == "__init__.py")]
    return found


def _under(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def crossings_of_tests_and_benchmarks(root: Path = ROOT) -> list[str]:
    """'path:line -> module' for each import of the benchmarks by a module under tests/, and of tests/ by a module
    of the project (the benchmarks and the test support among them)."""
    bad = []
    for path in sorted((root / "tests").rglob("*.py")):
        bad += [
            f"{path.relative_to(root)}:{line} -> {n}"
            for line, n in _imports_with_lines(path, ".".join(_module_name_under(path, root)))
            if _under(n, "benchmarks")
        ]
    for module, path in project_modules(root).items():
        bad += [
            f"{path.relative_to(root)}:{line} -> {n}"
            for line, n in _imports_with_lines(path, module)
            if _under(n, "tests")
        ]
    return bad


# Test modules (tests/**/test_*.py) import no other test module (tests/conftest.py says so): what two of them share
# lives in the test support, testkit/ (doubles, serving, run_pairs, ...), or, for fixtures, in conftest.py, so that
# running one test file never depends on another's contents or collection.
def imports_of_test_modules(root: Path = ROOT) -> list[str]:
    """'path:line -> module' for each import of a test module by a module under tests/."""
    bad = []
    for path in sorted((root / "tests").rglob("*.py")):
        module = ".".join(_module_name_under(path, root))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = _absolute(module, node, path.name == "__init__.py")
            else:
                continue
            # a test module by its package path, or by its bare name after a sys.path insert
            bad += [
                f"{path.relative_to(root)}:{node.lineno} -> {n}"
                for n in names
                if (n.startswith("tests.") and n.rsplit(".", 1)[-1].startswith("test_")) or n.startswith("test_")
            ]
    return bad


if __name__ == "__main__":  # the counts for a checkout: python -m testkit.import_map [ROOT]
    import sys

    where = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else ROOT
    g = import_graph(where)
    cs, arrows = circles(g), upward_arrows(g)
    print(f"{where}: {len(g)} modules, {sum(map(len, g.values()))} imports")
    print(f"circles: {len(cs)}")
    for c in sorted(sorted(c) for c in cs):
        print("  " + " <-> ".join(c))
    print(f"upward arrows: {len(arrows)}")
    for a, b in sorted(arrows):
        print(f"  {a} -> {b}")
    folders = folder_arrows(g)
    known = set(f for pair in folders for f in pair) <= set(FOLDERS)
    back = arrows_back_up(folders) if known else folders
    print(
        f"folder arrows: {len(folders)} ({sum(folders.values())} imports), back up: {len(back)} "
        f"({sum(back.values())} imports)"
    )
    for (a, b), n in sorted(folders.items(), key=lambda kv: (FOLDERS.get(kv[0][0], 9), kv[0])):
        print(f"  {a} -> {b}: {n}" + ("  BACK UP" if (a, b) in back else ""))
    views = view_rule_breaks(where)
    print(f"views that reach outside the views or gradio: {len(views)}")
    for line in views:
        print("  " + line)
    inside = imports_of_test_modules(where)
    print(f"test modules imported by tests: {len(inside)}")
    for line in inside:
        print("  " + line)
    across = crossings_of_tests_and_benchmarks(where)
    print(f"imports between tests/ and benchmarks/ (or of tests/ by the project): {len(across)}")
    for line in across:
        print("  " + line)
