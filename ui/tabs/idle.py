"""The page's poll timer stops once nothing can change: the open run and the compared pair have ended and
their last version is drawn, and no worker runs or waits. Each tick is a round trip that keeps the page's
main thread busy (about half the time with a finished run open), so an idle page must not tick. Opening or
starting anything changes ctx.st or ctx.cst, which starts the timer again."""

from __future__ import annotations

from typing import Any

import gradio as gr

from storage import StorageError

from .common import LIVE, AppContext


def _ended_and_drawn(ctx: AppContext, run_id: str | None, drawn: Any) -> bool:
    if not run_id:
        return True
    try:
        version = ctx.store.run_version(run_id)
        status = ctx.store.get_run(run_id)["status"]
    except StorageError:
        return True
    return status not in LIVE and drawn is not None and list(drawn) == list(version)


def is_idle(ctx: AppContext, s: dict[str, Any], cs: dict[str, Any]) -> bool:
    """True when no tick could draw anything new."""
    if ctx.pool.active() or ctx.pool.queued() or cs.get("shadow") or s.get("shadow"):  # a shadow end not yet drawn
        return False
    if not _ended_and_drawn(ctx, s.get("run_id"), s.get("version")):
        return False
    if cs.get("a") and cs.get("b") and cs.get("t") is None:
        versions = cs.get("versions") or [None, None]
        return all(_ended_and_drawn(ctx, cs[k], v) for k, v in zip(("a", "b"), versions))
    return True


def wire_idle_timer(ctx: AppContext) -> None:
    """Stop ctx.timer when idle; start it again whenever the open run or the compared pair changes. Only the
    user's own changes fire those states' change (the poll writes them in place, ui/tabs/poll.py): an update
    restarts the page's interval, and one sent on every tick held each next tick back by a full period."""
    def on_tick(s, cs):
        return gr.Timer(active=False) if is_idle(ctx, s or {}, cs or {}) else gr.skip()

    def on_change(s, cs):  # a selection changes the state too: only a live run or pair starts the timer
        return gr.skip() if is_idle(ctx, s or {}, cs or {}) else gr.Timer(active=True)

    ctx.poll.add(on_tick, [ctx.st, ctx.cst], [ctx.timer])
    for state in (ctx.st, ctx.cst):
        state.change(on_change, [ctx.st, ctx.cst], [ctx.timer], show_progress="hidden")
