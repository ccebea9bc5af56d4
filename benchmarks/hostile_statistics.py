"""What one client that lies consistently moves, and the robust options.

Run: ``python benchmarks/hostile_statistics.py``

Issue 46: lies that no check can see, because they are consistent with
everything the client said. Three clients of 900, 1000 and 1100 rows of
``make_federated_classification`` (5 features, seed 0); one row in five is
held out for testing. Client 2 (the largest) lies:

- **scaler**: its answers to ``FederatedStandardScaler`` are those of its
  rows plus 50 (sums, extremes, deviations and squares consistent, within
  the gate's range rule); the model is a pipeline of the scaler and a
  federated logistic model (5 rounds). Printed: the test AUROC and the
  largest feature scale, with ``aggregation="mean"`` (pooled) and
  ``"median"``.
- **early stopping**: its validation log-loss, in the trees' answers, 20%
  higher every tree (``FairHistGradientBoostingClassifier``, 60 trees at
  most, ``n_iter_no_change=5``). Printed: the trees grown and the test
  AUROC, with ``early_stopping_aggregation="mean"`` and ``"median"``.

The fits are deterministic: one run is the figure.
"""

import warnings

import numpy as np
from _timing import header
from sklearn.metrics import roc_auc_score
from sklearn.pipeline import make_pipeline

from skfedida.datasets import make_federated_classification
from skfedida.ensemble import FairHistGradientBoostingClassifier
from skfedida.federated import FederatedEstimator
from skfedida.federated._tree_client import TreeFederationClient
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.preprocessing import FederatedStandardScaler

SIZES = (900, 1000, 1100)


def _data():
    data = make_federated_classification(
        sum(SIZES), n_clients=3, n_features=5, random_state=0
    )
    clients = np.repeat(np.arange(3), SIZES)
    test = np.arange(len(clients)) % 5 == 0
    return data.data, data.target, clients, test


def _liar_rows(clients, test):
    return int(np.sum((clients == 2) & ~test))


def _scaler_rows(X, y, clients, test, lie):
    real = FederatedStandardScaler._answer
    liar = _liar_rows(clients, test)

    def answer(self, X_client, query):
        if lie and X_client.shape[0] == liar:
            X_client = X_client + 50.0
        return real(self, X_client, query)

    FederatedStandardScaler._answer = answer
    try:
        for aggregation in ("mean", "median"):
            federation = FederatedEstimator(
                make_pipeline(
                    FederatedStandardScaler(aggregation=aggregation),
                    FairPenaltyLogisticRegression(fairness=0.0),
                ),
                n_rounds=5,
                random_state=0,
            ).fit(X[~test], y[~test], clients=clients[~test])
            auc = roc_auc_score(y[test], federation.predict_proba(X[test])[:, 1])
            scale = float(federation.estimator_[0].scale_.max())
            yield aggregation, auc, f"largest scale {scale:.2f}"
    finally:
        FederatedStandardScaler._answer = real


def _stopping_rows(X, y, clients, test, lie):
    real = TreeFederationClient.answer
    liar = _liar_rows(clients, test)

    def answer(self, query):
        out = real(self, query)
        if (
            lie
            and query["kind"] in ("init", "apply")
            and len(self.y) == liar
            and len(out.get("val_loss", []))
        ):
            self.lies = getattr(self, "lies", 0) + 1
            loss = np.array(out["val_loss"], dtype=float)
            loss[0] *= 1 + 0.2 * self.lies
            out = {**out, "val_loss": loss}
        return out

    TreeFederationClient.answer = answer
    try:
        for aggregation in ("mean", "median"):
            trees = FairHistGradientBoostingClassifier(
                max_iter=60,
                early_stopping=True,
                n_iter_no_change=5,
                validation_fraction=0.2,
                random_state=0,
            )
            federation = FederatedEstimator(
                trees, random_state=0, early_stopping_aggregation=aggregation
            ).fit(X[~test], y[~test], clients=clients[~test])
            auc = roc_auc_score(y[test], federation.predict_proba(X[test])[:, 1])
            yield aggregation, auc, f"{federation.estimator_.n_iter_} trees"
    finally:
        TreeFederationClient.answer = real


def main():
    X, y, clients, test = _data()
    # No times here: the header says on what machine the one run ran.
    print(header(1) + "\n")
    print("| lie | aggregation | honest AUROC | lied AUROC | honest | lied |")
    print("|---|---|---:|---:|---|---|")
    for name, rows in (
        ("scaler +50", _scaler_rows),
        ("validation loss rising", _stopping_rows),
    ):
        honest = list(rows(X, y, clients, test, lie=False))
        lied = list(rows(X, y, clients, test, lie=True))
        for (aggregation, auc, what), (_, lied_auc, lied_what) in zip(
            honest, lied, strict=True
        ):
            print(
                f"| {name} | {aggregation} | {auc:.4f} | {lied_auc:.4f} | "
                f"{what} | {lied_what} |"
            )


if __name__ == "__main__":
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        main()
