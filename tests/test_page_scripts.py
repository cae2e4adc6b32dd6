"""The page's JavaScript lives in ui/js/*.js, never in Python strings: each file is loaded by the app
(ui/views/scripts.py page_script), shipped in the wheel (pyproject's package-data) and clean under ESLint
(eslint.config.mjs; ./setup.sh --dev installs it from package.json, and on CI it must be there)."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "ui" / "js"
# what marks a string as JavaScript: a declaration or arrow function, and a statement or the DOM
JS_CODE = re.compile(r"(\bconst |\blet |\bfunction\s*\w*\s*\(|=>)")
JS_CONTEXT = re.compile(r"(;\s*$|;\n|\bdocument\.|\bwindow\.|\bPlotly\.)", re.M)


def _docstrings(tree: ast.AST) -> set[int]:
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}


def _python_strings_with_javascript() -> list[str]:
    found = []
    for path in sorted((ROOT / "ui").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.JoinedStr):
                text = "".join(v.value for v in node.values if isinstance(v, ast.Constant))
                docs |= {id(v) for v in node.values}
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                text = node.value
            else:
                continue
            if JS_CODE.search(text) and JS_CONTEXT.search(text):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_no_python_string_holds_javascript() -> None:
    assert _python_strings_with_javascript() == []


def test_the_detector_finds_javascript_in_a_string(tmp_path: Path) -> None:
    assert JS_CODE.search("const a = 1;\n") and JS_CONTEXT.search("const a = 1;\n")
    assert JS_CODE.search("() => document.querySelector('#x')") and JS_CONTEXT.search("() => document.body")
    assert not (JS_CODE.search("#notice { top: 0; }") and JS_CONTEXT.search("#notice { top: 0; }"))


def _loaded_names() -> set[str]:
    names = set()
    for path in (ROOT / "ui").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "page_script" and node.args
                    and isinstance(node.args[0], ast.Constant)):
                names.add(node.args[0].value)
    return names


def test_every_script_is_loaded_by_the_app_and_packaged() -> None:
    files = {p.name for p in SCRIPTS.glob("*.js")}
    assert files and files == _loaded_names()
    package_data = (ROOT / "pyproject.toml").read_text(encoding="utf-8").split("[tool.setuptools.package-data]")[1]
    assert re.search(r'^ui = \[.*"js/\*\.js"', package_data, re.M)
    from ui.views.scripts import page_script
    assert all(page_script(name) == (SCRIPTS / name).read_text(encoding="utf-8") for name in files)


def _eslint() -> str:
    path = ROOT / "node_modules" / ".bin" / "eslint"
    if path.is_file() and shutil.which("node"):
        return str(path)
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail("ESLint is missing on CI: ./setup.sh --dev installs it (npm ci, package.json)")
    pytest.skip("needs ESLint: ./setup.sh --dev (or `npm ci`) installs it into node_modules/")


def test_the_page_scripts_pass_eslint() -> None:
    done = subprocess.run([_eslint(), "--max-warnings", "0", "ui/js"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
