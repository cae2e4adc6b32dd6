"""The case finder's cases, by counterfactual: an H-UATS search and the same search with uncertainty switched off
(SearchConfig.prm_scoring='off': one deterministic pass a candidate, the gate never opens, nothing re-evaluated, the
children bought as H-UATS buys them), both with step_streams, so they draw the same steps for the same prompts and
part only where uncertainty decided otherwise. A case is a pair whose answers differ: uncertainty changed the answer.

Pairs share the problem, seed, budget, policy and PRM (comparison.pair_key). Over a batch the finder reports how many
answers uncertainty changed and in which direction: wrong → right (the search without uncertainty is wrong, with it
right) or right → wrong."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from uats_core.config import SearchConfig
from uats_core.status import RunStatus

from .comparison import pair_key
from .divergence import _keys
from .run_status import outcome, said_answer
from .safe_text import model_name
from .treedata import RunData

UATS = "h-uats"
FACTUAL, COUNTERFACTUAL = "mc", "off"  # prm_scoring of the run and of its counterfactual
RUNS_SCANNED = 1000  # newest finished H-UATS runs read
NODES_READ = 400_000  # nodes of the differing pairs' trees read to find where they part, newest pair first
WRONG_TO_RIGHT, RIGHT_TO_WRONG, OTHER = "wrong → right", "right → wrong", "another answer"
DIRECTIONS = (WRONG_TO_RIGHT, RIGHT_TO_WRONG, OTHER)
RANKING_RULE = (
    "A case is an H-UATS search whose answer differs from the same search's with uncertainty switched off "
    "(one pass a node, the gate never open, the same random streams). Ranked: wrong → right first (the "
    "search without uncertainty is wrong, with it right), then right → wrong, then another answer "
    "(neither right, or ungraded); within each, the earlier the two part, the higher."
)
COLUMNS = [
    "rank",
    "problem",
    "policy · PRM",
    "N · seed",
    "H-UATS answer",
    "without uncertainty",
    "direction",
    "they part at",
]


def factual_config(config: SearchConfig) -> SearchConfig:
    """The H-UATS search of a pair: as asked, on streams of its own per iteration."""
    return replace(config, method=UATS, prm_scoring=FACTUAL, step_streams=True)


def counterfactual_config(config: SearchConfig) -> SearchConfig:
    """The same search with uncertainty switched off (config.UATS_SCORINGS' 'off')."""
    return replace(factual_config(config), prm_scoring=COUNTERFACTUAL)


def scoring(run: dict[str, Any]) -> str | None:
    """FACTUAL or COUNTERFACTUAL for an H-UATS run made for the finder (step_streams on), else None."""
    config = run.get("config") or {}
    if run.get("method") != UATS or not config.get("step_streams"):
        return None
    return config.get("prm_scoring") if config.get("prm_scoring") in (FACTUAL, COUNTERFACTUAL) else None


@dataclass(frozen=True)
class Parting:
    """The first iteration at which the two runs decided differently: the step both decided (or one alone), the
    children each gave it (None: that run did not decide it)."""

    iteration: int
    node_a: int | None
    node_b: int | None
    children_a: int | None
    children_b: int | None


def _decisions(data: RunData, t: int, keys: dict[int, tuple[str, ...]]) -> dict[tuple[str, ...], list[tuple[int, int]]]:
    """Step prefix → [(node id, children)] of the candidates decided at t, every copy of a step sampled twice kept
    (the children the copies got make the frontier, so both runs must give them alike)."""
    out: dict[tuple[str, ...], list[tuple[int, int]]] = {}
    for d in data.step(t)[0]:
        key = keys.get(d.node_id)
        if key is not None:
            out.setdefault(key, []).append((d.node_id, int(d.children or 0)))
    return out


def parting(a: RunData, b: RunData) -> Parting | None:
    """Where the run and its counterfactual first part: the first iteration whose decisions (step prefix → the
    children each copy of it got) differ; the shallowest such step. None when every decision agrees."""
    keys_a, keys_b = _keys(a.state_at(None)), _keys(b.state_at(None))
    for t in range(1, max(a.max_iteration, b.max_iteration) + 1):
        da, db = _decisions(a, t, keys_a), _decisions(b, t, keys_b)
        counts = {k: (sorted(c for _, c in da.get(k, [])), sorted(c for _, c in db.get(k, []))) for k in {*da, *db}}
        differ = sorted((k for k, (x, y) in counts.items() if x != y), key=lambda k: (len(k), k))
        if differ:
            k = differ[0]
            na, ca = max(da.get(k, [(None, None)]), key=lambda d: d[1] or 0)
            nb, cb = max(db.get(k, [(None, None)]), key=lambda d: d[1] or 0)
            return Parting(t, na, nb, ca if k in da else None, cb if k in db else None)
    return None


def direction(run: dict[str, Any], counter: dict[str, Any]) -> str:
    said, other = outcome(run), outcome(counter)
    if said == "right" and other == "wrong":
        return WRONG_TO_RIGHT
    if said == "wrong" and other == "right":
        return RIGHT_TO_WRONG
    return OTHER


def _answer(run: dict[str, Any]) -> str | None:
    return None if run.get("answer") is None else str(run["answer"]).strip()


@dataclass(frozen=True)
class Case:
    run: dict[str, Any]
    counter: dict[str, Any]
    direction: str
    parting: Parting | None


@dataclass
class Found:
    """The cases, ranked, and over every pair read: how many, how many answers uncertainty changed, by direction."""

    cases: list[Case] = field(default_factory=list)
    pairs: int = 0
    problems: int = 0
    unread: int = 0  # cases whose trees were left unread (over NODES_READ): where they part is not given
    by_direction: dict[str, int] = field(default_factory=lambda: dict.fromkeys(DIRECTIONS, 0))


def stored_pairs(store: Any, runs_scanned: int = RUNS_SCANNED) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(H-UATS run, its counterfactual) per pair key among the newest finished H-UATS runs, the newest of each."""
    newest: dict[str, dict[tuple[Any, ...], dict[str, Any]]] = {FACTUAL: {}, COUNTERFACTUAL: {}}
    for r in store.list_runs(method=UATS, status=RunStatus.FINISHED, limit=runs_scanned):
        kind = scoring(r)
        if kind is not None:
            newest[kind].setdefault(pair_key(r), r)  # list_runs is newest first
    return [(r, newest[COUNTERFACTUAL][k]) for k, r in newest[FACTUAL].items() if k in newest[COUNTERFACTUAL]]


def find_cases(
    store: Any,
    load: Callable[[str], RunData] | None = None,
    runs_scanned: int = RUNS_SCANNED,
    nodes_read: int = NODES_READ,
) -> Found:
    """The ranked cases over the run log's pairs (RANKING_RULE). A case is known from the two runs' answers; their
    trees are read, newest pair first while NODES_READ lasts, only to find where the two part."""
    load = load or (lambda rid: RunData.load(store, rid))
    found, nodes_left = Found(), nodes_read
    pairs = stored_pairs(store, runs_scanned)
    found.pairs, found.problems = len(pairs), len({r.get("problem_id") for r, _ in pairs})
    for run, counter in pairs:
        if _answer(run) == _answer(counter):
            continue
        way = direction(run, counter)
        found.by_direction[way] += 1
        size = int(run.get("n_nodes") or 0) + int(counter.get("n_nodes") or 0)
        part = None
        if size <= nodes_left:
            nodes_left -= size
            part = parting(load(run["run_id"]), load(counter["run_id"]))
        else:
            found.unread += 1
        found.cases.append(Case(run, counter, way, part))
    found.cases.sort(
        key=lambda c: (
            DIRECTIONS.index(c.direction),
            c.parting.iteration if c.parting else 10**9,
            str(c.run.get("problem_id")),
            c.run["run_id"],
        )
    )
    return found


def _shown(run: dict[str, Any]) -> str:
    said = outcome(run)
    return (said_answer(run) or "–") + (f" ({said})" if said in ("right", "wrong") else "")


def found_rows(found: Found) -> list[list[Any]]:
    rows = []
    for i, c in enumerate(found.cases, 1):
        r, p = c.run, c.parting
        where = "–" if p is None else f"t = {p.iteration}, node {p.node_a if p.node_a is not None else p.node_b}"
        rows.append(
            [
                i,
                r.get("problem_id"),
                f"{model_name(r.get('policy'))} · {model_name(r.get('prm'))}",
                f"{(r.get('config') or {}).get('budget')} · {r.get('seed')}",
                _shown(r),
                _shown(c.counter),
                c.direction,
                where,
            ]
        )
    return rows


def found_summary(found: Found) -> str:
    """One line (Markdown-free): pairs read, answers uncertainty changed, by direction."""
    if not found.pairs:
        return (
            "no finished H-UATS run beside its counterfactual in the run log (the same problem, seed, budget and "
            "models, uncertainty switched off): run a batch"
        )
    d = found.by_direction
    text = (
        f"uncertainty changed the answer in {len(found.cases)} of {found.pairs} pair(s) on {found.problems} "
        f"problem(s): {d[WRONG_TO_RIGHT]} {WRONG_TO_RIGHT}, {d[RIGHT_TO_WRONG]} {RIGHT_TO_WRONG}, {d[OTHER]} to "
        f"{OTHER}"
    )
    if found.unread:
        text += (
            f"; where {found.unread} of them part is not given (their trees are over {NODES_READ:,} nodes a "
            "search: the newest are read first)"
        )
    return text
