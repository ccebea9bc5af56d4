"""Boosted trees as a federation's model (issue 36): FederatedEstimator's tree fit.

Oracles: scikit-learn's ``HistGradientBoostingClassifier`` on the pooled
rows (without a penalty or a sampler, the federated trees are its trees bit
for bit: numeric features with missing values, and pandas categories that
each client has only some of); the one-machine penalised fit
(``FairHistGradientBoostingClassifier.fit``) for the penalised federation of
one client; and the estimator's own fit for ``strategy="central"`` and
``"local"``.
"""

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.ensemble import HistGradientBoostingClassifier

from skfedida._gate._checks import NoConsensus
from skfedida.datasets import make_federated_classification
from skfedida.ensemble import FairHistGradientBoostingClassifier
from skfedida.federated import DifferentialPrivacy, FederatedEstimator, evaluate_clients
from skfedida.federated._tree_client import TreeFederationClient
from skfedida.over_sampling import FairnessAwareROSE


@pytest.fixture(scope="module")
def data():
    data = make_federated_classification(
        2400, n_clients=4, n_features=5, random_state=7, group_shift=1.0
    )
    X = data.data.copy()
    X[::31, 1] = np.nan
    data.data = X
    return data


def _frame(data):
    """The rows as a DataFrame with a categorical column each client has part of."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(data.data, columns=[f"x{j}" for j in range(5)])
    # Client k draws from categories k..k+3 of 9: no client has them all.
    labels = np.array([f"c{j}" for j in range(9)], dtype=object)
    picks = data.clients + rng.integers(0, 4, len(data.clients))
    values = labels[picks].copy()
    values[::23] = None
    # The signal depends on the category, so the trees split on it.
    frame["kind"] = pd.Categorical(values)
    frame["x0"] += (picks % 3 == 0) * 1.5
    return frame


def _trees(**params):
    return FairHistGradientBoostingClassifier(
        max_iter=12, early_stopping=False, random_state=0, **params
    )


def _same_trees(ours, theirs):
    assert ours.n_iter_ == theirs.n_iter_
    assert ours._baseline_prediction[0, 0] == theirs._baseline_prediction[0, 0]
    for a, b in zip(ours._predictors, theirs._predictors, strict=True):
        np.testing.assert_array_equal(a[0].nodes, b[0].nodes)


@pytest.mark.parametrize("n_clients", [1, 4])
def test_without_a_penalty_the_federation_grows_scikit_learns_trees(data, n_clients):
    clients = None if n_clients == 1 else data.clients
    federation = FederatedEstimator(_trees()).fit(
        data.data, data.target, clients=clients
    )
    pooled = HistGradientBoostingClassifier(
        max_iter=12, early_stopping=False, random_state=0
    ).fit(data.data, data.target)
    _same_trees(federation.estimator_, pooled)
    np.testing.assert_array_equal(
        federation.predict_proba(data.data), pooled.predict_proba(data.data)
    )


def test_categories_of_every_client_make_scikit_learns_categories(data):
    X = _frame(data)
    federation = FederatedEstimator(_trees()).fit(X, data.target, clients=data.clients)
    pooled = HistGradientBoostingClassifier(
        max_iter=12, early_stopping=False, random_state=0
    ).fit(X, data.target)
    _same_trees(federation.estimator_, pooled)
    assert federation.estimator_.is_categorical_.tolist() == [False] * 5 + [True]
    assert any(
        node["is_categorical"] for tree in pooled._predictors for node in tree[0].nodes
    )
    np.testing.assert_array_equal(federation.predict(X), pooled.predict(X))
    assert list(federation.feature_names_in_) == list(X.columns)


def test_clients_with_different_dtypes_are_named(data):
    # A client whose column holds numeric codes where the others' holds
    # pandas categories: categorical_features="from_dtype" would read them
    # differently.
    from skfedida.ensemble._boosting import TreeChannel, in_process
    from skfedida.federated._tree_server import federated_trees

    X = _frame(data)
    members = []
    for k in range(2):
        rows = data.clients == k
        part = X[rows].copy()
        if k == 1:
            part["kind"] = part["kind"].cat.codes.astype(float)
        members.append(
            TreeFederationClient(
                _trees(),
                part,
                data.target[rows],
                None,
                sampler=None,
                seed=k,
                prior_correction=None,
            )
        )
    # Of two clients neither is a majority: the server cannot tell which is
    # right, and names both (also under on_client_error="skip").
    with pytest.raises(
        NoConsensus,
        match=r"No strict majority of the clients agrees on the columns and their "
        r"dtypes: Client 0 says '.*kind: category'; Client 1 says '.*kind: float64'",
    ):
        federated_trees(_trees(), TreeChannel(in_process(members), 2))


def test_the_penalised_federation_of_one_client_is_the_one_machine_fit(data):
    penalised = _trees(fairness=1.0)
    federation = FederatedEstimator(penalised).fit(
        data.data, data.target, sensitive_features=data.sensitive
    )
    alone = clone(penalised).fit(
        data.data, data.target, sensitive_features=data.sensitive
    )
    np.testing.assert_allclose(
        federation.decision_function(data.data),
        alone.decision_function(data.data),
        rtol=1e-9,
        atol=1e-9,
    )
    plain = FederatedEstimator(_trees()).fit(data.data, data.target)
    assert not np.allclose(
        federation.decision_function(data.data), plain.decision_function(data.data)
    )


def test_the_penalised_federation_equals_its_pooled_single_client(data):
    penalised = _trees(fairness=3.0)
    federated = FederatedEstimator(penalised).fit(
        data.data, data.target, clients=data.clients, sensitive_features=data.sensitive
    )
    single = FederatedEstimator(penalised).fit(
        data.data, data.target, sensitive_features=data.sensitive
    )
    np.testing.assert_allclose(
        federated.decision_function(data.data),
        single.decision_function(data.data),
        rtol=1e-6,
        atol=1e-6,
    )


def test_a_client_lacking_a_group_codes_the_others_as_the_federation(data):
    # Client 0 has no row of the first group: its own codes of the other
    # groups differ from the federation's, which the penalty must use.
    codes = pd.factorize(pd.MultiIndex.from_frame(pd.DataFrame(data.sensitive)))[0]
    keep = ~((data.clients == 0) & (codes == codes[data.clients == 0][0]))
    X, y = data.data[keep], data.target[keep]
    S = {name: values[keep] for name, values in data.sensitive.items()}
    penalised = _trees(fairness=3.0)
    federated = FederatedEstimator(penalised).fit(
        X, y, clients=data.clients[keep], sensitive_features=S
    )
    single = FederatedEstimator(penalised).fit(X, y, sensitive_features=S)
    np.testing.assert_allclose(
        federated.decision_function(X),
        single.decision_function(X),
        rtol=1e-6,
        atol=1e-6,
    )


def test_early_stopping_scores_the_clients_held_out_rows(data):
    estimator = FairHistGradientBoostingClassifier(
        max_iter=300,
        early_stopping=True,
        n_iter_no_change=3,
        learning_rate=0.5,
        random_state=0,
    )
    federation = FederatedEstimator(estimator, random_state=1).fit(
        data.data, data.target, clients=data.clients
    )
    model = federation.estimator_
    assert model.do_early_stopping_
    assert model.n_iter_ < 300
    assert model.validation_score_.shape == (model.n_iter_ + 1,)
    assert model.train_score_.shape == (model.n_iter_ + 1,)
    # Stopped as scikit-learn stops: no gain of tol over the last scores.
    assert model._should_stop(list(model.validation_score_))
    again = FederatedEstimator(estimator, random_state=1).fit(
        data.data, data.target, clients=data.clients
    )
    _same_trees(again.estimator_, model)


def test_a_sampler_resamples_each_client_once_reproducibly(data):
    sampler = FairnessAwareROSE(random_state=0)
    X = np.nan_to_num(data.data)  # the smoothed bootstrap needs values
    fits = [
        FederatedEstimator(_trees(fairness=1.0), sampler=sampler, random_state=3).fit(
            X,
            data.target,
            clients=data.clients,
            sensitive_features=data.sensitive,
        )
        for _ in range(2)
    ]
    _same_trees(fits[0].estimator_, fits[1].estimator_)
    # Each client's sampler draws from its own seed (client_seeds_, from
    # random_state): another random_state resamples other rows.
    other = FederatedEstimator(
        _trees(fairness=1.0), sampler=sampler, random_state=4
    ).fit(X, data.target, clients=data.clients, sensitive_features=data.sensitive)
    assert not np.array_equal(other.decision_function(X), fits[0].decision_function(X))
    plain = FederatedEstimator(_trees(fairness=1.0), random_state=3).fit(
        X, data.target, clients=data.clients, sensitive_features=data.sensitive
    )
    assert not np.allclose(fits[0].decision_function(X), plain.decision_function(X))
    # Resampled rows are weighted back to each client's label shares, so the
    # federation's baseline stays its prevalence's log-odds.
    prevalence = data.target.mean()
    baseline = fits[0].estimator_._baseline_prediction[0, 0]
    assert abs(1 / (1 + np.exp(-baseline)) - prevalence) < 0.02


def test_central_and_local_are_the_estimator_s_own_fits(data):
    central = FederatedEstimator(_trees(), strategy="central", random_state=0).fit(
        data.data, data.target, clients=data.clients
    )
    seed = central.client_seeds_[0]
    own = clone(_trees()).set_params(random_state=int(seed)).fit(data.data, data.target)
    _same_trees(central.estimator_, own)
    local = FederatedEstimator(_trees(), strategy="local", random_state=0).fit(
        data.data, data.target, clients=data.clients
    )
    assert sorted(local.client_estimators_) == [0, 1, 2, 3]
    rows = data.clients == 2
    client_model = (
        clone(_trees())
        .set_params(random_state=int(local.client_seeds_[2]))
        .fit(data.data[rows], data.target[rows])
    )
    np.testing.assert_array_equal(
        local.predict_proba(data.data[rows], clients=data.clients[rows]),
        client_model.predict_proba(data.data[rows]),
    )


@pytest.mark.parametrize(
    "params, words",
    [
        ({"strategy": "pfedavg"}, "strategy='pfedavg'"),
        ({"n_rounds": 3}, "n_rounds=3 does not apply to boosted trees"),
        ({"local_epochs": 1}, "local_epochs=1 does not apply"),
        ({"dp": DifferentialPrivacy(noise_multiplier=1.0)}, "dp=DifferentialPrivacy"),
        ({"client_fraction": 0.5}, "client_fraction=0.5"),
        ({"aggregation": "median"}, "aggregation='median'"),
        (
            {"warm_start": True, "strategy": "local"},
            "warm_start=True with strategy='local'",
        ),
        ({"sensitive": "group"}, "sensitive="),
        ({"validation_fraction": 0.2}, "validation_fraction=0.2 does not apply"),
    ],
)
def test_what_trees_cannot_do_is_refused_by_name(data, params, words):
    with pytest.raises(ValueError, match=words.replace("(", r"\(").replace(")", r"\)")):
        FederatedEstimator(_trees(), **params).fit(
            data.data, data.target, clients=data.clients
        )


def test_multi_class_and_monotonic_constraints_with_a_penalty_are_refused(data):
    y = data.target + (data.data[:, 0] > 1)
    with pytest.raises(ValueError, match="binary classifier; y has 3 classes"):
        FederatedEstimator(_trees()).fit(data.data, y, clients=data.clients)
    with pytest.raises(ValueError, match=r"monotonic_cst=.* with fairness"):
        FederatedEstimator(_trees(monotonic_cst=[1, 0, 0, 0, 0], fairness=1.0)).fit(
            data.data,
            data.target,
            clients=data.clients,
            sensitive_features=data.sensitive,
        )


def test_monotonic_constraints_are_scikit_learns(data):
    X = _frame(data)
    constraints = {"x0": 1, "x2": -1}
    federation = FederatedEstimator(_trees(monotonic_cst=constraints)).fit(
        X, data.target, clients=data.clients
    )
    pooled = HistGradientBoostingClassifier(
        max_iter=12, early_stopping=False, random_state=0, monotonic_cst=constraints
    ).fit(X, data.target)
    _same_trees(federation.estimator_, pooled)
    with pytest.raises(ValueError, match="Categorical features cannot have"):
        FederatedEstimator(_trees(monotonic_cst={"kind": 1})).fit(
            X, data.target, clients=data.clients
        )


def test_a_client_answering_wrongly_is_named_or_skipped(data, monkeypatch):
    original = TreeFederationClient.answer

    def answer(self, query):
        out = original(self, query)
        if query["kind"] == "grow" and query["splits"] and self.seed == broken_seed:
            out = {**out, "splits": out["splits"] + [1, 0]}
        return out

    federation = FederatedEstimator(_trees(), random_state=0)
    seeds = FederatedEstimator(_trees(), random_state=0).fit(
        data.data, data.target, clients=data.clients
    )
    broken_seed = int(seeds.client_seeds_[1])
    monkeypatch.setattr(TreeFederationClient, "answer", answer)
    with pytest.raises(RuntimeError, match="Client 1 failed the tree query 'grow'"):
        federation.fit(data.data, data.target, clients=data.clients)
    federation.set_params(on_client_error="skip").fit(
        data.data, data.target, clients=data.clients
    )
    skipped = [r for r in federation.history_ if r.get("stage")]
    assert skipped == [
        {
            "round": 0,
            "stage": "tree query 'grow'",
            "client": 1,
            "skipped": skipped[0]["skipped"],
        }
    ]
    assert "children hold" in skipped[0]["skipped"]


def test_the_per_client_table_reads_the_federated_trees(data):
    federation = FederatedEstimator(_trees(fairness=1.0)).fit(
        data.data, data.target, clients=data.clients, sensitive_features=data.sensitive
    )
    table = evaluate_clients(
        federation,
        data.data,
        data.target,
        clients=data.clients,
        sensitive_features=data.sensitive,
        n_bootstrap=20,
        random_state=0,
    )
    assert table is not None


@pytest.mark.parametrize("class_weight", ["balanced", {0: 1.0, 1: 5.0}])
@pytest.mark.parametrize("n_clients", [1, 4])
def test_class_weights_are_scikit_learns(data, class_weight, n_clients):
    # Few distinct values per feature: scikit-learn's edges are midpoints,
    # weighted or not, so the weighted trees must be its trees. Its
    # class_weight keys are the encoded labels 0 and 1, whatever the labels.
    X = np.round(np.nan_to_num(data.data), 1)
    y = np.where(data.target == 1, "yes", "no")
    clients = None if n_clients == 1 else data.clients
    federation = FederatedEstimator(_trees(class_weight=class_weight)).fit(
        X, y, clients=clients
    )
    pooled = HistGradientBoostingClassifier(
        max_iter=12, early_stopping=False, random_state=0, class_weight=class_weight
    ).fit(X, y)
    _same_trees(federation.estimator_, pooled)


def test_a_count_of_validation_rows_and_unbounded_penalised_leaves_are_refused(data):
    with pytest.raises(ValueError, match="validation_fraction=200"):
        FederatedEstimator(
            _trees(validation_fraction=200).set_params(early_stopping=True)
        ).fit(data.data, data.target, clients=data.clients)
    with pytest.raises(ValueError, match="max_leaf_nodes=None with fairness"):
        FederatedEstimator(_trees(fairness=1.0, max_leaf_nodes=None)).fit(
            data.data,
            data.target,
            clients=data.clients,
            sensitive_features=data.sensitive,
        )


def test_none_is_a_category_and_an_empty_column_a_missing_one(data):
    X = _frame(data)
    kind = X["kind"].astype(object)
    kind[::7] = None  # None in a column of objects: a category of its own
    X["kind"] = kind
    X["empty"] = pd.Categorical([np.nan] * len(X), categories=["p", "q"])
    estimator = _trees(categorical_features=["kind", "empty"])
    federation = FederatedEstimator(estimator).fit(X, data.target, clients=data.clients)
    pooled = HistGradientBoostingClassifier(
        max_iter=12,
        early_stopping=False,
        random_state=0,
        categorical_features=["kind", "empty"],
    ).fit(X, data.target)
    _same_trees(federation.estimator_, pooled)
    np.testing.assert_array_equal(federation.predict_proba(X), pooled.predict_proba(X))


def test_without_early_stopping_no_loss_is_sent(data):
    federation = FederatedEstimator(_trees()).fit(
        data.data, data.target, clients=data.clients
    )
    assert federation.estimator_.train_score_.size == 0
    assert federation.estimator_.validation_score_.size == 0


def test_group_thresholds_act_on_the_federated_trees(data):
    from skfedida.metrics import demographic_parity_difference
    from skfedida.postprocessing import FederatedThresholdOptimizer

    federation = FederatedEstimator(_trees(), random_state=0)
    post = FederatedThresholdOptimizer(federation, random_state=0).fit(
        data.data, data.target, clients=data.clients, sensitive_features=data.sensitive
    )
    assert isinstance(post.estimator_.estimator_, FairHistGradientBoostingClassifier)
    decisions = post.predict(
        data.data, clients=data.clients, sensitive_features=data.sensitive
    )
    plain = post.estimator_.predict(data.data)

    def gap(y_pred):
        return demographic_parity_difference(
            data.target, y_pred, sensitive_features=data.sensitive
        )

    assert gap(decisions) < 0.02 < gap(plain)


@pytest.mark.parametrize("n_clients", [1, 4])
def test_a_warm_start_adds_trees_as_scikit_learns_does(data, n_clients):
    clients = None if n_clients == 1 else data.clients
    federation = FederatedEstimator(_trees().set_params(max_iter=5), warm_start=True)
    federation.fit(data.data, data.target, clients=clients)
    first = [tree[0].nodes.copy() for tree in federation.estimator_._predictors]
    federation.set_params(estimator__max_iter=12)
    federation.fit(data.data, data.target, clients=clients)
    pooled = HistGradientBoostingClassifier(
        max_iter=5, early_stopping=False, random_state=0, warm_start=True
    ).fit(data.data, data.target)
    pooled.set_params(max_iter=12).fit(data.data, data.target)
    _same_trees(federation.estimator_, pooled)
    for ours, before in zip(federation.estimator_._predictors, first, strict=False):
        np.testing.assert_array_equal(ours[0].nodes, before)


def test_a_warm_start_with_the_penalty_continues_the_same_objective(data):
    penalised = _trees(fairness=2.0)
    kwargs = {"clients": data.clients, "sensitive_features": data.sensitive}
    whole = FederatedEstimator(penalised).fit(data.data, data.target, **kwargs)
    federation = FederatedEstimator(
        clone(penalised).set_params(max_iter=4), warm_start=True
    ).fit(data.data, data.target, **kwargs)
    federation.set_params(estimator__max_iter=12).fit(data.data, data.target, **kwargs)
    np.testing.assert_allclose(
        federation.decision_function(data.data),
        whole.decision_function(data.data),
        rtol=1e-9,
        atol=1e-9,
    )


def test_a_warm_start_refuses_other_rows_fewer_trees_or_other_clients(data):
    federation = FederatedEstimator(
        _trees().set_params(max_iter=5), warm_start=True
    ).fit(data.data, data.target, clients=data.clients)
    with pytest.raises(ValueError, match="max_iter=3 must be larger than or equal"):
        federation.set_params(estimator__max_iter=3).fit(
            data.data, data.target, clients=data.clients
        )
    federation.set_params(estimator__max_iter=8)
    with pytest.raises(ValueError, match="categories or bin edges changed"):
        federation.fit(data.data * 2, data.target, clients=data.clients)
    with pytest.raises(ValueError, match="same clients"):
        federation.fit(data.data, data.target, clients=data.clients % 2)


class _StopAfter:
    """A callback that records each tree's task and stops after ``n`` trees."""

    max_propagation_depth = None

    def __init__(self, n, X, y):
        self.n, self.X, self.y = n, X, y
        self.paths, self.scores = [], []

    def setup(self, estimator, context):
        pass

    def teardown(self, estimator, context):
        pass

    def on_fit_task_begin(self, estimator, context):
        from sklearn.callback._callback_context import get_context_path

        self.paths.append(tuple(c.task_name for c in get_context_path(context)))

    def on_fit_task_end(self, estimator, context, *, fitted_estimator):
        if context.task_name != "tree" or fitted_estimator is None:
            return False
        # The federation as it stood after this tree.
        self.scores.append(fitted_estimator.predict_proba(self.X)[:, 1].mean())
        return len(self.scores) >= self.n


def test_callbacks_see_each_tree_and_can_stop_the_trees(data):
    stopper = _StopAfter(4, data.data, data.target)
    stopped = (
        FederatedEstimator(_trees(fairness=1.0))
        .set_callbacks(stopper)
        .fit(
            data.data,
            data.target,
            clients=data.clients,
            sensitive_features=data.sensitive,
        )
    )
    assert stopped.estimator_.n_iter_ == 4
    assert [p for p in stopper.paths if p[-1] == "tree"] == [("fit", "tree")] * 4
    four = FederatedEstimator(_trees(fairness=1.0).set_params(max_iter=4)).fit(
        data.data, data.target, clients=data.clients, sensitive_features=data.sensitive
    )
    np.testing.assert_array_equal(
        stopped.predict_proba(data.data), four.predict_proba(data.data)
    )
    # Each tree's model as it stood: its mean probability after that tree.
    assert stopper.scores[-1] == four.predict_proba(data.data)[:, 1].mean()


def test_a_client_left_out_counts_in_neither_sizes_nor_prior(data, monkeypatch):
    original = TreeFederationClient.answer
    left_out = None

    def answer(self, query):
        if query["kind"] == "prepare" and self.seed == left_out:
            raise ValueError("this client cannot resample")
        return original(self, query)

    federation = FederatedEstimator(_trees(), on_client_error="skip", random_state=0)
    left_out = int(
        FederatedEstimator(_trees(), random_state=0)
        .fit(data.data, data.target, clients=data.clients)
        .client_seeds_[2]
    )
    monkeypatch.setattr(TreeFederationClient, "answer", answer)
    federation.fit(data.data, data.target, clients=data.clients)
    assert federation.client_sizes_[2] == 0
    others = data.clients != 2
    prior = np.bincount(data.target[others]) / others.sum()
    np.testing.assert_allclose(federation.class_prior_, prior)
    assert [r["client"] for r in federation.history_] == [2]


def test_a_warm_start_keeps_each_client_s_seed_and_history(data):
    # random_state=None: the clients' seeds (their held-out rows) are kept,
    # not drawn again, so the continued trees see the same rows.
    estimator = _trees().set_params(
        max_iter=4, early_stopping=True, n_iter_no_change=50, random_state=0
    )
    federation = FederatedEstimator(estimator, warm_start=True).fit(
        data.data, data.target, clients=data.clients
    )
    seeds = federation.client_seeds_.copy()
    first = [tree[0].nodes.copy() for tree in federation.estimator_._predictors]
    federation.set_params(estimator__max_iter=9).fit(
        data.data, data.target, clients=data.clients
    )
    np.testing.assert_array_equal(federation.client_seeds_, seeds)
    assert federation.estimator_.n_iter_ == 9
    assert federation.estimator_.validation_score_.shape == (10,)
    for ours, before in zip(federation.estimator_._predictors, first, strict=False):
        np.testing.assert_array_equal(ours[0].nodes, before)


def test_a_warm_start_refuses_a_client_left_out_and_another_strategy(data, monkeypatch):
    original = TreeFederationClient.answer
    broken = None

    def answer(self, query):
        out = original(self, query)
        if query["kind"] == "grow" and query["splits"] and self.seed == broken:
            out = {**out, "splits": out["splits"] + [1, 0]}
        return out

    federation = FederatedEstimator(
        _trees().set_params(max_iter=3),
        warm_start=True,
        on_client_error="skip",
        random_state=0,
    )
    broken = int(
        clone(federation)
        .fit(data.data, data.target, clients=data.clients)
        .client_seeds_[2]
    )
    monkeypatch.setattr(TreeFederationClient, "answer", answer)
    federation.fit(data.data, data.target, clients=data.clients)
    before = federation.estimator_
    assert federation.client_sizes_[2] == 0 and len(federation.history_) == 1
    with pytest.raises(ValueError, match=r"grown without clients \[2\]"):
        federation.set_params(estimator__max_iter=6).fit(
            data.data, data.target, clients=data.clients
        )
    assert federation.estimator_ is before  # a failed warm start changes nothing
    central = FederatedEstimator(
        _trees().set_params(max_iter=3), strategy="central", random_state=0
    ).fit(data.data, data.target, clients=data.clients)
    with pytest.raises(ValueError, match="an estimator's own fit"):
        central.set_params(strategy="fedavg", warm_start=True).fit(
            data.data, data.target, clients=data.clients
        )


def test_callbacks_with_the_estimator_s_own_fits_are_refused(data):
    stopper = _StopAfter(2, data.data, data.target)
    with pytest.raises(ValueError, match="Callbacks with strategy='central'"):
        FederatedEstimator(_trees(), strategy="central").set_callbacks(stopper).fit(
            data.data, data.target, clients=data.clients
        )


def test_the_model_a_callback_keeps_does_not_change_after(data):
    kept = []

    class Keep(_StopAfter):
        def on_fit_task_end(self, estimator, context, *, fitted_estimator):
            if context.task_name == "tree" and fitted_estimator is not None:
                kept.append(fitted_estimator.estimator_)
            return False

    estimator = _trees().set_params(
        max_iter=4, early_stopping=True, n_iter_no_change=50
    )
    FederatedEstimator(estimator).set_callbacks(Keep(0, None, None)).fit(
        data.data, data.target, clients=data.clients
    )
    assert [m.n_iter_ for m in kept] == [1, 2, 3, 4]
    assert [m.train_score_.shape[0] for m in kept] == [2, 3, 4, 5]
