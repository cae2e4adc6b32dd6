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
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }


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
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", None) == "page_script"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
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
    done = subprocess.run(
        [_eslint(), "--max-warnings", "0", "ui/js"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def _header_version(path: Path) -> str:
    """'4.1.1' from a plotly.js bundle's licence header ("plotly.js v4.1.1" or
    "plotly.js (basic - minified) v4.1.1")."""
    head = path.read_text(encoding="utf-8")[:300]
    found = re.search(r"plotly\.js\b[^\n]*?\bv(\d+\.\d+\.\d+)", head)
    assert found, (path, head)
    return found.group(1)


def test_the_page_bundle_is_the_packages_plotly_and_draws_every_trace_the_app_sends(tmp_path: Path) -> None:
    """The page loads npm's basic build of plotly.js (ui/static/README.md): the Python package's version, so a
    figure means what the exports (the package's full bundle) draw, and holding every trace type of every figure the
    app sends to a page plot: the tree, Figure 1 with shadow passes, the cost and knob charts, a comparison."""
    from storage import RunStore
    from testkit.doubles import record_synthetic
    from ui.views.charts import cost_figure, knobs_figure
    from ui.views.comparison import compare_figures
    from ui.views.decisions import step_of
    from ui.views.export import PLOTLY_JS
    from ui.views.figure1 import step_figure
    from ui.views.treedata import RunData
    from ui.views.treefig import tree_figure
    from ui.views.treeview import ViewOptions
    from ui.web_guard import PAGE_PLOTLY_JS

    assert _header_version(PAGE_PLOTLY_JS) == _header_version(PLOTLY_JS)
    bundle = PAGE_PLOTLY_JS.read_text(encoding="utf-8")
    registered = set(re.findall(r'moduleType:"trace",name:"(\w+)"', bundle))
    assert {"scatter", "bar"} <= registered
    store = RunStore(str(tmp_path / "runs.db"))
    a = RunData.load(store, record_synthetic(store, "a" * 32, n_nodes=120, budget=8, seed=3))
    b = RunData.load(store, record_synthetic(store, "b" * 32, n_nodes=120, budget=8, seed=4))
    state = a.state_at(None)
    nid = next(i for i in state.nodes if i and step_of(a, i) is not None)
    shadow = {c.node_id: {"mc_scores": [0.5, 0.6, 0.7], "var": 0.01, "ood": False} for c in step_of(a, nid).candidates}
    rows = list(a.iterations.values())
    figures = [
        tree_figure(state, ViewOptions(), selected=nid),
        step_figure(step_of(a, nid), selected=nid, shadow=shadow),
        cost_figure(rows),
        knobs_figure(rows),
        *compare_figures(a, b, None),
    ]
    sent = {t.get("type", "scatter") for fig in figures if isinstance(fig, dict) for t in fig.get("data", [])}
    assert {"scatter", "bar"} <= sent and sent <= registered, sent - registered
