"""[aim-parity] item 3: the corpus's AIM rows brought up to the shipped AIM, for the adviser's refit.

    nice -n 5 .venv/bin/python bench/accuracy/aim_rerun.py --list                 # the cases whose plan changed
    nice -n 5 .venv/bin/python bench/accuracy/aim_rerun.py [--seeds 0 1 2 3 4] [--out bench/out/aim_rerun.csv]
    .venv/bin/python bench/accuracy/aim_rerun.py --merge [--out bench/out/aim_rerun.csv]

A case is a (table, definition, ε, m) of AIM's rows in bench/data/corpus_results.csv. Where the [aim-parity] rules
(bench/accuracy/aim_parity.py's ``changed``: the rounds or the workload at once, from public facts) plan a set as
AIM did before them, the seeded release is the one already recorded and its rows stand. Every other case is run
again, seed by seed, by the corpus runner itself (bench/accuracy/corpus_run.py's ``run_table``: a forked child,
the same scores, %ru and memory, the same row format), into ``--out``; the runner resumes. ``--merge`` then
replaces, in bench/data/corpus_results.csv, the AIM rows of every rerun case by the rerun's rows (a case is
replaced whole, when every seed of it was rerun, or with ``--min-seeds k`` when at least k were: the case then keeps
only the rerun's seeds). Reads raw data: curator-side, NOT DP.
"""
from __future__ import annotations

import argparse
from pathlib import Path

# aim_parity (beside this file, so on sys.path when this runs as a script) sets what every corpus runner sets before
# numpy loads: one BLAS thread per process, and bench/accuracy, bench/tools and the repository root on sys.path
import aim_parity
import pandas as pd

BENCH = aim_parity.BENCH
RESULTS = BENCH / "data" / "corpus_results.csv"
OUT = BENCH / "out" / "aim_rerun.csv"
CASE = ["table", "definition", "epsilon", "sets"]
#: the order the cases run in: the adviser's most used settings first
ORDER = [(1.0, 1), (0.3, 1), (3.0, 1), (1.0, 5), (0.3, 5), (3.0, 5)]


def changed_cases(results: Path = RESULTS) -> pd.DataFrame:
    """AIM's recorded cases, each with ``changed``: whether the shipped rules plan it differently."""
    from corpus import load_table
    d = pd.read_csv(results)
    cases = d[d.method == "aim"][CASE].drop_duplicates()
    flags = []
    for table, g in cases.groupby("table", sort=False):
        df, dom = load_table(table)
        flags += [(table, r.definition, r.epsilon, r.sets,
                   aim_parity.changed(df, dom, r.definition, r.epsilon, int(r.sets))) for r in g.itertuples()]
    return pd.DataFrame(flags, columns=[*CASE, "changed"])


def rerun(cases: pd.DataFrame, seeds: list[int], out: Path, timeout: float) -> None:
    import corpus_run as cr
    commit = cr.git_commit()
    cr.warm_up(["aim"])
    out.parent.mkdir(parents=True, exist_ok=True)
    for eps, m in ORDER:
        sub = cases[cases.changed & (cases.epsilon == eps) & (cases.sets == m)]
        for table, g in sub.groupby("table", sort=False):
            args = argparse.Namespace(tables=[table], methods=["aim"], definitions=list(g.definition), eps=[eps],
                                      sets=[m], seeds=seeds, delta=1e-9, timeout=timeout)
            done, over = cr.recorded(out)
            cr.run_table(args, table, out, done, commit, over)


def merge(out: Path, results: Path = RESULTS, min_seeds: int | None = None) -> tuple[int, int]:
    """Replace the rerun cases' AIM rows in ``results`` (a case with every recorded seed rerun, or with at least
    ``min_seeds`` rerun seeds); returns (cases replaced, rows written)."""
    d = pd.read_csv(results, keep_default_na=False, dtype=str)
    new = pd.read_csv(out, keep_default_na=False, dtype=str)
    key = lambda f: list(zip(f.table, f.definition, f.epsilon.astype(float), f.sets.astype(int)))
    old_aim = d[d.method == "aim"]
    seeds_old = old_aim.assign(k=key(old_aim)).groupby("k").seed.apply(set)
    seeds_new = new.assign(k=key(new)).groupby("k").seed.apply(set)
    whole = {k for k, s in seeds_new.items()
             if k in seeds_old and (seeds_old[k] <= s or (min_seeds is not None and len(s) >= min_seeds))}
    drop = (d.method == "aim") & pd.Series([k in whole for k in key(d)], index=d.index)
    keep_new = new[[k in whole for k in key(new)]]
    merged = pd.concat([d[~drop], keep_new[d.columns]], ignore_index=True)
    merged.to_csv(results, index=False, lineterminator="\r\n")  # as the runner writes it (the csv module)
    return len(whole), len(keep_new)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--list", action="store_true", help="print the cases and whether the rules change each")
    ap.add_argument("--merge", action="store_true", help="replace the rerun cases' rows in corpus_results.csv")
    ap.add_argument("--min-seeds", type=int, help="--merge: replace a case rerun on at least this many seeds")
    args = ap.parse_args()
    if args.merge:
        cases, rows = merge(args.out, min_seeds=args.min_seeds)
        print(f"replaced the AIM rows of {cases} cases by {rows} rerun rows in {RESULTS}")
        return
    cases = changed_cases()
    if args.list:
        print(cases.groupby(["epsilon", "sets"]).changed.agg(["sum", "size"]).to_string())
        return
    for seeds in (args.seeds[:3], args.seeds[3:]):  # three seeds of every case first
        if seeds:
            rerun(cases, seeds, args.out, args.timeout)


if __name__ == "__main__":
    main()
