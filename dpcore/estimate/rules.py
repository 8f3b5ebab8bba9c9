"""Declared rules: public structural facts enforced on the synthetic records ("under 16 ⇒ not married").

A model fitted to noisy margins can draw records no one would believe: a married ten-year-old, an income for a
child. Where the curator knows such a fact from public knowledge (a law, the survey's routing: the income
question is not asked under 16), they declare it as a rule, as synthpop's ``rules``/``rvalues`` do:

    {"if": "age < 16", "then": {"married": "no", "income": null}}

Every synthetic record whose values satisfy ``if`` (a pandas expression over the synthetic set) gets the
``then`` values. A rule is part of the design, public, stated in the manifest; applying it reads only the
synthetic records, so it is post-processing of the release and costs no privacy (Dwork & Roth 2014, Prop. 2.1).
How many synthetic records each rule changed is a fact about the synthetic data, published beside it. A value
the column's domain cannot hold is refused before anything is spent.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpcore.data.domain import Domain
from dpcore.data.expressions import row_mask
from dpcore.errors import OptionError

__all__ = ["Rule", "check_rules", "apply_rules"]


@dataclass(frozen=True)
class Rule:
    """Records satisfying ``condition`` take the values ``then`` (column → value; None: missing)."""

    condition: str
    then: tuple[tuple[str, object], ...]

    def to_dict(self) -> dict:
        return {"if": self.condition, "then": dict(self.then)}


def check_rules(rules, domain: Domain | None, columns: Sequence[str] = ()) -> tuple[Rule, ...]:
    """The declared rules, checked against the release's domain before anything is spent: each an object
    with "if" (a non-empty expression) and "then" (columns of the domain, each with a value its attribute can
    hold: one of its levels, a number inside its edges, or missing where it has a missing level). ``domain``
    None (a domain found inside the release): the columns are checked against ``columns``, the values then
    apply as given. One line naming the rule and what to fix otherwise."""
    if rules is None:
        return ()
    if not isinstance(rules, Sequence) or isinstance(rules, (str, bytes)):
        raise OptionError("rules must be a list of {\"if\": expression, \"then\": {column: value}}")
    out = []
    for i, r in enumerate(rules, 1):
        where = f"rule {i}"
        if not isinstance(r, Mapping) or set(r) != {"if", "then"}:
            raise OptionError(f"{where}: write it as {{\"if\": \"age < 16\", \"then\": {{\"married\": \"no\"}}}}")
        cond, then = r["if"], r["then"]
        if not isinstance(cond, str) or not cond.strip():
            raise OptionError(f"{where}: \"if\" must be an expression such as \"age < 16\"")
        if not isinstance(then, Mapping) or not then:
            raise OptionError(f"{where}: \"then\" must name at least one column and its value")
        for col, value in then.items():
            if col not in (domain.names if domain is not None else list(columns)):
                raise OptionError(f"{where}: \"then\" names '{col}', which is not a column of the release")
            if domain is not None:
                _check_value(domain[col], value, where)
        out.append(Rule(cond, tuple(then.items())))
    return tuple(out)


def _check_value(attr, value, where: str) -> None:
    if value is None:
        if not attr.na:
            raise OptionError(f"{where}: '{attr.name}' has no missing level, so it cannot be set missing")
        return
    if attr.kind == "numeric":
        edges = attr.edges or (0.0, 0.0)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not edges[0] <= value <= edges[-1]:
            raise OptionError(f"{where}: '{attr.name}' takes a number in [{edges[0]:g}, {edges[-1]:g}]; "
                              f"got {value!r}")
        return
    if str(value) not in attr.labels:
        raise OptionError(f"{where}: '{attr.name}' has no level {value!r}; its levels are "
                          f"{', '.join(attr.labels[:10])}")


def apply_rules(frame: pd.DataFrame, rules: Sequence[Rule]) -> tuple[pd.DataFrame, list[int]]:
    """``frame`` (a synthetic set) with every rule applied in order, and how many records each changed
    (records that satisfied its condition and held some other value). Post-processing of released records."""
    if not rules:
        return frame, []
    out = frame.copy()
    changed = []
    for i, rule in enumerate(rules, 1):
        mask = row_mask(out, rule.condition, f"rule {i}")
        touched = np.zeros(len(out), dtype=bool)
        for col, value in rule.then:
            current = out[col]
            missing = current.isna().to_numpy()
            differs = ~missing if value is None else \
                (current.astype(object).astype(str).to_numpy() != _text(value)) | missing
            hit = mask & differs
            touched |= hit
            if hit.any():
                if value is None:
                    out.loc[hit, col] = None if current.dtype == object else np.nan
                else:
                    out.loc[hit, col] = _like(current, value)
        changed.append(int(touched.sum()))
    return out, changed


def _text(value) -> str:
    """A value as the text a level is compared by (1.0 and 1 alike)."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _like(column: pd.Series, value):
    """``value`` as the column holds it (a level read as text in a numeric column stays a number)."""
    if pd.api.types.is_numeric_dtype(column.dtype) and not isinstance(value, (int, float)):
        try:
            return float(value)
        except (TypeError, ValueError):
            return value
    if column.dtype == object and isinstance(value, (int, float)) and not isinstance(value, bool):
        levels = column.dropna()
        if len(levels) and isinstance(levels.iloc[0], str):
            return str(value)
    return value
