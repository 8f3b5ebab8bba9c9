"""Survey releases in the workspace's budget book (dpcore.studio.survey_book): recorded with the
ledger's ε, notion and method label; refused over the cap before any randomness."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpcore.cli.commands import main
from dpcore.errors import OptionError
from dpcore.studio.budget_book import BudgetExceeded, manifest_sha256
from dpcore.studio.survey_book import IMPUTATION, POSTSTRAT, record_survey_release
from dpcore.studio.workspace import Workspace, table_fingerprint
from dpcore.survey import imputation as I
from dpcore.survey import knn_impute

ROOT = Path(__file__).resolve().parents[2]
LN2 = math.log(2.0)


@pytest.fixture(scope="module")
def survey():
    """A small survey: 300 rows, a numeric target missing for 40 of them."""
    rng = np.random.default_rng(11)
    n = 300
    df = pd.DataFrame({"sex": rng.choice(["F", "M"], n), "grp": rng.choice(["a", "b", "c"], n),
                       "income": rng.integers(100, 5000, n).astype(float)})
    df.loc[rng.choice(n, 40, replace=False), "income"] = np.nan
    return df


@pytest.fixture(scope="module")
def imputed(survey):
    return knn_impute(survey, "income", ["sex", "grp"], k=1, method="copy",
                      levels={"sex": ["F", "M"], "grp": ["a", "b", "c"]})


def test_a_survey_release_adds_a_complete_entry_with_the_ledgers_epsilon(tmp_path, survey, imputed):
    ws = Workspace(tmp_path / "w")
    fp = ws.add_table(survey, "survey.csv").fingerprint
    assert fp == table_fingerprint(survey)
    eps = 10 * LN2  # two parts of 5 ln 2: finite-variance noise
    rec = record_survey_release(ws.book, fp, lambda: I.release_mean(imputed, eps, np.random.default_rng(1),
                                                                    bounds=(0, 5000), size=None),
                                epsilon=eps, method=IMPUTATION, table_name="survey.csv")
    [entry] = ws.releases(fp)
    assert entry["id"] == rec.entry_id and entry["status"] == "complete"
    assert entry["method"] == "survey: dp imputation" and entry["neighbours"] == "add_remove"
    assert entry["epsilon"] == pytest.approx(rec.release.ledger.epsilon, rel=1e-12)
    assert entry["epsilon"] == pytest.approx(eps, rel=1e-12) and entry["dp"] == 1
    assert entry["manifest_sha256"] == manifest_sha256(rec.manifest_json())
    published = json.loads(rec.manifest_json())
    assert published["value"] == rec.release.value and published["ledger"]["epsilon_total"] == pytest.approx(eps)
    # the curator-only numbers read from the data are not in what is published
    assert not {"exact", "smooth_sensitivity", "scale"} & set(published)
    assert ws.budget(fp)["spent"] == pytest.approx(eps)


def test_over_the_cap_the_release_is_refused_with_nothing_drawn(tmp_path, survey, imputed):
    ws = Workspace(tmp_path / "w")
    fp = ws.add_table(survey, "survey.csv").fingerprint
    ws.book.set_cap(fp, 1.5)
    first = np.random.default_rng(2)
    before = json.dumps(first.bit_generator.state)
    record_survey_release(ws.book, fp, lambda: I.release_count_ignoring_missing(imputed, 1.0, first),
                          epsilon=1.0, method=IMPUTATION)
    assert json.dumps(first.bit_generator.state) != before  # a release that runs advances its rng
    rng = np.random.default_rng(3)
    before = json.dumps(rng.bit_generator.state)
    ran = []

    def run():
        ran.append(1)
        return I.release_count_ignoring_missing(imputed, 1.0, rng)

    with pytest.raises(BudgetExceeded, match=r"survey: dp imputation release needs ε = 1 but only ε = 0\.5"):
        record_survey_release(ws.book, fp, run, epsilon=1.0, method=IMPUTATION)
    assert ran == [] and json.dumps(rng.bit_generator.state) == before  # refused before any randomness
    assert [e["status"] for e in ws.releases(fp)] == ["complete"]
    assert ws.budget(fp)["spent"] == pytest.approx(1.0)


def test_a_release_spending_more_than_reserved_is_withheld_and_not_counted(tmp_path, survey, imputed):
    ws = Workspace(tmp_path / "w")
    fp = ws.add_table(survey, "survey.csv").fingerprint
    with pytest.raises(OptionError, match="spent ε = 2 but only ε = 1 was reserved"):
        record_survey_release(ws.book, fp, lambda: I.release_count_ignoring_missing(
            imputed, 2.0, np.random.default_rng(0)), epsilon=1.0, method=IMPUTATION)
    [entry] = ws.releases(fp)
    assert entry["status"] == "aborted" and ws.budget(fp)["spent"] == 0.0


def test_a_not_dp_comparator_is_recorded_as_not_dp(tmp_path, survey, imputed):
    ws = Workspace(tmp_path / "w")
    fp = ws.add_table(survey, "survey.csv").fingerprint
    rec = record_survey_release(ws.book, fp, lambda: I.release_count_global(imputed, 1.0, np.random.default_rng(0)),
                                epsilon=1.0, method=IMPUTATION)
    assert not rec.dp and ws.releases(fp)[0]["dp"] == 0
    rec = record_survey_release(ws.book, fp, lambda: I.release_count(imputed, 3.0, np.random.default_rng(0)),
                                epsilon=3.0, method=IMPUTATION, dp=False, not_dp_reason="levels inferred")
    assert not rec.dp and rec.statement == "NOT differentially private: levels inferred"
    assert [e["dp"] for e in ws.releases(fp)] == [0, 0]


def test_survey_and_synthetic_releases_share_one_cap(tmp_path, survey, imputed):
    """The gap this closes: a synthetic release plus survey estimates cannot exceed the table's cap."""
    import dpcore

    ws = Workspace(tmp_path / "w")
    table = survey[["sex", "grp"]]
    fp = ws.add_table(table, "t").fingerprint
    ws.book.set_cap(fp, 1.0)
    dom = dpcore.infer_domain(table).declared()
    ws.release(fp, 0.7, "steps", "add_remove", lambda: dpcore.synthesize(table, method="steps", epsilon=0.7,
                                                                          layers=1, seed=1, domain=dom))
    with pytest.raises(BudgetExceeded, match="only ε = 0.3"):
        record_survey_release(ws.book, fp, lambda: pytest.fail("must not run"), epsilon=0.5, method=POSTSTRAT)


def test_budget_command_lists_survey_entries_with_their_method(tmp_path, survey, imputed, capsys):
    ws = Workspace(tmp_path / "w")
    fp = ws.add_table(survey, "survey.csv").fingerprint
    record_survey_release(ws.book, fp, lambda: I.release_count_ignoring_missing(imputed, 0.5, np.random.default_rng(0)),
                          epsilon=0.5, method=IMPUTATION, table_name="survey.csv")
    assert main(["budget", "--workspace", str(tmp_path / "w"), "--releases"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "survey: dp imputation" in x)
    assert "survey.csv" in line and "0.5" in line and "complete" in line and "add_remove" in line
    assert main(["budget", "--workspace", str(tmp_path / "w"), "--releases", "--json"]) == 0
    [entry] = json.loads(capsys.readouterr().out)
    assert entry["method"] == "survey: dp imputation" and entry["epsilon"] == pytest.approx(0.5)
    assert entry["table_name"] == "survey.csv" and entry["table_fp"] == fp



def test_a_book_kept_under_replace_refuses_a_survey_release_and_says_why(tmp_path, survey, imputed):
    ws = Workspace(tmp_path / "w")
    fp = ws.add_table(survey, "survey.csv").fingerprint
    ws.book.record(fp, 0.5, "steps", "replace", lambda: _Done())  # an earlier release under replace
    ran = []
    with pytest.raises(BudgetExceeded, match="if the method offers it, or keep this table in another workspace"):
        record_survey_release(ws.book, fp, lambda: ran.append(1), epsilon=1.0, method=IMPUTATION)
    assert ran == [] and ws.budget(fp)["spent"] == pytest.approx(0.5)


class _Done:
    """A stand-in release for the book's record(): what it reads of a dpcore.Release."""
    dp = True

    class ledger:
        epsilon = 0.5

    @staticmethod
    def manifest_json() -> str:
        return "{}"
