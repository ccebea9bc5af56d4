"""
Fair decisions from the trees: rate constraints at the operating point
======================================================================

The group penalty compares the groups' mean logits; boosted trees meet it by
moving rows far from any threshold, and who is selected barely changes. A
*rate constraint* acts on the decisions themselves: at the operating point
(the threshold that selects the training prevalence), the groups' selection
rates (``constraints="demographic_parity"``) should differ by at most
``tolerance``. The sensitive attributes shape only the training; the model
never takes them.

Here the trees are trained across the 5 Adult clients along ``tolerance``,
beside the penalised trees along ``fairness``, the logistic model under the
same constraint, and group thresholds on the unconstrained trees (which do
need the attributes at decision time). Every model is scored on the test
rows at exactly the training prevalence's selection rate, so that a lower
DPD means the selected people are spread more evenly over the groups, not
that fewer are selected. The logistic model's points are the mean over two
seeds, the error bars their spread (the trees' fits do not depend on the
seed here: one each).
"""

import numpy as np
import pandas as pd
from sklearn.compose import make_column_transformer
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from skfedida.datasets import load_adult
from skfedida.ensemble import FairHistGradientBoostingClassifier
from skfedida.federated import FederatedEstimator
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.plotting import TradeoffDisplay
from skfedida.postprocessing import FederatedThresholdOptimizer

train, test = load_adult("train", raw=True), load_adult("test", raw=True)


def as_categories(X, reference=None):
    """String columns as pandas categories (the training table's, for test)."""
    X = X.copy()
    for column in X.columns:
        if not pd.api.types.is_numeric_dtype(X[column]):
            categories = None if reference is None else reference[column].cat.categories
            X[column] = pd.Categorical(X[column], categories=categories)
    return X


def binary_race(S):
    """Race as White / non-White, with gender: 4 intersectional groups."""
    S = S.copy()
    S["race"] = np.where(S["race"] == "White", "White", "non-White")
    return S


X_train = as_categories(train.data)
X_test = as_categories(test.data, X_train)
y_train, S_train = train.target.to_numpy(), binary_race(train.sensitive)
y_test, S_test = test.target.to_numpy(), binary_race(test.sensitive)
clients_train, clients_test = train.clients.to_numpy(), test.clients.to_numpy()
SEEDS = (0, 1)


def federated(estimator, seed, X=X_train, **params):
    """The estimator trained across the 5 clients (no row pooled)."""
    return FederatedEstimator(estimator, random_state=seed, **params).fit(
        X, y_train, clients=clients_train, sensitive_features=S_train
    )


def trees(**params):
    return FairHistGradientBoostingClassifier(
        max_iter=20, early_stopping=False, **params
    )


# %%
# The constrained trees along ``tolerance`` (0: equal selection rates,
# within the multipliers' bound), and the penalised trees along ``fairness``.
constrained = {
    tolerance: federated(
        trees(constraints="demographic_parity", tolerance=tolerance), 0
    )
    for tolerance in (0.0, 0.1, 0.2)
}
penalised = {
    fairness: federated(trees(fairness=fairness), 0) for fairness in (0.0, 10.0, 1000.0)
}

# %%
# The logistic model under the same constraint (one-hot, scaled inputs;
# FedAvg), and group thresholds on the unconstrained trees, along the
# thresholds' own tolerance (their selection rate is theirs to choose: the
# most accurate under the tolerance, near the prevalence here).
encoder = make_column_transformer(
    (
        OneHotEncoder(handle_unknown="ignore", sparse_output=False),
        list(X_train.select_dtypes("category").columns),
    ),
    remainder=StandardScaler(),
).fit(X_train)
logistic = {
    tolerance: [
        federated(
            FairPenaltyLogisticRegression(
                fairness=0, constraints="demographic_parity", tolerance=tolerance
            ),
            s,
            X=encoder.transform(X_train),
            n_rounds=5,
            local_epochs=2,
        )
        for s in SEEDS
    ]
    for tolerance in (0.0, 0.1, 0.2)
}
thresholds = {
    tolerance: FederatedThresholdOptimizer(
        penalised[0.0],
        constraints="demographic_parity",
        tolerance=tolerance,
        prefit=True,
        random_state=0,
    ).fit(X_train, y_train, clients=clients_train, sensitive_features=S_train)
    for tolerance in (0.0, 0.1, 0.2)
}

# %%
# One figure: accuracy against DPD at the matched rate. The logistic model
# reads the one-hot rows, so its curve is scored on them.
scored = {"clients": clients_test, "sensitive_features": S_test}
prevalence = float(np.mean(y_train))
display = TradeoffDisplay.from_estimators(
    {
        "trees, constraint (tolerance)": constrained,
        "trees, penalty (fairness)": penalised,
        "trees + group thresholds (tolerance)": thresholds,
    },
    X_test,
    y_test,
    prevalence=prevalence,
    parameter_name="tolerance / fairness",
    **scored,
)
linear = TradeoffDisplay.from_estimators(
    {"logistic, constraint (tolerance)": logistic},
    encoder.transform(X_test),
    y_test,
    prevalence=prevalence,
    ax=display.ax_,
    parameter_name="tolerance / fairness",
    **scored,
)
display.ax_.legend(frameon=False, fontsize=7)

for name, curve in {**display.curves, **linear.curves}.items():
    values, accuracy, dpd = curve[:3]
    points = ", ".join(
        f"{v:g}: {a:.3f} / {d:.3f}"
        for v, a, d in zip(values, accuracy, dpd, strict=True)
    )
    print(f"{name} (accuracy / DPD): {points}")
