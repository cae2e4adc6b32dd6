"""The run log's write path: upserts and run updates. On SQLite, prepared statements with our own converters
(the hot path: every node of every iteration); elsewhere the dialect's ON CONFLICT, or delete+insert inside
the same transaction where there is none."""

from __future__ import annotations

import json
import operator
from typing import Any, Callable, Iterable, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from . import schema as S

_FAST_SQLITE = True  # tests switch it off to compare with SQLAlchemy's own statement
_UPSERTS: dict[tuple[str, str, tuple[str, ...]], Any] = {}


def _upsert_statement(dialect: str, table: sa.Table, keys: tuple[str, ...]) -> Any:
    """INSERT ... ON CONFLICT DO UPDATE, built once per (dialect, table, keys): building the SET clause
    from `excluded` cost more than executing it on a small tree (profiled: a third of the run log's time)."""
    key = (dialect, table.name, keys)
    stmt = _UPSERTS.get(key)
    if stmt is None:
        if dialect == "sqlite":
            from sqlalchemy.dialects.sqlite import insert as dialect_insert
        else:
            from sqlalchemy.dialects.postgresql import insert as dialect_insert
        ins = dialect_insert(table)
        stmt = ins.on_conflict_do_update(index_elements=list(keys),
                                         set_={c.name: ins.excluded[c.name] for c in table.columns if c.name not in keys})
        _UPSERTS[key] = stmt
    return stmt


def _bind_converter(col: sa.Column) -> Callable[[Any], Any]:
    """What SQLAlchemy's bind processing does for this column on SQLite, without its per-row overhead:
    JSON as json.dumps text (None as 'null', as sa.JSON stores it), booleans as 0/1."""
    if isinstance(col.type, sa.JSON):
        return json.dumps
    if isinstance(col.type, sa.Boolean):
        return lambda v: None if v is None else int(bool(v))
    if isinstance(col.type, sa.Integer):
        return lambda v: None if v is None else int(v)
    if isinstance(col.type, sa.Float):
        return lambda v: None if v is None else float(v)
    return lambda v: v


_SQLITE_UPSERTS: dict[tuple[str, tuple[str, ...], tuple[str, ...]], tuple[str, list[Callable[[Any], Any]]]] = {}


def _sqlite_upsert(conn: Connection, table: sa.Table, rows: Sequence[dict[str, Any]], keys: tuple[str, ...]) -> None:
    """The run log's hot path (every node of every iteration): one prepared INSERT ... ON CONFLICT with
    plain tuples. SQLAlchemy's per-row parameter processing was over half the log's cost on a fast search;
    tests/test_storage.py checks this stores byte for byte what the SQLAlchemy statement stores."""
    cols = tuple(rows[0])
    key = (table.name, cols, keys)
    prepared = _SQLITE_UPSERTS.get(key)
    if prepared is None:
        names = ", ".join(f'"{c}"' for c in cols)
        sets = ", ".join(f'"{c}" = excluded."{c}"' for c in cols if c not in keys)
        conflict = ", ".join(f'"{k}"' for k in keys)
        sql = (f'INSERT INTO "{table.name}" ({names}) VALUES ({", ".join("?" * len(cols))}) '
               f"ON CONFLICT ({conflict}) DO " + (f"UPDATE SET {sets}" if sets else "NOTHING"))
        prepared = (sql, [_bind_converter(table.c[c]) for c in cols])
        _SQLITE_UPSERTS[key] = prepared
    sql, convert = prepared
    get = operator.itemgetter(*cols)
    params = ([(convert[0](get(r)),) for r in rows] if len(cols) == 1
              else [tuple([f(v) for f, v in zip(convert, get(r))]) for r in rows])
    _driver_execute(conn, sql, params, many=True)


def _driver_execute(conn: Connection, sql: str, params: Any, many: bool = False) -> None:
    """Run one statement on the connection's own sqlite3 connection, inside its transaction: the run log
    writes a few statements per iteration, and SQLAlchemy's execution context around each cost as much as
    SQLite did."""
    cur = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
    try:
        (cur.executemany if many else cur.execute)(sql, params)
    finally:
        cur.close()


_SQLITE_RUN_UPDATES: dict[tuple[str, ...], tuple[str, list[Callable[[Any], Any]]]] = {}


def update_run(conn: Connection, run_id: str, values: dict[str, Any]) -> None:
    """UPDATE runs SET ... for one run: each iteration's progress and the final outcome. On SQLite a prepared
    statement with our own converters, as for the node upserts (SQLAlchemy's statement coercion was a fifth
    of the log's time on a fast search); elsewhere SQLAlchemy's statement."""
    if conn.dialect.name != "sqlite" or not _FAST_SQLITE:
        conn.execute(sa.update(S.runs).where(S.runs.c.run_id == run_id).values(**values))
        return
    cols = tuple(values)
    prepared = _SQLITE_RUN_UPDATES.get(cols)
    if prepared is None:
        sets = ", ".join(f'"{c}" = ?' for c in cols)
        prepared = (f'UPDATE runs SET {sets} WHERE run_id = ?', [_bind_converter(S.runs.c[c]) for c in cols])
        _SQLITE_RUN_UPDATES[cols] = prepared
    sql, convert = prepared
    _driver_execute(conn, sql, tuple(f(values[c]) for f, c in zip(convert, cols)) + (run_id,))


def upsert(conn: Connection, table: sa.Table, rows: Sequence[dict[str, Any]], keys: Iterable[str]) -> None:
    if not rows:
        return
    keys = tuple(keys)
    name = conn.dialect.name
    if name == "sqlite" and _FAST_SQLITE:
        _sqlite_upsert(conn, table, rows, keys)
        return
    if name in ("sqlite", "postgresql"):
        conn.execute(_upsert_statement(name, table, keys), list(rows))
        return
    # Portable fallback: same transaction, so readers never see the gap between delete and insert.
    cond = sa.and_(*[table.c[k] == sa.bindparam(f"k_{k}") for k in keys])
    conn.execute(sa.delete(table).where(cond), [{f"k_{k}": r[k] for k in keys} for r in rows])
    conn.execute(sa.insert(table), list(rows))
