"""The case finder's counterfactual (ui/views/counterfactual.py): an H-UATS search beside the same search with
uncertainty switched off (prm_scoring='off'), both on per-iteration streams (step_streams), on the embedded
arithmetic world. The two draw the same steps for the same prompts, so they decide alike until uncertainty decides
otherwise; the finder lists the pairs whose answers differ, with the direction."""

from __future__ import annotations

from collections import Counter

import pytest

from storage import RunStore
from testkit.run_pairs import needs_models
from uats_core.config import SearchConfig
from uats_core.runner import build_backends, run_search
from uats_core.worlds.arith import world
from ui.views.counterfactual import (
    RIGHT_TO_WRONG,
    WRONG_TO_RIGHT,
    counterfactual_config,
    direction,
    factual_config,
    find_cases,
    found_summary,
    parting,
)
from ui.views.treedata import RunData

pytestmark = needs_models


@pytest.fixture(scope="module")
def runs() -> tuple[RunStore, dict[str, str]]:
    """Problem arith-test-1, N = 8, seed 0: the run, its counterfactual, and the run again (a replay)."""
    store = RunStore("sqlite://")
    base = SearchConfig(method="h-uats", budget=8, seed=0, max_iterations=8, tau=0.0005).validate()
    policy, prm = build_backends(None, None, base)
    ids = {}
    for name, cfg in (
        ("run", factual_config(base)),
        ("counter", counterfactual_config(base)),
        ("again", factual_config(base)),
    ):
        ids[name] = run_search(
            world.get_problem("arith-test-1"), cfg.validate(), policy, prm, subscribers=[store.subscriber()]
        ).run_id
    return store, ids


def _children_texts(data: RunData, t: int) -> Counter:
    state = data.state_at(None)
    return Counter(state.prefix_key(i) for i, n in state.nodes.items() if i and int(n.get("created_iter") or 0) == t)


def test_the_counterfactual_scores_once_and_never_gates(runs: tuple[RunStore, dict[str, str]]) -> None:
    store, ids = runs
    counter = RunData.load(store, ids["counter"])
    nodes = [n for i, n in counter.state_at(None).nodes.items() if i]
    assert nodes and all(n.get("k") in (None, 1) for n in nodes)  # one pass a node
    assert not any(n.get("ood") for n in nodes)  # the gate never opened
    run = RunData.load(store, ids["run"])
    assert any((n.get("k") or 0) > 1 for i, n in run.state_at(None).nodes.items() if i)  # H-UATS's K0 passes


def test_the_two_draw_the_same_steps_until_their_decisions_part(runs: tuple[RunStore, dict[str, str]]) -> None:
    store, ids = runs
    run, counter = RunData.load(store, ids["run"]), RunData.load(store, ids["counter"])
    again = RunData.load(store, ids["again"])
    assert parting(run, again) is None  # a replay decides alike throughout: the streams are the run's own
    assert _children_texts(run, 1) == _children_texts(counter, 1)  # the same first width, the same stream
    part = parting(run, counter)
    # iteration t decides on t−1's candidates, then draws the children it made: alike until the parting
    last_alike = run.max_iteration if part is None else part.iteration - 1
    assert last_alike >= 1
    for t in range(1, last_alike + 1):  # children of decisions made alike are the same steps
        assert _children_texts(run, t) == _children_texts(counter, t), t


def test_the_finder_lists_pairs_whose_answers_differ_with_their_direction(
    runs: tuple[RunStore, dict[str, str]],
) -> None:
    store, ids = runs
    found = find_cases(store)
    assert found.pairs == 1  # the replay is the newest run of the pair key: the run and its counterfactual pair up
    run, counter = store.get_run(ids["again"]), store.get_run(ids["counter"])
    differ = (run.get("answer") or "").strip() != (counter.get("answer") or "").strip()
    assert len(found.cases) == int(differ)
    assert sum(found.by_direction.values()) == int(differ)
    assert found_summary(found).startswith(f"uncertainty changed the answer in {int(differ)} of 1 pair(s)")


def test_the_direction_reads_the_graded_answers() -> None:
    right = {"status": "finished", "correct": True}
    wrong = {"status": "finished", "correct": False}
    assert direction(right, wrong) == WRONG_TO_RIGHT and direction(wrong, right) == RIGHT_TO_WRONG
