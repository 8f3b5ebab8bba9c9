"""STEPS releases end to end (docs/privacy-model.md, §3): consistency, phantoms, domain, reproducibility,
dtypes, DP status, manifest, utility, private selection and the preview."""
import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpcore
import dpcore.data.datasets as datasets
from dpcore.estimate.consistency import make_consistent
from dpcore.privacy.mechanisms import DiscreteLaplace
from dpcore.synthesizers import hierarchy as H
from dpcore.synthesizers import steps as steps_mod
from dpcore.synthesizers.steps import resolve_steps_options


# ----------------------------------------------------------------------------------------
# data
# ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def s7():
    return datasets.sd2011_extract(datasets.load_sd2011(), 7)


@pytest.fixture(scope="module")
def s7_domain(s7):
    return dpcore.infer_domain(s7).declared()


def _small(n=400, seed=3):
    """a: 2 levels, b: 5 levels, c: 3 levels (with NA), d: int 0..2 — mixed fan-outs create phantoms."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, n)
    b = (a * 2 + rng.integers(0, 3, n)) % 5
    c = rng.choice(["lo", "mid", "hi", None], n, p=[0.4, 0.3, 0.2, 0.1])
    d = rng.integers(0, 3, n)
    return pd.DataFrame({"a": np.where(a == 1, "yes", "no"), "b": [f"b{x}" for x in b], "c": c, "d": d})


@pytest.fixture(scope="module")
def small():
    return _small()


@pytest.fixture(scope="module")
def small_domain(small):
    dom = dpcore.infer_domain(small).declared()
    assert dom.shape == (2, 5, 4, 3)  # c: 3 levels + NA
    return dom


def _mixed(n=500, seed=9):
    """Every dtype the output must preserve: int, str with NA, float binned by public edges,
    an int column binned by public edges, bool, nullable Int64 with NA, category."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "i": rng.integers(0, 4, n),
        "s": rng.choice(["x", "y", None], n, p=[0.5, 0.4, 0.1]),
        "f": rng.uniform(0, 100, n),
        "age": rng.integers(0, 101, n),
        "flag": rng.random(n) < 0.3,
        "ni": pd.array(rng.choice([1, 2, None], n), dtype="Int64"),
        "cat": pd.Categorical(rng.choice(["u", "v", "w"], n)),
    })


MIXED_NUMERIC = {"f": [0, 10, 25, 50, 100], "age": [0, 18, 65, 100]}


@pytest.fixture(scope="module")
def mixed():
    return _mixed()


@pytest.fixture(scope="module")
def mixed_domain(mixed):
    return dpcore.infer_domain(mixed, numeric=MIXED_NUMERIC).declared()


def _full_codes(dom, df):
    """Flat index of each record's cell in the full cross-tabulation."""
    X = dom.encode(df[dom.names])
    return np.ravel_multi_index(tuple(X.T), dom.shape)


def _crosstab(dom, df):
    return np.bincount(_full_codes(dom, df), minlength=dom.size)


# ----------------------------------------------------------------------------------------
# consistency on a built tree
# ----------------------------------------------------------------------------------------
class _Chooser:
    """A data-independent chooser: a fixed order, or a seeded random single attribute."""

    def __init__(self, order=None, seed=0):
        self.order, self.rng = order, np.random.default_rng(seed)

    def __call__(self, k, fixed, rank):
        if self.order is not None:
            return [self.order[k]] * len(fixed)
        out = []
        for row in fixed:
            avail = np.flatnonzero(row < 0)
            out.append((int(self.rng.choice(avail)),))
        return out


def _check_consistent(tree, parents, phantom, nbar, n, nonneg):
    assert nbar[0][0] == n  # the root is the released record count, kept exactly
    for k in range(1, len(nbar)):
        assert np.all(nbar[k][phantom[k]] == 0.0), f"layer {k}: a phantom is not exactly 0"
        m = len(nbar[k - 1])
        has_child = np.bincount(parents[k], minlength=m) > 0
        sums = np.bincount(parents[k], weights=nbar[k], minlength=m)
        scale = max(1.0, float(np.abs(nbar[k - 1]).max()))
        np.testing.assert_allclose(sums[has_child], nbar[k - 1][has_child], rtol=0, atol=1e-8 * scale,
                                   err_msg=f"layer {k - 1}: parent != sum of children")
        # every real node of a partition layer has children (phantoms never do)
        if k - 1 <= tree.L and (k - 1 < tree.L or tree.has_leaf_layer):
            real = ~phantom[k - 1]
            assert np.all(has_child[real])
            assert not np.any(has_child[phantom[k - 1]])
        if nonneg:
            assert nbar[k].min() >= -1e-9


TREES = [
    ("order a;b (phantoms in layer 1)", [(0,), (1,)], 2),
    ("order a;b,c (fan-out 20)", [(0,), (1, 2)], 2),
    ("order b;a;c;d (no leaf layer)", [(1,), (0,), (2,), (3,)], 4),
    ("random single splits, L=3", None, 3),
]


@pytest.mark.parametrize("label,order,L", TREES, ids=[t[0] for t in TREES])
@pytest.mark.parametrize("method", ["wls", "nonneg", "uh"])
def test_consistency_on_built_tree(small, small_domain, label, order, L, method):
    X = small_domain.encode(small)
    tree = H.build_tree(X, small_domain.shape, small_domain.names, L, _Chooser(order, seed=L), 10**6)
    counts, leaves = H.count_nodes(tree, X)
    rng = np.random.default_rng(42)
    mech = DiscreteLaplace.calibrate(0.3)  # heavy noise: many negative noisy counts
    noisy = [counts[0].astype(float)] + [mech.release(c, rng).astype(float) for c in counts[1:]]
    var = [np.zeros(1)] + [np.full(len(c), mech.variance) for c in counts[1:]]
    leaf_noisy = mech.release(leaves, rng).astype(float) if tree.has_leaf_layer else None
    leaf_var = np.full(tree.n_leaves, mech.variance) if tree.has_leaf_layer else None
    parents, values, phantom = H.slot_arrays(tree, noisy, leaf_noisy)
    _, variances, _ = H.slot_arrays(tree, var, leaf_var)
    if order == [(0,), (1,)]:
        assert phantom[1].sum() == 3  # a (2 levels) padded up to b's 5
    nbar = make_consistent(parents, values, variances, phantom, method)
    _check_consistent(tree, parents, phantom, nbar, len(X), method == "nonneg")
    # the consistent leaves are not just the noisy leaves: the step did something
    assert not np.allclose(nbar[-1], values[-1])


RELEASE_CASES = [
    dict(order="a;b", consistency="nonneg"),
    dict(order="a;b,c", consistency="wls"),
    dict(order="b;a;c;d", consistency="uh"),
    dict(layers=2, consistency="nonneg"),
    dict(layers=3, select="random", consistency="wls"),
    dict(layers=1, select="lesda", consistency="uh", noise="laplace"),
]


@pytest.mark.parametrize("opts", RELEASE_CASES, ids=[str(o) for o in RELEASE_CASES])
def test_consistency_holds_inside_every_release(monkeypatch, small, small_domain, opts):
    """Instrument the pipeline: capture what reaches make_consistent and what comes out."""
    seen = []

    def spy(parents, values, variances, phantom, method="nonneg"):
        out = make_consistent(parents, values, variances, phantom, method)
        seen.append(dict(parents=parents, values=values, variances=variances, phantom=phantom, method=method, out=out))
        return out

    monkeypatch.setattr(steps_mod, "make_consistent", spy)
    rel = dpcore.synthesize(small, epsilon=0.5, sets=2, seed=8, domain=small_domain, synthesis="round", **opts)
    assert len(seen) == 2
    for s, cap in enumerate(seen):
        tree = rel.trees[s]
        assert cap["method"] == opts["consistency"]
        # phantoms arrive with value 0 and variance 0, the root with variance 0
        for k in range(len(cap["phantom"])):
            assert np.all(cap["values"][k][cap["phantom"][k]] == 0)
            assert np.all(cap["variances"][k][cap["phantom"][k]] == 0)
        n_out = rel.record_count["value"]  # noisy under the default add/remove notion
        assert rel.record_count["noisy"] and cap["variances"][0][0] == 0 and cap["values"][0][0] == n_out
        _check_consistent(tree, cap["parents"], cap["phantom"], cap["out"], n_out, cap["method"] == "nonneg")


@pytest.mark.parametrize("opts", [dict(order="a;b"), dict(order="a;b,c;d"), dict(layers=2)],
                         ids=["a;b", "a;b,c;d", "mosda L=2"])
def test_round_release_reproduces_rounded_leaf_estimates(monkeypatch, small, small_domain, opts):
    """synthesis='round', consistency='nonneg': the released full cross-tab is the
    largest-remainder rounding of the tree's consistent leaf estimates (total n)."""
    seen = []

    def spy(*args, **kw):
        out = make_consistent(*args, **kw)
        seen.append(out)
        return out

    monkeypatch.setattr(steps_mod, "make_consistent", spy)
    rel = dpcore.synthesize(small, epsilon=1.0, seed=21, domain=small_domain, synthesis="round", consistency="nonneg",
                            **opts)
    tree, nbar = rel.tree, seen[0]
    final = nbar[-1] if tree.has_leaf_layer else nbar[-1][tree.layers[-1].real_slots]
    n_out = rel.record_count["value"]
    assert final.sum() == pytest.approx(n_out, abs=1e-6)
    assert final.min() >= -1e-9
    # the leaf cell -> full cell map (each leaf cell fixes every attribute: one cell each)
    codes = H.leaf_codes(tree, np.arange(len(final)))
    assert (codes >= 0).all()
    flat = np.ravel_multi_index(tuple(codes.T), small_domain.shape)
    assert len(np.unique(flat)) == len(flat)
    released = _crosstab(small_domain, rel.sets[0])[flat]
    assert released.sum() == n_out == len(rel.sets[0])
    # every rounded count is the floor or the ceiling of its estimate
    assert np.all(released >= np.floor(final - 1e-9)) and np.all(released <= np.ceil(final + 1e-9))
    # no record lands outside the tree's real leaf cells
    assert _crosstab(small_domain, rel.sets[0]).sum() == released.sum()


@pytest.mark.parametrize("opts", [
    dict(order="a;b"), dict(order="a;b,c"), dict(order="d;c;b;a"), dict(order="b,d"),
    dict(layers=2), dict(layers=4, select="lesda"), dict(layers=3, select="random"),
])
def test_noise_free_limit_reproduces_the_data(small, small_domain, opts):
    """At ε = 1000 the discrete Laplace noise is 0 with probability 1 − e^−200; a rounded
    release must then be the input table exactly, whatever the tree: this checks the
    whole path from records to nodes to leaf cells and back to values."""
    for consistency in ("nonneg", "wls", "uh"):
        rel = dpcore.synthesize(small, epsilon=1000, seed=2, domain=small_domain, synthesis="round",
                                consistency=consistency, **opts)
        np.testing.assert_array_equal(_crosstab(small_domain, rel.sets[0]), _crosstab(small_domain, small))


def test_noise_free_limit_s7(s7, s7_domain):
    rel = dpcore.synthesize(s7, epsilon=1000, seed=4, domain=s7_domain, synthesis="round", layers=2)
    np.testing.assert_array_equal(_crosstab(s7_domain, rel.sets[0]), _crosstab(s7_domain, s7))


# ----------------------------------------------------------------------------------------
# phantoms and the domain
# ----------------------------------------------------------------------------------------
PHANTOM_CASES = [
    dict(order="a;b,c"), dict(order="a;b"), dict(order="a;b;c"), dict(order="a,d;b"), dict(order="d;a;c,b"),
    dict(layers=1), dict(layers=2), dict(layers=3, select="lesda"), dict(layers=2, select="random"),
    dict(layers=2, select="nonprivate"), dict(layers=4, utility="l1_uniform"),
]


@pytest.mark.parametrize("opts", PHANTOM_CASES, ids=[str(o) for o in PHANTOM_CASES])
@pytest.mark.parametrize("consistency,synthesis", [("nonneg", "sample"), ("wls", "round"), ("uh", "sample")])
def test_phantom_levels_never_reach_the_output(small, small_domain, opts, consistency, synthesis):
    rel = dpcore.synthesize(small, epsilon=0.05, sets=2, seed=13, domain=small_domain,
                            consistency=consistency, synthesis=synthesis, **opts)
    assert rel.tree.b >= 2
    for out in rel.sets:
        assert len(out) == rel.record_count["value"]
        for att in small_domain.attributes:
            col = out[att.name]
            declared = {str(v) for v in att.levels}
            present = {str(v) for v in col.dropna().unique()}
            assert present <= declared, f"{att.name}: undeclared values {present - declared}"
            if not att.na:
                assert not col.isna().any(), f"{att.name}: NaN in a column whose domain has no NA"
        small_domain.encode(out)  # raises if anything is outside the domain


def test_phantoms_exist_in_those_trees(small, small_domain):
    """The cases above do create phantoms (else the test would be vacuous)."""
    rel = dpcore.synthesize(small, epsilon=1, seed=1, domain=small_domain, order="a;b,c")
    sizes = rel.tree.layer_sizes()
    assert rel.tree.b == 20 and sizes[0] == {"layer": 1, "real": 2, "phantom": 18}


def test_numeric_values_stay_in_declared_edges(mixed, mixed_domain):
    for opts in (dict(layers=2), dict(order="f;age,i"), dict(layers=3, select="random")):
        rel = dpcore.synthesize(mixed, epsilon=0.2, sets=2, seed=5, domain=mixed_domain, **opts)
        for out in rel.sets:
            for name, edges in MIXED_NUMERIC.items():
                v = out[name].to_numpy(dtype=float)
                assert np.all((v >= edges[0]) & (v <= edges[-1])), name
            assert np.all(out["age"].to_numpy() == np.round(out["age"].to_numpy()))
            mixed_domain.encode(out)
    rel = dpcore.synthesize(mixed, "flat_laplace", epsilon=0.2, seed=5, domain=mixed_domain)
    mixed_domain.encode(rel.sets[0])


def test_numeric_values_fall_in_the_bin_of_their_code(mixed, mixed_domain):
    """Noise-free limit: the re-encoded release equals the input cell by cell, so each
    drawn numeric value lies in the bin its code came from."""
    rel = dpcore.synthesize(mixed, epsilon=1000, seed=6, domain=mixed_domain, synthesis="round", order="f;age;i")
    np.testing.assert_array_equal(_crosstab(mixed_domain, rel.sets[0]), _crosstab(mixed_domain, mixed))
    # and the values are spread inside the bins, not pinned at an edge
    f = rel.sets[0]["f"].to_numpy()
    assert len(np.unique(f)) > len(mixed) * 0.9


@pytest.mark.parametrize("dtype", ["float64", "int64"])
def test_decode_then_encode_returns_the_codes(dtype):
    att = dpcore.data.domain.numeric_attribute("x", [0, 10, 25, 50, 100], na=True, dtype=dtype)
    codes = np.repeat(np.arange(att.size), 500)  # every bin and NA
    vals = att.decode(codes, np.random.default_rng(0))
    np.testing.assert_array_equal(att.encode(vals), codes)
    lo = [0, 10, 25, 50]
    got = vals.to_numpy(dtype=float, na_value=np.nan)
    for k in range(4):
        v = got[codes == k]
        assert v.min() >= lo[k] and v.max() <= [10, 25, 50, 100][k]
        assert v.max() - v.min() > 0.5 * ([10, 25, 50, 100][k] - lo[k])  # spread, not a point
    # the last bin is closed: its upper edge is reachable for integers
    if dtype == "int64":
        assert got[codes == 3].max() == 100


# ----------------------------------------------------------------------------------------
# reproducibility, shape and dtypes
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("method,opts", [("steps", {}), ("steps", dict(select="random", layers=3)),
                                         ("steps_lesda", {}), ("flat_laplace", {})])
def test_seed_reproduces_and_differs(small, small_domain, method, opts):
    r1 = dpcore.synthesize(small, method, 1.0, sets=2, seed=123, domain=small_domain, **opts)
    r2 = dpcore.synthesize(small, method, 1.0, sets=2, seed=123, domain=small_domain, **opts)
    r3 = dpcore.synthesize(small, method, 1.0, sets=2, seed=124, domain=small_domain, **opts)
    for a, b, c in zip(r1.sets, r2.sets, r3.sets):
        assert a.equals(b)
        assert not a.equals(c)
    assert not r1.sets[0].equals(r1.sets[1])  # sets within a release are independent draws
    m1, m2 = r1.manifest(), r2.manifest()
    m1["summary"].pop("created_utc"), m2["summary"].pop("created_utc")  # when each was made
    assert m1 == m2


def test_seed_reproduces_on_s7(s7, s7_domain):
    a = dpcore.synthesize(s7, epsilon=1, seed=77, domain=s7_domain)
    b = dpcore.synthesize(s7, epsilon=1, seed=77, domain=s7_domain)
    c = dpcore.synthesize(s7, epsilon=1, seed=78, domain=s7_domain)
    assert a.sets[0].equals(b.sets[0]) and not a.sets[0].equals(c.sets[0])


@pytest.mark.parametrize("method,opts", [("steps", {}), ("steps", dict(order="cat;f,flag")), ("flat_laplace", {})])
def test_output_rows_columns_and_dtypes(mixed, mixed_domain, method, opts):
    rel = dpcore.synthesize(mixed, method, 0.5, sets=2, seed=3, domain=mixed_domain, **opts)
    for out in rel.sets:
        assert len(out) == rel.record_count["value"]
        assert list(out.columns) == list(mixed.columns)
        for name in mixed.columns:
            assert out[name].dtype == mixed[name].dtype, f"{name}: {out[name].dtype} != {mixed[name].dtype}"
        assert out["s"].isna().any() and out["ni"].isna().any()  # NA is a level that gets synthesised
        assert set(out["cat"].cat.categories) == set(mixed["cat"].cat.categories)


def test_s7_output_shape_and_dtypes(s7, s7_domain):
    rel = dpcore.synthesize(s7, epsilon=1, seed=1, domain=s7_domain)
    out = rel.sets[0]
    assert out.shape == (rel.record_count["value"], s7.shape[1]) and list(out.columns) == list(s7.columns)
    assert abs(len(out) - len(s7)) < 400  # 0.05 of ε on the count: scale 20
    assert (out.dtypes == s7.dtypes).all()
    assert out["income"].isna().any()  # income has NA in the data and its domain


# ----------------------------------------------------------------------------------------
# DP status and the manifest
# ----------------------------------------------------------------------------------------
def test_nonprivate_selection_is_not_dp(small, small_domain):
    rel = dpcore.synthesize(small, epsilon=1, seed=1, domain=small_domain, select="nonprivate")
    assert rel.dp is False
    assert "NOT" in rel.dp_reason and "tree" in rel.dp_reason
    assert rel.manifest()["dp"] is False


def test_inferred_domain_is_not_dp(small):
    rel = dpcore.synthesize(small, epsilon=1, seed=1)
    assert rel.dp is False and "domain" in rel.dp_reason
    rel = dpcore.synthesize(small, "flat_laplace", epsilon=1, seed=1)
    assert rel.dp is False and "domain" in rel.dp_reason


def test_declared_domain_with_private_selection_is_dp(small):
    rel = dpcore.synthesize(small, epsilon=1, seed=1, domain=dpcore.infer_domain(small).declared(), select="mosda")
    assert rel.dp is True and "ε = 1" in rel.dp_reason
    # a domain passed as a dict keeps its own source: an inferred one stays NOT DP ([privacy-audit])
    rel = dpcore.synthesize(small, epsilon=1, seed=1, domain=dpcore.infer_domain(small).to_dict())
    assert rel.dp is False and "inferred" in rel.dp_reason
    rel = dpcore.synthesize(small, epsilon=1, seed=1, domain=dpcore.infer_domain(small).declared().to_dict())
    assert rel.dp is True


def _walk(obj, path=()):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield path + (k,), k, v
            yield from _walk(v, path + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _walk(v, path + (i,))


SEED = 918273645


@pytest.fixture(scope="module")
def s7_release(s7, s7_domain):
    return dpcore.synthesize(s7, epsilon=1, sets=2, seed=SEED, domain=s7_domain, layers=2)


def test_manifest_keys_and_json(s7_release):
    m = s7_release.manifest()
    for key in ("method", "options", "domain", "ledger", "tree", "dp", "dp_reason"):
        assert key in m
    assert m["method"] == "steps" and m["dp"] is True
    assert m["ledger"]["epsilon_total"] == pytest.approx(1.0, abs=1e-12)
    assert len(m["ledger"]["charges"]) == 1 + 2 * 5  # the record count; per set: 2 selection layers, 3 count layers
    assert m["neighbours"]["notion"] == "add_remove" and m["record_count"]["noisy"] is True
    assert "n" not in m
    assert m["options"]["sets"] == 2
    text = json.dumps(m, allow_nan=False)
    assert json.loads(text)["ledger"]["epsilon_total"] == m["ledger"]["epsilon_total"]
    json.dumps(s7_release.manifest(private=True), allow_nan=False)


def test_manifest_has_no_seed_unless_private(s7_release):
    m = s7_release.manifest()
    text = json.dumps(m, allow_nan=False)
    assert "seed" not in text.lower()
    assert str(SEED) not in text
    assert not any("seed" in str(k).lower() for _, k, _ in _walk(m))
    p = s7_release.manifest(private=True)
    assert p["seed"] == SEED
    assert str(SEED) in json.dumps(p)


def test_manifest_holds_no_raw_counts(s7, s7_release):
    m = s7_release.manifest()
    for per_set, tree in zip(m["tree"]["per_set"], s7_release.trees):
        for layer in per_set["layers"]:
            for node in layer["nodes"]:
                assert set(node) == {"path", "split"}
                assert all(isinstance(v, int) for v in node["path"].values())
                assert all(isinstance(a, str) for a in node["split"])
        # the true counts of the root's children must not appear anywhere in the tree section
        root_attr = tree.split_names(int(tree.layers[0].split[0]))
        true = s7.groupby(list(root_attr), observed=True, dropna=False).size().to_numpy()
        assert len(true) >= 2
        # level codes in node paths are small public integers; every other number counts
        numbers = {v for path, _, v in _walk(per_set) if isinstance(v, (int, float)) and not isinstance(v, bool)
                   and "path" not in path}
        # small counts collide with structural numbers (fan-out, layer numbers): check the informative ones
        assert not (set(int(t) for t in true if t > 15) & numbers), (true, numbers)
    # nor anywhere in the manifest; nor the exact record count (add/remove: n is private)
    everything = {v for path, _, v in _walk(m) if isinstance(v, (int, float)) and not isinstance(v, bool)}
    tab = s7["sex"].value_counts().to_numpy()
    assert not (set(int(t) for t in tab) & everything)
    assert len(s7) not in everything or m["record_count"]["value"] == len(s7)
    assert m["diagnostics"] == {}


# ----------------------------------------------------------------------------------------
# statistical utility
# ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def dependent():
    rng = np.random.default_rng(2024)
    n = 20_000
    a = rng.random(n) < 0.3
    b = a.copy()  # a determines b
    c = rng.random(n) < 0.5
    df = pd.DataFrame({"a": np.where(a, "A1", "A0"), "b": np.where(b, "B1", "B0"), "c": np.where(c, "C1", "C0")})
    return df, dpcore.infer_domain(df).declared()


def _tvd_ab(x, y):
    px = x.groupby(["a", "b"]).size() / len(x)
    py = y.groupby(["a", "b"]).size() / len(y)
    px, py = px.align(py, fill_value=0.0)
    return 0.5 * float(np.abs(px - py).sum())


@pytest.mark.parametrize("method,opts", [("steps", {}), ("steps", dict(order="c;a")), ("steps", dict(layers=3)),
                                         ("flat_laplace", {})])
def test_two_way_margin_preserved(dependent, method, opts):
    """At ε = 5 the (a, b) margin of 20,000 records survives: TVD < 0.05 on each of 3 sets
    (the sampling error alone is about 0.005; the noise adds O(cells/(nε))).
    A broken hierarchy (e.g. mis-mapped leaves) gives a TVD near 0.3-0.5."""
    df, dom = dependent
    rel = dpcore.synthesize(df, method, 5.0, sets=3, seed=31, domain=dom, **opts)
    for out in rel.sets:
        assert _tvd_ab(df, out) < 0.05
        # the deterministic link survives: almost no record has a != b
        assert ((out["a"].str[1] != out["b"].str[1]).mean()) < 0.02


# ----------------------------------------------------------------------------------------
# MoSDA follows its probabilities
# ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny():
    """40 records: x concentrated (30/10), z balanced (20/20), y spread over 3 levels."""
    x = ["x0"] * 30 + ["x1"] * 10
    z = ["z0"] * 20 + ["z1"] * 20
    y = ["y0"] * 14 + ["y1"] * 13 + ["y2"] * 13
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": x, "y": list(rng.permutation(y)), "z": list(rng.permutation(z))})
    return df, dpcore.infer_domain(df).declared()


def test_mosda_selection_frequencies_match_preview_probabilities(tiny):
    df, dom = tiny
    eps, r = 3.0, 0.5  # ε_sel = 1.5 at the root
    pv = dpcore.preview(df, epsilon=eps, domain=dom, layers=1, r=r)
    sel = pv.selection
    root = sel[sel["layer"] == 0].set_index("attribute")["probability"]
    probs = np.array([root.get(a, 0.0) for a in dom.names])
    assert probs.sum() == pytest.approx(1.0, abs=1e-12)
    # informative: neither degenerate nor uniform, and MoSDA ranks x (most concentrated) first
    assert probs.min() > 0.02 and probs.max() < 0.9
    assert np.argmax(probs) == dom.names.index("x")
    R = 400
    chosen = np.zeros(len(dom.names), dtype=int)
    for seed in range(R):
        rel = dpcore.synthesize(df, epsilon=eps, seed=seed, domain=dom, layers=1, r=r)
        split = rel.tree.describe()["layers"][0]["nodes"][0]["split"]
        assert len(split) == 1
        chosen[dom.names.index(split[0])] += 1
    expected = probs * R
    assert expected.min() >= 5  # chi-square approximation valid
    p = stats.chisquare(chosen, expected).pvalue
    assert p > 0.001, (chosen, expected)
    # the test has power: uniform selection would be rejected
    assert stats.chisquare(chosen, np.full(3, R / 3)).pvalue < 0.001


def test_lesda_reverses_the_preference(tiny):
    df, dom = tiny
    mo = dpcore.preview(df, epsilon=3.0, domain=dom, layers=1, r=0.5).selection.set_index("attribute")["probability"]
    le = dpcore.preview(df, "steps_lesda", epsilon=3.0, domain=dom, layers=1, r=0.5).selection \
        .set_index("attribute")["probability"]
    assert mo.idxmax() == "x" and le.idxmax() == "y"
    assert le["x"] < mo["x"]


# ----------------------------------------------------------------------------------------
# preview
# ----------------------------------------------------------------------------------------
COLUMNS = ["layer", "attributes", "real", "phantom", "epsilon", "noise_scale", "noise_sd", "expected_se"]


def test_preview_layer_table_and_phantoms(small, small_domain):
    pv = dpcore.preview(small, epsilon=1.0, domain=small_domain, order="a;b")
    t = pv.layers
    assert list(t.columns) == COLUMNS
    assert list(t["layer"]) == [1, 2, 3]
    assert pv.tree.b == 5 and pv.plan["fan_out"] == 5
    assert t.loc[0, "real"] == 2 and t.loc[0, "phantom"] == 3  # a: 2 levels padded to 5
    assert t.loc[1, "real"] == 10 and t.loc[1, "phantom"] == 0
    assert t.loc[2, "real"] == 10 * 4 * 3 and t.loc[2, "phantom"] == 0  # leaf cells of c × d
    assert "a" in t.loc[0, "attributes"] and "b" in t.loc[1, "attributes"]
    # scales follow the half allocation with r = 0 of the 95% left after the record count
    np.testing.assert_allclose(t["epsilon"], np.array([0.25, 0.25, 0.5]) * 0.95, rtol=1e-12)
    np.testing.assert_allclose(t["noise_scale"], 1 / t["epsilon"], rtol=1e-12)
    assert (t["expected_se"] > 0).all()
    # consistency pools information: after WLS every layer's error is below its raw noise sd
    assert (t["expected_se"] < t["noise_sd"]).all()
    assert pv.selection is None and pv.plan["private_selection"] is False
    assert pv.plan["selection_budget_per_layer"] == []


def test_preview_expected_se_decreases_with_epsilon(small, small_domain):
    se = [dpcore.preview(small, epsilon=e, domain=small_domain, order="a;b,c")
          .layers["expected_se"].to_numpy() for e in (0.25, 1.0, 4.0)]
    assert np.all(se[0] > se[1]) and np.all(se[1] > se[2])


def test_preview_spends_nothing_and_probabilities_sum_to_one(small, small_domain):
    pv = dpcore.preview(small, epsilon=1.0, domain=small_domain, layers=2)
    assert not hasattr(pv, "ledger")
    sel = pv.selection
    assert sel is not None and set(sel["layer"]) == {0, 1}
    sums = sel.groupby(["layer", "node"])["probability"].sum()
    np.testing.assert_allclose(sums.to_numpy(), 1.0, atol=1e-12)
    # one row-set per real node of each selection layer
    assert sel[sel["layer"] == 1]["node"].nunique() == pv.tree.layers[1].n_real
    # attributes already on a node's path are not candidates
    first = sel[sel["layer"] == 0].sort_values("probability").iloc[-1]["attribute"]
    assert first not in set(sel[sel["layer"] == 1]["attribute"])
    # the previewed tree follows the most likely attribute at the root
    assert pv.tree.split_names(int(pv.tree.layers[0].split[0])) == (first,)
    # previewing twice is deterministic (argmax, no randomness spent)
    pv2 = dpcore.preview(small, epsilon=1.0, domain=small_domain, layers=2)
    pd.testing.assert_frame_equal(pv.layers, pv2.layers)


@pytest.mark.parametrize("notion,hs", [("add_remove", 1.0), ("replace", 2.0)])
def test_margin_methods_preview_their_noise_per_margin(small, small_domain, notion, hs):
    """flat_laplace, ipf and privbayes preview what they will measure (no data values):
    the scales must be those the release's ledger then charges."""
    for method, opts in (("flat_laplace", {}), ("ipf", {"margins": "a,b;c,d"}), ("privbayes", {"degree": 1})):
        pv = dpcore.preview(small, method, 1.0, sets=2, domain=small_domain, neighbours=notion, **opts)
        assert isinstance(pv, dpcore.MarginPreview)
        rel = dpcore.synthesize(small, method, 1.0, sets=2, seed=1, domain=small_domain, neighbours=notion, **opts)
        charged = [c for p, c in rel.ledger.charges() if p.split("/")[1] == "set 1" and c.epsilon > 0]
        assert len(charged) == len(pv.margins)
        np.testing.assert_allclose(sorted(pv.margins["epsilon"]), sorted(c.epsilon for c in charged), rtol=1e-12)
        noisy = pv.margins.dropna(subset=["noise_scale"])
        np.testing.assert_allclose(sorted(noisy["noise_scale"]),
                                   sorted(c.scale for c in charged if c.mechanism != "exponential"), rtol=1e-12)
    ipf = dpcore.preview(small, "ipf", 1.0, domain=small_domain, neighbours=notion, margins="a,b;c,d").margins
    assert list(ipf["cells"]) == [2 * 5, 4 * 3]
    with pytest.raises(dpcore.OptionError, match="method must be one of"):
        dpcore.preview(small, "nope")


def test_preview_matches_release_tree_for_fixed_order(small, small_domain):
    pv = dpcore.preview(small, epsilon=1.0, domain=small_domain, order="a;b,c")
    rel = dpcore.synthesize(small, epsilon=1.0, seed=0, domain=small_domain, order="a;b,c")
    assert pv.tree.describe() == rel.tree.describe()
    opts = resolve_steps_options(small_domain, order="a;b,c")
    assert opts.r == 0.0 and opts.select == "user"
    # preview's per-layer ε are the ledger's count charges
    cnt = [c.epsilon for p, c in rel.ledger.charges() if "counts" in p]
    np.testing.assert_allclose(pv.layers["epsilon"], cnt, rtol=1e-12)
    assert math.isclose(sum(cnt), 0.95, rel_tol=1e-12)  # 5% bought the record count
