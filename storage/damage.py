"""A damaged run log found row by row: the readers (storage.RunStore, the views) trust the types the schema
declares, so a hand-edited or corrupted row used to surface as a raw JSONDecodeError, ValueError, AttributeError or
RecursionError. `find_damage` reads a run's rows as the database holds them (raw text, no JSON decoding by
SQLAlchemy) and names the first that does not hold what its column declares: its table, its row (by primary key)
and its column. Reading only: nothing here writes."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa

from . import schema as S
from .connection import StorageError

MAX_JSON_DEPTH = 64  # a run's JSON (config, decisions, passes) nests a few levels; deeper is damage, not data
RUN_TABLES = (S.runs, S.nodes, S.node_history, S.iterations, S.shadow_scores)


def _depth(value: Any) -> int:
    """How deep lists and objects nest in `value`, without recursion (a 5,000-deep value is what is looked for)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, (list, dict)):
            deepest = max(deepest, level)
            if level > MAX_JSON_DEPTH:
                return level
            stack += [(v, level + 1) for v in (item.values() if isinstance(item, dict) else item)]
    return deepest


def _fault(column: sa.Column, raw: Any) -> str | None:
    """What is wrong with one stored value of `column`; None when it holds what the column declares."""
    if raw is None:
        return None
    kind = column.type
    if isinstance(kind, sa.JSON):
        if not isinstance(raw, (str, bytes)):
            return f"holds {type(raw).__name__} {str(raw)[:40]!r}, not JSON text"
        try:
            value = json.loads(raw)
        except RecursionError:
            return f"holds JSON nested deeper than {MAX_JSON_DEPTH} levels"
        except ValueError as exc:
            return f"holds text that is not JSON ({exc})"
        if _depth(value) > MAX_JSON_DEPTH:
            return f"holds JSON nested deeper than {MAX_JSON_DEPTH} levels"
        if value is None:  # JSON null: the column's None
            return None
        if column.name in ("config", "model_options", "extra", "spec", "step_info") and not isinstance(value, dict):
            return f"holds a JSON {type(value).__name__}, not an object"
        if column.name in ("mc_scores", "decisions") and not isinstance(value, list):
            return f"holds a JSON {type(value).__name__}, not a list"
        if column.name == "mc_scores" and not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in value
        ):
            return "holds a pass score that is not a number"
        if column.name == "decisions" and not all(isinstance(v, dict) for v in value):
            return "holds a decision that is not an object"
        return None
    if isinstance(kind, (sa.Integer, sa.Float, sa.Boolean)) and not isinstance(raw, (int, float)):
        return f"holds {str(raw)[:40]!r} where a number belongs"
    if isinstance(kind, sa.String) and not isinstance(raw, str):
        return f"holds {type(raw).__name__} {str(raw)[:40]!r} where text belongs"
    return None


def _rows(conn: sa.Connection, table: sa.Table, run_ids: Iterable[str]) -> Iterable[dict[str, Any]]:
    cols = ", ".join(f'"{c.name}"' for c in table.columns)
    ids = list(run_ids)
    marks = ", ".join("?" for _ in ids) if conn.dialect.name == "sqlite" else ", ".join("%s" for _ in ids)
    sql = f'SELECT {cols} FROM "{table.name}" WHERE "run_id" IN ({marks})'  # noqa: S608 - names from the schema
    for row in conn.exec_driver_sql(sql, tuple(ids)):
        yield dict(zip([c.name for c in table.columns], row))


def find_damage(store: Any, run_ids: Iterable[str]) -> str | None:
    """The first damaged row among the runs `run_ids`, as one line (`table runs, row run_id=abc: column config
    holds ...`); None when every row holds what its columns declare."""
    ids = [str(r) for r in run_ids]
    if not ids:
        return None
    with store.engine.connect() as conn:
        for table in RUN_TABLES:
            keys = [c.name for c in table.primary_key.columns]
            for row in _rows(conn, table, ids):
                for column in table.columns:
                    fault = _fault(column, row[column.name])
                    if fault is not None:
                        where = ", ".join(f"{k}={str(row[k])[:64]}" for k in keys)
                        return f"the run log is damaged: table {table.name}, row {where}: column {column.name} {fault}"
    return None


def raw_run_ids(store: Any, prefix: str | None = None, limit: int = 1) -> list[str]:
    """Run ids as stored (no other column read, so a damaged row cannot fail this): those starting with `prefix`,
    else the newest `limit`."""
    t = S.runs
    query = sa.select(t.c.run_id)
    if prefix:
        query = query.where(t.c.run_id.startswith(prefix, autoescape=True)).limit(2)
    else:
        query = query.order_by(t.c.started_at.desc()).limit(limit)
    with store.engine.connect() as conn:
        return [str(r) for r in conn.execute(query).scalars()]


READ_ERRORS = (ValueError, TypeError, AttributeError, KeyError, IndexError, RecursionError, sa.exc.SQLAlchemyError)


def damaged(store: Any, run_ids: Iterable[str], exc: BaseException) -> StorageError:
    """The one-line error for a read of `run_ids` that raised `exc`: the damaged row when one is found, else the
    exception in one line (field 'db')."""
    try:
        said = find_damage(store, run_ids)
    except Exception as scan:  # noqa: BLE001 - the scan itself met the damage: report the first failure
        said = None
        exc = scan
    return StorageError(
        said
        or f"the run log could not be read ({type(exc).__name__}: {str(exc)[:200]}); "
        "it may be damaged or written by another program",
        field="db",
    )
