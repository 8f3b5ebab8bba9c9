"""Reproduction of Raab (2022), Table 3: DP ``ipf`` on the SD2011 extracts S5 and S7 (docs/reproduction.md).

Raab's setting, as synthpop implements it and as matched here:

* all two-way margins, ``priorn = 1`` spread as 1/cells over each margin's cells;
* Laplace noise of scale |M|/ε per margin cell (synthpop ``addlapn`` at ε/|M|);
* negative cells set to 0, every margin rescaled to n, IPF from the uniform table
  with mipfp's stopping rule on counts, tol = 1e-3, at most 5000 sweeps;
* a multinomial draw of n records;
* "averaged over 10 syntheses": 10 independent single-set releases, each at the
  full ε (each row of Table 3 is one ε; the syntheses are replications);
* "%ru" is replicated uniques as a percentage of n (Table 3's "ru as a % of p1"
  row is a separate line: e.g. S7 at ε = 1, 3.46/35.84 = 9.65%).

Our means must be within ±30% of the paper's. The domain is inferred from the
extract and declared (the extract's levels, NA a level: 147,000 cells for S7).

Known deviation (one cell of twelve; a strict xfail below, so it is reported
every run and flagged if it ever starts to pass). S7 at ε = 0.5 — the row Raab marks
with an asterisk because some IPF fits did not converge in 5000 sweeps — gives %ru
about 0.38–0.57 against 0.68 (−16% to −44% depending on the seed block: 0.38 over
seeds 20220601+0..9, 0.43 over +0..29, 0.57 over 0..59), while its S_pMSE matches
(−3%). Measured: 28–37% of our fits at that ε stop at 5000 sweeps without
converging, and those average %ru 0.29 against 0.68 for converged fits, so this
figure depends on where a non-converging IPF is stopped, which the paper does not
pin down (mipfp's stopping rule is on the change of the fitted table; synthpop
passes counts with tol 1e-3). We checked that the alternatives do not explain it:
mipfp's switch to proportions for inconsistent margins stops after ~4 sweeps and
gives %ru ≈ 2.1; synthpop's later ``makepos`` gives S5 ε = 10 S_pMSE ≈ 7.4 against
the paper's 1.15; a small positive floor instead of 0 for negative cells (Raab's
step 5 allows either) makes the fits slower still. The tolerance is not widened.
"""
import pytest

import dpcore
from dpcore.data.datasets import load_sd2011, sd2011_extract
from dpcore.data.inference import infer_domain
from dpcore.metrics import disclosure, utility_tables

TOLERANCE = 0.30
REPS = 10
SEED = 20220601
#: Raab (2022) Table 3: ε → (mean two-way S_pMSE, %ru)
KNOWN_DEVIATION = "S7 ε=0.5 %ru"
RAAB = {
    7: {0.5: (31.67, 0.68), 1: (15.21, 3.46), 2: (5.86, 5.55)},
    5: {0.5: (14.59, 0.99), 1: (5.48, 1.29), 2: (2.84, 1.55)},
}


@pytest.fixture(scope="module")
def sd2011():
    return load_sd2011()


def test_s7_p0_p1(sd2011):
    s7 = sd2011_extract(sd2011, 7)
    d = disclosure(s7, [s7])
    assert round(d.p0, 2) == 98.20 and round(d.p1, 2) == 35.84
    assert infer_domain(s7).size == 147_000


def reproduce(data, k):
    extract = sd2011_extract(data, k)
    dom = infer_domain(extract).declared()
    rows = {}
    for eps in RAAB[k]:
        syns, converged = [], 0
        for r in range(REPS):
            rel = dpcore.synthesize(extract, method="ipf", epsilon=eps, sets=1, seed=SEED + r, domain=dom)
            assert rel.ledger.epsilon == pytest.approx(eps, abs=1e-12)
            syns.append(rel.sets[0])
            converged += rel.diagnostics["per_set"][0]["converged"]
        rows[eps] = (utility_tables(extract, syns).mean_s_pmse, disclosure(extract, syns).ru, converged)
    return rows


@pytest.mark.parametrize("k", [7, 5])
def test_table3_dp_ipf(sd2011, k):
    rows = reproduce(sd2011, k)
    report, bad = [], []
    for eps, (s_pmse, ru, conv) in rows.items():
        raab_s, raab_ru = RAAB[k][eps]
        report.append(f"S{k} ε={eps}: S_pMSE {s_pmse:.2f} (Raab {raab_s}), %ru {ru:.2f} (Raab {raab_ru}), "
                      f"{conv}/{REPS} fits converged")
        for name, ours, theirs in (("S_pMSE", s_pmse, raab_s), ("%ru", ru, raab_ru)):
            if abs(ours / theirs - 1) > TOLERANCE:
                bad.append(f"S{k} ε={eps} {name}: {ours:.2f} vs {theirs} ({100 * (ours / theirs - 1):+.0f}%)")
    print("\n" + "\n".join(report))
    known = [b for b in bad if b.startswith(KNOWN_DEVIATION)]
    unexpected = [b for b in bad if not b.startswith(KNOWN_DEVIATION)]
    assert not unexpected, "outside ±30% of Raab's Table 3: " + "; ".join(unexpected) + "\n" + "\n".join(report)
    if k == 7:
        if not known:
            pytest.fail("the known S7 ε=0.5 %ru deviation now reproduces: update the docstring and this test")
        pytest.xfail("known deviation (see module docstring): " + known[0])
