"""A model's own Python code runs only where the person at the keyboard asked for it.

The command line takes `trust_remote_code` (and `code_revision`) only with --trust-remote-code; without it
the option is one line `error: <policy_opts|prm_opts>: ...`, exit 2, before anything loads or is written.
The app takes no such option from a client at all: its clients set a fixed list of options (ui/choices.py),
and the launcher's folder flags are checked before the app starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from testkit.cli_errors import one_line_error
from testkit.remote_code import code_config, write_code_module
from uats.cli import main
from uats_core.config import ConfigError

ROOT = Path(__file__).resolve().parent.parent


def _code_model(tmp_path: Path) -> tuple[Path, Path]:
    """A model folder whose config.json sends AutoConfig to its own evil.py; importing that writes the marker."""
    marker = tmp_path / "marker"
    folder = write_code_module(tmp_path / "code-model", marker).parent
    (folder / "config.json").write_bytes(code_config("evil.EvilConfig"))
    return folder, marker


@pytest.mark.parametrize(
    "argv,field",
    [
        (["search", "--prm-opt", "trust_remote_code=true"], "prm_opts"),
        (["search", "--policy-opt", "trust_remote_code=true"], "policy_opts"),
        (["search", "--policy-opt", 'llm_kwargs={"trust_remote_code": true}'], "policy_opts"),
        (["search", "--prm-opt", "code_revision=main"], "prm_opts"),
        (["doctor", "--prm-opt", "trust_remote_code=1"], "prm_opts"),
    ],
)
def test_cli_refuses_code_options_without_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture, argv: list[str], field: str
) -> None:
    folder, marker = _code_model(tmp_path)
    db = tmp_path / "out" / "runs.db"
    extra = ["--db", str(db), "--budget", "2", "--max-iterations", "1", "--quiet"] if argv[0] == "search" else []
    rc = main([*argv, "--prm", str(folder), "--prm-kind", "token-classification", *extra])
    line = one_line_error(capsys, rc, field)
    assert "--trust-remote-code" in line
    assert not marker.exists() and not db.parent.exists()


def test_eval_refuses_code_options_without_the_flag(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from uats.eval.cli import main as eval_main

    db = tmp_path / "eval.db"
    rc = eval_main(
        [
            "--prm-opt",
            "trust_remote_code=true",
            "--methods",
            "rebase",
            "--budgets",
            "2",
            "--problems",
            "1",
            "--seeds",
            "1",
            "--db",
            str(db),
            "--dry-run",
            "--quiet",
        ]
    )
    assert "--trust-remote-code" in one_line_error(capsys, rc, "prm_opts")
    assert not db.exists()


@pytest.mark.slow
def test_the_flag_is_what_lets_a_models_code_run(tmp_path: Path) -> None:
    """The same model and option with --trust-remote-code: transformers imports the model's module (the marker
    appears), so the flag, and only the flag, stands between an option and a model's code running."""
    folder, marker = _code_model(tmp_path)
    env = {**os.environ, "HF_MODULES_CACHE": str(tmp_path / "hf-modules"), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "uats",
            "doctor",
            "--prm",
            str(folder),
            "--prm-opt",
            "trust_remote_code=true",
            "--trust-remote-code",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert marker.exists(), (done.returncode, done.stdout[-2000:], done.stderr[-2000:])


def test_app_options_are_an_allow_list() -> None:
    from ui.choices import APP_POLICY_OPTIONS, APP_PRM_OPTIONS, app_options

    assert app_options(["temperature=0.7", "dtype=bfloat16", "seed=3"], "policy_opts", APP_POLICY_OPTIONS) == {
        "temperature": 0.7,
        "dtype": "bfloat16",
        "seed": 3,
    }
    refused = {
        ("trust_remote_code=true", "policy_opts"): "trust_remote_code: the app never runs code",
        ("code_revision=main", "prm_opts"): "code_revision: the app never runs code",
        ("trust-remote-code=false", "prm_opts"): "trust_remote_code: the app never runs code",
        ("attn_implementation=kernels-community/x", "prm_opts"): "attn_implementation: not an option the app accepts",
        ('llm_kwargs={"trust_remote_code": true}', "policy_opts"): "llm_kwargs: not an option the app accepts",
        ("tokenizer=/etc", "policy_opts"): "tokenizer: not an option the app accepts",
        ("template=Q: {question.__class__}", "prm_opts"): "template: not an option the app accepts",
        ('device={"a": 1}', "prm_opts"): "device: give a plain value",
    }
    for (line, field), needle in refused.items():
        accepted = APP_POLICY_OPTIONS if field == "policy_opts" else APP_PRM_OPTIONS
        with pytest.raises(ConfigError) as exc:
            app_options([line], field, accepted)
        assert exc.value.field == field and needle in str(exc.value), (line, str(exc.value))


def test_a_worker_refuses_a_request_with_a_code_option() -> None:
    """ui.jobs.warm.load_pair checks the options again where they would take effect, before anything loads."""
    import dataclasses

    from testkit.pool_requests import search_job
    from uats_core.worlds.arith.world import get_problem
    from ui.jobs.warm import load_pair

    job = search_job("r", "sqlite://", get_problem("arith-test-0"), {})
    # a request no validation passed (validate_request refuses the option): forged, as a bug could make one
    request = dataclasses.replace(job.search.request, prm_opts={"trust_remote_code": True})
    with pytest.raises(ConfigError, match="^prm_opts: trust_remote_code"):
        load_pair(dataclasses.replace(job, search=dataclasses.replace(job.search, request=request)))


def test_launcher_folder_flags_are_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ui.launch import main as launch_main

    uploads = tmp_path / "uploads"
    (uploads / "abc").mkdir(parents=True)
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(uploads))
    db = tmp_path / "runs.db"
    for flag, value in (
        ("--models-dir", tmp_path / "missing"),
        ("--datasets-dir", tmp_path / "missing"),
        ("--models-dir", uploads),
        ("--datasets-dir", uploads / "abc"),
        ("--models-dir", tmp_path),
    ):
        rc = launch_main([flag, str(value), "--db", str(db)])
        one_line_error(capsys, rc, flag.lstrip("-"))
    assert not db.exists()
