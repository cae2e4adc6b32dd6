"""The run log: uats_core events -> any SQLAlchemy database (SQLite by default), and readers for the CLI and app."""

from .bounds import check_run_fields
from .connection import check_location
from .schema import RUN_LEVEL
from .store import RunRecorder, RunStore, RunVersion, StorageError, open_read_only, pid_alive, run_version_of

__all__ = [
    "check_location",
    "check_run_fields",
    "RunStore",
    "RunRecorder",
    "open_read_only",
    "StorageError",
    "RUN_LEVEL",
    "pid_alive",
    "RunVersion",
    "run_version_of",
]
