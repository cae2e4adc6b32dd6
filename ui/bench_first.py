"""Benchmark: seconds from clicking Run to the first scored node drawn in the page, on the embedded
arithmetic world, through the real app in Chromium. "cold": the first run of a pool that was not
pre-warmed (a fresh worker process imports torch and loads the models); "warm": later runs, served by
the worker that kept the models loaded."""

from __future__ import annotations

import os
import socket
import tempfile
import time
from pathlib import Path
from typing import Any

FIRST_NODE_JS = """(t0) => (window.__uatsDraws || []).filter(d => d.el === 'tree' && d.at >= t0 && d.nodes >= 2)
                       .map(d => d.at)[0] || null"""


def _click_run(page: Any, store: Any, timeout_s: float) -> float:
    """Click Run, wait for the first tree drawn with a scored node, then for the run to end; seconds."""
    before = {r["run_id"] for r in store.list_runs(limit=50)}
    t0 = page.evaluate("() => Date.now()")
    page.click("#run-btn")
    deadline = time.time() + timeout_s
    first = None
    while first is None and time.time() < deadline:
        first = page.evaluate(FIRST_NODE_JS, t0)
        time.sleep(0.02)
    if first is None:
        raise RuntimeError(f"no scored node drawn within {timeout_s:.0f} s of Run")
    new = [r for r in store.list_runs(limit=50) if r["run_id"] not in before]
    while new and time.time() < deadline and store.get_run(new[0]["run_id"])["status"] in ("queued", "running"):
        time.sleep(0.1)  # the next Run then finds the worker idle, as a user would
    return (first - t0) / 1000.0


def first_scored_node(repeats: int = 3, timeout_s: float = 120.0) -> dict[str, Any]:
    """Run → first scored node, cold once then warm `repeats` times (default form: H-UATS, N=16)."""
    from playwright.sync_api import sync_playwright

    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    from storage import RunStore
    from ui.app_ui import build_demo, launch_kwargs
    from ui.bench import _launch_browser
    from ui.worker import WorkerPool

    tmp = Path(tempfile.mkdtemp(prefix="uats-bench-first-"))
    store = RunStore(str(tmp / "bench.db"))
    pool = WorkerPool(store, max_workers=1, poll_s=0.5)  # no pre-warm: the first run measures a cold worker
    demo = build_demo(store, pool, tmp / "exports")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    demo.queue().launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                        **launch_kwargs(tmp / "exports"))
    try:
        with sync_playwright() as p:
            browser = _launch_browser(p)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"http://127.0.0.1:{port}")
            page.wait_for_selector("#run-btn", timeout=60_000)
            page.wait_for_function("() => document.querySelector('#problem input') && "
                                   "document.querySelector('#problem input').value !== ''", timeout=60_000)
            cold = _click_run(page, store, timeout_s)
            warm = [_click_run(page, store, timeout_s) for _ in range(repeats)]
            browser.close()
    finally:
        pool.shutdown(cancel=True, timeout_s=10)
        demo.close()
    return {"cold_s": round(cold, 2), "warm_s": [round(w, 2) for w in warm],
            "warm_median_s": round(sorted(warm)[len(warm) // 2], 2), "loads": pool.loads()}
