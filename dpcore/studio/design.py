"""A release design, as the Design page edits it, and the dpcore call it stands for.

A design is a JSON-ready dict (the app keeps it in its session and the workspace saves it): the
release method (or ``"auto"``, the adviser's pick from public facts), ε, m, the neighbour notion,
the privacy definition (pure ε, or (ε, δ) through zCDP with ``delta``), STEPS's hierarchy (how the
tree is chosen, its layers, the allocation) and, under ``"options"``, each method's other options
by name as its schema declares them (:mod:`dpcore.synthesizers.schema`). :func:`design_call`
turns it into ``(method, options, problems)`` for :func:`dpcore.synthesize`; nothing here reads
data or spends budget.
"""
from __future__ import annotations

import copy
import io
import math
import re
import zipfile
from typing import Any

from dpcore.measure.dp_domain import DEFAULT_BIN_METHOD, DEFAULT_DOMAIN_SHARE, check_bin_method
from dpcore.measure.quantiles import DEFAULT_BINS_SHARE, QUANTILES
from dpcore.synthesizers import REGISTRY
from dpcore.synthesizers.schema import find

#: STEPS options the Design page edits with its own hierarchy controls (the drag-and-drop layers,
#: the selection mode, the allocation); every other option is a widget built from the schema
HIERARCHY_OPTIONS = ("layers", "order", "select", "r", "allocation")

DEFAULT_DESIGN: dict[str, Any] = {
    "release_method": "auto",  # the adviser's pick for the table (dpcore.studio.adviser)
    "epsilon": 1.0,
    "m": 1,  # one set: the whole budget on it (the command line's and the adviser's default too)
    "neighbours": "add_remove",
    "definition": "pure",  # or "zcdp": (ε, δ) through zero-concentrated DP, with "delta"
    "delta": 1e-9,
    "seed": None,
    # STEPS's hierarchy
    "mode": "mosda",
    "L": 2,
    "r": 0.1,
    "layers": [[], []],
    "allocation": "half",
    "custom_weights": [],
    # each method's other options, by name (absent: the schema's default)
    "options": {},
    # the whole domain (levels, bounds, bins) found privately at release, under (ε, δ) only
    "dp_domain": False,
    "domain_share": DEFAULT_DOMAIN_SHARE,
    # how its numeric columns are binned inside their DP bounds: "privtree" or "quantiles" (domain_bins)
    "domain_bins": DEFAULT_BIN_METHOD,
    # the privacy unit (the Data page): None protects one record; a column protects each of its values with all of
    # its records, at most records_per_unit (K: the curator's public figure, never read from the data) kept each;
    # panel_time, the panel's public time column the curator names, and panel_wide: release the panel wide
    "privacy_unit": None,
    "records_per_unit": None,
    "panel_time": None,
    "panel_wide": False,
}


#: The selection modes of STEPS's hierarchy and the method each stands for.
MODE_METHOD = {"mosda": "steps", "lesda": "steps_lesda", "random": "uh_random", "fixed": "steps"}


def tree_method(mode: str | None) -> str:
    """The hierarchical method a hierarchy mode stands for (MoSDA when the mode is unknown)."""
    return MODE_METHOD.get(mode or "mosda", MODE_METHOD["mosda"])


def tree_options() -> tuple:
    """The options schema of the hierarchical method (STEPS and its variants share it)."""
    from dpcore.synthesizers import REGISTRY

    return REGISTRY[MODE_METHOD["mosda"]].options

#: Keys of designs saved before the options schema, and where each went: (method, "*" for every
#: method that has the option, or a test of the method's option; option name). ``aim_rounds`` 0 meant "the default".
_OLD_KEYS = {"ipf_margins": ("ipf", "margins"), "ipf_one_way_share": ("ipf", "one_way_share"),
             "prior": ("*", "prior"), "degree": ("privbayes", "degree"), "aim_rounds": ("aim", "rounds"),
             "aim_max_model_size": ("aim", "max_model_size"), "aim_workload": ("aim", "workload"),
             "utility": ("*", "utility"), "consistency": ("*", "consistency"),
             # the flat key predates AIM's and MST's synthesis option (auto): it was the choice of the methods
             # whose option still offers exactly sample or round (the count methods)
             "synthesis": (lambda option: tuple(option.choices) == ("sample", "round"), "synthesis")}


def new_design() -> dict:
    return copy.deepcopy(DEFAULT_DESIGN)


def migrate(design: dict) -> dict:
    """A saved or imported design in today's form: defaults filled in, old flat option keys moved under
    ``"options"`` (so every workspace saved before keeps its choices)."""
    out = {**new_design(), **copy.deepcopy(design)}
    options = out.setdefault("options", {})
    for key, (method, name) in _OLD_KEYS.items():
        if key not in design:
            continue
        value = design[key]
        if key == "aim_rounds" and not value:
            continue
        if key in ("ipf_margins", "aim_workload") and value in ("twoway", "", None):
            continue
        for m, spec in REGISTRY.items():
            option = next((o for o in spec.options if o.name == name), None)
            takes = method(option) if callable(method) and option is not None else method in ("*", m)
            if option is not None and takes:
                options.setdefault(m, {}).setdefault(name, value)
        out.pop(key, None)
    out.pop("comparators", None)  # comparator releases left the Release page ([honest-flow])
    return out


def option_value(design: dict, method: str, name: str):
    """The design's value of ``method``'s option ``name``, or the schema's default."""
    given = design.get("options", {}).get(method, {})
    return given[name] if name in given else find(REGISTRY[method].options, name).default


def set_option(design: dict, method: str, name: str, value) -> None:
    """Set an option; setting it back to its default removes it (the design says only what was chosen)."""
    opts = design.setdefault("options", {}).setdefault(method, {})
    if value == find(REGISTRY[method].options, name).default:
        opts.pop(name, None)
    else:
        opts[name] = value


def _privacy_options(design: dict) -> dict:
    """The neighbour notion, the privacy unit (:func:`unit_options`) and, for an (ε, δ) design, δ: the options
    every release takes."""
    out = {"neighbours": design.get("neighbours", "add_remove"), **unit_options(design)}
    if design.get("definition") == "zcdp":
        out["delta"] = float(design.get("delta") or DEFAULT_DESIGN["delta"])
    return out


# --------------------------------------------------------------------------- the privacy unit


def unit_options(design: dict) -> dict:
    """:func:`dpcore.synthesize`'s privacy-unit keywords of the design: none for a record; ``privacy_unit`` and
    ``records_per_unit`` (K as the curator gave it: checked by the release, one line when it is not a whole number
    from 1); or ``privacy_unit`` and ``panel_time`` for a panel released wide."""
    column = design.get("privacy_unit")
    if not column:
        return {}
    if design.get("panel_wide") and design.get("panel_time"):
        return {"privacy_unit": column, "panel_time": design["panel_time"]}
    return {"privacy_unit": column, "records_per_unit": design.get("records_per_unit")}


def is_wide(design: dict) -> bool:
    """Whether the design releases a panel wide (one synthetic record per unit)."""
    return set(unit_options(design)) == {"privacy_unit", "panel_time"}


def unit_problems(design: dict, columns, domain=None) -> list[str]:
    """Why the design's privacy unit cannot be released on a table of ``columns`` (declared ``domain``, without
    the identifier), one line each, in the library's words: a unit column the table lacks, K missing or not a
    whole number from 1, a time column that is not a declared categorical column."""
    import pandas as pd

    from dpcore.counting.contributions import check_privacy_unit
    from dpcore.counting.panel import panel_layout
    from dpcore.errors import DPCoreError

    opts = unit_options(design)
    if not opts:
        return []
    frame = pd.DataFrame(columns=[str(c) for c in columns])
    try:
        unit = check_privacy_unit(frame, opts["privacy_unit"], opts.get("records_per_unit"), opts.get("panel_time"))
        if unit.panel_time is not None and unit.column is not None and domain is not None:
            panel_layout(frame, domain, unit.column, unit.panel_time)
    except DPCoreError as exc:
        return [f"Privacy unit (the Data page): {exc}."]
    return []


def unit_description(design: dict) -> str:
    """What one neighbour differs by, in words: "one record", or e.g. "one 'id' (with all of its records: up to 7
    kept)"; the column's name when K is not given yet."""
    from dpcore.counting.contributions import PrivacyUnit
    from dpcore.errors import DPCoreError

    opts = unit_options(design)
    if not opts:
        return "one record"
    try:
        return PrivacyUnit(opts["privacy_unit"], opts.get("records_per_unit") or 1, opts.get("panel_time")).describe()
    except DPCoreError:
        return f"one '{opts['privacy_unit']}' (with all of its records)"


def book_neighbours(design: dict) -> str:
    """The notion the budget book keeps the release under: the neighbours, and the unit when there is one
    (:func:`dpcore.privacy.neighbours.book_notion`: records and units never add up)."""
    from dpcore.privacy.neighbours import book_notion

    return book_notion(design.get("neighbours", "add_remove"), design.get("privacy_unit") or None)


def method_options(design: dict, method: str, skip=()) -> dict:
    """``method``'s options the design sets (its schema's names), for :func:`dpcore.synthesize`."""
    names = {o.name for o in REGISTRY[method].options} - set(skip)
    return {k: v for k, v in design.get("options", {}).get(method, {}).items() if k in names}


def normalised_weights(raw: list[float], n: int) -> list[float] | None:
    w = [float(x) for x in (list(raw) + [1.0] * n)[:n]]
    total = math.fsum(w)
    if n == 0 or total <= 0:
        return None
    return [x / total for x in w]


def design_call(design: dict, domain, picked: str) -> tuple[str, dict, list[str]]:
    """(method, options, problems) of the design; ``picked`` is the method the design releases
    (the adviser's pick when the design says "auto")."""
    if not REGISTRY[picked].hierarchical:
        return picked, {**method_options(design, picked), **_privacy_options(design)}, []
    problems: list[str] = []
    mode = auto_tree_mode(design, picked) or design.get("mode", "mosda")
    method = MODE_METHOD[mode]
    opts = method_options(design, method, skip=HIERARCHY_OPTIONS)
    if mode == "fixed":
        groups = [[a for a in g if a in domain.names] for g in design.get("layers", [])]
        while groups and not groups[-1]:
            groups.pop()
        if not groups:
            problems.append("Drag at least one attribute into Layer 1 on the Design page (or choose private or "
                            "random selection).")
        elif any(not g for g in groups):
            k = next(i for i, g in enumerate(groups, 1) if not g)
            problems.append(f"Layer {k} is empty but a later layer is not: move an attribute into Layer {k} or "
                            "lower L.")
        opts["order"] = groups
        n_layers, leaf = len(groups), len({a for g in groups for a in g}) < len(domain)
    else:
        opts["layers"] = int(design.get("L", 2))
        if mode == "mosda":
            opts["select"] = "mosda"
        if mode in ("mosda", "lesda"):
            opts["r"] = float(design.get("r", 0.1))
        else:
            opts.pop("utility", None)  # random selection scores nothing
        n_layers, leaf = opts["layers"], opts["layers"] < len(domain)
    alloc = design.get("allocation", "half")
    if alloc == "custom":
        w = normalised_weights(design.get("custom_weights", []), n_layers + int(leaf))
        if w is None:
            problems.append("Custom allocation: at least one layer weight must be above 0.")
            opts["allocation"] = "equal"
        else:
            opts["allocation"] = w
    else:
        opts["allocation"] = alloc
    return method, {**opts, **_privacy_options(design)}, problems


def auto_tree_mode(design: dict, picked: str) -> str | None:
    """The tree selection the adviser's pick fixes: when the design follows the adviser ("auto") and it picked
    a STEPS variant with its own tree selection (LeSDA, a random tree), that variant's mode; else None."""
    if design.get("release_method", "auto") != "auto" or REGISTRY[picked].tree_select is None:
        return None
    return next(mode for mode, method in MODE_METHOD.items() if method == picked)


def advised_options(design: dict, domain, name: str) -> dict:
    """The options method ``name`` is checked with by the adviser (its preview): the design's own call when
    the design would release with it, else the options it is compared with (:func:`_comparator_call`)."""
    method, opts, problems = design_call(design, domain, name)
    if method == name and not problems:
        return opts
    return _comparator_call(design, name, opts)


def _comparator_call(design: dict, name: str, main_opts: dict) -> dict:
    """Options for comparing ``name`` beside the design's release (the Trade-offs page): the
    design's own choices for that method where it has any, under the same privacy options; a
    STEPS variant keeps the design's layers."""
    opts = {**method_options(design, name), **_privacy_options(design)}
    spec = REGISTRY[name]
    if spec.hierarchical:
        opts.pop("order", None)
        layers = main_opts.get("layers") or len(main_opts.get("order") or []) or int(design.get("L", 2))
        opts["layers"] = int(layers)
        alloc = design.get("allocation", "half")
        if isinstance(alloc, str) and alloc != "custom":
            opts["allocation"] = alloc
        if spec.tree_select == "random":  # a random tree spends nothing on selection: no share r, no utility
            opts.pop("utility", None)
        else:
            opts["r"] = float(design.get("r", 0.1))
            if spec.tree_select is None:  # plain STEPS is compared with its private selection, MoSDA
                opts["select"] = "mosda"
    return opts


def comparison_choices(design: dict, method: str, main_opts: dict, problems=()) -> dict[str, tuple[str, dict]]:
    """The releases a sweep can compare, by label: the design's own (when it has no problems) first,
    then every registered method with :func:`_comparator_call`'s options (the design's method again
    only when the design fixed an order, i.e. differs from its comparator)."""
    choices: dict[str, tuple[str, dict]] = {}
    if not problems:
        choices[method_label(method, main_opts)] = (method, main_opts)
    for name in REGISTRY:
        if name == method and not main_opts.get("order"):
            continue
        opts = _comparator_call(design, name, main_opts)
        choices.setdefault(method_label(name, opts), (name, opts))
    return choices


def method_label(method: str, opts: dict) -> str:
    """The release's name for the curator: the registry's label, with STEPS's tree."""
    spec = REGISTRY[method]
    if spec.hierarchical and opts.get("order"):
        return f"{spec.label} (fixed order " + " ; ".join(",".join(g) for g in opts["order"]) + ")"
    if spec.hierarchical and opts.get("select") == "mosda":
        return f"{spec.label}-{opts.get('layers', '')} MoSDA"
    return spec.label


def release_zip(release) -> bytes:
    """The release as one zip: its synthetic sets as CSV and its published manifest."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for i, s in enumerate(release.sets, 1):
            z.writestr(f"synthetic_{i}.csv", s.to_csv(index=False))
        z.writestr("manifest.json", release.manifest_json())
    return buf.getvalue()


#: Fewer records than this and most of what a release measures is noise at ε ≈ 1 (a noisy count's
#: spread is about √2/ε records), so the curator is told before designing anything.
FEW_RECORDS = 100


def table_shape_notes(n_rows: int, n_columns: int) -> list[str]:
    """What a curator should know about a table's shape before designing a release of it: one column
    (a synthetic copy is then a noisy histogram) or very few records (the noisy record count may come out
    0, and the sets are then empty). Reads only the table's size: curator-only, shown on the Data page."""
    notes = []
    if n_columns == 1:
        notes.append("This table has one column: a synthetic copy of it is a noisy histogram of that column "
                     "(there are no relationships between columns to keep). Load a table with more columns if "
                     "you meant to.")
    if n_rows < FEW_RECORDS:
        notes.append(f"This table has only {n_rows} record(s): at ε = 1 a noisy count moves by a record or two, so "
                     "a release describes almost nothing of it, and its noisy record count can come out 0, which "
                     "gives empty synthetic sets (the guarantee at work: a table this small cannot be described "
                     "privately in detail).")
    return notes


def cells_note(cells: int, n_rows: int) -> tuple[str, str]:
    """(kind, text) of the Data page's line on the full cross-tabulation's size: "warning", "info" or
    "caption". Its claims are what the methods do (``tests/studio/test_design_claims.py`` runs them): STEPS's
    leaf layer and flat Laplace take the sparse path above :data:`~dpcore.synthesizers.sparse_leaves.SPARSE_ABOVE`
    cells (only the non-empty cells are stored) and refuse only above its limit of 2^62 cells."""
    from dpcore.synthesizers.sparse_leaves import MAX_SPARSE_CELLS, SPARSE_ABOVE

    msg = f"Full cross-tabulation: **{cells:,} cells** ({n_rows:,} records)."
    if cells > MAX_SPARSE_CELLS:
        return "warning", (msg + " That is above the 2^62 cells a leaf layer can count: STEPS without enough "
                                 "layers and flat Laplace will refuse. Drop or coarsen attributes, or choose a "
                                 "margin method (AIM, MST, DP ipf, PrivBayes).")
    if cells > SPARSE_ABOVE:
        return "info", (msg + " Most cells are empty: STEPS's leaf layer and flat Laplace store only the "
                              "non-empty ones (their noise on the empty cells is drawn as a whole), and a "
                              "hierarchy (STEPS) spends the budget better than a flat table.")
    if cells > 100 * n_rows:
        return "info", msg + " Most cells are empty: a hierarchy (STEPS) spends the budget better than a flat table."
    return "caption", msg


# --------------------------------------------------------------------------- the private domain


def private_numeric(dp_bins: dict | None) -> dict[str, dict]:
    """The numeric columns whose bounds and bins the release finds privately: the ``dp_bins``
    entries with a number of bins and no bounds (``{"bins": k}``). Entries with ``lower`` and
    ``upper`` are DP quantile edges over public bounds (the table editor's)."""
    return {c: v for c, v in (dp_bins or {}).items() if "lower" not in v and "upper" not in v}


def finds_domain_privately(design: dict) -> bool:
    """Whether the design finds the whole domain privately: chosen, and under (ε, δ). Under pure ε
    categorical levels must be declared (a level held by one person can only be released with a
    probability of failure δ > 0), so the choice does not apply there."""
    return bool(design.get("dp_domain")) and design.get("definition") == "zcdp"


def domain_share(design: dict) -> float:
    """The share of the release's budget the private domain spends (the design's, else the library's default,
    :data:`dpcore.measure.dp_domain.DEFAULT_DOMAIN_SHARE`)."""
    return float(design.get("domain_share") or DEFAULT_DOMAIN_SHARE)


def domain_bins(design: dict) -> str:
    """How the private domain bins numeric columns inside their DP bounds (``synthesize``'s ``domain_bins``):
    the design's choice, else the library's default (PrivTree)."""
    return check_bin_method(design.get("domain_bins") or None)


def release_domain_call(design: dict, domain, dp_bins: dict | None, bins_share: float | None) -> tuple[Any, dict]:
    """``(domain, keyword arguments)`` of :func:`dpcore.synthesize` for the design's domain: the one
    place the app asks the library for a private domain (docs/privacy-model.md#what-is-public).

    - the whole domain found privately (:func:`finds_domain_privately`): ``domain="dp"``,
      ``domain_share`` (charged to the release's ledger) and ``domain_bins`` (:func:`domain_bins`);
    - otherwise the declared ``domain``, with ``dp_bins``: DP edges inside public bounds, by the
      entry's method (DP quantiles for an entry that names none, as the app wrote them before it
      offered PrivTree; kept only while the domain still holds their placeholder edges over the same bounds) and
      the numeric columns found privately (``{"bins": k}``: bounds and bins both found by the
      release), their share ``bins_share`` (default 10%, dp_bins' own) charged to the release's ledger.
    """
    if finds_domain_privately(design):
        return "dp", {"domain_share": domain_share(design), "domain_bins": domain_bins(design)}
    specs = {}
    for col, v in (dp_bins or {}).items():
        if col not in domain.names or domain[col].kind != "numeric":
            continue
        if col in private_numeric(dp_bins):
            specs[col] = {"bins": int(v["bins"])}
        elif (domain[col].edges[0], domain[col].edges[-1]) == (float(v["lower"]), float(v["upper"])):
            # an entry written before the app recorded the method came from "Use DP quantile edges", its only
            # DP method then: it stays the quantiles whatever dp_bins' default is now
            specs[col] = {**v, "method": v.get("method", QUANTILES)}
    if not specs:
        return domain, {}
    # the share the Data page states for them ("find privately (spends 10% of ε)"): dp_bins' own default
    return domain, {"dp_bins": specs, "bins_share": float(bins_share or DEFAULT_BINS_SHARE)}


#: A release's remedy in the command line's words, and the same in the app's controls.
_CLI_REMEDY = re.compile(r"give each public bounds or edges.*?or drop the column")
APP_REMEDY = ("on the Data page, under Numeric columns, choose for each: “codebook bounds” (type the lower and "
              "upper bounds and the bins, then “Use these bounds”), “find privately”, or “drop”")


def app_dp_reason(reason: str) -> str:
    """A release's NOT DP reason as the app shows it: the remedy names the Data page's controls,
    not the command line's flags (``--numeric``, ``--dp-bins``) the library's message gives."""
    return _CLI_REMEDY.sub(APP_REMEDY, reason)
