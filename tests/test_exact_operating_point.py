"""The matched operating point selects exactly its target share, ties included.

The oracle ranks the pooled scores (no histogram): the k = rate x n highest
are selected, the rows tied with the k-th each with the probability that
makes the count k. A deterministic threshold inside a tied block selects
another share for each model, and the lower-selecting one looks fairer.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.linear_model import LogisticRegression

from skfedida.federated import evaluate_clients
from skfedida.metrics import (
    OperatingPoint,
    demographic_parity_difference,
    false_positive_rate_difference,
    federated_operating_point,
    federated_threshold,
    make_fairness_scorer,
    make_tradeoff_scorer,
    score_histogram,
    threshold_at_rate,
)


def ranked_expected_decisions(scores, rate, weight=None):
    """Expected decisions of 'highest first, ties at random', by sorting."""
    weight = np.ones_like(scores) if weight is None else weight
    wanted = rate * weight.sum()
    values = np.unique(scores)[::-1]
    decisions = np.zeros_like(scores)
    taken = 0.0
    for v in values:  # test oracle: a loop over distinct scores is fine here
        at = scores == v
        block = weight[at].sum()
        if taken + block <= wanted:
            decisions[at] = 1.0
            taken += block
        else:
            decisions[at] = (wanted - taken) / block
            break
    return decisions


def tied_scores(rng, n):
    """Scores drawn from a few values (tied blocks) plus some distinct ones."""
    levels = rng.uniform(0, 1, size=rng.integers(1, 6))
    scores = rng.choice(levels, size=n)
    spread = rng.uniform(size=n) < rng.uniform(0, 0.5)
    scores[spread] = rng.uniform(0, 1, size=spread.sum())
    return scores


@settings(max_examples=80, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    n_clients=st.integers(1, 4),
    rate=st.floats(0.0, 1.0),
    n_bins=st.sampled_from([2, 10, 1000]),
    weighted=st.booleans(),
)
def test_expected_decisions_are_the_ranked_oracles(
    seed, n_clients, rate, n_bins, weighted
):
    rng = np.random.default_rng(seed)
    clients = [tied_scores(rng, int(rng.integers(1, 300))) for _ in range(n_clients)]
    weights = (
        [rng.integers(1, 4, size=s.size).astype(float) for s in clients]
        if weighted
        else None
    )
    point = federated_operating_point(
        clients, rate, n_bins=n_bins, sample_weights=weights
    )
    pooled = np.concatenate(clients)
    pooled_weight = None if weights is None else np.concatenate(weights)
    got = np.concatenate([point.expected_decisions(s) for s in clients])
    expected = ranked_expected_decisions(pooled, rate, pooled_weight)
    w = np.ones_like(pooled) if pooled_weight is None else pooled_weight
    # The selected share is the target, exactly.
    assert np.dot(w, got) == pytest.approx(rate * w.sum(), abs=1e-9 * w.sum())
    # Row by row the rule is the oracle's: only rows of one score (or one
    # row) share a probability strictly between 0 and 1.
    np.testing.assert_allclose(got, expected, atol=1e-9)
    assert 0 <= point.tie_probability <= 1
    # The deterministic threshold takes all of that block or none of it.
    t = federated_threshold(clients, rate, n_bins=n_bins, sample_weights=weights)
    selected = np.dot(w, pooled > t)
    block = point.tied_share * w.sum()
    assert abs(selected - rate * w.sum()) <= block / 2 + 1e-9 * w.sum()


def test_two_models_with_tied_blocks_select_the_same_share():
    # Scores in blocks, as on Adult: a deterministic threshold inside a
    # block selects another share for each model.
    rng = np.random.default_rng(1)
    n = 4000
    S = rng.integers(0, 2, n)
    y = (rng.uniform(size=n) < np.where(S == 1, 0.35, 0.15)).astype(int)
    # Three levels: the 25% target lies inside the middle block.
    model_a = np.where(y == 1, rng.choice([0.5, 0.8], n), rng.choice([0.2, 0.5], n))
    model_b = np.round(rng.uniform(size=n) * 0.5 + 0.2 * S + 0.2 * y, 2)
    rate = 0.25
    for scores in (model_a, model_b):
        point = federated_operating_point([scores[: n // 2], scores[n // 2 :]], rate)
        decisions = point.expected_decisions(scores)
        assert decisions.mean() == pytest.approx(rate, abs=1e-12)
        # The metrics of those decisions are the ranked oracle's.
        oracle = ranked_expected_decisions(scores, rate)
        assert demographic_parity_difference(
            y, decisions, sensitive_features=S, soft=True
        ) == pytest.approx(
            demographic_parity_difference(y, oracle, sensitive_features=S, soft=True)
        )
    # Where blocks are large, a deterministic cut misses by a lot.
    misses = [
        abs((scores > federated_threshold([scores], rate)).mean() - rate)
        for scores in (model_a, model_b)
    ]
    assert max(misses) > 0.005


class _Fixed:
    """A 'model' whose scores are given (tied blocks), for evaluate_clients."""

    classes_ = np.array([0, 1])

    def __init__(self, scores):
        self.scores = scores

    def predict_proba(self, X):
        p = self.scores[np.asarray(X, dtype=int).ravel()]
        return np.column_stack([1 - p, p])


def test_evaluate_clients_reports_the_ranked_oracles_disparities():
    rng = np.random.default_rng(2)
    n = 3000
    S = rng.integers(0, 3, n)
    y = (rng.uniform(size=n) < 0.2 + 0.1 * S).astype(int)
    scores = np.round(0.2 * y + 0.1 * S + rng.uniform(0, 0.4, n), 1)
    clients = rng.integers(0, 3, n)
    X = np.arange(n)[:, None]
    report = evaluate_clients(
        _Fixed(scores),
        X,
        y,
        clients=clients,
        sensitive_features=S,
        metrics=("selection_rate", "accuracy", "dpd", "dfpr", "dppv"),
        threshold={"selection_rate": 0.3},
        n_bootstrap=0,
    )
    assert report.achieved_rate == pytest.approx(0.3, abs=1e-12)
    assert 0 < report.tie_probability < 1 and report.tied_share > 0.05
    oracle = ranked_expected_decisions(scores, 0.3)
    for k in range(3):
        rows = clients == k
        got = report.per_client.loc[k]
        d, yk, Sk = oracle[rows], y[rows], S[rows]
        assert got["selection_rate"] == pytest.approx(d.mean())
        assert got["accuracy"] == pytest.approx(np.mean(yk * d + (1 - yk) * (1 - d)))
        assert got["dpd"] == pytest.approx(
            demographic_parity_difference(yk, d, sensitive_features=Sk, soft=True)
        )
        assert got["dfpr"] == pytest.approx(
            false_positive_rate_difference(yk, d, sensitive_features=Sk, soft=True)
        )
        # PPV of a randomised rule: expected true positives over expected
        # selections, per group.
        ppv = [
            np.dot(yk[Sk == g], d[Sk == g]) / d[Sk == g].sum()
            for g in range(3)
            if d[Sk == g].sum() > 0
        ]
        assert got["dppv"] == pytest.approx(max(ppv) - min(ppv))
    # On 0/1 decisions the expected rates are the ordinary ones.
    half = evaluate_clients(
        _Fixed(scores),
        X,
        y,
        clients=clients,
        sensitive_features=S,
        metrics=("dpd", "dppv", "accuracy"),
        threshold=0.45,
        n_bootstrap=0,
    )
    d = (scores > 0.45).astype(int)
    rows = clients == 0
    assert half.per_client.loc[0, "dpd"] == pytest.approx(
        demographic_parity_difference(y[rows], d[rows], sensitive_features=S[rows])
    )
    assert half.tie_probability is None and half.operating_point is None


def test_bootstrap_and_bca_work_on_expected_decisions():
    rng = np.random.default_rng(3)
    n = 600
    S = rng.integers(0, 2, n)
    y = rng.integers(0, 2, n)
    scores = np.round(rng.uniform(size=n) * 0.5 + 0.3 * y, 1)
    for method in ("percentile", "bca"):
        report = evaluate_clients(
            _Fixed(scores),
            np.arange(n)[:, None],
            y,
            clients=rng.integers(0, 2, n),
            sensitive_features=S,
            metrics=("selection_rate", "dpd"),
            threshold="prevalence",
            n_bootstrap=50,
            method=method,
            random_state=0,
        )
        row = report.per_client.iloc[0]
        assert row["dpd_low"] <= row["dpd"] <= row["dpd_high"]


def test_decisions_for_deployment_select_the_share_within_a_row():
    scores = np.r_[np.full(100, 0.9), np.full(301, 0.5), np.full(600, 0.1)]
    point = federated_operating_point([scores], 0.3)
    assert isinstance(point, OperatingPoint)
    counts = [point.decisions(scores, random_state=s).sum() for s in range(200)]
    assert set(counts) <= {300, 301}
    assert np.mean(counts) == pytest.approx(0.3 * scores.size, abs=0.5)
    again = point.decisions(scores, random_state=7)
    np.testing.assert_array_equal(again, point.decisions(scores, random_state=7))
    # Only tied rows are drawn.
    assert again[:100].all() and not again[401:].any()
    assert "tie_probability" in repr(point)


def test_deployment_decisions_draw_the_fractional_tied_row_with_its_probability():
    """3.5 of 10 rows: the 2 above the tied block, 1 of its 3 rows, and a
    second one with probability 1/2, so that the expected count is exact."""
    scores = np.r_[np.full(2, 0.9), np.full(3, 0.5), np.full(5, 0.1)]
    point = federated_operating_point([scores], 0.35)
    assert point.tie_probability == pytest.approx(0.5)
    counts = [point.decisions(scores, random_state=s).sum() for s in range(400)]
    assert set(counts) == {3, 4}
    assert np.mean(counts) == pytest.approx(3.5, abs=0.1)


def test_federated_threshold_keeps_a_score_at_the_blocks_upper_edge():
    """Rows scoring > t are selected. When none of the tied block is, the cut
    lies just below the block's upper edge: a row scoring the very next float
    above the block is still selected (10 rows here, the closest to 10.2)."""
    above = np.nextafter(0.5, 1.0)
    scores = np.r_[np.full(10, above), np.full(100, 0.5)]
    t = federated_threshold([scores[::2], scores[1::2]], 10.2 / 110)
    assert int((scores > t).sum()) == 10
    # And when all of it is, the cut lies just below its lower edge.
    t = federated_threshold([scores], 1.0)
    assert int((scores > t).sum()) == 110


def test_scorers_at_a_rate_score_the_exact_share():
    rng = np.random.default_rng(4)
    n = 2000
    X = rng.normal(size=(n, 2))
    S = rng.integers(0, 2, n)
    y = (X[:, 0] + 0.5 * S + rng.normal(size=n) > 0.5).astype(int)
    # Rounded inputs give tied scores in blocks.
    model = LogisticRegression().fit(np.round(X, 0), y)
    Xr = np.round(X, 0)
    scores = model.predict_proba(Xr)[:, 1]
    rate = float(y.mean())
    oracle = ranked_expected_decisions(scores, rate)
    expected = demographic_parity_difference(y, oracle, sensitive_features=S, soft=True)
    scorer = make_fairness_scorer("dpd", threshold="prevalence")
    assert -scorer(model, Xr, y, sensitive_features=S) == pytest.approx(expected)
    tradeoff = make_tradeoff_scorer(
        "roc_auc", "dpd", weight=1.0, threshold="prevalence"
    )
    from sklearn.metrics import roc_auc_score

    assert tradeoff(model, Xr, y, sensitive_features=S) == pytest.approx(
        roc_auc_score(y, scores) - expected
    )

    # A callable without soft= gets 0/1 decisions selecting the share to a row.
    seen = {}

    def count_selected(y_true, y_pred, *, sensitive_features, **kwargs):
        seen["values"] = set(np.unique(y_pred).tolist())
        return float(np.sum(y_pred))

    labels_only = make_fairness_scorer(
        count_selected, threshold={"selection_rate": 0.3}
    )
    got = -labels_only(model, Xr, y, sensitive_features=S)
    assert seen["values"] <= {0, 1}
    assert abs(got - 0.3 * n) <= 1
    # Reproducible: the tied rows are drawn with a fixed seed.
    assert -labels_only(model, Xr, y, sensitive_features=S) == got


@pytest.mark.parametrize(
    "func, kwargs",
    [
        (score_histogram, dict(scores=[0.5], n_bins=10**7)),
        (federated_operating_point, dict(client_scores=[[0.5]], rate=0.5, n_bins=0)),
        (federated_threshold, dict(client_scores=[[0.5]], rate=0.5, n_bins=10**9)),
        # One bin is one block of every row: every model would read fair.
        (federated_operating_point, dict(client_scores=[[0.5]], rate=0.5, n_bins=1)),
        (score_histogram, dict(scores=[0.5], n_bins=1)),
    ],
)
def test_n_bins_is_bounded_with_a_message_naming_it(func, kwargs):
    with pytest.raises(ValueError, match="n_bins"):
        func(**kwargs)


def test_make_fairness_scorer_and_evaluate_clients_bound_n_bins():
    with pytest.raises(ValueError, match="n_bins"):
        make_fairness_scorer("dpd", threshold="prevalence", n_bins=10**8)
    with pytest.raises(ValueError, match="n_bins"):
        evaluate_clients(
            _Fixed(np.array([0.2, 0.8])),
            np.arange(2)[:, None],
            np.array([0, 1]),
            clients=np.zeros(2),
            sensitive_features=np.array([0, 1]),
            threshold="prevalence",
            n_bins=10**8,
        )


@pytest.mark.parametrize(
    "histograms, match",
    [
        ([1.0, np.nan, 3.0], "not finite"),
        ([1.0, np.inf, 3.0], "not finite"),
        ([[1.0, 2.0], [1.0, -2.0]], "histogram 1 .*non-negative"),
        ([[1, 2], [1, 2, 3]], "same grid"),
        ([[1, 2, 3], [1, 2]], "histogram 1 has 2 bins"),
        ([[1, 2], ["a", 2]], "does not hold numbers"),
        (np.ones((2, 2, 2)), "one histogram"),
        ([], "non-empty"),
    ],
)
def test_threshold_at_rate_refuses_bad_counts_by_name(histograms, match):
    with pytest.raises(ValueError, match=match):
        threshold_at_rate(histograms, 0.5)


def test_operating_point_refuses_bad_weights():
    with pytest.raises(ValueError, match="sample_weights"):
        federated_operating_point([[0.1, 0.2]], 0.5, sample_weights=[[1.0]])
    with pytest.raises(ValueError, match="sample_weights"):
        federated_operating_point([[0.1, 0.2]], 0.5, sample_weights=[[1.0, np.nan]])
    with pytest.raises(ValueError, match="sample_weights"):
        federated_operating_point([[0.1, 0.2]], 0.5, sample_weights=[[1.0, -1.0]])


def test_selection_rate_refuses_probabilities_with_its_own_advice():
    from skfedida.metrics import selection_rate

    with pytest.raises(ValueError, match="selection_rate counts predicted labels"):
        selection_rate([0, 1, 1], [0.2, 0.7, 0.9])
    assert selection_rate([0, 1, 1], [0.0, 1.0, 1.0]) == pytest.approx(2 / 3)


@pytest.mark.parametrize("tied, warns", [(0.06, False), (0.3, True)])
def test_a_report_warns_when_most_decisions_are_drawn_at_random(tied, warns):
    import warnings

    from skfedida.exceptions import OperatingPointWarning

    rng = np.random.default_rng(5)
    n = 2000
    y = rng.integers(0, 2, n)
    scores = rng.uniform(0, 1, n)
    # A block of tied rows at the score where the 25% target falls.
    block = rng.permutation(n)[: int(tied * n)]
    scores[block] = np.quantile(scores, 0.75)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = evaluate_clients(
            _Fixed(scores),
            np.arange(n)[:, None],
            y,
            clients=np.zeros(n),
            sensitive_features=rng.integers(0, 2, n),
            metrics=("dpd",),
            threshold={"selection_rate": 0.25},
            n_bootstrap=0,
        )
    assert report.tied_share == pytest.approx(tied, abs=2 / n)
    ours = [w for w in caught if issubclass(w.category, OperatingPointWarning)]
    assert bool(ours) == warns


def test_distinct_scores_however_small_are_never_one_block():
    # A grid on the values would need over 100 passes to separate 1e-30
    # from 2e-30; on float64's order 7 passes of 1000 bins separate any two.
    tiny = np.r_[np.linspace(1e-30, 2e-30, 100), np.linspace(1e-24, 2e-24, 100)]
    scores = np.r_[np.full(200, 0.99), tiny, 10.0 ** -np.linspace(20, 300, 500)]
    for rate in (0.5, 0.6, 0.75):
        point = federated_operating_point([scores[::2], scores[1::2]], rate)
        np.testing.assert_allclose(
            point.expected_decisions(scores),
            ranked_expected_decisions(scores, rate),
            atol=1e-12,
        )
        # The block is one row (or empty): no distinct scores drawn at random.
        assert point.tied_share <= 1 / scores.size


def test_counts_and_weights_near_the_float_maximum_do_not_overflow():
    counts = [[1e308, 1e308], [1e308, 1e308]]
    assert threshold_at_rate(counts, 0.5) == pytest.approx(0.5)
    scores = np.linspace(0, 1, 10)
    big = federated_operating_point([scores], 0.5, sample_weights=[np.full(10, 1e308)])
    unit = federated_operating_point([scores], 0.5)
    assert repr(big) == repr(unit)


def test_threshold_scorers_need_pos_label_for_labels_that_do_not_name_it():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(300, 2))
    y = np.where(X[:, 0] + rng.normal(size=300) > 0.5, "approved", "denied")
    S = rng.integers(0, 2, 300)
    model = LogisticRegression().fit(X, y)
    # Without threshold= the metric refuses such labels; with it, the scorer
    # took classes_[-1] ("denied") as favourable, silently.
    for scorer in (
        make_fairness_scorer("dfpr", threshold="prevalence"),
        make_tradeoff_scorer("accuracy", "dpd", threshold={"selection_rate": 0.3}),
    ):
        with pytest.raises(ValueError, match="pos_label"):
            scorer(model, X, y, sensitive_features=S)
    named = make_fairness_scorer("dfpr", threshold="prevalence", pos_label="approved")
    assert np.isfinite(named(model, X, y, sensitive_features=S))


def test_scorers_keep_their_sensitive_features_request_beside_sample_weight():
    import sklearn
    from sklearn.model_selection import cross_val_score

    rng = np.random.default_rng(7)
    n = 300
    X = rng.normal(size=(n, 3))
    S = rng.integers(0, 2, n)
    y = (X[:, 0] + S + rng.normal(size=n) > 0.5).astype(int)
    weight = rng.random(n)
    with sklearn.config_context(enable_metadata_routing=True):
        fairness = make_fairness_scorer("dpd", threshold="prevalence")
        # The scorer's own keys are no metadata a user could pass.
        assert set(fairness.get_metadata_routing().score.requests) == {
            "sensitive_features",
            "sample_weight",
        }
        for scorer in (
            fairness.set_score_request(sample_weight=True),
            make_tradeoff_scorer(
                "roc_auc", "dpd", threshold="prevalence"
            ).set_score_request(sample_weight=True),
        ):
            requests = scorer.get_metadata_routing().score.requests
            assert requests == {"sensitive_features": True, "sample_weight": True}
            scores = cross_val_score(
                LogisticRegression().set_fit_request(sample_weight=True),
                X,
                y,
                scoring=scorer,
                params={"sensitive_features": S, "sample_weight": weight},
                cv=3,
            )
            assert np.all(np.isfinite(scores))


@pytest.mark.parametrize("n_bins", [2, 3, 10, 1000])
def test_adjacent_floats_are_two_scores_and_saturated_scores_a_block(n_bins):
    # Ten adjacent float64 values, 10 rows each: every one is its own score.
    values = 0.3 + np.arange(10) * np.spacing(0.3)
    assert np.unique(values).size == 10
    scores = np.repeat(values, 10)
    for rate in (0.15, 0.45, 0.85):
        point = federated_operating_point(
            [scores[::3], scores[1::3], scores[2::3]], rate, n_bins=n_bins
        )
        np.testing.assert_allclose(
            point.expected_decisions(scores), ranked_expected_decisions(scores, rate)
        )
    # A saturated model: half its rows at exactly 1.0, a quarter at 0.0.
    saturated = np.r_[np.ones(50), np.linspace(0.2, 0.8, 25), np.zeros(25)]
    for rate in (0.1, 0.5, 0.9):
        point = federated_operating_point([saturated], rate, n_bins=n_bins)
        np.testing.assert_allclose(
            point.expected_decisions(saturated),
            ranked_expected_decisions(saturated, rate),
        )
