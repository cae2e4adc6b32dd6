"""A click on a tree node goes off Gradio's queue (ui/tabs/inspector.py, and the Why panel after it: a queued event
sends five status messages, and the page redoes its bookkeeping of every component at each) and its reads are
bounded as the node page's are (AppContext.read_off_queue): one session's clicks take at most
NODE_PAGE_READERS_PER_USER places at once, and another session's click is answered beside them."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from testkit.doubles import WorkerPoolDouble, record_synthetic
from testkit.held_reads import HeldReads
from testkit.serving import served_fresh_app
from ui.app_ui import NODE_PAGE_READERS_PER_USER
from ui.tabs.viewer import RunViewer

RUN = "7a" * 16


@pytest.fixture()
def served(tmp_path: Path) -> Iterator[dict[str, Any]]:
    with served_fresh_app(tmp_path, WorkerPoolDouble()) as app:
        record_synthetic(app["store"], RUN, seed=3, n_nodes=40)
        yield app


def _click_event(demo: Any) -> tuple[dict[str, Any], int, list[Any]]:
    """The tree's select event: (its dependency in the config the page reads, the tree's id, the inputs a page
    sends: None for a state, else the component's value as the page starts)."""
    config = demo.get_config_file()
    comps = {c["id"]: c for c in config["components"]}
    tree = next(i for i, c in comps.items() if c.get("props", {}).get("elem_id") == "tree")
    dep = next(d for d in config["dependencies"] if [tree, "select"] in [list(t) for t in d["targets"]])
    values = [None if comps[i]["type"] == "state" else comps[i]["props"].get("value") for i in dep["inputs"]]
    return dep, tree, values


def _click(url: str, event: tuple[dict[str, Any], int, list[Any]], session: str, node: int) -> httpx.Response:
    dep, tree, data = event
    body = {
        "data": data,
        "event_data": {"node_id": node},
        "fn_index": dep["id"],
        "trigger_id": tree,
        "session_hash": session,
    }
    return httpx.post(f"{url}/gradio_api/run/predict", json=body, timeout=300)


def test_the_click_is_off_the_queue_and_its_answer_is_the_inspector_s(served: dict[str, Any]) -> None:
    """The page's click event is marked off the queue in the config the page reads, and answered at /run: the
    notice a session with no run open gets (the inspector's own answer, not a queue's refusal)."""
    event = _click_event(served["demo"])
    assert event[0]["queue"] is False
    r = _click(served["url"], event, "s" * 11, 3)
    assert r.status_code == 200, r.text
    assert "open a run first" in str(r.json()["data"])


def test_one_session_s_clicks_leave_room_for_another_session_s(
    served: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ten clicks one session sends at once, each read held until the test lets it go: at most
    NODE_PAGE_READERS_PER_USER (2) of them read at a time, and a second session's click is read and answered while
    all ten still wait. Without the bound, as many read at once as the worker threads allow (6 on 2 cores), and
    the other session's click waited for one of them: 4 of the ten were still waiting when it was answered."""
    event = _click_event(served["demo"])
    reads, real = HeldReads(), RunViewer.inspect

    def held(self: RunViewer, s: Any, node_id: Any, redraw_tree: bool = False, **view: Any) -> Any:
        if node_id != 20:  # the first session's: held until the second's click is answered
            reads.read()
        return real(self, s, node_id, redraw_tree, **view)

    monkeypatch.setattr(RunViewer, "inspect", held)
    with ThreadPoolExecutor(10) as pool:
        first = [pool.submit(_click, served["url"], event, "a" * 11, n) for n in range(10)]
        reads.wait_for(NODE_PAGE_READERS_PER_USER)
        time.sleep(0.5)  # the other eight are in, waiting (without the bound, they would read too)
        try:
            second = _click(served["url"], event, "b" * 11, 20)
            waiting = sum(not f.done() for f in first)
        finally:
            reads.release.set()
        codes = [f.result().status_code for f in first]
    assert second.status_code == 200 and "open a run first" in str(second.json()["data"]), second.text
    assert waiting == 10, waiting  # answered while every one of the first session's clicks was still held
    assert reads.most == NODE_PAGE_READERS_PER_USER, reads.most
    assert codes == [200] * 10
