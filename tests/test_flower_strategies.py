"""Flower's own server strategies as ``FederatedEstimator(aggregation=...)``.

The oracle for the arithmetic of the stateful ones (FedAdam, FedYogi,
FedAvgM) is Flower's own ``start()`` in a user's ServerApp
(``tests/flower/test_plain_flower_server.py``); the Flower backend's last-bit
parity is in ``tests/test_flower.py``. Here: the strategies equal to our
aggregators give the same bits, a fit is reproducible and leaves the user's
strategy and Python's global ``random`` untouched, warm starts carry the
strategy's state, and what cannot run is refused naming the way out.
"""

import copy
import io
import logging
import random

import joblib
import numpy as np
import pytest
from _helpers import assert_same_parameters
from sklearn.base import clone

pytest.importorskip("flwr")

from flwr.serverapp.strategy import (
    DifferentialPrivacyServerSideFixedClipping,
    FedAdam,
    FedAvg,
    FedMedian,
    FedProx,
    FedTrimmedAvg,
    FedXgbBagging,
)

from skfedida.datasets import make_federated_classification
from skfedida.federated import (
    DifferentialPrivacy,
    FederatedEstimator,
    Median,
    TrimmedMean,
)
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.neural_network import FairMLPClassifier
from skfedida.over_sampling import FairnessAwareROSE


@pytest.fixture(scope="module")
def data():
    return make_federated_classification(
        900, n_clients=3, client_sizes=[1.0, 1.5, 2.0], random_state=1
    )


def _fit(data, aggregation, **options):
    options = {"n_rounds": 3, "random_state": 0, **options}
    return FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0),
        sampler=FairnessAwareROSE(),
        aggregation=aggregation,
        **options,
    ).fit(
        data.data, data.target, clients=data.clients, sensitive_features=data.sensitive
    )


@pytest.mark.parametrize(
    "strategy, ours",
    [
        (FedAvg(), "mean"),
        (FedMedian(), Median()),
        (FedTrimmedAvg(beta=0.34), TrimmedMean(beta=0.34)),
        (FedProx(proximal_mu=0.0), "mean"),
    ],
    ids=["fedavg", "fedmedian", "fedtrimmedavg", "fedprox-mu0"],
)
def test_flowers_strategy_gives_the_bits_of_our_aggregator_of_its_arithmetic(
    data, strategy, ours
):
    assert_same_parameters(
        _fit(data, strategy, client_fraction=0.67).estimator_,
        _fit(data, ours, client_fraction=0.67).estimator_,
    )


def test_a_fit_is_reproducible_and_leaves_the_users_state_alone(data):
    strategy = FedAdam(eta=0.05)
    random.seed(5)
    expected_next = random.random()
    random.seed(5)
    first = _fit(data, strategy)
    # configure_train samples nodes with Python's global random: restored.
    assert random.random() == expected_next
    second = _fit(data, strategy)
    assert_same_parameters(first.estimator_, second.estimator_)
    # The user's strategy never ran: each fit works on its own copy.
    assert strategy.current_arrays is None and strategy.m_t is None
    assert clone(first).aggregation is not strategy


def test_flowers_round_logs_stay_out_of_an_in_process_fit(data):
    records = []
    handler = logging.Handler(level=logging.DEBUG)
    handler.emit = records.append
    logger = logging.getLogger("flwr")
    level = logger.level
    logger.addHandler(handler)
    try:
        _fit(data, FedAdam(eta=0.05))
    finally:
        logger.removeHandler(handler)
    assert [r.getMessage() for r in records if r.levelno >= logging.INFO] == []
    assert logger.level == level


def test_a_warm_start_carries_the_strategys_moments_on(data):
    whole = _fit(data, FedAdam(eta=0.05), n_rounds=4)
    resumed = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0),
        sampler=FairnessAwareROSE(),
        aggregation=FedAdam(eta=0.05),
        n_rounds=2,
        random_state=0,
        warm_start=True,
    )
    for _ in range(2):
        resumed.fit(
            data.data,
            data.target,
            clients=data.clients,
            sensitive_features=data.sensitive,
        )
    assert_same_parameters(resumed.estimator_, whole.estimator_)


def test_a_warm_start_with_another_strategy_starts_it_afresh(data):
    # set_params applies to the continued fit (sklearn's warm_start): a
    # changed strategy runs from the current global model, its state new.
    def resumed(second):
        fed = FederatedEstimator(
            FairPenaltyLogisticRegression(fairness=1.0),
            sampler=FairnessAwareROSE(),
            aggregation=FedAdam(eta=0.05),
            n_rounds=2,
            random_state=0,
            warm_start=True,
        )
        fed.fit(
            data.data,
            data.target,
            clients=data.clients,
            sensitive_features=data.sensitive,
        )
        fed.set_params(aggregation=second)
        return fed.fit(
            data.data,
            data.target,
            clients=data.clients,
            sensitive_features=data.sensitive,
        )

    same = resumed(FedAdam(eta=0.05))
    faster = resumed(FedAdam(eta=0.5))
    assert not np.allclose(same.estimator_.coef_, faster.estimator_.coef_)
    stored = faster._federation_state["aggregator_memory"]["flower_strategy"][1]
    assert stored.eta == 0.5


class _NodesSeen(FedAvg):
    """FedAvg that records which nodes replied in each round."""

    seen = []

    def aggregate_train(self, server_round, replies):
        replies = list(replies)
        type(self).seen.append([r.metadata.src_node_id for r in replies])
        return super().aggregate_train(server_round, replies)


def test_a_client_replies_from_the_same_node_every_round(data):
    _NodesSeen.seen = []
    fitted = _fit(data, _NodesSeen(), client_fraction=0.67, n_rounds=4)
    trained = {}
    for record in fitted.history_:
        trained.setdefault(record["round"], []).append(record["client"])
    partitions = {c: k for k, c in enumerate(fitted.clients_)}
    assert _NodesSeen.seen == [
        [partitions[c] + 1 for c in sorted(trained[r])] for r in sorted(trained)
    ]


def test_a_federation_with_a_flower_strategy_pickles(data):
    fitted = _fit(data, FedAdam(eta=0.05))
    buffer = io.BytesIO()
    joblib.dump(fitted, buffer)
    buffer.seek(0)
    loaded = joblib.load(buffer)
    np.testing.assert_array_equal(
        loaded.predict_proba(data.data), fitted.predict_proba(data.data)
    )


@pytest.mark.parametrize(
    "strategy, named",
    [
        (FedProx(proximal_mu=-0.1), "proximal_mu=-0.1"),
        (
            DifferentialPrivacyServerSideFixedClipping(
                FedAvg(), noise_multiplier=1.0, clipping_norm=1.0, num_sampled_clients=3
            ),
            "dp=DifferentialPrivacy",
        ),
        (FedXgbBagging(), "XGBoost"),
        # The federation selects the clients (client_fraction, seeded);
        # 1.5 made Flower's sampler wait for nodes forever.
        (FedAvg(fraction_train=1.5), "client_fraction"),
        (FedAvg(fraction_train=0.5), "client_fraction"),
        (FedAdam, r"the strategy's class; pass a strategy object, e.g. FedAdam\(\)"),
    ],
    ids=[
        "fedprox-negative",
        "flowers-dp-wrapper",
        "xgboost",
        "fraction-above-1",
        "fraction-below-1",
        "a-class",
    ],
)
def test_a_strategy_that_cannot_run_as_aggregation_is_refused_naming_why(
    data, strategy, named
):
    with pytest.raises(ValueError, match=named):
        _fit(data, strategy)


def test_dp_with_a_flower_strategy_is_refused_naming_the_strategy(data):
    with pytest.raises(ValueError, match=r"aggregation='mean'.*FedAdam"):
        _fit(
            data,
            FedAdam(),
            dp=DifferentialPrivacy(noise_multiplier=0.5, clipping_norm=1.0),
        )


def test_anything_else_as_aggregation_names_the_flower_strategies(data):
    with pytest.raises(ValueError, match="aggregation"):
        _fit(data, object())


# -- FedProx: the clients' proximal term -------------------------------------


@pytest.mark.parametrize(
    "estimator",
    [
        FairPenaltyLogisticRegression(fairness=1.0, alpha=0.01),
        FairMLPClassifier(hidden_layer_sizes=(4,), fairness=0.5, alpha=0.01),
    ],
    ids=["logistic", "mlp"],
)
def test_the_proximal_term_is_in_the_objective_and_its_gradient(data, estimator):
    from scipy.optimize import approx_fprime

    from skfedida._models._fair_base import Batch, proximal_term

    model = clone(estimator).set_params(random_state=0)
    model.fit(data.data, data.target, sensitive_features=data.sensitive)
    X, y, groups = model.check_rows(
        data.data, data.target, sensitive_features=data.sensitive
    )
    batch = Batch(X, y, groups.codes, groups.n_groups, np.ones(len(y)))
    params = [np.array(w) for w in model._get_params_list()]
    shapes = [w.shape for w in params]
    rng = np.random.default_rng(0)
    moved = [w + rng.normal(scale=0.3, size=w.shape) for w in params]
    plain, _ = model._objective(moved, batch)
    mu = 0.7
    with proximal_term(model, mu):
        value, gradients = model._objective(moved, batch)

        def flat_value(flat):
            arrays, start = [], 0
            for shape in shapes:
                size = int(np.prod(shape))
                arrays.append(flat[start : start + size].reshape(shape))
                start += size
            return model._objective(arrays, batch, with_gradient=False)[0]

        flat = np.concatenate([w.ravel() for w in moved])
        numeric = approx_fprime(flat, flat_value, 1e-7)
    distance = sum(
        float(np.sum((m - w) ** 2)) for m, w in zip(moved, params, strict=True)
    )
    assert value == pytest.approx(plain + 0.5 * mu * distance, rel=1e-12)
    analytic = np.concatenate([g.ravel() for g in gradients])
    np.testing.assert_allclose(analytic, numeric, rtol=1e-4, atol=1e-6)
    # Out of the block the estimator is as before: no term, compiled loops.
    assert "_proximal" not in vars(model)
    assert model._objective(moved, batch)[0] == plain


def test_fedprox_keeps_the_clients_near_the_round_start(data):
    fedavg = _fit(data, FedAvg(), local_epochs=3)
    norms = {}
    for mu in (0.0, 1.0, 30.0):
        fitted = _fit(data, FedProx(proximal_mu=mu), local_epochs=3)
        norms[mu] = np.mean([r["update_norm"] for r in fitted.history_])
        assert "_proximal" not in vars(fitted.estimator_)
    assert norms[0.0] == pytest.approx(
        np.mean([r["update_norm"] for r in fedavg.history_]), rel=1e-12
    )
    # Stronger pull, shorter updates: at mu = 30 a tenth of FedAvg's.
    assert norms[30.0] < norms[1.0] < norms[0.0]
    assert norms[30.0] < 0.1 * norms[0.0]


def test_fedprox_is_refused_where_its_term_cannot_be_added(data):
    with pytest.raises(ValueError, match="strategy='pfedavg' has none"):
        _fit(data, FedProx(proximal_mu=0.5), strategy="pfedavg")
    from sklearn.linear_model import SGDClassifier

    with pytest.raises(TypeError, match="SGDClassifier trains with its own"):
        FederatedEstimator(
            SGDClassifier(loss="log_loss"), aggregation=FedProx(proximal_mu=0.5)
        ).fit(data.data, data.target, clients=data.clients)


@pytest.mark.parametrize(
    "estimator, module, loop, n_classes",
    [
        (
            FairPenaltyLogisticRegression(fairness=1.0),
            "_logistic",
            "linear_sgd_steps",
            2,
        ),
        (
            FairPenaltyLogisticRegression(fairness=1.0, fit_intercept=False),
            "_logistic",
            "linear_sgd_steps",
            2,
        ),
        (
            FairPenaltyLogisticRegression(fairness=1.0),
            "_logistic",
            "multinomial_sgd_steps",
            3,
        ),
        (
            FairMLPClassifier(hidden_layer_sizes=(5,), fairness=0.5, alpha=0.01),
            "_mlp",
            "mlp_sgd_steps",
            2,
        ),
    ],
    ids=["logistic", "logistic-no-intercept", "multinomial", "mlp"],
)
# mu = 60 makes the step (0.1) overshoot the term's curvature: the search
# halves it, judged on trial values of the term, intercepts included.
@pytest.mark.parametrize("mu", [3.0, 60.0])
def test_the_compiled_loops_take_the_proximal_steps_of_the_reference(
    monkeypatch, estimator, module, loop, n_classes, mu
):
    import importlib

    from skfedida._models._fair_base import proximal_term

    models = importlib.import_module(f"skfedida._models.{module}")
    data = make_federated_classification(
        800, n_clients=1, n_classes=n_classes, random_state=4
    )
    start = clone(estimator).set_params(random_state=0, batch_size=40)
    start.fit(data.data, data.target, sensitive_features=data.sensitive)
    fitted = {}
    for compiled in (False, True):
        model = copy.deepcopy(start)
        calls = []
        real = getattr(models, loop)
        monkeypatch.setattr(
            models,
            loop,
            (lambda *args, calls=calls, real=real: calls.append(1) or real(*args))
            if compiled
            else None,
        )
        # A pull strong enough to move the steps, from a start the
        # parameters are moved away from.
        with proximal_term(model, mu):
            coef, *rest = model._get_params_list()
            # Far from the anchor in the intercepts (whose term then leads
            # the step search), near it in the weights.
            coef += 0.02
            for w in rest:
                w += 1.0
            for _ in range(2):
                model.partial_fit(
                    data.data, data.target, sensitive_features=data.sensitive
                )
        monkeypatch.undo()
        assert bool(calls) == compiled
        fitted[compiled] = [np.copy(w) for w in model._get_params_list()]
    for reference, compiled in zip(fitted[False], fitted[True], strict=True):
        np.testing.assert_allclose(compiled, reference, rtol=1e-10, atol=1e-12)
