"""Charts of the dashboard (Plotly, colour-blind-safe Okabe–Ito colours). Every number
drawn comes from dpcore; nothing here reads raw data except what the caller passes."""
from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import plotly.graph_objects as go

import dpcore
from dpcore.metrics.registry import RISK_UTILITY, metric

log = logging.getLogger("dpcore.app")


OKABE_ITO = ["#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7", "#F0E442", "#000000"]
PHANTOM_GREY = "#BDBDBD"
NOT_DP_RED = "#C62828"


# --------------------------------------------------------------------------- ledger charts


#: The column a ledger or plan table names a budget by, per unit: a ρ is never in an "epsilon" column.
BUDGET_COLUMN = {"ε": "epsilon", "ρ": "rho"}


def two_way_heatmap(ut, names: list[str], title: str) -> go.Figure:
    """The Trade-offs heat map: each pair of attributes' two-way S_pMSE (mean over the sets; log scale), from
    :func:`dpcore.metrics.evaluate.release_two_way`'s scores over the release's own domain (``names``)."""
    pt = ut.per_table.copy()
    pt["a"] = pt["variables"].map(lambda v: v[0])
    pt["b"] = pt["variables"].map(lambda v: v[1])
    mean = pt.groupby(["a", "b"])["s_pmse"].mean().reset_index()
    z = np.full((len(names), len(names)), np.nan)
    for _, r in mean.iterrows():
        i, j = names.index(r["a"]), names.index(r["b"])
        z[i, j] = z[j, i] = r["s_pmse"]
    fig = go.Figure(go.Heatmap(z=np.log10(z), x=names, y=names, colorscale="Viridis", customdata=z,
                               hovertemplate="%{y} × %{x}<br>S_pMSE %{customdata:.3g}<extra></extra>",
                               colorbar=dict(title="log10 S_pMSE")))
    fig.update_layout(height=120 + 40 * len(names), margin=dict(l=10, r=10, t=50, b=10), title=title,
                      xaxis_title="attribute", yaxis_title="attribute")
    return fig


def shown_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Records as a table shows them: a missing value reads "(missing)", never a raw None or nan."""
    return df.astype(object).where(df.notna(), "(missing)")


def ledger_rows(ledger_dict: dict) -> pd.DataFrame:
    """One row per (set, charge) from Ledger.to_dict()["charges"], the budget each spent in "epsilon";
    a ledger kept in ρ (an (ε, δ) release through zCDP) gives each charge's ρ in "rho" instead."""
    rows = []
    in_rho = ledger_dict.get("unit") == "rho"
    for ch in ledger_dict.get("charges", []):
        parts = ch["path"].split("/")
        set_label = next((p for p in parts if p.startswith("set ")), "release")
        rows.append({"set": set_label, "component": ch["label"], "kind": ch.get("mechanism", ""),
                     **({"rho": ch["rho"]} if in_rho else {"epsilon": ch["epsilon"]}),
                     "mechanism": ch.get("mechanism", ""),
                     "scale": ch.get("scale"),
                     "sensitivity": ch.get("sensitivity"), "subset": ch.get("subset", "")})
    return pd.DataFrame(rows)


def ledger_figure(rows: pd.DataFrame, total: float, title: str, unit: str = "ε") -> go.Figure:
    """Stacked bars per set, one segment per charge (its name on hover), coloured by its kind (the mechanism that
    drew it, or the plan's kind): a legend of a few kinds, never one entry per charge (AIM has dozens), so it cannot
    cover the sets' labels. The budgets are read from the ``unit``'s column (:data:`BUDGET_COLUMN`)."""
    fig = go.Figure()
    kinds = list(dict.fromkeys(rows["kind"])) if len(rows) else []
    colour = {k: OKABE_ITO[i % (len(OKABE_ITO) - 1)] for i, k in enumerate(kinds)}
    shown: set[str] = set()
    for comp in (list(dict.fromkeys(rows["component"])) if len(rows) else []):
        sub = rows[rows["component"] == comp]
        kind = str(sub["kind"].iloc[0])
        fig.add_bar(x=sub["set"], y=sub[BUDGET_COLUMN[unit]], name=kind or "charge", legendgroup=kind,
                    showlegend=kind not in shown, marker_color=colour.get(kind, OKABE_ITO[0]),
                    marker_line=dict(color="white", width=0.5),
                    hovertemplate="%{x}<br>" + comp + f"<br>{unit} = " + "%{y:.4g}<extra>" + kind + "</extra>")
        shown.add(kind)
    fig.update_layout(
        barmode="stack", title=f"{title}: total {unit} = {total:.4g}", height=420, margin=dict(l=10, r=10, t=50, b=10),
        yaxis_title=f"{unit} per set (stacked)", xaxis_title=None,
        legend=dict(title="kind (hover a segment for its charge)", orientation="h", yanchor="top", y=-0.1, x=0,
                    font=dict(size=11)),
    )
    fig.update_xaxes(automargin=True, type="category")
    return fig


#: More levels than this and the one-way chart turns its level names upright, in a smaller font,
#: so that they do not run into each other (flights' 100 destinations).
MANY_LEVELS = 12


def oneway_figure(name: str, d: pd.DataFrame, levels: list[str], labels: list[str], colours: list[str],
                  n_frames: dict[str, int]) -> go.Figure:
    """Grouped bars of one attribute's share of records by level, one series per source (original,
    synthetic), with the spread over the sets as error bars where a source has several."""
    order = [lev for lev in levels if lev in set(d["level"])]
    fig = go.Figure()
    for lab, col in zip(labels, colours):
        sub = d[d["source"] == lab].set_index("level").reindex(order)
        err = None
        if n_frames.get(lab, 1) > 1:
            err = dict(type="data", symmetric=False, array=(sub["hi"] - sub["percent"]).fillna(0),
                       arrayminus=(sub["percent"] - sub["lo"]).fillna(0), color="#333333", thickness=1.2)
        fig.add_bar(x=order, y=sub["percent"], name=lab, marker_color=col, error_y=err,
                    hovertemplate=lab + "<br>%{x}: %{y:.2f} %<extra></extra>")
    many = len(order) > MANY_LEVELS
    longest = max((len(x) for x in order), default=1)
    fig.update_layout(barmode="group", height=360 + (min(longest, 30) * 5 if many else 0),
                      title=dict(text=f"{name}: share of records by level", y=0.97),
                      margin=dict(l=10, r=10, t=80, b=10),
                      legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0, font=dict(size=11)))
    fig.update_xaxes(title=None, type="category", tickangle=-90 if many else -25, automargin=True,
                     tickfont=dict(size=9 if many else 12))
    fig.update_yaxes(title="records (%)")
    return fig


# --------------------------------------------------------------------------- hierarchy chart


def icicle_figure(pv, dom: dpcore.Domain, max_nodes: int = 400) -> tuple[go.Figure, str]:
    """Icicle of the phantom-padded tree (layers capped to ``max_nodes``); phantoms grey."""
    tree = pv.tree
    names = tree.names
    ids, parents, labels, colors, hover = (["0"], [""], ["root: all records (the released record count)"], ["#DDE6EE"],
                                           ["root: the noisy record count (public n under replace-one neighbours)"])
    patterns = [""]
    shown_layers = 0
    total_nodes = 1
    note = ""
    layer_colors = ["#56B4E9", "#009E73", "#E69F00", "#CC79A7", "#0072B2", "#D55E00"]
    text_on = {"#56B4E9": "#1A1A1A", "#009E73": "#FFFFFF", "#E69F00": "#1A1A1A", "#CC79A7": "#1A1A1A",
               "#0072B2": "#FFFFFF", "#D55E00": "#FFFFFF"}
    for k in range(1, tree.L + 1):
        lay, prev = tree.layers[k], tree.layers[k - 1]
        n_new = lay.n_slots
        if total_nodes + n_new > max_nodes:
            note = (f"Showing layers 1–{shown_layers} of {tree.L} ({total_nodes:,} nodes); layer {k} has "
                    f"{lay.n_real:,} real and {lay.n_phantom:,} phantom nodes.")
            break
        fan = np.zeros(prev.n_real, dtype=int)
        for r in range(lay.n_real):
            pr = int(lay.parent_rank[r])
            fan[pr] += 1
            split_attrs = tree.split_names(int(prev.split[pr]))
            vals = [f"{a}={dom[a].labels[int(lay.fixed[r][names.index(a)])]}" for a in split_attrs]
            ids.append(f"{k}:{r}")
            parents.append(f"{k - 1}:{pr}" if k > 1 else "0")
            labels.append(", ".join(vals))
            colors.append(layer_colors[(k - 1) % len(layer_colors)])
            patterns.append("")
            hover.append(f"layer {k}: real node")
        for pr in range(prev.n_real):
            for i in range(tree.b - fan[pr]):
                ids.append(f"{k}:ph{pr}:{i}")
                parents.append(f"{k - 1}:{pr}" if k > 1 else "0")
                labels.append("phantom")
                colors.append(PHANTOM_GREY)
                patterns.append("/")
                hover.append(f"layer {k}: phantom (publicly empty, not noised, count pinned at 0)")
        total_nodes += n_new
        shown_layers = k
    else:
        if tree.has_leaf_layer:
            last = tree.layers[-1]
            if total_nodes + last.n_real <= max_nodes:
                sizes = np.diff(tree.leaf_offsets)
                for r in range(last.n_real):
                    attrs = ",".join(names[j] for j in tree.remaining[int(tree.leaf_group[r])])
                    ids.append(f"leaf:{r}")
                    parents.append(f"{tree.L}:{r}" if tree.L > 0 else "0")
                    labels.append(f"{int(sizes[r]):,} leaf cells")
                    colors.append("#F0E442")
                    patterns.append("")
                    hover.append(f"leaf layer {tree.L + 1}: cross-tabulation of {attrs}")
            else:
                note = f"Leaf layer ({tree.n_leaves:,} cells under {last.n_real:,} nodes) not drawn."
    fig = go.Figure(go.Icicle(
        ids=ids, parents=parents, labels=labels,
        marker=dict(colors=colors, line=dict(color="#555555", width=0.5),
                    pattern=dict(shape=patterns, fgcolor="#7A7A7A", size=7, solidity=0.25)),
        hovertext=hover, hovertemplate="<b>%{label}</b><br>%{hovertext}<extra></extra>", tiling=dict(orientation="v"),
        maxdepth=-1, textfont=dict(size=12, color=[text_on.get(c, "#1A1A1A") for c in colors]),
    ))
    fig.update_layout(margin=dict(l=0, r=0, t=30, b=0), height=480,
                      title="Hierarchy (top to bottom: root, layers 1…L, leaf cells). Grey = phantom")
    return fig, note



def log_ticks(lo: float, hi: float) -> list[float]:
    """Readable tick values (1, 2, 5 × 10^k) spanning [lo, hi] for a log axis."""
    if not (np.isfinite(lo) and np.isfinite(hi)) or lo <= 0 or hi <= 0:
        return []
    out = []
    steps = (1, 2, 5) if hi / lo > 10 else (1, 1.5, 2, 3, 4, 5, 7)  # within a decade: denser ticks
    for k in range(int(np.floor(np.log10(lo))) - 1, int(np.ceil(np.log10(hi))) + 1):
        out += [c * 10.0 ** k for c in steps]
    inside = [t for t in out if lo / 1.1 <= t <= hi * 1.1]
    return inside if len(inside) >= 2 else out


def colour_map(labels: list[str]) -> dict[str, str]:
    return {lab: OKABE_ITO[i % (len(OKABE_ITO) - 1)] for i, lab in enumerate(labels)}


# --------------------------------------------------------------------------- trade-off charts

#: SPECKS at or above this for every method and ε cannot rank the releases (explained on the page).
SPECKS_SATURATED = 0.95


def specks_saturated(df: pd.DataFrame) -> bool:
    """Whether every SPECKS value of a sweep is at least SPECKS_SATURATED (it cannot separate them)."""
    v = df.loc[df["measure"] == "specks", "value"].dropna()
    return bool(len(v)) and bool((v >= SPECKS_SATURATED).all())


def epsilon_ticks(eps: list[float], min_decades: float = 0.2) -> tuple[list[float], list[str]]:
    """Tick values and labels for a log ε axis, leaving out labels closer than ``min_decades`` to the
    previous labelled one (so 0.2 and 0.3 do not overlap on a half-width chart)."""
    vals, text, last = [], [], None
    for e in sorted(eps):
        vals.append(e)
        if last is None or np.log10(e) - np.log10(last) >= min_decades:
            text.append(f"{e:g}")
            last = e
        else:
            text.append("")
    return vals, text


def agg(df: pd.DataFrame, measure: str) -> pd.DataFrame:
    d = df[df["measure"] == measure]
    return d.groupby(["method", "epsilon"], sort=True)["value"].agg(["mean", "min", "max", "count"]).reset_index()


def band_figure(df: pd.DataFrame, measure: str, colours: dict) -> go.Figure | None:
    """A measure against ε, one line per method (the mean over the reps) in a band from the lowest to the
    highest rep; its title, subtitle, axis and scale from the metric registry (dpcore.metrics.registry)."""
    a = agg(df, measure)
    if a.empty or a["mean"].isna().all():
        return None
    entry = metric(measure)
    short, title, logy, subtitle = entry.label, entry.title, entry.log_scale, entry.description
    fig = go.Figure()
    for mth, d in a.groupby("method", sort=False):
        col = colours.get(mth, "#000000")
        d = d.sort_values("epsilon")
        if (d["count"] > 1).any():
            fig.add_scatter(x=list(d["epsilon"]) + list(d["epsilon"][::-1]), y=list(d["max"]) + list(d["min"][::-1]),
                            fill="toself", fillcolor=_rgba(col, 0.18), line=dict(width=0), mode="lines",
                            hoverinfo="skip", showlegend=False, legendgroup=mth)
        fig.add_scatter(x=d["epsilon"], y=d["mean"], mode="lines+markers", name=mth, legendgroup=mth,
                        line=dict(color=col, width=2.5), marker=dict(size=7),
                        hovertemplate=f"{mth}<br>ε = %{{x:g}}<br>{short} = %{{y:.4g}}<extra></extra>")
    fig.update_layout(title=dict(text=title, subtitle=dict(text=subtitle + ("; log scale" if logy else ""))),
                      height=400, margin=dict(l=10, r=10, t=70, b=10),
                      legend=dict(orientation="h", yanchor="top", y=-0.22))
    vals, text = epsilon_ticks(sorted(set(a["epsilon"])))
    fig.update_xaxes(type="log", title="privacy budget ε (log scale)", tickvals=vals, ticktext=text)
    fig.update_yaxes(type="log" if logy else "linear", title=entry.axis_title())
    if logy:
        fig.update_yaxes(tickvals=log_ticks(a["min"].min(), a["max"].max()))
    return fig


def _rgba(hex_colour: str, alpha: float) -> str:
    h = hex_colour.lstrip("#")
    return f"rgba({int(h[0:2], 16)},{int(h[2:4], 16)},{int(h[4:6], 16)},{alpha})"


def _end_label_positions(d: pd.DataFrame) -> dict:
    """Where each method's "ε=…" label goes at the smallest and the largest ε: the methods' points at that ε
    ordered by risk, the highest labelled above its point, the lowest below it, any between to the right
    and the left in turn, so the labels of nearby points do not sit on each other (or on the other dot)."""
    where = {}
    for e in (d["epsilon"].min(), d["epsilon"].max()):
        at = d[d["epsilon"] == e].sort_values("mean_r", ascending=False)["method"].tolist()
        for i, mth in enumerate(at):
            where[(mth, e)] = ("top center" if i == 0 else "bottom center" if i == len(at) - 1
                               else ("middle right", "middle left")[i % 2])
    return where


def risk_utility_figure(df: pd.DataFrame, colours: dict) -> go.Figure | None:
    """The registry's utility measure (log axis) against its risk measure (:data:`RISK_UTILITY`), one
    line per method through its ε, the smallest and largest ε written beside their points."""
    utility, risk = (metric(name) for name in RISK_UTILITY)
    u, r = agg(df, utility.name), agg(df, risk.name)
    if u.empty or r.empty:
        return None
    d = u.merge(r, on=["method", "epsilon"], suffixes=("_u", "_r"))
    fig = go.Figure()
    where = _end_label_positions(d)
    for mth, g in d.groupby("method", sort=False):
        g = g.sort_values("epsilon")
        eps = list(g["epsilon"])
        # only the smallest and largest ε are written on the chart (the rest in the hover): no overlap
        labels = [f"ε={e:g}" if i in (0, len(eps) - 1) else "" for i, e in enumerate(eps)]
        fig.add_scatter(x=g["mean_u"], y=g["mean_r"], mode="lines+markers+text", name=mth, text=labels,
                        cliponaxis=False,
                        customdata=[f"ε={e:g}" for e in eps],
                        textposition=[where.get((mth, e), "middle right") for e in eps],
                        textfont=dict(size=11, color=colours.get(mth, "#000")),
                        line=dict(color=colours.get(mth, "#000"), width=1.5, dash="dot"), marker=dict(size=9),
                        hovertemplate=f"{mth}<br>%{{customdata}}<br>{utility.symbol} %{{x:.4g}}<br>{risk.symbol} "
                                      f"%{{y:.3g}} {risk.unit}<extra></extra>")
    fig.update_layout(title=dict(text="Risk–utility trade-off", subtitle=dict(text="lower left is better")),
                      height=420, margin=dict(l=10, r=10, t=70, b=10),
                      legend=dict(orientation="h", yanchor="top", y=-0.22))
    # room around the points for their "ε=…" labels, which are drawn beside them (never clipped)
    lo, hi = np.log10(max(d["mean_u"].min(), 1e-12)), np.log10(max(d["mean_u"].max(), 1e-12))
    pad = max(0.25, 0.15 * (hi - lo))
    y_hi = float(d["mean_r"].max())
    fig.update_xaxes(type="log", title=utility.axis_title("lower = better utility"),
                     tickvals=log_ticks(d["mean_u"].min(), d["mean_u"].max()), range=[lo - pad, hi + pad])
    fig.update_yaxes(title=risk.axis_title("lower = less risk"),
                     range=[min(0.0, float(d["mean_r"].min())) - 0.08 * max(y_hi, 1e-9), 1.15 * max(y_hi, 1e-9)])
    fig.update_layout(margin=dict(l=10, r=40, t=70, b=10))
    return fig


def ci_figure(table: pd.DataFrame, title: str) -> go.Figure:
    t = table[np.isfinite(table["lo_orig"]) & np.isfinite(table["lo_syn"])].copy()
    y = list(range(len(t)))
    fig = go.Figure()
    fig.add_scatter(x=t["beta_orig"], y=[v + 0.15 for v in y], mode="markers", name="original (NOT DP)",
                    marker=dict(color="#000000", size=8),
                    error_x=dict(type="data", symmetric=False, array=t["hi_orig"] - t["beta_orig"],
                                 arrayminus=t["beta_orig"] - t["lo_orig"], color="#000000"))
    fig.add_scatter(x=t["beta_syn"], y=[v - 0.15 for v in y], mode="markers", name="synthetic (combined)",
                    marker=dict(color=OKABE_ITO[3], size=8, symbol="diamond"),
                    error_x=dict(type="data", symmetric=False, array=t["hi_syn"] - t["beta_syn"],
                                 arrayminus=t["beta_syn"] - t["lo_syn"], color=OKABE_ITO[3]))
    fig.update_yaxes(tickvals=y, ticktext=[f"{a} (overlap {o:.2f})" for a, o in zip(t["term"], t["overlap"])],
                     autorange="reversed", title=None)
    fig.update_xaxes(title="coefficient (log-odds) with 95% CI", zeroline=True, zerolinecolor="#999")
    fig.update_layout(title=title, height=140 + 28 * len(t), margin=dict(l=10, r=10, t=50, b=10),
                      legend=dict(orientation="h", yanchor="top", y=-0.12))
    return fig
