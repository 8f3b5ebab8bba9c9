"""Counting on Spark: the same SQL as DuckDB (:mod:`dpcore.counting.sql`) through Spark SQL.

``spark_master`` is ``"local[*]"`` by default, a cluster URL (``spark://host:7077``,
``yarn``, ...) or an existing :class:`pyspark.sql.SparkSession`. pyspark is imported
only when this engine is used; Spark needs a Java runtime (the Makefile installs
Debian's ``openjdk-17-jre-headless``). A session this module starts is kept for the
process (starting a JVM takes seconds).

CSV is read with every field as text and the header's names stripped, as
:mod:`dpcore.data.io` does; Parquet keeps its types. The encoding and the ``GROUP BY`` run on
the cluster; only the non-empty cells and their counts come back.

Privacy: TRUE counts and curator-only facts (docs/privacy-model.md); nothing is released here.
"""
from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import threading
import warnings
from pathlib import Path

import numpy as np

from dpcore.counting import fingerprint as fp
from dpcore.counting import on_engine
from dpcore.counting import sql as S
from dpcore.counting.count_table import CountTable
from dpcore.counting.duckdb_engine import csv_header
from dpcore.counting.fingerprint import TableFingerprint
from dpcore.data.domain import Domain, check_width
from dpcore.data.io import PARQUET_SUFFIXES
from dpcore.errors import InputError, OptionError

DEFAULT_MASTER = "local[*]"
#: the JVM's own output (log4j lines, Java stack traces) goes to a private log file per session
#: start (mkstemp: mode 0600, in the temporary folder), not under our one-line messages
SPARK_LOG_PREFIX = "dpcore-spark-"
#: fds 1 and 2 are process-wide: one session start redirects them at a time
_REDIRECT_LOCK = threading.Lock()
_SESSIONS: dict = {}


@contextlib.contextmanager
def _jvm_output_to_log():
    """Point file descriptors 1 and 2 at a new private log file while the JVM starts (the JVM
    inherits them and keeps them; this process gets its own back afterwards). Yields the log's
    path, or None when the redirect cannot be set up (no fd 1/2, no temporary folder): Spark then
    starts with the process's own output rather than not at all."""
    with _REDIRECT_LOCK:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        try:
            saved = [os.dup(1), os.dup(2)]
        except OSError:
            saved = None
        log = None
        if saved is not None:
            try:
                fd, log = tempfile.mkstemp(prefix=SPARK_LOG_PREFIX, suffix=".log")
                os.dup2(fd, 1)
                os.dup2(fd, 2)
                os.close(fd)
            except OSError:
                log = None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)  # pyspark's pandas-version notice
                yield log
        finally:
            if saved is not None:
                for stream in (sys.stdout, sys.stderr):
                    with contextlib.suppress(Exception):
                        stream.flush()
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
                for fd in saved:
                    os.close(fd)


def session(spark_master=None):
    """The SparkSession for ``spark_master`` (a master URL, or a session returned as is)."""
    if spark_master is not None and not isinstance(spark_master, str):
        return spark_master  # an existing SparkSession
    master = spark_master or DEFAULT_MASTER
    if master in _SESSIONS:
        return _SESSIONS[master]
    try:
        from pyspark.sql import SparkSession
    except ImportError:  # pragma: no cover - pinned in requirements.txt
        raise OptionError("engine 'spark' needs the pyspark package: pip install -r requirements.txt") from None
    builder = (SparkSession.builder.master(master).appName("dpcore counts")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.session.timeZone", "UTC"))
    if master.startswith("local"):
        builder = (builder.config("spark.sql.shuffle.partitions", "8").config("spark.driver.memory", "2g")
                   # local executors run this interpreter (its numpy and pyarrow) to draw the synthetic sets
                   .config("spark.pyspark.python", sys.executable)
                   .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1"))
    if master.startswith("local"):
        # PySpark's workers start PYSPARK_PYTHON (else python3): this interpreter, unless the curator set one
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    log = None
    try:
        with _jvm_output_to_log() as log:
            spark = builder.getOrCreate()
            spark.sparkContext.setLogLevel("ERROR")
    except Exception as exc:  # JVM missing, bad URL: one line
        where = f"; Spark's log: {log}" if log else ""
        raise OptionError(f"--spark-master {master!r}: Spark did not start ({str(exc).strip().splitlines()[0][:200]}); "
                          f"check the master URL and that Java 17 is installed (make installs it){where}") from None
    if log:  # started: the JVM keeps writing to the unlinked file, which goes when it exits (no pile-up)
        with contextlib.suppress(OSError):
            os.unlink(log)
    _SESSIONS[master] = spark
    return spark


def _kind(dtype) -> str:
    name = type(dtype).__name__
    if name in ("LongType", "IntegerType", "ShortType", "ByteType"):
        return S.INT
    if name in ("DoubleType", "FloatType"):
        return S.FLOAT
    if name == "BooleanType":
        return S.BOOL
    if name in ("StringType", "VarcharType", "CharType"):
        return S.TEXT
    if name in ("DateType", "TimestampType", "TimestampNTZType", "DecimalType"):
        return S.OTHER
    return ""


_PANDAS_INT = {"LongType": "int64", "IntegerType": "int32", "ShortType": "int16", "ByteType": "int8"}


def open_source(spark, path, sep: str | None = None, progress=None) -> on_engine.Source:
    """The file as the temporary view ``src`` on ``spark`` with its columns typed."""
    from pyspark.errors import PySparkException
    from pyspark.sql.types import StringType, StructField, StructType

    p = Path(path)
    if not p.is_file():
        raise InputError(f"cannot read '{path}': no such file")
    d = S.SPARK
    view = "dpcore_src"
    try:
        if p.suffix.lower() in PARQUET_SUFFIXES:
            df = spark.read.parquet(str(p))
            names = df.columns
            check_width(len(names))
            df.createOrReplaceTempView(view)
            nulls = spark.sql("SELECT " + ", ".join(f"COUNT(*) - COUNT({d.quote(n)})" for n in names)
                              + f" FROM {view}").collect()[0]
            columns, dtypes = {}, {}
            for field, n_null in zip(df.schema.fields, nulls):
                kind, tname = _kind(field.dataType), type(field.dataType).__name__
                if not kind:
                    raise InputError(f"'{p.name}': column '{field.name}' has type {field.dataType.simpleString()}, "
                                     "which is not a table value (lists, structs, maps and binary data cannot be "
                                     "synthesised); flatten it or drop it")
                columns[field.name] = S.Column(field.name, kind, False)
                dtypes[field.name] = {S.INT: "float64" if n_null else _PANDAS_INT.get(tname, "int64"),
                                      S.FLOAT: "float32" if tname == "FloatType" else "float64",
                                      S.BOOL: "object" if n_null else "bool", S.TEXT: "str"}.get(kind, "object")
        else:
            sep, header = csv_header(p, sep)
            schema = StructType([StructField(h, StringType(), True) for h in header])
            df = (spark.read.schema(schema).option("header", True).option("sep", sep).option("quote", '"')
                  .option("escape", '"').option("mode", "FAILFAST").option("encoding", "UTF-8").csv(str(p)))
            df.createOrReplaceTempView(view)
            if progress:
                progress(f"typing the columns of {p.name} (one scan)")
            row = list(spark.sql(S.typing_query(header, view, d)).collect()[0])
            kinds = S.csv_kinds(header, row)
            columns = {h: S.Column(h, kinds[h], True) for h in header}
            dtypes = {h: {S.INT: "Int64" if int(row[6 * i] or 0) < int(row[-1]) else "int64",
                          S.FLOAT: "float64"}.get(kinds[h], "object") for i, h in enumerate(header)}
    except PySparkException as exc:
        raise InputError(f"'{p.name}' cannot be read by Spark: {_first_line(exc)}") from None

    def rows(query: str) -> list:
        try:
            return [tuple(r) for r in spark.sql(query).collect()]
        except PySparkException as exc:
            raise InputError(f"'{p.name}': Spark stopped: {_first_line(exc)}") from None

    def codes(query: str, k: int):
        try:
            table = spark.sql(query).toArrow()
        except PySparkException as exc:
            raise InputError(f"'{p.name}': Spark stopped: {_first_line(exc)}") from None
        arr = (np.column_stack([table.column(f"c{j}").to_numpy().astype(np.int64) for j in range(k)]) if k
               else np.zeros((table.num_rows, 0), np.int64))
        return arr, table.column("n").to_numpy().astype(np.int64)

    return on_engine.Source(f"'{p.name}'", columns, view, d, rows, dtypes, codes)


def _first_line(exc) -> str:
    return str(exc).strip().splitlines()[0][:300]


def count_table(path, domain: Domain, *, spark_master=None, sep: str | None = None, progress=None,
                curator: dict | None = None) -> CountTable:
    """The sparse count table of the file at ``path`` over ``domain``, counted by Spark.

    TRUE counts: curator-only, never released as such. ``curator``, if given, gets the records
    clamped per numeric column (:func:`on_engine.clamped_counts`: CURATOR-ONLY, NOT DP).
    """
    spark = session(spark_master)
    src = open_source(spark, path, sep, progress)
    return on_engine.count_table(src, domain, progress, curator)


def infer_domain(path, *, spark_master=None, sep: str | None = None, progress=None, **kwargs) -> Domain:
    """:func:`dpcore.data.inference.infer_domain` of the file, computed by Spark (curator-only, NOT DP)."""
    src = open_source(session(spark_master), path, sep, progress)
    return on_engine.infer_domain(src, progress=progress, **kwargs)


def fingerprint(path, *, spark_master=None, sep: str | None = None, progress=None) -> TableFingerprint:
    """The budget book's key of the file's records (:mod:`dpcore.counting.fingerprint`), computed on the
    cluster in one scan: the same key as the table read into memory, or counted by DuckDB."""
    src = open_source(session(spark_master), path, sep, progress)
    if progress:
        progress(f"fingerprinting {Path(path).name} for the budget book (one scan)")
    return fp.engine_fingerprint(src.columns, src.view, src.dialect, src.rows)


def engine(source, domain: Domain, **options) -> CountTable:
    """The ``count_table(..., engine="spark")`` backend: ``source`` is a file path."""
    if not isinstance(source, (str, Path)):
        raise OptionError("engine 'spark' counts a file: give the path of a CSV or Parquet file")
    return count_table(source, domain, **options)
