"""Where the shipped models live (the embedded arithmetic world's policies and PRM, the A-UATS controllers)."""

from __future__ import annotations

from pathlib import Path

ASSETS = Path(__file__).resolve().parent.parent / "assets" / "models"
WORLD_POLICY = ASSETS / "arith-policy-a"
WORLD_PRM = ASSETS / "arith-prm"


def portable_path(path: str) -> str:
    """A model path as results and checkpoints record it: relative to the repository when inside it, so they do
    not carry one machine's home directory; anything else (hub ids, outside folders) unchanged."""
    if ":" in path.split("/")[0] or not Path(path).is_absolute():
        return path  # hf:<id>, vllm:<id>, py:module:function, or already relative
    try:
        return str(Path(path).resolve().relative_to(ASSETS.parents[1]))
    except ValueError:
        return path
