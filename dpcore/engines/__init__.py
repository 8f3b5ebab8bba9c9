"""Counting engines for long tables: DuckDB (embedded, larger than memory) and Spark (clusters).

Only the counting step reads records; every method then works from the sparse count
table (:class:`dpcore.counts.CountTable`). This package registers ``"duckdb"`` and
``"spark"`` behind :func:`dpcore.counts.count_table` (``engine=``); the back-ends are
imported only when used, so the app does not load pyspark. :func:`synthesize_file`
releases from a file path without loading the file into pandas and writes long
synthetic sets in chunks (docs/engines.md).

Privacy: counting returns TRUE counts (curator-only); the release spends exactly ε as
:func:`dpcore.synthesize` does (docs/privacy-model.md).
"""
from __future__ import annotations

from ..counts import ENGINES

ENGINE_NAMES = ("pandas", "duckdb", "spark")


def _duckdb(source, domain, **options):
    from . import duckdb_counts

    return duckdb_counts.engine(source, domain, **options)


def _spark(source, domain, **options):
    from . import spark_counts

    return spark_counts.engine(source, domain, **options)


ENGINES.setdefault("duckdb", _duckdb)
ENGINES.setdefault("spark", _spark)


def synthesize_file(*args, **kwargs):
    """See :func:`dpcore.engines.file_release.synthesize_file`."""
    from .file_release import synthesize_file as run

    return run(*args, **kwargs)


__all__ = ["ENGINE_NAMES", "synthesize_file"]
