"""The arithmetic world: exact checker, splits, determinism, tokenizer round trip, shipped models."""

from __future__ import annotations

import json
import random

import pytest
import torch

from uats_core.problems import Problem
from uats_core.worlds.arith import solutions, world
from uats_core.worlds.arith.solutions import (
    extract_answer,
    final_answer_correct,
    label_steps,
    parse_step,
    solve,
    step_correct,
)
from uats_core.worlds.arith.world import get_problem, load_split


def _problem(question: str, given: list[int], gold: list[tuple[str, tuple[str, int], tuple[str, int], int]]) -> Problem:
    return Problem(
        id="t",
        question=question,
        answer=str(gold[-1][3]),
        source="arith",
        meta={
            "given": given,
            "gold": [
                {"op": op, "a": {"kind": a[0], "ref": a[1]}, "b": {"kind": b[0], "ref": b[1]}, "value": v}
                for op, a, b, v in gold
            ],
        },
    )


# Mia has 12 boxes with 4 apples in each. She gives away 7 apples. She buys 3 bags with 5 apples in each.
# gold: 12*4=48; 48-7=41; 3*5=15; 41+15=56
P = _problem(
    "Mia has 12 boxes with 4 apples in each. She gives away 7 apples. She buys 3 bags with 5 apples in each. "
    "How many apples does Mia have now?",
    [12, 4, 7, 3, 5],
    [
        ("*", ("given", 12), ("given", 4), 48),
        ("-", ("step", 0), ("given", 7), 41),
        ("*", ("given", 3), ("given", 5), 15),
        ("+", ("step", 1), ("step", 2), 56),
    ],
)
GOLD_A = ["12 * 4 = 48", "48 - 7 = 41", "3 * 5 = 15", "41 + 15 = 56", "The answer is \\boxed{56}"]
GOLD_B = [
    "12 times 4 makes 48",
    "48 minus 7 makes 41",
    "3 times 5 makes 15",
    "41 plus 15 makes 56",
    "So the total is \\boxed{56}",
]


@pytest.mark.parametrize("steps", [GOLD_A, GOLD_B])
def test_gold_solution_all_correct(steps):
    assert label_steps(P, steps) == [True] * len(steps)
    # with the delimiters a policy writes
    assert label_steps(P, [s + "\n\n" for s in steps[:-1]] + [steps[-1]]) == [True] * len(steps)
    assert final_answer_correct(P, solutions.solution_text(steps))


def test_checker_accepts_commuted_operands_and_other_orders():
    assert step_correct(P, [], "4 * 12 = 48")
    assert step_correct(P, [], "4 times 12 makes 48")
    assert step_correct(P, [], "3 * 5 = 15")  # an independent gold step may come first
    assert step_correct(P, ["12 * 4 = 48", "3 * 5 = 15", "48 - 7 = 41"], "15 + 41 = 56")


def test_checker_rejects_arithmetic_slips():
    assert not step_correct(P, [], "12 * 4 = 46")
    assert not step_correct(P, [], "12 times 4 makes 46")
    assert not step_correct(P, ["12 * 4 = 48"], "48 - 7 = 42")
    assert not step_correct(P, ["12 times 4 makes 48"], "48 minus 7 makes 42")


def test_checker_rejects_wrong_operands_and_operations():
    assert not step_correct(P, [], "12 * 5 = 60")  # right arithmetic, wrong number
    assert not step_correct(P, ["12 * 4 = 48"], "48 - 5 = 43")
    assert not step_correct(P, ["12 * 4 = 48"], "48 + 7 = 55")  # wrong operation
    assert not step_correct(P, ["12 * 4 = 48"], "7 - 48 = -41")  # subtraction does not commute
    assert not step_correct(P, [], "48 - 7 = 41")  # 48 was never computed
    assert not step_correct(P, ["12 * 4 = 48"], "41 + 15 = 56")  # neither operand computed yet


def test_checker_after_a_slip_marks_dependent_steps_wrong():
    steps = ["12 * 4 = 46", "46 - 7 = 39", "3 * 5 = 15", "39 + 15 = 54", "The answer is \\boxed{54}"]
    assert label_steps(P, steps) == [False, False, True, False, False]
    steps_b = [
        "12 times 4 makes 46",
        "46 minus 7 makes 39",
        "3 times 5 makes 15",
        "39 plus 15 makes 54",
        "So the total is \\boxed{54}",
    ]
    assert label_steps(P, steps_b) == [False, False, True, False, False]


def test_checker_final_step_and_unparseable_steps():
    assert step_correct(P, GOLD_A[:-1], "The answer is \\boxed{56}")
    assert not step_correct(P, GOLD_A[:-1], "The answer is \\boxed{55}")
    assert not step_correct(P, [], "12 times 4 is 48 apples")
    assert not step_correct(P, [], "")
    assert extract_answer("x \\boxed{3} y \\boxed{ 12 }") == "12"
    assert extract_answer("no answer") is None
    assert not final_answer_correct(P, "12 * 4 = 48")
    assert parse_step("48 minus 7 makes 41\n\n") == (48, "-", 7, 41)
    assert parse_step("48 - 7 = 41") == (48, "-", 7, 41)


def test_slipped_solutions_agree_with_the_checker():
    rng = random.Random(0)
    for p in load_split("val", 60):
        for style in world.STYLES:
            steps, slips = solve(p, style, slip_rate=0.3, rng=rng)
            labels = label_steps(p, steps)
            assert len(steps) == len(p.meta["gold"]) + 1
            for s in slips:
                assert labels[s.step] is False, (p.question, steps, s)
            if not slips:
                assert all(labels)
                assert final_answer_correct(p, steps)
            # a step before the first slip is always right
            first = min((s.step for s in slips), default=len(steps) - 1)
            assert all(labels[:first])


def test_gold_matches_answer_and_bounds():
    for p in load_split("test", 100):
        steps, _ = solve(p, "A")
        assert final_answer_correct(p, steps)
        d = world.DEFAULT_DIFFICULTY
        assert d.min_ops <= len(p.meta["gold"]) <= d.max_ops
        assert all(0 <= g["value"] <= d.max_value for g in p.meta["gold"])
        assert p.source == "arith" and p.answer == str(int(p.answer))


def test_splits_are_disjoint_and_deterministic():
    tr = load_split("train", 3000)
    va = load_split("val", 200)
    te = load_split("test", 200)
    qs = [{p.question for p in s} for s in (tr, va, te)]
    assert len(qs[0]) == 3000 and len(qs[1]) == 200 and len(qs[2]) == 200  # no duplicates inside a split
    assert not (qs[0] & qs[1]) and not (qs[0] & qs[2]) and not (qs[1] & qs[2])
    assert all(world.split_of(p.question) == "test" for p in te)
    world._split_cached.cache_clear()
    assert [p.question for p in load_split("test", 200)] == [p.question for p in te]
    assert load_split("test", 10) == te[:10]  # a prefix does not depend on n
    other = load_split("test", 50, seed=1)
    assert [p.question for p in other] != [p.question for p in te[:50]]
    assert other[3].id == "arith-default-s1-test-3"


def test_get_problem_regenerates_ids():
    te = load_split("test", 20)
    assert get_problem("arith-test-17") == te[17]
    assert get_problem("arith-test-17").meta["gold"] == te[17].meta["gold"]
    hard = load_split("val", 5, seed=3, difficulty="hard")
    assert get_problem(hard[4].id) == hard[4]
    assert len(hard[4].meta["gold"]) >= 5
    custom = world.Difficulty(3, 3, 50, 10, 4, name="mine")
    c = load_split("test", 3, difficulty=custom)
    assert c[2].id == "arith-o3-3v50a10f4-s0-test-2"
    assert get_problem(c[2].id) == c[2] and len(c[2].meta["gold"]) == 3
    with pytest.raises(ValueError):
        get_problem("math-test-1")


# --------------------------------------------------------------------------------------------------
# Tokenizer and shipped models

from uats_core.worlds.arith.modeling import POLICY_DIRS, PRM_DIR, prm_step_scores, prm_text, sample_solutions  # noqa: E402

needs_models = pytest.mark.skipif(not (PRM_DIR / "model.safetensors").exists(), reason="models not trained")


@pytest.fixture(scope="module")
def tok():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(PRM_DIR) if PRM_DIR.exists() else _built_tokenizer()


def _built_tokenizer():
    from uats_core.worlds.arith.tokenizer import build_tokenizer

    return build_tokenizer()


def test_tokenizer_round_trip(tok):
    rng = random.Random(1)
    texts = []
    for diff in ("easy", "default", "hard"):
        for p in load_split("test", 40, difficulty=diff):
            for style in world.STYLES:
                steps, _ = solve(p, style, slip_rate=0.3, rng=rng)
                texts.append(p.question + "\n\n" + solutions.solution_text(steps))
                texts.append(prm_text(p.question, steps))
    for text in texts:
        ids = tok.encode(text, add_special_tokens=False)
        assert tok.unk_token_id not in ids
        assert tok.decode(ids) == text
    ids = tok.encode("12 * 4 = 48\n\n", add_special_tokens=False)
    assert tok.convert_ids_to_tokens(ids)[-1] == "\n\n"
    assert tok.convert_tokens_to_ids("<step>") != tok.unk_token_id
    assert (tok.bos_token, tok.eos_token, tok.pad_token, tok.unk_token) == ("<s>", "</s>", "<pad>", "<unk>")
    # numbers come in chunks of at most two digits: 48 is one token, 123 is "12" + "3", 007 round-trips
    assert len(tok.encode("48", add_special_tokens=False)) == 1
    assert tok.convert_ids_to_tokens(tok.encode(" 123", add_special_tokens=False)) == [" 12", "3"]
    assert tok.decode(tok.encode("7 = 007 + 0", add_special_tokens=False)) == "7 = 007 + 0"
    assert tok.chat_template is None


def test_shipped_tokenizer_matches_the_builder(tok):
    built = _built_tokenizer()
    assert built.get_vocab() == tok.get_vocab()


@needs_models
def test_models_load_and_produce_steps_and_scores(tok):
    from transformers import AutoModelForCausalLM, AutoModelForTokenClassification

    probs = load_split("test", 4)
    for style in ("A", "B"):
        policy = AutoModelForCausalLM.from_pretrained(POLICY_DIRS[style]).eval()
        assert policy.config.model_type == "llama"
        sols = sample_solutions(policy, tok, [p.question for p in probs], generator=torch.Generator().manual_seed(0))
        for s in sols:
            assert s and all(x.endswith("\n\n") for x in s[:-1])
            assert solutions.parse_step(s[0]) is not None  # the first step is a computation in some style
    prm = AutoModelForTokenClassification.from_pretrained(PRM_DIR).eval()
    assert prm.config.num_labels == 2
    side = json.loads((PRM_DIR / "uats_prm.json").read_text())
    assert side == {
        "kind": "token-classification",
        "step_tag": "<step>",
        "positive_label": 1,
        "question_suffix": "\n\n",
        "step_suffix": " <step>\n\n",
        "dropout_p": 0.1,
    }
    good, _ = solve(probs[0], "A")
    bad = ["1 * 1 = 7"] + good[1:]
    det = prm_step_scores(prm, tok, [(probs[0].question, good), (probs[0].question, bad)])
    assert det[0].shape == (1, len(good))
    assert all(0.0 <= x <= 1.0 for d in det for x in d.flatten().tolist())
    assert det[0][0, 0] > 0.5 > det[1][0, 0]  # the PRM tells a right first step from a wrong one
    # causal: a step's score depends on its prefix only
    prefix = prm_step_scores(prm, tok, [(probs[0].question, good[:2])])[0]
    assert torch.allclose(prefix[0], det[0][0, :2], atol=1e-5)
    mc = prm_step_scores(prm, tok, [(probs[0].question, good)], k=7, p=0.1)[0]
    assert mc.shape == (7, len(good)) and mc.var(0).sum() > 0  # dropout active at inference
    assert not prm.training


def test_problem_ids_out_of_range_are_refused_quickly() -> None:
    with pytest.raises(ValueError, match="too large"):
        world.get_problem("arith-test-99999999")
    assert world.get_problem("arith-default-s7-test-0").id == "arith-default-s7-test-0"


@needs_models
def test_report_numbers_repeat_with_the_same_seed(tok):
    """The MC-dropout masks are seeded too, so a report run twice prints the same variances."""
    from transformers import AutoModelForCausalLM, AutoModelForTokenClassification

    from uats.arith.report import evaluate_policy

    prm = AutoModelForTokenClassification.from_pretrained(PRM_DIR).eval()
    policy = AutoModelForCausalLM.from_pretrained(POLICY_DIRS["A"]).eval()
    probs = load_split("test", 3)
    runs = [
        evaluate_policy("A", policy, prm, tok, probs, samples=2, k=3, p=0.1, score_samples=1, seed=s) for s in (0, 0, 1)
    ]
    assert runs[0].variances == runs[1].variances and runs[0].scores == runs[1].scores
    assert runs[0].variances != runs[2].variances  # another seed draws other masks (and samples)
