"""``python -m dpcore budget``: the budget books of the app's workspaces, caps and δ.

Reads and sets what :mod:`dpcore.studio.budget_book` keeps; spends nothing.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from dpcore.errors import InputError, OptionError
from dpcore.studio.workspace import (
    DB_NAME,
    DEFAULT_ROOT,
    ENV_VAR,
    TableRecord,
    Workspace,
    root_folder,
    table_fingerprint,
)


def add_budget_parser(sub) -> None:
    """``python -m dpcore budget [--workspace DIR] [--set-cap EPS [--table T]] [--json]``."""
    b = sub.add_parser("budget", help="the budget book: ε spent per table, caps, remaining; --set-cap sets a cap")
    b.add_argument("--workspace", help=f"workspace folder (default: every workspace under ${ENV_VAR} or "
                                       f"./{DEFAULT_ROOT})")
    b.add_argument("--set-cap", dest="set_cap", help="set the table's cap on total ε (a number > 0, or 'none')")
    b.add_argument("--table", help="with --set-cap: the table's name, fingerprint (or its first characters), or "
                                   "its file; may be left out when the workspace has one table")
    b.add_argument("--set-delta", dest="set_delta", type=float,
                   help="the workspace's δ (0 < δ < 1, default 1e-9): where a table with (ε, δ) releases states its "
                        "total as (ε, δ)")
    b.add_argument("--releases", action="store_true",
                   help="list every release in the book (method, ε, neighbours, status) instead of the per-table sums")
    b.add_argument("--json", action="store_true", help="print JSON")
    b.set_defaults(func=cmd_budget)


def _existing(folder) -> Workspace:
    if not (Path(folder).expanduser() / DB_NAME).is_file():
        raise InputError(f"--workspace '{folder}' holds no workspace ({DB_NAME} is missing): check the path, or "
                         "record a release into it first with synth --workspace")
    return Workspace(folder)


def _workspaces(folder) -> list[Workspace]:
    if folder:
        return [_existing(folder)]
    root = root_folder()
    if not root.is_dir():
        return []
    return [Workspace(p) for p in sorted(root.iterdir()) if (p / DB_NAME).is_file()]


def _find_table(ws: Workspace, which: str | None) -> TableRecord:
    tables = ws.tables()
    if which is None:
        if len(tables) == 1:
            return tables[0]
        raise OptionError(f"--table is needed: the workspace has {len(tables)} tables "
                          f"({', '.join(t.name for t in tables) or 'none yet'})")
    hits = [t for t in tables if t.name == which or t.fingerprint.startswith(which.lower())]
    if not hits and Path(which).is_file():
        from dpcore.data.io import read_table
        from dpcore.studio.workspace import file_fingerprint

        by_file = file_fingerprint(which)  # a file released on an engine is keyed by its bytes
        hits = [t for t in tables if t.fingerprint == by_file]
        if not hits:
            fp = table_fingerprint(read_table(which))
            hits = [t for t in tables if t.fingerprint == fp]
    if len(hits) != 1:
        raise OptionError(f"--table {which!r} matches {len(hits)} tables of the workspace; give the name or more of "
                          f"the fingerprint ({', '.join(f'{t.name} {t.fingerprint[:12]}' for t in tables) or 'none'})")
    return hits[0]


def cmd_budget(args) -> int:
    if getattr(args, "set_delta", None) is not None:
        if not args.workspace:
            raise OptionError("--set-delta needs --workspace DIR: the workspace whose δ is set")
        _existing(args.workspace).book.set_delta(args.set_delta)
        print(f"δ of {args.workspace}: {args.set_delta:g}")
    if args.set_cap is not None:
        if not args.workspace:
            raise OptionError("--set-cap needs --workspace DIR: the workspace whose table gets the cap")
        ws = _existing(args.workspace)
        table = _find_table(ws, args.table)
        if args.set_cap.strip().lower() == "none":
            cap = None
        else:
            try:
                cap = float(args.set_cap)
            except ValueError:
                raise OptionError(f"--set-cap {args.set_cap!r}: give a number greater than 0, or 'none'") from None
        ws.book.set_cap(table.fingerprint, cap)
        print(f"cap of {table.name} ({table.fingerprint[:12]}): " + ("none" if cap is None else f"ε = {cap:g}"))
    spaces = _workspaces(args.workspace)
    if getattr(args, "releases", False):
        return _print_releases(args, spaces)
    out = []
    for ws in spaces:
        names = {t.fingerprint: t.name for t in ws.tables()}
        for row in ws.book.summary():
            out.append(dict(row, workspace=str(ws.folder), table_name=names.get(row["table_fp"], row["table_name"])))
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    if not out:
        print("no releases and no caps recorded" + (f" in {args.workspace}" if args.workspace else
                                                     f" under {root_folder()}"))
        return 0
    frame = pd.DataFrame([{
        "workspace": r["workspace"], "table": r["table_name"], "fingerprint": r["table_fp"][:12],
        "releases": r["releases"], "pending": r["pending"], "spent ε": f"{r['spent']:.6g}",
        "cap": "none" if r["cap"] is None else f"{r['cap']:.6g}",
        "remaining": "-" if r["remaining"] is None else f"{r['remaining']:.6g}",
        "neighbours": r["neighbours"] or "-",
        # the same total both ways: a sum of pure ε (all releases pure), and (ε, δ) at the book's δ
        "Σ pure ε": "-" if r["pure_epsilon"] is None else f"{r['pure_epsilon']:.6g}",
        "(ε, δ)": f"({r['epsilon_at_delta']:.6g}, {r['delta']:g})",
    } for r in out])
    print(frame.to_string(index=False))
    if any(r["pending"] for r in out):
        print("pending: reserved by a release that did not finish recording; counted as spent (conservative)")
    if any(r["not_dp"] for r in out):
        print("WARNING: some releases were NOT DP (undeclared domain or non-private choices): their privacy loss is "
              "not bounded by the ε shown")
    return 0


def _print_releases(args, spaces) -> int:
    """``budget --releases``: one line per book entry, synthetic and survey releases alike."""
    out = []
    for ws in spaces:
        names = {t.fingerprint: t.name for t in ws.tables()}
        out += [dict(e, workspace=str(ws.folder), table_name=names.get(e["table_fp"], e["table_name"]))
                for e in ws.releases()]
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    if not out:
        print("no releases recorded" + (f" in {args.workspace}" if args.workspace else f" under {root_folder()}"))
        return 0
    frame = pd.DataFrame([{
        "workspace": e["workspace"], "release": e["id"], "table": e["table_name"], "fingerprint": e["table_fp"][:12],
        "method": e["method"], "ε": f"{e['epsilon']:.6g}", "δ": "-" if e.get("delta") is None else f"{e['delta']:g}",
        "neighbours": e["neighbours"], "status": e["status"],
        "DP": {1: "yes", 0: "NOT DP"}.get(e["dp"], "-"), "time (UTC)": e["completed_at"] or e["reserved_at"],
    } for e in out])
    print(frame.to_string(index=False))
    return 0
