"""Reading back what the figure builders draw as layout shapes (ui.views.figstyle.path_shape), for the tests."""

from __future__ import annotations

from typing import Any


def shape_polylines(shape: dict[str, Any]) -> list[list[tuple[float, float]]]:
    """The polylines of a path shape as figstyle.path_shape writes them (M, L and Z, x,y pairs)."""
    return [
        [(float(pt.split(",")[0]), float(pt.split(",")[1])) for pt in part.rstrip("Z").split("L")]
        for part in shape["path"].split("M")
        if part
    ]
