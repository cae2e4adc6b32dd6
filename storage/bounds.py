"""What the run log's columns can hold, read from the schema (storage/schema.py is the one definition): every
value a front end puts into a row is checked here before anything is written, so a value the database would
refuse fails as one line naming its field, not as the database's own error (PostgreSQL's quotes the whole
statement and its parameters) or a driver's traceback.

The bounds are the strictest of the databases the run log supports: PostgreSQL's INTEGER holds 32 bits
(SQLite's 64), its text holds no NUL character, and no driver sends text that is not valid Unicode."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa

from uats_core.problems import lone_surrogate

from . import schema as S
from .connection import StorageError

# Bits of each integer type as PostgreSQL stores it; the most specific class first (both subclass Integer).
_INT_BITS = ((sa.BigInteger, 64), (sa.SmallInteger, 16), (sa.Integer, 32))


def int_range(column: sa.Column) -> tuple[int, int]:
    """The integers `column` holds on every supported database."""
    bits = next(b for t, b in _INT_BITS if isinstance(column.type, t))
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


def check_value(column: sa.Column, value: Any) -> None:
    """StorageError(field=the column's name) unless `value` fits `column` (type, length, range, nullability)."""
    field = column.name
    where = f"the run log's {column.table.name}.{column.name} column"
    if value is None:
        if not column.nullable:
            raise StorageError(f"is required ({where} cannot be empty)", field=field)
        return
    kind = column.type
    if isinstance(kind, sa.Boolean):
        ok = isinstance(value, bool)
    elif isinstance(kind, sa.Integer):
        lo, hi = int_range(column)
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise StorageError(
                f"must be an integer from {lo} to {hi} ({where} holds no more); got {_short(value)}", field=field
            )
        return
    elif isinstance(kind, sa.Float):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    elif isinstance(kind, sa.String):  # Text too
        _check_text(value, field, max_chars(column), where)
        return
    elif isinstance(kind, sa.JSON):
        _check_json(value, field, where, max_chars(column))
        return
    else:  # a column type this module does not know: the schema grew; teach it here
        raise TypeError(f"no bounds for {column.table.name}.{column.name} ({kind!r})")
    if not ok:
        raise StorageError(f"{where} takes a {kind.python_type.__name__}; got {_short(value)}", field=field)


def max_chars(column: sa.Column) -> int | None:
    """The most characters `column` takes: a String's length, or the bound schema.py gives a Text or JSON column
    in its info (`max_chars`: what a client types there, or a JSON value's text, is bounded too)."""
    return getattr(column.type, "length", None) or column.info.get("max_chars")


def _check_text(value: Any, field: str, length: int | None, where: str) -> None:
    if not isinstance(value, str):
        raise StorageError(f"{where} takes text; got {type(value).__name__}", field=field)
    if "\x00" in value:
        raise StorageError(f"contains a NUL character (\\x00), which {where} cannot store; remove it", field=field)
    at = lone_surrogate(value)
    if at is not None:
        raise StorageError(
            f"is not valid Unicode text (character {at + 1} is a lone surrogate {value[at]!r}); give UTF-8 text",
            field=field,
        )
    if length is not None and len(value) > length:
        raise StorageError(
            f"is {len(value):,} characters long; {where} holds at most {length:,}; shorten it", field=field
        )


def storable_text(value: str) -> str:
    """Model-written text as every supported database stores it: a NUL and a lone surrogate (which PostgreSQL
    and the drivers refuse) become U+FFFD. For text a search generated, where refusing would lose the run;
    text a person typed is checked by check_value instead."""
    if "\x00" in value:
        value = value.replace("\x00", "\ufffd")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        value = "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in value)
    return value


def _check_json(value: Any, field: str, where: str, length: int | None = None) -> None:
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:  # an object JSON cannot hold, NaN or infinity, a cycle
        raise StorageError(
            f"{where} holds JSON, and this value is not ({exc}); give numbers, text, lists and objects only",
            field=field,
        ) from None
    if length is not None and len(text) > length:
        raise StorageError(
            f"is {len(text):,} characters long as JSON; {where} holds at most {length:,}; shorten it", field=field
        )


def check_row(table: sa.Table, values: Mapping[str, Any]) -> None:
    """Check each of `values` (by column name) against `table`; StorageError naming the first that does not fit."""
    for name, value in values.items():
        check_value(table.c[name], value)


def check_run_fields(**values: Any) -> None:
    """check_row for a `runs` row: what an entry point calls before it loads a model or writes anything."""
    check_row(S.runs, values)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
