"""Two recordings of the same cells (reports.replication): a difference replicates only when both clear zero
the same way, one that clears zero in one recording only is a lead; and variants recorded under the rerun's protocol
(reports.protocol_variants: the gate's literal reading beside the rerun's base cells)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from reports.claims import both_recordings, replicated
from reports.page import results_page
from reports.replication import CONFLICTS, REPLICATES, WITHIN_BOTH, compare_recordings, lead_word, replication_word
from reports.verdicts import DOWN, NOISE, NOT_REPRODUCED, REPRODUCED, REVERSED, UP
from testkit.prose_numbers import unfound_prose_numbers
from testkit.rerun_ledgers import ledger as _ledger, rows as _rows
from uats.report import main as report_main, report_from_ledger


def test_the_replication_verdict() -> None:
    assert replication_word([UP, UP]) == REPLICATES and replication_word([DOWN, DOWN]) == REPLICATES
    assert replication_word([UP, DOWN]) == CONFLICTS
    assert replication_word([UP, NOISE]) == lead_word("original") == "a lead (original only)"
    assert replication_word([NOISE, DOWN]) == lead_word("rerun")
    assert replication_word([NOISE, NOISE]) == WITHIN_BOTH


def _recording(diffs: dict[int, list[int]]) -> pd.DataFrame:
    """Rows of x and y on 12 problems × the seeds given: x right where diffs say 1, y never right (x − y = diff)."""
    rows = []
    for seed, per_problem in diffs.items():
        for p, d in enumerate(per_problem):
            for method, correct in (("x", bool(d)), ("y", False)):
                rows.append({"problem_id": f"p{p}", "seed": seed, "budget": 4, "method": method, "correct": correct})
    return pd.DataFrame(rows)


def test_a_difference_clearing_zero_in_one_recording_only_is_a_lead_and_pooled_is_both_together() -> None:
    strong = {s: [1] * 12 for s in range(3)}  # x − y = 1 on every cell: clears zero
    mixed = {s: [1, 0] * 6 for s in range(3)}  # half the problems: 0.5 ± about 0.33, clears zero too
    null = {s: [1, 0, 0, 0] * 3 for s in range(3)}  # a quarter: 0.25 ± 0.29 over problems, within noise
    rec = compare_recordings({"original": _recording(strong), "rerun": _recording(mixed)}, "x", "y", 0.95)
    assert rec["verdict"] == REPLICATES and rec["original_diff"] == 1.0 and rec["rerun_diff"] == 0.5
    assert rec["pooled_diff"] == pytest.approx(0.75)  # both recordings' cells together, each one's seeds apart
    assert rec["pooled_problems"] == 12
    empty = {s: [0] * 12 for s in range(3)}
    lead = compare_recordings({"original": _recording(strong), "rerun": _recording(empty)}, "x", "y", 0.95)
    assert lead["verdict"] == lead_word("original") and lead["rerun_diff"] == 0.0
    weak = compare_recordings({"original": _recording(null), "rerun": _recording(null)}, "x", "y", 0.95)
    assert weak["verdict"] == WITHIN_BOTH and weak["original_half"] == pytest.approx(0.287, abs=1e-3)
    assert (
        compare_recordings({"original": _recording(strong), "rerun": _recording(strong).iloc[:0]}, "x", "y", 0.95)
        is None
    )


def test_a_claim_is_a_finding_only_when_both_recordings_make_it() -> None:
    assert replicated({"original": REPRODUCED, "rerun": REPRODUCED}).startswith(REPLICATES)
    assert (
        replicated({"original": REVERSED, "rerun": NOT_REPRODUCED})
        == f"{REVERSED} in the original recording only: {lead_word('original')}"
    )
    assert replicated({"original": REPRODUCED, "rerun": REVERSED}) == CONFLICTS
    # one recording alone: what it reproduces is a lead
    assert both_recordings({"original": [(0.05, 0.01)]}) == f"{REPRODUCED}, {lead_word('original')}"
    said = both_recordings({"original": [(0.05, 0.01)], "rerun": [(0.01, 0.03)], "pooled": [(0.03, 0.02)]})
    assert said.startswith("original: reproduced; rerun: on point estimates only; pooled: reproduced")
    assert said.endswith(f"{REPRODUCED} in the original recording only: {lead_word('original')}")


@pytest.fixture(scope="module")
def ledgers(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("ledgers")
    return _ledger(root / "grid", _rows(6, rerun=False), finals=False), _ledger(
        root / "again", _rows(6, rerun=True), finals=True
    )


def _variant_ledger(folder: Path) -> Path:
    """H-UATS with the literal gate on the rerun's N = 4 cells of 4 problems (a ledger still filling): right exactly
    where the rerun's H-UATS base cells are wrong."""
    rows = _rows(4, rerun=True)
    rows = rows[(rows["method"] == "h-uats") & (rows["budget"] == 4)].copy()
    rows["correct"] = ~rows["correct"].astype(bool)
    rows["variant"] = "uncertainty=std"
    rows["cell_key"] = rows["cell_key"].str.replace("|base", "|uncertainty=std", regex=False)
    return _ledger(folder, rows, finals=False)


def test_variants_under_the_reruns_protocol_are_set_beside_its_base_cells_and_say_what_they_hold(
    ledgers: tuple[Path, Path], tmp_path: Path
) -> None:
    gate = _variant_ledger(tmp_path / "gate")
    rep = report_from_ledger(ledgers[0], rerun=ledgers[1], rerun_variants=gate, figures=False)
    table = rep.tables["rerun_variants"].set_index("reference")
    own = table.loc["h-uats (base)"]
    rerun = pd.read_csv(ledgers[1] / "results.csv.gz")
    base = rerun[(rerun["method"] == "h-uats") & (rerun["budget"] == 4) & (rerun["variant"] == "base")]
    assert (own["cells"], own["of_cells"], own["budget"]) == (12, len(base), 4)  # N = 16 never ran: no row
    right = base[base["problem_id"].isin([f"p{p}" for p in range(4)])]["correct"].astype(bool)
    assert own["diff"] == pytest.approx((~right).mean() - right.mean())
    page = tmp_path / "results.md"
    assert (
        report_main(
            [
                "--ledger",
                str(ledgers[0]),
                "--rerun",
                str(ledgers[1]),
                "--rerun-variants",
                str(gate),
                "--page",
                str(page),
            ]
        )
        == 0
    )
    text = page.read_text(encoding="utf-8")
    assert rep.markdown["Variants under the rerun's protocol"] in text
    assert f"- **Cells read**: 12 of the {len(base)} cells" in text and "the ledger is not complete" in text
    assert unfound_prose_numbers(text, rep) == set()
    assert "```bash\nuats eval --spec" not in text  # no recipe plans this ledger: no command is named
    rep.rerun_plan = {"command": "uats eval --spec recipes/x.toml", "budgets": [4, 16]}  # a recipe planning N 4, 16
    planned = results_page(rep, "uats report ...")
    assert "```bash\nuats eval --spec recipes/x.toml\n```" in planned
    assert "none yet at the N the recipe also plans (`16`)." in planned


def test_the_gate_ledger_is_planned_by_its_recipe() -> None:
    from uats.report import ledger_plan

    root = Path(__file__).resolve().parents[1]
    assert ledger_plan(root / "results" / "arith-gate") == {
        "command": "uats eval --spec recipes/arith-gate-std.toml",
        "budgets": [16, 64],
    }
    assert ledger_plan(root / "results" / "no-such-ledger") is None


def test_rerun_variants_without_a_rerun_are_refused(ledgers: tuple[Path, Path], tmp_path: Path, capsys) -> None:
    assert (
        report_main(["--ledger", str(ledgers[0]), "--rerun-variants", str(tmp_path), "--page", str(tmp_path / "p.md")])
        == 2
    )
    assert capsys.readouterr().err.startswith("error: --rerun-variants: needs --rerun DIR")
