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
from dataclasses import dataclass, field
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


@dataclass(frozen=True)
class _Context:
    """What every run of one sweep shares: the data, its domain and cells, the measures and the cache."""

    data: pd.DataFrame
    dom: dpcore.Domain
    dom_json: str
    data_hash: str
    cells: Any
    measures: Sequence[str]
    cache_path: Path | None
    seed: int
    sets: int
    specks_model: str
    cancel: Any

    def is_cancelled(self) -> bool:
        return self.cancel is not None and bool(self.cancel.is_set())


@dataclass
class _Tally:
    """The sweep's counters, as :func:`sweep` reports them in ``df.attrs``."""

    done: int = 0
    cache_hits: int = 0
    releases: int = 0
    errors: list[str] = field(default_factory=list)
    cancelled: bool = False


def _run_once(ctx: _Context, tally: _Tally, label: str, name: str, opts: dict, eps: float,
              rep: int) -> tuple[dict, str]:
    """One (method, ε, rep) run: its measures from the cache, or a release measured now; ``(values, how)``.
    A method's refusal gives NaN values and is counted in ``tally.errors``; a cancel between measures sets
    ``tally.cancelled`` and stores nothing."""
    key = _run_key([ctx.data_hash, ctx.dom_json, name, opts, eps, rep, ctx.seed, ctx.sets, ctx.specks_model])
    values = _cached_values(key, ctx.measures, ctx.cache_path)
    missing = [m for m in ctx.measures if m not in values]
    if not missing:
        tally.cache_hits += 1
        _MEMORY[key] = {**_MEMORY.get(key, {}), **values}
        return values, "cached"
    try:
        release = dpcore.synthesize(ctx.data, method=name, epsilon=eps, sets=ctx.sets,
                                    seed=run_seed(ctx.seed, name, opts, eps, rep), domain=ctx.dom, **opts)
        tally.releases += 1
        tally.cancelled = _measure_into(values, release, ctx.dom, ctx.cells, missing, ctx.specks_model,
                                        ctx.is_cancelled)
    except DPCoreError as exc:
        tally.errors.append(f"{label} ε={eps:g} rep {rep}: {exc}")
        return {m: math.nan for m in ctx.measures}, f"failed ({exc})"
    if not tally.cancelled:
        _remember(key, values, ctx.cache_path)
    return values, "synthesised"


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

    ``methods``: names (``"steps"``, …) or ``(label, method, options)`` triples, e.g. ``("STEPS-2", "steps",
    {"layers": 2})``; ``method_options`` are merged into the methods given by name (keyed by name or label;
    a triple's options win). ``epsilons``, ``reps``: the ε grid and the repetitions per (method, ε).
    ``measures``: names of :data:`dpcore.metrics.registry.METRICS` (``s_pmse``, the mean two-way S_pMSE,
    ``ru``, ``specks``, …), each the mean over the release's ``sets`` synthetic sets.
    ``progress(done, total, message)`` is called after each run (cached or not). ``cancel`` (anything with
    ``is_set()``) is checked before each release and between measures: the sweep then returns the runs
    finished so far, with ``df.attrs["cancelled"] = True``. ``domain``: a :class:`dpcore.Domain`, dict or
    path, else inferred once from ``data`` for every release. Each run's seed is :func:`run_seed` of
    (``seed``, method, options, ε, rep); ``cache_dir`` holds one JSON file of results per run.
    ``specks_model``: the propensity model of ``specks``/``pmse`` (``"interactions"``, the 2021 paper's).

    Returns a tidy DataFrame (``method`` label, ``options`` JSON, ``epsilon``, ``rep`` from 1, ``measure``,
    ``value``); ``df.attrs`` holds ``cancelled``, ``done``, ``total``, ``cache_hits``, ``releases`` (runs
    synthesised anew), ``errors`` (runs a method refused: NaN values) and ``not_dp``. Every measure compares
    the domain's cells (numeric values as their bins, :func:`dpcore.metrics.evaluate.domain_cells`).

    **The measures are NOT differentially private** (they read the raw data): curator-only evaluation.
    """
    measures = canonical_measures(measures)
    runs = _normalise_methods(methods, method_options)
    eps_list = [check_epsilon(e) for e in epsilons]
    if not eps_list:
        raise OptionError("epsilons must list at least one ε, e.g. 0.5,1,2")
    reps = whole_number("reps (repetitions per method and ε)", reps, 1, MAX_REPS)
    dom = _domain(data, domain)
    dom_json = _json(dom.to_dict())
    cache_path = Path(cache_dir) if cache_dir is not None else None
    if cache_path is not None:
        cache_path.mkdir(parents=True, exist_ok=True)

    # measured on the domain's cells (numeric values as their bins): see domain_cells
    ctx = _Context(data, dom, dom_json, _data_hash(data), domain_cells(data, dom), measures, cache_path, int(seed),
                   int(sets), specks_model, cancel)
    total = len(runs) * len(eps_list) * reps
    rows: list[tuple] = []
    tally = _Tally()
    for label, name, opts in runs:
        opts_json = _json(opts)
        for eps in eps_list:
            for rep in range(1, reps + 1):
                if ctx.is_cancelled():
                    tally.cancelled = True
                    break
                t0 = time.perf_counter()
                values, how = _run_once(ctx, tally, label, name, opts, eps, rep)
                if tally.cancelled:
                    break
                rows.extend((label, opts_json, eps, rep, measure, values[measure]) for measure in measures)
                tally.done += 1
                if progress is not None:
                    progress(tally.done, total, f"{label} ε={eps:g} rep {rep}/{reps}: {how} "
                                                f"in {time.perf_counter() - t0:.1f} s")
            if tally.cancelled:
                break
        if tally.cancelled:
            break
    done, cache_hits, releases, errors, cancelled = (tally.done, tally.cache_hits, tally.releases, tally.errors,
                                                     tally.cancelled)

    df = pd.DataFrame(rows, columns=COLUMNS)
    df["epsilon"] = df["epsilon"].astype(float)
    df["rep"] = df["rep"].astype(np.int64)
    df["value"] = df["value"].astype(float)
    df.attrs.update({
        "cancelled": cancelled, "done": done, "total": total, "cache_hits": cache_hits,
        "releases": releases, "errors": errors, "not_dp": NOT_DP,
    })
    return df
