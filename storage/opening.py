"""Opening a run log: the schema (created, or brought up to date from an earlier version) and SQLite's
settings (WAL, busy timeout) for several processes sharing one file."""

from __future__ import annotations

import errno
import logging
import sqlite3
import time
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from . import schema as S
from .location import StorageError

log = logging.getLogger("storage.store")

SQLITE_BUSY_TIMEOUT_MS = 30_000  # several workers share one file; a writer waits its turn, never fails


def create_schema(engine: Engine) -> None:
    """Create the tables and add the columns an earlier version lacked, as one write transaction.

    On SQLite the check-then-create runs under BEGIN IMMEDIATE: two processes opening a new run log at once
    (eval shards, the app beside a worker) otherwise both see no tables, and one fails mid-DDL with
    'database is locked' or 'table already exists'. IMMEDIATE takes the write lock up front, so the second
    waits (busy timeout) and then finds the schema in place."""
    with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        S.metadata.create_all(conn)
        _add_missing_columns(conn)
        conn.commit()


def _add_missing_columns(conn: Connection) -> None:
    """Bring a run log written by an earlier version up to date: add the columns it lacks."""
    insp = sa.inspect(conn)
    for table_name, names in S.ADDED_COLUMNS.items():
        have = {c["name"] for c in insp.get_columns(table_name)}
        table = S.metadata.tables[table_name]
        for name in names:
            if name in have:
                continue
            col = table.c[name]
            ddl = f"ALTER TABLE {table_name} ADD COLUMN {name} {col.type.compile(dialect=conn.dialect)}"
            if not col.nullable:  # a NOT NULL column needs a value for the rows already there
                default = col.server_default.arg  # type: ignore[union-attr]
                default_sql = default if isinstance(default, str) else str(default.compile(dialect=conn.dialect))
                ddl += f" NOT NULL DEFAULT {default_sql}"
            conn.execute(sa.text(ddl))
            log.info("run log upgraded: added %s.%s", table_name, name)


DISK_FULL = ("database or disk is full", "no space left on device", "could not extend file")


def is_disk_full(exc: BaseException) -> bool:
    """SQLite's SQLITE_FULL, ENOSPC, or PostgreSQL's disk_full (SQLSTATE 53100)."""
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return True
    text = str(exc).lower()
    return any(d in text for d in DISK_FULL) or getattr(exc, "sqlstate", None) == "53100"


def disk_full_errors(engine: Engine, where: str) -> None:
    """Turn a write that found the disk full into one StorageError(field='db') that says what to do, so the
    CLI prints one line and the app's pool can end the run with that reason; what was committed stays."""
    def handle(ctx: Any) -> None:
        if is_disk_full(ctx.original_exception):
            raise StorageError(f"the run log at {where} is full ({ctx.original_exception}); free space on its disk "
                               "and try again (runs keep what was written before)") from None

    sa.event.listen(engine, "handle_error", handle)


def sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    try:
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
        while True:
            try:
                cur.execute("PRAGMA journal_mode=WAL")
                break
            except sqlite3.OperationalError as exc:
                # Switching a new file to WAL takes a lock SQLite does not wait for (no busy handler), so a
                # second process opening the same new run log would fail at once: wait our turn here.
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.02)
        mode = cur.fetchone()
        if mode and str(mode[0]).lower() not in ("wal", "memory"):
            # e.g. a network filesystem without shared memory: still correct, but readers may block writers
            log.warning("SQLite refused WAL mode (journal_mode=%s); live reading may stall", mode[0])
        cur.execute("PRAGMA synchronous=NORMAL")
    finally:
        cur.close()
