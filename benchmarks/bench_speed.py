"""The speed targets: compiled loops and vectorised FedIDA against the numpy paths.

Run: ``python benchmarks/bench_speed.py [--repeat 3]``

Every workload runs twice in this one process: on the current hot path
(compiled minibatch loops, FairnessAwareROSE vectorised over an epoch, rows
validated once per fit) and on the numpy reference path it replaced (the
estimators' numpy minibatch loop, ``fit_resample`` + ``partial_fit`` on every
minibatch), so the ratios do not depend on the machine's speed or load. Times
are the median (and min) of ``--repeat`` runs, printed with the core count
and load average.

Workloads, on the shipped Adult training data (5 clients):

- ``reference``: the authors' PyTorch workload (FedAvg + group penalty,
  logistic model, gender only, 11 rounds x 10 local epochs, batch 128, lr
  0.1, lambda 2, gamma 0.0186), which took 411 s with their code on this
  machine kind (measured for issue 16; not rerun here). Its final objective
  on the training rows is printed: before the compiled loop it was 0.516396.
- FedAvg and FedIDA(FedAvg) with the paper's settings (10 rounds x 5 epochs,
  lambda 1, FairnessAwareROSE on every minibatch), logistic and FCNN; FedIDA
  also in column mode (the sensitive columns in X, ``sensitive=``), as
  imbalanced-learn pipelines use it.
- What a user could write instead of the FedAvg logistic fit: a plain numpy
  minibatch loop of the same algorithm (``numpy_fedavg``: FedAvg of SGD on
  the mean log-loss + alpha ||w||^2, lr 0.1, batch 128, one shuffled copy of
  the client's rows per epoch, every row of a client taken once per epoch,
  clients weighed by their rows). It reaches the same final training loss
  (printed); it computes no objective and no safeguarded step, which the
  library does on every minibatch (its Armijo test, the loss it reports).
  The two alternate over ``--repeat`` rounds, so their ratio is of one run.

The two-stage gamma search and the 1M-row federation have their own scripts
(``bench_gamma_search.py``, ``scale.py``).
"""

import argparse
import contextlib
import warnings
from unittest import mock

import numpy as np
import pandas as pd
from _timing import header, timed
from scipy.special import expit

from skfedida._models import _logistic as linear_model
from skfedida._models import _mlp as neural_network
from skfedida.datasets import load_adult
from skfedida.federated import FederatedEstimator
from skfedida.federated._client import _ResampledEpochs
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.neural_network import FairMLPClassifier
from skfedida.over_sampling import FairnessAwareROSE

AUTHORS_SECONDS = 411.0
OBJECTIVE_BEFORE = 0.516396


@contextlib.contextmanager
def numpy_path():
    """The numpy minibatch loops and per-minibatch fit_resample + partial_fit."""
    with (
        mock.patch.object(linear_model, "linear_sgd_steps", None),
        mock.patch.object(neural_network, "mlp_sgd_steps", None),
        mock.patch.object(_ResampledEpochs, "of", classmethod(lambda *a: None)),
    ):
        yield


def numpy_fedavg(clients, rounds=10, epochs=5, batch_size=128, lr=0.1, alpha=1e-4):
    """FedAvg of plain minibatch SGD on the logistic loss: the hand-written reference.

    ``clients`` is a list of (X, y) float64 arrays. Returns (coef, intercept).
    """
    n_features = clients[0][0].shape[1]
    coef, intercept = np.zeros(n_features), 0.0
    rng = np.random.RandomState(0)
    for _ in range(rounds):
        coef_sum, intercept_sum, n_total = np.zeros(n_features), 0.0, 0
        for X, y in clients:
            w, b = coef.copy(), intercept
            for _ in range(epochs):
                order = rng.permutation(y.shape[0])
                X_epoch, y_epoch = X[order], y[order]
                for start in range(0, y.shape[0], batch_size):
                    X_batch = X_epoch[start : start + batch_size]
                    residual = (
                        expit(X_batch @ w + b) - y_epoch[start : start + batch_size]
                    )
                    residual /= residual.shape[0]
                    w -= lr * (X_batch.T @ residual + 2 * alpha * w)
                    b -= lr * residual.sum()
            coef_sum += y.shape[0] * w
            intercept_sum += y.shape[0] * b
            n_total += y.shape[0]
        coef, intercept = coef_sum / n_total, intercept_sum / n_total
    return coef, intercept


def training_loss(X, y, coef, intercept):
    scores = X @ coef + intercept
    return float(np.mean(np.logaddexp(0.0, scores) - y * scores))


def against_numpy_loop(train, repeat):
    """Median (min) times of the numpy loop and the library's FedAvg, alternated."""
    X = train.data.to_numpy(dtype=np.float64)
    y = train.target.to_numpy().astype(np.float64)
    clients = np.asarray(train.clients)
    parts = [
        (np.ascontiguousarray(X[clients == c]), y[clients == c])
        for c in np.unique(clients)
    ]
    numpy_times, library_times = [], []
    for _ in range(repeat):
        numpy_times.append(timed(lambda: numpy_fedavg(parts), 1))
        library_times.append(timed_workload("logistic FedAvg", train, 1))
    numpy_time = sorted(numpy_times, key=lambda t: t.median)[len(numpy_times) // 2]
    library = sorted(library_times)[len(library_times) // 2]
    model = library[2].estimator_
    losses = (
        training_loss(X, y, *numpy_time.result),
        training_loss(X, y, model.coef_[0], model.intercept_[0]),
    )
    return (
        numpy_time.median,
        min(t.minimum for t in numpy_times),
        library[0],
        min(t[1] for t in library_times),
        losses,
    )


def workload(name, train):
    """(federation, fit arguments) of one named workload."""
    X, S = train.data, train.sensitive
    fit = {"clients": train.clients}
    paper = dict(n_rounds=10, local_epochs=5, batch_size=128, random_state=0)
    if name == "reference":
        estimator = FairPenaltyLogisticRegression(fairness=2.0, alpha=0.0186)
        federation = FederatedEstimator(
            estimator, n_rounds=11, local_epochs=10, batch_size=128, random_state=0
        )
        return federation, X, {**fit, "sensitive_features": S[["gender"]]}
    model, setup, *mode = name.split()
    fedida = setup == "FedIDA"
    fairness = 1.0 if fedida else 0.0
    if model == "logistic":
        estimator = FairPenaltyLogisticRegression(fairness=fairness)
    else:
        estimator = FairMLPClassifier(fairness=fairness)
    sampler = FairnessAwareROSE() if fedida else None
    if mode:  # column mode
        columns = list(S.columns)
        estimator.set_params(sensitive=columns)
        sampler.set_params(sensitive=columns)
        federation = FederatedEstimator(
            estimator,
            sampler=sampler,
            prior_correction=None,
            sensitive=columns,
            **paper,
        )
        return federation, pd.concat([X, S], axis=1), fit
    federation = FederatedEstimator(
        estimator, sampler=sampler, prior_correction=None, **paper
    )
    return federation, X, {**fit, "sensitive_features": S}


def timed_workload(name, train, repeat):
    def fit(workload_):
        federation, X, fit_arguments = workload_
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return federation.fit(X, train.target, **fit_arguments)

    times = timed(fit, repeat, setup=lambda: workload(name, train))
    return times.median, times.minimum, times.result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    train = load_adult("train")
    print(header(args.repeat) + ", one job\n")
    names = [
        "reference",
        "logistic FedAvg",
        "logistic FedIDA",
        "logistic FedIDA column",
        "FCNN FedAvg",
        "FCNN FedIDA",
    ]
    numpy_median, numpy_min, library_median, library_min, losses = against_numpy_loop(
        train, args.repeat
    )
    print("| FedAvg logistic on Adult | wall time (s) | final training loss |")
    print("|---|---:|---:|")
    print(
        f"| plain numpy minibatch loop (numpy_fedavg) | {numpy_median:.3f} "
        f"({numpy_min:.3f}) | {losses[0]:.5f} |"
    )
    print(
        f"| skfedida FederatedEstimator | {library_median:.3f} ({library_min:.3f}) "
        f"| {losses[1]:.5f} |\n"
    )
    medians, before_medians = {}, {}
    print("| workload | numpy path (s) | now (s) | speed-up |")
    print("|---|---:|---:|---:|")
    for name in names:
        with numpy_path():
            before, before_min, _ = timed_workload(name, train, args.repeat)
        now, now_min, federation = timed_workload(name, train, args.repeat)
        medians[name] = now
        before_medians[name] = before
        print(
            f"| {name} | {before:.2f} ({before_min:.2f}) | {now:.2f} ({now_min:.2f}) "
            f"| {before / now:.1f}x |"
        )
        if name == "reference":
            # The federation trains on X as an array (metadata mode).
            objective = federation.estimator_.objective(
                train.data.to_numpy(),
                train.target,
                sensitive_features=train.sensitive[["gender"]],
            )
    print()
    change = abs(objective - OBJECTIVE_BEFORE) / OBJECTIVE_BEFORE
    print("| target | measured | met |")
    print("|---|---:|:---:|")
    rows = [
        (
            "reference workload >= 300x the authors' 411 s (<= 1.4 s)",
            f"{medians['reference']:.2f} s, "
            f"{AUTHORS_SECONDS / medians['reference']:.0f}x",
            medians["reference"] <= 1.4,
        ),
        (
            "its final objective within 1% of 0.516396",
            f"{objective:.6f} ({100 * change:.3f}%)",
            change <= 0.01,
        ),
        (
            "FedIDA logistic on Adult <= 1 s",
            f"{medians['logistic FedIDA']:.2f} s",
            medians["logistic FedIDA"] <= 1.0,
        ),
        (
            "FedAvg logistic <= 0.6x the plain numpy loop",
            f"{library_median / numpy_median:.2f}x",
            library_median <= 0.6 * numpy_median,
        ),
        (
            "FedIDA <= 1.3x FedAvg (logistic)",
            f"{medians['logistic FedIDA'] / medians['logistic FedAvg']:.2f}x",
            medians["logistic FedIDA"] <= 1.3 * medians["logistic FedAvg"],
        ),
        (
            "column mode <= 1.2x metadata mode",
            f"{medians['logistic FedIDA column'] / medians['logistic FedIDA']:.2f}x",
            medians["logistic FedIDA column"] <= 1.2 * medians["logistic FedIDA"],
        ),
    ]
    for model in ("FCNN FedAvg", "FCNN FedIDA"):
        ratio = before_medians[model] / medians[model]
        rows.append((f"{model}: >= 3x the numpy path", f"{ratio:.1f}x", ratio >= 3.0))
    for target, measured, met in rows:
        print(f"| {target} | {measured} | {'yes' if met else 'NO'} |")
    print(
        "\nThe two-stage gamma search and 1M rows x 100 clients: "
        "bench_gamma_search.py and scale.py. Where the FCNN misses: its "
        "compiled step is bound by three 128 x 30 x 100 matrix products (BLAS)."
    )


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
