"""A-UATS's controller: a Gaussian MLP that reads the search state and sets (β, γ, τ, δ, ν1, ν2).

Each knob is the squashed image of an unbounded Gaussian action, lo + (hi − lo)·sigmoid(a) (τ on a log
scale, since sensible thresholds span orders of magnitude), so a sampled action is always a valid knob
and REINFORCE's log-probabilities live in the unbounded space."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from ..errors import ControllerError
from ..methods.uats import BETA_MAX, KNOBS, STATE_FEATURES, Knobs, current_feature_names

# (low, high, log-scale). β and γ scale B and C; compute matching is enforced downstream whatever they say.
KNOB_RANGES: dict[str, tuple[float, float, bool]] = {
    "beta": (0.0, BETA_MAX, False),
    "gamma": (0.5, 1.5, False),
    "tau": (1e-4, 3e-2, True),
    "delta": (0.0, 0.2, False),
    "nu1": (0.05, 2.0, False),
    "nu2": (0.05, 1.0, False),
}
UNCERTAINTY_FEATURES = ("mean_sigma", "max_sigma")


def feature_names(uncertainty_features: bool) -> tuple[str, ...]:
    return STATE_FEATURES if uncertainty_features else tuple(f for f in STATE_FEATURES if f not in UNCERTAINTY_FEATURES)


def squash(raw: torch.Tensor) -> torch.Tensor:
    """(…, 6) unbounded actions -> (…, 6) knob values."""
    out = []
    for i, name in enumerate(KNOBS):
        lo, hi, log_scale = KNOB_RANGES[name]
        s = torch.sigmoid(raw[..., i])
        out.append(torch.exp(math.log(lo) + (math.log(hi) - math.log(lo)) * s) if log_scale else lo + (hi - lo) * s)
    return torch.stack(out, dim=-1)


def unsquash(knobs: Sequence[float]) -> torch.Tensor:
    """Inverse of squash: the raw action that yields `knobs` (behaviour cloning's regression target)."""
    raw = []
    for value, name in zip(knobs, KNOBS):
        lo, hi, log_scale = KNOB_RANGES[name]
        s = (math.log(value) - math.log(lo)) / (math.log(hi) - math.log(lo)) if log_scale else (value - lo) / (hi - lo)
        s = min(max(s, 1e-6), 1 - 1e-6)
        raw.append(math.log(s / (1 - s)))
    return torch.tensor(raw, dtype=torch.float32)


class ControllerNet(nn.Module):
    """Gaussian policy: 2 hidden layers of 256 (the paper's best), state-dependent mean, learned log-std."""

    def __init__(self, n_features: int, hidden: int = 256, init_log_std: float = -1.0) -> None:
        super().__init__()
        self.n_features = n_features
        self.hidden = hidden
        head = nn.Linear(hidden, len(KNOBS))
        self.body = nn.Sequential(nn.Linear(n_features, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(), head)
        self.log_std = nn.Parameter(torch.full((len(KNOBS),), init_log_std))
        # A small output layer (common for policy heads) starts every state near the same action, so
        # behaviour cloning of constant knobs converges in a few hundred steps.
        with torch.no_grad():
            head.weight.mul_(0.01)
            head.bias.zero_()

    def forward(self, states: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.body(states), self.log_std.expand(states.shape[0], -1)

    def distribution(self, states: torch.Tensor) -> torch.distributions.Normal:
        mean, log_std = self(states)
        return torch.distributions.Normal(mean, log_std.exp())


@dataclass
class Step:
    state: torch.Tensor
    raw_action: torch.Tensor


class LearnedController:
    """The callable A-UATS asks for knobs each step. With sample=True it draws from the Gaussian and keeps
    the episode's (state, action) pairs for REINFORCE; otherwise it acts with the mean."""

    def __init__(
        self,
        net: ControllerNet,
        uncertainty_features: bool = True,
        sample: bool = False,
        generator: torch.Generator | None = None,
    ) -> None:
        self.net = net
        self.features = feature_names(uncertainty_features)
        self.uncertainty_features = uncertainty_features
        self.sample = sample
        self.generator = generator
        self.episode: list[Step] = []
        self.history: list[dict[str, float]] = []  # state and knobs per step, for the app's plot

    def encode(self, state: Mapping[str, float]) -> torch.Tensor:
        return torch.tensor([float(state[f]) for f in self.features], dtype=torch.float32)

    def __call__(self, state: Mapping[str, float]) -> Knobs:
        x = self.encode(state).unsqueeze(0)
        with torch.no_grad():
            mean, log_std = self.net(x)
            raw = mean
            if self.sample:
                noise = torch.randn(mean.shape, generator=self.generator)
                raw = mean + noise * log_std.exp()
        self.episode.append(Step(x[0], raw[0]))
        values = squash(raw)[0].tolist()
        knobs = Knobs(**dict(zip(KNOBS, values)))
        self.history.append({**{k: float(v) for k, v in state.items()}, **dict(zip(KNOBS, values))})
        return knobs

    def reset(self) -> None:
        self.episode = []
        self.history = []


def save_checkpoint(
    net: ControllerNet, folder: str | Path, uncertainty_features: bool, meta: dict | None = None
) -> Path:
    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    save_file({k: v.detach().contiguous() for k, v in net.state_dict().items()}, str(folder / "controller.safetensors"))
    info = {
        "format": "uats-controller/1",
        "features": list(feature_names(uncertainty_features)),
        "hidden": net.hidden,
        "knobs": list(KNOBS),
        "knob_ranges": KNOB_RANGES,
        "uncertainty_features": uncertainty_features,
        **(meta or {}),
    }
    (folder / "controller.json").write_text(json.dumps(info, indent=2))
    return folder


def load_checkpoint(folder: str | Path) -> tuple[ControllerNet, dict]:
    folder = Path(folder)
    meta_path, weights_path = folder / "controller.json", folder / "controller.safetensors"
    for p in (meta_path, weights_path):
        if not p.is_file():
            raise ControllerError(p, "missing; train one with `uats train` or pass --controller DIR")
    try:
        meta = json.loads(meta_path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ControllerError(meta_path, f"is not valid JSON ({exc}); retrain or restore the file") from None
    if meta.get("format") != "uats-controller/1" or meta.get("knobs") != list(KNOBS):
        raise ControllerError(meta_path, f"is not a uats-controller/1 checkpoint for knobs {KNOBS}; retrain it")
    try:
        from safetensors.torch import load_file

        state = load_file(str(weights_path))
    except Exception as exc:  # safetensors raises its own error types for truncated or garbled files
        raise ControllerError(
            weights_path, f"cannot be read ({exc}); the file is corrupt: retrain or restore it"
        ) from None
    meta["features"] = current_feature_names(meta.get("features", []))
    net = ControllerNet(len(meta["features"]), hidden=int(meta.get("hidden", 256)))
    try:
        net.load_state_dict(state)
    except RuntimeError as exc:
        raise ControllerError(
            weights_path,
            f"does not match controller.json (features={meta['features']}, "
            f"hidden={meta.get('hidden')}): {str(exc).splitlines()[0]}",
        ) from None
    expected = list(feature_names(bool(meta.get("uncertainty_features", True))))
    if meta["features"] != expected:
        raise ControllerError(meta_path, f"lists features {meta['features']}, expected {expected}")
    net.eval()
    return net, meta
