"""One build path: prepare_search puts a search together the same way for the CLI, the app and the evaluation."""

from __future__ import annotations

import copy

import pytest

from uats_core.config import METHODS, UATS_METHODS, SearchConfig
from uats_core.errors import ConfigError, ProblemError
from uats_core.limits import ENV_MAX_BUDGET
from uats_core.methods import REGISTRY
from uats_core.problems import Problem, find_problem
from uats_core.runner import prepare_search
from tests.doubles import HashedPRMDouble, ScriptedPolicyDouble

PROBLEM = Problem("double-1", "What is 4 + 4?", "8")


def test_cached_parts_are_used_and_only_where_the_method_needs_them():
    models = (ScriptedPolicyDouble(depth=3), HashedPRMDouble(0))
    asked = []
    ctrl = lambda cfg: asked.append(("controller", cfg.method)) or "ctrl"  # noqa: E731
    emb = lambda: asked.append(("embedder",)) or "emb"  # noqa: E731
    for method in ("rebase", "h-uats"):
        s = prepare_search(SearchConfig(method=method, budget=4), models=models, controller=ctrl, embedder=emb)
        assert (s.policy, s.prm, s.controller, s.embedder) == (*models, None, None)
    s = prepare_search(SearchConfig(method="a-uats", budget=4), models=models, controller=ctrl, embedder=emb)
    assert s.controller == "ctrl" and s.embedder is None
    s = prepare_search(SearchConfig(method="dora", budget=4), models=models, controller=ctrl, embedder=emb)
    assert s.embedder == "emb" and s.controller is None
    assert asked == [("controller", "a-uats"), ("embedder",)]


def test_a_prepared_search_runs_and_a_bad_config_fails_before_anything_loads():
    s = prepare_search(SearchConfig(method="h-uats", budget=4, seed=1),
                       models=(ScriptedPolicyDouble(depth=3), HashedPRMDouble(1)))
    assert s.run(PROBLEM).status == "finished"
    with pytest.raises(ConfigError, match="^tau:"):
        prepare_search(SearchConfig(method="h-uats", tau="auto:2"), models=None)  # no load was attempted
    with pytest.raises(ConfigError, match="^budget: 1000000000 is above the maximum budget"):
        prepare_search(SearchConfig(budget=1_000_000_000), models=None)  # the limits, before any load


def test_validate_checks_the_fields_only_and_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_MAX_BUDGET, raising=False)
    for cfg in (SearchConfig(budget=1_000_000_000), SearchConfig(tau="0.01"), SearchConfig(tau="auto:0.5")):
        before = copy.deepcopy(cfg)
        assert cfg.validate() is cfg and cfg == before  # no limit checked here (prepare_search's), nothing rewritten
    assert SearchConfig(tau="0.01").tau == 0.01  # numbers handed over as text are numbers from the start
    with pytest.raises(ConfigError, match="^method: unknown method 'mcts'"):
        SearchConfig(method="mcts").validate()


def test_every_method_name_has_its_class():
    assert tuple(REGISTRY) == METHODS and all(REGISTRY[m].name == m for m in METHODS)
    assert set(UATS_METHODS) <= set(METHODS)


def test_one_problem_lookup_by_id_or_index():
    probs = [Problem(f"p{i}", f"q{i}", None) for i in range(3)]
    assert find_problem(probs, "p2", "x").id == "p2" and find_problem(probs, "1", "x").id == "p1"
    with pytest.raises(ProblemError, match=r"unknown problem 'p9': neither an id nor an index \(0\.\.2\) of x"):
        find_problem(probs, "p9", "x")
