"""
A federation with a three-class outcome
=======================================

Clinical and social outcomes are often graded: triage levels, risk tiers.
With more than two classes the fair estimators are softmax models, and the
penalty is applied to every class's score, comparing rows of the same true
class across groups (the multi-class analogue of equalized odds on scores).
The disparity metrics compare each class against the rest and report the
worst class.

Here a synthetic federation of 5 clients whose four groups differ in their
mix of outcomes (a low, medium and high risk tier) and in their features is
trained with FedAvg and with FedIDA (``make_fedida``: per-minibatch ROSE
equalising every group's classes, the penalty, the prior correction) at four
fairness weights. One client
has no high-risk row: ``FederatedEstimator`` knows the classes from all rows.
Both models decide by their most probable class. The report gives, per model
and per client, accuracy, the mean one-vs-rest AUROC, the Brier score, the
share of rows given each class (so the reader can see both models spread
their decisions alike), and the disparities of the decisions.
"""

import warnings

import numpy as np
import pandas as pd

from skfedida.datasets import make_federated_classification
from skfedida.federated import FederatedEstimator, evaluate_clients
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.model_selection import make_fedida

pd.set_option("display.width", 120)
pd.set_option("display.max_columns", 12)

# Class shares (low, medium, high) per client and group: group 3 is mostly
# high risk, group 0 mostly low; client 4 has no high-risk row.
shares = np.tile(
    [[0.6, 0.3, 0.1], [0.5, 0.3, 0.2], [0.4, 0.3, 0.3], [0.2, 0.3, 0.5]], (5, 1, 1)
)
shares[4, :, 2] = 0.0
data = make_federated_classification(
    12_000,
    n_clients=5,
    n_features=8,
    n_classes=3,
    class_proportions=shares,
    group_shift=1.0,
    class_sep=2.5,
    random_state=0,
)
tiers = np.array(["1 low", "2 medium", "3 high"])
y = tiers[data.target]
S = pd.DataFrame(data.sensitive)
test = np.arange(y.size) % 4 == 0
train = ~test
X, clients = data.data, data.clients
print(f"classes per client: {pd.crosstab(clients, y).to_dict('index')}\n")

models = {
    "FedAvg": FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=0.0), random_state=0
    ),
    # make_fedida's default lambda (0.25), and larger ones: the trade-off.
    **{
        f"FedIDA lambda={fairness}": make_fedida(fairness=fairness, random_state=0)
        for fairness in (0.25, 1.0, 2.0, 5.0)
    },
}
rows = []
for name, model in models.items():
    with warnings.catch_warnings():
        # A client without high-risk rows: expected here.
        warnings.simplefilter("ignore")
        model.fit(
            X[train], y[train], clients=clients[train], sensitive_features=S[train]
        )
    report = evaluate_clients(
        model,
        X[test],
        y[test],
        clients=clients[test],
        sensitive_features=S[test],
        metrics=("accuracy", "roc_auc", "brier", "dpd", "dfpr", "eod"),
        n_bootstrap=0,
    )
    decisions = model.predict(X[test])
    shares_given = {t: float(np.mean(decisions == t)) for t in tiers}
    rows.append(
        {
            "model": name,
            **report.summary["mean"][["accuracy", "roc_auc", "brier"]].to_dict(),
            **{f"share {t}": v for t, v in shares_given.items()},
            **report.summary["mean"][["dpd", "dfpr", "eod"]].to_dict(),
        }
    )
table = pd.DataFrame(rows).set_index("model")
print("Mean over the 5 clients, test rows (decisions: the most probable class)\n")
print(table.round(3).to_string())
print(
    "\nLegend: accuracy and AUROC (mean of the classes' one-vs-rest AUROCs): "
    "higher is better. Brier: squared error of the probabilities summed over "
    "classes, lower is better. 'share <class>': the share of test rows given "
    "that class (the true shares: "
    + ", ".join(f"{t} {np.mean(y[test] == t):.3f}" for t in tiers)
    + "). DPD, DFPR, EOD: the largest gap between groups in the share given a "
    "class, in that share among rows not of the class, and in the larger of the "
    "true and false positive rates; each the worst class one-vs-rest, lower is "
    "fairer. The groups' true mixes of classes differ, so a DPD of 0 would "
    "need decisions that ignore those differences: EOD is the gap to watch.\n"
)
fedavg = table.loc["FedAvg"]
for name in table.index[1:]:
    fedida = table.loc[name]
    print(
        f"{name} vs FedAvg: EOD {fedavg['eod']:.3f} -> {fedida['eod']:.3f}, "
        f"DPD {fedavg['dpd']:.3f} -> {fedida['dpd']:.3f}, accuracy "
        f"{fedavg['accuracy']:.3f} -> {fedida['accuracy']:.3f}, Brier "
        f"{fedavg['brier']:.3f} -> {fedida['brier']:.3f}"
    )
