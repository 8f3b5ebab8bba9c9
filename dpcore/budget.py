"""The privacy-budget ledger and the allocation of ε over the layers of a release.

A :class:`Ledger` is a composition tree (docs/privacy-model.md). Its leaves are
:class:`Charge` s, each one mechanism applied once with a stated ε, sensitivity and
scale. Inner nodes compose

* ``sequential``: ε adds up (basic sequential composition, Dwork & Roth 2014, Thm 3.16);
* ``parallel``: the children touch disjoint subsets of records, so ε is the max
  (McSherry 2009, Thm 4).

A charge applied independently to ``parallel_over`` disjoint subsets (the nodes of
one layer, the cells of one table) costs its ε once, by parallel composition.
The ledger of a release must total the ε the curator asked for, to 1e-12.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass, field
from typing import Iterator

from .errors import OptionError, whole_number
from .neighbours import ADD_REMOVE, REPLACE, _LABELS

UNBOUNDED = _LABELS[ADD_REMOVE]
BOUNDED = _LABELS[REPLACE]


#: Significant digits of a ledger total as written (far below the 1e-12 the totals are checked to).
TOTAL_DIGITS = 12


def readable_total(epsilon: float) -> float:
    """A sum of ε shares as it is written: :data:`TOTAL_DIGITS` significant digits, so float
    rounding in the sum (0.9999999999999999) does not show. The relative change is at most
    5e-13, inside the 1e-12 to which :meth:`Ledger.assert_total` checks the exact sum."""
    return float(f"{float(epsilon):.{TOTAL_DIGITS}g}")


@dataclass(frozen=True)
class Charge:
    """One mechanism, applied once per disjoint subset, at ``epsilon``."""

    label: str
    epsilon: float
    mechanism: str
    sensitivity: float
    scale: float
    subset: str
    parallel_over: int = 1
    neighbours: str = UNBOUNDED
    note: str = ""


@dataclass
class Ledger:
    """A composition tree of charges. ``epsilon`` is what the whole tree spends."""

    label: str
    composition: str = "sequential"
    children: list = field(default_factory=list)

    def __post_init__(self):
        if self.composition not in ("sequential", "parallel"):
            raise ValueError(f"composition must be 'sequential' or 'parallel', not {self.composition!r}")

    def group(self, label: str, composition: str = "sequential") -> "Ledger":
        g = Ledger(label, composition)
        self.children.append(g)
        return g

    def charge(self, **kw) -> Charge:
        c = Charge(**kw)
        if not (math.isfinite(c.epsilon) and c.epsilon >= 0):
            raise ValueError(f"charge '{c.label}' has invalid epsilon {c.epsilon!r}")
        self.children.append(c)
        return c

    def spend(self, label: str, mechanism, sensitivity: float, subset: str, *, neighbours: str = UNBOUNDED,
              parallel_over: int = 1, note: str = "", sampler: str = "") -> Charge:
        """Charge what ``mechanism`` costs on a query of ``sensitivity``: ε comes from the
        mechanism's own privacy map (``mechanism.epsilon(sensitivity)``), never from
        separate bookkeeping (as OpenDP pairs every measurement with its map)."""
        name = mechanism.name + (f" ({sampler})" if sampler else "")
        return self.charge(label=label, epsilon=mechanism.epsilon(sensitivity), mechanism=name,
                           sensitivity=float(sensitivity), scale=mechanism.scale, subset=subset,
                           parallel_over=parallel_over, neighbours=neighbours, note=note)

    @property
    def epsilon(self) -> float:
        vals = [c.epsilon for c in self.children]
        if not vals:
            return 0.0
        return math.fsum(vals) if self.composition == "sequential" else max(vals)

    def charges(self, prefix: str = "") -> Iterator[tuple[str, Charge]]:
        """Every charge with its path, e.g. ``"set 1/counts/layer 2"``."""
        path = f"{prefix}/{self.label}" if prefix else self.label
        for c in self.children:
            if isinstance(c, Ledger):
                yield from c.charges(path)
            else:
                yield f"{path}/{c.label}", c

    def to_dict(self) -> dict:
        """JSON-ready: the total and the flat list of charges (no data values).

        The totals (``epsilon_total`` and each group's ``epsilon``) are written to
        :data:`TOTAL_DIGITS` significant digits, so a total of exactly 1 composed from
        floating-point shares reads 1, not 0.9999999999999999; the charges keep their exact
        ε, and the exact sum is what :meth:`assert_total` checks against the request."""
        return {
            "epsilon_total": readable_total(self.epsilon),
            "composition": self._tree(),
            "charges": [dict(path=p, **asdict(c)) for p, c in self.charges()],
        }

    def _tree(self) -> dict:
        return {
            "label": self.label,
            "composition": self.composition,
            "epsilon": readable_total(self.epsilon),
            "children": [c._tree() if isinstance(c, Ledger) else {"label": c.label, "epsilon": c.epsilon} for c in self.children],
        }

    def assert_total(self, requested: float, tol: float = 1e-12) -> None:
        """Internal invariant: the release spends exactly what was asked."""
        if abs(self.epsilon - requested) > tol * max(1.0, requested):
            raise AssertionError(f"ledger totals {self.epsilon!r} but {requested!r} was requested")


#: The smallest ε dpcore accepts: below it every release is pure noise, and the exact
#: samplers' scales (1/ε) leave the range they represent exactly (docs/mechanisms.md).
MIN_EPSILON = 1e-9
#: ... and the largest: beyond it the exponential mechanism's exact sampler cannot
#: represent the score range, and no privacy is left to state.
MAX_EPSILON = 1e9


def check_epsilon(epsilon) -> float:
    """ε must be a finite number ≥ MIN_EPSILON (a bool is not a number here)."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real):  # numpy's bool_ is not Real either
        raise OptionError(f"epsilon must be a number, not {epsilon!r}")
    try:
        e = float(epsilon)
    except (TypeError, ValueError):
        raise OptionError(f"epsilon must be a number; got {epsilon!r}") from None
    if not math.isfinite(e) or e <= 0:
        raise OptionError(f"epsilon must be a finite number greater than 0; got {epsilon!r}. Smaller ε means stronger privacy; try 1")
    if e > MAX_EPSILON:
        raise OptionError(f"epsilon {e:.3g} is too large: above {MAX_EPSILON:g} a release is the data itself in "
                          "all but name; use ε between 0.1 and 10")
    if e < MIN_EPSILON:
        raise OptionError(f"epsilon {e:.3g} is too small: dpcore accepts ε ≥ {MIN_EPSILON:g} (anything smaller "
                          "is pure noise, and the exact samplers cannot represent it); try 0.1 to 10")
    return e


@dataclass(frozen=True)
class Allocation:
    """ε per set, per selection layer and per noised count layer (already divided by m)."""

    per_set: float
    selection: tuple[float, ...]
    counts: tuple[float, ...]
    weights: tuple[float, ...]
    scheme: str


def layer_weights(scheme, n_partition_layers: int, has_leaf_layer: bool) -> tuple[tuple[float, ...], str]:
    """Fractions c_l of the count budget for layers 1..L (and the leaf layer L+1).

    * ``equal``: 1/(number of noised layers);
    * ``half``: 1/2 to the leaf layer, 1/(2L) to each of layers 1..L (``equal`` when there is no leaf layer);
    * a sequence of weights (``custom``): one per noised layer, positive, summing to 1.
    """
    n = n_partition_layers + int(has_leaf_layer)
    if isinstance(scheme, str) and scheme in ("equal", "half"):
        if scheme == "half" and has_leaf_layer and n_partition_layers > 0:
            w = [0.5 / n_partition_layers] * n_partition_layers + [0.5]
        else:
            w = [1.0 / n] * n
        return tuple(w), scheme
    if isinstance(scheme, str):
        try:
            scheme = [float(x) for x in scheme.split(",")]
        except ValueError:
            raise OptionError(
                f"allocation must be 'equal', 'half' or comma-separated weights like 0.2,0.3,0.5; got {scheme!r}"
            ) from None
    w = [float(x) for x in scheme]
    if len(w) != n:
        raise OptionError(
            f"custom allocation needs {n} weights (layers 1..{n_partition_layers}"
            f"{' and the leaf layer' if has_leaf_layer else ''}); got {len(w)}"
        )
    if any(not math.isfinite(x) or x <= 0 for x in w):
        raise OptionError(f"allocation weights must all be greater than 0; got {w}")
    total = math.fsum(w)
    if abs(total - 1.0) > 1e-6:
        raise OptionError(f"allocation weights must sum to 1; they sum to {total:.6g}. Rescale them")
    return tuple(x / total for x in w), "custom"


def allocate_budget(
    epsilon: float,
    m: int,
    r: float,
    n_selection_layers: int,
    n_partition_layers: int,
    has_leaf_layer: bool,
    scheme="half",
) -> Allocation:
    """Split ε over m sets, the tree choice (share r) and the noised layers (docs/methods/steps.md).

    Each set gets ε/m (sequential composition over sets). Within a set, each of the
    ``n_selection_layers`` selection layers gets rε/(m·L_sel) and noised layer l gets
    c_l(1−r)ε/m. Nodes of one layer are disjoint, so each layer's charge is paid once.
    """
    eps = check_epsilon(epsilon)
    whole_number("the number of synthetic sets m", m, 1)
    if not (isinstance(r, (int, float)) and math.isfinite(r) and 0 <= r < 1):
        raise OptionError(f"r, the share of ε spent on choosing the tree, must be in [0, 1); got {r!r}")
    if n_selection_layers == 0 and r > 0:
        raise OptionError("r > 0 but nothing is chosen privately (fixed or random order); set r to 0")
    if n_selection_layers > 0 and r == 0:
        raise OptionError("private tree selection needs a share r > 0 of ε; the default is 0.1")
    w, name = layer_weights(scheme, n_partition_layers, has_leaf_layer)
    per_set = eps / m
    sel = tuple([r * per_set / n_selection_layers] * n_selection_layers) if n_selection_layers else ()
    cnt = tuple(c * (1 - r) * per_set for c in w)
    return Allocation(per_set, sel, cnt, w, name)
