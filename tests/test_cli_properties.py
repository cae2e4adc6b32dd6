"""Property-based: whatever a dataset line or a CLI value holds, the CLI ends with exit code 2 and one line
`error: <field>: ...` on stderr, no traceback, and writes nothing.

Searches get a policy that does not exist, so every example ends before a model loads (a valid problem ends
with `error: policy: ...`), and an in-memory run log, so the only file a run could leave is one of ours.
Examples are derandomized: CI sees the same inputs on every run."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, event, given, settings, strategies as st

from uats.cli import main
from uats_core.config import SearchConfig

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
problem_objects = st.fixed_dictionaries(
    {},
    optional={
        "problem": st.one_of(st.text(max_size=60), json_values),
        "question": st.text(max_size=20),
        "answer": json_values,
        "id": st.one_of(st.text(max_size=10), st.integers()),
        "unique_id": st.text(max_size=10),
    },
)
lines = st.one_of(
    st.binary(max_size=60),  # anything at all, including invalid UTF-8
    json_values.map(lambda v: json.dumps(v).encode()),  # valid JSON that may not be an object
    problem_objects.map(lambda v: json.dumps(v, ensure_ascii=False).encode()),  # objects with odd fields
    st.text(max_size=40).map(lambda t: t.encode("utf-8", "surrogatepass")),
)
# values a person (or a script) might pass to any config flag: numbers of every kind, and text
cli_values = st.one_of(
    st.integers(),
    st.floats(),
    st.sampled_from(["", " ", "nan", "inf", "-inf", "1e999", "0x10", "last:", "last:-1", "head", "full"]),
    st.text(alphabet=st.characters(blacklist_characters="\x00"), max_size=12),
).map(str)
CONFIG_FLAGS = [f.name for f in dataclasses.fields(SearchConfig) if f.type not in ("bool", bool)]


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as exc:  # argparse's own exit, through our one-line error()
            rc = int(exc.code or 0)
    return rc, out.getvalue(), err.getvalue()


def _assert_one_line_error(rc: int, out: str, err: str, fields: tuple[str, ...] | None = None) -> None:
    assert rc == 2, (rc, out, err)
    assert "Traceback" not in out + err, err
    err_lines = err.strip("\n").split("\n")
    assert len(err_lines) == 1 and err_lines[0].startswith("error: "), err
    field = err_lines[0].split(":", 2)[1].strip()
    assert field and " " not in field, err  # a field name, then the message
    event(f"error field: {field}")  # --hypothesis-show-statistics shows which checks the examples reached
    if fields is not None:
        assert field in fields, err


@SETTINGS
@given(
    content=st.lists(lines, min_size=1, max_size=4),
    problem=st.one_of(st.sampled_from(["0", "1", "3"]), st.text(max_size=6)),
)
def test_any_dataset_lines(content: list[bytes], problem: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "d.jsonl"
        data.write_bytes(b"\n".join(content) + b"\n")
        before = data.read_bytes()
        rc, out, err = _run(
            [
                "search",
                "--dataset",
                str(data),
                f"--problem={problem}",
                "--db",
                "sqlite://",
                "--policy",
                str(Path(tmp) / "no-such-policy"),
                "--quiet",
            ]
        )
        # a dataset other than the arithmetic world's is refused for the default PRM too (it cannot score it)
        _assert_one_line_error(rc, out, err, ("dataset", "problem", "policy", "prm"))
        assert sorted(p.name for p in Path(tmp).iterdir()) == ["d.jsonl"] and data.read_bytes() == before


@SETTINGS
@given(values=st.dictionaries(st.sampled_from(CONFIG_FLAGS), cli_values, min_size=1, max_size=3))
def test_any_config_values(values: dict[str, str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        flags = [f"--{name.replace('_', '-')}={v}" for name, v in values.items()]
        rc, out, err = _run(["search", *flags, "--db", "sqlite://", "--policy", str(Path(tmp) / "nope"), "--quiet"])
        _assert_one_line_error(rc, out, err, (*values, "policy", "controller"))
        assert list(Path(tmp).iterdir()) == []


@SETTINGS
@given(
    command=st.sampled_from(["runs", "show"]),
    db=st.text(alphabet=st.characters(blacklist_characters="\x00/"), min_size=1, max_size=12),
    extra=st.lists(st.sampled_from(["--limit", "--width", "--status", "--method"]), max_size=2),
    value=cli_values,
)
def test_read_commands_with_any_values(command: str, db: str, extra: list[str], value: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        argv = [command] + (["abc"] if command == "show" else []) + ["--db", str(Path(tmp) / "sub" / db)]
        for flag in extra:
            if (
                (flag in ("--limit", "--status", "--method")) == (command == "runs")
                or flag == "--width"
                and command == "show"
            ):
                argv.append(f"{flag}={value}")
        rc, out, err = _run(argv)
        _assert_one_line_error(rc, out, err)
        assert list(Path(tmp).iterdir()) == []
