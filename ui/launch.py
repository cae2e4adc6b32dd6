"""UATS Studio's launcher: `uats-studio` (the console script) or `python app.py` in a checkout serves the
workbench at http://127.0.0.1:7860 (offline, embedded world).

Flags: --host/--port (Gradio's GRADIO_SERVER_NAME / GRADIO_SERVER_PORT are respected when the flags are
absent), --db (a SQLite path or an SQLAlchemy URL; default runs/uats.db), --export-dir (default exports/),
--reports-dir (a folder of evaluation run logs the Reports tab may open, read-only; default reports/),
--ledgers-dir (a folder of results ledgers the Reports tab offers, the first by default; default results/),
--workers (searches running at once), --auth-file (user:password lines; or $UATS_AUTH): a login, required to
listen on an address other machines reach (ui/auth.py); --allowed-host and --allowed-origin, the host names and
other origins the app answers besides its own, --trusted-proxy the reverse proxy whose X-Forwarded-* headers count
(ui/web_guard.py). What a client may load is the server's choice
(ui/choices.py): --models-dir and --datasets-dir (repeatable) add their folders' models and .jsonl files,
--allow-hub-cache the hub models in the local cache, --policy-server NAME=URL (repeatable) the policy an
OpenAI-compatible server serves (vllm serve, SGLang, llama.cpp), to the embedded and shipped ones. What one client
can make the server do: --max-queued and --max-queued-per-session (jobs waiting), --max-paused (paused runs holding a
worker), --pause-timeout-s, --export-quota-mb and --export-session-quota-mb. --imports-dir (repeatable) lists
the files of other tools' runs the Runs tab may import. The default folders are the project's in a checkout and the
current directory's when installed."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# In a checkout (app.py beside ui/), the project's folders; installed, folders under the current directory
# (runs/uats.db is also where `uats search` logs by default).
_CHECKOUT = Path(__file__).resolve().parent.parent
PROJECT = _CHECKOUT if (_CHECKOUT / "app.py").is_file() else Path(".")
DEFAULT_DB = PROJECT / "runs" / "uats.db"
DEFAULT_EXPORTS = PROJECT / "exports"
DEFAULT_REPORTS = PROJECT / "reports"
DEFAULT_IMPORTS = PROJECT / "imports"  # other tools' run files the Runs tab offers (created when missing)
DEFAULT_LEDGERS = PROJECT / "results"  # the committed results ledger (results/arith-grid) opens out of the box

# SIGTERM or Ctrl-C: how long a running search gets to end 'cancelled' before its worker is ended (the app and its
# workers are gone within about this; tests/test_app_sigterm.py holds it to 5 s)
SHUTDOWN_GRACE_S = 3.0

log = logging.getLogger(__name__)
# The login page's note: Gradio's form says only "Incorrect Credentials", and nothing when the limit answers 429
LOGIN_NOTE = (
    "After {limits.per_client} failed logins from one address (or {limits.per_user} for one user) within "
    "{limits.window_s:g} s, logins are refused for a while."
)


def parse_args(argv: Sequence[str] | None = None, prog: str = "uats-studio") -> argparse.Namespace:
    """The launcher's options: where it serves and stores, then _offers, _access and _limits."""
    p = argparse.ArgumentParser(prog=prog, description="UATS Studio: watch PRM-guided tree search and its uncertainty")
    p.add_argument(
        "--host",
        default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
        help="address to listen on (default 127.0.0.1, or $GRADIO_SERVER_NAME)",
    )
    p.add_argument(
        "--port",
        type=int,
        default=int(os.environ.get("GRADIO_SERVER_PORT", "7860")),
        help="port (default 7860, or $GRADIO_SERVER_PORT)",
    )
    p.add_argument("--db", default=str(DEFAULT_DB), help="run log: SQLite file path or SQLAlchemy URL")
    p.add_argument(
        "--export-dir", default=str(DEFAULT_EXPORTS), help="folder that exports are written to (and only there)"
    )
    p.add_argument(
        "--reports-dir",
        default=str(DEFAULT_REPORTS),
        help="folder whose SQLite files (.db, .sqlite) the Reports tab lists and opens read-only",
    )
    p.add_argument(
        "--ledgers-dir",
        default=str(DEFAULT_LEDGERS),
        help="folder whose results ledgers (sub-folders with results.csv.gz) the Reports tab offers",
    )
    p.add_argument(
        "--max-budget",
        type=int,
        default=None,
        help="largest budget N a search may ask for (default 1024, or $UATS_MAX_BUDGET)",
    )
    p.add_argument("--workers", type=int, default=2, help="searches running at once; more wait as 'queued'")
    _offers(p)
    _access(p)
    _limits(p)
    p.add_argument("--log-level", default="INFO")
    return p.parse_args(argv)


def _offers(p: argparse.ArgumentParser) -> None:
    """The models, problem sets, policy servers and import folders a client may pick from (never a path)."""
    p.add_argument(
        "--models-dir",
        action="append",
        default=[],
        metavar="DIR",
        help="offer each sub-folder of DIR holding a config.json as a policy and PRM (repeatable)",
    )
    p.add_argument(
        "--datasets-dir",
        action="append",
        default=[],
        metavar="DIR",
        help="offer each .jsonl file of DIR as a problem set (repeatable)",
    )
    p.add_argument(
        "--allow-hub-cache",
        action="store_true",
        help="offer the hub models already in the local Hugging Face cache (hf:<id>)",
    )
    p.add_argument(
        "--policy-server",
        action="append",
        default=[],
        metavar="NAME=URL",
        help="offer the policy an OpenAI-compatible server at URL serves (vllm serve, SGLang, llama.cpp) as "
        "'NAME (server)'; clients pick the name, never a URL (repeatable)",
    )
    p.add_argument(
        "--imports-dir",
        action="append",
        default=[],
        metavar="DIR",
        help="offer the .json, .jsonl and .parquet files of DIR (runs of llm-reasoners, search-and-learn, "
        f"TreeQuest) to the Runs tab's import (repeatable; default {DEFAULT_IMPORTS}, listed again on "
        "Refresh)",
    )


def _access(p: argparse.ArgumentParser) -> None:
    """Who may reach the app: logins, host names, other origins, the reverse proxy."""
    p.add_argument(
        "--auth-file",
        help="file of user:password lines: the app asks for a login (or set $UATS_AUTH); "
        "required with a --host other machines can reach",
    )
    p.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a host name clients reach the app by besides loopback and --host, e.g. the reverse proxy's "
        "public name (repeatable); requests for any other Host get 400",
    )
    p.add_argument(
        "--allowed-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="another origin (scheme://host[:port]) whose pages may call the app (repeatable); by default "
        "only the app's own pages may",
    )
    p.add_argument(
        "--trusted-proxy",
        action="append",
        default=[],
        metavar="ADDR",
        help="the IP address a reverse proxy connects from (repeatable): only its X-Forwarded-* headers "
        "count; without one, the app ignores them all",
    )


def _limits(p: argparse.ArgumentParser) -> None:
    """What the server keeps and runs at most: exports, queued and paused jobs."""
    from .views.export import ExportQuota

    p.add_argument(
        "--export-quota-mb",
        type=float,
        default=ExportQuota().total_bytes / 2**20,
        help="exports kept at most, in MB; the oldest are deleted to make room (default %(default)g)",
    )
    p.add_argument(
        "--export-session-quota-mb",
        type=float,
        default=ExportQuota().owner_bytes / 2**20,
        help="of them, per user (or browser session without a login) (default %(default)g)",
    )
    from .jobs.pool import PoolLimits  # here: --help needs no database layer

    d = PoolLimits()
    p.add_argument(
        "--max-queued",
        type=int,
        default=d.max_queued,
        help=f"jobs (searches, shadow scoring) that may wait on this server (default {d.max_queued})",
    )
    p.add_argument(
        "--max-queued-per-session",
        type=int,
        default=d.max_queued_per_session,
        help=f"of them, per user: all of a signed-in user's tabs together; per browser session "
        f"without a login (default {d.max_queued_per_session})",
    )
    p.add_argument(
        "--max-paused",
        type=int,
        default=d.max_paused,
        help=f"paused runs that may hold a worker, besides --workers (default {d.max_paused})",
    )
    p.add_argument(
        "--pause-timeout-s",
        type=float,
        default=d.pause_timeout_s,
        help=f"a run paused this long without a step ends cancelled (default {d.pause_timeout_s:g})",
    )


class Refused(Exception):
    """A flag or folder the launcher refuses: one line (its message, after 'error: '), exit code 2, nothing
    started."""


@dataclass
class Studio:
    """What start() made, serve() serves and shut_down() ends."""

    store: Any
    pool: Any
    demo: Any
    credentials: Any
    launch: dict[str, Any]  # the rest of Blocks.launch's arguments: the front door, the login note


def main(argv: Sequence[str] | None = None, prog: str = "uats-studio") -> int:
    args = parse_args(argv, prog)
    logging.basicConfig(
        level=getattr(logging, str(args.log_level).upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # works offline; no phoning home
    # uvicorn takes X-Forwarded-For and -Proto from these addresses only (its default trusts 127.0.0.1: any local
    # process could then pose as any client to the login limit)
    os.environ["FORWARDED_ALLOW_IPS"] = ",".join(args.trusted_proxy)
    try:
        studio = start(args)
    except Refused as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    code, served = 0, False
    try:
        code, served = serve(studio, args)
    finally:
        shut_down(studio, code)
    if served and argv is None:
        # the program's own run (argv from its command line; a call with argv, as the tests make, returns): everything
        # the app holds is closed, and the interpreter's own teardown (freeing torch and Gradio, a daemon thread left
        # in the web server) took 50 s and more on a loaded machine, past `docker stop`'s grace
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def _check_numbers(args: argparse.Namespace) -> None:
    """Refused: a count, a timeout, a budget or a quota out of range (nan included), before anything is opened."""
    for name in ("workers", "max_queued", "max_queued_per_session", "max_paused"):
        if getattr(args, name) < 1:
            raise Refused(f"{name.replace('_', '-')}: must be an integer >= 1")
    if not args.pause_timeout_s > 0:  # also refuses nan
        raise Refused("pause-timeout-s: must be a number of seconds > 0")
    if args.max_budget is not None:
        if args.max_budget < 1:
            raise Refused("max-budget: must be an integer >= 1")
        from uats_core.limits import set_max_budget

        set_max_budget(args.max_budget)  # in the environment: the spawned workers validate with it too
    for name in ("export_quota_mb", "export_session_quota_mb"):
        if not getattr(args, name) > 0 or getattr(args, name) == float("inf"):  # also refuses nan
            raise Refused(f"{name.replace('_', '-')}: must be a number of megabytes > 0")


def _server_choices(args: argparse.Namespace) -> Any:
    """What a client may load (ui/choices.py), fixed now (the import folders' files are listed again on Refresh)."""
    from uats_core.config import ConfigError

    from .choices import server_choices

    imports_dirs = args.imports_dir or [DEFAULT_IMPORTS]
    if not args.imports_dir:
        try:  # a local app has its imports folder from the start: a file put there is offered on Refresh
            DEFAULT_IMPORTS.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            log.warning(
                "imports-dir: cannot create %s (%s); the Runs tab offers no files", DEFAULT_IMPORTS, exc.strerror
            )
            imports_dirs = []
    try:
        return server_choices(
            args.models_dir, args.datasets_dir, args.allow_hub_cache, args.policy_server, imports_dirs
        )
    except ConfigError as exc:
        raise Refused(str(exc)) from None


def start(args: argparse.Namespace) -> Studio:
    """Check the flags, open the run log and the export folder, start the worker pool and build the page; Refused
    (nothing started) for a bad flag, folder or run log."""
    _check_numbers(args)
    from .auth import AuthError, LoginLimiter, check_exposure, load_credentials
    from .web_guard import web_policy

    try:
        credentials = load_credentials(args.auth_file)
        check_exposure(args.host, credentials)
        policy = web_policy(args.host, args.allowed_host, args.allowed_origin, args.trusted_proxy)
    except AuthError as exc:
        raise Refused(str(exc)) from None
    reports_dir = Path(args.reports_dir)
    if reports_dir.exists() and not reports_dir.is_dir():
        raise Refused(f"reports-dir: {reports_dir} is a file; give a folder of evaluation run logs")
    choices = _server_choices(args)

    from storage import RunStore, StorageError

    try:
        store = RunStore(args.db)
    except StorageError as exc:
        raise Refused(str(exc)) from None
    export_dir = Path(args.export_dir)
    try:
        export_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise Refused(f"export-dir: cannot create {export_dir} ({exc.strerror}); give a writable folder") from None

    from storage.batches import mark_dead_batch_jobs
    from storage.shadow import mark_dead_shadow_jobs

    from .app_ui import build_demo, launch_kwargs
    from .jobs.pool import PoolLimits, WorkerPool, default_pair_request
    from .views.export import ExportQuota

    # a server or worker gone (kill -9)
    dead = store.mark_dead_workers() + mark_dead_shadow_jobs(store) + mark_dead_batch_jobs(store)
    if dead:
        log.warning(
            "marked %d job(s) failed whose server or worker had died: %s", len(dead), ", ".join(d[:8] for d in dead)
        )
    limits = PoolLimits(
        max_workers=args.workers,
        max_paused=args.max_paused,
        max_queued=args.max_queued,
        max_queued_per_session=args.max_queued_per_session,
        pause_timeout_s=args.pause_timeout_s,
    )
    pool = WorkerPool(store, max_workers=args.workers, prewarm=default_pair_request(), limits=limits)
    quota = ExportQuota(
        owner_bytes=int(args.export_session_quota_mb * 2**20), total_bytes=int(args.export_quota_mb * 2**20)
    )
    demo = build_demo(store, pool, export_dir, reports_dir, choices, Path(args.ledgers_dir), export_quota=quota)
    logins = LoginLimiter()
    login_note = {"auth_message": LOGIN_NOTE.format(limits=logins.limits)} if credentials else {}
    return Studio(store, pool, demo, credentials, {**login_note, **launch_kwargs(export_dir, policy, logins)})


def serve(studio: Studio, args: argparse.Namespace) -> tuple[int, bool]:
    """Serve until a SIGTERM or Ctrl-C: (exit code, whether the server had started). A port taken or a server that
    never answered is one line and code 1."""
    from uats_core.interrupts import sigterm_as_interrupt

    from .app_ui import QUEUE_KWARGS

    demo, served = studio.demo, False
    try:
        with sigterm_as_interrupt():  # `kill` shuts down like Ctrl-C: running searches end 'cancelled'
            demo.queue(**QUEUE_KWARGS).launch(
                server_name=args.host,
                server_port=args.port,
                auth=studio.credentials,
                prevent_thread_lock=True,
                **studio.launch,
            )
            served = bool(getattr(demo, "is_running", False))
            wait_until_answering(demo.local_url or f"http://127.0.0.1:{args.port}/")
            serve_until_stopped(demo)
    except KeyboardInterrupt:
        pass
    except (StartupError, OSError, ValueError) as exc:  # the port taken, a server that never answered: fail whole
        print(f"error: start: {exc}", file=sys.stderr)
        return 1, served
    return 0, served


def shut_down(studio: Studio, code: int) -> None:
    """Cancel the running searches (SHUTDOWN_GRACE_S to end 'cancelled', then their workers are ended), stop the
    server and close the run log. After a failed start (`code` not 0) the server is stopped before the pool."""
    log.info(
        "shutting down: cancelling running searches (%g s to end 'cancelled', then their workers are "
        "ended and the runs marked)",
        SHUTDOWN_GRACE_S,
    )
    demo = studio.demo
    # the server stops answering in its own (daemon) thread while the workers stop: the process ends when both
    # did, or the server's thread is left to die with it
    if getattr(demo, "server", None) is not None:
        if code:  # a failed start: nothing may be left answering on the port
            demo.close()
        else:
            threading.Thread(target=demo.close, kwargs={"verbose": False}, daemon=True).start()
    studio.pool.shutdown(cancel=True, timeout_s=SHUTDOWN_GRACE_S)
    from .views.export import stop_kaleido

    stop_kaleido()
    studio.store.close()
    log.info("shut down")


def serve_until_stopped(demo: Any) -> None:
    """Wait while the server runs; a SIGTERM or Ctrl-C ends the wait (KeyboardInterrupt). Not Gradio's block_thread,
    which on that interrupt joins its server, 5 s while a page is open."""
    while demo.is_running:
        time.sleep(0.2)


class StartupError(RuntimeError):
    """The server was started but never answered: the launcher stops it and the pool, and exits 1."""


START_TIMEOUT_S = 180.0  # a loaded machine (warm workers loading their models on every core) answers late, not never
START_PROBE_S = 15.0


def wait_until_answering(url: str, timeout_s: float = START_TIMEOUT_S) -> None:
    """Return once the server at `url` answers any HTTP status; StartupError after `timeout_s`. Replaces Gradio's
    own check (one HEAD with a 3 s timeout: 3 of 33 starts died in it while the warm workers loaded)."""
    import time

    import httpx

    deadline = time.monotonic() + timeout_s
    last = "no answer"
    while time.monotonic() < deadline:
        try:
            httpx.head(url, timeout=min(START_PROBE_S, max(0.1, deadline - time.monotonic())))
            return
        except httpx.HTTPError as exc:
            last = f"{type(exc).__name__}"
            time.sleep(0.5)
    raise StartupError(f"the server at {url} did not answer within {timeout_s:g} s ({last}); nothing was started")


if __name__ == "__main__":
    sys.exit(main())
