"""The Search form's values as a run: the problem (picked from one of the server's sets, or typed) and the
SearchConfig. build_config is the run's one validation (fields and limits), before the run is registered;
the worker trusts what it is handed. Called by the Search tab's events (search_events.submit_run)."""

from __future__ import annotations

import functools
import hashlib
import math
from pathlib import Path
from typing import Any, Sequence

from uats_core.config import METHODS, ConfigError, SearchConfig
from uats_core.limits import check_limits
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


def build_config(values: dict[str, Any]) -> SearchConfig:
    """A validated SearchConfig within the limits, from form values (numbers arrive as floats from sliders and
    boxes): the run's one validation, before it is registered; the worker trusts what it is handed."""
    ints = {"budget", "seed", "max_iterations", "k0", "beam_width"}
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
    config = SearchConfig(**clean).validate()
    check_limits(config)
    return config


def search_config(values: dict[str, Any], prm_spec: str | None = None) -> SearchConfig:
    """build_config, with τ = auto[:q] resolved from the PRM's calibration file: the logged config then holds
    the τ the search used."""
    from uats_core.calibration import resolve_tau

    config, _ = resolve_tau(build_config(values), prm_spec or None)
    return config


def method_choices() -> list[str]:
    return list(METHODS)
