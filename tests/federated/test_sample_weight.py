"""FederatedEstimator.fit(sample_weight=...): rows' weights everywhere (issue 45).

Survey weights (Adult's ``fnlwgt``, the census data's own) weigh each row in
its client's training, its resampled copies, the class prior, a rate
constraint's rates, the trees' bin edges and the held-out metrics. A
weighted federation of one client is the estimator's own weighted fit.
"""

import numpy as np
import pytest
from sklearn import config_context
from sklearn.base import clone
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import SGDClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skfedida.datasets import make_federated_classification
from skfedida.ensemble import FairHistGradientBoostingClassifier
from skfedida.exceptions import InactivePenaltyWarning
from skfedida.federated import FederatedEstimator
from skfedida.federated._client import _ClientData, _resample
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.over_sampling import FairnessAwareROSE


@pytest.fixture(scope="module")
def data():
    data = make_federated_classification(
        3000, n_clients=3, n_features=4, random_state=1, group_shift=1.0
    )
    # Integer weights, some rows left out (weight 0), as survey weights go.
    data.weight = np.random.default_rng(0).integers(0, 4, 3000).astype(float)
    return data


def _fit(federation, data, **params):
    return federation.fit(
        data.data,
        data.target,
        sensitive_features=data.sensitive,
        sample_weight=data.weight,
        **params,
    )


def test_one_weighted_client_is_the_estimator_s_weighted_epochs(data):
    estimator = FairPenaltyLogisticRegression(random_state=0)
    federation = _fit(
        FederatedEstimator(estimator, n_rounds=1, local_epochs=3, random_state=0),
        data,
    )
    own = clone(estimator).set_params(random_state=int(federation.client_seeds_[0]))
    with pytest.warns(InactivePenaltyWarning):  # primed as a client is
        own.partial_fit(
            data.data[:2], data.target[:2], classes=[0, 1], sample_weight=np.zeros(2)
        )
    checked = own.check_rows(data.data, data.target, sensitive_features=data.sensitive)
    own.train_epochs(*checked, epochs=3, sample_weight=data.weight)
    np.testing.assert_array_equal(federation.estimator_.coef_, own.coef_)
    # Not the unweighted fit.
    plain = FederatedEstimator(
        estimator, n_rounds=1, local_epochs=3, random_state=0
    ).fit(data.data, data.target, sensitive_features=data.sensitive)
    assert not np.allclose(plain.estimator_.coef_, own.coef_)


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"class_weight": "balanced"},
        {"constraints": "demographic_parity"},
        {"fairness": 1.0},
    ],
    ids=["plain", "class-weights", "constraint", "penalty"],
)
def test_one_weighted_client_is_the_trees_own_weighted_fit(data, params):
    trees = FairHistGradientBoostingClassifier(
        max_iter=15, early_stopping=False, random_state=0, **params
    )
    federation = _fit(FederatedEstimator(trees, random_state=0), data)
    own = clone(trees).fit(
        data.data,
        data.target,
        sample_weight=data.weight,
        sensitive_features=data.sensitive,
    )
    np.testing.assert_array_equal(
        federation.decision_function(data.data), own.decision_function(data.data)
    )
    # scikit-learn's weighted bin edges: percentiles of the weights, the rows
    # of weight 0 left out, not the rows' own.
    unweighted = HistGradientBoostingClassifier(max_iter=1).fit(data.data, data.target)
    edges = federation.estimator_._bin_mapper.bin_thresholds_
    assert not np.array_equal(edges[0], unweighted._bin_mapper.bin_thresholds_[0])


def test_weighted_edges_over_clients_are_the_pooled_ones(data):
    trees = HistGradientBoostingClassifier(
        max_iter=10, early_stopping=False, random_state=0
    )
    federation = _fit(
        FederatedEstimator(trees, random_state=0), data, clients=data.clients
    )
    pooled = clone(trees).fit(data.data, data.target, sample_weight=data.weight)
    for ours, theirs in zip(
        federation.estimator_._bin_mapper.bin_thresholds_,
        pooled._bin_mapper.bin_thresholds_,
        strict=True,
    ):
        np.testing.assert_array_equal(ours, theirs)


def test_weighted_edges_leave_weightless_rows_out_and_average_exact_targets():
    # 300 rows of weight 1 and 4 bins: the quartiles' targets 75, 150 and
    # 225 are exact running weights, where scikit-learn averages with the
    # next value; feature 1's value 9 is only on rows of weight 0, which
    # scikit-learn leaves out of its few distinct values.
    rng = np.random.default_rng(0)
    weight = np.repeat([1.0, 0.0], [300, 100])
    X = np.c_[rng.normal(size=400), np.where(weight > 0, rng.integers(0, 3, 400), 9.0)]
    y = (X[:, 0] + rng.normal(size=400) > 0).astype(int)
    trees = HistGradientBoostingClassifier(
        max_iter=3, max_bins=4, early_stopping=False, random_state=0
    )
    federation = FederatedEstimator(trees).fit(
        X, y, clients=rng.integers(0, 2, 400), sample_weight=weight
    )
    pooled = clone(trees).fit(X, y, sample_weight=weight)
    ours = federation.estimator_._bin_mapper.bin_thresholds_
    theirs = pooled._bin_mapper.bin_thresholds_
    np.testing.assert_array_equal(ours[0], theirs[0])
    np.testing.assert_array_equal(ours[1], [0.5, 1.5])
    np.testing.assert_array_equal(ours[1], theirs[1])


def test_class_weights_bin_as_scikit_learn_bins_them(data):
    # Continuous features: scikit-learn bins at the class-weighted
    # percentiles, and so does the federation now.
    trees = HistGradientBoostingClassifier(
        max_iter=10, early_stopping=False, random_state=0, class_weight="balanced"
    )
    federation = FederatedEstimator(trees).fit(data.data, data.target)
    pooled = clone(trees).fit(data.data, data.target)
    np.testing.assert_array_equal(
        federation.decision_function(data.data), pooled.decision_function(data.data)
    )


@pytest.mark.parametrize("family", ["logistic", "trees"])
def test_the_class_prior_and_the_rates_are_weighted(data, family):
    estimator = (
        FairPenaltyLogisticRegression(constraints="demographic_parity")
        if family == "logistic"
        else FairHistGradientBoostingClassifier(
            max_iter=10, early_stopping=False, constraints="demographic_parity"
        )
    )
    rounds = {"n_rounds": 2} if family == "logistic" else {}
    federation = _fit(
        FederatedEstimator(estimator, random_state=0, **rounds),
        data,
        clients=data.clients,
    )
    prevalence = np.average(data.target, weights=data.weight)
    assert federation.class_prior_[1] == pytest.approx(prevalence)
    assert federation.estimator_.target_rate_ == pytest.approx(prevalence)
    assert prevalence != pytest.approx(data.target.mean(), abs=1e-4)


@pytest.mark.filterwarnings("ignore::skfedida.exceptions.InactiveGroupBalancingWarning")
def test_a_resampled_row_weighs_its_seed_row_times_the_correction(data):
    rows = data.clients == 0
    client = _ClientData(
        data.data[rows], data.target[rows], weight=data.weight[rows] + 0.5
    )
    sampler = FairnessAwareROSE(random_state=0)
    resampled = _resample(sampler, client, "weights")
    seeds = sampler.sample_indices_
    ratio = resampled.weight / client.weight[seeds]
    # One correction per class, which gives the resampled rows the weighted
    # label shares of the client's own.
    for label in (0, 1):
        assert np.ptp(ratio[resampled.y == label]) < 1e-12
    before = np.average(client.y, weights=client.weight)
    assert np.average(resampled.y, weights=resampled.weight) == pytest.approx(before)
    assert _resample(sampler, client).weight is not None  # weights follow rows


def test_held_out_metrics_are_weighted(data):
    federation = _fit(
        FederatedEstimator(
            FairPenaltyLogisticRegression(fairness=0),
            n_rounds=2,
            validation_fraction=0.3,
            random_state=0,
        ),
        data,
    )
    # The held-out rows are those the split leaves out of training.
    record = next(r for r in federation.history_ if r["round"] == 2)
    from skfedida.federated._client import _split_client

    _, held_out = _split_client(data.target, 0.3, federation.client_seeds_[0], client=0)
    predicted = federation.predict(data.data[held_out]) == 1
    expected = np.average(predicted, weights=data.weight[held_out])
    assert record["val_selection_rate"] == pytest.approx(expected)


@pytest.mark.parametrize(
    "weight, words",
    [
        (-np.ones(3000), "finite, non-negative"),
        (np.full(3000, np.nan), "finite, non-negative"),
        (np.ones(10), "one weight per row of X: 3000 rows"),
        (np.array(["a"] * 3000), "must hold numbers"),
    ],
)
def test_bad_weights_are_refused_by_name(data, weight, words):
    with pytest.raises(ValueError, match=f"sample_weight must .*{words}|{words}"):
        FederatedEstimator(FairPenaltyLogisticRegression()).fit(
            data.data, data.target, sample_weight=weight
        )


@pytest.mark.parametrize(
    "estimator",
    [FairPenaltyLogisticRegression(), FairHistGradientBoostingClassifier(max_iter=3)],
)
def test_a_client_of_weightless_rows_is_named(data, estimator):
    weight = np.where(data.clients == 1, 0.0, 1.0)
    with pytest.raises(
        ValueError, match=r"Client 1's .*rows all have zero sample_weight"
    ):
        FederatedEstimator(estimator).fit(
            data.data, data.target, clients=data.clients, sample_weight=weight
        )


def test_weights_reach_only_an_estimator_that_takes_them(data):
    class NoWeights(SGDClassifier):
        def partial_fit(self, X, y, classes=None):
            return super().partial_fit(X, y, classes=classes)

    with pytest.raises(
        TypeError, match=r"NoWeights\.partial_fit takes no sample_weight"
    ):
        FederatedEstimator(NoWeights(loss="log_loss")).fit(
            data.data, data.target, sample_weight=data.weight
        )
    with pytest.raises(ValueError, match="a Pipeline"):
        FederatedEstimator(
            make_pipeline(StandardScaler(), FairPenaltyLogisticRegression())
        ).fit(data.data, data.target, sample_weight=data.weight)


def test_with_routing_the_estimator_requests_the_weights(data):
    from sklearn.exceptions import UnsetMetadataPassedError

    with config_context(enable_metadata_routing=True):
        estimator = FairPenaltyLogisticRegression(random_state=0)
        with pytest.raises(UnsetMetadataPassedError, match="sample_weight"):
            FederatedEstimator(estimator, n_rounds=1).fit(
                data.data, data.target, sample_weight=data.weight
            )
        estimator.set_partial_fit_request(sample_weight=True)
        routed = FederatedEstimator(estimator, n_rounds=1, random_state=0).fit(
            data.data, data.target, sample_weight=data.weight
        )
        estimator.set_partial_fit_request(sample_weight=False)
        with pytest.raises(ValueError, match="does not request it"):
            FederatedEstimator(estimator, n_rounds=1).fit(
                data.data, data.target, sample_weight=data.weight
            )
    unrouted = FederatedEstimator(
        FairPenaltyLogisticRegression(random_state=0), n_rounds=1, random_state=0
    ).fit(data.data, data.target, sample_weight=data.weight)
    np.testing.assert_array_equal(routed.estimator_.coef_, unrouted.estimator_.coef_)


def test_with_routing_the_trees_request_the_weights_in_fit(data):
    from sklearn.exceptions import UnsetMetadataPassedError

    def federation(estimator):
        return FederatedEstimator(estimator, random_state=0)

    with config_context(enable_metadata_routing=True):
        trees = FairHistGradientBoostingClassifier(max_iter=3, random_state=0)
        with pytest.raises(UnsetMetadataPassedError, match="sample_weight"):
            federation(trees).fit(data.data, data.target, sample_weight=data.weight)
        trees.set_fit_request(sample_weight=True)
        routed = federation(trees).fit(
            data.data, data.target, sample_weight=data.weight
        )
        trees.set_fit_request(sample_weight=False)
        with pytest.raises(ValueError, match=r"\.fit does not request it"):
            federation(trees).fit(data.data, data.target, sample_weight=data.weight)
    unrouted = federation(
        FairHistGradientBoostingClassifier(max_iter=3, random_state=0)
    ).fit(data.data, data.target, sample_weight=data.weight)
    np.testing.assert_array_equal(
        routed.predict_proba(data.data), unrouted.predict_proba(data.data)
    )


def test_flower_refuses_weights_it_cannot_use(data):
    pytest.importorskip("flwr")
    from skfedida.flower import make_client_app, make_server_app, run_in_process

    federation = FederatedEstimator(FairPenaltyLogisticRegression(), n_rounds=1)

    def load(extra):
        def loaded(context):
            rows = data.clients == context.node_config["partition-id"]
            return {"X": data.data[rows], "y": data.target[rows], **extra(rows)}

        return loaded

    for extra, error, words in (
        (
            lambda rows: {"sample_weight": data.weight[rows]},
            ValueError,
            "rows' weights",
        ),
        (lambda rows: {"weights": data.weight[rows]}, TypeError, "'weights'"),
    ):
        # The server names the node and the client's own error.
        with pytest.raises(
            RuntimeError, match=f"failed the discovery query: {error.__name__}: "
        ) as raised:
            run_in_process(
                make_server_app(federation),
                make_client_app(federation, load(extra)),
                num_partitions=3,
            )
        assert words in str(raised.value)
