"""H-UATS and A-UATS (uncertainty-aware tree search), one search step t:

1. every new candidate gets K0 MC-dropout passes: R̄, σ² (ddof=1), K, R̂ = R̄ + α·sqrt(2 ln t / K);
2. OOD = {u > τ}; S = {h ∈ OOD : R̂(h) ≥ max_ID R̄ − δ} (best R̄ of all when ID is empty);
3. extra passes K_i = Round(B·softmax(R̂/ν1)) over S; update R̄, σ², K, R̂;
4. children N_i = Round(C·softmax(R̄/ν2)) over all candidates (SearchConfig.child_score may let OOD
   candidates compete with R̂ or R̄ + κσ instead: not in the paper, off by default).
Round is the largest-remainder method (allocation.largest_remainder): it conserves B and C exactly.
SearchConfig.prm_scoring='single' is the paper's "w/o Uncert." ablation: one deterministic pass a candidate
(R̄ = R̂ = its score), no gate and no B, so every unit of N(c+1) buys children at c+1 each. 'off' is the case
finder's counterfactual: one pass and no gate as 'single', but the children bought at c+K0 as H-UATS buys them, so
with step_streams it and H-UATS part only where uncertainty decided otherwise.

u is the gated statistic (estimation.OODGate). The paper defines σ_R² as the sample variance and writes the rule
σ_R(h) ≤ τ, σ_R the standard deviation: SearchConfig.uncertainty='std'. The default, σ² of the passes' scores, reads
τ = 0.003 on the variance scale instead, a choice (docs/backends.md, "The gate"); uncertainty_space='logit' reads the
spread of the passes' logits. R̄, R̂ and the δ rule stay on the probability scale in every case.

Iteration t here = decide (steps 2–4 on the candidates of t−1) then generate and K0-score the children
(step 1 for the candidates of t), so each iteration spends B_used + C·(c+K0) ≤ N·(c+1), REBASE's spend.
C and B come from allocation.split_step_spend; A-UATS's controller scales them by γ and β and sets
τ, δ, ν1, ν2, and allocation.scaled_step_spend keeps the cap whatever it asks for."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np

from ..allocation import child_scores, softmax_shares
from ..config import SearchConfig, tau_auto_quantile
from ..errors import ConfigError
from ..estimation import OODGate, reeval_candidates
from ..records import Decision, StepInfo
from ..spending import RULE_STEP_FIELDS, SpendingRule, check_affordable as check_uats_affordable, config_spending
from ..tree import Node
from .base import SearchContext, SearchMethod, active, step_stream, terminal

BETA_MAX = 3.0  # the most A-UATS's controller may scale the re-evaluation passes B by (H-UATS: β = 1)


@dataclass(frozen=True)
class Knobs:
    beta: float  # scales the re-evaluation passes B
    gamma: float  # scales the expansion width C
    tau: float
    delta: float
    nu1: float
    nu2: float

    @classmethod
    def from_config(cls, cfg: SearchConfig) -> Knobs:
        if isinstance(cfg.tau, str):  # validate_request resolves 'auto' before a search starts
            raise ConfigError("tau", f"{cfg.tau!r} must be resolved to a number before the search")
        return cls(beta=1.0, gamma=1.0, tau=cfg.tau, delta=cfg.delta, nu1=cfg.nu1, nu2=cfg.nu2)


KNOBS = tuple(f.name for f in fields(Knobs))
# A-UATS's controller: the step's state in, the six knobs out.
Controller = Callable[[Mapping[str, float]], Knobs]

STATE_FEATURES = ("mean_rbar", "max_rbar", "var_rbar", "mean_sigma", "max_sigma", "depth", "compute_left")
# A state feature's former name -> its name: the shipped controllers' controller.json and the results ledgers'
# controller.csv.gz were written before "budget" came to mean N alone, and are read through this.
RENAMED_FEATURES = {"budget_left": "compute_left"}


def current_feature_names(names: Sequence[str]) -> list[str]:
    """Feature names as this version calls them (a file written before a rename keeps loading)."""
    return [RENAMED_FEATURES.get(n, n) for n in names]


def step_state(candidates: Sequence[Node], t: int, spent: float, total: float, max_iterations: int) -> dict[str, float]:
    """A-UATS's state s_t: mean, max and variance of R̄ over the candidates; mean and max of σ; depth t
    (normalised by the iteration cap); compute_left = the share of the search's total compute not yet spent
    (N(c+1) per step up to the iteration cap). At t = 1 there are no candidates yet: their features are 0."""
    means = np.array([n.mean for n in candidates if n.mean is not None])
    sigmas = np.sqrt(np.array([float(n.var or 0.0) for n in candidates if n.mean is not None]))
    if not means.size:
        means = sigmas = np.zeros(1)
    return {
        "mean_rbar": float(means.mean()),
        "max_rbar": float(means.max()),
        "var_rbar": float(means.var()),
        "mean_sigma": float(sigmas.mean()),
        "max_sigma": float(sigmas.max()),
        "depth": (t - 1) / max_iterations,
        "compute_left": max(0.0, 1.0 - spent / total) if total else 0.0,
    }


# The fields UATS reads (both H-UATS and A-UATS; A-UATS's controller sets τ, δ, ν1, ν2 step by step from them).
UATS_FIELDS = frozenset(
    {
        "estimator",
        "k0",
        "alpha",
        "tau",
        "delta",
        "nu1",
        "nu2",
        "reeval_share",
        "dropout_p",
        "dropout_mode",
        "uncertainty",
        "uncertainty_space",
        "child_score",
        "child_sigma_weight",
        "prm_scoring",
        "step_streams",
    }
)


class UATS(SearchMethod):
    name = "h-uats"
    uses_uncertainty = True
    reeval_scale = 1.0  # β = 1: the re-evaluation passes as the config shares them
    config_fields = UATS_FIELDS
    switches: Mapping[str, tuple[Any, str]] = {"prm_scoring": ("mc", "single-pass scoring is an H-UATS ablation")}
    step_fields = frozenset({"cap", "state", "knobs", "reeval_passes", "reeval_used", "reference_mean"}).union(
        *RULE_STEP_FIELDS.values()
    )

    @classmethod
    def check_affordable(cls, config: SearchConfig) -> None:
        check_uats_affordable(config)

    @classmethod
    def without_uncertainty(cls) -> dict[str, Any]:
        """No re-evaluation passes: σ² and R̂ never steer it, and all of N(c+1) buys width."""
        return {"reeval_share": 0.0}

    def __init__(self, config: SearchConfig, controller: Controller | None = None) -> None:
        super().__init__(config)
        self.controller = controller

    def knobs(self, state: Mapping[str, float]) -> Knobs:
        if self.controller is None:
            return Knobs.from_config(self.config)
        return self.controller(state)

    def search(self, ctx: SearchContext) -> list[Node]:
        cfg = self.config
        if tau_auto_quantile(cfg.tau) is not None:
            raise ConfigError(
                "tau",
                f"{cfg.tau!r} must be resolved to a number before the search "
                "(uats_core.calibration.resolve_tau reads the calibration file beside the PRM)",
            )
        check_uats_affordable(cfg)  # check_limits did too; here for a search started without run_search
        # one deterministic pass a child: no σ², no gate, nothing to re-evaluate ('off': the counterfactual)
        single = cfg.prm_scoring in ("single", "off")
        # what the counterfactual's children would have cost under K0 passes: it buys its width as H-UATS does
        unpaid = cfg.k0 - 1 if cfg.prm_scoring == "off" else 0
        spending = config_spending(cfg)
        total = spending.step_cap * cfg.max_iterations
        finals: list[Node] = []
        new: list[Node] = []
        for t in range(1, cfg.max_iterations + 1):
            ctx.begin_iteration(t)
            candidates = active(new)
            if candidates and not single:
                ctx.refresh_ucb(candidates, t, cfg.alpha)
            state = step_state(candidates, t, ctx.cost_total, total, cfg.max_iterations)
            knobs = self.knobs(state)
            reeval_passes = spending.plan(t, knobs.beta, knobs.gamma)
            if t == 1:
                decisions: list[Decision] = []
                frontier = [(0, spending.width(0))]
                info: dict[str, Any] = {"reeval_passes": 0, "reeval_used": 0}
            else:
                decisions, frontier, info = self._decide(ctx, candidates, t, knobs, reeval_passes, spending)
            with step_stream(cfg.seed, t) if cfg.step_streams else contextlib.nullcontext():
                new = ctx.expand(frontier, t)
            if single:
                ctx.score(new, t)
            else:
                ctx.mc_score(new, cfg.k0, t, cfg.alpha)
                gate = OODGate.from_config(cfg, tau=knobs.tau)
                for node in new:
                    node.ood = gate.is_ood(node)
            done = terminal(new)
            finals.extend(done)
            spending.settle(ctx.cost_step + unpaid * len(new), len(done))
            ctx.end_iteration(
                t,
                decisions,
                StepInfo(
                    width=sum(k for _, k in frontier),
                    cap=spending.step_cap,
                    state=state,
                    knobs=asdict(knobs),
                    **info,
                    **spending.info(),
                ),
            )
            if not spending.live or not active(new):
                break
        finals.extend(ctx.settle_leftovers(active(new), spending.live))
        return finals

    def _decide(
        self,
        ctx: SearchContext,
        candidates: list[Node],
        t: int,
        knobs: Knobs,
        reeval_passes: int,
        spending: SpendingRule,
    ) -> tuple[list[Decision], list[tuple[int, int]], dict[str, Any]]:
        """Steps 2-4 on the candidates of t−1: the OOD gate and δ rule, the extra passes, the children."""
        cfg = self.config
        means = [n.scored_mean for n in candidates]
        if cfg.prm_scoring in ("single", "off"):  # one pass: no spread to gate on, R̂ is R̄
            chosen: list[int] = []
            ood, reference = [False] * len(candidates), None
        else:
            gate = OODGate.from_config(cfg, tau=knobs.tau)
            ood, chosen, reference = reeval_candidates(
                means,
                [gate.statistic(n) for n in candidates],
                [n.scored_ucb for n in candidates],
                knobs.tau,
                knobs.delta,
            )
        for node, is_ood in zip(candidates, ood):
            node.ood = is_ood
        before = {n.id: (n.mean, n.var, n.ucb, n.k) for n in candidates}  # what the δ rule saw
        extra: dict[int, int] = {}
        if chosen and reeval_passes > 0:
            shares = softmax_shares([candidates[i].scored_ucb for i in chosen], reeval_passes, knobs.nu1)
            extra = {candidates[i].id: k for i, k in zip(chosen, shares)}
            ctx.mc_score_varied(extra, t, cfg.alpha)
        width = spending.width(sum(extra.values()))
        # R̄ after the extra passes: the children follow the re-evaluated means
        scores = child_scores(
            [n.scored_mean for n in candidates],
            [n.scored_mean if n.ucb is None else n.ucb for n in candidates],
            [n.var for n in candidates],
            [bool(n.ood) for n in candidates],
            cfg.child_score,
            cfg.child_sigma_weight,
        )
        counts = softmax_shares(scores, width, knobs.nu2)
        decisions = ctx.grant(candidates, counts)
        chosen_ids = {candidates[i].id for i in chosen}
        for d, node, score in zip(decisions, candidates, scores):
            d.mean_before, d.var_before, d.ucb_before, d.k_before = before[node.id]
            d.extra_passes, d.ood, d.reeval_candidate = extra.get(node.id, 0), node.ood, node.id in chosen_ids
            d.mean, d.var, d.ucb, d.k, d.child_score = node.mean, node.var, node.ucb, node.k, score
        frontier = [(n.id, k) for n, k in zip(candidates, counts) if k]
        info = {"reeval_passes": reeval_passes, "reeval_used": sum(extra.values()), "reference_mean": reference}
        return decisions, frontier, info


class AUATS(UATS):
    name = "a-uats"
    needs_controller = True
    reeval_scale = BETA_MAX
    config_fields = UATS_FIELDS | {"controller", "controller_uncertainty_features"}
    switches: Mapping[str, tuple[Any, str]] = {}  # single-pass scoring is H-UATS's ablation, not A-UATS's

    @classmethod
    def check_config(cls, config: SearchConfig) -> None:
        if (config.uncertainty, config.uncertainty_space) != ("var", "prob"):
            # the controller outputs τ on the scale it was trained on: σ² of the scores
            raise ConfigError(
                "uncertainty_space",
                "A-UATS's controller sets τ for the probability-space σ²; "
                "use --uncertainty var --uncertainty-space prob, or h-uats",
            )

    @classmethod
    def without_uncertainty(cls) -> dict[str, Any]:
        """Its controller reads no σ features (the paper's ablation, its own checkpoint)."""
        return {"controller_uncertainty_features": False}

    def __init__(self, config: SearchConfig, controller: Controller | None = None) -> None:
        if controller is None:
            raise ConfigError(
                "controller",
                "A-UATS needs a controller that maps the step state to (β, γ, τ, δ, ν1, ν2); "
                "pass one, or use --method h-uats",
            )
        super().__init__(config, controller)
