"""A fresh PostgreSQL database for a test, on the server UATS_TEST_POSTGRES_URL names (CI's `.ci/postgres.sh` starts
one and prints its URL; locally: `export UATS_TEST_POSTGRES_URL="$(sudo bash .ci/postgres.sh)"`). The test skips
when the variable is unset; the database is dropped afterwards, so reruns and parallel runs never meet."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import sqlalchemy as sa

URL_ENV = "UATS_TEST_POSTGRES_URL"


@contextmanager
def fresh_database(purpose: str) -> Iterator[str]:
    """The URL (password included) of a new, empty database; `purpose` says in the skip message what needs it."""
    url = os.environ.get(URL_ENV)
    if not url:
        pytest.skip(
            f"{URL_ENV} is not set: no PostgreSQL to test {purpose} against (CI sets it; locally: "
            "sudo bash .ci/postgres.sh, see docs/eval.md)"
        )
    base = sa.engine.make_url(url)
    name = f"uats_test_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(
        base, isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool, connect_args={"connect_timeout": 10}
    )
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
        yield base.set(database=name).render_as_string(hide_password=False)
    finally:
        try:
            with admin.connect() as conn:  # FORCE ends autovacuum's visit too (the role is in pg_signal_backend)
                conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        finally:
            admin.dispose()
