"""Writing released synthetic sets: long sets in chunks, and releases straight from a file.

:func:`synthesize_file` is :func:`dpcore.synthesize` for tables too long for pandas: it counts
on an engine (:mod:`dpcore.counting`), releases from the count table and writes each set in
chunks (:mod:`dpcore.output.chunks`; docs/engines.md).

Privacy: writing is post-processing of released codes; a release from a file spends exactly
ε as :func:`dpcore.synthesize` does (docs/privacy-model.md).
"""
from __future__ import annotations


def synthesize_file(*args, **kwargs):
    """See :func:`dpcore.output.file_release.synthesize_file`."""
    # imported on call: file_release imports the API, which imports this package's users
    from dpcore.output.file_release import synthesize_file as run

    return run(*args, **kwargs)


__all__ = ["synthesize_file"]
