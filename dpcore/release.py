"""A finished release: the synthetic sets, the ledger, the tree and the manifest."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .budget import Ledger
from .domain import Domain
from .neighbours import Neighbours


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

    @property
    def tree(self):
        """The hierarchy of the first set (all sets share it when the order is fixed)."""
        return self.trees[0] if self.trees else None

    def manifest(self, private: bool = False) -> dict:
        """JSON-ready record of the release. No raw counts; the seed only when ``private``."""
        trees = [t.describe() if t is not None else None for t in self.trees]
        out = {
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
        if private:
            out["seed"] = self.seed
            out["private_copy"] = "contains the seed: do NOT publish this file"
        return out

    def manifest_json(self, private: bool = False) -> str:
        """The manifest as strict JSON text (no NaN), as written to ``manifest.json``."""
        return json.dumps(self.manifest(private), indent=2, ensure_ascii=False, default=_json_default)

    def write(self, out_dir) -> list[Path]:
        """Write ``synthetic_1.csv … synthetic_m.csv`` and ``manifest.json`` (published form)."""
        d = Path(out_dir)
        d.mkdir(parents=True, exist_ok=True)
        paths = []
        for i, s in enumerate(self.sets, 1):
            p = d / f"synthetic_{i}.csv"
            s.to_csv(p, index=False)
            paths.append(p)
        mp = d / "manifest.json"
        mp.write_text(self.manifest_json(), encoding="utf-8")
        paths.append(mp)
        return paths


def _json_default(o):
    if hasattr(o, "item"):
        return o.item()
    if isinstance(o, (set, tuple)):
        return list(o)
    return str(o)
