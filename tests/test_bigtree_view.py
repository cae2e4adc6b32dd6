"""Big trees: capped markers, decision labels that never overlap, dead branches collapsed, focus views,
and the poll timer's idle rule."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from storage import RunStore
from testkit.doubles import record_synthetic
from ui.tabs.common import RunCache, RunReads
from ui.tabs.idle import is_idle
from ui.tabs.page_state import ComparedPair, OpenRun
from ui.views.bigtree import dead_branches, focus_nodes
from ui.views.treedata import RunData
from ui.views.treefig import tree_figure
from ui.views.treemarks import MARKER_MAX, MAX_DECISION_LABELS, marker_size
from ui.views.treeview import ViewOptions


@pytest.fixture(scope="module")
def store_and_data() -> tuple[RunStore, RunData]:
    store = RunStore("sqlite://")
    record_synthetic(store, "w" * 32, n_nodes=1500, budget=64, seed=9)
    return store, RunData.load(store, "w" * 32)


def _nodes_trace(fig):
    return next(t for t in fig["data"] if t.get("name", "").startswith("nodes"))


def test_marker_size_grows_then_caps() -> None:
    assert marker_size(1) < marker_size(7) < marker_size(16) <= MARKER_MAX
    assert marker_size(500) == MARKER_MAX


def test_decision_labels_come_largest_first(store_and_data) -> None:
    """The server sends the decisions' labels largest first (the page keeps, at each zoom, those that overlap no
    label before them: tests/browser/test_tree_glyphs_browser.py measures it), at most MAX_DECISION_LABELS."""
    _, data = store_and_data
    for t in (3, 6, 9):
        state = data.state_at(t)
        fig = tree_figure(state)
        marks = [tr for tr in fig["data"] if tr.get("name") == "marks"]
        if not marks:
            continue
        texts = [x for x in marks[0]["text"] if "hidden" not in x]
        assert 0 < len(texts) <= MAX_DECISION_LABELS
        sizes = [int(d.extra_passes or 0) * 100 + int(d.children or 0) for d in state.decisions.values() if d.label]
        assert len(texts) == min(len(sizes), MAX_DECISION_LABELS)
        shown = [
            int(p[1:-1]) * 100 if p.startswith("+") else int(p[1:]) if p.startswith("×") else 0
            for x in texts
            for p in [x.split()[0]]
        ]
        assert shown[0] // 100 == max(sizes) // 100  # the most extra passes first
        assert max(_nodes_trace(fig)["marker"]["size"]) <= MARKER_MAX


def test_dead_branches_collapse_and_count(store_and_data) -> None:
    _, data = store_and_data
    state = data.state_at(None)
    shown = set(state.nodes)
    out, hidden = dead_branches(state, shown, state.chosen_path_nodes())
    assert hidden and len(out) + sum(hidden.values()) == len(shown)
    for top in hidden:  # every hidden node's leaves were pruned
        for n in state.subtree(top):
            if not state.children.get(n):
                assert state.nodes[n]["status"] == "pruned"
    assert state.chosen_path_nodes() <= out


def test_focus_on_chosen_path_and_subtree(store_and_data) -> None:
    _, data = store_and_data
    state = data.state_at(None)
    shown = set(state.nodes)
    path = state.chosen_path_nodes()
    kept, hidden = focus_nodes(state, shown, "chosen path", None)
    assert path <= kept and len(kept) < len(shown)
    assert sum(hidden.values()) == len(shown) - len(kept)
    sel = next(i for i in state.nodes if state.nodes[i]["depth"] == 2 and state.children.get(i))
    kept, _ = focus_nodes(state, shown, "selected subtree", sel)
    assert set(state.subtree(sel)) <= kept and set(state.path(sel)) <= kept
    fig = tree_figure(state, ViewOptions(focus="selected subtree"), selected=sel)
    assert fig["meta"]["n_shown"] == len(kept)
    fig = tree_figure(state, ViewOptions(collapse_pruned=True))
    assert fig["meta"]["n_shown"] < len(shown)


class _Pool:
    def __init__(self, active=(), queued=()):
        self._a, self._q = list(active), list(queued)

    def active(self):
        return self._a

    def queued(self):
        return self._q


def test_idle_only_when_everything_ended_and_drawn(store_and_data) -> None:
    store, _ = store_and_data
    rid = "w" * 32
    version = store.run_version(rid)
    ctx = SimpleNamespace(store=store, pool=_Pool(), reads=lambda: RunReads(store, RunCache(store)))
    assert is_idle(ctx, OpenRun(), ComparedPair())
    assert is_idle(ctx, OpenRun(run_id=rid, version=version), ComparedPair())
    assert not is_idle(ctx, OpenRun(run_id=rid, version=None), ComparedPair())  # the last version is not drawn yet
    busy = SimpleNamespace(store=store, pool=_Pool(queued=["q"]), reads=ctx.reads)
    assert not is_idle(busy, OpenRun(), ComparedPair())
    cs = ComparedPair(a=rid, b=rid, t=None, versions=(version, None))
    assert not is_idle(ctx, OpenRun(), cs)
    cs.t = 3  # stepping a pair by hand: nothing to follow
    assert is_idle(ctx, OpenRun(), cs)
    store.register_run("l" * 32, method="h-uats", problem_id="p", question="q")
    assert not is_idle(ctx, OpenRun(run_id="l" * 32, version=store.run_version("l" * 32)), ComparedPair())
