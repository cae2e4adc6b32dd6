"""The case finder: over the finished H-UATS / REBASE pairs of the run log (the same problem, seed, budget,
policy and PRM), the problems where the two answer differently and uncertainty changed a decision of the
H-UATS run (ui.views.uncertainty), ranked by how much it changed (RANKING_RULE).

What it reads is bounded: the newest RUNS_SCANNED finished runs of each method, and of the pairs whose answers
differ, H-UATS runs holding NODES_READ nodes in all (newest pair first); the summary says what was left unread."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, MutableMapping

from uats_core.status import RunStatus

from .comparison import pair_key
from .run_status import outcome
from .safe_text import model_name
from .treedata import RunData
from .uncertainty import CHILDREN, uncertainty_changes

UATS, BASELINE = "h-uats", "rebase"
RUNS_SCANNED = 1000  # newest finished runs of each method
NODES_READ = 400_000  # nodes of the H-UATS runs read per search
RANKING_RULE = ("Ranked by how much uncertainty changed: first the children it moved (over the H-UATS run's "
                "decisions, the sum of |children given − children R̄ of the first K0 passes alone would have "
                "given|), then the decisions it changed, then the problem.")
FOUND_COLUMNS = ["rank", "problem", "policy · PRM", "N · seed", "H-UATS answer", "REBASE answer", "children moved",
                 "decisions changed", "re-evaluated", "first change"]


@dataclass(frozen=True)
class Changes:
    """What uncertainty changed in one H-UATS run: decisions, of them re-evaluated, children moved, and the
    first changed decision (iteration, node; None when it changed none)."""

    changed: int
    reevaluated: int
    moved: int
    first: tuple[int, int] | None


def run_changes(data: RunData) -> Changes:
    rows = uncertainty_changes(data)
    moved = sum(abs(r.children - r.children_naive) for r in rows if CHILDREN in r.reasons and r.children_naive is not None)
    return Changes(len(rows), sum(r.sent for r in rows), moved, (rows[0].iteration, rows[0].node_id) if rows else None)


@dataclass(frozen=True)
class PairCase:
    """One problem where the pair answers differently and uncertainty changed a decision of its H-UATS run."""

    uats: dict[str, Any]  # the run rows
    rebase: dict[str, Any]
    changes: Changes

    @property
    def key(self) -> tuple[Any, ...]:
        return pair_key(self.uats)


@dataclass
class Found:
    """The ranked cases and what the search looked at: pairs found, of them answering differently, H-UATS runs
    read, differing pairs left unread (over NODES_READ)."""

    cases: list[PairCase] = field(default_factory=list)
    pairs: int = 0
    differ: int = 0
    read: int = 0
    unread: int = 0


def answers_differ(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """The two runs' answers differ as texts (spaces around them aside); no answer differs from any answer."""
    def text(r: dict[str, Any]) -> str | None:
        return None if r.get("answer") is None else str(r["answer"]).strip()
    return text(a) != text(b)


def stored_pairs(store: Any, runs_scanned: int = RUNS_SCANNED) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(H-UATS run, REBASE run) per pair key among the newest finished runs of each method, the newest run of
    each method for a key (a rerun replaces its predecessor), newest pair first."""
    newest: dict[str, dict[tuple[Any, ...], dict[str, Any]]] = {}
    for method in (UATS, BASELINE):
        runs = newest.setdefault(method, {})
        for r in store.list_runs(method=method, status=RunStatus.FINISHED, limit=runs_scanned):
            runs.setdefault(pair_key(r), r)  # list_runs is newest first
    pairs = [(u, newest[BASELINE][k]) for k, u in newest[UATS].items() if k in newest[BASELINE]]
    return sorted(pairs, key=lambda p: -max(float(p[0].get("started_at") or 0), float(p[1].get("started_at") or 0)))


def find_cases(store: Any, memo: MutableMapping[str, Changes] | None = None,
               load: Callable[[str], RunData] | None = None, runs_scanned: int = RUNS_SCANNED,
               nodes_read: int = NODES_READ) -> Found:
    """The ranked cases over the run log's pairs. `memo` keeps each finished H-UATS run's Changes by run id (a
    finished run does not change), so a second search reads only new runs."""
    memo = {} if memo is None else memo
    load = load or (lambda rid: RunData.load(store, rid))
    found, budget = Found(), nodes_read
    for uats, rebase in stored_pairs(store, runs_scanned):
        found.pairs += 1
        if not answers_differ(uats, rebase):
            continue
        found.differ += 1
        changes = memo.get(uats["run_id"])
        if changes is None:
            size = int(uats.get("n_nodes") or 0)
            if size > budget:
                found.unread += 1
                continue
            budget -= size
            changes = memo[uats["run_id"]] = run_changes(load(uats["run_id"]))
        found.read += 1
        if changes.changed:
            found.cases.append(PairCase(uats, rebase, changes))
    found.cases.sort(key=lambda c: (-c.changes.moved, -c.changes.changed, str(c.uats.get("problem_id")),
                                    c.uats["run_id"]))
    return found


def _answer(run: dict[str, Any]) -> str:
    """The answer and, when graded, whether it is right."""
    said, answer = outcome(run), run.get("answer")
    return ("–" if answer is None else str(answer)) + (f" ({said})" if said in ("right", "wrong") else "")


def found_rows(found: Found) -> list[list[Any]]:
    """The finder's table, one row per case in rank order."""
    rows = []
    for i, c in enumerate(found.cases, 1):
        u, ch = c.uats, c.changes
        first = f"t = {ch.first[0]}, node {ch.first[1]}" if ch.first else "–"
        rows.append([i, u.get("problem_id"), f"{model_name(u.get('policy'))} · {model_name(u.get('prm'))}",
                     f"{(u.get('config') or {}).get('budget')} · {u.get('seed')}", _answer(u), _answer(c.rebase),
                     ch.moved, ch.changed, ch.reevaluated, first])
    return rows


def found_summary(found: Found) -> str:
    """One line: what was read and what was found (Markdown-free)."""
    if not found.pairs:
        return ("no finished H-UATS / REBASE pair in the run log (the same problem, seed, budget and models): run "
                "a batch, or the pair button above")
    problems = len({c.uats.get("problem_id") for c in found.cases})
    text = (f"{len(found.cases)} pair(s) on {problems} problem(s) where H-UATS and REBASE answer differently and "
            f"uncertainty changed a decision, of {found.differ} pair(s) answering differently among {found.pairs} "
            "finished pair(s)")
    if found.unread:
        text += (f"; {found.unread} differing pair(s) left unread (over {NODES_READ:,} nodes a search: the "
                 "newest are read first)")
    return text
