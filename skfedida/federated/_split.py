"""Cross-validation that splits within every client."""

from __future__ import annotations

import numpy as np
from sklearn.model_selection import StratifiedKFold

from .._compat import BaseKFold

__all__ = ["ClientStratifiedKFold"]


class ClientStratifiedKFold(BaseKFold):
    """K-fold splits made within every client, stratified by client x outcome.

    Every fold's validation part holds about 1/n_splits of each client's rows
    of each class, so a federated model searched with ``GridSearchCV`` gives
    every client a training and a validation part. ``clients`` reaches
    ``split`` through metadata routing (requested by default), as ``groups``
    reaches sklearn's group splitters.

    Parameters
    ----------
    n_splits : int, default=5
        Number of folds, at least 2.
    shuffle : bool, default=False
        Shuffle each stratum before splitting.
    random_state : int, RandomState instance or None, default=None
        Seed of the shuffle.

    Examples
    --------
    >>> import numpy as np
    >>> from skfedida.federated import ClientStratifiedKFold
    >>> y = np.array([0, 1] * 6)
    >>> clients = np.repeat(["a", "b"], 6)
    >>> cv = ClientStratifiedKFold(n_splits=3)
    >>> folds = cv.split(y, y, clients=clients)
    >>> [sorted(set(clients[test].tolist())) for _, test in folds]
    [['a', 'b'], ['a', 'b'], ['a', 'b']]
    """

    __metadata_request__split = {"clients": True}

    def __init__(self, n_splits=5, *, shuffle=False, random_state=None):
        super().__init__(n_splits=n_splits, shuffle=shuffle, random_state=random_state)

    def split(self, X, y=None, groups=None, clients=None):
        """Generate the indices of the training and validation rows of every fold.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data (only its length is used).
        y : array-like of shape (n_samples,), default=None
            Outcomes; stratified on together with the clients.
        groups : None
            Ignored; present for the splitter API.
        clients : array-like of shape (n_samples,)
            Client id of every row.

        Yields
        ------
        train : ndarray
            Positions of the fold's training rows.
        test : ndarray
            Positions of the fold's validation rows.
        """
        if clients is None:
            raise ValueError(
                "ClientStratifiedKFold.split needs clients= (with metadata "
                "routing on, a search passes the clients given to its fit)."
            )
        clients = np.asarray(clients)
        if clients.shape[0] != len(X):
            raise ValueError(f"clients has {clients.shape[0]} ids for {len(X)} rows.")
        outcome = np.zeros(len(X), dtype=int) if y is None else np.asarray(y)
        _, strata = np.unique(
            np.column_stack(
                [
                    np.unique(clients, return_inverse=True)[1],
                    np.unique(outcome, return_inverse=True)[1],
                ]
            ),
            axis=0,
            return_inverse=True,
        )
        inner = StratifiedKFold(
            n_splits=self.n_splits, shuffle=self.shuffle, random_state=self.random_state
        )
        yield from inner.split(np.zeros(len(X)), strata.ravel())

    def get_n_splits(self, X=None, y=None, groups=None, clients=None):
        """Number of folds.

        Parameters
        ----------
        X, y, groups, clients : object
            Ignored.

        Returns
        -------
        n_splits : int
            The ``n_splits`` parameter.
        """
        return self.n_splits
