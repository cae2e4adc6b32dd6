"""The run form at 1280 × 800 offers every setting its declaration lets the app offer (uats_core/config.py), each in
its section, whole inside the form's column with its label, and names the one it leaves out and why."""

from __future__ import annotations

from typing import Any

from uats_core.config import SETTINGS
from uats_core.settings import SECTIONS

from .pages import ARTIFACTS, photo, wait_idle

BOXES_JS = r"""(ids) => {
  const col = document.querySelector('#form-col').getBoundingClientRect();
  return ids.map((id) => {
    const el = document.getElementById(id);
    if (!el) return {id, missing: true};
    const r = el.getBoundingClientRect();
    const label = el.querySelector('label, [data-testid="block-info"], span');
    const lr = label ? label.getBoundingClientRect() : r;
    return {id, width: r.width, height: r.height, inside: r.left >= col.left - 1 && r.right <= col.right + 1,
            labelCut: label ? label.scrollWidth > label.clientWidth + 1 && getComputedStyle(label).overflow === 'hidden'
                            : false, labelWidth: lr.width};
  });
}"""


def test_the_form_offers_every_setting_it_may_at_1280(laptop_page: Any) -> None:
    pg = laptop_page
    for section, title in SECTIONS.items():
        if title:
            pg.locator(f"#knobs-{section}").get_by_text(title).click()
    shown = [d for d in SETTINGS if not d.spec.app_leaves_out]
    ids = [d.elem_id for d in shown]
    # Gradio mounts an accordion's fields after the click that opens it (asynchronously): wait until they are there
    pg.wait_for_function("(ids) => ids.every((id) => document.getElementById(id))", arg=ids)
    wait_idle(pg)
    boxes = pg.evaluate(BOXES_JS, ids)
    bad = [
        b for b in boxes if b.get("missing") or b["width"] < 60 or b["height"] < 20 or not b["inside"] or b["labelCut"]
    ]
    assert not bad, bad
    note = pg.locator("#settings-left-out").inner_text()
    assert all(f"{d.name} ({d.spec.app_leaves_out})" in note for d in SETTINGS if d.spec.app_leaves_out), note
    ARTIFACTS.mkdir(exist_ok=True)
    photo(pg, ARTIFACTS / "settings-form-1280x800.png", "#form-col")
