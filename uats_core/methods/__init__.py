"""One module per search method, all behind `SearchMethod`, and the one registry of them: REGISTRY.

Adding a method is its module and a line in REGISTRY: the command line (`--method`), the app's method list, the
evaluation grid (`--methods all`), the validator and the report all read the names and the capabilities
(SearchMethod's class attributes: needs_embedder, needs_controller, uses_uncertainty, config_fields, ...) from here."""

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

# By each class's name, in the order tables, lists and menus show them.
REGISTRY: dict[str, type[SearchMethod]] = {
    cls.name: cls for cls in (BestOfN, BeamSearch, DVTS, Rebase, Dora, UATS, AUATS)
}


def method_names() -> tuple[str, ...]:
    """Every method's name, in REGISTRY's order."""
    return tuple(REGISTRY)


def uncertainty_methods() -> tuple[str, ...]:
    """The methods whose steps MC-dropout uncertainty decides (uses_uncertainty), in REGISTRY's order."""
    return tuple(name for name, cls in REGISTRY.items() if cls.uses_uncertainty)


def method_class(name: str) -> type[SearchMethod]:
    """The class registered as `name`; ConfigError(field='method') for a name that is not."""
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        raise ConfigError("method", f"unknown method {name!r}; choose one of {', '.join(REGISTRY)}") from None


def check_method_settings(config: SearchConfig) -> None:
    """What the config's method asks of the config: a known method, no ablation switch another method owns (each
    switch names its method), then the method's own check_config. ConfigError naming the field."""
    cls = method_class(config.method)
    for owner in REGISTRY.values():
        for field, (kept, what) in owner.switches.items():
            if field not in cls.switches and getattr(config, field) != kept:
                raise ConfigError(field, f"{what}; use --method {owner.name}")
    cls.check_config(config)


def varies_by_method(field: str) -> bool:
    """Whether some method lists `field` among its config_fields (a field none lists changes every method's result)."""
    return any(field in cls.config_fields for cls in REGISTRY.values())


def methods_reading(field: str) -> tuple[str, ...]:
    """The methods whose result `field` can change (their variant_fields, with each switch they own turned away from
    the value other methods keep: REBASE reads K0 once rebase_scoring is mc), in REGISTRY's order; empty when no
    method lists it (then every method reads it)."""
    from ..config import setting_of

    out = []
    for name, cls in REGISTRY.items():
        turned = {
            f: next((c for c in setting_of(f).spec.choices if c != kept), kept) for f, (kept, _) in cls.switches.items()
        }
        if field in cls.variant_fields(turned) or field in cls.switches:
            out.append(name)
    return tuple(out)


def make_method(config: SearchConfig, controller: Any = None) -> SearchMethod:
    cls = method_class(config.method)
    if cls.needs_controller:
        return cls(config, controller)  # type: ignore[call-arg]
    return cls(config)


__all__ = [
    "REGISTRY",
    "method_names",
    "uncertainty_methods",
    "method_class",
    "check_method_settings",
    "varies_by_method",
    "methods_reading",
    "make_method",
    "SearchMethod",
    "SearchContext",
    "SearchCancelled",
    "Knobs",
]
