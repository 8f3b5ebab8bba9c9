"""The exact histogram of many i.i.d. discrete Gaussian draws (``DiscreteGaussian.sample_histogram``,
``dpcore.privacy.exact_histogram.DiscreteGaussianLaw``; proof in docs/sparse-leaves.md, "The
discrete Gaussian").

What is tested, with fixed seeds and stated tolerances (α = 1e-3 throughout):

* the law's rigorous integer bounds of P(|Z| ≤ j | |Z| ≥ s) against 110-digit decimals (the
  normaliser summed until its terms are below 10^−110): every bound contains the true value and
  is at most 2 units wide; the exact floors are the true floors; the tail factor bounds the tail;
* the cutoff: n·P(|Z| > T) ≤ 1, and T at most 2% (+ 2 levels) above the least such T once n ≥ 10^4;
* all histogram outcomes of m = 3 draws enumerated (chi-square over 10^6 groups; power against
  moving 0.01 of probability onto any outcome ≥ 0.999, computed); a σ 3% off is rejected;
* the pooled value counts of 2^46 draws against Binomial(M, p_k) for every class with
  M·p_k ≥ 10^6 (z-tests, Bonferroni; power ≥ 0.9 against a 1% relative error in each, computed),
  the tail beyond them and the sign; small blocks whose draws reach the later passes;
* agreement in distribution with i.i.d. ``DiscreteGaussian.sample`` draws: 5·10^13 histogram
  draws against 4·10^6 per-cell draws (two-sample chi-square), and the same test tells a σ 1% off;
* huge blocks (2^62 cells) draw the values beyond T at their rate; the (group, value,
  multiplicity) contract and its edge cases (the sparse leaf layer drawing through the mechanism:
  tests/privacy/test_sparse_sampler_label.py).
"""
from __future__ import annotations

import math
from decimal import Decimal, getcontext
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import dpcore.privacy.exact_histogram as E
from dpcore.privacy.gaussian import DiscreteGaussian
from tests.privacy.histogram_support import (
    check_histogram_contract,
    check_pooled_classes,
    pooled,
    power_against_moving_mass,
    three_draw_outcomes,
    two_sample_p,
)

ALPHA = 1e-3
getcontext().prec = 130


# --------------------------------------------------------------------------- rigorous integers

def _exact_cdf(num: int, den: int, start: int, stop: int) -> list[Decimal]:
    """P(|Z| ≤ j | |Z| ≥ start), j = start .. stop − 1, from the terms summed until below 10^−110."""
    lam = Decimal(den) / (2 * Decimal(num))
    terms, k = [], start
    while True:
        t = (-(Decimal(k * k - start * start)) * lam).exp() * (1 if k == 0 else 2)
        terms.append(t)
        if k >= stop and t < Decimal(10) ** -110:
            break
        k += 1
    total = sum(terms)
    out, acc = [], Decimal(0)
    for j in range(start, stop):
        acc += terms[j - start]
        out.append(acc / total)
    return out


SIGMA2 = [Fraction(1, 3), Fraction(1), Fraction(9, 4), Fraction(1000001, 1000), Fraction(3**20, 2**20),
          DiscreteGaussian(0.37).sampler_sigma2, DiscreteGaussian(7.3).sampler_sigma2,
          DiscreteGaussian(61.0).sampler_sigma2]


@pytest.mark.parametrize("sigma2", SIGMA2, ids=[str(s) for s in SIGMA2])
def test_cdf_bounds_contain_the_true_values(sigma2):
    law = E.DiscreteGaussianLaw(sigma2.numerator, sigma2.denominator)
    sd = math.sqrt(sigma2)
    for start in (0, 1, 3, int(4 * sd) + 1):
        stop = law.cutoff(start, 10**6)
        exact = _exact_cdf(law.num, law.den, start, stop)
        for prec in (64, 200, 330):
            bounds = law.cdf_bounds(start, stop, prec)
            assert len(bounds) == stop - start
            scale = Decimal(2) ** prec
            for (lo, hi), e in zip(bounds, exact):
                assert lo <= e * scale <= hi and hi - lo <= 2, (sigma2, start, prec)
        floors = law.cdf_floors(start, stop, 300)
        assert floors == [int(e * Decimal(2) ** 300) for e in exact]


def test_the_tail_factor_bounds_the_tail():
    """Σ_{k≥N} e^{−k²λ} ≤ e^{−N²λ}·F(N), and F is not loose by more than its σ√(π/2) or 1/(2Nλ) term."""
    for sigma2 in (Fraction(1, 7), Fraction(2), Fraction(400), Fraction(10**6 + 3, 7)):
        lam = Decimal(sigma2.denominator) / (2 * Decimal(sigma2.numerator))
        sd = math.sqrt(sigma2)
        for n in (0, 1, 2, int(sd), int(3 * sd) + 1, int(9 * sd) + 5):
            tail, k = Decimal(0), n
            while True:
                t = (-(Decimal(k * k - n * n)) * lam).exp()
                tail += t
                if t < Decimal(10) ** -40:
                    break
                k += 1
            factor = E._gaussian_tail_factor(sigma2.numerator, sigma2.denominator, n)
            assert tail <= Decimal(factor.numerator) / Decimal(factor.denominator)
            assert factor <= 2 + 1.26 * (sd + 1)


def _tails(mech: DiscreteGaussian, top: int) -> np.ndarray:
    """P(|Z| > t) for t = 0 .. top at the sampler's σ², summed from the far tail inwards (the pmf's
    logarithm, so nothing underflows before 1e-300; terms beyond 60σ + 60 levels are below it)."""
    k = np.arange(1, top + 2 + int(60 * math.sqrt(float(mech.sampler_sigma2))) + 60)
    p = 2 * np.exp(mech.log_pmf(k))
    return np.cumsum(p[::-1])[::-1][: top + 1]


def _tail_probability(mech: DiscreteGaussian, t: int) -> float:
    """P(|Z| > t) at the sampler's σ²."""
    return float(_tails(mech, t)[t])


@pytest.mark.parametrize("sigma", [2.0**-8, 0.3, 0.7, 1.0, 3.0, 11.7, 100.0, 1000.0])
def test_histogram_cutoff_keeps_at_most_one_draw_beyond_it(sigma):
    """n·P(|Z| > T) ≤ 1; and for n ≥ 10^4, T is within 2% (+ 2 levels) of the least such T."""
    mech = DiscreteGaussian(sigma)
    for n in (1, 10, 10**4, 10**9, 2**62):
        T = mech.histogram_cutoff(n)
        tails = _tails(mech, T)
        assert T >= 0 and n * tails[T] <= 1 + 1e-9, (sigma, n, T)
        if n >= 10**4:
            least = int(np.flatnonzero(n * tails <= 1)[0])
            assert T <= 1.02 * least + 2, (sigma, n, T, least)


def test_later_passes_keep_a_quarter_of_a_draw_beyond_them():
    """start ≥ 1: n·P(|Z| ≥ stop | |Z| ≥ start) ≤ ¼ (a further pass is rarely needed)."""
    for sigma in (0.7, 4.0, 40.0):
        mech = DiscreteGaussian(sigma)
        law = mech._law
        for start in (1, 3, int(5 * sigma) + 2):
            for n in (1, 5, 1000):
                stop = law.cutoff(start, n)
                assert stop > start
                tails = _tails(mech, stop)
                assert n * tails[stop - 1] / tails[start - 1] <= 0.25 + 1e-9, (sigma, start, n, stop)


# --------------------------------------------------------------------------- the histogram law

def test_all_histogram_outcomes_of_three_draws_follow_the_multinomial():
    """m = 3 draws per group, σ = 1.3, 10^6 groups: every histogram outcome (a multiset of three
    values) with expected count ≥ 20 is a class, the rest one more; chi-square p > 1e-3.

    Power: for every class, moving 0.01 of probability onto it (from the others, in proportion)
    gives a noncentral chi-square with λ = N·Σ(p′−p)²/p; the power at the test's level is
    computed and must be ≥ 0.999. The law of a σ 3% off is rejected by the same test."""
    mech = DiscreteGaussian(1.3)
    G = 1_000_000
    g, v, m = mech.sample_histogram(np.full(G, 3), np.random.default_rng(2025))
    chi2 = three_draw_outcomes(g, v, m, G, K=7)
    res, p = chi2(mech.pmf)
    assert res.pvalue > ALPHA
    assert power_against_moving_mass(p, G, ALPHA) >= 0.999
    assert chi2(DiscreteGaussian(1.3 * 1.03).pmf)[0].pvalue < ALPHA


def test_pooled_value_classes_at_large_m_each_within_one_percent():
    """64 groups of 2^40 cells (M = 2^46 draws), σ = 7.3: the pooled count of each value k is
    exactly Binomial(M, p_k). Every class with M·p_k ≥ 10^6 is z-tested (Bonferroni, family
    α = 1e-3); each has power ≥ 0.9 against a 1% relative error in p_k (computed). The tail beyond
    those classes is tested the same way, and so is the sign: #(+k) ~ Binomial(#(±k), ½)."""
    mech = DiscreteGaussian(7.3)
    G, m = 64, 2**40
    g, v, c = mech.sample_histogram(np.full(G, m), np.random.default_rng(78))
    M = G * m
    ks = np.arange(0, 200)
    K = int(ks[M * mech.pmf(ks) >= 1e6].max())
    ks = np.arange(-K, K + 1)
    pk = mech.pmf(ks)
    check_pooled_classes(v, c, M, K, pk, _tail_probability(mech, K), ALPHA)


def _pooled_p_value(v, m, mech: DiscreteGaussian, lo: int, hi: int) -> float:
    """Chi-square p-value of the pooled values against ``mech``'s law on {< lo}, lo..hi, {> hi}."""
    ks = np.arange(lo, hi + 1)
    observed = np.array([m[v < lo].sum()] + [m[v == k].sum() for k in ks] + [m[v > hi].sum()])
    side = _tail_probability(mech, hi) / 2  # P(Z > hi) = P(Z < −hi) = P(Z < lo) for lo = −hi
    expected = observed.sum() * np.r_[side, mech.pmf(ks), side]
    assert expected.min() > 5
    return float(stats.chisquare(observed, expected * observed.sum() / expected.sum())[1])


@pytest.mark.parametrize("counts, hi", [
    (np.full(40_000, 5), 8),  # T small: many draws come from the later passes beyond T
    (np.array([300_000, 100_000, 0, 7]), 8),  # T large: the first pass carries nearly all
])
def test_small_blocks_reach_the_later_passes_and_keep_the_law(counts, hi):
    mech = DiscreteGaussian(2.5)
    g, v, m = mech.sample_histogram(counts, np.random.default_rng(12))
    assert g.dtype == v.dtype == m.dtype == np.int64 and (m > 0).all()
    assert np.bincount(g, weights=m, minlength=len(counts)).astype(np.int64).tolist() == counts.tolist()
    T = mech.histogram_cutoff(int(counts.max()))
    if counts.sum() * _tail_probability(mech, T) > 20:  # many draws beyond T: they are drawn, not cut
        assert np.abs(v).max() > T
    assert _pooled_p_value(v, m, mech, -hi, hi) > ALPHA
    assert _pooled_p_value(v, m, DiscreteGaussian(2.5 * 1.05), -hi, hi) < ALPHA  # it can fail


def test_agrees_in_distribution_with_iid_per_cell_draws():
    """50 groups of 10^12 cells from the histogram sampler against 4·10^6 i.i.d. draws of
    ``DiscreteGaussian.sample`` (the per-cell sampler of the dense path), σ = 4.2, fixed seeds:
    two-sample chi-square p > 1e-3; the same test tells the histogram of a σ 1% off."""
    cells = DiscreteGaussian(4.2).sample(np.random.default_rng(5), 4_000_000)
    vals, cnt = np.unique(cells, return_counts=True)
    per_cell = dict(zip(vals.tolist(), cnt.tolist()))

    def histogram(sigma, seed):
        _, v, c = DiscreteGaussian(sigma).sample_histogram(np.full(50, 10**12), np.random.default_rng(seed))
        return pooled(v, c)

    assert two_sample_p(histogram(4.2, 6), per_cell) > ALPHA
    assert two_sample_p(histogram(4.2 * 1.01, 6), per_cell) < ALPHA


@pytest.mark.parametrize("sigma", [3.0, 9.0])
def test_huge_blocks_draw_the_tail_at_its_rate(sigma):
    """Blocks of 2^62 cells: the values beyond T (probability ≤ 2^−62 per cell) come out at their
    rate (Poisson, within 5 sd over 200 blocks; σ where 2^62·P(|Z| > T) is 0.16 and 0.6, so
    about 30 and 120 such draws are expected)."""
    mech, n = DiscreteGaussian(sigma), 2**62
    T = mech.histogram_cutoff(n)
    _, v, m = mech.sample_histogram(np.full(200, n), np.random.default_rng(9))
    expected = 200 * n * _tail_probability(mech, T)
    assert expected > 20
    assert abs(int(m[np.abs(v) > T].sum()) - expected) < 5 * np.sqrt(expected)


def test_histogram_contract_and_edge_cases():
    mech = DiscreteGaussian(2.0)
    check_histogram_contract(mech.sample_histogram)
    with pytest.raises(TypeError):  # a seed is not a generator
        mech.sample_histogram(np.array([5]), 3)
    # σ at its smallest: everything is 0 (P(Z ≠ 0) < e^{−30000}), exactly
    g, v, c = DiscreteGaussian(2.0**-8).sample_histogram(np.array([2**62]), np.random.default_rng(1))
    assert v.tolist() == [0] and c.tolist() == [2**62]
