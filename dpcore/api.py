"""The two entry points: :func:`synthesize` (spends ε) and :func:`preview` (spends nothing)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd

from dpcore.counting.contributions import RECORD, PrivacyUnit, bound_contributions, check_privacy_unit
from dpcore.counting.count_table import CountTable
from dpcore.counting.panel import panel_layout, to_long, to_wide, wide_domain
from dpcore.data.domain import (
    DECLARED,
    DP_FOUND,
    FOUND_IN_RELEASE,
    Domain,
    check_table,
    infer_domain,
    not_public_message,
)
from dpcore.data.schema import Schema
from dpcore.errors import DomainError, OptionError, ResourceError, whole_number
from dpcore.estimate.draws import records
from dpcore.estimate.rules import apply_rules, check_rules
from dpcore.manifest_summary import created_now
from dpcore.measure.dp_domain import dp_domain, fallback_warnings, plan_dp_domain, recode_for_domain, withhold_columns
from dpcore.measure.quantiles import apply_dp_bins, check_dp_bins
from dpcore.privacy.budget import Budget, Epsilon, zero_like
from dpcore.privacy.definitions import Definition, PureDP, ReleaseContext, definition_for
from dpcore.privacy.ledger import MIN_EPSILON, RHO, Ledger, check_epsilon
from dpcore.privacy.measurement import EXACT_SAMPLER, Measurement
from dpcore.privacy.neighbours import (
    ADD_REMOVE,
    DEFAULT_COUNT_SHARE,
    DEFAULT_MAX_RECORDS,
    Neighbours,
    check_count_share,
    check_neighbours,
)
from dpcore.release import Release
from dpcore.synthesizers import REGISTRY
from dpcore.synthesizers.method import SetRequest
from dpcore.synthesizers.options import check_sets

METHODS = tuple(REGISTRY)



def resolve_domain(data: pd.DataFrame, domain) -> Domain:
    """The release's domain: ``domain`` as given (a Domain, its dict, a file), or inferred from ``data`` (NOT DP
    until declared). ``data`` is checked for what no release can take first."""
    check_table(data)
    if isinstance(domain, str) and domain == "dp":
        # synthesize handles "dp" itself; anything else reaching here has no domain to show before a release
        raise OptionError("domain=\"dp\" is found with DP inside a release (synthesize), so there is no domain to "
                          "preview before it; preview with a declared domain, or release")
    if domain is None:
        return infer_domain(data)
    if isinstance(domain, Domain):
        return domain
    if isinstance(domain, dict):
        return Domain.from_dict(domain)
    return Domain.load(domain)


def without_unit(data: pd.DataFrame, domain, unit: PrivacyUnit):
    """``domain`` without the privacy unit's identifier column, if it lists it (a domain file written for the
    whole table): the identifier is never released, so its levels play no part."""
    if unit.is_record or domain is None or (isinstance(domain, str) and domain == "dp"):
        return domain
    dom = resolve_domain(data, domain)
    return dom.project([n for n in dom.names if n != unit.column]) if unit.column in dom.names else dom


def encode_records(dom: Domain, data: pd.DataFrame) -> np.ndarray:
    """Codes of the domain's columns; a domain column the data lacks is a DomainError, not a KeyError."""
    missing = [n for n in dom.names if n not in data.columns]
    if missing:
        raise DomainError(
            f"the domain lists column(s) {', '.join(map(repr, missing))} that the data does not have; "
            "check the file or edit the domain"
        )
    return dom.encode(data)


def _rng(seed) -> tuple[np.random.Generator, int]:
    if seed is None:
        seed = int(cast(int, np.random.SeedSequence().entropy) % (2**63))
    seed = whole_number("seed", seed, 0)
    return np.random.default_rng(seed), seed


def _dp_status(domain: Domain, not_dp: list[str], epsilon: float, neighbours: Neighbours,
               ledger: Ledger | None = None, delta: float | None = None) -> tuple[bool, str]:
    reasons = list(not_dp)
    if domain.not_public:
        # whatever the domain's own "source" says: edges read from the data are never public
        reasons.append(
            not_public_message(domain.not_public) + ", so they are not public; give each public bounds or edges "
            "(\"origin\": \"declared\" in domain.json; --numeric COL=lower:upper:bins), DP bin edges "
            "(--dp-bins COL=lower:upper:bins), or drop the column"
        )
    if domain.source not in (DECLARED, DP_FOUND):
        reasons.append(
            "the domain (levels and bin edges) was inferred from the data and not declared public; review it and mark "
            "it declared (\"source\": \"declared\" in domain.json, or confirm it in the app) before release"
        )
    if reasons:
        return False, "NOT differentially private: " + "; ".join(reasons)
    given = public_inputs(domain)
    if ledger is not None and ledger.unit == RHO:
        return True, neighbours.statement(epsilon, ledger.delta if delta is None else delta, ledger.rho, given)
    return True, neighbours.statement(epsilon, given=given)


def public_inputs(domain: Domain) -> str:
    """What the DP statement is given: the declared domain; or, when the release found the whole domain privately,
    only the column names and types; or the declared domain with the columns whose bin edges it found privately."""
    if domain.source == DP_FOUND:
        return "only the public column names and types (the domain was found privately inside this release)"
    found = [a.name for a in domain.attributes if a.origin in FOUND_IN_RELEASE]
    if found:
        return ("the declared public domain (the bin edges of " + ", ".join(found)
                + " found privately inside this release)")
    return "the declared public domain"


def definition_plan(definition: Definition, budget: Budget) -> dict:
    """What a preview's plan says of the privacy definition: the unit of its ``*_budget*`` figures
    (``budget_unit``: "epsilon" under pure ε, "rho" under zCDP), and under zCDP δ and the whole ρ."""
    if definition.name == "pure":
        return {"budget_unit": "epsilon"}
    return {"delta": definition.delta, "rho": budget.value, "budget_unit": "rho"}


def privacy_setup(neighbours, count_share, max_records,
                  unit: PrivacyUnit = RECORD) -> tuple[Neighbours, float | None]:
    """The release's neighbour notion and the share of ε for the noisy record count.

    ``count_share`` applies only under add/remove (default 5%); under replace n is
    public and nothing is spent on it. ``unit``: what one neighbour differs by: a record, or one unit with at
    most K records (:mod:`dpcore.counting.contributions`); every sensitivity is then K times the per-record one.
    """
    nb = Neighbours(check_neighbours(neighbours), DEFAULT_MAX_RECORDS if max_records is None else max_records,
                    unit.records_per_unit, unit.column, unit.panel_time)
    if nb.notion == ADD_REMOVE:
        return nb, check_count_share(DEFAULT_COUNT_SHARE if count_share is None else count_share)
    if count_share is not None:
        raise OptionError("count_share is for neighbours='add_remove' only: "
                          "under 'replace' the record count n is public")
    return nb, None


def release_record_count(n: int, nb: Neighbours, share: float | None, budget: Budget, rng, ledger: Ledger,
                         definition: Definition = PureDP()) -> tuple[int, dict]:
    """The number of records each synthetic set gets, and how it was released.

    add/remove: ñ = max(0, n + Z), Z ~ DiscreteLaplace(1/(share·ε)): the count has
    sensitivity 1, so this costs share·ε (charged here); clamping at 0 and at the
    public ``max_records`` is post-processing. replace: n is public, nothing spent.
    ``budget`` is the release's: ε, or ρ under zCDP (then Z is discrete Gaussian spending share·ρ).
    """
    nb.check_size(n)
    if share is None:
        return n, {"value": n, "noisy": False, "epsilon": 0.0, "note": "n is public under replace-one neighbours"}
    count_budget = share * budget
    if definition.name == "pure" and count_budget.value < MIN_EPSILON:
        raise OptionError(f"count_share × epsilon = {count_budget.value:.3g} is too small for the noisy record count "
                          f"(at least {MIN_EPSILON:g}); raise count_share or epsilon")
    mech = definition.count_noise(count_budget, nb)
    count = Measurement("record count", mech, nb.count_sensitivity(mech.norm), "all records", nb.label,
                        sampler=EXACT_SAMPLER, note="released once; every synthetic set has this many records")
    noisy = int(min(max(0, int(count.release(ledger, np.int64(n), rng))), nb.max_records))
    if noisy > 10 * n + 100_000:
        # Curator-only message (nothing is released): the count is too noisy to be usable.
        raise ResourceError(
            f"the noisy record count came out at {noisy:,}, far more than the table holds: the budget for the "
            f"count ({count_budget.value:.3g} = count_share × the release's {count_budget.symbol}) is too small to be "
            "useful; "
            "raise epsilon or count_share"
        )
    spent = {definition.budget_key: count_budget.value}
    return noisy, {"value": noisy, "noisy": True, **spent, "mechanism": mech.name, "scale": mech.scale,
                   "note": "noisy count of records (add/remove neighbours: the true count is not published)"}


def synthesize(data: pd.DataFrame, method: str = "steps", epsilon: float = 1.0, *, sets: int = 1,
               seed: int | None = None, domain=None, neighbours: str = ADD_REMOVE, count_share: float | None = None,
               max_records: int | None = None, dp_bins: dict | None = None, bins_share: float | None = None,
               delta: float | None = None, domain_share: float | None = None, domain_bins: str | None = None,
               bins_method: str | None = None, progress: Callable[[int, int], Any] | None = None,
               privacy_unit: str | None = None, records_per_unit: int | None = None, panel_time: str | None = None,
               schema=None, rules=None, **options: Any) -> Release:
    """Release ``sets`` differentially private synthetic copies of ``data``.

    Privacy: the ledger of the returned :class:`Release` totals exactly ``epsilon``.
    ``neighbours="add_remove"`` (default): ``count_share``·ε (default 5%) releases a
    noisy record count once, every set has that many records, and each set spends
    the rest divided by ``sets``; ``max_records`` (default 10^9) is the public bound
    on table size used by score sensitivities. ``neighbours="replace"``: n is public
    and each set spends ε/sets, with count sensitivity 2. The release is ε-DP when
    ``release.dp`` is True; otherwise ``release.dp_reason`` says what is not covered.
    Proofs: docs/privacy-model.md.

    ``method``: ``steps`` (options: layers, order, select, utility, r, allocation,
    consistency, synthesis, noise, max_cells), ``uh_random``, ``steps_lesda``, ``ipf``, ``privbayes``,
    ``flat_laplace`` (options: prior, structural_zeros, synthesis, noise, max_cells), ``aim`` (options:
    rounds, max_model_size, workload, fit_sweeps, synthesis; docs/methods/aim.md) or ``mst`` (fit_sweeps,
    synthesis; docs/methods/mst.md).

    ``dp_bins={"age": {"bins": 5, "lower": 0, "upper": 100}}`` replaces the named
    attributes' bin edges by DP edges inside the public bounds, computed inside the
    release with ``bins_share``·ε (default 10%), charged to the same ledger, so the total
    stays ``epsilon``. ``bins_method`` (or a column's ``"method"``) says how: "privtree"
    (default; PrivTree's leaves, ``bins`` a cap on their number, default 16; docs/methods/privtree.md)
    or "quantiles" (``bins`` − 1 DP quantiles, default 10 bins; docs/methods/dp-quantiles.md).

    ``delta=None`` (default): pure ε-DP, as above. ``delta`` a number with 0 < δ < 1: the release
    is (ε, δ)-DP through zero-concentrated DP: it gets the largest ρ whose conversion to (ε, δ)
    does not exceed them, every share above is a share of that ρ, counts get discrete Gaussian
    noise, and the ledger composes in ρ (docs/privacy-model.md, "(ε, δ) through zero-concentrated
    DP"). A method that cannot run under zCDP refuses ``delta`` in one line. AIM and MST then draw
    their records by controlled rounding unless ``synthesis="sample"`` (post-processing;
    docs/engines.md, "The rounded draw").

    ``domain="dp"``: nothing declared; every column's domain is found with DP inside the release
    (numbers: DP bounds and DP bins; text: DP levels, which need ``delta``; true/false: public),
    spending ``domain_share``·ε (default 10%) in the ledger's group "DP domain"; ``domain_bins`` says how
    numeric columns are binned over their DP bounds: "privtree" (default) or "quantiles"
    (:mod:`dpcore.measure.dp_domain`, docs/methods/dp-domain.md). Numeric values outside the domain's
    edges are clamped into the end bins; ``release.curator_only`` counts the records clamped or recoded
    per column (NOT DP, never in the published manifest).

    ``privacy_unit="id", records_per_unit=K``: protect everything about one value of the identifier column
    ``id`` (a person, a household), not one record: before anything is measured, each id keeps at most K of its
    records (a uniformly random subset, drawn from the release's generator) and the id column is dropped (it is
    never released); every sensitivity is then K times the per-record one, so the release is ε-DP (or (ε, δ))
    for neighbouring tables that differ by one id with all of its records. K is public: the curator's, never
    read from the data. ``release.curator_only["privacy_unit"]`` says how many records bounding dropped (NOT DP).
    ``privacy_unit="id", panel_time="year"`` (no K): a panel released wide (:mod:`dpcore.counting.panel`): one
    record per id with a column group per period, the periods being the levels ``domain`` declares for
    ``year``; each id is then one record of the wide table (a record's sensitivity), and the sets come back as a
    panel with fresh ids, each keeping its path through the periods. Needs a declared domain (not "dp", no
    ``dp_bins``). Proofs: docs/privacy-model.md, "Stability and the privacy unit".

    ``rules``: declared structural facts enforced on the synthetic records, e.g. ``[{"if": "age < 16", "then":
    {"married": "no"}}]`` (:mod:`dpcore.estimate.rules`: post-processing; stated in the manifest with how many
    records each changed).

    ``progress(sets_done, sets)``, if given, is called before each set and once after the last;
    an exception it raises stops the release before the next set, and nothing is returned (the
    app's Cancel button). It sees no data, so the guarantee is unchanged.
    """
    if method not in REGISTRY:
        raise OptionError(f"method must be one of {', '.join(REGISTRY)}; got {method!r}")
    declared, unfit = conform_to_schema(data, schema, privacy_unit)
    data = data if declared is None else declared.data
    unit = check_privacy_unit(data, privacy_unit, records_per_unit, panel_time)
    full = data
    data = data if unit.is_record else data.drop(columns=[unit.column])  # the id column is never released
    source = [data]  # the table every step reads: the bounded one, once the release has bounded it
    domain = without_unit(data, domain, unit)
    layout = None
    if unit.panel_time is not None:
        if (isinstance(domain, str) and domain == "dp") or dp_bins is not None:
            raise OptionError("a wide panel release (panel_time) needs the declared domain: its periods are its "
                              "column groups; declare the domain, or release records (records_per_unit)")
        assert unit.column is not None  # panel_time comes with privacy_unit (PrivacyUnit.__post_init__)
        layout = panel_layout(full, resolve_domain(data, domain), unit.column, unit.panel_time)
        domain = wide_domain(resolve_domain(data, domain), layout)
    plan = None
    if isinstance(domain, str) and domain == "dp":
        if dp_bins is not None or bins_share is not None or bins_method is not None:
            raise OptionError("domain=\"dp\" finds every column's bins itself; drop dp_bins, bins_share and "
                              "bins_method (its share of ε is domain_share, its binning domain_bins)")
        plan = plan_dp_domain(data, delta, domain_share, domain_bins,
                              None if declared is None else declared.schema)
        dom = Domain((), DP_FOUND)  # a placeholder: the release finds the domain first (prepare)
    elif domain_share is not None or domain_bins is not None:
        what = "domain_share" if domain_share is not None else "domain_bins"
        raise OptionError(f"{what} is an option of domain=\"dp\"; give domain=\"dp\" too, or drop {what}")
    else:
        dom = resolve_domain(data, domain)
    checked_rules = check_rules(rules, dom if plan is None and layout is None else None, list(map(str, data.columns)))
    bin_specs, bins_share_checked = check_dp_bins(dp_bins, bins_share, bins_method)
    _, count_eps_share = privacy_setup(neighbours, count_share, max_records, unit)
    pre_share = plan.share if plan is not None else bins_share_checked if bin_specs else 0.0
    if pre_share and pre_share + (count_eps_share or 0.0) >= 1:
        # refused before anything is charged (the ledger's cap would stop it part-way)
        raise OptionError("count_share + bins_share leave no ε for the synthetic sets; lower them" if plan is None
                          else "count_share + domain_share leave no ε for the synthetic sets; lower them")

    prepare, codes, curator = _release_steps(source, plan, bin_specs, bins_share_checked)

    def bound(rng: np.random.Generator) -> None:
        """Contribution bounding first, with the release's generator: everything after reads the bounded table
        (or the wide one: a record per unit)."""
        if layout is not None:
            wide = to_wide(full, layout, rng)
            source[0] = wide.data
            curator["privacy_unit"] = {"column": unit.column, "panel_time": unit.panel_time, "units": wide.units,
                                       "records_dropped": wide.dropped_records,
                                       "records_unplaced": wide.unplaced_records}
            return
        bounded = bound_contributions(full, unit, rng)
        source[0] = bounded.data
        curator["privacy_unit"] = {"column": unit.column, "records_per_unit": unit.records_per_unit,
                                   "units": bounded.units, "records_dropped": bounded.dropped_records,
                                   "largest_unit": bounded.largest}

    rel, codes_sets, rng = synthesize_codes(codes, dom, method, epsilon, sets=sets, seed=seed,
                                            neighbours=neighbours, count_share=count_share, max_records=max_records,
                                            prepare=prepare, delta=delta, progress=progress,
                                            levels_delta=plan.levels_delta if plan is not None else 0.0,
                                            before=None if unit.is_record else bound, unit=unit, **options)
    rel.sets = [rel.domain.decode(c, rng) for c in codes_sets]
    if layout is not None:  # the wide records back as a panel, fresh ids (post-processing)
        rel.sets = [to_long(s, layout, rng) for s in rel.sets]
        rel.diagnostics["panel"] = {"privacy_unit": unit.column, "panel_time": unit.panel_time,
                                    "periods": layout.labels, "layout": layout.describe()}
    if plan is not None:  # columns the DP domain withheld are released missing (stated in its warnings)
        record = rel.diagnostics.get("dp_domain", {}).get("columns", {})
        rel.sets = [withhold_columns(s, record) for s in rel.sets]
    if checked_rules:  # declared structural facts, enforced on the synthetic records (post-processing)
        applied = [apply_rules(s, checked_rules) for s in rel.sets]
        rel.sets = [s for s, _ in applied]
        rel.diagnostics["rules"] = {"rules": [r.to_dict() for r in checked_rules],
                                    "records_changed_per_set": [c for _, c in applied]}
    if unfit:
        curator["values_not_fitting_their_type"] = unfit
    if declared is not None and not declared.schema.public:
        rel.dp = False
        rel.dp_reason = ("NOT differentially private: the column types were read from the values (a proposed "
                         "schema), not declared; review them and declare the schema (\"source\": \"declared\")")
    rel.curator_only = {k: v for k, v in curator.items() if v}
    return rel


@dataclass(frozen=True)
class Declared:
    """The table cast to its declared schema, and the schema (columns in the table's order)."""

    data: pd.DataFrame
    schema: Schema


def conform_to_schema(data: pd.DataFrame, schema, unit_column: str | None = None) -> tuple[Declared | None, dict]:
    """``data`` with every column cast to ``schema`` (a :class:`Schema`, its dict or a file; None: the frame's
    dtypes are the declaration, nothing cast) and the count of values per column that did not fit (now missing:
    curator-only, NOT DP). The privacy unit's identifier need not be declared: it is never released."""
    if schema is None:
        return None, {}
    sch = schema if isinstance(schema, Schema) else Schema.from_dict(schema) if isinstance(schema, dict) \
        else Schema.load(schema)
    cols = [c for c in data.columns if str(c) != unit_column or str(c) in sch.names]
    conformed, unfit = sch.conform(data[cols])
    if len(cols) < data.shape[1]:
        conformed[unit_column] = data[unit_column]
        conformed = conformed[list(data.columns)]
    return Declared(conformed, sch.project([str(c) for c in cols])), unfit


def planned_delta_approx(data: pd.DataFrame, domain=None, delta: float | None = None,
                         domain_share: float | None = None, domain_bins: str | None = None, *, schema=None,
                         privacy_unit: str | None = None) -> float:
    """The part of δ a :func:`synthesize` call will spend outside ρ, from public facts only (the plan of
    ``domain="dp"``: the thresholds of levels found privately; 0 otherwise). The budget book reserves a
    release at exactly the ρ its ledger will spend: ρ within (ε, δ − this). ``schema``, ``privacy_unit``: as
    the call's (which columns are levels is the declared schema's)."""
    if delta is None or not (isinstance(domain, str) and domain == "dp"):
        return 0.0
    declared, _ = conform_to_schema(data, schema, privacy_unit)
    frame = data if declared is None else declared.data
    if privacy_unit is not None and privacy_unit in frame.columns:
        frame = frame.drop(columns=[privacy_unit])
    return float(plan_dp_domain(frame, delta, domain_share, domain_bins,
                                None if declared is None else declared.schema).levels_delta)


def _release_steps(source: list, plan, bin_specs: dict, bins_share: float):
    """What :func:`synthesize` hands :func:`synthesize_codes`: ``prepare`` (the domain found with DP, or the
    DP bin edges, or None), ``codes`` (the records recoded and encoded to the release's domain) and the
    curator-only dict they fill (records clamped or recoded per column: NOT DP). ``source[0]`` is the table
    they read, as it is when they run (after contribution bounding, when the privacy unit is not a record)."""
    curator: dict = {}

    # ``budget`` is the release's whole budget in its definition's unit: ε, or ρ under zCDP
    def dp_edges(dom, rng, ledger, nb, budget, definition):
        """DP bin edges first: the options and the codes depend on the domain they finish."""
        new_dom, record, spent = apply_dp_bins(source[0], dom, bin_specs, bins_share * budget, rng, ledger, nb,
                                               definition)
        # PrivTree charges the map of its dyadic scale, at most its share: the sets get what it left
        return new_dom, spent, ({"dp_bin_edges": record} if record else {})

    def found_domain(dom, rng, ledger, nb, budget, definition):
        """The whole domain first, with DP (domain="dp"); the sets get what it did not spend."""
        new_dom, record, spent = dp_domain(source[0], plan, plan.share * budget, rng, ledger, nb, definition)
        return new_dom, spent, {"dp_domain": {"share": plan.share, "bins": plan.bins, "columns": record,
                                              "warnings": fallback_warnings(record),
                                              "derived": "differentially private, charged to this release's "
                                                         "ledger (group \"DP domain\"; docs/methods/dp-domain.md)"}}

    def codes(d: Domain) -> np.ndarray:
        frame = source[0]
        if plan is not None:
            frame, curator["recoded"] = recode_for_domain(frame, d)
        curator["clamped_records"] = d.clamped_counts(frame)
        return encode_records(d, frame)

    prepare = found_domain if plan is not None else dp_edges if bin_specs else None
    return prepare, codes, curator


def synthesize_codes(codes, dom: Domain, method: str = "steps", epsilon: float = 1.0, *, sets: int = 1,
                     seed: int | None = None, neighbours: str = ADD_REMOVE, count_share: float | None = None,
                     max_records: int | None = None, keep=None, prepare=None, delta: float | None = None,
                     progress: Callable[[int, int], Any] | None = None, levels_delta: float = 0.0,
                     before: Callable[[np.random.Generator], None] | None = None,
                     unit: PrivacyUnit = RECORD,
                     **options: Any) -> tuple[Release, list[np.ndarray], np.random.Generator]:
    """The release of :func:`synthesize` before decoding: ``(release with no sets yet, codes
    of each set, the generator positioned where decoding starts)``.

    ``codes`` is a callable taking the release's domain and returning the records' integer
    codes (n, p) over it, or their :class:`dpcore.counting.count_table.CountTable`, called after the
    options are checked, so a bad option costs no reading. ``prepare(dom, rng, ledger,
    neighbours, budget, definition)``, if given, runs first and returns ``(domain, the budget it
    charged to the ledger, manifest diagnostics)`` (the DP bin edges of :func:`synthesize`). Every method counts
    (bincount, margins, mutual information from counts), so the release depends on the
    records only through their multiset: any row order of the codes gives the same
    release (``tests/counting/test_engines.py`` checks it). ``keep``, if given, is applied to each
    set's draw (:mod:`dpcore.estimate.draws`) as soon as its model is fitted, with the release's
    generator: ``keep(draw, rng)`` returns what stands for the set (its records written to disk in
    chunks, or the draw itself for executors to draw); without it each set's records are drawn in
    chunks into one array. ``progress`` as in :func:`synthesize`. ``levels_delta``: the part of δ that
    ``prepare`` spends outside ρ (the thresholds of DP levels, :mod:`dpcore.measure.levels`); ρ is then
    converted at δ − ``levels_delta``, and the release states the whole δ. ``before(rng)``, if given, runs
    first with the release's generator (contribution bounding: :func:`synthesize`); ``unit`` is the privacy
    unit every sensitivity is scaled to (:mod:`dpcore.counting.contributions`). Same privacy guarantee as
    :func:`synthesize`.
    """
    if method not in REGISTRY:
        raise OptionError(f"method must be one of {', '.join(REGISTRY)}; got {method!r}")
    spec = REGISTRY[method]
    eps = check_epsilon(epsilon)
    m = check_sets(sets)
    nb, share = privacy_setup(neighbours, count_share, max_records, unit)
    definition = definition_for(delta)
    if levels_delta:  # δ-approximate zCDP: ρ converts at the δ the thresholds leave (docs/methods/dp-domain.md)
        assert definition.delta is not None  # levels are found under (ε, δ) only (plan_dp_domain)
        definition = definition_for(definition.delta - levels_delta)
    if definition.name not in spec.definitions:
        raise OptionError(f"method {method!r} releases under pure ε-DP only; leave delta unset, or choose one of "
                          f"{', '.join(k for k, v in REGISTRY.items() if definition.name in v.definitions)}")
    budget = definition.budget(Epsilon(eps))  # ε itself, or the largest ρ whose (ε, δ) conversion is within ε
    rng, seed = _rng(seed)
    # the odometer: no charge may take the release past the budget asked for; refused before its noise
    ledger = Ledger.capped(f"release ({method})", budget, definition.delta)
    if before is not None:
        before(rng)
    pre_spent, pre_diag = zero_like(budget), {}
    if prepare is not None:
        dom, pre_spent, pre_diag = prepare(dom, rng, ledger, nb, budget, definition)
    opts = spec.resolve(dom, method, **options)
    if definition.name != "pure":
        opts = spec.for_definition(opts, definition, options, dom)
    X = codes(dom)
    # a count table goes to methods that read counts; the others get its records (same release)
    if isinstance(X, CountTable) and not spec.reads_counts:
        X = X.records()
    elif spec.reads_counts and not isinstance(X, CountTable):
        X = CountTable.from_codes(X, dom.shape)
    n = X.n if isinstance(X, CountTable) else len(X)
    n_out, record_count = release_record_count(n, nb, share, budget, rng, ledger, definition)
    sets_budget = budget - (share * budget if share is not None else zero_like(budget)) - pre_spent
    if sets_budget.value <= 0:
        raise OptionError("count_share + bins_share leave no ε for the synthetic sets; lower them")
    ctx = ReleaseContext(nb, n_out, definition)
    plan = spec.plan(opts, dom, sets_budget, m)
    codes_sets, trees, diagnostics = [], [], []
    for s in range(m):
        if progress is not None:
            progress(s, m)
        result = spec.run_set(SetRequest(X, dom, opts, plan, sets_budget / m, rng, ledger, f"set {s + 1}", ctx))
        draw, tree, diag = result.draw, result.tree, result.diagnostics
        # the set's records are drawn here, in chunks, from the release's generator (post-processing)
        codes_sets.append(keep(draw, rng) if keep is not None else records(draw, rng, len(dom)))
        del draw
        trees.append(tree)
        diagnostics.append(diag)
    del X  # raw codes go no further
    if progress is not None:
        progress(m, m)
    not_dp = spec.not_dp(opts)
    ledger.assert_total(budget)
    dp, why = _dp_status(dom, not_dp, eps, nb, ledger, delta if levels_delta else None)
    diag = {"per_set": diagnostics} if any(diagnostics) else {}
    diag.update(pre_diag)
    rel = Release(method, eps, opts.to_dict(), dom, ledger, [], trees, dp, why, seed, diag,
                  neighbours=nb, record_count=record_count, created=created_now(),
                  delta=delta if levels_delta else definition.delta, levels_delta=levels_delta)
    return rel, codes_sets, rng
