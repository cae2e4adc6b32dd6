"""The bench module: AUROC, subcommand wiring, and a tiny end-to-end `prm` run (all parts), the benchmarks run as a
program (`python -m benchmarks`, testkit.bench_runs)."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from testkit.bench_runs import run_benchmark
from uats import calibrate, cli
from uats_core.backends.tiny import save_token_cls_prm
from uats_core.estimation import auroc


def brute_auroc(scores, pos):
    p = [s for s, y in zip(scores, pos) if y]
    n = [s for s, y in zip(scores, pos) if not y]
    return sum(1.0 if a > b else 0.5 if a == b else 0.0 for a, b in itertools.product(p, n)) / (len(p) * len(n))


def test_auroc_matches_brute_force():
    rng = np.random.default_rng(0)
    for _ in range(20):
        scores = rng.integers(0, 5, size=30).astype(float)  # many ties
        pos = rng.random(30) < 0.4
        assert auroc(scores, pos) == pytest.approx(brute_auroc(scores, pos))
    assert auroc([1.0, 2.0], [True, True]) != auroc([1.0, 2.0], [True, True])  # nan: one class only
    assert auroc([0.1, 0.9], [False, True]) == 1.0


def test_subcommands_registered():
    args = cli.build_parser().parse_args(["calibrate", "--policy", "a", "--prm", "b"])
    assert args.fn is calibrate.cmd_calibrate  # a command: uats calibrate, not a benchmark
    done = run_benchmark("--help")
    listed = done.stdout.split("positional arguments:")[1].split("options:")[0]
    assert done.returncode == 0 and "prm" in listed and "calibrate" not in listed
    assert run_benchmark().returncode == 2  # a subcommand is required
    # the engine benchmark lives in benchmarks/engine.py and plugs in as a subcommand
    done = run_benchmark("engine", "--help")
    assert done.returncode == 0 and "--budget" in done.stdout


def test_prm_bench_end_to_end_on_tiny_models(tmp_path):
    models = tmp_path / "models"
    save_token_cls_prm(models / "arith-prm", layers=2, hidden=32, heads=2, kv_heads=1)
    out = tmp_path / "r.json"
    done = run_benchmark(
        "prm",
        "--shape",
        "tiny",
        "--repeats",
        "1",
        "--depths",
        "1,3",
        "--tokens",
        "48",
        "--k",
        "3",
        "--models-dir",
        str(models),
        "--arith-problems",
        "8",
        "--json",
        str(out),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    res = json.loads(out.read_text())
    assert {"modes", "depth", "auroc"} <= set(res)
    assert res["modes"]["rows"]["deterministic (1 pass)"]["ratio"] == 1.0
    assert [r["depth"] for r in res["depth"]["rows"]] == [1, 3]
    if "skipped" not in res["auroc"]:  # the arithmetic world is written by another module
        for style in ("A", "B"):
            assert res["auroc"][style]["wrong"] > 0
            for mode in ("full", "last:2", "head"):
                assert 0.0 <= res["auroc"][style][mode]["auroc_var"] <= 1.0
    assert "targets:" in done.stdout


def test_prm_bench_guards_missing_arith_models(tmp_path):
    out = run_benchmark("prm", "--skip", "modes,depth", "--models-dir", str(tmp_path)).stdout
    assert "no arithmetic PRM" in out or "not available" in out


def test_calibrate_on_tiny_models(tmp_path):
    from uats_core.backends.tiny import save_causal_lm

    pol = save_causal_lm(tmp_path / "pol", hidden=32, layers=2, heads=2, kv_heads=1)
    prm = save_token_cls_prm(tmp_path / "prm", layers=2, hidden=32, heads=2, kv_heads=1)
    out = tmp_path / "c.json"
    assert (
        cli.main(
            [
                "calibrate",
                "--policy",
                str(pol),
                "--prm",
                str(prm),
                "--batch",
                "2",
                "--depth",
                "1",
                "--repeats",
                "1",
                "--step-token-cap",
                "8",
                "--question",
                "What is 2+3?",
                "--json",
                str(out),
                "--tau-problems",
                "5",
            ]
        )
        == 0
    )
    res = json.loads(out.read_text())
    assert res["c"] > 0 and res["step_s"] > 0 and res["prm_pass_s"] > 0 and 1 <= res["tokens_per_step"] <= 8
    # c and the in-distribution spreads land together beside the PRM, for --tau auto
    cal = json.loads((prm / "uats_calibration.json").read_text())
    assert cal["cost"]["c"] == pytest.approx(res["c"])
    assert set(cal["uncertainty"]) == {f"{m}|p=0.1|{s}" for m in ("full", "last:2", "head") for s in ("prob", "logit")}
