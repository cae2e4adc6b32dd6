"""How the command line refuses bad input: one line `error: <field>: ...` on stderr, exit code 2, no traceback."""

from __future__ import annotations

import pytest


def one_line_error(capsys: pytest.CaptureFixture, rc: int, field: str) -> str:
    """The one error line of a refused command (asserting its shape); `rc`: the command's exit code."""
    out, err = capsys.readouterr()
    assert rc == 2, (rc, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {field}: "), err
    assert "Traceback" not in err + out
    return lines[0]
