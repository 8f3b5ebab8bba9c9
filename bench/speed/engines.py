"""Long tables on the count engines ([engines]): DuckDB and Spark count tables, releases from a file.

Writes generated Parquet files of 10^6, 10^7 and 5·10^7 rows × 15 columns to ``bench/out/``
(git-ignored; row groups of 10^6, so the generator never holds a whole file), then runs
every case in a fresh child process (``python bench/speed/engines.py --case NAME``) that reports
its wall time, CPU time and peak RSS (:func:`peak_rss_mb`: the child's own high-water mark,
imports and data included). Results go to ``bench/out/engines.json``.

The table: a latent class (5 classes) drives 13 categorical columns (2 to 4 levels;
text, integer and boolean) and two numbers, ``age`` (whole years, 5 public bins) and
``income`` (float, 5 public bins): 2.5·10^6 cells, about 10^5 to 10^6 non-empty. The domain
is declared (``bench/out/engines_domain.json``).

Cases:
* ``count:duckdb:<rows>``: ``count_table(path, dom, engine="duckdb", memory_limit="512MB")``;
* ``count:spark:<rows>``: the same on Spark ``local[2]`` (JVM start excluded from the time),
  compared cell by cell with the DuckDB table saved by the DuckDB case;
* ``clamped:duckdb:<rows>``: the curator-only clamped-count scan alone
  (``on_engine.clamped_counts``, CURATOR-ONLY, NOT DP): the second scan a release on a file makes
  after its count, one ``SUM(CASE ...)`` per numeric column (``age``, ``income``). The connection
  (``memory_limit="512MB"``) and the file's view are opened first, outside the time (``open_s``);
  the time is the scan. The run's summary gives its wall and CPU over the ``count:duckdb`` case of
  the same rows in the same run (``ratio_to_count``); the per-column sums are recorded (the
  generator keeps ``age`` and ``income`` inside their edges, so they are 0: the scan's cost does
  not depend on it);
* ``fingerprint:duckdb:<rows>``: the budget book's content fingerprint of the file alone
  (``dpcore.counting.duckdb_engine.fingerprint``'s query: one scan, an MD5 per row and per value), the scan
  every release on a file makes for the book beside its count. Opened and timed as ``clamped``; the
  summary gives its wall and CPU over the ``count:duckdb`` case of the same rows in the same run;
* ``cli:<engine>:<rows>``: ``python -m dpcore synth FILE --engine duckdb|spark --format parquet``
  (steps defaults, ε = 1, m = 1; with Spark the JVM start is inside the time, and the peak RSS
  is the Python process only);
* ``release:<method>:<rows>``: ``synthesize_file(..., engine="duckdb", memory_limit="512MB",
  format="parquet")``, method defaults, ε = 1, m = 1, seed 0: file → Parquet synthetic set
  (the rows written are read back from the file's footer, and ``_SUCCESS`` checked);
* ``spark:<method>:<rows>``: ``synthesize_file(..., engine="spark")`` on ``local[2]`` (JVM start
  excluded): the executors draw and write the set as Parquet part files; the peak RSS is the
  Python driver's only; the part files' rows and both ``_SUCCESS`` markers are checked.

Each run also records the 1-minute load average when it starts (the machine is shared).

Usage: ``PYTHONPATH=. .venv/bin/python bench/speed/engines.py [--quick] [--only CASES] [--reps N]`` (``--quick``: 10^6
rows only; ``--reps``: N fresh children per case, medians of wall, CPU and peak RSS, each run kept too).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parents[1]
ROOT = BENCH.parent
OUT = BENCH / "out"
sys.path.insert(0, str(ROOT))

SIZES = {"1e6": 10**6, "2e6": 2 * 10**6, "1e7": 10**7, "5e7": 5 * 10**7, "1e8": 10**8}
#: where the generated inputs go (``--data-dir``; bench/out by default, /tmp for the 10^8-row file)
DATA = OUT
CATS = [("sex", ["F", "M"]), ("region", [1, 2, 3, 4]), ("urban", [True, False]), ("tenure", ["own", "rent", "other"]),
        ("married", ["yes", "no"]), ("educ", ["primary", "secondary", "tertiary"]),
        ("work", ["employed", "unemployed", "inactive"]),
        ("health", [1, 2, 3]), ("car", ["0", "1"]), ("internet", ["yes", "no"]), ("born", ["here", "abroad"]),
        ("lang", ["a", "b"]), ("voted", ["yes", "no"])]
AGE_EDGES = [0, 18, 30, 45, 65, 100]
INCOME_EDGES = [0.0, 10000.0, 25000.0, 50000.0, 100000.0, 1000000.0]


def domain():
    from dpcore.data.domain import Attribute, Domain, numeric_attribute

    attrs = []
    for name, levels in CATS:
        dtype = "bool" if isinstance(levels[0], bool) else "int64" if isinstance(levels[0], int) else "str"
        attrs.append(Attribute(name, "categorical", tuple(levels), False, None, dtype))
    attrs.append(numeric_attribute("age", AGE_EDGES, dtype="int64"))
    attrs.append(numeric_attribute("income", INCOME_EDGES, na=True, dtype="float64"))
    return Domain(tuple(attrs)).declared()


def write_file(rows: int, path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(rows)
    k = 5
    probs = [rng.dirichlet(np.ones(len(levels)) * 0.7, size=k) for _, levels in CATS]
    writer = None
    chunk = 10**6
    for start in range(0, rows, chunk):
        m = min(chunk, rows - start)
        z = rng.integers(0, k, m)
        cols = {}
        for (name, levels), p in zip(CATS, probs):
            u = rng.random(m)[:, None]
            idx = (u > np.cumsum(p[z], axis=1)).sum(axis=1).clip(0, len(levels) - 1)
            vals = np.asarray(levels, dtype=object)[idx]
            if isinstance(levels[0], bool):
                cols[name] = pa.array(vals.astype(bool))
            elif isinstance(levels[0], int):
                cols[name] = pa.array(vals.astype(np.int64))
            else:
                cols[name] = pa.array(vals.astype(str)).dictionary_encode()
        cols["age"] = pa.array(np.clip(rng.normal(20 + 10 * z, 12, m), 0, 99).astype(np.int64))
        inc = np.clip(np.exp(rng.normal(9.5 + 0.3 * z, 0.8, m)), 0, 999999.0)
        cols["income"] = pa.array(np.where(rng.random(m) < 0.03, np.nan, np.round(inc, 2)), from_pandas=True)
        table = pa.table(cols)
        if writer is None:
            writer = pq.ParquetWriter(path, table.schema)
        writer.write_table(table)
    writer.close()


def peak_rss_mb() -> float:
    """This process's peak resident set size in MB: ``VmHWM`` of ``/proc/self/status`` (Linux), the
    high-water mark of this process's own memory. Not ``ru_maxrss``: Linux keeps in it the RSS
    of the image replaced at ``exec``, so a child started by a parent that wrote a large input file
    reported the parent's peak (390 MB for every 10^6- and 10^7-row case, against 209 to 240 MB
    run from a shell). ``ru_maxrss`` where there is no ``/proc``."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def data_file(size: str) -> Path:
    return DATA / f"engines_{size}.parquet"


def clamped_scan(path: Path, dom) -> dict:
    """Times :func:`dpcore.counting.on_engine.clamped_counts` alone on the file (connection and
    view opened first, outside the time). Returns wall, CPU, the open time, the numeric columns the
    query sums, their per-column sums (zeros included) and the function's answer. CURATOR-ONLY,
    NOT DP: counts of raw records, bench output only."""
    from dpcore.counting import duckdb_engine, on_engine

    t_open = time.perf_counter()
    with duckdb_engine.connect("512MB") as con:
        src = duckdb_engine.open_source(con, path)
        open_s = time.perf_counter() - t_open
        answers: list = []
        run_query = src.rows

        def rows_kept(query: str) -> list:  # the rows the scan returns, kept to record every column's sum
            answers.append(run_query(query))
            return answers[-1]

        src.rows = rows_kept
        t0, c0 = time.perf_counter(), time.process_time()
        clamped = on_engine.clamped_counts(src, dom)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    numeric = [a.name for a in dom.attributes if a.kind == "numeric"]
    sums = dict(zip(numeric, (int(n or 0) for n in answers[0][0]))) if answers else {}
    return {"wall_s": wall, "cpu_s": cpu, "open_s": open_s, "numeric_columns": numeric, "column_sums": sums,
            "clamped_records": clamped}


def fingerprint_scan(path: Path) -> dict:
    """Times the content fingerprint's scan alone on the file (connection and view opened first, outside
    the time), as :func:`dpcore.counting.duckdb_engine.fingerprint` runs it. Curator-side: nothing released."""
    from dpcore.counting import duckdb_engine
    from dpcore.counting import fingerprint as fp

    t_open = time.perf_counter()
    with duckdb_engine.connect("512MB") as con:
        src = duckdb_engine.open_source(con, path)
        open_s = time.perf_counter() - t_open
        t0, c0 = time.perf_counter(), time.process_time()
        key = fp.engine_fingerprint(src.columns, src.view, src.dialect, src.rows)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"wall_s": wall, "cpu_s": cpu, "open_s": open_s, "key": key.key, "rows": key.n_rows}


def ratios_to_count(results: list[dict]) -> dict[str, dict]:
    """For each ``clamped:<engine>:<rows>`` or ``fingerprint:<engine>:<rows>`` result with a
    ``count:<engine>:<rows>`` result in the
    same list (same run), its wall, CPU and peak RSS over the count's (medians when ``--reps`` > 1)."""
    by_case = {r["case"]: r for r in results if "error" not in r}
    out = {}
    for case, r in by_case.items():
        kind, engine, size = case.split(":")
        base = by_case.get(f"count:{engine}:{size}")
        if kind not in ("clamped", "fingerprint") or base is None:
            continue
        out[case] = {k: r[k] / base[k] for k in ("wall_s", "cpu_s", "peak_rss_mb") if base.get(k)}
    return out


def run_case(case: str) -> dict:
    kind, what, size = case.split(":")
    path = data_file(size)
    dom = domain()
    extra = {}
    load1 = os.getloadavg()[0]  # the machine is shared: the 1-minute load when this run starts
    if kind in ("clamped", "fingerprint"):  # a second scan beside the count, timed alone
        res = clamped_scan(path, dom) if kind == "clamped" else fingerprint_scan(path)
        peak = peak_rss_mb()
        return {"case": case, "peak_rss_mb": peak, "load1_at_start": load1, **res}
    if kind == "count" and what == "spark":
        from dpcore.counting import spark_engine as spark_counts

        spark = spark_counts.session("local[2]")
        t0, c0 = time.perf_counter(), time.process_time()
        table = spark_counts.count_table(path, dom, spark_master=spark)
    elif kind == "count":
        from dpcore.counting.engines import count_table

        t0, c0 = time.perf_counter(), time.process_time()
        table = count_table(path, dom, engine="duckdb", memory_limit="512MB")
    elif kind == "spark":  # synthesize_file on Spark local[2]: the executors draw and write the set
        from dpcore.counting import spark_engine as spark_counts
        from dpcore.output import synthesize_file

        spark = spark_counts.session("local[2]")
        out = OUT / f"engines_spark_{what}_{size}"
        t0, c0 = time.perf_counter(), time.process_time()
        rel = synthesize_file(path, out, what, 1.0, sets=1, seed=0, domain=dom, engine="spark", spark_master=spark)
        import pyarrow.parquet as pq
        parts = sorted(Path(rel.sets[0]).glob("part-*.parquet"))
        extra = {"rows_out": rel.record_count["value"], "timings": rel.timings, "parts": len(parts),
                 "rows_written": sum(pq.read_metadata(f).num_rows for f in parts),
                 "set_success": (Path(rel.sets[0]) / "_SUCCESS").exists(),
                 "release_success": (out / "_SUCCESS").exists()}
        shutil.rmtree(out, ignore_errors=True)
    elif kind == "cli":  # end to end through the command line, steps defaults
        from dpcore.cli import commands as cli

        out = OUT / f"engines_cli_{what}_{size}"
        (OUT / "engines_domain.json").write_text(dom.to_json())
        t0, c0 = time.perf_counter(), time.process_time()
        code = cli.main(["synth", str(path), "--out", str(out), "--engine", what, "--format", "parquet", "--seed", "0",
                         "--domain", str(OUT / "engines_domain.json")]
                        + (["--memory-limit", "512MB"] if what == "duckdb" else ["--spark-master", "local[2]"]))
        import pyarrow.parquet as pq
        extra = {"exit": code, "rows_out": pq.read_metadata(out / "synthetic_1.parquet").num_rows}
        shutil.rmtree(out, ignore_errors=True)
    else:
        from dpcore.output import synthesize_file

        t0, c0 = time.perf_counter(), time.process_time()
        out = OUT / f"engines_release_{what}_{size}"
        rel = synthesize_file(path, out, what, 1.0, sets=1, seed=0, domain=dom, engine="duckdb",
                              memory_limit="512MB", format="parquet")
        import pyarrow.parquet as pq
        extra = {"rows_out": rel.record_count["value"], "timings": rel.timings,
                 "rows_written": pq.read_metadata(rel.sets[0]).num_rows, "release_success": (out / "_SUCCESS").exists()}
        per_set = (rel.diagnostics.get("per_set") or [{}])[0]
        extra.update({k: per_set[k] for k in ("fit", "iterations", "converged", "rounds") if k in per_set})
        shutil.rmtree(out, ignore_errors=True)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if kind == "count":
        extra = {"nonempty": table.nonempty, "records": table.n}
        saved = OUT / f"engines_counts_{size}.npz"
        if what == "duckdb":
            np.savez(saved, codes=table.codes, counts=table.counts)
        elif saved.exists():
            ref = np.load(saved)
            extra["identical_to_duckdb"] = bool(np.array_equal(ref["codes"], table.codes)
                                                and np.array_equal(ref["counts"], table.counts))
    peak = peak_rss_mb()
    return {"case": case, "wall_s": wall, "cpu_s": cpu, "peak_rss_mb": peak, "load1_at_start": load1, **extra}


def child(case: str) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--case", case, "--data-dir", str(DATA)], capture_output=True,
                          text=True,
                          cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    if proc.returncode:
        return {"case": case, "error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--case")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", help="comma-separated case names")
    ap.add_argument("--reps", type=int, default=1, help="runs per case (fresh child each); medians reported")
    ap.add_argument("--data-dir", help="where the generated input files are written and read (default bench/out)")
    ap.add_argument("--results", default="engines.json", help="file name of the results in bench/out")
    args = ap.parse_args()
    global DATA
    if args.data_dir:
        DATA = Path(args.data_dir)
        DATA.mkdir(parents=True, exist_ok=True)
    if args.case:
        print(json.dumps(run_case(args.case)))
        return
    OUT.mkdir(exist_ok=True)
    from bench.tools._machine import describe, machine
    print(describe(machine()), f"| load average {os.getloadavg()[0]:.1f}", flush=True)
    sizes = ["1e6"] if args.quick else ["1e6", "1e7", "5e7"]
    if args.only:
        sizes = sorted({c.split(":")[2] for c in args.only.split(",")}, key=lambda z: SIZES[z])
    if args.only:  # write only the files the named cases read
        sizes = [s for s in sizes if any(c.split(":")[2] == s for c in args.only.split(","))]
    print(subprocess.run(["df", "-h", str(DATA)], capture_output=True, text=True).stdout.strip())
    for s in sizes:
        if not data_file(s).exists():
            t = time.perf_counter()
            write_file(SIZES[s], data_file(s))
            print(f"wrote {data_file(s).name}: {data_file(s).stat().st_size / 2**20:.0f} MB in "
                  f"{time.perf_counter() - t:.0f} s",
                  flush=True)
    (OUT / "engines_domain.json").write_text(domain().to_json())
    cases = [c for s in sizes for c in (f"count:duckdb:{s}", f"clamped:duckdb:{s}", f"fingerprint:duckdb:{s}")]
    cases += [f"release:{m}:{s}" for m in ("steps", "ipf", "privbayes", "aim", "mst") for s in sizes if s != "5e7"]
    cases += [f"count:spark:{s}" for s in sizes if s != "5e7"]
    cases += [f"cli:{e}:{s}" for e in ("duckdb", "spark") for s in sizes if s == "1e7"]
    if args.only:
        cases = args.only.split(",")
    results = []
    for case in cases:
        runs = [child(case) for _ in range(args.reps)]
        r = dict(runs[0])
        if args.reps > 1 and all("error" not in x for x in runs):
            for k in ("wall_s", "cpu_s", "peak_rss_mb", "load1_at_start"):
                if all(k in x for x in runs):
                    r[k] = statistics.median(x[k] for x in runs)
                    r[k + "_runs"] = [x[k] for x in runs]
        results.append(r)
        print(json.dumps(r), flush=True)
        (OUT / args.results).write_text(json.dumps(results, indent=1))
    ratios = ratios_to_count(results)
    for r in results:
        if r["case"] in ratios:
            r["ratio_to_count"] = ratios[r["case"]]
            print(f"{r['case']} over count: " + ", ".join(f"{k} {v:.3f}" for k, v in ratios[r["case"]].items()))
    (OUT / args.results).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
