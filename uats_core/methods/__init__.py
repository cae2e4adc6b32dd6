"""One module per search method, all behind `SearchMethod`."""

from __future__ import annotations

from typing import Any

from ..config import SearchConfig
from ..errors import ConfigError
from .base import SearchCancelled, SearchContext, SearchMethod
from .beam import BeamSearch
from .best_of_n import BestOfN
from .dora import Dora
from .dvts import DVTS
from .rebase import Rebase
from .uats import AUATS, UATS, Knobs

# By each class's name, in config.METHODS' order (tests/test_engine_logic.py checks the two agree).
REGISTRY: dict[str, type[SearchMethod]] = {cls.name: cls for cls in (BestOfN, BeamSearch, DVTS, Rebase, Dora, UATS, AUATS)}


def make_method(config: SearchConfig, controller: Any = None) -> SearchMethod:
    try:
        cls = REGISTRY[config.method]
    except KeyError:
        raise ConfigError("method", f"unknown method {config.method!r}; choose one of {', '.join(REGISTRY)}") from None
    if issubclass(cls, AUATS):
        return cls(config, controller)  # H-UATS keeps the config's knobs: a controller is A-UATS's
    return cls(config)


__all__ = ["REGISTRY", "make_method", "SearchMethod", "SearchContext", "SearchCancelled", "Knobs"]
