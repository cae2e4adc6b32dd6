"""`python -m benchmarks import`: `uats import` of a large search-and-learn file, each as its own process: refused
on the node cap (the rows are read one at a time, so the refusal comes at the row that passes the cap, not after
the whole file), and `--rows` of it (read no further than the last row asked for). Wall time and peak RSS of the
`uats import` process against the targets (refused in <= 5 s and <= 300 MB RSS; `--rows` in <= 10 s), with the
machine's load beside them. The targets are an idle machine's wall time; where the load passes the machine's cores,
the process's CPU time (user + system) is judged instead, and the output says which.

The file is testkit/big_files.py's, built from search-and-learn's own output (tests/tool_fixtures: its dvts under the
default PRM, written by its code) scaled as a real run is: N = 256 completions per row (64 copies of each of the
fixture's 4, each copy's steps told apart so that they are distinct nodes), rows repeated until the file holds
--mb megabytes."""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from testkit.big_files import COPIES, build

ROOT = Path(__file__).resolve().parent.parent
TARGETS = {"refused_s": 5.0, "refused_rss_mb": 300.0, "rows_s": 10.0}


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "import",
        help="uats import of a large search-and-learn file: refused on the node cap, and "
        "--rows of it (benchmarks/imports.py)",
    )
    p.add_argument("--mb", type=float, default=200.0, help="size of the file to build (default 200 MB)")
    p.add_argument("--dir", type=Path, default=None, help="build it here (default: a temporary folder)")
    p.set_defaults(func=run)


def timed(argv: list[str]) -> dict[str, Any]:
    """One `uats import` process: its exit code, wall seconds, peak RSS (MB) and the last line it printed."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "uats", "import", *argv],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = proc.communicate()
    wall = time.perf_counter() - t0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # the peak of this process's children: _one runs one
    lines = (err or out).strip().splitlines()
    return {
        "rc": proc.returncode,
        "wall_s": round(wall, 2),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "said": lines[-1][:240] if lines else "",
    }


def _one(argv: list[str]) -> dict[str, Any]:
    """timed() in a process of its own, so RUSAGE_CHILDREN's peak is that import's alone."""
    code = f"import json, sys; from benchmarks.imports import timed; print(json.dumps(timed({argv!r})))"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.dir or Path(tmp)
        path = folder / "dvts_completions.jsonl"
        t0 = time.perf_counter()
        n_rows = build(path, args.mb)
        size_mb = path.stat().st_size / 1e6
        print(
            f"built {path.name}: {size_mb:.0f} MB, {n_rows} rows of N = {4 * COPIES} in "
            f"{time.perf_counter() - t0:.1f} s"
        )
        load = os.getloadavg()
        refused = _one([str(path), "--from", "search-and-learn", "--db", str(Path(tmp) / "refused.db")])
        last = n_rows - 1
        rows = _one(
            [str(path), "--from", "search-and-learn", "--db", str(Path(tmp) / "rows.db"), "--rows", f"0,{last}"]
        )
        load_after = os.getloadavg()
    # the targets are an idle machine's wall time: on a busy one (load over its cores) the process's CPU time
    # stands for it, and the verdict says which was judged
    clock = "wall_s" if max(load[0], load_after[0]) <= (os.cpu_count() or 1) else "cpu_s"
    verdict = {
        "refused": refused["rc"] == 2
        and "nodes an import writes" in refused["said"]
        and refused[clock] <= TARGETS["refused_s"]
        and refused["peak_rss_mb"] <= TARGETS["refused_rss_mb"],
        "rows": rows["rc"] == 0 and rows[clock] <= TARGETS["rows_s"],
    }
    print(
        json.dumps(
            {
                "file_mb": round(size_mb),
                "rows": n_rows,
                "cpus": os.cpu_count(),
                "load_1_5_15_before": [round(x, 2) for x in load],
                "load_1_5_15_after": [round(x, 2) for x in load_after],
                "targets": TARGETS,
                "refused_on_node_cap": refused,
                f"rows_0_and_{last}": rows,
                "judged_on": clock,
                "verdict": {k: "met" if v else "missed" for k, v in verdict.items()},
            },
            indent=1,
        )
    )
    return 0 if all(verdict.values()) else 1
