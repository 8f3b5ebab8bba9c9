"""Table-based utility: S_pMSE and pMSE of low-order cross-tabulations (docs/measures.md).

These match synthpop's ``utility.tab`` (Raab 2022, Voas–Williams form).

**Not differentially private.**  Every measure here reads the raw (original) data.
They are for the curator's own evaluation of a synthesis; the numbers must not be
published as if covered by the release's ε.

Also holds the shared encoding used by :mod:`dpcore.metrics.disclosure`: each
column of the original and all synthetic sets is factorised jointly, missing values
become their own level, and cells are counted with ``np.bincount`` on
mixed-radix cell codes (or on hashed codes when the cross-tabulation is too large
to allocate).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pandas as pd

from dpcore.errors import InputError, OptionError

__all__ = ["UtilityTables", "WorstTable", "utility_tables", "synthetic_set_list", "encode_sets", "cell_ids",
           "split_counts"]

# Dense bincount up to this many cells; above it, count only the non-empty cells.
_DENSE_LIMIT = 1 << 24
# Keep mixed-radix codes below this bound so int64 arithmetic cannot overflow.
_CODE_LIMIT = 1 << 62


# --------------------------------------------------------------------------- encoding


def synthetic_set_list(syns: pd.DataFrame | Sequence[pd.DataFrame]) -> list[pd.DataFrame]:
    """The synthetic sets as a non-empty list of DataFrames (one DataFrame is a list of one);
    an InputError for an empty list or a set that is not a DataFrame."""
    if isinstance(syns, pd.DataFrame):
        return [syns]
    out = list(syns)
    if not out:
        raise InputError("no synthetic data sets given: pass a DataFrame or a non-empty list")
    for i, s in enumerate(out, start=1):
        if not isinstance(s, pd.DataFrame):
            raise InputError(f"synthetic set {i} is a {type(s).__name__}, not a DataFrame")
    return out


def _check_columns(orig: pd.DataFrame, syns: list[pd.DataFrame]) -> None:
    names = list(orig.columns)
    if len(set(names)) != len(names):
        dup = sorted({str(c) for c in names if names.count(c) > 1})
        raise InputError(f"original data has duplicated column names {dup}")
    want = set(names)
    for i, s in enumerate(syns, start=1):
        have = set(s.columns)
        extra = [c for c in s.columns if c not in want]
        missing = [c for c in names if c not in have]
        if extra or missing:
            parts = []
            if missing:
                parts.append(f"missing column(s) {missing}")
            if extra:
                parts.append(f"extra column(s) {extra}")
            raise InputError(
                f"synthetic set {i} does not match the original's columns: " + "; ".join(parts)
            )


def _encode(frames: list[pd.DataFrame], columns: Sequence) -> tuple[np.ndarray, list[int]]:
    """Jointly factorise ``columns`` over all ``frames``.

    Returns an int64 matrix of shape (total rows, len(columns)), the frames' rows
    stacked in order, and the number of levels of each column (levels present in
    any frame; missing values form one extra level, the last code, if present).
    """
    total = sum(len(f) for f in frames)
    codes = np.empty((total, len(columns)), dtype=np.int64)
    n_levels: list[int] = []
    for j, col in enumerate(columns):
        parts = [f[col] for f in frames]
        if all(isinstance(p.dtype, pd.CategoricalDtype) for p in parts) and all(
            p.cat.categories.equals(parts[0].cat.categories) for p in parts
        ):
            c = np.concatenate([p.cat.codes.to_numpy(dtype=np.int64) for p in parts])
        else:
            values = pd.concat(parts, ignore_index=True)
            if isinstance(values.dtype, pd.CategoricalDtype):
                values = values.astype(object)
            c, _ = pd.factorize(values, use_na_sentinel=True)
            c = c.astype(np.int64, copy=False)
        # Keep only the levels present (categoricals may declare unused ones).
        present = np.bincount(c[c >= 0]) if (c >= 0).any() else np.zeros(0, np.int64)
        remap = np.cumsum(present > 0) - 1
        k = int((present > 0).sum())
        na = c < 0
        c = np.where(na, k, remap[np.maximum(c, 0)] if present.size else 0)
        codes[:, j] = c
        n_levels.append(k + int(na.any()))
    return codes, n_levels


def cell_ids(codes: np.ndarray, n_levels: Sequence[int]) -> tuple[np.ndarray, int]:
    """Map each row of ``codes`` to a cell id in ``[0, n_cells)``.

    If the full cross-tabulation has at most ``_DENSE_LIMIT`` cells the id is the
    mixed-radix (``ravel_multi_index``) code and ``n_cells`` is the product of the
    levels.  Otherwise ids index the distinct observed rows only (found by hashing
    partial codes), so no array of the full size is ever allocated.
    """
    if codes.shape[1] == 0:
        return np.zeros(codes.shape[0], dtype=np.int64), 1
    full = math.prod(int(k) for k in n_levels)
    if full <= _DENSE_LIMIT:
        return np.ravel_multi_index(tuple(codes.T), tuple(int(k) for k in n_levels)), full
    ids = codes[:, 0].copy()
    bound = int(n_levels[0])
    for j in range(1, codes.shape[1]):
        k = int(n_levels[j])
        if bound * k > _CODE_LIMIT:
            ids, uniq = pd.factorize(ids)
            ids = ids.astype(np.int64, copy=False)
            bound = len(uniq)
        ids = ids * k + codes[:, j]
        bound *= k
    if bound > _DENSE_LIMIT:
        ids, uniq = pd.factorize(ids)
        ids = ids.astype(np.int64, copy=False)
        bound = len(uniq)
    return ids, bound


def split_counts(ids: np.ndarray, n_cells: int, bounds: Sequence[int]) -> list[np.ndarray]:
    """Cell counts of each row block ``ids[bounds[i]:bounds[i+1]]``."""
    return [
        np.bincount(ids[a:b], minlength=n_cells) for a, b in zip(bounds[:-1], bounds[1:])
    ]


def encode_sets(orig, syns, columns=None):
    """Check the original and the synthetic sets and encode them jointly on ``columns`` (all of
    the original's by default): (syns as a list, columns, codes of every row of the original then
    each set, levels per column, row bounds of each frame in ``codes``)."""
    syns = synthetic_set_list(syns)
    if not isinstance(orig, pd.DataFrame):
        raise InputError(f"original data is a {type(orig).__name__}, not a DataFrame")
    _check_columns(orig, syns)
    if columns is None:
        columns = list(orig.columns)
    else:
        columns = list(columns)
        unknown = [c for c in columns if c not in orig.columns]
        if unknown:
            raise InputError(f"columns {unknown} are not in the original data")
        if len(set(columns)) != len(columns):
            raise InputError(f"columns {columns} contain duplicates")
    frames = [orig] + syns
    codes, n_levels = _encode(frames, columns)
    bounds = np.cumsum([0] + [len(f) for f in frames]).tolist()
    return syns, columns, codes, n_levels, bounds


# --------------------------------------------------------------------------- utility


def _tab_stats(y: np.ndarray, s: np.ndarray) -> tuple[float, float, int]:
    """synthpop ``utility.tab``: (S_pMSE, pMSE, df) for original ``y`` / synthetic ``s``."""
    keep = (y + s) > 0
    y = y[keep].astype(float)
    s = s[keep].astype(float)
    df = int(keep.sum()) - 1
    sy, ss = y.sum(), s.sum()
    big_n = sy + ss
    if ss == 0 or sy == 0:
        # c is 0 or 1: the propensity model is degenerate.
        return float("nan"), float("nan"), df
    c = ss / big_n
    expected = (y + s) * c
    d = s - y * c / (1.0 - c)
    vw = float(np.sum(d * d / expected))
    pmse = vw * c * (1.0 - c) ** 2 / big_n
    s_pmse = vw / df if df > 0 else float("nan")
    return s_pmse, pmse, df


class WorstTable(NamedTuple):
    """The table with the largest S_pMSE averaged over the synthetic sets."""

    variables: tuple
    s_pmse: float


@dataclass(frozen=True)
class UtilityTables:
    """Result of :func:`utility_tables`.  NOT differentially private (reads the raw data).

    Attributes
    ----------
    per_table:
        tidy DataFrame, one row per (set, table): ``set`` (1-based), ``variables``
        (tuple of names), ``s_pmse``, ``pmse``, ``df``.
    mean_s_pmse:
        mean S_pMSE over all tables and sets (tables with df = 0, whose S_pMSE is
        NaN, are left out).
    worst:
        the table with the largest mean-over-sets S_pMSE.
    per_set_mean:
        mean S_pMSE over tables, for each set in order.
    order:
        the number of variables per table (2 or 3).
    """

    per_table: pd.DataFrame
    mean_s_pmse: float
    worst: WorstTable
    per_set_mean: list
    order: int = 2


def _nanmean(x) -> float:
    x = np.asarray(x, dtype=float)
    x = x[~np.isnan(x)]
    return float(x.mean()) if x.size else float("nan")


def utility_tables(
    orig: pd.DataFrame,
    syns: pd.DataFrame | Sequence[pd.DataFrame],
    order: int = 2,
    columns: Sequence | None = None,
) -> UtilityTables:
    """S_pMSE and pMSE of every ``order``-way table, for each synthetic set.

    For the variables V of one table, with y the original and s the synthetic cell
    counts (missing values a level of their own), cells with y + s = 0 are dropped,
    then df = cells kept − 1, c = Σs/(Σs+Σy), E = (y+s)c, d = s − y·c/(1−c),
    VW = Σ d²/E, S_pMSE = VW/df (NaN if df = 0) and pMSE = VW·c(1−c)²/N with
    N = Σs+Σy.  These are synthpop's ``utility.tab`` values.

    Parameters
    ----------
    orig:
        the original data (categorical columns).
    syns:
        one synthetic DataFrame or a list of m of them, with the same column names.
    order:
        2 for all two-way tables, 3 for all three-way tables.
    columns:
        optional subset of the columns to tabulate.

    **Not differentially private**: this reads the original data.  It is for the
    curator's evaluation; do not publish the results as covered by ε.
    """
    if order not in (2, 3):
        raise OptionError(f"order must be 2 or 3, got {order!r}")
    syns, columns, codes, n_levels, bounds = encode_sets(orig, syns, columns)
    if len(columns) < order:
        raise OptionError(
            f"order {order} needs at least {order} columns, got {len(columns)}: {columns}"
        )

    combos = list(itertools.combinations(range(len(columns)), order))
    m = len(syns)
    n_rows = len(combos) * m
    set_col = np.empty(n_rows, dtype=np.int64)
    var_col: list[tuple] = [()] * n_rows
    sp = np.empty(n_rows)
    pm = np.empty(n_rows)
    dfs = np.empty(n_rows, dtype=np.int64)
    r = 0
    for combo in combos:
        ids, n_cells = cell_ids(codes[:, combo], [n_levels[j] for j in combo])
        counts = split_counts(ids, n_cells, bounds)
        y = counts[0]
        names = tuple(columns[j] for j in combo)
        for i in range(m):
            sp[r], pm[r], dfs[r] = _tab_stats(y, counts[i + 1])
            set_col[r] = i + 1
            var_col[r] = names
            r += 1

    per_table = pd.DataFrame(
        {"set": set_col, "variables": pd.Series(var_col, dtype=object),
         "s_pmse": sp, "pmse": pm, "df": dfs}
    )
    # rows are grouped by table, m consecutive rows each
    by_table = sp.reshape(len(combos), m)
    with np.errstate(all="ignore"):
        table_means = np.array([_nanmean(row) for row in by_table])
    if np.all(np.isnan(table_means)):
        worst = WorstTable(tuple(columns[j] for j in combos[0]), float("nan"))
    else:
        w = int(np.nanargmax(table_means))
        worst = WorstTable(tuple(columns[j] for j in combos[w]), float(table_means[w]))
    per_set_mean = [_nanmean(by_table[:, i]) for i in range(m)]
    return UtilityTables(
        per_table=per_table,
        mean_s_pmse=_nanmean(sp),
        worst=worst,
        per_set_mean=per_set_mean,
        order=order,
    )
