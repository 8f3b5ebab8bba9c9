"""The ``evaluate`` and ``sweep`` commands of ``python -m dpcore``.

Curator-side: both read the raw data; nothing they print is differentially private.
"""
from __future__ import annotations

import argparse
import json
import sys

import pandas as pd

from dpcore.errors import OptionError
from dpcore.metrics.evaluate import MEASURES, NOT_DP, canonical_measures, evaluate


def _read(path: str) -> pd.DataFrame:
    try:
        from dpcore.data.io import read_table
    except ImportError:  # dpcore.data.io not available yet: plain pandas
        read_table = None
    if read_table is not None:
        return read_table(path)
    from dpcore.errors import InputError

    try:
        if str(path).lower().endswith((".parquet", ".pq")):
            return pd.read_parquet(path)
        return pd.read_csv(path)
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read '{path}': {exc}") from None


def _fmt(v) -> str:
    if v is None:
        return "NA"
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def _print_table(result: dict, file=None) -> None:
    file = file or sys.stdout
    keys = [k for k in MEASURES.values() if k in result]
    m = result["m"]
    head = ["measure", "mean"] + [f"set {i + 1}" for i in range(m)] if m > 1 else ["measure", "value"]
    rows = []
    for k in keys:
        row = [k, _fmt(result[k])]
        if m > 1:
            row += [_fmt(p.get(k)) for p in result["per_set"]]
        rows.append(row)
    widths = [max(len(str(r[j])) for r in [head] + rows) for j in range(len(head))]
    line = lambda r: "  ".join(str(c).ljust(w) if j == 0 else str(c).rjust(w)
                               for j, (c, w) in enumerate(zip(r, widths)))
    print(line(head), file=file)
    print("  ".join("-" * w for w in widths), file=file)
    for r in rows:
        print(line(r), file=file)
    if result.get("s_pmse_2way_worst_table"):
        print(f"worst two-way table: {' × '.join(result['s_pmse_2way_worst_table'])}", file=file)
    print(f"n original = {result['n_orig']}, m = {m} synthetic set(s)", file=file)
    if result.get("numeric"):
        _print_numeric(result["numeric"], file)
    print(f"NOTE: {result['not_dp']}", file=file)


def _print_numeric(numeric: dict, file) -> None:
    """The numeric columns' W1 and percentile errors (each over the range's width), then the
    regression's CI overlap."""
    head = ["numeric column", "range", "from", "W1", "q10 err", "q50 err", "q90 err"]
    rows = [[c, f"[{_fmt(v['lower'])}, {_fmt(v['upper'])}]", v["from"], _fmt(v["w1"]), _fmt(v["q10_error"]),
             _fmt(v["q50_error"]), _fmt(v["q90_error"])] for c, v in numeric["columns"].items()]
    widths = [max(len(str(r[j])) for r in [head] + rows) for j in range(len(head))]
    print("", file=file)
    for r in [head, ["-" * w for w in widths], *rows]:
        print("  ".join(str(c).ljust(w) if j < 3 else str(c).rjust(w) for j, (c, w) in enumerate(zip(r, widths))),
              file=file)
    print("W1 and the percentile errors are divided by the range's width (0 = the same values).", file=file)
    reg = numeric.get("regression")
    if reg:
        print(f"regression CI overlap (OLS, outcome {reg['outcome']}): mean {_fmt(reg['mean_overlap'])}, "
              f"sign agreement {_fmt(reg['sign_agreement'])}", file=file)


def _run_evaluate(args) -> int:
    # bad input raises DPCoreError; dpcore.cli.commands.main turns it into one line and status 2
    orig = _read(args.orig)
    syns = [_read(p) for p in args.syn]
    result = evaluate(orig, syns, measures=args.measures, specks_model=args.specks_model, domain=args.domain,
                      numeric_outcome=args.numeric_outcome)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        _print_table(result)
    return 0


def add_evaluate_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``evaluate ORIG SYN_1 [SYN_2 ...] [--measures ...] [--json]``."""
    p = subparsers.add_parser(
        "evaluate",
        help="utility and disclosure risk of synthetic sets against the original (curator-only, not DP)",
        description="Compare synthetic sets with the original data: S_pMSE, p0/p1, replicated "
                    "uniques, SPECKS, pMSE; for numeric columns W1, percentile errors and the OLS CI "
                    "overlap. Reads the raw data: curator-only, NOT differentially private.",
    )
    p.add_argument("orig", metavar="ORIG", help="original data (CSV or Parquet)")
    p.add_argument("syn", metavar="SYN", nargs="+", help="synthetic set(s) (CSV or Parquet)")
    p.add_argument("--measures", default=None,
                   help=f"comma-separated subset of {','.join(MEASURES)} (default: all but l1)")
    p.add_argument("--specks-model", default="interactions", choices=("main", "interactions", "cart"),
                   help="propensity model for SPECKS/pMSE (default: interactions, as in the 2021 paper)")
    p.add_argument("--domain", default=None,
                   help="domain.json: the numeric columns' ranges for W1 and the percentile errors (default: each "
                        "numeric column's own min and max in the original)")
    p.add_argument("--numeric-outcome", default=None,
                   help="numeric column used as the outcome of the OLS regression overlap (default: the first)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.set_defaults(func=_run_evaluate)
    return p


def _floats(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise OptionError(f"--epsilons must be comma-separated numbers, e.g. 0.1,0.5,1; got {text!r}") from None


def _run_sweep(args) -> int:
    from dpcore.metrics.sweep import sweep
    from dpcore.synthesizers import REGISTRY

    data = _read(args.input)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    method_options = {m: {} for m in methods}
    if args.layers is not None:
        for m in methods:
            if m in REGISTRY and REGISTRY[m].hierarchical:
                method_options[m]["layers"] = args.layers
    if args.delta is not None:  # every release of the sweep is (ε, δ)-DP at this δ, as the design's would be
        for m in methods:
            method_options[m]["delta"] = args.delta

    def progress(done, total, message):
        print(f"[{done}/{total}] {message}", file=sys.stderr, flush=True)

    df = sweep(data, methods, _floats(args.epsilons), args.reps, measures=canonical_measures(args.measures
               or "s_pmse,ru,specks"), progress=progress, domain=args.domain, seed=args.seed,
               cache_dir=args.cache_dir, sets=args.sets, method_options=method_options,
               specks_model=args.specks_model)
    out = str(args.out)
    if out.lower().endswith((".parquet", ".pq")):
        df.to_parquet(out, index=False)
    else:
        df.to_csv(out, index=False)
    print(f"wrote {len(df)} rows to {out} ({NOT_DP})", file=sys.stderr)
    return 0


def add_sweep_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``sweep INPUT --methods ... --epsilons ... --reps R --out results.csv``."""
    p = subparsers.add_parser(
        "sweep",
        help="run methods over an ε grid with repetitions and record utility/risk (curator-only)",
        description="Synthesise with each method at each ε, R times, and record the chosen measures "
                    "in a tidy table (method, options, epsilon, rep, measure, value). The measures read "
                    "the raw data: curator-only, NOT differentially private.",
    )
    p.add_argument("input", metavar="INPUT", help="original data (CSV or Parquet)")
    p.add_argument("--methods", required=True, help="comma-separated method names, e.g. steps,flat_laplace")
    p.add_argument("--epsilons", required=True, help="comma-separated ε values, e.g. 0.1,0.5,1,2,5")
    p.add_argument("--reps", type=int, default=3, help="repetitions per (method, ε) (default 3)")
    p.add_argument("--out", required=True, help="output table (.csv or .parquet)")
    p.add_argument("--measures", default=None,
                   help=f"comma-separated subset of {','.join(MEASURES)} (default s_pmse,ru,specks)")
    p.add_argument("--layers", type=int, default=None, help="layers L for the STEPS-family methods")
    p.add_argument("--sets", type=int, default=1, help="synthetic sets m per release (default 1; give the "
                                                          "design's m to measure the errors its release would have)")
    p.add_argument("--delta", type=float, default=None,
                   help="release every method under (ε, δ)-DP through zCDP with this δ (default: pure ε-DP)")
    p.add_argument("--seed", type=int, default=0, help="base seed (default 0); each run's seed derives from it")
    p.add_argument("--domain", default=None, help="declared public domain (domain.json)")
    p.add_argument("--cache-dir", default=None, help="directory for cached results (JSON per run)")
    p.add_argument("--specks-model", default="interactions", choices=("main", "interactions", "cart"),
                   help="propensity model for SPECKS/pMSE (default interactions)")
    p.set_defaults(func=_run_sweep)
    return p
