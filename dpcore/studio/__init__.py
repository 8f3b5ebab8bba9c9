"""The curator's workplace: the workspace on disk, the budget book, the release report.

* :mod:`.workspace`: tables, confirmed domains, designs, releases and session state (SQLite);
* :mod:`.budget_book`: the installation's one book: ε per table across releases (every workspace, the
  command line), the per-table cap, reserve-release-commit, append-only events, the audit trail;
* :mod:`.book_store`, :mod:`.book_merge`, :mod:`.table_match`: where the book is kept (SQLite or
  PostgreSQL), the merge of the workspaces' own books of before, tables that look like known ones;
* :mod:`.report`: the release report (offline HTML and PDF);
* :mod:`.adviser`: the method adviser (which method suits a table: each method's error predicted
  from public facts by :mod:`.error_model`, fitted to the corpus; each method's expected noise);
* :mod:`.jobs`: long jobs (releases, sweeps) in a background thread, with progress and Cancel;
* :mod:`.glossary`: the glossary of docs/glossary.md for the app's tooltips and docs viewer.

Rule: the studio calls the library's releases and measures; it adds no privacy mechanism.
"""
