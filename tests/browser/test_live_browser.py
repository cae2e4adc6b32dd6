"""Live drawing in the page: a run written iteration by iteration, in bursts of several iterations between
two polls, is drawn with every iteration appearing, in order (the page's log of what each draw showed)."""

from __future__ import annotations

from typing import Any

import pytest

from testkit.synthetic import synthetic_events
from uats_core.events import IterationEnded, RunEnded

from .pages import open_run, wait_plot

pytestmark = pytest.mark.browser


def test_a_run_written_in_bursts_is_drawn_iteration_by_iteration(page: Any, served: dict[str, Any]) -> None:
    run_id = "d1" * 16
    sub = served["store"].subscriber()
    events = iter(synthetic_events(run_id, n_nodes=150, seed=4, budget=16))
    for ev in events:  # the run starts and its first iteration is written
        sub(ev)
        if isinstance(ev, IterationEnded):
            break
    open_run(page, run_id)
    written, burst = 1, 0
    for ev in events:
        sub(ev)
        if isinstance(ev, IterationEnded):
            written, burst = ev.iteration, burst + 1
            if burst == 3:  # three iterations land between two polls; then wait for the page to draw them
                wait_plot(page, "#tree", f"Number(e.dataset.iteration) === {written}")
                burst = 0
        if isinstance(ev, RunEnded):
            break
    wait_plot(page, "#tree", "e.dataset.status === 'finished'")
    drawn = page.evaluate("() => window.__uatsDraws.filter(d => d.el === 'tree').map(d => d.iteration)")  # one run
    unique = [t for i, t in enumerate(drawn) if i == 0 or t != drawn[i - 1]]  # a status-only redraw repeats one
    assert unique == list(range(unique[0], written + 1)), drawn
    assert unique[0] <= 1 and written > 6


# when the run bar's status line or its hint first shows the word "finished", by the page's clock (the draw log's `at`):
# only text a person sees counts (a copy of the line before may stand over a hidden new one while the tree draws)
SAID_FINISHED_JS = """() => {
  window.__uatsSaidFinished = null;
  const seen = (el) => {
    const w = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    let text = '';
    for (let n = w.nextNode(); n; n = w.nextNode()) {
      const p = n.parentElement;
      let shown = !!p && getComputedStyle(p).visibility === 'visible' && p.getClientRects().length > 0;
      for (let a = p; shown && a && a !== el.parentElement; a = a.parentElement) {
        shown = getComputedStyle(a).opacity !== '0';
      }
      if (shown) text += n.data;
    }
    return /\\bfinished\\b/.test(text);
  };
  const lines = ['run-status', 'run-hint'].map(id => document.getElementById(id));
  const look = () => {
    if (window.__uatsSaidFinished === null && lines.some(seen)) window.__uatsSaidFinished = Date.now();
  };
  for (const el of lines)
    new MutationObserver(look).observe(el, {childList: true, subtree: true, characterData: true, attributes: true});
}"""


def test_no_frame_is_drawn_after_the_status_says_finished(page: Any, served: dict[str, Any]) -> None:
    """The run's last iterations and its end land between two polls: the page gets the frames and the final status
    together. The status line says "finished" only once the tree has drawn its last frame (it had said so at once,
    while the tree went on drawing the burst's frames for a second or more)."""
    run_id = "d2" * 16
    sub = served["store"].subscriber()
    events = list(synthetic_events(run_id, n_nodes=150, seed=5, budget=16))
    first = next(i for i, ev in enumerate(events) if isinstance(ev, IterationEnded))
    for ev in events[: first + 1]:  # the run starts and its first iteration is written
        sub(ev)
    open_run(page, run_id)
    wait_plot(page, "#tree", "e.dataset.iteration === '1'")
    page.evaluate(SAID_FINISHED_JS)
    last = max(ev.iteration for ev in events if isinstance(ev, IterationEnded))
    assert last >= 8  # a burst of frames, each drawn in turn
    for ev in events[first + 1 :]:  # every other iteration and the run's end at once
        sub(ev)
    page.wait_for_function("() => window.__uatsSaidFinished !== null")
    wait_plot(
        page,
        "#tree",
        f"e.dataset.status === 'finished' && e.dataset.iteration === '{last}' && !e._uatsBusy && !e._uatsQueue.length",
    )
    said, draws = page.evaluate("() => [window.__uatsSaidFinished, window.__uatsDraws.filter(d => d.el === 'tree')]")
    after = [(d["iteration"], d["at"] - said) for d in draws if d["at"] > said]
    assert not after, after  # (iteration, ms after "finished") of each frame drawn late
    assert draws[-1]["iteration"] == last and draws[-1]["status"] == "finished", draws[-3:]
