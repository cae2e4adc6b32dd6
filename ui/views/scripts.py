"""The page's JavaScript, read from the `.js` files in ui/js/ (packaged with the wheel: pyproject's package-data).
The files are linted by ESLint (eslint.config.mjs, `npm run lint`, tests/test_page_scripts.py); each file's first
comment names what the page gives it (Gradio runs a gr.HTML's js_on_load as the body of a function of `element`,
`trigger`, `props`, `server`, `upload` and `watch`)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

SCRIPTS_DIR = Path(__file__).resolve().parents[1] / "js"


@cache
def page_script(name: str) -> str:
    """The text of ui/js/`name` (read once per process)."""
    return (SCRIPTS_DIR / name).read_text(encoding="utf-8")
