"""Rare levels measured together (MST's domain compression, McKenna, Miklau & Sheldon 2021):
post-processing of the released one-way margins. docs/methods/mst.md#rare-levels.

After every attribute's one-way margin has been released with noise of standard deviation σ,
the levels whose noisy count is below ``RARE_SDS`` · σ are measured together, as one level
"other", for the rest of the release. A margin over merged levels has fewer cells, so it carries
less noise in total, and the selection's scores are not spent on cells that noise would swamp
anyway. The synthetic records that get "other" are spread back over the merged levels in
proportion to their noisy one-way counts (clipped at 0; equally when all of them are ≤ 0), so
every declared level can still occur.

**Privacy.** Which levels merge is a function of released values only. A margin over merged
levels counts every record in exactly one cell, like the declared margin, so its sensitivity
(and its charge) is the declared margin's; the recoding is a fixed map applied to every record
and needs no budget of its own. Spreading "other" back is post-processing of released values
(Dwork & Roth 2014, Prop 2.1).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dpcore.counting.count_table import CountTable
from dpcore.data.domain import code_dtype
from dpcore.measure.margins import NoisyMargin

#: a level is rare when its noisy one-way count is below this many noise standard deviations (MST's 3σ)
RARE_SDS = 3.0


@dataclass(frozen=True, eq=False)
class RareLevels:
    """Which declared levels each attribute measures together.

    ``shape``: the declared domain's level counts; ``merged[j]``: the declared codes of attribute j
    measured as one level (empty: none merged); ``spread[j]``: the probabilities with which a record
    of that level gets each of them."""

    shape: tuple[int, ...]
    merged: tuple[np.ndarray, ...]
    spread: tuple[np.ndarray, ...]

    @property
    def any(self) -> bool:
        return any(len(m) for m in self.merged)

    @property
    def model_shape(self) -> tuple[int, ...]:
        """Level counts as the model sees them: the kept levels, then "other" where some merged."""
        return tuple(s - len(m) + 1 if len(m) else s for s, m in zip(self.shape, self.merged))

    def kept(self, j: int) -> np.ndarray:
        """The declared codes of attribute j's kept levels (model codes 0, 1, … in this order)."""
        keep = np.ones(self.shape[j], bool)
        keep[self.merged[j]] = False
        return np.flatnonzero(keep)

    def lookup(self, j: int) -> np.ndarray:
        """Declared code of attribute j → model code (kept levels in declared order, "other" last)."""
        kept = self.kept(j)
        out = np.full(self.shape[j], len(kept), dtype=np.int64)
        out[kept] = np.arange(len(kept))
        return out

    def recode(self, X: np.ndarray | CountTable) -> np.ndarray | CountTable:
        """Records (n, p) or a :class:`CountTable` in model codes (raw data: never released as is)."""
        if isinstance(X, CountTable):
            return CountTable.from_cells(self._map(np.asarray(X.codes)), X.counts, self.model_shape)
        return self._map(np.asarray(X))

    def _map(self, codes: np.ndarray) -> np.ndarray:
        out = np.array(codes, dtype=np.int64, copy=True)
        for j, m in enumerate(self.merged):
            if len(m):
                out[:, j] = self.lookup(j)[out[:, j]]
        return out

    def margin(self, m: NoisyMargin) -> NoisyMargin:
        """A released one-way margin over the model's levels: the kept cells as released, "other" the
        sum of the merged cells (post-processing). A margin keeps one noise variance per cell, σ²;
        the "other" cell's is k·σ² (k merged levels), so the fit trusts that one cell more than it
        should (docs/methods/mst.md#rare-levels)."""
        (j,) = m.axes
        if not len(self.merged[j]):
            return m
        v = np.asarray(m.values, float)
        values = np.append(v[self.kept(j)], v[self.merged[j]].sum())
        return NoisyMargin(m.axes, values, m.variance, m.mechanism)

    def expand(self, codes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Model codes (n, p) → declared codes: kept levels mapped back, "other" drawn from
        ``spread`` independently per record (post-processing; i.i.d., so any chunking of the
        records draws the same law)."""
        out = np.array(codes, dtype=np.int64, copy=True)
        for j, m in enumerate(self.merged):
            if not len(m):
                continue
            kept = self.kept(j)
            col = out[:, j]
            other = col == len(kept)
            col[~other] = kept[col[~other]]
            col[other] = m[rng.choice(len(m), size=int(other.sum()), p=self.spread[j])]
        return out.astype(code_dtype(self.shape), copy=False)  # compact codes, as every draw yields them


def find_rare_levels(one_way: Sequence[NoisyMargin], shape: Sequence[int], sds: float = RARE_SDS) -> RareLevels:
    """The levels each attribute measures together, from its released one-way margin (one per
    attribute, any order): those with a noisy count below ``sds`` · σ, when there are at least two
    of them and at least one level stays; nothing merged for a margin known exactly."""
    shape = tuple(int(s) for s in shape)
    merged = [np.zeros(0, np.int64)] * len(shape)
    spread = [np.zeros(0)] * len(shape)
    for m in one_way:
        (j,) = m.axes
        v = np.asarray(m.values, float)
        rare = np.flatnonzero(v < sds * np.sqrt(m.variance))
        if m.variance <= 0 or len(rare) < 2 or len(rare) == len(v):
            continue
        w = np.clip(v[rare], 0, None)
        merged[j] = rare
        spread[j] = w / w.sum() if w.sum() > 0 else np.full(len(rare), 1.0 / len(rare))
    return RareLevels(shape, tuple(merged), tuple(spread))
