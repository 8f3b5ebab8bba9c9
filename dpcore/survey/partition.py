"""Partitioned preprocessing and amplification by sampling (Merrill 2021, chapter 5).

* :func:`partition` is Definition 5.3.1: a uniformly random permutation π of the n
  records, cut into consecutive pieces of data-independent sizes n_1, ..., n_j.
* Theorem 5.3.1: if mechanism A_i is ε_i-DP, returning (A_1(D_π,1), ..., A_j(D_π,j))
  is max_i ε_i-DP, also for *bounded* neighbours (replace one record). A data-dependent
  split would cost 2ε there (Lemma 5.2.2).
* Theorem 5.5.1 / Corollary 5.5.1: returning A(D_π,i) alone, for an ε-DP A, is
  ε'-DP with β = n_i/n and ε' = ln((e^ε β + 1 − β)/(1 − β)); for several pieces given
  to one user (or to users who pool their answers) β is their total share. The
  guarantee is min(ε, ε'). Amplification helps only for β < (e^ε − 1)/(2e^ε − 1).

All sizes must be fixed before looking at the data (n itself is public: bounded DP).
Every release here is therefore for *replace-one* neighbours only: ``neighbours`` must be
``"replace"`` and ``"add_remove"`` is refused (under add/remove n is private, and public
piece sizes summing to n would reveal it). :func:`laplace_proportion` uses the
floating-point-safe discretised Laplace of :mod:`dpcore.privacy.mechanisms`: its value is a
multiple of the mechanism's power-of-two grid, reachable under every neighbour, so the
ε-DP claim holds for the implementation, not just for ideal real-valued noise.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dpcore.errors import InputError, OptionError
from dpcore.privacy.ledger import BOUNDED, Ledger, check_epsilon
from dpcore.privacy.measurement import Measurement, StatedMechanism
from dpcore.privacy.mechanisms import Laplace
from dpcore.privacy.neighbours import REPLACE
from dpcore.survey._privacy import notion_for, statement

_PARTITION_WHY = ("the piece sizes n_i and the record count n are public (Def 5.3.1) and Thm 5.3.1/5.5.1 are "
                  "proved for tables of one fixed size; under add/remove n is private")


def partition_notion(neighbours, what) -> str:
    """The validated neighbour notion of a partition release ``what``: replace-one only (the
    piece sizes and n are public), an OptionError saying why for add/remove."""
    return notion_for(neighbours, (REPLACE,), what, _PARTITION_WHY)


__all__ = [
    "partition_notion",
    "amplified_epsilon",
    "effective_epsilon",
    "max_useful_beta",
    "amplification_table",
    "Partition",
    "partition",
    "PieceRelease",
    "release_to_user",
    "laplace_proportion",
]


def _check_beta(beta) -> float:
    try:
        b = float(beta)
    except (TypeError, ValueError):
        raise OptionError(f"beta (the sampled share n'/n) must be a number in (0, 1); got {beta!r}") from None
    if not (0 < b < 1):
        raise OptionError(
            f"beta (the sampled share n'/n) must be strictly between 0 and 1; got {beta!r}. "
            "With β = 1 every record is used and there is no amplification"
        )
    return b


def amplified_epsilon(epsilon, beta) -> float:
    """ε' = ln((e^ε β + 1 − β)/(1 − β)) of Theorem 5.5.1 (bounded DP), computed stably as
    log1p(β·expm1(ε)) − log1p(−β). It may exceed ε; see :func:`effective_epsilon`."""
    eps = check_epsilon(epsilon)
    b = _check_beta(beta)
    if eps > 700:  # e^ε overflows: ε' = ε + ln β + ln(1 + (1−β)e^{−ε}/β) − ln(1 − β), in log space
        return eps + math.log(b) + math.log1p((1 - b) * math.exp(-eps) / b) - math.log1p(-b)
    return math.log1p(b * math.expm1(eps)) - math.log1p(-b)


def subsampled(mechanism: str, epsilon: float, beta: float) -> StatedMechanism:
    """An ε-DP query run on a random β-share of the records (the pieces given to one user), as a mechanism
    with its privacy map: min(ε, ε') by Thm 5.5.1 (:func:`amplified_epsilon`), ε when β = 1."""
    cost = min(check_epsilon(epsilon), amplified_epsilon(epsilon, beta)) if beta < 1 else check_epsilon(epsilon)
    return StatedMechanism(str(mechanism), cost, "Merrill 2021 Thm 5.5.1 (amplification by subsampling a partition)")


def effective_epsilon(epsilon, beta) -> float:
    """min(ε, ε'): the mechanism on a random β-share is ε-DP anyway, and ε'-DP by Thm 5.5.1."""
    return min(check_epsilon(epsilon), amplified_epsilon(epsilon, beta))


def max_useful_beta(epsilon) -> float:
    """Largest β with ε' < ε: ε' < ε ⇔ 1 + β(e^ε − 1) < (1 − β)e^ε ⇔ β < (e^ε − 1)/(2e^ε − 1)."""
    eps = check_epsilon(epsilon)
    if eps > 700:  # (e^ε − 1)/(2e^ε − 1) → 1/2; written with e^{−ε} to avoid overflow
        return (1 - math.exp(-eps)) / (2 - math.exp(-eps))
    em1 = math.expm1(eps)
    return em1 / (2.0 * em1 + 1.0)


def amplification_table(epsilons: Sequence[float] = (0.1, 0.5, 1, 2, 5, 10), beta: float = 0.1) -> pd.DataFrame:
    """Table 5.1: the largest useful β and ε' at the given β (NaN, 'N/A', when ε' ≥ ε)."""
    rows = []
    for e in epsilons:
        ep = amplified_epsilon(e, beta)
        rows.append({"epsilon": float(e), "max_beta": max_useful_beta(e), "epsilon_prime": ep if ep < e else math.nan})
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class Partition:
    """The partitioned preprocessing {D_π,i} of a table of n rows (Def 5.3.1).

    ``pieces[i]`` holds the row positions of piece i (in permuted order). The
    permutation is secret: only the sizes are public.
    """

    n: int
    sizes: tuple[int, ...]
    pieces: tuple[np.ndarray, ...] = field(repr=False)

    def share(self, pieces: Sequence[int]) -> float:
        """β = (n_i1 + ... + n_ik)/n for the given piece indices."""
        idx = _check_pieces(pieces, len(self.sizes))
        return sum(self.sizes[i] for i in idx) / self.n

    def take(self, data: pd.DataFrame, i: int) -> pd.DataFrame:
        return data.iloc[self.pieces[i]]


def partition(n_or_data, sizes=None, *, pieces: int | None = None, rng: np.random.Generator) -> Partition:
    """Random-permutation partition of Def 5.3.1.

    Give either ``sizes`` (positive integers summing to n, fixed in advance) or
    ``pieces`` = j for j near-equal pieces (sizes n//j or n//j + 1, the larger ones
    first). Releases nothing; the pieces are for the mechanisms that follow.
    """
    n = len(n_or_data) if isinstance(n_or_data, (pd.DataFrame, np.ndarray)) else int(n_or_data)
    if n < 1:
        raise InputError("the table has no rows; partitioning needs at least one record")
    if (sizes is None) == (pieces is None):
        raise OptionError("give either sizes=[n_1, ..., n_j] or pieces=j, not both and not neither")
    if pieces is not None:
        j = int(pieces)
        if j != pieces or not 1 <= j <= n:
            raise OptionError(f"pieces must be a whole number between 1 and n = {n}; got {pieces!r}")
        q, r = divmod(n, j)
        sz = [q + 1] * r + [q] * (j - r)
    else:
        try:
            sz = [int(s) for s in sizes]
        except (TypeError, ValueError):
            raise OptionError(f"sizes must be whole numbers; got {sizes!r}") from None
        if any(s < 1 for s in sz) or any(int(s) != s for s in sizes):
            raise OptionError(f"every piece size must be a whole number ≥ 1; got {list(sizes)}")
        if sum(sz) != n:
            raise OptionError(f"piece sizes must add up to n = {n}; they add up to {sum(sz)}")
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy.random.Generator")
    perm = rng.permutation(n)
    cuts = np.cumsum(sz)[:-1]
    return Partition(n=n, sizes=tuple(sz), pieces=tuple(np.split(perm, cuts)))


def _check_pieces(pieces, j) -> list[int]:
    idx = [int(i) for i in np.atleast_1d(pieces)]
    if not idx:
        raise OptionError("choose at least one piece")
    if len(set(idx)) != len(idx) or any(i < 0 or i >= j for i in idx):
        raise OptionError(f"pieces must be distinct indices in 0..{j - 1}; got {idx}")
    return idx


@dataclass(frozen=True)
class PieceRelease:
    """Answers computed on some pieces and given to one user (or one colluding group)."""

    pieces: tuple[int, ...]
    values: tuple
    epsilon: float
    beta: float
    epsilon_amplified: float
    epsilon_effective: float
    ledger: Ledger = field(compare=False, repr=False)
    grids: tuple = ()
    neighbours: str = REPLACE

    @property
    def statement(self) -> str:
        return (statement(self.epsilon_effective, self.neighbours, given="the public piece sizes")
                + "; valid for this user only if users given other pieces do not pool their answers")


def laplace_proportion(column: str, value, *, neighbours: str = REPLACE) -> Callable:
    """The proportion query of §5.4.1 with Laplace noise: f(D_π,i) + Lap(1/(n_i ε)).

    The share of rows of a piece with ``column == value`` has sensitivity 1/n_i under
    replace-one neighbours (n_i is public), so the Laplace mechanism at scale 1/(n_i ε) is
    ε-DP (Dwork et al. 2006); ``neighbours="add_remove"`` is refused. The noise is the
    discretised Laplace (:class:`dpcore.privacy.mechanisms.Laplace`): the value is a multiple of
    its grid (returned in the info dict) and the ε holds for the implementation.
    Returns a query(piece, epsilon, rng) -> (value, charge kwargs).
    """
    partition_notion(neighbours, "laplace_proportion")

    def query(piece: pd.DataFrame, epsilon: float, rng: np.random.Generator):
        if column not in piece.columns:
            raise InputError(f"column {column!r} is not in the table; choose one of {list(piece.columns)}")
        n_i = len(piece)
        p = float((piece[column] == value).mean())
        mech = Laplace.calibrate(epsilon, 1.0 / n_i)
        return float(mech.release(p, rng)), {"mechanism": mech.name, "sensitivity": 1.0 / n_i, "scale": mech.scale,
                                             "grid": mech.grid}

    query.__name__ = f"proportion({column}=={value!r})"
    return query


def release_to_user(data: pd.DataFrame, part: Partition, pieces: Sequence[int], query: Callable,
                    epsilon: float, rng: np.random.Generator, *, user: str = "user",
                    neighbours: str = REPLACE) -> PieceRelease:
    """Run an ε-DP ``query`` on each of ``pieces`` and hand the answers to one user.

    Privacy (bounded DP, neighbours replace one record): by Thm 5.3.1 the answers on
    disjoint pieces of a random-permutation partition are together ε-DP; as they
    depend only on a uniformly random subset of β·n records (β = the pieces' share),
    Thm 5.5.1 makes them ε'-DP. The ledger charges min(ε, ε'). It holds for this user
    only if users given other pieces do not pool their answers with this one.

    ``query(piece_df, epsilon, rng)`` must be ε-DP on its piece and return
    (value, dict(mechanism=..., sensitivity=..., scale=...)), e.g. :func:`laplace_proportion`.
    """
    nb = partition_notion(neighbours, "release_to_user")
    eps = check_epsilon(epsilon)
    if len(data) != part.n:
        raise InputError(f"the partition was made for {part.n} rows but the table has {len(data)}")
    idx = _check_pieces(pieces, len(part.sizes))
    beta = part.share(idx)
    if beta < 1:
        amp = amplified_epsilon(eps, beta)
    else:
        amp = math.inf
    eff = min(eps, amp)
    ledger = Ledger(f"partitioned release to {user}", composition="parallel")
    values, grids = [], []
    for i in idx:
        v, info = query(part.take(data, i), eps, rng)
        values.append(v)
        grids.append(info.get("grid"))
        # the query's mechanism, sensitivity and scale are known only once it has run on the piece
        # (the query is the caller's); the ledger here has no cap, so nothing is refused after the fact:
        # the piece's release is recorded with its value, already drawn by the query
        Measurement.stated(
            f"piece {i}", subsampled(info["mechanism"], eps, beta), sensitivity=float(info["sensitivity"]),
            scale=float(info["scale"]), subset=f"piece {i} of {len(part.sizes)} (n_i = {part.sizes[i]})",
            neighbours=BOUNDED,
            note=(f"query run at ε = {eps:g} on the piece; pieces {idx} are a random {beta:.4g} share of the "
                  f"records, so Thm 5.5.1 gives ε' = {amp:.6g} and the charge is min(ε, ε'); parallel over "
                  "pieces by Thm 5.3.1; valid only if users of other pieces do not collude"),
        ).draw(ledger, lambda v=v: v)
    return PieceRelease(tuple(idx), tuple(values), eps, beta, amp, eff, ledger, tuple(grids), nb)
