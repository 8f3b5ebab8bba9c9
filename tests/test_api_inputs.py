"""Bad input through the Python API: specific errors, nothing silently dropped."""
import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.errors import DPCoreError


@pytest.fixture()
def df():
    rng = np.random.default_rng(3)
    return pd.DataFrame({"a": rng.choice(["x", "y"], 300), "b": rng.choice(["p", "q", "r"], 300)})


def test_data_column_missing_from_domain_is_refused(df):
    dom = dpcore.infer_domain(df[["a"]]).declared()
    with pytest.raises(DPCoreError, match="'b'.*not in the domain"):
        dpcore.synthesize(df, domain=dom, seed=1, layers=1)


def test_structural_zeros_by_label_are_never_drawn(df):
    dom = dpcore.infer_domain(df).declared()
    rel = dpcore.synthesize(df, method="flat_laplace", epsilon=0.2, seed=2, domain=dom,
                            structural_zeros=[{"a": "x", "b": "p"}, ("y", "r")])
    out = rel.sets[0]
    assert not ((out.a == "x") & (out.b == "p")).any()
    assert not ((out.a == "y") & (out.b == "r")).any()
    assert len(out) == rel.record_count["value"]


@pytest.mark.parametrize("zeros, needle", [([{"a": "x", "b": "zz"}], "'zz' is not a level of 'b'"), ([("x",)], "each of the 2")])
def test_bad_structural_zeros(df, zeros, needle):
    with pytest.raises(DPCoreError, match=needle):
        dpcore.synthesize(df, method="flat_laplace", seed=1, structural_zeros=zeros)
