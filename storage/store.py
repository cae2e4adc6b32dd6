"""The run log on any SQLAlchemy database (SQLite by default): RunStore reads runs back for the CLI and app,
registers and controls them; a search's events are written by the recorder (recorder.py).

RunStore is assembled by role: the run log's reads here (opening is connection.py's), run control
(control.py), stars and notes (stars.py), training curves (curves.py).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from uats_core.events import Event
from uats_core.status import RunStatus

from . import schema as S
from .bounds import check_row
from .connection import (
    SQLITE_BUSY_TIMEOUT_MS,
    StorageError,
    display,
    open_engine,
    open_read_only_engine,
    parse_location,
    pid_alive,
    this_process,
)
from .control import RunControl
from .curves import TrainingCurves
from .fastread import node_dict
from .recorder import RunRecorder
from .stars import StarsAndNotes

__all__ = [
    "RunStore",
    "RunVersion",
    "open_read_only",
    "RunRecorder",
    "StorageError",
    "pid_alive",
    "SQLITE_BUSY_TIMEOUT_MS",
    "run_version_of",
]

RunVersion = tuple[str, int, int, float, bool]  # (status, iterations, n_nodes, updated_at, paused)


def run_version_of(run: Mapping[Any, Any]) -> RunVersion:
    """A runs row's version (RunStore.run_version): what changes whenever the run's tree, status or pause does."""
    return (
        run["status"],
        int(run["iterations"]),
        int(run["n_nodes"]),
        float(run["updated_at"] or 0.0),
        bool(run["paused"]),
    )


log = logging.getLogger(__name__)


class RunStore(RunControl, StarsAndNotes, TrainingCurves):
    """A run log at `url_or_path`: a bare path is a SQLite file; anything with '://' is an SQLAlchemy URL.

    Creates the tables if needed. Raises StorageError(field="db") naming the URL and the fix when the
    database cannot be opened, and then leaves no file or folder behind that it created itself.
    read_only=True: an existing SQLite run log, opened so that nothing can write (connection.open_read_only_engine)."""

    def __init__(self, url_or_path: str | os.PathLike[str], *, read_only: bool = False) -> None:
        spec = os.fspath(url_or_path)
        if not isinstance(spec, str) or not spec.strip():
            raise StorageError("empty database location; give a file path (runs/uats.db) or an SQLAlchemy URL")
        self.url = parse_location(spec.strip())
        self.engine = open_read_only_engine(self.url) if read_only else open_engine(self.url)

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RunStore({display(self.url)!r})"

    @property
    def location(self) -> str:
        """The URL to hand to another process (a worker opens its own RunStore on it)."""
        return self.url.render_as_string(hide_password=False)

    # ------------------------------------------------------------------ writing
    def subscriber(self) -> Callable[[Event], None]:
        """A fresh event consumer for one run: pass it to run_search(subscribers=[...])."""
        return RunRecorder(self.engine)

    def register_run(
        self,
        run_id: str,
        *,
        method: str,
        problem_id: str,
        question: str,
        gold_answer: str | None = None,
        seed: int | None = None,
        config: dict[str, Any] | None = None,
        policy: str | None = None,
        prm: str | None = None,
        label: str | None = None,
        paused: bool = False,
        owner: str | None = None,
    ) -> None:
        """Insert a 'queued' row before a worker starts, so a front end can list, follow and cancel the run
        at once; RunStarted from the worker then fills the rest in. paused=True starts it in step mode: the
        worker loads its models, writes the root, and waits for `step_run` before iteration 1. `owner`: who
        started it (ui/access.py). The run is recorded as this process's (`server`): once that is gone,
        mark_dead_workers ends the run. StorageError naming the field when a value does not fit the run log."""
        now = time.time()
        row = dict(
            run_id=run_id,
            method=method,
            problem_id=problem_id,
            question=question,
            gold_answer=gold_answer,
            seed=seed,
            config=config,
            policy=policy,
            prm=prm,
            status=RunStatus.QUEUED,
            cost=0.0,
            iterations=0,
            n_nodes=0,
            label=label,
            started_at=now,
            updated_at=now,
            cancel_requested=False,
            paused=bool(paused),
            step_credits=0,
            owner=owner,
            server=this_process(),
        )
        check_row(S.runs, row)
        with self.engine.begin() as conn:
            conn.execute(sa.insert(S.runs), [row])

    # ------------------------------------------------------------------ reading
    def list_runs(
        self,
        method: str | None = None,
        problem_id: str | None = None,
        status: str | None = None,
        limit: int = 200,
        offset: int = 0,
        correct: bool | None = None,
    ) -> list[dict[str, Any]]:
        """Newest first. `status`/`method`/`problem_id` filter by equality; `correct` by outcome."""
        q = (
            sa.select(S.runs)
            .order_by(S.runs.c.started_at.desc(), S.runs.c.run_id)
            .limit(int(limit))
            .offset(int(offset))
        )
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
            rows = conn.execute(
                sa.select(S.runs).where(S.runs.c.run_id.startswith(prefix, autoescape=True)).limit(2)
            ).all()
        if not rows:
            raise StorageError(f"no run {prefix}", field="run")
        if len(rows) > 1:
            raise StorageError(f"run id prefix {prefix!r} is ambiguous; give more characters", field="run")
        return dict(rows[0]._mapping)

    def get_nodes(self, run_id: str, since_iter: int | None = None) -> list[dict[str, Any]]:
        """Node snapshots by id, keyed like uats_core.tree.Node.record() (the id under `id`) plus k, updated_iter.
        since_iter: only nodes whose latest snapshot came at or after that iteration (live polling)."""
        q = sa.select(S.nodes).where(S.nodes.c.run_id == run_id).order_by(S.nodes.c.node_id)
        if since_iter is not None:
            q = q.where(S.nodes.c.updated_iter >= int(since_iter))
        with self.engine.connect() as conn:
            out = [node_dict(r._mapping) for r in conn.execute(q)]
        if not out and since_iter is None:
            self.get_run(run_id)  # a run without nodes yet is fine; a missing run is an error
        return out

    def get_iterations(self, run_id: str, since_iter: int | None = None) -> list[dict[str, Any]]:
        """The run's iteration rows in order; since_iter: only those at or after that iteration."""
        q = sa.select(S.iterations).where(S.iterations.c.run_id == run_id).order_by(S.iterations.c.iteration)
        if since_iter is not None:
            q = q.where(S.iterations.c.iteration >= int(since_iter))
        with self.engine.connect() as conn:
            rows = conn.execute(q).all()
        return [dict(r._mapping) for r in rows]

    def get_node_history(self, run_id: str, since_iter: int | None = None) -> list[dict[str, Any]]:
        """Per (iteration, node) snapshots of the changing fields, ordered by iteration then node;
        since_iter: only those at or after that iteration (live polling)."""
        q = sa.select(S.node_history).where(S.node_history.c.run_id == run_id)
        if since_iter is not None:
            q = q.where(S.node_history.c.iteration >= int(since_iter))
        with self.engine.connect() as conn:
            rows = conn.execute(q.order_by(S.node_history.c.iteration, S.node_history.c.node_id)).all()
        return [dict(r._mapping) for r in rows]

    def run_version(self, run_id: str) -> RunVersion:
        """(status, iterations, n_nodes, updated_at, paused): cheap to poll; redraw only when it changes."""
        with self.engine.connect() as conn:
            r = conn.execute(
                sa.select(
                    S.runs.c.status, S.runs.c.iterations, S.runs.c.n_nodes, S.runs.c.updated_at, S.runs.c.paused
                ).where(S.runs.c.run_id == run_id)
            ).first()
        if r is None:
            raise StorageError(f"no run {run_id}", field="run")
        return run_version_of(r._mapping)

    def distinct_values(self, column: str) -> list[str]:
        """Distinct values of runs.method / runs.problem_id / runs.status, for filter dropdowns."""
        if column not in ("method", "problem_id", "status"):
            raise StorageError(f"cannot list values of {column!r}", field="column")
        col = S.runs.c[column]
        with self.engine.connect() as conn:
            return [v for (v,) in conn.execute(sa.select(col).distinct().order_by(col)) if v is not None]


def open_read_only(path: str | Path) -> RunStore:
    """An existing SQLite run log, read-only; StorageError(field='db') when it is missing or not a run log."""
    return RunStore(str(Path(path).absolute()), read_only=True)
