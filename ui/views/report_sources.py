"""What the Reports tab may read: the results ledgers in the folder given at launch (app.py --ledgers-dir; by
default the project's results/, so the committed arith grid opens out of the box), the app's own run log, and
SQLite files in the reports folder (app.py --reports-dir). The page only ever sends back a key from this list;
a path or URL from a browser is never opened, so no client can make the server create, switch or connect to a
database or read a folder it names."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from storage import StorageError, open_read_only
from storage.results_ledger import RESULTS_FILE
from uats_core.config import ConfigError

log = logging.getLogger(__name__)

RUN_LOG = "(run log)"
LEDGER = "ledger: "  # key prefix of a results ledger (a folder of storage.results_ledger files)
SUFFIXES = (".db", ".sqlite", ".sqlite3")
MAX_LISTED = 200  # a reports folder with thousands of files must not make a dropdown unusable


class ReportSources:
    """The server-side list of readable sources. Keys are LEDGER + the name of a folder directly inside
    `ledgers_dir` holding a results ledger, RUN_LOG, or a file name directly inside `reports_dir` (no
    sub-folders, no links leading out of either)."""

    def __init__(
        self, store: Any, reports_dir: str | Path | None = None, ledgers_dir: str | Path | None = None
    ) -> None:
        self.store = store
        self.reports_dir = Path(reports_dir).resolve() if reports_dir else None
        self.ledgers_dir = Path(ledgers_dir).resolve() if ledgers_dir else None

    def _ledgers(self) -> list[Path]:
        if self.ledgers_dir is None or not self.ledgers_dir.is_dir():
            return []
        return [
            p
            for p in sorted(self.ledgers_dir.iterdir())[:MAX_LISTED]
            if p.is_dir() and not p.is_symlink() and (p / RESULTS_FILE).is_file()
        ]

    def _files(self) -> list[Path]:
        if self.reports_dir is None or not self.reports_dir.is_dir():
            return []
        out = []
        for p in sorted(self.reports_dir.iterdir()):
            if p.suffix.lower() in SUFFIXES and p.is_file() and p.resolve().parent == self.reports_dir:
                out.append(p)
            if len(out) >= MAX_LISTED:
                break
        return out

    def choices(self) -> list[tuple[str, str]]:
        """(label, key) pairs for a dropdown; labels name a source by its folder or file name, never by a
        location on the server."""
        items = [(f"results ledger {p.name}", LEDGER + p.name) for p in self._ledgers()]
        items += [("run log of this app (its own runs)", RUN_LOG)]
        items += [(f"{p.name} (reports folder)", p.name) for p in self._files()]
        return items

    def default_key(self) -> str:
        """What the tab opens on: the first results ledger (the committed evaluation), else the run log."""
        ledgers = self._ledgers()
        return LEDGER + ledgers[0].name if ledgers else RUN_LOG

    def ledger_folder(self, key: str | None) -> Path | None:
        """The folder of a ledger key; None for any other key. Raises ConfigError for a ledger not listed."""
        if not isinstance(key, str) or not key.startswith(LEDGER):
            return None
        for p in self._ledgers():
            if LEDGER + p.name == key:
                return p
        raise ConfigError(
            "results ledger",
            f"{key[len(LEDGER) :]!r} is not a ledger in "
            f"{'the ledgers folder' if self.ledgers_dir else 'the list (no --ledgers-dir given)'}; "
            "pick one from the list",
        )

    def keys(self) -> list[str]:
        return [k for _, k in self.choices()]

    def label(self, key: str) -> str:
        for lab, k in self.choices():
            if k == key:
                return lab
        return str(key)

    def _path_of(self, key: str) -> Path:
        for p in self._files():
            if p.name == key:
                return p
        where = "the reports folder (--reports-dir)" if self.reports_dir else "the list (no --reports-dir given)"
        raise ConfigError(
            "run log",
            f"{key!r} is not in {where}; pick one from the list "
            "(copy an evaluation database into the folder given as app.py --reports-dir)",
        )

    @contextlib.contextmanager
    def reading(self, key: str | None) -> Iterator[Any]:
        """The run log behind `key`: the app's own store, or a reports-folder file opened read-only for the
        duration of the block. Raises ConfigError(field='run log') for anything not in the list."""
        key = (key or "").strip() if isinstance(key, str) else ""
        if not key:
            raise ConfigError("run log", "none picked; pick a run log from the list")
        if key == RUN_LOG:
            yield self.store
            return
        if key.startswith(LEDGER):
            raise ConfigError("run log", f"{key!r} is a results ledger: it holds the results, no run log")
        path = self._path_of(key)
        try:
            store = open_read_only(path)
        except StorageError as exc:
            raise ConfigError("run log", str(exc).removeprefix("db: ")) from None
        try:
            yield store
        finally:
            store.close()
