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


@pytest.mark.parametrize("zeros, needle", [([{"a": "x", "b": "zz"}], "'zz' is not a level of 'b'"),
                                           ([("x",)], "each of the 2")])
def test_bad_structural_zeros(df, zeros, needle):
    with pytest.raises(DPCoreError, match=needle):
        dpcore.synthesize(df, method="flat_laplace", seed=1, structural_zeros=zeros)


# ---------------------------------------------------------------- [privacy-audit] silent coercions


@pytest.mark.parametrize("bad", [True, False, "1", None, [1]])
def test_epsilon_must_be_a_real_number_not_a_bool(df, bad):
    with pytest.raises(dpcore.OptionError, match="epsilon"):
        dpcore.synthesize(df, epsilon=bad, seed=1)


@pytest.mark.parametrize("ok", [2, 2.0, np.int64(2), np.int32(2), np.float64(2.0)])
def test_sets_accepts_every_integer_type(df, ok):
    assert len(dpcore.synthesize(df, epsilon=1, sets=ok, seed=1).sets) == 2


@pytest.mark.parametrize("bad", [2.5, True, "2", 0, -1, float("nan"), float("inf"), 1_000_000])
def test_sets_rejects_non_integers_and_unbounded_work(df, bad):
    with pytest.raises(dpcore.OptionError, match="sets"):
        dpcore.synthesize(df, epsilon=1, sets=bad, seed=1)


@pytest.mark.parametrize("bad", [1.5, True, "7", -3])
def test_seed_must_be_a_whole_number(df, bad):
    with pytest.raises(dpcore.OptionError, match="seed"):
        dpcore.synthesize(df, epsilon=1, seed=bad)


def test_manifest_is_strict_json(df):
    import json

    rel = dpcore.synthesize(df, epsilon=1, seed=1, sets=2)
    text = rel.manifest_json()
    json.loads(text)  # parses
    assert "Infinity" not in text and "NaN" not in text


def test_non_finite_numbers_become_strings_in_the_manifest(df):
    import json

    rel = dpcore.synthesize(df, epsilon=1, seed=1)
    rel.diagnostics["probe"] = [float("inf"), np.float64("nan"), -np.inf, 1.5]
    back = json.loads(rel.manifest_json())
    assert back["diagnostics"]["probe"] == ["inf", "nan", "-inf", 1.5]


def test_two_thousand_binary_columns_give_a_clear_error_not_an_overflow():
    """[privacy-audit]: 2,000 binary columns ended in OverflowError in the size estimate."""
    wide = pd.DataFrame(np.random.default_rng(0).integers(0, 2, (20, 999)).astype(str),
                        columns=[f"c{i}" for i in range(999)])
    dom = dpcore.infer_domain(wide).declared()
    for method in ("steps", "flat_laplace", "ipf"):
        with pytest.raises(dpcore.ResourceError, match=r"about 10\^"):
            dpcore.synthesize(wide, method, 1.0, seed=1, domain=dom)
    wider = pd.DataFrame(np.zeros((5, 2000), dtype=int), columns=[f"c{i}" for i in range(2000)])
    with pytest.raises(dpcore.InputError, match="at most 1000 attributes"):
        dpcore.synthesize(wider, "steps", 1.0, seed=1)
    from dpcore.metrics.evaluate import evaluate

    with pytest.raises(dpcore.InputError, match="at most 1000 attributes"):
        evaluate(pd.DataFrame(np.zeros((5, 5000), dtype=int)), [pd.DataFrame(np.zeros((5, 5000), dtype=int))])
