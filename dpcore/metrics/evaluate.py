"""One call for the standard utility and risk measures of m synthetic sets (docs/measures.md),
and the ``evaluate`` / ``sweep`` subcommands of ``python -m dpcore``.

:func:`evaluate` returns one JSON-ready dict: the mean over the sets of each measure
plus ``per_set``.  The measures are the entries of :data:`dpcore.metrics.registry.METRICS`
(each with its name, key, label and the function computing it):

========================  ============================================================
key                       meaning
========================  ============================================================
``s_pmse_2way_mean``      mean S_pMSE over all two-way tables (synthpop ``utility.tab``)
``s_pmse_2way_worst``     S_pMSE of the worst two-way table (largest mean over sets);
                          per set: that set's largest table S_pMSE
``p0``, ``p1``            % empty cells of the full table / % unique original records
``ru``, ``ru_pct_of_p1``  replicated uniques (% of n, and as a % of p1)
``specks``, ``pmse``      SPECKS KS distance and propensity pMSE (one propensity fit)
``l1``                    L1 distance between the full tables (proportions; on request)
``numeric``               per numeric column: Wasserstein-1 and the 10/50/90th percentile
                          errors over its range (divided by its width), and the CI overlap
                          of an OLS regression with a numeric outcome
                          (:mod:`dpcore.metrics.numeric`)
========================  ============================================================

**Not differentially private.**  Every measure reads the raw (original) data; the
results are curator-only evaluation and must not be published as if covered by the
release's ε.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from dpcore.data.domain import DP_FOUND, Domain
from dpcore.errors import OptionError
from dpcore.measure.dp_domain import recode_for_domain
from dpcore.metrics.registry import METRICS, compute_functions
from dpcore.metrics.tables import UtilityTables, synthetic_set_list, utility_tables

__all__ = ["evaluate", "compute_measures", "domain_cells", "MEASURES", "DEFAULT_MEASURES"]

NOT_DP = ("curator-only: computed from the raw data; NOT differentially private, "
          "not covered by the release's ε")

#: canonical measure name -> key in evaluate()'s output (from the registry)
MEASURES = {m.name: m.key for m in METRICS.values()}
_ALIASES = {v: k for k, v in MEASURES.items()}
#: what evaluate() measures when not told (every registered measure but the full table's L1)
DEFAULT_MEASURES = tuple(m.name for m in METRICS.values() if m.default)


def canonical_measures(measures: Iterable[str] | str | None) -> list[str]:
    """Validate measure names (canonical or output keys; a comma string is split)."""
    if measures is None:
        return list(DEFAULT_MEASURES)
    if isinstance(measures, str):
        measures = [m.strip() for m in measures.split(",") if m.strip()]
    out = []
    for m in measures:
        name = _ALIASES.get(m, m)
        if name not in MEASURES:
            raise OptionError(f"unknown measure {m!r}; choose from {', '.join(MEASURES)}")
        if name not in out:
            out.append(name)
    if not out:
        raise OptionError(f"no measures given; choose from {', '.join(MEASURES)}")
    return out


def _nan_to_none(x):
    if isinstance(x, dict):
        return {k: _nan_to_none(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_nan_to_none(v) for v in x]
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        x = float(x)
        return None if math.isnan(x) or math.isinf(x) else x
    return x


def domain_cells(frame: pd.DataFrame, domain) -> pd.DataFrame:
    """Each column of ``frame`` replaced by its code in the public ``domain`` (a categorical of
    codes 0..size−1): a numeric value becomes its bin, a missing value the NA level.

    Measure releases on these, not on the raw values: a synthetic numeric value is drawn inside
    its bin, so compared value by value it never equals an original one, every value is a level
    of its own, and the propensity model separates the two groups perfectly (SPECKS = 1 at
    every ε) while the two-way tables have thousands of cells. On the domain's cells the
    measures compare what the release reproduces; for a table of categorical columns the cells
    are the levels themselves, so the figures do not change."""
    out = {}
    for a in domain.attributes:
        out[a.name] = pd.Categorical.from_codes(a.encode(frame[a.name]), categories=range(a.size))
    return pd.DataFrame(out, index=frame.index)


def release_cells(frame: pd.DataFrame, domain) -> pd.DataFrame:
    """:func:`domain_cells` over a release's own domain: for a domain the release found privately, the records as
    that release read them (text values outside its levels as "other", missing values where it found no missing
    level recoded: :func:`dpcore.measure.dp_domain.recode_for_domain`), numbers clamped into its end bins."""
    if domain.source == DP_FOUND:
        frame = recode_for_domain(frame, domain)[0]
    return domain_cells(frame, domain)


def release_two_way(orig: pd.DataFrame, release) -> tuple[UtilityTables, Domain]:
    """Each two-way table's S_pMSE (:func:`dpcore.metrics.tables.utility_tables`) of ``release`` (a
    :class:`dpcore.Release`, or one read back: anything with ``sets`` and ``manifest()``), scored on the release's
    own domain, the one its manifest states: for bins or a domain found privately, the bins the release found,
    never the placeholders that stood in before it. Returns (the scores, that domain). NOT DP: reads the raw data."""
    domain = Domain.from_dict(release.manifest()["domain"])
    return utility_tables(release_cells(orig, domain), [release_cells(s, domain) for s in release.sets],
                          order=2), domain


def compute_measures(orig: pd.DataFrame, syns, measures: Sequence[str] | None = None,
                     specks_model: str = "interactions", seed: int = 0) -> tuple[dict, list[dict], dict]:
    """The requested measures (canonical names): (means, per_set, extra).

    ``means`` maps each measure to its mean over the sets; ``per_set`` has one dict
    per set with the same keys; ``extra`` holds side information (the worst table).
    NOT differentially private: reads the raw data. Each measure is computed by its registry entry's
    function (:data:`dpcore.metrics.registry.METRICS`), each function once for all the measures
    asked of it.
    """
    measures = canonical_measures(measures)
    syns = synthetic_set_list(syns)
    means: dict = {}
    per_set: list[dict] = [{"set": i + 1} for i in range(len(syns))]
    extra: dict = {}
    want = set(measures)
    for compute in compute_functions(measures):
        got = compute(orig, syns, want, specks_model=specks_model, seed=seed)
        means.update(got.means)
        for row, values in zip(per_set, got.per_set, strict=True):
            row.update(values)
        extra.update(got.extra)
    means = {k: means[k] for k in measures}
    per_set = [{"set": p["set"], **{k: p[k] for k in measures}} for p in per_set]
    return means, per_set, extra


def _numeric_block(orig: pd.DataFrame, syns: list, domain, outcome) -> dict | None:
    """:func:`dpcore.metrics.numeric.numeric_fidelity` over the domain's numeric ranges (or the
    original's numeric columns' own ranges without a domain); None when there is no numeric column."""
    from dpcore.data.domain import Domain
    from dpcore.metrics.numeric import numeric_fidelity, numeric_ranges

    if domain is not None and not isinstance(domain, Domain):
        domain = Domain.from_dict(domain) if isinstance(domain, dict) else Domain.load(domain)
    ranges = numeric_ranges(orig, domain)
    if not ranges:
        if outcome is not None:
            raise OptionError(f"numeric_outcome '{outcome}': the table has no numeric column to measure")
        return None
    return numeric_fidelity(orig, syns, ranges, outcome=outcome)


def evaluate(orig: pd.DataFrame, syns, measures: Sequence[str] | None = None,
             specks_model: str = "interactions", seed: int = 0, domain=None,
             numeric_outcome: str | None = None) -> dict:
    """Utility and risk of m synthetic sets against the original, as one JSON-ready dict.

    Keys (for the default measures): ``s_pmse_2way_mean``, ``s_pmse_2way_worst``,
    ``p0``, ``p1``, ``ru``, ``ru_pct_of_p1``, ``specks``, ``pmse`` — each the mean
    over the sets — plus ``per_set`` (one dict per set with the same keys and
    ``set``), ``m``, ``n_orig``, ``n_syn``, ``s_pmse_2way_worst_table``,
    ``specks_model`` and ``not_dp``.  ``measures`` selects a subset (canonical
    names ``s_pmse``, ``s_pmse_worst``, ``p0``, ``p1``, ``ru``, ``ru_pct_of_p1``,
    ``specks``, ``pmse``, ``l1``, or the output keys).  NaN becomes ``None`` so
    ``json.dumps`` gives valid JSON.

    ``numeric`` (when the table has numeric columns): per column, the Wasserstein-1 distance
    and the 10th/50th/90th percentile errors over its range divided by the range's width, and
    ``regression``: the CI overlap of OLS with the numeric outcome ``numeric_outcome`` (default:
    the first numeric column) on the other columns. The ranges are ``domain``'s numeric
    attributes (a Domain, its dict or a domain.json path) or, without one, the original's own
    min and max of each numeric column with many values (docs/measures.md#numeric-columns).

    **Not differentially private**: this reads the original data (curator-only).
    """
    from dpcore.data.domain import check_table

    check_table(orig)  # bounded work: at most MAX_ATTRIBUTES attributes (pairwise measures)
    syns = synthetic_set_list(syns)
    numeric = _numeric_block(orig, syns, domain, numeric_outcome)  # first: a bad outcome costs no measure
    means, per_set, extra = compute_measures(orig, syns, measures, specks_model, seed)
    out: dict = {"m": len(syns), "n_orig": int(len(orig)), "n_syn": [int(len(s)) for s in syns]}
    out.update({MEASURES[k]: v for k, v in means.items()})
    out.update(extra)
    if numeric is not None:
        out["numeric"] = numeric
    out["per_set"] = [{("set" if k == "set" else MEASURES[k]): v for k, v in p.items()} for p in per_set]
    out["not_dp"] = NOT_DP
    return _nan_to_none(out)
