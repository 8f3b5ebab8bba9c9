"""DP tools for complex surveys, after Merrill (2021), *Privacy in complex sample based surveys*.

* :mod:`.partition` (ch. 5): random-permutation partitions and amplification by sampling.
* :mod:`.knn` and :mod:`.imputation` (ch. 6): deterministic k-NN imputation, L_1(D) and
  smooth-sensitivity releases of counts, means and variances, with Laplace baselines.
* :mod:`.poststrat` (ch. 7): DP bin selection, DP IPF and post-stratified weighted counts.
* :mod:`.context` (ch. 4): DP error next to sampling error, as a tidy frame and a figure.
* the budget book of survey releases is :mod:`dpcore.studio.survey_book` (reserved against the
  table's cap before any randomness, recorded with its ledger's ε).
* :mod:`.cli`: ``add_survey_parsers`` for ``python -m dpcore``.

Every function that reads the data and releases something says its ε and neighbour notion
(``neighbours=``; unsupported notions are refused), returns a :class:`~dpcore.privacy.ledger.Ledger`
and a ``statement`` of exactly what holds. All noise comes from :mod:`dpcore.privacy.mechanisms`;
Laplace-type releases are exact on a grid, smooth-sensitivity ones are stated for the ideal
mechanism (docs/survey-privacy.md).
"""
from dpcore.survey._smooth import SmoothRelease, cauchy_smooth_epsilon, check_gamma
from dpcore.survey.bins import Binning, binning, select_bins, smooth_weight_bound
from dpcore.survey.imputation import (
    BaselineRelease,
    release_count,
    release_count_global,
    release_count_ignoring_missing,
    release_mean,
    release_mean_global,
    release_mean_ignoring_missing,
    release_variance,
)
from dpcore.survey.knn import KNNImputation, knn_impute
from dpcore.survey.partition import (
    Partition,
    PieceRelease,
    amplification_table,
    amplified_epsilon,
    effective_epsilon,
    laplace_proportion,
    max_useful_beta,
    partition,
    release_to_user,
)
from dpcore.survey.poststrat import PostStratRelease, poststratify_release

__all__ = [
    "amplified_epsilon", "effective_epsilon", "max_useful_beta", "amplification_table", "Partition", "partition",
    "PieceRelease", "release_to_user", "laplace_proportion",
    "KNNImputation", "knn_impute", "SmoothRelease", "BaselineRelease", "release_count", "release_mean",
    "release_variance", "release_count_ignoring_missing", "release_mean_ignoring_missing", "release_count_global",
    "release_mean_global",
    "Binning", "binning", "select_bins", "smooth_weight_bound", "PostStratRelease", "poststratify_release",
    "cauchy_smooth_epsilon",
    "check_gamma",
]
