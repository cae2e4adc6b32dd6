"""Runs of other tools' searches, read from the files those tools write, as the engine's own events: `uats import`
and the app's Runs tab write them into the run log through the same recorder as a search, so the app steps through
them, compares them and shadow-scores them like its own runs.

One module per tool (llm_reasoners, search_and_learn, treequest), each documenting the format it reads from that
project's own code; tree.py turns the tree into events. A malformed file raises ImportFormatError, one line naming
the file, the place and what is wrong, before anything is written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from . import llm_reasoners, search_and_learn, treequest
from .search_and_learn import PRM_RULES
from .tree import (
    MAX_FILE_BYTES,
    MAX_IMPORT_NODES,
    TOOLS,
    ImportedRun,
    ImportFormatError,
    check_nodes,
    check_size,
    refuse_binary,
)

__all__ = ["TOOLS", "ImportedRun", "ImportFormatError", "read_runs", "MAX_FILE_BYTES", "PRM_RULES"]


def read_runs(
    tool: str,
    path: str | Path,
    *,
    question: str | None = None,
    gold: str | None = None,
    rows: list[int] | None = None,
    display_name: str | None = None,
    prm_rule: str | None = None,
    max_nodes: int = MAX_IMPORT_NODES,
    on_skip: Callable[[str], None] | None = None,
) -> list[ImportedRun]:
    """The runs in `path`, a file `tool` wrote. question/gold: for formats that may not store them (llm-reasoners,
    TreeQuest); rows: search-and-learn's 0-based rows (default all); prm_rule: how its PRM cut steps (PRM_RULES;
    default: recognised from the scores); on_skip: told of each bad search-and-learn row left out (default: logged).
    display_name: how errors name the file (the app names a file by its name in the server's folder, never by its
    path). max_nodes: the node cap, checked while a search-and-learn file is read."""
    from uats_core.errors import ConfigError

    name = display_name or str(path)
    if tool not in TOOLS:
        raise ConfigError("from", f"{tool!r} is not a tool we read; use one of {', '.join(TOOLS)}")
    p = Path(path)
    if not p.is_file():
        raise ImportFormatError(name, "no such file; give the file the tool wrote")
    check_size(name, p.stat().st_size)
    if tool == "search-and-learn":
        if question is not None or gold is not None:
            raise ConfigError(
                "question", "search-and-learn rows hold their problem and answer; leave --question and --answer out"
            )
        if prm_rule is not None and prm_rule not in PRM_RULES:
            raise ConfigError("prm-rule", f"{prm_rule!r} is no search-and-learn PRM; use one of {', '.join(PRM_RULES)}")
        runs = search_and_learn.read(p, name, rows, prm_rule, max_nodes, on_skip)
        check_nodes(name, runs, max_nodes)
        return runs
    if prm_rule is not None:
        raise ConfigError("prm-rule", f"a {tool} file has no PRM steps to cut; --prm-rule is for search-and-learn")
    with p.open("rb") as f:
        refuse_binary(name, f.read(8))
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ImportFormatError(
            name, "not UTF-8 text (llm-reasoners' and TreeQuest's exports are JSON or YAML)"
        ) from None
    if rows is not None:
        raise ConfigError("rows", f"a {tool} file holds one search; --rows is for search-and-learn's rows")
    parse: Callable[..., list[ImportedRun]] = llm_reasoners.parse if tool == "llm-reasoners" else treequest.parse
    runs = parse(text, name, question=question, gold=gold)
    check_nodes(name, runs, max_nodes)
    return runs
