"""The Cases tab: the paper's four qualitative cases (score × variance) mined from stored runs, each shown
with its siblings' boxplots, starred, annotated, exported, or opened in the Search tab."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from storage import StorageError

from ..access import AccessDenied, require_owner
from ..views.bundles import case_bundle
from ..views.cases import QUADRANTS, Case, Mined, StepJudge, cases_table, mine
from ..views.decisions import step_of
from ..views.export import ExportError, safe_name, write_bundle
from ..views.figure1 import step_figure
from ..views.node_details import node_details_md
from ..views.safe_text import md_inline, md_text
from .common import SHOW_SEARCH_JS, AppContext, fig_json, notice, plot_html, row_of
from .exports import export_controls, export_ready, export_stale
from .page_state import CasesState, OpenRun, replaced
from .search import SearchPage

CASE_COLUMNS = ["quadrant", "run", "node", "R̄", "σ²", "K", "step is", "step text"]
CASE_LATEX = [{"left": "$$", "right": "$$", "display": True}, {"left": "$", "right": "$", "display": False}]


@dataclass
class _Parts:
    case_state: gr.State
    c_scope: gr.Radio
    c_split: gr.Slider
    c_per: gr.Slider
    c_starred: gr.Checkbox
    c_mine: gr.Button
    c_summary: gr.Markdown
    cases_df: gr.Dataframe
    case_fig: gr.HTML
    case_md: gr.Markdown
    case_star: gr.Checkbox
    case_note: gr.Textbox
    case_save: gr.Button
    case_open: gr.Button
    case_export_name: gr.Textbox
    case_export_build: gr.Button
    case_export_btn: gr.DownloadButton


def _layout() -> _Parts:
    c: dict[str, Any] = {"case_state": gr.State(CasesState())}
    gr.Markdown(
        "The four cases of the paper's appendix, mined from stored runs: score (R̄ ≥ split) × "
        "variance (σ² > τ), each with whether the step is right — exact in the arithmetic world, "
        "otherwise whether any answer below it is right. Disagreements first. Whole searches whose answer "
        "uncertainty changed (the same search without it answers otherwise): the case finder, in the "
        "Compare tab.",
        elem_id="cases-intro",
    )
    with gr.Row():
        c["c_scope"] = gr.Radio(["open run", "all runs"], value="all runs", label="mine", elem_id="c-scope")
        c["c_split"] = gr.Slider(0.05, 0.95, value=0.5, step=0.05, label="score split", elem_id="c-split")
        c["c_per"] = gr.Slider(1, 50, value=8, step=1, label="cases per quadrant", elem_id="c-per")
        c["c_starred"] = gr.Checkbox(False, label="starred only", elem_id="c-starred")
        c["c_mine"] = gr.Button("Mine cases", variant="primary", elem_id="c-mine")
    c["c_summary"] = gr.Markdown("", elem_id="cases-summary")
    c["cases_df"] = gr.Dataframe(headers=CASE_COLUMNS, interactive=False, elem_id="cases-table", wrap=True)
    with gr.Row(equal_height=False):
        with gr.Column(scale=3):
            c["case_fig"] = plot_html("case-fig", "Select a case to see it with its siblings.", 120)
        with gr.Column(scale=2):
            c["case_md"] = gr.Markdown("", elem_id="case-details", max_height=560, latex_delimiters=CASE_LATEX)
            c["case_star"] = gr.Checkbox(False, label="★ star this case", elem_id="case-star")
            c["case_note"] = gr.Textbox(label="note", lines=2, elem_id="case-note")
            c["case_save"] = gr.Button("Save star and note", size="sm", elem_id="case-save")
            c["case_open"] = gr.Button("Open in Search", size="sm", elem_id="case-open")
            ex = export_controls("case", "case")
            c["case_export_name"], c["case_export_build"], c["case_export_btn"] = ex.name, ex.build, ex.download
    return _Parts(**c)


def _case_of(cstate: CasesState, run_id: str, nid: int) -> Case | None:
    """The mined case for a node, if it is in the current pools."""
    return next(
        (c for q in QUADRANTS for c in (cstate.pools or {}).get(q, ()) if c.run_id == run_id and c.node_id == nid), None
    )


def mined_summary(mined: Mined, starred_only: bool) -> str:
    """One line under the table: how many cases, what was merged, and which quadrants came out empty."""
    if not mined.scored:
        return ""
    shown = sum(len(v) for v in mined.pools.values())
    parts = [
        f"{shown} case{'s' if shown != 1 else ''} shown of {mined.kept}"
        + (" starred" if starred_only else "")
        + f" ({mined.scored} scored nodes)"
    ]
    if mined.merged:
        parts.append(f"{mined.merged} duplicate{'s' if mined.merged != 1 else ''} from identical reruns merged")
    for q in mined.empty:
        parts.append(f"**{q}: no {'starred ' if starred_only else ''}case** in these runs")
    return " · ".join(parts)


class _Cases:
    """The tab's handlers over its state (page_state.CasesState: the mined pools, the table's rows and the case
    shown); each returns its outputs by component."""

    def __init__(self, ctx: AppContext, p: _Parts) -> None:
        self.ctx = ctx
        self.p = p

    def on_mine(self, s: OpenRun, scope: Any, split: Any, per: Any, starred_only: Any) -> Any:
        store, p = self.ctx.store, self.p
        if scope == "open run" and not s.run_id:
            return {
                p.case_state: CasesState(),
                p.cases_df: gr.update(value=[]),
                self.ctx.notice: notice("open a run first, or mine all runs"),
                p.c_summary: "",
            }
        run_ids = [s.run_id] if scope == "open run" else None
        keep = None
        if starred_only:  # before ranking: a starred node ranked below the top N must still show
            starred = {(x["run_id"], x["node_id"]) for x in store.list_stars(starred_only=True)}
            keep = lambda c: (c.run_id, c.node_id) in starred  # noqa: E731
        mined = mine(store, run_ids, per_quadrant=int(per), score_split=float(split), keep=keep)
        rows = cases_table(mined.pools)
        flat = [c for q in QUADRANTS for c in mined.pools.get(q, ())]
        msg = ""
        if not mined.scored:
            msg = "no scored nodes with K ≥ 2 passes in these runs (UATS methods record them)"
        elif not flat:
            msg = "no starred cases in these runs; star a node in the inspector or here, or untick “starred only”"
        cstate = CasesState(pools=mined.pools, rows=tuple((c.run_id, c.node_id) for c in flat))
        return {
            p.case_state: cstate,
            p.cases_df: gr.update(value=rows),
            self.ctx.notice: notice(msg),
            p.c_summary: mined_summary(mined, bool(starred_only)),
        }

    def case_view(self, run_id: str, nid: int, cstate: CasesState) -> dict[Any, Any]:
        """A case's figure, details, star and note; the last case's zip hidden (built when asked)."""
        data = self.ctx.cache.get(run_id)
        state = data.state_at(None)
        judge = StepJudge(state)
        step = step_of(data, nid)
        fig = (
            None
            if step is None
            else step_figure(step, selected=nid, truth={c.node_id: judge(c.node_id) for c in step.candidates})
        )
        star = self.ctx.store.get_star(run_id, nid)
        case = _case_of(cstate, run_id, nid)
        md = (
            f"**{case.quadrant}** · run {md_text(run_id[:8])} ({md_text(data.run.get('method'))} on "
            f"{md_inline(data.run.get('problem_id'), 80)})\n\n"
            if case
            else ""
        ) + node_details_md(data, state, nid, judge)
        p = self.p
        return {
            p.case_fig: fig_json(fig),
            p.case_md: md,
            p.case_star: bool(star and star["starred"]),
            p.case_note: (star or {}).get("note", ""),
            p.case_export_btn: export_stale(),
            self.ctx.notice: notice(""),
        }

    def on_case_select(self, cstate: CasesState, evt: gr.SelectData) -> Any:
        row = row_of(evt)
        if row is None or row >= len(cstate.rows):
            return {self.ctx.notice: notice("mine cases again; the list changed")}
        run_id, nid = cstate.rows[row]
        cstate = replaced(cstate, current=(run_id, nid))
        return {self.p.case_state: cstate, **self.case_view(run_id, nid, cstate)}

    def on_case_export(self, cstate: CasesState, name: Any, request: gr.Request) -> Any:
        """The selected case's zip, built now (named `name` when given)."""
        out = {self.p.case_export_btn: export_stale()}
        if not cstate.current:
            return {**out, self.ctx.notice: notice("select a case first, then build its export")}
        run_id, nid = cstate.current
        try:
            bundle = case_bundle(
                self.ctx.cache.get(run_id),
                nid,
                _case_of(cstate, run_id, nid),
                name=safe_name(name) if (name or "").strip() else None,
                star=self.ctx.store.get_star(run_id, nid),
            )
            path = write_bundle(bundle, self.ctx.export_target(request))
        except (ExportError, AccessDenied) as exc:
            return {**out, self.ctx.notice: notice(str(exc))}
        return {self.p.case_export_btn: export_ready(path), self.ctx.notice: notice("")}

    def on_case_save(self, cstate: CasesState, starred: Any, note: Any, request: gr.Request) -> Any:
        if not cstate.current:
            return notice("select a case first")
        run_id, nid = cstate.current
        case = _case_of(cstate, run_id, nid)
        try:
            require_owner(self.ctx.store, run_id, request, "star or annotate", annotate=True)
            self.ctx.store.save_case(
                run_id, nid, starred=bool(starred), note=note or "", case_kind=case.quadrant if case else None
            )
        except (StorageError, AccessDenied) as exc:
            return notice(str(exc))
        return notice(f"saved star and note for node {nid} of run {run_id[:8]}", ok=True)


def build_cases_tab(ctx: AppContext, search: SearchPage) -> None:
    """The tab's components and events; call inside its `gr.Tab`. Opening a case goes to the Search tab."""
    p = _layout()
    h = _Cases(ctx, p)
    viewer = search.viewer
    assert viewer is not None
    p.c_mine.click(
        h.on_mine,
        [ctx.run_state, p.c_scope, p.c_split, p.c_per, p.c_starred],
        [p.case_state, p.cases_df, ctx.notice, p.c_summary],
    )
    p.cases_df.select(
        h.on_case_select,
        [p.case_state],
        [p.case_state, p.case_fig, p.case_md, p.case_star, p.case_note, p.case_export_btn, ctx.notice],
    )
    for event in (p.case_export_build.click, p.case_export_name.submit):
        event(h.on_case_export, [p.case_state, p.case_export_name], [p.case_export_btn, ctx.notice])
    p.case_save.click(h.on_case_save, [p.case_state, p.case_star, p.case_note], [ctx.notice])

    def on_case_open(s: OpenRun, cstate: CasesState, **view: Any) -> Any:
        if not cstate.current:
            return {ctx.notice: notice("select a case first")}
        run_id, nid = cstate.current
        out = viewer.open_run(s, run_id, **view)
        if ctx.run_state in out:  # opened
            out[ctx.run_state].selected = nid
            out[search.tree] = viewer.draw_tree(out[ctx.run_state], view)[0]
        return out

    p.case_open.click(
        on_case_open, [ctx.run_state, p.case_state], viewer.open_outputs, inputs_kwargs=search.filters
    ).then(None, js=SHOW_SEARCH_JS).then(
        lambda s, **view: viewer.inspect(s, s.selected, **view),
        [ctx.run_state],
        viewer.inspect_outputs,
        inputs_kwargs=search.filters,
    )
