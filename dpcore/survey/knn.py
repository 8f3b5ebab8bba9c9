"""Deterministic k-nearest-neighbour donor imputation and L_1(D) (Merrill 2021, §6.3, §6.5.2).

Imputation is curator-side preprocessing: it releases nothing and spends no ε. What it
hands to the releases in :mod:`dpcore.survey.imputation` is L_1(D), the largest number
of donees whose donor set can change when one record is added or removed.

The scheme (Def 6.3.1)
----------------------
* Records whose ``target`` is missing are *donees* (T_i); the others are *donors* (T_c).
* Distance between two records on the matching attributes: squared Euclidean distance
  after one-hot coding the categorical attributes (a mismatch costs 2, as in §6.5.2) and
  coding each ordinal attribute by the position of its level. A missing matching value is
  its own level "NA"; for an ordinal attribute NA is ``na_distance`` (default 2) from
  every level. Distances are integers, so ties are exact.
* Tie-break (§6.5.2): among donors at equal distance, a donee takes the one with the
  lowest row position *above* its own, wrapping round to the top of the table. The row
  position is the record label, so the order f(x) on all possible donors is total.
* Donors of x: the k smallest in the order (distance, cyclic label). The imputed value is
  the donor's value (``copy``, k = 1), their mean (``mean``) or their most common value
  (``majority``; ties go to the value of the nearest donor).

L_1(D) (§6.3.2, §6.5.2), computed exactly
-----------------------------------------
The maximum of
* 1: adding or removing a donee changes only that donee;
* case 1: removing a donor y changes |don⁻¹(y)| donees;
* cases 2-4: adding a donor t at a point a of the public domain grid of the matching
  attributes (a point already holding donors, one holding only donees, or a new one).
  t enters don(x) iff d(x, a) < r_x (r_x: distance to x's k-th donor) or d(x, a) = r_x
  and t's label falls cyclically between x and its k-th donor. A new record may carry
  any label, so the label is chosen to cover the most such arcs.
Every point of the grid is tried (the thesis bounded case 4 instead); the grid is the
product of the declared levels (+ NA) and must stay below ``max_grid`` points.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dpcore.errors import InputError, OptionError

__all__ = ["KNNImputation", "knn_impute", "IMPUTE_METHODS"]

IMPUTE_METHODS = ("copy", "mean", "majority")
_CHUNK_CELLS = 4_000_000


@dataclass(frozen=True)
class KNNImputation:
    """Result of :func:`knn_impute` (curator-side; nothing here is DP)."""

    target: str
    match: tuple[str, ...]
    k: int
    method: str
    values: pd.Series = field(repr=False)          # target with the donees filled in
    observed: pd.Series = field(repr=False)        # target as given (NaN for donees)
    incomplete: np.ndarray = field(repr=False)     # bool per row: was a donee
    donors: np.ndarray = field(repr=False)         # (m, k) row positions, nearest first
    L1: int
    L1_cases: dict
    grid_size: int
    domain_inferred: bool
    levels: dict = field(repr=False)

    @property
    def n_donees(self) -> int:
        return int(self.incomplete.sum())

    @property
    def n_donors(self) -> int:
        return int((~self.incomplete).sum())

    @property
    def donee_counts(self) -> np.ndarray:
        """|don⁻¹(y)| for every row (0 for donees and unused donors)."""
        return np.bincount(self.donors.ravel(), minlength=len(self.incomplete))


# ------------------------------------------------------------------ encoding


def _levels_and_codes(df: pd.DataFrame, match, ordinal, levels, na_distance):
    """Per column: declared levels, integer codes (NA = last code) and a squared-distance table."""
    codes, tables, used_levels = [], [], {}
    inferred = False
    for col in match:
        s = df[col]
        na = s.isna().to_numpy()
        if levels is not None and col in levels:
            lv = list(levels[col])
            if len(set(map(str, lv))) != len(lv):
                raise OptionError(f"the declared levels of {col!r} repeat a value; list each level once")
        else:
            inferred = True
            vals = s[~na].unique()
            if col in ordinal:
                if not pd.api.types.is_numeric_dtype(s):
                    raise OptionError(
                        f"ordinal column {col!r} is not numeric, so its order is unknown: declare it, "
                        f"e.g. levels={{{col!r}: [lowest, ..., highest]}}"
                    )
                lv = sorted(vals.tolist())
            else:
                lv = sorted(vals.tolist(), key=str)
        lookup = {v: i for i, v in enumerate(lv)}
        try:
            c = np.array([lookup[v] if not m else len(lv) for v, m in zip(s.tolist(), na)], dtype=np.int64)
        except KeyError as exc:
            raise InputError(
                f"column {col!r} has the value {exc.args[0]!r}, which is not among its declared levels "
                f"{lv}; add it to the levels or recode the data"
            ) from None
        L = len(lv)
        idx = np.arange(L + 1)
        if col in ordinal:
            t = (idx[:, None] - idx[None, :]) ** 2
            nd = int(na_distance)
            t[L, :L] = nd
            t[:L, L] = nd
            t[L, L] = 0
        else:
            t = 2 * (idx[:, None] != idx[None, :]).astype(np.int64)
        codes.append(c)
        tables.append(t.astype(np.int64))
        used_levels[col] = lv
    return np.column_stack(codes), tables, used_levels, inferred


def _pair_dist(tables, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Squared distances between every row of code matrix A and every row of B."""
    out = np.zeros((len(A), len(B)), dtype=np.int64)
    for c, t in enumerate(tables):
        out += t[A[:, c][:, None], B[:, c][None, :]]
    return out


# ------------------------------------------------------------------ imputation


def _donors(codes, incomplete, k, tables):
    N = len(codes)
    pos = np.arange(N)
    inc_pos = pos[incomplete]
    com_pos = pos[~incomplete]
    Ui, gi = np.unique(codes[incomplete], axis=0, return_inverse=True)
    Uc, gc = np.unique(codes[~incomplete], axis=0, return_inverse=True)
    gi, gc = gi.reshape(-1), gc.reshape(-1)
    Dg = _pair_dist(tables, Ui, Uc)
    m, nc = len(inc_pos), len(com_pos)
    donors = np.empty((m, k), dtype=np.int64)
    rk = np.empty(m, dtype=np.int64)
    chunk = max(1, _CHUNK_CELLS // max(nc, 1))
    for s in range(0, m, chunk):
        sl = slice(s, min(m, s + chunk))
        dist = Dg[gi[sl]][:, gc]
        cyc = (com_pos[None, :] - inc_pos[sl, None] - 1) % N
        key = dist * N + cyc
        if k == 1:
            part = np.argmin(key, axis=1)[:, None]
        else:
            part = np.argpartition(key, k - 1, axis=1)[:, :k]
            order = np.argsort(np.take_along_axis(key, part, axis=1), axis=1)
            part = np.take_along_axis(part, order, axis=1)
        donors[sl] = com_pos[part]
        rk[sl] = np.take_along_axis(dist, part[:, -1:], axis=1)[:, 0]
    return donors, rk, gi, Ui


def _impute_values(y: pd.Series, incomplete, donors, method):
    vals = y.to_numpy()
    out = y.copy()
    if not incomplete.any():
        return out
    dv = vals[donors]  # (m, k)
    if method == "copy":
        new = dv[:, 0]
    elif method == "mean":
        if not pd.api.types.is_numeric_dtype(y):
            raise OptionError(f"method 'mean' needs a numeric target; {y.name!r} is not numeric. Use 'majority'")
        new = dv.astype(float).mean(axis=1)
        out = out.astype(float)
    else:  # majority: most common value, ties to the nearest donor's value
        codes, _ = pd.factorize(pd.Series(dv.ravel()))
        cm = codes.reshape(dv.shape)
        counts = (cm[:, :, None] == cm[:, None, :]).sum(axis=2)
        new = dv[np.arange(len(dv)), np.argmax(counts, axis=1)]
    out.iloc[np.flatnonzero(incomplete)] = new
    return out


# ------------------------------------------------------------------ L_1(D)


def _max_arc_cover(point_ids, starts, ends, n_points, N):
    """For arcs of gap positions [start, end] (inclusive, already unwrapped), the largest
    number of arcs sharing a gap, per point id. Returns an array of length n_points."""
    out = np.zeros(n_points, dtype=np.int64)
    if len(point_ids) == 0:
        return out
    ev_p = np.concatenate([point_ids, point_ids])
    ev_x = np.concatenate([starts, ends + 1])
    ev_d = np.concatenate([np.ones(len(starts), np.int64), -np.ones(len(ends), np.int64)])
    order = np.lexsort((ev_d, ev_x, ev_p))  # by point, position, and -1 before +1
    ev_p, ev_d = ev_p[order], ev_d[order]
    run = np.cumsum(ev_d)  # each point's events sum to 0, so runs do not leak between points
    first = np.flatnonzero(np.r_[True, ev_p[1:] != ev_p[:-1]])
    out[ev_p[first]] = np.maximum.reduceat(run, first)
    return out


def _l1(codes, incomplete, donors, rk, gi, Ui, tables, level_counts, max_grid):
    N = len(codes)
    pos = np.arange(N)
    inc_pos = pos[incomplete]
    m = len(inc_pos)
    cases = {"donee": 1, "remove_donor": 0, "add_donor_at_donor_point": 0,
             "add_donor_at_donee_point": 0, "add_donor_at_new_point": 0}
    if m == 0:
        return 1, cases, int(np.prod(level_counts))
    cases["remove_donor"] = int(np.bincount(donors.ravel()).max())
    grid_size = int(np.prod([int(x) for x in level_counts], dtype=np.int64))
    if grid_size > max_grid:
        raise OptionError(
            f"the matching attributes span {grid_size:,} possible points (the product of their levels, "
            f"NA included), more than max_grid = {max_grid:,}; L_1(D) is computed exactly over all of "
            "them, so use fewer or coarser matching attributes (or raise max_grid)"
        )
    grid = np.indices(level_counts).reshape(len(level_counts), -1).T
    # classify points: holds a donor / holds only donees / new
    mult = np.cumprod([1] + list(level_counts[::-1]))[:-1][::-1]
    flat = codes @ mult
    has_donor = np.zeros(grid_size, bool)
    has_donor[flat[~incomplete]] = True
    has_donee = np.zeros(grid_size, bool)
    has_donee[flat[incomplete]] = True
    kind = np.where(has_donor, 0, np.where(has_donee, 1, 2))
    kth = donors[:, -1]
    # arcs of gap positions where a new label beats the k-th donor: gaps x, x+1, ..., d-1 (mod N)
    a_start, a_end = inc_pos, kth - 1
    wrap = kth < inc_pos
    # donee pairs (group, r_x) with multiplicities, for the strict counts
    pair, pair_cnt = np.unique(np.column_stack([gi, rk]), axis=0, return_counts=True)
    best_per_kind = np.zeros(3, dtype=np.int64)
    best = max(1, cases["remove_donor"])
    chunk = max(1, _CHUNK_CELLS // max(len(Ui), m, 1))
    upper_all, strict_all = [], []
    for s in range(0, grid_size, chunk):
        D = _pair_dist(tables, grid[s:s + chunk], Ui)  # (points, donee groups)
        dp = D[:, pair[:, 0]]
        strict_all.append((dp < pair[:, 1]) @ pair_cnt)
        upper_all.append((dp <= pair[:, 1]) @ pair_cnt)
    strict = np.concatenate(strict_all)
    upper = np.concatenate(upper_all)
    np.maximum.at(best_per_kind, kind, strict)
    best = max(best, int(strict.max()))
    # exact counts only where the tie arcs could beat the best of the point's kind
    cand = np.flatnonzero(upper > np.minimum(best_per_kind[kind], best))
    cand = cand[np.argsort(-upper[cand], kind="stable")]
    step = max(1, _CHUNK_CELLS // m)
    for s in range(0, len(cand), step):
        pts = cand[s:s + step]
        pts = pts[upper[pts] > np.minimum(best_per_kind[kind[pts]], best)]
        if len(pts) == 0:
            continue
        D = _pair_dist(tables, grid[pts], Ui)[:, gi]  # (points, donees)
        pi, xi = np.nonzero(D == rk[None, :])
        st, en, wr = a_start[xi], a_end[xi], wrap[xi]
        # unwrap: a wrapping arc [x, N-1] ∪ [0, d-1]; the second part may be empty (d = 0)
        p1, s1, e1 = pi, st, np.where(wr, N - 1, en)
        second = wr & (en >= 0)
        p2, s2, e2 = pi[second], np.zeros(second.sum(), np.int64), en[second]
        cov = _max_arc_cover(np.concatenate([p1, p2]), np.concatenate([s1, s2]), np.concatenate([e1, e2]),
                             len(pts), N)
        tot = strict[pts] + cov
        np.maximum.at(best_per_kind, kind[pts], tot)
        best = max(best, int(tot.max()))
    cases["add_donor_at_donor_point"] = int(best_per_kind[0])
    cases["add_donor_at_donee_point"] = int(best_per_kind[1])
    cases["add_donor_at_new_point"] = int(best_per_kind[2])
    # a point is skipped only when strict + tied cannot beat what its kind (or the overall
    # maximum) already reached, so best is exact and so are the per-kind maxima up to best.
    return int(best), cases, grid_size


# ------------------------------------------------------------------ entry point


def _checked_columns(data: pd.DataFrame, target: str, match: Sequence[str],
                     ordinal: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The matching and ordinal columns of :func:`knn_impute`, checked against the table and the target."""
    if not isinstance(data, pd.DataFrame):
        raise InputError("data must be a pandas DataFrame")
    if target not in data.columns:
        raise InputError(f"target column {target!r} is not in the table; columns are {list(data.columns)}")
    match = tuple(match)
    if not match:
        raise OptionError("give at least one matching column (match=[...])")
    for c in match:
        if c not in data.columns:
            raise InputError(f"matching column {c!r} is not in the table; columns are {list(data.columns)}")
    if target in match:
        raise OptionError(f"the target {target!r} cannot also be a matching column")
    if len(set(match)) != len(match):
        raise OptionError(f"matching columns repeat: {list(match)}")
    ordinal = tuple(ordinal)
    for c in ordinal:
        if c not in match:
            raise OptionError(f"ordinal column {c!r} is not one of the matching columns {list(match)}")
    return match, ordinal


def _checked_options(method: str, k, na_distance) -> int:
    """The number of donors k of :func:`knn_impute` (a whole number ≥ 1), after checking ``method``
    and ``na_distance``."""
    if method not in IMPUTE_METHODS:
        raise OptionError(f"method must be one of {', '.join(IMPUTE_METHODS)}; got {method!r}")
    try:
        kk = int(k)
    except (TypeError, ValueError):
        raise OptionError(f"k must be a whole number ≥ 1; got {k!r}") from None
    if kk != k or kk < 1:
        raise OptionError(f"k must be a whole number ≥ 1; got {k!r}")
    if method == "copy" and kk != 1:
        raise OptionError("method 'copy' copies one donor, so it needs k = 1; use 'mean' or 'majority' for k > 1")
    if int(na_distance) != na_distance or na_distance < 0:
        raise OptionError(f"na_distance must be a whole number ≥ 0; got {na_distance!r}")
    return kk


def knn_impute(data: pd.DataFrame, target: str, match: Sequence[str], *, k: int = 1, method: str = "copy",
               ordinal: Sequence[str] = (), levels: Mapping[str, Sequence] | None = None,
               na_distance: int = 2, max_grid: int = 2_000_000) -> KNNImputation:
    """Impute the missing values of ``target`` from the k nearest complete records and
    compute L_1(D) exactly (module docstring). Releases nothing (no ε).

    ``levels`` declares the public levels of the matching attributes (in order for the
    ``ordinal`` ones); levels not declared are inferred from the data, which
    ``domain_inferred`` reports (inferred levels are not public: confirm them).
    """
    match, ordinal = _checked_columns(data, target, match, ordinal)
    kk = _checked_options(method, k, na_distance)
    df = data.reset_index(drop=True)
    incomplete = df[target].isna().to_numpy()
    n_donors = int((~incomplete).sum())
    if n_donors < kk + 1:
        raise OptionError(
            f"k = {kk} needs at least k + 1 = {kk + 1} records with {target!r} observed (donors), so that "
            f"removing one still leaves k; the table has {n_donors}. Use a smaller k"
        )
    codes, tables, used_levels, inferred = _levels_and_codes(df, match, set(ordinal), levels, na_distance)
    level_counts = tuple(len(used_levels[c]) + 1 for c in match)
    if incomplete.any():
        donors, rk, gi, Ui = _donors(codes, incomplete, kk, tables)
    else:
        donors = np.empty((0, kk), np.int64)
        rk = gi = np.empty(0, np.int64)
        Ui = np.empty((0, len(match)), np.int64)
    L1, cases, grid_size = _l1(codes, incomplete, donors, rk, gi, Ui, tables, level_counts, int(max_grid))
    values = _impute_values(df[target], incomplete, donors, method)
    values.index = data.index
    observed = data[target].copy()
    return KNNImputation(target, match, kk, method, values, observed, incomplete, donors, L1, cases,
                         grid_size, inferred, used_levels)


def global_donee_bound(imp: KNNImputation) -> int:
    """The thesis's *optimistic* stand-in for the global bound on donees per donor: the
    number of donees in the data (§6.5.3). It is data-dependent, so a Laplace release
    calibrated with it is NOT differentially private; it is a comparator only."""
    return imp.n_donees

