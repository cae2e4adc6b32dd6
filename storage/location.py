"""Where a run log lives: parsing a --db value, and checking it without creating anything.

A bare path is a SQLite file; anything with '://' is an SQLAlchemy URL. `check_location` lets an entry point
refuse a location that cannot work before it spends minutes loading models; `RunStore` opens it afterwards."""

from __future__ import annotations

import os
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import URL, make_url

from uats_core.errors import FieldError


class StorageError(FieldError):
    """Bad database input or a missing record; `.field` names what to fix ("db", "run", "node", ...)."""

    def __init__(self, message: str, field: str = "db") -> None:
        super().__init__(field, message)


def display(url: URL) -> str:
    return url.render_as_string(hide_password=True)


def parse_location(spec: str) -> URL:
    """A --db value as an SQLAlchemy URL (a bare path becomes an absolute sqlite:/// URL)."""
    if "://" not in spec:
        return URL.create("sqlite", database=str(Path(spec).expanduser().absolute()))
    try:
        return make_url(spec)
    except Exception as exc:  # sqlalchemy.exc.ArgumentError, ValueError for bad ports
        raise StorageError(f"cannot parse database URL {spec!r} ({exc}); use a file path or a URL like "
                           "sqlite:///runs/uats.db or postgresql+psycopg://user@host/dbname") from None


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
        raise StorageError(f"cannot use database URL {display(url)!r}: {exc.__class__.__name__}: {exc}; "
                           "check the dialect name and that its driver is installed") from None
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
        raise StorageError(f"cannot connect to {display(url)!r}: {why}; check the host, user, password and "
                           "database name") from None
    finally:
        engine.dispose()
