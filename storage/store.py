"""The run log: writes uats_core events to any SQLAlchemy database and reads runs back for the CLI and app.

Fast path (reference.md §7): Core executemany inserts/upserts, one transaction per search iteration,
SQLite in WAL mode with synchronous=NORMAL so a reader (the app) sees a run while a worker writes it.
SQL stays portable: upserts use the dialect's ON CONFLICT where it has one (SQLite, PostgreSQL) and
delete+insert inside the same transaction elsewhere.
"""

from __future__ import annotations

import json
import logging
import operator
import os
import socket
import sqlite3
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import StaticPool

from uats_core.events import Event, IterationEnded, NodesUpdated, RunEnded, RunStarted

from . import schema as S
from .liveness import pid_alive
from .location import StorageError, display as _display, parse_location

log = logging.getLogger(__name__)

SQLITE_BUSY_TIMEOUT_MS = 30_000  # several workers share one file; a writer waits its turn, never fails


def _create_schema(engine: Engine) -> None:
    """Create the tables and add the columns an earlier version lacked, as one write transaction.

    On SQLite the check-then-create runs under BEGIN IMMEDIATE: two processes opening a new run log at once
    (eval shards, the app beside a worker) otherwise both see no tables, and one fails mid-DDL with
    'database is locked' or 'table already exists'. IMMEDIATE takes the write lock up front, so the second
    waits (busy timeout) and then finds the schema in place."""
    with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        S.metadata.create_all(conn)
        _add_missing_columns(conn)
        conn.commit()


def _add_missing_columns(conn: Connection) -> None:
    """Bring a run log written by an earlier version up to date: add the columns it lacks."""
    insp = sa.inspect(conn)
    for table_name, names in S.ADDED_COLUMNS.items():
        have = {c["name"] for c in insp.get_columns(table_name)}
        table = S.metadata.tables[table_name]
        for name in names:
            if name in have:
                continue
            col = table.c[name]
            ddl = f"ALTER TABLE {table_name} ADD COLUMN {name} {col.type.compile(dialect=conn.dialect)}"
            if not col.nullable:  # a NOT NULL column needs a value for the rows already there
                default = col.server_default.arg  # type: ignore[union-attr]
                default_sql = default if isinstance(default, str) else str(default.compile(dialect=conn.dialect))
                ddl += f" NOT NULL DEFAULT {default_sql}"
            conn.execute(sa.text(ddl))
            log.info("run log upgraded: added %s.%s", table_name, name)


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    try:
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
        while True:
            try:
                cur.execute("PRAGMA journal_mode=WAL")
                break
            except sqlite3.OperationalError as exc:
                # Switching a new file to WAL takes a lock SQLite does not wait for (no busy handler), so a
                # second process opening the same new run log would fail at once: wait our turn here.
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.02)
        mode = cur.fetchone()
        if mode and str(mode[0]).lower() not in ("wal", "memory"):
            # e.g. a network filesystem without shared memory: still correct, but readers may block writers
            log.warning("SQLite refused WAL mode (journal_mode=%s); live reading may stall", mode[0])
        cur.execute("PRAGMA synchronous=NORMAL")
    finally:
        cur.close()


class RunStore:
    """A run log at `url_or_path`: a bare path is a SQLite file; anything with '://' is an SQLAlchemy URL.

    Creates the tables if needed. Raises StorageError(field="db") naming the URL and the fix when the
    database cannot be opened, and then leaves no file or folder behind that it created itself."""

    def __init__(self, url_or_path: str | os.PathLike[str]) -> None:
        spec = os.fspath(url_or_path)
        if not isinstance(spec, str) or not spec.strip():
            raise StorageError("empty database location; give a file path (runs/uats.db) or an SQLAlchemy URL")
        self._created: list[Path] = []  # files/folders made by us, removed again if opening fails
        self._sqlite_path: Path | None = None
        self.url = parse_location(spec.strip())
        self.engine = self._open()

    # ------------------------------------------------------------------ opening
    def _open(self) -> Engine:
        url = self.url
        kwargs: dict[str, Any] = {}
        memory = False
        if url.get_backend_name() == "sqlite":
            db = url.database or ""
            memory = db in ("", ":memory:") or db.startswith("file::memory:")
            if memory:
                # one shared connection, or every pooled connection would see its own empty database
                kwargs.update(poolclass=StaticPool, connect_args={"check_same_thread": False})
            else:
                self._sqlite_path = Path(db).absolute()
                self._prepare_sqlite_file(self._sqlite_path)
                kwargs["connect_args"] = {"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}
        try:
            engine = sa.create_engine(url, **kwargs)
        except Exception as exc:  # NoSuchModuleError (unknown dialect), ImportError (driver missing)
            self._cleanup()
            raise StorageError(f"cannot use database URL {_display(url)!r}: {exc.__class__.__name__}: {exc}; "
                               "check the dialect name and that its driver is installed") from None
        if url.get_backend_name() == "sqlite":
            sa.event.listen(engine, "connect", _sqlite_pragmas)
        try:
            _create_schema(engine)
        except Exception as exc:
            engine.dispose()
            self._cleanup()
            msg = str(getattr(exc, "orig", exc)) or exc.__class__.__name__
            where = f"file {str(self._sqlite_path)!r}" if self._sqlite_path else f"URL {_display(url)!r}"
            raise StorageError(f"cannot open or create the run log at {where}: {msg}; give a writable path to a "
                               "SQLite file (or a new one) or a reachable database URL") from None
        self._created.clear()  # opened: from now on these files are the user's run log
        log.info("run log at %s", "memory" if memory else _display(url))
        return engine

    def _prepare_sqlite_file(self, path: Path) -> None:
        if path.is_dir():
            raise StorageError(f"{str(path)!r} is a folder; give a file path such as {str(path / 'uats.db')!r}")
        missing: list[Path] = []
        parent = path.parent
        while not parent.exists():
            missing.append(parent)
            parent = parent.parent
        try:
            for folder in reversed(missing):
                folder.mkdir()
                self._created.append(folder)
        except OSError as exc:
            self._cleanup()
            raise StorageError(f"cannot create the folder for {str(path)!r} ({exc.strerror}); "
                               "give a path in a writable folder") from None
        if not path.exists():
            self._created.append(path)
            for suffix in ("-wal", "-shm", "-journal"):
                self._created.append(path.with_name(path.name + suffix))
        elif not os.access(path, os.R_OK | os.W_OK):
            raise StorageError(f"{str(path)!r} is not readable and writable; fix its permissions or choose another file")

    def _cleanup(self) -> None:
        for p in reversed(self._created):
            try:
                if p.is_dir():
                    p.rmdir()
                elif p.exists():
                    p.unlink()
            except OSError:
                log.warning("could not remove %s after a failed open", p)
        self._created.clear()

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> "RunStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RunStore({_display(self.url)!r})"

    @property
    def location(self) -> str:
        """The URL to hand to another process (a worker opens its own RunStore on it)."""
        return self.url.render_as_string(hide_password=False)

    # ------------------------------------------------------------------ writing
    def subscriber(self) -> Callable[[Event], None]:
        """A fresh event consumer for one run: pass it to run_search(subscribers=[...])."""
        return RunRecorder(self)

    def register_run(self, run_id: str, *, method: str, problem_id: str, question: str,
                     gold_answer: str | None = None, seed: int | None = None, config: dict[str, Any] | None = None,
                     policy: str | None = None, prm: str | None = None, label: str | None = None,
                     paused: bool = False) -> None:
        """Insert a 'queued' row before a worker starts, so a front end can list, follow and cancel the run
        at once; RunStarted from the worker then fills the rest in. paused=True starts it in step mode: the
        worker loads its models, writes the root, and waits for `step_run` before iteration 1."""
        now = time.time()
        with self.engine.begin() as conn:
            conn.execute(sa.insert(S.runs), [dict(
                run_id=run_id, method=method, problem_id=problem_id, question=question, gold_answer=gold_answer,
                seed=seed, config=config, policy=policy, prm=prm, status="queued", cost=0.0, iterations=0,
                n_nodes=0, label=label, started_at=now, updated_at=now, cancel_requested=False,
                paused=bool(paused), step_credits=0)])

    def _start_run(self, ev: RunStarted) -> None:
        now = time.time()
        values = dict(method=ev.method, problem_id=ev.problem_id, question=ev.question, gold_answer=ev.gold_answer,
                      seed=ev.seed, config=ev.config, policy=ev.policy, prm=ev.prm, status="running",
                      updated_at=now, worker_pid=os.getpid(), worker_host=socket.gethostname())
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
            _upsert(conn, S.nodes, node_rows, ("run_id", "node_id"))
            _upsert(conn, S.node_history, hist_rows, ("run_id", "iteration", "node_id"))
            run_values: dict[str, Any] = dict(updated_at=now, n_nodes=n_nodes)
            if it is not None:
                _upsert(conn, S.iterations, [dict(
                    run_id=run_id, iteration=it.iteration, decisions=list(it.decisions), budget=dict(it.budget),
                    cost_step=float(it.cost_step), cost_total=float(it.cost_total),
                    n_nodes_updated=len(node_rows), written_at=now)], ("run_id", "iteration"))
                run_values.update(cost=float(it.cost_total), iterations=it.iteration)
            if end is not None:
                status = end.status if end.status in S.ENDED_STATUSES else "failed"
                error = end.error
                if status != end.status:
                    error = f"unknown final status {end.status!r}" + (f"; {error}" if error else "")
                run_values.update(status=status, answer=end.answer, naive_answer=end.naive_answer,
                                  correct=end.correct, naive_correct=end.naive_correct, cost=float(end.cost),
                                  iterations=int(end.iterations), error=error, extra=dict(end.extra) or None,
                                  ended_at=now)
            _update_run(conn, run_id, run_values)

    def request_cancel(self, run_id: str) -> bool:
        """Ask the worker to stop after its current iteration. False when the run had already ended."""
        if not self._control(run_id, cancel_requested=True):
            return False
        log.info("cancel requested for run %s", run_id)
        return True

    def cancel_requested(self, run_id: str) -> bool:
        with self.engine.connect() as conn:
            flag = conn.execute(sa.select(S.runs.c.cancel_requested).where(S.runs.c.run_id == run_id)).scalar_one_or_none()
        return bool(flag)

    # ------------------------------------------------------------------ step mode
    def _control(self, run_id: str, **values: Any) -> bool:
        """Set control columns of a run that has not ended (cancel, pause, steps); False when it had ended."""
        with self.engine.begin() as conn:
            status = conn.execute(sa.select(S.runs.c.status).where(S.runs.c.run_id == run_id)).scalar_one_or_none()
            if status is None:
                raise StorageError(f"no run {run_id}", field="run")
            if status in S.ENDED_STATUSES:
                return False
            conn.execute(sa.update(S.runs).where(S.runs.c.run_id == run_id).values(**values))
        return True

    def pause_run(self, run_id: str) -> bool:
        """Hold the run before its next iteration (the current one completes). False when it had ended."""
        return self._control(run_id, paused=True, step_credits=0)

    def resume_run(self, run_id: str) -> bool:
        """Let a paused run go on to its end. False when it had ended."""
        return self._control(run_id, paused=False, step_credits=0)

    def step_run(self, run_id: str, steps: int = 1) -> bool:
        """Let a paused run (pausing it if it was not) do `steps` more iterations, then wait again."""
        if int(steps) < 1:
            raise StorageError(f"steps must be >= 1, got {steps}", field="steps")
        return self._control(run_id, paused=True, step_credits=S.runs.c.step_credits + int(steps))

    def is_paused(self, run_id: str) -> bool:
        with self.engine.connect() as conn:
            flag = conn.execute(sa.select(S.runs.c.paused).where(S.runs.c.run_id == run_id)).scalar_one_or_none()
        return bool(flag)

    def wait_turn(self, run_id: str, poll_s: float = 0.2) -> bool:
        """What a worker calls before each iteration: returns True when the run should stop (cancel
        requested), False when it may do one iteration; while the run is paused with no step granted it
        waits. A granted step is used up here, atomically, so two clicks give exactly two iterations."""
        while True:
            with self.engine.begin() as conn:
                row = conn.execute(sa.select(S.runs.c.cancel_requested, S.runs.c.paused, S.runs.c.step_credits)
                                   .where(S.runs.c.run_id == run_id)).first()
                if row is None:
                    raise StorageError(f"no run {run_id}", field="run")
                if row.cancel_requested:
                    return True
                if not row.paused:
                    return False
                if row.step_credits > 0:
                    conn.execute(sa.update(S.runs).where(S.runs.c.run_id == run_id)
                                 .values(step_credits=S.runs.c.step_credits - 1))
                    return False
            # No heartbeat write while waiting: pages redraw when updated_at moves, and a paused worker's
            # liveness is its process (mark_dead_workers), not this row.
            time.sleep(poll_s)

    def mark_failed(self, run_id: str, error: str, status: str = "failed") -> bool:
        """End a run whose worker died (or never started) without RunEnded; status 'cancelled' when the
        user stopped it before its search began. Leaves ended runs alone (returns False then)."""
        if status not in ("failed", "cancelled"):
            raise StorageError(f"mark_failed takes status 'failed' or 'cancelled', not {status!r}", field="status")
        with self.engine.begin() as conn:
            res = conn.execute(sa.update(S.runs)
                               .where(S.runs.c.run_id == run_id, S.runs.c.status.in_(("queued", "running")))
                               .values(status=status, error=error, ended_at=time.time()))
        if res.rowcount:
            log.warning("run %s marked %s: %s", run_id, status, error)
        return bool(res.rowcount)

    def mark_dead_workers(self, queued_grace_s: float = 600.0) -> list[str]:
        """Mark failed the unfinished runs of this host whose worker process is gone, and queued runs no
        worker picked up within `queued_grace_s`. Returns their ids. For a front end at start-up."""
        host = socket.gethostname()
        now = time.time()
        dead: list[str] = []
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(S.runs.c.run_id, S.runs.c.status, S.runs.c.worker_pid, S.runs.c.worker_host,
                                          S.runs.c.updated_at)
                                .where(S.runs.c.status.in_(("queued", "running")))).all()
        for r in rows:
            if r.worker_pid is not None and r.worker_host == host and not pid_alive(r.worker_pid):
                if self.mark_failed(r.run_id, f"worker process {r.worker_pid} died before the run ended"):
                    dead.append(r.run_id)
            elif r.status == "queued" and r.worker_pid is None and now - (r.updated_at or 0) > queued_grace_s:
                if self.mark_failed(r.run_id, f"no worker started the run within {queued_grace_s:.0f} s"):
                    dead.append(r.run_id)
        return dead

    def delete_run(self, run_id: str) -> None:
        with self.engine.begin() as conn:
            for t in (S.stars, S.shadow_scores, S.iterations, S.node_history, S.nodes):  # explicit: not every db enforces CASCADE
                conn.execute(sa.delete(t).where(t.c.run_id == run_id))
            res = conn.execute(sa.delete(S.runs).where(S.runs.c.run_id == run_id))
        if not res.rowcount:
            raise StorageError(f"no run {run_id}", field="run")

    # ------------------------------------------------------------------ stars and notes
    def star_case(self, run_id: str, node_id: int = S.RUN_LEVEL, starred: bool = True,
                  case_kind: str | None = None) -> None:
        self._set_star(run_id, node_id, starred=bool(starred), **({"case_kind": case_kind} if case_kind else {}))

    def set_note(self, run_id: str, node_id: int = S.RUN_LEVEL, note: str = "") -> None:
        self._set_star(run_id, node_id, note=str(note))

    def _set_star(self, run_id: str, node_id: int, **values: Any) -> None:
        node_id = int(node_id)
        with self.engine.begin() as conn:
            if conn.execute(sa.select(S.runs.c.run_id).where(S.runs.c.run_id == run_id)).first() is None:
                raise StorageError(f"no run {run_id}", field="run")
            if node_id != S.RUN_LEVEL and conn.execute(sa.select(S.nodes.c.node_id).where(
                    S.nodes.c.run_id == run_id, S.nodes.c.node_id == node_id)).first() is None:
                raise StorageError(f"run {run_id} has no node {node_id}", field="node")
            key = (S.stars.c.run_id == run_id) & (S.stars.c.node_id == node_id)
            values["updated_at"] = time.time()
            if conn.execute(sa.update(S.stars).where(key).values(**values)).rowcount == 0:
                row = dict(run_id=run_id, node_id=node_id, starred=False, note="", case_kind=None)
                row.update(values)
                conn.execute(sa.insert(S.stars), [row])

    def list_stars(self, run_id: str | None = None, starred_only: bool = False) -> list[dict[str, Any]]:
        q = sa.select(S.stars).order_by(S.stars.c.updated_at.desc())
        if run_id is not None:
            q = q.where(S.stars.c.run_id == run_id)
        if starred_only:
            q = q.where(S.stars.c.starred.is_(True))
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(q)]

    def get_star(self, run_id: str, node_id: int = S.RUN_LEVEL) -> dict[str, Any] | None:
        with self.engine.connect() as conn:
            r = conn.execute(sa.select(S.stars).where(S.stars.c.run_id == run_id,
                                                      S.stars.c.node_id == int(node_id))).first()
        return dict(r._mapping) if r else None

    # ------------------------------------------------------------------ training curves
    def append_curve(self, name: str, row: dict[str, Any], step: int | None = None) -> None:
        """Add one point to a named training curve (step defaults to row['round'], else the next index)."""
        with self.engine.begin() as conn:
            if step is None:
                step = row.get("round")
            if step is None:
                last = conn.execute(sa.select(sa.func.max(S.curves.c.step)).where(S.curves.c.name == name)).scalar()
                step = 0 if last is None else int(last) + 1
            conn.execute(sa.delete(S.curves).where(S.curves.c.name == name, S.curves.c.step == int(step)))
            conn.execute(sa.insert(S.curves), [{"name": name, "step": int(step), "data": row, "written_at": time.time()}])

    def get_curve(self, name: str) -> list[dict[str, Any]]:
        q = sa.select(S.curves.c.step, S.curves.c.data).where(S.curves.c.name == name).order_by(S.curves.c.step)
        with self.engine.connect() as conn:
            return [{"step": r.step, **r.data} for r in conn.execute(q)]

    def list_curves(self) -> list[str]:
        with self.engine.connect() as conn:
            return [r[0] for r in conn.execute(sa.select(S.curves.c.name).distinct().order_by(S.curves.c.name))]

    # ------------------------------------------------------------------ reading
    def list_runs(self, method: str | None = None, problem_id: str | None = None, status: str | None = None,
                  limit: int = 200, offset: int = 0, correct: bool | None = None) -> list[dict[str, Any]]:
        """Newest first. `status`/`method`/`problem_id` filter by equality; `correct` by outcome."""
        q = sa.select(S.runs).order_by(S.runs.c.started_at.desc(), S.runs.c.run_id).limit(int(limit)).offset(int(offset))
        if method:
            q = q.where(S.runs.c.method == method)
        if problem_id:
            q = q.where(S.runs.c.problem_id == problem_id)
        if status:
            q = q.where(S.runs.c.status == status)
        if correct is not None:
            q = q.where(S.runs.c.correct.is_(bool(correct)))
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(q)]

    def get_run(self, run_id: str) -> dict[str, Any]:
        with self.engine.connect() as conn:
            r = conn.execute(sa.select(S.runs).where(S.runs.c.run_id == run_id)).first()
        if r is None:
            raise StorageError(f"no run {run_id}", field="run")
        return dict(r._mapping)

    def find_run(self, prefix: str) -> dict[str, Any]:
        """A run by its id or a unique prefix of it (people paste shortened ids)."""
        prefix = (prefix or "").strip()
        if not prefix:
            raise StorageError("empty run id; pick a run from the list", field="run")
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(S.runs).where(S.runs.c.run_id.startswith(prefix, autoescape=True)).limit(2)).all()
        if not rows:
            raise StorageError(f"no run {prefix}", field="run")
        if len(rows) > 1:
            raise StorageError(f"run id prefix {prefix!r} is ambiguous; give more characters", field="run")
        return dict(rows[0]._mapping)

    def get_nodes(self, run_id: str, since_iter: int | None = None) -> list[dict[str, Any]]:
        """Node snapshots by id, keyed like uats_core.tree.Node.record() plus node_id (= id), k, updated_iter.
        since_iter: only nodes whose latest snapshot came at or after that iteration (live polling)."""
        q = sa.select(S.nodes).where(S.nodes.c.run_id == run_id).order_by(S.nodes.c.node_id)
        if since_iter is not None:
            q = q.where(S.nodes.c.updated_iter >= int(since_iter))
        with self.engine.connect() as conn:
            out = [_node_dict(r._mapping) for r in conn.execute(q)]
        if not out and since_iter is None:
            self.get_run(run_id)  # a run without nodes yet is fine; a missing run is an error
        return out

    def get_iterations(self, run_id: str) -> list[dict[str, Any]]:
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(S.iterations).where(S.iterations.c.run_id == run_id)
                                .order_by(S.iterations.c.iteration)).all()
        return [dict(r._mapping) for r in rows]

    def get_node_history(self, run_id: str) -> list[dict[str, Any]]:
        """Per (iteration, node) snapshots of the changing fields, ordered by iteration then node."""
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(S.node_history).where(S.node_history.c.run_id == run_id)
                                .order_by(S.node_history.c.iteration, S.node_history.c.node_id)).all()
        return [dict(r._mapping) for r in rows]

    def run_version(self, run_id: str) -> tuple[str, int, int, float, bool]:
        """(status, iterations, n_nodes, updated_at, paused): cheap to poll; redraw only when it changes."""
        with self.engine.connect() as conn:
            r = conn.execute(sa.select(S.runs.c.status, S.runs.c.iterations, S.runs.c.n_nodes, S.runs.c.updated_at,
                                       S.runs.c.paused).where(S.runs.c.run_id == run_id)).first()
        if r is None:
            raise StorageError(f"no run {run_id}", field="run")
        return (r.status, int(r.iterations), int(r.n_nodes), float(r.updated_at or 0.0), bool(r.paused))

    def distinct_values(self, column: str) -> list[str]:
        """Distinct values of runs.method / runs.problem_id / runs.status, for filter dropdowns."""
        if column not in ("method", "problem_id", "status"):
            raise StorageError(f"cannot list values of {column!r}", field="column")
        col = S.runs.c[column]
        with self.engine.connect() as conn:
            return [v for (v,) in conn.execute(sa.select(col).distinct().order_by(col)) if v is not None]


class RunRecorder:
    """Consumes one run's events in order. NodesUpdated snapshots are buffered (latest per node wins) and
    written with their IterationEnded in one transaction; RunEnded flushes what is left, so a failed or
    cancelled run keeps every node the search produced."""

    def __init__(self, store: RunStore) -> None:
        self.store = store
        self.run_id: str | None = None
        self._nodes: dict[int, dict[str, Any]] = {}
        self._history: dict[tuple[int, int], dict[str, Any]] = {}
        self._seen: set[int] = set()
        self._ended = False

    def __call__(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            if self.run_id is not None:
                raise RuntimeError(f"this subscriber already records run {self.run_id}; make one per run")
            self.store._start_run(event)
            self.run_id = event.run_id
            return
        if self.run_id is None:
            raise RuntimeError(f"{type(event).__name__} before RunStarted: events out of order")
        if self._ended:
            raise RuntimeError(f"{type(event).__name__} after RunEnded for run {self.run_id}")
        if isinstance(event, NodesUpdated):
            for rec in event.nodes:
                row = _node_row(self.run_id, rec, event.iteration)
                self._nodes[row["node_id"]] = row
                self._history[(event.iteration, row["node_id"])] = _history_row(row, event.iteration)
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
        self.store._write_iteration(self.run_id, list(self._nodes.values()), list(self._history.values()), it,
                                    len(self._seen), end)
        self._nodes.clear()
        self._history.clear()


# ---------------------------------------------------------------------- helpers
_NODE_COLS = {c.name for c in S.nodes.columns}


def _node_row(run_id: str, rec: dict[str, Any], iteration: int) -> dict[str, Any]:
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
    for f, default in (("num_tokens", 0), ("created_iter", 0), ("initial_passes", 0), ("extra_passes", 0),
                       ("children_granted", 0), ("step", ""), ("status", "active")):
        if row[f] is None:
            row[f] = default
    for f in ("mean", "var", "ucb", "uniqueness", "logit_mean", "logit_var"):
        if row[f] is not None:
            row[f] = float(row[f])
    extra = {k: v for k, v in rec.items() if k not in _NODE_COLS and k not in ("id", "k")}
    row["extra"] = extra or None
    return row


def _history_row(row: dict[str, Any], iteration: int) -> dict[str, Any]:
    return {"run_id": row["run_id"], "iteration": int(iteration), "node_id": row["node_id"], "k": row["k"],
            "mean": row["mean"], "var": row["var"], "ucb": row["ucb"], "ood": row["ood"], "status": row["status"],
            "extra_passes": row["extra_passes"], "children_granted": row["children_granted"],
            "logit_mean": row["logit_mean"], "logit_var": row["logit_var"]}


def _node_dict(m: Any) -> dict[str, Any]:
    d = dict(m)
    d["id"] = d["node_id"]  # Node.record()'s key; node_id (the column name) stays too, both are read
    d.pop("run_id", None)
    extra = d.pop("extra", None)
    if extra:
        for k, v in extra.items():
            d.setdefault(k, v)
    if d.get("mc_scores") is None:
        d["mc_scores"] = []
    return d


_FAST_SQLITE = True  # tests switch it off to compare with SQLAlchemy's own statement
_UPSERTS: dict[tuple[str, str, tuple[str, ...]], Any] = {}


def _upsert_statement(dialect: str, table: sa.Table, keys: tuple[str, ...]) -> Any:
    """INSERT ... ON CONFLICT DO UPDATE, built once per (dialect, table, keys): building the SET clause
    from `excluded` cost more than executing it on a small tree (profiled: a third of the run log's time)."""
    key = (dialect, table.name, keys)
    stmt = _UPSERTS.get(key)
    if stmt is None:
        if dialect == "sqlite":
            from sqlalchemy.dialects.sqlite import insert as dialect_insert
        else:
            from sqlalchemy.dialects.postgresql import insert as dialect_insert
        ins = dialect_insert(table)
        stmt = ins.on_conflict_do_update(index_elements=list(keys),
                                         set_={c.name: ins.excluded[c.name] for c in table.columns if c.name not in keys})
        _UPSERTS[key] = stmt
    return stmt


def _bind_converter(col: sa.Column) -> Callable[[Any], Any]:
    """What SQLAlchemy's bind processing does for this column on SQLite, without its per-row overhead:
    JSON as json.dumps text (None as 'null', as sa.JSON stores it), booleans as 0/1."""
    if isinstance(col.type, sa.JSON):
        return json.dumps
    if isinstance(col.type, sa.Boolean):
        return lambda v: None if v is None else int(bool(v))
    if isinstance(col.type, sa.Integer):
        return lambda v: None if v is None else int(v)
    if isinstance(col.type, sa.Float):
        return lambda v: None if v is None else float(v)
    return lambda v: v


_SQLITE_UPSERTS: dict[tuple[str, tuple[str, ...], tuple[str, ...]], tuple[str, list[Callable[[Any], Any]]]] = {}


def _sqlite_upsert(conn: Connection, table: sa.Table, rows: Sequence[dict[str, Any]], keys: tuple[str, ...]) -> None:
    """The run log's hot path (every node of every iteration): one prepared INSERT ... ON CONFLICT with
    plain tuples. SQLAlchemy's per-row parameter processing was over half the log's cost on a fast search;
    tests/test_storage.py checks this stores byte for byte what the SQLAlchemy statement stores."""
    cols = tuple(rows[0])
    key = (table.name, cols, keys)
    prepared = _SQLITE_UPSERTS.get(key)
    if prepared is None:
        names = ", ".join(f'"{c}"' for c in cols)
        sets = ", ".join(f'"{c}" = excluded."{c}"' for c in cols if c not in keys)
        conflict = ", ".join(f'"{k}"' for k in keys)
        sql = (f'INSERT INTO "{table.name}" ({names}) VALUES ({", ".join("?" * len(cols))}) '
               f"ON CONFLICT ({conflict}) DO " + (f"UPDATE SET {sets}" if sets else "NOTHING"))
        prepared = (sql, [_bind_converter(table.c[c]) for c in cols])
        _SQLITE_UPSERTS[key] = prepared
    sql, convert = prepared
    get = operator.itemgetter(*cols)
    params = ([(convert[0](get(r)),) for r in rows] if len(cols) == 1
              else [tuple([f(v) for f, v in zip(convert, get(r))]) for r in rows])
    _driver_execute(conn, sql, params, many=True)


def _driver_execute(conn: Connection, sql: str, params: Any, many: bool = False) -> None:
    """Run one statement on the connection's own sqlite3 connection, inside its transaction: the run log
    writes a few statements per iteration, and SQLAlchemy's execution context around each cost as much as
    SQLite did."""
    cur = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
    try:
        (cur.executemany if many else cur.execute)(sql, params)
    finally:
        cur.close()


_SQLITE_RUN_UPDATES: dict[tuple[str, ...], tuple[str, list[Callable[[Any], Any]]]] = {}


def _update_run(conn: Connection, run_id: str, values: dict[str, Any]) -> None:
    """UPDATE runs SET ... for one run: each iteration's progress and the final outcome. On SQLite a prepared
    statement with our own converters, as for the node upserts (SQLAlchemy's statement coercion was a fifth
    of the log's time on a fast search); elsewhere SQLAlchemy's statement."""
    if conn.dialect.name != "sqlite" or not _FAST_SQLITE:
        conn.execute(sa.update(S.runs).where(S.runs.c.run_id == run_id).values(**values))
        return
    cols = tuple(values)
    prepared = _SQLITE_RUN_UPDATES.get(cols)
    if prepared is None:
        sets = ", ".join(f'"{c}" = ?' for c in cols)
        prepared = (f'UPDATE runs SET {sets} WHERE run_id = ?', [_bind_converter(S.runs.c[c]) for c in cols])
        _SQLITE_RUN_UPDATES[cols] = prepared
    sql, convert = prepared
    _driver_execute(conn, sql, tuple(f(values[c]) for f, c in zip(convert, cols)) + (run_id,))


def _upsert(conn: Connection, table: sa.Table, rows: Sequence[dict[str, Any]], keys: Iterable[str]) -> None:
    if not rows:
        return
    keys = tuple(keys)
    name = conn.dialect.name
    if name == "sqlite" and _FAST_SQLITE:
        _sqlite_upsert(conn, table, rows, keys)
        return
    if name in ("sqlite", "postgresql"):
        conn.execute(_upsert_statement(name, table, keys), list(rows))
        return
    # Portable fallback: same transaction, so readers never see the gap between delete and insert.
    cond = sa.and_(*[table.c[k] == sa.bindparam(f"k_{k}") for k in keys])
    conn.execute(sa.delete(table).where(cond), [{f"k_{k}": r[k] for k in keys} for r in rows])
    conn.execute(sa.insert(table), list(rows))
