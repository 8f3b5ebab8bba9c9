"""AIM's budget rules of [aim-parity] (docs/methods/aim.md#rounds, #the-workload-at-once): the rounds T and the
workload at once are chosen from public facts and the released record count only, by hand; the ledger still
totals the budget exactly, charge by charge, under both definitions and both neighbour notions; seeded releases
are reproducible."""
import math
import statistics

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.privacy.budget import Epsilon, Rho
from dpcore.privacy.definitions import PureDP, ZeroConcentratedDP
from dpcore.privacy.neighbours import Neighbours
from dpcore.synthesizers import aim as A
from dpcore.synthesizers import aim_budget as R

NB = Neighbours("add_remove")
ZCDP = ZeroConcentratedDP(1e-9)


def _levels_domain(levels):
    cols = {f"x{i}": [str(v % k) for v in range(max(levels))] for i, k in enumerate(levels)}
    return dpcore.infer_domain(pd.DataFrame(cols)).declared()


def _table(n, levels=(3, 3, 2, 2, 4), seed=0):
    """Attributes that follow each other (x1 follows x0, x3 follows x2), over the given levels."""
    rng = np.random.default_rng(seed)
    cols = {}
    for i, k in enumerate(levels):
        base = rng.integers(0, k, n)
        if i % 2 == 1:
            prev = cols[f"x{i - 1}"].astype(int) % k
            base = np.where(rng.random(n) < 0.8, prev, base)
        cols[f"x{i}"] = base.astype(str)
    df = pd.DataFrame(cols)
    return df, dpcore.infer_domain(df).declared()


def _discrete_laplace_abs(scale):
    a = math.exp(-1.0 / scale)
    return 2 * a / (1 - a * a)


@pytest.mark.parametrize("levels", [(3, 3, 2, 2, 4), (12, 6, 2, 2, 2, 9, 5)])
@pytest.mark.parametrize("n", [150, 2_000, 60_000])
@pytest.mark.parametrize("eps", [0.3, 1.0, 3.0])
def test_the_rounds_are_chosen_from_public_facts_by_hand_under_pure_epsilon(levels, n, eps):
    """T = 2·d when the median workload margin measured in a round at the default T = 4·d (0.9·ε/T, discrete
    Laplace of scale T/(0.9·ε)) has expected L1 noise above 0.2·ñ; otherwise 4·d. ñ and the domain only."""
    dom = _levels_domain(levels)
    d = len(levels)
    opts = A.resolve(dom)
    assert opts.rounds is None and R.default_rounds(opts, dom) == 4 * d
    cells = statistics.median(a * b for i, a in enumerate(levels) for b in levels[i + 1:])
    share = _discrete_laplace_abs(4 * d / (0.9 * eps)) * cells / n
    assert R.round_noise_share(opts, dom, Epsilon(eps), NB, n, PureDP()) == pytest.approx(share, rel=1e-12)
    want = 2 * d if share > R.THIN_ROUND_SHARE else 4 * d
    assert R.set_rounds(opts, dom, Epsilon(eps), NB, n, PureDP()) == want
    # a curator's rounds are kept, whatever the facts
    given = A.resolve(dom, rounds=3 * d)
    assert given.rounds == 3 * d and R.set_rounds(given, dom, Epsilon(eps), NB, n, PureDP()) == 3 * d


@pytest.mark.parametrize("n", [150, 2_000, 60_000])
def test_the_rounds_are_chosen_by_hand_under_zcdp(n):
    """The same rule in ρ: the round's discrete Gaussian has σ = 1/√(2·0.9·ρ/T), E|Z| = √(2/π)·σ."""
    levels = (12, 6, 2, 2, 2, 9, 5)
    dom = _levels_domain(levels)
    d = len(levels)
    opts = A.for_zcdp(A.resolve(dom), ZCDP, {}, dom)
    rho = 0.0142
    sigma = 1 / math.sqrt(2 * 0.9 * rho / (4 * d))
    cells = statistics.median(a * b for i, a in enumerate(levels) for b in levels[i + 1:])
    share = math.sqrt(2 / math.pi) * sigma * cells / n
    assert R.round_noise_share(opts, dom, Rho(rho), NB, n, ZCDP) == pytest.approx(share, rel=1e-12)
    assert R.set_rounds(opts, dom, Rho(rho), NB, n, ZCDP) == (2 * d if share > R.THIN_ROUND_SHARE else 4 * d)


def test_a_release_reads_the_released_count_not_the_data():
    """Two tables with different records but the same released count (replace neighbours: n public) and domain get
    the same T; a short table gets fewer rounds than a long one; the ledger totals ε either way."""
    short1, dom = _table(120, seed=1)
    short2, _ = _table(120, seed=2)
    long, _ = _table(40_000, seed=1)
    kw = dict(domain=dom, neighbours="replace", whole_table="never", workload_first="never")
    t = [dpcore.synthesize(df, "aim", 1.0, seed=3, **kw) for df in (short1, short2, long)]
    T = [r.diagnostics["per_set"][0]["T"] for r in t]
    d = len(dom)
    assert T == [2 * d, 2 * d, 4 * d]
    for r in t:
        assert math.isclose(math.fsum(c.epsilon for _, c in r.ledger.charges()), 1.0, abs_tol=1e-12)


def test_at_once_margins_are_the_workload_smallest_first_within_the_cell_cap(monkeypatch):
    dom = _levels_domain((3, 3, 2, 2, 4))
    opts = A.resolve(dom)
    first = R.at_once_margins(opts, dom)
    assert sorted(first) == sorted((i, j) for i in range(5) for j in range(i + 1, 5))  # 144 cells fit
    sizes = [math.prod(dom.shape[a] for a in r) for r in first]
    assert sizes == sorted(sizes)
    # a cap of 24 cells: the junction tree of the kept margins stays within it; attributes left out are one-way
    monkeypatch.setattr(R, "AT_ONCE_CELLS", 24)
    capped = R.at_once_margins(opts, dom)
    pairs = [r for r in capped if len(r) == 2]
    from dpcore.estimate.junction_tree import model_cells
    assert model_cells(dom.shape, pairs) <= 24 and len(pairs) < 10
    covered = {a for r in pairs for a in r}
    assert [r for r in capped if len(r) == 1] == [(j,) for j in range(5) if j not in covered]
    # a workload of named margins: those, smallest first
    w = A.resolve(dom, workload="x0,x4;x2,x3")
    monkeypatch.setattr(R, "AT_ONCE_CELLS", 2**16)
    assert R.at_once_margins(w, dom) == [(2, 3), (0, 4), (1,)]


def test_workload_first_auto_is_decided_from_public_facts_by_hand():
    """auto: the workload at once when, on the median margin measured at once (WORKLOAD_SHARE of the budget split
    evenly), the expected L1 noise is at most WORKLOAD_NOISE_SHARE of ñ, and the workload has at least 2·d
    margins to measure."""
    dom = _levels_domain((12, 6, 2, 2, 2, 9, 5))
    opts = A.resolve(dom)
    first = R.at_once_margins(opts, dom)
    for n in (500, 5_000, 50_000, 500_000):
        for eps in (0.3, 1.0, 3.0):
            scale = len(first) / (R.WORKLOAD_SHARE * eps)
            cells = statistics.median(math.prod(dom.shape[a] for a in r) for r in first)
            share = _discrete_laplace_abs(scale) * cells / n
            assert R.workload_noise(opts, dom, Epsilon(eps), NB, n, PureDP()) == pytest.approx(share, rel=1e-12)
            assert R.workload_first(opts, dom, Epsilon(eps), NB, n, PureDP()) is (share <= R.WORKLOAD_NOISE_SHARE)
    assert R.workload_first(A.resolve(dom, workload_first="always"), dom, Epsilon(1.0), NB, 10) is True
    assert R.workload_first(A.resolve(dom, workload_first="never"), dom, Epsilon(1.0), NB, 10**9) is False
    # a one-way workload has nothing to measure at once beyond the one-way margins
    assert R.workload_first(A.resolve(dom, workload="oneway"), dom, Epsilon(1.0), NB, 10**9) is False


@pytest.mark.parametrize("neighbours", ["add_remove", "replace"])
@pytest.mark.parametrize("delta", [None, 1e-9])
def test_the_workload_at_once_is_charged_evenly_and_the_ledger_totals_the_budget(neighbours, delta):
    df, dom = _table(3_000)
    rel = dpcore.synthesize(df, "aim", 1.0, sets=2, seed=4, domain=dom, neighbours=neighbours, delta=delta,
                            workload_first="always", whole_table="never")
    unit = "epsilon" if delta is None else "rho"
    charges = list(rel.ledger.charges())
    total = math.fsum(getattr(c, unit) for _, c in charges)
    assert total == pytest.approx(rel.ledger.spent.value, rel=1e-12)
    count = math.fsum(getattr(c, unit) for p, c in charges if not p.startswith("release (aim)/set"))
    per_set = (rel.ledger.spent.value - count) / 2
    K = 10  # all two-way margins of 5 attributes
    for s in (1, 2):
        set_charges = [c for p, c in charges if p.startswith(f"release (aim)/set {s}")]
        once = [c for c in set_charges if c.label.startswith("at once")]
        assert len(once) == K
        assert all(getattr(c, unit) == pytest.approx(R.WORKLOAD_SHARE * per_set / K, rel=1e-12) for c in once)
        assert not any(c.label.startswith("one-way") for c in set_charges)
        assert any(c.label.startswith("round") for c in set_charges)
        assert math.fsum(getattr(c, unit) for c in set_charges) == pytest.approx(per_set, rel=1e-12)
    diag = rel.diagnostics["per_set"][0]
    assert diag["workload_first"] is True and diag["at_once"] == K


@pytest.mark.parametrize("options", [{}, {"workload_first": "always"}, {"workload_first": "never"}])
@pytest.mark.parametrize("delta", [None, 1e-9])
def test_seeded_releases_are_reproducible(options, delta):
    df, dom = _table(2_000)
    a, b = (dpcore.synthesize(df, "aim", 1.0, seed=11, domain=dom, delta=delta, whole_table="never", **options)
            for _ in range(2))
    pd.testing.assert_frame_equal(a.sets[0], b.sets[0])
    la = [(p, c.label, c.epsilon, c.rho) for p, c in a.ledger.charges()]
    lb = [(p, c.label, c.epsilon, c.rho) for p, c in b.ledger.charges()]
    assert la == lb


def test_the_preview_states_the_workload_at_once():
    df, dom = _table(3_000)
    pv = dpcore.preview(df, "aim", 1.0, domain=dom, neighbours="replace", workload_first="always",
                        whole_table="never")
    rows = pv.margins
    once = rows[rows["table"].str.startswith("at once")]
    assert len(once) == 10
    assert once["epsilon"].to_numpy() == pytest.approx(np.full(10, R.WORKLOAD_SHARE * 1.0 / 10))
    assert not rows["table"].str.startswith("one-way").any()


def test_the_rules_constants_are_the_documented_ones():
    """docs/methods/aim.md#rounds and #the-workload-at-once state these numbers; a change must change both."""
    assert (R.FEW_ROUNDS_PER_ATTRIBUTE, R.THIN_ROUND_SHARE) == (2, 0.2)
    assert (R.WORKLOAD_SHARE, R.WORKLOAD_NOISE_SHARE, R.WORKLOAD_MARGINS_PER_ATTRIBUTE) == (0.9, 0.04, 2)
    assert (R.ROUNDS_PER_ATTRIBUTE, R.ZCDP_ROUNDS_PER_ATTRIBUTE, R.AT_ONCE_CELLS) == (4, 4, 2**16)


@pytest.mark.parametrize("levels,at_once", [((3, 4, 2, 5), False), ((3, 4, 2, 5, 2), True)])
def test_few_margins_are_left_to_the_rounds(levels, at_once):
    """4 attributes have 6 two-way margins, fewer than 2·4: never at once, however long the table; 5 have 10 = 2·5:
    at once on a long table (pure ε = 1, 10 margins at 0.09 each: E|Z| ≈ 22 per cell, ≤ 20 cells, n = 10⁷)."""
    dom = _levels_domain(levels)
    opts = A.resolve(dom, whole_table="never")
    assert R.workload_noise(opts, dom, Epsilon(1.0), NB, 10**7, PureDP()) < 1e-4
    assert R.workload_first(opts, dom, Epsilon(1.0), NB, 10**7, PureDP()) is at_once
    plan = R.plan(opts, dom, Epsilon(1.0), NB, 10**7, PureDP())
    assert plan.rounds == 4 * len(levels) and (len(plan.at_once) == 10) is at_once


def test_the_workload_at_once_under_zcdp_by_hand():
    """ρ: each of the K margins at 0.9·ρ/K has σ = 1/√(2·0.9·ρ/K) (Δ₂ = 1, add/remove); E|Z| = √(2/π)·σ."""
    levels = (12, 6, 2, 2, 2, 9, 5)
    dom = _levels_domain(levels)
    opts = A.for_zcdp(A.resolve(dom), ZCDP, {}, dom)
    K = 21  # the 21 two-way margins: their junction tree is the whole table, 25,920 cells ≤ 2¹⁶
    assert len(R.at_once_margins(opts, dom)) == K
    rho = 0.0142
    sigma = 1 / math.sqrt(2 * 0.9 * rho / K)
    cells = statistics.median(a * b for i, a in enumerate(levels) for b in levels[i + 1:])  # 12
    for n, want in ((5_000, False), (60_000, True)):
        share = math.sqrt(2 / math.pi) * sigma * cells / n  # 0.0576 at 5,000; 0.0048 at 60,000
        assert R.workload_noise(opts, dom, Rho(rho), NB, n, ZCDP) == pytest.approx(share, rel=1e-12)
        assert R.workload_first(opts, dom, Rho(rho), NB, n, ZCDP) is want


def test_the_plan_comes_first_from_the_whole_table_rule():
    """A tiny domain (2 × 2 × 3, pure ε) is measured whole whatever the count; the plan then has no rounds."""
    dom = _levels_domain((2, 2, 3))
    opts = A.resolve(dom)
    for n in (10, 10**7):
        assert R.plan(opts, dom, Epsilon(1.0), NB, n, PureDP()) == R.BudgetPlan(True, 0)


@pytest.mark.parametrize("delta", [None, 1e-9])
def test_a_short_table_spends_its_one_way_margins_at_twice_the_round_budget(delta):
    """150 records, 5 attributes: T = 2·d = 10 by the rule, so each one-way margin is charged 0.9·b/10 (b = ε, or
    the release's ρ less the count's share); the ledger totals the budget, charge by charge."""
    df, dom = _table(150)
    rel = dpcore.synthesize(df, "aim", 1.0, seed=2, domain=dom, delta=delta, whole_table="never")
    diag = rel.diagnostics["per_set"][0]
    assert diag["T"] == 10 and diag["workload_first"] is False
    unit = "epsilon" if delta is None else "rho"
    charges = list(rel.ledger.charges())
    set_charges = [c for p, c in charges if p.startswith("release (aim)/set 1")]
    per_set = math.fsum(getattr(c, unit) for c in set_charges)
    oneway = [getattr(c, unit) for c in set_charges if c.label.startswith("one-way")]
    assert oneway == pytest.approx([0.9 * per_set / 10] * 5, rel=1e-12)
    assert math.fsum(getattr(c, unit) for _, c in charges) == pytest.approx(rel.ledger.spent.value, rel=1e-12)
    cap = 1.0 if delta is None else ZCDP.budget(Epsilon(1.0)).value
    assert rel.ledger.spent.value == pytest.approx(cap, rel=1e-12)


@pytest.mark.parametrize("delta", [None, 1e-9])
def test_a_long_table_measures_its_workload_at_once(delta):
    """60,000 records, 5 attributes (10 two-way margins of at most 12 cells; the whole table off, as its 144 cells
    would be measured whole under pure ε): the workload at once by the rule;
    its 10 margins charged 0.9·b/10 each, the rounds the rest; the ledger totals the budget under either
    definition. Two tables of that count with different records get the same plan (replace: n public)."""
    a, dom = _table(60_000, seed=1)
    b, _ = _table(60_000, seed=5)
    unit = "epsilon" if delta is None else "rho"
    kw = dict(domain=dom, delta=delta, neighbours="replace", whole_table="never")
    rels = [dpcore.synthesize(df, "aim", 1.0, seed=6, **kw) for df in (a, b)]
    for rel in rels:
        diag = rel.diagnostics["per_set"][0]
        assert diag["workload_first"] is True and diag["at_once"] == 10 and diag["T"] == 20
        set_charges = [c for p, c in rel.ledger.charges() if p.startswith("release (aim)/set 1")]
        per_set = math.fsum(getattr(c, unit) for c in set_charges)
        once = [getattr(c, unit) for c in set_charges if c.label.startswith("at once")]
        assert once == pytest.approx([0.9 * per_set / 10] * 10, rel=1e-12)
        assert math.fsum(getattr(c, unit) for c in set_charges if not c.label.startswith("at once")) == \
            pytest.approx(0.1 * per_set, rel=1e-9)
        cap = 1.0 if delta is None else ZCDP.budget(Epsilon(1.0)).value
        assert math.fsum(getattr(c, unit) for _, c in rel.ledger.charges()) == pytest.approx(cap, rel=1e-12)
    assert [r.diagnostics["per_set"][0]["at_once"] for r in rels] == [10, 10]


def test_the_workload_at_once_needs_to_keep_half_the_workload(monkeypatch):
    """auto measures at once only when the cell cap keeps at least half of the workload's margins: with a cap of
    24 cells, 5 attributes (3, 3, 2, 2, 4) keep fewer than 5 of their 10 pairs, and the rounds keep the budget,
    however long the table (a 15-attribute table of 64,600 records lost 2.5× this way under (ε, δ))."""
    dom = _levels_domain((3, 3, 2, 2, 4))
    opts = A.resolve(dom, whole_table="never")
    assert R.workload_first(opts, dom, Epsilon(1.0), NB, 10**8, PureDP()) is True
    monkeypatch.setattr(R, "AT_ONCE_CELLS", 24)
    pairs = [r for r in R.at_once_margins(opts, dom) if len(r) == 2]
    assert 0 < len(pairs) < 5 and R.AT_ONCE_COVERAGE == 0.5
    assert R.workload_first(opts, dom, Epsilon(1.0), NB, 10**8, PureDP()) is False
    assert R.plan(opts, dom, Epsilon(1.0), NB, 10**8, PureDP()).at_once == ()
