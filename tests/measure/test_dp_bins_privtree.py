"""[numeric-columns]: PrivTree inside public bounds (``dp_bins`` with ``"method": "privtree"`` or
``bins_method="privtree"``): edges inside the bounds, at most ``bins`` of them, the ledger charged before
any draw with the PrivTree map of the scale drawn at, the release's total exactly ε, the origin recorded,
clamping, the leaf cap as post-processing, one-line refusals, and the command line."""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.errors import OptionError
from dpcore.measure.privtree import epsilon_of_scale, grow_tree
from dpcore.measure.quantiles import DEFAULT_PRIVTREE_BINS
from dpcore.privacy import mechanisms as M


def _table(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"age": rng.integers(18, 90, n), "income": rng.gamma(2.0, 1500.0, n).round(2),
                         "sex": rng.choice(["f", "m"], n)})


def _domain(df):
    return dpcore.infer_domain(df, numeric={"age": {"bounds": [0, 120], "bins": 6},
                                            "income": {"bounds": [0, 50000], "bins": 4}}).declared()


SPECS = {"age": {"lower": 0, "upper": 120, "bins": 8}, "income": {"lower": 0, "upper": 50000}}


@pytest.mark.parametrize("neighbours", ["add_remove", "replace"])
def test_privtree_edges_inside_public_bounds_and_the_ledger(monkeypatch, neighbours):
    """Edges sorted inside the bounds, at most the cap; every DP-bin charge a PrivTree charge made before the
    first discrete Laplace draw of its tree, at the map of the scale every draw of that tree used."""
    df = _table()
    events: list = []
    sample = M.DiscreteLaplace.sample

    def spy(self, *args, **kw):
        events.append(("draw", float(self.scale)))
        return sample(self, *args, **kw)

    monkeypatch.setattr(M.DiscreteLaplace, "sample", spy)
    rel = dpcore.synthesize(df, "flat_laplace", 2.0, seed=5, domain=_domain(df), neighbours=neighbours,
                            dp_bins=SPECS, bins_method="privtree", bins_share=0.2)
    assert rel.ledger.epsilon == pytest.approx(2.0, abs=1e-12) and rel.dp
    charges = [c for p, c in rel.ledger.charges() if "/DP bin edges/" in p]
    assert [c.mechanism.split(" ")[0] for c in charges] == ["privtree", "privtree"]
    sens = 1.0 if neighbours == "add_remove" else 2.0
    for c in charges:
        assert c.sensitivity == sens and c.epsilon == pytest.approx(epsilon_of_scale(c.scale, sens), rel=1e-12)
        assert 0.2 * 2.0 / 2 * (1 - 1e-6) <= c.epsilon <= 0.2 * 2.0 / 2  # the share, less the dyadic rounding
    # the two trees' draws come first in the release, at the two charged scales
    tree_draws = [s for _, s in events[:2]]
    assert {round(s, 9) for s in tree_draws} <= {round(c.scale, 9) for c in charges}
    rec = rel.manifest()["diagnostics"]["dp_bin_edges"]
    for col, spec in SPECS.items():
        edges = rel.domain[col].edges
        assert list(edges) == sorted(edges) and edges[0] == spec["lower"] and edges[-1] == spec["upper"]
        assert rel.domain[col].origin == "dp_privtree"
        assert rec[col]["method"] == "privtree" and rec[col]["origin"] == "dp_privtree"
        assert rec[col]["edges"] == list(edges) and rec[col]["spent"] == pytest.approx(rec[col]["epsilon"], rel=1e-6)
    assert len(rel.domain["age"].edges) - 1 <= 8 and rec["age"]["bins_cap"] == 8
    assert rec["income"]["bins_cap"] == DEFAULT_PRIVTREE_BINS  # the default cap
    assert math.fsum(c.epsilon for c in charges) == pytest.approx(rel.manifest()["diagnostics"]["dp_bin_edges"]
                                                                   ["age"]["spent"] * 2, rel=1e-6)


def test_privtree_under_zcdp_charges_rho_within_the_share():
    df = _table(800)
    rel = dpcore.synthesize(df, "aim", 1.0, seed=2, domain=_domain(df), delta=1e-9,
                            dp_bins={"income": {"lower": 0, "upper": 50000, "method": "privtree"}})
    charges = [c for p, c in rel.ledger.charges() if "/DP bin edges/" in p]
    budget = rel.ledger.spent.value  # ρ of the whole release
    assert len(charges) == 1 and charges[0].rho <= 0.1 * budget + 1e-15
    assert charges[0].rho == pytest.approx(0.1 * budget, rel=1e-6)
    assert rel.dp and rel.domain["income"].origin == "dp_privtree"


def test_values_outside_the_bounds_are_clamped_into_the_end_bins():
    df = _table(600)
    df.loc[0, "income"] = 1e7
    rel = dpcore.synthesize(df, "flat_laplace", 1.0, seed=1, domain=_domain(df),
                            dp_bins={"income": {"lower": 0, "upper": 50000, "method": "privtree", "bins": 6}})
    assert rel.curator_only["clamped_records"]["income"] >= 1
    assert rel.sets[0]["income"].between(0, 50000).all()


def test_the_leaf_cap_keeps_the_uncapped_trees_first_splits():
    """Capped and uncapped trees on the same draws: the capped one's cuts are the uncapped one's first
    cap − 1 cuts in breadth-first order (a function of the uncapped output: post-processing)."""
    x = np.random.default_rng(0).normal(500, 100, 5000).clip(0, 1000)
    full = grow_tree(x, 0.0, 1000.0, 2.0, 2.0 * math.log(2), 0.0, np.random.default_rng(9), max_depth=8)
    assert len(full) - 1 > 6
    for cap in (2, 3, 6):
        capped = grow_tree(x, 0.0, 1000.0, 2.0, 2.0 * math.log(2), 0.0, np.random.default_rng(9), max_depth=8,
                           max_leaves=cap)
        assert len(capped) - 1 == cap and set(capped) <= set(full)
        # breadth first: no kept cut is deeper (a finer power-of-two step) than a dropped one
        depth = {e: _depth(e) for e in full[1:-1]}
        kept, dropped = set(capped[1:-1]), set(full[1:-1]) - set(capped[1:-1])
        assert max(depth[e] for e in kept) <= min(depth[e] for e in dropped)


def _depth(edge: float) -> int:
    """The depth of a cut of [0, 1000] (a multiple of 1000/2^d for the smallest d)."""
    d = 1
    while not float(edge / 1000 * 2 ** d).is_integer():
        d += 1
    return d


@pytest.mark.parametrize("kw, match", [
    ({"dp_bins": {"age": {"lower": 0, "upper": 120, "method": "kmeans"}}}, "method must be one of"),
    ({"dp_bins": {"age": {"lower": 0, "upper": 120}}, "bins_method": "tree"}, "bins_method must be one of"),
    ({"dp_bins": {"age": {"lower": 0, "upper": 120, "method": "privtree", "grid": 64}}}, "PrivTree has none"),
    ({"dp_bins": {"age": {"method": "privtree"}}}, "needs bins"),
    ({"dp_bins": {"age": {"lower": 0, "upper": 120, "bins": 1, "method": "privtree"}}}, "bins"),
    ({"bins_method": "privtree"}, "give dp_bins too"),
])
def test_bad_privtree_bins_options_are_one_line(kw, match):
    df = _table(200)
    with pytest.raises(OptionError, match=match) as err:
        dpcore.synthesize(df, "flat_laplace", 1.0, seed=1, domain=_domain(df), **kw)
    assert "\n" not in str(err.value)


def test_bins_method_is_refused_beside_the_dp_domain():
    with pytest.raises(OptionError, match="drop dp_bins, bins_share and bins_method"):
        dpcore.synthesize(_table(200), "mst", 1.0, domain="dp", delta=1e-9, bins_method="privtree")


def test_a_columns_method_overrides_bins_method():
    df = _table(500)
    rel = dpcore.synthesize(df, "flat_laplace", 1.0, seed=3, domain=_domain(df), bins_method="privtree",
                            dp_bins={"age": {"lower": 0, "upper": 120, "bins": 4, "method": "quantiles"},
                                     "income": {"lower": 0, "upper": 50000}})
    assert (rel.domain["age"].origin, rel.domain["income"].origin) == ("dp_quantiles", "dp_privtree")


def test_cli_synth_dp_bins_privtree_seeded(tmp_path, capsys):
    from dpcore.cli.commands import main

    df = _table(400)
    src = tmp_path / "t.csv"
    df.to_csv(src, index=False)
    (tmp_path / "d.json").write_text(_domain(df).to_json())
    args = ["synth", str(src), "--method", "flat_laplace", "--domain", str(tmp_path / "d.json"),
            "--dp-bins", "income=0:50000", "--dp-bins", "age=0:120:5", "--bins-method", "privtree", "--seed", "7"]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    assert main([*args, "--out", str(tmp_path / "b")]) == 0
    man = json.loads((tmp_path / "a" / "manifest.json").read_text())
    rec = man["diagnostics"]["dp_bin_edges"]
    assert rec["income"]["method"] == "privtree" and rec["income"]["bins_cap"] == DEFAULT_PRIVTREE_BINS
    assert rec["age"]["bins_cap"] == 5
    assert man["ledger"]["epsilon_total"] == pytest.approx(1.0, abs=1e-12) and man["dp"]
    # seeded: the same edges and the same records twice
    assert json.loads((tmp_path / "b" / "manifest.json").read_text())["diagnostics"]["dp_bin_edges"] == rec
    assert (tmp_path / "a" / "synthetic_1.csv").read_text() == (tmp_path / "b" / "synthetic_1.csv").read_text()


@pytest.mark.parametrize("args, match", [
    (["--bins-method", "privtree"], "--bins-method says how --dp-bins finds its edges; give --dp-bins too"),
    (["--dp-bins", "age=0:120", "--bins-method", "tree"], "--bins-method: invalid choice: 'tree'"),
    (["--dp-bins", "age=0:120:x"], "the bounds and bins must be numbers; write COL=lower:upper[:bins]"),
    (["--dp-bins", "age=0:1:2:3"], "write COL=lower:upper or COL=lower:upper:bins"),
])
def test_bad_cli_dp_bins_input_is_one_line(tmp_path, capsys, args, match):
    from dpcore.cli.commands import main

    src = tmp_path / "t.csv"
    _table(100).to_csv(src, index=False)
    assert main(["synth", str(src), "--out", str(tmp_path / "o"), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert match in err and "\n" not in err and "Traceback" not in err
