"""[studio-truth] item 2 in the app (AppTest): after a release that found a column's bins privately, the figures
on Preview, Design and Trade-offs are the release's own. The Preview's noisy tables and its noise check state the
budget, noise and cells of the manifest's charges; the Design page's planned ledger and the adviser's noise
sentence agree with them; the Trade-offs heat map scores the release's bins, not the placeholder bins.

Every expected figure is worked out here from the manifest (its charges, its domain, its noisy record count) and
dpcore's measures called directly, never read back from the app's own plan."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("streamlit.testing.v1")
from streamlit.testing.v1 import AppTest

import dpcore
import dpcore.metrics as metrics
from dpcore.data.inference import data_range_attribute
from dpcore.metrics.evaluate import domain_cells
from tests.app.conftest import Upload
from tests.app.test_app import JOB_CEILING_S

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
EPSILON, SETS = 1.0, 2
#: wage's bins at most: its placeholder has this many (equal bins over its range); PrivTree finds fewer here
PLACEHOLDER_BINS = 30


def texts(elements) -> str:
    return "\n".join(str(e.value) for e in elements)


def run(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert "Something went wrong" not in texts(at.error), texts(at.error)
    return at


def key(at: AppTest, kind: str, col: str) -> str:
    return f"w_{kind}_{col}@{at.session_state['data_key']}"


def wages(n: int = 1500) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    return pd.DataFrame(
        {"wage": np.round(rng.gamma(3.0, 2.0, n), 2), "age": rng.integers(18, 80, n), "sex": rng.choice(["F", "M"], n)}
    )


def discrete_laplace_sd(scale: float) -> float:
    """The SD of the discrete Laplace law of ``scale``: P(k) ∝ exp(−|k|/scale), so its variance is 2q/(1 − q)²
    with q = e^(−1/scale)."""
    q = math.exp(-1.0 / scale)
    return math.sqrt(2 * q) / (1 - q)


def release_with_a_column_found_privately(uploads):
    """ipf at ε = 1, m = 2, with wage's bounds and bins found privately: (the AppTest after the release, the
    table, the release's manifest, the release)."""
    df = wages()
    at = run(AppTest.from_file(APP, default_timeout=120))
    at.switch_page("pages/1_data.py")
    run(at)
    uploads["w_upload"] = Upload("wages.csv", df)
    run(at)
    at.radio(key=key(at, "numkind", "wage")).set_value("find privately")
    run(at)
    at.number_input(key=key(at, "pbins", "wage")).set_value(PLACEHOLDER_BINS)
    run(at)
    at.text_input(key=key(at, "lo", "age")).input("0")
    at.text_input(key=key(at, "hi", "age")).input("120")
    at.number_input(key=key(at, "bins", "age")).set_value(12)
    run(at)
    at.button(key=key(at, "usebounds", "age")).click()
    run(at)
    next(b for b in at.button if b.label.startswith("Confirm")).click()
    run(at)
    cfg = at.session_state["cfg"]
    cfg["release_method"], cfg["m"], cfg["epsilon"] = "ipf", SETS, EPSILON
    # before the release, the Preview's figures are planned from the share asked for, and it says what may differ
    at.switch_page("pages/3_preview.py")
    run(at)
    captions = " ".join(c.value for c in at.caption)
    assert "Planned from the share of ε the domain is given" in captions and "Every figure here uses" not in captions
    at.switch_page("pages/4_release.py")
    run(at)
    next(b for b in at.button if b.label.startswith("Release (spends")).click()
    run(at)
    assert at.session_state["release_job"].wait(JOB_CEILING_S)
    run(at)
    rel = at.session_state["release"]["main"]
    assert rel.dp, rel.dp_reason
    return at, df, rel.manifest(), rel


def test_every_figure_after_a_release_that_found_bins_privately_is_the_releases(uploads):
    """One release (the slow part), then each page's figures against the manifest."""
    released = release_with_a_column_found_privately(uploads)
    check_the_preview(released)
    check_the_planned_ledger_and_the_advisers_words(released)
    check_the_heat_map(released)


def _set_charges(manifest: dict) -> list[dict]:
    return [c for c in manifest["ledger"]["charges"] if c["path"].split("/")[1] == "set 1"]


def _cells(domain: dpcore.Domain, label: str) -> int:
    """The cells of a charge's table from its label ("margin wage × age", "one-way margin sex")."""
    names = re.sub(r"^(one-way )?margin ", "", label).split(" × ")
    return math.prod(domain[a].size for a in names)


def check_the_preview(released) -> None:
    """The Preview's noisy tables and its noise check state the manifest's budgets, noise and cells."""
    at, _, manifest, _ = released
    found = dpcore.Domain.from_dict(manifest["domain"])
    assert found["wage"].origin in dpcore.data.domain.FOUND_IN_RELEASE
    # else the placeholder's cells and the release's could not be told apart
    assert found["wage"].size - found["wage"].na != PLACEHOLDER_BINS
    charges = _set_charges(manifest)
    # by hand: 10% of ε on wage's bins, 5% on the record count, the rest over the two sets
    assert math.fsum(c["epsilon"] for c in charges) == pytest.approx((EPSILON - 0.1 - 0.05) / SETS, rel=1e-8)
    at.switch_page("pages/3_preview.py")
    run(at)
    captions = " ".join(c.value for c in at.caption)
    assert "Every figure here uses the domain your last release found" in captions
    assert "Planned from the share" not in captions
    tables = next(d.value for d in at.dataframe if "table" in d.value.columns)
    assert len(tables) == len(charges)
    released_ = sorted((c["epsilon"], discrete_laplace_sd(c["scale"]), _cells(found, c["label"])) for c in charges)
    shown = sorted(zip(tables["epsilon"], tables["noise_sd"], tables["cells"]))
    for (e, sd, cells), (e2, sd2, cells2) in zip(released_, shown):
        assert e2 == pytest.approx(e, rel=1e-8) and sd2 == pytest.approx(sd, rel=1e-6) and cells2 == cells
    # the noise check above it: the same budget and noise per kind of count, typical count n/cells at the
    # release's noisy record count
    check = next(d.value for d in at.dataframe if "released counts" in d.value.columns)
    n = manifest["record_count"]["value"]
    by_what = {re.sub(r"^(one-way )?margin ", "", c["label"]): c for c in charges}
    for _, row in check.iterrows():
        c = by_what[re.sub(r"^(one-way )?margin ", "", row["released counts"])]
        assert row["ε each"] == pytest.approx(c["epsilon"], rel=1e-8)
        assert row["noise SD (records)"] == pytest.approx(discrete_laplace_sd(c["scale"]), rel=1e-6)
        assert row["typical count (records)"] == pytest.approx(n / _cells(found, c["label"]))
    assert "uses the domain your last release found privately" in texts(at.caption)


def check_the_planned_ledger_and_the_advisers_words(released) -> None:
    """The Design page's planned ledger holds the share spent on the private bins; the adviser states the noise
    the panel states."""
    at, _, manifest, _ = released
    found = dpcore.Domain.from_dict(manifest["domain"])
    at.switch_page("pages/2_design.py")
    run(at)
    ledger = next(d.value for d in at.dataframe if "part" in d.value.columns).set_index("part")
    groups = {c["label"]: c["epsilon"] for c in manifest["ledger"]["composition"]["children"]}
    assert ledger.loc["DP bin edges (found privately)", "ε over m sets"] == pytest.approx(
        groups["DP bin edges"], rel=1e-8
    )
    assert ledger.loc["noisy record count", "ε over m sets"] == pytest.approx(groups["record count"])
    per_set = ledger.drop(index=["DP bin edges (found privately)", "noisy record count"])
    assert sorted(per_set["ε per set"]) == pytest.approx(sorted(c["epsilon"] for c in _set_charges(manifest)), rel=1e-8)
    assert per_set["ε over m sets"].sum() == pytest.approx(groups["set 1"] + groups["set 2"], rel=1e-8)
    # the adviser's sentence on ipf names the noise check's largest noise, worked out from the manifest: the
    # charge whose noise SD is largest against its typical count n / cells
    n = manifest["record_count"]["value"]
    worst = max(_set_charges(manifest), key=lambda c: discrete_laplace_sd(c["scale"]) * _cells(found, c["label"]) / n)
    sd = discrete_laplace_sd(worst["scale"])
    lines = [str(m.value) for m in at.markdown]
    start = next(i for i, x in enumerate(lines) if x.startswith("**DP ipf** — "))  # "Why, method by method"
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("**")), len(lines))
    said = re.search(r"noise SD ([\d,.]+) records per count on (.+?), where", "\n".join(lines[start:end]))
    assert said and float(said.group(1).replace(",", "")) == pytest.approx(sd, rel=0.01)
    panel = texts([*at.success, *at.warning, *at.error])
    shown = re.search(r"Largest: noise SD ([\d,.]+) records per count on (.+?), where", panel)
    assert shown and float(shown.group(1).replace(",", "")) == pytest.approx(sd, rel=0.01)
    assert said.group(2) == shown.group(2)


def check_the_heat_map(released) -> None:
    """The Trade-offs heat map's summary is the release's own bins' S_pMSE, not the placeholder bins'."""
    at, df, manifest, rel = released
    found = dpcore.Domain.from_dict(manifest["domain"])
    ut = metrics.utility_tables(domain_cells(df, found), [domain_cells(s, found) for s in rel.sets], order=2)
    # the placeholder the app showed before the release: equal bins over wage's range
    placeholder = dpcore.Domain(
        tuple(
            data_range_attribute(
                "wage", df["wage"].min(), df["wage"].max(), PLACEHOLDER_BINS, False, str(df["wage"].dtype)
            )
            if a.name == "wage"
            else a
            for a in found.attributes
        ),
        found.source,
    )
    wrong = metrics.utility_tables(
        domain_cells(df, placeholder), [domain_cells(s, placeholder) for s in rel.sets], order=2
    )
    assert f"{wrong.mean_s_pmse:.3g}" != f"{ut.mean_s_pmse:.3g}"  # the two bins give different figures
    at.switch_page("pages/5_tradeoffs.py")
    run(at)
    caption = next(c.value for c in at.caption if c.value.startswith("Mean over all tables"))
    assert caption.startswith(
        f"Mean over all tables {ut.mean_s_pmse:.3g}; worst table "
        f"{' × '.join(ut.worst.variables)} ({ut.worst.s_pmse:.3g})."
    )
    assert "Scored on the release's own bins (its manifest's domain), found privately for wage." in caption
