"""Shared UI plumbing for the dashboard pages: session state, caching, guards, charts.

No algorithms here: every number shown comes from ``dpcore``. This module only
keeps per-session state (``st.session_state``; never module globals, so two
browser sessions never see each other's data), wraps dpcore calls in Streamlit
caches keyed on the data hash, the domain JSON and the options, and draws charts.

Not a page: ``app.py`` registers the pages explicitly with ``st.navigation``, so
this file is never listed in the sidebar.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import math
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import dpcore
from dpcore.errors import DPCoreError

log = logging.getLogger("dpcore.app")

ROOT = Path(__file__).resolve().parents[1]
ASSETS = ROOT / "assets"
#: Keep in step with server.maxUploadSize in .streamlit/config.toml.
MAX_UPLOAD_MB = 200

DEMOS = {
    "SD2011 S7 (Social Diagnosis 2011, 5000 × 7)": ASSETS / "sd2011_s7.csv",
    "CPS voters (Current Population Survey 1994–2018, 6231 × 10)": ASSETS / "cps_voters.csv",
}
DEFAULT_DEMO = next(iter(DEMOS))

#: Okabe–Ito colour-blind-safe palette (black last: used for "original").
OKABE_ITO = ["#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7", "#F0E442", "#000000"]
PHANTOM_GREY = "#BDBDBD"
NOT_DP_RED = "#C62828"

EPS_GRID = [0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 7.5, 10.0, 15.0, 20.0]

MODES = {
    "fixed": "Fixed order (drag attributes into layers)",
    "mosda": "Private selection: MoSDA (most informative first)",
    "lesda": "Private selection: LeSDA (least informative first)",
    "random": "Random selection (data-independent, spends nothing)",
}

DEFAULT_CFG: dict[str, Any] = {
    "mode": "mosda",
    "epsilon": 1.0,
    "L": 2,
    "m": 5,
    "r": 0.1,
    "utility": "aic",
    "allocation": "half",
    "custom_weights": [],
    "consistency": "nonneg",
    "synthesis": "sample",
    "comparators": ["flat_laplace"],
    "layers": [[], []],
    "seed": None,
    "neighbours": "add_remove",
}

NEIGHBOURS = {
    "add_remove": "Add or remove one person's record (the record count stays private)",
    "replace": "Replace one person's record (the record count n is public)",
}

UTILITY_HELP = {
    "aic": "−AIC of the attribute's one-way table at the node (2021 paper). Sensitivity 2·ln(N+1)+4, N the public "
           "bound on table size (add/remove) or n (replace).",
    "aic_gain": "AIC drop against a uniform distribution (2018 paper). Sensitivity 2·max(ln(N+1), ln K)+4.",
    "l1_uniform": "L1 distance of the node's counts from uniform. Sensitivity 2: the least noisy score.",
}


# --------------------------------------------------------------------------- guards


@contextlib.contextmanager
def guarded(what: str = "this page"):
    """Show dpcore's message for a DPCoreError, a friendly error otherwise; never a traceback.

    Streamlit's own control flow (rerun, stop, switch_page) derives from
    BaseException and passes through untouched.
    """
    try:
        yield
    except DPCoreError as exc:
        st.error(str(exc), icon=":material/warning:")
    except Exception as exc:  # noqa: BLE001 - the page must never show a traceback
        log.exception("unexpected error in %s", what)
        st.error(
            f"Something went wrong in {what} ({type(exc).__name__}: {exc}). "
            "Nothing was released. Check the inputs above, or reload the page; "
            "the full details are in the server log.",
            icon=":material/error:",
        )


def not_dp_label(text: str) -> None:
    """A red label for anything that is not covered by ε."""
    st.markdown(f":red[**{text}**]")


# --------------------------------------------------------------------------- state


def ss() -> Any:
    return st.session_state


def init_state() -> None:
    """First load of a session: the S7 demo and the default design."""
    s = st.session_state
    if "cfg" not in s:
        s["cfg"] = json.loads(json.dumps(DEFAULT_CFG))
    if "raw_df" not in s:
        try:
            load_demo(DEFAULT_DEMO)
        except DPCoreError as exc:  # assets missing: the Data page will say so
            s["load_error"] = str(exc)


def cfg() -> dict:
    return st.session_state["cfg"]


def data_hash(df: pd.DataFrame) -> str:
    h = hashlib.sha256()
    h.update("\x1f".join(map(str, df.columns)).encode())
    h.update("\x1f".join(map(str, df.dtypes)).encode())
    h.update(pd.util.hash_pandas_object(df, index=False).to_numpy().tobytes())
    return h.hexdigest()[:16]


def set_data(df: pd.DataFrame, name: str) -> None:
    """Replace the session's table; forget everything derived from the previous one."""
    s = st.session_state
    s["raw_df"] = df
    s["data_name"] = name
    s["data_key"] = data_hash(df)
    s["drop_cols"] = []
    s["numeric"] = {}
    s["domain_override"] = None
    s["domain_confirmed"] = False
    s.pop("load_error", None)
    for k in ("release", "sweep_job", "layers_items"):
        s.pop(k, None)
    c = s.get("cfg")
    if c is not None:
        c["layers"] = [[] for _ in range(max(1, int(c.get("L", 2))))]
        c["custom_weights"] = []


@st.cache_data(show_spinner=False, max_entries=8)
def _read_table_cached(path: str) -> pd.DataFrame:
    from dpcore.io import read_table

    return read_table(path)


def load_demo(name: str) -> None:
    set_data(_read_table_cached(str(DEMOS[name])), name)


def read_upload(data: bytes, name: str) -> pd.DataFrame:
    """Parse an uploaded file with dpcore.io (raises InputError with a remedy)."""
    from dpcore.io import PARQUET_SUFFIXES, read_csv_bytes, read_parquet_bytes

    if name.lower().endswith(PARQUET_SUFFIXES):
        return read_parquet_bytes(data, f"'{name}'")
    return read_csv_bytes(data, f"'{name}'")


def work_df() -> pd.DataFrame:
    s = st.session_state
    df = s["raw_df"]
    drop = [c for c in s.get("drop_cols", []) if c in df.columns]
    return df.drop(columns=drop) if drop else df


def work_key() -> str:
    s = st.session_state
    return f"{s['data_key']}|{','.join(sorted(s.get('drop_cols', [])))}"


# --------------------------------------------------------------------------- domain


@st.cache_data(show_spinner=False, max_entries=32)
def _infer_domain_json(_df: pd.DataFrame, key: str, numeric_json: str) -> str:
    return dpcore.infer_domain(_df, numeric=json.loads(numeric_json)).to_json()


@st.cache_data(show_spinner=False, max_entries=32)
def _check_domain(_df: pd.DataFrame, key: str, domain_json: str) -> str | None:
    """None if the domain covers the data, else dpcore's message naming the column."""
    try:
        dpcore.Domain.from_json(domain_json, declared=False).encode(_df)
    except DPCoreError as exc:
        return str(exc)
    return None


def current_domain() -> dpcore.Domain:
    """The domain the design and release use (raises DomainError with a remedy)."""
    s = st.session_state
    df = work_df()
    if s.get("domain_override"):
        dom = dpcore.Domain.from_json(s["domain_override"], declared=False)
        names = set(dom.names)
        cols = set(map(str, df.columns))
        if names != cols:
            extra, missing = sorted(cols - names), sorted(names - cols)
            raise dpcore.DomainError(
                "the domain does not match the table's columns"
                + (f"; not in the domain: {', '.join(extra)}" if extra else "")
                + (f"; not in the data: {', '.join(missing)}" if missing else "")
                + ". Upload a matching domain.json, drop those columns, or reset to the inferred domain"
            )
    else:
        dom = dpcore.Domain.from_json(
            _infer_domain_json(df, work_key(), json.dumps(s.get("numeric", {}), sort_keys=True)), declared=False
        )
    if s.get("domain_confirmed"):
        dom = dom.declared()
    err = _check_domain(df, work_key(), dom.to_json())
    if err:
        raise dpcore.DomainError(err)
    return dom


def domain_status() -> tuple[dpcore.Domain | None, str | None]:
    try:
        return current_domain(), None
    except DPCoreError as exc:
        return None, str(exc)
    except KeyError:
        return None, "no data loaded yet: pick a demo or upload a file on the Data page"


def need_domain() -> dpcore.Domain | None:
    """For pages after Data: the domain, or an explanation and None."""
    if "raw_df" not in st.session_state:
        st.info("No data loaded yet: pick a demo or upload a file on the **Data** page.")
        return None
    dom, err = domain_status()
    if err:
        st.error(f"The data's domain is not usable yet: {err}", icon=":material/warning:")
        st.page_link("pages/1_data.py", label="Fix it on the Data page", icon=":material/table_view:")
        return None
    return dom


# --------------------------------------------------------------------------- design → dpcore call


def layer_groups() -> list[list[str]]:
    return [list(g) for g in cfg().get("layers", [])]


def design_call(dom: dpcore.Domain) -> tuple[str, dict, list[str]]:
    """(method, options, problems) for the main release from the design settings."""
    c = cfg()
    problems: list[str] = []
    common = {"consistency": c["consistency"], "synthesis": c["synthesis"]}
    mode = c["mode"]
    if mode == "fixed":
        groups = [[a for a in g if a in dom.names] for g in layer_groups()]
        while groups and not groups[-1]:
            groups.pop()
        if not groups:
            problems.append("Drag at least one attribute into Layer 1 on the Design page (or choose private or random selection).")
        elif any(not g for g in groups):
            k = next(i for i, g in enumerate(groups, 1) if not g)
            problems.append(f"Layer {k} is empty but a later layer is not: move an attribute into Layer {k} or lower L.")
        method, opts = "steps", {"order": groups, **common}
        n_layers, leaf = len(groups), len({a for g in groups for a in g}) < len(dom)
    else:
        method = {"mosda": "steps", "lesda": "steps_lesda", "random": "uh_random"}[mode]
        opts = {"layers": int(c["L"]), **common}
        if mode == "mosda":
            opts["select"] = "mosda"
        if mode in ("mosda", "lesda"):
            opts.update(utility=c["utility"], r=float(c["r"]))
        n_layers, leaf = int(c["L"]), int(c["L"]) < len(dom)
    opts["neighbours"] = c.get("neighbours", "add_remove")
    alloc = c["allocation"]
    if alloc == "custom":
        w = normalised_weights(c.get("custom_weights", []), n_layers + int(leaf))
        if w is None:
            problems.append("Custom allocation: at least one layer weight must be above 0.")
            opts["allocation"] = "equal"
        else:
            opts["allocation"] = w
    else:
        opts["allocation"] = alloc
    return method, opts, problems


def noised_layers(dom: dpcore.Domain) -> tuple[int, bool]:
    """(partition layers, leaf layer?) of the current design, from dpcore."""
    from dpcore.synthesizers.steps import noised_layers as count

    c = cfg()
    if c["mode"] == "fixed":
        return count(0, [g for g in layer_groups() if g], len(dom))
    return count(int(c["L"]), None, len(dom))


def normalised_weights(raw: list[float], n: int) -> list[float] | None:
    w = [float(x) for x in (list(raw) + [1.0] * n)[:n]]
    total = math.fsum(w)
    if n == 0 or total <= 0:
        return None
    return [x / total for x in w]


def comparator_call(name: str, main_opts: dict, dom: dpcore.Domain | None = None) -> dict:
    """Options for a comparator: the shared ones its method accepts, else its defaults."""
    from dpcore.synthesizers import REGISTRY

    spec = REGISTRY.get(name)
    c = cfg()
    # comparators are judged under the release's own neighbour notion
    notion = {"neighbours": c.get("neighbours", "add_remove")}
    if spec is not None and getattr(spec, "hierarchical", False):
        layers = main_opts.get("layers") or len(main_opts.get("order") or []) or int(c["L"])
        opts = {"layers": int(layers), "consistency": c["consistency"], "synthesis": c["synthesis"], **notion}
        if isinstance(c["allocation"], str) and c["allocation"] != "custom":
            opts["allocation"] = c["allocation"]
        if name == "steps":
            opts.update(select="mosda", utility=c["utility"], r=float(c["r"]))
        if name == "steps_lesda":
            opts.update(utility=c["utility"], r=float(c["r"]))
        return opts
    opts = {"synthesis": c["synthesis"]}
    if spec is not None and dom is not None:
        try:  # keep the shared synthesis option only where the method has it
            spec.resolve(dom, name, **opts)
        except DPCoreError:
            return dict(notion)
    return {**opts, **notion}


def methods() -> list[str]:
    try:
        from dpcore.synthesizers import REGISTRY

        return list(REGISTRY)
    except Exception:  # noqa: BLE001
        return list(dpcore.METHODS)


def method_label(method: str, opts: dict) -> str:
    if method == "steps" and opts.get("order"):
        return "STEPS (fixed order " + " ; ".join(",".join(g) for g in opts["order"]) + ")"
    if method == "steps":
        return f"STEPS-{opts.get('layers', '')} MoSDA"
    return {"steps_lesda": "STEPS LeSDA", "uh_random": "UH random", "flat_laplace": "flat Laplace",
            "ipf": "IPF", "privbayes": "PrivBayes"}.get(method, method)


# --------------------------------------------------------------------------- cached dpcore calls


@st.cache_data(show_spinner=False, max_entries=64)
def cached_preview(_df: pd.DataFrame, key: str, domain_json: str, method: str, epsilon: float, sets: int,
                   options_json: str):
    dom = dpcore.Domain.from_json(domain_json, declared=False)
    return dpcore.preview(_df, method=method, epsilon=epsilon, sets=sets, domain=dom, **json.loads(options_json))


def preview_for_design(dom: dpcore.Domain):
    """(Preview, method, options) for the current design; raises DPCoreError."""
    method, opts, problems = design_call(dom)
    if problems:
        raise dpcore.OptionError(" ".join(problems))
    c = cfg()
    pv = cached_preview(work_df(), work_key(), dom.to_json(), method, float(c["epsilon"]), int(c["m"]),
                        json.dumps(opts, sort_keys=True))
    return pv, method, opts


def run_release(dom: dpcore.Domain, method: str, opts: dict, epsilon: float, sets: int, seed=None):
    """Spend ε: not cached, every click is a fresh release with fresh randomness."""
    return dpcore.synthesize(work_df(), method=method, epsilon=epsilon, sets=sets, seed=seed, domain=dom, **opts)


# --------------------------------------------------------------------------- ledger charts


def plan_rows(plan: dict, layer_names: list[str] | None = None) -> pd.DataFrame:
    """One row per (set, component) from Preview.plan; ``layer_names`` label the count layers."""
    rows = []
    m = int(plan["sets"])
    sel = plan.get("selection_epsilon_per_layer", [])
    cnt = plan.get("count_epsilon_per_layer", [])
    names = list(layer_names or []) + [f"layer {k}" for k in range(len(layer_names or []) + 1, len(cnt) + 1)]
    if plan.get("record_count_epsilon"):
        rows.append({"set": "all sets", "component": "noisy record count", "kind": "record count",
                     "epsilon": plan["record_count_epsilon"]})
    for s in range(1, m + 1):
        for k, e in enumerate(sel):
            rows.append({"set": f"set {s}", "component": f"tree selection, layer {k}→{k + 1}", "kind": "selection", "epsilon": e})
        for k, e in enumerate(cnt):
            rows.append({"set": f"set {s}", "component": f"counts, {names[k]}", "kind": "counts", "epsilon": e})
    return pd.DataFrame(rows)


def preview_layer_names(pv) -> list[str]:
    """'layer k' for partition layers, 'leaf cells' for the leaf layer (from Preview.layers)."""
    return ["leaf cells" if str(a).startswith("leaf cells") else f"layer {k}"
            for k, a in zip(pv.layers["layer"], pv.layers["attributes"])]


def ledger_rows(ledger_dict: dict) -> pd.DataFrame:
    """One row per (set, charge) from Ledger.to_dict()["charges"]."""
    rows = []
    for ch in ledger_dict.get("charges", []):
        parts = ch["path"].split("/")
        set_label = next((p for p in parts if p.startswith("set ")), "release")
        rows.append({"set": set_label, "component": ch["label"], "kind": ch.get("mechanism", ""),
                     "epsilon": ch["epsilon"], "mechanism": ch.get("mechanism", ""), "scale": ch.get("scale"),
                     "sensitivity": ch.get("sensitivity"), "subset": ch.get("subset", "")})
    return pd.DataFrame(rows)


def ledger_figure(rows: pd.DataFrame, total: float, title: str) -> go.Figure:
    fig = go.Figure()
    comps = list(dict.fromkeys(rows["component"])) if len(rows) else []
    for i, comp in enumerate(comps):
        sub = rows[rows["component"] == comp]
        fig.add_bar(x=sub["set"], y=sub["epsilon"], name=comp, marker_color=OKABE_ITO[i % (len(OKABE_ITO) - 1)],
                    hovertemplate="%{x}<br>" + comp + "<br>ε = %{y:.4g}<extra></extra>")
    fig.update_layout(
        barmode="stack", title=f"{title}: total ε = {total:g}", height=400, margin=dict(l=10, r=10, t=50, b=10),
        yaxis_title="ε per set (stacked)", xaxis_title=None,
        legend=dict(orientation="h", yanchor="top", y=-0.12, x=0, traceorder="normal", font=dict(size=11)),
    )
    return fig


# --------------------------------------------------------------------------- hierarchy chart


def icicle_figure(pv, dom: dpcore.Domain, max_nodes: int = 400) -> tuple[go.Figure, str]:
    """Icicle of the phantom-padded tree (layers capped to ``max_nodes``); phantoms grey."""
    tree = pv.tree
    names = tree.names
    ids, parents, labels, colors, hover = ["0"], [""], ["root: all records (the released record count)"], ["#DDE6EE"], ["root: the noisy record count (public n under replace-one neighbours)"]
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


# --------------------------------------------------------------------------- release outputs


def release_zip(release) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for i, s in enumerate(release.sets, 1):
            z.writestr(f"synthetic_{i}.csv", s.to_csv(index=False))
        z.writestr("manifest.json", release.manifest_json())
    return buf.getvalue()



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
