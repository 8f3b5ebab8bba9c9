"""``python -m dpcore``: see :mod:`dpcore.cli.commands`."""
from dpcore.cli.commands import run

run()
