"""Which code produced a table: every ledger row names the code version that ran it (`code_version`: the commit,
with '+dirty' where the checkout had uncommitted changes, which no commit reproduces). The report prints, under
each table, the versions of the rows that table reads."""

from __future__ import annotations

import pandas as pd

DIRTY = "+dirty"


def provenance_line(rows: pd.DataFrame) -> str:
    """One line naming the code versions of `rows` with their row counts (most rows first) and how many ran
    uncommitted code; '' where the rows carry no version (a run log, not a ledger)."""
    if "code_version" not in rows or rows.empty or rows["code_version"].isna().all():
        return ""
    counts = rows["code_version"].fillna("unknown").astype(str).value_counts()
    order = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    names = ", ".join(f"`{version}` ({n:,})" for version, n in order)
    dirty = int(sum(n for version, n in order if version.endswith(DIRTY)))
    text = f"Code versions of the {len(rows):,} rows behind this table: {names}"
    if dirty:
        text += (f"; {dirty:,} of them ({100 * dirty / len(rows):.1f}%) ran uncommitted code (`{DIRTY}`), which no "
                 "commit reproduces")
    else:
        text += "; none ran uncommitted code"
    return text + "."


def with_provenance(text: str, rows: pd.DataFrame) -> str:
    """A table's Markdown with its provenance line under it."""
    line = provenance_line(rows)
    return f"{text}\n\n{line}" if text and line else text
