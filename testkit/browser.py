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
    """Chromium on the served app at `port`: (browser, page), the page at the benches' 1400 × 1000 viewport."""
    browser = launch_browser(p)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
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
