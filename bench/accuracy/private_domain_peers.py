"""[private-domain] item 4, last sentence: dpmm's MST with its own preprocessing, on the measures of private_domain.py.

For each corpus table (bench/tools/corpus.py) and seed, two dpmm 0.1.9 ``MSTPipeline`` releases at ε = 1, δ = 10⁻⁹:

* **own preprocessing** (``variant="dp"``, "nothing declared"): the raw table, its values as they are, given to
  ``MSTPipeline(epsilon=0.75, delta=1e-9, proc_epsilon=0.25, n_jobs=1).fit(df)`` with no domain (dpmm's defaults
  otherwise: PrivTree bins for numeric columns at ``proc_epsilon``). The split matches dpcore's default
  ``domain_share`` of 0.25, and the total is (1, 10⁻⁹) by basic composition (PrivTree is pure ε). What dpmm 0.1.9
  does with no domain (read from its source, ``dpmm/processing/table_binner.py`` and ``binners.py``): a
  categorical column's categories are the values in the data (it warns "PrivacyLeakage: No categorical domain
  provided … will be imputed"), and a numeric column's PrivTree runs between the data's own min and max. So this
  release is NOT DP as a whole: only its bin edges inside those bounds are. Its levels survive by construction.
* **declared** (``variant="declared"``): the corpus's declared domain as tokens, as bench/accuracy/peers.py gives
  dpmm (``proc_epsilon=None``, ε = 1, the categories every declared code).

dpmm runs in its own venv (bench/requirements-dpmm.txt; ``--python-dpmm``, default ``$DPMM_PYTHON`` else
/tmp/dpmm-venv/bin/python) as a child process that imports neither dpcore nor this repository: it reads the table
from a CSV and a JSON of its column kinds and writes its synthetic table to a CSV. The measures are
private_domain.py's (curator-side, NOT DP): S_pMSE on the declared domain's codes, per numeric column the synthetic
median's relative error and normalised W1, per levels column the share of records whose level came out, the
missing share's error. Rows go to bench/data/private_domain_dpmm_mst_{tables,columns}.csv (appended; a key already
recorded is not run again).

    PYTHONPATH=. python bench/accuracy/private_domain_peers.py run [--tables …] [--seeds 0 1 2] [--min-n 1000]
    PYTHONPATH=. python bench/accuracy/private_domain_peers.py report [--label zeropoint]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

BENCH = Path(__file__).resolve().parents[1]
PEER = "dpmm_mst"
PROC_EPSILON = 0.25  # dpcore's default domain_share, so the two spend the same on preprocessing
MODEL_EPSILON = 1.0 - PROC_EPSILON
DELTA = 1e-9


def dpmm_python(arg: str | None) -> str:
    return arg or os.environ.get("DPMM_PYTHON") or "/tmp/dpmm-venv/bin/python"


# ------------------------------------------------------------------ the child, in dpmm's venv (no dpcore)


def child(src: str, kinds_json: str, dst: str, seed: int, declared_sizes: str) -> None:
    """Fit + generate in dpmm's venv; ``declared_sizes`` non-empty: the token table of the declared domain."""
    import dpmm.pipelines as pipelines
    import pandas as pd

    if declared_sizes:
        tok = pd.read_csv(src, dtype=str, keep_default_na=False)
        domain = {a: {"categories": [f"x{c}" for c in range(int(k))]}
                  for a, k in zip(tok.columns, declared_sizes.split(","))}
        pipe = pipelines.MSTPipeline(epsilon=1.0, delta=DELTA, proc_epsilon=None, n_jobs=1)
        t0 = time.perf_counter()
        pipe.fit(tok, domain=domain, random_state=seed)
        out = pipe.generate(n_records=len(tok), random_state=seed)
        out = out[list(tok.columns)]
    else:
        kinds = json.loads(Path(kinds_json).read_text())
        raw = pd.read_csv(src, dtype=str, keep_default_na=False, na_values=[""])
        df = pd.DataFrame({c: pd.to_numeric(raw[c]) if k == "numeric" else raw[c] for c, k in kinds.items()})
        pipe = pipelines.MSTPipeline(epsilon=MODEL_EPSILON, delta=DELTA, proc_epsilon=PROC_EPSILON, n_jobs=1)
        t0 = time.perf_counter()
        pipe.fit(df, random_state=seed)
        out = pipe.generate(n_records=len(df), random_state=seed)[list(df.columns)]
    secs = time.perf_counter() - t0
    out.to_csv(dst, index=False)
    print("DPMM " + json.dumps({"seconds": secs}), flush=True)


def run_child(python: str, args: list[str], cwd: str, cap: float) -> float:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    p = subprocess.run([python, __file__, "child", *args], capture_output=True, text=True, env=env, cwd=cwd,
                       timeout=cap)
    line = [x for x in p.stdout.splitlines() if x.startswith("DPMM ")]
    if p.returncode != 0 or not line:
        raise RuntimeError("dpmm: " + ((p.stderr.strip().splitlines() or ["no output"])[-1][:200]))
    return float(json.loads(line[-1][5:])["seconds"])


# ------------------------------------------------------------------ the parent, in dpcore's venv


def kinds_of(df) -> dict[str, str]:
    """A column is numeric for dpmm when its dtype is a number (bool and text are categories)."""
    import pandas as pd

    return {c: "numeric" if pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])
            else "categorical" for c in df.columns}


def read_back(path: str, like, kinds: dict[str, str]):
    """dpmm's CSV with the original's dtypes where they fit (numbers as float, text as text)."""
    import pandas as pd

    raw = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""])
    out = {}
    for c in like.columns:
        if kinds[c] == "numeric":
            out[c] = pd.to_numeric(raw[c], errors="coerce")
        elif pd.api.types.is_bool_dtype(like[c]):
            out[c] = raw[c].map({"True": True, "False": False})
        else:
            out[c] = raw[c]
    return pd.DataFrame(out)


def release(name, df, dom, seed: int, python: str, cap: float) -> tuple[dict, dict]:
    """The two dpmm releases of one table and seed: {variant: (synthetic frame, seconds)} and errors."""
    import numpy as np
    import pandas as pd

    sys.path.insert(0, str(BENCH / "accuracy"))
    from peers import tokens, untoken

    kinds = kinds_of(df)
    out, errors = {}, {}
    with tempfile.TemporaryDirectory() as d:
        src, kj, dst = (os.path.join(d, f) for f in ("in.csv", "kinds.json", "out.csv"))
        df.to_csv(src, index=False, na_rep="")
        Path(kj).write_text(json.dumps(kinds))
        try:
            secs = run_child(python, [src, kj, dst, str(seed), ""], d, cap)
            out["dp"] = (read_back(dst, df, kinds), secs)
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            errors["dp"] = str(exc)[:300]
        tok, _ = tokens(df, dom)
        tok.to_csv(src, index=False)
        try:
            secs = run_child(python, [src, kj, dst, str(seed), ",".join(str(int(k)) for k in dom.shape)], d, cap)
            syn = untoken(pd.read_csv(dst, dtype=str, keep_default_na=False), dom, np.random.default_rng(seed))
            out["declared"] = (syn, secs)
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            errors["declared"] = str(exc)[:300]
    return out, errors


def column_rows(base: dict, df, syn, ref, kinds: dict[str, str]) -> list[dict]:
    sys.path.insert(0, str(BENCH / "accuracy"))
    import pandas as pd
    from dp_domain import normalised_w1
    from private_domain_measures import level_key, median_of, relerr

    rows = []
    for c in df.columns:
        numeric = kinds[c] == "numeric"
        row = {**base, "column": c, "kind": "numeric" if numeric else "levels", "declared_kind": "", "status": "",
               "forecast": "", "withheld": 0, "fallback": 0,
               "missing_true": round(float(df[c].isna().mean()), 5),
               "missing_dp": round(float(syn[c].isna().mean()), 5),
               "missing_declared": round(float(ref[c].isna().mean()), 5) if ref is not None else math.nan}
        if numeric:
            tm, md = median_of(df[c]), median_of(syn[c])
            mr = median_of(ref[c]) if ref is not None else math.nan
            x = pd.to_numeric(df[c], errors="coerce").dropna()
            span = float(x.quantile(0.99) - x.quantile(0.01)) if len(x) else math.nan
            row.update(true_median=tm, median_dp=md, median_declared=mr, relerr_dp=relerr(md, tm), span=span,
                       relerr_declared=relerr(mr, tm) if ref is not None else math.nan,
                       w1_dp=normalised_w1(df[c], syn[c]),
                       w1_declared=normalised_w1(df[c], ref[c]) if ref is not None else math.nan)
        else:
            vals = df[c].dropna().map(level_key)
            found = set(syn[c].dropna().map(level_key))
            row.update(levels_true=int(vals.nunique()), levels_found=len(found & set(vals)),
                       records_survived=round(float(vals.isin(found).mean()), 5) if len(vals) else math.nan)
        rows.append(row)
    return rows


def run(args) -> None:
    sys.path.insert(0, str(BENCH / "tools"))
    sys.path.insert(0, str(BENCH / "accuracy"))
    import pandas as pd
    from private_domain_measures import (
        COLUMN_FIELDS,
        TABLE_FIELDS,
        Files,
        append,
        append_many,
        commit,
        declared_codes,
        now,
        recorded,
        spmse,
        tables_by_size,
    )

    from _machine import describe, machine

    print(describe(machine()), f"| load {os.getloadavg()[0]:.1f}", flush=True)
    files = Files.of(PEER)
    done = recorded(files.tables)
    python = dpmm_python(args.python_dpmm)
    for name, df, dom in tables_by_size(args.tables, Path(args.cache), args.min_n, args.max_n):
        orig_codes = pd.DataFrame(dom.encode(df), columns=dom.names)
        kinds = kinds_of(df)
        common = {"table": name, "n": len(df), "columns": df.shape[1], "definition": "zcdp"}
        for seed in args.seeds:
            if (name, "zcdp", "0.25", str(seed), "dp", "", "dtypes") in done:
                continue
            out, errors = release(name, df, dom, seed, python, args.cap)
            base = {**common, "text_columns": sum(k == "categorical" for k in kinds.values()), "delta": DELTA,
                    "numeric_columns": sum(k == "numeric" for k in kinds.values()), "share": PROC_EPSILON,
                    "seed": seed, "types": "dtypes", "subset": "", "method": PEER,
                    "load1": round(os.getloadavg()[0], 1)}
            scores = {}
            for variant in ("declared", "dp"):
                row = {**base, "variant": variant, "commit": commit(), "date": now()}
                if variant in errors:
                    append(files.tables, TABLE_FIELDS, {**row, "status": "error", "message": errors[variant]})
                    continue
                syn, secs = out[variant]
                scores[variant] = spmse(orig_codes, declared_codes(syn, dom))
                msg = "own preprocessing: categories and numeric min/max read from the data (NOT DP)" \
                    if variant == "dp" else "the declared domain's codes as categories"
                append(files.tables, TABLE_FIELDS, {**row, "status": "ok", "spmse": scores[variant],
                                                    "seconds": round(secs, 2), "message": msg})
            if "dp" in out:
                ref = out["declared"][0] if "declared" in out else None
                cbase = {**common, "share": PROC_EPSILON, "seed": seed, "types": "dtypes", "subset": ""}
                append_many(files.columns, COLUMN_FIELDS, column_rows(cbase, df, out["dp"][0], ref, kinds))
            print(f"{name} seed {seed}: dpmm MST S_pMSE own preprocessing {scores.get('dp', math.nan):.3f}, "
                  f"declared {scores.get('declared', math.nan):.3f} {errors or ''}", flush=True)


def report(args) -> None:
    """The Markdown summary: dpmm's own preprocessing against its declared release and against dpcore's
    nothing-declared MST (private_domain.py's rows, ``--label``), tables of ≥ ``--min-n`` records."""
    sys.path.insert(0, str(BENCH / "accuracy"))
    import pandas as pd
    from private_domain_measures import Files

    def ok(files):
        t = pd.read_csv(files.tables, dtype={"seed": str})
        return t[(t.status == "ok") & (t.definition == "zcdp") & (t.n >= args.min_n)]

    peer, ours = ok(Files.of(PEER)), ok(Files.of("mst", args.label))
    ours = ours[ours.seed.isin(set(peer.seed))]  # the same seeds on both sides
    whole = ours.subset.isna()  # the whole table (under (ε, δ) nothing is released on a subset)
    ours = ours[whole & ((ours.variant == "declared") | ((ours.share == 0.25) & (ours.types == "dtypes")))]
    by = pd.DataFrame({
        "n": peer.groupby("table").n.first(),
        "dpmm_own": peer[peer.variant == "dp"].groupby("table").spmse.median(),
        "dpmm_declared": peer[peer.variant == "declared"].groupby("table").spmse.median(),
        "ours_dp": ours[ours.variant == "dp"].groupby("table").spmse.median(),
        "ours_declared": ours[ours.variant == "declared"].groupby("table").spmse.median(),
    }).dropna(subset=["dpmm_own"]).sort_values("n")
    by["dpmm_ratio"] = by.dpmm_own / by.dpmm_declared
    by["ours_ratio"] = by.ours_dp / by.ours_declared
    print(f"{len(by)} tables of ≥ {args.min_n:,} records; medians over seeds\n")
    print("| table | n | dpmm own preprocessing | dpmm declared | ratio | ours nothing declared | ours declared "
          "| ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for t, r in by.iterrows():
        print(f"| {t} | {int(r.n):,} | {r.dpmm_own:.2f} | {r.dpmm_declared:.2f} | {r.dpmm_ratio:.2f} | "
              f"{r.ours_dp:.2f} | {r.ours_declared:.2f} | {r.ours_ratio:.2f} |")
    print(f"\nmedian ratio: dpmm {by.dpmm_ratio.median():.2f}, ours {by.ours_ratio.median():.2f} "
          f"(on the {by.ours_ratio.notna().sum()} tables both have)")
    every = pd.read_csv(Files.of(PEER).tables, dtype={"seed": str})
    failed = every[(every.status != "ok") & (every.n >= args.min_n)]
    for r in failed.itertuples():
        print(f"- {r.table} seed {r.seed}, {'own preprocessing' if r.variant == 'dp' else 'declared'}: {r.message}")
    c = pd.read_csv(Files.of(PEER).columns)
    c = c[c.n >= args.min_n]
    num = c[c.kind == "numeric"]
    within = (num.relerr_dp <= 0.25).sum()
    print(f"numeric column-releases with the median within 25%: {within} of {len(num)}")
    miss = c[c.missing_true > 0]
    close = ((miss.missing_dp - miss.missing_true).abs() <= 0.03).sum()
    print(f"missing share within 3 points: {close} of {len(miss)}")
    lev = c[c.kind == "levels"]
    print(f"levels columns: records whose level came out, median {lev.records_survived.median():.4f}, "
          f"min {lev.records_survived.min():.4f} (by construction: dpmm reads the categories from the data)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("run", "report", "child"))
    ap.add_argument("rest", nargs="*", help=argparse.SUPPRESS)
    ap.add_argument("--tables", nargs="+")
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--min-n", type=int, default=1000)
    ap.add_argument("--max-n", type=int, default=10**9)
    ap.add_argument("--cap", type=float, default=1800.0, help="seconds per dpmm child")
    ap.add_argument("--python-dpmm")
    ap.add_argument("--label", default="", help="report: dpcore's rows private_domain_<label>_*.csv")
    ap.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "dpcore-corpus-cache"))
    args = ap.parse_args()
    if args.what == "child":
        src, kj, dst, seed, sizes = (args.rest + [""])[:5]
        child(src, kj, dst, int(seed), sizes)
    elif args.what == "run":
        run(args)
    else:
        report(args)


if __name__ == "__main__":
    main()
