"""One declaration per setting (uats_core/config.py, uats_core/settings.py): every front end is generated from it,
docs/engine.md's table is what `uats settings --markdown` prints, and no setting's help, bounds or glossary entry
is written anywhere else in the project (a scan of every module's syntax tree; the scan is shown to catch the
duplicates the project had before, kept below as snippets)."""

from __future__ import annotations

import ast
import re
from dataclasses import fields
from pathlib import Path

import pytest

from uats_core.config import SETTINGS, SearchConfig, setting_of
from uats_core.errors import ConfigError
from uats_core.request import SearchRequest, validate_request
from uats_core.settings import TABLE_END, TABLE_START, Declared, declared
from uats_core.worlds.arith.world import get_problem

ROOT = Path(__file__).resolve().parents[1]
# Where settings are declared: the only modules that may say what a setting is.
DECLARING = {"uats_core/config.py", "uats_core/settings.py"}
SCANNED = ("uats", "ui", "uats_core", "storage", "reports", "uats_studio", "benchmarks", "app.py")  # those that exist
# Flags that share a setting's name but are not the setting, with why.
NOT_THE_SETTING = {
    ("eval/cli.py", "--uncertainty"): "uats eval's with/without-uncertainty axis (on,off)",
    ("arith/train_ensemble.py", "--seed"): "the arithmetic PRM ensemble's training seed",
}  # path ends


def _not_the_setting(path: str, name: str) -> bool:
    return any(path.endswith(end) and name == flag for end, flag in NOT_THE_SETTING)


CHUNK = 36  # characters: a copied help or definition shares a run this long with its declaration


def test_the_committed_settings_table_is_the_generated_one() -> None:
    from uats.cli import settings_markdown

    page = (ROOT / "docs" / "engine.md").read_text(encoding="utf-8")
    committed = page[page.index(TABLE_START) + len(TABLE_START) : page.index(TABLE_END)]
    assert committed == settings_markdown(), "run: uats settings --update docs/engine.md"
    assert committed.count("\n") == len(SETTINGS) + 2


def test_every_field_is_declared_and_its_default_passes_its_own_bounds() -> None:
    assert (
        [d.name for d in declared(SearchConfig)] == [d.name for d in SETTINGS] == [f.name for f in fields(SearchConfig)]
    )
    for d in SETTINGS:
        assert d.spec.help.strip(), d.name
        d.check_value(d.default)
        assert bool(d.spec.term) == bool(d.spec.define), d.name  # a symbol comes with its definition


def _outside(d: Declared) -> list[float]:
    """Values just outside a setting's bounds (and the bound itself where it is open)."""
    s, out = d.spec, []
    if s.low is not None:
        out.append(s.low if s.open_low else s.low - (1 if d.kind == "int" else 1e-9))
    if s.high is not None:
        out.append(s.high if s.open_high else s.high + 1e-9)
    return out


@pytest.mark.parametrize("d", [d for d in SETTINGS if d.bounds()], ids=lambda d: d.name)
def test_the_one_validator_refuses_a_value_outside_the_declared_bounds(d: Declared) -> None:
    problem = get_problem("arith-test-0")
    for value in _outside(d):
        with pytest.raises(ConfigError) as err:
            validate_request(SearchRequest(problem, SearchConfig(**{d.name: value})))
        assert err.value.field == d.name and d.bounds() in str(err.value), str(err.value)
    inside = d.spec.low if d.spec.low is not None and not d.spec.open_low else None
    if inside is not None and d.name not in ("budget", "k0", "cost_ratio"):  # these move the limits' estimate too
        SearchConfig(**{d.name: inside}).validate()


@pytest.mark.parametrize("d", [d for d in SETTINGS if d.spec.choices], ids=lambda d: d.name)
def test_the_validator_refuses_a_value_not_among_the_declared_choices(d: Declared) -> None:
    with pytest.raises(ConfigError) as err:
        SearchConfig(**{d.name: "no-such-value"}).validate()
    assert err.value.field == d.name and all(c in str(err.value) for c in d.spec.choices)


def test_the_command_line_has_every_setting_with_its_declared_help() -> None:
    from uats.cli import build_parser
    from uats.eval.cli import ABLATION_FLAGS
    from uats_core.eval.grid import coerce

    search = build_parser()._subparsers._group_actions[0].choices["search"]  # type: ignore[union-attr]
    actions = {a.option_strings[0]: a for a in search._actions if a.option_strings}
    for d in SETTINGS:
        assert d.flag in actions, d.flag
        assert actions[d.flag].help.replace("%%", "%").startswith(d.spec.help), d.flag
        assert actions[d.flag].default == d.default
    assert {d.name: d.spec.help for d in SETTINGS if d.spec.axis_flag} == ABLATION_FLAGS
    assert coerce("k0", "3") == 3 and coerce("weighted", "off") is False and coerce("controller", "none") is None
    with pytest.raises(ConfigError, match="not a config field"):
        coerce("no_such_setting", "1")


def test_the_form_offers_every_setting_or_says_why_not() -> None:
    import gradio as gr

    from ui.glossary import field_help
    from ui.tabs.settings_form import CONFIG_FIELDS, build_settings, left_out_note, settings_sections

    f: dict = {}
    with gr.Blocks():
        build_settings(f, "run")
        for section in settings_sections():
            build_settings(f, section)
    assert set(f) == set(CONFIG_FIELDS) == {d.name for d in SETTINGS if not d.spec.app_leaves_out}
    for d in SETTINGS:
        if d.spec.app_leaves_out:
            assert f"{d.name} ({d.spec.app_leaves_out})" in left_out_note()
            continue
        assert f[d.name].elem_id == d.elem_id and f[d.name].label == d.label and field_help(d.elem_id) == d.spec.help
    assert [d.name for d in SETTINGS if d.spec.app_leaves_out] == ["controller"]


def test_the_glossary_defines_each_settings_symbol_from_its_declaration() -> None:
    from ui.glossary import GLOSSARY

    for d in SETTINGS:
        if d.spec.term:
            assert GLOSSARY[d.spec.term] == d.spec.define


# ------------------------------------------------------------------------------------------- the duplicate scan
def _names(d: Declared) -> set[str]:
    """The ways code names a setting: its field name, flag, form element id and glossary symbol."""
    return {d.name, d.flag, d.elem_id, *([d.spec.term] if d.spec.term else [])}


def _texts() -> dict[str, str]:
    """Every declared prose text (help, definition, why the lower bound, why the app leaves it out), by where."""
    out = {}
    for d in SETTINGS:
        for part in ("help", "define", "why_low", "app_leaves_out"):
            text = " ".join(str(getattr(d.spec, part)).split())
            if len(text) >= CHUNK:
                out[f"{d.name}.{part}"] = text
    return out


def _chunks(texts: dict[str, str]) -> dict[str, str]:
    return {t[i : i + CHUNK]: where for where, t in texts.items() for i in range(0, len(t) - CHUNK + 1, 4)}


def _strings(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        return [v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
    return []


def _number(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool)


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes: explanations for whoever reads the code, not words shown to a user."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


GETTERS = {"get", "getattr", "pop", "setdefault"}  # a default read back, not a bound
CHOICE_VALUES = {c for d in SETTINGS for c in d.spec.choices}  # 'weighted' is an aggregation value and a setting


def find_duplicates(source: str, path: str, bounds_too: bool = True) -> list[str]:
    """What `source` says about a declared setting that only its declaration may say: (1) a text (not a docstring)
    sharing a CHUNK-long run with a declared help or definition; (2) a dict entry from a setting's name (field, flag,
    element id or symbol) to prose: a help table or a glossary entry; (3) a flag or a form component of a setting
    given its own help, info or label text; (4) a list of a setting's values (its choices) written out; (5) with
    `bounds_too`, a setting's value compared with a number, a call that names a setting and passes a number, or a
    widget's minimum/maximum (a bounds check of its own)."""
    by_name = {n: d.name for d in SETTINGS for n in _names(d)}
    flags = {d.flag: d.name for d in SETTINGS} | {d.elem_id: d.name for d in SETTINGS}
    chunks, found = _chunks(_texts()), []
    tree = ast.parse(source)
    skip = _docstrings(tree)
    for node in ast.walk(tree):
        line = f"{path}:{getattr(node, 'lineno', 0)}"
        for text in [] if id(node) in skip else _strings(node):
            flat = " ".join(text.split())
            hit = next((w for i in range(len(flat) - CHUNK + 1) if (w := chunks.get(flat[i : i + CHUNK]))), None)
            if hit:
                found.append(f"{line}: text of {hit}")
        if isinstance(node, ast.Dict):
            keys = [k.value if isinstance(k, ast.Constant) else None for k in node.keys]
            for key, v in zip(keys, node.values):
                if (
                    key in by_name
                    and any(" " in s for s in _strings(v))
                    and (key not in CHOICE_VALUES or sum(k in by_name for k in keys) > 1)
                ):
                    found.append(f"{line}: prose for setting {by_name[key]} (key {key!r})")
        if isinstance(node, ast.Call):
            fn = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            args = [a.value for a in node.args if isinstance(a, ast.Constant)]
            kw = {k.arg: k.value for k in node.keywords if k.arg}
            elem = kw.get("elem_id")
            named = [
                a
                for a in (
                    *[a for a in args if str(a).startswith("--")],
                    elem.value if isinstance(elem, ast.Constant) else None,
                )
                if a in flags and not _not_the_setting(path, a)
            ]
            said = [k for k in ("help", "info", "label") if k in kw and isinstance(kw[k], ast.Constant)]
            if named and said:
                found.append(f"{line}: {'/'.join(said)} of setting {flags[named[0]]} written here")
            bounded = [a for a in args if a in by_name and not _not_the_setting(path, a)]
            if (
                bounds_too
                and fn not in GETTERS
                and (named or bounded)
                and (
                    any(_number(a) for a in node.args) or any(_number(kw[k]) for k in ("minimum", "maximum") if k in kw)
                )
            ):
                found.append(f"{line}: a bound of setting {by_name[(named or bounded)[0]]} written here")
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)) and len(node.elts) >= 2:
            values = {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
            owner = next((d.name for d in SETTINGS if d.spec.choices and values == set(d.spec.choices)), None)
            if owner and len(values) == len(node.elts):
                found.append(f"{line}: the values of setting {owner} written here (read its declaration's choices)")
        if bounds_too and isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            attrs = [s.attr for s in sides if isinstance(s, ast.Attribute) and s.attr in by_name]
            if attrs and any(_number(s) for s in sides):
                found.append(f"{line}: {attrs[0]} compared with a number (a bound of setting {by_name[attrs[0]]})")
    return found


def _modules() -> list[Path]:
    files = [ROOT / "app.py"]
    for top in SCANNED[:-1]:
        files += sorted((ROOT / top).rglob("*.py")) if (ROOT / top).is_dir() else []
    return [f for f in files if f.relative_to(ROOT).as_posix() not in DECLARING]


# Where a setting's value is compared with a number for what the search does with it, not to bound it; each with why.
SEARCH_LOGIC = re.compile(
    r"^(uats_core/(methods|estimators|backends|controller|worlds|spending|estimation|allocation|"
    r"limits|calibration|imports|report)|reports|uats/arith)/?"
)


def test_no_setting_is_described_or_bounded_outside_its_declaration() -> None:
    found = []
    for path in _modules():
        rel = path.relative_to(ROOT).as_posix()
        found += find_duplicates(path.read_text(encoding="utf-8"), rel, bounds_too=not SEARCH_LOGIC.match(rel))
    assert not found, "\n".join(found)


# What the duplicates looked like before the declaration (uats/cli.py, uats/eval/cli.py, ui/glossary.py,
# ui/tabs/search_layout.py and uats_core/config.py of commit 9635f32): the scan must find every one.
BEFORE = {
    "cli help table": (
        '_CONFIG_HELP = {"reeval_share": "share of the per-step budget reserved for re-evaluation (UATS)"}',
        "prose for setting reeval_share",
    ),
    "eval ablation flags": ('ABLATION_FLAGS = {"k0": "initial MC passes K0"}', "prose for setting k0"),
    "form help": (
        'FIELD_HELP = {"dropout-p": "the dropout rate of the MC-dropout passes."}',
        "prose for setting dropout_p",
    ),
    "glossary entry": ('GLOSSARY = {"ν1": "the temperature of the softmax that shares B."}', "prose for setting nu1"),
    "copied help": (
        "x = \"the OOD threshold: a number >= 0, 'auto' (the 0.9 quantile on in-distribution calibration traces)\"",
        "text of tau.help",
    ),
    "form label": ('gr.Number(7, label="K0 samples", elem_id="k0")', "label of setting k0 written here"),
    "flag help": ('p.add_argument("--delta", type=float, help="margin")', "help of setting delta written here"),
    "bound in a call": ('_int_at_least("k0", self.k0, 2)', "a bound of setting k0 written here"),
    "bound in a widget": ('gr.Number(7, minimum=2, elem_id="k0")', "a bound of setting k0 written here"),
    "bound compared": ("if not 0.0 <= self.reeval_share < 1.0: raise ValueError", "a bound of setting reeval_share"),
    "values listed": ('gr.Dropdown(["var", "std"], value="var")', "the values of setting uncertainty written here"),
}


@pytest.mark.parametrize("name", list(BEFORE))
def test_the_scan_finds_the_duplicates_the_project_had(name: str) -> None:
    source, said = BEFORE[name]
    found = find_duplicates(source, "ui/example.py")
    assert any(said in f for f in found), found


def test_a_setting_named_elsewhere_without_its_words_is_no_duplicate() -> None:
    assert find_duplicates('cfg = SearchConfig(k0=3, tau="auto")\nrun(cfg.k0, flag="--k0")', "uats/x.py") == []
    assert setting_of("k0").flag == "--k0"


def test_every_policy_backend_takes_its_sampling_defaults_from_one_declaration() -> None:
    """A policy's temperature, top_p and token caps are declared once (uats_core/backends/prompting.py): each
    backend's constructor defaults to those values, so a backend that spells out its own number fails here."""
    import inspect

    from uats_core.backends import prompting
    from uats_core.backends.hf_policy import HFPolicy
    from uats_core.backends.openai_policy import OpenAIPolicy
    from uats_core.backends.vllm_policy import VLLMPolicy

    declared_once = {
        "temperature": prompting.TEMPERATURE,
        "top_p": prompting.TOP_P,
        "step_token_cap": prompting.STEP_TOKEN_CAP,
        "solution_token_cap": prompting.SOLUTION_TOKEN_CAP,
    }
    for backend in (HFPolicy, OpenAIPolicy, VLLMPolicy):
        params = inspect.signature(backend.__init__).parameters
        assert {k: params[k].default for k in declared_once} == declared_once, backend.__name__
    sources = [Path(inspect.getsourcefile(b) or "") for b in (HFPolicy, OpenAIPolicy, VLLMPolicy)]
    for src in sources:  # the names, not equal numbers of their own
        text = src.read_text(encoding="utf-8")
        assert (
            re.search(r"temperature: float = TEMPERATURE\b", text) and "step_token_cap: int = STEP_TOKEN_CAP" in text
        ), src


def test_the_arith_world_samples_at_the_search_policies_temperature() -> None:
    """The world's training sets are sampled as its searches sample (an HFPolicy at prompting.TEMPERATURE), so
    its sample_solutions takes the declared temperature rather than a number of its own."""
    import inspect

    from uats_core.backends import prompting
    from uats_core.worlds.arith import modeling

    assert inspect.signature(modeling.sample_solutions).parameters["temperature"].default == prompting.TEMPERATURE
    source = Path(inspect.getsourcefile(modeling) or "").read_text(encoding="utf-8")
    assert "temperature: float = TEMPERATURE" in source
