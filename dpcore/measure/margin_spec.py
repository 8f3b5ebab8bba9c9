"""Which margins a margin method measures: the option a curator writes, read into
attribute-name groups in domain order.

Shared by ipf (``margins``) and AIM (``workload``). Public options only: no data is read.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterable

from dpcore.errors import OptionError

#: keywords for every k-way margin of the attributes
WAYS = {"oneway": 1, "one-way": 1, "twoway": 2, "two-way": 2, "": 2, "threeway": 3, "three-way": 3}


def parse_margin_groups(spec: str | Iterable[str | Iterable[object]] | None, names: list[str],
                        option: str) -> tuple[tuple[str, ...], ...]:
    """``None`` or ``"twoway"`` (all pairs), ``"oneway"``, ``"threeway"``, a string
    ``"a,b;c,d"`` (``;`` separates margins, ``,`` joins attributes) or a list of groups
    (each a name, ``"a,b"`` or a list of names). Returned in domain order; an unknown
    attribute, an empty margin, an attribute named twice in a margin, or a margin listed
    twice is a one-line :class:`OptionError` naming ``option``. With one attribute, every
    k-way keyword gives its one-way margin."""
    key = spec.strip().lower() if isinstance(spec, str) else None
    if spec is None or key in WAYS:
        k = min(WAYS[key] if key is not None else 2, len(names))
        return tuple(itertools.combinations(names, k))
    if isinstance(spec, str):
        groups = [[a.strip() for a in g.split(",") if a.strip()] for g in spec.split(";")]
    else:
        try:
            raw = list(spec)
        except TypeError:
            raise OptionError(f"{option} must be 'twoway', 'oneway', a string like \"a,b;c,d\" or a list of attribute "
                              f"lists; got {spec!r}") from None
        groups = []
        for g in raw:
            if isinstance(g, str):
                groups.append([a.strip() for a in g.split(",") if a.strip()])
            else:
                try:
                    groups.append([str(a) for a in g])
                except TypeError:
                    raise OptionError(f"{option}: each margin must be a list of attribute names; got {g!r}") from None
    if not groups:
        raise OptionError(f"{option} is empty; give at least one margin, e.g. \"a,b;b,c\", or leave it out for all "
                          "two-way margins")
    out: list[tuple[str, ...]] = []
    for g in groups:
        if not g:
            raise OptionError(f"{option} {spec!r} contains an empty margin; "
                              "write it like \"a,b;c,d\" with no empty group")
        for a in g:
            if a not in names:
                raise OptionError(f"{option} names attribute '{a}', which is not in the data; known attributes: "
                                  f"{', '.join(names)}")
        if len(set(g)) != len(g):
            raise OptionError(f"{option} margin {','.join(g)} names an attribute twice; "
                              "list each attribute once per margin")
        canon = tuple(sorted(g, key=names.index))
        if canon in out:
            raise OptionError(f"{option}: margin {','.join(canon)} is listed twice; drop the duplicate")
        out.append(canon)
    return tuple(out)
