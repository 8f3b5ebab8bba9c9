"""``python -m dpcore``: see :mod:`dpcore.cli.main`."""
import sys

from dpcore.cli.main import main

sys.exit(main())
