"""What a release would measure and how much noise it would add, before any budget is spent.

:func:`preview` describes a release of :func:`dpcore.api.synthesize` (the tree of a hierarchical method with its
expected error per layer, or the noisy tables of a margin method with their noise scales); :func:`expected_noise`
compares each kind of count's noise with the count it is added to, from public facts and a record count. Both
spend nothing. What they read of the data is curator-only and said so where it is read (a preview's selection
probabilities and true counts).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dpcore.api import definition_plan, encode_records, privacy_setup, resolve_domain, without_unit
from dpcore.counting.contributions import RECORD, PrivacyUnit, bound_contributions, check_privacy_unit
from dpcore.counting.panel import panel_layout, to_wide, wide_domain
from dpcore.data.domain import Domain
from dpcore.errors import OptionError
from dpcore.privacy.budget import Epsilon
from dpcore.privacy.definitions import definition_for
from dpcore.privacy.ledger import check_epsilon
from dpcore.privacy.neighbours import ADD_REMOVE
from dpcore.synthesizers import REGISTRY, steps
from dpcore.synthesizers import hierarchy as H
from dpcore.synthesizers.empty_share import empty_share_warning, leaf_empty_share
from dpcore.synthesizers.options import check_sets
from dpcore.synthesizers.steps import PRIVATE_SELECTIONS

__all__ = ["Preview", "MarginPreview", "preview", "expected_noise", "domain_forecast"]


@dataclass
class Preview:
    """The phantom-padded hierarchy and its expected error, before any budget is spent.

    ``layers``: per noised layer, real and phantom nodes, attributes, ε, noise scale
    and sd, and the mean expected standard error after WLS consistency.
    ``selection``: for private selection, each node's selection probabilities and
    ``true_counts``: both computed from the raw data — CURATOR ONLY, NOT FOR RELEASE.
    """

    tree: H.PhantomPaddedTree
    layers: pd.DataFrame
    plan: dict
    selection: pd.DataFrame | None = None
    true_counts: list = field(default_factory=list)
    not_for_release: str = "selection probabilities and true counts are computed from the raw data: not for release"


@dataclass
class MarginPreview:
    """What a margin method (flat_laplace, ipf, privbayes, aim, mst) will measure, before any budget
    is spent: one row per noisy table with its cells, ε per set, noise scale and sd.
    Computed from the public domain and the options, with one curator-only exception: ipf's
    ``one_way_share="auto"`` is decided from the table's own record count (the release decides
    from its noisy count; ``plan["one_way_share_auto"]`` says when this applies). No other data values."""

    margins: pd.DataFrame
    plan: dict


def expected_noise(method: str, domain: Domain, epsilon: float, *, n: float, sets: int = 1,
                   neighbours: str = ADD_REMOVE, count_share: float | None = None, max_records: int | None = None,
                   bins_share: float = 0.0, delta: float | None = None, records_per_unit: int | None = 1,
                   privacy_unit: str | None = None, panel_time: str | None = None, **options: Any) -> list:
    """How large the noise on each kind of count ``method`` releases is against the count it is
    added to: a list of :class:`dpcore.synthesizers.empty_share.NoiseRow` (noise SD per count, typical count
    n/cells, whether the noise is larger). Spends nothing and reads no data: the public domain,
    the options, ε, m, the neighbour notion and a record count ``n`` — the released noisy count
    (public), or the curator's own n (then the answer is curator-only). ``bins_share``: the
    share of ε the release spends on DP bin edges (``synthesize(..., dp_bins=...)``). With ``delta``
    the noise is what an (ε, δ) release through zCDP draws (discrete Gaussian at shares of its ρ), and
    each row's budget is then that share of ρ. ``records_per_unit``: K of the privacy unit (every count's
    noise is then calibrated to K records: :func:`synthesize`'s ``privacy_unit``), public; ``privacy_unit`` (its
    column's name, optional) only names it. ``privacy_unit`` with ``panel_time``: a panel released wide, ``domain``
    the panel's (without the identifier): the noise is the wide table's (a record's sensitivity, its domain a
    column group per declared period of ``panel_time``), and ``n`` the number of units.
    """
    if method not in REGISTRY:
        raise OptionError(f"method must be one of {', '.join(REGISTRY)}; got {method!r}")
    eps = check_epsilon(epsilon)
    m = check_sets(sets)
    dom = domain if isinstance(domain, Domain) else Domain.from_dict(domain)
    spec = REGISTRY[method]
    definition = definition_for(delta)
    unit = _noise_unit(privacy_unit, records_per_unit, panel_time)
    if unit.panel_time is not None:  # the wide table's domain, from the declared one and its column names alone
        layout = panel_layout(pd.DataFrame(columns=[unit.column, *dom.names]), dom, unit.column, unit.panel_time)
        dom = wide_domain(dom, layout)
    opts = spec.resolve(dom, method, **options)
    if definition.name != "pure":
        opts = spec.for_definition(opts, definition, options, dom)
    nb, share = privacy_setup(neighbours, count_share, max_records, unit)
    sets_budget = definition.budget(Epsilon(eps)) * (1.0 - (share or 0.0) - float(bins_share))
    if sets_budget.value <= 0:
        raise OptionError("count_share + bins_share leave no ε for the synthetic sets; lower them")
    return spec.noise_rows(opts, dom, sets_budget, m, max(float(n), 1.0), nb, definition)


def _noise_unit(column: str | None, records_per_unit, panel_time: str | None) -> PrivacyUnit:
    """:func:`expected_noise`'s privacy unit: K records of a unit (named or not), or a wide panel."""
    k = 1 if records_per_unit is None else records_per_unit
    if column is None and panel_time is None:
        return RECORD if k == 1 else PrivacyUnit("unit", k)
    return PrivacyUnit(column or "unit", k, panel_time)


def preview(data: pd.DataFrame, method: str = "steps", epsilon: float = 1.0, *, sets: int = 1, domain=None,
            neighbours: str = ADD_REMOVE, count_share: float | None = None, max_records: int | None = None,
            delta: float | None = None, privacy_unit: str | None = None, records_per_unit: int | None = None,
            panel_time: str | None = None, **options: Any) -> Preview | MarginPreview:
    """Describe what a release would measure, spending no budget.

    Hierarchical methods (STEPS and its variants) return a :class:`Preview` of the tree;
    margin methods a :class:`MarginPreview` with the noise scale per margin. Same
    privacy options as :func:`synthesize` (the noise scales depend on them). For
    private selection the tree shown takes the most likely attribute at each node;
    the probabilities behind it come from the raw data (curator-only). With ``delta`` the
    budgets are ρ (zCDP, as :func:`synthesize` with ``delta``): the tables' budget column is
    then ``rho`` instead of ``epsilon``. ``privacy_unit``, ``records_per_unit``, ``panel_time``: as
    :func:`synthesize` (the id column is left out; every noise scale is the one calibrated to K records; a wide
    panel is previewed wide). ``plan["layout"]`` says which records a synthetic record keeps together (the
    table's records one by one, or one wide record per unit), ``plan["protects"]`` the neighbour notion.
    """
    if method not in REGISTRY:
        raise OptionError(f"method must be one of {', '.join(REGISTRY)}; got {method!r}")
    definition = definition_for(delta)
    unit = check_privacy_unit(data, privacy_unit, records_per_unit, panel_time)
    layout_text = "records, as in the table: each synthetic record is one record"
    domain = without_unit(data.drop(columns=[unit.column]) if unit.column else data, domain, unit)
    if not unit.is_record:
        # what the release will read: the bounded (or wide) table, drawn here with a fixed generator (curator-only)
        rng = np.random.default_rng(0)
        if unit.panel_time is not None:
            layout = panel_layout(data, resolve_domain(data.drop(columns=[unit.column]), domain), unit.column,
                                  unit.panel_time)
            domain = wide_domain(resolve_domain(data.drop(columns=[unit.column]), domain), layout)
            data = to_wide(data, layout, rng).data
            layout_text = layout.describe()
        else:
            data = bound_contributions(data, unit, rng).data
            layout_text = (f"records, as in the table, each protected with its '{unit.column}' (at most "
                           f"{unit.records_per_unit} kept per '{unit.column}'); the synthetic records of one "
                           f"'{unit.column}' are not kept together")
    privacy = (neighbours, count_share, max_records, unit)
    if not REGISTRY[method].hierarchical:
        out: Preview | MarginPreview = _margin_preview(data, method, epsilon, sets, domain, privacy, definition,
                                                       options)
    else:
        out = _steps_preview(data, method, epsilon, sets, domain, privacy, definition, options)
    out.plan["layout"] = layout_text
    out.plan["protects"] = privacy_setup(*privacy)[0].to_dict()
    return out


def _margin_preview(data: pd.DataFrame, method: str, epsilon: float, sets: int, domain, privacy: tuple,
                    definition, options: dict) -> MarginPreview:
    """:func:`preview` of a margin method: the noise scale per margin, from its registry entry."""
    eps = check_epsilon(epsilon)
    m = check_sets(sets)
    dom = resolve_domain(data, domain)
    opts = REGISTRY[method].resolve(dom, method, **options)
    if definition.name != "pure":
        opts = REGISTRY[method].for_definition(opts, definition, options, dom)
    nb, share = privacy_setup(*privacy)
    budget = definition.budget(Epsilon(eps))
    sets_budget = budget * (1.0 - share) if share is not None else budget
    spec = REGISTRY[method]
    # n: the table's own count (curator-only), where a release uses its noisy count (ipf's "auto" share)
    args = (opts, dom, sets_budget / m, nb, float(len(data)), definition)
    plan = {"epsilon": eps, "sets": m, "budget_per_set": (sets_budget / m).value, "neighbours": nb.notion,
            "record_count_budget": (budget - sets_budget).value, "method": method,
            **definition_plan(definition, budget),
            **spec.preview_plan(*args)}
    # each row names its budget by the definition's key: "epsilon", or "rho" under zCDP
    return MarginPreview(pd.DataFrame(spec.preview_rows(*args)), plan)


def _steps_preview(data: pd.DataFrame, method: str, epsilon: float, sets: int, domain, privacy: tuple,
                   definition, options: dict) -> Preview:
    """:func:`preview` of a hierarchical method: the tree (most likely attribute at each
    node), the expected error per layer, the selection probabilities (curator-only) and
    the plan."""
    eps = check_epsilon(epsilon)
    m = check_sets(sets)
    dom = resolve_domain(data, domain)
    opts = REGISTRY[method].resolve(dom, method, **options)
    if definition.name != "pure":
        opts = REGISTRY[method].for_definition(opts, definition, options, dom)
    nb, share = privacy_setup(*privacy)
    X = encode_records(dom, data)
    nb.check_size(len(X))
    budget = definition.budget(Epsilon(eps))
    sets_budget = budget * (1.0 - share) if share is not None else budget
    alloc = steps.plan_allocation(opts, len(dom), sets_budget, m)
    sel = steps.Selector(opts, X, dom.shape, tuple(dom.names), alloc, np.random.default_rng(0), mode="preview",
                         neighbours=nb, definition=definition)
    tree = H.build_tree(X, dom.shape, dom.names, opts.layers, sel, steps.leaf_cell_limit(opts))
    steps.sparse_leaf_layer(tree, opts)  # refuses now what the release would refuse
    mechs = steps.layer_mechanisms(tree, alloc, opts.noise, definition, nb)
    table = _layer_table(tree, mechs, nb, alloc, dom, definition)
    sel_rows = _selection_rows(sel, dom)
    # node counts only: the leaf layer may be far too big to count densely
    counts = [np.bincount(r, minlength=tree.layers[k].n_real) for k, r in enumerate(H.record_ranks(tree, X))]
    n_pub = float(len(X))
    # the empty-cell share is worked out for discrete Laplace noise only (dpcore.synthesizers.empty_share)
    share = (leaf_empty_share(np.diff(tree.leaf_offsets), n_pub, mechs[-1].scale, opts.consistency)
             if tree.has_leaf_layer and definition.name == "pure" else 0.0)
    plan = {
        "epsilon": eps, "sets": m, "budget_per_set": alloc.per_set.value,
        "selection_budget_per_layer": [b.value for b in alloc.selection],
        "count_budget_per_layer": [b.value for b in alloc.counts],
        "weights": list(alloc.weights), "allocation": alloc.scheme,
        "select": opts.select, "private_selection": opts.select in PRIVATE_SELECTIONS, "fan_out": tree.b,
        "neighbours": nb.notion, "record_count_budget": (budget - sets_budget).value,
        "empty_cell_share": share, "empty_cell_warning": empty_share_warning(share),
        **definition_plan(definition, budget),
    }
    return Preview(tree, table, plan, pd.DataFrame(sel_rows) if sel_rows else None, counts)


def _layer_table(tree, mechs, nb, alloc, dom, definition) -> pd.DataFrame:
    """One row per layer of the tree: its attributes, node counts, budget and expected error."""
    rows = steps.expected_errors(tree, mechs, nb.histogram_sensitivity)
    if definition.name != "pure":
        for row, c in zip(rows, alloc.counts):
            del row["epsilon"]  # a Gaussian layer states no ε of its own
            row[definition.budget_key] = c.value  # the layer's budget, in ρ
    attrs = tree.attributes_per_layer()
    for row in rows:
        k = row["layer"]
        row["attributes"] = ", ".join(f"{a} ×{c}" for a, c in attrs[k - 1]["splits"].items()) if k <= tree.L else \
            "leaf cells: " + "; ".join(",".join(dom.names[j] for j in r) for r in tree.remaining if r)
    return pd.DataFrame(rows)[["layer", "attributes", "real", "phantom", definition.budget_key, "noise_scale",
                               "noise_sd", "expected_se"]]


def _selection_rows(sel, dom) -> list[dict]:
    """The selection probabilities per node and attribute (from the raw data: curator-only)."""
    sel_rows = []
    for rec in sel.probabilities:
        for _v, (fx, pr) in enumerate(zip(rec["fixed"], rec["probabilities"])):
            path = dom.path_label(fx)
            for j in np.flatnonzero(pr > 0):
                sel_rows.append({"layer": rec["layer"], "node": path, "attribute": dom.names[j],
                                 "probability": float(pr[j])})
    return sel_rows


def domain_forecast(data: pd.DataFrame, epsilon: float = 1.0, *, delta: float | None = None,
                    domain_share: float | None = None, schema=None, n: float | None = None,
                    neighbours: str = ADD_REMOVE, max_records: int | None = None, privacy_unit: str | None = None,
                    records_per_unit: int | None = None) -> list:
    """Before a release with nothing declared (``synthesize(..., domain="dp")``): for each column, whether its DP
    domain will likely be found, found coarsely or not found at this budget, and what would help
    (:func:`dpcore.measure.domain_forecast.forecast`). Reads the declared types only (``schema``; None: the
    frame's dtypes) and ``n``; ``n`` None takes the table's own record count, and the forecast is then
    curator-only (NOT DP). Spends nothing."""
    from dpcore.api import conform_to_schema
    from dpcore.measure.domain_forecast import forecast
    from dpcore.measure.dp_domain import plan_dp_domain

    eps = check_epsilon(epsilon)
    declared, _ = conform_to_schema(data, schema, privacy_unit)
    frame = data if declared is None else declared.data
    unit = check_privacy_unit(frame, privacy_unit, records_per_unit)
    frame = frame if unit.is_record else frame.drop(columns=[unit.column])
    plan = plan_dp_domain(frame, delta, domain_share, None, None if declared is None else declared.schema)
    definition = definition_for(delta)
    if plan.levels_delta:
        definition = definition_for(definition.delta - plan.levels_delta)
    nb, _ = privacy_setup(neighbours, None, max_records, unit)
    budget = definition.budget(Epsilon(eps)) * plan.share
    return forecast(plan, budget, float(len(frame) if n is None else n), nb, definition)
