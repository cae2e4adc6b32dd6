"""RunViewer: opens a run into the Search tab, draws its tree at the chosen iteration, and inspects a node.
The Runs and Cases tabs open runs through it too, so it lives apart from any one tab's events."""

from __future__ import annotations

import time
from typing import Any

import gradio as gr

from storage import RunVersion, StorageError
from storage.shadow import read_shadow
from uats_core.status import RunStatus

from ..views.cases import StepJudge
from ..views.charts import cost_figure, knobs_figure
from ..views.decisions import step_of
from ..views.figure1 import step_figure
from ..views.node_details import node_details_md
from ..views.run_status import run_status_md
from ..views.treedata import RunData, TreeState
from ..views.treefig import tree_figure
from ..views.treeview import ViewOptions
from .common import LIVE, AppContext, RunReads, fig_json, frames_json, node_link_md, notice, view_of, with_meta
from .page_state import Figure1Options, OpenRun, replaced
from .search_layout import SearchTab

# Python time one poll may spend building live frames before it leaves the rest to the next poll
FRAMES_BUILD_S = 0.6


def tree_revision(s: OpenRun, opts: ViewOptions) -> str:
    """The tree's uirevision: a user's zoom survives live updates and replay of one view, but a focus (on the
    chosen path, a subtree or a step) is another view of other nodes: it starts framed on them (autorange), not
    at the zoom of the view before, which left a focused subtree at the plot's edge."""
    focus = opts.focus if opts.focus == "whole tree" or opts.focus == "chosen path" else f"{opts.focus}:{s.selected}"
    return f"tree-{s.run_id}-{focus}"


def written_at(data: RunData, t: int) -> float | None:
    """When iteration t was written (the run's last update for a run without iteration rows)."""
    row = data.iterations.get(t)
    return row.get("written_at") if row else data.run.get("updated_at")


def with_link(md: str, s: OpenRun, nid: int) -> str:
    """The inspector's text of node `nid` and, for a step, the link to its own page at the iteration shown."""
    return f"{md}\n\n{node_link_md(str(s.run_id), nid, s.t)}" if md and nid != 0 and s.run_id else md


def run_tree_figure(
    s: OpenRun,
    data: RunData,
    state: TreeState,
    opts: ViewOptions,
    version: Any,
    shadow: dict[int, Any] | None = None,
) -> dict[str, Any]:
    """The tree figure of the run `s` holds at `state`, its selected node ringed; `shadow`: the run's shadow scores
    (storage.shadow), drawn apart from its own."""
    fig = tree_figure(
        state, opts, selected=s.selected, uirevision=tree_revision(s, opts), title="", shadow=shadow or None
    )
    # pinned: an iteration the user chose, which a link keeps (else it follows the latest; ui.tabs.links)
    return with_meta(fig, written_at=written_at(data, state.iteration), version=list(version), pinned=s.t is not None)


class RunViewer:
    """The open run (`ctx.run_state`, page_state.OpenRun) drawn into the Search tab's components."""

    def __init__(self, ctx: AppContext, tab: SearchTab) -> None:
        self.ctx = ctx
        self.tab = tab
        # what open_run and inspect may return (by component): the outputs of the events that call them
        self.open_outputs = [
            ctx.run_state,
            ctx.notice,
            tab.tree,
            tab.status_md,
            tab.t_slider,
            tab.cost_plot,
            tab.figure1,
            tab.node_md,
            tab.node_box,
            tab.star_box,
            tab.note_box,
            tab.export_key,
            tab.knobs_plot,
        ]
        self.inspect_outputs = [
            ctx.run_state,
            ctx.notice,
            tab.figure1,
            tab.node_md,
            tab.node_box,
            tab.star_box,
            tab.note_box,
            tab.tree,
        ]
        # a link to a node (ui/tabs/links.py) answers in two: the node first, then the run's tree and charts
        self.node_parts = [tab.figure1, tab.node_md, tab.node_box, tab.star_box, tab.note_box]
        self.link_outputs = [ctx.run_state, ctx.notice, *self.node_parts]
        self.link_rest_outputs = [c for c in self.open_outputs if c not in self.node_parts]

    def shadow(self, run_id: str | None) -> dict[int, dict[str, Any]]:
        """The run's shadow rows by node id (storage.shadow; {} when never shadow-scored): every panel shows them."""
        return read_shadow(self.ctx.store, run_id) if run_id else {}

    def draw_tree(
        self, s: OpenRun, view: dict[str, Any], reads: RunReads | None = None
    ) -> tuple[str, RunData, TreeState]:
        """The tree figure JSON of run s at s.t under the filters `view` (`reads`: the event's reads of the run
        log, when it has some); records the version drawn (and, following live, the iteration: live frames go on
        from there)."""
        assert s.run_id is not None
        reads = reads or self.ctx.reads()
        version, data = reads.version(s.run_id), reads.data(s.run_id)
        state = data.state_at(s.t)
        fig = run_tree_figure(
            s, data, state, view_of(**view, collapsed=s.collapsed), version, read_shadow(self.ctx.store, s.run_id)
        )
        s.version = version
        if s.t is None:
            s.drawn_t = state.iteration
        return fig_json(fig), data, state

    def live_frames(
        self, s: OpenRun, view: dict[str, Any], data: RunData, version: RunVersion
    ) -> tuple[str, TreeState, bool]:
        """The tree after each iteration the page has not been sent yet (s.drawn_t + 1 on, oldest
        first) as one payload the page draws in order (PLOT_JS): a poll that finds several new iterations
        shows every one, never only the last. Nothing new (the run's status or marks changed): the latest
        again. Building stops after FRAMES_BUILD_S, at least one frame; the rest come with the next poll.
        Returns the payload, the last state sent, and whether it is the latest."""
        last = data.max_iteration
        start = min(s.drawn_t + 1, last)
        opts = view_of(**view, collapsed=s.collapsed)
        figs: list[dict[str, Any]] = []
        t0 = time.perf_counter()
        state = data.state_at(start)
        shadow = read_shadow(self.ctx.store, s.run_id)
        ended = data.run.get("status") not in LIVE
        for t in range(start, last + 1):
            state = data.state_at(t) if t != start else state
            fig = run_tree_figure(s, data, state, opts, version, shadow)
            # an ended run was still running at its earlier iterations: a frame says the status of its own, so the
            # page's "finished" (dataset.status) comes with the last frame, not the first of a burst
            figs.append(with_meta(fig, status=RunStatus.RUNNING) if ended and t < last else fig)
            if time.perf_counter() - t0 > FRAMES_BUILD_S:
                break
        s.drawn_t = state.iteration
        return frames_json(figs), state, state.iteration >= last

    @staticmethod
    def slider_update(data: RunData, t: int | None) -> Any:
        mx = max(1, data.max_iteration)
        return gr.update(maximum=mx, value=data.max_iteration if t is None else t, interactive=data.max_iteration > 0)

    def find_run(self, s: OpenRun, run_ref: Any) -> OpenRun | dict[Any, Any]:
        """`s` with the run `run_ref` (an id or prefix) opened, nothing drawn yet; the notice alone when there is no
        such run."""
        try:
            run = self.ctx.store.find_run(str(run_ref or ""))
        except StorageError as exc:
            return {self.ctx.notice: notice(str(exc))}
        return s.opened(run["run_id"])

    def open_run(self, s: OpenRun, run_ref: Any, **view: Any) -> dict[Any, Any]:
        """Open a run (id or prefix) in the Search tab and switch to it: its outputs by component (of
        open_outputs); only the notice when there is no such run."""
        found = self.find_run(s, run_ref)
        return found if isinstance(found, dict) else self.opened_view(found, view)

    def opened_view(self, s: OpenRun, view: dict[str, Any], with_node: bool = True) -> dict[Any, Any]:
        """The Search tab drawn for the run `s` holds, at its iteration (s.t; None: the latest), the tree drawn once
        with its selected node ringed, and that node's Figure 1, text, star and note (the outputs of open_outputs,
        and of inspect_outputs when a node is selected; `with_node` False: the node's are left empty)."""
        reads = self.ctx.reads()
        fig, data, state = self.draw_tree(s, view, reads)
        t, rows = self.tab, list(data.iterations.values())
        out = {
            self.ctx.run_state: s,
            self.ctx.notice: notice(""),
            t.tree: fig,
            t.status_md: run_status_md(data.run, state, self.shadow(s.run_id)),
            t.t_slider: self.slider_update(data, s.t),
            t.cost_plot: fig_json(cost_figure(rows, current=state.iteration if s.t is not None else None)),
            # no node of the new run chosen yet: the last run's node id, star and note go with it
            t.figure1: "",
            t.node_md: "",
            t.node_box: gr.update(value=""),
            t.star_box: False,
            t.note_box: "",
            t.export_key: f"{s.run_id}:{data.run['status']}",
            t.knobs_plot: fig_json(knobs_figure(rows)),
        }
        if s.selected is not None and with_node:
            out.update(self.node_outputs(s, data, state, s.selected))
        return out

    def node_first(self, s: OpenRun) -> dict[Any, Any]:
        """The Search tab's node `s.selected` of the run `s` holds, before its tree (of link_outputs): a link's
        first answer, so the node's Figure 1 is drawn while the tree is built and sent (link_rest)."""
        reads = self.ctx.reads()
        version, data = reads.version(s.run_id), reads.data(s.run_id)
        state = data.state_at(s.t)
        assert s.selected is not None
        # recorded as drawn, as draw_tree records it: else a poll before link_rest sends the tree as live frames
        s.version = version
        if s.t is None:
            s.drawn_t = state.iteration
        out = {self.ctx.run_state: s, self.ctx.notice: notice("")}
        return {**out, **self.node_outputs(s, data, state, s.selected)}

    def link_rest(self, s: OpenRun, view: dict[str, Any]) -> dict[Any, Any]:
        """The rest of opened_view after node_first (of link_rest_outputs): the tree with its node ringed, the run's
        status, slider and charts."""
        out = self.opened_view(s, view, with_node=False)
        for c in self.node_parts:
            out.pop(c)
        return out

    def inspect(self, s: OpenRun, node_id: Any, redraw_tree: bool = False, **view: Any) -> dict[Any, Any]:
        """Select a node: its sibling boxplots, details, star and note; the tree redrawn when asked. Its outputs by
        component (of inspect_outputs)."""
        if not s.run_id:
            return {self.ctx.notice: notice("open a run first")}
        reads = self.ctx.reads()  # one read of the run for the node and, when asked, the tree
        data = reads.data(s.run_id)
        state = data.state_at(s.t)
        try:
            nid = int(node_id)
        except (TypeError, ValueError):
            return {self.ctx.notice: notice(f"node: {node_id!r} is not a node id")}
        if (missing := self.missing_node(s.run_id, state, nid)) is not None:
            return {self.ctx.notice: notice(missing)}
        if nid != s.selected:
            s.fig1 = replaced(s.fig1, page=None)  # the page that holds the new node
        s.selected = nid
        out = {self.ctx.run_state: s, self.ctx.notice: notice(""), **self.node_outputs(s, data, state, nid)}
        if redraw_tree:
            out[self.tab.tree] = self.draw_tree(s, view, reads)[0]
        return out

    def node_outputs(self, s: OpenRun, data: RunData, state: TreeState, nid: int) -> dict[Any, Any]:
        """Node `nid` in the inspector: its step's Figure 1, its text, its id in the box, its star and note."""
        fig, md = self.node_view(data, state, nid, s.fig1, self.shadow(s.run_id))
        star = self.ctx.store.get_star(s.run_id, nid) if nid != 0 else None
        t = self.tab
        return {
            t.figure1: fig,
            t.node_md: with_link(md, s, nid),
            t.node_box: gr.update(value=str(nid)),
            t.star_box: bool(star and star["starred"]),
            t.note_box: (star or {}).get("note", ""),
        }

    @staticmethod
    def missing_node(run_id: str, state: TreeState, nid: int) -> str | None:
        """The message for a node id the tree at `state` does not hold; None when it holds it."""
        if nid in state.nodes:
            return None
        return f"node: run {run_id[:8]} has no node {nid} at iteration {state.iteration}; click one in the tree"

    @staticmethod
    def node_view(
        data: RunData,
        state: TreeState,
        nid: int,
        options: Figure1Options | None = None,
        shadow: dict[int, Any] | None = None,
    ) -> tuple[str, str]:
        """Figure 1 of node `nid`'s step (figure JSON, drawn with `options`) and the
        inspector's text, as they were at `state`'s iteration (its K, scores, marks and decisions then); each
        step marked right or wrong by the run's final verdict. `shadow`: the run's shadow rows, shown apart."""
        judge = StepJudge(data.state_at(None))
        if nid not in state.nodes:
            return "", node_details_md(data, state, nid, judge)
        fig = RunViewer.step_view(data, state, nid, options, judge, shadow) if nid != 0 else None
        return fig_json(fig), node_details_md(data, state, nid, judge, shadow)

    @staticmethod
    def step_view(
        data: RunData,
        state: TreeState,
        nid: int,
        options: Figure1Options | None = None,
        judge: StepJudge | None = None,
        shadow: dict[int, Any] | None = None,
    ) -> dict[str, Any] | None:
        """Figure 1 of node `nid`'s step as the iteration shown knows it (None: the node has no scored step)."""
        step = step_of(data, nid, state.iteration)
        if step is None:
            return None
        judge = judge or StepJudge(data.state_at(None))
        opts = options or Figure1Options()
        return step_figure(
            step,
            selected=nid,
            truth={c.node_id: judge(c.node_id) for c in step.candidates},
            sort_by=opts.sort,
            per_page=int(opts.per_page),
            page=opts.page,
            siblings_only=bool(opts.siblings),
            shadow=shadow or None,
        )

    def selected_view(self, s: OpenRun, data: RunData, state: TreeState) -> dict[Any, Any]:
        """The inspector (Figure 1, the node's text) redrawn for the selected node at the iteration shown, by
        component; nothing when none is selected."""
        if s.selected is None:
            return {}
        fig, md = self.node_view(data, state, int(s.selected), s.fig1, self.shadow(s.run_id))
        return {self.tab.figure1: fig, self.tab.node_md: with_link(md, s, int(s.selected))}
