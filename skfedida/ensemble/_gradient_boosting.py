"""FedIDA's group penalty and rate constraints in histogram gradient boosting.

:class:`FairHistGradientBoostingClassifier` is scikit-learn's
``HistGradientBoostingClassifier`` fitted to the mean log-loss plus
``fairness`` times the group penalty of :func:`skfedida.penalty.group_penalty`
on the model's logits, the objective of the linear models. With
``fairness=0`` its fit is scikit-learn's own; with a penalty the trees are
grown by scikit-learn's grower on the penalised gradients, and each tree's
leaf values are the exact Newton step of the penalised objective
(:mod:`skfedida.ensemble._boosting` says why and how), on one client: the
federated fit runs the same loop over several. Under a rate constraint
(``constraints=``) each tree's gradients also carry the proxy-Lagrangian's
term of :mod:`skfedida._models._constraints`, its multipliers stepped once
per tree on the groups' rates at the operating point.
"""

from __future__ import annotations

import numbers
import warnings
from time import time

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.model_selection import train_test_split
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_consistent_length

from .._compat import (
    BinMapper,
    Interval,
    StrOptions,
    check_monotonic_cst,
    check_sample_weight,
)
from .._doc_links import DocLinkMixin
from .._groups import encode_groups
from .._models._constraints import (
    CONSTRAINT_PARAMETERS,
    RateConstraint,
    constraint_fitted_attributes,
    fairness_levers,
    forget_constraint,
)
from .._validation import columns_named_on_error
from ..exceptions import InactivePenaltyWarning, caller_stacklevel
from ._boosting import BoostingClient, boost

__all__ = ["FairHistGradientBoostingClassifier"]


def preprocessed_columns(model, X, *, reset, owner=None):
    """A boosted model's reading of X (``_preprocess_X``), a bad column named.

    numpy's ``DTypePromotionError`` for a datetime column names no column;
    scikit-learn's boosted models and ours read X through here.

    Parameters
    ----------
    model : HistGradientBoostingClassifier
        The model (or its ``super()``) whose reading is asked.
    X : array-like or DataFrame
        The rows.
    reset : bool
        Whether the model's input columns are set (a fit) or checked.
    owner : str, default=None
        The estimator named in the error (by default the model's class).

    Returns
    -------
    read
        What ``_preprocess_X`` returns.
    """
    with columns_named_on_error(X, owner or type(model).__name__):
        return model._preprocess_X(X, reset=reset)


class FairHistGradientBoostingClassifier(DocLinkMixin, HistGradientBoostingClassifier):
    """Histogram gradient boosting with FedIDA's group penalty and rate constraints.

    scikit-learn's ``HistGradientBoostingClassifier`` (every parameter and
    behaviour of it) whose trees are fitted to the gradient and hessian of
    the mean log-loss plus ``fairness`` times the group penalty on the
    model's logits (:func:`skfedida.penalty.group_penalty`: squared
    differences between groups of the mean logit of rows with the same
    label, over all pairs of intersectional groups), the objective of
    :class:`~skfedida.linear_model.FairPenaltyLogisticRegression`. The
    model never takes the sensitive attributes as inputs; they only shape
    the gradients. With ``fairness=0`` it is ``HistGradientBoostingClassifier``
    to the bit. Binary outcomes; two or more classes with ``fairness=0``.

    With a penalty, each tree's splits are found on the penalised gradients
    and the log-loss's hessians, and its leaf values are the exact Newton
    step of the penalised objective for that tree (the penalty's curvature
    couples the leaves that share a (group, label) cell): stable at any
    ``fairness``. Its methods (``predict``, ``predict_proba``,
    ``decision_function``, ``staged_*``) are scikit-learn's.

    The penalty compares mean logits, which trees can equalise by moving
    rows far from any threshold, leaving who is selected nearly unchanged.
    ``constraints`` constrains the *decisions* instead: at the operating
    point (the threshold that selects ``selection_rate`` of the training
    rows), the groups' selection rates, false positive rates or true
    positive rates should differ by at most ``tolerance``. It is a
    proxy-Lagrangian (Cotter et al., 2019; FairGBM, Cruz et al., 2023): each
    tree's gradients carry the rates smoothed by a sigmoid around the
    threshold, weighed by one multiplier per pair of groups, and the
    multipliers step once per tree on the exact rates' violations. Their sum
    is bounded (``multiplier_bound``: the most mean log-loss the fit trades
    per unit of gap), so a constraint the features cannot meet costs a bounded amount
    of accuracy instead of collapsing the model. The groups shape only the
    training: ``predict`` never takes them. The decisions the constraint
    is about are ``decision_function(X) >= operating_threshold_``:
    ``FixedThresholdClassifier(FrozenEstimator(model),
    threshold=model.operating_threshold_,
    response_method="decision_function")`` (scikit-learn's) makes them a
    ``predict``; the model's own ``predict`` keeps scikit-learn's threshold
    of 0.5.

    Parameters
    ----------
    loss : {"log_loss"}, default="log_loss"
        As in ``HistGradientBoostingClassifier``.
    learning_rate : float, default=0.1
        The shrinkage of every tree's values.
    max_iter : int, default=100
        Boosting iterations.
    max_leaf_nodes : int or None, default=31
        Leaves per tree at most.
    max_depth : int or None, default=None
        Depth per tree at most.
    min_samples_leaf : int, default=20
        Rows per leaf at least.
    l2_regularization : float, default=0.0
        L2 penalty on the leaves' values.
    max_features : float, default=1.0
        Share of the features considered at every split.
    max_bins : int, default=255
        Bins per feature, missing values aside.
    categorical_features : array-like, "from_dtype" or None, default="from_dtype"
        Which features are categorical.
    monotonic_cst : array-like or dict, default=None
        Monotonic constraints per feature.
    interaction_cst : {"pairwise", "no_interactions"} or sequence, default=None
        Interaction constraints.
    warm_start : bool, default=False
        Add iterations to the fitted ensemble.
    early_stopping : "auto" or bool, default="auto"
        Stop when the validation score stops improving ("auto": above
        10,000 rows). The score is the log-loss (``scoring="loss"``) or the
        scorer's, without the penalty.
    scoring : str, callable or None, default="loss"
        Early stopping's score.
    validation_fraction : float or None, default=0.1
        Share of the rows held out for early stopping (stratified by label,
        drawn with ``random_state``).
    n_iter_no_change : int, default=10
        Iterations without improvement before stopping.
    tol : float, default=1e-7
        Improvement that counts.
    verbose : int, default=0
        Progress output.
    random_state : int, RandomState instance or None, default=None
        Seeds the validation split and feature subsampling.
    class_weight : dict, "balanced" or None, default=None
        Weights per class, multiplied into the rows' weights (the penalty's
        group sizes included).
    fairness : float >= 0, default=0.0
        Weight of the group penalty (the paper's lambda); 0 is scikit-learn's
        model.
    penalty : {"group"}, default="group"
        The penalty. The group penalty is quadratic in the scores, which the
        leaves' exact Newton step needs.
    constraints : {"demographic_parity", "false_positive_rate_parity", \
"true_positive_rate_parity", "equalized_odds"} or None, default=None
        The rates made equal across the intersectional groups at the
        operating point: the selection rate, the FPR, the TPR, or both of
        the last two (fairlearn's names; its aliases
        ``"selection_rate_parity"``, ``"true_negative_rate_parity"`` and
        ``"false_negative_rate_parity"`` name the same constraints). None:
        no constraint (scikit-learn's model when ``fairness=0``).
    tolerance : float in [0, 1], default=0.0
        The largest gap of the constrained rate between any two groups the
        fit aims for (the multipliers grow while a gap exceeds it).
    selection_rate : "prevalence" or float in (0, 1), default="prevalence"
        The operating point's share of selected rows: ``"prevalence"``, the
        (weighted) share of positive training rows (the matched rate of
        skfedida's reports), or a given share.
    multiplier_bound : float > 0, default=0.2
        The largest sum of the constraint's multipliers: the most mean
        log-loss the fit gives up per unit of gap between the groups'
        rates. Larger values close more of a gap the features make costly
        to close, at a larger cost in accuracy; the bound keeps a
        constraint the model cannot meet from collapsing it.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    n_iter_ : int
        Boosting iterations run.
    n_trees_per_iteration_ : int
        1 for two classes.
    train_score_, validation_score_ : ndarray
        Early stopping's scores per iteration.
    is_categorical_ : ndarray or None
        Categorical features.
    n_features_in_ : int
        Features seen in fit.
    feature_names_in_ : ndarray of str
        Their names, for a DataFrame X.
    do_early_stopping_ : bool
        Whether early stopping ran.
    n_groups_ : int
        Intersectional groups of the training rows (1 without sensitive
        features).
    groups_ : tuple of tuple
        With ``constraints``: the groups (their attributes' values), in the
        order of the constraint's arrays.
    multipliers_ : ndarray of shape (n_rates, n_groups, n_groups)
        With ``constraints``: the multipliers at the end of the fit;
        ``multipliers_[k, g, h]`` weighs ``rate_k(g) - rate_k(h) <=
        tolerance``.
    constrained_rates_ : ndarray of shape (n_rates, n_groups)
        With ``constraints``: each group's constrained rate(s) at the
        operating point on the training rows, after the last tree (NaN for
        a group without rows of the rate's labels).
    operating_threshold_ : float
        With ``constraints``: the value of ``decision_function`` at the
        operating point on the training rows (a log-odds).
    rate_gaps_ : ndarray of shape (n_trees + 1, n_rates)
        With ``constraints``: the largest gap between groups' rates at the
        operating point on the training rows, before the first tree and
        after each.
    target_rate_ : float
        With ``constraints``: the operating point's share of selected rows.

    See Also
    --------
    sklearn.ensemble.HistGradientBoostingClassifier : The model it extends.
    skfedida.linear_model.FairPenaltyLogisticRegression : The same
        objective for a linear model.

    Examples
    --------
    >>> from skfedida.datasets import make_federated_classification
    >>> from skfedida.ensemble import FairHistGradientBoostingClassifier
    >>> data = make_federated_classification(2000, n_clients=1, random_state=0)
    >>> model = FairHistGradientBoostingClassifier(
    ...     fairness=1.0, max_iter=20, random_state=0)
    >>> model = model.fit(data.data, data.target, sensitive_features=data.sensitive)
    >>> model.predict_proba(data.data[:2]).shape
    (2, 2)

    Equal selection rates at the training prevalence's operating point:

    >>> fair = FairHistGradientBoostingClassifier(
    ...     constraints="demographic_parity", max_iter=20, random_state=0)
    >>> fair = fair.fit(data.data, data.target, sensitive_features=data.sensitive)
    >>> bool(fair.rate_gaps_[-1, 0] < fair.rate_gaps_[:, 0].max())
    True
    """

    __metadata_request__fit = {"sensitive_features": True}

    _parameter_constraints: dict = {
        **HistGradientBoostingClassifier._parameter_constraints,
        "fairness": [Interval(numbers.Real, 0, None, closed="left")],
        "penalty": [StrOptions({"group"})],
        **CONSTRAINT_PARAMETERS,
    }

    def __init__(
        self,
        loss="log_loss",
        *,
        learning_rate=0.1,
        max_iter=100,
        max_leaf_nodes=31,
        max_depth=None,
        min_samples_leaf=20,
        l2_regularization=0.0,
        max_features=1.0,
        max_bins=255,
        categorical_features="from_dtype",
        monotonic_cst=None,
        interaction_cst=None,
        warm_start=False,
        early_stopping="auto",
        scoring="loss",
        validation_fraction=0.1,
        n_iter_no_change=10,
        tol=1e-7,
        verbose=0,
        random_state=None,
        class_weight=None,
        fairness=0.0,
        penalty="group",
        constraints=None,
        tolerance=0.0,
        selection_rate="prevalence",
        multiplier_bound=0.2,
    ):
        super().__init__(
            loss=loss,
            learning_rate=learning_rate,
            max_iter=max_iter,
            max_leaf_nodes=max_leaf_nodes,
            max_depth=max_depth,
            min_samples_leaf=min_samples_leaf,
            l2_regularization=l2_regularization,
            max_features=max_features,
            max_bins=max_bins,
            categorical_features=categorical_features,
            monotonic_cst=monotonic_cst,
            interaction_cst=interaction_cst,
            warm_start=warm_start,
            early_stopping=early_stopping,
            scoring=scoring,
            validation_fraction=validation_fraction,
            n_iter_no_change=n_iter_no_change,
            tol=tol,
            verbose=verbose,
            random_state=random_state,
            class_weight=class_weight,
        )
        self.fairness = fairness
        self.penalty = penalty
        self.constraints = constraints
        self.tolerance = tolerance
        self.selection_rate = selection_rate
        self.multiplier_bound = multiplier_bound

    def fit(
        self,
        X,
        y,
        sample_weight=None,
        *,
        sensitive_features=None,
        X_val=None,
        y_val=None,
        sample_weight_val=None,
    ):
        """Fit the boosted trees to the penalised log-loss, under the constraint.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows (the sensitive attributes are not among them).
        y : array-like of shape (n_samples,)
            Labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights (also the rows' weights in a constraint's rates and
            its ``"prevalence"``).
        sensitive_features : array-like, DataFrame or dict, default=None
            Sensitive attributes of every row; their intersections are the
            penalty's and the constraint's groups. Needed with ``fairness >
            0`` or ``constraints``.
        X_val, y_val, sample_weight_val : array-like, default=None
            Validation rows for early stopping, as scikit-learn's.

        Returns
        -------
        self : object
            The fitted classifier.
        """
        self._validate_params()
        forget_constraint(self)
        # A federation's one-machine fit on resampled rows sets the rows'
        # weights in the rates (the cells' mix before resampling), once.
        rate_weight = self.__dict__.pop("_rate_weight", None)
        groups = self._training_groups(y, sensitive_features)
        if groups is None:
            self.n_groups_ = (
                1
                if sensitive_features is None
                else encode_groups(sensitive_features, n_samples=len(y)).n_groups
            )
            return super().fit(
                X,
                y,
                sample_weight,
                X_val=X_val,
                y_val=y_val,
                sample_weight_val=sample_weight_val,
            )
        self.n_groups_ = groups.n_groups
        if self.constraints is not None:
            self.groups_ = groups.labels
        return self._fit_boosted(
            X,
            y,
            sample_weight,
            groups.codes,
            X_val,
            y_val,
            sample_weight_val,
            rate_weight,
        )

    def _preprocess_X(self, X, *, reset):
        return preprocessed_columns(super(), X, reset=reset, owner=type(self).__name__)

    def _training_groups(self, y, sensitive_features):
        """The training rows' groups when a lever acts (None: none does)."""
        if self.fairness == 0 and self.constraints is None:
            return None
        levers = fairness_levers(self)
        if sensitive_features is None:
            warnings.warn(
                f"{levers} has no effect: no sensitive attributes were given "
                "(pass sensitive_features).",
                InactivePenaltyWarning,
                stacklevel=caller_stacklevel(),
            )
            return None
        groups = encode_groups(sensitive_features, n_samples=len(y))
        if groups.n_groups < 2:
            warnings.warn(
                f"The sensitive attributes take a single value {groups.labels[0]}, "
                f"so {levers} has no effect.",
                InactivePenaltyWarning,
                stacklevel=caller_stacklevel(),
            )
            return None
        if self.warm_start:
            raise ValueError(
                f"warm_start=True with {levers}: the penalised or constrained fit "
                "does not continue a fitted ensemble yet. Use warm_start=False, "
                "or fairness=0 and constraints=None."
            )
        if self.fairness == 0:
            return groups
        constraints = self.monotonic_cst
        if constraints is not None:
            values = (
                list(constraints.values())
                if isinstance(constraints, dict)
                else np.ravel(constraints).tolist()
            )
            if any(value != 0 for value in values):
                raise ValueError(
                    f"monotonic_cst={constraints!r} with fairness={self.fairness}: "
                    "the penalised trees' leaf values are a joint Newton step, "
                    "which does not keep monotonic constraints yet. Leave "
                    "monotonic_cst=None, or use fairness=0."
                )
        if self.max_leaf_nodes is None:
            raise ValueError(
                f"max_leaf_nodes=None with fairness={self.fairness}: the leaves' "
                "joint Newton step solves a leaves x leaves system every tree, "
                "so the leaves must be bounded. Set max_leaf_nodes (31 by "
                "default)."
            )
        return groups

    def _fit_boosted(
        self, X, y, sample_weight, groups, X_val, y_val, sample_weight_val, rate_weight
    ):
        """scikit-learn's fit, with the penalised, constrained loop of one client.

        ``rate_weight``: the rows' weights in the rates (None: their own).
        """
        # A fairness=0 fit that failed midway may have left scikit-learn's
        # flag that X is binned, which predict would then read.
        self.__dict__.pop("_in_fit", None)
        X, known_categories = self._preprocess_X(X, reset=True)
        y = self._encode_y(np.asarray(y))
        check_consistent_length(X, y)
        if self.n_trees_per_iteration_ != 1:
            raise ValueError(
                f"{fairness_levers(self)} needs a binary outcome; y has "
                f"{len(self.classes_)} classes (fairness=0 and constraints=None "
                "fit them)."
            )
        if sample_weight is not None:
            sample_weight = check_sample_weight(sample_weight, X, dtype=np.float64)
            if np.any(sample_weight < 0):
                raise ValueError(
                    "sample_weight holds negative weights with "
                    f"{fairness_levers(self)}: the group penalty and the "
                    "constraint's rates are weighted shares of each group's "
                    "rows, which need weights >= 0."
                )
            # As scikit-learn's fit: partial dependence refuses weighted fits.
            self._fitted_with_sw = True
        # The constraint's rates weigh the rows by their own weights, not by
        # the class weights the loss adds.
        if rate_weight is None:
            rate_weight = sample_weight
        sample_weight = self._finalize_sample_weight(sample_weight, y)
        # The seeds scikit-learn draws, in its order: the validation split's
        # and the feature subsampling's.
        rng = check_random_state(self.random_state)
        self._random_seed = rng.randint(np.iinfo(np.uint32).max, dtype="u8")
        feature_seed = rng.randint(np.iinfo(np.uint32).max, dtype="u8")
        self._feature_subsample_rng = np.random.default_rng(feature_seed)
        n_samples, self._n_features = X.shape
        interaction_cst = self._check_interaction_cst(self._n_features)
        self._loss = self._get_loss(sample_weight=sample_weight)
        validation_given = X_val is not None or y_val is not None
        if validation_given:
            if X_val is None or y_val is None:
                raise ValueError("Pass both X_val and y_val, or neither.")
            if self.early_stopping is False:
                raise ValueError(
                    "X_val and y_val are given while early_stopping is False; "
                    "they are early stopping's rows: set early_stopping to "
                    "'auto' or True."
                )
            X_val = self._preprocess_X(X_val, reset=False)
            y_val = self._encode_y_val(np.asarray(y_val))
            check_consistent_length(X_val, y_val)
            if sample_weight_val is not None:
                sample_weight_val = check_sample_weight(
                    sample_weight_val, X_val, dtype=np.float64
                )
        if self.early_stopping == "auto":
            self.do_early_stopping_ = n_samples > 10_000
        else:
            self.do_early_stopping_ = self.early_stopping
        if self.do_early_stopping_ and self.scoring != "loss":
            raise ValueError(
                f"scoring={self.scoring!r} with {fairness_levers(self)}: early "
                "stopping of the penalised or constrained trees scores the "
                "validation log-loss; set scoring='loss'."
            )
        self._use_validation_data = (
            self.validation_fraction is not None or validation_given
        )
        constraint = None
        if self.constraints is not None:
            constraint = RateConstraint.of(self, self.n_groups_)
        if (
            self.do_early_stopping_
            and self._use_validation_data
            and not validation_given
        ):
            weights = [w for w in (sample_weight, rate_weight) if w is not None]
            split = train_test_split(
                X,
                y,
                groups,
                *weights,
                test_size=self.validation_fraction,
                stratify=y,
                random_state=self._random_seed,
            )
            X, X_val, y, y_val, groups, _ = split[:6]
            if sample_weight is not None:
                sample_weight, sample_weight_val = split[6:8]
            if rate_weight is not None:
                rate_weight = split[-2]
        self._bin_mapper = BinMapper(
            n_bins=self.max_bins + 1,
            is_categorical=self._is_categorical_remapped,
            known_categories=known_categories,
            random_state=self._random_seed,
        )
        X_binned = self._bin_data(X, sample_weight, is_training_data=True)
        X_binned_val = (
            None
            if X_val is None
            else self._bin_data(X_val, sample_weight_val, is_training_data=False)
        )
        client = BoostingClient(
            X_binned,
            y,
            sample_weight,
            groups,
            X_binned_val=X_binned_val,
            y_val=y_val,
            sample_weight_val=sample_weight_val,
            missing_values_bin_idx=self._bin_mapper.missing_values_bin_idx_,
            rate_weight=rate_weight,
        )
        self.train_score_, self.validation_score_ = [], []
        # The log-odds of the (weighted) prevalence, as scikit-learn starts.
        baseline = float(
            np.reshape(
                self._loss.fit_intercept_only(y_true=y, sample_weight=sample_weight),
                -1,
            )[0]
        )
        fit_start = iteration_start = time()
        if self.verbose:
            print("Fitting gradient boosted rounds:")

        def on_iteration(predictors, scores):
            nonlocal iteration_start
            # Filled tree by tree (scikit-learn's printer reads the last one).
            self._predictors = predictors
            if scores is not None:
                # scikit-learn's scores: the negative mean log-losses.
                self.train_score_.append(-scores.train)
                if scores.validation is not None:
                    self.validation_score_.append(-scores.validation)
            if not predictors:  # the scores before the first tree
                return False
            stop = self.do_early_stopping_ and self._should_stop(
                self.validation_score_
                if self._use_validation_data
                else self.train_score_
            )
            if self.verbose >= 2:
                # scikit-learn's line per iteration, from its own printer.
                print(f"[{len(predictors)}/{self.max_iter}] ", end="")
                self._print_iteration_stats(iteration_start)
            iteration_start = time()
            return stop

        is_categorical = (
            np.zeros(self._n_features, dtype=np.uint8)
            if self._is_categorical_remapped is None
            else np.asarray(self._is_categorical_remapped, dtype=np.uint8)
        )
        self._predictors = []
        self._monotonic_cst_remapped = (
            np.zeros(self._n_features, dtype=np.int8)
            if self.fairness > 0
            else monotonic_constraints(self)
        )
        baseline, self._predictors = boost(
            [client],
            bin_mapper=self._bin_mapper,
            is_categorical=is_categorical,
            monotonic_cst=self._monotonic_cst_remapped,
            interaction_cst=interaction_cst,
            max_iter=self.max_iter,
            learning_rate=self.learning_rate,
            max_leaf_nodes=self.max_leaf_nodes,
            max_depth=self.max_depth,
            min_samples_leaf=self.min_samples_leaf,
            l2_regularization=self.l2_regularization,
            max_features=self.max_features,
            feature_rng=self._feature_subsample_rng,
            fairness=float(self.fairness),
            n_groups=self.n_groups_,
            baseline=baseline,
            score=bool(self.do_early_stopping_),
            on_iteration=on_iteration,
            constraint=constraint,
        )
        if constraint is not None:
            for name, value in constraint_fitted_attributes(constraint).items():
                setattr(self, name, value)
        if self.verbose:
            n_leaves = sum(tree[0].get_n_leaf_nodes() for tree in self._predictors)
            print(
                f"Fit {len(self._predictors)} trees in {time() - fit_start:.3f} s, "
                f"({n_leaves} total leaves)"
            )
        self._baseline_prediction = np.array([[baseline]])
        self.train_score_ = np.asarray(self.train_score_)
        self.validation_score_ = np.asarray(self.validation_score_)
        return self


def monotonic_constraints(model):
    """Read scikit-learn's monotonic constraints, in the binned features' order.

    Parameters
    ----------
    model : HistGradientBoostingClassifier
        A model whose inputs are read (``_n_features``, ``is_categorical_``).

    Returns
    -------
    constraints : ndarray of int8 of shape (n_features,)
        -1, 0 or 1 per binned feature, the categorical ones first.
    """
    n_features = model._n_features
    if model.monotonic_cst is None:
        return np.zeros(n_features, dtype=np.int8)
    constraints = np.asarray(
        check_monotonic_cst(model, model.monotonic_cst), dtype=np.int8
    )
    if model.is_categorical_ is None:
        return constraints
    categorical = np.asarray(model.is_categorical_, dtype=bool)
    if np.any(constraints[categorical] != 0):
        raise ValueError("Categorical features cannot have monotonic constraints.")
    # The categorical features come first, as scikit-learn's fit remaps them.
    return np.concatenate((constraints[categorical], constraints[~categorical]))
