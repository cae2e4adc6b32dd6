"""The Search tab's node inspector events: selecting a node (a click in the tree or its id), collapsing
subtrees and the big-tree view options, starring and annotating a node, and keeping the open run's export zip
current (Figure 1's own controls: step_panel.py)."""

from __future__ import annotations

from typing import Any

import gradio as gr

from storage import StorageError

from ..access import AccessDenied, require_owner
from ..views.bundles import run_bundle
from ..views.export import ExportError, safe_name, write_bundle
from .common import AppContext, notice
from .page_state import OpenRun
from .search_layout import SearchTab
from .viewer import RunViewer


def export_run_zip(
    ctx: AppContext, run_id: str | None, name: str | None, request: gr.Request | None = None
) -> tuple[Any, str]:
    """The open run's export zip (rebuilt: a DownloadButton downloads its current value) in the requester's
    export folder, and a message."""
    if not run_id:
        return gr.update(value=None), ""
    data = ctx.cache.get(run_id)
    bundle = run_bundle(
        data, name=safe_name(name) if (name or "").strip() else None, stars=ctx.store.list_stars(run_id)
    )
    path = write_bundle(bundle, ctx.export_target(request))
    return gr.update(value=str(path), label=f"Download {path.name}"), f"export ready: {path.name}"


def _wire_selection(ctx: AppContext, t: SearchTab, viewer: RunViewer) -> None:
    # Gradio finds the event and request arguments by their annotations among the positional parameters
    async def on_tree_select(s, evt: gr.EventData, request: gr.Request, **view):
        node_id = (getattr(evt, "_data", None) or {}).get("node_id")
        try:
            return await ctx.read_off_queue(request, viewer.inspect, s, node_id, **view)
        except AccessDenied as exc:
            return {ctx.notice: notice(str(exc))}

    outs = viewer.inspect_outputs
    # no loading overlay: the inspector opens at the click (ui/js/plot.js), and Gradio's pending/complete status
    # on each output was a fifth of the page's time per click. Off the queue (read_off_queue bounds it): the page
    # updates its status of every component any event has touched at each status message, and a queued event has
    # five, an event off the queue three (docs/log.md, "A click off the queue")
    t.tree.select(on_tree_select, [ctx.run_state], outs, inputs_kwargs=t.filters, show_progress="hidden", queue=False)
    t.go_node.click(
        lambda s, n, **view: viewer.inspect(s, n, redraw_tree=True, **view),
        [ctx.run_state, t.node_box],
        outs,
        inputs_kwargs=t.filters,
        api_name="inspect_node",
    )
    t.node_box.submit(
        lambda s, n, **view: viewer.inspect(s, n, redraw_tree=True, **view),
        [ctx.run_state, t.node_box],
        outs,
        inputs_kwargs=t.filters,
    )

    def on_collapse(s: OpenRun, **view: Any) -> Any:
        if not s.run_id or s.selected is None:
            return {ctx.notice: notice("select a node first, then collapse or expand its subtree")}
        s.collapsed = tuple(sorted(set(s.collapsed) ^ {s.selected}))
        return {ctx.run_state: s, ctx.notice: notice(""), t.tree: viewer.draw_tree(s, view)[0]}

    t.collapse_btn.click(on_collapse, [ctx.run_state], [ctx.run_state, ctx.notice, t.tree], inputs_kwargs=t.filters)

    def on_expand_all(s: OpenRun, **view: Any) -> Any:
        s.collapsed = ()
        return {ctx.run_state: s, **({t.tree: viewer.draw_tree(s, view)[0]} if s.run_id else {})}

    t.expand_all.click(on_expand_all, [ctx.run_state], [ctx.run_state, t.tree], inputs_kwargs=t.filters)

    def redraw(s: OpenRun, **view: Any) -> Any:  # the big-tree view options (focus, collapsed dead branches)
        return viewer.draw_tree(s, view)[0] if s.run_id else gr.skip()

    for name in ("collapse_pruned", "focus"):
        t.filters[name].input(redraw, [ctx.run_state], [t.tree], inputs_kwargs=t.filters)


def _wire_notes_and_export(ctx: AppContext, t: SearchTab) -> None:
    def on_save_note(s: OpenRun, starred: Any, note: Any, request: gr.Request) -> Any:
        if not s.run_id or s.selected in (None, 0):
            return notice("select a node to star or annotate")
        try:
            require_owner(ctx.store, s.run_id, request, "star or annotate", annotate=True)
            ctx.store.save_case(s.run_id, s.selected, starred=bool(starred), note=note or "")
        except (StorageError, AccessDenied) as exc:
            return notice(str(exc))
        return notice(f"saved star and note for node {s.selected}", ok=True)

    t.save_note.click(on_save_note, [ctx.run_state, t.star_box, t.note_box], [ctx.notice])

    def on_export_key(s: OpenRun, name: Any, is_open: bool = True, request: gr.Request = None) -> Any:
        if not is_open:  # built when the export is opened, not while the user works on the tree
            return {t.run_export_btn: gr.update(value=None, label="Download run export (zip)")}
        try:
            btn, _ = export_run_zip(ctx, s.run_id, name, request)
        except (ExportError, StorageError, AccessDenied) as exc:
            return {t.run_export_btn: gr.update(value=None), ctx.notice: notice(str(exc))}
        return {t.run_export_btn: btn}

    # export_key changes when a run is opened or ends: the zip then holds the finished run
    ins, outs = [ctx.run_state, t.run_export_name], [t.run_export_btn, ctx.notice]
    t.export_key.change(on_export_key, [*ins, t.export_open], outs, show_progress="hidden")  # the tick's: no timer
    t.export_box.expand(lambda: True, None, [t.export_open]).then(on_export_key, ins, outs)
    t.export_box.collapse(lambda: False, None, [t.export_open])
    t.run_export_name.submit(on_export_key, ins, outs)
    t.run_export_name.blur(on_export_key, ins, outs)


def wire_inspector(ctx: AppContext, t: SearchTab, viewer: RunViewer) -> None:
    """Wire the inspector's, star and note, Figure 1, and export events of the Search tab."""
    _wire_selection(ctx, t, viewer)
    _wire_notes_and_export(ctx, t)
