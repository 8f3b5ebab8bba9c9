"""The counting layer: the only code that reads records for a release.

* :mod:`.count_table`: the sparse count table (non-empty cells and their counts) and
  :func:`~.engines.count_table` on an engine (pandas, DuckDB, Spark);
* :mod:`.rows`: what every method counts, from records or from a count table alike;
* :mod:`.sql`, :mod:`.on_engine`, :mod:`.duckdb_engine`, :mod:`.spark_engine`: the
  declared domain applied in SQL and the ``GROUP BY`` on an engine (docs/engines.md).

Rule: counts here are TRUE counts, curator-only; they reach a release only through a
mechanism of :mod:`dpcore.privacy`.
"""
