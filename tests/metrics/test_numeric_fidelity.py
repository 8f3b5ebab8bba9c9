"""Numeric fidelity (dpcore.metrics.numeric, through evaluate and the CLI): W1 and percentile
errors over the declared range, and the OLS CI overlap with a numeric outcome. Fixed seeds;
every expected figure is exact for the construction (a copy, a shift by a known amount)."""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.cli.commands import main
from dpcore.errors import OptionError
from dpcore.metrics.evaluate import evaluate
from dpcore.metrics.numeric import column_fidelity, numeric_fidelity, numeric_ranges


@pytest.fixture(scope="module")
def people() -> pd.DataFrame:
    rng = np.random.default_rng(27)
    n = 1500
    age = rng.integers(18, 80, n)
    sex = rng.choice(["F", "M"], n)
    wage = np.round(5 + 0.2 * age + 2.0 * (sex == "M") + rng.normal(0, 3, n), 2)
    return pd.DataFrame({"wage": wage, "age": age, "sex": sex})


@pytest.fixture(scope="module")
def domain(people):
    return dpcore.infer_domain(people, numeric={"wage": {"bounds": [-20, 80], "bins": 10},
                                                "age": {"bounds": [0, 100], "bins": 10}}).declared()


def test_identical_data_give_w1_zero_no_percentile_error_and_overlap_one(people, domain):
    out = evaluate(people, [people.copy()], domain=domain, measures=["p0"])
    cols = out["numeric"]["columns"]
    assert set(cols) == {"wage", "age"}
    for c in cols.values():
        assert c["w1"] == 0.0 and c["q10_error"] == c["q50_error"] == c["q90_error"] == 0.0
        assert c["from"] == "domain"
    reg = out["numeric"]["regression"]
    assert reg["outcome"] == "wage" and reg["family"] == "ols"
    # m = 1 OLS: the set's own t interval, so a copy gets exactly the original's
    assert reg["mean_overlap"] == pytest.approx(1.0, abs=1e-12)
    assert all(v == pytest.approx(1.0, abs=1e-12) for v in reg["overlap_by_term"].values())
    json.dumps(out)  # JSON-ready


def test_a_shifted_copy_gives_the_known_w1_and_percentile_errors(people, domain):
    shift = 4.0  # the wage range is [-20, 80]: width 100
    syn = people.assign(wage=people["wage"] + shift)
    cols = evaluate(people, [syn, people.copy()], domain=domain, measures=["p0"])["numeric"]["columns"]
    w = cols["wage"]
    assert [p["w1"] for p in w["per_set"]] == pytest.approx([shift / 100, 0.0], abs=1e-12)
    assert w["w1"] == pytest.approx(shift / 100 / 2, abs=1e-12)  # the mean over the two sets
    for q in ("q10_error", "q50_error", "q90_error"):
        assert w["per_set"][0][q] == pytest.approx(shift / 100, abs=1e-12)
    assert cols["age"]["w1"] == 0.0


def test_w1_matches_the_area_between_the_distribution_functions():
    """Equal sizes: W1 is the mean distance of the sorted values matched in order."""
    got = column_fidelity(pd.Series([0.0, 1.0, 2.0]), pd.Series([0.0, 0.0, 3.0]), 0, 10)
    assert got["w1"] == pytest.approx((0 + 1 + 1) / 3 / 10, abs=1e-12)
    assert got["q50_error"] == pytest.approx(1 / 10)


def test_the_regression_sees_a_shifted_outcome_in_the_intercept_only(people):
    ranges = numeric_ranges(people)  # no domain: the original's own ranges (curator-only)
    assert set(ranges) == {"wage", "age"} and ranges["age"]["from"] == "data"
    syn = people.assign(wage=people["wage"] + 5.0)
    reg = numeric_fidelity(people, [syn], ranges, outcome="wage")["regression"]
    assert reg["overlap_by_term"]["age"] == pytest.approx(1.0, abs=1e-9)
    assert reg["overlap_by_term"]["sex[T.M]"] == pytest.approx(1.0, abs=1e-9)
    assert reg["overlap_by_term"]["Intercept"] == 0.0  # moved by 5, far beyond its CI


def test_a_release_is_measured_and_the_noise_shows(people, domain):
    rel = dpcore.synthesize(people, "mst", 1.0, sets=2, seed=3, domain=domain)
    num = evaluate(people, rel.sets, domain=domain, measures=["p0"])["numeric"]
    for c in num["columns"].values():
        assert 0 < c["w1"] < 0.2  # values drawn inside bins of width 10 of a range of 100
    assert 0 <= num["regression"]["mean_overlap"] <= 1


def test_bad_outcome_is_one_line(people, domain):
    with pytest.raises(OptionError, match="'sex' is not a numeric column measured here; choose one of wage, age"):
        evaluate(people, [people], domain=domain, numeric_outcome="sex")
    cats = people[["sex"]].assign(g=people["age"] % 3)
    assert "numeric" not in evaluate(cats, [cats], measures=["p0"])


def test_cli_evaluate_prints_the_numeric_block(people, domain, tmp_path, capsys):
    o, s, d = tmp_path / "o.csv", tmp_path / "s.csv", tmp_path / "domain.json"
    people.to_csv(o, index=False)
    people.assign(wage=people["wage"] + 4.0).to_csv(s, index=False)
    d.write_text(domain.to_json(), encoding="utf-8")
    assert main(["evaluate", str(o), str(s), "--measures", "p0", "--domain", str(d)]) == 0
    out = capsys.readouterr().out
    wage = next(ln for ln in out.splitlines() if ln.startswith("wage "))
    assert "[-20, 80]" in wage and "domain" in wage and "0.04" in wage
    assert "regression CI overlap (OLS, outcome wage)" in out and "NOT differentially private" in out
    assert main(["evaluate", str(o), str(s), "--measures", "p0", "--domain", str(d), "--json",
                 "--numeric-outcome", "age"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["numeric"]["regression"]["outcome"] == "age"
    assert math.isclose(res["numeric"]["columns"]["wage"]["w1"], 0.04, abs_tol=1e-12)
