"""``ipf``'s ``one_way_share`` (docs/methods/ipf.md, "One-way margins when the noise dominates"):
part of each set's ε measures every attribute's one-way margin besides the listed margins.
The ledger charges each of them, ``auto`` turns it on only for noise-dominated record fits,
and there it brings the synthetic one-way margins closer to the data's."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.cli.commands import main
from dpcore.errors import OptionError
from dpcore.privacy.budget import Epsilon
from dpcore.privacy.neighbours import Neighbours
from dpcore.synthesizers import ipf as I


@pytest.fixture(scope="module")
def skewed():
    """10 attributes of 4–8 levels with skewed one-way margins, 400 records: at ε = 0.3 the
    45 two-way margins (ε/45 each) are noise-dominated."""
    rng = np.random.default_rng(11)
    cols = {}
    for j in range(10):
        d = 4 + j % 5
        p = rng.dirichlet(np.full(d, 0.4))
        cols[f"v{j}"] = [f"l{x}" for x in rng.choice(d, 400, p=p)]
    return pd.DataFrame(cols)


def _one_way_tv(orig: pd.DataFrame, syn: pd.DataFrame) -> float:
    """Mean over the attributes of the total-variation distance between one-way shares."""
    out = []
    for c in orig:
        a = orig[c].value_counts(normalize=True)
        b = syn[c].value_counts(normalize=True)
        out.append(0.5 * a.subtract(b, fill_value=0.0).abs().sum())
    return float(np.mean(out))


@pytest.mark.parametrize("bad", [-0.1, 0.95, "half", True, math.nan])
def test_bad_share_is_refused_naming_the_option(skewed, bad):
    with pytest.raises(OptionError, match="one_way_share"):
        dpcore.synthesize(skewed, "ipf", 1.0, one_way_share=bad)


def test_the_ledger_charges_every_one_way_margin_and_totals_epsilon(skewed):
    dom = dpcore.infer_domain(skewed).declared()
    rel = dpcore.synthesize(skewed, "ipf", 0.3, sets=2, seed=1, domain=dom, fit="records", one_way_share=0.4)
    charges = [c for _, c in rel.ledger.charges() if c.label.startswith("margin ")]
    one_way = [c for c in charges if " × " not in c.label]
    two_way = [c for c in charges if " × " in c.label]
    per_set = (0.3 - rel.record_count["epsilon"]) / 2
    assert len(one_way) == 2 * 10 and len(two_way) == 2 * 45
    assert all(c.epsilon == pytest.approx(per_set * 0.4 / 10) for c in one_way)
    assert all(c.epsilon == pytest.approx(per_set * 0.6 / 45) for c in two_way)
    assert rel.ledger.epsilon == pytest.approx(0.3, abs=1e-12)
    assert rel.diagnostics["per_set"][0]["one_way_share"] == pytest.approx(0.4)


def test_auto_measures_one_way_margins_only_where_the_noise_dominates(skewed):
    dom = dpcore.infer_domain(skewed).declared()
    opts = I.resolve(dom, fit="records")
    n = float(len(skewed))
    # public facts only: the domain, the options, ε per set, the sensitivity and the released count
    assert I.one_way_share(dom, opts, Epsilon(0.3), Neighbours(), n) == I.AUTO_ONE_WAY_SHARE
    assert I.one_way_share(dom, opts, Epsilon(50.0), Neighbours(), n) == 0.0
    # the dense fit never takes it by default (Raab's Table 3 runs there)
    assert I.one_way_share(dom, I.resolve(dom, fit="dense"), 0.3, Neighbours(), n) == 0.0
    # only one-way margins listed: auto has nothing to split, an explicit share is refused
    assert I.one_way_share(dom, I.resolve(dom, margins="oneway", fit="records"), 0.3, Neighbours(), n) == 0.0
    with pytest.raises(OptionError, match="one_way_share=0.5 .* margins lists only one-way margins"):
        I.resolve(dom, margins="v0;v1", one_way_share=0.5)


def test_every_attribute_is_measured_once(skewed):
    """With a share, every attribute of the domain gets its one-way margin (one in no listed margin
    too, instead of a uniform column), and a listed one-way margin is measured once, in the
    one-way part ([review])."""
    dom = dpcore.infer_domain(skewed).declared()
    rel = dpcore.synthesize(skewed, "ipf", 1.0, seed=2, domain=dom, margins="v0;v0,v1;v2,v3", one_way_share=0.4)
    labels = [c.label for _, c in rel.ledger.charges() if c.label.startswith("margin ")]
    per_set = 1.0 - rel.record_count["epsilon"]
    assert sorted(labels) == sorted([f"margin v{j}" for j in range(10)] + ["margin v0 × v1", "margin v2 × v3"])
    eps = {c.label: c.epsilon for _, c in rel.ledger.charges() if c.label.startswith("margin ")}
    assert eps["margin v5"] == pytest.approx(per_set * 0.4 / 10) and eps["margin v0"] == eps["margin v5"]
    assert eps["margin v0 × v1"] == pytest.approx(per_set * 0.6 / 2)
    assert not any("uniform and independent" in w for w in rel.diagnostics["per_set"][0]["warnings"])
    # without the share, v4..v9 are in no margin: synthesised uniform, and said so
    plain = dpcore.synthesize(skewed, "ipf", 1.0, seed=2, domain=dom, margins="v0;v0,v1;v2,v3", one_way_share=0)
    assert any("uniform and independent" in w for w in plain.diagnostics["per_set"][0]["warnings"])


def test_a_share_of_zero_is_the_release_without_it(skewed):
    dom = dpcore.infer_domain(skewed).declared()
    a = dpcore.synthesize(skewed, "ipf", 50.0, seed=3, domain=dom, fit="records")  # auto: not dominated, 0
    b = dpcore.synthesize(skewed, "ipf", 50.0, seed=3, domain=dom, fit="records", one_way_share=0)
    pd.testing.assert_frame_equal(a.sets[0], b.sets[0])
    assert a.diagnostics["per_set"][0]["one_way_share"] == 0.0


def test_measuring_the_one_way_margins_brings_the_synthetic_ones_closer(skewed):
    """Statistical: over seeds 0–11 at ε = 1 (ratio 0.8, near the switch), the mean one-way TV
    distance of the synthetic set to the data with one_way_share = 0.5 is below 0.8 × the one
    without (measured 0.116 against 0.187, standard errors 0.006; bench/RESULTS.md has the
    S_pMSE comparison on cps_voter_wide)."""
    dom = dpcore.infer_domain(skewed).declared()
    tv = {}
    for share in (0.0, 0.5):
        tv[share] = np.mean([
            _one_way_tv(skewed, dpcore.synthesize(skewed, "ipf", 1.0, seed=s, domain=dom, fit="records",
                                                  one_way_share=share).sets[0])
            for s in range(12)])
    assert tv[0.5] < 0.8 * tv[0.0], tv


def test_preview_lists_the_one_way_margins_with_their_epsilon(skewed):
    dom = dpcore.infer_domain(skewed).declared()
    pv = dpcore.preview(skewed, "ipf", 0.3, domain=dom, fit="records")
    rows = pv.margins
    one_way = rows[rows["table"].str.contains("(one-way)", regex=False)]
    assert pv.plan["one_way_share"] == I.AUTO_ONE_WAY_SHARE
    assert len(one_way) == 10 and len(rows) == 55
    assert rows["epsilon"].sum() == pytest.approx(pv.plan["budget_per_set"])
    assert one_way["epsilon"].sum() == pytest.approx(pv.plan["budget_per_set"] * I.AUTO_ONE_WAY_SHARE)


def test_cli_takes_the_share_and_refuses_a_bad_one(skewed, tmp_path, capsys):
    src = tmp_path / "t.csv"
    skewed.to_csv(src, index=False)
    assert main(["synth", str(src), "--out", str(tmp_path / "o"), "--method", "ipf", "--fit", "records",
                 "--one-way-share", "0.3", "--epsilon", "0.3", "--seed", "1"]) == 0
    capsys.readouterr()
    assert main(["preview", str(src), "--method", "ipf", "--fit", "records", "--one-way-share", "auto",
                 "--epsilon", "0.3"]) == 0
    out = capsys.readouterr().out
    assert "share of ε on the one-way margins = 0.5" in out and "(one-way)" in out
    code = main(["synth", str(src), "--out", str(tmp_path / "x"), "--method", "ipf", "--one-way-share", "2"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "one_way_share" in err[0], err


def test_cli_junk_share_names_auto_and_the_preview_says_auto_is_curator_only(skewed, tmp_path, capsys):
    src = tmp_path / "t.csv"
    skewed.to_csv(src, index=False)
    code = main(["synth", str(src), "--out", str(tmp_path / "x"), "--method", "ipf", "--one-way-share", "junk"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "neither auto nor a number" in err[0], err
    assert main(["preview", str(src), "--method", "ipf", "--fit", "records", "--epsilon", "0.3"]) == 0
    assert "curator-only" in capsys.readouterr().out
    assert main(["preview", str(src), "--method", "ipf", "--fit", "records", "--epsilon", "0.3",
                 "--one-way-share", "0.2"]) == 0
    assert "curator-only" not in capsys.readouterr().out
