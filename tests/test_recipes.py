"""The checked-in experiment recipes (recipes/*.toml) against today's `uats eval` and the committed ledgers: each
reads with today's flags (a renamed flag fails here), and a recipe marked complete plans exactly the cells its
ledger holds, so the file is the grid that made the rows. `--spec` also composes with flags given after it and
refuses a key that is no flag, naming it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from uats.eval.cli import build_parser, main
from uats.eval.recipe import load_recipe, recipe_files

ROOT = Path(__file__).resolve().parents[1]
RECIPES = recipe_files(ROOT)


def _dry_run(capsys: pytest.CaptureFixture[str], tmp_path: Path, *argv: str) -> tuple[int, int]:
    code = main([*argv, "--dry-run", "--quiet", "--db", str(tmp_path / "none.db")])
    out = capsys.readouterr().out
    assert code == 0, out
    m = re.search(r"dry run: (\d+) cells, (\d+) in the ledger", out)
    assert m, out
    return int(m.group(1)), int(m.group(2))


def test_there_are_recipes_for_the_committed_ledgers() -> None:
    argvs = [load_recipe(p, build_parser()).argv for p in RECIPES]
    ledgers = {argv[argv.index("--ledger") + 1] for argv in argvs}
    committed = {f"results/{d.name}" for d in (ROOT / "results").iterdir() if (d / "results.csv.gz").is_file()}
    assert committed <= ledgers, f"ledgers without a recipe: {sorted(committed - ledgers)}"


@pytest.mark.parametrize("path", RECIPES, ids=[p.stem for p in RECIPES])
def test_each_recipe_reads_with_todays_flags_and_a_complete_one_is_its_ledger(
    path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)  # the recipes name ledgers relative to the checkout
    recipe = load_recipe(path, build_parser())
    assert recipe.about, f"{path.name}: say in [recipe] about what the grid is for"
    cells, in_ledger = _dry_run(capsys, tmp_path, "--spec", str(path))
    assert cells > 0
    if recipe.complete:
        assert in_ledger == cells, f"{path.name} plans {cells} cells; its ledger holds {in_ledger} of them"
    else:
        assert in_ledger < cells, f"{path.name}: every cell is in its ledger; mark it complete = true"


def test_flags_after_the_spec_override_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    whole, _ = _dry_run(capsys, tmp_path, "--spec", "recipes/arith-rerun.toml")
    part, in_ledger = _dry_run(
        capsys, tmp_path, "--spec", "recipes/arith-rerun.toml", "--problems", "10", "--methods", "rebase"
    )
    assert (whole, part, in_ledger) == (25200, 10 * 3 * 3 * 2, 10 * 3 * 3 * 2)


def test_a_key_that_is_no_flag_is_one_line_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[recipe]\nabout = "x"\n[eval]\nbudget = "16"\n', encoding="utf-8")
    assert main(["--spec", str(bad), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: spec: {bad}: [eval] key 'budget' is no `uats eval` flag (uats eval --help lists them)"]
