"""
FairnessAwareROSE and the penalised model in an imbalanced-learn pipeline
=========================================================================

Column mode: the sensitive columns (race, gender) travel inside X through the
pipeline, so every step sees them on the right rows, also after resampling.
The ColumnTransformer encodes the predictors and passes the sensitive columns
through by name; FairnessAwareROSE balances every (race x gender, outcome)
subgroup and copies the sensitive columns from each synthetic row's seed row;
the penalised logistic regression reads them for its fairness penalty and
drops them from its inputs.
"""

import pandas as pd
from imblearn.pipeline import Pipeline
from sklearn.compose import ColumnTransformer
from sklearn.metrics import roc_auc_score
from sklearn.preprocessing import OneHotEncoder

from skfedida.datasets import load_adult
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.metrics import fairness_summary
from skfedida.over_sampling import FairnessAwareROSE

sensitive = ["race", "gender"]
predictors = ["workclass", "education", "marital.status"]


def frame(split):
    adult = load_adult(split, raw=True)
    return pd.concat([adult.data[predictors], adult.sensitive], axis=1), adult.target


X_train, y_train = frame("train")
X_test, y_test = frame("test")

encode = ColumnTransformer(
    [
        (
            "onehot",
            OneHotEncoder(sparse_output=False, handle_unknown="ignore"),
            predictors,
        )
    ],
    remainder="passthrough",  # keeps race and gender
    verbose_feature_names_out=False,  # under their own names
).set_output(transform="pandas")  # so that the next steps find them by name

pipeline = Pipeline(
    [
        ("encode", encode),
        ("rose", FairnessAwareROSE(sensitive=sensitive, random_state=0)),
        ("model", FairPenaltyLogisticRegression(fairness=0.2, sensitive=sensitive)),
    ]
).fit(X_train, y_train)

rose = pipeline.named_steps["rose"]
counts = pd.DataFrame(
    {"before": rose.subgroup_counts_before_, "after": rose.subgroup_counts_after_}
)
print("Rows per (race x gender, outcome) subgroup, training data:")
print(counts.to_string())

model = pipeline.named_steps["model"]
print(
    f"\nThe model uses {len(model.model_feature_names_)} inputs, none of them "
    f"sensitive: {'race' not in model.model_feature_names_}"
)
proba = pipeline.predict_proba(X_test)[:, 1]
summary = fairness_summary(
    y_test, proba, sensitive_features=X_test[sensitive], soft=True
)
print(
    f"test AUROC {roc_auc_score(y_test, proba):.3f}, soft DPD "
    f"{summary['demographic_parity_difference']:.3f}"
)
