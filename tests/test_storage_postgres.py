"""The run log on its two databases: the recorder's and the fast reader's driver-level paths store and read on
PostgreSQL what SQLAlchemy's own statements do (as on SQLite, tests/test_storage.py and tests/test_bigtree.py), one
migration path brings an older run log up to date on either, and a database the run log does not live in is refused
in one line instead of being written more slowly. PostgreSQL: UATS_TEST_POSTGRES_URL (testkit/postgres.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from storage import RunStore, StorageError
from storage.connection import parse_location
from storage.fastread import read_nodes
from testkit.doubles import record, record_synthetic
from testkit.postgres import fresh_database
from testkit.synthetic import synthetic_events
from uats_core.status import RunStatus

# table -> (what is compared, in which order): every column but when a row was written and by which process
TABLES = {
    "nodes": ("*", "run_id, node_id"),
    "node_history": ("*", "run_id, iteration, node_id"),
    "iterations": ("run_id, iteration, decisions, step_info, cost_step, cost_total, n_nodes_updated", "iteration"),
    "runs": ("status, answer, naive_answer, correct, naive_correct, cost, iterations, n_nodes, error, extra", "run_id"),
}


@pytest.fixture(params=["sqlite", "postgresql"])
def new_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A maker of empty run log locations on one database: SQLite files, or fresh PostgreSQL databases."""
    if request.param == "sqlite":
        yield lambda name: str(tmp_path / f"{name}.db")
        return
    made: list[Any] = []

    def make(name: str) -> str:
        made.append(fresh_database(f"the run log's {name} path"))
        return made[-1].__enter__()

    try:
        yield make
    finally:
        for ctx in made:
            ctx.__exit__(None, None, None)


def _dump(store: RunStore) -> dict[str, list]:
    with store.engine.connect() as conn:
        return {
            t: [tuple(r) for r in conn.execute(sa.text(f"SELECT {cols} FROM {t} ORDER BY {order}"))]
            for t, (cols, order) in TABLES.items()
        }


def test_the_fast_write_path_stores_what_sqlalchemy_stores(new_db: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import storage.recorder as recorder

    events = synthetic_events("same", n_nodes=150, seed=4, method="h-uats")
    dumps = []
    for fast in (True, False):
        with monkeypatch.context() as m:
            m.setattr(recorder, "_FAST", fast)
            if fast:  # the driver's statements alone: no quiet fallback to SQLAlchemy's on either database
                m.setattr(recorder, "_upsert_statement", _refused)
            store = RunStore(new_db(f"fast-{fast}"))
            record(store, events)
            dumps.append(_dump(store))
            assert store.get_run("same")["status"] == RunStatus.FINISHED
            store.close()
    fast, slow = dumps
    assert len(fast["nodes"]) > 100 and fast["node_history"] and fast["iterations"] and fast["runs"][0][0] == "finished"
    assert any(row[9] for row in fast["nodes"])  # real mc_scores compared (JSON), booleans and NULLs too
    assert fast == slow


def _refused(*args: Any, **kw: Any) -> Any:
    raise AssertionError("the slow path ran")


def test_the_fast_reader_reads_what_get_nodes_reads(new_db: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    store = RunStore(new_db("read"))
    for rid, n in (("s" * 32, 300), ("b" * 32, 2000)):
        record_synthetic(store, rid, n_nodes=n, seed=4, max_iterations=5000)
        expected = store.get_nodes(rid)
        with monkeypatch.context() as m:
            m.setattr(store, "get_nodes", _refused)  # read by the driver, not handed to get_nodes
            assert read_nodes(store, rid) == expected
    with pytest.raises(Exception, match="no run"):
        read_nodes(store, "nope")
    store.close()


def test_an_older_run_log_is_brought_up_to_date(new_db: Any) -> None:
    url = new_db("old")
    RunStore(url).register_run("old", method="rebase", problem_id="p", question="?")
    engine = RunStore(url).engine
    with engine.begin() as conn:  # a run log from before step mode, and from before the evaluation wrote to it
        conn.execute(sa.text("ALTER TABLE runs DROP COLUMN paused"))
        conn.execute(sa.text("ALTER TABLE runs DROP COLUMN step_credits"))
        conn.execute(sa.text("DROP TABLE eval_cells"))
    engine.dispose()
    store = RunStore(url)
    assert store.is_paused("old") is False and store.get_run("old")["step_credits"] == 0
    assert "eval_cells" in sa.inspect(store.engine).get_table_names()
    store.close()


def test_the_run_log_lives_in_sqlite_or_postgresql_and_a_plain_postgresql_url_uses_the_extras_driver() -> None:
    with pytest.raises(StorageError, match=r"^db: 'mysql://u@h/x': the run log lives in SQLite .* not mysql$"):
        RunStore("mysql://u@h/x")
    assert parse_location("postgresql://u@h/x").drivername == "postgresql+psycopg"
    assert parse_location("postgresql+psycopg2://u@h/x").drivername == "postgresql+psycopg2"  # a driver named stays
