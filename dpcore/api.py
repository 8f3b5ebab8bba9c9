"""The two entry points: :func:`synthesize` (spends ε) and :func:`preview` (spends nothing)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import pandas as pd

from dpcore.counting.count_table import CountTable
from dpcore.data.domain import (
    DECLARED,
    DP_FOUND,
    FOUND_IN_RELEASE,
    Domain,
    check_table,
    infer_domain,
    not_public_message,
)
from dpcore.errors import DomainError, OptionError, ResourceError, whole_number
from dpcore.estimate.draws import records
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
from dpcore.synthesizers import REGISTRY, steps
from dpcore.synthesizers import hierarchy as H
from dpcore.synthesizers.empty_share import empty_share_warning, leaf_empty_share
from dpcore.synthesizers.method import SetRequest
from dpcore.synthesizers.options import check_sets
from dpcore.synthesizers.steps import PRIVATE_SELECTIONS

METHODS = tuple(REGISTRY)



def _domain(data: pd.DataFrame, domain) -> Domain:
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


def _encode(dom: Domain, data: pd.DataFrame) -> np.ndarray:
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


def _definition_plan(definition: Definition, budget: Budget) -> dict:
    """What a preview's plan says of the privacy definition: the unit of its ``*_budget*`` figures
    (``budget_unit``: "epsilon" under pure ε, "rho" under zCDP), and under zCDP δ and the whole ρ."""
    if definition.name == "pure":
        return {"budget_unit": "epsilon"}
    return {"delta": definition.delta, "rho": budget.value, "budget_unit": "rho"}


def privacy_setup(neighbours, count_share, max_records) -> tuple[Neighbours, float | None]:
    """The release's neighbour notion and the share of ε for the noisy record count.

    ``count_share`` applies only under add/remove (default 5%); under replace n is
    public and nothing is spent on it.
    """
    nb = Neighbours(check_neighbours(neighbours), DEFAULT_MAX_RECORDS if max_records is None else max_records)
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
               **options: Any) -> Release:
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

    ``progress(sets_done, sets)``, if given, is called before each set and once after the last;
    an exception it raises stops the release before the next set, and nothing is returned (the
    app's Cancel button). It sees no data, so the guarantee is unchanged.
    """
    if method not in REGISTRY:
        raise OptionError(f"method must be one of {', '.join(REGISTRY)}; got {method!r}")
    plan = None
    if isinstance(domain, str) and domain == "dp":
        if dp_bins is not None or bins_share is not None or bins_method is not None:
            raise OptionError("domain=\"dp\" finds every column's bins itself; drop dp_bins, bins_share and "
                              "bins_method (its share of ε is domain_share, its binning domain_bins)")
        plan = plan_dp_domain(data, delta, domain_share, domain_bins)
        dom = Domain((), DP_FOUND)  # a placeholder: the release finds the domain first (prepare)
    elif domain_share is not None or domain_bins is not None:
        what = "domain_share" if domain_share is not None else "domain_bins"
        raise OptionError(f"{what} is an option of domain=\"dp\"; give domain=\"dp\" too, or drop {what}")
    else:
        dom = _domain(data, domain)
    bin_specs, bins_share_checked = check_dp_bins(dp_bins, bins_share, bins_method)
    _, count_eps_share = privacy_setup(neighbours, count_share, max_records)
    pre_share = plan.share if plan is not None else bins_share_checked if bin_specs else 0.0
    if pre_share and pre_share + (count_eps_share or 0.0) >= 1:
        # refused before anything is charged (the ledger's cap would stop it part-way)
        raise OptionError("count_share + bins_share leave no ε for the synthetic sets; lower them" if plan is None
                          else "count_share + domain_share leave no ε for the synthetic sets; lower them")

    prepare, codes, curator = _release_steps(data, plan, bin_specs, bins_share_checked)
    rel, codes_sets, rng = synthesize_codes(codes, dom, method, epsilon, sets=sets, seed=seed,
                                            neighbours=neighbours, count_share=count_share, max_records=max_records,
                                            prepare=prepare, delta=delta, progress=progress,
                                            levels_delta=plan.levels_delta if plan is not None else 0.0, **options)
    rel.sets = [rel.domain.decode(c, rng) for c in codes_sets]
    if plan is not None:  # columns the DP domain withheld are released missing (stated in its warnings)
        record = rel.diagnostics.get("dp_domain", {}).get("columns", {})
        rel.sets = [withhold_columns(s, record) for s in rel.sets]
    rel.curator_only = {k: v for k, v in curator.items() if v}
    return rel


def planned_delta_approx(data: pd.DataFrame, domain=None, delta: float | None = None,
                         domain_share: float | None = None, domain_bins: str | None = None) -> float:
    """The part of δ a :func:`synthesize` call will spend outside ρ, from public facts only (the plan of
    ``domain="dp"``: the thresholds of levels found privately; 0 otherwise). The budget book reserves a
    release at exactly the ρ its ledger will spend: ρ within (ε, δ − this)."""
    if delta is None or not (isinstance(domain, str) and domain == "dp"):
        return 0.0
    return float(plan_dp_domain(data, delta, domain_share, domain_bins).levels_delta)


def _release_steps(data: pd.DataFrame, plan, bin_specs: dict, bins_share: float):
    """What :func:`synthesize` hands :func:`synthesize_codes`: ``prepare`` (the domain found with DP, or the
    DP bin edges, or None), ``codes`` (the records recoded and encoded to the release's domain) and the
    curator-only dict they fill (records clamped or recoded per column: NOT DP)."""
    curator: dict = {}

    # ``budget`` is the release's whole budget in its definition's unit: ε, or ρ under zCDP
    def dp_edges(dom, rng, ledger, nb, budget, definition):
        """DP bin edges first: the options and the codes depend on the domain they finish."""
        new_dom, record, spent = apply_dp_bins(data, dom, bin_specs, bins_share * budget, rng, ledger, nb,
                                               definition)
        # PrivTree charges the map of its dyadic scale, at most its share: the sets get what it left
        return new_dom, spent, ({"dp_bin_edges": record} if record else {})

    def found_domain(dom, rng, ledger, nb, budget, definition):
        """The whole domain first, with DP (domain="dp"); the sets get what it did not spend."""
        new_dom, record, spent = dp_domain(data, plan, plan.share * budget, rng, ledger, nb, definition)
        return new_dom, spent, {"dp_domain": {"share": plan.share, "bins": plan.bins, "columns": record,
                                              "warnings": fallback_warnings(record),
                                              "derived": "differentially private, charged to this release's "
                                                         "ledger (group \"DP domain\"; docs/methods/dp-domain.md)"}}

    def codes(d: Domain) -> np.ndarray:
        frame = data
        if plan is not None:
            frame, curator["recoded"] = recode_for_domain(data, d)
        curator["clamped_records"] = d.clamped_counts(frame)
        return _encode(d, frame)

    prepare = found_domain if plan is not None else dp_edges if bin_specs else None
    return prepare, codes, curator


def synthesize_codes(codes, dom: Domain, method: str = "steps", epsilon: float = 1.0, *, sets: int = 1,
                     seed: int | None = None, neighbours: str = ADD_REMOVE, count_share: float | None = None,
                     max_records: int | None = None, keep=None, prepare=None, delta: float | None = None,
                     progress: Callable[[int, int], Any] | None = None, levels_delta: float = 0.0,
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
    converted at δ − ``levels_delta``, and the release states the whole δ. Same privacy guarantee as
    :func:`synthesize`.
    """
    if method not in REGISTRY:
        raise OptionError(f"method must be one of {', '.join(REGISTRY)}; got {method!r}")
    spec = REGISTRY[method]
    eps = check_epsilon(epsilon)
    m = check_sets(sets)
    nb, share = privacy_setup(neighbours, count_share, max_records)
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
                   bins_share: float = 0.0, delta: float | None = None, **options: Any) -> list:
    """How large the noise on each kind of count ``method`` releases is against the count it is
    added to: a list of :class:`dpcore.synthesizers.empty_share.NoiseRow` (noise SD per count, typical count
    n/cells, whether the noise is larger). Spends nothing and reads no data: the public domain,
    the options, ε, m, the neighbour notion and a record count ``n`` — the released noisy count
    (public), or the curator's own n (then the answer is curator-only). ``bins_share``: the
    share of ε the release spends on DP bin edges (``synthesize(..., dp_bins=...)``). With ``delta``
    the noise is what an (ε, δ) release through zCDP draws (discrete Gaussian at shares of its ρ), and
    each row's ``epsilon`` is then that share of ρ.
    """
    if method not in REGISTRY:
        raise OptionError(f"method must be one of {', '.join(REGISTRY)}; got {method!r}")
    eps = check_epsilon(epsilon)
    m = check_sets(sets)
    dom = domain if isinstance(domain, Domain) else Domain.from_dict(domain)
    spec = REGISTRY[method]
    definition = definition_for(delta)
    opts = spec.resolve(dom, method, **options)
    if definition.name != "pure":
        opts = spec.for_definition(opts, definition, options, dom)
    nb, share = privacy_setup(neighbours, count_share, max_records)
    sets_budget = definition.budget(Epsilon(eps)) * (1.0 - (share or 0.0) - float(bins_share))
    if sets_budget.value <= 0:
        raise OptionError("count_share + bins_share leave no ε for the synthetic sets; lower them")
    return spec.noise_rows(opts, dom, sets_budget, m, max(float(n), 1.0), nb, definition)


def preview(data: pd.DataFrame, method: str = "steps", epsilon: float = 1.0, *, sets: int = 1, domain=None,
            neighbours: str = ADD_REMOVE, count_share: float | None = None, max_records: int | None = None,
            delta: float | None = None, **options: Any) -> Preview | MarginPreview:
    """Describe what a release would measure, spending no budget.

    Hierarchical methods (STEPS and its variants) return a :class:`Preview` of the tree;
    margin methods a :class:`MarginPreview` with the noise scale per margin. Same
    privacy options as :func:`synthesize` (the noise scales depend on them). For
    private selection the tree shown takes the most likely attribute at each node;
    the probabilities behind it come from the raw data (curator-only). With ``delta`` the
    budgets are ρ (zCDP, as :func:`synthesize` with ``delta``): the tables' budget column is
    then ``rho`` instead of ``epsilon``.
    """
    if method not in REGISTRY:
        raise OptionError(f"method must be one of {', '.join(REGISTRY)}; got {method!r}")
    definition = definition_for(delta)
    privacy = (neighbours, count_share, max_records)
    if not REGISTRY[method].hierarchical:
        return _margin_preview(data, method, epsilon, sets, domain, privacy, definition, options)
    return _steps_preview(data, method, epsilon, sets, domain, privacy, definition, options)


def _margin_preview(data: pd.DataFrame, method: str, epsilon: float, sets: int, domain, privacy: tuple,
                    definition, options: dict) -> MarginPreview:
    """:func:`preview` of a margin method: the noise scale per margin, from its registry entry."""
    eps = check_epsilon(epsilon)
    m = check_sets(sets)
    dom = _domain(data, domain)
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
            **_definition_plan(definition, budget),
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
    dom = _domain(data, domain)
    opts = REGISTRY[method].resolve(dom, method, **options)
    if definition.name != "pure":
        opts = REGISTRY[method].for_definition(opts, definition, options, dom)
    nb, share = privacy_setup(*privacy)
    X = _encode(dom, data)
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
        **_definition_plan(definition, budget),
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
