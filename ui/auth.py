"""Signing in to the app, and where it may listen. Credentials come from a file (`--auth-file`) or the
environment ($UATS_AUTH), never from the command line, which other users of the machine can read (ps).
Both hold `user:password` entries, one a line (the password is everything after the first colon).

Without credentials the app listens on a loopback address only: anyone who can reach the port can start
searches (minutes of a GPU each), so an address other machines can reach needs a login."""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from typing import Mapping

ENV_AUTH = "UATS_AUTH"


class AuthError(ValueError):
    """Bad credentials input or an exposed address without a login; `.field` names the flag to fix."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(f"{field}: {message}")


def parse_credentials(text: str, source: str) -> list[tuple[str, str]]:
    """`user:password` lines (blank lines and lines starting with # are skipped) -> [(user, password)]."""
    out: dict[str, str] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        user, sep, password = line.partition(":")
        user = user.strip()
        if not sep or not user or not password:  # the line itself is never echoed: it holds a password
            raise AuthError("auth", f"{source}, line {lineno}, is not user:password (both non-empty); fix that line")
        if user in out:
            raise AuthError("auth", f"{source}, line {lineno}: user {user!r} is listed twice; keep one line per user")
        out[user] = password
    if not out:
        raise AuthError("auth", f"{source} lists no user:password line; add one")
    return list(out.items())


def load_credentials(auth_file: str | None, environ: Mapping[str, str] | None = None) -> list[tuple[str, str]] | None:
    """The logins from --auth-file, else from $UATS_AUTH; None when neither is given (the app has no login)."""
    environ = os.environ if environ is None else environ
    if auth_file:
        path = Path(auth_file).expanduser()
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            why = getattr(exc, "strerror", None) or type(exc).__name__
            raise AuthError("auth-file", f"cannot read {str(path)!r} ({why}); give a readable file of user:password "
                                         "lines") from None
        return parse_credentials(text, str(path))
    if environ.get(ENV_AUTH, "").strip():
        return parse_credentials(environ[ENV_AUTH], f"${ENV_AUTH}")
    return None


def is_loopback(host: str) -> bool:
    """Only this machine can reach `host`: 'localhost' or a loopback address (127.0.0.0/8, ::1)."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:  # another host name: it may resolve to anything, so it is not loopback
        return False


def check_exposure(host: str, credentials: list[tuple[str, str]] | None) -> None:
    """AuthError when the app would listen where other machines reach it without a login."""
    if credentials is None and not is_loopback(host):
        raise AuthError("host", f"{host} can be reached from other machines, and the app has no login; give "
                                f"--auth-file FILE (user:password lines) or set ${ENV_AUTH}, or listen on 127.0.0.1 "
                                "(docs/app.md, Security)")
