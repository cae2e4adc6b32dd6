"""The Compare tab: two runs side by side, stepped in lockstep on one colour scale, with the table of
their differences; it can start an H-UATS vs REBASE pair from the Search tab's form, or the same pair with the
policy its PRM finds out of distribution, and holds the case finder (ui/tabs/case_finder.py). Opening the tab
draws the pair already picked. Its components are laid out by compare_layout.py."""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gradio as gr

from storage import StorageError
from storage.shadow import get_shadow_job, read_shadow, request_shadow_cancel
from uats_core.config import ESTIMATORS
from uats_core.methods import uncertainty_methods
from uats_core.status import LIVE, RunStatus

from ..access import AccessDenied, requester, require_owner
from ..jobs.pool import session_of
from ..jobs.shadow import explain_shadow
from ..jobs.shadow_job import submit_shadow
from ..views.bundles import compare_bundle
from ..views.comparison import compare_figures, compare_rows, find_partner, pair_labels
from ..views.counterfactual import parting
from ..views.decisions import explain_node, explain_step, step_of
from ..views.divergence import Divergence, counterpart, decision_divergence, divergence_text
from ..views.export import ExportError, safe_name, write_bundle
from ..views.figure1 import step_figure
from ..views.run_status import outcome, run_label, said_answer
from ..views.safe_text import md_inline, md_text
from ..views.scripts import page_script
from ..views.treedata import RunData
from ..views.uncertainty import changed_table, changes_summary
from .case_finder import build_case_finder
from .common import AppContext, RunReads, fig_json, keyed, notice, row_of
from .compare_layout import CompareParts, lay_out_compare_tab
from .exports import export_ready, export_stale
from .ood_pair import offers_ood_pair, ood_pair_form
from .page_state import SIDES, ComparedPair, OpenRun, ShadowJob, replaced
from .search_events import DB_ERRORS, FORM_ERRORS, db_failure, form_error, queue_run, run_request
from .search_layout import SearchTab


@dataclass
class CompareTab:
    """What the page-level events need: the two run pickers and their refresher."""

    cmp_a: gr.Dropdown
    cmp_b: gr.Dropdown
    on_tab_compare: Callable[[OpenRun, ComparedPair], tuple[Any, Any]]


def _summary(a: RunData, b: RunData, div: Divergence, crange: tuple[float, float]) -> str:
    """Three lines: both runs' outcome, answer and cost; where their decisions first differ; what uncertainty
    changed (or why it changed nothing)."""
    same = (
        a.run.get("problem_id") == b.run.get("problem_id")
        and a.run.get("seed") == b.run.get("seed")
        and (a.run.get("config") or {}).get("budget") == (b.run.get("config") or {}).get("budget")
    )
    name_a, name_b = pair_labels(a.run, b.run)
    return (
        f"**{md_text(name_a)}** ({outcome(a.run)}, answer {md_inline(said_answer(a.run), 80)}, "
        f"cost {float(a.run.get('cost') or 0):,.0f}) vs **{md_text(name_b)}** "
        f"({outcome(b.run)}, answer {md_inline(said_answer(b.run), 80)}, cost "
        f"{float(b.run.get('cost') or 0):,.0f}) · shared colour scale R̄ ∈ [{crange[0]:.2f}, {crange[1]:.2f}]"
        + ("" if same else " · ⚠ different problem, seed or budget")
        + f"\n\n**Where they first differ:** {md_text(divergence_text(div))}"
        + f"\n\n**Uncertainty:** {md_text(changes_summary(a, b))}"
    )


class _Compare:
    """The tab's handlers over the compared pair (ctx.pair_state, page_state.ComparedPair); each returns its outputs by
    component."""

    def __init__(self, ctx: AppContext, p: CompareParts) -> None:
        self.ctx = ctx
        self.p = p

    def run_choices(self) -> list[tuple[str, str]]:
        return [(run_label(r), r["run_id"]) for r in self.ctx.store.list_runs(limit=300)]

    def shadows(self, cs: ComparedPair) -> tuple[dict[int, Any], dict[int, Any]]:
        return read_shadow(self.ctx.store, str(cs.a)), read_shadow(self.ctx.store, str(cs.b))

    def compare_view(self, cs: ComparedPair, t: int | None, reads: RunReads | None = None) -> dict[Any, Any]:
        """Both trees, the summary, the table, the slider, the changed list (its rows' targets kept in cs) and the
        OOD pair button, drawn at iteration t (`reads`: the tick's reads of the run log)."""
        reads = reads or self.ctx.reads()
        a, b = reads.data(str(cs.a)), reads.data(str(cs.b))
        fa, fb, crange = compare_figures(a, b, t, shadows=self.shadows(cs), selected=cs.selected)
        rows, _ = compare_rows(a, b)
        changed, targets = changed_table(a, b)
        cs.changed = tuple(tuple(x) for x in targets)
        mx = max(1, a.max_iteration, b.max_iteration)
        p = self.p
        return {
            p.cmp_tree_a: fig_json(fa),
            p.cmp_tree_b: fig_json(fb),
            p.cmp_summary: _summary(a, b, decision_divergence(a, b), crange),
            p.cmp_table: gr.update(value=rows),
            p.cmp_slider: gr.update(maximum=mx, value=mx if t is None else t),
            p.cmp_changed: gr.update(value=changed),
            p.cmp_ood: gr.update(visible=offers_ood_pair(self.ctx.choices, a, b)),
        }

    def pair_state(self, a_id: str, b_id: str) -> ComparedPair:
        """The compared pair's state, drawn live (t None) from the runs' current versions."""
        store = self.ctx.store
        return ComparedPair(a=a_id, b=b_id, versions=(store.run_version(a_id), store.run_version(b_id)))

    def drawn(self, cs: ComparedPair, t: int | None, said: str = "") -> dict[Any, Any]:
        """The pair `cs` as the new state, drawn at t, and the notice `said`."""
        return {self.ctx.pair_state: cs, self.ctx.notice: notice(said), **self.compare_view(cs, t)}

    def on_compare(self, cs: ComparedPair, a_id: Any, b_id: Any) -> Any:
        store = self.ctx.store
        try:
            ra, rb = store.find_run(a_id or ""), store.find_run(b_id or "")
        except StorageError as exc:
            return {self.ctx.notice: notice(str(exc))}
        if ra["run_id"] == rb["run_id"]:
            return {self.ctx.notice: notice("pick two different runs to compare")}
        return self.drawn(self.pair_state(ra["run_id"], rb["run_id"]), None)

    def on_compare_export(self, cs: ComparedPair, name: Any, request: gr.Request) -> Any:
        out = {self.p.cmp_export_btn: export_stale()}
        if not cs.both:
            return {**out, self.ctx.notice: notice("compare two runs first, then build their export")}
        try:
            bundle = compare_bundle(
                self.ctx.cache.get(str(cs.a)),
                self.ctx.cache.get(str(cs.b)),
                name=safe_name(name) if (name or "").strip() else None,
                shadows=self.shadows(cs),
                t=cs.t,
            )
            path = write_bundle(bundle, self.ctx.export_target(request))
        except (ExportError, StorageError, AccessDenied) as exc:
            return {**out, self.ctx.notice: notice(str(exc))}
        return {self.p.cmp_export_btn: export_ready(path), self.ctx.notice: notice("")}

    def cmp_step(self, cs: ComparedPair, t: Any) -> Any:
        if not cs.a:
            return gr.skip()
        cs.t = max(0, int(t or 0))
        return {self.ctx.pair_state: cs, **self.compare_view(cs, cs.t)}

    def on_pair(self, cs: ComparedPair, request: gr.Request, **form: Any) -> Any:
        return self._start_pair(request, [("h-uats", form), ("rebase", form)], "compare", "")

    def on_estimator_pair(self, cs: ComparedPair, second: Any, request: gr.Request, **form: Any) -> Any:
        """H-UATS twice on the form's problem, seed, budget and knobs: under the form's estimator and under
        `second`; the pair names each run's estimator in every panel (views.comparison.pair_labels)."""
        first = form.get("estimator")
        if second not in ESTIMATORS or second == first:
            return {
                self.ctx.notice: notice(
                    f"second estimator: choose one of {', '.join(ESTIMATORS)} other than the form's ({first})"
                )
            }
        runs = [("h-uats", form), ("h-uats", {**form, "estimator": second})]
        return self._start_pair(request, runs, "compare estimators", f" (estimators {first} and {second})")

    def on_ood_pair(self, cs: ComparedPair, request: gr.Request) -> Any:
        """H-UATS and REBASE again with policy B (which this pair's PRM finds out of distribution), the pair's
        PRM, problem, seed, budget and knobs: the pair where uncertainty has something to change."""
        if not cs.both:
            return {self.ctx.notice: notice("compare two runs first")}
        data = [self.ctx.cache.get(str(cs.run(x))) for x in SIDES]
        uats = next((d for d in data if d.run.get("method") in uncertainty_methods()), data[0])
        try:
            form = ood_pair_form(self.ctx.choices, uats.run)
        except FORM_ERRORS as exc:
            return {self.ctx.notice: notice(form_error(exc))}
        return self._start_pair(
            request,
            [("h-uats", form), ("rebase", form)],
            "compare OOD",
            " with policy B (out of distribution for the PRM)",
        )

    def _start_pair(self, request: gr.Request, runs: list[tuple[str, dict[str, Any]]], label: str, said: str) -> Any:
        """Queue both runs (method, form) and follow them live; both forms are checked before either is queued."""
        ids = []
        try:
            # both checked first: a refusal of the second names its field before the first is queued
            reqs = [run_request(self.ctx, form, m) for m, form in runs]
            for req in reqs:
                ids.append(queue_run(self.ctx, req, label=label, owner=requester(request), session=session_of(request)))
        except FORM_ERRORS as exc:  # named as the form names the field (τ, budget N)
            return {self.ctx.notice: notice(form_error(exc))}
        except DB_ERRORS as exc:
            return {self.ctx.notice: notice(db_failure(exc))}
        cs = ComparedPair(a=ids[0], b=ids[1])
        choices = self.run_choices()
        out = self.drawn(cs, None)
        del out[self.p.cmp_slider]  # the slider stays as it is until the pair is stepped
        names = [METHOD_NAMES.get(m, m) for m, _ in runs]
        out[self.ctx.notice] = notice(
            f"started {names[0]} {ids[0][:8]} and {names[1]} {ids[1][:8]}{said}; both trees follow live", ok=True
        )
        return {
            **out,
            self.p.cmp_a: gr.update(choices=choices, value=ids[0]),
            self.p.cmp_b: gr.update(choices=choices, value=ids[1]),
        }

    def on_cmp_tick(self, cs: ComparedPair, reads: RunReads) -> Any:
        """Redraw a live pair when it changed; follow a shadow job's progress and, once it ended, redraw with
        its scores and change the shadow key (which rebuilds the export). Writes `cs` in place."""
        out: dict[Any, Any] = {}
        redraw = False
        if cs.shadow:
            out, redraw = self._shadow_progress(cs)
        if cs.both and cs.t is None:
            versions = (reads.version(str(cs.a)), reads.version(str(cs.b)))
            if versions != cs.versions:
                cs.versions, redraw = versions, True
        if redraw and cs.both:
            out.update(self.compare_view(cs, cs.t, reads))
        return keyed(out)

    def _shadow_progress(self, cs: ComparedPair) -> tuple[dict[Any, Any], bool]:
        """(the notice and shadow key by component, redraw) for the pair's shadow job; clears cs.shadow once it
        ended."""
        job = cs.shadow
        assert job is not None
        try:
            row = get_shadow_job(self.ctx.store, job.id)
        except StorageError as exc:
            cs.shadow = None
            return {self.ctx.notice: notice(str(exc))}, False
        side, rid = job.side.upper(), job.run[:8]
        if row["status"] in LIVE:
            said = f"{row['status']}:{row['done']}"
            if said == job.said:
                return {}, False
            cs.shadow = replaced(job, said=said)
            return {
                self.ctx.notice: notice(
                    f"shadow scoring of run {side} ({rid}) queued: it starts when a worker is free"
                    if row["status"] == RunStatus.QUEUED
                    else f"shadow passes on run {side} ({rid}): {row['done']} of {row['total']} nodes",
                    ok=True,
                )
            }, False
        cs.shadow = None
        if row["status"] == RunStatus.FINISHED:
            n_ood = sum(1 for r in read_shadow(self.ctx.store, job.run).values() if r.get("ood"))
            note = notice(
                f"shadow-scored run {side} ({rid}): {row['total']} nodes × {row['k']} passes, {n_ood} OOD; "
                "stored apart, its cost unchanged",
                ok=True,
            )
        else:
            note = notice(
                f"shadow scoring of run {side} ({rid}) {row['status']}: {row['error']}; "
                f"{row['done']} of {row['total']} nodes kept"
            )
        return {self.ctx.notice: note, self.p.cmp_shadow_key: f"{job.id}:{row['status']}"}, True

    def explain(self, cs: ComparedPair, side: str, node_id: int, note: str = "") -> dict[Any, Any]:
        """The why panel (the node's decision in words, its shadow reading, its step) and its step's figure."""
        run_id = str(cs.run(side))
        data = self.ctx.cache.get(run_id)
        shadow = read_shadow(self.ctx.store, run_id)
        step = step_of(data, node_id)
        head = f"<p><b>Run {side.upper()}</b> ({html.escape(str(data.run.get('method')))}){note}</p>"
        why = head + explain_node(data, node_id) + explain_shadow(data, node_id, shadow)
        if step is None:
            return {self.p.cmp_why: why, self.p.cmp_inspector: ""}
        why += explain_step(data, step.iteration)
        return {
            self.p.cmp_why: why,
            self.p.cmp_inspector: fig_json(step_figure(step, selected=node_id, shadow=shadow, per_page=200)),
        }

    def on_node(self, side: str) -> Callable[..., Any]:
        """A click in tree `side`: the node's decision in words (with its shadow reading) and its step."""

        def handler(cs: ComparedPair, evt: gr.EventData) -> Any:
            node_id = (getattr(evt, "_data", None) or {}).get("node_id")
            if not cs.run(side) or not isinstance(node_id, int):
                return gr.skip()
            cs.selected = (node_id, None) if side == "a" else (None, node_id)
            return {self.ctx.pair_state: cs, **self.explain(cs, side, node_id)}

        return handler

    def on_changed(self, cs: ComparedPair, evt: gr.SelectData) -> Any:
        """A row of the uncertainty-changed list: both trees at its iteration with its node selected in its run
        and, in the other run, the node with the same steps (else the one sharing the most of them)."""
        row = row_of(evt)
        if row is None or not 0 <= row < len(cs.changed) or not cs.both:
            return gr.skip()
        return self.show_changed(cs, *cs.changed[row])

    def show_changed(self, cs: ComparedPair, side: str, node_id: int, t: int) -> dict[Any, Any]:
        """Node `node_id` of run `side` selected at iteration t, and its counterpart in the other run: the state,
        the view, the why panel and the inspector."""
        other = "b" if side == "a" else "a"
        data = self.ctx.cache.get(str(cs.run(side)))
        key = data.state_at(None).prefix_key(node_id)
        match, shared = counterpart(self.ctx.cache.get(str(cs.run(other))).state_at(t), key)
        cs.selected, cs.t = ((node_id, match) if side == "a" else (match, node_id)), t
        said = (
            "the same steps"
            if shared == len(key)
            else f"the first {shared} of its {len(key)} steps"
            if shared
            else "none of its steps: its root"
        )
        note = f" · in run {other.upper()}: node {match}, which shares {said}"
        return {
            self.ctx.pair_state: cs,
            **self.compare_view(cs, t),
            **self.explain(cs, side, node_id, html.escape(note)),
        }

    def open_case(self, run_id: str, counter_id: str) -> dict[Any, Any]:
        """A case of the case finder: the H-UATS run (A) beside its counterfactual without uncertainty (B), drawn at
        the first decision where they part, that step ringed in both trees and explained; the pickers set to them."""
        cs = self.pair_state(run_id, counter_id)
        first = parting(self.ctx.cache.get(run_id), self.ctx.cache.get(counter_id))
        choices = self.run_choices()
        pickers = {
            self.p.cmp_a: gr.update(choices=choices, value=run_id),
            self.p.cmp_b: gr.update(choices=choices, value=counter_id),
        }
        if first is None:  # the two decided alike throughout (the run log was rewritten since the list was made)
            return {**self.drawn(cs, None), **pickers}
        side, node = ("a", first.node_a) if first.node_a is not None else ("b", first.node_b)
        return {self.ctx.notice: notice(""), **pickers, **self.show_changed(cs, side, int(node), first.iteration)}

    def on_shadow(self, cs: ComparedPair, k: Any, prm: Any, prm_kind: Any, request: gr.Request) -> Any:
        """Queue shadow scoring of the pair's baseline (the run that is not UATS; B when both or neither are)
        as a job of the worker pool; the tick follows its progress."""
        if not cs.both:
            return {self.ctx.notice: notice("compare two runs first")}
        if cs.shadow:
            return {
                self.ctx.notice: notice("a shadow scoring job of this pair is still going; wait for it or cancel it")
            }
        side = next(
            (x for x in ("b", "a") if self.ctx.store.get_run(str(cs.run(x)))["method"] not in uncertainty_methods()),
            "b",
        )
        run_id = str(cs.run(side))
        try:
            # the scores are stored with the run, one set per node: only who owns the run writes them, so no one
            # replaces another's (as stars and notes)
            require_owner(self.ctx.store, run_id, request, "shadow-score", annotate=True)
            job = submit_shadow(
                self.ctx.store,
                self.ctx.pool,
                run_id,
                k,
                self.ctx.choices.model("prm", prm),
                prm_kind,
                session_of(request),
            )  # only a PRM the server offers
        except (*FORM_ERRORS, AccessDenied) as exc:
            return {self.ctx.notice: notice(str(exc))}
        return {
            self.ctx.pair_state: replaced(cs, shadow=ShadowJob(id=job, run=run_id, side=side)),
            self.ctx.notice: notice(f"shadow scoring of run {side.upper()} ({run_id[:8]}) queued", ok=True),
        }

    def on_shadow_cancel(self, cs: ComparedPair) -> Any:
        if not cs.shadow:
            return notice("no shadow scoring job is going")
        ok = request_shadow_cancel(self.ctx.store, cs.shadow.id)
        return notice(
            "cancel requested: shadow scoring stops after its current batch, keeping what it scored"
            if ok
            else "the shadow scoring job had already ended",
            ok=ok,
        )

    def on_tab_compare(self, s: OpenRun, cs: ComparedPair) -> tuple[Any, Any]:
        """The pickers' choices (updates of pickers A and B); by default the open run and its partner (same
        problem, seed, budget). A picker with nothing to default to gets its choices only: an answer that arrives
        after the user picked a run (a slow server) would otherwise empty that picker."""
        choices = self.run_choices()
        a, b = cs.a, cs.b
        if a is None and s.run_id:
            a = s.run_id
            b = find_partner(self.ctx.store, self.ctx.store.get_run(a))

        def picker(run_id: str | None) -> Any:
            return gr.update(choices=choices) if run_id is None else gr.update(choices=choices, value=run_id)

        return picker(a), picker(b)

    def on_tab_open(self, s: OpenRun, cs: ComparedPair) -> Any:
        """The tab opened: the pickers (on_tab_compare) and, when they name a pair not drawn yet (the open run
        and its stored partner), that pair drawn, with no click on Compare."""
        pick_a, pick_b = self.on_tab_compare(s, cs)
        pickers = {self.p.cmp_a: pick_a, self.p.cmp_b: pick_b}
        a, b = pick_a.get("value"), pick_b.get("value")
        if cs.a or not a:  # a pair is drawn already (and followed by the tick), or nothing is picked
            return pickers
        if not b:
            return {
                **pickers,
                self.ctx.notice: notice(
                    f"run {a[:8]} is in picker A; no stored partner (the other of H-UATS and REBASE on the same "
                    "problem, seed and budget): pick run B, or start the pair"
                ),
            }
        return {**pickers, **self.drawn(self.pair_state(a, b), None)}


METHOD_NAMES = {"h-uats": "H-UATS", "rebase": "REBASE"}  # as the pair's notice names them
SCROLL_TO_TREES = page_script("scroll_to_trees.js")  # the pair's trees brought into view


def build_compare_tab(ctx: AppContext, search: SearchTab, tab: gr.Tab) -> CompareTab:
    """The tab's components and events; call inside `tab`, its `gr.Tab`."""
    p = lay_out_compare_tab()
    h, cst = _Compare(ctx, p), ctx.pair_state
    view = [p.cmp_tree_a, p.cmp_tree_b, p.cmp_summary, p.cmp_table, p.cmp_slider, p.cmp_changed, p.cmp_ood]
    export_ins, export_outs = [cst, p.cmp_export_name], [p.cmp_export_btn, ctx.notice]
    # a zip is built when asked (ui.tabs.exports); a new pair or shadow scores make the last one stale
    p.cmp_load.click(h.on_compare, [cst, p.cmp_a, p.cmp_b], [cst, ctx.notice, *view]).then(
        export_stale, None, [p.cmp_export_btn]
    )
    tab.select(h.on_tab_open, [ctx.run_state, cst], [cst, ctx.notice, p.cmp_a, p.cmp_b, *view]).then(
        export_stale, None, [p.cmp_export_btn]
    )
    p.cmp_export_build.click(h.on_compare_export, export_ins, export_outs)
    p.cmp_export_name.submit(h.on_compare_export, export_ins, export_outs)

    step_outputs = [cst, *view]
    p.cmp_slider.input(
        h.cmp_step, [cst, p.cmp_slider], step_outputs, trigger_mode="always_last", show_progress="hidden"
    )
    p.cmp_prev.click(lambda cs, t: h.cmp_step(cs, (t or 0) - 1), [cst, p.cmp_slider], step_outputs)
    p.cmp_next.click(lambda cs, t: h.cmp_step(cs, (t or 0) + 1), [cst, p.cmp_slider], step_outputs)
    pair_outputs = [cst, ctx.notice, p.cmp_a, p.cmp_b, *[c for c in view if c is not p.cmp_slider]]
    # the pair never starts paused: the form without start_paused
    p.cmp_pair.click(h.on_pair, [cst], pair_outputs, inputs_kwargs=search.run_inputs(with_paused=False))
    p.cmp_est_pair.click(
        h.on_estimator_pair, [cst, p.cmp_est_b], pair_outputs, inputs_kwargs=search.run_inputs(with_paused=False)
    )
    p.cmp_ood.click(h.on_ood_pair, [cst], pair_outputs)
    ctx.poll.add(h.on_cmp_tick, [cst], [ctx.notice, *view, p.cmp_shadow_key], with_reads=True)
    for side, tree in (("a", p.cmp_tree_a), ("b", p.cmp_tree_b)):
        tree.select(h.on_node(side), [cst], [cst, p.cmp_why, p.cmp_inspector], show_progress="hidden")
    # then bring the trees into view (on a laptop screen they sit below the list): the rings are what was asked for
    p.cmp_changed.select(h.on_changed, [cst], [*step_outputs, p.cmp_why, p.cmp_inspector]).then(
        None, js=SCROLL_TO_TREES
    )
    build_case_finder(
        ctx,
        p.finder,
        h.open_case,
        [cst, ctx.notice, p.cmp_a, p.cmp_b, *view, p.cmp_why, p.cmp_inspector],
        search.run_inputs(with_paused=False),
        then_js=SCROLL_TO_TREES,
        stale=p.cmp_export_btn,
    )
    p.cmp_shadow.click(
        h.on_shadow, [cst, p.cmp_shadow_k, search.form["prm"], search.form["prm_kind"]], [cst, ctx.notice]
    )
    p.cmp_shadow_cancel.click(h.on_shadow_cancel, [cst], [ctx.notice])
    # a shadow job ended: its scores join the figures, and the zip built before them is stale (built when asked)
    p.cmp_shadow_key.change(export_stale, None, [p.cmp_export_btn], show_progress="hidden")  # set by the tick
    return CompareTab(cmp_a=p.cmp_a, cmp_b=p.cmp_b, on_tab_compare=h.on_tab_compare)
