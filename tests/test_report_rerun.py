"""A rerun ledger (reports.rerun): the same cells recorded again with their final solutions, read apart from
the first recording; and the results page written from tiny hand-made ledgers (`--ledger ... --rerun ... --page`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from testkit.prose_numbers import unfound_prose_numbers
from testkit.rerun_ledgers import ledger as _ledger, rows as _rows
from uats.report import main as report_main, report_from_ledger


@pytest.fixture(scope="module")
def ledgers(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("ledgers")
    original = _ledger(root / "grid", _rows(6, rerun=False), finals=False)
    rerun = _rows(6, rerun=True)
    partial = rerun[~((rerun["problem_id"] == "p5") & (rerun["method"] == "a-uats"))]  # p5 not finished yet
    return original, _ledger(root / "again", partial, finals=True)


def test_a_partial_rerun_is_read_on_the_problems_it_has_finished(ledgers: tuple[Path, Path]) -> None:
    rep = report_from_ledger(ledgers[0], rerun=ledgers[1], figures=False)
    cov = rep.tables["rerun_coverage"].iloc[0]
    assert (cov["cells"], cov["of_original"], cov["original_cells"]) == (138, 138, 144)
    assert (cov["problems"], cov["problems_original"], cov["cells_finished"]) == (5, 6, 120)
    assert "| `again` | 138 | 138 of 144 | 5 of 6 | 120 |" in rep.markdown["Rerun coverage"]
    rec = rep.tables["rerun_recordings"].set_index(["method", "budget"])
    assert (rec["cells"] == 15).all()  # 5 problems × 3 seeds, one N
    # REBASE: the two recordings disagree on seed 0 alone: agreement 2/3, and rerun − original per problem
    assert rec.loc[("rebase", 4), "weighted_agree"] == pytest.approx(2 / 3)
    assert rec.loc[("h-uats", 4), "weighted_agree"] == 1.0 and rec.loc[("h-uats", 4), "weighted_diff"] == 0.0
    original_seed0 = [not ((p + 0) % 2) for p in range(5)]  # the first recording flipped REBASE's seed-0 answers
    rerun_seed0 = [bool((p + 0) % 2) for p in range(5)]
    assert rec.loc[("rebase", 4), "weighted_diff"] == pytest.approx((sum(rerun_seed0) - sum(original_seed0)) / 15)


def test_every_rule_on_the_reruns_cells_by_hand(ledgers: tuple[Path, Path]) -> None:
    rep = report_from_ledger(ledgers[0], rerun=ledgers[1], figures=False)
    rules = rep.tables["rerun_rules"].set_index(["method", "budget"])
    bon = rules.loc[("best-of-n", 4)]  # SPLIT everywhere: weighted and majority wrong, best and distinct right
    assert (bon["weighted_re"], bon["best_re"], bon["majority_re"], bon["distinct_re"]) == (0.0, 1.0, 0.0, 1.0)
    assert bon["best_minus_weighted"] == 1.0 and bon["distinct_minus_best"] == 0.0 and bon["agree"] == 1.0
    huats = rules.loc[("h-uats", 16)]  # right on p0-p2, SPLIT on p3, p4
    assert huats["weighted_re"] == pytest.approx(3 / 5) and huats["best_re"] == 1.0
    order = rep.tables["rule_ordering"].set_index(["recording", "rule"])
    assert list(order.index) == [
        ("original", "weighted"),
        ("original", "best"),
        ("rerun", "weighted"),
        ("rerun", "best"),
        ("rerun", "majority"),
        ("rerun", "distinct"),
    ]
    assert order.loc[("rerun", "best"), "n_problems"] == 5 and order.loc[("original", "best"), "n_problems"] == 6
    assert order.loc[("rerun", "weighted"), "h-best-of-n"] == pytest.approx(3 / 5)  # H-UATS 3/5, Best-of-N 0
    assert "| rerun | weighted vote | P:prm | 5 | +60.0 ± " in rep.markdown["Which rule orders the methods"]


def test_the_page_from_a_rerun_has_every_table_and_no_number_its_tables_lack(
    ledgers: tuple[Path, Path], tmp_path: Path
) -> None:
    page = tmp_path / "results.md"
    assert report_main(["--ledger", str(ledgers[0]), "--rerun", str(ledgers[1]), "--page", str(page)]) == 0
    text = page.read_text(encoding="utf-8")
    assert text.startswith("# Results") and "## Does UATS beat REBASE here, and why" in text
    assert "**The verdict rule.**" in text and text.count("**The verdict rule.**") == 1
    assert f"--ledger {ledgers[0]} --rerun {ledgers[1]} --page {page}" in text
    rep = report_from_ledger(ledgers[0], rerun=ledgers[1], figures=False)
    for name in ("Rerun coverage", "Every answer rule", "Which rule orders the methods", "Claims", "Sources"):
        assert rep.markdown[name] in text, name
    assert unfound_prose_numbers(text, rep) == set()
    assert not (tmp_path / "runs").exists()  # --page alone writes no report folder


def test_a_page_or_rerun_without_ledgers_and_a_rerun_of_other_cells_are_refused(
    ledgers: tuple[Path, Path], tmp_path: Path, capsys
) -> None:
    page = tmp_path / "page.md"
    assert report_main(["--page", str(page)]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: --page: needs --ledger DIR (the page is built from results "
        "ledgers alone), e.g. --ledger results/arith-grid"
    )
    assert report_main(["--ledger", str(ledgers[0]), "--page", str(tmp_path / "no" / "page.md")]) == 2
    assert "error: --page: no folder" in capsys.readouterr().err
    other = _ledger(
        tmp_path / "other",
        _rows(1, rerun=True).assign(
            cell_key=lambda t: t["cell_key"].str.replace("|d|", "|e|", regex=False), dataset="e"
        ),
        finals=True,
    )
    assert report_main(["--ledger", str(ledgers[0]), "--rerun", str(other), "--page", str(page)]) == 2
    assert capsys.readouterr().err.strip().startswith("error: rerun: none of the 24 cells in ")
    assert not page.exists()
