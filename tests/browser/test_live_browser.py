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
                wait_plot(page, "#tree", f"Number(e.dataset.iteration) === {written}", timeout_s=120)
                burst = 0
        if isinstance(ev, RunEnded):
            break
    wait_plot(page, "#tree", "e.dataset.status === 'finished'", timeout_s=120)
    drawn = page.evaluate("() => window.__uatsDraws.filter(d => d.el === 'tree').map(d => d.iteration)")  # one run
    unique = [t for i, t in enumerate(drawn) if i == 0 or t != drawn[i - 1]]  # a status-only redraw repeats one
    assert unique == list(range(unique[0], written + 1)), drawn
    assert unique[0] <= 1 and written > 6
