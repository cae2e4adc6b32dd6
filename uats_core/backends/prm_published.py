"""Adapters for the published PRMs (Math-Shepherd, Qwen2.5-Math-PRM, Skywork-o1-Open-PRM) and an LLM-as-judge PRM.

Input formats follow each model's own card and code on the Hugging Face hub (the table in docs/backends.md). All run on
the shared MC-dropout engine and load without trust_remote_code: the Qwen and Skywork heads are rebuilt here on the
native Qwen2Model.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, cast

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from transformers import Qwen2Config, Qwen2Model, Qwen2PreTrainedModel

from uats_core.backends._loading import ModelSource, load_config, load_tokenizer, load_weights, resolve_device
from uats_core.backends.prm_base import Encoded, TorchPRM, binary_direction, float32_head, single_token_id
from uats_core.backends.prompting import DEFAULT_SYSTEM_PROMPT, chat_prefix, has_chat_template
from uats_core.errors import BackendError
from uats_core.protocols import Trace

log = logging.getLogger(__name__)


def _bos(tokenizer: Any) -> list[int]:
    return [tokenizer.bos_token_id] if tokenizer.bos_token_id is not None else []


def _cut_after_last(ids: list[int], positions: list[int]) -> tuple[int, ...]:
    # Causal models: tokens after the last score position change no score; cutting there lets a parent's ids
    # prefix its children's (prefix cache) and saves work.
    return tuple(ids[: positions[-1] + 1] if positions else ids)


def _two_logit_head(lm_head: Any, first: int, second: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The two rows of an LM head we need: softmax over [first, second] without computing the full vocabulary.
    Kept in float32 (see prm_base.float32_head for why)."""
    weight = lm_head.weight[[first, second]].detach().float()
    bias = lm_head.bias[[first, second]].detach().float() if getattr(lm_head, "bias", None) is not None else None
    return weight, bias


def _check_causal_lm(model: Any, name: str, kind: str) -> nn.Module:
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if head is None or not hasattr(head, "weight"):
        raise BackendError(
            "prm", f"{name} ({type(model).__name__}) has no language-model head; the {kind} PRM needs a causal LM"
        )
    return head


class MathShepherdPRM(TorchPRM):
    """peiyi9979/math-shepherd-mistral-7b-prm: question + " " + steps each ending " ки"; P("+") vs "-" at each ки."""

    kind = "math-shepherd"

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        step_tag: str = "ки",
        good_token: str = "+",
        bad_token: str = "-",
        **kw: Any,
    ) -> None:
        name = kw.get("name", "math-shepherd")
        lm_head = _check_causal_lm(model, name, self.kind)
        super().__init__(model, tokenizer, **kw)
        self.step_tag = step_tag
        # The model card's recipe: tag id = encode("ки")[-1]; candidates = encode("+ -") -> ["+", "-"].
        tag_ids = tokenizer(step_tag, add_special_tokens=False)["input_ids"]
        cand = tokenizer(f"{good_token} {bad_token}", add_special_tokens=False)["input_ids"]
        if not tag_ids or len(cand) < 2 or tokenizer.unk_token_id in (*tag_ids[-1:], cand[0], cand[-1]):
            raise BackendError(
                "prm",
                f"{name}: the tokenizer lacks the Math-Shepherd tokens {step_tag!r}/{good_token!r}/"
                f"{bad_token!r}; this model does not fit kind='math-shepherd'",
            )
        self.tag_id = int(tag_ids[-1])
        self._w, self._b = _two_logit_head(lm_head, int(cand[0]), int(cand[-1]))

    def encode(self, trace: Trace) -> Encoded:
        tag = self.step_tag
        parts = []
        for step in trace.steps:
            step = step.replace(tag, "")
            # search-and-learn: "\n\n" -> " ки\n\n", and " ки" appended when the text does not end in "\n\n".
            parts.append(step[:-2] + f" {tag}\n\n" if step.endswith("\n\n") else step + f" {tag}")
        text = trace.question.replace(tag, "") + " " + "".join(parts)
        ids = _bos(self.tokenizer) + list(self.tokenizer(text, add_special_tokens=False)["input_ids"])
        positions = [i for i, t in enumerate(ids) if t == self.tag_id]
        return Encoded(_cut_after_last(ids, positions), tuple(positions))

    def head(self, hidden: torch.Tensor) -> torch.Tensor:
        return torch.softmax(F.linear(hidden.float(), self._w, self._b), dim=-1)[..., 0]

    def head_linear(self) -> tuple[np.ndarray, float]:
        return binary_direction(self._w, self._b, 0, 1)


class Qwen2ProcessRewardModel(Qwen2PreTrainedModel):
    """Qwen2.5-Math-PRM without remote code: native Qwen2Model + score = Linear(h,h) -> ReLU -> Linear(h,2).
    Module names match the checkpoint's keys: "model.*", "score.0.*", "score.2.*"."""

    config_class = Qwen2Config

    def __init__(self, config: Qwen2Config) -> None:
        super().__init__(config)
        self.model = Qwen2Model(config)
        h = config.hidden_size
        self.score = nn.Sequential(nn.Linear(h, h), nn.ReLU(), nn.Linear(h, 2))
        self.post_init()

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, **kw: Any) -> torch.Tensor:
        """Per-token [P(wrong), P(right)] logits (for direct use; the PRM adapter drives the layers itself)."""
        return self.score(self.model(input_ids=input_ids, attention_mask=attention_mask, **kw).last_hidden_state)


class QwenPRM(TorchPRM):
    kind = "qwen-prm"
    SEPARATOR = "<extra_0>"

    def __init__(self, model: Any, tokenizer: Any, *, system_prompt: str = DEFAULT_SYSTEM_PROMPT, **kw: Any) -> None:
        name = kw.get("name", "qwen-prm")
        if not isinstance(getattr(model, "score", None), nn.Sequential):
            raise BackendError(
                "prm", f"{name} ({type(model).__name__}) has no Qwen PRM score head; load it with kind='qwen-prm'"
            )
        if not has_chat_template(tokenizer):
            raise BackendError(
                "prm", f"{name}: the Qwen PRM needs its tokenizer's chat template, and this tokenizer has none"
            )
        super().__init__(model, tokenizer, **kw)
        self.system_prompt = system_prompt
        self.sep_id = single_token_id(tokenizer, self.SEPARATOR, name, "the Qwen PRM step separator")
        self._score = float32_head(model.score)

    def encode(self, trace: Trace) -> Encoded:
        sep = self.SEPARATOR
        steps = [s.replace(sep, "").strip() for s in trace.steps]
        messages = [
            {"role": "system", "content": self.system_prompt},
            {"role": "user", "content": trace.question.replace(sep, "")},
            {"role": "assistant", "content": sep.join(steps) + sep},
        ]
        text = self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=False)
        ids = list(self.tokenizer(text, add_special_tokens=False)["input_ids"])
        positions = [i for i, t in enumerate(ids) if t == self.sep_id]
        return Encoded(_cut_after_last(ids, positions), tuple(positions))

    def head(self, hidden: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self._score(hidden.float()), dim=-1)[..., 1]


class _ValueHead(nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.summary = nn.Linear(hidden, 1)


class SkyworkPRMModel(Qwen2PreTrainedModel):
    """Skywork-o1-Open-PRM: Qwen2 backbone + value head `v_head.summary` = Linear(hidden, 1). The checkpoint's
    lm_head is not needed for scoring and is left unloaded."""

    config_class = Qwen2Config
    _keys_to_ignore_on_load_unexpected = [r"lm_head\."]

    def __init__(self, config: Qwen2Config) -> None:
        super().__init__(config)
        self.model = Qwen2Model(config)
        self.v_head = _ValueHead(config.hidden_size)
        self.post_init()

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, **kw: Any) -> torch.Tensor:
        """Per-token value logits (for direct use; the PRM adapter drives the layers itself)."""
        return self.v_head.summary(
            self.model(input_ids=input_ids, attention_mask=attention_mask, **kw).last_hidden_state
        ).squeeze(-1)


class SkyworkPRM(TorchPRM):
    """Input = bos + problem + "\\n", then each step's ids followed by the step token; reward = sigmoid(value) there.
    The step token is "\\n" as in Skywork's code (DORA uses "\\n\\n"); each of our steps gets exactly one."""

    kind = "skywork"

    def __init__(self, model: Any, tokenizer: Any, *, step_token: str = "\n", **kw: Any) -> None:
        name = kw.get("name", "skywork")
        if not hasattr(getattr(model, "v_head", None), "summary"):
            raise BackendError(
                "prm", f"{name} ({type(model).__name__}) has no value head v_head; load it with kind='skywork'"
            )
        super().__init__(model, tokenizer, **kw)
        ids = tokenizer(step_token, add_special_tokens=False)["input_ids"]
        if not ids:
            raise BackendError("prm", f"{name}: the step token {step_token!r} encodes to nothing")
        self.step_token_id = int(ids[-1])
        self._value = float32_head(model.v_head.summary)

    def encode(self, trace: Trace) -> Encoded:
        tok = self.tokenizer
        bos_text = tok.bos_token or ""
        ids = list(tok(bos_text + trace.question + "\n", add_special_tokens=False)["input_ids"])
        positions = []
        for step in trace.steps:
            step = step.strip()
            # Built per step (not by searching for the step token): "\n" also occurs inside steps.
            ids.extend(tok(step, add_special_tokens=False)["input_ids"] if step else [])
            ids.append(self.step_token_id)
            positions.append(len(ids) - 1)
        return Encoded(tuple(ids), tuple(positions))

    def head(self, hidden: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self._value(hidden.float())).squeeze(-1)

    def head_linear(self) -> tuple[np.ndarray, float]:
        value = cast(nn.Linear, self._value)  # the value head's summary: one linear layer
        bias = value.bias
        return value.weight[0].detach().double().cpu().numpy(), float(bias[0].detach()) if bias is not None else 0.0


JUDGE_TEMPLATE = (
    "Here is a math problem and a partial solution, one step per paragraph.\n\nProblem:\n{question}\n\n"
    "Solution so far:\n{solution}\n\nIs the last step correct? Answer Yes or No."
)


class JudgePRM(TorchPRM):
    """LLM-as-judge: P("Yes") / (P("Yes") + P("No")) for "is the last step correct?", from any (instruct) causal LM.
    One sequence per judged step, so score() runs a prefix of the trace per step."""

    kind = "judge"

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        template: str = JUDGE_TEMPLATE,
        system_prompt: str | None = None,
        yes: str = "Yes",
        no: str = "No",
        **kw: Any,
    ) -> None:
        name = kw.get("name", "judge")
        lm_head = _check_causal_lm(model, name, self.kind)
        super().__init__(model, tokenizer, **kw)
        self.template = template
        self.system_prompt = system_prompt
        self.use_chat = has_chat_template(tokenizer)
        yes_ids = tokenizer(yes, add_special_tokens=False)["input_ids"]
        no_ids = tokenizer(no, add_special_tokens=False)["input_ids"]
        # The answer's first token decides; a word split into pieces is read by its first piece.
        if not yes_ids or not no_ids or yes_ids[0] == no_ids[0]:
            raise BackendError("prm", f"{name}: cannot tell {yes!r} from {no!r} by their first token")
        self._w, self._b = _two_logit_head(lm_head, int(yes_ids[0]), int(no_ids[0]))

    def encode(self, trace: Trace) -> Encoded:
        """The prompt judging the LAST step; its one score position is the last prompt token."""
        user = self.template.format(question=trace.question, solution="".join(trace.steps).rstrip())
        if self.use_chat:
            text = chat_prefix(self.tokenizer, user, self.system_prompt)
            ids = list(self.tokenizer(text, add_special_tokens=False)["input_ids"])
        else:
            ids = _bos(self.tokenizer) + list(self.tokenizer(user + "\nAnswer:", add_special_tokens=False)["input_ids"])
        return Encoded(tuple(ids), (len(ids) - 1,))

    def _encode(self, trace: Trace) -> Encoded:
        return self.encode(trace)  # one position per prompt, not per step: skip the base class's count check

    @torch.inference_mode()
    def score(self, traces: Sequence[Trace], *, use_cache: bool = True) -> list[list[float]]:
        prefixes = [(i, Trace(t.question, t.steps[: j + 1])) for i, t in enumerate(traces) for j in range(len(t.steps))]
        out: list[list[float]] = [[] for _ in traces]
        if not prefixes:
            return out
        with self._lock:
            encs = [self.encode(p) for _, p in prefixes]
            hidden = self.engine.hidden_at(
                [e.ids for e in encs], [e.positions for e in encs], k=1, spec=None, use_cache=use_cache
            )
            for (i, _), h in zip(prefixes, hidden):
                out[i].append(float(self.head(h[0])[0]))
        return out

    def _prefixes(self, trace: Trace) -> list[tuple[int, ...]]:
        return []  # a judge prompt for a parent is not a prefix of its child's

    def head(self, hidden: torch.Tensor) -> torch.Tensor:
        return torch.softmax(F.linear(hidden.float(), self._w, self._b), dim=-1)[..., 0]

    def head_linear(self) -> tuple[np.ndarray, float]:
        return binary_direction(self._w, self._b, 0, 1)


_QWEN2_KINDS = {"qwen-prm": (Qwen2ProcessRewardModel, ("score.",)), "skywork": (SkyworkPRMModel, ("v_head.",))}
_ADAPTERS = {"math-shepherd": MathShepherdPRM, "qwen-prm": QwenPRM, "skywork": SkyworkPRM, "judge": JudgePRM}


def load(
    kind: str,
    src: ModelSource,
    *,
    dtype: Any = "auto",
    device: str | None = "auto",
    trust_remote_code: bool = False,
    attn_implementation: str = "sdpa",
    preloaded: tuple[Any, Any] | None = None,
    **opts: Any,
) -> TorchPRM:
    """Load a published PRM of the given kind; the model must fit the adapter's architecture.
    preloaded: (model, tokenizer) already in memory (a policy's), used instead of loading the weights again."""
    from transformers import AutoModelForCausalLM

    opts.setdefault("name", src.spec)
    if preloaded is not None:
        return _ADAPTERS[kind](preloaded[0], preloaded[1], **opts)
    dev = resolve_device(device)
    tokenizer = load_tokenizer(src, "prm", trust_remote_code)
    if kind in _QWEN2_KINDS:
        config = load_config(src, "prm", trust_remote_code)
        if getattr(config, "model_type", None) != "qwen2":
            raise BackendError(
                "prm",
                f"{src.spec!r} is a {getattr(config, 'model_type', '?')} model, but kind={kind!r} needs a Qwen2 "
                "backbone; pass the right kind=",
            )
        cls, required = _QWEN2_KINDS[kind]
        model = load_weights(
            cls,
            src,
            "prm",
            dtype=dtype,
            device=dev,
            required_prefixes=required,
            attn_implementation=attn_implementation,
        )
    else:
        model = load_weights(
            AutoModelForCausalLM,
            src,
            "prm",
            dtype=dtype,
            device=dev,
            trust_remote_code=trust_remote_code,
            attn_implementation=attn_implementation,
        )
    prm = _ADAPTERS[kind](model, tokenizer, **opts)
    prm.folder = src.location if src.kind == "folder" else None
    return prm
