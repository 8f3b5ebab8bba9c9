"""``python -m dpcore``: see :mod:`dpcore.cli.commands`."""
import sys

from dpcore.cli.commands import main

sys.exit(main())
