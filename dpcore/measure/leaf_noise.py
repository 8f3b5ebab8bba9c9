"""The noisy leaf layer of a huge table: per-cell noise for the non-empty cells, the empty cells'
noise as its exact histogram (the measurement step of the sparse leaf layer; what is done with
the values afterwards, consistency and the records, is :mod:`dpcore.synthesizers.sparse_leaves`).

The argument, step by step, with what is exact and what is not: docs/sparse-leaves.md.

The empty cells of a block all have count 0, so their noisy values are i.i.d. and, being
exchangeable, are described completely by the histogram H_b(k) = #{empty cells u of block b :
Z_u = k}; the assignment of values to cells is a uniformly random permutation independent of it.
It is drawn exactly (integer randomness only) by
:meth:`dpcore.privacy.mechanisms.DiscreteLaplace.sample_histogram` or
:meth:`dpcore.privacy.gaussian.DiscreteGaussian.sample_histogram`
(:mod:`dpcore.privacy.exact_histogram`).

Privacy: the non-empty cells' noise comes from the exact per-cell sampler and the empty cells'
from the exact histogram sampler, so this is the dense mechanism as implemented: ε-DP with
discrete Laplace noise, ρ-zCDP with the discrete Gaussian (ledger text
:data:`dpcore.privacy.mechanisms.HISTOGRAM_SAMPLER`). The caller draws :func:`noisy_items`
through a privacy-layer measurement, which charges the ledger before the draw.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from dpcore.errors import OptionError
from dpcore.privacy.gaussian import DiscreteGaussian
from dpcore.privacy.mechanisms import DiscreteLaplace

#: The count noise of the sparse path: either kind draws its empty cells as an exact histogram.
HistogramNoise = DiscreteLaplace | DiscreteGaussian

__all__ = ["HistogramNoise", "MAX_HISTOGRAM_VALUES", "HISTOGRAM_NOISE", "check_sparse_noise", "Items",
           "empty_histogram", "noisy_items"]

#: Widest noise histogram per block (values in [−T, T]).
MAX_HISTOGRAM_VALUES = 4_000_001
#: Noise kinds whose mechanism draws the histogram of many i.i.d. draws exactly
#: (``sample_histogram``): discrete Laplace under pure ε, the discrete Gaussian under (ε, δ).
HISTOGRAM_NOISE = (DiscreteLaplace.name, DiscreteGaussian.name)


def check_sparse_noise(noise: str, backend: str = "numpy", where: str = "the leaf layer") -> None:
    """Refuse noise the sparse path cannot draw as a histogram, naming what works."""
    if noise not in HISTOGRAM_NOISE:
        raise OptionError(
            f"{where} is too large for a dense table and noise={noise!r} cannot be drawn for its empty cells "
            "(its values lie on a fine grid, far too many to list per block); use noise='discrete_laplace' "
            "(the default), whose empty cells the sparse leaf layer draws as a histogram"
        )
    if backend != "numpy":
        raise OptionError(
            f"{where} is too large for a dense table and noise_backend={backend!r} cannot draw its empty cells' "
            "noise as a histogram; use noise_backend='numpy'"
        )


@dataclass(frozen=True)
class Items:
    """Leaf cells grouped into items of equal value.

    Item i is ``mult[i]`` cells of block ``block[i]``, each with noisy value
    ``value[i]``. ``row[i] >= 0``: a single non-empty cell (row of the count table);
    ``row[i] == -1``: a class of empty cells (which cells is decided lazily).
    """

    block: np.ndarray  # int64
    value: np.ndarray  # float64
    mult: np.ndarray  # int64
    row: np.ndarray  # int64

    def with_value(self, value: ArrayLike) -> Items:
        return Items(self.block, np.asarray(value, dtype=float), self.mult, self.row)


def empty_histogram(n_empty: np.ndarray, mech: HistogramNoise,
                    rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Noise values of the empty cells of each block, as (block, k, multiplicity) triples.

    ``n_empty[b]`` cells of block b each get an i.i.d. draw of ``mech``; returned is the
    histogram of those draws (module docstring), drawn exactly by the mechanism's
    ``sample_histogram`` (:meth:`dpcore.privacy.mechanisms.DiscreteLaplace.sample_histogram`,
    :meth:`dpcore.privacy.gaussian.DiscreteGaussian.sample_histogram`; docs/sparse-leaves.md). Refuses a
    histogram wider than :data:`MAX_HISTOGRAM_VALUES` values per block.
    """
    n_empty = np.asarray(n_empty, dtype=np.int64)
    if len(n_empty) and n_empty.max() > 0:
        T = mech.histogram_cutoff(int(n_empty.max()))
        if 2 * T + 1 > MAX_HISTOGRAM_VALUES:
            raise OptionError(
                f"the noise scale {mech.scale:.3g} is too large for the sparse leaf layer ({2 * T + 1:,} noise values "
                "per block); use a larger epsilon or fewer cells per leaf block (more layers, fewer attributes)"
            )
    return mech.sample_histogram(n_empty, rng)


def noisy_items(block_of_row: np.ndarray, counts: np.ndarray, n_cells: np.ndarray, mech: HistogramNoise,
                rng: np.random.Generator) -> Items:
    """Non-empty cells (noised individually by the mechanism's sampler) and the empty cells'
    histogram, per block."""
    nonempty = np.bincount(block_of_row, minlength=len(n_cells)).astype(np.int64)
    noisy = counts.astype(np.int64) + np.asarray(mech.sample(rng, len(counts)), dtype=np.int64)
    hb, hk, hm = empty_histogram(n_cells - nonempty, mech, rng)
    return Items(
        block=np.concatenate([block_of_row.astype(np.int64), hb]),
        value=np.concatenate([noisy, hk]).astype(float),
        mult=np.concatenate([np.ones(len(counts), np.int64), hm]),
        row=np.concatenate([np.arange(len(counts), dtype=np.int64), np.full(len(hb), -1, np.int64)]),
    )
