"""Issue 42, item 8: a run started in the app records the policy and PRM options its worker loaded the models
with (runs.model_options), as the command line's does (tests/test_cli_guard.py); NaN and infinity never get
that far (ui.choices.app_options refuses them, by field)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from storage import RunStore
from uats_core.config import ConfigError, SearchConfig
from ui.choices import APP_POLICY_OPTIONS, ARITH, app_options
from ui.jobs.warm import ModelCache, execute
from ui.tabs.run_form import dataset_problems
from tests.pool_requests import search_job


def test_the_apps_worker_records_the_options_of_its_run(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path / "runs.db"))
    try:
        prob = dataset_problems(ARITH)[0]
        config = SearchConfig(budget=4, max_iterations=1).to_dict()
        req = search_job(uuid.uuid4().hex, store.location, prob, config, policy_opts={"temperature": 0.5, "top_p": 0.9})
        store.register_run(req.run_id, method=config["method"], problem_id=prob.id, question=prob.question,
                           config=config)
        assert execute(req, ModelCache(), store) is None
        run = store.get_run(req.run_id)
        assert run["status"] == "finished"
        assert run["model_options"] == {"policy_opts": {"temperature": 0.5, "top_p": 0.9}, "prm_opts": {},
                                        "prm_kind": None}
    finally:
        store.close()


@pytest.mark.parametrize("line", ["temperature=NaN", "top_p=Infinity", "temperature=-Infinity"])
def test_the_app_refuses_non_finite_options_by_field(line: str) -> None:
    with pytest.raises(ConfigError) as exc:
        app_options([line], "policy_opts", APP_POLICY_OPTIONS)
    assert exc.value.field == "policy_opts" and "not a finite number" in str(exc.value)
