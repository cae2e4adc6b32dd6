"""Issue 50, item 8: imports parsed in the app's own process and followed links. A 32 MiB file of `{}` objects cost
the app +800 MB; a 3,000-deep nested TreeQuest tree raised RecursionError with an empty error; links out of
--imports-dir (even to /etc/passwd) were offered and followed. Now the app's handler parses nothing, the worker parses
in a child with its memory capped and a deep stack, and no link out of the folder is offered or read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from storage import RunStore
from testkit.doubles import WorkerPoolDouble
from testkit.tool_files import write_tool_files
from uats_core.imports import ImportFormatError
from ui.choices import server_choices
from ui.jobs.import_job import submit_import


def _imported(store: RunStore, pool: WorkerPoolDouble, choices, tool: str, name: str) -> dict:
    """Submit as the Runs tab does, then run the job as a worker would: the run's row."""
    run_id = submit_import(store, pool, choices, tool, name, 0)
    assert pool.submitted.pop().run(None, store) is None
    return store.get_run(run_id)


def test_no_link_out_of_the_imports_folder_is_offered_or_read(tmp_path: Path) -> None:
    folder = tmp_path / "imports"
    files = write_tool_files(folder)
    (folder / "passwd.json").symlink_to("/etc/passwd")
    outside = tmp_path / "elsewhere.json"
    outside.write_text(files["treequest"].read_text())
    (folder / "elsewhere.json").symlink_to(outside)
    (folder / "same.json").symlink_to(files["treequest"])  # a link to another entry of the folder stays offered
    choices = server_choices(imports_dirs=[folder])
    assert "passwd.json" not in choices.imports and "elsewhere.json" not in choices.imports
    assert "same.json" in choices.imports
    files["treequest"].unlink()  # a listed file made a link out after start-up: refused when picked
    files["treequest"].symlink_to(outside)
    store, pool = RunStore("sqlite://"), WorkerPoolDouble()
    name = files["treequest"].name
    with pytest.raises(ImportFormatError, match=f"^file: {name}: is a link out of the imports folder"):
        submit_import(store, pool, choices, "treequest", name, 0)
    assert store.list_runs() == [] and pool.submitted == []


def test_the_apps_process_parses_no_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The handler and the job's parse never call the parsers in the calling process: a parser that raises here
    changes nothing (the parse happens in the child the job spawns)."""
    folder = tmp_path / "imports"
    write_tool_files(folder)
    choices = server_choices(imports_dirs=[folder])

    def parsed_here(*_a: object, **_k: object) -> None:
        raise AssertionError("an import was parsed in the app's process")

    monkeypatch.setattr("uats_core.imports.read_runs", parsed_here)
    monkeypatch.setattr("ui.jobs.import_job.read_runs", parsed_here, raising=False)  # where it was bound by name
    store, pool = RunStore(str(tmp_path / "runs.db")), WorkerPoolDouble()
    run = _imported(store, pool, choices, "search-and-learn", "best_of_n_completions.jsonl")
    assert run["status"] == "finished" and run["n_nodes"] > 1


def test_deep_nesting_is_one_line_naming_the_file(tmp_path: Path) -> None:
    """The issue's trial nested a TreeQuest tree 3,000 levels deep and got a RecursionError with an empty error.
    Nesting far deeper (100,000 levels) now ends the run failed with one line that names the file."""
    folder = tmp_path / "imports"
    folder.mkdir()
    (folder / "deep.json").write_text('{"nodes": ' + "[" * 100_000 + "]" * 100_000 + "}")
    store, pool = RunStore(str(tmp_path / "runs.db")), WorkerPoolDouble()
    run_id = submit_import(
        store, pool, server_choices(imports_dirs=[folder]), "treequest", "deep.json", 0, question="What is 1 + 1?"
    )
    assert pool.submitted.pop().run(None, store) is None
    run = store.get_run(run_id)
    assert run["status"] == "failed" and run["error"].startswith("file: deep.json: ") and "\n" not in run["error"]
    assert len(run["error"]) > len("file: deep.json: ")


def test_a_file_that_needs_too_much_memory_is_one_line(tmp_path: Path) -> None:
    """The issue's 32 MiB file of `{}` objects: the parsing child meets its memory cap and the run ends failed with
    one line; the process that submitted and ran the job (here, the test's: the app's handler and a worker) did not
    grow by the parse."""
    from ui.jobs.import_parse import APP_IMPORT_MEMORY_BYTES

    folder = tmp_path / "imports"
    folder.mkdir()
    with open(folder / "objects.json", "w") as fh:  # llm-reasoners' form: {"logs": [snapshot, ...]}
        fh.write('{"logs": [{}')
        fh.write(",{}" * ((32 * 2**20 - 16) // 3))
        fh.write("]}")
    store, pool = RunStore(str(tmp_path / "runs.db")), WorkerPoolDouble()
    before = _rss()
    run = _imported(store, pool, server_choices(imports_dirs=[folder]), "llm-reasoners", "objects.json")
    assert run["status"] == "failed" and run["error"] == (
        f"file: objects.json: the file needs more memory than an import may use "
        f"({APP_IMPORT_MEMORY_BYTES >> 20:,} MiB); use `uats import` on the server"
    )
    assert _rss() - before < 200 * 2**20


def _rss() -> int:
    with open(f"/proc/{os.getpid()}/status") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmRSS:"))
