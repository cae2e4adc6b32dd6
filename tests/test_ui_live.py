"""Live drawing without a browser: a growing run is read incrementally (only the rows written since) and
equals a fresh load at every step; the Search tab's poll sends every iteration, in order, whatever number
of iterations lands between two polls; the run bar enables only the controls that can act."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gradio as gr
import pytest
from gradio import Request

from storage import RunStore
from testkit.synthetic import synthetic_events
from uats_core.events import IterationEnded, RunEnded, RunStarted
from ui.choices import server_choices
from ui.jobs.pool import WorkerPool
from ui.read_slots import ReadSlots
from ui.tabs import viewer as viewer_mod
from ui.tabs.common import AppContext, RunCache
from ui.tabs.page_state import ComparedPair, OpenRun
from ui.tabs.runbar import bar_state, control_state
from ui.tabs.search import build_search_tab
from ui.tabs.search_events import live_update
from ui.views.treedata import RunData

RUN = "1f" * 16


def _writer(store: RunStore, n_nodes: int = 140, seed: int = 3) -> Iterator[int]:
    """Writes the synthetic run's events one iteration (one transaction) per step; yields the iteration
    just written (0 after RunStarted, -1 after RunEnded)."""
    sub = store.subscriber()
    for ev in synthetic_events(RUN, n_nodes=n_nodes, seed=seed, budget=16):
        sub(ev)
        if isinstance(ev, RunStarted):
            yield 0
        elif isinstance(ev, IterationEnded):
            yield ev.iteration
        elif isinstance(ev, RunEnded):
            yield -1


def _same(a: RunData, b: RunData) -> None:
    assert a.max_iteration == b.max_iteration
    assert a.nodes == b.nodes and a.iterations == b.iterations and a.run == b.run
    for t in range(a.max_iteration + 1):
        sa, sb = a.state_at(t), b.state_at(t)
        assert sa.nodes == sb.nodes and sa.children == sb.children and sa.decisions == sb.decisions, t


def test_a_growing_run_read_incrementally_equals_a_fresh_load(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path / "runs.db"))
    writer = _writer(store)
    next(writer)
    grown = RunData.load(store, RUN)
    reads: list[Any] = []
    real_get_nodes = store.get_nodes
    store.get_nodes = lambda run_id, since_iter=None: reads.append(since_iter) or real_get_nodes(run_id, since_iter)
    rng = random.Random(5)
    done = False
    while not done:
        for _ in range(rng.randint(1, 3)):  # one to three iterations between two reads
            if next(writer, None) in (None, -1):
                done = True
                break
        grown = grown.grown(store)
        _same(grown, RunData.load(store, RUN))
    assert grown.run["status"] == "finished"
    assert reads and None not in reads  # every growth asked for the rows since its watermark only


def _search_tab(store: RunStore, tmp_path: Path) -> tuple[AppContext, Any, WorkerPool]:
    """The real Search tab (its components and RunViewer) in a page of its own; nothing is served."""
    pool = WorkerPool(store, max_workers=1, drive=False)  # nothing is submitted: no thread of its own
    with gr.Blocks():
        st, cst = gr.State(OpenRun()), gr.State(ComparedPair())
        notice, timer = gr.Markdown(), gr.Timer(0.5)
        with gr.Tabs() as tabs:
            ctx = AppContext(
                store=store,
                pool=pool,
                cache=RunCache(store),
                export_dir=tmp_path,
                notice=notice,
                timer=timer,
                tabs=tabs,
                run_state=st,
                pair_state=cst,
                choices=server_choices(),
                off_queue=ReadSlots(2, 2),
            )
            with gr.Tab("Search"):
                tab = build_search_tab(ctx)
    return ctx, tab, pool


def _drawn(payload: Any) -> list[int]:
    """The iterations a poll's tree payload draws, in order ([] when the tree is left as it is)."""
    if not isinstance(payload, str) or not payload:
        return []
    spec = json.loads(payload)
    return [f["meta"]["iteration"] for f in spec.get("frames", [spec])]


@pytest.mark.parametrize("slow_page", [False, True])
def test_every_iteration_is_drawn_in_order_however_many_land_between_polls(
    tmp_path: Path, monkeypatch, slow_page: bool
) -> None:
    """Polls between bursts of 0-4 iterations; what each poll drew is recorded. slow_page: each poll may
    build one frame only (as when building takes long), so the frames left over come with later polls."""
    if slow_page:
        monkeypatch.setattr(viewer_mod, "FRAMES_BUILD_S", 0.0)
    store = RunStore(str(tmp_path / "runs.db"))
    ctx, tab, pool = _search_tab(store, tmp_path)
    viewer = tab.viewer
    try:
        writer = _writer(store)
        next(writer)
        s = OpenRun(run_id=RUN)
        rng = random.Random(11)
        ticks: list[list[int]] = []
        ended = False
        for _ in range(2000):  # bounded: a poll that never catches up fails below instead of hanging
            for _ in range(rng.randint(0, 4)):
                if not ended and next(writer, None) in (None, -1):
                    ended = True
            outs = live_update(ctx, viewer, s, True, {})
            ticks.append(_drawn(outs.get(tab.tree)))
            if ended and s.version == store.run_version(RUN):
                break
        assert ended and s.version == store.run_version(RUN), "the polls never caught up"
        final = store.get_run(RUN)
        drawn = [t for tick in ticks for t in tick]
        assert all(b > a for tick in ticks for a, b in zip(tick, tick[1:])), ticks  # each poll in order
        # every iteration once, in order; the last one again when only the run's status changed after it
        unique = [t for i, t in enumerate(drawn) if i == 0 or t != drawn[i - 1]]
        assert unique == list(range(final["iterations"] + 1)), ticks
        if slow_page:
            assert max(len(t) for t in ticks) == 1
        else:
            assert max(len(t) for t in ticks) > 1  # a burst is drawn as several frames, never skipped
        last = json.loads(outs[tab.tree]) if isinstance(outs.get(tab.tree), str) else None
        frames = (last or {}).get("frames") or ([last] if last else [])
        assert frames and frames[-1]["meta"]["status"] == "finished"
        assert frames[-1]["meta"]["n_nodes"] == len(RunData.load(store, RUN).state_at(None).nodes)  # every node
        assert ctx.cache.loads["full"] == 1 and ctx.cache.loads["grown"] >= 2  # loaded once, then grown
    finally:
        pool.shutdown(cancel=True, timeout_s=5)


def test_run_bar_enables_only_the_controls_that_can_act() -> None:
    can, why = control_state(None)
    assert not any(can.values()) and "No run is open" in why
    can, why = control_state({"run_id": "ab" * 16, "status": "running", "paused": False})
    assert can == {"cancel": True, "pause": True, "step": True, "resume": False, "replay": True}
    can, why = control_state({"run_id": "ab" * 16, "status": "queued", "paused": True})
    assert can == {"cancel": True, "pause": False, "step": True, "resume": True, "replay": True}
    assert "paused" in why
    can, why = control_state({"run_id": "ab" * 16, "status": "finished", "paused": False})
    assert can == {"cancel": False, "pause": False, "step": False, "resume": False, "replay": True}
    assert "ended (finished)" in why


def test_run_bar_disables_the_controls_of_a_run_the_requester_does_not_own(tmp_path: Path) -> None:
    """A live run started by another page (or the command line) can be viewed and replayed, not controlled;
    the hint says who started it. Its owner gets the controls."""
    from ui.access import requester

    store = RunStore(str(tmp_path / "runs.db"))
    mine, theirs = Request(session_hash="page-a"), Request(session_hash="page-b")
    for rid, owner in (("aa" * 16, requester(mine)), ("cc" * 16, None)):
        store.register_run(rid, method="h-uats", problem_id="p", question="q", paused=True, owner=owner)
    can, why = bar_state(store, OpenRun(run_id="aa" * 16), mine)
    assert can == {"cancel": True, "pause": False, "step": True, "resume": True, "replay": True}, why
    can, why = bar_state(store, OpenRun(run_id="aa" * 16), theirs)
    assert not (can["cancel"] or can["step"] or can["resume"] or can["pause"]) and can["replay"]
    assert why.startswith("Run aaaaaaaa was started by another browser session") and "only they may" in why
    can, why = bar_state(store, OpenRun(run_id="cc" * 16), mine)
    assert not can["step"] and "the command line or an evaluation" in why
    assert bar_state(store, OpenRun(run_id="ee" * 16), mine) == control_state(None)  # no such run: as if none open


def test_the_bench_reads_skipped_and_out_of_order_iterations_from_the_draw_log() -> None:
    """The app benchmark's reading of the page's draw log (testkit.draw_log): the iteration drawn on opening is not a
    live update, an iteration never drawn is listed as skipped, a later draw of an older iteration breaks the order."""
    from testkit.draw_log import per_iteration_draws

    def log(*its: int) -> list[dict[str, Any]]:
        return [{"run": RUN, "iteration": t, "latencyMs": 100.0 * (i + 1)} for i, t in enumerate(its)]

    good = per_iteration_draws(log(2, 3, 4, 5, 5), RUN, 5)
    assert good["skipped"] == [] and good["in_order"] and good["iterations_live"] == 3
    assert good["median_s"] == 0.3  # 200, 300, 400 ms: the open (2) and the repeated 5 do not count
    gap = per_iteration_draws(log(2, 3, 5), RUN, 6)
    assert gap["skipped"] == [4, 6] and gap["iterations_live"] == 4
    assert not per_iteration_draws(log(2, 4, 3), RUN, 4)["in_order"]
    assert per_iteration_draws([{"run": "other", "iteration": 1, "latencyMs": 5.0}], RUN, 3)["median_s"] is None
