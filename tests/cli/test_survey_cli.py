"""dpcore.cli.survey: the amplify, impute-release and poststrat-release commands."""
from __future__ import annotations

import argparse
import json

import numpy as np
import pandas as pd
import pytest

from dpcore.cli.survey import add_survey_parsers
from dpcore.errors import DPCoreError, InputError, OptionError


def run(argv, capsys):
    p = argparse.ArgumentParser(prog="dpcore")
    add_survey_parsers(p.add_subparsers(dest="command", required=True))
    args = p.parse_args([str(a) for a in argv])
    code = args.func(args)
    return code, capsys.readouterr().out


@pytest.fixture()
def survey(tmp_path):
    rng = np.random.default_rng(0)
    n = 600
    df = pd.DataFrame({
        "sex": rng.choice(["F", "M"], n),
        "agegr": rng.choice(["young", "mid", "old"], n),
        "age": rng.integers(18, 90, n),
        "income": np.where(rng.random(n) < 0.15, np.nan, rng.integers(0, 5000, n).astype(float)),
        "w": rng.choice([10.0, 20.0], n),
    })
    df["poor"] = (df["income"] < 800).astype(int)
    path = tmp_path / "s.csv"
    df.to_csv(path, index=False)
    (tmp_path / "levels.json").write_text(json.dumps({"sex": ["F", "M"], "agegr": ["young", "mid", "old"]}))
    rows = [("agegr", lv, 50_000) for lv in ["young", "mid", "old"]] + [("sex", "F", 76_000), ("sex", "M", 74_000)]
    pd.DataFrame(rows, columns=["column", "level", "total"]).to_csv(tmp_path / "totals.csv", index=False)
    (tmp_path / "cands.json").write_text(json.dumps({"agegr": {
        "separate": {"young": "young", "mid": "mid", "old": "old"},
        "adult": {"young": "young", "mid": "adult", "old": "adult"}}}))
    return tmp_path, df


def test_amplify(capsys):
    code, out = run(["amplify", "--epsilon", 1, "--beta", 0.1], capsys)
    assert code == 0 and "ε' = 0.263" in out
    code, out = run(["amplify", "--epsilon", 0.1, "--beta", 0.1, "--json"], capsys)
    res = json.loads(out)
    assert not res["amplifies"] and res["epsilon_effective"] == 0.1
    with pytest.raises(OptionError, match="beta"):
        run(["amplify", "--epsilon", 1, "--beta", 1.5], capsys)


def test_impute_release_mean_count_and_baselines(survey, capsys):
    d, df = survey
    base = ["impute-release", d / "s.csv", "--target", "income", "--match", "sex,agegr", "--levels",
            d / "levels.json", "--seed", 1]
    code, out = run(base + ["--bounds", "0,5000", "--where", "age >= 20 and age <= 59", "--epsilon", 6,
                            "--json"], capsys)
    res = json.loads(out)
    assert code == 0 and res["dp"] and res["ledger"]["epsilon_total"] == pytest.approx(6)
    assert [c["label"] for c in res["ledger"]["charges"]] == ["subpopulation size", "mean"]
    # [privacy-audit]: the exact number of imputed rows was published beside "dp": true
    assert "imputed_rows" not in res
    n_missing = int(df["income"].isna().sum())
    assert n_missing not in {v for v in res.values() if isinstance(v, int) and not isinstance(v, bool)}
    code, out = run(base + ["--query", "count", "--target-where", "income < 800", "--epsilon", 2], capsys)
    assert "count of income (smooth)" in out and "DP: yes" in out and "infinite variance" in out
    code, out = run(base + ["--method", "global", "--bounds", "0,5000", "--size", 600, "--epsilon", 1], capsys)
    assert "DP: NO" in out


def test_impute_release_errors(survey, capsys):
    d, _ = survey
    base = ["impute-release", d / "s.csv", "--target", "income", "--match", "sex,agegr", "--levels",
            d / "levels.json"]
    with pytest.raises(OptionError, match="--k 9999 is larger than the number of donors"):
        run(base + ["--k", 9999, "--impute", "mean", "--bounds", "0,1", "--epsilon", 3], capsys)
    with pytest.raises(InputError, match="--where"):
        run(base + ["--bounds", "0,1", "--where", "nosuchcol > 3", "--epsilon", 3], capsys)
    with pytest.raises(InputError, match="--target-where"):  # the target is not allowed in --where
        run(base + ["--bounds", "0,1", "--where", "income > 3", "--epsilon", 3], capsys)
    with pytest.raises(OptionError, match="2 ln 2"):
        run(base + ["--bounds", "0,1", "--size", 100, "--epsilon", 1], capsys)
    with pytest.raises(OptionError, match="bounds"):
        run(base + ["--epsilon", 3], capsys)


def test_poststrat_release(survey, capsys):
    d, df = survey
    base = ["poststrat-release", d / "s.csv", "--totals", d / "totals.csv", "--count-where", "poor == 1",
            "--seed", 2]
    code, out = run(base + ["--columns", "agegr", "--candidates", d / "cands.json", "--epsilon-select", 0.1,
                            "--epsilon-count", 1, "--json"], capsys)
    res = json.loads(out)
    assert code == 0 and res["selected"]["agegr"] in ("separate", "adult")
    assert res["ledger"]["epsilon_total"] == pytest.approx(1.1)
    code, out = run(base + ["--columns", "agegr,sex", "--epsilon-select", 0.1, "--epsilon-table", 0.5,
                            "--candidates", d / "cands.json", "--epsilon-count", 1, "--weights", "w",
                            "--base-weight-range", "10,20"], capsys)
    assert "IPF: converged" in out and "ε spent: 1.6" in out


def test_poststrat_release_errors(survey, capsys, tmp_path):
    d, df = survey
    base = ["poststrat-release", d / "s.csv", "--count-where", "poor == 1", "--epsilon-count", 1,
            "--columns", "agegr"]
    pd.DataFrame([("agegr", "young", 1.0), ("agegr", "mid", 1.0)], columns=["column", "level", "total"]).to_csv(
        tmp_path / "short.csv", index=False)
    with pytest.raises(InputError, match="do not cover bin level"):
        run(base + ["--totals", tmp_path / "short.csv"], capsys)
    bad = df.assign(w=df["w"].where(df.index != 3, -1.0))
    bad.to_csv(tmp_path / "bad.csv", index=False)
    argv = list(base)
    argv[1] = tmp_path / "bad.csv"
    with pytest.raises(InputError, match="weights column 'w' has 1 row"):
        run(argv + ["--totals", d / "totals.csv", "--weights", "w", "--base-weight-range", "1,30"], capsys)
    with pytest.raises(OptionError, match="base-weight range"):
        run(base + ["--totals", d / "totals.csv", "--weights", "w"], capsys)
    with pytest.raises(DPCoreError):
        run(base + ["--totals", d / "totals.csv", "--candidates", d / "cands.json"], capsys)  # no ε_1


def test_survey_releases_on_the_cli_are_charged_to_the_workspace_book(survey, tmp_path, capsys):
    """--workspace: impute-release and poststrat-release are charged to the table's budget book with
    their ledgers' ε, and a release over the cap is refused before anything is drawn."""
    from dpcore.data.io import read_table
    from dpcore.studio.budget_book import BudgetExceeded
    from dpcore.studio.survey_book import IMPUTATION, POSTSTRAT
    from dpcore.studio.workspace import Workspace, table_fingerprint

    d, _ = survey
    ws_dir = tmp_path / "ws"
    imp = ["impute-release", d / "s.csv", "--target", "income", "--match", "sex,agegr", "--levels",
           d / "levels.json", "--seed", 1, "--bounds", "0,5000", "--epsilon", 3, "--workspace", ws_dir]
    code, out = run(imp, capsys)
    assert code == 0 and "in the budget book of" in out and "spent ε = 3" in out
    ps = ["poststrat-release", d / "s.csv", "--totals", d / "totals.csv", "--count-where", "poor == 1",
          "--columns", "agegr", "--candidates", d / "cands.json", "--epsilon-select", 0.1, "--epsilon-count", 1,
          "--seed", 2, "--workspace", ws_dir]
    code, out = run(ps, capsys)
    assert code == 0 and "spent ε = 4.1" in out
    ws = Workspace(ws_dir)
    fp = table_fingerprint(read_table(d / "s.csv"))
    entries = ws.book.entries(fp)
    assert [(e["method"], round(e["epsilon"], 9), e["status"]) for e in entries] == \
        [(IMPUTATION, 3.0, "complete"), (POSTSTRAT, 1.1, "complete")]
    ws.book.set_cap(fp, 5.0)
    with pytest.raises(BudgetExceeded):
        run(imp, capsys)  # 4.1 + 3 > 5
    assert len(ws.book.entries(fp)) == 2 and ws.budget(fp)["spent"] == pytest.approx(4.1)


def test_survey_releases_go_to_the_installation_book_by_default_and_no_book_says_unaccounted(survey, capsys):
    """Without --workspace a survey release is still charged (the installation's book, issue 28);
    --no-book opts out and the output says the release is unaccounted."""
    from dpcore.data.io import read_table
    from dpcore.studio.workspace import installation_book, table_fingerprint

    d, _ = survey
    imp = ["impute-release", d / "s.csv", "--target", "income", "--match", "sex,agegr", "--levels",
           d / "levels.json", "--seed", 1, "--bounds", "0,5000", "--epsilon", 3]
    code, out = run(imp, capsys)
    assert code == 0 and "recorded as entry 1 of s.csv in the budget book of" in out and "spent ε = 3" in out
    code, out = run(imp + ["--no-book"], capsys)
    assert code == 0 and "UNACCOUNTED (--no-book)" in out and "recorded as" not in out
    fp = table_fingerprint(read_table(d / "s.csv"))
    [entry] = installation_book().entries(fp)
    assert entry["workspace"] == "" and entry["user"] and entry["epsilon"] == pytest.approx(3.0)
