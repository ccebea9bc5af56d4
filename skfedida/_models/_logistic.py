"""Logistic regression with a convex group fairness penalty."""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.extmath import safe_sparse_dot

from .._compat import check_optimize_result, fit_context
from ._constraints import largest_gaps
from ._fair_base import (
    ARMIJO,
    BEST_ROUND_SLACK,
    CONSTRAINT_ROUNDS,
    MAX_HALVINGS,
    BaseFairClassifier,
    Batch,
    Scores,
    coefficient_units,
    compiled_loop_inputs,
    non_finite_gradient,
    proximal_loop_inputs,
)
from ._penalty import PENALTY_CODES

try:  # built from _sgd_fast.pyx at install; the numpy loop is its reference
    from ._sgd_fast import linear_sgd_steps, multinomial_sgd_steps
except ImportError:  # pragma: no cover - a source tree that was not built
    linear_sgd_steps = multinomial_sgd_steps = None

__all__ = ["FairPenaltyLogisticRegression"]


class FairPenaltyLogisticRegression(BaseFairClassifier):
    """Logistic regression penalised for unequal treatment of sensitive groups.

    Minimises

    .. math::

        \\frac{1}{n}\\sum_i \\ell(y_i, w^\\top a_i + b)
        + \\lambda f(w) + \\gamma \\lVert w \\rVert_2^2

    where :math:`\\ell` is the log-loss, :math:`f` the convex fairness penalty
    of :mod:`skfedida.penalty` over all pairs of intersectional groups (the
    paper's Eq. 2 with Berk et al.'s square), ``fairness`` is the paper's
    :math:`\\lambda` and ``alpha`` its :math:`\\gamma`. The intercept is not
    penalised. With ``alpha > 0`` the objective is strongly convex, so the
    minimiser is unique.

    The model never uses the sensitive attributes as inputs: they only enter
    the penalty. Give them as ``fit(X, y, sensitive_features=S)`` (requested by
    default in metadata routing), or name columns of a DataFrame X with
    ``sensitive=``; those columns are then dropped from the model's inputs,
    also at prediction. Without sensitive attributes the penalty is 0 and the
    model is a plain L2-penalised logistic regression (a warning says so once
    per fit when ``fairness > 0``).

    ``fit`` solves the full-batch problem with L-BFGS and the analytic
    gradient; ``partial_fit`` runs one epoch of minibatch SGD (``batch_size``
    rows, shuffled with ``random_state``), with the penalty computed on each
    minibatch as in the paper's Algorithm 2. Each SGD step starts at
    ``learning_rate`` and is halved until the minibatch objective falls
    (Armijo backtracking), so training is stable for any ``fairness``: plain
    SGD at 0.1 on the squared penalty diverges for large ``fairness``.

    With more than two classes the model is multinomial (softmax): one row
    of ``coef_`` per class, and the penalty is applied to every class's
    logit (row-centred) with rows compared to rows of the same true class
    (see the user guide's "More than two classes").

    Parameters
    ----------
    fairness : float, default=1.0
        Weight of the fairness penalty (the paper's lambda), >= 0.
    alpha : float, default=1e-4
        Weight of the squared L2 norm of the coefficients (the paper's gamma),
        >= 0. ``alpha`` corresponds to sklearn's ``LogisticRegression`` with
        ``C = 1 / (2 * alpha * n_samples)``.
    penalty : {"group", "individual", "group_standardized"}, default="group"
        Berk et al.'s group penalty (squared differences of mean scores of
        label-matched cross-group pairs, the paper's), individual penalty
        (mean squared score differences of those pairs), or the group penalty
        divided by the within-label variance of the scores
        (:func:`~skfedida.penalty.standardized_group_penalty`). The first two
        are cheapest to lower by shrinking every score toward one value,
        which changes the decisions at a matched selection rate little and
        worsens calibration; the standardized penalty is scale-invariant, so
        only treating the groups more alike lowers it (use a smaller
        ``fairness``, about 0.25 to 0.5).
    fit_intercept : bool, default=True
        Whether to fit an (unpenalised) intercept.
    max_iter : int, default=1000
        Maximum number of L-BFGS iterations in ``fit``.
    tol : float, default=1e-6
        L-BFGS stops when the largest gradient component falls below ``tol``
        (for a column larger than 1024 in absolute value, the gradient in
        its coefficient times the power of two above its largest value:
        ``fit`` takes such coefficients in units of their column's
        magnitude, so features on any scale are fitted alike).
    warm_start : bool, default=False
        Start ``fit`` from the previous solution.
    average : bool, default=False
        End every ``partial_fit`` epoch at the mean of its SGD iterates
        (Polyak-Ruppert averaging) instead of the last one. Constant-step SGD
        ends in a noise ball around the optimum that grows with ``fairness``;
        averaging shrinks it (see the user guide).
    learning_rate : float, default=0.1
        Initial step size of each ``partial_fit`` SGD step.
    batch_size : int, default=128
        Minibatch size of ``partial_fit``.
    sensitive : str, int or list, default=None
        Columns of X holding the sensitive attributes (names for a DataFrame,
        positions for an array); dropped from the model's inputs.
    random_state : int, RandomState instance or None, default=None
        Shuffling of ``partial_fit`` epochs.
    verbose : int, default=0
        Print a summary of the L-BFGS run.
    constraints : {"demographic_parity", "false_positive_rate_parity", \
"true_positive_rate_parity", "equalized_odds"} or None, default=None
        Rates of the decisions at the operating point made equal across
        the intersectional groups (fairlearn's names and aliases), as
        :class:`~skfedida.ensemble.FairHistGradientBoostingClassifier`'s: a
        proxy-Lagrangian whose multipliers step between rounds of L-BFGS
        in ``fit`` (50 rounds sharing ``max_iter``) and before each
        ``partial_fit`` epoch. Binary outcomes.
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
    coef_ : ndarray of shape (1, n_model_features) or \
(n_classes, n_model_features)
        Coefficients of the model inputs (``model_feature_names_``): one row
        for two classes (the logit of ``classes_[1]``), one per class for more.
    intercept_ : ndarray of shape (1,) or (n_classes,)
        Intercept (0 when ``fit_intercept=False``).
    classes_ : ndarray of shape (n_classes,)
        Class labels, sorted; with two, ``classes_[1]`` is the positive class.
    n_iter_ : int
        L-BFGS iterations of the last ``fit`` (with
        ``penalty="group_standardized"`` from the zero start, those of its
        unpenalised start too), or epochs run by ``partial_fit`` since the
        first call.
    n_samples_seen_ : int
        Training rows processed: n for ``fit``, summed over ``partial_fit``
        calls.
    n_features_in_ : int
        Number of columns of X, sensitive columns included.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Column names of X, when it is a DataFrame with string column names.
    model_feature_names_ : ndarray of shape (n_model_features,)
        Names of the model's inputs: X's columns without the sensitive ones
        (``x0``, ``x1``, ... for arrays).
    groups_, multipliers_, constrained_rates_, operating_threshold_, \
rate_gaps_, target_rate_
        With ``constraints``, as
        :class:`~skfedida.ensemble.FairHistGradientBoostingClassifier`'s:
        the groups, the final multipliers, the groups' rates and the
        decision function's value at the operating point on the training
        rows, and the largest gap per rate at each step of the multipliers
        (rounds or epochs) and after training.

    See Also
    --------
    sklearn.linear_model.LogisticRegression : The unpenalised model.
    skfedida.neural_network.FairMLPClassifier : The same objective for a
        neural network.

    Examples
    --------
    >>> import numpy as np
    >>> from skfedida.linear_model import FairPenaltyLogisticRegression
    >>> from skfedida.metrics import demographic_parity_difference
    >>> rng = np.random.default_rng(0)
    >>> group = rng.integers(0, 2, 500)
    >>> X = rng.normal(size=(500, 3)) + group[:, None]
    >>> y = (X[:, 0] + rng.normal(size=500) > 0.5).astype(int)
    >>> plain = FairPenaltyLogisticRegression(fairness=0).fit(X, y)
    >>> fair = FairPenaltyLogisticRegression(fairness=10).fit(
    ...     X, y, sensitive_features=group)
    >>> dpd = [demographic_parity_difference(y, m.predict(X),
    ...        sensitive_features=group) for m in (plain, fair)]
    >>> bool(dpd[1] < dpd[0])
    True
    """

    _parameter_constraints: dict = {
        **BaseFairClassifier._parameter_constraints,
        "fit_intercept": ["boolean"],
    }

    def __init__(
        self,
        *,
        fairness=1.0,
        alpha=1e-4,
        penalty="group",
        fit_intercept=True,
        max_iter=1000,
        tol=1e-6,
        warm_start=False,
        average=False,
        learning_rate=0.1,
        batch_size=128,
        sensitive=None,
        random_state=None,
        verbose=0,
        constraints=None,
        tolerance=0.0,
        selection_rate="prevalence",
        multiplier_bound=0.2,
    ):
        self.fairness = fairness
        self.alpha = alpha
        self.penalty = penalty
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.warm_start = warm_start
        self.average = average
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.sensitive = sensitive
        self.random_state = random_state
        self.verbose = verbose
        self.constraints = constraints
        self.tolerance = tolerance
        self.selection_rate = selection_rate
        self.multiplier_bound = multiplier_bound

    # -- model ----------------------------------------------------------------

    def _initial_parameters(self, n_features, random_state):
        n_outputs = self._n_score_columns()
        return [np.zeros((n_outputs, n_features)), np.zeros(n_outputs)]

    def _get_params_list(self):
        return [self.coef_, self.intercept_]

    def _set_params_list(self, params):
        self.coef_, self.intercept_ = params

    def _scores(self, params, X, cache=False):
        coef, intercept = params
        if coef.shape[0] > 1:  # multinomial: one logit per class
            scores = safe_sparse_dot(X, coef.T, dense_output=True) + intercept
            return Scores(np.asarray(scores, dtype=np.float64), None)
        scores = safe_sparse_dot(X, coef[0]) + intercept[0]
        return Scores(np.asarray(scores, dtype=np.float64).ravel(), None)

    def _backprop(self, params, X, cache, score_gradient):
        if score_gradient.ndim == 2:
            coef_gradient = np.asarray(safe_sparse_dot(score_gradient.T, X))
            intercept_gradient = (
                score_gradient.sum(axis=0)
                if self.fit_intercept
                else np.zeros(score_gradient.shape[1])
            )
            return [coef_gradient, intercept_gradient]
        coef_gradient = np.asarray(safe_sparse_dot(score_gradient, X)).reshape(1, -1)
        intercept_gradient = np.array(
            [score_gradient.sum() if self.fit_intercept else 0.0]
        )
        return [coef_gradient, intercept_gradient]

    def _penalised(self, params):
        return [params[0]]

    def _fixed(self, params):
        return [] if self.fit_intercept else [params[1]]

    def _compiled_steps(self, params, batch, bounds, average, order=None):
        coef, intercept = params
        # One logit per row for two classes, one per class for more: the
        # multinomial model has a loop of its own, with the same arguments.
        multinomial = coef.shape[0] > 1
        loop = multinomial_sgd_steps if multinomial else linear_sgd_steps
        if loop is None or sp.issparse(batch.X):
            return None
        # Working copies of the parameters, written back after the loop (the
        # reference updates params in place too).
        coef_work = np.array(coef if multinomial else coef[0], np.float64, order="C")
        intercept_work = np.array(intercept, dtype=np.float64).reshape(-1)
        coef_sum = np.zeros_like(coef_work)
        intercept_sum = np.zeros_like(intercept_work)
        values, n_steps, status = loop(
            *compiled_loop_inputs(
                batch, bounds, n_labels=max(2, coef.shape[0]), order=order
            ),
            coef_work,
            intercept_work,
            bool(self.fit_intercept),
            float(self.fairness),
            float(self.alpha),
            PENALTY_CODES[self.penalty],
            float(self.learning_rate),
            ARMIJO,
            MAX_HALVINGS,
            bool(average),
            coef_sum,
            intercept_sum,
            *proximal_loop_inputs(self),
        )
        if status:
            raise non_finite_gradient()
        if average and n_steps:
            coef_work, intercept_work = coef_sum / n_steps, intercept_sum / n_steps
        coef[...] = coef_work.reshape(coef.shape)
        intercept[...] = intercept_work
        return values

    # -- fitting ----------------------------------------------------------------

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, sensitive_features=None, sample_weight=None):
        """Fit the model by solving the full-batch problem with L-BFGS.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data; in column mode it holds the sensitive columns.
        y : array-like of shape (n_samples,)
            Class labels (two or more classes).
        sensitive_features : array-like, DataFrame or dict, default=None
            Sensitive attributes of every row (metadata mode).
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights (in the loss and in the penalty's group sizes).

        Returns
        -------
        self : object
            Fitted estimator.
        """
        X_model, y, groups, n_groups, weight, labels = self._prepare(
            X, y, sensitive_features, sample_weight, reset=True, warn=True
        )
        classes = self._class_labels(y)
        n_outputs = 1 if len(classes) == 2 else len(classes)
        previous = (
            self._get_params_list()
            if (
                self.warm_start
                and hasattr(self, "coef_")
                and self.coef_.shape == (n_outputs, X_model.shape[1])
            )
            else None
        )
        self.classes_ = classes
        self._check_constraint_classes(n_groups)
        self._forget_constraint()
        batch = Batch(
            X_model, self._label_codes(y), groups, n_groups, weight, labels=labels
        )
        n_features = X_model.shape[1]
        params = previous or self._initial_parameters(n_features, None)
        # L-BFGS takes the coefficient of column j as units[j] * coef_j: the
        # same problem, on columns of magnitude about 1 (see
        # coefficient_units; all 1 on scaled data).
        units = coefficient_units(X_model)
        theta0 = (
            np.concatenate([(params[0] * units).ravel(), params[1]])
            if self.fit_intercept
            else (params[0] * units).ravel()
        )
        n_coef = n_outputs * n_features

        def unpack(theta):
            coef = theta[:n_coef].reshape(n_outputs, n_features) / units
            intercept = theta[n_coef:] if self.fit_intercept else np.zeros(n_outputs)
            return [coef, intercept]

        def fun(theta, penalised=True):
            value, gradients = self._objective(
                unpack(theta), batch, penalised=penalised
            )
            flat = (gradients[0] / units).ravel()
            if self.fit_intercept:
                flat = np.concatenate([flat, gradients[1]])
            return value, flat

        options = {
            "maxiter": self.max_iter,
            "maxls": 50,
            "gtol": self.tol,
            "ftol": 64 * np.finfo(float).eps,
        }
        n_start = 0
        if previous is None and self._penalty_undefined(unpack(theta0), batch):
            # The standardized penalty is 0/0 at the zero start, and any step
            # from there costs fairness x its ratio at once: L-BFGS would
            # stop at the constant model, "converged". Start from the
            # unpenalised optimum instead, where the penalty is defined;
            # max_iter bounds both runs together, and n_iter_ counts both.
            start = minimize(
                fun,
                theta0,
                args=(False,),
                method="L-BFGS-B",
                jac=True,
                options={**options, "maxiter": max(self.max_iter - 1, 1)},
            )
            theta0, n_start = start.x, int(start.nit)
            options["maxiter"] = max(self.max_iter - n_start, 1)
        if self._constrains(batch):
            theta, value, n_rounds = self._constrained_lbfgs(
                fun, theta0, unpack, batch, options
            )
            self.n_iter_ = n_start + n_rounds
            message = "the best of the rounds under the rate constraint"
        else:
            result = minimize(fun, theta0, method="L-BFGS-B", jac=True, options=options)
            self.n_iter_ = n_start + check_optimize_result(
                "lbfgs", result, options["maxiter"]
            )
            theta, value, message = result.x, result.fun, result.message
        if self.verbose:
            print(
                f"L-BFGS: {self.n_iter_} iterations, objective {value:.6g}, {message}"
            )
        coef, intercept = unpack(theta)
        self._set_params_list([coef.copy(), np.array(intercept, dtype=float)])
        self._check_finite(self._get_params_list())
        if self._constrains(batch):
            self._measure_own_constraint(self._get_params_list(), batch)
        self.n_samples_seen_ = X_model.shape[0]
        self.loss_ = float(value)
        return self

    def _constrained_lbfgs(self, fun, theta, unpack, batch, options):
        """L-BFGS under the rate constraint: rounds, the multipliers between.

        ``min(CONSTRAINT_ROUNDS, max_iter)`` rounds sharing the ``max_iter``
        iterations (at least one each) minimise the Lagrangian with the
        multipliers fixed; before each, the multipliers step on the rates of
        the model as it stands (the trees step once per tree, the network
        once per epoch). A round's minimiser can jump (the smoothed rates
        are bounded, so a round may move a whole group past the threshold),
        and the rounds then circle the constrained optimum instead of
        settling: the fit keeps the best round's model, as Cotter et al.
        (2019) keep their best iterate: of the rounds whose largest gap
        beyond ``tolerance`` is within ``BEST_ROUND_SLACK`` of the smallest,
        the one of the lowest objective (log-loss, penalty and L2, without
        the constraint's term). Rounds end early once the constraint is
        inactive (no gap beyond ``tolerance``, no multiplier) and L-BFGS
        has converged. Returns the kept round's parameters, its objective
        and the iterations run.
        """
        budget = options["maxiter"]
        n_rounds = min(CONSTRAINT_ROUNDS, budget)
        inner = max(1, budget // n_rounds)
        n_iter = 0
        rounds = []
        for _ in range(n_rounds):
            if n_iter >= budget:
                break
            self._rate_term = self._step_own_constraint(unpack(theta), batch)
            try:
                result = minimize(
                    fun,
                    theta,
                    method="L-BFGS-B",
                    jac=True,
                    options={**options, "maxiter": min(inner, budget - n_iter)},
                )
            finally:
                del self._rate_term
            theta = result.x
            n_iter += int(result.nit)
            constraint = self._rate_constraint
            point = constraint.read(self._constraint_histograms(unpack(theta), batch))
            excess = float(
                np.max(largest_gaps(point["rates"]) - self.tolerance, initial=0.0)
            )
            rounds.append((max(excess, 0.0), fun(theta)[0], theta))
            settled = not constraint.multipliers.any() and excess <= 0
            if result.status == 0 and settled:
                break
        else:
            settled = False
        if not settled and n_iter >= budget:
            warnings.warn(
                f"The rate-constrained L-BFGS used all max_iter={self.max_iter} "
                "iterations before its rounds settled; the fit keeps the best "
                "round. Increase max_iter.",
                ConvergenceWarning,
                stacklevel=4,
            )
        least = min(excess for excess, _, _ in rounds)
        _, value, theta = min(
            (r for r in rounds if r[0] <= least + BEST_ROUND_SLACK),
            key=lambda r: r[1],
        )
        return theta, value, n_iter

    @fit_context(prefer_skip_nested_validation=True)
    def partial_fit(
        self, X, y, classes=None, *, sensitive_features=None, sample_weight=None
    ):
        """Run one epoch of minibatch SGD on the given rows.

        The first call needs ``classes`` (every label) and starts from zero
        coefficients; later calls continue from the current ones (also after
        ``fit``, or after a federated server set them).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training rows.
        y : array-like of shape (n_samples,)
            Class labels.
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
        return self._partial_fit(X, y, classes, sensitive_features, sample_weight)
