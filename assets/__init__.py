"""The shipped model files (under models/) and problem sets (under data/), as package data:
`importlib.resources.files("assets") / "models"` finds them in a checkout and in an installed wheel alike
(uats_core.paths.ASSETS, uats_core.paths.DATA)."""
