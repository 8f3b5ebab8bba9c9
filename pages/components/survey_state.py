"""Data handling of the Survey page: loading the demo surveys, cached dpcore.survey calls (the
releases, simulations and ε arithmetic themselves are dpcore.studio.survey).

No widgets here; the page modules (_survey_imputation.py, _survey_poststrat.py) draw them.
"""
from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from dpcore.data.datasets import CPS_POSTSTRAT_AGE_LEVELS
from dpcore.studio.survey import imputation_context, subpopulation_where
from pages.components import charts, state

SD2011 = state.ASSETS / "sd2011.csv"
#: the weighted CPS sample of the post-stratification demo, bundled (provenance: assets/README.md)
CPS_WEIGHTED = state.ASSETS / "cps_vrs_weighted.csv"

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
def cached_impute(_df: pd.DataFrame, df_key: str, target: str, match: tuple, k: int, rule: str, levels_json: str,
                  ordinal: tuple):
    """k-NN imputation and L_1(D) of the table ``df_key`` names (releases nothing); keyed on every input.
    ``levels_json``: the public levels of the matching attributes ("null": inferred, NOT DP)."""
    from dpcore.survey import knn_impute

    return knn_impute(_df, target, list(match), k=k, method=rule, ordinal=list(ordinal),
                      levels=json.loads(levels_json))


@st.cache_data(show_spinner=False, max_entries=8)
def cached_context(_pop: pd.DataFrame, df_key: str, target: str, match: tuple, k: int, rule: str, levels_json: str,
                   ordinal: tuple, query: str, method: str, bounds: tuple, subpop_json: str, threshold: float,
                   public_size: bool, eps_grid: tuple, reps: int, rate: float, seed: int) -> pd.DataFrame:
    """Simulation of ch. 4: the table as the population, R SRS samples at ``rate``; per sample the
    non-private estimate and one DP release per ε (no ε spent on anything published).
    ``subpop_json``: {"ages": [lo, hi]} (the demo) or {"expr": ..., "target": ...}."""
    from dpcore.survey import knn_impute

    levels = json.loads(levels_json)
    sub = json.loads(subpop_json)
    where = subpopulation_where(ages=tuple(sub["ages"]) if "ages" in sub else None, expr=sub.get("expr", ""),
                                target=sub.get("target"))

    def impute(df):
        return knn_impute(df, target, list(match), k=k, method=rule, ordinal=list(ordinal), levels=levels)

    full = cached_impute(_pop, df_key, target, match, k, rule, levels_json, ordinal)
    return imputation_context(_pop, full, impute, where, query=query, method=method, bounds=bounds,
                              threshold=threshold, public_size=public_size, eps_grid=eps_grid, reps=reps, rate=rate,
                              seed=seed)


# --------------------------------------------------------------------------- post-stratification

PS_TOTALS = state.ASSETS / "cps_poststrat_totals.csv"
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


def show_ledger(ledger, key: str | None = None) -> dict:
    """The ledger's charges as a table, with each charge's note; returns the ledger dict."""
    st.subheader("Ledger")
    led = ledger.to_dict()
    rows = charts.ledger_rows(led)
    show = [c for c in ("component", "epsilon", "rho", "mechanism", "subset") if c in rows.columns]
    notes = [ch.get("note", "") for ch in led.get("charges", [])]
    st.dataframe(rows[show].assign(note=notes[: len(rows)]), hide_index=True, width="stretch",
                 column_config={"epsilon": st.column_config.NumberColumn("ε", format="%.4g"),
                                "rho": st.column_config.NumberColumn("ρ", format="scientific")}, key=key)
    return led
