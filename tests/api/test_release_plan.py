"""[studio-truth] item 2: every planned figure of a release (the planned ledger, each table's budget and noise, its
cells) comes from one place, :func:`dpcore.previews.plan_release`, and for a domain found privately the plan of
the design over the domain the release found is the ledger the release's manifest states.

The expected values are worked out here by hand (the shares of ε) and read from the manifest, never from the
plan itself."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.api import planned_delta_approx
from dpcore.previews import DOMAIN_GROUPS, ReleaseDesign, domain_shares, plan_release

#: float tolerance: the manifest's group totals are written to 12 significant digits, and PrivTree charges its noise
#: scale rounded to a dyadic number, a hair (about 1e-9 of it) below its share, which the sets get back
REL = 1e-8


@pytest.fixture(scope="module")
def wages() -> pd.DataFrame:
    rng = np.random.default_rng(1)
    n = 1500
    return pd.DataFrame(
        {"wage": np.round(rng.gamma(3.0, 2.0, n), 2), "age": rng.integers(18, 80, n), "sex": rng.choice(["F", "M"], n)}
    )


@pytest.fixture(scope="module")
def declared(wages) -> dpcore.Domain:
    """age and sex declared; wage holds a placeholder (10 equal bins over a range) the release replaces."""
    dom = dpcore.infer_domain(
        wages, numeric={"age": {"bounds": [0, 120], "bins": 12}, "wage": {"bounds": [0, 100], "bins": 10}}
    )
    return dpcore.Domain(dom.attributes, dpcore.data.domain.DECLARED)


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=REL, abs_tol=1e-15)


def _ledger_problems(planned: dict, manifest: dict, key: str) -> list[str]:
    """Where the planned ledger and the manifest's ledger differ: the top-level parts in order with their budgets,
    then each set's charges (as multisets of budgets)."""
    comp = manifest["ledger"]["composition"]
    out = []
    if not _close(planned[key], comp[key]):
        out.append(f"total {planned[key]} != {comp[key]}")
    got = [(c["label"], c[key]) for c in planned["children"]]
    want = [(c["label"], c[key]) for c in comp["children"]]
    if [g for g, _ in got] != [w for w, _ in want]:
        return out + [f"parts {[g for g, _ in got]} != {[w for w, _ in want]}"]
    out += [f"{lab}: planned {g} != released {w}" for (lab, g), (_, w) in zip(got, want) if not _close(g, w)]
    for p, c in zip(planned["children"], comp["children"]):
        if "children" in p:
            g = sorted(x[key] for x in p["children"])
            w = sorted(x[key] for x in c["children"])
            if len(g) != len(w) or not all(_close(a, b) for a, b in zip(g, w)):
                out.append(f"{p['label']}: planned charges {g} != released {w}")
    return out


@pytest.mark.parametrize("method", ["ipf", "flat_laplace", "mst"])
def test_the_planned_ledger_of_a_column_found_privately_is_the_manifests(wages, declared, method):
    call = dict(sets=2, domain=declared, dp_bins={"wage": {"bins": 8}}, bins_share=0.1)
    rel = dpcore.synthesize(wages, method, 1.0, seed=3, **call)
    manifest = rel.manifest()
    found = dpcore.Domain.from_dict(manifest["domain"])
    assert found["wage"].edges != declared["wage"].edges  # the release found its own bins
    plan = plan_release(ReleaseDesign.of_call(method, 1.0, **call), found, rel.record_count["value"])
    assert not _ledger_problems(plan.ledger(), manifest, "epsilon")
    # by hand: 10% on the bins, 5% on the record count, the rest split over the two sets
    parts = {c["label"]: c["epsilon"] for c in plan.ledger()["children"]}
    assert parts["DP bin edges"] == pytest.approx(0.1) and parts["record count"] == pytest.approx(0.05)
    assert parts["set 1"] == parts["set 2"] == pytest.approx((1 - 0.1 - 0.05) / 2)
    # each noisy table's noise scale and cells are the ones the release drew and counted
    charges = [c for c in manifest["ledger"]["charges"] if c["path"].split("/")[1] == "set 1"]
    drawn = sorted(c["scale"] for c in charges if c["mechanism"].startswith("discrete_laplace"))
    planned = sorted(r["noise_scale"] for r in plan.tables if r["noise_scale"] is not None)
    assert len(drawn) == len(planned) and all(_close(a, b) for a, b in zip(drawn, planned))
    if method == "flat_laplace":
        cells = int(re.match(r"(\d+) cells", charges[0]["subset"]).group(1))
        assert plan.tables[0]["cells"] == cells == math.prod(found.shape)


def test_a_plan_without_the_private_domain_share_does_not_match(wages, declared):
    """The bug this guards against: the planned ledger left out the share spent on the private bins."""
    rel = dpcore.synthesize(wages, "ipf", 1.0, seed=3, domain=declared, dp_bins={"wage": {"bins": 8}})
    found = dpcore.Domain.from_dict(rel.manifest()["domain"])
    n = rel.record_count["value"]
    without = plan_release(ReleaseDesign("ipf", 1.0), found, n)
    assert _ledger_problems(without.ledger(), rel.manifest(), "epsilon")
    asked, charged = domain_shares(rel.manifest())
    assert asked == pytest.approx(0.1) and charged == pytest.approx(0.1, rel=1e-6) and charged <= asked
    made = plan_release(ReleaseDesign("ipf", 1.0, domain_share=charged), found, n)
    assert not _ledger_problems(made.ledger(), rel.manifest(), "epsilon")


def test_the_planned_ledger_of_a_whole_domain_found_privately_is_the_manifests(wages):
    """domain="dp" under (ε, δ): the ledger is kept in ρ and the levels' thresholds spend part of δ."""
    call = dict(sets=1, domain="dp", delta=1e-9, domain_share=0.2)
    rel = dpcore.synthesize(wages, "mst", 1.0, seed=5, **call)
    manifest = rel.manifest()
    levels_delta = planned_delta_approx(wages, "dp", 1e-9, 0.2)
    assert levels_delta > 0  # sex is a text column: its levels are found with a threshold
    design = ReleaseDesign.of_call("mst", 1.0, levels_delta=levels_delta, **call)
    assert design.domain_group == DOMAIN_GROUPS[1]
    plan = plan_release(design, dpcore.Domain.from_dict(manifest["domain"]), rel.record_count["value"])
    assert plan.budget_key == "rho"
    assert not _ledger_problems(plan.ledger(), manifest, "rho")
    parts = {c["label"]: c["rho"] for c in plan.ledger()["children"]}
    assert parts["DP domain"] == pytest.approx(0.2 * manifest["ledger"]["rho_total"], rel=1e-6)
    assert domain_shares(manifest)[0] == 0.2


def test_the_noise_check_the_tables_and_the_ledger_read_one_plan(wages, declared):
    """The noise check's rows (expected_noise), the preview's tables and its plan agree with the plan: the same
    budget per one-way table and the same noise, the share on the private bins taken out of every one."""
    n = float(len(wages))
    noise = dpcore.expected_noise("ipf", declared, 1.0, n=n, sets=2, bins_share=0.1, one_way_share=0.3)
    pv = dpcore.preview(wages, "ipf", 1.0, sets=2, domain=declared, bins_share=0.1, one_way_share=0.3)
    plan = plan_release(
        ReleaseDesign("ipf", 1.0, sets=2, domain_share=0.1, options={"one_way_share": 0.3}), declared, n
    )
    per_set = (1 - 0.1 - 0.05) / 2
    one_way = [r for r in noise if r.what.startswith("one-way")]
    table = pv.margins[pv.margins["table"].str.endswith("(one-way)")]
    assert len(one_way) == len(table) == 3
    # by hand: ipf's one-way share of a set's ε, split over the three columns
    assert all(r.budget.value == pytest.approx(0.3 * per_set / 3) for r in one_way)
    assert table["epsilon"].tolist() == pytest.approx([r.budget.value for r in one_way])
    assert table["noise_sd"].tolist() == pytest.approx([r.noise_sd for r in one_way])
    assert [r.to_dict() for r in plan.noise] == [r.to_dict() for r in noise]
    assert pv.plan["domain_budget"] == pytest.approx(0.1) and pv.plan["budget_per_set"] == pytest.approx(per_set)
    rows = plan.ledger_rows()
    assert rows[0]["kind"] == "private domain" and rows[0]["epsilon"] == pytest.approx(0.1)
    assert math.fsum(r["epsilon"] for r in rows) == pytest.approx(1.0)
    table = plan.ledger_table()  # the Design page's: once, then one set's parts over the m sets
    assert table[0]["part"] == "DP bin edges (found privately)" and table[0]["per_set"] is None
    assert math.fsum(r["over_sets"] for r in table) == pytest.approx(1.0)
    assert [r["cells"] for r in table[2:]] == pv.margins["cells"].tolist()


def test_a_steps_preview_over_a_domain_found_privately_reads_the_records_as_the_release_did(wages):
    rel = dpcore.synthesize(wages, "mst", 1.0, seed=5, domain="dp", delta=1e-9)
    found = dpcore.Domain.from_dict(rel.manifest()["domain"])
    pv = dpcore.preview(wages, "steps", 1.0, domain=found, delta=1e-9, domain_share=0.1, layers=1)
    assert pv.plan["domain_budget"] == pytest.approx(0.1 * pv.plan["rho"])
    rows = pv.release_plan.ledger_rows()
    assert [r["component"] for r in rows[:2]] == ["DP domain (found privately)", "noisy record count"]
    assert math.fsum(r["rho"] for r in rows) == pytest.approx(pv.plan["rho"])


def test_the_design_of_a_call_refuses_what_the_call_refuses():
    with pytest.raises(dpcore.OptionError, match="bins_share"):
        ReleaseDesign.of_call("ipf", 1.0, bins_share=0.2)
    with pytest.raises(dpcore.OptionError, match="domain_share"):
        ReleaseDesign.of_call("ipf", 1.0, domain="dp", domain_share=1.5)
    with pytest.raises(dpcore.OptionError, match="one of them"):
        dpcore.expected_noise(
            "ipf",
            {"attributes": [{"name": "a", "kind": "categorical", "levels": ["x", "y"]}]},
            1.0,
            n=10,
            bins_share=0.1,
            domain_share=0.1,
        )
