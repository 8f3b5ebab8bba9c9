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
from dpcore.counting.engines import count_table
from dpcore.data.domain import Domain, infer_domain
from dpcore.counting import duckdb_engine as duckdb_counts, spark_engine as spark_counts
from dpcore.output import synthesize_file
from dpcore.errors import DomainError
from dpcore.data.io import read_table

from test_engines import declared_domain, random_table

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


def test_same_release(spark, files, tmp_path):
    csv, _, data, dom = files[0]
    for method in ("steps", "privbayes"):
        rel = dpcore.synthesize(data, method, 1.0, sets=2, seed=3, domain=dom)
        got = synthesize_file(csv, tmp_path / method, method, 1.0, sets=2, seed=3, domain=dom, engine="spark",
                              spark_master=spark, chunk_rows=101)
        # the same manifest but for its summary (the creation time and the file's name)
        assert {k: v for k, v in got.manifest().items() if k != "summary"} == \
            {k: v for k, v in rel.manifest().items() if k != "summary"}
        for frame, path in zip(rel.sets, got.sets):
            assert path.read_text() == frame.to_csv(index=False)


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
