"""Step mode in the run log: a paused run lets through exactly the iterations granted (RunStore.step_run), Resume
releases it, a cancel wins over both, and a run log written before step mode gains its columns."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from storage import RunStore, StorageError


def _start(fn):
    """Run fn in a thread (a worker blocked in wait_turn); returns the thread and the list its result lands in."""
    import threading

    out: list[object] = []
    t = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    t.start()
    return t, out


def _returns_within(fn, timeout_s: float) -> tuple[bool, object]:
    """(returned in time, its value). A call that does not return stays a live waiter: only use this
    where the test ends that wait itself (see _start), or it will consume a later step."""
    t, out = _start(fn)
    t.join(timeout_s)
    return (not t.is_alive(), out[0] if out else None)


def test_step_mode_lets_through_exactly_the_granted_iterations(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path / "runs.db"))
    store.register_run("s1", method="h-uats", problem_id="p", question="?", paused=True)
    assert store.is_paused("s1") and store.run_version("s1")[-1] is True
    worker, got = _start(lambda: store.wait_turn("s1", poll_s=0.02))
    worker.join(0.4)
    assert worker.is_alive()  # paused with no step granted: the worker waits
    assert store.step_run("s1", 2) is True
    worker.join(5.0)
    assert not worker.is_alive() and got == [False]  # the waiting worker took the first step
    assert _returns_within(lambda: store.wait_turn("s1", poll_s=0.02), 5.0) == (True, False)  # the second
    worker, got = _start(lambda: store.wait_turn("s1", poll_s=0.02))
    worker.join(0.4)
    assert worker.is_alive()  # both steps used up
    assert store.resume_run("s1") is True and not store.is_paused("s1")
    worker.join(5.0)
    assert not worker.is_alive() and got == [False]  # resuming releases the waiting worker
    assert _returns_within(lambda: store.wait_turn("s1", poll_s=0.02), 5.0) == (True, False)
    assert store.pause_run("s1") is True
    store.request_cancel("s1")
    assert _returns_within(lambda: store.wait_turn("s1", poll_s=0.02), 5.0) == (True, True)  # cancel wins
    with pytest.raises(StorageError) as exc:
        store.step_run("s1", 0)
    assert exc.value.field == "steps"
    store.mark_failed("s1", "stopped", status="cancelled")
    assert store.step_run("s1") is False and store.resume_run("s1") is False  # ended runs ignore controls
    with pytest.raises(StorageError):
        store.pause_run("nope")


def test_an_older_run_log_gains_the_new_columns(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    RunStore(str(path)).register_run("old", method="rebase", problem_id="p", question="?")
    with sqlite3.connect(path) as conn:  # what a run log written before step mode looked like
        conn.execute("ALTER TABLE runs DROP COLUMN paused")
        conn.execute("ALTER TABLE runs DROP COLUMN step_credits")
    store = RunStore(str(path))
    assert store.is_paused("old") is False and store.get_run("old")["step_credits"] == 0
    store.register_run("new", method="rebase", problem_id="p", question="?", paused=True)
    assert store.is_paused("new") is True


def test_a_search_in_step_mode_does_one_iteration_per_step(tmp_path: Path) -> None:
    """The worker's gate (RunStore.wait_turn as run_search's should_cancel) on a real search: the run
    stays at the iteration count the steps allow, then Resume runs it to the end."""
    import threading

    from testkit.doubles import HashedPRMDouble, ScriptedPolicyDouble
    from uats_core.config import SearchConfig
    from uats_core.problems import Problem
    from uats_core.runner import run_search

    store = RunStore(str(tmp_path / "runs.db"))
    store.register_run("live", method="h-uats", problem_id="double-1", question="What is 4 + 4?", paused=True)
    worker = threading.Thread(
        target=run_search,
        daemon=True,
        kwargs=dict(
            problem=Problem("double-1", "What is 4 + 4?", "8"),
            config=SearchConfig(method="h-uats", budget=8),
            policy=ScriptedPolicyDouble(depth=5),
            prm=HashedPRMDouble(),
            subscribers=[store.subscriber()],
            run_id="live",
            should_cancel=lambda: store.wait_turn("live", poll_s=0.02),
        ),
    )
    worker.start()

    def settle_at(iterations: int) -> dict:
        deadline = time.time() + 20
        while time.time() < deadline and store.get_run("live")["iterations"] < iterations:
            time.sleep(0.02)
        time.sleep(0.3)  # would a further iteration sneak through?
        return store.get_run("live")

    run = settle_at(0)
    assert run["status"] == "running" and run["iterations"] == 0 and run["n_nodes"] == 0
    store.step_run("live")
    run = settle_at(1)
    assert run["iterations"] == 1 and run["n_nodes"] > 0
    first_nodes = run["n_nodes"]
    store.step_run("live")
    run = settle_at(2)
    assert run["iterations"] == 2 and run["n_nodes"] > first_nodes and run["status"] == "running"
    store.resume_run("live")
    worker.join(30)
    run = store.get_run("live")
    assert run["status"] == "finished" and run["iterations"] > 2
