"""A hierarchy whose padded upper layers would explode (b^k slots for a layer of many levels) is refused in one line
before anything is allocated: found by the hostile domain files, where a 20,003-level column made the random-order
UH and LeSDA previews ask for 3 GB (the worker was killed)."""

from __future__ import annotations

import resource

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.data.domain import Domain
from dpcore.errors import DPCoreError
from dpcore.previews import preview


def _wide_level_table():
    rng = np.random.default_rng(0)
    levels = ["east", "north", "south"] + [f"l{k}" for k in range(20_000)]
    df = pd.DataFrame({"sex": rng.choice(["F", "M"], 40), "old": rng.choice(["y", "n"], 40),
                       "region": rng.choice(levels[:3], 40)})
    dom = Domain.from_dict({"attributes": [{"name": "sex", "levels": ["F", "M"]}, {"name": "old", "levels": ["n", "y"]},
                                           {"name": "region", "levels": levels}]})
    return df, dom


@pytest.mark.parametrize("method", ["uh_random", "steps_lesda"])
def test_exploding_padded_layers_are_refused_before_allocating(method):
    df, dom = _wide_level_table()
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = 4 * 2**30  # the layout asked for 3 GB in one array before the check; now it needs none of it
    try:
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ValueError, OSError):  # pragma: no cover - a host that forbids it: the refusal is still checked
        pass
    try:
        with pytest.raises(DPCoreError) as err:
            preview(df, method=method, epsilon=1.0, sets=1, domain=dom)
        text = str(err.value)
        assert "padded layers" in text and "many levels" in text and "\n" not in text
        # a release either draws an order that puts the wide column last (and releases) or is refused the same way
        for seed in range(3):
            try:
                rel = dpcore.synthesize(df, method=method, epsilon=1.0, seed=seed, domain=dom)
            except DPCoreError as exc:
                assert "padded layers" in str(exc) or "cells" in str(exc), exc
            else:
                assert len(rel.sets[0].columns) == 3
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
