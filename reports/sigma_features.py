"""What the σ features give A-UATS: whether σ² says anything about a step that R̄ does not (from the ledger's step
records), and what the learned controller does with its state (from the ledger's controller steps and the
checkpoints that ran: the knobs it sets across the states it met, and how far its σ inputs move them)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from uats_core.estimation import auroc
from uats_core.methods.uats import KNOBS, STATE_FEATURES
from uats_core.paths import ASSETS

from .steps import MC_SCORED
from .tables import markdown_table, pair_cell, pair_name

RBAR_FEATURES = tuple(f for f in STATE_FEATURES if f.endswith("_rbar"))  # mean, max and variance of R̄
FOLDS = 5  # cross-validation folds of the R̄ + σ² logistic fit
LOW, HIGH = 0.05, 0.95  # a feature moved from its 5th to its 95th percentile over the states met
# The recorded knobs are float32 outputs (a few ulp of a knob below 2.5): a replay in float64 lands within this of
# them on any machine, so the page prints the bound, never the float noise under it (which moves with BLAS threads).
REPLAY_BOUND = 1e-6


def _logistic_cv(x: np.ndarray, y: np.ndarray, folds: int = FOLDS) -> np.ndarray:
    """Out-of-fold scores of a logistic regression on standardised columns x (Newton's method, a small ridge so
    separable folds stay finite); folds by position modulo `folds`, so the result is reproducible."""
    out = np.zeros(len(y))
    for k in range(folds):
        test = np.arange(len(y)) % folds == k
        mu, sd = x[~test].mean(0), x[~test].std(0) + 1e-12
        a, t = np.c_[np.ones((~test).sum()), (x[~test] - mu) / sd], y[~test]
        w = np.zeros(a.shape[1])
        for _ in range(50):
            p = 1.0 / (1.0 + np.exp(-a @ w))
            step = np.linalg.solve(a.T @ (a * (p * (1 - p))[:, None]) + 1e-6 * np.eye(len(w)), a.T @ (t - p) - 1e-6 * w)
            w += step
            if np.abs(step).max() < 1e-9:
                break
        out[test] = np.c_[np.ones(test.sum()), (x[test] - mu) / sd] @ w
    return out


def sigma_beside_rbar(steps: pd.DataFrame) -> pd.DataFrame:
    """Per dataset and pair, on the UATS-scored step records (R̄ of K0 passes, σ² of those passes, the exact step
    label): how well R̄, σ² and both together tell wrong steps from right ones (AUROC for a wrong step), and σ²'s AUROC
    within each fifth of R̄, where R̄ cannot tell the steps apart by its level."""
    mc = steps[(steps["score_kind"] == MC_SCORED) & steps["var0"].notna()]
    rows = []
    for (dataset, pair), g in mc.groupby(["dataset", "pair"], sort=True):
        wrong = ~g["correct"].astype(bool).to_numpy()
        rbar, log_var = g["score"].to_numpy(float), np.log(g["var0"].to_numpy(float) + 1e-12)
        both = _logistic_cv(np.c_[rbar, log_var, rbar * log_var], wrong.astype(float))
        alone = _logistic_cv(rbar[:, None], wrong.astype(float))
        fifths = pd.qcut(rbar, 5, labels=False, duplicates="drop")
        within = [auroc(log_var[fifths == q], wrong[fifths == q]) for q in sorted(set(fifths))]
        rows.append(
            {
                "dataset": dataset,
                "pair": pair,
                "n_steps": int(len(g)),
                "share_wrong": float(wrong.mean()),
                "auroc_rbar": auroc(-rbar, wrong),
                "auroc_sigma": auroc(log_var, wrong),
                "auroc_rbar_fit": auroc(alone, wrong),
                "auroc_both_fit": auroc(both, wrong),
                "auroc_sigma_within": [round(v, 2) for v in within if not math.isnan(v)],
            }
        )
    return pd.DataFrame(rows)


def sigma_markdown(table: pd.DataFrame, roles: dict[str, str]) -> str:
    if table.empty:
        return ""
    several = table["dataset"].nunique() > 1
    rows = [
        [
            pair_cell(r.pair, r.dataset, roles, several),
            f"{r.n_steps:,}",
            f"{100 * r.share_wrong:.1f}",
            f"{r.auroc_rbar:.3f}",
            f"{r.auroc_sigma:.3f}",
            f"{r.auroc_rbar_fit:.3f}",
            f"{r.auroc_both_fit:.3f}",
            ", ".join(f"{v:.2f}" for v in r.auroc_sigma_within),
        ]
        for r in table.itertuples()
    ]
    return (
        "σ² beside R̄ on the steps UATS scored (the ledger's step records: R̄ and σ² of the K0 initial passes, "
        "the exact step label): AUROC for telling a wrong step from a right one by low R̄, by high σ², and by a "
        f"logistic fit of R̄ alone and of R̄, log σ² and their product ({FOLDS}-fold, out of fold); last, σ²'s "
        "AUROC within each fifth of R̄ (0.5: no signal; below 0.5: the right steps have the higher σ²)\n\n"
        + markdown_table(
            ["pair", "steps", "wrong (%)", "AUROC R̄", "AUROC σ²", "fit R̄", "fit R̄ + σ²", "σ² within fifths of R̄"], rows
        )
    )


def checkpoint_of(variant: str) -> Path:
    """The controller an A-UATS cell ran with: its variant's `controller=` (a path relative to the folder holding
    assets/, as the ledger records it), else the shipped one for its uncertainty setting."""
    from uats_core.controller import shipped_checkpoint

    settings = dict(part.split("=", 1) for part in variant.split(",") if "=" in part)
    if "controller" in settings:
        path = Path(settings["controller"])
        return path if path.is_absolute() else ASSETS.parents[1] / path
    return shipped_checkpoint(settings.get("controller_uncertainty_features") != "False")


def _knob_ranges() -> np.ndarray:
    from uats_core.controller import KNOB_RANGES

    return np.array([KNOB_RANGES[k][1] - KNOB_RANGES[k][0] for k in KNOBS])


def _knobs(net: Any, features: list[str], states: pd.DataFrame) -> np.ndarray:
    """The controller's knobs (its mean action) on each row of `states`, computed in float64 (`net` is a float64
    copy), so thread counts and BLAS builds move them by about 1e-16, far below any digit the page prints."""
    import torch

    from uats_core.controller import squash

    with torch.no_grad():
        return squash(net(torch.tensor(states[features].to_numpy(), dtype=torch.float64))[0]).numpy()


def _moved(net: Any, features: list[str], states: pd.DataFrame, names: Sequence[str], spans: np.ndarray) -> float:
    """How far the knobs move (mean over states, largest knob, share of its range) when the features `names` go
    from their LOW to their HIGH quantile over `states`, the rest as they were; nan if it reads none of them."""
    names = [n for n in names if n in features]
    if not names:
        return math.nan
    lo, hi = states.copy(), states.copy()
    for n in names:
        lo[n], hi[n] = states[n].quantile(LOW), states[n].quantile(HIGH)
    return float((np.abs(_knobs(net, features, hi) - _knobs(net, features, lo)).mean(0) / spans).max())


def controller_response(results: pd.DataFrame, controller: pd.DataFrame) -> pd.DataFrame:
    """Per controller checkpoint and pair, over the states its A-UATS cells met: whether the checkpoint replays
    the knobs the cells recorded, how far its knobs move across those states, how far moving the σ inputs (and,
    for scale, the R̄ inputs) from their 5th to 95th percentile moves them (the largest knob, as a share of
    its range), and the spread of its actions (learned log-std)."""
    from uats_core.controller import load_checkpoint
    from uats_core.controller.policy import UNCERTAINTY_FEATURES

    if controller.empty:
        return pd.DataFrame()
    cells = results[results["method"] == "a-uats"][["cell_key", "pair", "variant"]]
    steps = controller.merge(cells, on="cell_key")
    spans, rows = _knob_ranges(), []
    for variant, of_variant in steps.groupby("variant", sort=True):
        path = checkpoint_of(variant)
        net, meta = load_checkpoint(path)  # once per checkpoint, for every pair it ran on
        net = net.double()
        features = list(meta["features"])
        for pair, g in of_variant.groupby("pair", sort=True):
            own = _knobs(net, features, g)
            spread = (np.quantile(own, HIGH, axis=0) - np.quantile(own, LOW, axis=0)) / spans
            rows.append(
                {
                    "controller": path.name,
                    "pair": pair,
                    "n_cells": int(g["cell_key"].nunique()),
                    "n_steps": int(len(g)),
                    "replay_error": float(np.abs(own - g[list(KNOBS)].to_numpy()).max()),
                    "spread": float(spread.max()),
                    "spread_knob": KNOBS[int(spread.argmax())],
                    "sigma_moves": _moved(net, features, g, UNCERTAINTY_FEATURES, spans),
                    "rbar_moves": _moved(net, features, g, RBAR_FEATURES, spans),
                    "log_std": float(net.log_std.detach().mean()),
                    **{k: float(np.median(own[:, i])) for i, k in enumerate(KNOBS)},
                }
            )
    return pd.DataFrame(rows)


def replay_text(error: float) -> str:
    """The replay error as the bound it meets ("< 1e-06"), or, past the bound, the gap itself: a real mismatch."""
    return f"< {REPLAY_BOUND:.0e}" if error < REPLAY_BOUND else f"{error:.1e}"


def controller_markdown(table: pd.DataFrame, roles: dict[str, str]) -> str:
    if table.empty:
        return ""
    pct = lambda v: "–" if math.isnan(v) else f"{100 * v:.2f}"  # noqa: E731
    rows = [
        [
            f"`{r.controller}`",
            pair_name(r.pair, roles),
            r.n_cells,
            f"{r.n_steps:,}",
            replay_text(r.replay_error),
            f"{pct(r.spread)} ({r.spread_knob})",
            pct(r.sigma_moves),
            pct(r.rbar_moves),
            f"{r.log_std:.2f}",
            " / ".join(f"{getattr(r, k):.3g}" for k in KNOBS),
        ]
        for r in table.itertuples()
    ]
    return (
        "A-UATS's controller on the states its searches met (the ledger's controller steps, the checkpoint that "
        "ran them): the largest gap between the knobs it recorded (float32) and the checkpoint's output on the "
        f"recorded state (float64; < {REPLAY_BOUND:.0e} when below that bound); how far its knobs move across "
        f"those states ({int(100 * LOW)}th to {int(100 * HIGH)}th "
        "percentile, % of the knob's range, the knob that moves most); how far moving the σ features, and the R̄ "
        "features, from their 5th to their 95th percentile moves the knobs (mean over states, % of range, the "
        "knob that moves most); the mean log standard deviation of its actions; and its median knobs "
        f"({' / '.join(KNOBS)})\n\n"
        + markdown_table(
            [
                "controller",
                "pair",
                "cells",
                "steps",
                "replay error",
                "knobs move (%)",
                "σ moves (%)",
                "R̄ moves (%)",
                "log σ of actions",
                "median knobs",
            ],
            rows,
        )
    )
