"""The child-allocation option for OOD candidates (R̂ or R̄ + κσ instead of R̄): the rule by hand, and in a
search: the scores it records are the ones the children follow, and ID candidates never change."""

from __future__ import annotations

import math

import pytest

from testkit.doubles import HashedPRMDouble, ScriptedPolicyDouble
from uats_core.allocation import child_scores, largest_remainder, softmax
from uats_core.config import SearchConfig
from uats_core.errors import ConfigError
from uats_core.events import IterationEnded
from uats_core.problems import Problem
from uats_core.request import check_config
from uats_core.runner import run_search


def test_child_scores_by_hand():
    means, ucbs, var, ood = [0.8, 0.3, 0.5], [0.9, 0.6, 0.55], [0.0001, 0.04, 0.01], [False, True, True]
    assert child_scores(means, ucbs, var, ood, "mean") == [0.8, 0.3, 0.5]
    assert child_scores(means, ucbs, var, ood, "ucb-ood") == [0.8, 0.6, 0.55]
    got = child_scores(means, ucbs, var, ood, "sigma-ood", sigma_weight=2.0)
    assert got == pytest.approx([0.8, 0.3 + 2 * 0.2, 0.5 + 2 * 0.1])
    assert child_scores(means, ucbs, [None, None, None], ood, "sigma-ood") == [0.8, 0.3, 0.5]
    with pytest.raises(ValueError):
        child_scores(means, ucbs, var, ood, "best")


def test_an_ood_step_gains_children_only_under_the_option():
    # a low-R̄ OOD step beside a confident ID step: the paper's rule starves it, R̂ keeps it alive
    means, ucbs, var, ood = [0.8, 0.55], [0.85, 0.95], [0.0001, 0.02], [False, True]
    paper = largest_remainder(softmax(child_scores(means, ucbs, var, ood, "mean"), 0.2), 8)
    option = largest_remainder(softmax(child_scores(means, ucbs, var, ood, "ucb-ood"), 0.2), 8)
    assert paper[1] < option[1] and sum(paper) == sum(option) == 8


@pytest.mark.parametrize("rule", ["mean", "ucb-ood", "sigma-ood"])
def test_search_children_follow_the_recorded_child_scores(rule):
    cfg = SearchConfig(method="h-uats", budget=16, seed=4, child_score=rule, child_sigma_weight=1.5)
    events = []
    run_search(
        Problem("d", "What is 4 + 4?", "8"),
        cfg,
        ScriptedPolicyDouble(depth=4),
        HashedPRMDouble(4),
        subscribers=[events.append],
    )
    steps = [e for e in events if isinstance(e, IterationEnded) and e.decisions]
    assert steps
    saw_ood = False
    for e in steps:
        ds = e.decisions
        for d in ds:
            if not d.ood:
                expected = d.mean
            elif rule == "ucb-ood":
                expected = d.ucb
            elif rule == "sigma-ood":
                expected = d.mean + 1.5 * math.sqrt(d.var)
            else:
                expected = d.mean
            saw_ood |= bool(d.ood)
            assert d.child_score == pytest.approx(expected)
        counts = largest_remainder(softmax([d.child_score for d in ds], cfg.nu2), e.step_info.width)
        assert [d.children for d in ds] == counts
    assert saw_ood  # the rule had OOD candidates to act on


@pytest.mark.parametrize(
    "bad,field",
    [
        (dict(child_score="ucb"), "child_score"),
        (dict(child_sigma_weight=-1.0), "child_sigma_weight"),
        (dict(method="a-uats", uncertainty_space="logit"), "uncertainty_space"),
        (dict(method="a-uats", uncertainty="std"), "uncertainty_space"),
    ],
)
def test_bad_child_score_options_name_the_field(bad, field):
    with pytest.raises(ConfigError) as err:
        check_config(SearchConfig(**bad))
    assert err.value.field == field
