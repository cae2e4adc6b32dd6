"""The import map's rules. The engine (uats_core/, all of it) imports no storage, report, ui, gradio, sqlalchemy,
the `uats` command, the test support or the benchmarks, not even inside a function, and loads no module by an import
string: it must stay usable without the run log or the app, and a string import would hide such a dependency from
readers and from this check. Over the whole project: no import circle, every layer imports only downward (PROJECT
and CAN_IMPORT in testkit/import_map.py, which reads the imports), module by module and folder by folder (FOLDERS
there), and the ui's views (ui/views/) reach no gradio, so that a notebook can use them (VIEWS there). Test modules
import no other test module (imports_of_test_modules), and the tests and the benchmarks never import each other:
what both use is the test support, testkit/ (crossings_of_tests_and_benchmarks).

`python -m testkit.import_map [ROOT]` prints the circles, the imports against the layers, the folders' arrows (and
those back up), the views' breaks and the tests importing tests of a checkout."""

from __future__ import annotations

from pathlib import Path

from testkit.import_map import (
    FOLDERS,
    arrows_back_up,
    circles,
    crossings_of_tests_and_benchmarks,
    folder_arrows,
    import_graph,
    imports_of,
    imports_of_test_modules,
    is_view,
    layer,
    upward_arrows,
    view_rule_breaks,
)

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "uats_core"
FORBIDDEN = ("storage", "reports", "ui", "gradio", "sqlalchemy", "uats", "benchmarks", "testkit")


def _forbidden(what: str) -> bool:
    if what.startswith("import string") or what.startswith("module named by string"):
        return True
    return any(what == f or what.startswith(f + ".") for f in FORBIDDEN)


def engine_files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_engine_imports_no_storage_ui_gradio_sqlalchemy() -> None:
    files = engine_files()
    assert len(files) > 40, f"found only {len(files)} engine modules under {PACKAGE}"
    bad = [f"{p.relative_to(ROOT)}:{line}: {what}" for p in files for line, what in imports_of(p) if _forbidden(what)]
    if bad:
        print("engine modules that reach outside the engine:\n  " + "\n  ".join(bad))
    assert not bad, f"{len(bad)} forbidden import(s) in the engine:\n" + "\n".join(bad)


def test_the_engines_folder_holds_no_launcher() -> None:
    """`python -m uats_core...` launchers were entry points inside the engine's folder (one reached up to the
    benchmarks): the `uats` command (uats/) runs every program now, and `python -m uats` is its launcher."""
    launchers = sorted(str(p.relative_to(ROOT)) for p in PACKAGE.rglob("__main__.py"))
    assert launchers == [], f"launchers inside the engine's folder: {launchers}; make them subcommands of uats/cli.py"


def test_the_checker_sees_function_level_relative_and_string_imports(tmp_path: Path) -> None:
    """The walk itself: an import inside a function, a relative one, and string-based loading are all seen."""
    src = tmp_path / "probe.py"
    src.write_text(
        "import importlib\n"
        "def f():\n    from storage import RunStore\n"
        "def g():\n    from uats import cli\n"
        "SUBS = {'app': 'ui.bench', 'eval': 'uats.eval.cli'}\n"
        "def h(name):\n    return importlib.import_module(name)\n",
        encoding="utf-8",
    )
    found = {what for _, what in imports_of(src, module="uats_core.probe")}
    assert found == {
        "importlib",
        "storage",
        "uats",
        "module named by string 'ui.bench'",
        "module named by string 'uats.eval.cli'",
        "import string <computed>",
    }
    assert {w for w in found if _forbidden(w)} == found - {"importlib"}


# Known circles and arrows: none left. The tests below fail when a new one appears and when a listed one is
# gone: add one here only with the issue that removes it.
KNOWN_CIRCLES: set[frozenset[str]] = set()
KNOWN_ARROWS: set[tuple[str, str]] = set()


def _why(a: str, b: str) -> str:
    return f"{layer(a)} -> {layer(b)}"


def test_no_import_circle_beyond_the_known_ones() -> None:
    graph = import_graph()
    assert len(graph) > 120 and "app" in graph, f"found only {len(graph)} modules"
    found = circles(graph)
    new = sorted(sorted(c) for c in found - KNOWN_CIRCLES)
    gone = sorted(sorted(c) for c in KNOWN_CIRCLES - found)
    assert not new, "import circle(s) among the project's modules:\n" + "\n".join(" <-> ".join(c) for c in new)
    assert not gone, "no longer a circle: remove it from KNOWN_CIRCLES:\n" + "\n".join(" <-> ".join(c) for c in gone)


def test_every_layer_imports_only_downward() -> None:
    found = upward_arrows(import_graph())
    new, gone = sorted(found - KNOWN_ARROWS), sorted(KNOWN_ARROWS - found)
    assert not new, (
        "imports against the layers (engine < storage, report < entry points, ui < testkit < benchmarks):\n"
        + "\n".join(f"{a} -> {b} ({_why(a, b)})" for a, b in new)
    )
    assert not gone, f"no longer imported: remove from KNOWN_ARROWS: {gone}"


def test_the_map_sees_a_circle_through_a_function_and_a_layer_broken(tmp_path: Path) -> None:
    """The graph itself, on a made-up project: a circle closed inside a function and under TYPE_CHECKING,
    `from package import module`, a storage module reaching up into the ui, the report, or an entry point."""
    files = {
        "uats_core/__init__.py": "",
        "uats_core/a.py": "def f():\n    from uats_core import b\n",
        "uats_core/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import f\n",
        "reports/__init__.py": "",
        "reports/stats.py": "X = 1\n",
        "uats/__init__.py": "",
        "uats/cli.py": "from uats_core.a import f\n",
        "storage/__init__.py": "",
        "ui/__init__.py": "",
        "storage/s.py": "from reports.stats import X\nimport ui.v\nfrom uats import cli\n",
        "ui/v.py": "from storage import s\nfrom uats_core.a import f\n",
        "app.py": "import ui.v\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    graph = import_graph(tmp_path)
    assert graph["uats_core.a"] == {"uats_core.b"} and graph["uats_core.b"] == {"uats_core.a"}
    assert circles(graph) == {frozenset({"uats_core.a", "uats_core.b"}), frozenset({"storage.s", "ui.v"})}
    assert upward_arrows(graph) == {("storage.s", "reports.stats"), ("storage.s", "ui.v"), ("storage.s", "uats.cli")}


def test_no_folder_arrow_points_back_up() -> None:
    arrows = folder_arrows(import_graph())
    assert {f for pair in arrows for f in pair} <= set(FOLDERS), f"a folder missing from FOLDERS: {sorted(arrows)}"
    assert ("uats", "storage") in arrows and ("storage", "uats_core") in arrows  # the house stands on its floors
    back = arrows_back_up(arrows)
    assert not back, "folder arrows back up:\n" + "\n".join(f"{a} -> {b}: {n} import(s)" for (a, b), n in back.items())


def test_the_folder_drawing_sees_an_arrow_back_up(tmp_path: Path) -> None:
    """On a made-up project: the engine reaching the run log (as uats_core/entrypoints/ did) and the command
    reaching the app are arrows back up; storage reading the engine is not."""
    files = {
        "uats_core/__init__.py": "",
        "uats_core/e.py": "def f():\n    from storage import s\n",
        "storage/__init__.py": "",
        "storage/s.py": "from uats_core import e\n",
        "uats/__init__.py": "",
        "uats/cli.py": "import ui.v\nfrom storage import s\n",
        "ui/__init__.py": "",
        "ui/v.py": "X = 1\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    arrows = folder_arrows(import_graph(tmp_path))
    assert arrows == {
        ("uats_core", "storage"): 1,
        ("storage", "uats_core"): 1,
        ("uats", "ui"): 1,
        ("uats", "storage"): 1,
    }
    assert arrows_back_up(arrows) == {("uats_core", "storage"): 1, ("uats", "ui"): 1}


def test_the_views_import_no_gradio() -> None:
    views = [m for m in import_graph() if is_view(m)]
    assert len(views) > 20, f"found only {len(views)} modules under ui/views"
    bad = view_rule_breaks()
    assert not bad, "ui/views must work without Gradio:\n" + "\n".join(bad)


def test_the_view_rule_sees_gradio_directly_and_through_the_ui(tmp_path: Path) -> None:
    files = {
        "uats_core/__init__.py": "",
        "storage/__init__.py": "",
        "ui/__init__.py": "",
        "ui/views/__init__.py": "",
        "ui/views/a.py": "from . import b\n",
        "ui/views/b.py": "def f():\n    from ui import shell\n",
        "ui/shell.py": "import gradio as gr\n",
        "ui/views/c.py": "from gradio.utils import x\n",
        "ui/views/d.py": "from storage import s\n",
        "storage/s.py": "X = 1\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert view_rule_breaks(tmp_path) == [
        "ui.views.b -> ui.shell (a view imports only views among the ui)",
        "ui.views.a -> ui.views.b -> ui.shell -> gradio",
        "ui.views.b -> ui.shell -> gradio",
        "ui.views.c -> gradio",
    ]


def test_the_tests_and_the_benchmarks_never_import_each_other(tmp_path: Path) -> None:
    assert crossings_of_tests_and_benchmarks() == []
    files = {
        "tests/__init__.py": "",
        "tests/helper.py": "def f():\n    from benchmarks.serving import free_port\n",
        "tests/test_a.py": "import benchmarks.cli\nfrom testkit.doubles import X\n",
        "benchmarks/__init__.py": "",
        "benchmarks/b.py": "from tests.synthetic import x\nimport testkit.doubles\n",
        "storage/__init__.py": "",
        "storage/s.py": "def f():\n    from tests import conftest\n",
        "testkit/__init__.py": "",
        "testkit/doubles.py": "import tests.helper\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert sorted(crossings_of_tests_and_benchmarks(tmp_path)) == [
        "benchmarks/b.py:1 -> tests.synthetic",
        "storage/s.py:2 -> tests",
        "testkit/doubles.py:1 -> tests.helper",
        "tests/helper.py:2 -> benchmarks.serving",
        "tests/test_a.py:1 -> benchmarks.cli",
    ]
    # and the test support is the benchmarks' alone among the project's layers
    files = {"uats/__init__.py": "", "uats/cli.py": "from testkit.doubles import X\n"}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    graph = import_graph(tmp_path)
    assert upward_arrows(graph) == {("uats.cli", "testkit.doubles")}


def test_no_test_module_imports_another(tmp_path: Path) -> None:
    assert imports_of_test_modules() == []
    files = {
        "tests/__init__.py": "",
        "tests/support.py": "X = 1\n",
        "tests/test_a.py": "from tests.support import X\n",
        "tests/test_b.py": "from tests.test_a import X\ndef f():\n    from . import test_a\n",
        "tests/browser/__init__.py": "",
        "tests/browser/test_c.py": "from .test_d import Y\nfrom ..support import X\n",
        "tests/test_e.py": "import sys\n\ndef g():\n    from test_a import X\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert imports_of_test_modules(tmp_path) == [
        "tests/browser/test_c.py:1 -> tests.browser.test_d",
        "tests/test_b.py:1 -> tests.test_a",
        "tests/test_b.py:3 -> tests.test_a",
        "tests/test_e.py:4 -> test_a",
    ]
