"""The `uats` command (installed by `pip install .`; `python -m uats` in a checkout): one command, its subcommands
search, runs, show, import, doctor, ledger, settings and calibrate here (runs, show, import and ledger run in
uats/run_log_cmds.py), and the programs with their own flags, each in its module: eval (uats/eval/cli.py),
ood-survival (uats/eval/ood_survival.py), report (uats/report.py), train (uats/train_controller.py) and theory
(uats/theory.py). The benchmarks are no subcommand: they live outside the
package (`python -m benchmarks`, from a checkout).

Bad input ends with one line `error: <field>: <what and how to fix>` and exit code 2, before anything is
written to the database."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import re
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from uats import calibrate
from uats.model_flags import add_model_flags, custom_pair, model_options, parse_model_options
from uats.run_log_cmds import DEFAULT_DB, cmd_import, cmd_ledger, cmd_runs, cmd_show, open_store
from uats_core.config import SETTINGS, SearchConfig
from uats_core.errors import ConfigError, ProblemError
from uats_core.imports import PRM_RULES, TOOLS as TOOLS_READ
from uats_core.interrupts import sigterm_as_interrupt
from uats_core.limits import set_max_budget
from uats_core.methods import method_names
from uats_core.problems import Problem, find_problem, load_problems
from uats_core.settings import markdown_table
from uats_core.status import RunStatus

DEFAULT_PROBLEM = "arith-test-0"


def _add_config_flags(p: argparse.ArgumentParser) -> None:
    """One flag per declared setting (uats_core.config.SETTINGS), its help and default from the declaration."""
    for d in SETTINGS:
        text = f"{d.spec.help} (default {d.default})".replace("%", "%%")
        if d.name == "method":
            p.add_argument(d.flag, default=d.default, help=f"{text}: {' | '.join(method_names())}")
        elif d.kind == "bool":
            p.add_argument(d.flag, default=d.default, action=argparse.BooleanOptionalAction, help=text)
        else:
            kind = {"int": int, "float": float}.get(d.kind, str)
            p.add_argument(d.flag, type=kind, default=d.default, help=text)


def settings_markdown() -> str:
    """The settings table, every column from the one declaration (docs/engine.md holds it: `uats settings
    --markdown`; tests/test_settings.py checks the committed one is this)."""
    from uats_core.methods import methods_reading

    return markdown_table(
        list(SETTINGS), lambda name: ", ".join(methods_reading(name)) or "every method", {"method": method_names()}
    )


def cmd_settings(args: argparse.Namespace) -> int:
    if args.update:
        from pathlib import Path

        from uats_core.settings import replace_table

        page = Path(args.update)
        try:
            page.write_text(replace_table(page.read_text(encoding="utf-8"), settings_markdown()), encoding="utf-8")
        except (OSError, ValueError) as exc:
            raise ConfigError("update", f"{args.update}: {exc}") from None
        print(f"{args.update}: settings table written ({len(SETTINGS)} settings)")
        return 0
    if args.markdown:
        print(settings_markdown(), end="")
        return 0
    for d in SETTINGS:
        print(f"{d.flag:34} {d.kind:11} default {d.default!s:12} {d.bounds() or ' | '.join(d.spec.choices)}")
    return 0


def resolve_problem(problem: str | None, dataset: str | None) -> Problem:
    """`arith-<split>-<i>` ids come from the embedded world; anything else is looked up in --dataset by id
    or 0-based index."""
    pid = problem or DEFAULT_PROBLEM
    if dataset is None:
        if pid.startswith("arith-"):
            from uats_core.worlds.arith.world import get_problem

            try:
                return get_problem(pid)
            except (ValueError, IndexError) as exc:
                raise ProblemError("problem", f"{exc}; arithmetic-world ids look like arith-test-17") from None
        raise ProblemError(
            "problem", f"unknown problem {pid!r}; use an arith-test-<i> id, or give --dataset FILE.jsonl"
        )
    return find_problem(load_problems(dataset), pid, dataset)


def cmd_search(args: argparse.Namespace) -> int:
    """Everything the user gave is checked (validate_request) before a model loads, and the run log is opened at
    the run's first event, after run_search found the question fits the loaded models: a refused search leaves no
    file and no run behind."""
    from storage import check_location, check_run_fields
    from uats_core.paths import WORLD_POLICY, WORLD_PRM
    from uats_core.request import SearchRequest, validate_request
    from uats_core.runner import prepare_search

    problem = resolve_problem(args.problem, args.dataset)
    policy_opts, prm_opts = parse_model_options(args)
    checked = validate_request(
        SearchRequest(
            problem,
            SearchConfig(**{f.name: getattr(args, f.name) for f in dataclasses.fields(SearchConfig)}),
            policy=args.policy,
            prm=args.prm,
            prm_kind=args.prm_kind,
            policy_opts=policy_opts,
            prm_opts=prm_opts,
            world_problem=args.dataset is None,
            trust_remote_code=args.trust_remote_code,
        )
    )
    config = checked.config
    # the run's row as the run log will hold it (the models record their name, by default their spec)
    check_run_fields(
        **checked.run_fields(),
        policy=str(policy_opts.get("name") or args.policy or WORLD_POLICY),
        prm=str(prm_opts.get("name") or args.prm or WORLD_PRM),
        model_options=checked.model_options(),
    )
    check_location(args.db)  # a typo or a wrong password should not cost a model load; the file is made later
    note = checked.tau_note  # τ is resolved before any model loads, so a bad --tau costs no load
    if note:
        print(
            f"τ = {config.tau:.4g}: q{note['quantile']:g} of {note['uncertainty']} over {note['n']} "
            f"in-distribution steps ({note['key']}, {note['file']})"
        )
    search = prepare_search(
        checked, models=custom_pair(checked)
    )  # py: backends are loaded here, the rest by the engine
    with sigterm_as_interrupt():  # `kill` ends the run 'cancelled' with its nodes, as Ctrl-C does
        result = search.run(subscribers=[_RecordOnFirstEvent(args.db)], progress=not args.quiet)
    mark = {True: "correct", False: "wrong", None: "ungraded"}[result.correct]
    print(
        f"run {result.run_id}  {result.status}  answer={result.answer} ({mark})  naive={result.naive_answer}  "
        f"cost={result.cost:g}  iterations={result.iterations}  nodes={len(result.tree) - 1}"
    )
    return 130 if result.status == RunStatus.CANCELLED else 0


class _RecordOnFirstEvent:
    """The run log's recorder, with the run log opened at the run's first event (RunStarted), which run_search emits
    only once the question is known to fit the loaded models' context."""

    def __init__(self, db: str) -> None:
        self.db = db
        self.recorder: Any = None

    def __call__(self, event: Any) -> None:
        if self.recorder is None:
            self.recorder = open_store(self.db).subscriber()
        self.recorder(event)


def cmd_doctor(args: argparse.Namespace) -> int:
    from uats_core.doctor import run_doctor

    policy_opts, prm_opts = model_options(args)
    found = run_doctor(
        args.policy,
        args.prm,
        prm_kind=args.prm_kind,
        policy_opts=policy_opts,
        prm_opts=prm_opts,
        world_problem=args.dataset is None,
        gpu_bytes=int(args.gpu_gib * 2**30) if args.gpu_gib else None,
    )
    return 1 if found else 0


class _OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad flag ends in the project's one line `error: <field>: <what>` (no usage block)."""

    def error(self, message: str) -> NoReturn:
        m = re.match(r"argument (?:--)?([\w-]+)(?:/[\w-]+)*: (.*)", message, re.S)
        field, what = (m.group(1).replace("-", "_"), m.group(2)) if m else ("arguments", message)
        self.exit(2, f"error: {field}: {' '.join(what.split())}; see {self.prog} --help\n")


def _at_least_one(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1; got {value}")
    return n


def _eval(argv: Sequence[str]) -> int:
    from .eval.cli import main as program

    return program(argv)


def _ood_survival(argv: Sequence[str]) -> int:
    from .eval.ood_survival import main as program

    return program(argv)


def _report(argv: Sequence[str]) -> int:
    from .report import main as program

    return program(argv)


def _train(argv: Sequence[str]) -> int:
    from .train_controller import main as program

    program(argv)
    return 0


def _estimators(argv: Sequence[str]) -> int:
    from .estimators_cmd import main as program

    return program(argv)


def _theory(argv: Sequence[str]) -> int:
    from .theory import main as program

    return program(argv)


# The programs with flags of their own: `uats NAME ...` hands everything after NAME to the module's main.
PROGRAMS: dict[str, tuple[Any, str]] = {
    "eval": (_eval, "run an evaluation grid into a run log (resumable; --shard, --ray, batching)"),
    "ood-survival": (_ood_survival, "do right OOD steps stay alive? (an evaluation's H-UATS runs)"),
    "report": (_report, "figures and tables of an evaluation (a run log or results ledgers); the results page"),
    "train": (_train, "train A-UATS's controller (policy-gradient, on the arithmetic world)"),
    "theory": (_theory, "the Proposition 4.1/4.2 simulation"),
    "estimators": (
        _estimators,
        "fit the hidden-state uncertainty estimators beside a PRM; measure every estimator's "
        "σ² step by step (AUROC for wrong steps per fifth of R, A and B)",
    ),
}


def build_parser() -> argparse.ArgumentParser:
    p = _OneLineParser(
        prog="uats", description="UATS Studio: PRM-guided tree search (`uats COMMAND --help` for a command's flags)"
    )
    p.add_argument("-v", "--verbose", action="store_true")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("search", help="search one problem and log it")
    s.add_argument("--problem", help=f"problem id (default {DEFAULT_PROBLEM}), or an index into --dataset")
    s.add_argument("--dataset", help="a shipped problem set (math500, aime24) or a .jsonl file")
    add_model_flags(s)
    s.add_argument("--db", default=DEFAULT_DB, help="SQLite path or SQLAlchemy URL")
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    s.add_argument(
        "--max-budget", type=_at_least_one, help="refuse budgets above this (default 1024, or $UATS_MAX_BUDGET)"
    )
    _add_config_flags(s)
    s.set_defaults(fn=cmd_search)
    r = sub.add_parser("runs", help="list logged runs")
    r.add_argument("--db", default=DEFAULT_DB)
    r.add_argument("--method")
    r.add_argument("--problem")
    r.add_argument("--status")
    r.add_argument("--limit", type=_at_least_one, default=50)
    r.set_defaults(fn=cmd_runs)
    w = sub.add_parser("show", help="print a run's tree")
    w.add_argument("run")
    w.add_argument("--db", default=DEFAULT_DB)
    w.add_argument("--width", type=_at_least_one, default=80, help="characters of step text per node")
    w.set_defaults(fn=cmd_show)
    i = sub.add_parser("import", help="write another tool's search runs into the run log (the app opens them)")
    i.add_argument("file", help="the file the tool wrote")
    i.add_argument(
        "--from",
        dest="tool",
        required=True,
        choices=TOOLS_READ,
        help="llm-reasoners (its tree log, written by uats_studio.llm_reasoners.export_llm_reasoners), "
        "search-and-learn (its {approach}_completions.jsonl or the Hub's Parquet) or treequest "
        "(treequest.render's JSON or YAML export; docs/app.md)",
    )
    i.add_argument("--db", default=DEFAULT_DB, help="SQLite path or SQLAlchemy URL")
    i.add_argument("--question", help="the problem, where the file does not hold it (llm-reasoners, TreeQuest)")
    i.add_argument("--answer", help="the gold answer, to grade the imported answers")
    i.add_argument("--rows", help="search-and-learn: 0-based rows to import, e.g. 0,3 (default: every row)")
    i.add_argument(
        "--prm-rule",
        choices=sorted(PRM_RULES),
        help="search-and-learn: the PRM class that scored the steps (rlhflow, the default prm_path, and qwen "
        "split at blank lines; math-shepherd; skywork scores each line); default: recognised from the "
        "scores",
    )
    i.set_defaults(fn=cmd_import)
    d = sub.add_parser("doctor", help="check a policy/PRM pair before a long run (versions, devices, memory plan)")
    add_model_flags(d)
    d.add_argument("--dataset", help="the dataset the pair will search (the arith models serve arith problems only)")
    d.add_argument(
        "--gpu-gib", type=float, help="plan GPU memory for a device of this size (GiB) even if none is visible"
    )
    d.set_defaults(fn=cmd_doctor)
    g = sub.add_parser("ledger", help="copy run logs' finished cells and duplicate counts into a results ledger")
    g.add_argument(
        "run_logs", nargs="+", metavar="RUN_LOG", help="SQLite paths or SQLAlchemy URLs of evaluation run logs"
    )
    g.add_argument("--ledger", required=True, metavar="DIR", help="the results ledger folder (e.g. results/arith-grid)")
    g.add_argument(
        "--code-version",
        metavar="COMMIT",
        help="the commit that ran the run log's cells (the log does not say): without it, cells the ledger "
        "lacks are left out and only the counts and final solutions of cells it holds are filled",
    )
    g.set_defaults(fn=cmd_ledger)
    e = sub.add_parser("settings", help="every search setting: flag, type, default, bounds (--markdown: docs' table)")
    e.add_argument("--markdown", action="store_true", help="the settings table of docs/engine.md")
    e.add_argument(
        "--update", metavar="PAGE", help="rewrite the settings table between PAGE's markers (docs/engine.md)"
    )
    e.set_defaults(fn=cmd_settings)
    calibrate.add_parser(sub)
    for name, (_, what) in PROGRAMS.items():
        sub.add_parser(name, help=what, add_help=False)  # listed here; its own parser reads its flags
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in PROGRAMS:
        return PROGRAMS[argv[0]][0](argv[1:])
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    try:
        if getattr(args, "max_budget", None):
            set_max_budget(args.max_budget)
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
