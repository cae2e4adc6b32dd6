"""A node's own page, /node?run=…&node=…&t=…: the link a researcher shares to point at one step's decision.

The studio's page holds ~300 components, and Gradio mounts every one before the page's first event leaves (the
page's start, measured in docs/log.md); this page holds the tree, the node's Figure 1, its Why and its numbers,
drawn by the studio's own view functions, so the link's answer comes at about a bare page's start. Gradio's
multi-page routes send a page only its own components and events. "Open in the studio" goes to the same view in
the full app. Anyone who reaches the app may view every run (ui/access.py): this page changes nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from storage import StorageError
from storage.shadow import read_shadow

from ..views.run_status import run_status_md
from .common import LATEX, LIVE, NODE_PAGE, AppContext, RunReads, fig_json, node_address, plot_html, view_of
from .links import address_sync, int_param
from .page_state import OpenRun
from .search_layout import EMPTY_WHY
from .step_panel import why_html
from .viewer import RunViewer, run_tree_figure, with_link

NODE_PATH = f"/{NODE_PAGE}"
EMPTY_HEAD = "Opening the node…"
# Gradio draws its menu of pages on every page once an app has a second route (gr.Navbar(visible=False) did not
# hide it in 6.31): the node page is reached by its links, so neither page shows a menu
NODE_PAGE_CSS = ".nav-holder { display: none !important; }\n"


@dataclass
class NodePage:
    """The node page's components (build_node_page)."""

    state: gr.State
    head: gr.Markdown
    tree: gr.HTML
    figure1: gr.HTML
    why: gr.HTML
    node_md: gr.Markdown


# this page draws once: a run still going is shown as it was when the page opened (the studio follows it live)
LIVE_NOTE = "The run is still going: this page shows it as it was when opened; the studio follows it live."


def _head(s: OpenRun, status: str, message: str = "", live: bool = False) -> str:
    studio = f"[Open in the studio]({node_address(str(s.run_id), s.selected, s.t, page='')})" if s.run_id else ""
    lines = [f"**{message}**" if message else "", status, LIVE_NOTE if live and s.t is None else "", studio]
    return "\n\n".join(x for x in lines if x)


class NodeViews:
    """The node page's answers, by component."""

    def __init__(self, ctx: AppContext, page: NodePage) -> None:
        self.ctx, self.p = ctx, page

    def _said(self, message: str) -> dict[Any, Any]:
        return {self.p.head: f"**{message}**", self.p.figure1: "", self.p.why: EMPTY_WHY, self.p.node_md: ""}

    def opened(self, s: OpenRun, request: gr.Request) -> dict[Any, Any]:
        """The linked node first (its Figure 1, Why and numbers), or one line saying what in the address is wrong;
        the tree follows (tree())."""
        params = request.query_params if request is not None else {}
        run_ref = (params.get("run") or "").strip()
        if not run_ref:
            return self._said("no run in the address: give ?run=<run id>&node=<node id>, e.g. from the studio")
        try:
            t, node = int_param(params, "t"), int_param(params, "node")
            run = self.ctx.store.find_run(run_ref)
        except (ValueError, StorageError) as exc:
            return self._said(str(exc))
        s = s.opened(run["run_id"])
        reads = self.ctx.reads()
        data = reads.data(s.run_id)
        s.t = None if t is None else max(0, min(t, data.max_iteration))
        missing = None if node is None else RunViewer.missing_node(str(s.run_id), data.state_at(s.t), node)
        s.selected = None if missing or node is None else node
        return self._answer(s, reads, missing)

    def _answer(self, s: OpenRun, reads: RunReads, missing: str | None) -> dict[Any, Any]:
        """The page's state, head (`missing`: the line saying a node is not there), and Figure 1, Why and numbers
        of the node `s` selects (empty when none), from one read of the run and of its shadow rows."""
        assert s.run_id is not None
        data = reads.data(s.run_id)
        state, shadow = data.state_at(s.t), read_shadow(self.ctx.store, s.run_id)
        status = run_status_md(data.run, state, shadow)
        # the head's link to the studio names the node shown
        out = {self.p.state: s, self.p.head: _head(s, status, missing or "", live=data.run["status"] in LIVE)}
        if s.selected is None:
            return {**out, self.p.figure1: "", self.p.why: EMPTY_WHY, self.p.node_md: ""}
        fig, md = RunViewer.node_view(data, state, s.selected, s.fig1, shadow)
        return {
            **out,
            self.p.figure1: fig,
            self.p.why: why_html(self.ctx, s, s.selected, s.t, reads),
            self.p.node_md: with_link(md, s, s.selected),
        }

    def tree(self, s: OpenRun) -> Any:
        """The run's tree at the linked iteration, the node ringed."""
        if s.run_id is None:
            return gr.skip()
        reads = self.ctx.reads()
        data = reads.data(s.run_id)
        state = data.state_at(s.t)
        fig = run_tree_figure(s, data, state, view_of(), reads.version(s.run_id), read_shadow(self.ctx.store, s.run_id))
        return fig_json(fig)

    def picked(self, s: OpenRun, evt: gr.EventData) -> dict[Any, Any]:
        """A node clicked in the tree or in Figure 1: its parts (the tree moves its ring itself, ui/js/plot.js)."""
        raw = (getattr(evt, "_data", None) or {}).get("node_id")
        if s.run_id is None or not isinstance(raw, int):
            return {}
        reads = self.ctx.reads()
        missing = RunViewer.missing_node(s.run_id, reads.data(s.run_id).state_at(s.t), raw)
        s.selected = s.selected if missing else raw
        return self._answer(s, reads, missing)


def build_node_page(demo: gr.Blocks, ctx: AppContext) -> NodePage:
    """The /node page (outside the studio's Blocks context, as Gradio's routes are made) and its events."""
    with demo.route("Node", NODE_PATH, show_in_navbar=False):
        address_sync()  # the address bar follows the node shown: it is the link to share
        state = gr.State(OpenRun())
        head = gr.Markdown(EMPTY_HEAD, elem_id="node-head")
        # the studio's inspector layout, open (INSPECTOR_CSS): the tree beside the node's panel
        with gr.Row(elem_id="search-row", elem_classes=["uats-inspecting"], equal_height=False):
            with gr.Column(elem_id="tree-col"):
                tree = plot_html("tree", "The run's tree appears here.", 440)
            with gr.Column(elem_id="inspector-panel"):
                figure1 = plot_html("figure1", "The node's step appears here.", 120)
                why = gr.HTML(EMPTY_WHY, elem_id="why-panel")
                node_md = gr.Markdown("", elem_id="node-details", latex_delimiters=LATEX)
        page = NodePage(state, head, tree, figure1, why, node_md)
        views = NodeViews(ctx, page)
        parts = [state, head, figure1, why, node_md]
        demo.load(views.opened, [state], parts, show_progress="hidden").then(
            views.tree, [state], [tree], show_progress="hidden"
        )
        for slot in (tree, figure1):
            slot.select(views.picked, [state], parts, show_progress="hidden")
    return page
