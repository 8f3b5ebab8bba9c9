"""Editing a domain attribute by attribute: rename and merge levels, add public levels the
data lacks, choose how missing values are handled, and edit bin edges.

Privacy: the result is a domain the curator must still confirm (it is marked
"inferred" until then, so a release on it is NOT DP); a confirmed domain is public
(docs/privacy-model.md). Nothing here releases anything.

Data are never silently altered. Renames and merges change the data's values, so they
are a :class:`Recode`: an explicit mapping from the data's values to the new levels,
kept with the session (shown, downloadable as JSON, undoable) and applied by
:func:`apply_recodes` to a copy of the table. A recoded column becomes text, each value
written as its canonical text ("1994", not "1994.0") and then mapped; values the
mapping does not name keep their text. Added levels, NA handling and bin edges change
the domain only.
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dpcore.data.domain import (
    DECLARED_EDGES,
    INFERRED,
    NA_LEVEL,
    PUBLIC_BOUNDS,
    Attribute,
    Domain,
    dtype_kind,
    level_key,
    numeric_attribute,
    series_level_keys,
)
from dpcore.errors import DomainError

#: NA handling choices of a categorical attribute
NA_LEVEL_CHOICE = "own level"
NA_NONE_CHOICE = "none allowed"
NA_RECODE_CHOICE = "recode to a level"
NA_CHOICES = (NA_LEVEL_CHOICE, NA_NONE_CHOICE, NA_RECODE_CHOICE)
RECODES_FORMAT = "dpcore-recodes/1"


@dataclass(frozen=True)
class Recode:
    """How one column's values become levels: ``mapping`` from a value's canonical text
    to its new level, and ``missing_to`` for missing values (None keeps them missing)."""

    attribute: str
    mapping: Mapping[str, str] = field(default_factory=dict)
    missing_to: str | None = None

    def apply(self, s: pd.Series) -> pd.Series:
        """The column as text with the mapping applied (a new Series; ``s`` is untouched)."""
        present = s.notna().to_numpy()
        out = np.empty(len(s), dtype=object)
        out[:] = None
        keys = series_level_keys(s)
        out[present] = [self.mapping.get(k, k) for k in keys]
        if self.missing_to is not None:
            out[~present] = self.missing_to
        return pd.Series(out, index=s.index, name=s.name, dtype=object)

    @property
    def empty(self) -> bool:
        return not self.mapping and self.missing_to is None

    def to_dict(self) -> dict:
        return {"attribute": self.attribute, "mapping": dict(self.mapping), "missing_to": self.missing_to}

    def then(self, later: Recode) -> Recode:
        """This recode followed by ``later`` (which names levels after this one), as one recode
        of the original values."""
        mapping = {k: later.mapping.get(v, v) for k, v in self.mapping.items()}
        mapping.update({k: v for k, v in later.mapping.items() if k not in self.mapping})
        missing = self.missing_to
        missing = later.mapping.get(missing, missing) if missing is not None else later.missing_to
        return Recode(self.attribute, {k: v for k, v in mapping.items() if k != v}, missing)


def apply_recodes(df: pd.DataFrame, recodes: Mapping[str, Recode] | None) -> pd.DataFrame:
    """A copy of ``df`` with each recoded column replaced; columns without a recode, and
    recodes of columns ``df`` lacks (dropped ones), are left alone."""
    if not recodes or all(rc.empty for rc in recodes.values()):
        return df
    out = df.copy()
    for name, rc in recodes.items():
        if name in out.columns and not rc.empty:
            out[name] = rc.apply(out[name])
    out.attrs = dict(df.attrs, recoded=sorted(n for n, rc in recodes.items() if n in df.columns and not rc.empty))
    return out


def recodes_to_json(recodes: Mapping[str, Recode]) -> str:
    return json.dumps({"format": RECODES_FORMAT, "recodes": [r.to_dict() for r in recodes.values() if not r.empty]},
                      indent=2, ensure_ascii=False)


def recodes_from_json(text: str) -> dict[str, Recode]:
    try:
        d = json.loads(text)
        items = d["recodes"]
        out = {}
        for r in items:
            mapping = r.get("mapping", {})
            if not isinstance(mapping, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                       for k, v in mapping.items()):
                raise TypeError
            mt = r.get("missing_to")
            if mt is not None and not isinstance(mt, str):
                raise TypeError
            out[str(r["attribute"])] = Recode(str(r["attribute"]), mapping, mt)
        return out
    except (ValueError, KeyError, TypeError, AttributeError):
        raise DomainError("recode file: expected {\"recodes\": [{\"attribute\": ..., \"mapping\": {old: new}, "
                          "\"missing_to\": null}]} as written by the domain editor") from None


# --------------------------------------------------------------------------- categorical levels


def level_table(attr: Attribute, data: pd.Series | None = None) -> pd.DataFrame:
    """The editor's table of one categorical attribute: one row per level, with the level,
    its new name (initially the same) and whether the data hold it (curator-only)."""
    if attr.kind != "categorical":
        raise DomainError(f"attribute '{attr.name}' is numeric: edit its bin edges instead of its levels")
    keys = [level_key(v) for v in attr.levels]
    seen = set(series_level_keys(data)) if data is not None else set()
    return pd.DataFrame({"level": keys, "new name": keys, "in data": [k in seen for k in keys]})


def _clean(v) -> str | None:
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
        return None
    text = str(v).strip()
    return text or None


def _typed_levels(attr: Attribute, names: Sequence[str]) -> tuple[tuple, str] | None:
    """The new levels in the attribute's own type when every one is valid for it, else None."""
    kind = dtype_kind(attr.dtype)
    try:
        if kind in "iu":
            vals = [int(n) for n in names]
            if any(str(v) != n for v, n in zip(vals, names)):
                return None
            return tuple(vals), attr.dtype
        if kind == "f":
            vals = [float(n) for n in names]
            if any(not math.isfinite(v) or level_key(v) != n for v, n in zip(vals, names)):
                return None
            return tuple(int(v) if v.is_integer() else v for v in vals), attr.dtype
        if kind == "b":
            if not set(names) <= {"True", "False"}:
                return None
            return tuple(n == "True" for n in names), attr.dtype
    except (TypeError, ValueError):
        return None
    return tuple(names), attr.dtype


def _level_rows(where: str, table: pd.DataFrame, old_keys: list[str], na: str) -> tuple[dict[str, str], list[str]]:
    """The editor's rows read (:func:`apply_level_table`): the renames {old level: new name} and
    the new levels in table order; a one-line error for the first row at fault, or for a level
    of the data left out."""
    mapping: dict[str, str] = {}
    order: list[str] = []
    seen_old = set()
    for i, (old, new) in enumerate(zip(table["level"], table["new name"]), 1):
        old, new = _clean(old), _clean(new)
        if old is None and new is None:
            continue  # an empty row the editor added
        if new is None:
            raise DomainError(f"{where}, row {i}: level {old!r} has no new name; give it one (the same name keeps it, "
                              "another level's name merges it)")
        if new == NA_LEVEL and na == NA_LEVEL_CHOICE:
            raise DomainError(f"{where}, row {i}: \"{NA_LEVEL}\" is the level of missing values; choose another name")
        if old is not None:
            if old not in old_keys:
                raise DomainError(f"{where}, row {i}: {old!r} is not one of its levels; add new levels in an empty "
                                  "row with only a new name")
            if old in seen_old:
                raise DomainError(f"{where}: level {old!r} appears twice in the table; keep one row per level")
            seen_old.add(old)
            if new != old:
                mapping[old] = new
        if new not in order:
            order.append(new)
    dropped = [k for k in old_keys if k not in seen_old]
    if dropped:
        raise DomainError(f"{where}: level(s) {', '.join(map(repr, dropped[:3]))} were deleted from the table; a level "
                          "held by the data cannot disappear: merge it into another level "
                          "by giving it that level's name")
    return mapping, order


def _missing_level(where: str, na: str, missing_to: str | None, order: list[str]) -> str | None:
    """The level missing values become (:data:`NA_RECODE_CHOICE`: ``missing_to``, which must be one
    of the new levels), else None."""
    if na == NA_RECODE_CHOICE:
        missing_to = _clean(missing_to)
        if missing_to is None or missing_to not in order:
            raise DomainError(f"{where}: missing values are to be recoded, but to {missing_to!r}, which is not one of "
                              f"its levels ({', '.join(order[:8])}); choose one of them")
    elif na not in NA_CHOICES:
        raise DomainError(f"{where}: NA handling must be one of {', '.join(NA_CHOICES)}; got {na!r}")
    else:
        missing_to = None
    return missing_to


def apply_level_table(attr: Attribute, table: pd.DataFrame, na: str = NA_LEVEL_CHOICE,
                      missing_to: str | None = None) -> tuple[Attribute, Recode]:
    """The edited attribute and the recode it needs, from the editor's table.

    Rows with a level are existing levels: a different new name renames it, the same new
    name on several rows merges them. Rows without a level are levels added (public but
    absent from the data). ``na`` is one of :data:`NA_CHOICES`; with
    :data:`NA_RECODE_CHOICE`, missing values become the level ``missing_to``.
    Raises :class:`DomainError` naming the attribute and the row at fault.
    """
    where = f"attribute '{attr.name}'"
    if attr.kind != "categorical":
        raise DomainError(f"{where} is numeric: edit its bin edges instead of its levels")
    if not {"level", "new name"} <= set(table.columns):
        raise DomainError(f"{where}: the level table needs the columns 'level' and 'new name'")
    old_keys = [level_key(v) for v in attr.levels]
    mapping, order = _level_rows(where, table, old_keys, na)
    missing_to = _missing_level(where, na, missing_to, order)
    if not order:
        raise DomainError(f"{where}: no levels left; an attribute needs at least one level")
    has_na = na == NA_LEVEL_CHOICE
    typed = None if (mapping or missing_to is not None) else _typed_levels(attr, order)
    if typed is None:
        # renamed, merged or recoded: the column becomes text, the levels are the new names
        levels, dtype = tuple(order), "object"
        if not mapping and missing_to is None and dtype_kind(attr.dtype) not in "OU":
            raise DomainError(f"{where} holds {attr.dtype} values: an added level must be one too "
                              f"({', '.join(n for n in order if n not in old_keys)[:60]}); or rename a level, "
                              "which makes the column text")
    else:
        levels, dtype = typed
    return Attribute(attr.name, "categorical", levels, has_na, None, dtype), Recode(attr.name, mapping, missing_to)


# --------------------------------------------------------------------------- numeric edges


def edges_table(attr: Attribute) -> pd.DataFrame:
    """The attribute's edges as an editable table; EMPTY when its edges are not public (the
    data's own range): offering them for editing would invite declaring the data's min and max."""
    if attr.kind != "numeric":
        raise DomainError(f"attribute '{attr.name}' is categorical: edit its levels instead of bin edges")
    return pd.DataFrame({"edge": [float(e) for e in attr.edges] if attr.edges_public else []}, dtype=float)


def apply_edges_table(attr: Attribute, table: pd.DataFrame, na: bool) -> Attribute:
    """The numeric attribute with the edited public edges (sorted; empty rows ignored), marked
    ``origin="declared"``: the curator typed them."""
    where = f"attribute '{attr.name}'"
    vals = []
    for i, v in enumerate(table.get("edge", []), 1):
        if _clean(v) is None:
            continue
        try:
            x = float(v)
        except (TypeError, ValueError):
            raise DomainError(f"{where}, row {i}: edge {v!r} is not a number") from None
        vals.append(x)
    vals = sorted(vals)
    dup = sorted({x for x in vals if vals.count(x) > 1})
    if dup:
        raise DomainError(f"{where}: edge {dup[0]:g} is listed twice; each edge once")
    if len(vals) < 2:
        raise DomainError(f"{where}: give at least two public bin edges (the lowest and the highest value a "
                          "record may have, and any edges between)")
    return numeric_attribute(attr.name, vals, na=na, dtype=attr.dtype, origin=DECLARED_EDGES)


# --------------------------------------------------------------------------- the domain


def replace_attribute(dom: Domain, attr: Attribute) -> Domain:
    """``dom`` with one attribute replaced; marked inferred: an edited domain needs confirming."""
    attrs = list(dom.attributes)
    attrs[dom.index(attr.name)] = attr
    return Domain(tuple(attrs), INFERRED)


def check_edit(dom: Domain, data: pd.DataFrame, recodes: Mapping[str, Recode] | None = None) -> None:
    """Raise :class:`DomainError` (naming the column and value) unless the edited domain
    covers the data once the recodes are applied: a categorical value outside the levels, a
    missing value without NA, text in a numeric column. Numbers outside the edges are clamped
    into the end bins, not refused (:meth:`dpcore.data.domain.Domain.clamped_counts` counts them
    for the curator)."""
    dom.encode(apply_recodes(data, recodes)[dom.names])


def edit_summary(recodes: Mapping[str, Recode]) -> pd.DataFrame:
    """One row per recoded value: attribute, value in the data, level it becomes."""
    rows = []
    for r in recodes.values():
        rows += [{"attribute": r.attribute, "value in the data": k, "becomes level": v} for k, v in r.mapping.items()]
        if r.missing_to is not None:
            rows.append({"attribute": r.attribute, "value in the data": "(missing)", "becomes level": r.missing_to})
    return pd.DataFrame(rows, columns=["attribute", "value in the data", "becomes level"])


def placeholder_edges(lower: float, upper: float, bins: int) -> tuple[float, ...]:
    """Equal-width edges over the public bounds: what the domain holds until the release
    replaces them by DP quantile edges (same bounds, at most as many bins)."""
    from dpcore.data.domain import equal_width_edges

    return equal_width_edges(lower, upper, bins)


def placeholder_attribute(attr: Attribute, lower: float, upper: float, bins: int, na: bool) -> Attribute:
    """``attr`` with :func:`placeholder_edges` over the public bounds, marked ``origin=
    "public_bounds"`` (true of the placeholder; the release's DP edges are ``"dp_quantiles"``)."""
    return numeric_attribute(attr.name, placeholder_edges(lower, upper, bins), na=na, dtype=attr.dtype,
                             origin=PUBLIC_BOUNDS)


def parse_codebook_bounds(name: str, lower, upper, bins) -> dict:
    """``{"bounds": [lower, upper], "bins": k}`` from what the curator typed for column ``name``
    (text or numbers): a one-line :class:`DomainError` naming the column and the value when a
    bound is missing or not a number, when lower ≥ upper, or when bins is not a whole number ≥ 1."""
    out = []
    for which, text in (("lower", lower), ("upper", upper)):
        raw = "" if text is None else str(text).strip()
        if not raw:
            raise DomainError(f"column '{name}': type the {which} bound from the codebook (a number)")
        try:
            x = float(raw) if isinstance(text, str) else float(text)
        except (TypeError, ValueError):
            raise DomainError(f"column '{name}': the {which} bound must be a number; got {raw[:40]!r}") from None
        if not math.isfinite(x):
            raise DomainError(f"column '{name}': the {which} bound must be a finite number; got {raw[:40]!r}")
        out.append(x)
    lo, hi = out
    if not lo < hi:
        raise DomainError(f"column '{name}': the lower bound ({lo:g}) must be below the upper bound ({hi:g})")
    try:
        k = int(bins)
    except (TypeError, ValueError):
        k = 0
    if k < 1 or k != bins:
        raise DomainError(f"column '{name}': bins must be a whole number of at least 1; got {bins!r}")
    return {"bounds": [lo, hi], "bins": k}
