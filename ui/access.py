"""Who may change what in the app. Anyone who reaches the page may view every run; a run started in the app
belongs to who started it, and only they may cancel, pause, step or resume it, star and annotate it, or
shadow-score it (its shadow scores are one set per node: no one replaces another's).

Who someone is: the signed-in user when the app runs with a login (`--auth-file` / $UATS_AUTH, ui/auth.py),
else the browser session (a page load). A session id is a secret of its page (whoever sends it acts as that
page), so the run log keeps a hash of it, never the id itself.

Runs without an owner were started by the CLI, an evaluation or an older version: no page may control them
(they run elsewhere: stop them there), and they may be starred and annotated only in an app without a login,
which listens on this machine alone and so serves the person whose runs they are."""

from __future__ import annotations

import hashlib
from typing import Any

import gradio as gr

from storage import RunStore


class AccessDenied(ValueError):
    """A change to a run its requester does not own; `.field` is "run", as for StorageError."""

    def __init__(self, message: str) -> None:
        self.field = "run"
        super().__init__(f"run: {message}")


def requester(request: gr.Request | None) -> str:
    """'user:<name>' for a signed-in user, 'session:<hash of the session id>' without a login."""
    user = getattr(request, "username", None)
    if user:
        return f"user:{user}"
    session = str(getattr(request, "session_hash", None) or "")
    if not session:  # Gradio sends one with every event; without it no one can be told apart
        raise AccessDenied("this request carries no session; reload the page")
    return "session:" + hashlib.sha256(session.encode("utf-8")).hexdigest()[:32]


def signed_in(request: gr.Request | None) -> bool:
    return bool(getattr(request, "username", None))


def owner_label(owner: str | None) -> str:
    """Who started a run, in words that reveal no session."""
    if owner is None:
        return "the command line or an evaluation"
    if owner.startswith("user:"):
        return owner.removeprefix("user:")
    return "another browser session"


def require_owner(
    store: RunStore,
    run_id: str,
    request: gr.Request | None,
    verb: str,
    *,
    annotate: bool = False,
    run: dict[str, Any] | None = None,
) -> None:
    """AccessDenied unless the requester may `verb` the run: its owner; for `annotate` (stars, notes, shadow
    scores) also anyone on an app without a login when the run has no owner. StorageError when there is no such
    run. `run`: its row, when just read."""
    owner = (run if run is not None else store.get_run(run_id)).get("owner")
    if owner is not None and owner == requester(request):
        return
    if owner is None and annotate and not signed_in(request):
        return
    rid = run_id[:8]
    who = owner_label(owner)
    if owner is not None:
        raise AccessDenied(f"run {rid} was started by {who}; you may view it, but only they may {verb} it")
    where = f"a signed-in user may {verb} only the runs they started here" if annotate else f"{verb} it where it runs"
    raise AccessDenied(f"run {rid} was started by {who}, not in this app; you may view it; {where}")
