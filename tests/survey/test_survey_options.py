"""Every numeric option of the survey commands, one case per option and hostile value:
valid JSON with finite numbers, or exit status 2 with one line that names the option
([privacy-audit]: `amplify --epsilon 800` and `poststrat-release --gamma 1e308` ended in
"unexpected OverflowError")."""
import json
import math

import numpy as np
import pandas as pd
import pytest

from dpcore.cli.commands import main

HOSTILE = ["0", "-1", "nan", "inf", "-inf", "1e308", "1e-300", "800", "99999999999999999999",
           "-99999999999999999999"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("survey_options")
    rng = np.random.default_rng(0)
    n = 200
    df = pd.DataFrame({"sex": rng.choice(["F", "M"], n), "agegr": rng.choice(["young", "old"], n),
                       "income": np.where(rng.random(n) < 0.15, np.nan, rng.integers(0, 5000, n).astype(float)),
                       "w": rng.choice([10.0, 20.0], n)})
    df["poor"] = (df["income"] < 800).astype(int)
    df.to_csv(d / "s.csv", index=False)
    (d / "levels.json").write_text(json.dumps({"sex": ["F", "M"], "agegr": ["young", "old"]}))
    (d / "cands.json").write_text(json.dumps({"agegr": {"separate": {"young": "young", "old": "old"},
                                                        "merged": {"young": "all", "old": "all"}}}))
    rows = [("agegr", "young", 50_000), ("agegr", "old", 50_000), ("sex", "F", 51_000), ("sex", "M", 49_000)]
    pd.DataFrame(rows, columns=["column", "level", "total"]).to_csv(d / "totals.csv", index=False)
    return d


def _base(cmd, d):
    if cmd == "amplify":
        return ["amplify", "--epsilon", "1", "--beta", "0.1", "--json"]
    if cmd == "impute-release":
        return ["impute-release", str(d / "s.csv"), "--target", "income", "--match", "sex,agegr", "--levels",
                str(d / "levels.json"), "--bounds", "0,5000", "--size", "200", "--epsilon", "3", "--seed", "1",
                "--json"]
    if cmd == "impute-ignore":
        return ["impute-release", str(d / "s.csv"), "--target", "income", "--match", "sex,agegr", "--levels",
                str(d / "levels.json"), "--bounds", "0,5000", "--method", "ignore", "--epsilon", "1", "--seed",
                "1", "--json"]
    return ["poststrat-release", str(d / "s.csv"), "--totals", str(d / "totals.csv"), "--count-where", "poor == 1",
            "--columns", "agegr,sex", "--candidates", str(d / "cands.json"), "--epsilon-select", "0.1",
            "--epsilon-table", "0.5", "--epsilon-count", "1", "--weights", "w", "--base-weight-range", "10,20",
            "--seed", "2", "--json"]


# (command, option, how the value goes in ("{}" is the hostile value), names the error may use)
OPTIONS = [
    ("amplify", "--epsilon", "{}", ("epsilon", "ε")),
    ("amplify", "--beta", "{}", ("beta", "β")),
    ("impute-release", "--epsilon", "{}", ("epsilon", "ε")),
    ("impute-ignore", "--epsilon", "{}", ("epsilon", "ε")),
    ("impute-release", "--size", "{}", ("size",)),
    ("impute-ignore", "--size", "{}", ("size",)),
    ("impute-release", "--k", "{}", ("--k", "k =", "k must")),
    ("impute-release", "--seed", "{}", ("seed",)),
    ("impute-release", "--bounds", "0,{}", ("bounds",)),
    ("impute-release", "--bounds", "{},5000", ("bounds",)),
    ("impute-ignore", "--bounds", "{},5000", ("bounds",)),
    ("poststrat-release", "--epsilon-select", "{}", ("epsilon_select", "epsilon-select", "ε_1", "epsilon")),
    ("poststrat-release", "--epsilon-table", "{}", ("epsilon_table", "epsilon-table", "ε_2", "epsilon")),
    ("poststrat-release", "--epsilon-count", "{}", ("epsilon_count", "epsilon-count", "ε_3", "epsilon")),
    ("poststrat-release", "--gamma", "{}", ("gamma", "γ")),
    ("poststrat-release", "--seed", "{}", ("seed",)),
    ("poststrat-release", "--base-weight-range", "{},20", ("base-weight-range", "base-weight range", "weight")),
    ("poststrat-release", "--base-weight-range", "10,{}", ("base-weight-range", "base-weight range", "weight")),
]


def _finite_numbers(o):
    if isinstance(o, float):
        return math.isfinite(o)
    if isinstance(o, dict):
        return all(_finite_numbers(v) for v in o.values())
    if isinstance(o, list):
        return all(_finite_numbers(v) for v in o)
    return True


@pytest.mark.parametrize("cmd,opt,fmt,names", OPTIONS, ids=[f"{c} {o} {f}" for c, o, f, _ in OPTIONS])
@pytest.mark.parametrize("value", HOSTILE)
def test_numeric_option_gives_output_or_one_line_naming_it(files, capsys, cmd, opt, fmt, names, value):
    argv = _base(cmd, files)
    v = fmt.format(value)
    if opt in argv:
        argv[argv.index(opt) + 1] = v
    else:
        argv += [opt, v]
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own type errors
        code = exc.code
    out, err = capsys.readouterr()
    assert "unexpected" not in err and "Traceback" not in err, err
    assert code in (0, 2), (code, err)
    if code == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        assert any(nm in err for nm in names + (opt,)), f"the error does not name {opt}: {err}"
    else:
        res = json.loads(out)  # strict JSON
        assert _finite_numbers(res), res
        if "value" in res:
            assert isinstance(res["value"], float) and math.isfinite(res["value"])
