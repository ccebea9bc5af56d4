"""
Group thresholds for a federation (post-processing)
===================================================

A federated model treats groups alike only as far as its scores do: at one
threshold, groups whose score distributions differ get different selection
rates. :class:`~skfedida.postprocessing.FederatedThresholdOptimizer` chooses a
threshold per sensitive group (randomised between two where needed) so that
the decisions satisfy a constraint, from each client's counts of scores per
(group, label, bin): no score, label or group of a row leaves its client.

Here FedAvg is trained on the shipped Adult training rows (5 clients), the
thresholds are found on the clients' validation rows at FedAvg's training
prevalence, and both are compared on the test rows at the same selection
rate: the disparity of the decisions, their accuracy, and the model's AUROC
and Brier score (the thresholds do not change the probabilities).
"""

import pandas as pd

from skfedida.datasets import load_adult
from skfedida.federated import FederatedEstimator, evaluate_clients
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.plotting import plot_threshold_optimizer
from skfedida.postprocessing import FederatedThresholdOptimizer

pd.set_option("display.width", 120)
pd.set_option("display.max_columns", 10)
train, val, test = (load_adult(name) for name in ("train", "val", "test"))


def rows(data):
    return data.data, data.target, data.clients.to_numpy(), data.sensitive


X, y, clients, S = rows(train)
fedavg = FederatedEstimator(
    FairPenaltyLogisticRegression(fairness=0.0), random_state=0
).fit(X, y, clients=clients, sensitive_features=S)
prevalence = fedavg.class_prior_[1]

# %%
# Thresholds per race x gender group, for demographic parity at the training
# prevalence, fitted on the clients' validation rows (not the model's own
# training rows). ``histograms_`` is all the server received.
X_val, y_val, clients_val, S_val = rows(val)
post = FederatedThresholdOptimizer(
    fedavg, prefit=True, selection_rate=prevalence, random_state=0
).fit(X_val, y_val, clients=clients_val, sensitive_features=S_val)
print(f"server's counts: {post.histograms_.shape} (groups, labels, bins)")
thresholds = pd.DataFrame(
    post.rules_["thresholds"],
    index=pd.MultiIndex.from_tuples(post.groups_, names=post.sensitive_names_),
    columns=["threshold", "second threshold"],
)
thresholds["P(first)"] = post.rules_["p_first"]
print(thresholds.round(3))

# %%
# The same rules drawn on each group's curve, from the same counts (as
# fairlearn's ``plot_threshold_optimizer`` draws its own): selection rate
# against accuracy within the group, every group's chosen point at the shared
# rate (dashed).
plot_threshold_optimizer(post, show_plot=False)

# %%
# On the test rows, at the same selection rate: mean over the 5 clients
# (groups with at least 30 test rows).
X_test, y_test, clients_test, S_test = rows(test)
common = dict(
    clients=clients_test,
    sensitive_features=S_test,
    metrics=("accuracy", "selection_rate", "dpd", "dfpr", "roc_auc", "brier"),
    min_group_size=30,
    n_bootstrap=0,
)
report = pd.DataFrame(
    {
        "FedAvg, matched threshold": evaluate_clients(
            fedavg, X_test, y_test, threshold="prevalence", **common
        ).summary["mean"],
        "FedAvg + group thresholds": evaluate_clients(
            post, X_test, y_test, **common
        ).summary["mean"],
    }
).T
print(report.round(3))

# %%
# The thresholds cut the clients' DPD at the same selection rate, at some
# accuracy. Per client the test groups are small, so even decisions drawn at
# random at one rate for everybody show a DPD of several points
# (``benchmarks/postprocessing.py`` measures that floor).
