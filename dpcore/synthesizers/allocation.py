"""STEPS's split of ε over the m sets, the tree choice and the noised layers (docs/methods/steps.md).

Pure arithmetic on public options: no data, no noise. The charges these shares pay for are
made by the privacy layer (:mod:`dpcore.privacy.measurement`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from dpcore.errors import OptionError, whole_number
from dpcore.privacy.ledger import check_epsilon


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
