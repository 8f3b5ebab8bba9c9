"""The method adviser (dpcore.studio.adviser, dpcore.studio.error_model, bench/accuracy/fit_adviser.py) and the
glossary it links to (dpcore.studio.glossary)."""
from __future__ import annotations

import inspect
import json
import math
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpcore
from bench.accuracy import fit_adviser
from dpcore.studio import adviser, error_model, glossary
from dpcore.synthesizers import REGISTRY

ROOT = Path(__file__).resolve().parents[2]


def _domain(levels) -> dpcore.Domain:
    """A declared domain written by hand: no table exists behind it."""
    return dpcore.Domain.from_dict({"attributes": [{"name": f"a{i}", "levels": [f"v{j}" for j in range(k)]}
                                                   for i, k in enumerate(levels)]})


# --------------------------------------------------------------------------- public facts


def test_features_are_public_facts_of_the_domain_and_numbers():
    facts = error_model.public_facts(_domain([2, 5, 10]), 1.0, 5, 1000, zcdp=True)
    x = dict(zip(error_model.FEATURES, facts.vector()))
    assert x["attributes"] == 3 and x["log10_cells"] == pytest.approx(2.0)  # 2 × 5 × 10 = 100 cells
    assert x["log10_max_levels"] == pytest.approx(1.0)
    assert x["log10_mean_levels"] == pytest.approx(math.log10(17 / 3))
    pair = (10 + 20 + 50) / 3  # the mean cells of the three two-way tables
    assert x["log10_pair_cells"] == pytest.approx(math.log10(pair))
    assert x["log10_epsilon"] == 0 and x["zcdp"] == 1 and x["log10_sets"] == pytest.approx(math.log10(5))
    assert x["log10_n"] == pytest.approx(3.0)
    assert x["log10_signal"] == pytest.approx(math.log10(1000 * 0.2 / pair))
    assert x["log10_full_signal"] == pytest.approx(math.log10(1000 * 0.2 / 100))
    assert x["log10_pairs_signal"] == pytest.approx(math.log10(1000 * 0.2 / (10 + 20 + 50)))
    assert x["log10_pairs"] == pytest.approx(math.log10(3))
    assert x["log10_records_budget"] == pytest.approx(math.log10(200))
    assert x["log10_round_signal"] == pytest.approx(math.log10(1000 * 0.2 / pair / 12))  # AIM's 4·p = 12 rounds
    assert x["log10_tree_signal"] == pytest.approx(math.log10(1000 * 0.2 / pair / 5))  # MST: 3 + 2 measurements
    assert x["log10_pair_to_full_cells"] == pytest.approx(math.log10(80 / 100))
    one = dict(zip(error_model.FEATURES, error_model.facts_from_levels([7], 1.0, 1, 100, zcdp=False).vector()))
    assert one["log10_pairs"] == 0 and all(math.isfinite(v) for v in one.values())
    assert error_model.public_facts(_domain([2, 5, 10]), 1.0, 5, 1000, zcdp=False).vector()[6] == 0


def test_the_features_never_read_records():
    """They take a Domain and numbers: a table is refused, and the signature has no place for records."""
    df = pd.DataFrame({"a": ["x", "y"], "b": ["p", "q"]})
    with pytest.raises(dpcore.InputError, match="not DataFrame"):
        error_model.public_facts(df, 1.0, 1, 100, zcdp=False)
    assert list(inspect.signature(error_model.public_facts).parameters) == ["domain", "epsilon", "sets", "n", "zcdp"]
    assert list(inspect.signature(adviser.predicted_errors).parameters)[:3] == ["domain", "epsilon", "sets"]
    # two tables with the same domain get the same predictions: only the domain and the numbers count
    dom = dpcore.infer_domain(df).declared()
    assert dom.shape == (2, 2)
    assert adviser.predicted_errors(dom, 1.0, 1, public_n=100) == adviser.predicted_errors(_domain([2, 2]), 1.0, 1,
                                                                                           public_n=100)


@pytest.mark.parametrize("bad", [dict(epsilon=0), dict(epsilon=float("nan")), dict(n=-1), dict(sets=0)])
def test_bad_numbers_are_refused_by_name(bad):
    args = {"epsilon": 1.0, "sets": 1, "n": 100, **bad}
    with pytest.raises(dpcore.DPCoreError):
        error_model.facts_from_levels([2, 3], args["epsilon"], args["sets"], args["n"], zcdp=False)


# --------------------------------------------------------------------------- fitting and the JSON model


def _synthetic_corpus(tmp_path, tables=6, seed=0):
    """A tiny results file: AIM best on small tables per cell, flat Laplace best on tables of few cells,
    with noise; what the model must learn from public facts."""
    rng = np.random.default_rng(seed)
    facts, rows = [], []
    for t in range(tables):
        levels = rng.integers(2, 9, size=int(rng.integers(2, 7)))
        n = int(10 ** rng.uniform(2.5, 5))
        facts.append({"table": f"t{t}", "n_records": n, "levels": json.dumps({f"a{i}": int(k)
                                                                              for i, k in enumerate(levels)})})
        log_cells = float(np.log10(levels).sum())
        for definition in ("pure", "zcdp"):
            for eps in (0.3, 1.0, 3.0):
                for m in (1, 5):
                    base = {"aim": 0.3, "mst": 0.5, "flat_laplace": 0.8 * log_cells - 1.2, "steps": 1.5}
                    for method, b in base.items():
                        for s in range(3):
                            v = 10 ** (b + 0.5 * np.log10(m / eps) - 0.2 * np.log10(n) + rng.normal(0, 0.03))
                            rows.append({"table": f"t{t}", "method": method, "definition": definition,
                                         "epsilon": eps, "delta": 1e-9 if definition == "zcdp" else None,
                                         "sets": m, "seed": s, "spmse": v, "status": "ok"})
    rows.append({**rows[0], "method": "dpmm_aim", "spmse": 0.01})  # a peer: not a registered method, left out
    rows.append({**rows[0], "status": "timeout", "spmse": float("nan")})
    pd.DataFrame(facts).to_csv(tmp_path / "tables.csv", index=False)
    pd.DataFrame(rows).to_csv(tmp_path / "results.csv", index=False)
    return tmp_path / "results.csv", tmp_path / "tables.csv"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    results, tables = _synthetic_corpus(tmp_path_factory.mktemp("corpus"))
    return fit_adviser.read_cases(results, fit_adviser.read_tables(tables))


def test_cases_are_medians_of_the_registered_methods_that_ran(corpus):
    assert set(corpus["method"]) == {"aim", "mst", "flat_laplace", "steps"}
    assert len(corpus) == 6 * 2 * 3 * 2 * 4 and set(corpus["seeds"]) == {3}
    assert list(corpus.columns[-len(error_model.FEATURES):]) == list(error_model.FEATURES)


@pytest.mark.parametrize("kind", ["linear", "trees"])
def test_the_model_round_trips_through_json(corpus, kind, tmp_path):
    model = fit_adviser.fit(corpus, kind)
    path = tmp_path / "model.json"
    path.write_text(json.dumps(model.to_dict()))
    loaded = error_model.load_model(path)
    assert loaded.kind == kind and set(loaded.methods) == {"aim", "mst", "flat_laplace", "steps"}
    split = fit_adviser._split(corpus)
    X = split[list(error_model.FEATURES)].to_numpy(float)
    y = split["relative"].to_numpy(float)  # AIM's log10 error less the mean of the methods on the same case
    rows = (split["method"] == "aim").to_numpy()
    # the same fit in scikit-learn predicts what the JSON model predicts
    if kind == "linear":
        from sklearn.linear_model import Ridge

        m = loaded.methods["aim"]
        ref = Ridge(alpha=1.0).fit((X[rows] - m["mean"]) / np.asarray(m["scale"]), y[rows])
        expected = ref.predict((X[rows] - m["mean"]) / np.asarray(m["scale"]))
    else:
        from sklearn.ensemble import GradientBoostingRegressor

        ref = GradientBoostingRegressor(n_estimators=150, learning_rate=0.05, max_depth=3, min_samples_leaf=3,
                                        random_state=0).fit(X[rows], y[rows])
        expected = ref.predict(X[rows])
    got = [loaded.relative("aim", x) for x in X[rows]]
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)
    # the predicted error is the case's level plus the relative part, each read from the JSON
    x = X[0]
    assert loaded.log10_error("aim", x) == pytest.approx(loaded._part(loaded.level, x) + loaded.relative("aim", x))
    assert loaded.level is not None and loaded.level["cases"] == 6 * 12
    assert "pickle" not in path.read_text()


def test_a_model_of_other_features_is_refused(tmp_path):
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"kind": "linear", "features": ["p"], "methods": {}}))
    with pytest.raises(dpcore.InputError, match="refit it"):
        error_model.load_model(path)


def test_leave_one_table_out_scores_the_picks(corpus):
    picks = fit_adviser.loto(corpus, "linear")
    assert len(picks) == 6 * 12 and set(picks["table"]) == {f"t{t}" for t in range(6)}
    assert (picks["ratio"] >= 1).all() and picks["scores"].equals(picks["ratio"] <= fit_adviser.WITHIN)
    s = fit_adviser.summary(picks)
    assert s["cases"] == 72 and s["share_within"] >= 0.9  # the synthetic rule is learnable from public facts
    # the check can fail: on a table where AIM is ten times worse than elsewhere, the model fitted on the
    # other tables still picks AIM, and those picks do not score
    odd = corpus.copy()
    odd.loc[(odd["table"] == "t0") & (odd["method"] == "aim"), "spmse"] *= 10
    t0 = fit_adviser.loto(odd, "linear").query("table == 't0'")
    assert (t0["pick"] == "aim").all() and not t0["scores"].any()


def test_the_shipped_model_is_chosen_without_the_table_it_is_scored_on(corpus, monkeypatch):
    # two quick candidates stand in for the shipped selection (boosted trees: minutes here)
    monkeypatch.setattr(fit_adviser, "SELECTION", ("per-method-constant", "linear"))
    chosen, shares = fit_adviser.choose(corpus)
    assert chosen in fit_adviser.SELECTION and set(shares) == set(fit_adviser.SELECTION)
    assert shares[chosen] == max(shares.values()) and all(0 <= v <= 1 for v in shares.values())
    model = fit_adviser.fit_shipped(corpus, "nested")
    assert model.fitted_on["candidate"] == chosen and model.fitted_on["inner_shares"] == shares
    # nested leave-one-table-out: each fold chooses on the other tables only; the held-out table's rows
    # never reach choose()
    seen = []
    real_choose = fit_adviser.choose

    def spy(cases, *a, **k):
        seen.append(set(cases["table"]))
        return real_choose(cases, *a, **k)

    monkeypatch.setattr(fit_adviser, "choose", spy)
    tables = sorted(corpus["table"].unique())
    picks = fit_adviser.loto(corpus, "nested", n_jobs=1)
    assert [s for s in seen] == [set(tables) - {t} for t in tables]
    assert len(picks) == 6 * 12 and set(picks["chosen"]) <= set(fit_adviser.SELECTION)
    assert picks["scores"].equals(picks["ratio"] <= fit_adviser.WITHIN)


def test_relative_to_best_measures_each_method_from_the_best_of_its_case(corpus):
    split = fit_adviser._split(corpus, "best")
    assert (split["relative"] >= 0).all()
    assert (split.groupby(fit_adviser.CASE)["relative"].min().abs() < 1e-12).all()


def test_the_fit_script_writes_the_model_and_its_validation(tmp_path, capsys):
    results, tables = _synthetic_corpus(tmp_path, tables=4, seed=1)
    out = tmp_path / "m.json"
    assert fit_adviser.main(["--results", str(results), "--tables", str(tables), "--out", str(out),
                             "--kind", "linear"]) == 0
    printed = capsys.readouterr().out
    model = error_model.load_model(out)
    assert model.validation["cases"] == 4 * 12 and model.fitted_on["tables"] == 4
    assert f"{model.validation['share_within']:.1%}" in printed and "pick within 15%" in printed


# --------------------------------------------------------------------------- the advice


@pytest.fixture(scope="module")
def model(corpus):
    return fit_adviser.fit(corpus, "linear")


def test_the_pick_is_the_lowest_predicted_error_among_methods_that_run(model):
    dom = _domain([3, 4, 5, 2])
    pred = adviser.predicted_errors(dom, 1.0, 1, public_n=5000, model=model)
    assert set(pred) == {"aim", "mst", "flat_laplace", "steps"}  # the modelled methods of the registry
    best = min(pred, key=pred.get)
    assert adviser.recommend(dom, 1.0, 1, public_n=5000, model=model) == best
    a = adviser.advise(dom, 1.0, 1, public_n=5000, public_n_source="a test figure", model=model)
    assert a.recommended == best and a.methods[0].method == best and a.methods[0].verdict == "recommended"
    ranked = [m.predicted for m in a.methods if m.predicted is not None]
    assert ranked == sorted(ranked)
    assert {m.method for m in a.methods} == set(REGISTRY)  # every registered method is listed
    assert all(m.verdict == "not modelled" for m in a.methods if m.method not in pred)
    assert "predictions from public facts" in a.summary and "n = 5,000: a test figure" in a.notes[0]
    assert not a.checked and any("previews were not run" in n for n in a.notes)


def test_a_method_whose_preview_fails_is_never_recommended(model):
    dom = _domain([3, 4, 5, 2])
    pred = adviser.predicted_errors(dom, 1.0, 1, public_n=5000, model=model)
    order = sorted(pred, key=pred.get)

    def check(method, options):
        if method == order[0]:
            raise dpcore.OptionError(f"{method} refuses this design (max_cells)")

    a = adviser.advise(dom, 1.0, 1, public_n=5000, model=model, check=check)
    assert a.recommended == order[1] and a.checked
    failed = a.for_method(order[0])
    assert failed.verdict == "cannot run" and "refuses this design" in failed.reason
    assert a.methods[-1].method == order[0] or a.methods.index(failed) > a.methods.index(a.for_method(order[1]))
    assert adviser.recommend(dom, 1.0, 1, public_n=5000, model=model, check=check) == order[1]

    def nothing_runs(method, options):
        raise dpcore.OptionError("no")

    none = adviser.advise(dom, 1.0, 1, public_n=5000, model=model, check=nothing_runs)
    assert none.recommended is None and "No method can run" in none.summary
    assert {m.verdict for m in none.methods} == {"cannot run"}


def test_cannot_run_comes_from_the_preview_only_not_from_the_noise_figures(model, monkeypatch):
    """[studio-polish] item 2: a failure of the noise figures (ipf's under (ε, δ) with numeric columns) does
    not make a method "cannot run"; only its own preview does."""
    import dpcore.previews

    def broken(method, *a, **k):
        raise dpcore.OptionError("unknown noise kind 'discrete_gaussian'")

    monkeypatch.setattr(dpcore.previews, "expected_noise", broken)
    dom = _domain([3, 4, 5, 2])
    a = adviser.advise(dom, 1.0, 1, delta=1e-9, public_n=5000, n=5000, model=model, check=lambda m, o: None)
    assert "cannot run" not in {m.verdict for m in a.methods}
    assert a.recommended is not None
    assert "noise figures are not available" in " ".join(a.for_method(a.recommended).why)


def test_ipf_under_epsilon_delta_with_numeric_columns_is_previewed_for_real():
    """The real preview of every method under (ε, δ) on a table with bounded numeric columns decides."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"deny": rng.choice(["no", "yes"], 300), "pirat": rng.uniform(0, 1, 300),
                       "afam": rng.choice(["no", "yes"], 300)})
    dom = dpcore.infer_domain(df, numeric={"pirat": {"bounds": [0, 1], "bins": 5}}).declared()

    def check(method, options):
        dpcore.preview(df, method=method, epsilon=1.0, sets=1, domain=dom, delta=1e-9, **options)

    a = adviser.advise(dom, 1.0, 1, delta=1e-9, n=300, check=check)
    reasons = {m.method: m.reason for m in a.methods if m.verdict == "cannot run"}
    for method, why in reasons.items():  # whatever cannot run says why, and really fails its preview
        with pytest.raises(dpcore.DPCoreError):
            check(method, {})
        assert why
    assert a.recommended not in reasons


def test_without_a_public_n_the_prediction_averages_over_n(model):
    dom = _domain([3, 4, 5, 2])
    a = adviser.advise(dom, 1.0, 1, model=model)
    grid = [adviser.predicted_errors(dom, 1.0, 1, public_n=n, model=model)["aim"] for n in error_model.N_GRID]
    assert a.for_method("aim").predicted == pytest.approx(math.exp(np.mean(np.log(grid))))
    assert "averaged over n" in a.notes[0]
    as_json = a.to_dict()
    assert as_json["n"] == {"value": None, "source": ""} and as_json["recommended"] == a.recommended
    assert [r["method"] for r in as_json["ranking"]] == [m.method for m in a.methods]


def test_the_menu_and_the_adviser_derive_from_the_registry():
    """[studio-polish] item 9: the registry is the only list of methods."""
    assert adviser.METHODS == tuple(REGISTRY)
    assert adviser.MENU == tuple(n for n, s in REGISTRY.items() if s.tree_select is None)
    assert list(adviser.NAMES_OFFERED) == list(adviser.MENU)
    assert adviser.WHAT == {n: s.summary for n, s in REGISTRY.items()}


def test_the_shipped_model_loads_and_states_its_validation():
    model = error_model.load_model()
    assert set(model.methods) <= set(REGISTRY) and model.methods
    assert model.validation and model.validation["cases"] > 0 and 0 <= model.validation["share_within"] <= 1
    ceiling = model.validation["seed_ceiling"]
    assert ceiling["cases"] > 0 and ceiling["low"] <= ceiling["share_within"] <= ceiling["high"] <= 1


def test_the_advice_quotes_the_validation_and_the_seeds_ceiling(model):
    dom = _domain([3, 4, 5, 2])
    validated = replace(model, validation={"tables": 6, "cases": 72, "share_within": 0.861, "log10_rmse": 0.25,
                                           "seed_ceiling": {"share_within": 0.937, "cases": 72}})
    note = next(n for n in adviser.advise(dom, 1.0, 1, public_n=5000, model=validated).notes if "left out" in n)
    assert "on 86% of 72 cases" in note and "scores 94% on the other half" in note
    plain = replace(validated, validation={k: v for k, v in validated.validation.items() if k != "seed_ceiling"})
    note = next(n for n in adviser.advise(dom, 1.0, 1, public_n=5000, model=plain).notes if "left out" in n)
    assert "oracle" not in note and note.endswith("off by a factor 1.8.")


def test_sweep_disagreements_name_the_epsilon_and_both_methods():
    res = pd.DataFrame({"method": ["AIM", "AIM", "Flat", "Flat"], "options": "{}", "epsilon": [0.1, 1.0, 0.1, 1.0],
                        "rep": 1, "measure": "s_pmse", "value": [80.0, 5.0, 18.0, 9.0]})
    lab = {"AIM": "aim", "Flat": "flat_laplace"}
    lines = adviser.sweep_disagreements(res, lab, lambda e: "aim")
    assert len(lines) == 1 and "ε = 0.1" in lines[0] and "Flat" in lines[0] and "AIM" in lines[0]
    assert adviser.sweep_disagreements(res, lab, lambda e: "aim" if e == 1.0 else "flat_laplace") == []
    other = adviser.sweep_disagreements(res, lab, lambda e: "mst")
    assert len(other) == 2 and "did not run" in other[0]


# --------------------------------------------------------------------------- noise words and the glossary


def test_noise_summary_words():
    df = pd.read_csv(ROOT / "assets" / "sd2011_s7.csv")
    dom = dpcore.infer_domain(df).declared()
    rows = dpcore.expected_noise("flat_laplace", dom, 1.0, n=len(df), sets=1)
    assert adviser.noise_summary(rows).startswith("The noise is larger than the typical count on every released count")
    rows = dpcore.expected_noise("mst", dom, 50.0, n=len(df), sets=1)
    assert adviser.noise_summary(rows).startswith("The noise is smaller than the typical count everywhere")


def test_glossary_entries_have_a_sentence_and_a_docs_page_that_exists():
    terms = glossary.terms()
    assert len(terms) >= 30
    for t in terms.values():
        assert t.sentence.endswith(".") and len(t.sentence) > 20, t
        path = ROOT / "docs" / t.doc
        assert path.is_file(), t
        if t.anchor:
            heads = re.findall(r"^#{1,6}\s+(.+?)\s*#*$", re.sub(r"```.*?```", "", path.read_text(), flags=re.S), re.M)
            assert t.anchor in {glossary.slug(h) for h in heads}, (t.key, t.anchor)


def test_every_term_the_pages_use_is_in_the_glossary():
    used = set()
    for page in sorted((ROOT / "pages").glob("*.py")) + [ROOT / "app.py"]:
        text = page.read_text(encoding="utf-8")
        for call in re.findall(r"gl\.(?:help_text|terms_line|link)\(([^)]*)\)", text):
            used |= set(re.findall(r'"([a-z0-9-]+)"', call.split("lead=")[0]))
    # the option widgets (pages/components/options.py) take their terms from the option's name or _OPTION_TERMS
    from pages.components import glossary as gl

    for spec in REGISTRY.values():
        for o in spec.options:
            keys = gl._OPTION_TERMS.get(o.name, (o.name.replace("_", "-"),))
            if o.name in gl._OPTION_TERMS or keys[0] in glossary.terms():
                used |= set(keys)
    assert {"mosda", "lesda", "uh-random-tree", "aic", "phantom-padding", "fan-out", "nonneg", "wls",
            "uh-consistency", "one-way-share", "method-adviser"} <= used
    missing = sorted(k for k in used if k not in glossary.terms())
    assert not missing, missing
    with pytest.raises(dpcore.InputError, match="no entry 'no-such-term'"):
        glossary.term("no-such-term")


def test_docs_links_are_rewritten_for_the_viewer_and_paths_stay_inside_docs():
    text = "See [AIM](aim.md#options), [privacy](../privacy-model.md), [code](../../dpcore/api.py), [x](https://e.org)."
    out = glossary.rewrite_links(text, "methods/ipf.md", lambda page, anchor: f"<{page}|{anchor}>")
    assert out == "See [AIM](<methods/aim.md|options>), [privacy](<privacy-model.md|>), code, [x](https://e.org)."
    assert "DP ipf" in glossary.doc_text("methods/ipf.md")
    for bad in ("../README.md", "/etc/passwd", "methods/nothing.md"):
        with pytest.raises(dpcore.InputError):
            glossary.doc_text(bad)


def test_method_descriptions_quote_no_figures():
    """[honest-flow] item 4: descriptions must not quote one table's S_pMSE as if general."""
    for text in adviser.WHAT.values():
        assert not re.search(r"\d", text), text


def test_a_steps_variant_picked_by_the_adviser_is_the_one_released():
    """Under "Recommended for this table", a pick with its own tree selection (a random tree, LeSDA) is
    released as that variant, whatever the hierarchy control says; chosen by name, STEPS follows the control."""
    from dpcore.studio import design

    dom = _domain([3, 4, 5, 2])
    d = design.new_design()
    for variant in (n for n, s in REGISTRY.items() if s.hierarchical and s.tree_select is not None):
        assert design.design_call(d, dom, variant)[0] == variant
        assert design.MODE_METHOD[design.auto_tree_mode(d, variant)] == variant
    plain = next(n for n, s in REGISTRY.items() if s.hierarchical and s.tree_select is None)
    assert design.auto_tree_mode(d, plain) is None
    d["release_method"] = plain
    assert design.auto_tree_mode(d, plain) is None and design.design_call(d, dom, plain)[0] == design.MODE_METHOD[
        d["mode"]]


def test_a_case_the_runner_stopped_in_the_middle_of_is_left_out(tmp_path):
    """The runner goes method by method: a case where some method has no row at all (not even a timeout) was
    cut off, and is not a case (its "best" would be the best of the methods reached)."""
    results, tables = _synthetic_corpus(tmp_path)
    r = pd.read_csv(results)
    cut = (r["table"] == "t0") & (r["definition"] == "pure") & (r["epsilon"] == 1.0) & (r["sets"] == 5) & \
        r["method"].isin(["mst", "steps"])
    r[~cut].to_csv(results, index=False)
    cases = fit_adviser.read_cases(results, fit_adviser.read_tables(tables))
    t0 = cases[(cases["table"] == "t0") & (cases["definition"] == "pure") & (cases["epsilon"] == 1.0)]
    assert set(t0["sets"]) == {1}  # the cut case is gone, its neighbour stays
    assert len(cases) == 6 * 2 * 3 * 2 * 4 - 4


def test_the_seed_ceiling_scores_an_oracle_of_the_case_on_seeds_it_did_not_see(tmp_path):
    """Without seed noise the oracle always scores; when two methods swap places from seed to seed, picking on
    half of the seeds misses on the other half in some splits."""
    facts = pd.DataFrame([{"table": "t0", "n_records": 1000, "levels": json.dumps({"a": 2, "b": 3})}])
    facts.to_csv(tmp_path / "tables.csv", index=False)
    tables = fit_adviser.read_tables(tmp_path / "tables.csv")

    def results(aim, mst):
        rows = [{"table": "t0", "method": meth, "definition": "pure", "epsilon": 1.0, "sets": 1, "seed": s,
                 "spmse": v, "status": "ok"} for meth, vals in (("aim", aim), ("mst", mst)) for s, v in enumerate(vals)]
        path = tmp_path / "results.csv"
        pd.DataFrame(rows).to_csv(path, index=False)
        return path

    steady = fit_adviser.seed_ceiling(results([1, 1.1, 1, 1.1], [10, 11, 10, 11]), tables, reps=10)
    assert steady["share_within"] == 1.0 and steady["cases"] == 1
    swapping = fit_adviser.seed_ceiling(results([1, 5, 1, 5], [5, 1, 5, 1]), tables, reps=30)
    assert 0 < swapping["share_within"] < 1 and swapping["low"] == 0 and swapping["high"] == 1
    few_seeds = fit_adviser.seed_ceiling(results([1, 1, 1], [2, 2, 2]), tables)
    assert few_seeds["cases"] == 0  # fewer than 4 seeds: no halves to compare
