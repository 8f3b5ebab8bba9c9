"""Consistency of noisy hierarchical counts (docs/methods/steps.md, "Consistency").

STEPS releases a noisy count n*[v] for every node v of an attribute hierarchy.
The noisy counts disagree with each other: a parent's count is not the sum of
its children's.  This module turns them into counts n-bar that agree (each
internal node equals the sum of its children), using the noise variances to
weight the information coming from above and from below.

Consistency is **post-processing** of differentially private outputs.  It reads
only the noisy counts, their (public) noise variances, the public tree shape
and the public root count n, never the data, so by the post-processing property
of differential privacy it costs **no privacy budget**.

Representation
--------------
The tree is passed layer by layer as parallel lists; index ``k = 0`` is the
root layer (exactly one node), ``k = 1..D`` are the layers below.

* ``parents[k]``: int array, for each node of layer k the index of its parent
  in layer k-1 (``parents[0]`` is None).  Children of one parent need not be
  contiguous or sorted.
* ``noisy[k]``: float array of noisy counts n* (``noisy[0] = [n]``, public).
* ``variances[k]``: float array of noise variances sigma^2.  A node with
  sigma^2 = 0 is known exactly (the root, phantoms).
* ``phantom[k]``: bool array; phantom nodes are publicly empty, childless and
  come out exactly 0.

Any childless node is treated as a leaf, whatever its layer.  All passes are
vectorised over the nodes of a layer (``np.bincount`` for sums over children,
fancy indexing for parent look-ups); the only Python loops are over layers.

Estimators
----------
``wls``
    The exact generalised-least-squares estimate
    argmin_x sum_v (x_v - n*_v)^2 / sigma_v^2  s.t.  x_parent = sum x_children,
    x_v = n*_v where sigma_v^2 = 0, computed in two O(nodes) passes (a
    Kalman filter / Rauch-Tung-Striebel smoother on the tree).
``nonneg``
    The same bottom-up pass, and a top-down pass that projects each parent's
    children onto {x >= 0, sum x = n-bar[parent]} in the V-weighted norm, as
    in the Census Bureau's TopDown post-processing.
``uh``
    Hay et al. (2010) universal-histogram rule with the corrected exponents
    (docs/paper-errata.md), adapted to phantom padding.
"""

from __future__ import annotations

import numpy as np

from dpcore.errors import OptionError

__all__ = [
    "METHODS",
    "gls_bottom_up",
    "make_consistent",
    "posterior_variances",
]

#: Allowed values of ``method`` in :func:`make_consistent`.
METHODS = ("wls", "nonneg", "uh")


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------
def _as_layers(parents, values, name):
    """Validate the layer lists and return float64 copies of ``values``.

    :param parents: list of parent-index arrays (``parents[0]`` is None)
    :param values: list of per-layer arrays of the same lengths
    :param name: name of ``values`` for error messages
    :return: (list of int arrays for parents, list of float64 arrays)
    """
    if len(values) != len(parents):
        raise ValueError(
            f"{name} has {len(values)} layers but parents has {len(parents)}"
        )
    vals = [np.array(v, dtype=np.float64, copy=True).reshape(-1) for v in values]
    if vals[0].shape[0] != 1:
        raise ValueError(f"the root layer must hold exactly one node, got {vals[0].shape[0]}")
    pars: list[np.ndarray | None] = [None]  # the root layer has no parent
    for k in range(1, len(vals)):
        p = np.asarray(parents[k], dtype=np.intp).reshape(-1)
        if p.shape[0] != vals[k].shape[0]:
            raise ValueError(
                f"layer {k}: parents has {p.shape[0]} entries but {name} has {vals[k].shape[0]}"
            )
        if p.size and (p.min() < 0 or p.max() >= vals[k - 1].shape[0]):
            raise ValueError(f"layer {k}: parent index out of range for layer {k - 1}")
        pars.append(p)
    return pars, vals


def _child_sums(p, values, n_parents):
    """Sum ``values`` of the children into their parents (``bincount`` by parent).

    :param p: parent index of each child
    :param values: per-child values
    :param n_parents: number of nodes in the parent layer
    :return: float array of length ``n_parents``; 0 for childless parents
    """
    # astype: bincount of an empty layer returns int64 zeros
    return np.bincount(p, weights=values, minlength=n_parents).astype(np.float64, copy=False)


# ---------------------------------------------------------------------------
# bottom-up (filter) pass
# ---------------------------------------------------------------------------
def gls_bottom_up(parents, noisy, variances):
    """Bottom-up pass of the tree GLS: combine each node with its subtree.

    For every node v, ``z[v]`` is the best linear unbiased estimate of the true
    count x_v using only the noisy counts in v's subtree, and ``V[v]`` is its
    variance.  At a childless node (a leaf) ``z = n*``, ``V = sigma^2``.  At an
    internal node, the children's estimates give a second, independent estimate
    S = sum_u z[u] with variance V_S = sum_u V[u]; the two are combined by
    inverse-variance weighting

        z[v] = (n*[v] V_S + S sigma_v^2) / (sigma_v^2 + V_S),
        V[v] = sigma_v^2 V_S / (sigma_v^2 + V_S),

    a form that stays finite when either variance is 0: sigma_v^2 = 0 keeps
    z = n*, V = 0; V_S = 0 gives z = S, V = 0; if both are 0, z = n*, V = 0.

    :param parents: ``parents[k]`` is the parent index in layer k-1 of each node
        of layer k; ``parents[0]`` is None
    :param noisy: ``noisy[k]`` are the noisy counts n* of layer k
    :param variances: ``variances[k]`` are the noise variances sigma^2 of layer k
    :return: ``(z, V, S, VS)``, each a list of per-layer float arrays; ``S[k]`` and
        ``VS[k]`` hold, per node of layer k, the sum of its children's z and V
        (0 for childless nodes, and all 0 for the last layer)
    """
    pars, nst = _as_layers(parents, noisy, "noisy")
    _, s2 = _as_layers(parents, variances, "variances")
    L = len(nst)
    # filled from the deepest layer up: every entry is set before it is read
    z: list[np.ndarray] = [np.empty(0)] * L
    V: list[np.ndarray] = [np.empty(0)] * L
    S: list[np.ndarray] = [np.empty(0)] * L
    VS: list[np.ndarray] = [np.empty(0)] * L
    for k in range(L - 1, -1, -1):
        m = nst[k].shape[0]
        if k == L - 1:
            nchild = np.zeros(m, dtype=np.intp)
            S[k] = np.zeros(m)
            VS[k] = np.zeros(m)
        else:
            p = pars[k + 1]
            nchild = np.bincount(p, minlength=m)
            S[k] = _child_sums(p, z[k + 1], m)
            VS[k] = _child_sums(p, V[k + 1], m)
        denom = s2[k] + VS[k]
        comb = (nchild > 0) & (denom > 0)
        safe = np.where(comb, denom, 1.0)
        zk = np.where(comb, (nst[k] * VS[k] + S[k] * s2[k]) / safe, nst[k])
        Vk = np.where(comb, s2[k] * VS[k] / safe, s2[k])
        z[k] = zk
        V[k] = Vk
    return z, V, S, VS


# ---------------------------------------------------------------------------
# top-down passes
# ---------------------------------------------------------------------------
def _wls_top_down(pars, z, V, S, VS, root):
    """RTS-smoother top-down pass: n-bar[u] = z[u] + (V[u]/V_S[v]) (n-bar[v] - S[v])."""
    out = [np.array([root], dtype=np.float64)]
    for k in range(1, len(z)):
        p = pars[k]
        vs = VS[k - 1][p]
        gain = np.divide(V[k], vs, out=np.zeros_like(vs), where=vs > 0)
        out.append(z[k] + gain * (out[k - 1][p] - S[k - 1][p]))
    return out


def _project_children(p, z, V, target, n_parents, max_iter=10_000):
    """Weighted projection of every parent's children onto a scaled simplex.

    For each parent v (vectorised over all parents of a layer) solve

        x = argmin sum_u (x_u - z_u)^2 / V_u   s.t.  x >= 0,  sum_u x_u = T_v,

    over the children u with V_u > 0; children with V_u = 0 are known exactly and
    stay at z_u (phantoms: 0), their sum being removed from the target.  The
    KKT conditions give x_u = max(z_u - lam_v V_u, 0) with one multiplier lam_v
    per parent, the root of f(lam) = sum_u max(z_u - lam V_u, 0) = T.

    f is convex, decreasing and piecewise linear, so Newton's method started left
    of the root (at the all-active solution lam_0 = (sum z - T)/sum V, where
    f(lam_0) >= T) increases monotonically and stops exactly once the active set
    stops shrinking: a child that drops out never comes back.  Each step is
    lam = (sum_active z - T)/(sum_active V) over the children still active, so the
    work shrinks with the active set.  Targets T <= 0 give all-zero free children.

    :param p: parent index of each child
    :param z: bottom-up estimates of the children
    :param V: their variances
    :param target: n-bar of each parent (length ``n_parents``)
    :param n_parents: number of parents
    :return: the children's projected counts
    """
    x = z.copy()
    free = V > 0
    fixed = ~free
    T = target - _child_sums(p[fixed], z[fixed], n_parents)
    if not free.any():
        return x
    live = free & (T[p] > 0)
    x[free] = 0.0
    # first Newton step on the full arrays (no gather): every live child starts active
    zl, Vl = np.where(live, z, 0.0), np.where(live, V, 0.0)
    aV = _child_sums(p, Vl, n_parents)
    lam = np.divide(_child_sums(p, zl, n_parents) - T, aV, out=np.zeros(n_parents), where=aV > 0)
    idx = np.flatnonzero(live & (z > lam[p] * V))
    if len(idx) < np.count_nonzero(live):
        for _ in range(max_iter):
            ip, iz, iV = p[idx], z[idx], V[idx]
            aV = _child_sums(ip, iV, n_parents)
            az = _child_sums(ip, iz, n_parents)
            lam = np.divide(az - T, aV, out=np.zeros(n_parents), where=aV > 0)
            keep = iz > lam[ip] * iV
            if keep.all():
                break
            idx = idx[keep]
    x[idx] = np.maximum(z[idx] - lam[p[idx]] * V[idx], 0.0)
    return x


def _nonneg_top_down(pars, z, V, root):
    out = [np.array([root], dtype=np.float64)]
    for k in range(1, len(z)):
        n_par = out[k - 1].shape[0]
        out.append(_project_children(pars[k], z[k], V[k], out[k - 1], n_par))
    return out


def _uh(pars, nst, s2, phantom, root, fanout=None):
    """Hay et al. (2010) universal-histogram estimator, corrected exponents.

    A node of layer k has height h = D - k + 1 (the deepest layer D has h = 1);
    b_v is v's number of children, phantoms included.  Bottom-up, a childless
    node keeps z = n*, and an internal node takes

        z[v] = (b^h - b^(h-1)) / (b^h - 1) n*[v] + (b^(h-1) - 1) / (b^h - 1) sum_u z[u],

    computed as (1 - 1/b)/(1 - b^-h) and (1/b - b^-h)/(1 - b^-h) so it never
    overflows; at b = 1 the limits 1/h and (h-1)/h are used.  Nodes known exactly
    (sigma^2 = 0, the root) keep z = n*; phantoms are 0.  Top-down, n-bar[root] = n
    and the residual n-bar[v] - sum_u z[u] is shared equally among v's real
    (non-phantom) children:

        n-bar[u] = z[u] + (n-bar[v] - sum_children z) / b_real(v),

    so phantoms stay 0 and every parent equals the sum of its children.  On a
    complete b-ary tree without phantoms b_real = b and this is exactly Hay's
    rule, which equals ``wls`` when every non-root layer has the same variance.
    """
    L = len(nst)
    D = L - 1
    # filled from the deepest layer up: every entry is set before it is read
    z: list[np.ndarray] = [np.empty(0)] * L
    Sz: list[np.ndarray] = [np.empty(0)] * L
    for k in range(D, -1, -1):
        m = nst[k].shape[0]
        h = D - k + 1
        if k == D:
            nchild = np.zeros(m)
            Sz[k] = np.zeros(m)
        else:
            p = pars[k + 1]
            nchild = np.bincount(p, minlength=m).astype(np.float64)
            Sz[k] = _child_sums(p, z[k + 1], m)
        if fanout is not None and fanout[k] is not None:
            nchild = np.asarray(fanout[k], dtype=np.float64)
        internal = nchild > 0
        b = np.where(internal, nchild, 2.0)
        bh = b ** (-float(h))
        one = b == 1
        den = np.where(one, 1.0, 1.0 - bh)
        w1 = np.where(one, 1.0 / h, (1.0 - 1.0 / b) / den)
        w2 = np.where(one, (h - 1.0) / h, (1.0 / b - bh) / den)
        zk = np.where(internal, w1 * nst[k] + w2 * Sz[k], nst[k])
        zk = np.where(s2[k] == 0, nst[k], zk)
        zk[phantom[k]] = 0.0
        z[k] = zk

    out = [np.array([root], dtype=np.float64)]
    for k in range(1, L):
        p = pars[k]
        real = ~phantom[k]
        n_par = out[k - 1].shape[0]
        breal = np.bincount(p[real], minlength=n_par).astype(np.float64)
        resid = out[k - 1] - Sz[k - 1]
        share = np.divide(resid, breal, out=np.zeros(n_par), where=breal > 0)
        out.append(np.where(real, z[k] + share[p], 0.0))
    return out


# ---------------------------------------------------------------------------
# public entry points
# ---------------------------------------------------------------------------
def make_consistent(parents, noisy, variances, phantom, method="nonneg", fanout=None):
    """Make noisy hierarchical counts consistent (post-processing: no budget).

    :param parents: ``parents[k]``: parent index in layer k-1 of each node of
        layer k (``parents[0]`` is None)
    :param noisy: ``noisy[k]``: noisy counts of layer k; ``noisy[0] = [n]`` public
    :param variances: ``variances[k]``: noise variances of layer k (0 = known)
    :param phantom: ``phantom[k]``: bool mask of phantom nodes (publicly empty)
    :param method: ``"wls"`` (exact GLS), ``"nonneg"`` (GLS bottom-up, non-negative
        weighted projection top-down) or ``"uh"`` (Hay et al. universal histogram)
    :return: list of per-layer float arrays n-bar with n-bar[root] = noisy[0]
        exactly, every internal node equal to the sum of its children (to
        rounding) and phantoms exactly 0
    :raises OptionError: (a ``ValueError``) for an unknown ``method``
    """
    if method not in METHODS:
        raise OptionError(
            f"unknown consistency method {method!r}; choose one of "
            + ", ".join(repr(m) for m in METHODS)
        )
    pars, nst = _as_layers(parents, noisy, "noisy")
    _, s2 = _as_layers(parents, variances, "variances")
    if len(phantom) != len(nst):
        raise ValueError(f"phantom has {len(phantom)} layers but noisy has {len(nst)}")
    ph = []
    for k in range(len(nst)):
        m = np.zeros(nst[k].shape[0], dtype=bool) if phantom[k] is None else np.asarray(
            phantom[k], dtype=bool
        ).reshape(-1)
        if m.shape[0] != nst[k].shape[0]:
            raise ValueError(f"layer {k}: phantom has {m.shape[0]} entries, noisy {nst[k].shape[0]}")
        ph.append(m)
        # phantoms are publicly empty: pin them whatever the caller passed
        nst[k][m] = 0.0
        s2[k][m] = 0.0
    root = float(nst[0][0])

    if method == "uh":
        out = _uh(pars, nst, s2, ph, root, fanout)
    else:
        z, V, S, VS = gls_bottom_up(pars, nst, s2)
        if method == "wls":
            out = _wls_top_down(pars, z, V, S, VS, root)
        else:
            out = _nonneg_top_down(pars, z, V, root)
    for k in range(len(out)):
        out[k][ph[k]] = 0.0
    out[0][0] = root
    return out


def posterior_variances(parents, variances):
    """Variance of each node's ``wls`` estimate, with the root count known.

    The top-down pass n-bar[u] = z[u] + J_u (n-bar[v] - S[v]), J_u = V[u]/V_S[v],
    is a Rauch-Tung-Striebel smoother, so its error variance follows the RTS
    recursion

        P[root] = 0,   P[u] = V[u] + J_u^2 (P[v] - V_S[v])

    (P[u] = V[u] when V_S[v] = 0).  It depends only on the tree and the noise
    variances, not on any noisy count, so the expected error per node can be
    previewed before any budget is spent.

    :param parents: as in :func:`make_consistent`
    :param variances: as in :func:`make_consistent`
    :return: list of per-layer arrays of Var(n-bar[u])
    """
    zeros = [np.zeros(np.asarray(v).reshape(-1).shape[0]) for v in variances]
    _, V, _, VS = gls_bottom_up(parents, zeros, variances)
    pars = [None] + [np.asarray(p, dtype=np.intp).reshape(-1) for p in parents[1:]]
    P = [np.zeros(1)]
    for k in range(1, len(V)):
        p = pars[k]
        vs = VS[k - 1][p]
        J = np.divide(V[k], vs, out=np.zeros_like(vs), where=vs > 0)
        P.append(V[k] + J * J * (P[k - 1][p] - vs))
    return P
