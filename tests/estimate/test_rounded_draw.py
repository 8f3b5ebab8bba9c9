"""The controlled-rounding draw of a junction-tree model ([privacy-definitions] targets; AIM, MST,
ipf's junction tree): :class:`dpcore.estimate.draws.TreeCountDraw`.

Its stated law (docs/engines.md, "The rounded draw"): exactly n records; every group's count
within 1 of k·p (k the records of its separator cell, p the model's conditional); every clique
cell's count unbiased, E = n·P(cell); the matching of the clique tables unbiased (every record of
a separator cell gets each value with probability its share) and balanced (the records sorted by
what was drawn before get their values evenly interleaved). Each statistical test has fixed seeds and a stated
tolerance, and is shown to reject what it must tell apart (an i.i.d. draw's spread, a biased
rounding).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.estimate.draws import (
    TreeCountDraw,
    _group_sizes,
    _layout,
    controlled_round,
    model_draw,
    part_sizes,
    records,
)
from dpcore.estimate.junction_tree import DecomposableModel

SHAPE = (3, 4, 3, 2, 3)
N = 997


def _margin(codes: np.ndarray, axes) -> np.ndarray:
    idx = np.ravel_multi_index(tuple(codes[:, a] for a in axes), [SHAPE[a] for a in axes])
    return np.bincount(idx, minlength=int(np.prod([SHAPE[a] for a in axes]))).reshape([SHAPE[a] for a in axes])


@pytest.fixture(scope="module")
def model():
    """A hand-built chain a–b–c–e (three cliques, two of them below the root) and an attribute d
    of its own (joined by an empty separator), with irregular probabilities and a few zero cells."""
    rng = np.random.default_rng(7)
    p_ab = rng.dirichlet(np.ones(12)).reshape(3, 4)
    p_ab[2, 3] = 0.0
    p_ab /= p_ab.sum()
    c_given_b = rng.dirichlet(np.ones(3), size=4)
    c_given_b[1, 0] = 0.0
    c_given_b /= c_given_b.sum(1, keepdims=True)
    e_given_c = rng.dirichlet(np.ones(3), size=3)
    p_bc = p_ab.sum(0)[:, None] * c_given_b
    p_ce = p_bc.sum(0)[:, None] * e_given_c
    targets = {(0, 1): p_ab, (1, 2): p_bc, (2, 4): p_ce, (3,): np.array([0.37, 0.63])}
    m, info = DecomposableModel.fit(SHAPE, targets, 1.0, tol=1e-12, max_sweeps=100)
    assert info["converged"] and len(m.tree.cliques) == 4
    return m


def _table(draw, c: int) -> np.ndarray:
    """Clique c's counts with its axes in attribute order (the draw keeps them as (separator, rest))."""
    sep, rest = _layout(draw.tree, c)
    return np.transpose(draw.counts[c].reshape([SHAPE[a] for a in sep + rest]), np.argsort([*sep, *rest]))


def _expected(model, clique) -> np.ndarray:
    """n·P(clique cell) under the model."""
    return N * model.marginal(clique) / model.total


def test_controlled_round_rows_bounds_and_unbiased():
    """Rows sum to k; each cell is floor(k·q) or one more; a cell of weight 0 gets nothing; a row of no
    weight is spread uniformly; the mean over 4000 seeds is within 0.04 of k·q (4.5 standard errors
    of a 0/1 remainder, sd ≤ 1/2). A biased rounding (largest remainder) misses k·q by far more."""
    k = np.array([7, 0, 13, 25, 4])
    w = np.array([[0.1, 0.35, 0.0, 0.2, 0.35], [1, 2, 3, 4, 5], [0.3, 0.3, 0.3, 0.05, 0.05],
                  [0.13, 0.17, 0.19, 0.23, 0.28], [0, 0, 0, 0, 0]], dtype=float)
    q = np.where(w.sum(1, keepdims=True) > 0, w / np.maximum(w.sum(1, keepdims=True), 1e-300), 0.2)
    want = k[:, None] * q
    total = np.zeros_like(want)
    for s in range(4000):
        got = controlled_round(k, w, np.random.default_rng(s))
        assert (got.sum(1) == k).all()
        assert ((got == np.floor(want)) | (got == np.floor(want) + 1)).all()
        assert got[0, 2] == 0
        total += got
    err = np.abs(total / 4000 - want)
    assert err.max() < 0.04
    # power: largest-remainder rounding (deterministic) is off k·q by much more than the tolerance
    base = np.floor(want)
    lr = base.copy()
    for g in range(len(k)):
        lr[g, np.argsort(-(want[g] - base[g]), kind="stable")[: int(k[g] - base[g].sum())]] += 1
    assert np.abs(lr - want).max() > 0.25


def test_the_draw_has_exactly_n_records_and_the_stated_law(model):
    """Over 1500 seeds: n records; at the root every cell within 1 of n·P; below it every group's
    counts within 1 of k_s·P(r | s) (k_s from the parent's rounded table); every clique cell's mean
    within 0.15 of n·P (≥ 5 standard errors here: the spread of a cell is ≤ 1.3 records). An i.i.d.
    draw from the same model breaks the spread bound (its cells move by √(nP) ≈ 5 records)."""
    t = model.tree
    seeds = 1500
    sums = [np.zeros(tab.shape) for tab in model.mu]
    sq = [np.zeros(tab.shape) for tab in model.mu]
    for s in range(seeds):
        d = TreeCountDraw.from_model(model, N, np.random.default_rng(s))
        assert d.n == N
        for c in t.order:
            sep, rest = _layout(t, c)
            cax = t.cliques[c]
            tab = d.counts[c]
            assert (tab >= 0).all() and tab.sum() == N
            k = _group_sizes(t, d.counts, c)
            mu = np.transpose(model.mu[c], [cax.index(a) for a in sep + rest]).reshape(tab.shape)
            q = mu / mu.sum(1, keepdims=True)
            assert (np.abs(tab - k[:, None] * q) < 1).all(), cax  # the rounding bound, per group
            full = _table(d, c)
            sums[c] += full
            sq[c] += full.astype(float) ** 2
    worst_sd = 0.0
    for c, cax in enumerate(t.cliques):
        mean = sums[c] / seeds
        sd = np.sqrt(np.maximum(sq[c] / seeds - mean**2, 0))
        worst_sd = max(worst_sd, float(sd.max()))
        assert np.abs(mean - _expected(model, cax)).max() < 0.15, cax  # unbiased
    assert worst_sd < 1.3
    # the test tells an i.i.d. draw apart: its cells spread by several records
    iid = model.sample(N, np.random.default_rng(0))
    assert max(np.abs(_margin(iid, cax) - _expected(model, cax)).max() for cax in t.cliques) > 3


@pytest.mark.parametrize("exact_deal", [False, True])
def test_records_realise_the_tables_whole_in_chunks_and_in_partitions(model, exact_deal, monkeypatch):
    """The records' clique margins are the draw's tables, whether the set is drawn whole, in chunks of
    50 records or in 3 partitions (each partition of its public size); the tables dealt by numpy's
    hypergeometric sampler or, above its population limit, by the exact :func:`deal`."""
    import dpcore.estimate.draws as D

    if exact_deal:
        monkeypatch.setattr(D, "_HYPERGEOMETRIC_MAX", 1)
    d = TreeCountDraw.from_model(model, N, np.random.default_rng(1))
    t = model.tree
    whole = records(d, np.random.default_rng(2), len(SHAPE))
    chunked = records(d, np.random.default_rng(3), len(SHAPE), chunk_rows=50)
    parts = [d.part(k, 3, seed=11, set_index=0) for k in range(3)]
    assert [p.n for p in parts] == part_sizes(N, 3)
    joined = np.vstack([records(p, np.random.default_rng(20 + k), len(SHAPE), chunk_rows=100)
                        for k, p in enumerate(parts)])
    for codes in (whole, chunked, joined):
        assert codes.shape == (N, len(SHAPE))
        for c in t.order:
            assert np.array_equal(_margin(codes, t.cliques[c]), _table(d, c))


def _ac_expectation(d) -> np.ndarray:
    """Σ_b N_ab·N_bc / N_b: the (a, c) count, which no clique holds, when every record of separator
    cell b gets value c with probability N_bc / N_b."""
    t = d.tree
    ab = _table(d, t.home((0, 1))).astype(float)
    bc = _table(d, t.home((1, 2))).astype(float)
    return ab @ (bc / np.maximum(bc.sum(1, keepdims=True), 1))


def test_the_matching_is_unbiased_whole_and_in_chunks(model, monkeypatch):
    """Given the tables, every record of a separator cell gets each value with probability its count
    over the cell's records, so the (a, c) count has mean Σ_b N_ab·N_bc / N_b. Drawn whole and in
    chunks of 200 (800 seeds each), both means are within 4.5 standard errors (+ 0.02) of it in
    every cell; and a matching that is not unbiased (each separator cell's values laid in blocks, in
    value order, onto its records sorted by the attributes drawn before: the interleaving and the
    rotation left out) misses it by more than a record."""
    import dpcore.estimate.draws as D

    d = TreeCountDraw.from_model(model, N, np.random.default_rng(5))
    expect = _ac_expectation(d)
    for chunk_rows in (10**6, 200):
        runs = np.array([_margin(records(d, np.random.default_rng(100 + s), len(SHAPE), chunk_rows=chunk_rows), (0, 2))
                         for s in range(800)])
        mean, se = runs.mean(0), runs.std(0) / np.sqrt(len(runs))
        assert (np.abs(mean - expect) <= 4.5 * se + 0.02).all(), chunk_rows
        assert se.max() < 0.3  # the tolerance is tight: well under one record

    def blocks(tab, rng):  # the values of each row in value order, no rotation
        rows, width = tab.shape
        return np.repeat(np.tile(np.arange(width), rows), tab.reshape(-1))

    monkeypatch.setattr(D, "_interleaved", blocks)
    fixed = _margin(records(d, np.random.default_rng(0), len(SHAPE)), (0, 2))
    assert np.abs(fixed - expect).max() > 1.0


def test_the_matching_is_balanced(model, monkeypatch):
    """Every draw's (a, c) table is within 3 records of Σ_b N_ab·N_bc / N_b in every cell (300 seeds;
    measured: at most 2.45, median 1.2): the records of a separator cell are sorted by what was drawn
    before and get their values evenly interleaved. A uniformly random matching (the records of a
    separator cell in random order, no sort keys) scatters by several records: it breaks the bound
    in most draws (measured: 98 % of draws, up to 19.5 records)."""
    import dpcore.estimate.draws as D

    d = TreeCountDraw.from_model(model, N, np.random.default_rng(5))
    expect = _ac_expectation(d)

    def worst(seeds):
        return np.array([np.abs(_margin(records(d, np.random.default_rng(100 + s), len(SHAPE)), (0, 2)) - expect).max()
                         for s in seeds])

    assert worst(range(300)).max() <= 3.0
    monkeypatch.setattr(D, "_balance_keys", lambda shape, sep, drawn, rng: list(sep))
    random_matching = worst(range(60))
    assert np.mean(random_matching > 3.0) > 0.8


def test_interleaved_rows_are_exact_in_law_and_even_in_every_run():
    """:func:`_interleaved`: each row holds its counts; over 6000 seeds every position holds value r
    with frequency within 4.5 standard errors of count(r)/k (the uniform rotation); and every prefix
    of the unrotated row (the rotation's offset 0) holds each value within (R + 1)/2 of its share
    (R values), the midpoint order's bound. Without the rotation a position's value is fixed: the
    law test would reject it."""
    import dpcore.estimate.draws as D

    tab = np.array([[3, 1, 2, 0], [0, 0, 0, 0], [5, 4, 1, 7]])
    k = tab.sum(1)
    freq = [np.zeros((kk, tab.shape[1])) for kk in k]
    seeds = 6000
    for s in range(seeds):
        seq = D._interleaved(tab, np.random.default_rng(s))
        assert len(seq) == tab.sum()
        start = 0
        for g, kk in enumerate(k):
            row = seq[start:start + kk]
            assert (np.bincount(row, minlength=tab.shape[1]) == tab[g]).all()
            freq[g][np.arange(kk), row] += 1
            start += kk
    for g, kk in enumerate(k):
        if kk == 0:
            continue
        p = tab[g] / kk
        se = np.sqrt(p * (1 - p) / seeds) + 1e-12
        assert (np.abs(freq[g] / seeds - p) <= 4.5 * se + 1e-9).all(), g

    class NoShift(np.random.Generator):
        def integers(self, low, high=None, *args, **kwargs):
            return np.zeros(np.shape(high if high is not None else low), dtype=np.int64)

    seq = D._interleaved(tab, NoShift(np.random.PCG64(0)))
    row = seq[k[0] + k[1]:]
    for length in range(1, k[2] + 1):
        got = np.bincount(row[:length], minlength=tab.shape[1])
        assert (np.abs(got - length * tab[2] / k[2]) <= (tab.shape[1] + 1) / 2).all(), length
    # unrotated, a position's value is the same in every draw: the law check above would reject it
    again = D._interleaved(tab, NoShift(np.random.PCG64(1)))
    assert np.array_equal(again, seq) and abs(float(seq[0] == 0) - tab[0, 0] / k[0]) > 4.5 * 0.01


def test_model_draw_sample_draws_nothing_now(model):
    """``sample`` keeps the i.i.d. draw and takes nothing from the generator before the records
    (so releases made before the rounded draw are unchanged); ``round`` rounds now."""
    rng = np.random.default_rng(3)
    before = rng.bit_generator.state
    draw = model_draw(model, N, "sample", rng)
    assert rng.bit_generator.state == before and draw.n == N
    assert isinstance(model_draw(model, N, "round", rng), TreeCountDraw)
    with pytest.raises(ValueError, match="synthesis"):
        model_draw(model, N, "nearest", rng)


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(4)
    n = 600
    a = rng.integers(0, 3, n)
    b = (a + rng.integers(0, 2, n)) % 3
    c = (b + rng.integers(0, 2, n)) % 4
    return pd.DataFrame({"a": np.array(list("xyz"))[a], "b": np.array(list("pqr"))[b],
                         "c": np.array(list("uvwt"))[c], "d": np.array(["0", "1"])[rng.integers(0, 2, n)]})


@pytest.mark.parametrize("method", ["aim", "mst"])
def test_an_epsilon_delta_release_rounds_by_default_and_a_pure_one_samples(method, table):
    dom = dpcore.infer_domain(table).declared()
    z = dpcore.synthesize(table, method, 1.0, seed=3, domain=dom, delta=1e-9)
    assert z.options["synthesis"] == "round" and z.manifest()["options"]["synthesis"] == "round"
    z_round = dpcore.synthesize(table, method, 1.0, seed=3, domain=dom, delta=1e-9, synthesis="round")
    z_sample = dpcore.synthesize(table, method, 1.0, seed=3, domain=dom, delta=1e-9, synthesis="sample")
    assert z.sets[0].equals(z_round.sets[0]) and not z.sets[0].equals(z_sample.sets[0])
    assert z_sample.options["synthesis"] == "sample"
    assert len(z.sets[0]) == z.record_count["value"]
    p = dpcore.synthesize(table, method, 1.0, seed=3, domain=dom)
    assert p.options["synthesis"] == "sample" and p.manifest()["options"]["synthesis"] == "sample"
    p_sample = dpcore.synthesize(table, method, 1.0, seed=3, domain=dom, synthesis="sample")
    p_auto = dpcore.synthesize(table, method, 1.0, seed=3, domain=dom, synthesis="auto")
    assert p.sets[0].equals(p_sample.sets[0]) and p.sets[0].equals(p_auto.sets[0])
    assert p.ledger.to_dict() == p_sample.ledger.to_dict()
    # opt-in under pure ε: the same measurements (ledger), the records rounded
    p_round = dpcore.synthesize(table, method, 1.0, seed=3, domain=dom, synthesis="round")
    assert p_round.options["synthesis"] == "round" and not p.sets[0].equals(p_round.sets[0])
    assert p_round.ledger.to_dict() == p.ledger.to_dict()


def test_a_rounded_release_keeps_its_measured_one_way_margins_close(table):
    """AIM at a large ε with the rounded draw: every one-way margin of the set is within 1 + (noise)
    of the data's (the one-way margins are measured; rounding adds at most 1 per cell at the root,
    a little more below it), far closer than an i.i.d. set of 600 records (±12 per cell)."""
    dom = dpcore.infer_domain(table).declared()
    rel = dpcore.synthesize(table, "aim", 1e4, seed=1, domain=dom, synthesis="round", neighbours="replace")
    s = rel.sets[0]
    assert len(s) == len(table)
    for col in table.columns:
        diff = (s[col].value_counts() - table[col].value_counts()).fillna(0).abs()
        assert diff.max() <= 3, (col, diff.to_dict())


def test_bad_synthesis_names_the_option(table):
    dom = dpcore.infer_domain(table).declared()
    with pytest.raises(dpcore.errors.OptionError, match="synthesis must be one of auto, sample, round"):
        dpcore.synthesize(table, "aim", 1.0, seed=1, domain=dom, synthesis="nearest")
