"""STEPS's split of its budget over the m sets, the tree choice and the noised layers (docs/methods/steps.md).

Pure arithmetic on public options: no data, no noise. The charges these shares pay for are
made by the privacy layer (:mod:`dpcore.privacy.measurement`). The budget is an ε, or a ρ under zCDP:
every share is a budget of the same unit (:mod:`dpcore.privacy.budget`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Generic

from dpcore.errors import OptionError, real_number, whole_number
from dpcore.privacy.budget import BudgetT


@dataclass(frozen=True)
class Allocation(Generic[BudgetT]):
    """The budget per set, per selection layer and per noised count layer (already divided by m)."""

    per_set: BudgetT
    selection: tuple[BudgetT, ...]
    counts: tuple[BudgetT, ...]
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


def check_r(r: object, n_selection_layers: int, select: str | None = None) -> float:
    """r, the share of the budget spent on choosing the tree: in [0, 1), and > 0 exactly when
    ``n_selection_layers`` says something is chosen privately (``select``: how the tree is chosen, for the
    message). One line naming r and the fix otherwise; the one check of r (resolving STEPS's options and
    splitting its budget both call it)."""
    r = real_number("r, the share of ε spent on choosing the tree,", r, 0, 1, hi_open=True,
                    hint=" (r must be in [0, 1))")
    if not (math.isfinite(r) and 0 <= r < 1):
        raise OptionError(f"r, the share of ε spent on choosing the tree, must be in [0, 1); got {r!r}")
    if n_selection_layers == 0 and r > 0:
        why = ("nothing is chosen privately (fixed or random order)" if select is None else
               "the order is fixed" if select == "user" else f"select='{select}' spends no budget"
               if select != "mosda" else "only one attribute remains")
        raise OptionError(f"r={r} but {why}; set r to 0")
    if n_selection_layers > 0 and r == 0:
        who = "private tree selection" if select is None else f"select='{select}' chooses the tree privately and"
        raise OptionError(f"{who} needs r > 0 (default 0.1)")
    return float(r)


def allocate_budget(
    budget: BudgetT,
    m: int,
    r: float,
    n_selection_layers: int,
    n_partition_layers: int,
    has_leaf_layer: bool,
    scheme: object = "half",
) -> Allocation[BudgetT]:
    """Split ``budget`` (ε, or ρ under zCDP) over m sets, the tree choice (share r) and the noised layers
    (docs/methods/steps.md).

    Each set gets budget/m (sequential composition over sets). Within a set, each of the
    ``n_selection_layers`` selection layers gets r·budget/(m·L_sel) and noised layer l gets
    c_l(1−r)·budget/m. Nodes of one layer are disjoint, so each layer's charge is paid once.
    """
    if not budget.value > 0:
        raise OptionError(f"the budget to split must be greater than 0; got {budget}")
    whole_number("the number of synthetic sets m", m, 1)
    r = check_r(r, n_selection_layers)
    w, name = layer_weights(scheme, n_partition_layers, has_leaf_layer)
    per_set = budget / m
    sel = tuple([r * per_set / n_selection_layers] * n_selection_layers) if n_selection_layers else ()
    cnt = tuple(c * (1 - r) * per_set for c in w)
    return Allocation(per_set, sel, cnt, w, name)
