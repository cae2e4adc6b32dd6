"""The run form's settings, one component per declared setting (uats_core.config.SETTINGS): its kind picks the
component (a menu for a setting with choices, a checkbox for a yes/no, a number box, a text box for τ and the
dropout mode), its declaration the label, the default and the section; its help line is the glossary's
(ui/glossary.py field_help, from the same declaration). A setting the app leaves out says why, on the form."""

from __future__ import annotations

import gradio as gr

from uats_core.config import SETTINGS
from uats_core.settings import SECTIONS, Declared

from .run_form import method_choices

Component = gr.components.Component

# The settings the form sets, in declaration order (what the Search tab's events read back by name).
CONFIG_FIELDS = tuple(d.name for d in SETTINGS if not d.spec.app_leaves_out)
LEFT_OUT = tuple(d for d in SETTINGS if d.spec.app_leaves_out)
NUMBERS_A_ROW = 2  # the form column is 300 px wide at 1280: two boxes and their help lines fit side by side


def setting_component(d: Declared) -> Component:
    """The form's component for one setting, named by its elem_id (the setting's name, '-' for '_')."""
    if d.name == "method":
        return gr.Dropdown(method_choices(), value=d.default, label=d.label, elem_id=d.elem_id)
    if d.kind == "bool":
        return gr.Checkbox(d.default, label=d.label, elem_id=d.elem_id)
    if d.spec.choices:
        return gr.Dropdown(list(d.spec.choices), value=d.default, label=d.label, elem_id=d.elem_id)
    if d.kind in ("int", "float"):
        return gr.Number(d.default, label=d.label, precision=None, min_width=80, elem_id=d.elem_id)
    return gr.Textbox(str(d.default), label=d.label, min_width=140, elem_id=d.elem_id)


def _place(settings: list[Declared], f: dict[str, Component]) -> None:
    """Number boxes side by side (NUMBERS_A_ROW a row), every other component on a line of its own."""
    numbers: list[Declared] = []

    def flush() -> None:
        for i in range(0, len(numbers), NUMBERS_A_ROW):
            with gr.Row():
                for n in numbers[i : i + NUMBERS_A_ROW]:
                    f[n.name] = setting_component(n)
        numbers.clear()

    for d in settings:
        if d.kind in ("int", "float") and d.name != "method":
            numbers.append(d)
            continue
        flush()
        f[d.name] = setting_component(d)
    flush()


def left_out_note() -> str:
    """What the form does not offer, and why (from the declarations)."""
    return "Not on this form: " + "; ".join(f"{d.name} ({d.spec.app_leaves_out})" for d in LEFT_OUT) + "."


def build_settings(f: dict[str, Component], section: str) -> None:
    """One section's settings (uats_core.settings.SECTIONS): the run's own above the rest, the others each in its
    folded accordion; the last one names what the form leaves out."""
    shown = [d for d in SETTINGS if d.spec.section == section and not d.spec.app_leaves_out]
    title = SECTIONS[section]
    if not title:
        _place(shown, f)
        return
    with gr.Accordion(title, open=False, elem_id=f"knobs-{section}"):
        _place(shown, f)
        if section == list(SECTIONS)[-1] and LEFT_OUT:
            gr.Markdown(left_out_note(), elem_id="settings-left-out")


def settings_sections() -> tuple[str, ...]:
    """The sections after the run's own, in the form's order."""
    return tuple(s for s, title in SECTIONS.items() if title)
