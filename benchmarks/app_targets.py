"""The app's targets on big runs, measured in Debian's Chromium through the real app served in-process:

- open: type a run id, press Open (once the page is quiet), until the tree of that run is drawn (its figure
  built from the database, sent, and Plotly.react finished), for a run of 100,000 nodes (the first open:
  nothing cached);
- node click: a click on a node of a 2,000-node run (the tree's plotly_click, as a mouse click fires it),
  until that node's Figure 1 is drawn, and until it is on the screen: the end of the rendering (style, layout,
  paint) of the first frame after the draw, where the browser hands that frame to its compositor, as the page's
  Long Animation Frames report it (frames of 50 ms or more). A shorter frame is not reported; then the first
  callback after its paint (requestAnimationFrame, then setTimeout) is taken, a later moment, never an earlier one.
  That callback alone was the measure until 2026-11-30: it also waits for the tasks queued before it (Gradio's
  Markdown loading its code highlighter, the run bar's tick), which run after the frame is painted (both printed).
  Each click once the page is quiet (testkit.browser's QUIET_JS). The first click opens the inspector beside the
  tree;
- Figure 1 draw: the page's own time to draw each of those Figure 1s (Plotly.react and what follows it, the
  figure's data-draw-ms), for the steps of 64 candidates, with its steps (data-draw-phases: Plotly.react, the
  legend's fit, the level of detail, the sticky head, scrolling to the row); and the last of them drawn again in
  the quiet page (Plotly.newPlot of a copy): what the figure costs with nothing else running, against what it
  costs amid the click's other work;
- link: the node's own page, `/node?run=…&node=…` (the link the inspector gives to share, ui/tabs/node_page.py),
  opened in a new tab of the browser the studio is open in (its HTTP cache warm, as a link followed from another
  page of the app), from the navigation's start until that node's Figure 1 is drawn; the studio's address for the
  same view (`/?run=…&node=…`, what its address bar shows) likewise. And the node page's first visit: the same links,
  each in a new browser context (an empty cache, as a colleague who never opened the app: plotly.js comes over the
  wire). Until 2026-11-30 every link was opened that way, though this said warm.

Runs come from testkit.synthetic, written to a temporary SQLite file first (not timed)."""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from testkit.browser import on_next_figure1_draw, wait_quiet
from ui.tabs.common import NODE_PAGE, node_address

# the click, and the moments its Figure 1 is drawn (the plot's draw count goes up) and on the screen (the frame after
# that: a callback queued after the frame's paint), ms from the click
_CLICK_SEEN = on_next_figure1_draw(
    "window.__benchDrawn = performance.now() - window.__benchT0",
    "window.__benchPainted = performance.now() - window.__benchT0",
)
CLICK_JS = f"""([id]) => {{
  const gd = document.querySelector('#tree .uats-plot');
  {_CLICK_SEEN}
  window.__benchDrawn = window.__benchPainted = null;
  window.__benchT0 = performance.now();
  gd.emit('plotly_click', {{points: [{{customdata: [id]}}]}});
}}"""
CLICK_DONE_JS = "() => window.__benchPainted != null && [window.__benchDrawn, window.__benchPainted]"
# the page's long animation frames, [start, render start, end] in the page's ms: observed once per page
FRAMES_JS = """() => { if (window.__benchFrames) return; window.__benchFrames = [];
  new PerformanceObserver((l) => { for (const e of l.getEntries())
    window.__benchFrames.push([e.startTime, e.renderStart, e.startTime + e.duration]); })
    .observe({type: 'long-animation-frame'}); }"""
# ms from the click to the end of the first frame rendered after the draw; null while its entry may still come
# (entries are delivered after their frame: waited for up to 200 ms after the callback that follows the paint)
FRAME_DONE_JS = """() => { const t0 = window.__benchT0, drawn = t0 + window.__benchDrawn;
  const painted = t0 + window.__benchPainted;  // the callback's frame began before it: a later frame is not the one
  const f = window.__benchFrames.filter(([, render]) => render >= drawn && render <= painted)
    .sort((a, b) => a[1] - b[1])[0];
  if (f) return f[2] - t0;
  return performance.now() - painted > 200 ? window.__benchPainted : null; }"""


def _write_runs(db: str, sizes: dict[str, int]) -> None:
    from storage import RunStore
    from testkit.synthetic import synthetic_events

    store = RunStore(db)
    for rid, n in sizes.items():
        sub = store.subscriber()
        for ev in synthetic_events(rid, n_nodes=n, seed=n, budget=512 if n > 20_000 else 64):
            sub(ev)


def _open(page: Any, rid: str, timeout_s: float = 120) -> float:
    page.locator("#open-id input, #open-id textarea").first.fill(rid)
    page.locator("#open-id input, #open-id textarea").first.blur()
    time.sleep(0.3)  # the textbox commits its value before the click reads it
    wait_quiet(page, timeout_s)  # the page has done loading (and drawing the last run): a user's pace
    t0 = time.perf_counter()
    page.click("#open-btn")
    page.wait_for_function(
        f"() => {{ const e = document.querySelector('#tree .uats-plot');"
        f" return e && e.dataset.run === '{rid}' && e.dataset.drawnAt; }}",
        timeout=timeout_s * 1000,
    )
    return time.perf_counter() - t0


# the inspector's last Figure 1 drawn again from a copy, three times, once the page is quiet: ms each
QUIET_REDRAW_JS = """async () => { const e = document.querySelector('#figure1 .uats-plot'), out = [];
  for (let i = 0; i < 3; i++) {
    const data = JSON.parse(JSON.stringify(e.data)), layout = JSON.parse(JSON.stringify(e.layout));
    const t0 = performance.now();
    await Plotly.newPlot(e, data, layout, {displaylogo: false, responsive: true});
    out.push(performance.now() - t0);
  }
  return out; }"""


def _click_times(
    page: Any, node_ids: list[int]
) -> tuple[list[float], list[float], list[float], list[tuple[int, float, dict[str, float]]]]:
    """Seconds from each click to its Figure 1 drawn, to it on the screen (its frame's end) and to the first callback
    after that frame's paint, and (rows, draw ms, ms by step) of each of those Figure 1s."""
    drawn, shown, after, draws = [], [], [], []
    page.evaluate(FRAMES_JS)
    for nid in node_ids:
        wait_quiet(page, 60)
        page.evaluate(CLICK_JS, [nid])
        h = page.wait_for_function(CLICK_DONE_JS, timeout=60_000)
        drawn_ms, after_ms = h.json_value()
        shown_ms = page.wait_for_function(FRAME_DONE_JS, timeout=60_000, polling=20).json_value()
        drawn.append(float(drawn_ms) / 1000.0)
        shown.append(float(shown_ms) / 1000.0)
        after.append(float(after_ms) / 1000.0)
        rows, ms, steps = page.evaluate(
            "() => { const e = document.querySelector('#figure1 .uats-plot');"
            " return [Number(e.dataset.nodes), Number(e.dataset.drawMs), JSON.parse(e.dataset.drawPhases)]; }"
        )
        draws.append((int(rows), float(ms), steps))
    return drawn, shown, after, draws


# seconds from the navigation's start to the linked node's Figure 1 drawn (the page's clock: drawnAt is Date.now())
LINK_DONE_JS = """(nid) => { const e = document.querySelector('#figure1 .uats-plot');
  return e && e._uatsMeta && e._uatsMeta.selected === nid && e.dataset.drawnAt
    ? (Number(e.dataset.drawnAt) - performance.timeOrigin) / 1000 : null; }"""


def _link_times(
    browser: Any, port: int, rid: str, node_ids: list[int], at: str = NODE_PAGE, context: Any | None = None
) -> list[float]:
    """Seconds from each link's navigation to its node's Figure 1 drawn: `at` NODE_PAGE is the node page, "" the
    studio's (both addresses as the app writes them); each link in a tab of `context` (its cache warm), or with
    None in a new context of `browser` of its own (an empty cache)."""
    out = []
    for nid in node_ids:
        page = context.new_page() if context else browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(
            f"http://127.0.0.1:{port}/" + node_address(rid, nid, None, page=at).removeprefix("./"), wait_until="commit"
        )
        h = page.wait_for_function(LINK_DONE_JS, arg=nid, timeout=120_000, polling=20)
        out.append(float(h.json_value()))
        page.close()
    return out


def app_targets(big: int = 100_000, clicked: int = 2_000, clicks: int = 5) -> dict[str, Any]:
    """Seconds to open a `big`-node run and to inspect a node of a `clicked`-node run, in the app."""
    from playwright.sync_api import sync_playwright

    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    from storage import RunStore
    from testkit.browser import open_app, serve_app
    from ui.jobs.pool import WorkerPool

    tmp = Path(tempfile.mkdtemp(prefix="uats-bench-app-"))
    db = str(tmp / "bench.db")
    big_id, click_id = f"big{big:07d}" + "0" * 22, f"clk{clicked:07d}" + "0" * 22
    _write_runs(db, {big_id: big, click_id: clicked})
    store = RunStore(db)
    pool = WorkerPool(store, max_workers=1)
    demo, port = serve_app(store, pool, tmp / "exports")
    try:
        with sync_playwright() as p:
            browser, page = open_app(p, port)
            page.wait_for_selector("#open-btn", timeout=60_000)
            open_s = _open(page, big_id)
            _open(page, click_id)
            time.sleep(1.0)
            n = store.get_run(click_id)["n_nodes"]
            ids = [int(n * f) for f in (0.2, 0.35, 0.5, 0.65, 0.8, 0.9)][:clicks]
            click_s, shown_s, after_s, draws = _click_times(page, ids)
            wait_quiet(page, 60)
            quiet_ms = page.evaluate(QUIET_REDRAW_JS)
            link_s = _link_times(browser, port, click_id, ids[:3], context=page.context)
            studio_link_s = _link_times(browser, port, click_id, ids[:3], at="", context=page.context)
            first_link_s = _link_times(browser, port, click_id, ids[:3])
            browser.close()
    finally:
        pool.shutdown(cancel=True, timeout_s=5)
        demo.close()
    full = [(ms, steps) for rows, ms, steps in draws if rows == 64]
    return {
        "open_s": round(open_s, 2),
        "open_nodes": big,
        "click_s": [round(x, 2) for x in click_s],
        "click_median_s": round(statistics.median(click_s), 2),
        "click_shown_s": [round(x, 2) for x in shown_s],
        "click_shown_median_s": round(statistics.median(shown_s), 2),
        "click_after_paint_s": [round(x, 2) for x in after_s],
        "click_after_paint_median_s": round(statistics.median(after_s), 2),
        "click_nodes": clicked,
        "figure1_draw_ms": [[rows, round(ms, 1)] for rows, ms, _ in draws],
        "figure1_64_draw_median_ms": round(statistics.median(ms for ms, _ in full), 1) if full else None,
        "figure1_64_steps_median_ms": {k: round(statistics.median(st[k] for _, st in full), 1) for k in full[0][1]}
        if full
        else None,
        "figure1_quiet_redraw_ms": [round(ms, 1) for ms in quiet_ms],
        "link_s": [round(x, 2) for x in link_s],
        "link_median_s": round(statistics.median(link_s), 2),
        "studio_link_s": [round(x, 2) for x in studio_link_s],
        "studio_link_median_s": round(statistics.median(studio_link_s), 2),
        "first_link_s": [round(x, 2) for x in first_link_s],
        "first_link_median_s": round(statistics.median(first_link_s), 2),
    }
