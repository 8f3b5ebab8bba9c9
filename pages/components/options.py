"""A method's option widgets, built from its schema (dpcore.synthesizers.schema): the Design page
draws no option by hand, so an option added to a method appears here with its default, range and help."""
from __future__ import annotations

import streamlit as st

from dpcore.errors import DPCoreError
from dpcore.studio import design
from dpcore.synthesizers import REGISTRY
from pages.components import glossary as gl

#: offered values of an option that is a number or the word "auto"
_AUTO_GRID = 5


def _label(o) -> str:
    return o.title


def _help(o) -> str:
    return gl.option_help(o)


def option_widgets(cfg: dict, method: str, *, skip=(), advanced: bool = False, container=None) -> None:
    """One widget per option of ``method`` (the advanced ones when ``advanced``), bound to the design
    ``cfg``; a value the schema refuses is shown as one error line under its widget and not kept."""
    box = container or st
    s = st.session_state
    for o in REGISTRY[method].options:
        if o.name in skip or o.advanced != advanced or not o.cli:
            continue
        key = f"w_opt_{method}_{o.name}"
        current = design.option_value(cfg, method, o.name)
        if key not in s:
            s[key] = _widget_value(o, current)
        _draw(box, o, key)
        try:
            design.set_option(cfg, method, o.name, _design_value(o, s[key]))
        except DPCoreError as exc:
            box.error(str(exc), icon=":material/warning:")


def _widget_value(o, v):
    if o.kind == "int" and o.default is None:
        return 0 if v is None else int(v)  # 0: the method works the default out
    if o.kind == "text":
        return "" if v is None else str(v)
    return v


def _design_value(o, v):
    if o.kind == "int" and o.default is None and not v:
        return None
    if o.kind == "text":
        return v.strip() or o.default
    return o.check(v) if v is not None else o.default


def _draw(box, o, key: str) -> None:
    label = _label(o)
    if o.kind == "choice":
        box.selectbox(label, list(o.choices), key=key, help=_help(o))
    elif o.kind == "int":
        lo = 0 if o.default is None else (int(o.low) if o.low is not None else None)
        hi = int(o.high) if o.high is not None else None
        box.number_input(label + (" (0: " + o.default_text + ")" if o.default is None else ""), min_value=lo,
                         max_value=hi, step=1, key=key, help=_help(o))
    elif o.kind == "float":
        box.number_input(label, min_value=None if o.low is None else float(o.low),
                         max_value=None if o.high is None else float(o.high), key=key, format="%.4g",
                         help=_help(o))
    elif o.kind == "float_or_auto":
        lo, hi = float(o.low or 0.0), float(o.high if o.high is not None else 1.0)
        grid = ["auto"] + [round(lo + (hi - lo) * i / (_AUTO_GRID - 1), 4) for i in range(_AUTO_GRID)]
        if st.session_state[key] not in grid:  # an imported design's own value stays offered
            grid.append(st.session_state[key])
        box.selectbox(label, grid, key=key, help=_help(o),
                      format_func=lambda v: "auto" if v == "auto" else f"{v:g}")
    else:
        box.text_input(label, key=key, placeholder=o.default_text or None, help=_help(o))
