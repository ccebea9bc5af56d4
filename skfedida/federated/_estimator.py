"""FederatedEstimator: FedAvg, Per-FedAvg, Local and Central training."""

from __future__ import annotations

import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.callback import CallbackSupportMixin
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.pipeline import Pipeline
from sklearn.utils import column_or_1d, get_tags
from sklearn.utils.metadata_routing import (
    MetadataRouter,
    MethodMapping,
    process_routing,
)
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from .._compat import (
    HasMethods,
    Interval,
    StrOptions,
    fit_context,
    num_samples,
    routing_enabled,
    safe_indexing,
)
from .._doc_links import DocLinkMixin
from .._gate._policy import ReplyGate
from .._groups import (
    check_labels_complete,
    check_sendable_labels,
    client_ids,
    encode_groups,
    resolve_sensitive,
    take_rows,
)
from .._models._fair_base import (
    BaseFairClassifier,
    largest_input,
    warn_if_unscaled,
)
from .._validation import columns_named_on_error, is_plain_array
from ..exceptions import (
    ClientDataWarning,
    InactivePenaltyWarning,
    caller_stacklevel,
    warn_if_outlying_updates,
)
from ..over_sampling import FairnessAwareROSE
from ._aggregation import _Aggregator, check_aggregation
from ._client import (
    COMMUNICATING,
    UNROUTED,
    SensitiveRouting,
    _accepts,
    _check_sampler_input,
    _client_seeds,
    _ClientData,
    _split_client,
    _Trainer,
    class_counts,
    clone_fitted,
)
from ._constraint_rounds import (
    is_constrained,
)
from ._in_process import (
    admitted_class_prior,
    initialise,
    record_skips,
    run_rounds,
    warn_if_degenerate,
)
from ._parameters import assign_parameters
from ._pipeline import (
    PipelineFederation,
    final_step,
    is_pipeline,
    warn_if_pooled_preprocessing,
)
from ._plan import FederationPlan
from ._privacy import (
    DifferentialPrivacy,
    check_update_bound,
    updates_bounded,
)
from ._secure_aggregation import (
    SecureAggregation,
    check_secure_federation,
    check_secure_rounds,
)
from ._server import RoundServer
from ._trees import fit_trees, is_boosted_trees

__all__ = ["FederatedEstimator"]

_STRATEGIES = ("fedavg", "pfedavg", "local", "central")


def _declares_constraints(component):
    """Whether a component validates its parameters as sklearn's own do.

    A third-party BaseEstimator has ``_validate_params`` but no
    ``_parameter_constraints`` to check against (calling it fails).
    """
    return component is not None and hasattr(component, "_parameter_constraints")


class FederatedEstimator(
    DocLinkMixin, CallbackSupportMixin, ClassifierMixin, BaseEstimator
):
    """Train a classifier across clients that never share rows.

    Rows belong to clients (``clients=`` in ``fit``). Every round, the
    selected clients start from the global parameters, optionally resample
    their own rows with ``sampler`` (FairnessAwareROSE makes this FedIDA),
    run ``local_epochs`` epochs of the estimator's ``partial_fit``, and send
    back only their parameter arrays and row counts; the server averages the
    arrays with weights n_k / n (the clients' real sizes).

    Strategies:

    - ``"fedavg"``: FedAvg (McMahan et al., 2017), as above.
    - ``"pfedavg"``: first-order Per-FedAvg (Fallah et al., 2020): local
      steps are MAML steps (an adaptation step of ``inner_learning_rate`` on
      one batch, then the gradient at the adapted point on the next batch,
      applied at ``outer_learning_rate``). Each client's personalised model is
      the global model after ``personalization_steps`` steps of
      ``inner_learning_rate`` on its own training rows.
    - ``"local"``: every client trains its own model for
      ``n_rounds * local_epochs`` epochs, with no communication.
    - ``"central"``: one model on the pooled rows, for the same number of
      epochs (the non-private reference).

    Any estimator whose parameters follow the protocol of
    :mod:`skfedida.federated` (``coef_``/``intercept_`` or
    ``coefs_``/``intercepts_``) and whose ``partial_fit`` continues from them
    can be federated: skfedida's estimators, and sklearn's ``SGDClassifier``
    and ``MLPClassifier``.

    Boosted trees (:class:`~skfedida.ensemble.FairHistGradientBoostingClassifier`,
    or scikit-learn's ``HistGradientBoostingClassifier``) are federated by
    their own protocol: the server grows each tree from the clients' summed
    histograms, scikit-learn's trees on the pooled rows (see the user
    guide's "Federated boosted trees"); the parameters of rounds of
    ``partial_fit`` do not apply to them.

    Parameters
    ----------
    estimator : estimator
        Unfitted classifier with ``partial_fit`` and ``predict_proba`` (the
        clients report their log-loss, the reports AUROC and Brier scores):
        skfedida's estimators, sklearn's ``MLPClassifier``, or
        ``SGDClassifier(loss="log_loss")`` (not the default hinge loss).
    strategy : {"fedavg", "pfedavg", "local", "central"}, default="fedavg"
        Federated optimiser.
    n_rounds : int, default=10
        Communication rounds.
    local_epochs : int or array-like of int, default=5
        Epochs per round, for every client or one value per client (in the
        order of ``clients_``).
    sampler : imblearn sampler, default=None
        Applied to each client's rows: per minibatch (``resample="batch"``,
        the paper's Algorithm 2) or to the whole client once per round
        (``"client"``). The sensitive features follow the resampled rows
        through the sampler's ``sample_indices_``. A
        :class:`~skfedida.over_sampling.FairnessAwareROSE` decides which
        columns get noise once per client, not per minibatch. With a
        FairnessAwareROSE and one of skfedida's estimators, per-minibatch
        resampling runs vectorised: the client's rows are validated once
        per fit, every minibatch of an epoch is resampled at once (the same
        distribution as ``fit_resample`` on each, another random stream)
        and the estimator takes one step per resampled minibatch, as
        Algorithm 2 does. Other samplers and estimators get
        ``fit_resample`` and ``partial_fit`` calls per minibatch; skfedida's
        estimators still take one step per resampled minibatch (also under
        Per-FedAvg, whose meta-gradient reads one step off each batch), while
        another library's estimator runs its ``partial_fit`` as it defines
        it (e.g. several steps for a minibatch larger than its
        ``batch_size``).
    resample : {"batch", "client"}, default="batch"
        Where the sampler is applied.
    aggregation : {"mean", "median", "trimmed_mean"}, aggregator or Flower \
strategy, default="mean"
        How the server combines the clients' parameters each round:
        ``"mean"`` (:class:`WeightedMean`, FedAvg's n_k-weighted mean),
        ``"median"`` (:class:`Median`, coordinate-wise, Flower's FedMedian)
        or ``"trimmed_mean"`` (:class:`TrimmedMean` with ``beta=0.2``,
        Flower's FedTrimmedAvg), or an aggregator object. The median and the
        trimmed mean bound what a minority of broken or hostile clients can
        do to the global model, at some cost in efficiency (they ignore row
        counts). An aggregator object is one of those three classes, each
        with the arithmetic of a Flower strategy: on Flower that strategy
        runs, with the same result to the last bit. :class:`QFedAvg`
        (q-FFL, Flower's ``QFedAvg``) weighs clients by their training loss
        to the power q, for performance parity across clients;
        :class:`FairFed` moves the clients' weights by how far their
        fairness gaps are from the federation's.
        A Flower server strategy (``flwr.serverapp.strategy.FedAdam()``,
        ``FedYogi``, ``FedAdagrad``, ``FedAvgM``, ``Krum``, ``Bulyan``...,
        or a subclass of the user's) runs its own ``configure_train`` and
        ``aggregate_train`` every round, on the round's global parameters and
        the admitted clients' replies in partition order: Flower's server
        optimisers with their moments across rounds (carried on by
        ``warm_start``), the same model on both backends to the last bit.
        Each fit works on a copy; the strategy passed is never changed.
        ``FedProx(proximal_mu=mu)`` also adds its proximal term
        ``(mu / 2) ||w - w_t||^2`` (every parameter array, from the round's
        global ``w_t``) to each client's training objective: skfedida's
        estimators only (in their compiled loops), under
        ``strategy="fedavg"``.
        Flower's DP wrappers are refused (their noise is unseeded: use
        ``dp``).
    max_update_norm : float, "median" or None, default=None
        Clip each client's update (its parameters minus the round's global
        parameters, all arrays as one vector) to this L2 norm before
        aggregating, as Flower's ``compute_clip_model_update`` does; with
        ``"median"``, to the median of the update norms of the round's
        replying clients, which needs no tuning and holds while fewer than
        half of them are hostile (with one client per round it clips
        nothing).
        Bounds what one client's update can move the global model (a client
        sending its parameters times 1e6 moves it by at most its weight
        times the bound) and composes with any ``aggregation``. Each
        client's norm before clipping is recorded in ``history_``
        (``update_norm``). Only for ``"fedavg"`` and ``"pfedavg"`` (other
        strategies send no updates: an error).
    dp : DifferentialPrivacy or None, default=None
        Client-level differential privacy: every update clipped at
        ``dp.clipping_norm``, Gaussian noise added to their sum, which is
        divided by the number of selected clients (every client counts the
        same); ``privacy_`` reports the epsilon spent. Needs
        ``aggregation="mean"``, ``max_update_norm=None`` and a strategy
        whose clients send updates. See :class:`DifferentialPrivacy`.
    secure_aggregation : SecureAggregation or None, default=None
        Mask what the clients send so that the server learns only sums over
        the clients that finished a round: the training rounds' updates (each
        clipped to ``max_update_norm``, which must be a float) and losses,
        the class counts of the prior and the final decision counts. The new
        global model is FedAvg's weighted mean of the clipped models, exact
        to about 1e-15 of the sum's bound; the global model starts from the
        server's template, not a client's; ``history_`` then holds no
        client's loss or update norm (``summed`` says its update entered the
        round's sum, and no client's validation metrics are recorded) and
        ``federated_metrics_`` the round's mean training loss and the
        validation metrics' means, summed the same way. In-process only,
        with ``aggregation="mean"``, ``strategy="fedavg"`` or ``"pfedavg"``
        and without ``dp``, rate constraints, ``sample_weight``, federated
        preprocessing, boosted trees, ``warm_start`` or a
        ``FederatedThresholdOptimizer`` around it for now: each is refused
        with an error naming it. See :class:`SecureAggregation`.
    prior_correction : {"weights"} or None, default="weights"
        Keep the model's probabilities calibrated when ``sampler`` changes
        the label balance. A sampler that balances outcomes (FairnessAwareROSE
        makes every (group, outcome) subgroup the same size, so every label
        share 1/2) shifts a model trained on its output toward predicting
        that balance: on Adult, FedIDA's positive rate at 0.5 doubles and its
        Brier score worsens by 30% without the correction. With
        ``"weights"``, each resampled row of class c is weighted by
        ``p_c / q_c`` (its class's share of the rows before resampling over
        its share after), passed to the estimator's ``partial_fit`` as
        ``sample_weight``: the weighted rows have the original prevalence,
        and the balance across and within sensitive groups that the sampler
        made is kept. None trains on the resampled rows unweighted (the
        paper's FedIDA). No effect without ``sampler``.
    prior_aggregation : {"mean", "median"}, default="mean"
        How ``class_prior_`` (the prevalence that
        ``threshold="prevalence"`` matches) combines the clients' counts of
        training rows per class. ``"mean"``: the pooled shares (the clients'
        shares weighted by their rows). The server checks every client's
        counts (whole, >= 0, adding up to its training rows), but a client
        that reports other labels for the same number of rows passes every
        check, and moves each share by up to its share of the rows (one
        client of three, holding a third of the rows and swapping its labels,
        moved the prevalence from 0.247 to 0.409 in
        ``tests/test_reply_gate.py``).
        ``"median"``: per class, the median of the clients' shares
        (normalised to sum to 1), which such a client cannot move beyond the
        range of the honest clients' shares, with three or more clients and
        fewer than half of them hostile; it ignores the clients' sizes, so with
        honest clients of unequal prevalence it differs from the pooled share.
    early_stopping_aggregation : {"mean", "median"}, default="mean"
        How a federation of boosted trees that stops early (the estimator's
        ``early_stopping``) combines the clients' losses. ``"mean"``: the
        pooled loss, scikit-learn's rule on the pooled rows (each client's
        loss weighted by its rows). No check can see a client whose reported
        losses are made up, and through the pooled loss one client can end
        the fit early. ``"median"``: every tree, each client's loss
        improvement since the tree ``n_iter_no_change`` before, and the
        median over the clients of those: the trees go on while the median
        improves by more than ``tol``, which clients fewer than half of the
        federation cannot move beyond the range of the honest clients'
        improvements. It ignores the clients' sizes, so it can stop at
        another tree than the pooled rule when every client is honest. In
        ``tests/federated/test_tree_consistency.py`` the honest federation
        of three clients grows 35 trees (``"mean"``) or 32 (``"median"``);
        one client reporting a validation loss 20% higher every tree ends
        it at 5 through the mean, at 16 through the median. Only for
        boosted trees.
    batch_size : int, default=128
        Minibatch size of per-batch resampling and of Per-FedAvg's steps.
    client_fraction : float in (0, 1], default=1.0
        Share of clients selected each round (at least one), drawn with
        ``random_state``.
    personalization_steps : int, default=1
        Per-FedAvg's adaptation steps for the personalised models.
    inner_learning_rate : float, default=0.01
        Per-FedAvg's adaptation step (alpha).
    outer_learning_rate : float, default=None
        Per-FedAvg's meta step (beta); by default the estimator's own step.
    validation_fraction : float in (0, 1), default=None
        Hold out this share of every client's rows (stratified) and record
        the global model's AUROC and demographic parity difference on it in
        ``history_`` after every round.
    on_client_error : {"raise", "skip"}, default="raise"
        A client whose training raises, or any of whose replies fails the
        server's checks: stop the fit with an error naming the client and the
        round or stage, or skip it for that round (the round aggregates the
        others; ``history_`` records the client with a ``skipped`` message).
        A reply before training (its class counts, its preprocessing
        statistics) that fails leaves the client out of what it feeds
        (``class_prior_``, the fitted preprocessing), recorded in
        ``history_`` as round 0 with its ``stage``. A round in which every
        selected client fails is an error either way.
    warm_start : bool, default=False
        Resume a fitted federation for ``n_rounds`` more rounds: the clients'
        estimators, the global parameters and every random stream carry on,
        so fitting 2 rounds and then 2 more gives the model of 4 rounds. Fit
        with the same data; ``history_`` grows.
    sensitive : str, int or list, default=None
        Columns of X holding the sensitive attributes (column mode). They stay
        in X for the estimator and the sampler, which must be built with the
        same ``sensitive=``.
    n_jobs : int, default=None
        Clients trained in parallel with joblib; results do not depend on it.
    verbose : int, default=0
        Show progress per round: a tqdm bar with the mean training loss when
        tqdm is installed (``skfedida[progress]``), otherwise a printed line.
        sklearn's callbacks (``set_callbacks``, e.g. ``ProgressBar`` or
        ``ScoringMonitor``) see the fit as a task whose subtasks are the
        rounds, each with its selected clients as subtasks; at the end of a
        round they get ``X``, ``y`` and the federation with that round's
        global model (``fitted_estimator``), and one that returns True stops
        training there.
    random_state : int, RandomState instance or None, default=None
        Seeds client selection and, through ``client_seeds_``, every client's
        estimator, sampler and batch order.

    Attributes
    ----------
    estimator_ : estimator
        The global model (for ``"local"``, the n_k-weighted average of the
        clients' models): a clone of ``estimator`` that holds the server's
        parameters. Its counters (``n_iter_``, ``t_``...) count no client's
        training, on both backends; the clients' models hold theirs. For
        ``"central"``, the pooled fit itself.
    client_estimators_ : dict
        Client id to its own model (``"local"``) or personalised model
        (``"pfedavg"``); empty otherwise.
    clients_ : ndarray
        Client ids, sorted.
    client_sizes_ : ndarray of int
        Training rows per client (after holding out validation rows).
    client_seeds_ : ndarray of int
        ``random_state`` given to each client's estimator.
    classes_ : ndarray
        Class labels.
    class_prior_ : ndarray of shape (n_classes,)
        Share of each class in the training rows (from the clients' label
        counts, combined by ``prior_aggregation``); ``class_prior_[-1]`` is
        the prevalence that ``evaluate_clients(..., threshold="prevalence")``
        matches.
    history_ : list of dict
        One record per round and client: ``round``, ``client``,
        ``train_loss`` (log-loss of the client's model on its rows after its
        local epochs) and, with ``validation_fraction``, ``val_roc_auc``,
        ``val_selection_rate``, ``val_brier``, ``val_dpd``, ``val_dpr``,
        ``val_dfpr`` and ``val_dppv`` of the global model's decisions at 0.5
        (NaN where undefined), and for ``"pfedavg"`` also
        ``val_personal_roc_auc`` and ``val_personal_dpd`` of the client's
        personalised model after that round; for ``"fedavg"`` and ``"pfedavg"``,
        ``update_norm`` (the L2 norm of the client's update before any
        clipping: one client's far larger norm is the mark of a broken or
        hostile client; not kept with ``dp``). Losses and metrics are the
        clients' own claims: the server cannot check them against rows it
        never sees.
    federated_metrics_ : dict
        With ``validation_fraction``: per round, the clients' validation
        metrics summarised as the weighted mean over the clients where they
        are defined (weights: validation rows) and, under ``<name>_median``,
        their median, which one client reporting false values cannot move
        beyond the honest clients' range; ``n_clients`` counts the clients
        that reported. Empty without ``validation_fraction``. With
        ``secure_aggregation``: per round, ``train_loss`` (the summed
        clients' training loss, weighted by their rows) and
        ``train_n_clients`` (the clients the round's sum covers), and the
        validation metrics' weighted means from their sums, without
        medians.
    privacy_ : Bunch or None
        With ``dp``: ``epsilon`` (at ``delta``), ``epsilon_by_round``,
        ``n_releases``, ``noise_multiplier``, ``clipping_norm`` and how
        epsilon was accounted; None without ``dp``.
    n_features_in_ : int
        Columns of X.
    feature_names_in_ : ndarray
        Column names of X, when they are strings.

    See Also
    --------
    skfedida.flower.make_client_app : The same client routine as a Flower
        ClientApp, for clients on separate machines.
    skfedida.flower.make_server_app : The matching Flower ServerApp.

    Examples
    --------
    >>> from skfedida.datasets import make_federated_classification
    >>> from skfedida.federated import FederatedEstimator
    >>> from skfedida.linear_model import FairPenaltyLogisticRegression
    >>> from skfedida.over_sampling import FairnessAwareROSE
    >>> data = make_federated_classification(2000, n_clients=3, random_state=0)
    >>> fedida = FederatedEstimator(
    ...     FairPenaltyLogisticRegression(fairness=1.0), n_rounds=3,
    ...     sampler=FairnessAwareROSE(), random_state=0)
    >>> fedida = fedida.fit(data.data, data.target, clients=data.clients,
    ...                     sensitive_features=data.sensitive)
    >>> fedida.predict(data.data[:3]).shape
    (3,)
    """

    __metadata_request__fit = {"clients": True, "sensitive_features": True}
    __metadata_request__predict = {"clients": True}
    __metadata_request__predict_proba = {"clients": True}
    __metadata_request__decision_function = {"clients": True}

    _parameter_constraints: dict = {
        "estimator": [
            HasMethods(["partial_fit", "predict", "predict_proba"]),
            Pipeline,
            HistGradientBoostingClassifier,
        ],
        "strategy": [StrOptions(set(_STRATEGIES))],
        "n_rounds": [Interval(numbers.Integral, 1, None, closed="left")],
        "local_epochs": [
            Interval(numbers.Integral, 1, None, closed="left"),
            "array-like",
        ],
        "sampler": [HasMethods(["fit_resample"]), None],
        "resample": [StrOptions({"batch", "client"})],
        "aggregation": [
            StrOptions({"mean", "median", "trimmed_mean"}),
            _Aggregator,
            HasMethods(["configure_train", "aggregate_train"]),
        ],
        "max_update_norm": [
            Interval(numbers.Real, 0, None, closed="neither"),
            StrOptions({"median"}),
            None,
        ],
        "dp": [DifferentialPrivacy, None],
        "secure_aggregation": [SecureAggregation, None],
        "prior_correction": [StrOptions({"weights"}), None],
        "prior_aggregation": [StrOptions({"mean", "median"})],
        "early_stopping_aggregation": [StrOptions({"mean", "median"})],
        "batch_size": [Interval(numbers.Integral, 1, None, closed="left")],
        "client_fraction": [Interval(numbers.Real, 0, 1, closed="right")],
        "personalization_steps": [Interval(numbers.Integral, 0, None, closed="left")],
        "inner_learning_rate": [Interval(numbers.Real, 0, None, closed="neither")],
        "outer_learning_rate": [
            Interval(numbers.Real, 0, None, closed="neither"),
            None,
        ],
        "validation_fraction": [Interval(numbers.Real, 0, 1, closed="neither"), None],
        "on_client_error": [StrOptions({"raise", "skip"})],
        "warm_start": ["boolean"],
        "sensitive": [str, numbers.Integral, list, tuple, None],
        "n_jobs": [numbers.Integral, None],
        "verbose": ["verbose"],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        estimator,
        *,
        strategy="fedavg",
        n_rounds=10,
        local_epochs=5,
        sampler=None,
        resample="batch",
        aggregation="mean",
        max_update_norm=None,
        dp=None,
        secure_aggregation=None,
        prior_correction="weights",
        prior_aggregation="mean",
        early_stopping_aggregation="mean",
        batch_size=128,
        client_fraction=1.0,
        personalization_steps=1,
        inner_learning_rate=0.01,
        outer_learning_rate=None,
        validation_fraction=None,
        on_client_error="raise",
        warm_start=False,
        sensitive=None,
        n_jobs=None,
        verbose=0,
        random_state=None,
    ):
        self.estimator = estimator
        self.strategy = strategy
        self.n_rounds = n_rounds
        self.local_epochs = local_epochs
        self.sampler = sampler
        self.resample = resample
        self.aggregation = aggregation
        self.max_update_norm = max_update_norm
        self.dp = dp
        self.secure_aggregation = secure_aggregation
        self.prior_correction = prior_correction
        self.prior_aggregation = prior_aggregation
        self.early_stopping_aggregation = early_stopping_aggregation
        self.batch_size = batch_size
        self.client_fraction = client_fraction
        self.personalization_steps = personalization_steps
        self.inner_learning_rate = inner_learning_rate
        self.outer_learning_rate = outer_learning_rate
        self.validation_fraction = validation_fraction
        self.on_client_error = on_client_error
        self.warm_start = warm_start
        self.sensitive = sensitive
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # What the federated model accepts is what its estimator (and
        # sampler) accept.
        inner = get_tags(self.estimator)
        tags.classifier_tags.multi_class = inner.classifier_tags.multi_class
        tags.input_tags.sparse = (
            inner.input_tags.sparse
            and self.sensitive is None  # sensitive columns need a DataFrame
            and not isinstance(self.sampler, FairnessAwareROSE)
        )
        # Boosted trees bin missing values; averaged models cannot train on them.
        tags.input_tags.allow_nan = is_boosted_trees(self.estimator)
        return tags

    # -- input handling ---------------------------------------------------------

    def _client_codes(self, clients, n_samples):
        """The clients checked and coded: ``(ids, codes)``, once per fit.

        A pipeline federation codes them for its preprocessing and hands
        them to the inner federation that trains its model (averaged or
        boosted trees) on the same rows (``_encoded_clients``, removed once
        read or once that fit ends), which does not code them again.
        """
        encoded = self.__dict__.pop("_encoded_clients", None)
        if encoded is not None and encoded.codes.shape[0] == n_samples:
            return encoded
        return client_ids(clients, n_samples)

    def _check_components(self):
        aggregation = self.early_stopping_aggregation
        if aggregation != "mean" and not is_boosted_trees(self.estimator):
            raise ValueError(
                f"early_stopping_aggregation={aggregation!r} applies to the early "
                f"stopping of boosted trees; {type(self.estimator).__name__} "
                "trains for n_rounds. Leave it at 'mean'."
            )
        if self.sensitive is None:
            return
        for component in (final_step(self.estimator), self.sampler):
            params = {} if component is None else component.get_params(deep=False)
            if "sensitive" in params and params["sensitive"] is None:
                raise ValueError(
                    f"FederatedEstimator(sensitive={self.sensitive!r}) reads "
                    f"sensitive columns from X, but {type(component).__name__} "
                    "has sensitive=None and would use them as inputs; give it "
                    "the same sensitive=."
                )

    @fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, *, clients=None, sensitive_features=None, sample_weight=None):
        """Train across clients.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            Rows of every client.
        y : array-like of shape (n_samples,)
            Labels.
        clients : array-like of shape (n_samples,), default=None
            Client id of every row. Rows of one client never reach another
            client's training. None makes every row one client's (client
            ``0``): the model trained without federation.
        sensitive_features : array-like, DataFrame or dict, default=None
            Sensitive attributes of every row (metadata mode), given to the
            sampler and to the estimator's ``partial_fit`` when it takes them.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights of the rows (survey weights, say). Each
            client trains on its own rows' weights (its estimator's
            ``partial_fit``, the boosted trees' ``fit``, must take
            ``sample_weight``; with metadata routing enabled, request it:
            ``estimator.set_partial_fit_request(sample_weight=True)``, or
            ``set_fit_request`` for the trees), a
            resampled row weighs what its seed row does (times the prior
            correction), and the class prior and a rate constraint's rates
            are weighted; the boosted trees also weigh their bin edges, as
            scikit-learn's own weighted fit. FedAvg still weighs each
            client's update by its rows. Held-out rows' metrics are
            weighted too. Not with a Pipeline's federated preprocessing yet.

        Returns
        -------
        self : object
            Fitted meta-estimator.
        """
        if sample_weight is not None:
            sample_weight = _checked_sample_weight(sample_weight, num_samples(X))
        if self.secure_aggregation is not None:
            self._check_secure_aggregation(sample_weight)
        if is_boosted_trees(self.estimator):
            self._check_weight_routing(sample_weight)
            return fit_trees(
                self, X, y, clients, sensitive_features, sample_weight=sample_weight
            )
        self._check_components()
        self._check_update_bound()  # bad options fail before training
        self._check_proximal_term()
        if is_pipeline(self.estimator):
            if sample_weight is not None:
                raise ValueError(
                    "sample_weight with a Pipeline: its federated preprocessing "
                    "statistics are not weighted yet. Fit the preprocessing "
                    "outside the federation, or pass no sample_weight."
                )
            return self._fit_pipeline(X, y, clients, sensitive_features)
        self._check_weight_routing(sample_weight)
        warn_if_pooled_preprocessing(self)
        for component in (self.estimator, self.sampler):
            # Before any client: the server reads the estimator's constraint
            # parameters itself (the clients' copies leave them unset).
            if _declares_constraints(component):
                clone(component)._validate_params()
        warm = self.warm_start and hasattr(self, "_federation_state")
        if warm:
            self._check_warm_start()
        # A continued federation keeps its inputs: checked, never reset, so a
        # mismatch fails before any fitted state changes.
        X_given = X  # what callbacks score the model on (the user's X)
        X, y, S, S_metrics = self._validated_rows(
            X, y, sensitive_features, reset=not warm
        )
        # sklearn's callback API: the fit is the root task, each round a subtask.
        callback_ctx = self._init_callback_context(max_subtasks=self.n_rounds)
        callback_ctx.call_on_fit_task_begin(estimator=self, X=X, y=y)
        n_samples = num_samples(X)
        # S is read and encoded once per fit; clients, minibatches, the
        # sampler, the estimator and the held-out metrics take these codes.
        groups = None if S is None else encode_groups(S, n_samples=n_samples)
        if S_metrics is None:
            groups_metrics = None
        elif S_metrics is S:
            groups_metrics = groups
        else:
            groups_metrics = encode_groups(S_metrics, n_samples=n_samples)
        # As a Flower client's (FederationPlan.client): what can be sent.
        for encoded in (groups, groups_metrics):
            if encoded is not None:
                check_sendable_labels(encoded)
        self._warn_if_penalty_inactive(S, groups)
        ids, codes = self._client_codes(clients, n_samples)
        if self.dp is not None:  # delta's bound needs the number of clients
            self.dp._check(n_clients=len(ids))
        if self.secure_aggregation is not None:
            check_secure_rounds(self, len(ids))
        if warm and not (
            np.array_equal(ids, self.clients_)
            and np.array_equal(np.unique(y), self.classes_)
        ):
            raise ValueError(
                "warm_start continues a federation: fit it again with the same "
                f"clients {self.clients_.tolist()} and classes "
                f"{self.classes_.tolist()}."
            )
        if warm:
            self._carry_parameters_over()
        else:
            self.__dict__.pop("_federation_state", None)
        classes = np.unique(y)
        if len(classes) > 2 and self._aggregator.report_metric is not None:
            raise ValueError(
                f"{type(self._aggregator).__name__} weighs clients by a fairness "
                "gap of decisions for one positive class; y has "
                f"{len(classes)} classes {classes.tolist()[:10]}. Use another "
                "aggregation for a multi-class outcome."
            )
        constraint_acts = is_constrained(self.estimator) and (
            self._column_mode() if groups is None else groups.n_groups > 1
        )
        if len(classes) > 2 and constraint_acts:
            raise ValueError(
                f"constraints={self.estimator.constraints!r} needs a binary "
                f"outcome; y has {len(classes)} classes (constraints=None "
                "fits them)."
            )
        self.classes_ = classes
        self.clients_ = ids
        n_clients = len(ids)
        epochs = self._client_epochs(n_clients)
        if not warm:
            self.client_seeds_ = _client_seeds(self.random_state, n_clients)

        train, validation = [], []
        for k in range(n_clients):
            rows = np.flatnonzero(codes == k)
            train_rows, held_out = _split_client(
                y[rows],
                self.validation_fraction,
                self.client_seeds_[k],
                ids[k].tolist(),
            )
            train.append(rows[train_rows])
            if held_out is not None:
                validation.append(rows[held_out])
        data = [
            self._client_data(X, y, S, groups, rows, sample_weight) for rows in train
        ]
        _check_client_weights(data, ids)
        for k, client in enumerate(data):
            if np.unique(client.y).size < 2:
                warnings.warn(
                    f"Client {ids[k].tolist()!r} has a single class in its "
                    "training rows; it trains anyway (its resampling is skipped).",
                    ClientDataWarning,
                    stacklevel=caller_stacklevel(),
                )
        self.client_sizes_ = np.array([client.n for client in data])
        gate = self._gate()
        trainer = self._trainer(
            self.classes_,
            self._sensitive_routing(
                clients=clients, sensitive_features=sensitive_features
            ),
        )
        validation = [
            _ClientData(
                safe_indexing(X, rows),
                y[rows],
                None if groups_metrics is None else groups_metrics.take(rows),
                None if sample_weight is None else sample_weight[rows],
            )
            for rows in validation
        ]
        for client, held_out in zip(data, validation, strict=False):
            # A client reports its fairness (FairFed) on its held-out rows.
            client.held_out = held_out
        if self.strategy == "central":
            models = None  # the pooled fit trains no client's model
        elif warm:
            models = self._federation_state["models"]
        else:
            models = [
                trainer.prime(self._client_estimator(seed), client)
                for seed, client in zip(self.client_seeds_, data, strict=True)
            ]
        # The server's model of no client's rows: initialisation replies are
        # held to its shapes, and estimator_ is it with the global parameters.
        template = None if models is None else self._new_template()
        counts = [class_counts(client.y, self.classes_) for client in data]
        admitted = initialise(self, data, counts, models, gate, template)
        self.class_prior_ = admitted_class_prior(self, data, counts, admitted)
        if self.strategy == "central":
            pooled = np.sort(np.concatenate(train))
            data_central = [self._client_data(X, y, S, groups, pooled, sample_weight)]
            run_rounds(
                self,
                trainer,
                data_central,
                np.array([epochs.max()]),
                self.client_seeds_[:1],
                central=True,
                callback_X=X_given,
                callback_y=y,
                validation=validation,
            )
        else:
            run_rounds(
                self,
                trainer,
                data,
                epochs,
                self.client_seeds_,
                callback_X=X_given,
                callback_y=y,
                ledger=gate.ledger,
                models=models,
                initial=admitted[0],
                template=template,
                validation=validation,
            )
        record_skips(self, gate)
        warn_if_degenerate(self, data, gate)
        warn_if_outlying_updates(self.history_, bounded=updates_bounded(self))
        callback_ctx.call_on_fit_task_end(estimator=self, X=X, y=y)
        return self

    def _check_secure_aggregation(self, sample_weight):
        """Refuse, naming it, what secure aggregation does not cover yet."""
        for what, present in (
            ("boosted trees", is_boosted_trees(self.estimator)),
            ("a Pipeline's federated preprocessing", is_pipeline(self.estimator)),
            ("rate constraints", is_constrained(self.estimator)),
            ("sample_weight", sample_weight is not None),
        ):
            if present:
                raise ValueError(
                    f"secure_aggregation with {what}: the server would read each "
                    "client's statistics; not covered yet."
                )
        check_secure_federation(self)

    def _gate(self):
        """The reply gate of one fit (its checks, the failure policy, records)."""
        return ReplyGate(
            self.on_client_error,
            name=lambda k: f"Client {self._client_id(k)!r}",
            client_id=self._client_id,
        )

    def _fit_pipeline(self, X, y, clients, sensitive_features):
        """Fit the pipeline's transformers from statistics, then the model."""
        pipeline = PipelineFederation(self)
        warm = self.warm_start and hasattr(self, "_pipeline_parts")
        validate_data(self, X, reset=not warm, skip_check_array=True)
        X_model, S = pipeline.split(X, sensitive_features)
        if warm:
            fitted_preprocessing, inner = self._pipeline_parts
            if pipeline.preprocessing_key() != self._pipeline_preprocessing:
                raise ValueError(
                    "warm_start continues the model on the fitted preprocessing; "
                    "its parameters changed since that fit. Set warm_start=False "
                    "to fit the preprocessing again."
                )
        # Checked and coded once: the preprocessing's statistics and the
        # inner federation's rounds (or trees) read the same codes.
        encoded = self._client_codes(clients, num_samples(X_model))
        if warm:
            # The final estimator's and every other parameter apply, as for a
            # FederatedEstimator without preprocessing.
            fresh = pipeline.inner().get_params(deep=False)
            fresh.pop("warm_start")
            inner.set_params(**fresh, warm_start=True)
        else:
            ids = encoded.ids
            gate = ReplyGate(
                self.on_client_error,
                name=lambda k: f"Client {ids[k].tolist()!r}",
                client_id=lambda k: ids[k].tolist(),
            )
            fitted_preprocessing, _ = pipeline.fit_preprocessing(
                X_model, clients, gate, encoded
            )
            self._preprocessing_skips = [{"round": 0, **r} for r in gate.records]
            inner = pipeline.inner()
        X_inner = pipeline.model_inputs(fitted_preprocessing, X_model)
        if getattr(self, "_skl_callbacks", None):
            # The rounds run in the inner federation, on the transformed rows.
            inner.set_callbacks(*self._skl_callbacks)
        inner._encoded_clients = encoded
        try:
            inner.fit(X_inner, y, clients=clients, sensitive_features=S)
        finally:
            # Unused if the inner fit stopped first: never kept or pickled.
            inner.__dict__.pop("_encoded_clients", None)
        pipeline.adopt(self, inner, fitted_preprocessing, X)
        # Clients left out of the statistics (on_client_error="skip").
        skips = getattr(self, "_preprocessing_skips", [])
        self.history_[:0] = [r for r in skips if r not in self.history_]
        return self

    @staticmethod
    def _client_data(X, y, S, groups, rows, sample_weight=None):
        """The training rows of one client, with their encoded groups and weights."""
        # The client holds its own rows' S only (in the form the user gave
        # it, for components that take S but not encoded groups).
        if rows.size and rows[-1] - rows[0] + 1 == rows.size and is_plain_array(X):
            # Rows stored together (sorted by client, no held-out rows): a view,
            # not a copy of every client's rows (the data's size again).
            rows_X = slice(int(rows[0]), int(rows[-1]) + 1)
        else:
            rows_X = rows
        return _ClientData(
            X[rows_X] if is_plain_array(X) else safe_indexing(X, rows),
            y[rows],
            None if groups is None else groups.take(rows),
            None if sample_weight is None else sample_weight[rows],
            source=None if S is None else take_rows(S, rows),
            positions=None if S is None else np.arange(rows.size),
        )

    def _check_warm_start(self):
        """A continued federation must keep its kind of model and strategy."""
        state = self._federation_state
        if state["models"] is None:
            raise ValueError(
                "warm_start continues a federation, but this one was fitted with "
                "secure_aggregation, which keeps no client's model: set "
                "warm_start=False to start anew."
            )
        fitted = type(state["models"][0])
        if type(self.estimator) is not fitted or self.strategy != state["strategy"]:
            raise ValueError(
                "warm_start continues a federation of "
                f"{fitted.__name__} with strategy={state['strategy']!r}; it "
                f"cannot continue as {type(self.estimator).__name__} with "
                f"strategy={self.strategy!r}. Set warm_start=False to start anew."
            )
        trained_with = state.get("dp")
        asked = None if self.dp is None else self.dp.get_params()
        if trained_with != asked:
            raise ValueError(
                "warm_start continues a federation whose rounds so far were "
                f"released with dp={trained_with!r}; it cannot continue with "
                f"dp={asked!r}: privacy_ accounts every released round with one "
                "mechanism. Set warm_start=False to start anew."
            )

    def _carry_parameters_over(self):
        """Apply the estimator's current hyperparameters to the clients' models.

        As sklearn's warm_start: parameters changed with ``set_params`` since
        the last fit apply to the continued fit; each client keeps its seed.
        """
        if _declares_constraints(self.estimator):
            clone(self.estimator)._validate_params()
        params = self.estimator.get_params(deep=False)
        params.pop("random_state", None)
        if self._server_constraint():
            params["constraints"] = None  # the server's, as at the start
        for model in self._federation_state["models"]:
            model.set_params(**params)

    def _column_mode(self):
        """Whether the estimator reads the sensitive attributes from X's columns."""
        return (
            self.sensitive is not None
            or getattr(self.estimator, "sensitive", None) is not None
        )

    def _warn_if_penalty_inactive(self, S, groups):
        """Warn once per fit when the estimator's fairness terms cannot act.

        Each client round silences the estimator's own warning (it would
        repeat for every client and round), so the federation says it once:
        for its ``fairness`` weight and its rate ``constraints``.
        """
        warn_if_penalty_inactive(self, None if groups is None else groups.n_groups)

    @staticmethod
    def _warn_inactive(inactive, reason):
        warnings.warn(
            f"{' and '.join(inactive)} has no effect: {reason}; the federation "
            "trains the unpenalised, unconstrained model.",
            InactivePenaltyWarning,
            stacklevel=caller_stacklevel(),
        )

    def _validated_rows(self, X, y, sensitive_features, *, reset, suffix=""):
        """X, y and the sensitive features of training (or evaluation) rows.

        The checks of ``fit``, also run by a Flower client on its own rows.
        Returns X for the estimator, y, S for the sampler and estimator (None
        in column mode, where they read the columns themselves) and S for the
        metrics. ``suffix`` names the arrays in errors (``"_eval"``).
        """
        validate_data(self, X, reset=reset, skip_check_array=True)
        n_samples = num_samples(X)
        if y is None:
            raise ValueError(
                "FederatedEstimator requires y to be passed, but the target y is None."
            )
        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == 1:
            y = column_or_1d(y, warn=True)
        if y.ndim != 1 or y.shape[0] != n_samples:
            raise ValueError(
                f"y{suffix} must hold one label per row of X{suffix}: {n_samples} "
                f"rows, got shape {y.shape}."
            )
        check_labels_complete(y, f"y{suffix}")
        _, S = resolve_sensitive(
            X,
            sensitive_features=sensitive_features,
            sensitive=self.sensitive,
            drop=False,
        )
        S_metrics = S
        if self.sensitive is not None:
            S = None  # the estimator and sampler read the columns themselves
        X = self._as_array(X)
        if reset:
            _check_sampler_input(self.sampler, X)
            if self.sensitive is None:
                # A network's limit too (its own first partial_fit, here a
                # zero-weight initialisation, does not check).
                largest = largest_input(self.estimator)
                owner = type(self if largest is None else self.estimator).__name__
                warn_if_unscaled(X, owner, largest=largest)
        return X, y, S, S_metrics

    def _client_epochs(self, n_clients):
        """``local_epochs`` as one count per client, checked."""
        epochs = np.asarray(self.local_epochs)
        if epochs.dtype.kind == "f" and np.all(np.isfinite(epochs)):
            whole = epochs == np.round(epochs)
        else:
            whole = np.full(epochs.shape, epochs.dtype.kind in "iu")
        if epochs.dtype.kind == "b" or not np.all(whole):
            # An epoch count of 1.9 would silently run 1 epoch.
            raise ValueError(
                "local_epochs must be whole numbers of epochs; got "
                f"{self.local_epochs!r}."
            )
        epochs = epochs.astype(np.int64)
        if epochs.ndim and epochs.shape != (n_clients,):
            raise ValueError(
                f"local_epochs has {epochs.size} values but there are {n_clients} "
                "clients."
            )
        if np.any(epochs < 1):
            raise ValueError(f"local_epochs must be >= 1; got {self.local_epochs!r}.")
        return np.broadcast_to(epochs, (n_clients,))

    def _plan(self, overrides):
        """The plan of this federation's clients and server, run apart (Flower).

        A validated copy with ``overrides`` (parameter values) applied; only
        strategies whose clients talk to a server can run apart.
        """
        federation = clone(self).set_params(**overrides)
        federation._validate_params()
        if federation.strategy not in COMMUNICATING:
            raise ValueError(
                "Flower runs strategy='fedavg' or 'pfedavg'; got "
                f"strategy={federation.strategy!r} ('local' and 'central' need no "
                "server: use FederatedEstimator directly)."
            )
        federation._check_components()
        federation._check_update_bound()
        if is_pipeline(federation.estimator):
            pipeline = PipelineFederation(federation)
            inner = pipeline.inner()
            inner._validate_params()
            return FederationPlan(inner, pipeline=pipeline)
        return FederationPlan(federation)

    def get_metadata_routing(self):
        """Get the metadata routing of this federation.

        ``fit`` consumes ``clients`` and ``sensitive_features`` itself and
        routes ``sensitive_features`` to the estimator's ``partial_fit`` and
        the sampler's ``fit_resample``, as each requests them (skfedida's
        estimators and sampler request them by default); ``predict``,
        ``predict_proba`` and ``decision_function`` consume ``clients``.
        Used when sklearn's metadata routing is enabled
        (``sklearn.set_config(enable_metadata_routing=True)``); otherwise a
        component is sent S when its method takes a ``sensitive_features``
        parameter.

        Returns
        -------
        routing : MetadataRouter
            A :class:`~sklearn.utils.metadata_routing.MetadataRouter`
            encapsulating the routing information.
        """
        router = MetadataRouter(owner=self).add_self_request(self)
        router.add(
            estimator=final_step(self.estimator),
            method_mapping=MethodMapping().add(
                caller="fit", callee=self._training_method()
            ),
        )
        if self.sampler is not None:
            router.add(
                sampler=self.sampler,
                method_mapping=MethodMapping().add(caller="fit", callee="fit_resample"),
            )
        return router

    def _training_method(self):
        """The estimator's method a client trains with: the trees grow in
        ``fit``'s federated form, every other model steps in ``partial_fit``."""
        return "fit" if is_boosted_trees(self.estimator) else "partial_fit"

    def _check_weight_routing(self, sample_weight):
        """Refuse rows' weights the estimator's training method would not take.

        The training method is ``partial_fit``, or ``fit`` for the boosted
        trees. With metadata routing enabled, scikit-learn's rules: the
        estimator must request them (``set_partial_fit_request(
        sample_weight=True)``, ``set_fit_request`` for the trees); otherwise
        the method must have a ``sample_weight`` parameter.
        """
        if sample_weight is None:
            return
        estimator = final_step(self.estimator)
        method = self._training_method()
        name = f"{type(estimator).__name__}.{method}"
        if routing_enabled():
            # Raises sklearn's error for a weight the estimator left unset.
            routed = process_routing(self, "fit", sample_weight=sample_weight)
            if "sample_weight" not in getattr(routed.estimator, method):
                raise ValueError(
                    f"sample_weight is passed, and {name} does not request it "
                    f"(set_{method}_request(sample_weight=False)): a federation "
                    "trains every client on its rows' weights. Request it, or "
                    "pass no sample_weight."
                )
        elif not _accepts(getattr(estimator, method), "sample_weight"):
            raise TypeError(
                f"sample_weight is passed, and {name} takes no sample_weight: "
                "a federation trains every client on its rows' weights "
                "through it."
            )

    def _sensitive_routing(self, **fit_params):
        """Whether S is routed to the sampler and to the estimator."""
        if not routing_enabled():
            return UNROUTED
        # Raises sklearn's errors for metadata a child has not said it takes.
        passed = {
            name: value for name, value in fit_params.items() if value is not None
        }
        routed = process_routing(self, "fit", **passed)
        estimator = "sensitive_features" in routed.estimator.partial_fit
        sampler = (
            "sensitive_features" in routed.sampler.fit_resample
            if self.sampler is not None
            else None
        )
        return SensitiveRouting(sampler=sampler, estimator=estimator)

    def _trainer(self, classes, sensitive_routing=UNROUTED):
        """The client routine with this federation's parameters."""
        return _Trainer(
            sampler=self.sampler,
            resample=self.resample,
            batch_size=self.batch_size,
            classes=classes,
            strategy=self.strategy,
            inner_learning_rate=self.inner_learning_rate,
            outer_learning_rate=self.outer_learning_rate,
            prior_correction=self.prior_correction,
            sensitive_routing=sensitive_routing,
            proximal_mu=float(self._aggregator.proximal_mu),
        )

    def _as_array(self, X):
        """Model inputs as one float64 array (metadata mode), validated once.

        float64 whatever X's dtype: the server averages float64 parameters,
        and an estimator primed on float32 rows (sklearn's SGDClassifier)
        could not continue from them.
        """
        if self.sensitive is not None or is_boosted_trees(self.estimator):
            # Boosted trees read their own columns (categories, NaN).
            return X
        with columns_named_on_error(X, type(self).__name__):
            return check_array(X, accept_sparse="csr", dtype=np.float64, input_name="X")

    # -- the federation -------------------------------------------------------

    def _template(self, seed, n_features, feature_names, classes):
        """A fitted estimator of the federation's kind, built without client data.

        Primed on zero rows: its parameters are the server's to set, and its
        counters (``n_iter_``, ``t_``...) count no client's training.
        """
        estimator = self._client_estimator(seed)
        X = np.zeros((len(classes), n_features))
        if feature_names is not None and self.sensitive is not None:
            # Column mode: the clients' estimators read a DataFrame (their
            # own columns); otherwise they see arrays (``_as_array``), and a
            # template with feature names would warn when given one.
            import pandas as pd

            X = pd.DataFrame(X, columns=feature_names)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return self._trainer(
                classes, self._sensitive_routing(sensitive_features=None)
            ).prime(estimator, _ClientData(X, np.asarray(classes), None))

    def _new_template(self):
        """The server's template of this fit (``_template`` of client 0's seed)."""
        return self._template(
            self.client_seeds_[0],
            self.n_features_in_,
            getattr(self, "feature_names_in_", None),
            self.classes_,
        )

    def _global_estimator(
        self, global_parameters, models=None, central=False, template=None
    ):
        """``estimator_`` on both backends: the template with the global parameters.

        Central training's model is the pooled fit itself, counters included.
        ``template``: this fit's, when it has one (it is left as it is).
        """
        if central:
            return assign_parameters(clone_fitted(models[0]), global_parameters)
        template = self._new_template() if template is None else clone_fitted(template)
        return assign_parameters(template, global_parameters)

    def _client_estimator(self, seed):
        estimator = clone(self.estimator)
        if "random_state" in estimator.get_params(deep=False):
            estimator.set_params(random_state=int(seed))
        if self._server_constraint():
            # The server holds the rate constraint and sends each round's
            # term; a client steps no multipliers of its own.
            estimator.set_params(constraints=None)
        return estimator

    def _server_constraint(self):
        """Whether the server holds a rate constraint (rounds that communicate)."""
        return is_constrained(self.estimator) and self.strategy in COMMUNICATING

    def _server(self, central=False, ledger=None, *, client_id=None, name=None):
        """The server side of this federation (rounds, aggregation, history).

        In-process by default; a run by message (``_lifecycle``) gives its
        clients' ids and names (``client_id``, ``name``), and its rounds
        run one client's reply at a time, as its messages arrive.
        """
        if client_id is None:
            client_id = (lambda k: "pooled") if central else self._client_id
        return RoundServer(
            ledger=ledger,
            strategy=self.strategy,
            aggregator=self._aggregator,
            client_fraction=self.client_fraction,
            on_client_error=self.on_client_error,
            n_jobs=self.n_jobs if name is None else None,
            verbose=self.verbose,
            client_id=client_id,
            name=name,
            max_update_norm=self.max_update_norm,
            dp=self.dp,
            secure=self.secure_aggregation,
        )

    def _held_out_rows(self, y, client_rows):
        """Each client's held-out rows among ``client_rows``, as ``fit`` split them.

        ``client_rows[k]`` are the indices of client k's rows in ``y``, the
        rows this federation was fitted on; None without
        ``validation_fraction``. What a FederatedThresholdOptimizer counts
        in-process, as a Flower client counts its held-out rows.
        """
        check_is_fitted(self)
        if self.validation_fraction is None:
            return None
        held_out = []
        for k, rows in enumerate(client_rows):
            _, kept_out = _split_client(
                np.asarray(y)[rows],
                self.validation_fraction,
                self.client_seeds_[k],
                self.clients_[k].tolist(),
            )
            held_out.append(rows[kept_out])
        return held_out

    def _client_id(self, k):
        return self.clients_[k].tolist()

    @property
    def _aggregator(self):
        return check_aggregation(self.aggregation)

    def _check_proximal_term(self):
        """A FedProx aggregation: its client term only where clients add it."""
        mu = self._aggregator.proximal_mu
        if not mu:
            return
        name = f"aggregation={self._aggregator!r} with proximal_mu={mu!r}"
        if self.strategy != "fedavg":
            raise ValueError(
                f"{name} adds FedProx's proximal term to the clients' FedAvg "
                f"rounds; strategy={self.strategy!r} has none. Use "
                "strategy='fedavg', or proximal_mu=0."
            )
        model = self.estimator[-1] if is_pipeline(self.estimator) else self.estimator
        if not isinstance(model, BaseFairClassifier):
            raise TypeError(
                f"{name}: the proximal term is added to the training objective "
                "of skfedida's estimators (FairPenaltyLogisticRegression, "
                f"FairMLPClassifier); {type(model).__name__} trains with its "
                "own. Use FedProx(proximal_mu=0) or FedAvg() with it."
            )

    def _check_update_bound(self):
        check_update_bound(
            self.max_update_norm,
            self.dp,
            strategy=self.strategy,
            aggregator=self._aggregator,
        )

    # -- prediction -----------------------------------------------------------

    def _dispatch(self, method, X, clients):
        check_is_fitted(self)
        if is_pipeline(self.estimator):
            # The fitted pipeline validates its own (raw) input.
            validate_data(self, X, reset=False, skip_check_array=True)
        else:
            # The array check first: a 1-D X gets sklearn's "Reshape your data".
            X_checked = self._as_array(X)
            validate_data(self, X, reset=False, skip_check_array=True)
            X = X_checked
        if (
            clients is not None
            and not self.client_estimators_
            and self.strategy in ("pfedavg", "local")
        ):
            # A Flower fit: the clients' own models stay on their nodes (D11
            # of issue 48: this used to pass without a word).
            warnings.warn(
                "clients= asks for each client's own model, but this "
                f"strategy={self.strategy!r} federation keeps none (fitted on "
                "Flower, its clients' models stay on their nodes): every row "
                "gets the global model.",
                ClientDataWarning,
                stacklevel=caller_stacklevel(),
            )
        if clients is None or not self.client_estimators_:
            return getattr(self.estimator_, method)(X)
        clients = np.asarray(clients)
        if clients.shape[0] != num_samples(X):
            raise ValueError(
                f"clients has {clients.shape[0]} ids for {num_samples(X)} rows."
            )
        unknown = sorted(
            set(np.unique(clients).tolist()) - set(self.client_estimators_)
        )
        if unknown:
            warnings.warn(
                f"Clients {unknown} were not seen in fit; their rows get the "
                "global model.",
                ClientDataWarning,
                stacklevel=caller_stacklevel(),
            )
        output = None
        for client in np.unique(clients):
            rows = np.flatnonzero(clients == client)
            model = self.client_estimators_.get(
                client.item() if hasattr(client, "item") else client, self.estimator_
            )
            values = getattr(model, method)(safe_indexing(X, rows))
            if output is None:
                output = np.empty(
                    (clients.shape[0], *values.shape[1:]), dtype=values.dtype
                )
            output[rows] = values
        return output

    def predict(self, X, *, clients=None):
        """Predicted labels: global model, or each row's client's own model.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            Rows to predict.
        clients : array-like of shape (n_samples,), default=None
            Client of every row; with ``"pfedavg"`` (personalised models) or
            ``"local"`` (own models) each row goes to its client's model.
            Unknown clients get the global model, with a warning, and so does
            every row of a federation fitted on Flower, whose clients' models
            stay on their nodes.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predicted class of every row, one of ``classes_``.
        """
        return self._dispatch("predict", X, clients)

    def predict_proba(self, X, *, clients=None):
        """Class probabilities; see :meth:`predict` for ``clients``.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            Rows to predict.
        clients : array-like of shape (n_samples,), default=None
            Client of every row.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Probability of each class for every row, columns in the order of
            ``classes_``.
        """
        return self._dispatch("predict_proba", X, clients)

    def decision_function(self, X, *, clients=None):
        """Decision scores; see :meth:`predict` for ``clients``.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            Rows to score.
        clients : array-like of shape (n_samples,), default=None
            Client of every row.

        Returns
        -------
        scores : ndarray of shape (n_samples,)
            Decision score of every row, from the model that predicts it.
        """
        return self._dispatch("decision_function", X, clients)


def _checked_sample_weight(sample_weight, n_samples):
    """``sample_weight`` as float64, one finite weight >= 0 per row, or an error."""
    weight = np.asarray(sample_weight)
    if weight.dtype.kind not in "biuf":
        raise ValueError(
            f"sample_weight must hold numbers; got an array of dtype {weight.dtype}."
        )
    weight = weight.astype(np.float64)
    if weight.shape != (n_samples,):
        raise ValueError(
            f"sample_weight must hold one weight per row of X: {n_samples} rows, "
            f"got shape {weight.shape}."
        )
    if weight.size and not (np.isfinite(weight).all() and weight.min() >= 0):
        raise ValueError(
            "sample_weight must hold finite, non-negative weights; it holds "
            f"{weight[~(np.isfinite(weight) & (weight >= 0))][0]!r}."
        )
    return weight


def _check_client_weights(data, ids):
    """Refuse a client whose training rows all weigh nothing."""
    for k, client in enumerate(data):
        if client.weight is not None and not client.weight.sum() > 0:
            raise ValueError(
                f"Client {ids[k].tolist()!r}'s training rows all have zero "
                "sample_weight: it has nothing to train on. Give its rows "
                "weight, or leave the client out."
            )


def warn_if_penalty_inactive(federation, n_groups):
    """Warn when a federation's fairness terms cannot act, on either backend.

    ``n_groups`` is the number of sensitive groups the server knows of: in
    the rows it was given in-process, or in the groups the clients declared
    at initialisation on Flower; None when no sensitive attribute was given.
    An estimator that reads its groups from its own columns is not judged
    without them.

    Parameters
    ----------
    federation : FederatedEstimator
        The federation whose estimator's ``fairness`` and ``constraints``
        are judged.
    n_groups : int or None
        The sensitive groups the server knows of; None: no sensitive
        attribute was given.
    """
    params = federation.estimator.get_params(deep=False)
    fairness = params.get("fairness", 0)
    inactive = []
    if isinstance(fairness, numbers.Real) and fairness > 0:
        inactive.append(f"fairness={fairness}")
    if is_constrained(federation.estimator):
        inactive.append(f"constraints={params['constraints']!r}")
    if not inactive:
        return
    if n_groups is None and not federation._column_mode():
        reason = "no sensitive attributes were given (pass sensitive_features)"
    elif n_groups == 1:
        reason = "the sensitive attributes take a single value"
    else:
        return
    federation._warn_inactive(inactive, reason)


def make_plan(federation, overrides=None):
    """A validated copy of an unfitted federation, with overrides, as a plan.

    Parameters
    ----------
    federation : FederatedEstimator
        The unfitted federation a Flower app runs.
    overrides : dict, default=None
        Parameters of the run that replace the federation's (the run
        config's rounds, epochs and seed).

    Returns
    -------
    plan : FederationPlan
        What the server and every client need to run the federation.
    """
    if not isinstance(federation, FederatedEstimator):
        raise TypeError(
            "federation must be an unfitted skfedida.federated.FederatedEstimator; "
            f"got {type(federation).__name__}."
        )
    return federation._plan(overrides or {})
