"""A fully connected network with the fairness penalty on its logit."""

from __future__ import annotations

import itertools
import numbers
import warnings

import numpy as np
import scipy.sparse as sp
from scipy.special import expit
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.utils import check_random_state
from sklearn.utils.extmath import safe_sparse_dot

from .._compat import Interval, StrOptions, fit_context
from ..exceptions import caller_stacklevel
from ._fair_base import (
    ARMIJO,
    MAX_HALVINGS,
    BaseFairClassifier,
    Batch,
    Scores,
    compiled_loop_inputs,
    non_finite_gradient,
    proximal_loop_inputs,
    warn_if_unscaled,
)
from ._penalty import PENALTY_CODES

try:  # built from _sgd_fast.pyx at install; the numpy loop is its reference
    from ._sgd_fast import mlp_sgd_steps
except ImportError:  # pragma: no cover - a source tree that was not built
    mlp_sgd_steps = None

#: The activations' codes in the compiled loop.
_ACTIVATION_CODES = {"relu": 0, "tanh": 1, "logistic": 2, "identity": 3}

__all__ = ["FairMLPClassifier"]

_ACTIVATIONS = {
    "relu": (lambda z: np.maximum(z, 0.0), lambda z, a: (z > 0).astype(z.dtype)),
    "tanh": (np.tanh, lambda z, a: 1.0 - a**2),
    "logistic": (expit, lambda z, a: a * (1.0 - a)),
    "identity": (lambda z: z, lambda z, a: np.ones_like(z)),
}


class _Adam:
    """Adam (Kingma & Ba, 2015) on a list of arrays, updated in place."""

    def __init__(self, params, learning_rate, beta_1, beta_2, epsilon):
        self.learning_rate = learning_rate
        self.beta_1, self.beta_2, self.epsilon = beta_1, beta_2, epsilon
        self.t = 0
        self.m = [np.zeros_like(w) for w in params]
        self.v = [np.zeros_like(w) for w in params]

    def step(self, params, gradients):
        self.t += 1
        correction = np.sqrt(1 - self.beta_2**self.t) / (1 - self.beta_1**self.t)
        step = self.learning_rate * correction
        for w, g, m, v in zip(params, gradients, self.m, self.v, strict=True):
            m *= self.beta_1
            m += (1 - self.beta_1) * g
            v *= self.beta_2
            v += (1 - self.beta_2) * g * g
            w -= step * m / (np.sqrt(v) + self.epsilon)


class FairMLPClassifier(BaseFairClassifier):
    """Fully connected network penalised for unequal treatment of groups.

    The paper's FCNN: hidden layers (one of 100 units by default) and a single
    logit output, trained on

    .. math::

        \\frac{1}{n}\\sum_i \\ell(y_i, s_i) + \\lambda f(s)
        + \\gamma \\sum_l \\lVert W_l \\rVert_2^2

    with :math:`s_i` the network's logit for row i, :math:`\\ell` the
    log-loss, :math:`f` the fairness penalty of :mod:`skfedida.penalty` over
    all pairs of intersectional groups, ``fairness`` the paper's
    :math:`\\lambda` and ``alpha`` its :math:`\\gamma` (on the weights, not
    the biases). Sensitive attributes are handled as in
    :class:`~skfedida.linear_model.FairPenaltyLogisticRegression`: they enter
    the penalty, never the network.

    Parameters are kept as sklearn's ``MLPClassifier`` keeps them
    (``coefs_``, ``intercepts_``), so both can be federated the same way.
    ``fit`` runs epochs of minibatch ``"sgd"`` or ``"adam"`` until the epoch
    objective stops improving by ``tol`` for ``n_iter_no_change`` epochs
    (with ``early_stopping``, the objective on a held-out
    ``validation_fraction``, penalty included, and the best parameters are
    kept) or ``max_iter`` epochs; ``partial_fit`` runs one epoch. SGD steps
    start at ``learning_rate`` and are halved until the minibatch objective
    falls (Armijo backtracking), so large ``fairness`` values do not diverge;
    Adam's steps are bounded by ``learning_rate`` by construction.

    With more than two classes the output layer has one unit per class under
    a softmax (``out_activation_ == "softmax"``), and the penalty is applied
    to every class's logit (row-centred), rows compared to rows of the same
    true class.

    Parameters
    ----------
    hidden_layer_sizes : array-like of shape (n_layers - 2,), default=(100,)
        Units of each hidden layer.
    activation : {"relu", "tanh", "logistic", "identity"}, default="relu"
        Hidden-layer activation.
    solver : {"sgd", "adam"}, default="sgd"
        Minibatch optimiser.
    fairness : float, default=1.0
        Weight of the fairness penalty (the paper's lambda), >= 0.
    alpha : float, default=1e-4
        Weight of the squared L2 norm of the weights (the paper's gamma).
    penalty : {"group", "individual", "group_standardized"}, default="group"
        Group, individual or standardized group fairness penalty (see
        :class:`~skfedida.linear_model.FairPenaltyLogisticRegression`).
    learning_rate : float, default=0.1
        SGD's initial step, or Adam's step size (use about 1e-3 for Adam).
        Unlike sklearn's ``MLPClassifier``, this is the value itself.
    batch_size : int, default=128
        Minibatch size.
    max_iter : int, default=200
        Maximum number of epochs of ``fit``.
    tol : float, default=1e-4
        Improvement of the (training or validation) objective that counts.
    n_iter_no_change : int, default=10
        Epochs without improvement before ``fit`` stops.
    early_stopping : bool, default=False
        Hold out ``validation_fraction`` of the rows (stratified) and stop on
        their objective, keeping the best parameters.
    validation_fraction : float, default=0.1
        Share of rows held out with ``early_stopping``.
    beta_1 : float, default=0.9
        Adam's first-moment decay.
    beta_2 : float, default=0.999
        Adam's second-moment decay.
    epsilon : float, default=1e-8
        Adam's numerical stabiliser.
    warm_start : bool, default=False
        Continue ``fit`` from the current parameters.
    average : bool, default=False
        End every epoch at the mean of its iterates (Polyak-Ruppert
        averaging) instead of the last one.
    sensitive : str, int or list, default=None
        Columns of X holding the sensitive attributes; dropped from the
        network's inputs.
    random_state : int, RandomState instance or None, default=None
        Weight initialisation, shuffling and the validation split.
    verbose : int, default=0
        Print the objective of every epoch of ``fit``.
    constraints : {"demographic_parity", "false_positive_rate_parity", \
"true_positive_rate_parity", "equalized_odds"} or None, default=None
        Rates of the decisions at the operating point made equal across
        the intersectional groups (fairlearn's names and aliases), as
        :class:`~skfedida.ensemble.FairHistGradientBoostingClassifier`'s: a
        proxy-Lagrangian whose multipliers step before every epoch. Binary outcomes.
    tolerance : float in [0, 1], default=0.0
        The largest gap of the constrained rate between two groups the fit
        aims for.
    selection_rate : "prevalence" or float in (0, 1), default="prevalence"
        The operating point's share of selected rows. ``"prevalence"``: the
        weighted share of positive rows the constraint's first step sees
        (``fit``'s rows; the first ``partial_fit`` call's rows, kept by the
        later calls; in a federation holding the constraint, all clients'
        training rows), the matched rate of skfedida's reports.
    multiplier_bound : float > 0, default=0.2
        The largest sum of the constraint's multipliers: the most mean
        log-loss the fit gives up per unit of gap between the groups' rates.

    Attributes
    ----------
    coefs_ : list of ndarray
        Weight matrix of every layer; the last is (n_units, ``n_outputs_``).
    intercepts_ : list of ndarray
        Bias vector of every layer.
    classes_ : ndarray of shape (n_classes,)
        Class labels, sorted; with two, ``classes_[1]`` is the positive class.
    n_layers_ : int
        Number of layers, input and output included.
    n_outputs_ : int
        1 for two classes (the logit of ``classes_[1]``), else the number of
        classes.
    out_activation_ : str
        ``"logistic"`` for two classes, ``"softmax"`` for more.
    loss_ : float
        Mean minibatch objective of the last epoch; under a rate constraint,
        the training rows' objective after it, without the constraint's
        term (the multipliers change every epoch).
    loss_curve_ : list of float
        ``loss_`` of every epoch of ``fit``.
    validation_scores_ : list of float or None
        Validation objective of every epoch with ``early_stopping``.
    best_loss_ : float or None
        Best objective seen by ``fit``'s stopping rule.
    n_iter_ : int
        Epochs run by the last ``fit``, or by ``partial_fit`` since its first
        call.
    n_samples_seen_ : int
        Training rows processed.
    t_ : int
        Same as ``n_samples_seen_`` (sklearn's name).
    n_features_in_ : int
        Number of columns of X, sensitive columns included.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Column names of X, when it is a DataFrame with string column names.
    model_feature_names_ : ndarray of shape (n_model_features,)
        Names of the network's inputs.
    groups_, multipliers_, constrained_rates_, operating_threshold_, \
rate_gaps_, target_rate_
        With ``constraints``, as
        :class:`~skfedida.ensemble.FairHistGradientBoostingClassifier`'s:
        the groups, the final multipliers, the groups' rates and the
        decision function's value at the operating point on the training
        rows, and the largest gap per rate at each step of the multipliers
        (epochs) and after training.

    See Also
    --------
    sklearn.neural_network.MLPClassifier : The unpenalised network.
    skfedida.linear_model.FairPenaltyLogisticRegression : The linear model.

    Examples
    --------
    >>> import numpy as np
    >>> from skfedida.neural_network import FairMLPClassifier
    >>> rng = np.random.default_rng(0)
    >>> group = rng.integers(0, 2, 400)
    >>> X = rng.normal(size=(400, 3)) + group[:, None]
    >>> y = (X[:, 0] + rng.normal(size=400) > 0.5).astype(int)
    >>> clf = FairMLPClassifier(hidden_layer_sizes=(16,), max_iter=100,
    ...                         random_state=0)
    >>> clf.fit(X, y, sensitive_features=group).predict_proba(X[:2]).shape
    (2, 2)
    """

    # Glorot weights are meant for inputs of order 1. Measured on 2,000 rows
    # of 5 Gaussian features times c (hidden_layer_sizes=(8,), 30 epochs,
    # sgd / adam), the AUROC fell from 0.88 / 0.89 at c = 1 to 0.79 / 0.83 at
    # 1e2, 0.63 / 0.67 at 1e3 and 0.46 / 0.58 at 1e4 and beyond: fit and
    # partial_fit warn beyond 1e3.
    _largest_input = 1e3

    _parameter_constraints: dict = {
        **BaseFairClassifier._parameter_constraints,
        "hidden_layer_sizes": [
            "array-like",
            Interval(numbers.Integral, 1, None, closed="left"),
        ],
        "activation": [StrOptions(set(_ACTIVATIONS))],
        "solver": [StrOptions({"sgd", "adam"})],
        "n_iter_no_change": [Interval(numbers.Integral, 1, None, closed="left")],
        "early_stopping": ["boolean"],
        "validation_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
        "beta_1": [Interval(numbers.Real, 0, 1, closed="left")],
        "beta_2": [Interval(numbers.Real, 0, 1, closed="left")],
        "epsilon": [Interval(numbers.Real, 0, None, closed="neither")],
    }

    def __init__(
        self,
        hidden_layer_sizes=(100,),
        *,
        activation="relu",
        solver="sgd",
        fairness=1.0,
        alpha=1e-4,
        penalty="group",
        learning_rate=0.1,
        batch_size=128,
        max_iter=200,
        tol=1e-4,
        n_iter_no_change=10,
        early_stopping=False,
        validation_fraction=0.1,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=1e-8,
        warm_start=False,
        average=False,
        sensitive=None,
        random_state=None,
        verbose=0,
        constraints=None,
        tolerance=0.0,
        selection_rate="prevalence",
        multiplier_bound=0.2,
    ):
        self.hidden_layer_sizes = hidden_layer_sizes
        self.activation = activation
        self.solver = solver
        self.fairness = fairness
        self.alpha = alpha
        self.penalty = penalty
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self.warm_start = warm_start
        self.average = average
        self.sensitive = sensitive
        self.random_state = random_state
        self.verbose = verbose
        self.constraints = constraints
        self.tolerance = tolerance
        self.selection_rate = selection_rate
        self.multiplier_bound = multiplier_bound

    # -- model ----------------------------------------------------------------

    def _layer_sizes(self, n_features):
        # Not cast with astype(int): a size of 2.5 would become 2 silently;
        # read as objects, so (10, True) keeps its bool to be refused.
        hidden = np.atleast_1d(np.asarray(self.hidden_layer_sizes, dtype=object))
        hidden = hidden.tolist()
        if any(
            not isinstance(size, numbers.Integral) or isinstance(size, bool) or size < 1
            for size in hidden
        ):
            raise ValueError(
                "hidden_layer_sizes must hold positive ints; got "
                f"{self.hidden_layer_sizes!r}."
            )
        return [n_features, *hidden, self._n_score_columns()]

    def _initial_parameters(self, n_features, random_state):
        # Glorot uniform initialisation, as sklearn's MLPClassifier.
        sizes = self._layer_sizes(n_features)
        factor = 2.0 if self.activation == "logistic" else 6.0
        coefs, intercepts = [], []
        for fan_in, fan_out in itertools.pairwise(sizes):
            bound = np.sqrt(factor / (fan_in + fan_out))
            coefs.append(random_state.uniform(-bound, bound, (fan_in, fan_out)))
            intercepts.append(random_state.uniform(-bound, bound, fan_out))
        self.n_layers_ = len(sizes)
        self.n_outputs_ = sizes[-1]
        self.out_activation_ = "logistic" if sizes[-1] == 1 else "softmax"
        return coefs + intercepts

    def _get_params_list(self):
        return [*self.coefs_, *self.intercepts_]

    def _set_params_list(self, params):
        half = len(params) // 2
        self.coefs_, self.intercepts_ = list(params[:half]), list(params[half:])

    def _scores(self, params, X, cache=False):
        half = len(params) // 2
        coefs, intercepts = params[:half], params[half:]
        forward, _ = _ACTIVATIONS[self.activation]
        pre_activations, activations = [], [X]
        hidden = X
        for W, b in zip(coefs[:-1], intercepts[:-1], strict=True):
            z = safe_sparse_dot(hidden, W) + b
            hidden = forward(z)
            pre_activations.append(z)
            activations.append(hidden)
        scores = np.asarray(safe_sparse_dot(hidden, coefs[-1]) + intercepts[-1])
        if scores.shape[1] == 1:
            scores = scores.ravel()
        return Scores(scores, (pre_activations, activations) if cache else None)

    def _backprop(self, params, X, cache, score_gradient):
        half = len(params) // 2
        coefs = params[:half]
        _, derivative = _ACTIVATIONS[self.activation]
        pre_activations, activations = cache
        delta = score_gradient[:, None] if score_gradient.ndim == 1 else score_gradient
        coef_gradients = [None] * half
        intercept_gradients = [None] * half
        for layer in range(half - 1, -1, -1):
            coef_gradients[layer] = np.asarray(
                safe_sparse_dot(activations[layer].T, delta)
            )
            intercept_gradients[layer] = delta.sum(axis=0)
            if layer > 0:
                delta = (delta @ coefs[layer].T) * derivative(
                    pre_activations[layer - 1], activations[layer]
                )
        return coef_gradients + intercept_gradients

    def _penalised(self, params):
        return params[: len(params) // 2]

    def _compiled_steps(self, params, batch, bounds, average, order=None):
        output_units = params[len(params) // 2 - 1].shape[1]
        if mlp_sgd_steps is None or sp.issparse(batch.X) or output_units > 1:
            # The compiled loop is the one-logit network's; a softmax output
            # runs the numpy loop.
            return None
        flat = np.concatenate([np.ravel(w) for w in params]).astype(np.float64)
        flat_sum = np.zeros_like(flat)
        sizes = [w.shape[0] for w in params[: len(params) // 2]] + [1]
        values, n_steps, status = mlp_sgd_steps(
            *compiled_loop_inputs(batch, bounds, order=order),
            flat,
            np.asarray(sizes, dtype=np.intp),
            _ACTIVATION_CODES[self.activation],
            float(self.fairness),
            float(self.alpha),
            PENALTY_CODES[self.penalty],
            float(self.learning_rate),
            ARMIJO,
            MAX_HALVINGS,
            bool(average),
            flat_sum,
            *proximal_loop_inputs(self),
        )
        if status:
            raise non_finite_gradient()
        if average and n_steps:
            flat = flat_sum / n_steps
        offset = 0
        for w in params:
            w[...] = flat[offset : offset + w.size].reshape(w.shape)
            offset += w.size
        return values

    def _partial_fit_optimizer(self, params):
        if self.solver != "adam":
            return None
        optimizer = getattr(self, "_optimizer", None)
        if optimizer is None or len(optimizer.m) != len(params):
            optimizer = _Adam(
                params, self.learning_rate, self.beta_1, self.beta_2, self.epsilon
            )
            self._optimizer = optimizer
        return optimizer

    # -- fitting ----------------------------------------------------------------

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, sensitive_features=None, sample_weight=None):
        """Train the network for up to ``max_iter`` epochs.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data; in column mode it holds the sensitive columns.
        y : array-like of shape (n_samples,)
            Class labels (two or more classes).
        sensitive_features : array-like, DataFrame or dict, default=None
            Sensitive attributes of every row (metadata mode).
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        X_model, y, groups, n_groups, weight, labels = self._prepare(
            X, y, sensitive_features, sample_weight, reset=True, warn=True
        )
        warn_if_unscaled(X_model, type(self).__name__, largest=self._largest_input)
        classes = self._class_labels(y)
        continuing = (
            self.warm_start
            and hasattr(self, "coefs_")
            and (self.coefs_[0].shape[0] == X_model.shape[1])
            and np.array_equal(getattr(self, "classes_", ()), classes)
        )
        self.classes_ = classes
        self._check_constraint_classes(n_groups)
        self._forget_constraint()
        batch = Batch(
            X_model, self._label_codes(y), groups, n_groups, weight, labels=labels
        )
        random_state = check_random_state(self.random_state)
        if not continuing:
            self._set_params_list(
                self._initial_parameters(X_model.shape[1], random_state)
            )
            self._optimizer = None
        validation = None
        if self.early_stopping:
            rows = np.arange(X_model.shape[0])
            train_rows, validation_rows = train_test_split(
                rows,
                test_size=self.validation_fraction,
                stratify=batch.y,
                random_state=random_state,
            )
            validation = batch.take(validation_rows)
            batch = batch.take(train_rows)

        params = self._trainable_params()
        optimizer = self._partial_fit_optimizer(params)
        self.loss_curve_ = []
        self.validation_scores_ = [] if validation is not None else None
        self.best_loss_ = np.inf
        best_params, stalled = None, 0
        for epoch in range(self.max_iter):
            # Under a rate constraint the multipliers step before every epoch,
            # on the training rows' rates.
            loss = self._under_constraint(
                batch,
                lambda: self._sgd_epoch(params, batch, random_state, optimizer),
                measure=False,
            )
            self._check_finite(params)
            if self._constrains(batch):
                # The epoch's Lagrangian moves with the multipliers, which
                # step every epoch: the stopping rule and the curve follow
                # the objective without the constraint's term.
                loss = self._objective(params, batch, with_gradient=False).value
            self.loss_curve_.append(loss)
            if validation is not None:
                monitored = self._objective(
                    params, validation, with_gradient=False
                ).value
                self.validation_scores_.append(monitored)
            else:
                monitored = loss
            if self.verbose:
                print(f"Epoch {epoch + 1}, objective = {monitored:.6f}")
            if monitored < self.best_loss_ - self.tol:
                stalled = 0
            else:
                stalled += 1
            if monitored < self.best_loss_:
                self.best_loss_ = monitored
                if validation is not None:
                    best_params = [w.copy() for w in params]
            if stalled >= self.n_iter_no_change:
                break
        else:
            warnings.warn(
                f"{type(self).__name__} reached max_iter={self.max_iter} epochs "
                "before the objective stopped improving.",
                ConvergenceWarning,
                stacklevel=caller_stacklevel(),
            )
        if best_params is not None:
            params = best_params
        self._set_params_list(params)
        if self._constrains(batch):
            self._measure_own_constraint(params, batch)
        self.n_iter_ = epoch + 1
        self._epochs = self.n_iter_
        self._random_state = random_state
        self.n_samples_seen_ = self.t_ = self.n_iter_ * batch.X.shape[0]
        self.loss_ = self.loss_curve_[-1]
        return self

    @fit_context(prefer_skip_nested_validation=True)
    def partial_fit(
        self, X, y, classes=None, *, sensitive_features=None, sample_weight=None
    ):
        """Run one epoch of minibatch training on the given rows.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training rows.
        y : array-like of shape (n_samples,)
            Class labels (two or more classes).
        classes : array-like of shape (n_classes,), default=None
            All labels; required on the first call.
        sensitive_features : array-like, DataFrame or dict, default=None
            Sensitive attributes of the rows (metadata mode).
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights.

        Returns
        -------
        self : object
            Updated estimator.
        """
        self._partial_fit(X, y, classes, sensitive_features, sample_weight)
        self.t_ = self.n_samples_seen_
        return self
