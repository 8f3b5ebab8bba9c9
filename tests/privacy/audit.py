"""Empirical privacy audits: lower bounds on ε from runs on neighbouring inputs.

For an event E declared before the runs, ε-DP implies P(E | D) ≤ e^ε P(E | D') for
neighbours D, D' (and the other way round). From k of n runs landing in E under D and
k' of n' under D', Clopper–Pearson intervals give, with confidence 1 − α each,
P(E|D) ≥ lo and P(E|D') ≤ hi', hence ε ≥ ln(lo / hi'). Every event is tested in both
directions and on its complement; a Bonferroni correction over the whole family makes
the reported bound hold with confidence 1 − α jointly. A bound above the claimed ε is
proof (at that confidence) that the claim is false; a bound below it is no proof of
privacy, only a failure to find a violation with these events and runs.

For an (ε, δ) claim, P(E | D) ≤ e^ε P(E | D') + δ, so ε ≥ ln((lo − δ) / hi'): pass ``delta``.
Such an audit only has power through events whose probability is far above δ.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special, stats


def clopper_pearson(k: int, n: int, alpha: float) -> tuple[float, float]:
    """Exact two-sided (1 − alpha) interval for a binomial proportion k/n."""
    lo = 0.0 if k == 0 else float(stats.beta.ppf(alpha / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(1 - alpha / 2, k + 1, n - k))
    return lo, hi


@dataclass(frozen=True)
class AuditResult:
    epsilon_lower_bound: float
    event: str
    runs: tuple[int, int]
    tests: int


def epsilon_lower_bound(hits_d: np.ndarray, hits_d2: np.ndarray, names: Sequence[str], alpha: float = 0.05,
                        delta: float = 0.0) -> AuditResult:
    """Largest ε lower bound over events, 1 − alpha jointly (Bonferroni over 4 tests per event),
    for a claim of (ε, ``delta``)-DP (pure ε-DP by default).

    ``hits_d`` and ``hits_d2``: boolean arrays (runs × events) of which events each run hit,
    under D and under D'.
    """
    hits_d, hits_d2 = np.atleast_2d(hits_d), np.atleast_2d(hits_d2)
    n1, n2 = hits_d.shape[0], hits_d2.shape[0]
    tests = 4 * hits_d.shape[1]
    a = alpha / tests * 2  # each two-sided interval is used one-sided: alpha/tests per bound
    best = AuditResult(0.0, "none", (n1, n2), tests)
    for j, name in enumerate(names):
        k1, k2 = int(hits_d[:, j].sum()), int(hits_d2[:, j].sum())
        for (ka, na, kb, nb, label) in ((k1, n1, k2, n2, f"{name} (D vs D')"), (k2, n2, k1, n1, f"{name} (D' vs D)"),
                                        (n1 - k1, n1, n2 - k2, n2, f"not {name} (D vs D')"),
                                        (n2 - k2, n2, n1 - k1, n1, f"not {name} (D' vs D)")):
            lo, _ = clopper_pearson(ka, na, a)
            _, hi = clopper_pearson(kb, nb, a)
            if lo > delta and hi > 0:
                eps = math.log((lo - delta) / hi)
                if eps > best.epsilon_lower_bound:
                    best = AuditResult(eps, label, (n1, n2), tests)
    return best


def threshold_events(values_d: np.ndarray, values_d2: np.ndarray, thresholds: Sequence[float], label: str):
    """Events {value ≥ t} for the given thresholds, as (hits_d, hits_d2, names)."""
    t = np.asarray(thresholds, dtype=float)
    return (np.asarray(values_d)[:, None] >= t, np.asarray(values_d2)[:, None] >= t,
            [f"{label} ≥ {x:g}" for x in t])


def run_pair(release: Callable[[object, int], np.ndarray], d, d2, runs: int, seed0: int = 0):
    """Statistics of ``runs`` releases on each table, with seeds seed0.. (fixed schedule)."""
    a = np.array([release(d, seed0 + i) for i in range(runs)])
    b = np.array([release(d2, seed0 + runs + i) for i in range(runs)])
    return a, b


def renyi_divergence(log_p: np.ndarray, log_q: np.ndarray, alpha: float) -> float:
    """D_α(P ‖ Q) = 1/(α − 1) · log Σ_k P(k)^α Q(k)^(1−α), by brute force over the outputs given
    (their log-probabilities; the caller covers every output that is not negligible)."""
    return float(special.logsumexp(alpha * np.asarray(log_p) + (1 - alpha) * np.asarray(log_q)) / (alpha - 1))


def hockey_stick(log_p: np.ndarray, log_q: np.ndarray, epsilon: float) -> float:
    """max over output sets S of P(S) − e^ε Q(S) = Σ_k max(0, P(k) − e^ε Q(k)): the smallest δ for
    which these two output laws satisfy the (ε, δ) inequality in this direction."""
    return float(np.sum(np.maximum(0.0, np.exp(log_p) - np.exp(epsilon + np.asarray(log_q)))))
