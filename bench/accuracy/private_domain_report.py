"""[private-domain] item 4: the Markdown tables of bench/RESULTS.md from bench/accuracy/private_domain.py's CSVs.

    PYTHONPATH=. python bench/accuracy/private_domain_report.py [--method mst] [--min-n 1000]

Reads bench/data/private_domain_{tables,columns,levels,binfloor}.csv (curator-side measures, NOT DP) and prints,
for the frame's dtypes as declared types (``types == "dtypes"``; the codebook variant in a section of its own):
the done-when targets on tables of at least ``--min-n`` records, S_pMSE on the declared codes per table, the
numeric columns' medians, the levels' survival (with the share of ρ a level of 5% of 2,000 records needs), the
missing shares, the forecast against the status after release, and the ``domain_share`` sweep.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from private_domain_measures import BINFLOOR_CSV, NOT_FOUND, Files

SHARE = 0.25  # the default domain_share
DEFS = {"zcdp": "(1, 10⁻⁹)", "pure": "pure ε = 1"}


class Data:
    """The CSVs, read once; ``big`` is the target's table size."""

    def __init__(self, files: Files, big: int = 1000):
        self.t = pd.read_csv(files.tables, dtype={"seed": str})
        self.c = pd.read_csv(files.columns)
        self.lv = pd.read_csv(files.levels)
        self.bf = pd.read_csv(BINFLOOR_CSV) if BINFLOOR_CSV.exists() else None
        for f in (self.t, self.c):
            f["subset"] = f["subset"].fillna("")
        self.big = big

    def dp(self, definition: str, share: float = SHARE, types: str = "dtypes") -> pd.DataFrame:
        t = self.t
        sel = (t.definition == definition) & (t.status == "ok") & (t.variant == "dp")
        return t[sel & (t.share == share) & (t.types == types)]

    def declared(self, definition: str, variant: str = "declared", share: float | None = None) -> pd.Series:
        t = self.t
        ok = t[(t.definition == definition) & (t.status == "ok") & (t.variant == variant)]
        if share is not None:
            ok = ok[ok.share == share]
        return ok.groupby("table").spmse.mean()

    def cols(self, definition: str, share: float = SHARE, types: str = "dtypes") -> pd.DataFrame:
        c = self.c
        return c[(c.definition == definition) & (c.share == share) & (c.types == types)]

    def levels(self, definition: str, source: str, share: float = SHARE, types: str = "dtypes") -> pd.DataFrame:
        lv = self.lv
        sel = (lv.definition == definition) & (lv.share == share) & (lv.source == source)
        return lv[sel & (lv.types == types)]


# ------------------------------------------------------------------ S_pMSE


def ratio_table(d: Data, definition: str, share: float = SHARE, types: str = "dtypes") -> pd.DataFrame:
    dp = d.dp(definition, share, types).groupby("table")
    r = dp.agg(n=("n", "first"), columns=("columns", "first"), subset=("subset", "first"), dp=("spmse", "mean"))
    r = r.join(dp.size().rename("seeds")).join(d.declared(definition).rename("declared"), how="inner")
    r = r.join(d.declared(definition, "declared_floor", share).rename("floor"), how="left")
    bf = d.bf if d.bf is not None else pd.DataFrame(columns=["table", "definition", "share"])
    bf = bf[(bf.definition == definition) & (bf.share == share)].groupby("table")
    r = r.join(bf.spmse_binfloor.mean().rename("binfloor"), how="left")
    r = r.join(bf.spmse_binfloor_numeric.mean().rename("binfloor_numeric"), how="left")
    r["ratio"] = r["dp"] / r["declared"]
    r["floor_ratio"] = r["floor"] / r["declared"]
    return r.sort_values("n")


def spmse_section(d: Data, definition: str, p) -> None:
    r = ratio_table(d, definition)
    if r.empty:
        return
    p(f"\n### S_pMSE on the declared codes, {DEFS[definition]}, share {SHARE:g}, mean over seeds\n")
    p(
        "| table | n | columns | S_pMSE nothing declared | S_pMSE declared | ratio | declared at the sets' budget: "
        "ratio | the DP domain alone, no noise: S_pMSE (numeric columns only) |"
    )
    p("|---|---:|---:|---:|---:|---:|---:|---|")
    for name, x in r.iterrows():
        cols = f"{x['columns']}" + (" (no text)" if x["subset"] else "")
        fl = "—" if math.isnan(x.floor_ratio) else f"{x.floor_ratio:.2f}"
        bf = "—" if math.isnan(x.binfloor) else f"{x.binfloor:.2f} ({x.binfloor_numeric:.2f})"
        p(f"| {name} | {x.n:,} | {cols} | {x.dp:.2f} | {x.declared:.2f} | {x.ratio:.2f} | {fl} | {bf} |")
    big, small = r[r.n >= d.big], r[r.n < d.big]
    p(
        f"\nmedian ratio: n ≥ {d.big:,} ({len(big)} tables) **{big.ratio.median():.2f}** (≤ 1.3: "
        f"{int((big.ratio <= 1.3).sum())}); n < {d.big:,} ({len(small)}) {small.ratio.median():.2f}; all "
        f"{r.ratio.median():.2f}. Medians over n ≥ {d.big:,}: S_pMSE nothing declared {big.dp.median():.2f}, "
        f"declared {big.declared.median():.2f}, the DP domain alone with no noise {big.binfloor.median():.2f} "
        f"(numeric columns only {big.binfloor_numeric.median():.2f}; per table over declared: median "
        f"{(big.binfloor / big.declared).median():.2f})"
        + (
            f"; the declared domain at the sets' budget: ratio {big.floor_ratio.median():.2f} over "
            f"{int(big.floor_ratio.notna().sum())} tables"
            if big.floor_ratio.notna().any()
            else ""
        )
    )
    refused = d.t[(d.t.definition == definition) & (d.t.status == "refused")]
    if len(refused):
        p(f"\nrefused (text columns under pure ε): {len(refused)} tables; measured on their non-text columns")


# ------------------------------------------------------------------ numeric columns


def numeric_frame(d: Data, definition: str, share: float = SHARE, types: str = "dtypes") -> pd.DataFrame:
    x = d.cols(definition, share, types)
    x = x[x.kind == "numeric"]
    return x.assign(
        within=x.relerr_dp <= 0.25,
        nf=x.status == NOT_FOUND,
        fc_nf=x.forecast == NOT_FOUND,
        zero=x.true_median == 0,
        absurd=(x.median_dp - x.true_median).abs() > x.span,
    )


def numeric_section(d: Data, definition: str, p) -> None:
    xs = numeric_frame(d, definition)
    if xs.empty:
        return
    p(f"\n### Numeric columns, {DEFS[definition]}, share {SHARE:g} (per release and column)\n")
    p(
        "| columns | releases | median within 25% | not within: not found after release | … forecast not found "
        "(preview) | not within, found or coarsely, forecast found | … of which true median 0 | … off by more "
        "than the 1–99% span | median rel. error of the median (dp / declared) | median normalised W1 "
        "(dp / declared) |"
    )
    p("|---|---:|---:|---:|---:|---:|---:|---:|---|---|")
    groups = (
        ("declared numeric", xs[xs.declared_kind == "numeric"]),
        ("declared codes", xs[xs.declared_kind != "numeric"]),
    )
    for label, sub in groups:
        for nlabel, s in ((f"n ≥ {d.big:,}", sub[sub.n >= d.big]), (f"n < {d.big:,}", sub[sub.n < d.big])):
            if s.empty:
                continue
            bad = s[~s.within]
            silent = bad[~bad.nf & ~bad.fc_nf]
            p(
                f"| {label}, {nlabel} ({s.groupby(['table', 'column']).ngroups}) | {len(s)} | {int(s.within.sum())} | "
                f"{int(bad.nf.sum())} | {int((bad.fc_nf & ~bad.nf).sum())} | **{len(silent)}** | "
                f"{int(silent.zero.sum())} | {int(silent.absurd.sum())} | "
                f"{s.relerr_dp.median():.3f} / {s.relerr_declared.median():.3f} | "
                f"{s.w1_dp.median():.4f} / {s.w1_declared.median():.4f} |"
            )
    bad = xs[(xs.n >= d.big) & ~xs.within & ~xs.nf & ~xs.fc_nf]
    if len(bad):
        p(
            f"\nn ≥ {d.big:,}: releases where a numeric column's synthetic median is more than 25% off and the "
            "column was neither forecast nor reported not found:\n"
        )
        p("| table | n | column | declared as | seeds | status | true median | synthetic medians | W1 dp / declared |")
        p("|---|---:|---|---|---|---|---:|---|---|")
        for (tb, col), s in bad.groupby(["table", "column"]):
            meds = ", ".join(f"{v:.4g}" for v in s.median_dp)
            p(
                f"| {tb} | {s.n.iloc[0]:,} | {col} | {s.declared_kind.iloc[0]} | {' '.join(map(str, s.seed))} | "
                f"{', '.join(sorted(set(s.status)))} | {s.true_median.iloc[0]:.4g} | {meds} | "
                f"{s.w1_dp.median():.3f} / {s.w1_declared.median():.3f} |"
            )


# ------------------------------------------------------------------ levels


def survive_chance(count: float, sigma2: float, tau: float) -> float:
    """P(count + Z ≥ τ), Z the discrete Gaussian of variance parameter σ²."""
    top = int(20 * math.sqrt(sigma2)) + 50
    z = np.arange(-top, top + 1)
    w = np.exp(-z * z / (2 * sigma2))
    return float(w[z >= tau - count].sum() / w.sum())


def level_chance(count: float, frac: float, n_levels_columns: int = 1, delta: float = 1e-9, eps: float = 1.0):
    """(P(a level of ``count`` records passes), σ, τ) when its column gets ``frac`` of the release's ρ at (ε, δ),
    as dpcore.measure.levels.dp_levels draws it (the levels' part of δ shared by ``n_levels_columns``)."""
    from dpcore.api import privacy_setup
    from dpcore.measure.dp_domain import LEVELS_DELTA_SHARE
    from dpcore.measure.levels import exact_level_threshold
    from dpcore.privacy.budget import Epsilon
    from dpcore.privacy.definitions import definition_for

    levels_delta = LEVELS_DELTA_SHARE * delta
    rho = definition_for(delta - levels_delta).budget(Epsilon(eps))
    nb, _ = privacy_setup("add_remove", None, None)
    s2 = float(definition_for(delta).count_noise(rho * frac, nb).sampler_sigma2)
    tau = exact_level_threshold(s2, levels_delta / n_levels_columns)
    return survive_chance(count, s2, tau), math.sqrt(s2), tau


def level_need(count: float, n_levels_columns: int = 1, p: float = 0.95) -> float:
    """The smallest share of the release's ρ at (1, 10⁻⁹) that a levels column needs for a level of ``count``
    records to pass with probability ``p`` (bisection on a log scale)."""
    lo, hi = 1e-6, 1.0
    for _ in range(50):
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if level_chance(count, mid, n_levels_columns)[0] >= p else (mid, hi)
    return hi


def column_split(d: Data, table: str) -> tuple[float, int]:
    """A table's levels column's part of the domain share under (ε, δ) with its dtypes (weights: numeric 2,
    levels 1, boolean 0), and its number of levels columns."""
    c = d.cols("zcdp")
    c = c[(c.table == table) & (c.seed == c[c.table == table].seed.min())]
    weights = {"numeric": 2.0, "levels": 1.0}
    total = sum(weights.get(k, 0.0) for k in c.kind)
    return 1.0 / total, int((c.kind == "levels").sum())


def levels_section(d: Data, p, types: str = "dtypes") -> None:
    x = d.cols("zcdp", types=types)
    x = x[x.kind == "levels"]
    if x.empty:
        return
    what = "" if types == "dtypes" else f" ({types} types)"
    p(f"\n### Levels columns{what}, {DEFS['zcdp']}, share {SHARE:g}: records whose level survives\n")
    for nlabel, s in ((f"n ≥ {d.big:,}", x[x.n >= d.big]), (f"n < {d.big:,}", x[x.n < d.big])):
        p(
            f"- {nlabel}: {s.groupby(['table', 'column']).ngroups} columns, share of the non-missing records whose "
            f"level survives: median {s.records_survived.median():.3f}, mean {s.records_survived.mean():.3f}, min "
            f"{s.records_survived.min():.3f}; not found in {int((s.status == NOT_FOUND).sum())} of {len(s)} "
            "column-releases"
        )
    for source in ("release", "domain-only"):
        s = d.levels("zcdp", source, types=types)
        if s.empty:
            continue
        g = s.groupby(["table", "column", "level"]).agg(
            n=("n", "first"), columns=("columns", "first"), share=("level_share", "first"), rate=("survived", "mean")
        )
        g["k"] = s.groupby(["table", "column", "level"]).size()
        big = g[g.n >= d.big]
        p(
            f"- levels ≥ 5% on tables with n ≥ {d.big:,}, {source} ({int(big.k.max()) if len(big) else 0} per "
            f"level): **{int((big.rate >= 0.95).sum())} of {len(big)}** survive in ≥ 95% of them "
            f"({big.reset_index().table.nunique()} tables; those that do not, on "
            f"{big[big.rate < 0.95].reset_index().table.nunique()}); on n < {d.big:,}: "
            f"{int((g[g.n < d.big].rate >= 0.95).sum())} of {int((g.n < d.big).sum())}"
        )
        if source == "domain-only" and types == "dtypes":
            misses_table(d, big[big.rate < 0.95].reset_index(), p)


def misses_table(d: Data, miss: pd.DataFrame, p) -> None:
    if miss.empty:
        return
    p(
        "\nThe levels ≥ 5% that survive in fewer than 95% of 20 domain-only draws (n ≥ 1,000), with their column's "
        "part of ρ at the default share (0.25 × its weight over the table's weights: numeric 2, levels 1) and the "
        "records a level needs to survive in 95% of draws at that part:\n"
    )
    p(
        "| table | n | columns | column | level | share of records | survival rate | column's part of ρ | "
        "records needed |"
    )
    p("|---|---:|---:|---|---|---:|---:|---:|---:|")
    need_cache: dict = {}
    for r in miss.sort_values(["n", "table", "column"]).itertuples():
        if r.table not in need_cache:
            frac, k = column_split(d, r.table)
            need_cache[r.table] = (SHARE * frac, records_needed(SHARE * frac, k))
        part, needed = need_cache[r.table]
        p(
            f"| {r.table} | {r.n:,} | {r.columns} | {r.column} | {r.level} | {r.share:.1%} | {r.rate:.0%} | "
            f"{part:.2%} | {needed:,} |"
        )


def records_needed(frac: float, n_levels_columns: int, p: float = 0.95) -> int:
    lo, hi = 1, 100_000
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if level_chance(mid, frac, n_levels_columns)[0] >= p else (mid + 1, hi)
    return lo


def level_need_lines(p) -> None:
    """What a level of 5% of 2,000 records (100) needs at (1, 10⁻⁹)."""
    p("\n### What a level of 5% of 2,000 records needs at (1, 10⁻⁹)\n")
    p("| levels columns sharing the levels' δ | part of ρ for ≥ 95% survival | σ there | τ there |")
    p("|---:|---:|---:|---:|")
    for k in (1, 7, 15):
        frac = level_need(100, k)
        _, sigma, tau = level_chance(100, frac, k)
        p(f"| {k} | {frac:.1%} | {sigma:.1f} | {tau:.0f} |")
    for frac, label in ((SHARE, "the whole default share"), (SHARE / 19, "births14's split, 1/19 of it")):
        chance, sigma, tau = level_chance(100, frac, 7 if "births" in label else 1)
        p(f"\n- {label} ({frac:.2%} of ρ): σ {sigma:.1f}, τ {tau:.0f}, P(100 records pass) {chance:.3g}")


# ------------------------------------------------------------------ missing shares, forecasts


def missing_section(d: Data, definition: str, p) -> None:
    x = d.cols(definition)
    x = x[x.missing_true > 0]
    if x.empty:
        return
    x = x.assign(err_dp=(x.missing_dp - x.missing_true).abs(), err_decl=(x.missing_declared - x.missing_true).abs())
    p(f"\n### Missing share, {DEFS[definition]}, share {SHARE:g} (columns with missing values)\n")
    for label, s in (
        (f"n ≥ {d.big:,}", x[x.n >= d.big]),
        (f"n ≥ {d.big:,}, not withheld", x[(x.n >= d.big) & (x.withheld == 0)]),
        (f"n < {d.big:,}", x[x.n < d.big]),
    ):
        if s.empty:
            continue
        p(
            f"- {label}: {s.groupby(['table', 'column']).ngroups} columns, {len(s)} releases; |error| median "
            f"{100 * s.err_dp.median():.2f} points (declared {100 * s.err_decl.median():.2f}), max "
            f"{100 * s.err_dp.max():.2f} ({100 * s.err_decl.max():.2f}); within 3 points: "
            f"**{int((s.err_dp <= 0.03).sum())} of {len(s)}** (declared {int((s.err_decl <= 0.03).sum())})"
        )
    over = x[(x.err_dp > 0.03) & (x.n >= d.big)]
    if len(over):
        p("\n| table | n | column | kind | seed | status | true | nothing declared | declared |")
        p("|---|---:|---|---|---:|---|---:|---:|---:|")
        for r in over.sort_values(["n", "table", "column", "seed"]).itertuples():
            p(
                f"| {r.table} | {r.n:,} | {r.column} | {r.kind} | {r.seed} | {r.status} | {r.missing_true:.3f} | "
                f"{r.missing_dp:.3f} | {r.missing_declared:.3f} |"
            )


def forecast_section(d: Data, definition: str, p) -> None:
    x = d.cols(definition)
    x = x[x.kind.isin(["numeric", "levels"])]
    if x.empty:
        return
    p(f"\n### Forecast (preview, the table's own n) against the status after release, {DEFS[definition]}\n")
    ct = pd.crosstab([x.kind, x.forecast], x.status)
    p("| kind | forecast | " + " | ".join(f"status: {s}" for s in ct.columns) + " |")
    p("|---|---|" + "---:|" * len(ct.columns))
    for (kind, fcs), r in ct.iterrows():
        p(f"| {kind} | {fcs} | " + " | ".join(str(int(v)) for v in r) + " |")
    yes = {"found": "found", "found coarsely": "found", NOT_FOUND: "not"}
    agree = (x.forecast.map(yes) == x.status.map(yes)).mean()
    p(
        f"\nagree on found-or-not: {agree:.1%} of {len(x)} column-releases; exactly: "
        f"{(x.forecast == x.status).mean():.1%}"
    )


# ------------------------------------------------------------------ the share sweep, the codebook variant


def sweep_section(d: Data, p) -> None:
    t = d.t
    s = t[(t.definition == "zcdp") & (t.variant == "dp") & (t.status == "ok") & (t.types == "dtypes")]
    s = s[(s.n >= d.big) & (s.n <= 20000)]
    shares = sorted(s.share.unique())
    if len(shares) < 2:
        return
    names = sorted(set.intersection(*[set(s[s.share == sh].table) for sh in shares]))
    de = d.declared("zcdp")
    p(f"\n### domain_share sweep, {DEFS['zcdp']}, {len(names)} tables with {d.big:,}–20,000 records\n")
    p(
        "| share | median S_pMSE ratio | tables with ratio ≤ 1.3 | declared at the sets' budget: median ratio | "
        "DP domain alone, no noise: median S_pMSE / declared | median share of records whose level survives | "
        "levels ≥ 5% surviving ≥ 95% (20 domain-only draws) | numeric medians within 25% | not within, neither "
        "forecast nor reported not found | missing |error| ≤ 3 points |"
    )
    p("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for sh in shares:
        ratio = s[(s.share == sh) & s.table.isin(names)].groupby("table").spmse.mean() / de
        fl = d.declared("zcdp", "declared_floor", sh)
        fl_ratio = (fl[fl.index.isin(names)] / de).median()
        bf_ratio = math.nan
        if d.bf is not None:
            b = d.bf[(d.bf.definition == "zcdp") & (d.bf.share == sh) & d.bf.table.isin(names)]
            bf_ratio = (b.groupby("table").spmse_binfloor.mean() / de).median()
        cc = d.cols("zcdp", sh)
        cc = cc[cc.table.isin(names)]
        tx, ms = cc[cc.kind == "levels"], cc[cc.missing_true > 0]
        nu = numeric_frame(d, "zcdp", sh)
        nu = nu[nu.table.isin(names)]
        lx = d.levels("zcdp", "domain-only", sh)
        g = lx[lx.table.isin(names)].groupby(["table", "column", "level"]).survived.mean()
        silent = int((~nu.within & ~nu.nf & ~nu.fc_nf).sum())
        p(
            f"| {sh:g} | {ratio.dropna().median():.2f} | {int((ratio <= 1.3).sum())} of {int(ratio.notna().sum())} | "
            f"{fl_ratio:.2f} | {bf_ratio:.2f} | {tx.records_survived.median():.3f} | {int((g >= 0.95).sum())} of "
            f"{len(g)} | {int(nu.within.sum())} of {len(nu)} | {silent} | "
            f"{int(((ms.missing_dp - ms.missing_true).abs() <= 0.03).sum())} of {len(ms)} |"
        )
    p("\nper table, S_pMSE ratio at " + " / ".join(f"{sh:g}" for sh in shares) + ":\n")
    p("| table | n | columns | " + " | ".join(f"ratio {sh:g}" for sh in shares) + " |")
    p("|---|---:|---:|" + "---:|" * len(shares))
    for name in sorted(names, key=lambda nm: int(s[s.table == nm].n.iloc[0])):
        row = s[s.table == name]
        vals = " | ".join(f"{row[row.share == sh].spmse.mean() / de[name]:.2f}" for sh in shares)
        p(f"| {name} | {int(row.n.iloc[0]):,} | {int(row['columns'].iloc[0])} | {vals} |")


def codebook_section(d: Data, p) -> None:
    cb = ratio_table(d, "zcdp", types="codebook")
    if cb.empty:
        return
    base = ratio_table(d, "zcdp")
    both = cb.join(base[["ratio"]].rename(columns={"ratio": "ratio_dtypes"}), how="inner")
    p(
        f"\n### Codebook types, {DEFS['zcdp']}, share {SHARE:g}: the corpus's whole-number categorical columns "
        "declared codes (`--types codebook`), their levels found privately\n"
    )
    p("| table | n | columns | ratio, dtypes | ratio, codebook types |")
    p("|---|---:|---:|---:|---:|")
    for name, x in both.iterrows():
        p(f"| {name} | {x.n:,} | {x['columns']} | {x.ratio_dtypes:.2f} | {x.ratio:.2f} |")
    big = both[both.n >= d.big]
    p(
        f"\nmedian ratio over n ≥ {d.big:,} ({len(big)} tables): dtypes {big.ratio_dtypes.median():.2f}, codebook "
        f"types **{big.ratio.median():.2f}** (≤ 1.3: {int((big.ratio <= 1.3).sum())})"
    )
    levels_section(d, p, "codebook")
    xs = numeric_frame(d, "zcdp", types="codebook")
    xs = xs[xs.n >= d.big]
    silent = xs[~xs.within & ~xs.nf & ~xs.fc_nf]
    p(
        f"- numeric columns, n ≥ {d.big:,}: {int(xs.within.sum())} of {len(xs)} column-releases with the median "
        f"within 25%; {len(silent)} not within and neither forecast nor reported not found"
    )


def report(files: Files, big: int = 1000) -> str:
    d = Data(files, big)
    out: list[str] = []
    p = out.append
    for definition in ("zcdp", "pure"):
        spmse_section(d, definition, p)
    for definition in ("zcdp", "pure"):
        numeric_section(d, definition, p)
    levels_section(d, p)
    level_need_lines(p)
    for definition in ("zcdp", "pure"):
        missing_section(d, definition, p)
    for definition in ("zcdp", "pure"):
        forecast_section(d, definition, p)
    sweep_section(d, p)
    codebook_section(d, p)
    secs = d.t[d.t.seconds.notna()].seconds.sum()
    p(f"\nrelease seconds summed over the tables file: {secs:,.0f} s")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--method", default="mst")
    ap.add_argument("--min-n", type=int, default=1000, help="the targets' table size")
    args = ap.parse_args()
    print(report(Files.of(args.method), args.min_n))


if __name__ == "__main__":
    main()
