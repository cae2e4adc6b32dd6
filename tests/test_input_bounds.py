"""Every value a user gives is checked against what the run log's schema can hold before anything is written, on
SQLite and on PostgreSQL (UATS_TEST_POSTGRES_URL, testkit/postgres.py); the CLI refuses bad input in one line,
exit 2, before any model loads and without creating a database; the app shows a one-line notice and never SQL."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from storage import RunStore, StorageError, schema as S
from storage.bounds import storable_text
from testkit.doubles import HashedPRMDouble, ScriptedPolicyDouble, WorkerPoolDouble
from testkit.postgres import fresh_database
from testkit.serving import app_client, form_args, notice_text, save_note, served_app
from uats.cli import main
from uats_core.config import SearchConfig
from uats_core.paths import WORLD_POLICY, WORLD_PRM
from uats_core.problems import MAX_ANSWER_CHARS, MAX_QUESTION_CHARS, Problem
from uats_core.protocols import StepOutput, Trace
from uats_core.runner import run_search

ID_MAX = S.runs.c.problem_id.type.length  # the bounds come from the schema: so do the values at and past them
SEED_LO, SEED_HI = -(2**31), 2**31 - 1  # an INTEGER column on PostgreSQL (SQLite's hold 64 bits)
OUT_OF_BOUNDS = [
    ("problem_id", {"problem_id": "p" * (ID_MAX + 1)}),
    ("policy", {"policy": "x" * (S.runs.c.policy.type.length + 1)}),
    ("seed", {"seed": 3_000_000_000}),
    ("seed", {"seed": 2**70}),
    ("seed", {"seed": SEED_LO - 1}),
    ("question", {"question": "What is 1 + 1?\x00"}),
    ("gold_answer", {"gold_answer": "caf\udce9"}),  # a lone surrogate: what undecodable bytes in argv become
    ("config", {"config": {"tau": float("nan")}}),
    ("question", {"question": "q" * (MAX_QUESTION_CHARS + 1)}),  # the Text columns' bounds: schema.py's info
    ("gold_answer", {"gold_answer": "7" * (MAX_ANSWER_CHARS + 1)}),
]


@pytest.fixture(params=["sqlite", "postgresql"])
def run_log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield str(tmp_path / "log" / "runs.db")
        return
    with fresh_database("the run log's input bounds") as url:
        yield url


def _tables(url: str) -> list[str]:
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        return sa.inspect(engine).get_table_names()
    finally:
        engine.dispose()


def _nothing_written(db: str) -> None:
    if "://" in db:
        assert _tables(db) == [], "the run log was created before the input was checked"
    else:
        assert not Path(db).exists() and not Path(db).parent.exists()


@pytest.mark.parametrize("field,values", OUT_OF_BOUNDS, ids=[f"{f}-{i}" for i, (f, _) in enumerate(OUT_OF_BOUNDS)])
def test_a_run_row_the_schema_cannot_hold_is_refused_by_field(run_log: str, field: str, values: dict) -> None:
    store = RunStore(run_log)
    try:
        with pytest.raises(StorageError) as exc:
            store.register_run("r1", **{"method": "h-uats", "problem_id": "p", "question": "q", **values})
        assert exc.value.field == field and str(exc.value).startswith(f"{field}: ")
        assert "INSERT" not in str(exc.value) and "\n" not in str(exc.value)
        assert store.list_runs() == []
    finally:
        store.close()


def test_values_at_the_bounds_are_stored_exactly(run_log: str) -> None:
    store = RunStore(run_log)
    try:
        kept = dict(
            method="h-uats",
            problem_id="p" * ID_MAX,
            question="é" * MAX_QUESTION_CHARS,
            seed=SEED_HI,
            gold_answer="ü" * MAX_ANSWER_CHARS,
            policy="q" * S.runs.c.policy.type.length,
            config={"note": "a\x00b", "big": 2**80},
        )
        store.register_run("r1", **kept)
        store.register_run("r2", method="rebase", problem_id="p", question="?", seed=SEED_LO)
        run = store.get_run("r1")
        assert {k: run[k] for k in kept} == kept and store.get_run("r2")["seed"] == SEED_LO
        with pytest.raises(StorageError, match="^note: contains a NUL"):
            store.set_note("r1", note="a\x00b")
        with pytest.raises(StorageError, match=f"^note: is {S.MAX_NOTE_CHARS + 1:,} characters long; "):
            store.set_note("r1", note="n" * (S.MAX_NOTE_CHARS + 1))
        assert store.get_star("r1") is None
        store.set_note("r1", note="ö" * S.MAX_NOTE_CHARS)
        assert store.get_star("r1")["note"] == "ö" * S.MAX_NOTE_CHARS
    finally:
        store.close()


class NulWritingPolicyDouble(ScriptedPolicyDouble):
    """A policy whose steps hold a NUL, as a real model's sampled tokens can."""

    def generate_steps(self, traces: Sequence[Trace]) -> list[StepOutput]:
        return [
            StepOutput(o.text.replace("step", "st\x00ep"), o.num_tokens, o.finish_reason)
            for o in super().generate_steps(traces)
        ]


def test_a_step_the_model_wrote_with_a_nul_is_stored_not_refused(run_log: str) -> None:
    """The report: a generated step holding a NUL was not checked before a PostgreSQL write (the run would fail
    there and nowhere else). Model-written text is stored with U+FFFD in its place, on every database."""
    store = RunStore(run_log)
    try:
        problem = Problem(id="p", question="What is 2+2?", answer="4")
        result = run_search(
            problem,
            SearchConfig(method="rebase", budget=4, max_iterations=4),
            NulWritingPolicyDouble(),
            HashedPRMDouble(),
            subscribers=[store.subscriber()],
        )
        run = store.get_run(result.run_id)
        assert run["status"] == "finished", run["error"]
        steps = [n["step"] for n in store.get_nodes(result.run_id) if n["step"].startswith("st")]
        assert steps and all(s.startswith("st\ufffdep") for s in steps), steps[:3]
    finally:
        store.close()
    assert storable_text("a\udc80b\x00") == "a\ufffdb\ufffd"  # a lone surrogate, which no driver sends


# ------------------------------------------------------------------ the command line
@pytest.fixture()
def no_model_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: Any, **__: Any) -> None:
        raise AssertionError("a model loaded before the input was checked")

    monkeypatch.setattr("uats_core.backends.plan.load_models", refuse)


def _one_line(capsys: pytest.CaptureFixture, rc: int, field: str) -> str:
    """The one error line; `field` may list several names separated by '|'."""
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1, (rc, out, err)
    assert any(lines[0].startswith(f"error: {f}: ") for f in field.split("|")), lines[0]
    assert "Traceback" not in out + err and "INSERT" not in err
    return lines[0]


def _dataset(folder: Path, **row: Any) -> list[str]:
    path = folder / "data.jsonl"
    path.write_text(json.dumps({"id": "d0", "problem": "What is 2 + 2?", "answer": "4", **row}) + "\n")
    return ["--dataset", str(path), "--problem", "0", "--policy", str(WORLD_POLICY), "--prm", str(WORLD_PRM)]


CLI_CASES = {
    "seed-2^70": (["--seed", str(2**70)], {}, "seed"),
    "seed-3e9": (["--seed", "3000000000"], {}, "seed"),
    "budget-1": (["--budget", "1"], {}, "budget"),
    "k0-1e9": (["--k0", "1000000000"], {}, "budget|k0"),
    "prm-opt-type": (["--prm-opt", 'max_batch_tokens="abc"'], {}, "prm-opt"),
    "policy-opt-type": (["--policy-opt", 'temperature="hot"'], {}, "policy-opt"),
    "policy-name": (["--policy-opt", "name=" + "n" * 201], {}, "policy"),
    "long-id": ([], {"id": "i" * (ID_MAX + 1)}, "problem_id"),
    "nul-question": ([], {"problem": "What is 2 + 2?\x00"}, "question"),
    "1MB-question": ([], {"problem": "What is 2 + 2? " * 70_000}, "problem"),
    "unreachable-server": (["--db", "postgresql+psycopg://u:p@127.0.0.1:1/x"], {}, "db"),
}


@pytest.mark.parametrize("case", list(CLI_CASES))
def test_cli_refuses_in_one_line_before_loading_or_writing(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture, no_model_loads: None
) -> None:
    extra, row, field = CLI_CASES[case]
    data = _dataset(tmp_path, **row) if row else []
    db = tmp_path / "out" / "runs.db"
    rc = main(["search", "--db", str(db), "--max-iterations", "2", "--quiet", *data, *extra])
    line = _one_line(capsys, rc, field)
    if case == "k0-1e9":
        assert "k0" in line.partition(": ")[2]
    if case == "1MB-question":
        assert "characters; keep it under" in line
    assert not db.exists() and not db.parent.exists()


@pytest.mark.parametrize("case", ["seed-3e9", "long-id", "nul-question", "policy-name"])
def test_cli_refuses_on_postgresql_before_creating_anything(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture, no_model_loads: None
) -> None:
    extra, row, field = CLI_CASES[case]
    data = _dataset(tmp_path, **row) if row else []
    with fresh_database("the command line's input bounds") as url:
        rc = main(["search", "--db", url, "--max-iterations", "2", "--quiet", *data, *extra])
        _one_line(capsys, rc, field)
        _nothing_written(url)


def test_cli_reports_a_wrong_postgresql_password_before_loading(
    capsys: pytest.CaptureFixture, no_model_loads: None
) -> None:
    with fresh_database("a wrong password") as url:
        wrong = sa.engine.make_url(url).set(password="not-the-password")
        rc = main(["search", "--db", wrong.render_as_string(hide_password=False), "--quiet"])
        line = _one_line(capsys, rc, "db")
        assert "password authentication failed" in line and "not-the-password" not in line
        _nothing_written(url)


# ------------------------------------------------------------------ the app
SMOLLM2 = {"policy": "smollm2 (SmolLM2-135M-Instruct)", "prm": "smollm2 (SmolLM2-135M-Instruct)"}


@pytest.mark.parametrize(
    "field,form",
    [
        ("seed", {"seed": 3e9}),
        ("question", {"free_question": "What is 3 + 4?\x00", **SMOLLM2}),
        # issue 42: a typed gold answer of 200,000 characters (a 10 MB one is refused with the request, by its size)
        ("gold_answer", {"free_question": "What is 3 + 4?", "free_answer": "7" * 200_000, **SMOLLM2}),
        ("policy_opts", {"policy_opts": "temperature=NaN", **SMOLLM2}),
        ("prm_opts", {"prm_opts": "step_tag=1\ndtype=-Infinity", **SMOLLM2}),
    ],
    ids=["seed-3e9", "nul-question", "long-gold-answer", "nan-option", "inf-option"],
)
def test_the_app_names_the_field_and_records_nothing(run_log: str, tmp_path: Path, field: str, form: dict) -> None:
    store = RunStore(run_log)
    try:
        with served_app(store, WorkerPoolDouble(), tmp_path) as url:
            client = app_client(url)
            out = client.predict(**form_args(client, **form), api_name="/on_run")
        said = notice_text(out[0])
        assert said.startswith(f"{field}: ") and "INSERT" not in said and "\n" not in said.strip(), said
        assert store.list_runs() == []
    finally:
        store.close()


def test_the_app_refuses_a_policy_it_does_not_offer_and_records_nothing(run_log: str, tmp_path: Path) -> None:
    """A 201-character policy name is no choice of the server's (ui/choices.py): refused before the run log."""
    store = RunStore(run_log)
    try:
        with served_app(store, WorkerPoolDouble(), tmp_path) as url:
            client = app_client(url)
            with pytest.raises(Exception, match="not in the list of choices") as refused:
                client.predict(**form_args(client, policy="p" * 201), api_name="/on_run")
        assert "INSERT" not in str(refused.value)
        assert store.list_runs() == []
    finally:
        store.close()


def test_the_app_never_shows_the_databases_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """What the bounds miss still reaches no page: the database's message (its SQL) goes to the server's log."""
    sql = "INSERT INTO runs (run_id, question) VALUES (?, ?)"
    store = RunStore(str(tmp_path / "runs.db"))

    def refused(*_: Any, **__: Any) -> None:
        raise sa.exc.DataError(sql, ("r", "secret question"), Exception("value too long for type"))

    monkeypatch.setattr(store, "register_run", refused)
    try:
        with served_app(store, WorkerPoolDouble(), tmp_path) as url, caplog.at_level(logging.ERROR):
            client = app_client(url)
            said = notice_text(client.predict(**form_args(client), api_name="/on_run")[0])
            paired = notice_text(client.predict(**form_args(client, "/on_pair"), api_name="/on_pair")[0])
        for text in (said, paired):
            assert "could not record this run" in text and "INSERT" not in text and "secret" not in text
        assert sql in caplog.text
    finally:
        store.close()


def test_a_note_past_its_bound_is_refused_in_the_app(run_log: str, tmp_path: Path) -> None:
    """Issue 42, item 4: a 200,000-character star note (a 20 MB one is refused with the request) is refused by
    field and nothing is stored."""
    from testkit.doubles import record_synthetic

    store = RunStore(run_log)
    try:
        with served_app(store, WorkerPoolDouble(), tmp_path) as url:
            client = app_client(url)
            client.predict(**form_args(client), api_name="/on_run")  # a queued run of this session's
            rid = store.list_runs()[0]["run_id"]
            record_synthetic(store, rid, n_nodes=10, seed=1)
            said = save_note(client, rid, 2, "n" * 200_000)
            assert said.startswith(
                f"note: is 200,000 characters long; the run log's stars.note column holds at most {S.MAX_NOTE_CHARS:,}"
            ), said
            assert store.get_star(rid, 2) is None
    finally:
        store.close()


def test_a_typed_question_that_is_not_unicode_names_its_field() -> None:
    """Issue 42, item 9: a lone surrogate (a client's JSON can carry "\\udce9") in a typed question is refused
    naming the field, not as the UTF-8 codec's own message; the page's typed-problem box and Run both use this."""
    from uats_core.errors import ProblemError
    from ui.tabs.run_form import typed_problem

    with pytest.raises(ProblemError) as exc:
        typed_problem("What is caf\udce9 + 4?", "7")
    assert exc.value.field == "free_question"
    assert str(exc.value) == (
        "free_question: is not valid Unicode text (character 12 is a lone surrogate '\\udce9'); give UTF-8 text"
    )
