"""The cluster path, real: two local Ray workers write one PostgreSQL run log, one is killed mid-cell, the grid
is resumed, and every cell's answer, cost and node count equals a serial SQLite run's.

Needs a PostgreSQL server: set UATS_TEST_POSTGRES_URL to a SQLAlchemy URL whose role may create databases
(CI's `.ci/postgres.sh` starts Debian's PostgreSQL and prints one). The test makes a database of its own on
that server and drops it at the end, so reruns and parallel runs never see each other's rows.

What the harness does when a Ray actor dies (and what this test relies on): the driver's `ray.get` raises
RayActorError, it stops the other actors, closes every cell its actors still held as failed in the run log
(their runs too), and exits non-zero by itself; the next run of the same command redoes those cells and
skips the finished ones. The test waits (bounded) for that exit and fails if the driver hangs."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from storage import RunStore
from storage.eval_cells import CellLedger, eval_cells
from testkit.eval_doubles import MODELS
from testkit.postgres import URL_ENV, fresh_database
from uats.eval import EvalOptions, run_eval
from uats_core.eval import GridSpec, build_cells
from uats_core.eval.grid import load_eval_problems, parse_pairs

REPO = Path(__file__).resolve().parents[1]
DEADLINE_S = 180.0  # each wait; generous for a loaded 2-core machine (Ray starts in 10-30 s there)
CELLS_SQL = (
    "SELECT c.cell_key, c.status, c.run_id, c.attempts, c.worker_pid, r.status AS run_status, r.answer, "
    "r.cost, r.n_nodes, r.correct, r.error AS run_error FROM eval_cells c LEFT JOIN runs r ON r.run_id = c.run_id"
)
GRID = [
    "--model",
    f"slow={MODELS['slow']}",
    "--model",
    f"rm={MODELS['rm']}",
    "--pairs",
    "slow:rm",
    "--methods",
    "rebase,h-uats",
    "--budgets",
    "4",
    "--seeds",
    "2",
]


@pytest.fixture()
def pg_url():
    """A fresh database on UATS_TEST_POSTGRES_URL's server: its URL; dropped afterwards."""
    if os.environ.get(URL_ENV):  # skipped below without a server; without Ray, here
        pytest.importorskip("ray")
    with fresh_database("the cluster path") as url:
        yield url


def _cells(url: str) -> dict[str, dict]:
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool, connect_args=_timeout(url))
    try:
        with engine.connect() as conn:
            return {r["cell_key"]: dict(r) for r in conn.execute(sa.text(CELLS_SQL)).mappings()}
    finally:
        engine.dispose()


def _timeout(url: str) -> dict:
    return {"connect_timeout": 10} if url.startswith("postgresql") else {}


def _running_with_nodes(url: str) -> list[dict]:
    """Running cells that have logged at least one node, with their worker's pid."""
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool, connect_args=_timeout(url))
    try:
        with engine.connect() as conn:
            return [
                dict(r)
                for r in conn.execute(
                    sa.text(
                        "SELECT c.cell_key, c.run_id, c.worker_pid, count(n.run_id) AS nodes FROM eval_cells c "
                        "JOIN nodes n ON n.run_id = c.run_id WHERE c.status = 'running' AND c.worker_pid IS NOT NULL "
                        "GROUP BY c.cell_key, c.run_id, c.worker_pid"
                    )
                ).mappings()
            ]
    finally:
        engine.dispose()


def _outcomes(cells: dict[str, dict]) -> dict[str, tuple]:
    return {
        k: (v["answer"], v["cost"], v["n_nodes"], v["correct"]) for k, v in cells.items() if v["status"] == "finished"
    }


def _start(problems_file: Path, url: str, err: Path) -> subprocess.Popen:
    args = [
        sys.executable,
        "-m",
        "uats",
        "eval",
        "--dataset",
        str(problems_file),
        *GRID,
        "--db",
        url,
        "--ray",
        "local",
        "--workers",
        "2",
        "--quiet",
    ]
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with open(err, "w") as f:  # a file, not a pipe: nobody reads while it runs
        return subprocess.Popen(args, cwd=REPO, env=env, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)


def _tail(err: Path) -> str:
    return err.read_text(errors="replace")[-3000:] if err.exists() else "(no output)"


def _kill_group(proc: subprocess.Popen) -> None:
    """The driver and everything it started (its private Ray: raylet, GCS, workers) are one process group."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(30)


def _kill_worker_mid_grid(proc: subprocess.Popen, url: str, err: Path) -> dict:
    """Once >= 2 cells finished and another is running with a node logged, SIGKILL the Ray worker running it.
    The worker is paused (SIGSTOP) while the test checks it still holds that cell, so the kill lands mid-cell
    even if the cell ended between the poll and the kill. The killed cell's row."""
    deadline, states = time.monotonic() + DEADLINE_S, []
    while time.monotonic() < deadline:
        time.sleep(0.2)
        if proc.poll() is not None:
            pytest.fail(
                f"the Ray grid exited {proc.returncode} before it could be interrupted; cell states {states}; "
                f"its output: {_tail(err)}"
            )
        try:
            states = sorted(v["status"] for v in _cells(url).values())
            if states.count("finished") < 2:
                continue
            running = _running_with_nodes(url)
            if not running:
                continue
            pid = int(running[0]["worker_pid"])
            assert pid not in (os.getpid(), proc.pid), "the cell ran in the driver, not in a Ray worker"
            os.kill(pid, signal.SIGSTOP)
            try:
                held = [r for r in _running_with_nodes(url) if r["worker_pid"] == pid]
                if held:
                    os.kill(pid, signal.SIGKILL)  # one Ray actor, mid-search
                    return held[0]
            finally:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)  # (a killed process ignores it)
        except sa.exc.DBAPIError:
            continue  # the driver is still creating the tables
    pytest.fail(f"the Ray grid never got mid-way in {DEADLINE_S:.0f} s; cell states {states}; its output: {_tail(err)}")


@pytest.mark.slow
def test_ray_workers_on_postgres_survive_a_killed_worker(pg_url: str, problems_file: Path, tmp_path: Path) -> None:
    # Reference: the same grid serially into SQLite. The pair is named `slow` as in the Ray run (cell keys
    # carry the pair name), with the same double without its sleep: the delay only makes the Ray run
    # interruptible and changes no draw.
    dataset, probs = load_eval_problems(None, str(problems_file), 3)
    spec = GridSpec(
        pairs=parse_pairs("slow:rm", {"slow": MODELS["pol"], "rm": MODELS["rm"]}),
        problems=probs,
        dataset=dataset,
        methods=["rebase", "h-uats"],
        budgets=[4],
        seeds=[0, 1],
    )
    serial_db = tmp_path / "serial.db"
    ref = run_eval(spec, EvalOptions(db=str(serial_db), progress=False))
    assert ref.finished == ref.cells == 3 * 2 * 2
    store = RunStore(str(serial_db))
    try:
        with store.engine.connect() as conn:
            serial = _outcomes({r["cell_key"]: dict(r) for r in conn.execute(sa.text(CELLS_SQL)).mappings()})
    finally:
        store.close()
    assert len(serial) == 12

    err = tmp_path / "ray-1.log"
    proc = _start(problems_file, pg_url, err)
    try:
        victim = _kill_worker_mid_grid(proc, pg_url, err)
        try:
            proc.wait(DEADLINE_S)  # the driver notices the dead actor and ends by itself
        except subprocess.TimeoutExpired:
            pytest.fail(f"the driver did not end within {DEADLINE_S:.0f} s of its worker's death: {_tail(err)}")
    finally:
        _kill_group(proc)  # whatever is left of its private Ray
    assert proc.returncode != 0, f"a grid whose worker died must not exit 0: {_tail(err)}"

    killed = _cells(pg_url)
    finished = {k: v["run_id"] for k, v in killed.items() if v["status"] == "finished"}
    assert len(finished) >= 2, killed
    lost_key, lost_row = victim["cell_key"], killed[victim["cell_key"]]
    assert lost_row["status"] == "failed" and lost_row["run_id"] == victim["run_id"], lost_row
    assert lost_row["run_status"] == "failed", lost_row  # closed in the run log at once, not left 'running'
    assert not [k for k, v in killed.items() if v["status"] == "running"], (
        f"the driver left cells 'running' for a dead or stopped actor: {killed}; its output: {_tail(err)}"
    )

    err2 = tmp_path / "ray-2.log"
    proc = _start(problems_file, pg_url, err2)
    try:
        try:
            rc = proc.wait(DEADLINE_S * 2)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the resumed grid did not end within {2 * DEADLINE_S:.0f} s: {_tail(err2)}")
    finally:
        _kill_group(proc)
    assert rc == 0, f"the resumed grid failed ({rc}): {_tail(err2)}"

    after = _cells(pg_url)
    assert len(after) == 12
    assert all(v["status"] == "finished" and v["run_status"] == "finished" for v in after.values()), after
    assert {k: after[k]["run_id"] for k in finished} == finished  # finished cells were not redone
    assert after[lost_key]["run_id"] != lost_row["run_id"] and after[lost_key]["attempts"] == 2
    store = RunStore(pg_url)
    try:
        dead = store.get_run(lost_row["run_id"])
    finally:
        store.close()
    assert dead["status"] == "failed" and "died" in (dead["error"] or ""), dead  # closed in the run log
    assert _outcomes(after) == serial  # answers, costs, node counts and grades, cell by cell


def test_a_stopped_ray_job_closes_only_its_actors_cells(problems_file: Path, tmp_path: Path) -> None:
    """CellLedger.release (what the Ray driver calls when its job stops): the running cells of the given
    (host, pid) workers become failed; other workers' running cells and finished cells are left alone.
    SQLite, no Ray: runs everywhere."""
    dataset, probs = load_eval_problems(None, str(problems_file), 3)
    spec = GridSpec(
        pairs=parse_pairs("pol:rm", MODELS),
        problems=probs,
        dataset=dataset,
        methods=["rebase"],
        budgets=[4],
        seeds=[0, 1],
    )
    items = build_cells(spec)[:4]
    store = RunStore(str(tmp_path / "eval.db"))
    try:
        ledger = CellLedger(store)
        for i, it in enumerate(items):
            assert ledger.claim(it.cell, f"run{i}", batched=False)
        pids = {items[0].cell.key: 1001, items[1].cell.key: 1002, items[2].cell.key: 1001, items[3].cell.key: 1003}
        with store.engine.begin() as conn:
            for key, pid in pids.items():
                conn.execute(sa.update(eval_cells).where(eval_cells.c.cell_key == key).values(worker_pid=pid))
        ledger.finish(items[2].cell.key, "run2", "finished", 1.0)
        closed = ledger.release([(ledger.host, 1001), (ledger.host, 1002), ("elsewhere", 1003)], "test")
        assert sorted(closed) == sorted([items[0].cell.key, items[1].cell.key])
        with store.engine.connect() as conn:
            st = dict(conn.execute(sa.select(eval_cells.c.cell_key, eval_cells.c.status)).all())
        assert [st[it.cell.key] for it in items] == ["failed", "failed", "finished", "running"]
        assert ledger.release([], "nothing") == []
    finally:
        store.close()
