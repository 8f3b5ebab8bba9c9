"""Survey page, section "DP noise in context": sampling noise against sampling + DP noise
over a grid of ε, simulated on SD2011 for the imputation tab's settings (Merrill 2021, ch. 4)."""
from __future__ import annotations

import json
import math
from types import SimpleNamespace

import streamlit as st

from pages import _common as ui
from pages._survey_state import SD2011, cached_context

LN2 = math.log(2.0)


def render(cfg: SimpleNamespace) -> None:
    s = st.session_state
    target, match, k, rule, levels_json = cfg.target, cfg.match, cfg.k, cfg.rule, cfg.levels_json
    query, method, lo, hi, ages, threshold = cfg.query, cfg.method, cfg.lo, cfg.hi, cfg.ages, cfg.threshold
    public_size, eps, parts, problems, key = cfg.public_size, cfg.eps, cfg.parts, cfg.problems, cfg.key
    st.divider()
    st.subheader("DP noise in context")
    with ui.guarded("the noise-in-context controls"):
        st.caption("Treat SD2011 as the population, draw R simple random samples, and on each compare the "
                   "non-private estimate (sampling noise only) with the DP release (sampling + DP noise) over a "
                   "grid of ε (Merrill ch. 4). A simulation on data the curator holds: nothing here is published.")
        c1, c2, c3 = st.columns(3)
        reps = int(c1.number_input("Repetitions R", min_value=5, max_value=500, value=30, step=5, key="sv_reps",
                                   help="Samples drawn. More: smoother boxes, longer wait (each needs an "
                                        "imputation per ε)."))
        rate = float(c2.select_slider("Sampling rate", [0.05, 0.1, 0.2, 0.3, 0.5], value=0.2, key="sv_rate",
                                      help="Share of the population in each sample (public design). Smaller "
                                           "samples: more sampling noise and more DP noise per estimate."))
        if method == "smooth":
            base = [2, 3, 4.5, 6, 10, 16]
            grid = [parts * g * LN2 for g in base]
        else:
            grid = [0.5, 1.0, 2.0, 4.0, 8.0]
        if not problems and all(abs(g - eps) > 1e-3 * eps for g in grid):
            grid = sorted(grid + [float(eps)])
        c3.caption("ε grid: " + ", ".join(f"{g:.3g}" for g in grid) + (" (multiples of ln 2)" if method == "smooth" else ""))
        run = st.button("Run the simulation", key="sv_ctx_go", disabled=bool(problems),
                        help="Runs R × (grid size) releases on simulated samples; cached for the same inputs.")
    if run:
        with ui.guarded("the noise-in-context simulation"):
            with st.status(f"Simulating {reps} samples × {len(grid)} ε values …", expanded=True) as status:
                st.write("Drawing samples, imputing each, releasing at every ε …")
                frame = cached_context(str(SD2011), target, tuple(match), k, rule, levels_json, query, method,
                                       (float(lo), float(hi)), tuple(ages), float(threshold), bool(public_size),
                                       tuple(grid), reps, rate, 2011)
                status.update(label=f"Simulated {reps} samples × {len(grid)} ε values", state="complete",
                              expanded=False)
            s["survey_context"] = {"key": key + json.dumps([reps, rate, grid]), "frame": frame}
    ctx = s.get("survey_context")
    if ctx and ctx["key"] == key + json.dumps([reps, rate, grid]):
        with ui.guarded("the noise-in-context figure"):
            from dpcore.survey.context import context_figure, summarize

            fig = context_figure(ctx["frame"], title=f"{query} of {target}{f' < {threshold:g}' if query == 'count' else ''}, ages {ages[0]}–{ages[1]}: "
                                                     f"sampling vs sampling + DP")
            fig.update_xaxes(type="category", title="ε")
            fig.update_layout(height=460, margin=dict(l=10, r=10, t=60, b=10),
                              legend=dict(orientation="h", yanchor="top", y=-0.18, x=0, title_text=""))
            st.plotly_chart(fig, config={"displaylogo": False}, key="sv_ctx_fig")
            st.caption("Boxes: interquartile range; whiskers: 5th–95th percentile; dashed line: the value on the "
                       "whole (imputed) population. Where the red box is as narrow as the blue one, DP noise is "
                       "small next to sampling noise.")
            with st.expander("Summary table"):
                st.dataframe(summarize(ctx["frame"]), hide_index=True, width="stretch")
