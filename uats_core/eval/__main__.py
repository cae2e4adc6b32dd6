"""`python -m uats_core.eval`: a launcher; the harness's command line lives in uats_core.entrypoints.eval.cli."""
import sys

from uats_core.entrypoints.eval.cli import main

sys.exit(main())
