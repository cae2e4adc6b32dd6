"""Measure the shipped arithmetic-world models on the fixed test split and draw the Figure-2 plot.

    python -m uats.arith.report [--n 200] [--samples 16] [--k 7]

Prints, for policy A and policy B: single-sample accuracy at the policies' temperature (the mean over the samples),
Pass@N, the PRM's step-level AUROC on the policy's traces (labels from the exact checker), and the mean
MC-dropout variance of the step scores (K passes, dropout p after every decoder layer, ddof=1); then the
B/A variance ratio and whether each acceptance criterion holds. Writes docs/figures/arith_fig2.png
(and an interactive .html) and a JSON of the numbers.
"""

from __future__ import annotations

import os

# Before torch loads: OpenMP threads that spin while waiting made a training step ~13x slower when
# other processes share the two cores (measured: 3.5 s vs 0.26 s a step); passive waiting avoids that.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModelForCausalLM, AutoModelForTokenClassification, AutoTokenizer

from uats_core.backends.prompting import TEMPERATURE
from uats_core.config import UNCERTAINTIES, SearchConfig
from uats_core.estimation import auroc, is_ood
from uats_core.worlds.arith import solutions, world
from uats_core.worlds.arith.modeling import POLICY_DIRS, PRM_DIR, REPO_ROOT, prm_step_scores, sample_solutions

log = logging.getLogger(__name__)

FIG_DIR = REPO_ROOT / "docs" / "figures"


@dataclass
class PolicyResult:
    style: str
    accuracy: float  # mean over problems and samples: the single-sample accuracy
    pass_at_n: float
    n_samples: int
    step_accuracy: float  # share of sampled steps the checker accepts
    n_steps_scored: int
    prm_auroc: float
    mean_mc_variance: float
    median_mc_variance: float
    variances: list[float]
    scores: list[float]
    labels: list[bool]


def evaluate_policy(
    style: str,
    policy,
    prm,
    tok,
    problems: Sequence[world.Problem],
    samples: int,
    k: int,
    p: float,
    score_samples: int,
    seed: int,
) -> PolicyResult:
    t = time.time()
    gen = torch.Generator().manual_seed(seed)
    flat = [pb for pb in problems for _ in range(samples)]
    sols = sample_solutions(policy, tok, [pb.question for pb in flat], generator=gen, batch_size=512)
    correct = np.array([solutions.final_answer_correct(pb, s) for pb, s in zip(flat, sols)]).reshape(
        len(problems), samples
    )
    log.info("policy %s: sampled %d solutions in %.0f s", style, len(sols), time.time() - t)
    # The PRM scores the first `score_samples` samples of every problem, non-empty ones only.
    items = [(pb, s) for i, (pb, s) in enumerate(zip(flat, sols)) if i % samples < score_samples and s]
    labels = [lab for pb, s in items for lab in solutions.label_steps(pb, s)]
    t = time.time()
    det = prm_step_scores(prm, tok, [(pb.question, s) for pb, s in items], k=1, p=0.0)
    torch.manual_seed(seed)  # the dropout masks: without this the variances moved ~10% from run to run
    mc = prm_step_scores(prm, tok, [(pb.question, s) for pb, s in items], k=k, p=p)
    log.info(
        "policy %s: PRM scored %d traces (%d steps) once and %d times with dropout in %.0f s",
        style,
        len(items),
        len(labels),
        k,
        time.time() - t,
    )
    scores = torch.cat([d[0] for d in det]).tolist()
    variances = torch.cat([m.var(dim=0, unbiased=True) for m in mc]).tolist()
    return PolicyResult(
        style,
        float(correct.mean()),
        float(correct.any(1).mean()),
        samples,
        float(np.mean(labels)),
        len(labels),
        auroc(scores, labels),
        float(np.mean(variances)),
        float(np.median(variances)),
        variances,
        scores,
        labels,
    )


def criteria(a: PolicyResult, b: PolicyResult) -> dict[str, bool]:
    ratio = b.mean_mc_variance / max(a.mean_mc_variance, 1e-12)
    return {
        "PRM AUROC on policy-A traces >= 0.90": a.prm_auroc >= 0.90,
        "mean MC variance on B >= 3x on A": ratio >= 3.0,
        "PRM AUROC on B < on A": b.prm_auroc < a.prm_auroc,
        **{f"policy {r.style} accuracy in [15%, 60%]": 0.15 <= r.accuracy <= 0.60 for r in (a, b)},
        **{f"policy {r.style} pass@{r.n_samples} >= 2x accuracy": r.pass_at_n >= 2 * r.accuracy for r in (a, b)},
    }


def write_figure(a: PolicyResult, b: PolicyResult, out: Path, k: int = 7, p: float = 0.1) -> list[Path]:
    """Histogram of MC-dropout variance per step (policy A vs B traces) and per-policy AUROC bars: PNG
    (kaleido when a browser is present, else drawn with Pillow) plus an interactive HTML."""
    out.parent.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    lo = -8.0
    la = np.log10(np.maximum(a.variances, 10**lo))
    lb = np.log10(np.maximum(b.variances, 10**lo))
    bins = np.linspace(lo, max(0.0, float(max(la.max(), lb.max()))), 41)
    ha, _ = np.histogram(la, bins)
    hb, _ = np.histogram(lb, bins)
    ha, hb = ha / max(ha.sum(), 1), hb / max(hb.sum(), 1)
    centers = (bins[:-1] + bins[1:]) / 2
    ratio = b.mean_mc_variance / max(a.mean_mc_variance, 1e-12)
    title = (
        f"PRM MC-dropout variance of step scores (K={k}, p={p}): mean B/A = {ratio:.1f}x; "
        f"AUROC A {a.prm_auroc:.3f}, B {b.prm_auroc:.3f}"
    )
    fig = None
    try:
        from plotly.subplots import make_subplots

        fig = make_subplots(
            rows=1, cols=2, column_widths=[0.7, 0.3], subplot_titles=("step-score variance (log10)", "PRM step AUROC")
        )
        fig.add_bar(
            x=centers, y=ha, name="policy A (in distribution)", marker_color="#1f77b4", opacity=0.7, row=1, col=1
        )
        fig.add_bar(
            x=centers, y=hb, name="policy B (out of distribution)", marker_color="#d62728", opacity=0.7, row=1, col=1
        )
        fig.add_bar(
            x=["A", "B"],
            y=[a.prm_auroc, b.prm_auroc],
            marker_color=["#1f77b4", "#d62728"],
            showlegend=False,
            text=[f"{a.prm_auroc:.3f}", f"{b.prm_auroc:.3f}"],
            row=1,
            col=2,
        )
        fig.update_layout(barmode="overlay", title=title, width=1100, height=450, template="plotly_white")
        fig.update_yaxes(range=[0, 1], row=1, col=2)
        html = out.with_suffix(".html")
        fig.write_html(html, include_plotlyjs="cdn")
        written.append(html)
    except ImportError:
        log.info("plotly not installed: no HTML figure")
    png = out.with_suffix(".png")
    try:
        if fig is None:
            raise RuntimeError("no plotly figure")
        fig.write_image(png)  # needs kaleido and a Chrome/Chromium
    except Exception as exc:  # no browser here: draw the same panels with Pillow
        log.info("plotly PNG export unavailable (%s); drawing the PNG with Pillow", type(exc).__name__)
        _pillow_figure(png, centers, ha, hb, a, b, title)
    written.append(png)
    return written


def _pillow_figure(
    path: Path, centers: np.ndarray, ha: np.ndarray, hb: np.ndarray, a: PolicyResult, b: PolicyResult, title: str
) -> None:
    from PIL import Image, ImageDraw

    W, H = 1100, 450
    img = Image.new("RGB", (W, H), "white")
    d = ImageDraw.Draw(img)
    d.text((20, 10), title, fill="black")
    # left panel: histograms
    x0, y0, x1, y1 = 60, 50, 760, 400
    d.rectangle([x0, y0, x1, y1], outline="black")
    top = max(ha.max(), hb.max(), 1e-9)
    n = len(centers)
    bw = (x1 - x0) / n
    blue, red = (31, 119, 180), (214, 39, 40)
    for i in range(n):
        for h, color, off in ((ha[i], blue, 0.0), (hb[i], red, 0.5)):
            if h > 0:
                xa = x0 + (i + off) * bw
                d.rectangle([xa, y1 - (y1 - y0) * h / top, xa + bw / 2, y1], fill=color)
    for i in range(0, n, 5):
        d.text((x0 + i * bw, y1 + 5), f"{centers[i]:.1f}", fill="black")
    d.text((x0, y1 + 25), "log10 MC-dropout variance of a step's score", fill="black")
    d.rectangle([x0 + 10, y0 + 10, x0 + 20, y0 + 20], fill=blue)
    d.text((x0 + 25, y0 + 10), f"policy A steps (mean var {a.mean_mc_variance:.2e})", fill="black")
    d.rectangle([x0 + 10, y0 + 28, x0 + 20, y0 + 38], fill=red)
    d.text((x0 + 25, y0 + 28), f"policy B steps (mean var {b.mean_mc_variance:.2e})", fill="black")
    # right panel: AUROC bars
    x0, x1 = 820, 1060
    d.rectangle([x0, y0, x1, y1], outline="black")
    for j, (r, color) in enumerate(((a, blue), (b, red))):
        xa = x0 + 30 + j * 110
        v = 0.0 if np.isnan(r.prm_auroc) else r.prm_auroc
        d.rectangle([xa, y1 - (y1 - y0) * v, xa + 70, y1], fill=color)
        d.text((xa + 15, y1 - (y1 - y0) * v - 15), f"{v:.3f}", fill="black")
        d.text((xa + 20, y1 + 5), f"policy {r.style}", fill="black")
    d.text((x0, y1 + 25), "PRM step-level AUROC", fill="black")
    img.save(path)


def main(argv: Sequence[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=200, help="test problems (the first n of the fixed test split)")
    ap.add_argument("--samples", type=int, default=16, help="samples per problem for accuracy and Pass@N")
    ap.add_argument("--score-samples", type=int, default=4, help="samples per problem the PRM scores")
    ap.add_argument("--k", type=int, default=7, help="MC-dropout passes")
    ap.add_argument("--p", type=float, default=0.1, help="dropout probability")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--models", type=Path, default=None, help="folder holding arith-policy-a/-b and arith-prm")
    ap.add_argument("--figure", type=Path, default=FIG_DIR / "arith_fig2.png")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    torch.set_num_threads(args.threads)
    t0 = time.time()
    dirs = {"A": POLICY_DIRS["A"], "B": POLICY_DIRS["B"], "prm": PRM_DIR}
    if args.models:
        dirs = {
            "A": args.models / "arith-policy-a",
            "B": args.models / "arith-policy-b",
            "prm": args.models / "arith-prm",
        }
    tok = AutoTokenizer.from_pretrained(dirs["prm"])
    prm = AutoModelForTokenClassification.from_pretrained(dirs["prm"]).eval()
    problems = world.load_split("test", args.n)
    results = {}
    for style in ("A", "B"):
        policy = AutoModelForCausalLM.from_pretrained(dirs[style]).eval()
        results[style] = evaluate_policy(
            style, policy, prm, tok, problems, args.samples, args.k, args.p, args.score_samples, args.seed
        )
    a, b = results["A"], results["B"]
    ratio = b.mean_mc_variance / max(a.mean_mc_variance, 1e-12)
    checks = criteria(a, b)
    print(
        f"\nArithmetic world, test split: {len(problems)} problems, {args.samples} samples each at T={TEMPERATURE}; "
        f"PRM on {args.score_samples} samples each, K={args.k}, p={args.p}"
    )
    print(
        f"{'':10s}{'accuracy':>10s}{'pass@' + str(args.samples):>10s}{'step acc':>10s}{'steps':>8s}"
        f"{'AUROC':>8s}{'mean var':>12s}{'median var':>12s}"
    )
    for r in (a, b):
        print(
            f"policy {r.style:3s}{r.accuracy:10.3f}{r.pass_at_n:10.3f}{r.step_accuracy:10.3f}{r.n_steps_scored:8d}"
            f"{r.prm_auroc:8.3f}{r.mean_mc_variance:12.3e}{r.median_mc_variance:12.3e}"
        )
    print(f"variance ratio B/A: {ratio:.2f}")
    tau = float(SearchConfig().tau)
    shares = {
        r.style: {kind: float(np.mean([is_ood(v, tau, kind) for v in r.variances])) for kind in UNCERTAINTIES}
        for r in (a, b)
    }
    print(
        f"share of steps over τ = {tau:g} when τ thresholds σ² (the default) / σ: "
        + ", ".join(f"policy {s} {v['var']:.1%} / {v['std']:.1%}" for s, v in shares.items())
    )
    for name, ok in checks.items():
        print(f"  [{'PASS' if ok else 'FAIL'}] {name}")
    paths = write_figure(a, b, args.figure, args.k, args.p)
    summary = {
        "n_problems": len(problems),
        "samples": args.samples,
        "score_samples": args.score_samples,
        "k": args.k,
        "p": args.p,
        "variance_ratio": ratio,
        "criteria": checks,
        "seconds": time.time() - t0,
        "share_over_tau": shares,
        **{
            f"policy_{r.style}": {k: v for k, v in asdict(r).items() if k not in ("variances", "scores", "labels")}
            for r in (a, b)
        },
    }
    js = args.figure.with_name(args.figure.stem + "_metrics.json")
    js.write_text(json.dumps(summary, indent=2) + "\n")
    print(
        "wrote " + ", ".join(str(p.relative_to(REPO_ROOT) if p.is_relative_to(REPO_ROOT) else p) for p in [*paths, js])
    )
    print(f"report took {time.time() - t0:.0f} s")
    return summary


if __name__ == "__main__":
    main()
