"""
Quickstart: per-client fairness of a model on the shipped Adult data
=====================================================================

Fits a logistic regression on the pooled training rows of the 5 Adult clients
(the non-private "Central" reference of the paper), then reports, for every
client's test split, the AUROC and the four disparity metrics of the paper over
the race x gender groups, with the mean (sd) across clients.

Later releases turn this into the FedIDA vs FedAvg comparison.
"""

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from skfedida.datasets import load_adult
from skfedida.metrics import fairness_summary

train, test = load_adult("train"), load_adult("test")
model = LogisticRegression(max_iter=1000).fit(train.data, train.target)

columns = ["AUROC", "DPD", "DPR", "DFPR", "DPPV"]
rows = {}
for client in sorted(test.clients.unique()):
    mask = (test.clients == client).to_numpy()
    X, y, S = test.data[mask], test.target[mask], test.sensitive[mask]
    summary = fairness_summary(y, model.predict(X), sensitive_features=S)
    rows[client] = [
        roc_auc_score(y, model.predict_proba(X)[:, 1]),
        summary["demographic_parity_difference"],
        summary["demographic_parity_ratio"],
        summary["false_positive_rate_difference"],
        summary["positive_predictive_value_difference"],
    ]

table = np.array(list(rows.values()))
print("Central logistic regression on Adult, test split, groups = race x gender")
width = 15
print(f"{'client':>8}" + "".join(c.rjust(width) for c in columns))
for client, values in rows.items():
    print(f"{client:>8}" + "".join(f"{v:.3f}".rjust(width) for v in values))
means, sds = table.mean(axis=0), table.std(axis=0, ddof=1)
print(
    f"{'mean':>8}"
    + "".join(
        f"{m:.3f} ({s:.3f})".rjust(width) for m, s in zip(means, sds, strict=True)
    )
)
