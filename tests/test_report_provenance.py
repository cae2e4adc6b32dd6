"""The provenance line the report prints under each table: every code version with its rows, and the rows from
uncommitted code."""

from __future__ import annotations

import pandas as pd

from reports.provenance import provenance_line, with_provenance


def test_the_line_counts_every_version_and_the_uncommitted_rows() -> None:
    rows = pd.DataFrame({"code_version": ["aaaaaaaaaaaa"] * 3 + ["bbbbbbbbbbbb+dirty"] * 2 + ["cccccccccccc"]})
    assert provenance_line(rows) == (
        "Code versions of the 6 rows behind this table: `aaaaaaaaaaaa` (3), "
        "`bbbbbbbbbbbb+dirty` (2), `cccccccccccc` (1); 2 of them (33.3%) ran uncommitted "
        "code (`+dirty`), which no commit reproduces."
    )
    clean = rows[~rows["code_version"].str.endswith("+dirty")]
    assert provenance_line(clean).endswith("; none ran uncommitted code.")


def test_rows_without_a_version_add_no_line() -> None:
    assert provenance_line(pd.DataFrame({"cell_key": ["x"]})) == ""  # a run log's rows name no version
    assert with_provenance("| a |", pd.DataFrame({"cell_key": ["x"]})) == "| a |"
