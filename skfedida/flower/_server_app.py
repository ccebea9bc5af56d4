"""The skfedida Flower ServerApp: a federation's run with Flower as its transport."""

from __future__ import annotations

from flwr.serverapp import ServerApp

from ..federated._lifecycle import run_federation
from ..federated._run_config import plan_for_run
from ..postprocessing._threshold_optimizer import server_postprocessor
from ._result import _write_result
from ._transport import FlowerTransport


def make_server_app(
    federation,
    *,
    postprocessor=None,
    result_path=None,
    result_key=None,
    timeout=3600.0,
    connect_timeout=300.0,
):
    """Build a Flower ServerApp that runs a FederatedEstimator across SuperNodes.

    The ServerApp finds the clients (every SuperNode reports its
    ``partition-id`` and ``num-partitions``; it waits until all have
    connected), sends each its seed (drawn from ``random_state`` as
    ``FederatedEstimator`` draws ``client_seeds_``), starts from client 0's
    initial parameters, and runs ``n_rounds`` rounds of the in-process
    federation's own round loop with Flower messages as its transport,
    aggregating with the federation's ``aggregation`` (FedAvg's arithmetic,
    weighted by the clients' ``num-examples``, by default; FedMedian's or
    FedTrimmedAvg's; or a Flower strategy's own), each followed by an
    evaluation on every client (AUROC, DPD, DPR, DFPR and DPPV, aggregated by
    a weighted mean over the clients where defined). The result is the fitted
    ``FederatedEstimator`` that the same data would give in-process. A
    federation whose estimator is a Pipeline of federated transformers and
    a model first fits the transformers from the clients' statistics
    (query messages, one or more rounds per transformer, JSON answers), and
    returns the fitted pipeline, rebuilt from those statistics and the
    clients' column names and dtypes.
    A federation of boosted trees (``FederatedEstimator`` of a
    ``HistGradientBoostingClassifier``) runs the in-process tree fit's
    queries as query messages instead (``skfedida_trees``, JSON both ways),
    and returns the federation with its trees; with a ``postprocessor``,
    each client then declares its groups, rebuilds the model from the trees
    the server sends, and sends its counts of scores for the thresholds.

    The server checks every reply before it uses it, with the same rules as
    the in-process federation (``skfedida._gate``): each client
    declares at discovery the rows it loaded and its evaluation rows, and
    its statistics, class counts, parameters, metrics, FairFed reports and
    histograms must agree with them and with what it said before about the
    same rows. A reply that fails is that client's failure under the
    federation's ``on_client_error``: an error naming the client and its
    node, or the client left out of what the reply feeds, recorded in
    ``history_`` (round 0 for the statistics and the initialisation, with
    their ``stage``) or in the post-processor's ``history_``.

    Parameters
    ----------
    federation : FederatedEstimator
        The same unfitted object as given to :func:`make_client_app`.
    postprocessor : FederatedThresholdOptimizer, default=None
        Group thresholds for the federation's global model, found after the
        last round from every client's counts of scores per (group, label,
        bin) on its evaluation rows (``X_eval``, else its held-out rows, else
        its training rows); its ``estimator`` and ``prefit`` are not used.
        The result is then the fitted post-processor (its ``estimator_`` the
        fitted federation), as
        ``FederatedThresholdOptimizer(federation).fit(...)`` gives
        in-process. Clients send the categories of their groups
        (``group-labels``) besides the counts.
    result_path : str or path-like, default=None
        Where the ServerApp writes its result with joblib (see
        :func:`load_result`); the run config key ``result-path`` overrides it.
        On failure the file records the error instead.
    result_key : str or bytes, default=None
        Sign the result file with this key (HMAC-SHA256), so that
        ``load_result(path, key=...)`` refuses a changed file before
        unpickling it; the run config key ``result-key`` overrides it.
    timeout : float, default=3600.0
        Seconds to wait for the replies of one round.
    connect_timeout : float, default=300.0
        Seconds to wait for all SuperNodes to connect.

    Returns
    -------
    app : flwr.serverapp.ServerApp
        The ServerApp. The fitted ``FederatedEstimator`` it writes has
        ``estimator_`` (the global model), ``clients_`` (partition ids),
        ``client_sizes_``, ``client_seeds_``, ``classes_``,
        ``n_features_in_``, ``history_`` (per round and client: training
        loss and evaluation metrics, or ``skipped``) and
        ``federated_metrics_`` (the aggregated evaluation per round).

    Raises
    ------
    RuntimeError
        When a client fails with ``on_client_error="raise"``, or every client
        of a round fails (Flower alone would finish the run with an empty
        result); the result file records the error.

    See Also
    --------
    make_client_app : The matching ClientApp.
    skfedida.flower.run_in_process : Run both apps in one process.

    Examples
    --------
    >>> from skfedida.federated import FederatedEstimator
    >>> from skfedida.flower import make_server_app
    >>> from skfedida.linear_model import FairPenaltyLogisticRegression
    >>> federation = FederatedEstimator(FairPenaltyLogisticRegression(),
    ...                                 n_rounds=2, random_state=0)
    >>> app = make_server_app(federation, result_path="fedida.joblib")
    """
    plan_for_run(federation, {})  # a bad federation fails when the app is built
    if postprocessor is not None:
        server_postprocessor(postprocessor)  # a wrong type or options fail here
    app = ServerApp()

    @app.main()
    def main(grid, context):
        path = context.run_config.get("result-path", result_path)
        key = context.run_config.get("result-key", result_key)
        try:
            fitted = run_federation(
                plan_for_run(federation, context.run_config),
                FlowerTransport(grid, timeout, connect_timeout),
                postprocessor=postprocessor,
            )
        except Exception as exc:
            if path:
                _write_result(path, {"error": f"{type(exc).__name__}: {exc}"}, key)
            raise
        if path:
            _write_result(path, {"estimator": fitted}, key)

    return app
