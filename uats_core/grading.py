"""Answer extraction, equivalence, grading and voting.

math-verify's own timeouts use signal alarms, which only work on the main thread; the app and the
evaluation harness grade off it. So: plain numbers are compared exactly in-process (the arithmetic
world and AIME never need more), and anything else goes to math-verify in a worker process whose
call we can abandon after `timeout_s`."""

from __future__ import annotations

import concurrent.futures as cf
import logging
import multiprocessing as mp
import re
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures.process import BrokenProcessPool
from fractions import Fraction

from .config import AGGREGATIONS

log = logging.getLogger(__name__)

_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)$")
_FRACTION = re.compile(r"^([+-]?\d+)\s*/\s*(\d+)$")
_LATEX_FRAC = re.compile(r"^([+-]?)\\[dt]?frac\{(\d+)\}\{(\d+)\}$")
_THOUSANDS = re.compile(r"^[+-]?\d{1,3}(?:(?:,\d{3})+|(?: \d{3})+)(?:\.\d+)?$")  # one separator, groups of 3


def extract_boxed(text: str | None) -> str | None:
    """Content of the last \\boxed{...} (or \\fbox{...}), with nested braces matched."""
    if not text:
        return None
    start = max(text.rfind("\\boxed{"), text.rfind("\\fbox{"))
    if start < 0:
        return None
    i = text.index("{", start) + 1
    depth, j = 1, i
    while j < len(text):
        ch = text[j]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[i:j].strip()
        j += 1
    return None  # unbalanced: the policy was cut off mid-answer


def _plain_number(s: str) -> Fraction | None:
    """`s` as an exact number when it is plainly one (AIME's 025, 1,234,567, 3/4, \\frac{3}{4}); else None.

    Separators are removed only where they group thousands: "1, 2" is a list and "2,1" not 21."""
    t = s.strip().strip("$").strip()
    t = re.sub(r"^\\text\{(.*)\}$", r"\1", t).strip()
    t = t.replace("{,}", ",").replace("\\!", "").replace("\\,", " ")
    if _THOUSANDS.match(t):
        t = re.sub(r"[, ]", "", t)
    elif "," in t or re.search(r"\d\s+\d", t):
        return None  # a list, a tuple or a spaced-out sequence of digits: math-verify decides
    t = re.sub(r"\s+", "", t)
    if _NUMBER.match(t):
        return Fraction(t)
    m = _FRACTION.match(t)
    if m and int(m.group(2)):
        return Fraction(int(m.group(1)), int(m.group(2)))
    m = _LATEX_FRAC.match(t)
    if m and int(m.group(3)):
        return Fraction(int(m.group(1) + m.group(2)), int(m.group(3)))
    return None


def _verify_in_worker(gold: str, pred: str) -> bool:
    logging.getLogger("math_verify").setLevel(logging.ERROR)
    from math_verify import parse, verify

    g = parse(f"${gold}$" if "\\boxed" not in gold and "$" not in gold else gold, parsing_timeout=None)
    p = parse(f"\\boxed{{{pred}}}", parsing_timeout=None)
    return bool(verify(g, p, timeout_seconds=None))


class Grader:
    """Grades predictions against gold answers (gold first: math-verify is asymmetric)."""

    def __init__(self, timeout_s: float = 5.0) -> None:
        self.timeout_s = timeout_s
        self._pool: cf.ProcessPoolExecutor | None = None
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, str], bool] = {}

    def equivalent(self, gold: str | None, pred: str | None) -> bool:
        if gold is None or pred is None:
            return False
        gold, pred = gold.strip(), pred.strip()
        if gold == pred:
            return True
        g, p = _plain_number(gold), _plain_number(pred)
        if g is not None and p is not None:
            return g == p  # AIME's "025" equals 25
        key = (gold, pred)
        if key not in self._cache:
            self._cache[key] = self._math_verify(gold, pred)
        return self._cache[key]

    def _math_verify(self, gold: str, pred: str, retry: bool = True) -> bool:
        with self._lock:
            if self._pool is None:
                self._pool = cf.ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn"))
            pool = self._pool
        try:
            return pool.submit(_verify_in_worker, gold, pred).result(timeout=self.timeout_s)
        except BrokenProcessPool:
            # the worker died (killed, out of memory): a broken pool refuses every later call, so start a
            # fresh one and try this pair once more
            self._restart_pool(pool)
            if retry:
                log.warning("math-verify worker died; restarted it")
                return self._math_verify(gold, pred, retry=False)
            log.warning("math-verify worker died twice on gold=%r pred=%r; counted as not equivalent", gold, pred)
            return False
        except cf.TimeoutError:
            log.warning(
                "math-verify timed out after %.1fs on gold=%r pred=%r; counted as not equivalent",
                self.timeout_s,
                gold,
                pred,
            )
            self._restart_pool(pool)
            return False
        except Exception as exc:  # a parser crash on odd LaTeX is a wrong answer, not a failed run
            log.warning("math-verify failed on gold=%r pred=%r: %s", gold, pred, exc)
            return False

    def _restart_pool(self, pool: cf.ProcessPoolExecutor) -> None:
        with self._lock:
            if self._pool is pool:
                self._pool = None
        for proc in list(getattr(pool, "_processes", {}).values()):
            proc.kill()  # a stuck sympy call never returns on its own
        pool.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None


def group_answers(answers: Sequence[str], grader: Grader) -> list[int]:
    """Group index per answer: equivalent answers share a group (compared against each group's first)."""
    reps: list[str] = []
    groups: list[int] = []
    for a in answers:
        for gi, rep in enumerate(reps):
            if grader.equivalent(rep, a):
                groups.append(gi)
                break
        else:
            reps.append(a)
            groups.append(len(reps) - 1)
    return groups


def tally(solutions: Sequence[tuple[int, int, float, float]], rule: str) -> int:
    """The winning answer group under `rule` (config.AGGREGATIONS): 'weighted' sums the final scores of each
    answer's candidates (the paper's weighted vote), 'best' takes the single highest-scored candidate's answer,
    'majority' counts each answer's candidates, and 'distinct' sums per answer the mean score of each distinct final
    solution once (its copies count once). solutions: (answer group, copies, sum of the copies' scores, their highest
    score) per distinct final solution, in order of first appearance; ties go to the group that appeared first."""
    if rule not in AGGREGATIONS:
        raise ValueError(f"unknown aggregation {rule!r}; use one of {', '.join(AGGREGATIONS)}")
    totals: dict[int, float] = {}
    first_of: dict[int, int] = {}  # 'best': the first solution that reached the group's top score
    for i, (group, copies, score_sum, score_max) in enumerate(solutions):
        if rule == "best":
            if score_max > totals.get(group, float("-inf")):
                totals[group], first_of[group] = score_max, i
        else:
            first_of.setdefault(group, i)
            totals[group] = (
                totals.get(group, 0.0)
                + {"weighted": score_sum, "majority": float(copies), "distinct": score_sum / copies}[rule]
            )
    return max(totals, key=lambda g: (totals[g], -first_of[g]))


def vote(candidates: Iterable[tuple[str | None, float, str]], grader: Grader, rule: str = "weighted") -> str | None:
    """The answer `rule` (config.AGGREGATIONS) picks from (answer, final score, solution) triples, where `solution`
    identifies the final solution (its full text): equal ones are copies of one solution. Candidates without an
    answer take part in no vote."""
    solutions: dict[str, list] = {}  # solution -> [answer, copies, score sum, best score], in order of appearance
    for answer, score, solution in candidates:
        if answer is None:
            continue
        entry = solutions.setdefault(solution, [answer, 0, 0.0, float("-inf")])
        entry[1] += 1
        entry[2] += score
        entry[3] = max(entry[3], score)
    if not solutions:
        return None
    answers = [e[0] for e in solutions.values()]
    groups = group_answers(answers, grader)
    winner = tally([(g, e[1], e[2], e[3]) for g, e in zip(groups, solutions.values())], rule)
    return answers[groups.index(winner)]
