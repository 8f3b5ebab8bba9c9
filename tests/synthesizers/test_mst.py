"""MST under pure ε-DP (docs/methods/mst.md): the ledger totals ε exactly for every number of
attributes, the selection score's sensitivity by brute force over every neighbour of small tables,
releases within the domain, and a fixed-seed check that the private tree finds the true edges."""
import itertools
import math

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.errors import OptionError
from dpcore.measure.margins import margin_counts
from dpcore.synthesizers import mst as M

SHAPE = (2, 3, 2)


def _records(table, shape):
    return np.stack(np.unravel_index(np.repeat(np.arange(len(table)), table), shape), axis=1).reshape(-1, len(shape))


@pytest.mark.parametrize("notion,hs", [("add_remove", 1.0), ("replace", 2.0)])
def test_quality_score_sensitivity_by_brute_force(notion, hs):
    """|q_ab(D) − q_ab(D')| ≤ Δ over every table of ≤ 3 records and every neighbour (model margin fixed:
    it is computed from released one-way margins); the bound is attained."""
    pairs = list(itertools.combinations(range(3), 2))
    shapes = {p: [SHAPE[a] for a in p] for p in pairs}
    models = [{p: np.random.default_rng(1).uniform(0, 2, shapes[p]) for p in pairs},
              {p: np.where(np.arange(math.prod(shapes[p])) % 2, 5.0, 0.0).reshape(shapes[p]) for p in pairs}]
    cells = math.prod(SHAPE)
    for model in models:
        worst = 0.0
        for n in range(4):
            for combo in itertools.combinations_with_replacement(range(cells), n):
                table = np.bincount(np.array(combo, dtype=np.int64), minlength=cells)
                X = _records(table, SHAPE)
                base = {p: M.quality(margin_counts(X, SHAPE, p), model[p]) for p in pairs}
                moves = []
                if notion == "add_remove":
                    for c in range(cells):
                        moves.append((None, c))
                        if table[c]:
                            moves.append((c, None))
                else:
                    moves = [(a, b) for a, b in itertools.permutations(range(cells), 2) if table[a]]
                for out, into in moves:
                    t = table.copy()
                    if out is not None:
                        t[out] -= 1
                    if into is not None:
                        t[into] += 1
                    Y = _records(t, SHAPE)
                    for p in pairs:
                        worst = max(worst, abs(M.quality(margin_counts(Y, SHAPE, p), model[p]) - base[p]))
        assert worst <= hs + 1e-9
    assert worst == pytest.approx(hs)


def _chain(n=1500, seed=0, d=5):
    """x0 → x1 → … : each attribute copies the previous one with probability 0.85."""
    rng = np.random.default_rng(seed)
    cols = [rng.integers(0, 3, n)]
    for _ in range(d - 1):
        cols.append(np.where(rng.random(n) < 0.85, cols[-1], rng.integers(0, 3, n)))
    return pd.DataFrame({f"x{j}": c.astype(str) for j, c in enumerate(cols)})


@pytest.mark.parametrize("neighbours", ["add_remove", "replace"])
@pytest.mark.parametrize("d,epsilon,sets", [(1, 1.0, 1), (2, 0.7, 1), (3, 1.3, 2), (5, 0.25, 3)])
def test_ledger_totals_epsilon_exactly(neighbours, d, epsilon, sets):
    df = _chain(300, 1, d)
    rel = dpcore.synthesize(df, "mst", epsilon, sets=sets, seed=2, domain=dpcore.infer_domain(df).declared(),
                            neighbours=neighbours)
    assert abs(rel.ledger.epsilon - epsilon) <= 1e-12 * epsilon
    charges = [c for _, c in rel.ledger.charges()]
    hs = 1.0 if neighbours == "add_remove" else 2.0
    assert all(c.sensitivity == hs for c in charges)
    n_select = sum("select" in c.label for c in charges)
    assert n_select == (sets * (d - 1) if d >= 3 else 0)
    # one third each to one-way margins, selection and edges (d ≥ 3), per set
    if d >= 3:
        per_set = (epsilon - (rel.record_count["epsilon"] if neighbours == "add_remove" else 0)) / sets
        sel = math.fsum(c.epsilon for c in charges if "select" in c.label)
        assert sel == pytest.approx(sets * per_set / 3)


def test_release_respects_the_domain_and_finds_the_chain():
    """Fixed seed, ε = 4: the private tree is the true chain x0–x1–x2–x3–x4, and the synthetic
    x0 × x1 table is within 0.06 total variation of the data's."""
    df = _chain(3000, 4)
    dom = dpcore.infer_domain(df).declared()
    rel = dpcore.synthesize(df, "mst", 4.0, seed=9, domain=dom)
    edges = {tuple(e) for e in rel.diagnostics["per_set"][0]["edges"]}
    assert edges == {("x0", "x1"), ("x1", "x2"), ("x2", "x3"), ("x3", "x4")}
    syn = rel.sets[0]
    assert list(syn.columns) == dom.names and len(syn) == rel.record_count["value"]
    for a in dom.attributes:
        assert set(syn[a.name].astype(str)) <= {str(v) for v in a.levels}
    px = df.groupby(["x0", "x1"]).size() / len(df)
    py = syn.groupby(["x0", "x1"]).size() / len(syn)
    assert 0.5 * px.sub(py, fill_value=0).abs().sum() < 0.06


def test_options_and_preview():
    df = _chain(100, 0, 4)
    dom = dpcore.infer_domain(df).declared()
    with pytest.raises(OptionError, match="unknown option"):
        dpcore.synthesize(df, "mst", 1.0, domain=dom, rounds=3)
    pv = dpcore.preview(df, "mst", 1.0, domain=dom, neighbours="replace")
    m = pv.margins
    assert len(m) == 4 + 3 + 3
    assert m["epsilon"].sum() == pytest.approx(1.0)
    one = m[m["table"].str.startswith("one-way")]
    assert one["noise_scale"].to_numpy() == pytest.approx(2.0 / (1.0 / 12))


def test_cli_release_with_mst(tmp_path, capsys):
    from dpcore.cli.commands import main
    df = _chain(200, 3, 4)
    src = tmp_path / "t.csv"
    df.to_csv(src, index=False)
    code = main(["synth", str(src), "--out", str(tmp_path / "out"), "--method", "mst", "--seed", "1",
                 "--neighbours", "replace"])
    text = capsys.readouterr().out
    assert code == 0, text
    assert "ε spent: 1 of 1" in text and (tmp_path / "out" / "manifest.json").exists()


def test_the_final_fit_is_mirror_descent_by_default_and_ipf_on_request():
    """MST's ``estimator="auto"``: mirror descent under pure ε (changed on purpose from IPF after the
    corpus rerun; byte for byte the explicit ``mirror_descent`` release) and under (ε, δ);
    post-processing either way: the same seed charges the same ledger,
    and the mirror-descent model fits the noisy margins at least as well (its weighted loss ≤ IPF's)."""
    from dpcore.estimate.junction_tree import JunctionTreeIPF
    from dpcore.estimate.mirror_descent import LossTerms, MirrorDescent
    from dpcore.measure.margins import NoisyMargin

    rng = np.random.default_rng(8)
    n = 600
    a = rng.integers(0, 3, n)
    b = (a + rng.integers(0, 2, n)) % 3
    c = (b + (rng.random(n) < 0.2)) % 2
    df = pd.DataFrame({"a": [f"a{v}" for v in a], "b": [f"b{v}" for v in b], "c": [f"c{v}" for v in c],
                       "d": rng.choice(["x", "y", "z", "w"], n)})
    dom = dpcore.infer_domain(df).declared()
    pure = dpcore.synthesize(df, "mst", 1.0, seed=4, domain=dom)
    assert pure.options["estimator"] == "mirror_descent"
    assert pure.diagnostics["per_set"][0]["estimator"] == "mirror_descent"
    assert pure.sets[0].equals(dpcore.synthesize(df, "mst", 1.0, seed=4, domain=dom,
                                                 estimator="mirror_descent").sets[0])
    pure_ipf = dpcore.synthesize(df, "mst", 1.0, seed=4, domain=dom, estimator="ipf")
    assert pure_ipf.options["estimator"] == "ipf" and pure_ipf.ledger.to_dict() == pure.ledger.to_dict()
    z = dpcore.synthesize(df, "mst", 1.0, seed=4, domain=dom, delta=1e-9)
    z_ipf = dpcore.synthesize(df, "mst", 1.0, seed=4, domain=dom, delta=1e-9, estimator="ipf")
    assert z.options["estimator"] == "mirror_descent" and z_ipf.options["estimator"] == "ipf"
    assert z.ledger.to_dict() == z_ipf.ledger.to_dict()
    with pytest.raises(OptionError, match="estimator"):
        dpcore.synthesize(df, "mst", 1.0, domain=dom, estimator="lbfgs")
    # the loss of the two fits on the same noisy, inconsistent margins (a negative count included)
    noisy = [NoisyMargin((0,), [210, 190, 230], 400.0),
             NoisyMargin((0, 1), [[110, 90, 5], [0, 95, 100], [120, 2, 98]], 400.0),
             NoisyMargin((1, 2), [[150, 80], [120, 70], [140, -20]], 400.0)]
    shape = (3, 3, 2)
    ipf_model, _ = JunctionTreeIPF(max_sweeps=50).fit(shape, noisy, 600.0)
    md_model, _ = MirrorDescent(start_model=ipf_model).fit(shape, noisy, 600.0)
    terms = LossTerms.of(md_model.tree, noisy)
    md_loss = terms.loss_and_gradient(md_model.tree, md_model.mu)[0]
    assert md_loss < terms.loss_and_gradient(ipf_model.tree, ipf_model.mu)[0]
