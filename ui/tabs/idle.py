"""The page's poll timer stops once nothing can change: the open run and the compared pair have ended and
their last version is drawn, and no worker runs or waits. Each tick is a round trip that keeps the page's
main thread busy (about half the time with a finished run open), so an idle page must not tick. Opening or
starting anything changes ctx.run_state or ctx.pair_state, which starts the timer again."""

from __future__ import annotations

from typing import Any

import gradio as gr

from storage import StorageError

from .common import LIVE, AppContext, RunReads
from .page_state import SIDES, ComparedPair, OpenRun


def _ended_and_drawn(reads: RunReads, run_id: str | None, drawn: Any) -> bool:
    if not run_id:
        return True
    try:
        version = reads.version(run_id)
    except StorageError:
        return True
    return version[0] not in LIVE and drawn is not None and list(drawn) == list(version)


def is_idle(ctx: AppContext, s: OpenRun, cs: ComparedPair, reads: RunReads | None = None) -> bool:
    """True when no tick could draw anything new (`reads`: the tick's reads of the run log)."""
    if ctx.pool.active() or ctx.pool.queued() or cs.shadow or s.shadow:  # a shadow end not yet drawn
        return False
    reads = reads or ctx.reads()
    if not _ended_and_drawn(reads, s.run_id, s.version):
        return False
    if cs.both and cs.t is None:
        versions = cs.versions or (None, None)
        return all(_ended_and_drawn(reads, cs.run(side), v) for side, v in zip(SIDES, versions))
    return True


def wire_idle_timer(ctx: AppContext) -> None:
    """Stop ctx.timer when idle; start it again whenever the open run or the compared pair changes. Only the
    user's own changes fire those states' change (the poll writes them in place, ui/tabs/poll.py): an update
    restarts the page's interval, and one sent on every tick held each next tick back by a full period."""

    def on_tick(s: OpenRun, cs: ComparedPair, reads: RunReads) -> Any:
        return {ctx.timer: gr.Timer(active=False)} if is_idle(ctx, s, cs, reads) else gr.skip()

    def on_change(s: OpenRun, cs: ComparedPair) -> Any:
        # a selection changes the state too: only a live run or pair starts the timer
        return gr.skip() if is_idle(ctx, s, cs) else gr.Timer(active=True)

    ctx.poll.add(on_tick, [ctx.run_state, ctx.pair_state], [ctx.timer], with_reads=True)
    for state in (ctx.run_state, ctx.pair_state):
        state.change(on_change, [ctx.run_state, ctx.pair_state], [ctx.timer], show_progress="hidden")
