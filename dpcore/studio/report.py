"""The release report: one self-contained HTML file (and a PDF of it) for a manager or a
data-protection officer.

Contents: the privacy statement in plain words, the ledger as a chart, the method and
design, and (when the curator passes the original data) utility and risk figures:
per-attribute original-vs-synthetic bars, the two-way S_pMSE heat map, SPECKS and
replicated uniques from :mod:`dpcore.metrics`.

Privacy: the statement, the ledger, the design and the synthetic sets are what the
release published (covered by its ε, docs/privacy-model.md). Every figure computed from
the raw data is NOT DP and carries the banner :data:`RAW_BANNER` ("curator-only — NOT
DP"); a report without the original data holds no raw-data figure at all and is the
publishable default. A report WITH them says CURATOR-ONLY in its title, in a header and a
footer repeated on every printed page (and pinned to the screen), and in its file name
(:func:`report_filename`).

Offline: plotly.js is embedded once in the file (no CDN, no external script, link or
font), so the report opens without a network. Colours are the Okabe–Ito palette and the
Cividis scale, both readable with colour-vision deficiencies.
"""
from __future__ import annotations

import datetime as _dt
import html
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from dpcore.data.domain import DECLARED, DP_FOUND, EDGE_ORIGINS, Domain
from dpcore.errors import InputError

#: Okabe & Ito (2008) colour-blind safe palette; black first, for the original data.
PALETTE = ["#000000", "#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7", "#F0E442"]
#: Sequential scale designed for colour-vision deficiencies (Nuñez et al. 2018).
HEATMAP_SCALE = "Cividis"
RAW_BANNER = "CURATOR-ONLY — NOT DP: computed from the raw data; do not publish"
#: SPECKS uses the 2021 paper's pairwise-interaction model while it has at most this many
#: interaction columns, main effects beyond (the Newton fit grows with the square of the
#: columns: S7's ~600 take seconds per set); the report names the model used.
SPECKS_INTERACTION_LIMIT = 300
#: At most this many attributes get a bar chart (the rest are listed in the heat map).
MAX_BAR_CHARTS = 40

_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,'Helvetica Neue',Arial,sans-serif;margin:0 auto;
max-width:60rem;padding:1.5rem;color:#1a1a1a;line-height:1.45}
h1{font-size:1.7rem;margin-bottom:.2rem} h2{font-size:1.3rem;border-bottom:2px solid #0072B2;padding-bottom:.2rem;
margin-top:2rem} h3{font-size:1.05rem}
.meta{color:#555;font-size:.9rem}
.statement{border-left:6px solid #009E73;background:#eef7f3;padding:.8rem 1rem}
.notdp{border:3px solid #D55E00;background:#fdf0e8;color:#7a2e00;font-weight:700;padding:.7rem 1rem}
.banner{border:2px solid #D55E00;background:#fdf0e8;color:#7a2e00;font-weight:700;padding:.35rem .7rem;
margin:.6rem 0 .3rem;font-size:.9rem}
table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0} td,th{border:1px solid #ccc;padding:.25rem .5rem;
text-align:left;vertical-align:top} th{background:#f2f2f2}
figure{margin:.5rem 0 1.2rem;break-inside:avoid} .fig{width:100%}
.raw{break-inside:avoid}
@media print{.page{break-before:page} body{max-width:none;padding:0} .modebar-container{display:none}}
"""
#: The curator-only report's header and footer: fixed elements repeat on every printed page in
#: Chromium; the table's repeated thead/tfoot rows keep the page's text from running under them.
_CURATOR_CSS = """
.curator-mark{position:fixed;left:0;right:0;z-index:1000;text-align:center;font-weight:700;font-size:.8rem;
padding:.2rem .5rem;color:#7a2e00;background:#fdf0e8;border:2px solid #D55E00}
.curator-mark.top{top:0} .curator-mark.bottom{bottom:0}
table.pagebox{width:100%;border-collapse:collapse;margin:0;font-size:inherit} .pagebox>thead>tr>td,
.pagebox>tfoot>tr>td,.pagebox>tbody>tr>td{border:0;padding:0} .pagebox-space{height:2.4rem}
@page{margin:10mm 10mm}
"""
#: In the title, file name, header and footer of a report that holds the raw-data figures.
CURATOR_ONLY = "CURATOR-ONLY"
#: What a curator-only report's file name ends with (before the extension).
CURATOR_SUFFIX = f"_{CURATOR_ONLY}_NOT_DP"
CURATOR_MARK = (f"{CURATOR_ONLY} — NOT DP: this report holds figures computed from the raw data; "
                "do not publish it")


def report_filename(curator_only: bool, ext: str = "html") -> str:
    """``release_report.html`` (publishable), or ``release_report_CURATOR-ONLY_NOT_DP.html``
    for a report that holds the raw-data figures."""
    return f"release_report{CURATOR_SUFFIX if curator_only else ''}.{ext}"


# --------------------------------------------------------------------------- plain words


def epsilon_factor(epsilon: float) -> float:
    """e^ε: the most any conclusion about one person can change in likelihood."""
    return math.exp(epsilon) if epsilon < 700 else math.inf


def _given_sentence(manifest: Mapping) -> str:
    """What the guarantee is given, in plain words: the declared domain, or (a domain found privately in the
    release) only the column names and types."""
    if (manifest.get("domain") or {}).get("source") == DP_FOUND:
        return ("The guarantee is given only the public column names and types: the domain listed below (levels, "
                "bounds and bin edges) was itself found with differential privacy inside this release, charged to "
                "its ledger.")
    return ("The guarantee is given the public facts listed below (the declared domain of attribute names, levels "
            "and bin edges; edges marked as found privately were computed inside this release, charged to its "
            "ledger).")


def plain_statement(manifest: Mapping) -> list[str]:
    """The privacy statement in plain words, paragraph by paragraph, from the manifest."""
    eps = float(manifest["epsilon"])
    notion = manifest.get("neighbours", {}).get("notion", "add_remove")
    factor = epsilon_factor(eps)
    if not manifest.get("dp"):
        return [f"This release is NOT differentially private: {manifest.get('dp_reason', '')}.",
                "Do not publish it as a differentially private release; fix the cause and release again."]
    unit = manifest.get("neighbours", {}).get("privacy_unit")
    k = manifest.get("neighbours", {}).get("records_per_unit", 1)
    period = manifest.get("neighbours", {}).get("panel_time")
    kept = (f"one per {period}, released together as one wide record" if period
            else f"up to {k} per {unit} were kept")
    theirs = f"that {unit}'s records (all of them: {kept})" if unit else "that person's record"
    if notion == "replace":
        whose = (f"whatever values {theirs} hold (the number of records n is treated as public "
                 "and published exactly)")
    else:
        whose = (f"whether or not {theirs} {'are' if unit else 'is'} in the table at all (the number of records "
                 "itself is released only with noise)")
    definition = manifest.get("privacy_definition") or {}
    delta = definition.get("delta")
    described = manifest.get("neighbours", {}).get("description", notion)
    if delta is None:
        first = f"This release is differentially private with ε = {eps:g} ({described})."
        exception, adds_up = "", "Every further release of the same data spends its own ε: the guarantees add up."
    else:
        # (ε, δ) through ρ-zCDP ([privacy-definitions]): the same words plus the small chance δ the bound fails
        first = (f"This release is (ε, δ)-differentially private with ε = {eps:g} and δ = {delta:g}, through "
                 f"zero-concentrated differential privacy (ρ = {float(definition.get('rho', 0.0)):.4g}) "
                 f"({described}).")
        exception = (f", except with a probability of at most δ = {delta:g} that this bound does not hold "
                     f"(about 1 in {1 / delta:,.0f})")
        adds_up = ("Every further release of the same data spends its own budget: the budget book adds (ε, δ) "
                   "releases up in ρ and converts the total back to (ε, δ).")
    return [
        first,
        f"What this means for {'each ' + unit if unit else 'a person'} in the data: anything an observer concludes "
        f"about {'that ' + unit if unit else 'that person'} from "
        f"this release — with any background knowledge — is at most {factor:.3g} times (e^ε) more or less likely "
        f"than it would be {whose}{exception}. The smaller ε, the closer that factor is to 1 and the stronger the "
        "protection; ε = 1 gives a factor of 2.72, ε = 0.1 a factor of 1.11.",
        _given_sentence(manifest) + f" {adds_up}",
        f"Formally: {manifest.get('dp_reason', '')}.",
    ]


# --------------------------------------------------------------------------- figures


def _plotly():
    import plotly.graph_objects as go
    import plotly.io as pio

    return go, pio


def _fig_html(fig) -> str:
    """One figure's div; plotly.js itself is embedded once in the page head."""
    _, pio = _plotly()
    return pio.to_html(fig, full_html=False, include_plotlyjs=False, include_mathjax=False,
                       config={"displaylogo": False, "responsive": True})


def ledger_figure(manifest: Mapping):
    """Horizontal bars: ε of every charge in the ledger (ρ for an (ε, δ) release, whose ledger composes in
    ρ), grouped by where it was spent."""
    go, _ = _plotly()
    ledger = manifest["ledger"]
    charges = ledger["charges"]
    unit = "ρ" if ledger.get("unit") == "rho" else "ε"
    key = "rho" if unit == "ρ" else "epsilon"
    labels = [c["path"].split("/", 1)[-1] for c in charges]
    groups = [lab.split("/")[0] if "/" in lab else lab for lab in labels]
    colour = {g: PALETTE[1 + i % (len(PALETTE) - 1)] for i, g in enumerate(dict.fromkeys(groups))}
    fig = go.Figure(go.Bar(
        y=labels, x=[c[key] for c in charges], orientation="h",
        marker_color=[colour[g] for g in groups],
        hovertemplate="%{y}<br>" + unit + " = %{x:.4g}<extra></extra>",
        text=[f"{c[key]:.3g}" for c in charges], textposition="auto"))
    if unit == "ρ":
        title = (f"Where ρ went (total ρ = {ledger['rho_total']:.6g}: (ε, δ) = "
                 f"({manifest['epsilon']:g}, {ledger['delta']:g}))")
    else:
        title = f"Where ε went (total ε = {ledger['epsilon_total']:.6g}, requested {manifest['epsilon']:g})"
    fig.update_layout(title=title, height=max(260, 30 * len(charges) + 120), margin=dict(l=10, r=10, t=50, b=40),
                      xaxis_title=unit, yaxis=dict(autorange="reversed", automargin=True))
    return fig


def _binned(dom: Domain, df: pd.DataFrame) -> pd.DataFrame:
    """Each column as its domain label (numeric values as their public bin)."""
    codes = dom.encode(df[dom.names])
    return pd.DataFrame({a.name: pd.Series(np.asarray(a.labels, dtype=object)[codes[:, j]])
                         for j, a in enumerate(dom.attributes)})


def level_shares(attr, columns: Sequence[pd.Series]) -> np.ndarray:
    """The one-way shares: the percentage of records at each level of ``attr`` in each of ``columns``
    (a row per column, a column per level, in the attribute's order), by the domain's own encoding: a
    numeric value counts in its public bin, a missing value in the NA level. Read from the raw data,
    they are NOT DP (curator-only)."""
    return np.array([np.bincount(attr.encode(c), minlength=attr.size) / max(len(c), 1) * 100 for c in columns],
                    dtype=float).reshape(len(columns), attr.size)


def oneway_rows(attr, sources: Mapping[str, Sequence[pd.Series]]) -> pd.DataFrame:
    """One row per (source, level) of ``attr``: ``level``, ``source``, ``percent`` (the mean share over
    the source's columns, e.g. the m synthetic sets) and the lowest and highest share (``lo``, ``hi``),
    from :func:`level_shares`; the Release page's one-way charts draw these."""
    rows = []
    for source, columns in sources.items():
        for level, col in zip(attr.labels, level_shares(attr, columns).T):
            rows.append({"level": level, "source": source, "percent": col.mean(), "lo": col.min(), "hi": col.max()})
    return pd.DataFrame(rows, columns=["level", "source", "percent", "lo", "hi"])


def bar_figure(attr, original: pd.Series, sets: Sequence[pd.Series]):
    """Share of records per level: original (black) vs the mean of the synthetic sets, with
    whiskers from the lowest to the highest set."""
    go, _ = _plotly()
    labels = attr.labels
    o = level_shares(attr, [original])[0]
    shares = level_shares(attr, sets)
    mean = shares.mean(axis=0)
    fig = go.Figure()
    fig.add_bar(x=labels, y=o, name="original (raw data)", marker_color=PALETTE[0],
                hovertemplate="original<br>%{x}: %{y:.2f} %<extra></extra>")
    err = None
    if len(sets) > 1:
        err = dict(type="data", symmetric=False, array=shares.max(axis=0) - mean, arrayminus=mean - shares.min(axis=0),
                   color="#333333", thickness=1.2)
    fig.add_bar(x=labels, y=mean, name=f"synthetic (mean of {len(sets)} set{'s' if len(sets) > 1 else ''})",
                marker_color=PALETTE[1], error_y=err, hovertemplate="synthetic<br>%{x}: %{y:.2f} %<extra></extra>")
    fig.update_layout(barmode="group", height=330, title=f"{attr.name}: share of records by level",
                      margin=dict(l=10, r=10, t=60, b=10),
                      legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0))
    fig.update_xaxes(type="category", tickangle=-25, automargin=True)
    fig.update_yaxes(title="records (%)")
    return fig


def spmse_matrix(tables) -> pd.DataFrame:
    """Mean two-way S_pMSE over the sets as a symmetric attribute × attribute matrix."""
    per = tables.per_table.groupby("variables")["s_pmse"].mean()
    names = list(dict.fromkeys(n for pair in per.index for n in pair))
    mat = pd.DataFrame(np.nan, index=names, columns=names)
    for (a, b), v in per.items():
        mat.loc[a, b] = mat.loc[b, a] = v
    return mat


def heatmap_figure(mat: pd.DataFrame):
    go, _ = _plotly()
    fig = go.Figure(go.Heatmap(z=mat.to_numpy(), x=list(mat.columns), y=list(mat.index), colorscale=HEATMAP_SCALE,
                               colorbar=dict(title="S_pMSE"), hoverongaps=False,
                               hovertemplate="%{y} × %{x}<br>S_pMSE = %{z:.3g}<extra></extra>"))
    side = max(360, 28 * len(mat) + 160)
    fig.update_layout(title="Two-way S_pMSE per attribute pair (1 is the ideal; larger is worse)",
                      height=side, margin=dict(l=10, r=10, t=60, b=10))
    fig.update_xaxes(tickangle=-35, automargin=True)
    fig.update_yaxes(autorange="reversed", automargin=True)
    return fig


def _table_html(rows: Sequence[Mapping], columns: Sequence[str]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(_fmt(r.get(c, '')))}</td>" for c in columns) + "</tr>"
                   for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _fmt(v) -> str:
    """A value as a reader reads it: no ``None``, ``False`` or raw JSON, and small numbers without
    E-notation (``2E-5`` is written 0.00002)."""
    if v is None or (isinstance(v, str) and v == ""):
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if not math.isfinite(v):
            return str(v)
        if 1e-6 <= abs(v) < 1e-3:  # 4 significant digits of a small number, written out
            return f"{v:.{3 - math.floor(math.log10(abs(v)))}f}".rstrip("0").rstrip(".")
        if 1e4 <= abs(v) < 1e15:  # whole numbers with thousands separators
            return f"{v:,.0f}"
        text = f"{v:.4g}"
        return text.replace("e-0", "e-").replace("e+0", "e+")
    if isinstance(v, dict):
        return "; ".join(f"{k}: {_fmt(x)}" for k, x in v.items()) or "—"
    if isinstance(v, (list, tuple)):
        if v and all(isinstance(x, (list, tuple)) for x in v):  # margins (a workload): each one as a × b
            return "; ".join(" × ".join(_fmt(y) for y in x) for x in v)
        return ", ".join(_fmt(x) for x in v) or "—"
    return str(v)


def _options_rows(manifest: Mapping) -> list[dict]:
    """The method's options as the release ran them: the rounds that ran beside those planned (AIM's
    annealing ends a set early; AIM's planned T is the set's own when its rules chose it), each from the
    manifest."""
    opts = dict(manifest.get("options") or {})
    per_set = (manifest.get("diagnostics") or {}).get("per_set", [])
    ran = [p["rounds"] for p in per_set if "rounds" in p]
    planned = sorted({p["T"] for p in per_set if p.get("T")}) or [opts.get("rounds")]
    plan = "/".join(str(t) for t in planned)
    if "rounds" in opts and ran and not any(ran):
        opts["rounds"] = f"{plan if opts['rounds'] else 'rounds'} planned; none ran: the whole table was measured once"
    elif "rounds" in opts and ran:
        done = ", ".join(str(r) for r in ran)
        opts["rounds"] = (f"{plan} planned; {done} ran" + (" (per set)" if len(ran) > 1 else "")
                          + (" (the budget per round doubled when the model stopped improving, so the budget "
                             "ran out early)" if any(r not in planned for r in ran) else ""))
    return [{"option": k, "value": v} for k, v in opts.items()]


def _raw(inner: str) -> str:
    """A block computed from the raw data, under its NOT DP banner."""
    return f'<div class="raw"><div class="banner">{html.escape(RAW_BANNER)}</div>{inner}</div>'


# --------------------------------------------------------------------------- the document


def build_report_html(manifest: Mapping, sets: Sequence[pd.DataFrame], original: pd.DataFrame | None = None, *,
                      title: str | None = None, generated: str | None = None) -> str:
    """The report as one self-contained HTML string.

    ``manifest`` is a release's published manifest (``Release.manifest()`` or a
    ``manifest.json``); ``sets`` its synthetic sets; ``original`` the raw table, optional:
    with it the report adds the utility and risk figures, each under the NOT DP banner, and
    the whole report is marked CURATOR-ONLY (title, header and footer on every page).
    """
    _, pio = _plotly()
    import plotly.offline as po

    if not sets:
        raise InputError("the report needs the release's synthetic sets; none were given")
    dom = Domain.from_dict(manifest["domain"])
    if original is not None:  # a domain found privately: the source recoded to it, as the release recoded it
        from dpcore.studio.private_domain import compared_on

        dom, original = compared_on(manifest, dom, original)
    eps = float(manifest["epsilon"])
    when = generated or _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    curator_only = original is not None
    title = title or f"Release report: {manifest['method']} at ε = {eps:g}"
    if curator_only and CURATOR_ONLY not in title:
        title = f"{CURATOR_ONLY} — {title}"
    parts = [f"<h1>{html.escape(title)}</h1>",
             f'<p class="meta">Generated {html.escape(when)} by dpcore. Method {html.escape(str(manifest["method"]))}, '
             f"{len(sets)} synthetic set(s), neighbours: "
             f"{html.escape(manifest.get('neighbours', {}).get('description', ''))}.</p>"]

    dp_edges = (manifest.get("diagnostics") or {}).get("dp_bin_edges") or {}
    parts.extend(_privacy_section(manifest, dp_edges))
    parts.extend(_ledger_section(manifest))
    parts.extend(_design_section(manifest, dom, dp_edges))
    parts.extend(_utility_section(dom, original, sets))

    body = "\n".join(parts)
    css = _CSS
    if curator_only:
        body = _curator_pages(body)
        css += _CURATOR_CSS
    js = po.get_plotlyjs()
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>{html.escape(title)}</title>"
            f"<style>{css}</style><script type='text/javascript'>{js}</script></head>"
            f"<body>{body}</body></html>")


def _privacy_section(manifest: Mapping, dp_edges: Mapping) -> list[str]:
    """1. The privacy statement, what is treated as public, and the record count."""
    parts = []
    paras = plain_statement(manifest)
    box = "statement" if manifest.get("dp") else "notdp"
    parts.append('<section id="privacy"><h2>Privacy statement</h2>'
                 f'<div class="{box}">' + "".join(f"<p>{html.escape(p)}</p>" for p in paras) + "</div>")
    public = list(manifest.get("public") or [])
    if dp_edges:
        how = "; ".join(sorted({_edges_how(r, where=True) for r in dp_edges.values()}))
        public.append("except the bin edges of " + ", ".join(dp_edges) + ": those are differentially private "
                      f"outputs of this release ({how}), covered by ε and listed in the ledger")
    if public:
        parts.append("<p>Treated as public (not protected by ε):</p><ul>"
                     + "".join(f"<li>{html.escape(str(p))}</li>" for p in public) + "</ul>")
    rc = manifest.get("record_count") or {}
    if rc:
        parts.append(f"<p>Records per synthetic set: {html.escape(str(rc.get('value')))} "
                     f"({html.escape(str(rc.get('note', '')))}).</p>")
    parts.append("</section>")
    return parts


def _ledger_section(manifest: Mapping) -> list[str]:
    """2. The ledger: its chart and one row per charge."""
    charges = manifest["ledger"]["charges"]
    parts = ['<section id="ledger" class="page"><h2>Privacy budget ledger</h2>'
             "<p>Every use of the data, with the ε it cost. The charges add up to the total ε "
             "(sequential composition); the chart is covered by ε (it shows no data).</p>"]
    parts.append(f'<figure class="fig">{_fig_html(ledger_figure(manifest))}</figure>')
    parts.append(_table_html([{"where": c["path"], "mechanism": c["mechanism"], "ε": c["epsilon"],
                               "sensitivity": c["sensitivity"], "noise scale": c["scale"], "records": c["subset"],
                               "neighbours": c.get("neighbours", "")} for c in charges],
                             ["where", "mechanism", "ε", "sensitivity", "noise scale", "records", "neighbours"]))
    parts.append("</section>")
    return parts


def _spent(record: Mapping) -> str:
    """What DP bin edges cost, in the release's own unit: ε under pure DP, ρ under zCDP (an (ε, δ)
    release records its shares in ρ, since its ledger composes in ρ)."""
    if "epsilon" in record:
        return f"ε = {record['epsilon']:.4g}"
    return f"ρ = {record['rho']:.4g}" if "rho" in record else "its cost in the ledger"


def _edges_how(record: Mapping, where: bool = False) -> str:
    """How one attribute's DP bin edges were found, from its manifest record (a record written before the
    method was recorded is the quantiles', the only method then); ``where``: and inside which bounds."""
    how = "PrivTree bins" if record.get("method") == "privtree" else "exponential-mechanism quantiles"
    if not where:
        return how
    return how + (" inside DP bounds" if "bounds" in record else " inside declared public bounds")


def _design_section(manifest: Mapping, dom: Domain, dp_edges: Mapping) -> list[str]:
    """3. The method's options and the domain, with where each attribute's levels or edges came from."""
    parts = ['<section id="design" class="page"><h2>Method and design</h2>']
    parts.append(_table_html(_options_rows(manifest), ["option", "value"]))
    rows = []
    for a in dom.attributes:
        if a.kind == "numeric":
            assert a.origin is not None and a.edges is not None  # set for a numeric attribute (its __post_init__)
            src = (f"DP-derived: {_edges_how(dp_edges[a.name])}, {_spent(dp_edges[a.name])}"
                   if a.name in dp_edges else EDGE_ORIGINS[a.origin] if not a.edges_public
                   else EDGE_ORIGINS[a.origin] if dom.source in (DECLARED, DP_FOUND)
                   else "inferred domain, not declared (NOT DP)")
            vals = ", ".join(f"{e:g}" for e in a.edges)
        else:
            src = ("declared public" if dom.source == DECLARED else
                   "found with DP in the release (DP levels, or true/false from the column's type)"
                   if dom.source == DP_FOUND else "inferred from data (NOT DP)")
            vals = ", ".join(a.labels[:15]) + (" …" if a.size > 15 else "")
        rows.append({"attribute": a.name, "kind": a.kind, "levels": a.size, "NA level": a.na,
                     "levels / bin edges": vals, "source": src})
    parts.append(f"<h3>Domain ({html.escape(dom.source)})</h3>")
    parts.append(_table_html(rows, ["attribute", "kind", "levels", "NA level", "levels / bin edges", "source"]))
    parts.extend(_found_privately(manifest))
    parts.append("</section>")
    return parts


def _found_privately(manifest: Mapping) -> list[str]:
    """Which columns a release that found its domain privately found, and how well (from its noisy outputs)."""
    from dpcore.studio.private_domain import release_statuses, statuses_summary

    table = release_statuses(manifest)
    if table is None:
        return []
    return ["<h3>Found privately, column by column</h3>",
            f"<p>{html.escape(statuses_summary(manifest) or '')} From the release's own noisy outputs "
            "(post-processing, covered by ε).</p>",
            _table_html(table.to_dict("records"), list(table.columns))]


def _utility_section(dom: Domain, original: pd.DataFrame | None, sets: Sequence[pd.DataFrame]) -> list[str]:
    """4. Utility and risk, from the raw data (curator-only); without it, a note that there is none."""
    parts = ['<section id="utility" class="page"><h2>Utility and disclosure risk</h2>']
    if original is None:
        parts.append("<p>These figures compare the synthetic sets with the raw data, so they are not part of the "
                     "release. This copy of the report was made without the raw data and holds none.</p>")
    else:
        parts.extend(_raw_sections(dom, original, sets))
    parts.append("</section>")
    return parts


def _curator_pages(body: str) -> str:
    """``body`` between the CURATOR-ONLY header and footer, repeated on every printed page."""
    mark = html.escape(CURATOR_MARK)
    space = '<tr><td><div class="pagebox-space"></div></td></tr>'
    return (f'<div class="curator-mark top" role="note">{mark}</div>'
            f'<div class="curator-mark bottom" role="note">{mark}</div>'
            f'<table class="pagebox" role="presentation"><thead>{space}</thead><tfoot>{space}</tfoot>'
            f"<tbody><tr><td>{body}</td></tr></tbody></table>")


def _raw_sections(dom: Domain, original: pd.DataFrame, sets: Sequence[pd.DataFrame]) -> list[str]:
    from dpcore.metrics import disclosure, specks, utility_tables

    out = ["<p>Everything in this section reads the raw data. It is for the curator and the data-protection "
           "officer, NOT covered by ε, and must not be published with the release.</p>"]
    missing = [n for n in dom.names if n not in original.columns]
    if missing:
        raise InputError(f"the original data lacks the release's column(s) {', '.join(map(repr, missing))}; "
                         "give the table the release was made from")
    orig_b = _binned(dom, original)
    sets_b = [_binned(dom, s) for s in sets]
    # summary numbers
    rows = []
    tab = utility_tables(orig_b, sets_b, order=2) if len(dom) >= 2 else None
    dummies = [a.size - 1 for a in dom.attributes]
    pairs = sum(dummies[i] * dummies[j] for i in range(len(dummies)) for j in range(i + 1, len(dummies)))
    model = "interactions" if pairs <= SPECKS_INTERACTION_LIMIT else "main"
    sp = specks(orig_b, sets_b, model=model)
    dis = disclosure(orig_b, sets_b)
    if tab is not None:
        rows.append({"measure": "mean two-way S_pMSE", "value": tab.mean_s_pmse,
                     "reading": "1 = as good as a sample from the same population; larger is worse"})
        rows.append({"measure": "worst two-way table", "value": f"{' × '.join(tab.worst.variables)}: "
                                                                  f"{tab.worst.s_pmse:.3g}", "reading": ""})
    rows.append({"measure": f"SPECKS (KS of propensity scores, {model} model)", "value": sp.ks,
                 "reading": "0 = indistinguishable from the original, 1 = fully separable"})
    rows.append({"measure": "propensity pMSE", "value": sp.pmse, "reading": "0 is ideal"})
    rows.append({"measure": "unique records in the original (p1, %)", "value": dis.p1, "reading": ""})
    rows.append({"measure": "replicated uniques (ru, % of records)", "value": dis.ru,
                 "reading": "records unique in the original and reproduced exactly as a unique synthetic record"})
    rows.append({"measure": "replicated uniques as % of the original's uniques", "value": dis.ru_pct_of_p1,
                 "reading": ""})
    out.append("<h3>Summary</h3>" + _raw(_table_html(rows, ["measure", "value", "reading"])))
    if tab is not None:
        out.append("<h3>Two-way S_pMSE heat map</h3>"
                   + _raw(f'<figure class="fig">{_fig_html(heatmap_figure(spmse_matrix(tab)))}</figure>'))
    per_set = [{"set": r["set"], "SPECKS": r["ks"], "pMSE": r["pmse"]} for r in sp.per_set]
    out.append("<h3>SPECKS per set</h3>" + _raw(_table_html(per_set, ["set", "SPECKS", "pMSE"])))
    ru = [{"set": r.get("set", i + 1), "ru (%)": r.get("ru"), "ru as % of p1": r.get("ru_pct_of_p1")}
          for i, r in enumerate(dis.per_set)]
    out.append("<h3>Replicated uniques per set</h3>" + _raw(_table_html(ru, ["set", "ru (%)", "ru as % of p1"])))
    out.append("<h3>Original vs synthetic, attribute by attribute</h3>")
    for a in dom.attributes[:MAX_BAR_CHARTS]:
        fig = bar_figure(a, original[a.name], [s[a.name] for s in sets])
        out.append(_raw(f'<figure class="fig">{_fig_html(fig)}</figure>'))
    if len(dom) > MAX_BAR_CHARTS:
        out.append(f"<p>Bar charts shown for the first {MAX_BAR_CHARTS} of {len(dom)} attributes.</p>")
    return out


def release_report_html(release, original: pd.DataFrame | None = None, **kw) -> str:
    """:func:`build_report_html` for a :class:`~dpcore.release.Release` in memory."""
    return build_report_html(release.manifest(), release.sets, original, **kw)


def figures_html(figures: Sequence, title: str, banner: str | None = None) -> str:
    """Several plotly figures as one offline HTML page (plotly.js embedded, no CDN), with an
    optional banner above every figure (e.g. :data:`RAW_BANNER`)."""
    import plotly.offline as po

    blocks = []
    for f in figures:
        div = f'<figure class="fig">{_fig_html(f)}</figure>'
        blocks.append(f'<div class="raw"><div class="banner">{html.escape(banner)}</div>{div}</div>' if banner else div)
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>{html.escape(title)}</title><style>{_CSS}</style>"
            f"<script type='text/javascript'>{po.get_plotlyjs()}</script></head>"
            f"<body><h1>{html.escape(title)}</h1>{''.join(blocks)}</body></html>")


# --------------------------------------------------------------------------- release folders and PDF


def load_release_dir(folder) -> tuple[dict, list[pd.DataFrame]]:
    """(manifest, synthetic sets) of a folder written by ``Release.write`` / ``python -m dpcore synth``."""
    from dpcore.data.io import read_table

    d = Path(folder)
    mp = d / "manifest.json"
    if not mp.is_file():
        raise InputError(f"'{folder}' holds no manifest.json; give the folder a release "
                         "was written to (--out of synth)")
    try:
        manifest = json.loads(mp.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"'{mp}' is not a readable manifest ({exc}); write the release again") from None
    if not isinstance(manifest, dict) or not {"epsilon", "ledger", "domain", "method"} <= set(manifest):
        raise InputError(f"'{mp}' is not a dpcore release manifest (it lacks epsilon, ledger, domain or method)")
    paths = sorted(d.glob("synthetic_*.csv"),
                   key=lambda p: int(p.stem.split("_")[-1]) if p.stem.split("_")[-1].isdigit() else 0)
    if not paths:
        raise InputError(f"'{folder}' holds no synthetic_*.csv; give the folder a release was written to")
    return manifest, [read_table(p) for p in paths]
