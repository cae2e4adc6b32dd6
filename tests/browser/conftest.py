"""Fixtures for the Playwright tests: the app served in-process on a free port over a fresh database, and
Debian's Chromium (never a downloaded browser) with the flags that work offline here (reference.md §8)."""

from __future__ import annotations

import os
import shutil
import socket
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]

# Two synthetic runs (the real engine's events, storage.synthetic) on one problem, seed and budget: the
# comparison, replay and export tests need finished runs of known shape without minutes of search.
PAIR = {"h-uats": "a0" * 16, "rebase": "b0" * 16}
LAPTOP = {"width": 1280, "height": 800}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def chromium_path() -> str:
    path = shutil.which("chromium")
    if path is None:
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium)")
    return path


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """Small randomly initialised policy and PRM (real Llama architectures, uats_core.backends.tiny): a real
    search through the real worker, fast enough to watch grow in a test whatever assets/models holds."""
    from uats_core.backends.tiny import save_causal_lm, save_token_cls_prm

    d = tmp_path_factory.mktemp("models")
    pol = save_causal_lm(d / "policy", hidden=32, layers=2, heads=2, kv_heads=1)
    prm = save_token_cls_prm(d / "prm", layers=2, hidden=32, heads=2, kv_heads=1)
    return str(pol), str(prm)


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"
    from storage import RunStore
    from storage.synthetic import synthetic_events
    from ui.app_ui import build_demo, launch_kwargs
    from ui.worker import WorkerPool

    base = tmp_path_factory.mktemp("app")
    store = RunStore(str(base / "runs.db"))
    for method, rid in PAIR.items():
        sub = store.subscriber()
        for ev in synthetic_events(rid, n_nodes=160, seed=7 if method == "h-uats" else 8, method=method,
                                   problem_id="synthetic-7"):
            sub(ev)
    pool = WorkerPool(store, max_workers=2, poll_s=0.5)
    export_dir = base / "exports"
    reports_dir = base / "reports"
    reports_dir.mkdir()
    demo = build_demo(store, pool, export_dir, reports_dir)
    port = _free_port()
    demo.queue(default_concurrency_limit=8).launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True,
                                                   quiet=True, **launch_kwargs(export_dir))
    try:
        yield {"url": f"http://127.0.0.1:{port}", "store": store, "export_dir": export_dir, "pool": pool,
               "reports_dir": reports_dir}
    finally:
        pool.shutdown(cancel=True, timeout_s=30)
        demo.close()


@pytest.fixture(scope="session")
def browser(chromium_path: str) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        # Playwright gives every launch a fresh temporary profile (the --user-data-dir of reference.md §8)
        b = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_FLAGS)
        try:
            yield b
        finally:
            b.close()


def _page(browser: Any, served: dict[str, Any], name: str, viewport: dict[str, int]) -> Iterator[Any]:
    ctx = browser.new_context(viewport=viewport, accept_downloads=True)
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(served["url"])
    pg.wait_for_selector("#run-btn", timeout=60_000)
    wait_idle(pg)
    try:
        yield pg
    finally:
        ARTIFACTS.mkdir(exist_ok=True)
        pg.screenshot(path=str(ARTIFACTS / f"{name}-end.png"), full_page=True)
        ctx.close()
    assert not errors, errors  # no JavaScript error on the page, ever


@pytest.fixture()
def page(browser: Any, served: dict[str, Any], request: pytest.FixtureRequest) -> Iterator[Any]:
    yield from _page(browser, served, request.node.name, {"width": 1500, "height": 1100})


@pytest.fixture()
def laptop_page(browser: Any, served: dict[str, Any], request: pytest.FixtureRequest) -> Iterator[Any]:
    """The app on a laptop screen: a 1280 × 800 viewport."""
    yield from _page(browser, served, request.node.name, LAPTOP)


def wait_idle(pg: Any, timeout_s: float = 30.0) -> None:
    """Wait until Gradio shows no pending request (its progress overlays are gone)."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if pg.locator(".eta-bar, .progress-text").count() == 0:
            return
        time.sleep(0.1)


def shot(pg: Any, name: str, selector: str | None = None) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    if selector:
        pg.locator(selector).screenshot(path=str(path))
    else:
        pg.screenshot(path=str(path), full_page=True)
    return path
