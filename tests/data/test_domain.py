"""The public domain (docs/privacy-model.md): JSON round trip, encoding, inference and clear errors."""
import json

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.data.domain import DECLARED, INFERRED, NA_LEVEL, Attribute, Domain, numeric_attribute
from dpcore.data.inference import infer_domain
from dpcore.errors import DomainError, DPCoreError, InputError


def _table(n=200, seed=1):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "s": rng.choice(["alpha", "beta", "gamma", None], n),
        "i": rng.integers(-2, 3, n),
        "b": rng.random(n) < 0.4,
        "fi": rng.choice([1.0, 2.0, 3.0, np.nan], n),          # float codes with NA (as pandas reads CSVs)
        "ni": pd.array(rng.choice([10, 20, None], n), dtype="Int64"),
        "bn": pd.array(rng.choice([True, False, None], n), dtype="boolean"),
        "cat": pd.Categorical(rng.choice(["q", "r", "t"], n)),
        "x": rng.uniform(0, 100, n),
        "year": rng.choice([1994, 1996, 2018], n),
    })


NUMERIC = {"x": {"bounds": [0, 100], "bins": 4}}


@pytest.fixture
def table():
    return _table()


# ----------------------------------------------------------------------------------------
# JSON
# ----------------------------------------------------------------------------------------
def test_json_round_trip(table):
    dom = infer_domain(table, numeric=NUMERIC)
    text = dom.to_json()
    json.loads(text)  # valid JSON
    back = Domain.from_json(text, declared=True)
    assert back.attributes == dom.attributes
    assert back.names == dom.names and back.shape == dom.shape
    # an explicit declaration declares; otherwise the file's own source is honoured
    assert dom.source == INFERRED and dom.inferred
    assert back.source == DECLARED and not back.inferred
    assert Domain.from_json(text, declared=False).source == INFERRED
    assert Domain.from_json(text).source == INFERRED
    # level types survive: ints stay ints, bools stay bools
    assert back["i"].levels == (-2, -1, 0, 1, 2)
    assert back["b"].levels == (False, True)
    assert back["x"].edges == (0.0, 25.0, 50.0, 75.0, 100.0)
    # and the data encodes identically under both
    np.testing.assert_array_equal(back.encode(table), dom.encode(table))


def test_domain_file_load_honours_its_source(tmp_path, table):
    """[privacy-audit]: an inferred domain passed back became "declared" (DP: yes with the
    data's exact min and max as bin edges). The file's own source now decides."""
    dom = infer_domain(table, numeric=NUMERIC)
    p = tmp_path / "domain.json"
    p.write_text(dom.to_json(), encoding="utf-8")
    loaded = Domain.load(p)
    assert loaded.source == INFERRED and loaded.attributes == dom.attributes
    d = json.loads(dom.to_json())
    d["source"] = "declared"
    p.write_text(json.dumps(d), encoding="utf-8")
    assert Domain.load(p).source == DECLARED
    del d["source"]  # a hand-written file without a source is the curator's declaration
    p.write_text(json.dumps(d), encoding="utf-16")
    assert Domain.load(p).source == DECLARED
    with pytest.raises(DomainError, match="cannot read domain file"):
        Domain.load(tmp_path / "nope.json")


def test_declared_changes_only_the_source(table):
    dom = infer_domain(table, numeric=NUMERIC)
    dec = dom.declared()
    assert dec.source == DECLARED and dec.attributes == dom.attributes
    assert dom.source == INFERRED  # immutable: the original is unchanged


@pytest.mark.parametrize("text,match", [
    ("{not json", "not valid JSON"),
    ('{"levels": []}', "attributes"),
    ('{"attributes": [{"type": "categorical"}]}', "no \"name\""),
    ('{"attributes": null}', "attributes"),
    ('{"attributes": []}', "empty"),
    ('{"attributes": [{"name": "a", "levels": ["x"], "na": "false"}]}', "JSON boolean"),
    ('{"attributes": [{"name": "a", "levels": "uv"}]}', "must be a list"),
    ('{"attributes": [{"name": "a", "levels": ["u", "v"], "dtype": "bool"}]}', "true/false levels"),
    ('{"attributes": [{"name": "a", "type": "numeric", "edges": ["0", "1"]}]}', "list of numbers"),
    ('{"attributes": [{"name": "a", "type": "numeric", "edges": [0, 1e999]}]}', "finite"),
    ('{"attributes": [{"name": "a", "levels": ["x"], "dtype": "nonsense"}]}', "dtype"),
    ('{"attributes": [{"name": "a", "levels": ["x"]}], "source": 3}', "source"),
    ('{"attributes": [{"name": "a", "levels": ["x"], "colour": 1}]}', "unknown key"),
    ('[' * 100_000 + ']' * 100_000, "nested too deeply|not valid JSON"),
    ('{"attributes": [{"name": "x", "type": "numeric", "edges": [3, 1]}]}', "'x'.*strictly increasing"),
    ('{"attributes": [{"name": "k", "levels": [1, "1"]}]}', "'k'.*duplicates"),
    ('{"attributes": [{"name": "a", "levels": [1, 2]}, {"name": "a", "levels": [3, 4]}]}', "'a'.*more than once"),
])
def test_bad_domain_files(text, match):
    with pytest.raises(DomainError, match=match):
        Domain.from_json(text)


# ----------------------------------------------------------------------------------------
# encoding
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("col", ["s", "i", "b", "fi", "ni", "bn", "cat", "year"])
def test_categorical_encode_decode_round_trip(table, col):
    dom = infer_domain(table[[col]])
    att = dom[col]
    assert att.kind == "categorical"
    codes = att.encode(table[col])
    assert codes.min() >= 0 and codes.max() < att.size
    back = att.decode(codes, np.random.default_rng(0))
    pd.testing.assert_series_equal(back, table[col].reset_index(drop=True), check_names=False,
                                   check_categorical=False)
    assert back.dtype == table[col].dtype
    # NA is the last code exactly when the column has missing values
    has_na = bool(table[col].isna().any())
    assert att.na is has_na
    if has_na:
        assert att.labels[-1] == NA_LEVEL
        np.testing.assert_array_equal(codes == len(att.levels), table[col].isna().to_numpy())


def test_equivalent_spellings_share_a_level():
    """1994, 1994.0 and "1994" name the same level, so a CSV read either way encodes alike."""
    att = Attribute("year", "categorical", (1994, 1996))
    for s in (pd.Series([1994, 1996]), pd.Series([1994.0, 1996.0]), pd.Series(["1994", "1996"])):
        np.testing.assert_array_equal(att.encode(s), [0, 1])


def test_numeric_given_edges_round_trip():
    att = numeric_attribute("x", [0, 10, 25, 50, 100], na=True)
    s = pd.Series([0.0, 9.999, 10.0, 24.5, 25.0, 49.0, 50.0, 99.0, 100.0, np.nan])
    codes = att.encode(s)
    np.testing.assert_array_equal(codes, [0, 0, 1, 1, 2, 2, 3, 3, 3, 4])  # left-closed, last bin closed, NA last
    many = np.repeat(np.arange(att.size), 300)
    vals = att.decode(many, np.random.default_rng(3))
    np.testing.assert_array_equal(att.encode(vals), many)
    assert vals[many == 4].isna().all() and vals[many != 4].notna().all()
    assert att.labels == ["[0,10)", "[10,25)", "[25,50)", "[50,100]", NA_LEVEL]


def test_equal_width_bounds():
    rng = np.random.default_rng(5)
    df = pd.DataFrame({"x": rng.uniform(0, 100, 1000), "k": rng.integers(0, 2, 1000)})
    dom = infer_domain(df, numeric={"x": {"bounds": [0, 100], "bins": 4}})
    att = dom["x"]
    assert att.kind == "numeric" and att.edges == (0.0, 25.0, 50.0, 75.0, 100.0)
    codes = att.encode(df["x"])
    np.testing.assert_array_equal(codes, np.minimum((df["x"].to_numpy() // 25).astype(int), 3))
    vals = att.decode(codes, np.random.default_rng(0))
    np.testing.assert_array_equal(att.encode(vals), codes)
    assert vals.dtype == df["x"].dtype
    # explicit edges give the same bins; only the recorded origin differs
    edges = infer_domain(df, numeric={"x": [0, 25, 50, 75, 100]})["x"]
    assert edges.edges == att.edges and edges.labels == att.labels
    assert (att.origin, edges.origin) == ("public_bounds", "declared")


def test_integer_numeric_decodes_to_integers_in_the_bin():
    att = numeric_attribute("age", [0, 18, 65, 100], dtype="int64")
    codes = np.repeat(np.arange(3), 400)
    vals = att.decode(codes, np.random.default_rng(1))
    assert vals.dtype == np.int64
    np.testing.assert_array_equal(att.encode(vals), codes)
    v = vals.to_numpy()
    assert v[codes == 0].min() == 0 and v[codes == 0].max() == 17
    assert v[codes == 2].max() == 100  # the last bin is closed


def test_integer_bin_without_whole_numbers_is_refused():
    """Decoding draws whole numbers in the bin; a bin holding none would leak into its neighbour."""
    with pytest.raises(DomainError, match=r"'n'.*\[10.2, 10.5\)"):
        numeric_attribute("n", [0, 10.2, 10.5, 20], dtype="int64")
    numeric_attribute("n", [0, 10.2, 10.5, 20], dtype="float64")  # fine for floats
    numeric_attribute("n", [0, 10, 10.5], dtype="int64")  # the last bin [10, 10.5] holds 10


def test_encode_checks_columns(table):
    dom = infer_domain(table, numeric=NUMERIC)
    with pytest.raises(DomainError, match="'extra'.*not in the domain"):
        dom.encode(table.assign(extra=1))
    with pytest.raises(DomainError, match="'s'.*does not have"):
        dom.encode(table.drop(columns="s"))


def test_infer_marks_source_inferred(table):
    dom = infer_domain(table, numeric=NUMERIC)
    assert dom.source == INFERRED
    assert dom.to_dict()["source"] == INFERRED
    assert dom.declared().to_dict()["source"] == DECLARED
    # levels are the observed values, sorted; NA flagged where missing values occur
    assert dom["s"].levels == ("alpha", "beta", "gamma") and dom["s"].na
    assert not dom["i"].na and dom["ni"].na
    assert dom["year"].levels == (1994, 1996, 2018)


def test_infer_bins_wide_numeric_columns_and_keeps_small_ints_categorical():
    rng = np.random.default_rng(2)
    df = pd.DataFrame({"wide": rng.normal(50, 10, 500), "small": rng.integers(0, 25, 500)})
    dom = infer_domain(df, numeric_bins=7)
    assert dom["wide"].kind == "numeric" and len(dom["wide"].edges) == 8
    assert dom["wide"].edges[0] == df["wide"].min() and dom["wide"].edges[-1] == df["wide"].max()
    assert dom["small"].kind == "categorical"


# ----------------------------------------------------------------------------------------
# errors name the column and say what to do
# ----------------------------------------------------------------------------------------
def test_all_missing_column():
    df = pd.DataFrame({"ok": [1, 2, 1], "blank": [None, None, None]})
    with pytest.raises(DPCoreError, match="'blank'.*empty"):
        infer_domain(df)


def test_single_level_column():
    df = pd.DataFrame({"ok": [1, 2, 1], "const": ["k", "k", "k"]})
    with pytest.raises(DPCoreError, match="'const'.*single level"):
        infer_domain(df)


def test_single_level_plus_na_is_two_levels():
    dom = infer_domain(pd.DataFrame({"c": ["k", None, "k"]}))
    assert dom["c"].size == 2 and dom["c"].labels == ["k", NA_LEVEL]


def test_identifier_column():
    n = 40_000
    df = pd.DataFrame({"g": np.arange(n) % 3, "person_id": [f"P{i:06d}" for i in range(n)]})
    with pytest.raises(DPCoreError, match=r"'person_id'.*40,000 distinct values.*identifier"):
        infer_domain(df)


def test_value_outside_declared_edges_is_clamped_and_counted():
    """[numeric-columns]: values outside public edges go to the end bins (OpenDP's clamp), not refused;
    the curator-only count says how many."""
    df = pd.DataFrame({"x": [1.0, 150.0, 20.0, -np.inf, np.nan, 100.0, 0.0]})
    dom = infer_domain(df.iloc[[0, 1, 4]], numeric={"x": {"bounds": [0, 100], "bins": 2}})
    a = dom["x"]
    assert a.na and a.edges == (0.0, 50.0, 100.0)
    assert dom.encode(df)[:, 0].tolist() == [0, 1, 0, 0, 2, 1, 0]
    assert dom.clamped_counts(df) == {"x": 2}
    assert dom.clamped_counts(df.iloc[[0, 2, 5, 6]]) == {}
    ints = pd.DataFrame({"k": pd.array([-5, 3, 7, 12], dtype="int64")})
    d2 = infer_domain(ints, numeric={"k": [0, 5, 10]})
    assert d2.encode(ints)[:, 0].tolist() == [0, 0, 1, 1]
    assert d2.clamped_counts(ints) == {"k": 2}
    dom = infer_domain(pd.DataFrame({"x": [1.0, 99.0]}), numeric={"x": [0, 50, 100]}).declared()
    with pytest.raises(DomainError, match=r"'x'.*non-numeric"):
        dom.encode(pd.DataFrame({"x": ["1", "many"]}))


def test_value_not_in_declared_levels():
    dom = infer_domain(pd.DataFrame({"colour": ["red", "blue", "red"]})).declared()
    with pytest.raises(DPCoreError, match=r"'colour'.*'green'.*does not list"):
        dom.encode(pd.DataFrame({"colour": ["red", "green"]}))
    # and through the public entry point
    with pytest.raises(DPCoreError, match=r"'colour'.*'green'"):
        dpcore.synthesize(pd.DataFrame({"colour": ["red", "green"]}), epsilon=1, seed=1, domain=dom, layers=1)


def test_missing_values_without_na_level():
    dom = infer_domain(pd.DataFrame({"c": ["p", "q"], "x": [1.0, 2.0]}), numeric={"x": [0, 5]}).declared()
    with pytest.raises(DPCoreError, match=r"'c' has 1 missing values.*no NA level"):
        dom.encode(pd.DataFrame({"c": ["p", None], "x": [1.0, 2.0]}))
    with pytest.raises(DPCoreError, match=r"'x' has 2 missing values.*no NA level"):
        dom.encode(pd.DataFrame({"c": ["p", "q"], "x": [np.nan, np.nan]}))


def test_duplicate_column_names():
    df = pd.DataFrame([[1, 2, 3], [2, 1, 3]], columns=["a", "dup", "dup"])
    with pytest.raises(InputError, match="'dup'.*duplicate|duplicate.*'dup'"):
        infer_domain(df)
    with pytest.raises(DPCoreError, match="'dup'"):
        dpcore.synthesize(df, epsilon=1, seed=1)


def test_empty_table():
    with pytest.raises(InputError, match="no columns"):
        infer_domain(pd.DataFrame())
    with pytest.raises(DPCoreError, match="no columns"):
        dpcore.synthesize(pd.DataFrame(), epsilon=1)


def test_header_only_table():
    df = pd.DataFrame({"a": pd.Series([], dtype=object), "b": pd.Series([], dtype=float)})
    with pytest.raises(InputError, match="header but no rows"):
        infer_domain(df)
    with pytest.raises(DPCoreError, match="no rows"):
        dpcore.preview(df)


def test_unknown_column_in_numeric_spec():
    df = pd.DataFrame({"a": [1, 2, 3]})
    with pytest.raises(DPCoreError, match="'income'.*does not have"):
        infer_domain(df, numeric={"income": [0, 10]})


@pytest.mark.parametrize("spec,match", [
    ({"bins": 3}, r"'v'.*bounds"),
    ({"bounds": [5, 1]}, r"'v'.*lower < upper"),
    ({"bounds": [0, 10], "bins": 0}, r"'v'.*at least 1"),
    ([3, 2, 1], r"'v'.*strictly increasing"),
])
def test_bad_numeric_spec_names_the_column(spec, match):
    df = pd.DataFrame({"v": [1.0, 2.0, 3.0]})
    with pytest.raises(DomainError, match=match):
        infer_domain(df, numeric={"v": spec})


def test_every_error_is_a_dpcore_error_and_a_value_error():
    """The CLI and app catch DPCoreError; callers that expect ValueError still work."""
    for cls in (InputError, DomainError):
        assert issubclass(cls, DPCoreError) and issubclass(cls, ValueError)


def test_domain_column_missing_from_data_is_a_clear_error():
    """A declared domain naming a column the data lacks: DomainError naming it, not a KeyError."""
    df = pd.DataFrame({"a": ["x", "y"] * 20, "b": ["p", "q", "r", "s"] * 10})
    dom = infer_domain(df).declared()
    with pytest.raises(DomainError, match="'b'.*does not have"):
        dpcore.synthesize(df[["a"]], epsilon=1, seed=1, domain=dom)
    with pytest.raises(DomainError, match="'b'.*does not have"):
        dpcore.preview(df[["a"]], domain=dom)
