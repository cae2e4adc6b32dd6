"""Where two runs first decided differently: two runs whose answers differ always diverge somewhere, and the
words say what differed, with the node ids of both runs. Checked on hand-made trees whose every step is known,
on many searches of the test doubles (policy and PRM in a few lines), and on the pair the issue found saying
"decisions never diverged" with different answers (H-UATS vs REBASE, arith-test-0, N = 16, seed 0)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from storage import RunStore
from testkit.doubles import HashedPRMDouble, ScriptedPolicyDouble
from uats_core.config import SearchConfig
from uats_core.problems import Problem
from uats_core.runner import DEFAULT_PRM, build_backends, run_search
from uats_core.worlds.arith import world
from ui.views.divergence import DECISION, PRUNED, UNSAMPLED, VOTE, decision_divergence, divergence_text
from ui.views.treedata import RunData

needs_models = pytest.mark.skipif(not (DEFAULT_PRM / "config.json").is_file(), reason="embedded models missing")

Tree = Sequence[tuple[int, int, str, str | None]]  # (node id, parent id, step, answer of a final step or None)


def _run(run_id: str, tree: Tree, decided: dict[int, list[tuple[int, int]]], answer: str | None) -> RunData:
    """A stored run built by hand: a node at depth d was sampled at iteration d; `decided` maps an iteration to
    the (node id, children) it decided; a node with an answer is a finished solution."""
    depth = {0: 0}
    nodes = []
    for nid, parent, step, ans in tree:
        depth[nid] = depth[parent] + 1
        nodes.append(
            {
                "id": nid,
                "parent_id": parent,
                "depth": depth[nid],
                "step": step,
                "created_iter": depth[nid],
                "mc_scores": [0.5],
                "mean": 0.5,
                "answer": ans,
                "status": "finished" if ans is not None else "kept",
            }
        )
    last = max(depth.values()) + 1
    iterations = [
        {"iteration": t, "decisions": [{"node_id": n, "children": c} for n, c in decided.get(t, [])]}
        for t in range(1, last + 1)
    ]
    run = {
        "run_id": run_id,
        "method": "h-uats",
        "question": "q",
        "status": "finished",
        "iterations": last,
        "answer": answer,
        "config": {"method": "h-uats"},
    }
    data = RunData(run, nodes, iterations=iterations)
    data.history_skipped = True  # no per-iteration snapshots: the nodes as written
    return data


def test_a_step_the_other_run_never_sampled_is_where_they_part() -> None:
    """Both expand "s1"; then A's answer goes on through "s2a", which B never drew (B drew "s2b"). The old rule
    compared only steps both runs decided, found "s1" decided alike and said the decisions never diverged."""
    a = _run("a" * 32, [(1, 0, "s1", None), (2, 1, "s2a", None), (3, 2, "so 5", "5")], {2: [(1, 1)], 3: [(2, 1)]}, "5")
    b = _run("b" * 32, [(1, 0, "s1", None), (2, 1, "s2b", None), (3, 2, "so 6", "6")], {2: [(1, 1)], 3: [(2, 1)]}, "6")
    div = decision_divergence(a, b)
    assert (div.kind, div.side, div.depth, div.node_a, div.node_b, div.parent_b) == (UNSAMPLED, "a", 2, 2, None, 1)
    assert div.iteration == 2 and div.shared == 1
    assert divergence_text(div) == (
        "no step both runs had was decided differently (1 were decided alike); the runs part on the way to A's "
        "answer 5, at depth 2: A sampled the step “s2a” (node 2) at iteration 2; B never sampled it under its "
        "node 1, which holds the same first step (it drew other steps there)"
    )


def test_a_shared_step_the_other_run_left_without_children() -> None:
    """B sampled A's second step too (node 2) but ended before deciding it: no iteration holds a decision of
    both runs on it, yet on A's path it is where B stopped following."""
    a = _run("a" * 32, [(1, 0, "s1", None), (2, 1, "s2", None), (3, 2, "so 5", "5")], {2: [(1, 1)], 3: [(2, 1)]}, "5")
    b = _run(
        "b" * 32,
        [(1, 0, "s1", None), (2, 1, "s2", None), (4, 1, "s2x", None), (5, 4, "so 6", "6")],
        {2: [(1, 2)], 3: [(4, 1)]},
        "6",
    )
    div = decision_divergence(a, b)
    assert (div.kind, div.side, div.depth, div.node_a, div.node_b) == (PRUNED, "a", 2, 2, 2)
    assert (div.children_a, div.children_b, div.iteration) == (1, 0, 3)
    assert divergence_text(div).endswith(
        "the step “s2” got 1 child in A (node 2) and none in B (node 2), at iteration 3"
    )


def test_the_same_path_with_another_vote() -> None:
    """B kept A's whole path, its final step included (node 2), but its vote chose another answer."""
    a = _run("a" * 32, [(1, 0, "s1", None), (2, 1, "so 5", "5")], {2: [(1, 1)]}, "5")
    b = _run(
        "b" * 32,
        [(1, 0, "s1", None), (2, 1, "so 5", "5"), (3, 1, "so 6", "6"), (4, 1, "then 6", "6")],
        {2: [(1, 3)]},
        "6",
    )
    div = decision_divergence(a, b)
    assert (div.kind, div.side, div.node_a, div.node_b) == (VOTE, "a", 2, 2)
    assert divergence_text(div).endswith(
        "B kept that whole path down to its final step “so 5” (A node 2, B node 2), but B's vote chose answer 6"
    )


def test_a_shared_decision_comes_first_and_agreeing_runs_never_diverge() -> None:
    a = _run("a" * 32, [(1, 0, "s1", None), (2, 0, "t1", None), (3, 1, "so 5", "5")], {2: [(1, 1), (2, 0)]}, "5")
    b = _run("b" * 32, [(1, 0, "s1", None), (2, 0, "t1", None), (3, 2, "so 6", "6")], {2: [(1, 0), (2, 1)]}, "6")
    div = decision_divergence(a, b)
    assert (div.kind, div.iteration, div.node_a, div.node_b, div.children_a, div.children_b) == (
        DECISION,
        2,
        1,
        1,
        1,
        0,
    )
    same = decision_divergence(a, _run("c" * 32, [(1, 0, "s1", None), (3, 1, "so 5", "5")], {2: [(1, 1)]}, "5"))
    assert (
        same.kind is None and "never diverged" in divergence_text(same) and "answered the same" in divergence_text(same)
    )


def _assert_diverges(a: RunData, b: RunData) -> None:
    """A pair with different answers: a divergence, at an iteration, naming a node of each run (or, for a step
    one run never sampled, its node holding the steps before it)."""
    div = decision_divergence(a, b)
    text = divergence_text(div)
    assert div.kind is not None and div.iteration is not None, (a.run["answer"], b.run["answer"], text)
    own = div.node_a if div.side != "b" else div.node_b
    other = (div.node_b if div.side != "b" else div.node_a) or (div.parent_b if div.side == "a" else div.parent_a)
    assert f"node {own}" in text and (other == 0 or f"node {other}" in text), text


def test_runs_that_answer_differently_always_diverge() -> None:
    """H-UATS and REBASE over many seeds of the test doubles: every pair whose answers differ diverges."""
    policy, prm = ScriptedPolicyDouble(depth=4, answers=("7", "8", "9", "10")), HashedPRMDouble(0)
    store = RunStore("sqlite://")
    differ = 0
    for seed in range(12):
        problem = Problem(id=f"double-{seed}", question=f"question {seed}", answer="7")
        ids = [
            run_search(
                problem,
                SearchConfig(method=m, budget=8, seed=seed, tau=0.002).validate(),
                policy,
                prm,
                subscribers=[store.subscriber()],
            ).run_id
            for m in ("h-uats", "rebase")
        ]
        a, b = (RunData.load(store, i) for i in ids)
        if a.run["answer"] != b.run["answer"]:
            differ += 1
            _assert_diverges(a, b)
    assert differ >= 3  # the doubles' answers vary: there was something to check


@needs_models
def test_the_issues_pair_says_where_it_diverges() -> None:
    """arith-test-0, N = 16, seed 0, the form's defaults: H-UATS answers 32, REBASE 4, and no step both runs
    decided got children in one and none in the other (the old summary: "decisions never diverged")."""
    store = RunStore("sqlite://")
    models: Any = None
    ids = []
    for method in ("h-uats", "rebase"):
        cfg = SearchConfig(method=method, budget=16, seed=0).validate()
        models = models or build_backends(None, None, cfg)
        ids.append(run_search(world.get_problem("arith-test-0"), cfg, *models, subscribers=[store.subscriber()]).run_id)
    a, b = (RunData.load(store, i) for i in ids)
    assert a.run["answer"] != b.run["answer"]
    _assert_diverges(a, b)
