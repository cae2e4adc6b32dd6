"""One run-request type, one validator, one way in: every module that calls the engine (validate_request,
prepare_search or run_search; found by AST over the whole project, not listed by hand) is an entry point with a test
here that runs it and counts: each SearchRequest is handed to uats_core.request.validate_request once, and nothing
after it checks the config again (SearchConfig.validate, the limits and τ's resolution once per checked request; the
question's fit to the loaded models once a run, in the runner). Nothing outside the runner builds a search or a
method (SearchContext, make_method, _run_search) and nothing outside request.py makes a CheckedSearch, so a search
cannot start unchecked. Before, the app resolved τ twice a run, the command line checked the fit twice, the
evaluation resolved τ three times and checked the limits twice a cell, `uats train` and benchmarks/engine.py checked
configs their own way and ran unchecked ones, and the case finder checked each run twice."""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import pytest

from storage import RunStore
from testkit.call_counts import count_calls
from testkit.doubles import WorkerPoolDouble
from testkit.eval_doubles import MODELS
from uats_core.calibration import resolve_tau
from uats_core.config import SearchConfig
from uats_core.eval.grid import GridSpec, load_eval_problems, parse_pairs
from uats_core.limits import check_limits, check_prompt_fits
from uats_core.request import validate_request

ONCE = {"validate_request": 1, "SearchConfig.validate": 1, "check_limits": 1, "resolve_tau": 1, "check_prompt_fits": 1}


def _counted(monkeypatch: pytest.MonkeyPatch):
    counts = count_calls(
        monkeypatch,
        validate_request=validate_request,
        check_limits=check_limits,
        resolve_tau=resolve_tau,
        check_prompt_fits=check_prompt_fits,
    )
    real_validate = SearchConfig.validate

    def validate(self: SearchConfig) -> SearchConfig:
        counts["SearchConfig.validate"] += 1
        return real_validate(self)

    monkeypatch.setattr(SearchConfig, "validate", validate)
    return counts


def test_the_app_validates_a_run_once_where_it_is_submitted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Run button's path: the form -> a checked RunRequest -> the registered run -> a worker's search."""
    from ui.choices import ARITH, EMBEDDED, server_choices
    from ui.jobs.warm import ModelCache, execute
    from ui.tabs.search_events import submit_run
    from ui.tabs.search_layout import CONFIG_FIELDS

    defaults = SearchConfig(budget=4, max_iterations=3).to_dict()
    form = {
        **{k: defaults[k] for k in CONFIG_FIELDS},
        "policy": EMBEDDED,
        "prm": EMBEDDED,
        "prm_kind": "detect",
        "policy_opts": "",
        "prm_opts": "",
        "dataset": ARITH,
        "dataset_path": "",
        "problem": "arith-test-0",
        "free_question": "",
        "free_answer": "",
    }
    store = RunStore(str(tmp_path / "runs.db"))
    pool = WorkerPoolDouble()
    counts = _counted(monkeypatch)
    run_id = submit_run(SimpleNamespace(store=store, pool=pool, choices=server_choices()), form)
    [req] = pool.submitted
    assert dict(counts) == {k: n for k, n in ONCE.items() if k != "check_prompt_fits"}  # no model loaded yet
    execute(req, ModelCache(), store)  # the worker, in this process
    assert store.get_run(run_id)["status"] == "finished"
    assert dict(counts) == ONCE


def test_the_command_line_validates_a_search_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from uats.cli import main

    counts = _counted(monkeypatch)
    assert main(["search", "--budget", "4", "--max-iterations", "2", "--db", str(tmp_path / "r.db"), "--quiet"]) == 0
    assert dict(counts) == ONCE


def test_the_evaluation_validates_each_cell_once(
    problems_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four cells (two problems, REBASE and H-UATS): each validated once before anything is written, then run."""
    from uats.eval import EvalOptions, run_eval

    dataset, probs = load_eval_problems(None, str(problems_file), 2)
    spec = GridSpec(
        pairs=parse_pairs("pol:rm", MODELS),
        problems=probs,
        dataset=dataset,
        methods=["rebase", "h-uats"],
        budgets=[4],
        seeds=[0],
    )
    counts = _counted(monkeypatch)
    summary = run_eval(spec, EvalOptions(db=str(tmp_path / "eval.db"), progress=False))
    assert summary.finished == 4
    assert dict(counts) == {k: 4 * n for k, n in ONCE.items()}


# ------------------------------------------------------------------------------------------- every caller, by AST
ROOT = Path(__file__).resolve().parents[1]
DOORS = {"validate_request", "prepare_search", "run_search", "check_cells"}  # the engine's ways in (and a grid's)
ENGINE = {"uats_core/request.py", "uats_core/runner.py"}  # where they are defined
# Each module that calls a door, and the test below that runs it and counts its validations.
COUNTED = {
    "ui/tabs/search_events.py": "test_the_app_validates_a_run_once_where_it_is_submitted",
    "ui/jobs/warm.py": "test_the_app_validates_a_run_once_where_it_is_submitted",
    "ui/jobs/pool.py": "test_the_pools_prewarm_request_is_checked_once",
    "uats/cli.py": "test_the_command_line_validates_a_search_once",
    "uats_core/eval/grid.py": "test_the_evaluation_validates_each_cell_once",
    "uats/eval/worker.py": "test_the_evaluation_validates_each_cell_once",
    "uats/eval/run.py": "test_the_evaluation_validates_each_cell_once",
    "benchmarks/eval_batching.py": "test_the_benchmarks_reach_the_engine_through_a_validating_door_only",
    "uats/train_controller.py": "test_the_controllers_training_validates_each_search_once",
    "benchmarks/engine.py": "test_the_benchmarks_reach_the_engine_through_a_validating_door_only",
    "docs/img/estimator_figure1.py": "test_the_figure_script_validates_each_search_once",
}
# Only the runner builds a search; only the validator makes a CheckedSearch.
ONLY_IN = {
    "_run_search": {"uats_core/runner.py"},
    "SearchContext": {"uats_core/runner.py"},
    "make_method": {"uats_core/runner.py"},
    "CheckedSearch": {"uats_core/request.py"},
}


def _project_modules() -> list[Path]:
    files = [ROOT / "app.py", *sorted((ROOT / "docs" / "img").glob("*.py"))]
    # testkit/ is the tests' own support (its doubles run searches as tests do), not an entry point
    for top in ("uats_core", "storage", "reports", "uats", "ui", "uats_studio", "benchmarks"):
        files += sorted((ROOT / top).rglob("*.py"))
    return files


def _called(path: Path) -> set[str]:
    """The names this module calls (f(...) and x.f(...))."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            f = node.func
            out.add(f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", ""))
    return out


def test_every_caller_of_the_engine_is_an_entry_point_counted_here() -> None:
    callers, misplaced = set(), []
    for path in _project_modules():
        rel, called = path.relative_to(ROOT).as_posix(), _called(path)
        if called & DOORS and rel not in ENGINE:
            callers.add(rel)
        misplaced += [f"{rel} calls {name}" for name, where in ONLY_IN.items() if name in called and rel not in where]
    assert callers == set(COUNTED), (
        f"not counted: {callers - set(COUNTED)}; no longer callers: {set(COUNTED) - callers}"
    )
    assert all(callable(globals().get(test)) for test in COUNTED.values())
    assert not misplaced, misplaced


def test_a_search_runs_only_from_a_checked_request() -> None:
    from testkit.doubles import HashedPRMDouble, ScriptedPolicyDouble
    from uats_core.runner import _run_search

    with pytest.raises(TypeError, match="CheckedSearch"):
        _run_search(SearchConfig(), ScriptedPolicyDouble(depth=2), HashedPRMDouble(0))  # type: ignore[arg-type]


def _once_each(counts, requests: int, runs: int) -> None:
    """`requests` checked requests, each validated once; `runs` searches run, each fitted to its models once."""
    assert dict(counts) == {
        k: (runs if k == "check_prompt_fits" else requests) * n
        for k, n in ONCE.items()
        if (runs if k == "check_prompt_fits" else requests)
    }


def test_the_pools_prewarm_request_is_checked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from ui.jobs.pool import default_pair_request

    counts = _counted(monkeypatch)
    assert default_pair_request().search.config == SearchConfig()
    _once_each(counts, requests=1, runs=0)


def test_the_case_finder_checks_each_of_its_runs_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One problem: policies A and B, each an H-UATS run and its counterfactual; four checked runs, four validations
    (it was six: the form's request, then each run again)."""
    from ui.choices import EMBEDDED, server_choices
    from ui.tabs.case_finder import batch_requests
    from ui.tabs.search_layout import CONFIG_FIELDS

    ctx = SimpleNamespace(store=RunStore(str(tmp_path / "runs.db")), choices=server_choices())
    config = SearchConfig(budget=4, max_iterations=3).to_dict()
    form = {
        **{k: config[k] for k in CONFIG_FIELDS},
        "policy": EMBEDDED,
        "prm": EMBEDDED,
        "prm_kind": "detect",
        "policy_opts": "",
        "prm_opts": "",
    }
    counts = _counted(monkeypatch)
    runs = batch_requests(ctx, form, 1)
    assert len(runs) == 4 and len({r.run_id for r in runs}) == 4
    _once_each(counts, requests=4, runs=0)


def test_the_controllers_training_validates_each_search_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from testkit.doubles import HashedPRMDouble, ScriptedPolicyDouble
    from uats.train_controller import collect_states
    from uats_core.worlds.arith.world import load_split

    counts = _counted(monkeypatch)
    states = collect_states(
        load_split("train", 2, seed=0),
        [(ScriptedPolicyDouble(depth=3), HashedPRMDouble(0))],
        SearchConfig(method="a-uats", budget=4, max_iterations=3),
        2,
    )
    assert states
    _once_each(counts, requests=2, runs=2)


def test_run_search_validates_each_search_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """run_search, the way in for a pair already loaded (the benchmarks', the trainer's): each call one checked
    request."""
    from testkit.doubles import HashedPRMDouble, ScriptedPolicyDouble
    from uats_core.runner import run_search
    from uats_core.worlds.arith.world import get_problem

    counts = _counted(monkeypatch)
    for seed in (0, 1):
        result = run_search(
            get_problem("arith-test-0"),
            SearchConfig(method="best-of-n", budget=4, seed=seed),
            ScriptedPolicyDouble(depth=3),
            HashedPRMDouble(seed),
        )
        assert result.status == "finished"
    _once_each(counts, requests=2, runs=2)


# What a module may call to check a search or run one besides the engine's doors: nothing (its own checks would be a
# second validation).
OWN_CHECKS = {"validate", "check_config", "check_limits", "resolve_tau", "check_method_settings"}


def test_the_benchmarks_reach_the_engine_through_a_validating_door_only() -> None:
    """The benchmarks are programs the tests do not import (tests/test_import_map.py): read, they call the engine
    through run_search (one validate_request a search, the test above) and check_cells (one a cell, the evaluation's
    test) and check nothing themselves."""
    for rel in ("benchmarks/engine.py", "benchmarks/eval_batching.py"):
        called = _called(ROOT / rel)
        assert called & DOORS <= {"run_search", "check_cells"} and called & DOORS, rel
        assert not called & OWN_CHECKS, (rel, called & OWN_CHECKS)


@pytest.mark.slow  # two real H-UATS searches at K0 = 7 (about a minute on a loaded machine)
def test_the_figure_script_validates_each_search_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/img/estimator_figure1.py: two H-UATS searches (MC dropout, the ensemble), τ = auto resolved by the
    validator from each estimator's calibration."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("estimator_figure1", ROOT / "docs" / "img" / "estimator_figure1.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    counts = _counted(monkeypatch)
    figs = module.figures(tmp_path / "fig.db")
    assert set(figs) == {"mc-dropout", "ensemble"}
    _once_each(counts, requests=2, runs=2)
    store = RunStore(str(tmp_path / "fig.db"))
    assert all(isinstance(store.get_run(f"fig1-{e}")["config"]["tau"], float) for e in figs)
