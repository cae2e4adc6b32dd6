"""The page's one poll: every tab's work on a timer tick runs in a single event.

Why one event: each Gradio event costs the page a snapshot of every component's value as the event starts
and ends (Gradio's loading status). With the Search tab's live tree, the Compare pair, the pickers' labels
and the idle check each on their own tick listener, and the run bar and idle check listening to changes of
the states the ticks wrote, one tick made seven events; the page's main thread was busy most of the time,
the timer fired every ~1.1 s instead of every TICK_S, and a live run's frames were drawn ever later
(`python -m benchmarks app`, docs/log.md).

So tabs register parts (`ctx.poll.add`, common.PollParts) and `wire_poll` makes one tick listener that runs them in order.
The poll writes the page states (`ctx.st`, `ctx.cst`) in place and never lists them as outputs: an output
state with change listeners fires them after every tick. What those listeners do for a tick's changes (the
run bar's buttons, the Why panel at a run's end) is a part of the poll instead."""

from __future__ import annotations

from typing import Any, Sequence

import gradio as gr

from .common import AppContext


def _is_skip(value: Any) -> bool:
    return isinstance(value, dict) and value.get("__type__") == "update" and len(value) == 1


def _keep_in_place(held: dict[str, Any], returned: Any) -> None:
    """A part returned a page state: keep the object the session holds (the poll does not output it)."""
    if isinstance(returned, dict) and returned is not held and not _is_skip(returned):
        held.clear()
        held.update(returned)


def wire_poll(ctx: AppContext) -> None:
    """One ctx.timer.tick listener that runs every part registered in ctx.poll. Each output is written by the first part
    that does not skip it; page states (ctx.st, ctx.cst) are updated in place instead of output."""
    parts, states = ctx.poll, [ctx.st, ctx.cst]
    inputs: list[Any] = []
    for p in parts.parts:
        inputs += [c for c in [*p.inputs, *p.kwargs.values()] if all(c is not i for i in inputs)]
    outputs: list[Any] = []
    for p in parts.parts:
        outputs += [c for c in p.outputs if all(c is not o for o in outputs) and all(c is not s for s in states)]

    for s in states:  # the parts read the states they write in place: each one must be an input
        if not any(s is c for c in inputs) and any(s is o for p in parts.parts for o in p.outputs):
            raise ValueError("a poll part outputs a page state it does not take as input")

    def index(seq: Sequence[Any], comp: Any) -> int:
        return next(i for i, c in enumerate(seq) if c is comp)

    # where each part's inputs sit among the poll's, and where its outputs go (-1-i: page state input i)
    places = [([index(inputs, c) for c in p.inputs], {k: index(inputs, c) for k, c in p.kwargs.items()},
               [-1 - index(inputs, c) if any(c is s for s in states) else index(outputs, c) for c in p.outputs])
              for p in parts.parts]

    def on_poll(request: gr.Request, *values: Any) -> tuple[Any, ...]:
        out: list[Any] = [gr.skip()] * len(outputs)
        for p, (at, kw_at, to) in zip(parts.parts, places):
            kw = {k: values[i] for k, i in kw_at.items()}
            if p.with_request:
                kw["request"] = request
            got = p.fn(*[values[i] for i in at], **kw)
            for k, value in zip(to, (got,) if len(to) == 1 else got):  # one output: the value, as in Gradio
                if k < 0:
                    _keep_in_place(values[-1 - k], value)
                elif _is_skip(out[k]) and not _is_skip(value):
                    out[k] = value
        return tuple(out)

    ctx.timer.tick(on_poll, inputs, outputs, show_progress="hidden")
