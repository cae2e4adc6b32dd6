"""The Search tab's node inspector events: selecting a node (a click in the tree or its id), collapsing
subtrees, starring and annotating a node, the Figure 1 view of its step and its images, and keeping the
open run's export zip current."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gradio as gr

from storage import StorageError

from ..views.bundles import run_bundle
from ..access import AccessDenied, require_owner
from ..views.export import ExportError, render_image, safe_name, store_export, write_bundle
from ..views.figure1 import export_size
from .common import AppContext, fig_json, notice
from .search_layout import SearchTab
from .viewer import RunViewer


def export_run_zip(ctx: AppContext, run_id: str | None, name: str | None,
                   request: gr.Request | None = None) -> tuple[Any, str]:
    """The open run's export zip (rebuilt: a DownloadButton downloads its current value) in the requester's
    export folder, and a message."""
    if not run_id:
        return gr.update(value=None), ""
    data = ctx.cache.get(run_id)
    bundle = run_bundle(data, name=safe_name(name) if (name or "").strip() else None,
                            stars=ctx.store.list_stars(run_id))
    path = write_bundle(bundle, ctx.export_target(request))
    return gr.update(value=str(path), label=f"Download {path.name}"), f"export ready: {path.name}"


def _wire_selection(ctx: AppContext, t: SearchTab, viewer: RunViewer) -> None:
    # Gradio finds the event argument by its annotation among the positional parameters
    def on_tree_select(s, evt: gr.EventData, **view):
        node_id = (getattr(evt, "_data", None) or {}).get("node_id")
        return viewer.inspect(s, node_id, **view)

    outs = viewer.inspect_outputs
    t.tree.select(on_tree_select, [ctx.st], outs, inputs_kwargs=t.filters)
    t.go_node.click(lambda s, n, **view: viewer.inspect(s, n, redraw_tree=True, **view), [ctx.st, t.node_box], outs,
                    inputs_kwargs=t.filters, api_name="inspect_node")
    t.node_box.submit(lambda s, n, **view: viewer.inspect(s, n, redraw_tree=True, **view), [ctx.st, t.node_box],
                      outs, inputs_kwargs=t.filters)

    def on_collapse(s, **view):
        if not s.get("run_id") or s.get("selected") is None:
            return s, notice("select a node first, then collapse or expand its subtree"), gr.skip()
        collapsed = set(s.get("collapsed") or [])
        collapsed ^= {s["selected"]}
        s["collapsed"] = sorted(collapsed)
        return s, notice(""), viewer.draw_tree(s, view)[0]

    t.collapse_btn.click(on_collapse, [ctx.st], [ctx.st, ctx.notice, t.tree], inputs_kwargs=t.filters)

    def on_expand_all(s, **view):
        s["collapsed"] = []
        return s, (viewer.draw_tree(s, view)[0] if s.get("run_id") else gr.skip())

    t.expand_all.click(on_expand_all, [ctx.st], [ctx.st, t.tree], inputs_kwargs=t.filters)


def _wire_notes_and_export(ctx: AppContext, t: SearchTab) -> None:
    def on_save_note(s, starred, note, request: gr.Request):
        if not s.get("run_id") or s.get("selected") in (None, 0):
            return notice("select a node to star or annotate")
        try:
            require_owner(ctx.store, s["run_id"], request, "star or annotate", annotate=True)
            ctx.store.save_case(s["run_id"], s["selected"], starred=bool(starred), note=note or "")
        except (StorageError, AccessDenied) as exc:
            return notice(str(exc))
        return notice(f"saved star and note for node {s['selected']}", ok=True)

    t.save_note.click(on_save_note, [ctx.st, t.star_box, t.note_box], [ctx.notice])

    def on_export_key(s, name, is_open=True, request: gr.Request = None):
        if not is_open:  # built when the export is opened, not while the user works on the tree
            return gr.update(value=None, label="Download run export (zip)"), gr.skip()
        try:
            btn, _ = export_run_zip(ctx, s.get("run_id"), name, request)
        except (ExportError, StorageError, AccessDenied) as exc:
            return gr.update(value=None), notice(str(exc))
        return btn, gr.skip()

    # export_key changes when a run is opened or ends: the zip then holds the finished run
    ins, outs = [ctx.st, t.run_export_name], [t.run_export_btn, ctx.notice]
    t.export_key.change(on_export_key, [*ins, t.export_open], outs, show_progress="hidden")  # the tick's: no timer
    t.export_box.expand(lambda: True, None, [t.export_open]).then(on_export_key, ins, outs)
    t.export_box.collapse(lambda: False, None, [t.export_open])
    t.run_export_name.submit(on_export_key, ins, outs)
    t.run_export_name.blur(on_export_key, ins, outs)


FIG1_HEIGHT = 620


def figure1_of(ctx: AppContext, viewer: RunViewer, s: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """(Figure 1 of the selected node's step at the iteration shown, or None and why not)."""
    if not s.get("run_id"):
        return None, "open a run first, then select a node: Figure 1 shows its step"
    if s.get("selected") in (None, 0):
        return None, "select a node (not the question): Figure 1 shows the candidates of its step"
    data = ctx.cache.get(s["run_id"])
    state = data.state_at(s.get("t"))
    nid = int(s["selected"])
    if nid not in state.nodes:
        return None, f"node: run {s['run_id'][:8]} has no node {nid} at iteration {state.iteration}"
    return viewer.step_view(data, state, nid, height=FIG1_HEIGHT), ""


def export_figure1(ctx: AppContext, fig: dict[str, Any], s: dict[str, Any],
                   request: gr.Request | None = None) -> list[str]:
    """Figure 1 as PNG and SVG in the requester's export folder, at a size that fits every candidate: the paths."""
    name = f"figure1-{s['run_id'][:8]}-node{s['selected']}" + (f"-t{s['t']}" if s.get("t") is not None else "")
    width, height = export_size(fig)
    target = ctx.export_target(request)
    return [str(store_export(target, name, f".{fmt}", render_image(fig, fmt, width=width, height=height)))
            for fmt in ("png", "svg")]


def _wire_figure1(ctx: AppContext, t: SearchTab, viewer: RunViewer) -> None:
    def on_open(s):
        fig, why = figure1_of(ctx, viewer, s)
        if fig is None:
            return notice(why), gr.skip(), gr.skip(), gr.skip()
        return notice(""), gr.update(visible=True), fig_json(fig), gr.update(value=None, visible=False)

    t.fig1_btn.click(on_open, [ctx.st], [ctx.notice, t.fig1_panel, t.fig1_plot, t.fig1_files], scroll_to_output=True)

    def on_export(s, request: gr.Request):
        fig, why = figure1_of(ctx, viewer, s)
        if fig is None:
            return notice(why), gr.skip()
        try:
            paths = export_figure1(ctx, fig, s, request)
        except (ExportError, AccessDenied) as exc:
            return notice(str(exc)), gr.skip()
        except Exception as exc:  # no Chromium, a crashed renderer: say so, the page keeps working
            return notice(f"export: the images could not be drawn ({type(exc).__name__}: {exc})"), gr.skip()
        return notice(f"Figure 1 exported: {', '.join(Path(p).name for p in paths)}", ok=True), \
            gr.update(value=paths, visible=True)

    t.fig1_export.click(on_export, [ctx.st], [ctx.notice, t.fig1_files])
    t.fig1_close.click(lambda: gr.update(visible=False), None, [t.fig1_panel])


def wire_inspector(ctx: AppContext, t: SearchTab, viewer: RunViewer) -> None:
    """Wire the inspector's, star and note, Figure 1, and export events of the Search tab."""
    _wire_selection(ctx, t, viewer)
    _wire_figure1(ctx, t, viewer)
    _wire_notes_and_export(ctx, t)
