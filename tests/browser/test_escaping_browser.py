"""HTML and Markdown in a problem, a step or an answer are shown as text, in Debian's Chromium; LaTeX still
renders. The payloads are the ones that broke the page: a fixed-position div covering it and an image
whose onerror runs script (and whose src the browser would fetch)."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import COVER, IMG, MD_IMG, QUESTION
from .pages import choose, fill, open_run, shot, wait_notice, wait_text

pytestmark = pytest.mark.browser

INJECTED_JS = """(sel) => {
  const root = document.querySelector(sel);
  return {img: root.querySelectorAll('img').length, cover: document.querySelectorAll('#cover').length,
          fixed: Array.from(root.querySelectorAll('*')).filter(e => getComputedStyle(e).position === 'fixed').length,
          katex: root.querySelectorAll('.katex').length, pwned: window.__pwned === undefined ? null : window.__pwned};
}"""


def _assert_inert(page: Any, sel: str, katex: bool = True) -> str:
    text = page.locator(sel).inner_text()
    found = page.evaluate(INJECTED_JS, sel)
    assert found["img"] == 0 and found["cover"] == 0 and found["fixed"] == 0 and found["pwned"] is None, found
    if katex:
        assert found["katex"] >= 1, found  # LaTeX still renders
    return text


def test_html_in_a_problem_renders_as_text(page: Any) -> None:
    choose(page, "dataset", "evil.jsonl")  # the server offers it (conftest: a --datasets-dir)
    text = wait_text(page, "#question", "covered")
    assert IMG in text and COVER in text and MD_IMG in text and "<b>1</b>" in text
    _assert_inert(page, "#question")
    # an error message quotes what was typed, literally
    fill(page, "open-id", IMG)
    page.click("#open-btn")
    assert IMG in wait_notice(page, "no run <img")
    _assert_inert(page, "#notice", katex=False)
    shot(page, "escaped-question")


def test_html_in_a_stored_run_renders_as_text_in_status_and_inspector(page: Any, served: dict[str, Any]) -> None:
    from testkit.doubles import record_synthetic

    run_id = "e5" * 16
    record_synthetic(
        served["store"],
        run_id,
        n_nodes=30,
        seed=5,
        method="h-uats",
        problem_id=f"p{IMG}",
        question=QUESTION,
        gold=COVER,
    )
    open_run(page, run_id)
    status = _assert_inert(page, "#run-status", katex=False)
    # a line longer than the bar is cut there ("…"): the cover's markup shows as text up to the cut
    assert IMG in status and COVER[:40] in status
    fill(page, "node-id", "0")
    page.click("#inspect-btn")
    text = wait_text(page, "#node-details", "covered")
    assert IMG in text and MD_IMG in text
    _assert_inert(page, "#node-details")
    shot(page, "escaped-inspector")
