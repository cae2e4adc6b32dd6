"""Experiment recipes: a grid checked in as a file (`recipes/*.toml`) instead of a shell string in the docs, read by
`uats eval --spec FILE` (as search-and-learn's recipes are). The file's `[eval]` table holds `uats eval` flags by
their long names (`pairs = "A:prm,B:prm"`, `set = ["uncertainty=std"]`, `batch = 1`); its `[recipe]` table says what
the grid is for and whether its ledger holds every cell (tests/test_recipes.py checks both against today's flags and
the committed ledgers, so a renamed flag breaks a test, not a history).

Flags on the command line come after the file's, so they override single values and add to lists (`--set`)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path

from uats_core.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 reads TOML with tomli (a dependency there)
    import tomli as tomllib

RECIPE_KEYS = {"about", "complete"}


@dataclass(frozen=True)
class Recipe:
    """One recipe file: its flags as argv, what it is for, and whether its ledger is complete."""

    path: Path
    about: str
    complete: bool
    argv: list[str] = field(default_factory=list)


def _flags(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {opt[2:]: action for action in parser._actions for opt in action.option_strings if opt.startswith("--")}


def load_recipe(path: str | Path, parser: argparse.ArgumentParser) -> Recipe:
    """Read a recipe and turn its `[eval]` table into argv for `parser`; an unknown key or a value of the wrong
    shape is a ConfigError naming the file and the key, before anything runs."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError("spec", f"{path}: no such recipe file (the checked-in ones are under recipes/)")
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError("spec", f"{path}: not TOML ({exc})") from exc
    extra = set(data) - {"recipe", "eval"}
    if extra:
        raise ConfigError("spec", f"{path}: unknown table(s) {sorted(extra)}; a recipe has [recipe] and [eval]")
    meta, grid = data.get("recipe", {}), data.get("eval", {})
    if set(meta) - RECIPE_KEYS:
        raise ConfigError(
            "spec", f"{path}: unknown [recipe] key(s) {sorted(set(meta) - RECIPE_KEYS)}; use {sorted(RECIPE_KEYS)}"
        )
    flags = _flags(parser)
    argv: list[str] = []
    for key, value in grid.items():
        flag = key.replace("_", "-")
        action = flags.get(flag)
        if action is None or flag in ("spec", "help"):
            raise ConfigError(
                "spec", f"{path}: [eval] key {key!r} is no `uats eval` flag (uats eval --help lists them)"
            )
        if isinstance(action, argparse._StoreTrueAction):
            if not isinstance(value, bool):
                raise ConfigError("spec", f"{path}: [eval] {key} is a switch: true or false")
            argv += [f"--{flag}"] if value else []
        elif isinstance(action, argparse._AppendAction):
            values = value if isinstance(value, list) else [value]
            for v in values:
                argv += [f"--{flag}", str(v)]
        elif isinstance(value, (list, dict, bool)):
            raise ConfigError("spec", f'{path}: [eval] {key} takes one value (a comma list as a string: "4,16,64")')
        else:
            argv += [f"--{flag}", str(value)]
    return Recipe(path=p, about=str(meta.get("about", "")), complete=bool(meta.get("complete", False)), argv=argv)


def expand_spec(argv: list[str], parser: argparse.ArgumentParser) -> list[str]:
    """argv with `--spec FILE` replaced by the recipe's flags, placed first so the command line's own flags win."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--spec")
    known, rest = pre.parse_known_args(argv)
    if not known.spec:
        return list(argv)
    return load_recipe(known.spec, parser).argv + rest


def recipe_files(root: Path) -> list[Path]:
    """The checked-in recipes under `root/recipes`."""
    return sorted((root / "recipes").glob("*.toml"))


def as_command(recipe: Recipe) -> str:
    """The recipe as the one `uats eval` command line it stands for (docs quote it)."""
    return " ".join(["uats eval", *(a if a.startswith("--") or " " not in a else repr(a) for a in recipe.argv)])


__all__ = ["Recipe", "load_recipe", "expand_spec", "recipe_files", "as_command"]
