"""``python -m dpcore advise TABLE --domain DOMAIN --epsilon E [--delta D] [--sets M] [--json]``: the
method adviser (:mod:`dpcore.studio.adviser`) on the command line.

It ranks every registered method by its predicted error (public facts only: the declared domain's
levels, ε, δ, m and a public n) and recommends the best one whose own preview passes
(:func:`dpcore.preview`: spends nothing, releases nothing). The table is read for those previews
only. Docs: docs/methods/adviser.md.
"""
from __future__ import annotations

import json
import sys

from dpcore.data.domain import DECLARED, Domain
from dpcore.data.io import read_table
from dpcore.errors import OptionError
from dpcore.previews import preview
from dpcore.privacy.definitions import definition_for
from dpcore.privacy.ledger import check_epsilon
from dpcore.privacy.neighbours import check_neighbours
from dpcore.studio.adviser import advise
from dpcore.synthesizers.options import check_sets


def add_advise_parser(sub) -> None:
    a = sub.add_parser("advise", help="rank the methods for a table by predicted error (public facts only) and "
                                      "recommend one that can run the design; spends nothing")
    a.add_argument("input", help="CSV or Parquet file (read for the methods' previews only)")
    a.add_argument("--domain", required=True, help="domain.json declaring the public levels and bin edges")
    a.add_argument("--epsilon", required=True, help="total privacy budget ε (> 0)")
    a.add_argument("--delta", help="(ε, δ)-DP through zCDP with this δ (0 < δ < 1); leave out for pure ε-DP")
    a.add_argument("--sets", default="1", help="number m of synthetic sets (default 1)")
    a.add_argument("--records", help="a public figure for the record count n (one you would publish); without it, "
                                     "and under add_remove neighbours, the prediction is averaged over n")
    a.add_argument("--neighbours", default="add_remove",
                   help="add_remove (default: n is private) | replace (n is public: the table's count is used)")
    a.add_argument("--json", action="store_true", help="print JSON: recommended (a --method name) and ranking")
    a.set_defaults(func=cmd_advise)


def _number(flag: str, text: str, whole: bool = False) -> float:
    try:
        value = int(text) if whole else float(text)
    except (TypeError, ValueError):
        kind = "a whole number" if whole else "a number"
        raise OptionError(f"{flag} must be {kind}; got {text!r}") from None
    return value


def _records(text: str | None) -> float | None:
    if text is None:
        return None
    n = _number("--records", text, whole=True)
    if n < 1:
        raise OptionError(f"--records must be a whole number of at least 1 (a public figure for n); got {text!r}")
    return float(n)


def book_record_count(df) -> tuple[float | None, str]:
    """The record count the budget book says this table's latest DP release published (public), if any; the
    book is only read."""
    from dpcore.counting.fingerprint import frame_fingerprint
    from dpcore.studio.workspace import installation_book

    n = installation_book().public_record_count(frame_fingerprint(df).key)
    return (None, "") if n is None else (n, "the record count your last release of this table published "
                                            "(public; from the budget book)")


def pick_method(df, domain: Domain, epsilon: float, sets: int, delta: float | None, neighbours: str,
                among: tuple | None = None) -> tuple:
    """(method, one line) for ``synth`` without ``--method``: the adviser's pick, as the app's default, with the
    methods' previews as its check and the book's public record count; the app's noise check needs a count,
    and the table's own is the curator's (the line says which was used). ``among``: only the methods that
    take the options given (the best ranked of them)."""
    public_n, source = (float(len(df)), "the table's record count (public under replace-one neighbours)") \
        if neighbours == "replace" else book_record_count(df)

    def check(method: str, options: dict) -> None:
        preview(df, method=method, epsilon=epsilon, sets=sets, domain=domain, neighbours=neighbours, delta=delta,
                **options)

    adv = advise(domain, epsilon, sets, delta=delta, public_n=public_n, public_n_source=source, n=float(len(df)),
                 n_source="the table's own record count (curator-only)", curator_only=True, neighbours=neighbours,
                 check=check)
    pick = adv.recommended
    if among is not None and pick not in among:
        pick = next((a.method for a in adv.methods if a.method in among and a.verdict != "cannot run"), None)
        if pick is None:
            why = next((a.reason for a in adv.methods if a.method in among and a.reason), "")
            raise OptionError(f"the options given are {', '.join(among)}'s, which cannot run this design"
                              + (f": {why}" if why else " (python -m dpcore advise says why)") + "; give --method")
        return pick, f"method: {pick} (the adviser's best among the methods that take the options given)"
    if pick is None:
        why = next((a.reason for a in adv.methods if a.reason), "")
        raise OptionError("no method can run this design" + (f": {why}" if why else
                                                             " (python -m dpcore advise says why)") + "; give --method")
    return pick, f"method: {pick} (the adviser's pick, as in the app; give --method to choose another)"


def cmd_advise(args) -> int:
    epsilon = check_epsilon(_number("--epsilon", args.epsilon))
    delta = None if args.delta is None else _number("--delta", args.delta)
    definition_for(delta)  # refuses a δ outside (0, 1) with its own message
    sets = check_sets(_number("--sets", args.sets, whole=True))
    neighbours = check_neighbours(args.neighbours)
    records = _records(args.records)
    dom = Domain.load(args.domain)
    df = read_table(args.input)
    if neighbours == "replace":
        public_n, source = float(len(df)), "the table's record count (public under replace-one neighbours)"
    elif records is not None:
        public_n, source = records, "the figure given with --records (stated public by you)"
    else:
        public_n, source = book_record_count(df)

    def check(method: str, options: dict) -> None:
        preview(df, method=method, epsilon=epsilon, sets=sets, domain=dom, neighbours=neighbours, delta=delta,
                **options)

    adv = advise(dom, epsilon, sets, delta=delta, public_n=public_n, public_n_source=source, neighbours=neighbours,
                 check=check, n=float(len(df)), n_source="the table's own record count (curator-only)",
                 curator_only=True)
    if dom.source != DECLARED:
        print("warning: the domain is not declared public (\"source\": \"declared\"): its levels may come from the "
              "data, and so would the advice", file=sys.stderr)
    if args.json:
        print(json.dumps(adv.to_dict(), indent=2, ensure_ascii=False))
        return 0
    _print_text(adv)
    return 0


def _print_text(adv) -> None:
    guarantee = f"ε = {adv.epsilon:g}" + ("" if adv.delta is None else f", δ = {adv.delta:g}") + f", m = {adv.sets}"
    print(f"Method adviser ({guarantee}); predicted errors are from public facts, not measured on this table.")
    print(f"recommended: {adv.recommended or 'none (no method can run this design)'}")
    width = max(len(a.method) for a in adv.methods)
    print(f"{'rank':>4}  {'method':<{width}}  {'predicted S_pMSE':>16}  verdict")
    for i, a in enumerate(adv.methods, 1):
        pred = "—" if a.predicted is None else f"{a.predicted:.3g}"
        line = f"{i:>4}  {a.method:<{width}}  {pred:>16}  {a.verdict}"
        print(line + (f": {a.reason}" if a.reason else ""))
    print()
    print(adv.summary)
    for note in adv.notes:
        print(f"- {note}")
