"""One declaration per setting: each SearchConfig field carries a `Setting` as its dataclass metadata (as TRL's
configs carry their help), and everything a front end says or checks about a setting is read from it: the command
line's flags and help (`uats search`, `uats eval`'s ablation flags, `--set` and `--axis`), the app form's fields,
labels and help lines, the glossary's entries for the settings that are symbols, the field checks of
SearchConfig.validate (which validate_request runs) and the settings table of docs/engine.md (`uats settings
--markdown`). Which methods read a setting is the methods' own declaration (SearchMethod.config_fields); the table
reads it from there. tests/test_settings.py fails when a setting's help, bounds or glossary entry is written
anywhere else."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import ConfigError

# The app form's sections, in the order the form shows them ("" = above the sections, always open).
SECTIONS = {
    "run": "",
    "uats": "UATS knobs (paper defaults)",
    "baselines": "Other methods' knobs",
    "answer": "Answer and random streams",
}


@dataclass(frozen=True)
class Setting:
    """What the project says about one setting. `low`/`high` are its bounds (`open_low`/`open_high`: the bound itself
    refused), `choices` its values when it takes names, `check` a check of its own for values no bounds describe (τ,
    the dropout mode); `why_low` says why the lower bound is what it is. `term` and `define`: its symbol and the
    symbol's definition, when the glossary defines it. `app_leaves_out`: why the app form does not offer it (empty:
    the form shows it)."""

    help: str
    label: str = ""
    unit: str = ""
    section: str = "uats"
    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False
    why_low: str = ""
    choices: tuple[str, ...] = ()
    check: Callable[[Any], Any] | None = None
    term: str = ""
    define: str = ""
    axis_flag: bool = False  # `uats eval` gives it an ablation flag of its own (--k0 3,7)
    app_leaves_out: str = ""


def setting(default: Any, help: str, **kw: Any) -> Any:
    """A dataclass field with its Setting as metadata: `budget: int = setting(16, "N: ...", low=1)`."""
    return dataclasses.field(default=default, metadata={"setting": Setting(help=help, **kw)})


@dataclass(frozen=True)
class Declared:
    """A setting as declared: its field's name, type (the annotation's text) and default, and its Setting."""

    name: str
    type: str
    default: Any
    spec: Setting

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def elem_id(self) -> str:
        """The app form's element id (and the glossary's key for its help)."""
        return self.name.replace("_", "-")

    @property
    def label(self) -> str:
        return self.spec.label or self.name.replace("_", " ")

    @property
    def kind(self) -> str:
        """bool, int, float, text (a name or a spec), or number|text (τ: a number or auto[:q])."""
        t = self.type.replace(" ", "")
        if t in ("bool", "int", "float"):
            return t
        return "number|text" if "float" in t else "text"

    def bounds(self) -> str:
        """The bounds as the docs and the errors write them: '>= 1', 'in [0, 1)', '> 0', '' for none."""
        s = self.spec
        if s.low is not None and s.high is not None:
            return f"in {'(' if s.open_low else '['}{_num(s.low)}, {_num(s.high)}{')' if s.open_high else ']'}"
        if s.low is not None:
            return f"{'>' if s.open_low else '>='} {_num(s.low)}"
        if s.high is not None:
            return f"{'<' if s.open_high else '<='} {_num(s.high)}"
        return ""

    def check_value(self, value: Any) -> None:
        """ConfigError naming the setting when `value` is not of its type, outside its bounds or not a choice."""
        s, kind = self.spec, self.kind
        if s.check is not None and (kind != "number|text" or isinstance(value, str)):
            s.check(value)
            return
        if kind == "text" and not isinstance(value, str) and not (value is None and self.default is None):
            raise ConfigError(self.name, f"must be text; got {value!r}")
        if kind == "bool" and not isinstance(value, bool):
            raise ConfigError(self.name, f"must be true or false; got {value!r}")
        if kind == "int" and (isinstance(value, bool) or not isinstance(value, int)):
            raise ConfigError(self.name, f"must be an integer{self._at(' ')}{self._why()}; got {value!r}")
        if kind in ("float", "number|text") and (
            isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
        ):
            raise ConfigError(self.name, f"must be a finite number{self._at(' ')}; got {value!r}")
        if kind in ("int", "float", "number|text") and not self._within(value):
            what = "an integer" if kind == "int" else "a finite number"
            raise ConfigError(self.name, f"must be {what}{self._at(' ')}{self._why()}; got {value!r}")
        if s.choices and value not in s.choices:
            raise ConfigError(self.name, f"got {value!r}; use one of {', '.join(s.choices)}")

    def _within(self, value: float) -> bool:
        s = self.spec
        low_ok = s.low is None or (value > s.low if s.open_low else value >= s.low)
        return low_ok and (s.high is None or (value < s.high if s.open_high else value <= s.high))

    def _at(self, sep: str) -> str:
        b = self.bounds()
        return sep + b if b else ""

    def _why(self) -> str:
        return f" ({self.spec.why_low})" if self.spec.why_low else ""


def _num(x: float) -> str:
    return f"{x:g}"


def declared(config_class: type) -> list[Declared]:
    """Every declared setting of a config dataclass, in its fields' order."""
    out = []
    for f in dataclasses.fields(config_class):
        spec = f.metadata.get("setting")
        if spec is None:
            raise TypeError(f"{config_class.__name__}.{f.name} has no Setting: declare it with settings.setting()")
        out.append(Declared(f.name, str(f.type), f.default, spec))
    return out


def markdown_table(
    settings: list[Declared], read_by: Callable[[str], str], choices: Mapping[str, Sequence[str]] | None = None
) -> str:
    """The settings table of docs/engine.md: one row per setting, every column from its declaration (`read_by`:
    the methods that list it among their config_fields, or 'every method'; `choices`: the values of settings whose
    list lives elsewhere, the methods' registry)."""
    rows = [
        "| setting | flag | symbol | type | default | bounds or values | unit | read by | what it does |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for d in settings:
        values = d.bounds() or " \\| ".join((choices or {}).get(d.name, d.spec.choices))
        text = d.spec.help + (f" (not in the app: {d.spec.app_leaves_out})" if d.spec.app_leaves_out else "")
        rows.append(
            f"| `{d.name}` | `{d.flag}` | {d.spec.term} | {_cell(d.kind)} | `{d.default}` | {values} | "
            f"{d.spec.unit} | {read_by(d.name)} | {_cell(text)} |"
        )
    return "\n".join(rows) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


TABLE_START = "<!-- settings table: uats settings --markdown -->\n"
TABLE_END = "<!-- end of settings table -->\n"


def replace_table(page: str, table: str) -> str:
    """A page with the text between its settings table's markers replaced by `table` (ValueError without them)."""
    start, end = page.find(TABLE_START), page.find(TABLE_END)
    if start < 0 or end < start:
        raise ValueError(f"no settings table markers ({TABLE_START.strip()} ... {TABLE_END.strip()})")
    return page[: start + len(TABLE_START)] + table + page[end:]
