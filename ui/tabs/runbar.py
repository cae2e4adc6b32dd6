"""The Search tab's run bar: the controls that act on the open run (Run search, Cancel, Pause, Step,
Resume), its status line and a hint saying why a control is disabled. The bar sticks to the top of the
window above the tree, under the page's message line (which sticks too), so on a laptop screen what a
click causes (an error, the status, the grown tree) shows where the click was made; Run, Step and Resume
also bring the tree back under the bar when the page was scrolled away from it.

Controls that cannot act are disabled, never silent: the server decides from the open run's status
(`control_state`), the hint line says why, and the page copies the hint into each disabled control's
tooltip (RUN_BAR_JS)."""

from __future__ import annotations

from typing import Any

import gradio as gr

from storage import RunStore, StorageError
from uats_core.status import RunStatus

from ..access import AccessDenied, require_owner
from ..views.scripts import page_script
from .common import LIVE, AppContext, RunReads
from .page_state import OpenRun

# The run bar and the message line stay in view while the page scrolls; the bar sits just under the
# message line (its height, which changes with the message, comes from RUN_BAR_JS). Above Plotly's
# modebar (z-index 1001).
RUN_BAR_CSS = """
.gradio-container { overflow: clip !important; }  /* hidden makes a scroll container: nothing would stick */
#notice { position: sticky; top: 0; z-index: 1003; box-shadow: 0 2px 6px rgba(0,0,0,0.12); }
#run-bar { position: sticky; top: var(--uats-notice-h, 0px); z-index: 1002; padding: 4px 8px 3px;
           background: var(--background-fill-primary, #fff); border: 1px solid var(--border-color-primary, #e5e5e5);
           border-radius: 8px; box-shadow: 0 2px 6px rgba(0,0,0,0.08); gap: 2px; }
#run-bar .uats-run-buttons { gap: 4px 16px; flex-wrap: wrap !important; align-items: center; }
#run-bar .uats-group { display: flex; flex-wrap: nowrap !important; gap: 6px; align-items: center;
                       flex: 0 0 auto !important; min-width: 0 !important; width: auto !important; }
#run-bar .uats-group > * { flex: 0 0 auto !important; min-width: 0 !important; margin: 0 !important; }
#run-bar .uats-replay { flex: 1 1 340px !important; }
#run-bar .uats-replay > #t-slider { flex: 1 1 150px !important; min-width: 80px !important; }
#run-bar button { min-width: 0; white-space: nowrap; padding: 4px 10px; }
/* the bar's checkboxes and slider are bare controls: no block frame (it read as a focus ring), no help line
   (each control's help is its tooltip, RUN_BAR_JS) */
#run-bar .block { border: none !important; box-shadow: none !important; background: transparent !important;
                  padding: 0 2px !important; }
#run-bar .info-text { display: none !important; }
#run-bar #start-paused, #run-bar #follow { width: max-content !important; }
#run-bar #start-paused label, #run-bar #follow label { border: none !important; box-shadow: none !important;
                                                       background: transparent !important; padding: 0 !important; }
#run-bar #t-slider .head { display: none !important; }  /* the status line says which iteration is shown */
#run-bar #t-slider .slider_input_container { margin: 0; }
#run-status { font-size: 13px; line-height: 1.3; }
/* each status line stays one line (a long answer or error ends in …; the whole text is the tooltip): the bar
   keeps within 140 px at 1280 px, whatever the run */
#run-status p { margin: 0; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
#run-hint { font-size: 12px; color: var(--body-text-color-subdued, #666); white-space: nowrap; overflow: hidden;
            text-overflow: ellipsis; }
#run-hint p { margin: 0; overflow: hidden; text-overflow: ellipsis; }
button[disabled] { cursor: not-allowed; }
/* a disabled control reads as one: grey, never the red or orange of a Cancel or Run that would act */
#run-bar button[disabled] { background: var(--button-secondary-background-fill, #f3f4f6) !important;
                            color: var(--body-text-color-subdued, #888) !important;
                            border-color: var(--border-color-primary, #e5e5e5) !important; opacity: 0.75; }
#run-bar-js { display: none; }
"""
# The controls whose disabled state the hint explains; their tooltips are the hint's text.
EXPLAINED = (
    "cancel-btn",
    "pause-btn",
    "step-btn",
    "resume-btn",
    "prev-btn",
    "play-btn",
    "next-btn",
    "inspect-btn",
    "collapse-btn",
    "expand-all",
)

RUN_BAR_JS = page_script("runbar.js")  # reads the ids of EXPLAINED from its props

# one line of the bar at 1280 px (a test measures it): what the disabled controls wait for
NO_RUN_HINT = "No run is open: Run search starts one, or open one from the Runs tab; these controls act on it."


def build_run_bar(c: dict[str, Any]) -> None:
    """The bar's components into `c`: the run controls (run_btn, start_paused, cancel_btn, pause_btn, step_btn,
    resume_btn), the replay controls (prev_btn, play_btn, next_btn, t_slider, follow), status_md and run_hint;
    call inside the column above the tree. One row of buttons on a wide screen, two on a laptop."""
    with gr.Column(elem_id="run-bar"):
        with gr.Row(elem_classes=["uats-run-buttons"]):
            with gr.Row(elem_classes=["uats-group"]):
                c["run_btn"] = gr.Button("▶ Run search", variant="primary", elem_id="run-btn", size="sm", scale=0)
                # step mode: the run waits before each iteration for a Step (or a Resume)
                c["start_paused"] = gr.Checkbox(
                    False, label="start paused", elem_id="start-paused", container=False, min_width=100, scale=0
                )
                c["cancel_btn"] = gr.Button(
                    "■ Cancel", variant="stop", elem_id="cancel-btn", size="sm", scale=0, interactive=False
                )
                c["pause_btn"] = gr.Button("❚❚ Pause", elem_id="pause-btn", size="sm", scale=0, interactive=False)
                c["step_btn"] = gr.Button("▶❚ Step", elem_id="step-btn", size="sm", scale=0, interactive=False)
                c["resume_btn"] = gr.Button("▶ Resume", elem_id="resume-btn", size="sm", scale=0, interactive=False)
            with gr.Row(elem_classes=["uats-group", "uats-replay"]):
                c["prev_btn"] = gr.Button("◀ prev", elem_id="prev-btn", size="sm", scale=0, interactive=False)
                c["play_btn"] = gr.Button("▶ play", elem_id="play-btn", size="sm", scale=0, interactive=False)
                c["next_btn"] = gr.Button("next ▶", elem_id="next-btn", size="sm", scale=0, interactive=False)
                c["t_slider"] = gr.Slider(
                    0,
                    1,
                    value=0,
                    step=1,
                    label="iteration t",
                    elem_id="t-slider",
                    show_label=False,
                    container=False,
                    interactive=False,
                    scale=1,
                )
                c["follow"] = gr.Checkbox(
                    True, label="follow live", elem_id="follow", container=False, scale=0, min_width=90
                )
        c["status_md"] = gr.Markdown("**No run open.**", elem_id="run-status")
        c["run_hint"] = gr.Markdown(NO_RUN_HINT, elem_id="run-hint")
        gr.HTML(
            value="",
            elem_id="run-bar-js",
            js_on_load=RUN_BAR_JS,
            html_template="<span></span>",
            padding=False,
            explained=list(EXPLAINED),
            ended=[st.value for st in RunStatus if st not in LIVE],
        )


CONTROL_VERBS = "cancel, pause, step or resume"


def control_state(run: dict[str, Any] | None, denied: str | None = None) -> tuple[dict[str, bool], str]:
    """Which run controls can act on `run` (None: no run open), and the hint that says why the others
    cannot. Keys: cancel, pause, step, resume (run control) and replay (step-through and inspector).
    `denied`: why the requester may not control this run (ui.access), when they may not."""
    if run is None:
        return {"cancel": False, "pause": False, "step": False, "resume": False, "replay": False}, NO_RUN_HINT
    status, paused = run.get("status"), bool(run.get("paused"))
    rid = str(run.get("run_id", ""))[:8]
    if status not in LIVE:
        return (
            {"cancel": False, "pause": False, "step": False, "resume": False, "replay": True},
            f"Run {rid} has ended ({status}): nothing to cancel, pause, step or resume; Run search starts a new one.",
        )
    if denied:
        return {"cancel": False, "pause": False, "step": False, "resume": False, "replay": True}, denied
    if paused:
        return (
            {"cancel": True, "pause": False, "step": True, "resume": True, "replay": True},
            f"Run {rid} is paused: Step runs one iteration, Resume runs it to the end.",
        )
    return (
        {"cancel": True, "pause": True, "step": True, "resume": False, "replay": True},
        f"Run {rid} is {status}: Pause holds it after this iteration; Step pauses it after the next.",
    )


def bar_state(
    store: RunStore, s: OpenRun | None, request: gr.Request | None, reads: RunReads | None = None
) -> tuple[dict[str, bool], str]:
    """control_state of the run open in `s` as the requester sees it: a live run someone else started
    (or the command line) has its controls disabled, with require_owner's reason as the hint. `reads`: the
    event's reads of the run log (one row: status, pause and owner)."""
    run, denied = None, None
    if s is not None and s.run_id:
        try:
            row = reads.run(s.run_id) if reads is not None else store.get_run(s.run_id)
            run = {"run_id": s.run_id, "status": row["status"], "paused": bool(row["paused"])}
            if row["status"] in LIVE:
                require_owner(store, s.run_id, request, CONTROL_VERBS, run=row)
        except AccessDenied as exc:
            why = str(exc).removeprefix("run: ")
            denied = why[:1].upper() + why[1:]
        except StorageError:
            run = None
    return control_state(run, denied)


def wire_run_bar(ctx: AppContext, controls: dict[str, list[gr.Button]], hint: gr.Markdown) -> None:
    """Enable and disable `controls` (by control_state key) whenever the open run changes (ctx.run_state) or its
    status does (a poll part), and say why in `hint`; only what changed is sent. The buttons' handlers check the owner
    again (search_events): this only keeps a viewer from clicking what would be refused."""
    keys = list(controls)
    outputs = [b for k in keys for b in controls[k]]

    shown = gr.State(None)  # the (controls, hint) this page shows: the poll asks on every tick

    def on_state(s: OpenRun, last: Any, request: gr.Request, reads: RunReads | None = None) -> Any:
        can, why = bar_state(ctx.store, s, request, reads)
        now = [[can[k] for k in keys], why]
        if now == last:  # unchanged: nothing for the page to re-render while it draws a live run
            return gr.skip()
        return {**{b: gr.update(interactive=can[k]) for k in keys for b in controls[k]}, hint: why, shown: now}

    # the user's own changes (open, run, select) fire ctx.run_state's change; a tick's (a run ending) come with the poll
    ctx.run_state.change(
        on_state, [ctx.run_state, shown], [*outputs, hint, shown], show_progress="hidden", trigger_mode="always_last"
    )

    def on_tick(s: OpenRun, last: Any, request: gr.Request, reads: RunReads) -> Any:
        # following a run whose frames are not all sent yet (search_events.live_update): its end waits for them
        if s.run_id and s.t is None and s.version is None:
            return gr.skip()
        return on_state(s, last, request, reads)

    ctx.poll.add(on_tick, [ctx.run_state, shown], [*outputs, hint, shown], with_request=True, with_reads=True)
