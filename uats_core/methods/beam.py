"""Beam search (search-and-learn): N beams each write one step, the PRM scores them, the top N/M are
kept and each is expanded M times. Finished beams are set aside; the search ends once N have finished."""

from __future__ import annotations

from ..config import SearchConfig
from ..records import StepInfo
from ..tree import Node
from .base import SearchContext, SearchMethod, active, check_width_divides, terminal


class BeamSearch(SearchMethod):
    name = "beam"
    config_fields = frozenset({"beam_width"})
    step_fields = frozenset({"keep", "beam_width", "finished"})

    @classmethod
    def check_config(cls, config: SearchConfig) -> None:
        check_width_divides(config, "beam search and DVTS")

    def search(self, ctx: SearchContext) -> list[Node]:
        cfg = self.config
        m, keep = cfg.beam_width, cfg.budget // cfg.beam_width
        finals: list[Node] = []
        frontier: list[tuple[int, int]] = [(0, cfg.budget)]
        new: list[Node] = []
        for t in range(1, cfg.max_iterations + 1):
            ctx.begin_iteration(t)
            decisions = []
            if t > 1:
                candidates = sorted(active(new), key=lambda n: (-n.scored_mean, n.id))
                counts = [m if i < keep else 0 for i in range(len(candidates))]
                decisions = ctx.grant(candidates, counts)
                frontier = [(n.id, k) for n, k in zip(candidates, counts) if k]
            new = ctx.expand(frontier, t)
            ctx.score(new, t)
            finals.extend(terminal(new))
            ctx.end_iteration(
                t, decisions, StepInfo(width=sum(k for _, k in frontier), keep=keep, beam_width=m, finished=len(finals))
            )
            if len(finals) >= cfg.budget or not active(new):
                break
        finals.extend(ctx.settle_leftovers(active(new), len(finals) < cfg.budget))
        # Like search-and-learn, answer from the N best completed beams.
        return sorted(finals, key=lambda n: (-n.scored_mean, n.id))[: cfg.budget]
