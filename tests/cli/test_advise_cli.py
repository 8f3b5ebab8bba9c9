"""``python -m dpcore advise``: the ranking in text and JSON, and one clear line per bad argument."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import dpcore
from dpcore.cli.commands import main
from dpcore.synthesizers import REGISTRY

ROOT = Path(__file__).resolve().parents[2]
S7 = ROOT / "assets" / "sd2011_s7.csv"


@pytest.fixture(scope="module")
def s7_domain(tmp_path_factory):
    path = tmp_path_factory.mktemp("advise") / "domain.json"
    path.write_text(dpcore.infer_domain(pd.read_csv(S7)).declared().to_json())
    return path


def run(argv, capsys):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_advise_prints_the_ranking_with_expected_errors_and_the_reason(s7_domain, capsys):
    code, out, err = run(["advise", S7, "--domain", s7_domain, "--epsilon", 1, "--sets", 5], capsys)
    assert code == 0, err
    assert "predicted errors are from public facts, not measured on this table" in out
    recommended = next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("recommended: "))
    assert recommended in REGISTRY
    rows = [line.split() for line in out.splitlines() if line[:4].strip().isdigit()]
    assert {r[1] for r in rows} == set(REGISTRY) and rows[0][1] == recommended and rows[0][3] == "recommended"
    assert "No public record count is known" in out  # add/remove neighbours and no --records


def test_advise_json_has_the_recommended_method_and_the_ranking(s7_domain, capsys):
    code, out, _ = run(["advise", S7, "--domain", s7_domain, "--epsilon", 1, "--delta", "1e-9", "--records", 5000,
                        "--json"], capsys)
    assert code == 0
    got = json.loads(out)
    assert got["recommended"] in REGISTRY and got["ranking"][0]["method"] == got["recommended"]
    assert {r["method"] for r in got["ranking"]} == set(REGISTRY)
    assert got["delta"] == 1e-9 and got["n"] == {"value": 5000.0,
                                                 "source": "the figure given with --records (stated public by you)"}
    assert got["checked_by_preview"] is True
    assert all(set(r) == {"method", "name", "verdict", "predicted_spmse", "reason"} for r in got["ranking"])
    # the recommendation is a --method name: synth takes it
    assert main(["preview", str(S7), "--domain", str(s7_domain), "--method", got["recommended"], "--json"]) == 0


def test_advise_under_replace_uses_the_tables_count_as_public(s7_domain, capsys):
    code, out, _ = run(["advise", S7, "--domain", s7_domain, "--epsilon", 2, "--neighbours", "replace", "--json"],
                       capsys)
    assert code == 0 and json.loads(out)["n"]["value"] == 5000.0


def test_a_method_whose_preview_fails_is_listed_as_cannot_run(s7_domain, capsys, monkeypatch):
    import dpcore.cli.advise as cli_advise

    real = cli_advise.preview

    def failing(data, method, **kw):
        if method == "aim":
            raise dpcore.OptionError("aim: max_model_size too small for this domain")
        return real(data, method=method, **kw)

    monkeypatch.setattr(cli_advise, "preview", failing)
    code, out, _ = run(["advise", S7, "--domain", s7_domain, "--epsilon", 1, "--json"], capsys)
    got = json.loads(out)
    assert code == 0 and got["recommended"] != "aim"
    aim = next(r for r in got["ranking"] if r["method"] == "aim")
    assert aim["verdict"] == "cannot run" and "max_model_size" in aim["reason"]


@pytest.mark.parametrize("args, needle", [
    (["--epsilon", "abc"], "--epsilon must be a number"),
    (["--epsilon", "-1"], "epsilon"),
    (["--epsilon", "1", "--delta", "2"], "delta"),
    (["--epsilon", "1", "--delta", "x"], "--delta must be a number"),
    (["--epsilon", "1", "--sets", "0"], "sets"),
    (["--epsilon", "1", "--sets", "2.5"], "--sets must be a whole number"),
    (["--epsilon", "1", "--records", "0"], "--records must be a whole number of at least 1"),
    (["--epsilon", "1", "--neighbours", "swap"], "neighbours must be one of"),
    ([], "--epsilon"),
])
def test_bad_arguments_get_one_line(args, needle, s7_domain, capsys):
    code, out, err = run(["advise", S7, "--domain", s7_domain, *args], capsys)
    lines = [x for x in err.strip().splitlines() if x.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error:"), err
    assert needle in lines[0] and "Traceback" not in err


def test_a_missing_table_or_domain_is_named(s7_domain, tmp_path, capsys):
    code, _, err = run(["advise", tmp_path / "none.csv", "--domain", s7_domain, "--epsilon", 1], capsys)
    assert code == 2 and "none.csv" in err
    code, _, err = run(["advise", S7, "--domain", tmp_path / "none.json", "--epsilon", 1], capsys)
    assert code == 2 and "none.json" in err
    code, _, err = run(["advise", S7, "--epsilon", 1], capsys)
    assert code == 2 and "--domain" in err
