"""The privacy-budget ledger and the allocation of ε (docs/privacy-model.md).

Every release must spend exactly the ε asked for (to 1e-12), and each charge must
carry the scale its mechanism needs for the ε it claims, at the count sensitivity of
the release's neighbour notion (1 for add/remove, 2 for replace). Under add/remove a
record-count charge of count_share·ε comes first and the sets share the rest.
"""
import itertools
import math
import re
from collections import defaultdict

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.errors import OptionError
from dpcore.measure.selection import sensitivity
from dpcore.privacy.budget import Epsilon, Rho
from dpcore.privacy.ledger import BudgetExceededError, Charge, Ledger
from dpcore.privacy.measurement import Measurement
from dpcore.privacy.mechanisms import DiscreteLaplace
from dpcore.privacy.neighbours import DEFAULT_COUNT_SHARE, DEFAULT_MAX_RECORDS
from dpcore.privacy.stability import Sensitivity
from dpcore.synthesizers.allocation import allocate_budget, layer_weights

# ----------------------------------------------------------------------------------------
# a small random table: 300 rows, 4 attributes with 2-4 levels (declared public)
# ----------------------------------------------------------------------------------------
N = 300
LEVELS = {"a": 2, "b": 3, "c": 4, "d": 3}
P = len(LEVELS)


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(7)
    a = rng.integers(0, 2, N)
    b = np.where(rng.random(N) < 0.7, a, rng.integers(0, 3, N))  # some dependence
    c = rng.integers(0, 4, N)
    d = (c + rng.integers(0, 2, N)) % 3
    return pd.DataFrame({"a": a, "b": [f"b{x}" for x in b], "c": c, "d": [f"d{x}" for x in d]})


@pytest.fixture(scope="module")
def domain(table):
    dom = dpcore.infer_domain(table).declared()
    assert dom.shape == tuple(LEVELS.values())
    return dom


# ----------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------
USER_ORDERS = {1: "a,b", 2: "a;b,c", P: "a;b;c;d"}  # L=1 and L=2 leave a leaf layer; L=p does not


def _noised_layers(L, select):
    """Number of noised count layers: L, plus the leaf layer if attributes remain."""
    if select == "user":
        used = sum(len(g.split(",")) for g in USER_ORDERS[L].split(";"))
    else:
        used = L
    return L + int(used < P)


def _custom_weights(k):
    w = np.arange(1, k + 1, dtype=float)
    return list(w / w.sum())


def _sets(ledger):
    """charges grouped by set label ('set 1', ...), each as (kind, charge); the record
    count (charged once, outside the sets) under the key 'record count'."""
    out = defaultdict(list)
    for path, ch in ledger.charges():
        parts = path.split("/")
        set_label = parts[1]
        out[set_label].append((parts[2] if len(parts) > 3 else "", ch))
    return out


def _sets_epsilon(rel, eps, notion):
    """ε left for the sets after the record count; checks the count charge itself."""
    counts = _sets(rel.ledger).pop("record count", [])
    if notion == "replace":
        assert counts == [] and rel.record_count["noisy"] is False
        assert all(len(s) == N for s in rel.sets)
        return eps
    (_, c), = counts
    assert c.epsilon == pytest.approx(DEFAULT_COUNT_SHARE * eps, rel=1e-12)
    assert c.sensitivity == 1.0 and c.scale == pytest.approx(1 / c.epsilon, rel=1e-12)
    assert all(len(s) == rel.record_count["value"] for s in rel.sets)
    assert rel.manifest()["record_count"]["noisy"] is True
    return eps - c.epsilon


def _check_steps_ledger(rel, eps, m, r, select, utility, noise, n, notion="add_remove"):
    """Per set: selection charges sum to rε_s/m, count charges to (1−r)ε_s/m (ε_s: ε
    less the record count), every scale matches its ε at the notion's sensitivity, and
    parallel_over is the number of real nodes of that layer."""
    led = rel.ledger
    eps_sets = _sets_epsilon(rel, eps, notion)
    sets = _sets(led)
    sets.pop("record count", None)
    assert sorted(sets) == [f"set {i + 1}" for i in range(m)]
    hs = 1.0 if notion == "add_remove" else 2.0
    delta = sensitivity(utility, DEFAULT_MAX_RECORDS if notion == "add_remove" else n, max(LEVELS.values()))
    for s in range(m):
        tree = rel.trees[s]
        charges = sets[f"set {s + 1}"]
        sel = [c for kind, c in charges if kind == "tree selection"]
        cnt = [c for kind, c in charges if kind == "node counts"]
        assert len(sel) + len(cnt) == len(charges)
        # selection
        sel_eps = math.fsum(c.epsilon for c in sel)
        if select in ("mosda", "lesda"):
            assert sel_eps == pytest.approx(r * eps_sets / m, rel=1e-12, abs=1e-15)
            assert len(sel) == min(tree.L, P - 1)
            for c in sel:
                assert c.mechanism == "exponential"
                assert c.sensitivity == pytest.approx(delta, rel=1e-12)
                assert c.scale == pytest.approx(2 * delta / c.epsilon, rel=1e-12)
                k = int(re.search(r"layer (\d+) split", c.label).group(1))
                assert c.parallel_over == tree.layers[k].n_real
        else:
            assert sel_eps == 0.0
            if select == "nonprivate":
                assert sel and all("NOT DIFFERENTIALLY PRIVATE" in c.note for c in sel)
            else:
                assert sel == []
        # counts
        cnt_eps = math.fsum(c.epsilon for c in cnt)
        assert cnt_eps == pytest.approx((1 - r) * eps_sets / m, rel=1e-12)
        assert len(cnt) == tree.L + int(tree.has_leaf_layer)
        for c in cnt:
            assert c.mechanism.split(" ")[0] == noise
            assert c.sensitivity == hs
            assert c.neighbours == rel.neighbours.label
            if noise == "discrete_laplace":
                assert c.scale == pytest.approx(hs / c.epsilon, rel=1e-12)
            else:  # discretised Laplace: the grid adds at most 2^-16 of the sensitivity
                assert c.scale == pytest.approx(hs / c.epsilon, rel=1e-4) and c.scale >= hs / c.epsilon
            k = int(re.search(r"layer (\d+)", c.label).group(1))
            if k <= tree.L:
                assert c.parallel_over == tree.layers[k].n_real
            else:
                assert "leaf" in c.label
                assert c.parallel_over == tree.n_leaves
    # sequential over sets and over parts: the total is ε
    assert abs(led.epsilon - eps) <= 1e-12
    assert abs(rel.manifest()["ledger"]["epsilon_total"] - eps) <= 1e-12


# ----------------------------------------------------------------------------------------
# the big sweep: every method and option, ledger totals ε to 1e-12
# ----------------------------------------------------------------------------------------
STEPS_VARIANTS = [
    ("steps", "mosda"), ("steps", "lesda"), ("steps", "random"), ("steps", "nonprivate"),
    ("steps", "user"), ("uh_random", None), ("steps_lesda", None),
]
ALLOCATIONS = ("equal", "half", "custom")
LAYERS = (1, 2, P)
EPSILONS = (0.1, 1.0, 7.3)
CONSISTENCY = ("nonneg", "wls", "uh")
SYNTHESIS = ("sample", "round")
SETS = (1, 3)
UTILS = ("aic", "aic_gain", "l1_uniform")
NOISES = ("discrete_laplace", "laplace")
RS = (0.1, 0.35)

# full product over method/select × allocation × L × ε (189 releases); the remaining
# options are cycled with co-prime periods so that every value meets every other often.
NOTIONS = ("add_remove", "replace")
STEPS_CASES = [
    (meth, sel, alloc, L, eps, CONSISTENCY[i % 3], SYNTHESIS[i % 2], SETS[(i // 2) % 2],
     UTILS[(i // 5) % 3], NOISES[(i // 7) % 2], RS[(i // 3) % 2], NOTIONS[(i // 11) % 2])
    for i, ((meth, sel), alloc, L, eps) in enumerate(itertools.product(STEPS_VARIANTS, ALLOCATIONS, LAYERS, EPSILONS))
]


def test_sweep_covers_every_option_value():
    seen = defaultdict(set)
    for case in STEPS_CASES:
        for name, v in zip(("method", "select", "alloc", "L", "eps", "cons", "synth", "m", "util", "noise", "r", "nb"),
                           case):
            seen[name].add(v)
    assert seen["nb"] == set(NOTIONS)
    assert seen["cons"] == set(CONSISTENCY) and seen["synth"] == set(SYNTHESIS) and seen["m"] == set(SETS)
    assert seen["util"] == set(UTILS) and seen["noise"] == set(NOISES) and seen["r"] == set(RS)
    # every consistency mode meets every m and every synthesis mode
    pairs = {(c[5], c[7]) for c in STEPS_CASES} | {(c[5], c[6]) for c in STEPS_CASES}
    assert len(pairs) == 3 * 2 + 3 * 2
    assert len(STEPS_CASES) == 189


@pytest.mark.parametrize("method,select,alloc,L,eps,consistency,synthesis,m,utility,noise,r,notion", STEPS_CASES)
def test_steps_ledger_totals_epsilon(table, domain, method, select, alloc, L, eps, consistency, synthesis, m, utility,
                                     noise, r, notion):
    effective = select or {"uh_random": "random", "steps_lesda": "lesda"}[method]
    opts = dict(layers=L, consistency=consistency, synthesis=synthesis, utility=utility, noise=noise)
    if select is not None and select != "user":
        opts["select"] = select
    if select == "user":
        opts["order"] = USER_ORDERS[L]
    private = effective in ("mosda", "lesda")
    if private:
        opts["r"] = r
    opts["allocation"] = _custom_weights(_noised_layers(L, effective)) if alloc == "custom" else alloc
    rel = dpcore.synthesize(table, method, eps, sets=m, seed=11, domain=domain, neighbours=notion, **opts)
    assert len(rel.sets) == m
    _check_steps_ledger(rel, eps, m, r if private else 0.0, effective, utility, noise, N, notion)
    assert rel.dp is (effective != "nonprivate")


@pytest.mark.parametrize("eps,m,synthesis,noise",
                         list(itertools.product(EPSILONS, SETS, SYNTHESIS, NOISES)))
def test_flat_laplace_ledger_totals_epsilon(table, domain, eps, m, synthesis, noise):
    notion = NOTIONS[int(eps > 1) ^ (m > 1)]
    rel = dpcore.synthesize(table, "flat_laplace", eps, sets=m, seed=5, domain=domain, synthesis=synthesis, noise=noise,
                            neighbours=notion)
    led = rel.ledger
    assert abs(led.epsilon - eps) <= 1e-12
    eps_sets = _sets_epsilon(rel, eps, notion)
    charges = [c for p, c in led.charges() if not p.endswith("record count")]
    assert len(charges) == m
    cells = math.prod(LEVELS.values())
    hs = 1.0 if notion == "add_remove" else 2.0
    for c in charges:
        assert c.epsilon == pytest.approx(eps_sets / m, rel=1e-12)
        assert c.scale == pytest.approx(hs * m / eps_sets, rel=1e-4) and c.scale >= hs * m / eps_sets * (1 - 1e-12)
        assert c.sensitivity == hs
        assert c.mechanism.split(" ")[0] == noise
        assert c.parallel_over == cells


def test_both_notions_are_swept():
    assert {NOTIONS[int(eps > 1) ^ (m > 1)] for eps in EPSILONS for m in SETS} == set(NOTIONS)


# ----------------------------------------------------------------------------------------
# layer_weights / allocate_budget
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("L", [1, 2, 3, 5])
def test_half_gives_half_to_leaf_layer(L):
    w, name = layer_weights("half", L, True)
    assert name == "half"
    assert len(w) == L + 1
    assert w[-1] == 0.5
    assert all(x == pytest.approx(1 / (2 * L)) for x in w[:-1])
    assert math.fsum(w) == pytest.approx(1.0, abs=1e-15)


@pytest.mark.parametrize("L", [1, 2, 3, 5])
def test_half_without_leaf_layer_is_equal(L):
    assert layer_weights("half", L, False)[0] == layer_weights("equal", L, False)[0]
    assert layer_weights("equal", L, False)[0] == pytest.approx([1 / L] * L)


@pytest.mark.parametrize("L,leaf", [(1, True), (2, True), (3, False), (4, True)])
def test_equal_weights(L, leaf):
    w, name = layer_weights("equal", L, leaf)
    n = L + int(leaf)
    assert name == "equal" and w == pytest.approx([1 / n] * n)


def test_custom_weights_accepted_as_list_and_string():
    w, name = layer_weights([0.2, 0.3, 0.5], 2, True)
    assert name == "custom" and w == pytest.approx((0.2, 0.3, 0.5))
    w2, _ = layer_weights("0.2,0.3,0.5", 2, True)
    assert w2 == pytest.approx(w)


@pytest.mark.parametrize("weights,match", [
    ([0.5, 0.5], r"needs 3 weights"),                 # wrong count (L=2 plus leaf)
    ([0.25, 0.25, 0.25, 0.25], r"needs 3 weights"),
    ([0.2, 0.3, 0.6], r"sum to 1"),                  # does not sum to 1
    ([0.5, 0.6, -0.1], r"greater than 0"),           # negative
    ([0.5, 0.5, 0.0], r"greater than 0"),            # zero
    ([0.5, float("nan"), 0.5], r"greater than 0"),   # not finite
    ("a,b,c", r"equal.*half"),                       # not numbers
    ("optimal-ish", r"equal.*half"),
])
def test_custom_weights_validation(weights, match):
    with pytest.raises(OptionError, match=match):
        layer_weights(weights, 2, True)


def test_custom_weights_validation_through_synthesize(table, domain):
    with pytest.raises(OptionError, match="needs 3 weights"):
        dpcore.synthesize(table, epsilon=1, seed=1, domain=domain, layers=2, allocation=[0.5, 0.5])
    with pytest.raises(OptionError, match="sum to 1"):
        dpcore.synthesize(table, epsilon=1, seed=1, domain=domain, layers=2, allocation=[0.3, 0.3, 0.3])


@pytest.mark.parametrize("eps,m,r,L,leaf,scheme", [
    (1.0, 1, 0.1, 2, True, "half"),
    (7.3, 3, 0.25, 3, True, "equal"),
    (0.1, 2, 0.0, 2, False, "half"),
    (2.0, 5, 0.5, 1, True, (0.3, 0.7)),
])
def test_allocate_budget_arithmetic(eps, m, r, L, leaf, scheme):
    n_sel = L if r > 0 else 0
    for budget in (Epsilon(eps), Rho(eps)):  # the same shares in either unit, each share of that unit
        a = allocate_budget(budget, m, r, n_sel, L, leaf, scheme)
        assert type(a.per_set) is type(budget) and all(type(x) is type(budget) for x in (*a.selection, *a.counts))
        assert a.per_set.value == pytest.approx(eps / m, rel=1e-15)
        assert len(a.selection) == n_sel
        assert all(x.value == pytest.approx(r * eps / (m * n_sel)) for x in a.selection)
        assert len(a.counts) == L + int(leaf)
        assert math.fsum(c.value for c in a.counts) == pytest.approx((1 - r) * eps / m, rel=1e-12)
        for c, w in zip(a.counts, a.weights):
            assert c.value == pytest.approx(w * (1 - r) * eps / m, rel=1e-12)
        total = m * (math.fsum(x.value for x in a.selection) + math.fsum(c.value for c in a.counts))
        assert abs(total - eps) <= 1e-12


def test_allocate_budget_r_rules():
    one = Epsilon(1.0)
    with pytest.raises(OptionError, match="r=0.1 but nothing is chosen privately"):
        allocate_budget(one, 1, 0.1, 0, 2, True)
    with pytest.raises(OptionError, match="needs r > 0"):
        allocate_budget(one, 1, 0.0, 2, 2, True)
    for bad in (-0.1, 1.0, 1.5, float("nan")):
        with pytest.raises(OptionError, match=r"\[0, 1\)"):
            allocate_budget(one, 1, bad, 2, 2, True)
    for bad_budget in (Epsilon(0.0), Epsilon(-1.0), Rho(0.0)):
        with pytest.raises(OptionError, match="budget to split"):
            allocate_budget(bad_budget, 1, 0.1, 2, 2, True)
    with pytest.raises(AttributeError):  # a bare number is not a budget: ε or ρ must be said
        allocate_budget(1.0, 1, 0.1, 2, 2, True)
    for bad_m in (0, 1.5, -2):
        with pytest.raises(OptionError, match="whole number"):
            allocate_budget(one, bad_m, 0.1, 2, 2, True)


def test_r_rules_through_synthesize(table, domain):
    with pytest.raises(OptionError, match="order is fixed"):
        dpcore.synthesize(table, epsilon=1, seed=1, domain=domain, order="a;b", r=0.1)
    with pytest.raises(OptionError, match="needs r > 0"):
        dpcore.synthesize(table, epsilon=1, seed=1, domain=domain, select="mosda", r=0)
    with pytest.raises(OptionError, match="needs r > 0"):
        dpcore.synthesize(table, "steps_lesda", epsilon=1, seed=1, domain=domain, r=0.0)
    with pytest.raises(OptionError, match="set r to 0"):
        dpcore.synthesize(table, "uh_random", epsilon=1, seed=1, domain=domain, r=0.2)
    with pytest.raises(OptionError, match=r"\[0, 1\)"):
        dpcore.synthesize(table, epsilon=1, seed=1, domain=domain, r=1.0)
    # defaults: private selection takes r = 0.1, a fixed order r = 0
    rel = dpcore.synthesize(table, epsilon=2, seed=1, domain=domain)
    assert rel.options["r"] == 0.1
    rel = dpcore.synthesize(table, epsilon=2, seed=1, domain=domain, order="a;b")
    assert rel.options["r"] == 0.0
    assert all("selection" not in p for p, _ in rel.ledger.charges())


# ----------------------------------------------------------------------------------------
# the Ledger itself
# ----------------------------------------------------------------------------------------
def _charge(led, eps, label="x"):
    return led._record(Charge(label=label, epsilon=eps, mechanism="m", sensitivity=1.0, scale=1 / eps if eps else 0.0,
                              subset="s"))


def test_ledger_sequential_and_parallel_composition():
    led = Ledger("root")
    seq = led.group("seq")
    _charge(seq, 0.1)
    _charge(seq, 0.2)
    par = led.group("par", "parallel")
    _charge(par, 0.3)
    _charge(par, 0.05)
    assert seq.epsilon == pytest.approx(0.3)
    assert par.epsilon == 0.3
    assert led.epsilon == pytest.approx(0.6)
    d = led.to_dict()
    assert d["epsilon_total"] == pytest.approx(0.6)
    assert [c["path"] for c in d["charges"]] == ["root/seq/x", "root/seq/x", "root/par/x", "root/par/x"]
    led.assert_total(Epsilon(0.6))
    with pytest.raises(AssertionError):
        led.assert_total(Epsilon(0.6 + 1e-9))
    with pytest.raises(TypeError):  # a ledger in ε checks an ε
        led.assert_total(Rho(0.6))


def test_ledger_refuses_bad_charges():
    led = Ledger("root")
    for bad in (-0.1, float("nan"), float("inf")):
        with pytest.raises(ValueError):
            _charge(led, bad)
    with pytest.raises(ValueError):
        Ledger("x", composition="advanced")


# ----------------------------------------------------------------------------------------
# the odometer: a cap refuses before any noise is drawn
# ----------------------------------------------------------------------------------------
class _CountingRng:
    """A Generator stand-in that fails the test if anything draws from it."""

    def __getattr__(self, name):
        raise AssertionError(f"noise was drawn ({name}) after the cap refused")


def test_a_capped_ledger_refuses_a_charge_before_the_mechanism_draws():
    led = Ledger("release", cap=Epsilon(1.0))
    q = Measurement("counts", DiscreteLaplace.calibrate(0.6), Sensitivity(1.0, "l1"), "all", "add/remove one record")
    rng = np.random.default_rng(0)
    q.release(led.group("set 1"), np.arange(5), rng)
    assert led.epsilon == pytest.approx(0.6) and led.remaining.value == pytest.approx(0.4)
    with pytest.raises(BudgetExceededError, match="past its cap ε = 1"):
        q.release(led.group("set 2"), np.arange(5), _CountingRng())
    assert led.epsilon == pytest.approx(0.6)  # the refused charge left no trace
    # parallel groups cost their max: a second disjoint charge at the same ε fits
    par = Ledger("release", cap=Epsilon(1.0)).group("cells", "parallel")
    for _ in range(3):
        Measurement("c", DiscreteLaplace.calibrate(1.0), Sensitivity(1.0, "l1"), "cell", "x").release(
            par, np.zeros(2, int), rng)
    assert par.root.epsilon == pytest.approx(1.0)


def test_the_cap_holds_for_groups_and_attached_ledgers():
    led = Ledger("book", cap=Epsilon(0.5))
    other = Ledger("survey part")
    _charge(other, 0.4)
    led.attach(other)
    with pytest.raises(BudgetExceededError):
        _charge(other.group("more"), 0.2)  # the attached ledger now answers to the book's cap
    with pytest.raises(BudgetExceededError):
        led.attach(Ledger("x", children=[Charge("y", 0.2, "m", 1.0, 5.0, "s")]))
    assert led.epsilon == pytest.approx(0.4)


def test_a_release_whose_method_would_overspend_is_refused_before_noise(monkeypatch):
    """The release's ledger is capped at its ε: a method that charged more than its share would
    be stopped at the charge, not found out after the noise."""
    from dpcore.synthesizers import flat_laplace

    real = flat_laplace.synthesize_set
    draws = []

    def greedy(X, domain, opts, eps, rng, ledger, set_label, ctx):
        draws.append(eps)
        return real(X, domain, opts, eps * 1.5, rng, ledger, set_label, ctx)  # spends more than it was given

    monkeypatch.setattr(flat_laplace, "synthesize_set", greedy)
    table = pd.DataFrame({"a": list("xyxy"), "b": list("ppqq")})
    dom = dpcore.infer_domain(table).declared()
    with pytest.raises(BudgetExceededError):
        dpcore.synthesize(table, "flat_laplace", 1.0, seed=0, domain=dom, neighbours="replace")
    assert draws  # the method ran and was refused at its charge
