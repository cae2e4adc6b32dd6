"""τ = auto[:q]: the quantile of the gated statistic on in-distribution calibration steps, the file beside the
PRM, refusals of bad values on the command lines, and a small run of `calibrate` (a command) and `bench uncertainty`."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from testkit.bench_runs import run_benchmark
from uats.cli import main as cli_main
from uats_core.calibration import (
    CALIBRATION_NAME,
    calibration_path,
    entry_key,
    load_calibration,
    resolve_tau,
    spread_entry,
    tau_from_variances,
    write_calibration,
)
from uats_core.config import SearchConfig
from uats_core.errors import ConfigError

PRM_DIR = Path(__file__).resolve().parent.parent / "assets" / "models" / "arith-prm"
HAS_PRM = (PRM_DIR / "config.json").is_file()


def test_tau_is_the_quantile_of_the_chosen_statistic():
    v = [0.0001, 0.0004, 0.0009, 0.0016, 0.0025]  # σ = 0.01 .. 0.05
    assert tau_from_variances(v, 0.5) == pytest.approx(0.0009)
    assert tau_from_variances(v, 0.75) == pytest.approx(0.0016)
    assert tau_from_variances(v, 0.5, "std") == pytest.approx(0.03)
    # between order statistics the σ quantile interpolates σ, not sqrt of the interpolated σ²
    assert tau_from_variances(v, 0.625, "std") == pytest.approx(0.035)
    assert math.sqrt(tau_from_variances(v, 0.625)) != pytest.approx(0.035)
    with pytest.raises(ConfigError):
        tau_from_variances([], 0.9)


def _calibrated(tmp_path: Path) -> Path:
    path = tmp_path / CALIBRATION_NAME
    rng = np.random.default_rng(0)
    write_calibration(
        path,
        prm="x",
        spreads={
            entry_key("full", 0.1, "prob"): spread_entry(rng.uniform(0, 0.01, 200), 7, "test"),
            entry_key("full", 0.1, "logit"): spread_entry(rng.uniform(0, 1.0, 200), 7, "test"),
            entry_key("last:2", 0.1, "prob"): spread_entry(rng.uniform(0, 0.001, 200), 7, "test"),
        },
    )
    write_calibration(path, prm="x", cost={"c": 3.0})  # a later write of c keeps the spreads
    return path


def test_resolve_tau_picks_mode_p_and_space(tmp_path: Path):
    path = _calibrated(tmp_path)
    data = load_calibration(path)
    assert data["cost"]["c"] == 3.0 and len(data["uncertainty"]) == 3
    for mode, space, q in (("full", "prob", 0.9), ("full", "logit", 0.5), ("last:2", "prob", 0.99)):
        tau_text = "auto" if q == 0.9 else f"auto:{q}"
        cfg = SearchConfig(tau=tau_text, dropout_mode=mode, uncertainty_space=space).validate()
        resolved, note = resolve_tau(cfg, None, path=path)
        expected = np.quantile(data["uncertainty"][entry_key(mode, 0.1, space)]["variances"], q)
        assert resolved.tau == pytest.approx(expected) and note["quantile"] == q
        assert resolved.validate().tau == resolved.tau  # a plain number now
    std, _ = resolve_tau(SearchConfig(tau="auto", uncertainty="std").validate(), None, path=path)
    var, _ = resolve_tau(SearchConfig(tau="auto").validate(), None, path=path)
    assert std.tau > var.tau  # σ > σ² below 1
    plain = SearchConfig(tau=0.01).validate()
    assert resolve_tau(plain, None, path=path) == (plain, None)


def test_resolve_tau_without_a_calibration_names_tau_and_the_command(tmp_path: Path):
    for cfg in (SearchConfig(tau="auto", dropout_mode="head"), SearchConfig(tau="auto", dropout_p=0.2)):
        with pytest.raises(ConfigError) as err:
            resolve_tau(cfg.validate(), None, path=_calibrated(tmp_path))
        assert err.value.field == "tau" and "uats calibrate" in str(err.value)
    with pytest.raises(ConfigError):
        resolve_tau(SearchConfig(tau="auto").validate(), None, path=tmp_path / "missing.json")


def test_calibration_lives_beside_a_model_folder(tmp_path: Path):
    assert calibration_path(str(tmp_path)) == tmp_path / CALIBRATION_NAME
    hub = calibration_path("hf:Qwen/Qwen2.5-Math-PRM-7B")
    assert hub.name == "Qwen_Qwen2.5-Math-PRM-7B.json" and hub.parent.name == "calibration"


@pytest.mark.parametrize(
    "argv,field",
    [
        (["--tau", "auto:1.5"], "tau"),
        (["--uncertainty-space", "foo"], "uncertainty_space"),
        (["--uncertainty", "variance"], "uncertainty"),
        (["--tau", "big"], "tau"),
    ],
)
def test_cli_refuses_bad_uncertainty_values_in_one_line(argv, field, tmp_path, capsys):
    rc = cli_main(["search", "--db", str(tmp_path / "r.db"), "--quiet", *argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and err[0].startswith(f"error: {field}: ")
    assert not (tmp_path / "r.db").exists()  # refused before anything was written


def test_bench_refuses_a_bad_quantile_in_one_line():
    done = run_benchmark("uncertainty", "--quantile", "1.5")
    assert done.returncode == 2 and done.stderr.strip().splitlines() == ["error: quantile: must be in (0, 1); got 1.5"]


@pytest.mark.skipif(not HAS_PRM, reason="the shipped arithmetic PRM is missing")
def test_shipped_calibration_resolves_for_every_benchmarked_mode_and_space():
    for mode in ("full", "last:2", "head"):
        for space in ("prob", "logit"):
            cfg, note = resolve_tau(
                SearchConfig(tau="auto", dropout_mode=mode, uncertainty_space=space).validate(), None
            )
            entry = load_calibration(PRM_DIR / CALIBRATION_NAME)["uncertainty"][note["key"]]
            assert cfg.tau == pytest.approx(float(np.quantile(entry["variances"], 0.9)))


@pytest.mark.skipif(not HAS_PRM, reason="the shipped arithmetic PRM is missing")
def test_small_calibrate_and_uncertainty_runs(tmp_path: Path, capsys):
    path = tmp_path / "cal.json"
    assert (
        cli_main(
            [
                "calibrate",
                "--prm",
                str(PRM_DIR),
                "--skip-cost",
                "--tau-modes",
                "head",
                "--tau-problems",
                "3",
                "--calibration",
                str(path),
                "--threads",
                "1",
            ]
        )
        == 0
    )
    entries = load_calibration(path)["uncertainty"]
    assert set(entries) == {"head|p=0.1|prob", "head|p=0.1|logit"}
    assert entries["head|p=0.1|prob"]["n"] >= 3 and entries["head|p=0.1|prob"]["k"] == 7
    cfg, _ = resolve_tau(SearchConfig(tau="auto:0.5", dropout_mode="head").validate(), None, path=path)
    assert cfg.tau == pytest.approx(float(np.median(entries["head|p=0.1|prob"]["variances"])))

    out_json = tmp_path / "u.json"
    done = run_benchmark(
        "uncertainty",
        "--modes",
        "head,last:2",
        "--problems",
        "4",
        "--calibration-problems",
        "3",
        "--timing-traces",
        "4",
        "--repeats",
        "1",
        "--threads",
        "1",
        "--json",
        str(out_json),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    table = done.stdout
    assert "| head | logit |" in table and "| last:2 | prob |" in table
    import json

    res = json.loads(out_json.read_text())
    rows = {(r["mode"], r["space"]): r for r in res["rows"]}
    assert set(rows) == {(m, s) for m in ("head", "last:2") for s in ("prob", "logit")}
    for r in rows.values():
        assert 0.0 <= r["auroc_ood"] <= 1.0 and 0.0 <= r["auroc_wrong"] <= 1.0
        assert 0.0 <= r["share_a"] <= 1.0 and r["ratio"] > 0 and r["tau"] > 0
    assert rows[("head", "prob")]["ratio"] == rows[("head", "logit")]["ratio"]  # one timing per mode
    assert rows[("head", "logit")]["tau"] > rows[("head", "prob")]["tau"]  # logit spreads are on another scale
    assert res["steps_a"] == res["steps_b"] > 4  # every step prefix of 4 solutions in each style


@pytest.mark.skipif(not HAS_PRM, reason="the shipped arithmetic PRM is missing")
def test_app_form_accepts_tau_auto_and_logs_a_number():
    from uats_core.request import SearchRequest, validate_request
    from uats_core.worlds.arith.world import get_problem
    from ui.tabs.run_form import form_config

    def search_config(values: dict) -> SearchConfig:  # the config a Run of the form searches with
        return validate_request(SearchRequest(get_problem("arith-test-0"), form_config(values))).config

    form = {
        "method": "h-uats",
        "budget": 16.0,
        "seed": 0.0,
        "k0": 7.0,
        "dropout_p": 0.1,
        "dropout_mode": "last:2",
        "alpha": 0.3,
        "tau": "auto:0.8",
        "delta": 0.04,
        "nu1": 0.5,
        "nu2": 0.2,
        "cost_ratio": 18.0,
        "max_iterations": 40.0,
        "reeval_share": 0.1,
        "uncertainty": "var",
        "uncertainty_space": "logit",
    }
    cfg = search_config(form)
    entry = load_calibration(PRM_DIR / CALIBRATION_NAME)["uncertainty"]["last:2|p=0.1|logit"]
    assert cfg.tau == pytest.approx(float(np.quantile(entry["variances"], 0.8)))
    assert search_config({**form, "tau": "0.003"}).tau == 0.003  # the text box hands numbers over as text
    with pytest.raises(ConfigError) as err:
        search_config({**form, "tau": "auto:2"})
    assert err.value.field == "tau"


@pytest.mark.skipif(not HAS_PRM, reason="the shipped arithmetic PRM is missing")
def test_eval_cells_resolve_tau_auto_and_keep_it_in_their_key():
    from uats_core.eval.grid import Cell, WorkItem, check_cells
    from uats_core.worlds.arith.world import get_problem

    cell = Cell(
        pair="A:prm",
        policy="x",
        prm=str(PRM_DIR),
        dataset="arith-test",
        problem_id="arith-test-0",
        method="h-uats",
        budget=4,
        seed=0,
        overrides=(("tau", "auto"), ("uncertainty_space", "logit")),
    )
    entry = load_calibration(PRM_DIR / CALIBRATION_NAME)["uncertainty"]["full|p=0.1|logit"]
    (item,) = check_cells([WorkItem(cell, get_problem("arith-test-0"))])
    assert item.checked.config.tau == pytest.approx(float(np.quantile(entry["variances"], 0.9)))
    assert cell.config().tau == "auto" and cell.key.endswith("tau=auto,uncertainty_space=logit")
