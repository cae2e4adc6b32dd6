"""`uats calibrate`: measure c, the time of one generated step over one PRM
pass, for a policy and a PRM, and the in-distribution MC-dropout spreads that `--tau auto[:q]` reads; both are
written beside the PRM (uats_core.calibration reads them). A command, not a benchmark: searches read what it
writes.

    uats calibrate --policy assets/models/arith-policy-a --prm assets/models/arith-prm
    uats calibrate --prm PRM --skip-cost --tau-traces id_solutions.jsonl   # another domain
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from uats_core.backends.prompting import STEP_TOKEN_CAP
from uats_core.calibration import calibration_path, entry_key, spread_entry, tau_from_variances, write_calibration
from uats_core.config import UNCERTAINTY_SPACES, parse_dropout_mode
from uats_core.errors import ConfigError
from uats_core.estimation import logits
from uats_core.problems import SHIPPED_DATASETS
from uats_core.timing import spread, timed

MATH500 = SHIPPED_DATASETS["math500"]

MODES = ("full", "last:2", "head")


def dropout_modes(text: str) -> list[str]:
    modes = [m.strip() for m in text.split(",") if m.strip()]
    for m in modes:
        parse_dropout_mode(m)  # ConfigError names the field
    if not modes:
        raise ConfigError("modes", "give at least one dropout mode, e.g. full,last:2,head")
    return modes


def space_variances(mc: np.ndarray, space: str) -> np.ndarray:
    """Per row (one step, K passes): the sample variance of the scores or of their logits."""
    x = logits(mc) if space == "logit" else np.asarray(mc, dtype=np.float64)
    return x.var(axis=1, ddof=1)


def mc_passes(prm: Any, traces: Sequence[Any], mode: str, p: float, k: int, seed: int) -> np.ndarray:
    import torch

    from uats_core.backends.mc_dropout import DropoutSpec

    torch.manual_seed(seed)  # the dropout masks: fixed so a rerun gives the same table
    return np.asarray(prm.mc_scores(list(traces), k, spec=DropoutSpec.parse(mode, p)), dtype=np.float64)


def id_calibration_traces(split: str, n: int, slip_rate: float, seed: int) -> list[Any]:
    """In-distribution steps of the arithmetic world: style-A written solutions (with slips) of `split`."""
    from uats_core.worlds.arith import world
    from uats_core.worlds.arith.written import written_steps

    return written_steps(world.load_split(split, n), "A", slip_rate, random.Random(seed)).traces


def jsonl_traces(path: Path) -> list[Any]:
    """In-distribution steps of another PRM's domain: one JSON object a line, {"question": ..., "steps": [...]};
    every prefix of the steps is one calibration step."""
    from uats_core.protocols import Trace

    out = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        if not line.strip():
            continue
        row = json.loads(line)
        if not isinstance(row.get("question"), str) or not isinstance(row.get("steps"), list) or not row["steps"]:
            raise ConfigError("tau_traces", f'{path} line {i + 1}: need {{"question": str, "steps": [str, ...]}}')
        for j in range(len(row["steps"])):
            out.append(Trace(row["question"], tuple(str(s) for s in row["steps"][: j + 1])))
    return out


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "calibrate", help="c = time of one generated step / time of one PRM pass; the ID spreads for --tau auto"
    )
    p.add_argument("--policy", default=None, help="policy spec (folder, .gguf, hf:<id>); needed for c")
    p.add_argument("--prm", required=True, help="PRM spec")
    p.add_argument("--prm-kind", default=None)
    p.add_argument("--batch", type=int, default=8, help="traces per call (the search batches a whole step)")
    p.add_argument("--depth", type=int, default=2, help="steps generated before the measured one")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument(
        "--question", default=None, help="default: an arithmetic test problem for arith models, else MATH-500 #0"
    )
    p.add_argument("--step-token-cap", type=int, default=STEP_TOKEN_CAP, help="tokens one step may have")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--json", type=Path, default=None)
    add_tau_args(p)
    p.set_defaults(fn=cmd_calibrate)


def _default_question(policy_spec: str) -> str:
    if "arith" in policy_spec:
        from uats_core.worlds.arith import world

        return world.load_split("test", 1)[0].question
    if MATH500.is_file():
        return json.loads(MATH500.read_text(encoding="utf-8").splitlines()[0])["problem"]
    return "What is the sum of the first 20 positive integers?"


def run_calibrate(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from uats_core.backends import load_prm

    if args.skip_cost and args.skip_tau:
        raise ConfigError("skip_tau", "with --skip-cost and --skip-tau there is nothing to calibrate; drop one")
    if not args.skip_cost and not args.policy:
        raise ConfigError("policy", "c needs a policy: give --policy, or --skip-cost for the τ calibration only")
    torch.set_num_threads(args.threads)
    prm = load_prm(args.prm, kind=args.prm_kind, cache_bytes=0)  # no prefix cache: c is per full PRM pass
    res = None if args.skip_cost else _measure_c(args, prm)
    calibrate_tau(args, prm, res)
    return res or {}


def cmd_calibrate(args: argparse.Namespace) -> int:
    run_calibrate(args)
    return 0


def _measure_c(args: argparse.Namespace, prm: Any) -> dict[str, Any]:
    from uats_core.backends import load_policy
    from uats_core.backends.mc_dropout import DropoutSpec
    from uats_core.protocols import Trace

    one_pass = DropoutSpec.parse("full", 0.0)
    policy = load_policy(args.policy, seed=0, step_token_cap=args.step_token_cap)
    question = args.question or _default_question(args.policy)
    traces = [Trace(question)] * args.batch
    for _ in range(args.depth):  # reach a realistic depth first
        outs = policy.generate_steps(traces)
        traces = [t.extend(o.text) for t, o in zip(traces, outs)]
    gen_times, gen_tokens, pass_times = [], [], []
    for _ in range(args.repeats):
        box: list[Any] = []
        gen_times.append(timed(lambda box=box: box.append(policy.generate_steps(traces))))
        outs = box[0]
        gen_tokens.append(sum(o.num_tokens for o in outs))
        scored = [t.extend(o.text or " ") for t, o in zip(traces, outs)]
        # One pass = one deterministic forward reading the last step (for a judge: one prompt, not one per step).
        pass_times.append(timed(lambda scored=scored: prm.mc_scores(scored, 1, spec=one_pass)))
    step_s, pass_s = min(t[0] for t in gen_times) / args.batch, min(t[0] for t in pass_times) / args.batch
    res = {
        "policy": args.policy,
        "prm": args.prm,
        "batch": args.batch,
        "depth": args.depth,
        "step_s": step_s,
        "prm_pass_s": pass_s,
        "c": step_s / pass_s,
        "tokens_per_step": float(np.mean(gen_tokens)) / args.batch,
        "spread_step": spread([t[0] for t in gen_times]),
        "spread_pass": spread([t[0] for t in pass_times]),
    }
    print(
        f"one generated step: {step_s:.3f}s ({res['tokens_per_step']:.1f} tokens avg, batch {args.batch}); "
        f"one PRM pass: {pass_s:.3f}s; c = {res['c']:.1f}  (spreads {res['spread_step']:.0%}, {res['spread_pass']:.0%})"
    )
    print(f"use: SearchConfig(cost_ratio={res['c']:.1f})")
    if args.json:
        args.json.write_text(json.dumps(res, indent=2), encoding="utf-8")
    return res


# -- τ: the in-distribution spreads --------------------------------------------------------------------------
def add_tau_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--tau-modes", default=",".join(MODES), help="dropout modes to calibrate τ for (default full,last:2,head)"
    )
    p.add_argument("--p", type=float, default=0.1, help="dropout probability of the τ calibration (default 0.1)")
    p.add_argument("--k", type=int, default=7, help="MC passes per step for the τ calibration (default 7)")
    p.add_argument(
        "--tau-problems", type=int, default=100, help="arithmetic-world problems whose style-A steps calibrate τ"
    )
    p.add_argument("--tau-split", default="val", help="their split (default val: not the test problems)")
    p.add_argument(
        "--tau-traces",
        type=Path,
        default=None,
        help="for another PRM: a .jsonl of in-distribution solutions {question, steps} instead",
    )
    p.add_argument("--skip-cost", action="store_true", help="only the τ calibration (no policy needed)")
    p.add_argument("--skip-tau", action="store_true", help="only c")
    p.add_argument("--calibration", type=Path, default=None, help="the calibration file (default: beside the PRM)")


def calibrate_tau(args: argparse.Namespace, prm: Any, cost: dict[str, Any] | None) -> dict[str, Any]:
    """Score the in-distribution steps per mode, write c and the spreads (prob and logit) beside the PRM, and
    print τ at the 0.9 quantile of each."""
    path = args.calibration or calibration_path(args.prm)
    spreads: dict[str, dict[str, Any]] = {}
    if not args.skip_tau:
        if args.tau_traces is not None:
            traces, source = jsonl_traces(args.tau_traces), str(args.tau_traces)
        else:
            traces = id_calibration_traces(args.tau_split, args.tau_problems, 0.3, 0)
            source = f"arith {args.tau_split} split, {args.tau_problems} problems, style A written solutions, 30% slips"
        print(f"\nτ calibration: {len(traces)} in-distribution steps ({source}), K={args.k}, p={args.p}")
        print(f"{'mode':>8s} {'space':>6s} {'τ = q0.9 of σ²':>16s} {'of σ':>10s}")
        for mode in dropout_modes(args.tau_modes):
            mc = mc_passes(prm, traces, mode, args.p, args.k, seed=0)
            for space in UNCERTAINTY_SPACES:
                v = space_variances(mc, space)
                spreads[entry_key(mode, args.p, space)] = spread_entry(v, args.k, source)
                print(
                    f"{mode:>8s} {space:>6s} {tau_from_variances(v, 0.9):16.4g} "
                    f"{tau_from_variances(v, 0.9, 'std'):10.4g}"
                )
    data = write_calibration(path, prm=str(args.prm), cost=cost, spreads=spreads)
    print(
        f"wrote {path} ({len(data.get('uncertainty') or {})} τ entries"
        + (f", c = {data['cost']['c']:.1f}" if data.get("cost") else "")
        + "); `--tau auto[:q]` reads it"
    )
    return data
