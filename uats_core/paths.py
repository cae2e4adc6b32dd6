"""Where the shipped models live (the embedded arithmetic world's policies and PRM, the A-UATS controllers)."""

from __future__ import annotations

from pathlib import Path

ASSETS = Path(__file__).resolve().parent.parent / "assets" / "models"
WORLD_POLICY = ASSETS / "arith-policy-a"
WORLD_PRM = ASSETS / "arith-prm"
