"""User and model text made inert before it reaches a Markdown component.

Gradio's Markdown renders HTML and Markdown: a problem holding `<div style="position:fixed">` covered the
page and `<img src=...>` (or `![](...)`) made the browser fetch a URL. Every character that HTML or
Markdown treats as syntax becomes a numeric character reference, which both read as a literal character.
`$` is kept, so LaTeX still renders: Gradio cuts `$...$` spans out of the source before parsing Markdown and
puts them back with entities intact, and KaTeX then reads the decoded text (`&#92;frac` is `\\frac` to it)."""

from __future__ import annotations

import re
from pathlib import PurePath
from typing import Any

# HTML: & < > " '; Markdown: \\ ` * _ [ ] ( ) # + - ! | ~ = and % (Gradio's own LaTeX placeholders use %%%);
# : . @ so that no GFM autolink (http://, www., e-mail) forms and swallows the entities after it
_SPECIAL = frozenset("&<>\"'\\`*_[]()#+-!|~=%:.@")
_TABLE = {ord(c): f"&#{ord(c)};" for c in _SPECIAL}


def md_text(value: Any) -> str:
    """`value` as text that Gradio's Markdown shows literally (LaTeX between $ still renders)."""
    return ("" if value is None else str(value)).translate(_TABLE)


def md_inline(value: Any, limit: int | None = None) -> str:
    """One line of `value` (whitespace runs collapsed), optionally cut to `limit` characters, escaped."""
    text = " ".join(("" if value is None else str(value)).split())
    if limit is not None and len(text) > limit:
        text = text[:limit] + "…"
    return md_text(text)


def model_name(spec: Any) -> str:
    """A model as the page names it: a local folder by its own name (where the server keeps its models is not
    the page's business), a hub id or any other name as it is."""
    text = "" if spec is None else str(spec)
    return PurePath(text).name if PurePath(text).is_absolute() else text


# An absolute POSIX path of two or more parts, alone or in a file URL (sqlite:////srv/runs.db): not the path of a
# web address (https://host/a/b), whose '/' follows a word character.
_ABS_PATH = re.compile(r"(?:\b[a-z][a-z0-9+.-]*:///?|(?<![\w:/.~-]))(/[\w.@+~=-]+){2,}/?")


def hide_server_paths(text: Any) -> str:
    """`text` with every absolute path cut to its last part (`/srv/models/qwen` -> `qwen`, `sqlite:////srv/runs.db`
    -> `runs.db`): a message or an export a client receives names what the server offers, never where it keeps
    it. For text the server wrote (errors, notices); what a model or a user wrote is left alone elsewhere."""
    return _ABS_PATH.sub(lambda m: m.group(0).rstrip("/").rsplit("/", 1)[-1], "" if text is None else str(text))
