"""A release from a file path: count on an engine, release from the counts, write in chunks.

:func:`synthesize_file` is :func:`dpcore.synthesize` for tables too long for pandas:

1. the domain is the declared one, or inferred on the engine (curator-only, NOT DP, as
   :func:`dpcore.infer_domain`);
2. the engine (``pandas``, ``duckdb`` or ``spark``) returns the sparse count table; the
   file is never loaded into pandas by ``duckdb`` or ``spark``;
3. every method reads the count table itself (cells weighted by their counts,
   :mod:`dpcore.counting.rows`); the records are never rebuilt, and since the methods only
   count, the release equals :func:`dpcore.synthesize` on the same data with the same seed;
4. each set is drawn in chunks from its fitted model and written (CSV or Parquet; DuckDB's
   ``COPY``, or Spark's executors as part files) with ``manifest.json`` as
   :meth:`dpcore.Release.write` writes it, and the folder's markers (``_SUCCESS`` at the end).

Privacy: exactly the guarantee of :func:`dpcore.synthesize` (the ledger totals ε;
docs/privacy-model.md); counting and inference are curator-only.
"""
from __future__ import annotations

import time
from pathlib import Path

from dpcore.api import synthesize_codes
from dpcore.counting.engines import ENGINE_NAMES, count_table
from dpcore.data.domain import Domain
from dpcore.errors import InputError, OptionError
from dpcore.output.chunks import CHUNK_ROWS, Spool, check_format, write_sets
from dpcore.release import Release, prepare_out_dir

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
    from dpcore.data.inference import infer_domain
    from dpcore.data.io import read_table
    return infer_domain(read_table(path), numeric=numeric)


def content_fingerprint(path, engine: str, progress=None, **engine_opts):
    """The budget book's key of the file's records (:class:`dpcore.counting.fingerprint.TableFingerprint`),
    computed by ``engine`` where the file lies: the same key as the table read into memory, on any engine,
    from CSV or Parquet, so one table is one account whatever path its releases take."""
    if engine == "duckdb":
        from dpcore.counting import duckdb_engine
        return duckdb_engine.fingerprint(path, progress=progress, **engine_opts)
    if engine == "spark":
        from dpcore.counting import spark_engine
        return spark_engine.fingerprint(path, progress=progress, **engine_opts)
    from dpcore.counting.fingerprint import frame_fingerprint
    from dpcore.data.io import read_table
    return frame_fingerprint(read_table(path))


def file_count_table(path, dom: Domain, engine: str, curator: dict | None = None, **engine_opts):
    """TRUE counts of the file over ``dom`` (curator-only). ``curator``, if given, gets
    ``"clamped_records"``: the records clamped into end bins per numeric column, counted by the
    engine (CURATOR-ONLY, NOT DP; :func:`dpcore.counting.on_engine.clamped_counts`)."""
    if engine == "pandas":
        from dpcore.data.io import read_table
        return count_table(read_table(path), dom, curator=curator)
    return count_table(path, dom, engine=engine, curator=curator, **engine_opts)


#: the markers of a release folder: present while the sets are being written, after a failure, after success
INCOMPLETE, FAILED, SUCCESS = "_INCOMPLETE", "_FAILED", "_SUCCESS"


class LocalFolder:
    """A release folder on this machine (the markers, the manifest, the sets' paths)."""

    def __init__(self, out: Path):
        self.out = Path(out)

    def path(self, name: str) -> Path:
        return self.out / name

    def write_text(self, name: str, text: str) -> None:
        (self.out / name).write_text(text, encoding="utf-8")

    def remove(self, name: str) -> bool:
        import shutil

        p = self.out / name
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
            return True
        existed = p.exists()
        p.unlink(missing_ok=True)
        return existed


class ReleaseFolder:
    """The release's output folder and its markers ([scale-out] item 5): ``_INCOMPLETE`` from the
    start (a release that dies leaves it: do not publish), ``_FAILED`` with the reason after a
    failure (the partly written sets removed), ``_SUCCESS`` once every set and ``manifest.json``
    are written. A folder never holds ``_SUCCESS`` beside a half-written set. ``store``: a
    :class:`LocalFolder`, or a :class:`dpcore.output.spark_writer.HadoopFolder` for a cluster URI."""

    def __init__(self, store, fmt: str):
        self.store, self.fmt = store, fmt
        for stale in (SUCCESS, FAILED):
            store.remove(stale)
        store.write_text(INCOMPLETE, "a release is being written here, or stopped before it finished: "
                                     "do not publish these files\n")

    @property
    def out(self):
        return self.store.out if isinstance(self.store, LocalFolder) else self.store.uri

    def set_paths(self, sets: int) -> list:
        return [self.store.path(f"synthetic_{s}.{self.fmt}") for s in range(1, sets + 1)]

    def failed(self, reason: str, sets: int) -> None:
        """Remove what was written of the sets (space on a full disk), say why in ``_FAILED``."""
        removed = [f"synthetic_{s}.{self.fmt}" for s in range(1, sets + 1)
                   if self.store.remove(f"synthetic_{s}.{self.fmt}")]
        self.store.remove("manifest.json")
        text = f"the release failed: {reason}\n" + (f"removed the partly written {', '.join(removed)}\n"
                                                    if removed else "")
        try:
            self.store.write_text(FAILED, text)
            self.store.remove(INCOMPLETE)
        except Exception:  # a full disk: _INCOMPLETE stays, the folder still says so
            pass

    def done(self) -> None:
        self.store.write_text(SUCCESS, "")
        self.store.remove(INCOMPLETE)


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, KeyboardInterrupt):
        return "cancelled (interrupted)"
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:300]


def synthesize_file(path, out_dir, method: str = "steps", epsilon: float = 1.0, *, sets: int = 1, seed=None,
                    domain=None, engine: str = "duckdb", memory_limit=None, spark_master=None,
                    format: str | None = None, chunk_rows: int = CHUNK_ROWS, progress=None,
                    neighbours: str = "add_remove", count_share=None, max_records=None, record=None, partitions=None,
                    **options) -> Release:
    """Release ``sets`` synthetic sets of the table at ``path`` into ``out_dir``.

    Same arguments and privacy as :func:`dpcore.synthesize` (the ledger totals ε), plus
    ``engine`` (pandas | duckdb | spark), ``memory_limit`` (DuckDB), ``spark_master``
    (Spark: URL or SparkSession) and ``format`` (csv | parquet; default csv, parquet on Spark,
    which writes only Parquet). Returns the release
    with ``sets`` holding the written paths; ``manifest.json`` is written beside them.
    ``release.timings`` holds seconds per step (curator-side, not in the manifest).

    Each set's records are drawn in chunks from the fitted model (:mod:`dpcore.estimate.draws`):
    memory depends on the model and the chunk, not on the set's length. ``pandas`` and ``duckdb``
    draw them here with the release's generator (the same records as :func:`dpcore.synthesize`)
    and write them (DuckDB through its own ``COPY``); ``spark`` broadcasts each set's model and its
    executors draw and write the set as Parquet part files (:mod:`dpcore.output.spark_writer`;
    ``partitions``: how many, default one per million records), so this process never holds the records.

    ``record``: the budget book's entry for this release (e.g.
    :class:`dpcore.studio.book_entry.BookEntry`): reserved first (refused over the table's cap),
    aborted when the release stops before the table is counted (nothing spent), marked failed —
    and still counted as spent — when it stops after, completed with the manifest's SHA-256 on
    success. The folder's markers say the same (:class:`ReleaseFolder`). Errors are one line.
    """
    format = format or ("parquet" if engine == "spark" else "csv")
    check_format(format)
    opts = engine_options(engine, memory_limit, spark_master)
    if partitions is not None and engine != "spark":
        raise OptionError("--partitions is for --engine spark (the executors' part files)")
    if engine == "spark" and format != "parquet":
        raise OptionError("--engine spark writes Parquet part files; add --format parquet")
    if engine == "spark" and _is_uri(out_dir):  # a cluster path: written through Spark's file system
        from dpcore.output.spark_writer import HadoopFolder

        store = HadoopFolder(str(out_dir), opts["spark_master"])
    else:
        store = LocalFolder(prepare_out_dir(out_dir))
    if record is not None:
        record.reserve()  # refused over the table's cap, before anything is read or drawn
    folder = ReleaseFolder(store, format)
    state = {"counted": False}
    try:
        rel = _release_into(folder, path, dom_arg=domain, method=method, epsilon=epsilon, sets=sets, seed=seed,
                            engine=engine, opts=opts, fmt=format, chunk_rows=chunk_rows, progress=progress,
                            state=state, partitions=partitions, neighbours=neighbours, count_share=count_share,
                            max_records=max_records, options=options)
    except BaseException as exc:
        reason = _one_line(exc)
        folder.failed(reason, sets)
        if record is not None:
            # counted: the release's noise may have been drawn and sets written; conservative, it counts
            (record.fail if state["counted"] else record.abort)(reason)
        raise
    if record is not None:
        record.complete(rel)
    folder.done()
    return rel


def _is_uri(path) -> bool:
    return "://" in str(path)


def _release_into(folder: ReleaseFolder, path, *, dom_arg, method, epsilon, sets, seed, engine, opts, fmt, chunk_rows,
                  progress, state, partitions, neighbours, count_share, max_records, options) -> Release:
    t0 = time.perf_counter()
    dom = load_domain(path, dom_arg, engine, progress, **opts)
    t_domain = time.perf_counter() - t0
    timings: dict = {}
    curator: dict = {}  # CURATOR-ONLY, NOT DP: the records clamped per column (private manifest, never published)

    def records(dom):
        t = time.perf_counter()
        table = file_count_table(path, dom, engine, curator, **opts)
        timings["count"] = time.perf_counter() - t
        state["counted"] = True  # from here on the release draws its noise
        if progress:
            progress(f"counted {table.n:,} records (exact, curator-only, NOT DP) in {timings['count']:.1f} s; "
                     "the release reads these counts")
        return table  # every method reads the count table as is

    spool = Spool(dom)
    keep = (lambda draw, rng: draw) if engine == "spark" else spool.keep  # Spark: the executors draw
    try:
        t = time.perf_counter()
        rel, codes_sets, rng = synthesize_codes(records, dom, method, epsilon, sets=sets, seed=seed,
                                                neighbours=neighbours, count_share=count_share,
                                                max_records=max_records, keep=keep, **options)
        timings["release"] = time.perf_counter() - t - timings.get("count", 0.0)
        t = time.perf_counter()
        if engine == "spark":
            from dpcore.output import spark_writer

            set_paths = [p if isinstance(p, str) else str(Path(p).resolve()) for p in folder.set_paths(sets)]
            spark_writer.write_sets(codes_sets, dom, rel.seed, set_paths,
                                            spark_master=opts["spark_master"], partitions=partitions,
                                            progress=progress)
            paths = folder.set_paths(sets)  # folders of part files (Path here, the URI on a cluster)
        else:
            paths = write_sets(codes_sets, dom, rng, folder.out, fmt, chunk_rows, progress,
                               writer="duckdb" if engine == "duckdb" else "arrow",
                               memory_limit=opts.get("memory_limit"))
        timings["write"] = time.perf_counter() - t
    finally:
        spool.close()
    rel.sets = paths
    rel.curator_only = {k: v for k, v in curator.items() if v}
    rel.for_table(Path(str(path)).name)  # the manifest's summary names the file (no fingerprint: see its note)
    try:
        folder.store.write_text("manifest.json", rel.manifest_json())
    except OSError as exc:
        raise InputError(f"cannot write '{folder.store.path('manifest.json')}' ({exc.strerror}); check the output "
                         "folder's free space and permissions") from None
    timings["domain"] = t_domain
    rel.timings = timings
    return rel
