"""Estimation: fitting a model to noisy measurements (post-processing only).

* :mod:`.consistency`: ``wls``, ``nonneg`` and ``uh`` consistency of a noisy tree;
* :mod:`.junction_tree`: the decomposable model of a set of margins (IPF on clique tables);
* :mod:`.record_fit`: synthetic records fitted directly to noisy margins.

Rule: nothing here reads the data or draws privacy noise: estimators see only released
measurements and public facts, so their output keeps the measurements' guarantee.
"""
