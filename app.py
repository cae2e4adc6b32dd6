"""UATS Studio: `python app.py` serves the workbench at http://127.0.0.1:7860 (offline, embedded world).

Flags: --host/--port (Gradio's GRADIO_SERVER_NAME / GRADIO_SERVER_PORT are respected when the flags are
absent), --db (a SQLite path or an SQLAlchemy URL; default runs/uats.db in the project), --export-dir
(default exports/ in the project), --reports-dir (a folder of evaluation run logs the Reports tab may open,
read-only; default reports/ in the project), --ledgers-dir (results ledgers the Reports tab offers; default
results/ in the project), --workers (searches running at once), --auth-file (user:password
lines, or $UATS_AUTH: a login, required off loopback). A launcher: the app
starts in ui/launch.py, which the installed console script `uats-studio` runs too."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ui import launch
from ui.launch import DEFAULT_DB, DEFAULT_EXPORTS, DEFAULT_REPORTS, PROJECT  # noqa: F401 - the project's folders


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    return launch.parse_args(argv, prog="app.py")


def main(argv: Sequence[str] | None = None) -> int:
    return launch.main(argv, prog="app.py")


if __name__ == "__main__":
    sys.exit(main())
