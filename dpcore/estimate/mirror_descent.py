"""Weighted least squares over the marginal polytope by entropic mirror descent (Private-PGM's estimator).

McKenna, Sheldon & Miklau (2019), "Graphical-model based estimation and inference for
differential privacy" (Algorithm 1), written for dpcore's junction-tree model. Given noisy
margins y_i = c_{r_i} + Z_i (:class:`~dpcore.measure.margins.NoisyMargin`, noise variance
σ_i² per cell) of an unknown table c, find the table's model by

    minimise  L(μ) = Σ_i ||μ_{r_i} − y_i||² / σ_i²   over μ in the marginal polytope M(T, n),

M(T, n) being the clique tables (μ_C) of the junction tree T of the measured sets that some
non-negative table with total n has (so they are consistent on separators, non-negative,
sum to n), and μ_r the margin on r of the clique holding r. L is the negative Gaussian
log-likelihood of the measurements up to constants: repeated, nested and overlapping
measurements are weighed against each other by their variances in one objective, negative
noisy counts pull cells towards 0 without being clipped first, and the fit keeps whatever
the measurements do not pin down where the start had it.

* **Parameters.** Clique log-potentials θ = (θ_C): p_θ(x) ∝ exp Σ_C θ_C(x_C), a
  distribution Markov with respect to T; its clique marginals μ(θ) = n · p_θ(x_C) are
  computed by sum-product belief propagation on T in log space (one pass to the root, one
  back; Koller & Friedman 2009, §10.2), so they are exactly consistent and sum to n.
* **Step.** Entropic mirror descent on M: θ ← θ − η ∇_μ L(μ(θ)). In the mean parameters
  this is the exponentiated-gradient step μ' ∝ μ · exp(−η∇L) projected (in KL) onto M,
  which is what belief propagation on the new potentials does (Wainwright & Jordan 2008;
  McKenna et al. 2019, §4). ∇_{μ_C} L is 2(μ_r − y_i)/σ_i² broadcast over C for every
  margin r_i held by C. L is convex in μ and M is convex, so the stationary point is
  the global minimum in μ (the model's margins are unique where L is strictly convex).
* **Step size.** Armijo backtracking as Private-PGM does: each iteration starts at twice
  the last accepted η and halves it until L(μ) − L(μ') ≥ ½ ⟨∇L(μ), μ − μ'⟩ (a mirror step
  always has ⟨∇L, μ − μ'⟩ ≥ 0).
* **Start.** By default the IPF fit to pooled, simplex-projected targets
  (:class:`~dpcore.estimate.junction_tree.JunctionTreeIPF`): θ_C = log μ_C − log μ_S
  (μ_S the separator's table) with every cell floored at ``floor`` records, since a cell
  at exactly 0 would stay at 0 under multiplicative steps. ``warm=False`` starts from
  θ = 0 (Private-PGM's start).
* **Exact margins** (variance 0, e.g. public totals) get the weight 10⁶ × the largest
  weight of a noisy margin (1 if none is noisy): a large finite weight, so the objective
  stays smooth and the margin is fitted to within the step's precision.

Privacy: the fit reads only released margins, the released total and the public domain,
and draws no randomness: it is post-processing (Dwork & Roth 2014, Prop 2.1) and costs no
privacy. Used by ``method="aim"`` under (ε, δ) for its rounds' refits; the released model's fit
minimises the same loss by the accelerated method of :mod:`.accelerated_mirror_descent`, which
gets much nearer the minimum in the same time (docs/methods/aim.md#options).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpcore.estimate.estimator import check_margins
from dpcore.estimate.junction_tree import DecomposableModel, JunctionTree, JunctionTreeIPF, expand_to, sum_to
from dpcore.measure.margins import NoisyMargin

__all__ = ["MirrorDescent", "LossTerms", "margin_weights", "clique_beliefs", "potentials_of", "FitStart"]

#: weight of an exact (variance 0) margin, relative to the largest noisy margin's weight
EXACT_WEIGHT = 1e6
#: halvings of the step tried in one iteration before giving up (the step is then below 2^-40 of the last)
MAX_HALVINGS = 40


def _logsumexp_to(table: np.ndarray, axes: tuple, keep: tuple) -> np.ndarray:
    """log Σ exp(table) over the attributes of ``axes`` not in ``keep`` (−inf where all are −inf)."""
    drop = tuple(i for i, a in enumerate(axes) if a not in keep)
    if not drop:
        return table
    top = table.max(axis=drop, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    shifted = table - top
    np.exp(shifted, out=shifted)
    with np.errstate(divide="ignore"):
        return np.log(shifted.sum(axis=drop)) + np.squeeze(top, axis=drop)


def clique_beliefs(tree: JunctionTree, theta: Sequence[np.ndarray], total: float) -> list[np.ndarray]:
    """The clique marginals n · p_θ(x_C) of p_θ ∝ exp Σ_C θ_C: sum-product on the junction tree
    in log space from the leaves to the root; then, root first, each clique's table is its parent's
    table summed to their separator S times the clique's own conditional exp(g_C − log Σ_{C∖S} e^{g_C})
    (g_C: θ_C plus the messages of C's children), one exponential per cell. Calibrated: consistent
    on every separator."""
    cl, parent = tree.cliques, tree.parent
    k = len(cl)
    gathered = [np.array(t, dtype=float) for t in theta]  # θ_C plus the messages of C's children
    up: list[np.ndarray | None] = [None] * k
    for c in reversed(tree.order):
        p = parent[c]
        if p >= 0:
            sep = tree.separator(c)
            up[c] = _logsumexp_to(gathered[c], cl[c], sep)
            gathered[p] += expand_to(up[c], sep, cl[p])  # in place: gathered holds copies
    beliefs: list[np.ndarray] = [np.empty(0)] * k
    root = tree.order[0]
    log_z = float(_logsumexp_to(gathered[root], cl[root], ()))
    # in place on the copies (each clique's gathered table is read here last): no temporaries of its size
    g = gathered[root]
    g -= log_z
    np.exp(g, out=g)
    beliefs[root] = np.multiply(total, g, out=g)
    with np.errstate(invalid="ignore"):
        for c in tree.order[1:]:
            sep, msg = tree.separator(c), up[c]
            assert msg is not None
            # where c sent −inf its cells are all −inf: the conditional is 0/0 there, and the belief 0
            cond = gathered[c]
            cond -= expand_to(np.where(np.isneginf(msg), 0.0, msg), sep, cl[c])
            np.exp(cond, out=cond)
            cond *= expand_to(sum_to(beliefs[parent[c]], cl[parent[c]], sep), sep, cl[c])
            beliefs[c] = cond
    return beliefs


def potentials_of(model: DecomposableModel, floor: float) -> list[np.ndarray]:
    """Log-potentials whose distribution is ``model``'s, every clique and separator cell floored at
    ``floor`` records first: θ_C = log μ_C − log μ_S (μ_S = μ_C summed to the separator S with
    C's parent), θ_root = log μ_root."""
    t = model.tree
    theta = []
    for c, mu in enumerate(model.mu):
        sep = t.separator(c)
        th = np.log(np.maximum(mu, floor))
        if sep:
            th = th - expand_to(np.log(np.maximum(sum_to(mu, t.cliques[c], sep), floor)), sep, t.cliques[c])
        theta.append(th)
    return theta


def _inner(x: np.ndarray, y: np.ndarray) -> float:
    """Σ x·y by an elementwise product and a sum (single-threaded: no BLAS threads competing with
    other work on a shared machine; about as fast as ``np.vdot`` on one core)."""
    return float(np.multiply(x, y).sum())


def margin_weights(margins: Sequence[NoisyMargin]) -> list[float]:
    """1/σ_i² of each margin; an exact one (variance 0) gets :data:`EXACT_WEIGHT` × the largest noisy weight."""
    noisy = [1.0 / m.variance for m in margins if m.variance > 0]
    exact = EXACT_WEIGHT * max(noisy, default=1.0)
    return [1.0 / m.variance if m.variance > 0 else exact for m in margins]


@dataclass(frozen=True)
class LossTerms:
    """The objective L(μ) = Σ_i w_i ||μ_{r_i} − y_i||² as data, one term per measured set: repeated
    measurements of a set r are one term W ||μ_r − ȳ||² + c (W = Σ w_i, ȳ = Σ w_i y_i / W,
    c = Σ w_i ||y_i||² − W ||ȳ||²: the same L and gradient, one margin of μ computed instead of
    several). Per term its clique (the smallest holding r), axes, ȳ, W and c (weights: :func:`margin_weights`),
    and where its margin is summed from (``source``: another term's margin holding r, or −1 for the clique)."""

    home: tuple
    axes: tuple
    values: tuple
    weight: tuple
    const: tuple = ()
    source: tuple = ()

    @classmethod
    def of(cls, tree: JunctionTree, margins: Sequence[NoisyMargin]) -> LossTerms:
        sums: dict = {}
        for m, w in zip(margins, margin_weights(margins)):
            y = np.asarray(m.values, float)
            s = sums.setdefault(m.axes, [0.0, 0.0, 0.0])  # Σ w, Σ w y, Σ w ||y||²
            s[0], s[1], s[2] = s[0] + w, s[1] + w * y, s[2] + w * _inner(y, y)
        homes, values, weights, consts = [], [], [], []
        for axes, (w, wy, wyy) in sums.items():
            h = tree.home(axes)
            if h < 0:
                raise ValueError(f"margin over attributes {axes} lies in no clique of the junction tree")
            y = wy / w
            homes.append(h)
            values.append(y)
            weights.append(w)
            consts.append(wyy - w * _inner(y, y))
        axes = tuple(sums)
        return cls(tuple(homes), axes, tuple(values), tuple(weights), tuple(consts),
                   _margin_sources(tree.shape, homes, axes))

    def margins(self, tree: JunctionTree, mu: Sequence[np.ndarray]) -> list[np.ndarray]:
        """μ_r of every term: its home clique's table summed to its set, or a larger term's margin summed
        further (``source``; a clique holds ten times more cells than most of its terms, so the sums
        over the clique are the cost). Linear in μ, so the margins of a mixture of tables are the same
        mixture of their margins (the accelerated fit keeps them)."""
        source = self.source or (-1,) * len(self.axes)
        out: list = [None] * len(self.axes)
        for i in sorted(range(len(self.axes)), key=lambda i: -len(self.axes[i])):  # a source before its terms
            s = source[i]
            out[i] = (sum_to(mu[self.home[i]], tree.cliques[self.home[i]], self.axes[i]) if s < 0
                      else sum_to(out[s], self.axes[s], self.axes[i]))
        return out

    def loss_of(self, margins: Sequence[np.ndarray]) -> float:
        """L from the terms' margins (:meth:`margins`)."""
        loss = float(sum(self.const))
        for m, y, w in zip(margins, self.values, self.weight):
            diff = m - y
            loss += w * _inner(diff, diff)
        return loss

    def gradient_of(self, tree: JunctionTree, margins: Sequence[np.ndarray],
                    like: Sequence[np.ndarray]) -> list[np.ndarray]:
        """∇_{μ_C} L for every clique C from the terms' margins: 2 w (μ_r − ȳ) broadcast over C, summed
        over the terms C holds (zero on cliques that hold none); ``like``: tables of the cliques' shapes."""
        return self.step_from(tree, margins, [np.zeros_like(m) for m in like], 1.0)  # 0 + 1·∇L, the same bits

    def step_from(self, tree: JunctionTree, margins: Sequence[np.ndarray], theta: Sequence[np.ndarray],
                  eta: float) -> list[np.ndarray]:
        """θ + η ∇L from the terms' margins (∇_{μ_C} L: 2 w (μ_r − ȳ) broadcast over C, summed over the terms C
        holds): a clique that holds no term keeps its table (θ + η·0 is θ); on the others the terms are summed in
        their order on the union of their attributes (often far fewer cells than the clique), scaled by η and
        added to θ once, instead of one pass over the clique per term."""
        by_home: dict[int, list[tuple[tuple, np.ndarray]]] = {}
        for h, axes, m, y, w in zip(self.home, self.axes, margins, self.values, self.weight):
            by_home.setdefault(h, []).append((axes, 2.0 * w * (m - y)))
        out = list(theta)
        for h, terms in by_home.items():
            union = tuple(sorted({a for axes, _ in terms for a in axes}))
            acc = np.zeros([tree.shape[a] for a in union])
            for axes, g in terms:
                acc += expand_to(g, axes, union)
            acc *= eta
            # into a table laid out as θ's (a clique's axes may be permuted in memory): the later sums over it
            # then add in the same order, and a seeded release stays the same to the last bit
            out[h] = np.add(theta[h], expand_to(acc, union, tree.cliques[h]), out=np.empty_like(theta[h]))
        return out

    def slope(self, at: Sequence[np.ndarray], to: Sequence[np.ndarray]) -> float:
        """⟨∇L(μ), ν − μ⟩ from the margins ``at`` of μ and ``to`` of ν: Σ 2 w ⟨μ_r − ȳ, ν_r − μ_r⟩ (the
        gradient is the margins' residuals broadcast over their cliques, and ⟨broadcast a, b⟩ = ⟨a, b summed⟩)."""
        return float(sum(2.0 * w * _inner(m - y, n - m) for m, n, y, w in zip(at, to, self.values, self.weight)))

    def loss_and_gradient(self, tree: JunctionTree, mu: Sequence[np.ndarray]) -> tuple[float, list[np.ndarray]]:
        """L(μ) and ∇_{μ_C} L for every clique C (zero on cliques that hold no measurement)."""
        margins = self.margins(tree, mu)
        return self.loss_of(margins), self.gradient_of(tree, margins, mu)

    def loss(self, tree: JunctionTree, mu: Sequence[np.ndarray]) -> float:
        return self.loss_of(self.margins(tree, mu))


def _margin_sources(shape: Sequence[int], homes: Sequence[int], axes: Sequence[tuple]) -> tuple:
    """For each term, the term in the same clique with the fewest cells whose set strictly holds its
    own (−1: none, sum from the clique). Acyclic: a source always has more attributes."""
    out = []
    for h, a in zip(homes, axes):
        cands = [j for j, (g, b) in enumerate(zip(homes, axes))
                 if g == h and len(b) > len(a) and set(a) <= set(b)]
        out.append(min(cands, key=lambda j: math.prod(shape[k] for k in axes[j])) if cands else -1)
    return tuple(out)


@dataclass(frozen=True)
class FitStart:
    """Where a fit over the marginal polytope starts (the fields both estimators share):
    ``start_model``'s potentials when the caller has that fit on the same margins, cells floored at
    ``floor`` records (a cell at exactly 0 would stay at 0 under multiplicative steps); else, with
    ``warm``, the IPF fit to pooled targets (``ipf_sweeps`` sweeps), floored the same way; else
    θ = 0 (the uniform table). ``tree``: the junction tree when the caller has it (else
    ``start_model``'s, else built from the margins)."""

    warm: bool = True
    floor: float = 1e-3
    ipf_sweeps: int = 50
    tree: JunctionTree | None = None
    start_model: DecomposableModel | None = None

    def starting_point(self, shape: Sequence[int], margins: Sequence[NoisyMargin],
                       total: float) -> tuple[JunctionTree, LossTerms, list[np.ndarray]]:
        """The tree, the loss and the first log-potentials (the class docstring)."""
        tree = (self.start_model.tree if self.start_model is not None else self.tree) or \
            JunctionTree.build(shape, [m.axes for m in margins])
        terms = LossTerms.of(tree, margins)
        if self.warm and self.start_model is not None:
            theta = potentials_of(self.start_model, self.floor)
        elif self.warm:
            # IPF's pooling divides by the variance: an exact margin enters it at the variance 1/weight
            pooled = [m if m.variance > 0 else NoisyMargin(m.axes, m.values, 1.0 / w, m.mechanism)
                      for m, w in zip(margins, margin_weights(margins))]
            ipf, _ = JunctionTreeIPF(max_sweeps=self.ipf_sweeps, tree=tree).fit(shape, pooled, total)
            theta = potentials_of(ipf, self.floor)
        else:
            theta = [np.zeros([shape[a] for a in c]) for c in tree.cliques]
        return tree, terms, theta


@dataclass(frozen=True)
class MirrorDescent(FitStart):
    """Private-PGM's estimator on dpcore's junction tree (see the module docstring).

    ``iters``: at most this many mirror-descent iterations; ``tol``: stop earlier when an
    iteration lowers L by less than ``tol`` × L; the start (``warm``, ``floor``, ``ipf_sweeps``,
    ``start_model``, ``tree``): :class:`FitStart`, by default the IPF fit to pooled targets.

    The default, 100 iterations from the IPF start, is a budget, not convergence (the loss still
    falls slowly after it, as cells the noise pushes towards 0 approach it geometrically; on long
    corpus tables it was far from the minimum, which is why the released model is now fitted by
    :class:`~.accelerated_mirror_descent.AcceleratedMirrorDescent`). On AIM's
    (1, 10⁻⁹) measurements (bench/accuracy/mirror_descent.py, docs/methods/aim.md) the model's S_pMSE after
    100, 300 and 1000 iterations was the same within the seed spread on SD2011 S7, the CPS voter
    extract and ``cps_voter_wide``, and well below the IPF start's; 100 is the cheapest. Model:
    :class:`~dpcore.estimate.junction_tree.DecomposableModel` on that tree. Diagnostics:
    iterations, converged (the ``tol`` rule stopped it), loss, start_loss (L at the start), step
    (the last accepted η)."""

    iters: int = 100  # measured: 100, 300 and 1000 fit AIM's margins equally (docs/methods/aim.md#options)
    tol: float = 1e-7

    def fit(self, shape: Sequence[int], margins: Sequence[NoisyMargin],
            total: float) -> tuple[DecomposableModel, dict[str, Any]]:
        shape = check_margins(shape, margins)
        tree, terms, theta = self.starting_point(shape, margins, total)
        mu = clique_beliefs(tree, theta, total)
        marg = terms.margins(tree, mu)  # the terms' margins of μ, kept: L, ∇L and the Armijo test read them
        loss = start_loss = terms.loss_of(marg)
        grad = terms.gradient_of(tree, marg, mu)
        top = max(float(np.abs(g).max()) for g in grad) if grad else 0.0
        step = 1.0 / top if top > 0 else 1.0
        it, converged = 0, False
        for it in range(1, self.iters + 1):  # noqa: B007 - read after the loop: the iterations run
            step *= 2.0
            for _ in range(MAX_HALVINGS):
                theta_new = [t - step * g for t, g in zip(theta, grad)]
                mu_new = clique_beliefs(tree, theta_new, total)
                marg_new = terms.margins(tree, mu_new)
                loss_new = terms.loss_of(marg_new)
                # Armijo: L(μ) − L(μ') ≥ ½ ⟨∇L(μ), μ − μ'⟩, the inner product from the margins (−slope μ → μ')
                if loss - loss_new >= -0.5 * terms.slope(marg, marg_new):
                    break
                step *= 0.5
            else:
                converged = True  # no step decreases L: stationary to the arithmetic's precision
                break
            drop = loss - loss_new
            theta, mu, marg, loss = theta_new, mu_new, marg_new, loss_new
            grad = terms.gradient_of(tree, marg, mu)
            if drop <= self.tol * max(loss, 1e-300):
                converged = True
                break
        model = DecomposableModel.from_cliques(tree, total, mu)
        return model, {"iterations": it, "converged": converged, "loss": loss, "start_loss": start_loss,
                       "step": step}
