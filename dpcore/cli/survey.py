"""Survey commands for ``python -m dpcore``: ``amplify``, ``impute-release``, ``poststrat-release``.

The lead wires :func:`add_survey_parsers` into dpcore/cli/commands.py. Each command raises
:class:`~dpcore.errors.InputError` / :class:`~dpcore.errors.OptionError` on bad input, which
``dpcore.cli.commands.main`` prints as one line with exit status 2.

Every command states its neighbour notion (``--neighbours``; JSON ``neighbours`` and
``statement``) and publishes only DP values, their ε and public inputs: no exact count
read from the data appears in the JSON or the printed lines of a release.

Examples::

    python -m dpcore amplify --epsilon 1 --beta 0.1
    python -m dpcore impute-release assets/sd2011.csv --target income \\
        --match sex,agegr,edu,socprof,placesize --ordinal agegr,edu,placesize --levels levels.json \\
        --query mean --bounds 0,20000 --where "age >= 20 and age <= 59" --size 3256 \\
        --epsilon 4.1589 --seed 1
    python -m dpcore poststrat-release sample.csv --columns age --candidates cands.json \\
        --totals totals.csv --count-where "poor" --epsilon-select 0.01 --epsilon-count 1 --seed 1
"""
from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from dpcore.data.expressions import row_mask
from dpcore.data.io import read_table
from dpcore.errors import InputError, OptionError

__all__ = ["add_survey_parsers", "cmd_amplify", "cmd_impute_release", "cmd_poststrat_release"]


def add_survey_parsers(subparsers) -> None:
    """Add the three survey subcommands to an ``argparse`` subparsers object."""
    a = subparsers.add_parser("amplify", help="ε' of a release computed on a random β-share (Merrill Thm 5.5.1)")
    a.add_argument("--epsilon", type=float, required=True, help="ε of the mechanism run on the piece")
    a.add_argument("--beta", type=float, required=True, help="share β = n_i/n of the records in the piece(s)")
    a.add_argument("--neighbours", default="replace",
                   help="replace (n and the piece sizes public; the only notion Thm 5.5.1 covers)")
    a.add_argument("--json", action="store_true", help="print JSON")
    a.set_defaults(func=cmd_amplify)

    i = subparsers.add_parser("impute-release", help="k-NN-impute a column and release a DP count, mean or variance")
    i.add_argument("input", help="CSV or Parquet file (the confidential sample)")
    i.add_argument("--target", required=True, help="column with missing values to impute")
    i.add_argument("--match", required=True, help="comma-separated matching columns")
    i.add_argument("--ordinal", default="", help="comma-separated matching columns that are ordinal")
    i.add_argument("--levels", help="JSON file {column: [levels, lowest first for ordinal ones]}; "
                                    "levels not declared are inferred from the data (not DP)")
    i.add_argument("--k", type=int, default=1, help="number of donors (default 1)")
    i.add_argument("--impute", default="copy", help="copy (k = 1) | mean | majority")
    i.add_argument("--query", default="mean", help="count | mean | variance")
    i.add_argument("--method", default="smooth",
                   help="smooth (Cor 6.4.3/6.4.6/6.4.9) | ignore (drop missing + Laplace) | "
                        "global (impute + optimistic Laplace; NOT DP)")
    i.add_argument("--bounds", help="public bounds a,b of the target (mean and variance)")
    i.add_argument("--where", help='subpopulation, a pandas expression on the other columns, e.g. "age >= 20"')
    i.add_argument("--target-where", help='condition on the imputed target, e.g. "income < 658" (count; '
                                          "for a mean it makes the subpopulation depend on the target)")
    i.add_argument("--size", type=float, help="public subpopulation size s (omit: ε/2 buys a noisy one, "
                                              "Remark 6.4.7)")
    i.add_argument("--epsilon", type=float, required=True, help="ε (smooth releases need ε ≥ 2 ln 2 ≈ 1.39)")
    i.add_argument("--seed", type=int, help="seed for reproducibility")
    i.add_argument("--neighbours", default="add_remove",
                   help="add_remove (default) | replace (n public; --method ignore only: the smooth bounds are "
                        "for adding or removing one record)")
    i.add_argument("--workspace", help="workspace folder: also register the table in it (the release is charged "
                                            "to the installation's budget book either way; refused, with nothing "
                                            "drawn, over the table's cap)")
    i.add_argument("--no-book", dest="no_book", action="store_true",
                   help="do NOT record the release in the budget book: it is then unaccounted")
    i.add_argument("--new-table", dest="new_table", action="store_true",
                   help="charge the input as a new table even when it looks like a table the book knows")
    i.add_argument("--json", action="store_true", help="print JSON")
    _add_unit_options(i)
    i.set_defaults(func=cmd_impute_release)

    p = subparsers.add_parser("poststrat-release", help="DP post-stratified weighted count (bin selection, "
                                                        "DP IPF, smooth sensitivity)")
    p.add_argument("input", help="CSV or Parquet file (the confidential sample)")
    p.add_argument("--columns", required=True, help="comma-separated columns to post-stratify on")
    p.add_argument("--totals", required=True, help="CSV with columns column,level,total: the known population "
                                                   "total of every base level")
    p.add_argument("--candidates", help='JSON {column: {name: {level: bin}}}: candidate sets of bins; '
                                        "a column not listed keeps every level as its own bin")
    p.add_argument("--count-where", required=True, help='rows to count, a pandas expression, e.g. "poor == 1"')
    p.add_argument("--epsilon-select", type=float, help="ε_1 for choosing the bins (exponential mechanism)")
    p.add_argument("--epsilon-table", type=float, help="ε_2 for the noisy join table (two or more columns)")
    p.add_argument("--epsilon-count", type=float, required=True, help="ε_3 for the weighted count")
    p.add_argument("--gamma", type=float, default=4.0, help="generalized Cauchy γ ≥ 2 (default 4: unit variance)")
    p.add_argument("--weights", help="base-weight column (from the design; all > 0)")
    p.add_argument("--base-weight-range", help="LO,HI: the smallest and largest base weight the design allows")
    p.add_argument("--seed", type=int, help="seed for reproducibility")
    p.add_argument("--neighbours", default="add_remove",
                   help="add_remove (the only notion the ch. 7 bounds cover)")
    p.add_argument("--workspace", help="workspace folder: also register the table in it (the release is charged "
                                            "to the installation's budget book either way; refused, with nothing "
                                            "drawn, over the table's cap)")
    p.add_argument("--no-book", dest="no_book", action="store_true",
                   help="do NOT record the release in the budget book: it is then unaccounted")
    p.add_argument("--new-table", dest="new_table", action="store_true",
                   help="charge the input as a new table even when it looks like a table the book knows")
    p.add_argument("--json", action="store_true", help="print JSON")
    _add_unit_options(p)
    p.set_defaults(func=cmd_poststrat_release)


def _add_unit_options(p) -> None:
    p.add_argument("--privacy-unit", dest="privacy_unit",
                   help="protect everything about one value of this identifier column (a person, a household): "
                        "each keeps at most --records-per-unit records (chosen at random) and every mechanism runs "
                        "at ε/K (group privacy)")
    p.add_argument("--records-per-unit", dest="records_per_unit", type=int,
                   help="with --privacy-unit: K, the most records one unit may contribute (public)")


# ------------------------------------------------------------------ helpers


def _notion_label(notion: str) -> str:
    from dpcore.survey._privacy import label

    return label(notion)


def _through_book(args, df: pd.DataFrame, run, *, epsilon: float, method: str, dp: bool = True, unit=None):
    """``run()`` charged to the installation's budget book for the table read (dpcore.studio.survey_book;
    ``--workspace`` also registers the table there): reserved before any randomness, refused over the
    table's cap. ``--no-book``: unaccounted, and said so. (release, note line)."""
    if getattr(args, "no_book", False):
        if getattr(args, "workspace", None):
            raise OptionError("--no-book with --workspace: a workspace's releases are always recorded in the budget "
                              "book; drop one of them")
        return run(), ("UNACCOUNTED (--no-book): this release is in no budget book; its ε counts against no "
                       "table's total or cap")
    from dpcore.cli.book import book_table, recorded_line
    from dpcore.studio.survey_book import record_survey_release

    name = Path(args.input).name
    book, ws, fp, charged = book_table(args, df, name)
    rec = record_survey_release(book, fp, run, epsilon=epsilon, method=method, neighbours=args.neighbours,
                                table_name=name, dp=dp, workspace="" if ws is None else ws.id,
                                unit_column=None if unit is None else unit.unit.column,
                                records_per_unit=1 if unit is None else unit.k)
    note = recorded_line(book, rec.entry_id, fp, name).replace("as release", "as entry", 1)
    return rec.release, note if charged is None else f"{charged}\n{note}"


def _unit(args, df: pd.DataFrame, rng, smooth: bool):
    """The table the release reads and what it protects (``--privacy-unit``; :mod:`dpcore.survey.group`)."""
    from dpcore.survey._smooth import CH6_MIN_EPSILON
    from dpcore.survey.group import for_unit

    data, unit = for_unit(df, getattr(args, "privacy_unit", None), getattr(args, "records_per_unit", None), rng)
    if smooth and unit.k > 1 and unit.record_epsilon(args.epsilon) < CH6_MIN_EPSILON:
        raise OptionError(f"with --records-per-unit {unit.k} each mechanism runs at ε/{unit.k}, and a smooth-"
                          f"sensitivity release needs that to be at least 2 ln 2: give --epsilon "
                          f"{unit.k * CH6_MIN_EPSILON:.4g} or more, or --method ignore")
    return data, unit


def _rng(seed):
    if seed is not None and seed < 0:
        raise OptionError(f"seed must be ≥ 0; got {seed}")
    return np.random.default_rng(seed)


def _cols(text: str, what: str) -> list[str]:
    cols = [c.strip() for c in (text or "").split(",") if c.strip()]
    return cols


def _pair(text, what) -> tuple[float, float]:
    try:
        a, b = (float(x) for x in str(text).split(","))
    except ValueError:
        raise OptionError(f"{what} must be two numbers separated by a comma, e.g. 0,20000; got {text!r}") from None
    return a, b


def _json_file(path, what):
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read the {what} file '{path}': {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"the {what} file '{path}' is not valid JSON ({exc.msg} at line {exc.lineno})") from None


def _clean(o):
    """Strict JSON: NaN (data-dependent ledger fields that are not recorded) becomes null."""
    if isinstance(o, float) and not math.isfinite(o):
        return None
    if isinstance(o, dict):
        return {k: _clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_clean(v) for v in o]
    return o


def _print(result: dict, as_json: bool, lines: list[str]) -> None:
    if as_json:
        print(json.dumps(_clean(result), indent=2, ensure_ascii=False, default=_default, allow_nan=False))
    else:
        print("\n".join(lines))


def _default(o):
    if hasattr(o, "item"):
        return o.item()
    if hasattr(o, "tolist"):
        return o.tolist()
    return str(o)


# ------------------------------------------------------------------ amplify


def cmd_amplify(args) -> int:
    from dpcore.survey._privacy import label
    from dpcore.survey.partition import amplified_epsilon, max_useful_beta, partition_notion

    nb = partition_notion(args.neighbours, "amplify (--neighbours)")
    eps_p = amplified_epsilon(args.epsilon, args.beta)
    eff = min(args.epsilon, eps_p)
    mb = max_useful_beta(args.epsilon)
    res = {"epsilon": args.epsilon, "beta": args.beta, "epsilon_prime": eps_p, "epsilon_effective": eff,
           "max_useful_beta": mb, "amplifies": eps_p < args.epsilon, "neighbours": label(nb)}
    lines = [
        f"ε' = {eps_p:.6g} for ε = {args.epsilon:g} on a random {args.beta:g} share (Merrill Thm 5.5.1, "
        f"neighbours: {label(nb)})",
        f"guarantee: min(ε, ε') = {eff:.6g}" + ("" if eps_p < args.epsilon else
                                                  f" — no saving: amplification needs β < {mb:.4g}"),
        "valid only if the users of other pieces do not pool their answers",
    ]
    _print(res, args.json, lines)
    return 0


# ------------------------------------------------------------------ impute-release


def cmd_impute_release(args) -> int:
    with warnings.catch_warnings():
        return _impute_release(args)


def _impute_options(args, df: pd.DataFrame) -> tuple[list, list, dict | None]:
    """The checked matching columns, ordinal columns and levels of ``dpcore impute-release``;
    a one-line error for the first bad option."""
    match = _cols(args.match, "--match")
    if not match:
        raise OptionError("--match needs at least one column name")
    ordinal = _cols(args.ordinal, "--ordinal")
    levels = _json_file(args.levels, "levels") if args.levels else None
    if levels is not None and not isinstance(levels, dict):
        raise InputError("the levels file must hold a JSON object {column: [levels]}")
    if args.query not in ("count", "mean", "variance"):
        raise OptionError(f"--query must be count, mean or variance; got {args.query!r}")
    if args.method not in ("smooth", "ignore", "global"):
        raise OptionError(f"--method must be smooth, ignore or global; got {args.method!r}")
    if args.target not in df.columns:
        raise InputError(f"target column {args.target!r} is not in the table; columns are {list(df.columns)}")
    n_obs = int(df[args.target].notna().sum())
    if args.k > n_obs - 1:
        raise OptionError(f"--k {args.k} is larger than the number of donors allows: {args.target!r} is observed "
                          f"in {n_obs} rows and k-NN needs at least k + 1; use --k {max(1, n_obs - 1)} or less")
    return match, ordinal, levels


def _subpopulation(args, df: pd.DataFrame):
    """The rows of ``--where`` (None: all), a filter on the columns other than the target."""
    if not args.where:
        return None
    if args.target in args.where:
        raise InputError(f"--where {args.where!r} uses the target {args.target!r}; the subpopulation filter may "
                         "only use the other columns. Put conditions on the target in --target-where")
    return row_mask(df.drop(columns=[args.target]), args.where, "--where")


def _target_filter(args, imputed_values):
    """``--target-where`` as a function of the (imputed) target values (None: no filter); a bad
    expression fails now, on the imputed values."""
    if not args.target_where:
        return None
    expr = args.target_where

    def target_where(values, _expr=expr):
        return row_mask(pd.DataFrame({args.target: values}), _expr, "--target-where")

    target_where(imputed_values)  # fail early on a bad expression
    return target_where


def _print_impute_release(args, rel, imp, booked, unit) -> None:
    """The released value, its statement (or why it is NOT DP) and the ledger, as lines or JSON."""
    dp = getattr(rel, "dp", True) and not imp.domain_inferred
    reasons = []
    if not getattr(rel, "dp", True):
        reasons.append("the 'global' comparator uses a data-dependent sensitivity")
    if imp.domain_inferred:
        reasons.append("matching levels were inferred from the data; declare them with --levels")
    stmt = unit.statement(args.epsilon, args.neighbours, rel.statement) if dp else \
        "NOT differentially private: " + "; ".join(reasons)
    res = {"query": args.query, "method": args.method, "value": rel.value, "epsilon": args.epsilon,
           "privacy_unit": unit.unit.to_dict() or None,
           "dp": dp, "not_dp_because": reasons, "neighbours": _notion_label(rel.neighbours),
           "statement": stmt, "grid": rel.grid, "ledger": rel.ledger.to_dict()}
    # The number of imputed rows, L_1(D), the subpopulation size and the exact value are
    # counts read from the data: none of them is published (only ``value`` and public inputs).
    lines = [f"{args.query} of {args.target} ({args.method}): {rel.value:.6g}",
             f"ε spent: {unit.unit_epsilon(rel.ledger.epsilon):g}",
             ("DP: yes — " + stmt if dp else "DP: NO — " + "; ".join(reasons))]
    if getattr(rel, "gamma", None) is not None and not rel.finite_variance:
        lines.append(f"note: γ = {rel.gamma:.3g} ≤ 3, the noise has infinite variance (use ε > 4 ln 2 ≈ 2.77)")
    if booked:
        lines.append(booked)
    _print(res, args.json, lines)


def _impute_release(args) -> int:
    from dpcore.survey import imputation as I
    from dpcore.survey.knn import knn_impute

    full = read_table(args.input)
    rng = _rng(args.seed)
    df, unit = _unit(args, full, rng, smooth=args.method == "smooth")
    match, ordinal, levels = _impute_options(args, df)
    where = _subpopulation(args, df)
    imp = knn_impute(df, args.target, match, k=args.k, method=args.impute, ordinal=ordinal, levels=levels)
    target_where = _target_filter(args, imp.values)
    warnings.simplefilter("ignore", RuntimeWarning)  # infinite variance is reported as a line below
    bounds = _pair(args.bounds, "--bounds") if args.bounds else None
    if args.query != "count" and bounds is None:
        raise OptionError(f"a {args.query} needs public bounds of the target: --bounds a,b")
    nb = args.neighbours
    from dpcore.studio.survey_book import IMPUTATION

    eps = unit.record_epsilon(args.epsilon)

    def run():
        try:
            return _impute_query(args, I, imp, rng, bounds, where, target_where, nb, eps)
        except OptionError as e:
            if unit.k == 1:
                raise
            raise OptionError(f"with --records-per-unit {unit.k} the release runs at ε/{unit.k} = {eps:.6g} for one "
                              f"record: {e}") from None

    rel, booked = _through_book(args, full, run,
                                epsilon=args.epsilon, method=IMPUTATION, dp=not imp.domain_inferred, unit=unit)
    _print_impute_release(args, rel, imp, booked, unit)
    return 0


def _impute_query(args, imputation, imp, rng, bounds, where, target_where, nb, eps):
    """The DP count, mean or variance of the imputed target (the release itself), at ε = ``eps`` (the record's:
    ε/K for a privacy unit)."""
    if args.query == "count":
        fn = {"smooth": imputation.release_count, "ignore": imputation.release_count_ignoring_missing,
              "global": imputation.release_count_global}[args.method]
        rel = fn(imp, eps, rng, where=where, target_where=target_where, neighbours=nb)
    elif args.query == "mean":
        if args.method == "smooth":
            rel = imputation.release_mean(imp, eps, rng, bounds=bounds, where=where, target_where=target_where,
                                 size=args.size, neighbours=nb)
        else:
            if target_where is not None:
                raise OptionError("--target-where with a mean is only supported by --method smooth")
            fn = imputation.release_mean_ignoring_missing if args.method == "ignore" else imputation.release_mean_global
            rel = fn(imp, eps, rng, bounds=bounds, where=where, size=args.size, neighbours=nb)
    else:
        if args.method != "smooth":
            raise OptionError("a variance is only released with --method smooth (Cor 6.4.9)")
        rel = imputation.release_variance(imp, eps, rng, bounds=bounds, where=where, target_where=target_where,
                                 size=args.size, neighbours=nb)
    return rel


# ------------------------------------------------------------------ poststrat-release


def _read_totals(path, columns) -> dict:
    from dpcore.survey.totals import known_totals

    return known_totals(read_table(path), columns)


def cmd_poststrat_release(args) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # reported as a line below
        return _poststrat_release(args)


def _poststrat_release(args) -> int:
    from dpcore.survey import poststrat as P
    from dpcore.survey.bins import binnings_for

    full = read_table(args.input)
    rng = _rng(args.seed)
    df, unit = _unit(args, full, rng, smooth=False)  # the count's γ-Cauchy has no floor on ε
    cols = _cols(args.columns, "--columns")
    if not cols:
        raise OptionError("--columns needs at least one column name")
    mask = row_mask(df, args.count_where, "--count-where")
    totals = _read_totals(args.totals, cols)
    cands = _json_file(args.candidates, "candidates") if args.candidates else {}
    if not isinstance(cands, dict):
        raise InputError("the candidates file must hold a JSON object {column: {name: {level: bin}}}")
    data, binnings = binnings_for(df, cols, totals, cands)
    wr = _pair(args.base_weight_range, "--base-weight-range") if args.base_weight_range else None

    def share(e):  # each mechanism at ε/K for a privacy unit (group privacy)
        return None if e is None else unit.record_epsilon(e)
    from dpcore.studio.survey_book import POSTSTRAT

    # the book reserves what the ledger will total: the ε's given (the selection and the table
    # only where they run; a release that spends more is withheld, dpcore.studio.survey_book)
    eps = sum(e for e in (args.epsilon_select, args.epsilon_table, args.epsilon_count) if e)
    rel, booked = _through_book(
        args, full, lambda: P.poststratify_release(data, binnings, totals, mask,
                                                   epsilon_select=share(args.epsilon_select),
                                                   epsilon_table=share(args.epsilon_table),
                                                   epsilon_count=share(args.epsilon_count), gamma=args.gamma,
                                                   weights=args.weights, weight_range=wr, rng=rng,
                                                   neighbours=args.neighbours),
        epsilon=eps, method=POSTSTRAT, unit=unit)
    stmt = unit.statement(unit.unit_epsilon(rel.epsilon), args.neighbours, rel.statement)
    res = {"value": rel.value, "epsilon": unit.unit_epsilon(rel.epsilon), "dp": True,
           "privacy_unit": unit.unit.to_dict() or None, "neighbours": _notion_label(rel.neighbours),
           "statement": stmt, "grid": rel.grid, "selected": rel.selected, "bins": rel.bins,
           "ipf": rel.ipf, "ledger": rel.ledger.to_dict(),
           "population_estimates": np.asarray(rel.population_estimates).tolist()}
    lines = [f"weighted count: {rel.value:.6g}",
             "bins: " + "; ".join(f"{c} = {n}" for c, n in rel.selected.items()),
             f"ε spent: {unit.unit_epsilon(rel.ledger.epsilon):g} (selection + table + count)",
             "DP: yes — " + stmt]
    if rel.ipf is not None:
        lines.append(f"IPF: {'converged' if rel.ipf['converged'] else 'NOT converged'} after "
                     f"{rel.ipf['iterations']} sweeps")
    if not rel.finite_variance:
        lines.append(f"note: γ = {rel.gamma:g} ≤ 3, the noise has infinite variance (γ = 4 gives unit variance)")
    if booked:
        lines.append(booked)
    _print(res, args.json, lines)
    return 0
