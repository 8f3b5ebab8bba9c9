"""Estimation: fitting a model to noisy measurements (post-processing only).

* :mod:`.estimator`: the protocol every estimator meets: ``fit(shape, margins, total)``, the
  margins being :class:`dpcore.measure.margins.NoisyMargin` s, returns a model with
  ``marginal(axes)`` and ``sample(n, rng)``;
* :mod:`.dense_ipf`: ``DenseIPF``, IPF of the full table (synthpop's ``ipf``);
* :mod:`.junction_tree`: ``JunctionTreeIPF``, the decomposable model of a set of margins
  (IPF on clique tables; AIM, MST, ``ipf`` on wide tables);
* :mod:`.mirror_descent`: ``MirrorDescent``, Private-PGM's weighted least squares over the
  marginal polytope on the same junction tree (AIM's round refits under (ε, δ));
* :mod:`.accelerated_mirror_descent`: ``AcceleratedMirrorDescent``, the same loss minimised by an
  accelerated method that stops when the loss stops falling;
* :mod:`.final_fit`: ``released_model``, the model AIM and MST release (IPF, or the accelerated fit);
* :mod:`.record_fit`: ``RecordFit``, synthetic records fitted directly to noisy margins (GUM);
* :mod:`.raking`: ``Raking``, a seed table raked to known one-way margins (post-stratification);
* :mod:`.table`: ``DenseTable``, the full table as a model, and drawing records from cells;
* :mod:`.denoise`: positivity and shrinkage of noisy margins before a fit;
* :mod:`.consistency`: ``wls``, ``nonneg`` and ``uh`` consistency of a noisy tree (STEPS).

Rule: nothing here reads the data or draws privacy noise: estimators see only released
measurements and public facts, so their output keeps the measurements' guarantee
(``tests/test_architecture.py`` checks the imports).
"""
