"""[private-domain] item 4: the measures of bench/accuracy/private_domain.py and its CSV files.

Curator-side throughout (they read the raw table; NOT DP): the synthetic records mapped onto the declared domain's
codes (:func:`declared_codes`) and scored there (:func:`spmse`); a median's relative error; which levels of 5% or
more survive (:func:`level_rows`); the DP domain drawn alone, as ``synthesize`` draws it first (:func:`domain_only`),
and the original records put through it with no noise (:func:`binfloor`). The CSV files are appended row by row,
and a key already recorded is not run again (:func:`recorded`).
"""

from __future__ import annotations

import csv
import math
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

BENCH = Path(__file__).resolve().parents[1]
DATA = BENCH / "data"
BINFLOOR_CSV = DATA / "private_domain_binfloor.csv"
TABLE_FIELDS = [
    *("table", "n", "columns", "text_columns", "numeric_columns", "definition", "delta", "share", "seed", "types"),
    *("variant", "subset", "method", "status", "spmse", "seconds", "message", "load1", "commit", "date"),
]
COLUMN_FIELDS = [
    *("table", "n", "columns", "definition", "share", "seed", "types", "subset", "column", "kind", "declared_kind"),
    *("status", "forecast", "withheld", "fallback", "true_median", "median_dp", "median_declared", "relerr_dp"),
    *("relerr_declared", "span", "w1_dp", "w1_declared", "levels_true", "levels_found", "records_survived"),
    *("missing_true", "missing_dp", "missing_declared"),
]
LEVEL_FIELDS = [
    *("table", "n", "columns", "definition", "share", "seed", "types", "source", "column", "level", "level_share"),
    "survived",
]
BINFLOOR_FIELDS = [
    *("table", "n", "columns", "definition", "share", "seed", "subset", "spmse_binfloor", "spmse_binfloor_numeric"),
]
UNMATCHED = -1
#: a level this common must survive (the [private-domain] target)
COMMON_LEVEL = 0.05
NOT_FOUND = "not found at this budget"


@dataclass(frozen=True)
class Files:
    """The results files of one method (MST's are the default names; another method's carry its name)."""

    tables: Path
    columns: Path
    levels: Path

    @classmethod
    def of(cls, method: str = "mst", label: str = "") -> Files:
        """``label``: a rerun kept beside the recorded rows (``private_domain_<label>_tables.csv``, …)."""
        tag = "" if method == "mst" else f"{method}_"
        tag += f"{label}_" if label else ""
        return cls(*(DATA / f"private_domain_{tag}{k}.csv" for k in ("tables", "columns", "levels")))


def tables_by_size(names: list[str] | None, cache: Path, min_n: int, max_n: int):
    """(name, frame, declared domain) of the corpus tables named (all when None) with ``min_n`` ≤ n ≤ ``max_n``,
    smallest first. A table is read twice (once to size it): both reads come from the corpus's Parquet cache, and
    the frames are not all held at once."""
    import corpus  # bench/tools, on sys.path in the scripts that import this module

    specs = corpus.corpus_specs()
    sized = []
    for name in names or list(specs):
        df, _ = corpus.load_table(name, cache_dir=cache, specs=specs)
        if min_n <= len(df) <= max_n:
            sized.append((len(df), name))
    for _, name in sorted(sized):
        df, dom = corpus.load_table(name, cache_dir=cache, specs=specs)
        yield name, df, dom


def commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=BENCH)
    return out.stdout.strip() or "unknown"


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S")


# ------------------------------------------------------------------ mapping onto the declared domain


def declared_codes(syn: pd.DataFrame, dom) -> pd.DataFrame:
    """The synthetic records as codes of the declared domain ``dom`` (bench/accuracy/private_domain.py's
    docstring); UNMATCHED where no declared code fits."""
    out = {}
    for a in dom.attributes:
        s = syn[a.name]
        missing = s.isna().to_numpy()
        codes = np.full(len(s), UNMATCHED, dtype=np.int64)
        if a.na:
            codes[missing] = len(a.levels)
        present = ~missing
        if a.kind == "numeric":
            x = pd.to_numeric(s[present], errors="coerce").to_numpy(dtype=float)
            edges = np.asarray(a.edges, float)
            codes[present] = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, len(a.edges) - 2)
        elif all(isinstance(v, str) for v in a.levels):
            idx = pd.Index(list(a.levels)).get_indexer(s[present].astype(str))
            codes[present] = np.where(idx >= 0, idx, UNMATCHED)
        else:  # numeric codes: snap to the nearest declared level
            lv = np.asarray([float(v) for v in a.levels])
            x = pd.to_numeric(s[present], errors="coerce").to_numpy(dtype=float)
            near = np.abs(x[:, None] - lv[None, :]).argmin(axis=1)
            codes[present] = np.where(np.isnan(x), UNMATCHED, near)
        out[a.name] = codes
    return pd.DataFrame(out)


def spmse(orig_codes: pd.DataFrame, syn_codes: pd.DataFrame) -> float:
    from dpcore.metrics import utility_tables

    return float(utility_tables(orig_codes, [syn_codes]).mean_s_pmse)


def median_of(s: pd.Series) -> float:
    x = pd.to_numeric(s, errors="coerce").dropna()
    return float(x.median()) if len(x) else math.nan


def relerr(syn: float, true: float) -> float:
    """|synthetic − true| / |true|; when the true median is 0, 0 if the synthetic one is 0 too, else inf."""
    if math.isnan(syn):
        return math.nan
    if true == 0:
        return 0.0 if syn == 0 else math.inf
    return abs(syn - true) / abs(true)


def level_key(v) -> str:
    """A level by name: text as it is, a whole number as its digits (3, 3.0 and "3" alike)."""
    try:
        x = float(v)
    except (TypeError, ValueError):
        return str(v)
    return str(int(x)) if math.isfinite(x) and x.is_integer() else str(v)


def level_rows(base: dict, df: pd.DataFrame, record: dict, text: list[str], source: str) -> list[dict]:
    """One row per level holding ≥ COMMON_LEVEL of the records of a levels column: did the DP domain find it."""
    rows = []
    for c in text:
        shares = df[c].dropna().map(level_key).value_counts() / len(df)
        found = set(map(level_key, record[c].get("levels", [])))
        for lv, sh in shares.items():
            if sh >= COMMON_LEVEL:
                row = {"source": source, "column": c, "level": lv, "level_share": round(float(sh), 5)}
                rows.append({**base, **row, "survived": int(lv in found)})
    return rows


# ------------------------------------------------------------------ declared types, budgets


def codebook_schema(df: pd.DataFrame, dom):
    """The frame's dtypes, except that a column the corpus declares categorical with whole-number levels is
    declared a whole-number code (``role="code"``: its levels found as DP levels under (ε, δ), one bin per number
    under pure ε): the type a codebook gives it, public; its levels are still found privately."""
    from dpcore.data.schema import DECLARED_SCHEMA, ColumnType, Schema

    def whole(v) -> bool:
        return isinstance(v, (int, np.integer)) or (isinstance(v, float) and float(v).is_integer())

    cols = []
    for col, a in zip(Schema.from_dtypes(df).columns, dom.attributes):
        if a.kind == "categorical" and col.type in ("whole", "number") and all(map(whole, a.levels)):
            nullable = bool(df[col.name].isna().any()) or col.nullable and col.type == "number"
            col = ColumnType(col.name, "whole", nullable, "code")
        cols.append(col)
    return Schema(tuple(cols), DECLARED_SCHEMA)


def floor_epsilon(delta, share: float, levels_delta: float) -> float:
    """The ε at which a release on the declared domain gets what a ``domain="dp"`` release leaves its sets: pure ε,
    (1 − share)·ε; under (ε, δ), the ε whose ρ at δ is (1 − share) times the ρ of ε = 1 at δ − levels_delta (the
    part of δ the DP levels' thresholds take)."""
    if delta is None:
        return 1.0 - share
    from dpcore.privacy.budget import Epsilon, Rho

    target = (1.0 - share) * float(Rho.within(Epsilon(1.0), delta - levels_delta).value)
    lo, hi = 1e-6, 1.0
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if float(Rho.within(Epsilon(mid), delta).value) < target else (lo, mid)
    return lo


# ------------------------------------------------------------------ the DP domain alone


def domain_only(df: pd.DataFrame, delta, share: float, seed: int, schema=None, with_domain: bool = False):
    """The DP domain's record of one draw, without the synthetic sets: what ``synthesize`` runs first, with the
    same budget, neighbours and generator (tests the equality on seed 0 in :func:`check_domain_only`)."""
    from dpcore.api import privacy_setup
    from dpcore.measure.dp_domain import dp_domain, plan_dp_domain
    from dpcore.privacy.budget import Epsilon
    from dpcore.privacy.definitions import definition_for
    from dpcore.privacy.ledger import Ledger

    if schema is not None:  # as synthesize: the table conformed to its declared schema first
        from dpcore.api import conform_to_schema

        df = conform_to_schema(df, schema)[0].data
    plan = plan_dp_domain(df, delta, share, None, schema)
    definition = definition_for(delta)
    if plan.levels_delta:
        definition = definition_for(definition.delta - plan.levels_delta)
    budget = definition.budget(Epsilon(1.0))
    nb, _ = privacy_setup("add_remove", None, None)
    ledger = Ledger.capped("release (domain only)", budget, definition.delta)
    found, record, _ = dp_domain(df, plan, plan.share * budget, np.random.default_rng(seed), ledger, nb, definition)
    return (found, record) if with_domain else record


def check_domain_only(df: pd.DataFrame, share: float = 0.25) -> bool:
    """The domain-only draw at seed 0 is the domain the release at seed 0 found (same levels, same bounds)."""
    import dpcore

    rel = dpcore.synthesize(df, "mst", 1.0, domain="dp", delta=1e-9, seed=0, domain_share=share)
    rec = domain_only(df, 1e-9, share, 0)
    a = {c: (r.get("levels"), r.get("bounds")) for c, r in rel.diagnostics["dp_domain"]["columns"].items()}
    b = {c: (r.get("levels"), r.get("bounds")) for c, r in rec.items()}
    return a == b


def binfloor(df: pd.DataFrame, dom, found, seed: int) -> tuple[float, float]:
    """S_pMSE on the declared codes of the ORIGINAL records put through the DP domain ``found`` and drawn back
    (recoded to its levels, encoded, decoded: values uniform inside their DP bin), no noise, no model: what the DP
    domain costs by itself. (all columns, numeric columns only: the text columns left as they are)."""
    from dpcore.measure.dp_domain import recode_for_domain

    orig = pd.DataFrame(dom.encode(df), columns=dom.names)
    rec, _ = recode_for_domain(df, found)
    back = found.decode(found.encode(rec), np.random.default_rng(seed))
    numeric_only = back.copy()
    for a in found.attributes:
        if a.kind != "numeric":
            numeric_only[a.name] = df[a.name].to_numpy()
    return spmse(orig, declared_codes(back, dom)), spmse(orig, declared_codes(numeric_only, dom))


def diagnose(df: pd.DataFrame, dom, seed: int = 0, share: float = 0.25) -> pd.DataFrame:
    """Which columns drive S_pMSE: per column, the mean two-way S_pMSE of the pairs holding it, nothing declared
    and declared, (1, 10⁻⁹), one seed; with the column's DP status, how its records map onto the declared codes
    (share unmatched) and its one-way TV distance on the declared codes."""
    import dpcore
    from dpcore.metrics import utility_tables

    orig = pd.DataFrame(dom.encode(df), columns=dom.names)
    rel = dpcore.synthesize(df, "mst", 1.0, domain="dp", delta=1e-9, seed=seed, domain_share=share)
    ref = dpcore.synthesize(df, "mst", 1.0, domain=dom, delta=1e-9, seed=seed)
    dp, de = declared_codes(rel.sets[0], dom), declared_codes(ref.sets[0], dom)
    pt = {k: utility_tables(orig, [x]).per_table for k, x in (("dp", dp), ("declared", de))}
    rows = []
    for c in dom.names:
        r = {
            "column": c,
            "status": rel.diagnostics["dp_domain"]["columns"][c].get("status"),
            "declared_kind": dom[c].kind,
            "unmatched": float((dp[c] == UNMATCHED).mean()),
        }
        for k, x in (("dp", dp), ("declared", de)):
            t = pt[k]
            holds = [c in v for v in t.variables]
            r[f"pairs_{k}"] = float(t[holds].s_pmse.mean())
            po = orig[c].value_counts(normalize=True)
            ps = x[c].value_counts(normalize=True)
            r[f"tv_{k}"] = float(0.5 * po.subtract(ps, fill_value=0).abs().sum())
        rows.append(r)
    out = pd.DataFrame(rows)
    out.attrs["spmse"] = (spmse(orig, dp), spmse(orig, de))
    return out


# ------------------------------------------------------------------ CSV


def append(path: Path, fields: list[str], row: dict) -> None:
    append_many(path, fields, [row])


def append_many(path: Path, fields: list[str], rows: list[dict]) -> None:
    if not rows:
        return
    new = not path.exists()
    with path.open("a", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        if new:
            w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) and math.isfinite(v) else v) for k, v in r.items()})


def recorded(tables_csv: Path) -> set:
    """The keys (table, definition, share, seed, variant, subset, types) already in the tables file."""
    if not tables_csv.exists():
        return set()
    t = pd.read_csv(tables_csv, dtype=str).fillna("")
    return {
        (r.table, r.definition, (f"{float(r.share):g}" if r.share else ""), r.seed, r.variant, r.subset, r.types)
        for r in t.itertuples()
    }
