"""Pool jobs for the pool tests: a search checked as the app's Run button checks one (validate_request), and its run
row registered as the Run button registers it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from storage.store import RunStore
from uats_core.config import SearchConfig
from uats_core.problems import Problem
from uats_core.request import SearchRequest, validate_request
from ui.jobs.pool import RunRequest


def search_job(
    run_id: str, db: str, problem: Problem, config: SearchConfig | Mapping[str, Any], **request: Any
) -> RunRequest:
    """A RunRequest for `problem` under `config` (a SearchConfig or its dict); `request`: SearchRequest's model
    fields (policy, prm, prm_kind, policy_opts, prm_opts, world_problem)."""
    cfg = config if isinstance(config, SearchConfig) else SearchConfig.from_dict(dict(config))
    return RunRequest(run_id=run_id, db=db, search=validate_request(SearchRequest(problem, cfg, **request)))


def register_request(store: RunStore, req: RunRequest, paused: bool = False) -> None:
    req.register(store, paused=paused)
