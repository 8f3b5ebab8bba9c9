"""Crafted neighbouring tables and the release statistics the audits look at.

Tables have two attributes a ∈ {x, y} and b ∈ {p, q} over a declared domain. D has 40
records, none in the cell (y, q); the add/remove neighbour adds one record there, and
the replace neighbour moves one (x, p) record there. Each run records the length of the
first synthetic set and its count of (y, q) records.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

import dpcore

D = pd.DataFrame({"a": ["x"] * 30 + ["y"] * 10, "b": ["p"] * 25 + ["q"] * 5 + ["p"] * 10})
ADDED = pd.concat([D, pd.DataFrame({"a": ["y"], "b": ["q"]})], ignore_index=True)
REPLACED = pd.concat([D.iloc[1:], pd.DataFrame({"a": ["y"], "b": ["q"]})], ignore_index=True)
DOMAIN = dpcore.infer_domain(ADDED).declared()
PAIRS = {"add_remove": (D, ADDED), "replace": (D, REPLACED)}

#: (label, method, options) of every release method audited
METHODS = [
    ("steps fixed order", "steps", {"order": "a"}),
    ("steps MoSDA", "steps", {"layers": 1}),
    ("uh_random", "uh_random", {"layers": 1}),
    ("steps_lesda", "steps_lesda", {"layers": 1}),
    ("flat_laplace", "flat_laplace", {}),
    # the sparse path forced (max_cells below the table): the audited cell (y, q) is empty in D,
    # so its noise comes from the exact histogram sampler there and from the per-cell sampler
    # in the neighbour that holds a record in it
    ("flat_laplace sparse path", "flat_laplace", {"max_cells": 2}),
    ("steps sparse leaves", "steps", {"order": "a", "max_cells": 1}),
    ("ipf", "ipf", {}),
    # the record fit with every one-way margin measured too (one_way_share)
    ("ipf one-way share", "ipf", {"fit": "records", "one_way_share": 0.5}),
    ("privbayes", "privbayes", {}),
    # the audit's 2 × 2 domain is one workload margin, so AIM's default measures the whole table once
    # (whole_table="auto"); the rounds are audited on their own
    ("aim", "aim", {}),
    ("aim rounds", "aim", {"whole_table": "never"}),
    ("mst", "mst", {}),
]


def statistics(method: str, options: dict, notion: str, epsilon: float):
    """A function (table, seed) -> (length, count of (y, q)) of one release."""

    def run(table, seed):
        rel = dpcore.synthesize(table, method, epsilon, seed=seed, domain=DOMAIN, neighbours=notion, **options)
        s = rel.sets[0]
        return len(s), int(((s["a"] == "y") & (s["b"] == "q")).sum())

    return run


def _threshold_events(a: np.ndarray, b: np.ndarray, thresholds: np.ndarray, what: str):
    """Events "length ≥ t" (t = 36..45) and "<what> ≥ t" on the second statistic, per run."""
    lengths = np.arange(36, 46)
    hits_a = np.concatenate([a[:, :1] >= lengths, a[:, 1:2] >= thresholds], axis=1)
    hits_b = np.concatenate([b[:, :1] >= lengths, b[:, 1:2] >= thresholds], axis=1)
    names = [f"length ≥ {t}" for t in lengths] + [f"{what} ≥ {t}" for t in thresholds]
    return hits_a, hits_b, names


def events(a: np.ndarray, b: np.ndarray):
    """Threshold events on the length and on the (y, q) count, declared before the runs."""
    return _threshold_events(a, b, np.arange(1, 8), "(y,q) count")


#: DP bin edges (``dp_bins``): one numeric column v with the values 0..39 once each; the
#: add/remove neighbour adds a record at 0, the replace neighbour moves the 39 there. The
#: median's rank utility then shifts by one place, the most one record can move it.
V = pd.DataFrame({"v": np.arange(40)})
V_PAIRS = {"add_remove": (V, pd.concat([V, pd.DataFrame({"v": [0]})], ignore_index=True)),
           "replace": (V, pd.DataFrame({"v": np.r_[np.arange(39), 0]}))}
V_DOMAIN = dpcore.infer_domain(V, numeric={"v": [0, 20, 40]}).declared()  # public edges, replaced by DP ones
DP_BINS = {"v": {"bins": 2, "lower": 0, "upper": 40, "method": "quantiles"}}


def bin_edge_statistics(notion: str, epsilon: float, bins_share: float):
    """A function (table, seed) -> (length of the first set, released median edge) of a
    flat_laplace release with DP bins on v."""

    def run(table, seed):
        rel = dpcore.synthesize(table, "flat_laplace", epsilon, seed=seed, domain=V_DOMAIN, neighbours=notion,
                                dp_bins=DP_BINS, bins_share=bins_share)
        return len(rel.sets[0]), rel.diagnostics["dp_bin_edges"]["v"]["edges"][1]

    return run


def bin_edge_events(a: np.ndarray, b: np.ndarray):
    """Threshold events on the length and on the median edge, declared before the runs."""
    return _threshold_events(a, b, np.arange(15, 26), "median edge")
