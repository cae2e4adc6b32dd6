"""Issue 50, item 5 in Chromium: the case finder lists the signed-in user's case batches (state, counts, started
time), theirs alone; after a reload the owner still sees a going batch and cancels it from the list, while another
user neither sees it nor stops it with their Cancel. The batch rows are written as the app's pool writes them
(storage.batches.create_batch_job on this server), so no model runs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from storage import RunStore
from storage.batches import create_batch_job, end_batch_job, get_batch_job
from testkit.doubles import WorkerPoolDouble
from testkit.serving import served_app

from .pages import patient, shot, wait_notice, wait_text

pytestmark = pytest.mark.browser
ANN, PAST, BOBS = "a1" * 16, "a0" * 16, "b1" * 16


@pytest.fixture()
def team(tmp_path: Path) -> Iterator[dict[str, Any]]:
    store = RunStore(str(tmp_path / "runs.db"))
    create_batch_job(store, PAST, 8, {}, owner="user:ann")
    end_batch_job(store, PAST, "finished")
    create_batch_job(store, ANN, 40, {}, owner="user:ann")
    create_batch_job(store, BOBS, 4, {}, owner="user:bob")
    try:
        with served_app(store, WorkerPoolDouble(store), tmp_path, auth=[("ann", "a-pass"), ("bob", "b-pass")]) as url:
            yield {"url": url, "store": store}
    finally:
        store.close()


def _signed_in(browser: Any, url: str, user: str) -> Any:
    ctx = patient(browser.new_context(viewport={"width": 1280, "height": 800}))
    page = ctx.new_page()
    page.goto(url)
    page.fill("input[type=text]", user)
    page.fill("input[type=password]", f"{user[0]}-pass")
    page.get_by_role("button", name="Login").click()
    page.wait_for_selector("#run-btn")
    return page


def _batches(page: Any, rows: int) -> list[str]:
    """Open the Compare tab's case finder; the first cell of each of the list's `rows` rows once shown."""
    page.get_by_role("tab", name="Compare").click()
    page.get_by_text("Case finder: H-UATS searches whose answer uncertainty changed").click()
    page.wait_for_function(
        'n => document.querySelectorAll(\'#cf-batches [data-testid^="cell-"][data-testid$="-0"]\').length >= n',
        arg=rows,
    )
    return [page.locator(f'#cf-batches [data-testid="cell-{i}-0"]').inner_text().strip() for i in range(rows)]


def test_a_users_batches_are_listed_for_them_alone_and_cancelled_after_a_reload(
    browser: Any, team: dict[str, Any]
) -> None:
    bob = _signed_in(browser, team["url"], "bob")
    try:
        assert _batches(bob, 1) == [BOBS[:8]]
        assert ANN[:8] not in bob.locator("#cf-batches").inner_text()
        bob.click('#cf-batches [data-testid="cell-0-0"]')
        wait_notice(bob, f"case batch {BOBS[:8]} picked")
        bob.click("#cf-cancel")
        wait_notice(bob, f"cancel requested for case batch {BOBS[:8]}")
    finally:
        bob.context.close()
    assert not get_batch_job(team["store"], ANN)["cancel_requested"]
    ann = _signed_in(browser, team["url"], "ann")
    try:
        ann.reload()  # a page reloaded: the batch is the user's, not the page's
        ann.wait_for_selector("#run-btn")
        assert _batches(ann, 2) == [ANN[:8], PAST[:8]]
        listed = ann.locator("#cf-batches").inner_text()
        assert "queued" in listed and "0 of 40" in listed and "finished" in listed and BOBS[:8] not in listed
        ann.click('#cf-batches [data-testid="cell-0-0"]')
        wait_notice(ann, f"case batch {ANN[:8]} picked")
        ann.click("#cf-cancel")
        wait_notice(ann, f"cancel requested for case batch {ANN[:8]}")
        wait_text(ann, "#cf-batches", "queued (cancel asked)")
        ann.evaluate("() => document.querySelector('#cf-progress').scrollIntoView({block: 'start'})")
        shot(ann, "case-batches-1280x800", full_page=False)  # UATS_SCREENSHOTS=1: the list as the window shows it
    finally:
        ann.context.close()
    assert get_batch_job(team["store"], ANN)["cancel_requested"]
