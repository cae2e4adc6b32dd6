"""Reports from an evaluation's run log: `uats report --db runs/eval.db --out runs/reports`.

Reads the `eval_cells` table joined to the run log's `runs` and `nodes` (storage.eval_results) and hands the
rows to reports, which builds:

- accuracy against N and against the compute each search actually spent (runs.cost), per pair, every
  method, with Pass@N (the oracle: some final candidate - one the answer is chosen from - is correct) and 95%
  intervals over seeds;
- the paper's Table 4 layout (mean accuracy over the budgets, method by pair) and per-budget tables;
- the Figure 2 analysis: the PRM's step accuracy and the MC-variance distribution per policy/PRM pair
  (ID vs OOD), from the stored nodes, with the arithmetic world's exact step checker as ground truth;
- ablations: every non-"base" variant (dropout p, K0, τ, δ, dropout mode, without uncertainty).

`build_report(store_or_url)` returns the figures and tables for the app; `write_report` exports them
(one offline report.html with plotly.js inlined, a PNG per figure through kaleido when a browser is
available, Markdown and CSV tables).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reports import Report, assemble_report, write_report
from storage.eval_results import report_inputs

__all__ = ["build_report", "report_from_ledger", "ledger_plan", "page_command", "write_report", "main"]


def build_report(
    store_or_url: Any,
    *,
    common_problems: bool = True,
    confidence: float = 0.95,
    roles: dict[str, str] | None = None,
    fig2: bool = True,
    max_fig2_runs_per_pair: int = 600,
    tau: float | None = None,
    methods: Sequence[str] | None = None,
    pairs: Sequence[str] | None = None,
    budgets: Sequence[int] | None = None,
) -> Report:
    """Every figure and table of the evaluation in `store_or_url` (a RunStore, an engine, a path or URL);
    the keywords are reports.assemble_report's."""
    return assemble_report(
        *report_inputs(store_or_url),
        common_problems=common_problems,
        confidence=confidence,
        roles=roles,
        fig2=fig2,
        max_fig2_runs_per_pair=max_fig2_runs_per_pair,
        tau=tau,
        methods=methods,
        pairs=pairs,
        budgets=budgets,
    )


def _read_ledger(folder: str | Path) -> dict[str, Any]:
    """A ledger's frames (results with a `ledger` column naming its folder, steps, traces with the final solutions,
    controller steps); one clear line where the folder holds no ledger."""
    from storage.results_ledger import RESULTS_FILE, ResultsLedger

    ledger = ResultsLedger(folder)
    if not ledger.results_path.exists():
        raise ValueError(f"ledger: no {RESULTS_FILE} in {str(folder)!r}; run uats eval --ledger {folder} first")
    candidates = ledger.candidates()
    return {
        "results": ledger.results().assign(ledger=Path(folder).name),
        "steps": ledger.steps(),
        "traces": ledger.traces().merge(candidates, on="cell_key", how="left"),
        "candidates": candidates,
        "controller": ledger.controller(),
    }


def report_from_ledger(
    folder: str | Path,
    *more: str | Path,
    rerun: str | Path | None = None,
    rerun_variants: str | Path | None = None,
    **kw: Any,
) -> Report:
    """Every figure and table from a results ledger (storage.results_ledger) alone, no run log needed; with `more`
    ledgers (another dataset's, e.g. results/arith-hard), from their rows together. `rerun`: a ledger of cells of
    these run again keeping their final solutions (e.g. results/arith-rerun): every answer rule on them, beside the
    first recording (reports.rerun). `rerun_variants`: a ledger of variants run under the rerun's protocol
    (e.g. results/arith-gate), each set beside the rerun's base cells (reports.protocol_variants)."""
    import pandas as pd

    from reports.rerun import Rerun

    read = [_read_ledger(f) for f in (folder, *more)]
    joined = {
        name: pd.concat([r[name] for r in read if len(r[name])] or [read[0][name]], ignore_index=True)
        for name in ("results", "steps", "traces", "controller")
    }
    again = None
    if rerun is not None:
        r = _read_ledger(rerun)
        if not r["results"]["cell_key"].isin(set(joined["results"]["cell_key"])).any():
            raise ValueError(
                f"rerun: none of the {len(r['results']):,} cells in {str(rerun)!r} is a cell of the --ledger "
                "ledgers; a rerun runs their cells again under the same cell keys"
            )
        again = Rerun(Path(rerun).name, r["results"].merge(r["candidates"], on="cell_key", how="left"), r["controller"])
    beside = None
    if rerun_variants is not None:
        if again is None:
            raise ValueError(
                "rerun-variants: needs --rerun DIR, the rerun whose base cells the variants are set beside"
            )
        rows = _read_ledger(rerun_variants)["results"]
        if (
            not rows["cell_key"]
            .map(lambda k: k.rsplit("|", 1)[0])
            .isin({k.rsplit("|", 1)[0] for k in again.results["cell_key"]})
            .any()
        ):
            raise ValueError(
                f"rerun-variants: none of the {len(rows):,} cells in {str(rerun_variants)!r} is a "
                "(problem, seed, method, N) the rerun recorded; run the rerun's cells with --set"
            )
        beside = (Path(rerun_variants).name, rows, ledger_plan(rerun_variants))
    rep = assemble_report(
        joined["results"],
        steps=joined["steps"],
        traces=joined["traces"],
        controller=joined["controller"],
        rerun=again,
        rerun_variants=beside,
        **kw,
    )
    from reports.estimators_section import TABLE_NAME, estimators_markdown

    if text := estimators_markdown():  # the estimators' step measurements (results/estimators/), beside the ledgers'
        rep.markdown[TABLE_NAME] = text
    from reports.estimator_grid import LEDGER, TABLE_NAME as GRID_NAME, grid_markdown

    if (LEDGER / "results.csv.gz").is_file():  # the estimator search grid's own ledger (recipes/arith-estimators.toml)
        rep.markdown[GRID_NAME] = grid_markdown(_read_ledger(LEDGER)["results"])
    return rep


def ledger_plan(ledger: str | Path) -> dict[str, Any] | None:
    """The checked-in recipe (recipes/*.toml) whose --ledger is `ledger`: the command that plans its cells and the N
    it plans; None without one."""
    from uats.eval.cli import build_parser
    from uats.eval.recipe import load_recipe, recipe_files
    from uats_core.paths import ASSETS

    root = ASSETS.parents[1]
    for path in recipe_files(root):
        argv = load_recipe(path, build_parser()).argv
        if "--ledger" in argv and (root / argv[argv.index("--ledger") + 1]).resolve() == Path(ledger).resolve():
            budgets = argv[argv.index("--budgets") + 1] if "--budgets" in argv else ""
            return {
                "command": f"uats eval --spec {path.relative_to(root)}",
                "budgets": [int(b) for b in budgets.split(",") if b.strip()],
            }
    return None


def _shown(path: str | Path) -> str:
    """A folder or file as the page's command names it: relative to the repository when inside it."""
    from uats_core.paths import ASSETS

    try:
        return str(Path(path).resolve().relative_to(ASSETS.parents[1]))
    except ValueError:
        return str(path)


def page_command(
    ledgers: Sequence[str | Path], rerun: str | Path | None, page: str | Path, rerun_variants: str | Path | None = None
) -> str:
    """The command line that writes the results page, as the page prints it."""
    parts = ["uats report", *[f"--ledger {_shown(f)}" for f in ledgers]]
    parts += [f"--rerun {_shown(rerun)}"] if rerun is not None else []
    parts += [f"--rerun-variants {_shown(rerun_variants)}"] if rerun_variants is not None else []
    return " ".join([*parts, f"--page {_shown(page)}"])


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="uats report", description="figures and tables of an evaluation run log")
    p.add_argument("--db", default="runs/eval.db", help="SQLite path or SQLAlchemy URL")
    p.add_argument(
        "--ledger",
        metavar="DIR",
        action="append",
        help="build from a results ledger folder alone (e.g. results/arith-grid) instead of a run log; "
        "repeat it to report several ledgers together (e.g. --ledger results/arith-hard)",
    )
    p.add_argument(
        "--rerun",
        metavar="DIR",
        help="a ledger of cells of the --ledger ledgers run again keeping their final solutions (e.g. "
        "results/arith-rerun): every answer rule for those cells, beside the first recording",
    )
    p.add_argument(
        "--rerun-variants",
        metavar="DIR",
        help="a ledger of variants run under the rerun's protocol (one search at a time, one clean commit; "
        "e.g. results/arith-gate, H-UATS with --set uncertainty=std): each beside the rerun's base "
        "cells of its method and of REBASE",
    )
    p.add_argument(
        "--page",
        metavar="FILE",
        help="write the results page generated from --ledger (and --rerun), e.g. docs/results.md; "
        "with it, the report folder is written only when --out is given",
    )
    p.add_argument("--out", help="folder for report.html, PNGs, tables.md and CSVs (default runs/reports)")
    p.add_argument(
        "--all-problems",
        action="store_true",
        help="use every finished cell, even where a problem is not finished for all methods/budgets/seeds",
    )
    p.add_argument("--no-png", action="store_true", help="skip the PNG export")
    p.add_argument("--no-fig2", action="store_true", help="skip the Figure 2 node analysis (the slow part on big logs)")
    p.add_argument("--fig2-runs", type=int, default=600, help="runs per pair read for the Figure 2 analysis")
    p.add_argument("--methods", help="comma list: report only these methods")
    p.add_argument("--pairs", help="comma list: report only these pairs")
    p.add_argument("--budgets", help="comma list of N: report only these budgets")
    p.add_argument("-v", "--verbose", action="store_true")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO, format="%(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("choreographer").setLevel(logging.WARNING)
    logging.getLogger("kaleido").setLevel(logging.WARNING)
    split = lambda text: [x.strip() for x in text.split(",") if x.strip()] if text else None  # noqa: E731
    kw = dict(
        common_problems=not args.all_problems,
        fig2=not args.no_fig2,
        methods=split(args.methods),
        pairs=split(args.pairs),
    )
    try:
        budgets = split(args.budgets)
        kw["budgets"] = [int(b) for b in budgets] if budgets else None
    except ValueError:
        print(
            f"error: --budgets: {args.budgets!r} is not a comma list of integers (e.g. --budgets 4,16)", file=sys.stderr
        )
        return 2
    if args.rerun_variants and not args.rerun:
        print(
            "error: --rerun-variants: needs --rerun DIR (the rerun whose base cells the variants are set beside), "
            "e.g. --rerun results/arith-rerun",
            file=sys.stderr,
        )
        return 2
    if (args.page or args.rerun) and not args.ledger:
        print(
            f"error: --{'page' if args.page else 'rerun'}: needs --ledger DIR (the page is built from results "
            "ledgers alone), e.g. --ledger results/arith-grid",
            file=sys.stderr,
        )
        return 2
    if args.page and not Path(args.page).resolve().parent.is_dir():
        print(f"error: --page: no folder {str(Path(args.page).parent)!r} to write {args.page!r} in", file=sys.stderr)
        return 2
    if args.page and args.out is None:
        kw["figures"] = False  # the page reads tables alone
    try:
        if args.ledger:
            rep = report_from_ledger(*args.ledger, rerun=args.rerun, rerun_variants=args.rerun_variants, **kw)
        else:
            from storage import RunStore

            if "://" not in args.db and not Path(args.db).exists():
                raise ValueError(f"db: no database at {args.db!r}; run uats eval first")
            rep = build_report(RunStore(args.db), max_fig2_runs_per_pair=args.fig2_runs, **kw)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    files = []
    if args.page:
        from reports.page import results_page

        text = results_page(rep, page_command(args.ledger, args.rerun, args.page, args.rerun_variants))
        Path(args.page).write_text(text, encoding="utf-8")
        files.append(Path(args.page))
    if args.out is not None or not args.page:
        files += write_report(rep, args.out or "runs/reports", png=not args.no_png)
        print(rep.summary_markdown())
    print("wrote " + ", ".join(str(f) for f in files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
