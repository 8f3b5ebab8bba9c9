"""Domain editing (dpcore.data.editing): renames and merges are explicit recodes, added levels
and NA handling change the domain only, edits are validated with one-line errors, and the
data are never altered in place."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.data.domain import DECLARED, INFERRED
from dpcore.data.editing import (
    NA_LEVEL_CHOICE,
    NA_NONE_CHOICE,
    NA_RECODE_CHOICE,
    Recode,
    apply_edges_table,
    apply_level_table,
    apply_recodes,
    check_edit,
    edges_table,
    edit_summary,
    level_table,
    recodes_from_json,
    recodes_to_json,
    replace_attribute,
)
from dpcore.errors import DomainError


@pytest.fixture()
def df() -> pd.DataFrame:
    return pd.DataFrame({
        "region": ["N", "S", "E", "W", "N", "S", None, "E"],
        "year": [1994, 1996, 1994, 1998, 1996, 1994, 1998, 1996],
        "age": [23.0, 45.5, 67.0, 31.0, 52.0, 18.0, 40.0, 29.0],
    })


@pytest.fixture()
def dom(df) -> dpcore.Domain:
    return dpcore.infer_domain(df, numeric={"age": [0, 30, 60, 100]}).declared()


def _table(dom, df, name, **renames):
    t = level_table(dom[name], df[name])
    t["new name"] = [renames.get(k, k) for k in t["level"]]
    return t


def test_rename_and_merge_are_a_recorded_recode(df, dom):
    before = df.copy()
    t = _table(dom, df, "region", E="East-West", W="East-West", N="North")
    attr, rc = apply_level_table(dom["region"], t, NA_LEVEL_CHOICE)
    assert attr.levels == ("East-West", "North", "S") and attr.na
    assert dict(rc.mapping) == {"E": "East-West", "W": "East-West", "N": "North"}
    new = replace_attribute(dom, attr)
    assert new.source == INFERRED  # an edited domain must be confirmed again
    recoded = apply_recodes(df, {"region": rc})
    pd.testing.assert_frame_equal(df, before)  # the input is never changed in place
    assert recoded["region"].tolist() == ["North", "S", "East-West", "East-West", "North", "S", None, "East-West"]
    assert recoded.attrs["recoded"] == ["region"]
    check_edit(new, df, {"region": rc})
    with pytest.raises(DomainError, match="'region'.*'E'"):  # without the recode the data do not fit
        check_edit(new, df)
    rel = dpcore.synthesize(apply_recodes(df, {"region": rc}), "flat_laplace", 1.0, seed=1, domain=new.declared())
    assert set(rel.sets[0]["region"].dropna()) <= {"East-West", "North", "S"}
    summary = edit_summary({"region": rc})
    assert len(summary) == 3 and set(summary["becomes level"]) == {"East-West", "North"}


def test_added_level_changes_the_domain_only(df, dom):
    t = pd.concat([_table(dom, df, "year"), pd.DataFrame({"level": [None], "new name": ["2000"], "in data": [False]})],
                  ignore_index=True)
    attr, rc = apply_level_table(dom["year"], t, NA_NONE_CHOICE)
    assert attr.levels == (1994, 1996, 1998, 2000) and attr.dtype == "int64" and rc.empty
    new = replace_attribute(dom, attr)
    check_edit(new, df)
    assert apply_recodes(df, {"year": rc}) is df


def test_adding_text_to_a_number_attribute_is_refused(df, dom):
    t = pd.concat([_table(dom, df, "year"), pd.DataFrame({"level": [None], "new name": ["later"]})],
                  ignore_index=True)
    with pytest.raises(DomainError, match="'year' holds int64.*later"):
        apply_level_table(dom["year"], t, NA_NONE_CHOICE)


def test_renaming_a_number_level_makes_the_column_text(df, dom):
    attr, rc = apply_level_table(dom["year"], _table(dom, df, "year", **{"1994": "early"}), NA_NONE_CHOICE)
    assert attr.dtype == "object" and attr.levels == ("early", "1996", "1998")
    got = apply_recodes(df, {"year": rc})["year"].tolist()
    assert got == ["early", "1996", "early", "1998", "1996", "early", "1998", "1996"]
    check_edit(replace_attribute(dom, attr), df, {"year": rc})


def test_na_handling(df, dom):
    t = _table(dom, df, "region")
    attr, rc = apply_level_table(dom["region"], t, NA_NONE_CHOICE)
    assert not attr.na
    with pytest.raises(DomainError, match="'region' has 1 missing value"):
        check_edit(replace_attribute(dom, attr), df, {"region": rc})
    attr, rc = apply_level_table(dom["region"], t, NA_RECODE_CHOICE, missing_to="S")
    assert not attr.na and rc.missing_to == "S"
    assert apply_recodes(df, {"region": rc})["region"].tolist()[6] == "S"
    check_edit(replace_attribute(dom, attr), df, {"region": rc})
    with pytest.raises(DomainError, match="not one of its levels"):
        apply_level_table(dom["region"], t, NA_RECODE_CHOICE, missing_to="Mars")


@pytest.mark.parametrize("change, match", [
    (lambda t: t.drop(index=0), "deleted from the table"),
    (lambda t: t.assign(**{"new name": [None] + list(t["new name"][1:])}), "has no new name"),
    (lambda t: pd.concat([t, t.iloc[[0]]], ignore_index=True), "appears twice"),
    (lambda t: t.assign(level=["Q"] + list(t["level"][1:])), "'Q' is not one of its levels"),
    (lambda t: t.assign(**{"new name": ["NA"] + list(t["new name"][1:])}), "level of missing values"),
])
def test_bad_level_tables_are_one_line(df, dom, change, match):
    with pytest.raises(DomainError, match=match) as err:
        apply_level_table(dom["region"], change(_table(dom, df, "region")), NA_LEVEL_CHOICE)
    assert "\n" not in str(err.value) and "'region'" in str(err.value)


def test_edges_editor(df, dom):
    t = edges_table(dom["age"])
    assert t["edge"].tolist() == [0, 30, 60, 100]
    t.loc[len(t)] = [45.0]
    attr = apply_edges_table(dom["age"], t, na=False)
    assert attr.edges == (0, 30, 45, 60, 100)
    check_edit(replace_attribute(dom, attr), df)
    narrow = apply_edges_table(dom["age"], pd.DataFrame({"edge": [20, 40, 60]}), na=False)
    # [numeric-columns]: ages outside [20, 60] are clamped into the end bins, not refused; counted for the curator
    check_edit(replace_attribute(dom, narrow), df)
    assert replace_attribute(dom, narrow).clamped_counts(df)["age"] == int((~df["age"].between(20, 60)).sum()) > 0
    with pytest.raises(DomainError, match="'age', row 2: edge 'x'"):
        apply_edges_table(dom["age"], pd.DataFrame({"edge": [0, "x", 9]}), na=False)
    with pytest.raises(DomainError, match="listed twice"):
        apply_edges_table(dom["age"], pd.DataFrame({"edge": [0, 5, 5, 9]}), na=False)


def test_recodes_compose_over_two_edits(df, dom):
    first = Recode("region", {"E": "EW", "W": "EW"})
    second = Recode("region", {"EW": "East or West", "S": "South"}, missing_to="South")
    both = first.then(second)
    # "EW" stays mapped too: a value "EW" already in the data follows the second edit
    assert dict(both.mapping) == {"E": "East or West", "W": "East or West", "EW": "East or West", "S": "South"}
    step = apply_recodes(apply_recodes(df, {"region": first}), {"region": second})
    assert apply_recodes(df, {"region": both})["region"].tolist() == step["region"].tolist()


def test_recodes_json_round_trip():
    rc = {"region": Recode("region", {"E": "EW"}, "S"), "x": Recode("x")}
    back = recodes_from_json(recodes_to_json(rc))
    assert list(back) == ["region"] and back["region"] == rc["region"]
    with pytest.raises(DomainError, match="recode file"):
        recodes_from_json('{"recodes": [{"attribute": "a", "mapping": {"x": 1}}]}')


def test_confirmed_edit_releases_dp(df, dom):
    attr, rc = apply_level_table(dom["region"], _table(dom, df, "region", W="E"), NA_LEVEL_CHOICE)
    new = replace_attribute(dom, attr)
    rel = dpcore.synthesize(apply_recodes(df, {"region": rc}), "flat_laplace", 1.0, seed=2, domain=new)
    assert not rel.dp  # not yet confirmed
    rel = dpcore.synthesize(apply_recodes(df, {"region": rc}), "flat_laplace", 1.0, seed=2, domain=new.declared())
    assert rel.dp and rel.domain.source == DECLARED


# --------------------------------------------------------------------------- the Data page editor (AppTest)


def _app():
    pytest.importorskip("streamlit.testing.v1")
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=90)
    at.run()
    at.switch_page("pages/1_data.py")
    at.run()
    assert not at.exception
    return at


def _editor_key(at, prefix):
    keys = [k for k in at.session_state._state.filtered_state if k.startswith(prefix)]
    assert len(keys) == 1, keys
    return keys[0]


def _release(at):
    at.session_state["cfg"]["comparators"] = []
    at.session_state["cfg"]["release_method"] = "flat_laplace"
    at.switch_page("pages/4_release.py")
    at.run()
    next(b for b in at.button if b.label.startswith("Release (spends")).click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at.session_state["release"]["main"]


def test_app_editor_renames_merges_and_adds_levels_then_releases():
    at = _app()
    at.selectbox(key="w_edit_attr").select("sex").run()
    key = _editor_key(at, "w_levels_sex")
    # the table editor's own state: rename FEMALE, add a public level absent from the data
    at.session_state[key] = {"edited_rows": {0: {"new name": "woman"}}, "added_rows": [{"new name": "other"}],
                             "deleted_rows": []}
    at.run()
    next(b for b in at.button if b.label == "Apply the level edits").click()
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    rc = at.session_state["recodes"]["sex"]
    assert dict(rc.mapping) == {"FEMALE": "woman"}
    assert at.session_state["domain_confirmed"] is False  # an edit must be confirmed again
    dom = dpcore.Domain.from_json(at.session_state["domain_override"])
    assert dom["sex"].levels == ("woman", "MALE", "other")
    assert "Recodes applied to the data" in "\n".join(str(m.value) for m in at.markdown)
    next(b for b in at.button if b.label.startswith("Confirm")).click()
    at.run()
    rel = _release(at)
    assert rel.dp
    assert set(pd.concat(rel.sets)["sex"]) <= {"woman", "MALE", "other"}
    assert "woman" in set(pd.concat(rel.sets)["sex"])
    assert "FEMALE" in set(at.session_state["raw_df"]["sex"])  # the raw table itself is untouched


def test_app_editor_bad_edit_is_an_error_not_a_traceback():
    at = _app()
    at.selectbox(key="w_edit_attr").select("sex").run()
    key = _editor_key(at, "w_levels_sex")
    at.session_state[key] = {"edited_rows": {0: {"new name": None}}, "added_rows": [], "deleted_rows": []}
    at.run()
    next(b for b in at.button if b.label == "Apply the level edits").click()
    at.run()
    assert not at.exception
    assert any("has no new name" in str(e.value) for e in at.error)
    assert not at.session_state["recodes"]


def test_app_dp_quantile_edges_are_charged_to_the_release():
    rng = np.random.default_rng(4)
    df = pd.DataFrame({"age": rng.integers(18, 91, 900), "sex": rng.choice(["F", "M"], 900),
                       "city": rng.choice(["A", "B", "C"], 900)})
    at = _app()
    s = at.session_state
    s["raw_df"], s["data_name"], s["data_key"] = df, "t", "test-dp-bins"
    s["drop_cols"], s["numeric"], s["domain_override"], s["domain_confirmed"] = [], {"age": [0, 50, 120]}, None, False
    s["recodes"], s["dp_bins"] = {}, {}
    at.run()
    at.selectbox(key="w_edit_attr").select("age").run()
    next(r for r in at.radio if r.label == "Bin edges").set_value("DP quantile edges").run()
    next(n for n in at.number_input if n.label == "public lower bound").set_value(0.0).run()
    next(n for n in at.number_input if n.label == "public upper bound").set_value(120.0).run()
    next(n for n in at.number_input if n.label == "bins").set_value(5).run()
    next(b for b in at.button if b.label == "Use DP quantile edges").click()
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    # the app names the method, so a later change of the library's default does not change this column's edges
    assert at.session_state["dp_bins"] == {"age": {"bins": 5, "lower": 0.0, "upper": 120.0, "method": "quantiles"}}
    next(b for b in at.button if b.label.startswith("Confirm")).click()
    at.run()
    rel = _release(at)
    assert rel.dp and rel.ledger.epsilon == pytest.approx(float(at.session_state["cfg"]["epsilon"]), abs=1e-12)
    edges = rel.manifest()["diagnostics"]["dp_bin_edges"]["age"]["edges"]
    assert edges[0] == 0 and edges[-1] == 120 and edges == list(rel.domain["age"].edges)
    assert any("/DP bin edges/" in p for p, _ in rel.ledger.charges())


def test_app_dp_quantile_bounds_have_no_default_from_the_data():
    """The DP-edge bounds start empty: an inferred domain's outer edges are the data's min and
    max, which would otherwise be published as 'public' bounds. Clicking without bounds is a
    one-line error naming the column; nothing is set."""
    rng = np.random.default_rng(5)
    df = pd.DataFrame({"age": rng.integers(18, 91, 300), "sex": rng.choice(["F", "M"], 300)})
    at = _app()
    s = at.session_state
    s["raw_df"], s["data_name"], s["data_key"] = df, "t", "test-dp-bounds"
    s["drop_cols"], s["numeric"], s["domain_override"], s["domain_confirmed"] = [], {"age": 4}, None, False
    s["recodes"], s["dp_bins"] = {}, {}
    at.run()
    at.selectbox(key="w_edit_attr").select("age").run()
    next(r for r in at.radio if r.label == "Bin edges").set_value("DP quantile edges").run()
    assert [n.value for n in at.number_input if n.label.startswith("public")] == [None, None]
    next(b for b in at.button if b.label == "Use DP quantile edges").click()
    at.run()
    assert not at.exception and at.session_state["dp_bins"] == {}
    assert any("'age': type the public lower and upper bounds" in e.value for e in at.error), \
        [e.value for e in at.error]
