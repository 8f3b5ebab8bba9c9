"""``python -m dpcore budget``: the installation's budget book, caps and δ, and its audit trail.

Reads and sets what :mod:`dpcore.studio.budget_book` keeps; spends nothing.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from dpcore.errors import InputError, OptionError
from dpcore.studio.workspace import (
    DATABASE_ENV,
    DB_NAME,
    ENV_VAR,
    TableRecord,
    Workspace,
    installation_book,
)


def add_budget_parser(sub) -> None:
    """``python -m dpcore budget [--workspace DIR] [--set-cap EPS [--table T]] [--releases] [--export F] [--json]``."""
    b = sub.add_parser("budget", help="the budget book: ε spent per table, caps, remaining; --set-cap sets a cap")
    b.add_argument("--workspace", help="only the tables of this workspace folder (default: every table in the "
                                       f"installation's book, ${ENV_VAR}/book.sqlite or ${DATABASE_ENV})")
    b.add_argument("--set-cap", dest="set_cap", help="set the table's cap on total ε (a number > 0, or 'none')")
    b.add_argument("--table", help="with --set-cap: the table's name, fingerprint (or its first characters), or "
                                   "its file; may be left out when the book (or --workspace) has one table")
    b.add_argument("--set-delta", dest="set_delta", type=float,
                   help="the book's δ (0 < δ < 1, default 1e-9): where a table with (ε, δ) releases states its "
                        "total as (ε, δ)")
    b.add_argument("--releases", action="store_true",
                   help="list every release (workspace, user, method, ε, neighbours, status) instead of the "
                        "per-table sums")
    b.add_argument("--export", help="write the book's audit trail (every entry's status events, with the manifest's "
                                    "SHA-256) to FILE.csv or FILE.json")
    b.add_argument("--json", action="store_true", help="print JSON")
    b.set_defaults(func=cmd_budget)


def _existing(folder) -> Workspace:
    if not (Path(folder).expanduser() / DB_NAME).is_file():
        raise InputError(f"--workspace '{folder}' holds no workspace ({DB_NAME} is missing): check the path, or "
                         "record a release into it first with synth --workspace")
    return Workspace(folder)


def _tables(book, ws: Workspace | None) -> list[TableRecord]:
    """The tables --table chooses among: the workspace's, or every table the book knows."""
    if ws is not None:
        return ws.tables()
    names = {t["fingerprint"]: t for t in book.known_tables()}
    for row in book.summary():
        names.setdefault(row["table_fp"], {"fingerprint": row["table_fp"], "name": row["table_name"], "n_rows": -1,
                                           "n_cols": -1, "added_at": ""})
    return [TableRecord(t["fingerprint"], t["name"], "file", "", int(t["n_rows"]), int(t["n_cols"]), t["added_at"])
            for t in names.values()]


def _find_table(tables: list[TableRecord], which: str | None) -> TableRecord:
    if which is None:
        if len(tables) == 1:
            return tables[0]
        raise OptionError(f"--table is needed: there are {len(tables)} tables "
                          f"({', '.join(t.name for t in tables) or 'none yet'})")
    hits = [t for t in tables if t.name == which or t.fingerprint.startswith(which.lower())
            or t.fingerprint.startswith("content-" + which.lower())]
    if not hits and Path(which).is_file():
        from dpcore.counting.fingerprint import file_sha256
        from dpcore.output.file_release import content_fingerprint, default_engine

        # the file's records, fingerprinted where a release of it would count them (DuckDB above 256 MB)
        keys = {content_fingerprint(which, default_engine(which)).key, file_sha256(which)}
        hits = [t for t in tables if t.fingerprint in keys]
    if len(hits) != 1:
        raise OptionError(f"--table {which!r} matches {len(hits)} tables; give the name or more of "
                          f"the fingerprint ({', '.join(f'{t.name} {t.fingerprint[:12]}' for t in tables) or 'none'})")
    return hits[0]


def _short(fp: str) -> str:
    """A key as the table shows it: its first 12 characters after any prefix."""
    return fp.split("-", 1)[1][:12] if fp.startswith("content-") else fp[:12]


def _label(book, account: str) -> str:
    return next((r["table_name"] for r in book.summary() if r["table_fp"] == account), "") or _short(account)


def cmd_budget(args) -> int:
    ws = _existing(args.workspace) if args.workspace else None
    book = ws.book if ws is not None else installation_book()
    if getattr(args, "set_delta", None) is not None:
        kept = book.set_delta(args.set_delta)
        print(f"δ of the budget book ({book.describe()}): {args.set_delta:g}")
        if kept:
            names = ", ".join(_label(book, a) for a in kept)
            print(f"tables with (ε, δ) releases keep their lower δ (a table's δ can only go down once it has spent "
                  f"under (ε, δ), so what was spent never shrinks): {names}")
    if args.set_cap is not None:
        table = _find_table(_tables(book, ws), args.table)
        if args.set_cap.strip().lower() == "none":
            cap = None
        else:
            try:
                cap = float(args.set_cap)
            except ValueError:
                raise OptionError(f"--set-cap {args.set_cap!r}: give a number greater than 0, or 'none'") from None
        change = book.set_cap(table.fingerprint, cap)
        print(f"cap of {table.name} ({_short(table.fingerprint)}): " + ("none" if cap is None else f"ε = {cap:g}")
              + ("" if change in ("set", "unchanged") else f" ({change}; recorded in the book's audit trail)"))
    if getattr(args, "export", None):
        path = book.export(args.export)
        print(f"wrote the budget book's audit trail ({len(book.export_rows())} events) to {path}")
        return 0
    accounts = None if ws is None else {book.account(t.fingerprint) for t in ws.tables()}
    if accounts is not None and getattr(args, "releases", False):  # entries are kept under every key of an account
        accounts = {k for r in book.summary() if r["table_fp"] in accounts for k in r["keys"]}
    if getattr(args, "releases", False):
        return _print_releases(args, book, accounts)
    out = [r for r in book.summary() if accounts is None or r["table_fp"] in accounts]
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    if not out:
        print(f"no releases and no caps recorded in the budget book of {book.describe()}"
              + (f" for the tables of {args.workspace}" if ws is not None else ""))
        return 0
    frame = pd.DataFrame([{
        "table": r["table_name"], "fingerprint": _short(r["table_fp"]),
        "workspaces": ", ".join(w or "CLI / API" for w in r["workspaces"]) or "-",
        "releases": r["releases"], "pending": r["pending"], "spent ε (DP)": f"{r['dp_epsilon']:.6g}",
        **({"NOT DP ε": f"{r['not_dp_epsilon']:.6g}"} if any(x["not_dp"] for x in out) else {}),
        "cap": "none" if r["cap"] is None else f"{r['cap']:.6g}",
        "remaining": "-" if r["remaining"] is None else f"{r['remaining']:.6g}",
        "neighbours": r["neighbours"] or "-",
        # the same total both ways: a sum of pure ε (all releases pure), and (ε, δ) at the book's δ
        "Σ pure ε": "-" if r["pure_epsilon"] is None else f"{r['pure_epsilon']:.6g}",
        "(ε, δ)": f"({r['epsilon_at_delta']:.6g}, {r['delta']:g})" if r["pure_epsilon"] is None or r["rho"] else "-",
    } for r in out])
    print(f"budget book: {book.describe()}")
    print(frame.to_string(index=False))
    if any(r["pending"] for r in out):
        print("pending: reserved by a release that did not finish recording; counted as spent (conservative)")
    if any(r["not_dp"] for r in out):
        print("WARNING: some releases were NOT DP (undeclared domain or non-private choices): their privacy loss is "
              "not bounded by any ε. Their ε is shown apart (NOT DP ε), in no DP total; the cap still counts it "
              "(remaining = cap − spent − NOT DP)")
    return 0


def _print_releases(args, book, accounts) -> int:
    """``budget --releases``: one line per book entry, synthetic and survey releases alike."""
    out = [e for e in book.entries() if accounts is None or e["table_fp"] in accounts]
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    if not out:
        print(f"no releases recorded in the budget book of {book.describe()}")
        return 0
    frame = pd.DataFrame([{
        "release": e["id"], "table": e["table_name"], "fingerprint": _short(e["table_fp"]),
        "workspace": e["workspace"] or "-", "user": e["user"] or "-",
        "method": e["method"], "ε": f"{e['epsilon']:.6g}", "δ": "-" if e.get("delta") is None else f"{e['delta']:g}",
        "neighbours": e["neighbours"], "status": e["status"],
        "DP": {1: "yes", 0: "NOT DP"}.get(e["dp"], "-"), "time (UTC)": e["completed_at"] or e["reserved_at"],
    } for e in out])
    print(frame.to_string(index=False))
    return 0
