"""[aim-parity] done-when 1: our AIM under (ε, δ) against dpmm's AIM and MST on the corpus tables where dpmm finished.

Reads the peers' runs (bench/data/corpus_peers_1800.csv: dpmm 0.1.9's AIM and MST, (1, 10⁻⁹), m = 1, seeds 0-2, a cap
of 1,800 s, written by bench/accuracy/corpus_run.py in the background) and our AIM's: the [aim-parity] rows
(bench/data/aim_parity.csv, 5 seeds) where the new rules change a table's plan, else today's corpus rows
(bench/data/corpus_results.csv: the plan, and so the release, is the same to the last digit). Prints a Markdown table
of medians and the largest ratio ours / dpmm's AIM. Run: ``python bench/accuracy/aim_vs_dpmm.py``.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

DATA = Path(__file__).resolve().parents[1] / "data"


def table() -> pd.DataFrame:
    peers = pd.read_csv(DATA / "corpus_peers_1800.csv")
    new = pd.read_csv(DATA / "aim_parity.csv")
    new = new[(new.definition == "zcdp") & (new.status == "ok")]
    old = pd.read_csv(DATA / "corpus_results.csv")
    old = old[(old.method == "aim") & (old.definition == "zcdp") & (old.epsilon == 1) & (old.sets == 1)
              & (old.status == "ok")]
    rows = []
    for name in sorted(set(peers.table)):
        ours = new[new.table == name] if name in set(new.table) else old[old.table == name]
        row = {"table": name, "our AIM": ours.spmse.median(), "seeds": len(ours),
               "rows": "aim_parity" if name in set(new.table) else "corpus (plan unchanged)"}
        for method in ("dpmm_aim", "dpmm_mst"):
            runs = peers[(peers.table == name) & (peers.method == method)]
            ok = runs[runs.status == "ok"]
            row[method] = ok.spmse.median() if len(ok) else float("nan")
            row[f"{method} finished"] = f"{len(ok)}/{len(runs)}"
            row[f"{method} s"] = ok.seconds.median() if len(ok) else float("nan")
        row["ours / dpmm AIM"] = row["our AIM"] / row["dpmm_aim"]
        rows.append(row)
    return pd.DataFrame(rows)


if __name__ == "__main__":
    t = table()
    cols = list(t.columns)
    print("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols))
    for _, r in t.iterrows():
        print("| " + " | ".join(f"{v:.3g}" if isinstance(v, float) else str(v) for v in r) + " |")
    print(f"\nlargest ratio ours / dpmm AIM: {t['ours / dpmm AIM'].max():.3f} "
          f"({t.loc[t['ours / dpmm AIM'].idxmax(), 'table']}); at or under on "
          f"{int((t['ours / dpmm AIM'] <= 1).sum())} of {int(t['ours / dpmm AIM'].notna().sum())} tables")
