"""The evaluation harness: cell keys, resumption, killed workers, serial == --shard == Ray, batching. Its
backends are the test doubles of testkit/eval_doubles.py, loaded through the harness's own model specs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
import sqlalchemy as sa

from storage import RunStore, StorageError
from storage.eval_cells import eval_cells
from testkit.eval_doubles import MODELS, TorchRngPolicyDouble, TorchRngPRMDouble
from uats.eval import EvalOptions, run_eval
from uats.eval.cli import main as eval_main
from uats_core.errors import ConfigError
from uats_core.eval import GridSpec, build_cells
from uats_core.eval.batching import BatchingHub, LanePolicy, LanePRM
from uats_core.eval.grid import check_cells, load_eval_problems, parse_pairs
from uats_core.protocols import Trace

REPO = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------------------------- helpers
def _spec(problems_file: Path, pairs: str = "pol:rm", methods: Sequence[str] = ("best-of-n", "rebase", "h-uats"),
          budgets: Sequence[int] = (4,), seeds: Sequence[int] = (0, 1), n: int = 3) -> GridSpec:
    dataset, probs = load_eval_problems(None, str(problems_file), n)
    return GridSpec(pairs=parse_pairs(pairs, MODELS), problems=probs, dataset=dataset, methods=list(methods),
                    budgets=list(budgets), seeds=list(seeds))


def _cells(db: Path) -> dict[str, dict]:
    """cell key -> the cell row joined with its run's outcome."""
    store = RunStore(str(db))
    try:
        with store.engine.connect() as conn:
            rows = conn.execute(sa.text(
                "SELECT c.cell_key, c.status, c.run_id, c.attempts, c.batched, r.status AS run_status, r.answer, "
                "r.cost, r.n_nodes, r.correct FROM eval_cells c LEFT JOIN runs r ON r.run_id = c.run_id")).mappings().all()
    finally:
        store.close()
    return {r["cell_key"]: dict(r) for r in rows}


def _outcomes(db: Path) -> dict[str, tuple]:
    return {k: (v["answer"], v["cost"], v["n_nodes"], v["correct"]) for k, v in _cells(db).items() if v["status"] == "finished"}


# ------------------------------------------------------------------------------------------- grid
def test_cell_keys_variants_and_shards(problems_file: Path) -> None:
    spec = _spec(problems_file, methods=("rebase", "h-uats"), budgets=(4, 16), seeds=(0,))
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


def test_bad_input_is_one_line_naming_the_field(problems_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    db = tmp_path / "never.db"
    base = ["--dataset", str(problems_file), "--db", str(db), "--quiet"]
    assert eval_main(base + ["--pairs", "nope:prm"]) == 2
    assert "error: pairs: unknown model name 'nope'" in capsys.readouterr().err
    assert eval_main(base + ["--model", "p=/no/such/folder", "--pairs", "p:prm", "--methods", "rebase"]) == 2
    assert "error: policy: no such model folder '/no/such/folder'" in capsys.readouterr().err
    assert eval_main(base + ["--methods", "rebase,magic"]) == 2
    assert "error: methods:" in capsys.readouterr().err
    assert eval_main(base + ["--model", "pol=" + MODELS["pol"], "--model", "rm=" + MODELS["rm"], "--pairs", "pol:rm",
                             "--methods", "beam", "--budgets", "6"]) == 2
    assert "budget" in capsys.readouterr().err
    assert not db.exists()  # nothing half-written



# ------------------------------------------------------------------------------------------- resumption
def test_rerun_skips_finished_cells_and_redoes_failed(problems_file: Path, tmp_path: Path) -> None:
    db = tmp_path / "eval.db"
    spec = _spec(problems_file)
    first = run_eval(spec, EvalOptions(db=str(db), progress=False))
    assert first.finished == first.cells == 3 * 3 * 2 and first.failed == 0
    before = _cells(db)
    assert all(v["run_status"] == "finished" for v in before.values())

    again = run_eval(spec, EvalOptions(db=str(db), progress=False))
    assert again.ran == 0 and again.done_before == first.cells
    assert _cells(db) == before  # not one run redone

    # A failed cell (e.g. the search raised) is redone on the next run; the others are not.
    victim = sorted(before)[4]
    store = RunStore(str(db))
    with store.engine.begin() as conn:
        conn.execute(sa.update(eval_cells).where(eval_cells.c.cell_key == victim).values(status="failed"))
    store.close()
    third = run_eval(spec, EvalOptions(db=str(db), progress=False))
    assert third.ran == 1 and third.finished == 1 and third.done_before == first.cells - 1
    after = _cells(db)
    assert after[victim]["attempts"] == 2 and after[victim]["run_id"] != before[victim]["run_id"]
    assert {k: v for k, v in after.items() if k != victim} == {k: v for k, v in before.items() if k != victim}
    # The redone search reproduces the first attempt exactly (same seed, same cell).
    assert (after[victim]["answer"], after[victim]["cost"]) == (before[victim]["answer"], before[victim]["cost"])


def _start_slow_grid(problems_file: Path, db: Path, *extra: str) -> subprocess.Popen:
    """The eval CLI in its own process on a grid slow enough to interrupt mid-search."""
    args = [sys.executable, "-m", "uats", "eval", "--dataset", str(problems_file), "--model", f"slow={MODELS['slow']}",
            "--model", f"rm={MODELS['rm']}", "--pairs", "slow:rm", "--methods", "rebase,h-uats", "--budgets", "4",
            "--seeds", "2", "--db", str(db), "--quiet", *extra]
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with open(db.with_suffix(".stderr"), "w") as err:  # a file, not a pipe: nobody reads while it runs
        return subprocess.Popen(args, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)


def _nodes_of_running_cells(db: Path) -> dict[str, int]:
    """run_id -> nodes logged so far, for the runs of the cells running now."""
    engine = sa.create_engine(f"sqlite:///{db}")  # disposed: the caller polls this ten times a second
    try:
        with engine.connect() as conn:
            rows = conn.execute(sa.text("SELECT n.run_id, count(*) FROM nodes n JOIN eval_cells c ON c.run_id = n.run_id "
                                        "WHERE c.status = 'running' GROUP BY n.run_id")).all()
        return {str(run_id): int(count) for run_id, count in rows}
    finally:
        engine.dispose()


def _wait_mid_grid(proc: subprocess.Popen, db: Path, finished: int, running_nodes: int = 0) -> dict[str, int]:
    """Until `finished` cells are done and another is running, with at least `running_nodes` nodes logged;
    returns the running runs' node counts seen then."""
    deadline, states = time.time() + 90, []
    while time.time() < deadline:
        time.sleep(0.1)
        if proc.poll() is not None:
            pytest.fail(f"the worker exited {proc.returncode} early: {db.with_suffix('.stderr').read_text()[-2000:]}")
        if db.exists():
            try:
                states = [v["status"] for v in _cells(db).values()]
                if states.count("finished") >= finished and "running" in states:
                    seen = _nodes_of_running_cells(db) if running_nodes else {}
                    if sum(seen.values()) >= running_nodes:
                        return seen
            except (sa.exc.OperationalError, StorageError):
                continue  # the worker is still creating the tables
    pytest.fail(f"the worker never got going; cell states: {states}; its stderr: "
                f"{db.with_suffix('.stderr').read_text()[-2000:]}")


def test_killed_worker_cells_are_redone(problems_file: Path, tmp_path: Path) -> None:
    db = tmp_path / "eval.db"
    proc = _start_slow_grid(problems_file, db)
    try:
        # kill it mid-search (a node logged, so the run row exists: a kill between marking the cell running
        # and opening its run, which a loaded machine made happen once, leaves no run to check), after some
        # cells finished
        _wait_mid_grid(proc, db, finished=2, running_nodes=1)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
    killed = _cells(db)
    orphan = [k for k, v in killed.items() if v["status"] == "running"]
    finished = {k: v["run_id"] for k, v in killed.items() if v["status"] == "finished"}
    assert len(orphan) == 1 and len(finished) >= 2
    assert killed[orphan[0]]["run_status"] in ("running", "queued")  # the dead worker left it half-done

    summary = run_eval(_spec(problems_file, pairs="slow:rm", methods=("rebase", "h-uats")),
                       EvalOptions(db=str(db), progress=False))
    assert summary.orphans == 1 and summary.failed == 0
    assert summary.finished == summary.cells - len(finished)
    after = _cells(db)
    assert all(v["status"] == "finished" and v["run_status"] == "finished" for v in after.values())
    assert {k: after[k]["run_id"] for k in finished} == finished  # finished cells were not redone
    assert after[orphan[0]]["run_id"] != killed[orphan[0]]["run_id"] and after[orphan[0]]["attempts"] == 2
    store = RunStore(str(db))
    dead = store.get_run(killed[orphan[0]]["run_id"])
    store.close()
    assert dead["status"] == "failed" and "died" in dead["error"]  # the orphan run is closed in the run log


@pytest.mark.parametrize("lanes", ["1", "2"])
def test_sigterm_ends_the_grid_like_ctrl_c(problems_file: Path, tmp_path: Path, lanes: str) -> None:
    """`kill PID` (a scheduler, `timeout`): searches in flight end 'cancelled' with their nodes, finished cells
    stay finished, the command exits 130 - serial and with batched lanes."""
    db = tmp_path / "eval.db"
    proc = _start_slow_grid(problems_file, db, "--batch", lanes, "--seeds", "8")  # long enough never to end first
    try:
        seen = _wait_mid_grid(proc, db, finished=1, running_nodes=1)  # a search in flight has written a node
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(60)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130 and "rerun the same command to resume" in db.with_suffix(".stderr").read_text()
    cells = _cells(db)
    assert not [k for k, v in cells.items() if v["status"] == "running"]  # nothing left for a rerun to reclaim
    cancelled = [v for v in cells.values() if v["run_status"] == "cancelled"]
    assert cancelled and all(v["status"] == "failed" for v in cancelled)
    assert any(v["status"] == "finished" and v["run_status"] == "finished" for v in cells.values())
    store = RunStore(str(db))
    try:
        for v in cancelled:
            assert store.get_run(v["run_id"])["status"] == "cancelled"
        with store.engine.connect() as conn:
            now = dict(conn.execute(sa.text("SELECT run_id, count(*) FROM nodes WHERE run_id IN :ids GROUP BY run_id")
                                    .bindparams(sa.bindparam("ids", expanding=True)), {"ids": list(seen)}).all())
    finally:
        store.close()
    # What the searches in flight had written is kept, whether the signal cancelled them or (batched lanes) one
    # finished its last step before its lane saw the signal.
    assert seen and all(now.get(run_id, 0) >= count for run_id, count in seen.items()), (seen, now)


def test_ctrl_c_waits_for_every_lane_to_close_its_cell(problems_file: Path, tmp_path: Path, monkeypatch) -> None:
    """Ctrl-C lands while the main thread waits on the lanes: the run raises only after every lane has closed
    its search - also the lane whose wait the interrupt cut short (on Python 3.11 an interrupted Thread.join
    can mark a live thread stopped, and a second join then returns at once)."""
    import _thread
    import signal
    import threading

    from uats.eval.worker import EvalWorker

    worker = EvalWorker(str(tmp_path / "eval.db"), lanes=2)
    closed: list[int] = []
    both_lanes_in = threading.Barrier(2)

    def run_cell_double(item, policy, prm, batched, embedder=None):  # test double for a cancellable search
        lane = policy.lane
        if both_lanes_in.wait() == 0:  # one lane arms Ctrl-C once both searches run and main is waiting
            threading.Timer(0.3, _thread.interrupt_main).start()
        if not worker._stop.wait(60):  # never hang the suite if the interrupt went missing
            raise RuntimeError("Ctrl-C never reached the worker")
        time.sleep(2.0 if lane == 0 else 0.0)  # lane 0, the one main waits on first, takes a while to stop
        closed.append(lane)
        raise KeyboardInterrupt(f"lane {lane} cancelled")

    monkeypatch.setattr(worker, "_run_cell", run_cell_double)
    items = check_cells(build_cells(_spec(problems_file, methods=("rebase",), n=1)))
    assert len(items) == 2
    # A background job (`cmd &` in a script, as CI may run) starts with SIGINT ignored, and then
    # interrupt_main() does nothing; Ctrl-C at a terminal gets Python's handler, so the test installs it.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            worker.run(items, progress=False)
        assert sorted(closed) == [0, 1]  # neither lane was abandoned mid-cell
    finally:
        worker.close()
        signal.signal(signal.SIGINT, previous)


# ------------------------------------------------------------------------------------------- equality
def test_serial_equals_shards(problems_file: Path, tmp_path: Path) -> None:
    spec = _spec(problems_file, budgets=(4, 8))
    run_eval(spec, EvalOptions(db=str(tmp_path / "serial.db"), progress=False))
    for i in range(2):  # two shard processes' worth, into one database
        run_eval(spec, EvalOptions(db=str(tmp_path / "sharded.db"), shard=f"{i}/2", progress=False))
    serial, sharded = _outcomes(tmp_path / "serial.db"), _outcomes(tmp_path / "sharded.db")
    assert len(serial) == 3 * 3 * 2 * 2
    assert serial == sharded
    from uats.report import build_report

    a = build_report(str(tmp_path / "serial.db"), fig2=False).tables["curves"]
    b = build_report(str(tmp_path / "sharded.db"), fig2=False).tables["curves"]
    assert a.equals(b)  # the same table


def test_local_ray_equals_serial(problems_file: Path, tmp_path: Path) -> None:
    pytest.importorskip("ray")  # requirements-eval.txt; 9-15 s here (Ray start-up), so not marked slow
    spec = _spec(problems_file, methods=("rebase", "h-uats"), seeds=(0,))
    run_eval(spec, EvalOptions(db=str(tmp_path / "serial.db"), progress=False))
    summary = run_eval(spec, EvalOptions(db=str(tmp_path / "ray.db"), ray="local", workers=2, chunk=2, progress=False))
    assert summary.finished == summary.cells == 6
    serial, ray_out = _outcomes(tmp_path / "serial.db"), _outcomes(tmp_path / "ray.db")
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
    spec = _spec(problems_file, pairs="pol:rm,pol2:rm", methods=("rebase", "h-uats"), budgets=(4, 8))
    one = run_eval(spec, EvalOptions(db=str(tmp_path / "b1.db"), lanes=3, progress=False))
    two = run_eval(spec, EvalOptions(db=str(tmp_path / "b2.db"), lanes=3, progress=False))
    assert one.finished == two.finished == one.cells == 3 * 2 * 2 * 2 * 2 and one.failed == 0
    assert _outcomes(tmp_path / "b1.db") == _outcomes(tmp_path / "b2.db")  # same cells, same lanes: same results
    assert all(v["batched"] for v in _cells(tmp_path / "b1.db").values())


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
    done = run_benchmark("eval", "--pair", "pol:rm", *models, "--dataset", str(problems_file), "--problems", "2",
                         "--lanes", "2", "--repeats", "1", "--budget", "4")
    assert done.returncode == 0, done.stderr[-2000:]
    # format_results' line per method: "eval METHOD N=4 pol:rm: S searches/min serial, B with ... ×R [...]"
    rates = {m: (float(a), float(b), float(r)) for m, a, b, r in re.findall(
        r"^eval (\S+)\s+N=4 pol:rm:\s+([\d.]+) searches/min serial,\s+([\d.]+) with .*?×([\d.]+) \[", done.stdout, re.M)}
    assert set(rates) == {"rebase", "h-uats"}, done.stdout
    for serial, batched, ratio in rates.values():
        assert serial > 0 and batched > 0
        assert ratio == pytest.approx(batched / serial, rel=0.05, abs=0.01)  # the printed rates are rounded


def test_config_error_for_unaffordable_uats_budget(problems_file: Path, tmp_path: Path) -> None:
    spec = _spec(problems_file, methods=("h-uats",), budgets=(1,))
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
    cell = Cell("A:prm", f"{driver}/assets/models/arith-policy-a", "hf:org/prm", "arith-test", "arith-test-0", "rebase", 4, 0)
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
