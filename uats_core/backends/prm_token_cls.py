"""A generic token-classification PRM: a score per step read at a step-separator token (the arithmetic world's PRM).

Sidecar `uats_prm.json` in the model folder:
  {"kind": "token-classification", "step_tag": "<step>", "positive_label": 1,
   "question_suffix": "\\n\\n", "step_suffix": " <step>\\n\\n", "dropout_p": 0.1}
Input = [bos] + question + question_suffix + "".join(step.strip() + step_suffix for step in steps);
score of step i = softmax(logits at the i-th step tag)[positive_label].
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch

from uats_core.backends._loading import ModelSource, load_tokenizer, load_weights, resolve_device
from uats_core.backends.prm_base import Encoded, TorchPRM, binary_direction, float32_head, single_token_id
from uats_core.errors import BackendError
from uats_core.protocols import Trace

log = logging.getLogger(__name__)

SIDECAR = "uats_prm.json"


@dataclass(frozen=True)
class TokenClsFormat:
    step_tag: str = "<step>"
    positive_label: int = 1
    question_suffix: str = "\n\n"
    step_suffix: str = " <step>\n\n"
    dropout_p: float = 0.1

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TokenClsFormat:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def read_sidecar(folder: str | Path) -> dict[str, Any] | None:
    path = Path(folder) / SIDECAR
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise BackendError("prm", f"cannot read {path} ({exc}); fix or remove the sidecar") from None
    if not isinstance(data, dict):
        raise BackendError("prm", f"{path} must hold a JSON object")
    return data


class TokenClassificationPRM(TorchPRM):
    kind = "token-classification"

    def __init__(self, model: Any, tokenizer: Any, fmt: TokenClsFormat | None = None, **kw: Any) -> None:
        fmt = fmt or TokenClsFormat()
        name = kw.get("name", "token-cls-prm")
        if fmt.step_tag not in fmt.step_suffix:
            raise BackendError(
                "prm", f"{name}: step_suffix {fmt.step_suffix!r} must contain the step tag {fmt.step_tag!r}"
            )
        head = getattr(model, "score", None)
        n_labels = getattr(head, "out_features", None)
        if not isinstance(head, torch.nn.Linear) or n_labels is None or not 0 <= fmt.positive_label < n_labels:
            raise BackendError(
                "prm",
                f"{name} ({type(model).__name__}) has no token-classification head `score` with more than "
                f"{fmt.positive_label} labels; load a *ForTokenClassification model or pass the right kind=",
            )
        super().__init__(model, tokenizer, **kw)
        self.fmt = fmt
        self.tag_id = single_token_id(tokenizer, fmt.step_tag, name, "the step tag")
        self._score = float32_head(model.score)

    @classmethod
    def from_pretrained(
        cls,
        src: ModelSource,
        *,
        dtype: Any = "auto",
        device: str | None = "auto",
        trust_remote_code: bool = False,
        sidecar: dict[str, Any] | None = None,
        attn_implementation: str = "sdpa",
        **kw: Any,
    ) -> TokenClassificationPRM:
        from transformers import AutoModelForTokenClassification

        dev = resolve_device(device)
        data = dict(sidecar or (read_sidecar(src.location) if src.kind == "folder" else None) or {})
        for key in ("step_tag", "positive_label", "question_suffix", "step_suffix"):
            if key in kw:
                data[key] = kw.pop(key)
        fmt = TokenClsFormat.from_dict(data)
        if (
            "dropout_p" in kw
            and data.get("dropout_p") is not None
            and float(kw["dropout_p"]) != float(data["dropout_p"])
        ):
            log.warning(
                "%s was trained with dropout p=%s; scoring with p=%s", src.spec, data["dropout_p"], kw["dropout_p"]
            )
        tokenizer = load_tokenizer(src, "prm", trust_remote_code)
        model = load_weights(
            AutoModelForTokenClassification,
            src,
            "prm",
            dtype=dtype,
            device=dev,
            trust_remote_code=trust_remote_code,
            required_prefixes=("score.",),
            attn_implementation=attn_implementation,
        )
        kw.setdefault("name", src.spec)
        prm = cls(model, tokenizer, fmt, **kw)
        prm.folder = src.location if src.kind == "folder" else None
        return prm

    def encode(self, trace: Trace) -> Encoded:
        tag = self.fmt.step_tag
        # A literal tag inside the text would add a spurious score position: drop it.
        text = (
            trace.question.replace(tag, "")
            + self.fmt.question_suffix
            + "".join(step.replace(tag, "").strip() + self.fmt.step_suffix for step in trace.steps)
        )
        ids = list(self.tokenizer(text, add_special_tokens=False)["input_ids"])
        bos = self.tokenizer.bos_token_id
        ids = ([bos] if bos is not None else []) + ids
        positions = [i for i, t in enumerate(ids) if t == self.tag_id]
        # Causal model: nothing after the last tag changes any score. Cutting there makes a parent's ids a
        # prefix of its children's, which the prefix cache needs.
        end = positions[-1] + 1 if positions else len(ids)
        return Encoded(tuple(ids[:end]), tuple(positions))

    def head(self, hidden: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self._score(hidden.float()), dim=-1)[..., self.fmt.positive_label]

    def head_linear(self) -> tuple[np.ndarray, float]:
        score = cast(torch.nn.Linear, self._score)  # checked a Linear at load (above)
        if score.out_features != 2:
            return super().head_linear()  # over two labels the head is not one logit direction
        pos = self.fmt.positive_label
        return binary_direction(score.weight, score.bias, pos, 1 - pos)
