"""In Chromium: the tree's R̄ colour bar stays painted after the address bar changes (the app writes the open run
and node into it). Plotly fills the bar with url("<page address>#gradient"), which names another document once
the address changes unless the app re-points it."""

from __future__ import annotations

import io
import time
from typing import Any

import pytest

from .pages import PAIR, fill, shot, wait_plot

pytestmark = pytest.mark.browser


def _bar_colours(page: Any) -> int:
    """Distinct colours painted inside the colour bar's fill (a blank bar is one: the background)."""
    from PIL import Image

    png = page.locator("#tree .cbfill").first.screenshot()
    img = Image.open(io.BytesIO(png)).convert("RGB")
    w, h = img.size
    inner = img.crop((1, 1, max(2, w - 1), max(2, h - 1)))  # not the outline
    return len(set(inner.getdata()))


def _wait_painted(page: Any, label: str) -> None:
    deadline = time.time() + 20
    colours = 0
    while time.time() < deadline:
        colours = _bar_colours(page)
        if colours >= 20:
            return
        time.sleep(0.3)
    shot(page, f"colourbar-{label}", "#tree")
    raise AssertionError(f"the R̄ colour bar paints {colours} colour(s) {label}; a gradient paints dozens")


def test_colour_bar_stays_painted_after_the_address_changes(page: Any, served: dict[str, Any]) -> None:
    run_id = PAIR["h-uats"]
    fill(page, "open-id", run_id)
    page.locator("#open-btn").click()
    wait_plot(page, "#tree", f"e.dataset.run === '{run_id}'")
    page.wait_for_function(f"() => location.search.includes('run={run_id}')")
    page.wait_for_selector("#tree .cbfill")
    _wait_painted(page, "after the run opened")
    # selecting a node writes node= into the address as well
    fill(page, "node-id", "3")
    page.locator("#inspect-btn").click()
    page.wait_for_function("() => location.search.includes('node=3')")
    _wait_painted(page, "after a node was selected")
