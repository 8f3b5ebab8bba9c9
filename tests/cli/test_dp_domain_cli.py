"""[numeric-columns]: `synth --dp-domain [--domain-share S] [--domain-bins M]` and its one-line errors."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dpcore.cli.commands import main


@pytest.fixture()
def wages_csv(tmp_path):
    rng = np.random.default_rng(5)
    n = 1500
    df = pd.DataFrame({"exper": rng.integers(1, 19, n), "sex": rng.choice(["female", "male"], n),
                       "wage": np.round(rng.lognormal(1.6, 0.45, n), 2)})
    df.loc[0, "wage"] = 98765.4
    path = tmp_path / "wages.csv"
    df.to_csv(path, index=False)
    return path


@pytest.fixture()
def wages_schema(wages_csv, tmp_path):
    """The types the curator declares (reviewed from `python -m dpcore schema`)."""
    path = tmp_path / "schema.json"
    assert main(["schema", str(wages_csv), "--out", str(path)]) == 0
    d = json.loads(path.read_text())
    assert d["source"] == "proposed"
    d["source"] = "declared"
    path.write_text(json.dumps(d))
    return path


def test_synth_dp_domain_releases_labelled_dp(wages_csv, wages_schema, tmp_path, capsys):
    out, private = tmp_path / "out", tmp_path / "private.json"
    rc = main(["synth", str(wages_csv), "--out", str(out), "--dp-domain", "--epsilon", "1", "--delta", "1e-9",
               "--seed", "3", "--method", "mst", "--private-manifest", str(private), "--schema", str(wages_schema)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "DP: yes" in text and "NOT DP, curator-only: records clamped into the end bins: " in text
    syn = pd.read_csv(out / "synthetic_1.csv")
    assert syn["wage"].max() < 1000
    man = json.loads((out / "manifest.json").read_text())
    assert man["dp"] and "DP domain" in [c["label"] for c in man["ledger"]["composition"]["children"]]
    assert "curator_only_not_dp" not in man
    assert json.loads(private.read_text())["curator_only_not_dp"]["clamped_records"]["wage"] >= 1


@pytest.mark.parametrize("bins, charge", [("quantiles", "quantile"), ("privtree", "PrivTree bins of 'wage'")])
def test_synth_dp_domain_bins_choose_the_binning(wages_csv, wages_schema, tmp_path, capsys, bins, charge):
    out = tmp_path / "out"
    rc = main(["synth", str(wages_csv), "--out", str(out), "--dp-domain", "--epsilon", "1", "--delta", "1e-9",
               "--seed", "3", "--method", "mst", "--domain-bins", bins, "--schema", str(wages_schema)])
    assert rc == 0
    man = (out / "manifest.json").read_text()
    assert json.loads(man)["dp"] and charge in man


def test_types_read_from_the_values_are_not_dp_and_said_so(wages_csv, tmp_path, capsys):
    """[private-domain] item 1: without --schema the types are the reader's, read from the values: NOT DP."""
    out = tmp_path / "out"
    assert main(["synth", str(wages_csv), "--out", str(out), "--dp-domain", "--epsilon", "1", "--delta", "1e-9",
                 "--seed", "3", "--method", "mst", "--no-book"]) == 0
    captured = capsys.readouterr()
    assert "the column types are read from the values, so the release is NOT DP" in captured.err
    man = json.loads((out / "manifest.json").read_text())
    assert not man["dp"] and "proposed schema" in man["dp_reason"]


def test_preview_forecasts_each_column_and_synth_refuses_what_will_not_be_found(tmp_path, wages_schema, capsys):
    """[private-domain] item 3: the forecast, column by column, and the refusal unless accepted in so many words."""
    rng = np.random.default_rng(1)
    small = pd.DataFrame({"exper": rng.integers(1, 19, 120), "sex": rng.choice(["female", "male"], 120),
                          "wage": np.round(rng.lognormal(1.6, 0.45, 120), 2)})
    path = tmp_path / "small.csv"
    small.to_csv(path, index=False)
    assert main(["preview", str(path), "--dp-domain", "--epsilon", "1", "--delta", "1e-9", "--schema",
                 str(wages_schema)]) == 0
    text = capsys.readouterr().out
    assert "wage: not found at this budget" in text and "curator-only" in text
    args = ["synth", str(path), "--out", str(tmp_path / "o"), "--dp-domain", "--epsilon", "1", "--delta", "1e-9",
            "--schema", str(wages_schema), "--no-book", "--method", "mst"]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert "will likely not be found" in err and "--accept-not-found" in err and "\n" not in err
    assert main([*args, "--accept-not-found"]) == 0


@pytest.mark.parametrize("args, match", [
    (["--dp-domain", "--domain-share", "0"], "domain_share"),
    (["--dp-domain", "--domain-share", "1"], "domain_share"),
    (["--dp-domain", "--domain-share", "abc"], "'abc' is not a number"),
    (["--domain-share", "0.1"], "give --dp-domain"),
    (["--domain-bins", "privtree"], "give --dp-domain"),
    (["--dp-domain", "--delta", "1e-9", "--domain-bins", "kmeans"], "--domain-bins: invalid choice: 'kmeans'"),
    (["--dp-domain"], "needs delta for text column"),
    (["--dp-domain", "--delta", "1e-9", "--domain", "d.json"], "drop --domain"),
    (["--dp-bins", "wage=10:5:3"], "lower"),
    (["--dp-bins", "wage=a:5:3"], "numbers"),
])
def test_bad_dp_domain_input_is_one_line(wages_csv, tmp_path, capsys, args, match):
    assert main(["synth", str(wages_csv), "--out", str(tmp_path / "o"), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert match in err and "\n" not in err and "Traceback" not in err


@pytest.mark.parametrize("args, flag, why", [
    (["--dp-domain", "--delta", "1e-9", "--engine", "duckdb"], "--dp-domain",
     "--engine duckdb counts the file in SQL"),
    (["--dp-bins", "wage=0:100:4", "--engine", "duckdb"], "--dp-bins", "--engine duckdb counts the file in SQL"),
    (["--dp-domain", "--delta", "1e-9", "--format", "parquet"], "--dp-domain", "--format parquet writes through"),
])
def test_dp_domain_on_the_file_path_says_why_and_what_to_do(wages_csv, tmp_path, capsys, args, flag, why):
    out = tmp_path / "o"
    assert main(["synth", str(wages_csv), "--out", str(out), "--no-book", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert f"{flag} works only on a table loaded in memory" in err and why in err
    assert "add --engine pandas --format csv" in err and "--domain file" in err
    assert not (out / "manifest.json").exists()  # refused before anything is spent
