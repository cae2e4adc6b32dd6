"""`python -m uats`: the `uats` command from a checkout (uats/cli.py)."""

import sys

from uats.cli import main

sys.exit(main())
