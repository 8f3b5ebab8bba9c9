"""[privacy-unit] items 1, 3 and 4 in the app (AppTest): a PSID-like upload (a person's `id` repeated once per
year) is flagged on the Data page with its curator-only facts; the curator protects each id with their own K
(never prefilled from the data); the id leaves the domain; the preview says what is protected and which records a
synthetic record keeps together, and its noise is K times a record's; the release, its manifest, its report and the
budget book name the unit, and the book refuses a record release of the same table afterwards. A bad K or a unit
the table lacks is one line. A panel whose years are declared is released wide."""
from __future__ import annotations

import html

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("streamlit.testing.v1")
from streamlit.testing.v1 import AppTest

import dpcore
from dpcore.studio.report import plain_statement
from dpcore.studio.workspace import Workspace
from tests.app.conftest import Upload
from tests.app.test_app import click_and_collect, goto, texts
from tests.app.test_workspace_app import start

YEARS = (2001, 2002, 2003, 2004)


def psid_like(people: int = 60, seed: int = 3) -> pd.DataFrame:
    """One record per person and year, a few categorical columns with sticky paths; person 7 has two extra
    records (6 in all), so bounding at K = 4 drops two of them."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(1, people + 1):
        south, married = rng.choice(["yes", "no"]), rng.choice(["yes", "no"])
        years = (*YEARS, 2003, 2004) if p == 7 else YEARS
        for y in years:
            married = married if rng.random() < 0.85 else ("yes" if married == "no" else "no")
            rows.append({"id": p, "year": y, "south": south, "married": married,
                         "union": rng.choice(["yes", "no"], p=[0.3, 0.7])})
    return pd.DataFrame(rows)


def upload(uploads, df: pd.DataFrame) -> AppTest:
    at = start()
    uploads["w_upload"] = Upload("panel.csv", df)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["data_name"] == "upload: panel.csv"
    return at


def key(at: AppTest, name: str) -> str:
    return f"w_{name}@{at.session_state['data_key']}"


def domain_names(at: AppTest) -> list[str]:
    table = next(d.value for d in at.dataframe if "attribute" in d.value.columns and "bin edges from" in d.value)
    return list(table["attribute"])


def click(at: AppTest, prefix: str) -> AppTest:
    return click_and_collect(at, prefix)


def protect(at: AppTest, k: int | None) -> None:
    """Choose each id as the privacy unit and type K."""
    at.selectbox(key=key(at, "unit")).set_value("id").run()
    if k is not None:
        at.number_input(key=key(at, "records_per_unit")).set_value(k).run()
    assert not at.exception, [e.value for e in at.exception]


def test_a_repeating_id_is_flagged_protected_with_k_and_named_by_preview_release_manifest_report_and_book(uploads):
    at = upload(uploads, psid_like())
    # the flag, with its curator-only facts (the raw largest count, 6, is shown, never offered as K)
    assert "`id` repeats: 60 values, up to 6 records each. Protect each id?" in texts(at.info)
    assert "NOT DP — counted in the raw data, curator only" in texts(at.markdown)
    assert "id" in domain_names(at)
    protect(at, None)
    assert at.number_input(key=key(at, "records_per_unit")).value is None  # K is the curator's: not prefilled
    assert "privacy_unit='id' needs records_per_unit" in texts(at.error)
    assert "id" not in domain_names(at)  # the identifier is never released: not in the domain
    at.number_input(key=key(at, "records_per_unit")).set_value(4).run()
    assert "privacy_unit" not in texts(at.error)
    assert "The release protects one 'id' (with all of its records: up to 4 kept)" in texts(at.caption)
    click(at, "Confirm")
    assert at.session_state["domain_confirmed"] is True
    at.session_state["cfg"].update(release_method="flat_laplace", m=1, epsilon=1.0)

    goto(at, "pages/3_preview.py")
    note = texts(at.info)
    assert "**The release protects** one 'id' with all of their records (at most 4 kept per 'id')" in note
    assert "records, as in the table, each protected with its 'id' (at most 4 kept per 'id')" in note
    assert "calibrated to 4 records, 4 times the noise" in texts(at.caption)
    # the noise the preview and its check show is the one at K = 4: a discrete Laplace of scale K/ε, 4 times a
    # record-level release's (its SD a little more than 4 times: the discrete law's SD is not linear at scale ~1)
    margins = next(d.value for d in at.dataframe if "noise_sd" in d.value.columns)
    table = psid_like()
    dom = dpcore.infer_domain(table.drop(columns="id")).declared()
    records = dpcore.preview(table.drop(columns="id"), "flat_laplace", 1.0, domain=dom).margins
    assert margins["noise_scale"].iloc[0] == pytest.approx(4 * records["noise_scale"].iloc[0])
    unit = dpcore.expected_noise("flat_laplace", dom, 1.0, n=len(table), records_per_unit=4)[0]
    record = dpcore.expected_noise("flat_laplace", dom, 1.0, n=len(table))[0]
    assert margins["noise_sd"].iloc[0] == pytest.approx(unit.noise_sd) and unit.noise_sd > 4 * record.noise_sd
    assert f"noise SD {unit.noise_sd:,.3g} records per count" in texts(at.success) + texts(at.warning) + texts(
        at.error)  # the noise check's verdict line

    goto(at, "pages/4_release.py")
    assert "protecting one 'id' (with all of its records: up to 4 kept)" in texts(at.markdown)
    click(at, "Release (spends ε = 1)")
    rel = at.session_state["release"]["main"]
    statement = ("adding or removing one 'id' with all of their records (at most 4 kept per 'id')")
    assert statement in rel.dp_reason and statement in texts(at.success)
    manifest = rel.manifest()
    assert manifest["neighbours"]["privacy_unit"] == "id" and manifest["neighbours"]["records_per_unit"] == 4
    assert all("id" not in s.columns for s in rel.sets)
    assert ("NOT DP, curator-only: contribution bounding kept at most 4 record(s) per 'id': 60 'id' values, the "
            "largest had 6 records; 2 record(s) dropped") in texts(at.caption)
    assert "What this means for each id in the data" in " ".join(plain_statement(manifest))
    click(at, "Build the report")
    report = html.unescape(at.session_state["_report"]["html"])
    assert statement in report and "What this means for each id in the data" in report
    # the book: the table is kept for the unit, on the page and in the book itself
    ws, fp = Workspace.in_root(at.query_params["ws"]), at.session_state["table_fp"]
    assert [e["neighbours"] for e in ws.releases(fp)] == ["add_remove, one 'id'"]
    book = next(d.value for d in at.dataframe if "manifest" in d.value.columns)
    assert list(book["neighbours"]) == ["add/remove, one 'id'"]
    assert "This table's book is kept for one 'id' with all of its records (add/remove)" in texts(at.caption)

    # a release that protects one record of the same table does not add up with it: refused before anything runs
    goto(at, "pages/1_data.py")
    at.selectbox(key=key(at, "unit")).set_value("").run()  # back to one record
    goto(at, "pages/4_release.py")
    click(at, "Release (spends ε = 1)")
    assert ("a release that protects one record (add/remove) does not add up with them" in texts(at.error))
    assert len(ws.releases(fp)) == 1


@pytest.mark.parametrize("k, message", [
    (0, "records_per_unit (K, the records kept per unit) must be a whole number from 1 to 10000; got 0"),
    ("seven", "records_per_unit (K, the records kept per unit) must be a whole number from 1 to 10000; got 'seven'"),
])
def test_a_bad_k_is_one_line_on_every_page(uploads, k, message):
    at = upload(uploads, psid_like(20))
    protect(at, 3)
    click(at, "Confirm")
    at.session_state["cfg"]["records_per_unit"] = k  # as a saved design or an edited file could hold it
    at.run()
    assert [e.value for e in at.error] == [f"Privacy unit (the Data page): {message}."]
    assert at.number_input(key=key(at, "records_per_unit")).value is None
    for page in ("pages/2_design.py", "pages/3_preview.py", "pages/4_release.py"):
        goto(at, page)
        assert message in texts(at.error) + texts(at.warning), page
        assert "Traceback" not in texts(at.error) and "went wrong" not in texts(at.error)
    assert next(b for b in at.button if b.label.startswith("Release (spends")).disabled


def test_a_unit_column_the_table_lacks_is_one_line(uploads):
    at = upload(uploads, psid_like(20))
    at.session_state["cfg"].update(privacy_unit="person", records_per_unit=4)
    at.run()
    line = "privacy_unit 'person' is not a column of the table; give the identifier column (one of id, year"
    assert line in texts(at.error)
    goto(at, "pages/4_release.py")
    assert line in texts(at.warning)
    assert next(b for b in at.button if b.label.startswith("Release (spends")).disabled


def test_a_panel_with_declared_years_is_released_wide(uploads):
    at = upload(uploads, psid_like(40).query("id != 7"))
    protect(at, None)
    at.selectbox(key=key(at, "panel_time")).set_value("year").run()
    assert "Once the domain is confirmed (below), its periods of 'year' suggest K." in texts(at.caption)
    click(at, "Confirm")
    click(at, "Use K = 4: the 4 declared periods of 'year'")  # a public fact: the declared periods
    assert at.session_state["cfg"]["records_per_unit"] == 4
    at.radio(key=key(at, "panel_layout")).set_value("wide").run()
    assert not at.exception and not texts(at.error)
    at.session_state["cfg"].update(release_method="flat_laplace", m=1, epsilon=1.0)

    goto(at, "pages/3_preview.py")
    note = texts(at.info)
    assert "one 'id' with all of their records (one per 'year' kept, released together as one wide record)" in note
    assert "one synthetic record per 'id', wide: 4 periods of 'year' × 3 columns = 12 columns" in note
    assert "n = 39 (your table's own number of 'id' values" in texts(at.caption)

    goto(at, "pages/4_release.py")
    click(at, "Release (spends ε = 1)")
    rel = at.session_state["release"]["main"]
    assert "one per 'year' kept, released together as one wide record" in texts(at.success)
    assert rel.manifest()["neighbours"]["panel_time"] == "year"
    assert list(rel.sets[0].columns) == ["id", "year", "south", "married", "union"]
    assert "What this means for each id" in " ".join(plain_statement(rel.manifest()))
    assert "one per year, released together as one wide record" in " ".join(plain_statement(rel.manifest()))
    assert "the panel pivoted wide, one record per 'id': 39 'id' values" in texts(at.caption)
