"""One config dataclass for every search method (search-and-learn style)."""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

from .errors import ConfigError
from .settings import Declared, declared, setting

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


def _check_tau(value: Any) -> None:
    tau_auto_quantile(value)


def _check_dropout_mode(value: Any) -> None:
    parse_dropout_mode(str(value))


@dataclass
class SearchConfig:
    """Every setting of every search method, each declared once with its Setting (uats_core/settings.py): the
    command line, the app form, the evaluation's axes, the glossary, the validation and docs/engine.md's table read
    it from here."""

    method: str = setting(
        "h-uats",
        "the search method: how the tree grows and who gets children (docs/engine.md)",
        label="Method",
        section="run",
    )
    budget: int = setting(
        16,
        "N: REBASE's width; every method is matched to REBASE's compute at this N",
        low=1,
        label="Budget N (next run)",
        unit="children a step",
        section="run",
        term="N",
        define="the budget: REBASE's width (children per step); every other method gets the same "
        "compute, N·(c+1) a step.",
    )
    seed: int = setting(
        0, "the random seed of the policy's sampling and the MC-dropout masks", label="Seed", section="run"
    )
    cost_ratio: float = setting(
        18.0,
        "c: cost of one generated step in PRM passes (`uats calibrate` measures it)",
        low=0,
        label="c (step cost in PRM passes)",
        unit="PRM passes",
        term="c",
        define="what generating one step costs, in PRM passes: a new step scored with K0 passes costs c + K0.",
    )
    max_iterations: int = setting(
        40, "the most iterations t a search may take", low=1, label="max iterations", unit="iterations"
    )
    aggregation: str = setting(
        "weighted",
        "how the final candidates give the answer: weighted (vote weighted by "
        "score; the paper returns one trace and names no vote) | best (the best final score) | "
        "majority | distinct (weighted, each distinct final solution once)",
        choices=AGGREGATIONS,
        section="answer",
    )
    weighted: bool = setting(
        True, "Best-of-N: vote weighted by score (--no-weighted: the best-scored solution)", section="baselines"
    )
    beam_width: int = setting(
        4,
        "M: beams of beam search and DVTS (the budget must be a multiple of it)",
        low=1,
        label="beam width M",
        unit="children",
        section="baselines",
    )
    rebase_temperature: float = setting(
        0.2,
        "T: REBASE's and DORA's softmax temperature over children's scores",
        low=0,
        open_low=True,
        label="REBASE temperature T",
        section="baselines",
    )
    rebase_scoring: str = setting(
        "single",
        "how REBASE scores its children: single (one pass) | mc (the MC mean "
        "of K0 passes, paid for out of its width: the ablation rung between REBASE and "
        "H-UATS)",
        choices=PRM_SCORINGS,
        section="baselines",
    )
    dora_similarity_temperature: float = setting(
        0.01,
        "Ts: DORA's temperature over the steps' embedding similarities",
        low=0,
        open_low=True,
        label="DORA similarity temperature Ts",
        section="baselines",
    )
    k0: int = setting(
        7,
        "K0: the MC-dropout passes (or estimator samples) every new candidate gets when scored",
        low=2,
        why_low="σ² needs two passes",
        label="K0 samples",
        unit="PRM passes",
        axis_flag=True,
        term="K0",
        define="the MC-dropout passes every new step gets when it is scored (at least 2: σ² needs two).",
    )
    prm_scoring: str = setting(
        "mc",
        "how H-UATS scores a candidate: mc (K0 MC-dropout passes) | single (one pass, "
        "width from the saved passes: the paper's w/o Uncert.) | off (one pass, no gate, width "
        "as mc: the case finder's counterfactual)",
        choices=UATS_SCORINGS,
    )
    alpha: float = setting(
        0.3,
        "α: the weight of R̂'s exploration bonus (UCB)",
        low=0,
        label="α (UCB)",
        term="α",
        define="the weight of R̂'s exploration bonus.",
    )
    tau: float | str = setting(
        PAPER_TAU,
        f"τ: the OOD threshold: {TAU_HELP} (`uats calibrate` writes the calibration beside the PRM)",
        low=0,
        check=_check_tau,
        label="τ: a number, or auto[:q] (calibrated quantile)",
        unit="σ² (or σ: uncertainty)",
        axis_flag=True,
        term="τ",
        define="the OOD threshold: a step whose σ² (or the statistic the gate reads) is above τ is OOD.",
    )
    uncertainty: str = setting(
        "var",
        "what τ thresholds: var (σ² > τ, the default: τ = 0.003 read on the variance "
        "scale, a choice; docs/backends.md) | std (σ > τ: the paper's rule σ_R(h) ≤ τ as "
        "written)",
        choices=UNCERTAINTIES,
        label="τ thresholds σ² (var) or σ (std)",
    )
    uncertainty_space: str = setting(
        "prob",
        "where the OOD gate reads the spread: prob (the passes' scores, the "
        "paper) | logit (their logits log(p/(1-p)), so low-scored steps do not hide "
        "their spread under the sigmoid)",
        choices=UNCERTAINTY_SPACES,
        label="OOD gate reads scores or logits",
    )
    child_score: str = setting(
        "mean",
        "what OOD candidates' children softmax reads: mean (R̄, the paper) | ucb-ood "
        "(R̂) | sigma-ood (R̄ + κσ); ID candidates always use R̄",
        choices=CHILD_SCORES,
    )
    child_sigma_weight: float = setting(1.0, "κ of child_score sigma-ood", low=0, label="child σ weight κ")
    delta: float = setting(
        0.04,
        "δ: the margin of the δ test that sends OOD steps to re-evaluation",
        low=0,
        label="δ",
        axis_flag=True,
        term="δ",
        define="the margin of the δ test: larger δ re-evaluates OOD steps further below the best ID step.",
    )
    nu1: float = setting(
        0.5,
        "ν1: the temperature of the softmax that shares the re-evaluation passes B",
        low=0,
        open_low=True,
        label="ν1 (re-eval softmax)",
        term="ν1",
        define="the temperature of the softmax that shares B (lower: the highest R̂ takes more).",
    )
    nu2: float = setting(
        0.2,
        "ν2: the temperature of the softmax that shares the children C",
        low=0,
        open_low=True,
        label="ν2 (children softmax)",
        term="ν2",
        define="the temperature of the softmax that shares C (lower: the highest R̄ takes more).",
    )
    reeval_share: float = setting(
        0.1,
        "ρ: the share of the per-step spend N(c+1) reserved for re-evaluation",
        low=0,
        high=1,
        open_high=True,
        label="re-eval share",
        unit="share of N(c+1)",
        term="ρ",
        define="the re-evaluation share: the part of each step's spend N·(c+1) set aside for B.",
    )
    spend_rule: str = setting(
        "carry",
        "how UATS spends N(c+1) per step: carry (re-evaluate first, width gets the "
        "rest, leftovers carried: REBASE's spend) | paper (the paper's per-step split, which "
        "leaves an unused B and C's rounding unspent)",
        choices=SPEND_RULES,
    )
    dropout_p: float = setting(
        0.1,
        "the dropout rate of the MC-dropout passes",
        low=0,
        high=1,
        open_high=True,
        label="dropout p",
        unit="probability",
        axis_flag=True,
    )
    dropout_mode: str = setting(
        "full",
        f"which of the PRM's layers keep dropout on during the passes: {DROPOUT_MODES_HELP}",
        check=_check_dropout_mode,
        label=f"dropout mode ({DROPOUT_MODES_HELP})",
        axis_flag=True,
    )
    estimator: str = setting(
        "mc-dropout",
        "where each candidate's R̄ and σ² come from: mc-dropout (K dropout passes "
        "of the PRM) | ensemble (K members of a deep ensemble of PRMs) | laplace (K draws from a "
        "Laplace posterior of the PRM's head) | mahalanobis (the PRM's hidden state's distance "
        "to its training steps, mapped to σ²; K = 1)",
        choices=ESTIMATORS,
        label="uncertainty estimator: what a candidate's K samples are",
    )
    controller: str | None = setting(
        None,
        "A-UATS: the controller checkpoint (default: the shipped one)",
        section="baselines",
        app_leaves_out="a file path; the server takes no path from a client and runs the shipped controller",
    )
    controller_uncertainty_features: bool = setting(
        True,
        "A-UATS: the controller reads the σ features (--no-controller-uncertainty-features: without them)",
        section="baselines",
    )
    step_streams: bool = setting(
        False,
        "draw each iteration's policy samples from a stream of their own, seeded "
        "by (seed, iteration): a run and its counterfactual then draw the same steps for the "
        "same prompts (off: the ledgers' cells were recorded with one shared stream)",
        section="answer",
    )

    def __post_init__(self) -> None:
        if isinstance(self.tau, str):  # the CLI and the app hand numbers over as text; 'auto[:q]' stays text
            with contextlib.suppress(ValueError):
                self.tau = float(self.tau)

    def validate(self) -> SearchConfig:
        """Check every field's own value against its declaration (ConfigError naming the first bad one); changes
        nothing. What the method asks of the fields (uats_core.methods.check_method_settings) and the run's limits
        are the run's validation: uats_core.request.validate_request, or check_config for a config alone."""
        for d in SETTINGS:
            d.check_value(getattr(self, d.name))
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


SETTINGS: tuple[Declared, ...] = tuple(declared(SearchConfig))


def setting_of(name: str) -> Declared:
    """A setting's declaration by its field name (ConfigError naming it when there is no such setting)."""
    for d in SETTINGS:
        if d.name == name:
            return d
    raise ConfigError(name, f"not a config field; known fields: {', '.join(d.name for d in SETTINGS)}")


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
        setting_of("tau").check_value(value)
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
                raise ConfigError(
                    flag,
                    f"{key}: {raw!r} looks like JSON but does not parse; write it as JSON, e.g. "
                    f"{key}='{{\"max_model_len\": 1024}}'",
                ) from None
            out[key] = {"true": True, "false": False, "none": None}.get(raw.lower(), raw)
        if not _all_finite(out[key]):  # Python's JSON reads NaN, Infinity and -Infinity as numbers
            raise ConfigError(
                flag, f"{key}: {raw!r} is not a finite number (NaN and infinity are refused); give a number such as 0.7"
            )
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
                raise ConfigError(
                    field,
                    f"{prefix}{key}: makes transformers run Python code that comes with the model; "
                    "add --trust-remote-code to allow it, for models whose code you trust",
                )


def check_model_choice(policy: str | None, prm: str | None, world_problem: bool) -> None:
    """The embedded arithmetic models (what None names) serve the arithmetic world's problems only."""
    if world_problem:
        return
    for flag, given in (("policy", policy), ("prm", prm)):
        if not (given or "").strip():
            raise ConfigError(
                flag,
                f"the default {flag} is the arithmetic world's tiny model, which cannot work on this "
                f"dataset's problems; name one with --{flag} (offline: --{flag} smollm2"
                + (" --prm-kind judge)" if flag == "prm" else ")"),
            )
