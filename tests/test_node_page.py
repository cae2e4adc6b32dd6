"""The node's own page (ui/tabs/node_page.py): Gradio sends it only its own few components (why it opens fast),
it draws the node with the studio's own view functions (one value per fact), and an address it cannot follow gets
one line naming the field."""

from __future__ import annotations

import json
from typing import Any

import gradio as gr
import pytest

from storage import RunStore
from testkit.doubles import WorkerPoolDouble, record_synthetic
from ui.app_ui import build_demo
from ui.tabs.page_state import OpenRun
from ui.tabs.viewer import RunViewer

RUN = "5e" * 16
GOING = "6f" * 16  # a run still going: its last event (RunEnded) not written


class AddressDouble:
    """What the node page reads of a gr.Request: the address's query parameters."""

    def __init__(self, **params: str) -> None:
        self.query_params = params


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[gr.Blocks, RunStore]:
    store = RunStore("sqlite://")
    record_synthetic(store, RUN, seed=3, n_nodes=40)
    from testkit.doubles import record
    from testkit.synthetic import synthetic_events

    record(store, list(synthetic_events(GOING, seed=4, n_nodes=30))[:-1])
    return build_demo(store, WorkerPoolDouble(), tmp_path_factory.mktemp("exports")), store


def _opened(demo: gr.Blocks, **params: str) -> dict[str, Any]:
    """The node page's first answer for an address with `params`, by elem_id (the state as "state")."""
    (fn,) = [f for f in demo.fns.values() if f.page == "node" and any(ev == "load" for _, ev in f.targets)]
    out = fn.fn(OpenRun(), AddressDouble(**params))
    return {("state" if isinstance(v, OpenRun) else k.elem_id): v for k, v in out.items()}


def test_the_node_page_holds_only_its_own_few_components(demo: tuple[gr.Blocks, RunStore]) -> None:
    config = demo[0].get_config_file()
    studio, node = config["page"][""], config["page"]["node"]
    assert len(node["components"]) <= 15 < 200 < len(studio["components"])  # the page a link opens is small
    assert not set(node["components"]) & set(studio["components"])
    assert len(node["dependencies"]) <= 5


def test_a_node_is_drawn_by_the_studio_s_own_views(demo: tuple[gr.Blocks, RunStore]) -> None:
    blocks, store = demo
    node = next(n["id"] for n in store.get_nodes(RUN) if n["depth"] == 2)
    out = _opened(blocks, run=RUN[:8], node=str(node))
    assert out["state"].run_id == RUN and out["state"].selected == node
    from ui.tabs.common import RunCache

    data = RunCache(store).get(RUN)
    fig, md = RunViewer.node_view(data, data.state_at(None), node)
    assert json.loads(out["figure1"])["data"] == json.loads(fig)["data"]  # the studio's Figure 1, row for row
    assert out["node-details"].startswith(md) and f"node={node}" in out["node-details"]
    assert f"node {node}" in out["why-panel"]
    assert "Open in the studio" in out["node-head"] and f"node={node}" in out["node-head"]


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({}, "no run in the address"),
        ({"run": "doesnotexist"}, "doesnotexist"),
        ({"run": RUN, "node": "abc"}, "node: 'abc' in the address is not a whole number"),
        ({"run": RUN, "t": "x"}, "t: 'x' in the address is not a whole number"),
        ({"run": RUN, "node": "9999"}, "has no node 9999"),
    ],
)
def test_an_address_it_cannot_follow_gets_one_line(
    demo: tuple[gr.Blocks, RunStore], params: dict[str, str], says: str
) -> None:
    out = _opened(demo[0], **params)
    assert says in out["node-head"], out["node-head"]
    assert out["figure1"] == ""  # nothing drawn for a node the address does not name


def test_a_run_still_going_is_said_to_be_shown_as_it_was(demo: tuple[gr.Blocks, RunStore]) -> None:
    from ui.tabs.node_page import LIVE_NOTE

    going = _opened(demo[0], run=GOING, node="3")
    assert LIVE_NOTE in going["node-head"]
    assert LIVE_NOTE not in _opened(demo[0], run=RUN, node="3")["node-head"]  # an ended run is as it is
    assert LIVE_NOTE not in _opened(demo[0], run=GOING, node="3", t="1")["node-head"]  # an iteration is fixed
