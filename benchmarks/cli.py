"""Benchmarks: `python -m benchmarks <subcommand>`, run from a checkout: the wheel leaves benchmarks/ out, and no
command of the package launches them (a launcher inside would import upward, into the layer above every other).

  prm        cost of MC-dropout scoring per mode, cost per node vs depth with/without the prefix cache,
             and uncertainty quality (AUROC of sigma^2 for wrong steps) on the arithmetic world's PRM
  uncertainty  per dropout mode and space: cost vs one pass, σ² ratio OOD/ID, AUROCs, share over the calibrated τ
             (benchmarks/uncertainty.py)
  engine     search wall time per method and the cost of the run log (benchmarks/engine.py)
  gpu        a PRM of a published shape on the device: the memory plan against the allocator, MC cost per mode
             (benchmarks/gpu.py)
  app        the app's update latency (node written -> node drawn) and tree redraw times (benchmarks/app.py)
  eval       searches per minute with and without cross-problem batching (benchmarks/eval_batching.py)
  estimators  cost of one estimate per uncertainty estimator (MC dropout, ensemble, Laplace, Mahalanobis) vs one
             PRM pass (benchmarks/estimators.py)
  cases      the case finder on the embedded world: a case batch through the worker pool, then the ranked cases
             (benchmarks/casefinder.py)
  import     `uats import` of a 200 MB search-and-learn file: refused on the node cap, and --rows of it
             (benchmarks/imports.py)
  slow-clients  how long a slow request head and a stalled body hold a connection to the app, with and without its
             head clock; a stream past the bound (benchmarks/slow_clients.py)

Subcommands register themselves with `@subcommand` (or, from another module, in EXTERNAL_SUBCOMMANDS): a function
that takes the subparsers object, adds its parser and sets `func` (or `fn`) on it.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks import (
    casefinder as bench_cases,
    engine as bench_engine,
    estimators as bench_estimators,
    gpu as bench_gpu,
    imports as bench_imports,
    slow_clients as bench_slow_clients,
    uncertainty as bench_uncertainty,
)
from uats_core.errors import ConfigError
from uats_core.estimation import auroc
from uats_core.paths import ASSETS
from uats_core.timing import measure, summary

log = logging.getLogger(__name__)

MODELS_DIR = ASSETS

SUBCOMMANDS: dict[str, Callable[[Any], None]] = {}
# Subcommands defined in other modules: name -> the function that adds their parser.
# Their handlers may set `func` or `fn` on the namespace and may return an exit code.
EXTERNAL_SUBCOMMANDS: dict[str, Callable[[Any], None]] = {
    "engine": bench_engine.add_parser,
    "gpu": bench_gpu.add_parser,
    "uncertainty": bench_uncertainty.add_parser,
    "cases": bench_cases.add_parser,
    "import": bench_imports.add_parser,
    "estimators": bench_estimators.add_parser,
    "slow-clients": bench_slow_clients.add_parser,
}


def _app_main(argv: Sequence[str]) -> int | None:
    from benchmarks.app import main as app_main  # imported on use: the app's bench pulls in the app's stack

    return app_main(argv)


def _eval_main(argv: Sequence[str]) -> int | None:
    from benchmarks.eval_batching import main as eval_main

    return eval_main(argv)


# Benchmarks with an argument parser of their own: `bench NAME ARGS...` hands ARGS to their main(argv).
PASSTHROUGH_SUBCOMMANDS: dict[str, Callable[[Sequence[str]], int | None]] = {"app": _app_main, "eval": _eval_main}
_PASSTHROUGH_HOME = {"app": "benchmarks.app", "eval": "benchmarks.eval_batching"}


def subcommand(name: str) -> Callable[[Callable[[Any], None]], Callable[[Any], None]]:
    def register(fn: Callable[[Any], None]) -> Callable[[Any], None]:
        SUBCOMMANDS[name] = fn
        return fn

    return register


# -- prm ---------------------------------------------------------------------------------------------------
@subcommand("prm")
def _add_prm(sub: Any) -> None:
    p = sub.add_parser(
        "prm", help="MC-dropout cost per mode, cost vs depth with/without the prefix cache, AUROC of sigma^2"
    )
    p.add_argument("--k", type=int, default=7, help="MC passes (default 7)")
    p.add_argument("--p", type=float, default=0.1, help="dropout probability")
    p.add_argument("--tokens", type=int, default=384, help="node length for the per-mode cost (default 384)")
    p.add_argument("--question-tokens", type=int, default=64)
    p.add_argument("--step-tokens", type=int, default=32)
    p.add_argument("--depths", default="1,2,3,4,6,8,10,12", help="comma-separated depths (steps) for the cache part")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--dtype", default="bfloat16", help="float32 | bfloat16 (default bfloat16: the fast CPU path)")
    p.add_argument(
        "--gguf", default=None, help="a SmolLM2 GGUF file for real weights (default: random init of its shape)"
    )
    p.add_argument(
        "--shape",
        choices=("smollm2-135m", "tiny"),
        default="smollm2-135m",
        help="random-init shape when no --gguf (tiny: 4 layers, hidden 64; for smoke tests)",
    )
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--models-dir", type=Path, default=MODELS_DIR, help="where arith-prm lives (for the AUROC part)")
    p.add_argument("--arith-problems", type=int, default=100)
    p.add_argument("--skip", default="", help="comma-separated parts to skip: modes,depth,auroc")
    p.add_argument("--json", type=Path, default=None, help="also write the results here")
    p.set_defaults(func=run_prm)


def _cost_model(args: argparse.Namespace) -> Any:
    import torch

    from uats_core.backends._loading import resolve_dtype

    dtype = resolve_dtype(args.dtype, torch.device("cpu"))
    if args.gguf:
        from transformers import AutoModel

        path = Path(args.gguf)
        model = AutoModel.from_pretrained(str(path.parent), gguf_file=path.name)
    else:
        from transformers import LlamaModel

        from uats_core.backends.tiny import smollm2_135m_config

        torch.manual_seed(0)
        config = smollm2_135m_config()
        if args.shape == "tiny":
            config.update(
                {
                    "hidden_size": 64,
                    "intermediate_size": 128,
                    "num_hidden_layers": 4,
                    "num_attention_heads": 4,
                    "num_key_value_heads": 2,
                    "vocab_size": 512,
                }
            )
        model = LlamaModel(config)
    return model.to(dtype).eval()


def run_prm(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from uats_core.backends.mc_dropout import DropoutSpec, MCDropoutEngine
    from uats_core.backends.prefix_cache import PrefixCache

    torch.set_num_threads(args.threads)
    skip = set(filter(None, args.skip.split(",")))
    results: dict[str, Any] = {"k": args.k, "p": args.p, "dtype": args.dtype, "repeats": args.repeats}
    if not skip >= {"modes", "depth"}:
        model = _cost_model(args)
        results["model"] = (
            f"{'GGUF ' + args.gguf if args.gguf else 'random init'}, {args.shape if not args.gguf else 'SmolLM2'} "
            f"shape ({model.config.num_hidden_layers} layers, hidden {model.config.hidden_size})"
        )
        print(f"cost model: {results['model']}, dtype {args.dtype}, {args.threads} threads")
        vocab = model.config.vocab_size
        gen = torch.Generator().manual_seed(0)

        def tokens(n: int) -> list[int]:
            return torch.randint(3, vocab, (n,), generator=gen).tolist()

    if "modes" not in skip:
        results["modes"] = _prm_modes(args, model, tokens)

    if "depth" not in skip:
        depths = [int(d) for d in args.depths.split(",") if d]
        q = tokens(args.question_tokens)
        steps = [tokens(args.step_tokens) for _ in range(max(depths))]
        cache = PrefixCache(max_bytes=2 * 2**30)
        cached = MCDropoutEngine(model, cache=cache)
        plain = MCDropoutEngine(model, cache=None)
        specs: dict[str, DropoutSpec | None] = {
            "deterministic": None,
            "head": DropoutSpec.parse("head", args.p),
            "last:2": DropoutSpec.parse("last:2", args.p),
        }
        depth_rows: list[dict[str, Any]] = []
        print(
            f"\ncost per node vs depth: question {args.question_tokens} + depth x {args.step_tokens} tokens; "
            f"'cached' = the parent's prefix entry is in the cache; MC modes with K={args.k}"
        )
        print(
            f"{'depth':>5s} {'tokens':>6s} "
            + " ".join(f"{m + ' ' + c:>21s}" for m in specs for c in ("plain", "cached"))
        )
        for d in depths:
            node = q + [t for s in steps[:d] for t in s]
            parent = q + [t for s in steps[: d - 1] for t in s]
            pos = [[len(node) - 1]]
            variants = {}
            for mname, spec in specs.items():
                kk = 1 if spec is None else args.k
                variants[f"{mname} plain"] = lambda spec=spec, kk=kk, node=node, pos=pos: plain.hidden_at(
                    [node], pos, k=kk, spec=spec
                )
                variants[f"{mname} cached"] = lambda spec=spec, kk=kk, node=node, pos=pos, parent=parent: (
                    cached.hidden_at([node], pos, k=kk, spec=spec, prefixes=[[parent]])
                )

            def setup(name: str, parent=parent) -> None:
                # Fresh cache holding only the parent's entry, so the node itself is never a free exact hit.
                if name.endswith("cached"):
                    cache.clear()
                    spec = specs[name.rsplit(" ", 1)[0]]
                    cached.hidden_at([parent], [[len(parent) - 1]], k=1 if spec is None else 2, spec=spec)

            times = measure(variants, args.repeats, setup, warmup=d == depths[0])
            row = {"depth": d, "tokens": len(node), **{name: summary(ts) for name, ts in times.items()}}
            depth_rows.append(row)
            print(
                f"{d:5d} {len(node):6d} "
                + " ".join(f"{row[n]['min_s']:8.3f} /{row[n]['cpu_min_s']:7.3f} cpu" for n in variants)
            )
        first, last = depth_rows[0], depth_rows[-1]
        names = [n for n in first if n not in ("depth", "tokens")]
        growth = {n: last[n]["min_s"] / first[n]["min_s"] for n in names}
        cpu_growth = {n: last[n]["cpu_min_s"] / first[n]["cpu_min_s"] for n in names}
        results["depth"] = {
            "rows": depth_rows,
            "growth_last_over_first": growth,
            "cpu_growth_last_over_first": cpu_growth,
        }
        print(
            f"growth depth {last['depth']} / depth {first['depth']} (wall, cpu): "
            + ", ".join(f"{n} {growth[n]:.2f}x, {cpu_growth[n]:.2f}x" for n in names)
        )

    if "auroc" not in skip:
        results["auroc"] = _arith_auroc(args)
    _check_targets(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")
        print(f"\nwrote {args.json}")
    return results


def _prm_modes(args: argparse.Namespace, model: Any, tokens: Callable[[int], list[int]]) -> dict[str, Any]:
    """MC scoring of one node per dropout mode against one deterministic pass."""
    import torch

    from uats_core.backends.mc_dropout import DropoutSpec, MCDropoutEngine, dropout_hooks

    ids = tokens(args.tokens)
    pos = [[args.tokens - 1]]
    engine = MCDropoutEngine(model, cache=None)
    k, p = args.k, args.p

    def naive() -> None:
        # What one would write first: K separate forward passes of the model with dropout hooks.
        with dropout_hooks(engine.parts.layers, p), torch.inference_mode():
            for _ in range(k):
                model(input_ids=torch.tensor([ids]))

    variants = {
        "deterministic (1 pass)": lambda: engine.hidden_at([ids], pos),
        f"naive loop of {k} passes (full)": naive,
        f"batched full x{k}": lambda: engine.hidden_at([ids], pos, k=k, spec=DropoutSpec.parse("full", p)),
        f"last:2 x{k}": lambda: engine.hidden_at([ids], pos, k=k, spec=DropoutSpec.parse("last:2", p)),
        f"head x{k}": lambda: engine.hidden_at([ids], pos, k=k, spec=DropoutSpec.parse("head", p)),
    }
    times = measure(variants, args.repeats, warmup=True)
    base = summary(times["deterministic (1 pass)"])
    rows = {}
    for name, ts in times.items():
        r = summary(ts)
        rows[name] = {**r, "ratio": r["min_s"] / base["min_s"], "cpu_ratio": r["cpu_min_s"] / base["cpu_min_s"]}
    print(
        f"\nMC scoring of one {args.tokens}-token node, K={k} (ratio = min time / min deterministic time; "
        "wall and CPU time)"
    )
    print(
        f"{'variant':34s} {'min s':>8s} {'median s':>9s} {'spread':>7s} {'ratio':>6s} {'cpu s':>7s} {'cpu ratio':>9s}"
    )
    for name, r in rows.items():
        print(
            f"{name:34s} {r['min_s']:8.3f} {r['median_s']:9.3f} {r['spread']:7.0%} {r['ratio']:6.2f} "
            f"{r['cpu_min_s']:7.3f} {r['cpu_ratio']:9.2f}"
        )
    return {"tokens": args.tokens, "rows": rows}


def _check_targets(results: dict[str, Any]) -> None:
    """Print the speed targets against what was measured (min wall time, and min CPU time)."""
    lines = []

    def verdict(ok: bool) -> str:
        return "OK" if ok else "MISSED"

    if "modes" in results:
        rows = results["modes"]["rows"]
        get = {name.split(" x")[0].split(" (")[0]: r for name, r in rows.items()}
        for mode, bound in (("head", 1.2), ("last:2", 2.0)):
            r = get[mode]
            lines.append(
                f"{mode} <= {bound}x: wall {r['ratio']:.2f}x {verdict(r['ratio'] <= bound)}, "
                f"cpu {r['cpu_ratio']:.2f}x {verdict(r['cpu_ratio'] <= bound)}"
            )
        naive = next(r for n, r in rows.items() if n.startswith("naive"))
        full = get["batched full"]
        lines.append(
            f"batched full not slower than the naive loop: wall {full['min_s']:.2f}s vs {naive['min_s']:.2f}s "
            f"{verdict(full['min_s'] <= naive['min_s'])}, cpu {full['cpu_min_s']:.2f}s vs {naive['cpu_min_s']:.2f}s "
            f"{verdict(full['cpu_min_s'] <= naive['cpu_min_s'])}"
        )
    if "depth" in results:
        g, cg = results["depth"]["growth_last_over_first"], results["depth"]["cpu_growth_last_over_first"]
        for name in ("deterministic cached", "head cached"):
            lines.append(
                f"{name}: deepest/shallowest wall {g[name]:.2f}x {verdict(g[name] <= 1.5)}, "
                f"cpu {cg[name]:.2f}x {verdict(cg[name] <= 1.5)} (target <= 1.5x)"
            )
    if lines:
        print("\ntargets:\n  " + "\n  ".join(lines))


def _arith_auroc(args: argparse.Namespace) -> dict[str, Any]:
    """AUROC of the MC variance for telling wrong steps from right ones, per dropout mode, on written solutions
    with slips in the PRM's own style (A) and in the unseen style (B)."""
    import random

    import torch

    from uats_core.worlds.arith import world

    prm_dir = args.models_dir / "arith-prm"
    if not (prm_dir / "config.json").is_file():
        msg = f"no arithmetic PRM at {prm_dir}; train it (python -m uats.arith.train) or pass --models-dir"
        print("\n" + msg)
        return {"skipped": msg}
    from uats_core.backends import load_prm
    from uats_core.backends.mc_dropout import DropoutSpec
    from uats_core.worlds.arith.written import written_steps

    prm = load_prm(str(prm_dir), dtype="float32", dropout_p=args.p)
    problems = world.load_split("test", args.arith_problems)
    rng = random.Random(0)
    out: dict[str, Any] = {"model": str(prm_dir), "problems": len(problems), "k": args.k, "p": args.p}
    print(
        f"\nuncertainty quality on {prm_dir.name}: AUROC of sigma^2 (and of 1 - mean score) for wrong steps, "
        f"K={args.k}, p={args.p}, {len(problems)} test problems, written solutions with slips"
    )
    print(f"{'style':>5s} {'steps':>6s} {'wrong':>6s} {'mode':>8s} {'AUROC var':>10s} {'AUROC 1-mean':>13s}")
    for style in world.STYLES:
        written = written_steps(problems, style, 0.3, rng)
        traces, labels = written.traces, written.wrong
        out[style] = {"steps": len(traces), "wrong": int(sum(labels))}
        for mode in ("full", "last:2", "head"):
            torch.manual_seed(0)
            mc = prm.mc_scores(traces, args.k, spec=DropoutSpec.parse(mode, args.p))
            a_var, a_mean = auroc(mc.var(axis=1, ddof=1), labels), auroc(1 - mc.mean(axis=1), labels)
            out[style][mode] = {"auroc_var": a_var, "auroc_one_minus_mean": a_mean}
            print(f"{style:>5s} {len(traces):6d} {sum(labels):6d} {mode:>8s} {a_var:10.3f} {a_mean:13.3f}")
    return out


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in PASSTHROUGH_SUBCOMMANDS:
        sub.add_parser(name, help=f"see python -m benchmarks {name} --help ({_PASSTHROUGH_HOME[name]})", add_help=False)
    for register in SUBCOMMANDS.values():
        register(sub)
    for register in EXTERNAL_SUBCOMMANDS.values():
        register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in PASSTHROUGH_SUBCOMMANDS:
        rc = PASSTHROUGH_SUBCOMMANDS[argv[0]](argv[1:])
        return rc if isinstance(rc, int) else 0
    args = build_parser().parse_args(argv)
    handler = getattr(args, "func", None) or args.fn
    try:
        rc = handler(args)
    except ConfigError as exc:  # bad input: one line naming the field and the fix
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return rc if isinstance(rc, int) else 0


if __name__ == "__main__":
    sys.exit(main())
