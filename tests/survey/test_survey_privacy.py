"""[privacy-audit] regressions for dpcore.survey (docs/survey-privacy.md).

* No published float from a non-robust sampler: every released value lies on its
  mechanism's grid (value / grid is an integer), so no output is impossible under a
  neighbour (Mironov 2012); smooth-sensitivity values lie on a public grid that does not
  depend on the data.
* No exact data-dependent count in the published JSON or printed lines.
* One neighbour notion per release, recorded in every ledger charge and statement;
  unsupported notions refused with an OptionError naming ``neighbours``.
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpcore.cli.commands import main
from dpcore.errors import OptionError
from dpcore.privacy.ledger import BOUNDED, UNBOUNDED
from dpcore.privacy.mechanisms import Laplace
from dpcore.survey import bins as B
from dpcore.survey import imputation as I
from dpcore.survey import poststrat as ps
from dpcore.survey._privacy import public_grid
from dpcore.survey._smooth import LN2
from dpcore.survey.knn import knn_impute
from dpcore.survey.partition import laplace_proportion, partition, release_to_user

DRAWS = 40  # releases per function; each must land on the grid


def _on_grid(value: float, grid: float) -> bool:
    q = value / grid
    return math.isfinite(q) and q == math.floor(q)


def _is_power_of_two(g: float) -> bool:
    return g > 0 and math.frexp(g)[0] == 0.5


def _table(seed=5, n=300, missing=0.2):
    rng = np.random.default_rng(seed)
    age = rng.integers(0, 6, n)
    y = np.round(100 + 50 * age + rng.normal(0, 20, n)) + 0.3  # fractional values: a sum is not an integer
    y[rng.random(n) < missing] = np.nan
    return pd.DataFrame({"g": rng.choice(["a", "b", "c"], n), "age": age, "y": y})


LEVELS = {"g": ["a", "b", "c"], "age": list(range(6))}


def _impute(df):
    return knn_impute(df, "y", ["g", "age"], ordinal=["age"], levels=LEVELS)


@pytest.fixture(scope="module")
def imp():
    return _impute(_table())


@pytest.fixture(scope="module")
def neighbour_imp():
    """The table with one more record (add/remove neighbour of ``imp``'s table)."""
    df = _table()
    extra = pd.DataFrame({"g": ["b"], "age": [3], "y": [111.3]})
    return _impute(pd.concat([df, extra], ignore_index=True))


# ------------------------------------------------------------------ values on the grid


def test_laplace_proportion_values_lie_on_the_mechanism_grid():
    df = pd.DataFrame({"x": np.arange(37) % 3})
    query = laplace_proportion("x", 1)
    for seed in range(DRAWS):
        v, info = query(df, 1.0, np.random.default_rng(seed))
        assert info["grid"] == Laplace.calibrate(1.0, 1 / 37).grid
        assert _on_grid(v, info["grid"]), (v, info["grid"])


def test_release_to_user_values_lie_on_the_grid_and_say_replace():
    df = pd.DataFrame({"x": np.arange(120) % 4})
    part = partition(df, pieces=4, rng=np.random.default_rng(0))
    rel = release_to_user(df, part, [0, 2], laplace_proportion("x", 0), 1.0, np.random.default_rng(1))
    assert all(_on_grid(v, g) for v, g in zip(rel.values, rel.grids))
    assert all(c.neighbours == BOUNDED for _, c in rel.ledger.charges())
    assert "replacing one record" in rel.statement


def test_count_ignoring_missing_is_an_integer(imp):
    for seed in range(DRAWS):
        rel = I.release_count_ignoring_missing(imp, 1.0, np.random.default_rng(seed), where=imp.values.index < 150)
        assert rel.grid == 1.0 and _on_grid(rel.value, 1.0), rel.value


@pytest.mark.parametrize("size", [None, 200.0])
def test_mean_ignoring_missing_lies_on_the_laplace_grid(imp, size):
    for seed in range(DRAWS):
        rel = I.release_mean_ignoring_missing(imp, 1.0, np.random.default_rng(seed), bounds=(0, 500), size=size)
        s = rel.details.get("noisy_size", size)
        assert _on_grid(s, 1.0)  # the noisy size is a discrete-Laplace count
        assert rel.grid == Laplace.calibrate(1.0 if size else 0.5, 500 / s).grid
        assert _on_grid(rel.value, rel.grid), (rel.value, rel.grid)


def test_global_comparators_lie_on_their_grids(imp):
    for seed in range(10):
        c = I.release_count_global(imp, 1.0, np.random.default_rng(seed))
        m = I.release_mean_global(imp, 1.0, np.random.default_rng(seed), bounds=(0, 500), size=300.0)
        assert _on_grid(c.value, c.grid) and _on_grid(m.value, m.grid)


SMOOTH = {
    "count": lambda imp, rng: I.release_count(imp, 6 * LN2, rng, target_where=lambda v: v < 250),
    "mean": lambda imp, rng: I.release_mean(imp, 6 * LN2, rng, bounds=(0, 500), size=250.0),
    "mean_noisy_size": lambda imp, rng: I.release_mean(imp, 12 * LN2, rng, bounds=(0, 500)),
    "variance": lambda imp, rng: I.release_variance(imp, 6 * LN2, rng, bounds=(0, 500), size=250.0, center=250.0),
}


@pytest.mark.parametrize("name", list(SMOOTH))
def test_smooth_releases_lie_on_a_public_power_of_two_grid(imp, neighbour_imp, name):
    for seed in range(DRAWS):
        rel = SMOOTH[name](imp, np.random.default_rng(seed))
        assert _is_power_of_two(rel.grid) and _on_grid(rel.value, rel.grid), (rel.value, rel.grid)
        # the grid is 2^-20 of a public floor on the noise scale, never of S(D) itself
        assert rel.grid <= rel.scale * 2.0**-20
    if name != "mean_noisy_size":  # with a public size the grid is the same on a neighbouring table
        a = SMOOTH[name](imp, np.random.default_rng(0))
        b = SMOOTH[name](neighbour_imp, np.random.default_rng(0))
        assert a.smooth_sensitivity != b.smooth_sensitivity or a.exact != b.exact
        assert a.grid == b.grid


def test_poststratified_count_lies_on_a_public_grid():
    ages = ["0-17", "18-64", "65+"]
    b = B.binning("age", ages)
    totals = {"age": {"0-17": 20_000.0, "18-64": 60_000.0, "65+": 20_000.0}}
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"age": rng.choice(ages, 400)})
    mask = rng.random(400) < 0.3
    grids = set()
    for seed in range(DRAWS):
        rel = ps.poststratify_release(df, [b], totals, mask, epsilon_select=None, epsilon_count=1.0,
                                      rng=np.random.default_rng(seed))
        assert _is_power_of_two(rel.grid) and _on_grid(rel.value, rel.grid), (rel.value, rel.grid)
        grids.add(rel.grid)
    # public: 2^-20 of 2(γ−1)/ε_3, rounded down to a power of two
    assert grids == {public_grid(2 * (4.0 - 1) / 1.0)}


def test_noise_is_drawn_only_through_dpcore_mechanisms():
    """No textbook float noise in dpcore.survey: privacy noise comes from dpcore.privacy.mechanisms.
    rng.permutation (the partition) and rng.choice (the simulated survey design) are not noise."""
    pat = re.compile(r"(rng|np\.random|random)\.(laplace|normal|exponential|standard_\w+|gamma|beta|geometric|"
                     r"uniform|random|poisson|logistic|gumbel)\b")
    root = Path(__file__).resolve().parents[2] / "dpcore" / "survey"
    hits = [f"{p.name}:{i}" for p in root.glob("*.py") for i, line in enumerate(p.read_text().splitlines(), 1)
            if pat.search(line)]
    assert not hits, hits


# ------------------------------------------------------------------ neighbour notions


@pytest.mark.parametrize("name", list(SMOOTH))
def test_smooth_releases_are_add_remove_and_refuse_replace(imp, name):
    rel = SMOOTH[name](imp, np.random.default_rng(0))
    assert all(c.neighbours == UNBOUNDED for _, c in rel.ledger.charges())
    assert "adding or removing one record" in rel.statement and "ideal real-valued mechanism" in rel.statement
    fn = {"count": I.release_count, "mean": I.release_mean, "mean_noisy_size": I.release_mean,
          "variance": I.release_variance}[name]
    kw = {} if name == "count" else {"bounds": (0, 500)}
    with pytest.raises(OptionError, match="neighbours='add_remove' only"):
        fn(imp, 12 * LN2, np.random.default_rng(0), neighbours="replace", **kw)


def test_partition_refuses_add_remove():
    with pytest.raises(OptionError, match="neighbours='replace' only"):
        laplace_proportion("x", 1, neighbours="add_remove")
    df = pd.DataFrame({"x": np.arange(20) % 2})
    part = partition(df, pieces=2, rng=np.random.default_rng(0))
    with pytest.raises(OptionError, match="neighbours='replace' only"):
        release_to_user(df, part, [0], laplace_proportion("x", 1), 1.0, np.random.default_rng(0),
                          neighbours="add_remove")


def test_poststratification_refuses_replace_and_records_add_remove():
    b = B.binning("age", ["y", "o"])
    df = pd.DataFrame({"age": ["y", "o"] * 50})
    totals = {"age": {"y": 1000.0, "o": 1000.0}}
    mask = np.arange(100) % 3 == 0
    rel = ps.poststratify_release(df, [b], totals, mask, epsilon_select=None, epsilon_count=1.0,
                                  rng=np.random.default_rng(0))
    assert all(c.neighbours == UNBOUNDED for _, c in rel.ledger.charges())
    assert "adding or removing one record" in rel.statement
    with pytest.raises(OptionError, match="neighbours='add_remove' only"):
        ps.poststratify_release(df, [b], totals, mask, epsilon_select=None, epsilon_count=1.0,
                                rng=np.random.default_rng(0), neighbours="replace")


@pytest.mark.parametrize("notion,label", [("add_remove", UNBOUNDED), ("replace", BOUNDED)])
def test_baselines_follow_the_chosen_notion(imp, notion, label):
    a, b = -1000.0, 500.0  # M = 1000 < b − a = 1500: the two notions differ
    rel = I.release_mean_ignoring_missing(imp, 1.0, np.random.default_rng(0), bounds=(a, b), size=100.0,
                                          neighbours=notion)
    assert rel.sensitivity == pytest.approx((1000.0 if notion == "add_remove" else 1500.0) / 100.0)
    cnt = I.release_count_ignoring_missing(imp, 1.0, np.random.default_rng(0), neighbours=notion)
    for r in (rel, cnt):
        assert all(c.neighbours == label for _, c in r.ledger.charges())
        assert r.ledger.epsilon == pytest.approx(1.0, abs=1e-12)
    assert ("replacing one record" if notion == "replace" else "adding or removing") in rel.statement
    with pytest.raises(OptionError, match="neighbours"):
        I.release_count_ignoring_missing(imp, 1.0, np.random.default_rng(0), neighbours="bounded")


def test_mean_ignoring_missing_sensitivity_by_brute_force():
    """The sum of clipped observed Y over the subpopulation, over every neighbour of a small
    table: its largest change is M under add/remove and max(M, b − a) under replace, the
    sensitivities the release is calibrated with (times 1/s)."""
    a, b = -2.0, 5.0
    base = pd.DataFrame({"g": ["a", "b", "a", "b", "a", "b"], "age": [0, 1, 2, 3, 4, 5],
                         "y": [1.0, np.nan, 4.0, -2.0, 3.0, np.nan]})
    where = np.array([True, True, False, True, True, False])
    s = 3.0

    def total(df, w):
        r = I.release_mean_ignoring_missing(_impute(df), 1.0, np.random.default_rng(0), bounds=(a, b), where=w,
                                            size=s)
        return r.exact * s, r.sensitivity

    t0, _ = total(base, where)
    new_records = [(y, inside) for y in (a, b, 0.0, np.nan) for inside in (True, False)]
    add_remove, replace = [], []
    for i in range(len(base)):
        add_remove.append(total(base.drop(index=i).reset_index(drop=True), np.delete(where, i))[0])
        for y, inside in new_records:
            d = base.copy()
            d.loc[i, "y"] = y
            w = where.copy()
            w[i] = inside
            replace.append(total(d, w)[0])
    for y, inside in new_records:
        d = pd.concat([base, pd.DataFrame({"g": ["a"], "age": [2], "y": [y]})], ignore_index=True)
        add_remove.append(total(d, np.append(where, inside))[0])
    M = max(abs(a), abs(b))
    # attained: a record of value b can be added, and the record of value a replaced by one of value b
    assert max(abs(t - t0) for t in add_remove) == pytest.approx(M)
    assert max(abs(t - t0) for t in replace) == pytest.approx(max(M, b - a))
    for notion, bound in (("add_remove", M), ("replace", max(M, b - a))):
        r = I.release_mean_ignoring_missing(_impute(base), 1.0, np.random.default_rng(0), bounds=(a, b),
                                            where=where, size=s, neighbours=notion)
        assert r.sensitivity == pytest.approx(bound / s)


# ------------------------------------------------------------------ published output


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("survey_privacy")
    df = _table(seed=11, n=260, missing=0.17)
    df.to_csv(d / "s.csv", index=False)
    (d / "levels.json").write_text(json.dumps({"g": ["a", "b", "c"], "age": list(range(6))}))
    return d, df


def _numbers(o):
    if isinstance(o, bool):
        return
    if isinstance(o, (int, float)):
        yield o
    elif isinstance(o, dict):
        for v in o.values():
            yield from _numbers(v)
    elif isinstance(o, list):
        for v in o:
            yield from _numbers(v)


IMPUTE_CASES = [("count", "smooth"), ("count", "ignore"), ("mean", "smooth"), ("mean", "ignore"),
                ("variance", "smooth")]


@pytest.mark.parametrize("query,method", IMPUTE_CASES)
def test_impute_release_publishes_no_exact_count(files, capsys, query, method):
    d, df = files
    imp = _impute(df)
    where = df["age"] >= 2
    secret = {imp.n_donees, imp.n_donors, imp.L1, int(where.sum()), int((where & df["y"].notna()).sum()),
              int((df["y"] < 250).sum())}
    argv = ["impute-release", str(d / "s.csv"), "--target", "y", "--match", "g,age", "--ordinal", "age",
            "--levels", str(d / "levels.json"), "--query", query, "--method", method, "--where", "age >= 2",
            "--epsilon", "9.3", "--seed", "3"]
    if query == "count":
        argv += ["--target-where", "y < 250"] if method == "smooth" else []
    else:
        argv += ["--bounds", "0,500"]
    assert main(argv + ["--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert set(res) == {"query", "method", "value", "epsilon", "dp", "not_dp_because", "neighbours", "statement",
                        "grid", "ledger", "privacy_unit"}
    assert res["dp"] is True and res["neighbours"] == UNBOUNDED
    published = [x for k, v in res.items() if k != "value" for x in _numbers(v)]
    assert not secret & {x for x in published if float(x).is_integer()}, (secret, published)
    assert main(argv) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[2].startswith("DP: yes — ε-differentially private")
    for line in text[1:]:  # the first line holds the DP value
        words = re.sub(r"\S*/\S*", "", line)  # file paths (pytest's numbered tmp dirs) are not published figures
        assert not secret & {int(x) for x in re.findall(r"(?<![\d.])\d+(?![\d.])", words)}, line


def test_poststrat_release_publishes_no_exact_count(tmp_path, capsys):
    rng = np.random.default_rng(4)
    n = 240
    df = pd.DataFrame({"age": rng.choice(["y", "o"], n), "poor": (rng.random(n) < 0.3).astype(int)})
    df.to_csv(tmp_path / "s.csv", index=False)
    pd.DataFrame([("age", "y", 5000), ("age", "o", 7000)], columns=["column", "level", "total"]).to_csv(
        tmp_path / "t.csv", index=False)
    secret = {n, int(df["poor"].sum()), int((df["age"] == "y").sum()), int((df["age"] == "o").sum())}
    assert main(["poststrat-release", str(tmp_path / "s.csv"), "--totals", str(tmp_path / "t.csv"), "--columns",
                 "age", "--count-where", "poor == 1", "--epsilon-count", "1", "--seed", "1", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["neighbours"] == UNBOUNDED and "ideal real-valued mechanism" in res["statement"]
    published = [x for k, v in res.items() if k != "value" for x in _numbers(v)]
    assert not secret & {x for x in published if float(x).is_integer()}, (secret, published)
