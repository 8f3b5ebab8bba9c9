"""[privacy-unit]: every sensitivity a release uses, checked by brute force on tiny tables against neighbours that
differ by one unit of up to K records (K = 1, 2, 3), under both notions: the count tables (every margin; the
L1 and L2 bounds are attained), the selection scores (STEPS' utilities, PrivBayes' mutual information, AIM's and
MST's L1 errors, the quantiles' rank utility), and, in real releases of every method under both definitions,
every charge: its sensitivity is K times the one the same release charges with the record as the unit."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.measure import selection
from dpcore.measure.quantiles import RANK_SENSITIVITY, rank_utility
from dpcore.privacy.neighbours import Neighbours
from dpcore.synthesizers import REGISTRY
from dpcore.synthesizers import privbayes as PB

SHAPE = (2, 3)
CELLS = list(itertools.product(range(SHAPE[0]), range(SHAPE[1])))
#: a base table of cell indices: 5 records
BASE = [(0, 0), (0, 1), (1, 2), (1, 0), (0, 0)]


def _counts(records, axes) -> np.ndarray:
    out = np.zeros(tuple(SHAPE[a] for a in axes))
    for r in records:
        out[tuple(r[a] for a in axes)] += 1
    return out


def _neighbours(k: int, notion: str):
    """Every pair (D, D') one unit apart: add/remove, a unit of 1..k records added; replace, any k of the base's
    records (one unit, whichever they are) replaced by any k records (n public, so the same number)."""
    if notion == "add_remove":
        for size in range(1, k + 1):
            for unit in itertools.combinations_with_replacement(CELLS, size):
                yield BASE, BASE + list(unit)
    else:
        for gone in itertools.combinations(range(len(BASE)), k):
            rest = [r for i, r in enumerate(BASE) if i not in gone]
            for unit in itertools.combinations_with_replacement(CELLS, k):
                yield BASE, rest + list(unit)


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("notion", ["add_remove", "replace"])
def test_count_tables_change_by_at_most_the_stated_sensitivity_which_is_attained(k, notion):
    nb = Neighbours(notion, records_per_unit=k)
    worst_l1 = worst_l2 = 0.0
    for axes in ((0,), (1,), (0, 1)):
        for d, d2 in _neighbours(k, notion):
            diff = _counts(d2, axes) - _counts(d, axes)
            worst_l1 = max(worst_l1, float(np.abs(diff).sum()))
            worst_l2 = max(worst_l2, float(np.sqrt((diff ** 2).sum())))
    assert worst_l1 == nb.count_sensitivity("l1").value
    assert worst_l2 == pytest.approx(nb.count_sensitivity("l2").value, rel=1e-12)


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("notion", ["add_remove", "replace"])
def test_selection_scores_change_by_at_most_k_times_a_records(k, notion):
    nb = Neighbours(notion, max_records=20, records_per_unit=k)
    n_bound = nb.records_bound(len(BASE))
    for kind in selection.UTILITIES:
        per_record = selection.sensitivity(kind, n_bound, max(SHAPE))
        stated = nb.score_sensitivity(per_record).value
        assert stated == k * per_record
        worst = max(float(np.max(np.abs(selection.utility(_counts(d2, (1,)), kind)
                                        - selection.utility(_counts(d, (1,)), kind))))
                    for d, d2 in _neighbours(k, notion))
        assert worst <= stated + 1e-9, (kind, worst, stated)
    # PrivBayes' score: n·I(X; Π) under add/remove, I(X; Π) under replace (n public)
    mi = {"add_remove": lambda c: c.sum() * PB.mutual_information(c), "replace": PB.mutual_information}[notion]
    per = (PB.count_mi_sensitivity(nb.max_records) if notion == "add_remove"
           else PB.mi_sensitivity(len(BASE), binary=False))
    worst = max(abs(mi(_counts(d2, (0, 1))) - mi(_counts(d, (0, 1)))) for d, d2 in _neighbours(k, notion))
    assert worst <= nb.score_sensitivity(per).value + 1e-9
    # AIM's and MST's score: the L1 error of a margin against the model (the model is released: fixed)
    model = np.full(SHAPE, 1.0)
    worst = max(abs(np.abs(_counts(d2, (0, 1)) - model).sum() - np.abs(_counts(d, (0, 1)) - model).sum())
                for d, d2 in _neighbours(k, notion))
    assert worst <= nb.score_sensitivity(nb.record_count_sensitivity).value
    # the quantiles' rank utility, on the first attribute's values
    cands = np.array([0.5, 1.5])
    worst = max(float(np.max(np.abs(rank_utility(np.array([r[1] for r in d2], float), cands, 0.5)
                                    - rank_utility(np.array([r[1] for r in d], float), cands, 0.5))))
                for d, d2 in _neighbours(k, notion))
    assert worst <= nb.score_sensitivity(RANK_SENSITIVITY).value


def _panel(units: int, k: int) -> pd.DataFrame:
    rng = np.random.default_rng(4)
    return pd.DataFrame({"id": np.repeat(np.arange(units), k), "a": rng.choice(["x", "y"], units * k),
                         "b": rng.choice(["p", "q", "r"], units * k), "c": rng.choice(["u", "v"], units * k)})


def _kind(path: str) -> str:
    """A charge's path without the attributes it names (``set 1/margin a × b`` -> ``set 1/margin``)."""
    return path.split("/margin ")[0] + ("/margin" if "/margin " in path else "")


@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("method", sorted(REGISTRY))
def test_every_charge_of_a_unit_release_is_k_times_the_records(method, k):
    """The same records (one per unit, so bounding keeps all of them and the tables are the same), released
    with the record as the unit and with the id as the unit: each charge's sensitivity is K times, in its
    own norm, its budget the same; nothing else differs."""
    df = _panel(60, 1)
    dom = dpcore.infer_domain(df.drop(columns="id")).declared()
    opts = {"layers": 1} if REGISTRY[method].hierarchical else {}
    for delta in (None, 1e-9):
        if ("zcdp" if delta else "pure") not in REGISTRY[method].definitions:
            continue
        rec = dpcore.synthesize(df.drop(columns="id"), method, 1.0, seed=2, domain=dom, delta=delta, **opts)
        unit = dpcore.synthesize(df, method, 1.0, seed=2, domain=dom, delta=delta, privacy_unit="id",
                                 records_per_unit=k, **opts)
        a, b = list(rec.ledger.charges()), list(unit.ledger.charges())
        # the same charges in the same order; which margins a selection picked may differ (its scores' scale does)
        assert [_kind(p) for p, _ in a] == [_kind(p) for p, _ in b] and a
        for (path, ca), (_, cb) in zip(a, b):
            if ca.mechanism.startswith("none") or ca.epsilon == 0:
                continue
            assert cb.sensitivity == pytest.approx(k * ca.sensitivity, rel=1e-12), (path, ca, cb)
            assert (cb.rho or cb.epsilon) == pytest.approx(ca.rho or ca.epsilon, rel=1e-9), path
        assert unit.manifest()["neighbours"]["records_per_unit"] == k
        assert math.isclose(unit.ledger.epsilon, rec.ledger.epsilon, rel_tol=1e-12)
