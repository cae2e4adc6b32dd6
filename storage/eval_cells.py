"""The ledger (CellLedger) through which the evaluation harness (uats.eval) claims, finishes and resumes cells, in the
evaluation's own table, `eval_cells`: defined with the run log's other tables (schema.py) and made, or brought up to
date, with them when the run log is opened (migrations.py).

Why a table of our own rather than a tag inside each run's config: `runs.config` is
`SearchConfig.to_dict()` and the app rebuilds a SearchConfig from it (unknown keys are rejected), so a cell
key there would break "open this run in the app and rerun it". A table keyed by the cell key also makes
resumption one indexed lookup per cell, keeps the attempt count and which worker holds a cell, and lets
reports join cells to runs without parsing JSON. Every attempt is still an ordinary run in `runs` (its
`label` column reads "eval <cell key>"), so any point of any curve opens in the app.

States: running (a worker claimed it and is searching), finished, failed (the search raised, was
cancelled, or its worker died). A rerun skips finished cells, redoes failed ones, and redoes running ones
whose worker is gone (dead process on this host, or no heartbeat for `stale_after_s` from another host).
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from uats_core.status import RunStatus

from . import schema as S
from .connection import pid_alive  # one liveness check for the app and the eval harness
from .schema import eval_cells  # noqa: F401 - its home is schema.py; the ledger's readers import it from here

if TYPE_CHECKING:
    from uats_core.eval.grid import Cell

    from .store import RunStore

log = logging.getLogger(__name__)

_CHUNK = 500  # keys per IN (...) query: SQLite's bound-parameter limit is 32766, PostgreSQL's 65535


@dataclass(frozen=True)
class CellState:
    key: str
    status: str
    run_id: str | None
    attempts: int
    worker_pid: int | None
    worker_host: str | None
    heartbeat: float | None  # the run's last write (runs.updated_at), else the claim time
    policy: str
    prm: str


@dataclass
class Plan:
    todo: list[Any]  # WorkItems to run
    done: int  # finished cells skipped
    busy: int  # cells a live worker holds right now
    given_up: int  # cells failed max_attempts times
    orphans: list[str]  # running cells whose worker died: marked failed, and in `todo`


class CellLedger:
    def __init__(self, store: RunStore) -> None:
        self.store = store
        self.engine = store.engine
        self.host = socket.gethostname()

    # -------------------------------------------------------------------------------- reading
    def states(self, keys: Iterable[str]) -> dict[str, CellState]:
        keys = list(keys)
        out: dict[str, CellState] = {}
        c, r = eval_cells.c, S.runs.c
        for i in range(0, len(keys), _CHUNK):
            chunk = keys[i : i + _CHUNK]
            q = (
                sa.select(
                    c.cell_key,
                    c.status,
                    c.run_id,
                    c.attempts,
                    c.worker_pid,
                    c.worker_host,
                    c.started_at,
                    c.policy,
                    c.prm,
                    r.updated_at,
                    r.status.label("run_status"),
                )
                .select_from(eval_cells.outerjoin(S.runs, r.run_id == c.run_id))
                .where(c.cell_key.in_(chunk))
            )
            with self.engine.connect() as conn:
                for row in conn.execute(q):
                    status = row.status
                    if status == RunStatus.FINISHED and row.run_status != RunStatus.FINISHED:
                        status = RunStatus.FAILED  # the run row was deleted or never ended: not a result
                    out[row.cell_key] = CellState(
                        row.cell_key,
                        status,
                        row.run_id,
                        int(row.attempts or 0),
                        row.worker_pid,
                        row.worker_host,
                        row.updated_at if row.updated_at is not None else row.started_at,
                        row.policy,
                        row.prm,
                    )
        return out

    def worker_alive(self, st: CellState, stale_after_s: float) -> bool:
        if st.worker_host == self.host and st.worker_pid is not None:
            return st.worker_pid != os.getpid() and pid_alive(st.worker_pid)
        # Another machine: we cannot see its processes; trust the run's heartbeat.
        return st.heartbeat is not None and time.time() - st.heartbeat < stale_after_s

    def plan(
        self, items: Sequence[Any], *, max_attempts: int = 3, stale_after_s: float = 900.0, write: bool = True
    ) -> Plan:
        """Which of `items` (WorkItems) still need running. Orphaned cells are marked failed here (and their
        runs too), so the run log never shows a dead worker's run as 'running' forever; write=False (a dry
        run) only counts them."""
        states = self.states(it.cell.key for it in items)
        todo: list[Any] = []
        done = busy = given_up = 0
        orphans: list[str] = []
        for it in items:
            st = states.get(it.cell.key)
            if st is None:
                todo.append(it)
                continue
            if (st.policy, st.prm) != (it.cell.policy, it.cell.prm):
                from uats_core.errors import ConfigError

                raise ConfigError(
                    "pairs",
                    f"pair {it.cell.pair} was run in this database with policy {st.policy} and "
                    f"PRM {st.prm}; now it names {it.cell.policy} and {it.cell.prm}. Use another "
                    "pair name or another --db",
                )
            if st.status == RunStatus.FINISHED:
                done += 1
            elif st.status == RunStatus.RUNNING and self.worker_alive(st, stale_after_s):
                busy += 1
                if busy == 1:
                    log.warning(
                        "cell %s is being run by pid %s on %s; leaving it (and any other live worker's cells) alone",
                        st.key,
                        st.worker_pid,
                        st.worker_host,
                    )
            else:
                if st.status == RunStatus.RUNNING and write:
                    why = (
                        f"eval worker pid {st.worker_pid} on {st.worker_host} died (or went silent) "
                        "before the run ended"
                    )
                    if st.run_id:
                        self.store.mark_failed(st.run_id, why)
                    self._set(
                        st.key, status=RunStatus.FAILED, error=why, ended_at=time.time(), expect=RunStatus.RUNNING
                    )
                if st.status == RunStatus.RUNNING:
                    orphans.append(st.key)
                if st.attempts >= max_attempts:
                    given_up += 1
                    if given_up == 1:
                        log.warning(
                            "cell %s failed %d times; skipping it and any other such cell (raise --max-attempts "
                            "to retry)",
                            st.key,
                            st.attempts,
                        )
                    continue
                todo.append(it)
        return Plan(todo, done, busy, given_up, orphans)

    # -------------------------------------------------------------------------------- writing
    def claim(self, cell: Cell, run_id: str, batched: bool) -> bool:
        """Mark the cell running under `run_id` for this process. False when another worker holds it or it
        is already finished (two evaluations on one database never run the same cell twice at once)."""
        now = time.time()
        values = dict(
            status=RunStatus.RUNNING,
            run_id=run_id,
            batched=batched,
            worker_pid=os.getpid(),
            worker_host=self.host,
            started_at=now,
            ended_at=None,
            wall_s=None,
            error=None,
        )
        c = eval_cells.c
        with self.engine.begin() as conn:
            res = conn.execute(
                sa.update(eval_cells)
                .where(c.cell_key == cell.key, c.status == RunStatus.FAILED)
                .values(attempts=c.attempts + 1, **values)
            )
            if res.rowcount:
                return True
        try:
            with self.engine.begin() as conn:
                conn.execute(
                    sa.insert(eval_cells),
                    [
                        dict(
                            cell_key=cell.key,
                            pair=cell.pair,
                            policy=cell.policy,
                            prm=cell.prm,
                            dataset=cell.dataset,
                            problem_id=cell.problem_id,
                            method=cell.method,
                            budget=cell.budget,
                            seed=cell.seed,
                            variant=cell.variant,
                            overrides=dict(cell.overrides) or None,
                            attempts=1,
                            **values,
                        )
                    ],
                )
            return True
        except IntegrityError:
            return False  # the row exists and is running or finished: someone else has it

    def finish(self, key: str, run_id: str, status: str, wall_s: float, error: str | None = None) -> None:
        self._set(key, status=status, wall_s=wall_s, error=error, ended_at=time.time(), run_id_is=run_id)

    def _set(self, key: str, *, expect: str | None = None, run_id_is: str | None = None, **values: Any) -> None:
        c = eval_cells.c
        cond = [c.cell_key == key]
        if expect is not None:
            cond.append(c.status == expect)
        if run_id_is is not None:
            cond.append(c.run_id == run_id_is)  # a stale worker never overwrites a newer attempt's row
        with self.engine.begin() as conn:
            conn.execute(sa.update(eval_cells).where(*cond).values(**values))

    def release(self, workers: Iterable[tuple[str, int]], why: str) -> list[str]:
        """Close as failed (their runs too) the cells that these (host, pid) workers still hold: a driver that
        stops its Ray actors mid-cell says so at once, rather than leaving them 'running' until their heartbeat
        goes stale (`stale_after_s`) on a machine that cannot see those processes. The keys closed."""
        workers = {(str(h), int(p)) for h, p in workers}
        if not workers:
            return []
        c = eval_cells.c
        with self.engine.connect() as conn:
            rows = conn.execute(
                sa.select(c.cell_key, c.run_id, c.worker_host, c.worker_pid).where(
                    c.status == RunStatus.RUNNING, c.worker_pid.in_(sorted({p for _, p in workers}))
                )
            ).all()
        closed = []
        for row in rows:
            if (row.worker_host, row.worker_pid) not in workers:
                continue
            msg = (
                f"eval worker pid {row.worker_pid} on {row.worker_host} died or was stopped before the run ended: {why}"
            )
            if row.run_id:
                self.store.mark_failed(row.run_id, msg)
            self._set(
                row.cell_key,
                status=RunStatus.FAILED,
                error=msg,
                ended_at=time.time(),
                expect=RunStatus.RUNNING,
                run_id_is=row.run_id,
            )
            closed.append(row.cell_key)
        return closed

    # -------------------------------------------------------------------------------- summaries
    def counts(self) -> dict[str, int]:
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(eval_cells.c.status, sa.func.count()).group_by(eval_cells.c.status)).all()
        return {s: int(n) for s, n in rows}
