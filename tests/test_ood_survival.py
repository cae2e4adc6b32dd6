"""ood_survival reads a run log back into the counts the search itself decided (checked against the events)."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage import RunStore
from uats.eval.ood_survival import format_table, main, ood_survival
from uats_core.config import SearchConfig
from uats_core.events import IterationEnded
from uats_core.runner import DEFAULT_PRM, build_backends, run_search
from uats_core.worlds.arith import solutions, world

POLICY_B = DEFAULT_PRM.parent / "arith-policy-b"


@pytest.mark.skipif(
    not (DEFAULT_PRM / "config.json").is_file() or not POLICY_B.is_dir(), reason="embedded models missing"
)
def test_counts_match_the_searchs_own_decisions(tmp_path: Path, capsys) -> None:
    db = tmp_path / "runs.db"
    store = RunStore(str(db))
    cfg = SearchConfig(
        method="h-uats", budget=4, seed=0, tau=0.0005, child_score="ucb-ood", max_iterations=5
    ).validate()
    policy, prm = build_backends(str(POLICY_B), None, cfg)
    expected = {"right_reevaluated": [0, 0], "right_not": [0, 0], "wrong_reevaluated": [0, 0], "wrong_not": [0, 0]}
    for pid in ("arith-test-0",):
        events = []
        problem = world.get_problem(pid)
        result = run_search(problem, cfg, policy, prm, subscribers=[store.subscriber(), events.append])
        for e in events:
            if not isinstance(e, IterationEnded):
                continue
            for d in e.decisions:
                if d.ood:
                    steps = [n.step for n in result.tree.path(d.node_id)]
                    right = solutions.step_correct(problem, steps[:-1], steps[-1])
                    kind = ("right" if right else "wrong") + ("_reevaluated" if d.extra_passes else "_not")
                    expected[kind][0] += d.children > 0
                    expected[kind][1] += 1
    groups = ood_survival(store)
    assert len(groups) == 1
    ((key, got),) = groups.items()
    assert key[0] == "ucb-ood" and got["runs"] == 1
    assert {k: got[k] for k in expected} == expected
    assert sum(v[1] for v in expected.values()) > 0  # the low τ made OOD decisions to count
    store.close()
    assert main(["--db", str(db)]) == 0
    assert "| ucb-ood |" in capsys.readouterr().out
    assert format_table(groups).count("\n") == 2
