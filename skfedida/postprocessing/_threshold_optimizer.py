"""Group-specific decision thresholds, found from the clients' score histograms.

Post-processing in the manner of Hardt et al. (2016) and fairlearn's
``ThresholdOptimizer``, federated: every client counts its rows' scores per
(sensitive group, label) on a shared grid of bins; the server adds the
counts, and from them alone finds, for every group, a threshold (randomised
between two thresholds where needed) such that the decisions satisfy the
constraint and the objective is the largest. No score, label or sensitive
value leaves a client, only counts per bin.
"""

from __future__ import annotations

import inspect
import numbers
import warnings

import numpy as np
from scipy.special import expit
from sklearn.base import (
    BaseEstimator,
    ClassifierMixin,
    MetaEstimatorMixin,
    clone,
)
from sklearn.metrics import accuracy_score
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from .._compat import HasMethods, Interval, StrOptions, fit_context
from .._doc_links import DocLinkMixin
from .._gate._policy import ReplyGate
from .._gate._rows import histogram_claim_problem
from .._groups import client_ids, encode_groups
from ..exceptions import OperatingPointWarning, caller_stacklevel
from ..metrics._operating_point import score_bins
from ..metrics._registry import CONSTRAINT_ALIASES, CONSTRAINTS

__all__ = ["FederatedThresholdOptimizer"]

#: Largest ``n_bins`` and ``grid_size`` (see ``_parameter_constraints``).
_MAX_GRID = 10**6

#: The rate each constraint equalises across groups (the x axis of its
#: trade-off curve); "equalized_odds" equalises both rates of the ROC curve,
#: whose x axis is the FPR, the last of them.
_CONSTRAINED_RATE = {name: rates[-1] for name, rates in CONSTRAINTS.items()}

#: fairlearn's objectives are named after their metric functions.
_OBJECTIVE_ALIASES = {
    "accuracy_score": "accuracy",
    "balanced_accuracy_score": "balanced_accuracy",
}


def _cumulative(positives, negatives):
    """True and false positives of the rules "positive iff bin >= k", every k."""
    tp = np.concatenate((np.cumsum(positives[::-1])[::-1], [0.0]))
    fp = np.concatenate((np.cumsum(negatives[::-1])[::-1], [0.0]))
    return tp, fp


def _rates(positives, negatives):
    """Rates of the rules "positive iff bin >= k", k = 0 .. n_bins, of one group.

    Returns selection rate, TPR and FPR of every rule (k = 0 selects all
    rows, k = n_bins none), each an array of length n_bins + 1.
    """
    tp, fp = _cumulative(positives, negatives)
    n_positive, n_negative = tp[0], fp[0]
    n = n_positive + n_negative
    selection = (tp + fp) / n if n > 0 else np.zeros_like(tp)
    tpr = tp / n_positive if n_positive > 0 else np.full_like(tp, np.nan)
    fpr = fp / n_negative if n_negative > 0 else np.full_like(fp, np.nan)
    return selection, tpr, fpr


def _upper_hull(x, y):
    """Indices of the upper concave hull of points (x, y), by increasing x."""
    order = np.lexsort((-y, x))
    hull = []
    for i in order.tolist():
        if hull and x[hull[-1]] == x[i]:
            continue  # same x, lower (or equal) y
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            # b is under the segment a -> i (or on it): not a vertex.
            cross = (x[b] - x[a]) * (y[i] - y[a]) - (y[b] - y[a]) * (x[i] - x[a])
            if cross >= 0:
                hull.pop()
            else:
                break
        hull.append(i)
    return np.asarray(hull, dtype=np.intp)


def _curve_on_grid(x, y, grid):
    """The hull of (x, y) on a grid of x: value, and the mix of two rules.

    Returns ``value`` (the hull's y at each grid x, NaN outside its x range),
    and for each grid x the two rules ``first``, ``second`` and the weight
    ``p_first`` of the first that attain it.
    """
    hull = _upper_hull(x, y)
    hull_x, hull_y = x[hull], y[hull]
    right = np.clip(np.searchsorted(hull_x, grid, side="left"), 1, hull.size - 1)
    if hull.size == 1:
        right = np.zeros_like(grid, dtype=np.intp)
    left = np.maximum(right - 1, 0)
    width = hull_x[right] - hull_x[left]
    p_first = np.divide(
        hull_x[right] - grid, width, out=np.ones_like(grid), where=width > 0
    )
    p_first = np.clip(p_first, 0.0, 1.0)
    value = p_first * hull_y[left] + (1.0 - p_first) * hull_y[right]
    outside = (grid < hull_x[0] - 1e-12) | (grid > hull_x[-1] + 1e-12)
    value[outside] = np.nan
    return value, hull[left], hull[right], p_first


def _best_with_tolerance(values, weights, tolerance, grid):
    """Grid index per group maximising the weighted sum, the range of x <= tolerance.

    fairlearn's ``maximize_objective_with_tolerance``, vectorised: for every
    window of grid x of width ``tolerance``, each group takes its best x in
    the window.
    """
    weighted = np.where(np.isnan(values), -np.inf, values * weights[:, None])
    width = int(np.floor(tolerance / (grid[1] - grid[0]) + 1e-9)) + 1
    width = min(width, grid.size)
    windows = np.lib.stride_tricks.sliding_window_view(weighted, width, axis=1)
    best_in_window = windows.argmax(axis=2)  # (groups, starts)
    starts = np.arange(windows.shape[1])
    chosen = starts[None, :] + best_in_window
    totals = np.take_along_axis(weighted, chosen, axis=1).sum(axis=0)
    spread = chosen.max(axis=0) - chosen.min(axis=0)
    # Largest objective; among equal ones, the smallest spread of x.
    best = np.lexsort((spread, -totals))[0]
    return chosen[:, best], totals[best]


class FederatedThresholdOptimizer(
    DocLinkMixin, MetaEstimatorMixin, ClassifierMixin, BaseEstimator
):
    """Group-specific decision thresholds for a federated model, from histograms.

    Post-processing (Hardt et al., 2016, as fairlearn's ``ThresholdOptimizer``)
    for a federation. Each client counts the scores of its rows (by default
    the model's probability of the positive class; see ``predict_method``)
    per (sensitive group, label) on a
    shared grid of ``n_bins`` equal bins on [0, 1]; the server sums the
    counts (or keeps each client's, ``per_client=True``) and finds, for every
    group, a rule "positive iff score >= t", randomised between two
    thresholds where needed, such that the decisions satisfy ``constraints``
    (the constrained rates of the groups differ by at most ``tolerance``) and
    ``objective`` is the largest. Only bin counts leave a client.

    The trade-off curve of each group (its objective against its constrained
    rate, over all thresholds and their randomisations) is the upper concave
    hull of the rules at the bin edges, evaluated on ``grid_size + 1`` rates
    in [0, 1], as fairlearn does with its exact scores; the thresholds are
    therefore exact up to the bin grid (1 / n_bins in score). For
    ``"equalized_odds"`` the common (FPR, TPR) point lies under every group's
    ROC hull; a group above it mixes its rule with a constant positive rate,
    as fairlearn does. ``"balanced_accuracy"`` is fairlearn's: the groups'
    balanced accuracies weighted by their shares of the rows.

    Decisions need the sensitive attributes at prediction, and they are
    random where a group's rule is randomised (reproducible with
    ``random_state``). There is no ``predict_proba``: the chance that a
    randomised decision is positive is not a probability of the outcome, and
    the model's own probabilities are ``estimator_.predict_proba``.

    Read more in the :ref:`User Guide <user_guide>`.

    Parameters
    ----------
    estimator : estimator object
        A binary classifier (scored by ``predict_method``), fitted on the clients
        (``prefit=True``, e.g. a fitted
        :class:`~skfedida.federated.FederatedEstimator`) or to be fitted with
        ``fit(X, y, clients=..., sensitive_features=...)``.
    constraints : {"demographic_parity", "equalized_odds", \
"true_positive_rate_parity", "false_positive_rate_parity", \
"true_negative_rate_parity", "false_negative_rate_parity"}, \
default="demographic_parity"
        The rates made equal across groups: selection rate, both TPR and FPR,
        TPR, or FPR; fairlearn's TNR (FNR) parity is FPR (TPR) parity, and its
        ``"selection_rate_parity"`` is demographic parity.
    objective : {"accuracy", "balanced_accuracy", "accuracy_score", \
"balanced_accuracy_score"}, default="accuracy"
        What the thresholds maximise under the constraint (fairlearn's names,
        with ``_score``, are the same objectives).
    tolerance : float in [0, 1], default=0.0
        Largest allowed difference of the constrained rate between groups
        (as fairlearn's ``tol``; not for ``"equalized_odds"``).
    selection_rate : float in [0, 1], {"model", "prevalence"} or None, \
default=None
        Choose the operating point whose overall selection rate is nearest to
        this one instead of the one of best ``objective``. ``"model"`` keeps
        the model's own rate, that of its decisions at 0.5 on the rows
        ``fit`` is given (to the bin grid), and ``"prevalence"`` the share of
        positive rows, both read off the clients' counts (each client's own
        with ``per_client=True``). Where base rates are extreme, the best
        accuracy under parity is often an extreme rate (97-99.9% selected,
        or about 1%, as fairlearn's choice is too): keep the model's rate to
        change who is selected, not how many.
    prefit : bool, default=False
        Whether ``estimator`` is already fitted; otherwise ``fit`` fits a
        clone of it first, on the same rows.
    per_client : bool, default=False
        One set of thresholds per client, each from that client's counts,
        instead of one for the federation. ``predict`` then needs ``clients``.
    n_bins : int in [2, 10**6], default=1000
        Number of equal score bins on [0, 1] every client counts in.
    grid_size : int in [10, 10**6], default=1000
        Number of steps of the grid of constrained rates (memory grows as
        groups times ``grid_size``; rates finer than 1e-6 are finer than a
        federation below a million rows per group can realise).
    predict_method : {"auto", "predict_proba", "decision_function", \
"predict"}, default="auto"
        The model's score whose thresholds are chosen, as fairlearn's
        parameter: the positive class's probability, the decision function
        (through the logistic function, which keeps its order, onto the
        [0, 1] bins: fine for a log-odds, coarse for a decision function on a
        much smaller or larger scale, whose scores then fall into a few
        bins), or the decision itself (0 or 1). ``"auto"`` takes the
        first of these the model has. A Flower federation's model is scored
        with ``predict_proba``.
    random_state : int, RandomState instance or None, default=None
        Draws of the randomised decisions in ``predict``.

    Attributes
    ----------
    estimator_ : estimator object
        The fitted model.
    classes_ : ndarray of shape (2,)
        Class labels; ``classes_[1]`` is the positive class.
    groups_ : tuple
        The sensitive groups (tuples of attribute values), in code order.
    histograms_ : ndarray of shape (n_groups, 2, n_bins)
        The summed counts per group, label (negative, positive) and bin: all
        the server saw (per client, ``client_histograms_``).
    client_histograms_ : ndarray of shape (n_clients, n_groups, 2, n_bins)
        Each client's counts.
    clients_ : ndarray of shape (n_clients,)
        Client ids.
    rules_ : dict
        Arrays describing each group's rule (``thresholds`` of shape
        ``(n_groups, 2)`` or ``(n_clients, n_groups, 2)``, the probability of
        the first, ``p_first``, and the mix with a constant, ``p_constant``
        and ``constant``).
    constrained_rates_ : ndarray of shape (n_groups,) or (n_clients, n_groups)
        Each group's constrained rate at the chosen rules (on the counts):
        its FPR for TNR parity and its TPR for FNR parity.
    objective_value_ : float or ndarray of shape (n_clients,)
        The objective at the chosen rules (on the counts).
    history_ : list of dict
        One record per client whose counts failed the server's checks and
        were left out (``stage``, ``client``, ``skipped``: what was wrong);
        empty when every client's counts were used.

    See Also
    --------
    fairlearn.postprocessing.ThresholdOptimizer : The centralised method.
    skfedida.federated.evaluate_clients : Per-client metrics of the decisions.

    Notes
    -----
    The server checks every client's counts before it adds them up, in-process
    and on Flower with the same rules: whole numbers >= 0, of the shape the
    groups, labels and bins ask for, adding up to the rows the client
    evaluates on (and, on Flower, agreeing with the client's earlier counts
    of the same rows). A client whose counts fail is that client's failure:
    an error naming it, or, with the federation's
    ``on_client_error="skip"``, left out (its rows then get the federation's
    thresholds with ``per_client=True``). Counts of the right form can still
    be false (a client that reports its positives as negatives): what one
    client moves is bounded by its share of each group's rows, since a
    group's rates are the row-weighted means of the clients' rates.

    Examples
    --------
    >>> import numpy as np
    >>> from skfedida.federated import FederatedEstimator
    >>> from skfedida.linear_model import FairPenaltyLogisticRegression
    >>> from skfedida.metrics import demographic_parity_difference
    >>> from skfedida.postprocessing import FederatedThresholdOptimizer
    >>> rng = np.random.default_rng(0)
    >>> group = rng.integers(0, 2, 2000)
    >>> X = rng.normal(size=(2000, 3)) + group[:, None]
    >>> y = (X[:, 0] + rng.normal(size=2000) > 0.8).astype(int)
    >>> clients = rng.integers(0, 4, 2000)
    >>> model = FederatedEstimator(
    ...     FairPenaltyLogisticRegression(fairness=0), n_rounds=3, random_state=0)
    >>> post = FederatedThresholdOptimizer(model, random_state=0).fit(
    ...     X, y, clients=clients, sensitive_features=group)
    >>> decisions = post.predict(X, sensitive_features=group)
    >>> gap = demographic_parity_difference(y, decisions, sensitive_features=group)
    >>> bool(gap < 0.03)
    True
    """

    __metadata_request__fit = {"clients": True, "sensitive_features": True}
    __metadata_request__predict = {"clients": True, "sensitive_features": True}
    __metadata_request__score = {"clients": True, "sensitive_features": True}

    _parameter_constraints: dict = {
        # A score to threshold (see predict_method).
        "estimator": [
            HasMethods(["fit", "predict_proba"]),
            HasMethods(["fit", "decision_function"]),
            HasMethods(["fit", "predict"]),
        ],
        "constraints": [StrOptions(set(_CONSTRAINED_RATE) | set(CONSTRAINT_ALIASES))],
        "objective": [
            StrOptions({"accuracy", "balanced_accuracy"} | set(_OBJECTIVE_ALIASES))
        ],
        "predict_method": [
            StrOptions({"auto", "predict_proba", "decision_function", "predict"})
        ],
        "tolerance": [Interval(numbers.Real, 0, 1, closed="both")],
        "selection_rate": [
            Interval(numbers.Real, 0, 1, closed="both"),
            StrOptions({"model", "prevalence"}),
            None,
        ],
        "prefit": ["boolean"],
        "per_client": ["boolean"],
        # Upper bounds: each client sends n_groups x 2 x n_bins counts and
        # the server holds a few (n_groups, grid_size + 1) arrays; 10**6 is
        # rates and scores to 1e-6, finer than a federation below a million
        # rows per group can tell apart, in 8 MB per group and array (10**9
        # was a MemoryError naming no parameter).
        "n_bins": [Interval(numbers.Integral, 2, _MAX_GRID, closed="both")],
        "grid_size": [Interval(numbers.Integral, 10, _MAX_GRID, closed="both")],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        estimator,
        *,
        constraints="demographic_parity",
        objective="accuracy",
        tolerance=0.0,
        selection_rate=None,
        prefit=False,
        per_client=False,
        n_bins=1000,
        grid_size=1000,
        predict_method="auto",
        random_state=None,
    ):
        self.estimator = estimator
        self.constraints = constraints
        self.objective = objective
        self.tolerance = tolerance
        self.selection_rate = selection_rate
        self.prefit = prefit
        self.per_client = per_client
        self.n_bins = n_bins
        self.grid_size = grid_size
        self.predict_method = predict_method
        self.random_state = random_state

    @property
    def _constraint(self):
        return CONSTRAINT_ALIASES.get(self.constraints, self.constraints)

    @property
    def _objective(self):
        return _OBJECTIVE_ALIASES.get(self.objective, self.objective)

    def _check_predict_method(self, estimator):
        """Refuse a predict_method the estimator does not have, before fitting."""
        if self.predict_method != "auto" and not hasattr(
            estimator, self.predict_method
        ):
            raise ValueError(
                f"predict_method={self.predict_method!r}, but "
                f"{type(estimator).__name__} has no {self.predict_method}; use "
                "'auto' or a method it has."
            )

    def _score_method(self):
        """The fitted model's method that ``predict_method`` names."""
        if self.predict_method != "auto":
            return self.predict_method
        return next(
            (
                name
                for name in ("predict_proba", "decision_function")
                if hasattr(self.estimator_, name)
            ),
            "predict",
        )

    def _scores(self, X):
        """The fitted model's scores of X on [0, 1], by ``predict_method``."""
        method = self._score_method()
        if method == "predict_proba":
            return self.estimator_.predict_proba(X)[:, 1]
        if method == "decision_function":
            return expit(np.asarray(self.estimator_.decision_function(X), float))
        return (np.asarray(self.estimator_.predict(X)) == self.classes_[1]).astype(
            np.float64
        )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.non_deterministic = True
        return tags

    # -- fitting ------------------------------------------------------------

    @fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, *, clients=None, sensitive_features=None):
        """Find each group's thresholds from the clients' score histograms.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Rows of every client (held-out rows with ``prefit=True`` give
            thresholds that are not fitted to the model's own training rows).
            With ``prefit=False`` and a federation that holds rows out
            (``FederatedEstimator(validation_fraction=...)``), the counts are
            of each client's held-out rows, as a Flower client counts them.
        y : array-like of shape (n_samples,)
            Binary labels.
        clients : array-like of shape (n_samples,), default=None
            The client of every row (None: one client).
        sensitive_features : array-like, DataFrame or dict
            Sensitive attributes of every row.

        Returns
        -------
        self : object
            Fitted post-processor.
        """
        if sensitive_features is None:
            raise ValueError(
                "FederatedThresholdOptimizer chooses thresholds per sensitive "
                "group: pass sensitive_features to fit."
            )
        self._check_options()
        if getattr(self.estimator, "secure_aggregation", None) is not None:
            # Its counts would reach the server per client, in the clear.
            raise ValueError(
                "FederatedThresholdOptimizer around a federation with "
                "secure_aggregation: each client's score histograms would reach "
                "the server in the clear; they are not summed securely yet."
            )
        if self.prefit:
            check_is_fitted(self.estimator)
            self.estimator_ = self.estimator
        else:
            fit_params = self._fit_params(clients, sensitive_features)
            self._check_predict_method(self.estimator)
            self.estimator_ = clone(self.estimator)
            self.estimator_.fit(X, y, **fit_params)
        classes = np.asarray(self.estimator_.classes_)
        if classes.size != 2:
            raise ValueError(
                "FederatedThresholdOptimizer post-processes binary decisions; the "
                f"model has classes {classes.tolist()}."
            )
        self.classes_ = classes
        y = np.asarray(y)
        n_samples = y.shape[0]
        unknown = ~np.isin(y, classes)
        if unknown.any():
            raise ValueError(
                f"y has labels {np.unique(y[unknown]).tolist()[:5]} that are not "
                f"the model's classes {classes.tolist()}."
            )
        groups = encode_groups(sensitive_features, n_samples=n_samples)
        self.groups_ = groups.labels
        self.sensitive_names_ = groups.names
        ids, codes = client_ids(clients, n_samples)
        self.clients_ = ids
        scores = self._scores(X)
        # What each client sends: its counts per (group, label, bin), of
        # the rows a Flower client counts: its held-out rows when the
        # federation fitted here held some out, else every row given.
        client_rows = [np.flatnonzero(codes == k) for k in range(ids.size)]
        held_out = getattr(self.estimator_, "_held_out_rows", None)
        if not self.prefit and held_out is not None:
            client_rows = held_out(y, client_rows) or client_rows
        histograms = [
            client_histogram(
                scores[rows],
                (y[rows] == classes[1]).astype(np.intp),
                groups.codes[rows],
                groups.n_groups,
                self.n_bins,
            )
            for rows in client_rows
        ]
        # The gate a Flower server applies to the same replies.
        gate = ReplyGate(
            getattr(self.estimator_, "on_client_error", "raise"),
            name=lambda k: f"Client {ids[k].tolist()!r}",
            client_id=lambda k: ids[k].tolist(),
        )
        for k, rows in enumerate(client_rows):
            # What a Flower client declares at initialisation: its groups on
            # its evaluation rows and their sizes.
            gate.ledger.declare_groups(
                k,
                "eval",
                dict(zip(groups.labels, groups.take(rows).counts(), strict=True)),
            )
        admitted = set(
            gate.admit(
                "histogram query",
                [
                    (k, self._histogram_problem(histograms[k], k, rows.size, gate))
                    for k, rows in enumerate(client_rows)
                ],
            )
        )
        self.history_ = gate.records
        empty = np.zeros((groups.n_groups, 2, self.n_bins))
        return self._fit_counts(
            np.stack([h if k in admitted else empty for k, h in enumerate(histograms)])
        )

    def _histogram_problem(self, counts, k, n_rows, gate):
        """One client's histogram against the gate's rules and its groups."""
        return histogram_claim_problem(
            counts,
            self.groups_,
            n_bins=self.n_bins,
            ledger=gate.ledger,
            k=k,
            rowset="eval",
            declared_rows=n_rows,
        )

    def _fit_params(self, clients, sensitive_features):
        """What the estimator's fit takes of the clients and sensitive features.

        Any classifier fits: one whose fit takes no ``sensitive_features``
        (scikit-learn's) is fitted on the rows alone, as fairlearn's
        ``ThresholdOptimizer`` fits it. Rows of several clients are fitted
        across them only by an estimator that takes ``clients`` (a
        :class:`~skfedida.federated.FederatedEstimator`); another would pool
        them, which this class does not do silently.
        """
        try:
            parameters = inspect.signature(self.estimator.fit).parameters
        except (TypeError, ValueError):  # no signature to read: pass neither
            parameters = {}

        def takes(name):
            # Named, not through **kwargs: Pipeline.fit(**params) and the
            # meta-estimators pass them on to steps that refuse them.
            return name in parameters and parameters[name].kind in (
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                inspect.Parameter.KEYWORD_ONLY,
            )

        fit_params = {}
        if takes("sensitive_features"):
            fit_params["sensitive_features"] = sensitive_features
        if clients is not None:
            if not takes("clients"):
                name = type(self.estimator).__name__
                raise TypeError(
                    f"{name}.fit takes no clients, so it would be fitted on the "
                    "pooled rows of every client. Wrap the model in "
                    "skfedida.federated.FederatedEstimator (for an estimator "
                    "with partial_fit) to fit it across the clients, fit "
                    f"{name} yourself and pass it with prefit=True, or leave "
                    "clients out to fit it on pooled rows (as fairlearn's "
                    "ThresholdOptimizer does)."
                )
            fit_params["clients"] = clients
        return fit_params

    def _check_options(self):
        if self.tolerance and self.selection_rate is not None:
            raise ValueError(
                "selection_rate fixes the common rate of every group; it cannot "
                "be combined with tolerance > 0."
            )
        if self.tolerance and self._constraint == "equalized_odds":
            raise ValueError(
                "tolerance applies to one constrained rate; "
                "constraints='equalized_odds' equalises two. Use tolerance=0."
            )

    def _fit_counts(self, client_histograms):
        """The server's part: rules from the clients' counts, summed or each.

        ``client_histograms`` has shape (n_clients, n_groups, 2, n_bins), in
        the order of ``clients_`` and ``groups_``; in-process and on Flower
        the same arrays give the same rules.
        """
        if not hasattr(self, "history_"):
            self.history_ = []
        self.client_histograms_ = np.asarray(client_histograms, dtype=np.float64)
        self.histograms_ = self.client_histograms_.sum(axis=0)
        self._warn_unranked(self.histograms_)
        federation = self._solve(self.histograms_)
        if not self.per_client:
            self.rules_, self.constrained_rates_, self.objective_value_ = federation
            return self
        n_groups = self.histograms_.shape[0]
        solved = [
            self._solve(histogram, fallback=federation)
            if histogram.any()
            # A client without counts (left out by the gate): the
            # federation's rules, no rates of its own.
            else (
                {key: np.copy(value) for key, value in federation[0].items()},
                np.full(n_groups, np.nan),
                float("nan"),
            )
            for histogram in self.client_histograms_
        ]
        self.rules_ = {
            key: np.stack([rules[key] for rules, _, _ in solved])
            for key in federation[0]
        }
        self.constrained_rates_ = np.stack([rates for _, rates, _ in solved])
        self.objective_value_ = np.array([value for _, _, value in solved])
        return self

    def _warn_unranked(self, histogram):
        """Warn when the score grid cannot rank most pairs of rows.

        A (positive, negative) pair of rows of one group in the same bin is
        a tie no threshold separates. When more than half of the pairs are
        ties, the rules select whole bins at random and not the rows the
        model ranks higher: a ``decision_function`` of tiny spread (its
        sigmoid near one value) puts every row in one bin, for any
        ``n_bins``. Scores of 0 and 1 (``predict``) are ties by design.
        """
        if self._score_method() == "predict":
            return
        negatives, positives = histogram[:, 0], histogram[:, 1]
        pairs = float(np.sum(negatives.sum(axis=1) * positives.sum(axis=1)))
        if not pairs:
            return
        tied = float(np.sum(negatives * positives))
        if tied <= 0.5 * pairs:
            return
        crowded = int(np.argmax(histogram.sum(axis=(0, 1))))
        warnings.warn(
            f"{tied / pairs:.0%} of the pairs of a positive and a negative row "
            f"of one sensitive group have scores in the same bin of "
            f"n_bins={self.n_bins} (the most crowded holds "
            f"[{crowded / self.n_bins:g}, {(crowded + 1) / self.n_bins:g})), "
            "so the thresholds cannot rank them and its decisions are drawn "
            "by bin, not by the model's ranking. A decision_function of tiny "
            "spread does this (its sigmoid is nearly one value): use "
            "predict_method='predict_proba' (e.g. wrap the model in "
            "CalibratedClassifierCV), standardise the features, or raise "
            "n_bins.",
            OperatingPointWarning,
            stacklevel=caller_stacklevel(),
        )

    def _target_rate(self, histogram):
        """The overall selection rate to keep, from counts (None: none).

        ``"model"``: the rows whose score bin is at or above 0.5's, i.e. the
        model's decisions at 0.5 to the bin grid; ``"prevalence"``: the
        positive rows.
        """
        if not isinstance(self.selection_rate, str):
            return self.selection_rate
        total = histogram.sum()
        if not total:
            return None
        if self.selection_rate == "prevalence":
            return float(histogram[:, 1].sum() / total)
        # With an odd n_bins, 0.5 splits the middle bin: half its rows count
        # (a rate the randomised rules can meet).
        half = self.n_bins // 2
        above = histogram[:, :, self.n_bins - half :].sum()
        if self.n_bins % 2:
            above += 0.5 * histogram[:, :, half].sum()
        return float(above / total)

    def _solve(self, histogram, fallback=None):
        """Rules of every group from summed counts (n_groups, 2, n_bins)."""
        n_groups = histogram.shape[0]
        target = self._target_rate(histogram)
        grid = np.linspace(0.0, 1.0, self.grid_size + 1)
        sizes = histogram.sum(axis=(1, 2))
        present = sizes > 0
        rate = _CONSTRAINED_RATE[self._constraint]
        curves = np.full((n_groups, grid.size), np.nan)
        first = np.zeros((n_groups, grid.size), dtype=np.intp)
        second = np.zeros((n_groups, grid.size), dtype=np.intp)
        p_first = np.ones((n_groups, grid.size))
        selection_curves = np.full((n_groups, grid.size), np.nan)
        roc = {}
        for g in np.flatnonzero(present):
            negatives, positives = histogram[g, 0], histogram[g, 1]
            selection, tpr, fpr = _rates(positives, negatives)
            # As fairlearn: a group of one label (one row, say) has no
            # trade-off to read; under demographic parity its rule would be
            # a quantile of its few scores, which its test rows do not keep.
            undefined = bool(np.isnan(tpr[0]) or np.isnan(fpr[0]))
            if undefined and fallback is not None:
                # This client's rows of the group have one label: its rates
                # are undefined here, so it takes the federation's rule.
                present[g] = False
                continue
            if undefined:
                missing = "positive" if np.isnan(tpr[0]) else "negative"
                raise ValueError(
                    f"Sensitive group {self.groups_[g]} has no {missing} rows "
                    f"({int(sizes[g])} rows in all), so its thresholds cannot be "
                    "learned (fairlearn's ThresholdOptimizer refuses it too): "
                    "merge it with another group, or fit on more rows of it."
                )
            if self._constraint == "equalized_odds":
                # Points (0, 0) and (1, 1) are rules k = n_bins and k = 0.
                roc[g] = _curve_on_grid(fpr, tpr, grid)
                continue
            x = {
                "selection_rate": selection,
                "true_positive_rate": tpr,
                "false_positive_rate": fpr,
            }[rate]
            if self._objective == "accuracy":
                y_obj = _group_accuracy(positives, negatives)
            else:
                y_obj = 0.5 * (tpr + 1.0 - fpr)
            curves[g], first[g], second[g], p_first[g] = _curve_on_grid(x, y_obj, grid)
            a, b, p = first[g], second[g], p_first[g]
            selection_curves[g] = p * selection[a] + (1 - p) * selection[b]
        weights = sizes / sizes.sum()
        if self._constraint == "equalized_odds":
            rules, rates, value = self._solve_equalized_odds(
                histogram, roc, grid, present, target
            )
            return self._with_fallback(rules, present, fallback), rates, value
        if target is not None:
            overall = np.nansum(selection_curves * weights[:, None], axis=0)
            feasible = ~np.isnan(curves[present]).any(axis=0)
            distance = np.where(feasible, np.abs(overall - target), np.inf)
            index = np.full(n_groups, int(np.argmin(distance)))
            value = float(np.nansum(curves[:, index[0]] * weights))
        elif self.tolerance:
            index = np.zeros(n_groups, dtype=np.intp)
            chosen, value = _best_with_tolerance(
                curves[present], weights[present], self.tolerance, grid
            )
            index[present] = chosen
        else:
            total = np.where(
                np.isnan(curves[present]).any(axis=0),
                -np.inf,
                np.nansum(curves[present] * weights[present, None], axis=0),
            )
            best = int(np.argmax(total))
            index = np.full(n_groups, best)
            value = float(total[best])
        rows = np.arange(n_groups)
        rules = {
            "thresholds": np.stack([first[rows, index], second[rows, index]], axis=1)
            / self.n_bins,
            "p_first": p_first[rows, index],
            "p_constant": np.zeros(n_groups),
            "constant": np.zeros(n_groups),
        }
        rates = np.where(present, grid[index], np.nan)
        return self._with_fallback(rules, present, fallback), rates, float(value)

    @staticmethod
    def _with_fallback(rules, present, fallback):
        """A client's rules, the federation's for groups it cannot solve for."""
        if fallback is not None and not present.all():
            for key in rules:
                rules[key][~present] = fallback[0][key][~present]
        return rules

    def _solve_equalized_odds(self, histogram, roc, grid, present, target):
        n_groups = histogram.shape[0]
        values = np.stack([roc[g][0] for g in sorted(roc)])
        lowest = np.nanmin(values, axis=0)  # under every group's ROC hull
        n_negative = histogram[:, 0].sum()
        n_positive = histogram[:, 1].sum()
        n = n_negative + n_positive
        if self._objective == "accuracy":
            score = (n_positive * lowest + n_negative * (1.0 - grid)) / n
        else:
            score = 0.5 * (lowest + 1.0 - grid)
        if target is not None:
            overall = (n_positive * lowest + n_negative * grid) / n
            best = int(np.nanargmin(np.abs(overall - target)))
        else:
            best = int(np.nanargmax(score))
        fpr, tpr = grid[best], lowest[best]
        rules = {
            "thresholds": np.zeros((n_groups, 2)),
            "p_first": np.ones(n_groups),
            "p_constant": np.zeros(n_groups),
            "constant": np.full(n_groups, fpr),
        }
        for g, (value, a, b, p) in roc.items():
            rules["thresholds"][g] = (a[best] / self.n_bins, b[best] / self.n_bins)
            rules["p_first"][g] = p[best]
            own = value[best]
            # Mixed with a positive rate of fpr (a point on the diagonal) to
            # come down from the group's hull to the common point.
            if own - fpr > 1e-12:
                rules["p_constant"][g] = (own - tpr) / (own - fpr)
        rates = np.where(present, fpr, np.nan)
        return rules, rates, float(score[best])

    # -- decisions ------------------------------------------------------------

    def _positive_probability(self, X, sensitive_features, clients):
        """Chance that each row's decision is positive (the rules, before draws)."""
        check_is_fitted(self)
        if sensitive_features is None:
            raise ValueError(
                "FederatedThresholdOptimizer's decisions depend on the sensitive "
                "group: pass sensitive_features to predict. (A scorer named by a "
                "string, scoring='accuracy', calls predict(X) alone: in "
                "GridSearchCV or cross_validate leave scoring=None, which calls "
                "score(X, y, sensitive_features=...) with metadata routing on, "
                "and set error_score='raise' so that a failed score stops the "
                "search.)"
            )
        scores = self._scores(X)
        n_samples = scores.shape[0]
        groups = encode_groups(sensitive_features, n_samples=n_samples)
        fitted_names = list(self.sensitive_names_)
        if sorted(map(str, groups.names)) != sorted(map(str, fitted_names)):
            raise ValueError(
                f"sensitive_features has attributes {list(groups.names)}; the "
                f"thresholds were fitted on {fitted_names}."
            )
        # The same attributes in another order: read each label in fit's order.
        order = [list(map(str, groups.names)).index(str(n)) for n in fitted_names]
        labels = [tuple(label[j] for j in order) for label in groups.labels]
        known = {label: code for code, label in enumerate(self.groups_)}
        unknown = [label for label in labels if label not in known]
        if unknown:
            raise ValueError(
                f"Sensitive group {unknown[0]} was not seen in fit, so it has no "
                f"thresholds; the groups are {list(self.groups_)}."
            )
        codes = np.array([known[label] for label in labels], dtype=np.intp)[
            groups.codes
        ]
        rules = self.rules_
        if self.per_client:
            if clients is None:
                raise ValueError(
                    "per_client=True: pass clients to predict, the client of "
                    "every row, to use its thresholds."
                )
            clients = np.asarray(clients)
            position = np.searchsorted(self.clients_, clients)
            position = np.clip(position, 0, self.clients_.size - 1)
            if not np.array_equal(self.clients_[position], clients):
                raise ValueError(
                    f"clients holds ids not seen in fit; the clients are "
                    f"{self.clients_.tolist()}."
                )
            index = (position, codes)
        else:
            index = (codes,)
        thresholds = rules["thresholds"][index]
        p_first = rules["p_first"][index]
        # Scores are binned as the counts were: a score in bin j passes every
        # threshold <= j / n_bins.
        binned = score_bins(scores, self.n_bins)
        above_first = binned >= np.round(thresholds[:, 0] * self.n_bins)
        above_second = binned >= np.round(thresholds[:, 1] * self.n_bins)
        rule = p_first * above_first + (1.0 - p_first) * above_second
        p_constant = rules["p_constant"][index]
        return (1.0 - p_constant) * rule + p_constant * rules["constant"][index]

    def predict(self, X, *, sensitive_features=None, clients=None, random_state=None):
        """Decide every row with its group's (randomised) thresholds.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Rows to decide on.
        sensitive_features : array-like, DataFrame or dict
            Sensitive attributes of every row (required).
        clients : array-like of shape (n_samples,), default=None
            The client of every row; required with ``per_client=True``.
        random_state : int, RandomState instance or None, default=None
            Draws of the randomised decisions; ``self.random_state`` when
            None.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Decided class of every row, one of ``classes_``.
        """
        probability = self._positive_probability(X, sensitive_features, clients)
        rng = check_random_state(
            self.random_state if random_state is None else random_state
        )
        positive = rng.random_sample(probability.shape[0]) < probability
        return self.classes_[positive.astype(np.intp)]

    def score(self, X, y, sample_weight=None, *, sensitive_features=None, clients=None):
        """Accuracy of the decisions on the given rows.

        The score ``GridSearchCV`` and ``cross_validate`` use with
        ``scoring=None``: with metadata routing on, they pass the rows'
        ``sensitive_features`` (and ``clients``) here, which this method
        requests, as ``fit`` and ``predict`` do.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Rows to decide on.
        y : array-like of shape (n_samples,)
            True labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights.
        sensitive_features : array-like, DataFrame or dict
            Sensitive attributes of every row (required).
        clients : array-like of shape (n_samples,), default=None
            The client of every row; required with ``per_client=True``.

        Returns
        -------
        score : float
            Share of the rows (weighted) whose decision is their label.
        """
        decisions = self.predict(
            X, sensitive_features=sensitive_features, clients=clients
        )
        return float(accuracy_score(y, decisions, sample_weight=sample_weight))


def server_postprocessor(postprocessor):
    """A checked clone of a FederatedThresholdOptimizer, for a server to fit.

    What a server other than ``fit`` (the Flower ServerApp) does first:
    refuse another type, then check the parameters and their combination as
    ``fit`` does.

    Parameters
    ----------
    postprocessor : FederatedThresholdOptimizer
        The user's, unfitted; it is not changed.

    Returns
    -------
    post : FederatedThresholdOptimizer
        An unfitted clone whose parameters passed the checks.
    """
    if not isinstance(postprocessor, FederatedThresholdOptimizer):
        raise TypeError(
            "postprocessor must be a FederatedThresholdOptimizer; got "
            f"{type(postprocessor).__name__}."
        )
    post = clone(postprocessor)
    post._validate_params()
    post._check_options()
    if post.predict_method not in ("auto", "predict_proba"):
        raise ValueError(
            "On Flower the clients count the federated model's probabilities: "
            f"predict_method={post.predict_method!r} is for a model fitted in "
            "one place; use 'auto' or 'predict_proba'."
        )
    return post


def fit_from_client_counts(post, fitted, counts, *, groups, sensitive_names, history):
    """Fit ``post`` (from ``server_postprocessor``) from the clients' histograms.

    The same arrays give the same rules in-process and on Flower.

    Parameters
    ----------
    post : FederatedThresholdOptimizer
        From ``server_postprocessor``.
    fitted : FederatedEstimator
        The fitted federation whose scores the clients counted.
    counts : ndarray of shape (n_clients, n_groups, 2, n_bins)
        Every client's score histogram per group and label, in the order of
        ``fitted.clients_`` and ``groups``.
    groups : list of tuple
        The groups' labels (one value per sensitive attribute).
    sensitive_names : list of str
        The sensitive attributes' names.
    history : list of dict
        The histogram round's records (clients left out, and why).

    Returns
    -------
    post : FederatedThresholdOptimizer
        ``post``, fitted.
    """
    post.history_ = history
    post.estimator_ = fitted
    post.classes_ = fitted.classes_
    post.groups_ = groups
    post.sensitive_names_ = sensitive_names
    post.clients_ = fitted.clients_
    return post._fit_counts(counts)


def client_histogram(scores, labels, groups, n_groups, n_bins):
    """One client's counts per (group, label, bin): all it sends."""
    cells = (groups * 2 + labels) * n_bins + score_bins(scores, n_bins)
    counts = np.bincount(cells, minlength=n_groups * 2 * n_bins)
    return counts.reshape(n_groups, 2, n_bins).astype(np.float64)


def operating_points(post, client=None):
    """Each group's trade-off curve from the counts, and its point at its rule.

    What :class:`~skfedida.plotting.ThresholdOptimizerDisplay` draws, from the
    summed counts (``histograms_``) or, with ``client``, that client's counts
    and rules (``per_client=True``).

    Parameters
    ----------
    post : FederatedThresholdOptimizer
        A fitted optimizer.
    client : client id, default=None
        One of ``post.clients_``: its own counts (and, with ``per_client``,
        its own rules); None: the federation's.

    Returns
    -------
    points : dict
        ``groups`` (``post.groups_``); ``x_label`` and ``y_label``; per group,
        ``curves[g]`` = ``(x, y)``, the rules "positive iff score bin >= k",
        k = 0 .. n_bins (None for a group without rows or whose rates are
        undefined): the constrained rate and the group's objective, or FPR
        and TPR under equalized odds; ``points`` of shape (n_groups, 2),
        each group's point at its chosen (randomised) rule; ``common_rate``,
        the constrained rate the groups share (NaN where they share none:
        within a ``tolerance``, or one client's rows under the federation's
        rules);
        ``equalized_odds``, whether the curves are ROC curves.
    """
    check_is_fitted(post)
    histograms, rules = post.histograms_, post.rules_
    rates = np.asarray(post.constrained_rates_, dtype=float)
    if client is not None:
        matches = np.flatnonzero(np.asarray(post.clients_) == client)
        if matches.size == 0:
            raise ValueError(
                f"client={client!r} is not one of the fitted clients "
                f"{np.asarray(post.clients_).tolist()}."
            )
        k = int(matches[0])
        histograms = post.client_histograms_[k]
        if post.per_client:
            rules = {key: value[k] for key, value in rules.items()}
            rates = rates[k]
    elif post.per_client:
        raise ValueError(
            "With per_client=True every client has its own rules: name one with "
            f"client= (one of {np.asarray(post.clients_).tolist()})."
        )
    constraint, objective = post._constraint, post._objective
    rate = _CONSTRAINED_RATE[constraint]
    n_groups, _, n_bins = histograms.shape
    curves, points = [], np.full((n_groups, 2), np.nan)
    for g in range(n_groups):
        negatives, positives = histograms[g, 0], histograms[g, 1]
        if not histograms[g].any():
            curves.append(None)
            continue
        selection, tpr, fpr = _rates(positives, negatives)
        if constraint == "equalized_odds":
            x, y = fpr, tpr
        else:
            x = {
                "selection_rate": selection,
                "true_positive_rate": tpr,
                "false_positive_rate": fpr,
            }[rate]
            y = (
                _group_accuracy(positives, negatives)
                if objective == "accuracy"
                else 0.5 * (tpr + 1.0 - fpr)
            )
        if np.isnan(x).all() or np.isnan(y).all():
            curves.append(None)
            continue
        curves.append((x, y))
        first, second = np.rint(rules["thresholds"][g] * n_bins).astype(int)
        p, p_constant = rules["p_first"][g], rules["p_constant"][g]
        constant = rules["constant"][g]
        # The randomised rule: the mix of two threshold rules, then (under
        # equalized odds) of a constant rule selecting `constant` of the rows,
        # whose every rate is `constant`.
        mixed = [
            (1 - p_constant) * (p * r[first] + (1 - p) * r[second])
            + (p_constant * constant)
            for r in (selection, tpr, fpr)
        ]
        chosen_selection, chosen_tpr, chosen_fpr = mixed
        if constraint == "equalized_odds":
            points[g] = chosen_fpr, chosen_tpr
            continue
        chosen_x = {
            "selection_rate": chosen_selection,
            "true_positive_rate": chosen_tpr,
            "false_positive_rate": chosen_fpr,
        }[rate]
        if objective == "accuracy":
            accuracy = _group_accuracy(positives, negatives)
            chosen_y = p * accuracy[first] + (1 - p) * accuracy[second]
        else:
            chosen_y = 0.5 * (chosen_tpr + 1.0 - chosen_fpr)
        points[g] = chosen_x, chosen_y
    labels = {
        "selection_rate": "selection rate",
        "true_positive_rate": "true positive rate",
        "false_positive_rate": "false positive rate",
    }
    objective_label = "accuracy" if objective == "accuracy" else "balanced accuracy"
    finite = rates[np.isfinite(rates)]
    # A shared rate only where the groups share one: not within a tolerance,
    # nor on one client's rows under the federation's rules.
    shared = (
        finite.size and np.ptp(finite) <= 1e-12 and (client is None or post.per_client)
    )
    return {
        "groups": post.groups_,
        "x_label": "false positive rate"
        if constraint == "equalized_odds"
        else labels[rate],
        "y_label": "true positive rate"
        if constraint == "equalized_odds"
        else f"{objective_label} within the group",
        "curves": curves,
        "points": points,
        "common_rate": float(finite[0]) if shared else float("nan"),
        "equalized_odds": constraint == "equalized_odds",
    }


def _group_accuracy(positives, negatives):
    """Accuracy of every rule "positive iff bin >= k" within one group."""
    tp, fp = _cumulative(positives, negatives)
    n = tp[0] + fp[0]
    return (tp + (fp[0] - fp)) / n
