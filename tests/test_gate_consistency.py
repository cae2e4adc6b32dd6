"""One value per fact: for every decided node of a finished H-UATS and A-UATS run (the embedded arithmetic models,
real MC dropout), the inspector, the Why panel, Figure 1 (grouped, and sorted as the frontier by σ²) and the run
and case exports state the same gate σ² (what the ID/OOD test read), the same R̄ and the same decision, and the
value after re-evaluation labelled apart (the inspector once printed that one as the gate's)."""

from __future__ import annotations

import html
import re

import pytest

from storage import RunStore
from uats_core.config import SearchConfig
from uats_core.request import SearchRequest, validate_request
from uats_core.runner import prepare_search
from uats_core.worlds.arith.modeling import POLICY_DIRS, PRM_DIR
from uats_core.worlds.arith.world import get_problem
from ui.views.bundles import case_bundle, run_bundle
from ui.views.decisions import explain_node, gate_records, step_of
from ui.views.figstyle import fmt_mean, fmt_var
from ui.views.figure1 import step_figure
from ui.views.node_details import node_details_md
from ui.views.treedata import RunData


@pytest.fixture(scope="module", params=["h-uats", "a-uats"])
def run(request: pytest.FixtureRequest) -> RunData:
    store = RunStore("sqlite://")
    # policy B puts the PRM out of distribution: the gate sends candidates to re-evaluation
    cfg = SearchConfig(method=request.param, budget=16, seed=0, dropout_p=0.3)
    request = SearchRequest(get_problem("arith-test-3"), cfg, policy=str(POLICY_DIRS["B"]), prm=str(PRM_DIR))
    result = prepare_search(validate_request(request)).run(subscribers=[store.subscriber()])
    assert result.status == "finished"
    return RunData.load(store, result.run_id)


def _plain(text: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", text))


def test_every_panel_states_the_gate_as_it_read_it(run: RunData) -> None:
    records = gate_records(run)
    assert len(records) > 20 and any(r["extra_passes"] for r in records)  # re-evaluations to tell apart
    final = run.state_at(None)
    exported = {r["node_id"]: r for r in run_bundle(run).data["gate"]}
    for rec in records:
        nid = rec["node_id"]
        step = step_of(run, nid)
        c = step.candidate(nid)
        label = step.state.gate.label
        read, mean, decision = fmt_var(c.stat), fmt_mean(c.mean), c.decision
        assert (c.stat, c.mean, c.decision) == (rec["gate_stat_read"], rec["mean_read"], rec["decision"])
        said = f"{label} = {read}"
        inspector = _plain(node_details_md(run, final, nid))
        why = _plain(explain_node(run, nid))
        for text in (inspector, why):
            assert said in text and f"R̄ = {mean}" in text, (nid, text)
        assert decision in inspector
        for sort in ("parent", "stat"):
            fig = step_figure(step, selected=nid, sort_by=sort)
            assert fig["meta"]["numbers"][nid] == {
                "R̄": mean,
                "read": read,
                "K": str(c.k),
                "decision": decision,
                "after": fmt_var(c.stat_after) if c.extra else "",
            }
            row = fig["meta"]["rows"].index(nid)
            bars = next(t for t in fig["data"] if t["type"] == "bar" and t["xaxis"] == "x3")
            assert bars["x"][row] == (c.stat or None)  # the bar is the value read, not the one after
            table = next(t for t in fig["data"] if t.get("name") == "table")["text"][row].replace("\u00a0", " ")
            assert f" {read} " in f" {table} " and decision in table
        assert exported[nid]["gate_stat_read"] == c.stat and exported[nid]["decision"] == decision
        case = case_bundle(run, nid)
        row = next(r for r in case.table_rows if r[0] == f"{nid}*")
        assert row[2:5] == [mean, read, decision]
        if c.extra:
            after = fmt_var(c.stat_after)
            assert read != after or c.stat == c.stat_after
            for text in (inspector, why):
                assert f"after re-evaluation (+{c.extra} passes, K = {c.k_after})" in text
                assert f"{label} = {after}" in text.split("after re-evaluation")[1]
            assert exported[nid]["gate_stat_after"] == c.stat_after and row[5] == after
            diamonds = next(t for t in fig["data"] if t.get("name", "").endswith(" after"))
            assert c.stat_after in diamonds["x"]
