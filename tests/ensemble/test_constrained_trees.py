"""Rate constraints at the operating point on the boosted trees (issue 45).

The trees' ``constraints=`` equalise the groups' rates of the *decisions* at
the operating point, not their mean logits. Measured independently of the
code under test (fairlearn's metrics on the decisions ``decision_function >
operating_threshold_``, numpy's weighted averages), in one process, in a
federation (equal to the pooled fit) and through the reply gate.
"""

import numpy as np
import pytest
from fairlearn.metrics import (
    demographic_parity_difference,
    false_positive_rate_difference,
)
from sklearn.base import clone
from sklearn.frozen import FrozenEstimator
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import FixedThresholdClassifier
from sklearn.utils._param_validation import InvalidParameterError

from skfedida._groups import encode_groups
from skfedida.datasets import make_federated_classification
from skfedida.ensemble import FairHistGradientBoostingClassifier
from skfedida.exceptions import InactivePenaltyWarning
from skfedida.federated import FederatedEstimator
from skfedida.federated._tree_client import TreeFederationClient


@pytest.fixture(scope="module")
def data():
    return make_federated_classification(
        4000, n_clients=4, n_features=6, random_state=3, group_shift=1.0
    )


def _trees(**params):
    return FairHistGradientBoostingClassifier(
        max_iter=40, early_stopping=False, random_state=0, **params
    )


def _codes(data):
    return encode_groups(data.sensitive, n_samples=len(data.target)).codes


def _decisions_at_prevalence(model, X, share):
    """Select the top ``share`` of the rows by the model's scores."""
    scores = model.decision_function(X)
    return (scores > np.quantile(scores, 1 - share)).astype(int)


@pytest.mark.parametrize(
    "constraints, metric",
    [
        ("demographic_parity", demographic_parity_difference),
        ("false_positive_rate_parity", false_positive_rate_difference),
    ],
)
def test_the_constraint_lowers_the_gap_of_the_decisions(data, constraints, metric):
    share = float(np.mean(data.target))
    groups = _codes(data)
    plain = _trees().fit(data.data, data.target)
    fair = _trees(constraints=constraints).fit(
        data.data, data.target, sensitive_features=data.sensitive
    )
    gaps = [
        metric(
            data.target,
            _decisions_at_prevalence(model, data.data, share),
            sensitive_features=groups,
        )
        for model in (plain, fair)
    ]
    assert gaps[1] < 0.5 * gaps[0]
    # Decisions, not a collapse: the constrained model still ranks.
    assert roc_auc_score(data.target, fair.decision_function(data.data)) > 0.8
    # What the fit reports is the rates at its operating point, on its rows.
    decisions = (fair.decision_function(data.data) > fair.operating_threshold_).astype(
        int
    )
    assert decisions.mean() == pytest.approx(fair.target_rate_, abs=0.01)
    assert fair.target_rate_ == pytest.approx(share)
    assert metric(data.target, decisions, sensitive_features=groups) == pytest.approx(
        fair.rate_gaps_[-1, 0], abs=0.02
    )
    assert fair.rate_gaps_.shape == (41, 1)
    assert fair.multipliers_.shape == (1, 4, 4)
    assert fair.constrained_rates_.shape == (1, 4)
    assert len(fair.groups_) == 4


def test_the_constrained_decisions_are_a_fixed_threshold_classifier(data):
    fair = _trees(constraints="demographic_parity").fit(
        data.data, data.target, sensitive_features=data.sensitive
    )
    # The fitted model, frozen, decides at its operating point.
    decide = FixedThresholdClassifier(
        FrozenEstimator(fair),
        threshold=fair.operating_threshold_,
        response_method="decision_function",
    ).fit(data.data, data.target)
    scores = fair.decision_function(data.data)
    np.testing.assert_array_equal(
        decide.predict(data.data),
        fair.classes_[(scores >= fair.operating_threshold_).astype(int)],
    )
    assert decide.predict(data.data).mean() == pytest.approx(
        fair.target_rate_, abs=0.01
    )


def test_a_given_selection_rate_is_the_operating_point(data):
    fair = _trees(constraints="demographic_parity", selection_rate=0.1).fit(
        data.data, data.target, sensitive_features=data.sensitive
    )
    assert fair.target_rate_ == 0.1
    decisions = fair.decision_function(data.data) > fair.operating_threshold_
    assert decisions.mean() == pytest.approx(0.1, abs=0.01)


def test_equalized_odds_constrains_both_rates(data):
    fair = _trees(constraints="equalized_odds").fit(
        data.data, data.target, sensitive_features=data.sensitive
    )
    assert fair.rate_gaps_.shape == (41, 2)
    assert fair.multipliers_.shape == (2, 4, 4)
    assert np.all(fair.rate_gaps_[-1] < fair.rate_gaps_.max(axis=0))


def test_rates_weigh_rows_by_sample_weight_not_class_weight(data):
    weight = np.where(data.target == 1, 3.0, 1.0)
    fair = _trees(constraints="demographic_parity", class_weight="balanced").fit(
        data.data, data.target, sample_weight=weight, sensitive_features=data.sensitive
    )
    # The class weights rebalance the loss, not the population the rates
    # are shares of: the target is the sample-weighted prevalence.
    assert fair.target_rate_ == pytest.approx(np.average(data.target, weights=weight))
    unweighted = _trees(constraints="demographic_parity", class_weight="balanced").fit(
        data.data, data.target, sensitive_features=data.sensitive
    )
    assert unweighted.target_rate_ == pytest.approx(np.mean(data.target))
    groups = _codes(data)
    decisions = fair.decision_function(data.data) > fair.operating_threshold_
    rates = [
        np.average(decisions[groups == g], weights=weight[groups == g])
        for g in range(4)
    ]
    np.testing.assert_allclose(fair.constrained_rates_[0], rates, atol=0.02)


def test_the_term_keeps_its_weight_against_a_rescaled_loss(data):
    # Class weights of 3 for both labels triple the loss's gradients and
    # hessians (the trees do not move) and leave the rates' rows as they
    # are: the constraint's term must triple with the loss to keep its
    # weight in the trees.
    def fit(class_weight):
        return _trees(constraints="demographic_parity", class_weight=class_weight).fit(
            data.data, data.target, sensitive_features=data.sensitive
        )

    plain, tripled = fit(None), fit({0: 3.0, 1: 3.0})
    assert plain.multipliers_.any()
    np.testing.assert_allclose(
        tripled.decision_function(data.data),
        plain.decision_function(data.data),
        atol=1e-5,
    )


def test_without_a_constraint_it_is_the_same_model(data):
    plain = _trees().fit(data.data, data.target, sensitive_features=data.sensitive)
    unset = _trees(constraints=None, tolerance=0.3).fit(
        data.data, data.target, sensitive_features=data.sensitive
    )
    np.testing.assert_array_equal(
        plain.decision_function(data.data), unset.decision_function(data.data)
    )
    assert not hasattr(plain, "multipliers_")


def test_a_looser_tolerance_lets_a_larger_gap(data):
    tight, loose = (
        _trees(constraints="demographic_parity", tolerance=tolerance).fit(
            data.data, data.target, sensitive_features=data.sensitive
        )
        for tolerance in (0.0, 0.3)
    )
    assert loose.rate_gaps_[-1, 0] > tight.rate_gaps_[-1, 0]
    # A gap within the tolerance raises no multiplier.
    assert loose.multipliers_.sum() < tight.multipliers_.sum()


def test_a_constraint_with_the_penalty_and_early_stopping(data):
    fair = FairHistGradientBoostingClassifier(
        max_iter=30,
        early_stopping=True,
        n_iter_no_change=3,
        random_state=0,
        fairness=1.0,
        constraints="true_positive_rate_parity",
    ).fit(data.data, data.target, sensitive_features=data.sensitive)
    assert fair.rate_gaps_.shape == (fair.n_iter_ + 1, 1)
    assert len(fair.validation_score_) == fair.n_iter_ + 1


def test_monotonic_constraints_hold_under_a_rate_constraint(data):
    fair = _trees(
        constraints="demographic_parity", monotonic_cst=[1, 0, 0, 0, 0, 0]
    ).fit(data.data, data.target, sensitive_features=data.sensitive)
    grid = np.tile(data.data[:1], (50, 1))
    grid[:, 0] = np.linspace(-4, 4, 50)
    assert np.all(np.diff(fair.decision_function(grid)) >= 0)
    assert fair.multipliers_.sum() > 0


@pytest.mark.parametrize(
    "params, words",
    [
        ({"constraints": "parity"}, "'constraints' parameter"),
        ({"constraints": "demographic_parity", "tolerance": 1.5}, "'tolerance'"),
        ({"constraints": "demographic_parity", "tolerance": -0.1}, "'tolerance'"),
        (
            {"constraints": "demographic_parity", "selection_rate": 1.0},
            "'selection_rate'",
        ),
        (
            {"constraints": "demographic_parity", "selection_rate": 0},
            "'selection_rate'",
        ),
        (
            {"constraints": "demographic_parity", "selection_rate": "model"},
            "'selection_rate'",
        ),
    ],
)
def test_bad_values_are_refused_by_name(data, params, words):
    params = {"constraints": "demographic_parity", **params}
    with pytest.raises(InvalidParameterError, match=words):
        _trees(**params).fit(data.data, data.target, sensitive_features=data.sensitive)


def test_what_a_constraint_cannot_do_is_refused_or_said(data):
    fair = _trees(constraints="demographic_parity")
    with pytest.raises(
        ValueError, match="constraints='demographic_parity' needs a binary"
    ):
        fair.fit(
            data.data, data.target + data.clients % 2, sensitive_features=data.sensitive
        )
    with pytest.raises(ValueError, match="warm_start=True with constraints="):
        clone(fair).set_params(warm_start=True).fit(
            data.data, data.target, sensitive_features=data.sensitive
        )
    with pytest.warns(InactivePenaltyWarning, match="no sensitive attributes"):
        alone = clone(fair).fit(data.data, data.target)
    assert not hasattr(alone, "multipliers_")
    with pytest.warns(InactivePenaltyWarning, match="single value"):
        clone(fair).fit(
            data.data, data.target, sensitive_features=np.zeros(len(data.target))
        )


# -- in a federation ----------------------------------------------------------


@pytest.mark.parametrize("constraints", ["demographic_parity", "equalized_odds"])
def test_the_federation_equals_the_pooled_fit(data, constraints):
    fair = _trees(constraints=constraints)
    federated = FederatedEstimator(fair).fit(
        data.data, data.target, clients=data.clients, sensitive_features=data.sensitive
    )
    # The federation's rows, client after client (its order of sums).
    order = np.argsort(data.clients, kind="stable")
    pooled = clone(fair).fit(
        data.data[order],
        data.target[order],
        sensitive_features={k: v[order] for k, v in data.sensitive.items()},
    )
    np.testing.assert_allclose(
        federated.decision_function(data.data),
        pooled.decision_function(data.data),
        rtol=1e-9,
        atol=1e-9,
    )
    model = federated.estimator_
    np.testing.assert_allclose(model.multipliers_, pooled.multipliers_, atol=1e-12)
    assert model.rate_gaps_[-1, 0] == pytest.approx(pooled.rate_gaps_[-1, 0])
    assert model.groups_ == pooled.groups_


@pytest.mark.parametrize("strategy", ["fedavg", "central", "local"])
def test_a_sampler_s_rows_keep_the_rows_mix_in_the_rates(data, strategy):
    # ROSE balances every (group, label) cell; the rates and the prevalence
    # the constraint holds are the clients' own rows', not the balanced mix.
    from skfedida.over_sampling import FairnessAwareROSE

    federation = FederatedEstimator(
        _trees(constraints="demographic_parity").set_params(max_iter=5),
        sampler=FairnessAwareROSE(random_state=0),
        prior_correction=None,
        strategy=strategy,
        random_state=0,
    ).fit(
        data.data, data.target, clients=data.clients, sensitive_features=data.sensitive
    )
    if strategy == "local":
        for client, model in federation.client_estimators_.items():
            own = data.target[data.clients == client]
            assert model.target_rate_ == pytest.approx(own.mean(), rel=1e-9)
    else:
        model = federation.estimator_
        assert model.target_rate_ == pytest.approx(data.target.mean(), rel=1e-9)


def test_a_federation_warns_of_a_constraint_without_groups(data):
    with pytest.warns(InactivePenaltyWarning, match="constraints='demographic_parity'"):
        federated = FederatedEstimator(_trees(constraints="demographic_parity")).fit(
            data.data, data.target, clients=data.clients
        )
    assert not hasattr(federated.estimator_, "multipliers_")


def test_a_warm_start_continues_the_multipliers(data):
    federation = FederatedEstimator(
        _trees(constraints="demographic_parity").set_params(max_iter=20),
        warm_start=True,
    )
    federation.fit(
        data.data, data.target, clients=data.clients, sensitive_features=data.sensitive
    )
    first = federation.estimator_.multipliers_.copy()
    federation.set_params(estimator__max_iter=40).fit(
        data.data, data.target, clients=data.clients, sensitive_features=data.sensitive
    )
    whole = FederatedEstimator(_trees(constraints="demographic_parity")).fit(
        data.data, data.target, clients=data.clients, sensitive_features=data.sensitive
    )
    assert first.sum() > 0
    # Continued from where it stopped: the trees of one fit of 40.
    np.testing.assert_allclose(
        federation.decision_function(data.data),
        whole.decision_function(data.data),
        rtol=1e-9,
        atol=1e-9,
    )


def _lying(monkeypatch, kind, lie):
    original = TreeFederationClient.answer

    def answer(self, query):
        out = original(self, query)
        if query["kind"] == kind and self.seed == _lying.seed:
            out = lie(query, dict(out))
        return out

    monkeypatch.setattr(TreeFederationClient, "answer", answer)


def _moved(query, out):
    histograms = out["rate_histograms"].copy()
    histograms[:, -1] += histograms[:, 0]
    histograms[:, 0] = 0.0
    if query["kind"] == "init":  # every row away from the baseline's bin
        histograms = np.roll(histograms, 5, axis=1)
    out["rate_histograms"] = histograms
    return out


def _inflated(query, out):
    out["rate_histograms"] = out["rate_histograms"] * 1.5
    return out


def _negative(query, out):
    histograms = out["rate_histograms"].copy()
    histograms[0, 0] -= 1.0
    histograms[0, 1] += 1.0
    out["rate_histograms"] = histograms
    return out


def _misshapen(query, out):
    out["rate_histograms"] = out["rate_histograms"][:, :10]
    return out


def _weightless(query, out):
    out["rate_cell_weight"] = np.zeros_like(out["rate_cell_weight"])
    return out


@pytest.mark.parametrize(
    "kind, lie, words",
    [
        ("init", _moved, "away from the baseline's bin"),
        ("apply", _inflated, "do not add up to its cells' weights"),
        ("apply", _negative, "negative weight"),
        ("apply", _misshapen, "histograms of the scores"),
        ("start", _weightless, "weights in the rates"),
    ],
)
def test_a_lie_in_the_constraint_s_answers_is_named(
    data, monkeypatch, kind, lie, words
):
    # Few distinct values: bin edges without a bisection (a faster test).
    X = np.round(data.data, 1)
    federation = FederatedEstimator(
        _trees(constraints="demographic_parity").set_params(max_iter=2),
        random_state=0,
    )
    _lying.seed = int(
        clone(federation)
        .set_params(estimator__constraints=None)
        .fit(X, data.target, clients=data.clients)
        .client_seeds_[2]
    )
    _lying(monkeypatch, kind, lie)
    with pytest.raises(RuntimeError, match=f"Client 2 failed the tree query {kind!r}"):
        federation.fit(
            X,
            data.target,
            clients=data.clients,
            sensitive_features=data.sensitive,
        )
    federation.set_params(on_client_error="skip").fit(
        X, data.target, clients=data.clients, sensitive_features=data.sensitive
    )
    skipped = [r for r in federation.history_ if r.get("stage")]
    assert [r["client"] for r in skipped] == [2]
    assert words in skipped[0]["skipped"]
    assert federation.client_sizes_[2] == 0
