"""The release report (dpcore.studio.report): offline HTML, NOT DP banners on raw-data figures,
a statement that matches the release, a valid PDF, and the CLI subcommand."""
from __future__ import annotations

import json
import math
import re
import unicodedata
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.studio.report import (
    RAW_BANNER,
    bar_figure,
    build_report_html,
    figures_html,
    level_shares,
    oneway_rows,
    release_report_html,
    report_filename,
)
from dpcore.studio.report_pdf import find_chromium, html_to_pdf

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    n = 600
    return pd.DataFrame({"age": rng.integers(18, 90, n), "sex": rng.choice(["f", "m"], n),
                         "region": rng.choice(["N", "S", "E", "W"], n), "work": rng.choice(["yes", "no", None], n)})


@pytest.fixture(scope="module")
def release(table):
    dom = dpcore.infer_domain(table, numeric={"age": {"bounds": [0, 120], "bins": 6}}).declared()
    return dpcore.synthesize(table, "flat_laplace", 0.7, sets=2, seed=3, domain=dom,
                             dp_bins={"age": {"bins": 6, "lower": 0, "upper": 120, "method": "quantiles"}})


@pytest.fixture(scope="module")
def curator_html(release, table) -> str:
    return release_report_html(release, table, generated="test")


def _offline_problems(text: str) -> list[str]:
    """Every reference that would make a browser fetch something from the network."""
    bad = re.findall(r"<script[^>]*\bsrc\s*=", text, flags=re.I)
    bad += re.findall(r"<link[^>]*\bhref\s*=\s*['\"]?(?:https?:)?//", text, flags=re.I)
    bad += re.findall(r"<(?:img|iframe|source)[^>]*\bsrc\s*=\s*['\"]?(?:https?:)?//", text, flags=re.I)
    bad += re.findall(r"@import\s+url\(\s*['\"]?(?:https?:)?//", text, flags=re.I)
    # plotly.js's own bundle names map-tile and topojson hosts used only by map traces (none here):
    # look for CDN names in everything but the embedded library
    import plotly.offline as po

    rest = text.replace(po.get_plotlyjs(), "")
    bad += re.findall(r"cdn\.plot\.ly|cdnjs|jsdelivr|unpkg\.com|fonts\.googleapis", rest, flags=re.I)
    return bad


def test_html_is_self_contained(curator_html):
    assert _offline_problems(curator_html) == []
    # plotly.js itself is inside the file, and every figure is drawn by it
    assert "Plotly.newPlot" in curator_html and len(curator_html) > 1_000_000
    assert curator_html.count("<script") >= 2


def test_offline_check_catches_a_cdn_reference():
    import plotly.graph_objects as go

    cdn = go.Figure(go.Bar(x=[1], y=[1])).to_html(include_plotlyjs="cdn")
    assert _offline_problems(cdn)  # the old export would fail this test
    assert _offline_problems(figures_html([go.Figure(go.Bar(x=[1], y=[1]))], "t")) == []


def test_no_cdn_plotly_anywhere_in_the_code():
    for path in list((ROOT / "dpcore").rglob("*.py")) + list((ROOT / "pages").glob("*.py")) + [ROOT / "app.py"]:
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"include_plotlyjs\s*=\s*['\"]cdn", text), path


def _utility_section(text: str) -> str:
    return text[text.index('<section id="utility"'):]


def test_every_raw_data_figure_carries_the_banner(curator_html, release):
    util = _utility_section(curator_html)
    figures = [m.start() for m in re.finditer(r"<figure", util)]
    assert len(figures) == len(release.domain) + 1  # one bar chart per attribute and the heat map
    banner = f'<div class="raw"><div class="banner">{RAW_BANNER}</div>'
    for pos in figures:
        before = util[:pos]
        # the closest block opened before the figure is a raw block with the banner, not closed since
        assert before.rfind(banner) > before.rfind("</figure>")
    # summary, SPECKS and replicated-uniques tables too
    assert util.count(banner) == len(figures) + 3
    for words in ("S_pMSE", "SPECKS", "Replicated uniques"):
        assert words in util
    # the DP parts (statement, ledger, design) carry no banner
    assert RAW_BANNER not in curator_html[:curator_html.index('<section id="utility"')]


def test_report_without_the_raw_data_has_no_raw_figure(release):
    text = release_report_html(release, None)
    assert RAW_BANNER not in text
    assert _utility_section(text).count("<figure") == 0
    assert _offline_problems(text) == []


def test_statement_matches_epsilon_and_notion(curator_html, release, table):
    assert "ε = 0.7" in curator_html and "add/remove one record" in curator_html
    assert f"{math.exp(0.7):.3g} times" in curator_html
    assert release.dp_reason.split(" for ")[0] in curator_html
    rep = dpcore.synthesize(table, "flat_laplace", 2.5, seed=1, domain=release.domain, neighbours="replace")
    text = release_report_html(rep)
    assert "ε = 2.5" in text and "replace one record" in text and f"{math.exp(2.5):.3g} times" in text
    assert "whatever values that person" in text


def test_statement_of_an_epsilon_delta_release_names_delta_and_rho(release, table):
    """[privacy-definitions] item 2: the report says what the manifest says, (ε, δ) through ρ-zCDP, and
    that the e^ε bound may fail with probability δ; a pure release's words do not mention δ."""
    rel = dpcore.synthesize(table, "aim", 1.0, seed=2, domain=release.domain, delta=1e-9)
    text = release_report_html(rel)
    rho = rel.manifest()["privacy_definition"]["rho"]
    assert "(ε, δ)-differentially private with ε = 1 and δ = 1e-09" in text
    assert f"ρ = {rho:.4g}" in text and "at most δ = 1e-09" in text and "1 in 1,000,000,000" in text
    assert "adds (ε, δ) releases up in ρ" in text
    pure = release_report_html(release)
    assert "δ" not in pure.split("What this means")[1].split("Formally")[0]
    assert "the guarantees add up" in pure


def test_not_dp_release_says_so(table):
    rel = dpcore.synthesize(table, "flat_laplace", 1.0, seed=1,
                            domain=dpcore.infer_domain(table, numeric={"age": {"bounds": [0, 120], "bins": 6}}))
    text = release_report_html(rel)
    assert not rel.dp
    assert "NOT differentially private" in text and "is differentially private with" not in text


def test_dp_derived_edges_are_marked(curator_html):
    assert "DP-derived: exponential-mechanism quantiles" in curator_html


def test_ledger_chart_lists_every_charge(curator_html, release):
    ledger = curator_html[curator_html.index('<section id="ledger"'):curator_html.index('<section id="design"')]
    for _, c in release.ledger.charges():
        assert c.label in ledger
    assert "Plotly.newPlot" in ledger


@pytest.mark.skipif(find_chromium() is None, reason="the PDF needs Chromium (make chromium installs it)")
def test_pdf_is_valid_with_the_expected_pages(curator_html, tmp_path, release):
    pypdf = pytest.importorskip("pypdf")
    out = html_to_pdf(curator_html, tmp_path / "r.pdf")
    assert out.read_bytes()[:5] == b"%PDF-"
    reader = pypdf.PdfReader(str(out))
    pages = [p.extract_text() or "" for p in reader.pages]
    # four sections, each starting on a new page: statement, ledger, design, utility (+ its charts)
    assert len(pages) >= 4
    assert "Privacy statement" in pages[0] and "= 0.7" in pages[0]
    assert any("Privacy budget ledger" in p for p in pages[1:])
    assert any("Method and design" in p for p in pages[1:])
    flat = [re.sub(r"\s+", " ", unicodedata.normalize("NFKC", p)) for p in pages]  # "ﬁ" ligatures read as "fi"
    # the header and the footer on EVERY printed page, besides the banners of the figures
    mark = "CURATOR-ONLY — NOT DP: this report holds figures computed from the raw data"
    assert all(p.count(mark) >= 2 for p in flat), [p.count(mark) for p in flat]


@pytest.mark.skipif(find_chromium() is None, reason="the PDF needs Chromium (make chromium installs it)")
def test_publishable_pdf_has_no_curator_only_mark(release, tmp_path):
    pypdf = pytest.importorskip("pypdf")
    out = html_to_pdf(release_report_html(release, None, generated="test"), tmp_path / "p.pdf")
    pages = [p.extract_text() or "" for p in pypdf.PdfReader(str(out)).pages]
    assert len(pages) >= 4 and not any("CURATOR-ONLY" in p for p in pages)


def test_curator_only_report_is_marked_and_the_publishable_one_is_not(curator_html, release):
    assert "<title>CURATOR-ONLY" in curator_html and "<h1>CURATOR-ONLY" in curator_html
    assert (curator_html.count('<div class="curator-mark top"')
            == curator_html.count('<div class="curator-mark bottom"') == 1)
    public = release_report_html(release, None, generated="test")
    assert "CURATOR-ONLY" not in public and "curator-mark" not in public.split("</style>")[1]
    assert report_filename(False) == "release_report.html"
    assert report_filename(True, "pdf") == "release_report_CURATOR-ONLY_NOT_DP.pdf"


def test_cli_refuses_a_curator_only_report_under_a_public_name(tmp_path, table, capsys):
    from dpcore.cli import main

    src = tmp_path / "t.csv"
    table.to_csv(src, index=False)
    for flag in ("--html", "--pdf"):
        assert main(["report", str(tmp_path), "--original", str(src), flag, str(tmp_path / f"r.{flag[2:]}")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and flag in err and "CURATOR-ONLY" in err


def test_pdf_without_chromium_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("DPCORE_CHROMIUM", str(tmp_path / "no-such-browser"))
    with pytest.raises(dpcore.ResourceError, match="needs Chromium"):
        html_to_pdf("<html></html>", tmp_path / "x.pdf")


def test_cli_report_from_a_release_folder(tmp_path, table, capsys):
    from dpcore.cli.commands import main

    src = tmp_path / "t.csv"
    table.to_csv(src, index=False)
    dom = dpcore.infer_domain(table, numeric={"age": {"bounds": [0, 120], "bins": 6}}).declared()
    (tmp_path / "d.json").write_text(dom.to_json())
    out = tmp_path / "rel"
    assert main(["synth", str(src), "--out", str(out), "--method", "flat_laplace", "--epsilon", "1.5",
                 "--domain", str(tmp_path / "d.json"), "--sets", "2", "--seed", "2"]) == 0
    assert main(["report", str(out), "--original", str(src)]) == 0
    assert not (out / "report.html").exists()  # a curator-only report is never written under the public name
    text = (out / "report_CURATOR-ONLY_NOT_DP.html").read_text(encoding="utf-8")
    assert "ε = 1.5" in text and RAW_BANNER in text and _offline_problems(text) == []
    assert "<title>CURATOR-ONLY" in text
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["epsilon"] == 1.5
    assert main(["report", str(out), "--html", str(tmp_path / "pub.html")]) == 0
    assert RAW_BANNER not in (tmp_path / "pub.html").read_text(encoding="utf-8")
    capsys.readouterr()
    assert main(["report", str(tmp_path / "nothing-here")]) == 2
    err = capsys.readouterr().err
    assert "manifest.json" in err and err.count("\n") == 1


def test_report_needs_sets(release):
    with pytest.raises(dpcore.InputError, match="synthetic sets"):
        build_report_html(release.manifest(), [])


def test_one_way_shares_count_bins_and_missing_values_by_the_domain():
    """[typed-contracts] item 5: the one-way shares are computed once, here; the report's bars and the
    Release page's one-way charts both read them."""
    frame = pd.DataFrame({"age": [5.0, 15.0, 25.0, 35.0, None], "sex": ["f", "m", "m", "m", "f"]})
    dom = dpcore.infer_domain(frame, numeric={"age": [0, 20, 40]})
    age = dom["age"]
    assert list(age.labels)[-1] == "NA"
    shares = level_shares(age, [frame["age"], frame["age"].iloc[:2]])
    assert shares.shape == (2, age.size)
    np.testing.assert_allclose(shares[0], [40.0, 40.0, 20.0])  # two per bin, the missing one in NA
    np.testing.assert_allclose(shares[1], [100.0, 0.0, 0.0])
    assert level_shares(dom["sex"], []).shape == (0, 2)
    rows = oneway_rows(dom["sex"], {"original": [frame["sex"]], "synthetic": [frame["sex"], frame["sex"].iloc[1:4]]})
    assert list(rows.columns) == ["level", "source", "percent", "lo", "hi"]
    syn_f = rows[(rows["source"] == "synthetic") & (rows["level"] == "f")].iloc[0]
    assert (syn_f["percent"], syn_f["lo"], syn_f["hi"]) == (20.0, 0.0, 40.0)
    assert rows[rows["source"] == "original"]["percent"].tolist() == [40.0, 60.0]


def test_the_report_bars_are_the_one_way_shares(release, table):
    attr = release.domain["region"]
    fig = bar_figure(attr, table["region"], [s["region"] for s in release.sets])
    original, synthetic = fig.data
    np.testing.assert_allclose(original.y, level_shares(attr, [table["region"]])[0])
    np.testing.assert_allclose(synthetic.y, level_shares(attr, [s["region"] for s in release.sets]).mean(axis=0))


def _figure_y(spec: dict, title: str) -> dict[str, list[float]]:
    """Each trace's y values of the figure with this title in a Streamlit chart's spec (a typed array
    decoded)."""
    import base64

    assert spec["layout"]["title"]["text"] == title
    out = {}
    for trace in spec["data"]:
        y = trace["y"]
        if isinstance(y, dict):
            y = np.frombuffer(base64.b64decode(y["bdata"]), dtype=np.dtype(y["dtype"])).tolist()
        out[trace["name"]] = y
    return out


def test_release_page_builds_the_report():
    pytest.importorskip("streamlit.testing.v1")
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.switch_page("pages/1_data.py")
    at.run()
    next(b for b in at.button if b.label.startswith("Confirm")).click()
    at.run()
    at.session_state["cfg"]["comparators"] = []
    at.session_state["cfg"]["release_method"] = "flat_laplace"
    at.session_state["cfg"]["m"] = 2
    at.switch_page("pages/4_release.py")
    at.run()
    next(b for b in at.button if b.label.startswith("Release (spends")).click()
    at.run()
    assert not at.exception
    # the one-way charts draw dpcore.studio.report's one-way shares (computed once, for the report too)
    rel = at.session_state["release"]
    attr = rel["main"].domain.attributes[0]
    charts = {json.loads(c.proto.spec)["layout"]["title"]["text"]: json.loads(c.proto.spec)
              for c in at.get("plotly_chart")}
    title = f"{attr.name}: share of records by level"
    drawn = _figure_y(charts[title], title)
    expected = oneway_rows(attr, {"original": [at.session_state["raw_df"][attr.name]],
                                  rel["label"]: [s[attr.name] for s in rel["main"].sets]})
    assert set(drawn) == {"original", rel["label"]}
    for source, y in drawn.items():
        np.testing.assert_allclose(y, expected[expected["source"] == source]["percent"])
    next(b for b in at.button if b.label == "Build the report").click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    rep = at.session_state["_report"]["html"]
    eps = float(at.session_state["cfg"]["epsilon"])
    # the default is the publishable report: no raw-data figure, no curator-only mark
    assert f"ε = {eps:g}" in rep and RAW_BANNER not in rep and "CURATOR-ONLY" not in rep
    assert _offline_problems(rep) == []
    assert at.checkbox(key="w_report_raw").value is False
    at.checkbox(key="w_report_raw").check().run()
    next(b for b in at.button if b.label == "Build the report").click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    rep = at.session_state["_report"]["html"]
    assert RAW_BANNER in rep and rep.count('class="curator-mark') == 2 and "<title>CURATOR-ONLY" in rep


def test_dp_edges_are_not_listed_as_public(curator_html):
    privacy = curator_html[:curator_html.index('<section id="ledger"')]
    assert "except the bin edges of age" in privacy


def test_inferred_numeric_edges_are_marked_not_dp(table):
    """Edges inferred from the data span its observed min and max: the design table must
    not call them declared public."""
    dom = dpcore.infer_domain(table)
    assert dom["age"].kind == "numeric" and dom.inferred
    text = release_report_html(dpcore.synthesize(table, "flat_laplace", 1.0, seed=1, domain=dom))
    rows = [r for r in re.findall(r"<tr>.*?</tr>", text, flags=re.S) if re.search(r"<td>age</td>", r)]
    assert rows and all("data&#x27;s own min and max" in r and "NOT DP" in r and "declared" not in r
                        for r in rows), rows


def _every_method_definition_and_bins():
    from dpcore.synthesizers import REGISTRY

    for name, method in REGISTRY.items():
        for definition in method.definitions:
            for dp_bins in (False, True):
                bins = "dpbins" if dp_bins else "edges"
                yield pytest.param(name, definition, dp_bins, id=f"{name}-{definition}-{bins}")


@pytest.mark.parametrize("method, definition, dp_bins", list(_every_method_definition_and_bins()))
def test_the_published_report_builds_for_every_method_definition_and_bin_source(table, method, definition, dp_bins):
    """Every release the registry can make, pure ε or (ε, δ), with declared or DP quantile edges, gets its
    report; the DP edges' cost is written in the release's own unit (ε, or ρ under zCDP)."""
    dom = dpcore.infer_domain(table, numeric={"age": {"bounds": [0, 120], "bins": 4}}).declared()
    rel = dpcore.synthesize(table, method, 1.0, sets=1, seed=5, domain=dom,
                            delta=1e-9 if definition == "zcdp" else None,
                            dp_bins=({"age": {"bins": 4, "lower": 0, "upper": 120, "method": "quantiles"}}
                                     if dp_bins else None))
    text = release_report_html(rel, None, generated="test")
    assert "CURATOR-ONLY" not in text
    if dp_bins:
        unit = "ρ" if definition == "zcdp" else "ε"
        assert re.search(f"DP-derived: exponential-mechanism quantiles, {unit} = [0-9.e-]+", text)
    else:
        assert "DP-derived" not in text


def test_report_tables_read_as_words_not_python_or_json(table):
    """No raw None, False/True, E-notation or JSON in the report's tables (options, ledger, domain)."""
    dom = dpcore.infer_domain(table, numeric={"age": {"bounds": [0, 120], "bins": 4}}).declared()
    rel = dpcore.synthesize(table, "aim", 1.0, sets=1, seed=5, domain=dom, delta=1e-9)
    text = release_report_html(rel, None, generated="test")
    cells = re.findall(r"<td>(.*?)</td>", text)
    assert cells
    for bad in ("None", "False", "True", "nan"):
        assert bad not in cells, bad
    assert not [c for c in cells if re.fullmatch(r"-?[0-9.]+[eE]-0?[1-5]", c)], "small numbers written out"
    assert not [c for c in cells if c.startswith(("{", "[", "&quot;"))], "no raw JSON"
