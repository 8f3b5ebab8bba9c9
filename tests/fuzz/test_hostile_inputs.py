"""The hostile-input corpus of tests/fuzz/hostile.py through the CLI, the API and the app.

Every case ends in valid output or a one-line error naming what is wrong, within
TIME_BOUND_S: no internal error ("unexpected ..."), no traceback, and no silently
altered value: every value of every synthetic set is a level (written exactly as in
the input) or inside a bin of the release's domain.
"""
from __future__ import annotations

import contextlib
import json
import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.cli.commands import main
from dpcore.data.domain import decode_text
from dpcore.data.io import read_table
from tests.fuzz import hostile

ROOT = Path(__file__).resolve().parents[2]
TIME_BOUND_S = 20.0
FILES = hostile.table_files()
DOMAINS = hostile.domain_files()
OPTION_CASES = [(opt, v) for opt, (vals, _) in hostile.SYNTH_OPTIONS.items() for v in vals]
API_CASES = [(k, v) for k, vals in hostile.API_ARGUMENTS.items() for v in vals]
APP_UPLOADS = sorted(n for n in FILES if n.startswith(("values_", "enc_", "comment_", "col_", "header_", "size_one",
                                                      "junk_", "quotes_unclosed", "mixed_")))[::3] + [
    "delim_semicolon_lf.csv", "delim_tab_crlf.csv", "delim_pipe_bom.csv"]
APP_DOMAINS = ["ok.json", "source_0.json", "attr0_na_0.json", "attr0_levels_0.json", "shape_deep_list.json",
               "enc_utf16.json", "enc_binary.json", "shape_not_json.json"]


def test_the_corpus_is_large_enough():
    counts = {"tables": len(FILES), "domains": len(DOMAINS), "cli options": len(OPTION_CASES),
              "numeric specs": len(hostile.NUMERIC_SPECS), "api": len(API_CASES),
              "app": len(APP_UPLOADS) + len(APP_DOMAINS)}
    assert sum(counts.values()) >= 300 and counts["app"] >= 20, counts


# --------------------------------------------------------------------------- checks


def run_cli(argv, capsys) -> tuple[int, str, str]:
    t = time.perf_counter()
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:  # --help and friends
        code = exc.code
    out, err = capsys.readouterr()
    assert time.perf_counter() - t < TIME_BOUND_S, (argv, "too slow")
    return code, out, err


def assert_clean(code, err, case) -> None:
    assert code in (0, 2), (case, code, err)
    assert "unexpected" not in err and "Traceback" not in err, (case, err)
    if code == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and len(lines[0]) < 700, (case, err)


def _written_levels(attr: dict) -> set[str]:
    """How a categorical level of the manifest's domain is written to a synthetic CSV."""
    dtype = attr.get("dtype", "object")
    out = set()
    for v in attr["levels"]:
        if isinstance(v, bool):
            out.add(str(v))
        elif dtype.startswith("float"):
            out.add(repr(float(v)))  # also a non-finite level, stored by its name ("inf")
        else:
            out.add(str(v))
    return out


def assert_release_exact(source: pd.DataFrame, out_dir: Path, case, domain_declared_by_file: bool = False) -> None:
    """The manifest is strict JSON; every synthetic value is a domain level written exactly as
    in the input (text columns), or a number inside the domain's bins."""
    def no_constants(c):
        raise AssertionError((case, f"manifest.json holds the non-JSON token {c}"))

    manifest = json.loads((out_dir / "manifest.json").read_text(encoding="utf-8"), parse_constant=no_constants)
    attrs = {a["name"]: a for a in manifest["domain"]["attributes"]}
    sets = sorted(out_dir.glob("synthetic_*.csv"))
    assert sets, case
    for path in sets:
        syn = pd.read_csv(path, dtype=str, keep_default_na=False)  # the written text, uninterpreted
        assert list(syn.columns) == list(attrs), (case, list(syn.columns))
        for name, a in attrs.items():
            got = set(syn[name])
            missing_ok = {""} if a["na"] else set()
            if a["type"] == "numeric":
                vals = [float(x) for x in got - missing_ok]
                assert all(a["edges"][0] <= x <= a["edges"][-1] for x in vals), (case, name)
                continue
            assert got <= _written_levels(a) | missing_ok, (case, name, sorted(got - _written_levels(a))[:5])
            col = source[name] if name in source.columns else None
            if col is not None and col.dtype == object and not domain_declared_by_file:
                # an inferred domain: the text levels are exactly the input's fields
                written = {str(v) for v in col.dropna()}
                assert got - missing_ok <= written, (case, name, sorted(got - written)[:5])


# ------------------------------------------------------------------------- table files


@pytest.mark.parametrize("name", sorted(FILES))
def test_hostile_table_files_through_the_cli(name, tmp_path, capsys):
    src = tmp_path / name
    src.write_bytes(FILES[name])
    out = tmp_path / "out"
    code, stdout, err = run_cli(["synth", src, "--out", out, "--epsilon", 2, "--seed", 1, "--neighbours", "replace",
                                 "--method", "flat_laplace", "--prior", 0], capsys)
    assert_clean(code, err, name)
    if code == 2:
        # the message names the file, a column or the remedy's subject
        assert any(k in err for k in (name, "column", "table", "domain", "delimiter")), (name, err)
        return
    assert "DP: NO" in stdout  # an inferred domain is never labelled DP
    assert_release_exact(read_table(src), out, name)


@pytest.mark.parametrize("name", sorted(n for n in FILES if n.startswith(("delim_", "values_", "enc_", "col_"))))
def test_readable_files_give_an_inferred_domain_that_round_trips(name, tmp_path, capsys):
    """`domain` then `synth --domain` on the file written: the inferred file stays NOT DP; once the
    curator sets "source": "declared" it is DP, and the values still round-trip exactly."""
    src = tmp_path / name
    src.write_bytes(FILES[name])
    dom_path = tmp_path / "domain.json"
    code, _, err = run_cli(["domain", src, "--out", dom_path], capsys)
    assert_clean(code, err, name)
    if code == 2:
        return
    code, stdout, err = run_cli(["synth", src, "--out", tmp_path / "a", "--domain", dom_path, "--seed", 2,
                                 "--method", "flat_laplace"], capsys)
    assert_clean(code, err, name)
    if code == 2:
        return
    assert "DP: NO" in stdout, (name, "an inferred domain passed back must stay NOT DP")
    d = json.loads(dom_path.read_text(encoding="utf-8"))
    d["source"] = "declared"
    from_data = [a for a in d["attributes"] if a.get("origin") == "data_range"]
    if from_data:  # declaring the file is not enough: bins over the data's own range are never public
        dom_path.write_text(json.dumps(d), encoding="utf-8")
        code, stdout, err = run_cli(["synth", src, "--out", tmp_path / "c", "--domain", dom_path, "--seed", 2,
                                     "--method", "flat_laplace"], capsys)
        assert code == 0 and "DP: NO" in stdout and f"'{from_data[0]['name']}'" in stdout, (name, stdout, err)
        for a in from_data:  # the curator gives public bounds instead (wide round ones)
            wide = 2.0 ** 53 if a["dtype"].startswith(("int", "uint")) else 1e300  # whole numbers stay exact
            a.update(edges=[-wide, 0.0, wide], origin="declared")
    dom_path.write_text(json.dumps(d), encoding="utf-8")
    code, stdout, err = run_cli(["synth", src, "--out", tmp_path / "b", "--domain", dom_path, "--seed", 2,
                                 "--method", "flat_laplace"], capsys)
    assert code == 0 and "DP: yes" in stdout, (name, err)
    assert_release_exact(read_table(src), tmp_path / "b", name)


# ------------------------------------------------------------------------- domain files


@pytest.fixture(scope="module")
def good_csv(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("fuzz") / "good.csv"
    p.write_text(hostile.csv_text(rows=hostile.ROWS * 4))
    return p


@pytest.mark.parametrize("name", sorted(DOMAINS))
def test_hostile_domain_files_through_the_cli(name, good_csv, tmp_path, capsys):
    dom = tmp_path / name
    dom.write_bytes(DOMAINS[name])
    out = tmp_path / "out"
    code, stdout, err = run_cli(["synth", good_csv, "--out", out, "--domain", dom, "--seed", 5, "--layers", 1], capsys)
    assert_clean(code, err, name)
    if code == 2:
        assert "domain" in err or "attribute" in err or "column" in err, (name, err)
        return
    d = json.loads(decode_text(dom.read_bytes(), name))
    declared = d.get("source", "declared")
    # bin edges read from the data (or of unstated origin) keep it NOT DP whatever "source" says
    public_edges = all(a.get("origin") in ("declared", "public_bounds", "dp_quantiles")
                       for a in d["attributes"] if a.get("type") == "numeric")
    assert ("DP: yes" in stdout) == (str(declared).strip().lower() == "declared" and public_edges), \
        (name, declared, stdout)
    if not public_edges:
        assert "DP: NO" in stdout and "'age'" in stdout, (name, stdout)
    assert_release_exact(read_table(good_csv), out, name, domain_declared_by_file=True)


@pytest.mark.parametrize("name", ["ok.json", "source_0.json", "attr0_na_0.json", "shape_deep_list.json",
                                  "enc_utf16.json", "attr1_edges_10.json"])
def test_hostile_domain_files_through_the_api(name, good_csv, tmp_path):
    dom = tmp_path / name
    dom.write_bytes(DOMAINS[name])
    df = read_table(good_csv)
    try:
        rel = dpcore.synthesize(df, "steps", 1.0, seed=1, domain=str(dom), layers=1)
    except dpcore.DPCoreError as exc:
        assert len(str(exc).splitlines()) == 1
        return
    assert rel.dp == (name in ("ok.json", "enc_utf16.json"))


# ------------------------------------------------------------------------- CLI options


@pytest.mark.parametrize("opt,value", OPTION_CASES, ids=[f"{o}={v!r}" for o, v in OPTION_CASES])
def test_hostile_option_values_through_the_cli(opt, value, good_csv, tmp_path, capsys):
    extra = hostile.SYNTH_OPTIONS[opt][1]
    out = tmp_path / "o"
    code, _, err = run_cli(["synth", good_csv, "--out", out, "--seed", 3, *extra, f"{opt}={value}"]
                           if opt != "--seed" else ["synth", good_csv, "--out", out, *extra, f"{opt}={value}"], capsys)
    assert_clean(code, err, (opt, value))
    if code == 2:
        stem = opt.lstrip("-").replace("-", "_")
        named = {stem, stem.replace("_", " "), opt, "ε" if stem == "epsilon" else stem,
                 "L " if stem == "layers" else stem, "m " if stem == "sets" else stem,
                 "tree" if stem in ("order", "select") else stem, stem.rstrip("s")}
        assert any(k in err for k in named) or (value and value in err), (opt, value, err)
    else:
        assert_release_exact(read_table(good_csv), out, (opt, value))


@pytest.mark.parametrize("spec", hostile.NUMERIC_SPECS)
def test_hostile_numeric_specs_of_the_domain_command(spec, good_csv, tmp_path, capsys):
    code, _, err = run_cli(["domain", good_csv, "--out", tmp_path / "d.json", "--numeric", spec], capsys)
    assert_clean(code, err, spec)
    if code == 2:
        assert "--numeric" in err or "age" in err or "nope" in err, (spec, err)


def _out_paths(tmp: Path) -> dict[str, Path]:
    (tmp / "file.csv").write_text("x")
    (tmp / "ro").mkdir()
    (tmp / "ro").chmod(0o500)
    return {"inside_a_file": tmp / "file.csv" / "x", "is_a_file": tmp / "file.csv",
            "deep_inside_a_file": tmp / "file.csv" / "a" / "b", "read_only": tmp / "ro" / "out"}


@pytest.mark.parametrize("case", ["inside_a_file", "is_a_file", "deep_inside_a_file", "read_only"])
def test_unwritable_out_paths_are_one_line_errors_before_any_release(case, good_csv, tmp_path, capsys):
    import os

    out = _out_paths(tmp_path)[case]
    if case == "read_only" and os.geteuid() == 0:
        out = Path("/proc/dpcore-fuzz/out")  # root writes anywhere: a path no one can create
    code, stdout, err = run_cli(["synth", good_csv, "--out", out], capsys)
    assert code == 2 and "--out" in err and "ε spent" not in stdout, err
    assert_clean(code, err, case)


@pytest.mark.parametrize("argv", [
    ["synth", "/nonexistent/x.csv", "--out", "o"],
    ["synth", "{tmp}", "--out", "o"],
    ["synth", "{good}", "--out", "{tmp}/o", "--domain", "/nonexistent/d.json"],
    ["synth", "{good}", "--out", "{tmp}/o", "--domain", "{tmp}"],
    ["preview", "{good}", "--layers", "0"],
    ["preview", "{good}", "--epsilon", "nan"],
    ["synth", "{good}"],
    ["bogus-command"],
    [],
    ["evaluate", "{good}", "/nonexistent/s.csv"],
    ["evaluate", "{good}", "{good}", "--measures", "bogus"],
    ["sweep", "{good}", "--epsilons", "a,b", "--out", "{tmp}/r.csv"],
    ["synth", "{good}", "--out", "{tmp}/o", "--private-manifest", "{good}/p.json"],
    ["synth", "{good}", "--out", "{tmp}/o", "--private-manifest", "{tmp}"],
    ["domain", "{good}", "--out", "{good}/d.json"],
    ["domain", "{good}", "--out", "{tmp}"],
], ids=lambda a: " ".join(a)[:50] or "empty")
def test_hostile_paths_and_commands(argv, good_csv, tmp_path, capsys):
    argv = [a.format(tmp=tmp_path, good=good_csv) for a in argv]
    code, _, err = run_cli(argv, capsys)
    assert code == 2, (argv, err)
    assert_clean(code, err, argv)


def test_evaluate_on_5000_columns_is_refused_naming_the_limit(tmp_path, capsys):
    wide = tmp_path / "wide.csv"
    wide.write_text(hostile.csv_text(header=[f"c{i}" for i in range(5000)], rows=[["1"] * 5000, ["2"] * 5000]))
    code, _, err = run_cli(["evaluate", wide, wide], capsys)
    assert_clean(code, err, "evaluate wide")
    assert code == 2 and "1000" in err and "column" in err, err


@pytest.mark.parametrize("argv,needle", [
    (["synth", "{bad}", "--out", "{tmp}/o"], "line 1"),
    (["synth", "{good}", "--out", "{tmp}/o", "--sets", "1000000"], "sets"),
])
def test_a_few_cases_through_a_real_subprocess(argv, needle, good_csv, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"# comment\n" + good_csv.read_bytes())
    argv = [a.format(tmp=tmp_path, good=good_csv, bad=bad) for a in argv]
    proc = subprocess.run([sys.executable, "-m", "dpcore", *argv], capture_output=True, text=True, cwd=ROOT,
                          timeout=TIME_BOUND_S * 3)
    assert proc.returncode == 2, proc.stderr
    assert_clean(proc.returncode, proc.stderr, argv)
    assert needle in proc.stderr, proc.stderr


# ------------------------------------------------------------------------- API arguments


_WHOLE = {"sets", "seed", "layers", "max_records", "max_cells"}
_REAL = {"epsilon", "r", "count_share"}


def _acceptable(key, value) -> bool:
    """Whether accepting ``value`` for ``key`` is right: no bool, no string for numbers,
    no fraction for counts (None means the default where there is one)."""
    if isinstance(value, (bool, np.bool_)):
        return False
    if key in _WHOLE | _REAL:
        if value is None:
            return key in ("seed", "layers", "r", "max_cells", "max_records", "count_share")
        if not isinstance(value, (int, float, np.integer, np.floating)):
            return False
        if key in _WHOLE and not float(value).is_integer():
            return False
        return math.isfinite(float(value))
    return True


@pytest.mark.parametrize("key,value", API_CASES, ids=[f"{k}={v!r}"[:50] for k, v in API_CASES])
def test_hostile_api_arguments(key, value):
    df = read_table_bytes(hostile.csv_text(rows=hostile.ROWS * 3))
    kw = {"epsilon": 1.0, "seed": 4, key: value}
    rel = hostile.release_or_one_line_error(df, TIME_BOUND_S, "steps", **kw)
    if rel is None:
        return
    assert _acceptable(key, value), (key, value, "accepted a value of the wrong type")
    assert math.isclose(rel.ledger.epsilon, rel.epsilon, abs_tol=1e-9)
    json.loads(rel.manifest_json(), parse_constant=lambda c: pytest.fail(f"manifest holds {c}"))
    for s in rel.sets:
        for col in ("sex", "region"):
            assert set(s[col].dropna()) <= set(df[col]), (key, value, col)


def read_table_bytes(text: str) -> pd.DataFrame:
    from dpcore.data.io import read_csv_bytes

    return read_csv_bytes(text.encode(), "t.csv")


# ------------------------------------------------------------------------------ the app


class _Upload:
    """What st.file_uploader returns: the bytes and the file's name."""

    def __init__(self, name: str, data: bytes):
        self.name, self._data, self.file_id = name, data, f"fuzz-{name}-{len(data)}"

    def getvalue(self) -> bytes:
        return self._data


@pytest.fixture(scope="module")
def app():
    """One app session whose file uploaders hand over the next queued file (AppTest
    cannot drive st.file_uploader); the page's own upload callbacks then run."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    queued: dict[str, _Upload] = {}
    real = st.file_uploader

    def fake_file_uploader(label, *args, key=None, on_change=None, **kwargs):
        f = queued.pop(key, None)
        if f is None:
            return st.session_state.get(f"_fuzz_{key}")
        st.session_state[f"_fuzz_{key}"] = f
        if key == "w_upload":
            st.session_state[key] = f  # the callback reads the widget's value from the session
            if on_change:
                on_change()
        return f

    st.file_uploader = fake_file_uploader
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    assert not at.exception
    at.switch_page("pages/1_data.py")
    at.run()
    try:
        yield at, queued
    finally:
        st.file_uploader = real


def _assert_page_clean(at, case) -> list[str]:
    assert not at.exception, (case, [e.value for e in at.exception])
    errors = [str(e.value) for e in at.error]
    assert not any("Something went wrong" in e or "could not be read" in e or "Traceback" in e
                   for e in errors), (case, errors)
    assert all(len(e.splitlines()) == 1 for e in errors), (case, errors)
    return errors


@pytest.mark.parametrize("name", APP_UPLOADS)
def test_hostile_uploads_in_the_app(app, name):
    at, queued = app
    queued["w_upload"] = _Upload(name, FILES[name])
    at.session_state["_fuzz_w_upload"] = None
    at.run()
    errors = _assert_page_clean(at, name)
    if at.session_state["data_name"] != f"upload: {name}":
        assert at.session_state["upload_error"] in errors, (name, "refused without a message")
        return
    df = at.session_state["raw_df"]
    sep = df.attrs.get("delimiter", "comma")
    assert sep == "comma" or any(f"{sep}-separated" in str(c.value) for c in at.caption), (name, sep)
    for col in df.columns:  # the table the app holds is the file, exactly as written
        if df[col].dtype == object:
            assert set(df[col].dropna()) <= set(read_table_of(name)[col].dropna())
    for page in ("pages/2_design.py", "pages/3_preview.py", "pages/1_data.py"):
        at.switch_page(page)
        at.run()
        _assert_page_clean(at, (name, page))


def read_table_of(name: str) -> pd.DataFrame:
    from pages.components import state

    return state.read_upload(FILES[name], name)


@pytest.mark.parametrize("name", APP_DOMAINS)
def test_hostile_domain_uploads_in_the_app(app, name):
    at, queued = app
    at.session_state["raw_df"] = read_table_bytes(hostile.csv_text(rows=hostile.ROWS * 3))
    at.session_state["data_key"] = "fuzz-domain"
    at.session_state["domain_override"] = None
    queued["w_domain_upload"] = _Upload(name, DOMAINS[name])
    at.session_state["_fuzz_w_domain_upload"] = None
    at.run()
    with contextlib.suppress(Exception):
        at.run()  # the upload handler reruns the page
    errors = _assert_page_clean(at, name)
    if name in ("ok.json", "enc_utf16.json"):
        assert at.session_state["domain_confirmed"] is True
    elif name == "source_0.json":  # an inferred file uploaded back still needs confirming
        assert at.session_state["domain_confirmed"] is False
    else:
        assert any("domain" in e for e in errors), (name, errors)
