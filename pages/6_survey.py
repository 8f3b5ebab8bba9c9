"""Survey estimates: DP releases from k-NN-imputed survey data, DP post-stratification, and DP noise in
context, on the table of the Data page or a bundled survey demo.

All computation is done by ``dpcore.survey`` (Merrill 2021, ch. 4–7); this page only
collects the curator's choices, calls it, and shows the value, its ledger and the
simulation "sampling noise vs sampling + DP noise".
"""
from __future__ import annotations

import streamlit as st

from pages.components import session, survey_imputation, survey_poststrat, survey_session

session.init_state()
survey_session.seed()  # the inputs saved with the workspace session (a reload) or left on another page

st.title("6 · Survey estimates")
st.caption("DP estimates from a survey sample (Merrill 2021, *Privacy in complex sample based surveys*), on the "
           "table loaded on the Data page, charged to its budget book, or on a bundled survey demo (Social "
           "Diagnosis 2011 for imputation, the weighted CPS voting supplement for post-stratification). Each "
           "**Compute release** click spends ε again: publish one release only.")

tab_imp, tab_ps = st.tabs(["Imputed estimate (k-NN)", "Post-stratification (weights)"])

try:
    with tab_imp:
        survey_imputation.render()

    with tab_ps:
        survey_poststrat.render()
finally:  # also after st.stop() in a tab: the workspace session saves these inputs
    survey_session.remember()
