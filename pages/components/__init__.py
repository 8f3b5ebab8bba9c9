"""What the app's pages are built from: session state and the cached ``dpcore`` calls, the workspace,
the budget book's panel, the charts, the job panels, the Survey page's tabs, … (one module each).

``pages/`` holds only the pages that app.py registers with ``st.navigation``, widgets only; everything
they share lives here. Streamlit lists the ``*.py`` files directly in ``pages/`` (never a subfolder),
so none of these modules can show up as a page. A page imports the modules it uses by name:
``from pages.components import guard, session, state``.
"""
