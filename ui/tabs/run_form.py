"""The Search form's values as a run: the problem (picked from one of the server's sets, or typed) and the
SearchConfig (form_config reads the boxes and sliders). The Search tab's events (search_events.run_request) hand
them to uats_core.request.validate_request, the run's one validation, before the run is registered; the worker
trusts what it is handed."""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from uats_core.config import SETTINGS, ConfigError, SearchConfig
from uats_core.methods import method_names
from uats_core.problems import Problem, ProblemError, check_question, find_problem, load_jsonl

from ..choices import ServerChoices, server_choices

ARITH_PROBLEMS_SHOWN = 200


@functools.lru_cache(maxsize=16)
def _load_dataset(path: Path) -> tuple[Problem, ...]:
    return tuple(load_jsonl(path))


def dataset_problems(dataset: str, choices: ServerChoices | None = None) -> list[Problem]:
    """Problems of one of the server's problem sets (`choices`; None: the sets every server offers); raises
    ProblemError(field='dataset'), the same for any name outside the list."""
    path = (choices or server_choices()).dataset_file(dataset)
    if path is None:
        from uats_core.worlds.arith import world

        return world.load_split("test", ARITH_PROBLEMS_SHOWN)
    return list(_load_dataset(path))


def problem_choices(problems: Sequence[Problem]) -> list[tuple[str, str]]:
    out = []
    for p in problems:
        q = " ".join(p.question.split())
        out.append((f"{p.id} · {q[:70]}{'…' if len(q) > 70 else ''}", p.id))
    return out


def pick_problem(problems: Sequence[Problem], key: str | None) -> Problem:
    key = (key or "").strip()
    if not key:
        raise ProblemError("problem", "pick a problem from the list")
    return find_problem(problems, key, "the list")


def typed_problem(question: str | None, answer: str | None = None) -> Problem | None:
    """A problem typed into the page; None when the box is empty. Its id follows from its text, so the
    same question typed twice is the same problem (and its reruns merge in Cases)."""
    q = (question or "").strip()
    if not q:
        return None
    check_question(q, "free_question")
    digest = hashlib.sha1(q.encode("utf-8")).hexdigest()[:10]
    gold = (answer or "").strip() or None
    return Problem(id=f"typed-{digest}", question=q, answer=gold, source="typed")


def form_config(values: dict[str, Any]) -> SearchConfig:
    """The form's values as a SearchConfig (numbers arrive as floats from sliders and boxes, text from boxes): an
    empty box or a fraction in an integer field is refused here, naming the field; the rest is the validator's."""
    ints = {d.name for d in SETTINGS if d.kind == "int"}
    clean: dict[str, Any] = {}
    for name, v in values.items():
        if v is None or (isinstance(v, str) and not v.strip()):
            raise ConfigError(name, "is empty; give a value")
        if name in ints:
            if isinstance(v, str):
                try:
                    v = float(v)
                except ValueError:
                    raise ConfigError(name, f"must be an integer; got {v!r}") from None
            if isinstance(v, float):
                if not math.isfinite(v) or v != int(v):
                    raise ConfigError(name, f"must be an integer; got {v!r}")
                v = int(v)
        clean[name] = v
    return SearchConfig(**clean)


def method_choices() -> list[str]:
    """Every registered method (uats_core.methods.REGISTRY), for the form's menu."""
    return list(method_names())
