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
from dpcore.data.domain import DP_FOUND, Domain
from dpcore.errors import OptionError
from dpcore.measure.dp_domain import check_share, recode_for_domain
from dpcore.measure.quantiles import check_dp_bins
from dpcore.privacy.budget import Budget, Epsilon, zero_like
from dpcore.privacy.definitions import Definition, definition_for
from dpcore.privacy.ledger import check_epsilon
from dpcore.privacy.neighbours import ADD_REMOVE, Neighbours
from dpcore.synthesizers import REGISTRY, steps
from dpcore.synthesizers import hierarchy as H
from dpcore.synthesizers.empty_share import empty_share_warning, leaf_empty_share
from dpcore.synthesizers.options import check_sets
from dpcore.synthesizers.steps import PRIVATE_SELECTIONS

__all__ = ["Preview", "MarginPreview", "BudgetSplit", "ReleaseDesign", "ReleasePlan", "preview", "expected_noise",
           "budget_split", "plan_release", "domain_shares", "domain_forecast", "DOMAIN_GROUPS"]

#: The ledger groups a release charges the domain it finds before its sets to: DP bin edges (``dp_bins``,
#: :mod:`dpcore.measure.quantiles`) or the whole domain (``domain="dp"``, :mod:`dpcore.measure.dp_domain`).
DOMAIN_GROUPS = ("DP bin edges", "DP domain")


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
    #: the planned figures at the table's own record count (:func:`plan_release`)
    release_plan: Any = None


@dataclass
class MarginPreview:
    """What a margin method (flat_laplace, ipf, privbayes, aim, mst) will measure, before any budget
    is spent: one row per noisy table with its cells, ε per set, noise scale and sd.
    Computed from the public domain and the options, with one curator-only exception: ipf's
    ``one_way_share="auto"`` is decided from the table's own record count (the release decides
    from its noisy count; ``plan["one_way_share_auto"]`` says when this applies). No other data values."""

    margins: pd.DataFrame
    plan: dict
    #: the planned figures at the table's own record count (:func:`plan_release`): ``margins`` are its tables
    release_plan: Any = None


def expected_noise(method: str, domain: Domain, epsilon: float, *, n: float, sets: int = 1,
                   neighbours: str = ADD_REMOVE, count_share: float | None = None, max_records: int | None = None,
                   bins_share: float = 0.0, delta: float | None = None, records_per_unit: int | None = 1,
                   privacy_unit: str | None = None, panel_time: str | None = None, levels_delta: float = 0.0,
                   domain_share: float = 0.0, **options: Any) -> list:
    """How large the noise on each kind of count ``method`` releases is against the count it is
    added to: a list of :class:`dpcore.synthesizers.empty_share.NoiseRow` (noise SD per count, typical count
    n/cells, whether the noise is larger). Spends nothing and reads no data: the public domain,
    the options, ε, m, the neighbour notion and a record count ``n`` — the released noisy count
    (public), or the curator's own n (then the answer is curator-only). ``bins_share``: the
    share of ε the release spends on DP bin edges before its sets (``dp_bins``), ``domain_share`` the share it spends
    finding the whole domain (``domain="dp"``; ``domain`` is then the domain found, or a placeholder). With ``delta``
    the noise is what an (ε, δ) release through zCDP draws (discrete Gaussian at shares of its ρ), and
    each row's budget is then that share of ρ; ``levels_delta`` the part of δ a private domain's levels
    spend outside ρ (:func:`dpcore.api.planned_delta_approx`). ``records_per_unit``: K of the privacy unit (every
    count's noise is then calibrated to K records: :func:`synthesize`'s ``privacy_unit``), public; ``privacy_unit``
    (its column's name, optional) only names it. ``privacy_unit`` with ``panel_time``: a panel released wide,
    ``domain`` the panel's (without the identifier): the noise is the wide table's (a record's sensitivity, its domain
    a column group per declared period of ``panel_time``), and ``n`` the number of units. The rows are
    :func:`plan_release`'s (``ReleasePlan.noise``).
    """
    design = _design(method, epsilon, sets, delta, (neighbours, count_share, max_records),
                     (privacy_unit, records_per_unit, panel_time), bins_share, domain_share, levels_delta, options)
    return list(plan_release(design, design.measured_domain(domain), n).noise)


def _design(method: str, epsilon: float, sets: int, delta, privacy: tuple, unit: tuple, bins_share, domain_share,
            levels_delta, options: dict) -> ReleaseDesign:
    """The :class:`ReleaseDesign` of :func:`expected_noise`'s and :func:`preview`'s keywords: ``bins_share`` (DP bin
    edges) or ``domain_share`` (the whole domain), never both."""
    if method not in REGISTRY:
        raise OptionError(f"method must be one of {', '.join(REGISTRY)}; got {method!r}")
    if bins_share and domain_share:
        raise OptionError("bins_share is spent on DP bin edges inside a declared domain, domain_share on the whole "
                          "domain found privately; give one of them")
    share, group = (domain_share, DOMAIN_GROUPS[1]) if domain_share else (bins_share, DOMAIN_GROUPS[0])
    return ReleaseDesign(method, epsilon, sets, delta, *privacy, float(share or 0.0), float(levels_delta or 0.0),
                         group, *unit, options=dict(options))


@dataclass(frozen=True)
class BudgetSplit:
    """How a release divides its budget (ε, or ρ under zCDP) before its sets: the noisy record count, the
    domain found privately first (``domain``: DP bin edges or the whole domain), and what the synthetic sets
    share (``sets``). Every planned figure (the preview's tables, the expected noise, the planned ledger) is
    computed from it, as :func:`dpcore.api.synthesize_codes` divides the budget it charges."""

    definition: Definition
    neighbours: Neighbours
    budget: Budget
    record_count: Budget
    domain: Budget
    sets: Budget
    levels_delta: float = 0.0

    def plan(self) -> dict:
        """The split as a preview's plan states it (budgets in its ``budget_unit``; δ the whole δ, as the
        release states it, ``levels_delta`` of it spent outside ρ)."""
        out = {"record_count_budget": self.record_count.value, "domain_budget": self.domain.value,
               **definition_plan(self.definition, self.budget)}
        if self.levels_delta:
            out.update(delta=out["delta"] + self.levels_delta, levels_delta=self.levels_delta)
        return out


def budget_split(epsilon: float, privacy: tuple, delta: float | None = None, bins_share: float = 0.0,
                 levels_delta: float = 0.0) -> BudgetSplit:
    """The release's budget split (:class:`BudgetSplit`) from its ε, δ and privacy options ``privacy``
    (neighbours, count_share, max_records, privacy unit). ``bins_share``: the share of the budget the release
    spends on its domain before its sets: ``synthesize``'s ``bins_share`` with ``dp_bins``, its ``domain_share``
    with ``domain="dp"``, or, for a release already made, what its ledger charged there over its whole budget
    (:func:`domain_shares`). ``levels_delta``: the part of δ spent outside ρ (DP levels' thresholds); ρ
    then converts at δ − ``levels_delta``, as the release does."""
    share_first = float(bins_share or 0.0)
    if not 0.0 <= share_first < 1.0:
        raise OptionError(f"bins_share (the share of ε spent on the domain first) must be in [0, 1); "
                          f"got {bins_share!r}")
    definition = definition_for(delta)
    if levels_delta:
        definition = definition_for(definition.delta - float(levels_delta))
    nb, share = privacy_setup(*privacy)
    budget = definition.budget(Epsilon(epsilon))
    count = share * budget if share is not None else zero_like(budget)
    first = budget * share_first
    sets = budget - count - first
    if sets.value <= 0:
        raise OptionError("count_share + bins_share leave no ε for the synthetic sets; lower them")
    return BudgetSplit(definition, nb, budget, count, first, sets, float(levels_delta or 0.0))


@dataclass(frozen=True)
class ReleaseDesign:
    """Everything a release's planned figures depend on, as :func:`dpcore.synthesize` takes it (public: no data):
    the method and its ``options``, ε, m (``sets``), δ, the neighbour notion and the privacy unit, and what the
    release spends on its domain before its sets: ``domain_share`` of its budget, charged to the ledger group
    ``domain_group`` ("DP bin edges" for ``dp_bins``, "DP domain" for ``domain="dp"``), ``levels_delta`` the part
    of δ its levels' thresholds spend outside ρ. :meth:`of_call` reads it from a call's keywords."""

    method: str
    epsilon: float
    sets: int = 1
    delta: float | None = None
    neighbours: str = ADD_REMOVE
    count_share: float | None = None
    max_records: int | None = None
    domain_share: float = 0.0
    levels_delta: float = 0.0
    domain_group: str = DOMAIN_GROUPS[0]
    privacy_unit: str | None = None
    records_per_unit: int | None = None
    panel_time: str | None = None
    options: dict = field(default_factory=dict)

    @classmethod
    def of_call(cls, method: str = "steps", epsilon: float = 1.0, *, sets: int = 1, domain=None, dp_bins=None,
                bins_share=None, bins_method=None, domain_share=None, domain_bins=None, levels_delta: float = 0.0,
                delta=None, neighbours: str = ADD_REMOVE, count_share=None, max_records=None, privacy_unit=None,
                records_per_unit=None, panel_time=None, seed=None, schema=None, rules=None, progress=None,
                **options: Any) -> ReleaseDesign:
        """The design of ``synthesize(data, method, epsilon, sets=…, domain=…, …)``, from the call's keywords
        (``seed``, ``schema``, ``rules``, ``progress``, ``domain_bins`` and ``bins_method`` change no planned figure).
        The share spent on the domain first: ``domain_share`` (default 10%) with ``domain="dp"``, ``bins_share``
        (default 10%) with ``dp_bins``, else none. ``levels_delta``: :func:`dpcore.api.planned_delta_approx` of the
        call (it reads the declared types, which this does not)."""
        if isinstance(domain, str) and domain == "dp":
            share, group = check_share(domain_share), DOMAIN_GROUPS[1]
        else:
            share, group = check_dp_bins(dp_bins, bins_share, bins_method)[1], DOMAIN_GROUPS[0]
        return cls(method, epsilon, sets, delta, neighbours, count_share, max_records, share,
                   float(levels_delta or 0.0), group, privacy_unit, records_per_unit, panel_time, dict(options))

    def domain_keywords(self) -> dict:
        """What the design spends on its domain before its sets, as :func:`expected_noise` and :func:`preview` take
        it: ``bins_share`` or ``domain_share``, and ``levels_delta``."""
        out = {"levels_delta": self.levels_delta} if self.levels_delta else {}
        if self.domain_share:
            out["domain_share" if self.domain_group == DOMAIN_GROUPS[1] else "bins_share"] = self.domain_share
        return out

    def unit(self) -> PrivacyUnit:
        """The privacy unit: a record, K records of a unit (named or not), or a panel released wide."""
        k = 1 if self.records_per_unit is None else self.records_per_unit
        if self.privacy_unit is None and self.panel_time is None:
            return RECORD if k == 1 else PrivacyUnit("unit", k)
        return PrivacyUnit(self.privacy_unit or "unit", k, self.panel_time)

    def split(self) -> BudgetSplit:
        """How the release divides its budget (:func:`budget_split`)."""
        return budget_split(check_epsilon(self.epsilon), (self.neighbours, self.count_share, self.max_records,
                                                          self.unit()), self.delta, self.domain_share,
                            self.levels_delta)

    def measured_domain(self, domain) -> Domain:
        """The domain the release measures: ``domain`` (a Domain or its dict), or, for a panel released wide, the wide
        table's, from the declared one and its column names alone."""
        dom = domain if isinstance(domain, Domain) else Domain.from_dict(domain)
        unit = self.unit()
        if unit.panel_time is None:
            return dom
        layout = panel_layout(pd.DataFrame(columns=[unit.column, *dom.names]), dom, unit.column, unit.panel_time)
        return wide_domain(dom, layout)


@dataclass(frozen=True)
class ReleasePlan:
    """What a release of ``design`` over ``domain`` will spend and measure (:func:`plan_release`): the budget
    ``split``; ``noise``, the noise on each kind of count it releases against the typical count n/cells (the
    noise check's rows); ``tables``, the noisy tables a margin method measures per set (cells, budget, noise scale
    and SD; None for a tree method), ``extra`` what else its preview says; ``allocation``, a tree method's budget
    per layer (None for a margin method); ``options`` the method's options resolved. :meth:`ledger` is the planned
    ledger, shaped as the manifest's."""

    design: ReleaseDesign
    domain: Domain
    split: BudgetSplit
    n: float
    noise: tuple
    tables: tuple | None
    extra: dict
    allocation: Any
    options: Any

    @property
    def budget_key(self) -> str:
        """The key of every budget: "epsilon", or "rho" under zCDP."""
        return self.split.definition.budget_key

    @property
    def per_set(self) -> Budget:
        return self.split.sets / check_sets(self.design.sets)

    def parts(self) -> list[dict]:
        """What one set spends, a row per planned charge: a margin method's tables (and private choices), a tree
        method's selection and counts per layer. AIM's rounds are chosen at release: its rows are its start."""
        key = self.budget_key
        if self.tables is not None:
            return [{"component": r["table"], "kind": "selection" if r["noise_scale"] is None else "counts",
                     key: r[key]} for r in self.tables]
        alloc = self.allocation
        _, leaf = steps.noised_layers(self.options.layers, self.options.order, len(self.domain))
        names = [f"layer {k}" for k in range(1, len(alloc.counts) + 1)]
        names[-1:] = ["leaf cells"] if leaf and names else names[-1:]
        return ([{"component": f"tree selection, layer {k}→{k + 1}", "kind": "selection", key: b.value}
                 for k, b in enumerate(alloc.selection)]
                + [{"component": f"counts, {nm}", "kind": "counts", key: b.value}
                   for nm, b in zip(names, alloc.counts)])

    def ledger(self) -> dict:
        """The planned ledger, shaped as a manifest's ``ledger["composition"]``: the domain found first (its group,
        when the design spends on it), the noisy record count (add/remove neighbours), then each set with its
        planned charges (:meth:`parts`), every budget under :attr:`budget_key`. A release of the design charges
        exactly these (but for AIM's rounds, chosen at release)."""
        key, s, m = self.budget_key, self.split, check_sets(self.design.sets)
        children: list[dict] = []
        if s.domain.value:
            children.append({"label": self.design.domain_group, key: s.domain.value})
        if s.record_count.value:
            children.append({"label": "record count", key: s.record_count.value})
        parts = [{"label": r["component"], key: r[key]} for r in self.parts()]
        children += [{"label": f"set {i}", key: self.per_set.value, "children": parts} for i in range(1, m + 1)]
        return {"label": f"release ({self.design.method})", key: s.budget.value, "children": children}

    def ledger_rows(self) -> list[dict]:
        """The planned ledger flat, one row per charge (``set``, ``component``, ``kind`` and the budget): the
        domain found first and the record count once, before the sets, then each set's :meth:`parts`."""
        key, s = self.budget_key, self.split
        rows = []
        if s.domain.value:
            rows.append({"set": "before the sets", "component": f"{self.design.domain_group} (found privately)",
                         "kind": "private domain", key: s.domain.value})
        if s.record_count.value:
            rows.append({"set": "all sets", "component": "noisy record count", "kind": "record count",
                         key: s.record_count.value})
        for i in range(1, check_sets(self.design.sets) + 1):
            rows += [{"set": f"set {i}", **r} for r in self.parts()]
        return rows


    def ledger_table(self) -> list[dict]:
        """The planned ledger as a table: the parts spent once (the domain found privately, the record count:
        ``per_set`` None), then one set's parts with ``per_set`` and ``over_sets`` (m times that), a margin method's
        tables with their ``cells``, ``noise_scale`` and ``noise_sd``."""
        key, m = self.budget_key, check_sets(self.design.sets)
        tables = {r["table"]: r for r in self.tables or ()}
        out = []
        for r in self.ledger_rows():
            once = not r["set"].startswith("set ")
            if not once and r["set"] != "set 1":
                continue
            row = {"part": r["component"], "per_set": None if once else r[key],
                   "over_sets": r[key] if once else r[key] * m}
            if self.tables is not None:
                t = tables.get(r["component"], {})
                row.update(cells=t.get("cells"), noise_scale=t.get("noise_scale"), noise_sd=t.get("noise_sd"))
            out.append(row)
        return out


def plan_release(design: ReleaseDesign, domain, n: float) -> ReleasePlan:
    """The one place a release's planned figures are computed: what a release of ``design`` would spend and
    measure over ``domain`` (for a domain found privately, the one the release's manifest states; before a release
    the curator's placeholder), with ``n`` records — the noisy count a release published (public), or the curator's
    own n (then every figure that reads it is curator-only: the typical counts, ipf's auto one-way share). The
    planned ledger, each table's or layer's budget, noise scale and SD, and its cells (:class:`ReleasePlan`).
    Spends nothing; reads no data."""
    if design.method not in REGISTRY:
        raise OptionError(f"method must be one of {', '.join(REGISTRY)}; got {design.method!r}")
    split = design.split()
    m = check_sets(design.sets)
    dom = domain if isinstance(domain, Domain) else Domain.from_dict(domain)
    spec = REGISTRY[design.method]
    opts = spec.resolve(dom, design.method, **design.options)
    if split.definition.name != "pure":
        opts = spec.for_definition(opts, split.definition, design.options, dom)
    noise = tuple(spec.noise_rows(opts, dom, split.sets, m, max(float(n), 1.0), split.neighbours, split.definition))
    if spec.hierarchical:
        return ReleasePlan(design, dom, split, float(n), noise, None, {},
                           steps.plan_allocation(opts, len(dom), split.sets, m), opts)
    args = (opts, dom, split.sets / m, split.neighbours, float(n), split.definition)
    return ReleasePlan(design, dom, split, float(n), noise, tuple(spec.preview_rows(*args) or ()),
                       spec.preview_plan(*args), None, opts)


def domain_shares(manifest: dict) -> tuple[float, float]:
    """(asked, charged): the share of its whole budget a release set aside for its domain before its sets
    (``bins_share`` or ``domain_share``, from its diagnostics), and what its ledger charged there (its "DP bin
    edges" or "DP domain" group over its total, in the ledger's unit): the ``domain_share`` of its
    :class:`ReleaseDesign` when planning the release made. The charge can be below the share asked: PrivTree
    charges its scale rounded, and a column the private domain withholds spends nothing more. (0, 0) when the
    release found nothing privately."""
    ledger = manifest["ledger"]
    key = "rho" if ledger.get("unit") == "rho" else "epsilon"
    comp, diag = ledger["composition"], manifest.get("diagnostics") or {}
    total = float(comp[key])
    if not total:
        return 0.0, 0.0
    charged = sum(float(c.get(key, 0.0)) for c in comp["children"] if c["label"] in DOMAIN_GROUPS) / total
    if "dp_domain" in diag:
        return float(diag["dp_domain"]["share"]), charged
    asked = sum(float(v.get(key, 0.0)) for v in (diag.get("dp_bin_edges") or {}).values()) / total
    return asked, charged


def preview(data: pd.DataFrame, method: str = "steps", epsilon: float = 1.0, *, sets: int = 1, domain=None,
            neighbours: str = ADD_REMOVE, count_share: float | None = None, max_records: int | None = None,
            delta: float | None = None, privacy_unit: str | None = None, records_per_unit: int | None = None,
            panel_time: str | None = None, bins_share: float = 0.0, domain_share: float = 0.0,
            levels_delta: float = 0.0, **options: Any) -> Preview | MarginPreview:
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
    ``bins_share`` or ``domain_share``, ``levels_delta``: what the release spends on its domain before its sets, as
    :func:`expected_noise` takes them (``domain`` is then the domain found, or a placeholder); the plan states it as
    ``domain_budget``. Every budget, noise scale and cell count shown is :func:`plan_release`'s at the table's own
    record count (``release_plan``).
    """
    if method not in REGISTRY:
        raise OptionError(f"method must be one of {', '.join(REGISTRY)}; got {method!r}")
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
    design = _design(method, epsilon, sets, delta, (neighbours, count_share, max_records),
                     (unit.column, unit.records_per_unit, unit.panel_time), bins_share, domain_share, levels_delta,
                     options)
    if not REGISTRY[method].hierarchical:
        out: Preview | MarginPreview = _margin_preview(data, design, domain)
    else:
        out = _steps_preview(data, design, domain)
    out.plan["layout"] = layout_text
    out.plan["protects"] = out.release_plan.split.neighbours.to_dict()
    return out


def _margin_preview(data: pd.DataFrame, design: ReleaseDesign, domain) -> MarginPreview:
    """:func:`preview` of a margin method: the noise scale per margin, from its registry entry."""
    # n: the table's own count (curator-only), where a release uses its noisy count (ipf's "auto" share)
    rp = plan_release(design, resolve_domain(data, domain), float(len(data)))
    split = rp.split
    plan = {"epsilon": check_epsilon(design.epsilon), "sets": check_sets(design.sets),
            "budget_per_set": rp.per_set.value, "neighbours": split.neighbours.notion, "method": design.method,
            **split.plan(), **rp.extra}
    # each row names its budget by the definition's key: "epsilon", or "rho" under zCDP
    return MarginPreview(pd.DataFrame(list(rp.tables or ())), plan, rp)


def _steps_preview(data: pd.DataFrame, design: ReleaseDesign, domain) -> Preview:
    """:func:`preview` of a hierarchical method: the tree (most likely attribute at each
    node), the expected error per layer, the selection probabilities (curator-only) and
    the plan."""
    dom = resolve_domain(data, domain)
    if dom.source == DP_FOUND:  # a domain a release found: the records as that release encoded them
        data = recode_for_domain(data, dom)[0]
    rp = plan_release(design, dom, float(len(data)))
    definition, nb, opts, alloc = rp.split.definition, rp.split.neighbours, rp.options, rp.allocation
    eps, m = check_epsilon(design.epsilon), check_sets(design.sets)
    X = encode_records(dom, data)
    nb.check_size(len(X))
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
        "neighbours": nb.notion, "empty_cell_share": share, "empty_cell_warning": empty_share_warning(share),
        **rp.split.plan(),
    }
    return Preview(tree, table, plan, pd.DataFrame(sel_rows) if sel_rows else None, counts, release_plan=rp)


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
