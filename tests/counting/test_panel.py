"""[privacy-unit] item 3: a panel released wide. The pivot keeps one record per unit and period (a random one),
places every declared period as a column group and nothing undeclared; the wide domain comes from the declared
domain alone; the release comes back as a panel with fresh ids whose paths are the synthetic units'; and the
release is charged as one record per unit (a record's sensitivity), stated as protecting the unit."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.counting.panel import panel_layout, to_long, to_wide, wide_column, wide_domain
from dpcore.errors import OptionError


def _panel(units: int = 40, years=(2001, 2002, 2003), seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for u in range(units):
        state = rng.choice(["a", "b"])
        for y in years:
            state = state if rng.random() < 0.9 else ("a" if state == "b" else "b")  # a sticky path
            rows.append({"pid": f"p{u}", "year": y, "state": state, "job": rng.choice(["x", "y", "z"])})
    return pd.DataFrame(rows)


def _domain(df):
    return dpcore.infer_domain(df.drop(columns="pid")).declared()


def test_the_pivot_places_each_unit_once_with_one_record_per_declared_period():
    df = _panel(5)
    extra = pd.DataFrame([{"pid": "p0", "year": 2001, "state": "b", "job": "x"},   # a second 2001 record
                          {"pid": "p1", "year": 1999, "state": "a", "job": "y"}])  # an undeclared period
    dom = _domain(df)
    layout = panel_layout(df, dom, "pid", "year")
    wide = to_wide(pd.concat([df, extra], ignore_index=True), layout, np.random.default_rng(1))
    assert wide.units == 5 and wide.unplaced_records == 1 and wide.dropped_records == 1
    assert list(wide.data.columns) == [wide_column(c, y) for y in ("2001", "2002", "2003") for c in ("state", "job")]
    assert len(wide.data) == 5 and wide.data.notna().all().all()
    # p2's path, read back from its wide row
    p2 = df[df.pid == "p2"].sort_values("year")
    row = wide.data.iloc[2]
    assert [row[f"state@{y}"] for y in (2001, 2002, 2003)] == p2.state.tolist()


def test_the_wide_domain_is_the_declared_domain_per_period_with_a_missing_level():
    df = _panel(5)
    dom = _domain(df)
    layout = panel_layout(df, dom, "pid", "year")
    wd = wide_domain(dom, layout)
    assert wd.names == [f"{c}@{y}" for y in (2001, 2002, 2003) for c in ("state", "job")]
    for a in wd.attributes:
        base = dom[a.name.split("@")[0]]
        assert a.levels == base.levels and a.na and a.kind == base.kind
    assert layout.missing_allowed == (False, False)


def test_back_to_long_keeps_paths_and_fills_lone_gaps_from_the_synthetic_set():
    df = _panel(6)
    dom = _domain(df)
    layout = panel_layout(df, dom, "pid", "year")
    wide = to_wide(df, layout, np.random.default_rng(0)).data
    wide.loc[0, ["state@2003", "job@2003"]] = None   # unit 1 lacks 2003
    wide.loc[1, "job@2002"] = None                   # a lone gap: filled from another synthetic 2002 record
    long = to_long(wide, layout, np.random.default_rng(0))
    assert list(long.columns) == ["pid", "year", "state", "job"]
    assert long.groupby("pid").size().tolist() == [2, 3, 3, 3, 3, 3]
    assert long.notna().all().all()
    u2 = long[long.pid == 2]
    assert u2.state.tolist() == [wide.loc[1, f"state@{y}"] for y in (2001, 2002, 2003)]


def test_a_column_missing_in_every_record_of_a_period_is_filled_from_another_period():
    """A synthetic wide set may hold no value of a column in one period (its missing level drawn for every unit):
    the panel still keeps the declared domain, which has no missing level for it (from the app: the Release page
    refused to chart such a set)."""
    df = _panel(6)
    dom = _domain(df)
    layout = panel_layout(df, dom, "pid", "year")
    wide = to_wide(df, layout, np.random.default_rng(0)).data
    wide["state@2002"] = None  # no synthetic unit has a state in 2002; job is present, so the rows are kept
    wide.loc[:, "job@2002"] = "x"
    wide.loc[:, "job@2001"] = "y"
    long = to_long(wide, layout, np.random.default_rng(0))
    assert long.notna().all().all() and len(long) == 18
    assert set(long[long.year == 2002].state) <= set(df.state)


def test_refusals_name_the_column_and_what_to_do():
    df = _panel(5)
    dom = _domain(df)
    for time, match in [("when", "not a column"), ("pid", "identifier")]:
        with pytest.raises(OptionError, match=match):
            panel_layout(df, dom, "pid", time)
    numeric = dpcore.infer_domain(df.drop(columns="pid"), numeric={"year": {"bounds": [2000, 2004], "bins": 2}})
    with pytest.raises(OptionError, match="declared categorical"):
        panel_layout(df, numeric, "pid", "year")
    with pytest.raises(OptionError, match="declared domain"):
        dpcore.synthesize(df, "mst", 1.0, domain="dp", privacy_unit="pid", panel_time="year", delta=1e-9)
    with pytest.raises(OptionError, match="leave records_per_unit out"):
        dpcore.synthesize(df, "mst", 1.0, domain=dom, privacy_unit="pid", records_per_unit=3, panel_time="year")


@pytest.mark.parametrize("delta", [None, 1e-9])
def test_a_wide_release_protects_the_unit_at_a_records_sensitivity_and_keeps_paths(delta):
    df = _panel(300, seed=3)
    dom = _domain(df)
    rel = dpcore.synthesize(df, "mst", 2.0, seed=1, domain=dom, privacy_unit="pid", panel_time="year", delta=delta)
    out = rel.sets[0]
    assert list(out.columns) == list(df.columns)
    assert set(out.year) <= {2001, 2002, 2003} and out.pid.min() == 1
    assert not set(out.pid.astype(str)) & set(df.pid)  # no real identifier is released
    nb = rel.manifest()["neighbours"]
    assert nb["privacy_unit"] == "pid" and nb["panel_time"] == "year" and nb["records_per_unit"] == 1
    assert "one 'pid' with all of their records" in rel.dp_reason
    for _, c in rel.ledger.charges():  # a record's sensitivity on the wide table
        if c.mechanism.startswith("none") or c.epsilon == 0:
            continue
        assert c.sensitivity in (1.0, pytest.approx(1.0)), c
    assert rel.curator_only["privacy_unit"]["units"] == 300
    # the sticky path survives: a synthetic person keeps their state from one year to the next far more often
    # than two independent draws would (the long release cannot keep it: its records are person-years)
    same = (out.sort_values(["pid", "year"]).groupby("pid").state.apply(lambda s: (s.values[1:] == s.values[:-1])
                                                                        .mean())).mean()
    assert same > 0.7, same
