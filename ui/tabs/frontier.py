"""The Search tab's "why" panel and frontier view, under the node inspector: the selected node's decision
in words, where the step's budgets went, and every candidate of that step as one boxplot row.

Built apart from the inspector's own events: it follows the inspector's node box and the iteration slider
and reads the open run from ctx.st, so the inspector's handlers stay as they are."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from storage import StorageError

from ..views.decisions import decision_iteration, explain_node, explain_step
from ..views.frontier import SORT_KEYS, frontier_figure
from .common import LIVE, AppContext, fig_json, plot_html

PER_PAGE = ("25", "50", "100", "200")
EMPTY_WHY = "<p class='uats-why-empty'>Select a node: its decision at its step is explained here.</p>"


@dataclass
class FrontierPanel:
    why: gr.HTML
    sort: gr.Dropdown
    per_page: gr.Dropdown
    siblings: gr.Checkbox
    prev: gr.Button
    page: gr.Number
    next: gr.Button
    plot: gr.HTML


def build_frontier_panel() -> FrontierPanel:
    """The panel's components; call inside the Search tab's right column, below the inspector."""
    with gr.Accordion("Why: the decision and the whole frontier of its step", open=True):
        why = gr.HTML(EMPTY_WHY, elem_id="why-panel")
        with gr.Row():
            sort = gr.Dropdown(list(SORT_KEYS), value="R̄ (mean)", label="sort by", elem_id="frontier-sort", scale=2)
            per_page = gr.Dropdown(list(PER_PAGE), value="50", label="rows per page", elem_id="frontier-per-page",
                                   scale=1)
            siblings = gr.Checkbox(False, label="siblings of the selected node only", elem_id="frontier-siblings",
                                   scale=2)
            prev = gr.Button("◀ page", elem_id="frontier-prev", size="sm", scale=1)
            page = gr.Number(1, label="page", precision=0, elem_id="frontier-page", scale=1, minimum=1)
            nxt = gr.Button("page ▶", elem_id="frontier-next", size="sm", scale=1)
        plot = plot_html("frontier", "Every candidate of the selected node's step, one row each.", 60)
    return FrontierPanel(why, sort, per_page, siblings, prev, page, nxt, plot)


def panel_values(ctx: AppContext, s: dict[str, Any], node_id: Any, t: Any, sort: str, per_page: Any, page: Any,
                 siblings: bool) -> tuple[str, str, Any]:
    """(why HTML, frontier figure JSON, page number) for the open run, node and iteration."""
    if not s.get("run_id"):
        return EMPTY_WHY, "", gr.skip()
    try:
        data = ctx.cache.get(s["run_id"])
    except StorageError:
        return EMPTY_WHY, "", gr.skip()
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
    why += explain_step(data, step_t) if step_t >= 1 else ""
    fig = frontier_figure(data, step_t, sort_by=SORT_KEYS.get(sort, "mean"),
                          page=None if page is None else int(page or 1) - 1,
                          per_page=int(per_page or 50), selected=nid, siblings_only=bool(siblings) and nid is not None)
    return why or EMPTY_WHY, fig_json(fig), (fig["meta"]["page"] + 1) if fig else 1


def wire_frontier_panel(ctx: AppContext, tab: Any, panel: FrontierPanel) -> None:
    """Refresh the panel on every selection (tree click, node box), iteration change and control."""
    p = panel
    outs = [p.why, p.plot, p.page]
    ctrl = [p.sort, p.per_page, p.page, p.siblings]

    # a new node, iteration, sort or filter shows the page holding the selected node (page None)
    def from_state(s, t, sort, per_page, page, sib):
        return panel_values(ctx, s, s.get("selected"), t, sort, per_page, None, sib)

    def from_run(s, sort, per_page, page, sib, last):
        # the open run, its iteration or its version changed: the user opened, stepped or replayed (ctx.st's
        # change), or the poll saw a run end. Following a live run the panel waits for it to stop rather than
        # compete with the tree's redraw. (The iteration slider's own change fired an event on every poll.)
        rid, key = s.get("run_id"), None
        if rid:
            try:
                version = ctx.store.run_version(rid)
            except StorageError:
                return gr.skip(), gr.skip(), gr.skip(), gr.skip()
            if s.get("t") is None and version[0] in LIVE:
                return gr.skip(), gr.skip(), gr.skip(), gr.skip()
            key = [rid, s.get("t"), list(version)]
        if key == last:
            return gr.skip(), gr.skip(), gr.skip(), gr.skip()
        return (*panel_values(ctx, s, s.get("selected"), s.get("t"), sort, per_page, None, sib), key)

    def typed_page(s, t, sort, per_page, page, sib):
        return panel_values(ctx, s, s.get("selected"), t, sort, per_page, page, sib)

    def from_box(s, node, t, sort, per_page, page, sib):
        return panel_values(ctx, s, node, t, sort, per_page, None, sib)

    def paged(step):
        def handler(s, t, sort, per_page, page, sib):
            return panel_values(ctx, s, s.get("selected"), t, sort, per_page, int(page or 1) + step, sib)
        return handler

    quiet = {"show_progress": "hidden", "trigger_mode": "always_last"}
    # after the inspector: a tree click, the Inspect button or a typed id all end with the inspector
    # writing the node's id into node_box; listening to the click itself made the page draw this panel
    # before it even sent the inspector's request
    tab.node_box.change(from_box, [ctx.st, tab.node_box, tab.t_slider, *ctrl], outs, **quiet)
    shown = gr.State(None)  # [run, iteration, version] the panel shows
    ctx.st.change(from_run, [ctx.st, *ctrl, shown], [*outs, shown], **quiet)
    ctx.poll.add(from_run, [ctx.st, *ctrl, shown], [*outs, shown])
    for comp in (p.sort, p.per_page, p.siblings):
        comp.change(from_state, [ctx.st, tab.t_slider, *ctrl], outs, **quiet)
    p.page.submit(typed_page, [ctx.st, tab.t_slider, *ctrl], outs, **quiet)
    p.prev.click(paged(-1), [ctx.st, tab.t_slider, *ctrl], outs, **quiet)
    p.next.click(paged(1), [ctx.st, tab.t_slider, *ctrl], outs, **quiet)

    # a click on a frontier row inspects that node, as a click in the tree does
    viewer = tab.viewer

    def redraw(s, **view):  # the big-tree view options (focus, collapsed dead branches)
        return viewer.draw_tree(s, view)[0] if s.get("run_id") else gr.skip()

    for name in ("collapse_pruned", "focus"):
        tab.filters[name].input(redraw, [ctx.st], [tab.tree], inputs_kwargs=tab.filters)

    def on_row(s, evt: gr.EventData, **view):  # the panel follows through node_box
        node_id = (getattr(evt, "_data", None) or {}).get("node_id")
        return viewer.inspect(s, node_id, redraw_tree=True, **view)

    p.plot.select(on_row, [ctx.st], viewer.inspect_outputs, inputs_kwargs=tab.filters, show_progress="hidden")
