"""
Federating scikit-learn's own SGDClassifier
===========================================

FedIDA's framework-agnostic claim, made concrete: any estimator with
``partial_fit`` whose parameters live in ``coef_``/``intercept_`` (or
``coefs_``/``intercepts_``) can be federated. Here sklearn's
``SGDClassifier(loss="log_loss")`` is trained with FedAvg on the 5 Adult
clients, with and without FairnessAwareROSE on every minibatch, and evaluated
per client.
"""

import warnings

from sklearn.linear_model import SGDClassifier

from skfedida.datasets import load_adult
from skfedida.federated import FederatedEstimator, evaluate_clients
from skfedida.over_sampling import FairnessAwareROSE

train, test = load_adult("train"), load_adult("test")
for name, sampler in [("FedAvg", None), ("FedAvg + ROSE", FairnessAwareROSE())]:
    federation = FederatedEstimator(
        SGDClassifier(loss="log_loss", alpha=1e-4, random_state=0),
        n_rounds=5,
        local_epochs=2,
        sampler=sampler,
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        federation.fit(
            train.data,
            train.target,
            clients=train.clients,
            sensitive_features=train.sensitive,
        )
    report = evaluate_clients(
        federation,
        test.data,
        test.target,
        clients=test.clients,
        sensitive_features=test.sensitive,
        metrics=("roc_auc", "soft_dpd", "soft_dfpr"),
        n_bootstrap=0,
    )
    print(f"\n{name}")
    print(report.summary.round(3).to_string())
