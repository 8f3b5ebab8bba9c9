"""The survey page (pages/6_survey.py) and the amplification calculator on the Design page, with AppTest."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

pytest.importorskip("streamlit.testing.v1")
from streamlit.testing.v1 import AppTest  # noqa: E402

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
    from pages import _common as ui  # noqa: F401

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


def test_poststrat_upload_with_a_negative_weight_shows_the_library_message():
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    n = 200
    df = pd.DataFrame({"g": rng.choice(["a", "b"], n), "y": rng.integers(0, 2, n), "w": rng.choice([5.0, 10.0], n)})
    totals = pd.DataFrame([("g", "a", 900.0), ("g", "b", 1100.0)], columns=["column", "level", "total"])
    at = goto(SURVEY)
    radio = at.radio(key="ps_source")
    at = radio.set_value(radio.options[-1]).run()
    assert not at.exception, [e.value for e in at.exception]
    at.file_uploader(key="ps_data_up").set_value(("s.csv", df.to_csv(index=False).encode(), "text/csv"))
    at.file_uploader(key="ps_totals_up2").set_value(("t.csv", totals.to_csv(index=False).encode(), "text/csv"))
    at.run()
    at.selectbox(key="ps_weights").set_value("w")
    at.multiselect(key="ps_cols_up").set_value(["g"])
    at.text_input(key="ps_where").set_value("y == 1")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    at.button(key="ps_go").click().run()
    assert not at.exception and not at.error, texts(at.error)
    assert ps_ledger(at)["epsilon"].sum() == pytest.approx(1.0)
    bad = df.assign(w=df["w"].where(df.index != 3, -1.0))
    at.file_uploader(key="ps_data_up").set_value(("bad.csv", bad.to_csv(index=False).encode(), "text/csv"))
    at.run()
    at.button(key="ps_go").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "weights column 'w' has 1 row(s) with a missing, zero or negative weight" in texts(at.error)


def test_poststrat_without_the_bundled_sample_offers_upload_and_says_why(monkeypatch, tmp_path):
    """An installation missing assets/cps_vrs_weighted.csv degrades to the upload path with a
    plain message (never a path outside the repository, never an exception)."""
    import pages._survey_poststrat as tab

    monkeypatch.setattr(tab, "CPS_WEIGHTED", tmp_path / "cps_vrs_weighted.csv")
    at = goto(SURVEY)
    assert not at.exception, [e.value for e in at.exception]
    assert at.radio(key="ps_source").options == ["Upload a weighted survey file"]
    info = texts(at.info)
    assert "assets/cps_vrs_weighted.csv" in info and "is missing from this installation" in info
    assert "shared" not in info
