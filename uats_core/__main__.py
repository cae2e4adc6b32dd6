"""`python -m uats_core search|runs|show|doctor`: a launcher; the command line lives in uats_core.entrypoints.cli."""
import sys

from uats_core.entrypoints.cli import main

sys.exit(main())
