"""Read-only access to a run log the app did not create: evaluation databases picked in the Reports tab.

Opening never writes: no table creation, no column upgrade, no journal-mode switch, no new file or folder.
SQLite is opened through a `mode=ro` URI with `query_only` set, so even a bug in a reader cannot write."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import quote

import sqlalchemy as sa
from sqlalchemy.engine import URL, Engine

from .store import SQLITE_BUSY_TIMEOUT_MS, RunStore, StorageError

log = logging.getLogger(__name__)

_REQUIRED_TABLES = ("runs", "nodes", "iterations")


def display_location(url: URL) -> str:
    """A run log's location for people: the file path for SQLite, else the URL with its password hidden."""
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        return str(url.database)
    return url.render_as_string(hide_password=True)


def _ro_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    try:
        cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cur.execute("PRAGMA query_only=ON")
    finally:
        cur.close()


class ReadOnlyRunStore(RunStore):
    """A RunStore over an existing SQLite run log, opened read-only. Its readers (list_runs, get_nodes,
    list_curves, the report builder) work; any write fails with SQLite's 'readonly database' error."""

    def _open(self) -> Engine:
        url = self.url
        if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
            raise StorageError(f"{display_location(url)!r} is not a SQLite file; read-only opening takes a file path")
        path = Path(str(url.database))
        if not path.is_file():
            raise StorageError(f"no file at {str(path)!r}; give an existing run log")
        uri = f"file:{quote(str(path))}?mode=ro"

        def connect() -> sqlite3.Connection:
            return sqlite3.connect(uri, uri=True, timeout=SQLITE_BUSY_TIMEOUT_MS / 1000, check_same_thread=False)

        engine = sa.create_engine("sqlite://", creator=connect)
        sa.event.listen(engine, "connect", _ro_pragmas)
        try:
            with engine.connect() as conn:
                have = set(sa.inspect(conn).get_table_names())
        except Exception as exc:  # 'file is not a database', unreadable file
            engine.dispose()
            msg = str(getattr(exc, "orig", exc)) or exc.__class__.__name__
            raise StorageError(f"cannot read {str(path)!r}: {msg}; give a run log written by this project") from None
        missing = [t for t in _REQUIRED_TABLES if t not in have]
        if missing:
            engine.dispose()
            raise StorageError(f"{str(path)!r} is not a run log (no table {missing[0]!r}); give a database written by "
                               "python -m uats_core.eval ... --db PATH")
        log.info("read-only run log at %s", path)
        return engine


def open_read_only(path: str | Path) -> ReadOnlyRunStore:
    """An existing SQLite run log, read-only; StorageError(field='db') when it is missing or not a run log."""
    return ReadOnlyRunStore(str(Path(path).absolute()))
