"""A reader in another process follows a run while its writer commits it, one whole iteration at a time
(SQLite in WAL mode: what the app does with a worker's run)."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3
import time
from pathlib import Path
from typing import Any

from storage import RunStore, StorageError
from testkit.synthetic import synthetic_events
from uats_core.events import IterationEnded


def _paced_writer(path: str, n_nodes: int, seen: Any) -> None:
    """Writes a run; after each of its first three iterations it waits until the reader says it has read it."""
    store = RunStore(path)
    sub = store.subscriber()
    for ev in synthetic_events("live", n_nodes=n_nodes, seed=5, budget=8):
        sub(ev)
        if isinstance(ev, IterationEnded) and ev.iteration <= 3:
            assert seen.get(timeout=120) == ev.iteration


def test_reader_sees_run_while_it_is_written(tmp_path: Path) -> None:
    """Another process reads the run between its writer's transactions: each committed iteration, whole."""
    path = str(tmp_path / "live.db")
    RunStore(path).close()
    ctx = mp.get_context("spawn")
    seen_q = ctx.Queue()
    proc = ctx.Process(target=_paced_writer, args=(path, 600, seen_q))
    proc.start()
    reader = RunStore(path)
    seen: list[int] = []
    try:
        for iteration in (1, 2, 3):  # the writer waits for each of these reads
            deadline = time.time() + 120  # only bounds a hung writer
            while time.time() < deadline:
                try:
                    run = reader.get_run("live")
                except StorageError:  # not started yet
                    run = None
                if run is not None and run["iterations"] >= iteration:
                    break
                time.sleep(0.01)
            assert run is not None and run["iterations"] == iteration and run["status"] == "running", run
            nodes = reader.get_nodes("live")
            assert len(nodes) == run["n_nodes"]  # an iteration is read whole, never half-written
            seen.append(len(nodes))
            seen_q.put(iteration)
    finally:
        proc.join(120)
    assert proc.exitcode == 0
    final = len(reader.get_nodes("live"))
    assert reader.get_run("live")["status"] == "finished"
    assert 0 < seen[0] < seen[1] < seen[2] < final, (seen, final)  # the reader saw the tree grow, not just the end
    with sqlite3.connect(path) as con:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
