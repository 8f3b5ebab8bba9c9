"""[aim-parity] done-when 1: our AIM under (ε, δ) against dpmm's AIM and MST on the corpus tables where dpmm finished.

Reads the peers' runs (bench/data/corpus_peers_1800.csv: dpmm 0.1.9's AIM and MST, (1, 10⁻⁹), m = 1, seeds 0-2, a cap
of 1,800 s, written by bench/accuracy/corpus_run.py in the background) and our AIM's rows of the same setting in
bench/data/corpus_results.csv (the shipped rules: bench/accuracy/aim_rerun.py reran every case whose plan they
change; where they do not, the release is the recorded one to the last digit). The done-when compares medians of 3
seeds each: ours over seeds 0-2 (``our AIM``), beside the median over all of ours (``our AIM, all seeds``). Prints a
Markdown table and the largest ratio ours / dpmm's AIM. Run: ``python bench/accuracy/aim_vs_dpmm.py [--seeds 3]``:
``--seeds k`` compares medians over seeds 0..k-1 on both sides (dpmm's later seeds were run on diamonds only, where
the 3-seed medians were inside both methods' seed ranges; a table with fewer dpmm seeds says so in ``finished``).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

DATA = Path(__file__).resolve().parents[1] / "data"


def table(seeds: int = 3) -> pd.DataFrame:
    peers = pd.read_csv(DATA / "corpus_peers_1800.csv")
    ours = pd.read_csv(DATA / "corpus_results.csv")
    ours = ours[(ours.method == "aim") & (ours.definition == "zcdp") & (ours.epsilon == 1) & (ours.sets == 1)
                & (ours.status == "ok")]
    rows = []
    for name in sorted(set(peers.table)):
        mine = ours[ours.table == name]
        row = {"table": name, "our AIM": mine[mine.seed < seeds].spmse.median(),
               "our AIM, all seeds": mine.spmse.median(), "seeds": len(mine)}
        for method in ("dpmm_aim", "dpmm_mst"):
            runs = peers[(peers.table == name) & (peers.method == method) & (peers.seed < seeds)]
            ok = runs[runs.status == "ok"]
            row[method] = ok.spmse.median() if len(ok) else float("nan")
            row[f"{method} finished"] = f"{len(ok)}/{len(runs)}"
            row[f"{method} s"] = ok.seconds.median() if len(ok) else float("nan")
        row["ours / dpmm AIM"] = row["our AIM"] / row["dpmm_aim"]
        rows.append(row)
    return pd.DataFrame(rows)


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3, help="medians over seeds 0..k-1 on both sides (default 3)")
    t = table(ap.parse_args().seeds)
    cols = list(t.columns)
    print("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols))
    for _, r in t.iterrows():
        print("| " + " | ".join(f"{v:.3g}" if isinstance(v, float) else str(v) for v in r) + " |")
    print(f"\nlargest ratio ours / dpmm AIM: {t['ours / dpmm AIM'].max():.3f} "
          f"({t.loc[t['ours / dpmm AIM'].idxmax(), 'table']}); at or under on "
          f"{int((t['ours / dpmm AIM'] <= 1).sum())} of {int(t['ours / dpmm AIM'].notna().sum())} tables")
