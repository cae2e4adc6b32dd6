"""What the search core tells the world. Storage and the UI subscribe; the core knows neither.

Order within one run: RunStarted, then per iteration any number of NodesUpdated followed by one
IterationEnded, then RunEnded (always, also on failure or cancellation)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .records import Decision, StepInfo

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunStarted:
    run_id: str  # uuid hex, chosen by the caller so a UI can follow the run before it starts
    method: str
    problem_id: str
    question: str
    gold_answer: str | None
    seed: int | None  # None: a run imported from another tool (uats_core.imports), which says no seed
    config: dict[str, Any]
    policy: str
    prm: str
    # how the models were loaded (policy_opts, prm_opts, prm_kind), recorded with the run; None: not known
    model_options: dict[str, Any] | None = None


@dataclass(frozen=True)
class NodesUpdated:
    """Full snapshots (Node.record()) of nodes created or changed in this iteration."""

    iteration: int
    nodes: list[dict[str, Any]]


@dataclass(frozen=True)
class IterationEnded:
    """One search step's decisions, enough to replay it: a Decision per node decided on and the step's
    numbers (width C, re-evaluation passes B, knobs, the spending rule's books) as a StepInfo."""

    iteration: int
    decisions: list[Decision]
    step_info: StepInfo
    cost_step: float
    cost_total: float


@dataclass(frozen=True)
class RunEnded:
    status: str  # finished | failed | cancelled
    answer: str | None = None
    naive_answer: str | None = None
    correct: bool | None = None
    naive_correct: bool | None = None
    cost: float = 0.0
    iterations: int = 0
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


Event = RunStarted | NodesUpdated | IterationEnded | RunEnded
Subscriber = Callable[[Event], None]


class EventBus:
    """Fans events out to subscribers in order. A subscriber that raises stops the search: losing the
    run log silently would be worse."""

    def __init__(self, *subscribers: Subscriber) -> None:
        self._subscribers: list[Subscriber] = list(subscribers)

    def subscribe(self, fn: Subscriber) -> None:
        self._subscribers.append(fn)

    def emit(self, event: Event) -> None:
        for fn in self._subscribers:
            fn(event)
