"""RunRecorder: the event subscriber that writes one run into the run log, an iteration per transaction. It owns
the write path of a search's events (RunStore.subscriber hands one out; the store registers, controls and reads
runs)."""

from __future__ import annotations

import os
import socket
import time
from typing import Any, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from uats_core.events import Event, IterationEnded, NodesUpdated, RunEnded, RunStarted

from . import schema as S
from .bounds import check_row, storable_text
from .fastwrite import update_run, upsert
from .location import StorageError
from .rows import history_row, node_row


class RunRecorder:
    """Consumes one run's events in order. NodesUpdated snapshots are buffered (latest per node wins) and
    written with their IterationEnded in one transaction; RunEnded flushes what is left, so a failed or
    cancelled run keeps every node the search produced."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.run_id: str | None = None
        self._nodes: dict[int, dict[str, Any]] = {}
        self._history: dict[tuple[int, int], dict[str, Any]] = {}
        self._seen: set[int] = set()
        self._ended = False

    def __call__(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            if self.run_id is not None:
                raise RuntimeError(f"this subscriber already records run {self.run_id}; make one per run")
            self._start_run(event)
            self.run_id = event.run_id
            return
        if self.run_id is None:
            raise RuntimeError(f"{type(event).__name__} before RunStarted: events out of order")
        if self._ended:
            raise RuntimeError(f"{type(event).__name__} after RunEnded for run {self.run_id}")
        if isinstance(event, NodesUpdated):
            for rec in event.nodes:
                row = node_row(self.run_id, rec, event.iteration)
                self._nodes[row["node_id"]] = row
                self._history[(event.iteration, row["node_id"])] = history_row(row, event.iteration)
        elif isinstance(event, IterationEnded):
            self._flush(event, None)
        elif isinstance(event, RunEnded):
            self._flush(None, event)
            self._ended = True
        else:
            raise TypeError(f"not a uats_core event: {event!r}")

    def _flush(self, it: IterationEnded | None, end: RunEnded | None) -> None:
        assert self.run_id is not None
        self._seen.update(self._nodes)
        self._write_iteration(self.run_id, list(self._nodes.values()), list(self._history.values()), it,
                              len(self._seen), end)
        self._nodes.clear()
        self._history.clear()

    def _start_run(self, ev: RunStarted) -> None:
        now = time.time()
        values = dict(method=ev.method, problem_id=ev.problem_id, question=ev.question, gold_answer=ev.gold_answer,
                      seed=ev.seed, config=ev.config, policy=ev.policy, prm=ev.prm, status="running",
                      updated_at=now, worker_pid=os.getpid(), worker_host=socket.gethostname())
        check_row(S.runs, dict(values, run_id=ev.run_id))  # nothing written when a value does not fit
        with self.engine.begin() as conn:
            prev = conn.execute(sa.select(S.runs.c.status).where(S.runs.c.run_id == ev.run_id)).scalar_one_or_none()
            if prev is None:
                conn.execute(sa.insert(S.runs), [dict(values, run_id=ev.run_id, started_at=now, cost=0.0,
                                                      iterations=0, n_nodes=0, cancel_requested=False)])
            elif prev == "queued":
                conn.execute(sa.update(S.runs).where(S.runs.c.run_id == ev.run_id).values(**values))
            else:
                raise StorageError(f"run {ev.run_id} already exists with status {prev}; use a new run id", field="run")

    def _write_iteration(self, run_id: str, node_rows: Sequence[dict[str, Any]], hist_rows: Sequence[dict[str, Any]],
                         it: IterationEnded | None, n_nodes: int, end: RunEnded | None = None) -> None:
        now = time.time()
        with self.engine.begin() as conn:  # one transaction per iteration: a reader sees all of it or none
            upsert(conn, S.nodes, node_rows, ("run_id", "node_id"))
            upsert(conn, S.node_history, hist_rows, ("run_id", "iteration", "node_id"))
            run_values: dict[str, Any] = dict(updated_at=now, n_nodes=n_nodes)
            if it is not None:
                upsert(conn, S.iterations, [dict(
                    run_id=run_id, iteration=it.iteration, decisions=[d.to_dict() for d in it.decisions],
                    budget=it.budget.to_dict(),
                    cost_step=float(it.cost_step), cost_total=float(it.cost_total),
                    n_nodes_updated=len(node_rows), written_at=now)], ("run_id", "iteration"))
                run_values.update(cost=float(it.cost_total), iterations=it.iteration)
            if end is not None:
                status = end.status if end.status in S.ENDED_STATUSES else "failed"
                error = storable_text(end.error) if end.error else end.error
                if status != end.status:
                    error = f"unknown final status {end.status!r}" + (f"; {error}" if error else "")
                answer, naive = (storable_text(a) if isinstance(a, str) else a for a in (end.answer, end.naive_answer))
                run_values.update(status=status, answer=answer, naive_answer=naive,
                                  correct=end.correct, naive_correct=end.naive_correct, cost=float(end.cost),
                                  iterations=int(end.iterations), error=error, extra=dict(end.extra) or None,
                                  ended_at=now)
            update_run(conn, run_id, run_values)
