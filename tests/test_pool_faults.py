"""Faults the worker pool survives: the app killed with -9 (its workers die with it; a restart ends the runs
it left), and a full disk under the run log (one line, the job ends failed with its reason, the queue
keeps moving, nothing committed is lost)."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest

from storage import RunStore, StorageError
from storage.connection import pid_alive, process_gone, this_process
from testkit.doubles import DiskFullDouble
from testkit.polling import until
from testkit.pool_requests import search_job
from uats_core.config import SearchConfig
from ui.choices import ARITH
from ui.jobs.pool import RunRequest, WorkerPool
from ui.jobs.warm import ModelCache, execute
from ui.tabs.run_form import dataset_problems

ROOT = Path(__file__).resolve().parents[1]

# The app stand-in: a pool with one paused run on a worker; prints the run and the worker pids, then waits.
_SERVER = textwrap.dedent("""
    import json, sys, time, uuid
    from storage import RunStore
    from uats_core.config import SearchConfig
    from ui.choices import ARITH
    from ui.tabs.run_form import dataset_problems
    from ui.jobs.pool import WorkerPool
    from testkit.pool_requests import search_job

    store = RunStore(sys.argv[1])
    pool = WorkerPool(store, max_workers=1, poll_s=0.2)
    prob = dataset_problems(ARITH)[0]
    cfg = SearchConfig(budget=4, max_iterations=5).to_dict()
    run_id = uuid.uuid4().hex
    store.register_run(run_id, method=cfg["method"], problem_id=prob.id, question=prob.question, config=cfg,
                       paused=True)
    pool.submit(search_job(run_id, store.location, prob, cfg))
    deadline = time.time() + 240
    while not store.waiting_paused(run_id) and time.time() < deadline:
        time.sleep(0.1)
    print(json.dumps({"run": run_id, "workers": [s.proc.pid for s in pool._slots.values()]}), flush=True)
    time.sleep(3600)
""")


def test_workers_die_with_a_killed_app_and_a_restart_ends_its_run(tmp_path: Path) -> None:
    """The report: after `kill -9` of the app its workers lived 45+ minutes and a paused run stayed 'running'."""
    db = str(tmp_path / "runs.db")
    proc = subprocess.Popen(
        [sys.executable, "-c", _SERVER, db],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        info = json.loads(line)
        assert info["workers"] and all(pid_alive(p) for p in info["workers"])
        assert RunStore(db).get_run(info["run"])["status"] == "running"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
        assert until(lambda: not any(pid_alive(p) for p in info["workers"]), 60), "a worker outlived its app"
    finally:
        if proc.poll() is None:
            proc.kill()
    store = RunStore(db)  # the restart: what the app does first
    assert store.mark_dead_workers() == [info["run"]]
    run = store.get_run(info["run"])
    assert run["status"] == "failed" and "the server that ran it" in run["error"] and run["n_nodes"] >= 0


def test_a_restart_ends_the_runs_of_a_dead_server_even_with_a_live_worker(tmp_path: Path) -> None:
    """A run whose server is gone is over, even where its worker (an orphan, here this test's own pid)
    is still alive; a run of a live server is left alone."""
    db = str(tmp_path / "runs.db")
    register = (
        "import sys; from storage import RunStore; RunStore(sys.argv[1]).register_run("
        "sys.argv[2], method='h-uats', problem_id='p', question='q')"
    )
    gone = uuid.uuid4().hex
    subprocess.run(
        [sys.executable, "-c", register, db, gone], cwd=ROOT, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)}
    )
    store = RunStore(db)
    live = uuid.uuid4().hex
    store.register_run(live, method="h-uats", problem_id="p", question="q")
    for rid in (gone, live):  # both 'running' on a worker that is alive
        with store.engine.begin() as conn:
            conn.exec_driver_sql(
                "UPDATE runs SET status='running', worker_pid=?, worker_host=? WHERE run_id=?",
                (os.getpid(), this_process().split("|")[0], rid),
            )
    assert store.mark_dead_workers() == [gone]
    assert store.get_run(gone)["status"] == "failed" and store.get_run(live)["status"] == "running"
    assert not process_gone(this_process())
    host, pid, token = this_process().split("|")
    assert process_gone(f"{host}|{pid}|{token}0")  # the same pid, started at another time: a restarted server


def _req(store: RunStore, **cfg: Any) -> RunRequest:
    prob = dataset_problems(ARITH)[0]
    config = SearchConfig(**{"budget": 4, "max_iterations": 2, **cfg}).to_dict()
    req = search_job(uuid.uuid4().hex, store.location, prob, config)
    store.register_run(req.run_id, method=config["method"], problem_id=prob.id, question=prob.question, config=config)
    return req


def test_a_full_disk_fails_the_run_in_one_line_and_the_worker_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The worker's own code (ui.jobs.warm.execute): the run's first write finds the disk full. No exception
    escapes (it used to end the worker), one log line says why, and the end it could not write is handed
    back for the pool; once there is room, the worker's next run goes through."""
    store = RunStore(str(tmp_path / "runs.db"))
    disk = DiskFullDouble(store)
    cache = ModelCache()
    req = _req(store)
    disk.full = True
    with caplog.at_level(logging.WARNING):
        unrecorded = execute(req, cache, store)
    assert disk.refused >= 2  # RunStarted, then the failed end
    assert unrecorded is not None and unrecorded[0] == "failed" and "database or disk is full" in unrecorded[1]
    assert unrecorded[1].startswith("StorageError: db: the run log at ")
    assert store.get_run(req.run_id)["status"] == "queued"  # nothing could be written
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(said) == 1 and "ended failed" in said[0] and "not recorded yet" in said[0], said
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    disk.full = False
    nxt = _req(store)
    assert execute(nxt, cache, store) is None and store.get_run(nxt.run_id)["status"] == "finished"


def test_the_pool_keeps_ticking_on_a_full_disk_and_writes_the_end_later(tmp_path: Path) -> None:
    """The report: 'worker pool tick failed' and a run stuck 'queued' after space was freed."""
    store = RunStore(str(tmp_path / "runs.db"))
    disk = DiskFullDouble(store)
    pool = WorkerPool(store, max_workers=1, drive=False)
    try:
        cancelled, waiting = _req(store), _req(store)
        store.request_cancel(cancelled.run_id)
        pool.submit(cancelled)
        disk.full = True
        pool.pump()  # ending the cancelled run fails: no exception, kept for later
        assert store.get_run(cancelled.run_id)["status"] == "queued"
        pool.pump()
        disk.full = False
        pool.pump()
        run = store.get_run(cancelled.run_id)
        assert run["status"] == "cancelled" and run["error"] == "cancelled while queued"
        pool.submit(waiting)  # the queue moves on
        assert until(lambda: (pool.pump() or True) and store.get_run(waiting.run_id)["status"] == "finished", 180)
    finally:
        pool.shutdown(cancel=True, timeout_s=30)
    with pytest.raises(StorageError, match=r"^db: the run log at .* is full \(database or disk is full\); free space"):
        disk.full = True
        store.register_run(uuid.uuid4().hex, method="h-uats", problem_id="p", question="q")


# A run on a real full filesystem: a 5 MB tmpfs, mounted in a user and mount namespace of its own (no root
# needed where unprivileged user namespaces are allowed). Prints what happened as JSON.
_FULL_DISK = textwrap.dedent("""
    import json, os, subprocess, sys, time, uuid
    d = sys.argv[1]
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=5m", "tmpfs", d], check=True)
    from storage import RunStore
    from uats_core.config import SearchConfig
    from ui.choices import ARITH
    from ui.tabs.run_form import dataset_problems
    from ui.jobs.pool import WorkerPool
    from testkit.pool_requests import search_job

    store = RunStore(os.path.join(d, "runs.db"))
    prob = dataset_problems(ARITH)[0]
    cfg = SearchConfig(budget=4, max_iterations=2).to_dict()
    reqs = []
    for _ in range(2):
        rid = uuid.uuid4().hex
        store.register_run(rid, method=cfg["method"], problem_id=prob.id, question=prob.question, config=cfg)
        reqs.append(search_job(rid, store.location, prob, cfg))
    filler = os.path.join(d, "filler")
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:  # fill the disk to the last byte
        while os.write(fd, b"x" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)
    pool = WorkerPool(store, max_workers=1, poll_s=0.2)

    def until(done, timeout_s):
        deadline = time.time() + timeout_s
        while not done() and time.time() < deadline:
            time.sleep(0.1)
        return done()

    out = {}
    pool.submit(reqs[0])
    out["kept"] = until(lambda: reqs[0].run_id in pool._unrecorded, 240)
    out["while_full"] = store.get_run(reqs[0].run_id)["status"]
    os.remove(filler)
    until(lambda: store.get_run(reqs[0].run_id)["status"] not in ("queued", "running"), 60)
    out["first"] = store.get_run(reqs[0].run_id)
    pool.submit(reqs[1])
    until(lambda: store.get_run(reqs[1].run_id)["status"] not in ("queued", "running"), 240)
    out["second"] = store.get_run(reqs[1].run_id)
    pool.shutdown(cancel=True, timeout_s=30)
    print(json.dumps(out, default=str))
""")


def test_a_run_on_a_really_full_disk_fails_with_its_reason_and_the_queue_moves(tmp_path: Path) -> None:
    """The report, on a real 5 MB filesystem: the run submitted while the disk was full stayed 'queued'
    after space was freed ('worker pool tick failed'). Now it ends failed with the reason once the disk
    takes writes again, and the next run finishes."""
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(
            f"no user and mount namespaces here ({probe.stderr.decode().strip()}); "
            "test_the_pool_keeps_ticking_on_a_full_disk covers the logic"
        )
    mnt = tmp_path / "small"
    mnt.mkdir()
    res = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", sys.executable, "-c", _FULL_DISK, str(mnt)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["kept"] and out["while_full"] == "queued"
    assert out["first"]["status"] == "failed" and "database or disk is full" in out["first"]["error"]
    assert out["second"]["status"] == "finished"
    assert "Traceback" not in res.stderr and "worker pool tick failed" not in res.stderr, res.stderr[-3000:]
