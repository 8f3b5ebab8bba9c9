"""The generalized Cauchy privacy map used by the survey releases (dpcore.survey._smooth)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from dpcore.errors import OptionError
from dpcore.survey._smooth import LN2, cauchy_noise, cauchy_smooth_epsilon, ch6_gamma, check_ch6_epsilon


def worst_log_ratio(g, a, b):
    """max over z, |s| <= a, |t| <= b of |log h(z) − log h((z − s)e^{−t}) + t| on a grid."""
    z = np.concatenate([np.linspace(-8, 8, 4001), np.geomspace(8, 1e4, 200), -np.geomspace(8, 1e4, 200)])[:, None, None]
    s = np.linspace(-a, a, 15)[None, :, None]
    t = np.linspace(-b, b, 15)[None, None, :]
    lh = lambda x: -np.log1p(np.abs(x) ** g)
    return float(np.abs(lh(z) - lh((z - s) * np.exp(-t)) + t).max())


@pytest.mark.parametrize("g,a,b", [(4, 1 / 6, 1 / 6), (2, LN2, LN2), (3, 0.5, 0.2), (1.5, 0.3, 0.3), (6, 0.1, 0.4)])
def test_privacy_map_bounds_the_worst_log_ratio(g, a, b):
    assert worst_log_ratio(g, a, b) <= cauchy_smooth_epsilon(g, a, b) + 1e-9


@pytest.mark.parametrize("eps", [2 * LN2, 1.5, 3.0, 6 * LN2, 10.0])
def test_thesis_calibration_is_eps_dp_for_gamma_at_least_2(eps):
    g = ch6_gamma(eps)  # β = ln 2, α = ε/(2(γ−1)) = ln 2
    assert cauchy_smooth_epsilon(g, LN2, LN2) <= eps + 1e-12
    assert worst_log_ratio(g, LN2, LN2) <= eps + 1e-9


def test_thesis_calibration_fails_below_2_ln_2():
    # Cor 6.4.3 at ε = ln 2 claims ε-DP, but the log ratio reaches ≈ 1.16 > 0.69
    assert worst_log_ratio(ch6_gamma(LN2), LN2, LN2) > 1.1
    with pytest.raises(OptionError, match="2 ln 2"):
        check_ch6_epsilon(1.0, "test")


def test_noise_scale_and_infinite_variance_warning():
    rng = np.random.default_rng(0)
    with pytest.warns(RuntimeWarning, match="infinite variance"):
        _, scale = cauchy_noise(3.0, 2.0, ch6_gamma(2.0), rng)
    assert scale == pytest.approx(3.0 / LN2)
    z, scale = cauchy_noise(1.0, 1.0, 4.0, rng, size=20000)
    assert scale == pytest.approx(6.0)
    assert np.std(z) == pytest.approx(6.0, rel=0.25)  # unit variance at γ = 4
    assert math.isfinite(scale)
