"""HFPolicy: batching, per-row stopping, honest finish reasons, prompts, loading errors.

Stopping rules are tested on a scripted Markov model (tiny.markov_llama: the next token is a fixed function of
the current one), so every expected output is known exactly; a random tiny model checks the invariants."""

from __future__ import annotations

import pytest
import torch

from uats_core.backends import load_policy
from uats_core.backends.hf_policy import HFPolicy
from uats_core.backends.tiny import QWEN_CHAT_TEMPLATE, char_tokenizer, markov_llama, save_causal_lm
from uats_core.errors import BackendError
from uats_core.protocols import STEP_DELIMITER, FinishReason, Policy, StepOutput, Trace

# Each trace's last prompt character picks a chain:
#   "\n\n" -> a -> b -> "\n\n"           a clean 3-token step ending at the delimiter
#   x -> y -> y -> ...                   never stops: hits the step cap
#   Q -> ".\n\nZ"                        one token that holds the delimiter and more: trimmed
#   e -> E -> </s>                       the model ends the solution
CHAINS = {
    "\n\n": "a",
    "a": "b",
    "b": "\n\n",
    "x": "y",
    "y": "y",
    "Q": ".\n\nZ",
    "e": "E",
    "E": "</s>",
    "n": "\n",
    "\n": "\n",
}


@pytest.fixture(scope="module")
def tok():
    return char_tokenizer(words=(".\n\nZ",))


@pytest.fixture(scope="module")
def markov(tok):
    return markov_llama(tok, CHAINS)


def make(markov, tok, **kw) -> HFPolicy:
    kw.setdefault("seed", 0)
    return HFPolicy(markov, tok, **kw)


def test_is_a_policy(markov, tok):
    assert isinstance(make(markov, tok), Policy)


def test_per_row_stopping_and_reasons_in_one_batch(markov, tok):
    pol = make(markov, tok, step_token_cap=6, solution_token_cap=100)
    out = pol.generate_steps(
        [Trace("q"), Trace("q", ("x",)), Trace("q", ("Q",)), Trace("q", ("e",)), Trace("q", ("ab\n\n",))]
    )
    assert out == [
        StepOutput("ab\n\n", 3, FinishReason.DELIMITER),
        StepOutput("yyyyyy", 6, FinishReason.STEP_CAP),
        StepOutput(".\n\n", 1, FinishReason.DELIMITER),  # ".\n\nZ" trimmed after the delimiter
        StepOutput("E", 2, FinishReason.EOS),  # E then </s>: eos counted, not in the text
        StepOutput("ab\n\n", 3, FinishReason.DELIMITER),
    ]


def test_delimiter_split_across_tokens(markov, tok):
    # "n" -> "\n" -> "\n": the delimiter arrives as two single-newline tokens.
    out = make(markov, tok).generate_steps([Trace("q", ("n",))])
    assert out == [StepOutput("\n\n", 2, FinishReason.DELIMITER)]


def test_one_generate_call_per_batch(markov, tok, monkeypatch):
    pol = make(markov, tok)
    calls = []
    real = markov.generate

    def counting(*a, **kw):
        calls.append(kw["input_ids"].shape)
        return real(*a, **kw)

    monkeypatch.setattr(markov, "generate", counting)
    pol.generate_steps([Trace("q"), Trace("a much longer question", ("x",)), Trace("q", ("Q",))])
    assert len(calls) == 1 and calls[0][0] == 3


def test_left_padding_gives_same_result_as_alone(markov, tok):
    traces = [Trace("q"), Trace("a much longer question here", ("x",)), Trace("zz", ("e",))]
    pol = make(markov, tok, step_token_cap=4)
    together = pol.generate_steps(traces)
    alone = [make(markov, tok, step_token_cap=4).generate_steps([t])[0] for t in traces]
    assert together == alone


def test_solution_cap(markov, tok):
    pol = make(markov, tok, step_token_cap=50, solution_token_cap=10)
    # 8 tokens already used ("xyyyyyyy"): 2 left, the y-chain is cut there.
    assert pol.generate_steps([Trace("q", ("xyyyyyyy",))]) == [StepOutput("yy", 2, FinishReason.SOLUTION_CAP)]
    # No room at all: nothing generated.
    assert pol.generate_steps([Trace("q", ("x" * 10,))]) == [StepOutput("", 0, FinishReason.SOLUTION_CAP)]
    # A step that closes at the delimiter exactly at the cap still ends the solution: there is no room left.
    assert pol.generate_steps([Trace("q", ("123456\n\n",))]) == [StepOutput("ab\n\n", 3, FinishReason.SOLUTION_CAP)]


def test_plain_prompt_ids(markov, tok):
    pol = make(markov, tok)
    assert not pol.use_chat
    t = Trace("What is 2+3?", ("2+3=5\n\n", "so 5"))
    expected = [tok.bos_token_id] + tok("What is 2+3?\n\n2+3=5\n\nso 5", add_special_tokens=False)["input_ids"]
    assert pol.prompt_ids(t) == expected


def test_chat_prompt_continues_the_assistant_turn(markov):
    chat_tok = char_tokenizer(
        specials=("<|im_start|>", "<|im_end|>", "<|endoftext|>"),
        bos=None,
        eos="<|im_end|>",
        pad="<|endoftext|>",
        chat_template=QWEN_CHAT_TEMPLATE,
    )
    model = markov_llama(chat_tok, {"\n\n": "a"})
    pol = HFPolicy(model, chat_tok, system_prompt="SYS")
    assert pol.use_chat
    ids = pol.prompt_ids(Trace("Q?", ("s1\n\n",)))
    text = chat_tok.decode(ids)
    assert text == "<|im_start|>system\nSYS<|im_end|>\n<|im_start|>user\nQ?<|im_end|>\n<|im_start|>assistant\ns1\n\n"
    assert ids.count(chat_tok.convert_tokens_to_ids("<|im_start|>")) == 3


def test_seed_replays_and_random_model_invariants(tmp_path):
    folder = save_causal_lm(tmp_path / "pol", hidden=32, layers=2, heads=2, kv_heads=1)
    traces = [Trace("What is 12+7?"), Trace("Compute 3*4.", ("3*4 = 12\n\n",))] * 3
    runs = []
    for _ in range(2):
        pol = load_policy(str(folder), seed=123, step_token_cap=24, solution_token_cap=40, dtype="float32")
        runs.append([pol.generate_steps(traces) for _ in range(3)])
    assert runs[0] == runs[1]
    tok = pol.tokenizer
    for out in (o for batch in runs[0] for o in batch):
        assert 1 <= out.num_tokens <= 24
        assert STEP_DELIMITER not in out.text[:-2]  # stopped at the first delimiter
        if out.finish_reason is FinishReason.DELIMITER:
            assert out.text.endswith(STEP_DELIMITER)
        if out.finish_reason is FinishReason.STEP_CAP:
            assert out.num_tokens == 24 and STEP_DELIMITER not in out.text
        if out.finish_reason is not FinishReason.EOS:
            # exact text: re-encoding gives back the generated tokens' count (char-level vocabulary)
            assert len(tok(out.text, add_special_tokens=False)["input_ids"]) <= out.num_tokens


def test_load_errors(tmp_path):
    with pytest.raises(BackendError) as err:
        load_policy(str(tmp_path / "nope"))
    assert err.value.field == "policy" and "nope" in str(err.value)
    with pytest.raises(BackendError, match="hf:org/model"):
        load_policy("org/model")
    with pytest.raises(BackendError, match="config.json"):
        load_policy(str(tmp_path))
    with pytest.raises(BackendError, match="GGUF"):
        load_policy(str(tmp_path / "missing.gguf"))


def test_gguf_without_package(tmp_path, monkeypatch):
    import importlib.util

    fake = tmp_path / "m.gguf"
    fake.write_bytes(b"GGUF")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "gguf" else real(name, *a))
    with pytest.raises(BackendError, match="pip install gguf"):
        load_policy(str(fake))


def test_dtype_option(tmp_path):
    folder = save_causal_lm(tmp_path / "pol", hidden=32, layers=2, heads=2, kv_heads=1)
    assert load_policy(str(folder), dtype="bfloat16").model.dtype == torch.bfloat16
    # "auto" keeps tiny models in float32: bf16 only pays for big matrix products
    assert load_policy(str(folder)).model.dtype == torch.float32
    with pytest.raises(BackendError, match="dtype"):
        load_policy(str(folder), dtype="int3")


def test_unseeded_policy_uses_and_advances_the_global_rng(tmp_path):
    folder = save_causal_lm(tmp_path / "pol", hidden=32, layers=2, heads=2, kv_heads=1)
    pol = load_policy(str(folder), step_token_cap=16, dtype="float32")  # no seed
    traces = [Trace("What is 12+7?")] * 4
    torch.manual_seed(0)
    first, second = pol.generate_steps(traces), pol.generate_steps(traces)
    assert first != second  # successive calls draw fresh samples
    torch.manual_seed(0)
    assert pol.generate_steps(traces) == first  # and a global seed replays them


def test_a_broken_gguf_fails_naming_the_file_and_leaves_no_copy(tmp_path, monkeypatch):
    pytest.importorskip("gguf")
    monkeypatch.setenv("UATS_CACHE", str(tmp_path / "cache"))
    broken = tmp_path / "half.gguf"
    broken.write_bytes(b"GGUF" + bytes(64))  # the magic, then nothing a reader can use
    with pytest.raises(BackendError) as err:
        load_policy(str(broken))
    assert err.value.field == "policy" and "cannot read the GGUF file half.gguf" in str(err.value)
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())


def test_a_gguf_copy_is_named_by_the_files_content(tmp_path):
    from uats_core.backends.gguf_copy import content_key

    a, b, c = tmp_path / "a.gguf", tmp_path / "b.gguf", tmp_path / "c.gguf"
    a.write_bytes(b"GGUF" + bytes(range(256)) * 40_000)  # over one hashing chunk
    b.write_bytes(a.read_bytes())
    c.write_bytes(a.read_bytes()[:-1] + b"\x01")
    assert content_key(a) == content_key(b) != content_key(c)
