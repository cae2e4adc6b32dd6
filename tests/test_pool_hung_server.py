"""Issue 50, item 1: a policy server that accepts and never answers holds neither the pool nor its own run past a
cancel. The pool has one worker; one client's run waits on the hung server (testkit/openai_server.py, hang=True)
while another client's embedded run is submitted: that run finishes (main: it waited behind the hung one for
3 x 120 s), and a hung run ends cancelled once asked. The deadlines only bound a hung test."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from storage import RunStore
from testkit.openai_server import OpenAICompletionsServerDouble
from testkit.polling import until
from testkit.pool_requests import search_job
from uats_core.config import SearchConfig
from uats_core.status import RunStatus
from ui.choices import ARITH
from ui.jobs.pool import WorkerPool
from ui.tabs.run_form import dataset_problems


def test_a_hung_policy_server_neither_holds_the_pool_nor_outlives_a_cancel(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path / "runs.db"))
    pool = WorkerPool(store, max_workers=1, poll_s=0.2)
    prob = dataset_problems(ARITH)[0]
    cfg = SearchConfig(budget=4, max_iterations=5)
    status = lambda run_id: store.get_run(run_id)["status"]  # noqa: E731
    try:
        with OpenAICompletionsServerDouble(lambda ids: "", hang=True) as hung:
            stuck = search_job(uuid.uuid4().hex, store.location, prob, cfg, policy=f"openai:{hung.url}")
            pool.submit(stuck, session="alice", register=lambda: stuck.register(store))
            assert hung.hanging.wait(240), "the hung run never reached its server"
            other = search_job(uuid.uuid4().hex, store.location, prob, cfg)
            pool.submit(other, session="bob", register=lambda: other.register(store))
            assert until(lambda: status(other.run_id) == RunStatus.FINISHED, 240), store.get_run(other.run_id)
            # a second hung run, cancelled as soon as it waits on the server. A third client's: alice's own would wait
            # for a worker until her first run's read timeout (60 s) ended it (WorkerPool._startable); the first may
            # have reached that timeout meanwhile on a loaded machine: how it ended is not what this part checks
            hung.hanging.clear()
            again = search_job(uuid.uuid4().hex, store.location, prob, cfg, policy=f"openai:{hung.url}")
            pool.submit(again, session="carol", register=lambda: again.register(store))
            assert hung.hanging.wait(240), "the second hung run never reached its server"
            asked = time.monotonic()
            store.request_cancel(again.run_id)
            assert until(lambda: status(again.run_id) == RunStatus.CANCELLED, 60), store.get_run(again.run_id)
            print(
                f"hung server: cancel took {time.monotonic() - asked:.2f} s; the other client's run finished on its "
                "own worker"
            )
    finally:
        pool.shutdown(cancel=True, timeout_s=30)
