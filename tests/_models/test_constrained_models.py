"""Rate constraints on the logistic model and the network (issue 45).

The same machinery as the trees' (``skfedida._models._constraints``): in
``fit`` (L-BFGS rounds, the network's epochs), in ``partial_fit`` and the
client trainer's entries, and in a federation whose server holds the
constraint. Gaps are measured with fairlearn on the decisions at the
operating point, independently of the code under test.
"""

import copy
import dataclasses
import warnings

import numpy as np
import pytest
from fairlearn.metrics import (
    demographic_parity_difference,
    false_positive_rate_difference,
)
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import log_loss, roc_auc_score
from sklearn.utils._param_validation import InvalidParameterError

from skfedida._groups import encode_groups
from skfedida._models._fair_base import rate_term
from skfedida.datasets import make_federated_classification
from skfedida.exceptions import InactivePenaltyWarning
from skfedida.federated import FederatedEstimator, _constraint_rounds
from skfedida.federated._client import clone_fitted
from skfedida.federated._constraint_rounds import RateHistograms
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.neural_network import FairMLPClassifier


@pytest.fixture(scope="module")
def data():
    return make_federated_classification(
        3000, n_clients=3, n_features=5, random_state=5, group_shift=1.2
    )


def _codes(data):
    return encode_groups(data.sensitive, n_samples=len(data.target)).codes


def _gap(model, data, metric):
    """The gap of the decisions that select the training prevalence."""
    scores = model.decision_function(data.data)
    share = float(np.mean(data.target))
    decisions = (scores > np.quantile(scores, 1 - share)).astype(int)
    return metric(data.target, decisions, sensitive_features=_codes(data))


MODELS = [
    lambda **p: FairPenaltyLogisticRegression(fairness=0, **p),
    lambda **p: FairMLPClassifier(
        fairness=0, hidden_layer_sizes=(8,), max_iter=40, random_state=0, **p
    ),
]


@pytest.mark.parametrize("make", MODELS, ids=["logistic", "network"])
@pytest.mark.parametrize(
    "constraints, metric",
    [
        ("demographic_parity", demographic_parity_difference),
        ("false_positive_rate_parity", false_positive_rate_difference),
    ],
)
def test_fit_under_a_constraint_lowers_the_gap(data, make, constraints, metric):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the network's max_iter
        plain = make().fit(data.data, data.target)
        fair = make(constraints=constraints).fit(
            data.data, data.target, sensitive_features=data.sensitive
        )
    # The group shifts every feature: the default bound on the multipliers
    # closes part of the gap.
    assert _gap(fair, data, metric) < 0.85 * _gap(plain, data, metric)
    assert fair.multipliers_.sum() == pytest.approx(0.2)
    if isinstance(fair, FairMLPClassifier):
        # Epochs of small steps follow a larger bound to a closed gap.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            strong = make(constraints=constraints, multiplier_bound=2.0).fit(
                data.data, data.target, sensitive_features=data.sensitive
            )
        assert _gap(strong, data, metric) < 0.3 * _gap(plain, data, metric)
        assert roc_auc_score(data.target, strong.decision_function(data.data)) > 0.75
    else:
        # L-BFGS rounds circle the optimum: the kept round's gap is within
        # the slack of the smallest any round reached.
        assert fair.rate_gaps_[-1, 0] <= fair.rate_gaps_[1:, 0].min() + 0.01
    assert fair.multipliers_.shape == (1, 4, 4)
    assert fair.multipliers_.sum() > 0
    assert len(fair.groups_) == 4
    decisions = fair.decision_function(data.data) > fair.operating_threshold_
    assert decisions.mean() == pytest.approx(fair.target_rate_, abs=0.01)
    assert metric(
        data.target, decisions.astype(int), sensitive_features=_codes(data)
    ) == pytest.approx(fair.rate_gaps_[-1, 0], abs=0.02)


def test_the_logistic_fit_steps_the_multipliers_between_rounds(data):
    fair = FairPenaltyLogisticRegression(
        fairness=0, constraints="demographic_parity"
    ).fit(data.data, data.target, sensitive_features=data.sensitive)
    # 50 rounds, each stepped on the model of the round before, and the kept.
    assert fair.rate_gaps_.shape == (51, 1)
    assert fair.rate_gaps_[0, 0] == 0.0  # the zero start scores every row alike
    assert fair.n_iter_ <= fair.max_iter


@pytest.mark.parametrize("max_iter", [1, 7])
def test_the_constrained_rounds_keep_to_max_iter(data, max_iter):
    model = FairPenaltyLogisticRegression(
        fairness=0, constraints="demographic_parity", max_iter=max_iter
    )
    with pytest.warns(ConvergenceWarning, match=f"max_iter={max_iter} "):
        model.fit(data.data, data.target, sensitive_features=data.sensitive)
    assert model.n_iter_ == max_iter
    assert model.rate_gaps_.shape == (max_iter + 1, 1)


def test_the_network_s_stopping_rule_watches_the_loss_not_the_lagrangian(data):
    # The multipliers step every epoch, so the Lagrangian of one epoch is
    # not comparable with the next: the curve is the model's own objective.
    model = FairMLPClassifier(
        fairness=0,
        alpha=0,
        hidden_layer_sizes=(8,),
        max_iter=15,
        random_state=0,
        constraints="demographic_parity",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(data.data, data.target, sensitive_features=data.sensitive)
    assert model.multipliers_.any()
    assert model.loss_ == pytest.approx(
        log_loss(data.target, model.predict_proba(data.data)), rel=1e-9
    )


def test_a_satisfied_constraint_ends_the_rounds_early(data):
    loose = FairPenaltyLogisticRegression(
        fairness=0, constraints="demographic_parity", tolerance=1.0
    ).fit(data.data, data.target, sensitive_features=data.sensitive)
    plain = FairPenaltyLogisticRegression(fairness=0).fit(data.data, data.target)
    assert loose.rate_gaps_.shape[0] < 51
    assert not loose.multipliers_.any()
    np.testing.assert_allclose(loose.coef_, plain.coef_, atol=1e-4)


def test_partial_fit_carries_the_multipliers_and_meets_new_groups(data):
    model = FairPenaltyLogisticRegression(
        fairness=0, constraints="demographic_parity", random_state=0
    )
    first = data.sensitive["race"] == data.sensitive["race"][0]
    half = {k: v[first] for k, v in data.sensitive.items()}
    model.partial_fit(
        data.data[first], data.target[first], classes=[0, 1], sensitive_features=half
    )
    assert len(model.groups_) == 2
    for _ in range(4):
        model.partial_fit(data.data, data.target, sensitive_features=data.sensitive)
    assert len(model.groups_) == 4
    assert model.groups_[:2] == tuple(
        encode_groups(half, n_samples=int(first.sum())).labels
    )
    # One step per call, and the rates after the last.
    assert model.rate_gaps_.shape == (6, 1)
    assert model.multipliers_.shape == (1, 4, 4)
    assert model.multipliers_.sum() > 0


def test_set_params_between_partial_fits_starts_the_constraint_anew(data):
    model = FairPenaltyLogisticRegression(
        fairness=0, constraints="demographic_parity", random_state=0
    )
    rows = (data.data, data.target)
    model.partial_fit(*rows, classes=[0, 1], sensitive_features=data.sensitive)
    model.partial_fit(*rows, sensitive_features=data.sensitive)
    assert model.multipliers_.shape == (1, 4, 4)
    # Another rate: its own multipliers, from zero (one step).
    model.set_params(constraints="equalized_odds")
    model.partial_fit(*rows, sensitive_features=data.sensitive)
    assert model.multipliers_.shape == (2, 4, 4)
    assert model.rate_gaps_.shape == (2, 2)
    # No constraint: no multipliers or rates of one no longer asked for.
    model.set_params(constraints=None)
    model.partial_fit(*rows, sensitive_features=data.sensitive)
    for name in ("multipliers_", "rate_gaps_", "constrained_rates_", "groups_"):
        assert not hasattr(model, name), name


def test_a_federated_model_s_partial_fit_continues_the_server_s_multipliers(data):
    federation = _federation(
        FairPenaltyLogisticRegression(fairness=0, constraints="demographic_parity")
    ).fit(
        data.data, data.target, clients=data.clients, sensitive_features=data.sensitive
    )
    served = federation.estimator_.multipliers_.copy()
    assert served.sum() > 0
    continued = clone_fitted(federation.estimator_)
    restarted = clone_fitted(federation.estimator_)
    del restarted.multipliers_
    for model in (continued, restarted):
        model.partial_fit(data.data, data.target, sensitive_features=data.sensitive)
    # One step from the server's multipliers, not from zero.
    assert continued.multipliers_.sum() > restarted.multipliers_.sum()
    assert np.abs(continued.multipliers_ - served).sum() < served.sum()


def test_train_epochs_is_partial_fit_s_epochs_under_a_constraint(data):
    model = FairPenaltyLogisticRegression(
        fairness=0, constraints="false_positive_rate_parity", random_state=0
    )
    with pytest.warns(InactivePenaltyWarning):  # primed, as a client is
        model.partial_fit(
            data.data[:2], data.target[:2], classes=[0, 1], sample_weight=np.zeros(2)
        )
    calls, fused = copy.deepcopy(model), model
    for _ in range(3):
        calls.partial_fit(data.data, data.target, sensitive_features=data.sensitive)
    checked = fused.check_rows(
        data.data, data.target, sensitive_features=data.sensitive
    )
    fused.train_epochs(*checked, epochs=3)
    np.testing.assert_array_equal(calls.coef_, fused.coef_)
    np.testing.assert_array_equal(calls.multipliers_, fused.multipliers_)


def test_a_federation_s_term_replaces_the_own_constraint(data):
    model = FairPenaltyLogisticRegression(
        fairness=0, constraints="demographic_parity", random_state=0
    ).fit(data.data, data.target, sensitive_features=data.sensitive)
    multipliers = model.multipliers_.copy()
    groups = encode_groups(data.sensitive, n_samples=len(data.target))
    term = {
        "threshold": 0.0,
        "temperature": 1.0,
        "coefficient": np.zeros(2 * groups.n_groups),
        "groups": groups.labels,
    }
    before = model.coef_.copy()
    with rate_term(model, term):
        model.partial_fit(data.data, data.target, sensitive_features=data.sensitive)
    # Trained (with a term of zeros: the log-loss's steps), nothing stepped.
    assert not np.array_equal(before, model.coef_)
    np.testing.assert_array_equal(model.multipliers_, multipliers)
    assert "_rate_term_external" not in model.__dict__


def test_what_a_constraint_cannot_do_is_refused_or_said(data):
    y3 = data.target + (data.clients == 2)
    model = FairPenaltyLogisticRegression(constraints="demographic_parity")
    with pytest.raises(ValueError, match="constraints='demographic_parity' needs"):
        model.fit(data.data, y3, sensitive_features=data.sensitive)
    with pytest.raises(ValueError, match="needs a binary outcome"):
        clone(model).partial_fit(
            data.data, y3, classes=[0, 1, 2], sensitive_features=data.sensitive
        )
    # Without groups it cannot act: the plain model, any classes, a warning.
    with pytest.warns(InactivePenaltyWarning, match="constraints='demographic"):
        alone = clone(model).fit(data.data, y3)
    assert not hasattr(alone, "multipliers_")
    with pytest.raises(InvalidParameterError, match="'tolerance'"):
        clone(model).set_params(tolerance=2).fit(data.data, data.target)
    with pytest.raises(InvalidParameterError, match="'selection_rate'"):
        FairMLPClassifier(constraints="equalized_odds", selection_rate=1.0).fit(
            data.data, data.target
        )


# -- in a federation ----------------------------------------------------------


def _federation(estimator, **params):
    return FederatedEstimator(
        estimator, n_rounds=6, local_epochs=2, random_state=0, **params
    )


@pytest.mark.parametrize("strategy", ["fedavg", "pfedavg"])
def test_the_server_s_constraint_lowers_the_federation_s_gap(data, strategy):
    def fit(**params):
        return _federation(
            FairPenaltyLogisticRegression(fairness=0, **params), strategy=strategy
        ).fit(
            data.data,
            data.target,
            clients=data.clients,
            sensitive_features=data.sensitive,
        )

    plain, fair = fit(), fit(constraints="demographic_parity")
    metric = demographic_parity_difference
    assert _gap(fair, data, metric) < 0.7 * _gap(plain, data, metric)
    model = fair.estimator_
    assert model.constraints == "demographic_parity"
    # One step per round, and the fitted model's rates.
    assert model.rate_gaps_.shape == (7, 1)
    assert model.multipliers_.sum() > 0
    assert len(model.groups_) == 4


def test_a_warm_start_continues_the_server_s_multipliers(data):
    estimator = FairMLPClassifier(
        fairness=0, hidden_layer_sizes=(6,), constraints="demographic_parity"
    )
    whole = _federation(estimator).fit(
        data.data, data.target, clients=data.clients, sensitive_features=data.sensitive
    )
    warm = _federation(estimator, warm_start=True).set_params(n_rounds=3)
    for _ in range(2):
        warm.fit(
            data.data,
            data.target,
            clients=data.clients,
            sensitive_features=data.sensitive,
        )
    np.testing.assert_array_equal(
        warm.predict_proba(data.data), whole.predict_proba(data.data)
    )
    np.testing.assert_array_equal(
        warm.estimator_.multipliers_, whole.estimator_.multipliers_
    )
    # The continued clients step no multipliers of their own either.
    assert all(m.constraints is None for m in warm._federation_state["models"])


def test_a_federation_refuses_or_says_what_its_constraint_cannot_do(data):
    federation = _federation(
        FairPenaltyLogisticRegression(fairness=0, constraints="demographic_parity")
    )
    # Checked before any client counts: as the estimator alone says it.
    with pytest.raises(InvalidParameterError, match="'constraints' parameter"):
        clone(federation).set_params(estimator__constraints="parity").fit(
            data.data, data.target, clients=data.clients
        )
    y3 = data.target + (data.clients == 2)
    with pytest.raises(ValueError, match="needs a binary outcome; y has 3"):
        clone(federation).fit(
            data.data, y3, clients=data.clients, sensitive_features=data.sensitive
        )
    one_group = {"g": np.zeros(len(data.target))}
    for sensitive, reason in [
        (None, "no sensitive"),
        (one_group, "the sensitive attributes take a single"),
    ]:
        with pytest.warns(
            InactivePenaltyWarning,
            match=f"'demographic_parity' has no effect: {reason}",
        ):
            fitted = (
                clone(federation)
                .set_params(n_rounds=1)
                .fit(
                    data.data,
                    data.target,
                    clients=data.clients,
                    sensitive_features=sensitive,
                )
            )
        assert not hasattr(fitted.estimator_, "multipliers_")


def test_central_and_local_fits_run_their_own_constraint(data):
    estimator = FairPenaltyLogisticRegression(
        fairness=0, constraints="demographic_parity"
    )
    central = _federation(estimator, strategy="central").fit(
        data.data, data.target, clients=data.clients, sensitive_features=data.sensitive
    )
    assert central.estimator_.multipliers_.sum() > 0
    local = _federation(estimator, strategy="local").fit(
        data.data, data.target, clients=data.clients, sensitive_features=data.sensitive
    )
    # Each client's own; the mean of their models has none of its own.
    assert all(m.multipliers_.sum() > 0 for m in local.client_estimators_.values())
    assert not hasattr(local.estimator_, "multipliers_")


def test_a_client_lying_in_its_counts_is_named_or_left_out(data, monkeypatch):
    original = _constraint_rounds.client_rate_histograms

    def lying(estimator, parameters, client, classes, n_bins):
        histograms = original(estimator, parameters, client, classes, n_bins)
        if np.array_equal(client.X[0], lying.first_row):
            # Client 1: its positives counted as negatives.
            counts = histograms.counts.copy()
            counts[:, 0] += counts[:, 1]
            counts[:, 1] = 0
            histograms = dataclasses.replace(histograms, counts=counts)
        return histograms

    estimator = FairPenaltyLogisticRegression(
        fairness=0, constraints="demographic_parity"
    )
    federation = _federation(estimator)
    lying.first_row = data.data[data.clients == 1][0]
    monkeypatch.setattr(_constraint_rounds, "client_rate_histograms", lying)
    with pytest.raises(RuntimeError, match=r"Client 1 failed in round 1 \(rate histo"):
        federation.fit(
            data.data,
            data.target,
            clients=data.clients,
            sensitive_features=data.sensitive,
        )
    federation.set_params(on_client_error="skip").fit(
        data.data, data.target, clients=data.clients, sensitive_features=data.sensitive
    )
    skipped = [r for r in federation.history_ if "rate_histograms_skipped" in r]
    # Every round's count without client 1 (the fitted model's measure is
    # the last round's record too): its counts per label contradict the
    # class counts it gave at initialisation.
    assert {r["client"] for r in skipped} == {1}
    assert len(skipped) == 6
    assert (
        "it counts [1000, 0] rows per label in its training rows"
        in (skipped[0]["rate_histograms_skipped"])
    )
    # It still trains: its updates are not what failed.
    assert all(
        r.get("train_loss") is not None
        for r in federation.history_
        if r["client"] == 1 and "round" in r and r["round"] >= 1
    )


def test_a_term_reaches_each_row_by_its_group_s_label(data):
    # The same term, its groups listed in another order: the same steps.
    model = FairPenaltyLogisticRegression(fairness=0, random_state=0)
    model.partial_fit(
        data.data[:2], data.target[:2], classes=[0, 1], sample_weight=np.zeros(2)
    )
    groups = encode_groups(data.sensitive, n_samples=len(data.target))
    coefficient = np.array([2.0, -1.0, 0.5, -3.0, 1.0, 0.0, -2.0, 4.0])
    order = [3, 1, 0, 2]
    term = {"threshold": -1.0, "temperature": 0.5, "coefficient": coefficient}
    listed = {**term, "groups": groups.labels}
    reordered = {
        **term,
        "groups": tuple(groups.labels[g] for g in order),
        "coefficient": coefficient.reshape(4, 2)[order].ravel(),
    }
    fitted = []
    for given in (listed, reordered):
        copy_ = copy.deepcopy(model)
        with rate_term(copy_, given):
            copy_.partial_fit(data.data, data.target, sensitive_features=data.sensitive)
        fitted.append(copy_.coef_)
    np.testing.assert_array_equal(*fitted)
    plain = copy.deepcopy(model).partial_fit(
        data.data, data.target, sensitive_features=data.sensitive
    )
    assert not np.allclose(plain.coef_, fitted[0])


def test_the_server_sums_the_clients_counts_by_group_label():
    from skfedida.federated._constraint_rounds import FederatedConstraint

    estimator = FairPenaltyLogisticRegression(constraints="demographic_parity")
    labels = [("a",), ("b",), ("c",)]
    server = FederatedConstraint(estimator, labels, n_bins=4)
    one = np.arange(3 * 2 * 4, dtype=float).reshape(3, 2, 4)
    # A client without group "a", listing its groups in another order.
    other = np.ones((2, 2, 4))
    other[1] *= 10.0
    total = server.summed(
        [
            RateHistograms(one, None, labels, ["s"]),
            RateHistograms(other, None, [("c",), ("b",)], ["s"]),
        ]
    )
    expected = one.copy()
    expected[2] += other[0]
    expected[1] += other[1]
    np.testing.assert_array_equal(total, expected.reshape(6, 4))
    # Weighted counts are summed where a client has them.
    weights = 0.5 * one
    total = server.summed([RateHistograms(one, weights, labels, ["s"])])
    np.testing.assert_array_equal(total, weights.reshape(6, 4))


def test_the_fitted_rates_are_the_federation_s_with_a_client_lacking_a_group(data):
    S = {k: np.asarray(v) for k, v in data.sensitive.items()}
    first = np.all([S[k] == S[k][0] for k in S], axis=0)
    keep = ~((data.clients == 0) & first)  # client 0 lacks the first group
    X, y, clients = data.data[keep], data.target[keep], data.clients[keep]
    S = {k: v[keep] for k, v in S.items()}
    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=0, constraints="demographic_parity"),
        n_rounds=3,
        random_state=0,
    ).fit(X, y, clients=clients, sensitive_features=S)
    model = federation.estimator_
    # The rates at the operating point, from the pooled rows directly.
    decisions = model.decision_function(X) >= model.operating_threshold_
    codes = encode_groups(S, n_samples=len(y)).codes
    rates = [decisions[codes == g].mean() for g in range(4)]
    np.testing.assert_allclose(model.constrained_rates_[0], rates, atol=0.02)


def test_counts_of_a_group_no_client_declared_are_named():
    from skfedida._gate._ledger import ClientLedger
    from skfedida.federated._constraint_rounds import FederatedConstraint

    estimator = FairPenaltyLogisticRegression(constraints="demographic_parity")
    server = FederatedConstraint(estimator, [("a",), ("b",)], n_bins=4)
    ledger = ClientLedger()
    ledger.declare_groups(0, "train", {("a",): 2, ("b",): 2})
    counts = np.zeros((1, 2, 4))
    counts[0, 0, 0] = 4
    problem = server.problem(
        RateHistograms(counts, None, [("z",)], ["s"]), ledger, 0, 4
    )
    assert problem == "it counts rows of groups [['z']] it did not declare"
