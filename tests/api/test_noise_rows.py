"""Every method's expected noise against the typical count (each module's ``noise_rows``, through
``dpcore.expected_noise``): checked against the charges a real release writes to its ledger, the
preview, and the noise law itself."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.privacy.mechanisms import DiscreteLaplace
from dpcore.synthesizers import REGISTRY
from dpcore.synthesizers.empty_share import NoiseRow, typical_cells

ROOT = Path(__file__).resolve().parents[2]
CASES = [("steps", {"order": "sex;agegr"}), ("steps", {}), ("uh_random", {}), ("flat_laplace", {}), ("ipf", {}),
         ("privbayes", {}), ("aim", {}), ("aim", {"whole_table": "always"}), ("mst", {})]


def test_every_registered_method_says_its_noise():
    assert all(spec.noise_rows is not None for spec in REGISTRY.values())


@pytest.mark.parametrize("method,opts", CASES, ids=lambda c: str(c))
@pytest.mark.parametrize("neighbours", ["add_remove", "replace"])
def test_rows_match_the_charges_of_a_real_release(s7, s7_domain, method, opts, neighbours):
    df, dom = s7, s7_domain
    rel = dpcore.synthesize(df, method=method, epsilon=1.0, sets=2, seed=5, domain=dom, neighbours=neighbours, **opts)
    n = rel.record_count["value"]
    rows = dpcore.expected_noise(method, dom, 1.0, n=n, sets=2, neighbours=neighbours, **opts)
    assert rows and all(isinstance(r, NoiseRow) for r in rows)
    charges = [c for path, c in rel.ledger.charges()
               if "/set 1/" in path and c.mechanism.startswith("discrete_laplace")]
    for row in rows:
        same = [c for c in charges if math.isclose(c.epsilon, row.budget.value, rel_tol=1e-12)]
        assert same, f"{method}: no charge at ε = {row.budget.value} for {row.what}"
        sds = {math.sqrt(DiscreteLaplace(c.scale).variance) for c in same}
        assert any(math.isclose(sd, row.noise_sd, rel_tol=1e-12) for sd in sds), (row, sds)
        assert row.typical_count == pytest.approx(n / row.cells)
        assert row.swamped == (row.noise_sd > row.typical_count)
        if not row.estimate and method != "aim":  # AIM's round margins are chosen at release
            assert any(c.parallel_over == row.counts for c in same), (row, [c.parallel_over for c in same])


def test_steps_rows_agree_with_the_preview(s7, s7_domain):
    df, dom = s7, s7_domain
    pv = dpcore.preview(df, epsilon=1.0, sets=5, domain=dom, order="sex;agegr")
    rows = dpcore.expected_noise("steps", dom, 1.0, n=len(df), sets=5, order="sex;agegr")
    assert [r.counts for r in rows] == list(pv.layers["real"])  # 2 nodes, 10 nodes, 147,000 leaf cells
    assert [r.noise_sd for r in rows] == pytest.approx(list(pv.layers["noise_sd"]), rel=1e-12)
    assert rows[-1].swamped and not rows[0].swamped  # 2,500 records per sex node; 0.034 per leaf cell


def test_margin_rows_agree_with_the_preview(s7, s7_domain):
    df, dom = s7, s7_domain
    for method in ("ipf", "flat_laplace"):
        pv = dpcore.preview(df, method=method, epsilon=1.0, sets=5, domain=dom)
        rows = dpcore.expected_noise(method, dom, 1.0, n=len(df), sets=5)
        assert [r.noise_sd for r in rows] == pytest.approx(list(pv.margins["noise_sd"]), rel=1e-12)
        assert [r.cells for r in rows] == list(pv.margins["cells"].astype(float))


def test_replace_doubles_the_noise_and_spends_nothing_on_the_count(s7, s7_domain):
    dom = s7_domain
    ar = dpcore.expected_noise("flat_laplace", dom, 1.0, n=5000, sets=1)[0]
    rp = dpcore.expected_noise("flat_laplace", dom, 1.0, n=5000, sets=1, neighbours="replace")[0]
    assert ar.budget.value == pytest.approx(0.95) and rp.budget.value == pytest.approx(1.0)  # 5% buys the noisy count
    assert rp.noise_sd == pytest.approx(math.sqrt(DiscreteLaplace(2.0).variance))
    assert ar.noise_sd == pytest.approx(math.sqrt(DiscreteLaplace(1 / 0.95).variance))


def test_the_noise_sd_is_the_sd_of_the_noise_drawn(s7, s7_domain):
    """Statistical check (seed 0, 400,000 draws): the released counts' noise has the stated SD
    within 1% (the SD estimate's own standard error here is about 0.2%)."""
    dom = s7_domain
    for method, eps in (("flat_laplace", 1.0), ("mst", 0.3)):
        for row in dpcore.expected_noise(method, dom, eps, n=5000, sets=1)[:2]:
            mech = DiscreteLaplace.calibrate(row.budget.value, 1.0)
            draws = mech.sample(np.random.default_rng(0), 400_000)
            assert np.std(draws) == pytest.approx(row.noise_sd, rel=0.01)


def test_typical_cells_is_the_median_product():
    assert typical_cells([2, 3, 4], 2) == 8.0  # products 6, 8, 12
    assert typical_cells([5], 3) == 5.0
    assert typical_cells([2] * 40, 20) == pytest.approx(2.0 ** 20)  # too many subsets: geometric mean


def test_bad_options_name_the_option(s7, s7_domain):
    dom = s7_domain
    with pytest.raises(dpcore.OptionError, match="method must be one of"):
        dpcore.expected_noise("nope", dom, 1.0, n=10)
    with pytest.raises(dpcore.OptionError, match="epsilon"):
        dpcore.expected_noise("steps", dom, -1.0, n=10)
    with pytest.raises(dpcore.OptionError, match="leave no ε"):
        dpcore.expected_noise("steps", dom, 1.0, n=10, bins_share=0.95)


@pytest.fixture(scope="module")
def numeric_wide():
    """A table like HMDA's: categorical columns beside numeric ratios with public bounds, wide enough
    (2⁴ · 8⁵ ≈ 5·10⁵ cells, above the dense fit's 2¹⁸) that ipf's auto one-way share takes the record
    fit and reads the noise law."""
    import pandas as pd

    rng = np.random.default_rng(11)
    n = 1500
    df = pd.DataFrame({"deny": rng.choice(["yes", "no"], n), "afam": rng.choice(["yes", "no"], n),
                       "single": rng.choice(["yes", "no"], n), "selfemp": rng.choice(["yes", "no"], n)})
    numeric = {}
    for col in ("dir", "hir", "lvr", "uria", "ccs"):
        df[col] = rng.gamma(2.0, 0.2, n).round(3)
        numeric[col] = {"bounds": [0, 3], "bins": 8}
    return df, dpcore.infer_domain(df, numeric=numeric).declared()


@pytest.mark.parametrize("delta", [None, 1e-9], ids=["pure", "zcdp"])
@pytest.mark.parametrize("method", list(REGISTRY))
def test_preview_and_noise_check_run_for_every_method_with_numeric_columns(numeric_wide, method, delta):
    """The preview and the noise check answer for every method the release can run, under both
    definitions (ipf under (ε, δ) once read its one-way share with pure ε's noise law and refused
    'discrete_gaussian')."""
    df, dom = numeric_wide
    if delta is not None and "zcdp" not in REGISTRY[method].definitions:
        pytest.skip(f"{method} releases under pure ε only")
    pv = dpcore.preview(df, method, 1.0, sets=5, domain=dom, delta=delta)
    assert pv is not None
    rows = dpcore.expected_noise(method, dom, 1.0, n=len(df), sets=5, delta=delta)
    assert rows and all(r.noise_sd > 0 for r in rows)


@pytest.mark.parametrize("delta, unit", [(None, "epsilon"), (1e-9, "rho")])
def test_a_steps_plan_names_the_unit_of_its_budget_figures(s7, s7_domain, delta, unit):
    """The plan's budget figures are named for a budget (``budget_per_set``, ``record_count_budget``, ...),
    and ``budget_unit`` says whether they are ε or ρ, under both definitions ([studio-polish] 9)."""
    pv = dpcore.preview(s7, "steps", 1.0, sets=5, domain=s7_domain, delta=delta)
    plan = pv.plan
    assert plan["budget_unit"] == unit
    assert not [k for k in plan if "epsilon" in k and k != "epsilon"], sorted(plan)
    total = plan["budget_per_set"] * 5 + plan["record_count_budget"]
    assert total == pytest.approx(plan["rho"] if unit == "rho" else 1.0)


def test_the_noise_of_a_unit_and_of_a_wide_panel():
    """[privacy-unit] expected_noise takes the design's unit as synthesize does (the app's noise check passes it
    through): ``privacy_unit`` only names it, K scales every noise; with ``panel_time`` the rows are those of the
    wide table (a column group per declared period, a record's sensitivity), from the domain alone."""
    from dpcore.counting.panel import panel_layout, wide_domain

    rng = np.random.default_rng(1)
    panel = pd.DataFrame({"id": np.repeat(np.arange(30), 3), "year": np.tile([2001, 2002, 2003], 30),
                          "job": rng.choice(["a", "b", "c"], 90), "town": rng.choice(["x", "y"], 90)})
    dom = dpcore.infer_domain(panel.drop(columns="id")).declared()
    named = dpcore.expected_noise("flat_laplace", dom, 1.0, n=90, privacy_unit="id", records_per_unit=3)
    assert named == dpcore.expected_noise("flat_laplace", dom, 1.0, n=90, records_per_unit=3)
    record = dpcore.expected_noise("flat_laplace", dom, 1.0, n=90)
    assert named[0].noise_sd > 3 * record[0].noise_sd  # scale 3/ε: 3 times the scale, a bit more in SD
    wide = dpcore.expected_noise("mst", dom, 1.0, n=30, privacy_unit="id", panel_time="year")
    expected = wide_domain(dom, panel_layout(panel, dom, "id", "year"))
    assert wide == dpcore.expected_noise("mst", expected, 1.0, n=30)
    with pytest.raises(dpcore.OptionError, match="panel_time 'when' is not a column"):  # one line, as synthesize's
        dpcore.expected_noise("mst", dom, 1.0, n=30, privacy_unit="id", panel_time="when")
