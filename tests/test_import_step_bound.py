"""Steps are bounded where they enter the run log from an import, as every backend bounds its own (issue 50, item 7:
a 30,000,000-character step in an imported file was stored and a click returned 57 MB): one declared bound,
`uats_core.protocols.MAX_STEP_CHARS`, and the run says how many of its steps were cut."""

from __future__ import annotations

import json
from pathlib import Path

from uats_core.events import NodesUpdated, RunStarted
from uats_core.imports import read_runs
from uats_core.protocols import MAX_STEP_CHARS

SAL = Path(__file__).resolve().parent / "tool_fixtures" / "search_and_learn"


def test_an_imported_step_over_the_bound_is_cut_there_and_the_run_says_so(tmp_path: Path) -> None:
    row = json.loads((SAL / "best_of_n_math-shepherd_completions.jsonl").read_text(encoding="utf-8").splitlines()[0])
    first, sep, rest = row["completions"][0].partition("\n\n")
    row["completions"][0] = first + "x" * (3 * MAX_STEP_CHARS) + sep + rest  # the same parts, one of them huge
    path = tmp_path / "huge.jsonl"
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")

    [run] = read_runs("search-and-learn", path)
    events = run.events(run_id="r")
    steps = [n["step"] for e in events if isinstance(e, NodesUpdated) for n in e.nodes]
    assert max(len(s) for s in steps) == MAX_STEP_CHARS
    started = next(e for e in events if isinstance(e, RunStarted))
    assert started.config["imported"]["steps_cut"] == f"1 step(s) over {MAX_STEP_CHARS:,} characters, cut there"


def test_a_tool_file_within_the_bound_is_not_marked(tmp_path: Path) -> None:
    [run, *_] = read_runs("search-and-learn", SAL / "best_of_n_math-shepherd_completions.jsonl")
    started = next(e for e in run.events(run_id="r") if isinstance(e, RunStarted))
    assert "steps_cut" not in started.config["imported"]
