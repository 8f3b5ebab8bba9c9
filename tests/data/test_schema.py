"""[private-domain] item 1: types are declared, never read. The schema casts each column record by record (a
value that does not fit becomes missing, counted curator-only), a proposal read from values is NOT DP, and the
release's structure under a declared schema does not depend on the values."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.data.schema import ColumnType, Schema
from dpcore.errors import DomainError, InputError

SCHEMA = Schema((ColumnType("term", "whole", False, "code"), ColumnType("income", "number", True),
                 ColumnType("job", "text", True), ColumnType("owner", "boolean", True),
                 ColumnType("kids", "whole", True, "count")))


def test_conform_casts_every_column_and_counts_what_did_not_fit():
    df = pd.DataFrame({"term": ["12", "24", "36.0"], "income": ["1.5", "abc", None], "job": [1, "x", None],
                       "owner": ["yes", "maybe", "FALSE"], "kids": [0, 2.5, None]})
    out, unfit = SCHEMA.conform(df)
    assert [str(out[c].dtype) for c in out] == ["int64", "float64", "object", "boolean", "Int64"]
    assert out["term"].tolist() == [12, 24, 36]
    assert out["job"].tolist()[:2] == ["1", "x"]
    assert unfit == {"income": 1, "owner": 1, "kids": 1}
    assert out["owner"].tolist()[0] is True and pd.isna(out["owner"][1]) and out["owner"].tolist()[2] is False


def test_refusals_are_one_line():
    with pytest.raises(InputError, match="declared not nullable"):
        SCHEMA.conform(pd.DataFrame({"term": [12, None], "income": [1.0, 2.0], "job": ["a", "b"],
                                     "owner": [True, False], "kids": [1, 2]}))
    with pytest.raises(InputError, match="no column 'kids'"):
        SCHEMA.conform(pd.DataFrame({"term": [1], "income": [1.0], "job": ["a"], "owner": [True]}))
    with pytest.raises(InputError, match="not in the schema"):
        SCHEMA.conform(pd.DataFrame({"term": [1], "income": [1.0], "job": ["a"], "owner": [True], "kids": [1],
                                     "x": [1]}))
    for bad, match in [({"name": "a", "type": "date"}, "type"), ({"name": "a", "type": "number", "role": "code"},
                                                                 "role"),
                       ({"name": "a", "type": "whole", "role": "size"}, "role"),
                       ({"name": "a", "type": "number", "levels": [1]}, "levels"),
                       ({"name": "a", "type": "text", "nullable": "yes"}, "nullable"),
                       ({"name": "a", "typo": 1}, "unknown key")]:
        with pytest.raises(DomainError, match=match):
            ColumnType.from_dict(bad)


def test_files_round_trip_and_a_file_is_declared_only_by_saying_so(tmp_path):
    p = tmp_path / "s.json"
    p.write_text(SCHEMA.to_json())
    assert Schema.load(p) == SCHEMA and Schema.load(p).public
    d = json.loads(SCHEMA.to_json())
    del d["source"]
    p.write_text(json.dumps(d))
    assert not Schema.load(p).public  # no "source": a proposal
    d["source"] = "dtypes"
    p.write_text(json.dumps(d))
    assert not Schema.load(p).public


def test_the_api_takes_the_frames_dtypes_as_the_declaration_and_a_proposal_is_not_dp():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"g": rng.choice(["a", "b"], 2000), "x": rng.normal(50, 10, 2000)})
    rel = dpcore.synthesize(df, "mst", 1.0, seed=0, domain="dp", delta=1e-9)
    assert rel.dp
    rel = dpcore.synthesize(df, "mst", 1.0, seed=0, domain="dp", delta=1e-9, schema=Schema.propose(df))
    assert not rel.dp and "proposed schema" in rel.dp_reason


def test_the_proposal_reads_whole_numbers_stored_as_floats_and_signs_a_count():
    # a reader makes a whole-number column with a missing value float (credit_data's Income): proposed whole,
    # so a release declared from the proposal draws whole numbers; a whole number holding a negative value is
    # proposed an amount (a count is never negative, and its range would start at 0)
    df = pd.DataFrame({"income": [68.0, np.nan, 130.0, 0.0], "hours": [0.5, 1.0, 2.0, 3.0],
                       "net": [-3, 4, 5, 0], "kids": [0, 1, 2, 3], "big": [2.0**60, 1.0, 2.0, 3.0]})
    p = Schema.propose(df)
    assert (p["income"].type, p["income"].role, p["income"].nullable) == ("whole", "count", True)
    assert p["hours"].type == "number" and p["big"].type == "number"  # beyond 2^53 a float is not a whole number
    assert (p["net"].role, p["kids"].role) == ("amount", "count")
    assert p["kids"].nonnegative and not p["net"].nonnegative and not p.public
    declared = Schema(p.columns, "declared")
    rel = dpcore.synthesize(pd.concat([df] * 500, ignore_index=True), "mst", 1.0, seed=0, domain="dp", delta=1e-9,
                            schema=declared)
    inc = rel.sets[0]["income"].dropna().astype(float)
    assert rel.dp and len(inc) > 0 and bool((inc == inc.round()).all())


def _structure(rel) -> list:
    return [(a.name, a.kind, a.dtype, a.na) for a in rel.domain.attributes]


@pytest.mark.parametrize("flip", ["text in a whole column", "2.5 in a whole column", "a missing whole",
                                  "a missing boolean", "a number in a text column"])
def test_one_record_that_would_flip_a_type_does_not_change_the_structure(flip):
    """Neighbouring tables (one record apart) that a reader would type differently give releases of the same
    structure under the declared schema: the types are the declaration's."""
    rng = np.random.default_rng(1)
    n = 1500
    base = pd.DataFrame({"term": rng.choice([12, 24, 36], n), "income": rng.lognormal(7, 1, n),
                         "job": rng.choice(["fixed", "freelance"], n), "owner": rng.choice([True, False], n),
                         "kids": rng.integers(0, 4, n)})
    extra = {"text in a whole column": {"kids": "many"}, "2.5 in a whole column": {"kids": 2.5},
             "a missing whole": {"kids": None}, "a missing boolean": {"owner": None},
             "a number in a text column": {"job": 3}}[flip]
    row = {**base.iloc[0].to_dict(), **extra}
    neighbour = pd.concat([base, pd.DataFrame([row])], ignore_index=True)  # a reader types this one otherwise
    sch = Schema(SCHEMA.columns[:2] + (ColumnType("job", "text", True), ColumnType("owner", "boolean", True),
                                       ColumnType("kids", "whole", True, "count")))
    a = dpcore.synthesize(base, "mst", 1.0, seed=0, domain="dp", delta=1e-9, schema=sch)
    b = dpcore.synthesize(neighbour.astype(object), "mst", 1.0, seed=0, domain="dp", delta=1e-9, schema=sch)
    assert _structure(a) == _structure(b) and a.dp and b.dp
    assert list(a.sets[0].columns) == list(b.sets[0].columns)
