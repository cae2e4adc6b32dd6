"""Case mining on stored runs: quadrants, step truth (exact in the arithmetic world, answers below for datasets)."""

from __future__ import annotations

import pytest

from storage import RunStore
from testkit.doubles import record, record_synthetic
from uats_core.events import IterationEnded, NodesUpdated, RunEnded, RunStarted
from uats_core.records import StepInfo
from uats_core.tree import FINISHED, KEPT, PRUNED, Node
from uats_core.worlds.arith import solutions, world
from ui.views.cases import QUADRANTS, StepJudge, cases_table, mine_cases, mine_run, quadrant_of
from ui.views.treedata import RunData


def test_quadrants() -> None:
    assert quadrant_of(0.9, 0.001, 0.003) == "high score / low variance"
    assert quadrant_of(0.9, 0.01, 0.003) == "high score / high variance"
    assert quadrant_of(0.2, 0.01, 0.003) == "low score / high variance"
    assert quadrant_of(0.2, 0.001, 0.003) == "low score / low variance"
    assert quadrant_of(0.5, 0.003, 0.003) == "high score / low variance"  # σ² = τ is in distribution


def _arith_run(store: RunStore, run_id: str = "arith") -> tuple[object, dict[int, Node]]:
    """A hand-made tree over a real arithmetic-world problem: one right and one wrong first step, each
    scored by 7 passes chosen to land in known quadrants."""
    prob = world.get_problem("arith-test-0")
    gold_steps, _ = solutions.solve(prob, "A")  # the world's own right solution, whatever the generator makes
    x, op, y, z = solutions.parse_step(gold_steps[0])
    right = Node(
        id=1,
        parent_id=0,
        depth=1,
        step=gold_steps[0] + "\n\n",
        created_iter=1,
        initial_passes=7,
        mc_scores=[0.2, 0.9, 0.5, 0.95, 0.3, 0.85, 0.6],
        status=KEPT,
        children_granted=1,
    )
    wrong = Node(
        id=2,
        parent_id=0,
        depth=1,
        step=solutions.format_step(x, op, y, z + 1, "A") + "\n\n",
        created_iter=1,
        initial_passes=7,
        mc_scores=[0.97, 0.96, 0.98, 0.97, 0.96, 0.97, 0.98],
        status=PRUNED,
    )
    last = Node(
        id=3,
        parent_id=1,
        depth=2,
        step=f"The answer is \\boxed{{{prob.answer}}}",
        created_iter=2,
        initial_passes=7,
        mc_scores=[0.1, 0.12, 0.11, 0.1, 0.12, 0.11, 0.1],
        status=FINISHED,
        answer=prob.answer,
        correct=True,
    )
    nodes = {n.id: n for n in (right, wrong, last)}
    for n in nodes.values():
        k = len(n.mc_scores)
        n.mean = sum(n.mc_scores) / k
        n.var = sum((x - n.mean) ** 2 for x in n.mc_scores) / (k - 1)
        n.ood = n.var > 0.003
    record(
        store,
        [
            RunStarted(
                run_id=run_id,
                method="h-uats",
                problem_id=prob.id,
                question=prob.question,
                gold_answer=prob.answer,
                seed=0,
                config={"tau": 0.003},
                policy="p",
                prm="q",
            ),
            NodesUpdated(1, [right.record(), wrong.record()]),
            IterationEnded(1, [], StepInfo(width=1), 1.0, 1.0),
            NodesUpdated(2, [last.record()]),
            IterationEnded(2, [], StepInfo(width=1), 1.0, 2.0),
            RunEnded(status="finished", answer=prob.answer, correct=True, cost=2.0, iterations=2),
        ],
    )
    return prob, nodes


def test_mining_an_arith_run_uses_the_exact_checker() -> None:
    store = RunStore("sqlite://")
    _arith_run(store)
    cases = {c.node_id: c for c in mine_run(RunData.load(store, "arith"))}
    assert cases[1].quadrant == "high score / high variance" and cases[1].step_correct is True
    assert cases[2].quadrant == "high score / low variance" and cases[2].step_correct is False
    assert cases[2].surprising  # a confident PRM on a wrong step
    assert cases[3].quadrant == "low score / low variance" and cases[3].step_correct is True
    assert {c.truth_source for c in cases.values()} == {"exact"}
    pools = mine_cases(store, per_quadrant=5)
    assert [c.node_id for c in pools["high score / low variance"]] == [2]
    assert pools["low score / high variance"] == []
    rows = cases_table(pools)
    assert [r[0] for r in rows] == [
        "high score / low variance",
        "high score / high variance",
        "low score / low variance",
    ]
    assert rows[0][6] == "WRONG"


def test_dataset_truth_is_any_correct_answer_below() -> None:
    store = RunStore("sqlite://")
    record_synthetic(store, "ds", n_nodes=250, seed=4, problem_id="math500-17")
    state = RunData.load(store, "ds").state_at(None)
    judge = StepJudge(state)
    assert judge.source == "answers below"
    for nid in state.nodes:
        if nid == 0:
            continue
        below = [state.nodes[i] for i in state.subtree(nid) if state.nodes[i]["status"] == "finished"]
        want = None if not below else any(n["correct"] for n in below)
        assert judge(nid) is want, nid
    pools = mine_cases(store, ["ds"], per_quadrant=4)
    assert set(pools) == set(QUADRANTS)
    for q, cases in pools.items():
        assert len(cases) <= 4
        assert all(c.quadrant == q for c in cases)
        # surprising cases (PRM and truth disagree) come first, then by strength
        flags = [c.surprising for c in cases]
        assert flags == sorted(flags, reverse=True)


def test_arith_id_with_a_different_question_is_not_trusted() -> None:
    store = RunStore("sqlite://")
    record_synthetic(store, "fake", n_nodes=40, seed=1, problem_id="arith-test-0", question="What is 12 + 30?")
    judge = StepJudge(RunData.load(store, "fake").state_at(None))
    assert judge.problem is None and judge.source == "answers below"


@pytest.mark.parametrize("split", [0.3, 0.5, 0.8])
def test_every_scored_node_lands_in_exactly_one_quadrant(split: float) -> None:
    store = RunStore("sqlite://")
    record_synthetic(store, "q", n_nodes=150, seed=9)
    data = RunData.load(store, "q")
    cases = mine_run(data, score_split=split)
    scored = [i for i, n in data.nodes.items() if i != 0 and len(n["mc_scores"]) >= 2]
    assert sorted(c.node_id for c in cases) == sorted(scored)
    for c in cases:
        assert c.quadrant.startswith("high") == (c.mean >= split)
        assert ("high variance" in c.quadrant) == (c.var > c.tau)
