"""[studio-truth] item 4: declared structural facts ("under 16 ⇒ not married") enforced on the synthetic records,
as synthpop's rules: post-processing, stated in the manifest with how many records each rule changed; bad rules
refused in one line before anything is spent."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.cli.commands import main
from dpcore.errors import OptionError


def _people(n: int = 3000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.choice(["0-15", "16-39", "40+"], n, p=[0.25, 0.4, 0.35])
    married = np.where(age == "0-15", "no", rng.choice(["no", "yes"], n))
    return pd.DataFrame({"age": age, "married": married, "region": rng.choice(list("abcd"), n)})


RULE = [{"if": "age == '0-15'", "then": {"married": "no"}}]


def test_a_rule_holds_on_every_synthetic_record_and_the_manifest_says_so():
    df = _people()
    dom = dpcore.infer_domain(df).declared()
    plain = dpcore.synthesize(df, "mst", 0.1, seed=4, domain=dom)
    broken = int(((plain.sets[0].age == "0-15") & (plain.sets[0].married == "yes")).sum())
    assert broken > 0  # the model drew married children: the rule has work to do
    ruled = dpcore.synthesize(df, "mst", 0.1, seed=4, domain=dom, rules=RULE)
    s = ruled.sets[0]
    assert not ((s.age == "0-15") & (s.married == "yes")).any()
    info = ruled.manifest()["diagnostics"]["rules"]
    assert info["rules"] == RULE and info["records_changed_per_set"] == [[broken]]
    # post-processing: the ledger is the same as without the rule
    assert [c for _, c in plain.ledger.charges()] == [c for _, c in ruled.ledger.charges()]
    others = (s.age != "0-15")
    assert (s[others].married == plain.sets[0][others].married).all()


@pytest.mark.parametrize("rules, match", [
    ("age < 16", "list"), ([{"if": "age == '0-15'"}], "write it as"), ([{"if": "", "then": {"married": "no"}}],
                                                                       "expression"),
    ([{"if": "x", "then": {"spouse": "no"}}], "not a column"), ([{"if": "x", "then": {"married": "maybe"}}],
                                                                 "no level 'maybe'"),
    ([{"if": "x", "then": {"married": None}}], "no missing level"),
])
def test_bad_rules_are_refused_before_anything_is_spent(rules, match):
    df = _people(200)
    with pytest.raises(OptionError, match=match):
        dpcore.synthesize(df, "mst", 1.0, seed=0, domain=dpcore.infer_domain(df).declared(), rules=rules)


def test_the_command_line_takes_a_rules_file(tmp_path, capsys):
    df = _people(800)
    path, dom_path, rules = tmp_path / "p.csv", tmp_path / "d.json", tmp_path / "r.json"
    df.to_csv(path, index=False)
    dom_path.write_text(dpcore.infer_domain(df).declared().to_json())
    rules.write_text(json.dumps(RULE))
    assert main(["synth", str(path), "--out", str(tmp_path / "o"), "--domain", str(dom_path), "--method", "mst",
                 "--rules", str(rules), "--no-book", "--seed", "1"]) == 0
    s = pd.read_csv(tmp_path / "o" / "synthetic_1.csv")
    assert not ((s.age == "0-15") & (s.married == "yes")).any()
    rules.write_text("{not json")
    assert main(["synth", str(path), "--out", str(tmp_path / "o2"), "--domain", str(dom_path), "--rules",
                 str(rules), "--no-book"]) == 2
    assert "not valid JSON" in capsys.readouterr().err
