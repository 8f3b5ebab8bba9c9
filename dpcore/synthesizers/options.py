"""Options several methods share (how records are drawn, count noise, the dense-table limit, the number of
sets, what ``auto`` means under each definition), with messages that name the option and the fix. Each
method's own options live in its module."""
from __future__ import annotations

from dataclasses import replace

from dpcore.errors import OptionError, whole_number
from dpcore.synthesizers.schema import Option

SYNTHESIS = ("sample", "round")
NOISE = ("discrete_laplace", "laplace")


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


def check_known_options(opts: dict, options_class, method: str) -> None:
    """Refuse, in one line naming them, options that ``options_class`` (a method's frozen
    options dataclass) does not have."""
    known = set(options_class.__dataclass_fields__)
    unknown = sorted(set(opts) - known)
    if unknown:
        raise OptionError(f"unknown option(s) {', '.join(unknown)} for method '{method}'; allowed: "
                          f"{', '.join(sorted(known))}")
