"""The method adviser (dpcore.studio.adviser) and the glossary it links to (dpcore.studio.glossary)."""
from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.studio import adviser, glossary

ROOT = Path(__file__).resolve().parents[2]
RESULTS = (ROOT / "bench" / "RESULTS.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    """The text of the bench/RESULTS.md section whose '## ' heading starts with ``title``."""
    parts = re.split(r"^## ", RESULTS, flags=re.M)
    found = [p for p in parts if p.startswith(title)]
    assert len(found) == 1, f"bench/RESULTS.md has {len(found)} sections starting '{title}'"
    return found[0]


def _number(x: float) -> re.Pattern:
    """x as written in a table, with or without trailing zeros (5.3 matches 5.30)."""
    text = f"{x:g}"
    if "." in text:
        return re.compile(rf"(?<![\d.]){re.escape(text)}0*(?!\d)")
    return re.compile(rf"(?<![\d.]){re.escape(text)}(\.0+)?(?!\d)")


def _figure_id(m) -> str:
    return f"{m.method}-{m.table}-{m.epsilon:g}-{m.sets}" + ("" if m.delta is None else f"-delta{m.delta:g}")


@pytest.mark.parametrize("m", adviser.MEASURED, ids=_figure_id)
def test_every_figure_is_in_its_section_of_bench_results(m):
    text = _section(m.section)
    assert m.date in text, f"date {m.date} not in section {m.section}"
    for value in [m.s_pmse] + [v for v in (m.ru_pct_records, m.seconds) if v is not None]:
        assert _number(value).search(text), f"{value} not in bench/RESULTS.md section '{m.section}'"


def test_the_figure_check_can_fail():
    assert not _number(9.52).search(_section("AIM and MST under pure ε-DP"))
    assert _number(5.3).search("| 5.30 |") and not _number(5.3).search("| 15.30 |")


def _domain(levels: list[int]) -> dpcore.Domain:
    df = pd.DataFrame({f"a{i}": [f"v{j % k}" for j in range(max(levels))] for i, k in enumerate(levels)})
    return dpcore.infer_domain(df).declared()


def test_comparable_table_by_attributes_and_cells():
    s7 = dpcore.infer_domain(pd.read_csv(ROOT / "assets" / "sd2011_s7.csv")).declared()
    wide = dpcore.infer_domain(pd.read_csv(ROOT / "assets" / "cps_voter_wide.csv")).declared()
    assert adviser.comparable_table(s7).key == "s7"
    assert adviser.comparable_table(wide).key == "wide"
    assert adviser.comparable_table(_domain([3] * 11)).key == "voter"  # 11 attributes, 1.8e5 cells


def test_study_takes_the_nearest_setting_with_enough_methods():
    s7 = next(t for t in adviser.BENCH_TABLES if t.key == "s7")
    rows = adviser.study(s7, 0.5, 1)  # ε = 0.5 has only three methods: the ε = 1 study is used
    assert {r.epsilon for r in rows} == {1.0} and len(rows) >= adviser.MIN_METHODS
    assert [r.s_pmse for r in rows] == sorted(r.s_pmse for r in rows)
    wide = next(t for t in adviser.BENCH_TABLES if t.key == "wide")
    assert {(r.epsilon, r.sets) for r in adviser.study(wide, 1.0, 5)} == {(1.0, 5)}
    assert {(r.epsilon, r.sets) for r in adviser.study(wide, 1.0, 1)} == {(1.0, 1)}


def test_recommendation_is_the_best_measured_and_reads_no_data():
    s7 = dpcore.infer_domain(pd.read_csv(ROOT / "assets" / "sd2011_s7.csv")).declared()
    best = min((m for m in adviser.MEASURED if m.table == "s7" and m.epsilon == 1 and m.sets == 1),
               key=lambda m: m.s_pmse)
    assert adviser.recommend(s7, 1.0, 5) == best.method == "aim"
    wide = dpcore.infer_domain(pd.read_csv(ROOT / "assets" / "cps_voter_wide.csv")).declared()
    assert adviser.recommend(wide, 1.0, 5) == "ipf" and adviser.recommend(wide, 1.0, 1) == "aim"
    # public facts only: the function takes no records, and two tables with the same domain agree
    assert list(adviser.recommend.__code__.co_varnames[:3]) == ["domain", "epsilon", "sets"]


def test_advice_verdicts_noise_and_notes():
    df = pd.read_csv(ROOT / "assets" / "sd2011_s7.csv")
    dom = dpcore.infer_domain(df).declared()
    a = adviser.advise(dom, 1.0, 5, n=len(df), curator_only=True)
    verdicts = {m.method: m.verdict for m in a.methods}
    assert [k for k, v in verdicts.items() if v == "recommended"] == [a.recommended] == ["aim"]
    assert verdicts["flat_laplace"] == "weak" and verdicts["steps"] == "weak"  # 151.9 and 90.7 > 2 × 9.51
    assert verdicts["mst"] == "good" and verdicts["ipf"] == "good"
    assert a.curator_only and all(m.noise for m in a.methods)
    flat = a.for_method("flat_laplace")
    assert flat.swamped_counts == flat.total_counts == dom.size  # 0.034 records per cell on average
    assert any("larger errors" in n for n in a.notes)  # ε/m = 0.2 against the study's 1
    assert "bench/RESULTS.md" in " ".join(a.for_method("aim").why) and "2026-11-24" in " ".join(a.for_method("aim").why)
    # at a large ε per set the noise is smaller than the typical count for MST on S7
    big = adviser.advise(dom, 50.0, 1, n=len(df))
    assert big.for_method("mst").swamped_counts == 0
    assert any("smaller errors" in n for n in big.notes)
    # no n: verdicts from the measurements only, no noise rows
    bare = adviser.advise(dom, 1.0, 1)
    assert all(not m.noise for m in bare.methods) and bare.recommended == "aim"


def test_noise_summary_words():
    df = pd.read_csv(ROOT / "assets" / "sd2011_s7.csv")
    dom = dpcore.infer_domain(df).declared()
    rows = dpcore.expected_noise("flat_laplace", dom, 1.0, n=len(df), sets=1)
    assert adviser.noise_summary(rows).startswith("The noise is larger than the typical count on every released count")
    rows = dpcore.expected_noise("mst", dom, 50.0, n=len(df), sets=1)
    assert adviser.noise_summary(rows).startswith("The noise is smaller than the typical count everywhere")


# --------------------------------------------------------------------------- glossary


def test_glossary_entries_have_a_sentence_and_a_docs_page_that_exists():
    terms = glossary.terms()
    assert len(terms) >= 30
    for t in terms.values():
        assert t.sentence.endswith(".") and len(t.sentence) > 20, t
        path = ROOT / "docs" / t.doc
        assert path.is_file(), t
        if t.anchor:
            heads = re.findall(r"^#{1,6}\s+(.+?)\s*#*$", re.sub(r"```.*?```", "", path.read_text(), flags=re.S), re.M)
            assert t.anchor in {glossary.slug(h) for h in heads}, (t.key, t.anchor)


def test_every_term_the_pages_use_is_in_the_glossary():
    used = set()
    for page in sorted((ROOT / "pages").glob("*.py")) + [ROOT / "app.py"]:
        text = page.read_text(encoding="utf-8")
        for call in re.findall(r"gl\.(?:help_text|terms_line|link)\(([^)]*)\)", text):
            used |= set(re.findall(r'"([a-z0-9-]+)"', call.split("lead=")[0]))
    # the option widgets (pages/_options.py) take their terms from the option's name or _OPTION_TERMS
    from dpcore.synthesizers import REGISTRY
    from pages import _glossary as gl

    for spec in REGISTRY.values():
        for o in spec.options:
            keys = gl._OPTION_TERMS.get(o.name, (o.name.replace("_", "-"),))
            if o.name in gl._OPTION_TERMS or keys[0] in glossary.terms():
                used |= set(keys)
    assert {"mosda", "lesda", "uh-random-tree", "aic", "phantom-padding", "fan-out", "nonneg", "wls",
            "uh-consistency", "one-way-share", "method-adviser"} <= used
    missing = sorted(k for k in used if k not in glossary.terms())
    assert not missing, missing
    with pytest.raises(dpcore.InputError, match="no entry 'no-such-term'"):
        glossary.term("no-such-term")


def test_docs_links_are_rewritten_for_the_viewer_and_paths_stay_inside_docs():
    text = "See [AIM](aim.md#options), [privacy](../privacy-model.md), [code](../../dpcore/api.py), [x](https://e.org)."
    out = glossary.rewrite_links(text, "methods/ipf.md", lambda page, anchor: f"<{page}|{anchor}>")
    assert out == "See [AIM](<methods/aim.md|options>), [privacy](<privacy-model.md|>), code, [x](https://e.org)."
    assert "DP ipf" in glossary.doc_text("methods/ipf.md")
    for bad in ("../README.md", "/etc/passwd", "methods/nothing.md"):
        with pytest.raises(dpcore.InputError):
            glossary.doc_text(bad)


def test_method_descriptions_quote_no_figures():
    """[honest-flow] item 4: descriptions must not quote one table's S_pMSE as if general."""
    for text in adviser.WHAT.values():
        assert not re.search(r"\d", text), text
    assert not any(math.isnan(m.s_pmse) for m in adviser.MEASURED)
    assert np.all([m.s_pmse > 0 for m in adviser.MEASURED])


def test_an_epsilon_delta_design_is_advised_from_epsilon_delta_figures():
    """Under (ε, δ) the study is the table's (ε, δ) figures (the recommendation their best), every
    method's noise is the (ε, δ) noise, and the figures cite their δ; a table without (ε, δ)
    figures falls back to its pure-ε ones and says so. Pure-ε advice is unchanged by the (ε, δ) rows."""
    df = pd.read_csv(ROOT / "assets" / "sd2011_s7.csv")
    dom = dpcore.infer_domain(df).declared()
    s7 = adviser.comparable_table(dom)
    rows = adviser.study(s7, 1.0, 1, delta=1e-9)
    assert rows and all(r.delta == 1e-9 for r in rows) and len(rows) >= adviser.MIN_METHODS
    assert adviser.recommend(dom, 1.0, 1, delta=1e-9) == min(rows, key=lambda r: r.s_pmse).method
    assert all(r.delta is None for r in adviser.study(s7, 1.0, 1))
    a = adviser.advise(dom, 1.0, 1, n=len(df), curator_only=True, delta=1e-9)
    pure = adviser.advise(dom, 1.0, 1, n=len(df), curator_only=True)
    assert a.study_delta == 1e-9 and pure.study_delta is None
    assert "δ = 1e-09" in a.notes[0] and "δ" not in pure.notes[0]
    assert "δ = 1e-09" in " ".join(a.for_method(a.recommended).why)
    for m in ("flat_laplace", "aim"):  # every method's noise is the discrete Gaussian's, not the pure Laplace's
        assert a.for_method(m).noise[0].noise_sd != pytest.approx(pure.for_method(m).noise[0].noise_sd, rel=1e-3)
    assert not any("No (ε, δ) releases" in n for n in a.notes)
    # a table with no (ε, δ) figures (15 attributes: the CPS-shaped benchmark) falls back to pure ε, and says so
    cps = _domain([4, 3, 2, 5, 4, 3, 2, 2, 6, 4, 2, 3, 2, 2, 2])
    assert adviser.comparable_table(cps).key == "cps_shaped"
    assert not any(r.table == "cps_shaped" and r.delta is not None for r in adviser.MEASURED)
    fallback = adviser.advise(cps, 1.0, 1, delta=1e-9)
    assert fallback.study_delta is None and any("No (ε, δ) releases" in n for n in fallback.notes)
