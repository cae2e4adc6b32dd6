"""The case finder: its ranking over stored H-UATS runs and their counterfactuals without uncertainty (answers that
differ, by direction; ui/views/counterfactual.py), what it reads (bounded), and the batch that makes pairs, a job of
the worker pool: bounded before anything is written, queued within the pool's limits, run in a worker, cancellable
whether queued or running, each search a run of its own that stays in the run log."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from storage import RunStore
from storage.batches import create_batch_job, get_batch_job
from testkit.doubles import CallbackPRMDouble, ScriptedPolicyDouble, WorkerPoolDouble
from testkit.polling import until
from uats_core.config import ConfigError, SearchConfig
from uats_core.paths import WORLD_POLICY_B
from uats_core.runner import DEFAULT_PRM
from ui.access import requester
from ui.choices import ARITH, EMBEDDED, server_choices
from ui.jobs.case_batch import (
    MAX_BATCH_PROBLEMS,
    MAX_BATCH_RUNS,
    CaseBatchRequest,
    batch_label,
    cancel_batch,
    execute_batch,
    queue_case_batch,
)
from ui.jobs.pool import PoolLimits, QueueFull, WorkerPool
from ui.jobs.warm import ModelCache
from ui.tabs.case_finder import batch_requests
from ui.tabs.search_layout import CONFIG_FIELDS
from ui.views.counterfactual import OTHER, RIGHT_TO_WRONG, WRONG_TO_RIGHT, find_cases, found_rows, found_summary
from ui.views.run_status import NO_ANSWER
from ui.views.treedata import RunData

needs_models = pytest.mark.skipif(not (DEFAULT_PRM / "config.json").is_file(), reason="embedded models missing")


# ------------------------------------------------------------------------------------------------ ranking
class _Log:
    """The run log's list_runs as the finder calls it (method, status, limit; newest first)."""

    def __init__(self, runs: list[dict[str, Any]]) -> None:
        self.runs = runs
        self.limits: list[int] = []

    def list_runs(self, method: str, status: str, limit: int) -> list[dict[str, Any]]:
        self.limits.append(limit)
        rows = [r for r in self.runs if r["method"] == method and r["status"] == status]
        return sorted(rows, key=lambda r: -r["started_at"])[:limit]


def _pair(
    problem: str,
    answers: tuple[str | None, str | None],
    correct: tuple[bool | None, bool | None],
    started: float,
    nodes: int = 50,
) -> list[dict[str, Any]]:
    """An H-UATS run of the finder's (step_streams) and its counterfactual (prm_scoring='off')."""
    base = {
        "problem_id": problem,
        "seed": 0,
        "policy": "pol",
        "prm": "prm",
        "status": "finished",
        "n_nodes": nodes,
        "method": "h-uats",
    }
    return [
        {
            **base,
            "run_id": f"u-{problem}-{started}",
            "answer": answers[0],
            "correct": correct[0],
            "started_at": started,
            "config": {"budget": 16, "step_streams": True, "prm_scoring": "mc"},
        },
        {
            **base,
            "run_id": f"c-{problem}-{started}",
            "answer": answers[1],
            "correct": correct[1],
            "started_at": started + 0.5,
            "config": {"budget": 16, "step_streams": True, "prm_scoring": "off"},
        },
    ]


def _no_tree(rid: str) -> RunData:
    return RunData({"run_id": rid}, [])


def test_cases_are_pairs_whose_answer_uncertainty_changed_ranked_by_direction() -> None:
    runs = (
        _pair("p1", ("5", "6"), (False, True), 1)
        + _pair("p2", ("5", "6"), (True, False), 2)
        + _pair("p3", ("5", " 5 "), (True, True), 3)
        + _pair("p4", ("7", "8"), (False, False), 4)
        + _pair("p5", ("5", None), (True, None), 5)
        + _pair("p1", ("5", "5"), (True, True), 0)
    )  # an older pair on p1's key: the newest replaces it
    plain = {
        "problem_id": "p9",
        "seed": 0,
        "policy": "pol",
        "prm": "prm",
        "status": "finished",
        "method": "h-uats",
        "run_id": "plain",
        "answer": "3",
        "started_at": 9,
        "config": {"budget": 16},
    }  # not the finder's
    log = _Log([*runs, plain])
    found = find_cases(log, load=_no_tree, runs_scanned=77)
    # wrong → right first (p2), then right → wrong (p1), then another answer (p4: both wrong; p5: the counterfactual
    # answered nothing, ungraded); p3's answers agree
    assert [c.run["problem_id"] for c in found.cases] == ["p2", "p1", "p4", "p5"]
    assert (found.pairs, found.problems) == (5, 5) and log.limits == [77]
    assert found.by_direction == {WRONG_TO_RIGHT: 1, RIGHT_TO_WRONG: 1, OTHER: 2}
    rows = found_rows(found)
    assert rows[0] == [1, "p2", "pol · prm", "16 · 0", "5 (right)", "6 (wrong)", WRONG_TO_RIGHT, "–"]
    assert rows[3][5] == NO_ANSWER  # p5's counterfactual gave no answer: said as the run bar says it
    assert found_summary(found) == (
        "uncertainty changed the answer in 4 of 5 pair(s) on 5 problem(s): 1 wrong → "
        "right, 1 right → wrong, 2 to another answer"
    )


def test_what_the_finder_reads_is_bounded_by_nodes() -> None:
    """The trees of differing pairs are read newest first until NODES_READ; a pair over what is left is still a case,
    where it parts not given, and counted."""
    runs = (
        _pair("big", ("5", "6"), (True, False), 3, nodes=450)
        + _pair("mid", ("5", "6"), (True, False), 2, nodes=300)
        + _pair("new", ("5", "6"), (True, False), 4)
    )
    loaded: list[str] = []

    def load(rid: str) -> RunData:
        loaded.append(rid)
        return _no_tree(rid)

    found = find_cases(_Log(runs), load=load, nodes_read=1000)
    assert loaded == ["u-new-4", "c-new-4", "u-big-3", "c-big-3"] and found.unread == 1 and len(found.cases) == 3
    assert found_summary(found).endswith(
        "where 1 of them part is not given (their trees are over 400,000 nodes a search: the newest are read first)"
    )


# ------------------------------------------------------------------------------------------------ the batch
def _form(**changes: Any) -> dict[str, Any]:
    config = SearchConfig().to_dict()
    return {
        **{k: config[k] for k in CONFIG_FIELDS},
        "budget": 4,
        "max_iterations": 6,
        "policy": EMBEDDED,
        "prm": EMBEDDED,
        "prm_kind": "detect",
        "policy_opts": "",
        "prm_opts": "",
        "dataset": ARITH,
        "problem": "arith-test-0",
        "free_question": "",
        "free_answer": "",
        **changes,
    }


def _ctx(store: RunStore, pool: Any = None) -> SimpleNamespace:
    return SimpleNamespace(store=store, pool=pool or WorkerPoolDouble(), choices=server_choices())


def _batch_rows(store: RunStore) -> int:
    with store.engine.connect() as conn:
        return int(conn.exec_driver_sql("SELECT count(*) FROM batch_jobs").scalar())


def test_a_batch_is_problems_times_both_policies_times_a_run_and_its_counterfactual() -> None:
    store = RunStore("sqlite://")
    runs = batch_requests(_ctx(store), _form(budget=8), 3.0)  # gr.Number's float
    assert len(runs) == 12 and len({r.run_id for r in runs}) == 12
    assert [
        (r.request.policy, r.search.problem.id, r.search.config.method, r.search.config.prm_scoring) for r in runs[:4]
    ] == [
        (None, "arith-test-0", "h-uats", "mc"),
        (None, "arith-test-0", "h-uats", "off"),
        (None, "arith-test-1", "h-uats", "mc"),
        (None, "arith-test-1", "h-uats", "off"),
    ]
    assert all(r.search.config.step_streams for r in runs)
    assert {r.request.policy for r in runs[6:]} == {str(WORLD_POLICY_B)} and {r.search.config.budget for r in runs} == {
        8
    }


@pytest.mark.parametrize("problems", [0, MAX_BATCH_PROBLEMS + 1, 2.5, True, "ten"])
def test_a_bad_number_of_problems_is_one_line_and_queues_nothing(problems: Any) -> None:
    store = RunStore("sqlite://")
    ctx = _ctx(store)
    with pytest.raises(ConfigError, match=r"^problems in a batch: give a whole number of problems from 1 to 50"):
        batch_requests(ctx, _form(), problems)
    assert ctx.pool.submitted == [] and _batch_rows(store) == 0


def test_a_bad_form_value_names_its_field_before_anything_is_queued() -> None:
    store = RunStore("sqlite://")
    with pytest.raises(ConfigError, match=r"^budget: "):
        batch_requests(_ctx(store), _form(budget=10**9), 2)
    assert _batch_rows(store) == 0


def test_queueing_is_bounded_one_batch_at_a_time_per_user(tmp_path: Path) -> None:
    """The report: a batch blocked every other batch on the server until a restart. Now one going per owner, and
    another owner's batch is queued beside it."""
    store = RunStore(str(tmp_path / "runs.db"))
    pool = WorkerPool(store, drive=False, limits=PoolLimits(max_queued_per_session=1))
    try:
        runs = batch_requests(_ctx(store), _form(), 1)
        with pytest.raises(ConfigError, match=r"^problems in a batch: the batch holds no search"):
            queue_case_batch(store, pool, [], {})
        with pytest.raises(
            ConfigError, match=rf"^problems in a batch: {MAX_BATCH_RUNS + 4} searches is above the maximum"
        ):
            queue_case_batch(store, pool, runs * (MAX_BATCH_RUNS // 4 + 1), {})
        assert _batch_rows(store) == 0 and pool.queued() == []
        job = queue_case_batch(store, pool, runs, {"problems": 1}, owner="user:ann", session="user:ann")
        assert pool.queued() == [job] and get_batch_job(store, job)["status"] == "queued"
        with pytest.raises(
            ConfigError, match=rf"^batch: your case batch {job[:8]} is still going \(at most 1 a user\)"
        ):
            queue_case_batch(store, pool, runs, {}, owner="user:ann", session="user:ann")
        other = queue_case_batch(store, pool, runs, {}, owner="user:bob", session="user:bob")
        assert pool.queued() == [job, other] and _batch_rows(store) == 2
        assert store.list_runs() == []  # a batch's runs are registered as they start
    finally:
        pool.shutdown(timeout_s=5)


def _finder(store: RunStore) -> Any:
    """The case finder's handlers over the run log, with stand-ins for its components (they are only dict keys)."""
    from ui.tabs.case_finder import FinderParts, _Finder

    return _Finder(
        SimpleNamespace(store=store, notice="notice"),
        FinderParts(
            *("state", "find", "problems", "batch", "cancel", "progress", "summary", "table", "batches", "accordion")
        ),
    )


def _listed(said: dict[str, Any]) -> list[list[Any]]:
    return said["batches"]["value"]


def test_a_users_batches_are_listed_for_them_alone_and_cancelled_from_the_list(tmp_path: Path) -> None:
    """Issue 50, item 5: the case finder lists the user's batches, past and going (state, counts, started time),
    newest first, on any page of theirs, a reloaded one too; another user never sees them, and cannot cancel one
    even by its id; the owner cancels the one picked in the list."""
    from storage.batches import end_batch_job
    from ui.tabs.page_state import FinderState

    store = RunStore(str(tmp_path / "runs.db"))
    pool = WorkerPool(store, drive=False)
    try:
        create_batch_job(store, "p" * 32, 8, {}, owner="user:ann")  # a past batch of ann's, ended
        end_batch_job(store, "p" * 32, "finished")
        runs = batch_requests(_ctx(store), _form(), 1)
        job = queue_case_batch(store, pool, runs, {}, owner="user:ann")
        other = queue_case_batch(store, pool, runs, {}, owner="user:bob")
        finder = _finder(store)
        ann, bob = (
            SimpleNamespace(username="ann", session_hash="ann-1"),
            SimpleNamespace(username="bob", session_hash="b"),
        )
        page = FinderState()
        rows = _listed(finder.on_open(page, ann))
        assert [r[:4] for r in rows] == [[job[:8], "queued", "0 of 4", 0], ["pppppppp", "finished", "0 of 8", 0]]
        assert all(len(r[4]) == 19 for r in rows)  # started: YYYY-MM-DD HH:MM:SS
        bobs = FinderState()
        assert [r[0] for r in _listed(finder.on_open(bobs, bob))] == [other[:8]]
        forged = FinderState(picked=job)  # bob's page naming ann's batch: refused as if it did not exist
        said = finder.on_cancel(forged, bob)
        assert "is not going any more" in said["notice"]["value"] and not get_batch_job(store, job)["cancel_requested"]
        assert [r[0] for r in _listed(said)] == [other[:8]]
        reloaded = FinderState()  # ann reloads: a fresh page and session, the same user
        later = SimpleNamespace(username="ann", session_hash="ann-2")
        assert [r[0] for r in _listed(finder.on_open(reloaded, later))] == [job[:8], "pppppppp"]
        finder.on_pick(reloaded, SimpleNamespace(index=[0, 2]))
        assert reloaded.picked == job
        said = finder.on_cancel(reloaded, later)
        assert f"cancel requested for case batch {job[:8]}" in said["notice"]["value"]
        assert _listed(said)[0][1] == "queued (cancel asked)" and not get_batch_job(store, other)["cancel_requested"]
        pool.pump()
        assert [r[1] for r in _listed(finder.on_open(reloaded, later))] == ["cancelled", "finished"]
        assert get_batch_job(store, other)["status"] == "queued"
    finally:
        pool.shutdown(timeout_s=5)


def test_without_a_login_a_batch_is_its_browser_sessions() -> None:
    """No login: a page's batches are its session's; another session lists none of them."""
    from ui.tabs.page_state import FinderState

    store = RunStore("sqlite://")
    create_batch_job(store, "s" * 32, 4, {}, owner=requester(SimpleNamespace(username=None, session_hash="one")))
    finder = _finder(store)
    assert [
        r[0] for r in _listed(finder.on_open(FinderState(), SimpleNamespace(username=None, session_hash="one")))
    ] == ["ssssssss"]
    assert _listed(finder.on_open(FinderState(), SimpleNamespace(username=None, session_hash="two"))) == []


def test_a_batch_is_its_owners_from_any_page_and_no_one_elses(tmp_path: Path) -> None:
    """The report: the batch's id lived in the page that queued it; after a reload not even its owner could
    cancel it. A page is a gr.Request's `username` and `session_hash` (what ui.access.requester reads)."""
    from ui.tabs.page_state import FinderState

    store = RunStore(str(tmp_path / "runs.db"))
    pool = WorkerPool(store, drive=False)
    try:
        job = queue_case_batch(store, pool, batch_requests(_ctx(store), _form(), 1), {}, owner="user:ann")
        finder = _finder(store)
        reloaded = SimpleNamespace(username="ann", session_hash="a-page-loaded-later")
        followed = finder.on_tick(FinderState(), request=reloaded)  # a fresh page of the owner follows it
        assert followed["state"].job == job and f"case batch {job[:8]}&#58; queued" in followed["progress"]
        bob = SimpleNamespace(username="bob", session_hash="bob-page")
        said = finder.on_cancel(FinderState(), bob)
        assert "no case batch of yours is going" in said["notice"]["value"]
        assert not get_batch_job(store, job)["cancel_requested"]
        said = finder.on_cancel(FinderState(), reloaded)
        assert f"cancel requested for case batch {job[:8]}" in said["notice"]["value"]
        assert get_batch_job(store, job)["cancel_requested"]
        pool.pump()
        assert get_batch_job(store, job)["status"] == "cancelled"
    finally:
        pool.shutdown(timeout_s=5)


def test_a_batch_over_the_pools_queue_limit_writes_nothing(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path / "runs.db"))
    pool = WorkerPool(store, drive=False, limits=PoolLimits(max_queued=1))
    try:
        store.register_run("q" * 32, method="rebase", problem_id="p", question="q")
        pool.submit(SimpleNamespace(job_id="q" * 32))  # one job waiting already: the queue is full
        with pytest.raises(QueueFull, match=r"^queue: 1 jobs are already queued"):
            queue_case_batch(store, pool, batch_requests(_ctx(store), _form(), 1), {})
        assert _batch_rows(store) == 0
    finally:
        pool._pending.clear()
        pool.shutdown(timeout_s=5)


def test_a_batch_cancelled_while_queued_ends_without_a_search(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path / "runs.db"))
    pool = WorkerPool(store, drive=False)
    try:
        job = queue_case_batch(store, pool, batch_requests(_ctx(store), _form(), 1), {})
        assert cancel_batch(store, job)
        pool.pump()  # the pool's tick: a queued job whose cancel was asked ends there, whether or not a worker is free
        row = get_batch_job(store, job)
        assert (row["status"], row["error"]) == ("cancelled", "cancelled while queued") and pool.queued() == []
        assert store.list_runs() == [] and not cancel_batch(store, job)
    finally:
        pool.shutdown(timeout_s=5)


def test_a_cancel_stops_the_search_going_and_starts_no_other(tmp_path: Path) -> None:
    """The worker's own code with a PRM double that cancels the batch during its first search: that search ends
    cancelled, kept with its nodes, and no further search is registered."""
    store = RunStore(str(tmp_path / "runs.db"))
    runs = batch_requests(_ctx(store), _form(), 1)
    req = CaseBatchRequest(job_id="b" * 32, runs=tuple(runs))
    create_batch_job(store, req.job_id, len(runs), {})
    prm = CallbackPRMDouble(lambda n: n == 2 and cancel_batch(store, req.job_id))
    cache = ModelCache(lambda _: (ScriptedPolicyDouble(depth=6), prm))
    assert execute_batch(req, cache, store) is None
    row = get_batch_job(store, req.job_id)
    assert (row["status"], row["error"], row["done"]) == ("cancelled", "cancelled after 1 of 4 searches", 1)
    [run] = store.list_runs()
    assert run["run_id"] == runs[0].run_id and run["status"] == "cancelled" and run["label"] == batch_label(req.job_id)
    assert run["n_nodes"] > 0 and len(store.get_nodes(run["run_id"])) > 1


def test_a_batch_whose_worker_died_ends_its_search_too(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path / "runs.db"))
    runs = batch_requests(_ctx(store), _form(), 1)
    req = CaseBatchRequest(job_id="d" * 32, runs=tuple(runs))
    create_batch_job(store, req.job_id, len(runs), {})
    runs[0].register(store, label=batch_label(req.job_id))
    from storage.batches import batch_job_progress, start_batch_job

    assert start_batch_job(store, req.job_id) and batch_job_progress(store, req.job_id, 0, 0, runs[0].run_id)
    assert req.end(store, "worker process exited (code -9) before the job ended")
    assert (
        get_batch_job(store, req.job_id)["status"] == "failed" and store.get_run(runs[0].run_id)["status"] == "failed"
    )


@needs_models
def test_a_batch_runs_in_a_worker_and_its_pairs_are_stored_runs(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path / "runs.db"))
    pool = WorkerPool(store, max_workers=1, poll_s=0.2)
    try:
        job = queue_case_batch(store, pool, batch_requests(_ctx(store), _form(), 1), {"problems": 1}, owner="ann")
        assert until(lambda: get_batch_job(store, job)["status"] not in ("queued", "running"), 600)
        row = get_batch_job(store, job)
        assert (row["status"], row["done"], row["total"], row["failed"]) == ("finished", 4, 4, 0)
        assert row["worker_pid"] not in (None, os.getpid())  # run in a worker, not in the app
        runs = store.list_runs()
        assert (
            len(runs) == 4
            and {r["label"] for r in runs} == {batch_label(job)}
            and {r["owner"] for r in runs} == {"ann"}
        )
        assert {(r["config"]["prm_scoring"], r["policy"].endswith("arith-policy-b")) for r in runs} == {
            ("mc", False),
            ("off", False),
            ("mc", True),
            ("off", True),
        }
        assert all(r["status"] == "finished" for r in runs)
        assert find_cases(store).pairs == 2  # both pairs are the finder's to read
    finally:
        pool.shutdown(cancel=True, timeout_s=30)


def test_a_restart_ends_the_batches_of_a_server_that_died(tmp_path: Path) -> None:
    import socket

    import sqlalchemy as sa

    from storage import schema as S
    from storage.batches import mark_dead_batch_jobs

    store = RunStore(str(tmp_path / "runs.db"))
    create_batch_job(store, "g" * 32, 4, {})
    create_batch_job(store, "h" * 32, 4, {})
    gone = f"{socket.gethostname()}|{2**22 + 7}|"  # a pid no process of this machine holds
    with store.engine.begin() as conn:
        conn.execute(sa.update(S.batch_jobs).where(S.batch_jobs.c.job_id == "g" * 32).values(server=gone))
    assert mark_dead_batch_jobs(store) == ["g" * 32]
    row = get_batch_job(store, "g" * 32)
    assert row["status"] == "failed" and f"the server that ran it ({gone}) stopped" == row["error"]
    assert get_batch_job(store, "h" * 32)["status"] == "queued"  # this process's batch lives on
