"""[typed-contracts]: ε and ρ as types (dpcore.privacy.budget). mypy refuses a ρ where an ε is expected; at run
time the two never mix; the arithmetic inside a unit is float arithmetic in the order written (the releases
stay bit for bit what they were: bench/checks/releases_unchanged.py)."""
from __future__ import annotations

import math
import textwrap
from pathlib import Path

import pytest

from dpcore.privacy.budget import Epsilon, Rho, budget_of, fsum, zero_like
from dpcore.privacy.definitions import PureDP, ZeroConcentratedDP
from dpcore.privacy.neighbours import Neighbours
from dpcore.privacy.stability import Sensitivity, count_table, records_per_unit

ROOT = Path(__file__).resolve().parents[2]


def _mypy(tmp_path: Path, body: str) -> tuple[int, str]:
    from mypy import api

    f = tmp_path / "typed_budget_case.py"
    f.write_text(textwrap.dedent(body), encoding="utf-8")
    out, err, status = api.run([str(f), "--no-incremental", "--follow-imports=silent",
                                "--cache-dir", str(tmp_path / ".mypy_cache"), "--python-version", "3.11"])
    return status, out + err


def test_mypy_refuses_a_rho_where_an_epsilon_is_expected(tmp_path):
    status, out = _mypy(tmp_path, """
        from dpcore.privacy.budget import Epsilon, Rho
        from dpcore.privacy.definitions import PureDP

        def spend(epsilon: Epsilon) -> float:
            return epsilon.value

        spend(Rho(0.5))
        PureDP().budget(Rho(0.5))
    """)
    assert status == 1, out
    assert out.count('incompatible type "Rho"; expected "Epsilon"') == 2, out


def test_mypy_accepts_the_same_calls_with_an_epsilon(tmp_path):
    """The negative control: the check above fails only because of the unit."""
    status, out = _mypy(tmp_path, """
        from dpcore.privacy.budget import Epsilon
        from dpcore.privacy.definitions import PureDP

        def spend(epsilon: Epsilon) -> float:
            return epsilon.value

        spend(Epsilon(0.5))
        PureDP().budget(Epsilon(0.5))
    """)
    assert status == 0, out


def test_the_units_never_mix_at_run_time():
    e, r = Epsilon(1.0), Rho(0.5)
    for op in (lambda: e + r, lambda: r - e, lambda: e < r, lambda: e / r):
        with pytest.raises(TypeError, match="different units"):
            op()
    with pytest.raises(TypeError):
        PureDP().count_noise(r, Neighbours())
    with pytest.raises(TypeError):
        ZeroConcentratedDP(1e-9).count_noise(e, Neighbours())
    with pytest.raises(TypeError):
        PureDP().count_noise(1.0, Neighbours())  # a bare number says neither
    with pytest.raises(TypeError, match="number"):
        Epsilon("1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="finite"):
        Rho(math.inf)


def test_arithmetic_inside_a_unit_is_the_float_arithmetic_in_order():
    for b in (0.1, 1.0, 7.3):
        e = Epsilon(b)
        assert (e * 0.95).value == b * 0.95 and (0.95 * e).value == 0.95 * b
        assert ((1 - 0.1) * e / 16).value == (1 - 0.1) * b / 16
        assert (e - e * 0.05 - Epsilon(0.0)).value == b - 0.05 * b - 0.0
        assert e / Epsilon(b / 4) == b / (b / 4)
    assert type(zero_like(Rho(3.0))) is Rho and fsum([Rho(0.1)] * 10, Rho(0.0)).value == math.fsum([0.1] * 10)
    assert budget_of("rho", 0.2) == Rho(0.2) and budget_of("epsilon", 0.2) == Epsilon(0.2)


def test_the_only_conversions():
    """ε → ρ of a pure mechanism is ε²/2; the largest ρ within (ε, δ) converts back within ε."""
    assert Epsilon(0.6).as_rho() == Rho(0.18)
    r = Rho.within(Epsilon(1.0), 1e-9)
    assert r.epsilon_at(1e-9).value <= 1.0 < Rho(r.value * 1.001).epsilon_at(1e-9).value
    assert ZeroConcentratedDP(1e-9).budget(Epsilon(1.0)) == r and PureDP().budget(Epsilon(1.0)) == Epsilon(1.0)


def test_stability_composes_and_the_count_sensitivity_is_its_map():
    """A K-stable contribution bound before a count table: L1 K·(1 or 2), L2 K·(1 or √2); the neighbour
    notion's count sensitivity is exactly that (so a record as the unit is the old 1 / 2 / √2)."""
    for notion, l1, l2 in (("add_remove", 1.0, 1.0), ("replace", 2.0, math.sqrt(2.0))):
        for k in (1, 2, 7):
            chain = records_per_unit(k).then(count_table(notion))
            assert chain.sensitivity("l1") == Sensitivity(k * l1, "l1")
            assert chain.sensitivity("l2").value == pytest.approx(k * l2, rel=1e-15)
            nb = Neighbours(notion, records_per_unit=k)
            assert nb.count_sensitivity("l1") == chain.sensitivity("l1")
            assert nb.score_sensitivity(0.5) == Sensitivity(0.5 * k, "score")
        assert Neighbours(notion).histogram_sensitivity == l1 and Neighbours(notion).histogram_l2_sensitivity == l2
    with pytest.raises(ValueError):
        records_per_unit(0)
