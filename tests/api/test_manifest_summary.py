"""manifest.json opens with a short human summary, and the ledger's totals print cleanly while
the exact sums stay checked ([honest-flow] row 10; docs/privacy-model.md#the-manifest)."""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import math

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.cli.commands import main
from dpcore.data.io import read_table
from dpcore.manifest_summary import FINGERPRINT_WITHHELD, epsilon_for_reading, epsilon_phrase, rounded_epsilon
from dpcore.privacy.budget import Epsilon
from dpcore.privacy.ledger import TOTAL_DIGITS, Ledger, readable_total
from dpcore.studio.report import build_report_html, load_release_dir
from dpcore.studio.workspace import Workspace, table_fingerprint

SUMMARY_KEYS = ["table", "table_sha256", "table_sha256_note", "created_utc", "method", "epsilon", "epsilon_note",
                "delta", "neighbours", "dp", "records_per_set", "records_note"]


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    rng = np.random.default_rng(4)
    n = 500
    return pd.DataFrame({"sex": rng.choice(["F", "M"], n), "region": rng.choice(list("NSEW"), n),
                         "age": rng.integers(18, 90, n)})


@pytest.fixture(scope="module")
def domain(table):
    return dpcore.infer_domain(table, numeric={"age": {"bounds": [0, 100], "bins": 5}}).declared()


def _sum_tree(node: Ledger) -> float:
    """The exact total of a ledger from its charges: fsum of sequential children, max of parallel ones."""
    vals = [_sum_tree(c) if isinstance(c, Ledger) else c.epsilon for c in node.children]
    if not vals:
        return 0.0
    return math.fsum(vals) if node.composition == "sequential" else max(vals)


def test_the_summary_opens_the_manifest(table, domain):
    before = dt.datetime.now(dt.UTC).replace(microsecond=0)
    rel = dpcore.synthesize(table, "flat_laplace", 4.158883083359672, sets=2, seed=1, domain=domain)
    rel.for_table("survey.csv", "ab" * 32)
    text = rel.manifest_json()
    assert text.lstrip().startswith('{\n  "summary": {')  # first in the file, before the full ledger
    m = json.loads(text)
    assert list(m)[0] == "summary" and list(m["summary"]) == SUMMARY_KEYS
    s = m["summary"]
    created = dt.datetime.strptime(s["created_utc"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
    assert before <= created <= dt.datetime.now(dt.UTC)
    assert s["table"] == "survey.csv" and s["method"] == "flat_laplace"
    assert s["epsilon"] == 4.16 and m["epsilon"] == 4.158883083359672  # rounded for reading; exact below
    assert s["delta"] is None and s["neighbours"] == "add/remove one record" and s["dp"] == "yes"
    assert s["records_per_set"] == m["record_count"]["value"] == len(rel.sets[0])
    assert "noisy" in s["records_note"]
    # the published manifest never holds the table's hash; the private copy does
    assert s["table_sha256"] is None and s["table_sha256_note"] == FINGERPRINT_WITHHELD
    assert "ab" * 32 not in text
    private = rel.manifest(private=True)["summary"]
    assert private["table_sha256"] == "ab" * 32 and "table_sha256_note" not in private
    assert rel.manifest_json() == text  # made once: the book's SHA-256 and the stored text agree


def test_replace_and_not_dp_summaries(table, domain):
    rel = dpcore.synthesize(table, "flat_laplace", 1.0, seed=1, domain=domain, neighbours="replace")
    s = rel.manifest()["summary"]
    assert s["neighbours"] == "replace one record (n public)" and s["records_per_set"] == len(table)
    assert "public under replace" in s["records_note"] and s["table"] is None  # no name given
    rel = dpcore.synthesize(table, "steps", 1.0, seed=1, domain=domain, select="nonprivate", layers=1)
    assert rel.manifest()["summary"]["dp"] == "NO (see dp_reason below)"


def test_ledger_totals_print_cleanly_and_the_exact_sum_is_checked(table, domain):
    rel = dpcore.synthesize(table, "flat_laplace", 0.3, sets=3, seed=2, domain=domain)
    exact = rel.ledger.epsilon
    assert exact != 0.3 and abs(exact - 0.3) <= 1e-12  # 0.29999999999999993: the float sum of the shares
    assert exact == _sum_tree(rel.ledger)  # the exact sum of the charges
    led = rel.manifest()["ledger"]
    assert led["epsilon_total"] == 0.3 and '"epsilon_total": 0.3,' in rel.manifest_json()
    assert math.fsum(c["epsilon"] for c in led["charges"]) == exact  # the charges keep their exact ε
    groups = [led["composition"]]
    while groups:
        g = groups.pop()
        assert g["epsilon"] == float(f"{g['epsilon']:.{TOTAL_DIGITS}g}")
        groups += [c for c in g["children"] if "children" in c]
    with pytest.raises(AssertionError, match="ledger totals"):
        rel.ledger.assert_total(Epsilon(0.3 + 1e-9))


def test_readable_total_moves_a_sum_by_less_than_the_check():
    rng = np.random.default_rng(0)
    for _ in range(5000):
        shares = rng.dirichlet(np.ones(rng.integers(2, 30))) * float(rng.choice([0.1, 0.3, 0.7, 1.0, 2.5, 1e-6, 1e4]))
        exact = math.fsum(shares.tolist())
        shown = readable_total(exact)
        assert abs(shown - exact) <= 5e-13 * abs(exact)
    assert readable_total(0.9999999999999999) == 1.0 and readable_total(0.29999999999999993) == 0.3


@pytest.mark.parametrize("eps,text,phrase", [(1.0, "1", "= 1"), (0.5, "0.5", "= 0.5"),
                                             (4.158883083359672, "4.16", "≈ 4.16"),
                                             (0.9999999999999999, "1", "≈ 1"), (1e-5, "1e-05", "= 1e-05"),
                                             (1234.5, "1230", "≈ 1230")])
def test_epsilon_for_reading(eps, text, phrase):
    assert epsilon_for_reading(eps) == text and epsilon_phrase(eps) == phrase
    assert rounded_epsilon(eps) == float(text)


def test_every_consumer_reads_the_new_manifest(table, domain, tmp_path):
    """Workspace (stored release, budget book's SHA-256), the report, the release folder reader."""
    ws = Workspace(tmp_path / "ws")
    fp = ws.add_table(table, "t.csv").fingerprint
    assert fp == table_fingerprint(table)

    def run():
        return dpcore.synthesize(table, "flat_laplace", 0.3, sets=3, seed=2, domain=domain).for_table("t.csv", fp)

    entry, rel = ws.release(fp, 0.3, "flat_laplace", "add_remove", run, "t.csv")
    stored = ws.stored_release(entry)
    assert stored.manifest_json() == rel.manifest_json()
    book = next(e for e in ws.releases(fp) if e["id"] == entry)
    assert book["manifest_sha256"] == hashlib.sha256(stored.manifest_text.encode()).hexdigest()
    assert stored.ledger.epsilon == 0.3 and stored.epsilon == 0.3 and stored.dp
    assert fp not in stored.manifest_text  # the fingerprint stays in the book
    html = build_report_html(stored.manifest_dict, stored.sets)
    assert "= 0.3, requested 0.3)" in html  # the ledger chart's title: the clean total
    rel.write(tmp_path / "rel")
    manifest, sets = load_release_dir(tmp_path / "rel")
    assert manifest["summary"]["table"] == "t.csv" and len(sets) == 3


def test_cli_synth_names_the_table_and_keeps_the_fingerprint_private(table, tmp_path, capsys):
    src = tmp_path / "people.csv"
    table.to_csv(src, index=False)
    dom = tmp_path / "d.json"
    assert main(["domain", str(src), "--out", str(dom), "--numeric", "age=0:100:5"]) == 0
    d = json.loads(dom.read_text())
    d["source"] = "declared"
    dom.write_text(json.dumps(d))
    assert main(["synth", str(src), "--out", str(tmp_path / "r"), "--domain", str(dom), "--seed", "3",
                 "--method", "flat_laplace", "--private-manifest", str(tmp_path / "private.json")]) == 0
    published = json.loads((tmp_path / "r" / "manifest.json").read_text())
    private = json.loads((tmp_path / "private.json").read_text())
    fp = table_fingerprint(read_table(src))
    assert published["summary"]["table"] == private["summary"]["table"] == "people.csv"
    assert published["summary"]["table_sha256"] is None and fp not in (tmp_path / "r" / "manifest.json").read_text()
    assert private["summary"]["table_sha256"] == fp
    assert published["summary"]["dp"] == "yes"
