"""The Search tab's shadow scoring of the open run: K MC-dropout passes on every node with a PRM from the server's
list (the form's PRM), queued on the worker pool (ui.jobs.shadow_job), its progress in the notice, and once it
ends the tree redrawn with the shadow marks (R̄, σ², K in each node's hover). For runs that stored no MC passes
(REBASE, an imported run) this is where σ² comes from; the run's own nodes and cost stay as they were."""

from __future__ import annotations

import gradio as gr

from storage import StorageError
from storage.shadow import get_shadow_job, read_shadow, request_shadow_cancel

from uats_core.status import LIVE, RunStatus

from ..access import AccessDenied, require_owner
from ..jobs.shadow_job import submit_shadow
from ..jobs.worker import session_of
from ..views.run_status import run_status_md
from .common import AppContext, notice
from .search_events import FORM_ERRORS
from .search_layout import SearchTab
from .viewer import RunViewer


def wire_shadow_panel(ctx: AppContext, tab: SearchTab, viewer: RunViewer) -> None:
    """The job lives in the open run's state (`ctx.st["shadow"]`: {"id", "run"}), so the page's poll runs while it
    goes (ui/tabs/idle.py) and a run opened since leaves it behind."""
    # named apart from the Compare tab's handler: Gradio names an endpoint after its function, and this one
    # registered first took "/on_shadow" from Compare's
    def on_shadow_open_run(s, k, prm, prm_kind, request: gr.Request):
        if not s.get("run_id"):
            return s, notice("open a run first (Runs tab, or Open run id)")
        if s.get("shadow"):
            return s, notice("a shadow scoring job of this run is still going; wait for it or cancel it")
        try:  # the scores are stored with the run: only its owner writes them; only a PRM the server offers
            require_owner(ctx.store, s["run_id"], request, "shadow-score", annotate=True)
            job_id = submit_shadow(ctx.store, ctx.pool, s["run_id"], k, ctx.choices.model("prm", prm), prm_kind,
                                   session_of(request))
        except (*FORM_ERRORS, AccessDenied) as exc:
            return s, notice(str(exc))
        return ({**s, "shadow": {"id": job_id, "run": s["run_id"]}},
                notice(f"shadow scoring of run {s['run_id'][:8]} queued (PRM: {prm})", ok=True))

    def on_cancel(s):
        job = s.get("shadow")
        if not job:
            return notice("no shadow scoring job is going")
        ok = request_shadow_cancel(ctx.store, job["id"])
        return notice("cancel requested: shadow scoring stops after its current batch, keeping what it scored"
                      if ok else "the shadow scoring job had already ended", ok=ok)

    def on_tick(s, **view):
        """The job's progress in the notice; once it ended, the open run's tree and status redrawn."""
        job = s.get("shadow")
        if not job:
            return gr.skip(), gr.skip(), gr.skip(), gr.skip()
        try:
            row = get_shadow_job(ctx.store, job["id"])
        except StorageError as exc:
            s["shadow"] = None
            return s, notice(str(exc)), gr.skip(), gr.skip()
        rid = job["run"][:8]
        if row["status"] in LIVE:
            said = f"{row['status']}:{row['done']}"
            if said == job.get("said"):
                return gr.skip(), gr.skip(), gr.skip(), gr.skip()
            job["said"] = said
            return (s, notice(f"shadow scoring of run {rid} queued: it starts when a worker is free"
                              if row["status"] == RunStatus.QUEUED else
                              f"shadow passes on run {rid}: {row['done']} of {row['total']} nodes", ok=True),
                    gr.skip(), gr.skip())
        s["shadow"] = None
        if row["status"] == RunStatus.FINISHED:
            n_ood = sum(1 for r in read_shadow(ctx.store, job["run"]).values() if r.get("ood"))
            note = notice(f"shadow-scored run {rid}: {row['total']} nodes × {row['k']} passes, {n_ood} OOD (σ² > τ); "
                          "stored apart, the run's own scores and cost unchanged: hover a node for its shadow R̄ and σ²",
                          ok=True)
        else:
            note = notice(f"shadow scoring of run {rid} {row['status']}: {row['error']}; {row['done']} of "
                          f"{row['total']} nodes kept")
        if s.get("run_id") != job["run"]:
            return s, note, gr.skip(), gr.skip()
        fig, data, state = viewer.draw_tree(s, view)
        return s, note, fig, run_status_md(data.run, state)

    tab.shadow_btn.click(on_shadow_open_run, [ctx.st, tab.shadow_k, tab.form["prm"], tab.form["prm_kind"]],
                         [ctx.st, ctx.notice])
    tab.shadow_cancel.click(on_cancel, [ctx.st], [ctx.notice])
    ctx.poll.add(on_tick, [ctx.st], [ctx.st, ctx.notice, tab.tree, tab.status_md], inputs_kwargs=tab.filters)
