"""Validation of release options, with messages that name the option and the fix."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Sequence

from dpcore.privacy.ledger import check_epsilon
from dpcore.data.domain import Domain
from dpcore.errors import OptionError, real_number, whole_number
from dpcore.measure.selection import UTILITIES

SELECTIONS = ("mosda", "lesda", "random", "nonprivate", "user")
PRIVATE_SELECTIONS = ("mosda", "lesda")
CONSISTENCY = ("nonneg", "wls", "uh")
SYNTHESIS = ("sample", "round")
NOISE = ("discrete_laplace", "laplace")
BACKENDS = ("numpy", "opendp")
STEPS_METHODS = {"steps": None, "uh_random": "random", "steps_lesda": "lesda"}


def _choice(name: str, value, allowed: Sequence[str]) -> str:
    if value not in allowed:
        raise OptionError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")
    return value


def parse_order(order, domain: Domain) -> tuple[tuple[str, ...], ...] | None:
    """``"a;b,c"`` (``;`` separates layers, ``,`` joins attributes in a layer) or a list of lists."""
    if order is None or order == "" or order == []:
        return None
    if isinstance(order, str):
        layers = [tuple(a.strip() for a in layer.split(",") if a.strip()) for layer in order.split(";")]
    elif isinstance(order, (list, tuple)) and all(isinstance(g, str) or (isinstance(g, (list, tuple)) and
                                                   all(isinstance(a, str) for a in g)) for g in order):
        layers = [tuple([g]) if isinstance(g, str) else tuple(g) for g in order]
    else:
        raise OptionError(f"order must be a string like \"a;b,c\" or a list of attribute lists; got {order!r}")
    if any(len(g) == 0 for g in layers):
        raise OptionError(f"order {order!r} has an empty layer; write layers like \"a;b,c\"")
    seen: list[str] = []
    for g in layers:
        for a in g:
            if a not in domain.names:
                raise OptionError(f"order names attribute '{a}', which is not in the data; known: {', '.join(domain.names)}")
            if a in seen:
                raise OptionError(f"order names attribute '{a}' twice; each attribute may appear in one layer only")
            seen.append(a)
    return tuple(layers)


def check_backend(backend: str, noise: str) -> str:
    """``numpy`` (fast, seeded) or ``opendp`` (OpenDP's exact discrete sampler, for audited releases)."""
    _choice("noise_backend", backend, BACKENDS)
    if backend == "opendp" and noise != "discrete_laplace":
        raise OptionError("noise_backend='opendp' is offered for discrete Laplace noise only; set noise='discrete_laplace'")
    return backend


def gaussian_counts(opts, definition, given: dict, domain=None):
    """``opts`` as they run under zCDP: count noise is the discrete Gaussian. A Laplace-type
    noise the curator chose (or another sampler backend) is refused: they are pure-ε mechanisms."""
    if given.get("noise", "discrete_laplace") != "discrete_laplace":
        raise OptionError(f"noise={given['noise']!r} is for pure ε-DP; under (ε, δ) (delta given) counts get "
                          "discrete Gaussian noise: leave noise at its default")
    if given.get("noise_backend", "numpy") != "numpy":
        raise OptionError(f"noise_backend={given['noise_backend']!r} draws discrete Laplace noise only; under (ε, δ) "
                          "counts get the discrete Gaussian's exact sampler: leave noise_backend at its default")
    return replace(opts, noise="discrete_gaussian")


#: More sets than this split ε so thinly that each is noise, and the work is unbounded.
MAX_SETS = 1000


def check_sets(m) -> int:
    return whole_number("the number of synthetic sets m (sets, --sets)", m, 1, MAX_SETS)


@dataclass(frozen=True)
class StepsOptions:
    """Every STEPS option, resolved and validated (docs/methods/steps.md defaults)."""

    layers: int = 2
    order: tuple | None = None
    select: str = "mosda"
    utility: str = "aic"
    r: float = 0.1
    allocation: Any = "half"
    consistency: str = "nonneg"
    synthesis: str = "sample"
    noise: str = "discrete_laplace"
    noise_backend: str = "numpy"
    max_cells: int = 20_000_000

    def to_dict(self) -> dict:
        d = asdict(self)
        if self.order is not None:
            d["order"] = [list(g) for g in self.order]
        if not isinstance(self.allocation, str):
            d["allocation"] = list(self.allocation)
        return d


def check_known_options(opts: dict, options_class, method: str) -> None:
    """Refuse, in one line naming them, options that ``options_class`` (a method's frozen
    options dataclass) does not have."""
    known = set(options_class.__dataclass_fields__)
    unknown = sorted(set(opts) - known)
    if unknown:
        raise OptionError(f"unknown option(s) {', '.join(unknown)} for method '{method}'; allowed: {', '.join(sorted(known))}")


def resolve_steps_options(domain: Domain, method: str = "steps", **opts) -> StepsOptions:
    """Fill defaults and check every option against the domain."""
    check_known_options(opts, StepsOptions, method)
    p = len(domain)
    order = parse_order(opts.get("order"), domain)
    forced = STEPS_METHODS.get(method)
    select = opts.get("select")
    if forced is not None:
        if select not in (None, forced):
            raise OptionError(f"method '{method}' always uses select='{forced}'; drop select={select!r} or use method 'steps'")
        select = forced
    if order is not None:
        if select not in (None, "user"):
            raise OptionError(f"an explicit order fixes the tree; it cannot be combined with select='{select}'")
        select = "user"
    select = _choice("select", select or "mosda", SELECTIONS)
    if select == "user" and order is None:
        raise OptionError("select='user' needs an order, e.g. order=\"a;b,c\"")

    layers = opts.get("layers")
    if order is not None:
        if layers is not None and int(layers) != len(order):
            raise OptionError(f"the order has {len(order)} layers but layers={layers}; drop one of them or make them agree")
        layers = len(order)
    layers = 2 if layers is None else layers
    layers = whole_number("the number of layers L (layers, --layers)", layers, 1, p, " (at most the number of attributes)")

    r = opts.get("r")
    n_sel = min(layers, p - 1) if select in PRIVATE_SELECTIONS else 0
    if r is None:
        r = 0.1 if n_sel else 0.0
    r = real_number("r, the share of ε spent on choosing the tree,", r, 0, 1, hi_open=True, hint=" (r must be in [0, 1))")
    if not (math.isfinite(r) and 0 <= r < 1):
        raise OptionError(f"r, the share of ε spent on choosing the tree, must be in [0, 1); got {r!r}")
    if n_sel == 0 and r > 0:
        why = "the order is fixed" if select == "user" else f"select='{select}' spends no budget" if select != "mosda" else "only one attribute remains"
        raise OptionError(f"r={r} but {why}; set r to 0")
    if n_sel > 0 and r == 0:
        raise OptionError(f"select='{select}' chooses the tree privately and needs r > 0 (default 0.1)")

    allocation = opts.get("allocation", "half")
    if not isinstance(allocation, str):
        if not isinstance(allocation, (list, tuple)) or not all(
                isinstance(x, (int, float)) and not isinstance(x, bool) for x in allocation):
            raise OptionError(f"allocation must be equal, half or a list of layer weights (numbers); got {allocation!r}")
        allocation = tuple(float(x) for x in allocation)
    max_cells = whole_number("max_cells", opts.get("max_cells", StepsOptions.max_cells), 1)
    return StepsOptions(
        layers=layers,
        order=order,
        select=select,
        utility=_choice("utility", opts.get("utility", "aic"), UTILITIES),
        r=r,
        allocation=allocation,
        consistency=_choice("consistency", opts.get("consistency", "nonneg"), CONSISTENCY),
        synthesis=_choice("synthesis", opts.get("synthesis", "sample"), SYNTHESIS),
        noise=_choice("noise", opts.get("noise", "discrete_laplace"), NOISE),
        noise_backend=check_backend(opts.get("noise_backend", "numpy"), opts.get("noise", "discrete_laplace")),
        max_cells=max_cells,
    )
