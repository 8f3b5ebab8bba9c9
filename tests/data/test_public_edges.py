"""No bin edges from the data can be declared public ([honest-flow] item 2).

Every numeric attribute records where its edges came from (``Attribute.origin``). Edges over
the data's own min and max (``data_range``) and edges whose origin a file does not state
(``unstated``) can never be declared: ``Domain.declared`` refuses naming the column, and a
release whose domain still holds one is NOT DP whatever the domain's ``source`` says.
docs/privacy-model.md#what-is-public.
"""
from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.cli.commands import main
from dpcore.data.domain import (
    DATA_RANGE,
    DECLARED,
    DECLARED_EDGES,
    DP_QUANTILES,
    EDGE_ORIGINS,
    PUBLIC_BOUNDS,
    PUBLIC_ORIGINS,
    UNSTATED,
    Domain,
    infer_domain,
    numeric_attribute,
)
from dpcore.data.editing import apply_edges_table, edges_table, placeholder_attribute
from dpcore.errors import DomainError


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    n = 400
    return pd.DataFrame({"age": rng.integers(17, 84, n), "income": np.round(rng.gamma(2.0, 9000.0, n), 2),
                         "sex": rng.choice(["F", "M"], n)})


def _declared_file(dom: Domain) -> dict:
    """The domain as a file the curator marked declared (the README's sed line)."""
    d = json.loads(dom.to_json())
    d["source"] = "declared"
    return d


# --------------------------------------------------------------------------- provenance


def test_inference_marks_the_data_range_and_the_curators_bounds(table):
    dom = infer_domain(table, numeric={"income": {"bounds": [0, 200_000], "bins": 8}})
    assert dom["age"].origin == DATA_RANGE
    assert dom["age"].edges[0] == table["age"].min() and dom["age"].edges[-1] == table["age"].max()
    assert dom["income"].origin == PUBLIC_BOUNDS
    assert infer_domain(table, numeric={"age": [0, 18, 65, 120]})["age"].origin == DECLARED_EDGES
    assert dom["sex"].origin is None  # levels are declared with the whole domain, as before
    assert [a.name for a in dom.not_public] == ["age"] and dom.inferred
    assert numeric_attribute("x", [0, 1]).origin == DECLARED_EDGES  # edges written in code are a declaration


def test_engine_inference_marks_the_data_range_too(table, tmp_path):
    from dpcore.counting import duckdb_engine as duckdb_counts

    path = tmp_path / "t.csv"
    table.to_csv(path, index=False)
    eng = duckdb_counts.infer_domain(path, numeric={"income": {"bounds": [0, 200_000], "bins": 8}})
    assert (eng["age"].origin, eng["income"].origin) == (DATA_RANGE, PUBLIC_BOUNDS)


def test_a_data_range_attribute_cannot_be_declared(table):
    dom = infer_domain(table)
    with pytest.raises(DomainError) as err:
        dom.declared()
    msg = str(err.value)
    assert "\n" not in msg and "'age', 'income'" in msg and "data's own min and max" in msg
    assert "bounds" in msg and "dp_bins" in msg and "drop the column" in msg
    ok = infer_domain(table, numeric={"age": {"bounds": [0, 100], "bins": 5}, "income": [0, 5e4, 1e6]})
    assert not ok.declared().inferred and ok.declared().source == DECLARED


def test_origin_round_trips_and_bad_origins_are_one_line_errors(table):
    dom = infer_domain(table, numeric={"income": {"bounds": [0, 200_000], "bins": 8}})
    back = Domain.from_json(dom.to_json())
    assert back.attributes == dom.attributes
    assert json.loads(dom.to_json())["attributes"][0]["origin"] == DATA_RANGE
    base = {"attributes": [{"name": "x", "type": "numeric", "edges": [0, 1, 2]}]}
    for bad, words in ((5, "must be one of"), ("DATA_RANGE", "must be one of"), (["declared"], "must be one of"),
                       (None, "must be one of")):
        d = json.loads(json.dumps(base))
        d["attributes"][0]["origin"] = bad
        with pytest.raises(DomainError, match=words) as err:
            Domain.from_dict(d)
        assert "'x'" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(DomainError, match="origin.*numeric bin edges"):
        Domain.from_dict({"attributes": [{"name": "s", "levels": ["a", "b"], "origin": "declared"}]})
    assert set(EDGE_ORIGINS) == PUBLIC_ORIGINS | {DATA_RANGE, UNSTATED}


def test_old_files_without_origin_are_read_conservatively():
    """A numeric attribute without "origin" is unstated: the file may be an old `dpcore domain`
    output with the data's range, declared by hand. Categorical attributes read as before."""
    old = {"source": "declared", "attributes": [
        {"name": "age", "type": "numeric", "edges": [0, 50, 100], "dtype": "int64"},
        {"name": "sex", "levels": ["F", "M"]}]}
    dom = Domain.from_dict(old)
    assert dom.source == DECLARED and dom["age"].origin == UNSTATED and dom.inferred
    assert [a.name for a in dom.not_public] == ["age"]
    old["attributes"][0]["origin"] = "declared"  # the curator states the edges are public
    assert not Domain.from_dict(old).inferred


# --------------------------------------------------------------------------- releases


def test_declaring_the_file_by_hand_does_not_make_data_range_edges_dp(table):
    """[honest-flow] row 2: the sed trick used to give DP: yes with the data's exact min and max."""
    d = _declared_file(infer_domain(table))
    rel = dpcore.synthesize(table, "flat_laplace", 1.0, seed=3, domain=d)
    assert not rel.dp and rel.dp_reason.startswith("NOT differentially private")
    assert "'age', 'income'" in rel.dp_reason and "data's own min and max" in rel.dp_reason
    assert "inferred from the data and not declared" not in rel.dp_reason  # the source itself is declared
    manifest = rel.manifest()
    assert manifest["dp"] is False and manifest["summary"]["dp"].startswith("NO")
    # an unstated origin is named too
    d["attributes"][0].pop("origin")
    rel = dpcore.synthesize(table, "flat_laplace", 1.0, seed=3, domain=d)
    assert not rel.dp and "'age' have no stated origin" in rel.dp_reason


def test_public_bounds_edges_and_dp_quantiles_release_as_dp(table):
    bounds = infer_domain(table, numeric={"age": {"bounds": [0, 100], "bins": 5},
                                          "income": {"bounds": [0, 200_000], "bins": 4}}).declared()
    assert dpcore.synthesize(table, "flat_laplace", 1.0, seed=3, domain=bounds).dp
    # DP quantile edges replace bins over the data's range: the release is DP and says where they came from
    d = _declared_file(infer_domain(table, numeric={"income": {"bounds": [0, 200_000], "bins": 4}}))
    rel = dpcore.synthesize(table, "flat_laplace", 1.0, seed=3, domain=d,
                            dp_bins={"age": {"bins": 4, "lower": 0, "upper": 100, "method": "quantiles"}})
    assert rel.dp, rel.dp_reason
    assert rel.domain["age"].origin == DP_QUANTILES
    assert rel.manifest()["domain"]["attributes"][0]["origin"] == DP_QUANTILES
    assert (rel.domain["age"].edges[0], rel.domain["age"].edges[-1]) == (0.0, 100.0)


def test_the_origin_does_not_change_the_release(table):
    """Seeded releases stay byte-identical: the origin is a label, not an input of any mechanism."""
    dom = infer_domain(table, numeric={"age": {"bounds": [0, 100], "bins": 5}, "income": [0, 5e4, 1e6]})
    relabelled = Domain(tuple(numeric_attribute(a.name, a.edges, a.na, a.dtype, origin=DECLARED_EDGES)
                              if a.kind == "numeric" else a for a in dom.attributes)).declared()
    assert relabelled["age"].origin != dom["age"].origin
    for method in ("steps", "flat_laplace", "mst"):
        a = dpcore.synthesize(table, method, 1.0, sets=2, seed=11, domain=dom.declared())
        b = dpcore.synthesize(table, method, 1.0, sets=2, seed=11, domain=relabelled)
        assert [s.to_csv(index=False) for s in a.sets] == [s.to_csv(index=False) for s in b.sets], method


# --------------------------------------------------------------------------- the edge editor


def test_the_edge_editor_never_offers_the_data_range(table):
    dom = infer_domain(table)
    assert edges_table(dom["age"]).empty  # the data's min and max are not put in front of the curator
    typed = apply_edges_table(dom["age"], pd.DataFrame({"edge": [0, 18, 65, 120]}), na=False)
    assert typed.origin == DECLARED_EDGES and typed.edges == (0, 18, 65, 120)
    with pytest.raises(DomainError, match="'age': give at least two public bin edges"):
        apply_edges_table(dom["age"], edges_table(dom["age"]), na=False)
    declared = infer_domain(table, numeric={"age": [0, 18, 65, 120]})
    assert edges_table(declared["age"])["edge"].tolist() == [0, 18, 65, 120]
    assert placeholder_attribute(dom["age"], 0, 100, 4, False).origin == PUBLIC_BOUNDS


# --------------------------------------------------------------------------- command line


def test_cli_domain_marks_each_data_range_attribute_and_synth_names_it(table, tmp_path, capsys):
    src, dom_path = tmp_path / "t.csv", tmp_path / "domain.json"
    table.to_csv(src, index=False)
    assert main(["domain", str(src), "--out", str(dom_path), "--numeric", "income=0:200000:4"]) == 0
    out = capsys.readouterr().out
    marks = [ln for ln in out.splitlines() if ln.startswith("NOT PUBLIC:")]
    assert len(marks) == 1 and marks[0].startswith("NOT PUBLIC: 'age' has bin edges from the data's own range")
    assert "--numeric age=lower:upper:bins" in marks[0] and "--dp-bins" in marks[0]
    # no bounds rounded from the data are offered: the only figures are the data's own range, named as such
    numbers = re.findall(r"-?\d+(?:\.\d+)?", marks[0].split("(\"origin\"")[1])
    assert numbers == [], marks[0]
    d = json.loads(dom_path.read_text(encoding="utf-8"))
    assert {a["name"]: a.get("origin") for a in d["attributes"]} == {"age": DATA_RANGE, "income": PUBLIC_BOUNDS,
                                                                       "sex": None}
    # the README's sed line: the source says declared, the release still is NOT DP, naming the column
    text = dom_path.read_text(encoding="utf-8")
    dom_path.write_text(re.sub(r'"source": "[^"]*"', '"source": "declared"', text), encoding="utf-8")
    assert main(["synth", str(src), "--out", str(tmp_path / "r"), "--domain", str(dom_path), "--seed", "1",
                 "--method", "flat_laplace"]) == 0
    out = capsys.readouterr().out
    dp_line = next(ln for ln in out.splitlines() if ln.startswith("DP:"))
    assert dp_line.startswith("DP: NO") and "'age'" in dp_line and "'income'" not in dp_line
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["dp"] is False and "'age'" in manifest["dp_reason"]
    # DP quantile edges at release fix it
    assert main(["synth", str(src), "--out", str(tmp_path / "q"), "--domain", str(dom_path), "--seed", "1",
                 "--method", "flat_laplace", "--dp-bins", "age=0:100:4"]) == 0
    assert "DP: yes" in capsys.readouterr().out
    # and public bounds when writing the file: no mark
    assert main(["domain", str(src), "--out", str(dom_path), "--numeric", "income=0:200000:4",
                 "--numeric", "age=0:100:10"]) == 0
    assert "NOT PUBLIC" not in capsys.readouterr().out
