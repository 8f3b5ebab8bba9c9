"""The same weighted least squares as :mod:`dpcore.estimate.mirror_descent`, solved by an accelerated
entropic method: Nesterov's universal gradient method in the form of Roulet & d'Aspremont (2020),
Algorithm 2, the method Private-PGM ships as ``universal_accelerated_method``.

Objective and constraint set are those of :class:`~dpcore.estimate.mirror_descent.MirrorDescent`:
minimise L(μ) = Σ_i w_i ||μ_{r_i} − y_i||² over the clique tables μ of the junction tree T that
some non-negative table with total n has. The mirror map is belief propagation on log-potentials
u (μ = n·p_u, :func:`~dpcore.estimate.mirror_descent.clique_beliefs`), whose Bregman divergence is
n·KL between the two tree distributions:

    D(x, y) = Σ_C Σ x_C log(x_C / y_C) − Σ_S Σ x_S log(x_S / y_S)

(C the cliques, S the separators; for tables on the same tree with the same total).

* **Iteration k** (three sequences x, z, y of clique tables; u the potentials of z): with
  t_k ∈ (0, 1] from the step sizes (t_1 = 1; then t_k = 2 / (1 + √(1 + 4 η_{k−1} / (η_k t_{k−1}²))),
  which gives t_k ≈ 2/k at a steady step), y = (1 − t_k) x + t_k z; u ← u − (η_k / t_k) ∇L(y);
  z ← BP(u); x ← (1 − t_k) x + t_k z.
* **Step size** by line search on the bound the method needs, L(x) ≤ L(y) + ⟨∇L(y), x − y⟩ +
  D(x, y) / η: halve η until it holds, and let it grow by 10% after each accepted iteration.
* **Cost.** L, ∇L and ⟨∇L(y), x − y⟩ depend on the tables only through the measured margins,
  which are linear in them: the margins of x and z are kept and mixed as the tables are, so one
  set of margins (z's) is summed from the cliques per try. D is checked first against its Pinsker
  bound on the margins, max_r ||x_r − y_r||₁² / (2n) ≤ D (:func:`margins_pinsker`): when the bound
  already holds with it, it holds with D, and D's two logarithms per clique cell are not computed.
  Both change no decision; on flights' pure-ε final fit at ε = 3 (7·10⁶ model cells) they took the
  fit from 130 to 80 s, with the same 156 iterations (bench/RESULTS.md, "AIM's and MST's final fit under pure ε").
* **Why accelerated.** Plain mirror descent converges at rate O(1/k) in L; this method at
  O(1/k²). On AIM's final margins of two long corpus tables (gss_wages, flights at ε = 3), 100
  plain iterations left L at 3–4× the lowest loss found, and the model's S_pMSE 1.6–2.2× the
  stopped accelerated fit's; the accelerated method comes within 6% of plain mirror descent's
  1000-iteration loss in 100 iterations, at about the same cost per iteration (bench/RESULTS.md,
  "AIM's final fit, accelerated").
* **Restart.** The method is not monotone: when an accepted step raises L, it is dropped and the
  momentum restarts from x (t = 1, z = x, u its potentials), so L never rises (Roulet &
  d'Aspremont 2020 on restarts; O'Donoghue & Candès 2015's function-value rule).
* **Stop.** After at least ``window`` iterations, when the last ``window`` iterations together
  lowered L by less than ``rel_tol`` × L; at the latest after ``iters``. The rule is relative
  because L's own scale (about the number of measured cells, a χ² statistic of the noise) sets
  what a negligible change is; past it the fit only chases the noise.
* x, z and y are convex combinations of calibrated clique tables on T, so they are calibrated:
  consistent on every separator, non-negative, each summing to n. The model is x.

Privacy: reads only released margins, the released total and the public domain, and draws no
randomness: post-processing (Dwork & Roth 2014, Prop 2.1), no privacy cost. AIM's and MST's final
fit by default, under pure ε and (ε, δ) (docs/methods/aim.md#options).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpcore.estimate.estimator import check_margins
from dpcore.estimate.junction_tree import DecomposableModel, JunctionTree, sum_to
from dpcore.estimate.mirror_descent import MAX_HALVINGS, FitStart, clique_beliefs, potentials_of
from dpcore.measure.margins import NoisyMargin

__all__ = ["AcceleratedMirrorDescent", "tree_divergence", "margins_pinsker"]

#: the step grows by this factor after each accepted iteration (Roulet & d'Aspremont's 1.1)
STEP_GROWTH = 1.1
#: a restart's potentials are log μ with cells floored here (records): μ itself, bar cells that underflowed to 0
RESTART_FLOOR = 1e-12


def _divergence_cells(x: np.ndarray, y: np.ndarray) -> float:
    """Σ x log(x/y) − x + y over the cells (each term ≥ 0; 0 where x = 0)."""
    # the same operations as x·(log x − log y) − x + y, in place: the tables hold millions of cells
    with np.errstate(divide="ignore", invalid="ignore"):
        term = np.log(np.maximum(x, 1e-300))
        term -= np.log(np.maximum(y, 1e-300))
        term *= x
        term[~(x > 0)] = 0.0
    term -= x
    term += y
    return float(term.sum())


def tree_divergence(tree: JunctionTree, x: Sequence[np.ndarray], y: Sequence[np.ndarray]) -> float:
    """n·KL(p_x || p_y) of two calibrated tables on ``tree`` with the same total: Σ over cliques
    minus Σ over separators (the entropy of a decomposable distribution splits the same way)."""
    out = 0.0
    for c, (a, b) in enumerate(zip(x, y)):
        out += _divergence_cells(a, b)
        sep = tree.separator(c)
        if sep:
            out -= _divergence_cells(sum_to(a, tree.cliques[c], sep), sum_to(b, tree.cliques[c], sep))
    return max(out, 0.0)  # ≥ 0 in exact arithmetic; rounding can leave a tiny negative


def margins_pinsker(a: Sequence[np.ndarray], b: Sequence[np.ndarray], total: float) -> float:
    """A lower bound on D(x, y) from margins a of x and b of y (pairs of tables of the same sets):
    max ||a_r − b_r||₁² / (2n). Pinsker's inequality, KL(p||q) ≥ ½ ||p − q||₁², and summing to a
    margin never increases the L1 distance, so n·KL(p_x||p_y) ≥ n/2 · (||x_r − y_r||₁ / n)²."""
    if total <= 0:
        return 0.0
    top = max((float(np.abs(p - q).sum()) for p, q in zip(a, b)), default=0.0)
    return top * top / (2.0 * total)


def _mix(a: float, xs: Sequence[np.ndarray], b: float, ys: Sequence[np.ndarray]) -> list[np.ndarray]:
    """a·x + b·y table by table (one temporary per table, not two: the same values)."""
    out = []
    for x, y in zip(xs, ys):
        r = np.multiply(a, x)
        r += np.multiply(b, y)
        out.append(r)
    return out


@dataclass(frozen=True)
class AcceleratedMirrorDescent(FitStart):
    """The accelerated estimator (module docstring) on dpcore's junction tree.

    ``iters``: at most this many iterations; ``window`` and ``rel_tol``: stop when the last
    ``window`` iterations lowered L by less than ``rel_tol`` × L. The start (``start_model``, ``warm``,
    ``floor``, ``ipf_sweeps``, ``tree``): :class:`~dpcore.estimate.mirror_descent.FitStart`. Model:
    :class:`~dpcore.estimate.junction_tree.DecomposableModel`. Diagnostics as MirrorDescent's:
    iterations, converged (the stop rule, or no step lowering the bound, ended it), loss,
    start_loss, step (the last accepted η), restarts."""

    iters: int = 1000
    window: int = 10
    rel_tol: float = 0.01  # measured: S_pMSE at its low on the corpus's long tables (module docstring)

    def fit(self, shape: Sequence[int], margins: Sequence[NoisyMargin],
            total: float) -> tuple[DecomposableModel, dict[str, Any]]:
        shape = check_margins(shape, margins)
        tree, terms, u = self.starting_point(shape, margins, total)
        x = z = clique_beliefs(tree, u, total)
        mx = mz = terms.margins(tree, x)  # the terms' margins of x and z: mixed as the tables are
        loss = start_loss = terms.loss_of(mx)
        top = max((float(np.abs(g).max()) for g in terms.gradient_of(tree, mx, x)), default=0.0)
        step = 1.0 / top if top > 0 else 1.0
        prev_t, prev_step = -1.0, step
        history = [loss]
        it, converged, restarts, divergences = 0, False, 0, 0
        for it in range(1, self.iters + 1):
            for _ in range(MAX_HALVINGS):
                t = 1.0 if prev_t < 0 else 2.0 / (1.0 + math.sqrt(1.0 + 4.0 * prev_step / (step * prev_t ** 2)))
                my = _mix(1.0 - t, mx, t, mz)
                loss_y = terms.loss_of(my)
                u_new = terms.step_from(tree, my, u, -step / t)  # u − (η/t)·∇L(y)
                z_new = clique_beliefs(tree, u_new, total)
                mz_new = terms.margins(tree, z_new)
                mx_new = _mix(1.0 - t, mx, t, mz_new)
                loss_new = terms.loss_of(mx_new)
                bound = loss_y + terms.slope(my, mx_new)  # + D(x_new, y) / η: the line search's bound
                x_new = _mix(1.0 - t, x, t, z_new)
                # D ≥ its Pinsker bound on the margins: when that already satisfies the bound, D does,
                # and its cost (two logarithms per clique cell) is saved; the decision is the same
                if loss_new <= bound + margins_pinsker(mx_new, my, total) / step:
                    break
                divergences += 1
                if loss_new <= bound + tree_divergence(tree, x_new, _mix(1.0 - t, x, t, z)) / step:
                    break
                step *= 0.5
            else:
                converged = True  # no step satisfies the bound: stationary to the arithmetic's precision
                break
            if loss_new > loss:
                # the momentum overshot: drop the step and restart from x (t = 1, z = x), which
                # keeps L non-increasing (Roulet & d'Aspremont 2020's restarts; O'Donoghue & Candès 2015)
                z, mz, prev_t = x, mx, -1.0
                u = potentials_of(DecomposableModel.from_cliques(tree, total, x), RESTART_FLOOR)
                restarts += 1
            else:
                x, z, u, loss, mx, mz = x_new, z_new, u_new, loss_new, mx_new, mz_new
                prev_t, prev_step = t, step
                step *= STEP_GROWTH
            history.append(loss)
            if it >= self.window and history[-1 - self.window] - loss < self.rel_tol * max(loss, 1e-300):
                converged = True
                break
        model = DecomposableModel.from_cliques(tree, total, x)
        return model, {"iterations": it, "converged": converged, "loss": loss, "start_loss": start_loss,
                       "step": prev_step, "restarts": restarts, "divergences": divergences}
