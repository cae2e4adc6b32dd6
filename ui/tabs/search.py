"""The Search tab put together: its components (search_layout) wired to their events (search_events: the
form, Run and the live tree; inspector: a node, its notes and exports; frontier: the candidates' panel; the
run bar). Runs, Cases and the page's links open runs with the tab's viewer."""

from __future__ import annotations

from dataclasses import dataclass

from .common import AppContext
from .frontier import wire_frontier_panel
from .inspector import wire_inspector
from .runbar import wire_run_bar
from .search_events import wire_search
from .search_layout import SearchTab, lay_out_search_tab
from .shadowpanel import wire_shadow_panel
from .viewer import RunViewer


@dataclass
class SearchPage(SearchTab):
    """The tab's components and the RunViewer that opens and draws runs in its tree."""

    viewer: RunViewer


def build_search_tab(ctx: AppContext) -> SearchPage:
    """The tab's components and events; call inside its `gr.Tab`. Returns the components other tabs use."""
    tab, frontier = lay_out_search_tab(ctx)
    page = SearchPage(**vars(tab), viewer=wire_search(ctx, tab))
    wire_run_bar(ctx, {"cancel": [tab.cancel_btn], "pause": [tab.pause_btn], "step": [tab.step_btn],
                       "resume": [tab.resume_btn],
                       "replay": [tab.prev_btn, tab.play_btn, tab.next_btn, tab.go_node, tab.collapse_btn,
                                  tab.expand_all, tab.fig1_btn]}, tab.run_hint)
    wire_inspector(ctx, tab, page.viewer)
    wire_frontier_panel(ctx, page, frontier)
    wire_shadow_panel(ctx, tab, page.viewer)
    return page
