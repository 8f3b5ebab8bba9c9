"""The data layer: reading tables, the public domain, editing it, the bundled datasets.

* :mod:`.io` (CSV, Parquet: every field as text first) and :mod:`.formats` (SPSS, Stata, SAS,
  Excel): the reading rules, nothing silently altered;
* :mod:`.domain`: the public domain (levels, bin edges, NA) and encoding records to codes;
* :mod:`.inference`: a domain inferred from raw data (curator-only until declared), by one rule for
  every engine;
* :mod:`.editing`: the curator's edits of a domain, as explicit recodes;
* :mod:`.datasets`: the SD2011 and CPS extracts in ``assets/``;
* :mod:`.server_files`: tables in the app's configured server folder.

Rule: nothing here is released; an inferred domain is curator-only until declared public.
"""
