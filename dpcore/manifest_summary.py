"""The short human summary that opens every ``manifest.json``, and ε written for reading.

The summary repeats, in a few lines, what the full manifest below it records: which
table, when, which method, ε (rounded for reading; the ledger holds the exact figures),
δ (always null: every dpcore release is pure ε-DP), the neighbour notion, the DP status
and how many records each synthetic set has.

Privacy: everything in the published summary is either public (the method, ε, the
notion, the time, the name the curator gave the table) or covered by ε (the record count
is the noisy one under add/remove). The table's SHA-256 fingerprint is NOT published: a
hash of the raw table lets anyone holding a guess of the whole table (everything but one
record, say, and a few candidates for it) confirm the guess, which ε does not cover. It is
written only in the curator's private manifest; the budget book links the table's
fingerprint to the published manifest's SHA-256 (docs/privacy-model.md#the-manifest).
"""
from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping

#: Significant digits of ε "rounded for reading" (buttons, summaries): 4.158883 → 4.16.
READING_DIGITS = 3
#: Why the published manifest holds no fingerprint of the table (the private one does).
FINGERPRINT_WITHHELD = ("withheld from the published manifest: a hash of the raw table lets anyone confirm a guess "
                        "of the whole table, which ε does not cover; the curator's private manifest and budget book "
                        "hold it")


def rounded_epsilon(epsilon: float) -> float:
    """ε to :data:`READING_DIGITS` significant digits, as a number (4.158883 → 4.16, 0.9999999999999999 → 1.0)."""
    return float(f"{float(epsilon):.{READING_DIGITS}g}")


def epsilon_for_reading(epsilon: float) -> str:
    """ε as a person reads it: "1", "0.5", "4.16"; "≈ 4.16" is left to the caller's sentence."""
    return f"{rounded_epsilon(epsilon):g}"


def epsilon_phrase(epsilon) -> str:
    """ε after "spends": "= 1" when it reads exactly, "≈ 4.16" when rounded for reading (the
    exact ε is what is charged). Anything that is not a positive finite number is shown as given."""
    try:
        eps = float(epsilon)
    except (TypeError, ValueError):
        return f"= {epsilon}"
    if not (eps > 0 and eps < float("inf")):
        return f"= {epsilon}"
    return ("= " if rounded_epsilon(eps) == eps else "≈ ") + epsilon_for_reading(eps)


def created_now() -> str:
    """The current time in UTC to the second, ISO 8601 (``2025-03-01T09:30:00Z``)."""
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def manifest_summary(*, method: str, epsilon: float, dp: bool, neighbours: Mapping, record_count: Mapping,
                     created: str | None, table_name: str | None, table_sha256: str | None,
                     private: bool = False, delta: float | None = None, rho: float | None = None) -> dict:
    """The summary object written first in ``manifest.json``. ``private``: the curator's copy,
    which holds the table's SHA-256; the published copy says why it does not."""
    out = {
        "table": table_name,
        "table_sha256": table_sha256 if private else None,
    }
    if not private:
        out["table_sha256_note"] = FINGERPRINT_WITHHELD
    out.update({
        "created_utc": created,
        "method": method,
        "epsilon": rounded_epsilon(epsilon),
        "epsilon_note": f"rounded to {READING_DIGITS} significant digits for reading; the exact figures are "
                        "\"epsilon\" and the ledger below",
        "delta": delta,
        **({} if delta is None else {"rho": rho, "definition": "(ε, δ)-DP through ρ-zCDP"}),
        "neighbours": neighbours.get("description", neighbours.get("notion")),
        "dp": "yes" if dp else "NO (see dp_reason below)",
        "records_per_set": record_count.get("value"),
        "records_note": ("noisy count, covered by ε (the true count is not published)" if record_count.get("noisy")
                         else "the table's record count, public under replace-one neighbours"
                         if record_count else None),
    })
    return out
