"""[privacy-unit]: contribution bounding (dpcore.counting.contributions): at most K records per unit, a uniformly
random subset drawn from the release's generator, the identifier dropped; the unit declared, never read."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpcore.counting.contributions import (
    RECORD,
    PrivacyUnit,
    bound_contributions,
    check_privacy_unit,
    unit_candidates,
    unit_summary,
)
from dpcore.errors import OptionError
from dpcore.privacy.neighbours import book_notion, check_book_notion, describe_book_notion


def _panel(units: int = 50, per: int = 7) -> pd.DataFrame:
    return pd.DataFrame({"id": np.repeat(np.arange(units), per), "t": np.tile(np.arange(per), units),
                         "x": np.arange(units * per) % 3})


@pytest.mark.parametrize("k", [1, 2, 3, 7, 9])
def test_at_most_k_records_per_unit_the_rest_as_they_were(k):
    df = _panel()
    out = bound_contributions(df, PrivacyUnit("id", k), np.random.default_rng(0))
    assert "id" not in out.data.columns and list(out.data.columns) == ["t", "x"]
    assert out.units == 50 and out.largest == 7 and out.dropped_records == 50 * max(0, 7 - k)
    assert len(out.data) == 50 * min(k, 7)
    # every kept row is a row of the table (its values unchanged), and no unit keeps more than k
    kept = df.merge(out.data.assign(_k=1), on=["t", "x"], how="inner")
    assert len(out.data) <= len(df) and len(kept) >= len(out.data)


def test_the_subset_is_uniform_over_each_units_records():
    """Seeded statistical check: over 4,000 boundings of one unit of 7 records to K = 2, each record is kept with
    probability 2/7 (within 4 standard errors: 0.029)."""
    df = pd.DataFrame({"id": [1] * 7, "t": range(7)})
    rng = np.random.default_rng(42)
    counts = np.zeros(7)
    for _ in range(4000):
        counts[bound_contributions(df, PrivacyUnit("id", 2), rng).data["t"].to_numpy()] += 1
    p = counts / 4000
    assert np.all(np.abs(p - 2 / 7) < 4 * np.sqrt(2 / 7 * 5 / 7 / 4000)), p


def test_the_same_generator_bounds_the_same_way_and_missing_ids_are_units_of_their_own():
    df = _panel(10, 5)
    df.loc[[3, 4], "id"] = np.nan  # two records of unit 0 with no id: each its own unit, never merged
    a = bound_contributions(df, PrivacyUnit("id", 2), np.random.default_rng(7))
    b = bound_contributions(df, PrivacyUnit("id", 2), np.random.default_rng(7))
    assert a.data.equals(b.data)
    assert a.units == 10 + 2 and len(a.data) == 2 * 10 + 2 - 0  # unit 0 keeps 2 of its 3 identified records


def test_the_unit_is_declared_in_one_line_or_refused():
    df = _panel(3, 2)
    assert check_privacy_unit(df, None, None) == RECORD
    assert check_privacy_unit(df, "id", 2) == PrivacyUnit("id", 2)
    for column, k, match in [("person", 2, "not a column"), ("id", None, "needs records_per_unit"),
                             ("id", 0, "records_per_unit"), ("id", 1.5, "records_per_unit"),
                             (None, 3, "give privacy_unit")]:
        with pytest.raises(OptionError, match=match):
            check_privacy_unit(df, column, k)
    with pytest.raises(OptionError, match="no column besides"):
        check_privacy_unit(df[["id"]], "id", 2)
    assert book_notion("add_remove", None) == "add_remove"
    # K is inside each release (bounding), not part of what neighbours differ by: releases with K = 3 and 7 add up
    assert book_notion("replace", "id") == "replace, one 'id'"
    assert check_book_notion("add_remove, one 'id'") == "add_remove, one 'id'"
    assert describe_book_notion("add_remove, one 'id'") == "one 'id' with all of its records (add/remove)"
    for bad in ("add_remove, one ''", "both, one 'id'", "add_remove, one id"):
        with pytest.raises(OptionError):
            check_book_notion(bad)
    assert check_privacy_unit(df, "id", None, "t") == PrivacyUnit("id", 1, "t")
    for column, k, match in [("id", 3, "leave records_per_unit out"), (None, None, "give privacy_unit")]:
        with pytest.raises(OptionError, match=match):
            check_privacy_unit(df, column, k, "t")
    assert unit_summary(df, "id") == {"values": 3, "largest": 2, "repeated_share": 1.0}


# --------------------------------------------------------------------------- the Data page's flag (curator-only)


def test_a_repeating_identifier_is_flagged_and_measurements_are_not():
    """unit_candidates: a panel's id (balanced: 60 × 4; by its name even when unbalanced, or a household
    roster's); not a measurement whose common values pile up, a small categorical column, a two-level column
    named like an id, an all-distinct running number, or floats."""
    rng = np.random.default_rng(0)
    panel = pd.DataFrame({
        "person": np.repeat([f"p{i}" for i in range(60)], 4),  # text, balanced: flagged by its values alone
        "wave": np.tile([1, 2, 3, 4], 60),
        "age": rng.integers(18, 60, 240),  # an integer measurement: its values pile up unevenly
        "income": rng.normal(3000, 500, 240).round(2),  # floats
        "row": np.arange(240),  # all distinct: an identifier, but no value repeats
        "paid_id": rng.choice(["yes", "no"], 240),  # named like an id, two levels: no person
    })
    assert unit_candidates(panel) == ["person"]
    roster = pd.DataFrame({"hhid": np.repeat(np.arange(30), rng.integers(1, 8, 30))})  # unbalanced, named
    roster["sex"] = rng.choice(["f", "m"], len(roster))
    assert unit_candidates(roster) == ["hhid"]
    s7 = pd.read_csv(Path(__file__).resolve().parents[2] / "assets" / "sd2011_s7.csv")
    assert unit_candidates(s7) == []
    assert unit_summary(panel, "person") == {"values": 60, "largest": 4, "repeated_share": 1.0}
