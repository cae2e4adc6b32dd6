"""Which code produced a table: every ledger row names the code version that ran it (`code_version`: the commit,
with '+dirty' where the checkout had uncommitted changes, which no commit reproduces). The report prints, under
each table, the versions of the rows that table reads."""

from __future__ import annotations

import pandas as pd

from .stats import DIRTY, dirty
from .tables import markdown_table


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
        text += (
            f"; {dirty:,} of them ({100 * dirty / len(rows):.1f}%) ran uncommitted code (`{DIRTY}`), which no "
            f"commit reproduces{where_dirty(rows)}"
        )
    else:
        text += "; none ran uncommitted code"
    return text + "."


def where_dirty(rows: pd.DataFrame) -> str:
    """Where a table's uncommitted rows lie, by method, variant and N: ': h-uats base at N = 64 (316), ...'."""
    keys = [k for k in ("method", "variant", "budget") if k in rows]
    if not keys:
        return ""
    bad = rows[dirty(rows["code_version"])]
    counts = bad.groupby(keys, sort=True).size()
    said = []
    for key, n in counts.items():
        key = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        said.append(
            " ".join(str(key[k]) for k in ("method", "variant") if k in key)
            + (f" at N = {key['budget']}" if "budget" in key else "")
            + f" ({n:,})"
        )
    return ": " + ", ".join(said)


def with_provenance(text: str, rows: pd.DataFrame) -> str:
    """A table's Markdown with its provenance line under it."""
    line = provenance_line(rows)
    return f"{text}\n\n{line}" if text and line else text


def sources_markdown(results: pd.DataFrame, rerun: pd.DataFrame | None, beside: pd.DataFrame | None = None) -> str:
    """Per ledger (the `ledger` column: its folder's name), the rows the report reads: how many, of which base
    settings, run under cross-problem batching, and from uncommitted code; a rerun's rows apart, after the total, and
    `beside`'s (variants run under the rerun's protocol) after them."""
    if "ledger" not in results:
        return ""
    groups = [(f"`{name}`", g) for name, g in results.groupby("ledger", sort=False)]
    groups.append(("all of them" if len(groups) > 1 else "", results))
    if rerun is not None and len(rerun) and "ledger" in rerun:
        groups += [(f"`{name}` (rerun)", g) for name, g in rerun.groupby("ledger", sort=False)]
    if beside is not None and len(beside) and "ledger" in beside:  # variants under the rerun's protocol
        groups += [(f"`{name}` (rerun's protocol)", g) for name, g in beside.groupby("ledger", sort=False)]
    rows = []
    for name, g in groups:
        if not name:
            continue
        dirty = int(g["code_version"].fillna("").astype(str).str.endswith(DIRTY).sum())
        rows.append(
            [
                name,
                f"{len(g):,}",
                ", ".join(f"`{d}`" for d in sorted(g["dataset"].unique())),
                f"{int((g['variant'] == 'base').sum()):,}",
                f"{int(g['batched'].sum()):,}",
                f"{dirty:,} ({100 * dirty / len(g):.1f}%)",
            ]
        )
    return (
        "The ledgers the report reads: finished searches (rows), their datasets, how many ran the base settings, "
        "how many ran under cross-problem batching (valid samples, not reproducible one by one) and how many ran "
        "uncommitted code, which no commit reproduces\n\n"
        + markdown_table(
            ["ledger", "rows", "datasets", "base settings", "batched", f"uncommitted code (`{DIRTY}`)"], rows
        )
    )
