"""AIM on a tiny table in the app ([real-tables]): the Design page's ledger and the release say what AIM does
there, the whole table measured once (docs/methods/aim.md#the-whole-table-at-once)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from tests.app.conftest import Upload
from tests.app.test_app import APP, confirm_domain, goto, release, texts


def _passengers(n: int = 1300, seed: int = 3) -> pd.DataFrame:
    """Four categorical columns, 2 × 2 × 9 × 3 = 108 cells (the shape of carData's TitanicSurvival)."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"survived": rng.choice(["yes", "no"], n), "sex": rng.choice(["F", "M"], n),
                         "agegroup": rng.choice([f"{10 * i}-{10 * i + 9}" for i in range(9)], n),
                         "pclass": rng.choice(["1st", "2nd", "3rd"], n)})


def test_aim_on_a_tiny_table_plans_and_releases_the_whole_table_once(uploads, monkeypatch, tmp_path):
    monkeypatch.setenv("DPSTUDIO_WORKSPACE", str(tmp_path))
    at = AppTest.from_file(APP, default_timeout=90)
    at.run()
    at = goto(at, "pages/1_data.py")
    uploads["w_upload"] = Upload("passengers.csv", _passengers())
    at.run()
    assert at.session_state["data_name"] == "upload: passengers.csv"
    confirm_domain(at)
    at = goto(at, "pages/2_design.py")
    at.selectbox(key="w_release_method").select("aim").run()
    assert not at.exception
    # the planned ledger: the record count once, then the one table each set measures
    ledger = next(d.value for d in at.dataframe if "part" in d.value.columns and "cells" in d.value.columns)
    assert list(ledger["part"]) == ["noisy record count", "the whole table, once (no rounds)"]
    assert list(ledger["cells"].dropna()) == [108]
    assert "then 1 set (sequential composition)" in texts(at.caption)
    at.session_state["cfg"]["comparators"] = []
    at = release(at)
    r = at.session_state["release"]["main"]
    assert r.method == "aim" and r.options["whole_table"] == "auto"
    assert [c.label for p, c in r.ledger.charges() if "/set 1/" in p] == ["the whole table"]
    assert r.ledger.epsilon == pytest.approx(r.epsilon, abs=1e-12)
