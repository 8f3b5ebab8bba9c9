"""Crafted tables one privacy unit apart, for the audits of unit-level releases (tests/privacy/test_unit_audit.py).

Records have an identifier ``id`` and three attributes a ∈ {x, y}, b ∈ {p, q}, c ∈ {u, v, w} (12 cells). The base
table B has 31 records of 15 ids with 1 to 3 records each, and one id with 5 (more than K = 3: bounding drops two
of them at random, in both tables of a pair), none in the audited cell T = (y, q, w) or the source cell S = (x, p, u).
The audited id ``"unit"`` has K records, all in one cell, where they make the most difference:

* add/remove: D = B, D' = B plus the unit's K records in T (the unit's records concentrated in the cell the
  statistics look at);
* replace: D = B plus the unit's K records in S, D' = the same id's K records moved to T (all K records leave one
  cell for another: the count tables' L1 change 2K is attained).

Each run records the length of the first synthetic set and its counts of T and of S records.

The wide release (``panel_time="year"``) audits a panel of 24 ids over the years 2001 and 2002 (a ∈ {x, y}; ids
with one or both years, one with two records in 2001); the audited id has a = y in both years (the path T), which
no other id has; the replace pair moves it from x in both (the path S). Each run records the number of synthetic
ids and how many of them have the path T and the path S.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

import dpcore

#: the records one unit may keep (K)
K = 3
#: the cell the statistics look at, and the cell the replace pair moves the unit's records from
T = ("y", "q", "w")
S = ("x", "p", "u")
COLUMNS = ("a", "b", "c")

# (id, cell) of the base records: ids of 1, 2 and 3 records, and id 15 with 5 (more than K)
_CELLS = [(a, b, c) for a in "xy" for b in "pq" for c in "uvw" if (a, b, c) not in (T, S)]
_SIZES = [1, 2, 3] * 5 + [5]


def _base() -> pd.DataFrame:
    rows, i = [], 0
    for unit, size in enumerate(_SIZES):
        for _ in range(size):
            rows.append((f"id{unit}", *_CELLS[i % len(_CELLS)]))
            i += 1
    return pd.DataFrame(rows, columns=["id", *COLUMNS])


def with_unit(base: pd.DataFrame, cell: tuple, records: int, uid: str = "unit") -> pd.DataFrame:
    """``base`` with one more id, ``uid``, holding ``records`` records all in ``cell``."""
    unit = pd.DataFrame([(uid, *cell)] * records, columns=["id", *COLUMNS])
    return pd.concat([base, unit], ignore_index=True)


B = _base()


def unit_pairs(records: int) -> dict:
    """Neighbouring tables one id apart, per notion, the audited id holding ``records`` records (in T in the
    second table; in S in the first under replace)."""
    return {
        "add_remove": (B, with_unit(B, T, records)),
        "replace": (with_unit(B, S, records), with_unit(B, T, records)),
    }


#: the pairs of the audits: the unit's K records in T in the second table
PAIRS = unit_pairs(K)
#: the same with a unit of 3K records: bounding keeps K of them (a random subset), so after it these pairs are as
#: far apart as PAIRS; without bounding they would be 3K records apart
BIG_PAIRS = unit_pairs(3 * K)
DOMAIN = dpcore.infer_domain(with_unit(with_unit(B, T, 1), S, 1).drop(columns="id")).declared()


def bounded_n(k: int = K) -> int:
    """Records the base table keeps after bounding to ``k`` per id: with the audited id's k, n of a replace
    release, the centre of the length events."""
    return sum(min(s, k) for s in _SIZES)


BOUNDED_N = bounded_n(K)


def _counts(frame: pd.DataFrame) -> tuple[int, int, int]:
    """(length, count of T, count of S) of a synthetic set."""
    values = frame[list(COLUMNS)].to_numpy(dtype=object)
    return (
        len(frame),
        int((values == np.array(T, dtype=object)).all(axis=1).sum()),
        int((values == np.array(S, dtype=object)).all(axis=1).sum()),
    )


def statistics(method: str, options: dict, notion: str, epsilon: float, records_per_unit: int = K):
    """A function (table, seed) -> (length, count of T, count of S) of one release protecting each id."""

    def run(table, seed):
        rel = dpcore.synthesize(
            table,
            method,
            epsilon,
            seed=seed,
            domain=DOMAIN,
            neighbours=notion,
            privacy_unit="id",
            records_per_unit=records_per_unit,
            **options,
        )
        return _counts(rel.sets[0])

    return run


def record_statistics(method: str, options: dict, notion: str, epsilon: float):
    """The same statistics of a release that protects records, run on the table without its ids (what a release
    that forgot the unit would do)."""

    def run(table, seed):
        rel = dpcore.synthesize(
            table.drop(columns="id"), method, epsilon, seed=seed, domain=DOMAIN, neighbours=notion, **options
        )
        return _counts(rel.sets[0])

    return run


def events(a: np.ndarray, b: np.ndarray, center: int = BOUNDED_N + K, k: int = K):
    """Threshold events declared before the runs, on (length, count of T, count of S) per run, scaled by the
    unit's k (step = max(1, k // 3)): the length ≥ t (t = center − 6 .. center + 4, step 2; center the bounded
    table's size), the count of T ≥ t (t = 1..4k), the count of S ≥ t (t = 1..3k − 1), T − S ≥ t (t = 1 − 3k ..
    3k − 1, step 2), and min(T, k) − min(S, k) ≥ t (t = 1 − k..k): the shape of the likelihood ratio of k
    records moved from S to T under Laplace-type noise, the audit's most powerful events. For k = 3: 6 + 12 + 8
    + 9 + 6 = 41 events, 164 one-sided tests in the Bonferroni family."""
    step = max(1, k // 3)
    lengths = np.arange(center - 6, center + 6, 2)
    t_cells, s_cells = np.arange(1, 4 * k + 1, step), np.arange(1, 3 * k, step)
    diffs, capped = np.arange(1 - 3 * k, 3 * k, 2 * step), np.arange(1 - k, k + 1, step)

    def hits(x):
        t, s = x[:, 1:2], x[:, 2:3]
        return np.concatenate(
            [
                x[:, :1] >= lengths,
                t >= t_cells,
                s >= s_cells,
                t - s >= diffs,
                np.minimum(t, k) - np.minimum(s, k) >= capped,
            ],
            axis=1,
        )

    names = (
        [f"length ≥ {t}" for t in lengths]
        + [f"T count ≥ {t}" for t in t_cells]
        + [f"S count ≥ {t}" for t in s_cells]
        + [f"T − S count ≥ {t}" for t in diffs]
        + [f"min(T, {k}) − min(S, {k}) ≥ {t}" for t in capped]
    )
    return hits(np.asarray(a)), hits(np.asarray(b)), names


# --------------------------------------------------------------------------- the wide release of a panel
YEARS = (2001, 2002)
#: the path the audited id has, and the one the replace pair moves it from: its a in 2001 and in 2002
PATH_T = ("y", "y")
PATH_S = ("x", "x")
#: the other ids' paths (None: no record that year), none of them T or S
_PANEL_PATHS = [("x", None), ("x", "y"), ("y", "x"), (None, "x"), ("y", None), (None, "y")]
PANEL_UNITS = 24


def _panel_rows(uid: str, path) -> list:
    return [(uid, year, a) for year, a in zip(YEARS, path) if a is not None]


def _panel_base() -> pd.DataFrame:
    rows = []
    for i in range(PANEL_UNITS):
        rows += _panel_rows(f"p{i}", _PANEL_PATHS[i % len(_PANEL_PATHS)])
    rows.append(("p0", 2001, "y"))  # a second record of p0 in 2001: the pivot keeps one of the two at random
    return pd.DataFrame(rows, columns=["id", "year", "a"])


def with_path(base: pd.DataFrame, path, uid: str = "unit") -> pd.DataFrame:
    return pd.concat([base, pd.DataFrame(_panel_rows(uid, path), columns=base.columns)], ignore_index=True)


PANEL = _panel_base()
PANEL_PAIRS = {
    "add_remove": (PANEL, with_path(PANEL, PATH_T)),
    "replace": (with_path(PANEL, PATH_S), with_path(PANEL, PATH_T)),
}
#: year's levels (the periods) and a's, declared: the wide domain has a@2001 and a@2002, each with "NA" (9 cells)
PANEL_DOMAIN = dpcore.infer_domain(with_path(PANEL, PATH_T).drop(columns="id")).declared()


def _paths(s: pd.DataFrame, path) -> int:
    """How many synthetic ids have ``path``: its a in each year, both years present."""
    sets = [set(s["id"][(s["year"].astype(str) == str(year)) & (s["a"] == a)]) for year, a in zip(YEARS, path)]
    return len(set.intersection(*sets))


def panel_statistics(method: str, options: dict, notion: str, epsilon: float):
    """A function (panel, seed) -> (synthetic ids, ids with the path T, ids with the path S) of one wide release."""

    def run(table, seed):
        rel = dpcore.synthesize(
            table,
            method,
            epsilon,
            seed=seed,
            domain=PANEL_DOMAIN,
            neighbours=notion,
            privacy_unit="id",
            panel_time="year",
            **options,
        )
        s = rel.sets[0]
        return s["id"].nunique(), _paths(s, PATH_T), _paths(s, PATH_S)

    return run
