"""A release from a file path: count on an engine, release from the counts, write in chunks.

:func:`synthesize_file` is :func:`dpcore.synthesize` for tables too long for pandas:

1. the domain is the declared one, or inferred on the engine (curator-only, NOT DP, as
   :func:`dpcore.infer_domain`);
2. the engine (``pandas``, ``duckdb`` or ``spark``) returns the sparse count table; the
   file is never loaded into pandas by ``duckdb`` or ``spark``;
3. every method reads the count table itself (cells weighted by their counts,
   :mod:`dpcore.counting.rows`); the records are never rebuilt, and since the methods only
   count, the release equals :func:`dpcore.synthesize` on the same data with the same seed;
4. each set is written in chunks (CSV or Parquet) with ``manifest.json`` as
   :meth:`dpcore.Release.write` writes it.

Privacy: exactly the guarantee of :func:`dpcore.synthesize` (the ledger totals ε;
docs/privacy-model.md); counting and inference are curator-only.
"""
from __future__ import annotations

import time
from pathlib import Path

from dpcore.api import synthesize_codes
from dpcore.counting.engines import ENGINE_NAMES, count_table
from dpcore.data.domain import Domain
from dpcore.errors import OptionError
from dpcore.release import Release, prepare_out_dir
from dpcore.output.chunks import CHUNK_ROWS, Spool, check_format, write_sets


#: files above this size are counted by DuckDB when no engine is named (the CLI's default)
AUTO_DUCKDB_BYTES = 256 * 2**20


def default_engine(path) -> str:
    """``duckdb`` for a file above :data:`AUTO_DUCKDB_BYTES`, else ``pandas``."""
    try:
        return "duckdb" if Path(path).stat().st_size > AUTO_DUCKDB_BYTES else "pandas"
    except OSError:
        return "pandas"  # the reader then names the problem


def engine_options(engine: str, memory_limit=None, spark_master=None) -> dict:
    """The options ``count_table`` passes to ``engine``; refuses an option the engine has not."""
    if engine not in ENGINE_NAMES:
        raise OptionError(f"--engine must be one of {', '.join(ENGINE_NAMES)}; got {engine!r}")
    if memory_limit is not None and engine != "duckdb":
        raise OptionError("--memory-limit is for --engine duckdb (Spark's memory is set on the cluster)")
    if spark_master is not None and engine != "spark":
        raise OptionError("--spark-master is for --engine spark")
    if engine == "duckdb":
        return {"memory_limit": memory_limit}
    if engine == "spark":
        return {"spark_master": spark_master}
    return {}


def load_domain(path, domain, engine: str, progress=None, **engine_opts) -> Domain:
    """The declared domain (a Domain, dict or domain.json path), or one inferred on the engine."""
    if isinstance(domain, Domain):
        return domain
    if isinstance(domain, dict):
        return Domain.from_dict(domain)
    if domain is not None:
        return Domain.load(domain)
    return infer_file_domain(path, engine, progress=progress, **engine_opts)


def infer_file_domain(path, engine: str, progress=None, numeric=None, **engine_opts) -> Domain:
    """:func:`dpcore.infer_domain` of the file, read by ``engine`` (curator-only, NOT DP until declared)."""
    if engine == "duckdb":
        from dpcore.counting import duckdb_engine as duckdb_counts
        return duckdb_counts.infer_domain(path, progress=progress, numeric=numeric, **engine_opts)
    if engine == "spark":
        from dpcore.counting import spark_engine as spark_counts
        return spark_counts.infer_domain(path, progress=progress, numeric=numeric, **engine_opts)
    from dpcore.data.domain import infer_domain
    from dpcore.data.io import read_table
    return infer_domain(read_table(path), numeric=numeric)


def file_count_table(path, dom: Domain, engine: str, **engine_opts):
    """TRUE counts of the file over ``dom`` (curator-only)."""
    if engine == "pandas":
        from dpcore.data.io import read_table
        return count_table(read_table(path), dom)
    return count_table(path, dom, engine=engine, **engine_opts)


def synthesize_file(path, out_dir, method: str = "steps", epsilon: float = 1.0, *, sets: int = 1, seed=None,
                    domain=None, engine: str = "duckdb", memory_limit=None, spark_master=None, format: str = "csv",
                    chunk_rows: int = CHUNK_ROWS, progress=None, neighbours: str = "add_remove", count_share=None,
                    max_records=None, **options) -> Release:
    """Release ``sets`` synthetic sets of the table at ``path`` into ``out_dir``.

    Same arguments and privacy as :func:`dpcore.synthesize` (the ledger totals ε), plus
    ``engine`` (pandas | duckdb | spark), ``memory_limit`` (DuckDB), ``spark_master``
    (Spark: URL or SparkSession) and ``format`` (csv | parquet). Returns the release
    with ``sets`` holding the written paths; ``manifest.json`` is written beside them.
    ``release.timings`` holds seconds per step (curator-side, not in the manifest).
    """
    check_format(format)
    opts = engine_options(engine, memory_limit, spark_master)
    out = prepare_out_dir(out_dir)
    t0 = time.perf_counter()
    dom = load_domain(path, domain, engine, progress, **opts)
    t_domain = time.perf_counter() - t0
    timings = {}

    def records(dom):
        t = time.perf_counter()
        table = file_count_table(path, dom, engine, **opts)
        timings["count"] = time.perf_counter() - t
        if progress:
            progress(f"counted {table.n:,} records (exact, curator-only, NOT DP) in {timings['count']:.1f} s; "
                     "the release reads these counts")
        return table  # every method reads the count table as is

    spool = Spool(dom.shape)
    try:
        t = time.perf_counter()
        rel, codes_sets, rng = synthesize_codes(records, dom, method, epsilon, sets=sets, seed=seed,
                                                neighbours=neighbours, count_share=count_share,
                                                max_records=max_records, keep=spool.keep, **options)
        timings["release"] = time.perf_counter() - t - timings.get("count", 0.0)
        t = time.perf_counter()
        paths = write_sets(codes_sets, dom, rng, out, format, chunk_rows, progress)
        timings["write"] = time.perf_counter() - t
    finally:
        spool.close()
    rel.sets = paths
    rel.for_table(Path(str(path)).name)  # the manifest's summary names the file (no fingerprint: see its note)
    (out / "manifest.json").write_text(rel.manifest_json(), encoding="utf-8")
    timings["domain"] = t_domain
    rel.timings = timings
    return rel
