"""The DP statement says what it is given: the declared domain, the declared domain with bin edges found
privately in the release, or (domain="dp") only the column names and types."""
import numpy as np
import pandas as pd
import pytest

import dpcore


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(0)
    return pd.DataFrame({"age": rng.integers(18, 90, 400), "sex": rng.choice(["F", "M"], 400)})


def test_a_declared_domain_is_what_the_statement_is_given(table):
    dom = dpcore.infer_domain(table, numeric={"age": [0, 50, 100]}).declared()
    rel = dpcore.synthesize(table, "mst", 1.0, seed=1, domain=dom)
    assert rel.dp and "given the declared public domain; the record count" in rel.manifest()["dp_reason"]


def test_bin_edges_found_in_the_release_are_named_in_the_statement(table):
    dom = dpcore.infer_domain(table, numeric={"age": [0, 50, 100]}).declared()
    rel = dpcore.synthesize(table, "mst", 1.0, seed=1, domain=dom, dp_bins={"age": {"lower": 0, "upper": 100}})
    assert "given the declared public domain (the bin edges of age found privately inside this release)" \
        in rel.manifest()["dp_reason"]


def test_a_domain_found_privately_is_not_called_declared(table):
    rel = dpcore.synthesize(table, "aim", 1.0, seed=1, domain="dp", delta=1e-9)
    reason = rel.manifest()["dp_reason"]
    assert rel.dp and "declared" not in reason
    assert "given only the public column names and types (the domain was found privately" in reason


def test_the_report_says_what_the_guarantee_is_given(table):
    from dpcore.studio.report import plain_statement
    found = dpcore.synthesize(table, "aim", 1.0, seed=1, domain="dp", delta=1e-9).manifest()
    assert any(p.startswith("The guarantee is given only the public column names and types") for p in
               plain_statement(found))
    dom = dpcore.infer_domain(table, numeric={"age": [0, 50, 100]}).declared()
    declared = dpcore.synthesize(table, "mst", 1.0, seed=1, domain=dom).manifest()
    assert any(p.startswith("The guarantee is given the public facts listed below (the declared domain") for p in
               plain_statement(declared))
