"""`uats eval`: run an evaluation grid into a run log (resumable; --shard, --ray, batching).

    uats eval --world arith --pairs A:prm,B:prm --methods all --budgets 4,16,64 \\
        --problems 200 --seeds 3 --db runs/eval.db
    uats eval --dataset math500 --problems 500 --seeds 1 \\
        --model qwen=vllm:Qwen/Qwen2.5-1.5B-Instruct --model qprm=hf:Qwen/Qwen2.5-Math-PRM-7B --pairs qwen:qprm \\
        --methods rebase,h-uats --budgets 16,64 --ray local --gpus-per-worker 1 --policy-opt dtype=bfloat16

Bad input ends with one line `error: <field>: <what and how to fix>` and exit code 2, before anything is
written."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import Any

from uats.model_flags import add_model_option_flags, model_options
from uats_core.config import SETTINGS
from uats_core.errors import ConfigError, ProblemError
from uats_core.eval.grid import (
    GridSpec,
    load_eval_problems,
    parse_axis,
    parse_int_list,
    parse_methods,
    parse_models,
    parse_pairs,
    parse_seeds,
    parse_settings,
)
from uats_core.interrupts import sigterm_as_interrupt
from uats_core.methods import method_names
from uats_core.status import RunStatus

from .recipe import expand_spec
from .run import EvalOptions, code_version, run_eval

# The settings whose declaration gives them an ablation flag of their own (Setting.axis_flag), with its help.
ABLATION_FLAGS = {d.name: d.spec.help for d in SETTINGS if d.spec.axis_flag}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="uats eval", description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--spec",
        metavar="FILE",
        help="a recipe file (recipes/*.toml) whose [eval] table holds these flags; "
        "flags given here come after it and override its values",
    )
    g = p.add_argument_group("problems")
    g.add_argument("--world", default="arith", help="arith (the embedded arithmetic world); ignored with --dataset")
    g.add_argument("--split", default="test", help="arith split (default test)")
    g.add_argument(
        "--difficulty",
        help="arith difficulty: easy | default | hard, or a tag such as o4-6v40a9f5 (ops "
        "4-6, values <= 40, addends <= 9, factors <= 5; docs/arith_world.md)",
    )
    g.add_argument("--dataset", help="math500 | aime24 (shipped in assets/data) | a .jsonl file")
    g.add_argument("--problems", type=int, help="first N problems (arith default 200; a dataset: all)")
    g = p.add_argument_group("grid")
    g.add_argument("--pairs", default="A:prm", help="POLICY:PRM name pairs, comma-separated (built in: A, B, prm)")
    g.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="NAME=SPEC",
        help="name a model for --pairs: folder, hf:<id>, vllm:<id> (policy), or py:module:function",
    )
    g.add_argument("--methods", default="all", help="all, or a comma list of " + ",".join(method_names()))
    g.add_argument("--budgets", default="4,16,64", help="N values, comma-separated")
    g.add_argument("--seeds", default="3", help="a count (3 = seeds 0,1,2) or a comma list")
    g.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="a setting for every cell (`uats settings` lists them)",
    )
    g = p.add_argument_group("ablations (comma lists; the cross product becomes extra grid axes, UATS methods only)")
    for name, what in ABLATION_FLAGS.items():
        g.add_argument(
            "--" + name.replace("_", "-"), dest=f"axis_{name}", metavar="V1,V2", help=what.replace("%", "%%")
        )
    g.add_argument(
        "--uncertainty",
        metavar="on,off",
        help="with/without uncertainty: A-UATS without σ features; H-UATS without re-evaluation passes",
    )
    g.add_argument(
        "--axis",
        action="append",
        default=[],
        metavar="FIELD=V1,V2",
        help="any other setting as an axis (`uats settings` lists them)",
    )
    g = p.add_argument_group("execution")
    g.add_argument("--db", default="runs/eval.db", help="SQLite path or SQLAlchemy URL (PostgreSQL across machines)")
    g.add_argument(
        "--ledger",
        metavar="DIR",
        help="results ledger folder (e.g. results/arith-grid): cells in it count as done, and finished cells "
        "are appended to it as the grid runs (commit it to keep the results)",
    )
    g.add_argument("--shard", metavar="i/n", help="run only every n-th cell of the grid, starting at i (no Ray)")
    g.add_argument("--ray", metavar="ADDRESS|local", help="run cells as Ray actors (local = a private Ray here)")
    g.add_argument("--workers", type=int, help="Ray actors (default: CPUs / cpus-per-worker)")
    g.add_argument("--cpus-per-worker", type=float, default=1.0)
    g.add_argument("--gpus-per-worker", type=float, default=0.0)
    g.add_argument("--chunk", type=int, help="cells per Ray task (default: about 4 chunks per actor)")
    g.add_argument(
        "--batch",
        type=int,
        default=1,
        metavar="LANES",
        help="cross-problem batching: LANES searches per worker share policy/PRM calls (1 = off)",
    )
    g.add_argument(
        "--batch-prm",
        choices=("on", "off"),
        default="on",
        help="merge PRM calls across batched searches too (policy calls always merge)",
    )
    g.add_argument("--torch-threads", type=int, help="torch intra-op threads per worker")
    add_model_option_flags(g)
    g.add_argument("--max-attempts", type=int, default=3, help="give a failing cell up after this many attempts")
    g.add_argument(
        "--stale-after",
        type=float,
        default=900.0,
        help="seconds without a heartbeat after which another host's running cell counts as orphaned",
    )
    g.add_argument("--dry-run", action="store_true", help="plan only: count the cells to run")
    g.add_argument("--quiet", action="store_true", help="no progress bar")
    g.add_argument("-v", "--verbose", action="store_true")
    return p


def spec_from_args(args: argparse.Namespace) -> GridSpec:
    models = parse_models(args.model)
    pairs = parse_pairs(args.pairs, models)
    dataset, problems = load_eval_problems(args.world, args.dataset, args.problems, args.split, args.difficulty)
    axes: dict[str, list[Any]] = {}
    for name in ABLATION_FLAGS:
        raw = getattr(args, f"axis_{name}")
        if raw:
            axes[name] = parse_axis(name, raw)
    for item in args.axis:
        name, sep, raw = item.partition("=")
        if not sep:
            raise ConfigError("axis", f"{item!r} is not FIELD=V1,V2")
        axes[name.strip().replace("-", "_")] = parse_axis(name.strip(), raw)
    uncertainty: list[bool] = []
    if args.uncertainty:
        for v in args.uncertainty.split(","):
            v = v.strip().lower()
            if v not in ("on", "off"):
                raise ConfigError("uncertainty", f"use on, off or on,off; got {args.uncertainty!r}")
            uncertainty.append(v == "on")
    return GridSpec(
        pairs=pairs,
        problems=problems,
        dataset=dataset,
        methods=parse_methods(args.methods),
        budgets=parse_int_list(args.budgets, "budgets", low=1),
        seeds=parse_seeds(args.seeds),
        settings=parse_settings(args.set),
        axes=axes,
        uncertainty=list(dict.fromkeys(uncertainty)),
    )


def check_pair_options(spec: GridSpec, args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, Any]]:
    """Parse --policy-opt/--prm-opt/--prm-kind and check them against every pair's models before any cell runs
    (uats_core.backends.plan, as `uats search` does: py: factories take the options as they are)."""
    from uats_core.backends.plan import plan_models

    policy_opts, prm_opts = model_options(args)
    for pair in spec.pairs:
        plan_models(pair.policy, pair.prm, prm_kind=args.prm_kind, policy_opts=policy_opts, prm_opts=prm_opts)
    if args.prm_kind:
        prm_opts["kind"] = args.prm_kind  # the workers' load_prm takes the kind with the options
    return policy_opts, prm_opts


def _uncommitted(version: str) -> bool:
    """The code version names no commit: uncommitted changes, or a checkout git could not read."""
    from reports.provenance import DIRTY  # imported here: the report package loads plotly

    return version.endswith(DIRTY) or version == "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        argv = expand_spec(list(sys.argv[1:] if argv is None else argv), parser)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    for noisy in ("httpx", "urllib3", "filelock", "transformers"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        if args.shard and args.ray:
            raise ConfigError("shard", "--shard splits the grid without Ray; drop one of --shard and --ray")
        if args.batch < 1:
            raise ConfigError("batch", f"need at least 1 lane; got {args.batch}")
        if args.ledger and not args.dry_run and _uncommitted(code_version()):
            # a ledger row names the commit that ran it: a row from uncommitted code could not be reproduced
            raise ConfigError(
                "ledger",
                "the checkout has uncommitted code changes, or git cannot read it (git status); "
                "commit them, or run from a clean worktree, before writing to a results ledger",
            )
        spec = spec_from_args(args)
        policy_opts, prm_opts = check_pair_options(spec, args)
        opts = EvalOptions(
            db=args.db,
            shard=args.shard,
            ray=args.ray,
            workers=args.workers,
            cpus_per_worker=args.cpus_per_worker,
            gpus_per_worker=args.gpus_per_worker,
            lanes=args.batch,
            merge_prm=args.batch_prm == "on",
            torch_threads=args.torch_threads,
            policy_opts=policy_opts,
            prm_opts=prm_opts,
            trust_remote_code=args.trust_remote_code,
            max_attempts=args.max_attempts,
            stale_after_s=args.stale_after,
            chunk=args.chunk,
            progress=not args.quiet,
            dry_run=args.dry_run,
            ledger=args.ledger,
        )
        with sigterm_as_interrupt():
            summary = run_eval(spec, opts)
    except (ConfigError, ProblemError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:
        if hasattr(exc, "field"):  # StorageError, BackendError, ControllerError name their field
            print(f"error: {exc}", file=sys.stderr)
            return 2
        raise
    except KeyboardInterrupt:
        print("interrupted: finished cells are kept; rerun the same command to resume", file=sys.stderr)
        return 130
    if args.dry_run:
        print(
            f"dry run: {summary.cells} cells, {summary.in_ledger} in the ledger, {summary.done_before} finished, "
            f"{summary.to_run} to run "
            f"({summary.orphans} of them orphaned), {summary.busy} held by live workers, {summary.given_up} given up"
        )
        return 0
    print(summary.line())
    if summary.failed:
        bad = [o for o in summary.outcomes if o.status == RunStatus.FAILED][:3]
        for o in bad:
            print(f"  failed {o.key}: {o.error}", file=sys.stderr)
    source = f"--ledger {args.ledger}" if args.ledger else f"--db {args.db}"
    print(f"report: uats report {source} --out runs/reports")
    return 1 if summary.failed else 0


if __name__ == "__main__":
    sys.exit(main())
