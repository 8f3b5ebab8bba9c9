"""The command line: every bad input gives exit status 2 and one line naming the problem."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpcore.cli.commands import main
from dpcore.data import domain as dpcore_domain
from dpcore.data.datasets import load_sd2011, sd2011_extract

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def s7():
    return sd2011_extract(load_sd2011(), 7)


@pytest.fixture()
def small_csv(tmp_path):
    rng = np.random.default_rng(0)
    df = pd.DataFrame({
        "a": rng.choice(["x", "y"], 200),
        "b": rng.choice(["p", "q", "r"], 200),
        "c": rng.integers(0, 4, 200),
    })
    path = tmp_path / "small.csv"
    df.to_csv(path, index=False)
    return path


def run(argv, capsys):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def assert_clean_error(code, err, *needles):
    assert code == 2
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("error:")
    assert "Traceback" not in err
    for n in needles:
        assert n.lower() in lines[0].lower(), (n, lines[0])


def test_synth_writes_sets_and_manifest(small_csv, tmp_path, capsys):
    out = tmp_path / "out"
    code, stdout, _ = run(["synth", small_csv, "--out", out, "--sets", 3, "--seed", 1, "--layers", 2], capsys)
    assert code == 0
    files = sorted(p.name for p in out.iterdir())
    assert files == ["manifest.json", "synthetic_1.csv", "synthetic_2.csv", "synthetic_3.csv"]
    man = json.loads((out / "manifest.json").read_text())
    assert set(man) >= {"method", "options", "domain", "ledger", "tree", "dp", "dp_reason"}
    assert man["ledger"]["epsilon_total"] == pytest.approx(1.0, abs=1e-12)
    assert "seed" not in json.dumps(man)
    assert man["dp"] is False and "inferred" in man["dp_reason"]
    for i in (1, 2, 3):
        syn = pd.read_csv(out / f"synthetic_{i}.csv")
        assert list(syn.columns) == ["a", "b", "c"] and len(syn) == man["record_count"]["value"]
        assert set(syn["c"]) <= {0, 1, 2, 3}


def test_declared_domain_and_order_give_dp_release(small_csv, tmp_path, capsys):
    dom = tmp_path / "domain.json"
    assert run(["domain", small_csv, "--out", dom], capsys)[0] == 0
    # [privacy-audit]: the inferred file passed straight back stays inferred: NOT DP
    code, stdout, _ = run(["synth", small_csv, "--out", tmp_path / "x", "--domain", dom, "--order", "a;b,c"], capsys)
    assert code == 0 and "DP: NO" in stdout and "inferred" in stdout
    assert json.loads((tmp_path / "x" / "manifest.json").read_text())["dp"] is False
    # the curator's review ends by marking the file declared
    d = json.loads(dom.read_text())
    d["source"] = "declared"
    dom.write_text(json.dumps(d))
    out = tmp_path / "o"
    code, stdout, _ = run(["synth", small_csv, "--out", out, "--domain", dom, "--order", "a;b,c", "--seed", 2], capsys)
    assert code == 0 and "DP: yes" in stdout
    man = json.loads((out / "manifest.json").read_text())
    assert man["dp"] is True
    assert man["options"]["order"] == [["a"], ["b", "c"]]


def test_private_manifest_has_seed(small_csv, tmp_path, capsys):
    priv = tmp_path / "private.json"
    code, _, _ = run(["synth", small_csv, "--out", tmp_path / "o", "--seed", 42, "--private-manifest", priv], capsys)
    assert code == 0
    assert json.loads(priv.read_text())["seed"] == 42
    assert "seed" not in (tmp_path / "o" / "manifest.json").read_text()


def test_parquet_input_matches_csv(small_csv, tmp_path, capsys):
    pq = tmp_path / "small.parquet"
    pd.read_csv(small_csv).to_parquet(pq)
    for src, name in ((small_csv, "c"), (pq, "p")):
        assert run(["synth", src, "--out", tmp_path / name, "--seed", 7], capsys)[0] == 0
    a = pd.read_csv(tmp_path / "c" / "synthetic_1.csv")
    b = pd.read_csv(tmp_path / "p" / "synthetic_1.csv")
    pd.testing.assert_frame_equal(a, b)


def test_preview_json_spends_nothing(small_csv, capsys):
    code, stdout, _ = run(["preview", small_csv, "--layers", 2, "--json"], capsys)
    assert code == 0
    out = json.loads(stdout)
    assert [r["layer"] for r in out["layers"]] == [1, 2, 3]
    assert out["selection"] and abs(sum(r["probability"] for r in out["selection"] if r["layer"] == 0) - 1) < 1e-9
    assert "not for release" in out["note"]


@pytest.mark.parametrize("content, needle", [
    (b"", "empty"),
    (b"a,b,c\n", "no rows"),
    (b"a,b,c\n1,2,3\n4,5,6,7\n", "ragged"),
    (b"a,b,a\n1,2,3\n4,5,6\n", "duplicate column"),
])
def test_malformed_files(tmp_path, capsys, content, needle):
    p = tmp_path / "bad.csv"
    p.write_bytes(content)
    code, _, err = run(["synth", p, "--out", tmp_path / "o"], capsys)
    assert_clean_error(code, err, needle)
    assert not (tmp_path / "o").exists()


def test_bad_columns(tmp_path, capsys):
    rng = np.random.default_rng(1)
    cases = {
        "single level": (pd.DataFrame({"a": ["x"] * 50, "b": rng.choice(["p", "q"], 50)}), ["'a'", "single level"]),
        "identifier": (pd.DataFrame({"id": [f"P{i:05d}" for i in range(40_000)], "b": rng.choice(["p", "q"], 40_000)}),
                       ["'id'", "identifier"]),
        "all missing": (pd.DataFrame({"a": [np.nan] * 30, "b": rng.choice(["p", "q"], 30)}), ["'a'", "empty"]),
    }
    for name, (df, needles) in cases.items():
        p = tmp_path / f"{name.replace(' ', '_')}.csv"
        df.to_csv(p, index=False)
        code, _, err = run(["synth", p, "--out", tmp_path / "o"], capsys)
        assert_clean_error(code, err, *needles)


def test_wide_cross_tab_releases_sparsely_and_refuses_inexact_noise(tmp_path, capsys):
    """1.1e13 cells: the sparse leaves release it; noise they cannot reproduce exactly on
    a huge leaf layer is refused before allocating, naming the option that works."""
    rng = np.random.default_rng(2)
    df = pd.DataFrame({f"c{j}": rng.choice([f"l{i}" for i in range(150)], 2000) for j in range(6)})
    p = tmp_path / "wide.csv"
    df.to_csv(p, index=False)
    for method in ("steps", "flat_laplace"):
        code, _, err = run(["synth", p, "--out", tmp_path / method, "--method", method], capsys)
        assert code == 0, err
        code, _, err = run(["synth", p, "--out", tmp_path / "o", "--method", method, "--noise", "laplace"], capsys)
        assert_clean_error(code, err, "cells", "noise='discrete_laplace'")


@pytest.mark.parametrize("args, needles", [
    (["--epsilon", "0"], ["epsilon"]),
    (["--epsilon", "-1"], ["epsilon"]),
    (["--epsilon", "nan"], ["epsilon"]),
    (["--epsilon", "inf"], ["epsilon"]),
    (["--layers", "0"], ["layers", "1 to 3"]),
    (["--layers", "4"], ["layers", "1 to 3"]),
    (["--r", "1"], ["r"]),
    (["--r", "-0.1"], ["r"]),
    (["--allocation", "0.2,0.2,0.2"], ["sum to 1"]),
    (["--allocation", "0.5,0.5"], ["3 weights"]),
    (["--sets", "0"], ["sets"]),
    (["--order", "a;zzz"], ["'zzz'", "not in the data"]),
    (["--order", "a;b,a"], ["'a'", "twice"]),
    (["--order", "a;b", "--layers", "3"], ["2 layers"]),
    (["--order", "a;b", "--r", "0.2"], ["r"]),
    (["--select", "best"], ["select"]),
    (["--method", "magic"], ["method"]),
    (["--consistency", "exact"], ["consistency"]),
    (["--epsilon", "abc"], ["epsilon"]),
])
def test_bad_options(small_csv, tmp_path, capsys, args, needles):
    code, _, err = run(["synth", small_csv, "--out", tmp_path / "o", *args], capsys)
    assert_clean_error(code, err, *needles)
    assert not (tmp_path / "o").exists()


def test_domain_file_must_cover_the_data(small_csv, tmp_path, capsys):
    dom = json.loads(subprocess_free_domain(small_csv, tmp_path, capsys))
    dom["attributes"][1]["levels"] = ["p", "q"]  # drops level "r", present in the data
    bad = tmp_path / "dom.json"
    bad.write_text(json.dumps(dom))
    code, _, err = run(["synth", small_csv, "--out", tmp_path / "o", "--domain", bad], capsys)
    assert_clean_error(code, err, "'b'", "'r'", "domain")
    bad.write_text("{not json")
    code, _, err = run(["synth", small_csv, "--out", tmp_path / "o", "--domain", bad], capsys)
    assert_clean_error(code, err, "json")


def subprocess_free_domain(csv, tmp_path, capsys) -> str:
    out = tmp_path / "inferred.json"
    assert run(["domain", csv, "--out", out], capsys)[0] == 0
    return out.read_text()


def test_s7_end_to_end_through_python_m(s7, tmp_path):
    """The seed's SD2011 extract S7 through the real `python -m dpcore` entry point."""
    src = tmp_path / "s7.csv"
    s7.to_csv(src, index=False)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    dom = tmp_path / "domain.json"
    subprocess.run([sys.executable, "-m", "dpcore", "domain", str(src), "--out", str(dom)], check=True, env=env,
                   capture_output=True)
    dom.write_text(dom.read_text(encoding="utf-8").replace(dpcore_domain.INFERRED, "declared"), encoding="utf-8")
    res = subprocess.run([sys.executable, "-m", "dpcore", "synth", str(src), "--out", str(tmp_path / "o"),
                          "--epsilon", "1", "--sets", "2", "--seed", "3", "--domain", str(dom)],
                         env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert "DP: yes" in res.stdout
    for i in (1, 2):
        syn = pd.read_csv(tmp_path / "o" / f"synthetic_{i}.csv", keep_default_na=False, na_values=[""])
        assert list(syn.columns) == list(s7.columns) and abs(len(syn) - len(s7)) < 400  # noisy count, scale 20
        for c in s7.columns:
            assert set(syn[c].dropna().astype(str)) <= set(s7[c].dropna().astype(str)), c
    bad = subprocess.run([sys.executable, "-m", "dpcore", "synth", str(src), "--out", str(tmp_path / "x"),
                          "--epsilon", "0"], env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("make_out", [lambda t: t / "f.csv" / "x", lambda t: t / "f.csv"])
def test_out_inside_a_file_is_refused_before_any_release(small_csv, tmp_path, capsys, make_out):
    """[privacy-audit]: `--out` inside a file ended in "unexpected NotADirectoryError" after the release ran."""
    (tmp_path / "f.csv").write_text("x\n")
    code = main(["synth", str(small_csv), "--out", str(make_out(tmp_path))])
    err = capsys.readouterr().err
    assert code == 2 and "is a file, not a folder" in err and "unexpected" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("argv_eps", [["--epsilon", "1e6"]])
def test_an_epsilon_above_ten_is_released_with_a_warning(small_csv, tmp_path, capsys, argv_eps):
    code, _, err = run(["synth", small_csv, "--out", tmp_path / "o", "--seed", 1, *argv_eps], capsys)
    assert code == 0
    assert "warning: ε = 1e+06 is above 10" in err and "in name only" in err
    code, _, err = run(["synth", small_csv, "--out", tmp_path / "p", "--seed", 1, "--epsilon", "10"], capsys)
    assert code == 0 and "in name only" not in err


def test_a_sweep_grid_with_an_epsilon_above_ten_is_warned_about(small_csv, tmp_path, capsys):
    code, _, err = run(["sweep", small_csv, "--out", tmp_path / "s.csv", "--methods", "flat_laplace",
                        "--epsilons", "1,50", "--reps", 1], capsys)
    assert "warning: ε = 50 is above 10" in err
    assert "ε = 1 is" not in err


def test_a_clean_error_exits_2_every_time_under_an_address_space_limit(tmp_path):
    """A Parquet file with a map column gets its one-line error and exit status 2, run after run, under a
    6 GB address-space limit (native thread pools torn down at exit once turned it into 134 in 1 run of 3)."""
    import resource

    import pyarrow as pa
    import pyarrow.parquet as pq

    src = tmp_path / "map.parquet"
    pq.write_table(pa.table({"a": pa.array([[("k", 1)], [("j", 2)]] * 50, type=pa.map_(pa.string(), pa.int64())),
                             "b": ["x", "y"] * 50}), src)
    limit = 6 * 1024**3

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    codes = []
    for k in range(4):
        res = subprocess.run([sys.executable, "-m", "dpcore", "synth", str(src), "--out", str(tmp_path / f"o{k}")],
                             capture_output=True, text=True, preexec_fn=cap, cwd=ROOT, timeout=300)
        codes.append(res.returncode)
        assert_clean_error(res.returncode, res.stderr, "column 'a'", "map")
    assert codes == [2] * 4
