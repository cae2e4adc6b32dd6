"""Calibration beside the PRM: the cost ratio c and the in-distribution spread of its MC-dropout scores.

`uats calibrate` writes one JSON per PRM (uats_calibration.json in the model's folder,
or assets/calibration/<name>.json for a hub model) holding c and, per (dropout mode, p, space), the sample
variances of K passes on in-distribution steps. `--tau auto[:q]` then sets τ to the q-quantile of the gated
statistic (σ² or σ, of scores or of logits) over those steps. The raw variances are kept rather than a few
quantiles so that any q and both σ and σ² come from the same file (σ's quantile is not the square root of an
interpolated σ² quantile)."""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .config import SearchConfig, tau_auto_quantile
from .errors import ConfigError
from .estimation import gate_statistic
from .paths import ASSETS, WORLD_PRM

log = logging.getLogger(__name__)

CALIBRATION_NAME = "uats_calibration.json"
HUB_CALIBRATION_DIR = ASSETS.parent / "calibration"
DEFAULT_PRM = WORLD_PRM


def calibration_path(prm_spec: str | None) -> Path:
    """Where the calibration of a PRM lives: in its folder when it is one, else under assets/calibration."""
    spec = str(prm_spec or DEFAULT_PRM)
    folder = Path(spec)
    if folder.is_dir():
        return folder / CALIBRATION_NAME
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", spec.split(":", 1)[-1]).strip("_") or "prm"
    return HUB_CALIBRATION_DIR / f"{slug}.json"


def entry_key(dropout_mode: str, dropout_p: float, space: str, estimator: str = "mc-dropout") -> str:
    """MC dropout's entries are per (mode, p, space), as they always were; another estimator's per space."""
    return f"{dropout_mode}|p={float(dropout_p):g}|{space}" if estimator == "mc-dropout" else f"{estimator}|{space}"


def load_calibration(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError("tau", f"cannot read the calibration file {path} ({exc}); rerun `uats calibrate`") from None


def write_calibration(
    path: Path,
    *,
    prm: str,
    cost: Mapping[str, Any] | None = None,
    spreads: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Merge c and per-(mode, p, space) spreads into the file (other entries stay), and return what it holds."""
    data = load_calibration(path)
    data["prm"] = prm
    if cost is not None:
        data["cost"] = dict(cost)
    if spreads:
        data.setdefault("uncertainty", {}).update({k: dict(v) for k, v in spreads.items()})
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=1)
    # one line per list of numbers: hundreds of variances stay readable in a diff
    text = re.sub(
        r"\[\s+([-+0-9.eE,\s]+?)\s+\]", lambda m: "[" + ", ".join(m.group(1).split()).replace(",,", ",") + "]", text
    )
    path.write_text(text + "\n", encoding="utf-8")
    return data


def spread_entry(variances: Sequence[float], k: int, source: str) -> dict[str, Any]:
    """One calibration entry: the ID steps' sample variances (6 significant digits), K and where they came from."""
    v = [float(f"{max(float(x), 0.0):.6g}") for x in variances]
    return {"k": int(k), "n": len(v), "source": source, "variances": v}


def tau_from_variances(variances: Sequence[float], q: float, uncertainty: str = "var") -> float:
    """τ = the q-quantile (linear interpolation) of the gated statistic over in-distribution steps. The
    statistic is σ² or σ of the space the variances were measured in, so one list serves both."""
    if not 0.0 < q < 1.0:
        raise ConfigError("tau", f"the quantile must be in (0, 1); got {q}")
    stats = [gate_statistic(v, v, uncertainty, "prob") for v in variances]
    if not stats:
        raise ConfigError("tau", "the calibration entry holds no steps; rerun `uats calibrate`")
    return float(np.quantile(np.asarray(stats, dtype=np.float64), q))


def resolve_tau(
    config: SearchConfig, prm_spec: str | None, path: Path | None = None
) -> tuple[SearchConfig, dict[str, Any] | None]:
    """Turn tau='auto[:q]' into a number from the PRM's calibration; a numeric τ passes through unchanged.
    Returns (the config with a numeric τ, a note of where it came from or None)."""
    q = tau_auto_quantile(config.tau)
    if q is None:
        return config, None
    path = path or calibration_path(prm_spec)
    key = entry_key(config.dropout_mode, config.dropout_p, config.uncertainty_space, config.estimator)
    entry = (load_calibration(path).get("uncertainty") or {}).get(key)
    if not entry and config.estimator != "mc-dropout":
        raise ConfigError(
            "tau",
            f"{config.tau!r} needs the {config.estimator} estimator's calibration ({key}) in "
            f"{path}; run `uats estimators calibrate --prm {prm_spec or DEFAULT_PRM}` or give τ "
            "as a number",
        )
    if not entry:
        raise ConfigError(
            "tau",
            f"{config.tau!r} needs a calibration for dropout mode {config.dropout_mode}, "
            f"p={config.dropout_p:g}, space {config.uncertainty_space} in {path}; run `uats "
            f"calibrate --prm {prm_spec or DEFAULT_PRM} --tau-modes "
            f"{config.dropout_mode} --p {config.dropout_p:g}` or give τ as a number",
        )
    tau = tau_from_variances(entry["variances"], q, config.uncertainty)
    if int(entry.get("k", config.k0)) != config.k0:
        # σ² is unbiased at any K, but its spread shrinks with K: the quantile moves a little
        log.warning("τ calibrated with K=%s passes, searching with K0=%s", entry.get("k"), config.k0)
    note = {
        "tau": tau,
        "quantile": q,
        "key": key,
        "uncertainty": config.uncertainty,
        "file": str(path),
        "n": int(entry.get("n", len(entry["variances"]))),
        "k": entry.get("k"),
    }
    if not math.isfinite(tau):
        raise ConfigError("tau", f"the calibration in {path} gives a non-finite τ; rerun the calibration")
    return dataclasses.replace(config, tau=tau), note
