"""Imported runs (uats_core.imports) into the run log: every run's row checked against what the log can hold first,
then each run's events written by the same recorder a search writes through, so the app reads an imported run
exactly like its own."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from uats_core.events import RunStarted
from uats_core.imports import ImportedRun

from .bounds import check_run_fields


def write_imported(store: Any, runs: Sequence[ImportedRun]) -> list[str]:
    """Write `runs` into `store` (a RunStore); their new run ids, in order. Every run's events are built and its row
    checked before the first is written, so a run that cannot be stored leaves nothing behind."""
    built = [run.events(uuid.uuid4().hex) for run in runs]
    starts: list[RunStarted] = []
    for events in built:
        start = events[0]
        assert isinstance(start, RunStarted)
        starts.append(start)
        check_run_fields(
            method=start.method,
            problem_id=start.problem_id,
            question=start.question,
            gold_answer=start.gold_answer,
            seed=start.seed,
            config=start.config,
            policy=start.policy,
            prm=start.prm,
        )
    ids = []
    for events, start in zip(built, starts):
        recorder = store.subscriber()
        for event in events:
            recorder(event)
        ids.append(start.run_id)
    return ids
