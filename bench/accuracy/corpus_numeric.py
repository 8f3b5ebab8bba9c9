"""[numeric-columns] item 5: numeric fidelity of dpcore's AIM against dpmm's on the corpus's numeric columns.

    cd <repo> && nice -n 10 .venv/bin/python bench/accuracy/corpus_numeric.py [--tables wages1 ...]
        [--methods aim:declared aim:dp dpmm_aim:public_bounds mst:declared] [--seeds 0 1 2] [--timeout 600]
        [--cache bench/out/corpus-cache] [--out bench/data/corpus_numeric.csv]
    nice -n 10 .venv/bin/python bench/accuracy/corpus_numeric.py --report   # the Markdown summary of the CSV

Tables: every entry of bench/data/corpus.toml with ``numeric = {...}``, smallest first (bench/data/corpus_tables.csv's
record counts); all tables at one seed before the next seed. Runs, each at ε = 1, δ = 10⁻⁹, m = 1:

- ``aim:declared``: ``dpcore.synthesize(df, "aim", 1.0, sets=1, seed=s, domain=declared, delta=1e-9)``, the
  corpus's declared domain (its hand-written numeric bins), as bench/accuracy/corpus_run.py runs it;
- ``aim:dp_quantiles``: the same as ``aim:dp`` below with ``domain_bins="quantiles"`` (the DP domain's binning
  before PrivTree became its default; the rows of 2026-11-28 before 12:30 UTC were run as ``aim:dp`` then);
- ``aim:dp``: the same with ``domain="dp"``: nothing declared, DP bounds, DP bins and DP levels inside the ε;
- ``aim:bounds_privtree``: the declared domain, but each numeric column's declared edges replaced by DP edges
  inside its declared bounds (the first and last declared edge: what dpmm is told), ``dp_bins={col: {"lower",
  "upper", "method": "privtree"}}`` (PrivTree at the library's default cap) at the default ``bins_share`` 0.1 of
  the same (1, 10⁻⁹); ``aim:bounds_privtree_k``: the same with the cap at the declared number of bins
  (``_16``, ``_32``, ``_64``: at 16, 32, 64; the rows run as ``bounds_privtree`` when the default cap was 32
  are labelled ``_32``);
  ``aim:bounds_quantiles``: DP quantile edges instead, as many bins as declared;
- ``mst:declared`` / ``mst:dp`` (optional): the same with ``"mst"``;
- ``<method>:declared`` / ``<method>:bounds_privtree`` / ``<method>:dp`` for any name of
  ``dpcore.synthesizers.REGISTRY`` (steps, uh_random, steps_lesda, flat_laplace, ipf, privbayes, aim, mst), the
  same release with that method; ``all:<variant>`` in ``--methods`` stands for every registered method at that
  variant (``--methods all:declared all:bounds_privtree`` runs the whole registry on both);
- ``dpmm_aim:public_bounds``: dpmm 0.1.9's ``AIMPipeline`` in its own venv (``--python-dpmm``, default
  ``$DPMM_PYTHON`` else /tmp/dpmm-venv/bin/python), a child process that imports neither dpcore nor this
  repository. **What dpmm is told** (all of it public under the corpus's declared domain, nothing read from the
  data outside dpmm's DP pipeline): for each numeric column, its raw values and the bounds ``lower`` /
  ``upper`` = the first and last edge of the corpus's declared edges (``domain={col: {"lower", "upper"}}``),
  so dpmm bins it itself with its PrivTree binner (pure ε, over those public bounds; it does not spend on bounds)
  and de-bins its output uniformly inside each PrivTree bin (rounded for an integer column); for each
  categorical column, the token ``x<code>`` of the value's code in the declared domain and every code as a
  category (``{"categories": [...]}``), as bench/accuracy/peers.py does; for a numeric column that the declared domain
  says may be missing, the missing values are filled with the public lower bound and a categorical column
  ``<col>__na`` (categories ``no``/``yes``) carries the missingness, decoded back to NaN (dpmm's own missing
  handling would fill them with a value drawn from the data, outside its DP accounting). Its budget: the whole
  (1, 10⁻⁹) by basic composition, ``AIMPipeline(epsilon=0.9, delta=1e-9, proc_epsilon=0.1, n_jobs=1)``: AIM at
  (0.9, 10⁻⁹) and PrivTree at pure ε = 0.1 split equally over the numeric columns (dpmm's own default adds its
  proc_epsilon = 0.1 on top of the model's ε; here it is inside). What dpmm's pipeline still uses without DP,
  as it is written: the exact record count (PrivTree's split threshold θ = n / bins and its bin count
  2·n^(1/3)·sigmoid(ε_col); the number of records generated, n, is the same for every method here) and
  whether a column is constant (it would drop it; no column is constant in these tables).
  ``fit(..., random_state=s)`` and ``generate(n_records=n, random_state=s)``.

Each run is a forked child of this process (the table loaded once) in a process group of its own; past
``--timeout`` seconds (600) the group is killed, dpmm's interpreter with it, and the run is ``timeout``; the
later seeds of the same (table, method, variant) are then ``skipped``. Rows already in the CSV are not run again.

Per numeric column of the declared domain, curator-side (the raw table is read to score; NOT DP, nothing is
released), each divided by the true column's 99th − 1st percentile range (bench/accuracy/dp_domain.py's normalisation;
the declared range when that is 0), computed by ``dpcore.metrics.numeric.column_fidelity``:

- ``w1``: Wasserstein-1 distance between the original's and the synthetic set's non-missing values;
- ``q10_error``, ``q50_error``, ``q90_error``: |synthetic − original| at those percentiles;
- ``reg_overlap``: OLS of this column on every other column (the other numeric ones as numbers, the rest as
  dummies), the mean 95% CI overlap of the synthetic fit with the original's
  (``dpcore.metrics.regression.regression_overlap``);
- ``seconds`` of the release (dpmm: its own fit + generate), ``status`` (ok, timeout, skipped, cannot_run,
  error), the 1-minute load average when the run started, and a ``note`` (dp variant: "fallback bounds" when
  dpcore's DP bounds fell back; a column the DP domain withheld, every value missing, has no W1 nor percentile
  errors: the report's medians leave it out).
"""
from __future__ import annotations

import os

# one thread per process: the runs share a 2-core machine, and a BLAS thread pool does not survive os.fork
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import csv  # noqa: E402
import datetime as dt  # noqa: E402
import functools  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import signal  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from pathlib import Path  # noqa: E402

# the forked, capped run of bench/accuracy/corpus_run.py (stdlib only, so dpmm's venv can import this file too)
from corpus_run import fork_call, recorded  # noqa: E402

HERE = Path(__file__).resolve().parent
BENCH = HERE.parent
RESULTS = BENCH / "data" / "corpus_numeric.csv"
FACTS = BENCH / "data" / "corpus_tables.csv"
EPSILON, DELTA = 1.0, 1e-9
#: dpmm's PrivTree share of the ε (pure ε, basic composition with its AIM at ε − this)
DPMM_PROC_EPSILON = 0.1
DEFAULT_RUNS = ("aim:declared", "aim:dp", "dpmm_aim:public_bounds")
PEER_VARIANT = "public_bounds"
FIELDS = ["table", "column", "method", "variant", "seed", "status", "seconds", "n_records", "span", "w1",
          "q10_error", "q50_error", "q90_error", "reg_overlap", "note", "load1", "message", "dpcore_commit", "date"]
#: the columns that name a run: a run with rows for these is not run again
KEY = ("table", "method", "variant", "seed")
METRICS = ("w1", "q10_error", "q50_error", "q90_error", "reg_overlap")
NA_FLAG = "__na"


# ---------------------------------------------------------------- what dpmm is given, and its output read back

def dpmm_input(df, dom):
    """(frame, dpmm domain dict, dtypes) for dpmm: numeric columns raw with their declared bounds, categorical
    ones as ``x<code>`` tokens of the declared domain, a ``<col>__na`` no/yes column for a numeric column that
    the declared domain lets be missing (its NaNs filled with the public lower bound). Only public facts and
    the records themselves go in; see the module docstring."""
    import pandas as pd
    codes = dom.encode(df)
    cols, domain, dtypes = {}, {}, {}
    for j, a in enumerate(dom.attributes):
        if a.kind == "numeric":
            lo, hi = float(a.edges[0]), float(a.edges[-1])
            v = df[a.name]
            integer = pd.api.types.is_integer_dtype(v.dtype) and not v.isna().any()
            vals = pd.to_numeric(v, errors="coerce").astype(float)
            if a.na:
                cols[a.name + NA_FLAG] = vals.isna().map({True: "yes", False: "no"}).astype(object)
                domain[a.name + NA_FLAG] = {"categories": ["no", "yes"]}
                dtypes[a.name + NA_FLAG] = "str"
                vals = vals.fillna(lo)
            cols[a.name] = vals.clip(lo, hi).astype("int64" if integer else "float64")
            domain[a.name] = {"lower": int(lo) if integer else lo, "upper": int(hi) if integer else hi}
            dtypes[a.name] = "int64" if integer else "float64"
        else:
            cols[a.name] = pd.Series([f"x{c}" for c in codes[:, j]], dtype=object)
            domain[a.name] = {"categories": [f"x{c}" for c in range(a.size)]}
            dtypes[a.name] = "str"
    return pd.DataFrame(cols), domain, dtypes


def dpmm_output(out, dom, rng):
    """dpmm's generated frame back in the table's columns: categorical tokens decoded through the declared
    domain, numeric values as dpmm de-binned them, NaN where ``<col>__na`` says ``yes``."""
    import numpy as np
    codes = np.zeros((len(out), len(dom)), dtype=np.int64)
    for j, a in enumerate(dom.attributes):
        if a.kind != "numeric":
            codes[:, j] = out[a.name].astype(str).str.slice(1).astype(np.int64).to_numpy()
    syn = dom.decode(codes, rng)
    for a in dom.attributes:
        if a.kind == "numeric":
            vals = out[a.name].astype(float).to_numpy()
            if a.na:
                vals = np.where(out[a.name + NA_FLAG].astype(str).to_numpy() == "yes", np.nan, vals)
            syn[a.name] = vals
    return syn


def dpmm_child(src: str, dst: str, spec_path: str, seed: int) -> None:
    """Runs inside dpmm's venv (no dpcore): fit + generate on ``src`` with the domain and budget of
    ``spec_path``, write ``dst``; prints one JSON line with its own seconds (imports excluded) and peak MB."""
    import resource

    import dpmm.pipelines as pipelines
    import pandas as pd
    spec = json.loads(Path(spec_path).read_text())
    dtypes = spec["dtypes"]
    df = pd.read_csv(src, dtype={c: (str if t == "str" else t) for c, t in dtypes.items()}, keep_default_na=False)
    t0 = time.perf_counter()
    pipe = pipelines.AIMPipeline(epsilon=spec["epsilon"], delta=spec["delta"], proc_epsilon=spec["proc_epsilon"],
                                 n_jobs=1)
    pipe.fit(df, domain=spec["domain"], random_state=seed)
    out = pipe.generate(n_records=len(df), random_state=seed)
    secs = time.perf_counter() - t0
    out[list(df.columns)].to_csv(dst, index=False)
    bins = {c: int(n) for c, n in pipe.proc.n_bins.items()}
    print("DPMM " + json.dumps({"seconds": secs, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                                "bins": bins}), flush=True)


def dpmm_python() -> str:
    """The interpreter of dpmm's own venv (bench/requirements-dpmm.txt)."""
    return os.environ.get("DPMM_PYTHON") or "/tmp/dpmm-venv/bin/python"


def run_dpmm(df, dom, seed: int):
    """dpmm's AIM on the table, in its own interpreter (same process group as the caller, so a timeout kills
    it): (the synthetic table, its seconds, a note with its PrivTree bin counts)."""
    import numpy as np
    import pandas as pd
    frame, domain, dtypes = dpmm_input(df, dom)
    with tempfile.TemporaryDirectory() as d:
        src, dst, spec = (os.path.join(d, x) for x in ("in.csv", "out.csv", "spec.json"))
        frame.to_csv(src, index=False)
        Path(spec).write_text(json.dumps({"domain": domain, "dtypes": dtypes, "epsilon": EPSILON - DPMM_PROC_EPSILON,
                                          "delta": DELTA, "proc_epsilon": DPMM_PROC_EPSILON}))
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        p = subprocess.run([dpmm_python(), __file__, "--dpmm-child", src, dst, spec, str(seed)],
                           capture_output=True, text=True, env=env, cwd=d)
        line = [x for x in p.stdout.splitlines() if x.startswith("DPMM ")]
        if p.returncode != 0 or not line:
            raise RuntimeError("dpmm: " + ((p.stderr.strip().splitlines() or ["no output"])[-1][:250]))
        info = json.loads(line[-1][5:])
        out = pd.read_csv(dst, dtype={c: (str if t == "str" else float) for c, t in dtypes.items()},
                          keep_default_na=False)
    syn = dpmm_output(out, dom, np.random.default_rng(seed))
    return syn, info["seconds"], "PrivTree bins " + json.dumps(info["bins"])


# ---------------------------------------------------------------- scores

def column_span(orig, lower: float, upper: float) -> float:
    """The true column's 99th − 1st percentile range (bench/accuracy/dp_domain.py's), the declared one when that
    is 0."""
    import numpy as np
    import pandas as pd
    v = pd.to_numeric(orig, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    v = v[np.isfinite(v)]
    span = float(np.percentile(v, 99) - np.percentile(v, 1)) if v.size else 0.0
    return span if span > 0 else float(upper) - float(lower)


def numeric_scores(orig, syn, dom) -> dict[str, dict]:
    """Per numeric column of ``dom``: span, normalised W1 and percentile errors, and the regression CI overlap
    of OLS of the column on the others. Curator-side, NOT DP."""
    import pandas as pd

    from dpcore.metrics.numeric import column_fidelity
    numeric = [a.name for a in dom.attributes if a.kind == "numeric"]
    out = {}
    for a in dom.attributes:
        if a.kind != "numeric":
            continue
        span = column_span(orig[a.name], a.edges[0], a.edges[-1])
        s = pd.to_numeric(syn[a.name], errors="coerce").astype(float)
        o = pd.to_numeric(orig[a.name], errors="coerce").astype(float)
        out[a.name] = {"span": span, **column_fidelity(o, s, 0.0, span, a.name)}
    snapped = snap_to_levels(syn, dom, orig)
    for c in numeric:
        out[c]["reg_overlap"] = regression_score(orig, snapped, c, numeric)
    return out


def snap_to_levels(syn, dom, orig):
    """``syn`` with each declared-categorical column whose levels are numbers snapped to the nearest declared
    level, in the original's dtype. Under ``domain="dp"`` dpcore may release such a column (an integer code with
    a few levels) as a numeric one, with continuous values; entered as dummies in the regression they would make
    thousands of columns. Only for the regression score; the W1 scores read the numeric columns as released."""
    import numpy as np
    import pandas as pd
    out = syn.copy()
    for a in dom.attributes:
        if a.kind == "numeric" or not pd.api.types.is_numeric_dtype(out[a.name].dtype):
            continue
        try:
            levels = np.asarray([float(v) for v in a.levels])
        except (TypeError, ValueError):
            continue
        v = out[a.name].to_numpy(dtype=float, na_value=np.nan)
        near = levels[np.abs(np.nan_to_num(v)[:, None] - levels[None, :]).argmin(axis=1)]
        snapped = pd.Series(np.where(np.isnan(v), np.nan, near), index=out.index)
        out[a.name] = snapped if snapped.isna().any() else snapped.astype(orig[a.name].dtype)
    return out


def regression_score(orig, syn, outcome: str, numeric: list[str]) -> float:
    """Mean 95% CI overlap of OLS of ``outcome`` on every other column; NaN when it cannot be fitted."""
    import pandas as pd

    from dpcore.metrics.regression import regression_overlap
    o, s = orig.copy(), syn.copy()
    for c in numeric:
        o[c] = pd.to_numeric(o[c], errors="coerce").astype(float)
        s[c] = pd.to_numeric(s[c], errors="coerce").astype(float)
    try:
        res = regression_overlap(o, [s], outcome, family="ols", numeric=[c for c in numeric if c != outcome])
        return float(res.mean_overlap)
    except Exception:  # a design that cannot be fitted is a missing score, not a failed run
        return math.nan


# ---------------------------------------------------------------- one run in a forked child

def release(df, dom, method: str, variant: str, seed: int):
    """(synthetic table, seconds, note) of one run."""
    if method == "dpmm_aim":
        return run_dpmm(df, dom, seed)
    import dpcore
    t0 = time.perf_counter()
    # dp: the DP domain's default binning (PrivTree); dp_quantiles: its DP quantile edges instead
    extra: dict = {"domain_bins": "quantiles"} if variant == "dp_quantiles" else {}
    if variant.startswith("bounds_"):
        extra = {"dp_bins": bounds_bins(dom, variant)}
    rel = dpcore.synthesize(df, method=method, epsilon=EPSILON, sets=1, seed=seed,
                            domain=dom if variant == "declared" or extra.get("dp_bins") else "dp", delta=DELTA,
                            **extra)
    secs = time.perf_counter() - t0
    note = ""
    if variant in ("dp", "dp_quantiles"):
        cols = rel.diagnostics.get("dp_domain", {}).get("columns", {})
        fallback = [c for c, r in cols.items() if r.get("fallback")]
        note = ("fallback bounds: " + " ".join(fallback)) if fallback else ""
    return rel.sets[0], secs, note


#: the variants with DP bins inside the declared bounds: (method, bins: "declared" for the declared number,
#: None for the library's default, or a number)
BOUNDS_VARIANTS = {"bounds_privtree": ("privtree", None), "bounds_privtree_k": ("privtree", "declared"),
                   "bounds_privtree_16": ("privtree", 16), "bounds_privtree_32": ("privtree", 32),
                   "bounds_privtree_64": ("privtree", 64), "bounds_quantiles": ("quantiles", "declared")}


def bounds_bins(dom, variant: str) -> dict:
    """``dp_bins`` of a ``bounds_*`` variant: every numeric column of the declared domain, its declared bounds
    (first and last edge), the variant's method, and the declared number of bins when the variant says so."""
    if variant not in BOUNDS_VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; known: {', '.join(BOUNDS_VARIANTS)}")
    method, bins = BOUNDS_VARIANTS[variant]
    out = {}
    for a in dom.attributes:
        if a.kind == "numeric":
            out[a.name] = {"lower": float(a.edges[0]), "upper": float(a.edges[-1]), "method": method}
            if bins is not None:
                out[a.name]["bins"] = max(2, len(a.edges) - 1) if bins == "declared" else bins
    return out


def child_run(df, dom, run: dict) -> dict:
    """Inside the forked child: release, then the scores per numeric column."""
    from dpcore.errors import DPCoreError
    try:
        syn, secs, note = release(df, dom, run["method"], run["variant"], run["seed"])
        return {"status": "ok", "seconds": round(secs, 3), "note": note, "columns": numeric_scores(df, syn, dom)}
    except DPCoreError as exc:
        return {"status": "cannot_run", "message": str(exc).splitlines()[0][:300]}
    except Exception as exc:  # a crash is a result too: record it and go on
        return {"status": "error", "message": traceback.format_exception_only(type(exc), exc)[-1].strip()[:300]}


#: the forked children running now (each the leader of its own process group)
CHILDREN: set[int] = set()


def stop_children(signum, frame) -> None:
    """On SIGTERM: kill the running child's process group (dpmm's interpreter with it), then exit; the run in
    progress has no row, so a rerun does it again."""
    for pid in list(CHILDREN):
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    raise SystemExit(f"stopped by signal {signum}")


# ---------------------------------------------------------------- the results file

def result_rows(run: dict, res: dict, numeric: list[str], extra: dict) -> list[dict]:
    """One row per numeric column of one run (every column gets the run's status when it did not finish)."""
    cols = res.get("columns", {})
    rows = []
    for c in numeric:
        scores = cols.get(c, {})
        rows.append({**run, "column": c, "status": res["status"], "seconds": res.get("seconds", ""),
                     "note": res.get("note", ""), "message": res.get("message", ""), **extra,
                     **{k: scores.get(k, "") for k in ("span", *METRICS)}})
    return rows


def append_rows(path: Path, rows: list[dict]) -> None:
    """Append under an exclusive lock (two runners, one per kind of method, may share the file)."""
    import fcntl
    with path.open("a", newline="", encoding="utf-8") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        if f.tell() == 0:
            csv.DictWriter(f, fieldnames=FIELDS).writeheader()
        w = csv.DictWriter(f, fieldnames=FIELDS)
        for row in rows:
            w.writerow({k: row.get(k, "") for k in FIELDS})
        f.flush()
        fcntl.flock(f, fcntl.LOCK_UN)


def numeric_tables(specs, facts: Path = FACTS) -> list[str]:
    """The corpus tables with declared numeric columns, smallest first (record counts of corpus_tables.csv)."""
    with facts.open(newline="", encoding="utf-8") as f:
        n = {r["table"]: int(r["n_records"]) for r in csv.DictReader(f)}
    return sorted((t for t, s in specs.items() if s.numeric), key=lambda t: (n.get(t, 0), t))


ALL = "all"


def expand_runs(runs: list[str], registry=None) -> list[str]:
    """``method:variant`` runs with each ``all:<variant>`` replaced by every registered dpcore method at that
    variant (``dpcore.synthesizers.REGISTRY``'s order), duplicates dropped, the order otherwise kept."""
    if registry is None:
        from dpcore.synthesizers import REGISTRY as registry
    out: dict[str, None] = {}
    for mv in runs:
        method, variant = mv.split(":")
        for m in (list(registry) if method == ALL else [method]):
            out.setdefault(f"{m}:{variant}", None)
    return list(out)


def plan(tables: list[str], runs: list[str], seeds: list[int]) -> list[dict]:
    """Every run, seed outermost (all tables at seed 0 first), smallest table first."""
    out = []
    for seed in seeds:
        for table in tables:
            for mv in runs:
                method, variant = mv.split(":")
                out.append({"table": table, "method": method, "variant": variant, "seed": seed})
    return out


def git_commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE)
    return out.stdout.strip() or "unknown"


def warm_up(df, dom) -> None:
    """Import, in this parent, what every forked child would import again (dpcore, its synthesizers, the scores'
    scipy and pandas paths): scoring once on a few records here makes each child start warm (a child's first
    score was ~8 s of imports on this machine, its release under 1 s on the small tables)."""
    import dpcore.synthesizers  # noqa: F401  (every registered method's module)
    try:
        numeric_scores(df.head(50), df.head(50), dom)
    except Exception:  # a warm-up that fails costs nothing: the child imports what it needs itself
        pass


def run_all(args) -> None:
    from corpus import corpus_specs, load_table
    specs = corpus_specs()
    tables = args.tables or numeric_tables(specs)
    out = Path(args.out)
    done, over_cap = recorded(out, KEY)
    commit, loaded = git_commit(), {}
    for run in plan(tables, expand_runs(args.methods), args.seeds):
        key = tuple(str(run[k]) for k in KEY)
        if key in done:
            continue
        if run["table"] not in loaded:
            loaded.clear()  # one table in memory at a time
            loaded[run["table"]] = load_table(run["table"], cache_dir=Path(args.cache))
            warm_up(*loaded[run["table"]])
        df, dom = loaded[run["table"]]
        numeric = [a.name for a in dom.attributes if a.kind == "numeric"]
        load1 = round(os.getloadavg()[0], 2)
        if key[:-1] in over_cap:
            res = {"status": "skipped", "message": f"not run: an earlier seed went over the {args.timeout:g} s cap"}
        else:
            res = fork_call(functools.partial(child_run, df, dom, run), args.timeout, CHILDREN)
            if res["status"] == "timeout":
                over_cap.add(key[:-1])
        extra = {"n_records": len(df), "load1": load1, "dpcore_commit": commit,
                 "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
        append_rows(out, result_rows(run, res, numeric, extra))
        w1 = {c: round(s["w1"], 4) for c, s in res.get("columns", {}).items()}
        print(f"{run['table']} {run['method']}:{run['variant']} seed {run['seed']}: {res['status']} "
              f"{res.get('seconds', '')} s W1 {w1} {res.get('message', '')}", flush=True)


# ---------------------------------------------------------------- the report

def read_rows(path: Path) -> list[dict]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def medians(rows: list[dict], metric: str = "w1") -> dict[tuple, float]:
    """{(table, column, method:variant): median of ``metric`` over the seeds that finished}."""
    acc: dict[tuple, list[float]] = {}
    for r in rows:
        if r["status"] == "ok" and r.get(metric, "") not in ("", "nan"):
            v = float(r[metric])
            if math.isfinite(v):
                acc.setdefault((r["table"], r["column"], f"{r['method']}:{r['variant']}"), []).append(v)
    return {k: statistics.median(v) for k, v in acc.items()}


def wins(med: dict[tuple, float], ours: str, peer: str) -> tuple[int, int, list[tuple]]:
    """(columns where ``ours``'s median W1 ≤ ``peer``'s, columns where both finished, the losing columns)."""
    both = [(t, c) for (t, c, m) in med if m == peer and (t, c, ours) in med]
    lost = [(t, c) for t, c in both if med[(t, c, ours)] > med[(t, c, peer)]]
    return len(both) - len(lost), len(both), sorted(lost)


def report(rows: list[dict], peer: str = f"dpmm_aim:{PEER_VARIANT}", classes: dict | None = None) -> str:
    """The Markdown summary: wins per dpcore run against dpmm, the other measures' medians over the same
    columns, the wins by column class (when ``classes`` is given), then a per-table table of median W1."""
    med = medians(rows)
    variants = sorted({f"{r['method']}:{r['variant']}" for r in rows})
    ours = [v for v in variants if v != peer]
    lines = ["| dpcore run | columns where dpmm finished | median W1 ≤ dpmm's | share | median W1, dpcore | "
             "median W1, dpmm |", "|---|---:|---:|---:|---:|---:|"]
    for v in ours:
        won, n, _ = wins(med, v, peer)
        both = [(t, c) for (t, c, m) in med if m == peer and (t, c, v) in med]
        mo = statistics.median(med[(t, c, v)] for t, c in both) if both else math.nan
        mp = statistics.median(med[(t, c, peer)] for t, c in both) if both else math.nan
        lines.append(f"| {v} | {n} | {won} | {won / n:.0%} | {fmt(mo)} | {fmt(mp)} |" if n else
                     f"| {v} | 0 | — | — | — | — |")
    fell_back = fallback_columns(rows)
    for v in [v for v in ours if v.endswith(":dp")]:
        kept = {k: x for k, x in med.items() if (k[0], k[1]) not in fell_back}
        won, n, _ = wins(kept, v, peer)
        if n:
            lines.append(f"| {v}, columns whose DP bounds never fell back | {n} | {won} | {won / n:.0%} | — | — |")
    lines += ["", other_measures(rows, variants, peer), "", every_method(rows, peer)]
    if classes:
        lines += ["", by_class(med, ours, peer, classes)]
    lines += ["", per_table(rows, med, variants, classes or {})]
    return "\n".join(lines)


def every_method(rows: list[dict], peer: str = f"dpmm_aim:{PEER_VARIANT}") -> str:
    """Per dpcore run (method:variant, variant then method): over the columns where ``peer`` finished and the run
    did, the share whose median normalised W1 is at or under the peer's, the median W1 and the median percentile
    errors (each the median over those columns of the per-column median over seeds); then over every column the
    run finished, their number and median W1."""
    meds = {m: medians(rows, m) for m in ("w1", "q10_error", "q50_error", "q90_error")}
    runs = sorted({f"{r['method']}:{r['variant']}" for r in rows} - {peer},
                  key=lambda v: (v.split(":")[1], v.split(":")[0]))
    peer_cols = {(t, c) for (t, c, v) in meds["w1"] if v == peer}
    lines = ["| dpcore run | columns where dpmm finished | W1 ≤ dpmm's | share | median W1 | median q10 error | "
             "median q50 error | median q90 error | all columns run | median W1, all columns |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for v in runs:
        both = sorted((t, c) for t, c in peer_cols if (t, c, v) in meds["w1"])
        won = sum(meds["w1"][(t, c, v)] <= meds["w1"][(t, c, peer)] for t, c in both)
        cells = [str(len(both)), str(won) if both else "—", f"{won / len(both):.0%}" if both else "—"]
        for m in ("w1", "q10_error", "q50_error", "q90_error"):
            vals = [meds[m][(t, c, v)] for t, c in both if (t, c, v) in meds[m]]
            cells.append(fmt(statistics.median(vals)) if vals else "—")
        every = [x for (t, c, r), x in meds["w1"].items() if r == v]
        cells += [str(len(every)), fmt(statistics.median(every)) if every else "—"]
        lines.append(f"| {v} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def fallback_columns(rows: list[dict]) -> set[tuple]:
    """(table, column) pairs whose DP bounds fell back in some ``dp`` run (the run's note names them)."""
    out = set()
    for r in rows:
        note = r.get("note", "")
        if note.startswith("fallback bounds: ") and r["column"] in note[len("fallback bounds: "):].split():
            out.add((r["table"], r["column"]))
    return out


def other_measures(rows: list[dict], variants: list[str], peer: str) -> str:
    """Per run, medians over the columns where dpmm finished of the per-column medians over seeds."""
    meds = {m: medians(rows, m) for m in METRICS}
    cols = {(t, c) for (t, c, v) in meds["w1"] if v == peer}
    lines = ["| run | " + " | ".join(f"median {m}" for m in METRICS) + " |", "|---|" + "---:|" * len(METRICS)]
    for v in variants:
        cells = []
        for m in METRICS:
            vals = [meds[m][(t, c, v)] for t, c in cols if (t, c, v) in meds[m]]
            cells.append(f"{fmt(statistics.median(vals))} ({len(vals)})" if vals else "—")
        lines.append(f"| {v} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def column_classes(keys, cache: Path) -> dict[tuple, dict]:
    """{(table, column): {"n", "skew", "tail", "floor"}} from the raw tables (curator-side, for the report
    only): the record count, the sample skewness, (max − 99th percentile) / (99th − 1st percentile), and the
    declared bins' floor: the normalised W1 of the original against itself put through its declared bins and
    drawn back uniformly inside them (what dpcore's decoding gives with no noise at all)."""
    import numpy as np
    from corpus import load_table
    from scipy import stats

    from dpcore.metrics.numeric import column_fidelity
    out = {}
    for table in sorted({t for t, _ in keys}):
        df, dom = load_table(table, cache_dir=cache)
        for t, c in keys:
            if t != table:
                continue
            v = df[c].to_numpy(dtype=float, na_value=np.nan)
            v = v[np.isfinite(v)]
            p1, p99 = np.percentile(v, [1, 99])
            a = dom[c]
            span = column_span(df[c], a.edges[0], a.edges[-1])
            binned = a.decode(a.encode(df[c]), np.random.default_rng(0)).astype(float)
            out[(t, c)] = {"n": len(df), "skew": float(stats.skew(v)),
                           "tail": float((v.max() - p99) / (p99 - p1)) if p99 > p1 else 0.0,
                           "floor": column_fidelity(df[c].astype(float), binned, 0.0, span, c)["w1"]}
    return out


CLASSES = {"n < 1,000": lambda k: k["n"] < 1000, "1,000 ≤ n < 10,000": lambda k: 1000 <= k["n"] < 10_000,
           "n ≥ 10,000": lambda k: k["n"] >= 10_000, "abs(skew) < 2": lambda k: abs(k["skew"]) < 2,
           "abs(skew) ≥ 2 (heavy-tailed)": lambda k: abs(k["skew"]) >= 2}


def by_class(med: dict[tuple, float], ours: list[str], peer: str, classes: dict[tuple, dict]) -> str:
    """Wins against dpmm per class of column (table size, skewness)."""
    lines = ["| columns | " + " | ".join(f"{v}: W1 ≤ dpmm's" for v in ours) + " |", "|---|" + "---:|" * len(ours)]
    for label, keep in CLASSES.items():
        cells = []
        for v in ours:
            both = [(t, c) for (t, c, m) in med if m == peer and (t, c, v) in med
                    and (t, c) in classes and keep(classes[(t, c)])]
            won = sum(med[(t, c, v)] <= med[(t, c, peer)] for t, c in both)
            cells.append(f"{won} of {len(both)}" if both else "—")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def fmt(v: float | None) -> str:
    """A score for the tables: 4 decimals, or 3 significant digits when it is large (an absurd release)."""
    if v is None or not math.isfinite(v):
        return "—"
    return f"{v:.4f}" if abs(v) < 100 else f"{v:.3g}"


def per_table(rows: list[dict], med: dict[tuple, float], variants: list[str], classes: dict) -> str:
    """Per table: n, and per column its skewness and declared bins' floor (when known), then the median W1
    of each run with its seeds finished."""
    head = ("| table | n | column | skew | declared bins' floor | "
            + " | ".join(f"W1 {v} (seeds ok)" for v in variants) + " |")
    lines = [head, "|---|---:|---|---:|---:|" + "---:|" * len(variants)]
    seen: dict[tuple, None] = {}
    for r in sorted(rows, key=lambda r: (int(r["n_records"]), r["table"])):
        seen.setdefault((r["table"], r["n_records"], r["column"]), None)
    for t, n, c in seen:
        cells = []
        for v in variants:
            rs = [r for r in rows if r["table"] == t and r["column"] == c and f"{r['method']}:{r['variant']}" == v]
            ok = sum(r["status"] == "ok" for r in rs)
            bad = sorted({r["status"] for r in rs if r["status"] != "ok"})
            val = med.get((t, c, v))
            cells.append("not run" if not rs else fmt(val) + f" ({ok}/{len(rs)}"
                         + (", " + ", ".join(bad) if bad else "") + ")")
        k = classes.get((t, c), {})
        skew = f"{k['skew']:.2f}" if k else "—"
        lines.append(f"| {t} | {int(n):,} | {c} | {skew} | {fmt(k.get('floor'))} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", nargs="+", help="corpus names (default: every table with numeric columns)")
    ap.add_argument("--methods", nargs="+", default=list(DEFAULT_RUNS),
                    help="method:variant, e.g. aim:declared; all:declared for every registered method")
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--timeout", type=float, default=600.0, help="wall-clock cap per run, seconds")
    ap.add_argument("--cache", default=str(BENCH / "out" / "corpus-cache"), help="bench/tools/corpus.py's cache folder")
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--report", action="store_true", help="print the Markdown summary of --out and stop")
    ap.add_argument("--dpmm-child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.dpmm_child:
        src, dst, spec, seed = args.dpmm_child
        dpmm_child(src, dst, spec, int(seed))
        return
    sys.path.insert(0, str(BENCH / "tools"))  # corpus, _machine
    sys.path.insert(0, str(BENCH.parent))  # the repository root, for dpcore
    if args.report:
        rows = read_rows(Path(args.out))
        keys = {(r["table"], r["column"]) for r in rows}
        print(report(rows, classes=column_classes(keys, Path(args.cache))))
        return
    bad = [m for m in args.methods if m.count(":") != 1]
    if bad:
        raise SystemExit(f"--methods takes method:variant (e.g. aim:declared); got {', '.join(bad)}")
    from _machine import describe, machine
    print(describe(machine()), f"| load {os.getloadavg()[0]:.1f}", flush=True)
    signal.signal(signal.SIGTERM, stop_children)
    run_all(args)


if __name__ == "__main__":
    main()
