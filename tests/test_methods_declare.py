"""A method declares what it needs (SearchMethod's class attributes) and the rest of the system asks it: adding an
eighth method is its module and one line in uats_core.methods.REGISTRY, and then the command line, the app and the
evaluation offer it. Statuses are written once too (uats_core.status); neither a status's text nor a check of a
method's name is copied outside its home."""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from storage import RunStore
from testkit.doubles import DOUBLES_PROBLEM, HashedPRMDouble, ScriptedPolicyDouble
from testkit.eval_doubles import MODELS
from uats_core.config import SearchConfig
from uats_core.events import IterationEnded
from uats_core.methods import REGISTRY, Knobs, SearchContext, SearchMethod, method_names
from uats_core.methods.base import active, terminal
from uats_core.records import StepInfo
from uats_core.runner import run_search
from uats_core.status import NodeStatus, RunStatus
from uats_core.tree import Node

ROOT = Path(__file__).resolve().parents[1]
EIGHTH = "greedy-double"


class GreedyDouble(SearchMethod):
    """A test double of an eighth method: one chain, whose best-scored child of N goes on each step."""

    name = EIGHTH
    step_fields = frozenset({"keep"})

    def search(self, ctx: SearchContext) -> list[Node]:
        cfg = self.config
        frontier, finals, new = [(0, cfg.budget)], [], []
        for t in range(1, cfg.max_iterations + 1):
            ctx.begin_iteration(t)
            new = ctx.expand(frontier, t)
            ctx.score(new, t)
            finals.extend(terminal(new))
            live = sorted(active(new), key=lambda n: (-float(n.mean), n.id))
            decisions = ctx.grant(live, [cfg.budget] + [0] * (len(live) - 1)) if live else []
            frontier = [(live[0].id, cfg.budget)] if live else []
            ctx.end_iteration(t, decisions, StepInfo(width=len(new), keep=1))
            if not frontier:
                break
        return finals + ctx.settle_leftovers(active(new), False)


@pytest.fixture()
def eighth(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setitem(REGISTRY, EIGHTH, GreedyDouble)  # the one registry: nothing else is told
    return EIGHTH


def test_the_command_line_offers_a_new_method(eighth: str, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from uats.cli import build_parser, main

    assert eighth in build_parser()._subparsers._group_actions[0].choices["search"].format_help()  # type: ignore[union-attr]
    db = tmp_path / "runs.db"
    assert (
        main(["search", "--method", eighth, "--budget", "4", "--max-iterations", "3", "--db", str(db), "--quiet"]) == 0
    )
    assert [r["method"] for r in RunStore(str(db)).list_runs()] == [eighth]


def test_the_app_offers_a_new_method(eighth: str, tmp_path: Path) -> None:
    from testkit.doubles import WorkerPoolDouble
    from ui.choices import ARITH, EMBEDDED, server_choices
    from ui.jobs.warm import ModelCache, execute
    from ui.tabs.run_form import method_choices
    from ui.tabs.search_events import submit_run
    from ui.tabs.search_layout import CONFIG_FIELDS

    assert eighth in method_choices()
    defaults = SearchConfig(method=eighth, budget=4, max_iterations=3).to_dict()
    form = {
        **{k: defaults[k] for k in CONFIG_FIELDS},
        "policy": EMBEDDED,
        "prm": EMBEDDED,
        "prm_kind": "detect",
        "policy_opts": "",
        "prm_opts": "",
        "dataset": ARITH,
        "dataset_path": "",
        "problem": "arith-test-0",
        "free_question": "",
        "free_answer": "",
    }
    store, pool = RunStore(str(tmp_path / "runs.db")), WorkerPoolDouble()
    run_id = submit_run(SimpleNamespace(store=store, pool=pool, choices=server_choices()), form)
    execute(pool.submitted[0], ModelCache(), store)
    assert (store.get_run(run_id)["method"], store.get_run(run_id)["status"]) == (eighth, RunStatus.FINISHED)


def test_the_evaluation_offers_a_new_method(eighth: str, problems_file: Path, tmp_path: Path) -> None:
    from uats.eval import EvalOptions, run_eval
    from uats_core.eval.grid import GridSpec, build_cells, load_eval_problems, parse_methods, parse_pairs

    assert parse_methods("all") == list(method_names()) and parse_methods("all")[-1] == eighth
    dataset, probs = load_eval_problems(None, str(problems_file), 1)
    spec = GridSpec(
        pairs=parse_pairs("pol:rm", MODELS),
        problems=probs,
        dataset=dataset,
        methods=parse_methods(f"{eighth},rebase"),
        budgets=[4],
        seeds=[0],
        axes={"k0": [3, 7]},
    )
    # k0 is none of its config_fields: one cell, "base", where H-UATS would have two
    assert [it.cell.variant for it in build_cells(spec) if it.cell.method == eighth] == ["base"]
    summary = run_eval(spec, EvalOptions(db=str(tmp_path / "eval.db"), progress=False))
    assert summary.finished == 2 and summary.failed == 0


@pytest.mark.parametrize("method", list(REGISTRY))
def test_each_methods_steps_fill_the_step_fields_it_declares(method: str) -> None:
    """What a method says its steps hold is what they hold (both spending rules, and REBASE's MC scoring)."""
    cls = REGISTRY[method]
    settings = (
        [dict()]
        + ([dict(spend_rule="paper")] if cls.uses_uncertainty else [])
        + ([dict(rebase_scoring="mc")] if "rebase_scoring" in cls.switches else [])
    )
    filled: set[str] = set()
    for extra in settings:
        events: list[Any] = []
        cfg = SearchConfig(method=method, budget=8, seed=1, **extra)
        controller = (lambda state, cfg=cfg: Knobs.from_config(cfg)) if cls.needs_controller else None
        embedder = _Embedder() if cls.needs_embedder else None
        run_search(
            DOUBLES_PROBLEM,
            cfg,
            ScriptedPolicyDouble(depth=3),
            HashedPRMDouble(1),
            subscribers=[events.append],
            controller=controller,
            embedder=embedder,
        )
        filled |= {k for e in events if isinstance(e, IterationEnded) for k in e.step_info.to_dict()}
    assert filled - {"width", "generated_steps", "prm_passes"} == set(cls.step_fields)


class _Embedder:
    """A test double: a two-number embedding of each text."""

    name = "embedder-double"

    def embed(self, texts: list[str]) -> Any:
        import numpy as np

        return np.array([[len(t) % 7 + 1.0, len(t) % 5 + 1.0] for t in texts])


# ------------------------------------------------------------------------------- written once
CODE = ("uats_core", "storage", "reports", "uats", "ui", "uats_studio", "benchmarks")
STATUS_TEXTS = {s.value for s in RunStatus} | {s.value for s in NodeStatus}
FIELD_LISTS = ("step_fields", "config_fields")  # SearchMethod's declarations of field names


def _code_files() -> list[Path]:
    return sorted(p for d in CODE for p in (ROOT / d).rglob("*.py")) + [ROOT / "app.py"]


def _docstrings(tree: ast.AST) -> set[int]:
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }


def status_texts_outside_their_home(files: list[Path], root: Path = ROOT) -> list[str]:
    """'path:line: text' for each string literal that spells a status outside uats_core/status.py: docstrings,
    dict keys read by subscript (a column such as batch_jobs.failed), a Column's name and the field names a method
    declares (StepInfo.finished) aside."""
    found = []
    for path in files:
        if path == root / "uats_core" / "status.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Subscript):
                skip.add(id(node.slice))
            elif isinstance(node, ast.Assign) and any(getattr(t, "id", "") in FIELD_LISTS for t in node.targets):
                skip.update(id(c) for c in ast.walk(node.value))
            elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "Column":
                skip.update(id(a) for a in node.args[:1])
        found += [
            f"{path.relative_to(root)}:{n.lineno}: {n.value}"
            for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and n.value in STATUS_TEXTS and id(n) not in skip
        ]
    return found


def method_name_checks(files: list[Path], root: Path = ROOT) -> list[str]:
    """'path:line: test' for each comparison of a method (anything named *method*) with a method's name, outside
    uats_core/methods/ and the report (whose analyses name the paper's methods: A-UATS against H-UATS, ...)."""
    homes = (root / "uats_core" / "methods", root / "reports")
    found = []
    for path in files:
        if any(h in path.parents for h in homes):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Compare)
                and "method" in ast.unparse(node.left)
                and any(
                    isinstance(c, ast.Constant) and c.value in REGISTRY
                    for part in node.comparators
                    for c in ast.walk(part)
                )
            ):
                found.append(f"{path.relative_to(root)}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_status_text_outside_uats_core_status() -> None:
    assert status_texts_outside_their_home(_code_files()) == []


def test_no_check_of_a_methods_name_outside_methods_and_the_report() -> None:
    assert method_name_checks(_code_files()) == []


def test_the_counters_see_copies(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        '"""finished"""\nS = "queued"\nx = row["failed"]\nif cfg.method == "dora":\n    pass\n'
        'ok = run.method in ("rebase", "beam")\n',
        encoding="utf-8",
    )
    assert status_texts_outside_their_home([probe], tmp_path) == ["probe.py:2: queued"]
    assert method_name_checks([probe], tmp_path) == [
        "probe.py:4: cfg.method == 'dora'",
        "probe.py:6: run.method in ('rebase', 'beam')",
    ]
