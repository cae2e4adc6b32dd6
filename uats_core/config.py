"""One config dataclass for every search method (search-and-learn style)."""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

from .errors import ConfigError

DROPOUT_MODES_HELP = "'full', 'head' or 'last:L' with L a positive integer"
# The PyTorch PRM adapters (uats_core/backends), named here so that front ends can list them without torch.
PRM_KINDS = ("math-shepherd", "qwen-prm", "skywork", "token-classification", "judge")
PAPER_TAU = 0.003  # the paper's τ; the default gate reads it on the variance scale (SearchConfig.uncertainty)
UNCERTAINTIES = ("var", "std")
UNCERTAINTY_SPACES = ("prob", "logit")
CHILD_SCORES = ("mean", "ucb-ood", "sigma-ood")
SPEND_RULES = ("carry", "paper")  # uats_core/spending.py
# How H-UATS scores a candidate: 'mc' = K0 MC-dropout passes (R̄, σ², the OOD gate); 'single' = one
# deterministic pass with dropout off and no gate, the compute saved going to width (the paper's "w/o Uncert.").
# REBASE takes the same two (rebase_scoring, default 'single'): 'mc' scores its children with the MC mean of K0
# passes, paid for out of its width (the ablation ladder's rung between REBASE and H-UATS, methods/rebase.py).
PRM_SCORINGS = ("mc", "single")
# Where a candidate's R̄ and σ² come from (uats_core/estimators): K MC-dropout passes of the PRM (the paper), the
# members of a deep ensemble of PRMs, draws from a last-layer Laplace posterior of the PRM's head, or the Mahalanobis
# distance of the PRM's final hidden state to its training steps. Named here so front ends can list them without torch.
ESTIMATORS = ("mc-dropout", "ensemble", "laplace", "mahalanobis")
# H-UATS also takes 'off', uncertainty switched off as the case finder's counterfactual (ui/views/counterfactual.py):
# one deterministic pass a candidate, the gate never opens, nothing is re-evaluated, and the children are bought as
# 'mc' buys them (c+K0 each), so with step_streams the two searches part only where uncertainty decided otherwise.
UATS_SCORINGS = (*PRM_SCORINGS, "off")
# How the final candidates give the answer (uats_core/grading.py: vote): the weighted vote (this grid's choice: the
# paper returns one selected trace and names no vote), the best final score, plain majority, or the weighted vote
# counting each distinct final solution once.
AGGREGATIONS = ("weighted", "best", "majority", "distinct")
DEFAULT_TAU_QUANTILE = 0.9
TAU_HELP = "a number >= 0, 'auto' (the 0.9 quantile on in-distribution calibration traces) or 'auto:q' with 0 < q < 1"


@dataclass
class SearchConfig:
    method: str = "h-uats"  # a name in uats_core.methods.REGISTRY
    budget: int = 16  # N: REBASE's width; the matched-compute budget for everyone else
    seed: int = 0
    cost_ratio: float = 18.0  # c: one generated step costs as much as c PRM passes
    max_iterations: int = 40
    aggregation: str = "weighted"  # AGGREGATIONS
    # Best-of-N
    weighted: bool = True
    # Beam search and DVTS
    beam_width: int = 4  # M
    # REBASE and DORA
    rebase_temperature: float = 0.2  # T
    rebase_scoring: str = "single"  # PRM_SCORINGS: REBASE only
    dora_similarity_temperature: float = 0.01  # Ts
    # UATS
    k0: int = 7
    prm_scoring: str = "mc"  # PRM_SCORINGS
    alpha: float = 0.3
    # τ: a number, or 'auto[:q]' = the q-quantile of the gated statistic on in-distribution calibration traces
    # (uats_core.calibration resolves it to a number before a search starts)
    tau: float | str = PAPER_TAU
    # What τ thresholds. The paper defines σ_R² as the sample variance of the K passes and gates on σ_R(h) ≤ τ, σ_R
    # the standard deviation: that is 'std'. 'var' (default) thresholds σ² instead, a reading of τ = 0.003 on the
    # variance scale (docs/backends.md, "The gate": why, and the literal reading's cells in docs/results.md).
    uncertainty: str = "var"
    # Where the gate reads the spread: 'prob' = the passes' scores (the paper), 'logit' = their logits
    # log(p/(1-p)), which keeps low-scored steps from hiding their spread under the sigmoid. R̂ and δ stay on
    # the probability scale either way.
    uncertainty_space: str = "prob"
    # What the children softmax reads for an OOD candidate. 'mean' (the paper): R̄ for everyone, so extra
    # passes, which leave E[R̄] unchanged, can only help an OOD step by noise. 'ucb-ood': R̂ for OOD candidates;
    # 'sigma-ood': R̄ + child_sigma_weight·σ for them. ID candidates always use R̄.
    child_score: str = "mean"
    child_sigma_weight: float = 1.0
    delta: float = 0.04
    nu1: float = 0.5
    nu2: float = 0.2
    reeval_share: float = 0.1  # share of the per-step budget N(c+1) reserved for re-evaluation
    # How UATS spends N(c+1) per step (uats_core/spending.py): 'carry' re-evaluates first, gives the width the rest
    # and carries what a step leaves to the next, so it spends what REBASE spends; 'paper' is the per-step rule
    # as the paper states it, which leaves an unused B and the rounding of C unspent.
    spend_rule: str = "carry"
    dropout_p: float = 0.1
    dropout_mode: str = "full"
    estimator: str = "mc-dropout"  # ESTIMATORS: what the K samples of a candidate are
    # A-UATS
    controller: str | None = None  # checkpoint path; None = the shipped one
    controller_uncertainty_features: bool = True
    # Draw each iteration's policy samples from a stream of its own, seeded by (seed, iteration), apart from the
    # PRM's dropout draws: two UATS searches of one problem and seed then draw the same steps for the same prompts
    # (the case finder's pairs). Off by default: the ledgers' cells were recorded with one shared stream.
    step_streams: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.tau, str):  # the CLI and the app hand numbers over as text; 'auto[:q]' stays text
            with contextlib.suppress(ValueError):
                self.tau = float(self.tau)

    def validate(self) -> SearchConfig:
        """Check every field's own value (ConfigError naming the first bad one); changes nothing. What the method
        asks of the fields (uats_core.methods.check_method_settings) and the run's limits are the run's validation:
        uats_core.request.validate_request, or check_config for a config alone."""
        _int_at_least("budget", self.budget, 1)
        _int_at_least("max_iterations", self.max_iterations, 1)
        _int_at_least("k0", self.k0, 2, why="the sample variance needs at least 2 passes")
        _int_at_least("beam_width", self.beam_width, 1)
        _positive("cost_ratio", self.cost_ratio, allow_zero=True)
        if tau_auto_quantile(self.tau) is None:
            _positive("tau", self.tau, allow_zero=True)
        if self.uncertainty not in UNCERTAINTIES:
            raise ConfigError("uncertainty", f"got {self.uncertainty!r}; use var (σ², the default) or std (σ)")
        if self.uncertainty_space not in UNCERTAINTY_SPACES:
            raise ConfigError("uncertainty_space", f"got {self.uncertainty_space!r}; use prob (the default) or logit")
        if self.prm_scoring not in UATS_SCORINGS:
            raise ConfigError("prm_scoring", f"got {self.prm_scoring!r}; use mc (K0 MC-dropout passes), single or off "
                                             "(the counterfactual without uncertainty)")
        if self.aggregation not in AGGREGATIONS:
            raise ConfigError("aggregation", f"got {self.aggregation!r}; use one of {', '.join(AGGREGATIONS)}")
        if self.rebase_scoring not in PRM_SCORINGS:
            raise ConfigError("rebase_scoring", f"got {self.rebase_scoring!r}; use single (one pass) or mc (K0 passes)")
        if self.child_score not in CHILD_SCORES:
            raise ConfigError("child_score", f"got {self.child_score!r}; use one of {', '.join(CHILD_SCORES)}")
        _positive("child_sigma_weight", self.child_sigma_weight, allow_zero=True)
        _positive("delta", self.delta, allow_zero=True)
        _positive("alpha", self.alpha, allow_zero=True)
        for name in ("nu1", "nu2", "rebase_temperature", "dora_similarity_temperature"):
            _positive(name, getattr(self, name))
        if self.spend_rule not in SPEND_RULES:
            raise ConfigError("spend_rule", f"got {self.spend_rule!r}; use carry (the default) or paper")
        if not 0.0 <= self.reeval_share < 1.0:
            raise ConfigError("reeval_share", f"must be in [0, 1); got {self.reeval_share}")
        if not 0.0 <= self.dropout_p < 1.0:
            raise ConfigError("dropout_p", f"must be in [0, 1); got {self.dropout_p}")
        parse_dropout_mode(self.dropout_mode)
        if self.estimator not in ESTIMATORS:
            raise ConfigError("estimator", f"got {self.estimator!r}; use one of {', '.join(ESTIMATORS)}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ConfigError("seed", f"must be an integer; got {self.seed!r}")
        return self

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SearchConfig:
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ConfigError(sorted(unknown)[0], f"not a config field; known fields: {', '.join(sorted(known))}")
        return cls(**data)


def tau_auto_quantile(tau: Any) -> float | None:
    """q for 'auto' / 'auto:q', None for a number (or numeric text); ConfigError for anything else."""
    if isinstance(tau, str):
        text = tau.strip().lower()
        if text == "auto":
            return DEFAULT_TAU_QUANTILE
        if text.startswith("auto:"):
            try:
                q = float(text.split(":", 1)[1])
            except ValueError:
                q = float("nan")
            if 0.0 < q < 1.0:
                return q
            raise ConfigError("tau", f"the quantile in {tau!r} must be a number in (0, 1), e.g. auto:0.9")
        try:
            value = float(text)
        except ValueError:
            raise ConfigError("tau", f"got {tau!r}; use {TAU_HELP}") from None
        _positive("tau", value, allow_zero=True)
        return None
    if isinstance(tau, bool) or not isinstance(tau, (int, float)):
        raise ConfigError("tau", f"got {tau!r}; use {TAU_HELP}")
    return None


def parse_dropout_mode(mode: str) -> tuple[str, int | None]:
    """'full' -> ('full', None); 'head' -> ('head', None); 'last:2' -> ('last', 2)."""
    if mode in ("full", "head"):
        return mode, None
    if mode.startswith("last:"):
        try:
            layers = int(mode.split(":", 1)[1])
        except ValueError:
            layers = 0
        if layers >= 1:
            return "last", layers
    raise ConfigError("dropout_mode", f"got {mode!r}; use {DROPOUT_MODES_HELP}")


def _int_at_least(name: str, value: Any, low: int, why: str = "") -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        extra = f" ({why})" if why else ""
        raise ConfigError(name, f"must be an integer >= {low}{extra}; got {value!r}")


def _positive(name: str, value: Any, allow_zero: bool = False) -> None:
    ok = isinstance(value, (int, float)) and math.isfinite(value) and (value >= 0 if allow_zero else value > 0)
    if not ok:
        bound = ">= 0" if allow_zero else "> 0"
        raise ConfigError(name, f"must be a finite number {bound}; got {value!r}")


def parse_options(items: Sequence[str], flag: str) -> dict[str, Any]:
    """['dtype=bfloat16', 'llm_kwargs={"max_model_len": 1024}'] -> {'dtype': 'bfloat16', 'llm_kwargs': {...}}: model
    options as the command line (`--policy-opt`, repeatable) and the app (one per line) take them. Values are JSON
    where they parse (numbers, true/false/null, objects, lists) and text otherwise."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = str(item).partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise ConfigError(flag, f"{item!r} is not KEY=VALUE (e.g. {flag} dtype=bfloat16)")
        raw = raw.strip()
        try:
            out[key] = json.loads(raw)
        except json.JSONDecodeError:
            if raw[:1] in "{[":
                raise ConfigError(flag, f"{key}: {raw!r} looks like JSON but does not parse; write it as JSON, e.g. "
                                        f"{key}='{{\"max_model_len\": 1024}}'") from None
            out[key] = {"true": True, "false": False, "none": None}.get(raw.lower(), raw)
        if not _all_finite(out[key]):  # Python's JSON reads NaN, Infinity and -Infinity as numbers
            raise ConfigError(flag, f"{key}: {raw!r} is not a finite number (NaN and infinity are refused); give a "
                                    "number such as 0.7")
    return out


def _all_finite(value: Any) -> bool:
    """No NaN or infinity in `value`, however deep in lists and objects."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, Mapping):
        return all(_all_finite(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return all(_all_finite(v) for v in value)
    return True


# Model options that make transformers (or vLLM) import Python code that comes with a model. The app accepts
# none of them (its clients get a fixed list of options, ui/choices.py); the command line only with
# --trust-remote-code.
CODE_OPTIONS = ("trust_remote_code", "code_revision")


def check_code_options(opts: Mapping[str, Any], field: str, allowed: bool) -> None:
    """ConfigError(field) when `opts`, or a vLLM `llm_kwargs` inside them, ask for a model's own code to run and
    `allowed` (the command line's --trust-remote-code) is not given."""
    if allowed:
        return
    nested = opts.get("llm_kwargs")
    for prefix, given in (("", opts), ("llm_kwargs.", nested if isinstance(nested, Mapping) else {})):
        for key in CODE_OPTIONS:
            if given.get(key) not in (None, False):
                raise ConfigError(field, f"{prefix}{key}: makes transformers run Python code that comes with the model; "
                                         "add --trust-remote-code to allow it, for models whose code you trust")


def check_model_choice(policy: str | None, prm: str | None, world_problem: bool) -> None:
    """The embedded arithmetic models (what None names) serve the arithmetic world's problems only."""
    if world_problem:
        return
    for flag, given in (("policy", policy), ("prm", prm)):
        if not (given or "").strip():
            raise ConfigError(flag, f"the default {flag} is the arithmetic world's tiny model, which cannot work on this "
                                    f"dataset's problems; name one with --{flag} (offline: --{flag} smollm2"
                                    + (" --prm-kind judge)" if flag == "prm" else ")"))
