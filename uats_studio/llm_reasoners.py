"""Export an llm-reasoners search for `uats import --from llm-reasoners`, in the user's own Python where llm-reasoners
is loaded (nothing of llm-reasoners is imported until the function runs):

    from uats_studio.llm_reasoners import export_llm_reasoners
    result = reasoner(example)                      # an MCTSResult, BeamSearchResult or DFSResult
    export_llm_reasoners(result, "run.json", question=question, output_extractor=utils.retrieve_answer)

What llm-reasoners writes to disk itself is a pickle (`Evaluator.evaluate`: `log_dir/algo_output/N.pkl`), which an
import does not read (unpickling runs code), and its tree log (`reasoners.visualization.TreeLog`, serialised with
`TreeLogEncoder`) exists only inside `visualize()` and holds no answer. The export is that same tree log, built by
llm-reasoners' own `TreeLog.from_mcts_results` / `from_beam_search_results` / `from_dfs_results` (with the node and
edge data factories you pass to `visualize`, if any), with the search's own result beside it: which node the search
ended at and the path to it, its terminal state, MCTS's aggregated answer, and the question. The import states the
tool's answer from these and from nothing else."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

EXPORT_FORMAT = 1  # uats_core.imports.llm_reasoners reads this version of the block


def _plain(value: Any, depth: int = 0) -> Any:
    """A state as JSON data, the way llm-reasoners' default node_data_factory sees it (NamedTuples as their fields);
    anything else as its str."""
    if depth > 20:
        return str(value)
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if hasattr(value, "_asdict"):
        return {k: _plain(v, depth + 1) for k, v in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v, depth + 1) for k, v in value.items()}
    try:  # numpy scalars
        return _plain(value.item(), depth + 1)
    except (AttributeError, ValueError, TypeError):
        return str(value)


def _path_to(node: Any) -> list[int]:
    ids = []
    while node is not None:
        ids.append(int(node.id))
        node = node.parent
    return ids[::-1]


def _walk(root: Any) -> list[Any]:
    out, stack = [], [root]
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(node.children or [])
    return out


def _mcts_result(result: Any) -> dict[str, Any]:
    nodes = result.trace_of_nodes or []
    snapshots = result.tree_state_after_each_iter or [result.tree_state]
    return {
        "terminal_node": int(nodes[-1].id) if nodes else None,
        "trace_nodes": [int(n.id) for n in nodes],
        "terminal_nodes": sorted(int(n.id) for n in _walk(result.tree_state) if n.is_terminal and n.state is not None),
        "aggregated_result": _plain(result.aggregated_result),
        "unvisited_after_each_iter": [
            sorted(int(n.id) for n in _walk(root) if n.state is None and n.parent) for root in snapshots
        ],
    }


def _result_block(
    result: Any, output_extractor: Callable[[Any], Any] | None, returned: Any, beam: list[Any] | None = None
) -> dict[str, Any]:
    from reasoners.algorithm import BeamSearchResult, DFSResult, MCTSResult

    block: dict[str, Any] = {"algorithm": type(result).__name__, "terminal_state": _plain(result.terminal_state)}
    if isinstance(result, MCTSResult):
        block.update(_mcts_result(result), cum_reward=_plain(result.cum_reward))
    elif isinstance(result, BeamSearchResult):
        end = result.terminal_node
        block.update(
            terminal_node=None if end is None else int(end.id),
            trace_nodes=_path_to(end) if end else [],
            terminal_nodes=[] if end is None else [int(end.id)],
            cum_reward=_plain(result.cum_reward),
        )
        if beam:  # return_beam=True: every finished beam, best first (BeamSearch sorts them by reward)
            block["terminal_nodes"] = [int(r.terminal_node.id) for r in beam if r.terminal_node is not None]
    elif isinstance(result, DFSResult):
        ends = result.terminal_nodes or []
        block.update(
            terminal_node=int(ends[0].id) if ends else None,
            trace_nodes=_path_to(ends[0]) if ends else [],
            terminal_nodes=[int(n.id) for n in ends],
            cum_reward=_plain(result.cum_rewards),
        )
    else:
        raise TypeError(
            f"result: a {type(result).__name__}; give the MCTSResult, BeamSearchResult or DFSResult the search returned"
        )
    answer = output_extractor(returned) if output_extractor is not None else None  # what the search returned
    block["answer"] = None if answer is None else str(answer)  # the user's own extraction of the tool's answer
    return block


def export_llm_reasoners(
    result: Any,
    path: str | Path,
    *,
    question: str,
    gold_answer: str | None = None,
    output_extractor: Callable[[Any], Any] | None = None,
    node_data_factory: Callable[[Any], dict] | None = None,
    edge_data_factory: Callable[[Any], dict] | None = None,
) -> Path:
    """Write `result` (what an llm-reasoners search returned; BeamSearch's list under return_beam=True too) to `path` as
    its tree log plus its own result and the question. output_extractor: the function your evaluation reads the answer
    with (e.g. RAP's `utils.retrieve_answer`); without it the import reads MCTS's aggregated answer, else the terminal
    node's text. The factories: those you would pass to `visualize` (llm-reasoners' defaults otherwise). The path
    written."""
    from reasoners.algorithm import BeamSearchResult, DFSResult, MCTSResult
    from reasoners.visualization import TreeLog, TreeLogEncoder

    if not isinstance(question, str) or not question.strip():
        raise ValueError("question: give the problem the search solved (llm-reasoners' results do not hold it)")
    factories = {
        k: v
        for k, v in (("node_data_factory", node_data_factory), ("edge_data_factory", edge_data_factory))
        if v is not None
    }
    beam, returned = None, result
    if isinstance(result, (list, tuple)) and result and all(isinstance(r, BeamSearchResult) for r in result):
        beam, result = list(result), result[0]  # BeamSearch(return_beam=True); TreeLog draws the first's tree too
    if isinstance(result, MCTSResult):
        log = TreeLog.from_mcts_results(result, **factories)
    elif isinstance(result, BeamSearchResult):
        log = TreeLog.from_beam_search_results(result, **factories)
    elif isinstance(result, DFSResult):
        log = TreeLog.from_dfs_results(result, **factories)
    else:
        raise TypeError(
            f"result: a {type(result).__name__}; give the MCTSResult, BeamSearchResult or DFSResult the search returned"
        )
    tree = json.loads(json.dumps(log, cls=TreeLogEncoder))  # exactly what visualize() would upload
    out = {
        **tree,
        "question": question,
        "gold_answer": gold_answer,
        "result": _result_block(result, output_extractor, returned, beam),
        "exported_by": {
            "format": EXPORT_FORMAT,
            "llm_reasoners": _version("llm-reasoners"),
            "uats_studio": _version("uats-studio"),
        },
    }
    target = Path(path)
    target.write_text(json.dumps(out, ensure_ascii=False, default=str), encoding="utf-8")
    return target


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None
