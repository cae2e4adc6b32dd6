"""Signing in to the app, and where it may listen. Credentials come from a file (`--auth-file`) or the
environment ($UATS_AUTH), never from the command line, which other users of the machine can read (ps).
Both hold `user:password` entries, one a line (the password is everything after the first colon).

Without credentials the app listens on a loopback address only: anyone who can reach the port can start
searches (minutes of a GPU each), so an address other machines can reach needs a login. Failed logins are
limited per client and per user (LoginLimiter), so a password cannot be guessed at the server's speed."""

from __future__ import annotations

import ipaddress
import os
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

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
            raise AuthError(
                "auth-file", f"cannot read {str(path)!r} ({why}); give a readable file of user:password lines"
            ) from None
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
        raise AuthError(
            "host",
            f"{host} can be reached from other machines, and the app has no login; give "
            f"--auth-file FILE (user:password lines) or set ${ENV_AUTH}, or listen on 127.0.0.1 "
            "(docs/app.md, Security)",
        )


@dataclass(frozen=True)
class LoginLimits:
    """How many failed logins count as guessing, within `window_s` seconds: from one client address, and for one
    user name from anywhere (an attacker spreading guesses over many addresses still meets the second)."""

    per_client: int = 10
    per_user: int = 20
    window_s: float = 300.0


class LoginLimiter:
    """Failed logins in a sliding window, per client address and per user name (ui/web_guard.py asks it before
    Gradio's /login checks a password, and tells it how the check went). A key at its limit is refused until its
    oldest failure leaves the window; that wait is what `retry_after` returns. Bounded memory: at most `max_keys`
    keys are kept, the least recently failed dropped first."""

    def __init__(
        self, limits: LoginLimits = LoginLimits(), clock: Callable[[], float] = time.monotonic, max_keys: int = 10_000
    ) -> None:
        self.limits = limits
        self._clock = clock
        self._max_keys = max_keys
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()
        self._lock = threading.Lock()

    def _recent(self, key: str, now: float) -> deque[float]:
        times = self._failures.get(key, deque())
        while times and times[0] <= now - self.limits.window_s:
            times.popleft()
        return times

    def retry_after(self, client: str, user: str) -> float | None:
        """Seconds until `user` may try again from `client`; None when a try is allowed now."""
        now = self._clock()
        waits = []
        with self._lock:
            for key, limit in ((f"client:{client}", self.limits.per_client), (f"user:{user}", self.limits.per_user)):
                times = self._recent(key, now)
                if len(times) >= limit:
                    waits.append(times[len(times) - limit] + self.limits.window_s - now)
        return max(waits) if waits else None

    def failed(self, client: str, user: str) -> int:
        """Record a failed login; the number of failures of `user` now in the window."""
        now = self._clock()
        with self._lock:
            counts = []
            for key in (f"client:{client}", f"user:{user}"):
                times = self._recent(key, now)
                times.append(now)
                self._failures[key] = times
                self._failures.move_to_end(key)
                counts.append(len(times))
            while len(self._failures) > self._max_keys:
                self._failures.popitem(last=False)
        return counts[1]

    def succeeded(self, user: str) -> None:
        """A correct password: the user's failures are forgotten (the client's stay: a valid login of one's own
        must not buy more guesses at another's)."""
        with self._lock:
            self._failures.pop(f"user:{user}", None)
