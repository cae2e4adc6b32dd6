"""The CLI under careless input: one line `error: <field>: ...`, exit code 2, no traceback, nothing written;
`runs`/`show` never create a database and mark dead workers' runs failed; `show` prints any depth."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

from storage import RunStore, schema as S
from testkit.cli_errors import one_line_error
from testkit.doubles import record
from uats.cli import main
from uats.run_log_cmds import tree_lines
from uats_core.events import IterationEnded, NodesUpdated, RunEnded, RunStarted
from uats_core.records import StepInfo


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize(
    "content,needle",
    [
        (b'{"problem": "caf\xe9 au lait?", "answer": "1"}\n', "not UTF-8 text"),
        (b"[1, 2, 3]\n", "is a JSON list, not an object"),
        (b'"just a string"\n', "is a JSON str, not an object"),
        (b'{"problem": "ok", "answer": "1"}\n{"problem": \n', "is not valid JSON"),
        (b"[" * 100_000 + b"\n", "not valid JSON"),
    ],
)
def test_bad_dataset_lines(tmp_path: Path, capsys: pytest.CaptureFixture, content: bytes, needle: str) -> None:
    data = tmp_path / "d.jsonl"
    data.write_bytes(content)
    db = tmp_path / "out" / "x.db"
    rc = main(["search", "--dataset", str(data), "--problem", "0", "--db", str(db), "--quiet"])
    assert needle in one_line_error(capsys, rc, "dataset")
    assert _files(tmp_path) == ["d.jsonl"]


def test_db_under_a_regular_file(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "afile").write_text("x")
    for db in ("afile/x.db", "afile/sub/x.db"):
        rc = main(["search", "--db", str(tmp_path / db), "--budget", "2", "--max-iterations", "1", "--quiet"])
        one_line_error(capsys, rc, "db")
    assert _files(tmp_path) == ["afile"] and (tmp_path / "afile").read_text() == "x"


def test_db_in_a_folder_that_cannot_be_written(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(self: Path, *a: object, **k: object) -> None:
        raise PermissionError(13, "Permission denied", str(self))

    # As for a user without write access (tests may run as root): the access check and any mkdir say no.
    monkeypatch.setattr(Path, "mkdir", refuse)
    monkeypatch.setattr("os.access", lambda path, mode: False)
    rc = main(["search", "--db", str(tmp_path / "locked" / "x.db"), "--budget", "2", "--max-iterations", "1"])
    assert "not writable" in one_line_error(capsys, rc, "db")
    assert _files(tmp_path) == []


def test_truncated_safetensors(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from uats_core.backends.tiny import save_causal_lm

    pol = Path(save_causal_lm(tmp_path / "pol", hidden=32, layers=1, heads=2, kv_heads=1))
    weights = next(pol.glob("*.safetensors"))
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    capsys.readouterr()  # the save's progress bar
    rc = main(["search", "--policy", str(pol), "--db", str(tmp_path / "runs" / "x.db"), "--quiet"])
    assert "cannot load" in one_line_error(capsys, rc, "policy")


@pytest.mark.parametrize("command", [["runs"], ["show", "abc"]])
def test_read_commands_never_create_a_database(
    tmp_path: Path, capsys: pytest.CaptureFixture, command: list[str]
) -> None:
    for db in (str(tmp_path / "typo" / "x.db"), f"sqlite:///{tmp_path}/typo/y.db"):
        rc = main([*command, "--db", db])
        assert "no run log at" in one_line_error(capsys, rc, "db")
    assert _files(tmp_path) == []


@pytest.mark.parametrize(
    "argv,field",
    [
        (["runs", "--limit", "0"], "limit"),
        (["runs", "--limit", "x"], "limit"),
        (["show", "r", "--width", "-3"], "width"),
        (["search", "--budget", "abc"], "budget"),
        (["search", "--nope"], "arguments"),
        (["show"], "arguments"),
    ],
)
def test_bad_flags_are_one_line(capsys: pytest.CaptureFixture, argv: list[str], field: str) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    one_line_error(capsys, int(exc.value.code), field)


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.mark.parametrize("command", ["runs", "show"])
def test_read_commands_never_write_the_run_log(tmp_path: Path, capsys: pytest.CaptureFixture, command: str) -> None:
    """Issue 50, item 11: `uats show` marked a running run whose worker had died failed, writing to the file it
    read. Reading now leaves the file as it was, byte for byte; the app (or the next search) ends the run."""
    db = tmp_path / "runs.db"
    store = RunStore(str(db))
    store.register_run("d" * 32, method="h-uats", problem_id="p", question="q")
    with store.engine.begin() as conn:
        conn.execute(
            sa.update(S.runs).values(status="running", worker_pid=_dead_pid(), worker_host=socket.gethostname())
        )
    store.close()
    before = db.read_bytes()
    argv = ["runs"] if command == "runs" else ["show", "ddd"]
    assert main([*argv, "--db", str(db)]) == 0
    assert "running" in capsys.readouterr().out
    assert db.read_bytes() == before and _no_wal_frames(db)


def _no_wal_frames(db: Path) -> bool:
    """SQLite may open a read-only connection's -wal and -shm beside the file; nothing is written into them."""
    wal = db.with_name(db.name + "-wal")
    return not wal.exists() or wal.stat().st_size == 0


def _chain(depth: int) -> list[dict]:
    return [
        {
            "id": i,
            "parent_id": i - 1,
            "depth": i,
            "step": f"step {i}",
            "status": "active",
            "mc_scores": [0.5, 0.6],
            "mean": 0.55,
            "var": 0.005,
        }
        for i in range(1, depth + 1)
    ]


def test_show_prints_a_1500_deep_chain(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    db = tmp_path / "deep.db"
    store = RunStore(str(db))
    record(
        store,
        [
            RunStarted(
                run_id="e" * 32,
                method="beam",
                problem_id="p",
                question="q",
                gold_answer="1",
                seed=0,
                config={},
                policy="x",
                prm="y",
            ),
            NodesUpdated(iteration=0, nodes=[{"id": 0, "parent_id": None, "depth": 0, "step": ""}, *_chain(1500)]),
            IterationEnded(iteration=1, decisions=[], step_info=StepInfo(width=0), cost_step=1.0, cost_total=1.0),
            RunEnded(status="finished", iterations=1, cost=1.0),
        ],
    )
    store.close()
    capsys.readouterr()
    rc = main(["show", "eee", "--db", str(db)])
    res = capsys.readouterr()
    assert rc == 0 and "Traceback" not in res.err, res.err[-500:]
    lines = res.out.splitlines()
    assert len(lines) == 2 + 1500 and lines[-1].startswith("  " * 1499 + "#1500 ")


def test_tree_lines_order_and_a_damaged_cycle() -> None:
    nodes = [
        {"id": i, "parent_id": p, "step": f"s{i}", "status": "active", "children_granted": 0}
        for i, p in ((1, 0), (2, 0), (3, 1), (4, 3), (5, 2))
    ]
    assert [ln.split(" [")[0] for ln in tree_lines(nodes)] == ["#1", "  #3", "    #4", "#2", "  #5"]
    cyc = nodes + [{"id": 1, "parent_id": 4, "step": "again", "status": "active", "children_granted": 0}]
    assert len(list(tree_lines(cyc))) <= 7  # ends, whatever a damaged log holds


@pytest.mark.parametrize(
    "argv,field",
    [
        (["search", "--policy-opt", "temperature=NaN"], "policy-opt"),
        (["search", "--prm-opt", "max_batch_tokens=Infinity"], "prm-opt"),
        (["search", "--policy-opt", 'llm_kwargs={"gpu_memory_utilization": -Infinity}'], "policy-opt"),
        (["search", "--dataset", "DATA", "--problem", "²"], "problem"),  # a digit to str.isdigit, not to int()
    ],
)
def test_non_finite_options_and_odd_digits_are_refused_by_field(
    tmp_path: Path, capsys: pytest.CaptureFixture, argv: list[str], field: str
) -> None:
    """Issue 42, items 8 and 9: temperature=NaN used to run (exit 0) and problem ² to end in int()'s message."""
    data = tmp_path / "set.jsonl"
    data.write_text('{"problem": "What is 2 + 2?", "answer": "4"}\n')
    db = tmp_path / "out" / "runs.db"
    argv = [str(data) if a == "DATA" else a for a in argv]
    rc = main([*argv, "--db", str(db), "--budget", "2", "--max-iterations", "1", "--quiet"])
    line = one_line_error(capsys, rc, field)
    assert ("not a finite number" in line) == (field != "problem") and "invalid literal" not in line, line
    assert not db.parent.exists()


def test_eval_refuses_non_finite_options(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from uats.eval.cli import main as eval_main

    rc = eval_main(
        [
            "--policy-opt",
            "top_p=NaN",
            "--methods",
            "rebase",
            "--budgets",
            "2",
            "--problems",
            "1",
            "--seeds",
            "1",
            "--db",
            str(tmp_path / "eval.db"),
            "--dry-run",
            "--quiet",
        ]
    )
    assert "not a finite number" in one_line_error(capsys, rc, "policy-opt")
    assert not (tmp_path / "eval.db").exists()


def test_a_search_records_the_model_options_it_ran_with(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Issue 42, item 8: the policy and PRM options are part of the run's record (runs.model_options)."""
    db = tmp_path / "runs.db"
    assert (
        main(
            [
                "search",
                "--policy-opt",
                "temperature=0.5",
                "--budget",
                "2",
                "--max-iterations",
                "1",
                "--quiet",
                "--db",
                str(db),
            ]
        )
        == 0
    )
    store = RunStore(str(db))
    try:
        [run] = store.list_runs()
        assert run["model_options"] == {"policy_opts": {"temperature": 0.5}, "prm_opts": {}, "prm_kind": None}
    finally:
        store.close()


_FULL_DISK = """
import contextlib, json, os, subprocess, sys
d = sys.argv[1]
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=5m", "tmpfs", d], check=True)
search = [sys.executable, "-m", "uats", "search", "--budget", "2", "--max-iterations", "1", "--quiet", "--db",
          os.path.join(d, "runs.db")]
first = subprocess.run(search, capture_output=True, text=True)  # each search its own process, as a user runs them
with open(os.path.join(d, "filler"), "wb", buffering=0) as fh, contextlib.suppress(OSError):
    while True:  # to the last byte: the write that finds no room raises
        fh.write(b"x" * 4096)
second = subprocess.run(search, capture_output=True, text=True)
print(json.dumps({"first": first.returncode, "second": second.returncode, "err": second.stderr}))
"""


def test_a_full_disk_under_an_existing_run_log_says_so(tmp_path: Path) -> None:
    """Issue 42, item 9: on a real 5 MB filesystem holding a run log, filled to the last byte, the next search's
    SQLite error is "disk I/O error" (its WAL cannot grow); the CLI says the disk is full, in one line."""
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"no user and mount namespaces here ({probe.stderr.decode().strip()})")
    mnt = tmp_path / "small"
    mnt.mkdir()
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", sys.executable, "-c", _FULL_DISK, str(mnt)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    lines = [line for line in out["err"].splitlines() if line.startswith("error:")]
    assert out["first"] == 0 and out["second"] == 2 and len(lines) == 1, out
    assert lines[0].startswith("error: db: the run log at ") and " is full (" in lines[0], lines
    assert "free space on its disk" in lines[0]


def test_a_model_is_named_alike_in_search_and_eval(
    problems_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """py:module:function, a backend of the user's own, names a model in `uats search` as in `uats eval --model`
    (it was the evaluation's alone): both load it through uats_core.backends; a name that does not import is one
    line naming the field."""
    from testkit.eval_doubles import MODELS

    db = tmp_path / "runs.db"
    assert (
        main(
            [
                "search",
                "--dataset",
                str(problems_file),
                "--problem",
                "t1",
                "--policy",
                MODELS["pol"],
                "--prm",
                MODELS["rm"],
                "--budget",
                "4",
                "--max-iterations",
                "3",
                "--db",
                str(db),
                "--quiet",
            ]
        )
        == 0
    )
    [run] = RunStore(str(db)).list_runs()
    assert run["policy"] == "torch-rng-policy-double" and run["status"] == "finished"  # the double's own name
    capsys.readouterr()
    assert (
        main(
            [
                "search",
                "--dataset",
                str(problems_file),
                "--problem",
                "t1",
                "--policy",
                "py:tests.no_such_module:f",
                "--prm",
                MODELS["rm"],
                "--db",
                str(tmp_path / "other.db"),
                "--quiet",
            ]
        )
        == 2
    )
    assert capsys.readouterr().err.startswith("error: policy: 'py:tests.no_such_module:f': No module named")
    assert not (tmp_path / "other.db").exists()
