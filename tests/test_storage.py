"""The run log: round trip of an event stream, failures, concurrent reading, bad locations."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from storage import RunStore, StorageError
from testkit.doubles import record
from testkit.synthetic import final_records, synthetic_events
from uats_core.events import IterationEnded, NodesUpdated, RunEnded, RunStarted
from uats_core.records import Decision, StepInfo
from uats_core.tree import FINISHED, KEPT, PRUNED, Node


def _hand_events(run_id: str = "r1") -> list:
    """A tiny stream built from real Node records, by hand, so every value below is known."""
    root = Node(id=0, parent_id=None, depth=0, step="", status=KEPT, expanded_iter=1, children_granted=2)
    a = Node(
        id=1,
        parent_id=0,
        depth=1,
        step="2 + 3 = 5\n\n",
        num_tokens=6,
        finish_reason="delimiter",
        created_iter=1,
        mc_scores=[0.9, 0.8, 0.85],
        initial_passes=3,
        mean=0.85,
        var=0.0025,
        ucb=0.95,
        ood=False,
        scored_iter=1,
        children_granted=1,
        status=KEPT,
        expanded_iter=2,
    )
    b = Node(
        id=2,
        parent_id=0,
        depth=1,
        step="2 + 3 = 6\n\n",
        num_tokens=6,
        finish_reason="delimiter",
        created_iter=1,
        mc_scores=[0.2, 0.6, 0.4, 0.5, 0.3],
        initial_passes=3,
        mean=0.4,
        var=0.025,
        ucb=0.6,
        ood=True,
        scored_iter=1,
        reeval_iter=1,
        extra_passes=2,
        status=PRUNED,
        uniqueness=0.5,
    )
    c = Node(
        id=3,
        parent_id=1,
        depth=2,
        step="\\boxed{5}",
        num_tokens=4,
        finish_reason="eos",
        created_iter=2,
        mc_scores=[0.97, 0.99],
        initial_passes=2,
        mean=0.98,
        var=0.0002,
        ucb=1.0,
        ood=False,
        scored_iter=2,
        status=FINISHED,
        answer="5",
        correct=True,
    )
    return [
        RunStarted(
            run_id=run_id,
            method="h-uats",
            problem_id="arith-1",
            question="2+3?",
            gold_answer="5",
            seed=7,
            config={"budget": 2, "tau": 0.003},
            policy="tiny-policy",
            prm="tiny-prm",
        ),
        NodesUpdated(iteration=1, nodes=[root.record(), a.record(), b.record()]),
        IterationEnded(
            iteration=1,
            decisions=[
                Decision(node_id=1, children=1),
                Decision(node_id=2, extra_passes=2, children=0, status="pruned"),
            ],
            step_info=StepInfo(width=2, reeval_passes=2),
            cost_step=40.0,
            cost_total=40.0,
        ),
        NodesUpdated(iteration=2, nodes=[c.record()]),
        IterationEnded(
            iteration=2, decisions=[], step_info=StepInfo(width=1, reeval_passes=0), cost_step=20.0, cost_total=60.0
        ),
        RunEnded(
            status="finished",
            answer="5",
            naive_answer="5",
            correct=True,
            naive_correct=True,
            cost=60.0,
            iterations=2,
            extra={"votes": {"5": 0.98}},
        ),
    ]


def test_round_trip_by_hand(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path / "runs.db"))
    events = _hand_events()
    record(store, events)
    run = store.get_run("r1")
    assert run["status"] == "finished" and run["method"] == "h-uats" and run["seed"] == 7
    assert run["config"] == {"budget": 2, "tau": 0.003} and run["policy"] == "tiny-policy" and run["prm"] == "tiny-prm"
    assert run["answer"] == "5" and run["correct"] is True and run["naive_correct"] is True
    assert run["cost"] == 60.0 and run["iterations"] == 2 and run["n_nodes"] == 4
    assert run["extra"] == {"votes": {"5": 0.98}} and run["started_at"] <= run["ended_at"]
    nodes = store.get_nodes("r1")
    assert [n["id"] for n in nodes] == [0, 1, 2, 3]
    want = final_records(events)
    for n in nodes:
        for key, value in want[n["id"]].items():
            assert n[key] == (pytest.approx(value) if isinstance(value, float) else value), (n["id"], key)
        assert n["k"] == len(want[n["id"]]["mc_scores"])
    assert nodes[2]["ood"] is True and nodes[2]["extra_passes"] == 2 and nodes[2]["reeval_iter"] == 1
    # a node record rebuilds a Node
    fields = set(Node.__dataclass_fields__)
    assert Node(**{k: v for k, v in nodes[3].items() if k in fields}).record() == want[3]
    its = store.get_iterations("r1")
    assert [i["iteration"] for i in its] == [1, 2]
    assert its[0]["decisions"][1] == {"node_id": 2, "extra_passes": 2, "children": 0, "status": "pruned"}
    # Stored as the records' dicts (None fields left out), read back into the same records.
    assert Decision.from_dict(its[0]["decisions"][1]) == events[2].decisions[1]
    assert its[0]["step_info"] == {"width": 2, "reeval_passes": 2}
    assert StepInfo.from_dict(its[0]["step_info"]) == events[2].step_info
    assert its[1]["cost_total"] == 60.0 and its[0]["n_nodes_updated"] == 3
    hist = store.get_node_history("r1")
    assert {(h["iteration"], h["node_id"]) for h in hist} == {(1, 0), (1, 1), (1, 2), (2, 3)}


def test_round_trip_synthetic_stream(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path / "runs.db"))
    events = synthetic_events("syn", n_nodes=300, seed=3)
    record(store, events)
    want = final_records(events)
    got = {n["id"]: n for n in store.get_nodes("syn")}
    assert set(got) == set(want) and len(got) == 300
    for nid, rec in want.items():
        assert got[nid]["mc_scores"] == pytest.approx(rec["mc_scores"])
        assert got[nid]["status"] == rec["status"] and got[nid]["parent_id"] == rec["parent_id"]
        assert got[nid]["children_granted"] == rec["children_granted"]
    n_iters = sum(isinstance(e, IterationEnded) for e in events)
    assert len(store.get_iterations("syn")) == n_iters == store.get_run("syn")["iterations"]
    assert store.get_nodes("syn", since_iter=n_iters) and len(store.get_nodes("syn", since_iter=n_iters)) < 300


def test_one_transaction_per_iteration(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path / "runs.db"))
    commits: list[int] = []
    sa.event.listen(store.engine, "commit", lambda conn: commits.append(1))
    events = synthetic_events("tx", n_nodes=120, seed=1)
    record(store, events)
    n_iters = sum(isinstance(e, IterationEnded) for e in events)
    assert len(commits) == 1 + n_iters + 1  # RunStarted, each iteration, RunEnded


def test_fast_sqlite_path_stores_what_sqlalchemy_stores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The prepared-statement upsert (the log's hot path on SQLite) against SQLAlchemy's own statement:
    the same events give byte-identical node, history and iteration tables, JSON and booleans included."""
    import storage.recorder as store_mod

    events = synthetic_events("same", n_nodes=150, seed=4, method="h-uats")
    dumps = []
    for fast in (True, False):
        monkeypatch.setattr(store_mod, "_FAST", fast)
        path = tmp_path / f"fast-{fast}.db"
        store = RunStore(str(path))
        record(store, events)
        store.close()
        with sqlite3.connect(path) as conn:
            dumps.append(
                {t: conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2, 3").fetchall() for t in ("nodes", "node_history")}
                | {
                    "iterations": conn.execute(
                        "SELECT run_id, iteration, decisions, step_info, cost_step, cost_total, "
                        "n_nodes_updated FROM iterations ORDER BY 2"
                    ).fetchall(),
                    "runs": conn.execute(
                        "SELECT status, answer, naive_answer, correct, naive_correct, cost, "
                        "iterations, n_nodes, error, extra FROM runs"
                    ).fetchall(),
                }
            )
    fast, slow = dumps
    assert len(fast["nodes"]) == len(final_records(events)) and fast["node_history"] and fast["iterations"]
    assert any(str(row[9]).startswith("[0.") for row in fast["nodes"])  # real mc_scores JSON compared
    assert fast["runs"][0][0] == "finished" and fast["runs"][0][6] > 0  # the outcome UPDATE compared too
    assert fast == slow


def test_failed_run_keeps_its_nodes(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path / "runs.db"))
    events = synthetic_events("bad", n_nodes=200, seed=2, fail_after=2)
    assert isinstance(events[-2], NodesUpdated)  # the crash came mid-iteration, nodes still buffered
    record(store, events)
    run = store.get_run("bad")
    assert run["status"] == "failed" and "synthetic crash" in run["error"] and run["ended_at"]
    assert len(store.get_nodes("bad")) == len(final_records(events))
    assert len(store.get_iterations("bad")) == 2


def test_cancel_and_mark_failed(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path / "runs.db"))
    store.register_run("q1", method="rebase", problem_id="p", question="?", seed=0, config={"budget": 4})
    assert store.get_run("q1")["status"] == "queued"
    assert store.cancel_requested("q1") is False
    assert store.request_cancel("q1") is True
    events = _hand_events("q1")
    sub = store.subscriber()
    sub(events[0])  # RunStarted on a queued row keeps the cancel flag
    assert store.get_run("q1")["status"] == "running" and store.cancel_requested("q1") is True
    assert store.get_run("q1")["worker_pid"] == os.getpid()
    sub(events[1])
    sub(RunEnded(status="cancelled", cost=40.0, iterations=1))
    assert store.get_run("q1")["status"] == "cancelled" and len(store.get_nodes("q1")) == 3
    assert store.request_cancel("q1") is False  # already over
    assert store.mark_failed("q1", "late") is False
    store.register_run("q2", method="rebase", problem_id="p", question="?")
    assert store.mark_failed("q2", "worker process died") is True
    assert store.get_run("q2")["status"] == "failed" and store.get_run("q2")["error"] == "worker process died"
    with pytest.raises(StorageError) as exc:
        store.request_cancel("nope")
    assert exc.value.field == "run"


def test_reused_run_id_is_refused(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path / "runs.db"))
    record(store, _hand_events("dup"))
    with pytest.raises(StorageError, match="already exists"):
        store.subscriber()(_hand_events("dup")[0])


def test_events_out_of_order_raise(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path / "runs.db"))
    with pytest.raises(RuntimeError, match="before RunStarted"):
        store.subscriber()(NodesUpdated(iteration=1, nodes=[]))


def test_readers_filters_and_missing(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path / "runs.db"))
    record(store, _hand_events("a1"))
    record(store, synthetic_events("b1", n_nodes=30, method="rebase", problem_id="arith-1"))
    assert {r["run_id"] for r in store.list_runs()} == {"a1", "b1"}
    assert [r["run_id"] for r in store.list_runs(method="rebase")] == ["b1"]
    assert {r["run_id"] for r in store.list_runs(problem_id="arith-1")} == {"a1", "b1"}
    assert store.list_runs(status="failed") == []
    assert len(store.list_runs(limit=1)) == 1
    assert store.find_run("a")["run_id"] == "a1"
    assert store.distinct_values("method") == ["h-uats", "rebase"]
    with pytest.raises(StorageError, match="no run zz") as exc:
        store.get_run("zz")
    assert exc.value.field == "run" and isinstance(exc.value, ValueError)
    with pytest.raises(StorageError):
        store.get_nodes("zz")
    assert store.get_iterations("zz") == []


def test_stars_and_notes(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path / "runs.db"))
    record(store, _hand_events("s1"))
    store.star_case("s1", 2, case_kind="low score / high variance")
    store.set_note("s1", 2, "confident-but-wrong sibling")
    store.set_note("s1", note="whole run looks fine")
    star = store.get_star("s1", 2)
    assert star["starred"] is True and star["note"] == "confident-but-wrong sibling"
    assert star["case_kind"] == "low score / high variance"
    assert len(store.list_stars("s1")) == 2 and len(store.list_stars(starred_only=True)) == 1
    store.star_case("s1", 2, starred=False)
    assert store.get_star("s1", 2)["note"] == "confident-but-wrong sibling"  # unstarring keeps the note
    with pytest.raises(StorageError) as exc:
        store.star_case("s1", 99)
    assert exc.value.field == "node"


@pytest.mark.parametrize(
    "bad", ["notadialect://x/y", "postgresql+nosuchdriver://u@h/db", "://", "sqlite:////proc/definitely/not/here.db"]
)
def test_bad_url_names_it(bad: str, tmp_path: Path) -> None:
    with pytest.raises(StorageError) as exc:
        RunStore(bad)
    assert exc.value.field == "db" and isinstance(exc.value, ValueError)
    assert "db:" in str(exc.value)


def test_unwritable_path_leaves_nothing(tmp_path: Path) -> None:
    blocker = tmp_path / "afile"
    blocker.write_text("not a folder")
    with pytest.raises(StorageError, match="afile"):
        RunStore(str(blocker / "sub" / "runs.db"))
    assert blocker.read_text() == "not a folder"
    # a file that is not a database: refused and left untouched
    notdb = tmp_path / "notes.txt"
    notdb.write_text("hello " * 1000)
    with pytest.raises(StorageError, match="notes.txt"):
        RunStore(str(notdb))
    assert notdb.read_text() == "hello " * 1000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "notes.txt"]
    # a folder given as the path
    with pytest.raises(StorageError, match="folder"):
        RunStore(str(tmp_path))


def test_new_folders_are_created_and_removed_on_failure(tmp_path: Path, monkeypatch) -> None:
    store = RunStore(str(tmp_path / "a" / "b" / "runs.db"))
    assert (tmp_path / "a" / "b" / "runs.db").exists()
    store.close()

    def boom(*a, **k):
        raise sa.exc.OperationalError("CREATE TABLE", {}, Exception("disk I/O error"))

    monkeypatch.setattr("storage.schema.metadata.create_all", boom)
    with pytest.raises(StorageError, match="disk I/O error"):
        RunStore(str(tmp_path / "c" / "d" / "runs.db"))
    assert not (tmp_path / "c").exists()


def test_memory_and_sqlite_url(tmp_path: Path) -> None:
    mem = RunStore("sqlite://")
    record(mem, _hand_events("m"))
    assert len(mem.get_nodes("m")) == 4
    url_store = RunStore(f"sqlite:///{tmp_path / 'u.db'}")
    record(url_store, _hand_events("u"))
    assert RunStore(str(tmp_path / "u.db")).get_run("u")["status"] == "finished"


def test_upsert_compiles_for_postgresql() -> None:
    """No PostgreSQL server here: check that the statements we send compile for its dialect."""
    from sqlalchemy.dialects import postgresql
    from sqlalchemy.dialects.postgresql import insert as pg_insert

    from storage import schema as S

    stmt = pg_insert(S.nodes)
    stmt = stmt.on_conflict_do_update(
        index_elements=["run_id", "node_id"],
        set_={c.name: stmt.excluded[c.name] for c in S.nodes.columns if c.name not in ("run_id", "node_id")},
    )
    sql = str(stmt.compile(dialect=postgresql.dialect()))
    assert "ON CONFLICT (run_id, node_id) DO UPDATE" in sql
    for table in S.metadata.sorted_tables:
        str(sa.schema.CreateTable(table).compile(dialect=postgresql.dialect()))


def test_training_curves_round_trip(tmp_path):
    from storage import RunStore

    store = RunStore(str(tmp_path / "curves.db"))
    for rnd in range(3):
        store.append_curve("controller-seed0", {"round": rnd, "mean_reward": 0.1 * rnd})
    store.append_curve("controller-seed0", {"round": 1, "mean_reward": 0.5})  # a rewritten point replaces the old
    store.append_curve("other", {"x": 1})
    curve = store.get_curve("controller-seed0")
    assert [p["step"] for p in curve] == [0, 1, 2]
    assert curve[1]["mean_reward"] == 0.5
    assert store.list_curves() == ["controller-seed0", "other"]
    assert store.get_curve("other")[0]["step"] == 0


_OPEN_AT = """
import sys, time
from storage import RunStore
path, start = sys.argv[1], float(sys.argv[2])
while time.time() < start:  # spin, not sleep: the race needs them within microseconds
    pass
try:
    RunStore(path).close()
except Exception as exc:
    print(exc)
    sys.exit(1)
"""


def test_processes_opening_one_new_run_log_at_once_all_succeed(tmp_path: Path) -> None:
    """Eval shards, or the app beside a worker, may open the same new SQLite file at the same moment: each
    must wait its turn for the WAL switch and the schema, none may fail (or delete the file under the
    others, which they then see as 'disk I/O error')."""
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    for round_ in range(4):
        path = tmp_path / f"shared{round_}.db"
        start = time.time() + 1.5  # all three past their imports, then they race for the new file
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", _OPEN_AT, str(path), str(start)],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for _ in range(3)
        ]
        outs = [p.communicate(timeout=60)[0] for p in procs]
        assert [p.returncode for p in procs] == [0, 0, 0], outs
        store = RunStore(str(path))
        try:
            assert {"runs", "nodes"} <= set(sa.inspect(store.engine).get_table_names())
        finally:
            store.close()


def test_an_older_run_log_keeps_its_step_numbers_under_step_info(tmp_path: Path) -> None:
    """iterations.budget held each step's StepInfo before "budget" came to mean N alone: opening such a run log
    for writing renames the column (storage/migrations.py RENAMES), and its rows read back unchanged."""
    path = tmp_path / "old.db"
    store = RunStore(str(path))
    record(store, _hand_events())
    store.close()
    with sqlite3.connect(path) as conn:  # what the iterations table looked like before the rename
        conn.execute("ALTER TABLE iterations RENAME COLUMN step_info TO budget")
    store = RunStore(str(path))
    its = store.get_iterations("r1")
    assert its[0]["step_info"] == {"width": 2, "reeval_passes": 2} and its[1]["step_info"] == {
        "width": 1,
        "reeval_passes": 0,
    }
    with sqlite3.connect(path) as conn:
        assert "budget" not in {row[1] for row in conn.execute("PRAGMA table_info(iterations)")}
    store.close()
