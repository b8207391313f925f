"""``python -m model``: the core's command line (train, translate, evaluate) without the GUI."""

import sys

from .cli import main

sys.exit(main())
