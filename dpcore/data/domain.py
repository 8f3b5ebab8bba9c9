"""The public domain of a table: attribute names, categorical levels and numeric bin edges.

Privacy: the domain is assumed PUBLIC (docs/privacy-model.md). Everything released is DP only
*given* the domain. A domain inferred from the data (:mod:`dpcore.data.inference`) leaks rare
levels and the range of numeric columns, so it is marked :data:`INFERRED`; a release built on an
unconfirmed domain is reported as not DP by its manifest. Loading a domain from a
file (``--domain domain.json``) or calling :meth:`Domain.declared` records the
curator's declaration that it is public knowledge.

Each numeric attribute also records where its bin edges came from (``origin``, see
:data:`EDGE_ORIGINS`). Edges spanning the data's own min and max (``"data_range"``) are
read from the data and can never be declared public: :meth:`Domain.declared` refuses
them, naming the column, and a release whose domain still holds one is NOT DP whatever
the domain's ``source`` says. A domain file written before origins were recorded has
none: its numeric attributes are read as ``"unstated"``, which is treated the same way
until the curator writes the origin (docs/privacy-model.md#what-is-public).

Encoding maps each record to a tuple of integer codes, one per attribute; a
missing value is its own last level ("NA") when the attribute has ``na=True``.
Numeric attributes are cut into bins ``[e0,e1), [e1,e2), ..., [e_{k-1}, e_k]``; a value below e0
or above e_k is clamped into the first or last bin (as OpenDP's clamp does: each record is mapped
on its own, so a release's guarantee is unchanged) and counted for the curator
(:meth:`Domain.clamped_counts`, NOT DP, never published).
"""
from __future__ import annotations

import importlib
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from dpcore.errors import DomainError, InputError

NA_LEVEL = "NA"
INFERRED = "inferred from data — confirm before release"
DECLARED = "declared public by the curator"
#: The source of a domain found inside a release with differential privacy (``synthesize(domain="dp")``):
#: public as a DP output of that release, charged to its ledger.
DP_FOUND = "found with differential privacy inside the release (its ledger's \"DP domain\" group)"
FORMAT = "dpcore-domain/1"

#: Equal-width bins over public bounds when the curator gives no number (and over the data's range).
DEFAULT_NUMERIC_BINS = 10

#: Where a numeric attribute's bin edges came from (``Attribute.origin``).
DECLARED_EDGES = "declared"          # edges the curator gave
PUBLIC_BOUNDS = "public_bounds"      # equal-width bins over bounds the curator gave
DP_QUANTILES = "dp_quantiles"        # DP quantiles over public bounds, computed in the release (its ε)
DP_PRIVTREE = "dp_privtree"          # PrivTree bins over public bounds, computed in the release (its ε)
DP_BOUNDS = "dp_bounds"              # DP bounds, then DP quantiles, PrivTree or whole-number bins over them
DATA_RANGE = "data_range"            # equal-width bins over the data's own min and max: NOT public
UNSTATED = "unstated"                # a domain file from before origins were recorded: not known to be public
EDGE_ORIGINS = {
    DECLARED_EDGES: "public edges declared by the curator",
    PUBLIC_BOUNDS: "equal-width bins over public bounds declared by the curator",
    DP_QUANTILES: "differentially private quantiles over public bounds, charged to the release",
    DP_PRIVTREE: "differentially private PrivTree bins over public bounds, charged to the release",
    DP_BOUNDS: "differentially private bounds, then DP quantiles, PrivTree or whole-number bins over them, charged "
               "to the release",
    DATA_RANGE: "equal-width bins over the data's own min and max: read from the data, NOT public (NOT DP)",
    UNSTATED: "not stated (a domain file written before dpcore recorded where bin edges came from): "
              "NOT public (NOT DP)",
}
#: The origins of edges a release finds with DP itself (public as its DP output, charged to its ledger).
FOUND_IN_RELEASE = frozenset({DP_QUANTILES, DP_PRIVTREE, DP_BOUNDS})
#: The origins a declared domain may hold: nothing in them was read from the data.
PUBLIC_ORIGINS = frozenset({DECLARED_EDGES, PUBLIC_BOUNDS}) | FOUND_IN_RELEASE
#: A private domain's resolution near zero: its DP bounds give magnitudes under 2^-10 one bin with zero
#: (``dpcore.measure.bounds.MIN_EXPONENT``), so in a non-whole-number column whose edges were found with DP
#: (:data:`DP_BOUNDS`) a bin [0, w) with w ≤ this width is zero at that resolution, and :meth:`Attribute.decode`
#: draws 0 there: a column mostly zero comes out with zeros, not values a sliver above (docs/methods/dp-domain.md).
ZERO_POINT_WIDTH = 2.0 ** -10


def level_key(value: Any) -> str:
    """Canonical string key so that 1994, 1994.0 and "1994" name the same level."""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


def series_level_keys(s: pd.Series) -> np.ndarray:
    """Vectorised :func:`level_key` over the non-missing values of a column."""
    v = s.dropna()
    if pd.api.types.is_bool_dtype(v.dtype):
        return v.astype(bool).astype(str).to_numpy(dtype=object)
    if pd.api.types.is_integer_dtype(v.dtype):
        # exact: integers above 2^53 must not pass through float64 (…678 and …679 stay apart)
        return v.astype("int64").astype(str).to_numpy(dtype=object)
    if pd.api.types.is_numeric_dtype(v.dtype):
        f = v.astype(float).to_numpy()
        out = f.astype(object)
        # int64 only where the cast is exact; 1e300 and 1e301 must not both become -2^63
        integral = np.isfinite(f) & (np.floor(f) == f) & (np.abs(f) < 2.0**62)
        out[integral] = f[integral].astype(np.int64).astype(str)
        out[~integral] = [level_key(x) for x in f[~integral]]
        return out
    return v.astype(str).to_numpy(dtype=object)


def json_scalar(value: Any) -> Any:
    """A level value as plain JSON: numpy scalars to bool/int/float (a whole float to int),
    anything else that is not an int or str to its text."""
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (np.floating, float)):
        return int(value) if float(value).is_integer() else float(value)
    return value if isinstance(value, (int, str)) else str(value)


def _numeric_from_dict(d: Mapping, name: str, where: str, na: bool, dtype: str) -> Attribute:
    """The numeric attribute of a domain file's entry ``d`` (:meth:`Attribute.from_dict`): its
    edges a list of numbers, its dtype a number type, its origin one of :data:`EDGE_ORIGINS`."""
    edges = d.get("edges")
    if not isinstance(edges, list) or not all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                              for x in edges):
        raise DomainError(f"{where}: \"edges\" must be a list of numbers (the public "
                          f"bin edges); got {_short(edges)}")
    try:
        floats = tuple(float(x) for x in edges)
    except OverflowError:
        raise DomainError(f"{where}: an edge is too large for a number; give finite bin edges") from None
    if dtype_kind(dtype) not in "iuf":
        raise DomainError(f"{where}: a numeric attribute has \"dtype\" \"int64\" or "
                          f"\"float64\"; got {_short(dtype)}")
    origin = d.get("origin", UNSTATED)
    if not isinstance(origin, str) or origin not in EDGE_ORIGINS:
        raise DomainError(f"{where}: \"origin\" must be one of {', '.join(map(repr, EDGE_ORIGINS))} "
                          f"(where the bin edges came from); got {_short(origin)}")
    return numeric_attribute(name, floats, na=na, dtype=dtype, origin=origin)


def _categorical_levels(d: Mapping, where: str, na: bool, dtype: str) -> list:
    """The levels of a domain file's categorical entry ``d`` (:meth:`Attribute.from_dict`), checked
    against its dtype: the dtype decides how synthetic values are written back."""
    levels = d.get("levels")
    if not isinstance(levels, list) or not all(isinstance(v, (str, int, float, bool)) for v in levels):
        raise DomainError(f"{where}: \"levels\" must be a list of values (strings or "
                          f"numbers), not {_short(levels)}")
    if "origin" in d:
        raise DomainError(f"{where}: \"origin\" is for numeric bin edges; remove it from this categorical "
                          "attribute (its levels are declared with the whole domain)")
    if not levels and not na:
        raise DomainError(f"{where}: no levels; list the attribute's public levels")
    if any(isinstance(v, float) and not math.isfinite(v) for v in levels):
        raise DomainError(f"{where}: a level is not a finite number; use \"na\": true for missing values")
    kind_letter = dtype_kind(dtype)
    if kind_letter == "b" and not all(isinstance(v, bool) for v in levels):
        raise DomainError(f"{where}: \"dtype\": \"bool\" needs true/false levels; got {_short(levels)}. "
                          "Use \"dtype\": \"object\" for text levels")
    # the dtype decides how synthetic values are written back: it must hold the levels exactly
    if kind_letter in "iu" and not all(isinstance(v, int) and not isinstance(v, bool) and -2**63 <= v < 2**63
                                       for v in levels):
        raise DomainError(f"{where}: \"dtype\": {_short(dtype)} needs whole-number levels within 64 bits; got "
                          f"{_short(levels)}. Use \"dtype\": \"object\" for text levels")
    if kind_letter == "f" and not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in levels):
        raise DomainError(f"{where}: \"dtype\": {_short(dtype)} needs number levels; got {_short(levels)}. "
                          "Use \"dtype\": \"object\" for text levels")
    if kind_letter not in "iufbOU":
        raise DomainError(f"{where}: \"dtype\" {_short(dtype)} is not a column type dpcore writes back; "
                          "use \"object\" (text), \"int64\", \"float64\" or \"bool\"")
    return levels


@dataclass(frozen=True)
class Attribute:
    """One attribute of the public domain.

    ``levels`` are the categorical values, or for a numeric attribute the bin labels
    derived from ``edges``. ``na`` adds the level "NA" as the last code.
    ``dtype`` is the column's original pandas dtype, used to decode.
    ``origin`` (numeric attributes only) says where the edges came from, one of
    :data:`EDGE_ORIGINS`; edges given in code are a declaration (``"declared"``).
    """

    name: str
    kind: str  # "categorical" | "numeric"
    levels: tuple
    na: bool = False
    edges: tuple | None = None
    dtype: str = "object"
    origin: str | None = None

    def __post_init__(self):
        if self.kind not in ("categorical", "numeric"):
            raise DomainError(f"attribute '{self.name}': kind must be 'categorical' or 'numeric', not {self.kind!r}")
        if self.kind == "categorical" and self.origin is not None:
            raise DomainError(f"attribute '{self.name}': \"origin\" is for numeric bin edges; a categorical "
                              "attribute's levels are declared with the whole domain")
        if self.kind == "numeric":
            if self.origin is None:
                object.__setattr__(self, "origin", DECLARED_EDGES)
            if not isinstance(self.origin, str) or self.origin not in EDGE_ORIGINS:
                raise DomainError(f"attribute '{self.name}': \"origin\" must be one of "
                                  f"{', '.join(map(repr, EDGE_ORIGINS))}; got {_short(self.origin)}")
            e = self.edges
            if e is None or len(e) < 2 or not all(math.isfinite(x) for x in e) or any(b <= a for a, b in zip(e, e[1:])):
                raise DomainError(
                    f"attribute '{self.name}': numeric bin edges must be at least two finite, "
                    f"strictly increasing numbers; got {e!r}"
                )
            if not math.isfinite(e[-1] - e[0]):
                raise DomainError(f"attribute '{self.name}': bin edges [{e[0]:g}, {e[-1]:g}] span more than a number "
                                  "can hold; give edges a realistic public range")
            if dtype_kind(self.dtype) in "iu" and max(abs(e[0]), abs(e[-1])) > 2**53:
                raise DomainError(f"attribute '{self.name}' holds whole numbers but its bin edges reach beyond ±2^53, "
                                  "where values drawn inside a bin are no longer exact; narrow the edges")
            if dtype_kind(self.dtype) in "iu":
                # decode draws whole numbers inside each bin: a bin holding none would get a value from the next bin
                for i, (lo, hi) in enumerate(zip(e, e[1:])):
                    last = i == len(e) - 2
                    if not (math.ceil(lo) <= hi if last else math.ceil(lo) < hi):
                        raise DomainError(
                            f"attribute '{self.name}' holds whole numbers but its bin [{lo:g}, "
                            f"{hi:g}{']' if last else ')'} contains none; "
                            "merge it with a neighbouring bin or move its edges"
                        )
        if len(set(level_key(v) for v in self.levels)) != len(self.levels):
            raise DomainError(f"attribute '{self.name}': its declared levels contain duplicates")

    @property
    def size(self) -> int:
        """Number of codes, NA included."""
        return len(self.levels) + int(self.na)

    @property
    def labels(self) -> list[str]:
        """Human-readable level names, NA last."""
        return [str(v) for v in self.levels] + ([NA_LEVEL] if self.na else [])

    @property
    def edges_public(self) -> bool:
        """False for numeric edges read from the data (or of unstated origin): such an
        attribute cannot be declared public."""
        return self.kind != "numeric" or self.origin in PUBLIC_ORIGINS

    def to_dict(self) -> dict:
        d: dict[str, Any] = {"name": self.name, "type": self.kind, "na": self.na, "dtype": self.dtype}
        if self.kind == "numeric":
            d["edges"] = [float(x) for x in self.edges]
            d["origin"] = self.origin
        else:
            d["levels"] = [json_scalar(v) for v in self.levels]
        return d

    @classmethod
    def from_dict(cls, d: Mapping) -> Attribute:
        """Strict: every field must have its JSON type; nothing is coerced (a string
        "false" is not a boolean, a string "uv" is not a list of levels). A numeric
        attribute without ``"origin"`` (a file from before origins were recorded) is read
        as ``"unstated"``: not known to be public, so never silently declared."""
        if not isinstance(d, Mapping):
            raise DomainError(f"domain file: each attribute must be a JSON object; got {_short(d)}")
        name = d.get("name")
        if not isinstance(name, str) or not name:
            raise DomainError(f"domain file: an attribute has no \"name\" (a non-empty string); got {_short(name)}")
        where = f"domain file, attribute '{name}'"
        unknown = sorted(set(d) - {"name", "type", "na", "dtype", "levels", "edges", "origin"})
        if unknown:
            raise DomainError(f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; "
                              "allowed: name, type, na, dtype, levels, edges, origin")
        kind = d.get("type", "categorical")
        if kind not in ("categorical", "numeric"):
            raise DomainError(f"{where}: \"type\" must be \"categorical\" or \"numeric\"; got {_short(kind)}")
        na = d.get("na", False)
        if not isinstance(na, bool):
            raise DomainError(f"{where}: \"na\" must be true or false (a JSON boolean, not a string); got {_short(na)}")
        dtype = d.get("dtype", "float64" if kind == "numeric" else "object")
        if not isinstance(dtype, str) or not _known_dtype(dtype):
            raise DomainError(f"{where}: \"dtype\" must be a pandas dtype name such as \"object\", \"int64\", "
                              f"\"float64\", \"bool\" or \"string\"; got {_short(dtype)}")
        if kind == "numeric":
            return _numeric_from_dict(d, name, where, na, dtype)
        levels = _categorical_levels(d, where, na, dtype)
        return cls(name, "categorical", tuple(levels), na, None, dtype)

    # -- encoding -------------------------------------------------------------------
    def encode(self, s: pd.Series) -> np.ndarray:
        """Integer codes of a column. A numeric value outside the edges is clamped into the first or
        last bin (as OpenDP's clamp; :meth:`clamped_count` counts them for the curator); a categorical
        value the declared levels do not list, or non-numeric text in a numeric column, raises
        :class:`DomainError`."""
        missing = s.isna().to_numpy()
        codes = np.empty(len(s), dtype=np.int64)
        if missing.any():
            if not self.na:
                raise DomainError(
                    f"column '{self.name}' has {int(missing.sum())} missing values but its declared domain has no NA "
                    "level; add \"na\": true for it in the domain file, or remove those rows"
                )
            codes[missing] = len(self.levels)
        present = ~missing
        if self.kind == "numeric":
            try:
                x = pd.to_numeric(s[present], errors="raise").to_numpy(dtype=float)
            except (ValueError, TypeError):
                raise DomainError(f"column '{self.name}' is declared numeric but holds non-numeric values; fix the "
                                  "data or declare it categorical") from None
            # clamped into the end bins, as OpenDP's clamp does (counted for the curator: clamped_count)
            codes[present] = np.clip(np.searchsorted(np.asarray(self.edges), x, side="right") - 1, 0,
                                     len(self.edges) - 2)
            return codes
        if dtype_kind(str(s.dtype)) in "OU" and all(isinstance(v, str) for v in self.levels):
            # fast path for text columns: look the values up directly, no per-value key conversion
            direct = pd.Index(list(self.levels)).get_indexer(s).astype(np.int64)
            if (direct[present] >= 0).all():
                codes[present] = direct[present]
                return codes
        keys = series_level_keys(s)
        c = pd.Index([level_key(v) for v in self.levels]).get_indexer(keys).astype(np.int64)
        if (c < 0).any():
            bad = pd.unique(keys[c < 0])[:3]
            raise DomainError(
                f"column '{self.name}' has value(s) {', '.join(map(repr, bad))} that its declared domain does not "
                "list; add them to the domain's levels (they then become public) or recode the data"
            )
        codes[present] = c
        return codes

    def clamped_count(self, s: pd.Series) -> int:
        """How many present values of a numeric column lie outside [first edge, last edge] (±inf
        included): :meth:`encode` clamps them into the end bins. CURATOR-ONLY, NOT DP (a count of
        raw records); never written to a published manifest. 0 for a categorical attribute."""
        if self.kind != "numeric":
            return 0
        x = pd.to_numeric(s[s.notna()], errors="coerce").to_numpy(dtype=float)
        x = x[~np.isnan(x)]
        return int(((x < self.edges[0]) | (x > self.edges[-1])).sum())

    def decode(self, codes: np.ndarray, rng: np.random.Generator) -> pd.Series:
        """Values for codes. Numeric values are drawn uniformly inside their bin, except that a privately found
        bin [0, w) with w ≤ :data:`ZERO_POINT_WIDTH` of a non-whole-number column gives 0 (zero at the private
        domain's resolution).

        The uniform draw is post-processing of an already-private cell: it uses the
        release's generator for reproducibility and costs no privacy budget.
        """
        codes = np.asarray(codes, dtype=np.int64)
        is_na = codes == len(self.levels) if self.na else np.zeros(len(codes), bool)
        if self.kind == "numeric":
            e = np.asarray(self.edges, dtype=float)
            c = np.where(is_na, 0, codes)
            lo, hi = e[c], e[c + 1]
            if dtype_kind(self.dtype) in "iu":
                # integers inside [lo, hi), the last bin closed: [ceil(lo), ceil(hi)-1] or up to floor(hi)
                a = np.ceil(lo)
                b = np.where(c == len(e) - 2, np.floor(hi), np.ceil(hi) - 1)
                b = np.maximum(a, b)
                vals = a + np.floor(rng.random(len(c)) * (b - a + 1))
                vals = np.minimum(vals, b)
            else:
                vals = lo + rng.random(len(c)) * (hi - lo)
                if self.origin == DP_BOUNDS:
                    # zero at a private domain's resolution (ZERO_POINT_WIDTH): drawn as 0, same draws consumed
                    vals = np.where((lo == 0.0) & (hi <= ZERO_POINT_WIDTH), 0.0, vals)
            out = pd.Series(vals)
            if is_na.any():
                out[is_na] = np.nan
            return _cast(out, self.dtype, is_na.any())
        # cast the few levels once, then gather: far cheaper than casting n values.
        # The missing-value slot is only added when NA occurs: a None among the levels
        # would make an int64 (or bool) column fail to cast and come back as object.
        has_na = bool(is_na.any())
        levels = _cast(pd.Series(list(self.levels) + ([None] if has_na else []), dtype=object), self.dtype, has_na)
        return levels.take(np.where(is_na, len(self.levels), codes)).reset_index(drop=True)


def _known_dtype(dtype: str) -> bool:
    try:
        pd.api.types.pandas_dtype(dtype)
    except (TypeError, ValueError):
        return False
    return True


def dtype_kind(dtype: str) -> str:
    """numpy kind letter of a pandas/numpy dtype name ('i', 'f', 'b', 'O', ...)."""
    try:
        return pd.api.types.pandas_dtype(dtype).kind
    except TypeError:
        return "O"


def _cast(s: pd.Series, dtype: str, has_na: bool) -> pd.Series:
    """Cast decoded values back to the original column dtype (nullable ints when NA appears)."""
    kind = dtype_kind(dtype)
    try:
        if kind in "iu":
            return s.astype("Int64" if has_na else dtype)
        if kind == "b":
            return s.astype("boolean" if has_na else bool)
        return s.astype(dtype)
    except (TypeError, ValueError):
        return s


def numeric_attribute(name: str, edges: Sequence[float], na: bool = False, dtype: str = "float64",
                      origin: str = DECLARED_EDGES) -> Attribute:
    """A numeric attribute cut at the given ``edges``; ``origin`` says where they came from
    (default: declared public by whoever wrote them down)."""
    e = tuple(float(x) for x in edges)
    labels = tuple(
        f"[{a:g},{b:g}{']' if i == len(e) - 2 else ')'}" for i, (a, b) in enumerate(zip(e, e[1:]))
    )
    return Attribute(name, "numeric", labels, na, e, dtype, origin)


def equal_width_edges(lo: float, hi: float, bins: int) -> tuple[float, ...]:
    """``bins`` equal-width bins over the declared public bounds [lo, hi]."""
    if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo):
        raise DomainError(f"numeric bounds must be finite with lower < upper; got [{lo}, {hi}]")
    if int(bins) < 1:
        raise DomainError(f"the number of bins must be at least 1; got {bins}")
    return tuple(np.linspace(lo, hi, int(bins) + 1).tolist())


@dataclass(frozen=True)
class Domain:
    """An ordered tuple of :class:`Attribute` plus where it came from (inferred or declared)."""

    attributes: tuple[Attribute, ...]
    source: str = INFERRED

    def __post_init__(self):
        names = [a.name for a in self.attributes]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise DomainError(f"the domain names column(s) {', '.join(map(repr, dup))} more than once")

    # -- shape --------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        return [a.name for a in self.attributes]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(a.size for a in self.attributes)

    @property
    def size(self) -> int:
        """Cells of the full cross-tabulation (exact Python int; may be astronomically large)."""
        return math.prod(self.shape)

    @property
    def inferred(self) -> bool:
        """True unless the curator declared the domain AND every bin edge is public: a
        domain holding edges read from the data is never treated as declared."""
        return self.source not in (DECLARED, DP_FOUND) or bool(self.not_public)

    @property
    def not_public(self) -> tuple[Attribute, ...]:
        """The numeric attributes whose bin edges were read from the data (or whose origin a
        file does not state): they keep a release NOT DP until replaced or dropped."""
        return tuple(a for a in self.attributes if not a.edges_public)

    def __len__(self) -> int:
        return len(self.attributes)

    def __getitem__(self, name: str) -> Attribute:
        return self.attributes[self.index(name)]

    def index(self, name: str) -> int:
        try:
            return self.names.index(name)
        except ValueError:
            raise DomainError(f"attribute '{name}' is not in the domain; "
                              f"known attributes: {', '.join(self.names)}") from None

    def path_label(self, codes) -> str:
        """ "a=x, b=y" for the attributes a code row fixes (code ≥ 0); "(root)" when none is fixed."""
        parts = [f"{a.name}={a.labels[int(c)]}" for a, c in zip(self.attributes, codes) if c >= 0]
        return ", ".join(parts) or "(root)"

    def declared(self) -> Domain:
        """The same domain, recorded as declared public by the curator.

        Raises :class:`DomainError` naming every numeric attribute whose bin edges came
        from the data (or whose origin is unstated): those cannot be declared public."""
        if self.not_public:
            raise DomainError(not_public_message(self.not_public) + "; give public bounds (infer_domain(numeric="
                              "{col: {\"bounds\": [lower, upper], \"bins\": k}})) or edges, DP quantile edges "
                              "(dp_bins), or drop the column")
        return replace(self, source=DECLARED)

    def project(self, names: Iterable[str]) -> Domain:
        return Domain(tuple(self[n] for n in names), self.source)

    # -- codes --------------------------------------------------------------------
    def encode(self, df: pd.DataFrame) -> np.ndarray:
        """(n, p) int64 codes of ``df``'s columns in domain order.

        Raises :class:`DomainError` naming the first column the domain does not cover (numeric
        values outside the edges are clamped, not refused: :meth:`clamped_counts`).
        """
        extra = [c for c in df.columns if c not in self.names]
        if extra:
            raise DomainError(
                f"column(s) {', '.join(map(repr, extra))} are in the data but not in the domain; "
                "add them to the domain or drop them"
            )
        missing = [n for n in self.names if n not in df.columns]
        if missing:
            raise DomainError(f"the domain lists column(s) {', '.join(map(repr, missing))} that the data does not have")
        out = np.empty((len(df), len(self)), dtype=np.int64)
        for j, a in enumerate(self.attributes):
            out[:, j] = a.encode(df[a.name])
        return out

    def clamped_counts(self, df: pd.DataFrame) -> dict[str, int]:
        """Records clamped into an end bin per numeric column (only columns with any): CURATOR-ONLY,
        NOT DP; see :meth:`Attribute.clamped_count`."""
        counts = {a.name: a.clamped_count(df[a.name]) for a in self.attributes
                  if a.kind == "numeric" and a.name in df.columns}
        return {k: v for k, v in counts.items() if v}

    def decode(self, codes: np.ndarray, rng: np.random.Generator) -> pd.DataFrame:
        """A DataFrame with the original columns and dtypes from (n, p) codes."""
        codes = np.asarray(codes)
        return pd.DataFrame({a.name: a.decode(codes[:, j], rng) for j, a in enumerate(self.attributes)})

    # -- JSON ---------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {"format": FORMAT, "source": self.source, "attributes": [a.to_dict() for a in self.attributes]}

    def to_json(self, indent: int = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    @classmethod
    def from_dict(cls, d: Mapping, declared: bool | None = None) -> Domain:
        """Build from a parsed domain file. ``declared=None`` honours the file's own
        ``source``: a file written by ``python -m dpcore domain`` says it was inferred
        and stays inferred (NOT DP) until the curator reviews it and sets
        ``"source": "declared"``; a hand-written file without ``source`` is a declaration."""
        if not isinstance(d, Mapping) or not isinstance(d.get("attributes"), list):
            raise DomainError("domain file: expected a JSON object with an \"attributes\" list")
        if not d["attributes"]:
            raise DomainError("domain file: the \"attributes\" list is empty; declare at least one attribute")
        attrs = tuple(Attribute.from_dict(a) for a in d["attributes"])
        if declared is None:
            src = d.get("source", DECLARED)
            if not isinstance(src, str):
                raise DomainError(f"domain file: \"source\" must be a string; got {_short(src)}")
            declared = src.strip().lower() in (DECLARED, "declared") or src == DP_FOUND
            if not declared and src != INFERRED:
                raise DomainError(f"domain file: \"source\" must be \"declared\" (reviewed by the curator) or "
                                  f"\"{INFERRED}\"; got {_short(src)}")
        found = declared and d.get("source") == DP_FOUND  # a released DP domain read back stays what it is
        return cls(attrs, DP_FOUND if found else DECLARED if declared else INFERRED)

    @classmethod
    def from_json(cls, text: str, declared: bool | None = None) -> Domain:
        if len(text) > MAX_DOMAIN_CHARS:
            raise DomainError(f"domain file is too large ({len(text):,} characters; at most {MAX_DOMAIN_CHARS:,})")
        try:
            d = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DomainError("domain file is not valid JSON: "
                              f"{exc.msg} at line {exc.lineno}, column {exc.colno}") from None
        except RecursionError:
            raise DomainError("domain file is nested too deeply to be a domain; check its structure") from None
        except ValueError:  # an integer literal with thousands of digits
            raise DomainError("domain file holds a number with too many digits to read; "
                              "write such levels as strings and edges as ordinary numbers") from None
        return cls.from_dict(d, declared=declared)

    @classmethod
    def load(cls, path) -> Domain:
        """Read ``domain.json`` (UTF-8, or UTF-16 with a byte-order mark), honouring its ``source``."""
        if not isinstance(path, (str, os.PathLike)):
            # an int would be taken by open() as a file descriptor
            raise DomainError(f"the domain must be a Domain, a dict or the path of a domain.json file; got {path!r}")
        try:
            with open(path, "rb") as fh:
                raw = fh.read(MAX_DOMAIN_CHARS * 4 + 1)
        except OSError as exc:
            raise DomainError(f"cannot read domain file '{path}': {exc.strerror}") from None
        return cls.from_json(decode_text(raw, f"domain file '{path}'"))


#: Domain files above this are refused (a real domain is a few kB).
MAX_DOMAIN_CHARS = 20_000_000


def decode_text(raw: bytes, what: str, error: type = DomainError) -> str:
    """UTF-8 (with or without BOM), or UTF-16/UTF-32 with its BOM; anything else is a clear ``error``.

    NUL bytes in text that is not UTF-16/32 mean UTF-16 without a BOM or a binary file:
    refused rather than read as one garbled column.
    """
    for bom, codec in ((b"\xff\xfe\x00\x00", "utf-32"), (b"\x00\x00\xfe\xff", "utf-32"),
                       (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16")):
        if raw.startswith(bom):
            try:
                return raw.decode(codec)
            except UnicodeDecodeError:
                raise error(f"{what} claims {codec.upper()} but does not decode; save it as UTF-8") from None
    if b"\x00" in raw:
        raise error(f"{what} contains NUL bytes: it is UTF-16 without a byte-order mark or not text at all; "
                    "save it as UTF-8")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise error(f"{what} is not UTF-8 text; save it as UTF-8") from None


def _short(value, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


#: Bound on the attributes of one table: releases and evaluations do work that grows
#: with the number of attribute pairs; real tables have 15 to 40 attributes.
MAX_ATTRIBUTES = 1000


def code_dtype(shape: Sequence[int]) -> np.dtype:
    """The smallest unsigned dtype holding every code of attributes of ``shape`` levels (NA included):
    one byte per value up to 256 levels, against eight as int64."""
    top = max((int(s) for s in shape), default=1)
    return np.dtype(np.uint8 if top <= 2**8 else np.uint16 if top <= 2**16 else np.uint32 if top <= 2**32 else np.int64)


def check_width(n_columns: int) -> None:
    """Refuse more than MAX_ATTRIBUTES columns (called by the readers before typing every column)."""
    if n_columns > MAX_ATTRIBUTES:
        raise InputError(
            f"the table has {n_columns:,} columns; dpcore works with at most {MAX_ATTRIBUTES} attributes. "
            "Select the columns to release (drop identifiers and free text) and try again"
        )


def check_table(df: pd.DataFrame) -> None:
    """Refuse tables that cannot be synthesised, with a message naming the problem."""
    if df.shape[1] == 0:
        raise InputError("the table has no columns; check the file's header line and delimiter")
    if len(df) == 0:
        raise InputError("the table has a header but no rows; upload a file with data")
    check_width(df.shape[1])
    cols = [str(c) for c in df.columns]
    dup = sorted(set(c for c in cols if cols.count(c) > 1)) if len(set(cols)) != len(cols) else []
    if dup:
        raise InputError(f"duplicate column name(s) {', '.join(map(repr, dup))}; rename them so each column is unique")


def not_public_message(attributes: Sequence[Attribute]) -> str:
    """One clause naming the attributes whose edges are not public and why, e.g.
    "the bin edges of 'age', 'income' are the data's own min and max (read from the data)"."""
    parts = []
    for origin, why in ((DATA_RANGE, "are the data's own min and max (read from the data)"),
                        (UNSTATED, "have no stated origin (a domain file from before dpcore recorded it; write "
                                   "\"origin\": \"declared\" for edges you would publish)")):
        names = [a.name for a in attributes if a.origin == origin]
        if names:
            parts.append(f"the bin edges of {', '.join(map(repr, names))} {why}")
    return "; ".join(parts)


def numeric_spec_attribute(name: str, spec, numeric_bins: int, na: bool, dtype: str) -> Attribute:
    """The numeric attribute a curator asked for one column: explicit edges (origin
    ``"declared"``) or ``{"bounds": [lower, upper], "bins": k}`` (``"public_bounds"``).
    Shared by in-memory and engine domain inference."""
    origin = PUBLIC_BOUNDS if isinstance(spec, Mapping) else DECLARED_EDGES
    return numeric_attribute(name, numeric_spec_edges(name, spec, numeric_bins), na, dtype, origin=origin)


def numeric_spec_edges(name: str, spec, numeric_bins: int) -> tuple[float, ...]:
    """The bin edges a curator asked for one column: explicit edges, or ``{"bounds": [lower,
    upper], "bins": k}`` for k equal-width bins over public bounds. One-line error naming the
    column otherwise. Shared by in-memory and engine domain inference."""
    if isinstance(spec, Mapping):
        try:
            lo, hi = spec["bounds"]
        except (KeyError, TypeError, ValueError):
            raise DomainError(f"column '{name}': numeric binning needs \"bounds\": [lower, upper]") from None
        try:
            return equal_width_edges(float(lo), float(hi), int(spec.get("bins", numeric_bins)))
        except (DomainError, TypeError, ValueError) as exc:
            raise DomainError(f"column '{name}': {exc}") from None
    try:
        return tuple(float(x) for x in spec)
    except (TypeError, ValueError):
        raise DomainError(f"column '{name}': numeric binning is a list of public edges or {{\"bounds\": [lower, "
                          f"upper], \"bins\": k}}; got {_short(spec)}") from None


#: Names that moved to :mod:`dpcore.data.inference` (inference from raw data), still importable from here.
MOVED_TO_INFERENCE = frozenset({"infer_domain", "data_range_attribute", "DEFAULT_MAX_LEVELS", "DEFAULT_MAX_INT_LEVELS"})


def __getattr__(name: str) -> Any:
    """``from dpcore.data.domain import infer_domain`` keeps working for older callers: a name that
    moved to :mod:`dpcore.data.inference` is looked up there on first use (PEP 562). Inference
    builds on this module, never the other way round: nothing here imports it at import time."""
    if name in MOVED_TO_INFERENCE:
        return getattr(importlib.import_module("dpcore.data.inference"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
