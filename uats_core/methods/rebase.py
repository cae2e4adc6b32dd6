"""REBASE (Wu et al.): children ∝ exp(R/T) over the current candidates; each finished solution lowers the
width by one, and the search ends when the width is used up."""

from __future__ import annotations

from typing import Any, Sequence

from ..allocation import rebase_children
from ..records import Decision, StepInfo
from ..tree import Node
from .base import SearchContext, SearchMethod, active, terminal


class WidthSearch(SearchMethod):
    """The REBASE loop, shared with DORA, which only changes how children are allocated. Iteration t:
    allocate children over the candidates of t−1, generate them, score them (one PRM pass each)."""

    def allocate(self, ctx: SearchContext, candidates: Sequence[Node], width: int, t: int) -> tuple[list[int], dict[str, Any]]:
        raise NotImplementedError

    def search(self, ctx: SearchContext) -> list[Node]:
        cfg = self.config
        width = cfg.budget
        finals: list[Node] = []
        frontier: list[tuple[int, int]] = [(0, width)]
        new: list[Node] = []
        for t in range(1, cfg.max_iterations + 1):
            ctx.begin_iteration(t)
            decisions: list[Decision] = []
            info: dict[str, Any] = {}
            if t > 1:
                candidates = active(new)
                counts, info = self.allocate(ctx, candidates, width, t)
                decisions = ctx.grant(candidates, counts)
                frontier = [(n.id, k) for n, k in zip(candidates, counts) if k]
            new = ctx.expand(frontier, t)
            ctx.score(new, t)
            done = terminal(new)
            finals.extend(done)
            width -= len(done)
            ctx.end_iteration(t, decisions, StepInfo(width=sum(k for _, k in frontier), width_left=width,
                                                     cap=cfg.budget * (cfg.cost_ratio + 1), **info))
            if width <= 0 or not active(new):
                break
        finals.extend(ctx.settle_leftovers(active(new), width > 0))
        return finals


class Rebase(WidthSearch):
    name = "rebase"

    def allocate(self, ctx: SearchContext, candidates: Sequence[Node], width: int, t: int) -> tuple[list[int], dict[str, Any]]:
        scores = [float(n.mean) for n in candidates]
        return rebase_children(scores, width, self.config.rebase_temperature), {"temperature": self.config.rebase_temperature}
