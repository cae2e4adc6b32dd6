"""Which Accept-Encoding headers get plotly.js gzip-compressed (ui/static_asset.py), as RFC 9110 §12.5.3 reads them."""

from __future__ import annotations

import pytest

from ui.static_asset import accepts_gzip


@pytest.mark.parametrize(
    ("header", "gzip"),
    [
        ("gzip, deflate, br, zstd", True),  # Chromium's
        ("GZIP", True),
        ("deflate, gzip;q=0.5", True),
        ("*", True),
        ("gzip;q=0", False),
        ("gzip; q=0.0", False),
        ("identity", False),
        ("", False),
        ("br", False),
        ("gzip;q=x", False),
    ],
)
def test_accepts_gzip(header: str, gzip: bool) -> None:
    assert accepts_gzip(header) is gzip
