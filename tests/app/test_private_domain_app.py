"""[private-domain] in the app (AppTest): the column types read from the values are a proposal (NOT DP), which the
curator edits and confirms, and the confirmed types are what the release is given; the Data and Preview pages say,
from the forecast, which columns will be found, found coarsely or likely not found at this budget, and what would
help; the Release page refuses a release with a column forecast not found unless the curator drops it, declares it
or ticks the box that says what it releases; the release, its manifest and its report say what was found."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("streamlit.testing.v1")
from streamlit.testing.v1 import AppTest

from dpcore.studio.report import release_report_html
from tests.app.conftest import Upload
from tests.app.test_app import click_and_collect, goto, texts
from tests.app.test_workspace_app import start

PROPOSED = "NOT DP — types proposed from the values: review and declare them"


def loans(n: int, seed: int = 0) -> pd.DataFrame:
    """A small loans table: two text columns, a loan term in months (a code the reader types as a count), an
    income with a missing value, and a true/false column."""
    rng = np.random.default_rng(seed)
    income = rng.lognormal(8, 1, n).round(0)
    income[3] = np.nan
    return pd.DataFrame(
        {
            "sex": rng.choice(["f", "m"], n),
            "region": rng.choice(list("abcdef"), n),
            "term": rng.choice([6, 12, 24, 36, 48, 60, 72], n),
            "income": income,
            "smoker": rng.choice([True, False], n),
        }
    )


def upload(uploads, df: pd.DataFrame, name: str = "loans.csv") -> AppTest:
    at = start()
    uploads["w_upload"] = Upload(name, df)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["data_name"] == f"upload: {name}"
    return at


def upload_loans(uploads, n: int) -> AppTest:
    """:func:`loans` uploaded as CSV, smoker's True/False (text to the CSV reader) edited to true/false."""
    at = upload(uploads, loans(n))
    edit(at, "smoker", "boolean", nullable=False)
    return at


def key(at: AppTest, what: str, col: str = "") -> str:
    return f"w_ct_{what}_{col}@{at.session_state['data_key']}"


def find_privately(at: AppTest, method: str = "flat_laplace") -> None:
    """An (ε, δ) design with one set, then the Data page's "Find the domain privately"."""
    at.session_state["cfg"].update(definition="zcdp", delta=1e-9, epsilon=1.0, m=1, release_method=method)
    goto(at, "pages/1_data.py")
    click_and_collect(at, "Find the domain privately")
    assert at.session_state["cfg"]["dp_domain"] is True


def types_table(at: AppTest) -> pd.DataFrame:
    return next(d.value for d in at.dataframe if "read as" in d.value.columns)


def forecast_table(at: AppTest) -> pd.DataFrame:
    return next(t.value for t in at.table if "what would help" in t.value.columns)


def edit(
    at: AppTest, col: str, type_: str, role: str | None = None, nullable: bool | None = None, levels: str | None = None
) -> None:
    at.selectbox(key=key(at, "col")).set_value(col).run()
    at.selectbox(key=key(at, "type", col)).set_value(type_).run()
    if role is not None:
        at.selectbox(key=key(at, "role", col)).set_value(role).run()
    if nullable is not None:
        at.checkbox(key=key(at, "nullable", col)).set_value(nullable).run()
    if levels is not None:
        at.text_input(key=key(at, "levels", col)).set_value(levels).run()
    click_and_collect(at, "Apply to this column")


# --------------------------------------------------------------------------- 1. the types: proposed, edited, declared


def test_types_read_from_the_values_are_a_proposal_the_curator_edits_confirms_and_the_release_uses(uploads):
    at = upload(uploads, loans(1000))
    assert PROPOSED in texts(at.markdown)
    rows = types_table(at).set_index("column")
    assert rows.loc["term", "type"] == "whole number" and rows.loc["term", "role"] == "count"
    assert rows.loc["term", "read as"] == "int64" and not rows.loc["term", "nullable"]
    assert rows.loc["income", "nullable"] and rows.loc["smoker", "type"] == "text"  # the CSV reader's True/False

    # the loan term is a code (each value a category), not a count; smoker is true/false: edited, still a proposal
    edit(at, "term", "whole", role="code")
    edit(at, "smoker", "boolean", nullable=False)
    rows = types_table(at).set_index("column")
    assert rows.loc["term", "role"] == "code" and rows.loc["smoker", "type"] == "true/false"
    assert PROPOSED in texts(at.markdown) and at.session_state["schema"]["source"] == "proposed"

    # the release before the types are confirmed: the proposal, so NOT DP (said before, and after in red)
    find_privately(at)
    goto(at, "pages/4_release.py")
    assert "this release will be labelled NOT DP" in texts(at.warning)

    # confirmed: public, the table cast to the declared types; the release is DP, given these types
    goto(at, "pages/1_data.py")
    click_and_collect(at, "Declare these column types")
    assert "Column types declared by you: public." in texts(at.success)
    assert PROPOSED not in texts(at.markdown)
    assert at.session_state["schema"]["source"] == "declared"
    goto(at, "pages/4_release.py")
    assert "labelled NOT DP" not in texts(at.warning)
    click_and_collect(at, "Release (spends")
    rel = at.session_state["release"]["main"]
    manifest = rel.manifest()
    assert manifest["dp"], manifest["dp_reason"]
    found = manifest["diagnostics"]["dp_domain"]["columns"]
    assert "levels" in found["term"] and "bounds" not in found["term"]  # the code's levels, found privately
    assert set(found["term"]["levels"]) <= {"6", "12", "24", "36", "48", "60", "72"} | {6, 12, 24, 36, 48, 60, 72}
    assert "bounds" in found["income"] and found["income"]["na"] is True  # declared nullable: missing survives
    assert found["smoker"]["levels"] == [False, True] and found["smoker"]["spent"] == 0  # public from its type

    # withdrawn: a proposal again (edits kept), and the domain must be confirmed again
    goto(at, "pages/1_data.py")
    click_and_collect(at, "Withdraw the declared types")
    assert PROPOSED in texts(at.markdown) and types_table(at).set_index("column").loc["term", "role"] == "code"


def test_bad_types_are_one_line_and_values_that_do_not_fit_are_counted_curator_only(uploads):
    df = loans(400)
    df["region"] = df["region"].astype(object)
    at = upload(uploads, df)
    # income has a missing value: declared never missing, the confirmation is refused in one line
    edit(at, "income", "number", nullable=False)
    click_and_collect(at, "Declare these column types")
    err = texts(at.error)
    assert "column 'income' is declared not nullable but 1 of its values are missing" in err
    assert "Traceback" not in err and at.session_state["schema"]["source"] == "proposed"
    # levels of a whole-number code must be whole numbers: one line, nothing kept
    edit(at, "term", "whole", role="code", levels="6, 12, a year")
    assert "the levels of a whole-number code must be whole numbers; got 'a year'" in texts(at.error)
    assert types_table(at).set_index("column").loc["term", "declared levels"] == ""
    # region declared a whole number: its letters do not fit; counted for the curator, NOT DP
    edit(at, "income", "number", nullable=True)
    edit(at, "region", "whole", role="count")
    click_and_collect(at, "Declare these column types")
    assert at.session_state["schema"]["source"] == "declared"
    assert "NOT DP — curator only: values that did not fit their declared type, now missing: region 400" in texts(
        at.markdown
    )


# --------------------------------------------------------------------------- 2. the forecast on Data and Preview


def test_data_and_preview_pages_say_which_columns_will_be_found_and_what_would_help(uploads):
    at = upload_loans(uploads, 600)
    find_privately(at)
    fc = forecast_table(at)
    assert (
        fc.loc["smoker", "status"] == "found" and "public from its type" in fc.loc["smoker", "what it will likely find"]
    )
    assert fc.loc["income", "status"] == "found coarsely"
    assert fc.loc["sex", "status"] == "not found at this budget"
    assert (
        "dropping it" in fc.loc["sex", "what would help"] and "declaring its levels" in fc.loc["sex", "what would help"]
    )
    assert fc.loc["smoker", "what would help"] == ""
    warning = texts(at.warning)
    assert "Found: smoker; found coarsely: term, income; likely not found at this budget: sex, region." in warning
    # made from the proposed types and the table's own count: curator-only, said so
    md = texts(at.markdown)
    assert (
        "NOT DP — curator only: read with the table's own record count and from types proposed from the values"
    ) in md
    assert "the table's own 600 records (curator-only: not released)" in texts(at.caption)

    goto(at, "pages/3_preview.py")
    assert forecast_table(at).loc["sex", "status"] == "not found at this budget"
    assert "likely not found at this budget: sex, region" in texts(at.warning)

    # a larger ε: every column found or found coarsely, said as such (no refusal ahead)
    at.session_state["cfg"]["epsilon"] = 10.0
    goto(at, "pages/3_preview.py")
    fc = forecast_table(at)
    assert "not found at this budget" not in set(fc["status"])
    assert "likely not found" not in texts(at.info) and "Found:" in texts(at.info)


def test_a_public_record_count_and_declared_types_make_the_forecast_public(uploads):
    at = upload(uploads, loans(1000))
    click_and_collect(at, "Declare these column types")
    at.session_state["cfg"]["neighbours"] = "replace"  # n is public under replace-one neighbours
    find_privately(at)
    assert "NOT DP — curator only: read with" not in texts(at.markdown)
    assert (
        "From the declared column types, 1,000 records: the table's record count (public under replace-one "
        "neighbours)" in texts(at.caption)
    )


# --------------------------------------------------------------------------- 3. the release: refused, accepted, found


def test_a_release_with_a_column_forecast_not_found_is_refused_unless_accepted_and_says_what_it_found(uploads):
    at = upload_loans(uploads, 600)
    click_and_collect(at, "Declare these column types")
    find_privately(at)
    goto(at, "pages/4_release.py")
    err = texts(at.error)
    assert (
        "Refused before anything is spent: the forecast says sex, region will likely not be found at this budget."
    ) in err
    button = next(b for b in at.button if b.label.startswith("Release (spends"))
    assert button.disabled
    accept = next(c for c in at.checkbox if c.label.startswith("Release anyway"))
    assert "(every value “other” or missing: sex, region)" in accept.label
    accept.check().run()
    assert not next(b for b in at.button if b.label.startswith("Release (spends")).disabled
    click_and_collect(at, "Release (spends")
    rel = at.session_state["release"]["main"]
    manifest = rel.manifest()
    assert manifest["dp"]
    statuses = {c: r["status"] for c, r in manifest["diagnostics"]["dp_domain"]["columns"].items()}
    table = next(t.value for t in at.table if "what the release found" in t.value.columns)
    assert table["status"].to_dict() == statuses
    assert table.loc["smoker", "what the release found"] == "2 level(s): False, True"
    summary = texts(at.success) + texts(at.warning)
    assert "smoker" in summary and "From the release's own noisy outputs" in texts(at.caption)
    report = release_report_html(rel)
    assert "Found privately, column by column" in report and "what the release found" in report
    # the one-way charts and the curator's report compare on the domain the release found (the source recoded
    # to it: values outside the levels found are "other"), never fail on a level the release did not find
    assert [e.value for e in at.error if not e.value.startswith("Refused")] == []
    drawn = sorted(c.key for c in at.get("plotly_chart") if (c.key or "").startswith("oneway_"))
    assert drawn == sorted(f"oneway_{c}" for c in ("sex", "region", "term", "income", "smoker"))
    source = loans(600)
    source["smoker"] = source["smoker"].astype(bool)
    assert "Found privately, column by column" in release_report_html(rel, source)


def test_dropping_or_declaring_the_columns_forecast_not_found_lifts_the_refusal(uploads):
    at = upload_loans(uploads, 600)
    edit(at, "sex", "text", levels="f, m")  # declared levels: public, nothing to find
    click_and_collect(at, "Declare these column types")
    find_privately(at)
    assert forecast_table(at).loc["sex", "status"] == "found"
    goto(at, "pages/4_release.py")
    assert "region will likely not be found" in texts(at.error) and "sex" not in texts(at.error)
    goto(at, "pages/1_data.py")
    next(m for m in at.multiselect if m.label == "Drop columns").set_value(["region"]).run()
    assert "region" not in forecast_table(at).index
    goto(at, "pages/4_release.py")
    assert "Refused" not in texts(at.error)
    assert not [c for c in at.checkbox if c.label.startswith("Release anyway")]
    assert not next(b for b in at.button if b.label.startswith("Release (spends")).disabled
