"""The Runs tab's rows tell apart runs that differ only in their models (policy A or B, the PRM), with numbers
formatted alike; and a file put into the import folder is offered on Refresh, without a restart."""

from __future__ import annotations

import json
from pathlib import Path

from uats_core.paths import WORLD_POLICY, WORLD_POLICY_B
from uats_core.runner import DEFAULT_PRM
from ui.choices import server_choices
from ui.views.run_status import RUN_COLUMNS, pair_label, run_rows


def _run(run_id: str, policy: str, **extra: object) -> dict[str, object]:
    return {
        "run_id": run_id,
        "method": "h-uats",
        "problem_id": "arith-test-3",
        "seed": 0,
        "config": {"budget": 16.0},
        "status": "finished",
        "correct": True,
        "answer": "42",
        "cost": 1234.56,
        "iterations": 9,
        "n_nodes": 40,
        "started_at": 1_700_000_000,
        "policy": policy,
        "prm": str(DEFAULT_PRM),
        **extra,
    }


def test_a_policy_a_and_a_policy_b_run_of_one_problem_differ_in_their_row() -> None:
    a, b = run_rows([_run("a" * 32, str(WORLD_POLICY)), _run("b" * 32, str(WORLD_POLICY_B))])
    col = {name: i for i, name in enumerate(RUN_COLUMNS)}
    assert a[col["policy"]] == "arith-policy-a" and b[col["policy"]] == "arith-policy-b"  # names, not server paths
    assert a[col["PRM"]] == b[col["PRM"]] == "arith-prm"
    assert (a[col["pair"]], b[col["pair"]]) == ("A:prm (ID)", "B:prm (OOD)")
    # the rest of the two rows is the same: the models are what tells them apart
    assert [v for k, v in zip(RUN_COLUMNS, a) if k not in ("run", "policy", "pair")] == [
        v for k, v in zip(RUN_COLUMNS, b) if k not in ("run", "policy", "pair")
    ]
    assert (a[col["N"]], a[col["cost"]], a[col["seed"]]) == (16, 1235, 0)  # whole numbers, as the status line


def test_other_models_and_imported_runs_have_no_pair_name() -> None:
    assert pair_label("hf:Qwen/Qwen2.5-Math-1.5B", str(DEFAULT_PRM)) == ""
    row = run_rows([_run("c" * 32, "llm-reasoners (imported)", prm="llm-reasoners (imported)", seed=None)])[0]
    assert row[RUN_COLUMNS.index("pair")] == "" and row[RUN_COLUMNS.index("seed")] is None


def test_a_file_put_into_the_import_folder_is_offered_on_refresh(tmp_path: Path) -> None:
    folder = tmp_path / "imports"
    folder.mkdir()
    choices = server_choices(imports_dirs=[folder])
    assert choices.refresh_imports() == []
    (folder / "tree.json").write_text(json.dumps({"nodes": []}), encoding="utf-8")
    (folder / "notes.txt").write_text("not a run", encoding="utf-8")
    assert choices.refresh_imports() == ["tree.json"]
    assert choices.import_file("tree.json") == folder / "tree.json"
