"""The inspected node's step: Figure 1's controls (row order, rows per page, siblings only, pages, PNG/SVG export)
and the Why panel (the node's decision and where the step's spend went, in words).

The figure itself is drawn by RunViewer.node_view with the options the page state keeps (`OpenRun.fig1`), so a
click in the tree, a replay step and these controls all draw it the same way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gradio as gr

from storage import StorageError
from storage.shadow import read_shadow

from ..access import AccessDenied
from ..jobs.shadow import explain_shadow
from ..views.decisions import decision_iteration, explain_node, explain_step
from ..views.export import ExportError, render_image, store_export
from ..views.figure1 import PER_PAGE, export_size
from ..views.frontier import SORT_KEYS
from .common import LIVE, AppContext, RunReads, fig_json, notice
from .page_state import OpenRun, replaced
from .search_layout import EMPTY_WHY
from .viewer import RunViewer


def why_html(ctx: AppContext, s: OpenRun, node_id: Any, t: Any, reads: RunReads | None = None) -> str:
    """The selected node's decision at the iteration shown, then where its step's spend went (`reads`: the
    event's reads of the run log, when it has some)."""
    if not s.run_id:
        return EMPTY_WHY
    try:
        data = (reads or ctx.reads()).data(s.run_id)
    except StorageError:
        return EMPTY_WHY
    shown_t = data.max_iteration if t in (None, "") else max(0, min(int(t), data.max_iteration))
    try:
        nid = int(node_id) if node_id not in (None, "") else None
    except (TypeError, ValueError):
        nid = None
    if nid is not None and nid not in data.nodes:
        nid = None
    step_t = shown_t
    if nid not in (None, 0):
        dt = decision_iteration(data, nid)
        if dt is not None and dt <= shown_t:
            step_t = dt
    why = explain_node(data, nid, shown_t) if nid not in (None, 0) else ""
    if why and (shadow := read_shadow(ctx.store, s.run_id)):  # what passes the run never made say, apart
        why += explain_shadow(data, int(nid), shadow)
    why += explain_step(data, step_t) if step_t >= 1 else ""
    return why or EMPTY_WHY


def export_figure1(ctx: AppContext, fig: dict[str, Any], s: OpenRun, request: gr.Request | None = None) -> list[str]:
    """Figure 1 as PNG and SVG in the requester's export folder, at a size that fits every row: the paths."""
    name = f"figure1-{str(s.run_id)[:8]}-node{s.selected}" + (f"-t{s.t}" if s.t is not None else "")
    width, height = export_size(fig)
    target = ctx.export_target(request)
    return [
        str(store_export(target, name, f".{fmt}", render_image(fig, fmt, width=width, height=height)))
        for fmt in ("png", "svg")
    ]


def _selected_figure(ctx: AppContext, viewer: RunViewer, s: OpenRun) -> tuple[dict[str, Any] | None, str]:
    """(Figure 1 of the selected node's step at the iteration shown, or None and why not)."""
    if not s.run_id:
        return None, "open a run first, then select a node: Figure 1 shows its step"
    if s.selected in (None, 0):
        return None, "select a node (not the question): Figure 1 shows the candidates of its step"
    data = ctx.cache.get(s.run_id)
    state = data.state_at(s.t)
    nid = int(s.selected)
    if nid not in state.nodes:
        return None, f"node: run {s.run_id[:8]} has no node {nid} at iteration {state.iteration}"
    return viewer.step_view(data, state, nid, s.fig1, shadow=viewer.shadow(s.run_id)), ""


def _wire_controls(ctx: AppContext, tab: Any, viewer: RunViewer) -> None:
    def redraw(s: OpenRun, **change: Any) -> dict[Any, Any]:
        s.fig1 = replaced(s.fig1, **change)
        fig, _ = _selected_figure(ctx, viewer, s)
        if fig is not None and s.fig1.page is not None:
            s.fig1 = replaced(s.fig1, page=fig["meta"]["page"])  # clamped: ◀ at the first page stays there
        return {ctx.run_state: s, **({tab.figure1: fig_json(fig)} if fig is not None else {})}

    quiet = {"show_progress": "hidden", "trigger_mode": "always_last"}
    outs = [ctx.run_state, tab.figure1]
    tab.fig1_sort.input(
        lambda s, v: redraw(s, sort=SORT_KEYS.get(v, "parent"), page=None),
        [ctx.run_state, tab.fig1_sort],
        outs,
        **quiet,
    )
    tab.fig1_per_page.input(
        lambda s, v: redraw(s, per_page=int(v or PER_PAGE), page=None),
        [ctx.run_state, tab.fig1_per_page],
        outs,
        **quiet,
    )
    tab.fig1_siblings.input(
        lambda s, v: redraw(s, siblings=bool(v), page=None), [ctx.run_state, tab.fig1_siblings], outs, **quiet
    )

    def paged(step: int) -> Any:
        def handler(s: OpenRun) -> Any:
            fig, _ = _selected_figure(ctx, viewer, s)
            if fig is None:
                return gr.skip()
            return redraw(s, page=max(0, int(fig["meta"]["page"]) + step))

        return handler

    tab.fig1_prev.click(paged(-1), [ctx.run_state], outs, **quiet)
    tab.fig1_next.click(paged(1), [ctx.run_state], outs, **quiet)

    def on_export(s: OpenRun, request: gr.Request) -> dict[Any, Any]:
        fig, why = _selected_figure(ctx, viewer, s)
        if fig is None:
            return {ctx.notice: notice(why)}
        try:
            paths = export_figure1(ctx, fig, s, request)
        except (ExportError, AccessDenied) as exc:
            return {ctx.notice: notice(str(exc))}
        except Exception as exc:  # no Chromium, a crashed renderer: say so, the page keeps working
            return {ctx.notice: notice(f"export: the images could not be drawn ({type(exc).__name__})")}
        return {
            ctx.notice: notice(f"Figure 1 exported: {', '.join(Path(p).name for p in paths)}", ok=True),
            tab.fig1_files: gr.update(value=paths, visible=True),
        }

    tab.fig1_export.click(on_export, [ctx.run_state], [ctx.notice, tab.fig1_files])

    # a click on a row inspects that candidate, as a click in the tree does (Gradio finds the event argument by
    # its annotation)
    def on_row(s: OpenRun, evt: gr.EventData, **view: Any) -> dict[Any, Any]:
        return viewer.inspect(s, (getattr(evt, "_data", None) or {}).get("node_id"), redraw_tree=True, **view)

    tab.figure1.select(
        on_row, [ctx.run_state], viewer.inspect_outputs, inputs_kwargs=tab.filters, show_progress="hidden"
    )


def wire_step_panel(ctx: AppContext, tab: Any, why: gr.HTML) -> None:
    """Figure 1's controls, and the Why panel following every selection, iteration change and run end."""
    viewer = tab.viewer
    _wire_controls(ctx, tab, viewer)
    quiet = {"show_progress": "hidden", "trigger_mode": "always_last"}

    # after the inspector: a tree click, the Inspect button or a typed id all end with the inspector writing
    # the node's id into node_box (listening to the click itself drew this before the inspector's request). At the
    # iteration the open run's state shows, as Figure 1 is drawn: a link's node came before the slider was set (the
    # load's second answer sets it), and the Why read the slider's 0, "no decision about it yet"
    async def on_node(s: OpenRun, node: Any, request: gr.Request) -> Any:
        try:
            return await ctx.read_off_queue(request, why_html, ctx, s, node, s.t)
        except AccessDenied:  # no session: nothing to explain to (the inspector's event says why)
            return gr.skip()

    # off the queue as the tree's click is (ui/tabs/inspector.py), bounded by read_off_queue
    tab.node_box.change(on_node, [ctx.run_state, tab.node_box], [why], queue=False, **quiet)
    shown = gr.State(None)  # [run, iteration, version] the panel shows

    def from_run(s: OpenRun, last: Any, reads: RunReads | None = None) -> Any:
        # the open run, its iteration or its version changed (the user opened, stepped or replayed, or the poll
        # saw a run end); following a live run the panel waits for it to stop rather than compete with the tree
        rid, key, reads = s.run_id, None, reads or ctx.reads()
        if rid:
            try:
                version = reads.version(rid)
            except StorageError:
                return gr.skip()
            if s.t is None and version[0] in LIVE:
                return gr.skip()
            key = [rid, s.t, list(version)]
        if key == last:
            return gr.skip()
        return {why: why_html(ctx, s, s.selected, s.t, reads), shown: key}

    ctx.run_state.change(from_run, [ctx.run_state, shown], [why, shown], **quiet)
    ctx.poll.add(from_run, [ctx.run_state, shown], [why, shown], with_reads=True)
