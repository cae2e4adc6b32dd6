"""Problems the search runs on: the arithmetic world's generated ones, MATH-500, AIME 2024 (shipped in
assets/data/, named `math500` and `aime24`), or any JSON-lines file."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ProblemError
from .paths import DATA

log = logging.getLogger(__name__)

# The shipped problem sets by name (assets/data/README.md: their source and licence).
SHIPPED_DATASETS = {"math500": DATA / "math500.jsonl", "aime24": DATA / "aime24.jsonl"}


@dataclass(frozen=True)
class Problem:
    id: str
    question: str
    answer: str | None  # gold answer as text; None when unknown
    source: str = "custom"
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


def load_jsonl(path: str | Path, source: str | None = None) -> list[Problem]:
    """Read problems from a JSON-lines file with a `problem` (or `question`) and an `answer` field."""
    p = Path(path)
    if not p.is_file():
        raise ProblemError(
            "dataset", f"no such file {str(p)!r}; give a JSON-lines file with 'problem' and 'answer' fields"
        )
    src = source or p.stem
    out: list[Problem] = []
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise ProblemError(
            "dataset", f"cannot read {str(p)!r} ({exc.strerror}); give a readable JSON-lines file"
        ) from None
    for lineno, raw in enumerate(data.splitlines(), 1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProblemError(
                "dataset", f"{p}:{lineno} is not UTF-8 text (byte {exc.start + 1} of the line); save the file as UTF-8"
            ) from None
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            why = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
            raise ProblemError(
                "dataset", f"{p}:{lineno} is not valid JSON ({why}); write one JSON object per line"
            ) from None
        if not isinstance(row, dict):
            raise ProblemError(
                "dataset",
                f"{p}:{lineno} is a JSON {type(row).__name__}, not an object; write one "
                "object per line with 'problem' and 'answer' fields",
            )
        question = row.get("problem", row.get("question"))
        if not isinstance(question, str):
            raise ProblemError("dataset", f"{p}:{lineno} has no 'problem' or 'question' text field")
        pid = str(row.get("id", row.get("unique_id", f"{src}-{lineno - 1}")))
        answer = row.get("answer")
        out.append(
            Problem(
                id=pid,
                question=question,
                answer=None if answer is None else str(answer),
                source=src,
                meta={k: v for k, v in row.items() if k in ("subject", "level", "url")},
            )
        )
    return out


# The longest question a search takes, in characters. MATH-500's longest is under 2,000; a longer text is no
# competition problem, and refusing it here costs nothing, where the models' context check needs them loaded.
MAX_QUESTION_CHARS = 20_000
MAX_ANSWER_CHARS = 2_000  # a gold answer; MATH-500's longest is 53 characters


def lone_surrogate(text: str) -> int | None:
    """Where (0-based) `text` holds a lone surrogate, a character no UTF-8 encoder, driver or database takes (a
    client can send one as a JSON escape); None when it holds none."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def check_question(question: str, field: str = "problem") -> None:
    """ProblemError(field) for a question longer than MAX_QUESTION_CHARS or that is not valid Unicode."""
    if len(question) > MAX_QUESTION_CHARS:
        raise ProblemError(
            field,
            f"the question has {len(question):,} characters; keep it under "
            f"{MAX_QUESTION_CHARS:,} (no problem of MATH-500 or AIME comes near)",
        )
    at = lone_surrogate(question)
    if at is not None:
        raise ProblemError(
            field,
            f"is not valid Unicode text (character {at + 1} is a lone surrogate {question[at]!r}); give UTF-8 text",
        )


def find_problem(problems: Sequence[Problem], key: str, source: str) -> Problem:
    """A problem of `problems` by id, or by 0-based index; ProblemError names what exists otherwise."""
    key = key.strip()
    for p in problems:
        if p.id == key:
            return p
    if key.isascii() and key.isdigit() and int(key) < len(problems):  # "²".isdigit() too, and int() refuses it
        return problems[int(key)]
    raise ProblemError(
        "problem", f"unknown problem {key!r}: neither an id nor an index (0..{len(problems) - 1}) of {source}"
    )


def load_problems(spec: str) -> list[Problem]:
    """`spec` is a shipped set's name (math500, aime24) or a .jsonl path."""
    if spec in SHIPPED_DATASETS:
        return load_jsonl(SHIPPED_DATASETS[spec])
    if spec.endswith(".jsonl") or Path(spec).exists():
        return load_jsonl(spec)
    raise ProblemError(
        "dataset",
        f"unknown dataset {spec!r}; give a .jsonl file or a shipped set's name ({', '.join(SHIPPED_DATASETS)})",
    )
