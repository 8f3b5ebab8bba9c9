"""Bundled real data and the published SD2011 extracts (docs/reproduction.md).

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

#: The derived variables of docs/reproduction.md, in order; S_k uses the first k.
EXTRACT_VARIABLES: tuple[str, ...] = (
    "sex",
    "agegr",
    "placesize",
    "edu",
    "socprof",
    "income",
    "marital",
)

_REPO_ROOT = Path(__file__).resolve().parents[2]
_N_GROUPS = 5
_INCOME_NA_CODE = -8


def default_sd2011_path() -> Path:
    """``assets/sd2011.csv``, the copy bundled in the repository."""
    return _REPO_ROOT / "assets" / "sd2011.csv"


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
    """The S3 / S5 / S7 extract of SD2011 used by Raab (2022): docs/reproduction.md.

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


# --------------------------------------------------------------------------- CPS voters

#: Public age-group edges (years) for the CPS voter extract: [18,25), ..., [65,120].
CPS_AGE_EDGES: tuple[int, ...] = (18, 25, 35, 45, 55, 65, 120)

#: U.S. Census Bureau regions (a public mapping of the 50 states and DC).
_CENSUS_REGION: dict[str, str] = {
    **dict.fromkeys(("CT", "ME", "MA", "NH", "RI", "VT", "NJ", "NY", "PA"), "NORTHEAST"),
    **dict.fromkeys(("IL", "IN", "MI", "OH", "WI", "IA", "KS", "MN", "MO", "NE", "ND", "SD"), "MIDWEST"),
    **dict.fromkeys(("DE", "DC", "FL", "GA", "MD", "NC", "SC", "VA", "WV", "AL", "KY", "MS", "TN",
                     "AR", "LA", "OK", "TX"), "SOUTH"),
    **dict.fromkeys(("AZ", "CO", "ID", "MT", "NV", "NM", "UT", "WY", "AK", "CA", "HI", "OR", "WA"), "WEST"),
}

_CPS_EDU_GROUP: dict[str, str] = {
    **dict.fromkeys((
        "LESS THAN 1ST GRADE", "1ST, 2ND, 3RD OR 4TH GRADE", "5TH OR 6TH GRADE", "7TH OR 8TH GRADE",
        "9TH GRADE", "10TH GRADE", "11TH GRADE", "12TH GRADE NO DIPLOMA"), "NO DIPLOMA"),
    "HIGH SCHOOL GRAD-DIPLOMA OR EQUIV (GED)": "HIGH SCHOOL",
    **dict.fromkeys((
        "SOME COLLEGE BUT NO DEGREE", "ASSOCIATE DEGREE-ACADEMIC PROGRAM",
        "ASSOCIATE DEGREE-OCCUPATIONAL/VOCATIONAL"), "SOME COLLEGE"),
    "BACHELOR'S DEGREE (EX: BA, AB, BS)": "BACHELOR",
    **dict.fromkeys((
        "MASTER'S DEGREE (EX: MA, MS, MENG, MED, MSW)", "PROFESSIONAL SCHOOL DEG (EX: MD, DDS, DVM)",
        "DOCTORATE DEGREE (EX: PHD, EDD)"), "GRADUATE"),
}

_CPS_RACE_GROUP: dict[str, str] = {
    "WHITE": "WHITE",
    "BLACK": "BLACK",
    "ASIAN, PACIFIC ISLANDER, OR NATIVE HAWAIIAN": "ASIAN/PACIFIC",
    "AMERICAN INDIAN OR ALASKA NATIVE": "OTHER",
    "TWO OR MORE RACES": "OTHER",
}

_CPS_RESIDENCE: dict[str, str] = {
    "LESS THAN 1 YEAR": "<1 YEAR",
    "1-2 YEARS": "1-4 YEARS",
    "3-4 YEARS": "1-4 YEARS",
    "5 YEARS OR LONGER": "5+ YEARS",
    "DON'T KNOW": "NO ANSWER",
    "REFUSED": "NO ANSWER",
    "NO RESPONSE": "NO ANSWER",
}

#: Columns of :func:`cps_voter_extract`, in order.
CPS_VOTER_VARIABLES: tuple[str, ...] = (
    "year", "region", "sex", "agegr", "race", "hispanic", "edu",
    "residence", "registered", "turnout",
)


def cps_voter_extract(df: pd.DataFrame) -> pd.DataFrame:
    """A categorical voter table from the cpsvote CPS sample (``cps_vrs_10k.csv``).

    Keeps adults (AGE ≥ 18) who were asked the voting questions (``cps_turnout``
    present) and returns 10 string columns (:data:`CPS_VOTER_VARIABLES`):

    - ``year``: election year (1994 … 2018, even years);
    - ``region``: STATE mapped to its U.S. Census Bureau region (public mapping);
    - ``sex``, ``hispanic``: as recorded;
    - ``agegr``: AGE cut at the fixed public edges 18, 25, 35, 45, 55, 65, 120
      (``"18-24"`` … ``"65+"``), not at data quantiles;
    - ``race``: WHITE, BLACK, ASIAN/PACIFIC, OTHER (American Indian and two or more races);
    - ``edu``: EDUCATION collapsed to NO DIPLOMA, HIGH SCHOOL, SOME COLLEGE (incl.
      associate degrees), BACHELOR, GRADUATE;
    - ``residence``: VRS_RESIDENCE as <1 YEAR, 1-4 YEARS, 5+ YEARS, NO ANSWER
      (don't know / refused / no response); missing (not asked) stays missing;
    - ``registered``: YES if the person voted (VRS_VOTE = YES) or said they were
      registered (VRS_REG = YES), NO if VRS_REG = NO, otherwise UNKNOWN;
    - ``turnout``: ``cps_turnout`` (the Census Bureau's coding: non-response counts as NO).

    The full cross-tabulation has 748,800 cells (NA a level), small enough for a
    dense STEPS leaf layer to release m = 5 sets in about a second.

    All groupings use fixed public definitions, so the levels are public given the
    survey's codebook.  **Not differentially private**: this is the confidential
    input table for demonstrations, not a release.
    """
    need = ["YEAR", "STATE", "AGE", "SEX", "EDUCATION", "RACE", "HISPANIC", "VRS_VOTE", "VRS_REG",
            "VRS_RESIDENCE", "cps_turnout"]
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise InputError(f"CPS table lacks column(s) {missing}; pass the cpsvote sample cps_vrs_10k.csv")
    age = pd.to_numeric(df["AGE"], errors="coerce")
    d = df[df["cps_turnout"].notna() & (age >= CPS_AGE_EDGES[0])].reset_index(drop=True)
    age = pd.to_numeric(d["AGE"], errors="coerce").to_numpy(dtype=float)
    edges = np.asarray(CPS_AGE_EDGES, dtype=float)
    labels = [f"{a}-{b - 1}" for a, b in zip(CPS_AGE_EDGES[:-2], CPS_AGE_EDGES[1:-1])] + [f"{CPS_AGE_EDGES[-2]}+"]
    code = np.clip(np.searchsorted(edges, age, side="right") - 1, 0, len(labels) - 1)
    agegr = np.where(np.isnan(age), None, np.asarray(labels, dtype=object)[code])

    def _map(col: str, mapping: dict, default=None) -> pd.Series:
        s = d[col].astype(object)
        out = s.map(lambda v: mapping.get(str(v), default) if pd.notna(v) else None)
        return out.astype(object)

    vote = d["VRS_VOTE"].astype(object)
    reg = d["VRS_REG"].astype(object)
    registered = np.where(vote == "YES", "YES", np.where(reg == "YES", "YES", np.where(reg == "NO", "NO", "UNKNOWN")))
    out = pd.DataFrame({
        "year": d["YEAR"].astype(int).astype(str),
        "region": _map("STATE", _CENSUS_REGION, "UNKNOWN"),
        "sex": d["SEX"].astype(object),
        "agegr": agegr,
        "race": _map("RACE", _CPS_RACE_GROUP, "OTHER"),
        "hispanic": d["HISPANIC"].astype(object),
        "edu": _map("EDUCATION", _CPS_EDU_GROUP),
        "residence": _map("VRS_RESIDENCE", _CPS_RESIDENCE, "NO ANSWER"),
        "registered": registered,
        "turnout": d["cps_turnout"].astype(object),
    })
    return out[list(CPS_VOTER_VARIABLES)]


__all__ += ["cps_voter_extract", "CPS_VOTER_VARIABLES", "CPS_AGE_EDGES"]



#: Ordered levels of SD2011's categorical matching attributes, as the synthpop codebook
#: lists them. Declared public (they are the questionnaire's answer categories), so
#: k-NN imputation can use them as ordinal scales without reading them off the data.
SD2011_LEVELS = {
    "sex": ["FEMALE", "MALE"],
    "agegr": ["16-24", "25-34", "35-44", "45-59", "60-64", "65+"],
    "edu": ["PRIMARY/NO EDUCATION", "VOCATIONAL/GRAMMAR", "SECONDARY", "POST-SECONDARY OR HIGHER"],
    "socprof": ["EMPLOYED IN PRIVATE SECTOR", "EMPLOYED IN PUBLIC SECTOR", "FARMER", "LONG-TERM SICK/DISABLED",
                "OTHER ECONOMICALLY INACTIVE", "PUPIL OR STUDENT", "RETIRED", "SELF-EMPLOYED", "UNEMPLOYED"],
    "placesize": ["RURAL AREAS", "URBAN BELOW 20,000", "URBAN 20,000-100,000", "URBAN 100,000-200,000",
                  "URBAN 200,000-500,000", "URBAN 500,000 AND OVER"],
}


# --------------------------------------------------------------------------- CPS voters, wide

#: Columns of :func:`cps_voter_wide`, in order, and the cps_vrs_10k column each comes from
#: (``agegr`` is AGE cut at :data:`CPS_AGE_EDGES`).
CPS_WIDE_SOURCES: dict[str, str] = {
    "year": "YEAR", "state": "STATE", "sex": "SEX", "agegr": "AGE", "race": "RACE", "hispanic": "HISPANIC",
    "education": "EDUCATION", "vote": "VRS_VOTE", "reg": "VRS_REG", "vote_time": "VRS_VOTE_TIME",
    "residence": "VRS_RESIDENCE", "vote_whynot": "VRS_VOTE_WHYNOT", "votemethod_1996_2002": "VRS_VOTEMETHOD_1996to2002",
    "reg_since95": "VRS_REG_SINCE95", "reg_dmv": "VRS_REG_DMV", "reg_method": "VRS_REG_METHOD",
    "reg_whynot": "VRS_REG_WHYNOT", "votemode_2004": "VRS_VOTEMODE_2004toPRESENT",
    "votewhen_2004": "VRS_VOTEWHEN_2004toPRESENT", "votemethod_con": "VRS_VOTEMETHOD_CON",
    "turnout": "cps_turnout", "turnout_hurachen": "hurachen_turnout",
}
CPS_WIDE_VARIABLES: tuple[str, ...] = tuple(CPS_WIDE_SOURCES)


#: Environment variable naming the full cpsvote sample ``cps_vrs_10k.csv`` (not bundled:
#: the repository ships only files derived from it, see assets/README.md).
CPS_VRS_ENV = "DPCORE_CPS_VRS"


def default_cps_path() -> Path | None:
    """The full cpsvote sample named by ``$DPCORE_CPS_VRS``, or None when it is not set."""
    import os

    value = os.environ.get(CPS_VRS_ENV, "").strip()
    return Path(value) if value else None


def load_cps_vrs(path: str | Path | None = None) -> pd.DataFrame:
    """Read the cpsvote sample ``cps_vrs_10k.csv`` (10000 × 25; not bundled, see assets/README.md)."""
    p = Path(path) if path is not None else default_cps_path()
    if p is None:
        raise InputError(f"the full CPS sample cps_vrs_10k.csv is not bundled; pass path= or set {CPS_VRS_ENV} "
                         "to its location (assets/cps_voter_wide.csv is the bundled wide table)")
    if not p.exists():
        raise InputError(f"CPS file not found at {p}; pass path= to the cpsvote sample cps_vrs_10k.csv")
    return pd.read_csv(p, low_memory=False)


def bundled_cps_table(name: str) -> pd.DataFrame:
    """A CPS table bundled in ``assets/``, read by dpcore's reading rules (every column as
    text first, so codes keep their form): ``"wide"`` (``cps_voter_wide.csv``, built by
    :func:`cps_voter_wide`) or ``"voters"`` (``cps_voters.csv``, built by
    :func:`cps_voter_extract`). Provenance: assets/README.md. **Not differentially private**."""
    from dpcore.data.io import read_table

    files = {"wide": "cps_voter_wide.csv", "voters": "cps_voters.csv"}
    if name not in files:
        raise OptionError(f"bundled CPS table must be one of {', '.join(files)}; got {name!r}")
    return read_table(_REPO_ROOT / "assets" / files[name])


def cps_voter_wide(df: pd.DataFrame | None = None) -> pd.DataFrame:
    """A wide categorical voter table: the rows of :func:`cps_voter_extract`, 22 attributes.

    Same records as the extract (adults asked the voting questions: 6231 of 10000) and,
    instead of collapsed groups, the survey's own codes (:data:`CPS_WIDE_VARIABLES`):
    ``year`` (13 levels), ``state`` (51, with DC), ``sex``, ``agegr`` (AGE at the public
    edges 18, 25, 35, 45, 55, 65), ``race`` (the 5 CPS codes), ``hispanic``,
    ``education`` (the 16 CPS codes), every VRS question column (``vote``, ``reg``,
    ``vote_time``, ``residence``, ``vote_whynot``, ``votemethod_1996_2002``,
    ``reg_since95``, ``reg_dmv``, ``reg_method``, ``reg_whynot``, ``votemode_2004``,
    ``votewhen_2004``, ``votemethod_con``) and both turnout recodes. Questions not asked
    of a person stay missing, which the domain counts as a level "NA".

    With NA as a level the full cross-tabulation has 649,512,959,606,784,000 ≈ 6.5·10^17
    cells for 6231 records: every method must work from the non-empty cells
    (:mod:`dpcore.counting.count_table`). ``df`` defaults to :func:`load_cps_vrs`.

    **Not differentially private**: the confidential input table, not a release. All
    levels are codebook categories or fixed public edges.
    """
    if df is None:
        df = load_cps_vrs()
    missing = [c for c in set(CPS_WIDE_SOURCES.values()) if c not in df.columns]
    if missing:
        raise InputError(f"CPS table lacks column(s) {sorted(missing)}; pass the cpsvote sample cps_vrs_10k.csv")
    age = pd.to_numeric(df["AGE"], errors="coerce")
    d = df[df["cps_turnout"].notna() & (age >= CPS_AGE_EDGES[0])].reset_index(drop=True)
    out = {}
    for name, col in CPS_WIDE_SOURCES.items():
        if name == "agegr":
            out[name] = cps_voter_extract(df)["agegr"].to_numpy(dtype=object)
        elif name == "year":
            out[name] = d[col].astype(int).astype(str).to_numpy(dtype=object)
        else:
            s = d[col].astype(object)
            out[name] = s.where(s.notna(), None).map(lambda v: None if v is None else str(v)).to_numpy(dtype=object)
    return pd.DataFrame(out)


__all__ += ["cps_voter_wide", "CPS_WIDE_VARIABLES", "load_cps_vrs", "default_cps_path", "CPS_VRS_ENV",
            "bundled_cps_table"]


#: Fixed public age edges of the CPS post-stratification demo and their labels.
CPS_POSTSTRAT_AGE_EDGES = [18, 25, 30, 35, 45, 55, 65, 75, 200]
CPS_POSTSTRAT_AGE_LEVELS = ["18-24", "25-29", "30-34", "35-44", "45-54", "55-64", "65-74", "75+"]
_CPS_POSTSTRAT_RACE = {"WHITE": "WHITE", "BLACK": "BLACK"}  # every other CPS race code → OTHER


def cps_poststrat_sample(raw: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """The weighted CPS sample for the post-stratification demo, and how many rows each rule dropped.

    Keeps the rows with a positive ``WEIGHT`` in the voting-supplement universe (AGE ≥ 18,
    asked the voting questions) and derives the binning columns by fixed public definitions
    (``agegr`` at :data:`CPS_POSTSTRAT_AGE_EDGES`, ``race`` as WHITE / BLACK / OTHER; the
    same lines as in ``assets/README.md``). **Not differentially private**: the confidential
    input of a release, and the row counts are for the curator only.
    """
    need = ["WEIGHT", "AGE", "SEX", "RACE", "HISPANIC", "YEAR", "cps_turnout"]
    missing = [c for c in need if c not in raw.columns]
    if missing:
        raise InputError(f"CPS table lacks column(s) {missing}; pass the weighted cpsvote sample cps_vrs_10k.csv")
    w = pd.to_numeric(raw["WEIGHT"], errors="coerce")
    n_missing, n_nonpos = int(w.isna().sum()), int((w <= 0).sum())
    d = raw[w > 0]
    n_pos = len(d)
    d = d[(pd.to_numeric(d["AGE"], errors="coerce") >= 18) & d["cps_turnout"].notna()]
    out = pd.DataFrame({
        "agegr": pd.cut(d["AGE"], CPS_POSTSTRAT_AGE_EDGES, right=False, labels=CPS_POSTSTRAT_AGE_LEVELS).astype(str),
        "sex": d["SEX"].astype(str),
        "race": d["RACE"].map(_CPS_POSTSTRAT_RACE).fillna("OTHER"),
        "hispanic": d["HISPANIC"].astype(str),
        "year": d["YEAR"].astype(int).astype(str),
        "age": d["AGE"].astype(int),
        "turnout": d["cps_turnout"].astype(str),
        "WEIGHT": d["WEIGHT"].astype(float),
    }).reset_index(drop=True)
    return out, {"raw": len(raw), "missing_weight": n_missing, "nonpositive_weight": n_nonpos,
                 "outside_universe": n_pos - len(out), "kept": len(out)}


__all__ += ["SD2011_LEVELS", "cps_poststrat_sample", "CPS_POSTSTRAT_AGE_EDGES", "CPS_POSTSTRAT_AGE_LEVELS"]
