"""Warm workers: the same (policy, PRM) pair is loaded once and reused across runs, a different pair is
loaded in its place, and a worker that dies mid-run leaves its run failed with the nodes written so far."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from storage import RunStore
from testkit.pool_requests import register_request, search_job
from uats_core.config import SearchConfig
from ui.choices import ARITH
from ui.jobs.pool import RunRequest, WorkerPool
from ui.jobs.warm import ModelCache, execute, model_key
from ui.tabs.run_form import dataset_problems


def _req(run_id: str = "r", **kw: Any) -> RunRequest:
    prob = dataset_problems(ARITH)[0]
    cfg = kw.pop("config", SearchConfig(budget=4, max_iterations=3))
    return search_job(run_id, "sqlite://", prob, cfg.to_dict(), **kw)


class _Loader:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, req: Any) -> tuple[Any, Any]:
        self.calls += 1
        return object(), object()


def test_same_pair_reuses_the_loaded_models() -> None:
    loader = _Loader()
    cache = ModelCache(loader)
    first = cache.get(_req("a"))
    again = cache.get(_req("b", config=SearchConfig(budget=8, seed=3)))  # budget and seed do not shape the models
    assert again is first and again[0] is first[0] and again[1] is first[1]
    assert loader.calls == cache.loads == 1


def test_a_different_pair_or_dropout_reloads() -> None:
    loader = _Loader()
    cache = ModelCache(loader)
    first = cache.get(_req("a"))
    other = cache.get(_req("b", prm="some/prm"))
    assert other is not first and loader.calls == 2
    third = cache.get(_req("c", prm="some/prm", config=SearchConfig(dropout_p=0.2)))
    assert third is not other and loader.calls == 3
    assert model_key(_req("x", prm_opts={"device": "cpu"})) != model_key(_req("x"))
    cache.release()
    assert cache.pair is None and cache.key is None


def test_execute_twice_in_process_loads_once_and_repeats_the_tree(tmp_path: Path) -> None:
    """The embedded world's real models: a same-seed rerun on the warm pair grows the identical tree."""
    store = RunStore(str(tmp_path / "runs.db"))
    cache = ModelCache()
    ids = [uuid.uuid4().hex for _ in range(2)]
    for rid in ids:
        req = _req(rid)
        register_request(store, req)
        execute(req, cache, store)
    assert cache.loads == 1
    runs = [store.get_run(r) for r in ids]
    assert [r["status"] for r in runs] == ["finished", "finished"]
    trees = [[(n["id"], n["parent_id"], n["step"], n["mean"]) for n in store.get_nodes(r)] for r in ids]
    assert trees[0] == trees[1] and trees[0]


def _until(
    done: Callable[[], bool], timeout_s: float, tick_s: float = 0.05, then: Callable[[], Any] = lambda: None
) -> None:
    """Poll `done` (calling `then` between polls) until it holds; the timeout only bounds a hung test."""
    deadline = time.time() + timeout_s
    while not done() and time.time() < deadline:
        then()
        time.sleep(tick_s)


def _wait(store: RunStore, run_id: str, until: tuple[str, ...], timeout_s: float = 180) -> dict[str, Any]:
    _until(lambda: store.get_run(run_id)["status"] in until, timeout_s, tick_s=0.1)
    run = store.get_run(run_id)
    assert run["status"] in until, f"run {run_id[:8]} still {run['status']}"
    return run


def _first_step(store: RunStore, run_id: str) -> None:
    _until(lambda: store.get_run(run_id)["iterations"] >= 1, 60)


def _drain(pool: WorkerPool) -> None:
    _until(lambda: not pool.active(), 30, then=pool.pump)


def test_pool_reuses_a_warm_worker_and_reloads_on_a_pair_change(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path / "runs.db"))
    pool = WorkerPool(store, max_workers=1, poll_s=0.2)
    try:
        loads = []
        for dropout in (0.1, 0.1, 0.2):  # the third run's PRM differs: a reload in the same worker
            req = _req(uuid.uuid4().hex, config=SearchConfig(budget=4, max_iterations=2, dropout_p=dropout))
            req = RunRequest(**{**req.__dict__, "db": store.location})
            register_request(store, req)
            pool.submit(req)
            assert _wait(store, req.run_id, ("finished", "failed", "cancelled"))["status"] == "finished"
            _drain(pool)
            loads.append(sum(pool.loads().values()))
        assert loads == [1, 1, 2]
        assert len(pool.loads()) == 1  # one warm process served all three
    finally:
        pool.shutdown(cancel=True, timeout_s=30)


def test_a_worker_killed_mid_run_leaves_the_run_failed_with_its_nodes(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path / "runs.db"))
    pool = WorkerPool(store, max_workers=1, poll_s=3600)  # this test drives pump()
    try:
        req = _req(uuid.uuid4().hex, config=SearchConfig(budget=8, max_iterations=20))
        req = RunRequest(**{**req.__dict__, "db": store.location})
        register_request(store, req, paused=True)  # step mode: the worker waits after writing the root
        pool.submit(req)
        _wait(store, req.run_id, ("running",))
        store.step_run(req.run_id)
        _first_step(store, req.run_id)
        written = len(store.get_nodes(req.run_id))
        assert written > 0
        slot = next(iter(pool._slots.values()))
        slot.proc.kill()
        slot.proc.join(10)
        assert req.run_id in pool.pump()
        run = store.get_run(req.run_id)
        assert run["status"] == "failed" and "exited" in run["error"]
        assert len(store.get_nodes(req.run_id)) == written
    finally:
        pool.shutdown(cancel=True, timeout_s=10)


def test_a_cancelled_run_keeps_its_nodes_and_the_worker_stays_warm(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path / "runs.db"))
    pool = WorkerPool(store, max_workers=1, poll_s=0.2)
    try:
        req = RunRequest(
            **{
                **_req(uuid.uuid4().hex, config=SearchConfig(budget=8, max_iterations=20)).__dict__,
                "db": store.location,
            }
        )
        register_request(store, req, paused=True)
        pool.submit(req)
        _wait(store, req.run_id, ("running",))
        store.step_run(req.run_id)
        _first_step(store, req.run_id)
        store.request_cancel(req.run_id)
        run = _wait(store, req.run_id, ("cancelled", "failed", "finished"))
        assert run["status"] == "cancelled"
        assert len(store.get_nodes(req.run_id)) == run["n_nodes"] > 0
        nxt = RunRequest(
            **{
                **_req(uuid.uuid4().hex, config=SearchConfig(budget=8, max_iterations=20)).__dict__,
                "db": store.location,
            }
        )
        register_request(store, nxt)
        pool.submit(nxt)
        assert _wait(store, nxt.run_id, ("finished", "failed", "cancelled"))["status"] == "finished"
        _drain(pool)
        assert pool.loads() == {0: 1}  # the same process, the same models
    finally:
        pool.shutdown(cancel=True, timeout_s=30)


def test_a_prewarmed_pool_has_a_compare_pair_warm_before_any_run(tmp_path: Path) -> None:
    """The Compare tab's pair (H-UATS and REBASE, the same models) starts at once on two warm workers: both load
    the default pair at start, and the pair's two runs then load nothing (the second run once sat 74 s queued
    while a cold worker loaded)."""
    from ui.jobs.pool import PAIR_WORKERS, default_pair_request

    store = RunStore(str(tmp_path / "runs.db"))
    pool = WorkerPool(store, max_workers=2, poll_s=0.2, prewarm=default_pair_request())
    try:
        _until(lambda: sorted(pool.loads().values()) == [1] * PAIR_WORKERS, 300, tick_s=0.2)
        assert sorted(pool.loads().values()) == [1, 1], pool.loads()  # two workers, one load each, before any run
        ids = []
        for method in ("h-uats", "rebase"):
            req = _req(uuid.uuid4().hex, config=SearchConfig(method=method, budget=4, max_iterations=2))
            req = RunRequest(**{**req.__dict__, "db": store.location})
            register_request(store, req)
            pool.submit(req)
            ids.append(req.run_id)
        for rid in ids:
            assert _wait(store, rid, ("finished", "failed", "cancelled"))["status"] == "finished"
        _drain(pool)
        assert sorted(pool.loads().values()) == [1, 1], pool.loads()  # the pair loaded nothing more
    finally:
        pool.shutdown(cancel=True, timeout_s=30)
