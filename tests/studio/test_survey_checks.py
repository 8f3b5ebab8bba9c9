"""The Survey page's checks of the curator's table (dpcore.studio.survey): one bad input per check,
each refused with one line that names the column (or option) and says what to do."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.errors import InputError
from dpcore.studio.survey import (
    MAX_MATCH_GRID,
    imputation_problems,
    matching_problems,
    poststrat_problems,
    public_levels,
    strata_problems,
    subpopulation_mask,
    subpopulation_problems,
    subpopulation_where,
    target_problems,
    weight_problems,
)


@pytest.fixture()
def survey() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    n = 60
    income = rng.integers(100, 5000, n).astype(float)
    income[::6] = np.nan
    return pd.DataFrame({"region": rng.choice(["north", "south"], n), "sex": rng.choice(["F", "M"], n),
                         "income": income, "age": rng.integers(18, 90, n), "w": rng.choice([10.0, 20.0], n),
                         "voted": rng.choice(["YES", "NO"], n)})


TOTALS = {"region": {"north": 500.0, "south": 700.0}, "sex": {"F": 610.0, "M": 590.0}}


def one_line(problems: list[str], *words: str) -> str:
    """The single message, checked to be one line naming every word given."""
    assert len(problems) == 1, problems
    [p] = problems
    assert "\n" not in p
    for w in words:
        assert w in p, (w, p)
    return p


# --------------------------------------------------------------------------- the imputed variable


def test_a_usable_target_has_no_problem(survey):
    assert target_problems(survey, "income", k=1) == []


def test_target_not_a_column(survey):
    one_line(target_problems(survey, None), "Choose the variable to impute")
    one_line(target_problems(survey, "salary"), "'salary'", "not a column")


def test_target_not_numeric(survey):
    one_line(target_problems(survey, "region"), "'region' is not numeric", "choose a numeric variable")


def test_target_without_missing_values(survey):
    one_line(target_problems(survey, "w"), "'w' has no missing values to impute", "choose a variable with missing")


def test_target_with_too_few_donors(survey):
    few = survey.assign(income=[1.0, 2.0] + [np.nan] * (len(survey) - 2))
    one_line(target_problems(few, "income", k=3), "'income' has 2 observed", "k = 3", "lower k")


# --------------------------------------------------------------------------- matching attributes


def test_usable_matching_attributes_have_no_problem(survey):
    assert matching_problems(survey, "income", ["region", "sex"]) == []


def test_no_matching_attribute(survey):
    one_line(matching_problems(survey, "income", []), "Choose at least one matching attribute")


def test_target_among_the_matching_attributes(survey):
    p = matching_problems(survey, "income", ["region", "income"])
    assert any("'income' is the variable to impute; remove it" in x for x in p)


def test_matching_attribute_not_a_column(survey):
    one_line(matching_problems(survey, "income", ["region", "town"]), "'town'", "not columns", "choose others")


def test_numeric_matching_attribute(survey):
    one_line(matching_problems(survey, "income", ["age"]), "'age' is numeric", "choose a categorical column")


def test_ordered_attribute_without_declared_levels(survey):
    one_line(matching_problems(survey, "income", ["region"], levels=None, ordinal=["region"]),
             "'region' has no declared level order", "confirm the domain on the Data page")
    assert matching_problems(survey, "income", ["region"], levels={"region": ["north", "south"]},
                             ordinal=["region"]) == []


def test_too_many_level_combinations(survey):
    wide = pd.DataFrame({f"c{i}": [str(j % 40) for j in range(len(survey))] for i in range(4)})
    wide["income"] = survey["income"]
    assert 41 ** 4 > MAX_MATCH_GRID
    one_line(matching_problems(wide, "income", ["c0", "c1", "c2", "c3"]), "level combinations", "fewer or coarser")


def test_public_levels_only_from_a_declared_domain(survey):
    dom = dpcore.infer_domain(survey[["region", "sex"]])
    assert public_levels(dom, ["region"]) is None  # inferred: the release will say NOT DP
    assert public_levels(dom.declared(), ["region", "sex"]) == {"region": ["north", "south"], "sex": ["F", "M"]}
    assert public_levels(None, ["region"]) is None


# --------------------------------------------------------------------------- the query's public inputs


def test_bounds_not_entered_for_a_mean():
    p = imputation_problems(5.0, 1, method="ignore", query="mean", lo=None, hi=1000.0, match=["g"], target="income")
    one_line(p, "Enter the public lower and upper bounds of 'income'")


def test_bounds_in_the_wrong_order():
    p = imputation_problems(5.0, 1, method="ignore", query="mean", lo=10.0, hi=1.0, match=["g"])
    one_line(p, "upper bound (1) must be above the lower bound (10)")


def test_threshold_not_entered_for_a_count():
    p = imputation_problems(5.0, 1, method="ignore", query="count", lo=None, hi=None, match=["g"], threshold=None,
                            target="income")
    one_line(p, "Enter the public threshold", "'income'")


def test_epsilon_too_small_for_the_smooth_release():
    p = imputation_problems(1.0, 1, method="smooth", query="count", lo=None, hi=None, match=["g"])
    one_line(p, "too small for the smooth-sensitivity release", "Raise ε")


# --------------------------------------------------------------------------- the subpopulation


def test_subpopulation_empty_is_every_row(survey):
    assert subpopulation_mask(survey, "  ").all()
    assert subpopulation_problems(survey, "") == []


def test_subpopulation_selects_rows(survey):
    m = subpopulation_mask(survey, "sex == 'F' and age >= 40", "income")
    assert m.sum() == ((survey["sex"] == "F") & (survey["age"] >= 40)).sum() > 0


def test_subpopulation_may_not_use_the_target(survey):
    with pytest.raises(InputError, match="uses the imputed variable 'income'"):
        subpopulation_mask(survey, "income > 100", "income")
    one_line(subpopulation_problems(survey, "`income` > 100", "income"), "'income'", "filter on other columns")
    assert subpopulation_problems(survey, "incomes_known == 1", "income")  # another name: evaluated, not refused
    assert not any("imputed variable" in p for p in subpopulation_problems(survey, "incomes_known == 1", "income"))


def test_subpopulation_that_cannot_be_evaluated(survey):
    one_line(subpopulation_problems(survey, "town == 'x'", "income"), "The subpopulation", "columns are")


def test_subpopulation_selecting_no_row(survey):
    one_line(subpopulation_problems(survey, "age > 200", "income"), "selects no row", "widen the filter")
    assert subpopulation_problems(survey, "age > 200", allow_empty=True) == []  # a count may be 0


def test_subpopulation_where_for_the_simulation(survey):
    assert subpopulation_where(ages=(30, 50))(survey).sum() == survey["age"].between(30, 50).sum()
    assert subpopulation_where(expr="sex == 'M'", target="income")(survey).sum() == (survey["sex"] == "M").sum()


# --------------------------------------------------------------------------- base weights


def test_usable_weights_have_no_problem(survey):
    assert weight_problems(survey, "w", (5.0, 50.0)) == []


def test_weights_not_a_column(survey):
    one_line(weight_problems(survey, None), "Choose the column of base weights")


def test_weights_not_numeric(survey):
    one_line(weight_problems(survey, "region"), "Weights column 'region' is not numeric", "choose the column")


def test_weights_missing(survey):
    bad = survey.assign(w=survey["w"].where(survey.index != 4))
    one_line(weight_problems(bad, "w"), "Weights column 'w' has 1 missing value(s)", "fix those rows")


def test_weights_negative(survey):
    bad = survey.assign(w=survey["w"].where(survey.index != 4, -3.0))
    one_line(weight_problems(bad, "w"), "Weights column 'w' has 1 zero or negative weight(s)", "must be > 0")


def test_weights_zero(survey):
    bad = survey.assign(w=survey["w"].where(survey.index > 1, 0.0))
    one_line(weight_problems(bad, "w"), "has 2 zero or negative weight(s)")


def test_weights_outside_the_declared_range(survey):
    one_line(weight_problems(survey, "w", (15.0, 50.0)), "in 'w' lie outside the declared range [15, 50]",
             "widen the range")


def test_weight_range_not_valid(survey):
    one_line(weight_problems(survey, "w", (0.0, 50.0)), "base-weight range", "0 < LO ≤ HI")


# --------------------------------------------------------------------------- strata and totals


def test_usable_strata_have_no_problem(survey):
    assert strata_problems(survey, ["region", "sex"], TOTALS, "w") == []


def test_no_stratum(survey):
    one_line(strata_problems(survey, [], TOTALS), "Choose at least one column to post-stratify on")


def test_weights_column_as_a_stratum(survey):
    one_line(strata_problems(survey, ["w"], TOTALS, "w"), "'w' holds the base weights", "other columns")


def test_totals_not_uploaded(survey):
    one_line(strata_problems(survey, ["region"], None), "Upload the known population totals")


def test_stratum_without_totals(survey):
    one_line(strata_problems(survey, ["voted"], TOTALS), "no rows for column 'voted'", "add column,level,total rows")


def test_stratum_level_without_a_total(survey):
    short = {"region": {"north": 500.0}}
    one_line(strata_problems(survey, ["region"], short), "do not cover bin level(s) ['south'] of column 'region'",
             "add a total")


def test_stratum_with_missing_values(survey):
    bad = survey.assign(sex=survey["sex"].where(survey.index != 2))
    one_line(strata_problems(bad, ["sex"], TOTALS), "Column 'sex' has 1 missing value(s)", "drop or impute")


# --------------------------------------------------------------------------- the post-stratified release's budget


@pytest.mark.parametrize(("args", "words"), [
    ((0.0, None, 1.0, 4.0, (1.0, 10.0), ["a"]), ("ε₁:", "greater than 0")),
    ((None, -1.0, 1.0, 4.0, (1.0, 10.0), ["a"]), ("ε₂:",)),
    ((None, None, math.nan, 4.0, (1.0, 10.0), ["a"]), ("ε₃:",)),
    ((None, None, 1.0, 1.5, (1.0, 10.0), ["a"]), ("γ: gamma must be a number from 2 to 100",)),
    ((None, None, 1.0, 4.0, (10.0, 1.0), ["a"]), ("base-weight range", "0 < LO ≤ HI")),
    ((None, None, 1.0, 4.0, (1.0, 10.0), []), ("Choose at least one column to post-stratify on",)),
])
def test_each_budget_setting_is_refused_alone(args, words):
    one_line(poststrat_problems(*args), *words)


def test_a_column_with_no_candidate_set_ticked():
    one_line(poststrat_problems(None, None, 1.0, 4.0, (1.0, 10.0), ["agegr"], ["agegr"]),
             "Choose at least one candidate set of bins for 'agegr'")
    assert poststrat_problems(0.5, 0.5, 1.0, 4.0, (1.0, 10.0), ["agegr", "sex"]) == []
