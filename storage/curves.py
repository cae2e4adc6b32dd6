"""Named training curves (A-UATS controller training writes one point per round; the app draws them)."""

from __future__ import annotations

import time
from typing import Any

import sqlalchemy as sa

from . import schema as S


class TrainingCurves:
    """Mixed into RunStore (it supplies `engine`)."""

    engine: sa.Engine

    def append_curve(self, name: str, row: dict[str, Any], step: int | None = None) -> None:
        """Add one point to a named training curve (step defaults to row['round'], else the next index)."""
        with self.engine.begin() as conn:
            if step is None:
                step = row.get("round")
            if step is None:
                last = conn.execute(sa.select(sa.func.max(S.curves.c.step)).where(S.curves.c.name == name)).scalar()
                step = 0 if last is None else int(last) + 1
            conn.execute(sa.delete(S.curves).where(S.curves.c.name == name, S.curves.c.step == int(step)))
            conn.execute(
                sa.insert(S.curves), [{"name": name, "step": int(step), "data": row, "written_at": time.time()}]
            )

    def get_curve(self, name: str) -> list[dict[str, Any]]:
        q = sa.select(S.curves.c.step, S.curves.c.data).where(S.curves.c.name == name).order_by(S.curves.c.step)
        with self.engine.connect() as conn:
            return [{"step": r.step, **r.data} for r in conn.execute(q)]

    def list_curves(self) -> list[str]:
        with self.engine.connect() as conn:
            return [r[0] for r in conn.execute(sa.select(S.curves.c.name).distinct().order_by(S.curves.c.name))]
