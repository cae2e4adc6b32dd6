"""An app of a test's own, for browser tests that need runs the session's app (conftest.served) does not hold: the
app served in-process over a store with an imports folder and a one-worker pool, and a page of it with no JavaScript
error. A plain module, as pages.py: the tests' module-scoped fixtures call these."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from testkit.serving import free_port, launch_served

from .pages import wait_idle


@contextmanager
def imports_app(base: Path, store: Any) -> Iterator[str]:
    """The app over `store`, offering `base`/imports to import from (reports and exports under `base` too), with a
    worker pool of one; yields its address, and shuts the pool and the server after."""
    os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"
    from ui.app_ui import QUEUE_KWARGS, build_demo, launch_kwargs
    from ui.choices import server_choices
    from ui.jobs.pool import WorkerPool

    pool = WorkerPool(store, max_workers=1, poll_s=0.5)
    (base / "reports").mkdir(exist_ok=True)
    demo = build_demo(store, pool, base / "exports", base / "reports", server_choices(imports_dirs=[base / "imports"]))
    url = launch_served(demo.queue(**QUEUE_KWARGS), free_port(), **launch_kwargs(base / "exports"))
    try:
        yield url
    finally:
        pool.shutdown(cancel=True, timeout_s=30)
        demo.close()


@contextmanager
def app_page(ctx: Any, url: str) -> Iterator[Any]:
    """A new page of the browser context `ctx` (emptied of what earlier pages stored) on the app at `url`, its
    controls drawn; no JavaScript error on it, ever (checked when the page is done)."""
    ctx.set_storage_state({"cookies": [], "origins": []})
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(url)
    pg.wait_for_selector("#run-btn")  # minutes on a loaded 2-core machine: the context waits STEP_S
    wait_idle(pg)
    try:
        yield pg
    finally:
        pg.close()
    assert not errors, errors
