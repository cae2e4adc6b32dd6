"""The run log's one migration path: every run log opened for writing (the app's, a search's, an evaluation's; SQLite
or PostgreSQL) gets the tables of schema.py it lacks, then, in order, the changes made since the first release
(MIGRATIONS), so a database written by an earlier version keeps working. One transaction; idempotent.

To change a table: change it in schema.py, and append here what turns an older run log into it (added columns:
ALTER TABLE ADD COLUMN, with the server default for NOT NULL ones, nullable ones starting NULL; renamed columns:
ALTER TABLE RENAME COLUMN, before the additions)."""

from __future__ import annotations

import logging

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

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
                default = col.server_default.arg  # type: ignore[union-attr]
                default_sql = default if isinstance(default, str) else str(default.compile(dialect=conn.dialect))
                ddl += f" NOT NULL DEFAULT {default_sql}"
            conn.execute(sa.text(ddl))
            log.info("run log upgraded: added %s.%s", table_name, name)
