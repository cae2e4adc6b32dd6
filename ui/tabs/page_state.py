"""The page's states as typed records: the open run (`ctx.run_state`, OpenRun), the compared pair
(`ctx.pair_state`, ComparedPair), the case finder's batch and list (FinderState) and the Cases tab's mined cases
(CasesState).

What gr.State holds is the record itself. Gradio keeps a session's states on the server (they never reach the
page), deep-copies a state's initial value for each session, and hands a handler the object it holds, so the
records hold only ids, numbers and tuples: the runs' data stay in RunCache. Gradio tells a state changed (and
fires its change listeners) by hashing it before and after an event (gradio.utils.deep_hash, which hashes an
object with hash()): the records with change listeners hash by their content (`unsafe_hash`: mutable, and never
a key of a dict or a member of a set), so a handler that changes a field fires them, as a dict's new content did;
the selection is left out (a click alone fires none: no listener acts on a new selection alone).
The poll writes fields in place and never outputs a state (ui/tabs/poll.py), so a tick fires none of them."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, TypeVar

from storage import RunVersion

from ..views.figure1 import PER_PAGE

R = TypeVar("R")

SIDES = ("a", "b")  # the compared pair's runs, in the order the tab draws them


def replaced(record: R, **changes: Any) -> R:
    """A copy of `record` with `changes`: what a handler returns as the state's new value."""
    return dataclasses.replace(record, **changes)  # type: ignore[type-var]


@dataclass(frozen=True)
class Figure1Options:
    """How Figure 1 shows the inspected node's step (ui/tabs/step_panel.py): row order, rows per page, siblings
    only, and the page (None: the page holding the inspected node)."""

    sort: str = "parent"
    per_page: int = PER_PAGE
    siblings: bool = False
    page: int | None = None


@dataclass(frozen=True)
class ShadowJob:
    """A shadow scoring job the page follows: its id, the run it scores, the compared pair's side ("" for the
    open run) and the progress last reported (`status:done`)."""

    id: str
    run: str
    side: str = ""
    said: str | None = None


@dataclass(unsafe_hash=True)
class OpenRun:
    """The Search tab's open run: its id, the version drawn last, the iteration shown (t: None follows the latest),
    the selected node, the collapsed nodes, the last iteration sent while following live (drawn_t), the status
    the notice announced (announced: None once it says no more), Figure 1's options and a shadow job."""

    run_id: str | None = None
    version: RunVersion | None = None
    t: int | None = None
    # out of the hash Gradio reads: a click (a new selection alone) fires no run_state.change, whose listeners
    # (the run bar, the Why panel's run follower, the idle timer) skip a new selection: they were three round trips
    # per click, each with rounds of the page's status bookkeeping (the Why panel follows node_box instead)
    selected: int | None = field(default=None, hash=False)
    collapsed: tuple[int, ...] = ()
    drawn_t: int = -1
    announced: str | None = None
    fig1: Figure1Options = Figure1Options()
    shadow: ShadowJob | None = None

    def opened(self, run_id: str, announced: str | None = None) -> OpenRun:
        """The state of a run just opened or started: latest iteration, nothing selected or drawn yet; Figure 1's
        row order, page size and filter carry over from the run before (on the page holding the node)."""
        return OpenRun(run_id=run_id, announced=announced, fig1=replaced(self.fig1, page=None))


@dataclass(unsafe_hash=True)
class ComparedPair:
    """The Compare tab's pair: runs a and b, the iteration shown (None: both follow their latest), the versions
    drawn while following, the node selected in each run, the changed list's rows as (side, node, iteration), and
    a shadow job of the baseline."""

    a: str | None = None
    b: str | None = None
    t: int | None = None
    versions: tuple[RunVersion, RunVersion] | None = None
    selected: tuple[int | None, int | None] = field(default=(None, None), hash=False)  # as OpenRun.selected
    changed: tuple[tuple[str, int, int], ...] = ()
    shadow: ShadowJob | None = None

    @property
    def both(self) -> bool:
        return bool(self.a and self.b)

    def run(self, side: str) -> str | None:
        return self.a if side == "a" else self.b


@dataclass
class FinderState:
    """The case finder's: each table row's (H-UATS run, REBASE run), the batch followed and its last report, each
    row's batch in the list of the user's batches and the one picked there (Cancel stops that one)."""

    rows: tuple[tuple[str, str], ...] = ()
    job: str | None = None
    said: str | None = None
    batches: tuple[str, ...] = ()
    picked: str | None = None


@dataclass
class CasesState:
    """The Cases tab's: the mined pools by quadrant (ui.views.cases.mine), each table row's (run, node), and the
    case shown."""

    pools: dict[str, Any] | None = None
    rows: tuple[tuple[str, int], ...] = ()
    current: tuple[str, int] | None = None
