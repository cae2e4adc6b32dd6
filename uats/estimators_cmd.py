"""`uats estimators`: fit the hidden-state estimators beside a PRM, and measure every estimator step by step.

    uats estimators fit [--prm assets/models/arith-prm] [--traces id_solutions.jsonl]
    uats estimators measure [--problems 200] [--samples 2] [--k 7] [--json results/estimators/arith.json]

`fit` runs the PRM once over in-distribution steps (the arithmetic world's: style-A written solutions with slips of
the train split; another PRM's: --traces, one {"question", "steps"} object a line, every prefix a step) and writes the
Laplace posterior of its head and the Mahalanobis statistics beside it (uats_core/estimators/posterior.py).

`measure` samples policy A's and policy B's solutions to the world's test problems, labels every step with the exact
checker, and reads every estimator's estimate of every step prefix (K samples each): the AUROC of σ² for "this step
is wrong", overall and within each fifth of the PRM's deterministic score, and of σ² for "this step is B's"
(uats_core/estimators/measure.py). Costs are the benchmark's (python -m benchmarks estimators), timed on their own."""

from __future__ import annotations

import argparse
import json
import logging
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from uats_core.config import ESTIMATORS, UNCERTAINTY_SPACES, SearchConfig
from uats_core.errors import ConfigError
from uats_core.estimators.measure import key, ood_auroc, pair_row, table, verdict

log = logging.getLogger(__name__)

BATCH = 256  # step prefixes per estimator call


def _estimators(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in ESTIMATORS]
    if bad or not names:
        raise ConfigError("estimators", f"got {text!r}; give a comma-separated list of {', '.join(ESTIMATORS)}")
    return names


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="uats estimators", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fit", help="fit the Laplace and Mahalanobis estimators beside a PRM")
    f.add_argument("--prm", default=None, help="PRM folder (default: the embedded arith-prm)")
    f.add_argument("--prm-kind", default=None)
    f.add_argument("--traces", type=Path, default=None, help="JSONL of in-distribution solutions (other PRMs)")
    f.add_argument("--problems", type=int, default=2000, help="train-split problems (the arithmetic world)")
    f.add_argument("--slip-rate", type=float, default=0.3)
    f.add_argument("--seed", type=int, default=0)
    f.add_argument("--out", type=Path, default=None, help="default: beside the PRM")
    c = sub.add_parser("calibrate", help="σ² of each estimator on in-distribution steps, for --tau auto")
    c.add_argument("--prm", default=None, help="PRM folder (default: the embedded arith-prm)")
    c.add_argument(
        "--estimators",
        type=_estimators,
        default=[n for n in ESTIMATORS if n != "mc-dropout"],
        help="default: all but mc-dropout (`uats calibrate` calibrates MC dropout per dropout mode)",
    )
    c.add_argument("--k", type=int, default=7)
    c.add_argument("--problems", type=int, default=100, help="val-split problems (style-A written steps, 30%% slips)")
    c.add_argument("--traces", type=Path, default=None, help="JSONL of in-distribution solutions (other PRMs)")
    m = sub.add_parser("measure", help="AUROC of each estimator's σ² for wrong steps, per fifth of R, on A and B")
    m.add_argument("--estimators", type=_estimators, default=list(ESTIMATORS))
    m.add_argument("--problems", type=int, default=200, help="test problems")
    m.add_argument("--samples", type=int, default=2, help="sampled solutions per problem and policy")
    m.add_argument("--k", type=int, default=7, help="samples per estimate (K0)")
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--threads", type=int, default=1)
    m.add_argument("--json", type=Path, default=None, help="write the rows here (the results page reads this file)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        if args.cmd == "fit":
            fit(args)
        elif args.cmd == "calibrate":
            calibrate(args)
        else:
            measure(args)
    except ConfigError as exc:
        print(f"error: {exc}")
        return 2
    return 0


def hidden_states(prm: Any, traces: Sequence[Any]) -> np.ndarray:
    return np.concatenate([prm.last_hidden(list(traces[i : i + BATCH])) for i in range(0, len(traces), BATCH)])


def fit(args: argparse.Namespace) -> Path:
    from uats.calibrate import id_calibration_traces, jsonl_traces
    from uats_core.backends import load_prm
    from uats_core.calibration import DEFAULT_PRM
    from uats_core.estimators.posterior import HEAD_FIT_FILE, fit_head

    if args.problems < 2:
        raise ConfigError("problems", f"need at least 2; got {args.problems}")
    if args.traces is not None and not args.traces.is_file():
        raise ConfigError("traces", f'no file at {args.traces}; give a JSONL of {{"question", "steps"}} objects')
    spec = str(args.prm or DEFAULT_PRM)
    prm = load_prm(spec, kind=args.prm_kind, dtype="float32")
    w, b = prm.head_linear()  # BackendError (a ValueError naming prm) for a head that is not one logit direction
    traces = (
        jsonl_traces(args.traces)
        if args.traces
        else id_calibration_traces("train", args.problems, args.slip_rate, args.seed)
    )
    t = time.time()
    fitted = fit_head(hidden_states(prm, traces), w, b)
    out = args.out or Path(prm.folder or ".") / HEAD_FIT_FILE
    fitted.save(out)
    print(f"fitted on {fitted.n} steps in {time.time() - t:.0f} s -> {out} ({out.stat().st_size / 1024:.0f} KiB)")
    return out


def calibrate(args: argparse.Namespace) -> None:
    """Write each estimator's σ² (prob and logit) on in-distribution steps into the PRM's calibration file, where
    `--tau auto[:q]` reads it (uats_core.calibration.resolve_tau, keyed by estimator and space)."""
    from uats.calibrate import id_calibration_traces, jsonl_traces
    from uats_core.backends import load_prm
    from uats_core.calibration import (
        DEFAULT_PRM,
        calibration_path,
        entry_key,
        spread_entry,
        tau_from_variances,
        write_calibration,
    )
    from uats_core.estimators import make_estimator

    spec = str(args.prm or DEFAULT_PRM)
    prm = load_prm(spec, dtype="float32")
    traces = jsonl_traces(args.traces) if args.traces else id_calibration_traces("val", args.problems, 0.3, 0)
    source = (
        str(args.traces) if args.traces else f"arith val split, {args.problems} problems, style A written, 30% slips"
    )
    spreads = {}
    for name in args.estimators:
        est = make_estimator(SearchConfig(estimator=name, k0=args.k), prm)
        ests = [
            e
            for i in range(0, len(traces), BATCH)
            for e in est.more(traces[i : i + BATCH], [[] for _ in traces[i : i + BATCH]], args.k)
        ]
        for space, values in (("prob", [e.var for e in ests]), ("logit", [e.logit_var for e in ests])):
            v = np.nan_to_num(np.asarray(values, dtype=np.float64), nan=0.0)
            spreads[entry_key("", 0.0, space, name)] = spread_entry(v, args.k, source)
            print(f"{name:>12s} {space:>6s} τ = q0.9 of σ²: {tau_from_variances(v, 0.9):.4g}")
    path = calibration_path(spec)
    write_calibration(path, prm=str(args.prm or "assets/models/arith-prm"), spreads=spreads)  # the spec as given
    print(f"wrote {len(spreads)} entries to {path}")


def sampled_steps(style: str, problems: Sequence[Any], samples: int, seed: int) -> tuple[list[Any], list[bool]]:
    """Every step prefix of `samples` solutions per problem sampled from policy `style` (T = 0.8, as the world's
    report samples), with the exact checker's verdict on its last step."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from uats_core.protocols import Trace
    from uats_core.worlds.arith import solutions
    from uats_core.worlds.arith.modeling import POLICY_DIRS, sample_solutions

    tok = AutoTokenizer.from_pretrained(POLICY_DIRS[style])
    policy = AutoModelForCausalLM.from_pretrained(POLICY_DIRS[style])
    gen = torch.Generator().manual_seed(seed)
    flat = [p for p in problems for _ in range(samples)]
    sols = sample_solutions(policy, tok, [p.question for p in flat], generator=gen, batch_size=256)
    traces, wrong = [], []
    for prob, steps in zip(flat, sols):
        for j, ok in enumerate(solutions.label_steps(prob, steps)):
            traces.append(Trace(prob.question, tuple(steps[: j + 1])))
            wrong.append(not ok)
    return traces, wrong


def samples_for(prm: Any, name: str, k: int) -> int:
    """K for this estimator: k, or the ensemble's member count when it has fewer."""
    from uats_core.estimators import make_estimator

    if name != "ensemble":
        return k
    return min(k, make_estimator(SearchConfig(estimator=name, k0=2), prm).capacity(0) or k)


def estimate_all(prm: Any, name: str, k: int, traces: Sequence[Any], seed: int) -> dict[str, np.ndarray]:
    """σ² of every trace's scores and of their logits under estimator `name` (K = k samples each, at most the
    ensemble's members; NaN where it has none)."""
    import torch

    from uats_core.estimators import make_estimator

    torch.manual_seed(seed)  # the dropout masks: a rerun gives the same table
    k = samples_for(prm, name, k)
    est = make_estimator(SearchConfig(estimator=name, k0=k), prm)
    got = []
    for i in range(0, len(traces), BATCH):
        chunk = list(traces[i : i + BATCH])
        got += est.more(chunk, [[] for _ in chunk], k)
    nan = float("nan")
    return {
        "prob": np.asarray([e.var if e.var is not None else nan for e in got], dtype=np.float64),
        "logit": np.asarray([e.logit_var if e.logit_var is not None else nan for e in got], dtype=np.float64),
    }


def measure(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from uats_core.backends import load_prm
    from uats_core.calibration import DEFAULT_PRM
    from uats_core.worlds.arith import world

    for flag in ("problems", "samples"):
        if getattr(args, flag) < 1:
            raise ConfigError(flag, f"must be at least 1; got {getattr(args, flag)}")
    if args.k < 2:
        raise ConfigError("k", f"the sample variance needs K >= 2; got {args.k}")
    torch.set_num_threads(args.threads)
    random.seed(args.seed)
    prm = load_prm(str(DEFAULT_PRM), dtype="float32", dropout_p=0.1)
    problems = world.load_split("test", args.problems)
    steps = {
        pair: sampled_steps(style, problems, args.samples, args.seed)
        for pair, style in (("A:prm", "A"), ("B:prm", "B"))
    }
    scores = {
        pair: np.concatenate([[s[-1] for s in prm.score(tr[i : i + BATCH])] for i in range(0, len(tr), BATCH)])
        for pair, (tr, _) in steps.items()
    }
    from uats.eval.run import code_version

    version = code_version()  # the commit whose code measured these rows (+dirty: uncommitted changes)
    rows, separation, old_versions = [], {}, {}
    if args.json and args.json.is_file():  # keep the other estimators' rows of the same setting (measured apart)
        old = json.loads(args.json.read_text(encoding="utf-8"))
        if all(old.get(k) == getattr(args, k) for k in ("problems", "samples", "k", "seed")):
            rows = [r for r in old["rows"] if r["estimator"] not in args.estimators]
            separation = {k: v for k, v in old["separation"].items() if k.split("|")[0] not in args.estimators}
            old_versions = {k: v for k, v in (old.get("code_versions") or {}).items() if k not in args.estimators}
    for name in args.estimators:
        t = time.time()
        var = {pair: estimate_all(prm, name, args.k, tr, args.seed) for pair, (tr, _) in steps.items()}
        for space in UNCERTAINTY_SPACES:
            separation[key(name, space)] = ood_auroc(var["A:prm"][space], var["B:prm"][space])
            for pair, (_, wrong) in steps.items():
                rows.append(pair_row(name, pair, var[pair][space], scores[pair], wrong, space).to_dict())
        log.info("%s: %.0f s", name, time.time() - t)
    order = {n: i for i, n in enumerate(ESTIMATORS)}
    rows.sort(key=lambda r: (order[r["estimator"]], r.get("space", "prob") != "prob", r["pair"]))
    out = {
        "problems": args.problems,
        "samples": args.samples,
        "k": args.k,
        "seed": args.seed,
        "rows": rows,
        "k_by_estimator": {n: samples_for(prm, n, args.k) for n in args.estimators},
        "code_versions": {**(old_versions if rows else {}), **{n: version for n in args.estimators}},
        "separation": separation,
        "verdict": verdict(rows, "B:prm"),
    }
    print(
        f"{args.problems} test problems × {args.samples} samples of policies A and B; K = {args.k}; fifths of the "
        "PRM's deterministic score (lowest first), wrong steps in brackets\n"
    )
    print(table(rows, separation))
    print("\n" + out["verdict"])
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return out
