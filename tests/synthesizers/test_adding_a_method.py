"""[typed-contracts]: docs/methods/adding-a-method.md is true. Its code, as written on the page, defines a method
that registers and releases through dpcore.synthesize under both definitions, spends exactly the ε asked for,
and says its noise before anything is spent."""
from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

import dpcore
from dpcore.synthesizers import REGISTRY, Method

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "methods" / "adding-a-method.md"


@pytest.fixture()
def one_way(tmp_path, monkeypatch):
    """The page's code blocks, in order, as a module; registered as the page says (the registry's dict)."""
    code = "\n".join(re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S))
    path = tmp_path / "one_way_example.py"
    path.write_text(code, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("one_way_example", path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "one_way_example", module)
    spec.loader.exec_module(module)
    for m in module.METHODS:
        monkeypatch.setitem(REGISTRY, m.name, m)
    return module


def test_the_pages_method_meets_the_contract_and_releases_under_both_definitions(one_way, s7, s7_domain):
    (method,) = one_way.METHODS
    assert isinstance(method, Method)  # the protocol, checked at run time for its methods
    for delta in (None, 1e-9):
        rel = dpcore.synthesize(s7, "one_way", 1.0, sets=2, seed=3, domain=s7_domain, delta=delta)
        assert rel.dp and len(rel.sets) == 2 and list(rel.sets[0].columns) == list(s7.columns)
        assert rel.ledger.epsilon == pytest.approx(1.0, abs=1e-9)
        margins = [p for p, _ in rel.ledger.charges() if "/set 1/one-way" in p]
        assert len(margins) == len(s7_domain)
        assert all(c.mechanism.startswith("discrete_gaussian" if delta else "discrete_laplace")
                   for p, c in rel.ledger.charges() if "/set " in p)
    rows = dpcore.expected_noise("one_way", s7_domain, 1.0, n=len(s7), sets=2)
    assert [r.what for r in rows] == [f"one-way margin {a}" for a in s7_domain.names]
    charged = [c for p, c in dpcore.synthesize(s7, "one_way", 1.0, sets=2, seed=3, domain=s7_domain)
               .ledger.charges() if "/set 1/" in p]
    assert all(r.budget.value == pytest.approx(c.epsilon, rel=1e-12) for r, c in zip(rows, charged))
    preview = dpcore.preview(s7, "one_way", 1.0, domain=s7_domain, delta=1e-9)
    assert "rho" in preview.margins.columns and len(preview.margins) == len(s7_domain)
    with pytest.raises(dpcore.OptionError, match="unknown option"):
        dpcore.synthesize(s7, "one_way", 1.0, domain=s7_domain, layers=2)


def test_the_page_registers_as_the_registry_does():
    """Step 5 of the page: the registry is built from one tuple of method modules' METHODS."""
    init = (ROOT / "dpcore" / "synthesizers" / "__init__.py").read_text(encoding="utf-8")
    assert "for m in module.METHODS" in init
    assert "methods/adding-a-method.md" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
