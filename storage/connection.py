"""Connecting to a run log: where it lives (a --db value parsed and checked without creating anything), opening
it (the schema created or brought up to date, SQLite's settings for several processes sharing one file, read-only
opening for evaluation databases), and whether the process that writes or registered a run is still there.

A bare path is a SQLite file; anything with '://' is an SQLAlchemy URL. `check_location` lets an entry point
refuse a location that cannot work before it spends minutes loading models; `RunStore` opens it afterwards with
`open_engine` (or `open_read_only_engine`: no table creation, no column upgrade, no journal-mode switch, no new
file; SQLite through a `mode=ro` URI with `query_only` set, so even a bug in a reader cannot write).

A server is recorded as `host|pid|start token`: the token (the boot id and the process's start time, from
/proc) tells a restarted server that got the same pid (pid 1 in a container) from the one that registered
the run."""

from __future__ import annotations

import errno
import logging
import os
import shutil
import socket
import sqlite3
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import sqlalchemy as sa
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.pool import StaticPool

from uats_core.errors import FieldError

from .migrations import migrate, read_as_migrated

log = logging.getLogger(__name__)


class StorageError(FieldError):
    """Bad database input or a missing record; `.field` names what to fix ("db", "run", "node", ...)."""

    def __init__(self, message: str, field: str = "db") -> None:
        super().__init__(field, message)


def display(url: URL) -> str:
    return url.render_as_string(hide_password=True)


def display_location(url: URL) -> str:
    """A run log's location for people: the file path for SQLite, else the URL with its password hidden."""
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        return str(url.database)
    return display(url)


# The databases a run log lives in: the recorder's and the fast reader's statements are written for these two.
DIALECTS = ("sqlite", "postgresql")
POSTGRES_DRIVER = "psycopg"  # the `postgres` extra's driver: a plain postgresql:// URL gets it


def parse_location(spec: str) -> URL:
    """A --db value as an SQLAlchemy URL: a bare path becomes an absolute sqlite:/// URL, a postgresql:// URL that
    names no driver gets psycopg's; a database other than SQLite and PostgreSQL is refused."""
    if "://" not in spec:
        return URL.create("sqlite", database=str(Path(spec).expanduser().absolute()))
    try:
        url = make_url(spec)
    except Exception as exc:  # sqlalchemy.exc.ArgumentError, ValueError for bad ports
        raise StorageError(
            f"cannot parse database URL {spec!r} ({exc}); use a file path or a URL like "
            "sqlite:///runs/uats.db or postgresql://user@host/dbname"
        ) from None
    backend = url.get_backend_name()
    if backend not in DIALECTS:
        raise StorageError(
            f"{display(url)!r}: the run log lives in SQLite (a file path) or PostgreSQL "
            f"(postgresql://user@host/dbname), not {backend}"
        )
    if backend == "postgresql" and "+" not in url.drivername:
        url = url.set(drivername=f"postgresql+{POSTGRES_DRIVER}")
    return url


def sqlite_file(spec: str) -> Path | None:
    """The SQLite file a --db value names (a path or a sqlite:/// URL); None for other databases and memory,
    and for a URL that does not parse (RunStore reports that with its own message)."""
    if "://" not in spec:
        return Path(spec).expanduser()
    try:
        url = make_url(spec)
    except Exception:  # noqa: BLE001
        return None
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return None
    return Path(url.database).expanduser()


def check_location(spec: str) -> None:
    """Refuse, creating nothing, what RunStore(spec) could not open: a bad URL, a dialect or driver that does not
    load, or an SQLite path that is a folder, lies under a file, or would go in a folder that cannot be written."""
    url = parse_location(spec)
    try:
        url.get_dialect()  # imports the dialect and its driver; connects to nothing
    except Exception as exc:  # NoSuchModuleError (unknown dialect), ImportError (driver missing)
        raise StorageError(
            f"cannot use database URL {display(url)!r}: {exc.__class__.__name__}: {exc}; "
            "check the dialect name and that its driver is installed"
        ) from None
    db = url.database or ""
    if url.get_backend_name() != "sqlite":
        _check_reachable(url)
        return
    if db in ("", ":memory:") or db.startswith("file::memory:"):
        return
    path = Path(db).absolute()
    if path.is_dir():
        raise StorageError(f"{str(path)!r} is a folder; give a file path such as {str(path / 'uats.db')!r}")
    parent = path.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise StorageError(f"{str(path)!r} lies under {str(parent)!r}, which is a file; choose another location")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise StorageError(f"cannot create {str(path)!r}: {str(parent)!r} is not writable; choose another location")


CONNECT_TIMEOUT_S = 10  # a server that does not answer is reported within this, not after a model load


def _check_reachable(url: URL) -> None:
    """Connect to a database server once and leave (no statement runs, nothing is created), so a wrong password,
    host or database name is reported before a model loads."""
    args = {"connect_timeout": CONNECT_TIMEOUT_S} if url.get_backend_name() == "postgresql" else {}
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool, connect_args=args)
    try:
        with engine.connect():
            pass
    except Exception as exc:  # OperationalError (refused, authentication, no such database), driver errors
        why = " ".join(str(getattr(exc, "orig", None) or exc).split()) or exc.__class__.__name__
        raise StorageError(
            f"cannot connect to {display(url)!r}: {why}; check the host, user, password and database name"
        ) from None
    finally:
        engine.dispose()


# ---------------------------------------------------------------- opening
SQLITE_BUSY_TIMEOUT_MS = 30_000  # several workers share one file; a writer waits its turn, never fails


DISK_FULL = ("database or disk is full", "no space left on device", "could not extend file")


FULL_BELOW_BYTES = 1 << 20  # a disk with less room than this is full to SQLite: it cannot grow its WAL and -shm


def is_disk_full(exc: BaseException, sqlite_path: Path | None = None) -> bool:
    """SQLite's SQLITE_FULL, ENOSPC, or PostgreSQL's disk_full (SQLSTATE 53100); and SQLite's "disk I/O error" on a
    disk that has no room left (an existing run log whose WAL or shared-memory file cannot grow says only that)."""
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return True
    text = str(exc).lower()
    if any(d in text for d in DISK_FULL) or getattr(exc, "sqlstate", None) == "53100":
        return True
    if "disk i/o error" in text and sqlite_path is not None:
        try:
            return shutil.disk_usage(sqlite_path.parent).free < FULL_BELOW_BYTES
        except OSError:
            return False
    return False


def disk_full_message(where: str, exc: BaseException) -> str:
    return (
        f"the run log at {where} is full ({exc}); free space on its disk and try again (runs keep what was "
        "written before)"
    )


def disk_full_errors(engine: Engine, where: str, sqlite_path: Path | None = None) -> None:
    """Turn a write that found the disk full into one StorageError(field='db') that says what to do, so the
    CLI prints one line and the app's pool can end the run with that reason; what was committed stays."""

    def handle(ctx: Any) -> None:
        if is_disk_full(ctx.original_exception, sqlite_path):
            raise StorageError(disk_full_message(where, ctx.original_exception)) from None

    sa.event.listen(engine, "handle_error", handle)


def sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    try:
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
        while True:
            try:
                cur.execute("PRAGMA journal_mode=WAL")
                break
            except sqlite3.OperationalError as exc:
                # Switching a new file to WAL takes a lock SQLite does not wait for (no busy handler), so a
                # second process opening the same new run log would fail at once: wait our turn here.
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.02)
        mode = cur.fetchone()
        if mode and str(mode[0]).lower() not in ("wal", "memory"):
            # e.g. a network filesystem without shared memory: still correct, but readers may block writers
            log.warning("SQLite refused WAL mode (journal_mode=%s); live reading may stall", mode[0])
        cur.execute("PRAGMA synchronous=NORMAL")
    finally:
        cur.close()


def open_engine(url: URL) -> Engine:
    """An engine on the run log at `url` with its tables in place, creating the SQLite file (and its folders)
    if needed. StorageError(field="db") naming the URL and the fix when it cannot be opened, and then no file
    or folder is left behind that this call created."""
    created: list[Path] = []  # files/folders made here, removed again if opening fails
    sqlite_path: Path | None = None
    kwargs: dict[str, Any] = {}
    memory = False
    if url.get_backend_name() == "sqlite":
        db = url.database or ""
        memory = db in ("", ":memory:") or db.startswith("file::memory:")
        if memory:
            # one shared connection, or every pooled connection would see its own empty database
            kwargs.update(poolclass=StaticPool, connect_args={"check_same_thread": False})
        else:
            sqlite_path = Path(db).absolute()
            _prepare_sqlite_file(sqlite_path, created)
            kwargs["connect_args"] = {"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}
    try:
        engine = sa.create_engine(url, **kwargs)
    except Exception as exc:  # NoSuchModuleError (unknown dialect), ImportError (driver missing)
        _remove(created)
        raise StorageError(
            f"cannot use database URL {display(url)!r}: {exc.__class__.__name__}: {exc}; "
            "check the dialect name and that its driver is installed"
        ) from None
    if url.get_backend_name() == "sqlite":
        sa.event.listen(engine, "connect", sqlite_pragmas)
    where = repr(str(sqlite_path)) if sqlite_path else repr(display(url))
    disk_full_errors(engine, where, sqlite_path)
    try:
        migrate(engine)
    except Exception as exc:
        engine.dispose()
        _remove(created)
        if isinstance(exc, StorageError):  # the disk is full (disk_full_errors said so)
            raise
        if is_disk_full(getattr(exc, "orig", exc), sqlite_path):
            raise StorageError(disk_full_message(where, getattr(exc, "orig", exc))) from None
        msg = str(getattr(exc, "orig", exc)) or exc.__class__.__name__
        where = f"file {str(sqlite_path)!r}" if sqlite_path else f"URL {display(url)!r}"
        raise StorageError(
            f"cannot open or create the run log at {where}: {msg}; give a writable path to a "
            "SQLite file (or a new one) or a reachable database URL"
        ) from None
    log.info("run log at %s", "memory" if memory else display(url))
    return engine


def _prepare_sqlite_file(path: Path, created: list[Path]) -> None:
    """Make the folders `path` needs, noting in `created` what open_engine removes again if opening fails."""
    if path.is_dir():
        raise StorageError(f"{str(path)!r} is a folder; give a file path such as {str(path / 'uats.db')!r}")
    missing: list[Path] = []
    parent = path.parent
    while not parent.exists():
        missing.append(parent)
        parent = parent.parent
    try:
        for folder in reversed(missing):
            folder.mkdir()
            created.append(folder)
    except OSError as exc:
        _remove(created)
        raise StorageError(
            f"cannot create the folder for {str(path)!r} ({exc.strerror}); give a path in a writable folder"
        ) from None
    if not path.exists():
        created.append(path)
        for suffix in ("-wal", "-shm", "-journal"):
            created.append(path.with_name(path.name + suffix))
    elif not os.access(path, os.R_OK | os.W_OK):
        raise StorageError(f"{str(path)!r} is not readable and writable; fix its permissions or choose another file")


def _remove(created: list[Path]) -> None:
    for p in reversed(created):
        try:
            if p.is_dir():
                p.rmdir()
            elif p.exists():
                p.unlink()
        except OSError:
            log.warning("could not remove %s after a failed open", p)
    created.clear()


_REQUIRED_TABLES = ("runs", "nodes", "iterations")


def _ro_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    try:
        cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        read_as_migrated(dbapi_conn)  # a run log of an earlier version reads as one migrated
        cur.execute("PRAGMA query_only=ON")
    finally:
        cur.close()


def open_read_only_engine(url: URL) -> Engine:
    """A read-only engine on an existing SQLite run log (an evaluation database picked in the Reports tab):
    its readers work; any write fails with SQLite's 'readonly database' error. StorageError(field='db') when
    it is not a SQLite file, is missing, or is not a run log."""
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        raise StorageError(f"{display_location(url)!r} is not a SQLite file; read-only opening takes a file path")
    path = Path(str(url.database))
    if not path.is_file():
        raise StorageError(f"no file at {str(path)!r}; give an existing run log")
    uri = f"file:{quote(str(path))}?mode=ro"

    def connect() -> sqlite3.Connection:
        return sqlite3.connect(uri, uri=True, timeout=SQLITE_BUSY_TIMEOUT_MS / 1000, check_same_thread=False)

    engine = sa.create_engine("sqlite://", creator=connect)
    sa.event.listen(engine, "connect", _ro_pragmas)
    try:
        with engine.connect() as conn:
            have = set(sa.inspect(conn).get_table_names())
    except Exception as exc:  # 'file is not a database', unreadable file
        engine.dispose()
        msg = str(getattr(exc, "orig", exc)) or exc.__class__.__name__
        raise StorageError(f"cannot read {str(path)!r}: {msg}; give a run log written by this project") from None
    missing = [t for t in _REQUIRED_TABLES if t not in have]
    if missing:
        engine.dispose()
        raise StorageError(
            f"{str(path)!r} is not a run log (no table {missing[0]!r}); give a database written by "
            "uats eval ... --db PATH"
        )
    log.info("read-only run log at %s", path)
    return engine


# ---------------------------------------------------------------- liveness
def pid_alive(pid: int) -> bool:
    """True when process `pid` exists on this host (one owned by another user exists too) and has not
    exited: a zombie (exited, not yet reaped, as orphans stay where nothing reaps them) is not alive."""
    if int(pid) <= 0:  # 0 and negative ids name process groups, never one worker
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return _proc_state(int(pid)) != "Z"


def _stat_fields(pid: int) -> list[str]:
    """/proc/<pid>/stat after the command name (which may hold spaces and parentheses): the state first,
    the start time 20th; [] where /proc does not say (not Linux, or the process is gone)."""
    try:
        stat = Path(f"/proc/{int(pid)}/stat").read_text()
    except OSError:
        return []
    return stat.rsplit(")", 1)[-1].split()


def _proc_state(pid: int) -> str:
    """The state letter ('R', 'S', 'Z', ...) of process `pid`, '' where /proc does not say."""
    fields = _stat_fields(pid)
    return fields[0] if fields else ""


def start_token(pid: int) -> str:
    """'<boot id>:<start time in clock ticks>' of process `pid`, or '' where /proc does not say."""
    fields = _stat_fields(pid)
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""
    return f"{boot}:{fields[19]}" if len(fields) > 19 else ""


def this_process() -> str:
    """This process's identity, as recorded on the runs it registers."""
    return f"{socket.gethostname()}|{os.getpid()}|{start_token(os.getpid())}"


def process_gone(identity: str | None) -> bool:
    """True when the process `identity` (this_process() of some earlier process) names is known to be gone:
    it ran on this host, and its pid is free or now belongs to a process started later. Unknown (another
    host, no identity recorded): False."""
    host, _, rest = (identity or "").partition("|")
    pid_text, _, token = rest.partition("|")
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if not pid_alive(pid):
        return True
    return bool(token) and start_token(pid) not in ("", token)
