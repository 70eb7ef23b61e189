"""``python -m clirbench``: the ``clirbench`` command."""
import sys

from .cli import main

sys.exit(main())
