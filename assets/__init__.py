"""The shipped model files (under models/), as package data: `importlib.resources.files("assets") / "models"`
finds them in a checkout and in an installed wheel alike (uats_core.paths.ASSETS)."""
