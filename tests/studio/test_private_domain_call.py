"""The app's numeric-column rules below the pages: the release call for the private paths
(dpcore.studio.design.release_domain_call), the NOT DP reason in the app's words, codebook bounds
read from typed text (dpcore.data.editing.parse_codebook_bounds) and the curator-only bin
occupancy (dpcore.metrics.numeric.bin_occupancy)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.data.editing import parse_codebook_bounds, placeholder_attribute, replace_attribute
from dpcore.errors import DomainError
from dpcore.measure.dp_domain import DEFAULT_DOMAIN_SHARE
from dpcore.metrics.numeric import bin_occupancy
from dpcore.studio import design


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    return pd.DataFrame({"age": rng.integers(18, 90, 300), "wage": rng.gamma(2.0, 3.0, 300),
                         "sex": rng.choice(["F", "M"], 300)})


def test_the_release_call_for_each_private_path(table):
    dom = dpcore.infer_domain(table, numeric={"age": {"bounds": [0, 120], "bins": 6}})
    quantiles = replace_attribute(dom, placeholder_attribute(dom["age"], 0, 120, 4, False))
    cfg = design.new_design()
    assert cfg["dp_domain"] is False and cfg["domain_bins"] == "privtree"
    assert cfg["domain_share"] == DEFAULT_DOMAIN_SHARE
    # nothing private: the declared domain and no extra option
    assert design.release_domain_call(cfg, dom, {}, None) == (dom, {})
    # a column found privately: its number of bins only, no bounds from the app
    got = design.release_domain_call(cfg, dom, {"wage": {"bins": 7}}, 0.2)
    assert got == (dom, {"dp_bins": {"wage": {"bins": 7}}, "bins_share": 0.2})
    # DP quantile edges only while the domain holds their placeholder over the same bounds
    spec = {"bins": 4, "lower": 0.0, "upper": 120.0}
    # an entry without a method is the app's DP quantile edges from before it offered PrivTree: named so
    assert design.release_domain_call(cfg, quantiles, {"age": spec}, None)[1] == {
        "dp_bins": {"age": {**spec, "method": "quantiles"}}, "bins_share": 0.1}
    privtree = {**spec, "method": "privtree"}
    assert design.release_domain_call(cfg, quantiles, {"age": privtree}, None)[1]["dp_bins"] == {"age": privtree}
    assert design.release_domain_call(cfg, quantiles, {"age": {**spec, "upper": 100.0}}, None) == (quantiles, {})
    # a dropped column is not asked for
    assert design.release_domain_call(cfg, dom.project(["age", "sex"]), {"wage": {"bins": 7}}, None)[1] == {}
    # the whole domain: under (ε, δ) only
    cfg["dp_domain"] = True
    assert design.release_domain_call(cfg, dom, {"wage": {"bins": 7}}, None)[0] is dom
    cfg["definition"] = "zcdp"
    assert design.release_domain_call(cfg, dom, {"wage": {"bins": 7}}, None) == (
        "dp", {"domain_share": DEFAULT_DOMAIN_SHARE, "domain_bins": "privtree"})
    # the binning of its numeric columns: the design's choice; a design saved before it had one gets the default
    cfg["domain_bins"] = "quantiles"
    assert design.release_domain_call(cfg, dom, {}, None)[1]["domain_bins"] == "quantiles"
    del cfg["domain_bins"]
    assert design.release_domain_call(cfg, dom, {}, None)[1]["domain_bins"] == "privtree"
    assert design.migrate({"dp_domain": True})["domain_bins"] == "privtree"
    assert design.private_numeric({"age": spec, "wage": {"bins": 7}}) == {"wage": {"bins": 7}}


def test_the_not_dp_reason_in_the_apps_words(table):
    rel = dpcore.synthesize(table, "flat_laplace", 1.0, seed=1)
    assert not rel.dp and "--numeric COL=lower:upper:bins" in rel.dp_reason
    shown = design.app_dp_reason(rel.dp_reason)
    assert "--" not in shown and "“codebook bounds”" in shown and "“find privately”" in shown
    assert shown.startswith("NOT differentially private: the bin edges of 'age', 'wage'")
    assert design.app_dp_reason("differentially private with ε = 1") == "differentially private with ε = 1"


@pytest.mark.parametrize("lower,upper,bins,message", [
    ("x", "1", 5, "column 'a': the lower bound must be a number; got 'x'"),
    ("0", "", 5, r"column 'a': type the upper bound from the codebook \(a number\)"),
    (None, "1", 5, r"column 'a': type the lower bound from the codebook \(a number\)"),
    ("2", "1", 5, r"column 'a': the lower bound \(2\) must be below the upper bound \(1\)"),
    ("nan", "1", 5, "column 'a': the lower bound must be a finite number; got 'nan'"),
    ("0", "1", 0, "column 'a': bins must be a whole number of at least 1; got 0"),
    ("0", "1", 2.5, "column 'a': bins must be a whole number of at least 1; got 2.5"),
])
def test_bad_codebook_bounds_are_one_line(lower, upper, bins, message):
    with pytest.raises(DomainError, match=message):
        parse_codebook_bounds("a", lower, upper, bins)


def test_codebook_bounds_from_text_and_numbers():
    assert parse_codebook_bounds("a", " -5 ", "1e3", 4) == {"bounds": [-5.0, 1000.0], "bins": 4}
    assert parse_codebook_bounds("a", 0, 120.0, 12.0) == {"bounds": [0.0, 120.0], "bins": 12}


def test_bin_occupancy_counts_the_fullest_bin_and_the_clamped_records():
    values = pd.Series([-3, 0, 1, 2, 2.5, 9.99, 10, 11, 40, np.nan])
    occ = bin_occupancy(values, [0, 5, 10])
    # clamped: -3 into [0, 5); 11 and 40 into [5, 10]; 10 is the last edge (inside)
    assert occ["counts"] == [5, 4] and occ["n"] == 9
    assert occ["below"] == 1 and occ["above"] == 2
    assert occ["top_share"] == pytest.approx(5 / 9) and occ["top_bin"] == (0.0, 5.0)
    assert bin_occupancy(pd.Series([np.nan]), [0, 1])["top_share"] == 0.0
