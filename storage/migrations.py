"""The run log's one migration path: every run log opened for writing (the app's, a search's, an evaluation's; SQLite
or PostgreSQL) gets the tables of schema.py it lacks, then, in order, the changes made since the first release
(MIGRATIONS), so a database written by an earlier version keeps working. One transaction; idempotent.

To change a table: change it in schema.py, and append here what turns an older run log into it (added columns:
ALTER TABLE ADD COLUMN, with the server default for NOT NULL ones, nullable ones starting NULL; renamed columns:
ALTER TABLE RENAME COLUMN, before the additions)."""

from __future__ import annotations

import logging
import sqlite3

import sqlalchemy as sa
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.engine import Connection, Dialect, Engine
from sqlalchemy.schema import CreateTable

from . import schema as S

log = logging.getLogger(__name__)

# (table, columns added after the first release), oldest first. Old nodes simply have no logit statistics, and no
# `voted`: readers take NULL for "not known".
MIGRATIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("runs", ("paused", "step_credits")),  # step mode (2026-11-22)
    ("nodes", ("logit_mean", "logit_var")),  # the gate in logit space (2026-11-25)
    ("node_history", ("logit_mean", "logit_var")),
    ("runs", ("server",)),  # which server answers for a run (2026-11-26)
    ("runs", ("owner",)),  # who may control it
    ("nodes", ("voted",)),  # the candidates the answer was chosen from
    ("runs", ("model_options",)),  # how the models were loaded (2026-11-28)
)
# (table, former name, name), oldest first: iterations.budget held the step's numbers (a StepInfo), not the budget
# N; "budget" means N alone since 2026-11-29.
RENAMES: tuple[tuple[str, str, str], ...] = (("iterations", "budget", "step_info"),)


def migrate(engine: Engine) -> None:
    """Create the tables a run log lacks and apply the migrations it lacks, as one write transaction.

    On SQLite the check-then-create runs under BEGIN IMMEDIATE: two processes opening a new run log at once
    (eval shards, the app beside a worker) otherwise both see no tables, and one fails mid-DDL with
    'database is locked' or 'table already exists'. IMMEDIATE takes the write lock up front, so the second
    waits (busy timeout) and then finds the schema in place. PostgreSQL's DDL is transactional."""
    with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        S.metadata.create_all(conn)
        _rename_columns(conn)
        _add_missing_columns(conn)
        conn.commit()


def _rename_columns(conn: Connection) -> None:
    insp = sa.inspect(conn)
    for table_name, old, new in RENAMES:
        have = {c["name"] for c in insp.get_columns(table_name)}
        if old in have and new not in have:
            conn.execute(sa.text(f"ALTER TABLE {table_name} RENAME COLUMN {old} TO {new}"))
            log.info("run log upgraded: renamed %s.%s to %s", table_name, old, new)


def _add_missing_columns(conn: Connection) -> None:
    insp = sa.inspect(conn)
    for table_name, names in MIGRATIONS:
        have = {c["name"] for c in insp.get_columns(table_name)}
        table = S.metadata.tables[table_name]
        for name in names:
            if name in have:
                continue
            col = table.c[name]
            ddl = f"ALTER TABLE {table_name} ADD COLUMN {name} {col.type.compile(dialect=conn.dialect)}"
            if not col.nullable:  # a NOT NULL column needs a value for the rows already there
                ddl += f" NOT NULL DEFAULT {_default_sql(col, conn.dialect)}"
            conn.execute(sa.text(ddl))
            log.info("run log upgraded: added %s.%s", table_name, name)


def _default_sql(col: sa.Column, dialect: Dialect) -> str:
    """The SQL of a column's server default (the value an added NOT NULL column takes in the rows already there)."""
    default = col.server_default.arg  # type: ignore[union-attr]
    return default if isinstance(default, str) else str(default.compile(dialect=dialect))


def read_as_migrated(dbapi_conn: sqlite3.Connection) -> None:
    """A SQLite run log opened read-only (connection.open_read_only_engine) is read as `migrate` would leave it,
    without writing to it: each table that lacks a column gets a TEMP view of its own name (SQLite looks in
    TEMP first), renamed columns (RENAMES) under their new name and added ones as migrate adds them (NULL, or
    the server default); a table the log lacks is an empty TEMP table. Run before the connection is made
    query-only; TEMP objects live in the connection's memory, never in the file."""
    dialect = sqlite_dialect.dialect()
    renamed = {(t, new): old for t, old, new in RENAMES}
    for name, table in S.metadata.tables.items():
        have = {row[1] for row in dbapi_conn.execute(f"PRAGMA main.table_info({name})")}
        if not have:
            ddl = str(CreateTable(table).compile(dialect=dialect))
            dbapi_conn.execute(ddl.replace("CREATE TABLE", "CREATE TEMP TABLE", 1))
            continue
        if all(col.name in have for col in table.columns):
            continue
        cols = []
        for col in table.columns:
            old = renamed.get((name, col.name))
            if col.name in have:
                cols.append(col.name)
            elif old in have:
                cols.append(f"{old} AS {col.name}")
            else:
                value = "NULL" if col.nullable else _default_sql(col, dialect)
                cols.append(f"{value} AS {col.name}")
        dbapi_conn.execute(f"CREATE TEMP VIEW {name} AS SELECT {', '.join(cols)} FROM main.{name}")
        log.info("read-only run log of an earlier version: %s read through a view as migrated", name)
