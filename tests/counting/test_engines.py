"""Count engines: DuckDB gives the pandas path's count tables, domains and releases.

Random tables (seeded) hold what the reading rules care about: "NA" and leading-zero
text that must survive, integer and float columns with missing markers, numeric bins
(values on the edges), empty text fields as missing, declared levels unseen in the data.
Equality is exact: same cells and counts, same released files for the same seed.
"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dpcore
from dpcore.cli import commands as cli
from dpcore.counting import duckdb_engine as duckdb_counts
from dpcore.counting.engines import count_table
from dpcore.counting.on_engine import expand_records
from dpcore.data.domain import Domain, numeric_attribute
from dpcore.data.inference import infer_domain
from dpcore.data.io import read_table
from dpcore.errors import DomainError, InputError, OptionError
from dpcore.estimate.draws import records
from dpcore.output import synthesize_file
from dpcore.output.chunks import write_sets
from dpcore.privacy.budget import Epsilon

METHODS = ("steps", "uh_random", "steps_lesda", "flat_laplace", "ipf", "privbayes")


def random_table(seed: int, n: int = 400) -> pd.DataFrame:
    """Raw text fields as a CSV would hold them (written with no quoting changes)."""
    rng = np.random.default_rng(seed)
    na = rng.random(n) < 0.1
    return pd.DataFrame({
        "code": rng.choice(["007", "02134", "NA", "x", "true"], n),          # text: leading zeros and "NA" survive
        "small": np.where(na, "", rng.integers(-2, 3, n).astype(str)),        # int with missing -> Int64
        "ratio": np.where(rng.random(n) < 0.05, "NaN", np.round(rng.normal(0, 3, n), 3).astype(str)),  # float
        "age": rng.choice([0, 17, 18, 45, 99, 100], n).astype(str),           # binned; 0 and 100 are the edges
        "note": rng.choice(["a", "b", ""], n),                                # text with empty fields (missing)
    })


def body(manifest: dict) -> dict:
    """The manifest without its summary (which holds the release's creation time)."""
    return {k: v for k, v in manifest.items() if k != "summary"}


def declared_domain(df_read: pd.DataFrame) -> Domain:
    # ratio gets public bounds: bins over its own min and max could not be declared
    dom = infer_domain(df_read, numeric={"age": [0, 18, 65, 100], "ratio": {"bounds": [-20, 20], "bins": 10}})
    attrs = list(dom.attributes)
    # a declared level that the data never shows (an empty cell everywhere)
    i = dom.names.index("code")
    attrs[i] = type(attrs[i])("code", "categorical", attrs[i].levels + ("unseen",), attrs[i].na, None, attrs[i].dtype)
    return Domain(tuple(attrs)).declared()


@pytest.fixture(scope="module", params=[0, 1, 2])
def table(request, tmp_path_factory):
    d = tmp_path_factory.mktemp(f"t{request.param}")
    raw = random_table(request.param)
    csv = d / "t.csv"
    raw.to_csv(csv, index=False)
    data = read_table(csv)
    pq.write_table(pa.Table.from_pandas(data, preserve_index=False), d / "t.parquet")
    return d, csv, d / "t.parquet", data, declared_domain(data)


def test_reading_rules_survive(table):
    _, csv, _, data, _ = table
    with duckdb_counts.connect() as con:
        src = duckdb_counts.open_source(con, csv)
    assert {c: src.columns[c].kind for c in src.columns} == {"code": "text", "small": "int", "ratio": "float",
                                                           "age": "int", "note": "text"}
    assert src.dtypes == {c: str(data[c].dtype) for c in data.columns}


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_count_tables_identical(table, fmt):
    _, csv, parquet, data, dom = table
    expected = count_table(data, dom)
    got = count_table(csv if fmt == "csv" else parquet, dom, engine="duckdb", memory_limit="256MB")
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got.codes, expected.codes)
    np.testing.assert_array_equal(got.counts, expected.counts)
    assert got.n == len(data)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_inferred_domain_identical(table, fmt):
    _, csv, parquet, _, _ = table
    source = csv if fmt == "csv" else parquet
    got = duckdb_counts.infer_domain(source)
    assert got.to_dict() == infer_domain(read_table(source)).to_dict()
    assert got.inferred  # curator-only until declared


def test_releases_identical_for_every_method(table, tmp_path):
    _, csv, parquet, data, dom = table
    for method in METHODS:
        rel = dpcore.synthesize(data, method, 1.0, sets=2, seed=11, domain=dom)
        for source, fmt in ((csv, "csv"), (parquet, "parquet")):
            out = tmp_path / f"{method}-{fmt}"
            got = synthesize_file(source, out, method, 1.0, sets=2, seed=11, domain=dom, engine="duckdb",
                                  format=fmt, chunk_rows=97)
            assert body(got.manifest()) == body(rel.manifest()), method
            assert body(json.loads((out / "manifest.json").read_text())) == body(json.loads(rel.manifest_json()))
            assert got.manifest()["summary"]["table"] == source.name  # the file the release read
            for frame, path in zip(rel.sets, got.sets):
                if fmt == "csv":
                    assert path.read_text() == frame.to_csv(index=False), (method, path)
                else:
                    back = pq.read_table(path).to_pandas()
                    assert back.astype(object).where(back.notna(), None).values.tolist() == \
                        frame.astype(object).where(frame.notna(), None).values.tolist(), (method, path)


def test_release_depends_on_records_not_their_order(table):
    """Why the engine may hand methods the count table's sorted cells."""
    _, _, _, data, dom = table
    shuffled = data.sample(frac=1.0, random_state=3).reset_index(drop=True)
    for method in METHODS:
        a = dpcore.synthesize(data, method, 1.0, seed=5, domain=dom)
        b = dpcore.synthesize(shuffled, method, 1.0, seed=5, domain=dom)
        pd.testing.assert_frame_equal(a.sets[0], b.sets[0])


def test_expanded_records_are_compact_and_exact(table):
    _, _, _, data, dom = table
    t = count_table(data, dom)
    X = expand_records(t)
    assert X.dtype == np.uint8 and X.shape == (len(data), len(dom))
    np.testing.assert_array_equal(np.sort(dom.encode(data).view([("", np.int64)] * len(dom)), axis=0).view(np.int64)
                                  .reshape(-1, len(dom)), X.astype(np.int64))


def test_chunked_decode_equals_whole_decode():
    dom = Domain((numeric_attribute("x", [0, 1, 5], na=True, dtype="int64"),
                  numeric_attribute("y", [0.0, 0.5, 1.0])), "declared public by the curator")
    rng = np.random.default_rng(0)
    sets = [rng.integers(0, [3, 2], size=(n, 2)) for n in (1000, 0, 37)]
    a, b = np.random.default_rng(9), np.random.default_rng(9)
    whole = [dom.decode(c, a) for c in sets]
    import tempfile
    from pathlib import Path
    out = Path(tempfile.mkdtemp())
    paths = write_sets(sets, dom, b, out, "csv", chunk_rows=64)
    for frame, path in zip(whole, paths):
        assert path.read_text() == frame.to_csv(index=False)
    assert a.random() == b.random()  # the generator ends where the whole decode leaves it


@pytest.mark.parametrize("edit, column, words", [
    (lambda d: d["attributes"][0].update(levels=["x", "NA"]), "code", "'007'"),
    (lambda d: d["attributes"][4].update(na=False), "note", "missing values"),
])
def test_values_outside_the_domain_name_column_and_value(table, edit, column, words):
    _, csv, parquet, data, dom = table
    d = dom.to_dict()
    edit(d)
    bad = Domain.from_dict(d)
    with pytest.raises(DomainError) as pandas_err:
        bad.encode(data)
    for source in (csv, parquet):
        with pytest.raises(DomainError) as err:
            count_table(source, bad, engine="duckdb")
        msg = str(err.value)
        assert f"column '{column}'" in msg and words in msg and "\n" not in msg
        assert f"column '{column}'" in str(pandas_err.value)


def test_numbers_outside_the_edges_are_clamped_as_in_memory(table):
    """[numeric-columns]: DuckDB clamps a number outside the edges into the end bins, as Domain.encode does."""
    _, csv, parquet, data, dom = table
    d = dom.to_dict()
    d["attributes"][3].update(edges=[10, 18, 65, 70])
    narrow = Domain.from_dict(d)
    assert narrow.clamped_counts(data)["age"] > 0
    expected = count_table(data, narrow)
    for source in (csv, parquet):
        got = count_table(source, narrow, engine="duckdb")
        np.testing.assert_array_equal(got.codes, expected.codes)
        np.testing.assert_array_equal(got.counts, expected.counts)


def test_packed_key_and_code_columns_count_the_same(table):
    """DuckDB counts over one packed BIGINT key when the domain's cells fit in int64; the
    p-column GROUP BY (the path of wider domains) gives the same table."""
    from dpcore.counting import on_engine

    _, csv, parquet, data, dom = table
    for source in (csv, parquet):
        with duckdb_counts.connect() as con:
            src = duckdb_counts.open_source(con, source)
            packed = on_engine.count_table(src, dom)
            src.keys = None
            columns = on_engine.count_table(src, dom)
        np.testing.assert_array_equal(packed.codes, columns.codes)
        np.testing.assert_array_equal(packed.counts, columns.counts)


def test_domain_beyond_int64_cells_counts_on_duckdb(tmp_path):
    """64 two-level columns: 2^64 cells, no one-word key: counted over the code columns."""
    rng = np.random.default_rng(5)
    df = pd.DataFrame({f"v{j}": rng.choice(["a", "b"], 300) for j in range(64)})
    path = tmp_path / "wide.parquet"
    df.to_parquet(path, index=False)
    dom = infer_domain(df).declared()
    on_file = count_table(path, dom, engine="duckdb")
    in_memory = count_table(df, dom)
    np.testing.assert_array_equal(on_file.codes, in_memory.codes)
    np.testing.assert_array_equal(on_file.counts, in_memory.counts)


def test_numeric_attribute_on_text_refuses_non_numbers(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("v\n1\n2\nabc\n")
    dom = Domain((numeric_attribute("v", [0, 5]),), "declared public by the curator")
    with pytest.raises(DomainError, match="column 'v' is declared numeric but holds non-numeric values such as 'abc'"):
        count_table(p, dom, engine="duckdb")


def test_file_larger_than_memory_limit_releases(tmp_path):
    """An 18 MB file under memory_limit=16MB: DuckDB streams it (the file is never held whole)."""
    rng = np.random.default_rng(1)
    n = 1_500_000
    cols = {f"a{j}": rng.integers(0, 6, n) for j in range(6)}
    path = tmp_path / "big.csv"
    import pyarrow.csv as pcsv
    pcsv.write_csv(pa.table(cols), path)
    assert path.stat().st_size > 16 * 2**20
    dom = Domain(tuple(dpcore.Attribute(f"a{j}", "categorical", tuple(range(6)), False, None, "int64")
                       for j in range(6))).declared()
    expected = count_table(np.column_stack(list(cols.values())), dom)
    got = count_table(path, dom, engine="duckdb", memory_limit="16MB", threads=1)
    np.testing.assert_array_equal(got.codes, expected.codes)
    np.testing.assert_array_equal(got.counts, expected.counts)
    rel = synthesize_file(path, tmp_path / "out", "flat_laplace", 1.0, seed=1, domain=dom, engine="duckdb",
                          memory_limit="16MB", format="parquet")
    assert rel.ledger.epsilon == pytest.approx(1.0)
    assert pq.read_metadata(rel.sets[0]).num_rows == rel.record_count["value"]


def test_engine_options_checked(tmp_path, table):
    _, csv, _, _, dom = table
    with pytest.raises(OptionError, match="memory-limit"):
        synthesize_file(csv, tmp_path / "o", engine="spark", memory_limit="1GB", domain=dom)
    with pytest.raises(OptionError, match="format"):
        synthesize_file(csv, tmp_path / "o", format="xlsx", domain=dom)
    with pytest.raises(OptionError, match="memory"):
        count_table(csv, dom, engine="duckdb", memory_limit="lots")
    with pytest.raises(OptionError, match="no option"):
        count_table(pd.DataFrame(), dom, memory_limit="1GB")
    with pytest.raises(InputError, match="no such file"):
        count_table(tmp_path / "missing.csv", dom, engine="duckdb")


def test_cli_duckdb_parquet_matches_pandas(table, tmp_path, capsys):
    d, csv, _, _, dom = table
    (tmp_path / "domain.json").write_text(dom.to_json())
    common = [str(csv), "--domain", str(tmp_path / "domain.json"), "--seed", "4", "--sets", "2"]
    assert cli.main(["synth", *common, "--out", str(tmp_path / "a")]) == 0
    assert cli.main(["synth", *common, "--out", str(tmp_path / "b"), "--engine", "duckdb",
                     "--memory-limit", "256MB"]) == 0
    assert cli.main(["synth", *common, "--out", str(tmp_path / "c"), "--engine", "duckdb", "--format", "parquet"]) == 0
    assert "engine duckdb: counted in" in capsys.readouterr().out
    for i in (1, 2):
        a = (tmp_path / "a" / f"synthetic_{i}.csv").read_text()
        assert (tmp_path / "b" / f"synthetic_{i}.csv").read_text() == a
        back = pq.read_table(tmp_path / "c" / f"synthetic_{i}.parquet").to_pandas()
        assert len(back) == a.count("\n") - 1
    manifests = [json.loads((tmp_path / x / "manifest.json").read_text()) for x in "ab"]
    assert body(manifests[0]) == body(manifests[1])
    assert manifests[0]["summary"]["table"] == manifests[1]["summary"]["table"] == csv.name
    assert cli.main(["synth", *common, "--out", str(tmp_path / "e"), "--engine", "duckdb", "--memory-limit", "x"]) == 2
    assert "memory-limit" in capsys.readouterr().err


def test_server_paths_stay_inside_the_data_folder(tmp_path):
    from dpcore.data import server_files

    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    (data / "sub" / "t.csv").write_text("a\n1\n")
    (tmp_path / "secret.csv").write_text("a\n1\n")
    (data / "link.csv").symlink_to(tmp_path / "secret.csv")
    env = {server_files.DATA_DIR_ENV: str(data)}
    folder = server_files.data_dir(env)
    assert server_files.resolve_inside(folder, "sub/t.csv") == (data / "sub" / "t.csv").resolve()
    for bad in ("../secret.csv", str(tmp_path / "secret.csv"), "link.csv", "sub/../../secret.csv"):
        with pytest.raises(InputError, match="outside the data folder"):
            server_files.resolve_inside(folder, bad)
    with pytest.raises(InputError, match="not a file"):
        server_files.resolve_inside(folder, "sub")
    assert server_files.list_tables(folder) == ["sub/t.csv"]  # the link leading out is not listed
    assert server_files.output_dir(env) == data.resolve() / "releases"
    assert server_files.data_dir({}) is None
    with pytest.raises(InputError, match="not a folder"):
        server_files.data_dir({server_files.DATA_DIR_ENV: str(tmp_path / "nope")})


def test_app_releases_a_table_on_the_server(tmp_path, monkeypatch):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    data = tmp_path / "data"
    data.mkdir()
    random_table(0).to_csv(data / "t.csv", index=False)
    monkeypatch.setenv("DPSTUDIO_DATA_DIR", str(data))
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=60)
    at.run()
    at.switch_page("pages/1_data.py").run()
    at.selectbox(key="w_srv_table").select("t.csv").run()
    at.button(key="w_srv_infer").click().run()
    inferred = at.text_area(key="w_srv_domain").value
    assert not at.error and '"source": "inferred' in inferred
    at.checkbox(key="w_srv_declared").check().run()
    at.number_input(key="w_srv_seed").set_value(3).run()
    # 'ratio' is binned over its own min and max: declaring that is refused, nothing is released
    assert any("'ratio'" in c.value and "cannot be declared" in c.value for c in at.caption)
    at.button(key="w_srv_release").click().run()
    assert len(at.error) == 1 and "Not declared: the bin edges of 'ratio'" in at.error[0].value
    assert not (data / "releases").exists()
    d = json.loads(inferred)
    ratio = next(a for a in d["attributes"] if a["name"] == "ratio")
    assert ratio["origin"] == "data_range"
    ratio.update(edges=[-5, 0, 5], origin="declared")  # values outside are clamped into the end bins
    at.text_area(key="w_srv_domain").input(json.dumps(d)).run()
    at.button(key="w_srv_release").click().run()
    assert not at.error, [e.value for e in at.error]
    clamped = Domain.from_dict(d).clamped_counts(read_table(data / "t.csv"))
    assert clamped["ratio"] > 0
    assert (f"NOT DP, curator-only: records clamped into the end bins: ratio {clamped['ratio']:,}"
            in "\n".join(c.value for c in at.caption))
    out = next((data / "releases").iterdir())
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["dp"] is True and manifest["domain"]["source"] == "declared public by the curator"
    assert pq.read_metadata(out / "synthetic_1.parquet").num_rows == manifest["record_count"]["value"]
    at.text_input(key="w_srv_path").input("../t.csv").run()
    assert "outside the data folder" in at.error[0].value


def test_cli_domain_on_duckdb_matches_pandas(tmp_path, capsys):
    csv = tmp_path / "t.csv"
    random_table(1).to_csv(csv, index=False)
    for engine in ("pandas", "duckdb"):
        assert cli.main(["domain", str(csv), "--out", str(tmp_path / f"{engine}.json"), "--engine", engine,
                         "--numeric", "age=0,18,65,100"]) == 0
    assert (tmp_path / "pandas.json").read_text() == (tmp_path / "duckdb.json").read_text()


def test_privbayes_on_the_count_table_equals_on_records(table):
    """PrivBayes reads the count table (cells weighted by counts): the same scores and release."""
    from dpcore.privacy.definitions import ReleaseContext
    from dpcore.privacy.ledger import Ledger
    from dpcore.privacy.neighbours import Neighbours
    from dpcore.synthesizers import privbayes

    _, _, _, data, dom = table
    X = dom.encode(data)
    t = count_table(data, dom)
    x, pi = X[:, 0], np.ravel_multi_index((X[:, 1], X[:, 2]), (dom.shape[1], dom.shape[2]))
    cx, cpi = t.codes[:, 0], np.ravel_multi_index((t.codes[:, 1], t.codes[:, 2]), (dom.shape[1], dom.shape[2]))
    assert privbayes._sparse_mi(x, dom.shape[0], pi) == privbayes._sparse_mi(cx, dom.shape[0], cpi, t.counts)
    opts = privbayes.resolve(dom, degree=2)
    for nb in (Neighbours("add_remove"), Neighbours("replace")):
        ctx = ReleaseContext(nb, 300)
        ra, rb = np.random.default_rng(1), np.random.default_rng(1)
        a = privbayes.synthesize_set(X, dom, opts, Epsilon(1.0), ra, Ledger("a"), "s", ctx)
        b = privbayes.synthesize_set(t, dom, opts, Epsilon(1.0), rb, Ledger("b"), "s", ctx)
        np.testing.assert_array_equal(records(a[0], ra, len(dom)), records(b[0], rb, len(dom)))
        assert a[1] == b[1]


def test_default_engine_is_duckdb_above_the_size_threshold(tmp_path, monkeypatch):
    from dpcore.output import file_release

    p = tmp_path / "t.csv"
    random_table(0).to_csv(p, index=False)
    assert file_release.default_engine(p) == "pandas"
    monkeypatch.setattr(file_release, "AUTO_DUCKDB_BYTES", 10)
    assert file_release.default_engine(p) == "duckdb"
    assert file_release.default_engine(tmp_path / "missing.csv") == "pandas"


def test_numeric_binning_spec_is_read_the_same_in_memory_and_on_duckdb(tmp_path):
    """One reader of a column's numeric spec (dpcore.data.domain.numeric_spec_edges) for both paths:
    the same edges, and the same one-line error for a spec without bounds."""
    import pandas as pd

    from dpcore.counting import duckdb_engine as duckdb_counts
    from dpcore.data.domain import numeric_spec_edges

    df = pd.DataFrame({"x": [1.5, 2.5, 7.0, 9.0], "g": ["a", "b", "a", "b"]})
    path = tmp_path / "t.csv"
    df.to_csv(path, index=False)
    spec = {"x": {"bounds": [0, 10], "bins": 5}}
    mem = dpcore.infer_domain(df, numeric=spec)
    eng = duckdb_counts.infer_domain(path, numeric=spec)
    assert mem["x"].edges == eng["x"].edges == numeric_spec_edges("x", spec["x"], 10) == (0.0, 2.0, 4.0, 6.0, 8.0, 10.0)
    for infer, src in ((dpcore.infer_domain, df), (duckdb_counts.infer_domain, path)):
        with pytest.raises(dpcore.DomainError, match="column 'x': numeric binning needs \"bounds\""):
            infer(src, numeric={"x": {"bins": 3}})


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
def test_progress_messages_label_exact_counts_not_dp(table, tmp_path, engine):
    """The progress shown in the app and CLI may carry the true record count only labelled
    curator-only, NOT DP; every other message carries no exact count."""
    _, csv, _, data, dom = table
    messages = []
    synthesize_file(csv, tmp_path / "o", "flat_laplace", 1.0, seed=5, domain=dom, engine=engine,
                    progress=messages.append)
    exact = [m for m in messages if f"{len(data):,} records" in m]
    assert exact, messages  # the count is reported ...
    assert all("NOT DP" in m for m in exact), exact  # ... and labelled
