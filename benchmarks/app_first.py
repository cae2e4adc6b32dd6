"""Benchmark: seconds from clicking Run to the first scored node drawn in the page, on the embedded
arithmetic world, through the real app in Chromium. "cold": the first run of a pool that was not
pre-warmed (a fresh worker process imports torch and loads the models); "warm": later runs, served by
the worker that kept the models loaded; "pre-warmed": the first run of an app that loaded the default
pair in the background at start."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

from uats_core.status import ENDED, LIVE

# Whether every plot in `sels` shows its run's last iteration, ended: arg [selectors, {run id: iterations}, ENDED]
DRAWN_END = """([sels, want, ended]) => sels.every(sel => { const e = document.querySelector(sel + ' .uats-plot');
  return e && (e.dataset.run in want) && Number(e.dataset.iteration) === want[e.dataset.run]
         && ended.includes(e.dataset.status); })"""
# a draw of the new run only: the page may still be drawing the last frames of the run before it after the
# click (counted, they made a third of the runs look 0.2-0.5 s fast)
FIRST_NODE_JS = """([t0, before]) => (window.__uatsDraws || [])
  .filter(d => d.el === 'tree' && d.at >= t0 && d.nodes >= 2 && d.run && !before.includes(d.run))
  .map(d => d.at)[0] || null"""


def _click_run(page: Any, store: Any, timeout_s: float) -> float:
    """Click Run and wait for the new run's first tree drawn with a scored node (seconds), then for the run to
    end and for the page to have drawn it to its end."""
    before = [r["run_id"] for r in store.list_runs(limit=50)]
    t0 = page.evaluate("() => Date.now()")
    page.click("#run-btn")
    deadline = time.time() + timeout_s
    first = None
    while first is None and time.time() < deadline:
        first = page.evaluate(FIRST_NODE_JS, [t0, before])
        time.sleep(0.02)
    if first is None:
        raise RuntimeError(f"no scored node drawn within {timeout_s:.0f} s of Run")
    new = [r for r in store.list_runs(limit=50) if r["run_id"] not in before]
    while new and time.time() < deadline and store.get_run(new[0]["run_id"])["status"] in LIVE:
        time.sleep(0.1)  # the next Run then finds the worker idle, as a user would
    if new:  # ... and a page that has drawn this run to its end (it replays a fast run's iterations after it)
        wait_drawn_end(page, store, ["#tree"], [new[0]["run_id"]], max(1.0, deadline - time.time()))
    return (first - t0) / 1000.0


def wait_drawn_end(page: Any, store: Any, plots: list[str], run_ids: list[str], timeout_s: float) -> None:
    """Until every plot in `plots` shows one of these ended runs at its last stored iteration (DRAWN_END)."""
    want = {rid: int(store.get_run(rid)["iterations"]) for rid in run_ids}
    page.wait_for_function(DRAWN_END, arg=[plots, want, list(map(str, ENDED))], timeout=timeout_s * 1000)


def open_form(p: Any, port: int, pool: Any, warm_workers: int, timeout_s: float) -> tuple[Any, Any]:
    """Chromium on the served app once its form is ready (a problem picked) and `warm_workers` workers have
    loaded their pre-warmed models, as a user reading the page would wait: (browser, page)."""
    from testkit.browser import open_app

    browser, page = open_app(p, port)
    page.wait_for_selector("#run-btn", timeout=60_000)
    page.wait_for_function(
        "() => document.querySelector('#problem input') && document.querySelector('#problem input').value !== ''",
        timeout=60_000,
    )
    deadline = time.time() + timeout_s
    while len([n for n in pool.loads().values() if n]) < warm_workers and time.time() < deadline:
        time.sleep(0.2)  # the background load finishes while the user reads the page
    return browser, page


def _measure(clicks: int, prewarm: bool, timeout_s: float) -> tuple[list[float], dict[int, int]]:
    """Serve the app on a fresh database, click Run `clicks` times; seconds to the first scored node each."""
    from playwright.sync_api import sync_playwright

    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    from storage import RunStore
    from testkit.browser import serve_app
    from ui.jobs.pool import WorkerPool, default_pair_request

    tmp = Path(tempfile.mkdtemp(prefix="uats-bench-first-"))
    store = RunStore(str(tmp / "bench.db"))
    pool = WorkerPool(store, max_workers=1, poll_s=0.5, prewarm=default_pair_request() if prewarm else None)
    demo, port = serve_app(store, pool, tmp / "exports")
    try:
        with sync_playwright() as p:
            browser, page = open_form(p, port, pool, 1 if prewarm else 0, timeout_s)
            times = [_click_run(page, store, timeout_s) for _ in range(clicks)]
            browser.close()
        loads = pool.loads()
    finally:
        pool.shutdown(cancel=True, timeout_s=10)
        demo.close()
    return times, loads


def first_scored_node(repeats: int = 3, timeout_s: float = 120.0) -> dict[str, Any]:
    """Run → first scored node (default form: H-UATS on the embedded world): the first run of a pool
    without pre-warming (cold), the runs after it (warm), and the first run after a pre-warmed start."""
    times, loads = _measure(1 + repeats, prewarm=False, timeout_s=timeout_s)
    cold, warm = times[0], times[1:]
    prewarmed, _ = _measure(1, prewarm=True, timeout_s=timeout_s)
    return {
        "cold_s": round(cold, 2),
        "warm_s": [round(w, 2) for w in warm],
        "warm_median_s": round(sorted(warm)[len(warm) // 2], 2),
        "prewarmed_first_s": round(prewarmed[0], 2),
        "model_loads": loads,
    }
