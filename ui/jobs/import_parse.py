"""Parsing one import in a process of its own, bounded: a file a client picks is parsed neither in the app's process
(a 32 MiB file of `{}` objects cost the app +800 MB) nor unbounded in a warm worker, but in a child the worker
spawns with its address space capped (APP_IMPORT_MEMORY_BYTES) and a deep stack, so a tree nested thousands of
levels parses and a file that needs more memory ends as one line. Light on purpose: the child imports this module
and the parsers (uats_core.imports) only."""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
import threading
from pathlib import Path
from typing import Any

# what the parse may add to the child's address space: a 32 MiB file of text takes a few tens of MB; a 32 MiB file of
# `{}` objects wants ~800 MB and is refused
APP_IMPORT_MEMORY_BYTES = 512 << 20
PARSE_STACK_BYTES = (
    64 << 20
)  # the parsing thread's stack (within the cap): a 3,000-deep nested tree raised RecursionError
PARSE_RECURSION = 200_000
PARSE_TIMEOUT_S = 600.0


class ImportRefused(Exception):
    """The file cannot be imported; the message is one line naming the file and why."""


def outside_folder(path: str | Path, folder: str | Path) -> bool:
    """Whether `path`, followed through every link, leaves `folder` (the --imports-dir it was listed from)."""
    return not Path(os.path.realpath(path)).is_relative_to(os.path.realpath(folder))


def _mapped_bytes() -> int:
    """This process's address space now (Linux's VmSize); 0 where /proc does not say."""
    try:
        with open(f"/proc/{os.getpid()}/status") as fh:
            return next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmSize:"))
    except (OSError, StopIteration, ValueError):
        return 0


def _child(
    tool: str, path: str, rows: list[int] | None, name: str, question: str | None, gold: str | None, out: Any
) -> None:
    """In the spawned child: cap the address space, parse in a thread with a deep stack, send back the runs or one
    line."""
    import resource

    # Arrow (Parquet files) reserves address space for its allocator's arenas and threads: the system allocator and
    # one thread keep its reservations within the cap
    os.environ["ARROW_DEFAULT_MEMORY_POOL"] = "system"
    os.environ["OMP_NUM_THREADS"] = "1"
    # the cap is the parse's own: what this interpreter already maps (spawn re-imports the parent's main module, a
    # few hundred MB under some launchers) plus the import's memory allowance and the parsing thread's stack
    cap = _mapped_bytes() + APP_IMPORT_MEMORY_BYTES + PARSE_STACK_BYTES
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    result: list[Any] = []

    def parse() -> None:
        from uats_core.imports import read_runs

        try:
            result.append(("ok", read_runs(tool, path, rows=rows, display_name=name, question=question, gold=gold)))
        except MemoryError:
            result.append(
                (
                    "refused",
                    f"{name}: the file needs more memory than an import may use "
                    f"({APP_IMPORT_MEMORY_BYTES >> 20:,} MiB); use `uats import` on the server",
                )
            )
        except RecursionError:
            result.append(
                ("refused", f"{name}: the file nests deeper than the importer follows ({PARSE_RECURSION:,} levels)")
            )
        except Exception as exc:  # noqa: BLE001 - ImportFormatError and the rest: one line back to the worker
            result.append(("refused", str(exc) or f"{name}: {type(exc).__name__}"))

    sys.setrecursionlimit(PARSE_RECURSION)
    threading.stack_size(PARSE_STACK_BYTES)
    worker = threading.Thread(target=parse, name="uats-import-parse")
    worker.start()
    worker.join()
    try:
        out.send(result[0] if result else ("refused", f"{name}: the importer stopped without an answer"))
    except MemoryError:  # the runs would not pickle within the bound
        out.send(("refused", f"{name}: the file's runs need more memory than an import may use"))


def parse_bounded(
    tool: str, path: str, rows: list[int] | None, name: str, question: str | None = None, gold: str | None = None
) -> list[Any]:
    """read_runs(tool, path, rows, question, gold) in a bounded child process: its runs, or ImportRefused with one
    line."""
    ctx = mp.get_context("spawn")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(
        target=_child, args=(tool, path, rows, name, question, gold, send), name="uats-import-parse", daemon=True
    )
    child.start()
    send.close()
    try:
        if not receive.poll(PARSE_TIMEOUT_S):
            raise ImportRefused(f"{name}: parsing took longer than {PARSE_TIMEOUT_S:g} s")
        kind, value = receive.recv()
    except EOFError:
        child.join(5)
        raise ImportRefused(
            f"{name}: the importer's process ended (code {child.exitcode}) without an answer; the "
            "file may need more memory than an import may use"
        ) from None
    finally:
        receive.close()
        if child.is_alive():
            child.kill()
        child.join(5)
    if kind != "ok":
        raise ImportRefused(value)
    return list(value)
