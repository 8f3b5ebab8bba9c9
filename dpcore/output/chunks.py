"""Writing long synthetic sets in chunks (CSV or Parquet), identical to the whole-set decode.

A set reaches the writer as a :class:`SpooledSet`: its records drawn chunk by chunk from the
set's draw (:mod:`dpcore.estimate.draws`) with the release's generator, in the order
:func:`dpcore.synthesize` draws them, and kept compact (one byte per value for attributes of at
most 256 levels): in memory when small, else appended to a temporary file as each chunk is drawn
(:class:`Spool`). Memory is then one chunk, never the set.

:meth:`dpcore.data.domain.Domain.decode` turns a set's codes into values, drawing one uniform
``rng.random(n)`` per numeric attribute (a value inside its bin), attribute after
attribute, set after set. Decoding a chunk of rows must draw the same uniforms: with
NumPy's PCG64 one double is one step of the stream, so the generator for rows
[a, b) of the k-th numeric attribute of a set is the decode start state advanced by
``offset + k·n + a`` (:func:`_generator_at`); at the end the release's generator is
advanced past everything, as after a whole decode. ``tests/counting/test_engines.py`` checks
the files against :func:`dpcore.synthesize`'s sets.

Two writers: ``arrow`` (pyarrow's Parquet writer, pandas' CSV; the pandas engine) and
``duckdb`` (DuckDB's own ``COPY … TO`` reading the decoded chunks as an Arrow stream: Parquet,
or CSV with every field formatted as pandas writes it). Both write the same values.

Privacy: drawing, decoding and writing are post-processing of released counts (docs/privacy-model.md).
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from dpcore.data.domain import Attribute, Domain, code_dtype, dtype_kind
from dpcore.errors import InputError, OptionError

FORMATS = ("csv", "parquet")
WRITERS = ("arrow", "duckdb")
#: rows decoded and written at a time (the records are drawn in chunks of
#: dpcore.estimate.draws.CHUNK_ROWS; smaller pieces keep the writer's buffers small: bench/RESULTS.md)
CHUNK_ROWS = 200_000
#: DuckDB's writer runs on one thread under at most this memory (its row-group buffers; measured:
#: two threads on this 2-core machine were slower and held twice the memory)
WRITER_MEMORY = 256 << 20
#: sets with more code bytes than this are spooled to a temporary file as they are drawn
SPILL_BYTES = 64 << 20


def check_format(fmt: str) -> str:
    if fmt not in FORMATS:
        raise OptionError(f"--format must be one of {', '.join(FORMATS)}; got {fmt!r}")
    return fmt


class SpooledSet:
    """A set's records as compact codes, in memory or in a temporary file: ``n`` rows of
    ``width`` codes; :meth:`rows` reads a slice back as int64; ``na_seen[j]``: whether the
    attribute's NA code occurs (the CSV writer's column type depends on it)."""

    def __init__(self, n: int, width: int, dtype, na_seen: np.ndarray, array: np.ndarray | None = None,
                 path: Path | None = None):
        self.n, self.width, self.dtype, self.na_seen = int(n), int(width), np.dtype(dtype), na_seen
        self.array, self.path = array, path

    def __len__(self) -> int:
        return self.n

    def rows(self, start: int, stop: int) -> np.ndarray:
        if self.array is not None:
            return np.asarray(self.array[start:stop], dtype=np.int64)
        count = (stop - start) * self.width
        block = np.fromfile(self.path, dtype=self.dtype, count=count, offset=start * self.width * self.dtype.itemsize)
        return block.reshape(-1, self.width).astype(np.int64)


class Spool:
    """Draws each set in chunks and keeps it compact (:class:`SpooledSet`): ``keep(draw, rng)``
    is what :func:`dpcore.api.synthesize_codes` calls on every set's draw, with the release's
    generator, so the records are the ones :func:`dpcore.synthesize` draws."""

    def __init__(self, domain: Domain):
        self.shape = tuple(domain.shape)
        self.na_code = np.array([len(a.levels) if a.na else -1 for a in domain.attributes], dtype=np.int64)
        self._dir = None
        self._sets = 0

    def keep(self, draw, rng) -> SpooledSet:
        n, p, dtype = draw.n, len(self.shape), code_dtype(self.shape)
        seen = np.zeros(p, dtype=bool)
        self._sets += 1
        if n * p * dtype.itemsize <= SPILL_BYTES:
            out, at = np.empty((n, p), dtype=dtype), 0
            for chunk in draw.chunks(rng):
                out[at:at + len(chunk)] = chunk
                at += len(chunk)
                seen |= self._na_seen(chunk)
            return SpooledSet(n, p, dtype, seen, array=out)
        if self._dir is None:
            self._dir = tempfile.TemporaryDirectory(prefix="dpcore-sets-")
        path = Path(self._dir.name) / f"set_{self._sets}.codes"
        try:
            with open(path, "wb") as fh:
                for chunk in draw.chunks(rng):
                    fh.write(np.ascontiguousarray(chunk, dtype=dtype).tobytes())
                    seen |= self._na_seen(chunk)
        except OSError as exc:
            raise InputError(f"cannot keep the drawn records in the temporary folder {self._dir.name} "
                             f"({exc.strerror}); free disk space there or set TMPDIR to a folder with room") from None
        return SpooledSet(n, p, dtype, seen, path=path)

    def _na_seen(self, chunk: np.ndarray) -> np.ndarray:
        """Whether each attribute's NA code occurs in the chunk (column by column: no (n, p) mask)."""
        return np.array([code >= 0 and bool((chunk[:, j] == code).any()) for j, code in enumerate(self.na_code)],
                        dtype=bool)

    def close(self) -> None:
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None


def _as_set(codes, domain: Domain):
    """A SpooledSet, or codes in an array (the NA flags computed from them)."""
    if isinstance(codes, SpooledSet):
        return codes
    arr = np.asarray(codes)
    seen = np.array([bool(a.na and len(arr) and (arr[:, j] == len(a.levels)).any())
                     for j, a in enumerate(domain.attributes)], dtype=bool)
    return SpooledSet(len(arr), len(domain), arr.dtype, seen, array=arr)


def _generator_at(state: dict, steps: int) -> np.random.Generator:
    bg = np.random.PCG64()
    bg.state = state
    bg.advance(steps)
    return np.random.Generator(bg)


def _target_dtype(a: Attribute, has_na: bool) -> str:
    kind = dtype_kind(a.dtype)
    if has_na and kind in "iu":
        return "Int64"
    if has_na and kind == "b":
        return "boolean"
    return a.dtype


def _arrow_type(a: Attribute) -> pa.DataType:
    kind = dtype_kind(a.dtype)
    if kind in "iu":
        return pa.from_numpy_dtype(np.dtype(a.dtype)) if a.dtype not in ("Int64", "UInt64") else pa.int64()
    if kind == "f":
        return pa.from_numpy_dtype(np.dtype(a.dtype))
    if kind == "b":
        return pa.bool_()
    return pa.string()


def _arrow_column(a: Attribute, s: pd.Series) -> pa.Array:
    t = _arrow_type(a)
    if t == pa.string() and not all(isinstance(v, str) for v in a.levels):
        s = pd.Series([None if v is None or (isinstance(v, float) and v != v) else str(v) for v in s], dtype=object)
    return pa.array(s, type=t, from_pandas=True)


def _arrow_levels(a: Attribute) -> pa.Array:
    """The attribute's levels (then a null for NA) as an Arrow array of the column's type:
    a chunk's categorical column is ``take`` of its codes, the values ``Attribute.decode`` gives."""
    t = _arrow_type(a)
    cast = {pa.string(): str, pa.bool_(): bool}.get(t, float if pa.types.is_floating(t) else int)
    return pa.array([cast(v) for v in a.levels] + ([None] if a.na else []), type=t)


def arrow_chunk(dom: Domain, block: np.ndarray, generator, levels=None, schema=None) -> pa.Table:
    """Records (int64 codes) as an Arrow table of the domain's values: a categorical column is a
    ``take`` of its levels, a numeric one ``Attribute.decode`` with ``generator(j)`` (a value drawn
    inside its bin: post-processing)."""
    levels = levels or [_arrow_levels(a) if a.kind == "categorical" else None for a in dom.attributes]
    schema = schema or pa.schema([(a.name, _arrow_type(a)) for a in dom.attributes])
    return pa.Table.from_arrays([levels[j].take(pa.array(block[:, j])) if a.kind == "categorical" else
                                 _arrow_column(a, a.decode(block[:, j], generator(j)))
                                 for j, a in enumerate(dom.attributes)], schema=schema)


def arrow_schema(dom: Domain) -> pa.Schema:
    """The Arrow schema of a set's columns (the types :func:`arrow_chunk` writes)."""
    return pa.schema([(a.name, _arrow_type(a)) for a in dom.attributes])


def _csv_text(frame: pd.DataFrame) -> pa.Table:
    """A decoded chunk as text columns holding what pandas' ``to_csv`` writes for each field
    (floats in shortest repr, True/False, missing and empty text as an empty field), for
    DuckDB's CSV writer to write the same file."""
    arrays = []
    for name in frame.columns:
        col = frame[name]
        missing = col.isna().to_numpy()
        if col.dtype == bool or str(col.dtype) == "boolean":
            text = np.where(col.fillna(False).to_numpy(dtype=bool), "True", "False").astype(object)
        elif col.dtype.kind in "iuf" or str(col.dtype) in ("Int64", "Int32", "Int16", "Int8", "UInt64"):
            text = col.astype(str).to_numpy(dtype=object)
        else:
            text = col.astype(object).to_numpy()
            text = np.array([v if isinstance(v, str) else str(v) for v in text], dtype=object) if len(text) else text
        text[missing] = None
        if len(text):
            text[text == ""] = None  # pandas writes an empty string and a missing value alike
        arrays.append(pa.array(text, type=pa.string()))
    return pa.Table.from_arrays(arrays, names=[str(c) for c in frame.columns])


def _decoded(codes: SpooledSet, dom: Domain, state: dict, offset: int, fmt: str, writer: str, chunk_rows: int):
    """Each chunk of a set decoded (the values of ``dom.decode`` on the whole set, module docstring):
    an Arrow table for Parquet, a DataFrame for pandas' CSV writer, text columns for DuckDB's."""
    n = codes.n
    numeric = [j for j, a in enumerate(dom.attributes) if a.kind == "numeric"]
    schema = arrow_schema(dom)
    levels = [_arrow_levels(a) if a.kind == "categorical" else None for a in dom.attributes]
    for start in range(0, max(n, 1), chunk_rows):
        stop = min(n, start + chunk_rows)
        block = codes.rows(start, stop)

        def gen(j, start=start):
            return _generator_at(state, offset + numeric.index(j) * n + start)

        if fmt == "parquet":
            yield stop, arrow_chunk(dom, block, gen, levels, schema)
            continue
        cols = {}
        for j, a in enumerate(dom.attributes):
            col = a.decode(block[:, j], gen(j) if j in numeric else np.random.default_rng(0))  # levels draw nothing
            target = _target_dtype(a, bool(codes.na_seen[j]))
            if str(col.dtype) != target:
                try:
                    col = col.astype(target)
                except (TypeError, ValueError):
                    pass
            cols[a.name] = col
        frame = pd.DataFrame(cols)
        yield stop, (frame if writer == "arrow" else _csv_text(frame))


def _write_arrow(path: Path, fmt: str, schema: pa.Schema, chunks) -> None:
    writer = pq.ParquetWriter(path, schema) if fmt == "parquet" else None
    try:
        for i, chunk in enumerate(chunks):
            if fmt == "parquet":
                writer.write_table(chunk)
            else:
                chunk.to_csv(path, index=False, header=i == 0, mode="w" if i == 0 else "a")
    finally:
        if writer is not None:
            writer.close()


def _write_duckdb(path: Path, fmt: str, schema: pa.Schema, chunks, memory_limit=None) -> None:
    """DuckDB's own writer: ``COPY`` of the decoded chunks, read as one Arrow stream (never whole)."""
    from dpcore.counting import duckdb_engine

    duckdb = duckdb_engine.import_duckdb()
    if fmt == "csv":
        schema = pa.schema([(f.name, pa.string()) for f in schema])
    raised = []  # an error (or interrupt) in our own chunks: re-raised as itself, not as DuckDB's

    def batches():
        try:
            for t in chunks:
                yield from t.to_batches()
        except BaseException as exc:
            raised.append(exc)
            raise

    reader = pa.RecordBatchReader.from_batches(schema, batches())
    target = "'" + str(path).replace("'", "''") + "'"
    options = "FORMAT parquet" if fmt == "parquet" else "FORMAT csv, HEADER true"
    # one writing thread (each thread buffers row groups), at most WRITER_MEMORY or the limit given
    given = _limit_bytes(memory_limit)
    limit = f"{max(1, min(given or WRITER_MEMORY, WRITER_MEMORY) >> 20)}MB"
    with duckdb_engine.connect(limit, threads=1) as con:
        con.execute("SET preserve_insertion_order = true")  # the rows in the order they were drawn
        con.register("synthetic_set", reader)
        try:
            con.execute(f"COPY synthetic_set TO {target} ({options})")
        except duckdb.Error as exc:
            if raised:
                raise raised[0] from None
            raise InputError(f"cannot write '{path}': DuckDB stopped ({duckdb_engine.duckdb_error_line(exc)}); "
                             "check the output folder's free space and permissions") from None


def _limit_bytes(limit) -> int | None:
    """A DuckDB memory limit such as ``512MB`` or ``4GiB`` in bytes (None when not of that form)."""
    import re

    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(i?)B\s*", str(limit or ""), re.IGNORECASE)
    if not m:
        return None
    base = 1024 if m.group(3) else 1000
    return int(float(m.group(1)) * base ** " KMGT".index(m.group(2).upper() or " "))


def write_sets(codes_sets: list, dom: Domain, rng: np.random.Generator, out_dir: Path, fmt: str = "csv",
               chunk_rows: int = CHUNK_ROWS, progress=None, writer: str = "arrow", memory_limit=None) -> list[Path]:
    """Write ``synthetic_1.<fmt> …`` from each set's codes (arrays or :class:`SpooledSet` s),
    ``chunk_rows`` rows at a time, by ``writer`` (``arrow``: pyarrow/pandas; ``duckdb``: DuckDB's
    ``COPY``, under ``memory_limit``).

    The values equal ``dom.decode(codes, rng)`` set after set (module docstring); ``rng``
    ends where those decodes would leave it. A write that fails (a full disk, a folder that
    cannot be written) is a one-line :class:`~dpcore.errors.InputError`.
    """
    check_format(fmt)
    if writer not in WRITERS:
        raise OptionError(f"writer must be one of {', '.join(WRITERS)}; got {writer!r}")
    bg = rng.bit_generator
    if not isinstance(bg, np.random.PCG64):
        raise TypeError("chunked decoding needs the release's PCG64 generator")
    state = bg.state
    numeric = [j for j, a in enumerate(dom.attributes) if a.kind == "numeric"]
    schema = arrow_schema(dom)
    offset, paths = 0, []
    for s, codes in enumerate(codes_sets, 1):
        codes = _as_set(codes, dom)
        n = codes.n
        path = Path(out_dir) / f"synthetic_{s}.{fmt}"

        def chunks(codes=codes, s=s, n=n, offset=offset):
            for stop, chunk in _decoded(codes, dom, state, offset, fmt, writer, chunk_rows):
                yield chunk
                if progress:
                    progress(f"set {s}: wrote {stop:,} of {n:,} rows")

        try:
            if writer == "duckdb":
                _write_duckdb(path, fmt, schema, chunks(), memory_limit)
            else:
                _write_arrow(path, fmt, schema, chunks())
        except OSError as exc:
            raise InputError(f"cannot write '{path}' ({exc.strerror or exc}); check the output folder's free space "
                             "and permissions") from None
        offset += len(numeric) * n
        paths.append(path)
    bg.advance(offset)
    return paths
