"""Reading a run's nodes back in the shape of uats_core.tree.Node.record(): one key, `id`, for the node's id
(the column is `node_id`; no dict that leaves the run log carries both), plus k and updated_iter.

Bulk reads of a whole run's nodes, fast enough to open a 100,000-node run in the app within seconds.

On both databases the run log lives in (SQLite, PostgreSQL) the rows come straight from the driver and are converted
here as SQLAlchemy would (JSON text to values, 0/1 to booleans; PostgreSQL hands its JSON columns over as text, cast
in the query, and its booleans as booleans); SQLAlchemy's per-row result processing was half the time of loading a
big run. tests/test_bigtree.py checks the result equals RunStore.get_nodes on each."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa

from . import schema as S

ID_COLUMN = "node_id"  # the nodes table's column for what Node.record() calls "id"


def node_dict(m: Any) -> dict[str, Any]:
    """A stored nodes row as a node record: `id` for the node_id column, extra fields spread out."""
    d = {("id" if k == ID_COLUMN else k): v for k, v in m.items()}
    d.pop("run_id", None)
    extra = d.pop("extra", None)
    if extra:
        for k, v in extra.items():
            d.setdefault(k, v)
    if d.get("mc_scores") is None:
        d["mc_scores"] = []
    return d


def _bool(v: Any) -> bool | None:
    return None if v is None else bool(v)


_loads: Callable[[Any], Any]
try:  # orjson (a Gradio dependency) parses a 100,000-node column several times faster; json otherwise
    import orjson

    _loads = orjson.loads
except ImportError:  # pragma: no cover - storage does not require it
    _loads = json.loads


def _json_column(values: list[Any]) -> list[Any]:
    """Decode a whole column of JSON texts with one parser call (per-value json.loads was most of the load)."""
    return _loads("[" + ",".join("null" if v is None else v for v in values) + "]")


_TABLE_COLUMNS = [c for c in S.nodes.columns if c.name != "run_id"]  # the run is known: not read per row
_COLUMNS = [c.name for c in _TABLE_COLUMNS]
_JSON = [i for i, c in enumerate(_TABLE_COLUMNS) if isinstance(c.type, sa.JSON)]
_BOOL = [i for i, c in enumerate(_TABLE_COLUMNS) if isinstance(c.type, sa.Boolean)]
_EXTRA = _COLUMNS.index("extra")
_SCORES = _COLUMNS.index("mc_scores")


def _select(dialect: str) -> str:
    """The nodes of one run, in node order, with the JSON columns as text on either database."""
    cols = [
        f'CAST("{c}" AS TEXT)' if i in _JSON and dialect == "postgresql" else f'"{c}"' for i, c in enumerate(_COLUMNS)
    ]
    mark = "?" if dialect == "sqlite" else "%s"
    return f"SELECT {', '.join(cols)} FROM nodes WHERE run_id = {mark} ORDER BY node_id"


_SQL = {dialect: _select(dialect) for dialect in ("sqlite", "postgresql")}


def read_nodes(store: Any, run_id: str) -> list[dict[str, Any]]:
    """store.get_nodes(run_id), read by the driver."""
    with store.engine.connect() as conn:
        cur = conn.connection.driver_connection.cursor()
        try:
            cur.execute(_SQL[conn.dialect.name], (run_id,))
            rows = cur.fetchall()
        finally:
            cur.close()
    columns = [list(col) for col in zip(*rows)] if rows else [[] for _ in _COLUMNS]
    for i in _JSON:
        columns[i] = _json_column(columns[i])
    for i in _BOOL:
        columns[i] = [_bool(v) for v in columns[i]]
    # node_dict's work, column-wise: no per-row copies (the per-row dict building was a quarter of a big load)
    columns[_SCORES] = [[] if v is None else v for v in columns[_SCORES]]
    extras = columns[_EXTRA]
    names = ["id" if c == ID_COLUMN else c for c in _COLUMNS if c != "extra"]
    keep = [col for i, col in enumerate(columns) if i != _EXTRA]
    out = [dict(zip(names, values)) for values in zip(*keep)]
    for d, extra in zip(out, extras):
        if extra:
            d.update({k: v for k, v in extra.items() if k not in d})
    if not out:
        store.get_run(run_id)  # a run without nodes yet is fine; a missing run is an error
    return out
