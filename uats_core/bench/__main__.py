"""`python -m uats_core.bench`: a launcher of benchmarks.cli, from a checkout (the wheel has no benchmarks/)."""
import sys

try:
    from benchmarks.cli import main
except ModuleNotFoundError as exc:
    if exc.name != "benchmarks":
        raise
    sys.exit("error: benchmarks: the benchmarks run from a checkout of the repository (benchmarks/ is not installed); "
             "run this from its top folder")

sys.exit(main())
