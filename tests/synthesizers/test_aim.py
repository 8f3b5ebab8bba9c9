"""AIM under pure ε-DP (docs/methods/aim.md): the ledger totals ε exactly, the selection score's
sensitivity by brute force over every neighbour of small tables, the budget schedule (rounds,
annealing, last round), releases within the domain, and a fixed-seed utility check."""
import itertools
import math

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.errors import OptionError
from dpcore.measure.margins import margin_counts
from dpcore.privacy.budget import Epsilon, Rho
from dpcore.synthesizers import aim as A

SHAPE = (2, 2, 3)
#: the test tables' domains are tiny (36 cells), where ``whole_table="auto"`` measures the whole table once;
#: the tests of the rounds keep them on
ROUNDS = {"whole_table": "never"}


def _tables(n, cells):
    """Every count table of n records over ``cells`` cells."""
    for c in itertools.combinations_with_replacement(range(cells), n):
        yield np.bincount(np.array(c, dtype=np.int64), minlength=cells)


def _records(table, shape):
    return np.stack(np.unravel_index(np.repeat(np.arange(len(table)), table), shape), axis=1).reshape(-1, len(shape))


def _neighbours(table, notion):
    cells = len(table)
    if notion == "add_remove":
        for c in range(cells):
            t = table.copy()
            t[c] += 1
            yield t
            if table[c] > 0:
                t = table.copy()
                t[c] -= 1
                yield t
    else:
        for a, b in itertools.permutations(range(cells), 2):
            if table[a] > 0:
                t = table.copy()
                t[a] -= 1
                t[b] += 1
                yield t


@pytest.mark.parametrize("notion,hs", [("add_remove", 1.0), ("replace", 2.0)])
def test_quality_score_sensitivity_by_brute_force(notion, hs):
    """|q_r(D) − q_r(D')| ≤ w_r·Δ for every candidate, every table of ≤ 3 records and every neighbour,
    with the model margin and bias held fixed (they are released values); the bound is attained."""
    cand = A.candidates([(0, 1), (0, 2), (1, 2)])
    rng = np.random.default_rng(3)
    random_model = {r: rng.uniform(0, 2, [SHAPE[a] for a in r]) for r in cand}
    # cells alternating 0 and 5: a record leaving a 5-cell and entering a 0-cell moves the L1 error by 2
    tight_model = {r: np.where(np.arange(math.prod(SHAPE[a] for a in r)) % 2, 5.0, 0.0).reshape([SHAPE[a] for a in r])
                   for r in cand}
    bias = {r: rng.uniform(0, 1) for r in cand}
    cells = math.prod(SHAPE)
    for model in (random_model, tight_model):
        worst = {r: 0.0 for r in cand}
        for n in range(4):
            for table in _tables(n, cells):
                X = _records(table, SHAPE)
                base = {r: A.quality(margin_counts(X, SHAPE, r), model[r], cand[r], bias[r]) for r in cand}
                for nb in _neighbours(table, notion):
                    Y = _records(nb, SHAPE)
                    for r in cand:
                        q = A.quality(margin_counts(Y, SHAPE, r), model[r], cand[r], bias[r])
                        worst[r] = max(worst[r], abs(q - base[r]))
        for r, w in cand.items():
            assert worst[r] <= w * hs + 1e-9, (r, worst[r], w * hs)
    for r, w in cand.items():
        assert worst[r] == pytest.approx(w * hs)  # tight: the stated sensitivity is not loose either
    assert A.score_sensitivity(list(cand.values()), hs) == pytest.approx(max(worst.values()))


def test_candidates_are_the_downward_closure_with_aims_weights():
    cand = A.candidates([(0, 1), (1, 2)])
    assert cand == {(0,): 1.0, (1,): 2.0, (0, 1): 3.0, (2,): 1.0, (1, 2): 3.0}


def _table(n=400, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = (a + (rng.random(n) < 0.15)) % 3  # b follows a closely
    c = rng.integers(0, 2, n)
    d = np.where(rng.random(n) < 0.8, c, 1 - c)  # d follows c
    return pd.DataFrame({"a": a.astype(str), "b": b.astype(str), "c": c.astype(str), "d": d.astype(str)})


def _domain(df):
    return dpcore.infer_domain(df).declared()


@pytest.mark.parametrize("neighbours", ["add_remove", "replace"])
@pytest.mark.parametrize("epsilon,sets,rounds", [(1.0, 1, None), (0.3, 2, 5), (3.7, 1, 40)])
def test_ledger_totals_epsilon_exactly(neighbours, epsilon, sets, rounds):
    df = _table()
    opts = {} if rounds is None else {"rounds": rounds}
    rel = dpcore.synthesize(df, "aim", epsilon, sets=sets, seed=1, domain=_domain(df), neighbours=neighbours, **opts)
    assert abs(rel.ledger.epsilon - epsilon) <= 1e-12 * epsilon
    charges = [c for _, c in rel.ledger.charges()]
    assert math.isclose(math.fsum(c.epsilon for c in charges), epsilon, rel_tol=0, abs_tol=1e-12)
    hs = 1.0 if neighbours == "add_remove" else 2.0
    for c in charges:
        if c.label.startswith("one-way") or "margin" in c.label and "select" not in c.label:
            assert c.mechanism.startswith("discrete_laplace") and c.sensitivity == hs
        if "select" in c.label:
            assert c.mechanism.startswith("exponential") and c.sensitivity == 6.0 * hs  # max weight 2(d−1) = 6
        assert c.neighbours == rel.neighbours.label


def test_budget_schedule_rounds_annealing_and_the_last_round():
    """Per set: one-way margins at 0.9·ε/T each; each round 0.1/0.9 of its budget; a round's budget is
    the previous one or its double; the last round takes exactly what is left."""
    df = _table(600, 2)
    eps, T = 1.0, 12
    rel = dpcore.synthesize(df, "aim", eps, seed=5, domain=_domain(df), **ROUNDS, neighbours="replace", rounds=T)
    set1 = [c for p, c in rel.ledger.charges() if p.startswith("release (aim)/set 1")]
    oneway = [c for c in set1 if c.label.startswith("one-way")]
    assert len(oneway) == 4 and all(c.epsilon == pytest.approx(0.9 * eps / T) for c in oneway)
    rounds = {}
    for c in set1:
        if c.label.startswith("round"):
            rounds.setdefault(int(c.label.split(":")[0].split()[1]), []).append(c.epsilon)
    budgets = [sum(v) for _, v in sorted(rounds.items())]
    for (_t, (sel, msr)) in sorted(rounds.items()):
        assert sel == pytest.approx(0.1 * (sel + msr))
    for prev, cur in zip(budgets, budgets[1:-1]):
        assert cur == pytest.approx(prev) or cur == pytest.approx(2 * prev)
    spent_before_last = math.fsum(c.epsilon for c in oneway) + math.fsum(budgets[:-1])
    assert budgets[-1] == pytest.approx(eps - spent_before_last, abs=1e-12)
    assert budgets[-1] < 2 * 2 * budgets[-2] + 1e-12  # the rule: the last round starts when < 2 rounds are left
    diag = rel.diagnostics["per_set"][0]
    assert diag["rounds"] == len(budgets)
    assert len(diag["selected"]) == len(budgets)


def test_release_respects_the_domain():
    df = _table(300, 4)
    dom = _domain(df)
    rel = dpcore.synthesize(df, "aim", 0.5, seed=2, domain=dom, sets=2)
    for s in rel.sets:
        assert list(s.columns) == dom.names
        assert len(s) == rel.record_count["value"]
        for a in dom.attributes:
            assert set(s[a.name].astype(str)) <= {str(v) for v in a.levels}


def test_utility_recovers_the_strong_pairs():
    """Fixed seed, ε = 2, 2000 records: the synthetic (a, b) and (c, d) tables are within 0.08 total
    variation of the data's, and much closer than independence would give (≥ 0.3 and 0.28 away)."""
    df = _table(2000, 7)
    rel = dpcore.synthesize(df, "aim", 2.0, seed=11, domain=_domain(df))
    syn = rel.sets[0]

    def tv(x, y, cols):
        px = x.groupby(cols).size() / len(x)
        py = y.groupby(cols).size() / len(y)
        return 0.5 * px.sub(py, fill_value=0).abs().sum()

    for cols in (["a", "b"], ["c", "d"]):
        indep = df[cols[0]].sample(frac=1, random_state=0).reset_index(drop=True).to_frame().assign(
            **{cols[1]: df[cols[1]].to_numpy()})
        assert tv(df, indep, cols) > 0.28
        assert tv(df, syn, cols) < 0.08, cols


def test_options_are_checked():
    df = _table(50)
    dom = _domain(df)
    with pytest.raises(OptionError, match="rounds"):
        dpcore.synthesize(df, "aim", 1.0, domain=dom, rounds=2)
    with pytest.raises(OptionError, match="workload names attribute 'zz'"):
        dpcore.synthesize(df, "aim", 1.0, domain=dom, workload="a,zz")
    with pytest.raises(OptionError, match="max_model_size"):
        dpcore.synthesize(df, "aim", 1.0, domain=dom, max_model_size=0)
    with pytest.raises(OptionError, match="unknown option"):
        dpcore.synthesize(df, "aim", 1.0, domain=dom, degree=2)
    assert A.resolve(dom, workload="a,b;c,d").workload == (("a", "b"), ("c", "d"))
    assert len(A.resolve(dom).workload) == 6


def test_workload_and_model_size_steer_the_selection():
    """A one-margin workload makes every selected margin a subset of it; a tiny model size keeps
    the model to the one-way cliques, yet the ledger still totals ε."""
    df = _table(500, 8)
    dom = _domain(df)
    rel = dpcore.synthesize(df, "aim", 1.0, seed=3, domain=dom, **ROUNDS, workload="a,b")
    for sel in rel.diagnostics["per_set"][0]["selected"]:
        assert set(sel) <= {"a", "b"} or len(sel) == 1
    small = dpcore.synthesize(df, "aim", 1.0, seed=3, domain=dom, **ROUNDS, max_model_size=1e-5)
    assert all(len(c) == 1 for c in small.diagnostics["per_set"][0]["cliques"])
    assert small.ledger.epsilon == pytest.approx(1.0, abs=1e-12)


def test_preview_states_margins_and_noise_before_any_budget():
    df = _table(200)
    pv = dpcore.preview(df, "aim", 1.0, domain=_domain(df), **ROUNDS, neighbours="replace", rounds=8)
    m = pv.margins
    one = m[m["table"].str.startswith("one-way")]
    assert len(one) == 4
    assert one["epsilon"].to_numpy() == pytest.approx(0.9 / 8)
    assert one["noise_scale"].to_numpy() == pytest.approx(2.0 / (0.9 / 8))
    assert m["mechanism"].str.contains("exponential").any()


def test_cli_release_and_preview_with_aim_options(tmp_path, capsys):
    import json

    from dpcore.cli.commands import main
    df = _table(300, 6)
    src = tmp_path / "t.csv"
    df.to_csv(src, index=False)
    dom = tmp_path / "domain.json"
    dom.write_text(_domain(df).to_json(), encoding="utf-8")
    out = tmp_path / "out"
    code = main(["synth", str(src), "--out", str(out), "--method", "aim", "--rounds", "9", "--max-model-size", "5",
                 "--workload", "a,b;c,d", "--domain", str(dom), "--seed", "3", "--whole-table", "never"])
    text = capsys.readouterr().out
    assert code == 0, text
    assert "ε spent: 1 of 1" in text
    man = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert man["options"]["rounds"] == 9 and man["options"]["workload"] == [["a", "b"], ["c", "d"]]
    assert man["options"]["max_model_size"] == 5.0
    code = main(["preview", str(src), "--method", "aim", "--rounds", "9", "--domain", str(dom), "--json",
                 "--whole-table", "never"])
    pv = json.loads(capsys.readouterr().out)
    assert code == 0 and pv["margins"][0]["epsilon"] == pytest.approx(0.95 * 0.9 / 9)
    code = main(["synth", str(src), "--out", str(tmp_path / "o2"), "--method", "aim", "--rounds", "2"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error:") and "rounds" in err and "Traceback" not in err


def test_preview_round_count_matches_a_release_without_annealing(monkeypatch):
    """The preview's round count is the release's when no round doubles its budget (annealing is
    switched off here by making the expected noise negative, so no refit counts as 'barely moved')."""
    df = _table(300, 9)
    dom = _domain(df)
    monkeypatch.setattr(A, "expected_abs_noise", lambda mech: -1.0)
    for rounds in (4, 7, 10, 23):
        pv = dpcore.preview(df, "aim", 1.0, domain=dom, **ROUNDS, neighbours="replace", rounds=rounds)
        row = pv.margins[pv.margins["mechanism"] == "exponential"]["table"].iloc[0]
        rel = dpcore.synthesize(df, "aim", 1.0, seed=1, domain=dom, **ROUNDS, neighbours="replace", rounds=rounds)
        diag = rel.diagnostics["per_set"][0]
        assert diag["annealed"] == 0
        assert f"({diag['rounds']} rounds" in row, (row, diag)
        assert rel.ledger.epsilon == pytest.approx(1.0, abs=1e-12)


def test_workload_is_read_like_ipf_margins_and_a_repeated_margin_is_refused():
    """AIM's workload and ipf's margins share one parser (dpcore.measure.margin_spec): the same
    spellings give the same groups, and a margin listed twice is an error, not dropped."""
    from dpcore.measure.margin_spec import parse_margin_groups
    from dpcore.synthesizers import ipf as I

    dom = dpcore.infer_domain(pd.DataFrame({c: ["0", "1"] for c in "abcd"})).declared()
    names = ["a", "b", "c", "d"]
    assert parse_margin_groups("b,a;c,d", names, "workload") == (("a", "b"), ("c", "d"))
    assert parse_margin_groups(None, names, "workload") == parse_margin_groups("twoway", names, "margins")
    assert len(parse_margin_groups("threeway", names, "workload")) == 4
    with pytest.raises(OptionError, match="workload: margin a,b is listed twice"):
        parse_margin_groups("a,b;b,a", names, "workload")
    assert I.parse_margins("c,d", dom) == (("c", "d"),) and A.parse_workload("c,d", dom) == (("c", "d"),)


def test_the_final_fit_is_mirror_descent_by_default_and_ipf_on_request():
    """``estimator="auto"``: mirror descent under pure ε (changed on purpose from IPF, after the corpus
    rerun; the release is the explicit ``mirror_descent`` one, byte for byte) and under (ε, δ); either
    choice is post-processing: the same seed spends the same ledger and only the records differ."""
    df = _table(500, 8)
    dom = _domain(df)
    pure = dpcore.synthesize(df, "aim", 1.0, seed=4, domain=dom, **ROUNDS)
    assert pure.options["estimator"] == "mirror_descent"
    assert pure.diagnostics["per_set"][0]["estimator"] == "mirror_descent"
    assert pure.sets[0].equals(dpcore.synthesize(df, "aim", 1.0, seed=4, domain=dom, **ROUNDS,
                                                 estimator="mirror_descent").sets[0])
    # at ε = 0.3 and T = 16 (4·d, given: the rule would pick 2·d on this short table) the noisy margins disagree
    # enough for the two fits to draw different records
    pure3 = dpcore.synthesize(df, "aim", 0.3, seed=4, domain=dom, **ROUNDS, rounds=16)
    pure3_ipf = dpcore.synthesize(df, "aim", 0.3, seed=4, domain=dom, **ROUNDS, rounds=16, estimator="ipf")
    assert pure3_ipf.options["estimator"] == "ipf"
    assert pure3_ipf.ledger.to_dict() == pure3.ledger.to_dict() and not pure3_ipf.sets[0].equals(pure3.sets[0])
    z = dpcore.synthesize(df, "aim", 1.0, seed=4, domain=dom, **ROUNDS, delta=1e-9)
    assert z.options["estimator"] == "mirror_descent" and z.manifest()["options"]["estimator"] == "mirror_descent"
    z_md = dpcore.synthesize(df, "aim", 1.0, seed=4, domain=dom, **ROUNDS, delta=1e-9, estimator="mirror_descent")
    assert z.sets[0].equals(z_md.sets[0])
    # with the rounds' refits cold, the "ipf" release is the last round's IPF fit itself
    z_cold = dpcore.synthesize(df, "aim", 1.0, seed=4, domain=dom, **ROUNDS, delta=1e-9, round_fits="cold")
    z_ipf = dpcore.synthesize(df, "aim", 1.0, seed=4, domain=dom, **ROUNDS, delta=1e-9, estimator="ipf",
                              round_fits="cold")
    assert z_cold.options["estimator"] == "mirror_descent" and not z_cold.sets[0].equals(z_ipf.sets[0])
    assert z_ipf.options["estimator"] == "ipf" and z_ipf.ledger.to_dict() == z_cold.ledger.to_dict()
    with pytest.raises(OptionError, match="estimator"):
        dpcore.synthesize(df, "aim", 1.0, domain=dom, **ROUNDS, estimator="lbfgs")


def test_round_fits_are_cold_under_pure_epsilon_and_mirror_descent_under_delta():
    """``round_fits="auto"``: cold refits under pure ε (the release is the explicit ``cold`` one, byte
    for byte) and warm ones polished by mirror descent under (ε, δ). The refits are post-processing,
    but they steer later selections: the total stays ρ, in the same unit."""
    df = _table(500, 8)
    dom = _domain(df)
    pure = dpcore.synthesize(df, "aim", 1.0, seed=4, domain=dom, **ROUNDS)
    assert pure.options["round_fits"] == "cold" and pure.diagnostics["per_set"][0]["round_fits"] == "cold"
    cold = dpcore.synthesize(df, "aim", 1.0, seed=4, domain=dom, **ROUNDS, round_fits="cold")
    assert pure.sets[0].equals(cold.sets[0])
    z = dpcore.synthesize(df, "aim", 1.0, seed=4, domain=dom, **ROUNDS, delta=1e-9)
    assert z.options["round_fits"] == "mirror_descent" and z.manifest()["options"]["round_fits"] == "mirror_descent"
    z_md = dpcore.synthesize(df, "aim", 1.0, seed=4, domain=dom, **ROUNDS, delta=1e-9, round_fits="mirror_descent")
    z_cold = dpcore.synthesize(df, "aim", 1.0, seed=4, domain=dom, **ROUNDS, delta=1e-9, round_fits="cold")
    z_warm = dpcore.synthesize(df, "aim", 1.0, seed=4, domain=dom, **ROUNDS, delta=1e-9, round_fits="warm")
    assert z.sets[0].equals(z_md.sets[0])
    assert z_cold.options["round_fits"] == "cold" and z_warm.diagnostics["per_set"][0]["round_fits"] == "warm"
    assert math.isclose(z_cold.ledger.spent.value, z.ledger.spent.value, rel_tol=1e-12)
    assert z.ledger.unit == z_cold.ledger.unit
    with pytest.raises(OptionError, match="round_fits"):
        dpcore.synthesize(df, "aim", 1.0, domain=dom, **ROUNDS, round_fits="hot")


def _levels_domain(levels):
    cols = {f"x{i}": [str(v % k) for v in range(max(levels))] for i, k in enumerate(levels)}
    return dpcore.infer_domain(pd.DataFrame(cols)).declared()


def test_whole_table_auto_is_decided_from_the_domain_the_workload_and_the_rounds():
    """``whole_table="auto"``: the whole table once when, on every workload margin of c cells, the noise the
    whole table sums there ((N/c)·s² at the set's budget, s the law's scale) is at most half that of the margin
    measured in a round (s² at 0.9·b/T). By hand, pure ε: s = 1/ε, so N/c ≤ ½·(T/0.9)² at any ε."""
    from dpcore.privacy.definitions import PureDP, ZeroConcentratedDP
    from dpcore.privacy.neighbours import Neighbours

    def var(eps):
        return (1 / eps) ** 2

    nb = Neighbours("add_remove")
    for levels, eps in [((2, 2, 9, 3), 1.0), ((2, 2, 10, 8), 0.3), ((18, 2, 14, 8), 1.0), ((18, 2, 14, 8), 3.0),
                        ((2, 2, 9, 3), 0.05)]:
        dom = _levels_domain(levels)
        opts = A.resolve(dom)
        N, T = math.prod(levels), 4 * len(levels)  # the default T (rounds not given)
        by_hand = all(N / (a * b) * var(eps) <= 0.5 * var(0.9 * eps / T)
                      for a, b in itertools.combinations(levels, 2))
        assert A.whole_table_first(opts, dom, Epsilon(eps), nb, PureDP()) is by_hand
    titanic, wages = _levels_domain((2, 2, 9, 3)), _levels_domain((18, 2, 14, 8))
    assert A.whole_table_first(A.resolve(titanic), titanic, Epsilon(1.0), nb) is True
    assert A.whole_table_first(A.resolve(wages), wages, Epsilon(1.0), nb) is False
    # under zCDP the rounds' noise grows as √T, not T: the same tiny domain keeps its rounds
    assert A.whole_table_first(A.resolve(titanic), titanic, Rho(0.01), nb, ZeroConcentratedDP(1e-9)) is False
    # a workload of one margin over every attribute is the whole table whatever the rounds
    assert A.whole_table_first(A.resolve(wages, workload="x0,x1,x2,x3"), wages, Epsilon(1.0), nb) is True
    assert A.whole_table_first(A.resolve(wages, whole_table="always"), wages, Epsilon(1.0), nb) is True
    assert A.whole_table_first(A.resolve(titanic, whole_table="never"), titanic, Epsilon(1.0), nb) is False
    with pytest.raises(OptionError, match="whole_table"):
        A.resolve(titanic, whole_table="sometimes")
    # the model is the whole table: it must fit max_model_size (auto then keeps the rounds; always is refused)
    tiny = A.resolve(titanic, max_model_size=100 * 8 / 2**20)  # 100 cells of 8 bytes, the table has 108
    assert A.whole_table_first(tiny, titanic, 1.0, nb) is False
    with pytest.raises(OptionError, match=r"whole_table=always: the whole table has 108 cells.*max_model_size"):
        A.whole_table_first(A.resolve(titanic, whole_table="always", max_model_size=100 * 8 / 2**20), titanic,
                            1.0, nb)


@pytest.mark.parametrize("neighbours", ["add_remove", "replace"])
def test_a_whole_table_set_is_one_charge_of_the_sets_budget_and_the_preview_says_so(neighbours):
    df = _table(400, 3)
    dom = _domain(df)
    rel = dpcore.synthesize(df, "aim", 1.2, sets=2, seed=2, domain=dom, neighbours=neighbours)
    assert rel.options["whole_table"] == "auto"
    hs = 1.0 if neighbours == "add_remove" else 2.0
    # under add/remove the record count takes its share of ε first; the sets split the rest
    count = math.fsum(c.epsilon for p, c in rel.ledger.charges() if not p.startswith("release (aim)/set"))
    per_set = (1.2 - count) / 2
    assert (count > 0) is (neighbours == "add_remove")
    for s in (1, 2):
        charges = [c for p, c in rel.ledger.charges() if p.startswith(f"release (aim)/set {s}")]
        assert [c.label for c in charges] == ["the whole table"]
        assert charges[0].epsilon == pytest.approx(per_set, abs=1e-12) and charges[0].sensitivity == hs
        assert charges[0].mechanism.startswith("discrete_laplace")
    assert rel.ledger.epsilon == pytest.approx(1.2, abs=1e-12)
    diag = rel.diagnostics["per_set"][0]
    assert diag["whole_table"] is True and diag["rounds"] == 0 and diag["cliques"] == [dom.names]
    pv = dpcore.preview(df, "aim", 1.2, sets=2, domain=dom, neighbours=neighbours)
    rows = pv.margins
    assert len(rows) == 1 and rows["table"].iloc[0].startswith("the whole table")
    assert rows["cells"].iloc[0] == 36 and rows["epsilon"].iloc[0] == pytest.approx(per_set)
    assert rows["noise_scale"].iloc[0] == pytest.approx(hs / per_set)
    # the rounds on request: one-way margins, selections and measured margins, the same ε in total
    rounds = dpcore.synthesize(df, "aim", 1.2, sets=2, seed=2, domain=dom, neighbours=neighbours, **ROUNDS)
    assert any(c.label.startswith("round") for _, c in rounds.ledger.charges())
    assert rounds.ledger.epsilon == pytest.approx(1.2, abs=1e-12)


def test_a_whole_table_release_at_a_huge_epsilon_reproduces_the_table():
    """The whole table is what the model is fitted to: at ε = 10⁴ its noise is nil, and the rounded draw gives
    every cell of the full cross-tabulation within 1 of the data's (the released count is noisy too)."""
    df = _table(500, 4)
    dom = _domain(df)
    rel = dpcore.synthesize(df, "aim", 1e4, seed=1, domain=dom, synthesis="round", neighbours="replace")
    assert rel.diagnostics["per_set"][0]["whole_table"] is True
    got = rel.sets[0].astype(str).value_counts()
    want = df.astype(str).value_counts()
    diff = got.sub(want, fill_value=0).abs()
    assert len(rel.sets[0]) == len(df) and diff.max() <= 1, diff[diff > 1]


def test_whole_table_under_epsilon_delta_spends_rho_with_the_discrete_gaussian():
    df = _table(400, 5)
    dom = _domain(df)
    z = dpcore.synthesize(df, "aim", 1.0, seed=3, domain=dom, delta=1e-9, whole_table="always")
    charges = [c for p, c in z.ledger.charges() if p.startswith("release (aim)/set")]
    assert [c.label for c in charges] == ["the whole table"]
    assert charges[0].mechanism.startswith("discrete_gaussian")
    assert charges[0].epsilon is None and charges[0].rho > 0
    assert math.isclose(math.fsum(c.rho for _, c in z.ledger.charges()), z.ledger.spent.value, rel_tol=1e-12)
    # the default under (ε, δ) on this domain keeps the rounds (the rounds' noise grows as √T there)
    auto = dpcore.synthesize(df, "aim", 1.0, seed=3, domain=dom, delta=1e-9)
    assert auto.diagnostics["per_set"][0].get("whole_table") is not True
