"""A deep ensemble of PRMs: sample j of a node is member j's deterministic score of its last step, so a node's first
estimate reads members 0..K−1 and a re-evaluation reads the next ones, up to the M members there are.

The arithmetic world ships its members under assets/models/arith-prm-ensemble (uats_core/worlds/arith/
train_ensemble.py trains them: the shipped PRM with its top layer, final norm and head retrained per member from its
own seed on a bootstrap resample); each member file holds only the tensors it retrained, loaded over a copy of the
base PRM. Each member is a whole PRM, so one sample costs one PRM pass."""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..protocols import PRM, Trace
from .base import Estimate, Estimator, from_samples

log = logging.getLogger(__name__)

ENSEMBLE_FILE = "ensemble.json"


class Ensemble(Estimator):
    name = "ensemble"
    sample_cost = 1.0  # every member is a PRM of the base's size, run whole
    sample_label = "ensemble member"

    def __init__(self, members: Sequence[PRM]) -> None:
        if len(members) < 2:
            raise ValueError(f"an ensemble needs at least 2 members; got {len(members)}")
        self.members = list(members)

    def capacity(self, have: int) -> int | None:
        return max(0, len(self.members) - have)

    def more(self, traces: Sequence[Trace], have: Sequence[Sequence[float]], k: int) -> list[Estimate]:
        new: list[list[float]] = [[] for _ in traces]
        for j, member in enumerate(self.members):  # one batched call per member, for the traces that read it
            rows = [i for i, h in enumerate(have) if len(h) <= j < len(h) + k]
            if rows:
                scores = member.score([traces[i] for i in rows])
                for i, per_step in zip(rows, scores):
                    new[i].append(float(per_step[-1]))
        return [from_samples([*h, *n], len(n)) for h, n in zip(have, new)]


def ensemble_dir(prm: Any) -> Path | None:
    """The members' folder of a PRM loaded from a folder: `<folder>-ensemble` beside it."""
    folder = getattr(prm, "folder", None)
    return Path(f"{folder}-ensemble") if folder else None


def member_files(where: Path | None, who: str, k0: int) -> list[str]:
    """The member files named by the ensemble's file in `where` (a PRM folder's `-ensemble` beside it), read without
    loading a member: ConfigError naming `estimator` (none there, or no ensemble's file) or `k0` (fewer members)."""
    meta_path = where / ENSEMBLE_FILE if where else None
    if meta_path is None or not meta_path.is_file():
        raise ConfigError(
            "estimator",
            f"the PRM {who!r} has no trained ensemble (looked for "
            f"{meta_path or '<PRM folder>-ensemble/' + ENSEMBLE_FILE}); train one "
            "(python -m uats.arith.train_ensemble for the embedded PRM) or "
            "pick another estimator",
        )
    try:
        files = list(json.loads(meta_path.read_text())["members"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(
            "estimator", f"{meta_path} is not an ensemble's file ({exc}); train the ensemble again"
        ) from None
    if k0 > len(files):
        raise ConfigError("k0", f"the ensemble has {len(files)} members, fewer than k0={k0}; use k0 <= {len(files)}")
    return files


def check_ensemble_size(prm_folder: Path, k0: int) -> None:
    """Before anything loads or is written: the ensemble beside a PRM folder holds at least `k0` members."""
    member_files(Path(f"{prm_folder}-ensemble"), str(prm_folder), k0)


def load_ensemble(prm: Any, k0: int) -> Ensemble:
    """The ensemble of a PyTorch PRM whose members were trained beside it; ConfigError naming `estimator` (no members)
    or `k0` (more than there are members) otherwise."""
    where = ensemble_dir(prm)
    files = member_files(where, str(getattr(prm, "name", prm)), k0)
    if not hasattr(prm, "fmt") or not hasattr(prm, "model"):
        raise ConfigError(
            "estimator",
            f"the ensemble estimator serves token-classification PRMs (the embedded one); "
            f"{getattr(prm, 'name', prm)!r} is not one: use laplace or mahalanobis",
        )
    assert where is not None  # member_files refused a PRM without a folder
    from safetensors.torch import load_file

    members = []
    for j, name in enumerate(files):
        model = copy.deepcopy(prm.model)
        tensors = load_file(str(where / name))
        missing = set(tensors) - set(model.state_dict())
        if missing:
            raise ConfigError(
                "estimator",
                f"{where / name} holds tensors the PRM lacks ({sorted(missing)[0]}): it was trained for another PRM",
            )
        model.load_state_dict(tensors, strict=False)
        cache = prm.cache.max_bytes if prm.cache is not None else 0  # as the base PRM caches (benchmarks: none)
        members.append(
            type(prm)(
                model,
                prm.tokenizer,
                prm.fmt,
                name=f"{prm.name}#member{j}",
                dropout_p=prm.dropout.p,
                dropout_mode=prm.dropout.label,
                cache_bytes=cache,
            )
        )
    log.info("ensemble of %d members loaded from %s", len(members), where)
    return Ensemble(members)
