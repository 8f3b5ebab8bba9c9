"""A release with nothing declared: every column's domain found with DP inside the release.

``dpcore.synthesize(df, ..., domain="dp")``. What is public before the data is read: the column
names and their types (numbers, true/false, text), never a value. Then, with ``domain_share`` of the
release's budget (default 10%, split evenly over the columns that spend), charged to the release's
ledger in its own group "DP domain":

* a numeric column: DP bounds (:func:`dpcore.measure.bounds.dp_bounds`, :data:`BOUNDS_SHARE` of its
  share), refined inside on tables large enough for it (:func:`dpcore.measure.bounds.refine_bounds`,
  :data:`REFINE_SHARE`), then DP
  bin edges over them with the rest: ``domain_bins="privtree"`` (default) PrivTree's leaves
  (:func:`dpcore.measure.privtree.privtree_bins`, docs/methods/privtree.md), ``"quantiles"`` DP quantile
  edges (:func:`dpcore.measure.quantiles.quantile_edges`); a whole-number
  column whose DP range holds at most :data:`MAX_WHOLE_BINS` numbers gets one bin per number instead,
  and its edges share goes back to the synthetic sets;
* a true/false column: the levels False and True (public from the type; nothing spent);
* a text column: DP levels (:func:`dpcore.measure.levels.dp_levels`; (ε, δ) only) and "other".

A numeric column whose DP bounds histogram has no bin standing out of the noise (:data:`WITHHOLD_PROBABILITY`
in dpcore.measure.bounds) is withheld: one bin, nothing more spent on it, every synthetic value missing, and a
warning in the release. Values outside the DP bounds are clamped into the end bins, values outside the DP levels become
"other", and missing values whose "missing" bin did not pass are recoded too; how many records
each change touched is CURATOR-ONLY (NOT DP), never published. Proofs: docs/methods/dp-domain.md.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpcore.data.domain import (
    DEFAULT_NUMERIC_BINS,
    DP_BOUNDS,
    DP_FOUND,
    ZERO_POINT_WIDTH,
    Attribute,
    Domain,
    check_table,
    dtype_kind,
    numeric_attribute,
)
from dpcore.data.schema import ColumnType, Schema
from dpcore.errors import DomainError, OptionError, real_number
from dpcore.measure.bounds import MIN_EXPONENT, REFINE_BINS, dp_bounds, refine_bounds, refine_threshold
from dpcore.measure.levels import OTHER, FoundLevels, dp_levels
from dpcore.measure.privtree import PRIVTREE_MAX_DEPTH, PRIVTREE_THETA_SHARE, distinct_labels, privtree_bins
from dpcore.measure.quantiles import BIN_METHODS, quantile_edges
from dpcore.privacy.budget import Budget
from dpcore.privacy.definitions import Definition
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.neighbours import Neighbours
from dpcore.privacy.zcdp import check_delta

#: Default share of the release's budget spent on finding the domain (``domain_share``).
DEFAULT_DOMAIN_SHARE = 0.25
#: Share of the release's δ spent on the thresholds of DP levels (the rest converts ρ to (ε, δ)).
LEVELS_DELTA_SHARE = 0.5
#: A whole-number column whose DP range holds at most this many numbers gets one bin per number.
MAX_WHOLE_BINS = 32
#: A numeric column's share: its DP bounds (powers of two), their refinement, and (the rest) its bin edges.
BOUNDS_SHARE, REFINE_SHARE = 0.25, 0.2
NUMERIC, BOOLEAN, TEXT = "numeric", "boolean", "text"
#: How a numeric column's bins are found over its DP bounds (``domain_bins``): one of BIN_METHODS ("quantiles",
#: "privtree"; dpcore.measure.quantiles, shared with ``dp_bins``' "method"). The default: PrivTree, closer to the
#: data than the quantiles on 63 of the corpus's 102 numeric columns (normalised W1, MST at (1, 10⁻⁹), seeds 0–2;
#: bench/RESULTS.md).
DEFAULT_BIN_METHOD = "privtree"


def check_share(share: object, name: str = "domain_share") -> float:
    """The share of the budget spent on the domain: a number strictly between 0 and 1."""
    return real_number(f"{name} (the share of ε spent on finding the domain privately)",
                       DEFAULT_DOMAIN_SHARE if share is None else share, 0, 1, lo_open=True, hi_open=True)


def check_bin_method(method: str | None) -> str:
    """``domain_bins``: how numeric columns are binned over their DP bounds (default "privtree")."""
    if method is None:
        return DEFAULT_BIN_METHOD
    if method not in BIN_METHODS:
        raise OptionError(f"domain_bins must be one of {', '.join(BIN_METHODS)}; got {method!r}")
    return method


LEVELS, DECLARED_LEVELS = "levels", "declared levels"
#: How much of the domain's share each kind of column takes (its weight in the split): a numeric column finds
#: bounds and then bins (two steps), a levels column one histogram; true/false and declared levels nothing.
WEIGHTS = {NUMERIC: 2.0, LEVELS: 1.0, TEXT: 1.0, BOOLEAN: 0.0, DECLARED_LEVELS: 0.0}
#: A whole-number code under pure ε (no δ for DP levels): one bin per number over its DP bounds, up to this many.
MAX_CODE_BINS = 128


def column_kinds(data: pd.DataFrame, schema: Schema | None = None, pure: bool = False) -> dict[str, str]:
    """Each column's kind from its declared type alone (public; no value read): numeric, boolean, levels (text
    or a whole-number code, found as DP levels), or declared levels. ``schema`` None: the frame's own dtypes
    (the API's declaration, :meth:`Schema.from_dtypes`). Under pure ε a whole-number code is numeric (one bin
    per number)."""
    schema = Schema.from_dtypes(data) if schema is None else schema
    kinds = {}
    for col in schema.columns:
        if col.type == BOOLEAN:
            kinds[col.name] = BOOLEAN
        elif col.levels is not None:
            kinds[col.name] = DECLARED_LEVELS
        elif col.type == "text" or (col.levels_column and not pure):
            kinds[col.name] = LEVELS
        else:
            kinds[col.name] = NUMERIC
    return kinds


@dataclass(frozen=True)
class DomainPlan:
    """What ``domain="dp"`` will do, decided from public facts only (the declared schema, δ, the share)."""

    kinds: dict[str, str]
    share: float
    levels_delta: float  # the part of δ spent on the levels' thresholds (0 without levels columns)
    bins: str = DEFAULT_BIN_METHOD  # how numeric columns are binned over their DP bounds (``domain_bins``)
    schema: Schema | None = None

    @property
    def spending(self) -> list[str]:
        return [c for c, k in self.kinds.items() if WEIGHTS[k] > 0]

    @property
    def text_columns(self) -> list[str]:
        """The columns whose levels are found with DP (text and whole-number codes)."""
        return [c for c, k in self.kinds.items() if k in (LEVELS, TEXT)]

    def split(self) -> dict[str, float]:
        """Each column's part of the domain's budget (they add up to 1 over the columns that spend): by what
        the column needs (:data:`WEIGHTS`), from its declared type alone."""
        total = sum(WEIGHTS[k] for k in self.kinds.values())
        return {c: (WEIGHTS[k] / total if total else 0.0) for c, k in self.kinds.items()}

    def declared(self, name: str, data: pd.DataFrame) -> ColumnType:
        """``name``'s declared type: the schema's, or (no schema) the one its dtype declares (the API's rule)."""
        return self.schema[name] if self.schema is not None else Schema.from_dtypes(data[[name]]).columns[0]

    def nullable(self, name: str, data: pd.DataFrame) -> bool:
        """Whether ``name`` has the level "missing": declared (the schema), or its dtype can hold one."""
        return self.declared(name, data).nullable

    def nonnegative(self, name: str, data: pd.DataFrame) -> bool:
        """Whether ``name`` is declared never negative (a whole-number count: :attr:`ColumnType.nonnegative`)."""
        return self.declared(name, data).nonnegative


def plan_dp_domain(data: pd.DataFrame, delta: float | None, share: float | None, bins: str | None = None,
                   schema: Schema | None = None) -> DomainPlan:
    """Check ``domain="dp"`` before anything is spent: refused for undeclared text levels under pure ε."""
    share = check_share(share)  # the options first: a bad one costs no reading
    bins = check_bin_method(bins)
    check_table(data)
    kinds = column_kinds(data, schema, pure=delta is None)
    text = [c for c, k in kinds.items() if k in (LEVELS, TEXT)]
    if text and delta is None:
        raise OptionError(f"domain=\"dp\" needs delta for text column(s) {', '.join(map(repr, text))}: releasing "
                          "a set of levels read from the data needs δ > 0 (a pure-ε release would need the universe "
                          "of levels to be public); give delta (e.g. 1e-9), or declare their levels")
    return DomainPlan(kinds, share, LEVELS_DELTA_SHARE * check_delta(delta) if text else 0.0, bins, schema)


def dp_domain(data: pd.DataFrame, plan: DomainPlan, budget: Budget, rng: np.random.Generator, ledger: Ledger,
              neighbours: Neighbours, definition: Definition) -> tuple[Domain, dict[str, dict[str, Any]], Budget]:
    """The domain found with ``budget`` (a share of the release's ε or ρ): (domain, the manifest
    record, what was actually charged). Every charge sits in the ledger group "DP domain"; each column gets
    its part of ``budget`` by :meth:`DomainPlan.split`. Whether a column has the level "missing" is declared
    (nullable), never found: its share of missing values survives."""
    group = ledger.group("DP domain")
    split = plan.split()
    delta_each = plan.levels_delta / max(1, len(plan.text_columns))
    attrs: list[Attribute] = []
    record: dict[str, dict[str, Any]] = {}
    for name, kind in plan.kinds.items():
        col = data[name]
        na = plan.nullable(name, data)
        if kind == BOOLEAN:
            dtype = "boolean" if na else "bool"
            attrs.append(Attribute(name, "categorical", (False, True), na, None, dtype))
            record[name] = {"levels": [False, True], "na": na, "spent": 0.0, "share": 0.0,
                            "derived": "public: the column's type", "status": FOUND}
            continue
        if kind == DECLARED_LEVELS:
            assert plan.schema is not None
            declared = plan.schema[name]
            levels: tuple[object, ...] = tuple(str(v) for v in declared.levels or ()) if declared.type == "text" \
                else tuple(declared.levels or ())
            other = OTHER if OTHER not in map(str, levels) else f"({OTHER})"
            lv = (*levels, other) if declared.type == "text" else levels
            attrs.append(Attribute(name, "categorical", lv, na, None, "object" if declared.type == "text"
                                   else declared.dtype))
            record[name] = {"levels": [str(v) for v in lv], "na": na, "spent": 0.0, "share": 0.0,
                            "derived": "public: the levels declared in the schema", "status": FOUND}
            continue
        g = group.group(f"'{name}'")
        part = budget * split[name]
        if kind in (LEVELS, TEXT):
            found = dp_levels(col, part, delta_each, rng, g, neighbours, definition, name)
            code = plan.schema is not None and plan.schema[name].type == "whole"
            levels = tuple(int(v) for v in found.levels) if code else found.levels
            lv = levels if code else (*levels, found.other)
            if code and not lv:  # no code passed: one placeholder level (released missing, said so)
                lv = (0,)
            # a code not found has no "other" among whole numbers: it is released missing, a level every code
            # column has (public rule)
            attrs.append(Attribute(name, "categorical", lv, na or code, None,
                                   "Int64" if code else "object"))
            record[name] = {**found.to_dict(), "na": na, "delta": delta_each, "spent": g.spent.value,
                            "share": split[name], "status": levels_status(found, code)}
            continue
        attr, rec = _numeric(col, name, part, rng, g, neighbours, definition, plan.bins, na,
                             code=plan.schema is not None and plan.schema[name].levels_column,
                             nonnegative=plan.nonnegative(name, data))
        attrs.append(attr)
        record[name] = {**rec, "spent": g.spent.value, "share": split[name], "status": numeric_status(rec)}
    if not attrs:
        raise DomainError("the table has no columns to release")
    return Domain(tuple(attrs), DP_FOUND), record, group.spent


#: What the release says of each column it found privately (from its noisy outputs only: post-processing)
FOUND, COARSE, NOT_FOUND = "found", "found coarsely", "not found at this budget"


def levels_status(found: FoundLevels, code: bool = False) -> str:
    """A levels column: found when some level passed (its rare levels are "other"), not found when none did."""
    return FOUND if found.levels else NOT_FOUND


def numeric_status(rec: dict[str, Any]) -> str:
    """A numeric column: found when a bin of its DP bounds passed on every side that has values; coarsely when
    a side's bounds are those of its largest noisy count (a fallback) or only the bin holding zero stood out of the
    noise (:func:`zero_only`); not found when withheld."""
    if rec.get("withheld"):
        return NOT_FOUND
    return COARSE if rec.get("fallback") or zero_only(rec) else FOUND


def zero_only(rec: Mapping[str, Any]) -> bool:
    """Whether a numeric column's DP bounds are the bin holding zero alone, [0, 2^-10] (not whole numbers, whose
    zero bin [0, 1] is also a 0/1 column's): only zero stood out of the noise, so any other value is clamped into
    it. Read from the released bounds (post-processing)."""
    lo, hi = rec.get("first_bounds") or rec.get("bounds") or (None, None)
    return lo == 0.0 and hi == 2.0 ** MIN_EXPONENT


def fallback_warnings(record: dict[str, dict[str, Any]]) -> list[str]:
    """One line per numeric column whose DP bounds histogram had no bin over its threshold (a DP fact, not
    curator-only): its bounds are then the bin of the largest noisy count, perhaps noise; or, when that count did
    not stand out of the noise either, the column is withheld (every synthetic value missing)."""
    lines = []
    for c, r in record.items():
        if r.get("withheld"):
            lines.append(f"column '{c}': withheld, every synthetic value missing: no bin of its DP bounds histogram "
                         "stood out of the noise (too few records for this share of ε); declare its bounds "
                         "(a declared domain, or dp_bins with lower and upper), raise domain_share or ε, or drop it")
        elif zero_only(r) and not r.get("fallback"):
            lines.append(f"column '{c}': only zero stood out of the noise in its DP bounds histogram (its other values "
                         f"are spread too thin for this share of ε), so its bounds {r['bounds']} clamp every other "
                         "value to about zero; declare its bounds, raise domain_share or ε, or drop it")
        elif r.get("fallback"):
            lines.append(f"column '{c}': no bin of its DP bounds passed the threshold (too few records for this "
                         f"share of ε), so its bounds {r['bounds']} are those of the largest noisy count and may be "
                         "noise; raise domain_share or ε, declare its bounds, or drop it")
    return lines


def withhold_columns(frame: pd.DataFrame, record: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """``frame`` with every column the DP domain withheld (``record[c]["withheld"]``) set missing: post-processing
    of the DP domain, stated in the release's warnings (:func:`fallback_warnings`)."""
    withheld = [c for c, r in record.items() if r.get("withheld")]
    if not withheld:
        return frame
    return frame.assign(**{c: pd.Series(np.nan, index=frame.index, dtype="float64") for c in withheld})


def _numeric(col: pd.Series, name: str, budget: Budget, rng: np.random.Generator, group: Ledger, neighbours: Neighbours,
             definition: Definition, bins: str = DEFAULT_BIN_METHOD, na: bool | None = None,
             code: bool = False, nonnegative: bool = False) -> tuple[Attribute, dict[str, Any]]:
    """DP bounds, then DP quantile or PrivTree edges (or one bin per whole number) for one numeric column.
    ``na``: whether the column has the level "missing" (declared; None: found by the bounds' NA bin, as before
    schemas). ``code``: a whole-number code under pure ε: one bin per number up to :data:`MAX_CODE_BINS`.
    ``nonnegative``: declared never negative (a count): its bounds start at 0 (:func:`dp_bounds`)."""
    dtype = str(col.dtype)
    integer = dtype_kind(dtype) in "iu"
    found = dp_bounds(col, integer, BOUNDS_SHARE * budget, rng, group, neighbours, definition, name,
                      nonnegative=nonnegative)
    na = found.na if na is None else na
    lo, hi = found.lower, found.upper
    if found.withheld:
        # noise-like bounds: one bin, nothing more spent on the column (its values are released missing)
        attr = numeric_attribute(name, (lo, hi), na=na, dtype=dtype, origin=DP_BOUNDS)
        return attr, {"bounds": [lo, hi], "first_bounds": [lo, hi], "refined": False, "edges": [lo, hi],
                      "na": na, "threshold": found.threshold, "fallback": True, "withheld": True,
                      "bins": "withheld: its DP bounds did not stand out of the noise"}
    edges_share = 1.0 - BOUNDS_SHARE
    # refined only when an average refinement bin would pass its threshold, judged from the noisy total
    # (post-processing): on smaller tables the refinement clamps tails (measured, bench/RESULTS.md)
    refine = bool(REFINE_SHARE) and found.total / REFINE_BINS >= refine_threshold(REFINE_SHARE * budget,
                                                                                   neighbours, definition)
    if refine:
        lo, hi = refine_bounds(col, lo, hi, integer, REFINE_SHARE * budget, rng, group, neighbours, definition, name)
        edges_share -= REFINE_SHARE
    if integer and hi - lo + 1 <= (MAX_CODE_BINS if code else MAX_WHOLE_BINS):
        # one bin per whole number; the last closed bin [hi, hi + 0.5] holds hi alone
        edges = (*np.arange(lo, hi + 1, dtype=float).tolist(), hi + 0.5)
        how = "one bin per whole number in the DP bounds"
    elif bins == "privtree":
        vals = pd.to_numeric(col[col.notna()], errors="coerce").to_numpy(dtype=float)
        # θ from the bounds' noisy total: post-processing of a DP output, so public here
        theta = max(0.0, PRIVTREE_THETA_SHARE * found.total)
        edges = distinct_labels(privtree_bins(vals, lo, hi, edges_share * budget, rng, group, name, neighbours,
                                              definition, integer=integer, theta=theta,
                                              max_depth=PRIVTREE_MAX_DEPTH).edges)
        how = f"PrivTree bins (θ = {theta:.4g}) over the refined DP bounds"
    else:
        vals = pd.to_numeric(col[col.notna()], errors="coerce").to_numpy(dtype=float)
        edges, _ = quantile_edges(vals, lo, hi, DEFAULT_NUMERIC_BINS, edges_share * budget, rng, group, name,
                                  neighbours, definition, integer=integer)
        how = f"DP quantile edges ({DEFAULT_NUMERIC_BINS} bins asked) over the refined DP bounds"
    if found.zero_point:  # never for whole numbers (their zero bin [0, 1) is zero alone already)
        edges = with_zero_point(edges)
        how += "; zero a bin of its own, [0, 2^-10)"
    attr = numeric_attribute(name, edges, na=na, dtype=dtype, origin=DP_BOUNDS)
    assert attr.edges is not None  # a numeric attribute always has its edges (Attribute.__post_init__)
    return attr, {"bounds": [lo, hi], "first_bounds": [found.lower, found.upper], "refined": refine,
                  "edges": list(attr.edges), "na": na, "threshold": found.threshold,
                  "fallback": found.fallback or found.extended, "withheld": False, "bins": how,
                  "zero_point": found.zero_point}


def with_zero_point(edges: Sequence[float]) -> tuple[float, ...]:
    """``edges`` with zero a bin of its own, [0, :data:`ZERO_POINT_WIDTH`), when the range holds zero: inner
    edges inside that bin are dropped, 0 and its width added where they lie inside the range. Post-processing of
    DP edges with public constants, for a column whose DP bounds found zero standing out of the noise (a column
    mostly zero): its zeros are then released as 0 (:meth:`dpcore.data.domain.Attribute.decode`), not spread
    over a bin that also holds values up to the next edge."""
    lo, hi = float(edges[0]), float(edges[-1])
    if not lo <= 0.0 < hi:
        return tuple(float(e) for e in edges)
    inner = {float(e) for e in edges[1:-1] if not 0.0 < e < ZERO_POINT_WIDTH}
    inner |= {x for x in (0.0, ZERO_POINT_WIDTH) if lo < x < hi}
    return (lo, *sorted(inner), hi)


def recode_for_domain(data: pd.DataFrame, dom: Domain) -> tuple[pd.DataFrame, dict[str, dict[str, int]]]:
    """The records as the found domain encodes them, and what was changed per column (CURATOR-ONLY,
    NOT DP): text values outside the DP levels become "other"; missing values where "missing" did
    not pass become "other" (text) or the lower bound (numbers). Each record is mapped on its own
    (post-processing of the DP domain); the clamping of numbers is :meth:`Domain.encode`'s."""
    out = data.copy()
    changed: dict[str, dict[str, int]] = {}
    for a in dom.attributes:
        s = out[a.name]
        missing = s.isna()
        if a.kind == "numeric":
            assert a.edges is not None  # a numeric attribute always has its edges (Attribute.__post_init__)
            if missing.any() and not a.na:
                out[a.name] = s.fillna(a.edges[0])
                changed[a.name] = {"missing_recoded": int(missing.sum())}
            continue
        if a.dtype != "object":
            if a.na and a.levels and not isinstance(a.levels[0], bool):  # a whole-number code: unfound codes missing
                keep = s.isin(list(a.levels)) | missing
                if not keep.all():
                    out[a.name] = s.where(keep, pd.NA)
                    changed[a.name] = {"recoded_to_missing": int((~keep).sum())}
            continue
        other = a.levels[-1]
        keep = s.astype(str).isin([str(v) for v in a.levels[:-1]]) & ~missing
        moved = ~keep & (~missing | (missing & (not a.na)))
        if moved.any():
            out[a.name] = s.astype(object).where(~moved, other).where(~(missing & a.na), None)
            out[a.name] = out[a.name].map(lambda v: v if v is None else str(v))
            changed[a.name] = {"recoded_to_other": int((moved & ~missing).sum()),
                               "missing_recoded": int((moved & missing).sum())}
    return out, changed
