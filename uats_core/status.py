"""Statuses, each written once: a run's (the app's jobs and the evaluation's cells go through the same ones) and a
search tree node's. Each is its text (a `str` enum): it equals the string the run log stores and a reader gets back,
prints as that string, and is written to any database or JSON as it."""

from __future__ import annotations

from enum import Enum


class _Text(str, Enum):
    """An enum whose members are their text: str() and format() give the value on every Python (3.12 would
    otherwise print 'RunStatus.FINISHED')."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class RunStatus(_Text):
    """Where a run (or a shadow-scoring job, a case batch, an evaluation cell) stands."""

    QUEUED = "queued"  # registered by a front end, waiting for a worker
    RUNNING = "running"
    FINISHED = "finished"
    FAILED = "failed"
    CANCELLED = "cancelled"


LIVE = (RunStatus.QUEUED, RunStatus.RUNNING)  # not ended: it can still be cancelled, and a worker may answer for it
ENDED = (RunStatus.FINISHED, RunStatus.FAILED, RunStatus.CANCELLED)


class NodeStatus(_Text):
    """What the search decided about a node (uats_core.tree.Node.status, a Decision's status)."""

    ACTIVE = "active"  # scored, waiting for a decision
    KEPT = "kept"  # granted at least one child
    PRUNED = "pruned"  # granted no child
    FINISHED = "finished"  # the solution ended (end of sequence, or a boxed answer)
    TRUNCATED = "truncated"  # cut by the solution token cap or the iteration cap, no clean end


TERMINAL = (NodeStatus.FINISHED, NodeStatus.TRUNCATED)  # the statuses that end a candidate solution
