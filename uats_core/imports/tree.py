"""What every importer builds: an ImportedRun (the question, the tree as ImportedNodes in their order of creation,
the chosen answer) and from it the engine's own events, so the run log stores an imported run exactly as it stores
a search (storage's RunRecorder) and the app reads it back like its own runs.

Each iteration t holds the nodes the tool created at its step t (a snapshot, a depth, an expansion) and one
Decision per node that got children then; a node's score from the tool is one deterministic value (mc_scores
[score], as a baseline's single PRM pass is stored), never MC passes the tool did not make."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from uats_core.errors import FieldError
from uats_core.events import Event, IterationEnded, NodesUpdated, RunEnded, RunStarted
from uats_core.grading import Grader, extract_boxed
from uats_core.limits import DEFAULT_MAX_NODES
from uats_core.protocols import MAX_STEP_CHARS, bound_step
from uats_core.records import Decision, StepInfo
from uats_core.status import RunStatus
from uats_core.tree import ACTIVE, FINISHED, KEPT, PRUNED, Node

TOOLS = ("llm-reasoners", "search-and-learn", "treequest")
# a file larger than this is no run we can show: refused before it is read
MAX_FILE_BYTES = 256 * 2**20
MAX_IMPORT_NODES = DEFAULT_MAX_NODES  # as many nodes as a search may write


class ImportFormatError(FieldError):
    """A file that is not what its tool writes: one line naming the file, the place in it and what is wrong."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__("file", f"{name}: {message}")


@dataclass
class ImportedNode:
    """One node of an imported tree. `parent` None: a child of the question (the root)."""

    key: Any  # the tool's own id
    parent: Any | None
    step: str
    created_iter: int
    score: float | None = None  # the tool's score in [0, 1] (None: it stored none there)
    finished: bool = False  # ends a candidate solution
    extra: dict[str, Any] = field(default_factory=dict)  # the tool's own fields, kept beside the node


@dataclass
class ImportedRun:
    tool: str
    label: str  # where in the file: "row 3", "the last snapshot"
    question: str
    gold: str | None
    nodes: list[ImportedNode]  # parents before children
    chosen: list[Any]  # keys of the candidates the tool's answer is chosen from
    problem_id: str
    info: dict[str, Any] = field(default_factory=dict)  # what the run's config records about the source
    iterations: int = 0  # the tool's own count of steps (llm-reasoners' snapshots); 0: as far as nodes were created
    answer: str | None = None  # the tool's own answer, when the file states one (answer_stated)
    answer_stated: bool = False  # True: `answer` is the run's answer (None: the tool gave none); else from `chosen`
    answer_unknown: bool = False  # the file does not hold the tool's answer: the run is not graded
    extract: Callable[[str | None], str | None] = extract_boxed  # how the tool writes an answer in a step

    def events(self, run_id: str | None = None, grader: Grader | None = None) -> list[Event]:
        """The run as the engine would have told it: RunStarted, per iteration NodesUpdated + IterationEnded,
        RunEnded with the chosen answer graded against the gold one."""
        run_id = run_id or uuid.uuid4().hex
        ids = {n.key: i + 1 for i, n in enumerate(self.nodes)}
        nodes: dict[int, Node] = {}
        cut = 0
        for n in self.nodes:
            nid, pid = ids[n.key], 0 if n.parent is None else ids[n.parent]
            parent_depth = nodes[pid].depth if pid else 0
            step, was_cut = bound_step(n.step)  # a step enters the run log bounded, as every backend's does
            cut += was_cut
            node = Node(
                id=nid,
                parent_id=pid,
                depth=parent_depth + 1,
                step=step,
                created_iter=n.created_iter,
                status=FINISHED if n.finished else ACTIVE,
            )
            if n.score is not None:
                node.mc_scores, node.initial_passes, node.mean = [float(n.score)], 1, float(n.score)
                node.scored_iter = n.created_iter
            nodes[nid] = node
        if cut:
            self.info["steps_cut"] = f"{cut} step(s) over {MAX_STEP_CHARS:,} characters, cut there"
        own = grader is None  # a grader made here is closed here (its math-verify process with it)
        grader = grader or Grader()
        try:
            return self._graded_events(run_id, ids, nodes, grader)
        finally:
            if own:
                grader.close()

    def _graded_events(self, run_id: str, ids: dict[Any, int], nodes: dict[int, Node], grader: Grader) -> list[Event]:
        texts: dict[int, str] = {}
        for nid, node in nodes.items():  # parents first: a node's text is its parent's plus its step
            texts[nid] = texts.get(node.parent_id or 0, "") + node.step
        chosen = {ids[k] for k in self.chosen}
        answer = self.answer if self.answer_stated else _answer(nodes, texts, chosen, self.extract)
        for nid, node in nodes.items():
            if node.status == FINISHED:
                node.answer = self.extract(node.step) or self.extract(texts[nid])
                node.correct = grader.equivalent(self.gold, node.answer) if self.gold is not None else None
                node.voted = nid in chosen
        extras = {ids[n.key]: n.extra for n in self.nodes if n.extra}
        return self._emit(run_id, nodes, extras, answer, grader)

    def _emit(
        self, run_id: str, nodes: dict[int, Node], extras: dict[int, dict[str, Any]], answer: str | None, grader: Grader
    ) -> list[Event]:
        def record(nid: int) -> dict[str, Any]:  # the tool's own fields ride along (the run log keeps them as extra)
            rec = nodes[nid].record()
            if nid in extras:
                rec["source"] = extras[nid]
            return rec

        last = max(max((n.created_iter for n in nodes.values()), default=0), self.iterations)
        events: list[Event] = [
            RunStarted(
                run_id=run_id,
                method=self.tool,
                problem_id=self.problem_id,
                question=self.question,
                gold_answer=self.gold,
                seed=None,
                config={"imported": {"tool": self.tool, "from": self.label, **self.info}},
                policy=f"{self.tool} (imported)",
                prm=f"{self.tool} (imported)",
            )
        ]
        born_at: dict[int, list[Node]] = {}
        for n in nodes.values():
            born_at.setdefault(n.created_iter, []).append(n)
        generated = 0
        for t in range(1, last + 1):
            born = born_at.get(t, [])
            generated += len(born)
            kids_of: dict[int, int] = {}
            for n in born:
                kids_of[n.parent_id or 0] = kids_of.get(n.parent_id or 0, 0) + 1
            decisions = []
            for pid, kids in sorted(kids_of.items()):
                if pid:  # the question (root) is expanded without a decision, as in a search
                    parent = nodes[pid]
                    if parent.status != FINISHED:
                        parent.status = KEPT
                    parent.expanded_iter, parent.children_granted = t, parent.children_granted + kids
                    decisions.append(Decision(node_id=pid, children=kids, status=KEPT))
            touched = {n.id for n in born} | {p for p in kids_of if p}
            events.append(NodesUpdated(iteration=t, nodes=[record(i) for i in sorted(touched)]))
            events.append(
                IterationEnded(
                    iteration=t,
                    decisions=decisions,
                    step_info=StepInfo(width=len(born), generated_steps=generated),
                    cost_step=0.0,
                    cost_total=0.0,
                )
            )
        unexpanded = [n for n in nodes.values() if n.status == ACTIVE]  # the tool took them no further
        for n in unexpanded:
            n.status = PRUNED
        if unexpanded:
            events.append(NodesUpdated(iteration=last, nodes=[record(n.id) for n in unexpanded]))
        correct = (
            grader.equivalent(self.gold, answer)
            if self.gold is not None and answer is not None
            else (False if self.gold is not None and not self.answer_unknown else None)
        )
        events.append(
            RunEnded(
                status=RunStatus.FINISHED,
                answer=answer,
                correct=correct,
                iterations=last,
                extra={"imported": self.tool, "nodes": len(nodes)},
            )
        )
        return events


def _answer(
    nodes: dict[int, Node], texts: dict[int, str], chosen: set[int], extract: Callable[[str | None], str | None]
) -> str | None:
    """The tool's chosen answer: the first chosen candidate's answer (the tool chose it, not a vote here)."""
    for nid in sorted(chosen):
        found = extract(nodes[nid].step) or extract(texts[nid])
        if found is not None:
            return found
    return None


# llm-reasoners' RAP examples read "The answer is N." (examples/RAP/gsm8k/utils.py, retrieve_answer)
_RAP_ANSWER = re.compile(r".*The answer is .*?([ $.0-9,\-=]+).*\..*")  # re.match, as RAP's: within one line


def extract_boxed_or_rap(text: str | None) -> str | None:
    """A \\boxed{} answer, else RAP's "The answer is N." read as its retrieve_answer reads it (the last one)."""
    found = extract_boxed(text)
    if found is not None or not text:
        return found
    tail = text[text.rfind("The answer is") :] if "The answer is" in text else ""
    match = _RAP_ANSWER.match(tail)
    if match is None:
        return None
    answer = match[1].replace(",", "").replace("$", "").replace(" ", "")
    return (answer[answer.rindex("=") + 1 :] if "=" in answer else answer) or None


def binary_kind(head: bytes) -> str | None:
    """What a file's first bytes say it is, when that is a binary format: "pickle", "parquet", "gzip", "zip"."""
    if len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5:
        return "pickle"  # protocol 2 and up open with PROTO n
    return {b"PAR1": "parquet", b"\x1f\x8b": "gzip", b"PK\x03\x04": "zip"}.get(
        head[:4] if head[:4] in (b"PAR1", b"PK\x03\x04") else head[:2]
    )


def refuse_binary(name: str, head: bytes) -> None:
    """One true line for a binary file (search-and-learn's Parquet is read by its own module, before this)."""
    kind = binary_kind(head)
    if kind == "pickle":
        raise ImportFormatError(
            name,
            "a Python pickle (llm-reasoners' algo_output/N.pkl), not read: unpickling runs "
            "code; where llm-reasoners is loaded, write the search with "
            "uats_studio.llm_reasoners.export_llm_reasoners(result, 'run.json', "
            "question=...) and import that",
        )
    if kind == "gzip":
        raise ImportFormatError(name, "gzip-compressed; decompress it (gunzip) and import the file inside")
    if kind is not None:
        raise ImportFormatError(name, f"a {kind.capitalize()} file, which this import does not read")


def check_size(name: str, size: int) -> None:
    if size > MAX_FILE_BYTES:
        raise ImportFormatError(
            name,
            f"{size / 2**20:.0f} MiB is more than the {MAX_FILE_BYTES // 2**20} MiB an import reads; split the file",
        )


def check_nodes(name: str, runs: list[ImportedRun], max_nodes: int = MAX_IMPORT_NODES) -> None:
    total = sum(len(r.nodes) for r in runs)
    if total > max_nodes:
        raise ImportFormatError(
            name, f"{total:,} nodes, more than the {max_nodes:,} an import writes; import fewer rows or a smaller tree"
        )
    for r in runs:
        if not r.nodes:
            raise ImportFormatError(name, f"{r.label}: no node below the question; nothing to import")


def score_or_none(value: Any) -> float | None:
    """A tool's score when it is a number in [0, 1] (what R̄ holds); None otherwise (kept in the node's extra)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    v = float(value)
    return v if 0.0 <= v <= 1.0 else None
