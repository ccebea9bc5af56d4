"""The cost of federated preprocessing: statistics rounds on the raw Adult table.

Run: ``python benchmarks/preprocessing.py [--repeats 5]``

The raw Adult training table (5 clients, 13 predictors) through the
preprocessing of ``examples/raw_adult_pipeline.py`` (median imputation and
standardisation of the 6 numeric columns, one-hot encoding of the 7
categorical ones), fitted from the clients' statistics: the number of
statistics rounds of each transformer, the time of all rounds (median and
min of ``--repeats``, in this process), against scikit-learn's transformers
fitted on the pooled rows; then ``make_fedida()`` fitted end to end on the
raw table against the pre-encoded table, with AUROC, Brier, the selection
rate, DPD and DFPR at a matched selection rate (race x gender, mean over
clients, groups >= 30 test rows).
"""

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer, make_column_selector
from sklearn.impute import SimpleImputer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from skfedida.datasets import load_adult
from skfedida.model_selection import make_fedida
from skfedida.preprocessing import (
    FederatedOneHotEncoder,
    FederatedSimpleImputer,
    FederatedStandardScaler,
    _base,
)

sys.path.insert(0, str(Path(__file__).parent))
from _timing import header, timed
from fair_aggregation import measure


def preprocessing(federated):
    imputer, scaler, encoder = (
        (FederatedSimpleImputer, FederatedStandardScaler, FederatedOneHotEncoder)
        if federated
        else (SimpleImputer, StandardScaler, OneHotEncoder)
    )
    return ColumnTransformer(
        [
            (
                "numbers",
                Pipeline([("impute", imputer(strategy="median")), ("scale", scaler())]),
                make_column_selector(dtype_include="number"),
            ),
            (
                "categories",
                encoder(handle_unknown="infrequent_if_exist", min_frequency=20),
                make_column_selector(dtype_exclude="number"),
            ),
        ]
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    raw, raw_test = load_adult("train", raw=True), load_adult("test", raw=True)
    clients = raw.clients.to_numpy()
    parts = [raw.data[clients == k] for k in np.unique(clients)]
    tree = preprocessing(True)
    rounds = []
    real_ask = _base.client_answer

    def counting(tree_, rows, states, query):
        rounds.append(len(states))
        return real_ask(tree_, rows, states, query)

    _base.client_answer = counting
    try:
        _base.fit_in_process(tree, parts)
    finally:
        _base.client_answer = real_ask
    per_transformer = pd.Series(rounds).value_counts().sort_index() // len(parts)
    names = [path for path, _ in _base.federated_transformers(tree)]
    print(f"\n{header(args.repeats)}\n")
    print("statistics rounds per transformer:")
    for name, count in zip(names, per_transformer, strict=True):
        print(f"  {name}: {count}")
    federated = timed(lambda: _base.fit_in_process(tree, parts), args.repeats)
    pooled = timed(lambda: preprocessing(False).fit(raw.data), args.repeats)
    print(
        f"\npreprocessing fit, median (min) of {args.repeats}: federated "
        f"{federated} s, sklearn on pooled rows {pooled} s"
    )

    def raw_fedida():
        fedida = make_fedida(random_state=0)
        fedida.set_params(
            estimator=Pipeline(
                [("pre", preprocessing(True)), ("model", fedida.estimator)]
            )
        )
        return fedida.fit(
            raw.data, raw.target, clients=raw.clients, sensitive_features=raw.sensitive
        )

    encoded, encoded_test = load_adult("train"), load_adult("test")

    def encoded_fedida():
        return make_fedida(random_state=0).fit(
            encoded.data,
            encoded.target,
            clients=encoded.clients,
            sensitive_features=encoded.sensitive,
        )

    rows = {}
    for name, fit, test in (
        ("raw table, federated preprocessing", raw_fedida, raw_test),
        ("paper's pre-encoded table", encoded_fedida, encoded_test),
    ):
        seconds = timed(fit, args.repeats)
        model = seconds.result
        X, y = test.data, test.target
        scores = measure(model, (X, y, test.clients.to_numpy(), test.sensitive))
        rows[name] = {
            **{
                k: v for k, v in scores.items() if k not in ("AUROC lowest", "AUROC sd")
            },
            "fit s (median)": seconds.median,
            "fit s (min)": seconds.minimum,
        }
    print(f"\nmake_fedida() on Adult, test rows, median fit time of {args.repeats}\n")
    print(pd.DataFrame(rows).T.round(3).to_string())


if __name__ == "__main__":
    main()
