"""Data handling of the Survey page: loading the demo surveys, cached dpcore.survey calls.

No widgets here; the page modules (_survey_imputation.py, _survey_poststrat.py) draw them.
"""
from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import streamlit as st

import dpcore
from dpcore.data.datasets import CPS_POSTSTRAT_AGE_LEVELS
from pages import _common as ui

LN2 = math.log(2.0)
SD2011 = ui.ASSETS / "sd2011.csv"
#: the weighted CPS sample of the post-stratification demo, bundled (provenance: assets/README.md)
CPS_WEIGHTED = ui.ASSETS / "cps_vrs_weighted.csv"

#: ordinal matching attributes; their public levels (lowest first) are dpcore.data.datasets.SD2011_LEVELS
ORDINAL = ("agegr", "edu", "placesize")
DEFAULT_MATCH = ["sex", "agegr", "edu", "socprof", "placesize"]

METHODS = {
    "smooth": "Smooth sensitivity on the imputed data (DP)",
    "ignore": "Ignore missing records + Laplace (DP)",
    "global": ":red[**Impute + 'global' Laplace — NOT DP** (comparator)]",
}
IMPUTE_RULES = {"copy": "copy the nearest donor (k = 1)", "mean": "mean of the k donors",
                "majority": "most common value of the k donors"}



# --------------------------------------------------------------------------- cached dpcore calls


@st.cache_data(show_spinner=False, max_entries=4)
def load_sd2011(path: str) -> pd.DataFrame:
    from dpcore.data.io import read_table

    return read_table(path)


@st.cache_data(show_spinner=False, max_entries=16)
def cached_impute(path: str, target: str, match: tuple, k: int, rule: str, levels_json: str):
    """k-NN imputation and L_1(D) (releases nothing); keyed on every input."""
    from dpcore.survey import knn_impute

    df = load_sd2011(path)
    ordinal = [c for c in match if c in ORDINAL and c in json.loads(levels_json)]
    return knn_impute(df, target, list(match), k=k, method=rule, ordinal=ordinal, levels=json.loads(levels_json))


def parts_of(query: str, method: str, public_size: bool) -> int:
    """How many equal shares of ε the smooth release splits into (size, centre, value)."""
    if method != "smooth" or query == "count":
        return 1
    return 1 + (not public_size) + (query == "variance")


def release_once(imp, query: str, method: str, eps: float, rng, *, bounds, where, threshold, public_size: bool):
    """One dpcore.survey release (spends ε). Returns the release object."""
    from dpcore.survey import imputation as I

    target_where = None
    if query == "count":
        def target_where(values, _t=threshold):
            return (pd.to_numeric(values, errors="coerce") < _t).to_numpy()

        fn = {"smooth": I.release_count, "ignore": I.release_count_ignoring_missing,
              "global": I.release_count_global}[method]
        return fn(imp, eps, rng, where=where, target_where=target_where)
    if query == "mean":
        if method == "smooth":
            size = float(where.sum()) if public_size else None
            return I.release_mean(imp, eps, rng, bounds=bounds, where=where, size=size)
        if method == "ignore":
            size = float((where & ~imp.incomplete).sum()) if public_size else None
            return I.release_mean_ignoring_missing(imp, eps, rng, bounds=bounds, where=where, size=size)
        size = float(where.sum()) if public_size else None
        return I.release_mean_global(imp, eps, rng, bounds=bounds, where=where, size=size)
    if method != "smooth":
        raise dpcore.OptionError("a variance is only released with the smooth-sensitivity method (Cor 6.4.9); "
                                 "choose it, or ask for a count or a mean")
    size = float(where.sum()) if public_size else None
    return I.release_variance(imp, eps, rng, bounds=bounds, where=where, size=size)


def exact_on(values: pd.Series, mask: np.ndarray, query: str, bounds, threshold) -> float:
    """The non-private value of the query on imputed values (curator only)."""
    if query == "count":
        return float((mask & (pd.to_numeric(values, errors="coerce") < threshold).to_numpy()).sum())
    y = np.clip(pd.to_numeric(values, errors="coerce").to_numpy(float), *bounds)[mask]
    if query == "mean":
        return float(y.mean()) if len(y) else float("nan")
    return float(y.var(ddof=1)) if len(y) > 1 else float("nan")


@st.cache_data(show_spinner=False, max_entries=8)
def cached_context(path: str, target: str, match: tuple, k: int, rule: str, levels_json: str, query: str,
                   method: str, bounds: tuple, ages: tuple, threshold: float, public_size: bool, eps_grid: tuple,
                   reps: int, rate: float, seed: int) -> pd.DataFrame:
    """Simulation of ch. 4: SD2011 as the population, R SRS samples at ``rate``; per sample the
    non-private estimate and one DP release per ε (no ε spent on anything published)."""
    from dpcore.survey import context as C
    from dpcore.survey import knn_impute

    pop = load_sd2011(path)
    levels = json.loads(levels_json)
    ordinal = [c for c in match if c in ORDINAL and c in levels]
    scale = 1.0 / rate if query == "count" else 1.0  # a sample count → population count (design weight)

    def where(df):
        return df["age"].between(*ages).to_numpy()

    def impute(df):
        return knn_impute(df.drop(columns=[C.WEIGHT], errors="ignore"), target, list(match), k=k, method=rule,
                          ordinal=ordinal, levels=levels)

    def estimator(sample):
        imp = impute(sample)
        return scale * exact_on(imp.values, where(sample.reset_index(drop=True)), query, bounds, threshold)

    def release(sample, eps, rng):
        imp = impute(sample)
        rel = release_once(imp, query, method, eps, rng, bounds=bounds, where=where(sample.reset_index(drop=True)),
                           threshold=threshold, public_size=public_size)
        return scale * float(rel.value)

    full = cached_impute(path, target, match, k, rule, levels_json)
    truth = exact_on(full.values, where(pop), query, bounds, threshold)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # infinite variance: the page warns about it
        return C.noise_in_context(pop, C.Design(rate), None, list(eps_grid), reps, np.random.default_rng(seed),
                                  release=release, estimator=estimator, truth=truth)


# --------------------------------------------------------------------------- post-stratification

PS_TOTALS = ui.ASSETS / "cps_poststrat_totals.csv"
#: Base age levels of the CPS demo (fixed public edges; candidate sets of bins merge them).
PS_AGE_LEVELS = CPS_POSTSTRAT_AGE_LEVELS
#: Candidate sets of bins per column (public definitions, Merrill Example 7.5.5). A column not
#: listed keeps every base level as its own bin.
PS_CANDIDATES = {
    "agegr": {
        "8 groups (base levels)": {x: x for x in PS_AGE_LEVELS},
        "10-year groups": dict(zip(PS_AGE_LEVELS, ["18-24", "25-34", "25-34", "35-44", "45-54", "55-64", "65+",
                                                   "65+"])),
        "4 life stages": dict(zip(PS_AGE_LEVELS, ["18-29", "18-29", "30-44", "30-44", "45-64", "45-64", "65+",
                                                  "65+"])),
        "2 halves": dict(zip(PS_AGE_LEVELS, ["18-44"] * 4 + ["45+"] * 4)),
    },
    "race": {
        "3 groups (base levels)": {"WHITE": "WHITE", "BLACK": "BLACK", "OTHER": "OTHER"},
        "white / not white": {"WHITE": "WHITE", "BLACK": "NOT WHITE", "OTHER": "NOT WHITE"},
    },
}
PS_COLUMNS = {"agegr": "age group", "sex": "sex", "race": "race", "hispanic": "Hispanic origin",
              "year": "election year"}
PS_OUTCOMES = {"YES": "voted (turnout = YES)", "NO": "did not vote (turnout = NO)",
               "ALL": "everyone (estimated population)"}


@st.cache_data(show_spinner=False, max_entries=2)
def load_cps_poststrat(path: str) -> tuple[pd.DataFrame, dict]:
    """The CPS demo sample for post-stratification and its row counts (dpcore.data.datasets.cps_poststrat_sample)."""
    from dpcore.data.datasets import cps_poststrat_sample
    from dpcore.data.io import read_table

    return cps_poststrat_sample(read_table(path))


def parse_totals(t: pd.DataFrame) -> dict:
    """{column: {level: total}} from a column,level,total table (as ``poststrat-release --totals``)."""
    from dpcore.survey.totals import known_totals

    return known_totals(t)


@st.cache_data(show_spinner=False, max_entries=4)
def read_totals_file(path: str) -> pd.DataFrame:
    return pd.read_csv(path, dtype={"column": str, "level": str})


@st.cache_data(show_spinner=False, max_entries=4)
def read_upload_cached(data: bytes, name: str) -> pd.DataFrame:
    return ui.read_upload(data, name)


def poststrat_release(data: pd.DataFrame, cols: list, totals: dict, cands: dict, mask: np.ndarray, *,
                      eps_select, eps_table, eps_count: float, gamma: float, weights: str, weight_range):
    """One dpcore.survey.poststrat release (spends ε), set up as ``poststrat-release`` does."""
    from dpcore.survey import poststrat as P

    data, binnings = P.binnings_for(data, cols, totals, cands)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # infinite variance: warned on the page
        return P.poststratify_release(data, binnings, totals, mask, epsilon_select=eps_select,
                                      epsilon_table=eps_table, epsilon_count=eps_count, gamma=gamma,
                                      weights=weights, weight_range=weight_range, rng=np.random.default_rng())


def show_ledger(ledger, key: str | None = None) -> dict:
    """The ledger's charges as a table, with each charge's note; returns the ledger dict."""
    st.subheader("Ledger")
    led = ledger.to_dict()
    rows = ui.ledger_rows(led)
    show = [c for c in ("component", "epsilon", "mechanism", "subset") if c in rows.columns]
    notes = [ch.get("note", "") for ch in led.get("charges", [])]
    st.dataframe(rows[show].assign(note=notes[: len(rows)]), hide_index=True, width="stretch",
                 column_config={"epsilon": st.column_config.NumberColumn("ε", format="%.4g")}, key=key)
    return led
