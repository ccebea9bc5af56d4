"""One client's side of a federation: its rows, trainer and round.

What a client runs, in-process (``FederatedEstimator``, one joblib task per
client), or on its own machine (a Flower ClientApp): its data, the per-round
sampler and prior correction, local epochs (FedAvg) or meta-steps
(Per-FedAvg), its split into training and held-out rows, its seeds, and the
metrics it reports on held-out rows.
"""

from __future__ import annotations

import copy
import functools
import inspect
import itertools
import numbers
import threading
import warnings
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp
from sklearn import config_context
from sklearn.base import clone
from sklearn.metrics import log_loss, roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.utils import check_random_state

from .._compat import num_samples, safe_indexing
from .._gate._policy import Failed
from .._groups import SensitiveGroups, column_positions, take_rows
from .._minibatch import epoch_minibatches, epochs_per_call
from .._models._fair_base import BaseFairClassifier, proximal_term, rate_term
from .._validation import is_plain_array
from ..exceptions import InactivePenaltyWarning
from ..metrics import fairness_summary
from ..metrics._fairness import class_summary
from ..metrics._registry import DISPARITIES, share_key
from ..metrics._registry import keys as metric_keys
from ..metrics._scores import binary_roc_auc, multiclass_brier, ovr_roc_auc
from ..over_sampling import FairnessAwareROSE
from ..over_sampling._minibatches import resample_minibatches, vectorises
from ._parameters import assign_parameters, parameter_arrays

#: Strategies whose clients exchange parameters with the server every round.
COMMUNICATING = ("fedavg", "pfedavg")
# The disparities every client reports on its held-out rows (the paper's four).
_DISPARITIES = {m.key: name for name, m in DISPARITIES.items() if m.reported}
#: What every client reports of its held-out (or evaluation) rows each round,
#: as ``val_<name>`` (``history_``, and a Flower client's evaluation reply);
#: more than two classes add ``share[<label>]``. The Flower protocol's
#: allowed metrics derive from the same registry.
VALIDATION_METRICS = metric_keys(reported=True)
#: What a Per-FedAvg client also reports of its personalised model.
PERSONAL_METRICS = metric_keys(personal=True)


@functools.lru_cache(maxsize=256)
def _parameters_of(function):
    return frozenset(inspect.signature(function).parameters)


def _accepts(method, name):
    """Whether a (bound) method takes a parameter; cached per class method."""
    return name in _parameters_of(getattr(method, "__func__", method))


def _set_step_size(estimator, step):
    """Set the SGD step of an estimator, whatever it calls it."""
    params = estimator.get_params(deep=False)
    if isinstance(params.get("learning_rate"), numbers.Real) and not isinstance(
        params.get("learning_rate"), bool
    ):
        estimator.set_params(learning_rate=step)
    elif "eta0" in params:  # SGDClassifier
        estimator.set_params(learning_rate="constant", eta0=step)
    elif "learning_rate_init" in params:  # MLPClassifier
        estimator.set_params(learning_rate_init=step)
    else:
        raise TypeError(
            f"Per-FedAvg needs to set the step size of {type(estimator).__name__}, "
            "which has no learning_rate, eta0 or learning_rate_init parameter."
        )


def _step_size(estimator):
    params = estimator.get_params(deep=False)
    for name in ("learning_rate", "eta0", "learning_rate_init"):
        value = params.get(name)
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            return float(value)
    return 0.01


class _ClientData:
    """One client's rows: inputs, labels and their sensitive groups.

    ``groups`` are the rows' :class:`~skfedida._groups.SensitiveGroups`,
    taken from the one encoding of the federation's S (None without sensitive
    features): skfedida's samplers and estimators work on them directly.
    Other components get the sensitive features as the user gave them,
    ``take_rows(source, positions)``, cut only when one asks. ``weight``
    holds the rows' sample weights, times their prior-correction weights for
    resampled rows (None: unweighted).
    """

    def __init__(self, X, y, groups=None, weight=None, *, source=None, positions=None):
        self.X, self.y, self.groups = X, y, groups
        self.weight = weight
        self.source, self.positions = source, positions
        self.n = X.shape[0] if is_plain_array(X) else num_samples(X)
        # The client's held-out rows, where it has them (fairness reports).
        self.held_out = None
        # What rounds of one fit derive from these rows alone (the noised
        # columns, the validated model inputs), computed in the first round.
        self._derived = {}

    def derived(self, key, compute):
        """``compute()``, once per key for these rows."""
        if key not in self._derived:
            self._derived[key] = compute()
        return self._derived[key]

    def take(self, rows):
        groups, positions = self._sensitive_of(rows)
        return _ClientData(
            self.X[rows] if is_plain_array(self.X) else safe_indexing(self.X, rows),
            self.y[rows],
            groups,
            None if self.weight is None else self.weight[rows],
            source=self.source,
            positions=positions,
        )

    def _sensitive_of(self, rows):
        """The groups and source positions of some rows (None where absent)."""
        return (
            None if self.groups is None else self.groups.take(rows),
            None if self.positions is None else self.positions[rows],
        )

    def batch(self, rows):
        """``take(rows)`` numbering only the groups present in these rows.

        The sampler and the estimator then find the codes compact and use
        them as they are.
        """
        batch = self.take(rows)
        if batch.groups is not None:
            batch.groups = batch.groups.compact()
        return batch

    def sensitive_for(self, component):
        """The rows' sensitive features in the form a component takes them."""
        if self.groups is None or getattr(component, "accepts_encoded_groups", False):
            return self.groups
        if self.source is None:  # no user form known: the values by column
            return self.groups.values()
        return take_rows(self.source, self.positions)


_STREAMS = threading.local()


def _reseeded(stream, seed):
    """``np.random.RandomState(seed)``, reusing this thread's object for ``stream``.

    A new RandomState draws OS entropy for its MT19937 before the legacy
    seeding replaces it (~60 us); reseeding one is ~1 us, and gives the same
    stream. A client round draws two (its own and its sampler's): 0.12 ms
    of a round's fixed cost. For streams used only within one client round
    of one thread (nothing keeps them past it); each thread keeps one
    object per stream name for its lifetime.
    """
    states = getattr(_STREAMS, "by_name", None)
    if states is None:
        states = _STREAMS.by_name = {}
    random_state = states.get(stream)
    if random_state is None:
        random_state = states[stream] = np.random.RandomState(seed)
    else:
        random_state.seed(seed)
    return random_state


def _round_sampler(sampler, random_state):
    """The client's sampler for one round, drawing from its own seeded stream."""
    if sampler is None:
        return None
    sampler = clone(sampler)
    if "random_state" in sampler.get_params(deep=False):
        # The sampler is the round's own clone, dropped with the round.
        sampler.set_params(
            random_state=_reseeded("sampler", random_state.randint(2**31 - 1))
        )
    return sampler


def _prior_weights(
    y_codes, resampled_codes, n_classes, weight=None, resampled_weight=None
):
    """Weights that give resampled rows the label shares of the original rows.

    A row of class c gets ``p_c / q_c``, with ``p_c`` the share of class c
    before resampling and ``q_c`` after. The weighted rows then have the
    original label prevalence (so the model's probabilities are not shifted
    toward the resampled balance) while the resampled balance *within* and
    *across* sensitive groups is kept. The weights average to 1 over the
    resampled rows, so an estimator whose steps scale with the weights
    (sklearn's SGDClassifier) keeps its step size; skfedida's estimators
    minimise a weighted mean, which no common factor changes. With the rows'
    own weights (``weight``, and ``resampled_weight``: each resampled row's
    seed row's) the shares are weighted, and each row's weight is its own
    times its class's ratio.
    """
    before = np.bincount(y_codes, weights=weight, minlength=n_classes)
    before = before / before.sum()
    after = np.bincount(resampled_codes, weights=resampled_weight, minlength=n_classes)
    after = after / after.sum()
    ratio = np.divide(before, after, out=np.ones(n_classes), where=after > 0)
    if resampled_weight is None:
        return ratio[resampled_codes]
    return ratio[resampled_codes] * resampled_weight


def _takes_sensitive(method, routed):
    """Whether a component's method is sent S: by routing, else by signature."""
    if routed is not None:
        return routed
    return _accepts(method, "sensitive_features")


def _resample(sampler, data, prior_correction=None, routed=None):
    """Resample one client's rows (or one batch) jointly with their groups.

    ``routed``: whether metadata routing sends S to the sampler (None:
    routing is off, and S goes wherever ``fit_resample`` takes it).
    """
    if sampler is None or data.n == 0 or (data.y == data.y[0]).all():
        return data  # nothing to balance in rows of one class
    kwargs = {}
    if data.groups is not None and _takes_sensitive(sampler.fit_resample, routed):
        kwargs["sensitive_features"] = data.sensitive_for(sampler)
    X_res, y_res = sampler.fit_resample(data.X, data.y, **kwargs)
    groups = positions = None
    if (data.groups is not None or data.weight is not None) and not hasattr(
        sampler, "sample_indices_"
    ):
        raise TypeError(
            f"{type(sampler).__name__} does not report sample_indices_, so the "
            "sensitive features and sample weights cannot follow the resampled "
            "rows."
        )
    if data.groups is not None:
        groups, positions = data._sensitive_of(sampler.sample_indices_)
    y_res = np.asarray(y_res)
    # A resampled row weighs what its seed row weighs (a synthetic row too).
    weight = None if data.weight is None else data.weight[sampler.sample_indices_]
    if prior_correction == "weights":
        classes, y_codes = np.unique(data.y, return_inverse=True)
        resampled_codes = np.searchsorted(classes, y_res)
        weight = _prior_weights(
            y_codes, resampled_codes, classes.size, data.weight, weight
        )
    return _ClientData(
        X_res, y_res, groups, weight, source=data.source, positions=positions
    )


@dataclass(frozen=True)
class SensitiveRouting:
    """Whether metadata routing sends the sensitive features, per component.

    ``sampler`` and ``estimator`` are each True or False when routing is
    on; None when it is off, and the component's signature decides.
    """

    sampler: bool | None = None
    estimator: bool | None = None


#: Routing off: every component's signature decides.
UNROUTED = SensitiveRouting()


class _Trainer:
    """The client routine: what one client runs in one round.

    It is a plain object of parameters so that the in-process federation, the
    joblib workers and a Flower ClientApp all run the same code.
    """

    def __init__(
        self,
        *,
        sampler,
        resample,
        batch_size,
        classes,
        strategy,
        inner_learning_rate,
        outer_learning_rate,
        prior_correction=None,
        sensitive_routing=UNROUTED,
        proximal_mu=0.0,
    ):
        self.sampler = sampler
        # FedProx's proximal weight: the term every round's training adds.
        self.proximal_mu = proximal_mu
        # Whether metadata routing sends each component S (SensitiveRouting).
        self.sensitive_routing = sensitive_routing
        self.resample = resample
        self.prior_correction = prior_correction
        self.batch_size = batch_size
        self.classes = classes
        self.strategy = strategy
        self.inner_learning_rate = inner_learning_rate
        self.outer_learning_rate = outer_learning_rate
        # The round's rate-constraint term, from the server (None: none).
        self.rate_term = None

    def _fit_kwargs(self, estimator, data):
        """``classes``, and the rows' S when ``partial_fit`` takes them."""
        kwargs = {"classes": self.classes}
        if data.groups is not None and _takes_sensitive(
            estimator.partial_fit, self.sensitive_routing.estimator
        ):
            kwargs["sensitive_features"] = data.sensitive_for(estimator)
        if data.weight is not None:
            kwargs["sample_weight"] = data.weight
        return kwargs

    def _resample(self, sampler, data):
        return _resample(
            sampler, data, self.prior_correction, self.sensitive_routing.sampler
        )

    def _partial_fit(self, estimator, data):
        estimator.partial_fit(data.X, data.y, **self._fit_kwargs(estimator, data))

    def _step(self, estimator, data):
        """One SGD step on one (resampled) minibatch, as Algorithm 2 takes.

        A sampler can grow a minibatch past the estimator's ``batch_size``
        (``n_target="max"``, or rounding), and ``partial_fit`` would split it
        into several steps: a different algorithm from the vectorised epochs'
        one step per resampled minibatch, and a wrong Per-FedAvg
        meta-gradient, which reads one step off each ``partial_fit``. Our
        estimators take the whole minibatch in one step; other estimators'
        ``partial_fit`` runs as they define it.
        """
        if not isinstance(estimator, BaseFairClassifier) or (
            data.n <= estimator.batch_size
        ):
            self._partial_fit(estimator, data)
            return
        batch_size = estimator.batch_size
        estimator.batch_size = data.n
        try:
            self._partial_fit(estimator, data)
        finally:
            estimator.batch_size = batch_size

    def prime(self, estimator, data):
        """Create the estimator's fitted attributes without learning, if it can."""
        first = data.take(np.arange(min(data.n, 2)))
        first.weight = None  # primed with zero weights, whatever the rows'
        kwargs = self._fit_kwargs(estimator, first)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                estimator.partial_fit(
                    first.X, first.y, sample_weight=np.zeros(first.n), **kwargs
                )
            except ValueError:
                # Estimators that refuse all-zero weights (MLPClassifier) learn
                # from these rows; the server's parameters replace it anyway.
                estimator.partial_fit(first.X, first.y, **kwargs)
        return estimator

    def _client_sampler(self, data, random_state):
        """The round's sampler, set up for this client's minibatches."""
        sampler = _round_sampler(self.sampler, random_state)
        if isinstance(sampler, FairnessAwareROSE) and isinstance(
            sampler.categorical_features, str
        ):
            # Noised columns decided on the client's rows, not per minibatch,
            # and once per fit: neither the rows nor the rule change.
            noised = data.derived(
                ("rose-noised", repr(sampler.sensitive)),
                lambda: sampler.noised_columns(data.X),
            )
            sampler.set_params(categorical_features=~noised)
        return sampler

    def _batches(self, data, random_state):
        order = random_state.permutation(data.n)
        return [
            order[start : start + self.batch_size]
            for start in range(0, data.n, self.batch_size)
        ]

    def train(self, estimator, data, epochs, random_state):
        """Local epochs from the estimator's current parameters.

        With ``proximal_mu``, FedProx's term anchored at those parameters
        (the round's global ones) is in every step's objective; with a
        ``rate_term``, the server's rate constraint's.
        """
        with rate_term(estimator, self.rate_term):
            return self._train_with_proximal_term(estimator, data, epochs, random_state)

    def _train_with_proximal_term(self, estimator, data, epochs, random_state):
        if not self.proximal_mu:
            return self._train(estimator, data, epochs, random_state)
        if not isinstance(estimator, BaseFairClassifier):
            raise TypeError(
                f"FedProx's proximal term (proximal_mu={self.proximal_mu!r}) is "
                "added to the training objective of skfedida's estimators "
                "(FairPenaltyLogisticRegression, FairMLPClassifier); "
                f"{type(estimator).__name__} trains with its own. Use "
                "FedProx(proximal_mu=0) or FedAvg() with it."
            )
        with proximal_term(estimator, self.proximal_mu):
            return self._train(estimator, data, epochs, random_state)

    def _train(self, estimator, data, epochs, random_state):
        sampler = self._client_sampler(data, random_state)
        if self.strategy == "pfedavg":
            for _ in range(epochs):
                self._per_fedavg_epoch(estimator, data, sampler, random_state)
            return estimator
        if sampler is None or self.resample == "client":
            local = self._resample(sampler, data)
            checked = _checked_rows(self, estimator, local)
            if checked is not None and epochs:
                # partial_fit's epochs, on rows checked once per fit.
                return estimator.train_epochs(
                    *checked, epochs=epochs, sample_weight=local.weight
                )
            for _ in range(epochs):
                self._partial_fit(estimator, local)
            return estimator
        resampled_epochs = _ResampledEpochs.of(self, estimator, sampler, data)
        if resampled_epochs is not None:
            # The paper's Algorithm 2: resample every minibatch of the client.
            resampled_epochs(random_state, epochs)
            return estimator
        for _ in range(epochs):
            for rows in self._batches(data, random_state):
                self._step(estimator, self._resample(sampler, data.batch(rows)))
        return estimator

    def _per_fedavg_epoch(self, estimator, data, sampler, random_state):
        """First-order Per-FedAvg (Fallah et al., 2020) over pairs of batches.

        theta' = theta - alpha * grad f(theta; D1) is one ``partial_fit`` on D1
        at step alpha; the meta-gradient at theta' on D2 is read off one
        ``partial_fit`` on D2 at step beta from theta' (beta * g = theta' -
        theta''), and theta moves by -beta * g.

        Batches are used in pairs; an unpaired last batch (a client of one
        batch, or of an odd number) is split in two halves for its meta-step,
        so every client of two rows or more trains.
        """
        batches = self._batches(data, random_state)
        if len(batches) % 2 and batches[-1].size >= 2:
            last = batches.pop()
            half = last.size // 2
            batches += [last[:half], last[half:]]
        beta = self.outer_learning_rate or _step_size(estimator)
        for first, second in zip(batches[0::2], batches[1::2], strict=False):
            theta = parameter_arrays(estimator)
            _set_step_size(estimator, self.inner_learning_rate)
            self._step(estimator, self._resample(sampler, data.take(first)))
            adapted = parameter_arrays(estimator)
            _set_step_size(estimator, beta)
            self._step(estimator, self._resample(sampler, data.take(second)))
            stepped = parameter_arrays(estimator)
            assign_parameters(
                estimator,
                [t - (a - s) for t, a, s in zip(theta, adapted, stepped, strict=True)],
            )
        _set_step_size(estimator, beta)

    def personalise(self, estimator, data, steps, random_state):
        """Per-FedAvg's personalised model: a few steps of size alpha."""
        _set_step_size(estimator, self.inner_learning_rate)
        sampler = self._client_sampler(data, random_state)
        for _ in range(steps):
            rows = random_state.permutation(data.n)[: self.batch_size]
            self._step(estimator, self._resample(sampler, data.take(rows)))
        return estimator

    def personalised(self, estimator, data, steps, client_seed, round_):
        """The personalised model a client uses after ``round_`` (1-based) rounds.

        ``estimator``, set to the global model, adapted in place with the
        client's seed of that round: what ``FederatedEstimator(n_rounds=
        round_)`` keeps in ``client_estimators_``, and what both backends
        evaluate each round and a Flower node keeps after the last.
        """
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InactivePenaltyWarning)
            return self.personalise(
                estimator,
                data,
                steps,
                np.random.RandomState(_round_seed(client_seed, round_)),
            )


class _ResampledEpochs:
    """Algorithm 2 for skfedida's own sampler and estimator, an epoch at a time.

    The general path calls ``fit_resample`` and ``partial_fit`` on every
    minibatch: ~0.4 ms of validation and bookkeeping per minibatch, around
    steps that take microseconds. With a :class:`FairnessAwareROSE` and a
    fairness-penalised estimator, the client's rows are validated once per
    round, every minibatch of an epoch is resampled at once
    (:func:`~skfedida.over_sampling._minibatches.resample_minibatches`) and
    the estimator takes one step per resampled minibatch
    (``train_minibatches``), as Algorithm 2 does. Column mode (sensitive
    columns in a DataFrame) then costs what metadata mode does.
    """

    def __init__(self, trainer, estimator, sampler, arrays):
        self.trainer, self.estimator, self.sampler = trainer, estimator, sampler
        (
            self.X,
            self.y,
            self.groups,
            self.sampler_groups,
            self.noised,
        ) = arrays
        self.labels = self.y.astype(np.intp)  # the labels as codes, once
        self.n_labels = len(trainer.classes)
        self.sampler_random_state = check_random_state(sampler.random_state)
        # This round's rows with room after them for the synthetic rows of
        # the epochs resampled at once (X, labels, group codes): _extended.
        self._rows_and_room = None

    def _extended(self, n_synthetic):
        """The rows, and room for ``n_synthetic`` rows after them.

        Made once per round (a copy of the client's rows), and again only
        when epochs make more synthetic rows than the last: the epochs then
        write just their synthetic rows, and the loop gathers every
        minibatch's rows from here, where ``X[rows]`` copied every resampled
        row every epoch. Dropped with the round: one client's copy at a time
        per job, as ``X[rows]`` was.
        """
        n_samples = self.y.shape[0]
        size = n_samples + n_synthetic
        if self._rows_and_room is None or self._rows_and_room[1].shape[0] < size:
            size += n_synthetic // 2  # epochs' synthetic counts vary a little
            X = np.empty((size, self.X.shape[1]))
            X[:n_samples] = self.X
            y = np.empty(size)
            y[:n_samples] = self.y
            codes = np.empty(size, dtype=np.intp)
            codes[:n_samples] = self.groups.codes
            self._rows_and_room = (X, y, codes)
        return self._rows_and_room

    @classmethod
    def of(cls, trainer, estimator, sampler, data):
        """The vectorised epochs of this client, or None where they do not apply."""
        if not cls._applies(trainer, estimator, sampler, data):
            return None
        key = (
            "resampled-epochs",
            type(estimator),
            repr(estimator.sensitive),
            repr(sampler.get_params()["sensitive"]),
            _parameter_key(sampler.categorical_features),
            trainer.sensitive_routing,
        )
        arrays = data.derived(
            key, lambda: cls._arrays(trainer, estimator, sampler, data)
        )
        return cls(trainer, estimator, sampler, arrays)

    @staticmethod
    def _applies(trainer, estimator, sampler, data):
        return (
            _own_training(estimator)
            and vectorises(sampler)
            and not sp.issparse(data.X)
            and np.array_equal(getattr(estimator, "classes_", ()), trainer.classes)
            and data.weight is None
        )

    @staticmethod
    def _arrays(trainer, estimator, sampler, data):
        """The client's rows as the epochs use them: validated once per fit."""
        S_sampler = None
        if data.groups is not None and _takes_sensitive(
            sampler.fit_resample, trainer.sensitive_routing.sampler
        ):
            S_sampler = data.sensitive_for(sampler)
        # The checks partial_fit and fit_resample would run, once per fit.
        X, labels, groups = _checked_rows(trainer, estimator, data)
        sampler_groups = sampler.sensitive_groups(data.X, sensitive_features=S_sampler)
        noised = sampler.noised_columns(data.X)
        if estimator.sensitive is not None:
            # The model's inputs are X's columns without the sensitive ones.
            noised = np.delete(
                noised, column_positions(data.X, estimator.sensitive, "sensitive")
            )
        X = np.asarray(X, dtype=np.float64)
        noised = np.flatnonzero(noised)
        return (
            X,
            labels,
            groups,
            sampler_groups,
            noised,
        )

    def __call__(self, random_state, epochs=1):
        """Local epochs: shuffle, resample every minibatch, one step each.

        Up to ``FUSED_ROWS`` rows of epochs are resampled in one call and
        trained on in one or two (the last epoch of the round apart, so
        that ``loss_`` is its own): the same draws and steps as epoch by
        epoch, with those calls' fixed costs paid once for a small client.
        """
        n_samples = self.y.shape[0]
        per_call = epochs_per_call(n_samples)
        done = 0
        while done < epochs:
            n_epochs = min(per_call, epochs - done)
            done += n_epochs
            self._epochs(random_state, n_epochs, ends_round=done == epochs)

    def _epochs(self, random_state, n_epochs, *, ends_round):
        n_samples = self.y.shape[0]
        batch_size = self.trainer.batch_size
        labels = self.labels
        # The epochs' shuffles come from the round's stream and the
        # resampling's draws from the sampler's: drawing the shuffles first
        # leaves both sequences as epoch-by-epoch calls leave them.
        orders = [random_state.permutation(n_samples) for _ in range(n_epochs)]
        order = orders[0] if n_epochs == 1 else np.concatenate(orders)
        rows, bounds, synthetic, noise = resample_minibatches(
            self.sampler,
            order,
            batch_size,
            self.sampler_groups.codes,
            self.sampler_groups.n_groups,
            labels,
            self.X,
            self.sampler_random_state,
            noised_columns=self.noised,
            n_labels=self.n_labels,
            epochs=n_epochs,
        )
        if noise is None:
            # Synthetic rows without noise are their seed rows: the loop
            # gathers them where they are, in whatever layout.
            X, y, groups, positions = self.X, self.y, self.groups, rows
        else:
            # The synthetic rows, noised, written after the client's rows.
            n_synthetic = synthetic.size
            X, y, codes = self._extended(n_synthetic)
            end = n_samples + n_synthetic
            seeds = rows[synthetic]
            synthetic_rows = X[n_samples:end]
            np.take(self.X, seeds, axis=0, out=synthetic_rows)
            synthetic_rows[:, self.noised] += noise
            y[n_samples:end] = self.y[seeds]
            codes[n_samples:end] = self.groups.codes[seeds]
            X, y = X[:end], y[:end]
            groups = SensitiveGroups(codes[:end], self.groups.labels, self.groups.names)
            positions = rows.copy()
            positions[synthetic] = np.arange(n_samples, end)
        weight = None
        if self.trainer.prior_correction == "weights":
            weight = _minibatch_prior_weights(
                labels, order, batch_size, rows, bounds, self.n_labels, n_epochs
            )
        # One training call per epoch with weights (below), else one for the
        # epochs and one for the round's last epoch.
        epoch_batches = -(-n_samples // batch_size)
        if weight is not None:
            cuts = range(0, n_epochs * epoch_batches + 1, epoch_batches)
        elif ends_round and n_epochs > 1:
            cuts = (0, (n_epochs - 1) * epoch_batches, n_epochs * epoch_batches)
        else:
            cuts = (0, n_epochs * epoch_batches)
        takes_rows = _accepts(self.estimator.train_minibatches, "rows")
        for first, last in itertools.pairwise(cuts):
            begin, stop = bounds[first], bounds[last]
            call_rows = positions[begin:stop]
            call_bounds = bounds[first : last + 1] - begin
            if not takes_rows:  # a subclass's train_minibatches of before
                self.estimator.train_minibatches(
                    X[call_rows],
                    y[call_rows],
                    groups.take(call_rows),
                    call_bounds,
                    sample_weight=None if weight is None else weight[begin:stop],
                )
                continue
            row_weight = None
            if weight is not None:
                # Within an epoch, a row that is taken twice (kept and as a
                # seed) is taken in its own minibatch with its own label,
                # hence with one weight: the weights can sit by row.
                row_weight = np.zeros(X.shape[0])
                row_weight[call_rows] = weight[begin:stop]
            self.estimator.train_minibatches(
                X, y, groups, call_bounds, sample_weight=row_weight, rows=call_rows
            )


def _minibatch_prior_weights(
    labels, order, batch_size, rows, bounds, n_labels=2, epochs=1
):
    """``_prior_weights`` of every resampled minibatch, at once.

    ``order`` holds ``epochs`` epochs' shuffles, each cut into minibatches.
    """
    n_batches = bounds.size - 1
    batch_before, size_before = epoch_minibatches(
        order.size // epochs, batch_size, epochs
    )
    cells = n_labels * n_batches
    before = (
        np.bincount(batch_before * n_labels + labels[order], minlength=cells).reshape(
            n_batches, n_labels
        )
        / size_before[:, None]
    )
    batch_after = np.repeat(np.arange(n_batches), np.diff(bounds))
    labels_after = labels[rows]
    after = (
        np.bincount(batch_after * n_labels + labels_after, minlength=cells).reshape(
            n_batches, n_labels
        )
        / np.diff(bounds)[:, None]
    )
    ratio = np.divide(before, after, out=np.ones_like(before), where=after > 0)
    return ratio[batch_after, labels_after]


@dataclass(frozen=True)
class RoundReply:
    """What one client's training round gives back, on either backend.

    ``model`` stays with the client (its optimiser state carries into its
    next round); the server sees the rest: the parameter arrays, the rows
    they rest on, the mean training loss and, for FairFed, the client's
    counts per group for the global model it was sent.
    """

    model: object
    parameters: list
    n_rows: int
    loss: float
    report: dict | None = None


@dataclass(frozen=True)
class RoundEvaluation:
    """One round's evaluation replies as the server reads them, on either backend.

    ``outcomes``: per evaluated client its ``Outcome``, for the failure
    policy; ``metrics`` and ``rows``: per usable client
    index, its ``val_*`` metrics and the evaluation rows they rest on.
    """

    outcomes: list
    metrics: dict
    rows: dict


def _client_round(trainer, estimator, parameters, data, epochs, seed):
    """Run one client's round: a ``RoundReply``."""
    random_state = _reseeded("round", seed)
    if parameters is not None:
        assign_parameters(estimator, parameters)
    # Parameters were validated when the client's estimator was initialised
    # and the sampler when fit began; X was checked to be finite once.
    with (
        warnings.catch_warnings(),
        config_context(skip_parameter_validation=True, assume_finite=True),
    ):
        warnings.simplefilter("ignore", InactivePenaltyWarning)
        trainer.train(estimator, data, epochs, random_state)
    proba = np.clip(_training_proba(estimator, data), 1e-15, 1 - 1e-15)
    loss = _log_loss(data.y, proba, trainer.classes, data.weight)
    return RoundReply(estimator, parameter_arrays(estimator), data.n, loss)


def _model_inputs_key(estimator):
    return ("model-inputs", type(estimator), repr(estimator.sensitive))


def _parameter_key(value):
    """A parameter as part of a cache key: arrays by their bytes, not their repr.

    The round's sampler holds the client's noised columns as a mask, and
    printing an array costs ~80 us, every client and round.
    """
    if isinstance(value, np.ndarray) and not value.dtype.hasobject:
        return ("ndarray", value.dtype.str, value.shape, value.tobytes())
    return repr(value)


def _own_training(estimator):
    """Whether an estimator trains as skfedida's own ``partial_fit`` does.

    Its entries for checked rows then take ``partial_fit``'s steps; a
    subclass that overrides ``partial_fit`` is trained through it.
    """
    return isinstance(estimator, BaseFairClassifier) and type(
        estimator
    ).partial_fit.__module__.startswith("skfedida.")


def _checked_rows(trainer, estimator, data):
    """``estimator.check_rows`` of the rows, once per fit; None where it does not apply.

    A ``CheckedRows`` (model inputs, label codes, groups): what
    ``partial_fit`` checks on every call, for the entries that take checked
    rows (``train_epochs``, ``train_minibatches``). Only skfedida's
    estimators, fitted for the federation's classes, have them.
    """
    if not _own_training(estimator) or not np.array_equal(
        getattr(estimator, "classes_", ()), trainer.classes
    ):
        return None
    routed = trainer.sensitive_routing.estimator

    def check():
        S = None
        if data.groups is not None and _takes_sensitive(estimator.partial_fit, routed):
            S = data.sensitive_for(estimator)
        checked = estimator.check_rows(data.X, data.y, sensitive_features=S)
        # The model inputs _training_proba predicts, as check_rows gives
        # them (a DataFrame's values are column-major, and a matrix product
        # rounds by layout: a copy would move the reported losses' last
        # bits). The loops gather their rows from any layout.
        data.derived(_model_inputs_key(estimator), lambda: checked.X_model)
        return checked

    key = ("checked-rows", *_model_inputs_key(estimator), routed)
    return data.derived(key, check)


def _training_proba(estimator, data):
    """``estimator.predict_proba(data.X)``, validating the rows once per fit."""
    if not isinstance(estimator, BaseFairClassifier):
        return estimator.predict_proba(data.X)
    X = data.derived(
        _model_inputs_key(estimator), lambda: estimator.check_rows(data.X).X_model
    )
    return estimator.predict_proba_checked(X)


def _log_loss(y, proba, classes, weight=None):
    """``sklearn.metrics.log_loss(y, proba, labels=classes)`` of a client's rows.

    Its validation costs milliseconds per call; the rows' labels were
    checked against ``classes`` when the fit began. ``weight``: the rows'
    sample weights (a weighted mean).
    """
    if proba.shape[1] != len(classes):
        return float(log_loss(y, proba, labels=classes, sample_weight=weight))
    column = np.searchsorted(classes, y)
    # As log_loss: probabilities of a row normalised to sum to 1.
    true = proba[np.arange(y.shape[0]), column] / proba.sum(axis=1)
    return float(-np.average(np.log(true), weights=weight))


def _split_client(y, validation_fraction, seed, client=None):
    """Positions of one client's training and held-out rows (sorted).

    The split depends on the client's own labels and seed only, so a Flower
    client holding just its rows splits them as the in-process federation does.
    """
    positions = np.arange(y.shape[0])
    if validation_fraction is None:
        return positions, None
    n_held_out = int(np.ceil(validation_fraction * y.shape[0]))
    if y.shape[0] < 2 or n_held_out >= y.shape[0]:
        raise ValueError(
            f"Client {client!r} has {y.shape[0]} row(s): validation_fraction="
            f"{validation_fraction} leaves it no training rows. Lower "
            "validation_fraction or merge the client's rows into another."
        )
    # Stratify by label when every class has two rows to split.
    _, class_counts = np.unique(y, return_counts=True)
    stratify = y if class_counts.size > 1 and class_counts.min() > 1 else None
    train, held_out = train_test_split(
        positions,
        test_size=validation_fraction,
        stratify=stratify,
        random_state=seed,
    )
    return np.sort(train), np.sort(held_out)


def _round_seed(client_seed, round_):
    """The seed of one client's training in one round (0-based)."""
    return int(np.random.SeedSequence([int(client_seed), round_]).generate_state(1)[0])


def _validation_metrics(model, X, y, S, classes, weight=None):
    """AUROC, selection rate, Brier score and disparities on held-out rows.

    The disparities are those of ``predict``'s decisions. Plain floats (NaN
    where undefined), as both the in-process history and a Flower
    MetricRecord need them. With more than two classes: AUROC one-vs-rest,
    the mean over the classes these rows hold (as evaluate_clients
    reports it), the multi-class Brier score (squared error summed over
    classes), no single selection rate (NaN), and each disparity the worst
    over the classes one-vs-rest.
    """
    y = np.asarray(y)
    proba = model.predict_proba(X)
    predicted = model.predict(X)
    if len(classes) > 2:
        # As evaluate_clients reports them: the mean of the one-vs-rest
        # AUROCs of the classes these rows hold.
        codes = np.searchsorted(classes, y)
        metrics = {
            "roc_auc": ovr_roc_auc(codes, proba, weight)[0],
            "selection_rate": np.nan,
            "brier": multiclass_brier(codes, proba, weight),
            # Each class's share of the decisions: their weighted means over
            # the clients are the federation's shares (a server's
            # degenerate-model check), which one client's own top share is not.
            **{
                share_key(label): float(np.average(predicted == label, weights=weight))
                for label in classes
            },
        }
        pos_label = None
    else:
        scores = proba[:, 1]
        positive = (y == classes[-1]).astype(np.float64)
        metrics = {
            "roc_auc": (
                binary_roc_auc(y == classes[-1], scores)
                if weight is None
                else float(roc_auc_score(positive, scores, sample_weight=weight))
            ),
            "selection_rate": float(
                np.average(predicted == classes[-1], weights=weight)
            ),
            "brier": float(np.average((scores - positive) ** 2, weights=weight)),
        }
        pos_label = classes[-1]
    if S is None:
        metrics.update(dict.fromkeys(_DISPARITIES, np.nan))
        return metrics
    if pos_label is None:
        summary = class_summary(y, predicted, classes, S, sample_weight=weight)
    else:
        summary = fairness_summary(
            y,
            predicted,
            sensitive_features=S,
            pos_label=pos_label,
            sample_weight=weight,
        )
    for name, key in _DISPARITIES.items():
        metrics[name] = float(summary[key])
    return metrics


def _check_sampler_input(sampler, X):
    """Refuse sparse X for FairnessAwareROSE before any client starts."""
    if isinstance(sampler, FairnessAwareROSE) and sp.issparse(X):
        raise TypeError(
            "FairnessAwareROSE does not accept sparse X (synthetic rows add dense "
            "noise): convert X with X.toarray(), or use a sampler without noise."
        )


def _client_seeds(random_state, n_clients):
    """The seed of every client's estimator, sampler and batch order."""
    return check_random_state(random_state).randint(
        np.iinfo(np.int32).max, size=n_clients
    )


def selection_stream(seeds):
    """The seeded stream that selects each round's clients (one per federation).

    Seeded by the first client's seed; both backends draw from it once per
    training round, and only when some clients sit a round out.
    """
    return np.random.RandomState(seeds[0])


def round_clients(selection_rng, n_clients, strategy, client_fraction):
    """Indices of the clients taking part in one round, sorted.

    Every client when they do not communicate (Local, Central) or all take
    part; else ``client_fraction`` of them (at least one), drawn from
    ``selection_rng``.
    """
    if strategy not in COMMUNICATING:
        return np.arange(n_clients)
    return _select_clients(selection_rng, n_clients, client_fraction)


def _select_clients(selection_rng, n_clients, client_fraction):
    """Indices of the clients taking part in one round, sorted."""
    if client_fraction >= 1:
        return np.arange(n_clients)
    n_selected = max(1, round(client_fraction * n_clients))
    return np.sort(selection_rng.choice(n_clients, n_selected, replace=False))


def _fairness_report(estimator, data, classes):
    """Counts per group of the decisions (at 0.5) of the round's global model.

    What a client sends a fairness-aware aggregator (FairFed): rows,
    positive decisions, positive rows and true positives per sensitive
    group; no row, label or score.
    """
    if data.groups is None:
        raise ValueError(
            "FairFed weighs clients by their fairness gaps, which need the "
            "sensitive features: pass sensitive_features to fit."
        )
    if len(classes) > 2:
        raise ValueError(
            "FairFed weighs clients by a fairness gap of decisions for one "
            f"positive class; the outcome has {len(classes)} classes."
        )
    decided = _training_proba(estimator, data)[:, 1] > 0.5
    positive = np.asarray(data.y) == classes[-1]
    codes, n_groups = data.groups.codes, data.groups.n_groups

    def count(weights=None):
        return np.bincount(codes, weights=weights, minlength=n_groups).astype(float)

    return {
        "n": count(),
        "selected": count(decided.astype(float)),
        "n_positive": count(positive.astype(float)),
        "true_positive": count((decided & positive).astype(float)),
    }


def class_counts(y, classes):
    """A client's rows per class, in the order of ``classes``: what it sends.

    The server adds them up (or takes the median of their shares,
    ``prior_aggregation``) into ``class_prior_``.
    """
    return np.array([int(np.sum(np.asarray(y) == c)) for c in classes], np.int64)


def decision_counts(model, X, classes):
    """The rows of X per class that ``model`` predicts, in the order of ``classes``.

    What a client sends for the degenerate-model check: counts, no row.
    """
    predicted = np.searchsorted(classes, model.predict(X))
    return np.bincount(predicted, minlength=len(classes))


def _reporting_client_round(trainer, estimator, parameters, data, epochs, seed):
    """``_client_round``, with the client's fairness report for the global model."""
    if parameters is not None:
        assign_parameters(estimator, parameters)
    rows = data if data.held_out is None else data.held_out
    report = _fairness_report(estimator, rows, trainer.classes)
    reply = _client_round(trainer, estimator, parameters, data, epochs, seed)
    return replace(reply, report=report)


def _guarded_client_round(*args, reporting=False):
    """``_client_round``, returning a failure to the server instead of raising.

    The server then knows which client failed in which round, and decides
    (``on_client_error``) whether to stop or to aggregate the others: its
    ``RoundReply``, or a ``Failed``. With ``reporting``, the round is
    ``_reporting_client_round`` (FairFed).
    """
    client_round = _reporting_client_round if reporting else _client_round
    try:
        return client_round(*args)
    except Exception as exc:  # any failure of a client's own training
        return Failed(exc)


def clone_fitted(estimator):
    """A deep copy of a fitted estimator."""
    return copy.deepcopy(estimator)
