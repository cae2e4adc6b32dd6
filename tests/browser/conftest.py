"""Fixtures for the Playwright tests: the app served in-process on a free port over a fresh database, and
Debian's Chromium (never a downloaded browser) with the flags that work offline and headless here. Each test
gets a new page with empty storage, in a browser context kept for the session per screen size, whose HTTP
cache holds Gradio's scripts. A test that fails leaves a screenshot of its page in artifacts/<test>-failed.png."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from testkit.browser import CHROMIUM_FLAGS
from testkit.serving import free_port, launch_served

from .pages import ARTIFACTS, LAPTOP, PAIR, WIDE, patient, wait_idle

# HTML and Markdown payloads that once broke the page, in a problem set the server offers (evil.jsonl)
IMG = '<img src=x onerror="window.__pwned=1">'
COVER = '<div id="cover" style="position:fixed;inset:0;background:red;z-index:9999">covered</div>'
MD_IMG = "![t](http://127.0.0.1:9/fetch-me.png)"
QUESTION = f"Evil {IMG} and {COVER} then {MD_IMG} so what is $\\frac{{1}}{{2}}+\\frac{{1}}{{2}}$?"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """Keep the test body's report on the item, so the page fixture knows at teardown whether it failed."""
    report = (yield).get_result()
    if report.when == "call":
        item.outcome_call = report  # type: ignore[attr-defined]


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
    pol = save_causal_lm(d / "tiny-policy", hidden=32, layers=2, heads=2, kv_heads=1)
    prm = save_token_cls_prm(d / "tiny-prm", layers=2, hidden=32, heads=2, kv_heads=1)
    return str(Path(pol).resolve()), str(Path(prm).resolve())


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory, tiny_models: tuple[str, str]) -> Iterator[dict[str, Any]]:
    """The app offering the tiny models (their folder as --models-dir) and evil.jsonl (a --datasets-dir)."""
    os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"
    from storage import RunStore
    from testkit.doubles import record_synthetic
    from ui.app_ui import QUEUE_KWARGS, build_demo, launch_kwargs
    from ui.choices import server_choices
    from ui.jobs.pool import WorkerPool

    base = tmp_path_factory.mktemp("app")
    store = RunStore(str(base / "runs.db"))
    for method, rid in PAIR.items():
        record_synthetic(
            store, rid, n_nodes=160, seed=7 if method == "h-uats" else 8, method=method, problem_id="synthetic-7"
        )
    pool = WorkerPool(store, max_workers=2, poll_s=0.5)
    export_dir = base / "exports"
    reports_dir = base / "reports"
    reports_dir.mkdir()
    datasets = base / "datasets"
    datasets.mkdir()
    (datasets / "evil.jsonl").write_text(
        json.dumps({"id": "evil-1", "problem": QUESTION, "answer": "<b>1</b>"}) + "\n", encoding="utf-8"
    )
    choices = server_choices(models_dirs=[Path(tiny_models[0]).parent], datasets_dirs=[datasets])
    demo = build_demo(store, pool, export_dir, reports_dir, choices)
    # the launcher's queue, as the page gets it
    url = launch_served(demo.queue(**QUEUE_KWARGS), free_port(), **launch_kwargs(export_dir))
    try:
        yield {"url": url, "store": store, "export_dir": export_dir, "pool": pool, "reports_dir": reports_dir}
    finally:
        pool.shutdown(cancel=True, timeout_s=30)
        demo.close()


@pytest.fixture(scope="session")
def browser(chromium_path: str) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        # Playwright gives every launch a fresh temporary profile (its own --user-data-dir)
        b = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_FLAGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="session")
def context_for(browser: Any) -> Iterator[Callable[[dict[str, int]], Any]]:
    """The browser context for a screen size, one per size kept for the session: a fresh context loads and
    compiles Gradio's scripts again, about half of a page's load. What a page keeps (cookies, local storage,
    IndexedDB) is emptied before each test's page opens (_page), so no test sees what another left."""
    made: dict[tuple[int, int], Any] = {}

    def get(viewport: dict[str, int]) -> Any:
        key = (viewport["width"], viewport["height"])
        if key not in made:
            made[key] = patient(browser.new_context(viewport=viewport, accept_downloads=True))
        return made[key]

    try:
        yield get
    finally:
        for ctx in made.values():
            ctx.close()


def _page(
    context_for: Callable[[dict[str, int]], Any],
    served: dict[str, Any],
    request: pytest.FixtureRequest,
    viewport: dict[str, int],
) -> Iterator[Any]:
    ctx = context_for(viewport)
    ctx.set_storage_state({"cookies": [], "origins": []})  # clears cookies, local storage and IndexedDB
    ctx.clear_permissions()
    left = ctx.storage_state(indexed_db=True)
    assert not left["cookies"] and not any(o.get("localStorage") or o.get("indexedDB") for o in left["origins"]), left
    pg = ctx.new_page()  # a new page: its own session storage and history
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    # a test that opens an address first starts blank: loading the studio only to leave it was a page load each
    # (a few seconds of the suite's CPU apiece)
    if request.node.get_closest_marker("opens_an_address") is None:
        pg.goto(served["url"])
        pg.wait_for_selector("#run-btn")  # minutes on a loaded 2-core machine: the context waits STEP_S
        wait_idle(pg)
    try:
        yield pg
        outcome = getattr(request.node, "outcome_call", None)
        if outcome is not None and outcome.failed:  # what the page showed when the test failed
            ARTIFACTS.mkdir(exist_ok=True)
            pg.screenshot(path=str(ARTIFACTS / f"{request.node.name}-failed.png"), full_page=True)
    finally:
        for opened in ctx.pages:  # the test's page and any it opened: the next test's page is the only one
            opened.close()
    assert not errors, errors  # no JavaScript error on the page, ever


@pytest.fixture()
def page(
    context_for: Callable[[dict[str, int]], Any], served: dict[str, Any], request: pytest.FixtureRequest
) -> Iterator[Any]:
    yield from _page(context_for, served, request, {"width": 1500, "height": 1100})


@pytest.fixture()
def laptop_page(
    context_for: Callable[[dict[str, int]], Any], served: dict[str, Any], request: pytest.FixtureRequest
) -> Iterator[Any]:
    """The app on a laptop screen: a 1280 × 800 viewport."""
    yield from _page(context_for, served, request, LAPTOP)


@pytest.fixture()
def wide_page(
    context_for: Callable[[dict[str, int]], Any], served: dict[str, Any], request: pytest.FixtureRequest
) -> Iterator[Any]:
    """The app on a desktop screen: a 1920 × 1080 viewport."""
    yield from _page(context_for, served, request, WIDE)


SCREENS = {"1280x800": LAPTOP, "1920x1080": WIDE}


@pytest.fixture()
def screen_page(
    context_for: Callable[[dict[str, int]], Any], served: dict[str, Any], request: pytest.FixtureRequest
) -> Iterator[Any]:
    """The app at the screen the test names (parametrize indirect: one of SCREENS' keys)."""
    yield from _page(context_for, served, request, SCREENS[request.param])
