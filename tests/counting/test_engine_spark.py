"""Spark engine (local[2]): the same count tables, domains and releases as DuckDB and pandas.

One Spark session for the module (a JVM start takes seconds); deselect with -m 'not spark'.
"""
from __future__ import annotations

import os
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dpcore
from dpcore.counting import duckdb_engine as duckdb_counts
from dpcore.counting import spark_engine as spark_counts
from dpcore.counting.engines import count_table
from dpcore.counting.rows import margin_counts
from dpcore.data.domain import Domain
from dpcore.data.inference import infer_domain
from dpcore.data.io import read_table
from dpcore.errors import DomainError
from dpcore.output import synthesize_file
from tests.counting.test_engines import declared_domain, random_table

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark():
    pytest.importorskip("pyspark")
    return spark_counts.session("local[2]")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("spark")
    out = []
    for seed in (0, 1):
        csv = d / f"t{seed}.csv"
        random_table(seed).to_csv(csv, index=False)
        data = read_table(csv)
        parquet = d / f"t{seed}.parquet"
        pq.write_table(pa.Table.from_pandas(data, preserve_index=False), parquet)
        out.append((csv, parquet, data, declared_domain(data)))
    return out


def test_three_engines_same_count_table(spark, files):
    for csv, parquet, data, dom in files:
        expected = count_table(data, dom)
        for source in (csv, parquet):
            for got in (count_table(source, dom, engine="spark", spark_master=spark),
                        count_table(source, dom, engine="duckdb")):
                np.testing.assert_array_equal(got.codes, expected.codes)
                np.testing.assert_array_equal(got.counts, expected.counts)


def test_same_inferred_domain(spark, files):
    csv, parquet, _, _ = files[0]  # one table: inference runs a few queries per column
    for source in (csv, parquet):
        assert spark_counts.infer_domain(source, spark_master=spark).to_dict() == \
            infer_domain(read_table(source)).to_dict()


def test_same_column_facts_as_duckdb_and_memory(spark, tmp_path):
    """[typed-contracts] item 4: Spark gathers the same facts of each column as DuckDB (and, up to
    where an engine stops counting, as memory); one rule decides the domain from them."""
    from dpcore.counting.on_engine import column_facts
    from tests.counting.test_column_facts import LIMITS, engine_facts, memory_facts, tricky_table, up_to_cap

    csv = tmp_path / "t.csv"
    tricky_table().to_csv(csv, index=False)
    src = spark_counts.open_source(spark, csv)
    got = [column_facts(src, name, LIMITS, False) for name in src.columns]
    assert got == engine_facts(csv)
    assert [up_to_cap(m, e) for m, e in zip(memory_facts(csv), got)] == got
    assert spark_counts.infer_domain(csv, spark_master=spark).to_dict() == infer_domain(read_table(csv)).to_dict()


def test_spark_draws_and_writes_the_sets_with_the_in_memory_margins(spark, files, tmp_path, monkeypatch):
    """Spark's executors draw and write each set as part files (the driver draws nothing); the
    release is the in-memory one (same manifest) and its sets have its one- and two-way margins:
    equal for a cell draw (STEPS deals the same counts over the partitions), within sampling error
    for an i.i.d. draw (PrivBayes; χ² homogeneity at 10⁻³ / number of margins)."""
    import itertools

    from scipy import stats

    from dpcore.estimate import draws

    def no_records_here(self, *a, **k):
        raise AssertionError("the driver drew records")

    csv, _, data, dom = files[0]
    cols = list(dom.names)
    for method in ("steps", "privbayes"):
        rel = dpcore.synthesize(data, method, 1.0, seed=3, domain=dom)
        with monkeypatch.context() as m:  # executors import their own copy of the package: unaffected
            for cls in (draws.CellDraw, draws.IIDDraw, draws.FixedDraw):
                m.setattr(cls, "chunks", no_records_here)
            got = synthesize_file(csv, tmp_path / method, method, 1.0, seed=3, domain=dom, engine="spark",
                                  spark_master=spark, format="parquet", partitions=3)
        assert {k: v for k, v in got.manifest().items() if k != "summary"} == \
            {k: v for k, v in rel.manifest().items() if k != "summary"}
        out = got.sets[0]
        parts = sorted(p.name for p in out.glob("part-*.parquet"))
        assert len(parts) == 3 and (out / "_SUCCESS").exists() and (tmp_path / method / "_SUCCESS").exists()
        back = pq.read_table(out).to_pandas()
        mem = rel.sets[0]
        assert len(back) == len(mem) == rel.record_count["value"]
        # margins over the domain's cells (numeric values are drawn inside their bins: compare the bins)
        ca, cb = dom.encode(mem), dom.encode(back)
        groups = [(j,) for j in range(len(cols))] + list(itertools.combinations(range(len(cols)), 2))
        for g in groups:
            va, vb = (margin_counts(c, dom.shape, g).ravel() for c in (ca, cb))
            if method == "steps":
                assert (va == vb).all(), g
            else:
                keep = (va + vb) > 0
                assert stats.chi2_contingency(np.vstack([va[keep], vb[keep]]))[1] > 1e-3 / len(groups), g


def test_spark_deals_the_rounded_draw_of_an_epsilon_delta_aim_release(spark, files, tmp_path, monkeypatch):
    """An (ε, δ) AIM release draws its records by controlled rounding (TreeCountDraw): the executors
    deal the clique tables over the partitions, so the set's margin on every clique of the model
    (and every one-way margin) is the in-memory set's exactly; the driver draws nothing."""
    from dpcore.estimate import draws

    def no_records_here(self, *a, **k):
        raise AssertionError("the driver drew records")

    csv, _, data, dom = files[0]
    rel = dpcore.synthesize(data, "aim", 1.0, seed=4, domain=dom, delta=1e-9)
    assert rel.options["synthesis"] == "round"
    with monkeypatch.context() as m:
        m.setattr(draws.TreeCountDraw, "chunks", no_records_here)
        got = synthesize_file(csv, tmp_path / "aim", "aim", 1.0, seed=4, domain=dom, delta=1e-9, engine="spark",
                              spark_master=spark, format="parquet", partitions=3)
    assert {k: v for k, v in got.manifest().items() if k != "summary"} == \
        {k: v for k, v in rel.manifest().items() if k != "summary"}
    back = pq.read_table(got.sets[0]).to_pandas()
    assert len(back) == len(rel.sets[0]) == rel.record_count["value"]
    ca, cb = dom.encode(rel.sets[0]), dom.encode(back)
    names = list(dom.names)
    cliques = [tuple(names.index(a) for a in c) for c in rel.diagnostics["per_set"][0]["cliques"]]
    for g in cliques + [(j,) for j in range(len(names))]:
        assert (margin_counts(ca, dom.shape, g) == margin_counts(cb, dom.shape, g)).all(), g


def test_spark_sets_are_reproducible_for_a_seed_and_partition_count(spark, files, tmp_path):
    csv, _, _, dom = files[1]
    runs = [synthesize_file(csv, tmp_path / f"r{i}", "flat_laplace", 1.0, seed=9, domain=dom, engine="spark",
                            spark_master=spark, partitions=p) for i, p in enumerate((2, 2, 5))]
    tables = [pq.read_table(r.sets[0]).to_pandas() for r in runs]
    pd_equal = tables[0].equals(tables[1])
    assert pd_equal  # same seed, same partitions: the same records in the same order
    assert len(list(runs[2].sets[0].glob("part-*.parquet"))) == 5
    # another partition count deals the same cell counts otherwise: the same multiset, another order
    cells = [np.sort(np.ravel_multi_index(dom.encode(t).T, dom.shape)) for t in tables]
    np.testing.assert_array_equal(cells[0], cells[2])


def test_spark_bad_path_and_cancelled_job(spark, files, tmp_path):
    """An output path Spark cannot write: one line, nothing spent. A job cancelled while the set is
    written: one line, the folder marked _FAILED (no _SUCCESS, the partial set removed), the book's
    entry failed and still counted."""
    import threading

    from dpcore.errors import InputError
    from dpcore.studio.book_entry import BookEntry
    from dpcore.studio.workspace import Workspace

    csv, _, _, dom = files[0]
    ws = Workspace(tmp_path / "ws")
    from dpcore.counting.spark_engine import fingerprint

    fp = ws.add_file_table(csv, fingerprint(csv, spark_master=spark)).fingerprint
    record = BookEntry(ws.book, fp, 1.0, "steps", "add_remove", csv.name)
    with pytest.raises(InputError, match="Spark cannot") as err:
        synthesize_file(csv, "file:///proc/dpcore-nowhere/out", "steps", 1.0, domain=dom, engine="spark",
                        spark_master=spark, record=record)
    assert "\n" not in str(err.value) and record.entry_id is None and ws.book.spent(fp) == 0.0

    sc = spark.sparkContext
    started = threading.Event()

    def cancel_when_writing():
        started.wait(60)
        for _ in range(3000):
            if sc.statusTracker().getActiveJobsIds():
                sc.cancelAllJobs()
                return
            time.sleep(0.01)

    def progress(msg):
        if "drawn by Spark" in msg:
            started.set()

    killer = threading.Thread(target=cancel_when_writing)
    killer.start()
    out = tmp_path / "cancelled"
    with pytest.raises(InputError, match="cancelled") as err:
        synthesize_file(csv, out, "steps", 1.0, seed=1, domain=dom, engine="spark", spark_master=spark,
                        partitions=8, progress=progress, record=record)
    killer.join()
    assert "\n" not in str(err.value)
    assert {p.name for p in out.iterdir()} == {"_FAILED"}
    assert ws.book.entry(record.entry_id)["status"] == "failed" and ws.book.spent(fp) == pytest.approx(1.0)


def test_outside_domain_names_column_and_value(spark, files):
    csv, parquet, _, dom = files[0]
    d = dom.to_dict()
    d["attributes"][0]["levels"] = ["x", "NA"]
    for source in (csv, parquet):
        with pytest.raises(DomainError, match="column 'code' has value '007'"):
            count_table(source, Domain.from_dict(d), engine="spark", spark_master=spark)
        with pytest.raises(DomainError, match="column 'code' has value '007'"):
            duckdb_counts.count_table(source, Domain.from_dict(d))


def test_cli_spark_output_is_ours_only(tmp_path):
    """The JVM's own log lines and stack traces go to Spark's log file, not under our output: a bad
    master is one stderr line naming the option and the log; a good run prints nothing from Java."""
    import subprocess
    import sys

    src = tmp_path / "t.csv"
    src.write_text("a,b\nx,1\ny,2\nx,2\n")
    bad = subprocess.run([sys.executable, "-m", "dpcore", "synth", str(src), "--out", str(tmp_path / "x"),
                          "--engine", "spark", "--spark-master", "bogus://nowhere"],
                         capture_output=True, text=True, timeout=300)
    lines = [ln for ln in bad.stderr.splitlines() if ln.strip()]
    assert bad.returncode == 2 and len(lines) == 1, bad.stderr
    assert lines[0].startswith("error: --spark-master 'bogus://nowhere'") and "Spark's log:" in lines[0]
    log = lines[0].split("Spark's log: ", 1)[1].strip()
    assert os.path.exists(log)  # kept: the curator reads why Spark failed there
    os.unlink(log)
    good = subprocess.run([sys.executable, "-m", "dpcore", "synth", str(src), "--out", str(tmp_path / "o"),
                           "--engine", "spark", "--spark-master", "local[1]", "--seed", "1"],
                          capture_output=True, text=True, timeout=300)
    assert good.returncode == 0, good.stderr
    assert good.stderr.strip() == "", good.stderr
    assert not any(w in good.stdout for w in ("WARN", "log4j", "Exception")), good.stdout


def test_the_jvm_redirect_is_private_serialised_and_restores_the_fds(tmp_path, monkeypatch):
    """The log is created 0600; two overlapping starts cannot leave fds 1/2 on a log ([review]);
    when no log can be made, the redirect yields None and nothing is redirected."""
    import stat
    import threading

    before = [os.fstat(1).st_ino, os.fstat(2).st_ino]
    logs, inside = [], []

    def start():
        with spark_counts._jvm_output_to_log() as log:
            logs.append(log)
            inside.append(os.fstat(1).st_ino == os.stat(log).st_ino)
            time.sleep(0.2)

    threads = [threading.Thread(target=start) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [os.fstat(1).st_ino, os.fstat(2).st_ino] == before and inside == [True, True]
    assert all(stat.S_IMODE(os.stat(log).st_mode) == 0o600 for log in logs) and len(set(logs)) == 2
    for log in logs:
        os.unlink(log)
    monkeypatch.setattr(spark_counts.tempfile, "mkstemp", lambda **kw: (_ for _ in ()).throw(OSError("no tmp")))
    with spark_counts._jvm_output_to_log() as log:
        assert log is None and os.fstat(1).st_ino == before[0]


def test_spark_clamped_counts_equal_the_in_memory_counts(spark, tmp_path):
    """[numeric-columns]: the records clamped into the end bins, counted in Spark's SQL (curator-only, NOT DP)."""
    from tests.counting.test_engine_clamped import declared_domain as clamped_domain
    from tests.counting.test_engine_clamped import out_of_bounds_table

    dom = clamped_domain()
    csv = tmp_path / "clamped.csv"
    out_of_bounds_table(11).to_csv(csv, index=False)
    parquet = tmp_path / "clamped.parquet"
    pq.write_table(pa.Table.from_pandas(out_of_bounds_table(11), preserve_index=False), parquet)
    for source in (csv, parquet):
        expected = dom.clamped_counts(read_table(source))
        assert expected["age"] > 0 and expected["wage"] > 0
        curator: dict = {}
        count_table(source, dom, engine="spark", spark_master=spark, curator=curator)
        assert curator["clamped_records"] == expected
