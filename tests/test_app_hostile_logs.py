"""Issue 50, item 11: a hostile or damaged run log. `uats_studio.open_run` raised raw JSON, Value, Attribute and
Recursion errors on bad rows, and `uats show` printed tracebacks and wrote to the file it read (a schema into an
empty file). Now reading never writes, and a damaged row is one line naming its table, row and column."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from storage import RunStore, StorageError
from testkit.doubles import record_synthetic
from uats.cli import main

RUN = "ab" * 16

# (table, the SQL that damages one row, what the line names)
DAMAGE = {
    "bad JSON": (
        "UPDATE nodes SET mc_scores = '{not json' WHERE node_id = 3",
        "table nodes, row run_id=%s, node_id=3: column mc_scores holds text that is not JSON (Expecting property "
        "name enclosed in double quotes: line 1 column 2 (char 1))",
    ),
    "deep JSON": (
        "UPDATE runs SET config = '" + "[" * 5000 + "]" * 5000 + "'",
        "table runs, row run_id=%s: column config holds JSON nested deeper than 64 levels",
    ),
    "a list for an object": (
        "UPDATE runs SET config = '[1, 2]'",
        "table runs, row run_id=%s: column config holds a JSON list, not an object",
    ),
    "text for a number": (
        "UPDATE nodes SET mean = 'high' WHERE node_id = 2",
        "table nodes, row run_id=%s, node_id=2: column mean holds 'high' where a number belongs",
    ),
    "text for a score": (
        "UPDATE nodes SET mc_scores = '[0.5, \"x\"]' WHERE node_id = 4",
        "table nodes, row run_id=%s, node_id=4: column mc_scores holds a pass score that is not a number",
    ),
    "bad decisions": (
        "UPDATE iterations SET decisions = '[1]' WHERE iteration = 1",
        "table iterations, row run_id=%s, iteration=1: column decisions holds a decision that is not an object",
    ),
}


def _no_wal_frames(db: Path) -> bool:
    """SQLite may open a read-only connection's -wal and -shm beside the file; nothing is written into them."""
    wal = db.with_name(db.name + "-wal")
    return not wal.exists() or wal.stat().st_size == 0


def _damaged_log(tmp: Path, sql: str) -> Path:
    db = tmp / "runs.db"
    store = RunStore(str(db))
    record_synthetic(store, RUN, n_nodes=20, seed=1, method="h-uats", problem_id="synthetic-1")
    store.close()
    con = sqlite3.connect(db)
    con.execute(sql)
    con.commit()
    con.close()
    return db


@pytest.mark.parametrize("kind", list(DAMAGE))
def test_open_run_names_the_damaged_row(tmp_path: Path, kind: str) -> None:
    from uats_studio import open_run

    sql, said = DAMAGE[kind]
    db = _damaged_log(tmp_path, sql)
    before = db.read_bytes()
    for ref in (RUN[:8], None):
        with pytest.raises(StorageError) as exc:
            open_run(db, ref)
        assert str(exc.value) == f"db: the run log is damaged: {said % RUN}"
    assert db.read_bytes() == before


@pytest.mark.parametrize("kind", list(DAMAGE))
def test_uats_show_is_one_line_and_writes_nothing(tmp_path: Path, kind: str, capsys: pytest.CaptureFixture) -> None:
    sql, said = DAMAGE[kind]
    db = _damaged_log(tmp_path, sql)
    before = db.read_bytes()
    capsys.readouterr()
    assert main(["show", RUN[:8], "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert err == f"error: db: the run log is damaged: {said % RUN}\n"
    assert db.read_bytes() == before and _no_wal_frames(db)


@pytest.mark.parametrize("command", [["show", "abc"], ["runs"]])
def test_an_empty_file_stays_empty(tmp_path: Path, command: list[str], capsys: pytest.CaptureFixture) -> None:
    db = tmp_path / "empty.db"
    db.write_bytes(b"")
    assert main([*command, "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: db: ") and "is not a run log (no table 'runs')" in err and err.count("\n") == 1
    assert db.read_bytes() == b"" and sorted(p.name for p in tmp_path.iterdir()) == ["empty.db"]
