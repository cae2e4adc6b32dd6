"""The case finder, in the Compare tab: the H-UATS searches whose answer uncertainty changed, by counterfactual
(ui.views.counterfactual: the same search with uncertainty switched off answers otherwise), over the finished pairs
of the run log, ranked; a click opens the run beside its counterfactual in Compare at the first decision where they
part, whence the comparison export takes it. A batch makes pairs: the first N problems of the arithmetic world's test
split with policy A (its PRM in distribution) and policy B (out of distribution), H-UATS and its counterfactual each,
with the Search form's PRM, budget, seed and knobs, as one job of the worker pool (ui.jobs.case_batch); the list
follows it as its pairs finish. A batch is its owner's (the signed-in user, or the browser
session without a login), not the page's: any page of theirs, a reloaded one too, follows it and cancels it, and
lists their batches, past and going (theirs alone: ui.jobs.case_batch.cancel_owned_batch checks the owner again)."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import gradio as gr

from storage import StorageError
from storage.batches import get_batch_job, live_batch_jobs, owner_batch_jobs
from uats_core.config import ConfigError
from uats_core.status import LIVE, RunStatus

from ..access import AccessDenied, requester
from ..choices import ARITH, EMBEDDED, POLICY_B
from ..jobs.case_batch import (
    BATCH_FIELD,
    MAX_BATCH_PROBLEMS,
    cancel_owned_batch,
    cancel_owned_batches,
    queue_case_batch,
)
from ..jobs.pool import RunRequest, session_of
from ..views.counterfactual import (
    COLUMNS,
    RANKING_RULE,
    UATS,
    counterfactual_config,
    factual_config,
    find_cases,
    found_rows,
    found_summary,
)
from ..views.safe_text import md_text
from .common import AppContext, notice, row_of
from .exports import export_stale
from .page_state import FinderState, replaced
from .run_form import dataset_problems
from .search_events import DB_ERRORS, FORM_ERRORS, checked_run, db_failure, form_error, form_request

log = logging.getLogger(__name__)

INTRO = (
    "The H-UATS searches whose answer uncertainty changed: each run of a batch beside the same search with "
    "uncertainty switched off, over the finished pairs in the run log (the same problem, seed, budget, policy and "
    f"PRM). {RANKING_RULE} Click a row: the run (A) opens below beside its counterfactual (B) at the first "
    "decision where they part, ringed in both trees; the comparison export at the bottom of the tab takes it from "
    "there. No pairs yet? Run a batch: the first N problems of the arithmetic world's test split, each with policy "
    "A (its PRM in distribution) and policy B (out of distribution), H-UATS and its counterfactual each, with the "
    "Search form's PRM, budget, seed and knobs: one job of the worker pool, cancellable; the list fills as its "
    "pairs finish."
)
# the finder's columns (COLUMNS) in a table the width of the page: short numbers narrow, no header broken
COLUMN_WIDTHS = ["6%", "13%", "16%", "9%", "13%", "13%", "14%", "16%"]
BATCH_COLUMNS = ["batch", "state", "searches done", RunStatus.FAILED.value, "started (UTC)", "took"]


@dataclass
class FinderParts:
    state: gr.State  # page_state.FinderState: the table's pairs, the batch followed and its last report
    find: gr.Button
    problems: gr.Number
    batch: gr.Button
    cancel: gr.Button
    progress: gr.Markdown
    summary: gr.Markdown
    table: gr.Dataframe
    batches: gr.Dataframe  # the user's batches, past and going (batch_list_rows)
    accordion: gr.Accordion


def case_finder_layout() -> FinderParts:
    """The finder's components (an accordion), where the Compare tab's layout calls it."""
    with gr.Accordion(
        "Case finder: H-UATS searches whose answer uncertainty changed (beside the same search without it)",
        open=False,
        elem_id="cf",
    ) as accordion:
        gr.Markdown(INTRO, elem_id="cf-intro")
        with gr.Row(equal_height=False):
            find = gr.Button("Find cases in the run log", variant="primary", elem_id="cf-find", scale=2)
            problems = gr.Number(
                20,
                label=BATCH_FIELD,
                precision=0,
                minimum=1,
                maximum=MAX_BATCH_PROBLEMS,
                elem_id="cf-n",
                scale=1,
                min_width=160,
            )
            batch = gr.Button("Run a batch (form settings)", elem_id="cf-batch", scale=2)
            cancel = gr.Button("Cancel the batch", elem_id="cf-cancel", scale=1)
        progress = gr.Markdown("", elem_id="cf-progress")
        batches = gr.Dataframe(
            headers=BATCH_COLUMNS,
            interactive=False,
            elem_id="cf-batches",
            max_height=180,
            column_widths=["12%", "26%", "16%", "10%", "22%", "14%"],
            label="Your case batches, newest first (pick a going one, then Cancel the batch)",
        )
        summary = gr.Markdown("", elem_id="cf-summary")
        table = gr.Dataframe(
            headers=COLUMNS,
            interactive=False,
            elem_id="cf-table",
            wrap=True,
            max_height=300,
            column_widths=COLUMN_WIDTHS,
        )
    return FinderParts(
        gr.State(FinderState()), find, problems, batch, cancel, progress, summary, table, batches, accordion
    )


def batch_requests(ctx: AppContext, form: Mapping[str, Any], problems: Any) -> list[RunRequest]:
    """The batch's searches, each checked like the Run button's: policy A's pairs first, then policy B's, so the
    worker loads each pair once. ConfigError (or another of FORM_ERRORS) names the field to fix."""
    if isinstance(problems, float) and problems.is_integer():
        problems = int(problems)  # gr.Number hands whole numbers over as floats
    if isinstance(problems, bool) or not isinstance(problems, int) or not 1 <= problems <= MAX_BATCH_PROBLEMS:
        raise ConfigError(
            BATCH_FIELD, f"give a whole number of problems from 1 to {MAX_BATCH_PROBLEMS}; got {problems!r}"
        )
    if POLICY_B not in ctx.choices.policies:
        raise ConfigError("policy", "this server does not offer the arithmetic world's policy B")
    chosen = dataset_problems(ARITH, ctx.choices)[:problems]
    runs = []
    for policy in (EMBEDDED, POLICY_B):
        for p in chosen:
            req = form_request(
                ctx,
                {**form, "policy": policy, "dataset": ARITH, "problem": p.id, "free_question": "", "free_answer": ""},
                method=UATS,
            )
            # the run and its counterfactual, each checked once (validate_request) under a run id of its own
            runs += [
                checked_run(ctx, dataclasses.replace(req, config=make(req.config)))
                for make in (factual_config, counterfactual_config)
            ]
    return runs


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def batch_list_rows(jobs: list[dict[str, Any]], now: float) -> list[list[Any]]:
    """The list's rows (BATCH_COLUMNS) for storage.batches.owner_batch_jobs's rows; a going batch's time so far."""
    rows = []
    for j in jobs:
        state = str(j["status"]) + (" (cancel asked)" if j["status"] in LIVE and j["cancel_requested"] else "")
        started = float(j["created_at"] or now)
        rows.append(
            [
                j["job_id"][:8],
                state,
                f"{j['done']} of {j['total']}",
                j["failed"],
                time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(started)),
                _minutes(float(j["ended_at"] or now) - started),
            ]
        )
    return rows


class _Finder:
    def __init__(self, ctx: AppContext, p: FinderParts) -> None:
        self.ctx = ctx
        self.p = p

    def listed(self, fs: FinderState) -> dict[Any, Any]:
        """Find the cases now: the table and the summary line by component, the rows kept in fs."""
        t0 = time.perf_counter()
        found = find_cases(self.ctx.store, load=self.ctx.cache.get)
        took = time.perf_counter() - t0
        fs.rows = tuple((c.run["run_id"], c.counter["run_id"]) for c in found.cases)
        log.info("case finder: %d cases of %d pairs in %.2f s", len(found.cases), found.pairs, took)
        said = f"{took * 1000:.0f} ms" if took < 1 else f"{took:.1f} s"
        return {
            self.p.table: gr.update(value=found_rows(found)),
            self.p.summary: md_text(f"{found_summary(found)} · read in {said}"),
        }

    def on_find(self, fs: FinderState) -> Any:
        return {self.p.state: fs, **self.listed(fs)}

    def batch_list(self, fs: FinderState, request: gr.Request | None) -> dict[Any, Any]:
        """The requester's batches, past and going, by component; each row's batch kept in fs (a pick that is no
        longer listed is dropped)."""
        try:
            jobs = owner_batch_jobs(self.ctx.store, requester(request))
        except (AccessDenied, *DB_ERRORS):
            jobs = []
        fs.batches = tuple(j["job_id"] for j in jobs)
        if fs.picked not in fs.batches:
            fs.picked = None
        return {self.p.batches: gr.update(value=batch_list_rows(jobs, time.time()))}

    def on_open(self, fs: FinderState, request: gr.Request) -> Any:
        """The accordion opened (on any page of the user's, a reloaded one too): their batches."""
        return {self.p.state: fs, **self.batch_list(fs, request)}

    def on_pick(self, fs: FinderState, evt: gr.SelectData) -> Any:
        row = row_of(evt)
        if row is None or not 0 <= row < len(fs.batches):
            return {self.ctx.notice: notice("the list of batches changed; pick again")}
        fs.picked = fs.batches[row]
        return {
            self.p.state: fs,
            self.ctx.notice: notice(
                f"case batch {fs.picked[:8]} picked: Cancel the batch stops it if it is still going", ok=True
            ),
        }

    def on_batch(self, fs: FinderState, problems: Any, request: gr.Request, **form: Any) -> Any:
        try:
            runs = batch_requests(self.ctx, form, problems)
            first = runs[0].search.config
            spec = {"problems": len(runs) // 4, "budget": first.budget, "seed": first.seed, "counterfactual": True}
            job = queue_case_batch(
                self.ctx.store, self.ctx.pool, runs, spec, owner=requester(request), session=session_of(request)
            )
        except FORM_ERRORS as exc:
            return {self.ctx.notice: notice(form_error(exc))}
        except DB_ERRORS as exc:
            return {self.ctx.notice: notice(db_failure(exc))}
        fs = replaced(fs, job=job, said=None)
        return {
            self.p.state: fs,
            **self.batch_list(fs, request),
            self.ctx.notice: notice(f"case batch {job[:8]} queued: {len(runs)} searches", ok=True),
            self.p.progress: md_text(f"case batch {job[:8]}: queued, {len(runs)} searches"),
            self.ctx.timer: gr.Timer(active=True),
        }

    def on_cancel(self, fs: FinderState, request: gr.Request) -> Any:
        """Cancel the batch picked in the list, else the requester's batches going on this server, whichever page
        queued them; the list again."""
        picked = fs.picked
        try:
            owner = requester(request)
            stopped = (
                ([picked] if cancel_owned_batch(self.ctx.store, owner, picked) else [])
                if picked
                else cancel_owned_batches(self.ctx.store, owner)
            )
        except AccessDenied as exc:
            return {self.ctx.notice: notice(str(exc))}
        except DB_ERRORS as exc:
            return {self.ctx.notice: notice(db_failure(exc))}
        listed = self.batch_list(fs, request)
        if not stopped:
            said = (
                f"case batch {picked[:8]} is not going any more"
                if picked
                else "no case batch of yours is going on this server"
            )
            return {self.p.state: fs, self.ctx.notice: notice(said), **listed}
        return {
            self.p.state: fs,
            **listed,
            self.ctx.notice: notice(
                f"cancel requested for case batch {', '.join(j[:8] for j in stopped)}: the search going stops within "
                "about a second (it stays in the run log, cancelled) and no further search starts",
                ok=True,
            ),
        }

    def _owned_live(self, request: gr.Request | None) -> str | None:
        """The requester's oldest batch going on this server (a page reloaded, or another tab of theirs, follows it)."""
        try:
            going = live_batch_jobs(self.ctx.store, requester(request))
        except (AccessDenied, *DB_ERRORS):
            return None
        return going[0] if going else None

    def on_tick(self, fs: FinderState, request: gr.Request | None = None) -> Any:
        """Follow the batch (this page's, else the requester's going one): its progress line, and the list again each
        time a pair finished and at its end."""
        job = fs.job or self._owned_live(request)
        if not job:
            return gr.skip()
        if job != fs.job:
            fs = replaced(fs, job=job, said=None)
        try:
            row = get_batch_job(self.ctx.store, job)
        except StorageError as exc:
            return {self.p.state: replaced(fs, job=None), self.p.progress: md_text(str(exc))}
        said = f"{row['status']}:{row['done']}"
        if said == fs.said:
            return gr.skip()
        pair_done = row["done"] // 2 != int((fs.said or ":0").split(":")[1]) // 2
        fs = replaced(fs, said=said)
        head = f"case batch {job[:8]}: "
        if row["status"] in LIVE:
            line = head + (
                "queued: it starts when a worker is free"
                if row["status"] == RunStatus.QUEUED
                else f"{row['done']} of {row['total']} searches done"
                + (f" ({row['failed']} failed)" if row["failed"] else "")
            )
            return {
                self.p.state: fs,
                self.p.progress: md_text(line),
                **self.batch_list(fs, request),
                **(self.listed(fs) if pair_done else {}),
            }
        took = float(row.get("ended_at") or time.time()) - float(row.get("created_at") or time.time())
        line = head + (
            f"{row['status']}, {row['done']} of {row['total']} searches in {_minutes(took)}"
            + (f": {row['error']}" if row.get("error") else "")
        )
        fs.job = None
        return {self.p.state: fs, self.p.progress: md_text(line), **self.batch_list(fs, request), **self.listed(fs)}

    def opener(self, open_case: Callable[[str, str], dict[Any, Any]]) -> Callable[..., Any]:
        def on_select(fs: FinderState, evt: gr.SelectData) -> Any:
            row = row_of(evt)
            if row is None or not 0 <= row < len(fs.rows):
                return {self.ctx.notice: notice("find the cases again; the list changed")}
            try:
                return open_case(*fs.rows[row])
            except StorageError as exc:
                return {self.ctx.notice: notice(str(exc))}

        return on_select


def build_case_finder(
    ctx: AppContext,
    p: FinderParts,
    open_case: Callable[[str, str], dict[Any, Any]],
    open_outputs: list[Any],
    form_inputs: dict[str, Any],
    then_js: str,
    stale: Any,
) -> None:
    """The finder's events. `open_case(run id, counterfactual id)` draws a pair into `open_outputs` (by component; the
    notice among them); `stale` is the comparison export's button, hidden by a new pair."""
    h = _Finder(ctx, p)
    p.find.click(h.on_find, [p.state], [p.state, p.table, p.summary])
    # the page's timer may have stopped (nothing live): a queued batch starts it, and the tick follows the batch
    p.batch.click(
        h.on_batch,
        [p.state, p.problems],
        [p.state, ctx.notice, p.progress, ctx.timer, p.batches],
        inputs_kwargs=form_inputs,
    )
    p.cancel.click(h.on_cancel, [p.state], [p.state, ctx.notice, p.batches])
    p.accordion.expand(h.on_open, [p.state], [p.state, p.batches])
    p.batches.select(h.on_pick, [p.state], [p.state, ctx.notice])
    ctx.poll.add(h.on_tick, [p.state], [p.state, p.progress, p.table, p.summary, p.batches], with_request=True)
    p.table.select(h.opener(open_case), [p.state], open_outputs).then(None, js=then_js).then(
        export_stale, None, [stale]
    )
