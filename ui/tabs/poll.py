"""The page's one poll: every tab's work on a timer tick runs in a single event.

Why one event: each Gradio event costs the page a snapshot of every component's value as the event starts
and ends (Gradio's loading status). With the Search tab's live tree, the Compare pair, the pickers' labels
and the idle check each on their own tick listener, and the run bar and idle check listening to changes of
the states the ticks wrote, one tick made seven events; the page's main thread was busy most of the time,
the timer fired every ~1.1 s instead of every TICK_S, and a live run's frames were drawn ever later
(`python -m benchmarks app`, docs/log.md).

So tabs register parts (`ctx.poll.add`, common.PollParts) and `wire_poll` makes one tick listener that runs them in
order. The poll writes the page states (`ctx.run_state`, `ctx.pair_state`) in place and never lists them as outputs: an
output state with change listeners fires them after every tick. What those listeners do for a tick's changes (the run
bar's buttons, the Why panel at a run's end) is a part of the poll instead. The parts share one RunReads: each run's row
is read once a tick, whichever parts ask for it."""

from __future__ import annotations

from typing import Any

import gradio as gr

from .common import AppContext, keyed


def _is_skip(value: Any) -> bool:
    return isinstance(value, dict) and value.get("__type__") == "update" and len(value) == 1


def wire_poll(ctx: AppContext) -> None:
    """One ctx.timer.tick listener that runs every part registered in ctx.poll. Each output is written by the first part
    that does not skip it; page states (ctx.run_state, ctx.pair_state) are written in place by the parts, never
    output."""
    parts, states = ctx.poll.parts, [ctx.run_state, ctx.pair_state]
    if any(o is s for p in parts for o in p.outputs for s in states):
        raise ValueError("a poll part lists a page state as an output: the poll writes page states in place")
    inputs: list[Any] = []
    for p in parts:
        inputs += [c for c in [*p.inputs, *p.kwargs.values()] if all(c is not i for i in inputs)]
    outputs: list[Any] = []
    for p in parts:
        outputs += [c for c in p.outputs if all(c is not o for o in outputs)]

    def index(comp: Any) -> int:
        return next(i for i, c in enumerate(inputs) if c is comp)

    # where each part's inputs sit among the poll's
    places = [([index(c) for c in p.inputs], {k: index(c) for k, c in p.kwargs.items()}) for p in parts]

    def on_poll(request: gr.Request, *values: Any) -> Any:
        out: dict[Any, Any] = {}
        reads = ctx.reads()  # one read of each run this tick, shared by the parts
        for p, (at, kw_at) in zip(parts, places):
            kw = {k: values[i] for k, i in kw_at.items()}
            if p.with_request:
                kw["request"] = request
            if p.with_reads:
                kw["reads"] = reads
            got = p.fn(*[values[i] for i in at], **kw)
            if _is_skip(got):
                continue
            if not isinstance(got, dict) or not all(any(c is o for o in p.outputs) for c in got):
                raise TypeError(f"poll part {getattr(p.fn, '__name__', p.fn)} must return its outputs by component")
            for comp, value in got.items():
                if not _is_skip(value) and comp not in out:
                    out[comp] = value
        return keyed(out)

    ctx.timer.tick(on_poll, inputs, outputs, show_progress="hidden")
