"""[studio-truth] items 1 and 6: the adviser's pick passes its own noise check at the design's m, ε and δ; the
command line's synth without --method uses the same pick; the book's published record count is a public fact
advise and the app read."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.cli.commands import main
from dpcore.studio import adviser
from dpcore.studio.budget_book import BudgetBook
from dpcore.studio.noise_check import passes


def _wide_table(n: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Many levels and few records: the methods' noise checks disagree."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"a": rng.integers(0, 30, n).astype(str), "b": rng.integers(0, 30, n).astype(str),
                         "c": rng.integers(0, 12, n).astype(str), "d": rng.integers(0, 8, n).astype(str),
                         "e": rng.choice(["x", "y"], n)})


@pytest.mark.parametrize("sets", [1, 5])
def test_the_pick_passes_its_noise_check_or_every_method_fails_it_and_it_says_so(sets):
    df = _wide_table()
    dom = dpcore.infer_domain(df).declared()

    def check(method, opts):
        dpcore.preview(df, method=method, epsilon=1.0, sets=sets, domain=dom, **opts)

    adv = adviser.advise(dom, 1.0, sets, n=float(len(df)), curator_only=True, check=check)
    pick = adv.for_method(adv.recommended)
    runnable = [a for a in adv.methods if a.verdict != "cannot run" and a.noise]
    if any(passes(a.noise) for a in runnable):
        assert passes(pick.noise), (adv.recommended, pick.swamped_counts, pick.total_counts)
        failing = [a for a in runnable if not passes(a.noise)]
        assert all(a.verdict == "noise check fails" and "Not recommended" in " ".join(a.why) for a in failing)
        # the summary names the gate exactly when it left a method out
        assert ("and pass their noise check" in adv.summary) == bool(failing), adv.summary
    else:
        assert "fails its noise check" in adv.notes[0] and "The check passes with" in adv.notes[0] \
            or "No design near this one passes" in adv.notes[0]


def test_without_n_the_pick_is_the_prediction_alone():
    dom = dpcore.infer_domain(_wide_table()).declared()
    adv = adviser.advise(dom, 1.0, 1)
    assert adv.recommended == min(adviser.predicted_errors(dom, 1.0, 1), key=adviser.predicted_errors(dom, 1.0, 1).get)


def test_the_book_keeps_the_published_record_count_and_advise_reads_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DPSTUDIO_WORKSPACE", str(tmp_path / "ws"))
    df = _wide_table(800)
    path = tmp_path / "t.csv"
    df.to_csv(path, index=False)
    dom_path = tmp_path / "d.json"
    d = dpcore.infer_domain(df).declared().to_dict()
    dom_path.write_text(json.dumps(d))
    # synth without --method: the adviser's pick, said in one line
    assert main(["synth", str(path), "--out", str(tmp_path / "o"), "--domain", str(dom_path), "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "the adviser's pick, as in the app" in out
    man = json.loads((tmp_path / "o" / "manifest.json").read_text())
    method, published = man["method"], man["summary"]["records_per_set"]
    assert f"method: {method} (" in out
    from dpcore.counting.fingerprint import frame_fingerprint
    from dpcore.studio.workspace import installation_book

    book = installation_book()
    assert isinstance(book, BudgetBook)
    from dpcore.data.io import read_table

    # the table as the command line read it (its content fingerprint is the book's key)
    assert book.public_record_count(frame_fingerprint(read_table(path)).key) == pytest.approx(float(published))
    # advise now predicts at that public count (said), not averaged over n
    assert main(["advise", str(path), "--domain", str(dom_path), "--epsilon", "1", "--json"]) == 0
    adv = json.loads(capsys.readouterr().out)
    assert adv["n"]["value"] == pytest.approx(float(published)) and "budget book" in adv["n"]["source"]
    # the doors agree: advise's default m is the app's (one set), and its pick is what synth released
    from dpcore.studio.design import DEFAULT_DESIGN

    assert adv["sets"] == DEFAULT_DESIGN["m"] == 1
