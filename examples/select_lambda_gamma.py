"""
Choosing lambda and gamma as the paper does, on the shipped Adult data
======================================================================

The FedIDA paper's §3.2 and Algorithm 2, end to end, judged at the operating
point:

1. **lambda range.** Every client fits the penalised logistic model (the
   standardized group penalty, :func:`make_fedida
   <skfedida.model_selection.make_fedida>`'s default) on its own training rows
   for increasing lambda and stops when its validation accuracy drops below
   0.995 x its accuracy at lambda = 0, or when the model's decisions become
   degenerate (fewer than 1% or more than 99% of its rows selected); the
   smallest bound across clients is the range. We take its upper end.
2. **gamma search.** FedIDA(FedAvg) with that lambda; gamma (the L2 weight,
   ``estimator__alpha``) over [1e-4, 0.1]: a coarse grid, then a fine one
   between the neighbours of the best value, scored on the clients' validation
   rows (a predefined split). The refit rule
   (:func:`~skfedida.model_selection.fairest_within`) takes the candidate
   whose decisions at a *matched selection rate* (the threshold that selects
   the training prevalence) have the lowest DPD among those within 0.01 AUROC
   of the best, and never a candidate that selects fewer than 1% or more than
   99% of the rows at 0.5.
3. **refit** on training + validation rows, then per-client test metrics
   beside FedAvg's, at the matched rate.

Why the matched rate: a larger gamma (or lambda) shrinks the scores towards
the base rate, which lowers every disparity on probabilities, and at 0.5 a
model that predicts no positive has DPD = 0 trivially. At a matched rate both
models select the same share of people, so a lower DPD means the selected
people are spread more evenly over the groups.

By default the federation is shortened (3 rounds x 2 epochs, 4 + 2 gamma values)
so the script runs in about a minute; ``--paper`` uses the paper's 10 rounds x
5 epochs and 10 + 10 gamma values.
"""

import argparse
import warnings

import numpy as np
import pandas as pd
from sklearn import config_context
from sklearn.metrics import make_scorer
from sklearn.model_selection import PredefinedSplit

from skfedida.datasets import load_adult
from skfedida.federated import FederatedEstimator, evaluate_clients
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.metrics import make_fairness_scorer, selection_rate
from skfedida.model_selection import (
    CoarseToFineSearchCV,
    fairest_within,
    lambda_range,
    make_fedida,
)

parser = argparse.ArgumentParser(description="Choose lambda and gamma on Adult.")
parser.add_argument("--paper", action="store_true", help="the paper's full settings")
parser.add_argument("--n-jobs", type=int, default=1)
args = parser.parse_args()
rounds, epochs, n_coarse, n_fine = (10, 5, 10, 10) if args.paper else (3, 2, 4, 2)

train, val, test = load_adult("train"), load_adult("val"), load_adult("test")
# The paper's appendix codes race as White / non-White: 4 race x gender groups,
# none too small to estimate a rate on one client's validation rows.
for part in (train, val, test):
    part.sensitive = part.sensitive.assign(
        race=np.where(part.sensitive["race"] == "White", "White", "non-White")
    )

# 1. The lambda range, each client on its own training and validation rows.
lambdas = lambda_range(
    FairPenaltyLogisticRegression(penalty="group_standardized"),
    train.data,
    train.target,
    clients=train.clients,
    sensitive_features=train.sensitive,
    validation=(val.data, val.target, val.clients, val.sensitive),
    lambdas=(0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2),
    n_jobs=args.n_jobs,
)
print("lambda bound per client:", {r["client"]: r["bound"] for r in lambdas.per_client})
fairness = lambdas.range[1]
print(f"lambda range {lambdas.range}; using lambda = {fairness}")

# 2. The two-stage gamma search on the clients' validation rows.
X = pd.concat([train.data, val.data], ignore_index=True)
y = pd.concat([train.target, val.target], ignore_index=True)
clients = pd.concat([train.clients, val.clients], ignore_index=True)
S = pd.concat([train.sensitive, val.sensitive], ignore_index=True)
validation_rows = PredefinedSplit(
    np.r_[np.full(len(train.target), -1), np.zeros(len(val.target), dtype=int)]
)
search = CoarseToFineSearchCV(
    make_fedida(
        "logistic",
        "fedavg",
        fairness=fairness,
        n_rounds=rounds,
        local_epochs=epochs,
        random_state=0,
    ),
    "estimator__alpha",
    1e-4,
    0.1,
    n_coarse=n_coarse,
    n_fine=n_fine,
    scoring={
        "auc": "roc_auc",
        # Decisions at the threshold that selects the training prevalence.
        "matched_dpd": make_fairness_scorer(
            "dpd", threshold="prevalence", min_group_size=30
        ),
        # The paper's DPD is E[f(A) | group]: on probabilities.
        "soft_dpd": make_fairness_scorer("dpd", response_method="predict_proba"),
        "selection_rate": make_scorer(selection_rate),
    },
    refit=fairest_within("auc", "matched_dpd", tolerance=0.01),
    cv=validation_rows,
    n_jobs=args.n_jobs,
)
with config_context(enable_metadata_routing=True), warnings.catch_warnings():
    warnings.simplefilter("ignore")  # rare groups leave some rates undefined
    search.fit(X, y, clients=clients, sensitive_features=S)

results = pd.DataFrame(
    {
        "stage": search.cv_results_["stage"],
        "gamma": [p["estimator__alpha"] for p in search.cv_results_["params"]],
        "AUROC": search.cv_results_["mean_test_auc"],
        "matched DPD": -search.cv_results_["mean_test_matched_dpd"],
        "soft DPD": -search.cv_results_["mean_test_soft_dpd"],
        "rate at 0.5": search.cv_results_["mean_test_selection_rate"],
    }
)
print(results.round(4).to_string(index=False))
print(f"chosen gamma = {search.best_params_['estimator__alpha']:.5f}")

# 3. The refitted FedIDA model on the test rows of every client, beside FedAvg
# trained the same way on the same rows, both at the matched selection rate.
fedavg = FederatedEstimator(
    FairPenaltyLogisticRegression(fairness=0.0),
    n_rounds=rounds,
    local_epochs=epochs,
    random_state=0,
).fit(X, y, clients=clients, sensitive_features=S)
metrics = ("roc_auc", "brier", "selection_rate", "dpd", "dfpr", "soft_dpd")
summaries = {}
for name, model in (("FedAvg", fedavg), ("FedIDA", search.best_estimator_)):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        matched = evaluate_clients(
            model,
            test.data,
            test.target,
            clients=test.clients,
            sensitive_features=test.sensitive,
            metrics=metrics,
            threshold="prevalence",
            min_group_size=30,
            n_bootstrap=0,
        )
    at_half = float(np.mean(model.predict(test.data)))
    summaries[name] = matched.summary["mean"].rename(name)
    print(
        f"{name}: matched threshold {matched.threshold:.3f}, "
        f"selection rate at 0.5 {at_half:.3f} (test base rate {test.target.mean():.3f})"
    )
table = pd.DataFrame(summaries).T
table.columns = [
    "AUROC",
    "Brier",
    "rate (matched)",
    "DPD (matched)",
    "DFPR (matched)",
    "DPD (probabilities)",
]
print(table.round(3).to_string())
print(
    "matched-rate DPD: FedIDA {:.3f} vs FedAvg {:.3f}".format(
        table.loc["FedIDA", "DPD (matched)"], table.loc["FedAvg", "DPD (matched)"]
    )
)
