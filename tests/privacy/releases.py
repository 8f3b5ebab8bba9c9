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
    ("ipf", "ipf", {}),
    ("privbayes", "privbayes", {}),
    ("aim", "aim", {}),
    ("mst", "mst", {}),
]


def statistics(method: str, options: dict, notion: str, epsilon: float):
    """A function (table, seed) -> (length, count of (y, q)) of one release."""

    def run(table, seed):
        rel = dpcore.synthesize(table, method, epsilon, seed=seed, domain=DOMAIN, neighbours=notion, **options)
        s = rel.sets[0]
        return len(s), int(((s["a"] == "y") & (s["b"] == "q")).sum())

    return run


def events(a: np.ndarray, b: np.ndarray):
    """Threshold events on the length and on the (y, q) count, declared before the runs."""
    lengths = np.arange(36, 46)
    cells = np.arange(1, 8)
    hits_a = np.concatenate([a[:, :1] >= lengths, a[:, 1:2] >= cells], axis=1)
    hits_b = np.concatenate([b[:, :1] >= lengths, b[:, 1:2] >= cells], axis=1)
    names = [f"length ≥ {t}" for t in lengths] + [f"(y,q) count ≥ {t}" for t in cells]
    return hits_a, hits_b, names
