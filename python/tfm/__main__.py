"""`python -m tfm ...`: the `tfm` command (tfm/_cli.py)."""
import sys

from ._cli import main

sys.exit(main())
