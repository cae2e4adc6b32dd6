"""The arithmetic world's solutions: writing them in style A or B (with deliberate slips) and the exact step
checker that labels them against a problem's gold computation (world.py generates the problems).

The checker is exact: a computation step is correct when its arithmetic is right, each operand is a
number given in the question or a value computed correctly in an earlier step, and the operation is one
of the gold computation's (commuted operands allowed for + and *). A step with ``\\boxed{}`` is correct
when the boxed integer is the gold answer.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from uats_core.problems import Problem

from .world import apply_op, gold_steps, operand_value

# --------------------------------------------------------------------------------------------------
# Writing solutions

_OP_WORD = {"+": "plus", "-": "minus", "*": "times"}
_WORD_OP = {v: k for k, v in _OP_WORD.items()}


def format_step(x: int, op: str, y: int, z: int, style: str) -> str:
    """One computation step's text (without the trailing delimiter)."""
    if style == "A":
        return f"{x} {op} {y} = {z}"
    if style == "B":
        return f"{x} {_OP_WORD[op]} {y} makes {z}"
    raise ValueError(f"unknown style {style!r}")


def format_final(answer: int | str, style: str) -> str:
    if style == "A":
        return f"The answer is \\boxed{{{answer}}}"
    if style == "B":
        return f"So the total is \\boxed{{{answer}}}"
    raise ValueError(f"unknown style {style!r}")


@dataclass(frozen=True)
class Slip:
    """A deliberate mistake in one step: its kind, for statistics and tests."""

    step: int
    kind: str  # "arith" (wrong result), "operand" (a wrong number used), "op" (wrong operation)


def solve(
    problem: Problem, style: str = "A", slip_rate: float = 0.0, rng: random.Random | None = None
) -> tuple[list[str], list[Slip]]:
    """Write a solution as a list of steps (the last holds \\boxed{}); no delimiters.

    With slip_rate > 0 each computation step independently gets a mistake with that probability; later
    steps then carry on consistently from the wrong value, as a person who slipped would.
    """
    rng = rng or random.Random(0)
    gold = gold_steps(problem)
    given = list(problem.meta["given"])
    # A slip may happen to compute another gold quantity, or drive a later value below zero; such draws
    # are redrawn so that every recorded slip is a real mistake and every number stays natural.
    for _ in range(10):
        actual: list[int] = []  # the values the written solution actually computed
        steps: list[str] = []
        slips: list[Slip] = []
        for i, g in enumerate(gold):
            x, y, op = operand_value(g.a, actual), operand_value(g.b, actual), g.op
            z = apply_op(op, x, y)
            if slip_rate > 0 and rng.random() < slip_rate:
                slipped = _make_slip(rng, x, op, y, given)
                if slipped is not None:
                    (x, op, y, z), kind = slipped
                    slips.append(Slip(i, kind))
            actual.append(z)
            steps.append(format_step(x, op, y, z, style))
        steps.append(format_final(actual[-1], style))
        if not slips:
            return steps, slips
        labels = label_steps(problem, steps)
        if min(actual) >= 0 and not any(labels[s.step] for s in slips):
            return steps, slips
    steps, _ = solve(problem, style)
    return steps, []


def _make_slip(
    rng: random.Random, x: int, op: str, y: int, given: Sequence[int]
) -> tuple[tuple[int, str, int, int], str] | None:
    """A mistaken version (x', op', y', z') of the step x op y, with z' != the right result."""
    z = apply_op(op, x, y)
    for _ in range(20):
        r = rng.random()
        if r < 0.6:  # arithmetic slip: a near miss, as people and small models make them
            d = rng.choice([1, 1, 2, 10, rng.randint(3, 9)]) * rng.choice([-1, 1])
            cand, kind = (x, op, y, z + d), "arith"
        elif r < 0.85:  # a wrong number: another number from the question, or a misread one
            pool = [g for g in given if g not in (x, y)]
            w = rng.choice(pool) if pool and rng.random() < 0.6 else y + rng.choice([-2, -1, 1, 2])
            cx, cy = (x, w) if rng.random() < 0.5 else (w, y)
            cand, kind = (cx, op, cy, apply_op(op, cx, cy)), "operand"
        else:  # the wrong operation
            op2 = "-" if op == "+" else "+"
            cand, kind = (x, op2, y, apply_op(op2, x, y)), "op"
        if min(cand[0], cand[2], cand[3]) >= 0 and cand[3] != z:
            return cand, kind
    return None


# --------------------------------------------------------------------------------------------------
# Checker

_NUM = r"(-?\d+)"
_STEP_A = re.compile(rf"{_NUM}\s*([+\-*])\s*{_NUM}\s*=\s*{_NUM}")
_STEP_B = re.compile(rf"{_NUM} (plus|minus|times) {_NUM} makes {_NUM}")
_BOXED = re.compile(r"\\boxed\{\s*(-?\d+)\s*\}")


def parse_step(step: str) -> tuple[int, str, int, int] | None:
    """(x, op, y, stated result) of a computation step in either style; None when it is not one."""
    s = step.strip()
    m = _STEP_A.fullmatch(s)
    if m:
        return int(m[1]), m[2], int(m[3]), int(m[4])
    m = _STEP_B.fullmatch(s)
    if m:
        return int(m[1]), _WORD_OP[m[2]], int(m[3]), int(m[4])
    return None


def extract_answer(text: str) -> str | None:
    """The integer in the last \\boxed{} of a text, as a string; None when there is none."""
    found = _BOXED.findall(text)
    return str(int(found[-1])) if found else None


def label_steps(problem: Problem, steps: Sequence[str]) -> list[bool]:
    """The checker's verdict on every step of a solution, in one pass."""
    if problem.answer is None:
        raise ValueError(f"problem {problem.id} has no gold answer to check its steps against")
    answer = str(int(problem.answer))
    gold = gold_steps(problem)
    values = [g.value for g in gold]
    gold_ok: set[int] = set()  # gold steps whose value a correct step has produced so far
    out: list[bool] = []
    for step in steps:
        if _BOXED.search(step):
            out.append(extract_answer(step) == answer)
            continue
        parsed = parse_step(step)
        if parsed is None:
            out.append(False)
            continue
        x, op, y, z = parsed
        ok = False
        if apply_op(op, x, y) == z:
            for gi, g in enumerate(gold):
                if z != g.value or not all(o.kind == "given" or o.ref in gold_ok for o in (g.a, g.b)) or op != g.op:
                    continue
                want = (operand_value(g.a, values), operand_value(g.b, values))
                if (x, y) == want or (op in "+*" and (y, x) == want):
                    ok = True
                    gold_ok.add(gi)
        out.append(ok)
    return out


def step_correct(problem: Problem, prior_steps: Sequence[str], step: str) -> bool:
    """Is `step` correct after `prior_steps`? (Right arithmetic, right quantities, a gold quantity; or,
    for a step with \\boxed{}, the gold answer.)"""
    return label_steps(problem, [*prior_steps, step])[-1]


def final_answer_correct(problem: Problem, solution: str | Sequence[str]) -> bool:
    """Does the solution's last \\boxed{} hold the gold answer?"""
    text = solution if isinstance(solution, str) else "".join(solution)
    ans = extract_answer(text)
    return ans is not None and problem.answer is not None and ans == str(int(problem.answer))


def solution_text(steps: Sequence[str]) -> str:
    """Join steps the way the policy writes them: every step but the last ends in the delimiter."""
    return "\n\n".join(s.strip() for s in steps)
