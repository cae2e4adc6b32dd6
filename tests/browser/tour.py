"""The screenshots of docs/img that show the tree's boxplots and Figure 1, taken from real searches.

`python -m tests.browser.tour docs/img` runs three H-UATS searches with the embedded arithmetic models
(ui.jobs.warm.execute, what a worker runs; dropout p 0.3, so the PRM is unsure somewhere), serves the app over
them, and photographs in Debian's Chromium at 1280×800 and 1920×1080: a step's candidates in the tree
(focus "selected step"), Figure 1 of a step and of the N = 64 run's widest step (whole, at the inspector's width:
the box it scrolls in unrolled), and focus on a subtree of the N = 64 run. It takes a few minutes (the searches
run on the CPU)."""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .pages import choose, patient, photo

log = logging.getLogger(__name__)

VIEWPORTS = ((1280, 800), (1920, 1080))
# (run id, problem index in the world's test split, budget N): N = 16 for a step, N = 64 for a big tree
RUNS = (("d16" * 10 + "d1", 4, 16), ("e16" * 10 + "e1", 5, 16), ("c64" * 10 + "c6", 3, 64))
SETTLED = "() => { const e = document.querySelector('#tree .uats-plot'); return e && e.dataset.lodPending === '0'; }"


def search(store: Any, run_id: str, problem: int, budget: int) -> None:
    """One real H-UATS search, written to `store` as a worker writes it."""
    from testkit.pool_requests import search_job
    from uats_core.config import SearchConfig
    from ui.choices import ARITH
    from ui.jobs.warm import ModelCache, execute
    from ui.tabs.run_form import dataset_problems

    prob = dataset_problems(ARITH)[problem]
    cfg = SearchConfig(method="h-uats", budget=budget, seed=0, dropout_p=0.3)
    execute(search_job(run_id, store.location, prob, cfg), ModelCache(), store)


def pick(store: Any) -> dict[str, int]:
    """The nodes photographed: a 3-candidate step, the step with the most re-evaluations, an N = 64 subtree."""
    from ui.views.treedata import RunData

    step = RunData.load(store, RUNS[1][0]).state_at(None)
    fig1 = RunData.load(store, RUNS[0][0]).state_at(None)
    big = RunData.load(store, RUNS[2][0]).state_at(None)
    three = [p for p, kids in step.children.items() if len(kids) == 3]
    reeval = max(fig1.children, key=lambda p: sum(1 for k in fig1.children[p] if fig1.nodes[k]["extra_passes"]))
    sub = max((i for i in big.nodes if i and len(big.subtree(i)) <= 40), key=lambda i: len(big.subtree(i)))
    wide = max(big.children, key=lambda p: len(big.children[p]))
    return {
        "step": step.children[three[0]][-1] if three else max(step.nodes),
        "fig1": fig1.children[reeval][0],
        "subtree": sub,
        "wide": big.children[wide][0],
    }


def _open(page: Any, url: str, run_id: str, node: int) -> None:
    page.goto(f"{url}/?run={run_id}&node={node}")
    page.wait_for_function(
        f"() => {{ const e = document.querySelector('#tree .uats-plot'); return e && e.dataset.run === '{run_id}'; }}",
    )
    page.wait_for_function("() => document.querySelector('#node-details').innerText.includes('Node ')")


def _focus(page: Any, focus: str) -> None:
    page.get_by_text("View: filters, search, collapse").click()
    choose(page, "f-focus", focus)
    page.wait_for_function("() => document.querySelector('#tree .uats-plot').dataset.lod === 'detail'")
    page.wait_for_function(SETTLED)


def _photo(page: Any, selector: str, path: Path) -> None:
    photo(page, path, selector)
    log.info("wrote %s", path)


# Figure 1 whole at the inspector's width: the box it scrolls in (a max-height in the page's CSS) unrolled, and the
# copy of its head kept over the rows while they scroll hidden (the figure's own head is under it), then put back
UNROLL_JS = """(on) => {
  const plot = document.querySelector('#figure1 .uats-plot');
  for (let e = plot.parentElement; e && e !== document.body; e = e.parentElement) {
    if (on && getComputedStyle(e).maxHeight === 'none') continue;
    if (on && !e.dataset.tourMaxHeight) { e.dataset.tourMaxHeight = '1'; e.style.maxHeight = 'none'; }
    if (!on && e.dataset.tourMaxHeight) { delete e.dataset.tourMaxHeight; e.style.maxHeight = ''; }
  }
  // opacity, not visibility: the copy's clip paths carry the figure's ids, and a hidden clip path clips all away
  for (const h of document.querySelectorAll('#figure1 .uats-sticky-head')) h.style.opacity = on ? '0' : '';
}"""


def _photo_figure1(page: Any, path: Path) -> None:
    page.evaluate(UNROLL_JS, True)
    try:
        _photo(page, "#figure1", path)
    finally:
        page.evaluate(UNROLL_JS, False)


def tour(out: Path, url: str, store: Any) -> list[Path]:
    from playwright.sync_api import sync_playwright

    from testkit.browser import CHROMIUM_FLAGS

    nodes = pick(store)
    written: list[Path] = []
    chromium = shutil.which("chromium")
    if chromium is None:
        raise SystemExit("error: chromium: not installed; apt-get install -y chromium")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS)
        for w, h in VIEWPORTS:
            page = patient(browser.new_page(viewport={"width": w, "height": h}))
            _open(page, url, RUNS[1][0], nodes["step"])
            _focus(page, "selected step")
            written.append(out / f"tree-step-{w}.png")
            _photo(page, "#tree", written[-1])
            for run, node, name in (
                (RUNS[0][0], nodes["fig1"], "figure1"),
                (RUNS[2][0], nodes["wide"], "figure1-wide"),
            ):
                _open(page, url, run, node)
                page.wait_for_function(
                    "() => document.querySelectorAll('#figure1 .uats-plot .barlayer .trace').length > 1"
                )
                written.append(out / f"{name}-{w}.png")
                _photo_figure1(page, written[-1])
            _open(page, url, RUNS[2][0], nodes["subtree"])
            _focus(page, "selected subtree")
            written.append(out / f"tree-subtree-n64-{w}.png")
            _photo(page, "#tree", written[-1])
            page.close()
        browser.close()
    return written


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="folder for the PNGs (docs/img)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"
    from storage import RunStore

    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        store = RunStore(str(Path(tmp) / "tour.db"))
        for run_id, problem, budget in RUNS:
            t0 = time.perf_counter()
            search(store, run_id, problem, budget)
            log.info("search %s (N=%d): %.0f s", run_id[:8], budget, time.perf_counter() - t0)
        from testkit.browser import serve_app
        from ui.jobs.pool import WorkerPool

        pool = WorkerPool(store, max_workers=1, poll_s=0.5)
        demo, port = serve_app(store, pool, Path(tmp) / "exports")
        try:
            tour(args.out, f"http://127.0.0.1:{port}", store)
        finally:
            pool.shutdown(cancel=True, timeout_s=30)
            demo.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
