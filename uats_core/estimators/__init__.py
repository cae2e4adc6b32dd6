"""Uncertainty estimators: where a candidate's R̄ and σ² come from (SearchConfig.estimator).

`ESTIMATOR_CLASSES` is the one registry (the names are config.ESTIMATORS, so front ends list them without torch);
`make_estimator` builds the one a search reads from its PRM, once per PRM (kept on it, as a loaded ensemble is
worth keeping). docs/architecture.md, Add an uncertainty estimator, says how to add one."""

from __future__ import annotations

import contextlib
from typing import Any

from ..config import ESTIMATORS, SearchConfig
from ..errors import ConfigError
from .base import Estimate, Estimator, cost_of, from_samples
from .ensemble import Ensemble
from .mc_dropout import MCDropout
from .posterior import Laplace, Mahalanobis

__all__ = ["ESTIMATOR_CLASSES", "Estimate", "Estimator", "cost_of", "estimator_class", "from_samples", "make_estimator"]

ESTIMATOR_CLASSES: dict[str, type[Estimator]] = {c.name: c for c in (MCDropout, Ensemble, Laplace, Mahalanobis)}
if tuple(ESTIMATOR_CLASSES) != ESTIMATORS:  # each name is declared once, in config.ESTIMATORS
    raise RuntimeError(f"config.ESTIMATORS {ESTIMATORS} and the registry {tuple(ESTIMATOR_CLASSES)} differ")


def estimator_class(name: str) -> type[Estimator]:
    try:
        return ESTIMATOR_CLASSES[name]
    except KeyError:
        raise ConfigError("estimator", f"got {name!r}; use one of {', '.join(ESTIMATORS)}") from None


def make_estimator(config: SearchConfig, prm: Any) -> Estimator:
    """The config's estimator over this PRM (built once per PRM and estimator, then reused)."""
    name = config.estimator
    estimator_class(name)
    if name == MCDropout.name:
        return MCDropout(prm)  # holds nothing but the PRM: nothing to keep
    cache = getattr(prm, "_uats_estimators", None)
    if cache is None:
        cache = {}
        with contextlib.suppress(AttributeError):  # a PRM without a __dict__ builds its estimator each search
            prm._uats_estimators = cache
    if name not in cache:
        if name == Ensemble.name:
            from .ensemble import load_ensemble

            cache[name] = load_ensemble(prm, config.k0)
        else:
            from .posterior import load_head_fit

            _require(prm, name, ("last_hidden", "head_linear"))
            cls = Laplace if name == Laplace.name else Mahalanobis
            cache[name] = cls(prm, load_head_fit(prm, name))
    est = cache[name]
    if isinstance(est, Ensemble) and config.k0 > len(est.members):
        raise ConfigError("k0", f"the ensemble has {len(est.members)} members, fewer than k0={config.k0}")
    return est


def _require(prm: Any, name: str, methods: tuple[str, ...]) -> None:
    for m in methods:
        if not callable(getattr(prm, m, None)):
            raise ConfigError(
                "estimator",
                f"{name} reads the PRM's hidden state, which {getattr(prm, 'name', prm)!r} "
                "does not expose (a PyTorch PRM does); use mc-dropout",
            )
