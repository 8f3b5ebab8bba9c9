"""Synthetic sets drawn and written by Spark's executors: the driver never holds the records.

For each set, the driver broadcasts the set's draw (the fitted model and the released record
count: :mod:`dpcore.estimate.draws`) with the public domain. The released count n is split over
P partitions by a public rule (:func:`dpcore.estimate.draws.part_sizes`: n // P each, the first
n mod P one more; P = ``partitions``, by default one per :data:`PARTITION_ROWS` records). Each
partition k draws its records in chunks with its own stream spawned from the release seed
(:func:`dpcore.estimate.draws.partition_stream`, ``numpy.random.SeedSequence.spawn`` children
keyed by set and partition), decodes them with the same stream (numeric values drawn inside
their bins), and Spark writes the chunks as the Parquet part file of partition k
(``DataFrame.mapInArrow``, then ``write.parquet``; Spark adds ``_SUCCESS``). The same seed and
partition count give the same part files. The set's law is the whole draw's
(docs/engines.md, "The partition rule"); its records differ from those the pandas and DuckDB
paths draw with the release's own generator.

Local paths and cluster URIs (``hdfs://…``, ``s3a://…``, ``file:///…``) both work; the
release's markers and ``manifest.json`` beside the sets are written through Spark's Hadoop
file system for a URI (:class:`HadoopFolder`).

Privacy: drawing and writing are post-processing of the released model (docs/privacy-model.md);
the executors read no data.
"""
from __future__ import annotations

import math
import os
import tempfile
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from dpcore.data.domain import Domain
from dpcore.errors import InputError
from dpcore.estimate.draws import CHUNK_ROWS, partition_stream
from dpcore.output.chunks import arrow_chunk, arrow_schema

#: the default partition count gives each partition this many records (one chunk)
PARTITION_ROWS = 1_000_000
#: Arrow types Spark has no column type for, and what they are written as
_SPARK_SAFE = {pa.uint8(): pa.int16(), pa.uint16(): pa.int32(), pa.uint32(): pa.int64(), pa.uint64(): pa.int64()}
_SHIPPED: set = set()


def default_partitions(n: int) -> int:
    """One partition per :data:`PARTITION_ROWS` records (at least one): public, from n alone."""
    return max(1, math.ceil(int(n) / PARTITION_ROWS))


def spark_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with unsigned integers widened to the signed types Spark has."""
    return pa.schema([(f.name, _SPARK_SAFE.get(f.type, f.type)) for f in schema])


@dataclass(frozen=True)
class SetTask:
    """What the executors need to draw one set: the broadcast value."""

    draw: object
    domain: Domain
    seed: int
    set_index: int
    parts: int
    chunk_rows: int

    def batches(self, k: int):
        """Partition k's records as Arrow record batches: drawn in chunks and decoded with the
        partition's own stream."""
        rng = partition_stream(self.seed, self.set_index, k)
        schema = spark_schema(arrow_schema(self.domain))
        for codes in self.draw.part(k, self.parts, self.seed, self.set_index).chunks(rng, self.chunk_rows):
            yield from arrow_chunk(self.domain, codes, lambda j: rng).cast(schema).to_batches()


def _partition_batches(task):
    def run(batches):
        value = task.value
        for batch in batches:
            for k in batch.column(0).to_pylist():
                yield from value.batches(int(k))
    return run


def _ship_package(sc) -> None:
    """Executors unpickle the draws and the domain: send them this package once per Spark context."""
    key = sc.applicationId
    if key in _SHIPPED:
        return
    root = Path(__file__).resolve().parents[1]
    fd, zpath = tempfile.mkstemp(prefix="dpcore-", suffix=".zip")
    os.close(fd)
    with zipfile.ZipFile(zpath, "w", zipfile.ZIP_DEFLATED) as z:
        for f in root.rglob("*.py"):
            z.write(f, str(Path("dpcore") / f.relative_to(root)))
    sc.addPyFile(zpath)
    _SHIPPED.add(key)


def _to_spark_type(t: pa.DataType):
    from pyspark.sql import types as T

    if pa.types.is_string(t):
        return T.StringType()
    if pa.types.is_boolean(t):
        return T.BooleanType()
    if pa.types.is_floating(t):
        return T.FloatType() if t == pa.float32() else T.DoubleType()
    return {pa.int8(): T.ByteType(), pa.int16(): T.ShortType(), pa.int32(): T.IntegerType()}.get(t, T.LongType())


def _first_line(exc: BaseException) -> str:
    """The line of a Spark error that says what went wrong: a Python worker's own exception
    (its last ``Name: message`` line) when there is one, else the first line."""
    import re

    lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
    raised = [ln for ln in lines if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt)\b.*:", ln)]
    pick = raised[-1] if raised else (lines[0] if lines else type(exc).__name__)
    return pick[:300]


def write_sets(draws: list, dom: Domain, seed: int, paths: list, spark_master=None, partitions=None, progress=None,
               chunk_rows: int = CHUNK_ROWS) -> list:
    """Each set's Parquet part files (and Spark's ``_SUCCESS``) at ``paths[s]``, drawn by the executors.

    ``draws``: the sets' draws; ``seed``: the release seed their streams are spawned from;
    ``partitions``: P (default :func:`default_partitions` of each set's n). A path Spark cannot
    write, or a job cancelled, is a one-line :class:`~dpcore.errors.InputError`."""
    from pyspark.sql import types as T

    from dpcore.counting import spark_engine

    spark = spark_engine.session(spark_master)
    sc = spark.sparkContext
    _ship_package(sc)
    schema = spark_schema(arrow_schema(dom))
    struct = T.StructType([T.StructField(f.name, _to_spark_type(f.type), True) for f in schema])
    out = []
    for s, (draw, path) in enumerate(zip(draws, paths)):
        parts = int(partitions) if partitions else default_partitions(draw.n)
        task = sc.broadcast(SetTask(draw, dom, int(seed), s, parts, int(chunk_rows)))
        uri = str(path)
        if progress:
            progress(f"set {s + 1}: {draw.n:,} records drawn by Spark in {parts} partition(s), written to {uri}")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)  # pyspark's pandas-version notice
                frame = spark.range(0, parts, 1, numPartitions=parts).mapInArrow(_partition_batches(task), struct)
            frame.write.mode("overwrite").parquet(uri)
        except Exception as exc:  # Py4J and Spark errors: one line
            text = _first_line(exc)
            what = "the job was cancelled" if "cancel" in text.lower() else text
            raise InputError(f"Spark could not write the synthetic set to '{uri}': {what}; check that the path is "
                             "writable by the cluster and has room") from None
        finally:
            task.destroy()
        out.append(path)
    return out


class HadoopFolder:
    """A release folder at a URI, written through Spark's Hadoop ``FileSystem`` (markers, manifest)."""

    def __init__(self, uri: str, spark_master=None):
        from dpcore.counting import spark_engine

        self.spark = spark_engine.session(spark_master)
        jvm = self.spark.sparkContext._jvm
        self._Path = jvm.org.apache.hadoop.fs.Path
        self.uri = str(uri).rstrip("/")
        try:
            self._fs = self._Path(self.uri).getFileSystem(self.spark.sparkContext._jsc.hadoopConfiguration())
            made = self._fs.mkdirs(self._Path(self.uri))
        except Exception as exc:  # Py4J: an unknown scheme, an unreachable cluster
            raise InputError(f"--out '{uri}': Spark cannot use this path ({_first_line(exc)}); give a folder the "
                             "cluster can write (hdfs://…, s3a://…, file:///…)") from None
        if not made:
            raise InputError(f"--out '{uri}': Spark cannot create this folder; give a folder the cluster can write")

    def path(self, name: str) -> str:
        return f"{self.uri}/{name}"

    def write_text(self, name: str, text: str) -> None:
        stream = self._fs.create(self._Path(self.path(name)), True)
        try:
            stream.write(bytearray(text.encode("utf-8")))
        finally:
            stream.close()

    def remove(self, name: str) -> bool:
        return bool(self._fs.delete(self._Path(self.path(name)), True))

    def exists(self, name: str) -> bool:
        return bool(self._fs.exists(self._Path(self.path(name))))
