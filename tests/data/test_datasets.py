"""Tests for dpcore.data.datasets: SD2011 and the S3/S5/S7 extracts of Raab (2022)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.data.datasets import EXTRACT_VARIABLES, load_sd2011, sd2011_extract
from dpcore.metrics import disclosure

ROOT = Path(__file__).resolve().parents[2]

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def sd2011() -> pd.DataFrame:
    return load_sd2011()


@pytest.fixture(scope="module")
def s7(sd2011) -> pd.DataFrame:
    return sd2011_extract(sd2011, 7)


def test_load_sd2011(sd2011):
    assert sd2011.shape == (5000, 35)
    for col in ("sex", "age", "placesize", "edu", "socprof", "income", "marital"):
        assert col in sd2011.columns


def test_load_sd2011_explicit_path_and_missing_file(tmp_path):
    df = load_sd2011(REPO / "assets" / "sd2011.csv")
    assert df.shape == (5000, 35)
    with pytest.raises(ValueError, match="not found"):
        load_sd2011(tmp_path / "nope.csv")


def test_s7_shape_and_columns(s7):
    assert s7.shape == (5000, 7)
    assert list(s7.columns) == [
        "sex", "agegr", "placesize", "edu", "socprof", "income", "marital"
    ]
    for col in s7.columns:
        assert isinstance(s7[col].dtype, pd.CategoricalDtype)


@pytest.mark.parametrize("k", [3, 5])
def test_smaller_extracts_are_prefixes(sd2011, s7, k):
    sk = sd2011_extract(sd2011, k)
    assert list(sk.columns) == list(EXTRACT_VARIABLES[:k])
    pd.testing.assert_frame_equal(sk, s7.iloc[:, :k])


@pytest.mark.parametrize("k", [0, 4, 6, 8, "7"])
def test_bad_k(sd2011, k):
    with pytest.raises(ValueError):
        sd2011_extract(sd2011, k)


def test_s7_p0_p1_match_raab_table1(s7):
    res = disclosure(s7, s7)
    assert round(res.p0, 2) == 98.20
    assert round(res.p1, 2) == 35.84
    assert res.ru == pytest.approx(res.p1)


def test_s5_p0_is_68_23(sd2011):
    # Raab (2022) Table 1 misprints this as 6.23 (docs/paper-errata.md); p1 = 6.74 is printed correctly.
    res = disclosure(sd2011_extract(sd2011, 5), sd2011_extract(sd2011, 5))
    assert round(res.p0, 2) == 68.23
    assert round(res.p1, 2) == 6.74


def test_s3_has_no_uniques(sd2011):
    res = disclosure(sd2011_extract(sd2011, 3), sd2011_extract(sd2011, 3))
    assert res.k == 60 and res.p0 == 0.0 and res.p1 == 0.0  # Table 1: k = 60, p0 = p1 = 0


def test_missing_counts_match_raab_table4(s7):
    # Table 4 of Raab (2022): missing values per variable.
    na = s7.isna().sum().to_dict()
    assert na == {
        "sex": 0, "agegr": 0, "placesize": 0, "edu": 7, "socprof": 33,
        "income": 683, "marital": 9,
    }
    assert (s7["income"] == "-8").sum() == 603
    assert s7["placesize"].nunique() == 6
    assert s7["edu"].nunique() == 4
    assert s7["socprof"].nunique() == 9
    assert s7["marital"].nunique() == 6


def _bounds(label: str) -> tuple[float, float, bool]:
    lo, hi = label[1:-1].split(",")
    return float(lo), float(hi), label.endswith("]")


@pytest.mark.parametrize("var, raw", [("agegr", "age"), ("income", "income")])
def test_quantile_groups(sd2011, s7, var, raw):
    x = sd2011[raw].to_numpy(dtype=float)
    usable = ~np.isnan(x) & (x != -8)
    # R type-7 quantiles, written out: h = (n-1)p, x[floor h] + (h - floor h)(x[floor h+1] - x[floor h])
    xs = np.sort(x[usable])
    expected_edges = []
    for p in np.linspace(0, 1, 6):
        h = (len(xs) - 1) * p
        lo = int(np.floor(h))
        hi = min(lo + 1, len(xs) - 1)
        expected_edges.append(xs[lo] + (h - lo) * (xs[hi] - xs[lo]))

    groups = [c for c in s7[var].cat.categories if c != "-8"]
    assert len(groups) == 5
    edges = [_bounds(g)[0] for g in groups] + [_bounds(groups[-1])[1]]
    np.testing.assert_allclose(edges, expected_edges, rtol=0, atol=1e-9)
    # closed on the left, only the last group closed on the right
    assert all(g.startswith("[") for g in groups)
    assert [g.endswith("]") for g in groups] == [False] * 4 + [True]

    lab = s7[var].astype(object).to_numpy()
    assert np.all(pd.isna(lab[np.isnan(x)]))
    for g in groups:
        lo, hi, closed = _bounds(g)
        inside = usable & (x >= lo) & ((x <= hi) if closed else (x < hi))
        assert np.array_equal(lab[usable] == g, inside[usable]), g
    # the maximum falls in the last (right-closed) group, the minimum in the first
    assert lab[usable][np.argmax(x[usable])] == groups[-1]
    assert lab[usable][np.argmin(x[usable])] == groups[0]


def test_agegr_labels(s7):
    assert list(s7["agegr"].cat.categories) == [
        "[16,28)", "[28,42)", "[42,54)", "[54,64)", "[64,97]"
    ]


def test_demo_csv_in_sync(s7):
    demo = pd.read_csv(REPO / "assets" / "sd2011_s7.csv", dtype=str, keep_default_na=False)
    expected = s7.astype(object).where(s7.notna(), "")
    assert list(demo.columns) == list(s7.columns)
    np.testing.assert_array_equal(demo.to_numpy(dtype=object), expected.to_numpy(dtype=object))


def test_bundled_files_match_the_checksums_in_assets_readme():
    """Each bundled data file is byte for byte the one whose provenance assets/README.md states."""
    import hashlib
    import re

    readme = (REPO / "assets" / "README.md").read_text(encoding="utf-8")
    sums = dict(re.findall(r"^\| `([\w.]+\.csv)` \| ([0-9a-f]{64}) \|$", readme, flags=re.M))
    assert {"sd2011.csv", "cps_vrs_weighted.csv"} <= set(sums), sums
    for name, digest in sums.items():
        assert hashlib.sha256((REPO / "assets" / name).read_bytes()).hexdigest() == digest, name


def test_cps_voter_wide():
    """≥ 16 categorical attributes, missing as a level, > 10^12 cells; same rows as the extract."""
    from dpcore.data.datasets import (
        CPS_WIDE_VARIABLES,
        cps_voter_extract,
        cps_voter_wide,
        default_cps_path,
        load_cps_vrs,
    )

    if default_cps_path() is None or not default_cps_path().exists():
        pytest.skip("needs the full cpsvote sample (not bundled): set DPCORE_CPS_VRS to cps_vrs_10k.csv")
    raw = load_cps_vrs()
    wide = cps_voter_wide(raw)
    ext = cps_voter_extract(raw)
    assert list(wide.columns) == list(dpcore.data.datasets.CPS_WIDE_VARIABLES) and len(CPS_WIDE_VARIABLES) >= 16
    assert len(wide) == len(ext) == 6231
    assert (wide["agegr"].fillna("NA") == ext["agegr"].fillna("NA")).all()
    assert wide["state"].nunique() == 51 and wide["education"].nunique() == 16 and wide["race"].nunique() == 5
    dom = dpcore.infer_domain(wide)
    assert dom.size > 10**12 and dom.size == 649_512_959_606_784_000
    assert dom["vote_whynot"].size == 13  # 12 answers + NA


def test_cps_voter_wide_is_a_wide_categorical_table():
    """[wide-tables]: the bundled development table (assets/cps_voter_wide.csv, built by
    dpcore.data.datasets.cps_voter_wide from the cpsvote sample) has ≥ 16 attributes and more
    than 10^12 cells; missing is a level."""
    from dpcore.data.datasets import CPS_WIDE_VARIABLES
    from dpcore.data.io import read_table

    w = read_table(ROOT / "assets" / "cps_voter_wide.csv")
    assert list(w.columns) == list(CPS_WIDE_VARIABLES) and len(CPS_WIDE_VARIABLES) >= 16
    dom = dpcore.infer_domain(w)
    assert dom.size > 10**12 and dom["state"].size >= 50
    assert any(a.na for a in dom.attributes)


def test_flat_laplace_preview_predicts_the_share_from_empty_cells():
    """The preview's expected share of records from empty cells (public facts only) matches
    releases on S7 within 3 percentage points (3 seeds); above 50% it warns in plain words."""
    import numpy as np

    from dpcore.data.io import read_table

    s7 = read_table(ROOT / "assets" / "sd2011_s7.csv")
    dom = dpcore.infer_domain(s7).declared()
    pv = dpcore.preview(s7, "flat_laplace", 1.0, domain=dom)
    occupied = set(np.ravel_multi_index(dom.encode(s7).T, dom.shape))
    shares = []
    for seed in range(3):
        rel = dpcore.synthesize(s7, "flat_laplace", 1.0, seed=seed, domain=dom)
        cells = np.ravel_multi_index(dom.encode(rel.sets[0]).T, dom.shape)
        shares.append(np.mean([c not in occupied for c in cells]))
    assert abs(np.mean(shares) - pv.plan["empty_cell_share"]) < 0.03
    assert "empty in the" in pv.plan["empty_cell_warning"] and "ipf" in pv.plan["empty_cell_warning"]
    small = dpcore.preview(s7[["sex", "marital"]], "flat_laplace", 1.0,
                           domain=dpcore.infer_domain(s7[["sex", "marital"]]).declared())
    assert small.plan["empty_cell_share"] < 0.5 and not small.plan.get("empty_cell_warning")


def test_bundled_cps_tables_are_read_by_name_and_a_wrong_name_is_one_line():
    """bench/ and the docs use the bundled CPS copies when the full sample is not configured."""
    from dpcore.data.datasets import bundled_cps_table

    wide, voters = bundled_cps_table("wide"), bundled_cps_table("voters")
    assert wide.shape == (6231, 22) and voters.shape == (6231, 10)
    assert list(wide.columns) == list(dpcore.data.datasets.CPS_WIDE_VARIABLES)
    with pytest.raises(dpcore.OptionError, match="one of wide, voters"):
        bundled_cps_table("narrow")
