"""`python -m benchmarks uncertainty`: what MC-dropout uncertainty costs and what it tells, per dropout mode
and per space (σ² of the passes' scores, or of their logits log(p/(1−p))).

On the embedded arithmetic world: written solutions with slips of the test problems in style A (the PRM's own,
in distribution) and style B (out of distribution), every step prefix scored with K passes. Per mode and space it
prints the cost against one deterministic pass (timed side by side, interleaved), the mean and median σ² ratio
B/A, the AUROC of σ² for "this step is B" and for "this step is wrong", and the share of A and B steps over τ,
with τ calibrated as `--tau auto[:q]` does: the q-quantile of σ² on style-A steps of the validation split.

The steps, passes and τ come from the calibrate command's functions (uats.calibrate).
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from uats.calibrate import MODES, dropout_modes, id_calibration_traces, mc_passes, space_variances
from uats_core.calibration import tau_from_variances
from uats_core.config import PAPER_TAU, UNCERTAINTY_SPACES
from uats_core.errors import ConfigError
from uats_core.estimation import auroc


# -- bench uncertainty ------------------------------------------------------------------------------------------
def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "uncertainty", help="per dropout mode and space: cost vs one pass, σ² ratio OOD/ID, AUROCs, share over τ"
    )
    p.add_argument("--prm", default=None, help="the PRM folder (default: the shipped arith-prm)")
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--k", type=int, default=7)
    p.add_argument("--p", type=float, default=0.1)
    p.add_argument("--problems", type=int, default=100, help="test problems (written solutions in styles A and B)")
    p.add_argument("--calibration-problems", type=int, default=100, help="validation problems whose A steps set τ")
    p.add_argument("--quantile", type=float, default=0.9, help="q of the calibrated τ (default 0.9)")
    p.add_argument("--slip-rate", type=float, default=0.3)
    p.add_argument("--timing-traces", type=int, default=64, help="steps per timed call (default 64)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--json", type=Path, default=None)
    p.set_defaults(func=run_uncertainty)


def _check(args: argparse.Namespace) -> None:
    if not 0.0 < args.quantile < 1.0:
        raise ConfigError("quantile", f"must be in (0, 1); got {args.quantile}")
    if args.k < 2:
        raise ConfigError("k", f"the sample variance needs K >= 2; got {args.k}")
    if args.problems < 1 or args.calibration_problems < 1 or args.timing_traces < 1 or args.repeats < 1:
        raise ConfigError("problems", "problems, calibration-problems, timing-traces and repeats must be >= 1")
    if not 0.0 < args.p < 1.0:
        raise ConfigError("p", f"the dropout probability must be in (0, 1); got {args.p}")


def cost_ratio(prm: Any, traces: Sequence[Any], mode: str, p: float, k: int, repeats: int) -> dict[str, float]:
    """Time of K passes in `mode` over one deterministic pass, both on the same steps, interleaved."""
    from uats_core.backends.mc_dropout import DropoutSpec
    from uats_core.timing import measure, summary

    spec = DropoutSpec.parse(mode, p)
    # the search's deterministic pass (PRM.score: dropout off, no noisy copies) against K passes in `mode`
    times = measure(
        {
            "one": lambda: prm.score(list(traces), use_cache=False),
            "mc": lambda: prm.mc_scores(list(traces), k, spec=spec, use_cache=False),
        },
        repeats,
        warmup=True,
    )
    a, b = summary(times["one"]), summary(times["mc"])
    return {
        "ratio": b["min_s"] / a["min_s"],
        "cpu_ratio": b["cpu_min_s"] / a["cpu_min_s"],
        "one_pass_s": a["min_s"],
        "mc_s": b["min_s"],
        "spread": max(a["spread"], b["spread"]),
    }


def space_row(v_a: np.ndarray, v_b: np.ndarray, wrong: np.ndarray, tau: float) -> dict[str, float]:
    """The table's numbers for one mode and space, from the per-step variances of the A and B steps."""
    both = np.concatenate([v_a, v_b])
    is_b = np.concatenate([np.zeros(len(v_a), bool), np.ones(len(v_b), bool)])

    def ratio(f: Any) -> float:
        return float(f(v_b) / f(v_a)) if f(v_a) > 0 else float("nan")

    return {
        "mean_ratio": ratio(np.mean),
        "median_ratio": ratio(np.median),
        "auroc_ood": auroc(both, is_b),
        "auroc_wrong": auroc(both, wrong),
        "tau": tau,
        "share_a": float((v_a > tau).mean()),
        "share_b": float((v_b > tau).mean()),
        "paper_share_a": float((v_a > PAPER_TAU).mean()),
        "paper_share_b": float((v_b > PAPER_TAU).mean()),
    }


def run_uncertainty(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from uats_core.backends import load_prm
    from uats_core.calibration import DEFAULT_PRM
    from uats_core.worlds.arith import world
    from uats_core.worlds.arith.written import written_steps

    _check(args)
    modes = dropout_modes(args.modes)
    torch.set_num_threads(args.threads)
    prm_dir = Path(args.prm) if args.prm else DEFAULT_PRM
    if not (prm_dir / "config.json").is_file():
        raise ConfigError("prm", f"no PRM at {prm_dir}; train it (python -m uats.arith.train) or pass --prm")
    # no prefix cache: every timed call does the work it reports, and the deterministic pass is not a cache hit
    prm = load_prm(str(prm_dir), dtype="float32", dropout_p=args.p, cache_bytes=0)
    problems = world.load_split("test", args.problems)
    rng = random.Random(args.seed)
    a, b = written_steps(problems, "A", args.slip_rate, rng), written_steps(problems, "B", args.slip_rate, rng)
    cal = id_calibration_traces("val", args.calibration_problems, args.slip_rate, args.seed)
    wrong = np.array(a.wrong + b.wrong, dtype=bool)
    timing = (a.traces + b.traces)[: args.timing_traces]
    out: dict[str, Any] = {
        "prm": str(prm_dir),
        "k": args.k,
        "p": args.p,
        "quantile": args.quantile,
        "steps_a": len(a.traces),
        "steps_b": len(b.traces),
        "wrong_a": int(sum(a.wrong)),
        "wrong_b": int(sum(b.wrong)),
        "calibration_steps": len(cal),
        "rows": [],
    }
    print(
        f"{prm_dir.name}: {len(problems)} test problems, {len(a.traces)} A (ID) and {len(b.traces)} B (OOD) "
        f"step prefixes ({out['wrong_a']} / {out['wrong_b']} wrong), K={args.k}, p={args.p}; "
        f"τ = q{args.quantile:g} of σ² on {len(cal)} A steps of the validation split; cost on {len(timing)} steps, "
        f"min of {args.repeats} interleaved runs"
    )
    for mode in modes:
        cost = cost_ratio(prm, timing, mode, args.p, args.k, args.repeats)
        mc = mc_passes(prm, a.traces + b.traces, mode, args.p, args.k, args.seed)
        mc_cal = mc_passes(prm, cal, mode, args.p, args.k, args.seed + 1)
        for space in UNCERTAINTY_SPACES:
            v = space_variances(mc, space)
            tau = tau_from_variances(space_variances(mc_cal, space), args.quantile)
            row = {
                "mode": mode,
                "space": space,
                **cost,
                **space_row(v[: len(a.traces)], v[len(a.traces) :], wrong, tau),
            }
            row["auroc_wrong_one_minus_mean"] = auroc(1.0 - mc.mean(axis=1), wrong)
            out["rows"].append(row)
    print_table(out["rows"])
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return out


def print_table(rows: list[dict[str, Any]]) -> None:
    print(
        "\n| mode | space | cost vs one pass (wall / CPU) | mean σ² B/A | median σ² B/A | AUROC σ² for B | "
        f"AUROC σ² for wrong | τ (calibrated) | share > τ, A / B | share > {PAPER_TAU:g}, A / B |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        paper = f"{r['paper_share_a']:.2f} / {r['paper_share_b']:.2f}" if r["space"] == "prob" else "–"
        print(
            f"| {r['mode']} | {r['space']} | {r['ratio']:.2f}× / {r['cpu_ratio']:.2f}× | {r['mean_ratio']:.2f} | "
            f"{r['median_ratio']:.2f} | {r['auroc_ood']:.3f} | {r['auroc_wrong']:.3f} | {r['tau']:.3g} | "
            f"{r['share_a']:.2f} / {r['share_b']:.2f} | {paper} |"
        )
    base = {r["mode"]: r["auroc_wrong_one_minus_mean"] for r in rows}
    print("\nfor reference, AUROC of 1 − R̄ for wrong: " + ", ".join(f"{m} {v:.3f}" for m, v in base.items()))
    print("σ instead of σ²: the same AUROCs and shares (a monotone map of the statistic and of its quantile τ)")
