"""Boosted trees over clients against scikit-learn's pooled fit (issue 36).

Run: ``python benchmarks/bench_trees.py [--repeat 3] [--max-iter 100]``

The shipped Adult training rows, 5 clients, 100 trees without early
stopping. Three fits:

- scikit-learn's ``HistGradientBoostingClassifier`` on the pooled rows (its
  binning included);
- the federated fit over the 5 clients' rows: bin edges from the clients'
  answers (``skfedida/ensemble/_binning.py``), each client's rows binned,
  and the boosting loop (``skfedida/ensemble/_boosting.py``), all timed,
  checked to give the same edges and trees bit for bit;
- the same loop with the group penalty (``fairness=1``, race x gender),
  whose every tree adds a statistics round of cell sums and a Newton solve
  over its leaves;
- the user's fit, ``FederatedEstimator(FairHistGradientBoostingClassifier())``
  (its clients' description, resampling and categories queries included);
- the same federation on Flower's message layer
  (``skfedida.flower.run_in_process``: the real ServerApp and ClientApps,
  no network), on ``--flower-trees`` trees: seconds per tree, query rounds
  per tree and milliseconds per query round (each round one message to and
  from every client), checked to give the in-process federation's trees;
- side by side on the raw Adult table (its string columns as pandas
  categories), 5 clients, ``--flower-trees`` trees of 31 leaves: the
  federation in-process and on Flower, and XGBoost's own federated training
  (``benchmarks/_xgboost_federated.py``: a gRPC server and one process per
  client on localhost, categories one-hot, trees of 31 leaves grown
  best-first) where ``xgboost`` with its federated plugin is installed
  (``pip install xgboost==3.2.0``; skipped, saying why, where not). Each
  fit's rounds are counted (XGBoost's collective calls, each one round trip
  to its server), and the wall time of both across sites is estimated for
  a round trip of ``--rtt`` seconds: the measured time plus rounds x rtt.

The issue's target: the federated fit within 3x scikit-learn's pooled fit.
Times are the median (min) of ``--repeat`` fits after one warm-up, in one
process, one thread each where the library allows.
"""

import argparse

import numpy as np
import pandas as pd
from _timing import header, machine, timed
from _xgboost_federated import unavailable_reason, xgboost_federated
from sklearn.ensemble import HistGradientBoostingClassifier

from skfedida._groups import encode_groups
from skfedida.datasets import load_adult
from skfedida.ensemble import FairHistGradientBoostingClassifier
from skfedida.ensemble._binning import ClientColumns, federated_bin_mapper
from skfedida.ensemble._boosting import BoostingClient, boost
from skfedida.federated import FederatedEstimator

TARGET = 3.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--max-iter", type=int, default=100)
    parser.add_argument("--flower-trees", type=int, default=20)
    parser.add_argument("--rtt", type=float, default=0.02)
    args = parser.parse_args()
    train = load_adult("train")
    X, y = train.data.to_numpy(dtype=float), train.target.to_numpy()
    clients = train.clients.to_numpy()
    groups = encode_groups(train.sensitive, n_samples=len(y))
    params = {"max_iter": args.max_iter, "early_stopping": False, "random_state": 0}

    def pooled():
        return HistGradientBoostingClassifier(**params).fit(X, y)

    pooled()
    reference = timed(pooled, args.repeat)
    bin_mapper = reference.result._bin_mapper
    parts = [np.flatnonzero(clients == k) for k in np.unique(clients)]
    n_features = X.shape[1]

    def federated(fairness):
        def fit():
            edges = federated_bin_mapper([ClientColumns(X[rows]) for rows in parts])
            members = [
                BoostingClient(
                    edges.transform(X[rows]), y[rows], None, groups.codes[rows]
                )
                for rows in parts
            ]
            return edges, *boost(
                members,
                bin_mapper=edges,
                is_categorical=np.zeros(n_features, np.uint8),
                monotonic_cst=np.zeros(n_features, np.int8),
                interaction_cst=None,
                max_iter=args.max_iter,
                learning_rate=0.1,
                max_leaf_nodes=31,
                max_depth=None,
                min_samples_leaf=20,
                l2_regularization=0.0,
                max_features=1.0,
                feature_rng=np.random.default_rng(0),
                fairness=fairness,
                n_groups=groups.n_groups,
            )

        fit()
        return timed(fit, args.repeat)

    plain = federated(0.0)
    edges, _, trees = plain.result
    same = all(
        np.array_equal(ours, theirs)
        for ours, theirs in zip(
            edges.bin_thresholds_, bin_mapper.bin_thresholds_, strict=True
        )
    ) and all(
        np.array_equal(ours[0].nodes, theirs[0].nodes)
        for ours, theirs in zip(trees, reference.result._predictors, strict=True)
    )
    penalised = federated(1.0)

    def user_fit():
        return FederatedEstimator(
            FairHistGradientBoostingClassifier(
                max_iter=args.max_iter, early_stopping=False, random_state=0
            )
        ).fit(X, y, clients=clients)

    user_fit()
    user = timed(user_fit, args.repeat)
    flower = _flower(X, y, clients, args.flower_trees)
    print(
        f"Adult, {len(y):,} rows, {len(parts)} clients, {args.max_iter} trees; "
        + header(args.repeat)
        + "\n"
    )
    print("| fit | time (s) | x pooled |")
    print("|---|---:|---:|")
    print(f"| scikit-learn, pooled rows | {reference} | 1.00 |")
    for name, timing in (
        (
            "federated, 5 clients (same edges and trees: "
            + ("yes" if same else "NO")
            + ")",
            plain,
        ),
        ("federated, 5 clients, fairness=1", penalised),
        ("FederatedEstimator(FairHistGradientBoostingClassifier())", user),
    ):
        print(f"| {name} | {timing} | {timing.median / reference.median:.2f} |")
    ratio = plain.median / reference.median
    print("\n| target | measured | met |")
    print("|---|---:|:---:|")
    print(
        f"| federated fit within {TARGET}x the pooled fit | {ratio:.2f}x | "
        f"{'yes' if ratio <= TARGET else 'NO'} |"
    )

    seconds, rounds, same_as_in_process = flower
    print(
        "\nOn Flower's message layer (run_in_process, 1 run, "
        f"{args.flower_trees} trees, "
        f"same trees as in-process: {'yes' if same_as_in_process else 'NO'}): "
        f"{seconds / args.flower_trees:.3f} s per tree, "
        f"{rounds / args.flower_trees:.1f} query rounds per tree, "
        f"{1000 * seconds / rounds:.2f} ms per round."
    )
    _side_by_side(args.flower_trees, args.rtt)


def _side_by_side(n_trees, rtt):
    """The raw table's federation in-process, on Flower and XGBoost's, printed."""
    raw = load_adult("train", raw=True)
    X = raw.data.copy()
    for column in X.columns:
        if X[column].dtype.kind not in "if":
            X[column] = X[column].astype("category")
    y, clients = raw.target.to_numpy(), raw.clients.to_numpy()
    federation = _federation(n_trees)
    federation.fit(X, y, clients=clients)  # warm-up (imports, caches)
    in_process = timed(lambda: federation.fit(X, y, clients=clients), repeat=3)
    seconds, rounds, same = _flower(X, y, clients, n_trees)
    rows = [
        ("skfedida, in-process", in_process.median, None),
        (
            "skfedida on Flower (run_in_process; same trees as in-process: "
            + ("yes" if same else "NO")
            + ")",
            seconds,
            rounds,
        ),
    ]
    ids = np.unique(clients)
    onehot = pd.get_dummies(X, dtype=float).to_numpy(dtype=np.float64)
    xgb = xgboost_federated(
        [(onehot[clients == k], y[clients == k].astype(float)) for k in ids],
        n_trees=n_trees,
        max_leaves=31,
    )
    if xgb is None:
        reason = unavailable_reason()
        print(f"\nXGBoost's federated mode: skipped ({reason}).")
    else:
        rows.append(
            (
                f"XGBoost {xgb['version']} federated (gRPC on localhost, one "
                "process per client, categories one-hot)",
                xgb["seconds"],
                xgb["rounds"],
            )
        )
    print(
        f"\nRaw Adult ({len(y):,} rows, string columns as categories), "
        f"{len(ids)} clients, {n_trees} trees of 31 leaves; {machine()}; "
        "in-process the median of 3 runs, the others 1 run each. Across "
        f"sites, estimated: the time measured plus rounds x {1000 * rtt:.0f} ms.\n"
    )
    print(
        "| fit | s per tree | rounds per tree | ms per round | "
        f"est. s per tree at {1000 * rtt:.0f} ms |"
    )
    print("|---|---:|---:|---:|---:|")
    for name, total, n_rounds in rows:
        if n_rounds is None:
            print(f"| {name} | {total / n_trees:.3f} | | | |")
            continue
        print(
            f"| {name} | {total / n_trees:.3f} | {n_rounds / n_trees:.1f} | "
            f"{1000 * total / n_rounds:.2f} | "
            f"{(total + n_rounds * rtt) / n_trees:.3f} |"
        )
    if xgb is not None:
        ours, theirs = seconds / n_trees, xgb["seconds"] / n_trees
        print("\n| target | measured | met |")
        print("|---|---:|:---:|")
        print(
            "| on Flower, s per tree at most XGBoost federated's | "
            f"{ours:.3f} / {theirs:.3f} = {ours / theirs:.2f}x | "
            f"{'yes' if ours <= theirs else 'NO'} |"
        )


def _federation(n_trees):
    return FederatedEstimator(
        FairHistGradientBoostingClassifier(
            max_iter=n_trees, early_stopping=False, random_state=0
        )
    )


def _partitions(X, y, clients):
    """``load_data`` of a ClientApp: partition K holds the K-th client's rows."""
    ids = np.unique(clients)  # partition K plays the K-th client id

    def load(context):
        rows = clients == ids[context.node_config["partition-id"]]
        return {"X": X[rows], "y": y[rows]}

    return load


def _flower(X, y, clients, n_trees):
    """A Flower fit's seconds (1 run) and query rounds; is it in-process's?"""
    from skfedida.flower import make_client_app, make_server_app, run_in_process
    from skfedida.flower._transport import FlowerTransport

    federation = _federation(n_trees)
    load = _partitions(X, y, clients)
    rounds = 0
    send = FlowerTransport.send

    def counted(self, kind, *args, **kwargs):
        nonlocal rounds
        rounds += kind == "tree query"
        return send(self, kind, *args, **kwargs)

    FlowerTransport.send = counted
    try:
        timing = timed(
            lambda: run_in_process(
                make_server_app(federation),
                make_client_app(federation, load),
                num_partitions=len(np.unique(clients)),
            ),
            repeat=1,
        )
    finally:
        FlowerTransport.send = send
    fitted, seconds = timing.result, timing.median
    reference = federation.fit(X, y, clients=clients)
    same = all(
        np.array_equal(a[0].nodes, b[0].nodes)
        for a, b in zip(
            fitted.estimator_._predictors,
            reference.estimator_._predictors,
            strict=True,
        )
    )
    return seconds, rounds, same


if __name__ == "__main__":
    main()
