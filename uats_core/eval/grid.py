"""The evaluation grid: which (pair, problem, method, budget, seed, variant) cells to run, and their keys.

A cell is one search. Its key is a plain string that names everything that changes the search's result,
so a rerun with the same flags finds the same keys and skips the cells already finished:

    A:prm|arith-test|arith-test-17|h-uats|16|2|k0=3

Variants: the config fields that differ from `SearchConfig`'s defaults *and matter to that method* (its
config_fields, SearchMethod.variant_fields: e.g. `tau` matters to H-UATS but not to REBASE; and every field no method
lists), sorted and joined; "base" when none. So an ablation
axis such as `--k0 3,7` gives H-UATS cells "k0=3" and "base" (7 is the default), and the baselines keep
their single "base" cell instead of being run once per ablation value for nothing.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import SearchConfig, setting_of
from ..errors import ConfigError, ProblemError
from ..methods import method_class, method_names, varies_by_method
from ..paths import ASSETS
from ..problems import Problem, load_problems
from ..request import CheckedSearch, SearchRequest, validate_request

log = logging.getLogger(__name__)

# Short names of the arithmetic world's embedded models (the --pairs syntax is POLICY:PRM over names).
BUILTIN_MODELS: dict[str, str] = {
    "A": str(ASSETS / "arith-policy-a"),
    "B": str(ASSETS / "arith-policy-b"),
    "prm": str(ASSETS / "arith-prm"),
}
# The arithmetic PRM was trained on style-A solutions only: policy A's traces are in distribution for it,
# policy B's (other words, result first) are not. Reports label the pairs with this.
BUILTIN_ROLES: dict[str, str] = {"A:prm": "ID", "B:prm": "OOD"}

# Fields a cell never carries in its config (they are cell axes of their own).
_AXIS_FIELDS = {"method", "budget", "seed"}
_DEFAULTS = SearchConfig()


def relevant(field_name: str, method: str, values: Mapping[str, Any] | None = None) -> bool:
    """Whether a config field can change this method's result, given the cell's other settings `values`: a field
    no method lists among its config_fields changes every method's."""
    return not varies_by_method(field_name) or field_name in method_class(method).variant_fields(values or {})


def _fmt(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)  # repr: exact and stable (0.01, 0.0)


@dataclass(frozen=True)
class Pair:
    label: str  # "A:prm"
    policy: str  # resolved spec (folder, hf:<id>, py:module:function, ...)
    prm: str


@dataclass(frozen=True)
class Cell:
    pair: str
    policy: str
    prm: str
    dataset: str  # "arith-test", "math500", a file's stem
    problem_id: str
    method: str
    budget: int
    seed: int
    overrides: tuple[tuple[str, Any], ...] = ()  # sorted (field, value) that differ from the defaults

    @property
    def variant(self) -> str:
        return ",".join(f"{k}={_fmt(v)}" for k, v in self.overrides) or "base"

    @property
    def key(self) -> str:
        return f"{self.pair}|{self.dataset}|{self.problem_id}|{self.method}|{self.budget}|{self.seed}|{self.variant}"

    def config(self) -> SearchConfig:
        """The cell's config as asked for (τ = auto[:q] stays text: validate_request resolves it; the key keeps it)."""
        return SearchConfig(method=self.method, budget=self.budget, seed=self.seed, **dict(self.overrides))


@dataclass(frozen=True)
class WorkItem:
    """A cell plus its problem (workers get the problem itself, so they never need the dataset file) and, once
    check_cells has validated it, its checked search: what a worker prepares and runs."""

    cell: Cell
    problem: Problem
    search: CheckedSearch | None = None

    def request(
        self,
        policy_opts: Mapping[str, Any] | None = None,
        prm_opts: Mapping[str, Any] | None = None,
        trust_remote_code: bool = False,
    ) -> SearchRequest:
        """The cell as a search request: its pair's models (loaded with the run's options) on its problem."""
        c = self.cell
        # world_problem=False: a pair names both its models, so no embedded default stands in for one
        return SearchRequest(
            self.problem,
            c.config(),
            policy=c.policy,
            prm=c.prm,
            policy_opts=dict(policy_opts or {}),
            prm_opts=dict(prm_opts or {}),
            world_problem=False,
            trust_remote_code=trust_remote_code,
        )

    @property
    def checked(self) -> CheckedSearch:
        if self.search is None:
            raise RuntimeError(f"cell {self.cell.key} was not validated: run the grid's items through check_cells")
        return self.search


@dataclass
class GridSpec:
    pairs: list[Pair]
    problems: list[Problem]
    dataset: str
    methods: list[str]
    budgets: list[int]
    seeds: list[int]
    settings: dict[str, Any] = field(default_factory=dict)  # --set FIELD=VALUE: every cell
    axes: dict[str, list[Any]] = field(default_factory=dict)  # ablation axes: the cross product is run
    uncertainty: list[bool] = field(default_factory=list)  # --uncertainty on,off (empty: not an axis)


# ---------------------------------------------------------------------------------------------- parsing
def parse_pairs(text: str, models: Mapping[str, str] | None = None) -> list[Pair]:
    """'A:prm,B:prm' -> pairs; names come from BUILTIN_MODELS plus `models` (--model NAME=SPEC)."""
    names = {**BUILTIN_MODELS, **(models or {})}
    pairs: list[Pair] = []
    for item in [s.strip() for s in text.split(",") if s.strip()]:
        if item.count(":") != 1:
            raise ConfigError(
                "pairs",
                f"{item!r} is not POLICY:PRM; name models with --model NAME=SPEC "
                "(specs may hold ':' themselves) and pair the names, e.g. A:prm",
            )
        pol, rm = item.split(":")
        for name in (pol, rm):
            if name not in names:
                raise ConfigError(
                    "pairs",
                    f"unknown model name {name!r} in {item!r}; known: {', '.join(sorted(names))} "
                    "(add one with --model NAME=SPEC)",
                )
        pairs.append(Pair(item, names[pol], names[rm]))
    if not pairs:
        raise ConfigError("pairs", "no pair given; e.g. --pairs A:prm,B:prm")
    if len({p.label for p in pairs}) != len(pairs):
        raise ConfigError("pairs", f"a pair is listed twice in {text!r}")
    return pairs


def parse_models(items: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        name, sep, spec = item.partition("=")
        if not sep or not name.strip() or not spec.strip() or ":" in name or "," in name:
            raise ConfigError(
                "model",
                f"{item!r} is not NAME=SPEC (a name without ':' or ',', e.g. qwen=hf:Qwen/Qwen2.5-1.5B-Instruct)",
            )
        out[name.strip()] = spec.strip()
    return out


def parse_methods(text: str) -> list[str]:
    names = method_names()
    if text.strip() == "all":
        return list(names)
    methods = [m.strip() for m in text.split(",") if m.strip()]
    for m in methods:
        if m not in names:
            raise ConfigError("methods", f"unknown method {m!r}; choose from {', '.join(names)} or 'all'")
    if not methods:
        raise ConfigError("methods", "no method given; e.g. --methods all or --methods rebase,h-uats")
    return list(dict.fromkeys(methods))


def parse_int_list(text: str, name: str, low: int = 0) -> list[int]:
    try:
        values = [int(x) for x in str(text).split(",") if x.strip()]
    except ValueError:
        raise ConfigError(name, f"{text!r} is not a comma-separated list of integers") from None
    if not values or any(v < low for v in values):
        raise ConfigError(name, f"need integers >= {low}; got {text!r}")
    return list(dict.fromkeys(values))


def parse_seeds(text: str) -> list[int]:
    """'3' means seeds 0, 1, 2; '0,5,9' lists them."""
    if "," in str(text):
        return parse_int_list(text, "seeds")
    n = parse_int_list(text, "seeds", low=1)[0]
    return list(range(n))


def coerce(name: str, raw: str) -> Any:
    """A flag's text as the setting's declared type ('on'/'off' and 'true'/'false' for booleans); its bounds are
    the validator's (every cell goes through validate_request)."""
    kind = setting_of(name).kind
    raw = raw.strip()
    try:
        if kind == "bool":
            low = raw.lower()
            if low in ("1", "true", "on", "yes"):
                return True
            if low in ("0", "false", "off", "no"):
                return False
            raise ValueError(raw)
        if kind == "int":
            return int(raw)
        if kind == "float":
            return float(raw)
        if raw.lower() == "none" and setting_of(name).default is None:
            return None
        return raw
    except ValueError:
        raise ConfigError(name, f"cannot read {raw!r} as {kind}") from None


def parse_settings(items: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        name, sep, raw = item.partition("=")
        name = name.strip().replace("-", "_")
        if not sep:
            raise ConfigError("set", f"{item!r} is not FIELD=VALUE")
        if name in _AXIS_FIELDS:
            raise ConfigError(name, f"use --{name}s for {name}, not --set")
        out[name] = coerce(name, raw)
    return out


def parse_axis(name: str, text: str) -> list[Any]:
    name = name.replace("-", "_")
    if name in _AXIS_FIELDS:
        raise ConfigError(name, f"{name} is already a grid axis")
    values = [coerce(name, v) for v in str(text).split(",") if v.strip()]
    if not values:
        raise ConfigError(name, f"empty ablation axis {text!r}")
    return list(dict.fromkeys(values))


# ---------------------------------------------------------------------------------------------- problems
def load_eval_problems(
    world: str | None, dataset: str | None, n: int | None, split: str = "test", difficulty: str | None = None
) -> tuple[str, list[Problem]]:
    """(dataset label, the first n problems): the arithmetic world's split (of `difficulty`: a name such as 'hard'
    or a tag such as 'o4-6v40a9f5'; the default's label is plain 'arith-test'), a shipped set's name or a .jsonl
    file."""
    if dataset:
        if difficulty:
            raise ProblemError("difficulty", "--difficulty picks the arithmetic world's problems; drop it or --dataset")
        problems = load_problems(dataset)
        label = Path(dataset).stem if (dataset.endswith(".jsonl") or Path(dataset).exists()) else dataset
    elif world in (None, "arith"):
        from ..worlds.arith.world import DEFAULT_DIFFICULTY, get_difficulty, load_split

        try:
            diff = get_difficulty(difficulty)
        except ValueError as exc:
            raise ProblemError("difficulty", str(exc)) from None
        problems = load_split(split, n if n is not None else 200, difficulty=diff)
        label = f"arith-{split}" if diff == DEFAULT_DIFFICULTY else f"arith-{diff.tag}-{split}"
    else:
        raise ProblemError(
            "world", f"unknown world {world!r}; use --world arith or --dataset FILE.jsonl|math500|aime24"
        )
    if n is not None:
        if n < 1:
            raise ProblemError("problems", f"need at least 1 problem; got {n}")
        if n > len(problems):
            log.warning("asked for %d problems; %s has %d", n, label, len(problems))
        problems = problems[:n]
    if len({p.id for p in problems}) != len(problems):
        raise ProblemError("dataset", f"{label} has duplicate problem ids; give every row a unique 'id'")
    return label, list(problems)


# ---------------------------------------------------------------------------------------------- the grid
def _variants(method: str, spec: GridSpec) -> list[tuple[tuple[str, Any], ...]]:
    """The distinct canonical override sets of one method over the cross product of the ablation axes."""
    axis_names = list(spec.axes)
    combos: Iterable[tuple[Any, ...]] = itertools.product(*(spec.axes[a] for a in axis_names)) if axis_names else [()]
    uncertainty = spec.uncertainty or [True]
    out: list[tuple[tuple[str, Any], ...]] = []
    for combo in combos:
        for with_unc in uncertainty:
            values = dict(spec.settings)
            values.update(zip(axis_names, combo))
            if not with_unc:  # the method's own settings without uncertainty (none for the baselines)
                values.update(method_class(method).without_uncertainty())
            canon = tuple(
                sorted((k, v) for k, v in values.items() if relevant(k, method, values) and getattr(_DEFAULTS, k) != v)
            )
            if canon not in out:
                out.append(canon)
    return out


def build_cells(spec: GridSpec) -> list[WorkItem]:
    """Every cell, problem-major (all methods of problem 0, then problem 1, ...): an interrupted grid leaves
    whole problems done, so method comparisons on the finished part use the same problems."""
    items: list[WorkItem] = []
    variants = {m: _variants(m, spec) for m in spec.methods}
    for problem in spec.problems:
        for pair in spec.pairs:
            for method in spec.methods:
                for overrides in variants[method]:
                    for budget in spec.budgets:
                        for seed in spec.seeds:
                            cell = Cell(
                                pair.label,
                                pair.policy,
                                pair.prm,
                                spec.dataset,
                                problem.id,
                                method,
                                budget,
                                seed,
                                overrides,
                            )
                            items.append(WorkItem(cell, problem))
    return items


def check_cells(
    items: Sequence[WorkItem],
    policy_opts: Mapping[str, Any] | None = None,
    prm_opts: Mapping[str, Any] | None = None,
    trust_remote_code: bool = False,
) -> list[WorkItem]:
    """Every cell validated (uats_core.request.validate_request, once a cell) before anything is written: the items
    with their checked searches, which the workers prepare and run. `policy_opts` / `prm_opts`: the options the
    run's models load with (recorded with each run)."""
    out = []
    for item in items:
        try:
            checked = validate_request(item.request(policy_opts, prm_opts, trust_remote_code))
        except ConfigError as exc:  # the grid's flag for the budget is --budgets
            if exc.field != "budget":
                raise
            raise ConfigError("budgets", f"{item.cell.method}: {str(exc).partition(': ')[2]}") from None
        out.append(dataclasses.replace(item, search=checked))
    return out


def shard(items: Sequence[WorkItem], spec: str) -> list[WorkItem]:
    """`i/n`: every n-th cell of the full grid starting at i. By grid position, not by what is left, so a
    shard's cells are the same on every rerun whatever the other shards have finished."""
    try:
        i_text, n_text = spec.split("/")
        i, n = int(i_text), int(n_text)
    except ValueError:
        raise ConfigError("shard", f"{spec!r} is not i/n (e.g. 0/4)") from None
    if n < 1 or not 0 <= i < n:
        raise ConfigError("shard", f"need 0 <= i < n; got {spec!r}")
    return list(items[i::n])
