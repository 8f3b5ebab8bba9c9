"""bench/accuracy/corpus_report.py: medians over seeds, the per-table best, win rates, ratios to the best peer."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "bench" / "accuracy"), str(ROOT / "bench" / "tools")]

import corpus_report as rep


def _row(table, method, definition, seed, spmse, status="ok", eps=1.0, sets=1, seconds=1.0):
    return {"table": table, "method": method, "definition": definition, "epsilon": str(eps), "sets": str(sets),
            "seed": str(seed), "spmse": "" if spmse is None else str(spmse), "ru_pct": "0.5",
            "seconds": str(seconds), "peak_mb": "100", "status": status, "message": ""}


ROWS = [
    *(_row("t1", "aim", "zcdp", s, v) for s, v in enumerate([2.0, 3.0, 10.0])),   # median 3
    *(_row("t1", "mst", "zcdp", s, v) for s, v in enumerate([4.0, 5.0, 6.0])),    # median 5
    *(_row("t2", "aim", "zcdp", s, v) for s, v in enumerate([8.0, 8.0, 8.0])),    # median 8
    *(_row("t2", "mst", "zcdp", s, v) for s, v in enumerate([4.0, 4.0])),         # median 4
    _row("t2", "mst", "zcdp", 2, None, status="timeout"),
    _row("t1", "aim", "zcdp", 0, 99.0, eps=3.0),                                  # another ε: not counted
]
KEYS = [("aim", "zcdp"), ("mst", "zcdp")]


def test_medians_over_seeds_and_statuses():
    summ = rep.summarise(ROWS, 1.0, 1)
    assert summ[("t1", "aim", "zcdp")]["median"] == 3.0
    assert (summ[("t1", "aim", "zcdp")]["lo"], summ[("t1", "aim", "zcdp")]["hi"]) == (2.0, 10.0)
    assert summ[("t2", "mst", "zcdp")]["n_ok"] == 2 and summ[("t2", "mst", "zcdp")]["n_runs"] == 3
    assert summ[("t2", "mst", "zcdp")]["statuses"] == ["ok", "timeout"]


def test_best_win_rate_and_ratio_to_the_best():
    summ = rep.summarise(ROWS, 1.0, 1)
    assert rep.best_per_table(summ, ["t1", "t2"], KEYS) == {"t1": (("aim", "zcdp"), 3.0), "t2": (("mst", "zcdp"), 4.0)}
    lines, ratios = rep.method_summary(summ, ["t1", "t2"], KEYS)
    assert sorted(ratios[("aim", "zcdp")]) == [1.0, 2.0]
    assert sorted(ratios[("mst", "zcdp")]) == pytest.approx([1.0, 5 / 3])
    assert "| 2 | 1 | 50% |" in lines[2] and "1 timeout" in lines[3]


def test_ratio_to_the_best_finishing_peer():
    summ = rep.summarise(ROWS, 1.0, 1)
    peers = rep.summarise([*(_row("t1", "dpmm_aim", "zcdp", s, 6.0) for s in range(3)),
                           *(_row("t1", "dpmm_mst", "zcdp", s, 1.5, status="timeout") for s in range(1))], 1.0, 1)
    lines, ratios = rep.peer_ratio_table(summ, peers, ["t1", "t2"], KEYS)
    assert ratios[("aim", "zcdp")] == {"t1": 0.5}  # 3 against dpmm's 6; t2 has no peer that finished
    assert len(lines) == 5 and lines[2].startswith("| t1 | dpmm_aim 6.00")
    # item 4's targets on the tables with a peer: AIM at 0.5× the peer; the seconds are equal here (1×, not 20×)
    assert "at or under it on 1 of 1 tables (100%" in lines[4] and "largest ratio 0.50 (t1" in lines[4]
    assert "20× AIM's median seconds on 0 of 1 tables" in lines[4]
    worse = rep.summarise([_row("t1", "dpmm_aim", "zcdp", s, 2.0) for s in range(3)], 1.0, 1)
    assert "at or under it on 0 of 1 tables (0%" in rep.peer_ratio_table(summ, worse, ["t1"], KEYS)[0][4]


def test_another_setting_of_the_grid_gets_its_own_sections_only_when_it_has_runs(monkeypatch):
    monkeypatch.setattr(rep, "plots", lambda *a, **k: [])  # no figures written from a unit test
    rows = [*ROWS, *(_row("t1", m, "pure", s, v, sets=5) for m, v in (("aim", 7.0), ("mst", 3.0)) for s in range(3))]
    facts = [{"table": "t1"}, {"table": "t2"}]
    page = rep.other_setting(rows, ["aim", "mst"], ["t1", "t2"], facts, 1.0, 5)
    assert page[0] == "## Results at ε = 1, m = 5" and "on the 1 of 2 tables that have runs" in page[2]
    text = "\n".join(page)
    assert "### Pure ε-DP" in text and "**3.00**" in text  # mst's median is t1's lowest at m = 5
    assert rep.other_setting(rows, ["aim", "mst"], ["t1", "t2"], facts, 0.3, 5) == []


def test_a_bad_also_setting_is_one_line_and_writes_nothing(monkeypatch):
    written = []
    monkeypatch.setattr(rep, "write_page", lambda *a, **k: written.append(a))
    monkeypatch.setattr(sys, "argv", ["corpus_report.py", "--also", "1-5"])
    with pytest.raises(SystemExit, match=r"^--also takes EPS:M pairs such as 1:5; got 1-5$"):
        rep.main()
    assert written == []
