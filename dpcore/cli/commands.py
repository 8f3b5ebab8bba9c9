"""Command line: ``python -m dpcore synth|preview|domain|evaluate|sweep|report|advise ...``.

Errors exit with status 2 and one line on stderr; never a traceback (``--debug`` shows one).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

from dpcore.api import METHODS, synthesize
from dpcore.data.domain import Domain
from dpcore.data.inference import infer_domain
from dpcore.data.io import read_table
from dpcore.errors import DPCoreError, InputError, OptionError, whole_number
from dpcore.previews import MarginPreview, preview
from dpcore.release import check_out_dir, curator_only_lines
from dpcore.synthesizers import REGISTRY


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one clear line, status 2
        raise _UsageError(f"{self.prog}: {message} (see --help)")


class _UsageError(Exception):
    pass


def _int_text(text: str) -> int:
    """argparse type for whole numbers written plainly: "1_000", " 7" and "0x10" are refused
    (Python's int() would take the first two), so an option is never read other than as typed."""
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")
    return int(text)


def _float_text(text: str) -> float:
    """argparse type for numbers written plainly (no "1_000"); nan/inf pass through to the
    library, whose check names the option and the valid range."""
    if "_" in text or text != text.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not a number")
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def _share_or_auto(text: str):
    """argparse type for ``--one-way-share``: ``auto`` or a number (range checked by the library)."""
    if text.strip() == "auto":
        return "auto"
    try:
        return _float_text(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"{text!r} is neither auto nor a number") from None


#: how each kind of method option is read from the command line (the library checks the value)
_OPTION_TYPES = {"int": _int_text, "float": _float_text, "float_or_auto": _share_or_auto}


def _method_options() -> dict:
    """Every method option of the registry's schemas, by name: (the option, the methods that take it)."""
    out: dict = {}
    for name, method in REGISTRY.items():
        for o in method.options:
            if o.cli:
                out.setdefault(o.name, (o, []))[1].append(name)
    return out


def _add_method_options(p: argparse.ArgumentParser) -> None:
    """One flag per method option, built from the registry's schemas (dpcore.synthesizers.schema):
    help, choices and defaults are the ones the methods declare."""
    for o, methods in _method_options().values():
        # methods may declare an option of one name differently (synthesis: AIM/MST's "auto"): each says its own
        kinds: dict = {}
        for m in methods:
            kinds.setdefault(next(x for x in REGISTRY[m].options if x.name == o.name).describe(), []).append(m)
        help_text = "; ".join(f"{'all methods' if len(ms) == len(REGISTRY) else '/'.join(ms)}: {text}"
                              for text, ms in kinds.items())
        p.add_argument(o.flag, dest=o.name, type=_OPTION_TYPES.get(o.kind, str), help=help_text)


def _given_method_options(args) -> dict:
    return _options(args, list(_method_options()))


def _add_release_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--method", help=f"one of {', '.join(METHODS)}; default: the adviser's pick (as in the app)")
    p.add_argument("--epsilon", type=_float_text, default=1.0,
                   help="total privacy budget ε (> 0); smaller is more private")
    p.add_argument("--delta", type=_float_text,
                   help="(ε, δ)-DP through zCDP with this δ (0 < δ < 1, e.g. 1e-9, well below 1/n): more accurate "
                        "when a method makes many measurements; leave it out for pure ε-DP (the default, strongest)")
    p.add_argument("--sets", type=_int_text, default=1, help="number m of synthetic sets (each gets ε/m)")
    p.add_argument("--domain", help="domain.json declaring the public levels and bin edges")
    p.add_argument("--seed", type=_int_text, help="seed for reproducibility (kept out of the published manifest)")
    p.add_argument("--neighbours", default="add_remove",
                   help="add_remove (default: n is private, a noisy count is released) "
                        "| replace (n public, count sensitivity 2)")
    p.add_argument("--count-share", dest="count_share", type=_float_text,
                   help="add_remove: share of ε spent on the noisy record count (default 0.05)")
    p.add_argument("--max-records", dest="max_records", type=_int_text,
                   help="add_remove: public upper bound on the table's size used by score sensitivities (default 10^9)")
    p.add_argument("--privacy-unit", dest="privacy_unit",
                   help="protect everything about one value of this identifier column (a person, a household), not "
                        "one record: each keeps at most --records-per-unit records (chosen at random), the column is "
                        "never released, and every sensitivity is K times a record's")
    p.add_argument("--records-per-unit", dest="records_per_unit", type=_int_text,
                   help="with --privacy-unit: K, the most records one unit may contribute (public, e.g. the panel's "
                        "length); records beyond it are dropped at random")
    p.add_argument("--schema",
                   help="schema.json: the columns' declared types (text, boolean, number, whole with role code/count/"
                        "amount; nullable), written by `python -m dpcore schema` and reviewed; values that do not fit "
                        "their type become missing. --dp-domain needs it declared (\"source\": \"declared\") to be DP")
    p.add_argument("--rules",
                   help="rules.json: declared structural facts enforced on the synthetic records, a list of "
                        "{\"if\": \"age < 16\", \"then\": {\"married\": \"no\"}} (post-processing; stated in the "
                        "manifest)")
    p.add_argument("--panel-time", dest="panel_time",
                   help="with --privacy-unit: release the panel wide, one synthetic record per unit with a column "
                        "group per period of this declared time column (its levels); the sets come back as a panel "
                        "with fresh ids (no --records-per-unit)")


def _options(args, names) -> dict:
    return {k: getattr(args, k) for k in names if getattr(args, k, None) is not None}


def _privacy_options(args) -> dict:
    out = {"neighbours": args.neighbours,
           **_options(args, ["count_share", "max_records", "delta", "privacy_unit", "records_per_unit",
                             "panel_time", "schema"])}
    return out


def _synth_options(args) -> dict:
    """synthesize's privacy options, the declared rules (--rules) and the schema (--dp-domain without
    --schema: the proposal, NOT DP, said before)."""
    privacy = _privacy_options(args)
    if getattr(args, "rules", None):
        privacy["rules"] = _json_list(args.rules, "--rules")
    if getattr(args, "schema_obj", None) is not None:
        privacy["schema"] = args.schema_obj
    return privacy


def _json_list(path, flag: str) -> list:
    """A JSON file holding a list, or one line naming the file and what is wrong."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"{flag} '{path}': cannot read it ({exc.strerror})") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{flag} '{path}' is not valid JSON (line {exc.lineno}: {exc.msg})") from None
    if not isinstance(data, list):
        raise InputError(f"{flag} '{path}' must hold a list of rules")
    return data


def _warn_delta(args, n: int | None = None) -> None:
    """A δ that is allowed but weak gets one warning line on stderr (curator-side: n is the
    curator's own count, printed nowhere else)."""
    if getattr(args, "delta", None) is not None:
        from dpcore.privacy.zcdp import delta_warning

        msg = delta_warning(args.delta, n)
        if msg:
            print(f"warning: {msg}", file=sys.stderr)


def _warn_epsilon(args) -> None:
    """Every ε the command was given (``--epsilon``, ``--epsilon-count`` …, the sweep's ``--epsilons``)
    that is accepted but means little gets one warning line on stderr before anything runs."""
    from dpcore.privacy.ledger import epsilon_warning

    values = [v for k, v in vars(args).items() if k.startswith("epsilon") and k != "epsilons" and v is not None]
    grid = getattr(args, "epsilons", None)
    if isinstance(grid, str):
        values += [v.strip() for v in grid.split(",") if v.strip()]
    for v in values:
        try:
            msg = epsilon_warning(float(v))
        except (TypeError, ValueError):
            continue  # not a number: the command's own check says so
        if msg:
            print(f"warning: {msg}", file=sys.stderr)


def _read_input(args):
    """The input table; a delimiter other than the comma is said out loud (not with --json)."""
    df = read_table(args.input)
    sep = df.attrs.get("delimiter")
    if sep and sep != "comma" and not getattr(args, "json", False):
        print(f"read {args.input} as {sep}-separated")
    return df


def _load(args):
    df = _read_input(args)
    domain = Domain.load(args.domain) if getattr(args, "domain", None) else None
    return df, domain


def _check_private_manifest_path(path) -> None:
    """``--private-manifest`` names a file in a folder that can be written, before any ε is spent."""
    check_out_dir(Path(path).parent, "--private-manifest")
    if Path(path).is_dir():
        raise InputError(f"--private-manifest '{path}' is a folder; give a file path")


def cmd_synth(args) -> int:
    check_out_dir(args.out)  # before any ε is spent
    if args.private_manifest:
        _check_private_manifest_path(args.private_manifest)
    opts = _given_method_options(args)
    opts.update(_dp_bins_options(args))
    opts.update(_dp_domain_options(args))
    if args.engine is None:
        from dpcore.output.file_release import default_engine

        args.engine = default_engine(args.input)  # DuckDB above 256 MB
    if args.format is None:
        args.format = "parquet" if args.engine == "spark" else "csv"
    if args.partitions is not None and args.engine != "spark":
        raise OptionError("--partitions is for --engine spark (the executors' part files)")
    if args.engine != "pandas" or args.format != "csv":
        _check_file_path(args, opts)
        _default_file_method(args)
        return _synth_file(args, opts)  # long tables: counted on an engine, written in chunks
    df, domain = _load(args)
    table_name, fingerprint = Path(args.input).name, None
    _warn_delta(args, len(df))
    _default_method(args, df, domain)
    if opts.get("domain") == "dp":
        domain = opts.pop("domain")
        _check_domain_forecast(args, df, opts)

    privacy = _synth_options(args)

    def run():
        rel = synthesize(df, method=args.method, epsilon=args.epsilon, sets=args.sets, seed=args.seed, domain=domain,
                         **privacy, **opts)
        return rel.for_table(table_name, fingerprint)  # the fingerprint reaches the private manifest only

    if args.no_book:  # explicitly unaccounted: said below, after the release
        _check_no_book(args)
        if args.private_manifest:
            from dpcore.studio.workspace import table_fingerprint

            fingerprint = table_fingerprint(df)
        rel = run()
    else:  # the budget book: refused over the table's cap before anything is spent
        from dpcore.api import planned_delta_approx
        from dpcore.cli.book import book_table, record_release

        book, ws, fingerprint, charged = book_table(args, df, table_name)
        if charged:
            print(charged)
        approx = planned_delta_approx(df, domain, args.delta, opts.get("domain_share"), opts.get("domain_bins"),
                                      schema=privacy.get("schema"), privacy_unit=privacy.get("privacy_unit"))
        entry, rel = record_release(args, book, ws, fingerprint, table_name, run, delta_approx=approx)
    rel.write(args.out)
    _write_private_manifest(args, rel)
    _print_written(args, rel)
    print(_spent_line(rel))
    print(_dp_line(rel))
    for line in curator_only_lines(rel.curator_only):
        print(line)
    for line in rel.diagnostics.get("dp_domain", {}).get("warnings", []):
        print(f"warning: {line}", file=sys.stderr)
    if args.no_book:
        print(_unaccounted_line(rel))
    else:
        from dpcore.cli.book import recorded_line

        print(recorded_line(book, entry, fingerprint, table_name))
    return 0


def _default_method(args, df, domain) -> None:
    """``--method`` left out: the adviser's pick for the design (the app's default), said in one line; STEPS when
    there is no declared domain to advise on (the release is then NOT DP anyway)."""
    if args.method is not None:
        return
    if domain is None or getattr(args, "dp_domain", False) or getattr(args, "privacy_unit", None):
        args.method = "steps"
        args.method_note = "method: steps (no declared domain to advise on; give --method to choose)"
        return
    from dpcore.cli.advise import pick_method

    given = _given_method_options(args)
    takers = _method_options()
    among = tuple(m for m in REGISTRY if all(m in takers[o][1] for o in given)) if given else None
    args.method, args.method_note = pick_method(df, domain, args.epsilon, args.sets, args.delta, args.neighbours,
                                                among)


def _print_written(args, rel) -> None:
    """The line saying what was written (records, or ids of a wide panel), and which method (when chosen)."""
    rc = rel.record_count
    panel = rel.diagnostics.get("panel")
    what = (f"{rc['value']} '{panel['privacy_unit']}' (a panel of {len(rel.sets[0]):,} records in the first)"
            if panel else f"{rc['value']} records")
    print(f"wrote {len(rel.sets)} synthetic set(s) of {what} {_count_note(rc)} and manifest.json to {args.out}")
    if getattr(args, "method_note", None):
        print(args.method_note)


def _default_file_method(args) -> None:
    """``--method`` left out on the file path: the adviser's pick from public facts only (the declared domain,
    ε, δ, m; the file is not read into memory for previews), said in one line."""
    if args.method is not None:
        return
    from dpcore.studio.adviser import recommend

    dom = Domain.load(args.domain) if getattr(args, "domain", None) else None
    args.method = (recommend(dom, args.epsilon, args.sets, args.delta) if dom is not None else None) or "steps"
    args.method_note = f"method: {args.method} (the adviser's pick from public facts; give --method to choose)"


def _check_file_path(args, opts) -> None:
    """What the file path (an engine, or a format written in chunks) cannot do, refused in one line."""
    if opts.get("dp_bins") or opts.get("domain") == "dp":
        raise OptionError(_dp_domain_on_file_refusal(args, opts))
    if getattr(args, "privacy_unit", None):
        raise OptionError(f"--privacy-unit works on a table loaded in memory (each unit's records are bounded "
                          f"before counting), not through --engine {args.engine} / --format {args.format}; add "
                          "--engine pandas --format csv")


def _dp_domain_on_file_refusal(args, opts) -> str:
    """Why --dp-domain / --dp-bins stop on the file path, and what to do, in one line."""
    flag = "--dp-domain" if opts.get("domain") == "dp" else "--dp-bins"
    what = ("finds each column's DP bounds, bins and levels" if flag == "--dp-domain"
            else "finds its DP bin edges")
    if args.engine != "pandas":
        why = (f"--engine {args.engine} counts the file in SQL and hands the release only the count table over a "
               f"domain fixed before counting, while {flag} {what} from the columns' own values first")
    else:
        why = f"--format {args.format} writes through the file path, which does not run {flag}"
    return (f"{flag} works only on a table loaded in memory: {why}; add --engine pandas --format csv (the table must "
            "fit in memory), or declare public bounds and bins in a --domain file (e.g. from a codebook) and drop "
            f"{flag}")


def _check_no_book(args) -> None:
    if args.workspace:
        raise OptionError("--no-book with --workspace: a workspace's releases are always recorded in the budget book; "
                          "drop one of them")


def _unaccounted_line(rel) -> str:
    return (f"UNACCOUNTED (--no-book): this release is in no budget book; its ε = {rel.ledger.epsilon:g} counts "
            "against no table's total or cap. Record every release of real data in the book")


def _unit(plan: dict) -> str:
    return "ρ" if plan.get("budget_unit") == "rho" else "ε"


def _delta_note(plan: dict) -> str:
    """A zCDP preview says its δ and ρ: every budget below is a share of that ρ."""
    if plan.get("budget_unit") != "rho":
        return ""
    return f", δ = {plan['delta']:g} (zCDP: ρ = {plan['rho']:.4g}; the budgets below are shares of ρ)"


def _spent_line(rel) -> str:
    if rel.delta is None:
        return f"ε spent: {rel.ledger.epsilon:g} of {rel.epsilon:g}"
    return (f"spent: ρ = {rel.rho:.6g} (zCDP), which is (ε, δ) = ({rel.ledger.epsilon:.6g}, {rel.delta:g}); "
            f"asked for ε = {rel.epsilon:g}")


def _dp_line(rel) -> str:
    """The release's DP status in one line."""
    if not rel.dp:
        return "DP: NO — " + rel.dp_reason
    return "DP: yes — " + rel.dp_reason


def _dp_bins_options(args) -> dict:
    """--dp-bins COL=lo:hi[:bins] (repeatable), --bins-share and --bins-method as synthesize's dp_bins /
    bins_share / bins_method."""
    specs = {}
    for spec in getattr(args, "dp_bins", None) or []:
        col, _, rhs = spec.partition("=")
        parts = rhs.split(":")
        if not col or len(parts) not in (2, 3):
            raise OptionError(f"--dp-bins {spec!r}: write COL=lower:upper or COL=lower:upper:bins, e.g. age=0:100:5")
        try:
            nums = [float(x) for x in parts]
        except ValueError:
            raise OptionError(f"--dp-bins {spec!r}: the bounds and bins must be numbers; write COL=lower:upper[:bins], "
                              "e.g. age=0:100:5") from None
        specs[col] = {"lower": nums[0], "upper": nums[1]}
        if len(nums) == 3:
            specs[col]["bins"] = whole_number(f"--dp-bins {spec!r}: bins", nums[2], 2)
    out: dict = {"dp_bins": specs} if specs else {}
    if getattr(args, "bins_share", None) is not None:
        out["bins_share"] = args.bins_share
    if getattr(args, "bins_method", None) is not None:
        if not specs:
            raise OptionError("--bins-method says how --dp-bins finds its edges; give --dp-bins too, or drop it "
                              "(--dp-domain's is --domain-bins)")
        out["bins_method"] = args.bins_method
    return out


def _dp_domain_options(args) -> dict:
    """--dp-domain [--domain-share S] [--domain-bins M] as synthesize's domain="dp" / domain_share / domain_bins
    (refused beside --domain)."""
    if not getattr(args, "dp_domain", False):
        if getattr(args, "domain_share", None) is not None:
            raise OptionError("--domain-share is the share of ε for --dp-domain; give --dp-domain too, or drop it")
        if getattr(args, "domain_bins", None) is not None:
            raise OptionError("--domain-bins is an option of --dp-domain; give --dp-domain too, or drop it")
        return {}
    if getattr(args, "domain", None):
        raise OptionError("--dp-domain finds the domain privately; drop --domain (a declared domain), or drop "
                          "--dp-domain")
    out: dict = {"domain": "dp"}
    if args.domain_share is not None:
        out["domain_share"] = args.domain_share
    if getattr(args, "domain_bins", None) is not None:
        out["domain_bins"] = args.domain_bins
    return out


def _count_note(rc: dict) -> str:
    return ("(a noisy count: the true count stays private)" if rc["noisy"]
            else "(n, public under replace-one neighbours)")


def _write_private_manifest(args, rel) -> None:
    """--private-manifest: the curator-only manifest (exact figures, NOT for release)."""
    if args.private_manifest:
        try:
            Path(args.private_manifest).write_text(rel.manifest_json(private=True), encoding="utf-8")
        except OSError as exc:
            raise InputError(f"--private-manifest '{args.private_manifest}': "
                             f"cannot write it ({exc.strerror})") from None


def _synth_file(args, opts) -> int:
    from dpcore.output import synthesize_file

    domain = Domain.load(args.domain) if args.domain else None
    record = None
    if args.no_book:
        _check_no_book(args)
    else:  # the budget book, step by step: a failure after counting stays counted as spent
        from dpcore.cli.book import file_entry
        from dpcore.output.file_release import engine_options

        book, record, charged = file_entry(args, engine_options(args.engine, args.memory_limit, args.spark_master))
        if charged:
            print(charged)
    rel = synthesize_file(args.input, args.out, args.method, args.epsilon, sets=args.sets, seed=args.seed,
                          domain=domain, engine=args.engine, memory_limit=args.memory_limit,
                          spark_master=args.spark_master, format=args.format, record=record,
                          partitions=args.partitions, **_privacy_options(args), **opts)
    _write_private_manifest(args, rel)
    rc = rel.record_count
    t = rel.timings
    print(f"wrote {len(rel.sets)} synthetic set(s) of {rc['value']} records as {args.format} {_count_note(rc)} "
          f"and manifest.json to {args.out}")
    if getattr(args, "method_note", None):
        print(args.method_note)
    print(f"engine {args.engine}: counted in {t.get('count', 0):.1f} s, released in {t.get('release', 0):.1f} s, "
          f"written in {t.get('write', 0):.1f} s")
    print(_spent_line(rel))
    print(_dp_line(rel))
    for line in curator_only_lines(rel.curator_only):
        print(line)
    if record is None:
        print(_unaccounted_line(rel))
    else:
        from dpcore.cli.book import recorded_line

        print(recorded_line(book, record.entry_id, record.table_fp, Path(args.input).name))
    return 0


def _dp_domain_schema(args, df):
    """--dp-domain's schema: the declared file, or (without --schema) the types the reader read from the values:
    a proposal, so the release is labelled NOT DP, and said so now."""
    from dpcore.data.schema import Schema

    if getattr(args, "schema", None):
        return Schema.load(args.schema)
    return Schema.propose(df)


PROPOSED_NOTE = ("note: --dp-domain without --schema: the column types are read from the values, so the release is "
                 "NOT DP; write them with `python -m dpcore schema`, review, declare and pass --schema")


def _check_domain_forecast(args, df, opts) -> None:
    """Refuse, before anything is spent, a --dp-domain release whose forecast says some column will likely not be
    found at this budget, unless the curator accepts it (--accept-not-found). The forecast uses the table's own
    record count: curator-only, nothing released."""
    from dpcore.measure.dp_domain import NOT_FOUND
    from dpcore.previews import domain_forecast

    if getattr(args, "schema", None) is None:
        args.schema_obj = _dp_domain_schema(args, df)
    fc = domain_forecast(df, args.epsilon, delta=args.delta, domain_share=opts.get("domain_share"),
                         schema=getattr(args, "schema_obj", None) or args.schema, neighbours=args.neighbours,
                         max_records=args.max_records, privacy_unit=getattr(args, "privacy_unit", None),
                         records_per_unit=getattr(args, "records_per_unit", None))
    lost = [f for f in fc if f.status == NOT_FOUND]
    if lost and not getattr(args, "accept_not_found", False):
        names = ", ".join(repr(f.column) for f in lost[:6]) + (", …" if len(lost) > 6 else "")
        raise OptionError(f"--dp-domain: column(s) {names} will likely not be found at this budget ({lost[0].what}); "
                          "drop them, declare them (their levels or bounds), raise --domain-share or --epsilon, or "
                          "give --accept-not-found to release them missing (numbers) or \"other\" (text)")
    if getattr(args, "schema_obj", None) is not None:
        print(PROPOSED_NOTE, file=sys.stderr)


def _preview_dp_domain(args, df) -> int:
    """``preview --dp-domain``: each column's forecast (found, coarsely, not found) and what would help; from the
    declared types and the table's own record count (curator-only). Spends nothing."""
    from dpcore.previews import domain_forecast

    schema = args.schema if getattr(args, "schema", None) else _dp_domain_schema(args, df)
    fc = domain_forecast(df, args.epsilon, delta=args.delta, domain_share=args.domain_share, schema=schema,
                         neighbours=args.neighbours, max_records=args.max_records,
                         privacy_unit=getattr(args, "privacy_unit", None),
                         records_per_unit=getattr(args, "records_per_unit", None))
    if args.json:
        print(json.dumps({"forecast": [f.to_dict() for f in fc], "n": len(df),
                          "note": "from the declared types and the table's own record count: curator-only"},
                         indent=2, ensure_ascii=False))
        return 0
    print(f"--dp-domain forecast (no budget spent; the table's own {len(df):,} records: curator-only): "
          f"ε = {args.epsilon:g}" + (f", δ = {args.delta:g}" if args.delta else ""))
    for f in fc:
        print(f"  {f.column}: {f.status} ({f.share:.0%} of the domain's share): {f.what}")
    if not getattr(args, "schema", None):
        print(PROPOSED_NOTE, file=sys.stderr)
    return 0


def _print_protects(plan: dict) -> None:
    """What the release protects and which records a synthetic record keeps together."""
    print(f"protects: {plan['protects'].get('protects', 'one record')}; released as {plan['layout']}")


def cmd_preview(args) -> int:
    df, domain = _load(args)
    if getattr(args, "dp_domain", False):
        return _preview_dp_domain(args, df)
    opts = _given_method_options(args)
    _default_method(args, df, domain)
    if getattr(args, "method_note", None) and not args.json:
        print(args.method_note)
    pv = preview(df, method=args.method, epsilon=args.epsilon, sets=args.sets, domain=domain, **_privacy_options(args),
                 **opts)
    if isinstance(pv, MarginPreview):
        if args.json:
            print(json.dumps({"margins": pv.margins.to_dict(orient="records"), "plan": pv.plan}, indent=2,
                             ensure_ascii=False, default=str))
            return 0
        print(f"{args.method} preview (no budget spent): ε = {pv.plan['epsilon']:g}{_delta_note(pv.plan)}, "
              f"m = {pv.plan['sets']}, neighbours = {pv.plan['neighbours']}, "
              f"{_unit(pv.plan)} for the record count = {pv.plan['record_count_budget']:.4g}")
        if "fit" in pv.plan:
            print(f"fit = {pv.plan['fit']}, share of ε on the one-way margins = {pv.plan['one_way_share']:g}"
                  + (" (auto: decided here from the table's own record count, curator-only; the release decides "
                     "from its noisy count)" if pv.plan.get("one_way_share_auto") else ""))
        _print_protects(pv.plan)
        print(pv.margins.to_string(index=False, float_format=lambda x: f"{x:.4g}"))
        _print_empty_share(pv.plan)
        return 0
    if args.json:
        out = {
            "layers": pv.layers.to_dict(orient="records"),
            "plan": pv.plan,
            "tree": pv.tree.describe(),
            "selection": None if pv.selection is None else pv.selection.to_dict(orient="records"),
            "note": pv.not_for_release,
        }
        print(json.dumps(out, indent=2, ensure_ascii=False, default=str))
        return 0
    print(f"STEPS preview (no budget spent): ε = {pv.plan['epsilon']:g}{_delta_note(pv.plan)}, m = {pv.plan['sets']}, "
          f"select = {pv.plan['select']}, allocation = {pv.plan['allocation']}, "
          f"padded fan-out b = {pv.plan['fan_out']}")
    _print_protects(pv.plan)
    print(pv.layers.to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    _print_empty_share(pv.plan)
    if pv.selection is not None:
        top = pv.selection.sort_values("probability", ascending=False).groupby(["layer", "node"], sort=False).head(1)
        print("\nmost likely split per node (" + pv.not_for_release + "):")
        print(top.head(30).to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    return 0


def _spec_numbers(spec: str, parts: list[str]) -> list[float]:
    try:
        return [float(x) for x in parts]
    except ValueError:
        raise OptionError(f"--numeric {spec!r}: edges and bounds must be numbers; "
                          "write COL=e1,e2,... or COL=lo:hi:bins") from None


def _print_empty_share(plan: dict) -> None:
    if "empty_cell_share" in plan:
        print("\nexpected share of synthetic records from cells empty in the data: "
              f"{100 * plan['empty_cell_share']:.1f}%")
    if plan.get("empty_cell_warning"):
        print("WARNING: " + plan["empty_cell_warning"])


def cmd_schema(args) -> int:
    """Write the types a reader gives the file's columns: a proposal (read from the values), NOT public until the
    curator reviews it and sets "source": "declared"."""
    from dpcore.data.schema import Schema
    from dpcore.studio.workspace import check_output_path

    sch = Schema.propose(_read_input(args))
    check_output_path(args.out, "--out")
    try:
        Path(args.out).write_text(sch.to_json(), encoding="utf-8")
    except OSError as exc:
        raise InputError(f"--out '{args.out}': cannot write the schema ({exc.strerror}); choose a writable path") \
            from None
    print(f"wrote {args.out}: {len(sch.columns)} columns. The types were read from the values (a proposal): review "
          "each (text, boolean, number, whole with \"role\" code, count or amount; \"nullable\"), then set "
          "\"source\": \"declared\" and pass it with --schema. A proposal keeps every --dp-domain release NOT DP.")
    return 0


def cmd_domain(args) -> int:
    df = _read_input(args) if args.engine == "pandas" else None  # duckdb/spark read the file where it lies
    numeric = {}
    for spec in args.numeric or []:
        col, _, rhs = spec.partition("=")
        if not rhs:
            raise OptionError(f"--numeric {spec!r}: write COL=e1,e2,... (edges) or COL=lo:hi:bins")
        if ":" in rhs:
            parts = rhs.split(":")
            if len(parts) != 3:
                raise OptionError(f"--numeric {spec!r}: bounds are written lo:hi:bins")
            lo, hi, bins = _spec_numbers(spec, parts)
            numeric[col] = {"bounds": [lo, hi], "bins": whole_number(f"--numeric {spec!r}: bins", bins, 1)}
        else:
            numeric[col] = _spec_numbers(spec, rhs.split(","))
    if df is None:
        from dpcore.output import file_release

        opts = file_release.engine_options(args.engine, args.memory_limit, args.spark_master)
        dom = file_release.infer_file_domain(args.input, args.engine, numeric=numeric, **opts)
    else:
        dom = infer_domain(df, numeric=numeric)
    try:
        Path(args.out).write_text(dom.to_json(), encoding="utf-8")
    except OSError as exc:
        raise InputError(f"--out '{args.out}': cannot write the domain file "
                         f"({exc.strerror}); choose a writable path") from None
    print(f"wrote {args.out}: {len(dom)} attributes, {dom.size:,} cells. It is {dom.source}: review the levels "
          "(levels seen in the data leak rare values), then set \"source\": \"declared\" in the file and pass it with "
          "--domain. An unreviewed file keeps every release NOT DP.")
    for line in not_public_lines(dom):
        print(line)
    return 0


def not_public_lines(dom: Domain) -> list[str]:
    """One line per attribute whose bin edges came from the data (marked "origin": "data_range" in
    the file): declaring the file does not make them public, and a release keeps NOT DP until
    each gets public bounds, DP bin edges, or is dropped. No bounds are suggested: any figure
    computed from the data would be offered as public (docs/privacy-model.md#what-is-public)."""
    return [f"NOT PUBLIC: '{a.name}' has bin edges from the data's own range [{a.edges[0]:g}, {a.edges[-1]:g}] "
            f"(\"origin\": \"{a.origin}\"): every release with it is NOT DP, whatever \"source\" says. Give "
            f"public bounds from a codebook, not from the data (--numeric {a.name}=lower:upper:bins), DP bin "
            f"edges at release (synth --dp-bins {a.name}=lower:upper:bins), or drop the column."
            for a in dom.not_public]


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m dpcore", description="Differentially private synthetic data (STEPS and comparators).")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    s = sub.add_parser("synth", help="release m synthetic sets and a manifest")
    s.add_argument("input", help="CSV or Parquet file")
    s.add_argument("--out", required=True, help="output directory")
    _add_release_options(s)
    _add_method_options(s)
    s.add_argument("--private-manifest",
                   help="also write a PRIVATE manifest with the seed to this path (never publish it)")
    s.add_argument("--workspace", help="workspace folder: also keep the release's sets and manifest in it (the "
                                       "release is recorded in the installation's budget book either way)")
    s.add_argument("--no-book", dest="no_book", action="store_true",
                   help="do NOT record the release in the budget book ($DPSTUDIO_WORKSPACE/book.sqlite or "
                        "$DPSTUDIO_DATABASE_URL): it is then unaccounted, its ε counts against no total or cap")
    s.add_argument("--new-table", dest="new_table", action="store_true",
                   help="charge the input as a new table even when it looks like a table the budget book knows (same "
                        "record count, at least half of its columns holding the same values); by default it is "
                        "charged to that table")
    s.add_argument("--dp-bins", dest="dp_bins", action="append",
                   help="COL=lower:upper[:bins]: DP bin edges inside public bounds, charged to this release "
                        "(repeatable; --bins-method says how; docs/methods/dp-quantiles.md, docs/methods/privtree.md)")
    s.add_argument("--bins-method", dest="bins_method", choices=("quantiles", "privtree"),
                   help="--dp-bins: privtree (default; PrivTree's leaves, bins a cap on them, default 16) | "
                        "quantiles (bins − 1 DP quantiles, bins default 10)")
    s.add_argument("--bins-share", dest="bins_share", type=_float_text,
                   help="share of ε spent on --dp-bins edges (default 0.1)")
    s.add_argument("--dp-domain", dest="dp_domain", action="store_true",
                   help="declare nothing: find every column's bounds, bins and levels with DP inside the release "
                        "(text columns need --delta); the curator-only counts of clamped records go to "
                        "--private-manifest")
    s.add_argument("--domain-share", dest="domain_share", type=_float_text,
                   help="share of ε spent on --dp-domain (default 0.25, strictly between 0 and 1)")
    s.add_argument("--accept-not-found", dest="accept_not_found", action="store_true",
                   help="--dp-domain: release even when the forecast says a column will likely not be found at this "
                        "budget (its values then come out missing, or \"other\")")
    s.add_argument("--domain-bins", dest="domain_bins", choices=("quantiles", "privtree"),
                   help="--dp-domain: how numeric columns are binned over their DP bounds: privtree (default; "
                        "docs/methods/privtree.md) | quantiles")
    s.add_argument("--engine", choices=("pandas", "duckdb", "spark"),
                   help="where records are counted: pandas (in memory; default up to 256 MB) | duckdb (larger than "
                        "memory; default above 256 MB) | spark")
    s.add_argument("--spark-master", dest="spark_master", help="spark: master URL (default local[*])")
    s.add_argument("--memory-limit", dest="memory_limit", help="duckdb: memory cap such as 512MB or 4GB (default 1GB)")
    s.add_argument("--format", choices=("csv", "parquet"),
                   help="synthetic sets as csv (default) or parquet (the default, "
                        "and the only one, with --engine spark)")
    s.add_argument("--partitions", type=_int_text,
                   help="spark: partitions (part files) per set; default one per million records (public rule)")
    s.set_defaults(func=cmd_synth)

    v = sub.add_parser("preview",
                       help="show what a release would measure (tree or margins, noise scales); spends no budget")
    v.add_argument("input", help="CSV or Parquet file")
    _add_release_options(v)
    _add_method_options(v)
    v.add_argument("--dp-domain", dest="dp_domain", action="store_true",
                   help="forecast, column by column, what a --dp-domain release would find at this budget")
    v.add_argument("--domain-share", dest="domain_share", type=_float_text,
                   help="--dp-domain: the share of ε spent on finding the domain (default 0.25)")
    v.add_argument("--json", action="store_true", help="print JSON")
    v.set_defaults(func=cmd_preview)

    sc = sub.add_parser("schema", help="write the column types read from a file, for the curator to review and "
                                       "declare (--schema)")
    sc.add_argument("input", help="CSV, Parquet, SPSS or Stata file")
    sc.add_argument("--out", required=True, help="schema.json to write")
    sc.set_defaults(func=cmd_schema)

    d = sub.add_parser("domain", help="write the domain inferred from the data, for the curator to review")
    d.add_argument("input", help="CSV or Parquet file")
    d.add_argument("--out", required=True, help="domain.json to write")
    d.add_argument("--numeric", action="append", help="COL=e1,e2,... or COL=lo:hi:bins (repeatable)")
    d.add_argument("--engine", default="pandas", choices=("pandas", "duckdb", "spark"),
                   help="where the levels and ranges are read: pandas (default) | duckdb | spark")
    d.add_argument("--spark-master", dest="spark_master", help="spark: master URL (default local[*])")
    d.add_argument("--memory-limit", dest="memory_limit", help="duckdb: memory cap such as 512MB")
    d.set_defaults(func=cmd_domain)

    for mod, names in (("dpcore.cli.metrics", ("add_evaluate_parser", "add_sweep_parser")),
                       ("dpcore.cli.survey", ("add_survey_parsers",)),
                       ("dpcore.cli.budget", ("add_budget_parser",)),
                       ("dpcore.cli.report", ("add_report_parser",)),
                       ("dpcore.cli.advise", ("add_advise_parser",))):
        try:
            module = __import__(mod, fromlist=list(names))
        except ImportError:
            continue
        for n in names:
            if hasattr(module, n):
                getattr(module, n)(sub)
    return p


def run() -> None:
    """The process entry point (``python -m dpcore`` and the ``dpcore`` script): :func:`main`, then an exit
    that native thread pools cannot turn into an abort.

    pyarrow's and DuckDB's worker threads can still be alive when the interpreter tears their
    libraries down; a joinable ``std::thread`` destroyed then calls ``std::terminate`` and the process
    exits 134 after having printed its clean answer (seen under an address-space limit, 1 run in 3).
    So the readers are collected while the libraries are whole, Arrow's pools are shrunk (joining
    their workers), the output is flushed, and the process leaves without running native static
    destructors. Nothing is left unwritten: every file the commands write is closed by then."""
    code = main()
    try:
        import gc

        gc.collect()
        if "pyarrow" in sys.modules:
            pa = sys.modules["pyarrow"]
            pa.set_cpu_count(1)
            pa.set_io_thread_count(1)
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a closed pipe (`| head`): nothing more to say
                pass
        os._exit(code)


#: the options that name a file or folder a command writes
_OUTPUTS = ("out", "private_manifest", "export", "html", "pdf", "cache_dir")


def _check_outputs(args) -> None:
    """Every output path is refused when it is, or is inside, the budget book's store or a workspace's own
    files (:func:`dpcore.studio.workspace.check_output_path`), before anything is read or spent."""
    from dpcore.studio.workspace import check_output_path

    for name in _OUTPUTS:
        value = getattr(args, name, None)
        if isinstance(value, (str, Path)) and str(value):
            check_output_path(value, "--" + name.replace("_", "-"))
    if getattr(args, "func", None) is not None and args.func.__name__ == "cmd_report" and not args.html:
        check_output_path(Path(args.release) / "report.html", "report (RELEASE/report.html)")


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    try:
        args = build_parser().parse_args(argv)
        _warn_epsilon(args)
        _check_outputs(args)
        return int(args.func(args) or 0)
    except _UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except DPCoreError as exc:
        if debug:
            raise
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into `head`: not an error
        sys.stdout = open(os.devnull, "w")
        return 0
    except MemoryError:
        print("error: out of memory; use fewer attributes, coarser bins or a smaller L", file=sys.stderr)
        return 2
    except Exception as exc:  # last resort: one line, no traceback
        if debug:
            raise
        print(f"error: unexpected {type(exc).__name__}: {exc} (rerun with --debug for details)", file=sys.stderr)
        return 2
