"""The federation's AUROC of held-out rows is scikit-learn's, to the bit."""

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from skfedida.metrics._scores import binary_roc_auc


@pytest.mark.parametrize("n", [2, 3, 10, 101, 2000])
@pytest.mark.parametrize(
    "kind", ["continuous", "ties", "few-values", "constant", "perfect", "inverted"]
)
def test_binary_roc_auc_is_roc_auc_score_to_the_bit(n, kind):
    rng = np.random.RandomState(n)
    positive = rng.rand(n) < 0.3
    positive[:2] = [True, False]  # both classes
    scores = {
        "continuous": rng.rand(n),
        "ties": np.round(rng.rand(n), 1),
        "few-values": rng.choice([0.1, 0.5, 0.9], n),
        "constant": np.full(n, 0.25),
        "perfect": positive + 0.1 * rng.rand(n),
        "inverted": ~positive + 0.1 * rng.rand(n),
    }[kind]
    expected = roc_auc_score(positive, scores)
    assert np.float64(binary_roc_auc(positive, scores)).tobytes() == (
        np.float64(expected).tobytes()
    )


def test_binary_roc_auc_of_one_class_is_nan_and_of_nan_scores_an_error():
    assert np.isnan(binary_roc_auc(np.ones(5, bool), np.arange(5.0)))
    assert np.isnan(binary_roc_auc(np.zeros(5, bool), np.arange(5.0)))
    with pytest.raises(ValueError, match="NaN"):
        binary_roc_auc(np.array([True, False]), np.array([np.nan, 0.5]))
