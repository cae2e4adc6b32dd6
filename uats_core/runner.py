"""Runs one problem's search end to end: seeds, events, voting, grading, and an honest end state.

The one way in: a SearchRequest checked by uats_core.request.validate_request gives a CheckedSearch, `prepare_search`
turns it into a PreparedSearch (loading the models, or taking a pair already loaded), and `PreparedSearch.run`
searches. Entry points (CLI, app, evaluation, the controller's training, the benchmarks) subscribe storage to its
events; the search core itself never sees a database. `run_search` is the same way in for a pair already loaded.
`_run_search`, the search itself, takes only a CheckedSearch and is called by PreparedSearch.run alone
(tests/test_one_validator.py finds every caller of the engine by AST)."""

from __future__ import annotations

import logging
import random
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .cancel import cancellable
from .config import SearchConfig
from .events import EventBus, RunEnded, RunStarted, Subscriber
from .grading import Grader, vote
from .limits import check_prompt_fits
from .methods import SearchCancelled, SearchContext, make_method
from .paths import ASSETS, WORLD_POLICY as DEFAULT_POLICY, WORLD_PRM as DEFAULT_PRM  # noqa: F401 - re-exported
from .problems import Problem
from .protocols import PRM, Embedder, Policy
from .request import CheckedSearch, SearchRequest, validate_request
from .status import RunStatus
from .tree import SearchTree

log = logging.getLogger(__name__)


@dataclass
class RunResult:
    run_id: str
    status: str
    answer: str | None
    naive_answer: str | None
    correct: bool | None
    naive_correct: bool | None
    cost: float
    iterations: int
    tree: SearchTree
    error: str | None = None


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    try:
        import torch

        torch.manual_seed(seed)
    except ImportError:  # the core runs without torch (test doubles)
        pass


def _progress_bar(config: SearchConfig) -> Any:
    """A tqdm bar of the search's iterations (imported only when asked for)."""
    from tqdm import tqdm

    return tqdm(total=config.max_iterations, desc=f"{config.method} N={config.budget}", unit="step", leave=False)


def _run_started(run_id: str, checked: CheckedSearch, policy: Policy, prm: PRM) -> RunStarted:
    """The run's first event: what it searches, with which settings and models (as they were loaded)."""
    return RunStarted(
        run_id=run_id,
        **checked.run_fields(),
        policy=getattr(policy, "name", type(policy).__name__),
        prm=getattr(prm, "name", type(prm).__name__),
        model_options=checked.model_options(),
    )


def _run_search(
    checked: CheckedSearch,
    policy: Policy,
    prm: PRM,
    *,
    subscribers: Sequence[Subscriber] = (),
    should_cancel: Callable[[], bool] | None = None,
    run_id: str | None = None,
    embedder: Embedder | None = None,
    controller: Any = None,
    grader: Grader | None = None,
    progress: bool = False,
    cancel_requested: Callable[[], bool] | None = None,
) -> RunResult:
    """Search the checked request's problem. Always emits RunEnded: 'finished', 'cancelled' (should_cancel,
    cancel_requested or Ctrl-C) or 'failed' (any exception, re-raised after the run is closed).

    should_cancel is asked before each iteration and may block (step mode); cancel_requested must answer at
    once: the backends poll it between batches, so a cancel lands inside a long iteration too.

    The request was checked where the run was asked for (validate_request, once per run: a CheckedSearch is made
    there only); here, once the models are loaded, only that the question fits their context. The run records how
    the policy and PRM were loaded (RunStarted's model_options)."""
    if not isinstance(checked, CheckedSearch):
        raise TypeError(
            f"a search runs from a CheckedSearch (uats_core.request.validate_request), not {type(checked).__name__}"
        )
    problem, config = checked.problem, checked.config
    check_prompt_fits(problem.question, policy, prm)  # before RunStarted: a refused problem logs no run
    method = make_method(config, controller)
    run_id = run_id or uuid.uuid4().hex
    bus = EventBus(*subscribers)
    own_grader = grader is None
    grader = grader or Grader()
    if method.needs_embedder and embedder is None:
        from .embedders import default_embedder

        embedder = default_embedder()
    bar = _progress_bar(config) if progress else None
    ctx = SearchContext(
        problem.question,
        problem.answer,
        config,
        policy,
        prm,
        bus,
        grader,
        should_cancel,
        embedder,
        controller,
        on_iteration=(lambda t: bar.update(1)) if bar else None,
    )
    bus.emit(_run_started(run_id, checked, policy, prm))
    seed_everything(config.seed)
    status, error = RunStatus.FINISHED, None
    answer = naive = None
    correct = naive_correct = None
    try:
        with cancellable(cancel_requested):
            finals = method.search(ctx)
        ctx.mark_voted(finals)
        candidates = [
            (n.answer, float(n.mean if n.mean is not None else 0.0), ctx.tree.trace(n.id).text) for n in finals
        ]
        answer, naive = vote(candidates, grader, method.vote_rule()), vote(candidates, grader, "best")
        if problem.answer is not None:
            correct = grader.equivalent(problem.answer, answer)
            naive_correct = grader.equivalent(problem.answer, naive)
    except (SearchCancelled, KeyboardInterrupt) as exc:
        status, error = RunStatus.CANCELLED, str(exc) or type(exc).__name__
    except Exception as exc:
        status, error = RunStatus.FAILED, f"{type(exc).__name__}: {exc}"
        # An error that names its field (a full run log, a bad input) says everything in its one line, which
        # the caller reports; a traceback is for the unexpected.
        log.log(logging.DEBUG if hasattr(exc, "field") else logging.ERROR, "search %s failed", run_id, exc_info=True)
        try:
            _close(ctx, bus, status, error, answer, naive, correct, naive_correct)
        except Exception:  # noqa: BLE001 - the run log that failed may fail again (disk full): keep the first error
            log.debug("could not record the end of search %s", run_id, exc_info=True)
        raise
    finally:
        if bar is not None:
            bar.close()
        if own_grader:
            grader.close()
    _close(ctx, bus, status, error, answer, naive, correct, naive_correct)
    return RunResult(
        run_id=run_id,
        status=status,
        answer=answer,
        naive_answer=naive,
        correct=correct,
        naive_correct=naive_correct,
        cost=ctx.cost_total,
        iterations=ctx.iterations_done,
        tree=ctx.tree,
        error=error,
    )


def run_search(
    problem: Problem,
    config: SearchConfig,
    policy: Policy,
    prm: PRM,
    *,
    controller: Any = None,
    embedder: Embedder | None = None,
    prm_spec: str | None = None,
    **kw: Any,
) -> RunResult:
    """A search with a pair already loaded (a benchmark's, a trainer's, test doubles), through the one way in: the
    request checked once by validate_request, then prepare_search with the pair, then PreparedSearch.run.
    `controller`: A-UATS's (None: its knobs from the config), `embedder`: DORA's (None: the default one),
    `prm_spec`: the PRM's spec, where an auto τ's calibration is (None: the embedded PRM's); kw: PreparedSearch.run's
    (subscribers, run_id, grader, cancellation, progress)."""
    checked = validate_request(SearchRequest(problem, config, prm=prm_spec))
    search = prepare_search(
        checked,
        models=(policy, prm),
        controller=lambda _config: controller,
        embedder=None if embedder is None else (lambda: embedder),
    )
    return search.run(**kw)


def _close(
    ctx: SearchContext,
    bus: EventBus,
    status: str,
    error: str | None,
    answer: str | None,
    naive: str | None,
    correct: bool | None,
    naive_correct: bool | None,
) -> None:
    ctx.flush_nodes(ctx.iterations_done + (status != RunStatus.FINISHED))  # nodes of an interrupted step still land
    bus.emit(
        RunEnded(
            status=status,
            answer=answer,
            naive_answer=naive,
            correct=correct,
            naive_correct=naive_correct,
            cost=ctx.cost_total,
            iterations=ctx.iterations_done,
            error=error,
            extra={"generated_steps": ctx.generated_steps, "prm_passes": ctx.prm_passes},
        )
    )


def build_backends(
    policy_spec: str | None,
    prm_spec: str | None,
    config: SearchConfig,
    *,
    prm_kind: str | None = None,
    policy_opts: dict[str, Any] | None = None,
    prm_opts: dict[str, Any] | None = None,
    world_problem: bool = True,
) -> tuple[Policy, PRM]:
    """Check the pair completely (specs, PRM kind, options), then load it; None means the embedded arithmetic
    world's policy A and PRM, which only the world's own problems may use (world_problem)."""
    from .backends.plan import load_models, plan_models

    plan = plan_models(
        policy_spec,
        prm_spec,
        prm_kind=prm_kind,
        policy_opts=policy_opts,
        prm_opts=prm_opts,
        world_problem=world_problem,
    )
    return load_models(plan, dropout_p=config.dropout_p, dropout_mode=config.dropout_mode)


@dataclass
class PreparedSearch:
    """A search ready to run on its problem: the checked request's config (τ resolved), the policy and PRM, A-UATS's
    controller and DORA's embedder. Every entry point (the CLI, the app's workers, the evaluation workers) builds it
    with `prepare_search` from a CheckedSearch, so they cannot differ in how a search is put together."""

    checked: CheckedSearch
    policy: Policy
    prm: PRM
    controller: Any = None
    embedder: Embedder | None = None

    @property
    def config(self) -> SearchConfig:
        return self.checked.config

    @property
    def tau_note(self) -> dict[str, Any] | None:
        return self.checked.tau_note  # where an auto τ came from (None for a number)

    def run(self, **kw: Any) -> RunResult:
        """The search, with this search's parts; kw: subscribers, run_id, grader, cancellation, progress."""
        return _run_search(
            self.checked, self.policy, self.prm, controller=self.controller, embedder=self.embedder, **kw
        )


def prepare_search(
    checked: CheckedSearch,
    *,
    models: tuple[Policy, PRM] | None = None,
    controller: Callable[[SearchConfig], Any] | None = None,
    embedder: Callable[[], Embedder] | None = None,
) -> PreparedSearch:
    """A checked search (uats_core.request.validate_request) -> a PreparedSearch, loading what its method needs.
    `models`: a pair already loaded (a warm or evaluation worker's cache) instead of loading the request's specs
    (then loaded with the request's kind and options); `controller` / `embedder`: cached providers instead of
    loading A-UATS's controller (config.controller) and DORA's default embedder anew."""
    from .methods import method_class

    config, request = checked.config, checked.request
    if models is None:
        models = build_backends(
            request.policy,
            request.prm,
            config,
            prm_kind=request.prm_kind,
            policy_opts=dict(request.policy_opts),
            prm_opts=dict(request.prm_opts),
            world_problem=request.world_problem,
        )
    needs = method_class(config.method)
    ctrl = None
    if needs.needs_controller:
        if controller is None:
            from .controller import load_controller

            ctrl = load_controller(config.controller, config)
        else:
            ctrl = controller(config)
    emb: Embedder | None = None
    if needs.needs_embedder:
        if embedder is None:
            from .embedders import default_embedder

            emb = default_embedder()
        else:
            emb = embedder()
    return PreparedSearch(checked, models[0], models[1], ctrl, emb)
