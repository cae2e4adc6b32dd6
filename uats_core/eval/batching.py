"""Cross-problem batching: several searches in threads share one batched policy call and one PRM call.

Each search thread ("lane") talks to a `LanePolicy` / `LanePRM` proxy that implements the Policy / PRM
protocols. A request parks the lane in the `BatchingHub`; once EVERY live lane is parked, the hub makes
one call per kind and model (all policy requests to one policy in one `generate_steps`, all `score`
requests to one PRM in one call, all its `mc_scores` requests of the same k in one call), splits the
results and wakes the lanes.

Reproducibility, honestly: the policies and PRMs sample from torch's global RNG (generation, dropout
masks), and a merged call draws its random numbers for all rows together, so a batched search's result
depends on which other searches shared its calls. The hub makes that dependence deterministic: a round
fires only when all live lanes are parked (so its composition does not depend on thread timing), requests
are ordered by lane, and the global RNG is seeded before every merged call from (group seed, round, call).
The same cells with the same lane count therefore reproduce exactly; the same cell run alone (serial,
--shard, Ray) gives a different - equally valid - sample. Only non-batched modes are compared for equality.

While a round runs every other lane is parked, so the real models are only ever called from one thread,
and nothing else touches the global RNG: `run_search`'s own seeding happens while its lane is live and not
parked, when no round can be running.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..protocols import PRM, Policy, StepOutput, Trace

log = logging.getLogger(__name__)


_KIND_ORDER = {"policy": 0, "score": 1, "mc": 2}


def mix_seed(*parts: object) -> int:
    """A 63-bit seed from any parts (stable across processes, unlike hash())."""
    return int.from_bytes(hashlib.sha256("|".join(map(str, parts)).encode()).digest()[:8], "big") >> 1


@dataclass
class _Request:
    kind: str  # "policy" | "score" | "mc"
    key: str  # which model (lanes may search with different pairs): requests merge only per model
    target: Any  # the real Policy or PRM
    traces: Sequence[Trace]
    k: int = 0
    merge: bool = True  # False: this request gets a call of its own (still inside the round, in lane order)
    result: Any = None
    error: BaseException | None = None
    done: bool = False


@dataclass
class HubStats:
    rounds: int = 0
    calls: dict[str, int] = field(default_factory=lambda: {"policy": 0, "score": 0, "mc": 0})
    requests: dict[str, int] = field(default_factory=lambda: {"policy": 0, "score": 0, "mc": 0})
    rows: dict[str, int] = field(default_factory=lambda: {"policy": 0, "score": 0, "mc": 0})

    def mean_requests_per_call(self) -> dict[str, float]:
        return {k: self.requests[k] / self.calls[k] for k in self.calls if self.calls[k]}


class BatchingHub:
    """Merges the model calls of `lanes` concurrent searches. Lanes may use different models (pairs):
    requests are merged per (kind, model key, k)."""

    def __init__(self, lanes: int, group_seed: int | str = 0) -> None:
        if lanes < 1:
            raise ValueError(f"need at least one lane; got {lanes}")
        self.group_seed = group_seed
        self._cv = threading.Condition()
        self._live: set[int] = set(range(lanes))
        self._pending: dict[int, _Request] = {}
        self._round = 0
        self.stats = HubStats()

    # ------------------------------------------------------------------ lanes
    def leave(self, lane: int) -> None:
        """A lane has no more searches: stop waiting for it."""
        with self._cv:
            self._live.discard(lane)
            self._maybe_run_round()

    def request(
        self, lane: int, kind: str, key: str, target: Any, traces: Sequence[Trace], k: int = 0, merge: bool = True
    ) -> Any:
        req = _Request(kind, key, target, list(traces), k, merge)
        with self._cv:
            if lane not in self._live:
                raise RuntimeError(f"lane {lane} already left the hub")
            if lane in self._pending:
                raise RuntimeError(f"lane {lane} has a request pending already")
            self._pending[lane] = req
            self._maybe_run_round()
            while not req.done:
                self._cv.wait()
        if req.error is not None:
            raise req.error
        return req.result

    # ------------------------------------------------------------------ rounds
    def _maybe_run_round(self) -> None:
        """Called with the lock held. Runs the round in this thread when every live lane is parked. The lock
        stays held during the model calls: every other live lane is parked anyway, and a lane that left
        must not slip a request in between."""
        if not self._pending or len(self._pending) < len(self._live):
            return
        batch = sorted(self._pending.items())  # by lane: the order of rows never depends on timing
        self._pending.clear()
        self._run(batch)
        self._round += 1
        self.stats.rounds += 1
        self._cv.notify_all()

    def _run(self, batch: list[tuple[int, _Request]]) -> None:
        groups: dict[tuple[int, str, int, int], list[_Request]] = {}
        for lane, r in batch:  # lane order inside each group
            groups.setdefault((_KIND_ORDER[r.kind], r.key, r.k, -1 if r.merge else lane), []).append(r)
        for call_no, (_, reqs) in enumerate(sorted(groups.items(), key=lambda kv: kv[0])):
            kind, k, target = reqs[0].kind, reqs[0].k, reqs[0].target
            self._seed(call_no)
            traces = [t for r in reqs for t in r.traces]
            try:
                if kind == "policy":
                    out: Any = target.generate_steps(traces)
                elif kind == "score":
                    out = target.score(traces)
                else:
                    out = np.asarray(target.mc_scores(traces, k), dtype=np.float64)
                if len(out) != len(traces):
                    raise RuntimeError(f"batched {kind} call returned {len(out)} rows for {len(traces)} traces")
            except Exception as exc:  # every search in this call fails the way it would have alone
                for r in reqs:
                    r.error, r.done = exc, True
                continue
            self.stats.calls[kind] += 1
            self.stats.requests[kind] += len(reqs)
            self.stats.rows[kind] += len(traces)
            start = 0
            for r in reqs:
                n = len(r.traces)
                r.result = out[start : start + n] if kind == "mc" else list(out[start : start + n])
                start += n
                r.done = True

    def _seed(self, call_no: int) -> None:
        try:
            import torch
        except ImportError:  # backends without torch draw from their own generators
            return
        torch.manual_seed(mix_seed("batched", self.group_seed, self._round, call_no))


class LanePolicy:
    """One lane's view of a shared policy (Policy protocol). `key` names the model: lanes whose proxies
    carry the same key share calls."""

    def __init__(self, hub: BatchingHub, lane: int, policy: Policy, key: str) -> None:
        self.hub = hub
        self.lane = lane
        self.policy = policy
        self.key = key
        self.name = getattr(policy, "name", type(policy).__name__)

    def generate_steps(self, traces: Sequence[Trace]) -> list[StepOutput]:
        if not traces:
            return []
        return self.hub.request(self.lane, "policy", self.key, self.policy, traces)


class LanePRM:
    """One lane's view of a shared PRM (PRM protocol). merge=False keeps this lane's PRM calls unmerged (one
    call each, still made by the hub, in lane order, inside the round): an escape hatch for PRMs whose
    batching does not pay (the prefix cache pads rows of different searches to each other)."""

    def __init__(self, hub: BatchingHub, lane: int, prm: PRM, key: str, merge: bool = True) -> None:
        self.hub = hub
        self.lane = lane
        self.prm = prm
        self.key = key
        self.merge = merge
        self.name = getattr(prm, "name", type(prm).__name__)

    def score(self, traces: Sequence[Trace]) -> list[list[float]]:
        if not traces:
            return []
        return self.hub.request(self.lane, "score", self.key, self.prm, traces, merge=self.merge)

    def mc_scores(self, traces: Sequence[Trace], k: int) -> np.ndarray:
        if not traces:
            return np.zeros((0, k))
        return self.hub.request(self.lane, "mc", self.key, self.prm, traces, k, merge=self.merge)


class LockedEmbedder:
    """DORA's embedder shared by lanes: one call at a time (it is a model too, and not thread-safe)."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            return self.embedder.embed(texts)
