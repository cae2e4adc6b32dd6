"""What the results page's prose may say: every number in its sentences must be a number one of the report's tables
on the page prints (tests/test_results_page.py on the committed page, tests/test_report_rerun.py on a page built
from tiny ledgers)."""

from __future__ import annotations

import re

from reports import Report

# A number as prose or a table prints it: not part of a name (A:prm, arith-o4-6v40a9f5-test, K0), with its sign,
# thousands separators, decimals and exponent; compared without sign or separators.
NUMBER = re.compile(r"(?<![\w.])[+\-−]?\d[\d,]*(?:\.\d+)?(?:e[+-]\d+)?(?![\w])")


def numbers(text: str) -> set[str]:
    return {n.lstrip("+-−").replace(",", "") for n in NUMBER.findall(text)}


def shown_tables(page: str, report: Report) -> list[str]:
    """The report's tables (each section as the report printed it, caption and provenance line) the page shows."""
    return [text.strip() for text in report.markdown.values() if text.strip() and text.strip() in page]


def prose_of(page: str, report: Report) -> str:
    """The page without its tables, code blocks, inline code and the names of the paper's tables and figures: its
    sentences."""
    for text in sorted(shown_tables(page, report), key=len, reverse=True):
        page = page.replace(text, "")
    page = re.sub(r"```.*?```", "", page, flags=re.S)
    page = re.sub(r"\b(?:Figure|Table) \d+", "", page)  # the paper's figures and tables by name
    return re.sub(r"`[^`\n]*`", "", page)


def unfound_prose_numbers(page: str, report: Report) -> set[str]:
    """Numbers in the page's sentences that none of the report's tables on the page prints."""
    tables = set().union(set(), *(numbers(text) for text in shown_tables(page, report)))
    return numbers(prose_of(page, report)) - tables
