"""[privacy-unit] Empirical audits of releases that protect one id with all of its records (fixed seeds, 95% jointly).

``synthesize(..., privacy_unit="id", records_per_unit=K)`` claims ε-DP (or (ε, δ) through zCDP with ``delta``) for
tables one id apart: add/remove, one id's records added or removed; replace, one id's records replaced by as many
others. Every registered method (tests/privacy/releases.py's METHODS, the record-level audits' list: STEPS and its
variants, flat Laplace, DP ipf, PrivBayes, AIM, MST, with their sparse and option paths) under both definitions (the
releases that measure the audited cell itself under both notions, the others under one notion per definition: see
SEES_THE_CELL) is released at ε = 1 on pairs whose audited id has K = 3 records all in the cell the statistics look
at (tests/privacy/unit_releases.py: crafted tables, the other ids of 1..K records and one of 5, bounded to K).

Tolerances. Each case runs RUNS = 300 seeded releases per table (a fixed seed schedule, so the test is
deterministic), the events of ``unit_releases.events`` (thresholds declared before the runs) give a Clopper–Pearson
lower bound on ε at 95% jointly (Bonferroni over 4 one-sided tests per event: tests/privacy/audit.py), and the bound
must stay at or below the claimed ε = 1 (for (ε, δ), δ = 1e-9 is subtracted first). So must the wide release of a
panel (``panel_time``: one wide record per id) on a pair one id (all of its periods) apart, and a release whose
audited id has 3K records (bounding keeps K). A bound below ε is no proof of privacy (the proofs:
docs/privacy-model.md, "Stability and the privacy unit"), only a failure to find a violation with these events
and runs.

The audit can fail (negative controls, same statistics, events, runs and bound; each must exceed ε with RUNS runs,
and 1.5 ε with CONTROL_RUNS = 1000 in the slow lane):

* the release charged per record: every sensitivity a record's (K forced to 1 in the neighbour notion) while
  bounding keeps K records per id. Pure ε: the very audit of flat Laplace under replace with K = 3 (same pair,
  same seeds) that the correct release passes. (ε, δ): at δ = 1e-9 and 300 runs a factor of 3 in σ is not visible
  (the audit's power is in events far more likely than δ, where a Gaussian at ρ ≈ 0.015 barely moves), so the
  control there is a unit of K_Z = 12 records, and the correct release on that pair passes too;
* the same table released as records (no privacy unit, the id dropped: ε-DP for one record only);
* a release whose sensitivities are K's but whose bounding keeps everything (a unit of 3K records).

Power, measured (not asserted): with the charge per record at K = 3 (pure ε, 300 runs), flat Laplace (default and
sparse path) and AIM's one measurement of the whole table are caught under replace (bounds 1.3–1.8 over seeds for
flat Laplace, 1.4 for AIM); STEPS' variants, ipf, PrivBayes, AIM's rounds and MST dilute the audited 3-way cell
through their models, and their bounds stay between 0 and 0.8 with or without the factor K: for them these audits
check that nothing gross is wrong, not the factor K itself (the brute-force sensitivities of every charge are
tests/privacy/test_unit_sensitivity.py).

Runtimes (2 cores, one worker): the fast lane (flat Laplace, pure ε, both notions; the per-record controls under
both definitions and the twin of the (ε, δ) one; the control without bounding; each at RUNS) takes about 35 s of
CPU. Every other method, definition and notion, the wide release, the 3K bounding, the record-release control and
the controls at CONTROL_RUNS are marked slow.
"""

from __future__ import annotations

import pytest

from dpcore.synthesizers import REGISTRY
from tests.privacy import unit_releases as U
from tests.privacy.audit import epsilon_lower_bound, run_pair
from tests.privacy.releases import METHODS

pytestmark = pytest.mark.audit

EPS = 1.0
RUNS = 300
DELTA = 1e-9
NOTIONS = ("add_remove", "replace")
DEFINITIONS = {"pure": None, "zcdp": DELTA}
#: the seed schedule of the unit audits: the control charged per record reruns the flat Laplace replace case on it
SEED0 = 5000

#: the releases whose audited cell is measured directly: the audit can tell a K-fold error there (measured: 1.2-1.8
#: with the per-record charge), so they are audited under both notions; the others reach the cell through a model
#: and bound 0-0.8 with or without the error, so one notion per definition rules out gross mistakes at half the time
SEES_THE_CELL = {"flat_laplace", "flat_laplace sparse path", "aim"}
#: the notion audited for a model-based release under each definition (both notions are covered for each method)
ONE_NOTION = {"pure": "add_remove", "zcdp": "replace"}

#: (method label, definition, notion): every audited method under every definition its registry entry lists
CASES = [
    (label, d, n)
    for label, method, _ in METHODS
    for d in DEFINITIONS
    if d in REGISTRY[method].definitions
    for n in NOTIONS
    if label in SEES_THE_CELL or n == ONE_NOTION[d]
]
FAST = {("flat_laplace", "pure", "add_remove"), ("flat_laplace", "pure", "replace")}


def _options(label: str) -> tuple[str, dict]:
    return next((str(m), dict(o)) for lab, m, o in METHODS if lab == label and isinstance(o, dict))


def _audit(stats, pair, runs: int, seed0: int, delta: float | None = None, k: int = U.K, center: int | None = None):
    d, d2 = pair
    a, b = run_pair(stats, d, d2, runs, seed0=seed0)
    hits_d, hits_d2, names = U.events(a, b, U.bounded_n(k) + k if center is None else center, k)
    return epsilon_lower_bound(hits_d, hits_d2, names, delta=delta or 0.0)


def test_every_registered_method_and_definition_is_audited():
    """A method added to the registry, or a definition added to a method, gets its unit audits."""
    assert {m for _, m, _ in METHODS} == set(REGISTRY)
    assert {d for spec in REGISTRY.values() for d in spec.definitions} <= set(DEFINITIONS)
    assert {(m, d) for lab, d, _ in CASES for m in [_options(lab)[0]]} == {
        (name, d) for name, spec in REGISTRY.items() for d in spec.definitions
    }
    assert {(lab, d) for lab, d, _ in CASES} == {
        (lab, d) for lab, m, _ in METHODS for d in DEFINITIONS if d in REGISTRY[m].definitions
    }  # every audited release under every definition it takes
    assert {n for _, _, n in CASES} == set(NOTIONS)


def _cells(frame) -> list[tuple]:
    return list(frame[list(U.COLUMNS)].itertuples(index=False, name=None))


@pytest.mark.parametrize("records", [U.K, 3 * U.K, 12])
def test_the_pairs_are_one_unit_apart_in_the_audited_cells(records):
    """The crafted tables are what the audits claim: one id apart, its records all in T (and in S before a
    replace), other ids of 1..K records and one of more than K, and nothing else in T or S."""
    for notion, (d, d2) in U.unit_pairs(records).items():
        rest, rest2 = d[d["id"] != "unit"], d2[d2["id"] != "unit"]
        assert rest.equals(rest2) and rest.equals(U.B)
        assert _cells(d2[d2["id"] == "unit"]) == [U.T] * records
        assert _cells(d[d["id"] == "unit"]) == ([] if notion == "add_remove" else [U.S] * records)
        assert U.T not in _cells(rest) and U.S not in _cells(rest)
        assert set(rest["id"].value_counts()) == {1, 2, 3, 5} and 20 <= len(rest) <= 50
    assert U.bounded_n(U.K) == len(U.B) - 2  # the id of 5 records loses two to bounding


def test_the_wide_pairs_are_one_id_apart():
    for notion, (d, d2) in U.PANEL_PAIRS.items():
        assert d[d["id"] != "unit"].equals(d2[d2["id"] != "unit"])
        assert len(d2[d2["id"] == "unit"]) == len(U.YEARS) and len(d[d["id"] == "unit"]) == (
            0 if notion == "add_remove" else len(U.YEARS)
        )


def _case_params():
    out = []
    for label, d, n in CASES:
        marks = () if (label, d, n) in FAST else (pytest.mark.slow,)
        out.append(pytest.param(label, d, n, marks=marks, id=f"{label}|{d}|{n}"))
    return out


@pytest.mark.parametrize("label,definition,notion", _case_params())
def test_unit_release_privacy_loss_stays_within_the_claim(label, definition, notion):
    """One id of K records added (or moved from S to T): the bound stays at or below ε."""
    method, options = _options(label)
    delta = DEFINITIONS[definition]
    stats = U.statistics(method, dict(options, delta=delta), notion, EPS)
    r = _audit(stats, U.PAIRS[notion], RUNS, seed0=SEED0, delta=delta)
    print(f"AUDIT unit|{label}|{definition}|{notion}: {r.epsilon_lower_bound:.3f} ({r.event})")
    assert r.epsilon_lower_bound <= EPS, r


@pytest.mark.slow
@pytest.mark.parametrize("notion", NOTIONS)
@pytest.mark.parametrize("label", ["flat_laplace", "steps MoSDA", "mst"])
def test_a_unit_with_more_than_k_records_is_bounded_to_k(label, notion):
    """The audited id has 3K records in T: bounding keeps K of them at random, and the release stays within ε."""
    method, options = _options(label)
    r = _audit(U.statistics(method, options, notion, EPS), U.BIG_PAIRS[notion], RUNS, seed0=6000)
    print(f"AUDIT 3K unit|{label}|pure|{notion}: {r.epsilon_lower_bound:.3f} ({r.event})")
    assert r.epsilon_lower_bound <= EPS, r


#: the wide release of a panel: (method label, definition, notion)
WIDE = [(label, d, n) for label in ("flat_laplace", "mst") for d in DEFINITIONS for n in NOTIONS]


@pytest.mark.slow
@pytest.mark.parametrize("label,definition,notion", WIDE, ids=["|".join(w) for w in WIDE])
def test_wide_panel_release_privacy_loss_stays_within_the_claim(label, definition, notion):
    """One id with both of its years added (or moved from the path S to T): one wide record, at a record's
    sensitivity (events with k = 1 around the 25 ids)."""
    method, options = _options(label)
    delta = DEFINITIONS[definition]
    stats = U.panel_statistics(method, dict(options, delta=delta), notion, EPS)
    r = _audit(stats, U.PANEL_PAIRS[notion], RUNS, seed0=7000, delta=delta, k=1, center=U.PANEL_UNITS + 1)
    print(f"AUDIT wide|{label}|{definition}|{notion}: {r.epsilon_lower_bound:.3f} ({r.event})")
    assert r.epsilon_lower_bound <= EPS, r


# --------------------------------------------------------------------------- negative controls: the audit can fail
CONTROL_RUNS = 1000
#: (runs, the floor the bound must exceed): RUNS in the fast lane, CONTROL_RUNS in the slow one
CONTROLS = [
    pytest.param(RUNS, EPS, id="fast"),
    pytest.param(CONTROL_RUNS, 1.5 * EPS, id="more runs", marks=pytest.mark.slow),
]
#: the records of the audited id in the (ε, δ) control (see the module's docstring)
K_Z = 12
#: (definition, K): the control charged per record under each definition
PER_RECORD = {"pure": U.K, "zcdp": K_Z}


def _caught(r, floor: float) -> None:
    assert r.epsilon_lower_bound > floor and ("T" in r.event or "S" in r.event), r


def _charged_per_record(monkeypatch) -> None:
    """Every sensitivity a record's: the neighbour notion's unit stability forced to the identity (K = 1) while
    bounding still keeps K records per id."""
    from dpcore.privacy.neighbours import Neighbours
    from dpcore.privacy.stability import records_per_unit

    monkeypatch.setattr(Neighbours, "unit", property(lambda self: records_per_unit(1)))


def _flat_sensitivity(definition: str, k: int) -> float:
    """The sensitivity flat Laplace's one charge records on the replace pair with ``k`` records per id."""
    import dpcore

    rel = dpcore.synthesize(
        U.unit_pairs(k)["replace"][1],
        "flat_laplace",
        EPS,
        seed=1,
        domain=U.DOMAIN,
        neighbours="replace",
        privacy_unit="id",
        records_per_unit=k,
        delta=DEFINITIONS[definition],
    )
    (charge,) = [c for _, c in rel.ledger.charges()]
    return charge.sensitivity


@pytest.mark.parametrize("runs,floor", CONTROLS)
@pytest.mark.parametrize("definition", DEFINITIONS)
def test_a_unit_charged_at_a_records_sensitivity_is_caught(monkeypatch, definition, runs, floor):
    """The negative control: the release charges a record's sensitivity (2 in L1, √2 in L2, under replace) for a
    unit of K records; the unit's K records moved from S to T are caught. Pure ε: K = 3 and, at RUNS, exactly
    the audit flat_laplace|pure|replace passes (same pair and seeds). (ε, δ): K = K_Z."""
    k, delta = PER_RECORD[definition], DEFINITIONS[definition]
    correct = _flat_sensitivity(definition, k)
    _charged_per_record(monkeypatch)
    assert _flat_sensitivity(definition, k) == pytest.approx(correct / k)  # the control does charge per record
    stats = U.statistics("flat_laplace", {"delta": delta}, "replace", EPS, records_per_unit=k)
    r = _audit(stats, U.unit_pairs(k)["replace"], runs, seed0=SEED0, delta=delta, k=k)
    print(
        f"AUDIT control per record|flat_laplace|{definition}|replace|K={k}|{runs}: "
        f"{r.epsilon_lower_bound:.3f} ({r.event})"
    )
    _caught(r, floor)


def test_the_zcdp_control_pair_passes_when_charged_per_unit():
    """The twin of the (ε, δ) control: the correct release (K_Z per id, charged at K_Z) on the same pair, events,
    runs and seeds stays within ε, so the control is caught for its charge, not for its pair."""
    stats = U.statistics("flat_laplace", {"delta": DELTA}, "replace", EPS, records_per_unit=K_Z)
    r = _audit(stats, U.unit_pairs(K_Z)["replace"], RUNS, seed0=SEED0, delta=DELTA, k=K_Z)
    print(f"AUDIT unit|flat_laplace|zcdp|replace|K={K_Z}: {r.epsilon_lower_bound:.3f} ({r.event})")
    assert r.epsilon_lower_bound <= EPS, r


@pytest.mark.slow
@pytest.mark.parametrize("runs,floor", CONTROLS)
def test_a_release_that_forgets_the_unit_is_caught(runs, floor):
    """The same tables released as records (no privacy_unit, the id dropped): ε-DP for one record, so the unit's
    K records moved from S to T are caught."""
    r = _audit(U.record_statistics("flat_laplace", {}, "replace", EPS), U.PAIRS["replace"], runs, seed0=13)
    print(f"AUDIT control record release|flat_laplace|pure|replace|{runs}: {r.epsilon_lower_bound:.3f} ({r.event})")
    _caught(r, floor)


@pytest.mark.parametrize("runs,floor", CONTROLS)
def test_a_release_without_contribution_bounding_is_caught(monkeypatch, runs, floor):
    """Sensitivities at K but bounding switched off (every record of every id kept): a unit of 3K records moved
    from S to T is three times what the noise covers, and is caught (with bounding, the same pair stays within ε:
    test_a_unit_with_more_than_k_records_is_bounded_to_k)."""
    import dpcore.api
    from dpcore.counting.contributions import MAX_RECORDS_PER_UNIT, PrivacyUnit, bound_contributions

    def keep_all(data, unit, rng):
        return bound_contributions(data, PrivacyUnit(unit.column, MAX_RECORDS_PER_UNIT), rng)

    monkeypatch.setattr(dpcore.api, "bound_contributions", keep_all)
    r = _audit(U.statistics("flat_laplace", {}, "replace", EPS), U.BIG_PAIRS["replace"], runs, seed0=17)
    print(f"AUDIT control no bounding|flat_laplace|pure|replace|{runs}: {r.epsilon_lower_bound:.3f} ({r.event})")
    _caught(r, floor)
