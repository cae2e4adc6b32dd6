"""Grading: answer extraction, the exact number fast path, math-verify for the rest, and its worker process."""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction

import pytest

from uats_core.grading import Grader, _plain_number, extract_boxed, group_answers, tally, vote


@pytest.fixture(scope="module")
def grader() -> Iterator[Grader]:
    g = Grader(timeout_s=120.0)  # generous: the first call starts the worker and imports sympy on a busy CPU
    try:
        yield g
    finally:
        g.close()


@pytest.mark.parametrize(
    "text,value",
    [
        ("1,234,567", Fraction(1234567)),
        ("-1,234.5", Fraction(-24690, 20)),
        ("1{,}234", Fraction(1234)),
        ("1 000", Fraction(1000)),
        ("1\\,000", Fraction(1000)),
        ("025", Fraction(25)),
        ("$42$", Fraction(42)),
        ("\\text{42}", Fraction(42)),
        ("3 / 4", Fraction(3, 4)),
        ("\\frac{3}{4}", Fraction(3, 4)),
        ("-\\dfrac{1}{2}", Fraction(-1, 2)),
        (".5", Fraction(1, 2)),
    ],
)
def test_plain_numbers(text: str, value: Fraction) -> None:
    assert _plain_number(text) == value


@pytest.mark.parametrize(
    "text",
    [
        "1, 2",
        "2,1",
        "12,34",
        "1,2345",
        "1,000,00",
        "1 2",
        "1, 234",
        "1,000 000",
        "x",
        "\\frac{1}{0}",
        "1/0",
        "(1,2)",
        "[0,1)",
    ],
)
def test_lists_and_odd_groupings_are_not_plain_numbers(text: str) -> None:
    assert _plain_number(text) is None


def test_extract_boxed() -> None:
    assert extract_boxed("so \\boxed{\\frac{1}{2}} and finally \\boxed{\\{1, 2\\}}.") == "\\{1, 2\\}"
    assert extract_boxed("\\fbox{7}") == "7"
    assert extract_boxed("\\boxed{\\frac{1}{2}") is None  # cut off mid-answer
    assert extract_boxed("no box") is None and extract_boxed(None) is None


@pytest.mark.parametrize(
    "gold,pred,same",
    [
        # lists and sets: order does not matter, digits are not glued together
        ("1, 2", "2, 1", True),
        ("1, 2", "12", False),
        ("12", "1, 2", False),
        ("\\{1,2\\}", "\\{2,1\\}", True),
        ("1, 2, 3", "3, 2, 1", True),
        ("-1, 2", "2, -1", True),
        # thousands separators
        ("1,234", "1234", True),
        ("1234567", "1,234,567", True),
        ("1,234", "1.234", False),
        # intervals: the brackets matter
        ("[0, 1)", "[0,1)", True),
        ("(0,1]", "[0,1]", False),
        ("x \\in [2, 5]", "[2,5]", True),
        # \frac against decimals
        ("\\frac{1}{2}", "0.5", True),
        ("\\frac{1}{3}", "0.333", False),
        ("\\frac{3}{4}", "3/4", True),
        ("\\sqrt{2}/2", "\\frac{\\sqrt2}{2}", True),
        ("3\\sqrt{2}", "\\sqrt{18}", True),
        # units and percent
        ("5\\text{ cm}", "5", True),
        ("10\\%", "10", True),
        # text answers
        ("\\text{Monday}", "Monday", True),
        ("\\text{(C)}", "C", True),
        ("\\text{Monday}", "Tuesday", False),
        # AIME integers with leading zeros
        ("25", "025", True),
        ("25", "250", False),
    ],
)
def test_tricky_pairs(grader: Grader, gold: str, pred: str, same: bool) -> None:
    assert grader.equivalent(gold, pred) is same


def test_missing_answers_are_never_equivalent(grader: Grader) -> None:
    assert not grader.equivalent(None, "1") and not grader.equivalent("1", None)


def test_votes_group_reordered_lists_and_keep_numbers_apart(grader: Grader) -> None:
    assert group_answers(["1, 2", "2, 1", "12", "1,2"], grader) == [0, 0, 1, 0]
    candidates = [("12", 0.9, "a"), ("1, 2", 0.5, "b"), ("2, 1", 0.5, "c")]
    assert vote(candidates, grader) == "1, 2" and vote(candidates, grader, "best") == "12"


def test_the_four_aggregations(grader: Grader) -> None:
    """The issue's REBASE case in small: copies of one wrong solution outvote the right answer under the weighted
    vote and plain majority, not when each distinct solution counts once; the best score picks the top candidate."""
    wrong = [("14", 0.88, "w1")] * 5 + [("14", 0.80, "w2")]
    right = [("15", 0.91, "r1"), ("15", 0.90, "r2"), ("15", 0.89, "r3")]
    candidates = wrong + right + [(None, 0.99, "cut")]  # no answer: in no vote, whatever its score
    assert vote(candidates, grader, "weighted") == "14"  # 5 x 0.88 + 0.80 > 2.70
    assert vote(candidates, grader, "majority") == "14"
    assert vote(candidates, grader, "distinct") == "15"  # 0.88 + 0.80 < 0.91 + 0.90 + 0.89
    assert vote(candidates, grader, "best") == "15"
    assert vote([(None, 0.5, "x")], grader, "majority") is None
    # ties go to the answer seen first; 'best' to the first candidate with the top score
    assert tally([(1, 1, 0.5, 0.5), (0, 1, 0.5, 0.5)], "weighted") == 1
    assert tally([(0, 1, 0.2, 0.2), (1, 1, 0.7, 0.7), (0, 1, 0.7, 0.7)], "best") == 1
    with pytest.raises(ValueError, match="aggregation"):
        tally([(0, 1, 0.5, 0.5)], "mean")


def test_the_worker_is_restarted_after_it_dies() -> None:
    g = Grader(timeout_s=120.0)
    try:
        assert g.equivalent("\\sqrt{4}", "2")  # not a plain number: goes to the worker
        pool = g._pool
        assert pool is not None
        procs = list(pool._processes.values())  # type: ignore[union-attr]
        for proc in procs:
            proc.kill()
            proc.join(30)
        # every later call used to raise BrokenProcessPool; now a fresh worker answers
        assert g.equivalent("\\sqrt{4}", "2.0")
        assert not g.equivalent("\\sqrt{5}", "2")
        assert g._pool is not pool
    finally:
        g.close()
