"""Stars and notes on runs and nodes: the cases a user keeps (the app's case list)."""

from __future__ import annotations

import time
from typing import Any

import sqlalchemy as sa

from . import schema as S
from .bounds import check_row
from .connection import StorageError


class StarsAndNotes:
    """Mixed into RunStore (it supplies `engine`)."""

    engine: sa.Engine

    def star_case(
        self, run_id: str, node_id: int = S.RUN_LEVEL, starred: bool = True, case_kind: str | None = None
    ) -> None:
        self._set_star(run_id, node_id, starred=bool(starred), **({"case_kind": case_kind} if case_kind else {}))

    def set_note(self, run_id: str, node_id: int = S.RUN_LEVEL, note: str = "") -> None:
        self._set_star(run_id, node_id, note=str(note))

    def save_case(self, run_id: str, node_id: int, starred: bool, note: str, case_kind: str | None = None) -> None:
        """The star and the note of a case in one checked write: a note past its bound changes neither."""
        self._set_star(
            run_id, node_id, starred=bool(starred), note=str(note), **({"case_kind": case_kind} if case_kind else {})
        )

    def _set_star(self, run_id: str, node_id: int, **values: Any) -> None:
        node_id = int(node_id)
        check_row(S.stars, dict(values, node_id=node_id))
        with self.engine.begin() as conn:
            if conn.execute(sa.select(S.runs.c.run_id).where(S.runs.c.run_id == run_id)).first() is None:
                raise StorageError(f"no run {run_id}", field="run")
            if (
                node_id != S.RUN_LEVEL
                and conn.execute(
                    sa.select(S.nodes.c.node_id).where(S.nodes.c.run_id == run_id, S.nodes.c.node_id == node_id)
                ).first()
                is None
            ):
                raise StorageError(f"run {run_id} has no node {node_id}", field="node")
            key = (S.stars.c.run_id == run_id) & (S.stars.c.node_id == node_id)
            values["updated_at"] = time.time()
            if conn.execute(sa.update(S.stars).where(key).values(**values)).rowcount == 0:
                row = dict(run_id=run_id, node_id=node_id, starred=False, note="", case_kind=None)
                row.update(values)
                conn.execute(sa.insert(S.stars), [row])

    def list_stars(self, run_id: str | None = None, starred_only: bool = False) -> list[dict[str, Any]]:
        q = sa.select(S.stars).order_by(S.stars.c.updated_at.desc())
        if run_id is not None:
            q = q.where(S.stars.c.run_id == run_id)
        if starred_only:
            q = q.where(S.stars.c.starred.is_(True))
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(q)]

    def get_star(self, run_id: str, node_id: int = S.RUN_LEVEL) -> dict[str, Any] | None:
        with self.engine.connect() as conn:
            r = conn.execute(
                sa.select(S.stars).where(S.stars.c.run_id == run_id, S.stars.c.node_id == int(node_id))
            ).first()
        return dict(r._mapping) if r else None
