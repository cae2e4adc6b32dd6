"""How shadow scores are drawn: apart from the run's own statistics, in purple, so that passes the run
never paid for are never read as its own. In the tree: an open purple diamond around every node the shadow
passes find OOD (σ² > τ), a small purple dot beside the ID ones; the hover gives the shadow R̄, σ², K."""

from __future__ import annotations

import html
from typing import Any, Mapping

SHADOW_COLOUR = "#7b3294"


def _hover(nid: int, row: Mapping[str, Any]) -> list[Any]:
    k = len(row.get("mc_scores") or [])
    return [nid, f"· <b>shadow</b> ({'OOD' if row.get('ood') else 'ID'}, not spent by the run)",
            html.escape(f"R̄ {row.get('mean') or 0:.3f} σ² {row.get('var') or 0:.5f} K {k} τ {row.get('tau') or 0:g}")]


def shadow_traces(pos: Mapping[int, tuple[float, float]], shadow: Mapping[int, Mapping[str, Any]],
                  template: str) -> list[dict[str, Any]]:
    """Tree traces for the shadow rows of the drawn nodes (clickable like the nodes: customdata[0] = id)."""
    out: list[dict[str, Any]] = []
    for ood, name, marker, dx in (
            (True, "shadow OOD (σ² > τ, not spent)",
             {"symbol": "diamond-open", "size": 22, "color": SHADOW_COLOUR, "line": {"width": 2.5, "color": SHADOW_COLOUR}},
             0.0),
            (False, "shadow ID", {"symbol": "circle", "size": 5, "color": SHADOW_COLOUR}, 0.22)):
        ids = [i for i in pos if i in shadow and bool(shadow[i].get("ood")) == ood]
        if ids:
            out.append({"type": "scatter", "mode": "markers", "name": name, "showlegend": True,
                        "x": [round(pos[i][0] + dx, 4) for i in ids], "y": [round(pos[i][1] + (0.22 if dx else 0), 4) for i in ids],
                        "customdata": [_hover(i, shadow[i]) for i in ids], "hovertemplate": template, "marker": marker})
    return out
