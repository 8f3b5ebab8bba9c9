"""The private domain in the studio: the column types the curator declares, each column's forecast, the refusal of
a release with a column forecast not found, and each column's status after the release.

* **Types are declared, never read** (``docs/methods/dp-domain.md``): the Data page shows the types a reader gave
  the uploaded table as a *proposal* (:func:`proposal`, :meth:`dpcore.data.schema.Schema.propose`: NOT public),
  the curator edits a column at a time (:func:`with_column`) and confirms them (:func:`declare`: the table is then
  cast record by record to the declared types, the values that do not fit counted for the curator only);
* **before the release**, :func:`forecast_rows` puts :func:`dpcore.previews.domain_forecast` in the pages' words;
  :func:`refusal` and :func:`accept_label` say why a release with a column forecast "not found at this budget" is
  refused and, exactly, what "release anyway" does to such a column;
* **after the release**, :func:`release_statuses` reads each column's status from the published manifest (a
  function of the release's noisy outputs: post-processing, public).

Nothing here draws noise or charges anything; the forecast with the table's own record count is curator-only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from dpcore.data.schema import CODE, PROPOSED_SCHEMA, ROLES, TEXT, TYPES, WHOLE, ColumnType, Schema
from dpcore.errors import DomainError
from dpcore.measure.domain_forecast import MAX_USEFUL_SHARE
from dpcore.measure.dp_domain import BOOLEAN, COARSE, DECLARED_LEVELS, FOUND, NOT_FOUND, NUMERIC, zero_only
from dpcore.studio.design import domain_share, unit_options

__all__ = [
    "TYPE_WORDS",
    "ROLE_WORDS",
    "STATUSES",
    "proposal",
    "schema_rows",
    "with_column",
    "declare",
    "design_forecast",
    "forecast_basis",
    "forecast_rows",
    "forecast_summary",
    "not_found",
    "refusal",
    "accept_label",
    "compared_on",
    "release_statuses",
    "found_statuses",
    "statuses_summary",
]

#: The declared types, and a whole number's roles, in the Data page's words.
TYPE_WORDS = {TEXT: "text", "boolean": "true/false", "number": "number", WHOLE: "whole number"}
ROLE_WORDS = {
    CODE: "code (each value a category: a loan term of 6, 12, … 72 months)",
    "count": "count (a number of things, never negative)",
    "amount": "amount (a quantity of either sign, binned)",
}
assert set(TYPE_WORDS) == set(TYPES) and set(ROLE_WORDS) == set(ROLES)
#: The three statuses, best first.
STATUSES = (FOUND, COARSE, NOT_FOUND)


# --------------------------------------------------------------------------- the declared types


def proposal(df: pd.DataFrame) -> Schema:
    """The types a reader gave ``df``, for the curator to review: NOT public (``source`` "proposed"). A column of a
    type a release does not take (dates, times) is proposed as text."""
    frame = df.copy(deep=False)
    for col in frame.columns:
        if frame[col].dtype.kind in "mMc" or isinstance(frame[col].dtype, pd.PeriodDtype):
            frame[col] = frame[col].astype(object)
    return Schema.propose(frame)


def schema_rows(schema: Schema, raw: pd.DataFrame) -> pd.DataFrame:
    """The schema as the Data page's table: each column's type, role, nullable, declared levels, and the dtype the
    reader gave it (what the proposal was read from)."""
    return pd.DataFrame(
        [
            {
                "column": c.name,
                "type": TYPE_WORDS[c.type],
                "role": c.role or "",
                "nullable": c.nullable,
                "declared levels": "" if c.levels is None else ", ".join(map(str, c.levels)),
                "read as": str(raw[c.name].dtype) if c.name in raw.columns else "",
            }
            for c in schema.columns
        ]
    )


def with_column(
    schema: Schema, name: str, type_: str, role: str | None, nullable: bool, levels_text: str = ""
) -> Schema:
    """``schema`` with column ``name`` declared anew, as a proposal again (an edit needs confirming). ``levels_text``:
    the column's declared levels, comma-separated (empty: none; a text column's or a whole-number code's only).
    One line (DomainError) for a type, role or levels that do not fit."""
    parts = [p.strip() for p in (levels_text or "").split(",") if p.strip()]
    levels: tuple | None = None
    if parts:
        if type_ == WHOLE:
            try:
                levels = tuple(int(p) for p in parts)
            except ValueError:
                bad = next(p for p in parts if not p.lstrip("-").isdigit())
                raise DomainError(
                    f"column '{name}': the levels of a whole-number code must be whole numbers; got {bad!r}"
                ) from None
        else:
            levels = tuple(parts)
    new = ColumnType(name, type_, bool(nullable), role if type_ == WHOLE else None, levels)
    return Schema(tuple(new if c.name == name else c for c in schema.columns), PROPOSED_SCHEMA)


def declare(schema: Schema, df: pd.DataFrame) -> tuple[Schema, pd.DataFrame, dict[str, int]]:
    """The curator's confirmation: (the declared schema, ``df`` cast to it record by record, the values per column
    that did not fit their type and are now missing: curator-only, NOT DP). One line (InputError) when a column
    declared not nullable has missing values."""
    declared = schema.declared()
    conformed, unfit = declared.project([str(c) for c in df.columns]).conform(df)
    return declared, conformed, unfit


# --------------------------------------------------------------------------- before the release


def design_forecast(df: pd.DataFrame, design: Mapping, schema: Schema, n: float | None = None) -> list:
    """:func:`dpcore.previews.domain_forecast` for the design (its ε, δ, the domain's share, the neighbours and the
    privacy unit) on the table ``df`` the release reads, with the types ``schema``. ``n``: a public record count
    (None: the table's own, and the forecast is then curator-only). Reads no value; spends nothing."""
    from dpcore.previews import domain_forecast

    unit = unit_options(dict(design))
    delta = float(design.get("delta") or 1e-9) if design.get("definition") == "zcdp" else None
    return domain_forecast(
        df,
        float(design.get("epsilon") or 1.0),
        delta=delta,
        domain_share=domain_share(dict(design)),
        schema=schema,
        n=n,
        neighbours=design.get("neighbours", "add_remove"),
        privacy_unit=unit.get("privacy_unit"),
        records_per_unit=unit.get("records_per_unit"),
    )


def forecast_basis(schema_public: bool, n: float, n_source: str | None) -> tuple[str, bool]:
    """(what the forecast was made from, in words; whether it is NOT DP). Public when the types are declared and
    ``n`` is a public count (``n_source`` says which); the table's own count or types proposed from the values make
    it curator-only."""
    count = (
        f"{n:,.0f} records: {n_source}"
        if n_source
        else f"the table's own {n:,.0f} records (curator-only: not released)"
    )
    types = "the declared column types" if schema_public else "the types proposed from the values (not declared yet)"
    return f"From {types}, {count}, ε, δ and the domain's share; no value is read, nothing is spent.", not (
        schema_public and n_source
    )


def _finds(f, n: float, code: bool = False) -> str:
    """What the release will likely find of column ``f``, in words (``code``: a whole-number code, whose values
    outside the levels found become missing: a whole number has no "other")."""
    if f.kind == BOOLEAN:
        return "false and true: public from its type"
    if f.kind == DECLARED_LEVELS:
        return "its declared levels: public"
    if f.needs is None:
        return "nothing: levels read from the data need (ε, δ)"
    need = f"{f.needs:,.0f}"
    if f.kind == NUMERIC:
        return {
            FOUND: f"bounds and bins (each range from a power of two to the next needs about {need} records)",
            COARSE: f"bounds only where most values lie (each range from a power of two to the next needs "
            f"about {need} records): the tails are clamped",
            NOT_FOUND: f"likely nothing, every value missing: a range from a power of two to the next needs "
            f"about {need} records, more than the {n:,.0f}",
        }[f.status]
    rarest = min(f.needs / max(n, 1.0), 1.0)
    share = f"{rarest:.1%}" if rarest < 0.1 else f"{rarest:.0%}"
    other = "missing" if code else "“other”"
    return {
        FOUND: f"levels holding at least {share} of the records (about {need}); rarer ones become {other}",
        COARSE: f"only the common levels, those holding at least {share} of the records (about {need}); "
        f"the rest become {other}",
        NOT_FOUND: f"likely no level, or only one holding over {share} of the records (about {need}): "
        f"the rest become {other}",
    }[f.status]


def _helps(f, share: float) -> str:
    """What would make column ``f`` found: a larger share of the domain's budget, declaring it, dropping it."""
    if f.status == FOUND:
        return ""
    parts = []
    if f.share_needed is not None and f.share_needed < MAX_USEFUL_SHARE:
        parts.append(f"a domain share of {f.share_needed:.0%} (now {share:.0%})")
    elif f.needs is not None:
        parts.append("a larger ε (no domain share is enough at this ε)")
    parts.append(
        "declaring its levels (Data page, column types)"
        if f.kind != NUMERIC
        else "declaring it (a whole-number code with its levels, or the domain with codebook bounds)"
    )
    if f.status == NOT_FOUND:
        parts.append("dropping it")
    return "; or ".join(parts)


def forecast_rows(forecasts: Sequence, n: float, share: float, schema: Schema | None = None) -> pd.DataFrame:
    """:func:`dpcore.previews.domain_forecast`'s columns as the Data and Preview pages show them: each column's
    status, what it will likely find, and what would help (on ``n`` records, the domain's ``share`` of ε, the types
    ``schema``)."""
    codes = {c.name for c in schema.columns if c.type == WHOLE} if schema is not None else set()
    return pd.DataFrame(
        [
            {
                "column": f.column,
                "status": f.status,
                "share of the domain's ε": f"{f.share:.0%}" if f.share else "none",
                "what it will likely find": _finds(f, n, f.column in codes),
                "what would help": _helps(f, share),
            }
            for f in forecasts
        ]
    )


def forecast_summary(forecasts: Sequence) -> str:
    """One line: the columns of each status, best first (the statuses no column has left out)."""
    groups = {st: [f.column for f in forecasts if f.status == st] for st in STATUSES}
    words = {FOUND: "found", COARSE: "found coarsely", NOT_FOUND: "likely not found at this budget"}
    return (
        "; ".join(
            f"{words[st].capitalize() if i == 0 else words[st]}: {', '.join(cols)}"
            for i, (st, cols) in enumerate((st, c) for st, c in groups.items() if c)
        )
        + "."
    )


def not_found(forecasts: Sequence) -> list:
    """The columns forecast "not found at this budget"."""
    return [f for f in forecasts if f.status == NOT_FOUND]


def _comes_out(f, schema: Schema | None) -> str:
    """What a release makes of column ``f`` when its private domain finds nothing (dpcore.measure.dp_domain): a
    numeric column is withheld (every value missing); a text column keeps only "other" (and its missing values, if
    nullable); a whole-number code has no "other", so every value is missing."""
    code = schema is not None and f.column in schema.names and schema[f.column].type == WHOLE
    if f.kind == NUMERIC or code:
        return "every value missing"
    nullable = schema is None or f.column not in schema.names or schema[f.column].nullable
    return "every value “other”" + (" or missing" if nullable else "")


def refusal(forecasts: Sequence) -> str | None:
    """Why a release is refused before anything is spent (None: nothing forecast not found)."""
    lost = not_found(forecasts)
    if not lost:
        return None
    names = ", ".join(f.column for f in lost)
    them = "it" if len(lost) == 1 else "them"
    return (
        f"Refused before anything is spent: the forecast says {names} will likely not be found at this budget. "
        f"Drop {them} or declare {them} on the Data page (levels in the column types, or the domain instead), "
        "raise the domain's share or ε, or tick the box below to release anyway."
    )


def accept_label(forecasts: Sequence, schema: Schema | None = None) -> str:
    """The words of the checkbox that releases anyway: exactly what happens to each column forecast not found, if
    the release does not find it either."""
    outcomes: dict[str, list[str]] = {}
    for f in not_found(forecasts):
        outcomes.setdefault(_comes_out(f, schema), []).append(f.column)
    parts = [f"{what}: {', '.join(cols)}" for what, cols in outcomes.items()]
    return (
        "Release anyway: I accept that a column the release does not find comes out with nothing of its own ("
        + "; ".join(parts)
        + "); one it does find comes out as found"
    )


# --------------------------------------------------------------------------- after the release


def _found_what(rec: Mapping) -> str:
    if rec.get("withheld"):
        return "withheld: every synthetic value missing"
    if "bounds" in rec:
        lo, hi = rec["bounds"]
        edges = rec.get("edges") or []
        if zero_only(rec):
            return f"only zero stood out of the noise: bounds [{lo:g}, {hi:g}], every other value clamped into them"
        return f"bounds [{lo:g}, {hi:g}], {max(len(edges) - 1, 1)} bins" + (
            " (a side's bounds from its largest noisy count: perhaps noise)" if rec.get("fallback") else ""
        )
    levels = [str(v) for v in rec.get("levels") or []]
    shown = ", ".join(levels[:6]) + (", …" if len(levels) > 6 else "")
    other = f"; the rest “{rec['other']}”" if rec.get("other") else ""
    return (
        f"{len(levels)} level(s): {shown}{other}"
        if levels
        else f"no level found: every value “{rec['other']}”"
        if rec.get("other")
        else "no level found"
    )


def compared_on(manifest: Mapping, domain, original: pd.DataFrame):
    """(domain, original) to compare a release's sets with its source on: a release that found its domain privately
    is compared on that domain, the source's records recoded to it as the release recoded them (values outside the
    levels found "other", numbers clamped into the end bins: post-processing of the DP domain; the records
    themselves stay curator-only); any other release on ``domain`` and ``original`` as given."""
    from dpcore.data.domain import DP_FOUND, Domain
    from dpcore.measure.dp_domain import recode_for_domain

    if (manifest.get("domain") or {}).get("source") != DP_FOUND:
        return domain, original
    found = Domain.from_dict(manifest["domain"])
    missing = [n for n in found.names if n not in original.columns]
    if missing:
        raise DomainError(
            f"the table lacks the release's column(s) {', '.join(map(repr, missing))}; compare the "
            "release with the table it was made from"
        )
    return found, recode_for_domain(original[found.names], found)[0]


def release_statuses(manifest: Mapping) -> pd.DataFrame | None:
    """Each column's status as a release found its domain privately, from its published manifest (its noisy
    outputs only: post-processing, public); None when the release declared its domain."""
    cols = ((manifest.get("diagnostics") or {}).get("dp_domain") or {}).get("columns") or {}
    if not cols:
        return None
    unit = "ρ" if (manifest.get("privacy_definition") or {}).get("delta") is not None else "ε"
    return pd.DataFrame(
        [
            {
                "column": name,
                "status": rec.get("status", ""),
                # planned: the column's part of the domain's share; spent: what the ledger charged (a column whose
                # bounds hold few numbers gets one bin per number and gives its bins' part to the synthetic sets)
                "planned share of the domain's budget": f"{float(rec.get('share') or 0):.0%}" if rec.get("share")
                else "none",
                f"spent ({unit})": f"{float(rec.get('spent') or 0):.3g}",
                "what the release found": _found_what(rec),
            }
            for name, rec in cols.items()
        ]
    )


def found_statuses(manifest: Mapping) -> dict[str, list[str]]:
    """The columns of each status (found, found coarsely, not found at this budget) in a release's manifest."""
    table = release_statuses(manifest)
    out: dict[str, list[str]] = {st: [] for st in STATUSES}
    for _, row in table.iterrows() if table is not None else iter(()):
        out.setdefault(row["status"], []).append(row["column"])
    return out


def statuses_summary(manifest: Mapping) -> str | None:
    """One line: which columns the release found privately, and how well (None: it declared its domain)."""
    groups = {st: cols for st, cols in found_statuses(manifest).items() if cols}
    if not groups:
        return None
    return (
        "; ".join(
            f"{(st.capitalize() if i == 0 else st)}: {', '.join(cols)}" for i, (st, cols) in enumerate(groups.items())
        )
        + "."
    )
