"""The Search tab's events: problem choice, starting and controlling runs, opening one, live polling,
stepping through iterations and redrawing on filter changes. Handlers take the run form and the view
filters as keyword arguments named as in SearchTab.form and SearchTab.filters."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import gradio as gr
import sqlalchemy as sa

from storage import StorageError, check_run_fields
from uats_core.config import ConfigError
from uats_core.errors import FieldError
from uats_core.problems import Problem, ProblemError
from uats_core.request import SearchRequest, validate_request
from uats_core.status import RunStatus

from ..access import AccessDenied, requester, require_owner
from ..choices import APP_POLICY_OPTIONS, APP_PRM_OPTIONS, ARITH, ServerChoices, app_options, server_policy_opts
from ..glossary import form_name
from ..jobs.pool import QueueFull, RunRequest, session_of
from ..views.charts import cost_figure, knobs_figure
from ..views.run_status import outcome, run_status_md, said_answer
from ..views.safe_text import md_inline, md_text
from .common import LIVE, AppContext, RunReads, fig_json, keyed, lines, notice
from .page_state import OpenRun
from .run_form import dataset_problems, form_config, pick_problem, problem_choices, typed_problem
from .search_layout import CONFIG_FIELDS, SearchTab
from .viewer import RunViewer

log = logging.getLogger(__name__)
FORM_ERRORS = (ConfigError, ProblemError, StorageError, ValueError, TypeError)
DB_ERRORS = (sa.exc.SQLAlchemyError,)  # what the bounds check missed: logged here, never shown (it quotes the SQL)


def form_error(exc: Exception) -> str:
    """A refused form as one line that names the field as the form does ("τ: …", not "tau: …")."""
    if isinstance(exc, FieldError) and str(exc).startswith(f"{exc.field}: "):
        return f"{form_name(exc.field)}: {str(exc)[len(exc.field) + 2 :]}"
    return str(exc)


def db_failure(exc: Exception) -> str:
    """The one line a page shows when the run log refused a write; the details go to the server's log only."""
    log.error("the run log refused a write: %s", exc, exc_info=exc)
    return "the run log could not record this run (details in the server's log); check the values and try again"


def question_md(p: Problem) -> str:
    return f"**{md_inline(p.id, 120)}** — {md_text(p.question)}\n\n_gold answer: {md_inline(p.answer)}_"


def dataset_view(offered: ServerChoices, ds: str) -> tuple[Any, str, Any]:
    """One of the server's problem sets picked: (the problem list's update, the first question, the notice)."""
    try:
        probs = dataset_problems(ds, offered)
    except (ProblemError, ValueError, OSError) as exc:
        return gr.update(choices=[], value=None), "", notice(str(exc))
    choices = problem_choices(probs)
    first = choices[0][1] if choices else None
    return gr.update(choices=choices, value=first), question_md(probs[0]) if probs else "", notice("")


def dataset_view_keeping(offered: ServerChoices, ds: str, pid: str | None) -> tuple[Any, str, Any]:
    """dataset_view for an answer that can arrive after the user picked or typed a problem (the page load's): the
    list's choices only, the pick and its question kept, so a late answer never replaces what the user chose."""
    problems, first, said = dataset_view(offered, ds)
    if not pid or not problems.get("choices"):
        return problems, first, said
    question, said = problem_view(offered, ds, pid)
    return gr.update(choices=problems["choices"]), question, said


def problem_view(offered: ServerChoices, ds: str, pid: str) -> tuple[str, Any]:
    """(The picked problem's question, the notice)."""
    try:
        p = pick_problem(dataset_problems(ds, offered), pid)
    except (ProblemError, ValueError, OSError) as exc:
        return "", notice(str(exc))
    return question_md(p), notice("")


def form_request(ctx: AppContext, form: Mapping[str, Any], method: str | None = None) -> SearchRequest:
    """The search the form's values (by field name) ask for, read through the server's own lists and not checked yet;
    `method` overrides the form's (Compare starts one run per method from the same form). Raises one of FORM_ERRORS
    naming the field."""
    values = {k: form[k] for k in CONFIG_FIELDS}
    if method is not None:
        values["method"] = method
    # the server's own lists name the models and problems: a client's value outside them is refused first
    policy, prm = ctx.choices.model("policy", form["policy"]), ctx.choices.model("prm", form["prm"])
    model_fields = {
        "prm_kind": None if form["prm_kind"] in (None, "", "detect") else form["prm_kind"],
        "policy_opts": server_policy_opts(
            form["policy"], policy, app_options(lines(form["policy_opts"]), "policy_opts", APP_POLICY_OPTIONS)
        ),
        "prm_opts": app_options(lines(form["prm_opts"]), "prm_opts", APP_PRM_OPTIONS),
    }
    ds = form["dataset"]
    config = form_config(values)
    typed = typed_problem(form.get("free_question"), form.get("free_answer"))
    prob = typed or pick_problem(dataset_problems(ds, ctx.choices), form["problem"])
    return SearchRequest(
        prob, config, policy=policy, prm=prm, world_problem=ds == ARITH and typed is None, **model_fields
    )


def checked_run(ctx: AppContext, request: SearchRequest) -> RunRequest:
    """A run of `request`, checked once (validate_request, the run's one validation, then what the run log can hold)
    and not registered yet."""
    checked = validate_request(request)
    try:  # both boxes together as the worker's RunStarted will write them: refused now, not as a failed run
        check_run_fields(model_options=checked.model_options())
    except StorageError as exc:
        raise ConfigError("policy_opts", f"with prm_opts, {str(exc).removeprefix(f'{exc.field}: ')}") from None
    return RunRequest(run_id=uuid.uuid4().hex, db=ctx.store.location, search=checked)


def run_request(ctx: AppContext, form: Mapping[str, Any], method: str | None = None) -> RunRequest:
    """A run from the form's values, checked (form_request, then checked_run) and not registered yet."""
    return checked_run(ctx, form_request(ctx, form, method))


def submit_run(
    ctx: AppContext,
    form: Mapping[str, Any],
    method: str | None = None,
    label: str | None = None,
    paused: bool = False,
    owner: str | None = None,
    session: str | None = None,
) -> str:
    """Register a run from the form's values (run_request) and queue it for a worker; its id (queue_run)."""
    return queue_run(ctx, run_request(ctx, form, method), label, paused, owner, session)


def queue_run(
    ctx: AppContext,
    req: RunRequest,
    label: str | None = None,
    paused: bool = False,
    owner: str | None = None,
    session: str | None = None,
) -> str:
    """Register a checked run and queue it for a worker; its id. `owner`: who started it (ui/access.py). The pool's
    queue limits (per server, per client `session`) may refuse it: QueueFull, nothing written."""
    ctx.pool.submit(
        req,
        session=session,
        paused=paused,
        register=lambda: req.register(ctx.store, label=label, paused=paused, owner=owner),
    )
    log.info("run %s submitted (%s on %s)", req.run_id, req.search.config.method, req.search.problem.id)
    return req.run_id


def _wire_problems(ctx: AppContext, t: SearchTab) -> None:
    f = t.form

    def on_dataset(ds):
        problems, question, said = dataset_view(ctx.choices, ds)
        return {f["problem"]: problems, t.question_md: question, ctx.notice: said}

    def on_problem(ds, pid):
        question, said = problem_view(ctx.choices, ds, pid)
        return {t.question_md: question, ctx.notice: said}

    f["dataset"].change(on_dataset, [f["dataset"]], [f["problem"], t.question_md, ctx.notice])
    # .input, not .change: a problem list filled by the page (dataset_view sets the question itself) must not
    # clear a message the user has not acted on yet (a link's "no run …")
    f["problem"].input(on_problem, [f["dataset"], f["problem"]], [t.question_md, ctx.notice])

    def on_typed(q, a, ds, pid):
        try:
            typed = typed_problem(q, a)
        except ProblemError as exc:
            return {ctx.notice: notice(str(exc))}
        return {t.question_md: question_md(typed), ctx.notice: notice("")} if typed else on_problem(ds, pid)

    for box in (f["free_question"], f["free_answer"]):
        box.blur(
            on_typed, [f["free_question"], f["free_answer"], f["dataset"], f["problem"]], [t.question_md, ctx.notice]
        )


def _wire_runs(ctx: AppContext, t: SearchTab, viewer: RunViewer) -> None:
    store = ctx.store

    def on_run(s: OpenRun, request: gr.Request, **form):
        try:
            run_id = submit_run(
                ctx, form, paused=bool(form["start_paused"]), owner=requester(request), session=session_of(request)
            )
        except FORM_ERRORS as exc:
            return {ctx.notice: notice(form_error(exc))}
        except DB_ERRORS as exc:
            return {ctx.notice: notice(db_failure(exc))}
        run = store.get_run(run_id)
        # the poll timer starts here, with the answer: left to the state's change (ui/tabs/idle.py), a stopped
        # timer started one round trip later, and the first scored node was drawn ~0.5 s later
        return {
            ctx.run_state: OpenRun(run_id=run_id, announced=RunStatus.QUEUED),
            ctx.notice: notice(f"run {run_id[:8]} queued: {form['method']} on {run['problem_id']}", ok=True),
            t.tree: "",
            t.status_md: run_status_md(run),
            t.follow: gr.update(value=True),
            ctx.timer: gr.Timer(active=True),
        }

    # no progress timers on what the poll redraws: they flickered in the status line on every click
    t.run_btn.click(
        on_run,
        [ctx.run_state],
        [ctx.run_state, ctx.notice, t.tree, t.status_md, t.follow, ctx.timer],
        inputs_kwargs=t.run_inputs(),
        show_progress="hidden",
    )

    def run_control(verb: str, control: Callable[[str], bool], done: str) -> Callable[..., Any]:
        """A button that sets a control flag of the open run (cancel, pause, step, resume): its owner's only."""

        def handler(s: OpenRun, request: gr.Request):
            if not s.run_id:
                return notice(f"no run is open to {verb}")
            rid = s.run_id
            try:
                require_owner(store, rid, request, verb)
                ok = control(rid)
            except (StorageError, AccessDenied, QueueFull) as exc:
                return notice(str(exc))
            return notice(done.format(run=rid[:8]) if ok else f"run {rid[:8]} had already ended", ok=ok)

        return handler

    # pausing and stepping go through the pool: it holds the number of paused runs to --max-paused
    controls = (
        (
            t.cancel_btn,
            "cancel",
            store.request_cancel,
            "cancel requested for run {run}; it stops within a second or two",
        ),
        (t.pause_btn, "pause", ctx.pool.pause_run, "run {run} pauses after its current iteration"),
        (t.step_btn, "step", ctx.pool.step_run, "run {run}: one more iteration, then it waits"),
        (t.resume_btn, "resume", store.resume_run, "run {run} resumed"),
    )
    for button, verb, control, done in controls:
        button.click(
            run_control(verb, control, done),
            [ctx.run_state],
            [ctx.notice],
            api_name=f"{verb}_run",
            show_progress="hidden",
        )
    # opening a big run takes seconds: its progress shows on the tree only
    t.open_btn.click(
        viewer.open_run,
        [ctx.run_state, t.open_id],
        viewer.open_outputs,
        inputs_kwargs=t.filters,
        show_progress_on=[t.tree],
    )
    t.open_id.submit(
        viewer.open_run,
        [ctx.run_state, t.open_id],
        viewer.open_outputs,
        inputs_kwargs=t.filters,
        show_progress_on=[t.tree],
    )


def live_update(
    ctx: AppContext,
    viewer: RunViewer,
    s: OpenRun,
    follow_live: bool,
    view: dict[str, Any],
    reads: RunReads | None = None,
) -> dict[Any, Any]:
    """One poll of the open run, its outputs by component: when its version moved on (`reads`: the tick's), the
    rows written since are read (the cache grows the run's data), and, following live, the page gets the tree
    after every iteration it has not drawn yet, in order (RunViewer.live_frames). Writes `s` in place."""
    if not s.run_id:
        return {}
    t, reads = viewer.tab, reads or ctx.reads()
    try:
        version = reads.version(s.run_id)
    except StorageError as exc:
        s.run_id = None
        return {ctx.notice: notice(str(exc))}
    if version == s.version:
        return {}
    data = reads.data(s.run_id)
    run = data.run
    out: dict[Any, Any] = {}
    if follow_live or s.t is None:
        s.t = None
        out[t.tree], state, caught_up = viewer.live_frames(s, view, data, version)
        rows = [r for it, r in sorted(data.iterations.items()) if it <= state.iteration]
        out[t.cost_plot] = fig_json(cost_figure(rows))
        out[t.knobs_plot] = fig_json(knobs_figure(rows))
        out.update(viewer.selected_view(s, data, state))
        # not caught up: leave the version unrecorded, so the next poll sends the frames still to come
        s.version = version if caught_up else None
        slider_t = state.iteration
    else:
        state = data.state_at(s.t)
        s.version = version
        slider_t = s.t
    if s.version is not None:  # frames still to come (the next poll's): the status waits for the last of them
        out[ctx.notice] = _progress_notice(s, run)
        out[t.status_md] = run_status_md(run, state, viewer.shadow(s.run_id))
    out[t.t_slider] = viewer.slider_update(data, slider_t)
    if run["status"] not in LIVE and s.version is not None:
        out[t.export_key] = f"{run['run_id']}:{run['status']}"
    return out


def _wire_polling(ctx: AppContext, t: SearchTab, viewer: RunViewer) -> None:
    def on_tick(s: OpenRun, follow_live: bool, reads: RunReads, **view: Any) -> Any:
        # a tick only reads: the pool's own thread starts and reaps jobs
        return keyed(live_update(ctx, viewer, s, follow_live, view, reads))

    ctx.poll.add(
        on_tick,
        [ctx.run_state, t.follow],
        [ctx.notice, t.tree, t.status_md, t.t_slider, t.cost_plot, t.export_key, t.knobs_plot, t.figure1, t.node_md],
        inputs_kwargs=t.filters,
        with_reads=True,
    )


def _progress_notice(s: OpenRun, run: dict[str, Any]) -> Any:
    """The notice that announced a run (queued) follows it while it starts and ends, instead of still
    saying queued after the run is over; other notices are left alone."""
    said = s.announced
    if said is None or run["status"] == said:
        return gr.skip()
    s.announced = None if run["status"] not in LIVE else run["status"]
    rid, status = run["run_id"][:8], run["status"]
    if status == RunStatus.RUNNING:
        return notice(f"run {rid} running: {run.get('method')} on {run.get('problem_id')}", ok=True)
    if status == RunStatus.FINISHED:
        return notice(f"run {rid} finished: answer {said_answer(run)} ({outcome(run)})", ok=True)
    return notice(f"run {rid} {status}" + (f": {run['error']}" if run.get("error") else ""))


def _wire_stepping(ctx: AppContext, tab: SearchTab, viewer: RunViewer) -> None:
    def goto_t(s: OpenRun, t: Any, **view: Any) -> Any:
        if not s.run_id:
            return gr.skip()
        data = ctx.cache.get(s.run_id)
        t = max(0, min(int(t or 0), data.max_iteration))
        s.t = None if (t >= data.max_iteration and data.run["status"] in LIVE) else t
        fig, data, state = viewer.draw_tree(s, view)
        return {
            ctx.run_state: s,
            tab.tree: fig,
            tab.status_md: run_status_md(data.run, state, viewer.shadow(s.run_id)),
            tab.t_slider: gr.update(value=t),
            tab.follow: gr.update(value=s.t is None),
            tab.cost_plot: fig_json(cost_figure(list(data.iterations.values()), current=state.iteration)),
            **viewer.selected_view(s, data, state),
        }

    step_outputs = [
        ctx.run_state,
        tab.tree,
        tab.status_md,
        tab.t_slider,
        tab.follow,
        tab.cost_plot,
        tab.figure1,
        tab.node_md,
    ]
    # input covers dragging and typing in the slider's box; always_last drops the stale steps of a drag
    tab.t_slider.input(
        goto_t,
        [ctx.run_state, tab.t_slider],
        step_outputs,
        trigger_mode="always_last",
        show_progress="hidden",
        inputs_kwargs=tab.filters,
    )
    tab.prev_btn.click(
        lambda s, t, **view: goto_t(s, (t or 0) - 1, **view),
        [ctx.run_state, tab.t_slider],
        step_outputs,
        inputs_kwargs=tab.filters,
        show_progress="hidden",
    )
    tab.next_btn.click(
        lambda s, t, **view: goto_t(s, (t or 0) + 1, **view),
        [ctx.run_state, tab.t_slider],
        step_outputs,
        inputs_kwargs=tab.filters,
        show_progress="hidden",
    )

    def on_play(s: OpenRun, t: Any, active_label: str) -> Any:
        if not s.run_id:
            return gr.skip()
        data = ctx.cache.get(s.run_id)
        if active_label.startswith("❚❚"):  # playing: this click pauses
            return {tab.play_timer: gr.update(active=False), tab.play_btn: gr.update(value="▶ play")}
        start = 0 if (t or 0) >= data.max_iteration else int(t or 0)
        return {
            tab.play_timer: gr.update(active=True),
            tab.play_btn: gr.update(value="❚❚ pause"),
            tab.t_slider: gr.update(value=start),
        }

    tab.play_btn.click(
        on_play, [ctx.run_state, tab.t_slider, tab.play_btn], [tab.play_timer, tab.play_btn, tab.t_slider]
    )

    def on_play_tick(s: OpenRun, t: Any, **view: Any) -> Any:
        stop = {tab.play_timer: gr.update(active=False), tab.play_btn: gr.update(value="▶ play")}
        if not s.run_id:
            return stop
        nxt = int(t or 0) + 1
        if nxt > ctx.cache.get(s.run_id).max_iteration:
            return stop
        return goto_t(s, nxt, **view)

    tab.play_timer.tick(
        on_play_tick,
        [ctx.run_state, tab.t_slider],
        [tab.play_timer, tab.play_btn, *step_outputs],
        show_progress="hidden",
        inputs_kwargs=tab.filters,
    )


def _wire_view(ctx: AppContext, t: SearchTab, viewer: RunViewer) -> None:
    def on_follow(s: OpenRun, follow_live: bool, **view: Any) -> Any:
        if not follow_live or not s.run_id:
            return gr.skip()
        s.t = None
        fig, data, state = viewer.draw_tree(s, view)
        return {
            ctx.run_state: s,
            t.tree: fig,
            t.t_slider: viewer.slider_update(data, None),
            **viewer.selected_view(s, data, state),
        }

    t.follow.input(
        on_follow,
        [ctx.run_state, t.follow],
        [ctx.run_state, t.tree, t.t_slider, t.figure1, t.node_md],
        inputs_kwargs=t.filters,
        show_progress="hidden",
    )

    def redraw(s: OpenRun, **view: Any) -> Any:
        if not s.run_id:
            return gr.skip()
        fig, _, _ = viewer.draw_tree(s, view)
        return fig

    f = t.filters
    for comp in (f["score_min"], f["score_max"], f["depth_max"]):
        comp.release(redraw, [ctx.run_state], [t.tree], inputs_kwargs=f)
    for comp in (f["high_variance_only"], f["hide_pruned"], f["glyphs"], f["show_decisions"]):
        comp.input(redraw, [ctx.run_state], [t.tree], inputs_kwargs=f)
    f["search"].submit(redraw, [ctx.run_state], [t.tree], inputs_kwargs=f)
    f["search"].blur(redraw, [ctx.run_state], [t.tree], inputs_kwargs=f)


def wire_search(ctx: AppContext, t: SearchTab) -> RunViewer:
    """Wire the tab's run and view events; the RunViewer other tabs open runs with."""
    viewer = RunViewer(ctx, t)
    _wire_problems(ctx, t)
    _wire_runs(ctx, t, viewer)
    _wire_polling(ctx, t, viewer)
    _wire_stepping(ctx, t, viewer)
    _wire_view(ctx, t, viewer)
    return viewer
