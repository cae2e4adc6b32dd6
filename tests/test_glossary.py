"""The page's words: every knob has help, every table column a tooltip, every symbol the page writes a
definition in the glossary, and the glossary is on the page."""

from __future__ import annotations

import json
import re

import gradio as gr
import pytest

from storage import RunStore
from testkit.doubles import WorkerPoolDouble
from uats_core.config import SETTINGS, setting_of
from ui.app_ui import TABLES, build_demo, launch_kwargs
from ui.glossary import (
    COLUMN_HELP,
    COLUMN_TERMS,
    FIELD_HELP,
    FIELD_TERMS,
    GLOSSARY,
    column_help,
    field_help,
    glossary_md,
)
from ui.tabs.settings_form import CONFIG_FIELDS
from ui.views.safe_text import md_text

# inputs that name or annotate something (a run, a node, a note, an export), not knobs of a search or a view
ENTRIES = {
    "open-id",
    "node-id",
    "star",
    "note",
    "run-export-name",
    "frontier-page",
    "cmp-a",
    "cmp-b",
    "cmp-export-name",
    "case-star",
    "case-note",
    "case-export-name",
}
# the words the issue found without an explanation, and the symbols of the paper the page writes
ASKED = ("B", "C", "R̂", "δ test", "ν1", "ν2", "K0", "naive answer", "δ", "τ", "R̄", "σ²", "α", "K", "N")
SYMBOL = re.compile(r"R̄|R̂|σ²|τ|δ|ν1|ν2|α|ρ")


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> gr.Blocks:
    return build_demo(RunStore("sqlite://"), WorkerPoolDouble(), tmp_path_factory.mktemp("exports"))


def _inputs(demo: gr.Blocks) -> list[gr.components.Component]:
    kinds = (gr.Number, gr.Slider, gr.Dropdown, gr.Checkbox, gr.Radio, gr.Textbox)
    return [b for b in demo.blocks.values() if isinstance(b, kinds) and b.visible and b.elem_id]


def test_every_knob_has_help(demo: gr.Blocks) -> None:
    knobs = [b for b in _inputs(demo) if b.elem_id not in ENTRIES]
    assert len(knobs) > 40
    missing = [b.elem_id for b in knobs if not (b.info or "").strip()]
    assert not missing, f"knobs without help: {missing}"
    by_id = {b.elem_id: b for b in knobs}
    assert "δ test" in by_id["delta"].info and "OOD" in by_id["delta"].info  # the δ knob says what it does
    assert by_id["k0"].info == field_help("k0") == setting_of("k0").spec.help  # one declaration, reused
    assert all(by_id[d.elem_id].info == d.spec.help for d in SETTINGS if d.name in CONFIG_FIELDS)


def test_every_help_line_belongs_to_a_component(demo: gr.Blocks) -> None:
    ids = {b.elem_id for b in _inputs(demo)}
    assert set(FIELD_HELP) | set(FIELD_TERMS) <= ids, (set(FIELD_HELP) | set(FIELD_TERMS)) - ids


def test_every_column_has_a_tooltip() -> None:
    for table, headers in TABLES.items():
        missing = [h for h in headers if not column_help(h)]
        assert not missing, f"{table}: columns without help: {missing}"
    head = launch_kwargs("/tmp")["head"]
    assert '"cmp-changed"' in head and json.dumps(column_help("R̄ alone"), ensure_ascii=False) in head


def test_every_term_is_defined_once_and_every_symbol_used_is_a_term() -> None:
    for term in ASKED:
        assert GLOSSARY.get(term, "").strip(), f"{term} is not defined"
    assert set(FIELD_TERMS.values()) | set(COLUMN_TERMS.values()) <= set(GLOSSARY)
    texts = [
        *GLOSSARY.values(),
        *FIELD_HELP.values(),
        *COLUMN_HELP.values(),
        *COLUMN_HELP,
        *(d.spec.help for d in SETTINGS),
    ]
    for table in TABLES.values():
        texts += table
    used = {m for t in texts for m in SYMBOL.findall(t)}
    assert used <= set(GLOSSARY), used - set(GLOSSARY)
    md = glossary_md()
    assert all(f"**{md_text(term)}**" in md for term in GLOSSARY) and md.count("\n") == len(GLOSSARY) - 1


def test_the_glossary_is_on_the_page(demo: gr.Blocks) -> None:
    [acc] = [b for b in demo.blocks.values() if isinstance(b, gr.Accordion) and b.elem_id == "glossary"]
    [text] = [b for b in demo.blocks.values() if isinstance(b, gr.Markdown) and b.elem_id == "glossary-text"]
    assert text.value == glossary_md() and acc.label.startswith("Glossary")


def test_events_the_timers_drive_show_no_progress(demo: gr.Blocks) -> None:
    """The polling tick, and the change events of what it writes, run every half second: Gradio's "processing
    0.5s" timers flickered on their outputs. Every one of them hides its progress."""
    fns = list(demo.fns.values())
    timers = {b._id for b in demo.blocks.values() if isinstance(b, gr.Timer)}
    ticked = [f for f in fns if any(bid in timers for bid, _ in f.targets)]
    written = {o._id for f in ticked for o in f.outputs}
    chained = [f for f in fns if any(bid in written and ev == "change" for bid, ev in f.targets)]
    assert len(ticked) >= 2 and chained  # the page's poll and the replay timer
    loud = [(f.name, f.show_progress) for f in ticked + chained if f.show_progress != "hidden"]
    assert not loud, loud
