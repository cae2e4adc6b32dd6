"""A stored run as a tree the UI can draw at any iteration (replay) and query (paths, prefixes, subtrees).

Nodes come from storage as their latest snapshot; node_history holds what changed at each iteration, so
the tree "after iteration t" takes, per node, the last history row at or before t (statistics before a
later re-evaluation, the status decided at that step) and the first k passes of its MC scores."""

from __future__ import annotations

import bisect
import copy
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from storage.fastread import read_nodes
from storage.schema import HISTORY_FIELDS
from uats_core.estimation import OODGate
from uats_core.records import Decision, StepInfo
from uats_core.tree import KEPT, TERMINAL, Node

from .bigtree import HISTORY_LIMIT, gc_paused

log = logging.getLogger(__name__)
STATES_KEPT = 4  # iterations whose TreeState a RunData keeps (the one shown, the latest, a step's and one more)


@dataclass
class TreeState:
    """The tree as it was after `iteration` (or as stored now, for a live or final view)."""

    run: dict[str, Any]
    nodes: dict[int, dict[str, Any]]
    children: dict[int, list[int]]
    iteration: int
    max_iteration: int
    decisions: dict[int, Decision] = field(default_factory=dict)  # node id -> decision at `iteration`
    step_info: StepInfo = field(default_factory=StepInfo)
    cost_total: float = 0.0
    _memo: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)  # whole-tree scans, once

    @property
    def gate(self) -> OODGate:
        """The run's own ID/OOD rule at this iteration (A-UATS's controller may have moved τ)."""
        return OODGate.from_config(self.run.get("config") or {}, tau=(self.step_info.knobs or {}).get("tau"))

    @property
    def tau(self) -> float:
        return self.gate.tau

    def path(self, node_id: int) -> list[int]:
        """Node ids from the root's first child down to node_id."""
        out: list[int] = []
        cur: int | None = node_id
        while cur is not None and cur != 0 and cur in self.nodes:
            out.append(cur)
            cur = self.nodes[cur].get("parent_id")
        return out[::-1]

    def siblings(self, node_id: int) -> list[int]:
        parent = self.nodes[node_id].get("parent_id")
        return list(self.children.get(parent, [node_id])) if parent is not None else [node_id]

    def subtree(self, node_id: int) -> list[int]:
        out, stack = [], [node_id]
        while stack:
            n = stack.pop()
            out.append(n)
            stack.extend(self.children.get(n, ()))
        return out

    def chosen_nodes(self) -> set[int]:
        """Terminal nodes holding the run's chosen (voted) answer."""
        answer = self.run.get("answer")
        if answer is None:
            return set()
        if "chosen" not in self._memo:
            self._memo["chosen"] = {
                i for i, n in self.nodes.items() if n.get("status") in TERMINAL and n.get("answer") == answer
            }
        return set(self._memo["chosen"])

    def chosen_path_nodes(self) -> set[int]:
        out: set[int] = set()
        for leaf in self.chosen_nodes():
            cur: int | None = leaf
            while cur is not None and cur != 0 and cur in self.nodes and cur not in out:  # shared prefixes once
                out.add(cur)
                cur = self.nodes[cur].get("parent_id")
        if out:
            out.add(0)
        return out

    def prefix_key(self, node_id: int) -> tuple[str, ...]:
        return tuple(self.nodes[i].get("step", "").strip() for i in self.path(node_id))

    def trace_text(self, node_id: int) -> list[str]:
        return [self.nodes[i].get("step", "") for i in self.path(node_id)]


def _root(run: dict[str, Any]) -> dict[str, Any]:
    # The search core never emits the root (it holds no step); draw it as the question.
    root = Node(id=0, parent_id=None, depth=0, step="", status=KEPT, expanded_iter=1).record()
    return {**root, "k": 0, "updated_iter": 0, "question": run.get("question", "")}


class RunData:
    """Everything stored about one run, loaded once; `state_at(t)` rebuilds any iteration in memory.
    A live run grows with `grown(store)`, which reads only the rows written since (not the whole run)."""

    def __init__(
        self,
        run: dict[str, Any],
        nodes: Iterable[dict[str, Any]],
        history: Iterable[dict[str, Any]] = (),
        iterations: Iterable[dict[str, Any]] = (),
    ) -> None:
        self.run = run
        self.nodes: dict[int, dict[str, Any]] = {int(n["id"]): n for n in nodes}
        if 0 not in self.nodes:
            self.nodes[0] = _root(run)
        self.iterations: dict[int, dict[str, Any]] = {int(i["iteration"]): i for i in iterations}
        self.history_skipped = False
        # the run's iteration count as read before its rows: every row of a later iteration is newer
        self.watermark = int(run.get("iterations") or 0)
        self._hist: dict[int, tuple[list[int], list[dict[str, Any]]]] = {}
        self._states: dict[int | None, TreeState] = {}  # the last few state_at results: a click asks for 3
        self._add_history(history, owned=set())
        self._set_max()

    def _add_history(self, history: Iterable[dict[str, Any]], owned: set[int]) -> None:
        """File history rows under their node in iteration order; a row already held for the same
        (node, iteration) is replaced. Lists not in `owned` are shared with another RunData: copied first."""
        for h in sorted(history, key=lambda r: (r["node_id"], r["iteration"])):
            nid, it = int(h["node_id"]), int(h["iteration"])
            its, rows = self._hist.get(nid, ([], []))
            if nid not in owned:
                its, rows = list(its), list(rows)
                self._hist[nid] = (its, rows)
                owned.add(nid)
            pos = bisect.bisect_left(its, it)
            if pos < len(its) and its[pos] == it:
                rows[pos] = h
            else:
                its.insert(pos, it)
                rows.insert(pos, h)

    def _set_max(self) -> None:
        hist_max = max((its[-1] for its, _ in self._hist.values() if its), default=0)
        self.max_iteration = max([hist_max, *self.iterations, int(self.run.get("iterations") or 0)])

    @classmethod
    def load(cls, store: Any, run_id: str, run: dict[str, Any] | None = None) -> RunData:
        """The run as stored now; `run`: its row, when just read."""
        run = run if run is not None else store.get_run(run_id)
        big = int(run.get("n_nodes") or 0) > HISTORY_LIMIT  # opening a huge run must stay within seconds
        with gc_paused():
            data = cls(
                run,
                read_nodes(store, run_id),
                () if big else store.get_node_history(run_id),
                store.get_iterations(run_id),
            )
        data.history_skipped = big
        return data

    def grown(self, store: Any, run: dict[str, Any] | None = None) -> RunData:
        """This run as stored now, from this copy and the rows written at or after its watermark (one
        transaction per iteration, so those hold every change since; re-reading the watermark's own
        iteration catches the nodes a run's end writes under it). A new RunData: readers of this one
        (other sessions, other tabs) keep a consistent tree. `run`: the run's row, when just read."""
        run_id = self.run["run_id"]
        # the row first: its iteration count bounds what the reads below may miss
        run = run if run is not None else store.get_run(run_id)
        since = self.watermark
        with gc_paused():
            iterations = store.get_iterations(run_id, since_iter=since)
            history = () if self.history_skipped else store.get_node_history(run_id, since_iter=since)
            nodes = store.get_nodes(run_id, since_iter=since)  # last: every history row's node is in
            new = copy.copy(self)
            new._states = {}
            new.run = run
            new.nodes = {**self.nodes, **{int(n["id"]): n for n in nodes}}
            new.iterations = {**self.iterations, **{int(i["iteration"]): i for i in iterations}}
            new._hist = dict(self._hist)
            new._add_history(history, owned=set())
        new.watermark = int(run.get("iterations") or 0)
        new._set_max()
        return new

    def step(self, t: int | None) -> tuple[list[Decision], StepInfo]:
        """Iteration t's stored decisions and numbers as the engine's typed records (empty when t has none)."""
        row = self.iterations.get(t) or {} if t is not None else {}
        decisions = [Decision.from_dict(d) for d in (row.get("decisions") or []) if "node_id" in d]
        return decisions, StepInfo.from_dict(row.get("step_info") or {})

    def state_at(self, iteration: int | None = None) -> TreeState:
        """iteration=None: the latest stored snapshot of every node. Read-only: the result is shared by the
        callers that ask for the same iteration of this RunData (a grown copy starts its own)."""
        if (hit := self._states.get(iteration)) is not None:
            return hit
        with gc_paused():
            state = self._state_at(iteration)
        if len(self._states) >= STATES_KEPT:
            self._states.pop(next(iter(self._states)), None)
        self._states[iteration] = state
        return state

    def _state_at(self, iteration: int | None) -> TreeState:
        t = self.max_iteration if iteration is None else max(0, min(int(iteration), self.max_iteration))
        final = iteration is None or t >= self.max_iteration
        nodes: dict[int, dict[str, Any]] = {}
        for nid, n in self.nodes.items():
            if nid != 0 and int(n.get("created_iter") or 0) > t:
                continue
            if final:
                nodes[nid] = n
                continue
            hist = self._hist.get(nid)
            if hist is None and self.history_skipped:
                nodes[nid] = n  # no per-iteration snapshots loaded: the final one, from its creation on
                continue
            row, pos = None, -1
            if hist:
                pos = bisect.bisect_right(hist[0], t) - 1
                row = hist[1][pos] if pos >= 0 else None
            if row is None:
                if nid == 0:
                    nodes[nid] = n
                continue  # created but not yet written at t (cannot happen with ordered events)
            snap = dict(n)
            for f in HISTORY_FIELDS:
                snap[f] = row.get(f)  # a history row from before the logit columns has none
            k = int(row["k"] or 0)
            snap["mc_scores"] = list(n.get("mc_scores") or [])[:k]
            _marks_at(snap, hist, pos, t)
            if snap["status"] not in TERMINAL:
                snap["answer"], snap["correct"] = None, None
            nodes[nid] = snap
        children: dict[int, list[int]] = {nid: [] for nid in nodes}
        for nid in sorted(nodes):
            p = nodes[nid].get("parent_id")
            if p is not None and p in children:
                children[p].append(nid)
        it_row = self.iterations.get(t) or {}
        step_decisions, step_info = self.step(t)
        decisions = {d.node_id: d for d in step_decisions}
        run = self.run if final else {**self.run, "answer": None, "correct": None, "naive_answer": None}
        cost = float(it_row.get("cost_total") or (self.run.get("cost") if final else 0.0) or 0.0)
        return TreeState(
            run=run,
            nodes=nodes,
            children=children,
            iteration=t,
            max_iteration=self.max_iteration,
            decisions=decisions,
            step_info=step_info,
            cost_total=cost,
        )


def _marks_at(snap: dict[str, Any], hist: tuple[list[int], list[dict[str, Any]]], pos: int, t: int) -> None:
    """The node's last re-evaluation and expansion at or before t: the stored marks are the latest ones,
    so an earlier iteration reads them from the history rows (where extra passes or children grew)."""
    for f, grew in (("reeval_iter", "extra_passes"), ("expanded_iter", "children_granted")):
        if snap.get(f) is None or snap[f] <= t:
            continue
        snap[f] = None
        its, rows = hist
        for i in range(pos, -1, -1):
            if int(rows[i].get(grew) or 0) > (int(rows[i - 1].get(grew) or 0) if i else 0):
                snap[f] = its[i]
                break


def shared_prefixes(a: TreeState, b: TreeState) -> set[tuple[str, ...]]:
    ka = {a.prefix_key(i) for i in a.nodes if i != 0}
    kb = {b.prefix_key(i) for i in b.nodes if i != 0}
    return ka & kb
