"""bench/speed/engines.py: the ``clamped:duckdb`` case's scan sums every numeric column of the bench's
domain with the in-memory clamped counts, and its ratios pair it with the count of the same rows."""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "speed"))

import engines

from dpcore.data.domain import Domain, numeric_attribute


def test_the_clamped_scan_sums_each_numeric_column_as_the_in_memory_count(tmp_path):
    path = tmp_path / "engines_small.parquet"
    engines.write_file(3000, path)
    # narrower edges than the generator's, so that records do fall outside: age > 65, income > 50000
    attrs = [numeric_attribute("age", [0, 18, 30, 45, 65], dtype="int64") if a.name == "age" else
             numeric_attribute("income", [0.0, 10000.0, 25000.0, 50000.0], na=True) if a.name == "income" else a
             for a in engines.domain().attributes]
    dom = Domain(tuple(attrs)).declared()
    res = engines.clamped_scan(path, dom)
    expected = dom.clamped_counts(pd.read_parquet(path))
    assert res["numeric_columns"] == ["age", "income"]
    assert expected["age"] > 0 and expected["income"] > 0
    assert res["column_sums"] == expected
    assert res["clamped_records"] == expected
    assert res["wall_s"] >= 0 and res["cpu_s"] >= 0


def test_the_bench_domain_scans_both_numeric_columns(tmp_path):
    path = tmp_path / "engines_small.parquet"
    engines.write_file(2000, path)
    res = engines.clamped_scan(path, engines.domain())
    assert set(res["column_sums"]) == {"age", "income"}  # the generator keeps both inside their edges
    assert res["column_sums"] == {"age": 0, "income": 0} and res["clamped_records"] == {}


def test_ratios_pair_a_clamped_case_with_the_count_of_the_same_rows_and_engine():
    results = [{"case": "count:duckdb:1e6", "wall_s": 4.0, "cpu_s": 8.0, "peak_rss_mb": 200.0},
               {"case": "clamped:duckdb:1e6", "wall_s": 1.0, "cpu_s": 2.0, "peak_rss_mb": 100.0},
               {"case": "clamped:duckdb:1e7", "wall_s": 3.0, "cpu_s": 3.0, "peak_rss_mb": 100.0},
               {"case": "count:spark:1e7", "wall_s": 9.0, "cpu_s": 9.0, "peak_rss_mb": 100.0},
               {"case": "release:aim:1e6", "wall_s": 9.0, "cpu_s": 9.0, "peak_rss_mb": 100.0}]
    assert engines.ratios_to_count(results) == {
        "clamped:duckdb:1e6": {"wall_s": 0.25, "cpu_s": 0.25, "peak_rss_mb": 0.5}}
    results[0] = {"case": "count:duckdb:1e6", "error": "boom"}
    assert engines.ratios_to_count(results) == {}


def test_a_childs_peak_rss_is_its_own_not_the_parents():
    """A child started by a parent holding 300 MB reports its own peak (imports only), not the parent's:
    Linux keeps the replaced image's RSS in ``ru_maxrss`` across ``exec``."""
    import subprocess

    import numpy as np

    held = np.ones(300 * 2**20 // 8)  # 300 MB touched in this process before the child starts
    code = ("import sys; sys.path.insert(0, 'bench/speed'); import engines, resource; "
            "print(engines.peak_rss_mb(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    own, maxrss = map(float, out.stdout.split())
    assert held.sum() == held.size
    assert 0 < own < 200, (own, maxrss)
