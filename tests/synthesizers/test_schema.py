"""The registry owns each method's options ([architecture] step 3): one declaration per option,
from which the method resolves, the command line builds its flags and the Design page its widgets."""
from __future__ import annotations

import dataclasses

import pytest

from dpcore.cli.commands import build_parser
from dpcore.errors import OptionError
from dpcore.synthesizers import REGISTRY
from dpcore.synthesizers.schema import Option, check_known, defaults, value

OPTION_CLASSES = {"steps": "StepsOptions", "uh_random": "StepsOptions", "steps_lesda": "StepsOptions",
                  "flat_laplace": "FlatOptions", "ipf": "IpfOptions", "privbayes": "PrivBayesOptions",
                  "aim": "AimOptions", "mst": "MstOptions"}


def _options_class(method):
    import dpcore.synthesizers as S

    name = OPTION_CLASSES[method]
    for mod in (getattr(S, m) for m in ("steps", "flat_laplace", "ipf", "privbayes", "aim", "mst")):
        if hasattr(mod, name):
            return getattr(mod, name)
    raise AssertionError(name)


@pytest.mark.parametrize("method", sorted(REGISTRY))
def test_the_schema_declares_exactly_the_options_the_method_resolves(method):
    spec = REGISTRY[method]
    assert spec.label and spec.options, f"{method} has no label or options schema"
    fields = {f.name: f for f in dataclasses.fields(_options_class(method))}
    assert {o.name for o in spec.options} == set(fields)
    for o in spec.options:
        assert o.help and o.help == o.help.strip() and "\n" not in o.help
        f = fields[o.name]
        if o.default is not None and f.default is not dataclasses.MISSING:
            assert o.default == f.default, (method, o.name)  # one default, not two


@pytest.mark.parametrize("method", sorted(REGISTRY))
def test_resolve_takes_its_defaults_from_the_schema(method, monkeypatch):
    """Changing a declared default changes what resolve returns: the schema is the source."""
    import pandas as pd

    from dpcore.data.inference import infer_domain

    dom = infer_domain(pd.DataFrame({"a": list("xyxy"), "b": list("pqqp"), "c": list("uuvv")})).declared()
    spec = REGISTRY[method]
    choice = next((o for o in spec.options if o.kind == "choice" and o.default is not None and len(o.choices) > 1
                   and o.name not in ("select", "noise", "noise_backend", "score")), None)
    if choice is None:
        pytest.skip(f"{method} has no free choice option")
    other = next(c for c in choice.choices if c != choice.default)
    patched = tuple(dataclasses.replace(o, default=other) if o is choice else o for o in spec.options)
    # the modules read their own OPTIONS tuple: patch it where resolve looks
    import sys

    mod = sys.modules[type(spec).__module__]
    name = "STEPS_OPTIONS" if spec.hierarchical else "OPTIONS"
    monkeypatch.setattr(mod, name, patched)
    assert getattr(spec.resolve(dom, method), choice.name) == other


def test_every_option_is_a_flag_of_synth_and_preview():
    p = build_parser()
    for name, spec in REGISTRY.items():
        for o in spec.options:
            if not o.cli:
                continue
            raw = "2" if o.kind in ("int", "float", "float_or_auto") else (o.choices[0] if o.choices else "a")
            for cmd in (["synth", "x.csv", "--out", "o"], ["preview", "x.csv"]):
                args = p.parse_args(cmd + [o.flag, raw])
                assert getattr(args, o.name) is not None, (name, o.name, cmd[0])


def test_option_checks_name_the_option():
    o = Option("k", "int", 2, "a count", low=1, high=5)
    assert value([o], {}, "k") == 2 and value([o], {"k": 3}, "k") == 3
    with pytest.raises(OptionError, match="k must be a whole number from 1 to 5"):
        value([o], {"k": 9}, "k")
    c = Option("mode", "choice", "a", "a mode", choices=("a", "b"))
    with pytest.raises(OptionError, match="mode must be one of a, b"):
        value([c], {"mode": "z"}, "mode")
    f = Option("share", "float_or_auto", "auto", "a share", low=0, high=0.9)
    assert value([f], {"share": "auto"}, "share") == "auto" and value([f], {"share": 0.5}, "share") == 0.5
    with pytest.raises(OptionError, match="share must be a finite number ≥ 0 and ≤ 0.9"):
        value([f], {"share": 1.5}, "share")
    with pytest.raises(OptionError, match="unknown option"):
        check_known([o, c], {"zz": 1}, "m")
    assert defaults([o, c]) == {"k": 2, "mode": "a"}
    with pytest.raises(ValueError):
        Option("x", "choice", "a", "no choices")


def test_every_option_has_a_curator_label_distinct_within_its_method():
    """The Design page labels each generated widget with the option's ``label`` (its words, not its
    identifier): every option has one, and no two options of a method share one."""
    for name, spec in REGISTRY.items():
        labels = [o.title for o in spec.options]
        assert all(o.label for o in spec.options), (name, [o.name for o in spec.options if not o.label])
        assert len(set(labels)) == len(labels), (name, labels)
