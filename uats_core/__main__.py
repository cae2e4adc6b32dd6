"""Command line: `python -m uats_core search|runs|show`.

Bad input ends with one line `error: <field>: <what and how to fix>` and exit code 2, before anything is
written to the database."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
from pathlib import Path
from typing import Any, Sequence

from .config import ConfigError, SearchConfig
from .interrupts import sigterm_as_interrupt
from .problems import Problem, ProblemError, load_problems

log = logging.getLogger("uats_core")

DEFAULT_DB = "runs/uats.db"
DEFAULT_PROBLEM = "arith-test-0"
_CONFIG_HELP = {
    "budget": "N: REBASE's width; the matched-compute budget of every method",
    "cost_ratio": "c: cost of one generated step in PRM passes (bench calibrate measures it)",
    "k0": "MC-dropout passes per new candidate (UATS)",
    "tau": "OOD threshold: a number (σ² > τ is OOD by default), or auto[:q] = the q-quantile (default 0.9) of the "
           "statistic on in-distribution calibration steps (bench calibrate writes them beside the PRM)",
    "uncertainty": "what τ thresholds: var (σ², the default: the paper's σ_R is the sample variance) | std (σ)",
    "uncertainty_space": "where the OOD gate reads the spread: prob (scores, the default) | logit (log(p/(1-p)))",
    "child_score": "what OOD candidates' children softmax reads: mean (R̄, the paper) | ucb-ood (R̂) | sigma-ood (R̄ + κσ)",
    "child_sigma_weight": "κ of --child-score sigma-ood (default 1)",
    "reeval_share": "share of the per-step budget reserved for re-evaluation (UATS)",
    "dropout_mode": "full | head | last:L",
}



def _add_config_flags(p: argparse.ArgumentParser) -> None:
    for f in dataclasses.fields(SearchConfig):
        flag = "--" + f.name.replace("_", "-")
        if f.name == "method":
            p.add_argument(flag, default=f.default, help="best-of-n | beam | dvts | rebase | dora | h-uats | a-uats")
        elif f.type in ("bool", bool):
            p.add_argument(flag, default=f.default, action=argparse.BooleanOptionalAction, help=_CONFIG_HELP.get(f.name))
        else:
            kind = {"int": int, "float": float}.get(str(f.type), str)
            p.add_argument(flag, type=kind, default=f.default, help=_CONFIG_HELP.get(f.name, f"default {f.default}"))


def resolve_problem(problem: str | None, dataset: str | None) -> Problem:
    """`arith-<split>-<i>` ids come from the embedded world; anything else is looked up in --dataset by id
    or 0-based index."""
    pid = problem or DEFAULT_PROBLEM
    if dataset is None:
        if pid.startswith("arith-"):
            from .worlds.arith.world import get_problem

            try:
                return get_problem(pid)
            except (ValueError, IndexError) as exc:
                raise ProblemError("problem", f"{exc}; arithmetic-world ids look like arith-test-17") from None
        raise ProblemError("problem", f"unknown problem {pid!r}; use an arith-test-<i> id, or give --dataset FILE.jsonl")
    problems = load_problems(dataset)
    for p in problems:
        if p.id == pid:
            return p
    if pid.isdigit() and int(pid) < len(problems):
        return problems[int(pid)]
    raise ProblemError("problem", f"{pid!r} is neither an id nor an index (0..{len(problems) - 1}) of {dataset}")


def cmd_search(args: argparse.Namespace) -> int:
    from .runner import build_backends, run_search

    cfg_fields = {f.name: getattr(args, f.name) for f in dataclasses.fields(SearchConfig)}
    config = SearchConfig(**cfg_fields).validate()
    from .calibration import resolve_tau

    config, tau_note = resolve_tau(config, args.prm)
    if tau_note:
        print(f"τ = {config.tau:.4g}: q{tau_note['quantile']:g} of {tau_note['uncertainty']} over {tau_note['n']} "
              f"in-distribution steps ({tau_note['key']}, {tau_note['file']})")
    problem = resolve_problem(args.problem, args.dataset)
    store = _open_store(args.db)  # before the models: a typo in the URL should not cost a model load
    policy, prm = build_backends(args.policy, args.prm, config)
    controller = None
    if config.method == "a-uats":
        from .controller import load_controller  # issue 6: the learned budget controller

        controller = load_controller(config.controller, config)
    with sigterm_as_interrupt():  # `kill` ends the run 'cancelled' with its nodes, as Ctrl-C does
        result = run_search(problem, config, policy, prm, subscribers=[store.subscriber()], controller=controller,
                            progress=not args.quiet)
    mark = {True: "correct", False: "wrong", None: "ungraded"}[result.correct]
    print(f"run {result.run_id}  {result.status}  answer={result.answer} ({mark})  naive={result.naive_answer}  "
          f"cost={result.cost:g}  iterations={result.iterations}  nodes={len(result.tree) - 1}")
    return 130 if result.status == "cancelled" else 0


def _open_store(db: str) -> Any:
    from storage import RunStore

    if "://" not in db:
        Path(db).parent.mkdir(parents=True, exist_ok=True)
    return RunStore(db)


def cmd_runs(args: argparse.Namespace) -> int:
    store = _open_store(args.db)
    rows = store.list_runs(method=args.method, problem_id=args.problem, status=args.status, limit=args.limit)
    if not rows:
        print("no runs")
        return 0
    print(f"{'run':32}  {'method':9} {'N':>4} {'problem':16} {'status':9} {'answer':>10} {'ok':>5} {'cost':>9}")
    for r in rows:
        cfg = r.get("config") or {}
        ok = {True: "yes", False: "no", None: "-"}[r.get("correct")]
        print(f"{r['run_id']:32}  {r['method']:9} {cfg.get('budget', ''):>4} {str(r['problem_id'])[:16]:16} "
              f"{r['status']:9} {str(r.get('answer'))[:10]:>10} {ok:>5} {r.get('cost') or 0:>9g}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    store = _open_store(args.db)
    run = store.find_run(args.run)  # a unique prefix of the id is enough
    nodes = store.get_nodes(run["run_id"])
    print(f"run {run['run_id']}  {run['method']}  problem {run['problem_id']}  status {run['status']}  "
          f"answer {run.get('answer')}  correct {run.get('correct')}  cost {run.get('cost')}")
    print(f"Q: {run['question']}")
    children: dict[Any, list[dict]] = {}
    for n in nodes:
        children.setdefault(n["parent_id"], []).append(n)

    def walk(node_id: int, indent: int) -> None:
        for n in sorted(children.get(node_id, []), key=lambda x: x["node_id"]):
            stats = "unscored" if n.get("mean") is None else f"R̄={n['mean']:.3f}"
            if n.get("var") is not None:
                stats += f" σ²={n['var']:.4f}"
                if n.get("logit_var") is not None:
                    stats += f" σ²(logit)={n['logit_var']:.3f}"
                stats += f" K={n['k']}" + (" OOD" if n.get("ood") else "")
            flag = {True: " ✓", False: " ✗"}.get(n.get("correct"), "")
            step = n["step"].strip().replace("\n", " ")
            print(f"{'  ' * indent}#{n['node_id']} [{n['status']}] {stats} children={n['children_granted']}{flag}: "
                  f"{step[: args.width]}")
            walk(n["node_id"], indent + 1)

    walk(0, 0)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m uats_core", description="UATS Studio: PRM-guided tree search")
    p.add_argument("-v", "--verbose", action="store_true")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("search", help="search one problem and log it")
    s.add_argument("--problem", help=f"problem id (default {DEFAULT_PROBLEM}), or an index into --dataset")
    s.add_argument("--dataset", help="a .jsonl file (MATH-500, AIME 2024) or a hub name (math500, aime24)")
    s.add_argument("--policy", help="policy model: folder, .gguf file, hf:<id> or vllm:<id> (default: arith policy A)")
    s.add_argument("--prm", help="PRM model folder or hf:<id> (default: the arith PRM)")
    s.add_argument("--db", default=DEFAULT_DB, help="SQLite path or SQLAlchemy URL")
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    _add_config_flags(s)
    s.set_defaults(fn=cmd_search)
    r = sub.add_parser("runs", help="list logged runs")
    r.add_argument("--db", default=DEFAULT_DB)
    r.add_argument("--method")
    r.add_argument("--problem")
    r.add_argument("--status")
    r.add_argument("--limit", type=int, default=50)
    r.set_defaults(fn=cmd_runs)
    w = sub.add_parser("show", help="print a run's tree")
    w.add_argument("run")
    w.add_argument("--db", default=DEFAULT_DB)
    w.add_argument("--width", type=int, default=80, help="characters of step text per node")
    w.set_defaults(fn=cmd_show)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        return args.fn(args)
    except (ConfigError, ProblemError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:
        if hasattr(exc, "field"):  # StorageError, BackendError: ValueErrors that name their field
            print(f"error: {exc}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
