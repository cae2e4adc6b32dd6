"""RunRecorder: the event subscriber that writes one run into a RunStore, an iteration per transaction."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from uats_core.events import Event, IterationEnded, NodesUpdated, RunEnded, RunStarted

from .rows import history_row, node_row

if TYPE_CHECKING:
    from .store import RunStore


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
        self.store._write_iteration(self.run_id, list(self._nodes.values()), list(self._history.values()), it,
                                    len(self._seen), end)
        self._nodes.clear()
        self._history.clear()
