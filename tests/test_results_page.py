"""docs/results.md is what the committed results ledgers say: the report generates the whole page from
`results/arith-grid/`, `results/arith-hard/` and the rerun `results/arith-rerun/` (when the repository has it) alone,
the committed page must be exactly that text, and every number in its sentences must be a number of its tables."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from reports import Report
from reports.page import results_page
from testkit.prose_numbers import unfound_prose_numbers
from uats.report import page_command, report_from_ledger

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "results.md"
LEDGERS = [ROOT / "results" / "arith-grid", ROOT / "results" / "arith-hard"]
RERUN = ROOT / "results" / "arith-rerun"
GATE = (
    ROOT / "results" / "arith-gate"
)  # the gate's literal reading under the rerun's protocol (when the repository has it)


def gate() -> Path | None:
    return GATE if GATE.exists() and RERUN.exists() else None


@pytest.fixture(scope="module")
def report() -> Report:
    # tables only, as the page's command builds them; about 15 s, built once for the module
    return report_from_ledger(*LEDGERS, rerun=RERUN if RERUN.exists() else None, rerun_variants=gate(), figures=False)


def command() -> str:
    return page_command(LEDGERS, RERUN if RERUN.exists() else None, PAGE, gate())


def test_the_results_page_is_what_the_report_writes_today(report: Report) -> None:
    expected = results_page(report, command())
    assert PAGE.read_text(encoding="utf-8") == expected, (
        f"docs/results.md is not what the report writes from today's ledgers; regenerate it: {command()}"
    )


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


# ---- replication: a difference clearing zero in one recording only is never stated as a finding ----

FIRST_SCREEN = "## Does UATS beat REBASE here, and why"
METHOD_NAMES = {"h-uats": "H-UATS", "a-uats": "A-UATS"}


def _side(cell: str) -> int:
    """+1 / -1 / 0: the printed difference 'd ± h' clears zero upward / downward / not (the rule, on printed values)."""
    d, _, h = cell.partition(" ± ")
    d, h = float(d), float(h) if h else float("nan")
    return 1 if d > h else -1 if -d > h else 0


def replicating_rows(page: str) -> dict[tuple[str, str, int], str]:
    """From the first screen's table: each (pair, method, N) and the verdict its printed numbers give by the rule."""
    out = {}
    table = page.split(FIRST_SCREEN, 1)[1].split("**The verdict rule.**", 1)[0]
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) < 7 or " − rebase" not in cells[2]:
            continue
        original, rerun = _side(cells[3]), _side(cells[4])
        verdict = (
            "replicates"
            if original == rerun != 0
            else "conflict"
            if original and rerun and original != rerun
            else "lead"
            if original or rerun
            else "noise"
        )
        out[(cells[0].split()[0], cells[2].split()[0], int(cells[1]))] = verdict
    return out


def stated_replications(page: str) -> set[tuple[str, str, int]]:
    """The (pair, method, N) the first screen's bullets say replicate."""
    stated = set()
    bullets = page.split(FIRST_SCREEN, 1)[1].split("\n\n", 2)[1]
    for line in bullets.splitlines():
        m = re.match(r"- \*\*(\S+) \((?:ID|OOD)\)\*\*: (.*)", line)
        if not m:
            continue
        pair, text = m.groups()
        for method, name in METHOD_NAMES.items():
            said = re.search(rf"{name} − REBASE (.*?)(?:; [AH]-UATS − REBASE|\(the table below\))", text)
            for clause in (
                re.findall(r"replicates (?:upward|downward) at (every N|N = [\d, and]+)", said.group(1)) if said else []
            ):
                budgets = [4, 16, 64] if clause == "every N" else [int(b) for b in re.findall(r"\d+", clause)]
                stated |= {(pair, method, b) for b in budgets}
    return stated


def test_the_first_screen_reads_both_recordings_and_states_as_findings_only_what_replicates() -> None:
    page = PAGE.read_text(encoding="utf-8")
    rows = replicating_rows(page)
    assert len(rows) == 12  # two pairs × three N × two methods, each in both recordings
    assert stated_replications(page) == {k for k, v in rows.items() if v == "replicates"}
    table = page.split(FIRST_SCREEN, 1)[1].split("**The verdict rule.**", 1)[0]
    for (pair, method, budget), verdict in rows.items():  # the table's own verdict column follows the rule
        line = next(x for x in table.splitlines() if x.startswith(f"| {pair} ") and f"| {budget} | {method} " in x)
        word = line.split("|")[7].strip()
        assert word.startswith(
            {
                "replicates": "replicates",
                "lead": "a lead",
                "noise": "within noise",
                "conflict": "the recordings conflict",
            }[verdict]
        ), line
    assert "**Replication.**" in page and "*replicates* only when it clears zero the same way in both" in page


def test_a_one_recording_difference_stated_as_a_finding_is_caught() -> None:
    page = PAGE.read_text(encoding="utf-8")
    rows = replicating_rows(page)
    pair, method, budget = next(k for k, v in rows.items() if v == "lead")
    name = METHOD_NAMES[method]
    bullet = next(x for x in page.splitlines() if x.startswith(f"- **{pair} ("))
    said = re.search(rf"{name} − REBASE ([^;(]*)", bullet).group(0)
    doctored = page.replace(bullet, bullet.replace(said, f"{name} − REBASE replicates upward at N = {budget}"), 1)
    assert stated_replications(doctored) != {k for k, v in replicating_rows(doctored).items() if v == "replicates"}


def claims_findings(page: str) -> list[str]:
    """The claims table's verdict segments that state a claim reproduced or reversed without saying whether it
    replicates (both recordings) or is a lead (one recording)."""
    table = page.split("## The paper against this grid, claim by claim", 1)[1].split("\n\n", 3)[2]
    bare = []
    for line in table.splitlines()[2:]:
        verdict = line.strip("|").split("|")[-1].strip()
        for part in re.split(r"; (?=[AB]:prm|`|shipped|retrained|original |rerun )", verdict):
            words = re.findall(r"(?<!not )\b(reproduced|reversed)\b(?! for the style)", part)
            if words and not re.search(r"a lead|replicates \(|the recordings conflict|not testable", part):
                bare.append(part)
    return bare


def test_every_claim_says_whether_it_replicates_or_is_a_lead() -> None:
    page = PAGE.read_text(encoding="utf-8")
    assert claims_findings(page) == []
    doctored = page.replace("reversed, a lead (original only)", "reversed", 1)
    assert doctored != page and claims_findings(doctored) == ["A:prm (ID): reversed"]


# ---- provenance: every "Code versions" line recomputed from the rows its table reads ----


def _counts(line: str) -> dict[str, int]:
    return {v: int(n.replace(",", "")) for v, n in re.findall(r"`([0-9a-f]{12}(?:\+dirty)?)` \(([\d,]+)\)", line)}


def test_the_provenance_lines_are_those_of_the_rows_each_table_reads(report: Report) -> None:
    from reports.stats import CELL, restrict_common

    rows = restrict_common(report.tables["results"])
    base = rows[rows["variant"] == "base"]
    uats = rows["method"].isin(["h-uats", "a-uats"])
    again = report.tables.get("rerun_rows")
    # the variants table: every UATS variant and the base cells it is paired with (its method, H-UATS, REBASE)
    variants = rows[uats & (rows["variant"] != "base")]
    cells = {m: set(map(tuple, g[CELL].to_numpy())) for m, g in variants.groupby("method")}
    references = {"h-uats": ("h-uats", "rebase"), "a-uats": ("a-uats", "h-uats", "rebase")}  # what each is paired with
    paired = [variants]
    for ref in ("h-uats", "a-uats", "rebase"):
        ran = set().union(*[c for m, c in cells.items() if ref in references[m]])
        r = base[base["method"] == ref]
        paired.append(r[[tuple(x) in ran for x in r[CELL].to_numpy()]])
    expected = {
        "Variants, paired": pd.concat(paired),
        "Compute spent against REBASE": rows[uats | ((rows["method"] == "rebase") & (rows["variant"] == "base"))],
        "Claims": rows if again is None else pd.concat([rows, again]),
    }
    if again is not None:
        first = base[(base["dataset"] == "arith-test") & base["method"].isin(["rebase", "h-uats", "a-uats"])]
        first = first[first["cell_key"].isin(set(again["cell_key"]))]
        expected["Does UATS beat REBASE"] = pd.concat([first, again[again["cell_key"].isin(set(first["cell_key"]))]])
    for name, read in expected.items():
        line = report.markdown[name].splitlines()[-1]
        assert _counts(line) == read["code_version"].value_counts().to_dict(), name
        assert f"Code versions of the {len(read):,} rows" in line, name
        dirty = int(read["code_version"].str.endswith("+dirty").sum())
        assert (
            (f"{dirty:,} of them ({100 * dirty / len(read):.1f}%)" in line)
            if dirty
            else ("none ran uncommitted code" in line)
        ), name
