"""``python -m crfsdca``: the command-line interface (see :mod:`crfsdca.cli`)."""

import sys

from crfsdca.cli import main

sys.exit(main())
