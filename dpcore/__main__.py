"""``python -m dpcore``: see :mod:`dpcore.cli`."""
import sys

from .cli import main

sys.exit(main())
