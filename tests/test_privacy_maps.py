"""The ledger is built from the mechanisms' own privacy maps (docs/mechanisms.md).

Every registered method runs on a small table under both neighbour notions while the
mechanisms record each instance that drew noise or made a choice. The ledger's
charges must be exactly those mechanisms, one charge per run, each with the ε the
mechanism's map gives at the charge's sensitivity.
"""
from collections import Counter

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore import mechanisms as M
from dpcore.synthesizers import REGISTRY


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(3)
    n = 240
    a = rng.integers(0, 2, n)
    return pd.DataFrame({"a": a, "b": np.where(rng.random(n) < 0.6, a, rng.integers(0, 3, n)),
                         "c": rng.integers(0, 3, n), "d": [f"d{x}" for x in rng.integers(0, 2, n)]})


def _spy(monkeypatch):
    ran = []
    for cls, meth in ((M.DiscreteLaplace, "release"), (M.Laplace, "release"), (M.ExponentialMechanism, "select")):
        original = getattr(cls, meth)

        def wrapped(self, *args, _original=original, **kw):
            ran.append(self)
            return _original(self, *args, **kw)

        monkeypatch.setattr(cls, meth, wrapped)
    return ran


@pytest.mark.parametrize("notion", ["add_remove", "replace"])
@pytest.mark.parametrize("method", sorted(REGISTRY))
def test_ledger_charges_are_the_maps_of_the_mechanisms_that_ran(monkeypatch, table, method, notion):
    dom = dpcore.infer_domain(table).declared()
    ran = _spy(monkeypatch)
    rel = dpcore.synthesize(table, method, 1.3, sets=2, seed=4, domain=dom, neighbours=notion)
    spent = [c for _, c in rel.ledger.charges() if c.epsilon > 0]
    assert ran, "no mechanism ran"
    # one charge per mechanism run, matched by kind and scale
    key = lambda name, scale: (name.split(" ")[0], round(scale, 12))  # noqa: E731
    assert Counter(key(c.mechanism, c.scale) for c in spent) == Counter(key(m.name, m.scale) for m in ran)
    by_key = {key(m.name, m.scale): m for m in ran}
    for c in spent:
        m = by_key[key(c.mechanism, c.scale)]
        assert c.epsilon == pytest.approx(m.epsilon(c.sensitivity), rel=1e-12)
        assert c.neighbours == rel.neighbours.label
    assert rel.ledger.epsilon == pytest.approx(1.3, abs=1e-12)


def test_spy_catches_a_charge_without_a_mechanism(monkeypatch, table):
    """The check can fail: a ledger entry with no mechanism behind it breaks the match."""
    dom = dpcore.infer_domain(table).declared()
    ran = _spy(monkeypatch)
    rel = dpcore.synthesize(table, "flat_laplace", 1.0, seed=1, domain=dom)
    rel.ledger.charge(label="phantom", epsilon=0.1, mechanism="discrete_laplace", sensitivity=1.0, scale=10.0, subset="-")
    spent = [c for _, c in rel.ledger.charges() if c.epsilon > 0]
    assert len(spent) != len(ran)
