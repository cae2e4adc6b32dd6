"""The app served in this process and Debian's Chromium on it: the one browser launcher of the benchmarks and
the browser tests (tests/browser/conftest.py takes CHROMIUM_FLAGS from here); `serving` serves it for
gradio_client. Never a downloaded browser."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from .serving import free_port, launch_served

# headless and offline: no GPU, no sandbox (containers), no background fetches a machine without internet waits on
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def launch_browser(p: Any) -> Any:
    path = shutil.which("chromium")
    if path is None:
        raise RuntimeError("Debian's chromium is not installed (apt-get install -y chromium)")
    return p.chromium.launch(executable_path=path, args=CHROMIUM_FLAGS)


def open_app(p: Any, port: int) -> tuple[Any, Any]:
    """Chromium on the served app at `port`: (browser, page), the page at the benches' 1400 × 1000 viewport, in a
    context of its own that more tabs can join (`page.context.new_page()`: the same cache, as a user's browser)."""
    browser = launch_browser(p)
    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    page.goto(f"http://127.0.0.1:{port}")
    return browser, page


def serve_app(store: Any, pool: Any, export_dir: Path) -> tuple[Any, int]:
    """The real app over `store` and `pool`, launched in this process on a free local port as the launcher serves
    it (its queue and launch settings): (demo, port)."""
    from ui.app_ui import QUEUE_KWARGS, build_demo, launch_kwargs

    demo = build_demo(store, pool, export_dir)
    port = free_port()
    launch_served(demo.queue(**QUEUE_KWARGS), port, **launch_kwargs(export_dir))  # answering when it returns
    return demo, port


# The page is quiet: no task of 50 ms or more (a "long task") for the last QUIET_MS. After a click the page goes
# on redrawing the Why panel for the clicked node's step for up to a second, and after a load it may still draw the
# tree's level of detail: the next click waits for that, as a user reading the page would (a benchmark's click
# queued behind it took 0.45 s or 1.1 s by turns; a test's click on a node whose plot was redrawn under the mouse
# reached no node). Installed once per page: a PerformanceObserver keeps the end of the last long task.
QUIET_MS = 500
QUIET_JS = """(quietMs) => {
  if (!window.__uatsQuiet) {
    window.__uatsQuiet = {last: performance.now()};
    new PerformanceObserver(l => { for (const e of l.getEntries())
      window.__uatsQuiet.last = Math.max(window.__uatsQuiet.last, e.startTime + e.duration); })
      .observe({entryTypes: ['longtask']});
  }
  return performance.now() - window.__uatsQuiet.last >= quietMs;
}"""


def wait_quiet(page: Any, timeout_s: float) -> None:
    """Until the page has been quiet for QUIET_MS (the first poll installs the observer)."""
    page.wait_for_function(QUIET_JS, arg=QUIET_MS, timeout=timeout_s * 1000, polling=100)


def on_next_figure1_draw(on_drawn: str, on_painted: str) -> str:
    """Page statements that run the statements `on_drawn` when the inspector's Figure 1 is next drawn (its draw count
    changes: ui/js/plot.js) and `on_painted` after the frame that paints it; for the benchmark's clicks and the
    browser tests."""
    return f"""{{ const f1 = document.querySelector('#figure1 .uats-plot');
  const o = new MutationObserver(() => {{
    o.disconnect();
    {on_drawn};
    requestAnimationFrame(() => setTimeout(() => {{ {on_painted}; }}, 0));
  }});
  o.observe(f1, {{attributes: true, attributeFilter: ['data-draws']}}); }}"""
