"""Sweeps: run synthesis methods over an ε grid with repetitions, recording measures (docs/measures.md).

    >>> df = sweep(data, [("STEPS-2", "steps", {"layers": 2}), "flat_laplace"],
    ...            epsilons=[0.1, 0.5, 1, 2, 5], reps=3, measures=("s_pmse", "ru", "specks"))
    >>> df.columns  # method, options, epsilon, rep, measure, value

The synthetic releases are differentially private (each spends its own ε), but
**the measures are not**: they read the raw (original) data.  A sweep is therefore
curator-only evaluation; its table must not be published as if covered by any ε.

Reproducibility: each run (method, options, ε, rep) uses the seed
``sha256([seed, method, options, ε, rep])`` truncated to 63 bits, so a run gives the
same release whatever else is in the grid.  Results are cached by a SHA-256 of the
data (``pd.util.hash_pandas_object`` plus column names and dtypes), the domain
JSON, the method, options, ε, rep, seed, number of sets and SPECKS model: in memory
for the life of the process, and as one JSON file per run in ``cache_dir`` if given.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import dpcore
from dpcore.errors import DPCoreError, OptionError, whole_number
from dpcore.metrics.evaluate import NOT_DP, canonical_measures, compute_measures, domain_cells
from dpcore.privacy.ledger import check_epsilon

__all__ = ["sweep", "clear_cache", "run_seed"]

COLUMNS = ["method", "options", "epsilon", "rep", "measure", "value"]

# key -> {measure: value}
_MEMORY: dict[str, dict[str, float]] = {}


def clear_cache() -> None:
    """Forget the in-memory results (the on-disk cache is left alone)."""
    _MEMORY.clear()


def _json(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def run_seed(seed: int, method: str, options: dict, epsilon: float, rep: int) -> int:
    """The seed of one run: SHA-256 of (seed, method, options, ε, rep), 63 bits."""
    h = hashlib.sha256(_json([int(seed), method, options, float(epsilon), int(rep)]).encode()).digest()
    return int.from_bytes(h[:8], "big") >> 1


def _data_hash(data: pd.DataFrame) -> str:
    h = hashlib.sha256()
    h.update(_json([[str(c), str(t)] for c, t in data.dtypes.items()]).encode())
    h.update(pd.util.hash_pandas_object(data, index=False).to_numpy().tobytes())
    return h.hexdigest()


def _normalise_methods(methods, method_options) -> list[tuple[str, str, dict]]:
    method_options = dict(method_options or {})
    if isinstance(methods, str):
        methods = [m.strip() for m in methods.split(",") if m.strip()]
    out = []
    for item in methods:
        if isinstance(item, str):
            label, name, opts = item, item, {}
        else:
            try:
                label, name, opts = item
            except (TypeError, ValueError):
                raise OptionError(
                    f"each method must be a name or a (label, method, options) triple; got {item!r}"
                ) from None
            opts = dict(opts or {})
        if name not in dpcore.METHODS:
            raise OptionError(f"method must be one of {', '.join(dpcore.METHODS)}; got {name!r}")
        merged = {**method_options.get(name, {}), **(method_options.get(label, {}) if label != name else {}),
                  **opts}
        out.append((str(label), name, merged))
    labels = [m[0] for m in out]
    dup = sorted({x for x in labels if labels.count(x) > 1})
    if dup:
        raise OptionError(f"method labels must be distinct; {dup} appear more than once")
    if not out:
        raise OptionError("no methods given")
    return out


def _domain(data, domain):
    if domain is None:
        return dpcore.infer_domain(data)
    if isinstance(domain, dpcore.Domain):
        return domain
    if isinstance(domain, dict):
        return dpcore.Domain.from_dict(domain)
    return dpcore.Domain.load(domain)


#: Bound on the repetitions of a sweep: each one is a full release per method and ε.
MAX_REPS = 1000


def _run_key(parts: list) -> str:
    """The cache key of one run: SHA-256 of its data, domain, method, options, ε, rep, seed, sets
    and SPECKS model (measured on the domain's cells)."""
    return hashlib.sha256(_json([*parts, "cells"]).encode()).hexdigest()


def _cached_values(key: str, measures: Sequence[str], cache_path: Path | None) -> dict:
    """The measures known for a run: in memory, else (for the ones missing) its JSON file in the cache."""
    values = dict(_MEMORY.get(key, {}))
    if cache_path is not None and not all(m in values for m in measures):
        f = cache_path / f"{key}.json"
        if f.exists():
            try:
                values.update(json.loads(f.read_text()))
            except (OSError, ValueError):
                pass
    return values


def _remember(key: str, values: dict, cache_path: Path | None) -> None:
    """Keep a run's measures in memory and (atomically) in its JSON file of the cache."""
    _MEMORY[key] = {**_MEMORY.get(key, {}), **values}
    if cache_path is not None:
        tmp = cache_path / f"{key}.json.tmp"
        tmp.write_text(json.dumps(_MEMORY[key]))
        os.replace(tmp, cache_path / f"{key}.json")


def _measure_into(values: dict, release, dom, cells, missing: Sequence[str], specks_model: str,
                  is_cancelled: Callable[[], bool]) -> bool:
    """Add the ``missing`` measures of a release's sets to ``values``, one by one; whether the sweep
    was cancelled in between (the measures so far are then dropped by the caller)."""
    syn_cells = [domain_cells(s, dom) for s in release.sets]
    for measure in missing:
        if is_cancelled():
            return True
        means, _, _ = compute_measures(cells, syn_cells, [measure], specks_model=specks_model, seed=0)
        values[measure] = float(means[measure])
    return False


def sweep(
    data: pd.DataFrame,
    methods: Sequence,
    epsilons: Iterable[float],
    reps: int,
    measures: Sequence[str] = ("s_pmse", "ru", "specks"),
    progress: Callable[[int, int, str], Any] | None = None,
    cancel: Any = None,
    domain=None,
    seed: int = 0,
    cache_dir: str | os.PathLike | None = None,
    sets: int = 1,
    method_options: dict | None = None,
    specks_model: str = "interactions",
) -> pd.DataFrame:
    """Run every method at every ε, ``reps`` times, and record the measures.

    Parameters
    ----------
    data:
        the original data.
    methods:
        method names (``"steps"``, ``"flat_laplace"``, ...) or ``(label, method,
        options)`` triples, e.g. ``("STEPS-2", "steps", {"layers": 2})``.
    epsilons, reps:
        the ε grid and the number of repetitions per (method, ε).
    measures:
        any of ``s_pmse`` (mean two-way S_pMSE), ``s_pmse_worst``, ``ru``,
        ``ru_pct_of_p1``, ``p0``, ``p1``, ``specks``, ``pmse``, ``l1``; each value is
        the mean over the release's ``sets`` synthetic sets.
    progress:
        ``progress(done, total, message)``, called after each run (cached or not).
    cancel:
        an object with ``is_set()`` (e.g. ``threading.Event``), checked before each
        release and between measures; when set the sweep stops and returns the runs
        finished so far, with ``df.attrs["cancelled"] = True``.
    domain:
        a :class:`dpcore.Domain`, dict or path to ``domain.json``; if None it is
        inferred once from ``data`` and the same domain is used for every release.
    seed:
        base seed; each run's seed is :func:`run_seed` of (seed, method, options, ε, rep).
    cache_dir:
        optional directory holding one JSON file of results per run.
    sets:
        synthetic sets m per release.
    method_options:
        options merged into the methods given by name (keyed by method name or
        label), e.g. ``{"steps": {"layers": 3}}``; options in a triple win.
    specks_model:
        propensity model for ``specks``/``pmse`` (``"interactions"``, the 2021 paper's).

    Returns a tidy DataFrame with columns ``method`` (label), ``options`` (JSON),
    ``epsilon``, ``rep`` (1-based), ``measure``, ``value``.  ``df.attrs`` holds
    ``cancelled``, ``done``, ``total``, ``cache_hits``, ``releases`` (runs
    synthesised anew), ``errors`` (runs a method refused, whose values are NaN) and
    ``not_dp``. Every measure compares the domain's cells (numeric values as their bins,
    :func:`dpcore.metrics.evaluate.domain_cells`), what the release reproduces.

    **The measures are NOT differentially private** (they read the raw data):
    curator-only evaluation.
    """
    measures = canonical_measures(measures)
    runs = _normalise_methods(methods, method_options)
    eps_list = [check_epsilon(e) for e in epsilons]
    if not eps_list:
        raise OptionError("epsilons must list at least one ε, e.g. 0.5,1,2")
    reps = whole_number("reps (repetitions per method and ε)", reps, 1, MAX_REPS)
    dom = _domain(data, domain)
    dom_json = _json(dom.to_dict())
    data_hash = _data_hash(data)
    cache_path = Path(cache_dir) if cache_dir is not None else None
    if cache_path is not None:
        cache_path.mkdir(parents=True, exist_ok=True)

    # measured on the domain's cells (numeric values as their bins): see domain_cells
    cells = domain_cells(data, dom)
    total = len(runs) * len(eps_list) * reps
    rows: list[tuple] = []
    done = cache_hits = releases = 0
    errors: list[str] = []
    cancelled = False

    def is_cancelled() -> bool:
        return cancel is not None and bool(cancel.is_set())

    for label, name, opts in runs:
        opts_json = _json(opts)
        for eps in eps_list:
            for rep in range(1, reps + 1):
                if is_cancelled():
                    cancelled = True
                    break
                t0 = time.perf_counter()
                key = _run_key([data_hash, dom_json, name, opts, eps, rep, int(seed), int(sets), specks_model])
                values = _cached_values(key, measures, cache_path)
                missing = [m for m in measures if m not in values]
                how = "cached"
                if missing:
                    how = "synthesised"
                    try:
                        release = dpcore.synthesize(
                            data, method=name, epsilon=eps, sets=sets,
                            seed=run_seed(seed, name, opts, eps, rep), domain=dom, **opts,
                        )
                        releases += 1
                        cancelled = _measure_into(values, release, dom, cells, missing, specks_model, is_cancelled)
                    except DPCoreError as exc:
                        msg = f"{label} ε={eps:g} rep {rep}: {exc}"
                        errors.append(msg)
                        how = f"failed ({exc})"
                        values = {m: math.nan for m in measures}
                    if cancelled:
                        break
                    if not how.startswith("failed"):
                        _remember(key, values, cache_path)
                else:
                    cache_hits += 1
                    _MEMORY[key] = {**_MEMORY.get(key, {}), **values}
                for measure in measures:
                    rows.append((label, opts_json, eps, rep, measure, values[measure]))
                done += 1
                if progress is not None:
                    progress(done, total, f"{label} ε={eps:g} rep {rep}/{reps}: {how} "
                                          f"in {time.perf_counter() - t0:.1f} s")
            if cancelled:
                break
        if cancelled:
            break

    df = pd.DataFrame(rows, columns=COLUMNS)
    df["epsilon"] = df["epsilon"].astype(float)
    df["rep"] = df["rep"].astype(np.int64)
    df["value"] = df["value"].astype(float)
    df.attrs.update({
        "cancelled": cancelled, "done": done, "total": total, "cache_hits": cache_hits,
        "releases": releases, "errors": errors, "not_dp": NOT_DP,
    })
    return df
