"""The node's own page (ui/tabs/node_page.py): the server writes it whole, head first (why it opens fast), with the
studio's own view functions (one value per fact); an address it cannot follow gets one line naming the field; no
text of a run can add markup or a script to it; with a login, a browser not signed in gets the login form."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gradio as gr
import httpx
import pytest

from storage import RunStore, StorageError
from testkit.doubles import WorkerPoolDouble, record, record_synthetic
from testkit.held_reads import HeldReads
from testkit.serving import served_fresh_app
from testkit.synthetic import synthetic_events
from ui.app_ui import NODE_VIEWS, build_demo
from ui.tabs.common import RunCache
from ui.tabs.node_page import (
    LINKED_FIGURE1_PATH,
    LIVE_NOTE,
    NO_RUN,
    NodeAnswer,
    NodeViews,
    katex_assets,
    node_page_parts,
)
from ui.tabs.viewer import RunViewer
from ui.views.page_html import markdown_html

RUN = "5e" * 16
GOING = "6f" * 16  # a run still going: its last event (RunEnded) not written
EVIL = "4e" * 16  # a run whose question holds markup that once broke pages
QUESTION = (
    "What is $\\frac{1}{2}$? </script><script>window.__pwned=1</script> <!--<script> <img src=x onerror=alert(1)>"
)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[gr.Blocks, RunStore]:
    store = RunStore("sqlite://")
    record_synthetic(store, RUN, seed=3, n_nodes=40)
    record_synthetic(store, EVIL, seed=5, n_nodes=20, question=QUESTION)
    record(store, list(synthetic_events(GOING, seed=4, n_nodes=30))[:-1])
    return build_demo(store, WorkerPoolDouble(), tmp_path_factory.mktemp("exports")), store


def _views(demo: tuple[gr.Blocks, RunStore]) -> NodeViews:
    views = getattr(demo[0], NODE_VIEWS)
    assert isinstance(views, NodeViews)
    return views


def _page(views: NodeViews, **params: str) -> str:
    return "".join(node_page_parts(lambda: views.answer(params), "./uats-static/plotly.min.js"))


def test_a_node_is_drawn_by_the_studio_s_own_views(demo: tuple[gr.Blocks, RunStore]) -> None:
    store = demo[1]
    node = next(n["id"] for n in store.get_nodes(RUN) if n["depth"] == 2)
    out = _views(demo).answer({"run": RUN[:8], "node": str(node)})
    data = RunCache(store).get(RUN)
    fig, md = RunViewer.node_view(data, data.state_at(None), node)
    assert json.loads(out.figure1)["data"] == json.loads(fig)["data"]  # the studio's Figure 1, row for row
    assert out.node_md.startswith(md) and f"node={node}" in out.node_md
    assert f"node {node}" in out.why
    assert "Open in the studio" in out.head and f"node={node}" in out.head
    tree = json.loads(out.tree)
    assert tree["meta"]["run_id"] == RUN and tree["meta"]["selected"] == node  # the tree, its ring on the node


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({}, NO_RUN),
        ({"run": "doesnotexist"}, "doesnotexist"),
        ({"run": RUN, "node": "abc"}, "node: 'abc' in the address is not a whole number"),
        ({"run": RUN, "t": "x"}, "t: 'x' in the address is not a whole number"),
        ({"run": RUN, "node": "9999"}, "has no node 9999"),
    ],
)
def test_an_address_it_cannot_follow_gets_one_line(
    demo: tuple[gr.Blocks, RunStore], params: dict[str, str], says: str
) -> None:
    out = _views(demo).answer(params)
    assert says in out.head, out.head
    assert out.figure1 == ""  # nothing drawn for a node the address does not name
    assert says.split(":")[0] in _page(_views(demo), **params)


def test_a_run_still_going_is_said_to_be_shown_as_it_was(demo: tuple[gr.Blocks, RunStore]) -> None:
    views = _views(demo)
    assert LIVE_NOTE in views.answer({"run": GOING, "node": "3"}).head
    assert LIVE_NOTE not in views.answer({"run": RUN, "node": "3"}).head  # an ended run is as it is
    assert LIVE_NOTE not in views.answer({"run": GOING, "node": "3", "t": "1"}).head  # an iteration is fixed


def test_a_studio_address_opens_with_its_node_s_figure1(demo: tuple[gr.Blocks, RunStore]) -> None:
    """The Figure 1 the studio's page asks for as it starts (ui/js/link_prefetch.js): the linked node's, at the
    address's iteration, as the inspector draws it; none for an address that selects no node; a bad address raises
    with the line the page's load shows (tests/browser/test_links_browser.py: the load's answer is the same figure)."""
    views, store = _views(demo), demo[1]
    data = RunCache(store).get(RUN)
    node = next(n["id"] for n in store.get_nodes(RUN) if n["depth"] == 2)
    assert views.linked_figure1({"run": RUN[:8], "node": str(node)}) == (
        node,
        RunViewer.node_view(data, data.state_at(None), node)[0],
    )
    early = next(n["id"] for n in store.get_nodes(RUN) if n["depth"] == 1)
    got, fig = views.linked_figure1({"run": RUN, "node": str(early), "t": "1"})
    assert got == early and json.loads(fig)["meta"]["iteration"] == 1  # the step as iteration 1 knew it
    assert views.linked_figure1({"run": RUN, "node": str(node), "t": "0"}) == (None, "")  # not in the tree yet
    assert views.linked_figure1({"run": RUN}) == (None, "") and views.linked_figure1({}) == (None, "")
    with pytest.raises(ValueError, match="node: 'abc' in the address is not a whole number"):
        views.linked_figure1({"run": RUN, "node": "abc"})
    with pytest.raises(StorageError, match="doesnotexist"):
        views.linked_figure1({"run": "doesnotexist", "node": "3"})


def test_the_head_leaves_before_the_run_is_read() -> None:
    """The first part (which loads plotly.js) is written before the page's answer is asked for."""
    asked: list[int] = []

    def answer() -> NodeAnswer:
        asked.append(1)
        return NodeAnswer("t", "**head**")

    parts = node_page_parts(answer, "./uats-static/plotly.min.js")
    first = next(parts)
    assert asked == [] and '<script src="./uats-static/plotly.min.js"></script></head>' in first
    rest = "".join(parts)
    assert asked == [1] and "<strong>head</strong>" in rest and rest.endswith("</body></html>")


def test_no_text_of_a_run_adds_markup_or_a_script(demo: tuple[gr.Blocks, RunStore]) -> None:
    node = next(n["id"] for n in demo[1].get_nodes(EVIL) if n["depth"] == 1)
    page = _page(_views(demo), run=EVIL, node=str(node))
    # the page's own scripts only: plotly.js, the title, three JSON blocks, the page script, the tree's last one
    assert len(re.findall(r"<script", page)) == 7, re.findall(r"<script[^>]*>", page)
    assert "<script>window.__pwned" not in page
    assert "<img" not in page and "<!--" not in page
    assert "\\frac{1}{2}" in page  # the LaTeX is kept for KaTeX
    # a figure's JSON holding what ends or re-opens a script element is written with no "<" at all
    bare = NodeAnswer("t", "h", figure1=json.dumps({"text": QUESTION}), tree=json.dumps({"t": QUESTION}))
    page = "".join(node_page_parts(lambda: bare, "./p.js"))
    assert len(re.findall(r"<script", page)) == 7 and "<!--" not in page and "<img" not in page
    # markup in Markdown that is not the app's own is dropped, its text kept
    html = markdown_html('x <a href="javascript:alert(1)">a</a> <span style="position:fixed">b</span> <img src=x>')
    assert "javascript:" not in html and "position" not in html and "<img" not in html and ">a</a>" in html


def test_latex_is_rendered_by_gradio_s_own_katex() -> None:
    katex = katex_assets()
    assert katex is not None, "this Gradio has no KaTeX module under templates/frontend/assets"
    sheet = Path(gr.__file__).resolve().parent / "templates" / "frontend" / katex.sheet
    assert f".{katex.scope} .katex" in sheet.read_text(encoding="utf-8")  # the class the page's body carries


@pytest.fixture()
def served(tmp_path: Path) -> Iterator[dict[str, Any]]:
    with served_fresh_app(tmp_path, WorkerPoolDouble()) as app:
        record_synthetic(app["store"], RUN, seed=3, n_nodes=40)
        yield app


def test_the_app_serves_the_page_at_its_address(served: dict[str, Any]) -> None:
    r = httpx.get(f"{served['url']}/node?run={RUN}&node=3", timeout=60)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert r.headers["x-frame-options"] == "SAMEORIGIN"  # the web guard's frame protection, as on every page
    figure1 = re.search(r'<script type="application/json" id="figure1-json">(.*?)</script>', r.text)
    assert figure1 and json.loads(json.loads(figure1.group(1)))["meta"]["selected"] == 3
    assert "Open in the studio" in r.text and "auth_required" not in r.text
    assert "no run in the address" in httpx.get(f"{served['url']}/node", timeout=60).text


def test_the_app_answers_a_studio_address_s_figure1(served: dict[str, Any]) -> None:
    url = f"{served['url']}{LINKED_FIGURE1_PATH}"
    r = httpx.get(url, params={"run": RUN, "node": "3"}, timeout=60)
    assert r.status_code == 200 and r.headers["cache-control"] == "no-store"
    assert r.json()["node"] == 3 and json.loads(r.json()["figure1"])["meta"]["selected"] == 3
    bad = httpx.get(url, params={"run": RUN, "node": "abc"}, timeout=60)
    assert bad.status_code == 400 and bad.json() == {
        "error": "node: 'abc' in the address is not a whole number; remove it or give e.g. node=3"
    }
    assert httpx.get(url, params={"run": RUN}, timeout=60).json() == {"node": None, "figure1": ""}
    assert "__uatsLinkedFigure1" in httpx.get(f"{served['url']}/", timeout=60).text  # the studio's head asks for it


def test_a_run_log_that_fails_is_named_without_the_server_s_folders(
    served: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    views = getattr(served["demo"], NODE_VIEWS)

    def fails(params: Any) -> Any:
        raise StorageError("run log sqlite:////srv/private/runs.db: database is locked")

    monkeypatch.setattr(views, "linked_figure1", fails)
    r = httpx.get(f"{served['url']}{LINKED_FIGURE1_PATH}", params={"run": RUN, "node": "3"}, timeout=60)
    said = r.json()["error"]
    assert r.status_code == 400 and "run log runs.db: database is locked" in said and "/srv" not in said, said
    page = "".join(node_page_parts(lambda: fails({}), "./uats-static/plotly.min.js"))
    assert "runs.db: database is locked" in page and "/srv" not in page


def test_no_more_pages_are_read_at_once_than_the_app_allows(
    served: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Twenty links opened at once, half of them node pages and half studio addresses' Figure 1s: every one is
    answered, and no more are read at the same time than NODE_PAGE_READERS (2 here, fewer than the threads the
    server could give them); the rest wait their turn."""
    from concurrent.futures import ThreadPoolExecutor

    import ui.app_ui

    monkeypatch.setattr(ui.app_ui, "NODE_PAGE_READERS", 2)  # read at the app's first page
    views = getattr(served["demo"], NODE_VIEWS)
    reads = HeldReads()

    def slow(real: Any) -> Any:
        def read(params: Any) -> Any:
            reads.read(0.5)  # long enough that all twenty requests are in while the first pages are read
            return real(params)

        return read

    monkeypatch.setattr(views, "answer", slow(views.answer))
    monkeypatch.setattr(views, "linked_figure1", slow(views.linked_figure1))
    paths = [f"/node?run={RUN}&node={n}" if n % 2 else f"{LINKED_FIGURE1_PATH}?run={RUN}&node={n}" for n in range(20)]
    with ThreadPoolExecutor(20) as pool:
        codes = list(pool.map(lambda path: httpx.get(f"{served['url']}{path}", timeout=300), paths))
    assert [r.status_code for r in codes] == [200] * 20 and all("figure1" in r.text for r in codes)
    assert reads.most <= 2, reads.most


def test_one_user_s_links_leave_room_for_another_user_s_page(
    served: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ten links one client opens at once, each read held until the test lets it go: the first client reads at most
    NODE_PAGE_READERS_PER_USER (2) of them at a time, and a second client's page (another address: without a login
    a reader is its address) is read and answered while all ten still wait. With one bound for all (4 places here)
    the first client's pages took every place and the second waited behind them."""
    from concurrent.futures import ThreadPoolExecutor

    import ui.app_ui

    monkeypatch.setattr(ui.app_ui, "NODE_PAGE_READERS", 4)  # read at the app's first page
    monkeypatch.setattr(ui.app_ui, "NODE_PAGE_READERS_PER_USER", 2)
    views = getattr(served["demo"], NODE_VIEWS)
    reads, real = HeldReads(), views.answer

    def held(params: Any) -> NodeAnswer:
        if params.get("node") != "20":  # the first client's: held until the second's page is answered
            reads.read()
        return real(params)

    monkeypatch.setattr(views, "answer", held)
    other = httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.2"), timeout=60)
    with ThreadPoolExecutor(10) as pool:
        first = [pool.submit(httpx.get, f"{served['url']}/node?run={RUN}&node={n}", timeout=300) for n in range(10)]
        reads.wait_for(2)
        time.sleep(0.5)  # the other eight are in, waiting (with one bound for all, two of them would read)
        try:
            second = other.get(f"{served['url']}/node?run={RUN}&node=20")
            waiting = sum(not f.done() for f in first)
        finally:
            reads.release.set()
            other.close()
        codes = [f.result().status_code for f in first]
    assert second.status_code == 200 and "figure1-json" in second.text
    assert waiting == 10, waiting  # answered while every one of the first client's pages was still held
    assert reads.most == 2, reads.most
    assert codes == [200] * 10


def test_head_answers_the_page_s_headers_and_reads_nothing(
    served: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A link previewer's HEAD: 200 with the page's type and no body, and no run read (it was 405)."""
    views = getattr(served["demo"], NODE_VIEWS)
    reads = []
    monkeypatch.setattr(views, "answer", lambda params: reads.append(params))
    r = httpx.head(f"{served['url']}/node?run={RUN}&node=3", timeout=60)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html"), (r.status_code, r.headers)
    assert r.content == b"" and reads == []
