"""Runs for the comparison views' tests: a real H-UATS vs REBASE pair on the embedded arithmetic world, two
synthetic runs, and a hand-made H-UATS step whose numbers are worked out in tests/test_uncertainty_changed.py.
conftest.py serves the first two as fixtures (`real_pair`, `synthetic_runs`)."""

from __future__ import annotations

import pytest

from storage import RunStore
from uats_core.allocation import softmax_shares
from uats_core.config import SearchConfig
from uats_core.runner import DEFAULT_PRM, build_backends, run_search
from uats_core.worlds.arith import world
from ui.views.treedata import RunData

from .doubles import record_synthetic

# τ low enough that the embedded PRM's spread sends candidates to re-evaluation (as in test_ood_survival)
TAU = 0.0005
needs_models = pytest.mark.skipif(not (DEFAULT_PRM / "config.json").is_file(), reason="embedded models missing")


def real_pair() -> tuple[RunData, RunData]:
    """H-UATS and REBASE on one arithmetic problem, seed and budget, as the Compare tab's pair runs them."""
    store = RunStore("sqlite://")
    ids = []
    policy = prm = None
    for method in ("h-uats", "rebase"):
        cfg = SearchConfig(method=method, budget=8, seed=0, tau=TAU, max_iterations=8).validate()
        if policy is None:
            policy, prm = build_backends(None, None, cfg)
        ids.append(
            run_search(world.get_problem("arith-test-0"), cfg, policy, prm, subscribers=[store.subscriber()]).run_id
        )
    return RunData.load(store, ids[0]), RunData.load(store, ids[1])


def synthetic_runs() -> tuple[RunData, RunData]:
    """Two synthetic runs (an H-UATS-shaped one and a REBASE-shaped one) of 120 nodes."""
    store = RunStore("sqlite://")
    for rid, method, seed in (("aaaa1111", "h-uats", 1), ("bbbb2222", "rebase", 2)):
        record_synthetic(store, rid, n_nodes=120, seed=seed, method=method)
    return RunData.load(store, "aaaa1111"), RunData.load(store, "bbbb2222")


def hand_made_step(extra_scores: list[float]) -> RunData:
    """One H-UATS step over three candidates: K0 = 2 passes each, ν2 = 0.2, C = 3; candidate 2 gets extra passes."""
    run = {
        "run_id": "h" * 32,
        "method": "h-uats",
        "question": "q",
        "status": "finished",
        "iterations": 2,
        "config": {"method": "h-uats", "k0": 2, "nu2": 0.2, "nu1": 0.5, "tau": 0.003, "delta": 0.1, "alpha": 0.0},
    }
    passes = {1: [0.78, 0.82], 2: [0.58, 0.62], 3: [0.20, 0.20]}
    passes[2] = passes[2] + extra_scores
    nodes = [
        {
            "id": i,
            "parent_id": 0,
            "depth": 1,
            "step": f"step {i}",
            "created_iter": 1,
            "mc_scores": p,
            "mean": sum(p) / len(p),
            "status": "kept",
        }
        for i, p in passes.items()
    ]
    after2 = sum(passes[2]) / len(passes[2])
    children = softmax_shares([0.80, after2, 0.20], 3, 0.2)
    decisions = [
        {
            "node_id": i,
            "children": children[i - 1],
            "extra_passes": len(extra_scores) if i == 2 else 0,
            "ood": i == 2,
            "reeval_candidate": i == 2,
            "mean_before": sum(passes[i][:2]) / 2,
            "var_before": 0.0,
            "ucb_before": sum(passes[i][:2]) / 2,
            "k_before": 2,
            "mean": sum(passes[i]) / len(passes[i]),
        }
        for i in (1, 2, 3)
    ]
    data = RunData(
        run,
        nodes,
        iterations=[
            {"iteration": 1, "decisions": []},
            {
                "iteration": 2,
                "decisions": decisions,
                "step_info": {"width": 3, "reeval_passes": 4, "knobs": {"nu2": 0.2}},
            },
        ],
    )
    data.history_skipped = True  # no per-iteration snapshots: the nodes as written
    return data
