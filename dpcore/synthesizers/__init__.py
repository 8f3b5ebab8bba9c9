"""Synthesizer registry.

Each method is a :class:`Method`: ``resolve(domain, method, **options)`` validates
options into a frozen dataclass with ``to_dict()``; ``plan(opts, domain, epsilon, m)``
returns whatever per-release state is computed once (e.g. the budget allocation);
``run_set(X, domain, opts, plan, epsilon_per_set, rng, ledger, label, ctx)`` releases
one set of ``ctx.n_out`` records under the neighbour notion ``ctx.neighbours`` (a
:class:`dpcore.privacy.neighbours.ReleaseContext`) and returns ``(draw, tree or None,
diagnostics dict)``, charging ``ledger`` for every mechanism it applies. The draw
(:mod:`dpcore.estimate.draws`) is the set before its records exist: the fitted model and n,
drawn in chunks (or partitions) by the caller; sampling is post-processing. With
``reads_counts`` it takes the sparse count table (:class:`dpcore.counting.count_table.CountTable`)
in place of the records. ``not_dp(opts)`` returns reasons the
release is not DP (empty when it is). ``noise_rows(opts, domain, epsilon, m, n, neighbours, definition)``
says, from public facts and a record count n, how large the noise on each kind of released
count is against the count it is added to (a list of :class:`dpcore.synthesizers.empty_share.NoiseRow`).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dpcore.synthesizers import aim, flat_laplace, ipf, mst, privbayes, steps
from dpcore.synthesizers.options import STEPS_METHODS, STEPS_OPTIONS, gaussian_counts, resolve_steps_options

BOTH = ("pure", "zcdp")


@dataclass(frozen=True)
class Method:
    name: str
    resolve: Callable[..., Any]
    run_set: Callable[..., tuple]
    #: the method's name for the curator (the app, reports)
    label: str = ""
    #: its options schema (dpcore.synthesizers.schema.Option): one default, range and help per option; the
    #: CLI's flags and the Design page's widgets are built from it
    options: tuple = ()
    plan: Callable[..., Any] = lambda opts, domain, epsilon, m: None
    not_dp: Callable[[Any], list] = lambda opts: []
    hierarchical: bool = False
    #: preview_rows(opts, domain, budget per set, neighbours, n, definition): the noisy tables a margin method
    #: measures per set, with their noise (public facts; the Preview page and dpcore.preview); each row's budget
    #: is under the definition's budget_key: "epsilon" for ε, "rho" for ρ under zCDP
    preview_rows: Callable[..., list] | None = None
    #: preview_plan(same arguments): what else its preview says (e.g. ipf's fit); {} by default
    preview_plan: Callable[..., dict] = lambda *args, **kw: {}
    #: noise_rows(opts, domain, epsilon, m, n, neighbours, definition): the noise per released count against
    #: the typical count (dpcore.synthesizers.empty_share.NoiseRow), from public facts and a record count n
    noise_rows: Callable[..., list] | None = None
    #: run_set also takes the sparse count table (dpcore.counting.count_table.CountTable) instead of records
    reads_counts: bool = False
    #: the privacy definitions it can release under: "pure" (ε-DP) and "zcdp" ((ε, δ) through zCDP)
    definitions: tuple[str, ...] = ("pure",)
    #: (opts, definition, the options given, domain) -> the options as they run under a zCDP
    #: definition (e.g. Gaussian count noise); pure releases never call it
    for_definition: Callable[[Any, Any, dict, Any], Any] = lambda opts, definition, given, domain: opts
    #: the name the Design page's menu and the method adviser show ("DP ipf", "STEPS, LeSDA")
    display_name: str = ""
    #: what it does, in one or two plain sentences (the method's own SUMMARY)
    summary: str = ""
    #: its entry in docs/glossary.md (dpcore.studio.glossary), where the app's "more about" links go
    glossary: str = ""
    #: a STEPS variant's fixed tree selection ("random": UH random, "lesda"); None lets the options choose
    tree_select: str | None = None


REGISTRY: dict[str, Method] = {}


def register(method: Method) -> None:
    REGISTRY[method.name] = method


_STEPS_LABELS = {"steps": "STEPS", "uh_random": "UH random", "steps_lesda": "STEPS LeSDA"}
_STEPS_DISPLAY = {"steps": "STEPS", "uh_random": "STEPS, random tree (UH)", "steps_lesda": "STEPS, LeSDA"}
for _name in STEPS_METHODS:
    register(Method(
        _name, resolve_steps_options, steps.run_set, _STEPS_LABELS[_name], STEPS_OPTIONS,
        display_name=_STEPS_DISPLAY[_name], summary=steps.SUMMARY, glossary="steps", tree_select=STEPS_METHODS[_name],
        plan=lambda opts, domain, epsilon, m: steps.plan_allocation(opts, len(domain), epsilon, m),
        not_dp=lambda opts: (["the tree was chosen from the data with no budget spent (select='nonprivate')"]
                             if opts.select == "nonprivate" else []),
        hierarchical=True, reads_counts=True, definitions=BOTH, for_definition=gaussian_counts,
        noise_rows=steps.noise_rows,
    ))
register(Method("flat_laplace", flat_laplace.resolve, flat_laplace.run_set, "flat Laplace", flat_laplace.OPTIONS,
                display_name="Flat Laplace", summary=flat_laplace.SUMMARY, glossary="flat-laplace",
                reads_counts=True, definitions=BOTH, for_definition=gaussian_counts, noise_rows=flat_laplace.noise_rows,
                preview_rows=flat_laplace.preview_rows, preview_plan=flat_laplace.preview_plan))
register(Method("ipf", ipf.resolve, ipf.run_set, "IPF", ipf.OPTIONS, reads_counts=True, definitions=BOTH,
                display_name="DP ipf", summary=ipf.SUMMARY, glossary="dp-ipf",
                for_definition=gaussian_counts, noise_rows=ipf.noise_rows, preview_rows=ipf.preview_rows,
                preview_plan=ipf.preview_plan))
register(Method("privbayes", privbayes.resolve, privbayes.run_set, "PrivBayes", privbayes.OPTIONS, reads_counts=True,
                display_name="PrivBayes", summary=privbayes.SUMMARY, glossary="privbayes",
                definitions=BOTH, for_definition=gaussian_counts, noise_rows=privbayes.noise_rows,
                preview_rows=privbayes.preview_rows))
register(Method("aim", aim.resolve, aim.run_set, "AIM", aim.OPTIONS, reads_counts=True, definitions=BOTH,
                display_name="AIM", summary=aim.SUMMARY, glossary="aim",
                for_definition=aim.for_zcdp, noise_rows=aim.noise_rows, preview_rows=aim.preview_rows))
register(Method("mst", mst.resolve, mst.run_set, "MST", mst.OPTIONS, reads_counts=True, definitions=BOTH,
                display_name="MST", summary=mst.SUMMARY, glossary="mst",
                for_definition=mst.for_zcdp, noise_rows=mst.noise_rows, preview_rows=mst.preview_rows))
