"""Large runs in the app: the fast node reader equals the store's, the drawn tree is capped and connected and
says what it hides, and big runs load without their per-iteration history."""

from __future__ import annotations

import pytest

from storage import RunStore
from storage.fastread import read_nodes
from testkit.doubles import record_synthetic
from ui.views import bigtree, treedata
from ui.views.treedata import RunData
from ui.views.treefig import tree_figure


@pytest.fixture(scope="module")
def store() -> RunStore:
    st = RunStore("sqlite://")
    for rid, n in (("s" * 32, 300), ("b" * 32, 4000)):
        record_synthetic(st, rid, n_nodes=n, seed=4, max_iterations=5000)
    return st


def test_fast_reader_equals_get_nodes(store: RunStore) -> None:
    for rid in ("s" * 32, "b" * 32):
        assert read_nodes(store, rid) == store.get_nodes(rid)
    with pytest.raises(Exception, match="no run"):
        read_nodes(store, "nope")


def test_cap_keeps_the_tree_connected_and_counts_what_it_hides(store: RunStore) -> None:
    state = RunData.load(store, "b" * 32).state_at(None)
    shown = set(state.nodes)
    keep = state.chosen_path_nodes()
    drawn, hidden = bigtree.cap_shown(state, shown, keep, limit=400)
    assert len(drawn) == 400 and 0 in drawn
    assert all(state.nodes[i].get("parent_id") in drawn for i in drawn if i != 0)
    assert keep and keep <= drawn or len(keep) > 400
    assert 0 < sum(hidden.values()) <= len(shown) - len(drawn) and set(hidden) <= drawn
    small, none = bigtree.cap_shown(state, shown, keep, limit=len(shown))
    assert small == shown and none == {}


def test_the_figure_draws_at_most_the_cap(store: RunStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bigtree, "MAX_DRAWN", 500)
    monkeypatch.setattr(bigtree.cap_shown, "__defaults__", (500,))
    state = RunData.load(store, "b" * 32).state_at(None)
    fig = tree_figure(state)
    assert fig["meta"]["n_nodes"] == len(state.nodes) and fig["meta"]["n_shown"] == 500
    marks = [t for t in fig["data"] if t.get("name") == "marks"]
    assert marks and any(str(x).endswith("hidden") for x in marks[0]["text"])


def test_big_runs_load_without_history_and_still_replay(store: RunStore, monkeypatch: pytest.MonkeyPatch) -> None:
    full = RunData.load(store, "b" * 32)
    monkeypatch.setattr(treedata, "HISTORY_LIMIT", 1000)
    big = RunData.load(store, "b" * 32)
    assert big.history_skipped and not full.history_skipped
    t = big.max_iteration // 2
    assert set(big.state_at(t).nodes) == set(full.state_at(t).nodes)  # the same nodes exist at t
    assert big.state_at(None).nodes == full.state_at(None).nodes


def test_every_node_read_path_keys_the_node_once_as_node_record_does(store: RunStore) -> None:
    """Node.record()'s `id` is the node's one id key in every node dict that leaves the run log: the store's
    reader (whole run and live polling), the fast reader, and the app's RunData (loaded, grown, replayed)."""
    rid = "s" * 32
    data = RunData.load(store, rid)
    paths = {
        "get_nodes": store.get_nodes(rid),
        "get_nodes since": store.get_nodes(rid, since_iter=2),
        "read_nodes": read_nodes(store, rid),
        "RunData.load": list(data.nodes.values()),
        "RunData.grown": list(data.grown(store).nodes.values()),
        "state_at": list(data.state_at(3).nodes.values()),
    }
    id_keys = {"id", "node_id", "nid"}
    for name, nodes in paths.items():
        assert nodes, name
        bad = [sorted(id_keys & set(n)) for n in nodes if id_keys & set(n) != {"id"} or not isinstance(n["id"], int)]
        assert not bad, f"{name}: {bad[:3]}"
