"""The evaluation harness: cell keys, resumption, serial == --shard == Ray, batching (a grid interrupted:
test_eval_interrupts.py). Its backends are the test doubles of testkit/eval_doubles.py, loaded through the harness's
own model specs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import sqlalchemy as sa

from storage import RunStore
from storage.eval_cells import eval_cells
from testkit.eval_doubles import MODELS, TorchRngPolicyDouble, TorchRngPRMDouble
from testkit.eval_grid import cell_rows, finished_outcomes, grid_spec
from uats.eval import EvalOptions, run_eval
from uats.eval.cli import main as eval_main
from uats_core.errors import ConfigError
from uats_core.eval import build_cells
from uats_core.eval.batching import BatchingHub, LanePolicy, LanePRM
from uats_core.eval.grid import load_eval_problems
from uats_core.protocols import Trace

REPO = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------------------------- grid
def test_cell_keys_variants_and_shards(problems_file: Path) -> None:
    spec = grid_spec(problems_file, methods=("rebase", "h-uats"), budgets=(4, 16), seeds=(0,))
    spec.axes = {"k0": [3, 7], "tau": [0.003]}
    items = build_cells(spec)
    keys = [it.cell.key for it in items]
    assert len(keys) == len(set(keys))
    # REBASE ignores k0 and tau: one variant; H-UATS: k0=3 and the default 7 (= "base"); tau=0.003 is the default.
    assert {it.cell.variant for it in items if it.cell.method == "rebase"} == {"base"}
    assert {it.cell.variant for it in items if it.cell.method == "h-uats"} == {"base", "k0=3"}
    assert len(items) == 3 * (2 + 2 * 2)
    assert "pol:rm|tiny|t0|h-uats|16|0|k0=3" in keys
    # problem-major order: every cell of problem t0 comes before any of t1
    assert [it.problem.id for it in items] == sorted(it.problem.id for it in items)
    from uats_core.eval.grid import shard

    parts = [shard(items, f"{i}/3") for i in range(3)]
    assert sorted(k for p in parts for k in (it.cell.key for it in p)) == sorted(keys)


def test_bad_input_is_one_line_naming_the_field(
    problems_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    db = tmp_path / "never.db"
    base = ["--dataset", str(problems_file), "--db", str(db), "--quiet"]
    assert eval_main(base + ["--pairs", "nope:prm"]) == 2
    assert "error: pairs: unknown model name 'nope'" in capsys.readouterr().err
    assert eval_main(base + ["--model", "p=/no/such/folder", "--pairs", "p:prm", "--methods", "rebase"]) == 2
    assert "error: policy: no such model folder '/no/such/folder'" in capsys.readouterr().err
    assert eval_main(base + ["--methods", "rebase,magic"]) == 2
    assert "error: methods:" in capsys.readouterr().err
    assert (
        eval_main(
            base
            + [
                "--model",
                "pol=" + MODELS["pol"],
                "--model",
                "rm=" + MODELS["rm"],
                "--pairs",
                "pol:rm",
                "--methods",
                "beam",
                "--budgets",
                "6",
            ]
        )
        == 2
    )
    assert "budget" in capsys.readouterr().err
    assert not db.exists()  # nothing half-written


# ------------------------------------------------------------------------------------------- resumption
def test_rerun_skips_finished_cells_and_redoes_failed(problems_file: Path, tmp_path: Path) -> None:
    db = tmp_path / "eval.db"
    spec = grid_spec(problems_file)
    first = run_eval(spec, EvalOptions(db=str(db), progress=False))
    assert first.finished == first.cells == 3 * 3 * 2 and first.failed == 0
    before = cell_rows(db)
    assert all(v["run_status"] == "finished" for v in before.values())

    again = run_eval(spec, EvalOptions(db=str(db), progress=False))
    assert again.ran == 0 and again.done_before == first.cells
    assert cell_rows(db) == before  # not one run redone

    # A failed cell (e.g. the search raised) is redone on the next run; the others are not.
    victim = sorted(before)[4]
    store = RunStore(str(db))
    with store.engine.begin() as conn:
        conn.execute(sa.update(eval_cells).where(eval_cells.c.cell_key == victim).values(status="failed"))
    store.close()
    third = run_eval(spec, EvalOptions(db=str(db), progress=False))
    assert third.ran == 1 and third.finished == 1 and third.done_before == first.cells - 1
    after = cell_rows(db)
    assert after[victim]["attempts"] == 2 and after[victim]["run_id"] != before[victim]["run_id"]
    assert {k: v for k, v in after.items() if k != victim} == {k: v for k, v in before.items() if k != victim}
    # The redone search reproduces the first attempt exactly (same seed, same cell).
    assert (after[victim]["answer"], after[victim]["cost"]) == (before[victim]["answer"], before[victim]["cost"])


def test_serial_equals_shards(problems_file: Path, tmp_path: Path) -> None:
    spec = grid_spec(problems_file, budgets=(4, 8))
    run_eval(spec, EvalOptions(db=str(tmp_path / "serial.db"), progress=False))
    for i in range(2):  # two shard processes' worth, into one database
        run_eval(spec, EvalOptions(db=str(tmp_path / "sharded.db"), shard=f"{i}/2", progress=False))
    serial, sharded = finished_outcomes(tmp_path / "serial.db"), finished_outcomes(tmp_path / "sharded.db")
    assert len(serial) == 3 * 3 * 2 * 2
    assert serial == sharded
    from uats.report import build_report

    a = build_report(str(tmp_path / "serial.db"), fig2=False).tables["curves"]
    b = build_report(str(tmp_path / "sharded.db"), fig2=False).tables["curves"]
    assert a.equals(b)  # the same table


def test_local_ray_equals_serial(problems_file: Path, tmp_path: Path) -> None:
    pytest.importorskip("ray")  # requirements-eval.txt; 9-15 s here (Ray start-up), so not marked slow
    spec = grid_spec(problems_file, methods=("rebase", "h-uats"), seeds=(0,))
    run_eval(spec, EvalOptions(db=str(tmp_path / "serial.db"), progress=False))
    summary = run_eval(spec, EvalOptions(db=str(tmp_path / "ray.db"), ray="local", workers=2, chunk=2, progress=False))
    assert summary.finished == summary.cells == 6
    serial, ray_out = finished_outcomes(tmp_path / "serial.db"), finished_outcomes(tmp_path / "ray.db")
    assert serial == ray_out
    pids = {v for v in _pids(tmp_path / "ray.db")}
    assert os.getpid() not in pids  # the searches really ran in Ray worker processes


def _pids(db: Path) -> list[int]:
    store = RunStore(str(db))
    with store.engine.connect() as conn:
        out = [r[0] for r in conn.execute(sa.select(eval_cells.c.worker_pid))]
    store.close()
    return out


# ------------------------------------------------------------------------------------------- batching
def test_batching_merges_calls_and_reproduces_itself(problems_file: Path, tmp_path: Path) -> None:
    spec = grid_spec(problems_file, pairs="pol:rm,pol2:rm", methods=("rebase", "h-uats"), budgets=(4, 8))
    one = run_eval(spec, EvalOptions(db=str(tmp_path / "b1.db"), lanes=3, progress=False))
    two = run_eval(spec, EvalOptions(db=str(tmp_path / "b2.db"), lanes=3, progress=False))
    assert one.finished == two.finished == one.cells == 3 * 2 * 2 * 2 * 2 and one.failed == 0
    assert finished_outcomes(tmp_path / "b1.db") == finished_outcomes(
        tmp_path / "b2.db"
    )  # same cells, same lanes: same results
    assert all(v["batched"] for v in cell_rows(tmp_path / "b1.db").values())


def test_hub_serves_concurrent_searches_with_one_call_per_round() -> None:
    import threading

    calls: list[int] = []

    class CountingPolicy(TorchRngPolicyDouble):
        def generate_steps(self, traces):
            calls.append(len(traces))
            return super().generate_steps(traces)

    policy, reward = CountingPolicy(), TorchRngPRMDouble()
    hub = BatchingHub(lanes=3, group_seed="t")
    got: dict[int, list] = {}

    def lane(j: int) -> None:
        pol, prm = LanePolicy(hub, j, policy, "pol"), LanePRM(hub, j, reward, "rm")
        traces = [Trace(f"q{j}", ())] * (j + 1)
        got[j] = [pol.generate_steps(traces), prm.mc_scores([Trace(f"q{j}", ("a\n\n",))], 4)]
        hub.leave(j)

    threads = [threading.Thread(target=lane, args=(j,)) for j in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert calls == [1 + 2 + 3]  # three searches' requests, one policy call
    assert [len(got[j][0]) for j in range(3)] == [1, 2, 3] and all(got[j][1].shape == (1, 4) for j in range(3))
    assert hub.stats.calls == {"policy": 1, "score": 0, "mc": 1}


def test_bench_eval_reports_both_rates(problems_file: Path) -> None:
    import re

    from testkit.bench_runs import run_benchmark

    models = [a for name, spec in MODELS.items() for a in ("--model", f"{name}={spec}")]
    done = run_benchmark(
        "eval",
        "--pair",
        "pol:rm",
        *models,
        "--dataset",
        str(problems_file),
        "--problems",
        "2",
        "--lanes",
        "2",
        "--repeats",
        "1",
        "--budget",
        "4",
    )
    assert done.returncode == 0, done.stderr[-2000:]
    # format_results' line per method: "eval METHOD N=4 pol:rm: S searches/min serial, B with ... ×R [...]"
    rates = {
        m: (float(a), float(b), float(r))
        for m, a, b, r in re.findall(
            r"^eval (\S+)\s+N=4 pol:rm:\s+([\d.]+) searches/min serial,\s+([\d.]+) with .*?×([\d.]+) \[",
            done.stdout,
            re.M,
        )
    }
    assert set(rates) == {"rebase", "h-uats"}, done.stdout
    for serial, batched, ratio in rates.values():
        assert serial > 0 and batched > 0
        assert ratio == pytest.approx(batched / serial, rel=0.05, abs=0.01)  # the printed rates are rounded


def test_config_error_for_unaffordable_uats_budget(problems_file: Path, tmp_path: Path) -> None:
    spec = grid_spec(problems_file, methods=("h-uats",), budgets=(1,))
    spec.settings = {"k0": 30}
    with pytest.raises(ConfigError, match="budgets"):
        run_eval(spec, EvalOptions(db=str(tmp_path / "x.db"), progress=False))
    assert not (tmp_path / "x.db").exists()


def test_ray_refuses_worker_shapes_the_cluster_cannot_place() -> None:
    from uats.eval.ray_runner import check_resources
    from uats_core.errors import ConfigError

    check_resources({"CPU": 2.0}, 1.0, 0.0)
    with pytest.raises(ConfigError, match="^gpus-per-worker: each worker asks for 1 GPU.* the Ray cluster has 0"):
        check_resources({"CPU": 2.0}, 1.0, 1.0)
    with pytest.raises(ConfigError, match="^cpus-per-worker: each worker asks for 4 CPU"):
        check_resources({"CPU": 2.0, "GPU": 1.0}, 4.0, 0.0)


def test_ray_workers_find_shipped_models_in_their_copy_of_the_checkout(tmp_path: Path) -> None:
    from dataclasses import replace as dc_replace

    from uats.eval.ray_runner import relocate
    from uats_core.eval.grid import Cell, WorkItem
    from uats_core.problems import Problem

    driver = "/home/me/uats-studio"
    here = tmp_path / "ray_job_dir"
    cell = Cell(
        "A:prm", f"{driver}/assets/models/arith-policy-a", "hf:org/prm", "arith-test", "arith-test-0", "rebase", 4, 0
    )
    item = WorkItem(cell, Problem("arith-test-0", "1 + 1", "2"))
    (moved,) = relocate([item], driver, here)
    assert moved.cell.policy == f"{here}/assets/models/arith-policy-a"
    assert moved.cell.prm == "hf:org/prm"  # not a path inside the checkout: unchanged
    assert relocate([item], driver, Path(driver)) == [item]
    assert dc_replace(moved.cell, policy=cell.policy) == cell


def test_ray_ships_a_checkout_and_nothing_from_an_installed_package(tmp_path: Path) -> None:
    from uats.eval.ray_runner import REPO_ROOT, ship_env

    assert ship_env(REPO_ROOT)["working_dir"] == str(REPO_ROOT) and ".venv" in ship_env(REPO_ROOT)["excludes"]
    site = tmp_path / "lib" / "python3.12"  # what three levels above an installed uats/eval is
    (site / "site-packages" / "uats_core").mkdir(parents=True)
    assert ship_env(site) == {}


def test_difficulty_picks_the_worlds_problems_and_names_the_dataset(capsys: pytest.CaptureFixture) -> None:
    label, default = load_eval_problems("arith", None, 3)
    assert label == "arith-test"  # the default keeps the grid's cell keys
    label, hard = load_eval_problems("arith", None, 3, difficulty="hard")
    assert label == "arith-hard-test" and all(p.id.startswith("arith-hard-") for p in hard)
    assert [p.question for p in hard] != [p.question for p in default]
    label, _ = load_eval_problems("arith", None, 3, difficulty="o4-6v40a9f5")
    assert label == "arith-o4-6v40a9f5-test"
    assert eval_main(["--difficulty", "brutal", "--methods", "rebase", "--dry-run", "--db", "none.db"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: difficulty: ")
