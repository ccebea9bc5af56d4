"""
Choosing gamma with fairness scorers in GridSearchCV
====================================================

With metadata routing on, ``fit(X, y, sensitive_features=S)`` hands every
fairness scorer exactly the rows of S of its validation fold. Here the L2
weight gamma (``alpha``) of the penalised logistic regression is searched on
the pooled Adult training rows with AUROC, the soft demographic parity
difference (on probabilities), the DPD of decisions at a matched selection
rate (the threshold that selects the training prevalence), the selection rate
at 0.5 and the trade-off AUROC - DPD; the refit rule takes the fairest
candidate within 0.01 AUROC of the best, never one that selects fewer than 1%
or more than 99% of the rows.
"""

import pandas as pd
import sklearn
from sklearn.metrics import make_scorer
from sklearn.model_selection import GridSearchCV, StratifiedKFold

from skfedida.datasets import load_adult
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.metrics import (
    make_fairness_scorer,
    make_tradeoff_scorer,
    selection_rate,
)
from skfedida.model_selection import fairest_within

sklearn.set_config(enable_metadata_routing=True)
train = load_adult("train")

search = GridSearchCV(
    FairPenaltyLogisticRegression(fairness=0.2),
    {"alpha": [1e-4, 1e-3, 1e-2]},
    scoring={
        "auc": "roc_auc",
        "dpd": make_fairness_scorer("dpd", response_method="predict_proba"),
        # Decisions at a matched selection rate (the training prevalence): a
        # candidate cannot look fair here by compressing its scores.
        "matched_dpd": make_fairness_scorer("dpd", threshold="prevalence"),
        # Lets the refit rule refuse a candidate that selects almost nobody.
        "selection_rate": make_scorer(selection_rate),
        "trade": make_tradeoff_scorer(
            "roc_auc", "dpd", fairness_response_method="predict_proba"
        ),
    },
    refit=fairest_within("auc", "dpd", tolerance=0.01),
    cv=StratifiedKFold(3, shuffle=True, random_state=0),
).fit(train.data, train.target, sensitive_features=train.sensitive)

results = pd.DataFrame(
    {
        "alpha": search.cv_results_["param_alpha"],
        "AUROC": search.cv_results_["mean_test_auc"],
        "DPD": -search.cv_results_["mean_test_dpd"],
        "matched DPD": -search.cv_results_["mean_test_matched_dpd"],
        "selection rate": search.cv_results_["mean_test_selection_rate"],
        "AUROC - DPD": search.cv_results_["mean_test_trade"],
    }
)
print(results.round(4).to_string(index=False))
print(f"chosen: alpha = {search.best_params_['alpha']}")
sklearn.set_config(enable_metadata_routing=False)
