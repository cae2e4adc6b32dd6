"""Estimators from the PRM's final hidden state at a step: a last-layer Laplace posterior of its head, and the
Mahalanobis distance of the hidden state to the PRM's training steps. Neither retrains the backbone: both are fitted
from one deterministic pass over in-distribution steps (`fit_head`), labels not needed, and stored beside the PRM
(HEAD_FIT_FILE, a safetensors file).

Every supported head is one logit direction on the final normalised hidden state h: P(correct) = sigmoid(w·h + b)
(a two-label softmax is the sigmoid of its logits' difference). With φ = [h, 1] and θ = [w, b]:

- Laplace: the posterior of θ under a N(0, λ⁻¹I) prior is approximated by N(θ̂, Λ⁻¹) with the logistic likelihood's
  Hessian Λ = λI + Σᵢ pᵢ(1−pᵢ) φᵢφᵢᵀ at the shipped θ̂ over the fit steps (λ = PRIOR_PRECISION). Sample j of a node is
  sigmoid(φ·θⱼ) with θⱼ = θ̂ + Lzⱼ, LLᵀ = Λ⁻¹, zⱼ the j-th row of one fixed N(0, I) stream: every node reads the same
  draws, so a re-evaluation reads the next ones. One sample is a dot product on a hidden state the first pass gave;
  it is priced as a PRM pass anyway (sample_cost 1) so its searches stay compute matched to MC dropout's, and the
  benchmark (python -m benchmarks estimators) measures what it really costs.
- Mahalanobis: d² = (h−μ)ᵀ(Σ + εI)⁻¹(h−μ) with μ, Σ the fit steps' mean and covariance (ε = SHRINK times Σ's mean
  diagonal). The stated map to σ²: a logit-space variance s² = d²/D (D the hidden size; 1 on average in distribution,
  as E[d²] = D there) carried to the probability scale by the delta method, σ² = (p(1−p))²·s², p the deterministic
  score. One pass gives everything: K = 1, and re-evaluation has nothing to add."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError
from ..protocols import Trace
from .base import Estimate, Estimator, from_samples

log = logging.getLogger(__name__)

HEAD_FIT_FILE = "uats_head_fit.safetensors"
PRIOR_PRECISION = 1.0  # λ: a unit Gaussian prior on the head's weights
SHRINK = 1e-3  # ε relative to the mean variance: keeps Σ invertible along directions the fit steps never vary in
DRAW_SEED = 0  # the Laplace draws' stream: fixed, so a run's samples depend on its trace only
DRAW_BLOCK = 64


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))  # exact sigmoid without overflow warnings


class HeadFit:
    """What both estimators read: the head's θ̂, the Laplace factor L and the fit steps' μ and (Σ + εI)⁻¹."""

    def __init__(self, theta: np.ndarray, chol: np.ndarray, mu: np.ndarray, precision: np.ndarray, n: int) -> None:
        self.theta, self.chol, self.mu, self.precision, self.n = theta, chol, mu, precision, int(n)

    def to_tensors(self) -> dict[str, np.ndarray]:
        return {
            "theta": self.theta,
            "chol": self.chol,
            "mu": self.mu,
            "precision": self.precision,
            "n": np.asarray([self.n], dtype=np.int64),
        }

    @classmethod
    def from_tensors(cls, t: dict[str, np.ndarray]) -> HeadFit:
        return cls(t["theta"], t["chol"], t["mu"], t["precision"], int(t["n"][0]))

    def save(self, path: Path) -> None:
        from safetensors.numpy import save_file

        save_file({k: np.ascontiguousarray(v) for k, v in self.to_tensors().items()}, str(path))

    @classmethod
    def load(cls, path: Path) -> HeadFit:
        from safetensors.numpy import load_file

        return cls.from_tensors(load_file(str(path)))


def fit_head(hidden: np.ndarray, w: np.ndarray, b: float, prior_precision: float = PRIOR_PRECISION) -> HeadFit:
    """Fit both estimators on the (n, D) final hidden states of in-distribution steps, for the head sigmoid(w·h + b)."""
    h = np.asarray(hidden, dtype=np.float64)
    if h.ndim != 2 or h.shape[0] < 2 or h.shape[1] != len(w):
        raise ValueError(f"need (n >= 2, {len(w)}) hidden states; got {h.shape}")
    phi = np.hstack([h, np.ones((len(h), 1))])
    theta = np.append(np.asarray(w, dtype=np.float64), float(b))
    p = sigmoid(phi @ theta)
    hess = (phi * (p * (1 - p))[:, None]).T @ phi + prior_precision * np.eye(phi.shape[1])
    chol = np.linalg.cholesky(np.linalg.inv(hess))
    mu = h.mean(axis=0)
    cov = np.cov(h, rowvar=False)
    cov += SHRINK * float(np.mean(np.diag(cov))) * np.eye(h.shape[1])
    return HeadFit(theta, chol, mu, np.linalg.inv(cov), len(h))


class _HiddenStateEstimator(Estimator):
    def __init__(self, prm: Any, fit: HeadFit) -> None:
        self.prm, self.fit = prm, fit

    def features(self, traces: Sequence[Trace]) -> np.ndarray:
        """(n, D) final hidden states at the traces' last steps: one deterministic PRM pass each."""
        return np.asarray(self.prm.last_hidden(list(traces)), dtype=np.float64)


class Laplace(_HiddenStateEstimator):
    name = "laplace"
    sample_cost = 1.0  # priced as a PRM pass (see the module's docstring); measured by the benchmark
    sample_label = "posterior draw"

    def __init__(self, prm: Any, fit: HeadFit) -> None:
        super().__init__(prm, fit)
        self._rng = np.random.default_rng(DRAW_SEED)
        self._z = np.zeros((0, len(fit.theta)))

    def draws(self, start: int, k: int) -> np.ndarray:
        """θ_start .. θ_{start+k−1}, (k, D+1): the j-th draw is the same for every node and every call."""
        while len(self._z) < start + k:
            self._z = np.vstack([self._z, self._rng.standard_normal((DRAW_BLOCK, len(self.fit.theta)))])
        return self.fit.theta + self._z[start : start + k] @ self.fit.chol.T

    def more(self, traces: Sequence[Trace], have: Sequence[Sequence[float]], k: int) -> list[Estimate]:
        if not traces or k <= 0:
            return [from_samples(h, 0) for h in have]
        phi = np.hstack([self.features(traces), np.ones((len(traces), 1))])
        out = []
        for i, h in enumerate(have):
            samples = sigmoid(self.draws(len(h), k) @ phi[i])
            out.append(from_samples([*h, *samples], k))
        return out


class Mahalanobis(_HiddenStateEstimator):
    name = "mahalanobis"
    sample_cost = 1.0  # its one sample is the deterministic PRM pass
    adds_samples = False
    sample_label = "deterministic pass"

    @classmethod
    def first_samples(cls, k0: int) -> int:
        return 1

    def capacity(self, have: int) -> int | None:
        return 0 if have else 1

    def distance2(self, hidden: np.ndarray) -> np.ndarray:
        d = np.asarray(hidden, dtype=np.float64) - self.fit.mu
        return np.einsum("ij,jk,ik->i", d, self.fit.precision, d)

    def more(self, traces: Sequence[Trace], have: Sequence[Sequence[float]], k: int) -> list[Estimate]:
        todo = [i for i, h in enumerate(have) if not h and k > 0]
        out = [_held(h) for h in have]
        if not todo:
            return out
        hidden = self.features([traces[i] for i in todo])
        theta = self.fit.theta
        p = sigmoid(hidden @ theta[:-1] + theta[-1])
        s2 = self.distance2(hidden) / hidden.shape[1]
        for i, pi, si in zip(todo, p, s2):
            out[i] = distance_estimate(float(pi), float(si))
        return out


def distance_estimate(p: float, logit_var: float) -> Estimate:
    """The Mahalanobis map: one sample p, logit-space σ² = d²/D, probability σ² = (p(1−p))²·d²/D."""
    q = min(max(p, 1e-6), 1 - 1e-6)
    return Estimate((p,), 1, p, (q * (1 - q)) ** 2 * logit_var, float(np.log(q) - np.log1p(-q)), logit_var)


def _held(samples: Sequence[float]) -> Estimate:
    """A node's estimate unchanged (Mahalanobis reads nothing new); its σ² stays what the context stored."""
    p = float(samples[0]) if samples else float("nan")
    return Estimate(tuple(float(x) for x in samples), 0, p, None, None, None)


def head_fit_path(prm: Any) -> Path | None:
    folder = getattr(prm, "folder", None)
    return Path(folder) / HEAD_FIT_FILE if folder else None


def load_head_fit(prm: Any, estimator: str) -> HeadFit:
    path = head_fit_path(prm)
    if path is None or not path.is_file():
        raise ConfigError(
            "estimator",
            f"{estimator} needs the PRM's head fit ({path or '<PRM folder>/' + HEAD_FIT_FILE}), "
            "which is missing; fit it with `python -m uats estimators fit --prm SPEC` or "
            "pick another estimator",
        )
    return HeadFit.load(path)
