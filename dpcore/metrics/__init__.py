"""Utility and disclosure measures for synthetic data (SPEC §5).

**Not differentially private.**  Every measure in this package reads the raw
(original) data.  The results are for the curator's evaluation of a synthesis and
must not be published as if they were covered by the release's ε.
"""

from dpcore.metrics.disclosure import Disclosure, disclosure
from dpcore.metrics.tables import UtilityTables, WorstTable, utility_tables

__all__ = [
    "Disclosure",
    "UtilityTables",
    "WorstTable",
    "disclosure",
    "utility_tables",
]
