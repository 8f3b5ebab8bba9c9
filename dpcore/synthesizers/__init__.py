"""The registry of release methods: one :class:`~dpcore.synthesizers.method.Method` per method, registered once.

Each method is one module of this package (``steps`` with its two variants, ``flat_laplace``, ``ipf``,
``privbayes``, ``aim``, ``mst``) that exports ``METHODS``, its entries. The contract every entry meets —
``resolve``, ``plan``, ``run_set(SetRequest) -> SetResult``, ``noise_rows``, ``preview_rows``, its names, options
schema and privacy definitions — is :mod:`dpcore.synthesizers.method`; how to add one:
docs/methods/adding-a-method.md. No module outside a method's own names the method: the API, the command
line, the app, the adviser and the tests read the registry.
"""
from __future__ import annotations

from dpcore.synthesizers import aim, flat_laplace, ipf, mst, privbayes, steps
from dpcore.synthesizers.method import BOTH, Method, MethodBase, SetRequest, SetResult

__all__ = ["BOTH", "Method", "MethodBase", "REGISTRY", "SetRequest", "SetResult"]

#: every method by name, in the order the app and the command line list them
REGISTRY: dict[str, Method] = {m.name: m for module in (steps, flat_laplace, ipf, privbayes, aim, mst)
                               for m in module.METHODS}
