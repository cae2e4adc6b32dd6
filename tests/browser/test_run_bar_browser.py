"""The Search tab on a laptop screen (1280 × 800) and a desktop one (1920 × 1080): what the run controls
cause shows inside the viewport, where the click was made, and controls that cannot act are disabled with a
reason. Positions are read from the page's bounding boxes after the user-like scroll to the control clicked.
With UATS_SCREENSHOTS=1 each leaves what the window shows in artifacts/run-bar-*-<w>x<h>.png (docs/img)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from .pages import PAIR, fill, open_run, shot, wait_notice, wait_plot, wait_text

pytestmark = pytest.mark.browser

# Every drawn node of the tree, in page (viewport) pixels.
NODES_JS = """() => {
  const gd = document.querySelector('#tree .uats-plot');
  const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, box = gd.getBoundingClientRect();
  const out = [];
  for (const tr of gd.data.filter(t => t.name && t.name.startsWith('nodes')))
    for (let i = 0; i < tr.x.length; i++)
      out.push({id: tr.customdata[i][0], x: box.left + xa._offset + xa.l2p(tr.x[i]),
                y: box.top + ya._offset + ya.l2p(tr.y[i])});
  return out;
}"""


SCREENS = ["laptop_page", "wide_page"]  # conftest's fixtures: 1280 × 800 and 1920 × 1080


def _in_view(pg: Any, box: dict[str, float] | None, top: float = 0.0) -> bool:
    size = pg.viewport_size
    return (
        box is not None
        and box["x"] >= 0
        and box["x"] + box["width"] <= size["width"]
        and box["y"] >= top
        and box["y"] + box["height"] <= size["height"]
    )


def _screen_shot(pg: Any, name: str) -> None:
    size = pg.viewport_size
    shot(pg, f"run-bar-{name}-{size['width']}x{size['height']}", full_page=False)


def _click(pg: Any, selector: str) -> None:
    """Scroll to the control as a user would (only if it is out of view), then click it."""
    pg.locator(selector).scroll_into_view_if_needed()
    pg.click(selector)


@pytest.mark.parametrize("screen", SCREENS)
def test_a_bad_budget_message_shows_in_the_viewport(screen: str, request: pytest.FixtureRequest) -> None:
    """The user types N = 0, scrolls down to the knobs below the form, and clicks Run (where the bar is
    now): the message shows inside the viewport, and so does the bar."""
    pg = request.getfixturevalue(screen)
    fill(pg, "budget", "0")
    pg.locator("#open-btn").scroll_into_view_if_needed()  # the form's last control: below a laptop's fold
    pg.evaluate("() => window.scrollBy(0, 300)")
    pg.wait_for_function("() => window.scrollY > 0")
    _click(pg, "#run-btn")
    wait_notice(pg, "budget N: must be an integer >= 1")
    # the bar sticks under the message, not behind it (its offset follows the message's height)
    pg.wait_for_function(
        "() => document.getElementById('run-bar').getBoundingClientRect().top >= "
        "document.getElementById('notice').getBoundingClientRect().bottom - 1",
    )
    notice, run = pg.locator("#notice").bounding_box(), pg.locator("#run-btn").bounding_box()
    assert _in_view(pg, notice), f"the message is outside the {pg.viewport_size} viewport: {notice}"
    assert _in_view(pg, run), run
    _screen_shot(pg, "error")


@pytest.mark.parametrize("screen", SCREENS)
def test_step_mode_keeps_the_step_button_and_the_tree_in_view(
    screen: str, request: pytest.FixtureRequest, served: dict[str, Any]
) -> None:
    """A paused run of the embedded arithmetic world (the default form): after Step, the Step button and
    every node of the tree are inside the viewport, no node under the bar or the message line."""
    pg, store = request.getfixturevalue(screen), served["store"]
    before = {r["run_id"] for r in store.list_runs(limit=100)}
    box = pg.locator("#start-paused input")
    box.scroll_into_view_if_needed()
    box.check()
    _click(pg, "#run-btn")
    wait_plot(pg, "#tree", "e.dataset.status === 'running'", timeout_s=240)
    wait_text(pg, "#run-status", "paused")
    run_id = next(r["run_id"] for r in store.list_runs(limit=100) if r["run_id"] not in before)
    try:
        _click(pg, "#step-btn")
        deadline = time.time() + 120
        while store.get_run(run_id)["iterations"] < 1 and time.time() < deadline:
            time.sleep(0.2)
        wait_plot(pg, "#tree", "Number(e.dataset.iteration) === 1")
        step = pg.locator("#step-btn").bounding_box()
        assert _in_view(pg, step), f"Step is outside the viewport: {step}"
        # whatever sticks at the top of the window (the run bar, the message line) covers what is under it
        top = pg.evaluate(
            "() => Math.max(0, ...['#run-bar', '#notice'].map(s => document.querySelector(s))"
            ".filter(e => e && getComputedStyle(e).position === 'sticky')"
            ".map(e => e.getBoundingClientRect().bottom))"
        )
        nodes = pg.evaluate(NODES_JS)
        assert len(nodes) > 1
        size = pg.viewport_size
        hidden = [n for n in nodes if not (0 <= n["x"] <= size["width"] and top <= n["y"] <= size["height"])]
        assert not hidden, f"nodes outside the viewport or under the bar (bottom {top:.0f} px): {hidden[:5]}"
        _screen_shot(pg, "step")
    finally:
        store.request_cancel(run_id)


def test_controls_that_cannot_act_are_disabled_with_a_reason(laptop_page: Any) -> None:
    pg = laptop_page
    for sel in ("#prev-btn", "#play-btn", "#next-btn", "#expand-all", "#step-btn", "#cancel-btn"):
        assert pg.locator(sel).is_disabled(), f"{sel} is enabled with no run open"
    pg.wait_for_function("() => document.querySelector('#prev-btn').title.includes('No run is open')")
    assert "No run is open" in pg.locator("#run-hint").inner_text()
    open_run(pg, PAIR["h-uats"])
    pg.wait_for_function("() => !document.querySelector('#prev-btn').disabled")
    assert pg.locator("#step-btn").is_disabled()  # the run has finished: nothing to step
    pg.wait_for_function("() => document.querySelector('#step-btn').title.includes('has ended (finished)')")
    assert pg.locator("#prev-btn").get_attribute("title") == ""
