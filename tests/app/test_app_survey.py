"""The survey page (pages/6_survey.py) and the amplification calculator on the Design page, with AppTest."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

pytest.importorskip("streamlit.testing.v1")
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
SURVEY = "pages/6_survey.py"


def texts(elements) -> str:
    return "\n".join(str(e.value) for e in elements)


def goto(page: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.exception
    at.switch_page(page)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_survey_page_loads_on_the_demo():
    at = goto(SURVEY)
    assert not at.error, texts(at.error)
    assert "Survey estimates" in texts(at.title)
    assert at.number_input(key="sv_eps").value == pytest.approx(6 * math.log(2), rel=1e-12)
    assert any(b.label.startswith("Compute release") for b in at.button)
    assert "DP post-stratification" in texts(at.subheader)


def test_imputation_release_shows_a_number_and_a_ledger():
    at = goto(SURVEY)
    at.radio(key="sv_query").set_value("mean").run()
    at.button(key="sv_go").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, texts(at.error)
    rel = at.session_state["survey_release"]["rel"]
    assert math.isfinite(rel.value)
    metric = at.metric[0]
    assert metric.label.startswith("DP mean of income")
    assert float(metric.value.replace(",", "")) == pytest.approx(rel.value, rel=1e-3)
    ledger = at.dataframe[0].value
    assert "mean" in set(ledger["component"])
    assert ledger["epsilon"].sum() == pytest.approx(6 * math.log(2), rel=1e-9)
    assert "Differentially private release" in texts(at.success)


def test_too_small_epsilon_shows_an_error_not_an_exception():
    at = goto(SURVEY)
    at.number_input(key="sv_eps").set_value(1.0).run()
    assert not at.exception
    assert "too small for the smooth-sensitivity release" in texts(at.error)
    assert "2 ln 2" in texts(at.error)
    assert at.button(key="sv_go").disabled
    # the library refuses too, and the guard turns that into st.error
    import numpy as np
    import pandas as pd

    import dpcore
    from dpcore.survey import knn_impute, release_count

    df = pd.DataFrame({"g": ["a", "b"] * 10, "y": [1.0, None] * 10})
    imp = knn_impute(df, "y", ["g"], levels={"g": ["a", "b"]})
    with pytest.raises(dpcore.OptionError, match="below 2 ln 2"):
        release_count(imp, 1.0, np.random.default_rng(0))


def test_infinite_variance_warning_between_2ln2_and_4ln2():
    at = goto(SURVEY)
    at.number_input(key="sv_eps").set_value(2.0).run()
    assert not at.exception
    assert "infinite variance" in texts(at.warning)


def test_global_baseline_is_labelled_not_dp():
    at = goto(SURVEY)
    at.radio(key="sv_method").set_value("global").run()
    at.button(key="sv_go").click().run()
    assert not at.exception
    assert "NOT DP" in texts(at.markdown)
    assert "NOT DP" in texts(at.error)


def test_amplification_expander_on_design_page():
    at = goto("pages/2_design.py")
    at.number_input(key="w_eps_typed").set_value(1.0).run()
    at.number_input(key="w_amp_beta").set_value(0.1).run()
    assert not at.exception
    labels = {m.label: m.value for m in at.metric}
    assert labels["ε' (amplified)"] == "0.2639"
    assert labels["Max useful β"] == f"{(math.e - 1) / (2 * math.e - 1):.4g}"
    assert "do **not** pool" in texts(at.caption)


def test_noise_in_context_simulation_draws_the_figure():
    at = goto(SURVEY)
    at.radio(key="sv_query").set_value("mean").run()
    at.number_input(key="sv_reps").set_value(5).run()
    at.button(key="sv_ctx_go").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, texts(at.error)
    frame = at.session_state["survey_context"]["frame"]
    assert set(frame["rep"]) == set(range(5)) and frame["epsilon"].nunique() >= 5
    assert len(at.get("plotly_chart")) == 1


# --------------------------------------------------------------------------- post-stratification tab

#: the bundled weighted CPS sample the demo post-stratifies (assets/README.md)
CPS_WEIGHTED = ROOT / "assets" / "cps_vrs_weighted.csv"


def ps_ledger(at: AppTest):
    """The post-stratification ledger table (the last dataframe with a component column)."""
    frames = [d.value for d in at.dataframe if "component" in d.value.columns]
    assert frames, "no ledger table on the page"
    return frames[-1]


def test_poststrat_release_on_the_cps_demo():
    at = goto(SURVEY)
    assert "Dropped **1,100** with a zero or negative WEIGHT" in texts(at.caption)
    assert at.multiselect(key="ps_cols").value == ["agegr", "sex"]
    at.number_input(key="ps_e1").set_value(0.3).run()
    at.number_input(key="ps_e2").set_value(0.2).run()
    at.number_input(key="ps_e3").set_value(1.5).run()
    go_btn = at.button(key="ps_go")
    assert go_btn.label == "Compute release (spends ε = 2)" and not go_btn.disabled
    go_btn.click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, texts(at.error)
    rel = at.session_state["poststrat_release"]["rel"]
    assert math.isfinite(rel.value) and rel.value > 0
    assert rel.selected["sex"] == "separate" and rel.selected["agegr"] in (
        "8 groups (base levels)", "10-year groups", "4 life stages")
    assert rel.ipf["converged"]
    labels = {m.label: m.value for m in at.metric}
    key = next(k for k in labels if k.startswith("DP weighted count: voted"))
    assert float(labels[key].replace(",", "")) == pytest.approx(rel.value, abs=1)
    ledger = ps_ledger(at)
    assert ledger["epsilon"].sum() == pytest.approx(2.0, rel=1e-9)
    assert {"bins of agegr", "join table", "weighted count"} <= set(ledger["component"])
    assert rel.ledger.to_dict()["epsilon_total"] == pytest.approx(2.0, rel=1e-9)
    assert "Total ε = ε₁ + ε₂ + ε₃ = 0.3 + 0.2 + 1.5 = 2" in texts(at.caption)
    assert "converged" in texts(at.caption)
    assert "NOT FOR RELEASE" in texts(at.markdown)
    assert any(e.label == "Curator view — NOT FOR RELEASE" for e in at.expander)


def test_poststrat_single_column_spends_only_the_count():
    at = goto(SURVEY)
    at.multiselect(key="ps_cols").set_value(["sex"]).run()
    assert at.number_input(key="ps_e1").disabled and at.number_input(key="ps_e2").disabled
    at.button(key="ps_go").click().run()
    assert not at.exception and not at.error, texts(at.error)
    assert ps_ledger(at)["epsilon"].sum() == pytest.approx(1.0)
    assert "IPF: not used" in texts(at.caption)


def test_poststrat_gamma_below_2_is_an_error_not_an_exception():
    at = goto(SURVEY)
    at.number_input(key="ps_gamma").set_value(1.5).run()
    assert not at.exception
    assert "γ: gamma must be a number from 2 to 100" in texts(at.error)
    assert at.button(key="ps_go").disabled
    at.number_input(key="ps_gamma").set_value(4.0).run()
    at.number_input(key="ps_e3").set_value(0.0).run()
    assert not at.exception
    assert "ε₃: epsilon must be a finite number greater than 0" in texts(at.error)


def test_poststrat_weights_outside_declared_range_are_refused_before_the_click():
    at = goto(SURVEY)
    at.number_input(key="ps_ghi_demo").set_value(5000.0).run()
    assert not at.exception, [e.value for e in at.exception]
    assert "base weight(s) in 'WEIGHT' lie outside the declared range [100, 5000]: widen the range" in texts(at.error)
    assert at.button(key="ps_go").disabled
    assert "poststrat_release" not in at.session_state


def test_poststrat_totals_missing_a_bin_is_an_error_not_an_exception():
    import pandas as pd

    t = pd.read_csv(ROOT / "assets" / "cps_poststrat_totals.csv", dtype={"level": str})
    assert set(t["column"]) == {"agegr", "sex", "race", "hispanic", "year"}
    short = t[~((t["column"] == "agegr") & (t["level"] == "75+"))]
    at = goto(SURVEY)
    at.file_uploader(key="ps_totals_up").set_value(("short.csv", short.to_csv(index=False).encode(), "text/csv"))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert "The totals do not cover bin level(s) ['75+'] of column 'agegr'" in texts(at.error)
    assert at.button(key="ps_go").disabled  # refused before the click
    assert "poststrat_release" not in at.session_state


def test_poststrat_totals_asset_reproduces_the_weighted_demo_sample():
    import pandas as pd

    cps = pd.read_csv(CPS_WEIGHTED, low_memory=False)
    kept = cps[(cps["WEIGHT"] > 0) & (cps["AGE"] >= 18) & cps["cps_turnout"].notna()]
    t = pd.read_csv(ROOT / "assets" / "cps_poststrat_totals.csv", dtype={"level": str})
    for col, g in t.groupby("column"):
        assert g["total"].sum() == pytest.approx(kept["WEIGHT"].sum(), rel=1e-9), col
    sexes = t[t["column"] == "sex"].set_index("level")["total"]
    assert sexes.to_dict() == pytest.approx(kept.groupby("SEX")["WEIGHT"].sum().round(4).to_dict())


def test_poststrat_without_the_bundled_sample_reads_the_data_pages_table_and_says_why(monkeypatch, tmp_path):
    """An installation missing assets/cps_vrs_weighted.csv offers only the table on the Data page,
    with a plain message (never a path outside the repository, never an exception)."""
    import pages.components.survey_poststrat as tab

    monkeypatch.setattr(tab, "CPS_WEIGHTED", tmp_path / "cps_vrs_weighted.csv")
    at = goto(SURVEY)
    assert not at.exception, [e.value for e in at.exception]
    assert at.radio(key="ps_source").options == ["The table on the Data page (SD2011 S7 (Social Diagnosis 2011, "
                                                 "5000 × 7))"]
    info = texts(at.info)
    assert "assets/cps_vrs_weighted.csv" in info and "is missing from this installation" in info
    assert "shared" not in info
    assert "Choose the column of base weights" in texts(at.error)  # S7 has no weights: said, not crashed


# --------------------------------------------------------------------------- the curator's own table

#: A small survey of the curator's own: a categorical region and sex, an income with missing
#: answers, base weights from the design and a yes/no answer (seeded, so the test is exact).
N_OWN = 400


def own_survey():
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(7)
    region = rng.choice(["north", "south", "east"], N_OWN)
    sex = rng.choice(["F", "M"], N_OWN)
    income = np.round(rng.gamma(4.0, 500.0, N_OWN) + np.where(region == "south", 400.0, 0.0), 0)
    income[rng.random(N_OWN) < 0.15] = np.nan
    weight = rng.choice([20.0, 40.0, 60.0], N_OWN)
    voted = rng.choice(["YES", "NO"], N_OWN, p=[0.6, 0.4])
    return pd.DataFrame({"region": region, "sex": sex, "income": income, "w": weight, "voted": voted})


OWN_TOTALS = [("region", "north", 5000.0), ("region", "south", 6000.0), ("region", "east", 4000.0),
              ("sex", "F", 7600.0), ("sex", "M", 7400.0)]


def totals_csv() -> bytes:
    import pandas as pd

    return pd.DataFrame(OWN_TOTALS, columns=["column", "level", "total"]).to_csv(index=False).encode()


def with_own_table(df=None, confirm: bool = True) -> AppTest:
    """A fresh session that uploads ``df`` on the Data page (public edges for its numeric columns,
    then Confirm), then opens the Survey page."""
    df = own_survey() if df is None else df
    at = goto("pages/1_data.py")
    at.file_uploader(key="w_upload").set_value(("own_survey.csv", df.to_csv(index=False).encode(), "text/csv"))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["data_name"] == "upload: own_survey.csv"
    if confirm:
        for col, edges in (("income", "0,1000,2000,4000,8000,100000"), ("w", "0,25,50,100")):
            table = at.session_state["data_key"]  # the numeric widgets' keys name the table they belong to
            at.radio(key=f"w_numkind_{col}@{table}").set_value("codebook edges").run()
            at.text_input(key=f"w_edges_{col}@{table}").input(edges).run()
        next(b for b in at.button if b.label.startswith("Confirm")).click()
        at.run()
        assert at.session_state["domain_confirmed"], texts(at.error)
    at.switch_page(SURVEY)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def own_book(at: AppTest):
    from dpcore.studio.workspace import Workspace

    ws = Workspace.in_root(at.query_params["ws"])
    return ws, at.session_state["table_fp"]


def test_an_uploaded_table_is_the_default_of_both_tabs():
    at = with_own_table(confirm=False)
    assert at.radio(key="sv_source").value == "data" and at.radio(key="ps_source").value == "data"
    assert "own_survey.csv" in texts(at.caption)
    # nothing is suggested from the data: the columns start unchosen, the bounds empty
    assert at.selectbox(key="sv_target").value is None and at.multiselect(key="sv_match").value == []
    assert at.number_input(key="sv_lo_own").value is None and at.selectbox(key="ps_weights").value is None
    errors = texts(at.error)
    assert "Choose the variable to impute" in errors and "Choose the column of base weights" in errors
    assert at.button(key="sv_go").disabled and at.button(key="ps_go").disabled


def test_unusable_columns_of_an_uploaded_table_get_one_line_each():
    at = with_own_table(confirm=False)
    at.selectbox(key="sv_target").set_value("region").run()
    assert "'region' is not numeric" in texts(at.error)
    at.selectbox(key="sv_target").set_value("w").run()
    assert "'w' has no missing values to impute" in texts(at.error)
    at.selectbox(key="sv_target").set_value("income").run()
    at.multiselect(key="sv_match").set_value(["w"]).run()
    assert "Matching attribute 'w' is numeric" in texts(at.error)
    at.text_input(key="sv_where").input("income > 100").run()
    assert "uses the imputed variable 'income'" in texts(at.error)
    at.selectbox(key="ps_weights").set_value("voted").run()
    assert "Weights column 'voted' is not numeric" in texts(at.error)
    for e in at.error:
        assert "\n" not in str(e.value), e.value
    assert not at.exception


def test_imputation_and_poststrat_releases_on_an_uploaded_table_charge_its_book():
    at = with_own_table()
    ws, fp = own_book(at)
    assert ws.budget(fp)["spent"] == 0.0
    at.selectbox(key="sv_target").set_value("income")
    at.multiselect(key="sv_match").set_value(["region", "sex"])
    at.radio(key="sv_query").set_value("mean")
    at.number_input(key="sv_lo_own").set_value(0.0)
    at.number_input(key="sv_hi_own").set_value(10000.0)
    at.text_input(key="sv_where").input("sex == 'F'")
    at.run()
    assert not at.button(key="sv_go").disabled, texts(at.error)
    at.button(key="sv_go").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "Something went wrong" not in texts(at.error) and "survey_release" in at.session_state, texts(at.error)
    out = at.session_state["survey_release"]
    rel = out["rel"]
    assert math.isfinite(rel.value) and not out["domain_inferred"]  # levels from the confirmed domain: DP
    assert at.metric[0].label == "DP mean of income"
    assert out["subpop"] == int((own_survey()["sex"] == "F").sum())
    [entry] = ws.releases(fp)
    assert entry["method"] == "survey: dp imputation" and entry["dp"] == 1 and entry["status"] == "complete"
    assert entry["epsilon"] == pytest.approx(rel.ledger.epsilon, rel=1e-12)
    assert ws.budget(fp)["spent"] == pytest.approx(6 * math.log(2), rel=1e-9)
    at.number_input(key="sv_reps").set_value(5).run()  # noise in context: the table as the population
    at.button(key="sv_ctx_go").click().run()
    assert not at.exception, [e.value for e in at.exception]
    frame = at.session_state["survey_context"]["frame"]
    assert set(frame["rep"]) == set(range(5)) and len(at.get("plotly_chart")) == 1
    assert ws.budget(fp)["spent"] == pytest.approx(6 * math.log(2), rel=1e-9)  # a simulation spends nothing

    at.selectbox(key="ps_weights").set_value("w")
    at.multiselect(key="ps_cols_up").set_value(["region", "sex"])
    at.file_uploader(key="ps_totals_up2").set_value(("totals.csv", totals_csv(), "text/csv"))
    at.text_input(key="ps_where").input("voted == 'YES'")
    at.run()
    at.number_input(key="ps_e2").set_value(0.5)  # enabled now: two columns are raked (IPF)
    at.number_input(key="ps_e3").set_value(1.5)
    at.run()
    assert at.number_input(key="ps_e1").disabled  # no candidate bins to choose from: ε₁ is not spent
    assert not at.error, texts(at.error)
    go_btn = at.button(key="ps_go")
    assert go_btn.label == "Compute release (spends ε = 2)"
    go_btn.click().run()
    assert not at.exception and not at.error, texts(at.error)
    ps = at.session_state["poststrat_release"]["rel"]
    assert math.isfinite(ps.value) and ps.exact > 0 and ps.ipf is not None  # fresh noise: the value may be < 0
    assert ps.ledger.epsilon == pytest.approx(2.0, rel=1e-12)
    entries = ws.releases(fp)
    assert [e["method"] for e in entries] == ["survey: dp imputation", "survey: post-stratification"]
    assert entries[1]["epsilon"] == pytest.approx(ps.ledger.epsilon, rel=1e-12)
    assert ws.budget(fp)["spent"] == pytest.approx(6 * math.log(2) + 2.0, rel=1e-9)  # grew by exactly ε spent
    assert f"budget book ({at.session_state['data_name']})" in texts(at.caption)


def test_an_unconfirmed_domain_makes_the_imputation_not_dp_and_still_charges_the_table():
    at = with_own_table(confirm=False)
    ws, fp = own_book(at)
    at.selectbox(key="sv_target").set_value("income")
    at.multiselect(key="sv_match").set_value(["region"])
    at.number_input(key="sv_thr_own").set_value(1500.0)
    at.run()
    assert "NOT DP" in texts(at.caption)
    at.button(key="sv_go").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "NOT DP" in texts(at.error) and "inferred from the data" in texts(at.error)
    [entry] = ws.releases(fp)
    assert entry["dp"] == 0 and entry["epsilon"] == pytest.approx(6 * math.log(2), rel=1e-9)


def test_a_negative_weight_in_the_uploaded_table_is_refused_before_anything_is_spent():
    df = own_survey()
    df.loc[3, "w"] = -1.0
    at = with_own_table(df, confirm=False)
    ws, fp = own_book(at)
    at.selectbox(key="ps_weights").set_value("w")
    at.multiselect(key="ps_cols_up").set_value(["region"])
    at.file_uploader(key="ps_totals_up2").set_value(("totals.csv", totals_csv(), "text/csv"))
    at.run()
    assert "Weights column 'w' has 1 zero or negative weight(s): base weights must be > 0" in texts(at.error)
    assert at.button(key="ps_go").disabled and ws.releases(fp) == []


def test_the_demo_choice_still_works_with_an_uploaded_table():
    from dpcore.data.io import read_table
    from dpcore.studio.workspace import table_fingerprint

    at = with_own_table(confirm=False)
    ws, fp = own_book(at)
    at.radio(key="sv_source").set_value("demo").run()
    assert at.selectbox(key="sv_target").value == "income" and "SD2011 survey demo" in texts(at.caption)
    at.radio(key="sv_query").set_value("mean").run()
    at.button(key="sv_go").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["survey_release"]["table"] == "sd2011.csv (survey demo)"
    demo_fp = table_fingerprint(read_table(ROOT / "assets" / "sd2011.csv"))
    assert [e["method"] for e in ws.releases(demo_fp)] == ["survey: dp imputation"]
    assert ws.releases(fp) == []  # the uploaded table's book is untouched
    at.radio(key="ps_source").set_value("demo").run()
    at.button(key="ps_go").click().run()
    assert not at.exception and not at.error, texts(at.error)
    assert at.session_state["poststrat_release"]["table"] == "cps_vrs_weighted.csv (survey demo)"
