"""Tests for dpcore.metrics SPECKS, L1, chi-square consistency (D2), regression CI overlap
and evaluate().  Fixed seeds; tolerances stated at each assertion."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpcore.metrics import (
    chisq_consistency,
    evaluate,
    l1_distance,
    regression_overlap,
    specks,
)
from dpcore.metrics import tables as tables_mod
from dpcore.metrics.analysis import d2_combine
from dpcore.metrics.regression import ci_overlap, combine_estimates


def _make(n: int, seed: int) -> pd.DataFrame:
    """Four categorical columns with dependence (a–b and c–d)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = (a + (rng.random(n) < 0.3) * rng.integers(1, 3, n)) % 3
    c = rng.integers(0, 4, n)
    d = np.where(rng.random(n) < 0.8, c % 2, 1 - c % 2)
    return pd.DataFrame({"a": a.astype(str), "b": np.array(["x", "y", "z"])[b], "c": c,
                         "d": np.array(["no", "yes"])[d]})


# =========================================================================== SPECKS


@pytest.mark.parametrize("model", ["main", "interactions", "cart"])
def test_specks_near_zero_for_a_resample(model):
    orig = _make(3000, 1)
    syn = orig.sample(3000, replace=True, random_state=2).reset_index(drop=True)
    res = specks(orig, syn, model=model)
    assert res.ks < 0.1  # resample of the same records: propensities indistinguishable
    assert res.pmse < 0.005
    assert len(res.per_set) == 1 and res.per_set[0]["set"] == 1


def test_specks_near_zero_for_an_independent_draw_from_the_same_distribution():
    res = specks(_make(3000, 1), [_make(3000, 2), _make(3000, 3)], model="interactions")
    assert res.ks < 0.1
    assert len(res.per_set) == 2
    assert res.ks == pytest.approx(np.mean([d["ks"] for d in res.per_set]), abs=1e-15)
    assert res.pmse == pytest.approx(np.mean([d["pmse"] for d in res.per_set]), abs=1e-15)


@pytest.mark.parametrize("model", ["main", "interactions", "cart"])
def test_specks_near_one_when_a_column_is_relabelled_to_disjoint_levels(model):
    orig = _make(3000, 1)
    syn = orig.copy()
    syn["b"] = syn["b"].map({"x": "p", "y": "q", "z": "r"})  # no level in common with orig
    res = specks(orig, syn, model=model)
    assert res.ks > 0.9  # a main effect separates the groups perfectly
    assert res.pmse > 0.24  # c = 1/2 and e ≈ 0 or 1 ⇒ (e − c)² ≈ 1/4


def test_specks_interactions_catch_a_broken_association_that_main_effects_miss():
    rng = np.random.default_rng(5)
    n = 3000
    a = rng.integers(0, 2, n)
    orig = pd.DataFrame({"A": a, "B": a})  # A = B always
    a2 = rng.integers(0, 2, n)
    syn = pd.DataFrame({"A": a2, "B": 1 - a2})  # A ≠ B always; same margins
    main = specks(orig, syn, model="main")
    inter = specks(orig, syn, model="interactions")
    # The margins agree, so main effects barely move the propensities off c = 1/2
    # (pMSE tiny).  KS only ranks the e's, and the two groups sit in different cells,
    # so main.ks itself need not be small: that is why pMSE is checked here.
    assert main.pmse < 1e-3
    assert inter.ks > 0.9 and inter.pmse > 0.24  # the A×B term separates perfectly
    # (A greedy CART cannot see this pure XOR: no single split reduces impurity.)


def test_specks_rejects_unknown_model_and_empty_sets():
    from dpcore.errors import InputError, OptionError

    with pytest.raises(OptionError, match="model"):
        specks(_make(50, 1), _make(50, 2), model="forest")
    with pytest.raises(InputError, match="no rows"):
        specks(_make(50, 1), [_make(50, 2), _make(50, 2).iloc[:0]])


# =========================================================================== L1


def test_l1_zero_for_identical_and_two_for_disjoint_supports():
    orig = _make(500, 1)
    assert l1_distance(orig, orig.copy()).l1 == pytest.approx(0.0, abs=1e-12)
    syn = orig.copy()
    syn["d"] = "maybe"  # every synthetic record lies in a cell the original never uses
    res = l1_distance(orig, [syn, orig.sample(frac=1.0, random_state=1)])
    assert res.per_set[0]["l1"] == pytest.approx(2.0, abs=1e-12)
    assert res.per_set[1]["l1"] == pytest.approx(0.0, abs=1e-12)
    assert res.l1 == pytest.approx(1.0, abs=1e-12)
    assert res.scale == "proportions"


def test_l1_hand_case_in_proportions():
    orig = pd.DataFrame({"v": ["a", "a", "b", "b"]})
    syn = pd.DataFrame({"v": ["a", "b", "c", "c", "c", "c", "a", "b"]})  # a 2/8, b 2/8, c 4/8
    # |2/4 − 2/8| + |2/4 − 2/8| + |0 − 4/8| = 1/4 + 1/4 + 1/2 = 1
    res = l1_distance(orig, syn)
    assert res.l1 == pytest.approx(1.0, abs=1e-12)
    assert res.per_set[0]["l1_counts"] == 0 + 0 + 4  # |2−2| + |2−2| + |0−4|


def test_l1_on_a_table_too_large_to_allocate_uses_observed_cells(monkeypatch):
    rng = np.random.default_rng(0)
    # 10 columns × 12 levels = 6.2e10 cells, far above the dense limit
    orig = pd.DataFrame({f"c{j}": rng.integers(0, 12, 400) for j in range(10)})
    syn = orig.copy()
    syn.iloc[:100] = rng.integers(0, 12, (100, 10))
    calls = []
    real = np.bincount

    def spy(x, weights=None, minlength=0):
        calls.append(minlength)
        return real(x, weights=weights, minlength=minlength)

    monkeypatch.setattr(np, "bincount", spy)
    res = l1_distance(orig, syn)
    monkeypatch.undo()
    assert max(calls) <= len(orig) + len(syn)  # never a count array of the full table's size
    # reference by hand: value counts of whole rows
    key = lambda df: df.astype(str).agg("|".join, axis=1)
    po = key(orig).value_counts(normalize=True)
    ps = key(syn).value_counts(normalize=True)
    want = po.sub(ps, fill_value=0).abs().sum()
    assert res.l1 == pytest.approx(want, abs=1e-12)
    assert tables_mod._DENSE_LIMIT < 12**10


# =========================================================================== chi-square / D2


def test_d2_rule_matches_a_worked_example():
    # m = 3 statistics on ν = 2 df, worked out by hand:
    #   √X² = 2, 3, 4; mean 3; Σ(√X² − 3)² = 1 + 0 + 1 = 2
    #   r  = (1 + 1/3)·2/(3 − 1) = 4/3
    #   D  = (mean X²/ν − (m+1)/(m−1)·r)/(1 + r) = ((29/3)/2 − 2·4/3)/(7/3) = (13/6)/(7/3) = 13/14
    #   ν₂ = ν^(−3/m)(m − 1)(1 + 1/r)² = 2^(−1)·2·(7/4)² = 49/16
    res = d2_combine([4.0, 9.0, 16.0], 2)
    assert res["r"] == pytest.approx(4 / 3, rel=1e-12)
    assert res["D"] == pytest.approx(13 / 14, rel=1e-12)
    assert res["nu2"] == pytest.approx(49 / 16, rel=1e-12)
    assert res["p"] == pytest.approx(stats.f.sf(13 / 14, 2, 49 / 16), rel=1e-12)
    assert 0.4 < res["p"] < 0.6  # F(2, 3.06) at 0.93: a moderate p-value (≈ 0.49)


def test_d2_rule_single_set_and_equal_statistics():
    one = d2_combine([7.5], 3)
    assert one["p"] == pytest.approx(stats.chi2.sf(7.5, 3), rel=1e-12)
    same = d2_combine([6.0, 6.0, 6.0], 2)  # r = 0 ⇒ ν₂ = ∞ ⇒ χ²_ν reference for D·ν
    assert same["r"] == 0.0 and math.isinf(same["nu2"])
    assert same["p"] == pytest.approx(stats.chi2.sf(6.0, 2), rel=1e-12)
    neg = d2_combine([0.0, 1.0, 100.0], 1)  # large r drives D below 0 ⇒ p = 1
    assert neg["D"] < 0 and neg["p"] == 1.0


def _cells(counts: dict, cols=("A", "B", "C")) -> pd.DataFrame:
    rec = [k for k, v in counts.items() for _ in range(v)]
    return pd.DataFrame(rec, columns=list(cols))


def _with_c(ab: dict) -> dict:
    """Split every (A, B) cell evenly over C ∈ {u, v}: C exactly independent of A and B."""
    return {(a, b, c): n // 2 for (a, b), n in ab.items() for c in ("u", "v")}


def test_chisq_consistency_confusion_agreement_and_combined_p():
    orig = _cells(_with_c({(0, 0): 40, (0, 1): 10, (1, 0): 10, (1, 1): 40}))  # A–B dependent
    indep = _cells(_with_c({(0, 0): 26, (0, 1): 26, (1, 0): 26, (1, 1): 26}))  # exactly independent
    res = chisq_consistency(orig, [indep, indep.sample(frac=1.0, random_state=1)])
    t = res.table.set_index(["var1", "var2"])
    ab = t.loc[("A", "B")]
    want = stats.chi2_contingency(np.array([[40, 10], [10, 40]])).statistic  # Yates, as R chisq.test
    assert ab["stat_orig"] == pytest.approx(want, rel=1e-12)
    assert ab["p_orig"] < 1e-6
    assert ab["p_syn"] == pytest.approx(1.0, abs=1e-12)  # X² = 0 in both sets
    # C is exactly independent of A and of B everywhere: X² = 0, p = 1
    assert t.loc[("A", "C"), "p_orig"] == pytest.approx(1.0) and t.loc[("B", "C"), "p_syn"] == pytest.approx(1.0)
    for alpha in (0.01, 0.05, 0.10):
        assert res.agreement[alpha] == pytest.approx(2 / 3, abs=1e-12)
        cm = res.confusion[alpha]
        assert cm.loc[True, False] == 1 and cm.loc[False, False] == 2
        assert cm.loc[True, True] == 0 and cm.loc[False, True] == 0
    assert res.n_tested == 3 and res.n_skipped == 0


def test_chisq_consistency_combines_with_d2_and_skips_degenerate_pairs():
    orig = _make(600, 1)
    orig["k"] = "const"  # one level: no test for any pair with k
    syns = [_make(600, s) for s in (2, 3, 4)]
    for s in syns:
        s["k"] = "const"
    res = chisq_consistency(orig, syns, alphas=(0.05,))
    assert res.n_skipped == 4 and res.n_tested == 6
    assert res.table.loc[res.table["var2"] == "k", "note"].str.contains("degenerate").all()
    row = res.table[(res.table["var1"] == "a") & (res.table["var2"] == "b")].iloc[0]
    xs = [stats.chi2_contingency(pd.crosstab(s["a"], s["b"]).to_numpy()).statistic for s in syns]
    want = d2_combine(xs, 4)
    assert row["p_syn"] == pytest.approx(want["p"], rel=1e-10)
    assert row["D_syn"] == pytest.approx(want["D"], rel=1e-10)
    assert row["m_used"] == 3


# =========================================================================== regression


def test_combine_estimates_with_known_between_and_within_variance():
    betas = [1.0, 1.2, 0.8, 1.4]
    ses = [0.1, 0.2, 0.2, 0.1]
    # β̄ = 1.1; B = (0.01 + 0.01 + 0.09 + 0.09)/3 = 0.2/3; W = (0.01 + 0.04 + 0.04 + 0.01)/4 = 0.025
    # T = B/4 + W = 0.05/3 + 0.025 = 0.041666…; ν = 3·(1 + 4·0.025/(0.2/3))² = 3·2.5² = 18.75
    res = combine_estimates(betas, ses)
    B, W = 0.2 / 3, 0.025
    T = B / 4 + W
    assert res["beta"] == pytest.approx(1.1, rel=1e-12)
    assert res["B"] == pytest.approx(B, rel=1e-12)
    assert res["W"] == pytest.approx(W, rel=1e-12)
    assert res["se"] == pytest.approx(math.sqrt(T), rel=1e-12)
    assert res["df"] == pytest.approx(18.75, rel=1e-12)
    q = stats.t.ppf(0.975, 18.75)
    assert res["lo"] == pytest.approx(1.1 - q * math.sqrt(T), rel=1e-12)
    assert res["hi"] == pytest.approx(1.1 + q * math.sqrt(T), rel=1e-12)


def test_combine_estimates_b_zero_m_one_and_missing():
    z = stats.norm.ppf(0.975)
    same = combine_estimates([0.5, 0.5, 0.5], [0.2, 0.2, 0.2])  # B = 0 ⇒ ν = ∞, T = W
    assert math.isinf(same["df"]) and same["se"] == pytest.approx(0.2, rel=1e-12)
    assert same["hi"] == pytest.approx(0.5 + z * 0.2, rel=1e-12)
    one = combine_estimates([2.0, np.nan], [0.3, np.nan])  # NaN dropped ⇒ m = 1: normal with W
    assert one["m"] == 1 and math.isinf(one["df"])
    assert one["lo"] == pytest.approx(2.0 - z * 0.3, rel=1e-12)
    none = combine_estimates([np.nan], [np.nan])
    assert none["m"] == 0 and math.isnan(none["beta"])


def test_ci_overlap_identical_disjoint_and_hand_cases():
    assert ci_overlap(0.0, 2.0, 0.0, 2.0) == pytest.approx(1.0, abs=1e-15)
    assert ci_overlap(0.0, 1.0, 2.0, 3.0) == 0.0  # disjoint: negative, clipped at 0
    # o = [0, 2], s = [1, 4]: intersection 1 ⇒ ½(1/2 + 1/3) = 5/12
    assert ci_overlap(0.0, 2.0, 1.0, 4.0) == pytest.approx(5 / 12, rel=1e-12)
    # s inside o: ½(1/4 + 1/1) = 0.625 > 0.5
    assert ci_overlap(0.0, 4.0, 1.0, 2.0) == pytest.approx(0.625, rel=1e-12)
    v = ci_overlap([0, 0], [2, 1], [0, 2], [2, 3])
    np.testing.assert_allclose(v, [1.0, 0.0])


def _logit_data(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    g = rng.choice(["a", "b", "c"], n)
    h = rng.choice(["lo", "hi"], n)
    x = rng.normal(size=n)
    eta = -0.5 + 0.8 * (g == "b") - 0.7 * (g == "c") + 0.6 * (h == "lo") + 0.5 * x
    y = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(int)
    return pd.DataFrame({"y": y, "g": g, "h": h, "x": x})


@pytest.mark.parametrize("family", ["logit", "ols"])
def test_regression_overlap_is_one_when_the_synthetic_set_is_the_original(family):
    orig = _logit_data(2000, 1)
    res = regression_overlap(orig, orig.copy(), outcome="y", family=family)
    assert list(res.table["term"]) == ["Intercept", "g[T.b]", "g[T.c]", "h[T.lo]", "x"]
    np.testing.assert_allclose(res.table["beta_syn"], res.table["beta_orig"], rtol=1e-10)
    # m = 1 uses the normal reference; the original uses z (logit) or t (OLS, n = 2000)
    np.testing.assert_allclose(res.table["overlap"], 1.0, atol=1e-3 if family == "ols" else 1e-10)
    assert res.mean_overlap > 0.999 and res.sign_agreement == 1.0


def test_regression_overlap_combines_m_sets_and_handles_unestimable_terms():
    orig = _logit_data(3000, 1)
    s1, s2, s3 = _logit_data(3000, 2), _logit_data(3000, 3), _logit_data(3000, 4)
    s2 = s2[s2["g"] != "c"].reset_index(drop=True)  # level c absent from set 2
    s3.loc[s3["g"] == "b", "y"] = 1  # separation: outcome constant at g = b in set 3
    s3.loc[:9, "g"] = "d"  # a level the original never has
    res = regression_overlap(orig, [s1, s2, s3], outcome="y")
    t = res.table.set_index("term")
    assert t.loc["g[T.c]", "m_used"] == 2  # sets 1 and 3
    assert t.loc["g[T.b]", "m_used"] == 2  # sets 1 and 2
    assert "set 2" in t.loc["g[T.c]", "note"] and "set 3" in t.loc["g[T.b]", "note"]
    assert any("separation" in n for n in res.notes)
    assert math.isnan(t.loc["g[T.d]", "beta_orig"]) and math.isnan(t.loc["g[T.d]", "overlap"])
    # the combination over the usable sets equals combine_estimates on their fits
    fit = lambda df: regression_overlap(df, df, outcome="y").table.set_index("term")
    f1 = fit(s1)
    f3 = regression_overlap(s3, s3, outcome="y").table.set_index("term")
    want = combine_estimates([f1.loc["g[T.c]", "beta_orig"], f3.loc["g[T.c]", "beta_orig"]],
                             [f1.loc["g[T.c]", "se_orig"], f3.loc["g[T.c]", "se_orig"]])
    assert t.loc["g[T.c]", "beta_syn"] == pytest.approx(want["beta"], rel=1e-6)
    # synthetic sets drawn from the original's model: overlap well above 0 on the shared terms
    assert t.loc["x", "overlap"] > 0.3 and t.loc["h[T.lo]", "overlap"] > 0.3


def test_regression_overlap_never_crashes_on_hopeless_sets():
    orig = _logit_data(500, 1)
    const = _logit_data(200, 2)
    const["y"] = 1  # outcome constant: nothing estimable
    tiny = _logit_data(5, 3)  # 5 rows: separation / aliasing
    good = _logit_data(500, 4)
    res = regression_overlap(orig, [const, tiny, good], outcome="y")
    t = res.table.set_index("term")
    assert (t["m_used"] <= 2).all() and t.loc["x", "m_used"] >= 1
    assert "set 1" in t.loc["Intercept", "note"]
    assert any("outcome constant" in n for n in res.notes)
    alone = regression_overlap(orig, const, outcome="y")
    assert alone.table["beta_syn"].isna().all() and math.isnan(alone.mean_overlap)


def test_regression_overlap_rejects_a_non_binary_logit_outcome():
    from dpcore.errors import OptionError

    df = _logit_data(100, 1)
    with pytest.raises(OptionError, match="binary"):
        regression_overlap(df, df, outcome="g")


# =========================================================================== evaluate


EVAL_KEYS = {"s_pmse_2way_mean", "s_pmse_2way_worst", "p0", "p1", "ru", "ru_pct_of_p1", "specks", "pmse"}


def test_evaluate_returns_json_ready_means_and_per_set():
    orig = _make(400, 1)
    syns = [_make(400, 2), _make(400, 3)]
    out = evaluate(orig, syns)
    assert EVAL_KEYS <= set(out)
    assert len(out["per_set"]) == 2
    for i, p in enumerate(out["per_set"], start=1):
        assert set(p) == EVAL_KEYS | {"set"} and p["set"] == i
    for k in EVAL_KEYS - {"s_pmse_2way_worst"}:
        assert out[k] == pytest.approx(np.mean([p[k] for p in out["per_set"]]), rel=1e-12), k
    assert "NOT differentially private" in out["not_dp"]
    json.loads(json.dumps(out, allow_nan=False))  # valid JSON: no NaN/inf
    sub = evaluate(orig, syns[0], measures=["l1", "ru"])
    assert {"l1", "ru"} <= set(sub) and "specks" not in sub
    assert set(sub["per_set"][0]) == {"set", "l1", "ru"}
