"""Best-of-N: N independent solutions, each scored once by the PRM when it ends; the answer is the
weighted majority (or, with weighted=False, the single best-scored solution)."""

from __future__ import annotations

from ..records import Decision, StepInfo
from ..tree import Node
from .base import SearchContext, SearchMethod, active, terminal


class BestOfN(SearchMethod):
    name = "best-of-n"
    config_fields = frozenset({"weighted"})
    step_fields = frozenset({"finished", "weighted"})

    def vote_rule(self) -> str:
        """weighted=False: the single best-scored solution, whatever the aggregation."""
        return self.config.aggregation if self.config.weighted else "best"

    def search(self, ctx: SearchContext) -> list[Node]:
        cfg = self.config
        finals: list[Node] = []
        frontier: list[tuple[int, int]] = [(0, cfg.budget)]
        for t in range(1, cfg.max_iterations + 1):
            ctx.begin_iteration(t)
            new = ctx.expand(frontier, t)
            if t == cfg.max_iterations:
                ctx.truncate(active(new))
            done = terminal(new)
            ctx.score(done, t)  # only finished solutions are scored: Best-of-N never looks at partial ones
            finals.extend(done)
            decisions = [Decision(node_id=nid, children=k) for nid, k in frontier if nid != 0]
            frontier = [(n.id, 1) for n in active(new)]
            for n in active(new):
                n.children_granted = 1
            ctx.end_iteration(t, decisions, StepInfo(width=len(new), finished=len(finals), weighted=cfg.weighted))
            if not frontier:
                break
        return finals
