"""`python -m benchmarks estimators`: what one estimate costs, per uncertainty estimator, as a multiple of one PRM pass.

On the embedded arithmetic world's PRM (no prefix cache, so every call does the work it reports): the time of one
estimate of K samples for each of a batch of step prefixes (uats_core.estimators, a new node's first estimate) over
the time of one deterministic pass of the PRM over the same prefixes, timed side by side and interleaved, the minimum
of `--repeats` rounds. The machine's load average is printed with the table: figures from a loaded machine say so.
The estimators' price in the search (Estimator.sample_cost, per sample) is printed beside what was measured.
"""

from __future__ import annotations

import argparse
import json
import os
import random
from pathlib import Path
from typing import Any

from uats_core.config import ESTIMATORS, SearchConfig
from uats_core.errors import ConfigError


def add_parser(sub: Any) -> None:
    p = sub.add_parser("estimators", help="cost of one estimate per uncertainty estimator, vs one PRM pass")
    p.add_argument("--estimators", default=",".join(ESTIMATORS))
    p.add_argument("--k", type=int, default=7, help="samples per estimate (K0)")
    p.add_argument("--traces", type=int, default=64, help="step prefixes per timed call")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--json", type=Path, default=None)
    p.set_defaults(func=run_estimators)


def run_estimators(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from uats.calibrate import id_calibration_traces
    from uats_core.backends import load_prm
    from uats_core.calibration import DEFAULT_PRM
    from uats_core.estimators import estimator_class, make_estimator
    from uats_core.timing import measure, summary

    names = [n.strip() for n in args.estimators.split(",") if n.strip()]
    for n in names:
        estimator_class(n)  # ConfigError naming estimator
    if args.k < 2 or args.traces < 1 or args.repeats < 1:
        raise ConfigError("k", "need --k >= 2, --traces >= 1 and --repeats >= 1")
    torch.set_num_threads(args.threads)
    random.seed(0)
    prm = load_prm(str(DEFAULT_PRM), dtype="float32", dropout_p=0.1, cache_bytes=0)
    traces = id_calibration_traces("test", args.traces, 0.3, 0)[: args.traces]
    load = os.getloadavg()
    rows = []
    for name in names:
        from uats.estimators_cmd import samples_for

        try:
            k = samples_for(prm, name, args.k)  # the ensemble: at most its members
            est = make_estimator(SearchConfig(estimator=name, k0=k), prm)
        except ConfigError as exc:
            print(f"{name}: skipped ({exc})")
            continue
        variants = {
            "one pass": lambda: prm.score(traces, use_cache=False),
            name: lambda est=est, k=k: est.more(traces, [[] for _ in traces], k),
        }
        times = measure(variants, args.repeats, warmup=True)
        one, it = summary(times["one pass"]), summary(times[name])
        cls = estimator_class(name)
        rows.append(
            {
                "estimator": name,
                "ratio": it["min_s"] / one["min_s"],
                "cpu_ratio": it["cpu_min_s"] / one["cpu_min_s"],
                "one_pass_s": one["min_s"],
                "estimate_s": it["min_s"],
                "spread": max(one["spread"], it["spread"]),
                "samples": cls.first_samples(k),
                "priced": cls.first_samples(k) * cls.sample_cost,
            }
        )
    print(
        f"{len(traces)} step prefixes a call, K = {args.k}, {args.threads} thread(s), min of {args.repeats} "
        f"interleaved rounds; load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} (1 / 5 / 15 min)\n"
    )
    print("| estimator | samples | cost of one estimate / one PRM pass (wall / CPU) | priced in the search (passes) |")
    print("|---|---|---|---|")
    for r in rows:
        print(f"| {r['estimator']} | {r['samples']} | {r['ratio']:.2f}× / {r['cpu_ratio']:.2f}× | {r['priced']:g} |")
    from uats.eval.run import code_version

    out = {
        "k": args.k,
        "traces": len(traces),
        "threads": args.threads,
        "load": list(load),
        "rows": rows,
        "code_version": code_version(),
    }
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return out
