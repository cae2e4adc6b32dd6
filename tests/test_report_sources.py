"""The Reports tab's run logs: a server-side list, opened read-only, locations shown without passwords."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from types import SimpleNamespace

import pytest
from sqlalchemy.engine import make_url

from storage import RunStore, StorageError, open_read_only
from storage.connection import display_location
from uats.report import build_report
from uats_core.errors import ConfigError
from ui.views.report_sources import RUN_LOG, ReportSources


def _rollback_journal_run_log(path: Path) -> Path:
    """A run log written with the rollback journal, as an older tool or a copy might have it, and without the
    eval_cells table (a run log no evaluation wrote, from before every run log had it)."""
    RunStore(str(path)).close()
    con = sqlite3.connect(path)
    con.execute("DROP TABLE eval_cells")
    con.execute("PRAGMA journal_mode=DELETE")
    con.close()
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    return path


def _tables_and_mode(path: Path) -> tuple[list[str], str]:
    con = sqlite3.connect(path)
    try:
        tables = sorted(r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'"))
        mode = con.execute("PRAGMA journal_mode").fetchone()[0]
    finally:
        con.close()
    return tables, mode


def test_read_only_open_creates_no_table_and_keeps_the_journal_mode(tmp_path: Path) -> None:
    db = _rollback_journal_run_log(tmp_path / "eval.db")
    before = _tables_and_mode(db)
    assert "eval_cells" not in before[0] and before[1] == "delete"
    store = open_read_only(db)
    rep = build_report(store)  # the report's reader used to create eval_cells
    assert rep.tables["results"].empty
    with pytest.raises(Exception, match="readonly|read-only"):
        store.append_curve("x", {"round": 0})
    store.close()
    assert _tables_and_mode(db) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["eval.db"]


@pytest.mark.parametrize("content", [b"", b"not a database at all" * 100])
def test_a_file_that_is_not_a_run_log_is_refused(tmp_path: Path, content: bytes) -> None:
    f = tmp_path / "x.db"
    f.write_bytes(content)
    with pytest.raises(StorageError, match=r"^db: .*(not a run log|cannot read)"):
        open_read_only(f)
    assert f.read_bytes() == content


def test_a_sqlite_file_without_the_tables_is_refused_untouched(tmp_path: Path) -> None:
    f = tmp_path / "other.sqlite"
    con = sqlite3.connect(f)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    with pytest.raises(StorageError, match="not a run log"):
        open_read_only(f)
    assert _tables_and_mode(f) == (["t"], "delete")


def test_a_missing_file_is_refused_and_not_created(tmp_path: Path) -> None:
    with pytest.raises(StorageError, match="no file at"):
        open_read_only(tmp_path / "deep" / "x.db")
    assert list(tmp_path.iterdir()) == []


def test_locations_hide_the_password() -> None:
    url = make_url("postgresql+psycopg://ann:s3cret@db.example:5432/uats")
    shown = display_location(url)
    assert "s3cret" not in shown and "ann" in shown and "db.example" in shown
    sources = ReportSources(SimpleNamespace(url=url), None)
    assert all("s3cret" not in label for label, _ in sources.choices())


def test_only_files_directly_in_the_reports_folder_are_listed_and_opened(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    (reports / "sub").mkdir(parents=True)
    RunStore(str(reports / "a.db")).close()
    RunStore(str(reports / "sub" / "b.db")).close()
    RunStore(str(tmp_path / "outside.db")).close()
    (reports / "link.db").symlink_to(tmp_path / "outside.db")
    (reports / "notes.txt").write_text("x")
    app_store = RunStore("sqlite://")
    sources = ReportSources(app_store, reports)
    assert sources.keys() == [RUN_LOG, "a.db"]
    # labels and refusals name a file, never where the server keeps it
    assert all(str(tmp_path) not in label for label, _ in sources.choices())
    with pytest.raises(ConfigError) as refused, sources.reading("missing.db"):
        pass
    assert str(tmp_path) not in str(refused.value)
    with sources.reading("a.db") as st:
        assert st.list_runs() == []
    with sources.reading(RUN_LOG) as st:
        assert st is app_store
    for key in ("sub/b.db", "link.db", str(tmp_path / "outside.db"), "../outside.db", "notes.txt", "", None):
        with pytest.raises(ConfigError, match="^run log: "), sources.reading(key):
            pass
    without = ReportSources(app_store, None)
    assert without.keys() == [RUN_LOG]
    with pytest.raises(ConfigError, match="no --reports-dir"), without.reading("a.db"):
        pass


def test_a_shipped_curve_name_cannot_leave_the_models_folder(tmp_path: Path) -> None:
    from ui.views.report_view import curve_rows

    sources = ReportSources(RunStore("sqlite://"), None)
    for name in ("shipped: ../../../etc", "shipped: x/../../..", "shipped: nope"):
        with pytest.raises(ConfigError, match="^training curve: no shipped curve"):
            curve_rows(sources, RUN_LOG, name)


ROOT = Path(__file__).resolve().parents[1]


def test_the_committed_ledger_is_offered_by_default_and_nothing_else_is_opened(tmp_path: Path) -> None:
    from ui.launch import parse_args
    from ui.views.report_sources import LEDGER

    assert Path(parse_args([]).ledgers_dir).resolve() == ROOT / "results"  # out of the box: the app's default
    sources = ReportSources(RunStore("sqlite://"), None, ROOT / "results")
    first = min(d.name for d in (ROOT / "results").iterdir() if (d / "results.csv.gz").is_file())
    assert sources.keys()[0] == LEDGER + first and sources.default_key() == LEDGER + first  # the first ledger by name
    keys = sources.keys()  # ReportSources' own list, not a dict's view
    assert RUN_LOG in keys and sources.ledger_folder(RUN_LOG) is None
    assert sources.ledger_folder(LEDGER + "arith-grid") == ROOT / "results" / "arith-grid"
    (tmp_path / "outside").mkdir()
    for key in (
        LEDGER + "gpu",
        LEDGER + "../results/arith-grid",
        LEDGER + str(ROOT / "results" / "arith-grid"),
        LEDGER + "nope",
    ):  # results/gpu holds no ledger
        with pytest.raises(ConfigError, match="^results ledger: "):
            sources.ledger_folder(key)
    with pytest.raises(ConfigError, match="^run log: .*is a results ledger"), sources.reading(LEDGER + "arith-grid"):
        pass
    assert ReportSources(RunStore("sqlite://"), None, None).default_key() == RUN_LOG


def test_a_ledgers_report_in_the_page_shows_its_stages_and_is_kept(tmp_path: Path) -> None:
    """The report of a ledger (here the committed one's first 2,000 rows: the whole takes ~4 s idle) with its
    stages heard in order; built again from unchanged files, it comes from the cache without a stage."""
    import gzip

    import pandas as pd

    from storage.results_ledger import RESULTS_FILE, STEPS_FILE, TRACES_FILE
    from ui.views.report_sources import LEDGER
    from ui.views.report_view import report_view

    src, dst = ROOT / "results" / "arith-grid", tmp_path / "ledgers" / "small"
    dst.mkdir(parents=True)
    rows = pd.read_csv(src / RESULTS_FILE, nrows=2000)
    keys = set(rows["cell_key"])
    with gzip.open(dst / RESULTS_FILE, "wt") as f:
        rows.to_csv(f, index=False)
    for name in (STEPS_FILE, TRACES_FILE):
        part = pd.concat(c[c["cell_key"].isin(keys)] for c in pd.read_csv(src / name, chunksize=100_000))
        with gzip.open(dst / name, "wt") as f:
            part.to_csv(f, index=False)
    sources = ReportSources(RunStore("sqlite://"), None, tmp_path / "ledgers")
    heard: list[tuple[float, str]] = []
    md, figs = report_view(sources, LEDGER + "small", progress=lambda f, what: heard.append((f, what)))
    assert "Evaluation report of results ledger small" in md and "Table 4 layout" in md
    assert "no finished evaluation cells" not in md and f"{len(rows)} finished cells" in md
    assert {"accuracy_vs_n", "accuracy_vs_cost"} <= set(figs)
    assert [f for f, _ in heard] == sorted(f for f, _ in heard) and len(heard) >= 3, heard
    assert any("2,000 searches" in what for _, what in heard), heard
    again: list[tuple[float, str]] = []
    assert report_view(sources, LEDGER + "small", progress=lambda f, what: again.append((f, what))) == (md, figs)
    assert again == []


def test_a_run_log_of_an_earlier_version_reads_as_migrated_and_stays_as_it_was(tmp_path: Path) -> None:
    """A run log written before the latest migrations (storage/migrations.py: iterations.step_info still named
    budget, the columns added since absent, the shadow tables missing) opens read-only and reads as the same run
    log migrated: its runs, nodes and step numbers, the added columns as migrate adds them. The file is left
    byte for byte as it was."""
    from storage.migrations import MIGRATIONS
    from testkit.synthetic import synthetic_events
    from ui.views.treedata import RunData

    db = tmp_path / "old.db"
    store = RunStore(str(db))
    sub = store.subscriber()
    for ev in synthetic_events("old-run", n_nodes=40, seed=3, budget=8):
        sub(ev)
    want = RunData.load(store, "old-run")
    want_its = store.get_iterations("old-run")
    store.close()
    con = sqlite3.connect(db)
    con.execute("ALTER TABLE iterations RENAME COLUMN step_info TO budget")
    for table, names in MIGRATIONS:
        for name in names:
            con.execute(f"ALTER TABLE {table} DROP COLUMN {name}")
    con.execute("DROP TABLE shadow_scores")
    con.execute("PRAGMA journal_mode=DELETE")
    con.commit()
    con.close()
    before = db.read_bytes()

    old = open_read_only(db)
    got = RunData.load(old, "old-run")
    its = old.get_iterations("old-run")
    assert [r["step_info"] for r in its] == [r["step_info"] for r in want_its] and its[0]["step_info"]
    assert {i: (n["mean"], n["var"], n["mc_scores"]) for i, n in got.state_at(None).nodes.items()} == {
        i: (n["mean"], n["var"], n["mc_scores"]) for i, n in want.state_at(None).nodes.items()
    }
    run = old.get_run("old-run")
    assert run["owner"] is None and run["paused"] in (0, False) and run["step_credits"] == 0
    old.close()
    assert db.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["old.db"]
