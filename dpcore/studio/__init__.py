"""The curator's workplace: the workspace on disk, the budget book, the release report.

* :mod:`.workspace`: tables, confirmed domains, designs, releases and session state (SQLite);
* :mod:`.budget_book`: ε per table across releases, the per-table cap, reserve-release-commit;
* :mod:`.report`: the release report (offline HTML and PDF).

Rule: the studio calls the library's releases and measures; it adds no privacy mechanism.
"""
