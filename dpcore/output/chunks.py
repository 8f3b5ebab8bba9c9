"""Writing long synthetic sets in chunks (CSV or Parquet), identical to the whole-set decode.

:meth:`dpcore.data.domain.Domain.decode` turns a set's codes into values, drawing one uniform
``rng.random(n)`` per numeric attribute (a value inside its bin), attribute after
attribute, set after set. Decoding a chunk of rows must draw the same uniforms: with
NumPy's PCG64 one double is one step of the stream, so the generator for rows
[a, b) of the k-th numeric attribute of a set is the decode start state advanced by
``offset + k·n + a`` (:func:`_generator_at`); at the end the release's generator is
advanced past everything, as after a whole decode. ``tests/test_engines.py`` checks
the files against :func:`dpcore.synthesize`'s sets.

Codes waiting to be written are kept compact (one byte per value for attributes of at
most 256 levels) and spilled to a temporary ``.npy`` file when large, so m sets are
never all in memory.

Privacy: decoding and writing are post-processing of released codes (docs/privacy-model.md).
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from dpcore.data.domain import Attribute, Domain, _dtype_kind
from dpcore.errors import OptionError

FORMATS = ("csv", "parquet")
#: rows decoded and written at a time
CHUNK_ROWS = 1_000_000
#: sets with more code bytes than this wait on disk, not in memory
SPILL_BYTES = 64 << 20


def check_format(fmt: str) -> str:
    if fmt not in FORMATS:
        raise OptionError(f"--format must be one of {', '.join(FORMATS)}; got {fmt!r}")
    return fmt


def compact(codes: np.ndarray, shape) -> np.ndarray:
    """The same codes in the smallest unsigned dtype holding every level."""
    top = max(shape, default=1)
    dtype = np.uint8 if top <= 2**8 else np.uint16 if top <= 2**16 else np.int64
    return np.asarray(codes).astype(dtype, copy=False)


class Spool:
    """Holds each set's codes, compact, on disk when large; ``keep`` is what
    :func:`dpcore.api.synthesize_codes` calls on every set as it is drawn."""

    def __init__(self, shape):
        self.shape = tuple(shape)
        self._dir = None

    def keep(self, codes: np.ndarray) -> np.ndarray:
        c = compact(codes, self.shape)
        if c.nbytes <= SPILL_BYTES:
            return c
        if self._dir is None:
            self._dir = tempfile.TemporaryDirectory(prefix="dpcore-sets-")
        path = Path(self._dir.name) / f"set_{len(list(Path(self._dir.name).iterdir()))}.npy"
        np.save(path, c)
        del c
        return np.load(path, mmap_mode="r")

    def close(self) -> None:
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None


def _generator_at(state: dict, steps: int) -> np.random.Generator:
    bg = np.random.PCG64()
    bg.state = state
    bg.advance(steps)
    return np.random.Generator(bg)


def _target_dtype(a: Attribute, has_na: bool) -> str:
    kind = _dtype_kind(a.dtype)
    if has_na and kind in "iu":
        return "Int64"
    if has_na and kind == "b":
        return "boolean"
    return a.dtype


def _arrow_type(a: Attribute) -> pa.DataType:
    kind = _dtype_kind(a.dtype)
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


def write_sets(codes_sets: list, dom: Domain, rng: np.random.Generator, out_dir: Path, fmt: str = "csv",
               chunk_rows: int = CHUNK_ROWS, progress=None) -> list[Path]:
    """Write ``synthetic_1.<fmt> …`` from each set's codes, ``chunk_rows`` rows at a time.

    The values equal ``dom.decode(codes, rng)`` set after set (module docstring); ``rng``
    ends where those decodes would leave it.
    """
    check_format(fmt)
    bg = rng.bit_generator
    if not isinstance(bg, np.random.PCG64):
        raise TypeError("chunked decoding needs the release's PCG64 generator")
    state = bg.state
    numeric = [j for j, a in enumerate(dom.attributes) if a.kind == "numeric"]
    schema = pa.schema([(a.name, _arrow_type(a)) for a in dom.attributes])
    levels = [_arrow_levels(a) if a.kind == "categorical" else None for a in dom.attributes]
    offset, paths = 0, []
    for s, codes in enumerate(codes_sets, 1):
        n = len(codes)
        path = Path(out_dir) / f"synthetic_{s}.{fmt}"
        has_na = [bool(a.na and (np.asarray(codes[:, j]) == len(a.levels)).any()) for j, a in enumerate(dom.attributes)]
        writer = pq.ParquetWriter(path, schema) if fmt == "parquet" else None
        try:
            for start in range(0, max(n, 1), chunk_rows):
                stop = min(n, start + chunk_rows)
                block = np.asarray(codes[start:stop], dtype=np.int64)
                if fmt == "parquet":
                    arrays = [levels[j].take(pa.array(block[:, j])) if a.kind == "categorical" else
                              _arrow_column(a, a.decode(block[:, j], _generator_at(state, offset + numeric.index(j) * n + start)))
                              for j, a in enumerate(dom.attributes)]
                    writer.write_table(pa.Table.from_arrays(arrays, schema=schema))
                    if progress:
                        progress(f"set {s}: wrote {stop:,} of {n:,} rows")
                    continue
                cols = {}
                for j, a in enumerate(dom.attributes):
                    g = _generator_at(state, offset + numeric.index(j) * n + start) if j in numeric else None
                    col = a.decode(block[:, j], g if g is not None else np.random.default_rng(0))
                    target = _target_dtype(a, has_na[j])
                    if str(col.dtype) != target:
                        try:
                            col = col.astype(target)
                        except (TypeError, ValueError):
                            pass
                    cols[a.name] = col
                pd.DataFrame(cols).to_csv(path, index=False, header=start == 0, mode="w" if start == 0 else "a")
                if progress:
                    progress(f"set {s}: wrote {stop:,} of {n:,} rows")
        finally:
            if writer is not None:
                writer.close()
        offset += len(numeric) * n
        paths.append(path)
    bg.advance(offset)
    return paths
