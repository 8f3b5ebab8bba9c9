"""[private-domain] below the pages (dpcore.studio.private_domain): the forecast in the pages' words, the refusal and
the words that accept it, each column's status from a manifest, and the comparison of a release that found its
domain privately with its source on that domain. A numeric column whose DP bounds are the bin holding zero alone is
"found coarsely" (dpcore.measure.dp_domain.numeric_status), never "found"."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.data.domain import DP_FOUND
from dpcore.data.schema import Schema
from dpcore.errors import DomainError
from dpcore.measure.bounds import MIN_EXPONENT
from dpcore.measure.dp_domain import COARSE, FOUND, NOT_FOUND, fallback_warnings, numeric_status
from dpcore.studio import private_domain as pd_

ZCDP = {"epsilon": 1.0, "definition": "zcdp", "delta": 1e-9, "domain_share": 0.25}


def loans(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "sex": rng.choice(["f", "m"], n),
            "term": rng.choice([6, 12, 24, 36], n),
            "income": rng.lognormal(8, 1, n),
            "smoker": rng.choice([True, False], n),
        }
    )


def test_the_forecast_in_words_and_the_refusal_with_its_accept_box():
    df = loans(600)
    sch = Schema.from_dtypes(df).declared()
    fc = pd_.design_forecast(df, ZCDP, sch)
    rows = pd_.forecast_rows(fc, 600, 0.25, sch).set_index("column")
    assert list(rows.columns) == ["status", "share of the domain's ε", "what it will likely find", "what would help"]
    assert rows.loc["smoker", "status"] == FOUND and rows.loc["smoker", "what would help"] == ""
    assert rows.loc["smoker", "share of the domain's ε"] == "none"
    assert rows.loc["sex", "status"] == NOT_FOUND
    assert "dropping it" in rows.loc["sex", "what would help"]
    assert "declaring its levels" in rows.loc["sex", "what would help"]
    assert pd_.forecast_summary(fc).startswith(
        "Found: "
    ) and "likely not found at this budget: sex" in pd_.forecast_summary(fc)
    why = pd_.refusal(fc)
    assert why.startswith("Refused before anything is spent: the forecast says sex will likely not be found")
    assert "Drop it or declare it" in why
    assert "(every value “other” or missing: sex)" in pd_.accept_label(fc, sch)
    # declared levels: public, nothing to find, nothing refused
    declared = pd_.with_column(sch, "sex", "text", None, True, "f, m").declared()
    fc2 = pd_.design_forecast(df, ZCDP, declared)
    assert {f.column: f.status for f in fc2}["sex"] == FOUND and pd_.refusal(fc2) is None


def test_what_the_forecast_was_made_from_and_when_it_is_not_dp():
    assert pd_.forecast_basis(True, 1000, "the noisy record count of your last release")[1] is False
    text, not_dp = pd_.forecast_basis(True, 1000, None)
    assert not_dp and "the table's own 1,000 records (curator-only: not released)" in text
    text, not_dp = pd_.forecast_basis(False, 1000, "public")
    assert not_dp and "types proposed from the values" in text


def test_a_whole_number_code_not_found_says_missing_not_other():
    df = loans(150)
    sch = pd_.with_column(Schema.from_dtypes(df), "term", "whole", "code", False).declared()
    fc = pd_.design_forecast(df, ZCDP, sch)
    rows = pd_.forecast_rows(fc, 150, 0.25, sch).set_index("column")
    assert (
        rows.loc["term", "status"] == NOT_FOUND
        and "the rest become missing" in rows.loc["term", "what it will likely find"]
    )
    assert "every value missing: term" in pd_.accept_label(fc, sch)


def test_bounds_of_zero_alone_are_found_coarsely_and_said_so():
    zero = {
        "bounds": [0.0, 2.0**MIN_EXPONENT],
        "first_bounds": [0.0, 2.0**MIN_EXPONENT],
        "edges": [0.0, 0.001],
        "fallback": False,
        "withheld": False,
    }
    assert numeric_status(zero) == COARSE
    assert numeric_status({**zero, "bounds": [0.0, 64.0], "first_bounds": [0.0, 64.0]}) == FOUND
    assert numeric_status({**zero, "withheld": True}) == NOT_FOUND
    assert numeric_status({"bounds": [0.0, 1.0], "first_bounds": [0.0, 1.0]}) == FOUND  # a 0/1 whole column
    assert "only zero stood out of the noise" in fallback_warnings({"income": zero})[0]
    manifest = {"diagnostics": {"dp_domain": {"columns": {"income": {**zero, "status": COARSE, "share": 0.1}}}}}
    table = pd_.release_statuses(manifest)
    assert table.loc[0, "what the release found"].startswith("only zero stood out of the noise: bounds [0, 0.000976")
    assert pd_.statuses_summary(manifest) == "Found coarsely: income."


def test_statuses_from_a_release_and_its_comparison_on_the_domain_it_found():
    df = loans(3000)
    sch = Schema.from_dtypes(df).declared()
    rel = dpcore.synthesize(df, "mst", 1.0, delta=1e-9, domain="dp", schema=sch.to_dict(), seed=2)
    manifest = rel.manifest()
    table = pd_.release_statuses(manifest).set_index("column")
    assert set(table.index) == set(df.columns)
    assert (
        table.loc["smoker", "status"] == FOUND
        and table.loc["smoker", "what the release found"] == "2 level(s): False, True"
    )
    # the planned share beside what the ledger charged, in the definition's unit (ρ under (ε, δ))
    cols = manifest["diagnostics"]["dp_domain"]["columns"]
    for name in df.columns:
        assert table.loc[name, "spent (ρ)"] == f"{float(cols[name].get('spent') or 0):.3g}"
    assert "planned share of the domain's budget" in table.columns
    groups = pd_.found_statuses(manifest)
    assert sorted(c for cols in groups.values() for c in cols) == sorted(df.columns)
    dom, source = pd_.compared_on(manifest, None, df.assign(sex=df["sex"].where(df.index > 0, "x")))
    assert dom.source == DP_FOUND and set(source["sex"].dropna()) <= set(dom["sex"].levels)
    dom["income"].encode(source["income"])  # the source encodes on the domain the release found
    assert pd_.compared_on({"domain": {"source": "declared"}}, "dom", df) == ("dom", df)
    with pytest.raises(DomainError, match="lacks the release's column"):
        pd_.compared_on(manifest, None, df.drop(columns=["sex"]))
    assert pd_.release_statuses({"diagnostics": {}}) is None and pd_.statuses_summary({}) is None
