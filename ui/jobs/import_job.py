"""Importing another tool's run as a job of the app's worker pool, like a search: the file is one the server lists
(--imports-dir, by name, never through a link out of that folder), checked in the handler for what needs no parsing
(the tool, the row, the file's size: APP_MAX_IMPORT_BYTES), registered as a 'queued' run, then parsed in the worker
in a bounded child process (ui.jobs.import_parse: a memory cap and a deep stack; the app's process never parses a
client's pick), held to APP_MAX_IMPORT_NODES, built and written there (grading its answers may take seconds),
cancellable until it writes. A malformed file ends its run failed with the parser's one line. Its status is its
run's."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from storage import RunStore
from uats_core.config import ConfigError
from uats_core.imports import TOOLS, ImportFormatError
from uats_core.problems import MAX_ANSWER_CHARS, MAX_QUESTION_CHARS
from uats_core.status import RunStatus

from .import_parse import ImportRefused, outside_folder, parse_bounded
from .pool import RunRowJob
from .warm import Unrecorded, end_or_report

log = logging.getLogger(__name__)

APP_MAX_IMPORT_BYTES = 32 * 2**20
APP_MAX_IMPORT_NODES = 20_000
MAX_TYPED = {"question": MAX_QUESTION_CHARS, "gold answer": MAX_ANSWER_CHARS}  # what the run log holds


@dataclass(frozen=True)
class ImportRequest(RunRowJob):
    """One imported run, picklable for the worker; the job interface of ui.jobs.pool.RunRequest (its row is a
    run's, registered queued before the worker starts)."""

    run_id: str
    tool: str
    path: str  # the server's own file, from its list
    name: str  # how the file is named to clients: its name in the listed folder
    row: int | None = None  # search-and-learn's row
    question: str | None = None  # typed in the form: llm-reasoners' and TreeQuest's files hold none
    gold: str | None = None

    def models_key(self) -> str:
        return "import"  # no models: any worker will do

    def load_models(self) -> tuple[Any, Any]:
        return None, None

    def read(self) -> Any:
        """The one run this job imports, parsed in a bounded child process (ImportFormatError when the file is not
        what its tool writes, or needs more than an import may use; never through a link out of its folder)."""
        if outside_folder(self.path, Path(self.path).parent):
            raise ImportFormatError(self.name, "is now a link out of the imports folder; it is not read")
        try:
            runs = parse_bounded(
                self.tool, self.path, None if self.row is None else [self.row], self.name, self.question, self.gold
            )
        except ImportRefused as exc:
            raise ImportFormatError(
                self.name, str(exc).removeprefix(f"file: {self.name}: ").removeprefix(f"{self.name}: ")
            ) from None
        if len(runs) != 1:
            raise ImportFormatError(self.name, f"{len(runs)} runs; the app imports one at a time (pick a row)")
        nodes = len(runs[0].nodes)
        if nodes > APP_MAX_IMPORT_NODES:
            raise ImportFormatError(
                self.name,
                f"{nodes:,} nodes, more than the {APP_MAX_IMPORT_NODES:,} the app "
                "imports; use `uats import` on the server",
            )
        return runs[0]

    def run(self, cache: Any, store: RunStore, pause_timeout_s: float | None = None) -> Unrecorded | None:
        try:
            if store.cancel_requested(self.run_id):
                store.mark_failed(self.run_id, "cancelled before the import started", status=RunStatus.CANCELLED)
                return None
            recorder = store.subscriber()
            for event in self.read().events(self.run_id):
                recorder(event)
            return None
        except Exception as exc:  # noqa: BLE001 - the run row must not stay 'queued'
            said = str(exc) if isinstance(exc, ImportFormatError) else f"{type(exc).__name__}: {exc}"
            return end_or_report(
                f"import {self.run_id}",
                lambda why, st: store.mark_failed(self.run_id, why, status=st),
                RunStatus.FAILED,
                said,
            )

    def paused(self, store: RunStore) -> bool:
        return False

    def waiting_paused(self, store: RunStore) -> bool:
        return False


def _typed(field: str, value: Any) -> str | None:
    """A typed question or gold answer: text within the run log's bounds, or None when left empty."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str):
        raise ConfigError(field, f"give text; got {type(value).__name__}")
    if len(value) > MAX_TYPED[field]:
        raise ConfigError(field, f"{len(value):,} characters, more than the {MAX_TYPED[field]:,} the app takes")
    return value.strip()


def submit_import(
    store: RunStore,
    pool: Any,
    choices: Any,
    tool: Any,
    file_name: Any,
    row: Any,
    owner: str | None = None,
    session: str | None = None,
    question: Any = None,
    gold: Any = None,
) -> str:
    """Check the import without parsing it (a file on the server's list and inside its folder, a tool we read, the
    row, the typed question and answer, the file's size), then queue it on the pool, its run registered queued once
    the pool admits it; the worker parses it (ImportRequest.read). The run's id. ConfigError / ImportFormatError (or
    QueueFull) name what to fix; nothing is written then."""
    path = choices.import_file(file_name)
    if tool not in TOOLS:
        raise ConfigError("tool", f"{tool!r} is not a tool we read; pick one of {', '.join(TOOLS)}")
    if tool == "search-and-learn":
        if isinstance(row, float) and row.is_integer():
            row = int(row)  # gr.Number hands whole numbers over as floats
        if isinstance(row, bool) or not isinstance(row, int) or row < 0:
            raise ConfigError("row", f"give the 0-based row of the search-and-learn file; got {row!r}")
        if _typed("question", question) is not None or _typed("gold answer", gold) is not None:
            raise ConfigError(
                "question",
                "a search-and-learn row holds its problem and answer; leave the question and gold answer empty",
            )
        question = gold = None
    else:
        row = None
        question, gold = _typed("question", question), _typed("gold answer", gold)
    if outside_folder(path, path.parent):  # listed at start-up, made a link since
        raise ImportFormatError(file_name, "is a link out of the imports folder; it is not read")
    size = path.stat().st_size
    if size > APP_MAX_IMPORT_BYTES:
        raise ImportFormatError(
            file_name,
            f"{size / 2**20:.0f} MiB, more than the {APP_MAX_IMPORT_BYTES // 2**20} MiB "
            "the app imports; use `uats import` on the server",
        )
    req = ImportRequest(
        run_id=uuid.uuid4().hex, tool=tool, path=str(path), name=file_name, row=row, question=question, gold=gold
    )
    # the row until the worker's parse fills it in (the recorder's RunStarted rewrites a queued run's row)
    pool.submit(
        req,
        session=session,
        register=lambda: store.register_run(
            req.run_id,
            method=tool,
            problem_id=file_name[:200],
            question=question or f"(an import of {file_name}, read by a worker)",
            gold_answer=gold,
            seed=None,
            config={"imported": {"tool": tool, "file": file_name, "row": row}},
            policy=f"{tool} (imported)",
            prm=f"{tool} (imported)",
            owner=owner,
        ),
    )
    log.info("import %s queued: %s %s", req.run_id, tool, file_name)
    return req.run_id
