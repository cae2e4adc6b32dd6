"""The evaluation grid interrupted: a killed worker's cells are redone on the next run, SIGTERM ends a grid as
Ctrl-C does, and Ctrl-C waits for every lane to close its cell (the backends: testkit/eval_doubles.py's doubles)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from storage import RunStore, StorageError
from testkit.eval_doubles import MODELS
from testkit.eval_grid import cell_rows, grid_spec
from uats.eval import EvalOptions, run_eval
from uats_core.eval import build_cells
from uats_core.eval.grid import check_cells

REPO = Path(__file__).resolve().parents[1]


def _start_slow_grid(problems_file: Path, db: Path, *extra: str) -> subprocess.Popen:
    """The eval CLI in its own process on a grid slow enough to interrupt mid-search."""
    args = [
        sys.executable,
        "-m",
        "uats",
        "eval",
        "--dataset",
        str(problems_file),
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
        "--db",
        str(db),
        "--quiet",
        *extra,
    ]
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with open(db.with_suffix(".stderr"), "w") as err:  # a file, not a pipe: nobody reads while it runs
        return subprocess.Popen(args, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)


def _nodes_of_running_cells(db: Path) -> dict[str, int]:
    """run_id -> nodes logged so far, for the runs of the cells running now."""
    engine = sa.create_engine(f"sqlite:///{db}")  # disposed: the caller polls this ten times a second
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                sa.text(
                    "SELECT n.run_id, count(*) FROM nodes n JOIN eval_cells c ON c.run_id = n.run_id "
                    "WHERE c.status = 'running' GROUP BY n.run_id"
                )
            ).all()
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
                states = [v["status"] for v in cell_rows(db).values()]
                if states.count("finished") >= finished and "running" in states:
                    seen = _nodes_of_running_cells(db) if running_nodes else {}
                    if sum(seen.values()) >= running_nodes:
                        return seen
            except (sa.exc.OperationalError, StorageError):
                continue  # the worker is still creating the tables
    pytest.fail(
        f"the worker never got going; cell states: {states}; its stderr: "
        f"{db.with_suffix('.stderr').read_text()[-2000:]}"
    )


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
    killed = cell_rows(db)
    orphan = [k for k, v in killed.items() if v["status"] == "running"]
    finished = {k: v["run_id"] for k, v in killed.items() if v["status"] == "finished"}
    assert len(orphan) == 1 and len(finished) >= 2
    assert killed[orphan[0]]["run_status"] in ("running", "queued")  # the dead worker left it half-done

    summary = run_eval(
        grid_spec(problems_file, pairs="slow:rm", methods=("rebase", "h-uats")), EvalOptions(db=str(db), progress=False)
    )
    assert summary.orphans == 1 and summary.failed == 0
    assert summary.finished == summary.cells - len(finished)
    after = cell_rows(db)
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
    cells = cell_rows(db)
    assert not [k for k, v in cells.items() if v["status"] == "running"]  # nothing left for a rerun to reclaim
    cancelled = [v for v in cells.values() if v["run_status"] == "cancelled"]
    assert cancelled and all(v["status"] == "failed" for v in cancelled)
    assert any(v["status"] == "finished" and v["run_status"] == "finished" for v in cells.values())
    store = RunStore(str(db))
    try:
        for v in cancelled:
            assert store.get_run(v["run_id"])["status"] == "cancelled"
        with store.engine.connect() as conn:
            now = dict(
                conn.execute(
                    sa.text("SELECT run_id, count(*) FROM nodes WHERE run_id IN :ids GROUP BY run_id").bindparams(
                        sa.bindparam("ids", expanding=True)
                    ),
                    {"ids": list(seen)},
                ).all()
            )
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
    items = check_cells(build_cells(grid_spec(problems_file, methods=("rebase",), n=1)))
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
