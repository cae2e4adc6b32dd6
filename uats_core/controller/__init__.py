"""A-UATS's learned controller of a step's knobs (see policy.py for the network, uats/train_controller.py
for how it is trained)."""

from __future__ import annotations

from pathlib import Path

from ..config import SearchConfig
from ..errors import ControllerError
from ..paths import ASSETS
from .policy import (
    KNOB_RANGES,
    KNOBS,
    ControllerNet,
    LearnedController,
    load_checkpoint,
    save_checkpoint,
    squash,
    unsquash,
)

DEFAULT_CHECKPOINT = ASSETS / "auats-controller"
ABLATION_CHECKPOINT = ASSETS / "auats-controller-no-uncertainty"


def shipped_checkpoint(uncertainty_features: bool) -> Path:
    """The shipped controller for a run with or without the σ features (the paper's ablation)."""
    return DEFAULT_CHECKPOINT if uncertainty_features else ABLATION_CHECKPOINT


def load_controller(path: str | Path | None, config: SearchConfig | None = None) -> LearnedController:
    """The shipped controller (or the no-uncertainty ablation when the config turns those features off),
    or the checkpoint folder at `path`."""
    if path is None:
        path = shipped_checkpoint(config is None or config.controller_uncertainty_features)
    net, meta = load_checkpoint(path)
    uncertainty = bool(meta.get("uncertainty_features", True))
    if config is not None and config.controller_uncertainty_features != uncertainty:
        raise ControllerError(
            path,
            f"was trained with uncertainty_features={uncertainty} but the run asks for "
            f"{config.controller_uncertainty_features}; pick the matching checkpoint",
        )
    return LearnedController(net, uncertainty_features=uncertainty)


__all__ = [
    "load_controller",
    "LearnedController",
    "ControllerNet",
    "KNOBS",
    "KNOB_RANGES",
    "squash",
    "unsquash",
    "save_checkpoint",
    "load_checkpoint",
    "DEFAULT_CHECKPOINT",
    "ABLATION_CHECKPOINT",
    "shipped_checkpoint",
]
