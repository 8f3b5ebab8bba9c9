"""Bundled real data and the published SD2011 extracts (SPEC §6).

``load_sd2011`` reads synthpop's SD2011 (5000 records, 35 variables; Council for
Social Monitoring, Social Diagnosis 2000–2011; GPL-2 | GPL-3).  ``sd2011_extract``
builds the S3 / S5 / S7 extracts used by Raab (2022).

**Not differentially private.**  The age and income group edges are quantiles of
the raw data, and the levels are read from the raw data.  These functions
reproduce a *published* extract so that the paper's figures can be checked; the
result is the confidential input table handed to a synthesizer, never a release.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dpcore.errors import InputError, OptionError

__all__ = ["EXTRACT_VARIABLES", "load_sd2011", "sd2011_extract", "default_sd2011_path"]

#: The derived variables of SPEC §6, in order; S_k uses the first k.
EXTRACT_VARIABLES: tuple[str, ...] = (
    "sex",
    "agegr",
    "placesize",
    "edu",
    "socprof",
    "income",
    "marital",
)

_REPO_ROOT = Path(__file__).resolve().parents[1]
_N_GROUPS = 5
_INCOME_NA_CODE = -8


def default_sd2011_path() -> Path:
    """``assets/sd2011.csv`` in the repo if present, else ``../shared/data/sd2011.csv``."""
    bundled = _REPO_ROOT / "assets" / "sd2011.csv"
    if bundled.exists():
        return bundled
    return _REPO_ROOT.parent / "shared" / "data" / "sd2011.csv"


def load_sd2011(path: str | Path | None = None) -> pd.DataFrame:
    """Read synthpop's SD2011 as a DataFrame (empty cells become missing values).

    This is the raw, confidential-by-assumption table: anything computed from it
    directly is for the curator's own evaluation and is not differentially private.
    """
    p = Path(path) if path is not None else default_sd2011_path()
    if not p.exists():
        raise InputError(
            f"SD2011 file not found at {p}; pass path= or put sd2011.csv in assets/."
        )
    return pd.read_csv(p)


def _fmt(x: float) -> str:
    """A short, readable number: integers without a decimal point."""
    x = float(x)
    if x.is_integer():
        return str(int(x))
    return np.format_float_positional(x, trim="-")


def _quantile_cut(x: pd.Series, n_groups: int, name: str) -> pd.Categorical:
    """Cut ``x`` into ``n_groups`` groups at its type-7 quantiles.

    Mirrors R's ``cut(x, quantile(x, seq(0, 1, 1/n)), right = FALSE,
    include.lowest = TRUE)``: intervals ``[a,b)`` closed on the left, the last one
    ``[a,b]``.  numpy's default quantile method ("linear") is R's type 7.  Missing
    values stay missing.  Labels are plain numbers (``"[16,28)"``); R would print
    the same groups with ``formatC(..., digits = 3)`` labels.

    The edges come from the raw data: NOT differentially private.
    """
    values = pd.to_numeric(x, errors="coerce").to_numpy(dtype=float)
    observed = values[~np.isnan(values)]
    if observed.size == 0:
        raise InputError(f"column {name!r} has no observed values to cut into groups")
    edges = np.quantile(observed, np.linspace(0.0, 1.0, n_groups + 1))
    if np.unique(edges).size != edges.size:
        # R's cut() stops with "'breaks' are not unique" here; so do we.
        raise InputError(
            f"column {name!r}: quantile edges {edges.tolist()} are not unique, "
            f"so it cannot be cut into {n_groups} quantile groups"
        )
    labels = [
        f"[{_fmt(edges[i])},{_fmt(edges[i + 1])}" + ("]" if i == n_groups - 1 else ")")
        for i in range(n_groups)
    ]
    codes = np.searchsorted(edges, values, side="right") - 1
    codes = np.where(values == edges[-1], n_groups - 1, codes)  # last group closed
    codes = np.where(np.isnan(values), -1, codes)
    return pd.Categorical.from_codes(codes, categories=labels)


def _as_categorical(x: pd.Series) -> pd.Categorical:
    """Strings as a categorical with sorted levels; missing stays missing."""
    s = x.astype(object).where(x.notna(), None)
    levels = sorted({str(v) for v in s.dropna()})
    return pd.Categorical(s.map(lambda v: None if v is None else str(v)), categories=levels)


def sd2011_extract(df: pd.DataFrame, k: int) -> pd.DataFrame:
    """The S3 / S5 / S7 extract of SD2011 used by Raab (2022): SPEC §6.

    Returns the first ``k`` (3, 5 or 7) of ``sex, agegr, placesize, edu, socprof,
    income, marital``, each as a pandas categorical of strings with missing values
    kept as missing (NaN), which the metrics count as a level "NA":

    - ``agegr``: ``age`` cut into 5 groups at its R type-7 quantiles, closed on the
      left, the last group closed on the right (labels such as ``"[16,28)"``).
    - ``income``: the code −8 ("not applicable") becomes its own level ``"-8"``;
      the other observed incomes are cut into 5 quantile groups as for ``agegr``;
      missing stays missing.
    - the others: the original strings.

    **Not differentially private.**  The group edges are quantiles of the raw data
    and the levels are the raw data's; this reproduces a published extract so the
    paper's figures can be checked.  It is the input table, not a release.
    """
    if k not in (3, 5, 7):
        raise OptionError(f"k must be 3, 5 or 7 (the S3/S5/S7 extracts), got {k!r}")
    wanted = EXTRACT_VARIABLES[:k]
    source = {"agegr": "age", "income": "income"}
    missing = [source.get(v, v) for v in wanted if source.get(v, v) not in df.columns]
    if missing:
        raise InputError(f"SD2011 table lacks column(s) {missing} needed for S{k}")

    out: dict[str, pd.Categorical] = {}
    for var in wanted:
        if var == "agegr":
            out[var] = _quantile_cut(df["age"], _N_GROUPS, "age")
        elif var == "income":
            inc = pd.to_numeric(df["income"], errors="coerce")
            is_code = (inc == _INCOME_NA_CODE).to_numpy()
            grouped = _quantile_cut(inc.where(~is_code), _N_GROUPS, "income")
            cats = list(grouped.categories) + [str(_INCOME_NA_CODE)]
            codes = np.where(is_code, len(cats) - 1, grouped.codes)
            out[var] = pd.Categorical.from_codes(codes, categories=cats)
        else:
            out[var] = _as_categorical(df[var])
    return pd.DataFrame(out, index=df.index)
