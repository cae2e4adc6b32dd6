"""All seven methods end to end on small real transformers models (tiny randomly initialised Llama
policy and token-classification PRM, saved to disk and loaded through the same backends as a 7B model),
checked from the database alone; and the CLI's handling of bad input.

Random weights make the policy write nonsense, which is what the engine needs here: varied steps, some
ending at end-of-sequence, and MC-dropout passes that genuinely vary. τ is set low so that real
re-evaluations happen."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from storage import RunStore
from uats.cli import main
from uats_core.backends import load_policy, load_prm
from uats_core.backends.tiny import save_causal_lm, save_token_cls_prm
from uats_core.config import SearchConfig
from uats_core.methods import method_names
from uats_core.problems import Problem
from uats_core.runner import run_search

ROOT = Path(__file__).resolve().parent.parent
BUDGET = 8
TAU = 1e-5
PROBLEM = Problem("tiny-1", "Tom has 3 apples and buys 4 more. How many apples does he have?", "7")


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny-models")
    return save_causal_lm(root / "policy", seed=1), save_token_cls_prm(root / "prm", seed=2)


@pytest.fixture(scope="module")
def backends(model_dirs):
    policy_dir, prm_dir = model_dirs
    return load_policy(str(policy_dir), step_token_cap=16), load_prm(str(prm_dir), dropout_p=0.1, dropout_mode="full")


def _bc_controller(cfg):
    import torch

    from uats.train_controller import behaviour_clone
    from uats_core.controller import ControllerNet, LearnedController
    from uats_core.controller.policy import feature_names

    torch.manual_seed(0)
    net = ControllerNet(len(feature_names(True)), hidden=32)
    behaviour_clone(net, torch.rand(64, len(feature_names(True))), cfg, steps=20)
    return LearnedController(net)


@pytest.fixture(scope="module")
def logged_runs(backends, tmp_path_factory):
    from uats_core.embedders import HashingEmbedder

    policy, prm = backends
    store = RunStore(str(tmp_path_factory.mktemp("e2e") / "runs.db"))
    problem = PROBLEM
    ids = {}
    for method in method_names():
        cfg = SearchConfig(method=method, budget=BUDGET, seed=11, max_iterations=6, tau=TAU)
        controller = _bc_controller(cfg) if method == "a-uats" else None
        res = run_search(
            problem,
            cfg,
            policy,
            prm,
            subscribers=[store.subscriber()],
            controller=controller,
            embedder=HashingEmbedder() if method == "dora" else None,
        )
        ids[method] = res.run_id
    return store, ids


@pytest.mark.slow
def test_every_method_logs_a_finished_run(logged_runs):
    store, ids = logged_runs
    for method, run_id in ids.items():
        run = store.get_run(run_id)
        assert run["status"] == "finished", (method, run.get("error"))
        assert run["method"] == method
        nodes = store.get_nodes(run_id)
        assert len(nodes) > BUDGET
        assert run["cost"] > 0
        its = store.get_iterations(run_id)
        assert its[-1]["cost_total"] == pytest.approx(run["cost"])
        finished = [n for n in nodes if n["status"] in ("finished", "truncated")]
        assert finished, method
        assert run["correct"] in (True, False, None)


@pytest.mark.slow
def test_variance_matches_stored_passes(logged_runs):
    store, ids = logged_runs
    for method in ("h-uats", "a-uats"):
        for n in store.get_nodes(ids[method]):
            if n["id"] == 0:
                continue
            passes = n["mc_scores"]
            assert len(passes) == n["k"] == n["initial_passes"] + n["extra_passes"]
            assert n["var"] == pytest.approx(float(np.var(passes, ddof=1)), abs=1e-12)
            assert n["mean"] == pytest.approx(float(np.mean(passes)), abs=1e-12)
            assert all(0.0 <= p <= 1.0 for p in passes)


@pytest.mark.slow
def test_uats_decisions_follow_the_paper(logged_runs):
    store, ids = logged_runs
    cap = BUDGET * (18 + 1)
    saw_reeval = False
    for method in ("h-uats", "a-uats"):
        spent = 0.0
        for it in store.get_iterations(ids[method]):
            decisions, step_info = it["decisions"], it["step_info"]
            spent += it["cost_step"]  # the carry rule: the cumulative cap, and no step beyond what it was given
            assert spent <= it["iteration"] * cap + 1e-9 and it["cost_step"] <= step_info["available"] + 1e-9
            if it["iteration"] == 1:
                continue
            knobs = step_info["knobs"]
            assert sum(d["children"] for d in decisions) == step_info["width"]
            chosen = [d for d in decisions if d["reeval_candidate"]]
            assert sum(d["extra_passes"] for d in decisions) == (step_info["reeval_passes"] if chosen else 0)
            for d in decisions:
                if d["extra_passes"]:
                    saw_reeval = True
                    assert d["var_before"] > knobs["tau"], "re-evaluated a node that was not OOD"
                    assert d["ucb_before"] >= step_info["reference_mean"] - knobs["delta"] - 1e-12
        nodes = {n["id"]: n for n in store.get_nodes(ids[method])}
        for n in nodes.values():
            if n["status"] == "pruned":
                assert not any(m["parent_id"] == n["id"] for m in nodes.values())
    assert saw_reeval, "no re-evaluation happened: the test exercised nothing"


@pytest.mark.slow
def test_same_seed_same_tree(backends):
    policy, prm = backends
    trees = []
    for _ in range(2):
        res = run_search(
            PROBLEM, SearchConfig(method="h-uats", budget=4, seed=2, max_iterations=4, tau=TAU), policy, prm
        )
        trees.append(res.tree)
    a, b = trees
    assert [
        (n.id, n.parent_id, n.step, n.k, n.children_granted, n.extra_passes, n.status) for n in a.nodes.values()
    ] == [(n.id, n.parent_id, n.step, n.k, n.children_granted, n.extra_passes, n.status) for n in b.nodes.values()]
    # The PRM's prefix cache (warm on the second run) changes float summation order: equal to ~1e-7, not bitwise.
    for na, nb in zip(a.nodes.values(), b.nodes.values()):
        assert na.mc_scores == pytest.approx(nb.mc_scores, abs=1e-6)


def _cli(capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str, str]:
    """The command line in this process: (exit code, stdout, stderr)."""
    capsys.readouterr()  # drop what the test printed before
    rc = main(list(args))
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.mark.parametrize(
    "args,field",
    [
        (["--method", "mcts"], "method"),
        (["--budget", "0"], "budget"),
        (["--budget", "-4"], "budget"),
        (["--k0", "1"], "k0"),
        (["--tau", "-0.01"], "tau"),
        (["--problem", "arith-nosuchsplit-3"], "problem"),
        (["--problem", "no-such-problem"], "problem"),
        (["--dataset", "/nonexistent/math.jsonl"], "dataset"),
    ],
)
def test_cli_bad_input_is_one_line_naming_the_field(tmp_path, capsys, args, field):
    db = tmp_path / "runs.db"
    rc, _, err = _cli(capsys, "search", "--db", str(db), "--quiet", *args)
    assert rc == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {field}:"), err
    assert not db.exists(), "bad input must leave nothing behind"


def test_the_real_process_refuses_bad_input_with_code_2_one_line_and_no_file(tmp_path):
    """`python -m uats` itself, not main() in this process: its exit code, a stderr of exactly one line
    (no warning or traceback from start-up), and no database file or runs/ folder where it ran."""
    db = tmp_path / "runs.db"
    out = subprocess.run(
        [sys.executable, "-m", "uats", "search", "--db", str(db), "--quiet", "--budget", "0"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: budget:"), out.stderr
    assert list(tmp_path.iterdir()) == [], "bad input must leave nothing behind"


def test_cli_unreadable_database_url(capsys):
    rc, _, err = _cli(capsys, "search", "--db", "postgresql+nosuchdriver://x@localhost/db", "--quiet", "--budget", "4")
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: db:"), err


@pytest.mark.slow
def test_cli_search_runs_show(tmp_path, capsys, model_dirs):
    db = tmp_path / "runs.db"
    data = tmp_path / "problems.jsonl"
    data.write_text('{"id": "p1", "problem": "What is 2 + 2?", "answer": "4"}\n')
    policy_dir, prm_dir = model_dirs
    rc, out, err = _cli(
        capsys,
        "search",
        "--method",
        "h-uats",
        "--budget",
        "4",
        "--dataset",
        str(data),
        "--problem",
        "p1",
        "--policy",
        str(policy_dir),
        "--prm",
        str(prm_dir),
        "--max-iterations",
        "3",
        "--db",
        str(db),
        "--quiet",
    )
    assert rc == 0, err
    run_id = out.split()[1]
    _, listing, _ = _cli(capsys, "runs", "--db", str(db))
    assert run_id in listing and "h-uats" in listing
    rc, shown, _ = _cli(capsys, "show", run_id[:8], "--db", str(db))
    assert rc == 0 and "R̄=" in shown and "σ²=" in shown
