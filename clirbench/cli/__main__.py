"""``python -m clirbench.cli``: the ``clirbench`` command."""
import sys

from . import main

sys.exit(main())
