"""Runs of other tools in Chromium, at 1280×800: the Runs tab imports a file of llm-reasoners and TreeQuest written by
the tools' own code (a bare tree log and a treequest.render export, neither holding the question: it is typed in the
form, with the gold answer) and a search-and-learn row (testkit/tool_files.py) from the server's --imports-dir through
the worker pool, the Search tab opens each import, steps back through its iterations, says it stored no MC passes, and
shadow-scores it with the embedded PRM of the server's list until every node carries a shadow R̄ and σ². With
UATS_SCREENSHOTS=1 each leaves artifacts/import-<tool>-1280x800.png and, for the typed question,
import-form-<tool>-1280x800.png (docs/img holds copies)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from testkit.tool_files import GOLD, LLM_REASONERS_QUESTION, QUESTION

from .apps import app_page, imports_app
from .pages import ARTIFACTS, LAPTOP, SCREENSHOTS, choose, fill, open_run, photo, wait_notice, wait_plot, wait_text

pytestmark = pytest.mark.browser

EXPECTED = {  # nodes after iteration 1, iterations, the run's answer (a bare llm-reasoners tree log states none)
    "llm-reasoners": (4, 10, None),
    "search-and-learn": (3, 4, "24"),
    "treequest": (1, 10, "24"),
}
TYPED = {"llm-reasoners": (LLM_REASONERS_QUESTION, "10"), "treequest": (QUESTION, GOLD)}  # question, gold answer


@pytest.fixture(scope="module")
def import_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The app with a real worker pool and an import folder holding one file of each tool."""
    from storage import RunStore
    from testkit.tool_files import write_tool_files

    base = tmp_path_factory.mktemp("import-app")
    files = write_tool_files(base / "imports")
    store = RunStore(str(base / "runs.db"))
    with imports_app(base, store) as url:
        yield {"url": url, "store": store, "files": files}


@pytest.fixture()
def laptop(context_for: Callable[[dict[str, int]], Any], import_app: dict[str, Any]) -> Iterator[Any]:
    with app_page(context_for(LAPTOP), import_app["url"]) as pg:
        yield pg


def _tree_meta(pg: Any, key: str) -> Any:
    return pg.evaluate(f"() => (document.querySelector('#tree .uats-plot')._uatsMeta || {{}})['{key}']")


def _finished(store: Any, tool: str, timeout_s: float = 180) -> dict[str, Any]:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        runs = store.list_runs(method=tool)
        if runs and runs[0]["status"] not in ("queued", "running"):
            return runs[0]
        time.sleep(0.3)
    raise AssertionError(f"the {tool} import did not end within {timeout_s:.0f} s")


@pytest.mark.parametrize("tool", list(EXPECTED))
def test_an_imported_run_is_stepped_through_and_shadow_scored(
    tool: str, laptop: Any, import_app: dict[str, Any]
) -> None:
    pg, store = laptop, import_app["store"]
    first, iterations, answer = EXPECTED[tool]
    pg.get_by_role("tab", name="Runs").click()
    choose(pg, "import-tool", tool)
    choose(pg, "import-file", import_app["files"][tool].name)
    question, gold = TYPED.get(tool, ("", ""))
    fill(pg, "import-question", question)
    fill(pg, "import-gold", gold)
    if SCREENSHOTS and tool in TYPED:  # the form as filled: the file, its tool, the typed question and gold answer
        ARTIFACTS.mkdir(exist_ok=True)
        pg.locator("#import-box").scroll_into_view_if_needed()
        pg.evaluate("() => window.scrollBy(0, document.getElementById('import-box').getBoundingClientRect().top - 300)")
        pg.mouse.move(5, 5)
        photo(pg, ARTIFACTS / f"import-form-{tool}-1280x800.png", full_page=False)
    pg.click("#import-btn")
    wait_notice(pg, "queued as run")
    run = _finished(store, tool)
    assert run["status"] == "finished", run["error"]
    assert run["answer"] == answer and run["iterations"] == iterations
    assert tool not in TYPED or (run["question"], run["gold_answer"]) == TYPED[tool]
    assert (run["correct"] is None) == (answer is None)  # no answer in the file: ungraded, not wrong
    pg.get_by_role("tab", name="Search").click()
    open_run(pg, run["run_id"])
    wait_text(pg, "#run-status", "no MC passes stored")
    for t in range(iterations - 1, 0, -1):  # step back to the first iteration, one at a time
        pg.click("#prev-btn")
        wait_plot(pg, "#tree", f"e.dataset.iteration === '{t}'")
    assert int(_tree_meta(pg, "n_nodes")) == first + 1  # the question and the nodes of iteration 1
    pg.click("#next-btn")
    wait_plot(pg, "#tree", "e.dataset.iteration === '2'")
    pg.locator("#shadow-box").get_by_text("Shadow scoring").click()  # open the accordion
    fill(pg, "shadow-k", "7")
    pg.click("#shadow-btn")
    wait_notice(pg, "shadow-scored run", timeout_s=240)
    wait_plot(pg, "#tree", "(e._uatsMeta || {}).shadow > 0")
    shadow = store_shadow(store, run["run_id"])
    nodes = [n for n in store.get_nodes(run["run_id"]) if n["id"]]
    assert sorted(shadow) == sorted(n["id"] for n in nodes)
    assert all(len(r["mc_scores"]) == 7 and r["var"] is not None for r in shadow.values())
    assert int(_tree_meta(pg, "shadow")) == int(_tree_meta(pg, "n_nodes")) - 1  # every drawn step at iteration 2
    text = wait_text(pg, "#run-status", "replaying iteration 2 of")
    assert f"imported from {tool}" in text
    if SCREENSHOTS:
        ARTIFACTS.mkdir(exist_ok=True)
        # the tree's top just under the sticky run bar (the run's status): as much of both as the window holds
        pg.evaluate("""() => { window.scrollTo(0, 0);
          for (let i = 0; i < 4; i++) {  // the bar sticks once scrolled past: measure again after each move
            const gap = document.getElementById('tree').getBoundingClientRect().top
                        - document.getElementById('run-bar').getBoundingClientRect().bottom - 8;
            if (Math.abs(gap) < 2) break;
            window.scrollBy(0, gap);
          } }""")
        pg.mouse.move(5, 5)
        photo(pg, ARTIFACTS / f"import-{tool}-1280x800.png", full_page=False)


def store_shadow(store: Any, run_id: str) -> dict[int, dict[str, Any]]:
    from storage.shadow import read_shadow

    return read_shadow(store, run_id)


def test_the_screenshots_are_where_the_docs_say() -> None:
    """docs/app.md shows the imports' screenshots (and the filled forms) from docs/img."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "app.md").read_text(encoding="utf-8")
    shots = [f"import-{tool}-1280x800.png" for tool in EXPECTED] + [f"import-form-{t}-1280x800.png" for t in TYPED]
    for name in shots:
        assert f"img/{name}" in doc
        assert (Path(__file__).resolve().parents[2] / "docs" / "img" / name).is_file()
