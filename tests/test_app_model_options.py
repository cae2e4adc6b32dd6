"""Issue 42, item 8: a run started in the app records the policy and PRM options its worker loaded the models
with (runs.model_options), as the command line's does (tests/test_cli_guard.py); NaN and infinity never get
that far (ui.choices.app_options refuses them, by field)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from storage import RunStore
from testkit.pool_requests import search_job
from uats_core.config import ConfigError, SearchConfig
from ui.choices import APP_POLICY_OPTIONS, ARITH, app_options
from ui.jobs.warm import ModelCache, execute
from ui.tabs.run_form import dataset_problems


def test_the_apps_worker_records_the_options_of_its_run(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path / "runs.db"))
    try:
        prob = dataset_problems(ARITH)[0]
        config = SearchConfig(budget=4, max_iterations=1).to_dict()
        req = search_job(uuid.uuid4().hex, store.location, prob, config, policy_opts={"temperature": 0.5, "top_p": 0.9})
        store.register_run(
            req.run_id, method=config["method"], problem_id=prob.id, question=prob.question, config=config
        )
        assert execute(req, ModelCache(), store) is None
        run = store.get_run(req.run_id)
        assert run["status"] == "finished"
        assert run["model_options"] == {
            "policy_opts": {"temperature": 0.5, "top_p": 0.9},
            "prm_opts": {},
            "prm_kind": None,
        }
    finally:
        store.close()


@pytest.mark.parametrize("line", ["temperature=NaN", "top_p=Infinity", "temperature=-Infinity"])
def test_the_app_refuses_non_finite_options_by_field(line: str) -> None:
    with pytest.raises(ConfigError) as exc:
        app_options([line], "policy_opts", APP_POLICY_OPTIONS)
    assert exc.value.field == "policy_opts" and "not a finite number" in str(exc.value)


def _form(**changes: object) -> dict:
    """The Search form's values by field name (the search_layout fields), as the page sends them."""
    from ui.choices import ARITH, EMBEDDED
    from ui.tabs.search_layout import CONFIG_FIELDS

    config = SearchConfig().to_dict()
    return {
        **{k: config[k] for k in CONFIG_FIELDS},
        "budget": 4,
        "max_iterations": 6,
        "policy": EMBEDDED,
        "prm": EMBEDDED,
        "prm_kind": "detect",
        "policy_opts": "",
        "prm_opts": "",
        "dataset": ARITH,
        "problem": "arith-test-0",
        "free_question": "",
        "free_answer": "",
        **changes,
    }


@pytest.mark.parametrize(
    "box, value, said",
    [
        ("policy_opts", "temperature=nan", "temperature: 'nan' is not a finite number"),
        ("policy_opts", "top_p=inf", "top_p: 'inf' is not a finite number"),
        ("prm_opts", "system_prompt=-Infinity", "system_prompt: '-Infinity' is not a finite number"),
        (
            "policy_opts",
            "system_prompt=" + "x" * 20_001,
            "is 20,015 characters long; a run's model options hold at most 20,000",
        ),
        ("policy_opts", "system_prompt=" + "[" * 5_000 + "]" * 5_000, "system_prompt: give a plain value"),
    ],
    ids=["nan", "inf", "-Infinity", "long", "deep"],
)
def test_the_app_refuses_bad_options_before_a_run_row_is_written(box: str, value: str, said: str) -> None:
    """Issue 50, item 10: lower-case nan/inf and options over 20,000 characters were refused only by the worker,
    after the run's row was written (it became failed); 5,000 nested brackets raised a RecursionError. Now the
    Run button's own path (search_events.submit_run) refuses them, naming the box, and writes nothing."""
    from types import SimpleNamespace

    from testkit.doubles import WorkerPoolDouble
    from ui.choices import server_choices
    from ui.tabs.search_events import submit_run

    store = RunStore("sqlite://")
    pool = WorkerPoolDouble()
    with pytest.raises(ConfigError) as exc:
        submit_run(SimpleNamespace(store=store, pool=pool, choices=server_choices()), _form(**{box: value}))
    assert exc.value.field == box and said in str(exc.value)
    assert store.list_runs() == [] and pool.submitted == []


def test_both_option_boxes_together_stay_within_what_a_run_holds() -> None:
    from types import SimpleNamespace

    from testkit.doubles import WorkerPoolDouble
    from ui.choices import server_choices
    from ui.tabs.search_events import submit_run

    store = RunStore("sqlite://")
    form = _form(policy_opts="system_prompt=" + "p" * 12_000, prm_opts="system_prompt=" + "q" * 12_000)
    with pytest.raises(ConfigError, match=r"^policy_opts: with prm_opts, is 24,\d+ characters long as JSON"):
        submit_run(SimpleNamespace(store=store, pool=WorkerPoolDouble(), choices=server_choices()), form)
    assert store.list_runs() == []
