"""Benchmark: a compare pair against one run, through the real app in Chromium on the embedded arithmetic world.

The app starts as `uats-studio` does (two workers, the default pair pre-warmed in both) and the page waits
until both have loaded it, as a user reading the page would. Then, with the form's defaults: Run (one
H-UATS search), from the click until the run has ended; and Compare's "Run H-UATS vs REBASE", from the click
until both runs have ended. Each repeated `repeats` times (9: a run takes 1.2 to 2.2 s here from click to end);
the target reads the medians' ratio (≤ 1.5: the pair's two runs go side by side, neither waits for a cold worker).

Each click waits until the page has drawn the runs before it to their end, as a user watching them would. The
page draws every iteration of a live run in order and lags a fast run by a second or more here; a click
sent while it still drew the last run's iterations (in the tab just left) waited 0.1 to 1.1 s for the page,
and the ratio of the medians ranged from 1.0 to 1.9 over idle runs of the same code. Click → drawn end is
reported beside it: what a user waits for until the page shows the runs ended."""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from uats_core.status import ENDED, RunStatus

from .app_first import open_form, wait_drawn_end

# Resolves on the second animation frame from now: once the page's main thread has drawn what it was drawing.
DRAWN = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))"


def _click_until_ended(
    page: Any, store: Any, button: str, plots: list[str], runs: int, timeout_s: float
) -> tuple[float, float]:
    """Seconds from clicking `button` until the `runs` runs it starts have all ended (any failure raises), and
    until `plots` show them ended. The clock starts once the page has drawn: a tab switch re-renders that tab's
    trees, and a click queued behind that rendering would time the drawing of the last run, not the runs it starts."""
    page.evaluate(DRAWN)
    before = {r["run_id"] for r in store.list_runs(limit=100)}
    t0 = time.perf_counter()
    page.click(button)
    deadline = time.time() + timeout_s
    new: list[dict[str, Any]] = []
    while time.time() < deadline:
        new = [r for r in store.list_runs(limit=100) if r["run_id"] not in before]
        if len(new) == runs and all(r["status"] in ENDED for r in new):
            break
        time.sleep(0.05)
    ended = time.perf_counter() - t0
    if len(new) != runs or any(r["status"] != RunStatus.FINISHED for r in new):
        raise RuntimeError(
            f"{button}: expected {runs} finished runs within {timeout_s:.0f} s, got "
            f"{[(r['run_id'][:8], r['status']) for r in new]}"
        )
    wait_drawn_end(page, store, plots, [r["run_id"] for r in new], timeout_s)
    return ended, time.perf_counter() - t0


def pair_vs_run(repeats: int = 9, timeout_s: float = 300.0) -> dict[str, Any]:
    """Medians of one run's and one compare pair's wall time (click → ended) in the app, and their ratio."""
    from playwright.sync_api import sync_playwright

    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    from storage import RunStore
    from testkit.browser import serve_app
    from ui.jobs.pool import PAIR_WORKERS, WorkerPool, default_pair_request

    tmp = Path(tempfile.mkdtemp(prefix="uats-bench-pair-"))
    store = RunStore(str(tmp / "bench.db"))
    pool = WorkerPool(store, max_workers=PAIR_WORKERS, poll_s=0.5, prewarm=default_pair_request())
    demo, port = serve_app(store, pool, tmp / "exports")
    single, pair = [], []
    try:
        with sync_playwright() as p:
            browser, page = open_form(p, port, pool, PAIR_WORKERS, timeout_s)
            for _ in range(repeats):
                page.get_by_role("tab", name="Search").click()
                single.append(_click_until_ended(page, store, "#run-btn", ["#tree"], 1, timeout_s))
                page.get_by_role("tab", name="Compare").click()
                pair.append(_click_until_ended(page, store, "#cmp-pair", ["#cmp-tree-a", "#cmp-tree-b"], 2, timeout_s))
            browser.close()
        loads = pool.loads()
    finally:
        pool.shutdown(cancel=True, timeout_s=10)
        demo.close()
    one, two = statistics.median(s for s, _ in single), statistics.median(s for s, _ in pair)
    one_drawn, two_drawn = statistics.median(d for _, d in single), statistics.median(d for _, d in pair)
    return {
        "run_s": [round(s, 2) for s, _ in single],
        "pair_s": [round(s, 2) for s, _ in pair],
        "run_median_s": round(one, 2),
        "pair_median_s": round(two, 2),
        "ratio": round(two / one, 2),
        "run_drawn_s": [round(d, 2) for _, d in single],
        "pair_drawn_s": [round(d, 2) for _, d in pair],
        "run_drawn_median_s": round(one_drawn, 2),
        "pair_drawn_median_s": round(two_drawn, 2),
        "drawn_ratio": round(two_drawn / one_drawn, 2),
        "model_loads": loads,
    }
