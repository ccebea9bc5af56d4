"""skfedida/_statistics_replies.py: the gate of the preprocessing statistics.

test_guard_preprocessing_replies.py and test_reply_gate.py rewrite answers
inside whole fits; here ``statistics_problems`` is called with hand-made
answers: the answer's form, the number of features the clients agree on,
honest answers accepted, each rule's first failure named, and the rules
across clients (a range far beyond the others', totals that overflow).
"""

import numpy as np
import pytest

from skfedida._gate._checks import RANGE_FACTOR, NoConsensus
from skfedida._gate._statistics import Unreadable, statistics_problems
from skfedida._ordinal import ordinal, ordinal_edges
from skfedida.preprocessing import (
    FederatedMinMaxScaler,
    FederatedOneHotEncoder,
    FederatedSimpleImputer,
    FederatedStandardScaler,
)

SCALER = FederatedStandardScaler()
SUMS = {"statistic": "sums"}


def _sums(X):
    """An honest scaler's first-round answer of the rows X (NaN: missing)."""
    X = np.asarray(X, np.float64)
    present = ~np.isnan(X)
    n = present.sum(axis=0)
    with np.errstate(all="ignore"):
        low = np.where(n > 0, np.nanmin(np.where(present, X, np.inf), axis=0), np.nan)
        high = np.where(n > 0, np.nanmax(np.where(present, X, -np.inf), axis=0), np.nan)
    return {"n": n, "sum": np.nansum(X, axis=0), "min": low, "max": high}


def _problems(server, query, answers, rows=None, earlier=None, names=None):
    name = type(server).__name__
    replies = {
        k: a if isinstance(a, Unreadable) else (name, a) for k, a in enumerate(answers)
    }
    found = statistics_problems(
        server, query, replies, rows=rows, earlier=earlier or {}, names=names
    )
    return [problem for _, problem in found]


CLIENTS = [
    [[1.0, 10.0], [2.0, 20.0], [3.0, np.nan]],
    [[0.5, 15.0], [4.0, 12.0]],
    [[2.5, 11.0], [1.5, np.nan], [3.5, 19.0], [2.0, 14.0]],
]


def test_honest_sums_pass():
    answers = [_sums(X) for X in CLIENTS]
    assert _problems(SCALER, SUMS, answers, rows=[3, 2, 4]) == [None] * 3


def test_a_feature_without_values_has_nan_extremes_and_a_zero_sum():
    answers = [_sums(X) for X in CLIENTS]
    answers[1] = _sums([[1.0, np.nan], [2.0, np.nan]])
    assert _problems(SCALER, SUMS, answers)[1] is None
    answers[1]["min"] = np.array([1.0, 0.0])
    assert _problems(SCALER, SUMS, answers)[1] == (
        "its answer has extremes for a feature without values"
    )


@pytest.mark.parametrize(
    "change, words",
    [
        (lambda a: a.update(sum=a["sum"] + [0.0, 1e3]), "feature 1's sum"),
        (lambda a: a.update(n=a["n"] + [5, 0]), "more than the 3 rows"),
        (lambda a: a.update(min=a["max"] + 1), "a minimum is above its maximum"),
        (lambda a: a.update(sum=np.array([np.nan, 1.0])), "its sums holds NaN"),
        (lambda a: a.update(extra=1), "unexpected ['extra']"),
        (lambda a: a.pop("min"), "missing ['min']"),
        (lambda a: a.update(n=np.array(["2", "2"])), "dtype <U1"),
    ],
    ids=["sum", "count", "extremes", "nan", "extra key", "missing key", "dtype"],
)
def test_each_rule_names_the_clients_first_problem(change, words):
    answers = [_sums(X) for X in CLIENTS]
    change(answers[0])
    problems = _problems(SCALER, SUMS, answers, rows=[3, 2, 4])
    assert words in problems[0]
    assert problems[1:] == [None, None]


def test_the_form_of_an_answer_is_checked_before_its_numbers():
    answers = [_sums(X) for X in CLIENTS]
    replies = {
        0: Unreadable("not JSON"),
        1: ("FederatedMinMaxScaler", answers[1]),
        2: ("FederatedStandardScaler", answers[2], "third"),
        3: ("FederatedStandardScaler", [1, 2]),
        4: ("FederatedStandardScaler", answers[0]),
    }
    found = dict(statistics_problems(SCALER, SUMS, replies, rows=None, earlier={}))
    assert found[0] == "its answer cannot be read (not JSON)"
    assert found[1] == (
        "it answered for a 'FederatedMinMaxScaler'; a FederatedStandardScaler was asked"
    )
    assert found[2] == "its answer is not an (answered by, statistics) pair"
    assert found[3] == "its answer is a list, not statistics"
    assert found[4] is None


def test_a_statistic_the_gate_has_no_rules_for_is_refused():
    (problem,) = _problems(SCALER, {"statistic": "medians"}, [_sums(CLIENTS[0])])
    assert "no rules for FederatedStandardScaler's 'medians'" in problem


def test_the_number_of_features_is_the_majoritys():
    answers = [_sums(X) for X in CLIENTS]
    answers[2] = _sums(np.hstack([CLIENTS[2], np.ones((4, 1))]))
    problems = _problems(SCALER, SUMS, answers)
    assert problems[:2] == [None, None]
    assert "shape (3,); expected (2,)" in problems[2]


def test_without_a_majority_on_the_features_the_clients_are_named():
    answers = [_sums(CLIENTS[0]), _sums(np.ones((2, 3)))]
    with pytest.raises(NoConsensus, match=r"the number of features.*c0 says 2"):
        _problems(SCALER, SUMS, answers, names=lambda k: f"c{k}")


# -- across clients --------------------------------------------------------------------


def test_values_far_beyond_the_others_range_are_refused():
    answers = [_sums(X) for X in CLIENTS]
    # Clients 0 and 2 span [1.0, 3.5] on feature 0: scale 3.5 (its largest
    # magnitude), so 100 scales beyond is 353.5 above and -349 below.
    answers[1] = _sums([[353.0, 12.0], [-348.0, 13.0]])
    assert _problems(SCALER, SUMS, answers) == [None] * 3
    answers[1] = _sums([[354.0, 12.0], [1.0, 13.0]])
    problems = _problems(SCALER, SUMS, answers)
    assert problems[0] is None and problems[2] is None
    assert problems[1].startswith(
        f"feature 0's values reach 354.0, more than {RANGE_FACTOR:g} times"
    )
    answers[1] = _sums([[-350.0, 12.0], [1.0, 13.0]])
    assert "reach -350.0" in _problems(SCALER, SUMS, answers)[1]


def test_where_the_others_hold_only_zeros_nothing_bounds_a_client():
    # An indicator of a category only this client has: no scale to compare.
    answers = [_sums([[0.0], [0.0]]), _sums([[0.0]]), _sums([[1e9], [0.0]])]
    assert _problems(SCALER, SUMS, answers) == [None] * 3


def test_a_total_that_overflows_is_the_failure_of_the_client_that_dominates_it():
    answers = [_sums([[1e308]]), _sums([[1.5e308]]), _sums([[1.2e308]])]
    problems = _problems(SCALER, SUMS, answers)
    assert problems[0] is None and problems[2] is None
    assert problems[1].startswith("the federation's sum of feature 0 overflows")


# -- the scaler's second round ---------------------------------------------------------


def _moments(X, about):
    X = np.asarray(X, np.float64)
    deviations = np.where(np.isnan(X), 0.0, X - about)
    return {
        "n": (~np.isnan(X)).sum(axis=0),
        "shifted_sum": deviations.sum(axis=0),
        "shifted_squares": (deviations**2).sum(axis=0),
    }


def test_the_second_round_is_the_first_rounds_sums_moved_to_the_mean():
    about = np.array([2.0, 14.0])
    query = {"statistic": "moments about", "about": about}
    earlier = {k: [_sums(X)] for k, X in enumerate(CLIENTS)}
    answers = [_moments(X, about) for X in CLIENTS]
    assert _problems(SCALER, query, answers, earlier=earlier) == [None] * 3
    answers[0]["shifted_sum"] = answers[0]["shifted_sum"] + [0.0, 0.5]
    assert (
        "sum of deviations of feature 1"
        in (_problems(SCALER, query, answers, earlier=earlier)[0])
    )
    answers = [_moments(X, about) for X in CLIENTS]
    answers[2]["shifted_squares"] = answers[2]["shifted_squares"] * 50
    assert (
        "sum of squared deviations"
        in (_problems(SCALER, query, answers, earlier=earlier)[2])
    )
    answers = [_moments(X, about) for X in CLIENTS]
    answers[1]["n"] = answers[1]["n"] - [1, 0]
    assert (
        "differ from those it sent in the first round"
        in (_problems(SCALER, query, answers, earlier=earlier)[1])
    )
    assert (
        "a second round without a first"
        in (_problems(SCALER, query, [_moments(CLIENTS[0], about)])[0])
    )


# -- the other transformers ------------------------------------------------------------


def test_a_min_max_answer_counts_every_row_and_pairs_its_extremes():
    server, query = FederatedMinMaxScaler(), {"statistic": "extremes"}

    def answer(n, low, high):
        return {"n": n, "min": np.array(low), "max": np.array(high)}

    good = [answer(3, [0.0, np.nan], [1.0, np.nan]), answer(2, [0.5, 1.0], [2, 3])]
    assert _problems(server, query, good, rows=[3, 2]) == [None, None]
    assert _problems(server, query, good, rows=[4, 2])[0] == (
        "it counts 3 rows; it declared 4"
    )
    odd = [answer(3, [0.0, np.nan], [1.0, 5.0]), good[1]]
    assert "a minimum but no maximum" in _problems(server, query, odd)[0]


def test_an_encoders_counts_add_up_to_its_rows_once_per_feature():
    server, query = FederatedOneHotEncoder(), {"statistic": "category counts"}

    def answer(categories, counts, n):
        return {
            "categories": [np.array(c, dtype=object) for c in categories],
            "counts": [np.array(c) for c in counts],
            "n": n,
        }

    good = answer([["a", "b"], [1, 2, 3]], [[2, 1], [1, 1, 1]], 3)
    assert _problems(server, query, [good]) == [None]
    short = answer([["a", "b"], [1, 2, 3]], [[2, 1], [1, 1, 0]], 3)
    assert _problems(server, query, [short]) == [
        "feature 1's category counts add up to 2 rows; it counts 3"
    ]
    twice = answer([["a", "a"], [1, 2, 3]], [[2, 1], [1, 1, 1]], 3)
    assert _problems(server, query, [twice]) == [
        "feature 0's categories list a value twice"
    ]
    fixed = FederatedOneHotEncoder(categories=[["a", "b"], [1, 2, 3, 4]])
    assert (
        "not the encoder's categories parameter" in (_problems(fixed, query, [good])[0])
    )


def _imputer_answer(X, statistic, **more):
    X = np.asarray(X, np.float64)
    n = (~np.isnan(X)).sum(axis=0)
    answer = {"n": n, "any_missing": n < len(X), "object": False, **more}
    if statistic == "sums":
        answer.update({k: v for k, v in _sums(X).items() if k != "n"})
    return answer


def test_an_imputers_missing_flags_follow_its_counts():
    server = FederatedSimpleImputer()
    query = {"statistic": "counts"}
    answers = [_imputer_answer(X, "counts") for X in CLIENTS]
    rows = [3, 2, 4]
    assert _problems(server, query, answers, rows=rows) == [None] * 3
    answers[0]["any_missing"] = np.array([False, False])
    assert "missing-value flags disagree" in _problems(server, query, answers, rows)[0]
    answers = [_imputer_answer(X, "counts") for X in CLIENTS]
    answers[2]["object"] = True
    assert _problems(server, query, answers, rows=rows)[2] == (
        "its 'object' flag is not the other clients'"
    )


def test_an_imputers_interval_counts_have_the_servers_bins():
    server = FederatedSimpleImputer(n_bins=4)
    lo, hi = (int(o) for o in ordinal([0.0, 10.0]))
    query = {"statistic": "interval counts", "intervals": [[0, lo, hi]]}
    n_bins = len(ordinal_edges(lo, hi, 4)) - 1
    X = [[1.0, 1.0], [2.0, 1.0], [-1.0, 1.0]]
    good = _imputer_answer(X, "interval counts", below=[1], bins=[[1, 1, 0, 0]])
    assert n_bins == 4
    assert _problems(server, query, [good]) == [None]
    wide = _imputer_answer(X, "interval counts", below=[1], bins=[[1, 1, 0, 0, 0]])
    assert "shape (5,); expected (4,)" in _problems(server, query, [wide])[0]
    over = _imputer_answer(X, "interval counts", below=[2], bins=[[1, 1, 0, 0]])
    assert (
        "add up to 4; it counts 3 values of feature 0"
        in (_problems(server, query, [over])[0])
    )
