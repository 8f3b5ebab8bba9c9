"""DP noise in context (Merrill 2021 ch. 4): tidy frame and figure."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpcore.errors import OptionError
from dpcore.survey import bins as B
from dpcore.survey import context as C


@pytest.fixture(scope="module")
def pop():
    rng = np.random.default_rng(0)
    n = 5000
    return pd.DataFrame({"region": rng.choice(["n", "s"], n, p=[0.3, 0.7]), "age": rng.integers(18, 90, n),
                         "income": rng.gamma(2.0, 800.0, n)})


def test_tidy_frame_and_laplace_release(pop):
    q = C.Query("proportion", where=lambda d: d["age"] >= 65)
    rng = np.random.default_rng(1)
    f = C.noise_in_context(pop, C.Design(0.1), q, [0.05, 1.0], 40, rng)
    assert list(f.columns[:5]) == ["epsilon", "rep", "sampling_error", "sampling_plus_dp_error", "truth"]
    assert len(f) == 80 and (f["truth"] == q.truth(pop)).all()
    # the sampling error is shared by all ε of a repetition; DP adds spread that shrinks with ε
    assert f.groupby("rep")["sampling_error"].nunique().max() == 1
    s = C.summarize(f).set_index(["epsilon", "error"])
    assert s.loc[(0.05, "sampling_plus_dp_error"), "mse"] > s.loc[(1.0, "sampling_plus_dp_error"), "mse"]
    fig = C.context_figure(f)
    assert len(fig.data) == 2 and fig.data[0].type == "box"
    assert list(fig.data[0].x) == ["0.05", "1"]
    assert np.all(np.asarray(fig.data[0].lowerfence) <= np.asarray(fig.data[0].q1))


def test_stratified_design_and_mean(pop):
    d = C.Design(0.1, stratum="region", rates={"n": 0.2})
    s = C.draw_sample(pop, d, np.random.default_rng(2))
    assert s.loc[s.region == "n", C.WEIGHT].iloc[0] == pytest.approx((pop.region == "n").sum()
                                                                      / (s.region == "n").sum())
    assert d.max_weight() == pytest.approx(10.0)
    q = C.Query("mean", column="income", bounds=(0, 10000))
    f = C.noise_in_context(pop, d, q, [1.0], 20, np.random.default_rng(3))
    assert f["sampling_error"].abs().mean() < 200
    with pytest.raises(OptionError, match="bounds"):
        C.Query("mean", column="income")


def test_custom_releases_imputation_and_poststrat(pop):
    rng = np.random.default_rng(4)
    p = pop.assign(ageg=pd.cut(pop.age, [17, 40, 65, 90], labels=["18-40", "41-65", "66+"]).astype(str),
                   y=np.where(rng.random(len(pop)) < 0.15, np.nan, pop.income.round()))
    rel = C.imputation_release("y", ["region", "ageg"], (0, 20000), method="smooth",
                               levels={"region": ["n", "s"], "ageg": ["18-40", "41-65", "66+"]})
    truth = float(np.clip(p.income.round(), 0, 20000).mean())
    f = C.noise_in_context(p, C.Design(0.2), None, [6.0], 5, rng, release=rel,
                           estimator=lambda s: float(s["y"].mean()), truth=truth)
    assert f["sampling_plus_dp_error"].abs().median() < 400
    b = B.binning("ageg", ["18-40", "41-65", "66+"])
    totals = {"ageg": p["ageg"].value_counts().to_dict()}
    prel = C.poststrat_release([b], totals, lambda d: (d["region"] == "n").to_numpy(), epsilon_share=(0, 0, 1),
                               weight_range=(5, 5))
    f2 = C.noise_in_context(p, C.Design(0.2), C.Query("count", where=lambda d: d["region"] == "n"), [1.0], 5, rng,
                            release=prel)
    assert f2["sampling_plus_dp_error"].abs().median() < 0.2 * f2["truth"].iloc[0]


def test_a_synthetic_sets_marginal_as_the_release_in_context(pop):
    """dpcore.studio.survey.synthetic_marginal_release (in the studio: it calls dpcore.synthesize):
    the share of a synthetic set made at ε on each sample; a large ε keeps it near the truth."""
    from dpcore.studio.survey import synthetic_marginal_release

    p = pop[["region"]].assign(old=np.where(pop["age"] >= 65, "yes", "no"))
    rel = synthetic_marginal_release(lambda d: d["region"] == "n", method="flat_laplace", scale="proportion")
    truth = float((p["region"] == "n").mean())
    f = C.noise_in_context(p, C.Design(0.2), None, [0.1, 50.0], 6, np.random.default_rng(5), release=rel,
                           estimator=lambda s: float((s["region"] == "n").mean()), truth=truth)
    err = f.groupby("epsilon")["sampling_plus_dp_error"].apply(lambda e: float(np.abs(e).mean()))
    assert err[50.0] < 0.03  # sampling error of n = 1000 (sd ≈ 0.015) plus almost no DP noise
    assert set(f["dp_estimate"].between(0, 1)) == {True}


def test_the_survey_pages_epsilon_arithmetic():
    """dpcore.studio.survey: the smooth release's ε split, its DP floor (2 ln 2 per part), the
    infinite-variance warning (≤ 4 ln 2 per part), the simulation grid and ε₁ + ε₂ + ε₃."""
    from dpcore.studio import survey as S

    ln2 = np.log(2)
    assert S.parts_of("count", "smooth", False) == 1 and S.parts_of("mean", "ignore", False) == 1
    assert S.parts_of("mean", "smooth", True) == 1 and S.parts_of("variance", "smooth", False) == 3
    ok = dict(method="smooth", query="mean", lo=0.0, hi=1.0, match=["a"])
    assert S.imputation_problems(2 * ln2 * 2, 2, **ok) == []
    [msg] = S.imputation_problems(2 * ln2 * 2 * 0.99, 2, **ok)
    assert "split into 2 equal parts" in msg and "needs ε ≥ 2.7726" in msg
    assert len(S.imputation_problems(float("nan"), 1, **{**ok, "hi": -1.0, "match": []})) == 3
    assert S.infinite_variance_warning(4 * ln2, 1, "smooth") is not None
    assert S.infinite_variance_warning(4 * ln2 * 1.01, 1, "smooth") is None
    assert S.infinite_variance_warning(0.1, 1, "ignore") is None
    assert S.context_grid("smooth", 2, None) == pytest.approx([2 * g * ln2 for g in (2, 3, 4.5, 6, 10, 16)])
    assert S.context_grid("ignore", 1, 3.0) == [0.5, 1.0, 2.0, 3.0, 4.0, 8.0]
    assert S.context_grid("ignore", 1, 2.0) == [0.5, 1.0, 2.0, 4.0, 8.0]  # already on the grid
    assert S.poststrat_epsilon(None, 0.2, 1.5) == pytest.approx(1.7)
    one, two = {"agegr": ["a"]}, {"agegr": ["a", "b"], "sex": ["s"]}
    assert S.poststrat_parts(0.3, 0.2, 1.0, candidates=one, columns=["agegr"]) == (None, None, 1.0)
    assert S.poststrat_parts(0.3, 0.2, 1.0, candidates=two, columns=["agegr", "sex"]) == (0.3, 0.2, 1.0)
    assert not S.selects_bins(one) and S.selects_bins(two)
