"""The run log's write path. RunRecorder is the event subscriber that writes one run into the run log, an
iteration per transaction (RunStore.subscriber hands one out; the store registers, controls and reads runs).

Fast path (docs/engine.md measures what logging costs): a NodesUpdated record becomes a `nodes` row and a
`node_history` row here, written with executemany upserts, one transaction per search iteration (SQLite in WAL
mode with synchronous=NORMAL, connection.py, so a reader, the app, sees a run while a worker writes it). On both
databases the run log lives in, SQLite and PostgreSQL, the upserts and the run's UPDATE are prepared statements
run by the driver with our own converters (every node of every iteration); SQLAlchemy's own statements are what
they are tested against."""

from __future__ import annotations

import json
import operator
import os
import socket
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import MISSING, fields
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from uats_core.events import Event, IterationEnded, NodesUpdated, RunEnded, RunStarted
from uats_core.status import ENDED, RunStatus
from uats_core.tree import Node

from . import schema as S
from .bounds import check_row, storable_text
from .connection import StorageError

_NODE_COLS = {c.name for c in S.nodes.columns}
# NOT NULL columns a snapshot may leave out: Node's own defaults (a snapshot always has a step; "" if not)
_DEFAULTS = {
    **{f.name: f.default for f in fields(Node) if f.default is not MISSING and f.default is not None},
    "step": "",
}
_FLOATS = tuple(c.name for c in S.nodes.columns if isinstance(c.type, sa.Float))
_TEXTS = tuple(c.name for c in S.nodes.columns if isinstance(c.type, sa.String) and c.name != "run_id")


def node_row(run_id: str, rec: dict[str, Any], iteration: int) -> dict[str, Any]:
    try:
        node_id = int(rec["id"])
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"node snapshot without an integer 'id': {rec!r}") from None
    row: dict[str, Any] = {"run_id": run_id, "node_id": node_id, "updated_iter": int(iteration)}
    for f in S.NODE_FIELDS:
        row[f] = rec.get(f)
    scores = [float(s) for s in (rec.get("mc_scores") or [])]
    row["mc_scores"] = scores
    row["k"] = len(scores)
    for f, default in _DEFAULTS.items():
        if row[f] is None:
            row[f] = default
    for f in _FLOATS:
        if row[f] is not None:
            row[f] = float(row[f])
    for f in _TEXTS:  # the policy wrote these: stored as every database can hold them, never refused
        if isinstance(row[f], str):
            row[f] = storable_text(row[f])
    extra = {k: v for k, v in rec.items() if k not in _NODE_COLS and k not in ("id", "k")}
    row["extra"] = extra or None
    return row


def history_row(row: dict[str, Any], iteration: int) -> dict[str, Any]:
    return {
        "run_id": row["run_id"],
        "iteration": int(iteration),
        "node_id": row["node_id"],
        **{f: row[f] for f in S.HISTORY_FIELDS},
    }


_FAST = True  # tests switch it off to compare with SQLAlchemy's own statements
_UPSERTS: dict[tuple[str, str, tuple[str, ...]], Any] = {}


def _upsert_statement(dialect: str, table: sa.Table, keys: tuple[str, ...]) -> Any:
    """SQLAlchemy's INSERT ... ON CONFLICT DO UPDATE, built once per (dialect, table, keys): what the fast path
    must store the same as (tests/test_storage.py compares them on both databases)."""
    key = (dialect, table.name, keys)
    stmt = _UPSERTS.get(key)
    if stmt is None:
        from sqlalchemy.dialects import postgresql, sqlite

        # either dialect's INSERT has on_conflict_do_update and .excluded, their common base has neither
        ins: Any = (sqlite.insert if dialect == "sqlite" else postgresql.insert)(table)
        stmt = ins.on_conflict_do_update(
            index_elements=list(keys), set_={c.name: ins.excluded[c.name] for c in table.columns if c.name not in keys}
        )
        _UPSERTS[key] = stmt
    return stmt


def _bind(dialect: str, col: sa.Column) -> tuple[str, Callable[[Any], Any]]:
    """(the column's placeholder, its value converter) in the driver's own terms: what SQLAlchemy's bind processing
    does for this column, without its per-row overhead. JSON as json.dumps text (None as 'null', as sa.JSON stores
    it; PostgreSQL casts the text to json), booleans as 0/1 on SQLite and as booleans on PostgreSQL."""
    mark = "?" if dialect == "sqlite" else "%s"
    if isinstance(col.type, sa.JSON):
        return (mark if dialect == "sqlite" else f"CAST({mark} AS JSON)"), json.dumps
    if isinstance(col.type, sa.Boolean):
        return mark, (
            (lambda v: None if v is None else int(bool(v)))
            if dialect == "sqlite"
            else (lambda v: None if v is None else bool(v))
        )
    if isinstance(col.type, sa.Integer):
        return mark, lambda v: None if v is None else int(v)
    if isinstance(col.type, sa.Float):
        return mark, lambda v: None if v is None else float(v)
    return mark, lambda v: v


_PREPARED: dict[tuple[str, str, tuple[str, ...], tuple[str, ...]], tuple[str, list[Callable[[Any], Any]]]] = {}


def _driver_upsert(conn: Connection, table: sa.Table, rows: Sequence[dict[str, Any]], keys: tuple[str, ...]) -> None:
    """The run log's hot path (every node of every iteration): one prepared INSERT ... ON CONFLICT with plain
    tuples, run by the driver (sqlite3 or psycopg). SQLAlchemy's per-row parameter processing was over half the
    log's cost on a fast search; tests/test_storage.py checks this stores what the SQLAlchemy statement stores."""
    dialect, cols = conn.dialect.name, tuple(rows[0])
    key = (dialect, table.name, cols, keys)
    prepared = _PREPARED.get(key)
    if prepared is None:
        binds = [_bind(dialect, table.c[c]) for c in cols]
        names = ", ".join(f'"{c}"' for c in cols)
        sets = ", ".join(f'"{c}" = excluded."{c}"' for c in cols if c not in keys)
        conflict = ", ".join(f'"{k}"' for k in keys)
        sql = (
            f'INSERT INTO "{table.name}" ({names}) VALUES ({", ".join(m for m, _ in binds)}) '
            f"ON CONFLICT ({conflict}) DO " + (f"UPDATE SET {sets}" if sets else "NOTHING")
        )
        prepared = (sql, [f for _, f in binds])
        _PREPARED[key] = prepared
    sql, convert = prepared
    get = operator.itemgetter(*cols)
    params = (
        [(convert[0](get(r)),) for r in rows]
        if len(cols) == 1
        else [tuple([f(v) for f, v in zip(convert, get(r))]) for r in rows]
    )
    _driver_execute(conn, sql, params, many=True)


def _driver_execute(conn: Connection, sql: str, params: Any, many: bool = False) -> None:
    """Run one statement on the connection's own driver connection, inside its transaction: the run log writes a
    few statements per iteration, and SQLAlchemy's execution context around each cost as much as the database did."""
    cur = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
    try:
        (cur.executemany if many else cur.execute)(sql, params)
    finally:
        cur.close()


_RUN_UPDATES: dict[tuple[str, tuple[str, ...]], tuple[str, list[Callable[[Any], Any]]]] = {}


def update_run(conn: Connection, run_id: str, values: dict[str, Any]) -> None:
    """UPDATE runs SET ... for one run: each iteration's progress and the final outcome, a prepared statement with
    our own converters, as for the node upserts (SQLAlchemy's statement coercion was a fifth of the log's time on a
    fast search)."""
    if not _FAST:
        conn.execute(sa.update(S.runs).where(S.runs.c.run_id == run_id).values(**values))
        return
    dialect, cols = conn.dialect.name, tuple(values)
    prepared = _RUN_UPDATES.get((dialect, cols))
    if prepared is None:
        binds = [_bind(dialect, S.runs.c[c]) for c in cols]
        sets = ", ".join(f'"{c}" = {m}' for c, (m, _) in zip(cols, binds))
        mark = _bind(dialect, S.runs.c.run_id)[0]
        prepared = (f"UPDATE runs SET {sets} WHERE run_id = {mark}", [f for _, f in binds])
        _RUN_UPDATES[(dialect, cols)] = prepared
    sql, convert = prepared
    _driver_execute(conn, sql, tuple(f(values[c]) for f, c in zip(convert, cols)) + (run_id,))


def upsert(conn: Connection, table: sa.Table, rows: Sequence[dict[str, Any]], keys: Iterable[str]) -> None:
    """Insert or replace `rows` by their `keys` (the run log is SQLite or PostgreSQL: connection.DIALECTS)."""
    if not rows:
        return
    keys = tuple(keys)
    if _FAST:
        _driver_upsert(conn, table, rows, keys)
    else:
        conn.execute(_upsert_statement(conn.dialect.name, table, keys), list(rows))


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
        self._write_iteration(
            self.run_id, list(self._nodes.values()), list(self._history.values()), it, len(self._seen), end
        )
        self._nodes.clear()
        self._history.clear()

    def _start_run(self, ev: RunStarted) -> None:
        now = time.time()
        values = dict(
            method=ev.method,
            problem_id=ev.problem_id,
            question=ev.question,
            gold_answer=ev.gold_answer,
            seed=ev.seed,
            config=ev.config,
            policy=ev.policy,
            prm=ev.prm,
            model_options=ev.model_options,
            status=RunStatus.RUNNING,
            updated_at=now,
            worker_pid=os.getpid(),
            worker_host=socket.gethostname(),
        )
        check_row(S.runs, dict(values, run_id=ev.run_id))  # nothing written when a value does not fit
        with self.engine.begin() as conn:
            prev = conn.execute(sa.select(S.runs.c.status).where(S.runs.c.run_id == ev.run_id)).scalar_one_or_none()
            if prev is None:
                conn.execute(
                    sa.insert(S.runs),
                    [
                        dict(
                            values,
                            run_id=ev.run_id,
                            started_at=now,
                            cost=0.0,
                            iterations=0,
                            n_nodes=0,
                            cancel_requested=False,
                        )
                    ],
                )
            elif prev == RunStatus.QUEUED:
                conn.execute(sa.update(S.runs).where(S.runs.c.run_id == ev.run_id).values(**values))
            else:
                raise StorageError(f"run {ev.run_id} already exists with status {prev}; use a new run id", field="run")

    def _write_iteration(
        self,
        run_id: str,
        node_rows: Sequence[dict[str, Any]],
        hist_rows: Sequence[dict[str, Any]],
        it: IterationEnded | None,
        n_nodes: int,
        end: RunEnded | None = None,
    ) -> None:
        now = time.time()
        with self.engine.begin() as conn:  # one transaction per iteration: a reader sees all of it or none
            upsert(conn, S.nodes, node_rows, ("run_id", "node_id"))
            upsert(conn, S.node_history, hist_rows, ("run_id", "iteration", "node_id"))
            run_values: dict[str, Any] = dict(updated_at=now, n_nodes=n_nodes)
            if it is not None:
                upsert(
                    conn,
                    S.iterations,
                    [
                        dict(
                            run_id=run_id,
                            iteration=it.iteration,
                            decisions=[d.to_dict() for d in it.decisions],
                            step_info=it.step_info.to_dict(),
                            cost_step=float(it.cost_step),
                            cost_total=float(it.cost_total),
                            n_nodes_updated=len(node_rows),
                            written_at=now,
                        )
                    ],
                    ("run_id", "iteration"),
                )
                run_values.update(cost=float(it.cost_total), iterations=it.iteration)
            if end is not None:
                status = end.status if end.status in ENDED else RunStatus.FAILED
                error = storable_text(end.error) if end.error else end.error
                if status != end.status:
                    error = f"unknown final status {end.status!r}" + (f"; {error}" if error else "")
                answer, naive = (storable_text(a) if isinstance(a, str) else a for a in (end.answer, end.naive_answer))
                run_values.update(
                    status=status,
                    answer=answer,
                    naive_answer=naive,
                    correct=end.correct,
                    naive_correct=end.naive_correct,
                    cost=float(end.cost),
                    iterations=int(end.iterations),
                    error=error,
                    extra=dict(end.extra) or None,
                    ended_at=now,
                )
            update_run(conn, run_id, run_values)
