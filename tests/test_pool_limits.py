"""What one client can make the worker pool do is bounded: paused runs do not hold the workers queued runs
wait for and end after a pause timeout; the queue is limited per server and per client session; the
number of paused runs is limited."""

from __future__ import annotations

import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from storage import RunStore
from testkit.polling import until
from testkit.pool_requests import register_request, search_job
from uats_core.cancel import SearchCancelled
from uats_core.config import SearchConfig
from ui.choices import ARITH
from ui.jobs.pool import PoolLimits, QueueFull, RunRequest, WorkerPool, session_of
from ui.jobs.warm import ModelCache, execute
from ui.tabs.run_form import dataset_problems


def _req(store: RunStore, paused: bool = False, register: bool = True, **cfg: Any) -> RunRequest:
    prob = dataset_problems(ARITH)[0]
    config = SearchConfig(**{"budget": 4, "max_iterations": 3, **cfg})
    req = search_job(uuid.uuid4().hex, store.location, prob, config.to_dict())
    if register:
        register_request(store, req, paused)
    return req


def test_a_paused_run_does_not_block_a_queued_run(tmp_path: Path) -> None:
    """The report: two paused runs held both workers for over 70 s while five later runs stayed queued."""
    store = RunStore(str(tmp_path / "runs.db"))
    pool = WorkerPool(store, max_workers=1, poll_s=0.2, limits=PoolLimits(max_paused=1, pause_timeout_s=3600))
    try:
        held = _req(store, paused=True)
        pool.submit(held)
        assert until(lambda: store.waiting_paused(held.run_id), 180), store.get_run(held.run_id)
        later = _req(store)
        pool.submit(later)
        assert until(lambda: store.get_run(later.run_id)["status"] == "finished", 180), store.get_run(later.run_id)
        assert store.get_run(held.run_id)["status"] == "running" and store.waiting_paused(held.run_id)
        store.resume_run(held.run_id)
        assert until(lambda: store.get_run(held.run_id)["status"] == "finished", 180)
    finally:
        pool.shutdown(cancel=True, timeout_s=30)


def test_the_pause_timeout_ends_a_run_cancelled_with_its_nodes(tmp_path: Path) -> None:
    """In the worker's own code (ui.jobs.warm.execute), with the embedded world's models: a run left paused
    ends 'cancelled' with the reason, keeping the nodes of the step it was granted before it waited."""
    store = RunStore(str(tmp_path / "runs.db"))
    req = _req(store, paused=True)
    store.step_run(req.run_id)  # one iteration, then it waits
    assert execute(req, ModelCache(), store, pause_timeout_s=0.5) is None
    run = store.get_run(req.run_id)
    assert run["status"] == "cancelled" and "paused for 0.5 s without a step or resume" in run["error"]
    assert run["iterations"] == 1 and run["n_nodes"] == len(store.get_nodes(req.run_id)) > 1
    with pytest.raises(SearchCancelled, match="pause timeout"):  # the gate alone, as a worker calls it
        other = _req(store, paused=True)
        store.wait_turn(other.run_id, poll_s=0.01, pause_timeout_s=0.05)


def test_the_queue_is_limited_per_server_and_per_session(tmp_path: Path) -> None:
    """The report: 50 runs were accepted in 13.5 s. A refused submission writes nothing."""
    store = RunStore(str(tmp_path / "runs.db"))
    pool = WorkerPool(store, limits=PoolLimits(max_queued=3, max_queued_per_session=2), drive=False)
    try:

        def submit(session: str) -> str:
            req = _req(store, register=False)
            pool.submit(req, session=session, register=lambda: register_request(store, req))
            return req.run_id

        a = [submit("A"), submit("A")]
        with pytest.raises(
            QueueFull,
            match=r"^queue: you already have 2 jobs queued \(the limit per user, in all your tabs, "
            r"--max-queued-per-session, is 2\)",
        ):
            submit("A")
        submit("B")
        with pytest.raises(
            QueueFull,
            match=r"^queue: 3 jobs are already queued on this server \(the limit, "
            r"--max-queued, is 3\)",
        ):
            submit("C")
        assert len(store.list_runs()) == 3 and len(pool.queued()) == 3
        store.request_cancel(a[0])
        pool.pump()  # a cancelled queued run leaves the queue: its session may queue again
        assert store.get_run(a[0])["status"] == "cancelled"
        submit("A")
    finally:
        pool.shutdown(cancel=True, timeout_s=5)


def test_the_queue_limit_counts_all_tabs_of_a_user_together(tmp_path: Path) -> None:
    """The report: one signed-in user from 5 tabs filled the whole queue (18 accepted, 16 queued) and the next
    user was refused. The key is the pool's, from each tab's request (a gr.Request's `username` and
    `session_hash`, the two attributes ui.jobs.pool.session_of reads)."""
    store = RunStore(str(tmp_path / "runs.db"))
    pool = WorkerPool(store, limits=PoolLimits(max_queued=16, max_queued_per_session=4), drive=False)
    try:

        def submit(request: Any) -> bool:
            req = _req(store, register=False)
            try:
                pool.submit(req, session=session_of(request), register=lambda: register_request(store, req))
            except QueueFull:
                return False
            return True

        alice_tabs = [SimpleNamespace(username="alice", session_hash=f"alice-tab-{i}") for i in range(5)]
        assert sum(submit(alice_tabs[i % 5]) for i in range(18)) == 4
        assert submit(SimpleNamespace(username="bob", session_hash="bob-tab"))  # the next user is not refused
        # without a login a page load is all there is to tell clients apart: each counts on its own
        pages = [SimpleNamespace(username=None, session_hash=f"page-{i}") for i in range(2)]
        assert [submit(pages[0]) for _ in range(5)] == [True] * 4 + [False] and submit(pages[1])
        assert len(pool.queued()) == 10 == len(store.list_runs())
    finally:
        pool.shutdown(cancel=True, timeout_s=5)


def test_the_number_of_paused_runs_is_limited(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path / "runs.db"))
    pool = WorkerPool(store, limits=PoolLimits(max_paused=1), drive=False)
    try:
        first = _req(store, register=False)
        pool.submit(first, register=lambda: register_request(store, first, paused=True), paused=True)
        second = _req(store, register=False)
        with pytest.raises(
            QueueFull,
            match=r"^pause: 1 runs are already paused on this server \(the limit, "
            r"--max-paused, is 1\)",
        ):
            pool.submit(second, register=lambda: register_request(store, second), paused=True)
        third = _req(store)
        pool.submit(third)
        with pytest.raises(QueueFull, match="^pause: "):
            pool.pause_run(third.run_id)
        with pytest.raises(QueueFull, match="^pause: "):
            pool.step_run(third.run_id)
        assert pool.step_run(first.run_id)  # the paused run itself may step
        store.resume_run(first.run_id)
        assert pool.pause_run(third.run_id) and store.is_paused(third.run_id)
        assert [r["run_id"] for r in store.list_runs()].count(second.run_id) == 0
    finally:
        pool.shutdown(cancel=True, timeout_s=5)
