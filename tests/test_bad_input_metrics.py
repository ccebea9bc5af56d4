"""Bad input to the metrics, scorers and model selection (issue 31, parts 3 and 4).

Each test here gave a wrong or misleading number, or an unclear error, before
its fix: probabilities read as labels, a callable metric returning a string,
a differential-privacy delta that guarantees nothing, a lambda range from an
inactive penalty, and search errors that named nothing.
"""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from skfedida.metrics import make_fairness_scorer


@pytest.fixture
def problem():
    rng = np.random.default_rng(0)
    n = 200
    X = rng.normal(size=(n, 3))
    S = rng.choice(["a", "b"], size=n)
    y = (X[:, 0] + 0.5 * (S == "a") + rng.normal(scale=0.5, size=n) > 0).astype(int)
    return X, y, S


# -- a callable metric must return a number (3.7) ---------------------------------


def text_metric(y_true, y_pred, *, sensitive_features, **kwargs):
    """A user metric that returns a formatted string instead of a number."""
    return ""


def none_metric(y_true, y_pred, *, sensitive_features, **kwargs):
    return None


@pytest.mark.parametrize("metric", [text_metric, none_metric])
@pytest.mark.parametrize("threshold", [None, 0.5])
def test_scorer_refuses_a_non_numeric_metric(problem, metric, threshold):
    X, y, S = problem
    clf = LogisticRegression().fit(X, y)
    scorer = make_fairness_scorer(metric, threshold=threshold)
    with pytest.raises(TypeError, match=metric.__name__):
        scorer(clf, X, y, sensitive_features=S)


def test_scorer_keeps_a_numeric_callable_metric(problem):
    X, y, S = problem
    clf = LogisticRegression().fit(X, y)

    def numpy_metric(y_true, y_pred, *, sensitive_features, **kwargs):
        return np.float32(0.25)

    def array_metric(y_true, y_pred, *, sensitive_features, **kwargs):
        return np.array(0.25)

    for metric in (numpy_metric, array_metric):
        assert make_fairness_scorer(metric)(clf, X, y, sensitive_features=S) == -0.25
