"""How H-UATS and A-UATS spend their compute, step by step, at REBASE's budget.

Units: one PRM pass costs 1, one generated step c. REBASE spends (c+1) per live slot per step and each finished
solution frees its slot; a UATS child costs c+K0 (its generation and K0 passes), re-evaluation passes cost 1 each.

`CarryRule` (the default, SearchConfig.spend_rule='carry'). Step t's allowance is

    A_t = (N − F_t)(c+1),      F_t = solutions finished before t,

exactly what REBASE spends at a step with F_t solutions finished (a finished solution frees what its REBASE slot
cost, c+1, not a UATS child's price). With the carry X_t (what earlier steps left unspent) the step may spend
A_t + X_t:

1. re-evaluate first: B_t = ⌊β·ρ·A_t⌋, capped to leave one child affordable (t = 1 has nothing to re-evaluate);
2. the width takes what re-evaluation did not use, L_t = A_t + X_t − B_used: C_t = round(γ'·L_t/(c+K0)),
   γ' = min(γ, 1), to the nearest child, but rounded up only while Σ_{s≤t} spend_s ≤ t·N(c+1) still holds;
3. X_{t+1} = L_t − C_t·(c+K0): under one child's price when γ ≥ 1, or a debt of at most half a child after
   rounding up.

So the cumulative cap Σ_{s≤t} spend_s ≤ t·N(c+1) holds at every step, and nothing is lost to rounding or to an
unused B except what is left when the search ends. The search goes on while REBASE would (A_t > 0), A_t + X_t
holds half a child's price or more (the last live slot, worth c+1 < c+K0 a step, still buys children on the
carry) and the cumulative cap has room for one child. β and γ act in that order and each is recorded with what
it asked for, so a knob the step's cap cannot honour is visible in the step's info, never dropped silently.

`PaperRule` ('paper'): the per-step rule as the paper states it: C = ⌊(1−ρ)·N(c+1)/(c+K0)⌋ and B = the rest of
N(c+1) (allocation.split_step_spend), both scaled down by the share of C still live; an unused B and the
rounding of C are lost. Kept to compare against."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .allocation import scaled_step_spend, split_step_spend
from .config import SPEND_RULES
from .errors import ConfigError
from .estimators import estimator_class

EPS = 1e-9


@dataclass
class _Rule:
    budget: int  # N
    cost_ratio: float  # c
    k0: int
    reeval_share: float  # ρ
    sample_cost: float = 1.0  # s: what one estimator sample costs, in PRM passes (uats_core/estimators)
    finished: int = 0
    spent: float = 0.0

    name = ""

    @property
    def per_child(self) -> float:
        return self.cost_ratio + self.k0 * self.sample_cost

    @property
    def step_cap(self) -> float:
        return self.budget * (self.cost_ratio + 1.0)

    def settle(self, spent: float, finished: int) -> None:
        """After the step: what it really cost, and how many solutions it finished."""
        self.spent += spent
        self.finished += finished


@dataclass
class CarryRule(_Rule):
    carry: float = 0.0  # negative: a debt of under half a child from rounding up
    _allowance: float = 0.0  # A_t of the step last planned
    _available: float = 0.0
    _gamma: float = 1.0
    _t: int = 1
    _reeval_asked: int = 0
    _reeval_passes: int = 0
    _width_asked: int = 0

    name = "carry"

    @property
    def allowance(self) -> float:
        return max(0.0, (self.budget - self.finished) * (self.cost_ratio + 1.0))

    @property
    def live(self) -> bool:
        """Whether another step can buy a child: REBASE would still have a live slot, the allowance and carry
        hold at least half a child's price (the nearest rounding of one child), and the cumulative cap has room."""
        return (
            self.allowance > 0
            and self.allowance + self.carry + EPS >= self.per_child / 2
            and self.spent + self.per_child <= (self._t + 1) * self.step_cap + EPS
        )

    def can_start(self) -> bool:
        return self.step_cap + EPS >= self.per_child

    def plan(self, t: int, beta: float = 1.0, gamma: float = 1.0) -> int:
        """Open step t; returns B_t, the re-evaluation passes it may spend before the width is set."""
        self._allowance, self._available, self._gamma, self._t = self.allowance, self.allowance + self.carry, gamma, t
        if t <= 1:
            self._reeval_asked = self._reeval_passes = 0
            return 0
        # in samples: B_t's passes over what a sample costs (s = 1 for MC dropout, where they are the same)
        self._reeval_asked = int(
            math.floor(max(beta, 0.0) * self.reeval_share * self.allowance / self.sample_cost + EPS)
        )
        room = max(0.0, self._available - self.per_child)  # one child's price stays for the width
        self._reeval_passes = max(0, min(self._reeval_asked, int(math.floor(room / self.sample_cost + EPS))))
        return self._reeval_passes

    def width(self, reeval_used: int) -> int:
        """C_t: children this step, from what re-evaluation left."""
        if reeval_used > self._reeval_passes:
            raise ValueError(f"re-evaluation used {reeval_used} passes of the {self._reeval_passes} offered")
        left = self._available - reeval_used * self.sample_cost
        affordable = int(math.floor(left / self.per_child + EPS))
        # Round the last fraction of a child up when the cumulative cap t·N(c+1) has room for it.
        cap_room = self._t * self.step_cap - self.spent - reeval_used * self.sample_cost
        if left / self.per_child - affordable >= 0.5 - EPS and (affordable + 1) * self.per_child <= cap_room + EPS:
            affordable += 1
        self._width_asked = int(math.floor(max(self._gamma, 0.0) * left / self.per_child + 0.5 + EPS))
        # A live step always grows the tree, whatever γ says.
        return max(min(self._width_asked, affordable), 1 if affordable >= 1 else 0)

    def settle(self, spent: float, finished: int) -> None:
        self.carry = self._available - spent
        super().settle(spent, finished)

    def info(self) -> dict[str, Any]:
        return {
            "spend_rule": self.name,
            "available": self._available,
            "allowance": self._allowance,
            "carry": self.carry,
            "spent_total": self.spent,
            "reeval_asked": self._reeval_asked,
            "width_asked": self._width_asked,
        }


@dataclass
class PaperRule(_Rule):
    _width: int = 0
    _reeval: int = 0

    name = "paper"

    def __post_init__(self) -> None:
        self.base_width, self.base_reeval = split_step_spend(self.budget, self.cost_ratio, self.k0, self.reeval_share)

    @property
    def width_left(self) -> int:
        return self.base_width - self.finished

    @property
    def live(self) -> bool:
        return self.width_left > 0

    def can_start(self) -> bool:
        return self.base_width >= 1

    def plan(self, t: int, beta: float = 1.0, gamma: float = 1.0) -> int:
        # The paper's order: the width (γ) is set first and the re-evaluation passes (β) get what the step's cap
        # leaves, so a wide step cuts B.
        self._width, self._reeval = scaled_step_spend(
            self.base_width, self.base_reeval, self.width_left, self.cost_ratio, self.k0, self.step_cap, beta, gamma
        )
        if t <= 1:
            self._reeval = 0
        return self._reeval

    def width(self, reeval_used: int) -> int:
        return self._width

    def info(self) -> dict[str, Any]:
        return {
            "spend_rule": self.name,
            "base_width": self.base_width,
            "base_reeval_passes": self.base_reeval,
            "width_left": self.width_left,
            "spent_total": self.spent,
        }


SpendingRule = CarryRule | PaperRule
# The StepInfo fields each rule's info() fills (a method that spends by them declares them among its step_fields).
RULE_STEP_FIELDS = {
    "carry": frozenset({"spend_rule", "available", "allowance", "carry", "spent_total", "reeval_asked", "width_asked"}),
    "paper": frozenset({"spend_rule", "base_width", "base_reeval_passes", "width_left", "spent_total"}),
}


def spending_rule(
    rule: str, budget: int, cost_ratio: float, k0: int, reeval_share: float, sample_cost: float = 1.0
) -> SpendingRule:
    if rule == "carry":
        return CarryRule(budget, cost_ratio, k0, reeval_share, sample_cost)
    if rule == "paper":
        if sample_cost != 1.0:
            raise ConfigError("spend_rule", "the paper's rule prices a pass at 1; use carry with this estimator")
        return PaperRule(budget, cost_ratio, k0, reeval_share)
    raise ValueError(f"unknown spend rule {rule!r}; use one of {', '.join(SPEND_RULES)}")


def config_spending(cfg: Any) -> SpendingRule:
    """A SearchConfig's rule: a child costs c + (the estimator's first samples)·s, or c+1 with single-pass scoring
    (which re-evaluates nothing, as an estimator that cannot add samples does not); the counterfactual 'off' buys its
    children as 'mc' does (config.UATS_SCORINGS)."""
    if cfg.prm_scoring == "single":
        return spending_rule(cfg.spend_rule, cfg.budget, cfg.cost_ratio, 1, 0.0)
    est = estimator_class(getattr(cfg, "estimator", "mc-dropout"))
    return spending_rule(
        cfg.spend_rule,
        cfg.budget,
        cfg.cost_ratio,
        est.first_samples(cfg.k0),
        cfg.reeval_share if est.adds_samples else 0.0,
        est.sample_cost,
    )


def check_affordable(cfg: Any) -> None:
    """UATS buys children at c+K0 each out of N(c+1) a step: refuse a budget that cannot buy one before any model
    loads or any run is logged (the search itself would stop at its first step)."""
    spending = config_spending(cfg)
    if not spending.can_start():
        raise ConfigError(
            "budget",
            f"N={cfg.budget} cannot pay for one child at K0={cfg.k0} passes "
            f"(c+K0={spending.per_child:g} > N(c+1)={spending.step_cap:g}); raise the budget "
            "or lower k0",
        )
