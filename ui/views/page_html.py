"""The app's Markdown as HTML on a page the server writes itself (the node's own page), with what Gradio's Markdown
component gives the studio: Markdown with its inline HTML, every tag and attribute outside a short list dropped.

The Markdown is the studio's own (ui/views: run status, node details), where user and model text is already made
inert (safe_text.md_text); the allowlist is the second wall Gradio's sanitiser is in the studio. LaTeX between `$`
is left as text for KaTeX in the page."""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser

from markdown_it import MarkdownIt

# what the app's own Markdown and Why panels use; anything else is dropped, its text kept (escaped)
ALLOWED_TAGS = frozenset(
    {"a", "b", "blockquote", "br", "code", "div", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "li", "ol"}
    | {"p", "pre", "small", "span", "strong", "sub", "sup", "table", "tbody", "td", "th", "thead", "tr", "ul"}
)
VOID_TAGS = frozenset({"br", "hr"})
ALLOWED_ATTRS = {"a": {"href", "title"}, "span": {"style", "class", "title"}, "div": {"class"}, "p": {"class"}}
# a link stays on this app (a relative address) or goes to the web; javascript:, data: and the like are dropped
SAFE_HREF = re.compile(r"^(?:\./|/(?!/)|\?|#|https?://)", re.IGNORECASE)
# the one inline style the app writes: a colour dot (run_status.py)
SAFE_STYLE = re.compile(r"^\s*color\s*:\s*#[0-9a-fA-F]{3,8}\s*;?\s*$")
_MD = MarkdownIt("commonmark", {"html": True, "linkify": False, "typographer": False}).enable("table")


class _Allowlist(HTMLParser):
    """HTML with only ALLOWED_TAGS and their ALLOWED_ATTRS kept; text always re-escaped."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.skip = 0  # inside <script> or <style>: their text is dropped too

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self.skip += 1
        if tag not in ALLOWED_TAGS:
            return
        kept = []
        for name, value in attrs:
            if name not in ALLOWED_ATTRS.get(tag, set()) or value is None:
                continue
            if name == "href" and not SAFE_HREF.match(value):
                continue
            if name == "style" and not SAFE_STYLE.match(value):
                continue
            kept.append(f' {name}="{html.escape(value, quote=True)}"')
        self.out.append(f"<{tag}{''.join(kept)}>")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self.skip = max(0, self.skip - 1)
        if tag in ALLOWED_TAGS and tag not in VOID_TAGS:
            self.out.append(f"</{tag}>")

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.out.append(html.escape(data, quote=False))


def allowed_html(fragment: str) -> str:
    """`fragment` with every tag and attribute outside the allowlist dropped (their text kept, escaped)."""
    parser = _Allowlist()
    parser.feed(fragment)
    parser.close()
    return "".join(parser.out)


def markdown_html(md: str) -> str:
    """The app's Markdown `md` as HTML for a page of its own, through the allowlist."""
    return allowed_html(_MD.render(md))
