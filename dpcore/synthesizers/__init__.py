"""Synthesizer registry.

Each method is a :class:`Method`: ``resolve(domain, method, **options)`` validates
options into a frozen dataclass with ``to_dict()``; ``plan(opts, domain, epsilon, m)``
returns whatever per-release state is computed once (e.g. the budget allocation);
``run_set(X, domain, opts, plan, epsilon_per_set, rng, ledger, label, ctx)`` releases
one set of ``ctx.n_out`` records under the neighbour notion ``ctx.neighbours`` (a
:class:`dpcore.privacy.neighbours.ReleaseContext`) and returns ``(codes (n_out, p), tree or
None, diagnostics dict)``, charging ``ledger`` for every mechanism it applies; with
``reads_counts`` it takes the sparse count table (:class:`dpcore.counting.count_table.CountTable`)
in place of the records. ``not_dp(opts)`` returns reasons the
release is not DP (empty when it is). ``noise_rows(opts, domain, epsilon, m, n, sensitivity)``
says, from public facts and a record count n, how large the noise on each kind of released
count is against the count it is added to (a list of :class:`dpcore.synthesizers.empty_share.NoiseRow`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from dpcore.synthesizers import aim, flat_laplace, ipf, mst, privbayes, steps
from dpcore.synthesizers.options import STEPS_METHODS, resolve_steps_options


@dataclass(frozen=True)
class Method:
    name: str
    resolve: Callable[..., Any]
    run_set: Callable[..., tuple]
    plan: Callable[..., Any] = lambda opts, domain, epsilon, m: None
    not_dp: Callable[[Any], list] = lambda opts: []
    hierarchical: bool = False
    #: noise_rows(opts, domain, epsilon, m, n, sensitivity): the noise per released count against
    #: the typical count (dpcore.synthesizers.empty_share.NoiseRow), from public facts and a record count n
    noise_rows: Callable[..., list] | None = None
    #: run_set also takes the sparse count table (dpcore.counting.count_table.CountTable) instead of records
    reads_counts: bool = False


REGISTRY: dict[str, Method] = {}


def register(method: Method) -> None:
    REGISTRY[method.name] = method


for _name in STEPS_METHODS:
    register(Method(
        _name, resolve_steps_options, steps.run_set,
        plan=lambda opts, domain, epsilon, m: steps.plan_allocation(opts, len(domain), epsilon, m),
        not_dp=lambda opts: (["the tree was chosen from the data with no budget spent (select='nonprivate')"]
                             if opts.select == "nonprivate" else []),
        hierarchical=True, reads_counts=True, noise_rows=steps.noise_rows,
    ))
for _module in (flat_laplace, ipf, privbayes, aim, mst):
    register(Method(_module.__name__.rpartition(".")[2], _module.resolve, _module.run_set, reads_counts=True,
                    noise_rows=_module.noise_rows))
