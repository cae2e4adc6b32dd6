"""The Search tab put together: its components (search_layout) wired to their events (search_events: the
form, Run and the live tree; inspector: a node, its notes and exports; step_panel: Figure 1's controls and the Why
panel; the run bar). Runs, Cases and the page's links open runs with the tab's viewer."""

from __future__ import annotations

from dataclasses import dataclass

from .common import AppContext
from .inspector import wire_inspector
from .runbar import wire_run_bar
from .search_events import wire_search
from .search_layout import SearchTab, lay_out_search_tab
from .shadowpanel import wire_shadow_panel
from .step_panel import wire_step_panel
from .viewer import RunViewer


@dataclass
class SearchPage(SearchTab):
    """The tab's components and the RunViewer that opens and draws runs in its tree."""

    viewer: RunViewer


def build_search_tab(ctx: AppContext) -> SearchPage:
    """The tab's components and events; call inside its `gr.Tab`. Returns the components other tabs use."""
    tab, why = lay_out_search_tab(ctx)
    page = SearchPage(**vars(tab), viewer=wire_search(ctx, tab))
    wire_run_bar(
        ctx,
        {
            "cancel": [tab.cancel_btn],
            "pause": [tab.pause_btn],
            "step": [tab.step_btn],
            "resume": [tab.resume_btn],
            "replay": [
                tab.prev_btn,
                tab.play_btn,
                tab.next_btn,
                tab.go_node,
                tab.collapse_btn,
                tab.expand_all,
                tab.fig1_prev,
                tab.fig1_next,
                tab.fig1_export,
            ],
        },
        tab.run_hint,
    )
    wire_inspector(ctx, tab, page.viewer)
    wire_step_panel(ctx, page, why)
    wire_shadow_panel(ctx, tab, page.viewer)
    return page
