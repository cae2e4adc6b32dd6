"""Searches and shadow scoring run as jobs in worker processes (multiprocessing, spawn) that write to the
database; the page only reads. So a closed tab, a slow tick or a second user never stops or blocks a job,
and a worker that dies is noticed (its process is gone) and its job marked failed.

What a client can make the pool do is bounded: at most `max_workers` jobs compute at once, at most
`max_paused` paused runs hold a worker besides them (a paused run does not count against `max_workers`, so
it never blocks queued runs, and ends after the workers' pause timeout), and at most `max_queued` jobs wait,
`max_queued_per_session` of them per user (per browser session without a login: session_of). One thread owns
the pool: it starts workers and jobs; the page only submits and reads."""

from __future__ import annotations

import logging
import multiprocessing as mp
import os
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from storage import RunStore
from uats_core.config import ConfigError
from uats_core.http_client import policy_label
from uats_core.request import CheckedSearch, SearchRequest
from uats_core.status import RunStatus

from .pool_state import PoolState, Slot, Unrecorded
from .warm import STOP, Warm, execute, load_pair, model_key

log = logging.getLogger(__name__)

PAIR_WORKERS = 2  # the Compare tab's H-UATS vs REBASE pair runs side by side: pre-warm that many workers
# what a queued run's row names the embedded arithmetic models by (RunStarted then writes the loaded model's name)
QUEUED_POLICY, QUEUED_PRM = "embedded arith policy", "embedded arith PRM"


class RunRowJob:
    """The part of the job interface a run's row answers (its status, cancel flag and end): a search
    (RunRequest) and an import (ui.jobs.import_job.ImportRequest) are jobs whose row is a run's."""

    run_id: str

    @property
    def job_id(self) -> str:
        return self.run_id

    def status(self, store: RunStore) -> str:
        return str(store.get_run(self.run_id)["status"])

    def cancel_requested(self, store: RunStore) -> bool:
        return store.cancel_requested(self.run_id)

    def end(self, store: RunStore, reason: str, status: str = RunStatus.FAILED) -> bool:
        return store.mark_failed(self.run_id, reason, status=status)

    def request_cancel(self, store: RunStore) -> bool:
        return store.request_cancel(self.run_id)


@dataclass(frozen=True)
class RunRequest(RunRowJob):
    """A search as a job of the pool: the checked search (uats_core.request.validate_request ran once, where the
    run was submitted) and where its run goes. Picklable: spawn sends it to a fresh interpreter."""

    run_id: str
    db: str  # SQLAlchemy URL of the run log
    search: CheckedSearch

    @property
    def request(self) -> SearchRequest:
        """The search as asked for: its problem, models and their options."""
        return self.search.request

    def register(
        self, store: RunStore, label: str | None = None, paused: bool = False, owner: str | None = None
    ) -> None:
        """Write the run's 'queued' row (store.register_run) from what the request holds."""
        req = self.request
        store.register_run(
            self.run_id,
            **self.search.run_fields(),
            policy=policy_label(req.policy, req.policy_opts) or QUEUED_POLICY,
            prm=req.prm or QUEUED_PRM,
            label=label,
            paused=paused,
            owner=owner,
        )

    # -- the job interface the pool and the worker use (ui.jobs.shadow_job.ShadowRequest has the same) -----
    def models_key(self) -> str:
        return model_key(self)

    def load_models(self) -> tuple[Any, Any]:
        return load_pair(self)

    def run(self, cache: Any, store: RunStore, pause_timeout_s: float | None = None) -> Unrecorded | None:
        return execute(self, cache, store, pause_timeout_s)

    def paused(self, store: RunStore) -> bool:
        return store.is_paused(self.run_id)

    def waiting_paused(self, store: RunStore) -> bool:
        return store.waiting_paused(self.run_id)


class QueueFull(ConfigError):
    """A submission over one of the pool's limits; the message names the limit and its flag."""


@dataclass(frozen=True)
class PoolLimits:
    max_workers: int = 2  # jobs computing at once (--workers)
    max_paused: int = 2  # paused runs holding a worker besides those (--max-paused)
    max_queued: int = 16  # jobs waiting on this server (--max-queued)
    max_queued_per_session: int = 4  # of them, per user or login-less session (--max-queued-per-session)
    pause_timeout_s: float | None = 600.0  # a run paused this long without a step ends (--pause-timeout-s)


class WorkerPool(PoolState):
    """Runs jobs in warm worker processes (ui.jobs.warm: each keeps its last models loaded between jobs), queues
    the rest in the database as 'queued', and notices a worker that died (its job is marked failed).
    `prewarm`: a RunRequest whose models the workers of a compare pair load at once, so even the first run
    (or pair) starts warm."""

    def __init__(
        self,
        store: RunStore,
        max_workers: int = 2,
        poll_s: float = 1.0,
        prewarm: RunRequest | None = None,
        limits: PoolLimits | None = None,
        drive: bool = True,
    ) -> None:
        """drive=False: no thread of its own; the caller (a test) calls pump()."""
        limits = limits or PoolLimits()
        self.limits = PoolLimits(**{**asdict(limits), "max_workers": max(1, int(max_workers))})
        super().__init__(store)
        self.max_workers = self.limits.max_workers
        # the cores shared out between the workers, one kept for the app's server (and, on a laptop, its browser):
        # workers on every core fought a compare pair's two searches and the page for them (measured: docs/log.md)
        self.torch_threads = max(1, ((os.cpu_count() or 1) - 1) // self.max_workers)
        self._ctx = mp.get_context("spawn")
        self._next_slot = 0
        self._outbox = self._ctx.Queue()
        self._pending: deque[Any] = deque()
        self._sessions: dict[str, str] = {}  # job id -> who queued it (session_of: a user, or a login-less session)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._released = threading.Event()  # the pool's thread may end (its workers' kernel guard goes with it)
        self._ticked_last = threading.Event()
        # Started from the pool's thread (ui.jobs.lifeline: Linux kills a worker when the thread that started it
        # ends), which also pre-warms, so spawning the interpreter never holds up the app's start.
        self._thread = threading.Thread(target=self._loop, args=(poll_s, prewarm), name="uats-worker-pool", daemon=True)
        if drive:
            self._thread.start()
        else:
            self._ticked_last.set()

    # ------------------------------------------------------------------ workers
    def _spawn(self) -> Slot:
        from .warm import warm_worker_main

        sid = self._next_slot
        self._next_slot += 1
        inbox = self._ctx.Queue()
        proc = self._ctx.Process(
            target=warm_worker_main,
            name=f"uats-worker-{sid}",
            args=(
                self.store.location,
                inbox,
                self._outbox,
                sid,
                os.getpid(),
                self.limits.pause_timeout_s,
                self.torch_threads,
            ),
        )
        proc.start()
        log.info("warm worker %s started (pid %s)", sid, proc.pid)
        self._slots[sid] = Slot(proc=proc, inbox=inbox)
        return self._slots[sid]

    def _prewarm(self, req: RunRequest) -> None:
        """Load `req`'s models in as many workers as a compare pair uses (PAIR_WORKERS, at most max_workers):
        the pair's second run would otherwise wait for a cold worker (docs/app.md, "Compare", has the measurement)."""
        with self._lock:
            if self._stop.is_set() or self._slots:
                return
            for _ in range(min(PAIR_WORKERS, self.limits.max_workers)):
                slot = self._spawn()
                slot.inbox.put(Warm(req))
                slot.key = req.models_key()

    def _pick(self, req: Any) -> Slot | None:
        """A worker for `req` while fewer than max_workers compute: an idle one holding its models, else a
        new one (paused runs' workers do not count), else any idle one."""
        idle, computing, paused = self._census()
        if len(computing) >= self.limits.max_workers:
            return None
        key = req.models_key()
        for s in idle:
            if s.key == key:
                return s
        if len(idle) + len(computing) + len(paused) < self.limits.max_workers + min(
            len(paused), self.limits.max_paused
        ):
            return self._spawn()
        return idle[0] if idle else None

    def _retire_idle(self) -> None:
        """Stop idle workers beyond what may compute (a paused run's extra worker, once it ended)."""
        idle, computing, paused = self._census()
        extra = (
            len(idle)
            + len(computing)
            + len(paused)
            - (self.limits.max_workers + min(len(paused), self.limits.max_paused))
        )
        for slot in idle[: max(0, extra)]:
            slot.inbox.put(STOP)
            slot.retiring = True

    # ------------------------------------------------------------------ submitting
    def submit(
        self, req: Any, session: str | None = None, register: Callable[[], Any] | None = None, paused: bool = False
    ) -> None:
        """Queue a job. `register` writes its row (a run: store.register_run) once the limits allow it, so a
        refused job leaves nothing behind; without it the row must exist already. Raises QueueFull."""
        with self._lock:
            self._admit(session, paused)
            if register is not None:
                register()
            self._pending.append(req)
            if session:
                self._sessions[req.job_id] = session
        self._wake.set()

    def _admit(self, session: str | None, paused: bool) -> None:
        lim = self.limits
        if len(self._pending) >= lim.max_queued:
            raise QueueFull(
                "queue",
                f"{len(self._pending)} jobs are already queued on this server (the limit, "
                f"--max-queued, is {lim.max_queued}); wait for one to start or cancel one",
            )
        mine = sum(1 for r in self._pending if self._sessions.get(r.job_id) == session) if session else 0
        if session and mine >= lim.max_queued_per_session:
            raise QueueFull(
                "queue",
                f"you already have {mine} jobs queued (the limit per user, in all your tabs, "
                f"--max-queued-per-session, is {lim.max_queued_per_session}); wait for one to "
                "start or cancel one",
            )
        if paused:
            self._admit_pause(None)

    def _admit_pause(self, run_id: str | None) -> None:
        held = self._paused_runs()
        if run_id not in held and len(held) >= self.limits.max_paused:
            raise QueueFull(
                "pause",
                f"{len(held)} runs are already paused on this server (the limit, --max-paused, "
                f"is {self.limits.max_paused}); resume, step to the end or cancel one first",
            )

    def pause_run(self, run_id: str) -> bool:
        """store.pause_run within the paused-runs limit (QueueFull over it)."""
        with self._lock:
            self._admit_pause(run_id)
            return self.store.pause_run(run_id)

    def step_run(self, run_id: str, steps: int = 1) -> bool:
        """store.step_run (which pauses a running run) within the paused-runs limit."""
        with self._lock:
            self._admit_pause(run_id)
            return self.store.step_run(run_id, steps)

    # ------------------------------------------------------------------ the owner's tick
    def pump(self) -> list[str]:
        """Read workers' reports, end jobs of dead workers, write the ends workers could not, start queued
        jobs. Never raises (a failing run log is logged in one line and retried). Returns the jobs it
        ended failed. The pool's own thread calls it; tests with a long poll_s call it themselves."""
        with self._lock:
            self._drain()
            failed = self._reap()
            self._record_unrecorded()
            self._sweep_pending()
            while (req := self._startable()) is not None:
                slot = self._pick(req)
                if slot is None:
                    break
                self._pending.remove(req)
                slot.session = self._sessions.pop(req.job_id, None)
                slot.job = req
                slot.inbox.put(req)
                log.info("job %s handed to worker pid %s", req.job_id, slot.proc.pid)
            self._retire_idle()
        return failed

    def _sweep_pending(self) -> None:
        """Drop queued jobs that ended meanwhile; end those cancelled while queued, whether or not a worker is free."""
        waiting: deque[Any] = deque()
        for req in self._pending:
            status = self._read(req, lambda r: r.status(self.store), default=RunStatus.QUEUED)
            if status != RunStatus.QUEUED:
                self._sessions.pop(req.job_id, None)
                continue
            if self._read(req, lambda r: r.cancel_requested(self.store), default=False):
                self._end(req, "cancelled while queued", RunStatus.CANCELLED)
                self._sessions.pop(req.job_id, None)
                continue
            waiting.append(req)
        self._pending = waiting

    def _startable(self) -> Any | None:
        """The first queued job whose session holds fewer than max_workers workers that compute or wait on a
        server: one client's stalled server (its jobs hold workers that no longer count against the limit) never
        takes the workers another client's run is owed."""
        if not self._pending:
            return None
        idle, computing, paused = self._census()
        held: dict[str, int] = {}
        for s in computing + [s for s in paused if s.stalled()]:
            if s.session:
                held[s.session] = held.get(s.session, 0) + 1
        for req in self._pending:
            session = self._sessions.get(req.job_id)
            if not session or held.get(session, 0) < self.limits.max_workers:
                return req
        return None

    def active(self) -> list[str]:
        with self._lock:
            return [s.job.job_id for s in self._slots.values() if s.job is not None and s.proc.is_alive()]

    def queued(self) -> list[str]:
        with self._lock:
            return [r.job_id for r in self._pending]

    def loads(self) -> dict[int, int]:
        """Model loads per live worker, as they last reported (for tests and the bench)."""
        with self._lock:
            self._drain()
            return {sid: s.loads for sid, s in self._slots.items()}

    def _loop(self, poll_s: float, prewarm: RunRequest | None) -> None:
        # Without a tab open, nobody would reap or start workers: this thread does, and only this thread.
        if prewarm is not None:
            self._prewarm(prewarm)
        while not self._stop.is_set():
            try:
                self.pump()  # never raises for a failing run log; this is for the unexpected (a spawn failing)
            except Exception as exc:  # noqa: BLE001 - keep the pool alive; the next tick retries
                if self._said.get("tick") != str(exc):  # once per distinct failure, not every tick
                    self._said["tick"] = str(exc)
                    log.exception("worker pool tick failed")
            self._wake.wait(poll_s)
            self._wake.clear()
        self._ticked_last.set()
        self._released.wait()  # keep the thread (the workers' parent thread) until shutdown is done

    def shutdown(self, cancel: bool = True, timeout_s: float = 30.0) -> None:
        """Stop the pool; with cancel=True ask running jobs to stop (runs end 'cancelled' with all their
        nodes written) and wait for them up to timeout_s."""
        self._stop.set()
        self._wake.set()
        self._ticked_last.wait(timeout_s)
        try:
            with self._lock:
                self._drain()
                slots = dict(self._slots)
                pending = list(self._pending)
                self._pending.clear()
            for req in pending:
                self._end(req, "the app shut down before this job started")
            self._stop_workers(slots, cancel, timeout_s)
        finally:
            self._released.set()


def default_pair_request() -> RunRequest:
    """The form's default search (the embedded world's pair, default dropout) for WorkerPool(prewarm=...): only its
    models are loaded ahead."""
    from uats_core.config import SearchConfig
    from uats_core.request import validate_request
    from uats_core.worlds.arith.world import get_problem

    return RunRequest(
        run_id="prewarm", db="", search=validate_request(SearchRequest(get_problem("arith-test-0"), SearchConfig()))
    )


def session_of(request: Any) -> str | None:
    """Whom the pool's per-client limits count a handler's job against: the signed-in user ('user:<name>', every
    tab and browser of theirs together: one user's five tabs once held 18 of 16+2 places), else the page's Gradio
    session (without a login: a page load). None outside a page (tests, the command line)."""
    user = getattr(request, "username", None)
    if user:
        return f"user:{user}"
    session = getattr(request, "session_hash", None)
    return f"session:{session}" if session else None
