"""Two runs side by side: the stored partner of a run, the summary table, the two trees on one colour scale
and one figure holding both (for a comparison's static PNG/SVG)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from uats_core.config import SearchConfig
from uats_core.methods import uncertainty_methods
from uats_core.status import RunStatus

from .divergence import Divergence, decision_divergence, first_divergence
from .figstyle import shared_colour_range
from .run_status import outcome, said_answer
from .treedata import RunData, shared_prefixes
from .treefig import tree_figure
from .treeview import ViewOptions

DIVERGENCE_COLOUR = "#e7298a"  # the mark where two runs part, in both trees (magenta: apart from OOD's and the ring)


def pair_key(run: dict[str, Any]) -> tuple[Any, ...]:
    """What the two runs of a fair pair share: problem, seed, budget, policy and PRM."""
    return (
        run.get("problem_id"),
        run.get("seed"),
        (run.get("config") or {}).get("budget"),
        run.get("policy"),
        run.get("prm"),
    )


def find_partner(store: Any, run: dict[str, Any], methods: Sequence[str] = ("h-uats", "rebase")) -> str | None:
    """The newest stored run with the other method of the default pair and the same pair key (problem, seed,
    budget, policy and PRM)."""
    method = run.get("method")
    other = [m for m in methods if m != method]
    for m in other:
        for r in store.list_runs(method=m, problem_id=run.get("problem_id"), limit=50):
            if r["run_id"] != run["run_id"] and r.get("status") != RunStatus.QUEUED and pair_key(r) == pair_key(run):
                return r["run_id"]
    return None


def compare_rows(a: RunData, b: RunData) -> tuple[list[list[Any]], int | None]:
    rows = []
    for d, label in zip((a, b), pair_labels(a.run, b.run)):
        r = d.run
        nodes = [n for i, n in d.nodes.items() if i != 0]
        rows.append(
            [
                r["run_id"][:8],
                label,
                r.get("status"),
                said_answer(r),
                outcome(r),
                r.get("naive_answer"),
                round(float(r.get("cost") or 0), 1),
                r.get("iterations"),
                len(nodes),
                sum(1 for n in nodes if n.get("ood")),
                sum(1 for n in nodes if n.get("extra_passes")),
                sum(int(n.get("extra_passes") or 0) for n in nodes),
            ]
        )
    return rows, first_divergence(a, b)


COMPARE_COLUMNS = [
    "run",
    "method",
    "status",
    "answer",
    "outcome",
    "naive answer",
    "cost spent",
    "iterations",
    "nodes",
    "OOD nodes",
    "re-evaluated",
    "extra passes",
]


def method_label(run: Mapping[str, Any]) -> str:
    """A run's method as a tree's title names it; the case finder's counterfactual says so."""
    off = (run.get("config") or {}).get("prm_scoring") == "off"
    return f"{run.get('method')} without uncertainty" if off else str(run.get("method"))


def run_estimator(run: Mapping[str, Any]) -> str | None:
    """The uncertainty estimator a run's σ² came from (a run stored before the setting existed: the default);
    None for a method that reads no uncertainty."""
    if run.get("method") not in uncertainty_methods():
        return None
    return str((run.get("config") or {}).get("estimator") or SearchConfig.estimator)


def pair_labels(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[str, str]:
    """Both runs' methods as every panel of a comparison names them: when both read uncertainty from different
    estimators (one problem under two estimators), each name carries its estimator, else "h-uats" twice would be
    two runs a reader cannot tell apart."""
    ea, eb = run_estimator(a), run_estimator(b)
    if ea is None or eb is None or ea == eb:
        return method_label(a), method_label(b)
    return f"{method_label(a)} ({ea})", f"{method_label(b)} ({eb})"


def compare_figures(
    a: RunData,
    b: RunData,
    t: int | None,
    view: ViewOptions | None = None,
    height: int = 560,
    shadows: Sequence[Mapping[int, Any] | None] = (None, None),
    selected: Sequence[int | None] = (None, None),
) -> tuple[dict[str, Any], dict[str, Any], tuple[float, float]]:
    fa, fb = a.state_at(None), b.state_at(None)
    crange = shared_colour_range(fa, fb)
    shared = shared_prefixes(fa, fb)
    sa_, sb_ = (a.state_at(t), b.state_at(t)) if t is not None else (fa, fb)
    parts = divergence_nodes(decision_divergence(a, b))
    figs = []
    labels = pair_labels(a.run, b.run)
    for d, st, side, sh, sel, part, label in (
        (a, sa_, "A", shadows[0], selected[0], parts[0], labels[0]),
        (b, sb_, "B", shadows[1], selected[1], parts[1], labels[1]),
    ):
        fig = tree_figure(
            st,
            view,
            colour_range=crange,
            shared_keys=shared,
            height=height,
            shadow=sh,
            selected=sel,
            title=f"{side}: {label} · {d.run['run_id'][:8]} · t={st.iteration}/{st.max_iteration}",
            uirevision=f"cmp-{side}-{d.run['run_id']}",
            show_colorbar=side == "B",
        )
        mark_divergence(fig, part)
        figs.append(fig)
    return figs[0], figs[1], crange


def divergence_nodes(div: Divergence) -> tuple[int | None, int | None]:
    """The node of each run where the two part: the differing step's own, else (a step one run never had) its node
    sharing the most steps with it; None for both when they never parted."""
    if div.kind is None:
        return None, None
    return (
        div.node_a if div.node_a is not None else div.parent_a,
        div.node_b if div.node_b is not None else div.parent_b,
    )


def mark_divergence(fig: dict[str, Any], node_id: int | None) -> None:
    """A ring around `node_id` in a tree figure, in the legend as where the runs part (nothing when the node is not
    drawn at the iteration shown). A marker, no text: it never sits over a label or a glyph."""
    if node_id is None:
        return
    for trace in fig["data"]:
        if not str(trace.get("name", "")).startswith("nodes") or not trace.get("customdata"):
            continue
        for i, c in enumerate(trace["customdata"]):
            if (c[0] if isinstance(c, (list, tuple)) else c) == node_id:
                fig["data"].append(
                    {
                        "type": "scatter",
                        "mode": "markers",
                        "x": [trace["x"][i]],
                        "y": [trace["y"][i]],
                        "name": "where the runs part",
                        "showlegend": True,
                        "customdata": [[node_id]],
                        "hovertemplate": f"node {node_id}: the runs part here<extra></extra>",
                        "marker": {
                            "symbol": "hexagon-open",
                            "size": 30,
                            "color": DIVERGENCE_COLOUR,
                            "line": {"width": 3, "color": DIVERGENCE_COLOUR},
                        },
                    }
                )
                return


def side_by_side(fa: dict[str, Any], fb: dict[str, Any]) -> dict[str, Any]:
    """One figure with two trees (for the static PNG/SVG of a comparison)."""
    data = [dict(trace) for trace in fa["data"]]
    # one legend for both: B's kinds that A does not draw (e.g. the shadow marks of a scored baseline) keep theirs
    named = {t.get("name") for t in fa["data"] if t.get("showlegend", True)}
    for trace in fb["data"]:
        t = dict(trace)
        t["xaxis"], t["yaxis"] = "x2", "y2"
        t["showlegend"] = bool(trace.get("showlegend", True)) and trace.get("name") not in named
        if t["showlegend"]:
            named.add(t.get("name"))
        data.append(t)
    la, lb = fa["layout"], fb["layout"]
    # edges and compact glyphs are layout shapes: B's move to B's axes; the selection rings stay in the app
    shapes = [sh for sh in la.get("shapes") or [] if sh.get("name") != "selected"]
    shapes += [{**sh, "xref": "x2", "yref": "y2"} for sh in lb.get("shapes") or [] if sh.get("name") != "selected"]
    layout = {
        "height": la.get("height", 560),
        "width": 1600,
        "paper_bgcolor": "white",
        "plot_bgcolor": "white",
        "margin": {"l": 40, "r": 10, "t": 50, "b": 10},
        "showlegend": True,
        "boxmode": "overlay",
        "legend": la.get("legend"),
        "shapes": shapes,
        "xaxis": {**la["xaxis"], "domain": [0.0, 0.48]},
        "yaxis": {**la["yaxis"], "anchor": "x"},
        "xaxis2": {**lb["xaxis"], "domain": [0.52, 1.0]},
        "yaxis2": {**lb["yaxis"], "anchor": "x2"},
        "annotations": [
            {
                "text": (la.get("title") or {}).get("text", "A"),
                "xref": "paper",
                "x": 0.0,
                "yref": "paper",
                "y": 1.06,
                "showarrow": False,
                "xanchor": "left",
            },
            {
                "text": (lb.get("title") or {}).get("text", "B"),
                "xref": "paper",
                "x": 0.52,
                "yref": "paper",
                "y": 1.06,
                "showarrow": False,
                "xanchor": "left",
            },
        ],
    }
    return {"data": data, "layout": layout, "config": {"displaylogo": False}}
