"""The adviser's error model: each method's expected error on a table, predicted from public facts.

The error is the mean two-way S_pMSE of a release (synthpop's utility measure: 1 is as good as a
resample of the data, larger is worse), predicted on a log10 scale from **public facts only**: the
declared domain's level counts, ε, the privacy definition (pure ε or (ε, δ) through zCDP), the
number of sets m and a public record count n (:func:`public_facts`). It takes a
:class:`dpcore.data.domain.Domain` and numbers, never records, so a prediction is not a use of the
data (docs/methods/adviser.md).

The model is data: ``adviser_model.json`` beside this module, written by ``bench/accuracy/fit_adviser.py``
from the corpus results (``bench/data/corpus_results.csv``). A method's predicted log10 error is the sum of
two parts: the *level* of the case (the mean log10 error of the methods on that table and setting),
shared by every method, and the method's *relative* error (its log10 error minus that mean), one
predictor per method; the ranking depends on the relative parts only. Each part is either a linear
model (intercept and coefficients on the standardised features) or gradient-boosted regression trees
(scikit-learn's, exported node by node); :class:`ErrorModel` evaluates both with numpy, with no
pickle and no scikit-learn at run time.
"""
from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from dpcore.data.domain import Domain
from dpcore.errors import InputError, OptionError
from dpcore.synthesizers.aim import ROUNDS_PER_ATTRIBUTE

__all__ = ["FEATURES", "PublicFacts", "public_facts", "facts_from_levels", "ErrorModel", "load_model", "MODEL_PATH",
           "N_GRID"]

MODEL_PATH = Path(__file__).with_name("adviser_model.json")

#: The features, in the order the model's coefficients and trees use them.
FEATURES = (
    "attributes",          # p
    "log10_cells",         # log10 of the full table's cells (the product of the level counts)
    "log10_max_levels",
    "log10_mean_levels",
    "log10_pair_cells",    # log10 of the mean number of cells of a two-way table
    "log10_epsilon",
    "zcdp",                # 1 under (ε, δ) through zCDP, 0 under pure ε
    "log10_sets",
    "log10_n",
    "log10_signal",        # log10(n · ε/m / mean two-way cells): records per two-way cell, times ε per set
    "log10_full_signal",   # log10(n · ε/m / cells): records per cell of the full table, times ε per set
    "log10_pairs_signal",  # log10(n · ε/m / the cells of all two-way tables together): what a method that
                           # measures every two-way table (DP ipf) has per cell once ε is split over them
    # The five below (2026-11-28, second corpus refit) spell out how each kind of method splits ε/m, so that
    # depth-3 trees need not build the differences from splits; each added 1–2 points leave-one-table-out.
    "log10_pairs",         # log10 of the number of two-way tables, p(p − 1)/2 (0 for p < 2)
    "log10_records_budget",  # log10(n · ε/m): the records times the budget of one set
    "log10_round_signal",  # log10_signal − log10(4p): per mean two-way cell at one of AIM's 4·p starting rounds
                           # (4: dpcore.synthesizers.aim.ROUNDS_PER_ATTRIBUTE, its default under both definitions)
    "log10_tree_signal",   # log10_signal − log10(2p − 1): MST's p one-way and p − 1 two-way measurements
    "log10_pair_to_full_cells",  # log10(cells of all two-way tables / cells of the full table): above 0 when
                                 # one noisy full table (flat Laplace) has fewer cells than the two-way tables
)

#: Without a public record count, predictions are averaged over these n (the corpus's range, 10² to 10⁶).
N_GRID = (1e2, 1e3, 1e4, 1e5, 1e6)


@dataclass(frozen=True)
class PublicFacts:
    """The public facts one prediction reads (see :data:`FEATURES`)."""

    levels: tuple
    epsilon: float
    zcdp: bool
    sets: int
    n: float

    def vector(self) -> np.ndarray:
        lv = np.asarray(self.levels, dtype=float)
        p = len(lv)
        logs = np.log10(lv)
        if p >= 2:
            pairs = [logs[i] + logs[j] for i in range(p) for j in range(i + 1, p)]
            pair_cells = float(np.mean(np.power(10.0, pairs)))
            all_pair_cells = pair_cells * len(pairs)
        else:
            pair_cells = all_pair_cells = float(lv[0])
        per_set = self.epsilon / self.sets
        return np.array([
            p, float(logs.sum()), float(logs.max()), math.log10(float(lv.mean())), math.log10(pair_cells),
            math.log10(self.epsilon), float(self.zcdp), math.log10(self.sets), math.log10(self.n),
            math.log10(self.n * per_set / pair_cells), math.log10(self.n * per_set) - float(logs.sum()),
            math.log10(self.n * per_set / all_pair_cells),
            math.log10(max(p * (p - 1) / 2, 1.0)),
            math.log10(self.n * per_set),
            math.log10(self.n * per_set / pair_cells) - math.log10(ROUNDS_PER_ATTRIBUTE * p),
            math.log10(self.n * per_set / pair_cells) - math.log10(2 * p - 1),
            math.log10(all_pair_cells) - float(logs.sum()),
        ])


def facts_from_levels(levels: Sequence[int], epsilon: float, sets: int, n: float, *, zcdp: bool) -> PublicFacts:
    """:class:`PublicFacts` from the level counts of the attributes (public numbers)."""
    levels = tuple(int(k) for k in levels)
    if not levels or min(levels) < 1:
        raise InputError(f"the adviser needs at least one attribute with at least one level; got levels {levels}")
    for name, value in (("epsilon", epsilon), ("n (records)", n)):
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise OptionError(f"{name} must be a number above 0 for the adviser; got {value!r}")
    if int(sets) < 1:
        raise OptionError(f"sets must be a whole number of at least 1; got {sets!r}")
    return PublicFacts(levels, float(epsilon), bool(zcdp), int(sets), max(float(n), 1.0))


def public_facts(domain: Domain, epsilon: float, sets: int, n: float, *, zcdp: bool) -> PublicFacts:
    """The public facts of a design: the domain's level counts (not its records), ε, the definition, m and a
    public record count ``n`` (the noisy count of a release, n under replace-one neighbours, or the
    curator's own public figure)."""
    if not isinstance(domain, Domain):
        raise InputError(f"the adviser reads a declared domain, not {type(domain).__name__}: give dpcore.Domain")
    return facts_from_levels(domain.shape, epsilon, sets, n, zcdp=zcdp)


def _tree_predict(tree: dict, x: np.ndarray) -> float:
    """One exported regression tree (scikit-learn's layout: a node goes left when x[feature] <= threshold,
    with x rounded to float32 as scikit-learn compares it; a leaf has left == -1)."""
    xs = x.astype(np.float32).astype(np.float64)
    node = 0
    left, right, feat, thr, value = tree["left"], tree["right"], tree["feature"], tree["threshold"], tree["value"]
    while left[node] != -1:
        node = left[node] if xs[feat[node]] <= thr[node] else right[node]
    return float(value[node])


@dataclass(frozen=True)
class ErrorModel:
    """The fitted model: per method, a ``linear`` or ``trees`` predictor of log10 S_pMSE (see the module
    docstring), and what its leave-one-table-out validation found (``validation``)."""

    kind: str
    methods: dict
    level: dict | None = None
    features: tuple = FEATURES
    validation: dict | None = None
    fitted_on: dict | None = None

    @classmethod
    def from_dict(cls, d: dict) -> ErrorModel:
        if tuple(d.get("features", ())) != FEATURES:
            raise InputError("the adviser's model was fitted on other features than this code computes: refit it "
                             "with bench/accuracy/fit_adviser.py")
        if d.get("kind") not in ("linear", "trees"):
            raise InputError(f"the adviser's model kind must be linear or trees; got {d.get('kind')!r}")
        return cls(d["kind"], dict(d["methods"]), d.get("level"), FEATURES, d.get("validation"), d.get("fitted_on"))

    def to_dict(self) -> dict:
        return {"kind": self.kind, "features": list(self.features), "level": self.level, "methods": self.methods,
                "validation": self.validation, "fitted_on": self.fitted_on}

    def _part(self, m: dict, x: np.ndarray) -> float:
        if self.kind == "linear":
            z = (x - np.asarray(m["mean"])) / np.asarray(m["scale"])
            return float(m["intercept"] + z @ np.asarray(m["coef"]))
        return float(m["init"] + m["learning_rate"] * sum(_tree_predict(t, x) for t in m["trees"]))

    def relative(self, method: str, x: np.ndarray) -> float:
        """The method's log10 error relative to the case's level (what the ranking reads)."""
        return self._part(self.methods[method], x)

    def log10_error(self, method: str, x: np.ndarray) -> float:
        return (self._part(self.level, x) if self.level else 0.0) + self.relative(method, x)

    def predict(self, method: str, facts: PublicFacts | None = None, *, grid: Sequence[PublicFacts] = ()) -> float:
        """The predicted mean two-way S_pMSE of ``method``: at ``facts``, or (no public n) the geometric
        mean of the predictions over ``grid`` (the same facts at each n of :data:`N_GRID`)."""
        points = [facts] if facts is not None else list(grid)
        return float(10 ** np.mean([self.log10_error(method, f.vector()) for f in points]))


@lru_cache(maxsize=4)
def _read(path: str) -> ErrorModel:
    try:
        return ErrorModel.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError) as exc:
        raise InputError(f"the adviser's model {Path(path).name} cannot be read ({exc}); refit it with "
                         "bench/accuracy/fit_adviser.py") from None


def load_model(path: str | Path | None = None) -> ErrorModel:
    """The shipped model (``adviser_model.json``), or the one at ``path``."""
    return _read(str(path or MODEL_PATH))
