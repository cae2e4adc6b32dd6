"""docs/results.md is what the committed results ledgers say: the report generates the whole page from
`results/arith-grid/`, `results/arith-hard/` and the rerun `results/arith-rerun/` (when the repository has it) alone,
the committed page must be exactly that text, and every number in its sentences must be a number of its tables."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from uats.report import page_command, report_from_ledger
from uats_core.report import Report
from uats_core.report.page import results_page

from .prose_numbers import unfound_prose_numbers

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "results.md"
LEDGERS = [ROOT / "results" / "arith-grid", ROOT / "results" / "arith-hard"]
RERUN = ROOT / "results" / "arith-rerun"


@pytest.fixture(scope="module")
def report() -> Report:
    # tables only, as the page's command builds them; about 15 s, built once for the module
    return report_from_ledger(*LEDGERS, rerun=RERUN if RERUN.exists() else None, figures=False)


def command() -> str:
    return page_command(LEDGERS, RERUN if RERUN.exists() else None, PAGE)


def test_the_results_page_is_what_the_report_writes_today(report: Report) -> None:
    expected = results_page(report, command())
    assert PAGE.read_text(encoding="utf-8") == expected, (
        f"docs/results.md is not what the report writes from today's ledgers; regenerate it: {command()}")


def test_every_number_in_the_pages_sentences_is_a_number_of_its_tables(report: Report) -> None:
    """No hand-typed number: a sentence may only repeat what a table of the report prints."""
    assert unfound_prose_numbers(PAGE.read_text(encoding="utf-8"), report) == set()


def test_a_hand_typed_number_in_a_sentence_is_found(report: Report) -> None:
    page = results_page(report, command())
    assert unfound_prose_numbers(page, report) == set()
    typed = page.replace("## The ledgers\n", "## The ledgers\n\nThe ledgers hold 45,116 finished searches.\n", 1)
    assert unfound_prose_numbers(typed, report) == {"45116"}


def test_every_table_names_the_code_versions_of_its_rows(report: Report) -> None:
    """Under each table: the commits of the rows it reads and how many ran uncommitted code."""
    for name, text in report.markdown.items():
        assert "Code versions of the " in text or name == "Sources", name
    rows = report.tables["results"]
    base = rows[(rows["dataset"] == "arith-test") & (rows["variant"] == "base")]
    line = report.markdown["Table 4 layout: arith-test|base"].splitlines()[-1]
    counts = {v: int(n.replace(",", "")) for v, n in re.findall(r"`([0-9a-f]{12}(?:\+dirty)?)` \(([\d,]+)\)", line)}
    assert counts == base["code_version"].value_counts().to_dict()
    dirty = sum(n for v, n in counts.items() if v.endswith("+dirty"))
    assert (f"{dirty:,} of them" in line) if dirty else ("none ran uncommitted code" in line)
