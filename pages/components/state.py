"""Session state and data handling of the dashboard: the table, the domain, the design,
and the dpcore calls behind Streamlit caches. No widgets are drawn here except the
"load a table first" notices of :func:`need_domain`.

State lives in ``st.session_state`` (never module globals), so two browser sessions never
see each other's data.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

import dpcore
from dpcore.api import planned_delta_approx
from dpcore.data.domain import DECLARED, DP_FOUND, FOUND_IN_RELEASE
from dpcore.data.inference import data_range_attribute
from dpcore.errors import DPCoreError
from dpcore.previews import ReleaseDesign, domain_shares
from dpcore.studio import adviser, design
from pages.components import schema_state
from pages.components.schema_state import declared_schema

log = logging.getLogger("dpcore.app")


ROOT = Path(__file__).resolve().parents[2]  # the repository (pages/components/state.py)
ASSETS = ROOT / "assets"
#: Keep in step with server.maxUploadSize in .streamlit/config.toml.
MAX_UPLOAD_MB = 200

DEMOS = {
    "SD2011 S7 (Social Diagnosis 2011, 5000 × 7)": ASSETS / "sd2011_s7.csv",
    "CPS voters (Current Population Survey 1994–2018, 6231 × 10)": ASSETS / "cps_voters.csv",
}
DEFAULT_DEMO = next(iter(DEMOS))

MODES = {
    "fixed": "Fixed order (drag attributes into layers)",
    "mosda": "Private selection: MoSDA (most informative first)",
    "lesda": "Private selection: LeSDA (least informative first)",
    "random": "Random selection (data-independent, spends nothing)",
}

#: The design a new session starts from (dpcore.studio.design: one default per option, from the schemas).
DEFAULT_CFG: dict[str, Any] = design.new_design()

#: The methods a curator can release with, as the Design page lists them: the adviser's pick for the
#: table first ("auto", decided from public facts only), then each method of the registry by name
#: (dpcore.studio.adviser.MENU: a STEPS variant is chosen by the tree selection). What each does and its
#: predicted error on this table come from dpcore.studio.adviser.
RELEASE_METHODS = {"auto": "Recommended for this table", **adviser.NAMES_OFFERED}

NEIGHBOURS = {
    "add_remove": "Add or remove one person's record (the record count stays private)",
    "replace": "Replace one person's record (the record count n is public)",
}

#: The ε values the Design page's slider and the Trade-offs page's sweep offer.
EPS_GRID = [0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 7.5, 10.0, 15.0, 20.0]


# --------------------------------------------------------------------------- state


def ss() -> Any:
    return st.session_state


def cfg() -> dict:
    return st.session_state["cfg"]


def data_hash(df: pd.DataFrame) -> str:
    h = hashlib.sha256()
    h.update("\x1f".join(map(str, df.columns)).encode())
    h.update("\x1f".join(map(str, df.dtypes)).encode())
    h.update(pd.util.hash_pandas_object(df, index=False).to_numpy().tobytes())
    return h.hexdigest()[:16]


def numeric_key(kind: str, col: str) -> str:
    """The key of a Numeric-columns widget of ``col``: keyed by the table, so bounds typed for one
    table never show up for a column of the same name in another."""
    return f"w_{kind}_{col}@{st.session_state.get('data_key', '')}"


def reset_data(df: pd.DataFrame, name: str) -> None:
    """Replace the session's table; forget everything derived from the previous one (the workspace is
    told by :func:`pages.components.session.set_data`, which calls this). The numeric columns' widgets start
    empty: their keys name the table, and the old ones are dropped too."""
    s = st.session_state
    for k in [k for k in s.keys() if isinstance(k, str) and k.startswith("w_") and "@" in k]:
        del s[k]
    s["raw_df"] = df
    s["data_name"] = name
    s["data_key"] = data_hash(df)
    s["drop_cols"] = []
    s["numeric"] = {}
    s["domain_override"] = None
    s["domain_confirmed"] = False
    s["recodes"] = {}
    s["dp_bins"] = {}
    s["schema"] = None  # the new table's types: the reader's proposal until the curator confirms them
    s.pop("load_error", None)
    for k in ("release", "sweep_job", "layers_items", "_release_notice", "w_sw_methods"):
        s.pop(k, None)
    c = s.get("cfg")
    if c is not None:
        c["layers"] = [[] for _ in range(max(1, int(c.get("L", 2))))]
        c["custom_weights"] = []
        c["dp_domain"] = False  # each table's domain is decided on its own Data page
        forget_unit(c)  # and its privacy unit: a column of the previous table, K the curator gave for it


@st.cache_data(show_spinner=False, max_entries=8)
def read_table_cached(path: str) -> pd.DataFrame:
    """:func:`dpcore.data.io.read_table` of a server file, cached per path (``.clear()`` empties it)."""
    from dpcore.data.io import read_table

    return read_table(path)


def read_upload(data: bytes, name: str) -> pd.DataFrame:
    """Parse an uploaded file with dpcore.data.io (raises InputError with a remedy)."""
    from dpcore.data.io import read_bytes

    return read_bytes(data, name)


def work_df() -> pd.DataFrame:
    """The table the design releases: without the dropped columns, cast to the declared column types once the
    curator confirmed them (:func:`declared_schema`), with the domain editor's recodes."""
    s = st.session_state
    df = s["raw_df"]
    drop = [c for c in s.get("drop_cols", []) if c in df.columns]
    df = df.drop(columns=drop) if drop else df
    if declared_schema() is not None:
        df = schema_state.conformed(df)[0]
    if s.get("recodes"):  # the domain editor's explicit renames and merges (dpcore.data.editing)
        from dpcore.data.editing import apply_recodes

        df = apply_recodes(df, s["recodes"])
    return df


def unit_column() -> str | None:
    """The design's privacy unit when it is a column of the table in use (not dropped), else None: that column is
    never released, so it is not part of the domain (:func:`domain_df`)."""
    column = cfg().get("privacy_unit")
    return column if column and column in map(str, work_df().columns) else None


def domain_df() -> pd.DataFrame:
    """The table the domain describes: :func:`work_df` without the privacy unit's identifier (the release drops it
    before anything is read). Releases and previews get :func:`work_df`, identifier included: they bound each
    unit's records by it."""
    df, unit = work_df(), unit_column()
    return df.drop(columns=[unit]) if unit else df


def domain_key() -> str:
    """:func:`work_key`, and the privacy unit's column when the domain leaves it out."""
    unit = unit_column()
    return work_key() + (f"|unit={unit}" if unit else "")


def forget_unit(c: dict | None = None) -> None:
    """Back to one record as the privacy unit (a new table, or its identifier dropped)."""
    c = cfg() if c is None else c
    c.update(privacy_unit=None, records_per_unit=None, panel_time=None, panel_wide=False)


def set_unit(column: str | None) -> None:
    """Make ``column`` (None: one record) the privacy unit; K is the curator's, kept. The identifier leaves the
    domain (a declared domain stays declared without it); back to one record, it returns to the domain, which
    must then be confirmed again (an edited or uploaded domain without it is inferred again)."""
    s = st.session_state
    before = unit_column()
    if (column or None) == cfg().get("privacy_unit"):
        return
    cfg()["privacy_unit"] = column or None
    cfg().update(panel_time=None if cfg().get("panel_time") == column else cfg().get("panel_time"))
    if before and before != column:  # the old identifier is back in the domain's columns
        override = s.get("domain_override")
        if override and before not in dpcore.Domain.from_json(override, declared=False).names:
            s["domain_override"] = None
        s["domain_confirmed"] = False
    if not column:
        cfg().update(panel_time=None, panel_wide=False)


def set_drops(drop: list[str]) -> None:
    """Drop ``drop`` (the Data page's multiselect): the domain is inferred again; dropping the privacy unit's
    identifier forgets the unit (a dropped column protects nobody)."""
    s = st.session_state
    s["drop_cols"] = drop
    s["domain_override"] = None
    s["domain_confirmed"] = False
    s.pop("release", None)
    if cfg().get("privacy_unit") in drop:
        forget_unit()
    if cfg().get("panel_time") in drop:
        cfg().update(panel_time=None, panel_wide=False)


def work_key() -> str:
    s = st.session_state
    key = f"{s['data_key']}|{','.join(sorted(s.get('drop_cols', [])))}"
    declared = declared_schema()
    if declared is not None:  # the table cast to the declared types is another table
        key += "|types=" + hashlib.sha256(declared.to_json().encode()).hexdigest()[:12]
    if s.get("recodes"):
        from dpcore.data.editing import recodes_to_json

        key += "|" + hashlib.sha256(recodes_to_json(s["recodes"]).encode()).hexdigest()[:12]
    return key


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
    df, unit = domain_df(), unit_column()
    if s.get("domain_override"):
        dom = dpcore.Domain.from_json(s["domain_override"], declared=False)
        if unit in dom.names:  # a domain file written for the whole table: the identifier is never released
            dom = dom.project([n for n in dom.names if n != unit])
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
        numeric = {c: v for c, v in (s.get("numeric") or {}).items() if c != unit}
        dom = dpcore.Domain.from_json(
            _infer_domain_json(df, domain_key(), json.dumps(numeric, sort_keys=True)), declared=False
        )
    private = design.private_numeric(s.get("dp_bins"))
    if private:
        dom = _private_placeholders(dom, df, private)
    if s.get("domain_confirmed"):
        if [a for a in dom.not_public if a.name not in private]:
            # edges read from the data can never be declared (a confirmation saved before this rule)
            s["domain_confirmed"] = False
        else:  # declared; a column found privately keeps its placeholder until the release replaces it
            dom = dpcore.Domain(dom.attributes, DECLARED)
    err = _check_domain(df, domain_key(), dom.to_json())
    if err:
        raise dpcore.DomainError(err)
    return dom


def _private_placeholders(dom: dpcore.Domain, df: pd.DataFrame, private: dict) -> dpcore.Domain:
    """The columns whose bounds and bins the release finds privately hold, until then, k equal bins
    over the data's own range: a curator-only placeholder (origin "data_range", never public) for the
    preview, which the release replaces before it reads anything else."""
    attrs = list(dom.attributes)
    for col, spec in private.items():
        if col in dom.names and col in df.columns:
            s = df[col]
            attrs[dom.index(col)] = data_range_attribute(col, s.min(), s.max(), int(spec["bins"]),
                                                         bool(s.isna().any()), str(s.dtype))
    return dpcore.Domain(tuple(attrs), dom.source)


def is_declared(dom: dpcore.Domain) -> bool:
    """Whether the curator declared the domain: confirmed, every bin edge public except those of the
    columns the release finds privately (their placeholders are replaced before anything is read)."""
    private = design.private_numeric(st.session_state.get("dp_bins"))
    return dom.source == DECLARED and all(a.name in private for a in dom.not_public)


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


def release_schema():
    """The types a release that finds its domain privately is given, for the columns it releases (:func:`work_df`):
    declared once confirmed; else the proposal, and the library labels that release NOT DP."""
    return schema_state.table_schema().project([str(c) for c in work_df().columns])


def layer_groups() -> list[list[str]]:
    return [list(g) for g in cfg().get("layers", [])]


def design_call(dom: dpcore.Domain) -> tuple[str, dict, list[str]]:
    """(method, options, problems) for the release from the design settings (dpcore.studio.design), the privacy
    unit's problems included (a column the table lacks, K missing or not a whole number)."""
    method, opts, problems = design.design_call(cfg(), dom, resolved_method(dom))
    return method, opts, problems + design.unit_problems(cfg(), work_df().columns, dom)


def resolved_method(dom: dpcore.Domain) -> str:
    """The design's release method; for "auto", the adviser's pick for this table (predicted from public
    facts only: the domain's levels, ε, δ, m and a public n, so the choice does not use the data), among
    the methods whose preview passes; the first of the menu when none does (its preview then says why)."""
    c = cfg()
    method = c.get("release_method") or "auto"
    if method != "auto":
        return method
    return design_advice(dom).recommended or adviser.MENU[0]


def public_record_count() -> tuple[float | None, str]:
    """(n, where it comes from) for the adviser's predictions: public figures only. The noisy count of this
    table's last release (public once released: this session's, else the budget book's, whoever released it);
    n under replace-one neighbours (public by the notion);
    the figure the curator states on the Design page; else None (the adviser then averages over n)."""
    s = st.session_state
    rel = s.get("release")
    if rel and rel.get("key") == work_key() and rel.get("main") is not None:
        rc = rel["main"].record_count or {}
        if rc.get("noisy"):
            return float(rc["value"]), "the noisy record count of your last release of this table (public)"
    ws, fp = s.get("_ws"), s.get("table_fp")  # the session's workspace (components.workspace.current)
    published = ws.book.public_record_count(fp) if ws is not None and fp else None
    if published is not None:
        return published, "the record count your last release of this table published (public; the budget book)"
    if cfg().get("neighbours") == "replace":
        return float(len(work_df())), "the table's record count (public under replace-one neighbours)"
    given = s["w_adviser_n"] if "w_adviser_n" in s else s.get("adviser_n")  # the widget's value is the latest
    if given:
        return float(given), "the figure you gave as public on the Design page"
    return None, ""


def _design_epsilon_sets_delta() -> tuple[float, int, float | None]:
    c = cfg()
    eps = float(c["epsilon"]) if valid_epsilon(c.get("epsilon")) else 1.0  # an invalid ε is refused elsewhere
    delta = float(c.get("delta") or design.DEFAULT_DESIGN["delta"]) if c.get("definition") == "zcdp" else None
    return eps, max(1, int(c.get("m") or 1)), delta


@st.cache_data(show_spinner=False, max_entries=16)
def _advice(_df: pd.DataFrame, key: str, domain_json: str, epsilon: float, sets: int, delta: float | None,
            neighbours: str, options_json: str, public_n: float | None, public_n_source: str, n: float | None,
            n_source: str, curator_only: bool, first_json: str) -> adviser.Advice:
    dom = dpcore.Domain.from_json(domain_json)
    options, first = json.loads(options_json), json.loads(first_json)

    def check(method: str, opts: dict) -> None:  # the method's own preview: spends nothing, releases nothing
        dpcore.preview(_df, method=method, epsilon=epsilon, sets=sets, domain=dom, **opts, **first)

    return adviser.advise(dom, epsilon, sets, delta=delta, public_n=public_n, public_n_source=public_n_source, n=n,
                          n_source=n_source, curator_only=curator_only, neighbours=neighbours, options=options,
                          check=check, domain_first=first)


def design_advice(dom: dpcore.Domain, n: tuple | None = None, *, epsilon: float | None = None,
                  sets: int | None = None) -> adviser.Advice:
    """The adviser's answer for the current design (cached): every method previewed with the options the
    design gives it (dpcore.studio.design.advised_options). ``n``: (n, source, curator-only?) for the
    noise figures beside the predictions (none when not given); ``epsilon``, ``sets``: another ε or m than
    the design's (the Trade-offs sweep's)."""
    c = cfg()
    eps, m, delta = _design_epsilon_sets_delta()
    eps, sets = (eps if epsilon is None else float(epsilon)), (m if sets is None else int(sets))
    options = {m: design.advised_options(c, dom, m) for m in adviser.METHODS}
    public_n, public_source = public_record_count()
    n_value, n_source, curator_only = n if n is not None else (None, "", False)
    # every method as the release would spend: its domain first (the figures' domain, the design's share)
    privacy = {**design.unit_options(c), **({"delta": delta} if delta is not None else {})}
    first = release_design(dom, adviser.MENU[0], privacy).domain_keywords()
    return _advice(work_df(), work_key(), figures_domain(dom).to_json(), eps, sets, delta,
                   c.get("neighbours", "add_remove"), json.dumps(options, sort_keys=True, default=str), public_n,
                   public_source, n_value, n_source, curator_only, json.dumps(first, sort_keys=True))


def valid_epsilon(v) -> bool:
    """Whether ``v`` is an ε a release accepts (dpcore.privacy.ledger.check_epsilon), without raising."""
    from dpcore.privacy.ledger import check_epsilon

    try:
        check_epsilon(v)
        return True
    except DPCoreError:
        return False


def noised_layers(dom: dpcore.Domain) -> tuple[int, bool]:
    """(partition layers, leaf layer?) of the current design, from dpcore."""
    from dpcore.synthesizers.steps import noised_layers as count

    c = cfg()
    if c["mode"] == "fixed":
        return count(0, [g for g in layer_groups() if g], len(dom))
    return count(int(c["L"]), None, len(dom))


normalised_weights = design.normalised_weights


method_label = design.method_label


# --------------------------------------------------------------------------- cached dpcore calls


@st.cache_data(show_spinner=False, max_entries=64)
def cached_preview(_df: pd.DataFrame, key: str, domain_json: str, method: str, epsilon: float, sets: int,
                   options_json: str):
    # the domain's own source: one a release found privately stays so (the preview reads the records as it did)
    dom = dpcore.Domain.from_json(domain_json)
    return dpcore.preview(_df, method=method, epsilon=epsilon, sets=sets, domain=dom, **json.loads(options_json))


def preview_for_design(dom: dpcore.Domain):
    """(Preview, method, options) for the current design, over :func:`figures_domain` and spending on the domain
    first what the release would (:func:`release_design`); raises DPCoreError."""
    method, opts, problems = design_call(dom)
    if problems:
        raise dpcore.OptionError(" ".join(problems))
    c = cfg()
    first = release_design(dom, method, opts).domain_keywords()
    pv = cached_preview(work_df(), work_key(), figures_domain(dom).to_json(), method, float(c["epsilon"]),
                        int(c["m"]), json.dumps({**opts, **first}, sort_keys=True))
    return pv, method, opts


def release_design(dom: dpcore.Domain, method: str, opts: dict) -> ReleaseDesign:
    """The design of the release :func:`release_call` would make (the same keywords): what every planned figure
    is computed from (dpcore.previews.plan_release). When :func:`figures_domain` reads this table's last release
    and it was made at this ε and δ with this share, the share spent on its domain is what its ledger charged."""
    c = cfg()
    domain, extra = design.release_domain_call(c, dom, st.session_state.get("dp_bins"),
                                               st.session_state.get("bins_share"))
    call = dict(opts, **extra)
    out = ReleaseDesign.of_call(method, float(c["epsilon"]) if valid_epsilon(c.get("epsilon")) else 1.0,
                                sets=int(c["m"]), domain=domain, levels_delta=_delta_approx(domain, call), **call)
    made = last_release_manifest()
    if made is not None and out.domain_share and figures_domain(dom) is not dom and (
            float(made["epsilon"]), made.get("privacy_definition", {}).get("delta")) == (out.epsilon, out.delta):
        asked, charged = domain_shares(made)  # the domain is found before the method runs: any method's figures
        if math.isclose(asked, out.domain_share, rel_tol=1e-9):
            out = dataclasses.replace(out, domain_share=charged)
    return out


def _delta_approx(domain, call: dict) -> float:
    """The part of δ the release spends outside ρ (dpcore.api.planned_delta_approx), the identifier left out."""
    if call.get("delta") is None or not isinstance(domain, str):
        return 0.0  # only a domain found privately under (ε, δ) spends δ outside ρ
    schema = release_schema().to_dict()  # the types the release is given
    # it casts and reads the whole table: once per table and design, not on every run of a page that shows figures
    key = json.dumps([work_key(), domain, schema, call.get("delta"), call.get("domain_share"),
                      call.get("domain_bins"), call.get("privacy_unit")], sort_keys=True, default=str)
    memo = st.session_state.setdefault("_delta_approx_memo", {})
    if key not in memo:
        memo.clear()  # one design at a time
        memo[key] = planned_delta_approx(work_df(), domain, call.get("delta"), call.get("domain_share"),
                                         call.get("domain_bins"), schema=schema, privacy_unit=call.get("privacy_unit"))
    return memo[key]


def last_release_manifest() -> dict | None:
    """The published manifest of this table's last release in the session (None when there is none)."""
    rel = st.session_state.get("release")
    if not rel or rel.get("key") != work_key() or rel.get("main") is None:
        return None
    if "manifest" not in rel:  # read once per release (every planned figure asks for its domain)
        rel["manifest"] = rel["main"].manifest()
    return rel["manifest"]


def figures_domain(dom: dpcore.Domain) -> dpcore.Domain:
    """The domain the planned figures (preview, noise check, adviser, planned ledger) are computed over: ``dom``,
    or, when this table's last release found part of it privately and the design still does, that release's own
    (its manifest's): the whole domain (domain="dp"), or the bins of the columns it found, in place of their
    placeholders. Public once released; before a release the placeholders stand in (curator-only)."""
    made = last_release_manifest()
    if made is None:
        return dom
    found = dpcore.Domain.from_dict(made["domain"])
    if set(found.names) != set(dom.names):
        return dom
    if design.finds_domain_privately(cfg()):
        return found if found.source == DP_FOUND else dom
    private = set(dp_bins_options(dom).get("dp_bins") or {})
    swap = {a.name for a in found.attributes if a.name in private and a.origin in FOUND_IN_RELEASE}
    if not swap:
        return dom
    return dpcore.Domain(tuple(found[a.name] if a.name in swap else a for a in dom.attributes), dom.source)


def is_margin_preview(pv) -> bool:
    return isinstance(pv, dpcore.MarginPreview)


def release_call(dom: dpcore.Domain, method: str, opts: dict, epsilon: float, sets: int, seed=None):
    """``run(progress=None)``: the release of the current table, named for its manifest. It reads the
    session now, so a job thread may call it later (pages/components/jobs.py records it in the budget book)."""
    df = work_df()
    s = st.session_state
    domain, extra = design.release_domain_call(cfg(), dom, s.get("dp_bins"), s.get("bins_share"))
    opts = dict(opts, **extra)
    # the types are public: declared once the curator confirmed them, else the proposal (the release is then NOT DP)
    schema = release_schema().to_dict() if isinstance(domain, str) else None
    name, fp = s.get("data_name"), s.get("table_fp")

    def run(progress=None):
        return dpcore.synthesize(df, method=method, epsilon=epsilon, sets=sets, seed=seed, domain=domain,
                                 progress=progress, schema=schema, **opts).for_table(name, fp)

    # the part of δ the release spends outside ρ (levels found privately): the book reserves exactly its cost
    run.delta_approx = _delta_approx(domain, opts)  # type: ignore[attr-defined]
    return run


def dp_bins_options(dom: dpcore.Domain) -> dict:
    """dp_bins/bins_share for synthesize (dpcore.studio.design.release_domain_call): DP quantile
    edges from the domain editor while the domain holds their placeholder edges, and the numeric
    columns found privately."""
    s = st.session_state
    return design.release_domain_call({}, dom, s.get("dp_bins"), s.get("bins_share"))[1]


# --------------------------------------------------------------------------- release outputs


release_zip = design.release_zip



