"""Validation of release options, with messages that name the option and the fix."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from dpcore.data.domain import Domain
from dpcore.errors import OptionError, real_number, whole_number
from dpcore.measure.selection import UTILITIES
from dpcore.synthesizers.schema import Option, check_known, find, value

SELECTIONS = ("mosda", "lesda", "random", "nonprivate", "user")
PRIVATE_SELECTIONS = ("mosda", "lesda")
CONSISTENCY = ("nonneg", "wls", "uh")
SYNTHESIS = ("sample", "round")
NOISE = ("discrete_laplace", "laplace")
BACKENDS = ("numpy", "opendp")
STEPS_METHODS = {"steps": None, "uh_random": "random", "steps_lesda": "lesda"}


def synthesis_option(default: str = "sample") -> Option:
    return Option("synthesis", "choice", default, "how records are drawn from the fitted counts: sample (multinomial, "
                  "as synthpop) or round (the counts themselves, rounded)", choices=SYNTHESIS,
                  docs="methods/steps.md#options", label="Drawing records")


#: how a junction-tree model's records are drawn (AIM, MST): i.i.d., by controlled rounding, or auto
MODEL_DRAWS = ("auto", "sample", "round")


def model_draw_option(docs: str) -> Option:
    """``synthesis`` of the junction-tree methods: ``auto`` rounds under (ε, δ) and samples under pure ε
    (so pure-ε releases stay what they were)."""
    return Option("synthesis", "choice", "auto", "how records are drawn from the fitted model: sample (i.i.d.), "
                  "round (controlled rounding: each clique's counts rounded from n × the model's, unbiased) or auto "
                  "(round under (ε, δ), sample under pure ε)", choices=MODEL_DRAWS, docs=docs,
                  label="Drawing records")


#: whether rare levels are measured together after the one-way margins (MST): auto, merge or keep
RARE_LEVELS = ("auto", "merge", "keep")


def rare_levels_option(docs: str) -> Option:
    """``rare_levels``: ``auto`` merges under (ε, δ) and keeps under pure ε (so pure-ε releases stay
    what they were)."""
    return Option("rare_levels", "choice", "auto", "levels whose noisy one-way count is below 3 noise standard "
                  "deviations: merge (measured together as one level after the one-way margins, their records "
                  "spread back over them in proportion to their noisy counts), keep (every declared level measured "
                  "on its own) or auto (merge under (ε, δ), keep under pure ε)", choices=RARE_LEVELS, docs=docs,
                  label="Rare levels")


#: the options whose ``auto`` is one value under pure ε and another under (ε, δ): {name: (pure, (ε, δ))}.
#: Under pure ε ``auto`` is what releases did before the option existed, so pure-ε releases stay
#: byte for byte what they were, except ``estimator`` (AIM's and MST's final fit), changed on purpose
#: on 2026-11-29: the accelerated fit lowered both methods' pure-ε error on most of the corpus
#: (docs/methods/aim.md#the-same-fit-under-pure).
AUTO_CHOICES = {"synthesis": ("sample", "round"), "rare_levels": ("keep", "merge"),
                "estimator": ("mirror_descent", "mirror_descent"), "round_fits": ("cold", "mirror_descent")}


def pure_choice(name: str, value: str) -> str:
    """What a resolved option ``name`` = ``value`` names under pure ε (``auto``: :data:`AUTO_CHOICES`)."""
    return AUTO_CHOICES[name][0] if value == "auto" else value


def zcdp_choices(opts, given: dict, *names: str):
    """``opts`` with each option of ``names`` as it runs under (ε, δ): ``auto`` (or not given) is its
    (ε, δ) value in :data:`AUTO_CHOICES`; a value the caller gave stays."""
    return replace(opts, **{n: AUTO_CHOICES[n][1] for n in names if given.get(n) in (None, "auto")})


#: how a junction-tree method's released model is fitted (AIM, MST): auto, ipf or mirror_descent
ESTIMATORS = ("auto", "ipf", "mirror_descent")


def estimator_option(docs: str) -> Option:
    """``estimator``: ``auto`` is mirror descent under both definitions (under pure ε since 2026-11-29,
    changed on purpose: :data:`AUTO_CHOICES`)."""
    return Option("estimator", "choice", "auto", "how the final model is fitted to the noisy margins: ipf "
                  "(proportional fitting to the margins made non-negative first), mirror_descent (Private-PGM's "
                  "weighted least squares, noisier margins counting less) or auto (mirror_descent)",
                  choices=ESTIMATORS, docs=docs, advanced=True, label="Final model fit")


#: how AIM refits its model after each round's measurement: auto, cold or warm
ROUND_FITS = ("auto", "cold", "warm", "mirror_descent")


def round_fits_option(docs: str) -> Option:
    """``round_fits``: ``auto`` is mirror_descent under (ε, δ) and cold under pure ε (so pure-ε releases
    stay what they were)."""
    return Option("round_fits", "choice", "auto", "how the model is refitted after each round: cold (from the "
                  "uniform table, every sweep up to the cap), warm (from the previous round's model, stopping when "
                  "the fit stops improving), mirror_descent (warm, then a few iterations of Private-PGM's estimator) "
                  "or auto (mirror_descent under (ε, δ), cold under pure ε)", choices=ROUND_FITS,
                  docs=docs, advanced=True, label="Refits between rounds")


def noise_option() -> Option:
    return Option("noise", "choice", "discrete_laplace", "count noise under pure ε: discrete_laplace (exact, "
                  "integer) or laplace (discretised real noise); under (ε, δ) counts get the discrete Gaussian",
                  choices=NOISE, docs="mechanisms.md", advanced=True, label="Count noise")


def max_cells_option(default: int) -> Option:
    return Option("max_cells", "int", default, "largest table the method builds densely; above it the sparse path "
                  "runs or the release is refused with the size named", low=1,
                  docs="sparse-leaves.md", advanced=True, label="Largest dense table (cells)")


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
                raise OptionError(f"order names attribute '{a}', which is not in the data; known: "
                                  f"{', '.join(domain.names)}")
            if a in seen:
                raise OptionError(f"order names attribute '{a}' twice; each attribute may appear in one layer only")
            seen.append(a)
    return tuple(layers)


def check_backend(backend: str, noise: str) -> str:
    """``numpy`` (fast, seeded) or ``opendp`` (OpenDP's exact discrete sampler, for audited releases)."""
    _choice("noise_backend", backend, BACKENDS)
    if backend == "opendp" and noise != "discrete_laplace":
        raise OptionError("noise_backend='opendp' is offered for discrete Laplace noise only; set "
                          "noise='discrete_laplace'")
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


#: STEPS's options (steps, uh_random, steps_lesda): the registry's schema, the CLI's flags and the Design page's widgets
STEPS_OPTIONS = (
    Option("layers", "int", 2, "number L of partition layers of the tree (the rest of the attributes form the leaf "
           "layer)", low=1, hint=" (at most the number of attributes)", default_text="2, or the order's layers",
           docs="methods/steps.md#the-tree", label="Partition layers L"),
    Option("order", "text", None, 'a fixed tree: ";" separates layers, "," joins attributes in one layer, e.g. '
           '"sex;agegr,edu"; spends nothing on choosing the tree',
           docs="methods/steps.md#choosing-the-tree", label="Fixed tree (layers of attributes)"),
    Option("select", "choice", "mosda", "how each node's split is chosen: MoSDA (the best-scoring attribute, "
           "privately), LeSDA (the worst), random (no data), or nonprivate (NOT DP)", choices=SELECTIONS,
           docs="methods/steps.md#choosing-the-tree", label="Tree chosen by"),
    Option("utility", "choice", "aic", "the score MoSDA/LeSDA rank attributes by", choices=UTILITIES,
           docs="methods/steps.md#choosing-the-tree", label="Score for choosing attributes"),
    Option("r", "float", None, "share of ε spent on choosing the tree", low=0, high=1, high_open=True,
           hint=" (r must be in [0, 1))", default_text="0.1 with private selection, else 0",
           docs="methods/steps.md#allocation", label="Share of ε for choosing the tree (r)"),
    Option("allocation", "text", "half", "how the count budget is split over the noised layers: equal, half "
           "(half to the leaf layer) or weights w1,w2,... summing to 1",
           docs="methods/steps.md#allocation", label="Count budget over layers"),
    Option("consistency", "choice", "nonneg", "how noisy node counts are made to add up: nonneg (least squares, "
           "non-negative), wls (least squares) or uh (Hay et al.)", choices=CONSISTENCY,
           docs="methods/steps.md#consistency", label="Consistency step"),
    synthesis_option(),
    noise_option(),
    Option("noise_backend", "choice", "numpy", "the discrete Laplace sampler: numpy (exact, seeded) or opendp "
           "(OpenDP's, for audited releases; not seeded)", choices=BACKENDS,
           docs="mechanisms.md", advanced=True, label="Discrete Laplace sampler"),
    max_cells_option(20_000_000),
)


def check_known_options(opts: dict, options_class, method: str) -> None:
    """Refuse, in one line naming them, options that ``options_class`` (a method's frozen
    options dataclass) does not have."""
    known = set(options_class.__dataclass_fields__)
    unknown = sorted(set(opts) - known)
    if unknown:
        raise OptionError(f"unknown option(s) {', '.join(unknown)} for method '{method}'; allowed: "
                          f"{', '.join(sorted(known))}")


def resolve_steps_options(domain: Domain, method: str = "steps", **opts) -> StepsOptions:
    """Fill defaults and check every option against the domain."""
    check_known(STEPS_OPTIONS, opts, method)
    p = len(domain)
    order = parse_order(opts.get("order"), domain)
    forced = STEPS_METHODS.get(method)
    select = opts.get("select")
    if forced is not None:
        if select not in (None, forced):
            raise OptionError(f"method '{method}' always uses select='{forced}'; drop select={select!r} or use method "
                              "'steps'")
        select = forced
    if order is not None:
        if select not in (None, "user"):
            raise OptionError(f"an explicit order fixes the tree; it cannot be combined with select='{select}'")
        select = "user"
    select = value(STEPS_OPTIONS, {"select": select}, "select")
    if select == "user" and order is None:
        raise OptionError("select='user' needs an order, e.g. order=\"a;b,c\"")

    layers = opts.get("layers")
    if order is not None:
        if layers is not None and int(layers) != len(order):
            raise OptionError(f"the order has {len(order)} layers but layers={layers}; drop one of them or make them "
                              "agree")
        layers = len(order)
    layers = find(STEPS_OPTIONS, "layers").default if layers is None else layers  # checked against p below
    layers = whole_number("the number of layers L (layers, --layers)", layers, 1, p, " (at most the number of "
                                                                                     "attributes)")

    r = opts.get("r")
    n_sel = min(layers, p - 1) if select in PRIVATE_SELECTIONS else 0
    if r is None:
        r = 0.1 if n_sel else 0.0
    r = real_number("r, the share of ε spent on choosing the tree,", r, 0, 1, hi_open=True, hint=" (r must be in [0, "
                                                                                                 "1))")
    if not (math.isfinite(r) and 0 <= r < 1):
        raise OptionError(f"r, the share of ε spent on choosing the tree, must be in [0, 1); got {r!r}")
    if n_sel == 0 and r > 0:
        why = ("the order is fixed" if select == "user" else f"select='{select}' spends no budget"
               if select != "mosda" else "only one attribute remains")
        raise OptionError(f"r={r} but {why}; set r to 0")
    if n_sel > 0 and r == 0:
        raise OptionError(f"select='{select}' chooses the tree privately and needs r > 0 (default 0.1)")

    allocation = value(STEPS_OPTIONS, opts, "allocation")
    if not isinstance(allocation, str):
        if not isinstance(allocation, (list, tuple)) or not all(
                isinstance(x, (int, float)) and not isinstance(x, bool) for x in allocation):
            raise OptionError("allocation must be equal, half or a list of layer weights (numbers); "
                              f"got {allocation!r}")
        allocation = tuple(float(x) for x in allocation)
    noise = value(STEPS_OPTIONS, opts, "noise")
    return StepsOptions(
        layers=layers,
        order=order,
        select=select,
        utility=value(STEPS_OPTIONS, opts, "utility"),
        r=r,
        allocation=allocation,
        consistency=value(STEPS_OPTIONS, opts, "consistency"),
        synthesis=value(STEPS_OPTIONS, opts, "synthesis"),
        noise=noise,
        noise_backend=check_backend(value(STEPS_OPTIONS, opts, "noise_backend"), noise),
        max_cells=value(STEPS_OPTIONS, opts, "max_cells"),
    )
