"""The cost chart under the tree says what its bars are: a search iteration's cost, on an axis of iterations."""

from __future__ import annotations

from ui.views.charts import cost_figure


def test_the_cost_chart_calls_its_bars_what_its_axes_call_them() -> None:
    """Its bars are the cost of one iteration; named "cost this step" in the legend (beside an axis of iterations),
    they read as the cost of one step of the tree."""
    rows = [{"iteration": 1, "cost_step": 120, "cost_total": 120}, {"iteration": 2, "cost_step": 80, "cost_total": 200}]
    fig = cost_figure(rows)
    layout = fig["layout"]
    words = [t["name"] for t in fig["data"]] + [layout[a]["title"]["text"] for a in ("xaxis", "yaxis", "yaxis2")]
    assert not [w for w in words if "step" in w], words
    [bars] = [t for t in fig["data"] if t["type"] == "bar"]
    assert bars["name"] == "cost this iteration" and layout["yaxis"]["title"]["text"] == "cost per iteration"
    assert bars["x"] == [1, 2] and bars["y"] == [120, 80]
