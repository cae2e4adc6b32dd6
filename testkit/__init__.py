"""Test support shared by the tests (tests/) and the benchmarks (benchmarks/): named test doubles, synthetic runs,
the app served in-process and Chromium on it, files of other tools at scale. Neither of those folders imports the
other (tests/test_import_map.py); the wheel leaves this folder out."""
