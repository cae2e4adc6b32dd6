"""Searches run in worker processes (multiprocessing, spawn) that write to the database; the page only
reads. So a closed tab, a slow tick or a second user never stops or blocks a search, and a worker that
dies is noticed (its process is gone) and its run marked failed."""

from __future__ import annotations

import logging
import multiprocessing as mp
import queue
import threading
import time
from collections import deque
from dataclasses import asdict, dataclass, field
from typing import Any

from storage import RunStore, StorageError

from .warm import model_key

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunRequest:
    """Everything a worker needs, picklable (spawn sends it to a fresh interpreter)."""

    run_id: str
    db: str  # SQLAlchemy URL of the run log
    problem: dict[str, Any]  # uats_core.problems.Problem fields
    config: dict[str, Any]  # SearchConfig.to_dict()
    policy: str | None = None  # None: the embedded arithmetic world's policy
    prm: str | None = None
    prm_kind: str | None = None  # None: detected from the PRM
    policy_opts: dict[str, Any] = field(default_factory=dict)  # --policy-opt's KEY=VALUE, parsed
    prm_opts: dict[str, Any] = field(default_factory=dict)
    world_problem: bool = True  # the problem comes from the embedded world (its models serve only those)


def worker_main(req: RunRequest) -> None:
    """A one-off worker process: load the models, search, write every event (the pool uses warm workers;
    this stays for callers that want a fresh interpreter per run)."""
    from .warm import ModelCache, execute

    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s worker {req.run_id[:8]} %(levelname)s %(name)s: %(message)s")
    store = RunStore(req.db)
    try:
        execute(req, ModelCache(), store)
    finally:
        store.close()


@dataclass
class _Slot:
    """One warm worker process: its inbox, the run it is on (None: idle), the model key it holds."""

    proc: Any
    inbox: Any
    run_id: str | None = None
    key: str | None = None
    loads: int = 0


class WorkerPool:
    """Runs at most `max_workers` searches at once in warm worker processes (ui.warm: each keeps its last
    models loaded between runs; more workers than the cores can feed only slows all of them), queues the
    rest in the database as 'queued', and notices a worker that died (its run is marked failed).
    `prewarm`: a RunRequest whose models one worker loads at once, so even the first run starts warm."""

    def __init__(self, store: RunStore, max_workers: int = 2, poll_s: float = 1.0, prewarm: RunRequest | None = None) -> None:
        self.store = store
        self.max_workers = max(1, int(max_workers))
        self._ctx = mp.get_context("spawn")
        self._slots: dict[int, _Slot] = {}
        self._next_slot = 0
        self._outbox = self._ctx.Queue()
        self._pending: deque[RunRequest] = deque()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        if prewarm is not None:
            # started from the pool's thread: spawning the interpreter must not hold up the app's start
            threading.Thread(target=self._prewarm, args=(prewarm,), name="uats-prewarm", daemon=True).start()
        self._thread = threading.Thread(target=self._loop, args=(poll_s,), name="uats-worker-pool", daemon=True)
        self._thread.start()

    def _prewarm(self, req: RunRequest) -> None:
        from .warm import Warm

        with self._lock:
            if self._stop.is_set() or self._slots:
                return
            slot = self._spawn()
            slot.inbox.put(Warm(req))
            slot.key = model_key(req)

    def _spawn(self) -> _Slot:
        from .warm import warm_worker_main

        sid = self._next_slot
        self._next_slot += 1
        inbox = self._ctx.Queue()
        proc = self._ctx.Process(target=warm_worker_main, args=(self.store.location, inbox, self._outbox, sid),
                                 name=f"uats-worker-{sid}")
        proc.start()
        log.info("warm worker %s started (pid %s)", sid, proc.pid)
        self._slots[sid] = _Slot(proc=proc, inbox=inbox)
        return self._slots[sid]

    def submit(self, req: RunRequest) -> None:
        """The run row must already exist (store.register_run) so the page can follow it at once."""
        with self._lock:
            self._pending.append(req)
        self.pump()

    def _drain(self) -> None:
        while True:
            try:
                msg = self._outbox.get_nowait()
            except queue.Empty:
                return
            kind, sid = msg[0], msg[1]
            slot = self._slots.get(sid)
            if slot is None:
                continue
            if kind == "done" and slot.run_id == msg[2]:
                slot.run_id = None
            elif kind == "loaded":
                slot.key, slot.loads = msg[2], msg[3]

    def _reap(self) -> list[str]:
        failed: list[str] = []
        for sid, slot in list(self._slots.items()):
            if slot.proc.is_alive():
                continue
            slot.proc.join(0)
            del self._slots[sid]
            if slot.run_id is None:
                continue
            try:
                if self.store.mark_failed(slot.run_id, f"worker process exited (code {slot.proc.exitcode}) before the run ended"):
                    failed.append(slot.run_id)
            except StorageError:
                log.warning("run %s vanished from the database", slot.run_id)
        return failed

    def _idle(self, slot: _Slot) -> bool:
        """Free for the next run: no run, or its run already ended in the database (the worker is only
        tidying up; its inbox holds the next request until then, instead of it waiting for a poll)."""
        if not slot.proc.is_alive():
            return False
        if slot.run_id is None:
            return True
        try:
            return self.store.get_run(slot.run_id)["status"] not in ("queued", "running")
        except StorageError:
            return True

    def _pick(self, req: RunRequest) -> _Slot | None:
        """An idle worker for `req`: one holding its models, else any idle one, else a new one."""
        idle = [s for s in self._slots.values() if self._idle(s)]
        key = model_key(req)
        for s in idle:
            if s.key == key:
                return s
        if len(self._slots) < self.max_workers:
            return self._spawn()
        return idle[0] if idle else None

    def pump(self) -> list[str]:
        """Read workers' reports, mark runs of dead workers failed, start queued runs. Returns runs marked failed."""
        with self._lock:
            self._drain()
            failed = self._reap()
            waiting: deque[RunRequest] = deque()
            for req in self._pending:  # end what was cancelled while waiting, whether or not a slot is free
                try:
                    if self.store.get_run(req.run_id)["status"] != "queued":
                        continue
                except StorageError:
                    continue
                if self.store.cancel_requested(req.run_id):
                    self.store.mark_failed(req.run_id, "cancelled while queued", status="cancelled")
                    continue
                waiting.append(req)
            self._pending = waiting
            while self._pending:
                slot = self._pick(self._pending[0])
                if slot is None:
                    break
                req = self._pending.popleft()
                slot.run_id = req.run_id
                slot.inbox.put(req)
                log.info("run %s handed to worker pid %s", req.run_id, slot.proc.pid)
        return failed

    def active(self) -> list[str]:
        with self._lock:
            return [s.run_id for s in self._slots.values() if s.run_id is not None and s.proc.is_alive()]

    def queued(self) -> list[str]:
        with self._lock:
            return [r.run_id for r in self._pending]

    def loads(self) -> dict[int, int]:
        """Model loads per live worker, as they last reported (for tests and the bench)."""
        with self._lock:
            self._drain()
            return {sid: s.loads for sid, s in self._slots.items()}

    def _loop(self, poll_s: float) -> None:
        # Without a tab open, nobody's timer would reap or start workers: this thread does.
        while not self._stop.wait(poll_s):
            try:
                self.pump()
            except Exception:  # noqa: BLE001 - keep the pool alive; the next tick retries
                log.exception("worker pool tick failed")

    def shutdown(self, cancel: bool = True, timeout_s: float = 30.0) -> None:
        """Stop the pool; with cancel=True ask running searches to stop (they end 'cancelled' with all
        their nodes written) and wait for them up to timeout_s."""
        from .warm import STOP

        self._stop.set()
        with self._lock:
            self._drain()
            slots = dict(self._slots)
            pending = list(self._pending)
            self._pending.clear()
        for req in pending:
            self.store.mark_failed(req.run_id, "the app shut down before this run started")
        for slot in slots.values():
            if cancel and slot.run_id is not None:
                try:
                    self.store.request_cancel(slot.run_id)
                except StorageError:
                    pass
            slot.inbox.put(STOP)
        deadline = time.time() + timeout_s
        for sid, slot in slots.items():
            slot.proc.join(max(0.0, deadline - time.time()))
            if slot.proc.is_alive():
                log.warning("worker %s still running after shutdown; terminating it", sid)
                slot.proc.terminate()
                slot.proc.join(5)
            if slot.run_id is not None:
                self.store.mark_failed(slot.run_id, f"worker stopped at app shutdown (code {slot.proc.exitcode})")


def default_pair_request() -> RunRequest:
    """The form's default models (the embedded world's pair, default dropout) for WorkerPool(prewarm=...)."""
    from uats_core.config import SearchConfig

    return RunRequest(run_id="prewarm", db="", problem={}, config=SearchConfig().to_dict())


def request_dict(problem: Any) -> dict[str, Any]:
    """A Problem as plain fields for RunRequest."""
    return asdict(problem)
