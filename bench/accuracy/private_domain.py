"""[private-domain] item 4: nothing declared (`domain="dp"`) against the corpus's declared domain, column by column.

For each corpus table (bench/tools/corpus.py), definition ((1, 10⁻⁹) and pure ε = 1), `domain_share` and seed, two
releases with the same method and seed: `dpcore.synthesize(df, method, 1.0, domain="dp", delta=δ, seed=s,
domain_share=share)` ("nothing declared") and `dpcore.synthesize(df, method, 1.0, domain=<declared>, delta=δ, seed=s)`
("declared"; it does not depend on the share, so it is run once per (table, definition, seed)). Scores, all
curator-side (they read the raw table; NOT DP; bench/accuracy/private_domain_measures.py):

* **S_pMSE on the declared domain's codes** (mean two-way, `dpcore.metrics.utility_tables`), for both releases. The
  nothing-declared release's synthetic values are mapped onto the declared domain (`declared_codes`): a declared
  numeric column's values into its declared bins (clamped into the end bins, as the declared domain's own encoding
  does); a declared categorical column of text levels by name (a level the release did not find comes out "other",
  which matches no declared level); a declared categorical column of numeric codes (a whole-number or float code
  released as a number under `domain="dp"`) snapped to the nearest declared level; a missing value to the declared
  "missing" level when the declared column has one. Anything else ("other", a missing value where the declared
  column has none, e.g. a withheld column) gets one extra code that no original record has: it counts against the
  release as a cell the original leaves empty.
* **numeric columns** (every column the DP domain treats as numeric): normalised W1 (W1 / the true 1st–99th
  percentile range, as bench/accuracy/dp_domain.py) and the synthetic median's error relative to the true median,
  for both releases; the column's status after the release (`diagnostics["dp_domain"]["columns"][c]["status"]`) and
  its forecast (`dpcore.previews.domain_forecast` with the table's own n: curator-only);
* **levels columns** (text, or with `--types codebook` also whole-number codes): the share of the non-missing records
  whose level was found (by name), and one row per level holding ≥ 5% of the records: did it survive;
* **missing share** per column: synthetic share of missing values minus the true share, both releases.

Under pure ε a text column's levels cannot be found (`domain="dp"` refuses the table, recorded as `refused`); the
run then also releases the table's non-text columns alone (`subset` = the columns kept), both ways.
`--domain-draws K` adds K draws of the DP domain alone (no synthetic set: `plan_dp_domain` + `dp_domain` with the
release's budget, exactly as `synthesize` calls them first; seeds 1000…) for the level-survival rate. `--floor`
adds the declared release at the budget a `domain="dp"` release leaves its sets (`declared_floor`). `--types
codebook` declares the corpus's whole-number categorical columns codes (`schema=`; their levels still found
privately) instead of taking the frame's dtypes. `--label L` writes `private_domain_L_*.csv` instead, a rerun kept
beside the recorded rows (`--label counts`: the releases after a declared count's bounds started at 0).

    nice -n 10 env PYTHONPATH=. python bench/accuracy/private_domain.py run --definitions zcdp pure --seeds 0 1 2 \
        --domain-draws 20
    nice -n 10 env PYTHONPATH=. python bench/accuracy/private_domain.py run --definitions zcdp \
        --shares 0.15 0.25 0.35 --min-n 1000 --max-n 20000 --seeds 0 1 2 --floor --domain-draws 20
    nice -n 10 env PYTHONPATH=. python bench/accuracy/private_domain.py binfloor --seeds 0 1 2
    PYTHONPATH=. python bench/accuracy/private_domain_report.py      # the Markdown tables of bench/RESULTS.md

Results (rows appended; a key already in the CSV is not run again): bench/data/private_domain_tables.csv (one row
per release), private_domain_columns.csv (per release and column), private_domain_levels.csv (per release or domain
draw and level ≥ 5%), all for MST (`--method aim`: private_domain_aim_*.csv), and private_domain_binfloor.csv
(`binfloor`: the original records through the DP domain and back, no noise).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402

import pandas as pd  # noqa: E402

BENCH = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(BENCH / "tools"))  # _machine, corpus
sys.path.insert(0, str(BENCH / "accuracy"))  # dp_domain (normalised_w1), private_domain_measures
from dp_domain import normalised_w1  # noqa: E402
from private_domain_measures import (  # noqa: E402
    BINFLOOR_CSV,
    BINFLOOR_FIELDS,
    COLUMN_FIELDS,
    LEVEL_FIELDS,
    TABLE_FIELDS,
    Files,
    append,
    append_many,
    binfloor,
    check_domain_only,
    codebook_schema,
    commit,
    declared_codes,
    diagnose,
    domain_only,
    floor_epsilon,
    level_key,
    level_rows,
    median_of,
    now,
    recorded,
    relerr,
    spmse,
    tables_by_size,
)

from _machine import describe, machine  # noqa: E402


@dataclass
class Table:
    """One corpus table under one definition, as the run releases it: the frame (the non-text columns alone under
    pure ε when it has text), its declared domain and codes, the declared schema (None: the frame's dtypes) and
    which columns are found as DP levels."""

    name: str
    df: pd.DataFrame
    dom: object
    definition: str
    method: str
    types: str
    files: Files
    done: set
    subset: str = ""
    schema: object = None
    text: list = field(default_factory=list)
    forecasts: dict = field(default_factory=dict)

    @property
    def delta(self):
        return 1e-9 if self.definition == "zcdp" else None

    @property
    def common(self) -> dict:
        return {"table": self.name, "n": len(self.df), "columns": self.df.shape[1], "definition": self.definition}

    def row(self, **kw) -> dict:
        """A row of the tables file, with the machine's load, the commit and the time."""
        base = {**self.common, "subset": self.subset, "text_columns": len(self.text), "delta": self.delta or ""}
        return {**base, "method": self.method, **kw, "commit": commit(), "date": now()}

    def codes(self, syn: pd.DataFrame) -> pd.DataFrame:
        return declared_codes(syn, self.dom)


def prepare(name: str, df: pd.DataFrame, dom, definition: str, args, done: set, files: Files) -> Table | None:
    """The table as the run releases it; under pure ε with text columns, the refusal is recorded once and the
    non-text columns are kept (None when fewer than two remain)."""
    import dpcore
    from dpcore.data.schema import Schema

    ctypes = {c.name: c.type for c in Schema.from_dtypes(df).columns}
    t = Table(name, df, dom, definition, args.method, args.types, files, done)
    t.text = [c for c, k in ctypes.items() if k == "text"]
    if definition == "pure" and t.text:
        key = (name, definition, "", "", "dp", "", "")
        if key not in done:  # the refusal, recorded once
            try:
                dpcore.synthesize(df, args.method, 1.0, domain="dp", seed=0)
                msg = "not refused"
            except dpcore.DPCoreError as exc:
                msg = str(exc)
            row = {**t.common, "text_columns": len(t.text), "variant": "dp", "method": args.method}
            append(
                files.tables,
                TABLE_FIELDS,
                {**row, "status": "refused", "message": msg[:300], "commit": commit(), "date": now()},
            )
            done.add(key)
        keep = [c for c in df.columns if ctypes[c] != "text"]
        if len(keep) < 2:
            return None
        t.df, t.dom, t.text, t.subset = df[keep].copy(), dom.project(keep), [], " ".join(keep)
    if args.types == "codebook":
        t.schema = codebook_schema(t.df, t.dom)
        if t.delta is not None:
            t.text = [c.name for c in t.schema.columns if c.levels_column]
    return t


def release_floor(t: Table, orig_codes: pd.DataFrame, share: float, seed: int) -> None:
    """The declared release at the budget a ``domain="dp"`` release at ``share`` leaves its sets."""
    import dpcore
    from dpcore.measure.dp_domain import plan_dp_domain

    levels_delta = plan_dp_domain(t.df, t.delta, share, None, t.schema).levels_delta
    eps_f = floor_epsilon(t.delta, share, levels_delta)
    start = time.perf_counter()
    fl = dpcore.synthesize(t.df, t.method, eps_f, domain=t.dom, delta=t.delta, seed=seed)
    score = spmse(orig_codes, t.codes(fl.sets[0]))
    secs = round(time.perf_counter() - start, 2)
    kw = {"share": share, "seed": seed, "variant": "declared_floor", "status": "ok", "spmse": score, "seconds": secs}
    append(t.files.tables, TABLE_FIELDS, t.row(**kw, message=f"epsilon {eps_f:.6f}", load1=load1()))


def release_declared(t: Table, orig_codes: pd.DataFrame, seed: int):
    """The release on the declared domain (recorded once per table, definition and seed)."""
    import dpcore

    start = time.perf_counter()
    ref = dpcore.synthesize(t.df, t.method, 1.0, domain=t.dom, delta=t.delta, seed=seed)
    secs = round(time.perf_counter() - start, 2)
    dkey = (t.name, t.definition, "", str(seed), "declared", t.subset, "")
    if dkey not in t.done:
        score = spmse(orig_codes, t.codes(ref.sets[0]))
        kw = {"seed": seed, "variant": "declared", "status": "ok", "spmse": score, "seconds": secs}
        append(t.files.tables, TABLE_FIELDS, t.row(**kw, load1=load1()))
        t.done.add(dkey)
    return ref


def column_row(t: Table, c: str, r: dict, syn: pd.DataFrame, ref: pd.DataFrame, forecast: dict, base: dict) -> dict:
    """The columns file's row of column ``c`` (its DP domain record ``r``) in one release."""
    df = t.df
    kind = "numeric" if "bounds" in r else "levels" if c in t.text else "boolean/declared"
    row = {
        **base,
        **{"column": c, "kind": kind, "declared_kind": t.dom[c].kind, "status": r.get("status")},
        **{
            "forecast": forecast.get(c),
            "withheld": int(bool(r.get("withheld"))),
            "fallback": int(bool(r.get("fallback"))),
        },
        "missing_true": round(float(df[c].isna().mean()), 5),
        "missing_dp": round(float(syn[c].isna().mean()), 5),
        "missing_declared": round(float(ref[c].isna().mean()), 5),
    }
    if kind == "numeric":
        tm, md, mr = median_of(df[c]), median_of(syn[c]), median_of(ref[c])
        x = pd.to_numeric(df[c], errors="coerce").dropna()
        span = float(x.quantile(0.99) - x.quantile(0.01)) if len(x) else math.nan
        row.update(true_median=tm, median_dp=md, median_declared=mr, relerr_dp=relerr(md, tm), span=span)
        row.update(relerr_declared=relerr(mr, tm), w1_dp=normalised_w1(df[c], syn[c]))
        row.update(w1_declared=normalised_w1(df[c], ref[c]))
    if kind == "levels":
        vals = df[c].dropna().map(level_key)
        found = set(map(level_key, r.get("levels", [])))
        survived = round(float(vals.isin(found).mean()), 5) if len(vals) else math.nan
        row.update(levels_true=int(vals.nunique()), levels_found=len(found), records_survived=survived)
    return row


def forecast_of(t: Table, share: float) -> dict:
    """The preview's forecast per column (the table's own n: curator-only), once per share."""
    from dpcore.previews import domain_forecast

    if share not in t.forecasts:
        fc = domain_forecast(t.df, 1.0, delta=t.delta, domain_share=share, schema=t.schema)
        t.forecasts[share] = {f.column: f.status for f in fc}
    return t.forecasts[share]


def release_dp(t: Table, orig_codes: pd.DataFrame, share: float, seed: int, ref) -> None:
    """The ``domain="dp"`` release at ``share`` and ``seed``: its tables, columns and levels rows."""
    import dpcore

    start = time.perf_counter()
    try:
        rel = dpcore.synthesize(
            t.df, t.method, 1.0, domain="dp", delta=t.delta, seed=seed, domain_share=share, schema=t.schema
        )
    except dpcore.DPCoreError as exc:
        row = {**t.common, "subset": t.subset, "types": t.types, "share": share, "seed": seed, "variant": "dp"}
        row.update(method=t.method, status="error", message=str(exc)[:300], commit=commit())
        append(t.files.tables, TABLE_FIELDS, row)
        return
    secs = time.perf_counter() - start
    syn, cols = rel.sets[0], rel.diagnostics["dp_domain"]["columns"]
    score = spmse(orig_codes, t.codes(syn))
    warnings = ("" if rel.dp else "NOT DP: ") + "; ".join(rel.diagnostics["dp_domain"]["warnings"])
    numeric = [c for c, r in cols.items() if "bounds" in r]
    kw = {"types": t.types, "numeric_columns": len(numeric), "share": share, "seed": seed, "variant": "dp"}
    kw.update(status="ok", spmse=score, seconds=round(secs, 2), message=warnings[:300], load1=load1())
    append(t.files.tables, TABLE_FIELDS, t.row(**kw))
    base = {**t.common, "types": t.types, "subset": t.subset, "share": share, "seed": seed}
    fc = forecast_of(t, share)
    rows = [column_row(t, c, r, syn, ref.sets[0], fc, base) for c, r in cols.items()]
    append_many(t.files.columns, COLUMN_FIELDS, rows)
    append_many(t.files.levels, LEVEL_FIELDS, level_rows(base, t.df, cols, t.text, "release"))
    ref_score = spmse(orig_codes, t.codes(ref.sets[0]))
    print(
        f"{t.name} {t.definition} {t.types} share {share:g} seed {seed}: S_pMSE dp {score:.3f} "
        f"declared {ref_score:.3f} ({secs:.1f} s)",
        flush=True,
    )


def domain_draws(t: Table, shares: list[float], draws: int) -> None:
    """``draws`` draws of the DP domain alone per share (seeds 1000…), for the levels' survival rate."""
    for share in shares:
        key = (t.name, t.definition, f"{share:g}", "draws", "domain", t.subset, t.types)
        if key in t.done:
            continue
        rows = []
        base = {**t.common, "types": t.types, "share": share}
        for k in range(draws):
            rec = domain_only(t.df, t.delta, share, 1000 + k, t.schema)
            rows += level_rows({**base, "seed": 1000 + k}, t.df, rec, t.text, "domain-only")
        append_many(t.files.levels, LEVEL_FIELDS, rows)
        kw = {"types": t.types, "share": share, "seed": "draws", "variant": "domain", "method": ""}
        append(t.files.tables, TABLE_FIELDS, t.row(**kw, status="ok", message=f"{draws} domain-only draws"))
        t.done.add(key)


def run_table(t: Table, shares: list[float], seeds: list[int], draws: int, floor: bool) -> None:
    orig_codes = pd.DataFrame(t.dom.encode(t.df), columns=t.dom.names)
    for seed in seeds:
        ref = None  # the declared release: once per seed, whatever the share
        for share in shares:
            fl_key = (t.name, t.definition, f"{share:g}", str(seed), "declared_floor", t.subset, "")
            if floor and fl_key not in t.done:
                release_floor(t, orig_codes, share, seed)
                t.done.add(fl_key)
            key = (t.name, t.definition, f"{share:g}", str(seed), "dp", t.subset, t.types)
            if key in t.done:
                continue
            if ref is None:
                ref = release_declared(t, orig_codes, seed)
            release_dp(t, orig_codes, share, seed, ref)
            t.done.add(key)
    if t.text and draws:
        domain_draws(t, shares, draws)


def load1() -> float:
    return round(os.getloadavg()[0], 1)


def run(args) -> None:
    print(describe(machine()), f"| load {os.getloadavg()[0]:.1f}", flush=True)
    files = Files.of(args.method, args.label)
    done = recorded(files.tables)
    for name, df, dom in tables_by_size(args.tables, Path(args.cache), args.min_n, args.max_n):
        for definition in args.definitions:
            start = time.perf_counter()
            t = prepare(name, df, dom, definition, args, done, files)
            if t is not None:
                draws = args.domain_draws if definition == "zcdp" else 0
                run_table(t, args.shares, args.seeds, draws, args.floor)
            print(f"-- {name} {definition}: {time.perf_counter() - start:.1f} s", flush=True)


def binfloor_rows(name: str, df: pd.DataFrame, dom, definition: str, subset: str, args, done: set) -> list[dict]:
    delta = 1e-9 if definition == "zcdp" else None
    rows = []
    for share in args.shares:
        for seed in args.seeds:
            if (name, definition, f"{share:g}", str(seed)) in done:
                continue
            found, _ = domain_only(df, delta, share, seed, with_domain=True)
            a, b = binfloor(df, dom, found, seed)
            row = {"table": name, "n": len(df), "columns": df.shape[1], "definition": definition, "share": share}
            rows.append({**row, "seed": seed, "subset": subset, "spmse_binfloor": a, "spmse_binfloor_numeric": b})
    return rows


def run_binfloor(args) -> None:
    """One row per (table, definition, share, seed): :func:`binfloor` of the domain the release at that seed found
    (the domain-only draw at the same seed is that domain: :func:`check_domain_only`)."""
    import corpus

    from dpcore.data.schema import Schema

    done = set()
    if BINFLOOR_CSV.exists():
        b = pd.read_csv(BINFLOOR_CSV, dtype=str).fillna("")
        done = {(r.table, r.definition, f"{float(r.share):g}", r.seed) for r in b.itertuples()}
    specs = corpus.corpus_specs()
    for name in args.tables or list(specs):
        df0, dom0 = corpus.load_table(name, cache_dir=Path(args.cache), specs=specs)
        if not args.min_n <= len(df0) <= args.max_n:
            continue
        for definition in args.definitions:
            df, dom, subset = df0, dom0, ""
            if definition == "pure":
                keep = [c.name for c in Schema.from_dtypes(df0).columns if c.type != "text"]
                if len(keep) < 2:
                    continue
                if len(keep) < df0.shape[1]:
                    df, dom, subset = df0[keep].copy(), dom0.project(keep), " ".join(keep)
            rows = binfloor_rows(name, df, dom, definition, subset, args, done)
            append_many(BINFLOOR_CSV, BINFLOOR_FIELDS, rows)
            scores = ", ".join(f"{r['spmse_binfloor']:.2f}/{r['spmse_binfloor_numeric']:.2f}" for r in rows)
            print(f"{name} {definition}: {scores}", flush=True)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("run", "report", "check", "diagnose", "binfloor"))
    ap.add_argument("--tables", nargs="+")
    ap.add_argument("--definitions", nargs="+", default=["zcdp", "pure"], choices=("zcdp", "pure"))
    ap.add_argument("--shares", nargs="+", type=float, default=[0.25])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--method", default="mst")
    ap.add_argument(
        "--floor",
        action="store_true",
        help='also release on the declared domain at the budget a domain="dp" release leaves its sets',
    )
    ap.add_argument(
        "--types",
        default="dtypes",
        choices=("dtypes", "codebook"),
        help="the declared types: the frame's dtypes (the API's default), or those with the corpus's categorical "
        "whole-number columns declared codes",
    )
    ap.add_argument("--min-n", type=int, default=0)
    ap.add_argument("--max-n", type=int, default=10**9)
    ap.add_argument(
        "--domain-draws", type=int, default=0, help="zcdp: this many draws of the DP domain alone per (table, share)"
    )
    ap.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "dpcore-corpus-cache"))
    ap.add_argument("--label", default="", help="write (and report) the results files private_domain_<label>_*.csv: "
                    "a rerun kept beside the recorded rows")
    return ap


def main() -> None:
    args = parser().parse_args()
    if args.what == "run":
        run(args)
    elif args.what == "binfloor":
        run_binfloor(args)
    elif args.what == "diagnose":
        import corpus

        for name in args.tables:
            df, dom = corpus.load_table(name, cache_dir=Path(args.cache))
            d = diagnose(df, dom, args.seeds[0], args.shares[0])
            dp, de = d.attrs["spmse"]
            print(f"{name} (n {len(df):,}, seed {args.seeds[0]}): S_pMSE dp {dp:.2f} declared {de:.2f}")
            print(d.round(3).to_string(index=False))
    elif args.what == "check":
        import corpus

        for name in args.tables or ["chile"]:
            df, _ = corpus.load_table(name, cache_dir=Path(args.cache))
            print(name, "domain-only draw = the release's domain:", check_domain_only(df))
    else:
        from private_domain_report import report

        print(report(Files.of(args.method, args.label)))


if __name__ == "__main__":
    main()
