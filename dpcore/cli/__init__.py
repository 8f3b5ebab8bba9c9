"""The command line: ``python -m dpcore synth|preview|domain|evaluate|sweep|report|budget|…``.

:mod:`.commands` builds the parser and runs a command; :mod:`.metrics`, :mod:`.survey` and
:mod:`.report` add their subcommands. Errors exit with status 2 and one line.
"""
from dpcore.cli.commands import build_parser, main

__all__ = ["build_parser", "main"]
