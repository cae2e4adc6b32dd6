"""One run-request type, one validator: the app's Run button, `uats search` and the evaluation each hand a
SearchRequest to uats_core.request.validate_request once per run (per cell), and nothing after it checks the
config again: SearchConfig.validate, the limits and τ's resolution run once a run, and the question's fit to the
loaded models (check_prompt_fits) once, in run_search. Before, the app resolved τ twice a run, the command line
checked the fit twice, and the evaluation resolved τ three times and checked the limits twice a cell."""

from __future__ import annotations

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

ONCE = {"validate_request": 1, "SearchConfig.validate": 1, "check_limits": 1, "resolve_tau": 1,
        "check_prompt_fits": 1}


def _counted(monkeypatch: pytest.MonkeyPatch):
    counts = count_calls(monkeypatch, validate_request=validate_request, check_limits=check_limits,
                         resolve_tau=resolve_tau, check_prompt_fits=check_prompt_fits)
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
    form = {**{k: defaults[k] for k in CONFIG_FIELDS}, "policy": EMBEDDED, "prm": EMBEDDED, "prm_kind": "detect",
            "policy_opts": "", "prm_opts": "", "dataset": ARITH, "dataset_path": "", "problem": "arith-test-0",
            "free_question": "", "free_answer": ""}
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


def test_the_evaluation_validates_each_cell_once(problems_file: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Four cells (two problems, REBASE and H-UATS): each validated once before anything is written, then run."""
    from uats.eval import EvalOptions, run_eval

    dataset, probs = load_eval_problems(None, str(problems_file), 2)
    spec = GridSpec(pairs=parse_pairs("pol:rm", MODELS), problems=probs, dataset=dataset, methods=["rebase", "h-uats"],
                    budgets=[4], seeds=[0])
    counts = _counted(monkeypatch)
    summary = run_eval(spec, EvalOptions(db=str(tmp_path / "eval.db"), progress=False))
    assert summary.finished == 4
    assert dict(counts) == {k: 4 * n for k, n in ONCE.items()}
