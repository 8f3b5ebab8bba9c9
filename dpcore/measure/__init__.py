"""Measurement: the noisy queries a method asks, each through :mod:`dpcore.privacy`.

* :mod:`.margins`: ``NoisyMargin`` (what estimation consumes) and ``measure`` (ipf, AIM, MST);
  :mod:`.margin_spec`: margin and workload options;
* :mod:`.quantiles`: DP quantile bin edges by the exponential mechanism;
* :mod:`.selection`: MoSDA / LeSDA utilities and their sensitivities;
* :mod:`.leaf_noise`: the noisy leaf layer of a huge table without an entry per empty cell (its
  consistency and records: :mod:`dpcore.synthesizers.sparse_leaves`).

Rule: every function here that reads counts draws its noise from a privacy-layer mechanism
and charges the ledger in the same step; nothing here imports :mod:`dpcore.estimate` (measurement
hands estimation :class:`~dpcore.measure.margins.NoisyMargin` s, never the reverse).
"""
