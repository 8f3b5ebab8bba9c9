"""Utility and disclosure measures for synthetic data (docs/measures.md).

**Not differentially private.**  Every measure in this package reads the raw
(original) data.  The results are for the curator's evaluation of a synthesis and
must not be published as if they were covered by the release's ε.
"""

from dpcore.metrics.analysis import ChisqConsistency, L1Distance, chisq_consistency, l1_distance
from dpcore.metrics.disclosure import Disclosure, disclosure
from dpcore.metrics.evaluate import evaluate
from dpcore.metrics.registry import METRICS, Metric
from dpcore.metrics.regression import RegressionOverlap, regression_overlap
from dpcore.metrics.specks import Specks, specks
from dpcore.metrics.sweep import sweep
from dpcore.metrics.tables import UtilityTables, WorstTable, utility_tables

__all__ = [
    "ChisqConsistency",
    "Disclosure",
    "L1Distance",
    "METRICS",
    "Metric",
    "RegressionOverlap",
    "Specks",
    "UtilityTables",
    "WorstTable",
    "chisq_consistency",
    "disclosure",
    "evaluate",
    "l1_distance",
    "regression_overlap",
    "specks",
    "sweep",
    "utility_tables",
]
