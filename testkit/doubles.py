"""Test doubles for the allocation, engine-logic and worker-pool unit tests, and the app's worker pool (never used
outside tests); `record` and `record_synthetic` write a run's events into a run log as a search's recorder does.

The end-to-end tests use real models; these exist so the search maths can be checked on inputs
whose every number is known, and so a full disk or a cancel can be made to happen at a known point."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from uats_core.events import Event
from uats_core.problems import Problem
from uats_core.protocols import FinishReason, StepOutput, Trace

# The problem the engine tests search with the doubles (ScriptedPolicyDouble answers 7, 8 or 9; 8 is right).
DOUBLES_PROBLEM = Problem("double-1", "What is 4 + 4?", "8")


def unit(*parts: object) -> float:
    h = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(h[:8], "big") / 2**64


class ScriptedPolicyDouble:
    """Writes `depth` steps then a boxed answer; the answer depends on the trace so answers vary."""

    name = "scripted-policy-double"

    def __init__(self, depth: int = 3, answers: Sequence[str] = ("7", "8", "9")) -> None:
        self.depth = depth
        self.answers = list(answers)
        self.calls = 0

    def generate_steps(self, traces: Sequence[Trace]) -> list[StepOutput]:
        self.calls += 1
        outs = []
        for i, tr in enumerate(traces):
            d = len(tr.steps)
            if d + 1 >= self.depth:
                a = self.answers[int(unit(tr.text, i, self.calls) * len(self.answers))]
                outs.append(StepOutput(f"so the answer is \\boxed{{{a}}}", 6, FinishReason.EOS))
            else:
                outs.append(
                    StepOutput(
                        f"step {d} variant {int(unit(tr.text, i, self.calls) * 1000)}\n\n", 4, FinishReason.DELIMITER
                    )
                )
        return outs


class HashedPRMDouble:
    """Scores from a hash of the trace; MC passes add noise whose size also depends on the trace."""

    name = "hashed-prm-double"

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)

    def score(self, traces: Sequence[Trace]) -> list[list[float]]:
        return [[unit(t.question, *t.steps[: i + 1]) for i in range(len(t.steps))] for t in traces]

    def mc_scores(self, traces: Sequence[Trace], k: int) -> np.ndarray:
        base = np.array([s[-1] for s in self.score(traces)])
        spread = np.array([0.2 * unit("spread", t.text) for t in traces])
        return np.clip(base[:, None] + spread[:, None] * self.rng.standard_normal((len(traces), k)), 0, 1)


class GlobalRNGPRMDouble(HashedPRMDouble):
    """Like HashedPRMDouble, but its MC noise comes from numpy's global generator, as dropout masks come from
    torch's: only the run's own seeding makes two runs repeat."""

    def mc_scores(self, traces: Sequence[Trace], k: int) -> np.ndarray:
        base = np.array([s[-1] for s in self.score(traces)])
        spread = np.array([0.2 * unit("spread", t.text) for t in traces])
        return np.clip(base[:, None] + spread[:, None] * np.random.standard_normal((len(traces), k)), 0, 1)


class WorkerPoolDouble:
    """Stands in for ui.jobs.pool.WorkerPool in app tests that serve the page: a submitted run is registered and
    recorded, never started (no models load), so it stays 'queued' unless the test writes its events itself."""

    def __init__(self, store: Any = None, **_: Any) -> None:
        self.store = store  # with one, pause and step set the run's flags as the real pool does (no paused-runs limit)
        self.submitted: list[Any] = []

    def submit(self, req: Any, session: str | None = None, register: Any = None, paused: bool = False) -> None:
        if register is not None:
            register()
        self.submitted.append(req)

    def pause_run(self, run_id: str) -> bool:
        return self.store is not None and self.store.pause_run(run_id)

    def step_run(self, run_id: str, steps: int = 1) -> bool:
        return self.store is not None and self.store.step_run(run_id, steps)

    def pump(self) -> list[str]:
        return []

    def active(self) -> list[str]:
        return []

    def queued(self) -> list[str]:
        return []

    def shutdown(self, **_: Any) -> None:
        pass


class DiskFullDouble:
    """Makes a RunStore's writes fail as on a full disk while `full` is set: every INSERT, UPDATE or DELETE
    raises sqlite3.OperationalError('database or disk is full'), as SQLite does when it cannot grow the
    file; reads still work, as they do on a full disk. The store's own error handling sees the real
    exception (storage.connection.disk_full_errors)."""

    def __init__(self, store: Any) -> None:
        import sqlalchemy as sa

        self.full = False
        self.refused = 0
        sa.event.listen(store.engine, "before_cursor_execute", self._before)

    def _before(self, conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        import sqlite3

        if self.full and statement.lstrip().split(None, 1)[0].upper() in ("INSERT", "UPDATE", "DELETE"):
            self.refused += 1
            raise sqlite3.OperationalError("database or disk is full")


class CallbackPRMDouble(HashedPRMDouble):
    """HashedPRMDouble that calls `on_call(n)` before its n-th mc_scores call (n from 1): lets a test act at a
    known point of a job, e.g. ask it to stop during its first batch."""

    def __init__(self, on_call: Callable[[int], None], seed: int = 0) -> None:
        super().__init__(seed)
        self.on_call = on_call
        self.calls = 0

    def mc_scores(self, traces: Sequence[Trace], k: int) -> np.ndarray:
        self.calls += 1
        self.on_call(self.calls)
        return super().mc_scores(traces, k)


def record(store: Any, events: Iterable[Event]) -> None:
    """Write one run's events to `store` (a storage.RunStore) through a fresh recorder, in order, as
    run_search(subscribers=[store.subscriber()]) would."""
    sub = store.subscriber()
    for ev in events:
        sub(ev)


def record_synthetic(store: Any, run_id: str, **options: Any) -> str:
    """Write the synthetic run `run_id` (testkit.synthetic; `options` are synthetic_events's) to `store`;
    returns run_id."""
    from .synthetic import synthetic_events  # the engine's events and config, loaded only where used

    record(store, synthetic_events(run_id, **options))
    return run_id


def stored_nodes(db: Any) -> list[dict[str, Any]]:
    """The nodes below the root a search wrote into the SQLite run log at `db`, as rows of its `nodes` table."""
    import sqlite3

    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in con.execute("select * from nodes where node_id > 0 order by node_id")]
    finally:
        con.close()
