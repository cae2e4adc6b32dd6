"""`python -m uats_core.report`: a launcher of uats_core.entrypoints.report (it reads the run log)."""
import sys

from uats_core.entrypoints.report import main

sys.exit(main())
