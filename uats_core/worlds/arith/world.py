"""The arithmetic world: procedurally generated multi-step word problems, each with its gold computation.

A problem is a short story about one running count ("Mia has 12 boxes of 4 apples. She gives away 7.
She buys 3 bags of 5. How many apples does Mia have now?"). Its gold computation is a small list of binary
operations whose operands are either numbers stated in the question or results of earlier operations. Solutions
are "\\n\\n"-separated steps, one operation per step, ending in a step with ``\\boxed{answer}`` (the same shape as
MATH solutions), in one of two writing styles:

- style "A": ``12 * 4 = 48``                   final: ``The answer is \\boxed{56}``
- style "B": ``12 times 4 makes 48``         final: ``So the total is \\boxed{56}``

A PRM trained on style A sees style B as out of distribution: words it never read where A has symbols.
solutions.py writes the solutions and holds the exact step checker.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass

from uats_core.problems import Problem

log = logging.getLogger(__name__)

SPLITS = ("train", "val", "test")
STYLES = ("A", "B")
# Default split sizes when load_split is called with n=None.
DEFAULT_SIZES = {"train": 20000, "val": 500, "test": 500}
# Share of the hash space per split; the assignment depends on the question text only, so the splits
# cannot overlap whatever seed or difficulty produced a question.
_SPLIT_BUCKETS = {"train": range(0, 90), "val": range(90, 95), "test": range(95, 100)}


@dataclass(frozen=True)
class Difficulty:
    """Knobs of the generator: how many operations the gold computation has, and how large numbers get."""

    min_ops: int = 2
    max_ops: int = 4
    max_value: int = 40  # bound on every stated number and every intermediate value
    max_addend: int = 9  # bound on numbers added or taken away
    max_factor: int = 5  # bound on the count of containers in a product
    name: str = "default"

    def __post_init__(self) -> None:
        if not 1 <= self.min_ops <= self.max_ops:
            raise ValueError(f"need 1 <= min_ops <= max_ops; got {self.min_ops}, {self.max_ops}")
        if self.max_value < 20 or self.max_addend < 2 or self.max_factor < 2:
            raise ValueError("max_value must be >= 20, max_addend and max_factor >= 2")

    @property
    def tag(self) -> str:
        return (
            self.name
            if self.name in DIFFICULTIES and DIFFICULTIES[self.name] == self
            else (f"o{self.min_ops}-{self.max_ops}v{self.max_value}a{self.max_addend}f{self.max_factor}")
        )


DIFFICULTIES: dict[str, Difficulty] = {
    "easy": Difficulty(1, 2, 30, 9, 4, "easy"),
    "default": Difficulty(2, 4, 40, 9, 5, "default"),
    "hard": Difficulty(4, 6, 999, 200, 12, "hard"),
}
DEFAULT_DIFFICULTY = DIFFICULTIES["default"]


def get_difficulty(difficulty: str | Difficulty | None) -> Difficulty:
    if difficulty is None:
        return DEFAULT_DIFFICULTY
    if isinstance(difficulty, Difficulty):
        return difficulty
    if difficulty in DIFFICULTIES:
        return DIFFICULTIES[difficulty]
    m = re.fullmatch(r"o(\d+)-(\d+)v(\d+)a(\d+)f(\d+)", difficulty)
    if m:
        a, b, v, ad, f = map(int, m.groups())
        return Difficulty(a, b, v, ad, f, name="custom")
    raise ValueError(f"unknown difficulty {difficulty!r}; choose one of {', '.join(DIFFICULTIES)}")


# --------------------------------------------------------------------------------------------------
# Gold computation


@dataclass(frozen=True)
class Operand:
    kind: str  # "given": a number stated in the question; "step": the result of gold step `ref`
    ref: int  # the number itself for "given", the gold step index for "step"


@dataclass(frozen=True)
class GoldStep:
    op: str  # "+", "-", "*"
    a: Operand
    b: Operand
    value: int


def apply_op(op: str, x: int, y: int) -> int:
    if op == "+":
        return x + y
    if op == "-":
        return x - y
    if op == "*":
        return x * y
    raise ValueError(f"unknown op {op!r}")


def gold_steps(problem: Problem) -> list[GoldStep]:
    """The gold computation stored in a problem's meta."""
    return [GoldStep(g["op"], Operand(**g["a"]), Operand(**g["b"]), g["value"]) for g in problem.meta["gold"]]


def operand_value(o: Operand, values: Sequence[int]) -> int:
    return o.ref if o.kind == "given" else values[o.ref]


# --------------------------------------------------------------------------------------------------
# Generator

_NAMES = [
    "Mia",
    "Tom",
    "Ava",
    "Leo",
    "Zoe",
    "Sam",
    "Ivy",
    "Max",
    "Eva",
    "Ben",
    "Lily",
    "Noah",
    "Emma",
    "Jack",
    "Ella",
    "Owen",
]
_FEMALE = {"Mia", "Ava", "Zoe", "Ivy", "Eva", "Lily", "Emma", "Ella"}
_ITEMS = [
    "apples",
    "marbles",
    "stickers",
    "cards",
    "coins",
    "pencils",
    "cookies",
    "shells",
    "stamps",
    "beads",
    "books",
    "eggs",
]
_BOXES = ["boxes", "bags", "packs", "jars", "crates", "baskets"]


@dataclass
class _Builder:
    """Accumulates the question's sentences and the gold computation while a story is told."""

    rng: random.Random
    diff: Difficulty
    name: str
    pron: str
    item: str
    sentences: list[str]
    gold: list[GoldStep]
    given: list[int]
    current: Operand | None = None  # the operand holding the running count
    value: int = 0

    def add_step(self, op: str, a: Operand, b: Operand) -> Operand:
        values = [g.value for g in self.gold]
        v = apply_op(op, operand_value(a, values), operand_value(b, values))
        self.gold.append(GoldStep(op, a, b, v))
        for o in (a, b):
            if o.kind == "given":
                self.given.append(o.ref)
        return Operand("step", len(self.gold) - 1)


def _pick_product(rng: random.Random, diff: Difficulty, cap: int) -> tuple[int, int] | None:
    """Two stated numbers (count of containers, items per container) whose product is at most cap."""
    options = [
        (b, c)
        for b in range(2, diff.max_factor + 1)
        for c in range(2, min(cap // b, diff.max_factor + 3) + 1)
        if b * c <= cap
    ]
    return rng.choice(options) if options else None


def _generate(rng: random.Random, diff: Difficulty) -> tuple[str, list[GoldStep], list[int]]:
    """One story; retried by the caller until its numbers stay inside the difficulty's bounds."""
    n_ops = rng.randint(diff.min_ops, diff.max_ops)
    name = rng.choice(_NAMES)
    b = _Builder(rng, diff, name, "she" if name in _FEMALE else "he", rng.choice(_ITEMS), [], [], [])
    Pron = b.pron.capitalize()
    box = rng.choice(_BOXES)
    remaining = n_ops
    # Opening: a plain count, or a product (which costs one operation).
    if rng.random() < 0.5 and remaining >= 1:
        pc = _pick_product(rng, diff, diff.max_value)
        assert pc is not None
        x, y = pc
        b.sentences.append(f"{name} has {x} {box} of {y} {b.item}.")
        b.current = b.add_step("*", Operand("given", x), Operand("given", y))
        remaining -= 1
    else:
        x = rng.randint(5, min(diff.max_value // 2, 60))
        b.sentences.append(f"{name} has {x} {b.item}.")
        b.current = Operand("given", x)
        b.given.append(x)
    b.value = operand_value(b.current, [g.value for g in b.gold])

    while remaining > 0:
        kinds = ["add", "sub", "mul"] + (["add_mul", "sub_mul"] if remaining >= 2 else [])
        kind = rng.choice(kinds)
        v = b.value
        if kind == "add":
            cap = min(diff.max_addend, diff.max_value - v)
            if cap < 2:
                continue
            y = rng.randint(2, cap)
            verb = rng.choice(["finds {y} more", "gets {y} more", "buys {y} more", "is given {y} more"])
            b.sentences.append(f"{Pron} {verb.format(y=y)}.")
            b.current = b.add_step("+", b.current, Operand("given", y))
        elif kind == "sub":
            cap = min(diff.max_addend, v - 1)
            if cap < 2:
                continue
            y = rng.randint(2, cap)
            verb = rng.choice(["gives away {y}", "loses {y}", "uses {y}", "sells {y}"])
            b.sentences.append(f"{Pron} {verb.format(y=y)}.")
            b.current = b.add_step("-", b.current, Operand("given", y))
        elif kind == "mul":
            cap = min(diff.max_factor, diff.max_value // max(v, 1))
            if cap < 2 or v > diff.max_value // 2:
                continue
            y = rng.randint(2, min(cap, 4))
            b.sentences.append(f"{Pron} then has {y} times as many.")
            b.current = b.add_step("*", b.current, Operand("given", y))
        else:
            cap = diff.max_value - v if kind == "add_mul" else v - 1
            pc = _pick_product(rng, diff, cap)
            if pc is None:
                continue
            x, y = pc
            verb = "buys" if kind == "add_mul" else "sells"
            other = rng.choice([bx for bx in _BOXES if bx != box])
            b.sentences.append(f"{Pron} {verb} {x} {other} of {y}.")
            t = b.add_step("*", Operand("given", x), Operand("given", y))
            b.current = b.add_step("+" if kind == "add_mul" else "-", b.current, t)
            remaining -= 1
        remaining -= 1
        b.value = b.gold[-1].value
    b.sentences.append(f"How many {b.item} does {name} have now?")
    return " ".join(b.sentences), b.gold, b.given


def _stream(seed: int, diff: Difficulty) -> Iterator[tuple[str, list[GoldStep], list[int]]]:
    """Deterministic stream of stories: story j depends only on (seed, difficulty, j)."""
    j = 0
    while True:
        rng = random.Random(f"arith|{seed}|{diff.tag}|{j}")
        yield _generate(rng, diff)
        j += 1


def split_of(question: str) -> str:
    """Which split a question text belongs to (a hash of the text, so the splits never overlap)."""
    bucket = int.from_bytes(hashlib.sha256(question.encode()).digest()[:8], "big") % 100
    return next(s for s, r in _SPLIT_BUCKETS.items() if bucket in r)


def _problem_id(split: str, index: int, seed: int, diff: Difficulty) -> str:
    if seed == 0 and diff == DEFAULT_DIFFICULTY:
        return f"arith-{split}-{index}"
    return f"arith-{diff.tag}-s{seed}-{split}-{index}"


@functools.lru_cache(maxsize=32)
def _split_cached(split: str, n: int, seed: int, diff: Difficulty) -> tuple[Problem, ...]:
    out: list[Problem] = []
    seen: set[str] = set()
    for question, gold, given in _stream(seed, diff):
        if question in seen or split_of(question) != split:
            continue
        seen.add(question)
        idx = len(out)
        out.append(
            Problem(
                id=_problem_id(split, idx, seed, diff),
                question=question,
                answer=str(gold[-1].value),
                source="arith",
                meta={
                    "split": split,
                    "index": idx,
                    "seed": seed,
                    "difficulty": asdict(diff),
                    "given": given,
                    "gold": [{"op": g.op, "a": asdict(g.a), "b": asdict(g.b), "value": g.value} for g in gold],
                },
            )
        )
        if len(out) >= n:
            break
    return tuple(out)


def load_split(
    split: str, n: int | None = None, seed: int = 0, difficulty: str | Difficulty | None = None
) -> list[Problem]:
    """The first n problems of a split (train / val / test), deterministic in (seed, difficulty).

    Problem i of a split does not depend on n, so a bigger n extends a smaller one.
    """
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
    diff = get_difficulty(difficulty)
    n = DEFAULT_SIZES[split] if n is None else n
    if n < 0:
        raise ValueError(f"n must be >= 0; got {n}")
    return list(_split_cached(split, n, seed, diff))


_ID_RE = re.compile(r"arith-(?:(?P<tag>[A-Za-z0-9-]+?)-s(?P<seed>\d+)-)?(?P<split>train|val|test)-(?P<index>\d+)")


MAX_PROBLEM_INDEX = 100_000  # ids beyond this would make get_problem generate a whole huge split first


def get_problem(problem_id: str) -> Problem:
    """Regenerate a problem from its id: "arith-test-17", or "arith-hard-s3-test-17" for another
    difficulty and seed."""
    m = _ID_RE.fullmatch(problem_id)
    if not m:
        raise ValueError(f"not an arithmetic-world problem id: {problem_id!r} (expected e.g. 'arith-test-17')")
    diff = get_difficulty(m["tag"]) if m["tag"] else DEFAULT_DIFFICULTY
    seed = int(m["seed"]) if m["seed"] else 0
    index = int(m["index"])
    if index >= MAX_PROBLEM_INDEX:
        raise ValueError(
            f"problem index {index} in {problem_id!r} is too large: a split is generated up to "
            f"index {MAX_PROBLEM_INDEX - 1}; use a smaller index, or another seed for more problems "
            "(arith-default-s7-test-0)"
        )
    # Round n up so that neighbouring ids share one cached generation.
    n = (index // 256 + 1) * 256
    return _split_cached(m["split"], n, seed, diff)[index]
