"""[privacy-audit] finding "tiny ε releases the exact table, labelled DP", end to end: numpy's
geometric saturated, so `synth --method flat_laplace --epsilon 1e-300` printed "DP: yes" with
the true table (privbayes too) and STEPS crashed below about 1e-154. Every registered method
(the registry is iterated) now refuses an ε its samplers cannot honour, the CLI says so in
one line, and the smallest accepted ε still draws noise."""
import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.cli.commands import main
from dpcore.privacy.ledger import MIN_EPSILON
from dpcore.synthesizers import REGISTRY


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(0)
    return pd.DataFrame({"a": rng.choice(["x", "y"], 200), "b": rng.choice(["p", "q", "r"], 200)})


@pytest.mark.parametrize("eps", [1e-300, 1e-154, 1e-30, 1e-19, MIN_EPSILON / 2])
@pytest.mark.parametrize("method", sorted(REGISTRY))
def test_every_method_refuses_an_epsilon_below_what_its_samplers_support(table, method, eps):
    dom = dpcore.infer_domain(table).declared()
    with pytest.raises(dpcore.OptionError, match="epsilon .* too small"):
        dpcore.synthesize(table, method, eps, seed=1, domain=dom)


@pytest.mark.parametrize("method", ["flat_laplace", "privbayes", "steps"])
def test_cli_refuses_tiny_epsilon_in_one_line_and_never_says_dp(method, table, tmp_path, capsys):
    data, dom = tmp_path / "t.csv", tmp_path / "domain.json"
    table.to_csv(data, index=False)
    dom.write_text(dpcore.infer_domain(table).declared().to_json(), encoding="utf-8")
    code = main(["synth", str(data), "--out", str(tmp_path / "o"), "--method", method, "--epsilon", "1e-300",
                 "--domain", str(dom)])
    out, err = capsys.readouterr()
    assert code == 2 and "DP: yes" not in out and not (tmp_path / "o" / "manifest.json").exists()
    assert len(err.strip().splitlines()) == 1 and "too small" in err and "epsilon" in err


@pytest.mark.parametrize("method", sorted(REGISTRY))
def test_the_smallest_accepted_epsilon_still_draws_noise(table, method):
    """At ε = MIN_EPSILON (1e-9; replace, so no share goes to a record count) every count has
    noise of scale ~10⁹: the synthetic cross-tabulation is not the original's."""
    dom = dpcore.infer_domain(table).declared()
    rel = dpcore.synthesize(table, method, MIN_EPSILON, seed=3, domain=dom, neighbours="replace")
    orig = table.value_counts().sort_index()
    syn = rel.sets[0].value_counts().reindex(orig.index, fill_value=0)
    assert len(rel.sets[0]) == len(table) and not (syn == orig).all()
