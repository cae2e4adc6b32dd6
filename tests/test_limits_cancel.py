"""Limits checked before a search starts, and a cancel that lands inside an iteration (real tiny models)."""

from __future__ import annotations

from typing import Any

import pytest

from storage import RunStore
from uats_core.cancel import CancelCheck, SearchCancelled, cancellable, checkpoint
from uats_core.config import SearchConfig
from uats_core.errors import ConfigError, ProblemError
from uats_core.limits import (
    ENV_MAX_BUDGET,
    Limits,
    check_limits,
    check_prompt_fits,
    check_shadow,
    estimate_run,
    set_max_budget,
)
from uats_core.problems import Problem
from uats_core.protocols import Trace

LONG = "1+" * 2100 + "1?"  # 4,202 characters: more tokens than the tiny models' 4,096 positions


def test_the_maximum_budget_is_checked_and_configurable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_MAX_BUDGET, raising=False)
    with pytest.raises(ConfigError, match=r"^budget: 1000000000 is above the maximum budget 1024") as exc:
        check_limits(SearchConfig(budget=1_000_000_000))
    assert exc.value.field == "budget"
    set_max_budget(4096)
    assert (
        check_limits(SearchConfig(budget=2048, max_iterations=2)).nodes == 1 + 2162 * 2
    )  # ⌈2048 × (1 + 1/18)⌉ per step
    monkeypatch.setenv(ENV_MAX_BUDGET, "zero")
    with pytest.raises(ConfigError, match="max_budget"):
        check_limits(SearchConfig())
    with pytest.raises(ConfigError, match="max_budget"):
        set_max_budget(0)


def test_the_node_and_memory_estimate_refuses_a_run_that_would_not_fit() -> None:
    est = estimate_run(SearchConfig(budget=16, max_iterations=40, cost_ratio=18.0))
    assert est.nodes == 1 + 17 * 40 and 0 < est.memory_mb < 20  # 16 × (1 + 1/18) rounds up to 17 per step
    with pytest.raises(ConfigError, match=r"^max_iterations: .*about 1,056,001 nodes"):
        check_limits(SearchConfig(budget=1000, max_iterations=1000), Limits(max_budget=4096))
    with pytest.raises(ConfigError, match="MB"):
        check_limits(SearchConfig(budget=64, max_iterations=40), Limits(max_memory_mb=1))
    assert check_limits(SearchConfig(budget=16)).nodes == est.nodes


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    from uats_core.backends import load_policy, load_prm
    from uats_core.backends.tiny import save_causal_lm, save_token_cls_prm

    d = tmp_path_factory.mktemp("tiny")
    pol = save_causal_lm(d / "policy", hidden=32, layers=2, heads=2, kv_heads=1)  # a 4096-token context
    prm = save_token_cls_prm(d / "prm", layers=2, hidden=32, heads=2, kv_heads=1)
    return load_policy(str(pol), seed=0, step_token_cap=8, solution_token_cap=32), load_prm(str(prm))


def test_a_question_longer_than_the_context_is_refused(tiny: tuple[Any, Any]) -> None:
    policy, prm = tiny
    check_prompt_fits("What is 2 + 3?", policy, prm)
    with pytest.raises(ProblemError, match=r"^problem: the question takes .* tokens of the policy's context of 4096"):
        check_prompt_fits(LONG, policy, prm)
    with pytest.raises(ProblemError, match=r"^problem: the question is 1,000,000 characters"):
        check_prompt_fits("x" * 1_000_000, policy, prm)  # refused before tokenizing a megabyte


def test_run_search_refuses_a_long_question_before_logging_a_run(tiny: tuple[Any, Any]) -> None:
    from uats_core.runner import run_search

    store = RunStore("sqlite://")
    problem = Problem(id="long", question=LONG, answer="2101")
    with pytest.raises(ProblemError):
        run_search(problem, SearchConfig(budget=2, max_iterations=1), *tiny, subscribers=[store.subscriber()])
    assert store.list_runs() == []


def test_the_policy_stops_generating_at_a_cancel(tiny: tuple[Any, Any]) -> None:
    policy, _ = tiny
    asked = []
    with cancellable(lambda: asked.append(1) or True), pytest.raises(SearchCancelled, match="while generating"):
        policy.generate_steps([Trace("What is 2 + 3?")] * 3)
    assert asked  # polled from inside generate()
    assert len(policy.generate_steps([Trace("What is 2 + 3?")])) == 1  # no cancel outside the block


def test_the_prm_stops_between_batches_at_a_cancel(tiny: tuple[Any, Any]) -> None:
    _, prm = tiny
    traces = [Trace("What is 2 + 3?", ("2 + 3 = 5\n\n",))] * 2
    with cancellable(lambda: True), pytest.raises(SearchCancelled, match="while scoring"):
        prm.mc_scores(traces, 4)
    assert prm.mc_scores(traces, 4).shape == (2, 4)


def test_a_cancel_inside_the_first_iteration_ends_the_run_cancelled(tiny: tuple[Any, Any]) -> None:
    """The iteration-boundary check never fires here; only the check points inside the iteration can stop it."""
    from uats_core.runner import run_search

    store = RunStore("sqlite://")
    problem = Problem(id="p", question="What is 2 + 3?", answer="5")
    res = run_search(
        problem,
        SearchConfig(method="h-uats", budget=4, max_iterations=3),
        *tiny,
        subscribers=[store.subscriber()],
        should_cancel=lambda: False,
        cancel_requested=lambda: True,
    )
    assert res.status == "cancelled" and res.iterations == 0 and "cancelled" in (res.error or "")
    run = store.get_run(res.run_id)
    assert run["status"] == "cancelled" and run["iterations"] == 0


def test_cancel_checks_are_throttled_and_stick() -> None:
    calls = []
    check = CancelCheck(lambda: calls.append(1) or len(calls) >= 2, interval_s=3600)
    assert check() is False and check() is False and len(calls) == 1  # the second poll waits for the interval
    check = CancelCheck(lambda: calls.append(1) or True, interval_s=0)
    assert check() and check()
    checkpoint("outside any search")  # no check installed: nothing happens


def test_k0_and_the_passes_a_node_or_run_can_take_are_bounded() -> None:
    """k0=19000 at budget 1024 was accepted (377 KB of passes on one node, ~50 s an iteration)."""
    with pytest.raises(ConfigError, match=r"^k0: 19,000 is above the maximum of 8,192 passes per node"):
        check_limits(SearchConfig(budget=1024, k0=19000))
    est = estimate_run(SearchConfig(budget=16, max_iterations=40, cost_ratio=18.0, k0=7, reeval_share=0.1))
    assert est.passes == 16 * 19 * 40  # N(c+1) a step, every method
    assert est.node_passes == 7 + int(0.1 * 304 + 25)  # K0 + β(ρN(c+1) + c + K0), β = 1 for H-UATS
    assert estimate_run(SearchConfig(method="rebase", budget=16)).node_passes == 1
    a_uats = estimate_run(SearchConfig(method="a-uats", budget=16, k0=7))
    assert a_uats.node_passes == 7 + int(3.0 * (0.1 * 304 + 25))  # the controller's β ceiling
    with pytest.raises(ConfigError, match=r"^reeval_share: K0 7 plus one step's re-evaluation could give a node 1,977"):
        check_limits(SearchConfig(budget=1024), Limits(max_node_passes=1000))
    with pytest.raises(ConfigError, match=r"^max_iterations: .* could spend 778,240 PRM passes"):
        check_limits(SearchConfig(budget=1024), Limits(max_passes=500_000))
    assert check_limits(SearchConfig(budget=1024, method="a-uats")).passes == 778_240  # the default cap allows it
    with pytest.raises(ConfigError, match=r"^shadow_k: 1,000,000 is above the maximum"):
        check_shadow(1_000_000, 160)
    with pytest.raises(ConfigError, match=r"^shadow_k: 8,000 passes × 200 candidates"):
        check_shadow(8000, 200)
    assert check_shadow(7, 160) == 7 * 160


def test_the_prm_stops_between_pass_groups_of_one_node(tiny: tuple[Any, Any]) -> None:
    """One node with many passes is one chunk of many pass groups: a cancel asked once scoring has begun
    must stop it before the remaining groups, not after all of them (Cancel took ~20 s at k0=19000)."""
    _, prm = tiny
    engine = prm.engine
    groups: list[int] = []
    real = engine._noisy_group
    engine._noisy_group = lambda *a: groups.append(a[5]) or real(*a)  # count the pass groups that ran
    saved = engine.max_batch_tokens
    engine.max_batch_tokens = 64  # groups of a few passes: the cancel has many groups to cut short
    polls: list[int] = []
    try:
        # no to the first two polls (before the chunk, before its first pass group), yes from then on
        with (
            cancellable(lambda: polls.append(1) or len(polls) > 2, interval_s=0),
            pytest.raises(SearchCancelled, match="while scoring"),
        ):
            prm.mc_scores([Trace("What is 2 + 3?", ("2 + 3 = 5\n\n",))], 64)
        assert len(groups) == 1 and groups[0] < 64  # one group ran; the cancel stopped the rest
    finally:
        engine._noisy_group = real
        engine.max_batch_tokens = saved
