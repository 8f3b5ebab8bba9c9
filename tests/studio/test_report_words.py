"""[studio-truth] item 4: the report's words match the release: the rounds that ran beside those planned, and
a workload as its margins (pairs), not one flat list of names."""
from __future__ import annotations

import numpy as np
import pandas as pd

import dpcore
from dpcore.studio.report import build_report_html


def test_the_report_says_the_rounds_that_ran_and_the_workload_as_pairs():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({c: rng.choice([f"v{j}" for j in range(9)], 600) for c in "abcdef"})
    rel = dpcore.synthesize(df, "aim", 1.0, seed=0, domain=dpcore.infer_domain(df).declared())
    man = rel.manifest()
    ran = man["diagnostics"]["per_set"][0]["rounds"]
    html = build_report_html(man, rel.sets)
    planned = man["diagnostics"]["per_set"][0]["T"]  # the set's T: the budget rules chose it ([aim-parity])
    assert man["options"]["rounds"] is None and f"{planned} planned; {ran} ran" in html
    assert ran > 0 and "a × b; a × c" in html and "a, b, a, c" not in html
    tiny = pd.DataFrame({c: rng.choice(list("xy"), 600) for c in "abc"})  # 8 cells: the whole table, no rounds
    rel = dpcore.synthesize(tiny, "aim", 1.0, seed=0, domain=dpcore.infer_domain(tiny).declared())
    assert "planned; none ran: the whole table was measured once" in build_report_html(rel.manifest(), rel.sets)
