"""The Data page refuses to declare bins read from the data, and codebook bounds typed by the
curator fix it ([honest-flow] item 2; nothing is prefilled since [numeric-columns]); a rejected
upload says which table stays in use, and the
Survey page's k-NN tab says which table it reads (row 9: the Data page's, or the demo). AppTest, no browser."""
from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("streamlit.testing.v1")
from streamlit.testing.v1 import AppTest

import dpcore
from tests.app.conftest import Upload
from tests.app.test_app import click_and_collect

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")


def texts(elements) -> str:
    return "\n".join(str(e.value) for e in elements)


def run(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def numeric_table() -> pd.DataFrame:
    rng = np.random.default_rng(8)
    n = 500
    return pd.DataFrame({"age": rng.integers(17, 84, n), "income": np.round(rng.gamma(2.0, 9000.0, n), 1),
                         "sex": rng.choice(["F", "M"], n)})


def start_with(df: pd.DataFrame, name: str = "upload: people.csv") -> AppTest:
    """A session holding ``df`` as an upload does (AppTest cannot drive st.file_uploader)."""
    at = run(AppTest.from_file(APP, default_timeout=90))
    s = at.session_state
    s["raw_df"], s["data_name"] = df, name
    s["data_key"] = "test-" + hashlib.sha256(df.to_csv().encode()).hexdigest()[:16]  # keys the cached domain
    s["drop_cols"], s["numeric"], s["domain_override"], s["domain_confirmed"] = [], {}, None, False
    s["recodes"], s["dp_bins"] = {}, {}
    at.switch_page("pages/1_data.py")
    return run(at)


def key(at: AppTest, kind: str, col: str) -> str:
    """A Numeric-columns widget's key: it names the table (pages.components.state.numeric_key)."""
    return f"w_{kind}_{col}@{at.session_state['data_key']}"


def use_bounds(at: AppTest, col: str, lower: str, upper: str, bins: int | None = None) -> AppTest:
    at.text_input(key=key(at, "lo", col)).input(lower)
    at.text_input(key=key(at, "hi", col)).input(upper)
    if bins is not None:
        at.number_input(key=key(at, "bins", col)).set_value(bins)
    run(at)
    at.button(key=key(at, "usebounds", col)).click()
    return run(at)


def confirm(at: AppTest) -> AppTest:
    next(b for b in at.button if b.label.startswith("Confirm")).click()
    return run(at)


def release(at: AppTest):
    at.session_state["cfg"]["comparators"] = []
    at.session_state["cfg"]["release_method"] = "flat_laplace"
    at.switch_page("pages/4_release.py")
    run(at)
    click_and_collect(at, "Release (spends")  # waits for the release job, however busy the machine
    return at.session_state["release"]["main"]


def test_confirm_is_refused_until_each_numeric_column_has_public_bounds():
    df = numeric_table()
    at = start_with(df)
    at = confirm(at)
    assert at.session_state["domain_confirmed"] is False
    refusal = [e for e in texts(at.error).splitlines() if e.startswith("Not confirmed")]
    assert len(refusal) == 1
    assert "age, income" in refusal[0] and "Use these bounds" in refusal[0] and "drop them" in refusal[0]
    domain_table = next(d.value for d in at.dataframe if "bin edges from" in d.value.columns)
    assert list(domain_table["bin edges from"][:2]) == ["data's min–max: NOT public"] * 2
    # nothing computed from the data is offered: the bounds start empty
    for col in ("age", "income"):
        assert at.text_input(key=key(at, "lo", col)).value == "" and at.text_input(key=key(at, "hi", col)).value == ""
    at = use_bounds(at, "age", "0", "120", 12)
    assert at.session_state["numeric"] == {"age": {"bounds": [0.0, 120.0], "bins": 12}}
    at = confirm(at)  # income still spans its own range
    assert at.session_state["domain_confirmed"] is False
    assert "the bins of income span" in texts(at.error)
    at.text_input(key=key(at, "lo", "income")).input("0")
    at.text_input(key=key(at, "hi", "income")).input("500000")
    run(at)
    assert "income" not in at.session_state["numeric"]  # nothing applies without the click
    at.button(key=key(at, "usebounds", "income")).click()
    run(at)
    at = confirm(at)
    assert at.session_state["domain_confirmed"] is True and "Domain declared public" in texts(at.success)
    assert not any(e.startswith("Not confirmed") for e in texts(at.error).splitlines())
    rel = release(at)
    assert rel.dp, rel.dp_reason
    assert [rel.domain[c].origin for c in ("age", "income")] == ["public_bounds", "public_bounds"]
    assert rel.domain["income"].edges[-1] == 500_000.0 and rel.domain["age"].edges[-1] == 120.0
    summary = rel.manifest()["summary"]
    assert summary["table"] == "upload: people.csv" and summary["dp"] == "yes" and summary["table_sha256"] is None


def test_a_saved_confirmation_of_a_data_range_domain_is_withdrawn():
    """A session (or workspace) confirmed before this rule: the domain is not declared on restore."""
    at = start_with(numeric_table())
    at.session_state["domain_confirmed"] = True
    run(at)
    assert at.session_state["domain_confirmed"] is False
    assert any(b.label.startswith("Confirm") for b in at.button)
    assert "Domain declared public" not in texts(at.success)


def _dp_edges_mode(at, mode: str, lower: float, upper: float) -> None:
    """The table editor's "Bin edges" set to a DP mode, with its public bounds typed in (not yet run)."""
    next(r for r in at.radio if r.label == "Bin edges").set_value(mode)
    run(at)
    next(x for x in at.number_input if x.label == "public lower bound").set_value(lower)
    next(x for x in at.number_input if x.label == "public upper bound").set_value(upper)


def test_dp_quantile_edges_from_the_table_editor_release_as_dp():
    at = start_with(numeric_table()[["age", "sex"]])
    at.selectbox(key="w_edit_attr").select("age")
    run(at)
    assert "not offered for editing" in texts(at.caption)
    assert next(d for d in at.dataframe if list(d.value.columns) == ["edge"]).value.empty
    _dp_edges_mode(at, "DP quantile edges", 0.0, 100.0)
    next(x for x in at.number_input if x.label == "bins").set_value(4)
    run(at)
    next(b for b in at.button if b.label == "Use DP quantile edges").click()
    run(at)
    at = confirm(at)
    assert at.session_state["domain_confirmed"] is True
    rel = release(at)
    assert rel.dp and rel.domain["age"].origin == "dp_quantiles"
    assert "dp_bin_edges" in rel.manifest()["diagnostics"]


def _privtree_edges_typed(bins: int = 6):
    """The table editor on age with "DP PrivTree edges", bounds [0, 100] and at most ``bins`` bins typed (not
    yet applied)."""
    at = start_with(numeric_table()[["age", "sex"]])
    at.selectbox(key="w_edit_attr").select("age")
    run(at)
    _dp_edges_mode(at, "DP PrivTree edges", 0.0, 100.0)
    next(x for x in at.number_input if x.label == "at most this many bins").set_value(bins)
    return run(at)


def test_dp_privtree_edges_from_the_table_editor_say_what_they_spend_and_release_as_dp():
    at = _privtree_edges_typed(6)
    caption = texts(at.caption)
    assert "PrivTree" in caption and "at most 6 bins" in caption and "10% of the release's ε" in caption
    next(b for b in at.button if b.label == "Use DP PrivTree edges").click()
    run(at)
    assert at.session_state["dp_bins"]["age"] == {"bins": 6, "lower": 0.0, "upper": 100.0, "method": "privtree"}
    assert "DP PrivTree edges at release" in texts(at.markdown)
    # the column's status line says what PrivTree gives: at most the bins asked for, not exactly that many
    status = "**age**: :green[public bounds [0, 100], at most 6 bins (DP PrivTree edges at release)]"
    assert status in texts(at.markdown)
    at = confirm(at)
    rel = release(at)
    assert rel.dp and rel.domain["age"].origin == "dp_privtree"
    rec = rel.manifest()["diagnostics"]["dp_bin_edges"]["age"]
    assert rec["method"] == "privtree" and rec["bins"] <= 6


def test_public_bounds_for_one_column_keep_the_editors_work_on_another():
    """DP quantile edges for age (table editor), then codebook bounds for income: age keeps its
    DP edges; the release is DP with both."""
    at = start_with(numeric_table())
    at.selectbox(key="w_edit_attr").select("age")
    run(at)
    _dp_edges_mode(at, "DP quantile edges", 0.0, 100.0)
    run(at)
    next(b for b in at.button if b.label == "Use DP quantile edges").click()
    run(at)
    assert set(at.session_state["dp_bins"]) == {"age"}
    at = use_bounds(at, "income", "0", "100000")
    edited = dpcore.Domain.from_json(at.session_state["domain_override"])
    assert (edited["age"].origin, edited["income"].origin) == ("public_bounds", "public_bounds")
    assert set(at.session_state["dp_bins"]) == {"age"}
    statuses = texts(at.markdown)  # each column's status line reads the domain as it stands
    assert "**age**: :green[public bounds [0, 100], 10 bins (DP quantile edges at release)]" in statuses
    assert "**income**: :green[public bounds [0, 100000], 10 bins]" in statuses
    at = confirm(at)
    assert at.session_state["domain_confirmed"] is True
    rel = release(at)
    assert rel.dp and (rel.domain["age"].origin, rel.domain["income"].origin) == ("dp_quantiles", "public_bounds")


def test_a_rejected_upload_keeps_the_previous_table_under_its_own_name(uploads):
    queued = uploads
    at = run(AppTest.from_file(APP, default_timeout=90))
    at.switch_page("pages/1_data.py")
    queued["w_upload"] = Upload("people.csv", numeric_table().to_csv(index=False).encode())
    run(at)
    assert at.session_state["data_name"] == "upload: people.csv"
    queued["w_upload"] = Upload("bad.csv", b"a,b\n1,2\n3,4,5\n")
    run(at)
    assert at.session_state["data_name"] == "upload: people.csv" and len(at.session_state["raw_df"]) == 500
    [err] = [e for e in texts(at.error).splitlines() if "bad.csv" in e]
    assert "ragged rows" in err
    assert err.endswith("Not loaded: the table in use is still “upload: people.csv” (500 rows × 3 columns).")


def test_survey_knn_tab_says_which_table_it_reads_and_rounds_its_epsilon():
    at = start_with(numeric_table())
    at.switch_page("pages/6_survey.py")
    run(at)
    radio = at.radio(key="sv_source")  # the uploaded table is the default; the demo is one click away
    assert radio.value == "data" and "The table on the Data page (upload: people.csv)" in str(radio.options)
    assert "**upload: people.csv** (500 rows × 3 columns, as on the Data page)" in texts(at.caption)
    radio.set_value("demo")
    run(at)
    assert "SD2011 survey demo" in texts(at.caption)
    assert at.button(key="sv_go").label == "Compute release (spends ε ≈ 4.16)"
    at.number_input(key="sv_eps").set_value(3.0)
    run(at)
    assert at.button(key="sv_go").label == "Compute release (spends ε = 3)"


def test_no_backticks_in_the_labels_of_the_data_page():
    at = start_with(numeric_table())
    labels = [w.label for kind in ("selectbox", "multiselect", "radio", "number_input", "text_input")
              for w in getattr(at, kind)]
    assert labels and not any("`" in str(x) for x in labels), labels
    assert all(str(x).strip() for x in labels)  # every widget has a name


def test_the_numeric_columns_panel_shows_the_table_editors_dp_edges_not_empty_bounds():
    """After "Use DP PrivTree edges" in the table editor, the Numeric columns panel above shows the editor's
    public bounds in its boxes and says where they were set (it showed empty boxes and a primary "Use these
    bounds", as if nothing were declared; seen in Chromium)."""
    at = _privtree_edges_typed(6)
    next(b for b in at.button if b.label == "Use DP PrivTree edges").click()
    run(at)
    assert "Set in the table editor (below): public bounds [0, 100] with DP PrivTree edges found at release" \
        in texts(at.caption)
    boxes = {x.label: x.value for x in at.text_input if x.label in ("lower bound", "upper bound")}
    assert boxes == {"lower bound": "0", "upper bound": "100"}
    assert next(x for x in at.number_input if x.label == "bins").value == 6  # the editor's cap, not the default
    use = next(b for b in at.button if b.label == "Use these bounds")
    assert use.proto.type != "primary"
