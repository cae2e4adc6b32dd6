"""In Chromium: the R̄ colour bar stays painted when the address bar changes under it, and links hold what
the user chose: no node until one is clicked, a message for a run or node that does not exist, and messages
that stay until the user acts."""

from __future__ import annotations

import io
import time
from typing import Any

import pytest

from .conftest import ARTIFACTS, PAIR, shot
from .test_app_browser import NODE_PIXEL_JS, notice_text, open_run, wait_notice, wait_plot, wait_text

pytestmark = pytest.mark.browser


def colour_bar_colours(pg: Any, sel: str, name: str) -> int:
    """Distinct non-white colours painted inside the colour bar's box (Plotly's `rect.cbfill`), read from
    a screenshot of that box: what a person sees, not what the DOM says."""
    from PIL import Image

    bar = pg.locator(f"{sel} .uats-plot .colorbar rect.cbfill").first
    bar.scroll_into_view_if_needed()
    box = bar.bounding_box()
    assert box and box["width"] >= 6 and box["height"] >= 60, box
    # inside the border: the fill alone
    clip = {"x": box["x"] + 2, "y": box["y"] + 2, "width": box["width"] - 4, "height": box["height"] - 4}
    png = pg.screenshot(clip=clip)
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / f"{name}.png").write_bytes(png)
    img = Image.open(io.BytesIO(png)).convert("RGB")
    return len({c for c in img.getdata() if min(c) < 235})


def details_text(pg: Any) -> str:
    """The inspector's details as written (not Gradio's progress timer shown over them while a request runs)."""
    return pg.locator('#node-details [data-testid="markdown"]').inner_text().strip()


def goto(pg: Any, url: str) -> None:
    """Open `url` in the page and wait for the app to be up (minutes on a loaded machine)."""
    pg.goto(url)
    pg.wait_for_selector("#run-btn", timeout=180_000)


def wait_address(pg: Any, cond: str, timeout_s: float = 60) -> str:
    pg.wait_for_function(f"() => {{ const q = new URLSearchParams(location.search); return {cond}; }}",
                         timeout=timeout_s * 1000)
    return pg.evaluate("() => location.search")


def test_colour_bar_stays_painted_when_the_address_changes(page: Any) -> None:
    open_run(page, PAIR["h-uats"])
    # the page was opened at / and the address now names the run: the bar drawn before must still paint
    wait_address(page, f"q.get('run') === '{PAIR['h-uats']}'")
    assert colour_bar_colours(page, "#tree", "colour-bar-opened") > 30
    # a click adds node=…: the address changes again under the same bar
    target = page.evaluate(NODE_PIXEL_JS, ["#tree", None])
    page.mouse.click(target["x"], target["y"])
    wait_address(page, f"q.get('node') === '{target['id']}'")
    wait_text(page, "#node-details", f"Node {target['id']}", timeout_s=60)
    assert colour_bar_colours(page, "#tree", "colour-bar-node-clicked") > 30
    shot(page, "colour-bar-painted", "#tree")


def test_opening_a_run_leaves_the_node_out_of_the_address(page: Any, served: dict[str, Any]) -> None:
    open_run(page, PAIR["rebase"])
    wait_address(page, f"q.get('run') === '{PAIR['rebase']}'")
    time.sleep(1.0)  # the address sync runs every 0.3 s: give it a few turns to (wrongly) add a node
    search = page.evaluate("() => location.search")
    assert "node=" not in search and "t=" not in search, search  # neither was chosen: the final tree, no node
    target = page.evaluate(NODE_PIXEL_JS, ["#tree", None])
    page.mouse.click(target["x"], target["y"])
    wait_address(page, f"q.get('node') === '{target['id']}'")
    # a link opened fresh holds the run alone: nothing selected
    goto(page, f"{served['url']}/?run={PAIR['rebase']}")
    wait_plot(page, "#tree", f"e.dataset.run === '{PAIR['rebase']}'", timeout_s=120)
    time.sleep(1.0)
    search = page.evaluate("() => location.search")
    assert "node=" not in search and "t=" not in search, search
    assert details_text(page) == ""


def test_a_run_that_does_not_exist_keeps_its_message(page: Any, served: dict[str, Any]) -> None:
    goto(page, f"{served['url']}/?run=doesnotexist")
    wait_notice(page, "doesnotexist", timeout_s=120)
    # the page's own start-up (problem list, runs, pickers) must not wipe it
    deadline = time.time() + 4
    while time.time() < deadline:
        assert "doesnotexist" in notice_text(page), notice_text(page)
        time.sleep(0.2)
    shot(page, "link-run-missing")


def test_a_node_that_does_not_exist_gets_a_message(page: Any, served: dict[str, Any]) -> None:
    goto(page, f"{served['url']}/?run={PAIR['h-uats']}&node=9999")
    wait_plot(page, "#tree", f"e.dataset.run === '{PAIR['h-uats']}'", timeout_s=120)
    text = wait_notice(page, "9999", timeout_s=60)
    assert "node" in text and "no node 9999" in text, text
    deadline = time.time() + 3
    while time.time() < deadline:
        assert "9999" in notice_text(page)
        time.sleep(0.2)
    # nothing is selected, so the address names the run alone
    wait_address(page, f"q.get('run') === '{PAIR['h-uats']}' && !q.has('node')")
    assert details_text(page) == ""
    shot(page, "link-node-missing")
