"""Simulation of Propositions 4.1 and 4.2: greedy point-estimate selection accumulates loss linearly in the
number of search steps T when the PRM is out of distribution (OOD) with probability ε; UCB selection on
MC-dropout statistics accumulates it sublinearly.

    uats theory [--horizon 4000] [--reps 200] [--eps 0.05,0.1,0.2] [--out runs/theory]

The model (the assumptions the two propositions rest on, made explicit):
- A search step picks one of M candidate continuations to expand; candidate i has true value μ_i (the
  best μ* = 0.8, the others uniform in [0.3, 0.7], so every gap is at least 0.1). Picking i costs the
  step's loss μ* − μ_i; the cumulative loss after T steps is the regret.
- At every step, each candidate's evaluation is OOD with probability ε, independently.
- The PRM's deterministic point estimate is μ_i + noise: ID noise N(0, σ_ID²) (small, σ_ID = 0.03); OOD
  noise N(0, b²) with b = 0.35 - overconfident: large, and the point estimate says nothing about it.
- MC dropout: K0 stochastic passes, each μ_i + N(0, σ_ID²) in distribution and μ_i + N(0, σ_OOD²) with
  σ_OOD = 0.25 out of it - the epistemic spread shows up as variance around the calibrated value
  (the behaviour Figure 2 measures on real PRMs).

Greedy (Prop. 4.1) picks argmax of the current point estimates. Some bad candidate beats the best one by an
OOD error with a probability that does not shrink with t, so E[loss per step] ≥ c·ε > 0: linear regret.

UCB (Prop. 4.2) picks argmax R̂_i = R̄_i + α·sqrt(2 ln t / K_i) (the UATS R̂ of the paper, α = 0.3 by
default): R̄_i pools every pass candidate i has had, K_i counts them, and the candidate it picks gets K0
new passes. The OOD noise is bounded-variance and zero-mean around μ_i, so R̄ concentrates and the UCB
argument gives O(log T) (gap-dependent) / O(sqrt(M T log T)) regret: sublinear.

The fit: slope of log cumulative loss against log T over the last decade of T (1 = linear; < 1 =
sublinear), the loss per step at T, and for UCB the ratio L(T) / sqrt(T ln T).
"""

from __future__ import annotations

import argparse
import logging
import math
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from uats_core.config import SearchConfig

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TheoryConfig:
    arms: int = 8
    horizon: int = 4000
    reps: int = 200
    eps: tuple[float, ...] = (0.05, 0.1, 0.2)
    best: float = 0.8
    others: tuple[float, float] = (0.3, 0.7)
    sigma_id: float = 0.03
    sigma_ood: float = 0.25
    ood_error: float = 0.35  # b: scale of the point estimate's overconfident OOD error
    k0: int = SearchConfig.k0  # the paper's defaults, written once in SearchConfig
    alpha: float = SearchConfig.alpha
    seed: int = 0


@dataclass
class Curves:
    eps: float
    t: np.ndarray  # 1..T
    greedy: np.ndarray  # mean cumulative loss over replications
    ucb: np.ndarray
    greedy_sd: np.ndarray
    ucb_sd: np.ndarray


@dataclass
class Fit:
    eps: float
    greedy_slope: float  # d log L / d log T over the last decade
    ucb_slope: float
    greedy_per_step: float  # L(T) / T
    ucb_per_step: float
    greedy_linear_rate: float  # least-squares a in L ≈ a·T over the last decade
    ucb_sqrt_ratio: float  # L(T) / sqrt(T ln T)
    greedy_final: float
    ucb_final: float

    def line(self) -> str:
        return (
            f"ε={self.eps:<5g} greedy: L(T)={self.greedy_final:8.2f}  slope={self.greedy_slope:.3f}  "
            f"loss/step={self.greedy_per_step:.4f}   UCB: L(T)={self.ucb_final:7.2f}  slope={self.ucb_slope:.3f}  "
            f"loss/step={self.ucb_per_step:.5f}  L/sqrt(T ln T)={self.ucb_sqrt_ratio:.3f}"
        )


def _values(rng: np.random.Generator, cfg: TheoryConfig) -> np.ndarray:
    """(reps, arms) true values, the best one at a random position."""
    mu = rng.uniform(cfg.others[0], cfg.others[1], size=(cfg.reps, cfg.arms))
    best = rng.integers(0, cfg.arms, size=cfg.reps)
    mu[np.arange(cfg.reps), best] = cfg.best
    return mu


def simulate_greedy(mu: np.ndarray, eps: float, cfg: TheoryConfig, rng: np.random.Generator) -> np.ndarray:
    """(reps, T) cumulative loss of picking the highest deterministic point estimate each step."""
    reps, arms = mu.shape
    best = mu.max(axis=1)
    loss = np.empty((reps, cfg.horizon))
    for t in range(cfg.horizon):
        ood = rng.random((reps, arms)) < eps
        noise = np.where(ood, cfg.ood_error, cfg.sigma_id) * rng.standard_normal((reps, arms))
        pick = np.argmax(mu + noise, axis=1)
        loss[:, t] = best - mu[np.arange(reps), pick]
    return np.cumsum(loss, axis=1)


def simulate_ucb(mu: np.ndarray, eps: float, cfg: TheoryConfig, rng: np.random.Generator) -> np.ndarray:
    """(reps, T) cumulative loss of picking argmax R̄ + α·sqrt(2 ln t / K); the pick gets K0 new passes."""
    reps, arms = mu.shape
    best = mu.max(axis=1)
    rows = np.arange(reps)

    def passes_sum(values: np.ndarray) -> np.ndarray:
        # K0 passes, OOD with probability ε per evaluation: their sum is K0·μ + σ·sqrt(K0)·N(0, 1)
        ood = rng.random(values.shape) < eps
        sigma = np.where(ood, cfg.sigma_ood, cfg.sigma_id)
        return cfg.k0 * values + sigma * math.sqrt(cfg.k0) * rng.standard_normal(values.shape)

    total = passes_sum(mu)  # every candidate starts with K0 passes, as H-UATS's step 1
    count = np.full((reps, arms), float(cfg.k0))
    loss = np.empty((reps, cfg.horizon))
    for t in range(1, cfg.horizon + 1):
        ucb = total / count + cfg.alpha * np.sqrt(2.0 * math.log(t) / count)
        pick = np.argmax(ucb, axis=1)
        loss[:, t - 1] = best - mu[rows, pick]
        total[rows, pick] += passes_sum(mu[rows, pick])
        count[rows, pick] += cfg.k0
    return np.cumsum(loss, axis=1)


def run(cfg: TheoryConfig, progress: bool = True) -> list[Curves]:
    out = []
    eps_iter: Any = cfg.eps
    if progress:
        from tqdm import tqdm

        eps_iter = tqdm(cfg.eps, desc="theory: ε values", unit="ε")
    for i, eps in enumerate(eps_iter):
        rng = np.random.default_rng([cfg.seed, i])
        mu = _values(rng, cfg)
        g = simulate_greedy(mu, eps, cfg, np.random.default_rng([cfg.seed, i, 1]))
        u = simulate_ucb(mu, eps, cfg, np.random.default_rng([cfg.seed, i, 2]))
        out.append(Curves(eps, np.arange(1, cfg.horizon + 1), g.mean(0), u.mean(0), g.std(0), u.std(0)))
    return out


def loglog_slope(t: np.ndarray, loss: np.ndarray, decade: float = 10.0) -> float:
    """Least-squares slope of log L on log t over t in [T/decade, T] (geometrically spaced points)."""
    T = int(t[-1])
    pts = np.unique(np.geomspace(max(1, T / decade), T, 50).astype(int)) - 1
    y = np.log(np.maximum(loss[pts], 1e-12))
    x = np.log(t[pts])
    return float(np.polyfit(x, y, 1)[0])


def fit(c: Curves) -> Fit:
    T = int(c.t[-1])
    last = c.t >= T / 10
    a = float(np.dot(c.t[last], c.greedy[last]) / np.dot(c.t[last], c.t[last]))
    return Fit(
        eps=c.eps,
        greedy_slope=loglog_slope(c.t, c.greedy),
        ucb_slope=loglog_slope(c.t, c.ucb),
        greedy_per_step=float(c.greedy[-1] / T),
        ucb_per_step=float(c.ucb[-1] / T),
        greedy_linear_rate=a,
        ucb_sqrt_ratio=float(c.ucb[-1] / math.sqrt(T * math.log(T))),
        greedy_final=float(c.greedy[-1]),
        ucb_final=float(c.ucb[-1]),
    )


def figure(curves: Sequence[Curves], fits: Sequence[Fit], cfg: TheoryConfig) -> Any:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, subplot_titles=("cumulative loss", "log-log (slope 1 = linear)"))
    palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"]
    for i, (c, f) in enumerate(zip(curves, fits)):
        color = palette[i % len(palette)]
        step = max(1, len(c.t) // 400)
        for name, y, dash, slope in (
            ("greedy", c.greedy, "solid", f.greedy_slope),
            ("UCB", c.ucb, "dash", f.ucb_slope),
        ):
            label = f"{name}, ε={c.eps:g} (slope {slope:.2f})"
            for col in (1, 2):
                fig.add_trace(
                    go.Scatter(
                        x=c.t[::step],
                        y=y[::step],
                        mode="lines",
                        name=label,
                        legendgroup=label,
                        showlegend=col == 1,
                        line=dict(color=color, dash=dash),
                    ),
                    row=1,
                    col=col,
                )
    fig.update_xaxes(title_text="search step T", row=1, col=1)
    fig.update_yaxes(title_text="cumulative loss Σ (μ* − μ_pick)", row=1, col=1)
    fig.update_xaxes(type="log", title_text="T", row=1, col=2)
    fig.update_yaxes(type="log", row=1, col=2)
    fig.update_layout(
        template="plotly_white",
        height=480,
        width=1250,
        title=(
            f"Prop. 4.1/4.2: greedy point estimates vs UCB on MC-dropout statistics "
            f"(M={cfg.arms}, K0={cfg.k0}, α={cfg.alpha}, {cfg.reps} replications)"
        ),
    )
    return fig


def write(fig: Any, out_dir: str | Path, name: str = "theory") -> list[Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    html = out / f"{name}.html"
    fig.write_html(str(html), include_plotlyjs=True)  # plotly.js inlined: opens offline
    written = [html]
    from reports.export import write_pngs

    written += write_pngs({name: fig}, out)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="uats theory", description=__doc__.split("\n\n")[0])
    p.add_argument("--horizon", type=int, default=TheoryConfig.horizon, help="T, search steps")
    p.add_argument("--reps", type=int, default=TheoryConfig.reps, help="replications averaged")
    p.add_argument("--eps", default=",".join(map(str, TheoryConfig.eps)), help="OOD probabilities ε")
    p.add_argument("--arms", type=int, default=TheoryConfig.arms)
    p.add_argument("--alpha", type=float, default=TheoryConfig.alpha)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="runs/theory", help="folder for theory.html / theory.png")
    p.add_argument("--no-figure", action="store_true")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        eps = tuple(float(x) for x in args.eps.split(",") if x.strip())
    except ValueError:
        print(f"error: eps: {args.eps!r} is not a comma list of numbers", file=sys.stderr)
        return 2
    if not eps or any(not 0 <= e <= 1 for e in eps) or args.horizon < 20 or args.reps < 1 or args.arms < 2:
        print("error: need 0 <= eps <= 1, horizon >= 20, reps >= 1, arms >= 2", file=sys.stderr)
        return 2
    cfg = TheoryConfig(arms=args.arms, horizon=args.horizon, reps=args.reps, eps=eps, alpha=args.alpha, seed=args.seed)
    curves = run(cfg)
    fits = [fit(c) for c in curves]
    print(f"Proposition 4.1/4.2 simulation: {asdict(cfg)}")
    for f in fits:
        print(f.line())
    print("slope = d log L / d log T over the last decade of T (1 = linear growth; < 1 = sublinear)")
    if not args.no_figure:
        files = write(figure(curves, fits, cfg), args.out)
        print("wrote " + ", ".join(map(str, files)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
