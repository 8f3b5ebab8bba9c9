"""The contract every release method meets: one :class:`Method` per method, a :class:`SetRequest` in and a
:class:`SetResult` out of each synthetic set.

A method (STEPS and its variants, flat Laplace, DP ipf, PrivBayes, AIM, MST) is one module of
:mod:`dpcore.synthesizers` holding its options, what it measures and how it fits, and one object that meets
:class:`Method`, registered once (:data:`dpcore.synthesizers.REGISTRY`). The release
(:func:`dpcore.api.synthesize_codes`) resolves the options, plans the release, then asks for each set:

    result = method.run_set(SetRequest(data, domain, options, plan, budget, rng, ledger, label, context))

where ``budget`` is the set's share of the release's budget in the definition's unit
(:class:`~dpcore.privacy.budget.Epsilon`, or :class:`~dpcore.privacy.budget.Rho` under zCDP), and the method
charges ``ledger`` for every mechanism it applies, to exactly ``budget``, through
:class:`dpcore.privacy.measurement.Measurement`. The result's ``draw`` is the set before its records exist (the
fitted model and n; drawn in chunks by the caller: post-processing). What a method says before anything is
spent (its noise against the counts, the tables it measures) comes from public facts only.

How to add a method: docs/methods/adding-a-method.md.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from dpcore.counting.count_table import CountTable
from dpcore.data.domain import Domain
from dpcore.privacy.budget import Budget
from dpcore.privacy.definitions import Definition, ReleaseContext
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.neighbours import Neighbours
from dpcore.synthesizers.empty_share import NoiseRow

__all__ = ["BOTH", "Method", "MethodBase", "SetRequest", "SetResult"]

#: the privacy definitions of a method that releases under both
BOTH = ("pure", "zcdp")


@dataclass(frozen=True)
class SetRequest:
    """What one synthetic set is made from.

    ``data``: the records' codes (n, p), or their sparse :class:`~dpcore.counting.count_table.CountTable`
    for a method that ``reads_counts`` (the same counts, the same release); ``options``: the method's resolved
    options; ``plan``: what :meth:`Method.plan` computed once for the release; ``budget``: this set's budget
    (ε, or ρ under zCDP); ``label``: the ledger group of the set ("set 1"); ``context``: the neighbour notion,
    the released record count and the privacy definition."""

    data: np.ndarray | CountTable
    domain: Domain
    options: Any
    plan: Any
    budget: Budget
    rng: np.random.Generator
    ledger: Ledger
    label: str
    context: ReleaseContext


@dataclass(frozen=True)
class SetResult:
    """One synthetic set before its records exist: the ``draw`` (:mod:`dpcore.estimate.draws`), STEPS' ``tree``
    (None for the other methods) and the set's ``diagnostics`` for the manifest (public facts and released
    values only)."""

    draw: Any
    tree: Any = None
    diagnostics: dict = field(default_factory=dict)


@runtime_checkable
class Method(Protocol):
    """A release method: its names, its options schema and the privacy definitions it takes, and what it does."""

    #: the registry key and the name the API and the CLI take
    name: ClassVar[str]
    #: its name for the curator (the app, reports)
    label: ClassVar[str]
    #: the name the Design page's menu and the method adviser show ("DP ipf", "STEPS, LeSDA")
    display_name: ClassVar[str]
    #: what it does, in one or two plain sentences
    summary: ClassVar[str]
    #: its entry in docs/glossary.md, where the app's "more about" links go
    glossary: ClassVar[str]
    #: its options schema (:class:`dpcore.synthesizers.schema.Option`): the CLI's flags and the Design page's widgets
    options: ClassVar[tuple]
    #: the privacy definitions it releases under: "pure" (ε-DP) and "zcdp" ((ε, δ) through zCDP)
    definitions: ClassVar[tuple[str, ...]]
    #: its sets read the sparse count table instead of the records
    reads_counts: ClassVar[bool]
    #: a tree of attributes (STEPS and its variants): the Design page's tree controls and the preview's layers
    hierarchical: ClassVar[bool]
    #: a STEPS variant's fixed tree selection ("random", "lesda"); None lets the options choose
    tree_select: ClassVar[str | None]

    def resolve(self, domain: Domain, method: str, **options: Any) -> Any:
        """The options checked against the schema and the domain, as a frozen dataclass with ``to_dict()``."""

    def for_definition(self, options: Any, definition: Definition, given: dict, domain: Domain) -> Any:
        """The options as they run under a zCDP definition (e.g. Gaussian count noise); pure ε never calls it."""

    def plan(self, options: Any, domain: Domain, budget: Budget, sets: int) -> Any:
        """What is computed once per release from public facts (STEPS' budget allocation); None if nothing."""

    def run_set(self, request: SetRequest) -> SetResult:
        """One synthetic set, charging ``request.ledger`` to exactly ``request.budget``."""

    def not_dp(self, options: Any) -> list[str]:
        """Why a release with these options is NOT DP (empty when it is)."""

    def noise_rows(self, options: Any, domain: Domain, budget: Budget, sets: int, n: float, neighbours: Neighbours,
                   definition: Definition) -> list[NoiseRow]:
        """The noise on each kind of released count against the count it is added to (public facts and n)."""

    def preview_rows(self, options: Any, domain: Domain, budget: Budget, neighbours: Neighbours, n: float,
                     definition: Definition) -> list[dict] | None:
        """The noisy tables a margin method measures per set, with their noise; None for a hierarchical one."""

    def preview_plan(self, options: Any, domain: Domain, budget: Budget, neighbours: Neighbours, n: float,
                     definition: Definition) -> dict:
        """What else its preview says (e.g. ipf's fit)."""


class MethodBase:
    """The defaults most methods keep: no plan, always DP with valid options, the options unchanged under zCDP,
    nothing more to preview. A method module subclasses it and sets the class attributes of :class:`Method`."""

    name: ClassVar[str] = ""
    label: ClassVar[str] = ""
    display_name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    glossary: ClassVar[str] = ""
    options: ClassVar[tuple] = ()
    definitions: ClassVar[tuple[str, ...]] = BOTH
    reads_counts: ClassVar[bool] = True
    hierarchical: ClassVar[bool] = False
    tree_select: ClassVar[str | None] = None

    def for_definition(self, options: Any, definition: Definition, given: dict, domain: Domain) -> Any:
        return options

    def plan(self, options: Any, domain: Domain, budget: Budget, sets: int) -> Any:
        return None

    def not_dp(self, options: Any) -> list[str]:
        return []

    def preview_rows(self, options: Any, domain: Domain, budget: Budget, neighbours: Neighbours, n: float,
                     definition: Definition) -> list[dict] | None:
        return None

    def preview_plan(self, options: Any, domain: Domain, budget: Budget, neighbours: Neighbours, n: float,
                     definition: Definition) -> dict:
        return {}

    def __repr__(self) -> str:
        return f"<method {self.name}>"
