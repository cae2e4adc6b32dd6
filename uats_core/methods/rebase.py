"""REBASE (Wu et al.): children ∝ exp(R/T) over the current candidates; each finished solution lowers the
width by one, and the search ends when the width is used up.

SearchConfig.rebase_scoring='mc' is a rung of the ablation ladder between REBASE and H-UATS (docs/eval.md):
each child is scored with the mean R̄ of K0 MC-dropout passes instead of one deterministic pass, and the passes
are paid for out of the width. A child then costs c+K0 instead of c+1, so the step's spend is H-UATS's carry rule
(uats_core/spending.py) with no re-evaluation share: REBASE's per-step allowance (N − F_t)(c+1) buys C_t children
at c+K0 each, what rounding leaves carried to the next step. Allocation stays REBASE's (softmax at T, sequential
ceil), so against H-UATS without re-evaluation only the rounding of the children differs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..allocation import rebase_children
from ..config import ConfigError, SearchConfig
from ..estimators import estimator_class
from ..records import Decision, StepInfo
from ..spending import RULE_STEP_FIELDS, SpendingRule, spending_rule
from ..tree import Node
from .base import SearchContext, SearchMethod, active, terminal


@dataclass
class WidthSlots:
    """REBASE's own accounting: N slots, one deterministic pass a child; a finished solution frees its slot."""

    width_left: int

    def plan(self, t: int) -> int:
        return 0

    def width(self, reeval_used: int) -> int:
        return self.width_left

    def settle(self, spent: float, finished: int) -> None:
        self.width_left -= finished

    @property
    def live(self) -> bool:
        return self.width_left > 0

    def info(self) -> dict[str, Any]:
        return {"width_left": self.width_left}


class WidthSearch(SearchMethod):
    """The REBASE loop, shared with DORA, which only changes how children are allocated. Iteration t:
    allocate children over the candidates of t−1, generate them, score them (one PRM pass each, or K0 MC passes
    under rebase_scoring='mc')."""

    def allocate(
        self, ctx: SearchContext, candidates: Sequence[Node], width: int, t: int
    ) -> tuple[list[int], dict[str, Any]]:
        raise NotImplementedError

    @classmethod
    def check_affordable(cls, config: SearchConfig) -> None:
        cls._mc_spending(config)

    @staticmethod
    def _mc_spending(cfg: SearchConfig) -> SpendingRule | None:
        """Under rebase_scoring='mc', the carry rule without re-evaluation (ConfigError when N(c+1) cannot buy one
        child at c+K0); None otherwise."""
        if cfg.rebase_scoring != "mc":
            return None
        est = estimator_class(cfg.estimator)
        spending = spending_rule("carry", cfg.budget, cfg.cost_ratio, est.first_samples(cfg.k0), 0.0, est.sample_cost)
        if not spending.can_start():
            raise ConfigError(
                "budget",
                f"N={cfg.budget} cannot pay for one child at K0={cfg.k0} passes "
                f"(c+K0={spending.per_child:g} > N(c+1)={spending.step_cap:g}); raise the "
                "budget or lower k0",
            )
        return spending

    def _accounting(self) -> WidthSlots | SpendingRule:
        return self._mc_spending(self.config) or WidthSlots(self.config.budget)

    def search(self, ctx: SearchContext) -> list[Node]:
        cfg = self.config
        mc = cfg.rebase_scoring == "mc"
        slots = self._accounting()
        finals: list[Node] = []
        new: list[Node] = []
        for t in range(1, cfg.max_iterations + 1):
            ctx.begin_iteration(t)
            decisions: list[Decision] = []
            info: dict[str, Any] = {}
            slots.plan(t)
            width = slots.width(0)
            if t == 1:
                frontier = [(0, width)]
            else:
                candidates = active(new)
                counts, info = self.allocate(ctx, candidates, width, t)
                decisions = ctx.grant(candidates, counts)
                frontier = [(n.id, k) for n, k in zip(candidates, counts) if k]
            new = ctx.expand(frontier, t)
            if mc:
                ctx.mc_score(new, cfg.k0, t, cfg.alpha)
            else:
                ctx.score(new, t)
            done = terminal(new)
            finals.extend(done)
            slots.settle(ctx.cost_step, len(done))
            ctx.end_iteration(
                t,
                decisions,
                StepInfo(
                    width=sum(k for _, k in frontier), cap=cfg.budget * (cfg.cost_ratio + 1), **info, **slots.info()
                ),
            )
            if not slots.live or not active(new):
                break
        finals.extend(ctx.settle_leftovers(active(new), slots.live))
        return finals


# The MC-dropout fields that change REBASE's result once it scores with the MC mean (rebase_scoring='mc').
MC_FIELDS = frozenset({"k0", "dropout_p", "dropout_mode", "estimator"})


class Rebase(WidthSearch):
    name = "rebase"
    config_fields = frozenset({"rebase_temperature", "rebase_scoring"})
    switches = {"rebase_scoring": ("single", "MC-mean scoring of REBASE is a REBASE setting")}
    step_fields = frozenset({"cap", "temperature", "width_left"}) | RULE_STEP_FIELDS["carry"]  # 'mc' spends by it

    @classmethod
    def variant_fields(cls, values: Mapping[str, Any]) -> frozenset[str]:
        return cls.config_fields | MC_FIELDS if values.get("rebase_scoring") == "mc" else cls.config_fields

    def allocate(
        self, ctx: SearchContext, candidates: Sequence[Node], width: int, t: int
    ) -> tuple[list[int], dict[str, Any]]:
        scores = [n.scored_mean for n in candidates]
        return rebase_children(scores, width, self.config.rebase_temperature), {
            "temperature": self.config.rebase_temperature
        }
