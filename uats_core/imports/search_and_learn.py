"""search-and-learn's output (huggingface/search-and-learn): `save_dataset` writes `{approach}_completions.jsonl`
(`Dataset.to_json(lines=True)`, one JSON row per problem) or, with `--push_to_hub`, the same rows as the Hub's
Parquet. A row holds the dataset's fields (`problem`, `answer`, `unique_id`, ...) plus what the approach adds
(sal/search: `completions`, the N solutions; `scores`, per solution one PRM score per step *as its PRM class counts
steps*; `pred`, the solution it chose; `completion_tokens`) and what `score()` adds (sal/utils/score.py:
`agg_scores`, `pred_weighted@n`, `pred_maj@n`, `pred_naive@n` for n = 1, 2, 4, ... N).

Each PRM class of sal/models/reward_models.py cuts a solution its own way, so the rule decides the tree:
- RLHFFlow (the default `prm_path`) and Qwen_2_5_Math split at "\\n\\n" and score every part, the empty one after a
  trailing blank line too (`ans.split("\\n\\n")`; `replace("\\n\\n", "<extra_0>") + "<extra_0>"`);
- MathShepherd tags each "\\n\\n" and the end unless the text ends in "\\n\\n" (`" ки"`);
- SkyworkO1 scores each line (`prepare_input(..., step_token="\\n")`: `response.split("\\n")`, empty lines too).
A node is a scored part with text; an empty or unscored part (a blank line Skywork scored, the end after a trailing
blank line) joins the node before it, its text appended and its score kept as that node's `folded_scores`. The tree
is rebuilt from shared prefixes: a prefix two solutions share is one node (iteration t: the nodes at depth t).

Rows are read one at a time (`iter_rows`), so the node cap refuses a file as soon as it is passed; a bad row is
reported by its number and the others import."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

from .tree import ImportedNode, ImportedRun, ImportFormatError, score_or_none

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PRMRule:
    """How one search-and-learn PRM class cuts a solution into the parts it scores."""

    name: str
    classes: str  # the classes of sal/models/reward_models.py that count this way
    sep: str
    scores_end_after_sep: bool  # a text ending in `sep` has its (empty) last part scored

    def count(self, text: str) -> int:
        """How many scores the class gives the text: one per separator, and one for the end unless it is skipped."""
        return text.count(self.sep) + (1 if self.scores_end_after_sep or not text.endswith(self.sep) else 0)


_BLANK = PRMRule("rlhflow", "RLHFFlow, Qwen_2_5_Math", "\n\n", True)
# --prm-rule NAME: the four rules a user may name; rlhflow and qwen cut alike (one layout, named either way)
PRM_RULES: dict[str, PRMRule] = {
    "rlhflow": _BLANK,
    "qwen": _BLANK,
    "math-shepherd": PRMRule("math-shepherd", "MathShepherd", "\n\n", False),
    "skywork": PRMRule("skywork", "SkyworkO1", "\n", True),
}
_LAYOUTS = (_BLANK, PRM_RULES["math-shepherd"], PRM_RULES["skywork"])
_PARQUET_MAGIC = b"PAR1"
_PARQUET_BATCH = 16  # rows per Parquet batch: a row may hold hundreds of long completions


def _layout_name(rule: PRMRule) -> str:
    return "rlhflow or qwen" if rule is _BLANK else rule.name


def iter_rows(path: Path, name: str, rows: list[int] | None = None) -> Iterator[tuple[int, Any]]:
    """(row number, the row's dict or an ImportFormatError) for each row of the file, or of `rows` (0-based),
    reading no further than the last row asked for. JSON lines or Parquet, told apart by Parquet's magic bytes."""
    with open(path, "rb") as f:
        parquet = f.read(4) == _PARQUET_MAGIC
    wanted = None if rows is None else set(rows)
    last = None if rows is None else max(rows)
    seen = 0
    for r, row in _parquet_rows(path, name, wanted) if parquet else _jsonl_rows(path, name, wanted):
        seen = r + 1
        if wanted is None or r in wanted:
            yield r, row
        if last is not None and r >= last:
            return
    for missing in sorted(r for r in wanted or () if r >= seen):
        yield missing, ImportFormatError(name, f"row {missing}: the file has {seen} rows (0 to {seen - 1})")


def _jsonl_rows(path: Path, name: str, wanted: set[int] | None) -> Iterator[tuple[int, Any]]:
    r = -1
    with open(path, "rb") as f:
        for line_no, raw in enumerate(f, start=1):
            if not raw.strip():
                continue
            r += 1
            if wanted is not None and r not in wanted:
                yield r, None  # counted, not parsed
                continue
            try:
                yield r, json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                why = exc.msg if isinstance(exc, json.JSONDecodeError) else "not UTF-8"
                yield (
                    r,
                    ImportFormatError(
                        name,
                        f"row {r} (line {line_no}): not JSON ({why}); search-and-learn "
                        "writes JSON lines, one row per problem, or the Hub's Parquet",
                    ),
                )


def _parquet_rows(path: Path, name: str, wanted: set[int] | None) -> Iterator[tuple[int, Any]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportFormatError(
            name,
            "a Parquet file (the Hub's format); reading it needs pyarrow "
            "(pip install pyarrow), or import the tool's .jsonl",
        ) from None
    try:
        pf = pq.ParquetFile(path)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for a damaged file
        raise ImportFormatError(name, f"not a readable Parquet file ({_first_line(exc)})") from None
    r = 0
    batches = pf.iter_batches(batch_size=_PARQUET_BATCH)
    while True:
        try:
            batch = next(batches, None)
        except Exception as exc:  # noqa: BLE001 - a damaged row group, in whichever pyarrow error type
            raise ImportFormatError(
                name, f"row {r}: its Parquet data is unreadable ({_first_line(exc)}); download the file again"
            ) from None
        if batch is None:
            return
        if wanted is not None and not wanted.intersection(range(r, r + batch.num_rows)):
            for _ in range(batch.num_rows):
                yield r, None
                r += 1
            continue
        for row in batch.to_pylist():
            yield r, row
            r += 1


def _first_line(exc: Exception) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"


def read(
    path: Path,
    name: str,
    rows: list[int] | None,
    rule: str | None,
    max_nodes: int,
    on_skip: Callable[[str], None] | None = None,
) -> list[ImportedRun]:
    """The file's rows (or `rows`) as runs. `rule`: the PRM rule by name (PRM_RULES), or None to recognise it from
    the scores' shape. A bad row is reported to `on_skip` (or logged) and left out; a file with no good row, or one
    whose nodes pass `max_nodes` while it is read, raises ImportFormatError."""
    layouts = [PRM_RULES[rule]] if rule is not None else list(_LAYOUTS)
    runs: list[ImportedRun] = []
    skipped: list[str] = []
    total = 0
    for r, row in iter_rows(path, name, rows):
        try:
            if isinstance(row, ImportFormatError):
                raise row
            run, layouts = _run(row, r, name, layouts, named=rule is not None, nodes_left=max_nodes - total)
        except _CapReached:
            raise ImportFormatError(
                name,
                f"more than the {max_nodes:,} nodes an import writes, passed at row {r}; "
                "import fewer rows (--rows) or a smaller file",
            ) from None
        except _RowError as exc:
            skipped.append(str(exc))
            continue
        except ImportFormatError as exc:
            if not str(exc).startswith(f"file: {name}: row {r}"):
                raise
            skipped.append(str(exc).removeprefix(f"file: {name}: "))
            continue
        total += len(run.nodes)
        runs.append(run)
    if not runs:
        if not skipped:
            raise ImportFormatError(
                name,
                "empty; a search-and-learn output is one JSON row per problem "
                "({approach}_completions.jsonl) or the Hub's Parquet",
            )
        more = f" (and {len(skipped) - 1} more bad rows)" if len(skipped) > 1 else ""
        raise ImportFormatError(name, skipped[0] + more)
    for why in skipped:  # told once the file is read: a file with no good row is one error instead
        (on_skip or log.warning)(f"{name}: {why} (row left out; the other rows import)")
    for run in runs:
        run.info["prm_rule"] = " or ".join(_layout_name(lay) for lay in layouts)  # several: they cut these texts alike
        run.info["skipped_rows"] = len(skipped)
    return runs


class _RowError(Exception):
    """One row is not what search-and-learn writes: reported by its number, the other rows import."""


class _CapReached(Exception):
    """The nodes read so far pass the import's node cap."""


def _field(row: Any, key: str, kind: type, where: str) -> Any:
    if not isinstance(row, dict) or key not in row:
        raise _RowError(f"{where}: no '{key}' field; a search-and-learn row has problem, completions, scores and pred")
    value = row[key]
    if not isinstance(value, kind):
        raise _RowError(f"{where}: '{key}' is {type(value).__name__}, not {kind.__name__}")
    return value


def _fitting(
    completions: list[str], scores: list[Any], layouts: list[PRMRule], where: str, named: bool
) -> list[PRMRule]:
    """The layouts under which every completion has one score per scored part; _RowError naming the first misfit."""
    fit = list(layouts)
    for c, (text, per_step) in enumerate(zip(completions, scores)):
        if not isinstance(text, str):
            raise _RowError(f"{where}: completions[{c}] is {type(text).__name__}, not text")
        if not isinstance(per_step, list):
            raise _RowError(f"{where}: scores[{c}] is {type(per_step).__name__}, not a list of step scores")
        now = [lay for lay in fit if lay.count(text) == len(per_step)]
        if not now:
            counts = ", ".join(
                f"{lay.classes.replace(', ', ' or ')} {'scores ' if i == 0 else ''}{lay.count(text)}"
                for i, lay in enumerate(fit)
            )
            hint = "" if named else "; name the PRM with --prm-rule if it is none of these"
            raise _RowError(
                f"{where}: scores[{c}] has {len(per_step)} scores for completions[{c}], where {counts}{hint}"
            )
        fit = now
    return fit


def _run(
    row: Any, r: int, name: str, layouts: list[PRMRule], *, named: bool, nodes_left: int
) -> tuple[ImportedRun, list[PRMRule]]:
    where = f"row {r}"
    problem = _field(row, "problem", str, where)
    completions = _field(row, "completions", list, where)
    scores = _field(row, "scores", list, where)
    if not completions:
        raise _RowError(f"{where}: no completions")
    if len(scores) != len(completions):
        raise _RowError(
            f"{where}: {len(completions)} completions but {len(scores)} score lists; scores holds one list "
            "per completion"
        )
    fit = _fitting(completions, scores, layouts, where, named)
    nodes, leaves = _tree(completions, scores, fit[0], where, nodes_left)
    pred = row.get("pred")
    chosen = [leaves[completions.index(pred)]] if isinstance(pred, str) and pred in completions else []
    answers = {k: v for k, v in row.items() if k.startswith(("pred_weighted@", "pred_maj@", "pred_naive@"))}
    gold = row.get("answer")
    info = {
        "completions": len(completions),
        "file": PurePath(name).name,
        "answer_from": "pred" if chosen else "none: pred is none of the completions",
        "tool_answers": answers,
    }
    run = ImportedRun(
        tool="search-and-learn",
        label=where,
        question=problem,
        gold=None if gold is None else str(gold),
        nodes=nodes,
        chosen=chosen,
        problem_id=str(row.get("unique_id") or f"{PurePath(name).name}#{r}"),
        info=info,
    )
    return run, fit


def _tree(
    completions: list[str], scores: list[list[Any]], rule: PRMRule, where: str, nodes_left: int
) -> tuple[list[ImportedNode], list[int]]:
    """The prefix tree of the completions' scored parts: nodes (parents first) and each completion's last node."""
    nodes: list[ImportedNode] = []
    child: dict[tuple[int | None, str], ImportedNode] = {}
    leaves: list[int] = []
    for c, (text, per_step) in enumerate(zip(completions, scores)):
        steps = _steps(text, per_step, rule, f"{where}: scores[{c}]")
        parent: int | None = None
        for d, (step, score, folded) in enumerate(steps):
            node = child.get((parent, step))
            if node is None:
                if len(nodes) >= nodes_left:
                    raise _CapReached
                node = ImportedNode(
                    key=len(nodes), parent=parent, step=step, created_iter=d + 1, score=score, extra={"completions": 0}
                )
                child[(parent, step)] = node
                nodes.append(node)
            if folded:
                node.extra["folded_scores"] = folded
            node.extra["completions"] += 1
            parent = node.key
        assert parent is not None  # _steps gives at least one step
        nodes[parent].finished = True
        leaves.append(parent)
    nodes.sort(key=lambda n: n.created_iter)  # stable: parents (one step shorter) before their children
    return nodes, leaves


def _steps(text: str, per_step: list[Any], rule: PRMRule, where: str) -> list[tuple[str, float, list[float]]]:
    """(step text, its score, the scores of the empty or unscored parts folded into it) along one completion."""
    steps: list[list[Any]] = []
    pending_text = ""  # parts before the first node: they join the first node
    pending_scores: list[Any] = []
    pieces = text.split(rule.sep)
    last = len(pieces) - 1
    scored_last = rule.scores_end_after_sep or not text.endswith(rule.sep)
    i = 0
    for k, piece in enumerate(pieces):
        part = piece + rule.sep if k < last else piece
        score = None
        if k < last or scored_last:
            score = per_step[i]
            if score.__class__ is not float or not 0.0 <= score <= 1.0:  # the common case, checked fast
                score = score_or_none(per_step[i])
                if score is None:
                    raise _RowError(f"{where}[{i}] = {per_step[i]!r} is no PRM score in [0, 1]")
            i += 1
        if score is not None and piece.strip("\n"):
            steps.append([pending_text + part, score, pending_scores])
            pending_text, pending_scores = "", []
        elif steps:
            steps[-1][0] += part
            if score is not None:
                steps[-1][2] = [*steps[-1][2], score]
        else:
            pending_text += part
            pending_scores = pending_scores + ([score] if score is not None else [])
    if not steps:  # nothing but separators: one node holds it all, with its last score
        return [(pending_text, pending_scores[-1], pending_scores[:-1])] if pending_scores else []
    return [(s, sc, fo) for s, sc, fo in steps]
