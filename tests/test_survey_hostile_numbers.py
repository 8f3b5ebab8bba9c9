"""Every numeric option of the survey commands: valid output or one clear line, never an
internal error ([privacy-audit]: `amplify --epsilon 800` and `poststrat-release --gamma 1e308`
ended in "unexpected OverflowError")."""
import json

import numpy as np
import pandas as pd
import pytest

from dpcore.cli import main

HOSTILE = ["0", "-1", "nan", "inf", "-inf", "1e308", "1e-300", "800", "99999999999999999999", "abc"]


@pytest.fixture(scope="module")
def survey(tmp_path_factory):
    d = tmp_path_factory.mktemp("survey")
    rng = np.random.default_rng(0)
    n = 300
    df = pd.DataFrame({"sex": rng.choice(["F", "M"], n), "agegr": rng.choice(["young", "old"], n),
                       "income": np.where(rng.random(n) < 0.15, np.nan, rng.integers(0, 5000, n).astype(float)),
                       "w": rng.choice([10.0, 20.0], n)})
    df["poor"] = (df["income"] < 800).astype(int)
    df.to_csv(d / "s.csv", index=False)
    (d / "levels.json").write_text(json.dumps({"sex": ["F", "M"], "agegr": ["young", "old"]}))
    rows = [("agegr", "young", 50_000), ("agegr", "old", 50_000), ("sex", "F", 51_000), ("sex", "M", 49_000)]
    pd.DataFrame(rows, columns=["column", "level", "total"]).to_csv(d / "totals.csv", index=False)
    return d


def _cases(d):
    amp = ["amplify", "--epsilon", "1", "--beta", "0.1"]
    imp = ["impute-release", str(d / "s.csv"), "--target", "income", "--match", "sex,agegr", "--levels",
           str(d / "levels.json"), "--bounds", "0,5000", "--size", "300", "--epsilon", "3", "--seed", "1"]
    ps = ["poststrat-release", str(d / "s.csv"), "--totals", str(d / "totals.csv"), "--count-where", "poor == 1",
          "--columns", "agegr", "--epsilon-count", "1", "--seed", "2"]
    for base, options in ((amp, ["--epsilon", "--beta"]), (imp, ["--epsilon", "--size", "--k", "--seed"]),
                          (ps, ["--epsilon-count", "--gamma", "--seed"])):
        for opt in options:
            for v in HOSTILE:
                argv = list(base)
                if opt in argv:
                    argv[argv.index(opt) + 1] = v
                else:
                    argv += [opt, v]
                yield pytest.param(argv, id=f"{base[0]} {opt}={v}")


def test_numeric_options_give_output_or_one_clear_line(survey, capsys):
    failures = []
    for case in _cases(survey):
        argv = case.values[0]
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse type errors exit 2 through the one-line parser error
            code = exc.code
        out, err = capsys.readouterr()
        if code not in (0, 2) or "unexpected" in err or "Traceback" in err or (code == 2 and len(err.strip().splitlines()) != 1):
            failures.append((case.id, code, err.strip()[:200]))
        if code == 2:
            opt = case.id.split(" ")[1].split("=")[0]
            names = {opt.lstrip("-").replace("-", "_"), opt.lstrip("-").split("-")[0]}
            if "epsilon" in opt:
                names.add("ε")
            if not any(nm in err.replace("-", "_") for nm in names) and "argument" not in err:
                failures.append((case.id, "error does not name the option", err.strip()[:200]))
    assert not failures, failures
