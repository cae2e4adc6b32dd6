"""The `uats` subcommands over run logs and ledgers: `runs` lists a run log's runs, `show` prints a run's tree,
`import` writes another tool's runs into a run log, `ledger` brings a results ledger up to date with run logs
(uats/cli.py parses their flags)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from uats_core.errors import ConfigError

DEFAULT_DB = "runs/uats.db"


def open_store(db: str) -> Any:
    from storage import RunStore

    return RunStore(db)  # it makes missing folders itself, and removes them again if opening fails


def _open_existing_store(db: str) -> Any:
    """The run log of `runs` and `show`, for reading only: a SQLite file is opened read-only, so reading never
    creates a database, a schema or a folder, and never marks a run (a run whose worker died still reads
    'running' here; the app, or the next search, ends it)."""
    from storage import RunStore, StorageError, open_read_only
    from storage.connection import sqlite_file

    path = sqlite_file(db)
    if path is None:
        return RunStore(db)  # a database server: its schema is the operator's
    if not path.is_file():
        raise StorageError(f"no run log at {db!r}; give the --db of a search (default {DEFAULT_DB})")
    return open_read_only(path)


def cmd_runs(args: argparse.Namespace) -> int:
    store = _open_existing_store(args.db)
    rows = store.list_runs(method=args.method, problem_id=args.problem, status=args.status, limit=args.limit)
    if not rows:
        print("no runs")
        return 0
    print(f"{'run':32}  {'method':9} {'N':>4} {'problem':16} {'status':9} {'answer':>10} {'ok':>5} {'cost':>9}")
    for r in rows:
        cfg = r.get("config") or {}
        ok = {True: "yes", False: "no", None: "-"}[r.get("correct")]
        print(
            f"{r['run_id']:32}  {r['method']:9} {cfg.get('budget', ''):>4} {str(r['problem_id'])[:16]:16} "
            f"{r['status']:9} {str(r.get('answer'))[:10]:>10} {ok:>5} {r.get('cost') or 0:>9g}"
        )
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from storage import StorageError
    from storage.damage import READ_ERRORS, damaged, find_damage, raw_run_ids

    store = _open_existing_store(args.db)
    ids = raw_run_ids(store, (args.run or "").strip())
    said = find_damage(store, ids[:1]) if len(ids) == 1 else None
    if said is not None:
        raise StorageError(said, field="db")
    try:
        run = store.find_run(args.run)  # a unique prefix of the id is enough
        nodes = store.get_nodes(run["run_id"])
    except READ_ERRORS as exc:
        raise damaged(store, ids[:1], exc) from None
    print(
        f"run {run['run_id']}  {run['method']}  problem {run['problem_id']}  status {run['status']}  "
        f"answer {run.get('answer')}  correct {run.get('correct')}  cost {run.get('cost')}"
    )
    print(f"Q: {run['question']}")
    for line in tree_lines(nodes, args.width):
        print(line)
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    """Another tool's runs into the run log: the whole file is read and checked, and every run's row, before the
    run log is opened; a malformed file leaves no run and no database behind."""
    from storage import check_location
    from storage.imports import write_imported
    from uats_core.imports import read_runs

    rows = _rows(args.rows) if args.rows is not None else None
    runs = read_runs(
        args.tool,
        args.file,
        question=args.question,
        gold=args.answer,
        rows=rows,
        prm_rule=args.prm_rule,
        on_skip=lambda why: print(f"warning: {why}", file=sys.stderr),
    )
    check_location(args.db)
    ids = write_imported(open_store(args.db), runs)
    for run_id, run in zip(ids, runs):
        scored = sum(1 for n in run.nodes if n.score is not None)
        print(
            f"run {run_id}  {run.tool} ({run.label})  {len(run.nodes)} nodes, {scored} with the tool's score, "
            f"{max([run.iterations, *(n.created_iter for n in run.nodes)])} iterations; no MC passes: shadow "
            "scoring in the app adds R̄ and σ² to every node" + _sal_answer_line(run.info)
        )
        _print_import_notes(run.info)
    return 0


def _print_import_notes(info: dict[str, Any]) -> None:
    """What an import of llm-reasoners or TreeQuest kept aside or read its answer from, one line each."""
    said = str(info.get("answer_read_from") or "")
    if said:
        print(f"  no answer: {said.removeprefix('none: ')}" if said.startswith("none: ") else f"  answer from {said}")
    if info.get("scores_outside_unit_range"):
        print(
            f"  {info['scores_outside_unit_range']} scores outside [0, 1] (validate_reward_range=False): kept in each "
            "node's source fields, none drawn as R̄"
        )
    if info.get("unvisited_children"):
        print(f"  {info['unvisited_children']} unvisited children kept with their parents, not imported as steps")


def _sal_answer_line(info: dict[str, Any]) -> str:
    """search-and-learn: which of the tool's answers the run shows, and the others it keeps beside it."""
    if "answer_from" not in info:
        return ""
    answers = info.get("tool_answers", {})
    most = max((int(k.rsplit("@", 1)[1]) for k in answers), default=None)  # at the row's full N
    kept = ", ".join(f"{k} {v}" for k, v in answers.items() if k.endswith(f"@{most}"))
    return (
        f"\n  steps cut as {info.get('prm_rule')} cuts them; the answer shown is the tool's {info['answer_from']}"
        + (f" (kept beside it: {kept})" if kept else "")
    )


def _rows(text: str) -> list[int]:
    try:
        rows = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ConfigError("rows", f"{text!r}: give 0-based row numbers separated by commas, e.g. 0,3") from None
    if not rows or min(rows) < 0:
        raise ConfigError("rows", f"{text!r}: give 0-based row numbers separated by commas, e.g. 0,3")
    return rows


def cmd_ledger(args: argparse.Namespace) -> int:
    """Bring a results ledger up to date with run logs: their finished cells it lacks (with --code-version, the
    commit that ran them), and the duplicate counts, final solutions and A-UATS controller steps of the cells it
    holds without them (recorded before the ledger kept them)."""
    from reports.provenance import DIRTY
    from storage.eval_results import load_results
    from storage.results_ledger import ResultsLedger
    from uats.eval.run import sync_run_log

    version = args.code_version
    if version is not None and (version.endswith(DIRTY) or version in ("", "unknown")):
        # a ledger row names the commit that ran it: rows no commit reproduces stay out
        raise ConfigError(
            "code-version",
            f"{version!r} names no commit; give the commit that ran the run log's "
            "cells (git rev-parse --short=12 HEAD in that checkout, committed code only)",
        )
    ledger = ResultsLedger(args.ledger)
    for run_log in args.run_logs:
        if "://" not in run_log and not os.path.exists(run_log):
            raise ConfigError("run_logs", f"no run log at {run_log!r}; give a SQLite path or SQLAlchemy URL")
    before = len(ledger.traces()), len(ledger.candidates()), ledger.controller()["cell_key"].nunique()
    for run_log in args.run_logs:
        added = sync_run_log(ledger, run_log, version, fill=True)
        lacking = (set(load_results(run_log)["cell_key"]) - ledger.keys()) if version is None else set()
        print(
            f"{run_log}: {added} cells added"
            + (
                f"; {len(lacking)} cells the ledger lacks left out (give "
                "--code-version, the commit that ran them, to add them)"
                if lacking
                else ""
            )
        )
    after = len(ledger.traces()), len(ledger.candidates()), ledger.controller()["cell_key"].nunique()
    print(
        f"{args.ledger}: {len(ledger.keys())} cells, {after[0]} with duplicate counts ({after[0] - before[0]} more), "
        f"{after[1]} with final solutions ({after[1] - before[1]} more), {after[2]} A-UATS cells with controller "
        f"steps ({after[2] - before[2]} more)"
    )
    return 0


def tree_lines(nodes: Sequence[dict[str, Any]], width: int = 80) -> Iterator[str]:
    """The tree below the root as indented lines, depth first: an explicit stack, so a chain thousands of
    steps deep prints like any other tree (recursion stopped at about a thousand)."""
    children: dict[Any, list[dict]] = {}
    for n in nodes:
        children.setdefault(n["parent_id"], []).append(n)
    stack = [(n, 0) for n in sorted(children.get(0, []), key=lambda x: x["id"], reverse=True)]
    seen: set[Any] = {0}
    while stack:
        n, indent = stack.pop()
        stats = "unscored" if n.get("mean") is None else f"R̄={n['mean']:.3f}"
        if n.get("var") is not None:
            stats += f" σ²={n['var']:.4f}"
            if n.get("logit_var") is not None:
                stats += f" σ²(logit)={n['logit_var']:.3f}"
            stats += f" K={n['k']}" + (" OOD" if n.get("ood") else "")
        flag = {True: " ✓", False: " ✗"}.get(n.get("correct"), "")
        step = (n.get("step") or "").strip().replace("\n", " ")
        yield (
            f"{'  ' * indent}#{n['id']} [{n['status']}] {stats} children={n['children_granted']}{flag}: {step[:width]}"
        )
        seen.add(n["id"])
        kids = sorted(children.get(n["id"], []), key=lambda x: x["id"], reverse=True)
        stack.extend((c, indent + 1) for c in kids if c["id"] not in seen)  # a damaged log may hold a cycle
