"""DVTS (diverse verifier tree search): N/M independent subtrees; inside each, the M children of the
current node are scored and only the best goes on. A subtree ends when its best child ends the solution,
and its M last candidates are its final answers."""

from __future__ import annotations

from collections import defaultdict

from ..config import SearchConfig
from ..records import StepInfo
from ..tree import Node
from .base import SearchContext, SearchMethod, check_width_divides


class DVTS(SearchMethod):
    name = "dvts"
    config_fields = frozenset({"beam_width"})
    step_fields = frozenset({"subtrees_open", "beam_width"})

    @classmethod
    def check_config(cls, config: SearchConfig) -> None:
        check_width_divides(config, "beam search and DVTS")

    def search(self, ctx: SearchContext) -> list[Node]:
        cfg = self.config
        m, n_subtrees = cfg.beam_width, cfg.budget // cfg.beam_width
        finals: list[Node] = []
        frontier = [(0, m)] * n_subtrees
        subtrees = list(range(n_subtrees))
        for t in range(1, cfg.max_iterations + 1):
            ctx.begin_iteration(t)
            new = ctx.expand(frontier, t, subtrees=subtrees)
            ctx.score(new, t)
            by_subtree: dict[int, list[Node]] = defaultdict(list)
            for node in new:
                assert node.subtree is not None  # expand() gives every DVTS child its subtree
                by_subtree[node.subtree].append(node)
            decisions, frontier, subtrees = [], [], []
            for sub, children in sorted(by_subtree.items()):
                best = max(children, key=lambda n: (n.scored_mean, -n.id))
                if best.is_terminal or t == cfg.max_iterations:
                    ctx.truncate([best])  # a no-op when the best child finished by itself
                    unfinished = [n for n in children if not n.is_terminal]
                    decisions += ctx.grant(unfinished, [0] * len(unfinished))
                    finals.extend(n for n in children if n.is_terminal)
                    continue
                rest = [n for n in children if n is not best and not n.is_terminal]
                decisions += ctx.grant([best] + rest, [m] + [0] * len(rest))
                frontier.append((best.id, m))
                subtrees.append(sub)
            ctx.end_iteration(t, decisions, StepInfo(width=len(new), subtrees_open=len(frontier), beam_width=m))
            if not frontier:
                break
        return finals
