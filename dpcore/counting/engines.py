"""Where a count table is computed: pandas in memory, or DuckDB / Spark on a file.

:func:`count_table` dispatches on ``engine``; the SQL back-ends are imported only when used,
so the app and the pandas path never load duckdb or pyspark (docs/engines.md).

Privacy: TRUE counts, curator-only (docs/privacy-model.md).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dpcore.counting.count_table import CountTable
from dpcore.errors import OptionError

__all__ = ["ENGINES", "ENGINE_NAMES", "count_table"]


def _pandas_engine(source, domain, curator: dict | None = None, **options) -> CountTable:
    import pandas as pd

    if options:
        raise OptionError("engine 'pandas' takes no option(s) "
                          f"{', '.join(sorted(options))} (they are for duckdb/spark)")
    if curator is not None and isinstance(source, pd.DataFrame):
        curator["clamped_records"] = domain.clamped_counts(source)  # CURATOR-ONLY, NOT DP
    X = domain.encode(source) if isinstance(source, pd.DataFrame) else np.asarray(source)
    return CountTable.from_codes(X, domain.shape)


def _duckdb_engine(source, domain, **options) -> CountTable:
    # imported only when used: the app and the pandas path never load duckdb
    from dpcore.counting import duckdb_engine

    return duckdb_engine.engine(source, domain, **options)


def _spark_engine(source, domain, **options) -> CountTable:
    # imported only when used: loading pyspark costs seconds and a JVM
    from dpcore.counting import spark_engine

    return spark_engine.engine(source, domain, **options)


#: The engines a release can count on (``--engine``).
ENGINE_NAMES = ("pandas", "duckdb", "spark")
#: Backends that turn a source into a :class:`CountTable` (``numpy`` is the pandas path on codes).
ENGINES: dict[str, Callable] = {"pandas": _pandas_engine, "numpy": _pandas_engine, "duckdb": _duckdb_engine,
                                "spark": _spark_engine}


def count_table(source, domain, engine: str = "pandas", **options) -> CountTable:
    """The sparse count table of ``source`` (a DataFrame or integer codes; a file path for
    ``"duckdb"`` and ``"spark"``) over ``domain``.
    ``options`` go to the engine (``memory_limit``, ``spark_master``, ...; ``curator``: a dict
    that gets ``"clamped_records"``, the records clamped into end bins per numeric column, computed
    by the engine: CURATOR-ONLY, NOT DP).

    TRUE counts: curator-only, never released as such.
    """
    if engine not in ENGINES:
        raise OptionError(f"unknown count engine {engine!r}; available: {', '.join(sorted(ENGINES))}")
    return ENGINES[engine](source, domain, **options)
