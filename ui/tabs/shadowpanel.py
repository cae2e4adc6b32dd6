"""The Search tab's shadow scoring of the open run: K MC-dropout passes on every node with a PRM from the server's
list (the form's PRM), queued on the worker pool (ui.jobs.shadow_job), its progress in the notice, and once it
ends the tree redrawn with the shadow marks (R̄, σ², K in each node's hover). For runs that stored no MC passes
(REBASE, an imported run) this is where σ² comes from; the run's own nodes and cost stay as they were."""

from __future__ import annotations

from typing import Any

import gradio as gr

from storage import StorageError
from storage.shadow import get_shadow_job, read_shadow, request_shadow_cancel
from uats_core.status import LIVE, RunStatus

from ..access import AccessDenied, require_owner
from ..jobs.pool import session_of
from ..jobs.shadow_job import submit_shadow
from ..views.run_status import run_status_md
from .common import AppContext, RunReads, notice
from .page_state import OpenRun, ShadowJob, replaced
from .search_events import FORM_ERRORS
from .search_layout import SearchTab
from .viewer import RunViewer


def wire_shadow_panel(ctx: AppContext, tab: SearchTab, viewer: RunViewer) -> None:
    """The job lives in the open run's state (`OpenRun.shadow`), so the page's poll runs while it goes
    (ui/tabs/idle.py) and a run opened since leaves it behind."""

    # named apart from the Compare tab's handler: Gradio names an endpoint after its function, and this one
    # registered first took "/on_shadow" from Compare's
    def on_shadow_open_run(s: OpenRun, k: Any, prm: Any, prm_kind: Any, request: gr.Request) -> Any:
        if not s.run_id:
            return {ctx.notice: notice("open a run first (Runs tab, or Open run id)")}
        if s.shadow:
            return {ctx.notice: notice("a shadow scoring job of this run is still going; wait for it or cancel it")}
        try:  # the scores are stored with the run: only its owner writes them; only a PRM the server offers
            require_owner(ctx.store, s.run_id, request, "shadow-score", annotate=True)
            job_id = submit_shadow(
                ctx.store, ctx.pool, s.run_id, k, ctx.choices.model("prm", prm), prm_kind, session_of(request)
            )
        except (*FORM_ERRORS, AccessDenied) as exc:
            return {ctx.notice: notice(str(exc))}
        return {
            ctx.run_state: replaced(s, shadow=ShadowJob(id=job_id, run=s.run_id)),
            ctx.notice: notice(f"shadow scoring of run {s.run_id[:8]} queued (PRM: {prm})", ok=True),
        }

    def on_cancel(s: OpenRun) -> Any:
        if not s.shadow:
            return notice("no shadow scoring job is going")
        ok = request_shadow_cancel(ctx.store, s.shadow.id)
        return notice(
            "cancel requested: shadow scoring stops after its current batch, keeping what it scored"
            if ok
            else "the shadow scoring job had already ended",
            ok=ok,
        )

    def on_tick(s: OpenRun, reads: RunReads, **view: Any) -> Any:
        """The job's progress in the notice; once it ended, the open run's tree and status redrawn."""
        job = s.shadow
        if not job:
            return gr.skip()
        try:
            row = get_shadow_job(ctx.store, job.id)
        except StorageError as exc:
            s.shadow = None
            return {ctx.notice: notice(str(exc))}
        rid = job.run[:8]
        if row["status"] in LIVE:
            said = f"{row['status']}:{row['done']}"
            if said == job.said:
                return gr.skip()
            s.shadow = replaced(job, said=said)
            return {
                ctx.notice: notice(
                    f"shadow scoring of run {rid} queued: it starts when a worker is free"
                    if row["status"] == RunStatus.QUEUED
                    else f"shadow passes on run {rid}: {row['done']} of {row['total']} nodes",
                    ok=True,
                )
            }
        s.shadow = None
        if row["status"] == RunStatus.FINISHED:
            n_ood = sum(1 for r in read_shadow(ctx.store, job.run).values() if r.get("ood"))
            note = notice(
                f"shadow-scored run {rid}: {row['total']} nodes × {row['k']} passes, {n_ood} OOD (σ² > τ); "
                "stored apart, the run's own scores and cost unchanged; the tree, the inspector and Figure 1 show "
                "them labelled shadow",
                ok=True,
            )
        else:
            note = notice(
                f"shadow scoring of run {rid} {row['status']}: {row['error']}; {row['done']} of "
                f"{row['total']} nodes kept"
            )
        if s.run_id != job.run:
            return {ctx.notice: note}
        fig, data, state = viewer.draw_tree(s, view, reads)
        # every panel of the open run shows the shadow values now: the tree, the status, the inspected node's
        return {
            ctx.notice: note,
            tab.tree: fig,
            tab.status_md: run_status_md(data.run, state, viewer.shadow(s.run_id)),
            **viewer.selected_view(s, data, state),
        }

    tab.shadow_btn.click(
        on_shadow_open_run,
        [ctx.run_state, tab.shadow_k, tab.form["prm"], tab.form["prm_kind"]],
        [ctx.run_state, ctx.notice],
    )
    tab.shadow_cancel.click(on_cancel, [ctx.run_state], [ctx.notice])
    ctx.poll.add(
        on_tick,
        [ctx.run_state],
        [ctx.notice, tab.tree, tab.status_md, tab.figure1, tab.node_md],
        inputs_kwargs=tab.filters,
        with_reads=True,
    )
