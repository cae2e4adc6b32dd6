"""`python -m uats_core.bench`: a launcher of uats_core.entrypoints.bench."""
import sys

from uats_core.entrypoints.bench import main

sys.exit(main())
