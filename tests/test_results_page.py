"""docs/results.md is what the committed results ledgers say: every table the page shows is rebuilt here, from
`results/arith-grid/` and `results/arith-hard/` alone, and must appear on the page as the report prints it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from uats_core.entrypoints.report import report_from_ledger
from uats_core.report import Report

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "results.md"
LEDGERS = [ROOT / "results" / "arith-grid", ROOT / "results" / "arith-hard"]
HARD = "arith-o4-6v40a9f5-test|base"
# The report's sections the page shows, in its order: all from one report over both ledgers.
SECTIONS = ["Compute spent against REBASE", "Table 4 layout: arith-test|base", "Accuracy by budget (%): arith-test|base",
            "Pass@N by budget (%, oracle): arith-test|base",
            "Mean compute spent per search (PRM-pass units, ± 95% t over seeds): arith-test|base",
            "Paired accuracy differences: arith-test|base", "Variants, paired", "Ablations", "Ablation ladder",
            "Duplicate candidates", "Answer aggregation", "Table 4 layout, best final score: arith-test|base",
            "Accuracy against difficulty", f"Table 4 layout: {HARD}", f"Accuracy by budget (%): {HARD}",
            f"Pass@N by budget (%, oracle): {HARD}", f"Paired accuracy differences: {HARD}",
            "Table 4 layout: arith-hard-test|base", "Figure 2 analysis: PRM on each pair's steps", "σ² beside R̄",
            "A-UATS's controller"]


@pytest.fixture(scope="module")
def report() -> Report:
    return report_from_ledger(*LEDGERS)  # about 25 s: built once for the module


def test_every_table_of_the_results_page_is_the_ledgers(report: Report) -> None:
    page = PAGE.read_text(encoding="utf-8")
    positions = []
    for name in SECTIONS:
        text = report.markdown[name].strip()
        assert text in page, f"docs/results.md: the section {name!r} is not the ledger's; rebuild the page from " \
                             f"python -m uats_core.report --ledger results/arith-grid --ledger results/arith-hard"
        positions.append(page.index(text))
    assert positions == sorted(positions)
    count = re.search(r"The ledgers hold ([\d,]+) finished searches", page)
    assert count and int(count.group(1).replace(",", "")) == len(report.tables["results"])


def test_every_table_names_the_code_versions_of_its_rows(report: Report) -> None:
    """Under each table: the commits of the rows it reads and how many ran uncommitted code."""
    for name in SECTIONS:
        assert "Code versions of the " in report.markdown[name], name
    rows = report.tables["results"]
    base = rows[(rows["dataset"] == "arith-test") & (rows["variant"] == "base")]
    line = report.markdown["Table 4 layout: arith-test|base"].splitlines()[-1]
    counts = {v: int(n.replace(",", "")) for v, n in re.findall(r"`([0-9a-f]{12}(?:\+dirty)?)` \(([\d,]+)\)", line)}
    assert counts == base["code_version"].value_counts().to_dict()
    dirty = sum(n for v, n in counts.items() if v.endswith("+dirty"))
    assert (f"{dirty:,} of them" in line) if dirty else ("none ran uncommitted code" in line)
