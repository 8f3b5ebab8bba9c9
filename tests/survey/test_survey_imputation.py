"""DP releases from k-NN-imputed data (Merrill 2021 §6.4) and the two baselines."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpcore.errors import OptionError
from dpcore.survey import imputation as I
from dpcore.survey._smooth import LN2
from dpcore.survey.knn import knn_impute


@pytest.fixture(scope="module")
def imp():
    rng = np.random.default_rng(5)
    n = 400
    g = rng.choice(["a", "b", "c"], n)
    age = rng.integers(0, 6, n)
    y = np.round(100 + 50 * age + rng.normal(0, 20, n))
    y[rng.random(n) < 0.2] = np.nan
    df = pd.DataFrame({"g": g, "age": age, "y": y})
    return knn_impute(df, "y", ["g", "age"], ordinal=["age"], levels={"g": ["a", "b", "c"], "age": list(range(6))})


def test_count_release_cor_6_4_3(imp):
    eps = 6 * LN2
    rel = I.release_count(imp, eps, np.random.default_rng(0), target_where=lambda v: v < 200)
    assert rel.gamma == pytest.approx(4.0)  # γ = 1 + ε/(2 ln 2)
    assert rel.smooth_sensitivity == 1 + imp.L1
    assert rel.scale == pytest.approx((1 + imp.L1) / LN2)
    assert rel.finite_variance and rel.noise_sd == pytest.approx(rel.scale)
    assert rel.exact == float((imp.values < 200).sum())
    assert rel.ledger.epsilon == pytest.approx(eps, abs=1e-12)
    c = next(iter(rel.ledger.charges()))[1]
    # data-dependent sensitivity: not recorded
    assert c.mechanism.startswith("generalized_cauchy") and "not hardened" in c.mechanism and math.isnan(c.sensitivity)


def test_mean_release_cases_and_remark_6_4_7(imp):
    a, b = 0.0, 500.0
    m = np.arange(len(imp.values)) % 2 == 0
    s = float(m.sum())
    r1 = I.release_mean(imp, 6 * LN2, np.random.default_rng(1), bounds=(a, b), where=m, size=s)
    assert r1.smooth_sensitivity == pytest.approx((b + imp.L1 * (b - a)) / s)  # case 1
    assert r1.exact == pytest.approx(np.clip(imp.values[m], a, b).mean())
    r2 = I.release_mean(imp, 6 * LN2, np.random.default_rng(1), bounds=(a, b), where=m, size=s,
                        target_where=lambda v: v > 150)
    assert r2.smooth_sensitivity == pytest.approx(b * (1 + imp.L1) / s)  # case 2
    r3 = I.release_mean(imp, 10 * LN2, np.random.default_rng(2), bounds=(a, b), where=m)  # unknown size
    assert r3.ledger.epsilon == pytest.approx(10 * LN2, abs=1e-12)
    labels = [c.label for _, c in r3.ledger.charges()]
    assert labels == ["subpopulation size", "mean"]
    assert [c.epsilon for _, c in r3.ledger.charges()] == pytest.approx([5 * LN2, 5 * LN2])
    with pytest.raises(OptionError, match="2 ln 2"):
        I.release_mean(imp, 2.0, np.random.default_rng(0), bounds=(a, b))  # ε/2 = 1 < 2 ln 2


def test_variance_release_cor_6_4_9(imp):
    a, b = 0.0, 500.0
    r = I.release_variance(imp, 6 * LN2, np.random.default_rng(3), bounds=(a, b), size=400.0, center=250.0)
    assert r.smooth_sensitivity == pytest.approx(250.0 ** 2 * (1 + imp.L1) / 399.0)
    r2 = I.release_variance(imp, 15 * LN2, np.random.default_rng(3), bounds=(a, b))
    assert r2.ledger.epsilon == pytest.approx(15 * LN2, abs=1e-12)
    assert len(list(r2.ledger.charges())) == 3


def test_baselines(imp):
    rng = np.random.default_rng(4)
    ig = I.release_mean_ignoring_missing(imp, 1.0, rng, bounds=(0, 500), size=float((~imp.incomplete).sum()))
    assert ig.dp and ig.sensitivity == pytest.approx(500 / (~imp.incomplete).sum())
    gl = I.release_mean_global(imp, 1.0, rng, bounds=(0, 500), size=400.0)
    assert not gl.dp and gl.sensitivity == pytest.approx((500 + imp.n_donees * 500) / 400)
    assert "NOT DP" in gl.note
    cnt = I.release_count_ignoring_missing(imp, 1.0, rng)
    assert cnt.exact == float((~imp.incomplete).sum())
    for r in (ig, gl, cnt):
        assert r.ledger.epsilon == pytest.approx(1.0, abs=1e-12)


def test_smooth_release_is_unbiased_on_average(imp):
    rng = np.random.default_rng(9)
    vals = [I.release_mean(imp, 10.0, rng, bounds=(0, 500), size=400.0).value for _ in range(400)]
    exact = float(np.clip(imp.values, 0, 500).sum() / 400)
    assert abs(np.median(vals) - exact) < 5
