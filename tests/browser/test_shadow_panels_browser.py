"""An imported run after shadow scoring, at 1280×800 and 1920×1080: its shadow σ² shows in every panel (the tree's
labels, the inspector, Figure 1), labelled shadow, and no panel describes a gate the run never had; the run bar
stays within 140 px for every run of the list (imported, shadow-scored, searched, failed with a long error), its
hint on one line. The runs are written here by the importer and the shadow scorer the app's jobs run
(uats_core.imports, ui.jobs.shadow.run_shadow with the embedded PRM), without the pool."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from .apps import app_page, imports_app
from .conftest import SCREENS
from .pages import NODE_PIXEL_JS, fill, open_run, wait_plot, wait_text

pytestmark = pytest.mark.browser

BAR_MAX_PX = 140  # the run bar's height at most, at 1280 px and wider (issue 49: 210-245 px before)
FAILED = "f1" * 16


@pytest.fixture(scope="module")
def shadow_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from storage import RunStore
    from storage.imports import write_imported
    from testkit.doubles import record_synthetic
    from testkit.tool_files import GOLD, LLM_REASONERS_QUESTION, QUESTION, write_tool_files
    from uats_core.imports import read_runs
    from ui.jobs.shadow import load_shadow_prm, run_shadow

    base = tmp_path_factory.mktemp("shadow-app")
    files = write_tool_files(base / "imports")
    store = RunStore(str(base / "runs.db"))
    # their files hold no question: typed, as the Runs tab's import asks
    imported = write_imported(
        store, read_runs("llm-reasoners", str(files["llm-reasoners"]), question=LLM_REASONERS_QUESTION, gold="10")
    )[0]
    run_shadow(store, imported, load_shadow_prm(), 7)
    unscored = write_imported(store, read_runs("treequest", str(files["treequest"]), question=QUESTION, gold=GOLD))[0]
    searched = record_synthetic(store, "a1" * 16, n_nodes=160, seed=7, method="h-uats", problem_id="synthetic-7")
    store.register_run(
        FAILED,
        method="rebase",
        problem_id="a-problem-with-a-long-name-" + "x" * 60,
        question="What is 2 + 2?",
        gold_answer="4",
        seed=3,
        config={"budget": 8},
    )
    store.mark_failed(FAILED, "RuntimeError: " + "the worker stopped while loading the model; " * 12)
    with imports_app(base, store) as url:
        yield {"url": url, "store": store, "imported": imported, "runs": [imported, unscored, searched, FAILED]}


@pytest.fixture()
def shadow_page(
    context_for: Callable[[dict[str, int]], Any], shadow_app: dict[str, Any], request: pytest.FixtureRequest
) -> Iterator[Any]:
    with app_page(context_for(SCREENS[request.param]), shadow_app["url"]) as pg:
        yield pg


def _bar_height(pg: Any) -> float:
    return pg.evaluate("() => document.getElementById('run-bar').getBoundingClientRect().height")


def _hint_whole(pg: Any) -> bool:
    """The hint line shows all its text (nothing cut off at its end)."""
    return pg.evaluate(
        "() => { const p = document.querySelector('#run-hint p') || document.getElementById('run-hint');"
        " return p.scrollWidth <= p.clientWidth + 1; }"
    )


@pytest.mark.parametrize("shadow_page", list(SCREENS), indirect=True)
def test_shadow_values_show_in_every_panel_and_no_gate(shadow_page: Any, shadow_app: dict[str, Any]) -> None:
    from storage.shadow import read_shadow
    from ui.views.figstyle import fmt_var

    pg, rid = shadow_page, shadow_app["imported"]
    shadow = read_shadow(shadow_app["store"], rid)
    open_run(pg, rid)
    wait_plot(pg, "#tree", "(e._uatsMeta || {}).shadow > 0")
    text = wait_text(pg, "#run-status", "shadow-scored")
    assert "no MC passes stored" not in text
    # the tree's labels: the node's own σ² is none, the shadow one is printed and says so
    labels = pg.evaluate(
        "() => (document.querySelector('#tree .uats-plot').layout.annotations || [])"
        ".filter(a => a.name === 'glyph').map(a => a.text)"
    )
    assert labels, "no detailed labels drawn on a small tree"
    said = {fmt_var(row["var"]) for row in shadow.values()}
    for lab in labels:  # each label the tree draws (those the level of detail has room for) is a shadow σ²
        var = lab.split("σ²=", 1)[1]
        assert var.endswith(" shadow") and var.removesuffix(" shadow") in said, (lab, sorted(said))
    hit = pg.evaluate(NODE_PIXEL_JS, ["#tree", 1])
    assert hit is not None
    pg.mouse.click(hit["x"], hit["y"])
    want = fmt_var(shadow[1]["var"])
    md = wait_text(pg, "#node-details", "shadow")
    assert f"σ² {want}" in md, md
    assert "Gate" not in md and "gate read" not in md, md  # the run never had a gate
    pg.wait_for_function(
        "(v) => { const f = document.querySelector('#figure1 .uats-plot');"
        " return f && [...f.querySelectorAll('svg text')].some(t => t.textContent.includes(v)); }",
        arg=want,
    )
    why = wait_text(pg, "#why-panel", "shadow")  # the node's decision, then its shadow passes
    assert "gate read" not in why and not re.search(r"\d+ OOD \(\d+ ID\)", why) and "δ test" not in why, why
    assert "no OOD gate" in why and "node 1" in why


@pytest.mark.parametrize("shadow_page", list(SCREENS), indirect=True)
def test_the_run_bar_stays_small_for_every_run(shadow_page: Any, shadow_app: dict[str, Any]) -> None:
    pg = shadow_page
    assert _hint_whole(pg), pg.locator("#run-hint").inner_text()  # no run open: the longest hint of all
    assert _bar_height(pg) <= BAR_MAX_PX
    for rid in shadow_app["runs"]:
        if rid == FAILED:  # a failed run has no tree to wait for: its status line says it
            fill(pg, "open-id", rid)
            pg.click("#open-btn")
            wait_text(pg, "#run-status", "failed")
        else:
            open_run(pg, rid)
            wait_text(pg, "#run-status", rid[:8])
        wait_text(pg, "#run-hint", rid[:8])
        assert _bar_height(pg) <= BAR_MAX_PX, (rid, _bar_height(pg), pg.locator("#run-status").inner_text())
        assert _hint_whole(pg), pg.locator("#run-hint").inner_text()
        # the whole status is the bar's tooltip when a line ends in …
        pg.wait_for_function("() => document.getElementById('run-status').title.length > 20")


def test_a_disabled_cancel_does_not_look_like_one_that_acts(shadow_page_laptop: Any) -> None:
    pg = shadow_page_laptop
    assert pg.locator("#cancel-btn").is_disabled()
    colour = pg.evaluate("() => getComputedStyle(document.getElementById('cancel-btn')).backgroundColor")
    red, green, blue = (float(x) for x in re.findall(r"[\d.]+", colour)[:3])
    assert abs(red - green) < 24 and abs(red - blue) < 24, f"a disabled Cancel drawn {colour}"


@pytest.fixture()
def shadow_page_laptop(context_for: Callable[[dict[str, int]], Any], shadow_app: dict[str, Any]) -> Iterator[Any]:
    ctx = context_for(SCREENS["1280x800"])
    pg = ctx.new_page()
    pg.goto(shadow_app["url"])
    pg.wait_for_selector("#run-btn")
    try:
        yield pg
    finally:
        pg.close()
