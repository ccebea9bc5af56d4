"""
Boosted trees with FedIDA's group penalty, federated
====================================================

On tabular data the usual first model is gradient-boosted trees.
:class:`~skfedida.ensemble.FairHistGradientBoostingClassifier` is
scikit-learn's ``HistGradientBoostingClassifier`` fitted to the mean
log-loss plus ``fairness`` times the group penalty on its logits: the
objective of FedIDA's linear model. Here it is trained on the raw Adult
table (string columns as categories, race and gender never inputs) next to
scikit-learn's own trees, and both are compared on the 5 clients' test rows
at a *matched selection rate* (the decisions that select exactly the
training prevalence), with the Brier score and the training rows' penalty.

Then the same trees are trained across the 5 clients with
:class:`~skfedida.federated.FederatedEstimator`: no client sends a row; the
server sums the clients' histograms of every tree node and finds
scikit-learn's splits (without the penalty, scikit-learn's trees on the
pooled rows, bit for bit).
"""

import pandas as pd
from sklearn.ensemble import HistGradientBoostingClassifier

from skfedida.datasets import load_adult
from skfedida.ensemble import FairHistGradientBoostingClassifier
from skfedida.federated import FederatedEstimator, evaluate_clients
from skfedida.penalty import group_penalty

pd.set_option("display.width", 120)
pd.set_option("display.max_columns", 10)
train, test = load_adult("train", raw=True), load_adult("test", raw=True)


def as_categories(X, reference=None):
    """String columns as pandas categories (the training table's, for test)."""
    X = X.copy()
    for column in X.columns:
        if not pd.api.types.is_numeric_dtype(X[column]):
            categories = None if reference is None else reference[column].cat.categories
            X[column] = pd.Categorical(X[column], categories=categories)
    return X


X_train = as_categories(train.data)
X_test = as_categories(test.data, X_train)
y_train, y_test = train.target.to_numpy(), test.target.to_numpy()

models = {
    "scikit-learn": HistGradientBoostingClassifier(random_state=0).fit(
        X_train, y_train
    ),
    "FedIDA trees, fairness=1": FairHistGradientBoostingClassifier(
        fairness=1.0, random_state=0
    ).fit(X_train, y_train, sensitive_features=train.sensitive),
    # The same trees across the 5 clients: each keeps its rows; its
    # categories, histograms and partitions are all the server sees.
    "federated FedIDA trees, fairness=1": FederatedEstimator(
        FairHistGradientBoostingClassifier(fairness=1.0, random_state=0),
        random_state=0,
    ).fit(
        X_train,
        y_train,
        clients=train.clients.to_numpy(),
        sensitive_features=train.sensitive,
    ),
}

# %%
# The penalty is what the fit lowers: the squared differences between
# groups of the mean logit of rows with the same label.
# Every (race, gender) combination is a group, coded 0, 1, ...
codes, _ = pd.factorize(pd.MultiIndex.from_frame(train.sensitive))
for name, model in models.items():
    penalty, _ = group_penalty(model.decision_function(X_train), y_train, codes)
    trees = getattr(model, "estimator_", model).n_iter_
    print(f"{name}: training penalty {penalty:.4f}, {trees} trees")

# %%
# Per client, at the matched selection rate (groups with fewer than 30 test
# rows left out of a client's disparities), then the mean over clients.
report = pd.DataFrame(
    {
        name: evaluate_clients(
            model,
            X_test,
            y_test,
            clients=test.clients.to_numpy(),
            sensitive_features=test.sensitive,
            metrics=("roc_auc", "brier", "selection_rate", "dpd", "dfpr"),
            threshold="prevalence",
            prevalence=float(y_train.mean()),
            min_group_size=30,
            n_bootstrap=0,
        ).summary["mean"]
        for name, model in models.items()
    }
).T
print(report.round(3))

# %%
# The trees rank as well with the penalty, and the penalty all but vanishes
# from their logits, federated or not (the federation's early stopping
# scores each client's own held-out rows, so its trees differ a little from
# the one machine's); the decisions' disparity at the matched rate moves
# only a little (``benchmarks/trees_tradeoff.py``: about one standard
# deviation over seeds). As for the linear model, group thresholds
# (:class:`~skfedida.postprocessing.FederatedThresholdOptimizer`) are what
# act on the decisions.
