"""One build path: prepare_search puts a checked search together the same way for the CLI, the app and the
evaluation, loading only what the method says it needs."""

from __future__ import annotations

import copy

import pytest

from testkit.doubles import DOUBLES_PROBLEM, HashedPRMDouble, ScriptedPolicyDouble
from uats_core.config import SearchConfig
from uats_core.errors import ConfigError, ProblemError
from uats_core.limits import ENV_MAX_BUDGET
from uats_core.methods import REGISTRY, method_names, uncertainty_methods
from uats_core.problems import Problem, find_problem
from uats_core.request import SearchRequest, check_config, validate_request
from uats_core.runner import prepare_search


def _checked(**config: object):
    return validate_request(SearchRequest(DOUBLES_PROBLEM, SearchConfig(**config)))  # type: ignore[arg-type]


def test_cached_parts_are_used_and_only_where_the_method_needs_them():
    models = (ScriptedPolicyDouble(depth=3), HashedPRMDouble(0))
    asked = []
    ctrl = lambda cfg: asked.append(("controller", cfg.method)) or "ctrl"  # noqa: E731
    emb = lambda: asked.append(("embedder",)) or "emb"  # noqa: E731
    for method in ("rebase", "h-uats"):
        s = prepare_search(_checked(method=method, budget=4), models=models, controller=ctrl, embedder=emb)
        assert (s.policy, s.prm, s.controller, s.embedder) == (*models, None, None)
    s = prepare_search(_checked(method="a-uats", budget=4), models=models, controller=ctrl, embedder=emb)
    assert s.controller == "ctrl" and s.embedder is None
    s = prepare_search(_checked(method="dora", budget=4), models=models, controller=ctrl, embedder=emb)
    assert s.embedder == "emb" and s.controller is None
    assert asked == [("controller", "a-uats"), ("embedder",)]


def test_a_prepared_search_runs_and_a_bad_request_fails_before_anything_loads():
    s = prepare_search(
        _checked(method="h-uats", budget=4, seed=1), models=(ScriptedPolicyDouble(depth=3), HashedPRMDouble(1))
    )
    assert s.run().status == "finished"
    with pytest.raises(ConfigError, match="^tau:"):
        _checked(method="h-uats", tau="auto:2")  # no load was attempted: there is nothing to prepare
    with pytest.raises(ConfigError, match="^budget: 1000000000 is above the maximum budget"):
        _checked(budget=1_000_000_000)  # the limits, before any load


def test_validate_checks_the_fields_only_and_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_MAX_BUDGET, raising=False)
    for cfg in (SearchConfig(budget=1_000_000_000), SearchConfig(tau="0.01"), SearchConfig(tau="auto:0.5")):
        before = copy.deepcopy(cfg)
        assert cfg.validate() is cfg and cfg == before  # no limit checked here (validate_request's), nothing rewritten
    assert SearchConfig(tau="0.01").tau == 0.01  # numbers handed over as text are numbers from the start
    with pytest.raises(ConfigError, match="^method: unknown method 'mcts'"):
        check_config(SearchConfig(method="mcts"))


def test_every_method_name_has_its_class():
    assert method_names() == tuple(REGISTRY) and all(REGISTRY[m].name == m for m in method_names())
    assert uncertainty_methods() == ("h-uats", "a-uats")


def test_one_problem_lookup_by_id_or_index():
    probs = [Problem(f"p{i}", f"q{i}", None) for i in range(3)]
    assert find_problem(probs, "p2", "x").id == "p2" and find_problem(probs, "1", "x").id == "p1"
    with pytest.raises(ProblemError, match=r"unknown problem 'p9': neither an id nor an index \(0\.\.2\) of x"):
        find_problem(probs, "p9", "x")
