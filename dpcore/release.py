"""A finished release: the synthetic sets, the ledger, the tree and the manifest."""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from dpcore.data.domain import Domain
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.neighbours import Neighbours


def curator_only_lines(curator_only: dict) -> list[str]:
    """A release's :attr:`Release.curator_only` in words, one line each: the records clamped into end bins, the
    values that did not fit their declared type, and per column those recoded. NOT DP: counts of raw records, for
    the curator's eyes (CLI, Release page, data server), never published."""
    lines = []
    unit = curator_only.get("privacy_unit") or {}
    if unit:
        lines.append(_unit_line(unit))
    clamped = curator_only.get("clamped_records") or {}
    if clamped:
        lines.append("NOT DP, curator-only: records clamped into the end bins: "
                     + ", ".join(f"{c} {n:,}" for c, n in clamped.items()))
    unfit = curator_only.get("values_not_fitting_their_type") or {}
    if unfit:
        lines.append("NOT DP, curator-only: values that did not fit their declared type (now missing): "
                     + ", ".join(f"{c} {n:,}" for c, n in unfit.items()))
    for col, what in (curator_only.get("recoded") or {}).items():
        parts = [f"{n:,} {k.replace('_', ' ')}" for k, n in what.items() if n]
        if parts:
            lines.append(f"NOT DP, curator-only: '{col}': " + ", ".join(parts))
    return lines


def _unit_line(unit: dict) -> str:
    """What contribution bounding (or the wide pivot) did to the raw records: curator-only, NOT DP."""
    col = unit.get("column")
    if unit.get("panel_time"):
        return (f"NOT DP, curator-only: the panel pivoted wide, one record per '{col}': {unit.get('units', 0):,} "
                f"'{col}' values; {unit.get('records_dropped', 0):,} record(s) dropped (more than one per '{col}' and "
                f"'{unit['panel_time']}'), {unit.get('records_unplaced', 0):,} with a period the domain does not "
                "declare")
    return (f"NOT DP, curator-only: contribution bounding kept at most {unit.get('records_per_unit')} record(s) per "
            f"'{col}': {unit.get('units', 0):,} '{col}' values, the largest had {unit.get('largest_unit', 0):,} "
            f"records; {unit.get('records_dropped', 0):,} record(s) dropped")


@dataclass
class Release:
    """The output of :func:`dpcore.synthesize`.

    ``sets`` are m DataFrames with the original columns and dtypes; ``ledger`` says
    where every part of ε went; ``trees`` the hierarchy used per set (None for
    methods without one). ``dp`` is False, with ``dp_reason``, whenever anything
    in the release is not covered by the ledger (non-private tree choice, an
    undeclared domain).
    """

    method: str
    epsilon: float
    options: dict
    domain: Domain
    ledger: Ledger
    sets: list[pd.DataFrame]
    trees: list
    dp: bool
    dp_reason: str
    seed: int | None = None
    diagnostics: dict = field(default_factory=dict)
    neighbours: Neighbours = field(default_factory=Neighbours)
    record_count: dict = field(default_factory=dict)
    #: when the release was made (UTC, to the second); the table's name and SHA-256 as the
    #: caller knows them (:meth:`for_table`): the summary that opens the manifest
    created: str | None = None
    table_name: str | None = None
    table_sha256: str | None = None

    def for_table(self, name: str | None, sha256: str | None = None) -> Release:
        """Name the table the release was made from (and its fingerprint, written only to the
        private manifest); returns the release itself."""
        self.table_name = None if name is None else str(name)
        self.table_sha256 = sha256
        return self

    #: None: pure ε-DP; a number: (ε, δ)-DP through zCDP (the ledger is kept in ρ)
    delta: float | None = None
    #: the part of ``delta`` spent on the thresholds of DP levels (the ledger converts ρ at the rest)
    levels_delta: float = 0.0
    #: CURATOR-ONLY, NOT DP: records clamped into end bins or recoded, per column (``clamped_records``,
    #: ``recoded``); written only to the private manifest, never to the published one
    curator_only: dict = field(default_factory=dict)

    @property
    def rho(self) -> float | None:
        """ρ of a zCDP release (None for a pure ε one)."""
        return self.ledger.rho

    @property
    def tree(self):
        """The hierarchy of the first set (all sets share it when the order is fixed)."""
        return self.trees[0] if self.trees else None

    def manifest(self, private: bool = False) -> dict:
        """JSON-ready record of the release, opening with a short human summary
        (:mod:`dpcore.manifest_summary`). No raw counts; the seed and the table's
        fingerprint only when ``private``."""
        from dpcore.manifest_summary import manifest_summary

        trees = [t.describe() if t is not None else None for t in self.trees]
        out: dict[str, Any] = {
            "summary": manifest_summary(method=self.method, epsilon=self.epsilon, dp=self.dp,
                                        neighbours=self.neighbours.to_dict(), record_count=self.record_count,
                                        created=self.created, table_name=self.table_name,
                                        table_sha256=self.table_sha256, private=private, delta=self.delta,
                                        rho=self.ledger.rho),
            "method": self.method,
            "epsilon": self.epsilon,
            "options": dict(self.options, sets=len(self.sets)),
            "domain": self.domain.to_dict(),
            "ledger": self.ledger.to_dict(),
            "tree": {"per_set": trees} if any(t is not None for t in trees) else None,
            "dp": self.dp,
            "dp_reason": self.dp_reason,
            "neighbours": self.neighbours.to_dict(),
            # noisy under add/remove (the true count is never written), public n under replace
            "record_count": self.record_count,
            "public": (["n (the number of records)"] if self.neighbours.n_public else
                       [f"an upper bound of {self.neighbours.max_records:,} records on the table's size"])
                      + ["the domain: attribute names, levels and bin edges"],
            "diagnostics": self.diagnostics,
        }
        if self.delta is not None:  # pure-ε manifests are written exactly as before
            out["privacy_definition"] = {
                "definition": "(ε, δ)-DP through ρ-zCDP", "epsilon": self.epsilon, "delta": self.delta,
                "rho": self.ledger.rho, "conversion": "Canonne, Kamath & Steinke 2020 (tight), rounded up"}
            if self.levels_delta:
                out["privacy_definition"].update(
                    delta_of_level_thresholds=self.levels_delta, delta_of_rho_conversion=self.ledger.delta,
                    composition="δ-approximate ρ-zCDP (Bun & Steinke 2016): the thresholds' δ plus the conversion's")
        if private:
            out["seed"] = self.seed
            if self.curator_only:
                out["curator_only_not_dp"] = self.curator_only
            out["private_copy"] = "contains the seed: do NOT publish this file"
        return out

    def manifest_json(self, private: bool = False) -> str:
        """The manifest as strict JSON text, as written to ``manifest.json``: a non-finite
        number (an infinite noise variance, a diverged diagnostic) is written as the string
        "inf", "-inf" or "nan", never as the non-JSON tokens Infinity / NaN."""
        return json.dumps(strict_json(self.manifest(private)), indent=2, ensure_ascii=False, allow_nan=False,
                          default=_json_default)

    def write(self, out_dir) -> list[Path]:
        """Write ``synthetic_1.csv … synthetic_m.csv`` and ``manifest.json`` (published form)."""
        from dpcore.errors import InputError

        d = prepare_out_dir(out_dir)
        paths = []
        try:
            for i, s in enumerate(self.sets, 1):
                p = d / f"synthetic_{i}.csv"
                s.to_csv(p, index=False)
                paths.append(p)
            mp = d / "manifest.json"
            mp.write_text(self.manifest_json(), encoding="utf-8")
        except OSError as exc:  # a full disk: one line, naming the folder
            raise InputError(f"cannot write the release into '{d}' ({exc.strerror or exc}); free space there or "
                             "choose another folder") from None
        paths.append(mp)
        return paths


def check_out_dir(out_dir, option: str = "--out") -> Path:
    """An :class:`~dpcore.errors.InputError` unless ``out_dir`` is, or can be created as,
    a writable folder. Creates nothing: the CLI calls it BEFORE a release, so no ε is
    spent on a release that cannot be written."""
    from dpcore.errors import InputError

    d = Path(out_dir)
    for part in [d, *d.parents]:
        if part.exists():
            if not part.is_dir():
                raise InputError(f"{option} '{out_dir}': '{part}' is a file, not a folder; "
                                 "choose a folder for the release")
            if not os.access(part, os.W_OK | os.X_OK):
                raise InputError(f"{option} '{out_dir}': '{part}' is not writable; choose a writable folder")
            break
    return d


def prepare_out_dir(out_dir) -> Path:
    """Create the output folder (after :func:`check_out_dir`), or a clear InputError."""
    from dpcore.errors import InputError

    d = check_out_dir(out_dir)
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"--out '{out_dir}': cannot create the folder ({exc.strerror}); "
                         "choose a writable folder") from None
    return d


def strict_json(obj):
    """``obj`` with every non-finite float replaced by its string name (JSON has no inf/NaN)."""
    if isinstance(obj, dict):
        return {k: strict_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [strict_json(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):
        try:
            obj = obj.item()
        except (TypeError, ValueError):
            return obj
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    return obj


def _json_default(o):
    if hasattr(o, "item"):
        return o.item()
    if isinstance(o, (set, tuple)):
        return list(o)
    return str(o)
