"""The privacy layer: neighbour notions, mechanisms with their privacy maps, the ledger.

* :mod:`.neighbours`: the two neighbour notions (add/remove, replace), what each makes
  public, and the DP statement of a release;
* :mod:`.mechanisms`: every noise and selection mechanism, each with its privacy map and an
  exact sampler (docs/mechanisms.md);
* :mod:`.exact_histogram`: the exact sampler of the histogram of many i.i.d. noise draws (the
  sparse leaf layer's empty cells; docs/sparse-leaves.md);
* :mod:`.ledger`: the composition tree every release charges (docs/privacy-model.md).

Rule: this is the only package that draws privacy noise; everything after it is
post-processing.
"""
