"""The engine (uats_core outside uats_core/entrypoints/) imports no storage, ui, gradio or sqlalchemy, not even
inside a function, and loads no module by an import string: it must stay usable without the run log or the
app, and a string import would hide such a dependency from readers and from this check. The `__main__`
modules are launchers: they may import only uats_core.entrypoints (and sys)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "uats_core"
FORBIDDEN = ("storage", "ui", "gradio", "sqlalchemy", "uats_core.entrypoints")
DYNAMIC_IMPORTERS = {"import_module", "__import__"}  # importlib.import_module(...), __import__(...)
# A dotted path such as "ui.bench" held for a later import (a bare "gradio" may be a distribution name, as in
# the doctor's version list, and loading it would still need an import_module call, which is caught).
MODULE_STRING = re.compile(r"^(storage|ui|gradio|sqlalchemy)(\.[A-Za-z_]\w*)+(:\w+)?$")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(module: str, node: ast.ImportFrom, is_package: bool) -> list[str]:
    """The absolute module names an ImportFrom brings in (relative levels resolved; `from . import x` -> pkg.x)."""
    if node.level == 0:
        base = node.module or ""
    else:
        package = module.split(".") if is_package else module.split(".")[:-1]
        package = package[:len(package) - (node.level - 1)]
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


def _forbidden(what: str) -> bool:
    if what.startswith("import string") or what.startswith("module named by string"):
        return True
    return any(what == f or what.startswith(f + ".") for f in FORBIDDEN)


def engine_files() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py")
                  if "entrypoints" not in p.relative_to(PACKAGE).parts and p.name != "__main__.py")


def test_engine_imports_no_storage_ui_gradio_sqlalchemy() -> None:
    files = engine_files()
    assert len(files) > 40, f"found only {len(files)} engine modules under {PACKAGE}"
    bad = [f"{p.relative_to(ROOT)}:{line}: {what}" for p in files for line, what in imports_of(p) if _forbidden(what)]
    if bad:
        print("engine modules that reach outside the engine:\n  " + "\n  ".join(bad))
    assert not bad, f"{len(bad)} forbidden import(s) in the engine:\n" + "\n".join(bad)


def test_main_modules_only_launch_entry_points() -> None:
    launchers = sorted(PACKAGE.rglob("__main__.py"))
    assert launchers, "no __main__ launchers found"
    bad = [f"{p.relative_to(ROOT)}:{line}: {what}" for p in launchers for line, what in imports_of(p)
           if what != "sys" and not what.startswith("uats_core.entrypoints.")]
    assert not bad, "a __main__ launcher does more than call an entry point:\n" + "\n".join(bad)


def test_the_checker_sees_function_level_relative_and_string_imports(tmp_path: Path) -> None:
    """The walk itself: an import inside a function, a relative one, and string-based loading are all seen."""
    src = tmp_path / "probe.py"
    src.write_text("import importlib\n"
                   "def f():\n    from storage import RunStore\n"
                   "def g():\n    from .entrypoints import cli\n"
                   "SUBS = {'app': 'ui.bench'}\n"
                   "def h(name):\n    return importlib.import_module(name)\n", encoding="utf-8")
    found = {what for _, what in imports_of(src, module="uats_core.probe")}
    assert found == {"importlib", "storage", "uats_core.entrypoints", "module named by string 'ui.bench'",
                     "import string <computed>"}
    assert {w for w in found if _forbidden(w)} == found - {"importlib"}
